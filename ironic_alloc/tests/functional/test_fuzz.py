"""Fuzzing every operation of the OpenAPI description: the database side.

The schemathesis tier (tests/fuzzing) fuzzes the same description on
SQLite and checks every answer against it (no 5xx, status codes, bodies,
Ironic's error body).  This test covers what it does not: the state of
the database around each request, and the database servers (PostgreSQL,
MariaDB) the functional tiers also run on, where text a database refuses
or compares its own way (NUL, LIKE wildcards, very long values) would
surface as a 5xx.  So its inputs are those that reach the database; the
ones that never do (malformed microversions, media types, bodies that
are not JSON or too deep: refused before any query) are left to
schemathesis and test_input_limits.py.

The development server listens on a real socket in front of the real WSGI
application and a real conductor (fake:// RPC), on the test database
(SQLite, or IRONIC_ALLOC_TEST_DB).  Hypothesis draws, for every operation
of api/openapi.yaml in turn, a request: identifiers of existing or
hostile objects in the path, documented and undocumented query
parameters with valid or hostile values, a microversion, and a JSON body
that follows the operation's schema or is any JSON.  For each answer:

* never a 5xx (nor a connection that breaks), except the designed 503
  for a node whose conductor group has no live conductor (generated
  nodes may name any group; the test conductor serves the default one);
* a 4xx has Ironic's error body (faultcode Client, no traceback) and
  changed nothing: every table (conductors and node tallies aside, which
  change in the background) reads the same before and after;
* after a successful change the service settles (no allocation stays
  allocating, no node keeps a lock or target state), then the next
  request is compared against that state;
* the service still answers GET /v1 after every round.

CI runs a fixed number of rounds with a fixed seed (each round sends one
request per operation); ``tox -e fuzz`` runs more.  Environment:
IRONIC_ALLOC_FUZZ_ROUNDS (default 16), IRONIC_ALLOC_FUZZ_SEED (a number,
or "random"; default: derandomized, the same requests every run).  A
failure names the seed that replays the run.
"""

import json
import os
import random
import re
import time
from urllib import parse

import hypothesis
from hypothesis import strategies as st
import sqlalchemy as sa

from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.db.sqlalchemy import models
from ironic_alloc.tests import base
from ironic_alloc.tests.functional import openapi

ROUNDS = int(os.environ.get('IRONIC_ALLOC_FUZZ_ROUNDS', '16'))
SEED = os.environ.get('IRONIC_ALLOC_FUZZ_SEED')

# How long the service may take to finish what a successful request
# started (allocation, provision action) before the test calls it stuck.
SETTLE_TIMEOUT = 30

# Tables that change without requests: conductors heartbeat and fold the
# node tallies (whose changes only a node write makes, which the nodes
# table shows).
_UNSTABLE_TABLES = frozenset(['conductors', 'node_tallies',
                              'node_tally_changes', 'node_tally_folds'])

# NOTE: a node action is checked under the node's lock; taking and
# releasing it writes the reservation, which moves updated_at (as in
# Ironic) even when the action is then refused.
_IGNORED_COLUMNS = {'nodes': frozenset(['updated_at'])}

_HOSTILE_TEXT = [
    "'; DROP TABLE nodes; --", "' OR '1'='1", '%', '_', '%_%', '\\', '\\%',
    '"', '../../etc/passwd', '\x00', 'a\x00b', '\u202e', '\U0001f600',
    'CUSTOM_' + 'A' * 300, 'x' * 1000, '', ' ', 'null', 'true', '-1', '0',
    '1e999', 'NaN', '99999999999999999999999999', '[]', '{}', 'detail',
    'latest', 'fake-hardware',
]

# NOTE: mostly the latest version, so that most requests reach the code
# behind the version gates; versions that change what is stored or
# listed, never malformed ones (refused before the database).
_VERSIONS = ['latest'] * 8 + [
    '1.1', '1.5', '1.37', '1.52', '1.57', '1.58', '1.60', '1.65', '1.79']

_hostile_text = st.one_of(st.sampled_from(_HOSTILE_TEXT),
                          st.text(max_size=40))

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(
        allow_nan=False, allow_infinity=False) | _hostile_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        _hostile_text, children, max_size=4),
    max_leaves=12)


def _to_query_value(value):
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return str(value)


_UNSERVED_GROUP_RE = re.compile(
    r'^No valid host was found\. Reason: no conductor of conductor group '
    r'"(.*)" is alive$')


def _unserved_group(status, answer):
    """The conductor group named by a 503 "no conductor of group X is
    alive", else None.

    NOTE: by design (gabbits/conductors.yaml), an action on a node whose
    conductor group has no live conductor is a 503, to be retried once
    one is back; generated nodes may name any group.
    """
    if status != 503:
        return None
    try:
        fault = json.loads(json.loads(answer)['error_message'])
    except (ValueError, KeyError, TypeError):
        return None
    match = _UNSERVED_GROUP_RE.match(fault.get('faultstring') or '')
    return match.group(1) if match else None


def _is_client_fault(answer):
    """Whether ``answer`` is Ironic's 4xx body, without a traceback."""
    try:
        fault = json.loads(json.loads(answer)['error_message'])
    except (ValueError, KeyError, TypeError):
        return False
    return (fault.get('faultcode') == 'Client'
            and fault.get('debuginfo') is None
            and 'Traceback' not in str(fault.get('faultstring')))


def _changes(before, after):
    """What differs between two snapshots, briefly."""
    changes = []
    for table, rows in after.items():
        old = {r['id']: r for r in before[table]} if rows and 'id' in \
            rows[0] else {}
        for row in rows:
            previous = old.get(row.get('id'))
            if previous is None:
                if row not in before[table]:
                    changes.append('%s: new row %s' % (table, row))
                continue
            diff = {k: (previous[k], v) for k, v in row.items()
                    if previous[k] != v}
            if diff:
                changes.append('%s %s: %s' % (table, row['id'], diff))
        if len(before[table]) > len(rows):
            changes.append('%s: rows deleted' % table)
    return changes


class TestFuzz(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.config(transport_url='fake://', auth_strategy='noauth')
        self.config(host_ip='127.0.0.1', port=0, group='api')
        # NOTE: small limits, so that generated bodies reach them.
        self.config(max_json_depth=8, max_traits=5, max_candidate_nodes=5,
                    max_request_body_size=16384, group='api')
        self.api = self.useFixture(openapi.ServedAPI())
        self.engine = sqla_api.get_engine()
        self.operations = openapi.operations()
        self.body_strategies = {
            op: (openapi.strategy_for(op.body_schema)
                 if op.body_schema else st.nothing())
            for op in self.operations}
        self._seed()

    def _seed(self):
        """Nodes in several states, traits, allocations (settled)."""
        for i, rc in enumerate(['gold', 'gold', 'silver', 'gold_%']):
            status, node = self.api.json('POST', '/v1/nodes', {
                'name': 'fuzz-%d' % i, 'driver': 'fake-hardware',
                'resource_class': rc, 'owner': 'p%d' % (i % 2),
                'description': "100%% of rack_%d; '--" % i})
            self.assertEqual(201, status, node)
            for target in ('manage', 'provide'):
                status, _ = self.api.json(
                    'PUT', '/v1/nodes/%s/states/provision' % node['uuid'],
                    {'target': target})
                self.assertEqual(202, status)
                self._settle()
        status, _ = self.api.json('PUT', '/v1/nodes/fuzz-0/traits',
                                  {'traits': ['CUSTOM_A', 'CUSTOM_B']})
        self.assertEqual(204, status)
        for name in ('fuzz-alloc', 'fuzz_alloc'):
            status, alloc = self.api.json('POST', '/v1/allocations', {
                'name': name, 'resource_class': 'gold'})
            self.assertEqual(201, status, alloc)
        self._settle()

    # Database state

    def _snapshot(self):
        state = {}
        with self.engine.connect() as conn:
            for table in models.Base.metadata.sorted_tables:
                if table.name in _UNSTABLE_TABLES:
                    continue
                ignored = _IGNORED_COLUMNS.get(table.name, ())
                columns = [c for c in table.columns if c.name not in ignored]
                rows = conn.execute(sa.select(*columns).order_by(
                    *table.primary_key.columns)).all()
                state[table.name] = [
                    dict(zip([c.name for c in columns], r)) for r in rows]
        return state

    def _busy(self, state):
        """What the service is still working on, if anything."""
        for alloc in state['allocations']:
            if alloc['state'] == 'allocating':
                return 'an allocation is allocating'
        for node in state['nodes']:
            if node['reservation'] or node['target_provision_state'] or \
                    node['target_power_state']:
                return 'node %s is busy' % node['uuid']
        return None

    def _settle(self):
        """The state once the service has finished its work."""
        deadline = time.monotonic() + SETTLE_TIMEOUT
        previous = None
        while True:
            state = self._snapshot()
            busy = self._busy(state)
            if busy is None and state == previous:
                return state
            if time.monotonic() > deadline:
                self.fail('The service did not settle within %ss: %s'
                          % (SETTLE_TIMEOUT, busy or 'rows keep changing'))
            previous = state
            time.sleep(0.05)

    def _identifiers(self, state):
        """Names and UUIDs of existing nodes and allocations."""
        idents = []
        for table in ('nodes', 'allocations'):
            for row in state[table]:
                idents.append(row['uuid'])
                if row['name']:
                    idents.append(row['name'])
        return idents or ['none']

    # Requests

    def _draw_path(self, data, op):
        """{path parameter: text, or an index into the identifiers of
        existing objects (resolved when sending)}."""
        values = {}
        for name in sorted(openapi.path_parameter_names(op.path)):
            if name == 'driver_name':
                choice = st.sampled_from(['fake-hardware']) | _hostile_text
            elif name == 'hostname':
                choice = st.sampled_from(['test-conductor']) | _hostile_text
            elif name == 'trait':
                choice = st.sampled_from(['CUSTOM_A', 'CUSTOM_NEW',
                                          'HW_CPU_X86_AVX']) | _hostile_text
            else:
                # NOTE: an index, not sampled_from(idents): what is drawn
                # must not depend on the database, or Hypothesis sees its
                # strategies change between examples.
                choice = st.integers(0, 1000) | _hostile_text
            values[name] = data.draw(choice, label=name)
        return values

    def _url(self, op, path_values, query, idents):
        values = {}
        for name, value in path_values.items():
            if isinstance(value, int):
                value = idents[value % len(idents)]
            values[name] = parse.quote(value, safe='') or 'x'
        return op.url(values, query)

    def _draw_query(self, data, op):
        pairs = []
        for param in op.params_in('query'):
            if not data.draw(st.booleans(), label='use ' + param['name']):
                continue
            schema = param['schema']
            valid = openapi.strategy_for(schema).map(
                _to_query_value)
            pairs.append((param['name'],
                          data.draw(valid | _hostile_text,
                                    label=param['name'])))
        extra = []
        if data.draw(st.integers(0, 3), label='extra query?') == 0:
            extra = data.draw(st.lists(st.tuples(
                st.sampled_from(['fields', 'limit', 'marker', 'colour',
                                 'sort_key']) | _hostile_text,
                _hostile_text), min_size=1, max_size=2),
                label='extra query')
        return parse.urlencode(pairs + extra)

    def _draw_body(self, data, op):
        """Body bytes (JSON) or None."""
        kinds = ['schema', 'schema', 'json', 'none']
        if op.body_schema is None:
            # NOTE: mostly no body where none is expected, still some.
            kinds = ['none'] * 5 + ['json']
        kind = data.draw(st.sampled_from(kinds), label='body kind')
        if kind == 'schema' and op.body_schema:
            doc = data.draw(self.body_strategies[op], label='body')
        elif kind in ('json', 'schema'):
            doc = data.draw(_json_values, label='body')
        else:
            return None
        return json.dumps(doc).encode()

    def _draw_request(self, data, op):
        path_values = self._draw_path(data, op)
        query = self._draw_query(data, op)
        body = self._draw_body(data, op)
        headers = {'X-OpenStack-Ironic-API-Version': data.draw(
            st.sampled_from(_VERSIONS), label='version')}
        # NOTE: ironic_alloc's extensions too (the matching language's
        # fields and trait expressions reach the database), always for an
        # operation that exists only with them.
        if op.extension or data.draw(st.booleans(), label='extension'):
            headers['OpenStack-API-Version'] = 'ironic-alloc latest'
        if body is not None:
            headers['Content-Type'] = 'application/json'
        return op, path_values, query, body, headers

    def _round(self, data):
        """One request per operation; the first problem found, or None.

        NOTE: the whole round is drawn before anything is sent, so what
        Hypothesis draws never depends on the answers (it checks that).
        """
        requests = [self._draw_request(data, op) for op in self.operations]
        state = self._settle()
        for op, path_values, query, body, headers in requests:
            url = self._url(op, path_values, query,
                            self._identifiers(state))
            status, _headers, answer = self.api.request(op.method, url,
                                                        body, headers)
            request = '%s %s %r body=%r' % (op.method, url, headers,
                                             body[:300] if body else body)
            unserved_group = _unserved_group(status, answer)
            if status >= 500 and unserved_group is None:
                return '%s -> %s %s' % (request, status, answer[:500])
            if unserved_group is not None:
                if unserved_group == '':
                    return '%s -> %s although the conductor serves the ' \
                        'default group: %s' % (request, status, answer)
                after = self._snapshot()
                if after != state:
                    return ('a refused request changed the database: %s -> '
                            '%s %s; changed: %s' % (
                                request, status, answer[:500],
                                _changes(state, after)))
            elif status >= 400:
                if not _is_client_fault(answer):
                    return '%s -> %s without Ironic error body: %s' % (
                        request, status, answer[:500])
                after = self._snapshot()
                if after != state:
                    return ('a refused request changed the database: %s -> '
                            '%s %s; changed: %s' % (
                                request, status, answer[:500],
                                _changes(state, after)))
            else:
                state = self._settle()
        status, _ = self.api.json('GET', '/v1')
        if status != 200:
            return 'GET /v1 answered %s after a round' % status
        return None

    def test_fuzz_every_operation(self):
        seed = SEED
        if seed == 'random':
            seed = str(random.SystemRandom().randrange(2 ** 32))
        settings = hypothesis.settings(
            max_examples=ROUNDS,
            deadline=None,
            database=None,
            derandomize=seed is None,
            # NOTE: a failing round is reported as drawn; shrinking it
            # would replay many rounds against a changed database.
            phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
            suppress_health_check=list(hypothesis.HealthCheck),
            print_blob=False)

        problems = []
        rounds = []

        # NOTE: the service keeps its state from one example to the next,
        # so Hypothesis could not replay a failing example faithfully:
        # the first problem is collected here and reported after the run.
        @settings
        @hypothesis.given(data=st.data())
        def fuzz(data):
            rounds.append(1)
            problem = self._round(data)
            if problem:
                problems.append(problem)

        if seed is not None:
            fuzz = hypothesis.seed(int(seed))(fuzz)
        fuzz()
        self.assertEqual([], problems[:3], 'IRONIC_ALLOC_FUZZ_SEED=%s replays '
                         'this run' % seed)
        # NOTE: Hypothesis stops early only when it runs out of distinct
        # inputs, which st.data() never does; it may run a few more
        # examples than asked (those it discards are not counted).
        self.assertGreaterEqual(len(rounds), ROUNDS)
