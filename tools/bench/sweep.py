"""The cost of an allocation as the fleet grows.

For each fleet size: start a fresh standalone service (its own directory,
port and database), bulk-load the nodes, run the same allocation workload
through the API, stop the service. The cost per allocation is the
allocate-phase wall time divided by the number of allocations, compared
with the smallest size.
"""

import dataclasses
import shutil
import sys
import tempfile

from tools.bench import placement as placement_mod
from tools.bench import report
from tools.bench import runner
from tools.bench import service as service_mod


@dataclasses.dataclass
class SweepOptions:
    sizes: tuple = (1000, 10000, 100000)
    allocations: int = 500
    db_url: str = None
    wipe_db: bool = False
    transport_url: str = None
    service_options: tuple = ()
    checks: bool = True
    profile: bool = False
    keep_workdir: bool = False
    workdir_root: str = None
    executable: str = None
    # 'database' or 'placement' ([allocation]backend of the service).
    backend: str = 'database'
    # Placement (backend placement): a URL of an existing database on the
    # PostgreSQL server that gets one fresh database per size (None: the
    # tests' default, the main cluster on 127.0.0.1:5432).
    placement_db_url: str = None
    placement_workers: int = 2
    placement_threads: int = 4
    # (name, value) pairs of Placement's [placement] section.
    placement_options: tuple = placement_mod.DEFAULT_PLACEMENT_OPTIONS
    sync_interval: int = placement_mod.DEFAULT_SYNC_INTERVAL
    sync_timeout: float = placement_mod.DEFAULT_SYNC_TIMEOUT


def parse_sizes(text):
    """``"1000,10000"`` -> (1000, 10000), sorted, positive.

    :raises: ValueError.
    """
    sizes = sorted({int(part) for part in text.split(',') if part.strip()})
    if not sizes or sizes[0] <= 0:
        raise ValueError('sizes must be positive integers, e.g. 1000,10000')
    return tuple(sizes)


def _say(text):
    print(text, file=sys.stderr, flush=True)


def run_size(settings, options, nodes):
    """Start a service, load ``nodes`` nodes, run the workload, stop it.

    :returns: a sweep row (dict), or None when interrupted before a run.
    """
    workdir = tempfile.mkdtemp(prefix='bench-%d-' % nodes,
                               dir=options.workdir_root)
    if options.db_url:
        from tools.bench import bulk
        bulk.wipe(options.db_url)
    placement = None
    service_options = tuple(options.service_options)
    run_extra = {}
    if options.backend == 'placement':
        _say('== %d nodes: starting Placement (PostgreSQL, %d workers x %d '
             'threads; %s)' % (
                 nodes, options.placement_workers,
                 options.placement_threads,
                 ', '.join('%s = %s' % o for o in options.placement_options)
                 or 'its defaults'))
        placement = placement_mod.start(options.placement_workers,
                                        options.placement_threads,
                                        options.placement_db_url,
                                        options.placement_options)
        _say('   Placement on %s' % placement.url)
        service_options = placement_mod.service_options(
            placement.url, options.sync_interval) + service_options
        run_extra = {
            'backend': 'placement',
            'after_enroll': _placement_sync_wait(
                placement.url, settings.resource_class,
                options.sync_timeout,
                # NOTE: once the nodes are there, full passes only add
                # load (three listings of the fleet each): the measured
                # phases run with the default interval.
                then=lambda: service.reconfigure(
                    [('placement', 'sync_interval',
                      str(placement_mod.MEASURED_SYNC_INTERVAL))])),
            'extra_check': placement_mod.claims_check(placement.url),
            'request_counter': placement_mod.request_counter(
                placement.access_log),
            # NOTE: Placement's own CPU, besides the service's and the
            # whole machine's.
            'cpu_groups': (('placement', placement_mod.PROCESS_PATTERN),)}
    service = service_mod.StandaloneService(
        workdir, db_url=options.db_url, transport_url=options.transport_url,
        options=service_options, executable=options.executable)
    _say('== %d nodes: starting ironic-alloc in %s' % (nodes, workdir))
    try:
        service.start()
        started = service.memory()
        _say('   listening on %s (pid %d, RSS %.0f MiB)'
             % (service.endpoint, service.pid, started['rss'] or 0))
        size_settings = dataclasses.replace(settings,
                                            endpoint=service.endpoint)
        run_options = runner.RunOptions(
            nodes=nodes, allocations=options.allocations, enroll='bulk',
            db_url=service.db_url, keep=True, checks=options.checks,
            profile=options.profile, service_pid=service.pid, **run_extra)
        result = runner.run(size_settings, run_options)
        result['service']['rss_mib']['started'] = started['rss']
    finally:
        try:
            status = service.stop()
            if status not in (0, None):
                _say('   ironic-alloc exited with status %s; log: %s'
                     % (status, service.log_path))
        finally:
            if placement is not None:
                placement.cleanup()
    if not options.keep_workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    rss = result['service']['rss_mib']
    return {'nodes': nodes, 'backend': options.backend,
            'load_seconds': result['phases']['enroll']['seconds'],
            'rss_mib': {'loaded': rss.get('loaded'),
                        'after': rss.get('after_run'),
                        'peak': rss.get('peak')},
            'result': result,
            'workdir': workdir if options.keep_workdir else None}


def _placement_sync_wait(url, resource_class, timeout, then=None):
    """``after_enroll`` of a placement run: wait until Placement offers
    every loaded node (the conductor's full pass brings them there), then
    call ``then``."""
    def wait(nodes):
        _say('   waiting for the Placement sync of %d nodes' % nodes)
        seconds = placement_mod.wait_for_sync(
            lambda: placement_mod.offered_count(url, resource_class),
            nodes, timeout, say=_say)
        _say('   Placement offers all %d nodes after %.1f s' % (nodes,
                                                                 seconds))
        if then is not None:
            then()
        return {'placement_sync': seconds}
    return wait


def sweep(settings, options):
    """Run every size in turn.

    :returns: (list of rows, status: 'done', 'interrupted' or 'failed').
    """
    rows = []
    for nodes in options.sizes:
        try:
            row = run_size(settings, options, nodes)
        except (service_mod.ServiceFailed,
                placement_mod.PlacementUnavailable) as exc:
            _say('Error at %d nodes: %s' % (nodes, exc))
            return rows, 'failed'
        rows.append(row)
        print(report.format_run(row['result']) + '\n', flush=True)
        if row['result']['interrupted']:
            return rows, 'interrupted'
    return rows, 'done'
