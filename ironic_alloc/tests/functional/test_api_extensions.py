"""ironic_alloc's API extensions through the whole WSGI application.

* An unmodified Ironic client (no ``ironic-alloc`` entry) gets the same
  bytes whether extensions are disabled, enabled, or enabled with an
  extension version and endpoint installed: a story of requests covering
  discovery, nodes, allocations and errors is replayed on a fresh
  database each time, with fixed UUIDs, and every status, header and
  body is compared.
* The field and endpoint gates, on the made-up extension version of
  tests/api_extensions.py (one above the newest real one).
* A header sent twice over a real socket: the WSGI server folds it, both
  entries are negotiated, and the answer has two OpenStack-API-Version
  headers.
"""

import contextlib
import http.client
import json
import re

from pecan import rest
import webtest

from ironic_alloc.api import app as api_app
from ironic_alloc.api.controllers.v1 import extensions
from ironic_alloc.api.controllers.v1 import types
from ironic_alloc.api import expose
from ironic_alloc.api import hooks
from ironic_alloc.common import context as ia_context
from ironic_alloc import objects
from ironic_alloc.tests import api_extensions
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import fixtures as ia_fixtures
from ironic_alloc.tests.functional import openapi

NODE = '5d0f6a52-2b8e-4c51-9e0a-1f3c7b2d4e60'
FREE_NODE = '9a41c3e7-70d2-4f8b-b6a5-2c8e1d5f3b17'
ALLOCATION = 'c27e9b84-13f5-4a6d-8e2b-7d9f0a1c5e33'
MISSING = '0f5e3d2c-1b4a-4987-8654-3210fedcba98'

LATEST = {'X-OpenStack-Ironic-API-Version': '1.79'}
GENERIC = {'OpenStack-API-Version': 'compute 2.1, baremetal 1.79'}

# (method, path, JSON body or None, request headers): what an Ironic
# client does, never with an ironic-alloc entry.
STORY = [
    ('GET', '/', None, {}),
    ('GET', '/', None, LATEST),
    ('GET', '/v1', None, {}),
    ('GET', '/v1/', None, GENERIC),
    ('POST', '/v1/nodes', {'uuid': NODE, 'name': 'story-node',
                           'driver': 'fake-hardware',
                           'resource_class': 'silver',
                           'description': 'made by the story'}, LATEST),
    ('GET', '/v1/nodes', None, LATEST),
    ('GET', '/v1/nodes/detail', None, LATEST),
    ('GET', '/v1/nodes/' + NODE, None, LATEST),
    ('GET', '/v1/nodes/' + NODE, None, {}),
    ('GET', '/v1/nodes/story-node?fields=uuid,name,description', None,
     GENERIC),
    ('PATCH', '/v1/nodes/' + NODE,
     [{'op': 'add', 'path': '/extra/story', 'value': 'patched'}], LATEST),
    ('POST', '/v1/allocations', {'uuid': ALLOCATION, 'name': 'story-alloc',
                                 'resource_class': 'gold'}, LATEST),
    ('GET', '/v1/allocations/' + ALLOCATION, None, LATEST),
    ('GET', '/v1/allocations/story-alloc', None, GENERIC),
    ('GET', '/v1/allocations', None, LATEST),
    ('GET', '/v1/nodes/' + FREE_NODE, None, LATEST),
    ('GET', '/v1/nodes/%s/allocation' % FREE_NODE, None, LATEST),
    ('DELETE', '/v1/allocations/' + ALLOCATION, None, LATEST),
    ('GET', '/v1/allocations', None, LATEST),
    ('GET', '/v1/nodes/' + MISSING, None, LATEST),
    ('GET', '/v1/nodes?limit=0', None, LATEST),
    ('POST', '/v1/nodes', {'driver': 'fake-hardware', 'bogus': 1}, LATEST),
    ('GET', '/v1/nodes', None, {'X-OpenStack-Ironic-API-Version': '1.999'}),
    ('DELETE', '/v1/nodes/' + NODE, None, LATEST),
    ('GET', '/v1/nodes', None, LATEST),
]

STORY_STATUSES = [200, 200, 200, 200, 201, 200, 200, 200, 200, 200, 200,
                  201, 200, 200, 200, 200, 200, 204, 200, 404, 400, 400,
                  406, 204, 200]

# NOTE: the only values that differ between runs: when rows were written.
_TIMESTAMP = re.compile(
    rb'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)?')


class _Things(rest.RestController):
    """An extension endpoint for the tests."""

    @expose.expose(types.jsontype)
    def get_all(self):
        return {'things': []}


class _AppTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.config(transport_url='fake://', auth_strategy='noauth')
        self.addCleanup(hooks.reset_rpcapi)

    def send(self, app, method, path, doc=None, headers=None):
        headers = dict(headers or {})
        body = b''
        if doc is not None:
            body = json.dumps(doc).encode()
            headers['Content-Type'] = 'application/json'
        return app.request(path, method=method, body=body, headers=headers,
                           expect_errors=True)


class TestPlainIronicClient(_AppTestCase):
    """Extensions change nothing for a client that does not ask."""

    def setUp(self):
        super().setUp()
        # NOTE: the allocation's answer is its end state ("active"), not
        # the "allocating" of a race with the conductor.
        self.config(allocation_create_wait=30, group='api')

    def _record(self, step, resp):
        method, path = step[:2]
        headers = []
        for name, value in resp.headerlist:
            if name.lower() == 'x-openstack-request-id':
                self.assertTrue(value.startswith('req-'))
                continue
            if name.lower() == 'content-length':
                # NOTE: bodies are compared with their timestamps replaced
                # (their length varies); the length is checked here.
                self.assertEqual(str(len(resp.body)), value)
                continue
            headers.append((name, value))
        return (method, path, resp.status_int, headers,
                _TIMESTAMP.sub(b'<timestamp>', resp.body))

    def _story(self, enabled, installed=False):
        self.config(enable_extensions=enabled, group='api')
        with contextlib.ExitStack() as stack:
            stack.enter_context(base.Database())
            if installed:
                stack.enter_context(api_extensions.TestExtension(
                    endpoints={'alloc_story': _Things()}))
            stack.enter_context(
                ia_fixtures.ConductorFixture(host='story-conductor'))
            hooks.reset_rpcapi()
            utils.make_available_node(ia_context.get_admin_context(),
                                      uuid=FREE_NODE, name='story-free')
            app = webtest.TestApp(api_app.setup_app())
            records = [self._record(step, self.send(app, *step))
                       for step in STORY]
            hooks.reset_rpcapi()
        self.assertEqual(STORY_STATUSES, [r[2] for r in records],
                         [r[:3] + (r[4][:300],) for r in records])
        return records

    def test_same_bytes_disabled_enabled_and_installed(self):
        disabled = self._story(enabled=False)
        enabled = self._story(enabled=True)
        installed = self._story(enabled=True, installed=True)
        for plain, other in ((disabled, enabled), (disabled, installed)):
            for expected, seen in zip(plain, other):
                self.assertEqual(expected, seen)
        for method, path, _status, headers, body in installed:
            self.assertNotIn(b'ironic_alloc_extensions', body, path)
            for name, value in headers:
                self.assertNotIn('alloc', name.lower(), path)
                self.assertNotIn('ironic-alloc', value, path)
        # The story reached what it is about.
        by_step = {(r[0], r[1]): r for r in installed}
        allocation = json.loads(by_step[('POST', '/v1/allocations')][4])
        self.assertEqual(('active', FREE_NODE),
                         (allocation['state'], allocation['node_uuid']))
        patched = json.loads(by_step[('PATCH', '/v1/nodes/' + NODE)][4])
        self.assertEqual({'story': 'patched'}, patched['extra'])


class TestGatesThroughTheApp(_AppTestCase):
    """Extension fields and endpoints, on the made-up version: node
    ``description`` and allocation ``extra`` play extension fields and
    /v1/alloc_things an extension endpoint."""

    def setUp(self):
        super().setUp()
        self.useFixture(base.Database())
        self.useFixture(api_extensions.TestExtension(
            fields={'node': ['description'], 'allocation': ['extra']},
            endpoints={'alloc_things': _Things()}))
        context = ia_context.get_admin_context()
        self.node = utils.make_available_node(
            context, name='gated', description='a gated field')
        conductor = objects.Conductor.register(context, 'gate-conductor',
                                               '')
        self.allocation = utils.make_allocation(
            context, conductor.id, name='gated-alloc',
            extra={'gated': True})
        self.app = webtest.TestApp(api_app.setup_app())

    def get(self, path, extension=None, **headers):
        headers.update(LATEST)
        if extension is not None:
            headers['OpenStack-API-Version'] = 'ironic-alloc %s' % extension
        return self.send(self.app, 'GET', path, headers=headers)

    def fault(self, resp):
        return json.loads(resp.json['error_message'])['faultstring']

    def assertNeedsVersion(self, resp, what):
        self.assertEqual(400, resp.status_int, resp.text)
        self.assertIn(what, self.fault(resp))
        self.assertIn('"OpenStack-API-Version: ironic-alloc %s"'
                      % api_extensions.VERSION, self.fault(resp))

    def test_field_hidden_below_its_version(self):
        for extension in (None, '1.0'):
            node = self.get('/v1/nodes/gated', extension).json
            self.assertNotIn('description', node)
            self.assertIn('name', node)
            nodes = self.get('/v1/nodes/detail', extension).json['nodes']
            self.assertNotIn('description', nodes[0])
            alloc = self.get('/v1/allocations/gated-alloc', extension).json
            self.assertNotIn('extra', alloc)
        for extension in (api_extensions.VERSION, 'latest'):
            node = self.get('/v1/nodes/gated', extension).json
            self.assertEqual('a gated field', node['description'])
            alloc = self.get('/v1/allocations/gated-alloc', extension).json
            self.assertEqual({'gated': True}, alloc['extra'])

    def test_field_asked_in_fields(self):
        for path in ('/v1/nodes/gated?fields=uuid,description',
                     '/v1/nodes?fields=uuid,description'):
            self.assertNeedsVersion(self.get(path),
                                    'The field "description" of node')
            self.assertNeedsVersion(self.get(path, '1.0'),
                                    'The field "description" of node')
            self.assertEqual(200, self.get(
                path, api_extensions.VERSION).status_int)
        self.assertNeedsVersion(
            self.get('/v1/allocations?fields=uuid,extra'),
            'The field "extra" of allocation')

    def test_field_sent(self):
        doc = {'driver': 'fake-hardware', 'description': 'sent'}
        resp = self.send(self.app, 'POST', '/v1/nodes', doc, LATEST)
        self.assertNeedsVersion(resp, 'The field "description" of node')
        resp = self.send(self.app, 'POST', '/v1/nodes', doc, dict(
            LATEST, **{'OpenStack-API-Version':
                       'ironic-alloc %s' % api_extensions.VERSION}))
        self.assertEqual(201, resp.status_int, resp.text)
        self.assertEqual('sent', resp.json['description'])
        patch = [{'op': 'add', 'path': '/description', 'value': 'x'}]
        resp = self.send(self.app, 'PATCH', '/v1/nodes/gated', patch,
                         LATEST)
        self.assertNeedsVersion(resp, 'The field "description" of node')
        patch = [{'op': 'add', 'path': '/extra/x', 'value': 'x'}]
        resp = self.send(self.app, 'PATCH', '/v1/allocations/gated-alloc',
                         patch, LATEST)
        self.assertNeedsVersion(resp, 'The field "extra" of allocation')
        resp = self.send(self.app, 'POST', '/v1/allocations',
                         {'resource_class': 'gold', 'extra': {}}, LATEST)
        self.assertNeedsVersion(resp, 'The field "extra" of allocation')

    def test_endpoint(self):
        for extension in (None, '1.0'):
            resp = self.get('/v1/alloc_things', extension)
            self.assertNeedsVersion(resp, 'The endpoint /v1/alloc_things')
            self.assertNotIn('alloc_things',
                             self.get('/v1', extension).json)
        resp = self.get('/v1/alloc_things', api_extensions.VERSION)
        self.assertEqual(200, resp.status_int, resp.text)
        self.assertEqual({'things': []}, resp.json)
        doc = self.get('/v1', api_extensions.VERSION).json
        self.assertEqual('self', doc['alloc_things'][0]['rel'])
        self.assertTrue(doc['alloc_things'][0]['href'].endswith(
            '/v1/alloc_things/'))
        self.assertEqual(api_extensions.VERSION,
                         doc['ironic_alloc_extensions']['version'])
        self.assertEqual(api_extensions.VERSION,
                         doc['ironic_alloc_extensions']['max_version'])

    def test_disabled_is_plain_ironic(self):
        self.config(enable_extensions=False, group='api')
        resp = self.get('/v1/nodes/gated', api_extensions.VERSION)
        self.assertNotIn('description', resp.json)
        self.assertNotIn('X-OpenStack-Ironic-Alloc-Extension-Maximum-Version',
                         resp.headers)
        self.assertEqual(['baremetal 1.79'], resp.headers.getall(
            'OpenStack-API-Version'))
        self.assertEqual(404, self.get(
            '/v1/alloc_things', api_extensions.VERSION).status_int)
        doc = self.get('/v1', '9.9').json
        self.assertNotIn('alloc_things', doc)
        self.assertNotIn('ironic_alloc_extensions', doc)


class TestRepeatedHeaderOverASocket(base.DbTestCase):
    """The API's server folds a header sent twice into one comma-separated
    value, as Apache does; both entries are negotiated."""

    def setUp(self):
        super().setUp()
        self.config(transport_url='fake://', auth_strategy='noauth')
        self.config(host_ip='127.0.0.1', port=0, group='api')
        self.api = self.useFixture(openapi.ServedAPI())

    def _get(self, path, *values):
        conn = http.client.HTTPConnection(self.api.server.host,
                                          self.api.server.port, timeout=60)
        self.addCleanup(conn.close)
        conn.putrequest('GET', path)
        for value in values:
            conn.putheader('OpenStack-API-Version', value)
        conn.putheader('Accept', 'application/json')
        conn.endheaders()
        resp = conn.getresponse()
        return resp, resp.read()

    def test_both_entries_negotiated(self):
        newest = extensions.version_string(extensions.MAX_MINOR)
        for values, used in (
                (('baremetal 1.79', 'ironic-alloc 1.0'), '1.0'),
                (('ironic-alloc latest', 'baremetal 1.79'), newest)):
            resp, body = self._get('/v1', *values)
            self.assertEqual(200, resp.status, body)
            self.assertEqual('1.79',
                             resp.getheader('X-OpenStack-Ironic-API-Version'))
            self.assertEqual(['baremetal 1.79', 'ironic-alloc ' + used],
                             resp.headers.get_all('OpenStack-API-Version'))
            self.assertEqual(newest, resp.getheader(
                'X-OpenStack-Ironic-Alloc-Extension-Maximum-Version'))
            doc = json.loads(body)
            self.assertIn('conductors', doc)
            self.assertEqual(used, doc['ironic_alloc_extensions']['version'])

    def test_without_the_entry_one_header(self):
        resp, body = self._get('/v1', 'baremetal 1.79')
        self.assertEqual(['baremetal 1.79'],
                         resp.headers.get_all('OpenStack-API-Version'))
        self.assertIsNone(resp.getheader(
            'X-OpenStack-Ironic-Alloc-Extension-Minimum-Version'))
        self.assertNotIn(b'ironic_alloc', body)

    def test_refused_extension_version(self):
        newest = extensions.version_string(extensions.MAX_MINOR)
        resp, body = self._get(
            '/v1/nodes', 'baremetal 1.79',
            'ironic-alloc ' + extensions.version_string(
                extensions.MAX_MINOR + 1))
        self.assertEqual(406, resp.status)
        self.assertEqual(['baremetal 1.79'],
                         resp.headers.get_all('OpenStack-API-Version'))
        self.assertEqual('1.0', resp.getheader(
            'X-OpenStack-Ironic-Alloc-Extension-Minimum-Version'))
        self.assertEqual(newest, resp.getheader(
            'X-OpenStack-Ironic-Alloc-Extension-Maximum-Version'))
        fault = json.loads(json.loads(body)['error_message'])
        self.assertEqual('Client', fault['faultcode'])
        self.assertIn('[1.0, %s]' % newest, fault['faultstring'])
