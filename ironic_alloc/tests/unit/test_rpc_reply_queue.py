"""The bounded wait for the RPC reply queue (common/rpc.py)."""

import threading

import oslo_messaging as messaging

from ironic_alloc.common import exception
from ironic_alloc.common import rpc
from ironic_alloc.tests import base


class _Driver:
    """Stands in for oslo.messaging's AMQP driver, whose reply-queue set-up
    blocks while the broker is unreachable: a real broker is outside a
    unit test (the multi-process tier stops a real RabbitMQ;
    test_compat.py checks the driver's own set-up function)."""

    def __init__(self):
        self.broker_up = threading.Event()
        self.fail_next = False
        self.attempts = 0
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()

    def create_reply_queue(self):
        with self._lock:
            self.attempts += 1
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.fail_next:
                self.fail_next = False
                raise ConnectionRefusedError('refused')
            self.broker_up.wait(30)
            return 'reply_q'
        finally:
            with self._lock:
                self.in_flight -= 1


class ReplyQueueTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.driver = _Driver()
        self.setup = rpc._ReplyQueueSetup(self.driver.create_reply_queue)
        self.addCleanup(self.driver.broker_up.set)

    def _wait(self, timeout=0.2):
        try:
            self.setup.wait(timeout)
        except exception.MessageBrokerUnreachable as exc:
            self.assertIn('queue for RPC replies', str(exc))
            return 503
        return 'ready'

    def test_one_set_up_attempt_however_many_callers(self):
        results = []
        callers = [threading.Thread(target=lambda: results.append(
            self._wait())) for _ in range(10)]
        for t in callers:
            t.start()
        for t in callers:
            t.join(10)
        self.assertEqual([503] * 10, results)
        self.assertEqual(1, self.driver.most_in_flight)
        self.assertEqual(1, self.driver.attempts)
        self.assertEqual(1, len([t for t in threading.enumerate()
                                 if t.name == 'rpc-reply-queue']))
        # The attempt has now run longer than a caller's bound: the next
        # caller does not wait at all.
        exc = self.assertRaises(exception.MessageBrokerUnreachable,
                                self.setup.wait, 0.2)
        self.assertIn('seconds of trying', str(exc))
        self.assertEqual(1, self.driver.attempts)
        self.driver.broker_up.set()
        self.assertTrue(self.setup.ready.wait(10))
        self.assertEqual('ready', self._wait())
        self.assertEqual(1, self.driver.attempts)

    def test_failed_attempt_is_retried_by_the_next_caller(self):
        self.driver.fail_next = True
        self.driver.broker_up.set()
        self.setup.start()
        self.setup._thread.join(10)
        self.assertFalse(self.setup.ready.is_set())
        self.assertEqual('ready', self._wait(timeout=10))
        self.assertEqual(2, self.driver.attempts)

    def test_transport_without_reply_queue_is_ready(self):
        setup = rpc._ReplyQueueSetup(None)
        self.assertTrue(setup.ready.is_set())


class ReplyQueueCreatorTestCase(base.TestCase):
    """Which transports get the bounded set-up (common/rpc.py)."""

    def _transport(self, url):
        self.config(transport_url=url)
        transport = messaging.get_rpc_transport(rpc.CONF)
        self.addCleanup(transport.cleanup)
        return transport

    def test_in_process_transport_needs_no_set_up(self):
        self.assertIsNone(rpc._reply_queue_creator(
            self._transport('fake://')))

    def test_broker_transport_gets_the_set_up(self):
        # NOTE: a rabbit transport connects at its first message only.
        create = rpc._reply_queue_creator(
            self._transport('rabbit://user:secret@127.0.0.1:1/'))
        self.assertTrue(callable(create))

    def test_library_changed_is_logged_not_hidden(self):
        self.config(transport_url='rabbit://user:secret@127.0.0.1:1/')
        # NOTE: a transport without the parts compat.py uses, as an
        # oslo.messaging that changed shape would give.
        with self.assertLogs('ironic_alloc.common.rpc',
                             level='ERROR') as logs:
            self.assertIsNone(rpc._reply_queue_creator(object()))
        self.assertIn('oslo.messaging changed', logs.output[0])
