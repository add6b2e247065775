"""The API served by Apache httpd + mod_wsgi, with a real conductor.

The virtual host is the shipped sample (daemon mode, 2 processes of 10
threads, ``WSGIApplicationGroup %{GLOBAL}``, ``WSGIPassAuthorization
On``); the API authenticates with ``http_basic``, which only works when
mod_wsgi passes the Authorization header on.  The conductor is a separate
``ironic-alloc-conductor`` process reached over RabbitMQ.
"""

import collections
import concurrent.futures
import json
import logging
import time
import uuid

import fixtures
from oslotest import base as oslo_base
import requests
import sqlalchemy as sa
from testtools import content

from ironic_alloc.tests.apache import fixtures as apache
from ironic_alloc.tests import base
from ironic_alloc.tests.multiprocess import fixtures as mp

# NOTE: a bound for hangs only.
TEST_TIMEOUT = 300
# The newest Bare Metal API version served: GET / and /v1 advertise it,
# and the requests of these tests ask for it.
VERSION = '1.115'
RESOURCE_CLASS = 'apache-test'
NODES = 40
ALLOCATIONS = 50
CLIENTS = 10
# Bound on waiting for asynchronous work (a hang stops the test).
WAIT_TIMEOUT = 60


class ApacheTestCase(oslo_base.BaseTestCase):

    def setUp(self):
        super().setUp()
        logging.getLogger('urllib3').setLevel(logging.WARNING)
        reason = apache.missing_reason()
        if reason:
            base.skip_or_fail(self, reason)
        # NOTE: the multi-process tier restarts the RabbitMQ these tests
        # share; never run during one of its tests (waiting for the lock
        # is bounded by TierLock, not by the test's time limit).
        lock = mp.TierLock()
        lock.acquire()
        self.addCleanup(lock.release)
        self.useFixture(fixtures.Timeout(TEST_TIMEOUT, gentle=True))
        self.deployment = apache.Deployment(
            self.id().rsplit('.', 1)[-1][5:25])
        self.failed = False
        self.addCleanup(lambda: self.deployment.cleanup(keep=self.failed))
        self.addOnException(self._attach_logs)
        self.deployment.start()
        self.session = requests.Session()
        self.session.auth = (apache.USER, apache.PASSWORD)
        self.session.headers.update({
            'X-OpenStack-Ironic-API-Version': VERSION,
            'Accept': 'application/json'})
        mp.log('%s: Apache on %s, work dir %s', self.id(),
               self.deployment.url, self.deployment.workdir)

    def _attach_logs(self, exc_info):
        self.failed = True
        self.addDetail('apache-and-conductor-logs',
                       content.text_content(self.deployment.logs()))

    # Helpers

    def request(self, method, path, session=None, **kwargs):
        session = session or self.session
        return session.request(method, self.deployment.url + path,
                               timeout=mp.REQUEST_TIMEOUT, **kwargs)

    def wait_for(self, path, field, expected):
        deadline = time.monotonic() + WAIT_TIMEOUT
        while True:
            resp = self.request('GET', path)
            self.assertEqual(200, resp.status_code, resp.text)
            if resp.json()[field] in expected:
                return resp.json()
            if time.monotonic() > deadline:
                self.fail('%s: %s is %r after %ds, expected %s'
                          % (path, field, resp.json()[field], WAIT_TIMEOUT,
                             expected))
            time.sleep(0.1)

    def enroll_available_node(self, session, name):
        """POST a node, then manage and provide it through the API."""
        resp = self.request('POST', '/v1/nodes', session=session,
                            json={'name': name, 'driver': 'fake-hardware',
                                  'resource_class': RESOURCE_CLASS})
        self.assertEqual(201, resp.status_code, resp.text)
        node = resp.json()['uuid']
        for target, state in (('manage', 'manageable'),
                              ('provide', 'available')):
            resp = self.request('PUT', '/v1/nodes/%s/states/provision'
                                % node, session=session,
                                json={'target': target})
            self.assertEqual(202, resp.status_code, resp.text)
            self.wait_for('/v1/nodes/%s' % node, 'provision_state',
                          [state])
        return node

    def assert_ironic_error(self, resp, status, text):
        """``resp`` is an Ironic error: JSON error_message holding a JSON
        document with faultstring, faultcode and debuginfo."""
        self.assertEqual(status, resp.status_code, resp.text)
        self.assertEqual('application/json',
                         resp.headers['Content-Type'].split(';')[0])
        fault = json.loads(resp.json()['error_message'])
        self.assertIn(text, fault['faultstring'])
        self.assertEqual('Client', fault['faultcode'])
        self.assertIn('debuginfo', fault)

    # Tests

    def test_versions_auth_and_errors(self):
        # The version documents are public.
        root = requests.get(self.deployment.url + '/',
                            timeout=mp.REQUEST_TIMEOUT)
        self.assertEqual(200, root.status_code, root.text)
        self.assertEqual('v1', root.json()['default_version']['id'])
        self.assertEqual(VERSION,
                         root.json()['default_version']['version'])
        v1 = requests.get(self.deployment.url + '/v1',
                          timeout=mp.REQUEST_TIMEOUT)
        self.assertEqual(200, v1.status_code, v1.text)
        self.assertEqual('v1', v1.json()['id'])
        self.assertEqual(VERSION,
                         v1.headers['X-OpenStack-Ironic-API-Maximum-Version'])
        # Links name the address the client used (Apache's Host header).
        self.assertTrue(v1.json()['links'][0]['href'].startswith(
            self.deployment.url), v1.json()['links'])

        # The rest needs the password: mod_wsgi passes the Authorization
        # header on (WSGIPassAuthorization On), or every request were 401.
        anonymous = requests.Session()
        resp = self.request('GET', '/v1/nodes', session=anonymous)
        self.assertEqual(401, resp.status_code, resp.text)
        anonymous.auth = (apache.USER, 'wrong')
        resp = self.request('GET', '/v1/nodes', session=anonymous)
        self.assertEqual(401, resp.status_code, resp.text)
        resp = self.request('GET', '/v1/nodes')
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual([], resp.json()['nodes'])

        # Errors in Ironic's format, through Apache.
        missing = str(uuid.uuid4())
        self.assert_ironic_error(
            self.request('GET', '/v1/allocations/%s' % missing), 404,
            missing)
        self.assert_ironic_error(
            self.request('POST', '/v1/allocations', json={'name': 'x'}),
            400, 'resource_class')
        mp.log('version documents, 401 without and with a wrong password, '
               '404 and 400 in Ironic format: checked')

    def test_allocations_and_concurrent_burst(self):
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            sessions = collections.deque()

            def enroll(index):
                session = requests.Session()
                session.auth = self.session.auth
                session.headers.update(self.session.headers)
                sessions.append(session)
                return self.enroll_available_node(session,
                                                  'apache-%03d' % index)

            nodes = list(pool.map(enroll, range(NODES)))
        mp.log('%d nodes enrolled, managed and provided through Apache in '
               '%.1fs', len(nodes), time.monotonic() - started)

        # One allocation, its node, and its deletion.
        resp = self.request('POST', '/v1/allocations',
                            json={'resource_class': RESOURCE_CLASS,
                                  'name': 'single'})
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertTrue(resp.headers['Location'].startswith(
            self.deployment.url + '/v1/allocations/'),
            resp.headers['Location'])
        single = self.wait_for('/v1/allocations/single', 'state',
                               ['active', 'error'])
        self.assertEqual('active', single['state'], single)
        node = self.request('GET', '/v1/nodes/%s' % single['node_uuid'])
        self.assertEqual(single['uuid'], node.json()['allocation_uuid'])
        self.assertEqual(single['uuid'], node.json()['instance_uuid'])
        resp = self.request('DELETE', '/v1/allocations/single')
        self.assertEqual(204, resp.status_code, resp.text)
        self.assertEqual(
            404, self.request('GET', '/v1/allocations/single').status_code)
        node = self.request('GET', '/v1/nodes/%s' % single['node_uuid'])
        self.assertIsNone(node.json()['allocation_uuid'])
        self.assertIsNone(node.json()['instance_uuid'])
        mp.log('one allocation became active on node %s and was deleted',
               single['node_uuid'])

        # More allocations than nodes, from several clients at once.
        started = time.monotonic()

        def allocate(index):
            session = sessions[index % len(sessions)]
            return self.request('POST', '/v1/allocations', session=session,
                                json={'resource_class': RESOURCE_CLASS,
                                      'name': 'burst-%03d' % index})

        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            answers = list(pool.map(allocate, range(ALLOCATIONS)))
        statuses = collections.Counter(r.status_code for r in answers)
        self.assertEqual({201: ALLOCATIONS}, dict(statuses),
                         [r.text for r in answers if r.status_code != 201])
        created = [r.json()['uuid'] for r in answers]
        for allocation in created:
            self.wait_for('/v1/allocations/%s' % allocation, 'state',
                          ['active', 'error'])
        allocations = self.request(
            'GET', '/v1/allocations?limit=1000').json()['allocations']
        states = collections.Counter(a['state'] for a in allocations)
        used = collections.Counter(a['node_uuid'] for a in allocations
                                   if a['node_uuid'])
        mp.log('%d POSTs from %d clients in %.1fs: %s; allocations %s; '
               '%d distinct nodes used', ALLOCATIONS, CLIENTS,
               time.monotonic() - started, dict(statuses), dict(states),
               len(used))
        # Every node is taken exactly once; the rest found no node.
        self.assertEqual({'active': NODES, 'error': ALLOCATIONS - NODES},
                         dict(states))
        self.assertEqual(NODES, len(used))
        self.assertEqual(1, max(used.values()))
        for a in allocations:
            if a['state'] == 'error':
                self.assertIn('No candidate node', a['last_error'])
        # The database agrees: one allocation per node, both ways.
        engine = sa.create_engine(self.deployment.db_url)
        self.addCleanup(engine.dispose)
        with engine.connect() as conn:
            mismatched = conn.execute(sa.text(
                'SELECT count(*) FROM nodes n JOIN allocations a '
                'ON a.id = n.allocation_id WHERE a.node_id != n.id '
                'OR n.instance_uuid != a.uuid')).scalar()
            doubles = conn.execute(sa.text(
                'SELECT count(*) FROM (SELECT node_id FROM allocations '
                'WHERE node_id IS NOT NULL GROUP BY node_id '
                'HAVING count(*) > 1) d')).scalar()
        self.assertEqual((0, 0), (mismatched, doubles))

        # Deleting them frees every node again.
        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            deleted = list(pool.map(
                lambda a: self.request('DELETE', '/v1/allocations/%s' % a),
                created))
        self.assertEqual({204: ALLOCATIONS}, dict(collections.Counter(
            r.status_code for r in deleted)))
        nodes = self.request('GET', '/v1/nodes?fields=uuid,instance_uuid'
                             '&limit=1000').json()['nodes']
        self.assertEqual([], [n for n in nodes if n['instance_uuid']])
        mp.log('%d DELETEs answered 204; no node keeps an instance',
               ALLOCATIONS)
