"""Allocation groups processed by real in-process conductors: the commit's
guards (all or nothing when a node changed underneath), solving again
without that node, re-drive of a group whose cast was lost and take-over
of a dead conductor's group.
"""

import logging
import time

import fixtures
from oslo_db import exception as db_exc
from oslo_utils import uuidutils

from ironic_alloc.common import exception
from ironic_alloc.common import states
from ironic_alloc.conductor import allocations
from ironic_alloc.conductor.backends import database as database_backend
from ironic_alloc.conductor import groups
from ironic_alloc.conductor import registration
from ironic_alloc.conductor import takeover
from ironic_alloc.db import api as db_api
from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.objects import allocation as allocation_obj
from ironic_alloc.objects import allocation_group as group_obj
from ironic_alloc.objects import conductor as conductor_obj
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import test_allocations
from ironic_alloc.tests.functional.conductor import utils

dbapi = db_api.get_instance()


def make_group(context, conductor_id, count, **member):
    """An allocating group of ``count`` new members, as the API writes
    it (no cast)."""
    uuids = [uuidutils.generate_uuid() for _ in range(count)]
    rows = [dict(uuid=u, resource_class='gold', state=states.ALLOCATING,
                 conductor_affinity=conductor_id, traits=[],
                 candidate_nodes=[], extra={}, **member) for u in uuids]
    group = group_obj.AllocationGroup(
        context, uuid=uuidutils.generate_uuid(),
        state=states.GROUP_ALLOCATING, conductor_affinity=conductor_id,
        spec={u: {'kind': states.MEMBER_NEW} for u in uuids})
    group.create(rows, [])
    return group


def wait_for_group(context, group_id, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        group = group_obj.AllocationGroup.get(context, id=group_id)
        if group.state != states.GROUP_ALLOCATING:
            return group
        if time.monotonic() > deadline:
            raise AssertionError('group %s still allocating' % group.uuid)
        time.sleep(0.05)


class TestCommit(test_allocations.AllocationTestCase):
    """The groups here belong to a live conductor that does not run (no
    cast, no re-drive): the test drives them."""

    def setUp(self):
        super().setUp()
        self.idle = conductor_obj.Conductor.register(self.context,
                                                     'idle-host', '').id

    def plan(self, group, nodes):
        members = [a for a, _n in group.members()]
        return {'releases': [], 'handovers': [], 'names': [],
                'new': [{'uuid': a.uuid, 'allocation_id': a.id,
                         'node_id': node.id,
                         'criteria': allocations.criteria_of(a)}
                        for a, node in zip(members, nodes)]}

    def test_a_taken_node_rolls_everything_back(self):
        free = utils.make_available_node(self.context)
        taken = utils.make_available_node(self.context)
        other = utils.make_allocation(self.context, self.idle,
                                      state=states.ALLOCATION_ACTIVE,
                                      node_id=taken.id)
        taken.allocation_id = other.id
        taken.instance_uuid = other.uuid
        taken.save()
        group = make_group(self.context, self.idle, 2)
        error = self.assertRaises(
            exception.AllocationGroupCommitFailed,
            dbapi.commit_allocation_group, group.id, self.idle,
            self.plan(group, [free, taken]), states.UPDATE_ALLOWED_STATES)
        self.assertEqual(taken.id, error.node_id)
        # Nothing was written: the group, its members and the free node.
        self.assertEqual(states.GROUP_ALLOCATING, group_obj.AllocationGroup
                         .get(self.context, id=group.id).state)
        self.assertEqual({states.ALLOCATING},
                         {a.state for a, _n in group.members()})
        free.refresh()
        self.assertIsNone(free.allocation_id)
        self.assertInvariant()

    def test_not_ours_writes_nothing(self):
        node = utils.make_available_node(self.context)
        group = make_group(self.context, self.idle, 1)
        self.assertRaises(exception.AllocationGroupLost,
                          dbapi.commit_allocation_group, group.id, self.me,
                          self.plan(group, [node]),
                          states.UPDATE_ALLOWED_STATES)
        self.assertFalse(dbapi.fail_allocation_group(group.id, self.me,
                                                     'late'))
        node.refresh()
        self.assertIsNone(node.allocation_id)

    def test_solved_again_without_a_node_taken_underneath(self):
        nodes = [utils.make_available_node(self.context) for _ in range(3)]
        group = make_group(self.context, self.idle, 2)
        real = dbapi.commit_allocation_group
        calls = []

        def take_one_first(group_id, conductor_id, plan, node_states):
            # NOTE: another allocation takes the first planned node
            # between the search and the commit, once.
            if not calls:
                victim = plan['new'][0]['node_id']
                other = utils.make_allocation(self.context, self.idle)
                dbapi.reserve_node_for_allocation(
                    other.id, self.idle, victim,
                    allocations.criteria_of(other))
                calls.append(victim)
            return real(group_id, conductor_id, plan, node_states)

        self.useFixture(fixtures.MonkeyPatch(
            'ironic_alloc.conductor.groups.dbapi.commit_allocation_group',
            take_one_first))
        held = groups.do_allocate_group(
            self.context, group.id, self.idle,
            database_backend.DatabaseBackend())
        self.assertEqual(2, len(held))
        self.assertNotIn(calls[0], held)
        self.assertLessEqual(set(held), {n.id for n in nodes})
        self.assertEqual(states.GROUP_ACTIVE, group_obj.AllocationGroup.get(
            self.context, id=group.id).state)
        self.assertInvariant()

    def _deadlock_commits(self, count):
        """Make the first ``count`` transactions of the group commit fail
        on a deadlock; returns the list of node ids they tried.

        NOTE: a real deadlock cannot be provoked on purpose (two
        transactions would have to lock the same rows in opposite orders
        at the same moment, and SQLite never deadlocks), so a real
        DBDeadlock is raised from inside the commit's transaction, by the
        first reservation it makes: oslo.db's retries of the transaction,
        the conversion when they run out and the conductor's solving again
        are all the real code.
        """
        real = sqla_api._reserve_for_allocation
        tried = []

        def deadlocked(conn, allocation_id, *args, **kwargs):
            # NOTE: only the transactions of the group's commit reach
            # here (the test has no other allocation in flight).
            if len(tried) < count:
                tried.append(args[1])
                raise db_exc.DBDeadlock()
            return real(conn, allocation_id, *args, **kwargs)

        self.useFixture(fixtures.MonkeyPatch(
            'ironic_alloc.db.sqlalchemy.api._reserve_for_allocation',
            deadlocked))
        return tried

    def test_deadlock_retries_run_out_then_solved_again(self):
        nodes = [utils.make_available_node(self.context) for _ in range(2)]
        group = make_group(self.context, self.idle, 2)
        # Every try of the first commit: the database layer's retries
        # run out, the conductor solves again (no node excluded).
        tried = self._deadlock_commits(sqla_api.CONFLICT_RETRIES + 1)
        held = groups.do_allocate_group(
            self.context, group.id, self.idle,
            database_backend.DatabaseBackend())
        self.assertEqual(sqla_api.CONFLICT_RETRIES + 1, len(tried))
        self.assertEqual(sorted(n.id for n in nodes), sorted(held))
        self.assertEqual(states.GROUP_ACTIVE, group_obj.AllocationGroup.get(
            self.context, id=group.id).state)
        self.assertInvariant()

    def test_deadlocks_fail_the_group_after_group_retries(self):
        self.config(group_retries=0, group='allocation')
        utils.make_available_node(self.context)
        group = make_group(self.context, self.idle, 1)
        self._deadlock_commits(sqla_api.CONFLICT_RETRIES + 1)
        self.assertIsNone(groups.do_allocate_group(
            self.context, group.id, self.idle,
            database_backend.DatabaseBackend()))
        failed = group_obj.AllocationGroup.get(self.context, id=group.id)
        self.assertEqual(states.GROUP_ERROR, failed.state)
        self.assertEqual(
            'The group could not be committed: the database refused the '
            'commit %d times as conflicting with other transactions '
            '(deadlock).' % (sqla_api.CONFLICT_RETRIES + 1),
            failed.last_error)
        self.assertEqual({states.ALLOCATION_ERROR},
                         {a.state for a, _n in failed.members()})
        self.assertInvariant()

    def test_nodes_reserved_in_node_id_order(self):
        # NOTE: the lock order that keeps two groups committing on shared
        # nodes from deadlocking (PostgreSQL fails one of them).
        for _ in range(6):
            utils.make_available_node(self.context)
        group = make_group(self.context, self.idle, 6)
        real = dbapi.commit_allocation_group
        planned = []

        def record(group_id, conductor_id, plan, node_states):
            planned.append([member['node_id'] for member in plan['new']])
            return real(group_id, conductor_id, plan, node_states)

        self.useFixture(fixtures.MonkeyPatch(
            'ironic_alloc.conductor.groups.dbapi.commit_allocation_group',
            record))
        held = groups.do_allocate_group(
            self.context, group.id, self.idle,
            database_backend.DatabaseBackend())
        self.assertEqual(6, len(held))
        self.assertEqual([sorted(held)], planned)


class TestRedriveAndTakeOver(test_allocations.AllocationTestCase):

    conductor_opts = {'heartbeat_interval': 1, 'heartbeat_timeout': 3,
                      'check_allocations_interval': 1,
                      'allocation_redrive_interval': 1}

    def test_lost_cast(self):
        for _ in range(3):
            utils.make_available_node(self.context)
        group = make_group(self.context, self.me, 3)
        done = wait_for_group(self.context, group.id)
        self.assertEqual(states.GROUP_ACTIVE, done.state)
        self.assertInvariant()

    def test_take_over_from_dead_conductor(self):
        for _ in range(2):
            utils.make_available_node(self.context)
        dead = conductor_obj.Conductor.register(self.context, 'dead-host',
                                                '')
        group = make_group(self.context, dead.id, 2)
        test_allocations._age_heartbeat(dead.id, 3600)
        done = wait_for_group(self.context, group.id)
        self.assertEqual(states.GROUP_ACTIVE, done.state)
        self.assertEqual(self.me, done.conductor_affinity)
        members = [a for a, _n in done.members()]
        self.assertEqual({self.me}, {a.conductor_affinity for a in members})
        # The single-allocation take-over never processed a member alone.
        self.assertEqual([], dbapi.get_allocating_ids(dead.id))
        self.assertFalse(dbapi.take_over_allocation_group(group.id, dead.id,
                                                          dead.id))
        self.assertEqual(
            {states.ALLOCATION_ACTIVE},
            {allocation_obj.Allocation.get_by_id(self.context, a.id).state
             for a in members})
        self.assertInvariant()


class TestHandBack(test_allocations.AllocationTestCase):

    def test_clean_stop_hands_groups_to_peer(self):
        for _ in range(4):
            utils.make_available_node(self.context)
        leaving = utils.start_leaving_conductor()
        leaving_id = leaving.service.conductor.id
        ids = [make_group(self.context, leaving_id, 2).id for _ in range(2)]
        leaving.cleanUp()  # graceful stop: hand back to us
        for group_id in ids:
            done = wait_for_group(self.context, group_id, timeout=15)
            self.assertEqual(states.GROUP_ACTIVE, done.state)
            self.assertEqual(self.me, done.conductor_affinity)
            self.assertEqual(
                {(states.ALLOCATION_ACTIVE, self.me)},
                {(a.state, a.conductor_affinity)
                 for a, _n in done.members()})
        self.assertInvariant()


class TestHandBackAlone(base.DbTestCase):
    """A stopping conductor alone: its groups and allocations stay with it
    (a restart or a take-over resumes them), and the log says so."""

    def test_no_live_peer(self):
        logged = self.useFixture(fixtures.FakeLogger(
            name='ironic_alloc.conductor.takeover', level=logging.INFO))
        alone = registration.Registration('alone-host', None)
        alone.register()
        group = make_group(self.context, alone.id, 1)
        allocation = utils.make_allocation(self.context, alone.id)
        takeover.TakeOver(alone, None).hand_back()
        self.assertIn('1 allocation groups stay with this stopped '
                      'conductor: no live peer', logged.output)
        self.assertIn('1 allocations stay with this stopped conductor',
                      logged.output)
        self.assertEqual(alone.id, group_obj.AllocationGroup.get(
            self.context, id=group.id).conductor_affinity)
        self.assertEqual(alone.id, allocation_obj.Allocation.get_by_id(
            self.context, allocation.id).conductor_affinity)
