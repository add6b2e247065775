"""The shipped OpenAPI description (api/openapi.yaml) matches the app.

Both ways, against the real app over a real socket:

* every operation of the description is served: the request reaches a
  controller method (recorded when Pecan dispatches it), and neither
  routing nor the method check refused it (no 404 without a handler, no
  405);
* every route of the app is described: the controller methods Pecan can
  dispatch to are enumerated from the code itself (every class of the
  controllers package, found through the garbage collector, so a new
  controller, sub-controller or custom action needs no registration
  here), and each must have been reached by at least one operation of
  the description.  A handler missing from the description fails the
  test with its name.
"""

import json

import jsonschema
from wsme import types as wtypes

from ironic_alloc.api.controllers import base as api_base
from ironic_alloc.api.controllers.v1 import allocation
from ironic_alloc.api.controllers.v1 import extensions
from ironic_alloc.api.controllers.v1 import node
from ironic_alloc.api.controllers.v1 import versions
from ironic_alloc.tests import base
from ironic_alloc.tests.functional import openapi


class TestOpenAPIDocument(base.TestCase):
    """The description is well formed (without an external validator)."""

    def setUp(self):
        super().setUp()
        self.doc = openapi.load()

    def test_version_and_header(self):
        self.assertTrue(self.doc['openapi'].startswith('3.1.'))
        self.assertEqual(versions.MAX_VERSION_STRING,
                         self.doc['info']['version'])
        header = self.doc['components']['parameters']['Microversion']
        self.assertEqual(('header', 'X-OpenStack-Ironic-API-Version'),
                         (header['in'], header['name']))

    def test_extension_header_and_discovery(self):
        param = self.doc['components']['parameters']['OpenStackAPIVersion']
        self.assertEqual(('header', api_base.Version.generic_string),
                         (param['in'], param['name']))
        for path in ('/', '/v1'):
            response = self.doc['paths'][path]['get']['responses']['200']
            self.assertEqual({api_base.Version.generic_string,
                              extensions.MIN_HEADER, extensions.MAX_HEADER},
                             set(response['headers']), path)
        self.assertIn(extensions.DOCUMENT_KEY,
                      self.doc['components']['schemas']['Root'][
                          'properties'])

    def test_every_reference_resolves(self):
        openapi.resolve(self.doc, self.doc)

    def test_operations(self):
        ids = []
        for op in openapi.operations(self.doc):
            self.assertTrue(op.operation_id, op)
            ids.append(op.operation_id)
            declared = {p['name'] for p in op.params_in('path')}
            self.assertEqual(openapi.path_parameter_names(op.path),
                             declared, op)
            headers = {p['name'] for p in op.params_in('header')}
            if op.path != '/':
                self.assertIn('X-OpenStack-Ironic-API-Version', headers, op)
            self.assertIn('OpenStack-API-Version', headers, op)
            item = self.doc['paths'][op.path][op.method.lower()]
            self.assertTrue(item.get('responses'), op)
        self.assertEqual(len(ids), len(set(ids)), 'duplicate operationId')

    def _writable(self, api_type):
        return {a.name for a in wtypes.list_attributes(api_type)
                if not getattr(a, 'readonly', False)}

    def test_create_bodies_match_the_api_types(self):
        schemas = self.doc['components']['schemas']
        # NOTE: protected and protected_reason are refused on creation
        # (400): only PATCH sets them.
        self.assertEqual(
            self._writable(node.Node) - {'protected', 'protected_reason'},
            set(schemas['NodeCreate']['properties']))
        self.assertEqual(self._writable(allocation.Allocation),
                         set(schemas['AllocationCreate']['properties']))

    def test_schemas_are_valid_json_schema(self):
        schemas = openapi.resolve(self.doc, self.doc['components'])
        for name, schema in schemas['schemas'].items():
            jsonschema.Draft202012Validator.check_schema(schema)
        for op in openapi.operations(self.doc):
            if op.body_schema is not None:
                jsonschema.Draft202012Validator.check_schema(op.body_schema)
            for param in op.parameters:
                jsonschema.Draft202012Validator.check_schema(
                    param['schema'])


class TestOpenAPIMatchesRoutes(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.config(transport_url='fake://', auth_strategy='noauth')
        self.config(host_ip='127.0.0.1', port=0, group='api')
        self.api = self.useFixture(openapi.ServedAPI())
        status, node = self.api.json('POST', '/v1/nodes', {
            'name': 'openapi-node', 'driver': 'fake-hardware',
            'resource_class': 'gold'})
        self.assertEqual(201, status, node)
        status, alloc = self.api.json('POST', '/v1/allocations', {
            'name': 'openapi-alloc', 'resource_class': 'gold'})
        self.assertEqual(201, status, alloc)
        self.path_values = {
            'node_ident': node['uuid'],
            'allocation_ident': alloc['uuid'],
            'trait': 'CUSTOM_OPENAPI',
            'driver_name': 'fake-hardware',
            'hostname': 'test-conductor',
        }

    def _send(self, op):
        values = {name: self.path_values.get(name, 'x')
                  for name in openapi.path_parameter_names(op.path)}
        body = None
        if op.body_required or op.method in ('POST', 'PUT', 'PATCH'):
            body = '{}' if op.method != 'PATCH' else '[]'
        if op.path.endswith('/traits/{trait}'):
            body = None
        headers = {'X-OpenStack-Ironic-API-Version': 'latest',
                   'Content-Type': 'application/json'}
        return self.api.request(op.method, op.url(values), body, headers)

    def test_every_operation_is_served(self):
        recorder = self.useFixture(openapi.HandlerRecorder())
        reached = set()
        unserved = []
        for op in openapi.operations():
            # NOTE: deletions last, so the node and allocation exist for
            # every other operation.
            if op.method == 'DELETE':
                continue
            reached |= self._check_served(op, recorder, unserved)
        for op in openapi.operations():
            if op.method == 'DELETE':
                reached |= self._check_served(op, recorder, unserved)
        self.assertEqual([], unserved)

        missing = sorted(openapi.describe_handler(key) for key in
                         openapi.controller_handlers() - reached)
        self.assertEqual(
            [], missing,
            'controller methods serving routes missing from %s'
            % openapi.OPENAPI_PATH)

    def _check_served(self, op, recorder, unserved):
        recorder.handlers.clear()
        status, _headers, body = self._send(op)
        handlers = set(recorder.handlers)
        if not handlers or status == 405 or status >= 500:
            unserved.append('%r: %s %s' % (op, status, body[:200]))
        return handlers

    def test_extension_discovery_as_described(self):
        doc = openapi.load()
        for path in ('/', '/v1'):
            response = openapi.resolve(
                doc, doc['paths'][path]['get']['responses']['200'])
            status, headers, body = self.api.request('GET', path, headers={
                'OpenStack-API-Version': 'ironic-alloc latest'})
            self.assertEqual(200, status, body)
            for name in response['headers']:
                self.assertIn(name, headers, path)
            schema = response['content']['application/json']['schema']
            document = json.loads(body)
            jsonschema.validate(document, schema)
            jsonschema.validate(document[extensions.DOCUMENT_KEY],
                                doc['components']['schemas'][
                                    'ExtensionVersions'])

    def test_unknown_route_is_not_served(self):
        # NOTE: the check above relies on an unrouted request reaching no
        # handler; prove it.
        recorder = self.useFixture(openapi.HandlerRecorder())
        status, _headers, _body = self.api.request(
            'GET', '/v1/no-such-resource',
            headers={'X-OpenStack-Ironic-API-Version': 'latest'})
        self.assertEqual(404, status)
        self.assertEqual([], recorder.handlers)
        status, _headers, _body = self.api.request(
            'PUT', '/v1/allocations',
            headers={'X-OpenStack-Ironic-API-Version': 'latest'})
        self.assertEqual(405, status)
