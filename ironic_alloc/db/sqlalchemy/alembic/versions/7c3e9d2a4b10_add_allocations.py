"""Add the allocations table.

Revision ID: 7c3e9d2a4b10
Revises: 5a1c2c6f8e01
Create Date: 2026-11-22 04:00:00

"""

from alembic import op
from oslo_db.sqlalchemy import types as db_types
import sqlalchemy as sa

revision = '7c3e9d2a4b10'
down_revision = '5a1c2c6f8e01'


def upgrade():
    op.create_table(
        'allocations',
        sa.Column('created_at', sa.DateTime, nullable=True),
        sa.Column('updated_at', sa.DateTime, nullable=True),
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('name', sa.String(255), nullable=True),
        sa.Column('node_id', sa.Integer, nullable=True),
        sa.Column('state', sa.String(15), nullable=False),
        sa.Column('owner', sa.String(255), nullable=True),
        sa.Column('last_error', sa.Text, nullable=True),
        sa.Column('resource_class', sa.String(80), nullable=True),
        sa.Column('traits', db_types.JsonEncodedList, nullable=True),
        sa.Column('candidate_nodes', db_types.JsonEncodedList, nullable=True),
        sa.Column('extra', db_types.JsonEncodedDict, nullable=True),
        sa.Column('conductor_affinity', sa.Integer, nullable=True),
        sa.UniqueConstraint('uuid', name='uniq_allocations0uuid'),
        sa.UniqueConstraint('name', name='uniq_allocations0name'),
        sqlite_autoincrement=True,
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_index('allocations_state_affinity_idx', 'allocations',
                    ['state', 'conductor_affinity'])
    op.create_index('allocations_node_id_idx', 'allocations', ['node_id'])
    op.create_index('allocations_owner_idx', 'allocations', ['owner'])
    op.create_index('allocations_resource_class_idx', 'allocations',
                    ['resource_class'])
