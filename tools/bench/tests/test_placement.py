"""Unit tests of the pure parts of the benchmark's placement backend
(tools/bench/placement.py and its arguments, config and report)."""

import io
import os
import subprocess
import sys

import fixtures

from ironic_alloc.tests import base
from ironic_alloc.tests.servers import placement_server
from tools.bench import cli
from tools.bench import placement
from tools.bench import report
from tools.bench import runner
from tools.bench import service
from tools.bench.tests import test_bench


class TestServiceOptions(base.TestCase):

    def test_config_points_at_placement(self):
        text = service.render_config(
            '/tmp/s', 6385, options=placement.service_options(
                'http://127.0.0.1:8778', sync_interval=7))
        sections = {}
        current = None
        for line in text.splitlines():
            if line.startswith('['):
                current = sections.setdefault(line.strip('[]'), {})
            elif ' = ' in line:
                key, value = line.split(' = ', 1)
                current[key] = value
        self.assertEqual({'backend': 'placement'}, sections['allocation'])
        self.assertEqual({'auth_type': 'admin_token',
                          'endpoint': 'http://127.0.0.1:8778',
                          'token': 'admin', 'sync_interval': '7'},
                         sections['placement'])


class FakeClock:
    """A clock that advances only when slept on."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class TestWaitForSync(base.TestCase):

    def test_returns_the_time_it_took(self):
        clock = FakeClock()
        counts = iter([0, 0, 5, 12, 20])
        seconds = placement.wait_for_sync(lambda: next(counts), 20, 60,
                                          interval=2, clock=clock,
                                          sleep=clock.sleep)
        self.assertEqual(8.0, seconds)

    def test_gives_up_after_the_timeout(self):
        clock = FakeClock()
        exc = self.assertRaises(
            placement.PlacementUnavailable, placement.wait_for_sync,
            lambda: 3, 20, 10, interval=1, clock=clock, sleep=clock.sleep)
        self.assertIn('offers 3 of 20 nodes after 10 s', str(exc))

    def test_reports_progress(self):
        clock = FakeClock()
        said = []
        counts = iter(range(0, 100, 4))
        seconds = placement.wait_for_sync(lambda: next(counts), 60, 60,
                                          interval=1, clock=clock,
                                          sleep=clock.sleep,
                                          say=said.append)
        self.assertEqual(15.0, seconds)
        self.assertEqual(['   Placement offers 40/60 nodes (10 s)'], said)


class TestLeftoverClaims(base.TestCase):

    def test_no_claim(self):
        check = placement.leftover_claims(
            lambda c: (200, {'allocations': {}}), ['a', 'b'])
        self.assertTrue(check.ok)
        self.assertEqual('no Placement claim left', check.name)

    def test_claim_left_or_error(self):
        answers = {'a': (200, {'allocations': {'rp-1': {}}}),
                   'b': (500, None), 'c': (200, {'allocations': {}})}

        def lookup(consumer):
            if consumer == 'd':
                raise OSError('refused')
            return answers[consumer]

        check = placement.leftover_claims(lookup, ['a', 'b', 'c', 'd'])
        self.assertFalse(check.ok)
        self.assertIn('3 problem(s)', check.detail)
        self.assertIn('a holds a claim on rp-1', check.detail)
        self.assertIn('b: HTTP 500', check.detail)
        self.assertIn('d: refused', check.detail)


class TestArguments(base.TestCase):

    def test_placement_backend(self):
        args = cli.build_parser().parse_args([
            'sweep', '--backend', 'placement', '--sizes', '1000,10000',
            '--placement-db-url', 'postgresql+psycopg2://u:p@h/db',
            '--placement-workers', '3', '--placement-threads', '2',
            '--placement-sync-interval', '9'])
        self.assertEqual('placement', args.backend)
        self.assertEqual('postgresql+psycopg2://u:p@h/db',
                         args.placement_db_url)
        self.assertEqual((3, 2, 9), (args.placement_workers,
                                     args.placement_threads,
                                     args.placement_sync_interval))

    def test_defaults(self):
        args = cli.build_parser().parse_args(['sweep'])
        self.assertEqual('database', args.backend)
        self.assertEqual(placement.DEFAULT_SYNC_INTERVAL,
                         args.placement_sync_interval)

    def test_placement_options(self):
        parse = cli.build_parser().parse_args
        self.assertEqual(placement.DEFAULT_PLACEMENT_OPTIONS,
                         cli._placement_options(
                             parse(['sweep']).placement_option))
        args = parse(['sweep', '--placement-option',
                      'max_allocation_candidates=50', '--placement-option',
                      ' allocation_conflict_retry_count = 1'])
        self.assertEqual((('max_allocation_candidates', '50'),
                          ('allocation_conflict_retry_count', '1')),
                         cli._placement_options(args.placement_option))
        args = parse(['sweep', '--placement-option', 'none'])
        self.assertEqual((), cli._placement_options(args.placement_option))

    def test_reconfigure_rewrites_and_signals(self):
        workdir = self.useFixture(fixtures.TempDir()).path
        svc = service.StandaloneService(
            workdir, options=[('placement', 'sync_interval', '5'),
                              ('allocation', 'backend', 'placement')])
        svc.port = 7000
        svc._write_config()
        # NOTE: a stand-in process that reports the SIGHUP it gets.
        svc.process = subprocess.Popen(
            [sys.executable, '-c',
             'import signal, sys, time\n'
             'signal.signal(signal.SIGHUP, lambda *a: sys.exit(7))\n'
             'print("ready", flush=True)\n'
             'time.sleep(30)\n'], stdout=subprocess.PIPE, text=True)
        self.addCleanup(svc.process.kill)
        self.assertEqual('ready\n', svc.process.stdout.readline())
        svc.reconfigure([('placement', 'sync_interval', '600')])
        self.assertEqual(7, svc.process.wait(30))
        with open(os.path.join(workdir, 'ironic-alloc.conf')) as f:
            text = f.read()
        self.assertIn('sync_interval = 600', text)
        self.assertNotIn('sync_interval = 5', text)
        self.assertIn('backend = placement', text)

    def test_placement_conf_holds_the_options(self):
        workdir = self.useFixture(fixtures.TempDir()).path
        server = placement_server.PlacementServer(
            options={'randomize_allocation_candidates': 'true'})
        server.workdir = workdir
        server._write_conf('sqlite://')
        with open(os.path.join(workdir, 'placement.conf')) as f:
            text = f.read()
        self.assertIn('[placement]\nrandomize_allocation_candidates = '
                      'true\n', text)
        self.assertIn('auth_strategy = noauth2', text)

    def test_usage_errors(self):
        stderr = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', stderr))
        self.assertRaises(SystemExit, cli.main,
                          ['sweep', '--backend', 'nova'])
        self.assertRaises(SystemExit, cli.main,
                          ['sweep', '--placement-db-url', 'postgresql://x'])
        self.assertIn('--placement-db-url needs --backend placement',
                      stderr.getvalue())
        self.assertRaises(SystemExit, cli.main,
                          ['sweep', '--placement-sync-interval', '0'])


class TestReport(base.TestCase):

    def test_backend_and_sync_column(self):
        result = test_bench._sample_run(extra={
            'setup_seconds': {'placement_sync': 12.5}})
        result['settings']['backend'] = 'placement'
        text = report.format_run(result)
        self.assertIn('(backend placement)', text.splitlines()[0])
        self.assertIn('Set-up, not measured: placement sync 12.5 s', text)
        rows = [{'nodes': 1000, 'backend': 'placement', 'load_seconds': 1.0,
                 'result': result,
                 'rss_mib': {'loaded': 90.0, 'after': 100.0,
                             'peak': 101.0}}]
        lines = report.format_sweep(rows).splitlines()
        self.assertIn('backend placement', lines[0])
        self.assertIn('placement sync s', lines[1])
        self.assertEqual(['1000', '1.0', '12.5'], lines[3].split()[:3])
        self.assertIn('not in the allocation figures', lines[-1])

    def test_database_sweep_has_no_sync_column(self):
        rows = [{'nodes': 1000, 'load_seconds': 1.0,
                 'result': test_bench._sample_run(),
                 'rss_mib': {}}]
        text = report.format_sweep(rows)
        self.assertIn('backend database', text)
        self.assertNotIn('placement sync', text)

    def test_run_options_describe_backend(self):
        self.assertEqual('placement', runner.RunOptions(
            backend='placement').describe()['backend'])
        self.assertNotIn('backend', runner.RunOptions().describe())


class TestPlacementRequests(base.TestCase):

    UUID = '7b1c3e52-0f4d-4c2a-9d5e-2f6a8b9c0d1e'

    def test_access_log_lines(self):
        lines = [
            '--- start 1234 on port 8778',
            '127.0.0.1 - - [26/Nov/2026:02:00:00 +0000] "PUT /allocations/'
            '%s HTTP/1.1" 204 0 "-" "keystoneauth1/5.9.1"' % self.UUID,
            '127.0.0.1 - - [26/Nov/2026:02:00:00 +0000] "GET /resource_'
            'providers/%s/inventories HTTP/1.1" 200 210 "-" "ks"'
            % self.UUID,
            '127.0.0.1 - - [26/Nov/2026:02:00:01 +0000] "GET /resource_'
            'providers?member_of=x&resources=CUSTOM_BENCH:1 HTTP/1.1" 200 '
            '90 "-" "Python-urllib/3.11"',
            '127.0.0.1 - - [26/Nov/2026:02:00:01 +0000] "PUT /resource_'
            'classes/CUSTOM_BENCH HTTP/1.1" 204 0 "-" "ks"',
            '127.0.0.1 - - [26/Nov/2026:02:00:01 +0000] "PUT /allocations/'
            '%s HTTP/1.1" 409 300 "-" "ks"' % self.UUID,
            '[2026-11-26 02:00:02 +0000] [1234] [INFO] Booting worker',
        ]
        self.assertEqual({'PUT /allocations/{uuid}': 2,
                          'GET /resource_providers/{uuid}/inventories': 1,
                          'GET /resource_providers': 1,
                          'PUT /resource_classes/{name}': 1},
                         dict(placement.count_requests(lines)))

    def test_counter_reads_the_log_again(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'gunicorn.log')
        line = ('127.0.0.1 - - [26/Nov/2026:02:00:00 +0000] "DELETE '
                '/allocations/%s HTTP/1.1" 204 0 "-" "ks"\n' % self.UUID)
        with open(path, 'w') as log:
            log.write(line)
        counter = placement.request_counter(path)
        before = counter()
        with open(path, 'a') as log:
            log.write(line * 2)
        self.assertEqual({'DELETE /allocations/{uuid}': 2},
                         dict(counter() - before))

    def test_settled_waits_for_quiet(self):
        clock = FakeClock()
        counts = iter([1, 2, 5, 5, 5, 5, 5, 5, 9])
        self.assertEqual(5, runner.settled(lambda: next(counts), quiet=2.0,
                                           clock=clock, sleep=clock.sleep))

    def test_settled_gives_up(self):
        clock = FakeClock()
        counts = iter(range(1000))
        self.assertEqual(20, runner.settled(lambda: next(counts), quiet=2.0,
                                            timeout=10.0, clock=clock,
                                            sleep=clock.sleep))

    def test_report(self):
        result = test_bench._sample_run(extra={'placement_requests': {
            'allocate': {'PUT /allocations/{uuid}': 10},
            'cycle': {'PUT /allocations/{uuid}': 10,
                      'DELETE /allocations/{uuid}': 10}}})
        requested = result['allocations']['requested']
        text = report.format_run(result)
        self.assertIn('Placement requests in the allocate phase: 10, %.2f '
                      'per allocation requested' % (10 / requested), text)
        self.assertIn('Placement requests from the allocate phase until '
                      'Placement was quiet after the deletions: 20, %.2f '
                      'per allocation requested' % (20 / requested), text)
        self.assertIn('      10  DELETE /allocations/{uuid}', text)
        rows = [{'nodes': 1000, 'backend': 'placement', 'load_seconds': 1.0,
                 'result': result, 'rss_mib': {}}]
        lines = report.format_sweep(rows).splitlines()
        self.assertIn('Placement req/alloc', lines[1])
        self.assertEqual('%.2f' % (20 / requested), lines[3].split()[-1])
