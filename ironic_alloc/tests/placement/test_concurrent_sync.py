"""Several sync passes at once against Placement on PostgreSQL with
several workers: their writes race on the same providers, and every pass
ends with Placement matching the nodes."""

import threading

from ironic_alloc.conductor.backends import placement_sync
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.placement import base

NODES = 12
PASSES = 3


class TestConcurrentSync(base.PlacementTestCase):

    def setUp(self):
        super().setUp()
        self.server = self.start_placement('postgresql')

    def _race(self):
        """PASSES full passes at once, each with a client of its own."""
        clients = [self.make_client(self.server) for _ in range(PASSES)]
        reports = [None] * PASSES
        failures = []
        start = threading.Barrier(PASSES)

        def run(index):
            start.wait()
            try:
                reports[index] = placement_sync.sync_all(self.context,
                                                         clients[index])
            except Exception as exc:
                failures.append(exc)

        threads = [threading.Thread(target=run, args=(i,))
                   for i in range(PASSES)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual([], failures)
        for report in reports:
            self.assertTrue(report.ok, report)
            self.assertEqual(NODES, report.synced)
        return reports

    def test_concurrent_passes_converge(self):
        client = self.make_client(self.server)
        nodes = [utils.make_available_node(
            self.context, name='race-%d' % i,
            traits=['CUSTOM_RACE_%d' % (i % 3)]) for i in range(NODES)]
        reports = self._race()
        # Each provider was created by exactly one of the passes.
        self.assertEqual(NODES, sum(r.created for r in reports))

        for i, node in enumerate(nodes):
            node.set_traits(['CUSTOM_RACE_%d' % (i % 5), 'CUSTOM_AFTER'])
            if i % 2:
                node.maintenance = True
                node.save()
        self._race()

        for i, node in enumerate(nodes):
            provider = self.provider(node.uuid, client)
            self.assertEqual(
                sorted(['CUSTOM_RACE_%d' % (i % 5), 'CUSTOM_AFTER']),
                provider['traits'])
            self.assertEqual(i % 2, provider['inventories'][
                'CUSTOM_GOLD']['reserved'])
            self.assertEqual([placement_sync.MANAGED_AGGREGATE],
                             provider['aggregates'])
