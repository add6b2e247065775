"""The matching language: normalised node properties, node capabilities
and the allocation's match.

Revision ID: 9d4b6e2f1a73
Revises: 3f8a6c1d9e52
Create Date: 2026-11-26 02:30:00

"""

from alembic import op
from oslo_db.sqlalchemy import types as db_types
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from ironic_alloc.common import matching

revision = '9d4b6e2f1a73'
down_revision = '3f8a6c1d9e52'

_TABLE_ARGS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}

# Nodes read and written per round trip while the columns are filled.
_BATCH = 1000


def _exact_string(length):
    # NOTE: a copy of models.exact_string, as a migration must not change
    # when the models do.
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, collation='utf8mb4_bin'), 'mysql', 'mariadb')


def upgrade():
    for name in ('match_cpus', 'match_memory_mb', 'match_local_gb'):
        op.add_column('nodes', sa.Column(name, sa.BigInteger,
                                         nullable=True))
        op.create_index('nodes_%s_idx' % name, 'nodes', [name])
    op.add_column('nodes', sa.Column('match_cpu_arch', _exact_string(255),
                                     nullable=True))
    op.create_index('nodes_match_cpu_arch_idx', 'nodes', ['match_cpu_arch'])
    op.create_table(
        'node_capabilities',
        sa.Column('created_at', sa.DateTime, nullable=True),
        sa.Column('updated_at', sa.DateTime, nullable=True),
        sa.Column('node_id', sa.Integer,
                  sa.ForeignKey('nodes.id', ondelete='CASCADE'),
                  primary_key=True, nullable=False),
        sa.Column('name', _exact_string(255), primary_key=True,
                  nullable=False),
        sa.Column('value', _exact_string(255), nullable=False),
        **_TABLE_ARGS)
    op.create_index('node_capabilities_idx', 'node_capabilities',
                    ['name', 'value', 'node_id'])
    op.add_column('allocations', sa.Column('match', db_types.JsonEncodedDict,
                                           nullable=True))
    _fill(op.get_bind())


def _fill(conn):
    """The normalised values of the nodes already there.

    NOTE: with the rule of this code (common/matching.py); a later change
    of the rule re-fills the columns in a migration of its own.
    """
    nodes = sa.table('nodes', sa.column('id', sa.Integer),
                     sa.column('properties', db_types.JsonEncodedDict),
                     sa.column('match_cpus', sa.BigInteger),
                     sa.column('match_memory_mb', sa.BigInteger),
                     sa.column('match_local_gb', sa.BigInteger),
                     sa.column('match_cpu_arch', sa.String(255)))
    capabilities = sa.table('node_capabilities',
                            sa.column('node_id', sa.Integer),
                            sa.column('name', sa.String(255)),
                            sa.column('value', sa.String(255)))
    update = nodes.update().where(
        nodes.c.id == sa.bindparam('node_id')).values(
            match_cpus=sa.bindparam('cpus'),
            match_memory_mb=sa.bindparam('memory_mb'),
            match_local_gb=sa.bindparam('local_gb'),
            match_cpu_arch=sa.bindparam('cpu_arch'))
    last = None
    while True:
        query = sa.select(nodes.c.id, nodes.c.properties).order_by(
            nodes.c.id).limit(_BATCH)
        if last is not None:
            query = query.where(nodes.c.id > last)
        rows = conn.execute(query).all()
        if not rows:
            return
        last = rows[-1].id
        updates, capability_rows = [], []
        for row in rows:
            columns = matching.node_match_columns(row.properties)
            updates.append({
                'node_id': row.id, 'cpus': columns['match_cpus'],
                'memory_mb': columns['match_memory_mb'],
                'local_gb': columns['match_local_gb'],
                'cpu_arch': columns['match_cpu_arch']})
            capability_rows.extend(
                {'node_id': row.id, 'name': name, 'value': value}
                for name, value in sorted(matching.node_capabilities(
                    row.properties).items()))
        conn.execute(update, updates)
        if capability_rows:
            conn.execute(capabilities.insert(), capability_rows)
