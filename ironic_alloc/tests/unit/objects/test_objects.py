"""Every change to a versioned object must come with a version bump."""

from oslo_versionedobjects import fixture

from ironic_alloc.objects import base
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests import base as test_base

# NOTE: change a line here only together with the object's VERSION (and
# its "# Version x.y: ..." comment).  The hash covers the fields and the
# remotable methods of the object; when it changes, the wire format
# changed, so older peers need obj_make_compatible() for the new version.
expected_object_fingerprints = {
    'Allocation': '1.4-c29a6295bcef31baf40e0aef338cc04c',
    'AllocationGroup': '1.0-ac00b73db41b0f6bc687d89ac7353d7e',
    'AllocationGroupNotification': '1.0-e457f1e870b64f4d06a9bb0d72e65279',
    'AllocationGroupPayload': '1.0-df7e7506d0c14201f7b0d59d13b72945',
    'AllocationCRUDNotification': '1.0-e457f1e870b64f4d06a9bb0d72e65279',
    'AllocationCRUDPayload': '1.1-3c8849932b80380bb96587ff62e8f087',
    'AllocationHoldNotification': '1.0-e457f1e870b64f4d06a9bb0d72e65279',
    'AllocationHoldPayload': '1.0-ee65677bf5454e94294b397eba574010',
    'Chassis': '1.0-c35dcce94fa3bbb43d75465b7c43d5f1',
    'Conductor': '1.0-157a8b1669d035736cbc95ecce8cf73e',
    'EventType': '1.0-e57847de66c709a4d22d41cbc86634a7',
    'Node': '1.3-3c679077b70b6ca098a0f987d30f026f',
    'NodeCRUDNotification': '1.0-e457f1e870b64f4d06a9bb0d72e65279',
    'NodeCRUDPayload': '1.15-9168946f843edd5859464aaa40ad70e0',
    'NodeMaintenanceNotification': '1.0-e457f1e870b64f4d06a9bb0d72e65279',
    'NodePayload': '1.17-4022bb737b058d426a7ff878b1875e5c',
    'NodeSetPowerStateNotification': '1.0-e457f1e870b64f4d06a9bb0d72e65279',
    'NodeSetPowerStatePayload': '1.17-bde6f731995024e718f42021e50ba7b4',
    'NodeSetProvisionStateNotification':
        '1.0-e457f1e870b64f4d06a9bb0d72e65279',
    'NodeSetProvisionStatePayload': '1.18-ac98c88d6dc8c6c924a415868f0a36e7',
    'NotificationPublisher': '1.0-df364d14575805a6ef50c2120762d2bc',
}


class TestObjectVersions(test_base.TestCase):

    def test_object_version_check(self):
        classes = base.IronicAllocObjectRegistry.obj_classes()
        checker = fixture.ObjectVersionChecker(obj_classes=classes)
        expected, actual = checker.test_hashes(expected_object_fingerprints)
        self.assertEqual(
            expected, actual,
            'Some objects changed (fields or remotable methods) without a '
            'version bump, or are missing from '
            'expected_object_fingerprints. Bump VERSION of each changed '
            'object (with a "# Version" comment and obj_make_compatible() '
            'for the removed or changed fields), then update its hash '
            'in ironic_alloc/tests/unit/objects/test_objects.py. '
            'Expected vs actual: %s vs %s' % (expected, actual))


class TestNodeBackport(test_base.TestCase):
    """What a conductor of an older release receives of a node."""

    def _primitive(self, version):
        node = node_obj.Node(
            name='n', shard='rack-a',
            parent_node='0a4c2e6f-8b1d-4f3a-9c5e-7d2b4f6a8c01',
            disable_power_off=True, instance_name='vm-1', health='OK')
        return node.obj_to_primitive(target_version=version)[
            'ironic_alloc_object.data']

    def test_1_0_has_no_shard(self):
        self.assertEqual({'name': 'n'}, self._primitive('1.0'))

    def test_1_1_has_the_shard(self):
        self.assertEqual({'name': 'n', 'shard': 'rack-a'},
                         self._primitive('1.1'))

    def test_1_2_has_the_parent(self):
        self.assertEqual(
            {'name': 'n', 'shard': 'rack-a',
             'parent_node': '0a4c2e6f-8b1d-4f3a-9c5e-7d2b4f6a8c01'},
            self._primitive('1.2'))

    def test_1_3_has_power_instance_name_and_health(self):
        self.assertEqual(
            {'name': 'n', 'shard': 'rack-a',
             'parent_node': '0a4c2e6f-8b1d-4f3a-9c5e-7d2b4f6a8c01',
             'disable_power_off': True, 'instance_name': 'vm-1',
             'health': 'OK'},
            self._primitive('1.3'))
