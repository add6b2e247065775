"""Versioned notifications sent by the real application (cheroot, a real
conductor, the test database): every event of an allocation's life with
its payload, the level filter, the queue's drop path and a broker that
cannot be reached, the start-up checks of the options.

These tests read what oslo.messaging's ``log`` notification driver
writes (one JSON message per notification, on the logger
``oslo.messaging.notification.<event type>``): a real driver of the
library, in-process, where the broker is not the point.  The
multi-process tier consumes from a real RabbitMQ.
"""

import json
import logging
import os
import subprocess
import sys
import threading
import time

import fixtures
import sqlalchemy as sa

from ironic_alloc.common import metrics
from ironic_alloc.common import notifications
from ironic_alloc.common import states
from ironic_alloc.conf import CONF
from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.db.sqlalchemy import models
from ironic_alloc import objects
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import test_allocations
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import fixtures as ia_fixtures
from ironic_alloc.tests.functional import test_api_allocation_groups
from ironic_alloc.tests.functional import test_api_leases
from ironic_alloc.tests.functional import test_metrics

LOG_DRIVER_LOGGER = 'oslo.messaging.notification'
DROPPED = 'ironic_alloc_notifications_dropped_total'


class _Collector(logging.Handler):
    """The messages the log driver writes; ``gate``, when set, holds the
    sending thread in the handler until it is opened."""

    def __init__(self, gate=None):
        super().__init__(level=logging.DEBUG)
        self.messages = []
        self.gate = gate
        self.entered = threading.Event()

    def emit(self, record):
        self.entered.set()
        if self.gate is not None:
            self.gate.wait()
        self.messages.append(json.loads(record.getMessage()))

    def events(self):
        return [m['event_type'] for m in self.messages]

    def one(self, event_type):
        found = [m for m in self.messages if m['event_type'] == event_type]
        if len(found) != 1:
            raise AssertionError('%d messages %s in %s' % (
                len(found), event_type, self.events()))
        return found[0]


def _includes(events, awaited):
    """Whether ``events`` hold every one of ``awaited`` (with repeats)."""
    left = list(events)
    for event in awaited:
        if event not in left:
            return False
        left.remove(event)
    return True


class _Notifying:
    """Notifications on the log driver, collected (a mixin of a served
    test case)."""

    LEVEL = 'info'
    GATE = False

    def setUp(self):
        self.gate = threading.Event() if self.GATE else None
        self.collector = _Collector(self.gate)
        logger = logging.getLogger(LOG_DRIVER_LOGGER)
        logger.addHandler(self.collector)
        old_level = logger.level
        logger.setLevel(logging.DEBUG)
        self.addCleanup(logger.setLevel, old_level)
        self.addCleanup(logger.removeHandler, self.collector)
        if self.gate is not None:
            self.addCleanup(self.gate.set)
        super().setUp()
        self.config(notification_level=self.LEVEL)
        self.config(driver=['log'], group='oslo_messaging_notifications')
        # NOTE: the sender of an earlier test (or of the conductor's start)
        # is flushed; this test's notifications start from here.
        self.addCleanup(notifications.stop)
        notifications.stop()
        self.collector.messages.clear()

    def flush(self, *awaited):
        """Every notification queued so far delivered (or dropped).

        :param awaited: event types a conductor's thread sends after the
            database write the test waited for, so possibly not queued yet
            when the test goes on: they are awaited first (within a bound
            that only keeps a missing event from hanging the test).
        """
        self.wait_until(lambda: _includes(self.collector.events(), awaited))
        notifications.stop()

    def wait_until(self, predicate, timeout=20):
        deadline = time.monotonic() + timeout
        while not predicate() and time.monotonic() < deadline:
            time.sleep(0.05)


class _NotifyingTestCase(_Notifying, test_metrics._ServedTestCase):
    """The served application with notifications on the log driver."""

    def allocate(self, resource_class='gold'):
        response, body = self.request('POST', '/v1/allocations',
                                      {'resource_class': resource_class})
        self.assertEqual(201, response.status, body)
        uuid = json.loads(body)['uuid']
        allocation = self.get_allocation(uuid)
        utils.wait_for_allocations(self.context, [allocation.id])
        return self.get_allocation(uuid)

    def get_allocation(self, ident):
        return objects.Allocation.get(self.context, ident)


class TestAllocationLifecycle(_NotifyingTestCase):

    def test_every_event_once_with_its_payload(self):
        node = utils.make_available_node(self.context, resource_class='gold')
        allocation = self.allocate()
        self.assertEqual(states.ALLOCATION_ACTIVE, allocation.state)
        response, body = self.request(
            'PATCH', '/v1/allocations/%s' % allocation.uuid,
            [{'op': 'add', 'path': '/extra/billing', 'value': 'b-1'}])
        self.assertEqual(200, response.status, body)
        response, body = self.request(
            'DELETE', '/v1/allocations/%s' % allocation.uuid)
        self.assertEqual(204, response.status, body)
        self.flush('ironic_alloc.allocation.process.success')

        self.assertEqual(sorted([
            'baremetal.allocation.create.start',
            'baremetal.allocation.create.end',
            'ironic_alloc.allocation.process.success',
            'baremetal.allocation.update.start',
            'baremetal.allocation.update.end',
            'baremetal.allocation.delete.start',
            'baremetal.allocation.delete.end']),
            sorted(self.collector.events()))
        for message in self.collector.messages:
            self.assertEqual('INFO', message['priority'])
        api = 'ironic-api.test-host'
        conductor = 'ironic-conductor.test-host'

        start = self.collector.one('baremetal.allocation.create.start')
        self.assertEqual(api, start['publisher_id'])
        payload = start['payload']
        self.assertEqual('AllocationCRUDPayload',
                         payload['ironic_object.name'])
        self.assertEqual('1.1', payload['ironic_object.version'])
        self.assertEqual('ironic', payload['ironic_object.namespace'])
        data = payload['ironic_object.data']
        self.assertEqual(
            {'uuid', 'name', 'node_uuid', 'state', 'last_error', 'owner',
             'resource_class', 'traits', 'candidate_nodes', 'extra',
             'created_at', 'updated_at'}, set(data))
        self.assertEqual(allocation.uuid, data['uuid'])
        self.assertEqual('gold', data['resource_class'])
        self.assertEqual(states.ALLOCATING, data['state'])
        self.assertIsNone(data['node_uuid'])

        end = self.collector.one('baremetal.allocation.create.end')
        self.assertEqual(api, end['publisher_id'])
        self.assertEqual(allocation.uuid,
                         end['payload']['ironic_object.data']['uuid'])
        self.assertIsNotNone(
            end['payload']['ironic_object.data']['created_at'])

        active = self.collector.one('ironic_alloc.allocation.process.success')
        self.assertEqual(conductor, active['publisher_id'])
        self.assertEqual('AllocationHoldPayload',
                         active['payload']['ironic_object.name'])
        data = active['payload']['ironic_object.data']
        self.assertEqual(states.ALLOCATION_ACTIVE, data['state'])
        self.assertEqual(node.uuid, data['node_uuid'])
        self.assertEqual(states.ALLOCATION_KIND, data['kind'])

        update = self.collector.one('baremetal.allocation.update.end')
        data = update['payload']['ironic_object.data']
        self.assertEqual({'billing': 'b-1'}, data['extra'])
        self.assertEqual(node.uuid, data['node_uuid'])

        delete = self.collector.one('baremetal.allocation.delete.end')
        self.assertEqual(api, delete['publisher_id'])
        data = delete['payload']['ironic_object.data']
        self.assertEqual(allocation.uuid, data['uuid'])
        self.assertEqual(node.uuid, data['node_uuid'])

    def test_failed_change_sends_error(self):
        for name in ('first', 'second'):
            response, body = self.request(
                'POST', '/v1/allocations',
                {'resource_class': 'none-here', 'name': name})
            self.assertEqual(201, response.status, body)
            utils.wait_for_allocations(
                self.context, [self.get_allocation(name).id])
        self.flush('ironic_alloc.allocation.process.error',
                   'ironic_alloc.allocation.process.error')
        self.collector.messages.clear()
        response, body = self.request(
            'PATCH', '/v1/allocations/second',
            [{'op': 'replace', 'path': '/name', 'value': 'first'}])
        self.assertEqual(409, response.status, body)
        self.flush()
        self.assertEqual(['baremetal.allocation.update.start',
                          'baremetal.allocation.update.error'],
                         self.collector.events())
        error = self.collector.one('baremetal.allocation.update.error')
        self.assertEqual('ERROR', error['priority'])
        self.assertEqual('first',
                         error['payload']['ironic_object.data']['name'])

    def test_conductor_failure_is_an_error_event(self):
        allocation = self.allocate('no-such-class')
        self.assertEqual(states.ALLOCATION_ERROR, allocation.state)
        self.flush('ironic_alloc.allocation.process.error')
        failed = self.collector.one('ironic_alloc.allocation.process.error')
        self.assertEqual('ERROR', failed['priority'])
        data = failed['payload']['ironic_object.data']
        self.assertEqual(states.ALLOCATION_ERROR, data['state'])
        self.assertIn('No candidate node', data['last_error'])


class TestLevelFilter(_NotifyingTestCase):

    LEVEL = 'error'

    def test_below_the_level_nothing_is_sent(self):
        utils.make_available_node(self.context, resource_class='gold')
        self.assertEqual(states.ALLOCATION_ACTIVE,
                         self.allocate('gold').state)
        self.assertEqual(states.ALLOCATION_ERROR,
                         self.allocate('no-such-class').state)
        self.flush('ironic_alloc.allocation.process.error')
        self.assertEqual(['ironic_alloc.allocation.process.error'],
                         self.collector.events())


class TestOffByDefault(test_metrics._ServedTestCase):

    def test_nothing_sent_and_no_sender(self):
        self.assertIsNone(CONF.notification_level)
        collector = _Collector()
        logger = logging.getLogger(LOG_DRIVER_LOGGER)
        logger.addHandler(collector)
        self.addCleanup(logger.removeHandler, collector)
        self.config(driver=['log'], group='oslo_messaging_notifications')
        notifications.stop()
        utils.make_available_node(self.context, resource_class='gold')
        response, body = self.request('POST', '/v1/allocations',
                                      {'resource_class': 'gold'})
        self.assertEqual(201, response.status, body)
        self.assertFalse(notifications.enabled('critical'))
        self.assertFalse(notifications.running())
        self.assertEqual([], collector.messages)


class TestQueueFull(_NotifyingTestCase):

    GATE = True

    def test_full_queue_drops_and_requests_answer(self):
        # NOTE: settled rows written without the API: no conductor works
        # on them, so every notification of this test is one of the
        # PATCHes', queued before their answer.
        conductor_id = self.conductor.service.registration.id
        rows = [utils.make_allocation(self.context, conductor_id,
                                      state=states.ALLOCATION_ERROR)
                for _ in range(3)]
        self.config(notification_queue_size=1)
        notifications.stop()
        before = test_metrics.parse(metrics.exposition().decode())
        for i, row in enumerate(rows):
            response, body = self.request(
                'PATCH', '/v1/allocations/%s' % row.uuid,
                [{'op': 'add', 'path': '/name', 'value': 'n-%d' % i}])
            self.assertEqual(200, response.status, body)
        # The sending thread is held in the driver by the first message
        # it took; the queue holds one more at most; the rest were dropped.
        self.assertTrue(self.collector.entered.wait(60))
        self.gate.set()
        self.flush()
        after = test_metrics.parse(metrics.exposition().decode())
        dropped = (test_metrics.value(after, DROPPED, reason='queue_full')
                   - test_metrics.value(before, DROPPED, reason='queue_full'))
        delivered = len(self.collector.messages)
        self.assertIn(delivered, (1, 2))
        self.assertEqual(6, delivered + dropped)


class TestBrokerUnreachable(_NotifyingTestCase):

    def test_requests_answer_and_failures_are_counted(self):
        # A local port nothing listens on: the broker is down.
        port = test_metrics._free_port()
        self.config(driver=['messagingv2'],
                    transport_url='rabbit://guest:guest@127.0.0.1:%d/'
                                  % port,
                    group='oslo_messaging_notifications')
        self.config(notification_send_retries=0)
        notifications.stop()
        before = test_metrics.parse(metrics.exposition().decode())
        response, body = self.request('POST', '/v1/allocations',
                                      {'resource_class': 'none-here'})
        self.assertEqual(201, response.status, body)
        uuid = json.loads(body)['uuid']
        utils.wait_for_allocations(self.context,
                                   [self.get_allocation(uuid).id])
        response, body = self.request('GET', '/v1/allocations/%s' % uuid)
        self.assertEqual(200, response.status, body)
        self.assertEqual(states.ALLOCATION_ERROR, json.loads(body)['state'])

        def failed_sends():
            after = test_metrics.parse(metrics.exposition().decode())
            return (test_metrics.value(after, DROPPED, reason='send_failed')
                    - test_metrics.value(before, DROPPED,
                                         reason='send_failed'))

        # NOTE: the conductor's process.error may be queued after the
        # error state the test waited for.
        self.wait_until(lambda: failed_sends() >= 3)
        self.flush()
        failed = failed_sends()
        # create.start, create.end and the conductor's process.error.
        self.assertEqual(3, failed)


class TestStartUpChecks(base.TestCase):
    """Malformed options stop a service with one line (the real command,
    in a process of its own)."""

    def _start(self, conf_text):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'bad.conf')
        with open(path, 'w') as f:
            f.write(conf_text)
        result = subprocess.run(
            [sys.executable, '-m', 'ironic_alloc.cmd.conductor',
             '--config-file', path], capture_output=True, text=True,
            timeout=120)
        self.assertNotEqual(0, result.returncode)
        return result.stderr.strip().splitlines()[-1]

    def test_unknown_level(self):
        last = self._start('[DEFAULT]\nnotification_level = loud\n')
        self.assertIn('notification_level', last)
        self.assertIn('loud', last)

    def test_malformed_transport(self):
        last = self._start(
            '[DEFAULT]\nnotification_level = info\n'
            '[oslo_messaging_notifications]\ndriver = messagingv2\n'
            'transport_url = nonsense\n')
        self.assertIn('Invalid transport for notifications', last)


class TestNodeEvents(_NotifyingTestCase):

    def _node(self, uuid):
        response, body = self.request('GET', '/v1/nodes/%s' % uuid)
        self.assertEqual(200, response.status, body)
        return json.loads(body)

    def _wait_settled(self, uuid, timeout=60):
        """Until the conductor finished its work on the node (the bound
        only keeps a hang from stalling the run)."""
        deadline = time.monotonic() + timeout
        while True:
            node = self._node(uuid)
            if (node['target_provision_state'] is None
                    and node['target_power_state'] is None):
                return node
            if time.monotonic() > deadline:
                self.fail('node %s still busy: %s' % (uuid, node))
            time.sleep(0.05)

    def test_node_life(self):
        response, body = self.request(
            'POST', '/v1/nodes',
            {'driver': 'fake-hardware', 'name': 'node-n1',
             'driver_info': {'ipmi_password': 'hidden', 'ipmi_user': 'u'}})
        self.assertEqual(201, response.status, body)
        uuid = json.loads(body)['uuid']
        for method, path, body_, status in (
                ('PATCH', '', [{'op': 'add', 'path': '/extra/rack',
                                'value': 'r1'}], 200),
                ('PUT', '/maintenance', {'reason': 'disk'}, 202),
                ('DELETE', '/maintenance', None, 202),
                ('PUT', '/states/provision', {'target': 'manage'}, 202)):
            response, answer = self.request(
                method, '/v1/nodes/%s%s' % (uuid, path), body_)
            self.assertEqual(status, response.status, answer)
        self._wait_settled(uuid)
        response, answer = self.request(
            'PUT', '/v1/nodes/%s/states/power' % uuid,
            {'target': 'power on'})
        self.assertEqual(202, response.status, answer)
        self._wait_settled(uuid)
        response, answer = self.request('DELETE', '/v1/nodes/%s' % uuid)
        self.assertEqual(204, response.status, answer)
        self.flush('baremetal.node.provision_set.end',
                   'baremetal.node.power_set.end')

        events = self.collector.events()
        self.assertEqual(sorted([
            'baremetal.node.create.start', 'baremetal.node.create.end',
            'baremetal.node.update.start', 'baremetal.node.update.end',
            'baremetal.node.maintenance_set.start',
            'baremetal.node.maintenance_set.end',
            'baremetal.node.maintenance_set.start',
            'baremetal.node.maintenance_set.end',
            'baremetal.node.provision_set.start',
            'baremetal.node.provision_set.end',
            'baremetal.node.power_set.start',
            'baremetal.node.power_set.end',
            'baremetal.node.delete.start', 'baremetal.node.delete.end']),
            sorted(events))

        created = self.collector.one('baremetal.node.create.end')
        self.assertEqual('ironic-api.test-host', created['publisher_id'])
        payload = created['payload']
        self.assertEqual('NodeCRUDPayload', payload['ironic_object.name'])
        self.assertEqual('1.15', payload['ironic_object.version'])
        data = payload['ironic_object.data']
        self.assertEqual(uuid, data['uuid'])
        self.assertEqual('node-n1', data['name'])
        # NOTE: the log driver masks passwords too; the payload's own
        # masking is checked in tests/unit/objects/test_notification.py.
        self.assertNotEqual('hidden', data['driver_info']['ipmi_password'])
        self.assertEqual('u', data['driver_info']['ipmi_user'])
        self.assertEqual('fake-hardware', data['driver'])
        self.assertEqual([], data['traits'])
        self.assertIn('power_interface', data)
        self.assertNotIn('firmware_interface', data)
        self.assertIs(False, data['disable_power_off'])

        update = self.collector.one('baremetal.node.update.end')
        self.assertEqual({'rack': 'r1'},
                         update['payload']['ironic_object.data']['extra'])

        maintenance = [m for m in self.collector.messages
                       if m['event_type'] ==
                       'baremetal.node.maintenance_set.end']
        self.assertEqual([True, False], [
            m['payload']['ironic_object.data']['maintenance']
            for m in maintenance])
        self.assertEqual('NodePayload',
                         maintenance[0]['payload']['ironic_object.name'])

        started = self.collector.one('baremetal.node.provision_set.start')
        ended = self.collector.one('baremetal.node.provision_set.end')
        for message in (started, ended):
            self.assertEqual('ironic-conductor.test-host',
                             message['publisher_id'])
            self.assertEqual('NodeSetProvisionStatePayload',
                             message['payload']['ironic_object.name'])
        data = started['payload']['ironic_object.data']
        self.assertEqual('manage', data['event'])
        self.assertEqual(states.ENROLL, data['previous_provision_state'])
        self.assertEqual('verifying', data['provision_state'])
        data = ended['payload']['ironic_object.data']
        self.assertEqual('verifying', data['previous_provision_state'])
        self.assertEqual('manageable', data['provision_state'])

        power = self.collector.one('baremetal.node.power_set.end')
        data = power['payload']['ironic_object.data']
        self.assertEqual('power on', data['to_power'])
        self.assertEqual('power on', data['power_state'])
        self.assertEqual('NodeSetPowerStatePayload',
                         power['payload']['ironic_object.name'])


class TestHoldEvents(_Notifying, test_api_leases._LeaseTestCase):
    """ironic_alloc's events of reservations and of lease expiry."""

    @staticmethod
    def _row_exists(uuid):
        table = models.Allocation.__table__
        with sqla_api.get_engine().connect() as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(
                table).where(table.c.uuid == uuid)).scalar() > 0

    def test_reservations_and_lease_expiry(self):
        self.config(expiry_interval=1, group='reservation')
        node = utils.make_available_node(self.context, name='r1')
        instance = '6d1c5e0e-2f4c-4c56-9d55-3cde0f2b0e71'
        status, doc = self.call('POST', '/v1/reservations', {
            'instance_uuid': instance, 'node_uuid': [node.uuid], 'ttl': 1})
        self.assertEqual(201, status, doc)
        expiring = doc['reservation']['uuid']
        # NOTE: until the conductor's expiry deleted the row (the API
        # hides an expired reservation before that).
        deadline = time.monotonic() + 30
        while self._row_exists(expiring):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.2)
        status, doc = self.call('POST', '/v1/reservations', {
            'instance_uuid': instance, 'node_uuid': [node.uuid]})
        self.assertEqual(201, status, doc)
        deleted = doc['reservation']['uuid']
        status, doc = self.call('DELETE', '/v1/reservations/%s' % deleted)
        self.assertEqual(204, status, doc)
        self.flush('ironic_alloc.reservation.lease_expire.success')

        self.assertEqual(sorted([
            'ironic_alloc.reservation.create.success',
            'ironic_alloc.reservation.lease_expire.success',
            'ironic_alloc.reservation.create.success',
            'ironic_alloc.reservation.delete.success']),
            sorted(self.collector.events()))
        expired = self.collector.one(
            'ironic_alloc.reservation.lease_expire.success')
        self.assertEqual('ironic-conductor.test-host',
                         expired['publisher_id'])
        data = expired['payload']['ironic_object.data']
        self.assertEqual(expiring, data['uuid'])
        self.assertEqual('reservation', data['kind'])
        self.assertEqual(instance, data['instance_uuid'])
        self.assertEqual(node.uuid, data['node_uuid'])
        self.assertIsNotNone(data['expires_at'])
        gone = self.collector.one('ironic_alloc.reservation.delete.success')
        self.assertEqual('ironic-api.test-host', gone['publisher_id'])
        self.assertEqual(deleted, gone['payload']['ironic_object.data']['uuid'])
        self.assertEqual(
            'AllocationHoldPayload', gone['payload']['ironic_object.name'])


class TestTakeOverEvent(_Notifying, base.DbTestCase):

    def test_take_over(self):
        self.useFixture(ia_fixtures.ConductorFixture(
            host='taker', heartbeat_interval=1, heartbeat_timeout=3,
            check_allocations_interval=1))
        utils.make_available_node(self.context, resource_class='gold')
        dead = objects.Conductor.register(self.context, 'dead-host', '')
        allocation = utils.make_allocation(self.context, dead.id)
        test_allocations._age_heartbeat(dead.id, 3600)
        result = utils.wait_for_allocations(self.context, [allocation.id],
                                            timeout=20)[allocation.id]
        self.assertEqual(states.ALLOCATION_ACTIVE, result.state)
        self.flush('ironic_alloc.allocation.takeover.success',
                   'ironic_alloc.allocation.process.success')
        self.assertEqual(sorted(['ironic_alloc.allocation.takeover.success',
                                 'ironic_alloc.allocation.process.success']),
                         sorted(self.collector.events()))
        taken = self.collector.one('ironic_alloc.allocation.takeover.success')
        self.assertEqual('ironic-conductor.test-host', taken['publisher_id'])
        data = taken['payload']['ironic_object.data']
        self.assertEqual(allocation.uuid, data['uuid'])
        self.assertEqual(states.ALLOCATING, data['state'])


class TestGroupEvents(_Notifying, test_api_allocation_groups._GroupTestCase):
    """ironic_alloc's events of allocation groups: creation and deletion
    (API), the conductor's outcome, the expiry of the group's lease."""

    def test_group_life(self):
        self.config(expiry_interval=1, group='reservation')
        for _ in range(2):
            utils.make_available_node(self.context)
        leased = [test_api_allocation_groups._uuid() for _ in range(2)]
        status, doc = self.create({u: {'resource_class': 'gold'}
                                   for u in leased}, name='short', ttl=1)
        self.assertEqual(201, status, doc)
        expiring = doc['uuid']
        deadline = time.monotonic() + 30
        while self.call('GET', '/v1/allocation_groups/short')[0] != 404:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.2)
        # Three members for two nodes: the conductor fails the group.
        failing = self.created({test_api_allocation_groups._uuid():
                                {'resource_class': 'gold'}
                                for _ in range(3)})
        self.assertEqual('error', failing['state'])
        status, _doc = self.call('DELETE', '/v1/allocation_groups/%s'
                                 % failing['uuid'])
        self.assertEqual(204, status)
        self.flush('ironic_alloc.allocation_group.process.success',
                   'ironic_alloc.allocation_group.lease_expire.success',
                   'ironic_alloc.allocation_group.process.error')

        prefix = 'ironic_alloc.allocation_group.'
        self.assertEqual(sorted(prefix + e for e in (
            'create.success', 'process.success', 'lease_expire.success',
            'create.success', 'process.error', 'delete.success')),
            sorted(self.collector.events()))
        created = [m for m in self.collector.messages
                   if m['event_type'] == prefix + 'create.success']
        self.assertEqual('ironic-api.test-host', created[0]['publisher_id'])
        data = created[0]['payload']['ironic_object.data']
        self.assertEqual('AllocationGroupPayload',
                         created[0]['payload']['ironic_object.name'])
        self.assertEqual((expiring, 'short', 'allocating', sorted(leased)),
                         (data['uuid'], data['name'], data['state'],
                          data['member_uuids']))
        self.assertIsNotNone(data['expires_at'])
        done = self.collector.one(prefix + 'process.success')
        self.assertEqual('ironic-conductor.test-host', done['publisher_id'])
        self.assertEqual(('INFO', 'active'), (
            done['priority'],
            done['payload']['ironic_object.data']['state']))
        expired = self.collector.one(prefix + 'lease_expire.success')
        self.assertEqual(
            (expiring, sorted(leased)),
            (expired['payload']['ironic_object.data']['uuid'],
             expired['payload']['ironic_object.data']['member_uuids']))
        failed = self.collector.one(prefix + 'process.error')
        data = failed['payload']['ironic_object.data']
        self.assertEqual(('ERROR', failing['uuid'], 'error'),
                         (failed['priority'], data['uuid'], data['state']))
        self.assertIn('could not be given a node', data['last_error'])
        gone = self.collector.one(prefix + 'delete.success')
        self.assertEqual(failing['uuid'],
                         gone['payload']['ironic_object.data']['uuid'])
