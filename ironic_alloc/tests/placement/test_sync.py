"""The node → resource provider sync against a real Placement, read back
through Placement's API."""

import fixtures
from oslo_utils import uuidutils

from ironic_alloc.common import exception
from ironic_alloc.common import states
from ironic_alloc.conductor.backends import placement_sync
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests.clients import fixtures as client_fixtures
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.placement import base

MANAGED = placement_sync.MANAGED_AGGREGATE


def _inventory(rc, reserved):
    return {rc: {'total': 1, 'reserved': reserved, 'min_unit': 1,
                 'max_unit': 1, 'step_size': 1, 'allocation_ratio': 1.0}}


class SyncTestCase(base.PlacementTestCase):

    def node(self, **kw):
        kw.setdefault('name', self.getUniqueString('node-'))
        return utils.make_available_node(self.context, **kw)

    def setUp(self):
        super().setUp()
        # NOTE: as a conductor runs the full pass: with what this process
        # synced before, several providers at once.
        self.synced = placement_sync.SyncedProviders()

    def sync_all(self, client=None, concurrency=3):
        return placement_sync.sync_all(self.context, client or self.client,
                                       self.synced, concurrency=concurrency)

    @staticmethod
    def count_requests(client):
        """Record (method, path) of every request ``client`` sends."""
        sent = []
        send = client.request

        def recording(method, path, *args, **kwargs):
            sent.append((method, path.split('?')[0]))
            return send(method, path, *args, **kwargs)

        client.request = recording
        return sent

    def assertProvider(self, node, inventories, traits=(), name=None):
        provider = self.provider(node.uuid)
        self.assertIsNotNone(provider, node.uuid)
        self.assertEqual(name or node.name or node.uuid, provider['name'])
        self.assertEqual(inventories, provider['inventories'])
        self.assertEqual(sorted(traits), provider['traits'])
        self.assertIn(MANAGED, provider['aggregates'])

    def candidates(self, resource_class, required=None):
        query = 'resources=%s:1' % resource_class
        if required:
            query += '&required=%s' % required
        # NOTE: what another user of Placement is offered; the backend
        # itself never asks for candidates.
        summaries = self.make_reader(self.placement).get(
            '/allocation_candidates?' + query)['provider_summaries']
        return set(summaries)


class TestFleetSync(SyncTestCase):

    def test_fleet(self):
        free = self.node(resource_class='gold',
                         traits=['CUSTOM_GPU', 'HW_CPU_X86_AVX2'])
        dashed = self.node(resource_class='baremetal-gold')
        unnamed = self.node(name=None, resource_class='gold')
        maintenance = self.node(maintenance=True, resource_class='gold')
        no_power = self.node(power_state=None, resource_class='gold')
        deployed = self.node(provision_state=states.ACTIVE,
                             instance_uuid=uuidutils.generate_uuid(),
                             resource_class='gold')
        enrolled = utils.make_node(self.context, name='enrolled',
                                   resource_class='gold')
        classless = self.node(resource_class=None)

        report = self.sync_all()

        self.assertTrue(report.ok, report)
        self.assertEqual((8, 8, 0), (report.synced, report.created,
                                     report.deleted))
        self.assertProvider(free, _inventory('CUSTOM_GOLD', 0),
                            ['CUSTOM_GPU', 'HW_CPU_X86_AVX2'])
        self.assertProvider(dashed, _inventory('CUSTOM_BAREMETAL_GOLD', 0))
        self.assertProvider(unnamed, _inventory('CUSTOM_GOLD', 0),
                            name=unnamed.uuid)
        for node in (maintenance, no_power, deployed, enrolled):
            self.assertProvider(node, _inventory('CUSTOM_GOLD', 1))
        self.assertProvider(classless, {})
        # What Placement would hand out follows: the reserved nodes are
        # never candidates, the traits select.
        self.assertEqual({free.uuid, unnamed.uuid},
                         self.candidates('CUSTOM_GOLD'))
        self.assertEqual({free.uuid},
                         self.candidates('CUSTOM_GOLD', 'CUSTOM_GPU'))
        self.assertEqual({dashed.uuid},
                         self.candidates('CUSTOM_BAREMETAL_GOLD'))

    def test_second_pass_writes_nothing(self):
        for _ in range(3):
            self.node(traits=['CUSTOM_RAID'])
        self.sync_all()
        before = self.client.get('/resource_providers')['resource_providers']
        report = self.sync_all()
        after = self.client.get('/resource_providers')['resource_providers']
        self.assertEqual((3, 0, 0), (report.synced, report.created,
                                     report.deleted))
        self.assertEqual(
            {p['uuid']: p['generation'] for p in before},
            {p['uuid']: p['generation'] for p in after})

    def test_new_providers_are_written_without_reads(self):
        nodes = [self.node(resource_class='gold', traits=['CUSTOM_RAID'])
                 for _ in range(3)]
        sent = self.count_requests(self.client)
        report = self.sync_all(concurrency=1)
        self.assertEqual((3, 3), (report.synced, report.created))
        # One listing; per provider its creation, aggregate, inventory and
        # traits; the custom class and trait made once for all.
        paths = ['/resource_providers/%s' % n.uuid for n in nodes]
        self.assertEqual(
            [('GET', '/resource_providers')]
            + [('POST', '/resource_providers'),
               ('PUT', paths[0] + '/aggregates'),
               ('PUT', '/resource_classes/CUSTOM_GOLD'),
               ('PUT', paths[0] + '/inventories'),
               ('PUT', '/traits/CUSTOM_RAID'),
               ('PUT', paths[0] + '/traits')]
            + [request for path in paths[1:] for request in (
                ('POST', '/resource_providers'),
                ('PUT', path + '/aggregates'),
                ('PUT', path + '/inventories'),
                ('PUT', path + '/traits'))],
            sent)
        for node in nodes:
            self.assertProvider(node, _inventory('CUSTOM_GOLD', 0),
                                ['CUSTOM_RAID'])

    def test_quiet_pass_reads_only_the_listing(self):
        quiet = [self.node(traits=['CUSTOM_RAID']) for _ in range(4)]
        changed = self.node()
        claimed = self.node()
        self.assertTrue(self.sync_all().ok)
        changed.maintenance = True
        changed.save()
        # A claim raises the provider's generation: it is read again (and
        # found right).
        self.client.put('/allocations/%s' % uuidutils.generate_uuid(), {
            'allocations': {claimed.uuid: {'resources': {'CUSTOM_GOLD': 1}}},
            'consumer_generation': None,
            'project_id': uuidutils.generate_uuid(),
            'user_id': uuidutils.generate_uuid(),
            'consumer_type': 'IRONIC_ALLOC'}, expected=(204,))
        sent = self.count_requests(self.client)

        report = self.sync_all()

        self.assertTrue(report.ok, report)
        self.assertEqual((6, 4, 0), (report.synced, report.unchanged,
                                     report.created))
        read = {path.split('/')[2] for method, path in sent
                if path.count('/') > 2}
        self.assertEqual({changed.uuid, claimed.uuid}, read)
        self.assertNotIn(quiet[0].uuid, str(sent))
        self.assertProvider(changed, _inventory('CUSTOM_GOLD', 1))
        self.assertProvider(claimed, _inventory('CUSTOM_GOLD', 0))

    def test_nodes_are_read_page_by_page(self):
        # NOTE: a small page instead of a thousand nodes: the paging code
        # is what is under test.
        self.useFixture(fixtures.MockPatchObject(placement_sync, '_PAGE', 2))
        nodes = [self.node() for _ in range(5)]
        report = self.sync_all()
        self.assertEqual((5, 5), (report.synced, report.created))
        self.assertEqual({n.uuid for n in nodes}, self.provider_uuids())

    def test_sync_node(self):
        node = self.node(traits=['CUSTOM_A'])
        report = placement_sync.sync_node(self.context, self.client,
                                          node.uuid)
        self.assertEqual((1, 1), (report.synced, report.created))
        self.assertProvider(node, _inventory('CUSTOM_GOLD', 0), ['CUSTOM_A'])

        node.instance_uuid = uuidutils.generate_uuid()
        node.save()
        node.set_traits(['CUSTOM_B'])
        placement_sync.sync_node(self.context, self.client, node.uuid)
        self.assertProvider(node, _inventory('CUSTOM_GOLD', 1), ['CUSTOM_B'])

        node.destroy()
        report = placement_sync.sync_node(self.context, self.client,
                                          node.uuid)
        self.assertEqual(1, report.deleted)
        self.assertIsNone(self.provider(node.uuid))

    def test_sync_node_of_a_provider_synced_before(self):
        # A provider this process made match its node exists and is ours:
        # a sync of the node reads only its inventory and traits.
        node = self.node(traits=['CUSTOM_A'])
        self.assertTrue(self.sync_all().ok)
        node.maintenance = True
        node.save()
        sent = self.count_requests(self.client)
        report = placement_sync.sync_node(self.context, self.client,
                                          node.uuid, self.synced)
        self.assertTrue(report.ok, report)
        path = '/resource_providers/%s' % node.uuid
        self.assertEqual([('GET', path + '/inventories'),
                          ('PUT', path + '/inventories'),
                          ('GET', path + '/traits')], sent)
        self.assertProvider(node, _inventory('CUSTOM_GOLD', 1), ['CUSTOM_A'])

    def test_sync_node_of_a_provider_deleted_behind_our_back(self):
        node = self.node(traits=['CUSTOM_A'])
        self.assertTrue(self.sync_all().ok)
        self.client.delete('/resource_providers/%s' % node.uuid)
        report = placement_sync.sync_node(self.context, self.client,
                                          node.uuid, self.synced)
        self.assertTrue(report.ok, report)
        self.assertProvider(node, _inventory('CUSTOM_GOLD', 0), ['CUSTOM_A'])

    def test_sync_node_writes_again_what_changed_meanwhile(self):
        node = self.node()
        self.assertTrue(self.sync_all().ok)
        node.maintenance = True
        node.save()
        other_conductor = self.make_client(self.placement)
        put = self.client.put
        changed = []

        def put_after_a_change(path, body=None, expected=(200,)):
            # NOTE: between our read of the node and our write, another
            # conductor takes the node out of maintenance and syncs it
            # (Placement already shows reserved = 0: it writes nothing).
            if path.endswith('/inventories') and not changed:
                changed.append(path)
                fresh = node_obj.Node.get_by_uuid(self.context, node.uuid)
                fresh.maintenance = False
                fresh.save()
                self.assertTrue(placement_sync.sync_node(
                    self.context, other_conductor, node.uuid).ok)
            return put(path, body, expected=expected)

        self.client.put = put_after_a_change
        report = placement_sync.sync_node(self.context, self.client,
                                          node.uuid, self.synced)
        self.assertTrue(report.ok, report)
        self.assertEqual(1, len(changed))
        # Our write of the older state (reserved) did land; the node was
        # read again and its newer state written.
        self.assertProvider(node, _inventory('CUSTOM_GOLD', 0))

    def test_name_taken_by_a_provider_not_ours(self):
        foreign = self.client.post('/resource_providers',
                                   {'name': 'compute-1'})
        node = self.node(name='compute-1')
        report = self.sync_all()
        self.assertTrue(report.ok, report)
        self.assertProvider(node, _inventory('CUSTOM_GOLD', 0),
                            name=node.uuid)
        # A full pass deletes only providers it made.
        self.assertIn(foreign['uuid'], self.provider_uuids())

    def test_placement_unavailable(self):
        node = self.node()
        client = self.make_client(
            self.placement,
            endpoint='http://127.0.0.1:%d' % client_fixtures.free_port())
        report = placement_sync.sync_node(self.context, client, node.uuid)
        self.assertEqual([node.uuid], list(report.errors))
        self.assertIn('Placement is unavailable', report.errors[node.uuid])
        self.assertRaises(exception.PlacementUnavailable,
                          self.sync_all, client)
        # Once Placement answers, the next pass repairs everything.
        self.assertTrue(self.sync_all().ok)
        self.assertProvider(node, _inventory('CUSTOM_GOLD', 0))


class TestCollisions(SyncTestCase):

    def test_classes_that_normalise_alike_are_refused(self):
        dashed = self.node(resource_class='baremetal-gold')
        dotted = self.node(resource_class='baremetal.gold')
        upper = self.node(resource_class='BAREMETAL_GOLD')
        fine = self.node(resource_class='baremetal-silver')

        report = self.sync_all()

        self.assertEqual(1, len(report.collisions))
        collision = report.collisions[0]
        self.assertIsInstance(collision, exception.ResourceClassCollision)
        message = str(collision)
        for node in (dashed, dotted, upper):
            self.assertIn(node.uuid, message)
        self.assertIn('BAREMETAL_GOLD, baremetal-gold, baremetal.gold',
                      message)
        self.assertIn('CUSTOM_BAREMETAL_GOLD', message)
        self.assertNotIn(fine.uuid, message)
        # The colliding nodes are never offered under a class that is not
        # theirs; the others are unaffected.
        for node in (dashed, dotted, upper):
            self.assertProvider(node, {})
        self.assertProvider(fine, _inventory('CUSTOM_BAREMETAL_SILVER', 0))
        self.assertEqual(4, report.synced)

        # Renaming all but one ends the collision.
        for node in (dotted, upper):
            node.resource_class = 'baremetal-bronze'
            node.save()
        report = placement_sync.sync_node(self.context, self.client,
                                          dashed.uuid)
        self.assertEqual([], report.collisions)
        self.assertProvider(dashed, _inventory('CUSTOM_BAREMETAL_GOLD', 0))


class TestDrift(SyncTestCase):

    def test_periodic_resync_repairs_drift(self):
        to_maintain = self.node(traits=['CUSTOM_A'])
        to_retrait = self.node(traits=['CUSTOM_A', 'CUSTOM_B'])
        to_delete = self.node()
        to_reclass = self.node()
        to_rename = self.node()
        to_allocate = self.node()
        lost_in_placement = self.node()
        tampered_in_placement = self.node(traits=['CUSTOM_A'])
        renamed_in_placement = self.node()
        self.assertTrue(self.sync_all().ok)

        # Behind the sync's back, in our database...
        to_maintain.maintenance = True
        to_maintain.save()
        to_retrait.set_traits(['CUSTOM_C'])
        to_delete.destroy()
        to_reclass.resource_class = 'silver'
        to_reclass.save()
        to_rename.name = self.getUniqueString('renamed-')
        to_rename.save()
        to_allocate.instance_uuid = uuidutils.generate_uuid()
        to_allocate.provision_state = states.ACTIVE
        to_allocate.save()
        # ...and in Placement.
        self.client.delete('/resource_providers/%s'
                           % lost_in_placement.uuid)
        path = '/resource_providers/%s/traits' % tampered_in_placement.uuid
        current = self.client.get(path)
        self.client.put(path, {
            'traits': ['CUSTOM_A', 'HW_CPU_X86_SSE'],
            'resource_provider_generation':
                current['resource_provider_generation']})
        self.client.put('/resource_providers/%s' % renamed_in_placement.uuid,
                        {'name': self.getUniqueString('foreign-')})

        report = self.sync_all()

        self.assertTrue(report.ok, report)
        self.assertEqual((8, 1, 1), (report.synced, report.created,
                                     report.deleted))
        self.assertProvider(renamed_in_placement,
                            _inventory('CUSTOM_GOLD', 0))
        self.assertProvider(to_maintain, _inventory('CUSTOM_GOLD', 1),
                            ['CUSTOM_A'])
        self.assertProvider(to_retrait, _inventory('CUSTOM_GOLD', 0),
                            ['CUSTOM_C'])
        self.assertIsNone(self.provider(to_delete.uuid))
        self.assertProvider(to_reclass, _inventory('CUSTOM_SILVER', 0))
        self.assertProvider(to_rename, _inventory('CUSTOM_GOLD', 0),
                            name=to_rename.name)
        self.assertProvider(to_allocate, _inventory('CUSTOM_GOLD', 1))
        self.assertProvider(lost_in_placement, _inventory('CUSTOM_GOLD', 0))
        self.assertProvider(tampered_in_placement,
                            _inventory('CUSTOM_GOLD', 0), ['CUSTOM_A'])

    def test_deleted_node_provider_waits_for_its_claim(self):
        node = self.node()
        self.sync_all()
        consumer = uuidutils.generate_uuid()
        self.client.put('/allocations/%s' % consumer, {
            'allocations': {node.uuid: {'resources': {'CUSTOM_GOLD': 1}}},
            'consumer_generation': None,
            'project_id': uuidutils.generate_uuid(),
            'user_id': uuidutils.generate_uuid(),
            'consumer_type': 'IRONIC_ALLOC'}, expected=(204,))
        node_obj.Node.get_by_uuid(self.context, node.uuid).destroy()

        report = self.sync_all()
        self.assertEqual([node.uuid], list(report.errors))
        self.assertIsNotNone(self.provider(node.uuid))

        self.client.delete('/allocations/%s' % consumer)
        report = self.sync_all()
        self.assertTrue(report.ok, report)
        self.assertEqual(1, report.deleted)
        self.assertIsNone(self.provider(node.uuid))
