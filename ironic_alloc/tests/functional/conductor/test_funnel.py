"""The funnel of an explanation is exact.

A fixture fleet in which each condition removes a known number of nodes:
each node passes every condition before its own and fails its own (one
also fails a later one, which the funnel must not count twice).  Checked
through the database API (one SQL query), and on a failed allocation's
``last_error`` and ``explanation`` written by a real conductor.
"""

from oslo_utils import uuidutils

from ironic_alloc.common import matching
from ironic_alloc.common import states
from ironic_alloc.db import api as db_api
from ironic_alloc.tests.functional.conductor import test_allocations
from ironic_alloc.tests.functional.conductor import utils

dbapi = db_api.get_instance()

GOOD = {
    'owner': 'p1', 'conductor_group': 'g1',
    'traits': ['CUSTOM_A', 'CUSTOM_B', 'CUSTOM_R1'],
    'properties': {'cpus': '16', 'memory_mb': 4096, 'local_gb': 100,
                   'cpu_arch': 'x86_64', 'capabilities': 'boot_mode:uefi'},
}

# (step, value, nodes it removes, how each differs from GOOD)
FLEET = [
    ('available', None, 2, {'provision_state': states.MANAGEABLE}),
    ('maintenance', None, 3, {'maintenance': True}),
    ('power_state', None, 1, {'power_state': None}),
    ('retired', None, 2, {'retired': True}),
    ('held', None, 4, {'instance': True}),
    ('owner', 'p1', 2, {'owner': 'p2'}),
    ('trait', 'CUSTOM_A', 3, {'traits': ['CUSTOM_B', 'CUSTOM_R1']}),
    ('trait', 'CUSTOM_B', 1, {'traits': ['CUSTOM_A', 'CUSTOM_R1']}),
    ('forbidden_trait', 'CUSTOM_GPU', 2,
     {'traits': GOOD['traits'] + ['CUSTOM_GPU']}),
    ('any_of', ['CUSTOM_R1', 'CUSTOM_R2'], 1,
     {'traits': ['CUSTOM_A', 'CUSTOM_B']}),
    ('cpus', 8, 1, {'properties': {'cpus': 4}}),
    ('memory_mb', 1024, 1, {'properties': {'memory_mb': None}}),
    ('local_gb', 10, 1, {'properties': {'local_gb': 'lots'}}),
    ('cpu_arch', 'x86_64', 1, {'properties': {'cpu_arch': 'aarch64'}}),
    ('capability', {'boot_mode': 'uefi'}, 1,
     {'properties': {'capabilities': 'boot_mode:bios'}}),
    ('candidates', None, 1, {'candidate': False}),
    ('conductor_group', 'g1', 1, {'conductor_group': 'g2'}),
]
MATCHING = 3

CRITERIA = {
    'resource_class': 'gold', 'owner': 'p1',
    'traits': ['CUSTOM_A', 'CUSTOM_B'], 'forbidden_traits': ['CUSTOM_GPU'],
    'any_of_traits': [['CUSTOM_R1', 'CUSTOM_R2']],
    'match': {'cpus': 8, 'memory_mb': 1024, 'local_gb': 10,
              'cpu_arch': 'x86_64', 'capabilities': {'boot_mode': 'uefi'},
              'conductor_group': 'g1'},
}


def make_fleet(context):
    """The fixture fleet; returns the criteria that explain it (with its
    candidate list) and the UUIDs of the matching nodes."""
    candidates, matching_uuids = [], []

    def node(index, changes):
        values = dict(GOOD, name='node-%d' % index)
        values['properties'] = dict(GOOD['properties'],
                                    **changes.get('properties', {}))
        for key, value in changes.items():
            if key not in ('properties', 'instance', 'candidate'):
                values[key] = value
        if changes.get('instance'):
            values['instance_uuid'] = uuidutils.generate_uuid()
        made = utils.make_available_node(context, **values)
        if changes.get('candidate', True):
            candidates.append(made.uuid)
        return made

    index = 0
    for _step, _value, count, changes in FLEET:
        for _ in range(count):
            node(index, changes)
            index += 1
    # Fails maintenance and a trait: counted once, under maintenance.
    node(index, {'maintenance': True, 'traits': ['CUSTOM_R1']})
    for _ in range(MATCHING):
        index += 1
        matching_uuids.append(node(index, {}).uuid)
    # Not of the resource class: outside the funnel.
    utils.make_available_node(context, name='silver-0',
                              resource_class='silver')
    return dict(CRITERIA, candidate_uuids=candidates), sorted(matching_uuids)


def expected_steps():
    steps = []
    for step, value, count, _changes in FLEET:
        if step == 'maintenance':
            count += 1
        steps.append((step, value, count))
    return steps


class TestFunnel(test_allocations.AllocationTestCase):

    def setUp(self):
        super().setUp()
        self.criteria, self.matching = make_fleet(self.context)
        self.start = sum(c for _s, _v, c, _x in FLEET) + 1 + MATCHING

    def test_exact(self):
        funnel = dbapi.explain_allocation(self.criteria, examples=100)
        self.assertEqual(self.start, funnel['nodes'])
        self.assertEqual(expected_steps(), [
            (s['step'], s['value'], s['removed']) for s in funnel['steps']])
        self.assertEqual(MATCHING, funnel['matching_nodes'])
        self.assertEqual(self.matching, funnel['examples'])
        # Removals plus matches make the start; remaining counts down.
        self.assertEqual(self.start, MATCHING + sum(
            s['removed'] for s in funnel['steps']))
        remaining = self.start
        for step in funnel['steps']:
            remaining -= step['removed']
            self.assertEqual(remaining, step['remaining'])
        self.assertEqual(
            'all matching nodes were reserved by concurrent allocations or '
            'locked by other operations', funnel['reason'])
        self.assertEqual(2, len(dbapi.explain_allocation(
            self.criteria, examples=2)['examples']))

    def test_visible_to_a_project(self):
        # Only the nodes p2 owns or leases: the two of the owner step.
        funnel = dbapi.explain_allocation(self.criteria, examples=10,
                                          project='p2')
        self.assertEqual(2, funnel['nodes'])
        self.assertEqual([('owner', 2)], [
            (s['step'], s['removed']) for s in funnel['steps']
            if s['removed']])
        self.assertEqual([], funnel['examples'])
        self.assertIn('owned or leased by "p1"', funnel['reason'])

    def test_failed_allocation_carries_the_funnel(self):
        # The matching nodes taken first, then one more allocation.
        for _ in range(MATCHING):
            allocation = self.allocate(**self._allocation_fields())
            self.assertEqual(states.ALLOCATION_ACTIVE, allocation.state)
        failed = self.allocate(**self._allocation_fields())
        self.assertEqual(states.ALLOCATION_ERROR, failed.state)
        explanation = failed.explanation
        self.assertEqual('p1', explanation['project'])
        # Over p1's nodes: the two nodes of p2 are not counted.
        self.assertEqual(self.start - 2, explanation['nodes'])
        steps = {(s['step'], str(s['value'])): s['removed']
                 for s in explanation['steps']}
        self.assertEqual(4 + MATCHING, steps[('held', 'None')])
        self.assertEqual(0, steps[('owner', 'p1')])
        self.assertEqual(0, explanation['matching_nodes'])
        self.assertIn(matching.funnel_line(explanation), failed.last_error)
        self.assertIn('Funnel: %d nodes of resource class "gold" visible '
                      'to project p1: 2 not available, 4 in maintenance'
                      % (self.start - 2), failed.last_error)
        self.assertIn('7 held by an allocation or an instance, 3 lack '
                      'CUSTOM_A, 1 lack CUSTOM_B, 2 have the forbidden '
                      'CUSTOM_GPU', failed.last_error)
        self.assertTrue(failed.last_error.endswith('; 0 left.'))
        self.assertNotIn('\n', failed.last_error)

    def _allocation_fields(self):
        match = CRITERIA['match']
        return {'owner': 'p1', 'match': match,
                'candidate_nodes': self.criteria['candidate_uuids'],
                'traits': ['CUSTOM_A', 'CUSTOM_B', '!CUSTOM_GPU',
                           'in:CUSTOM_R1,CUSTOM_R2']}
