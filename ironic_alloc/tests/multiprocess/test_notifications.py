"""Versioned notifications consumed from a real RabbitMQ: one
``ironic-alloc-api`` and one ``ironic-alloc-conductor`` sending them
(``messagingv2`` driver), this test consuming them with oslo.messaging's
notification listener on a topic of its own.

Every event of an allocation's life (create start and end from the API,
the conductor's outcome, delete start and end) must arrive exactly once
with the right payload; with the broker stopped, the API keeps answering
as it does without notifications.
"""

import subprocess
import threading
import urllib.parse

from oslo_config import cfg
import oslo_messaging
import requests

from ironic_alloc.tests.multiprocess import fixtures as mp
from ironic_alloc.tests.multiprocess import test_fault_tolerance

EXCHANGE = 'ironic_alloc'
SENTINEL = 'test.sentinel'


class _Endpoint:
    """Every notification received, by priority method."""

    def __init__(self):
        self.lock = threading.Lock()
        self.messages = []
        self.sentinels = set()
        self.all_in = threading.Event()

    def _record(self, priority, publisher_id, event_type, payload):
        with self.lock:
            if event_type == SENTINEL:
                self.sentinels.add(priority)
                if self.sentinels == {'info', 'error'}:
                    self.all_in.set()
                return
            self.messages.append((priority, publisher_id, event_type,
                                  payload))

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self._record('info', publisher_id, event_type, payload)

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        self._record('error', publisher_id, event_type, payload)


class TestNotificationsFromRabbitMQ(
        test_fault_tolerance.MultiProcessTestCase):

    def _delete_queues(self, topic):
        vhost = urllib.parse.urlparse(mp.transport_url()).path.lstrip('/')
        for priority in ('info', 'error'):
            try:
                mp.Broker._ctl('delete_queue', '-p', vhost or '/',
                               '%s.%s' % (topic, priority))
            except subprocess.CalledProcessError as exc:
                mp.log('queue %s.%s not deleted: %s', topic, priority,
                       exc.stderr)

    def _listen(self, topic):
        # NOTE: the topic's queues are this test's: gone after it.
        self.addCleanup(self._delete_queues, topic)
        conf = cfg.ConfigOpts()
        conf([])
        transport = oslo_messaging.get_notification_transport(
            conf, url=mp.transport_url())
        self.addCleanup(transport.cleanup)
        endpoint = _Endpoint()
        listener = oslo_messaging.get_notification_listener(
            transport, [oslo_messaging.Target(topic=topic,
                                              exchange=EXCHANGE)],
            [endpoint], executor='threading')
        # NOTE: started before any service sends: the listener declares
        # the topic's queues, and RabbitMQ keeps only what reaches a queue.
        listener.start()
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)
        notifier = oslo_messaging.Notifier(
            transport, driver='messagingv2', topics=[topic],
            publisher_id='test.sentinel')
        return endpoint, notifier

    def _events_of(self, endpoint, uuid):
        with endpoint.lock:
            return [m for m in endpoint.messages
                    if m[3]['ironic_object.data'].get('uuid') == uuid]

    def test_lifecycle_once_and_broker_down(self):
        topic = 'notifications_%s' % self.cluster.suffix.replace('-', '_')
        endpoint, notifier = self._listen(topic)
        sections = {
            'DEFAULT': {'notification_level': 'info',
                        'versioned_notifications_topics': topic,
                        'control_exchange': EXCHANGE},
            'oslo_messaging_notifications': {'driver': 'messagingv2'}}
        self.cluster.rebuild_schema()
        self.cluster.load_nodes(2)
        conductor = self.cluster.start_conductor('c1', options=sections)
        url = self.cluster.start_api(sections=sections)
        api_host = 'mp-%s' % self.cluster.suffix

        # One allocation's whole life.
        resp = requests.post(url + '/v1/allocations',
                             json={'resource_class': mp.RESOURCE_CLASS},
                             headers=mp.api_headers(),
                             timeout=mp.REQUEST_TIMEOUT)
        self.assertEqual(201, resp.status_code, resp.text)
        uuid = resp.json()['uuid']

        def state():
            return requests.get(url + '/v1/allocations/' + uuid,
                                headers=mp.api_headers(),
                                timeout=mp.REQUEST_TIMEOUT).json()['state']
        self.wait_for('allocation active', lambda: state() == 'active',
                      mp.START_TIMEOUT)
        node_uuid = requests.get(url + '/v1/allocations/' + uuid,
                                 headers=mp.api_headers(),
                                 timeout=mp.REQUEST_TIMEOUT).json()['node_uuid']
        resp = requests.delete(url + '/v1/allocations/' + uuid,
                               headers=mp.api_headers(),
                               timeout=mp.REQUEST_TIMEOUT)
        self.assertEqual(204, resp.status_code, resp.text)

        # The broker stopped: the API answers as without notifications
        # (reads 200, a creation 201: its row is written before the cast),
        # its notifications are dropped.
        broker = mp.Broker()
        # NOTE: marked first: the clean-up starts it again for the tests
        # that follow, even after a stop that failed half-way.
        broker.stopped = True
        self.addCleanup(test_fault_tolerance.TestServerRestarts.
                        _ensure_started, broker)
        broker.stop()
        resp = requests.get(url + '/v1/allocations',
                            headers=mp.api_headers(),
                            timeout=mp.REQUEST_TIMEOUT)
        self.assertEqual(200, resp.status_code, resp.text)
        resp = requests.post(url + '/v1/allocations',
                             json={'resource_class': mp.RESOURCE_CLASS},
                             headers=mp.api_headers(),
                             timeout=mp.REQUEST_TIMEOUT)
        self.assertEqual(201, resp.status_code, resp.text)
        during = resp.json()['uuid']
        resp = requests.get(url + '/v1/allocations/' + during,
                            headers=mp.api_headers(),
                            timeout=mp.REQUEST_TIMEOUT)
        self.assertEqual(200, resp.status_code, resp.text)
        broker.start()
        broker.stopped = False

        # The services stop, sending what they still hold; then a sentinel
        # of ours on each priority's queue arrives after everything they
        # sent before it.
        for proc, _url in self.cluster.apis:
            proc.stop()
        conductor.stop()
        notifier.info({}, SENTINEL, {})
        notifier.error({}, SENTINEL, {})
        self.assertTrue(endpoint.all_in.wait(mp.START_TIMEOUT),
                        'the sentinels did not arrive')

        events = self._events_of(endpoint, uuid)
        names = sorted(m[2] for m in events)
        self.assertEqual(sorted([
            'baremetal.allocation.create.start',
            'baremetal.allocation.create.end',
            'ironic_alloc.allocation.process.success',
            'baremetal.allocation.delete.start',
            'baremetal.allocation.delete.end']), names)
        by_name = {m[2]: m for m in events}
        for name in ('baremetal.allocation.create.start',
                     'baremetal.allocation.create.end',
                     'baremetal.allocation.delete.start',
                     'baremetal.allocation.delete.end'):
            priority, publisher, _name, payload = by_name[name]
            self.assertEqual('info', priority)
            self.assertEqual('ironic-api.%s' % api_host, publisher)
            self.assertEqual('AllocationCRUDPayload',
                             payload['ironic_object.name'])
            self.assertEqual('1.1', payload['ironic_object.version'])
            self.assertEqual(mp.RESOURCE_CLASS,
                             payload['ironic_object.data']['resource_class'])
        self.assertEqual(
            'allocating',
            by_name['baremetal.allocation.create.end'][3][
                'ironic_object.data']['state'])
        self.assertEqual(
            node_uuid,
            by_name['baremetal.allocation.delete.end'][3][
                'ironic_object.data']['node_uuid'])
        priority, publisher, _name, payload = by_name[
            'ironic_alloc.allocation.process.success']
        self.assertEqual('ironic-conductor.%s' % conductor.hostname,
                         publisher)
        data = payload['ironic_object.data']
        self.assertEqual('active', data['state'])
        self.assertEqual(node_uuid, data['node_uuid'])
        mp.log('notifications received: %d in all, %d of the allocation '
               'made during the outage', len(endpoint.messages),
               len(self._events_of(endpoint, during)))
