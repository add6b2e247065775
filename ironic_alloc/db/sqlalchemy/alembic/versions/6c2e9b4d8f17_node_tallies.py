"""Node tallies: the counts an explanation reads, kept by triggers on nodes
and folded by the conductors; nodes.match_traits and match_capabilities.

Revision ID: 6c2e9b4d8f17
Revises: a7d2e5f8c316
Create Date: 2026-11-27 07:00:00

"""

import json

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '6c2e9b4d8f17'
down_revision = 'a7d2e5f8c316'

# NOTE: frozen here, as a migration must be: the key as of this revision.
# The picking rule's conditions (common/picking.py), in its order; a test
# compares them with the rule.
PICKING_CONDITIONS = (
    ('provision_state', "provision_state = 'available'"),
    ('maintenance', 'maintenance IS false'),
    ('retired', 'retired IS false'),
    ('power_state', 'power_state IS NOT NULL'),
    ('allocation_id', 'allocation_id IS NULL'),
    ('instance_uuid', 'instance_uuid IS NULL'),
)
NODE_COLUMNS = (
    'resource_class', 'owner', 'lessee', 'conductor_group', 'match_cpus',
    'match_memory_mb', 'match_local_gb', 'match_cpu_arch', 'match_traits',
    'match_capabilities')
KEY = NODE_COLUMNS + tuple('passes_%s' % field
                           for field, _c in PICKING_CONDITIONS)


def _exact_string(length):
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, collation='utf8mb4_bin'), 'mysql', 'mariadb')


def _key_columns():
    return [
        sa.Column('resource_class', sa.String(80), nullable=True),
        sa.Column('owner', sa.String(255), nullable=True),
        sa.Column('lessee', sa.String(255), nullable=True),
        sa.Column('conductor_group', sa.String(255), nullable=True),
        sa.Column('match_cpus', sa.BigInteger, nullable=True),
        sa.Column('match_memory_mb', sa.BigInteger, nullable=True),
        sa.Column('match_local_gb', sa.BigInteger, nullable=True),
        sa.Column('match_cpu_arch', _exact_string(255), nullable=True),
        sa.Column('match_traits', sa.Text, nullable=True),
        sa.Column('match_capabilities', sa.Text, nullable=True),
    ] + [sa.Column('passes_%s' % field, sa.Boolean, nullable=False)
         for field, _c in PICKING_CONDITIONS]


def _key_expressions(row, dialect):
    """The key of the node row ``row`` (NEW or OLD) as SQL expressions."""
    true, false = ('true', 'false') if dialect == 'postgresql' else ('1', '0')
    expressions = ['%s.%s' % (row, name) for name in NODE_COLUMNS]
    for _field, condition in PICKING_CONDITIONS:
        expressions.append('CASE WHEN %s.%s THEN %s ELSE %s END'
                           % (row, condition, true, false))
    return expressions


def _insert(row, delta, dialect):
    return ('INSERT INTO node_tally_changes (%s, delta) VALUES (%s, %d)'
            % (', '.join(KEY), ', '.join(_key_expressions(row, dialect)),
               delta))


def _key_changed(dialect):
    old = _key_expressions('OLD', dialect)
    new = _key_expressions('NEW', dialect)
    if dialect == 'postgresql':
        return 'ROW(%s) IS DISTINCT FROM ROW(%s)' % (', '.join(old),
                                                      ', '.join(new))
    same = '<=>' if dialect == 'mysql' else 'IS'
    return 'NOT (%s)' % ' AND '.join('(%s) %s (%s)' % (o, same, n)
                                     for o, n in zip(old, new))


def trigger_statements(dialect):
    """The statements creating the triggers on nodes that write
    node_tally_changes: a node inserted enters its key, a node deleted
    leaves it, a node updated leaves its old key and enters the new one
    when they differ."""
    if dialect == 'postgresql':
        return [
            'CREATE OR REPLACE FUNCTION node_tally_change() RETURNS trigger '
            'LANGUAGE plpgsql AS $$ BEGIN '
            "IF TG_OP <> 'INSERT' THEN %s; END IF; "
            "IF TG_OP <> 'DELETE' THEN %s; END IF; "
            'RETURN NULL; END $$' % (_insert('OLD', -1, dialect),
                                     _insert('NEW', 1, dialect)),
            'CREATE TRIGGER node_tally_insert AFTER INSERT ON nodes '
            'FOR EACH ROW EXECUTE PROCEDURE node_tally_change()',
            'CREATE TRIGGER node_tally_delete AFTER DELETE ON nodes '
            'FOR EACH ROW EXECUTE PROCEDURE node_tally_change()',
            'CREATE TRIGGER node_tally_update AFTER UPDATE ON nodes '
            'FOR EACH ROW WHEN (%s) EXECUTE PROCEDURE node_tally_change()'
            % _key_changed(dialect),
        ]
    if dialect == 'mysql':
        return [
            'CREATE TRIGGER node_tally_insert AFTER INSERT ON nodes '
            'FOR EACH ROW %s' % _insert('NEW', 1, dialect),
            'CREATE TRIGGER node_tally_delete AFTER DELETE ON nodes '
            'FOR EACH ROW %s' % _insert('OLD', -1, dialect),
            'CREATE TRIGGER node_tally_update AFTER UPDATE ON nodes '
            'FOR EACH ROW BEGIN IF %s THEN %s; %s; END IF; END'
            % (_key_changed(dialect), _insert('OLD', -1, dialect),
               _insert('NEW', 1, dialect)),
        ]
    return [
        'CREATE TRIGGER node_tally_insert AFTER INSERT ON nodes '
        'FOR EACH ROW BEGIN %s; END' % _insert('NEW', 1, dialect),
        'CREATE TRIGGER node_tally_delete AFTER DELETE ON nodes '
        'FOR EACH ROW BEGIN %s; END' % _insert('OLD', -1, dialect),
        'CREATE TRIGGER node_tally_update AFTER UPDATE ON nodes '
        'FOR EACH ROW WHEN %s BEGIN %s; %s; END'
        % (_key_changed(dialect), _insert('OLD', -1, dialect),
           _insert('NEW', 1, dialect)),
    ]


def _fill_match_columns(bind):
    """match_traits and match_capabilities of the nodes enrolled before
    (from their rows of node_traits and node_capabilities)."""
    traits = {}
    for node_id, trait in bind.execute(sa.text(
            'SELECT node_id, trait FROM node_traits')):
        traits.setdefault(node_id, []).append(trait)
    capabilities = {}
    for node_id, name, value in bind.execute(sa.text(
            'SELECT node_id, name, value FROM node_capabilities')):
        capabilities.setdefault(node_id, {})[name] = value
    node_ids = [row[0] for row in bind.execute(sa.text(
        'SELECT id FROM nodes'))]
    update = sa.text('UPDATE nodes SET match_traits = :traits, '
                     'match_capabilities = :capabilities WHERE id = :id')
    rows = [{'id': node_id,
             'traits': json.dumps(sorted(set(traits.get(node_id, ())))),
             'capabilities': json.dumps(capabilities.get(node_id, {}),
                                        sort_keys=True)}
            for node_id in node_ids]
    for start in range(0, len(rows), 1000):
        bind.execute(update, rows[start:start + 1000])


def _fill_tallies(bind, dialect):
    """The tallies of the nodes enrolled before."""
    counts = {}
    for row in bind.execute(sa.text(
            'SELECT %s FROM nodes AS n'
            % ', '.join(_key_expressions('n', dialect)))):
        key = tuple(row)
        counts[key] = counts.get(key, 0) + 1
    if not counts:
        return
    insert = sa.text('INSERT INTO node_tallies (%s, nodes) VALUES (%s, '
                     ':nodes)' % (', '.join(KEY),
                                  ', '.join(':%s' % n for n in KEY)))
    bind.execute(insert, [dict(zip(KEY, key), nodes=count)
                          for key, count in counts.items()])


def upgrade():
    bind = op.get_bind()
    dialect = 'mysql' if bind.dialect.name in ('mysql', 'mariadb') else \
        bind.dialect.name
    op.add_column('nodes', sa.Column('match_traits', sa.Text,
                                     nullable=True))
    op.add_column('nodes', sa.Column('match_capabilities', sa.Text,
                                     nullable=True))
    table_args = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}
    op.create_table(
        'node_tallies',
        sa.Column('id', sa.Integer, primary_key=True),
        *_key_columns(),
        sa.Column('nodes', sa.Integer, nullable=False),
        **table_args)
    op.create_index('node_tallies_resource_class_idx', 'node_tallies',
                    ['resource_class'])
    op.create_table(
        'node_tally_changes',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer, 'sqlite'),
                  primary_key=True),
        *_key_columns(),
        sa.Column('delta', sa.Integer, nullable=False),
        **table_args)
    op.create_index('node_tally_changes_resource_class_idx',
                    'node_tally_changes', ['resource_class'])
    folds = op.create_table(
        'node_tally_folds',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=False),
        sa.Column('folded_at', sa.DateTime, nullable=True),
        **table_args)
    op.bulk_insert(folds, [{'id': 1, 'folded_at': None}])
    _fill_match_columns(bind)
    _fill_tallies(bind, dialect)
    for statement in trigger_statements(dialect):
        op.execute(statement)
