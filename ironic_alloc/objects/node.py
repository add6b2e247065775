from ironic_alloc.db import api as db_api
from ironic_alloc.objects import base
from ironic_alloc.objects import fields

# Hardware interface fields of the Bare Metal API.  They are stored in one
# JSON column: nothing acts on them since no hardware is driven here.
INTERFACE_FIELDS = ('bios_interface', 'boot_interface', 'console_interface',
                    'deploy_interface', 'firmware_interface',
                    'inspect_interface', 'management_interface',
                    'network_interface', 'power_interface', 'raid_interface',
                    'rescue_interface', 'storage_interface',
                    'vendor_interface')


@base.IronicAllocObjectRegistry.register
class Node(base.IronicAllocObject):
    # Version 1.0: Initial version
    VERSION = '1.0'

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
        'traits': fields.ListOfStringsField(),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }

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
