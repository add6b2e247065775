"""Helpers of the v1 controllers: gates, paging, names, traits, patches."""

from ironic_alloc.api.controllers.v1 import utils
from ironic_alloc.common import exception
from ironic_alloc.common import states
from ironic_alloc.tests.unit.api import base


class TestGates(base.RequestTestCase):

    def test_gate_boundaries(self):
        gates = [(utils.allow_node_logical_names, 5),
                 (utils.allow_enroll_state, 11),
                 (utils.allow_traits, 37),
                 (utils.allow_expose_conductors, 49),
                 (utils.allow_allocations, 52),
                 (utils.allow_build_configdrive, 56),
                 (utils.allow_deploy_undeploy_verbs, 73)]
        for gate, minor in gates:
            self.set_version(minor - 1)
            self.assertFalse(gate(), gate.__name__)
            self.set_version(minor)
            self.assertTrue(gate(), gate.__name__)

    def test_disallowed_fields(self):
        self.set_version(1)
        hidden = utils.disallowed_fields()
        self.assertIn('name', hidden)
        self.assertIn('driver_internal_info', hidden)
        newest = ['shard', 'parent_node', 'firmware_interface',
                  'service_step', 'disable_power_off', 'instance_name',
                  'health']
        for minor, hidden in ((81, newest), (82, newest[1:]),
                              (85, newest[2:]), (86, newest[3:]),
                              (87, newest[4:])):
            self.set_version(minor)
            self.assertEqual(hidden, utils.disallowed_fields(), minor)

    def test_check_allowed_fields(self):
        self.set_version(7)
        self.assertRaises(exception.NotAcceptable,
                          utils.check_allowed_fields, ['uuid'])
        self.set_version(20)
        utils.check_allowed_fields(['uuid', 'network_interface'])
        utils.check_allowed_fields(None)
        exc = self.assertRaises(exception.NotAcceptable,
                                utils.check_allowed_fields,
                                ['uuid', 'resource_class'])
        self.assertIn('resource_class', str(exc))

    def test_check_for_invalid_fields(self):
        utils.check_for_invalid_fields(['a'], {'a', 'b'})
        exc = self.assertRaises(exception.InvalidParameterValue,
                                utils.check_for_invalid_fields,
                                ['a', 'z', 'y'], {'a'})
        self.assertEqual('Field(s) "y, z" are not valid', str(exc))

    def test_shown_provision_state(self):
        self.set_version(1)
        self.assertIsNone(utils.shown_provision_state(states.AVAILABLE))
        self.assertEqual(states.INSPECTING,
                         utils.shown_provision_state(states.INSPECTWAIT))
        self.set_version(39)
        self.assertEqual(states.AVAILABLE,
                         utils.shown_provision_state(states.AVAILABLE))
        self.assertEqual(states.INSPECTWAIT,
                         utils.shown_provision_state(states.INSPECTWAIT))

    def test_initial_state(self):
        self.set_version(10)
        self.assertEqual(states.AVAILABLE,
                         utils.initial_node_provision_state())
        self.set_version(11)
        self.assertEqual(states.ENROLL, utils.initial_node_provision_state())


class TestPaging(base.RequestTestCase):

    def test_limit(self):
        self.config(max_limit=50, group='api')
        self.assertEqual(50, utils.validate_limit(None))
        self.assertEqual(10, utils.validate_limit(10))
        self.assertEqual(50, utils.validate_limit(5000))
        for bad in (0, -1):
            exc = self.assertRaises(exception.Invalid, utils.validate_limit,
                                    bad)
            self.assertEqual('Limit must be positive', str(exc))

    def test_sort_dir(self):
        self.assertEqual('desc', utils.validate_sort_dir('desc'))
        self.assertRaises(exception.Invalid, utils.validate_sort_dir, 'DESC')

    def test_sort_key(self):
        self.assertEqual('name', utils.validate_sort_key('name', {'name'}))
        exc = self.assertRaises(exception.Invalid, utils.validate_sort_key,
                                'name; DROP TABLE nodes', {'name'})
        self.assertIn('is an invalid field for sorting', str(exc))


class TestNames(base.RequestTestCase):

    def test_logical_names(self):
        for name in ('node-1', 'a.b_c~d', 'X' * 255):
            self.assertTrue(utils.is_valid_logical_name(name), name)
        for name in ('', 'a b', 'a/b', "a'", 'a%', 'X' * 256, 5, None):
            self.assertFalse(utils.is_valid_logical_name(name), name)

    def test_node_names_1_10(self):
        self.set_version(10)
        self.assertTrue(utils.is_valid_node_name('node_1~a'))
        self.assertFalse(utils.is_valid_node_name(
            '6e4b2d1f-4b7d-4e3a-9f0a-3c1c1c1c1c1c'))

    def test_node_names_before_1_10(self):
        self.set_version(9)
        self.assertTrue(utils.is_valid_node_name('node-1.example.com'))
        self.assertFalse(utils.is_valid_node_name('node_1'))
        self.assertFalse(utils.is_valid_node_name('-node'))


class TestTraits(base.RequestTestCase):

    def test_valid(self):
        for trait in ('CUSTOM_GPU', 'CUSTOM_A_1', 'HW_CPU_X86_AVX2'):
            self.assertEqual(trait, utils.validate_trait(trait))

    def test_invalid(self):
        for trait in ('custom_gpu', 'CUSTOM_', 'CUSTOM_a', 'HW_NOPE',
                      'CUSTOM_' + 'A' * 249, '', 5, None):
            self.assertRaises(exception.InvalidTrait, utils.validate_trait,
                              trait)


class TestPatches(base.RequestTestCase):

    def test_apply(self):
        doc = {'name': 'a', 'extra': {'x': 1}}
        patched = utils.apply_jsonpatch(doc, [
            {'op': 'replace', 'path': '/name', 'value': 'b'},
            {'op': 'add', 'path': '/extra/y', 'value': 2},
            {'op': 'remove', 'path': '/extra/x'}])
        self.assertEqual({'name': 'b', 'extra': {'y': 2}}, patched)
        self.assertEqual({'name': 'a', 'extra': {'x': 1}}, doc)

    def test_new_root_attribute(self):
        exc = self.assertRaises(
            exception.Invalid, utils.apply_jsonpatch, {'name': 'a'},
            [{'op': 'add', 'path': '/colour', 'value': 'x'}])
        self.assertIn('Adding a new attribute (/colour)', str(exc))

    def test_operation_that_does_not_apply(self):
        exc = self.assertRaises(
            exception.PatchError, utils.apply_jsonpatch, {'extra': {}},
            [{'op': 'remove', 'path': '/extra/missing'}])
        self.assertIn("Couldn't apply patch", str(exc))

    def test_patch_helpers(self):
        patch = [{'op': 'replace', 'path': '/name', 'value': 'a'},
                 {'op': 'remove', 'path': '/name'},
                 {'op': 'add', 'path': '/extra/x', 'value': 1}]
        self.assertEqual(['a'], utils.get_patch_values(patch, '/name'))
        self.assertEqual({'name', 'extra'}, utils.patched_roots(patch))
