"""The WSME types: validation of wire values."""

import json

import wsme
import wsme.rest.json
from wsme import types as wtypes

from ironic_alloc.api.controllers.v1 import node
from ironic_alloc.api.controllers.v1 import types
from ironic_alloc.common import exception
from ironic_alloc.tests import base
from ironic_alloc.tests.unit.api import base as api_base


class TestUuidTypes(base.TestCase):

    def test_uuid(self):
        value = '6e4b2d1f-4b7d-4e3a-9f0a-3c1c1c1c1c1c'
        self.assertEqual(value, types.uuid.validate(value))
        self.assertIsNone(types.UuidType.frombasetype(None))
        self.assertRaises(exception.InvalidUUID, types.uuid.validate,
                          'not-a-uuid')

    def test_uuid_or_name(self):
        self.assertEqual('node-1', types.uuid_or_name.validate('node-1'))
        for bad in ('', '   ', 5):
            self.assertRaises(exception.InvalidUuidOrName,
                              types.uuid_or_name.validate, bad)


class TestBooleanType(base.TestCase):

    def test_values(self):
        for text in ('true', 'True', '1', 'yes', 'on', True):
            self.assertIs(True, types.boolean.validate(text), text)
        for text in ('false', '0', 'no', 'off', False):
            self.assertIs(False, types.boolean.validate(text), text)

    def test_invalid(self):
        exc = self.assertRaises(exception.Invalid, types.boolean.validate,
                                'maybe')
        self.assertIn("Unrecognized value 'maybe'", str(exc))

    def test_none(self):
        self.assertIsNone(types.BooleanType.frombasetype(None))


class TestJsonTypes(base.TestCase):

    def test_json_accepts_any_json_value(self):
        for value in ({'a': [1]}, [1, 'x'], 'x', 1, 1.5, True, None):
            self.assertEqual(value, types.jsontype.validate(value))

    def test_json_refuses_other_values(self):
        self.assertRaises(exception.Invalid, types.jsontype.validate,
                          object())

    def test_dict(self):
        self.assertEqual({'a': 1}, types.dicttype.validate({'a': 1}))
        self.assertIsNone(types.dicttype.validate(None))
        exc = self.assertRaises(exception.Invalid, types.dicttype.validate,
                                [1])
        self.assertEqual('Expected a JSON object, got [1].', str(exc))

    def test_list(self):
        self.assertEqual(['name', 'uuid'],
                         types.listtype.validate('uuid, NAME,,uuid'))
        self.assertEqual([], types.listtype.validate(''))

    def test_strict_string(self):
        string = types.StrictStringType(max_length=3)
        self.assertEqual('abc', string.validate('abc'))
        self.assertRaises(exception.Invalid, string.validate, 5)
        self.assertRaises(exception.Invalid, string.validate, True)
        exc = self.assertRaises(exception.Invalid, string.validate, 'abcd')
        self.assertIn('maximum length of 3', str(exc))


class TestJsonObject(base.TestCase):
    """The body reader of json_object() types (here: Node)."""

    def _read(self, value):
        return wsme.rest.json.fromjson(node.Node, value)

    def test_object(self):
        result = self._read({'driver': 'fake-hardware', 'name': 'n'})
        self.assertEqual('fake-hardware', result.driver)
        self.assertEqual('n', result.name)
        self.assertIs(wtypes.Unset, result.resource_class)

    def test_not_an_object(self):
        for value in ([1], 'x', 42, True, None):
            exc = self.assertRaises(ValueError, self._read, value)
            self.assertIn('Expected a JSON object, got %s.'
                          % json.dumps(value), str(exc))

    def test_unknown_attribute(self):
        exc = self.assertRaises(wsme.exc.UnknownAttribute, self._read,
                                {'driver': 'x', 'colour': 'blue'})
        self.assertIn('colour', str(exc))

    def test_read_only(self):
        exc = self.assertRaises(wsme.exc.InvalidInput, self._read,
                                {'driver': 'x', 'provision_state': 'active'})
        self.assertIn('Cannot set read only field', str(exc))

    def test_mandatory(self):
        exc = self.assertRaises(wsme.exc.InvalidInput, self._read,
                                {'name': 'n'})
        self.assertIn('Mandatory field missing', str(exc))


class TestJsonPatchType(api_base.RequestTestCase):
    """Reading one operation also validates it (to a plain dict)."""

    def setUp(self):
        super().setUp()
        self.set_version(98)

    def _op(self, **kw):
        return wsme.rest.json.fromjson(node.NodePatchType, kw)

    def test_valid(self):
        self.assertEqual({'op': 'replace', 'path': '/extra/a', 'value': 1},
                         self._op(op='replace', path='/extra/a', value=1))

    def test_remove_without_value(self):
        self.assertEqual({'op': 'remove', 'path': '/description'},
                         self._op(op='remove', path='/description'))

    def test_internal_attribute(self):
        for path in ('/uuid', '/id', '/links', '/provision_state',
                     '/allocation_uuid', '/conductor', '/created_at'):
            exc = self.assertRaises(exception.Invalid, self._op,
                                    op='replace', path=path, value='x')
            self.assertIn('internal attribute', str(exc))

    def test_driver_cannot_be_removed(self):
        exc = self.assertRaises(exception.Invalid, self._op, op='remove',
                                path='/driver')
        self.assertIn('mandatory attribute', str(exc))

    def test_value_needed(self):
        self.assertRaises(exception.Invalid, self._op, op='add',
                          path='/extra/a')

    def test_bad_path(self):
        for path in ('extra', '', '/', '/extra//a', '/extra/a~', '/extra/~2'):
            exc = self.assertRaises(exception.Invalid, self._op, op='add',
                                    path=path, value=1)
            self.assertIn('should match the pattern', str(exc))

    def test_escaped_paths_from_1_98(self):
        for path in ('/extra/a~1b', '/extra/a~0b', '/extra/a.b c'):
            self.assertEqual({'op': 'add', 'path': path, 'value': 1},
                             self._op(op='add', path=path, value=1))
        self.set_version(97)
        for path in ('/extra/a~1b', '/extra/a~0b', '/extra/a.b'):
            exc = self.assertRaises(exception.Invalid, self._op, op='add',
                                    path=path, value=1)
            self.assertIn(r'pattern ^(/[\w-]+)+$', str(exc))
        self.assertEqual({'op': 'add', 'path': '/extra/a-b_c', 'value': 1},
                         self._op(op='add', path='/extra/a-b_c', value=1))

    def test_bad_op(self):
        self.assertRaises(wsme.exc.InvalidInput, self._op, op='copy',
                          path='/extra', value=1)
