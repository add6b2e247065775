"""The matching language against real nodes, on the database under test.

Every operator (required, forbidden and any-of traits, each minimum,
cpu_arch, capabilities, conductor group) is tested on a small fleet whose
nodes differ in exactly what the operator looks at, through the SQL
matcher (the candidate search), the reservation's guard and a real
conductor.  The functional tiers run these on SQLite, PostgreSQL and
MariaDB (IRONIC_ALLOC_TEST_DB), so the answers are the same on all three.
"""

import sqlite3

import sqlalchemy as sa

from ironic_alloc.common import states
from ironic_alloc.conductor import allocations
from ironic_alloc.db import api as db_api
from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.db.sqlalchemy import models
from ironic_alloc.db.sqlalchemy import statements as stmts
from ironic_alloc.objects import allocation as allocation_obj
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests.functional.conductor import test_allocations
from ironic_alloc.tests.functional.conductor import utils

dbapi = db_api.get_instance()


def criteria(**kw):
    """Criteria as conductor/allocations.criteria_of() makes them."""
    values = {'resource_class': 'gold', 'traits': [],
              'forbidden_traits': [], 'any_of_traits': [], 'match': {},
              'candidate_uuids': [], 'owner': None}
    values.update(kw)
    return values


class MatchingTestCase(test_allocations.AllocationTestCase):

    def node(self, name, **kw):
        return utils.make_available_node(self.context, name=name, **kw)

    def found(self, **kw):
        """Names of the nodes the candidate search finds."""
        ids = dbapi.get_allocation_candidates(criteria(**kw), 1000)
        return sorted(node_obj.Node.get_by_id(self.context, i).name
                      for i in ids)

    def allocate_all(self, count, **kw):
        """``count`` allocations in turn: names of the nodes they got
        (None for a failed one) and the last allocation."""
        got = []
        for _ in range(count):
            allocation = self.allocate(**kw)
            if allocation.node_id is None:
                got.append(None)
            else:
                got.append(node_obj.Node.get_by_id(
                    self.context, allocation.node_id).name)
        return got, allocation


class TestTraitOperators(MatchingTestCase):

    def test_required_traits(self):
        self.node('both', traits=['CUSTOM_A', 'CUSTOM_B'])
        self.node('a-only', traits=['CUSTOM_A'])
        self.node('none')
        self.assertEqual(['both'],
                         self.found(traits=['CUSTOM_A', 'CUSTOM_B']))
        self.assertEqual(['a-only', 'both'], self.found(traits=['CUSTOM_A']))

    def test_forbidden_trait(self):
        self.node('gpu', traits=['CUSTOM_GPU'])
        self.node('gpu-and-a', traits=['CUSTOM_GPU', 'CUSTOM_A'])
        self.node('a', traits=['CUSTOM_A'])
        self.node('plain')
        self.assertEqual(['a', 'plain'],
                         self.found(forbidden_traits=['CUSTOM_GPU']))
        self.assertEqual(['a'], self.found(traits=['CUSTOM_A'],
                                           forbidden_traits=['CUSTOM_GPU']))
        self.assertEqual(['plain'], self.found(
            forbidden_traits=['CUSTOM_GPU', 'CUSTOM_A']))
        # Through a conductor, with the expressions as the API stores them.
        got, last = self.allocate_all(3, traits=['!CUSTOM_GPU'])
        self.assertEqual(['a', 'plain'], sorted(got[:2]))
        self.assertIsNone(got[2])
        self.assertEqual(states.ALLOCATION_ERROR, last.state)
        self.assertIn('lacks the forbidden trait CUSTOM_GPU', last.last_error)
        self.assertInvariant()

    def test_forbidden_trait_explained(self):
        self.node('gpu', traits=['CUSTOM_GPU'])
        allocation = self.allocate(traits=['!CUSTOM_GPU'])
        self.assertEqual(states.ALLOCATION_ERROR, allocation.state)
        self.assertIn('lacks the forbidden trait CUSTOM_GPU',
                      allocation.last_error)

    def test_any_of(self):
        self.node('rack-a', traits=['CUSTOM_RACK_A'])
        self.node('rack-b', traits=['CUSTOM_RACK_B', 'CUSTOM_SSD'])
        self.node('rack-c', traits=['CUSTOM_RACK_C', 'CUSTOM_SSD'])
        self.node('both', traits=['CUSTOM_RACK_A', 'CUSTOM_RACK_B'])
        self.assertEqual(['both', 'rack-a', 'rack-b'], self.found(
            any_of_traits=[['CUSTOM_RACK_A', 'CUSTOM_RACK_B']]))
        # Two groups: one of each.
        self.assertEqual(['rack-b'], self.found(any_of_traits=[
            ['CUSTOM_RACK_A', 'CUSTOM_RACK_B'], ['CUSTOM_SSD']]))
        self.assertEqual(['rack-a'], self.found(
            any_of_traits=[['CUSTOM_RACK_A', 'CUSTOM_RACK_B']],
            forbidden_traits=['CUSTOM_RACK_B']))
        got, last = self.allocate_all(
            2, traits=['in:CUSTOM_RACK_C,CUSTOM_RACK_X'])
        self.assertEqual(['rack-c', None], got)
        self.assertIn('has one of the traits CUSTOM_RACK_C, CUSTOM_RACK_X',
                      last.last_error)

    def test_any_of_member_lands_in_instance_info(self):
        node = self.node('rack-b', traits=['CUSTOM_RACK_B', 'CUSTOM_A'])
        allocation = self.allocate(
            traits=['CUSTOM_A', 'in:CUSTOM_RACK_A,CUSTOM_RACK_B',
                    '!CUSTOM_GPU'])
        self.assertEqual(node.id, allocation.node_id)
        node.refresh()
        self.assertEqual(['CUSTOM_A', 'CUSTOM_RACK_B'],
                         node.instance_info['traits'])

    def test_any_of_members_join_existing_instance_info(self):
        # Two members of the group and instance_info set before: both
        # members are written beside what was there.
        node = self.node('rack-ab', traits=['CUSTOM_RACK_A', 'CUSTOM_RACK_B'],
                         instance_info={'image_source': 'img'})
        allocation = self.allocate(
            traits=['in:CUSTOM_RACK_A,CUSTOM_RACK_B,CUSTOM_RACK_C'])
        self.assertEqual(node.id, allocation.node_id)
        node.refresh()
        self.assertEqual({'image_source': 'img',
                          'traits': ['CUSTOM_RACK_A', 'CUSTOM_RACK_B']},
                         node.instance_info)


class TestMatchOperators(MatchingTestCase):

    def test_each_minimum(self):
        # NOTE: one resource class per minimum, so the fleets stay apart.
        for key in ('cpus', 'memory_mb', 'local_gb'):
            values = {'int-8': 8, 'str-16': '16', 'spaced-32': ' 32 ',
                      'int-4': 4, 'float': 64.0, 'words': 'lots',
                      'bool': True, 'negative': '-100', 'null': None,
                      'huge': '9' * 30}
            for name, value in values.items():
                self.node('%s-%s' % (key, name), resource_class=key,
                          properties={key: value})
            self.node('%s-missing' % key, resource_class=key, properties={})

            def found(minimum):
                return [name[len(key) + 1:] for name in self.found(
                    resource_class=key, match={key: minimum})]

            self.assertEqual(['int-8', 'spaced-32', 'str-16'], found(8))
            self.assertEqual(['spaced-32', 'str-16'], found(9))
            self.assertEqual(['int-4', 'int-8', 'spaced-32', 'str-16'],
                             found(0))
            got, last = self.allocate_all(2, resource_class=key,
                                          match={key: 20})
            self.assertEqual(['%s-spaced-32' % key, None], got)
            self.assertIn('has %s of at least 20' % key, last.last_error)

    def test_minimums_together(self):
        self.node('big', properties={'cpus': 64, 'memory_mb': '262144',
                                     'local_gb': 2000})
        self.node('no-disk', properties={'cpus': 64, 'memory_mb': 262144})
        self.node('small', properties={'cpus': '8', 'memory_mb': 16384,
                                       'local_gb': '100'})
        self.assertEqual(['big'], self.found(match={
            'cpus': 32, 'memory_mb': 131072, 'local_gb': 1}))
        self.assertEqual(['big', 'no-disk'], self.found(match={
            'cpus': 32, 'memory_mb': 131072}))

    def test_cpu_arch(self):
        self.node('x86', properties={'cpu_arch': 'x86_64'})
        self.node('upper', properties={'cpu_arch': 'X86_64'})
        self.node('arm', properties={'cpu_arch': 'aarch64'})
        self.node('padded', properties={'cpu_arch': 'x86_64 '})
        self.node('number', properties={'cpu_arch': 64})
        self.node('missing')
        # Equal, byte for byte, on every database (MySQL's default
        # collation would ignore the case); spaces around are dropped.
        self.assertEqual(['padded', 'x86'],
                         self.found(match={'cpu_arch': 'x86_64'}))
        self.assertEqual(['upper'], self.found(match={'cpu_arch': 'X86_64'}))
        self.assertEqual(['arm'], self.found(match={'cpu_arch': 'aarch64'}))
        got, last = self.allocate_all(2, match={'cpu_arch': 'aarch64'})
        self.assertEqual(['arm', None], got)
        self.assertIn('has cpu_arch aarch64', last.last_error)

    def test_capabilities(self):
        self.node('string', properties={
            'capabilities': 'boot_mode:uefi,secure_boot:true'})
        self.node('spaced', properties={
            'capabilities': ' boot_mode : uefi , disk_label:gpt'})
        self.node('object', properties={
            'capabilities': {'boot_mode': 'uefi', 'secure_boot': True,
                             'cores': 8}})
        self.node('bios', properties={'capabilities': 'boot_mode:bios'})
        self.node('upper', properties={'capabilities': 'boot_mode:UEFI'})
        self.node('malformed', properties={'capabilities': 'boot_mode'})
        self.node('list', properties={'capabilities': ['boot_mode:uefi']})
        self.node('none')
        self.assertEqual(['object', 'spaced', 'string'], self.found(
            match={'capabilities': {'boot_mode': 'uefi'}}))
        self.assertEqual(['object', 'string'], self.found(
            match={'capabilities': {'boot_mode': 'uefi',
                                    'secure_boot': 'true'}}))
        self.assertEqual(['object'], self.found(
            match={'capabilities': {'cores': '8'}}))
        self.assertEqual(['upper'], self.found(
            match={'capabilities': {'boot_mode': 'UEFI'}}))
        got, last = self.allocate_all(
            2, match={'capabilities': {'disk_label': 'gpt'}})
        self.assertEqual(['spaced', None], got)
        self.assertIn('has the capability disk_label:gpt', last.last_error)

    def test_conductor_group(self):
        # NOTE: the API lower-cases conductor groups, on nodes and in
        # match (matching.check_match).
        self.node('rack1', conductor_group='rack1')
        self.node('rack2', conductor_group='rack2')
        self.node('default', conductor_group='')
        self.assertEqual(['rack1'],
                         self.found(match={'conductor_group': 'rack1'}))
        self.assertEqual(['default'],
                         self.found(match={'conductor_group': ''}))
        got, last = self.allocate_all(2, match={'conductor_group': 'rack2'})
        self.assertEqual(['rack2', None], got)
        self.assertIn('is in conductor group "rack2"', last.last_error)

    def test_everything_together(self):
        properties = {'cpus': '32', 'memory_mb': 65536, 'local_gb': 500,
                      'cpu_arch': 'x86_64', 'capabilities': 'boot_mode:uefi'}
        self.node('good', properties=properties, conductor_group='g1',
                  traits=['CUSTOM_A', 'CUSTOM_RACK_1'], owner='p1')
        self.node('gpu', properties=properties, conductor_group='g1',
                  traits=['CUSTOM_A', 'CUSTOM_RACK_1', 'CUSTOM_GPU'],
                  owner='p1')
        self.node('other-group', properties=properties, conductor_group='g2',
                  traits=['CUSTOM_A', 'CUSTOM_RACK_1'], owner='p1')
        self.node('bios', properties=dict(
            properties, capabilities='boot_mode:bios'),
            conductor_group='g1', traits=['CUSTOM_A', 'CUSTOM_RACK_1'],
            owner='p1')
        match = {'cpus': 16, 'memory_mb': 32768, 'local_gb': 100,
                 'cpu_arch': 'x86_64', 'conductor_group': 'g1',
                 'capabilities': {'boot_mode': 'uefi'}}
        self.assertEqual(['good'], self.found(
            traits=['CUSTOM_A'], forbidden_traits=['CUSTOM_GPU'],
            any_of_traits=[['CUSTOM_RACK_1', 'CUSTOM_RACK_2']],
            match=match, owner='p1'))
        allocation = self.allocate(
            traits=['CUSTOM_A', '!CUSTOM_GPU',
                    'in:CUSTOM_RACK_1,CUSTOM_RACK_2'],
            match=match, owner='p1')
        self.assertEqual('good', node_obj.Node.get_by_id(
            self.context, allocation.node_id).name)
        self.assertInvariant()


class TestNormalisedProperties(MatchingTestCase):
    """The normalised columns follow every node write of properties."""

    def _stored(self, node_id):
        with sqla_api.get_engine().connect() as conn:
            columns = conn.execute(sa.select(
                models.Node.match_cpus, models.Node.match_memory_mb,
                models.Node.match_local_gb, models.Node.match_cpu_arch,
            ).where(models.Node.id == node_id)).one()
            capabilities = dict(conn.execute(sa.select(
                models.NodeCapability.name, models.NodeCapability.value,
            ).where(models.NodeCapability.node_id == node_id)).all())
        return tuple(columns), capabilities

    def test_create_update_release_and_delete(self):
        node = self.node('n', properties={
            'cpus': '4', 'memory_mb': 1024, 'cpu_arch': 'x86_64',
            'capabilities': 'a:1,b:2'})
        self.assertEqual(((4, 1024, None, 'x86_64'), {'a': '1', 'b': '2'}),
                         self._stored(node.id))
        node.properties = {'local_gb': '10', 'capabilities': {'c': 'x'}}
        node.save()
        self.assertEqual(((None, None, 10, None), {'c': 'x'}),
                         self._stored(node.id))
        # A write that leaves properties alone leaves the columns alone.
        node.extra = {'k': 'v'}
        node.save()
        self.assertEqual(((None, None, 10, None), {'c': 'x'}),
                         self._stored(node.id))
        # The release of a node lock that writes properties.
        locked = node_obj.Node.reserve(self.context, 'test-host', node.id)
        self.assertTrue(locked.release('test-host', {
            'properties': {'cpus': 2, 'capabilities': 'd:4'}}))
        self.assertEqual(((2, None, None, None), {'d': '4'}),
                         self._stored(node.id))
        node.destroy()
        with sqla_api.get_engine().connect() as conn:
            self.assertEqual(0, conn.execute(
                sa.select(sa.func.count()).select_from(
                    models.NodeCapability.__table__)).scalar())


class TestReservationRechecks(MatchingTestCase):
    """The reservation's guarded UPDATE re-checks every operator: a node
    found by the search and changed before the reservation is not taken.
    """

    def setUp(self):
        super().setUp()
        # NOTE: a conductor no running service owns, so nothing but the
        # test works on its allocations.
        self.owner = dbapi.register_conductor('matching-host', '').id

    def _search_change_reserve(self, change, resource_class='gold', **kw):
        node = self.node('n-%s' % resource_class,
                         resource_class=resource_class,
                         traits=['CUSTOM_A'], conductor_group='g1',
                         properties={'cpus': 8, 'cpu_arch': 'x86_64',
                                     'capabilities': 'boot_mode:uefi'})
        allocation = utils.make_allocation(self.context, self.owner,
                                           resource_class=resource_class)
        wanted = criteria(resource_class=resource_class, **kw)
        self.assertEqual([node.id],
                         dbapi.get_allocation_candidates(wanted, 10))
        # Unchanged, the node could be reserved (checked without writing).
        self.assertEqual([node.id], dbapi.get_allocation_candidates(
            wanted, 10, name=node.name))
        change(node)
        self.assertEqual([], dbapi.get_allocation_candidates(wanted, 10))
        self.assertFalse(dbapi.reserve_node_for_allocation(
            allocation.id, self.owner, node.id, wanted))
        node.refresh()
        self.assertIsNone(node.allocation_id)
        self.assertEqual(states.ALLOCATING, allocation_obj.Allocation.
                         get_by_id(self.context, allocation.id).state)

    def _properties(self, **changes):
        def change(node):
            node.properties = dict(node.properties, **changes)
            node.save()
        return change

    def test_each_operator(self):
        cases = [
            (dict(traits=['CUSTOM_A']),
             lambda node: node.remove_trait('CUSTOM_A')),
            (dict(forbidden_traits=['CUSTOM_GPU']),
             lambda node: node.add_trait('CUSTOM_GPU')),
            (dict(any_of_traits=[['CUSTOM_A', 'CUSTOM_B']]),
             lambda node: node.remove_trait('CUSTOM_A')),
            (dict(match={'cpus': 8}), self._properties(cpus='4')),
            (dict(match={'cpu_arch': 'x86_64'}),
             self._properties(cpu_arch='aarch64')),
            (dict(match={'capabilities': {'boot_mode': 'uefi'}}),
             self._properties(capabilities='boot_mode:bios')),
        ]
        for index, (kw, change) in enumerate(cases):
            self._search_change_reserve(change, resource_class='rc%d' % index,
                                        **kw)

    def test_conductor_group(self):
        def change(node):
            node.conductor_group = 'g2'
            node.save()
        self._search_change_reserve(change,
                                    match={'conductor_group': 'g1'})

    def test_criteria_of_an_allocation(self):
        allocation = utils.make_allocation(
            self.context, self.me,
            traits=['CUSTOM_A', '!CUSTOM_GPU', 'in:CUSTOM_B,CUSTOM_C',
                    'in:CUSTOM_D'],
            match={'cpus': 2})
        self.assertEqual(criteria(
            traits=['CUSTOM_A'], forbidden_traits=['CUSTOM_GPU'],
            any_of_traits=[['CUSTOM_B', 'CUSTOM_C'], ['CUSTOM_D']],
            match={'cpus': 2}), allocations.criteria_of(allocation))


class TestSearchForms(MatchingTestCase):
    """PostgreSQL's form of the search (the tests of a node's traits and
    capabilities as one aggregate subquery per table) and the EXISTS form
    of the other databases give the same, right answer, on each database
    under test."""

    TRAITS = ('CUSTOM_A', 'CUSTOM_B', 'CUSTOM_GPU', 'CUSTOM_R1',
              'CUSTOM_R2')

    def _search(self, form, criteria_):
        shape, params = stmts.candidate_shape(criteria_)
        with sqla_api.get_engine().connect() as conn:
            return set(conn.execute(stmts.candidates_from(shape, form),
                                    dict(params, limit=1000)).scalars())

    def test_same_answer(self):
        if (sqla_api.get_engine().dialect.name == 'sqlite'
                and sqlite3.sqlite_version_info < (3, 39)):
            self.skipTest('SQLite before 3.39 has no HAVING without '
                          'GROUP BY')
        # Every subset of TRAITS, each with one of three capabilities.
        nodes = {}
        for index in range(2 ** len(self.TRAITS)):
            traits = {name for bit, name in enumerate(self.TRAITS)
                      if index >> bit & 1}
            boot_mode = ('uefi', 'bios', None)[index % 3]
            properties = ({'capabilities': 'boot_mode:%s' % boot_mode}
                          if boot_mode else {})
            node = self.node('n%d' % index, traits=sorted(traits),
                             properties=properties)
            nodes[node.id] = (traits, boot_mode)
        requests = [
            {},
            {'traits': ['CUSTOM_A']},
            {'traits': ['CUSTOM_A', 'CUSTOM_B']},
            {'forbidden_traits': ['CUSTOM_GPU']},
            {'forbidden_traits': ['CUSTOM_GPU', 'CUSTOM_R1']},
            {'any_of_traits': [['CUSTOM_R1', 'CUSTOM_R2']]},
            {'any_of_traits': [['CUSTOM_R1'], ['CUSTOM_R2', 'CUSTOM_GPU']]},
            {'traits': ['CUSTOM_A', 'CUSTOM_B'],
             'forbidden_traits': ['CUSTOM_GPU'],
             'any_of_traits': [['CUSTOM_R1', 'CUSTOM_R2']]},
            {'match': {'capabilities': {'boot_mode': 'uefi'}}},
            {'traits': ['CUSTOM_A'], 'forbidden_traits': ['CUSTOM_B'],
             'match': {'capabilities': {'boot_mode': 'bios'}}},
        ]
        for request in requests:
            wanted = {
                node_id for node_id, (traits, boot_mode) in nodes.items()
                if set(request.get('traits', [])) <= traits
                and not set(request.get('forbidden_traits', [])) & traits
                and all(set(group) & traits
                        for group in request.get('any_of_traits', []))
                and boot_mode == request.get('match', {}).get(
                    'capabilities', {}).get('boot_mode', boot_mode)}
            for form in ('postgresql', 'sqlite'):
                self.assertEqual(wanted,
                                 self._search(form, criteria(**request)),
                                 '%s form, %s' % (form, request))
