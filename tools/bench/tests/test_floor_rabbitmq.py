"""``python -m tools.bench floor`` with RabbitMQ: the cast part.

A sender process casts to an RPC server in the command's process through
the broker and on the database of the multi-process tier
(tools/test-multiprocess-setup.sh; without them the test skips, or fails
with CI=true).  It takes that tier's lock: its tests restart the broker.
"""

import fixtures
from oslotest import base as oslo_base

from ironic_alloc.tests.multiprocess import fixtures as mp
from tools.bench.tests import test_floor as floor_test


class TestFloorWithABroker(oslo_base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(240, gentle=True))
        mp.enter_tier(self)

    def test_cast_to_an_endpoint_that_does_nothing(self):
        document = floor_test.run_floor(
            self, ['[DEFAULT]', 'transport_url = %s' % mp.transport_url(),
                   '[database]', 'connection = %s' % mp.db_url()],
            extra_args=['--cpu-group', 'broker=beam'])
        parts = {part['name']: part for part in document['parts']}
        for name in ('http', 'http_api', 'cast', 'read', 'write'):
            floor_test.assert_measured(self, parts[name])
        self.assertGreater(parts['cast']['server'], 0)
        self.assertIn('broker', parts['cast']['groups'])
        floor_test.assert_scratch_table_gone(self, mp.db_url())
