"""The private parts of libraries that ironic_alloc/common/compat.py uses.

Each test fails when an upgrade of the library removes or reshapes the
part an entry relies on, and checks that the entry then raises
LibraryChanged (its caller logs it) rather than carrying on without it.
"""

import inspect
import json
import os
import time
from unittest import mock

import fixtures
from oslo_db.sqlalchemy import engines
import oslo_messaging as messaging
from oslo_messaging._drivers import amqpdriver
import pecan.compat
from pecan import util as pecan_util
import sqlalchemy as sa
import webtest

from ironic_alloc.api import app as api_app
from ironic_alloc.common import compat
from ironic_alloc.conf import CONF
from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.tests import base

BROKER_URL = 'rabbit://user:secret@127.0.0.1:1/'


class TestRpcReplyQueueCreator(base.TestCase):

    def _transport(self, url):
        # NOTE: a rabbit transport connects at its first message only.
        transport = messaging.get_rpc_transport(CONF, url=url)
        self.addCleanup(transport.cleanup)
        return transport

    def test_amqp_driver_creates_the_reply_queue_calls_use(self):
        transport = self._transport(BROKER_URL)
        create = compat.rpc_reply_queue_creator(transport)
        self.assertEqual(transport._driver._get_reply_q, create)
        self.assertEqual([], list(inspect.signature(create).parameters))
        # NOTE: the broker's connection is outside a unit test; the
        # stand-in blocks briefly in consume() as a real one would.
        conn = mock.MagicMock()
        conn.__enter__.return_value = conn
        conn.consume.side_effect = lambda timeout=None: time.sleep(0.05)
        with mock.patch.object(transport._driver, '_get_connection',
                               autospec=True,
                               return_value=conn) as get_connection:
            queue = create()
            self.assertEqual(queue, create())
            self.assertEqual(queue,
                             conn.declare_direct_consumer.call_args[0][0])
            # A call made afterwards asks for its replies on that queue,
            # without setting up another.
            client = messaging.get_rpc_client(
                transport, messaging.Target(topic='compat-test'))
            self.assertRaises(messaging.MessagingTimeout,
                              client.prepare(timeout=0.1).call, {}, 'ping')
        sent = conn.topic_send.call_args.kwargs['msg']
        self.assertEqual(queue,
                         json.loads(sent['oslo.message'])['_reply_q'])
        self.assertEqual(1, conn.declare_direct_consumer.call_count)
        self.assertEqual(['listen', 'send'],
                         [c[0][0] for c in get_connection.call_args_list])

    def test_amqp_driver_sends_calls_through_it(self):
        self.assertIn('_get_reply_q',
                      amqpdriver.AMQPDriverBase._send.__code__.co_names)

    def test_driver_without_it_is_refused(self):
        transport = self._transport('fake://')
        exc = self.assertRaises(compat.LibraryChanged,
                                compat.rpc_reply_queue_creator, transport)
        self.assertIn('oslo.messaging changed', str(exc))
        self.assertIn('FakeDriver', str(exc))

    def test_method_with_arguments_is_refused(self):
        transport = self._transport(BROKER_URL)
        with mock.patch.object(type(transport._driver), '_get_reply_q',
                               lambda self, name: name):
            self.assertRaises(compat.LibraryChanged,
                              compat.rpc_reply_queue_creator, transport)


class Controller:

    def post(self, allocation, extra=None):
        pass

    def delete(self, ident):
        pass


class TestCachePecanSignatures(base.TestCase):

    def setUp(self):
        super().setUp()
        # Every test starts from Pecan's own module globals and leaves
        # them as they were.
        self.useFixture(fixtures.MockPatchObject(
            pecan_util, '_getargspec', pecan.compat.getargspec))

    def test_pecan_inspects_through_the_function_replaced(self):
        self.assertEqual(
            ['func'],
            list(inspect.signature(pecan_util._getargspec).parameters))
        method = Controller().post
        with mock.patch.object(pecan_util, '_getargspec',
                               wraps=pecan_util._getargspec) as spy:
            pecan_util.getargspec(method)
        spy.assert_called_once_with(method)

    def test_each_function_inspected_once(self):
        compat.cache_pecan_signatures()
        with mock.patch.object(inspect, 'getfullargspec',
                               wraps=inspect.getfullargspec) as spy:
            first = pecan_util.getargspec(Controller().post)
            # another instance: the same function underneath
            again = pecan_util.getargspec(Controller().post)
            other = pecan_util.getargspec(Controller().delete)
        self.assertEqual(['self', 'allocation', 'extra'], first.args)
        self.assertEqual((None,), first.defaults)
        self.assertIs(first, again)
        self.assertEqual(['self', 'ident'], other.args)
        self.assertEqual(2, spy.call_count)

    def test_installed_once(self):
        compat.cache_pecan_signatures()
        installed = pecan_util._getargspec
        compat.cache_pecan_signatures()
        self.assertIs(installed, pecan_util._getargspec)

    def test_missing_function_is_refused(self):
        del pecan_util._getargspec
        exc = self.assertRaises(compat.LibraryChanged,
                                compat.cache_pecan_signatures)
        self.assertIn('Pecan changed', str(exc))
        self.assertIn('pecan.util._getargspec', str(exc))

    def test_function_no_longer_called_is_refused(self):
        original = pecan_util._getargspec
        # A Pecan that inspects signatures some other way.
        with mock.patch.object(pecan_util, 'getargspec',
                               pecan.compat.getargspec):
            exc = self.assertRaises(compat.LibraryChanged,
                                    compat.cache_pecan_signatures)
        self.assertIn('pecan.util.getargspec() calling', str(exc))
        self.assertIs(original, pecan_util._getargspec)

    def test_api_logs_the_change_and_serves(self):
        self.config(auth_strategy='noauth')
        # NOTE: no conductor and no RPC transport here; GET / needs none.
        self.useFixture(fixtures.MockPatch(
            'ironic_alloc.api.hooks.get_rpcapi', autospec=True))
        with mock.patch.object(pecan_util, 'getargspec',
                               pecan.compat.getargspec):
            with self.assertLogs('ironic_alloc.api.app',
                                 level='ERROR') as logs:
                app = webtest.TestApp(api_app.setup_app())
        self.assertIn('Pecan changed', logs.output[0])
        self.assertEqual('OpenStack Ironic API', app.get('/').json['name'])


class TestReplacePool(base.TestCase):

    def _engine(self):
        """An SQLite file engine as oslo.db's enginefacade builds it (with
        a NullPool), with a listener of its own on it."""
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'compat.sqlite')
        engine = engines.create_engine('sqlite:///%s' % path)
        self.addCleanup(engine.dispose)
        self.assertIsInstance(engine.pool, sa.pool.NullPool)
        connects = []
        sa.event.listen(engine, 'connect',
                        lambda dbapi_conn, record: connects.append(
                            dbapi_conn))
        return engine, connects

    def _creator(self, engine):
        cargs, cparams = engine.dialect.create_connect_args(engine.url)
        cparams['check_same_thread'] = False
        return lambda: engine.dialect.connect(*cargs, **cparams)

    def test_pools_accept_the_listeners_of_another(self):
        self.assertIn('_dispatch', inspect.signature(sa.pool.Pool).parameters)

    def test_new_pool_keeps_every_listener(self):
        engine, connects = self._engine()
        compat.replace_pool(engine, sa.pool.QueuePool, self._creator(engine),
                            pool_size=2)
        self.assertIsInstance(engine.pool, sa.pool.QueuePool)
        for _ in range(5):
            with engine.begin() as conn:
                self.assertEqual(1, conn.exec_driver_sql('SELECT 1').scalar())
        # One connection, reused, and set up by the listener registered on
        # the engine before the swap and by oslo.db's own (which hands
        # transaction control to SQLAlchemy).
        self.assertEqual(1, len(connects))
        self.assertIsNone(connects[0].isolation_level)

    def test_pools_without_the_argument_are_refused(self):
        engine, _connects = self._engine()
        old_pool = engine.pool

        def changed_init(self, creator, recycle=-1, echo=None,
                         logging_name=None, reset_on_return=True,
                         events=None, dialect=None, pre_ping=False):
            pass

        with mock.patch.object(sa.pool.Pool, '__init__', changed_init):
            exc = self.assertRaises(compat.LibraryChanged,
                                    compat.replace_pool, engine,
                                    sa.pool.QueuePool, self._creator(engine))
        self.assertIn('SQLAlchemy changed', str(exc))
        self.assertIs(old_pool, engine.pool)

    def test_listeners_not_copied_are_refused(self):
        engine, _connects = self._engine()
        old_pool = engine.pool

        class ForgetfulPool(sa.pool.QueuePool):
            # A pool that accepts the argument and ignores it.
            def __init__(self, creator, _dispatch=None, **kwargs):
                super().__init__(creator, **kwargs)

        exc = self.assertRaises(compat.LibraryChanged, compat.replace_pool,
                                engine, ForgetfulPool, self._creator(engine))
        self.assertIn("copying the 'connect' listeners", str(exc))
        self.assertIs(old_pool, engine.pool)

    def test_database_layer_logs_the_change_and_keeps_its_pool(self):
        self.config(sqlite_pool_size=4, group='database')
        engine, _connects = self._engine()

        def changed_init(self, creator, **kwargs):
            pass

        with mock.patch.object(sa.pool.Pool, '__init__', changed_init):
            with self.assertLogs('ironic_alloc.db.sqlalchemy.api',
                                 level='ERROR') as logs:
                sqla_api._pool_sqlite_connections(engine)
        self.assertIn('SQLAlchemy changed', logs.output[0])
        self.assertIsInstance(engine.pool, sa.pool.NullPool)


class TestNotifierFailures(base.TestCase):
    """oslo.messaging logs a notification it could not send instead of
    raising; NotifierFailures relies on where and how it logs."""

    def _notifier(self, driver, url=None, retry=0):
        self.config(driver=[driver], group='oslo_messaging_notifications')
        if url:
            self.config(transport_url=url,
                        group='oslo_messaging_notifications')
        transport = messaging.get_notification_transport(CONF)
        self.addCleanup(transport.cleanup)
        return messaging.Notifier(transport, topics=['compat-test'],
                                  retry=retry, publisher_id='test.host')

    def _failures(self):
        failures = compat.NotifierFailures()
        self.addCleanup(failures.close)
        return failures

    def test_both_loggers_are_found(self):
        self.assertEqual({'oslo_messaging.notify.messaging',
                          'oslo_messaging.notify.notifier'},
                         set(compat.notifier_failure_loggers()))

    def test_unreachable_broker_is_a_failure_kept_out_of_the_log(self):
        # NOTE: a port nothing listens on; no retry, so the refusal is the
        # answer.
        notifier = self._notifier('messagingv2', BROKER_URL)
        logged = self.useFixture(fixtures.FakeLogger(
            name='oslo_messaging.notify.messaging'))
        failures = self._failures()
        with failures.watch() as failed:
            notifier.info({}, 'compat.test', {'secret': 'payload'})
        self.assertEqual(1, len(failed))
        self.assertNotIn('payload', logged.output)

    def test_delivered_is_no_failure(self):
        notifier = self._notifier('log')
        failures = self._failures()
        with failures.watch() as failed:
            notifier.info({}, 'compat.test', {'a': 1})
        self.assertEqual([], failed)

    def test_other_threads_failures_stay_in_the_log(self):
        notifier = self._notifier('messagingv2', BROKER_URL)
        logged = self.useFixture(fixtures.FakeLogger(
            name='oslo_messaging.notify.messaging'))
        self._failures()
        notifier.info({}, 'compat.test', {'a': 1})
        self.assertIn('Could not send notification', logged.output)

    def test_logger_gone_is_refused(self):
        from oslo_messaging.notify import notifier as om_notifier
        self.useFixture(fixtures.MockPatchObject(om_notifier, '_LOG', None))
        self.assertRaises(compat.LibraryChanged,
                          compat.notifier_failure_loggers)

    def test_message_changed_is_refused(self):
        from oslo_messaging.notify import messaging as om_messaging

        def notify(self, ctxt, message, priority, retry):
            raise RuntimeError('a new shape')

        self.useFixture(fixtures.MockPatchObject(
            om_messaging.MessagingDriver, 'notify', notify))
        self.assertRaises(compat.LibraryChanged,
                          compat.notifier_failure_loggers)
