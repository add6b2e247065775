"""node_tallies.key_json: a tally's key as one value, which explanations
read instead of the key's columns.

Revision ID: 9f3b7d2a5c84
Revises: 6c2e9b4d8f17
Create Date: 2026-11-27 11:30:00

"""

import json

from alembic import op
import sqlalchemy as sa

revision = '9f3b7d2a5c84'
down_revision = '6c2e9b4d8f17'

# NOTE: frozen here, as a migration must be: the key's columns as of this
# revision, in order (models.TALLY_KEY then; a test compares them).
KEY = (
    'resource_class', 'owner', 'lessee', 'conductor_group', 'match_cpus',
    'match_memory_mb', 'match_local_gb', 'match_cpu_arch', 'match_traits',
    'match_capabilities', 'passes_provision_state', 'passes_maintenance',
    'passes_retired', 'passes_power_state', 'passes_allocation_id',
    'passes_instance_uuid')
_BOOLEANS = frozenset(name for name in KEY if name.startswith('passes_'))


def key_json(values):
    """The key_json of a tally whose key columns hold ``values``."""
    return json.dumps(list(values), separators=(',', ':'))


def upgrade():
    op.add_column('node_tallies', sa.Column('key_json', sa.Text,
                                            nullable=True))
    tallies = sa.table(
        'node_tallies', sa.column('id', sa.Integer),
        sa.column('key_json', sa.Text),
        *[sa.column(name, sa.Boolean if name in _BOOLEANS else None)
          for name in KEY])
    bind = op.get_bind()
    rows = bind.execute(sa.select(
        tallies.c.id, *[tallies.c[name] for name in KEY])).all()
    update = tallies.update().where(
        tallies.c.id == sa.bindparam('tally_id')).values(
            key_json=sa.bindparam('value'))
    values = [{'tally_id': row[0], 'value': key_json(row[1:])}
              for row in rows]
    for start in range(0, len(values), 1000):
        bind.execute(update, values[start:start + 1000])
    # NOTE: SQLite cannot add NOT NULL to a column in place; batch mode
    # copies its table there and alters the column elsewhere.
    with op.batch_alter_table('node_tallies') as batch:
        batch.alter_column('key_json', existing_type=sa.Text,
                           nullable=False)
