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
    service = service_mod.StandaloneService(
        workdir, db_url=options.db_url, transport_url=options.transport_url,
        options=options.service_options, executable=options.executable)
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
            profile=options.profile, service_pid=service.pid)
        result = runner.run(size_settings, run_options)
        result['service']['rss_mib']['started'] = started['rss']
    finally:
        status = service.stop()
        if status not in (0, None):
            _say('   ironic-alloc exited with status %s; log: %s'
                 % (status, service.log_path))
    if not options.keep_workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    rss = result['service']['rss_mib']
    return {'nodes': nodes,
            'load_seconds': result['phases']['enroll']['seconds'],
            'rss_mib': {'loaded': rss.get('loaded'),
                        'after': rss.get('after_run'),
                        'peak': rss.get('peak')},
            'result': result,
            'workdir': workdir if options.keep_workdir else None}


def sweep(settings, options):
    """Run every size in turn.

    :returns: (list of rows, status: 'done', 'interrupted' or 'failed').
    """
    rows = []
    for nodes in options.sizes:
        try:
            row = run_size(settings, options, nodes)
        except service_mod.ServiceFailed as exc:
            _say('Error at %d nodes: %s' % (nodes, exc))
            return rows, 'failed'
        rows.append(row)
        print(report.format_run(row['result']) + '\n', flush=True)
        if row['result']['interrupted']:
            return rows, 'interrupted'
    return rows, 'done'
