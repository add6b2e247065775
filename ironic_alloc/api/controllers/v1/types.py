"""Reusable WSME types: validation of wire values lives here."""

import json
import re

from oslo_utils import strutils
from oslo_utils import uuidutils
import wsme
import wsme.rest.json
from wsme import types as wtypes

from ironic_alloc.api.controllers.v1 import utils
from ironic_alloc.common import exception


class UuidType(wtypes.UserType):
    """A UUID."""

    basetype = str
    name = 'uuid'

    @staticmethod
    def validate(value):
        if not uuidutils.is_uuid_like(value):
            raise exception.InvalidUUID(uuid=value)
        return value

    @staticmethod
    def frombasetype(value):
        if value is None:
            return None
        return UuidType.validate(value)


class UuidOrNameType(wtypes.UserType):
    """A UUID or a logical name (names are checked by utils per version)."""

    basetype = str
    name = 'uuid_or_name'

    @staticmethod
    def validate(value):
        if not (isinstance(value, str) and value.strip()):
            raise exception.InvalidUuidOrName(name=value)
        return value

    @staticmethod
    def frombasetype(value):
        if value is None:
            return None
        return UuidOrNameType.validate(value)


class BooleanType(wtypes.UserType):
    """A boolean, also from the strings of a query (true/false/1/0...)."""

    basetype = str
    name = 'boolean'

    @staticmethod
    def validate(value):
        if isinstance(value, bool):
            return value
        try:
            return strutils.bool_from_string(value, strict=True)
        except (ValueError, TypeError) as e:
            raise exception.Invalid(str(e))

    @staticmethod
    def frombasetype(value):
        if value is None:
            return None
        return BooleanType.validate(value)


class JsonType(wtypes.UserType):
    """Any JSON value (dict, list, string, number, boolean, null)."""

    basetype = wtypes.text
    name = 'json'

    def __str__(self):
        # NOTE: WSME shows this in "Value should be one of ..." messages.
        return ' | '.join(map(str, (wtypes.text, int, float, BooleanType,
                                    list, dict, None)))

    @staticmethod
    def validate(value):
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise exception.Invalid('%s is not JSON serializable' % value)
        return value

    @staticmethod
    def frombasetype(value):
        return JsonType.validate(value)


class DictType(JsonType):
    """A JSON object (or null)."""

    name = 'dict'

    @staticmethod
    def validate(value):
        if value is not None and not isinstance(value, dict):
            raise exception.Invalid('Expected a JSON object, got %s.'
                                    % json.dumps(value))
        return value

    @staticmethod
    def frombasetype(value):
        return DictType.validate(value)


class ListType(wtypes.UserType):
    """A comma separated list of strings (``fields=a,b``), de-duplicated."""

    basetype = wtypes.text
    name = 'list'

    @staticmethod
    def validate(value):
        items = [v.strip().lower() for v in str(value).split(',')]
        return sorted({v for v in items if v})

    @staticmethod
    def frombasetype(value):
        if value is None:
            return None
        return ListType.validate(value)


class StrictStringType(wtypes.UserType):
    """A string (never a number or boolean coerced to one)."""

    basetype = wtypes.text
    name = 'string'

    def __init__(self, max_length=None):
        self.max_length = max_length

    def validate(self, value):
        if not isinstance(value, str):
            raise exception.Invalid('Expected a string, got %s.'
                                    % json.dumps(value))
        if self.max_length is not None and len(value) > self.max_length:
            raise exception.Invalid('Value should have a maximum length of '
                                    '%d characters.' % self.max_length)
        return value

    def frombasetype(self, value):
        if value is None:
            return None
        return self.validate(value)


uuid = UuidType()
uuid_or_name = UuidOrNameType()
boolean = BooleanType()
jsontype = JsonType()
dicttype = DictType()
listtype = ListType()


def json_object(cls):
    """Class decorator: a complex type read from a JSON *object* only.

    WSME's generic reader fails with a 500 when a body that should be an
    object is a list, a scalar or null; this reader answers 400 instead, and
    otherwise behaves like WSME's (unknown attributes: 400, read-only
    attributes: 400, mandatory ones checked).
    """
    @wsme.rest.json.fromjson.when_object(cls)
    def _fromjson(datatype, value):
        # NOTE: null is refused too: a controller receiving None for its
        # body (or for one operation of a patch) would fail with a 500.
        if not isinstance(value, dict):
            raise ValueError('Expected a JSON object, got %s.'
                             % json.dumps(value))
        obj = datatype()
        attributes = wtypes.list_attributes(datatype)
        unknown = set(value) - {a.name for a in attributes}
        if unknown:
            raise wsme.exc.UnknownAttribute(None, unknown)
        for attr in attributes:
            if attr.name in value:
                try:
                    converted = wsme.rest.json.fromjson(attr.datatype,
                                                        value[attr.name])
                except wsme.exc.UnknownAttribute as e:
                    e.add_fieldname(attr.name)
                    raise
                if getattr(attr, 'readonly', False):
                    raise wsme.exc.InvalidInput(
                        attr.name, converted, 'Cannot set read only field.')
                setattr(obj, attr.key, converted)
            elif attr.mandatory:
                raise wsme.exc.InvalidInput(attr.name, None,
                                            'Mandatory field missing.')
        return wtypes.validate_value(datatype, obj)
    return cls


# JSON patch paths: before 1.98 each segment is made of word characters
# and dashes; from 1.98 any characters, '~' and '/' escaped as RFC 6901
# says ('~0' and '~1').
_PATCH_PATH = re.compile(r'^(/[\w-]+)+$')
_ESCAPED_PATCH_PATH = re.compile(r'^(/([^/~]|~[01])+)+$')


@json_object
class JsonPatchType(wtypes.Base):
    """One RFC 6902 operation; subclasses name the read-only paths."""

    path = wtypes.wsattr(wtypes.text, mandatory=True)
    op = wtypes.wsattr(wtypes.Enum(str, 'add', 'replace', 'remove'),
                       mandatory=True)
    value = wsme.wsattr(jsontype, default=wtypes.Unset)

    @staticmethod
    def internal_attrs():
        """Paths that can never be patched (first path segment)."""
        return ['/created_at', '/id', '/links', '/updated_at', '/uuid']

    @staticmethod
    def non_removable_attrs():
        """Paths that can be replaced but not removed."""
        return set()

    @staticmethod
    def validate(patch):
        """Check one operation against the rules of the resource.

        :returns: the operation as a plain dict.
        :raises: Invalid (400).
        """
        # NOTE: WSME lets an explicit null through a mandatory attribute.
        for name in ('op', 'path'):
            if not isinstance(getattr(patch, name), str):
                raise exception.Invalid(
                    "Every patch operation needs '%s' as a string" % name)
        pattern = (_ESCAPED_PATCH_PATH if utils.allow_escaped_patch_paths()
                   else _PATCH_PATH)
        if not pattern.match(patch.path):
            raise exception.Invalid(
                "Invalid input for field/attribute path. Value: %s. Value "
                "should match the pattern %s"
                % (json.dumps(patch.path), pattern.pattern))
        root = '/' + utils.decode_pointer_segment(patch.path.split('/')[1])
        if root in patch.internal_attrs():
            raise exception.Invalid(
                "'%s' is an internal attribute and can not be updated"
                % patch.path)
        if patch.path in patch.non_removable_attrs() and \
                patch.op == 'remove':
            raise exception.Invalid(
                "'%s' is a mandatory attribute and can not be removed"
                % patch.path)
        if patch.op != 'remove' and patch.value is wtypes.Unset:
            raise exception.Invalid(
                "'add' and 'replace' operations need a value")
        result = {'path': patch.path, 'op': patch.op}
        if patch.value is not wtypes.Unset:
            result['value'] = patch.value
        return result
