"""The explanation of a failed allocation.

Revision ID: b2e7c4d9a610
Revises: 9d4b6e2f1a73
Create Date: 2026-11-26 03:00:00

"""

from alembic import op
from oslo_db.sqlalchemy import types as db_types
import sqlalchemy as sa

revision = 'b2e7c4d9a610'
down_revision = '9d4b6e2f1a73'


def upgrade():
    op.add_column('allocations', sa.Column('explanation',
                                           db_types.JsonEncodedDict,
                                           nullable=True))
