from oslo_versionedobjects import fields as object_fields

IntegerField = object_fields.IntegerField
StringField = object_fields.StringField
UUIDField = object_fields.UUIDField
BooleanField = object_fields.BooleanField
DateTimeField = object_fields.DateTimeField
ListOfStringsField = object_fields.ListOfStringsField


class FlexibleDict(object_fields.FieldType):
    """A dict that also accepts its JSON text (as older rows may hold)."""

    @staticmethod
    def coerce(obj, attr, value):
        if isinstance(value, str):
            from oslo_serialization import jsonutils
            value = jsonutils.loads(value)
        return dict(value)


class FlexibleDictField(object_fields.AutoTypedField):
    AUTO_TYPE = FlexibleDict()

    def _null(self, obj, attr):
        if self.nullable:
            return {}
        return super()._null(obj, attr)

EnumField = object_fields.EnumField
ObjectField = object_fields.ObjectField
