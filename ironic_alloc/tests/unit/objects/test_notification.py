"""Notification payloads: Ironic's fields, filled from their source."""

import datetime

from ironic_alloc.common import notifications
from ironic_alloc.objects import allocation as allocation_obj
from ironic_alloc.objects import node as node_obj
from ironic_alloc.objects import notification
from ironic_alloc.tests import base

IRONIC_ALLOCATION_FIELDS = {
    'uuid', 'name', 'node_uuid', 'state', 'last_error', 'owner',
    'resource_class', 'traits', 'candidate_nodes', 'extra', 'created_at',
    'updated_at'}


def _allocation(**kw):
    values = dict(id=7, uuid='5fcd2e5b-5d0b-4a4d-9c4b-9f1e6a6d8a11',
                  name='web-1', state='active', owner='p1',
                  last_error=None, resource_class='gold', traits=['CUSTOM_A'],
                  candidate_nodes=[], extra={'k': 'v'}, kind='reservation',
                  instance_uuid=None,
                  expires_at=datetime.datetime(2030, 1, 1),
                  created_at=datetime.datetime(2026, 1, 1),
                  updated_at=None)
    values.update(kw)
    return allocation_obj.Allocation(**values)


class TestPayloads(base.TestCase):

    def test_ironic_payload_has_ironics_fields(self):
        self.assertEqual(IRONIC_ALLOCATION_FIELDS,
                         set(allocation_obj.AllocationCRUDPayload.fields))
        payload = allocation_obj.AllocationCRUDPayload(
            _allocation(), node_uuid='1be26c0b-03f2-4d2e-ae87-c02d7f33c123')
        self.assertTrue(payload.populated)
        primitive = payload.obj_to_primitive()
        self.assertEqual('AllocationCRUDPayload',
                         primitive['ironic_object.name'])
        self.assertEqual('ironic', primitive['ironic_object.namespace'])
        data = primitive['ironic_object.data']
        self.assertEqual('web-1', data['name'])
        self.assertEqual('1be26c0b-03f2-4d2e-ae87-c02d7f33c123',
                         data['node_uuid'])
        self.assertEqual(['CUSTOM_A'], data['traits'])
        self.assertNotIn('kind', data)

    def test_hold_payload_adds_the_hold_fields(self):
        payload = allocation_obj.AllocationHoldPayload(_allocation())
        self.assertEqual(
            IRONIC_ALLOCATION_FIELDS | {'kind', 'instance_uuid',
                                        'expires_at'},
            set(payload.fields))
        self.assertEqual('reservation', payload.kind)
        self.assertEqual(datetime.datetime(2030, 1, 1, tzinfo=datetime.
                                           timezone.utc),
                         payload.expires_at)

    def test_fields_not_set_yet_are_null(self):
        new = allocation_obj.Allocation(uuid='5fcd2e5b-5d0b-4a4d-9c4b-'
                                             '9f1e6a6d8a11',
                                        resource_class='gold')
        payload = allocation_obj.AllocationCRUDPayload(new)
        self.assertIsNone(payload.created_at)
        self.assertIsNone(payload.name)
        self.assertEqual('gold', payload.resource_class)

    def test_unpopulated_payload_is_refused(self):
        self.config(notification_level='debug')
        payload = allocation_obj.AllocationCRUDPayload.__new__(
            allocation_obj.AllocationCRUDPayload)
        notification.NotificationPayloadBase.__init__(payload)
        note = allocation_obj.AllocationCRUDNotification(
            level='info',
            event_type=notification.EventType(object='allocation',
                                              action='create',
                                              status='start'),
            publisher=notification.publisher(notifications.API_SERVICE),
            payload=payload)
        self.assertRaises(ValueError, note.emit, None)

    def test_event_type_names(self):
        event = notification.EventType(object='allocation', action='create',
                                       status='end')
        crud = allocation_obj.AllocationCRUDNotification(event_type=event)
        own = allocation_obj.AllocationHoldNotification(event_type=event)
        self.assertEqual('baremetal.allocation.create.end',
                         crud.event_type_name())
        self.assertEqual('ironic_alloc.allocation.create.end',
                         own.event_type_name())
        self.assertRaises(ValueError, notification.EventType,
                          object='allocation', action='create',
                          status='later')


class TestNodePayloads(base.TestCase):

    def _node(self):
        return node_obj.Node(
            uuid='1be26c0b-03f2-4d2e-ae87-c02d7f33c123', name='n1',
            driver='fake-hardware', traits=['CUSTOM_A'],
            interfaces={'power_interface': 'fake', 'firmware_interface': 'x'},
            driver_info={'ipmi_password': 'hidden', 'ipmi_user': 'u'},
            instance_info={'image_source': 'img'}, maintenance=False)

    def test_crud_payload_masks_secrets(self):
        payload = node_obj.NodeCRUDPayload(self._node())
        self.assertEqual({'ipmi_password': '******', 'ipmi_user': 'u'},
                         payload.driver_info)
        self.assertEqual({'image_source': 'img'}, payload.instance_info)
        self.assertEqual('fake', payload.power_interface)
        self.assertNotIn('firmware_interface', payload.fields)
        self.assertEqual(['CUSTOM_A'], payload.traits)
        # Not set on the node yet: null.
        self.assertIsNone(payload.created_at)

    def test_provision_payload(self):
        payload = node_obj.NodeSetProvisionStatePayload(
            self._node(), 'enroll', None, 'manage')
        self.assertEqual('manage', payload.event)
        self.assertEqual('enroll', payload.previous_provision_state)
        self.assertIsNone(payload.previous_target_provision_state)
        self.assertEqual('1.18', payload.VERSION)

    def test_disable_power_off(self):
        # Ironic's NodePayload 1.17 field, in every node payload.
        node = self._node()
        node.disable_power_off = True
        payloads = [node_obj.NodePayload(node),
                    node_obj.NodeCRUDPayload(node),
                    node_obj.NodeSetPowerStatePayload(node, 'power off'),
                    node_obj.NodeSetProvisionStatePayload(
                        node, 'enroll', None, 'manage')]
        self.assertEqual([True] * 4,
                         [p.disable_power_off for p in payloads])
        self.assertEqual(['1.17', '1.15', '1.17', '1.18'],
                         [p.VERSION for p in payloads])
        node.disable_power_off = False
        self.assertIs(False,
                      node_obj.NodePayload(node).disable_power_off)


class TestLevels(base.TestCase):

    def test_off_by_default(self):
        for level in notifications.LEVELS:
            self.assertFalse(notifications.enabled(level))

    def test_threshold(self):
        self.config(notification_level='warning')
        self.assertEqual([False, False, True, True, True],
                         [notifications.enabled(level)
                          for level in notifications.LEVELS])
