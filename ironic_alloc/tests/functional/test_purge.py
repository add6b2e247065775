"""The purge of old rows: the database API's rules, ``ironic-alloc-dbsync
purge`` as an operator runs it (a real process on the test database),
and the conductor's periodic purge with take-over disabled.

SQLite by default, PostgreSQL and MariaDB in CI (IRONIC_ALLOC_TEST_DB).
"""

import datetime
import os
import subprocess
import sys
import time

import fixtures
from oslo_utils import uuidutils
import sqlalchemy as sa

from ironic_alloc.common import states
from ironic_alloc.conf import CONF
from ironic_alloc.db import api as db_api
from ironic_alloc.db.sqlalchemy import models
from ironic_alloc.tests import base
from ironic_alloc.tests.functional import fixtures as ia_fixtures

BIN_DIR = os.path.dirname(sys.executable)
DAY = 86400

dbapi = db_api.get_instance()
ALLOCATIONS = models.Allocation.__table__
GROUPS = models.AllocationGroup.__table__
CONDUCTORS = models.Conductor.__table__
NODES = models.Node.__table__


class PurgeTestCase(base.DbTestCase):

    def days_ago(self, days):
        return dbapi.get_database_time() - datetime.timedelta(days=days)

    def allocation(self, state=states.ALLOCATION_ERROR, days=0,
                   conductor_id=None):
        """An allocation row of ``state`` last updated ``days`` ago."""
        row = dbapi.create_allocation({
            'uuid': uuidutils.generate_uuid(), 'state': state,
            'resource_class': 'gold', 'traits': [], 'candidate_nodes': [],
            'extra': {}, 'conductor_affinity': conductor_id})
        when = self.days_ago(days)
        with self.db.engine.begin() as conn:
            conn.execute(ALLOCATIONS.update().where(
                ALLOCATIONS.c.id == row.id).values(
                    created_at=when, updated_at=when))
        return row

    def group(self, members, state=states.GROUP_ERROR, days=0):
        """An allocation group of ``state`` with ``members`` new
        allocations of the same state, all last updated ``days`` ago.

        :returns: (group row, member uuids).
        """
        uuids = [uuidutils.generate_uuid() for _ in range(members)]
        row = dbapi.create_allocation_group(
            {'uuid': uuidutils.generate_uuid(),
             'state': states.GROUP_ALLOCATING,
             'spec': {u: {'kind': states.MEMBER_NEW} for u in uuids}},
            [{'uuid': u, 'state': states.ALLOCATING, 'resource_class':
              'gold', 'traits': [], 'candidate_nodes': [], 'extra': {}}
             for u in uuids], [])
        when = self.days_ago(days)
        with self.db.engine.begin() as conn:
            conn.execute(GROUPS.update().where(GROUPS.c.id == row.id).values(
                state=state, created_at=when, updated_at=when))
            conn.execute(ALLOCATIONS.update().where(
                ALLOCATIONS.c.group_id == row.id).values(
                    state=state, created_at=when, updated_at=when))
        return row, set(uuids)

    def group_uuids(self):
        with self.db.engine.connect() as conn:
            return set(conn.execute(sa.select(GROUPS.c.uuid)).scalars())

    def conductor(self, hostname, days=0, online=False):
        """A conductor row whose last heartbeat was ``days`` ago."""
        row = dbapi.register_conductor(hostname, '')
        when = self.days_ago(days)
        with self.db.engine.begin() as conn:
            conn.execute(CONDUCTORS.update().where(
                CONDUCTORS.c.id == row.id).values(
                    heartbeat_at=when, created_at=when, online=online))
        return row

    def node(self, **values):
        values.setdefault('uuid', uuidutils.generate_uuid())
        values.setdefault('driver', 'fake-hardware')
        values.setdefault('resource_class', 'gold')
        return dbapi.create_node(values)

    def uuids(self):
        with self.db.engine.connect() as conn:
            return set(conn.execute(sa.select(ALLOCATIONS.c.uuid)).scalars())

    def hostnames(self):
        with self.db.engine.connect() as conn:
            return set(conn.execute(
                sa.select(CONDUCTORS.c.hostname)).scalars())

    def count_deletes(self, table):
        """A list that receives one item per DELETE of ``table`` sent."""
        deletes = []

        def record(conn, cursor, statement, parameters, context, many):
            if statement.lstrip().upper().startswith(
                    'DELETE FROM %s' % table.name.upper()):
                deletes.append(statement)

        sa.event.listen(self.db.engine, 'before_cursor_execute', record)
        self.addCleanup(sa.event.remove, self.db.engine,
                        'before_cursor_execute', record)
        return deletes


class TestPurgeRules(PurgeTestCase):

    def test_old_error_allocations_go_in_batches(self):
        old = {self.allocation(days=40).uuid for _ in range(5)}
        recent = self.allocation(days=2).uuid
        active = self.allocation(state=states.ALLOCATION_ACTIVE,
                                 days=40).uuid
        allocating = self.allocation(state=states.ALLOCATING, days=40).uuid
        listed = dbapi.get_purgeable_error_allocations(30 * DAY, 100)
        self.assertEqual(old, {row.uuid for row in listed})
        deletes = self.count_deletes(ALLOCATIONS)
        self.assertEqual(5, dbapi.purge_error_allocations(30 * DAY, 2))
        # Two full batches and the last one of one row.
        self.assertEqual(3, len(deletes))
        self.assertEqual({recent, active, allocating}, self.uuids())

    def test_error_allocation_still_bound_to_a_node_stays(self):
        bound = self.allocation(days=40)
        self.node(allocation_id=bound.id, instance_uuid=bound.uuid)
        loose = self.allocation(days=40)
        self.assertEqual(1, dbapi.purge_error_allocations(30 * DAY))
        self.assertEqual({bound.uuid}, self.uuids())
        self.assertNotIn(loose.uuid, self.uuids())

    def test_error_groups_go_with_their_members(self):
        old_1, old_members_1 = self.group(3, days=40)
        old_2, old_members_2 = self.group(2, days=40)
        recent, recent_members = self.group(2, days=2)
        active, active_members = self.group(2, state=states.GROUP_ACTIVE,
                                            days=40)
        bound, bound_members = self.group(2, days=40)
        self.node(allocation_id=dbapi.get_allocation_by_uuid(
            sorted(bound_members)[0]).id)
        loose = self.allocation(days=40).uuid
        # The error allocation purge leaves every group's member alone.
        self.assertEqual([loose], [row.uuid for row in
                                   dbapi.get_purgeable_error_allocations(
                                       30 * DAY, 100)])
        self.assertEqual(1, dbapi.purge_error_allocations(30 * DAY))
        kept = recent_members | active_members | bound_members
        self.assertEqual(old_members_1 | old_members_2 | kept, self.uuids())
        listed = dbapi.get_purgeable_error_groups(30 * DAY, 100)
        self.assertEqual([(old_1.uuid, 3), (old_2.uuid, 2)],
                         [(row.uuid, row.members) for row in listed])
        self.assertEqual([old_2.uuid], [row.uuid for row in
                                        dbapi.get_purgeable_error_groups(
                                            30 * DAY, 100, old_1.id)])
        deletes = self.count_deletes(GROUPS)
        self.assertEqual((2, 5), dbapi.purge_error_groups(30 * DAY, 1))
        # One group per transaction, and a last batch that found none.
        self.assertEqual(2, len(deletes))
        self.assertEqual(kept, self.uuids())
        self.assertEqual({recent.uuid, active.uuid, bound.uuid},
                         self.group_uuids())
        self.assertEqual((0, 0), dbapi.purge_error_groups(30 * DAY))

    def test_only_offline_conductors_without_work_go(self):
        CONF.set_override('heartbeat_timeout', 60, group='conductor')
        self.addCleanup(CONF.clear_override, 'heartbeat_timeout',
                        group='conductor')
        self.conductor('gone-1', days=40)
        self.conductor('gone-2', days=40, online=True)  # never said bye
        self.conductor('recent', days=2)
        self.conductor('alive', days=0, online=True)
        busy = self.conductor('busy', days=40)
        self.allocation(state=states.ALLOCATING, conductor_id=busy.id)
        self.conductor('locking', days=40)
        self.node(reservation='locking')
        # A conductor whose allocations finished keeps no row.
        finished = self.conductor('finished', days=40)
        self.allocation(state=states.ALLOCATION_ACTIVE,
                        conductor_id=finished.id)
        listed = dbapi.get_purgeable_conductors(30 * DAY, 60, 100)
        self.assertEqual({'gone-1', 'gone-2', 'finished'},
                         {row.hostname for row in listed})
        self.assertEqual(3, dbapi.purge_conductors(30 * DAY, 60, 2))
        self.assertEqual({'recent', 'alive', 'busy', 'locking'},
                         self.hostnames())
        # With no age limit at all, a live conductor is still kept.
        self.assertEqual(1, dbapi.purge_conductors(0, 60))
        self.assertEqual({'alive', 'busy', 'locking'}, self.hostnames())


class TestPurgeCommand(PurgeTestCase):

    def dbsync_purge(self, *args):
        conf = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'purge.conf')
        with open(conf, 'w') as f:
            f.write('[database]\nconnection = %s\n'
                    % self.db.engine.url.render_as_string(
                        hide_password=False))
        return subprocess.run(
            [os.path.join(BIN_DIR, 'ironic-alloc-dbsync'), '--config-file',
             conf, 'purge'] + list(args),
            capture_output=True, text=True, timeout=120)

    def test_dry_run_writes_nothing_then_purge(self):
        old = [self.allocation(days=10).uuid for _ in range(3)]
        recent = self.allocation(days=1).uuid
        old_group, _members = self.group(2, days=10)
        recent_group, recent_members = self.group(1, days=1)
        self.conductor('old-conductor', days=10)
        self.conductor('new-conductor', days=1)
        before = (self.uuids(), self.hostnames(), self.group_uuids())
        dry = self.dbsync_purge('--older-than', '7', '--batch-size', '2',
                                '--dry-run')
        self.assertEqual(0, dry.returncode, dry.stdout + dry.stderr)
        self.assertEqual(before, (self.uuids(), self.hostnames(),
                                  self.group_uuids()))
        for uuid in old:
            self.assertIn('Would purge error allocation %s' % uuid,
                          dry.stdout)
        self.assertIn('Would purge conductor old-conductor', dry.stdout)
        self.assertIn('Would purge error allocation group %s (updated '
                      % old_group.uuid, dry.stdout)
        self.assertNotIn(recent, dry.stdout)
        self.assertNotIn(recent_group.uuid, dry.stdout)
        self.assertNotIn('new-conductor', dry.stdout)
        self.assertIn('Dry run: 3 error allocations, 1 error allocation '
                      'groups (with 2 member allocations) and 1 conductors '
                      'older than 7 days would be purged', dry.stdout)

        done = self.dbsync_purge('--older-than', '7', '--batch-size', '2')
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)
        self.assertIn('Purged 3 error allocations, 1 error allocation '
                      'groups (with 2 member allocations) and 1 conductors '
                      'older than 7 days.', done.stdout)
        self.assertEqual(({recent} | recent_members, {'new-conductor'},
                          {recent_group.uuid}),
                         (self.uuids(), self.hostnames(),
                          self.group_uuids()))

    def test_default_age_keeps_younger_rows(self):
        kept = self.allocation(days=29).uuid
        self.allocation(days=31)
        done = self.dbsync_purge()
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)
        self.assertIn('Purged 1 error allocations, 0 error allocation '
                      'groups (with 0 member allocations) and 0 conductors '
                      'older than 30 days.', done.stdout)
        self.assertEqual({kept}, self.uuids())

    def test_bad_arguments(self):
        result = self.dbsync_purge('--batch-size', '0')
        self.assertEqual(2, result.returncode)
        self.assertIn('--batch-size', result.stdout)
        result = self.dbsync_purge('--older-than', 'soon')
        self.assertEqual(2, result.returncode)
        self.assertIn("invalid int value: 'soon'", result.stderr)


class TestPeriodicPurge(PurgeTestCase):

    def test_runs_with_take_over_disabled(self):
        old = self.allocation(days=1).uuid
        recent = self.allocation(days=0).uuid
        self.group(2, days=1)
        fixture = self.useFixture(ia_fixtures.ConductorFixture(
            host='purging', check_allocations_interval=0,
            error_allocation_max_age=3600,
            error_allocation_purge_interval=1))
        names = [watcher.work.name for watcher in
                 fixture.service.periodic_tasks.watchers()]
        self.assertTrue(any('purge_error_allocations' in name
                            for name in names), names)
        self.assertFalse(any('take_over' in name for name in names), names)
        # NOTE: a bound on the wait, not a timing assertion: the task
        # runs every second.
        deadline = time.monotonic() + 60
        while (old in self.uuids() or self.group_uuids()) and (
                time.monotonic() < deadline):
            time.sleep(0.2)
        self.assertEqual(({recent}, set()),
                         (self.uuids(), self.group_uuids()))

    def test_no_task_while_error_allocations_are_kept(self):
        fixture = self.useFixture(ia_fixtures.ConductorFixture(
            host='keeping', error_allocation_max_age=0))
        names = [watcher.work.name for watcher in
                 fixture.service.periodic_tasks.watchers()]
        self.assertFalse(any('purge_error_allocations' in name
                             for name in names), names)
