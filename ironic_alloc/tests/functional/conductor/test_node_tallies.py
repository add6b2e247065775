"""Node tallies: the counts explanations read stay equal to the nodes.

Every kind of node write is followed by a comparison of the stored
tallies (folded, plus the changes not yet folded) with tallies computed
from the node rows in Python, without the triggers.  Folds race each other
and node writers with real threads on the real database; nothing is lost
or counted twice.  An explanation read from the tallies equals the one
read by a pass over the nodes.
"""

import random
import threading

from oslo_utils import uuidutils

from ironic_alloc.common import states
from ironic_alloc.db import api as db_api
from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.db.sqlalchemy import models
from ironic_alloc.db.sqlalchemy import statements as stmts
from ironic_alloc.tests.functional.conductor import test_allocations
from ironic_alloc.tests.functional.conductor import utils

dbapi = db_api.get_instance()


def _unfolded_changes():
    with sqla_api._session_for_read() as session:
        return session.query(models.NODE_TALLY_CHANGES).count()


def _fold_all():
    while dbapi.fold_node_tallies(1000):
        pass


def _scan_funnel(criteria, project=None):
    """The funnel's counts by one pass over the nodes (as for a
    candidate list)."""
    shape, params = stmts.candidate_shape(criteria)
    if project:
        params = dict(params, c_visible_project=project)
    with sqla_api._connection_for_read() as conn:
        counts = dict(conn.execute(stmts.funnel(shape, project),
                                   params).all())
    return {step: count for step, count in counts.items() if count}


def _tally_funnel(criteria, project=None):
    shape, params = stmts.candidate_shape(criteria)
    if project:
        params = dict(params, c_visible_project=project)
    with sqla_api._connection_for_read() as conn:
        counts = sqla_api._funnel_of_tallies(
            stmts.candidate_groups(shape), params,
            conn.execute(stmts.tally_rows(project), params))
    return {step: count for step, count in counts.items() if count}


class TestTalliesFollowEveryWrite(test_allocations.AllocationTestCase):

    def assertTallies(self):
        self.assertEqual(utils.live_tallies(), utils.stored_tallies())

    def test_every_kind_of_write(self):
        node = utils.make_available_node(
            self.context, traits=['CUSTOM_B', 'CUSTOM_A'], owner='p1',
            properties={'cpus': '8', 'capabilities': 'boot_mode:uefi'})
        other = utils.make_available_node(self.context)
        self.assertTallies()
        writes = [
            ('properties', lambda: dbapi.update_node(node.id, {
                'properties': {'cpus': 16, 'memory_mb': '4096',
                               'capabilities': 'boot_mode:bios,x:1'}})),
            ('owner', lambda: dbapi.update_node(node.id, {'owner': 'p2'})),
            ('lessee', lambda: dbapi.update_node(node.id,
                                                 {'lessee': 'p3'})),
            ('maintenance', lambda: dbapi.update_node(
                node.id, {'maintenance': True})),
            ('out of maintenance', lambda: dbapi.update_node(
                node.id, {'maintenance': False})),
            ('power', lambda: dbapi.update_node(node.id,
                                                {'power_state': None})),
            ('power back', lambda: dbapi.update_node(
                node.id, {'power_state': states.POWER_ON})),
            ('retired', lambda: dbapi.update_node(node.id,
                                                  {'retired': True})),
            ('not retired', lambda: dbapi.update_node(node.id,
                                                      {'retired': False})),
            ('conductor group', lambda: dbapi.update_node(
                node.id, {'conductor_group': 'g2'})),
            ('resource class', lambda: dbapi.update_node(
                other.id, {'resource_class': 'silver'})),
            ('provision state', lambda: dbapi.update_node(
                other.id, {'provision_state': states.MANAGEABLE})),
            ('set traits', lambda: dbapi.set_node_traits(
                node.id, ['CUSTOM_C', 'CUSTOM_A'])),
            ('add trait', lambda: dbapi.add_node_trait(node.id,
                                                       'CUSTOM_D')),
            ('remove trait', lambda: dbapi.delete_node_trait(node.id,
                                                             'CUSTOM_A')),
            ('instance', lambda: dbapi.update_node(
                other.id, {'instance_uuid': uuidutils.generate_uuid()})),
            ('no instance', lambda: dbapi.update_node(
                other.id, {'instance_uuid': None})),
            ('no change of the key', lambda: dbapi.update_node(
                node.id, {'description': 'a node'})),
        ]
        for name, write in writes:
            write()
            self.assertEqual(utils.live_tallies(), utils.stored_tallies(),
                             name)
        # Held by an allocation, then freed by its deletion.
        allocation = self.allocate(resource_class='gold', owner='p2')
        self.assertEqual(states.ALLOCATION_ACTIVE, allocation.state)
        self.assertEqual(node.id, allocation.node_id)
        self.assertTallies()
        dbapi.destroy_allocation(allocation.id)
        self.assertTallies()
        # Folded: the changes are gone, the tallies alone are the counts.
        _fold_all()
        self.assertEqual(0, _unfolded_changes())
        self.assertTallies()
        dbapi.destroy_node(node.id)
        dbapi.destroy_node(other.id)
        self.assertEqual({}, utils.stored_tallies())
        _fold_all()
        with sqla_api._session_for_read() as session:
            self.assertEqual(0, session.query(models.NODE_TALLIES).count())

    def test_a_write_rolled_back_changes_nothing(self):
        node = utils.make_available_node(self.context)
        _fold_all()
        before = utils.stored_tallies()

        class Abort(Exception):
            pass

        try:
            with sqla_api._session_for_write() as session:
                session.query(models.Node).filter_by(id=node.id).update(
                    {'maintenance': True}, synchronize_session=False)
                raise Abort()
        except Abort:
            pass
        self.assertEqual(0, _unfolded_changes())
        self.assertEqual(before, utils.stored_tallies())
        self.assertTallies()


class TestFoldRaces(test_allocations.AllocationTestCase):
    """Folds of three threads race node writers of four; each fold takes
    few changes at a time, so they interleave with the writes."""

    def test_folds_race_writes(self):
        nodes = [utils.make_available_node(
            self.context, traits=['CUSTOM_A'], owner='p%d' % (i % 3))
            for i in range(12)]
        stop = threading.Event()
        errors = []
        folded = []

        def write(seed):
            rng = random.Random(seed)
            try:
                while not stop.is_set():
                    node = rng.choice(nodes)
                    change = rng.randrange(4)
                    if change == 0:
                        dbapi.update_node(node.id, {
                            'maintenance': rng.choice([True, False])})
                    elif change == 1:
                        dbapi.update_node(node.id, {
                            'owner': 'p%d' % rng.randrange(3)})
                    elif change == 2:
                        dbapi.set_node_traits(node.id, rng.sample(
                            ['CUSTOM_A', 'CUSTOM_B', 'CUSTOM_C'],
                            rng.randrange(3)))
                    else:
                        dbapi.update_node(node.id, {'properties': {
                            'memory_mb': rng.choice([1024, 2048])}})
            except Exception as exc:
                errors.append(exc)

        def fold():
            try:
                while not stop.is_set():
                    folded.append(dbapi.fold_node_tallies(7))
            except Exception as exc:
                errors.append(exc)

        threads = ([threading.Thread(target=write, args=(seed,))
                    for seed in range(4)]
                   + [threading.Thread(target=fold) for _ in range(3)])
        for thread in threads:
            thread.start()
        stop.wait(3)
        stop.set()
        for thread in threads:
            thread.join(60)
        self.assertEqual([], errors)
        self.assertGreater(sum(folded), 0)
        # Exact before the last fold (changes included) and after it.
        self.assertEqual(utils.live_tallies(), utils.stored_tallies())
        _fold_all()
        self.assertEqual(0, _unfolded_changes())
        self.assertEqual(utils.live_tallies(), utils.stored_tallies())
        with sqla_api._session_for_read() as session:
            counts = [row.nodes for row in session.query(
                models.NODE_TALLIES)]
        self.assertTrue(all(count > 0 for count in counts), counts)
        self.assertInvariant()


class TestFunnelOfTallies(test_allocations.AllocationTestCase):
    """The funnel read from the tallies equals the pass over the nodes,
    for random fleets and random criteria of every operator."""

    TRAITS = ['CUSTOM_A', 'CUSTOM_B', 'CUSTOM_C', 'CUSTOM_D']

    def _random_fleet(self, rng, count):
        for _ in range(count):
            values = {
                'owner': rng.choice(['p1', 'p2', None]),
                'lessee': rng.choice(['p1', 'p3', None]),
                'conductor_group': rng.choice(['', 'g1']),
                'maintenance': rng.random() < 0.2,
                'retired': rng.random() < 0.1,
                'power_state': rng.choice([states.POWER_OFF, None,
                                           states.POWER_ON]),
                'provision_state': rng.choice([states.AVAILABLE] * 4
                                              + [states.MANAGEABLE]),
                'resource_class': rng.choice(['gold'] * 5 + ['silver']),
                'traits': rng.sample(self.TRAITS, rng.randrange(4)),
                'properties': {
                    'cpus': rng.choice([4, '8', 'many', None]),
                    'memory_mb': rng.choice([1024, '4096', None]),
                    'local_gb': rng.choice([10, 100]),
                    'cpu_arch': rng.choice(['x86_64', 'aarch64', None]),
                    'capabilities': rng.choice(['boot_mode:uefi',
                                                'boot_mode:bios', ''])},
            }
            if rng.random() < 0.2:
                values['instance_uuid'] = uuidutils.generate_uuid()
            utils.make_node(self.context, **values)

    def _random_criteria(self, rng):
        traits = rng.sample(self.TRAITS, 3)
        criteria = {'resource_class': 'gold',
                    'traits': traits[:rng.randrange(2)],
                    'forbidden_traits': traits[2:3] if rng.random() < 0.5
                    else [],
                    'any_of_traits': ([rng.sample(self.TRAITS, 2)]
                                      if rng.random() < 0.5 else [])}
        if rng.random() < 0.5:
            criteria['owner'] = rng.choice(['p1', 'p2', 'p3'])
        match = {}
        for key, values in (('cpus', [4, 8]), ('memory_mb', [2048]),
                            ('local_gb', [50]),
                            ('cpu_arch', ['x86_64']),
                            ('capabilities', [{'boot_mode': 'uefi'}]),
                            ('conductor_group', ['', 'g1'])):
            if rng.random() < 0.4:
                match[key] = rng.choice(values)
        if match:
            criteria['match'] = match
        return criteria

    def test_same_as_the_pass_over_the_nodes(self):
        rng = random.Random(2026)
        self._random_fleet(rng, 80)
        for round_number in range(40):
            criteria = self._random_criteria(rng)
            project = rng.choice([None, None, 'p1', 'p3'])
            self.assertEqual(_scan_funnel(criteria, project),
                             _tally_funnel(criteria, project),
                             (criteria, project))
            if round_number == 20:
                _fold_all()

    def test_explanation_exact_while_allocating(self):
        # Allocations change the nodes between explanations; each
        # explanation still adds up to the class and counts the held.
        for _ in range(6):
            utils.make_available_node(self.context, traits=['CUSTOM_A'])
        criteria = {'resource_class': 'gold', 'traits': ['CUSTOM_A'],
                    'candidate_uuids': [], 'owner': None}
        for held in range(1, 4):
            allocation = self.allocate(traits=['CUSTOM_A'])
            self.assertEqual(states.ALLOCATION_ACTIVE, allocation.state)
            funnel = dbapi.explain_allocation(criteria, examples=10)
            self.assertEqual(6, funnel['nodes'])
            removed = {s['step']: s['removed'] for s in funnel['steps']}
            self.assertEqual(held, removed['held'])
            self.assertEqual(6 - held, funnel['matching_nodes'])
            self.assertEqual(6 - held, len(funnel['examples']))
