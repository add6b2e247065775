"""Allocation groups (API extension 1.3): allocations created, handed
over and released together, in one database transaction or not at all."""

from ironic_alloc.common import notifications
from ironic_alloc.db import api as db_api
from ironic_alloc.objects import allocation as allocation_obj
from ironic_alloc.objects import base
from ironic_alloc.objects import fields
from ironic_alloc.objects import notification


@base.IronicAllocObjectRegistry.register
class AllocationGroup(base.IronicAllocObject):
    # Version 1.0: Initial version
    VERSION = '1.0'

    dbapi = db_api.get_instance()

    fields = {
        'id': fields.IntegerField(),
        'uuid': fields.UUIDField(),
        'name': fields.StringField(nullable=True),
        'state': fields.StringField(),
        'owner': fields.StringField(nullable=True),
        'last_error': fields.StringField(nullable=True),
        'explanation': fields.FlexibleDictField(nullable=True),
        # {member allocation uuid: the normalised member}: what the
        # conductor solves and commits.
        'spec': fields.FlexibleDictField(nullable=True),
        'conductor_affinity': fields.IntegerField(nullable=True),
        'expires_at': fields.DateTimeField(nullable=True),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }

    @classmethod
    def get(cls, context, **criteria):
        """A group by one of ``id``, ``uuid`` or ``name``.

        :raises: AllocationGroupNotFound.
        """
        return cls._from_db_object(context, cls(),
                                   cls.dbapi.get_allocation_group(**criteria))

    @classmethod
    def list(cls, context, filters=None, limit=None, marker=None):
        """One page in id order; ``marker`` is a group id."""
        return cls._from_db_object_list(
            context, cls.dbapi.get_allocation_group_list(
                filters=filters, limit=limit, marker=marker))

    @classmethod
    def uuids_by_id(cls, context, ids):
        """{id: uuid} for the given group ids, in one query."""
        return cls.dbapi.get_allocation_group_uuids(ids)

    def members(self):
        """[(Allocation, node UUID or None)] of the rows the group made."""
        return self._members_of_rows(
            self._context, self.dbapi.get_allocation_group_members(self.id))

    @classmethod
    def members_of(cls, context, groups):
        """{group id: members()} of several groups (a page of a list),
        read in one query."""
        rows = cls.dbapi.get_allocation_groups_members(
            [group.id for group in groups])
        return {group_id: cls._members_of_rows(context, group_rows)
                for group_id, group_rows in rows.items()}

    @staticmethod
    def _members_of_rows(context, rows):
        return [(allocation_obj.Allocation.from_db_row(context, row),
                 row.node_uuid)
                for row in rows]

    def create(self, members, released_ids, context=None, limits=None):
        """Insert the group and its new members (dicts of allocation
        columns) in one transaction.

        :param released_ids: ids of the allocations it releases or hands
            over.
        :raises: see db.api create_allocation_group().
        """
        row = self.dbapi.create_allocation_group(
            self.obj_get_changes(), members, released_ids, limits=limits)
        self._from_db_object(context or self._context, self, row)

    def set_lease(self, expires_at):
        """Set the lease end of the group and of all its members (None:
        no lease) in one transaction.

        :raises: AllocationGroupNotFound, LeaseOnDeployedNode.
        """
        row = self.dbapi.update_allocation_group_lease(self.id, expires_at)
        self._from_db_object(self._context, self, row)

    def destroy(self, node_states=None):
        """Delete every member, freeing its node, and the group, in one
        transaction.

        :returns: [(member uuid, node id or None)].
        :raises: AllocationGroupNotFound, InvalidState.
        """
        return self.dbapi.destroy_allocation_group(
            self.id, node_states=node_states)[1]


@base.IronicAllocObjectRegistry.register
class AllocationGroupPayload(notification.NotificationPayloadBase):
    """ironic_alloc's payload of its allocation group events: the group's
    fields and the UUIDs of its members (every member of its request:
    new, hand-over and release)."""
    # Version 1.0: Initial version
    VERSION = '1.0'

    SCHEMA = {name: ('group', name) for name in (
        'uuid', 'name', 'state', 'owner', 'last_error', 'expires_at',
        'created_at', 'updated_at')}

    fields = {
        'uuid': fields.UUIDField(nullable=True),
        'name': fields.StringField(nullable=True),
        'state': fields.StringField(nullable=True),
        'owner': fields.StringField(nullable=True),
        'last_error': fields.StringField(nullable=True),
        'expires_at': fields.DateTimeField(nullable=True),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
        'member_uuids': fields.ListOfStringsField(nullable=True),
    }

    def __init__(self, group):
        super().__init__(member_uuids=sorted(group.spec or {}))
        self.populate_schema(group=group)


@base.IronicAllocObjectRegistry.register
class AllocationGroupNotification(notification.NotificationBase):
    """ironic_alloc.allocation_group.* events."""
    # Version 1.0: Initial version
    VERSION = '1.0'

    EVENT_PREFIX = 'ironic_alloc'

    fields = {
        'payload': fields.ObjectField('AllocationGroupPayload'),
    }


def notify(context, group, action, status, service):
    """Send ironic_alloc.allocation_group.<action>.<status> about
    ``group`` (when its level is sent; nothing is built otherwise).  The
    level is error for the ``error`` status, info otherwise."""
    level = 'error' if status == 'error' else 'info'
    if not notifications.enabled(level):
        return
    with notifications.never_failing('allocation_group', action, status):
        AllocationGroupNotification(
            level=level,
            event_type=notification.EventType(
                object='allocation_group', action=action, status=status),
            publisher=notification.publisher(service),
            payload=AllocationGroupPayload(group),
        ).emit(context)
