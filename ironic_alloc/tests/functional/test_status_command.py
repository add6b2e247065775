"""ironic-alloc-status upgrade check: its checks on the real test
database (SQLite by default, PostgreSQL and MariaDB in CI with
IRONIC_ALLOC_TEST_DB), and the console command as an operator runs it,
for its exit statuses."""

import datetime
import json
import os
import subprocess
import sys

import fixtures
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_upgradecheck import upgradecheck
from oslo_utils import uuidutils
import sqlalchemy as sa

from ironic_alloc.cmd import status
from ironic_alloc.common import states
from ironic_alloc.conf import allocation as allocation_conf
from ironic_alloc.conf import placement as placement_conf
from ironic_alloc.db import api as db_api
from ironic_alloc.db.sqlalchemy import models
from ironic_alloc.tests import base

BIN_DIR = os.path.dirname(sys.executable)
Code = upgradecheck.Code

dbapi = db_api.get_instance()
ALLOCATIONS = models.Allocation.__table__
CONDUCTORS = models.Conductor.__table__


class StatusTestCase(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.checks = status.Checks()

    def allocation(self, state=states.ALLOCATION_ACTIVE, **values):
        values.update({'uuid': uuidutils.generate_uuid(), 'state': state,
                       'resource_class': 'gold', 'traits': [],
                       'candidate_nodes': [], 'extra': {}})
        return dbapi.create_allocation(values)

    def age(self, table, row_id, **columns):
        """Set ``columns`` (name: seconds ago, database clock)."""
        now = dbapi.get_database_time()
        values = {name: now - datetime.timedelta(seconds=seconds)
                  for name, seconds in columns.items()}
        with self.db.engine.begin() as conn:
            conn.execute(table.update().where(table.c.id == row_id)
                         .values(**values))


class TestSchemaCheck(StatusTestCase):

    def test_at_head(self):
        result = self.checks._check_schema()
        self.assertEqual(Code.SUCCESS, result.code)
        self.assertIn('newest revision', result.details)


class TestPinAndObjectsCheck(StatusTestCase):

    def test_not_pinned_every_row_loads(self):
        self.allocation(match={'cpus': {'>=': 4}})
        self.allocation(kind=states.RESERVATION_KIND,
                        instance_uuid=uuidutils.generate_uuid())
        dbapi.create_node({'uuid': uuidutils.generate_uuid(),
                           'driver': 'fake-hardware'})
        dbapi.register_conductor('c1', '')
        dbapi.create_chassis({'description': 'rack'})
        result = self.checks._check_release_pin_and_objects()
        self.assertEqual(Code.SUCCESS, result.code, result.details)
        self.assertIn('not pinned', result.details)
        self.assertIn('all 5 stored rows', result.details)

    def test_pinned_release_and_newer_holds(self):
        self.config(pin_release_version='2026.2')
        self.allocation()
        result = self.checks._check_release_pin_and_objects()
        self.assertEqual(Code.SUCCESS, result.code, result.details)
        self.assertIn('pinned to release 2026.2', result.details)
        leased = self.allocation(expires_at=datetime.datetime(2030, 1, 1))
        matching = self.allocation(match={'cpus': {'>=': 4}})
        result = self.checks._check_release_pin_and_objects()
        self.assertEqual(Code.WARNING, result.code, result.details)
        self.assertIn('know Allocation 1.0; 2 allocations', result.details)
        self.assertIn('allocation %s needs 1.3' % leased.uuid,
                      result.details)
        self.assertIn('allocation %s needs 1.1' % matching.uuid,
                      result.details)

    def test_row_that_does_not_load(self):
        broken = self.allocation()
        self.allocation()
        with self.db.engine.begin() as conn:
            # A list where the object's field is a dictionary.
            conn.execute(sa.text('UPDATE allocations SET extra = :extra '
                                 'WHERE id = :id'),
                         {'extra': '[1, 2]', 'id': broken.id})
        result = self.checks._check_release_pin_and_objects()
        self.assertEqual(Code.FAILURE, result.code, result.details)
        self.assertIn('1 of 2 stored rows do not load', result.details)
        self.assertIn('allocation id %d' % broken.id, result.details)

    def test_chassis_row_that_does_not_load(self):
        broken = dbapi.create_chassis({'description': 'rack'})
        with self.db.engine.begin() as conn:
            conn.execute(sa.text('UPDATE chassis SET extra = :extra '
                                 'WHERE id = :id'),
                         {'extra': '"rack"', 'id': broken.id})
        result = self.checks._check_release_pin_and_objects()
        self.assertEqual(Code.FAILURE, result.code, result.details)
        self.assertIn('1 of 1 stored rows do not load', result.details)
        self.assertIn('chassis id %d' % broken.id, result.details)


class TestLongAllocatingCheck(StatusTestCase):

    def setUp(self):
        super().setUp()
        self.config(heartbeat_timeout=60, group='conductor')

    def test_none_too_long(self):
        alive = dbapi.register_conductor('alive', '')
        self.allocation(state=states.ALLOCATING,
                        conductor_affinity=alive.id)
        self.allocation()
        stale_active = self.allocation()
        self.age(ALLOCATIONS, stale_active.id, created_at=7200)
        result = self.checks._check_long_allocating()
        self.assertEqual(Code.SUCCESS, result.code, result.details)

    def test_slow_on_a_live_conductor_warns(self):
        alive = dbapi.register_conductor('alive', '')
        rows = [self.allocation(state=states.ALLOCATING,
                                conductor_affinity=alive.id)
                for _ in range(2)]
        self.age(ALLOCATIONS, rows[0].id, created_at=600)
        self.age(ALLOCATIONS, rows[1].id, created_at=7200)
        result = self.checks._check_long_allocating()
        self.assertEqual(Code.WARNING, result.code, result.details)
        self.assertIn('2 allocations have been allocating', result.details)
        self.assertIn('the oldest, %s' % rows[1].uuid, result.details)
        self.assertIn('live conductor alive', result.details)

    def test_orphans_fail(self):
        dead = dbapi.register_conductor('dead', '')
        self.age(CONDUCTORS, dead.id, heartbeat_at=3600)
        alive = dbapi.register_conductor('alive', '')
        orphan = self.allocation(state=states.ALLOCATING,
                                 conductor_affinity=dead.id)
        slow = self.allocation(state=states.ALLOCATING,
                               conductor_affinity=alive.id)
        self.age(ALLOCATIONS, orphan.id, created_at=7200)
        self.age(ALLOCATIONS, slow.id, created_at=600)
        result = self.checks._check_long_allocating()
        self.assertEqual(Code.FAILURE, result.code, result.details)
        self.assertIn('2 allocations', result.details)
        self.assertIn('the oldest, %s' % orphan.uuid, result.details)
        self.assertIn('1 of them belong to no live conductor',
                      result.details)


class TestBackendCheck(StatusTestCase):
    """The allocation backend's settings, Placement's in particular.

    On a configuration of their own: loading an auth plugin registers
    its options (some required) in the configuration it reads."""

    def setUp(self):
        super().setUp()
        self.conf = cfg.ConfigOpts()
        allocation_conf.register_opts(self.conf)
        placement_conf.register_opts(self.conf)
        self.conf([])
        self.checks = status.Checks(self.conf)

    def use_placement(self, plugin=None, **options):
        self.conf.set_override('backend', 'placement', group='allocation')
        if plugin:
            # NOTE: a plugin's options exist once registered.
            self.conf.register_opts(
                ks_loading.get_auth_plugin_conf_options(plugin),
                group=placement_conf.GROUP)
            options['auth_type'] = plugin
        for name, value in options.items():
            self.conf.set_override(name, value, group=placement_conf.GROUP)

    def test_database_backend(self):
        result = self.checks._check_backend()
        self.assertEqual(Code.SUCCESS, result.code)
        self.assertEqual('[allocation]backend is database: nothing to '
                         'check.', result.details)

    def test_no_auth_type(self):
        self.use_placement()
        result = self.checks._check_backend()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('[placement]auth_type is not set', result.details)

    def test_missing_plugin_option(self):
        self.use_placement('password', username='u', password='p')
        result = self.checks._check_backend()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('[allocation]backend is placement', result.details)
        self.assertIn('The [placement] options do not load', result.details)
        self.assertIn('auth_url', result.details)

    def test_coherent(self):
        self.use_placement('admin_token', endpoint='http://placement:8778',
                           token='secret')
        result = self.checks._check_backend()
        self.assertEqual(Code.SUCCESS, result.code, result.details)
        self.assertIn('auth_type admin_token', result.details)
        self.assertNotIn('secret', result.details)
        self.conf.set_override('sync_interval', 0,
                               group=placement_conf.GROUP)
        result = self.checks._check_backend()
        self.assertEqual(Code.WARNING, result.code, result.details)
        self.assertIn('sync_interval is 0', result.details)


class TestStatusCommand(StatusTestCase):
    """The console script, for its exit statuses and JSON output."""

    def run_status(self, url, extra=''):
        conf = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'status.conf')
        with open(conf, 'w') as f:
            f.write('%s\n[database]\nconnection = %s\n' % (extra, url))
        result = subprocess.run(
            [os.path.join(BIN_DIR, 'ironic-alloc-status'), '--config-file',
             conf, 'upgrade', 'check', '--json'],
            capture_output=True, text=True, timeout=120)
        try:
            checks = json.loads(result.stdout)['checks']
        except ValueError:
            self.fail('No JSON: %s %s' % (result.stdout, result.stderr))
        return result.returncode, {c['check']: c for c in checks}

    def test_exit_statuses(self):
        url = self.db.engine.url.render_as_string(hide_password=False)
        code, checks = self.run_status(url)
        self.assertEqual(0, code, checks)
        self.assertEqual({0}, {c['result'] for c in checks.values()})

        alive = dbapi.register_conductor('alive', '')
        slow = self.allocation(state=states.ALLOCATING,
                               conductor_affinity=alive.id)
        self.age(ALLOCATIONS, slow.id, created_at=7200)
        code, checks = self.run_status(url)
        self.assertEqual(1, code, checks)
        self.assertEqual(1, checks['Long allocating allocations']['result'])

        code, checks = self.run_status(
            url, '[DEFAULT]\npin_release_version = 2019.1')
        self.assertEqual(2, code, checks)
        pin = checks['Release pin and stored objects']
        self.assertEqual(2, pin['result'])
        self.assertIn('names no release this code serves (2026.2)',
                      pin['details'])

    def test_empty_database(self):
        workdir = self.useFixture(fixtures.TempDir()).path
        code, checks = self.run_status(
            'sqlite:///%s' % os.path.join(workdir, 'empty.sqlite'))
        self.assertEqual(2, code, checks)
        schema = checks['Database schema']
        self.assertEqual(2, schema['result'])
        self.assertIn('ironic-alloc-dbsync upgrade', schema['details'])
