"""Chassis: the chassis table and the index of nodes by chassis.

Revision ID: e5b8a2c7d431
Revises: c4a1f7e3d285
Create Date: 2026-11-26 12:30:00

"""

from alembic import op
from oslo_db.sqlalchemy import types as db_types
import sqlalchemy as sa

revision = 'e5b8a2c7d431'
down_revision = 'c4a1f7e3d285'


def upgrade():
    op.create_table(
        'chassis',
        sa.Column('created_at', sa.DateTime, nullable=True),
        sa.Column('updated_at', sa.DateTime, nullable=True),
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('description', sa.String(255), nullable=True),
        sa.Column('extra', db_types.JsonEncodedDict, nullable=True),
        sa.UniqueConstraint('uuid', name='uniq_chassis0uuid'),
        mysql_engine='InnoDB',
        mysql_charset='utf8mb4',
    )
    op.create_index('nodes_chassis_uuid_idx', 'nodes', ['chassis_uuid'])
