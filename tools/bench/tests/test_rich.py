"""``run --compare-rich``: the fleet, the rounds and the comparison.

The fleet is checked against the service's own matcher on the test
database; the command runs once end to end against a standalone
ironic-alloc (SQLite, in-process RPC) with a few nodes.  The figures it
measures are never asserted, only what they are made of.
"""

import io
import json
import os
import threading

import fixtures

from ironic_alloc.common import matching
from ironic_alloc.db import api as db_api
from ironic_alloc.tests import base
from tools.bench import checks
from tools.bench import cli
from tools.bench import client
from tools.bench import phases
from tools.bench import report
from tools.bench import rich
from tools.bench import service
from tools.bench.tests import command

A1 = '11111111-1111-1111-1111-111111111111'
A2 = '22222222-2222-2222-2222-222222222222'
N1 = 'aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa'
N2 = 'bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb'


def _settings(**kw):
    return phases.Settings(endpoint='http://127.0.0.1:6385',
                           show_progress=False, **kw)


class TestFleet(base.TestCase):

    def test_half_matches_the_rest_fails_one_constraint_each(self):
        groups = rich.fleet(1000)
        self.assertEqual(1000, sum(g.count for g in groups))
        self.assertEqual(500, rich.matching_nodes(1000))
        self.assertEqual(
            {'rack-1': 250, 'rack-2': 250, 'no-required': 125,
             'forbidden': 125, 'no-any-of': 125, 'low-memory': 125},
            {g.label: g.count for g in groups})

    def test_uneven_and_tiny_fleets(self):
        groups = rich.fleet(7)
        self.assertEqual(7, sum(g.count for g in groups))
        self.assertEqual(4, rich.matching_nodes(7))
        self.assertEqual([('rack-1', 2), ('rack-2', 2), ('no-required', 1),
                          ('forbidden', 1), ('no-any-of', 1)],
                         [(g.label, g.count) for g in groups])
        self.assertEqual([('rack-1', 1)],
                         [(g.label, g.count) for g in rich.fleet(1)])

    def test_order_alternates_which_kind_goes_first(self):
        self.assertEqual(['plain', 'rich'], rich.order(1))
        self.assertEqual(['plain', 'rich', 'rich', 'plain', 'plain',
                          'rich'], rich.order(3))

    def test_settings_of_each_kind(self):
        base_settings = _settings(traits=('CUSTOM_X',), concurrency=7)
        rich_settings = rich.settings_for(base_settings, rich.RICH)
        self.assertEqual((rich.RICH_TRAITS, {'memory_mb': 65536}, '1.1', 7),
                         (rich_settings.traits, rich_settings.match,
                          rich_settings.extension,
                          rich_settings.concurrency))
        plain = rich.settings_for(rich_settings, rich.PLAIN)
        self.assertEqual(((), None, None, 7),
                         (plain.traits, plain.match, plain.extension,
                          plain.concurrency))

    def test_rich_post_carries_the_match_object(self):
        sent = []

        class Refusing:
            def timed(self, method, path, body=None, params=None):
                sent.append(body)
                return client.Response(400, {}, b'{}'), 0.001

        record = phases.AllocationRecord(index=0)
        phases._allocate_one(rich.settings_for(_settings(), rich.RICH),
                             Refusing(), record, None)
        self.assertEqual([{'resource_class': 'bench',
                           'traits': list(rich.RICH_TRAITS),
                           'match': {'memory_mb': 65536}}], sent)

    def test_on_matching_nodes(self):
        records = [phases.AllocationRecord(0, A1, state='active',
                                           node_uuid=N1),
                   phases.AllocationRecord(1, A2, state='error')]
        self.assertTrue(rich.on_matching_nodes(records, {N1}).ok)
        check = rich.on_matching_nodes(records, {N2})
        self.assertFalse(check.ok)
        self.assertIn('allocation %s got node %s' % (A1, N1), check.detail)


class TestFleetOnTheMatcher(base.DbTestCase):
    """The groups say whether they match; the service's matcher agrees."""

    def test_matcher_finds_exactly_the_matching_groups(self):
        url = self.db.engine.url.render_as_string(hide_password=False)
        groups = rich.fleet(12)
        loaded, matching_uuids, _seconds = rich.load_fleet(
            _settings(), url, groups, 'rich', threading.Event())
        self.assertEqual(12, len(loaded))
        self.assertEqual(6, len(matching_uuids))
        dbapi = db_api.get_instance()

        def found(traits, match):
            criteria = matching.criteria('bench', traits, [], None, match)
            return {dbapi.get_node_by_id(node_id).uuid for node_id in
                    dbapi.get_allocation_candidates(criteria, 100)}

        self.assertEqual(matching_uuids,
                         found(list(rich.RICH_TRAITS), rich.RICH_MATCH))
        self.assertEqual(set(loaded), found([], None))
        # Each group that does not match is refused by its one constraint:
        # without it, the rich request finds that group too.
        without = {
            'no-required': (['CUSTOM_A', '!CUSTOM_GPU',
                             'in:CUSTOM_RACK_1,CUSTOM_RACK_2'],
                            rich.RICH_MATCH),
            'forbidden': (['CUSTOM_A', 'CUSTOM_B',
                           'in:CUSTOM_RACK_1,CUSTOM_RACK_2'],
                          rich.RICH_MATCH),
            'no-any-of': (['CUSTOM_A', 'CUSTOM_B', '!CUSTOM_GPU'],
                          rich.RICH_MATCH),
            'low-memory': (list(rich.RICH_TRAITS), None)}
        for group in groups:
            if group.matches:
                continue
            traits, match = without[group.label]
            self.assertEqual(len(matching_uuids) + group.count,
                             len(found(traits, match)), group.label)


def _round(kind, active, seconds, ok=True):
    """A run document as runner.run() makes it, for one round."""
    document = report.build_run(
        rich.settings_for(_settings(), kind), {'nodes': 4}, {
            'allocate': phases.PhaseResult('allocate', seconds, active)},
        [phases.AllocationRecord(i, 'a-%d' % i, post_seconds=0.01,
                                 state='active', node_uuid='n-%d' % i,
                                 to_terminal_seconds=0.1)
         for i in range(active)],
        [('after allocate', checks.Check('x', ok, ''))])
    return {'request': kind, 'result': document}


class TestComparison(base.TestCase):

    def test_rates_ratio_and_pairs(self):
        rounds = [_round('plain', 10, 1.0), _round('rich', 8, 1.0),
                  _round('rich', 10, 2.0), _round('plain', 10, 0.5)]
        document = rich.build_comparison(rich.fleet(20), rounds, 0.1)
        plain, rich_summary = (document['summary']['plain'],
                               document['summary']['rich'])
        self.assertEqual((2, 20, 1.5), (plain['rounds'], plain['active'],
                                        plain['allocate_seconds']))
        self.assertAlmostEqual(20 / 1.5, plain['active_per_second'])
        self.assertAlmostEqual(18 / 3.0, rich_summary['active_per_second'])
        self.assertAlmostEqual(6.0 / (20 / 1.5), document['ratio'])
        self.assertEqual([0.8, 0.25], [round(r, 6) for r in
                                       document['pair_ratios']])
        self.assertEqual(10, document['matching_nodes'])
        self.assertTrue(report.comparison_passed(document))
        json.dumps(document)  # JSON-ready
        text = report.format_comparison(document)
        self.assertIn('=== Round 3: rich request ===', text)
        self.assertIn('rich/plain: 0.45 (pairs: 0.80, 0.25; target >= 0.8)',
                      text)
        self.assertIn('match memory_mb >= 65536, extension ironic-alloc 1.1',
                      text)
        self.assertIn('Result: PASS', text)

    def test_a_failed_round_or_a_missing_kind_fails(self):
        document = rich.build_comparison(
            rich.fleet(20), [_round('plain', 10, 1.0),
                             _round('rich', 10, 1.0, ok=False)], 0.1)
        self.assertFalse(report.comparison_passed(document))
        self.assertIn('Result: FAIL', report.format_comparison(document))
        document = rich.build_comparison(
            rich.fleet(20), [_round('plain', 10, 1.0)], 0.1,
            interrupted=True)
        self.assertFalse(report.comparison_passed(document))
        self.assertIsNone(document['ratio'])
        self.assertEqual([], document['pair_ratios'])
        self.assertIn('rich/plain: - (pairs: -;',
                      report.format_comparison(document))
        document = rich.build_comparison(
            rich.fleet(20), [_round('plain', 10, 1.0),
                             _round('rich', 10, 1.0)], 0.1)
        self.assertTrue(report.comparison_passed(document))
        document['warmup'] = {'allocations': 5,
                              'failures': {'plain': 0, 'rich': 1}}
        self.assertFalse(report.comparison_passed(document))
        self.assertIn('warm-up, not measured: 5 allocations of each '
                      'request (1 failed)',
                      report.format_comparison(document))


class TestCommandLine(base.TestCase):

    def _usage_error(self, argv):
        stderr = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', stderr))
        self.assertRaises(SystemExit, cli.main, argv)
        return stderr.getvalue()

    def test_usage_errors(self):
        bulk = ['run', '--enroll', 'bulk', '--db-url', 'sqlite://',
                '--compare-rich']
        self.assertIn('--compare-rich needs --enroll bulk',
                      self._usage_error(['run', '--compare-rich']))
        self.assertIn('leave out --traits',
                      self._usage_error(bulk + ['--traits', 'CUSTOM_X']))
        self.assertIn('--allocations 6 exceeds the 5 of 10 nodes',
                      self._usage_error(bulk + ['--nodes', '10',
                                                '--allocations', '6']))
        self.assertIn('--warmup 6 exceeds the 5 of 10 nodes',
                      self._usage_error(bulk + ['--nodes', '10',
                                                '--allocations', '5',
                                                '--warmup', '6']))
        for option in ('--pairs', '--warmup'):
            self.assertIn('--pairs and --warmup need --compare-rich',
                          self._usage_error(['run', option, '3']))


class TestEndToEnd(base.TestCase):
    """The command against a real standalone service, a few nodes."""

    def test_compare_rich(self):
        workdir = self.useFixture(fixtures.TempDir()).path
        svc = service.StandaloneService(workdir)
        try:
            svc.start()
        finally:
            self.addCleanup(svc.stop)
        out = os.path.join(workdir, 'rich.json')
        result, document = command.run_bench(
            self, ['run', '--endpoint', svc.endpoint, '--enroll', 'bulk',
                   '--db-url', svc.db_url, '--nodes', '12',
                   '--allocations', '6', '--concurrency', '3', '--pairs',
                   '1', '--warmup', '2', '--no-progress', '--compare-rich'],
            out, timeout=180)
        self.assertEqual(['plain', 'rich'],
                         [r['request'] for r in document['rounds']])
        self.assertEqual({'allocations': 2,
                          'failures': {'plain': 0, 'rich': 0}},
                         document['warmup'])
        for kind in ('plain', 'rich'):
            summary = document['summary'][kind]
            self.assertEqual((6, 0, 0), (summary['active'],
                                         summary['errors'],
                                         summary['stuck']))
        rich_checks = [c['name'] for c in
                       document['rounds'][1]['result']['checks']]
        self.assertIn('rich allocations on matching nodes', rich_checks)
        self.assertIsNotNone(document['ratio'])
        self.assertIn('rich/plain: ', result.stdout)
