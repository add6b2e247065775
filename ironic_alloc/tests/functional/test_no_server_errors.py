"""Inputs that an OpenAPI fuzzer (schemathesis) once answered with 500:
each is a 4xx in Ironic's error format now, and changes nothing."""

import json
from unittest import mock

from ironic_alloc.api.controllers.v1 import types
from ironic_alloc.tests import base
from ironic_alloc.tests.functional import openapi

_NODE = '6f1ebd89-6ca2-4b52-9d3e-5f4a1c3f1b20'
_ALLOCATION = '0d6b4a3e-5c3f-4d0e-9a4c-7b1e2d3c4f5a'


class _ServedWithANode(base.DbTestCase):
    """The API served over HTTP, with the node _NODE in it."""

    def setUp(self):
        super().setUp()
        self.config(transport_url='fake://', auth_strategy='noauth')
        self.config(host_ip='127.0.0.1', port=0, group='api')
        self.api = self.useFixture(openapi.ServedAPI())
        status, _ = self.api.json('POST', '/v1/nodes', {
            'uuid': _NODE, 'name': 'served', 'driver': 'fake-hardware'})
        self.assertEqual(201, status)


class TestNoServerErrors(_ServedWithANode):

    def _fault(self, data):
        return json.loads(json.loads(data)['error_message'])

    def _node(self):
        status, node = self.api.json('GET', '/v1/nodes/%s' % _NODE)
        self.assertEqual(200, status)
        return node

    def test_patch_operations_with_null_or_missing_op_and_path(self):
        before = self._node()
        for url in ('/v1/nodes/%s' % _NODE,
                    '/v1/allocations/%s' % _ALLOCATION):
            for operation in ({'op': 'add', 'path': None, 'value': None},
                              {'op': None, 'path': '/extra/a', 'value': 1},
                              {'op': 'add', 'value': 1},
                              {'path': '/extra/a', 'value': 1},
                              {'op': 'add', 'path': 5, 'value': 1},
                              {'op': 5, 'path': '/extra/a', 'value': 1}):
                status, _h, data = self.api.request(
                    'PATCH', url, json.dumps([operation]),
                    {'X-OpenStack-Ironic-API-Version': 'latest',
                     'Content-Type': 'application/json'})
                self.assertEqual(400, status, (url, operation, data))
                fault = self._fault(data)
                self.assertEqual('Client', fault['faultcode'])
                self.assertNotIn('NoneType', fault['faultstring'])
        after = self._node()
        self.assertEqual(before['extra'], after['extra'])
        self.assertEqual(before['updated_at'], after['updated_at'])

    def test_form_media_types_without_a_body(self):
        # Every operation of the description, with a form media type and
        # no body (a multipart type without its boundary, as the fuzzer
        # sent it): never a 5xx; a request that needs a body is refused.
        values = {'node_ident': _NODE, 'allocation_id': _ALLOCATION,
                  'trait': 'CUSTOM_X', 'driver_name': 'fake-hardware',
                  'hostname': 'nowhere'}
        served = 0
        for operation in openapi.operations():
            path_values = {name: values.get(name, 'unknown')
                           for name in openapi.path_parameter_names(
                               operation.path)}
            for media_type in ('multipart/form-data',
                               'application/x-www-form-urlencoded'):
                status, _h, data = self.api.request(
                    operation.method, operation.url(path_values), None,
                    {'X-OpenStack-Ironic-API-Version': 'latest',
                     'Content-Type': media_type})
                self.assertLess(status, 500, (operation, media_type, data))
                served += 1
        self.assertGreater(served, 30)
        # Nothing was deleted by a request that should have been refused
        # only if it had a body: the node is still there unless a DELETE
        # of it succeeded, and then it is gone cleanly.
        status, _node = self.api.json('GET', '/v1/nodes/%s' % _NODE)
        self.assertIn(status, (200, 404))

    def test_null_candidate_node(self):
        # Found by the schemathesis tier (coverage phase).
        for candidates in ([None], [_NODE, None]):
            status, _h, data = self.api.request(
                'POST', '/v1/allocations', json.dumps({
                    'resource_class': 'gold',
                    'candidate_nodes': candidates}),
                {'X-OpenStack-Ironic-API-Version': 'latest',
                 'Content-Type': 'application/json'})
            self.assertEqual(400, status, (candidates, data))
            self.assertEqual('Candidate nodes are node names or UUIDs, '
                             'not null.',
                             self._fault(data)['faultstring'])
        status, listed = self.api.json('GET', '/v1/allocations')
        self.assertEqual((200, []), (status, listed['allocations']))

    def test_form_media_type_with_whitespace_body(self):
        status, _h, data = self.api.request(
            'DELETE', '/v1/allocations/%s' % _ALLOCATION, b'  \r\n',
            {'X-OpenStack-Ironic-API-Version': 'latest',
             'Content-Type': 'multipart/form-data'})
        # NOTE: a body of whitespace is still a body: WSME refuses it
        # without a media type (415); no form parsing is tried.
        self.assertEqual(415, status, data)
        self.assertEqual('Client', self._fault(data)['faultcode'])


class TestArgumentConversionErrors(_ServedWithANode):
    """An unexpected error while WSME converts the arguments (before the
    controller method runs) is a 500 without the error's text."""

    SECRET = 'internal detail 0x5ec12e7'

    def _break(self, type_class):
        # NOTE: fault injection: every input the API types refuse raises a
        # client error (400), so no request reaches WSME's path for other
        # errors; a conversion that fails unexpectedly (a bug of a type)
        # stands in for one.
        patcher = mock.patch.object(type_class, 'validate', autospec=True,
                                    side_effect=KeyError(self.SECRET))
        patcher.start()
        self.addCleanup(patcher.stop)

    def _assert_hidden(self, status, data):
        self.assertEqual(500, status, data)
        self.assertNotIn(self.SECRET.encode(), data)
        fault = json.loads(json.loads(data)['error_message'])
        self.assertEqual({'faultcode': 'Server',
                          'faultstring': 'An internal error occurred; see '
                                         'the API service log.',
                          'debuginfo': None}, fault)

    def test_body_argument(self):
        # NOTE: WSME turns any error converting a path or query argument
        # into a 400; for the body it does so for ValueError only.
        self._break(types.JsonType)
        status, _h, data = self.api.request(
            'PATCH', '/v1/nodes/%s' % _NODE,
            json.dumps([{'op': 'add', 'path': '/extra/a', 'value': 1}]),
            {'X-OpenStack-Ironic-API-Version': 'latest',
             'Content-Type': 'application/json'})
        self._assert_hidden(status, data)

    def test_errors_of_the_method_keep_their_message(self):
        # The guard leaves the 5xx of the method itself alone: a node
        # whose conductor group has no live conductor is a 503 saying so.
        status, node = self.api.json('POST', '/v1/nodes', {
            'name': 'unserved', 'driver': 'fake-hardware',
            'conductor_group': 'nowhere'})
        self.assertEqual(201, status, node)
        status, _h, data = self.api.request(
            'PUT', '/v1/nodes/unserved/states/provision',
            json.dumps({'target': 'manage'}),
            {'X-OpenStack-Ironic-API-Version': 'latest',
             'Content-Type': 'application/json'})
        self.assertEqual(503, status, data)
        fault = json.loads(json.loads(data)['error_message'])
        self.assertIn('no conductor of conductor group "nowhere" is alive',
                      fault['faultstring'])
