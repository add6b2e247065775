from ironic_alloc.db import api as db_api
from ironic_alloc.objects import base
from ironic_alloc.objects import fields


@base.IronicAllocObjectRegistry.register
class Chassis(base.IronicAllocObject):
    """A chassis; written by the API only, never sent over RPC."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    dbapi = db_api.get_instance()

    fields = {
        'id': fields.IntegerField(),
        'uuid': fields.UUIDField(),
        'description': fields.StringField(nullable=True),
        'extra': fields.FlexibleDictField(nullable=True),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }

    @classmethod
    def get_by_id(cls, context, chassis_id):
        """:raises: ChassisNotFound."""
        return cls._from_db_object(context, cls(),
                                   cls.dbapi.get_chassis_by_id(chassis_id))

    @classmethod
    def get_by_uuid(cls, context, uuid):
        """:raises: ChassisNotFound."""
        return cls._from_db_object(context, cls(),
                                   cls.dbapi.get_chassis_by_uuid(uuid))

    @classmethod
    def list(cls, context, limit=None, marker=None, sort_key=None,
             sort_dir=None):
        """One page; ``marker`` is a chassis id (see db.api)."""
        return cls._from_db_object_list(
            context, cls.dbapi.get_chassis_list(
                limit=limit, marker=marker, sort_key=sort_key,
                sort_dir=sort_dir))

    def create(self, context=None):
        """:raises: ChassisAlreadyExists."""
        db_chassis = self.dbapi.create_chassis(self.obj_get_changes())
        self._from_db_object(context or self._context, self, db_chassis)

    def save(self, context=None):
        """Write the changed description and extra.

        :raises: ChassisNotFound.
        """
        values = self.obj_get_changes()
        values.pop('updated_at', None)
        if not values:
            return
        db_chassis = self.dbapi.update_chassis(self.id, values)
        self._from_db_object(context or self._context, self, db_chassis)

    def destroy(self):
        """:raises: ChassisNotFound, ChassisNotEmpty."""
        self.dbapi.destroy_chassis(self.id)
