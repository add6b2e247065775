"""Nodes: disable_power_off (Bare Metal API 1.95), instance_name (1.104)
and health (1.109) columns, and the index of the instance_name filter.

Revision ID: a7d2e5f8c316
Revises: a7d2e9c4b816
Create Date: 2026-11-26 20:00:00

"""

from alembic import op
import sqlalchemy as sa

revision = 'a7d2e5f8c316'
down_revision = 'a7d2e9c4b816'


def upgrade():
    # NOTE: a server default, so that the nodes enrolled before the
    # upgrade may be powered off as before.
    op.add_column('nodes', sa.Column('disable_power_off', sa.Boolean(),
                                     nullable=False,
                                     server_default=sa.false()))
    op.add_column('nodes',
                  sa.Column('instance_name', sa.String(255), nullable=True))
    op.create_index('nodes_instance_name_idx', 'nodes', ['instance_name'])
    op.add_column('nodes', sa.Column('health', sa.String(32), nullable=True))
