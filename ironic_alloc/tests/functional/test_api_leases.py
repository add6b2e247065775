"""Leases of allocations (API extension 1.2) over HTTP, and the deploy
guard of reserved nodes.

The WSGI app served on a real socket with a real conductor: ``ttl`` and
``expires_at`` on POST and PATCH, judged by the database clock, shown at
1.2 and refused and hidden below it; every bad value is a 400 in Ironic's
error format with nothing written; a lease that ends releases the
allocation as DELETE would; a deploy of a reserved node must name its
reservation (409 otherwise).
"""

import datetime
import http.client
import json
import threading
import time

import fixtures
from oslo_utils import uuidutils

from ironic_alloc.common import states
from ironic_alloc.conf import CONF
from ironic_alloc.db import api as db_api
from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.tests.functional.conductor import test_leases
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import test_api_matching

dbapi = db_api.get_instance()

EXTENSION = 'ironic-alloc 1.2'


def _parse(text):
    return datetime.datetime.fromisoformat(text)


class _LeaseTestCase(test_api_matching._ServedTestCase):

    def call(self, method, url, doc=None, extension=EXTENSION):
        return super().call(method, url, doc, extension=extension)

    def db_now(self):
        return dbapi.get_database_time().replace(
            tzinfo=datetime.timezone.utc)

    def allocate(self, **body):
        utils.make_available_node(self.context)
        body.setdefault('resource_class', 'gold')
        status, allocation = self.call('POST', '/v1/allocations', body)
        self.assertEqual(201, status, allocation)
        return allocation


class TestAllocationLeases(_LeaseTestCase):

    def test_ttl_counts_from_the_database_clock(self):
        before = self.db_now().replace(microsecond=0)
        allocation = self.allocate(ttl=300, name='leased')
        after = self.db_now()
        self.assertEqual('active', allocation['state'])
        end = _parse(allocation['expires_at'])
        self.assertEqual(datetime.timezone.utc, end.tzinfo)
        # Rounded up to the second, never shorter than the ttl.
        self.assertGreaterEqual(end, before + datetime.timedelta(seconds=300))
        self.assertLessEqual(end, after + datetime.timedelta(seconds=301))
        self.assertEqual(0, end.microsecond)
        status, shown = self.call('GET', '/v1/allocations/leased')
        self.assertEqual(allocation['expires_at'], shown['expires_at'])
        self.assertNotIn('ttl', shown)
        status, shown = self.call(
            'GET', '/v1/allocations/leased?fields=expires_at')
        self.assertEqual((200, allocation['expires_at']),
                         (status, shown['expires_at']))
        status, page = self.call('GET', '/v1/allocations')
        self.assertEqual(allocation['expires_at'],
                         page['allocations'][0]['expires_at'])

    def test_expires_at_and_no_lease(self):
        end = (self.db_now() + datetime.timedelta(hours=1)).replace(
            microsecond=0)
        # Any ISO 8601 form; the answer is UTC.
        local = end.astimezone(datetime.timezone(datetime.timedelta(
            hours=2)))
        allocation = self.allocate(expires_at=local.isoformat())
        self.assertEqual(end, _parse(allocation['expires_at']))
        allocation = self.allocate(
            expires_at=end.replace(tzinfo=None).isoformat() + 'Z')
        self.assertEqual(end, _parse(allocation['expires_at']))
        # No lease: null, Ironic's behaviour.
        allocation = self.allocate()
        self.assertIsNone(allocation['expires_at'])

    def test_hidden_and_refused_below_the_version(self):
        allocation = self.allocate(ttl=300, name='leased')
        for extension in (None, 'ironic-alloc 1.1'):
            status, shown = self.call('GET', '/v1/allocations/leased',
                                      extension=extension)
            self.assertEqual(200, status)
            self.assertNotIn('expires_at', shown)
            status, doc = self.call(
                'GET', '/v1/allocations/leased?fields=expires_at',
                extension=extension)
            self.assertIn('ironic-alloc 1.2', self.error(status, doc))
            rows = self.allocation_rows()
            for field, value in (('ttl', 60),
                                 ('expires_at', allocation['expires_at'])):
                status, doc = self.call(
                    'POST', '/v1/allocations',
                    {'resource_class': 'gold', field: value},
                    extension=extension)
                self.assertEqual(400, status)
                self.assertIn('"%s"' % field, self.error(status, doc))
                self.assertIn('ironic-alloc 1.2', self.error(status, doc))
                status, doc = self.call(
                    'PATCH', '/v1/allocations/leased',
                    [{'op': 'replace', 'path': '/' + field,
                      'value': value}], extension=extension)
                self.assertEqual(400, status)
                self.assertIn('ironic-alloc 1.2', self.error(status, doc))
            self.assertEqual(rows, self.allocation_rows())

    def test_refused_while_pinned_to_a_release_without_leases(self):
        allocation = self.allocate(ttl=300, name='leased')
        node = utils.make_available_node(self.context)
        self.config(pin_release_version='2026.2')
        rows = self.allocation_rows()
        for method, url, body in (
                ('POST', '/v1/allocations',
                 {'resource_class': 'gold', 'ttl': 60}),
                ('PATCH', '/v1/allocations/leased',
                 [{'op': 'replace', 'path': '/ttl', 'value': 60}]),
                ('POST', '/v1/reservations',
                 {'instance_uuid': uuidutils.generate_uuid(),
                  'node_uuid': [node.uuid]})):
            status, doc = self.call(method, url, body)
            self.assertEqual(400, status, doc)
            self.assertIn('pin_release_version is 2026.2',
                          self.error(status, doc))
        self.assertEqual(rows, self.allocation_rows())
        # Removing a lease, and an allocation without one, stay possible.
        status, doc = self.call('PATCH', '/v1/allocations/leased', [
            {'op': 'remove', 'path': '/expires_at'}])
        self.assertEqual((200, None), (status, doc['expires_at']))
        self.assertEqual(allocation['uuid'], doc['uuid'])

    def test_bad_leases_are_400_with_nothing_written(self):
        CONF.set_override('max_ttl', 3600, group='reservation')
        self.addCleanup(CONF.clear_override, 'max_ttl', group='reservation')
        utils.make_available_node(self.context)
        now = self.db_now()
        past = (now - datetime.timedelta(seconds=30)).isoformat()
        far = (now + datetime.timedelta(seconds=7200)).isoformat()
        cases = [
            ({'ttl': 0}, 'Invalid ttl 0'),
            ({'ttl': -5}, 'Invalid ttl -5'),
            ({'ttl': 3601}, 'from 1 to 3600 seconds'),
            ({'ttl': 'ten'}, 'Invalid ttl "ten"'),
            ({'ttl': True}, 'Invalid ttl true'),
            ({'ttl': 1.5}, 'Invalid ttl 1.5'),
            ({'ttl': 60, 'expires_at': far}, 'not both'),
            ({'expires_at': past}, 'not in the future'),
            ({'expires_at': far}, 'at most 3600 seconds from now'),
            ({'expires_at': 'tomorrow'}, 'Invalid expires_at "tomorrow"'),
            ({'expires_at': 12}, 'Invalid expires_at 12'),
            ({'expires_at': '0001-01-01T00:00:00+05:00'},
             'Invalid expires_at "0001-01-01T00:00:00+05:00"'),
            ({'expires_at': '2026-13-40T00:00:00'}, 'Invalid expires_at'),
            ({'expires_at': far, 'node': 'x'}, 'when backfilling'),
        ]
        for extra, message in cases:
            body = dict({'resource_class': 'gold'}, **extra)
            status, doc = self.call('POST', '/v1/allocations', body)
            self.assertEqual(400, status, (extra, doc))
            self.assertIn(message, self.error(status, doc), extra)
        self.assertEqual(0, self.allocation_rows())

    def test_patch_renews_and_clears(self):
        allocation = self.allocate(name='leased')
        url = '/v1/allocations/leased'
        before = self.db_now().replace(microsecond=0)
        status, patched = self.call('PATCH', url, [
            {'op': 'replace', 'path': '/ttl', 'value': 120}])
        self.assertEqual(200, status, patched)
        end = _parse(patched['expires_at'])
        self.assertGreaterEqual(end, before + datetime.timedelta(seconds=120))
        self.assertNotIn('ttl', patched)
        later = (self.db_now() + datetime.timedelta(hours=2)).replace(
            microsecond=0)
        status, patched = self.call('PATCH', url, [
            {'op': 'replace', 'path': '/expires_at',
             'value': later.isoformat()},
            {'op': 'add', 'path': '/extra/rack', 'value': 'r1'}])
        self.assertEqual(200, status, patched)
        self.assertEqual(later, _parse(patched['expires_at']))
        self.assertEqual({'rack': 'r1'}, patched['extra'])
        status, patched = self.call('PATCH', url, [
            {'op': 'remove', 'path': '/expires_at'}])
        self.assertEqual((200, None), (status, patched['expires_at']))
        for op, message in (
                ({'op': 'remove', 'path': '/ttl'}, 'write-only'),
                ({'op': 'replace', 'path': '/ttl', 'value': 0},
                 'Invalid ttl 0'),
                ({'op': 'replace', 'path': '/expires_at', 'value': None},
                 'A value is required'),
                ({'op': 'replace', 'path': '/expires_at',
                  'value': '2000-01-01T00:00:00'}, 'not in the future'),
                ({'op': 'replace', 'path': '/expires_at/x', 'value': 1},
                 'only /name, /extra, /expires_at, /ttl may be changed')):
            status, doc = self.call('PATCH', url, [op])
            self.assertEqual(400, status, op)
            self.assertIn(message, self.error(status, doc))
        status, shown = self.call('GET', url)
        self.assertIsNone(shown['expires_at'])
        self.assertEqual(allocation['uuid'], shown['uuid'])

    def test_deployed_node_takes_no_lease(self):
        allocation = self.allocate(name='deployed')
        node_id = dbapi.get_node_by_uuid(allocation['node_uuid']).id
        # Deployed or on its way in or out of a deployment: any state out
        # of states.LEASE_ALLOWED_STATES, in maintenance or not.
        for state in (states.DEPLOYING, states.DEPLOYWAIT, states.ACTIVE,
                      states.DELETING, states.CLEANING):
            for maintenance in (False, True):
                dbapi.update_node(node_id, {'provision_state': state,
                                            'maintenance': maintenance})
                status, doc = self.call('PATCH', '/v1/allocations/deployed',
                                        [{'op': 'replace', 'path': '/ttl',
                                          'value': 60}])
                self.assertEqual(409, status, (state, maintenance))
                self.assertEqual(
                    'Cannot set a lease on allocation %s: its node %s is in '
                    'provision state "%s", and the hold of a deployed node '
                    'has no lease (it ends at tear-down).'
                    % (allocation['uuid'], allocation['node_uuid'], state),
                    self.error(status, doc))
        self.assertIsNone(
            dbapi.get_allocation_by_uuid(allocation['uuid']).expires_at)
        # A failed deploy left the node free to lose its hold.
        dbapi.update_node(node_id, {'provision_state': states.DEPLOYFAIL})
        status, doc = self.call('PATCH', '/v1/allocations/deployed', [
            {'op': 'replace', 'path': '/ttl', 'value': 60}])
        self.assertEqual(200, status, doc)
        dbapi.update_node(node_id, {'provision_state': states.ACTIVE})
        status, patched = self.call('PATCH', '/v1/allocations/deployed', [
            {'op': 'remove', 'path': '/expires_at'}])
        self.assertEqual(200, status)

    def test_ended_lease_releases_as_delete(self):
        CONF.set_override('expiry_interval', 1, group='reservation')
        self.addCleanup(CONF.clear_override, 'expiry_interval',
                        group='reservation')
        allocation = self.allocate(ttl=1, name='short')
        node = allocation['node_uuid']
        deadline = time.monotonic() + 30
        while True:
            status, _doc = self.call('GET', '/v1/allocations/short')
            if status == 404:
                break
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.2)
        status, shown = self.call('GET', '/v1/nodes/%s' % node)
        self.assertEqual((None, None, 'available'),
                         (shown['allocation_uuid'], shown['instance_uuid'],
                          shown['provision_state']))


class TestDeployGuardOverHTTP(_LeaseTestCase):

    def provision(self, node, target, version='latest'):
        """A plain Ironic request (no extension version) at ``version``."""
        headers = {'X-OpenStack-Ironic-API-Version': version,
                   'Content-Type': 'application/json',
                   'Accept': 'application/json'}
        status, _headers, data = self.api.request(
            'PUT', '/v1/nodes/%s/states/provision' % node,
            json.dumps({'target': target}), headers)
        return status, (json.loads(data) if data else None)

    def test_deploy_of_a_reserved_node(self):
        node = utils.make_available_node(self.context, name='held')
        hold = test_leases.hold_node(
            self.context, node, states.RESERVATION_KIND,
            test_leases.lease(600))
        # Plain Ironic clients, at any version that deploys: 409 naming
        # the reservation.
        for target, version in (('active', '1.1'), ('deploy', '1.79')):
            status, doc = self.provision(node.uuid, target, version)
            self.assertEqual(409, status, doc)
            self.assertIn('reservation %s' % hold.uuid,
                          self.error(status, doc))
        status, doc = self.call('PATCH', '/v1/nodes/held', [
            {'op': 'add', 'path': '/instance_info/reservation_uuid',
             'value': uuidutils.generate_uuid()}])
        self.assertEqual(200, status, doc)
        status, doc = self.provision('held', 'active')
        self.assertEqual(409, status)
        status, doc = self.call('PATCH', '/v1/nodes/held', [
            {'op': 'replace', 'path': '/instance_info/reservation_uuid',
             'value': hold.uuid}])
        self.assertEqual(200, status, doc)
        status, doc = self.provision('held', 'active')
        self.assertEqual(202, status, doc)
        deadline = time.monotonic() + 30
        while True:
            status, shown = self.call('GET', '/v1/nodes/held')
            if shown['provision_state'] == 'active':
                break
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        self.assertEqual(hold.instance_uuid, shown['instance_uuid'])
        self.assertIsNone(dbapi.get_allocation_by_id(hold.id).expires_at)


class TestReservationLifeOverHTTP(_LeaseTestCase):
    """A reservation made by POST /v1/reservations, deployed, torn down;
    another one left to expire."""

    def wait_node(self, node, state, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            status, shown = self.call('GET', '/v1/nodes/%s' % node)
            if shown['provision_state'] == state and (
                    shown['reservation'] is None):
                return shown
            self.assertLess(time.monotonic(), deadline, shown)
            time.sleep(0.05)

    def test_reserve_deploy_tear_down(self):
        node = utils.make_available_node(self.context, name='r1')
        instance = uuidutils.generate_uuid()
        status, doc = self.call('POST', '/v1/reservations', {
            'instance_uuid': instance, 'node_uuid': [node.uuid],
            'ttl': 600})
        self.assertEqual(201, status, doc)
        reservation = doc['reservation']['uuid']
        status, doc = self.call('PUT', '/v1/nodes/r1/states/provision',
                                {'target': 'active'})
        self.assertEqual(409, status)
        self.assertIn('held by reservation %s' % reservation,
                      self.error(status, doc))
        status, doc = self.call('PATCH', '/v1/nodes/r1', [
            {'op': 'add', 'path': '/instance_info/reservation_uuid',
             'value': reservation}])
        self.assertEqual(200, status, doc)
        status, doc = self.call('PUT', '/v1/nodes/r1/states/provision',
                                {'target': 'active'})
        self.assertEqual(202, status, doc)
        shown = self.wait_node('r1', 'active')
        self.assertEqual(instance, shown['instance_uuid'])
        status, doc = self.call('GET', '/v1/reservations/%s' % reservation)
        self.assertEqual((200, None), (status,
                                       doc['reservation']['expires_at']))
        status, doc = self.call('PUT', '/v1/nodes/r1/states/provision',
                                {'target': 'deleted'})
        self.assertEqual(202, status, doc)
        shown = self.wait_node('r1', 'available')
        self.assertEqual((None, {}), (shown['instance_uuid'],
                                      shown['instance_info']))
        status, doc = self.call('GET', '/v1/reservations/%s' % reservation)
        self.assertEqual(404, status)

    def test_reservation_expires(self):
        CONF.set_override('expiry_interval', 1, group='reservation')
        self.addCleanup(CONF.clear_override, 'expiry_interval',
                        group='reservation')
        node = utils.make_available_node(self.context, name='r2')
        status, doc = self.call('POST', '/v1/reservations', {
            'instance_uuid': uuidutils.generate_uuid(),
            'node_uuid': [node.uuid], 'ttl': 1})
        self.assertEqual(201, status, doc)
        url = '/v1/reservations/%s' % doc['reservation']['uuid']
        deadline = time.monotonic() + 30
        while self.call('GET', url)[0] != 404:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.2)
        status, shown = self.call('GET', '/v1/nodes/r2')
        self.assertEqual((None, None), (shown['instance_uuid'],
                                        shown['allocation_uuid']))
        # Free again: a new reservation gets it.
        status, doc = self.call('POST', '/v1/reservations', {
            'instance_uuid': uuidutils.generate_uuid(),
            'node_uuid': [node.uuid]})
        self.assertEqual(201, status, doc)



class _Steps:
    """The order of the steps of concurrent operations, forced.

    Each operation is a sequence of named steps run by its own threads; a
    step begins at its point (``reach``), where the thread waits until the
    test lets that step go.  ``run`` lets one step go at a time, and the
    next only once that step is over: its operation reached its next
    point or ended.  No point is inside a database transaction, so a
    waiting thread holds no database lock a running step could need.
    """

    def __init__(self, operations):
        self.operations = operations
        self.operation_of = {step: name for name, steps in operations.items()
                             for step in steps}
        self.reached, self.released, self.ended = set(), set(), set()
        self.condition = threading.Condition()

    def reach(self, step):
        with self.condition:
            self.reached.add(step)
            self.condition.notify_all()
            if not self.condition.wait_for(lambda: step in self.released,
                                           timeout=STEP_TIMEOUT):
                raise AssertionError('step %s never let go' % step)

    def end(self, operation):
        with self.condition:
            self.ended.add(operation)
            self.condition.notify_all()

    def run(self, order):
        """Let the steps go in ``order``; a step whose operation ended
        before it (a refusal) is skipped."""
        for step in order:
            operation = self.operation_of[step]
            steps = self.operations[operation]
            following = steps[steps.index(step) + 1:]
            with self.condition:
                self._wait(lambda: step in self.reached
                           or operation in self.ended, step)
                if operation in self.ended:
                    continue
                self.released.add(step)
                self.condition.notify_all()
                self._wait(lambda: operation in self.ended
                           or (following and following[0] in self.reached),
                           step)

    def _wait(self, predicate, step):
        if not self.condition.wait_for(predicate, timeout=STEP_TIMEOUT):
            raise AssertionError('step %s did not end' % step)


# Seconds a step may take before the test fails as stuck (never a
# measured time: every step normally ends at once).
STEP_TIMEOUT = 60

# A re-arm of the lease (the API's request: R1 up to the write, R2 the
# write), the expiry (E1 the search for ended leases, E2 the release) and
# a deploy (D1 up to its first write, with the node lock; D2 the start of
# the deploy's write, then its end: the node active, unlocked).
OPERATIONS = {'R': ('R1', 'R2'), 'E': ('E1', 'E2'), 'D': ('D1', 'D2')}


def _interleavings(operations):
    """Every order of the steps that keeps each operation's own order."""
    if not any(operations.values()):
        yield ()
        return
    for name, steps in operations.items():
        if steps:
            rest = dict(operations, **{name: steps[1:]})
            for tail in _interleavings(rest):
                yield (steps[0],) + tail


class TestLeaseAgainstDeployRaces(_LeaseTestCase):
    """A re-arm of a hold's lease and the expiry against a deploy of its
    node, forced in every interleaving of their steps, for a reservation
    and for an allocation, against the real API, conductor and database.

    The invariant: a node whose deploy started while it was held keeps
    its hold, its instance and (a reservation) its reservation_uuid, and
    the hold keeps no lease, even once the lease would have ended with
    the node in maintenance.  A re-arm after the deploy's start is a 409.
    """

    def setUp(self):
        super().setUp()
        # NOTE: only the steps of a scenario release holds.
        self.api.conductor.service.periodic_tasks.stop()
        self.expiry = self.api.conductor.service.lease_expiry
        self.steps = None
        self.ids = {}
        for method, step, of in (('update_reservation_expiry', 'R2', 'hold'),
                                 ('update_allocation', 'R2', 'hold'),
                                 ('release_expired_hold', 'E2', 'hold'),
                                 ('begin_deploy', 'D2', 'node')):
            self._point(method, step, of)

    def _point(self, method, step, of):
        """Pause the database call ``method`` at ``step`` while a
        scenario runs, when called for its hold or node (``of``)."""
        original = getattr(sqla_api.Connection, method)

        def paused(connection, first, *args, **kwargs):
            steps = self.steps
            if steps is not None and first == self.ids.get(of):
                steps.reach(step)
            return original(connection, first, *args, **kwargs)

        self.useFixture(fixtures.MonkeyPatch(
            'ironic_alloc.db.sqlalchemy.api.Connection.%s' % method, paused))

    def _hold(self, kind):
        """A hold of ``kind`` on a new node, its lease ended (the expiry
        would release it), ready to deploy."""
        node = utils.make_available_node(self.context)
        if kind == states.RESERVATION_KIND:
            status, doc = self.call('POST', '/v1/reservations', {
                'instance_uuid': uuidutils.generate_uuid(),
                'node_uuid': [node.uuid], 'ttl': 600})
            hold = doc['reservation']
            dbapi.update_node(node.id, {'instance_info': {
                'reservation_uuid': hold['uuid']}})
        else:
            status, hold = self.call('POST', '/v1/allocations', {
                'resource_class': 'gold', 'candidate_nodes': [node.uuid],
                'ttl': 600})
        self.assertEqual(201, status, hold)
        row = (dbapi.get_reservation_by_uuid(hold['uuid'])
               if kind == states.RESERVATION_KIND
               else dbapi.get_allocation_by_uuid(hold['uuid']))
        dbapi.update_allocation(row.id, {'expires_at': test_leases.lease(
            -5)})
        return row, node

    @staticmethod
    def _expected(order):
        """(whether the expiry releases the hold, the re-arm's status)."""
        at = {step: index for index, step in enumerate(order)}
        # NOTE: only before the deploy locks the node and before a re-arm
        # renews the lease.
        released = at['E2'] < at['D1'] and at['E2'] < at['R2']
        if released:
            return True, 404
        return False, 409 if at['D2'] < at['R2'] else 200

    def _scenario(self, kind, steps, order=None):
        """Run the three operations on a new hold of ``kind`` under
        ``steps``, in ``order`` (None: as they come)."""
        hold, node = self._hold(kind)
        url = '/v1/%ss/%s' % (kind, hold.uuid)
        self.ids = {'hold': hold.id, 'node': node.id}
        self.steps = steps
        outcome = {}

        def rearm():
            steps.reach('R1')
            conn = http.client.HTTPConnection(
                self.api.server.host, self.api.server.port, timeout=60)
            try:
                headers = {'X-OpenStack-Ironic-API-Version': 'latest',
                           'OpenStack-API-Version': EXTENSION,
                           'Content-Type': 'application/json'}
                conn.request('PATCH', url, json.dumps([
                    {'op': 'replace', 'path': '/ttl', 'value': 600}]),
                    headers)
                response = conn.getresponse()
                outcome['R'] = (response.status, response.read())
            finally:
                conn.close()

        def expire():
            steps.reach('E1')
            outcome['E'] = self.expiry.release_expired()

        def deploy():
            steps.reach('D1')
            self.api.conductor.rpcapi.do_provisioning_action(
                self.context, node.id, 'deploy', self.api.conductor.host)
            deadline = time.monotonic() + STEP_TIMEOUT
            while True:
                shown = dbapi.get_node_by_id(node.id)
                if shown.provision_state == states.ACTIVE and (
                        shown.reservation is None):
                    break
                if time.monotonic() > deadline:
                    raise AssertionError('deploy of %s stuck' % node.uuid)
                time.sleep(0.01)
            outcome['D'] = shown

        def run(name, target):
            try:
                target()
            except BaseException as exc:
                outcome[name + ' failed'] = exc
            finally:
                steps.end(name)

        threads = [threading.Thread(target=run, args=(name, target))
                   for name, target in (('R', rearm), ('E', expire),
                                        ('D', deploy))]
        for thread in threads:
            thread.start()
        try:
            if order is not None:
                steps.run(order)
        finally:
            for thread in threads:
                thread.join(STEP_TIMEOUT)
            self.steps = None
        failures = {k: v for k, v in outcome.items() if 'failed' in k}
        self.assertEqual({}, failures, order)
        return hold, node, outcome

    def _check(self, kind, order):
        hold, node, outcome = self._scenario(kind, _Steps(OPERATIONS),
                                             order)
        released, status = self._expected(order)
        self.assertEqual(status, outcome['R'][0], (order, outcome['R']))
        self.assertEqual(1 if released else 0, outcome['E'], order)
        self._check_outcome(kind, hold, node, outcome, order)
        self.assertEqual(None if released else hold.id,
                         outcome['D'].allocation_id, order)

    def _check_outcome(self, kind, hold, node, outcome, label):
        """The invariant, now and once the lease would have ended."""
        status, body = outcome['R']
        self.assertIn(status, (200, 404, 409), (label, body))
        if status == 409:
            self.assertIn(b'the hold of a deployed node has no lease', body)
        deployed = outcome['D']
        # Time passes: every lease still set ends (moved into the past
        # rather than waited for), with the node in maintenance, and the
        # expiry runs again.
        left = test_leases.holds_and_nodes()[0].get(hold.uuid)
        if left is not None and left.expires_at is not None:
            test_leases.write_lease_unchecked(
                hold.id, left.expires_at - datetime.timedelta(days=1))
        dbapi.update_node(node.id, {'maintenance': True})
        self.expiry.release_expired()
        shown = dbapi.get_node_by_id(node.id)
        self.assertEqual(states.ACTIVE, shown.provision_state, label)
        if deployed.allocation_id is None:
            # The lease ended before the deploy started: a free node was
            # deployed.
            self.assertIsNone(shown.allocation_id, label)
            return
        # The deploy started while the node was held: it keeps its hold,
        # the hold's instance and the reservation's uuid, and no lease.
        self.assertEqual((hold.id, deployed.instance_uuid),
                         (shown.allocation_id, shown.instance_uuid), label)
        self.assertIsNotNone(shown.instance_uuid, label)
        if kind == states.RESERVATION_KIND:
            self.assertEqual(hold.uuid,
                             shown.instance_info.get('reservation_uuid'),
                             label)
        self.assertIsNone(dbapi.get_allocation_by_id(hold.id).expires_at,
                          label)

    def _check_every_interleaving(self, kind):
        orders = list(_interleavings(OPERATIONS))
        self.assertEqual(90, len(orders))
        for order in orders:
            self._check(kind, order)
        self.assertEqual([], test_leases.disagreements())

    def test_reservation(self):
        self._check_every_interleaving(states.RESERVATION_KIND)

    def test_allocation(self):
        self._check_every_interleaving(states.ALLOCATION_KIND)

    def test_unforced(self):
        # NOTE: the same operations let loose together, no order forced:
        # the database's locks decide (PostgreSQL and MariaDB in CI run
        # the transactions really in parallel).
        for index in range(12):
            kind = (states.RESERVATION_KIND,
                    states.ALLOCATION_KIND)[index % 2]
            hold, node, outcome = self._scenario(kind, _AtOnce(3))
            self._check_outcome(kind, hold, node, outcome, index)
        self.assertEqual([], test_leases.disagreements())


class _AtOnce:
    """The points of _Steps, where the operations only start together."""

    def __init__(self, count):
        self._start = threading.Barrier(count)

    def reach(self, step):
        if step.endswith('1'):
            self._start.wait(STEP_TIMEOUT)

    def end(self, operation):
        pass
