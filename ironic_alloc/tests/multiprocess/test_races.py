"""Races on the same few nodes: reservations against reservations, and
reservations against allocations, with real processes.

Two ``ironic-alloc-api`` processes and two conductors share the tier's
database server (PostgreSQL or MariaDB) and RabbitMQ (see fixtures.py).
Client threads spread over both API ports reserve (POST /v1/reservations,
synchronous) and allocate (POST /v1/allocations with candidate_nodes,
waited for until ``active`` or ``error``) among a handful of nodes, so
that they collide all the time; most give back what they got (DELETE)
and try again, a few keep it.

What is checked:

* every answer is one the API may give: 201 or 409 to a reservation,
  201 to an allocation, 204 to a DELETE, never a 5xx or no answer;
* every 409 names each requested node, in the request's order, with a
  reason; every allocation that got no node is in ``error`` with a
  ``last_error``;
* by the answers' times: two holds of one node never overlap (a hold is
  surely held from the answer that showed it until its DELETE was sent),
  and no node was refused, or passed over for a later one of the list,
  unless a hold of it may have existed at that moment (from its POST
  being sent until its DELETE was answered), of the kind the reason
  names;
* while the clients run and afterwards, snapshots of the rows: a node's
  ``allocation_id`` points to exactly one row whose ``node_id`` is that
  node and whose instance the node has (an allocation's uuid, a
  reservation's instance_uuid); every reservation and active allocation
  has its node pointing back; no node has an instance without a hold;
* at the end: the rows are exactly the holds kept, and both API
  processes show them so (reservations only through /v1/reservations, as
  a node's instance to Ironic's API).
"""

import collections
import json
import math
import random
import threading
import time
import traceback
import uuid

import requests
import sqlalchemy as sa

from ironic_alloc.tests.multiprocess import fixtures as mp
from ironic_alloc.tests.multiprocess import test_fault_tolerance

RESERVATION_HEADERS = dict(mp.api_headers(),
                           **{'OpenStack-API-Version': 'ironic-alloc 1.2'})
# Longer than any run of these tests: no hold ends by its lease here.
LEASE = 3600
# How long a client keeps what it got before its DELETE (at most, s).
HOLD_PAUSE = 0.05
# Bound on waiting for an allocation to leave "allocating" (hangs only).
ALLOCATION_WAIT = 30
# Bound on the clients' whole run (hangs only).
CLIENTS_WAIT = 150

# The reason of a 409 for a node that was held, and the kind of hold it
# names (None: any).
HELD_REASONS = {'reserved': 'reservation',
                'held by an allocation': 'allocation',
                'reserved by a concurrent request': None}

# The answers each request may get.
ALLOWED = {'POST reservation': {201, 409},
           'DELETE reservation': {204},
           'POST allocation': {201},
           'GET allocation': {200},
           'DELETE allocation': {204}}


class Hold:
    """A node held by a reservation or an allocation, as answers showed
    it, with the client's monotonic times."""

    def __init__(self, kind, hold_uuid, node, instance, requested,
                 answered):
        self.kind = kind
        self.uuid = hold_uuid
        self.node = node
        self.instance = instance
        # It cannot have started before its POST was sent ...
        self.requested = requested
        # ... and surely existed from the answer that showed it.
        self.answered = answered
        # It surely existed until its DELETE was sent ...
        self.releasing = None
        # ... and was gone when the DELETE was answered (204).
        self.released = None

    def surely(self):
        return self.answered, self.releasing or math.inf

    def possibly(self):
        return self.requested, self.released or math.inf

    def __repr__(self):
        return '%s %s of node %s' % (self.kind, self.uuid, self.node)


class Refusal:
    """Nodes a request did not get: [(node, reason or None)] between the
    request being sent and its answer."""

    def __init__(self, what, nodes, sent, answered):
        self.what = what
        self.nodes = nodes
        self.sent = sent
        self.answered = answered


class Race:
    """Client threads and what their answers showed."""

    def __init__(self, urls, nodes):
        self.urls = urls
        self.nodes = nodes
        self.holds = []
        self.refusals = []
        self.answers = collections.Counter()
        self.by_api = collections.Counter()
        self.samples = {}
        self.problems = []
        self._lock = threading.Lock()
        self._threads = []
        self._barrier = None

    # Running

    def run(self, clients):
        """Run ``clients`` ([(function, operations, keeps)]) at once, each
        on its own thread, until all are done."""
        self._barrier = threading.Barrier(len(clients))
        for index, (function, operations, keeps) in enumerate(clients):
            thread = threading.Thread(
                target=self._client, args=(index, function, operations,
                                           keeps), daemon=True)
            thread.start()
            self._threads.append(thread)
        deadline = time.monotonic() + CLIENTS_WAIT
        for thread in self._threads:
            thread.join(max(0.1, deadline - time.monotonic()))
        alive = sum(thread.is_alive() for thread in self._threads)
        if alive:
            raise AssertionError('%d client threads still running after '
                                 '%ds' % (alive, CLIENTS_WAIT))

    def _client(self, index, function, operations, keeps):
        rnd = random.Random(index)
        session = requests.Session()
        kept = []
        try:
            self._barrier.wait()
            for _ in range(operations):
                function(session, rnd, keeps and not kept, kept)
        except Exception:
            self.problem('client %d: %s' % (index, traceback.format_exc()))
        finally:
            session.close()

    def problem(self, text):
        with self._lock:
            self.problems.append(text)

    def call(self, session, what, method, url, **kwargs):
        """One request: (sent, answered, response or None)."""
        headers = kwargs.pop('headers', mp.api_headers())
        sent = time.monotonic()
        try:
            resp = session.request(method, url, headers=headers,
                                   timeout=mp.REQUEST_TIMEOUT, **kwargs)
        except requests.RequestException as exc:
            status, text, resp = type(exc).__name__, str(exc), None
        else:
            status, text = resp.status_code, resp.text
        answered = time.monotonic()
        with self._lock:
            self.answers[(what, status)] += 1
            self.by_api.update(u for u in self.urls if url.startswith(u))
            if status not in ALLOWED[what]:
                self.samples.setdefault((what, status), text[:500])
        if resp is not None and resp.status_code not in ALLOWED[what]:
            resp = None
        return sent, answered, resp

    def _add_hold(self, hold):
        with self._lock:
            self.holds.append(hold)

    def _add_refusal(self, refusal):
        with self._lock:
            self.refusals.append(refusal)

    def _release(self, session, rnd, hold, path):
        """DELETE ``hold`` after a short pause."""
        time.sleep(rnd.uniform(0, HOLD_PAUSE))
        what = 'DELETE %s' % hold.kind
        hold.releasing = time.monotonic()
        sent, answered, resp = self.call(
            session, what, 'DELETE',
            '%s%s/%s' % (rnd.choice(self.urls), path, hold.uuid),
            headers=(RESERVATION_HEADERS if hold.kind == 'reservation'
                     else mp.api_headers()))
        if resp is not None:
            hold.released = answered

    # The clients

    def reserve(self, session, rnd, keep, kept):
        """POST a reservation for a new instance on 2 or 3 of the nodes;
        DELETE it unless ``keep``."""
        nodes = rnd.sample(self.nodes, rnd.randint(2, 3))
        instance = str(uuid.uuid4())
        sent, answered, resp = self.call(
            session, 'POST reservation', 'POST',
            rnd.choice(self.urls) + '/v1/reservations',
            headers=RESERVATION_HEADERS,
            json={'instance_uuid': instance, 'node_uuid': nodes,
                  'ttl': LEASE})
        if resp is None:
            return
        body = resp.json()
        if resp.status_code == 409:
            fault = json.loads(body['error_message'])
            reasons = fault.get('reasons') or []
            if ([r.get('node_uuid') for r in reasons] != nodes
                    or not all(r.get('reason') for r in reasons)
                    or not all(n in fault['faultstring'] for n in nodes)):
                self.problem('409 without a reason for each of %s: %s'
                             % (nodes, fault))
            self._add_refusal(Refusal(
                '409 to the reservation of %s' % nodes,
                [(r.get('node_uuid'), r.get('reason')) for r in reasons],
                sent, answered))
            return
        reservation = body['reservation']
        node = reservation['node_uuid']
        if node not in nodes or reservation['instance_uuid'] != instance:
            self.problem('reservation for %s on %s: %s'
                         % (instance, nodes, reservation))
            return
        hold = Hold('reservation', reservation['uuid'], node, instance,
                    sent, answered)
        self._add_hold(hold)
        # The nodes before it in the list could not be reserved.
        passed_over = nodes[:nodes.index(node)]
        if passed_over:
            self._add_refusal(Refusal(
                'reservation %s passed over' % hold.uuid,
                [(n, None) for n in passed_over], sent, answered))
        if keep:
            kept.append(hold)
        else:
            self._release(session, rnd, hold, '/v1/reservations')

    def allocate(self, session, rnd, keep, kept):
        """POST an allocation with 2 or more of the nodes as candidates,
        wait until it is active or in error, DELETE it unless ``keep``."""
        nodes = rnd.sample(self.nodes, rnd.randint(2, len(self.nodes)))
        url = rnd.choice(self.urls)
        sent, answered, resp = self.call(
            session, 'POST allocation', 'POST', url + '/v1/allocations',
            json={'resource_class': mp.RESOURCE_CLASS,
                  'candidate_nodes': nodes})
        if resp is None:
            return
        allocation = resp.json()
        deadline = time.monotonic() + ALLOCATION_WAIT
        while allocation['state'] == 'allocating':
            if time.monotonic() > deadline:
                self.problem('allocation %s still allocating after %ds'
                             % (allocation['uuid'], ALLOCATION_WAIT))
                return
            time.sleep(0.05)
            answered, resp = self.call(
                session, 'GET allocation', 'GET',
                '%s/v1/allocations/%s' % (rnd.choice(self.urls),
                                          allocation['uuid']))[1:]
            if resp is None:
                return
            allocation = resp.json()
        hold = Hold('allocation', allocation['uuid'],
                    allocation.get('node_uuid'), allocation['uuid'], sent,
                    answered)
        if allocation['state'] == 'error':
            if not allocation.get('last_error') or hold.node is not None:
                self.problem('allocation in error without last_error or '
                             'with a node: %s' % allocation)
            self._add_refusal(Refusal(
                'allocation %s in error: %s' % (
                    hold.uuid, allocation.get('last_error')),
                [(n, None) for n in nodes], sent, answered))
            self.call(session, 'DELETE allocation', 'DELETE',
                      '%s/v1/allocations/%s' % (url, hold.uuid))
            return
        if allocation['state'] != 'active' or hold.node not in nodes:
            self.problem('allocation on %s: %s' % (nodes, allocation))
            return
        self._add_hold(hold)
        if keep:
            kept.append(hold)
        else:
            self._release(session, rnd, hold, '/v1/allocations')

    # What the answers showed

    def overlapping_holds(self):
        """Pairs of holds of one node that surely existed at once."""
        by_node = collections.defaultdict(list)
        for hold in self.holds:
            by_node[hold.node].append(hold)
        found = []
        for holds in by_node.values():
            holds.sort(key=lambda h: h.answered)
            for i, first in enumerate(holds):
                for second in holds[i + 1:]:
                    if _overlap(first.surely(), second.surely(),
                                strict=True):
                        found.append((first, second))
        return found

    def unexplained_refusals(self):
        """(refusal, node, reason) for each node refused while no hold of
        it (of the kind the reason names) may have existed."""
        found = []
        for refusal in self.refusals:
            window = (refusal.sent, refusal.answered)
            for node, reason in refusal.nodes:
                if reason is not None and reason not in HELD_REASONS:
                    found.append((refusal.what, node, reason))
                    continue
                kind = HELD_REASONS.get(reason)
                if not any(h.node == node and kind in (None, h.kind)
                           and _overlap(h.possibly(), window)
                           for h in self.holds):
                    found.append((refusal.what, node, reason))
        return found

    def kept(self):
        return {h.uuid: h for h in self.holds if h.releasing is None}


def _overlap(first, second, strict=False):
    if strict:
        return first[0] < second[1] and second[0] < first[1]
    return first[0] <= second[1] and second[0] <= first[1]


def holding_problems(engine):
    """What disagrees in one snapshot of the hold and node rows."""
    conn = engine.connect().execution_options(
        isolation_level='REPEATABLE READ')
    try:
        with conn.begin():
            # NOTE: one transaction at REPEATABLE READ: both reads see
            # the same snapshot on PostgreSQL and on InnoDB.
            holds = {r.id: r for r in conn.execute(sa.text(
                'SELECT id, uuid, kind, state, node_id, instance_uuid '
                'FROM allocations'))}
            nodes = {r.id: r for r in conn.execute(sa.text(
                'SELECT id, uuid, allocation_id, instance_uuid FROM nodes'))}
    finally:
        conn.close()
    problems = []
    for node in nodes.values():
        if node.allocation_id is None:
            if node.instance_uuid is not None:
                problems.append('node %s has instance %s and no hold'
                                % (node.uuid, node.instance_uuid))
            continue
        hold = holds.get(node.allocation_id)
        if hold is None or hold.node_id != node.id:
            problems.append('node %s points to hold %s, which does not '
                            'point back (%s)' % (node.uuid,
                                                 node.allocation_id, hold))
            continue
        instance = (hold.instance_uuid if hold.kind == 'reservation'
                    else hold.uuid)
        if node.instance_uuid != instance:
            problems.append('node %s has instance %s, its %s %s has %s'
                            % (node.uuid, node.instance_uuid, hold.kind,
                               hold.uuid, instance))
    for hold in holds.values():
        holding = hold.kind == 'reservation' or hold.state == 'active'
        if hold.kind == 'reservation' and hold.state != 'active':
            problems.append('reservation %s in state %s'
                            % (hold.uuid, hold.state))
        if not holding:
            if hold.node_id is not None:
                problems.append('%s allocation %s has node id %s'
                                % (hold.state, hold.uuid, hold.node_id))
            continue
        node = nodes.get(hold.node_id)
        if node is None or node.allocation_id != hold.id:
            problems.append('%s %s (node id %s): its node does not point '
                            'back (%s)' % (hold.kind, hold.uuid,
                                           hold.node_id, node))
    by_node = collections.Counter(h.node_id for h in holds.values()
                                  if h.node_id is not None)
    problems.extend('node id %s has %d holds' % (node_id, count)
                    for node_id, count in by_node.items() if count > 1)
    return problems


class Watch:
    """Snapshots of the rows, taken on a thread while the clients run."""

    def __init__(self, engine):
        self.engine = engine
        self.snapshots = 0
        self.problems = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(mp.REQUEST_TIMEOUT)

    def _run(self):
        while not self._stop.is_set():
            try:
                found = holding_problems(self.engine)
            except Exception:
                found = [traceback.format_exc()]
            self.snapshots += 1
            if found and len(self.problems) < 20:
                self.problems.append((self.snapshots, found))
            self._stop.wait(0.05)


class TestRaces(test_fault_tolerance.MultiProcessTestCase):

    def start_cluster(self, nodes):
        """Two API processes, two conductors, ``nodes`` available nodes;
        returns (urls, node uuids)."""
        self.cluster.rebuild_schema()
        node_uuids = self.cluster.load_nodes(nodes)
        urls = [self.cluster.start_api() for _ in range(2)]
        for name in ('c1', 'c2'):
            self.cluster.start_conductor(name)
        mp.log('API processes %s, conductors c1 and c2, %d nodes', urls,
               nodes)
        return urls, node_uuids

    def race(self, urls, nodes, clients):
        race = Race(urls, nodes)
        watch = Watch(self.cluster.engine).start()
        self.addCleanup(watch.stop)
        started = time.monotonic()
        race.run([(getattr(race, function), operations, keeps)
                  for function, operations, keeps in clients])
        watch.stop()
        mp.log('%d clients done in %.1fs; answers: %s', len(clients),
               time.monotonic() - started, dict(race.answers))
        mp.log('%d holds (%s), %d refusals; %d snapshots of the rows '
               'taken meanwhile', len(race.holds),
               dict(collections.Counter(h.kind for h in race.holds)),
               len(race.refusals), watch.snapshots)
        bad = {k: n for k, n in race.answers.items()
               if k[1] not in ALLOWED[k[0]]}
        self.assertEqual({}, bad, 'unexpected answers; samples: %s'
                         % race.samples)
        self.assertEqual([], race.problems)
        self.assertGreater(watch.snapshots, 0)
        self.assertEqual([], watch.problems,
                         'rows disagreed while the clients ran')
        self.assertEqual([], race.overlapping_holds(), 'nodes held twice')
        self.assertEqual([], race.unexplained_refusals(),
                         'nodes refused while no hold of them existed')
        self.check_end(race)
        for proc in self.cluster.processes():
            self.assertTrue(proc.running(), '%s exited' % proc.name)
        return race

    def check_end(self, race):
        """The rows and both API processes show the holds kept."""
        self.assertEqual([], holding_problems(self.cluster.engine))
        kept = race.kept()
        with self.cluster.engine.connect() as conn:
            rows = {r.uuid: (r.kind, r.node_uuid) for r in conn.execute(
                sa.text('SELECT a.uuid, a.kind, n.uuid AS node_uuid FROM '
                        'allocations a LEFT JOIN nodes n ON n.id = '
                        'a.node_id'))}
        self.assertEqual({h.uuid: (h.kind, h.node) for h in kept.values()},
                         rows)
        reservations = {u: h.node for u, h in kept.items()
                        if h.kind == 'reservation'}
        allocations = {u: ('active', h.node) for u, h in kept.items()
                       if h.kind == 'allocation'}
        for url in race.urls:
            self.assertEqual(reservations, self.list_reservations(url))
            self.assertEqual(allocations, mp.list_allocations(url))
            resp = requests.get(
                url + '/v1/nodes?fields=uuid,instance_uuid,allocation_uuid',
                headers=mp.api_headers(), timeout=mp.REQUEST_TIMEOUT)
            self.assertEqual(200, resp.status_code, resp.text)
            by_node = {h.node: h for h in kept.values()}
            for node in resp.json()['nodes']:
                hold = by_node.get(node['uuid'])
                expected = (None, None)
                if hold is not None:
                    # NOTE: Ironic's API shows a reserved node as a node
                    # with an instance and no allocation.
                    expected = (hold.instance, hold.uuid if hold.kind ==
                                'allocation' else None)
                self.assertEqual(expected, (node['instance_uuid'],
                                            node['allocation_uuid']),
                                 node)
        mp.log('at the end: %d reservations and %d allocations kept, rows '
               'and both API processes agree', len(reservations),
               len(allocations))

    @staticmethod
    def list_reservations(url):
        """{uuid: node_uuid} of every reservation, through the API."""
        result = {}
        following = url + '/v1/reservations?limit=50'
        while following:
            resp = requests.get(following, headers=RESERVATION_HEADERS,
                                timeout=mp.REQUEST_TIMEOUT)
            resp.raise_for_status()
            body = resp.json()
            result.update((r['uuid'], r['node_uuid'])
                          for r in body['reservations'])
            following = body.get('next')
        return result

    def assert_both_served(self, race):
        """Both API processes answered, and both conductors reserved
        nodes for allocations when there were any."""
        mp.log('requests per API process: %s', dict(race.by_api))
        self.assertEqual(set(race.urls), set(race.by_api))
        if any(h.kind == 'allocation' for h in race.holds):
            counts = {name: self.cluster.grep_logs('reserved node', [name])
                      for name in ('c1', 'c2')}
            mp.log('allocations that got a node, by conductor: %s', counts)
            self.assertEqual([], [n for n, c in counts.items() if not c])

    def test_reservations_against_reservations(self):
        """Ten clients reserve among four nodes; two keep the first node
        they get, the others give theirs back at once and try again."""
        urls, nodes = self.start_cluster(4)
        race = self.race(urls, nodes,
                         [('reserve', 40, index < 2) for index in range(10)])
        # NOTE: a race where nobody was refused tested nothing.
        self.assertTrue(race.refusals, 'no request collided')
        self.assertIn(('POST reservation', 201), race.answers)
        self.assert_both_served(race)

    def test_reservations_against_allocations(self):
        """Five clients reserve and five allocate among the same four
        nodes; one of each kind keeps the first node it gets."""
        urls, nodes = self.start_cluster(4)
        clients = ([('reserve', 30, index == 0) for index in range(5)] +
                   [('allocate', 15, index == 0) for index in range(5)])
        race = self.race(urls, nodes, clients)
        kinds = collections.Counter(h.kind for h in race.holds)
        self.assertTrue(kinds['reservation'] and kinds['allocation'],
                        kinds)
        self.assertTrue(race.refusals, 'no request collided')
        self.assert_both_served(race)
