from oslo_utils import versionutils

from ironic_alloc.common import notifications
from ironic_alloc.common import states
from ironic_alloc.db import api as db_api
from ironic_alloc.objects import base
from ironic_alloc.objects import fields
from ironic_alloc.objects import notification


@base.IronicAllocObjectRegistry.register
class Allocation(base.IronicAllocObject):
    # Version 1.0: Initial version
    # Version 1.1: match (the matching language, API extension 1.1)
    # Version 1.2: explanation (the funnel of a failed allocation)
    # Version 1.3: kind, instance_uuid, expires_at (reservations and
    #              leases, API extension 1.2)
    # Version 1.4: group_id (allocation groups, API extension 1.3)
    VERSION = '1.4'

    dbapi = db_api.get_instance()

    fields = {
        'id': fields.IntegerField(),
        'uuid': fields.UUIDField(),
        'name': fields.StringField(nullable=True),
        'node_id': fields.IntegerField(nullable=True),
        'state': fields.StringField(),
        'owner': fields.StringField(nullable=True),
        'last_error': fields.StringField(nullable=True),
        'resource_class': fields.StringField(nullable=True),
        'traits': fields.ListOfStringsField(nullable=True),
        'candidate_nodes': fields.ListOfStringsField(nullable=True),
        'extra': fields.FlexibleDictField(nullable=True),
        'match': fields.FlexibleDictField(nullable=True),
        'explanation': fields.FlexibleDictField(nullable=True),
        'conductor_affinity': fields.IntegerField(nullable=True),
        'kind': fields.StringField(default='allocation'),
        'instance_uuid': fields.UUIDField(nullable=True),
        'expires_at': fields.DateTimeField(nullable=True),
        'group_id': fields.IntegerField(nullable=True),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        version = versionutils.convert_version_to_tuple(target_version)
        if version < (1, 4):
            primitive.pop('group_id', None)
        if version < (1, 3):
            for name in ('kind', 'instance_uuid', 'expires_at'):
                primitive.pop(name, None)
        if version < (1, 2):
            primitive.pop('explanation', None)
        if version < (1, 1):
            primitive.pop('match', None)

    def lowest_version(self):
        """The oldest version of this object that carries all the data
        of this allocation: below it, obj_make_compatible() drops some."""
        if self.group_id is not None:
            return '1.4'
        if (self.kind != states.ALLOCATION_KIND
                or self.instance_uuid is not None
                or self.expires_at is not None):
            return '1.3'
        # NOTE: the columns of these dictionaries store an empty one for
        # None; an empty one carries nothing.
        if self.explanation:
            return '1.2'
        if self.match:
            return '1.1'
        return '1.0'

    @classmethod
    def count_by_state(cls):
        """[(state, kind, count)] of every allocation and reservation, in
        one query (the metrics' allocations by state)."""
        return cls.dbapi.count_allocations_by_state()

    @classmethod
    def get_by_id(cls, context, allocation_id):
        return cls._from_db_object(
            context, cls(), cls.dbapi.get_allocation_by_id(allocation_id))

    @classmethod
    def get_by_uuid(cls, context, uuid):
        return cls._from_db_object(context, cls(),
                                   cls.dbapi.get_allocation_by_uuid(uuid))

    @classmethod
    def get_by_name(cls, context, name):
        return cls._from_db_object(context, cls(),
                                   cls.dbapi.get_allocation_by_name(name))

    @classmethod
    def get_with_node_uuid(cls, context, **criteria):
        """One allocation by ``id``, ``uuid`` or ``name`` (one of them),
        with its node's UUID, in one query.

        :returns: (Allocation, node UUID or None).
        """
        db_allocation, node_uuid = cls.dbapi.get_allocation_with_node_uuid(
            **criteria)
        return cls._from_db_object(context, cls(), db_allocation), node_uuid

    @classmethod
    def list(cls, context, filters=None, limit=None, marker=None,
             sort_key=None, sort_dir=None):
        """One page; ``marker`` is an allocation id (see db.api)."""
        return cls._from_db_object_list(
            context, cls.dbapi.get_allocation_list(
                filters=filters, limit=limit, marker=marker,
                sort_key=sort_key, sort_dir=sort_dir))

    @classmethod
    def uuids_by_id(cls, context, ids):
        """{id: uuid} for the given ids, in one query."""
        return cls.dbapi.get_allocation_uuids(ids)

    @classmethod
    def explain(cls, context, criteria, examples=0, project=None):
        """The funnel of ``criteria`` (matching.criteria()), writing
        nothing; see db.api explain_allocation()."""
        return cls.dbapi.explain_allocation(criteria, examples=examples,
                                            project=project)

    def create(self, context=None, limits=None):
        """Insert an allocating allocation.

        :param limits: common.limits.ProjectLimits of its owner, or None.
        :raises: AllocationAlreadyExists, AllocationDuplicateName,
            InstanceAssociated, ProjectLimitExceeded.
        """
        db_allocation = self.dbapi.create_allocation(self.obj_get_changes(),
                                                     limits=limits)
        self._from_db_object(context or self._context, self, db_allocation)

    def backfill(self, node, node_states, context=None, limits=None):
        """Insert an active allocation bound to the deployed ``node``.

        :param node: the Node (its id and UUID are used).
        :raises: NodeLocked while a conductor changes the node,
            NodeChanged and the create() errors.
        """
        db_allocation = self.dbapi.backfill_allocation(
            self.obj_get_changes(), node.id, node.uuid, node_states,
            limits=limits)
        self._from_db_object(context or self._context, self, db_allocation)

    def save(self, context=None):
        """Write changed user fields (name, extra, expires_at).

        :raises: AllocationNotFound, AllocationDuplicateName,
            LeaseOnDeployedNode.
        """
        values = self.obj_get_changes()
        values.pop('updated_at', None)
        if not values:
            return
        db_allocation = self.dbapi.update_allocation(self.id, values)
        self._from_db_object(context or self._context, self, db_allocation)

    def destroy(self, node_states=None):
        """Delete the allocation and free its node atomically.

        :raises: AllocationNotFound, InvalidState.
        """
        self.destroy_by_id(self._context, self.id, node_states=node_states)

    @classmethod
    def destroy_by_id(cls, context, allocation_id, node_states=None):
        """destroy() without reading the allocation first.

        :returns: (uuid, node id or None) of the deleted allocation.
        :raises: AllocationNotFound, InvalidState.
        """
        return cls.dbapi.destroy_allocation(allocation_id,
                                            node_states=node_states)

    # Reservations: allocation rows of kind 'reservation' (API extension
    # 1.2).  Each reader returns (Allocation, node UUID or None).

    @classmethod
    def _with_node_uuid(cls, context, row):
        return cls._from_db_object(context, cls(), row), row.node_uuid

    @classmethod
    def reserve(cls, context, values, node_uuids, ttl, project=None,
                limits=None):
        """Reserve the first node of ``node_uuids`` that can be.

        :param limits: common.limits.ProjectLimits of the owner, or None.
        :raises: NoNodeReservable, InstanceAssociated,
            AllocationAlreadyExists, ProjectLimitExceeded.
        """
        return cls._with_node_uuid(context, cls.dbapi.create_reservation(
            values, node_uuids, ttl, project=project, limits=limits))

    @classmethod
    def get_reservation(cls, context, uuid):
        """:raises: ReservationNotFound."""
        return cls._with_node_uuid(context,
                                   cls.dbapi.get_reservation_by_uuid(uuid))

    @classmethod
    def reservation_owners(cls, context, uuids):
        """{uuid: owner} of the reservations among ``uuids``, in one
        query."""
        return cls.dbapi.get_reservation_owners(uuids)

    @classmethod
    def list_reservations(cls, context, filters=None, limit=None,
                          marker=None):
        """One page; ``marker`` is a reservation id."""
        return [cls._with_node_uuid(context, row)
                for row in cls.dbapi.get_reservation_list(
                    filters=filters, limit=limit, marker=marker)]

    @classmethod
    def renew_reservation(cls, context, reservation_id, expires_at):
        """:raises: ReservationNotFound, LeaseOnDeployedNode."""
        return cls._with_node_uuid(context,
                                   cls.dbapi.update_reservation_expiry(
                                       reservation_id, expires_at))

    @classmethod
    def destroy_reservation(cls, context, reservation_id, node_states=None):
        """Delete a reservation and free its node atomically.

        :returns: (uuid, node id or None).
        :raises: ReservationNotFound, InvalidState.
        """
        return cls.dbapi.destroy_reservation(reservation_id,
                                             node_states=node_states)

    @classmethod
    def one_transaction(cls, context):
        """A context manager under which the reads and writes of this
        thread share one write transaction (a lookup and the change it
        allows, without a second round of connection and transaction)."""
        return cls.dbapi.writing()

    @classmethod
    def database_time(cls, context):
        """The database's clock (naive UTC), which judges leases."""
        return cls.dbapi.get_database_time()


@base.IronicAllocObjectRegistry.register
class AllocationCRUDPayload(notification.NotificationPayloadBase):
    """Ironic's payload of baremetal.allocation.* (its version 1.1)."""
    # Version 1.1: Ironic's AllocationCRUDPayload 1.1 (owner included)
    VERSION = '1.1'

    SCHEMA = {name: ('allocation', name) for name in (
        'candidate_nodes', 'created_at', 'extra', 'last_error', 'name',
        'owner', 'resource_class', 'state', 'traits', 'updated_at', 'uuid')}

    fields = {
        'uuid': fields.UUIDField(nullable=True),
        'name': fields.StringField(nullable=True),
        'node_uuid': fields.StringField(nullable=True),
        'state': fields.StringField(nullable=True),
        'last_error': fields.StringField(nullable=True),
        'owner': fields.StringField(nullable=True),
        'resource_class': fields.StringField(nullable=True),
        'traits': fields.ListOfStringsField(nullable=True),
        'candidate_nodes': fields.ListOfStringsField(nullable=True),
        'extra': fields.FlexibleDictField(nullable=True),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }

    def __init__(self, allocation, node_uuid=None):
        super().__init__(node_uuid=node_uuid)
        self.populate_schema(allocation=allocation)


@base.IronicAllocObjectRegistry.register
class AllocationCRUDNotification(notification.NotificationBase):
    """baremetal.allocation.create|update|delete.start|end|error, sent by
    the API."""
    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'payload': fields.ObjectField('AllocationCRUDPayload'),
    }


@base.IronicAllocObjectRegistry.register
class AllocationHoldPayload(AllocationCRUDPayload):
    """ironic_alloc's payload of its own allocation and reservation events:
    Ironic's fields and those of holds (kind, instance_uuid, expires_at)."""
    # Version 1.0: Initial version (AllocationCRUDPayload 1.1's fields,
    #              kind, instance_uuid, expires_at)
    VERSION = '1.0'

    SCHEMA = dict(AllocationCRUDPayload.SCHEMA, **{
        name: ('allocation', name) for name in (
            'kind', 'instance_uuid', 'expires_at')})

    fields = {
        'kind': fields.StringField(nullable=True),
        'instance_uuid': fields.UUIDField(nullable=True),
        'expires_at': fields.DateTimeField(nullable=True),
    }


@base.IronicAllocObjectRegistry.register
class AllocationHoldNotification(notification.NotificationBase):
    """ironic_alloc.allocation.* and ironic_alloc.reservation.* events."""
    # Version 1.0: Initial version
    VERSION = '1.0'

    EVENT_PREFIX = 'ironic_alloc'

    fields = {
        'payload': fields.ObjectField('AllocationHoldPayload'),
    }


def notify(context, allocation, obj, action, status, service,
           node_uuid=None, level=None):
    """Send one notification about ``allocation`` (when its level is
    sent; nothing is built otherwise).

    ``obj`` is ``allocation`` or ``reservation``; ``action`` and ``status``
    make the rest of the event type.  Ironic's allocation events
    (``create``, ``update``, ``delete`` of ``allocation``) carry Ironic's
    payload, the others ironic_alloc's.  The level is Ironic's: error for
    the ``error`` status, info otherwise.
    """
    level = level or ('error' if status == 'error' else 'info')
    if not notifications.enabled(level):
        return
    if obj == 'allocation' and action in IRONIC_ACTIONS:
        notification_cls, payload_cls = (AllocationCRUDNotification,
                                         AllocationCRUDPayload)
    else:
        notification_cls, payload_cls = (AllocationHoldNotification,
                                         AllocationHoldPayload)
    with notifications.never_failing(obj, action, status):
        notification_cls(
            level=level,
            event_type=notification.EventType(object=obj, action=action,
                                              status=status),
            publisher=notification.publisher(service),
            payload=payload_cls(allocation, node_uuid=node_uuid),
        ).emit(context)


IRONIC_ACTIONS = ('create', 'update', 'delete')
