"""The matching language (API extension 1.1) over HTTP.

The WSGI app served on a real socket with a real conductor: allocations
with trait expressions and ``match`` get the right node, the field is
shown and gated by the extension version, and every bad input is a 400
in Ironic's error format naming the offending value, with no row written.
POST /v1/allocations/explain answers the funnel, with the same 400s, and
writes nothing.
"""

import http.client
import json
import threading
import time

import sqlalchemy as sa

from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.db.sqlalchemy import models
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import test_funnel
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import openapi

EXTENSION = 'ironic-alloc 1.1'

# What POST /v1/allocations/explain answers below 1.1: the path is then an
# allocation's, where POST is not allowed, as for any other segment.
EXPLAIN_BELOW_STATUS = 405
EXPLAIN_BELOW_MESSAGE = ("Method POST is not allowed for "
                         "/v1/allocations/explain, which allows DELETE, GET, "
                         "PATCH; POST /v1/allocations creates a new one.")


class _ServedTestCase(base.DbTestCase):

    # More [api] options of the served API.
    API_OPTIONS = {}

    def setUp(self):
        super().setUp()
        self.config(transport_url='fake://', auth_strategy='noauth')
        self.config(host_ip='127.0.0.1', port=0, group='api')
        self.config(allocation_create_wait=30, group='api')
        self.config(group='api', **self.API_OPTIONS)
        self.api = self.useFixture(openapi.ServedAPI())

    def call(self, method, url, doc=None, extension=EXTENSION):
        headers = {'X-OpenStack-Ironic-API-Version': 'latest',
                   'Content-Type': 'application/json',
                   'Accept': 'application/json'}
        if extension:
            headers['OpenStack-API-Version'] = extension
        body = None if doc is None else json.dumps(doc)
        status, _headers, data = self.api.request(method, url, body, headers)
        return status, (json.loads(data) if data else None)

    def error(self, status, doc):
        """The message of an Ironic error body."""
        fault = json.loads(doc['error_message'])
        self.assertEqual('Client', fault['faultcode'])
        return fault['faultstring']

    def allocation_rows(self):
        with sqla_api.get_engine().connect() as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(
                models.Allocation.__table__)).scalar()


class TestMatchingOverHTTP(_ServedTestCase):

    def test_allocate_with_the_language(self):
        context = self.context
        utils.make_available_node(context, name='gpu',
                                  traits=['CUSTOM_A', 'CUSTOM_GPU'],
                                  properties={'memory_mb': 65536})
        utils.make_available_node(context, name='small',
                                  traits=['CUSTOM_A'],
                                  properties={'memory_mb': '1024'})
        good = utils.make_available_node(context, name='good',
                                         traits=['CUSTOM_A', 'CUSTOM_R1'])
        # The node's properties changed through the API (a conductor
        # writes them): the matcher sees the new values.
        status, _ = self.call('PATCH', '/v1/nodes/good', [
            {'op': 'add', 'path': '/properties/memory_mb', 'value': '32768'},
            {'op': 'add', 'path': '/properties/capabilities',
             'value': 'boot_mode:uefi'}])
        self.assertEqual(200, status)
        body = {'resource_class': 'gold', 'name': 'rich',
                'traits': ['CUSTOM_A', '!CUSTOM_GPU',
                           'in:CUSTOM_R1,CUSTOM_R2'],
                'match': {'memory_mb': 16384,
                          'capabilities': {'boot_mode': 'uefi'}}}
        status, allocation = self.call('POST', '/v1/allocations', body)
        self.assertEqual(201, status, allocation)
        self.assertEqual(('active', good.uuid),
                         (allocation['state'], allocation['node_uuid']))
        self.assertEqual(body['traits'], allocation['traits'])
        self.assertEqual(body['match'], allocation['match'])
        status, shown = self.call('GET', '/v1/allocations/rich')
        self.assertEqual(body['match'], shown['match'])
        status, shown = self.call('GET', '/v1/allocations/rich?fields=match')
        self.assertEqual(200, status)
        self.assertEqual(body['match'], shown['match'])
        # Hidden below the extension version, and refused in ``fields``.
        status, shown = self.call('GET', '/v1/allocations/rich',
                                  extension=None)
        self.assertEqual(200, status)
        self.assertNotIn('match', shown)
        status, doc = self.call('GET', '/v1/allocations/rich?fields=match',
                                extension=None)
        self.assertEqual(400, status)
        self.assertIn('ironic-alloc 1.1', self.error(status, doc))
        # Not patchable.
        for extension in (EXTENSION, None):
            status, doc = self.call('PATCH', '/v1/allocations/rich', [
                {'op': 'replace', 'path': '/match', 'value': {}}],
                extension=extension)
            self.assertEqual(400, status)
            self.assertIn('match', self.error(status, doc))
        status, shown = self.call('GET', '/v1/allocations/rich')
        self.assertEqual(body['match'], shown['match'])
        # A second one finds nothing, and says why.
        status, failed = self.call('POST', '/v1/allocations',
                                   dict(body, name='rich-2'))
        self.assertEqual(201, status)
        self.assertEqual('error', failed['state'])
        self.assertIn('No candidate node', failed['last_error'])

    def test_plain_ironic_request_unchanged(self):
        # Without the extension version "!" is just an invalid trait, as
        # in Ironic.
        status, doc = self.call('POST', '/v1/allocations', {
            'resource_class': 'gold', 'traits': ['!CUSTOM_GPU']},
            extension=None)
        self.assertEqual(400, status)
        self.assertIn('Invalid trait !CUSTOM_GPU', self.error(status, doc))
        utils.make_available_node(self.context, traits=['CUSTOM_A'])
        status, allocation = self.call('POST', '/v1/allocations', {
            'resource_class': 'gold', 'traits': ['CUSTOM_A']},
            extension=None)
        self.assertEqual(201, status)
        self.assertEqual('active', allocation['state'])
        self.assertNotIn('match', allocation)


class TestBadInput(_ServedTestCase):
    """Every 400 of the language: Ironic's error format, the offending
    value named, no row written."""

    CASES = [
        # (body changes, extension, text of the message)
        ({'traits': ['!CUSTOM_A']}, None, 'Invalid trait !CUSTOM_A'),
        ({'traits': ['in:CUSTOM_A']}, None, 'Invalid trait in:CUSTOM_A'),
        ({'match': {'cpus': 1}}, None, 'ironic-alloc 1.1'),
        ({'match': {'cpus': 1}}, 'ironic-alloc 1.0', 'ironic-alloc 1.1'),
        ({'traits': ['CUSTOM_A', '!CUSTOM_A']}, EXTENSION,
         'CUSTOM_A is both required and forbidden'),
        ({'traits': ['in:']}, EXTENSION, 'in:'),
        ({'traits': ['in:CUSTOM_A,,CUSTOM_B']}, EXTENSION,
         'in:CUSTOM_A,,CUSTOM_B'),
        ({'traits': ['!custom_a']}, EXTENSION, '!custom_a'),
        ({'traits': ['!']}, EXTENSION, 'Invalid trait expression !'),
        ({'traits': ['in:CUSTOM_A,NOT_A_TRAIT']}, EXTENSION, 'NOT_A_TRAIT'),
        ({'traits': ['IN:CUSTOM_A']}, EXTENSION, 'IN:CUSTOM_A'),
        ({'traits': ['in:' + ','.join(
            'CUSTOM_T%d' % i for i in range(51))]}, EXTENSION,
         'name 51 traits, at most 50'),
        ({'match': {'gpus': 1}}, EXTENSION, 'Unknown key gpus'),
        ({'match': {'cpus': -1}}, EXTENSION, 'match cpus -1'),
        ({'match': {'memory_mb': 1.5}}, EXTENSION, 'match memory_mb 1.5'),
        ({'match': {'local_gb': '10'}}, EXTENSION, 'match local_gb "10"'),
        ({'match': {'cpus': True}}, EXTENSION, 'match cpus true'),
        ({'match': {'cpu_arch': 7}}, EXTENSION, 'match cpu_arch 7'),
        ({'match': {'capabilities': {'a': 1}}}, EXTENSION,
         'capability a value 1'),
        ({'match': {'capabilities': ['a:b']}}, EXTENSION, 'capabilities'),
        ({'match': {'conductor_group': 'a b'}}, EXTENSION, '"a b"'),
        ({'match': 'cpus=1'}, EXTENSION, 'must be an object'),
        ({'match': {'cpus': 1}, 'node': 'some-node'}, EXTENSION,
         'cannot be used when backfilling'),
    ]

    def test_every_refusal(self):
        utils.make_available_node(self.context, name='some-node',
                                  traits=['CUSTOM_A'])
        for changes, extension, message in self.CASES:
            body = dict({'resource_class': 'gold'}, **changes)
            status, doc = self.call('POST', '/v1/allocations', body,
                                    extension=extension)
            self.assertEqual(400, status, (changes, doc))
            self.assertIn(message, self.error(status, doc), changes)
        self.assertEqual(0, self.allocation_rows())

    def test_refused_while_pinned_to_an_older_release(self):
        self.config(pin_release_version='2026.2')
        status, doc = self.call('POST', '/v1/allocations', {
            'resource_class': 'gold', 'traits': ['!CUSTOM_GPU']})
        self.assertEqual(400, status)
        self.assertIn('pin_release_version', self.error(status, doc))
        self.assertEqual(0, self.allocation_rows())


class TestExplainOverHTTP(_ServedTestCase):
    """POST /v1/allocations/explain: the funnel of the fixture fleet of
    conductor/test_funnel.py, the same 400s as a create, nothing
    written."""

    def test_funnel_and_examples(self):
        criteria, matching_uuids = test_funnel.make_fleet(self.context)
        body = {'resource_class': 'gold', 'owner': 'p1',
                'traits': ['CUSTOM_A', 'CUSTOM_B', '!CUSTOM_GPU',
                           'in:CUSTOM_R1,CUSTOM_R2'],
                'match': test_funnel.CRITERIA['match'],
                'candidate_nodes': criteria['candidate_uuids']}
        status, funnel = self.call('POST', '/v1/allocations/explain', body)
        self.assertEqual(200, status, funnel)
        self.assertEqual(test_funnel.expected_steps(), [
            (s['step'], s['value'], s['removed']) for s in funnel['steps']])
        self.assertEqual(len(matching_uuids), funnel['matching_nodes'])
        self.assertEqual(matching_uuids, funnel['examples'])
        self.assertIsNone(funnel['project'])
        self.assertTrue(funnel['summary'].startswith('Funnel: '))
        status, funnel = self.call('POST',
                                   '/v1/allocations/explain?examples=1', body)
        self.assertEqual(200, status)
        self.assertEqual(matching_uuids[:1], funnel['examples'])
        self.assertEqual(len(matching_uuids), funnel['matching_nodes'])
        for bad in ('-1', '101', 'x'):
            status, doc = self.call(
                'POST', '/v1/allocations/explain?examples=' + bad, body)
            self.assertEqual(400, status, bad)
        self.assertEqual(0, self.allocation_rows())

    def test_same_refusals_as_a_create(self):
        utils.make_available_node(self.context, name='some-node')
        for changes, extension, message in TestBadInput.CASES:
            if extension != EXTENSION:
                continue
            if 'node' in changes:
                message = 'cannot be asked for a backfill'
            body = dict({'resource_class': 'gold'}, **changes)
            status, doc = self.call('POST', '/v1/allocations/explain', body)
            self.assertEqual(400, status, (changes, doc))
            self.assertIn(message, self.error(status, doc), changes)
        status, doc = self.call('POST', '/v1/allocations/explain',
                                {'traits': ['CUSTOM_A']})
        self.assertEqual(400, status)
        self.assertIn('resource_class', self.error(status, doc))
        self.assertEqual(0, self.allocation_rows())

    def test_below_the_extension_version_not_allowed(self):
        body = {'resource_class': 'gold'}
        for extension in (None, 'ironic-alloc 1.0'):
            status, doc = self.call('POST', '/v1/allocations/explain', body,
                                    extension=extension)
            self.assertEqual(EXPLAIN_BELOW_STATUS, status, doc)
            self.assertEqual(EXPLAIN_BELOW_MESSAGE, self.error(status, doc))
        self.assertEqual(0, self.allocation_rows())

    def test_failed_allocation_explanation_is_gated(self):
        utils.make_available_node(self.context, name='gpu',
                                  traits=['CUSTOM_GPU'])
        status, failed = self.call('POST', '/v1/allocations', {
            'resource_class': 'gold', 'name': 'fails',
            'traits': ['!CUSTOM_GPU']})
        self.assertEqual('error', failed['state'])
        self.assertEqual([('forbidden_trait', 'CUSTOM_GPU', 1)], [
            (s['step'], s['value'], s['removed'])
            for s in failed['explanation']['steps'] if s['removed']])
        self.assertIn('1 have the forbidden CUSTOM_GPU; 0 left.',
                      failed['last_error'])
        status, shown = self.call('GET', '/v1/allocations/fails',
                                  extension=None)
        self.assertNotIn('explanation', shown)
        status, doc = self.call('PATCH', '/v1/allocations/fails', [
            {'op': 'remove', 'path': '/explanation'}])
        self.assertEqual(400, status)


class TestPostToAnItem(_ServedTestCase):
    """POST to ``<collection>/<segment>``: 405 in Ironic's error format
    with the methods the item allows, at every version, whatever the
    segment; never WSME's conversion error of the segment as a body."""

    def post(self, url, version, extension):
        headers = {'X-OpenStack-Ironic-API-Version': version,
                   'Content-Type': 'application/json',
                   'Accept': 'application/json'}
        if extension:
            headers['OpenStack-API-Version'] = extension
        status, headers, data = self.api.request(
            'POST', url, json.dumps({'resource_class': 'gold'}), headers)
        return status, headers.get('Allow'), json.loads(data)

    def test_allocation_and_node_items(self):
        node = utils.make_available_node(self.context, name='some-node')
        status, allocation = self.call('POST', '/v1/allocations',
                                       {'resource_class': 'gold',
                                        'name': 'some-allocation'})
        self.assertEqual(201, status, allocation)
        rows = self.allocation_rows()
        cases = [
            ('/v1/allocations/explain', [('1.52', None),
                                         ('latest', 'ironic-alloc 1.0')]),
            ('/v1/allocations/some-allocation', [('1.52', None),
                                                 ('latest', EXTENSION)]),
            ('/v1/allocations/' + allocation['uuid'], [('latest', None)]),
            ('/v1/allocations/new', [('latest', EXTENSION)]),
            ('/v1/allocations/get_one', [('1.60', None)]),
            ('/v1/nodes/some-node', [('1.1', None), ('latest', EXTENSION)]),
            ('/v1/nodes/' + node.uuid, [('latest', None)]),
            ('/v1/nodes/anything', [('latest', None)]),
        ]
        for url, versions in cases:
            collection = url.rsplit('/', 1)[0]
            for version, extension in versions:
                status, allow, doc = self.post(url, version, extension)
                self.assertEqual(405, status, (url, version, doc))
                self.assertEqual('DELETE, GET, PATCH', allow, url)
                self.assertEqual(
                    'Method POST is not allowed for %s, which allows '
                    'DELETE, GET, PATCH; POST %s creates a new one.'
                    % (url, collection), self.error(status, doc))
        self.assertEqual(rows, self.allocation_rows())

    def test_a_get_only_action(self):
        status, allow, doc = self.post('/v1/nodes/detail', 'latest', None)
        self.assertEqual(405, status, doc)
        self.assertEqual('GET', allow)
        self.assertEqual('Method POST is not allowed for /v1/nodes/detail, '
                         'which allows GET; POST /v1/nodes creates a new '
                         'one.', self.error(status, doc))

    def test_collections_and_sub_resources_unchanged(self):
        utils.make_available_node(self.context, name='some-node')
        # NOTE: the explain endpoint with its version and the node's own
        # sub-resources still route; a POST to the collection creates.
        status, _allow, doc = self.post('/v1/allocations/explain',
                                        'latest', EXTENSION)
        self.assertEqual(200, status, doc)
        self.assertEqual(1, doc['matching_nodes'])
        status, allow, doc = self.post('/v1/nodes/some-node/allocation',
                                       'latest', None)
        self.assertEqual(405, status, doc)
        self.assertEqual('DELETE, GET', allow)
        status, _allow, doc = self.post('/v1/allocations', 'latest', None)
        self.assertEqual(201, status, doc)


class TestExplainKeepsItsSlot(_ServedTestCase):
    """An explanation holds its [api]max_concurrent_requests slot while
    its statements run, as any request reading the database does: the
    tallies are classified by the API's interpreter, and a request that
    gave its slot back would queue for it again once its statements end.
    """

    API_OPTIONS = {'max_concurrent_requests': 1}

    # The statement that makes a reader of nodes wait, and how to see
    # that a session waits for it.
    LOCKS = {
        'postgresql': (
            'LOCK TABLE nodes IN ACCESS EXCLUSIVE MODE',
            # NOTE: the activity's text is cut short, before the tables
            # of the funnel's long statement: any session of this
            # database waiting for a lock is the explanation.
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = "
            "'Lock' AND datname = current_database()"),
        'mysql': (
            'LOCK TABLES nodes WRITE, node_traits WRITE',
            "SELECT count(*) FROM information_schema.processlist WHERE "
            "state LIKE 'Waiting for table%' AND info LIKE '%node_traits%'"),
    }

    def wait_for(self, conn, query):
        deadline = time.monotonic() + 60
        while True:
            found = conn.execute(sa.text(query)).scalar()
            # NOTE: PostgreSQL keeps one snapshot of its statistics views
            # per transaction.
            conn.rollback()
            if found:
                return
            self.assertLess(time.monotonic(), deadline,
                            'the explanation never waited for the lock')
            time.sleep(0.05)

    def test_other_requests_wait_for_the_slot(self):
        engine = sqla_api.get_engine()
        if engine.dialect.name not in self.LOCKS:
            self.skipTest('an SQLite reader never waits for a writer (WAL); '
                          'this test runs on PostgreSQL and MariaDB')
        lock, waiting = self.LOCKS[engine.dialect.name]
        utils.make_available_node(self.context, traits=['CUSTOM_A'])
        answers = {}

        def ask(name, method, url, doc=None):
            # NOTE: a connection of its own: the fixture's is not shared
            # between threads.
            conn = http.client.HTTPConnection(
                self.api.server.host, self.api.server.port, timeout=120)
            try:
                conn.request(method, url, body=doc and json.dumps(doc),
                             headers={
                                 'X-OpenStack-Ironic-API-Version': 'latest',
                                 'OpenStack-API-Version': EXTENSION,
                                 'Content-Type': 'application/json'})
                resp = conn.getresponse()
                answers[name] = resp.status, json.loads(resp.read())
            finally:
                conn.close()

        def explain():
            ask('explain', 'POST', '/v1/allocations/explain',
                {'resource_class': 'gold', 'traits': ['CUSTOM_A']})

        def root():
            ask('root', 'GET', '/v1')

        holder = engine.connect()
        watcher = engine.connect()
        self.addCleanup(holder.close)
        self.addCleanup(watcher.close)
        holder.begin()
        holder.execute(sa.text(lock))
        explaining = threading.Thread(target=explain)
        asking = threading.Thread(target=root)
        explaining.start()
        try:
            self.wait_for(watcher, waiting)
            # The only slot is the explanation's: GET /v1, served in
            # milliseconds otherwise, waits for it.
            asking.start()
            asking.join(2)
            served_meanwhile = 'root' in answers
        finally:
            if engine.dialect.name == 'mysql':
                holder.execute(sa.text('UNLOCK TABLES'))
            holder.rollback()
            explaining.join(60)
            if asking.is_alive():
                asking.join(60)
        self.assertFalse(served_meanwhile,
                         'GET /v1 was served while the explanation held '
                         'the only slot')
        self.assertEqual(200, answers['root'][0])
        status, funnel = answers['explain']
        self.assertEqual(200, status)
        self.assertEqual(1, funnel['matching_nodes'])
