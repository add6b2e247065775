from oslo_utils import versionutils

from ironic_alloc.common import notifications
from ironic_alloc.db import api as db_api
from ironic_alloc.objects import base
from ironic_alloc.objects import fields
from ironic_alloc.objects import notification

# Hardware interface fields of the Bare Metal API.  They are stored in one
# JSON column: nothing acts on them since no hardware is driven here.
INTERFACE_FIELDS = ('bios_interface', 'boot_interface', 'console_interface',
                    'deploy_interface', 'firmware_interface',
                    'inspect_interface', 'management_interface',
                    'network_interface', 'power_interface', 'raid_interface',
                    'rescue_interface', 'storage_interface',
                    'vendor_interface')

# The interface a node of a driver has when none was set (or it was
# removed or reset), as Ironic resolves it from the hardware type: the fake
# interfaces, and the "no" interfaces of the features refused here.
DEFAULT_INTERFACES = {
    'fake-hardware': {
        'bios_interface': 'fake',
        'boot_interface': 'fake',
        'console_interface': 'fake',
        'deploy_interface': 'fake',
        'firmware_interface': 'no-firmware',
        'inspect_interface': 'fake',
        'management_interface': 'fake',
        'network_interface': 'noop',
        'power_interface': 'fake',
        'raid_interface': 'fake',
        'rescue_interface': 'no-rescue',
        'storage_interface': 'noop',
        'vendor_interface': 'fake',
    },
}


@base.IronicAllocObjectRegistry.register
class Node(base.IronicAllocObject):
    # Version 1.0: Initial version
    # Version 1.1: shard (Bare Metal API 1.82)
    # Version 1.2: parent_node (Bare Metal API 1.83)
    # Version 1.3: disable_power_off (1.95), instance_name (1.104), health
    #              (1.109)
    VERSION = '1.3'

    dbapi = db_api.get_instance()

    fields = {
        'id': fields.IntegerField(),
        'uuid': fields.UUIDField(),
        'name': fields.StringField(nullable=True),
        'driver': fields.StringField(),
        'resource_class': fields.StringField(nullable=True),
        'description': fields.StringField(nullable=True),
        'properties': fields.FlexibleDictField(nullable=True),
        'extra': fields.FlexibleDictField(nullable=True),
        'driver_info': fields.FlexibleDictField(nullable=True),
        'driver_internal_info': fields.FlexibleDictField(nullable=True),
        'instance_info': fields.FlexibleDictField(nullable=True),
        'instance_uuid': fields.UUIDField(nullable=True),
        'interfaces': fields.FlexibleDictField(nullable=True),
        'chassis_uuid': fields.UUIDField(nullable=True),
        'provision_state': fields.StringField(nullable=True),
        'target_provision_state': fields.StringField(nullable=True),
        'provision_updated_at': fields.DateTimeField(nullable=True),
        'power_state': fields.StringField(nullable=True),
        'target_power_state': fields.StringField(nullable=True),
        'maintenance': fields.BooleanField(),
        'maintenance_reason': fields.StringField(nullable=True),
        'fault': fields.StringField(nullable=True),
        'last_error': fields.StringField(nullable=True),
        'reservation': fields.StringField(nullable=True),
        'conductor_affinity': fields.IntegerField(nullable=True),
        'conductor_group': fields.StringField(),
        'owner': fields.StringField(nullable=True),
        'lessee': fields.StringField(nullable=True),
        'protected': fields.BooleanField(),
        'protected_reason': fields.StringField(nullable=True),
        'retired': fields.BooleanField(),
        'retired_reason': fields.StringField(nullable=True),
        'automated_clean': fields.BooleanField(nullable=True),
        'console_enabled': fields.BooleanField(),
        'raid_config': fields.FlexibleDictField(nullable=True),
        'target_raid_config': fields.FlexibleDictField(nullable=True),
        'clean_step': fields.FlexibleDictField(nullable=True),
        'deploy_step': fields.FlexibleDictField(nullable=True),
        'network_data': fields.FlexibleDictField(nullable=True),
        'boot_mode': fields.StringField(nullable=True),
        'secure_boot': fields.BooleanField(nullable=True),
        'inspection_started_at': fields.DateTimeField(nullable=True),
        'inspection_finished_at': fields.DateTimeField(nullable=True),
        'allocation_id': fields.IntegerField(nullable=True),
        'shard': fields.StringField(nullable=True),
        'parent_node': fields.UUIDField(nullable=True),
        'disable_power_off': fields.BooleanField(),
        'instance_name': fields.StringField(nullable=True),
        'health': fields.StringField(nullable=True),
        'traits': fields.ListOfStringsField(),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        version = versionutils.convert_version_to_tuple(target_version)
        if version < (1, 3):
            for name in ('disable_power_off', 'instance_name', 'health'):
                primitive.pop(name, None)
        if version < (1, 2):
            primitive.pop('parent_node', None)
        if version < (1, 1):
            primitive.pop('shard', None)

    @classmethod
    def _from_db_object(cls, context, obj, db_object, skip=()):
        obj = super()._from_db_object(context, obj, db_object,
                                      skip=('traits',))
        obj.traits = sorted(t.trait for t in db_object.traits)
        obj.obj_reset_changes(['traits'])
        return obj

    # Reads

    @classmethod
    def get_by_id(cls, context, node_id):
        return cls._from_db_object(context, cls(),
                                   cls.dbapi.get_node_by_id(node_id))

    @classmethod
    def get_by_uuid(cls, context, uuid):
        return cls._from_db_object(context, cls(),
                                   cls.dbapi.get_node_by_uuid(uuid))

    @classmethod
    def get_by_name(cls, context, name):
        return cls._from_db_object(context, cls(),
                                   cls.dbapi.get_node_by_name(name))

    @classmethod
    def get_by_instance_uuid(cls, context, instance_uuid):
        return cls._from_db_object(
            context, cls(), cls.dbapi.get_node_by_instance(instance_uuid))

    @classmethod
    def list(cls, context, filters=None, limit=None, marker=None,
             sort_key=None, sort_dir=None):
        """One page of nodes; ``marker`` is a node id (see db.api)."""
        return cls._from_db_object_list(
            context, cls.dbapi.get_node_list(
                filters=filters, limit=limit, marker=marker,
                sort_key=sort_key, sort_dir=sort_dir))

    @classmethod
    def uuids_by_id(cls, context, ids):
        """{id: uuid} for the given node ids, in one query."""
        return cls.dbapi.get_node_uuids(ids)

    @classmethod
    def shard_counts(cls, context):
        """[(shard, number of nodes)], None for the nodes without one."""
        return cls.dbapi.get_shard_counts()

    @classmethod
    def resource_classes(cls, context):
        """The distinct resource classes of all nodes, in one query."""
        return cls.dbapi.get_node_resource_classes()

    # Writes

    def create(self, context=None):
        """Insert this node (with its traits).

        :raises: NodeAlreadyExists, DuplicateName, InstanceAssociated.
        """
        values = self.obj_get_changes()
        db_node = self.dbapi.create_node(values)
        self._from_db_object(context or self._context, self, db_node)

    def save(self, context=None):
        """Write changed fields (not traits: see set_traits).

        :raises: NodeNotFound, DuplicateName, InstanceAssociated.
        """
        values = self.obj_get_changes()
        values.pop('traits', None)
        values.pop('updated_at', None)
        if not values:
            return
        db_node = self.dbapi.update_node(self.id, values)
        self._from_db_object(context or self._context, self, db_node)

    def begin_deploy(self, host, values, check):
        """Write the start of a deploy (``values``) to this node, locked
        by ``host``, and end the lease of its hold, in one transaction;
        see db.api.Connection.begin_deploy for ``check``.

        :raises: NodeNotFound, NodeLocked, NodeChanged, what ``check``
            raises.
        """
        db_node = self.dbapi.begin_deploy(self.id, host, values, check)
        self._from_db_object(self._context, self, db_node)

    def destroy(self):
        self.dbapi.destroy_node(self.id)
        self.obj_reset_changes()

    def refresh(self, context=None):
        current = self.get_by_id(context or self._context, self.id)
        for field in self.fields:
            self[field] = current[field]
        self.obj_reset_changes()

    def set_traits(self, traits):
        self.dbapi.set_node_traits(self.id, traits)
        self.refresh()

    def add_trait(self, trait):
        self.dbapi.add_node_trait(self.id, trait)
        self.refresh()

    def remove_trait(self, trait):
        self.dbapi.delete_node_trait(self.id, trait)
        self.refresh()

    # Locks: ``reservation`` holds the hostname of the conductor changing
    # the node; taking it is one conditional UPDATE.

    @classmethod
    def reserve(cls, context, tag, node_id):
        """Lock a node for conductor ``tag``.

        :returns: the locked node.
        :raises: NodeLocked, NodeNotFound.
        """
        return cls._from_db_object(context, cls(),
                                   cls.dbapi.reserve_node(tag, node_id))

    def release(self, tag, values=None):
        """Unlock the node, writing ``values`` in the same UPDATE.

        :returns: False when the lock was no longer ours.
        """
        return self.dbapi.release_node(tag, self.id, values)

    @classmethod
    def release_dead_reservations(cls, timeout, abandoned_states,
                                  hostname=None):
        """See db.api.Connection.release_dead_reservations."""
        return cls.dbapi.release_dead_reservations(
            timeout, abandoned_states, hostname=hostname)

    def get_interface(self, name):
        return (self.interfaces or {}).get(name)


@base.IronicAllocObjectRegistry.register
class NodePayload(notification.NotificationPayloadBase):
    """Ironic's NodePayload 1.17: every field of it, the hardware
    interfaces read from the node's ``interfaces``."""
    # Version 1.16: Ironic's NodePayload 1.16
    # Version 1.17: Ironic's NodePayload 1.17 (disable_power_off)
    VERSION = '1.17'

    SCHEMA = {name: ('node', name) for name in (
        'clean_step', 'conductor_group', 'console_enabled', 'created_at',
        'deploy_step', 'disable_power_off', 'description', 'driver', 'extra', 'boot_mode',
        'secure_boot', 'inspection_finished_at', 'inspection_started_at',
        'instance_uuid', 'last_error', 'maintenance', 'maintenance_reason',
        'fault', 'name', 'owner', 'lessee', 'power_state', 'properties',
        'protected', 'protected_reason', 'provision_state',
        'provision_updated_at', 'resource_class', 'retired',
        'retired_reason', 'target_power_state', 'target_provision_state',
        'traits', 'updated_at', 'uuid')}

    fields = dict({
        'clean_step': fields.FlexibleDictField(nullable=True),
        'conductor_group': fields.StringField(nullable=True),
        'console_enabled': fields.BooleanField(nullable=True),
        'created_at': fields.DateTimeField(nullable=True),
        'deploy_step': fields.FlexibleDictField(nullable=True),
        'description': fields.StringField(nullable=True),
        'disable_power_off': fields.BooleanField(nullable=True),
        'driver': fields.StringField(nullable=True),
        'extra': fields.FlexibleDictField(nullable=True),
        'boot_mode': fields.StringField(nullable=True),
        'secure_boot': fields.BooleanField(nullable=True),
        'inspection_finished_at': fields.DateTimeField(nullable=True),
        'inspection_started_at': fields.DateTimeField(nullable=True),
        'instance_uuid': fields.UUIDField(nullable=True),
        'last_error': fields.StringField(nullable=True),
        'maintenance': fields.BooleanField(nullable=True),
        'maintenance_reason': fields.StringField(nullable=True),
        'fault': fields.StringField(nullable=True),
        'name': fields.StringField(nullable=True),
        'owner': fields.StringField(nullable=True),
        'lessee': fields.StringField(nullable=True),
        'power_state': fields.StringField(nullable=True),
        'properties': fields.FlexibleDictField(nullable=True),
        'protected': fields.BooleanField(nullable=True),
        'protected_reason': fields.StringField(nullable=True),
        'provision_state': fields.StringField(nullable=True),
        'provision_updated_at': fields.DateTimeField(nullable=True),
        'resource_class': fields.StringField(nullable=True),
        'retired': fields.BooleanField(nullable=True),
        'retired_reason': fields.StringField(nullable=True),
        'target_power_state': fields.StringField(nullable=True),
        'target_provision_state': fields.StringField(nullable=True),
        'traits': fields.ListOfStringsField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
        'uuid': fields.UUIDField(),
    }, **{name: fields.StringField(nullable=True)
          for name in INTERFACE_FIELDS if name != 'firmware_interface'})

    def __init__(self, node, **kwargs):
        super().__init__(**kwargs)
        self.populate_schema(node=node)
        interfaces = (node.interfaces or {}) \
            if node.obj_attr_is_set('interfaces') else {}
        for name in INTERFACE_FIELDS:
            if name in self.fields:
                setattr(self, name, interfaces.get(name))
        if self.traits is None:
            self.traits = []


@base.IronicAllocObjectRegistry.register
class NodeCRUDPayload(NodePayload):
    """Ironic's NodeCRUDPayload 1.15: with the chassis, instance_info and
    driver_info (its secrets masked)."""
    # Version 1.14: Ironic's NodeCRUDPayload 1.14
    # Version 1.15: Ironic's NodeCRUDPayload 1.15 (NodePayload 1.17)
    VERSION = '1.15'

    SCHEMA = dict(NodePayload.SCHEMA,
                  instance_info=('node', 'instance_info'),
                  chassis_uuid=('node', 'chassis_uuid'))

    fields = {
        'chassis_uuid': fields.UUIDField(nullable=True),
        'instance_info': fields.FlexibleDictField(nullable=True),
        'driver_info': fields.FlexibleDictField(nullable=True),
    }

    def __init__(self, node):
        super().__init__(node)
        info = node.driver_info if node.obj_attr_is_set('driver_info') \
            else None
        self.driver_info = notification.mask_secrets(info)
        self.instance_info = notification.mask_secrets(self.instance_info)


@base.IronicAllocObjectRegistry.register
class NodeSetPowerStatePayload(NodePayload):
    """Ironic's NodeSetPowerStatePayload 1.17."""
    # Version 1.16: Ironic's NodeSetPowerStatePayload 1.16
    # Version 1.17: Ironic's NodeSetPowerStatePayload 1.17 (NodePayload
    #               1.17)
    VERSION = '1.17'

    fields = {
        'to_power': fields.StringField(nullable=True),
    }

    def __init__(self, node, to_power):
        super().__init__(node, to_power=to_power)


@base.IronicAllocObjectRegistry.register
class NodeSetProvisionStatePayload(NodePayload):
    """Ironic's NodeSetProvisionStatePayload 1.18."""
    # Version 1.17: Ironic's NodeSetProvisionStatePayload 1.17
    # Version 1.18: Ironic's NodeSetProvisionStatePayload 1.18 (NodePayload
    #               1.17)
    VERSION = '1.18'

    SCHEMA = dict(NodePayload.SCHEMA,
                  instance_info=('node', 'instance_info'),
                  driver_internal_info=('node', 'driver_internal_info'))

    fields = {
        'instance_info': fields.FlexibleDictField(nullable=True),
        'driver_internal_info': fields.FlexibleDictField(nullable=True),
        'event': fields.StringField(nullable=True),
        'previous_provision_state': fields.StringField(nullable=True),
        'previous_target_provision_state': fields.StringField(nullable=True),
    }

    def __init__(self, node, prev_state, prev_target, event):
        super().__init__(node, event=event,
                         previous_provision_state=prev_state,
                         previous_target_provision_state=prev_target)
        self.instance_info = notification.mask_secrets(self.instance_info)


def _notification_class(name, payload):
    cls = type(name, (notification.NotificationBase,), {
        'VERSION': '1.0',
        'fields': {'payload': fields.ObjectField(payload)},
        '__doc__': 'Ironic\'s %s 1.0.' % name,
    })
    return base.IronicAllocObjectRegistry.register(cls)


NodeCRUDNotification = _notification_class('NodeCRUDNotification',
                                           'NodeCRUDPayload')
NodeMaintenanceNotification = _notification_class(
    'NodeMaintenanceNotification', 'NodePayload')
NodeSetPowerStateNotification = _notification_class(
    'NodeSetPowerStateNotification', 'NodeSetPowerStatePayload')
NodeSetProvisionStateNotification = _notification_class(
    'NodeSetProvisionStateNotification', 'NodeSetProvisionStatePayload')

_EVENTS = {
    'create': (NodeCRUDNotification, NodeCRUDPayload),
    'update': (NodeCRUDNotification, NodeCRUDPayload),
    'delete': (NodeCRUDNotification, NodeCRUDPayload),
    'maintenance_set': (NodeMaintenanceNotification, NodePayload),
    'power_set': (NodeSetPowerStateNotification, NodeSetPowerStatePayload),
    'provision_set': (NodeSetProvisionStateNotification,
                      NodeSetProvisionStatePayload),
}


def notify(context, node, action, status, service, **payload_args):
    """Send Ironic's ``baremetal.node.<action>.<status>`` about ``node``
    (when its level is sent; nothing is built otherwise): error level
    for the ``error`` status, info otherwise.  ``payload_args`` are the
    payload's own (to_power; prev_state, prev_target, event)."""
    level = 'error' if status == 'error' else 'info'
    if not notifications.enabled(level):
        return
    notification_cls, payload_cls = _EVENTS[action]
    with notifications.never_failing('node', action, status):
        notification_cls(
            level=level,
            event_type=notification.EventType(object='node', action=action,
                                              status=status),
            publisher=notification.publisher(service),
            payload=payload_cls(node, **payload_args),
        ).emit(context)
