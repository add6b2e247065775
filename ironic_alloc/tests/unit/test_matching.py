"""The matching language's pure rules (common/matching.py)."""

from ironic_alloc.common import exception
from ironic_alloc.common import matching
from ironic_alloc.tests import base


def _validate(name):
    if not name.startswith('CUSTOM_') or name != name.upper():
        raise exception.InvalidTrait(trait=name)


class TestParseTraits(base.TestCase):

    def test_forms(self):
        parsed = matching.parse_traits(
            ['CUSTOM_B', 'CUSTOM_A', '!CUSTOM_GPU', 'in:CUSTOM_Y,CUSTOM_X',
             'in:CUSTOM_X,CUSTOM_Y', 'in:CUSTOM_Z', 'CUSTOM_A'],
            validate=_validate)
        self.assertEqual(['CUSTOM_A', 'CUSTOM_B'], parsed.required)
        self.assertEqual(['CUSTOM_GPU'], parsed.forbidden)
        self.assertEqual([['CUSTOM_X', 'CUSTOM_Y'], ['CUSTOM_Z']],
                         parsed.any_of)

    def test_refused(self):
        cases = [
            (['in:'], 'in:'),
            (['in:CUSTOM_A,,CUSTOM_B'], 'in:CUSTOM_A,,CUSTOM_B'),
            (['in:CUSTOM_A,'], 'in:CUSTOM_A,'),
            (['CUSTOM_A', '!CUSTOM_A'], 'CUSTOM_A is both required'),
            (['!'], 'Invalid trait expression !'),
            (['!!CUSTOM_A'], 'Invalid trait expression !!CUSTOM_A'),
            (['in:CUSTOM_A,custom_b'], 'in:CUSTOM_A,custom_b'),
            (['IN:CUSTOM_A'], 'IN:CUSTOM_A'),
            ([7], '7'),
        ]
        for entries, message in cases:
            exc = self.assertRaises(exception.Invalid, matching.parse_traits,
                                    entries, validate=_validate)
            self.assertIn(message, str(exc), entries)
            self.assertEqual(400, exc.code)

    def test_forbidden_and_any_of_may_share_a_name(self):
        # Only "required and forbidden" contradicts itself outright.
        parsed = matching.parse_traits(['!CUSTOM_A', 'in:CUSTOM_A,CUSTOM_B'])
        self.assertEqual(['CUSTOM_A'], parsed.forbidden)

    def test_is_expression(self):
        self.assertTrue(matching.is_expression('!CUSTOM_A'))
        self.assertTrue(matching.is_expression('in:CUSTOM_A'))
        self.assertFalse(matching.is_expression('CUSTOM_A'))


class TestCheckMatch(base.TestCase):

    def test_valid(self):
        self.assertEqual(
            {'cpus': 0, 'memory_mb': 1024, 'local_gb': 10,
             'cpu_arch': 'x86_64', 'conductor_group': 'rack-1.a_b',
             'capabilities': {'boot_mode': 'uefi', 'x': ''}},
            matching.check_match({
                'cpus': 0, 'memory_mb': 1024, 'local_gb': 10,
                'cpu_arch': ' x86_64', 'conductor_group': 'Rack-1.A_b',
                'capabilities': {'boot_mode': 'uefi ', 'x': ''}}))
        self.assertEqual({}, matching.check_match({}))
        self.assertEqual({'conductor_group': ''},
                         matching.check_match({'conductor_group': ''}))

    def test_refused(self):
        cases = [
            ([], 'must be an object'),
            ('cpus', 'must be an object'),
            ({'gpus': 1}, 'Unknown key gpus'),
            ({'cpus': -1}, 'match cpus -1'),
            ({'cpus': 1.5}, 'match cpus 1.5'),
            ({'cpus': '8'}, 'match cpus "8"'),
            ({'cpus': True}, 'match cpus true'),
            ({'memory_mb': None}, 'match memory_mb null'),
            ({'local_gb': 2 ** 63}, 'match local_gb'),
            ({'cpu_arch': 64}, 'match cpu_arch 64'),
            ({'cpu_arch': ''}, 'match cpu_arch ""'),
            ({'cpu_arch': 'x' * 256}, 'match cpu_arch'),
            ({'conductor_group': 'a b'}, 'conductor_group "a b"'),
            ({'conductor_group': False}, 'conductor_group false'),
            ({'capabilities': 'a:b'}, 'capabilities "a:b"'),
            ({'capabilities': {'a': 1}}, 'capability a value 1'),
            ({'capabilities': {'a': None}}, 'capability a value null'),
            ({'capabilities': {' ': 'x'}}, 'capability name " "'),
            ({'capabilities': {str(i): 'x' for i in range(21)}},
             'Too many match capabilities: 21'),
        ]
        for match, message in cases:
            exc = self.assertRaises(exception.Invalid, matching.check_match,
                                    match)
            self.assertIn(message, str(exc), match)


class TestNodeProperties(base.TestCase):

    def test_numbers(self):
        for value, number in [(8, 8), ('8', 8), (' 16 ', 16), ('+4', 4),
                              ('-2', -2), (0, 0), ('0008', 8),
                              (8.0, None), ('8.0', None), ('8GB', None),
                              ('', None), (True, None), (None, None),
                              ([8], None), ('9' * 30, None),
                              (2 ** 63 - 1, 2 ** 63 - 1), (2 ** 63, None)]:
            self.assertEqual(number, matching.property_number(value), value)

    def test_columns(self):
        self.assertEqual(
            {'match_cpus': 4, 'match_memory_mb': 2048,
             'match_local_gb': None, 'match_cpu_arch': 'x86_64',
             'match_capabilities': '{"boot_mode": "uefi", "x": "1"}'},
            matching.node_match_columns({'cpus': '4', 'memory_mb': 2048,
                                         'local_gb': 'many',
                                         'cpu_arch': 'x86_64 ',
                                         'capabilities': 'x:1,boot_mode:'
                                                         'uefi'}))
        empty = dict(dict.fromkeys(('match_cpus', 'match_memory_mb',
                                    'match_local_gb', 'match_cpu_arch')),
                     match_capabilities='{}')
        self.assertEqual(empty, matching.node_match_columns(None))
        self.assertEqual(empty, matching.node_match_columns({}))
        self.assertEqual(empty, matching.node_match_columns(
            {'cpu_arch': ' '}))

    def test_tally_columns(self):
        # The one value of a node's traits or capabilities does not
        # depend on their order, and reads back as what was written.
        self.assertEqual(matching.traits_column(['B', 'A', 'B']),
                         matching.traits_column(['A', 'B']))
        self.assertEqual(frozenset({'A', 'B'}), matching.tally_traits(
            matching.traits_column(['B', 'A'])))
        self.assertEqual(frozenset(), matching.tally_traits(None))
        self.assertEqual(matching.capabilities_column({'b': '1', 'a': '2'}),
                         matching.capabilities_column({'a': '2', 'b': '1'}))
        self.assertEqual({'a': '2'}, matching.tally_capabilities(
            matching.capabilities_column({'a': '2'})))
        self.assertEqual({}, matching.tally_capabilities(None))

    def test_capabilities(self):
        self.assertEqual(
            {'boot_mode': 'uefi', 'secure_boot': 'true', 'x': 'a:b'},
            matching.node_capabilities({'capabilities': (
                'boot_mode:bios, boot_mode : uefi,secure_boot:true,'
                'broken,,x:a:b')}))
        self.assertEqual(
            {'a': 'v', 'b': 'true', 'c': '3'},
            matching.node_capabilities({'capabilities': {
                'a': ' v', 'b': True, 'c': 3, 'd': None, 'e': [1],
                'f': 1.5}}))
        self.assertEqual({}, matching.node_capabilities(
            {'capabilities': 'n:' + 'v' * 256}))
        self.assertEqual({}, matching.node_capabilities({}))
        self.assertEqual({}, matching.node_capabilities(
            {'capabilities': ['a:b']}))
