"""Bare Metal API 1.110: aborting a deployment waiting in "wait call-back".

No fake deployment waits for a ramdisk, so the node is written in that
state directly; the abort goes through the real API and conductor.
"""

import time

from ironic_alloc.common import states
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import openapi


class TestDeployWaitAbort(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.config(transport_url='fake://', auth_strategy='noauth')
        self.config(host_ip='127.0.0.1', port=0, group='api')
        self.api = self.useFixture(openapi.ServedAPI())
        self.node = utils.make_node(self.context, name='waiting',
                                    provision_state=states.DEPLOYWAIT,
                                    target_provision_state=states.ACTIVE,
                                    power_state=states.POWER_ON)

    def _abort(self, version):
        return self.api.json('PUT', '/v1/nodes/waiting/states/provision',
                             {'target': 'abort'}, version=version)

    def test_refused_before_1_110(self):
        status, body = self._abort('1.109')
        self.assertEqual(406, status, body)
        self.assertIn('requires API version 1.110', body['error_message'])
        self.node.refresh()
        self.assertEqual(states.DEPLOYWAIT, self.node.provision_state)

    def test_aborted_from_1_110(self):
        status, body = self._abort('1.110')
        self.assertEqual(202, status, body)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            node = node_obj.Node.get_by_uuid(self.context, self.node.uuid)
            if node.reservation is None and \
                    node.provision_state == states.DEPLOYFAIL:
                break
            time.sleep(0.02)
        self.assertEqual(states.DEPLOYFAIL, node.provision_state)
        self.assertIsNone(node.target_provision_state)
