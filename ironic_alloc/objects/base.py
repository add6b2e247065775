"""Common base of ironic_alloc's versioned objects."""

from oslo_utils import strutils
from oslo_utils import uuidutils
from oslo_utils import versionutils
from oslo_versionedobjects import base as object_base

from ironic_alloc.common import exception
from ironic_alloc import objects


class IronicAllocObjectRegistry(object_base.VersionedObjectRegistry):

    def registration_hook(self, cls, index):
        # NOTE: keep ironic_alloc.objects.<Name> pointing at the newest
        # registered version of each object.
        version = versionutils.convert_version_to_tuple(cls.VERSION)
        existing = getattr(objects, cls.obj_name(), None)
        if existing is None or version >= versionutils.\
                convert_version_to_tuple(existing.VERSION):
            setattr(objects, cls.obj_name(), cls)


class IronicAllocObject(object_base.VersionedObject,
                        object_base.VersionedObjectDictCompat):
    OBJ_SERIAL_NAMESPACE = 'ironic_alloc_object'
    OBJ_PROJECT_NAMESPACE = 'ironic_alloc'

    fields = {}

    @classmethod
    def get(cls, context, ident):
        """Find by id, UUID or logical name (subclasses provide
        get_by_id, get_by_uuid and get_by_name).

        :raises: the subclass's NotFound, InvalidIdentity.
        """
        if strutils.is_int_like(ident):
            return cls.get_by_id(context, int(ident))
        if uuidutils.is_uuid_like(ident):
            return cls.get_by_uuid(context, ident)
        if isinstance(ident, str) and ident:
            return cls.get_by_name(context, ident)
        raise exception.InvalidIdentity(identity=ident)

    def as_dict(self):
        return {k: getattr(self, k) for k in self.fields
                if self.obj_attr_is_set(k)}

    @staticmethod
    def _from_db_object(context, obj, db_object, skip=()):
        """Fill ``obj`` from a database model, field by field."""
        for field in obj.fields:
            if field in skip:
                continue
            obj[field] = getattr(db_object, field)
        obj._context = context
        obj.obj_reset_changes()
        return obj

    @classmethod
    def from_db_row(cls, context, db_object):
        """A new object of one database row (a model or a Core row).

        :raises: ValueError or TypeError when a column's value does not
            fit its field.
        """
        return cls._from_db_object(context, cls(), db_object)

    @classmethod
    def _from_db_object_list(cls, context, db_objects):
        return [cls._from_db_object(context, cls(), db_obj)
                for db_obj in db_objects]

    def do_version_changes_for_db(self):
        """The changed fields as a dict of column values."""
        return self.obj_get_changes()


class IronicAllocObjectSerializer(object_base.VersionedObjectSerializer):
    OBJ_BASE_CLASS = IronicAllocObject

    def __init__(self, object_versions=None):
        """:param object_versions: {object name: version} to send objects
            at (those of a pinned older release, see
            common/release_mappings.py); others go at their own version.
        """
        super().__init__()
        self.object_versions = dict(object_versions or {})

    def serialize_entity(self, context, entity):
        if isinstance(entity, (tuple, list, set, dict)):
            return self._process_iterable(context, self.serialize_entity,
                                          entity)
        if isinstance(entity, object_base.VersionedObject):
            # NOTE: obj_make_compatible() of each object drops or converts
            # what the target version does not know.
            return entity.obj_to_primitive(
                target_version=self.object_versions.get(entity.obj_name()))
        return entity
