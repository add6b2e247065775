"""Index the free nodes of each resource class (PostgreSQL).

Revision ID: 3f8a6c1d9e52
Revises: 7c3e9d2a4b10
Create Date: 2026-11-25 04:10:00

"""

from alembic import op
import sqlalchemy as sa

revision = '3f8a6c1d9e52'
down_revision = '7c3e9d2a4b10'

# NOTE: a copy, as a migration must not change when the models do.
FREE_NODE_PREDICATE = ("provision_state = 'available' AND "
                       "allocation_id IS NULL AND instance_uuid IS NULL")


def upgrade():
    # NOTE: MySQL and MariaDB have no partial indexes, and SQLite's planner
    # walks nodes_candidate_idx in order already.  The index is small (free
    # nodes only) and quick to build; the nodes table is locked for writes
    # while it is built.
    if op.get_bind().dialect.name != 'postgresql':
        return
    op.create_index('nodes_free_candidate_idx', 'nodes',
                    ['resource_class', 'uuid'],
                    postgresql_where=sa.text(FREE_NODE_PREDICATE))
