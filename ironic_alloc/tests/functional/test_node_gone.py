"""A node (or allocation) deleted between the API's read and the conductor's lock is "not
found" by the identifier the client sent, never by its internal id."""

import json
from unittest import mock

from ironic_alloc.api.controllers.v1 import allocation as allocation_api
from ironic_alloc.api.controllers.v1 import utils as api_utils
from ironic_alloc.conductor import rpcapi
from ironic_alloc.db import api as db_api
from ironic_alloc.tests import base
from ironic_alloc.tests.functional import openapi

_UUID = '2c3f8a6e-1b4d-4e5f-9a7b-8c9d0e1f2a3b'
_HEADERS = {'X-OpenStack-Ironic-API-Version': 'latest',
            'Content-Type': 'application/json'}


class TestNodeDeletedMeanwhile(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.config(transport_url='fake://', auth_strategy='noauth')
        self.config(host_ip='127.0.0.1', port=0, group='api')
        self.api = self.useFixture(openapi.ServedAPI())
        real = api_utils.conductor_host

        def delete_then_route(node):
            # NOTE: the API resolves the conductor right before its RPC:
            # deleting the row here puts a concurrent delete exactly
            # between the API's read and the conductor's lock, which a
            # real race hits only now and then.
            db_api.get_instance().destroy_node(node.id)
            return real(node)

        patcher = mock.patch.object(api_utils, 'conductor_host',
                                    autospec=True,
                                    side_effect=delete_then_route)
        patcher.start()
        self.addCleanup(patcher.stop)

    def _node(self):
        status, node = self.api.json('POST', '/v1/nodes', {
            'uuid': _UUID, 'name': 'going-away', 'driver': 'fake-hardware'})
        self.assertEqual(201, status)
        return node

    def test_every_node_rpc(self):
        requests = [
            ('PATCH', '', [{'op': 'add', 'path': '/extra/a', 'value': 1}]),
            ('DELETE', '', None),
            ('PUT', '/states/provision', {'target': 'manage'}),
            ('PUT', '/states/power', {'target': 'power on'}),
            ('PUT', '/maintenance', {'reason': 'r'}),
            ('DELETE', '/maintenance', None),
            ('PUT', '/traits', {'traits': ['CUSTOM_A']}),
            ('PUT', '/traits/CUSTOM_A', None),
            ('DELETE', '/traits', None),
            ('DELETE', '/traits/CUSTOM_A', None),
        ]
        for ident in (_UUID, 'going-away'):
            for method, suffix, body in requests:
                node = self._node()
                status, _h, data = self.api.request(
                    method, '/v1/nodes/%s%s' % (ident, suffix),
                    None if body is None else json.dumps(body), _HEADERS)
                self.assertEqual(404, status, (ident, method, suffix, data))
                fault = json.loads(json.loads(data)['error_message'])
                self.assertEqual('Node %s could not be found.' % ident,
                                 fault['faultstring'],
                                 (method, suffix, node['uuid']))


class TestAllocationDeletedMeanwhile(base.DbTestCase):
    """The same for an allocation deleted between the API's read and its
    change: "not found" by the UUID or name the client sent."""

    def setUp(self):
        super().setUp()
        self.config(transport_url='fake://', auth_strategy='noauth')
        self.config(host_ip='127.0.0.1', port=0, group='api')
        self.api = self.useFixture(openapi.ServedAPI())

    def _delete_before(self, module, name):
        real = getattr(module, name)

        def delete_then_call(*args, **kwargs):
            # NOTE: called after the API read the allocation and before
            # it writes or asks a conductor: the concurrent delete lands
            # exactly in between.
            dbapi = db_api.get_instance()
            dbapi.destroy_allocation(
                dbapi.get_allocation_by_name('going-away').id)
            return real(*args, **kwargs)

        return mock.patch.object(module, name, autospec=True,
                                 side_effect=delete_then_call)

    def _allocation(self):
        status, allocation = self.api.json('POST', '/v1/allocations', {
            'name': 'going-away', 'resource_class': 'none-such'})
        self.assertEqual(201, status)
        return allocation

    def _assert_gone(self, method, url, body, name):
        status, _h, data = self.api.request(
            method, url, None if body is None else json.dumps(body),
            _HEADERS)
        self.assertEqual(404, status, (method, url, data))
        fault = json.loads(json.loads(data)['error_message'])
        self.assertEqual('Allocation %s could not be found.' % name,
                         fault['faultstring'])

    def test_patch(self):
        for by_name in (False, True):
            allocation = self._allocation()
            ident = 'going-away' if by_name else allocation['uuid']
            with self._delete_before(allocation_api, '_patched_values'):
                self._assert_gone(
                    'PATCH', '/v1/allocations/%s' % ident,
                    [{'op': 'add', 'path': '/extra/a', 'value': 1}], ident)

    def test_delete(self):
        for by_name in (False, True):
            allocation = self._allocation()
            ident = 'going-away' if by_name else allocation['uuid']
            with self._delete_before(rpcapi.ConductorAPI,
                                     'get_random_conductor'):
                self._assert_gone('DELETE', '/v1/allocations/%s' % ident,
                                  None, ident)
