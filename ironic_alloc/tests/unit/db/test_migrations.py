"""Schema migration tests.

Two checks run on every database engine we support:

* the walk: upgrade an empty database one alembic revision at a time, from
  the base to the head, calling ``_pre_upgrade_<rev>(engine)`` before and
  ``_check_<rev>(engine, data)`` after revision ``<rev>`` when the test
  class has them (a new migration adds its ``_check_<rev>`` to
  ``MigrationCheckersMixin``);
* the model sync: after upgrading to the head, the schema equals the
  SQLAlchemy models (oslo.db's ``ModelsMigrationsSync``).

SQLite always runs.  PostgreSQL and MySQL/MariaDB run through oslo.db's
opportunistic fixtures: they need the ``openstack_citest`` user (password
``openstack_citest``) created by tools/test-setup.sh, and are skipped with
the reason when that server is not there, except when CI=true, where a
missing server is a failure.
"""

import importlib.util
import json
import os

from alembic import script as alembic_script
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
from oslo_db.sqlalchemy import test_fixtures
from oslo_db.sqlalchemy import test_migrations
from oslo_db.sqlalchemy import types as db_types
import sqlalchemy as sa

from ironic_alloc.common import picking
from ironic_alloc.db import migration
from ironic_alloc.db.sqlalchemy import models
from ironic_alloc.db.sqlalchemy import statements as stmts
from ironic_alloc.tests import base


class _OpportunisticMixin(test_fixtures.OpportunisticDBTestMixin):
    """oslo.db's opportunistic databases; a missing server fails in CI."""

    # NOTE: oslo.db calls self.fail() instead of self.skipTest() with the
    # reason ("Backend 'postgresql' is unavailable: ...") when this is False.
    SKIP_ON_UNAVAILABLE_DB = not base.running_in_ci()

    def setUp(self):
        super().setUp()
        self.engine = enginefacade.writer.get_engine()


def _script():
    return alembic_script.ScriptDirectory.from_config(
        migration._alembic_config())


def _revisions_from_base():
    """All revisions, each one after the revision it revises."""
    return [rev.revision for rev in reversed(list(_script().walk_revisions()))]


class WalkVersionsMixin:

    def test_single_head(self):
        heads = _script().get_heads()
        self.assertEqual(1, len(heads),
                         'The migrations must have exactly one head, found '
                         '%s: rebase the newest migration onto the other '
                         'head (down_revision).' % heads)

    def test_walk_versions(self):
        self.assertIsNone(migration.version(self.engine))
        revisions = _revisions_from_base()
        self.assertTrue(revisions)
        for revision in revisions:
            self._migrate_up(revision)
        self.assertEqual(migration.head_revision(),
                         migration.version(self.engine))

    def _migrate_up(self, revision):
        pre_upgrade = getattr(self, '_pre_upgrade_%s' % revision, None)
        data = pre_upgrade(self.engine) if pre_upgrade else None
        migration.upgrade(revision, engine=self.engine)
        self.assertEqual(revision, migration.version(self.engine))
        check = getattr(self, '_check_%s' % revision, None)
        if check:
            check(self.engine, data)


def _literal(reflected_default):
    """The value of a reflected string default: ('x'), 'x'::text -> x."""
    value = reflected_default.strip()
    while value.startswith('(') and value.endswith(')'):
        value = value[1:-1].strip()
    value = value.split('::', 1)[0]
    if len(value) >= 2 and value[0] == value[-1] and value[0] in '\'"':
        value = value[1:-1]
    return value


def _migration_module(name):
    """The migration script ``name`` (its file name without .py), loaded
    as a module, for the values it freezes."""
    path = os.path.join(os.path.dirname(migration.__file__), 'sqlalchemy',
                        'alembic', 'versions', name + '.py')
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class MigrationCheckersMixin:
    """``_check_<rev>`` hooks: what each migration must have created."""

    def _columns(self, engine, table):
        return {c['name'] for c in sa.inspect(engine).get_columns(table)}

    def _index_names(self, engine, table):
        return {i['name'] for i in sa.inspect(engine).get_indexes(table)}

    def _unique_names(self, engine, table):
        inspector = sa.inspect(engine)
        names = {u['name'] for u in inspector.get_unique_constraints(table)}
        # NOTE: MySQL reports unique constraints as unique indexes too.
        names |= {i['name'] for i in inspector.get_indexes(table)
                  if i.get('unique')}
        return names

    def _check_5a1c2c6f8e01(self, engine, data):
        tables = set(sa.inspect(engine).get_table_names())
        self.assertLessEqual({'conductors', 'nodes', 'node_traits'}, tables)

        self.assertLessEqual(
            {'id', 'hostname', 'conductor_group', 'online', 'heartbeat_at',
             'created_at', 'updated_at'},
            self._columns(engine, 'conductors'))
        self.assertIn('uniq_conductors0hostname',
                      self._unique_names(engine, 'conductors'))

        self.assertLessEqual(
            {'id', 'uuid', 'name', 'driver', 'resource_class',
             'provision_state', 'target_provision_state', 'maintenance',
             'instance_uuid', 'reservation', 'conductor_affinity',
             'conductor_group', 'owner', 'lessee', 'allocation_id',
             'properties', 'extra', 'created_at', 'updated_at'},
            self._columns(engine, 'nodes'))
        self.assertLessEqual(
            {'nodes_candidate_idx', 'nodes_conductor_group_idx',
             'nodes_reservation_idx', 'nodes_owner_idx', 'nodes_lessee_idx',
             'nodes_allocation_id_idx'},
            self._index_names(engine, 'nodes'))
        self.assertLessEqual(
            {'uniq_nodes0uuid', 'uniq_nodes0name',
             'uniq_nodes0instance_uuid'},
            self._unique_names(engine, 'nodes'))
        candidate = [i for i in sa.inspect(engine).get_indexes('nodes')
                     if i['name'] == 'nodes_candidate_idx'][0]
        self.assertEqual(['resource_class', 'provision_state', 'maintenance',
                          'uuid'], candidate['column_names'])

        self.assertEqual({'node_id', 'trait', 'created_at', 'updated_at'},
                         self._columns(engine, 'node_traits'))
        self.assertIn('node_traits_idx',
                      self._index_names(engine, 'node_traits'))

        # The constraints hold on real rows.
        nodes = sa.table('nodes', sa.column('uuid'), sa.column('driver'),
                         sa.column('maintenance'), sa.column('protected'),
                         sa.column('retired'),
                         sa.column('console_enabled'), sa.column('name'))
        row = {'uuid': '1be26c0b-03f2-4d2e-ae87-c02d7f33c123',
               'driver': 'fake-hardware', 'maintenance': False,
               'protected': False, 'retired': False,
               'console_enabled': False, 'name': 'node-0'}
        with engine.begin() as conn:
            conn.execute(nodes.insert().values(**row))
        with engine.begin() as conn:
            # conductor_group has a server default, so the API and old rows
            # never see NULL there.
            self.assertEqual('', conn.execute(sa.text(
                'SELECT conductor_group FROM nodes')).scalar())
        self.assertRaises(db_exc.DBDuplicateEntry, self._insert, engine,
                          nodes, dict(row, name='node-1'))
        self.assertRaises(
            db_exc.DBDuplicateEntry, self._insert, engine, nodes,
            dict(row, uuid='0f5bba41-9bc6-4b94-8a40-4d0b86a1e2a8'))
        with engine.begin() as conn:
            conn.execute(sa.text('DELETE FROM nodes'))

    def _check_7c3e9d2a4b10(self, engine, data):
        self.assertIn('allocations', sa.inspect(engine).get_table_names())
        self.assertLessEqual(
            {'id', 'uuid', 'name', 'node_id', 'state', 'owner', 'last_error',
             'resource_class', 'traits', 'candidate_nodes', 'extra',
             'conductor_affinity', 'created_at', 'updated_at'},
            self._columns(engine, 'allocations'))
        self.assertLessEqual(
            {'uniq_allocations0uuid', 'uniq_allocations0name'},
            self._unique_names(engine, 'allocations'))
        self.assertLessEqual(
            {'allocations_state_affinity_idx', 'allocations_node_id_idx',
             'allocations_owner_idx', 'allocations_resource_class_idx'},
            self._index_names(engine, 'allocations'))
        # NOTE: the re-drive and take-over queries filter on state first,
        # then on the owning conductor.
        by_name = {i['name']: i for i in
                   sa.inspect(engine).get_indexes('allocations')}
        self.assertEqual(
            ['state', 'conductor_affinity'],
            by_name['allocations_state_affinity_idx']['column_names'])

        allocations = sa.table('allocations', sa.column('uuid'),
                               sa.column('name'), sa.column('state'))
        row = {'uuid': '5b3c8d55-8a8e-4d1b-9d8b-3f0f0e8f3a11',
               'name': 'alloc-0', 'state': 'allocating'}
        self._insert(engine, allocations, row)
        self.assertRaises(
            db_exc.DBDuplicateEntry, self._insert, engine, allocations,
            dict(row, uuid='d7f7c2c4-5d0e-4e5c-8d9a-6b8f6d0c2b77'))
        with engine.begin() as conn:
            conn.execute(sa.text('DELETE FROM allocations'))

    def _check_3f8a6c1d9e52(self, engine, data):
        by_name = {i['name']: i for i in
                   sa.inspect(engine).get_indexes('nodes')}
        if engine.dialect.name != 'postgresql':
            self.assertNotIn('nodes_free_candidate_idx', by_name)
            return
        index = by_name['nodes_free_candidate_idx']
        self.assertEqual(['resource_class', 'uuid'], index['column_names'])
        predicate = index['dialect_options']['postgresql_where']
        for condition in ("provision_state", "'available'",
                          'allocation_id IS NULL', 'instance_uuid IS NULL'):
            self.assertIn(condition, predicate)

    _MATCHING_NODES = [
        # (uuid, properties, expected columns, expected capabilities)
        ('5f0e8a3c-4c1d-4d56-9a51-0b7c1e2f3a01',
         {'cpus': '8', 'memory_mb': 16384, 'local_gb': 'big',
          'cpu_arch': 'x86_64', 'capabilities': 'boot_mode:uefi,x:1'},
         (8, 16384, None, 'x86_64'), {'boot_mode': 'uefi', 'x': '1'}),
        ('5f0e8a3c-4c1d-4d56-9a51-0b7c1e2f3a02',
         {'capabilities': {'Boot_Mode': 'UEFI', 'b': True}},
         (None, None, None, None), {'Boot_Mode': 'UEFI', 'b': 'true'}),
        ('5f0e8a3c-4c1d-4d56-9a51-0b7c1e2f3a03', None,
         (None, None, None, None), {}),
    ]

    def _pre_upgrade_9d4b6e2f1a73(self, engine):
        nodes = sa.table('nodes', sa.column('uuid'), sa.column('driver'),
                         sa.column('maintenance'), sa.column('protected'),
                         sa.column('retired'), sa.column('console_enabled'),
                         sa.column('properties', db_types.JsonEncodedDict))
        for node_uuid, properties, _c, _caps in self._MATCHING_NODES:
            self._insert(engine, nodes, {
                'uuid': node_uuid, 'driver': 'fake-hardware',
                'maintenance': False, 'protected': False, 'retired': False,
                'console_enabled': False, 'properties': properties})

    def _check_9d4b6e2f1a73(self, engine, data):
        columns = ('match_cpus', 'match_memory_mb', 'match_local_gb',
                   'match_cpu_arch')
        self.assertLessEqual(set(columns), self._columns(engine, 'nodes'))
        self.assertLessEqual(
            {'nodes_%s_idx' % c for c in columns},
            self._index_names(engine, 'nodes'))
        self.assertEqual({'node_id', 'name', 'value', 'created_at',
                          'updated_at'},
                         self._columns(engine, 'node_capabilities'))
        by_name = {i['name']: i for i in
                   sa.inspect(engine).get_indexes('node_capabilities')}
        self.assertEqual(['name', 'value', 'node_id'],
                         by_name['node_capabilities_idx']['column_names'])
        self.assertIn('match', self._columns(engine, 'allocations'))
        # The nodes already there got their values.
        with engine.begin() as conn:
            for node_uuid, _p, expected, capabilities in self._MATCHING_NODES:
                row = conn.execute(sa.text(
                    'SELECT id, %s FROM nodes WHERE uuid = :uuid'
                    % ', '.join(columns)), {'uuid': node_uuid}).one()
                self.assertEqual(expected, tuple(row[1:]), node_uuid)
                self.assertEqual(capabilities, dict(conn.execute(sa.text(
                    'SELECT name, value FROM node_capabilities '
                    'WHERE node_id = :id'), {'id': row[0]}).all()))
            # Names differing in case only are two capabilities on every
            # database (a byte-for-byte collation on MySQL).
            node_id = conn.execute(sa.text(
                'SELECT id FROM nodes WHERE uuid = :uuid'),
                {'uuid': self._MATCHING_NODES[1][0]}).scalar()
            conn.execute(sa.text(
                "INSERT INTO node_capabilities (node_id, name, value) "
                "VALUES (:id, 'boot_mode', 'uefi')"), {'id': node_id})
            # Node 0 and the new row; not node 1's Boot_Mode:UEFI.
            self.assertEqual(2, conn.execute(sa.text(
                "SELECT count(*) FROM node_capabilities "
                "WHERE name = 'boot_mode' AND value = 'uefi'")).scalar())
            conn.execute(sa.text('DELETE FROM node_capabilities'))
            conn.execute(sa.text('DELETE FROM nodes'))

    def _check_b2e7c4d9a610(self, engine, data):
        self.assertIn('explanation', self._columns(engine, 'allocations'))

    def _pre_upgrade_c4a1f7e3d285(self, engine):
        allocations = sa.table('allocations', sa.column('uuid'),
                               sa.column('state'))
        self._insert(engine, allocations, {
            'uuid': '0c1d9b0e-64a1-4bb4-8f8e-52d8b9e1a301',
            'state': 'active'})

    def _check_c4a1f7e3d285(self, engine, data):
        self.assertLessEqual({'kind', 'instance_uuid', 'expires_at'},
                             self._columns(engine, 'allocations'))
        by_name = {i['name']: i for i in
                   sa.inspect(engine).get_indexes('allocations')}
        self.assertEqual(['kind', 'id'],
                         by_name['allocations_kind_idx']['column_names'])
        self.assertEqual(['expires_at'],
                         by_name['allocations_expires_at_idx']['column_names'])
        with engine.begin() as conn:
            # An allocation made before the upgrade stays an allocation
            # with no lease.
            row = conn.execute(sa.text(
                'SELECT kind, instance_uuid, expires_at FROM allocations '
                "WHERE uuid = '0c1d9b0e-64a1-4bb4-8f8e-52d8b9e1a301'")).one()
            self.assertEqual(('allocation', None, None), tuple(row))
            conn.execute(sa.text('DELETE FROM allocations'))

    def _pre_upgrade_e5b8a2c7d431(self, engine):
        nodes = sa.table('nodes', sa.column('uuid'), sa.column('driver'),
                         sa.column('maintenance'), sa.column('protected'),
                         sa.column('retired'), sa.column('console_enabled'),
                         sa.column('chassis_uuid'))
        self._insert(engine, nodes, {
            'uuid': '5d0f3c52-6f0e-4f55-9e0c-3a1f0b6c9a01',
            'driver': 'fake-hardware', 'maintenance': False,
            'protected': False, 'retired': False, 'console_enabled': False,
            'chassis_uuid': '9b1e0e1a-4c2e-4a6b-8d3e-2f7c5a1b0c02'})

    def _check_e5b8a2c7d431(self, engine, data):
        self.assertLessEqual(
            {'id', 'uuid', 'description', 'extra', 'created_at',
             'updated_at'}, self._columns(engine, 'chassis'))
        self.assertIn('uniq_chassis0uuid',
                      self._unique_names(engine, 'chassis'))
        by_name = {i['name']: i for i in
                   sa.inspect(engine).get_indexes('nodes')}
        self.assertEqual(['chassis_uuid'],
                         by_name['nodes_chassis_uuid_idx']['column_names'])
        chassis = sa.table('chassis', sa.column('uuid'),
                           sa.column('description'))
        uuid = '0e9f1d7a-3b3c-4b0e-9a55-6c1d2e3f4a05'
        self._insert(engine, chassis, {'uuid': uuid, 'description': 'c'})
        with engine.begin() as conn:
            # A node's chassis_uuid written before the upgrade is kept.
            self.assertEqual(
                '9b1e0e1a-4c2e-4a6b-8d3e-2f7c5a1b0c02',
                conn.execute(sa.text(
                    'SELECT chassis_uuid FROM nodes WHERE uuid = '
                    "'5d0f3c52-6f0e-4f55-9e0c-3a1f0b6c9a01'")).scalar())
        self.assertRaises(db_exc.DBDuplicateEntry, self._insert, engine,
                          chassis, {'uuid': uuid})
        with engine.begin() as conn:
            conn.execute(sa.text('DELETE FROM chassis'))
            conn.execute(sa.text('DELETE FROM nodes'))

    def _check_f1d3a9c6b274(self, engine, data):
        self.assertEqual({'project_id', 'created_at', 'updated_at'},
                         self._columns(engine, 'project_locks'))
        locks = sa.table('project_locks', sa.column('project_id'))
        self._insert(engine, locks, {'project_id': 'p1'})
        # One row per project: the row a hold's insert locks.
        self.assertRaises(db_exc.DBDuplicateEntry, self._insert, engine,
                          locks, {'project_id': 'p1'})
        with engine.begin() as conn:
            conn.execute(sa.text('DELETE FROM project_locks'))

    def _pre_upgrade_f1c7a3e9b254(self, engine):
        nodes = sa.table('nodes', sa.column('uuid'), sa.column('driver'),
                         sa.column('maintenance'), sa.column('protected'),
                         sa.column('retired'), sa.column('console_enabled'))
        self._insert(engine, nodes, {
            'uuid': '7a2e4c19-0b3d-4e6f-8a1c-5d9e2f4b6c03',
            'driver': 'fake-hardware', 'maintenance': False,
            'protected': False, 'retired': False, 'console_enabled': False})

    def _check_f1c7a3e9b254(self, engine, data):
        self.assertLessEqual({'shard', 'parent_node'},
                             self._columns(engine, 'nodes'))
        by_name = {i['name']: i for i in
                   sa.inspect(engine).get_indexes('nodes')}
        self.assertEqual(['shard'],
                         by_name['nodes_shard_idx']['column_names'])
        self.assertEqual(['parent_node'],
                         by_name['nodes_parent_node_idx']['column_names'])
        with engine.begin() as conn:
            # A node enrolled before the upgrade has no shard or parent.
            self.assertEqual((None, None), tuple(conn.execute(sa.text(
                'SELECT shard, parent_node FROM nodes WHERE uuid = '
                "'7a2e4c19-0b3d-4e6f-8a1c-5d9e2f4b6c03'")).one()))
            conn.execute(sa.text('DELETE FROM nodes'))

    def _check_a7d2e9c4b816(self, engine, data):
        self.assertEqual(
            {'id', 'uuid', 'name', 'state', 'owner', 'last_error',
             'explanation', 'spec', 'conductor_affinity', 'expires_at',
             'created_at', 'updated_at'},
            self._columns(engine, 'allocation_groups'))
        self.assertIn('group_id', self._columns(engine, 'allocations'))
        by_name = {i['name']: i for i in
                   sa.inspect(engine).get_indexes('allocations')}
        self.assertEqual(['group_id'],
                         by_name['allocations_group_id_idx']['column_names'])
        groups = sa.table('allocation_groups', sa.column('uuid'),
                          sa.column('name'), sa.column('state'))
        self._insert(engine, groups, {
            'uuid': '0b6f1e2a-3c4d-4e5f-8a9b-1c2d3e4f5a61', 'name': 'g',
            'state': 'allocating'})
        # Names and UUIDs are unique, as an allocation's.
        self.assertRaises(db_exc.DBDuplicateEntry, self._insert, engine,
                          groups, {'uuid': '0b6f1e2a-3c4d-4e5f-8a9b-'
                                           '1c2d3e4f5a62',
                                   'name': 'g', 'state': 'allocating'})
        self.assertRaises(db_exc.DBDuplicateEntry, self._insert, engine,
                          groups, {'uuid': '0b6f1e2a-3c4d-4e5f-8a9b-'
                                           '1c2d3e4f5a61',
                                   'state': 'allocating'})
        with engine.begin() as conn:
            conn.execute(sa.text('DELETE FROM allocation_groups'))

    def _pre_upgrade_a7d2e5f8c316(self, engine):
        nodes = sa.table('nodes', sa.column('uuid'), sa.column('driver'),
                         sa.column('maintenance'), sa.column('protected'),
                         sa.column('retired'), sa.column('console_enabled'))
        self._insert(engine, nodes, {
            'uuid': '3b8d1f6a-2c4e-4a7b-9e0d-6f1a3c5e7b92',
            'driver': 'fake-hardware', 'maintenance': False,
            'protected': False, 'retired': False, 'console_enabled': False})

    def _check_a7d2e5f8c316(self, engine, data):
        columns = self._columns(engine, 'nodes')
        for name in ('disable_power_off', 'instance_name', 'health'):
            self.assertIn(name, columns)
        by_name = {i['name']: i for i in
                   sa.inspect(engine).get_indexes('nodes')}
        self.assertEqual(['instance_name'],
                         by_name['nodes_instance_name_idx']['column_names'])
        with engine.begin() as conn:
            # A node enrolled before the upgrade may be powered off, and
            # has no instance name nor health.
            row = conn.execute(sa.text(
                'SELECT disable_power_off, instance_name, health FROM nodes '
                "WHERE uuid = '3b8d1f6a-2c4e-4a7b-9e0d-6f1a3c5e7b92'")).one()
            self.assertEqual((False, None, None),
                             (bool(row[0]), row[1], row[2]))
            conn.execute(sa.text('DELETE FROM nodes'))

    _TALLY_NODES = (
        # uuid, traits, capabilities string, held by an instance
        ('6c2e9b4d-0000-4000-8000-000000000001', ['CUSTOM_B', 'CUSTOM_A'],
         'boot_mode:uefi', False),
        ('6c2e9b4d-0000-4000-8000-000000000002', ['CUSTOM_A', 'CUSTOM_B'],
         'boot_mode:uefi', False),
        ('6c2e9b4d-0000-4000-8000-000000000003', [], None, True),
    )

    def _pre_upgrade_6c2e9b4d8f17(self, engine):
        with engine.begin() as conn:
            for node_uuid, traits, capabilities, held in self._TALLY_NODES:
                conn.execute(sa.text(
                    "INSERT INTO nodes (uuid, driver, maintenance, "
                    "protected, retired, console_enabled, resource_class, "
                    "provision_state, power_state, instance_uuid, "
                    "conductor_group, disable_power_off) VALUES (:uuid, "
                    "'fake-hardware', :false, :false, :false, :false, "
                    "'rc-tally', 'available', 'power off', :instance, '', "
                    ":false)"), {'uuid': node_uuid, 'false': False,
                                 'instance': node_uuid if held else None})
                node_id = conn.execute(sa.text(
                    'SELECT id FROM nodes WHERE uuid = :uuid'),
                    {'uuid': node_uuid}).scalar()
                for trait in traits:
                    conn.execute(sa.text(
                        'INSERT INTO node_traits (node_id, trait) '
                        'VALUES (:id, :trait)'),
                        {'id': node_id, 'trait': trait})
                if capabilities:
                    name, value = capabilities.split(':')
                    conn.execute(sa.text(
                        'INSERT INTO node_capabilities (node_id, name, '
                        'value) VALUES (:id, :name, :value)'),
                        {'id': node_id, 'name': name, 'value': value})

    def _check_6c2e9b4d8f17(self, engine, data):
        module = _migration_module('6c2e9b4d8f17_node_tallies')
        # The frozen conditions are the picking rule's.
        self.assertEqual(
            [(c.field, picking.sql_text((c.field,)))
             for c in picking.PICKABLE],
            list(module.PICKING_CONDITIONS))
        self.assertEqual(models.TALLY_KEY, module.KEY)
        tallies = sa.table('node_tallies', sa.column('match_traits'),
                           sa.column('match_capabilities'),
                           sa.column('passes_instance_uuid'),
                           sa.column('resource_class'), sa.column('nodes'))
        changes = sa.table('node_tally_changes', sa.column('delta'),
                           sa.column('passes_instance_uuid'))
        with engine.begin() as conn:
            # The nodes enrolled before: their traits and capabilities as
            # one value each, counted by key.
            rows = sorted(
                (r.match_traits, r.match_capabilities,
                 bool(r.passes_instance_uuid), r.nodes)
                for r in conn.execute(sa.select(tallies).where(
                    tallies.c.resource_class == 'rc-tally')))
            self.assertEqual(
                [('["CUSTOM_A", "CUSTOM_B"]', '{"boot_mode": "uefi"}',
                  True, 2), ('[]', '{}', False, 1)], rows)
            self.assertEqual(1, conn.execute(sa.text(
                'SELECT id FROM node_tally_folds')).scalar())
            # The triggers: an update that changes no key column writes
            # nothing; one that does leaves the old key and enters the
            # new one; a deletion leaves its key.
            conn.execute(sa.text(
                "UPDATE nodes SET description = 'x' WHERE uuid = :uuid"),
                {'uuid': self._TALLY_NODES[0][0]})
            self.assertEqual([], conn.execute(sa.select(changes)).all())
            conn.execute(sa.text(
                'UPDATE nodes SET instance_uuid = uuid WHERE uuid = :uuid'),
                {'uuid': self._TALLY_NODES[0][0]})
            self.assertEqual([(-1, True), (1, False)], sorted(
                (r.delta, bool(r.passes_instance_uuid))
                for r in conn.execute(sa.select(changes))))
            conn.execute(sa.text('DELETE FROM node_tally_changes'))
            conn.execute(sa.text('DELETE FROM nodes'))
            self.assertEqual([-1] * 3, [r.delta for r in conn.execute(
                sa.select(changes))])
            conn.execute(sa.text('DELETE FROM node_tally_changes'))
            conn.execute(sa.text('DELETE FROM node_tallies'))

    def _pre_upgrade_9f3b7d2a5c84(self, engine):
        with engine.begin() as conn:
            conn.execute(sa.text(
                "INSERT INTO node_tallies (resource_class, owner, lessee, "
                "conductor_group, match_cpus, match_memory_mb, "
                "match_local_gb, match_cpu_arch, match_traits, "
                "match_capabilities, passes_provision_state, "
                "passes_maintenance, passes_retired, passes_power_state, "
                "passes_allocation_id, passes_instance_uuid, nodes) VALUES "
                "('rc-key', 'p1', NULL, '', 8, NULL, 100, 'x86_64', "
                "'[\"CUSTOM_A\"]', '{}', :true, :true, :false, :true, "
                ":true, :false, 3)"), {'true': True, 'false': False})

    def _check_9f3b7d2a5c84(self, engine, data):
        module = _migration_module('9f3b7d2a5c84_tally_key_json')
        self.assertEqual(models.TALLY_KEY, module.KEY)
        with engine.begin() as conn:
            value = conn.execute(sa.text(
                "SELECT key_json FROM node_tallies WHERE resource_class = "
                "'rc-key'")).scalar()
            # The key's values, booleans as such on every database, in
            # the form the folds write.
            expected = ['rc-key', 'p1', None, '', 8, None, 100, 'x86_64',
                        '["CUSTOM_A"]', '{}', True, True, False, True, True,
                        False]
            self.assertEqual(expected, json.loads(value))
            self.assertEqual(stmts.tally_key_json(expected), value)
            conn.execute(sa.text('DELETE FROM node_tallies'))
        columns = {column['name']: column for column in
                   sa.inspect(engine).get_columns('node_tallies')}
        self.assertFalse(columns['key_json']['nullable'])

    def _insert(self, engine, table, values):
        with engine.begin() as conn:
            conn.execute(table.insert().values(**values))


class ModelsMigrationSyncMixin(test_migrations.ModelsMigrationsSync):
    """The schema built by the migrations equals the models."""

    def get_engine(self):
        return self.engine

    def get_metadata(self):
        return models.Base.metadata

    def db_sync(self, engine):
        migration.upgrade('head', engine=engine)

    def include_object(self, object_, name, type_, reflected, compare_to):
        if type_ == 'table' and name == 'alembic_version':
            return False
        if (type_ == 'index' and name == 'nodes_free_candidate_idx'
                and self.engine.dialect.name != 'postgresql'):
            # NOTE: a PostgreSQL-only index (ddl_if in the model).
            return False
        return super().include_object(object_, name, type_, reflected,
                                      compare_to)

    def compare_server_default(self, ctxt, ins_col, meta_col, insp_def,
                               meta_def, rendered_meta_def):
        # NOTE: alembic's SQLite comparison cannot unquote an empty string
        # literal (SQLite reflects "('')" for the model's ''), so string
        # defaults are compared here by value on every backend.
        if (meta_def is not None and isinstance(meta_def.arg, str)
                and insp_def is not None):
            return _literal(insp_def) != meta_def.arg
        return super().compare_server_default(
            ctxt, ins_col, meta_col, insp_def, meta_def, rendered_meta_def)


class TestWalkMigrationsSQLite(MigrationCheckersMixin, WalkVersionsMixin,
                               _OpportunisticMixin, base.TestCase):
    pass


class TestWalkMigrationsPostgreSQL(MigrationCheckersMixin, WalkVersionsMixin,
                                   _OpportunisticMixin, base.TestCase):
    FIXTURE = test_fixtures.PostgresqlOpportunisticFixture


class TestWalkMigrationsMySQL(MigrationCheckersMixin, WalkVersionsMixin,
                              _OpportunisticMixin, base.TestCase):
    FIXTURE = test_fixtures.MySQLOpportunisticFixture


class TestModelsMigrationsSyncSQLite(ModelsMigrationSyncMixin,
                                     _OpportunisticMixin, base.TestCase):
    pass


class TestModelsMigrationsSyncPostgreSQL(ModelsMigrationSyncMixin,
                                         _OpportunisticMixin, base.TestCase):
    FIXTURE = test_fixtures.PostgresqlOpportunisticFixture


class TestModelsMigrationsSyncMySQL(ModelsMigrationSyncMixin,
                                    _OpportunisticMixin, base.TestCase):
    FIXTURE = test_fixtures.MySQLOpportunisticFixture


class TestMigrationCheckers(base.TestCase):

    def test_every_revision_has_a_check(self):
        missing = [rev for rev in _revisions_from_base()
                   if not hasattr(MigrationCheckersMixin, '_check_%s' % rev)]
        self.assertEqual(
            [], missing,
            'Add a _check_<revision> method to MigrationCheckersMixin in %s '
            'for each new migration: it asserts what the migration created '
            '(tables, columns, indexes, constraints).' % __file__)
