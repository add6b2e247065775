"""Reservations and leases: the kind of a hold, a reservation's instance
and the end of a lease.

Revision ID: c4a1f7e3d285
Revises: b2e7c4d9a610
Create Date: 2026-11-26 09:00:00

"""

from alembic import op
import sqlalchemy as sa

revision = 'c4a1f7e3d285'
down_revision = 'b2e7c4d9a610'


def upgrade():
    op.add_column('allocations', sa.Column(
        'kind', sa.String(15), nullable=False, server_default='allocation'))
    op.add_column('allocations', sa.Column('instance_uuid', sa.String(36),
                                           nullable=True))
    op.add_column('allocations', sa.Column('expires_at', sa.DateTime,
                                           nullable=True))
    op.create_index('allocations_kind_idx', 'allocations', ['kind', 'id'])
    op.create_index('allocations_expires_at_idx', 'allocations',
                    ['expires_at'])
