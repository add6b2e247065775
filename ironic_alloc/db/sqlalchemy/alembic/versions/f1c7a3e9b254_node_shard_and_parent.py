"""Nodes: the shard (Bare Metal API 1.82) and parent_node (1.83) columns
and their indexes.

Revision ID: f1c7a3e9b254
Revises: f1d3a9c6b274
Create Date: 2026-11-26 16:00:00

"""

from alembic import op
import sqlalchemy as sa

revision = 'f1c7a3e9b254'
down_revision = 'f1d3a9c6b274'


def upgrade():
    op.add_column('nodes', sa.Column('shard', sa.String(255), nullable=True))
    op.create_index('nodes_shard_idx', 'nodes', ['shard'])
    op.add_column('nodes',
                  sa.Column('parent_node', sa.String(36), nullable=True))
    op.create_index('nodes_parent_node_idx', 'nodes', ['parent_node'])
