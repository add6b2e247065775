from ironic_alloc.db import api as db_api
from ironic_alloc.objects import base
from ironic_alloc.objects import fields


@base.IronicAllocObjectRegistry.register
class Conductor(base.IronicAllocObject):
    # Version 1.0: Initial version
    VERSION = '1.0'

    dbapi = db_api.get_instance()

    fields = {
        'id': fields.IntegerField(),
        'hostname': fields.StringField(),
        'conductor_group': fields.StringField(),
        'online': fields.BooleanField(),
        'heartbeat_at': fields.DateTimeField(nullable=True),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }

    @classmethod
    def get_by_hostname(cls, context, hostname):
        """:raises: ConductorNotFound."""
        return cls._from_db_object(context, cls(),
                                   cls.dbapi.get_conductor(hostname))

    @classmethod
    def list(cls, context, limit=None, marker=None, sort_key=None,
             sort_dir=None):
        return cls._from_db_object_list(
            context, cls.dbapi.get_conductor_list(
                limit=limit, marker=marker, sort_key=sort_key,
                sort_dir=sort_dir))

    @classmethod
    def list_alive(cls, context, timeout, conductor_group=None):
        return cls._from_db_object_list(
            context, cls.dbapi.get_alive_conductors(
                timeout, conductor_group=conductor_group))

    @classmethod
    def database_time(cls, context):
        """The database server's clock; also a cheap reachability probe.

        :raises: oslo_db DBError subclasses when the database is down.
        """
        return cls.dbapi.get_database_time()

    @classmethod
    def register(cls, context, hostname, conductor_group):
        """Register this process; it gets a new row id (see db.api)."""
        return cls._from_db_object(
            context, cls(),
            cls.dbapi.register_conductor(hostname, conductor_group))

    def touch(self):
        """Heartbeat.  :returns: False when this registration is gone."""
        return self.dbapi.touch_conductor(self.id)

    def unregister(self):
        self.dbapi.unregister_conductor(self.id)
