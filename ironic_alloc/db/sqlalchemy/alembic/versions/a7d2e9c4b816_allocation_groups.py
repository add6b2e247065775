"""Allocation groups (extension 1.3): the allocation_groups table and the
group of an allocation.

Revision ID: a7d2e9c4b816
Revises: f1c7a3e9b254
Create Date: 2026-11-26 20:00:00

"""

from alembic import op
from oslo_db.sqlalchemy import types as db_types
import sqlalchemy as sa

revision = 'a7d2e9c4b816'
down_revision = 'f1c7a3e9b254'


def upgrade():
    op.create_table(
        'allocation_groups',
        sa.Column('created_at', sa.DateTime, nullable=True),
        sa.Column('updated_at', sa.DateTime, nullable=True),
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('name', sa.String(255), nullable=True),
        sa.Column('state', sa.String(15), nullable=False),
        sa.Column('owner', sa.String(255), nullable=True),
        sa.Column('last_error', sa.Text, nullable=True),
        sa.Column('explanation', db_types.JsonEncodedDict, nullable=True),
        sa.Column('spec', db_types.JsonEncodedDict, nullable=True),
        sa.Column('conductor_affinity', sa.Integer, nullable=True),
        sa.Column('expires_at', sa.DateTime, nullable=True),
        sa.UniqueConstraint('uuid', name='uniq_allocation_groups0uuid'),
        sa.UniqueConstraint('name', name='uniq_allocation_groups0name'),
        sa.Index('allocation_groups_state_affinity_idx', 'state',
                 'conductor_affinity'),
        sa.Index('allocation_groups_owner_idx', 'owner'),
        mysql_engine='InnoDB',
        mysql_charset='utf8mb4',
        sqlite_autoincrement=True,
    )
    op.add_column('allocations',
                  sa.Column('group_id', sa.Integer, nullable=True))
    op.create_index('allocations_group_id_idx', 'allocations', ['group_id'])
