"""kill -9 of conductors in the middle of allocation groups.

Clients create allocation groups (extension 1.3) on a fleet too small for
all of them, while the test kills the conductor owning allocating groups
with SIGKILL at random moments and starts it again (a new registration:
the killed one's groups are orphans until the survivors take them over).
Once no group is allocating, every group must be all-held or none-held,
and node and allocation rows must agree.  The processes are real (see
fixtures.py), on RabbitMQ and PostgreSQL or MariaDB.
"""

import collections
import random
import threading
import time

from oslo_utils import uuidutils
import requests
import sqlalchemy as sa

from ironic_alloc.tests.multiprocess import fixtures as mp
from ironic_alloc.tests.multiprocess import test_fault_tolerance as base

GROUP_EXTENSION = 'ironic-alloc 1.3'
GROUPS = 30
SMALLEST, LARGEST = 3, 6
# Fewer nodes than members in all: some groups must fail, and the ones
# arriving last compete for the few nodes left.
SHORTAGE = 15
KILLS = 4


def group_headers():
    return dict(mp.api_headers(), **{'OpenStack-API-Version':
                                     GROUP_EXTENSION})


class GroupClients:
    """POSTs groups, a batch at a time, one thread per group."""

    def __init__(self, url):
        self.url = url
        self.created = {}
        self.answers = collections.Counter()
        self.samples = {}
        self._lock = threading.Lock()

    def post_batch(self, sizes):
        threads = [threading.Thread(target=self._post, args=(size,),
                                    daemon=True) for size in sizes]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + mp.REQUEST_TIMEOUT + 5
        for thread in threads:
            thread.join(max(0.1, deadline - time.monotonic()))
        if any(thread.is_alive() for thread in threads):
            raise AssertionError('group POSTs still blocked')

    def _post(self, size):
        members = {uuidutils.generate_uuid(): {
            'resource_class': mp.RESOURCE_CLASS} for _ in range(size)}
        try:
            resp = requests.post(self.url + '/v1/allocation_groups',
                                 json={'members': members},
                                 headers=group_headers(),
                                 timeout=mp.REQUEST_TIMEOUT)
            status = resp.status_code
        except requests.RequestException as exc:
            status, resp = type(exc).__name__, None
        with self._lock:
            self.answers[status] += 1
            if status == 201:
                self.created[resp.json()['uuid']] = set(members)
            elif status not in self.samples:
                self.samples[status] = (resp.text[:300] if resp is not None
                                        else '')


class TestGroupsUnderKills(base.MultiProcessTestCase):

    def test_killed_conductors_leave_groups_all_or_nothing(self):
        rnd = random.Random(self.id())
        sizes = [rnd.randint(SMALLEST, LARGEST) for _ in range(GROUPS)]
        nodes = sum(sizes) - SHORTAGE
        url, = self.prepare(nodes=nodes)
        self.killed = ('c1', 'c2')
        clients = GroupClients(url)
        kills = []
        batch = -(-GROUPS // KILLS)
        # NOTE: each kill races a batch of groups being created: the victim
        # is the first conductor seen owning allocating groups while the
        # batch is posted and solved (a quiet machine settles a batch
        # within moments of its last POST, so a kill after the batch would
        # mostly find nothing to interrupt).
        for start in range(0, GROUPS, batch):
            errors = []
            poster = threading.Thread(
                target=self._post_batch,
                args=(clients, sizes[start:start + batch], errors),
                daemon=True)
            poster.start()
            kills.append(self._kill_owner(rnd, poster))
            poster.join(mp.REQUEST_TIMEOUT + 10)
            self.assertFalse(poster.is_alive(), 'group POSTs still blocked')
            self.assertEqual([], errors)
        mp.log('%d groups of %d members on %d nodes; answers %s; kills '
               '(conductor, allocating groups it owned): %s',
               GROUPS, sum(sizes), nodes, dict(clients.answers), kills)
        self.assertEqual({201: GROUPS}, dict(clients.answers),
                         'samples: %s' % clients.samples)
        waited = self._wait_groups_settled(base.TAKE_OVER_BOUND + 20)
        outcome = self._check_groups(clients.created)
        members = set().union(*clients.created.values())
        counts = mp.check_consistency(self.cluster, url, members, ())
        mp.log('groups settled %.1fs after the last kill: %s; rows: %s',
               waited, dict(outcome), counts)
        # NOTE: the fleet is short of nodes for all of them together.
        self.assertGreater(outcome['error'], 0)
        self.assertGreater(outcome['active'], 0)
        self.assertTrue(any(owned for _name, owned in kills),
                        'no kill found a conductor owning a group')
        mp.log('take-overs of groups according to the logs: %d',
               self.cluster.grep_logs('Took over allocation group'))

    @staticmethod
    def _post_batch(clients, sizes, errors):
        try:
            clients.post_batch(sizes)
        except AssertionError as exc:
            errors.append(str(exc))

    def _kill_owner(self, rnd, poster):
        """kill -9 a conductor (the first seen owning allocating groups
        while ``poster`` creates a batch, or any once the batch has
        settled) and start it again; returns (its name, groups it
        owned)."""
        settled_at = None
        while True:
            owned = {}
            for name in sorted(self.cluster.conductors):
                owned[name] = self._allocating_groups(
                    self.cluster.conductor_id(name))
            busy = sorted(n for n, groups in owned.items() if groups)
            if busy:
                break
            if not poster.is_alive():
                settled_at = settled_at or time.monotonic()
                if time.monotonic() - settled_at > 0.5:
                    break
            time.sleep(0.005)
        victim = rnd.choice(busy or sorted(owned))
        before = self.cluster.conductor_id(victim)
        self.cluster.conductors[victim].kill()
        mp.log('kill -9 %s owning %d allocating groups', victim,
               len(owned[victim]))
        # NOTE: the killed run's row still names the host, so the
        # fixture's wait would return at once: wait for the new run's
        # registration, so that the next kill never leaves the fleet
        # without a live conductor (the API would answer 503).
        self.cluster.start_conductor(victim, wait=False)
        self.wait_for('%s registered again' % victim,
                      lambda: self.cluster.conductor_id(victim) != before,
                      mp.START_TIMEOUT)
        self.cluster.wait_conductor_alive(victim)
        return victim, len(owned[victim])

    def _allocating_groups(self, conductor_id):
        with self.cluster.engine.connect() as conn:
            return conn.execute(sa.text(
                "SELECT uuid FROM allocation_groups WHERE state = "
                "'allocating' AND conductor_affinity = :c"),
                {'c': conductor_id}).scalars().all()

    def _wait_groups_settled(self, timeout):
        start = time.monotonic()
        while True:
            with self.cluster.engine.connect() as conn:
                stuck = conn.execute(sa.text(
                    "SELECT uuid, conductor_affinity FROM allocation_groups "
                    "WHERE state = 'allocating'")).all()
            if not stuck:
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                self.fail('%d groups still allocating after %ds: %s\n%s'
                          % (len(stuck), timeout, stuck[:10],
                             self.cluster.conductor_table()))
            time.sleep(0.5)

    def _check_groups(self, created):
        """Every group active with every member holding its own node, or
        error with no member holding any; returns the count by state."""
        with self.cluster.engine.connect() as conn:
            groups = {r.uuid: r for r in conn.execute(sa.text(
                'SELECT id, uuid, state, last_error FROM allocation_groups'))}
            members = collections.defaultdict(list)
            for row in conn.execute(sa.text(
                    'SELECT uuid, group_id, state, node_id FROM allocations '
                    'WHERE group_id IS NOT NULL')):
                members[row.group_id].append(row)
            holders = dict(conn.execute(sa.text(
                'SELECT id, allocation_id FROM nodes WHERE allocation_id IS '
                'NOT NULL')).all())
        self.assertEqual(set(created), set(groups))
        outcome = collections.Counter()
        for uuid, group in groups.items():
            rows = members[group.id]
            self.assertEqual(created[uuid], {r.uuid for r in rows},
                             'members of group %s' % uuid)
            outcome[group.state] += 1
            if group.state == 'active':
                held = [r.node_id for r in rows]
                self.assertEqual({'active'}, {r.state for r in rows},
                                 'group %s' % uuid)
                self.assertNotIn(None, held, 'group %s' % uuid)
                self.assertEqual(len(held), len(set(held)),
                                 'group %s holds a node twice' % uuid)
                self.assertTrue(all(n in holders for n in held))
            else:
                self.assertEqual('error', group.state, 'group %s' % uuid)
                self.assertTrue(group.last_error)
                self.assertEqual({('error', None)},
                                 {(r.state, r.node_id) for r in rows},
                                 'failed group %s holds nodes' % uuid)
        return outcome
