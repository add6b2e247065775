"""Unit tests of the pure parts of the benchmark tool (tools/bench).

No network and no service: percentiles, error kinds, one client's
allocate-and-poll loop against scripted answers, paging, the correctness
checks on synthetic listings, the report, the profile grouping and the
small parsers. The benchmark's numbers themselves are
never asserted here (see doc/source/admin/performance.rst).
"""

import collections
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

from ironic_alloc.db import api as db_api
from ironic_alloc.tests import base
from tools.bench import bulk
from tools.bench import checks
from tools.bench import cli
from tools.bench import client
from tools.bench import floor
from tools.bench import phases
from tools.bench import profile
from tools.bench import progress
from tools.bench import report
from tools.bench import runner
from tools.bench import service
from tools.bench import stats
from tools.bench import sweep

A1 = '11111111-1111-1111-1111-111111111111'
A2 = '22222222-2222-2222-2222-222222222222'
A3 = '33333333-3333-3333-3333-333333333333'
N1 = 'aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa'
N2 = 'bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb'
N3 = 'cccccccc-cccc-cccc-cccc-cccccccccccc'


class TestPercentile(base.TestCase):

    def test_linear_interpolation(self):
        values = [4, 1, 3, 2]  # unsorted on purpose
        self.assertEqual(2.5, stats.percentile(values, 50))
        self.assertAlmostEqual(3.97, stats.percentile(values, 99))
        self.assertAlmostEqual(1.3, stats.percentile(values, 10))

    def test_bounds_are_min_and_max(self):
        values = [5.0, 0.5, 2.0]
        self.assertEqual(0.5, stats.percentile(values, 0))
        self.assertEqual(5.0, stats.percentile(values, 100))

    def test_exact_rank(self):
        self.assertEqual(3.0, stats.percentile([1, 2, 3, 4, 5], 50))
        self.assertEqual(50.0, stats.percentile(range(101), 50))
        self.assertEqual(99.0, stats.percentile(range(101), 99))

    def test_single_and_empty(self):
        self.assertEqual(7.0, stats.percentile([7], 99))
        self.assertIsNone(stats.percentile([], 50))

    def test_out_of_range(self):
        self.assertRaises(ValueError, stats.percentile, [1], 101)
        self.assertRaises(ValueError, stats.percentile, [1], -1)

    def test_summarize(self):
        summary = stats.summarize(x / 10.0 for x in range(1, 11))
        self.assertEqual(10, summary['count'])
        self.assertEqual(0.1, summary['min'])
        self.assertEqual(1.0, summary['max'])
        self.assertAlmostEqual(0.55, summary['mean'])
        self.assertAlmostEqual(0.55, summary['p50'])
        self.assertAlmostEqual(0.991, summary['p99'])

    def test_summarize_empty(self):
        summary = stats.summarize([])
        self.assertEqual(0, summary['count'])
        self.assertIsNone(summary['p50'])

    def test_rate_and_ratio(self):
        self.assertEqual(50.0, stats.rate(500, 10.0))
        self.assertIsNone(stats.rate(5, 0))
        self.assertEqual(1.5, stats.ratio(3.0, 2.0))
        self.assertIsNone(stats.ratio(None, 2.0))
        self.assertIsNone(stats.ratio(1.0, 0))


class TestErrorKinds(base.TestCase):

    def test_faultstring_of_ironic_error_body(self):
        inner = {'faultcode': 'Client', 'faultstring': 'Node is locked',
                 'debuginfo': None}
        body = {'error_message': json.dumps(inner)}
        self.assertEqual('Node is locked', client.faultstring(body))

    def test_faultstring_of_other_bodies(self):
        self.assertEqual('plain', client.faultstring(
            {'error_message': 'plain'}))
        self.assertEqual('direct', client.faultstring(
            {'faultstring': 'direct'}))
        self.assertEqual('Bad Gateway', client.faultstring(
            None, b'Bad Gateway\n'))

    def test_response_decodes_json(self):
        response = client.Response(409, {}, json.dumps(
            {'error_message': json.dumps({'faultstring': 'x'})}).encode())
        self.assertFalse(response.ok)
        self.assertEqual('x', response.faultstring)
        self.assertIsNone(client.Response(502, {}, b'<html>').json)

    def test_normalize_groups_uuids_and_numbers(self):
        one = client.normalize_message('Node %s is locked by host 12' % N1)
        two = client.normalize_message('Node %s is locked by host 7' % N2)
        self.assertEqual(one, two)
        self.assertEqual('Node <uuid> is locked by host <n>', one)

    def test_normalize_truncates(self):
        text = client.normalize_message('x' * 500)
        self.assertEqual(client.KIND_PREFIX_LENGTH, len(text))
        self.assertTrue(text.endswith('...'))

    def test_kinds(self):
        self.assertEqual('HTTP 503: No conductor',
                         client.http_error_kind(503, 'No conductor'))
        self.assertEqual('HTTP 500', client.http_error_kind(500, ''))
        self.assertEqual('state error: No candidate node',
                         client.state_error_kind('No candidate node'))
        failed = client.ConnectionFailed('GET', '/v1', ConnectionResetError())
        self.assertEqual('connection: ConnectionResetError',
                         client.error_kind(failed))

    def test_url(self):
        api = client.ApiClient('https://example.com:8443/baremetal/')
        self.assertEqual('/baremetal/v1/nodes?limit=2&fields=uuid',
                         api.url('/v1/nodes', {'limit': 2, 'fields': 'uuid',
                                               'marker': None}))
        self.assertRaises(ValueError, client.ApiClient, 'example.com:6385')


def _record(index, uuid=None, state=None, node=None, **kw):
    record = phases.AllocationRecord(index=index, uuid=uuid, state=state,
                                     node_uuid=node, **kw)
    return record


class TestAllocationRecord(base.TestCase):

    def test_outcomes(self):
        self.assertEqual('post_failed', _record(0, post_error='HTTP 503')
                         .outcome)
        self.assertEqual('active', _record(0, A1, 'active', N1).outcome)
        self.assertEqual('error', _record(0, A1, 'error').outcome)
        self.assertEqual('stuck', _record(0, A1, 'allocating',
                                          stuck=True).outcome)
        self.assertEqual('vanished', _record(0, A1, 'allocating',
                                             vanished=True).outcome)
        self.assertEqual('unfinished', _record(0, A1, 'allocating').outcome)
        self.assertEqual('not_sent', _record(0).outcome)
        self.assertIsNone(_record(0).error_kind(60))

    def test_error_kinds(self):
        self.assertIsNone(_record(0, A1, 'active', N1).error_kind(60))
        self.assertEqual('HTTP 503: x', _record(
            0, post_error='HTTP 503: x').error_kind(60))
        self.assertEqual('state error: No candidate node: <n>', _record(
            0, A1, 'error', last_error='No candidate node: 3').error_kind(60))
        self.assertEqual('stuck: still allocating after 60s', _record(
            0, A1, 'allocating', stuck=True).error_kind(60))
        self.assertIsNone(_record(0, A1, 'allocating').error_kind(60))

    def test_observe(self):
        record = _record(0, A1, 'allocating')
        record.observe({'state': 'active', 'node_uuid': N1,
                        'last_error': None})
        self.assertEqual(('active', N1), (record.state, record.node_uuid))
        record.observe(None)
        self.assertEqual('active', record.state)


class ScriptedClient:
    """Answers ``timed`` calls from a script of (status, document)."""

    def __init__(self, *answers, repeat_last=False):
        self.answers = list(answers)
        self.repeat_last = repeat_last
        self.calls = []

    def timed(self, method, path, body=None, params=None):
        self.calls.append((method, path, body))
        if len(self.answers) > 1 or not self.repeat_last:
            status, document = self.answers.pop(0)
        else:
            status, document = self.answers[0]
        body = json.dumps(document).encode() if document is not None else b''
        return client.Response(status, {}, body), 0.001


def _allocating(**kw):
    return dict({'uuid': A1, 'state': 'allocating', 'node_uuid': None,
                 'last_error': None}, **kw)


class TestAllocateOne(base.TestCase):

    def setUp(self):
        super().setUp()
        self.settings = _settings(poll_interval=0.001, timeout=5,
                                  traits=('CUSTOM_X',))
        self.stop = threading.Event()

    def _run(self, fake):
        record = phases.AllocationRecord(index=0)
        phases._allocate_one(self.settings, fake, record, self.stop)
        return record

    def test_polls_until_active(self):
        fake = ScriptedClient((201, _allocating()), (200, _allocating()),
                              (200, _allocating(state='active',
                                                node_uuid=N1)))
        record = self._run(fake)
        self.assertEqual(('active', N1, 2), (record.outcome,
                                             record.node_uuid, record.polls))
        self.assertIsNotNone(record.to_terminal_seconds)
        self.assertEqual(('POST', '/v1/allocations',
                          {'resource_class': 'bench',
                           'traits': ['CUSTOM_X']}), fake.calls[0])
        self.assertEqual(('GET', '/v1/allocations/%s' % A1, None),
                         fake.calls[1])

    def test_error_state(self):
        fake = ScriptedClient((201, _allocating()), (200, _allocating(
            state='error', last_error='No candidate node: traits')))
        record = self._run(fake)
        self.assertEqual('state error: No candidate node: traits',
                         record.error_kind(5))

    def test_post_refused(self):
        fake = ScriptedClient((503, {'error_message': json.dumps(
            {'faultstring': 'No conductor is alive'})}))
        record = self._run(fake)
        self.assertEqual(('post_failed', 'HTTP 503: No conductor is alive'),
                         (record.outcome, record.error_kind(5)))

    def test_vanished(self):
        fake = ScriptedClient((201, _allocating()), (404, {}))
        self.assertEqual('vanished', self._run(fake).outcome)

    def test_poll_errors_are_retried(self):
        fake = ScriptedClient((201, _allocating()), (500, {}),
                              (200, _allocating(state='active',
                                                node_uuid=N1)))
        record = self._run(fake)
        self.assertEqual('active', record.outcome)
        self.assertEqual(['HTTP 500: {}'], record.poll_errors)

    def test_stuck_after_timeout(self):
        self.settings.timeout = 0.05
        fake = ScriptedClient((201, _allocating()), (200, _allocating()),
                              repeat_last=True)
        record = self._run(fake)
        self.assertEqual('stuck', record.outcome)
        self.assertGreater(record.polls, 0)

    def test_stop_ends_polling(self):
        self.stop.set()
        fake = ScriptedClient((201, _allocating()), (200, _allocating()),
                              repeat_last=True)
        record = self._run(fake)
        self.assertEqual(('unfinished', 0), (record.outcome, record.polls))


class FakeClient:
    """Serves canned pages and records the queries asked for."""

    def __init__(self, pages):
        self.pages = list(pages)
        self.queries = []

    def request(self, method, path, params=None):
        self.queries.append(dict(params or {}))
        status, document = self.pages.pop(0)
        return client.Response(status, {}, json.dumps(document).encode())


class TestListCollection(base.TestCase):

    def test_follows_next_with_marker(self):
        fake = FakeClient([
            (200, {'nodes': [{'uuid': N1}, {'uuid': N2}], 'next': 'x'}),
            (200, {'nodes': [{'uuid': N3}]}),
        ])
        items = checks.list_collection(fake, '/v1/nodes', 'nodes',
                                       {'fields': 'uuid'}, limit=2)
        self.assertEqual([N1, N2, N3], [i['uuid'] for i in items])
        self.assertEqual([{'fields': 'uuid', 'limit': 2},
                          {'fields': 'uuid', 'limit': 2, 'marker': N2}],
                         fake.queries)

    def test_stops_on_empty_page(self):
        fake = FakeClient([(200, {'allocations': [], 'next': 'x'})])
        self.assertEqual([], checks.list_collection(
            fake, '/v1/allocations', 'allocations'))

    def test_no_progress_is_an_error(self):
        page = (200, {'nodes': [{'uuid': N1}], 'next': 'x'})
        fake = FakeClient([page, page])
        self.assertRaises(checks.ListingFailed, checks.list_collection,
                          fake, '/v1/nodes', 'nodes', limit=1)

    def test_http_error(self):
        fake = FakeClient([(500, {'error_message': json.dumps(
            {'faultstring': 'boom'})})])
        exc = self.assertRaises(checks.ListingFailed,
                                checks.list_collection, fake, '/v1/nodes',
                                'nodes')
        self.assertIn('HTTP 500: boom', str(exc))

    def test_run_reports_unreadable_listing(self):
        fake = FakeClient([(503, {})])
        found, seconds = checks.run(fake, [])
        self.assertEqual(['listings readable'], [c.name for c in found])
        self.assertFalse(found[0].ok)


def _node(uuid, alloc=None, instance=None):
    return {'uuid': uuid, 'allocation_uuid': alloc,
            'instance_uuid': instance if instance is not None else alloc}


def _alloc(uuid, state='active', node=None):
    return {'uuid': uuid, 'state': state, 'node_uuid': node}


def _failed(found):
    return {c.name: c.detail for c in found if not c.ok}


class TestChecks(base.TestCase):

    def setUp(self):
        super().setUp()
        self.records = [_record(0, A1, 'active', N1),
                        _record(1, A2, 'error'),
                        _record(2, post_error='HTTP 503')]
        self.nodes = [_node(N1, A1), _node(N2), _node(N3)]
        self.allocations = [_alloc(A1, node=N1), _alloc(A2, 'error')]

    def test_consistent_state_passes(self):
        found = checks.check_after_allocate(self.records, self.nodes,
                                            self.allocations)
        self.assertEqual({}, _failed(found))
        self.assertEqual(4, len(found))

    def test_two_allocations_on_one_node(self):
        self.allocations.append(_alloc(A3, node=N1))
        failed = _failed(checks.check_after_allocate(
            self.records, self.nodes, self.allocations))
        self.assertIn('node %s has allocations %s, %s' % (N1, A1, A3),
                      failed['one allocation per node'])

    def test_one_allocation_on_two_nodes(self):
        self.nodes[1] = _node(N2, A1)
        failed = _failed(checks.check_after_allocate(
            self.records, self.nodes, self.allocations))
        self.assertIn('allocation %s is on nodes %s, %s' % (A1, N1, N2),
                      failed['one allocation per node'])
        self.assertIn('node %s points to allocation %s of node %s'
                      % (N2, A1, N1), failed['nodes and allocations agree'])

    def test_not_terminal_and_missing(self):
        self.allocations[1] = _alloc(A2, 'allocating')
        self.records.append(_record(3, A3, 'allocating', stuck=True))
        failed = _failed(checks.check_after_allocate(
            self.records, self.nodes, self.allocations))
        detail = failed['every allocation terminal']
        self.assertIn('2 problem(s)', detail)
        self.assertIn('allocation %s is allocating' % A2, detail)
        self.assertIn('allocation %s is not listed' % A3, detail)

    def test_node_does_not_point_back(self):
        self.nodes[0] = _node(N1)
        failed = _failed(checks.check_after_allocate(
            self.records, self.nodes, self.allocations))
        self.assertIn('allocation %s is on node %s whose allocation_uuid is '
                      'None' % (A1, N1),
                      failed['nodes and allocations agree'])

    def test_node_without_instance_uuid(self):
        self.nodes[0] = {'uuid': N1, 'allocation_uuid': A1,
                         'instance_uuid': None}
        failed = _failed(checks.check_after_allocate(
            self.records, self.nodes, self.allocations))
        self.assertIn('has no instance_uuid',
                      failed['nodes and allocations agree'])

    def test_node_points_to_failed_or_unknown_allocation(self):
        self.nodes[1] = _node(N2, A2)
        self.nodes[2] = _node(N3, A3)
        failed = _failed(checks.check_after_allocate(
            self.records, self.nodes, self.allocations))
        detail = failed['nodes and allocations agree']
        self.assertIn('node %s points to allocation %s in state error'
                      % (N2, A2), detail)
        self.assertIn('node %s points to unlisted allocation %s'
                      % (N3, A3), detail)

    def test_error_allocation_with_a_node(self):
        self.allocations[1] = _alloc(A2, 'error', node=N2)
        failed = _failed(checks.check_after_allocate(
            self.records, self.nodes, self.allocations))
        self.assertIn('allocation %s is error but has node %s' % (A2, N2),
                      failed['nodes and allocations agree'])

    def test_allocation_moved_since_seen(self):
        self.allocations[0] = _alloc(A1, node=N2)
        self.nodes = [_node(N1), _node(N2, A1), _node(N3)]
        failed = _failed(checks.check_after_allocate(
            self.records, self.nodes, self.allocations))
        self.assertEqual(['allocations stay where they were seen'],
                         list(failed))

    def test_examples_are_limited(self):
        allocations = [_alloc('%08d-0000-0000-0000-000000000000' % i,
                              'allocating') for i in range(10)]
        records = [_record(i, a['uuid'], 'allocating')
                   for i, a in enumerate(allocations)]
        failed = _failed(checks.check_after_allocate(records, [],
                                                     allocations))
        detail = failed['every allocation terminal']
        self.assertIn('10 problem(s)', detail)
        self.assertIn('(and 7 more)', detail)

    def test_after_delete(self):
        self.records[0].delete_seconds = 0.01
        self.records[1].delete_error = 'HTTP 409: x'
        nodes = [_node(N1), _node(N2, A2), _node(N3)]
        found = checks.check_after_delete(self.records, nodes,
                                          [_alloc(A2, 'error')])
        self.assertEqual({}, _failed(found))
        found = checks.check_after_delete(
            self.records, [_node(N1, A1)], [_alloc(A1, node=N1)])
        failed = _failed(found)
        self.assertIn('allocation %s is still listed' % A1,
                      failed['deleted allocations are gone'])
        self.assertIn('node %s still refers to %s' % (N1, A1),
                      failed['deleted allocations freed their nodes'])


def _settings(**kw):
    return phases.Settings(endpoint='http://127.0.0.1:6385', **kw)


def _sample_run(**overrides):
    records = [_record(0, A1, 'active', N1, post_seconds=0.010,
                       to_terminal_seconds=0.100, delete_seconds=0.020),
               _record(1, A2, 'active', N2, post_seconds=0.030,
                       to_terminal_seconds=0.300, delete_seconds=0.040)]
    phase_results = {
        'enroll': phases.PhaseResult('enroll', 4.0, 2),
        'allocate': phases.PhaseResult('allocate', 0.5, 2),
        'delete': phases.PhaseResult('delete', 0.25, 2),
    }
    found = [('after allocate', checks.Check('one allocation per node',
                                             True, ''))]
    extra = {'machine': {'cpus': 2, 'memory_gib': 23.4,
                         'load_before': [0.5, 0.4, 0.3],
                         'load_after': [1.0, 0.5, 0.3]}}
    extra.update(overrides.pop('extra', {}))
    return report.build_run(_settings(), {'nodes': 2, 'enroll': 'api'},
                            phase_results, records, found, extra)


class TestReport(base.TestCase):

    def test_build_run(self):
        result = _sample_run()
        alloc = result['allocations']
        self.assertEqual(2, alloc['active'])
        self.assertEqual(2, alloc['created'])
        self.assertEqual(4.0, alloc['active_per_second'])
        self.assertEqual(0.25, alloc['seconds_per_allocation'])
        self.assertEqual(0, alloc['polls'])
        self.assertAlmostEqual(0.2, result['latency']['post_to_active']
                               ['p50'])
        self.assertAlmostEqual(0.02, result['latency']['post']['p50'])
        self.assertEqual(8.0, result['phases']['delete']['per_second'])
        self.assertTrue(report.passed(result))
        json.dumps(result)  # JSON-ready

    def test_failures_do_not_pass(self):
        result = _sample_run()
        result['phases']['allocate']['errors'] = {'HTTP 503: x': 1}
        result['allocations']['active'] = 1
        self.assertEqual(['1 of 2 allocations not active',
                          '1 allocate errors'], report.problems(result))
        self.assertIn('Result: FAIL: 1 of 2 allocations not active; '
                      '1 allocate errors', report.format_run(result))
        result = _sample_run()
        result['checks'][0]['ok'] = False
        self.assertFalse(report.passed(result))
        result = _sample_run()
        result['phases']['delete']['errors'] = {'HTTP 409': 1}
        self.assertFalse(report.passed(result))

    def test_errors_are_counted_by_kind(self):
        records = [_record(0, A1, 'error', last_error='No candidate: 1'),
                   _record(1, A2, 'error', last_error='No candidate: 2'),
                   _record(2, post_error='HTTP 503: busy')]
        errors = collections.Counter(r.error_kind(60) for r in records)
        phase = phases.PhaseResult('allocate', 1.0, 3, errors=errors)
        result = report.build_run(_settings(), {}, {'allocate': phase},
                                  records, [])
        self.assertEqual({'state error: No candidate: <n>': 2,
                          'HTTP 503: busy': 1}, result['errors'])
        self.assertEqual(0.0, result['allocations']['active_per_second'])
        self.assertIsNone(result['latency']['post_to_active']['p50'])
        text = report.format_run(result)
        self.assertIn('     2  state error: No candidate: <n>', text)
        self.assertIn('Correctness: not checked', text)

    def test_format_run(self):
        text = report.format_run(_sample_run())
        self.assertIn('Benchmark of http://127.0.0.1:6385', text)
        self.assertIn('machine: 2 CPUs, 23.4 GiB', text)
        self.assertNotIn('benchmark client:', text)
        result = _sample_run(extra={'machine': {
            'cpus': 2, 'python': '3.11.2',
            'python_executable': '/usr/bin/python3.11'}})
        self.assertIn('benchmark client: Python 3.11.2, /usr/bin/python3.11',
                      report.format_run(result))
        self.assertIn('4.0 allocations/s to active', text)
        self.assertIn('0.2500 s per allocation', text)
        self.assertNotIn('CPU during', text)
        result = _sample_run(extra={'allocate_cpu_seconds': {
            'client': 1.25, 'service': None}})
        self.assertIn('benchmark client 1.2 s, service - s',
                      report.format_run(result))
        self.assertNotIn('whole machine', report.format_run(result))
        result = _sample_run(extra={'allocate_cpu_seconds': {
            'client': 0.1, 'service': None, 'groups': {
                'db': {'pids': 3, 'seconds': 0.5}}}})
        self.assertIn('CPU of db (3 processes): 0.5 s, 250.0 ms per '
                      'allocation requested', report.format_run(result))
        result = _sample_run(extra={'allocate_cpu_seconds': {
            'client': 0.1, 'service': None, 'groups': {
                'api': {'pids': 2, 'seconds': 0.5,
                        'programs': ['/opt/a/python3.11',
                                     '/usr/bin/python3.11']}}}})
        self.assertIn('CPU of api (2 processes, /opt/a/python3.11, '
                      '/usr/bin/python3.11): 0.5 s, 250.0 ms per '
                      'allocation requested', report.format_run(result))
        # 0.8 CPU s over 0.5 s of 2 CPUs; 2 allocations requested.
        result = _sample_run(extra={'allocate_cpu_seconds': {
            'client': 0.1, 'service': 0.3, 'machine': 0.8}})
        self.assertIn('whole machine during the allocate phase: 0.8 CPU s '
                      '= 80 % of 2 CPUs, 400.0 CPU ms per allocation',
                      report.format_run(result))
        self.assertIn('[ok] after allocate: one allocation per node', text)
        self.assertIn('Result: PASS', text)
        latency = [line for line in text.splitlines()
                   if line.startswith('POST -> active')]
        # count, p50, p90, p99, max in milliseconds
        self.assertEqual(['POST', '->', 'active', '2', '200.0', '280.0',
                          '298.0', '300.0'], latency[0].split())

    def test_format_profile(self):
        stacks = profile.parse_collapsed(
            'main (a/ironic_alloc/api/x.py:1);q (s/sqlalchemy/orm.py:2) 3\n')
        text = report.format_run(_sample_run(extra={
            'profile': profile.summarize(stacks)}))
        self.assertIn('3 samples', text)
        self.assertIn('sqlalchemy', text)
        text = report.format_run(_sample_run(extra={
            'profile': profile.unavailable('py-spy is not installed')}))
        self.assertIn('Profile: py-spy is not installed', text)

    def test_format_sweep(self):
        small = _sample_run()
        large = _sample_run()
        large['allocations']['seconds_per_allocation'] = 0.3
        large['latency']['post_to_active']['p50'] = 0.3
        rows = [{'nodes': 1000, 'load_seconds': 1.0, 'result': small,
                 'rss_mib': {'loaded': 90.0, 'after': 100.0,
                             'peak': 101.0}},
                {'nodes': 100000, 'load_seconds': 30.0, 'result': large,
                 'rss_mib': {'loaded': 95.0, 'after': 120.0,
                             'peak': 130.0}}]
        lines = report.format_sweep(rows).splitlines()
        self.assertIn('ratios to 1000 nodes', lines[0])
        self.assertEqual(['1000', '1.0', '4.0', '0.2500', '1.00', '200.0',
                          '1.00', '90', '100', '101', '0', '0', 'ok'],
                         lines[3].split())
        self.assertEqual(['100000', '30.0', '4.0', '0.3000', '1.20',
                          '300.0', '1.50', '95', '120', '130', '0', '0',
                          'ok'], lines[4].split())

    def test_machine_info_from_proc(self):
        root = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__('shutil').rmtree(root))
        with open(os.path.join(root, 'meminfo'), 'w') as f:
            f.write('MemTotal:       25165824 kB\nMemFree: 1 kB\n')
        with open(os.path.join(root, 'cpuinfo'), 'w') as f:
            f.write('processor\t: 0\nmodel name\t: Fake CPU @ 2GHz\n')
        info = report.machine_info(proc_root=root)
        self.assertEqual(24.0, info['memory_gib'])
        self.assertEqual('Fake CPU @ 2GHz', info['cpu_model'])
        self.assertEqual(os.path.realpath(sys.executable),
                         info['python_executable'])

    def test_format_floor(self):
        parts = [
            floor.Part('http', 'HTTP', 10, caller=0.0001, server=0.0002),
            floor.Part('http_api', 'API', 10, caller=0.0002, server=0.0005),
            floor.Part('cast', 'cast', 10, caller=0.0003, server=0.0004,
                       groups={'broker': 0.0002}),
            floor.Part('read', 'read', 10, caller=0.0004,
                       groups={'broker': 0.0, 'db': 0.0002}),
            floor.Part('write', 'write', 10, caller=0.0005,
                       groups={'broker': 0.0, 'db': 0.0003}),
        ]
        document = floor.floor_document(parts, 2, '2 CPUs, Fake')
        # NOTE: 2 x client 0.2 + 2 x API server 0.5 + cast 0.9 + read 0.6
        # + 2 x write 0.8 = 4.5 ms.
        self.assertAlmostEqual(0.0045, document['allocation']['seconds'])
        self.assertEqual([2, 2, 1, 1, 2], [
            t['times'] for t in document['allocation']['terms']])
        text = report.format_floor(document)
        self.assertIn('= 4.50 ms of CPU: at most 444 allocations/s on 2 '
                      'CPUs', text)
        rows = {line.split()[0]: line.split()[1:]
                for line in text.splitlines()[3:8]}
        self.assertEqual(['10', '0.300', '0.400', '0.200', '-'],
                         rows['cast'])
        self.assertEqual(['10', '0.500', '-', '0.000', '0.300'],
                         rows['write'])

    def test_floor_without_a_measured_cast(self):
        parts = [floor.Part('http_api', 'API', 10, caller=0.0002,
                            server=0.0005),
                 floor.Part('cast', 'RPC cast', 0, note='not measured')]
        document = floor.floor_document(parts, 2, 'x')
        self.assertAlmostEqual(0.0014, document['allocation']['seconds'])
        text = report.format_floor(document)
        self.assertIn('RPC cast: not measured', text)
        self.assertIn('1 x RPC cast', text)

    def test_write_json(self):
        path = os.path.join(tempfile.mkdtemp(), 'out.json')
        report.write_json(path, _sample_run())
        with open(path) as f:
            self.assertEqual(2, json.load(f)['allocations']['active'])


class TestProgress(base.TestCase):

    def test_render(self):
        line = progress.render('allocate', 250, 500, 5.0)
        self.assertTrue(line.startswith('allocate  [' + '#' * 12 + '.' * 12
                                        + '] 250/500  50%'))
        self.assertIn('50.0/s', line)
        self.assertIn('eta 5s', line)
        self.assertIn('0/0 100%', progress.render('x', 0, 0, 0))

    def test_not_a_terminal_writes_tenths(self):
        out = io.StringIO()
        bar = progress.Progress('delete', 100, stream=out)
        for _ in range(100):
            bar.advance()
        bar.finish('done')
        lines = out.getvalue().splitlines()
        self.assertEqual(10, len(lines))  # 9 tenths + the final line
        self.assertNotIn('\r', out.getvalue())
        self.assertTrue(lines[-1].endswith('done'))

    def test_disabled(self):
        out = io.StringIO()
        bar = progress.Progress('x', 3, stream=out, enabled=False)
        bar.advance(3)
        bar.finish()
        self.assertEqual('', out.getvalue())
        self.assertEqual(3, bar.done)

    def test_terminal_redraws_in_place(self):
        class Tty(io.StringIO):
            def isatty(self):
                return True
        out = Tty()
        bar = progress.Progress('x', 2, stream=out, min_interval=0)
        bar.advance()
        bar.finish()
        self.assertEqual(2, out.getvalue().count('\r'))
        self.assertTrue(out.getvalue().endswith('\n'))


class TestService(base.TestCase):

    def test_parse_status(self):
        text = 'Name:\tironic-alloc\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n'
        self.assertEqual({'rss_kib': 102400, 'peak_kib': 204800},
                         service.parse_status(text))
        self.assertEqual({'rss_kib': None, 'peak_kib': None},
                         service.parse_status('Name: zombie\n'))

    def test_memory_of_this_process(self):
        memory = service.memory_of(os.getpid())
        self.assertGreater(memory['rss'], 0)
        self.assertGreaterEqual(memory['peak'], memory['rss'])
        self.assertEqual({'rss': None, 'peak': None},
                         service.memory_of(2 ** 22 + 1))

    def test_parse_stat_cpu(self):
        # the command name may hold spaces and parentheses
        text = ('4242 (ironic-alloc (x) y) S 1 4242 4242 0 -1 4194560 100 0 '
                '0 0 250 50 0 0 20 0 9 0 100 700000000 26000 1844 0 0')
        self.assertEqual(3.0, service.parse_stat_cpu(text, 100))
        self.assertGreaterEqual(service.cpu_seconds(os.getpid()), 0)
        self.assertIsNone(service.cpu_seconds(2 ** 22 + 1))

    def _child(self, code, marker):
        """A child Python process running ``code``, ``marker`` on its
        command line, once it has run exec (until then, its command line
        is ours)."""
        proc = subprocess.Popen([sys.executable, '-c', code, marker])
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        deadline = time.monotonic() + 30
        while (not service.pids_matching(marker + '$')
               and time.monotonic() < deadline):
            time.sleep(0.01)
        return proc

    def test_pids_matching(self):
        proc = self._child('import time; time.sleep(60)',
                           'bench-marker-7f3a')
        self.assertEqual([proc.pid],
                         service.pids_matching('bench-marker-7f3a$'))
        self.assertEqual([], service.pids_matching('no-such-marker-7f3a'))
        # Never the benchmark itself, nor what started it.
        self.assertNotIn(os.getpid(), service.pids_matching('.'))
        self.assertNotIn(os.getppid(), service.pids_matching('.'))

    def test_executable_of(self):
        proc = self._child('import time; time.sleep(60)',
                           'bench-marker-9d2b')
        # A virtualenv's python is a link: the interpreter file is named.
        self.assertEqual(os.path.realpath(sys.executable),
                         service.executable_of(proc.pid))
        proc.kill()
        proc.wait()
        self.assertIsNone(service.executable_of(proc.pid))

    def _cpu_of(self, pid, at_least):
        deadline = time.monotonic() + 30
        while ((service.cpu_seconds(pid) or 0) < at_least
               and time.monotonic() < deadline):
            time.sleep(0.02)

    def test_group_usage_counts_processes_started_during_the_phase(self):
        groups = (('burners', 'bench-burner-5c1e'),)
        early = self._child('while True: pass', 'bench-burner-5c1e-early')
        self._cpu_of(early.pid, 0.2)
        before = runner._group_cpu(runner._group_pids(groups))
        self.assertEqual({early.pid}, set(before['burners']))
        late = self._child('while True: pass', 'bench-burner-5c1e-late')
        self._cpu_of(late.pid, 0.2)
        early.kill()
        early.wait()
        usage = runner._group_usage(groups, before)
        late_seconds = service.cpu_seconds(late.pid)
        # The process that exited is left out (its CPU cannot be read);
        # the one that started counts with everything it used.
        self.assertEqual(1, usage['burners']['pids'])
        self.assertEqual([os.path.realpath(sys.executable)],
                         usage['burners']['programs'])
        self.assertGreaterEqual(usage['burners']['seconds'], 0.2)
        self.assertLessEqual(usage['burners']['seconds'], late_seconds)

    def test_parse_proc_stat_busy(self):
        # user nice system idle iowait irq softirq steal guest guest_nice
        text = ('cpu  1000 10 300 5000 200 5 15 20 0 0\n'
                'cpu0 500 5 150 2500 100 2 7 10 0 0\n')
        self.assertEqual(13.5, service.parse_proc_stat_busy(text, 100))
        self.assertRaises(ValueError, service.parse_proc_stat_busy,
                          'intr 1 2\n', 100)
        self.assertGreater(service.machine_busy_seconds(), 0)

    def test_render_config(self):
        text = service.render_config(
            '/tmp/x', 7000, db_url='sqlite:////tmp/x/db',
            transport_url='rabbit://h', log_file='/tmp/x/log',
            options=[('conductor', 'workers_pool_size', '32'),
                     ('api', 'port', '7001')])
        self.assertIn('[DEFAULT]\nstate_path = /tmp/x\nhost = bench-7000\n'
                      'log_file = /tmp/x/log\ntransport_url = rabbit://h\n',
                      text)
        self.assertIn('[api]\nhost_ip = 127.0.0.1\nport = 7001\n', text)
        self.assertIn('[database]\nconnection = sqlite:////tmp/x/db\n', text)
        self.assertIn('[conductor]\nworkers_pool_size = 32\n', text)

    def test_render_config_defaults(self):
        text = service.render_config('/tmp/x', 7000)
        self.assertNotIn('[database]', text)
        self.assertNotIn('transport_url', text)

    def test_parse_option(self):
        self.assertEqual(('conductor', 'workers_pool_size', '8'),
                         service.parse_option('conductor.workers_pool_size=8'))
        self.assertEqual(('DEFAULT', 'debug', 'true'),
                         service.parse_option('DEFAULT.debug = true'))
        for bad in ('debug=true', 'conductor.workers', '.x=1'):
            self.assertRaises(ValueError, service.parse_option, bad)

    def test_free_port(self):
        self.assertGreater(service.free_port(), 0)


COLLAPSED = '\n'.join([
    'run (threading.py:10);handle (/v/site-packages/pecan/core.py:5);'
    'post (/r/ironic_alloc/api/controllers/v1/allocation.py:9);'
    'create (/r/ironic_alloc/objects/allocation.py:3);'
    'execute (/v/site-packages/sqlalchemy/engine/base.py:1) 6',
    'run (threading.py:10);do_allocate (/r/ironic_alloc/conductor/'
    'allocations.py:40);reserve (/r/ironic_alloc/db/sqlalchemy/api.py:460)'
    ';dumps (/usr/lib/python3.11/json/encoder.py:2) 3',
    'run (threading.py:10);wait (/usr/lib/python3.11/threading.py:320) 1',
    'garbage line',
    '',
])


class TestProfile(base.TestCase):

    def test_parse_frame(self):
        self.assertEqual(('execute', '/v/sqlalchemy/engine/base.py'),
                         profile.parse_frame(
                             'execute (/v/sqlalchemy/engine/base.py:1)'))
        self.assertEqual(('process 12', ''),
                         profile.parse_frame('process 12'))

    def test_parse_collapsed(self):
        stacks = profile.parse_collapsed(COLLAPSED)
        self.assertEqual([6, 3, 1], [count for _frames, count in stacks])
        self.assertEqual(5, len(stacks[0][0]))

    def test_area_of(self):
        self.assertEqual('api/', profile.area_of(
            '/r/ironic_alloc/api/controllers/v1/node.py'))
        self.assertEqual('db/', profile.area_of(
            '/r/ironic_alloc/db/sqlalchemy/api.py'))
        self.assertEqual('sqlalchemy', profile.area_of(
            '/v/site-packages/sqlalchemy/orm/query.py'))
        self.assertEqual('oslo_db', profile.area_of(
            '/v/site-packages/oslo_db/sqlalchemy/engines.py'))
        self.assertEqual('oslo_messaging', profile.area_of(
            '/v/site-packages/oslo_messaging/rpc/client.py'))
        self.assertEqual('ironic_alloc (other)', profile.area_of(
            '/r/ironic_alloc/common/rpc.py'))
        self.assertIsNone(profile.area_of('/usr/lib/python3.11/queue.py'))
        # py-spy without --full-filenames writes paths like these
        self.assertEqual('sqlalchemy', profile.area_of(
            'sqlalchemy/orm/query.py'))
        self.assertEqual('http server', profile.area_of('socketserver.py'))

    def test_summarize(self):
        summary = profile.summarize(profile.parse_collapsed(COLLAPSED))
        self.assertEqual(10, summary['samples'])
        areas = {a['area']: a['samples'] for a in summary['areas']}
        self.assertEqual({'sqlalchemy': 6, 'json': 3,
                          profile.OTHER: 1}, areas)
        inclusive = {a['area']: a['samples'] for a in summary['inclusive']}
        self.assertEqual({'sqlalchemy': 6, 'api/': 6, 'objects/': 6,
                          'pecan/wsme/webob': 6, 'conductor/': 3,
                          'db/': 3}, inclusive)
        top = summary['functions'][0]
        self.assertEqual('execute (sqlalchemy/engine/base.py)',
                         top['function'])
        self.assertEqual('sqlalchemy', top['area'])
        self.assertEqual(60.0, top['percent'])
        self.assertIn('dumps (json/encoder.py)',
                      [f['function'] for f in summary['functions']])

    def test_summarize_nothing(self):
        self.assertEqual(0, profile.summarize([])['samples'])

    def test_sampler_without_py_spy(self):
        sampler = profile.Sampler(os.getpid(), '/nonexistent/out',
                                  executable='')
        sampler.executable = None
        self.assertIn('py-spy is not installed', sampler.start())
        self.assertEqual(0, sampler.stop()['samples'])


class TestBulkLoad(base.DbTestCase):
    """The loader writes what the service writes for a node: with
    properties, their normalised columns and capabilities."""

    def test_nodes_with_properties_match(self):
        url = self.db.engine.url.render_as_string(hide_password=False)
        uuids, _seconds = bulk.load_nodes(
            url, 3, 'bulk', traits=['CUSTOM_A'], name_prefix='bulk',
            batch=2, properties={'memory_mb': '2048',
                                 'capabilities': 'boot_mode:uefi'})
        criteria = {'resource_class': 'bulk', 'traits': ['CUSTOM_A'],
                    'candidate_uuids': [], 'owner': None,
                    'match': {'memory_mb': 2048,
                              'capabilities': {'boot_mode': 'uefi'}}}
        dbapi = db_api.get_instance()
        self.assertEqual(3, len(dbapi.get_allocation_candidates(criteria,
                                                                10)))
        criteria['match']['capabilities'] = {'boot_mode': 'bios'}
        self.assertEqual([], dbapi.get_allocation_candidates(criteria, 10))
        self.assertEqual(3, bulk.delete_nodes(url, uuids))


class TestCommandLine(base.TestCase):

    def test_parse_sizes(self):
        self.assertEqual((1000, 10000), sweep.parse_sizes('10000, 1000,'))
        self.assertRaises(ValueError, sweep.parse_sizes, '0,10')
        self.assertRaises(ValueError, sweep.parse_sizes, '')

    def test_run_arguments(self):
        args = cli.build_parser().parse_args([
            'run', '--nodes', '10', '--allocations', '5', '--traits',
            'CUSTOM_A', 'CUSTOM_B', '--enroll', 'bulk', '--db-url',
            'sqlite://'])
        self.assertEqual(('run', 10, 5, 20, ['CUSTOM_A', 'CUSTOM_B']),
                         (args.command, args.nodes, args.allocations,
                          args.concurrency, args.traits))
        self.assertEqual((0.05, 60.0, 'bench', True),
                         (args.poll_interval, args.timeout,
                          args.resource_class, args.checks))

    def test_cpu_group_arguments(self):
        args = cli.build_parser().parse_args([
            'run', '--cpu-group', 'db=^postgres: ', '--cpu-group',
            ' mq = beam'])
        self.assertEqual([('db', '^postgres: '), ('mq', ' beam')],
                         args.cpu_group)
        stderr = io.StringIO()
        self.useFixture(__import__('fixtures').MonkeyPatch('sys.stderr',
                                                           stderr))
        for bad in ('nolabel', '=x', 'x=(unclosed'):
            self.assertRaises(SystemExit, cli.build_parser().parse_args,
                              ['run', '--cpu-group', bad])

    def test_sweep_arguments(self):
        args = cli.build_parser().parse_args([
            'sweep', '--sizes', '1000,10000', '--service-option',
            'conductor.workers_pool_size=8'])
        self.assertEqual((1000, 10000), args.sizes)
        self.assertEqual([('conductor', 'workers_pool_size', '8')],
                         args.service_option)

    def test_usage_errors(self):
        stderr = io.StringIO()
        self.useFixture(__import__('fixtures').MonkeyPatch('sys.stderr',
                                                           stderr))
        self.assertRaises(SystemExit, cli.main,
                          ['run', '--enroll', 'bulk'])
        self.assertIn('--enroll bulk needs --db-url', stderr.getvalue())
        self.assertRaises(SystemExit, cli.main,
                          ['sweep', '--db-url', 'postgresql://x/y'])
        self.assertIn('--wipe-db', stderr.getvalue())
        self.assertRaises(SystemExit, cli.main,
                          ['run', '--concurrency', '0'])
