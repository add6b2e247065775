"""Prometheus metrics: each moves as it should, scraped over HTTP from
the real application (cheroot, a real conductor, the test database) and
from the conductor's own exporter; the policy of GET /metrics; no server
error when the database is down at scrape time."""

import http.client
import json
import os
import socket
import threading

import fixtures

from oslo_db import exception as db_exc
from prometheus_client import parser
import webtest

from ironic_alloc.api import app as api_app
from ironic_alloc.api import hooks
from ironic_alloc.common import metrics
from ironic_alloc.common import rpc
from ironic_alloc.common import states
from ironic_alloc.common import wsgi_service
from ironic_alloc.conductor import workers
from ironic_alloc.conf import CONF
from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc import objects
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import test_allocations
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import fixtures as ia_fixtures
from ironic_alloc.tests.functional import test_healthcheck
from ironic_alloc.tests.functional import test_policy_matrix

HEADERS = {'Content-Type': 'application/json',
           'X-OpenStack-Ironic-API-Version': '1.79'}


def parse(text):
    """{(sample name, frozenset of label items): value}."""
    samples = {}
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = (
                sample.value)
    return samples


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class _ServedTestCase(base.DbTestCase):
    """The application served by cheroot, a real conductor."""

    def setUp(self):
        super().setUp()
        self.conductor = self.useFixture(
            ia_fixtures.ConductorFixture(host='metrics-conductor'))
        hooks.reset_rpcapi()
        self.addCleanup(hooks.reset_rpcapi)
        self.server = wsgi_service.WSGIService(api_app.setup_app)
        self.server.start()
        self.addCleanup(self.server.stop)

    def request(self, method, path, body=None):
        conn = http.client.HTTPConnection(self.server.host, self.server.port,
                                          timeout=30)
        self.addCleanup(conn.close)
        conn.request(method, path,
                     body=json.dumps(body) if body is not None else None,
                     headers=HEADERS)
        response = conn.getresponse()
        return response, response.read()

    def scrape(self):
        response, body = self.request('GET', '/metrics')
        self.assertEqual(200, response.status, body)
        self.assertTrue(response.getheader('Content-Type').startswith(
            'text/plain'))
        return parse(body.decode())


class TestApiMetrics(_ServedTestCase):

    def _allocate(self, resource_class):
        response, body = self.request('POST', '/v1/allocations',
                                      {'resource_class': resource_class})
        self.assertEqual(201, response.status, body)
        uuid = json.loads(body)['uuid']
        allocation = objects.Allocation.get_by_uuid(self.context, uuid)
        utils.wait_for_allocations(self.context, [allocation.id])
        return objects.Allocation.get_by_uuid(self.context, uuid)

    def test_allocation_made(self):
        utils.make_available_node(self.context, resource_class='gold')
        before = self.scrape()
        allocation = self._allocate('gold')
        self.assertEqual(states.ALLOCATION_ACTIVE, allocation.state)
        after = self.scrape()

        created = 'ironic_alloc_api_requests_total'
        labels = {'method': 'POST', 'route': 'v1/allocations',
                  'status': '201'}
        self.assertEqual(value(before, created, **labels) + 1,
                         value(after, created, **labels))
        # The scrape itself is counted, under its own route class.
        self.assertGreater(
            value(after, created, method='GET', route='metrics',
                  status='200'),
            value(before, created, method='GET', route='metrics',
                  status='200'))
        self.assertEqual(
            value(before, 'ironic_alloc_allocation_active_seconds_count') + 1,
            value(after, 'ironic_alloc_allocation_active_seconds_count'))
        self.assertEqual(1, value(after, 'ironic_alloc_allocations',
                                  state='active', kind='allocation'))
        self.assertEqual(0, value(after, 'ironic_alloc_allocations',
                                  state='allocating', kind='allocation'))
        self.assertEqual(1, value(after, 'ironic_alloc_allocation_count_up'))
        self.assertIn(('ironic_alloc_conductor_workers_size',
                       frozenset({'conductor': 'metrics-conductor'}.items())),
                      after)

    def test_allocation_failed(self):
        before = self.scrape()
        allocation = self._allocate('no-such-class')
        self.assertEqual(states.ALLOCATION_ERROR, allocation.state)
        after = self.scrape()
        name = 'ironic_alloc_allocation_failures_total'
        self.assertEqual(value(before, name, reason='no_candidate') + 1,
                         value(after, name, reason='no_candidate'))
        self.assertEqual(value(before, name, reason='backend_failed'),
                         value(after, name, reason='backend_failed'))
        self.assertEqual(1, value(after, 'ironic_alloc_allocations',
                                  state='error', kind='allocation'))

    def test_route_classes_are_bounded(self):
        before = self.scrape()
        self.request('GET', '/v1/nodes/%s' % ('x' * 30))
        self.request('GET', '/something/else')
        after = self.scrape()
        name = 'ironic_alloc_api_requests_total'
        self.assertEqual(
            value(before, name, method='GET', route='v1/nodes',
                  status='404') + 1,
            value(after, name, method='GET', route='v1/nodes',
                  status='404'))
        self.assertEqual(
            value(before, name, method='GET', route='other',
                  status='404') + 1,
            value(after, name, method='GET', route='other', status='404'))
        self.assertFalse([key for key in after if 'x' * 30 in str(key)])

    def test_redrive_counted(self):
        # An allocating row of this conductor that no RPC announced: the
        # re-drive starts it.
        utils.make_available_node(self.context, resource_class='gold')
        conductor_id = self.conductor.service.registration.id
        allocation = utils.make_allocation(self.context, conductor_id)
        before = self.scrape()
        self.conductor.service.takeover.redrive()
        utils.wait_for_allocations(self.context, [allocation.id])
        after = self.scrape()
        self.assertEqual(
            value(before, 'ironic_alloc_allocation_redrives_total') + 1,
            value(after, 'ironic_alloc_allocation_redrives_total'))

    def test_only_get(self):
        response, body = self.request('POST', '/metrics', {})
        self.assertEqual(405, response.status)
        self.assertIn('error_message', json.loads(body))


class TestTakeOverCounted(base.DbTestCase):

    def test_take_over(self):
        self.useFixture(ia_fixtures.ConductorFixture(
            host='taker', heartbeat_interval=1, heartbeat_timeout=3,
            check_allocations_interval=1))
        utils.make_available_node(self.context, resource_class='gold')
        dead = objects.Conductor.register(self.context, 'dead-host', '')
        allocation = utils.make_allocation(self.context, dead.id)
        before = parse(metrics.exposition().decode())
        test_allocations._age_heartbeat(dead.id, 3600)
        result = utils.wait_for_allocations(self.context, [allocation.id],
                                            timeout=20)[allocation.id]
        self.assertEqual(states.ALLOCATION_ACTIVE, result.state)
        after = parse(metrics.exposition().decode())
        name = 'ironic_alloc_allocation_takeovers_total'
        self.assertEqual(value(before, name) + 1, value(after, name))


class TestRpcFailures(base.DbTestCase):

    def test_timeout_counted(self):
        self.config(transport_url='fake://')
        self.config(rpc_call_timeout=1, group='api')
        rpc.init()
        hooks.reset_rpcapi()
        self.addCleanup(hooks.reset_rpcapi)
        # NOTE: alive as far as the database knows; nothing serves its
        # RPC topic, so the call of a deletion times out.
        objects.Conductor.register(self.context, 'ghost-host', '')
        app = webtest.TestApp(api_app.setup_app())
        resp = app.post_json('/v1/allocations', {'resource_class': 'gold'},
                             headers=HEADERS)
        before = parse(app.get('/metrics').text)
        resp = app.delete('/v1/allocations/%s' % resp.json['uuid'],
                          headers=HEADERS, expect_errors=True)
        self.assertEqual(503, resp.status_int)
        after = parse(app.get('/metrics').text)
        name = 'ironic_alloc_rpc_failures_total'
        labels = {'method': 'destroy_allocation', 'reason': 'timeout'}
        self.assertEqual(value(before, name, **labels) + 1,
                         value(after, name, **labels))
        self.assertEqual(
            value(before, 'ironic_alloc_api_requests_total',
                  method='DELETE', route='v1/allocations', status='503') + 1,
            value(after, 'ironic_alloc_api_requests_total',
                  method='DELETE', route='v1/allocations', status='503'))


class TestWorkerPoolUsage(base.DbTestCase):

    def test_in_use(self):
        self.config(workers_pool_size=2, group='conductor')
        pool = workers.WorkerPool()
        self.addCleanup(pool.shutdown, False)
        started = threading.Event()
        release = threading.Event()

        def work():
            started.set()
            release.wait(30)

        self.assertEqual((0, 0, 2), pool.usage())
        future = pool.submit(work)
        self.assertTrue(started.wait(30))
        self.assertEqual((1, 0, 2), pool.usage())
        release.set()
        future.result(30)
        self.assertEqual((0, 0, 2), pool.usage())


class TestDatabaseRetries(base.DbTestCase):

    def test_retry_counted(self):
        attempts = []

        @sqla_api.retry_on_conflict
        def writer():
            attempts.append(1)
            if len(attempts) == 1:
                raise db_exc.DBDeadlock()
            return 'done'

        before = parse(metrics.exposition().decode())
        self.assertEqual('done', writer())
        after = parse(metrics.exposition().decode())
        name = 'ironic_alloc_db_retries_total'
        self.assertEqual(value(before, name, reason='deadlock') + 1,
                         value(after, name, reason='deadlock'))


class TestDatabaseDown(test_healthcheck._AppTestCase):

    def test_scrape_without_database(self):
        app = self._app()
        self._break_database()
        resp = app.get('/metrics')
        self.assertEqual(200, resp.status_int)
        samples = parse(resp.text)
        self.assertEqual(0, value(samples,
                                  'ironic_alloc_allocation_count_up'))
        self.assertNotIn(('ironic_alloc_allocations',
                          frozenset({'state': 'active',
                                     'kind': 'allocation'}.items())),
                         samples)


class TestExpositionFails(test_healthcheck._AppTestCase):

    def test_no_server_error(self):
        # A multiprocess directory that does not exist: prometheus-client
        # refuses to read it, and the scrape gets a clean 503.
        missing = os.path.join(self.useFixture(fixtures.TempDir()).path,
                               'gone')
        self.useFixture(fixtures.EnvironmentVariable(
            metrics.MULTIPROCESS_ENV, missing))
        resp = self._app().get('/metrics', expect_errors=True)
        self.assertEqual(503, resp.status_int)
        fault = json.loads(resp.json['error_message'])
        self.assertEqual('The metrics could not be collected.',
                         fault['faultstring'])
        self.assertIsNone(fault['debuginfo'])
        self.assertNotIn('gone', resp.text)


class TestMetricsPolicy(test_policy_matrix.PolicyAppTestCase):

    def test_personas(self):
        for persona, status in (('system_reader', 200),
                                ('system_admin', 200),
                                ('owner_member', 403),
                                ('owner_admin', 403),
                                (None, 401)):
            resp = self.request(persona, 'GET', '/metrics')
            self.assertEqual(status, resp.status_int, persona)
            if status == 403:
                self.assertIn('baremetal:metrics:get',
                              json.loads(resp.json['error_message'])[
                                  'faultstring'])


class TestConductorExporter(base.DbTestCase):

    def test_served_on_port(self):
        port = _free_port()
        self.config(port=port, host='127.0.0.1', group='metrics')
        fixture = self.useFixture(
            ia_fixtures.ConductorFixture(host='exporter-conductor'))
        conn = http.client.HTTPConnection('127.0.0.1', port, timeout=10)
        self.addCleanup(conn.close)
        conn.request('GET', '/metrics')
        response = conn.getresponse()
        self.assertEqual(200, response.status)
        samples = parse(response.read().decode())
        self.assertEqual(
            CONF.conductor.workers_pool_size,
            value(samples, 'ironic_alloc_conductor_workers_size',
                  conductor='exporter-conductor'))
        self.assertEqual(1, value(samples,
                                  'ironic_alloc_allocation_count_up'))
        fixture.service.stop()
        # The exporter stops with the conductor.
        with socket.socket() as sock:
            sock.settimeout(5)
            self.assertNotEqual(0, sock.connect_ex(('127.0.0.1', port)))
