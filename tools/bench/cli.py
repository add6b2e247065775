"""Command line of ``python -m tools.bench``."""

import argparse
import re
import shutil
import sys
import tempfile

from tools.bench import bulk
from tools.bench import explain as explain_mod
from tools.bench import floor as floor_mod
from tools.bench import groups as groups_mod
from tools.bench import phases
from tools.bench import placement as placement_mod
from tools.bench import report
from tools.bench import reservations as reservations_mod
from tools.bench import rich as rich_mod
from tools.bench import runner
from tools.bench import service as service_mod
from tools.bench import solver as solver_mod
from tools.bench import sweep as sweep_mod

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def _positive_int(text):
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError('must be a positive integer')
    return value


def _non_negative_int(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError('must be 0 or more')
    return value


def _positive_float(text):
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError('must be a positive number')
    return value


def _sizes(text):
    try:
        return sweep_mod.parse_sizes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))


def _cpu_group(text):
    label, sep, pattern = text.partition('=')
    if not sep or not label.strip() or not pattern:
        raise argparse.ArgumentTypeError(
            'expected LABEL=REGEX, got %r' % text)
    try:
        re.compile(pattern)
    except re.error as exc:
        raise argparse.ArgumentTypeError('bad REGEX %r: %s' % (pattern, exc))
    return label.strip(), pattern


def _placement_option(text):
    if text == 'none':
        return None
    name, sep, value = text.partition('=')
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(
            'expected NAME=VALUE or none, got %r' % text)
    return name.strip(), value.strip()


def _placement_options(given):
    """The [placement] options of the benchmark's Placement."""
    if given is None:
        return placement_mod.DEFAULT_PLACEMENT_OPTIONS
    return tuple(option for option in given if option is not None)


def _service_option(text):
    try:
        return service_mod.parse_option(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))


def _add_workload_args(parser):
    parser.add_argument('--allocations', type=_positive_int, default=500,
                        help='allocation requests to make (default 500)')
    parser.add_argument('--concurrency', type=_positive_int, default=20,
                        help='client threads, each with its own keep-alive '
                             'connection (default 20)')
    parser.add_argument('--resource-class', default='bench',
                        help='resource class of the nodes and of the '
                             'allocation requests (default bench)')
    parser.add_argument('--traits', nargs='*', default=[],
                        metavar='TRAIT',
                        help='traits given to the nodes and required by '
                             'every allocation')
    parser.add_argument('--poll-interval', type=_positive_float,
                        default=0.05,
                        help='seconds between GETs of an allocation '
                             '(default 0.05)')
    parser.add_argument('--timeout', type=_positive_float, default=60.0,
                        help='seconds after which an allocation that is '
                             'not active or error is reported stuck '
                             '(default 60)')
    parser.add_argument('--request-timeout', type=_positive_float,
                        default=30.0,
                        help='socket timeout of one HTTP request '
                             '(default 30)')
    parser.add_argument('--json', metavar='PATH',
                        help='also write the results as JSON to PATH')
    parser.add_argument('--no-checks', dest='checks', action='store_false',
                        help='skip the correctness checks (they list every '
                             'node and allocation through the API)')
    parser.add_argument('--no-progress', dest='progress',
                        action='store_false',
                        help='no progress lines on stderr')
    parser.add_argument('--profile', action='store_true',
                        help='sample the service with py-spy during the '
                             'allocate phase (our service only; needs '
                             '--service-pid with run)')


def _add_fleet_service_arguments(parser, concurrency=True):
    """The options of a command that loads its own fleet into the
    database of a service it starts, or of one running at --endpoint.

    :param concurrency: whether the command has --concurrency.
    """
    parser.add_argument('--endpoint',
                        help='API root URL of a running ironic_alloc '
                             '(its database is --db-url); default: start '
                             'a standalone service')
    parser.add_argument('--token', help='X-Auth-Token to send')
    parser.add_argument('--db-url',
                        help='SQLAlchemy URL of the service database (the '
                             'fleet is bulk-loaded into it); required with '
                             '--endpoint; default for a standalone '
                             'service: SQLite in its directory')
    parser.add_argument('--wipe-db', action='store_true',
                        help='confirm that --db-url may be emptied first '
                             '(a standalone service on a server database)')
    if concurrency:
        parser.add_argument('--concurrency', type=_positive_int, default=10,
                            help='client threads (default 10)')
    parser.add_argument('--service-option', type=_service_option,
                        action='append', default=[],
                        metavar='SECTION.KEY=VALUE',
                        help='an extra option of the standalone service')
    parser.add_argument('--request-timeout', type=_positive_float,
                        default=30.0,
                        help='socket timeout of one request (default 30)')
    parser.add_argument('--keep', action='store_true',
                        help='keep the fleet afterwards')
    parser.add_argument('--json', metavar='PATH',
                        help='also write the results as JSON to PATH')
    parser.add_argument('--no-progress', dest='progress',
                        action='store_false',
                        help='no progress lines on stderr')


def build_parser():
    parser = argparse.ArgumentParser(
        prog='python -m tools.bench',
        description='Benchmark node allocation through the Bare Metal API '
                    '(microversion %s).' % '1.79')
    commands = parser.add_subparsers(dest='command', required=True)

    run = commands.add_parser(
        'run', help='benchmark one endpoint',
        description='Enroll nodes, allocate them concurrently, delete the '
                    'allocations; report throughput, latency, errors and '
                    'correctness.')
    run.add_argument('--endpoint', default='http://127.0.0.1:6385',
                     help='API root URL (default http://127.0.0.1:6385)')
    run.add_argument('--token', help='X-Auth-Token to send')
    run.add_argument('--nodes', type=_positive_int, default=1000,
                     help='nodes to enroll (default 1000)')
    run.add_argument('--enroll', choices=('api', 'bulk'), default='api',
                     help='api: create and provide nodes through the API '
                          '(any Ironic); bulk: insert available nodes '
                          'into ironic_alloc\'s database (--db-url), a '
                          'fast loader for our service only')
    run.add_argument('--no-enroll', action='store_true',
                     help='enroll nothing: use the available nodes of the '
                          'resource class that are there')
    run.add_argument('--db-url',
                     help='SQLAlchemy URL of the service database, for '
                          '--enroll bulk')
    run.add_argument('--keep', action='store_true',
                     help='keep the enrolled nodes afterwards')
    run.add_argument('--cpu-group', type=_cpu_group, action='append',
                     default=[], metavar='LABEL=REGEX',
                     help='report the CPU used during the allocate phase '
                          'by the processes whose command line matches '
                          'REGEX (found when the phase starts), under '
                          'LABEL; repeatable, e.g. '
                          '"postgres=^postgres: "')
    run.add_argument('--compare-rich', action='store_true',
                     help='with --enroll bulk: load a fleet where about '
                          'half the nodes match the rich request (%s, '
                          'memory_mb >= %d, extension ironic-alloc %s) and '
                          'the others each fail one of its constraints; '
                          'run plain and rich requests in alternating '
                          'rounds on it and report both and their ratio'
                          % (' '.join(rich_mod.RICH_TRAITS),
                             rich_mod.MEMORY_MINIMUM, rich_mod.EXTENSION))
    run.add_argument('--pairs', type=_positive_int, default=2,
                     help='with --compare-rich: pairs of rounds, plain '
                          'then rich, then rich then plain... (default 2)')
    run.add_argument('--warmup', type=_non_negative_int, default=100,
                     help='with --compare-rich: unmeasured allocations of '
                          'each request before the rounds (default 100)')
    run.add_argument('--service-pid', type=_positive_int,
                     help='pid of the service process, for --profile and '
                          'memory figures (our service only)')
    _add_workload_args(run)

    sweep = commands.add_parser(
        'sweep', help='scaling: fresh services with growing fleets',
        description='For each size: start a standalone ironic-alloc, '
                    'bulk-load the nodes, run the allocation workload, '
                    'stop it; report the cost per allocation by size.')
    sweep.add_argument('--sizes', type=_sizes,
                       default=(1000, 10000, 100000),
                       help='comma-separated node counts (default '
                            '1000,10000,100000)')
    sweep.add_argument('--db-url',
                       help='SQLAlchemy URL of a database dedicated to the '
                            'benchmark (default: SQLite in each service '
                            'directory); it is emptied before each size')
    sweep.add_argument('--wipe-db', action='store_true',
                       help='confirm that --db-url may be emptied')
    sweep.add_argument('--transport-url',
                       help='oslo.messaging transport URL (default: the '
                            'in-process fake:// transport)')
    sweep.add_argument('--service-option', type=_service_option,
                       action='append', default=[],
                       metavar='SECTION.KEY=VALUE',
                       help='an extra option of the service config file '
                            '(repeatable), e.g. conductor.'
                            'workers_pool_size=32')
    sweep.add_argument('--service-executable', metavar='PATH',
                       help='the command to start instead of the '
                            'ironic-alloc console script next to this '
                            'Python (it gets --config-file FILE)')
    sweep.add_argument('--backend', choices=('database', 'placement'),
                       default='database',
                       help='[allocation]backend of the service (default '
                            'database); placement: each size also gets a '
                            'real Placement of its own (see '
                            '--placement-db-url)')
    sweep.add_argument('--placement-db-url', metavar='URL',
                       help='with --backend placement: SQLAlchemy URL of '
                            'an existing PostgreSQL database, for a user '
                            'allowed to create databases; each size gets '
                            'a fresh database on that server, dropped '
                            'afterwards (default: IRONIC_ALLOC_PLACEMENT_'
                            'PG, else openstack_citest on 127.0.0.1:5432)')
    sweep.add_argument('--placement-workers', type=_positive_int,
                       default=2,
                       help='gunicorn workers of Placement (default 2)')
    sweep.add_argument('--placement-threads', type=_positive_int,
                       default=4,
                       help='threads per Placement worker (default 4)')
    sweep.add_argument('--placement-option', action='append',
                       type=_placement_option, metavar='NAME=VALUE',
                       help="an option of Placement's [placement] section "
                            '(repeatable; replaces the defaults %s; '
                            '"none" alone: Placement\'s own defaults)'
                            % ', '.join(
                                '%s=%s' % o for o in
                                placement_mod.DEFAULT_PLACEMENT_OPTIONS))
    sweep.add_argument('--placement-sync-interval', type=_positive_int,
                       default=placement_mod.DEFAULT_SYNC_INTERVAL,
                       help='[placement]sync_interval of the service: '
                            'seconds between full passes, which bring '
                            'the bulk-loaded nodes to Placement (default '
                            '%d)' % placement_mod.DEFAULT_SYNC_INTERVAL)
    sweep.add_argument('--placement-sync-timeout', type=_positive_float,
                       default=placement_mod.DEFAULT_SYNC_TIMEOUT,
                       help='seconds to wait for Placement to offer every '
                            'loaded node before giving up (default %d)'
                            % placement_mod.DEFAULT_SYNC_TIMEOUT)
    sweep.add_argument('--keep-workdir', action='store_true',
                       help='keep each service directory (log, database)')
    sweep.add_argument('--workdir-root',
                       help='where to create the service directories '
                            '(default: the temporary directory)')
    _add_workload_args(sweep)

    floor = commands.add_parser(
        'floor', help='the CPU floor of one allocation on this machine',
        description='Measure, one at a time, the parts every allocation '
                    'crosses, with the service\'s configuration and code '
                    'but no allocation work: the HTTP server, the API '
                    'answering GET /, an RPC cast to an endpoint that '
                    'does nothing, one-row read and write transactions '
                    '(on a scratch table it creates and drops).  Their '
                    'sum bounds what an allocation can cost.')
    floor.add_argument('--config-file', action='append', required=True,
                       metavar='PATH',
                       help='a configuration file of the service (its '
                            'database and transport URL are used); '
                            'repeatable')
    floor.add_argument('--count', type=_positive_int, default=2000,
                       help='operations measured per part (default 2000)')
    floor.add_argument('--warmup', type=_positive_int, default=200,
                       help='operations before measuring (default 200)')
    floor.add_argument('--cpu-group', type=_cpu_group, action='append',
                       default=[], metavar='LABEL=REGEX',
                       help='also count the CPU of the processes whose '
                            'command line matches REGEX, e.g. '
                            '"db=^postgres" or "broker=beam"; repeatable')
    floor.add_argument('--timeout', type=_positive_float, default=60.0,
                       help='seconds to wait for the casts to arrive '
                            '(default 60)')
    floor.add_argument('--json', metavar='PATH',
                       help='also write the results as JSON to PATH')
    solver = commands.add_parser(
        'solver', help='CPU time of the allocation group solver alone',
        description='Time the assignment of an allocation group '
                    '(conductor/group_solver.py) on built candidate '
                    'lists, without a service: "dense" (every member may '
                    'use every node), "chain" (the deepest repair of a '
                    'first fit) and "scarce" (no assignment exists).  '
                    'Every solution is checked.')
    solver.add_argument('--members', type=_positive_int, default=100,
                        help='members of the group (default 100)')
    solver.add_argument('--nodes', type=_positive_int, default=10000,
                        help='candidate nodes of every member for the '
                             'dense shape (default 10000)')
    solver.add_argument('--repeat', type=_positive_int, default=5,
                        help='timed runs per shape (default 5)')
    solver.add_argument('--shape', action='append',
                        choices=solver_mod.SHAPES,
                        help='shape to time; repeatable (default: all)')
    solver.add_argument('--json', metavar='PATH',
                        help='also write the results as JSON to PATH')
    explain = commands.add_parser(
        'explain', help='latency of POST /v1/allocations/explain',
        description='Bulk-load a fleet that every step of the funnel '
                    'removes nodes from, then ask concurrently for the '
                    'explanations of a plain request, a rich one and one '
                    'using every operator (extension 1.1); report the '
                    'latency percentiles and check every answer.  Starts '
                    'a standalone ironic-alloc on --db-url unless '
                    '--endpoint is given.')
    _add_fleet_service_arguments(explain)
    explain.add_argument('--nodes', type=_positive_int, default=100000,
                         help='fleet size (default 100000)')
    explain.add_argument('--requests', type=_positive_int, default=1000,
                         help='measured explanations (default 1000)')
    explain.add_argument('--warmup', type=int, default=20,
                         help='explanations before measuring (default 20)')
    explain.add_argument('--examples', type=int, default=10,
                         help='?examples= of every request (default 10)')
    explain.add_argument('--resource-class', default='bench-explain',
                         help='resource class of the fleet (default '
                              'bench-explain)')
    reserve = commands.add_parser(
        'reservations',
        help='throughput and latency of POST /v1/reservations',
        description='Bulk-load a fleet of available nodes, then let '
                    'concurrent clients reserve the first free node of a '
                    'random list (extension 1.2) and delete the '
                    'reservation, again and again; report the latency '
                    'percentiles and the rate, and check every answer '
                    '(no node held twice, nothing left held).  Starts a '
                    'standalone ironic-alloc on --db-url unless '
                    '--endpoint is given.')
    _add_fleet_service_arguments(reserve)
    reserve.add_argument('--nodes', type=_positive_int, default=1000,
                         help='fleet size (default 1000)')
    reserve.add_argument('--requests', type=_positive_int, default=5000,
                         help='measured reservation requests (default '
                              '5000)')
    reserve.add_argument('--warmup', type=_non_negative_int, default=20,
                         help='reservation requests before measuring '
                              '(default 20)')
    reserve.add_argument('--choose', type=_positive_int, default=5,
                         help='nodes in the list of every request '
                              '(default 5)')
    reserve.add_argument('--ttl', type=_positive_int, default=600,
                         help='lease of every reservation in seconds '
                              '(default 600)')
    reserve.add_argument('--resource-class', default='bench-reserve',
                         help='resource class of the fleet (default '
                              'bench-reserve)')
    groups = commands.add_parser(
        'groups', help='allocation groups: one large group, and scarcity',
        description='Allocation groups (extension %s).  "large": one group '
                    'of --members members on --large-nodes nodes, POST '
                    'until a GET shows it active, --repeat times (deleted '
                    'in between); reports p50/p90/max.  "scarcity": '
                    '--clients clients released by a barrier each create '
                    'one group of --group-size members on --scarce-nodes '
                    'nodes, --rounds times; every round must end with as '
                    'many groups active as the fleet holds and the others '
                    'in error, no node held twice, no partial group.  '
                    'Exit status 1 on any violation.  Starts a standalone '
                    'ironic-alloc on --db-url unless --endpoint is given.'
                    % groups_mod.EXTENSION)
    _add_fleet_service_arguments(groups, concurrency=False)
    groups.add_argument('--mode', action='append', choices=groups_mod.MODES,
                        help='mode to run; repeatable (default: both)')
    groups.add_argument('--large-nodes', type=_positive_int, default=1000,
                        help='fleet of the large group (default 1000)')
    groups.add_argument('--members', type=_positive_int, default=50,
                        help='members of the large group (default 50)')
    groups.add_argument('--repeat', type=_positive_int, default=10,
                        help='runs of the large group (default 10)')
    groups.add_argument('--scarce-nodes', type=_positive_int, default=100,
                        help='fleet of the scarcity rounds (default 100)')
    groups.add_argument('--clients', type=_positive_int, default=20,
                        help='clients of a scarcity round, one group each '
                             '(default 20)')
    groups.add_argument('--group-size', type=_positive_int, default=10,
                        help='members of each scarcity group (default 10)')
    groups.add_argument('--rounds', type=_positive_int, default=20,
                        help='scarcity rounds (default 20)')
    groups.add_argument('--poll-interval', type=_positive_float,
                        default=0.01,
                        help='seconds between GETs of a group (default '
                             '0.01)')
    groups.add_argument('--timeout', type=_positive_float, default=120.0,
                        help='seconds after which a group still allocating '
                             'is a problem (default 120)')
    groups.add_argument('--resource-class', default='bench-groups',
                        help='prefix of the resource classes of the two '
                             'fleets (default bench-groups)')
    return parser


def _check_fleet_service_arguments(args, parser):
    if args.endpoint and not args.db_url:
        parser.error('--endpoint needs --db-url (the service database)')
    if not args.endpoint and args.db_url and not args.wipe_db:
        parser.error('a standalone service on --db-url empties it first: '
                     'add --wipe-db to confirm it is a benchmark database')


def _fleet_settings(args):
    return phases.Settings(
        endpoint=args.endpoint or 'http://127.0.0.1:0',
        concurrency=args.concurrency, resource_class=args.resource_class,
        token=args.token, request_timeout=args.request_timeout,
        show_progress=args.progress)


def _run_on_service(args, settings, options, run, name):
    """``run(settings, options)`` against --endpoint, or against a
    standalone service started on --db-url (or SQLite) for the run.

    :returns: its result document, with the machine's description.
    """
    if args.endpoint:
        result = run(settings, options)
    else:
        workdir = tempfile.mkdtemp(prefix='bench-%s-' % name)
        service = service_mod.StandaloneService(
            workdir, db_url=args.db_url,
            options=tuple(args.service_option))
        try:
            if args.db_url:
                bulk.wipe(args.db_url)
            service.start()
            settings.endpoint = service.endpoint
            options.db_url = service.db_url
            result = run(settings, options)
        finally:
            service.stop()
            shutil.rmtree(workdir, ignore_errors=True)
    result['machine'] = report.machine_info()
    return result


def _reservations(args, parser):
    _check_fleet_service_arguments(args, parser)
    if args.choose > args.nodes:
        parser.error('--choose cannot exceed --nodes')
    options = reservations_mod.Options(
        nodes=args.nodes, requests=args.requests, choose=args.choose,
        warmup=args.warmup, ttl=args.ttl, db_url=args.db_url,
        keep=args.keep)
    result = _run_on_service(args, _fleet_settings(args), options,
                             reservations_mod.run, 'reservations')
    return _finish(args, result, report.format_reservations(result),
                   not result['problems'])


def _groups(args, parser):
    _check_fleet_service_arguments(args, parser)
    options = groups_mod.Options(
        modes=tuple(args.mode or groups_mod.MODES),
        large_nodes=args.large_nodes, members=args.members,
        repeat=args.repeat, scarce_nodes=args.scarce_nodes,
        clients=args.clients, group_size=args.group_size,
        rounds=args.rounds, poll_interval=args.poll_interval,
        timeout=args.timeout, db_url=args.db_url, keep=args.keep)
    settings = phases.Settings(
        endpoint=args.endpoint or 'http://127.0.0.1:0',
        concurrency=args.clients, resource_class=args.resource_class,
        token=args.token, request_timeout=args.request_timeout,
        show_progress=args.progress)
    result = _run_on_service(args, settings, options, groups_mod.run,
                             'groups')
    return _finish(args, result, groups_mod.format_groups(result),
                   not result['problems'])


def _explain(args, parser):
    _check_fleet_service_arguments(args, parser)
    options = explain_mod.Options(
        nodes=args.nodes, requests=args.requests, examples=args.examples,
        warmup=args.warmup, db_url=args.db_url, keep=args.keep)
    result = _run_on_service(args, _fleet_settings(args), options,
                             explain_mod.run, 'explain')
    return _finish(args, result, report.format_explain(result),
                   not result['problems'])


def _settings(args, endpoint=None, token=None):
    return phases.Settings(
        endpoint=endpoint or 'http://127.0.0.1:0',
        concurrency=args.concurrency, resource_class=args.resource_class,
        traits=tuple(args.traits), poll_interval=args.poll_interval,
        timeout=args.timeout, token=token,
        request_timeout=args.request_timeout, show_progress=args.progress)


def _check_compare_rich(args, parser):
    if args.enroll != 'bulk' or args.no_enroll:
        parser.error('--compare-rich needs --enroll bulk (its fleet has '
                     'properties the API enrollment does not set)')
    if args.traits:
        parser.error('--compare-rich sets the traits of both requests: '
                     'leave out --traits')
    matching = rich_mod.matching_nodes(args.nodes)
    for option, count in (('--allocations', args.allocations),
                          ('--warmup', args.warmup)):
        if count > matching:
            parser.error('--compare-rich: %s %d exceeds the %d of %d nodes '
                         'that match the rich request' % (
                             option, count, matching, args.nodes))


def _run(args, parser):
    if args.enroll == 'bulk' and not args.no_enroll and not args.db_url:
        parser.error('--enroll bulk needs --db-url (the service database)')
    if args.compare_rich:
        _check_compare_rich(args, parser)
    elif args.pairs != 2 or args.warmup != 100:
        parser.error('--pairs and --warmup need --compare-rich')
    if args.allocations > args.nodes and not args.no_enroll:
        print('Note: more allocations (%d) than nodes (%d): expect '
              '"no candidate" errors' % (args.allocations, args.nodes),
              file=sys.stderr)
    settings = _settings(args, args.endpoint, args.token)
    problem = runner.check_endpoint(settings)
    if problem:
        print('Error: %s' % problem, file=sys.stderr)
        return EXIT_FAILED
    options = runner.RunOptions(
        nodes=args.nodes, allocations=args.allocations,
        enroll='none' if args.no_enroll else args.enroll,
        db_url=args.db_url, keep=args.keep, checks=args.checks,
        profile=args.profile, service_pid=args.service_pid,
        cpu_groups=tuple(args.cpu_group))
    if args.compare_rich:
        return _compare_rich(args, settings, options)
    result = runner.run(settings, options)
    return _finish(args, result, report.format_run(result),
                   report.passed(result))


def _finish(args, document, text, passed):
    """Print ``text``, write ``document`` to --json if asked; the exit
    status."""
    print(text)
    if args.json:
        report.write_json(args.json, document)
    if document['interrupted']:
        return EXIT_INTERRUPTED
    return EXIT_OK if passed else EXIT_FAILED


def _compare_rich(args, settings, options):
    problem = runner.check_endpoint(rich_mod.settings_for(settings,
                                                          rich_mod.RICH))
    if problem:
        print('Error: the rich request needs ironic_alloc\'s extension '
              '%s: %s' % (rich_mod.EXTENSION, problem), file=sys.stderr)
        return EXIT_FAILED
    document = rich_mod.compare(settings, options, args.pairs,
                               args.warmup)
    return _finish(args, document, report.format_comparison(document),
                   report.comparison_passed(document))


def _sweep(args, parser):
    if args.placement_db_url and args.backend != 'placement':
        parser.error('--placement-db-url needs --backend placement')
    if args.db_url and not args.wipe_db:
        parser.error('sweep empties --db-url before each size: add '
                     '--wipe-db to confirm it is a benchmark database')
    options = sweep_mod.SweepOptions(
        sizes=args.sizes, allocations=args.allocations, db_url=args.db_url,
        wipe_db=args.wipe_db, transport_url=args.transport_url,
        service_options=tuple(args.service_option), checks=args.checks,
        profile=args.profile, keep_workdir=args.keep_workdir,
        workdir_root=args.workdir_root,
        executable=args.service_executable, backend=args.backend,
        placement_db_url=args.placement_db_url,
        placement_workers=args.placement_workers,
        placement_threads=args.placement_threads,
        placement_options=_placement_options(args.placement_option),
        sync_interval=args.placement_sync_interval,
        sync_timeout=args.placement_sync_timeout)
    rows, status = sweep_mod.sweep(_settings(args), options)
    print(report.format_sweep(rows))
    if args.json:
        report.write_json(args.json, {
            'sizes': list(args.sizes), 'allocations': args.allocations,
            'backend': args.backend,
            'concurrency': args.concurrency, 'rows': rows})
    if status == 'interrupted':
        return EXIT_INTERRUPTED
    if status == 'failed':
        return EXIT_FAILED
    return EXIT_OK if all(report.passed(r['result']) for r in rows) \
        else EXIT_FAILED


def _floor(args):
    try:
        parts = floor_mod.measure(args.config_file, args.count,
                                  warmup=args.warmup,
                                  cpu_groups=tuple(args.cpu_group),
                                  timeout=args.timeout)
    except floor_mod.FloorFailed as exc:
        print('Error: %s' % exc, file=sys.stderr)
        return EXIT_FAILED
    info = report.machine_info()
    # NOTE: every part runs on this interpreter (the servers are forks).
    document = floor_mod.floor_document(
        parts, info['cpus'], '%s CPUs, %s; %s' % (
            info['cpus'], info.get('cpu_model', 'unknown CPU'),
            report.interpreter_of(info)))
    print(report.format_floor(document))
    if args.json:
        report.write_json(args.json, document)
    return EXIT_OK


def _solver(args):
    try:
        results = solver_mod.measure(args.shape or solver_mod.SHAPES,
                                     args.members, args.nodes, args.repeat)
    except solver_mod.SolverCheckFailed as exc:
        print('Error: %s' % exc, file=sys.stderr)
        return EXIT_FAILED
    print(solver_mod.format_results(results))
    if args.json:
        report.write_json(args.json, {'workload': 'solver',
                                      'machine': report.machine_info(),
                                      'results': results})
    return EXIT_OK


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == 'run':
            return _run(args, parser)
        if args.command == 'floor':
            return _floor(args)
        if args.command == 'explain':
            return _explain(args, parser)
        if args.command == 'solver':
            return _solver(args)
        if args.command == 'reservations':
            return _reservations(args, parser)
        if args.command == 'groups':
            return _groups(args, parser)
        return _sweep(args, parser)
    except KeyboardInterrupt:
        print('\nAborted.', file=sys.stderr)
        return EXIT_INTERRUPTED
    except service_mod.ServiceFailed as exc:
        print('Error: %s' % exc, file=sys.stderr)
        return EXIT_FAILED
