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
  test with its name;
* every route the app serves is an operation of the description: every
  HTTP method on every path of the description, and every word the
  controllers may route by (attribute names, custom actions, the keys of
  their tables) below every path, is sent to the app; a request that a
  controller method serves (neither 404 nor 405) must reach the method
  of the operation its path matches.  A route added to an existing
  controller (a new sub-resource, method or action) without its
  operation fails the test with its method and path.
"""

import json

import jsonschema
import webob
from wsme import types as wtypes

from ironic_alloc.api import app
from ironic_alloc.api.controllers import base as api_base
from ironic_alloc.api.controllers.v1 import allocation
from ironic_alloc.api.controllers.v1 import chassis
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
            item = self.doc['paths'][op.path][op.method.lower()]
            self.assertTrue(item.get('responses'), op)
            if op.path in openapi.MIDDLEWARE_PATHS:
                # NOTE: unversioned, outside the Bare Metal API proper.
                continue
            if op.path != '/':
                self.assertIn('X-OpenStack-Ironic-API-Version', headers, op)
            self.assertIn('OpenStack-API-Version', headers, op)
            item = self.doc['paths'][op.path][op.method.lower()]
            self.assertTrue(item.get('responses'), op)
            if op.extension is not None:
                self.assertIn(op.extension, extensions.FEATURES, op)
        self.assertEqual(len(ids), len(set(ids)), 'duplicate operationId')

    def test_links_name_operations_and_their_parameters(self):
        # The stateful phase of the schemathesis tier follows these.
        ops = {op.operation_id: op for op in openapi.operations(self.doc)}
        links = 0
        for path, item in self.doc['paths'].items():
            for method in openapi.METHODS:
                for status, response in item.get(method, {}).get(
                        'responses', {}).items():
                    response = openapi.resolve(self.doc, response)
                    for name, link in response.get('links', {}).items():
                        links += 1
                        where = '%s %s %s -> %s' % (method, path, status,
                                                    name)
                        target = ops.get(link['operationId'])
                        self.assertIsNotNone(target, where)
                        self.assertLessEqual(
                            set(link['parameters']),
                            {p['name'] for p in target.params_in('path')},
                            where)
        self.assertGreater(links, 0)

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
        self.assertEqual(self._writable(chassis.Chassis),
                         set(schemas['ChassisCreate']['properties']))

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
        status, chassis_doc = self.api.json('POST', '/v1/chassis', {
            'description': 'openapi-chassis'})
        self.assertEqual(201, status, chassis_doc)
        self.path_values = {
            'chassis_uuid': chassis_doc['uuid'],
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
        if op.extension:
            headers['OpenStack-API-Version'] = 'ironic-alloc latest'
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
        if op.path in openapi.MIDDLEWARE_PATHS:
            # NOTE: answered by a middleware, before any controller.
            if status != 200:
                unserved.append('%r: %s %s' % (op, status, body[:200]))
            return handlers
        if not handlers or status == 405 or status >= 500:
            unserved.append('%r: %s %s' % (op, status, body[:200]))
        return handlers

    def test_every_served_route_is_described(self):
        """Each (method, path) the app serves (routes to a controller
        method that answers neither 404 nor 405) is an operation of the
        description: it reaches the method that the operation whose path
        template it matches best reaches (a UUID or name in place of a
        parameter).  As Pecan passes extra path segments to a method as
        its positional arguments, a path longer or shorter than the
        template of an operation of the same HTTP method that reaches the
        same controller method is that operation too.

        Probed: every method on every path of the description, and a GET
        of every route word of the code (openapi.route_words) below every
        path that has routes below it.  A route added without its
        operation in openapi.yaml fails here with its method and path.
        """
        recorder = self.useFixture(openapi.HandlerRecorder())
        ops = openapi.operations()
        # (template, method) -> the handler its operation reaches.
        described = {}
        for op in sorted(ops, key=lambda o: o.method == 'DELETE'):
            described[(op.path, op.method)] = self._handler(recorder, op)
        templates = {op.path for op in ops}
        parents = {t.rsplit('/', 1)[0] or '/' for t in templates
                   if t != '/'}
        probes = [(method, template, None)
                  for template in sorted(templates)
                  for method in ('GET', 'PUT', 'POST', 'PATCH', 'DELETE')]
        probes += [('GET', parent, word)
                   for parent in sorted(parents)
                   for word in openapi.route_words()]
        # NOTE: the probes call the WSGI application in the test process
        # (the same application, without a socket per request: there are
        # thousands of them).
        wsgi_app = app.setup_app()
        undescribed = []
        for method, template, word in probes:
            path = self._concrete(template)
            if word is not None:
                path = path.rstrip('/') + '/' + word
            recorder.handlers.clear()
            status = webob.Request.blank(path, method=method, headers={
                'X-OpenStack-Ironic-API-Version': 'latest'}).get_response(
                    wsgi_app).status_int
            if not recorder.handlers or status in (404, 405):
                continue
            handler = recorder.handlers[-1]
            # NOTE: a path without its version segment is the same path
            # of v1 (as in Ironic); the description lists the v1 ones.
            if path != '/' and path.split('/')[1] != 'v1':
                path = '/v1' + path
            if not self._is_described(described, method, path, handler,
                                      status):
                undescribed.append('%s %s -> %s (%s)' % (
                    method, path, openapi.describe_handler(handler),
                    status))
        self.assertEqual([], undescribed,
                         'routes served but missing from %s'
                         % openapi.OPENAPI_PATH)

    def _concrete(self, template):
        path = template
        for name in openapi.path_parameter_names(template):
            path = path.replace('{%s}' % name,
                                self.path_values.get(name, 'x'))
        return path

    def _handler(self, recorder, op):
        recorder.handlers.clear()
        self._send(op)
        return recorder.handlers[-1] if recorder.handlers else None

    @staticmethod
    def _is_described(described, method, path, handler, status):
        scores = {template: openapi.template_matches(template, path)
                  for template, m in described if m == method}
        scores = {t: n for t, n in scores.items() if n is not None}
        if scores:
            best = max(scores.values())
            if handler in {described[(t, method)]
                           for t, n in scores.items() if n == best}:
                return True
        if any(h == handler and m == method
               and openapi.template_matches(t, path, prefix=True)
               is not None for (t, m), h in described.items()):
            return True
        # NOTE: Pecan's catch-alls (``_default``, ``index``) answer every
        # method; the description lists the methods that mean something
        # on such a path, and any other is refused (4xx) by the same
        # method.
        _cls, name = handler
        return (name in ('_default', 'index') and 400 <= status < 500
                and any(handler == h and openapi.template_matches(
                    t, path, prefix=True) is not None
                    for (t, _m), h in described.items()))

    def test_routes_pecan_would_add(self):
        # Found by the test above: Pecan routed GET
        # /v1/nodes/<ident>/detail to the node list (the identifier taken
        # as instance_uuid) and every method of
        # /v1/drivers/<name>/properties to the properties.
        headers = {'X-OpenStack-Ironic-API-Version': 'latest'}
        status, _h, body = self.api.request(
            'GET', '/v1/nodes/%s/detail' % self.path_values['node_ident'],
            headers=headers)
        self.assertEqual(404, status, body)
        fault = json.loads(json.loads(body)['error_message'])
        self.assertEqual('Client', fault['faultcode'])
        status, _h, body = self.api.request('GET', '/v1/nodes/detail',
                                            headers=headers)
        self.assertEqual(200, status, body)
        for method in ('PUT', 'POST', 'PATCH', 'DELETE'):
            status, _h, body = self.api.request(
                method, '/v1/drivers/fake-hardware/properties',
                headers=headers)
            self.assertEqual(405, status, (method, body))
        status, _h, body = self.api.request(
            'GET', '/v1/drivers/fake-hardware/properties', headers=headers)
        self.assertEqual(200, status, body)

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
