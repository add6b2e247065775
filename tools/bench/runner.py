"""One benchmark run: enroll, allocate, check, delete, check, clean up."""

import dataclasses
import os
import sys
import tempfile
import threading
import time
import uuid

from tools.bench import checks as checks_mod
from tools.bench import client as api_client
from tools.bench import phases as phases_mod
from tools.bench import profile as profile_mod
from tools.bench import report
from tools.bench import service as service_mod


@dataclasses.dataclass
class RunOptions:
    """The parameters of a run besides phases.Settings."""

    nodes: int = 1000
    allocations: int = 500
    # 'api', 'bulk' (ironic_alloc only, needs db_url) or 'none'.
    enroll: str = 'api'
    db_url: str = None
    keep: bool = False
    checks: bool = True
    profile: bool = False
    service_pid: int = None
    # (label, regular expression over command lines): CPU of each group
    # of processes during the allocate phase.
    cpu_groups: tuple = ()
    # ``extra_check(records)`` -> checks.Check, run with the checks after
    # the delete phase (the placement backend: no claim left).
    extra_check: object = None
    # ``after_enroll(nodes)`` -> {name: seconds}: set-up after the nodes
    # are loaded and before the allocate phase (the placement backend:
    # waiting for the sync); reported under 'setup_seconds'.
    after_enroll: object = None
    # The allocation backend of the service, for the report.
    backend: str = None
    # ``request_counter()`` -> collections.Counter {request kind: count}
    # of the requests Placement answered so far (the placement backend);
    # reported: those of the allocate phase, and those from its start
    # until Placement is quiet again after the delete phase (what a whole
    # allocation costs).
    request_counter: object = None

    def describe(self):
        described = {'nodes': self.nodes, 'enroll': self.enroll,
                     'checks': self.checks, 'profile': self.profile}
        if self.backend:
            described['backend'] = self.backend
        return described


def _say(text):
    print(text, file=sys.stderr, flush=True)


def _enroll(settings, options, name_prefix, stop):
    """:returns: (PhaseResult or None, node uuids created)."""
    if options.enroll == 'api':
        return phases_mod.enroll_api(settings, options.nodes, name_prefix,
                                     stop)
    if options.enroll == 'bulk':
        from tools.bench import bulk
        bar = settings.progress('load', options.nodes)
        interrupted = False
        try:
            uuids, seconds = bulk.load_nodes(
                options.db_url, options.nodes, settings.resource_class,
                settings.traits, name_prefix=name_prefix, progress=bar,
                stop=stop)
        except KeyboardInterrupt:
            # NOTE: the batch in flight is rolled back; loaded batches are
            # not known here, so they stay (their names share the prefix).
            stop.set()
            interrupted = True
            uuids, seconds = [], 0.0
        bar.finish('(bulk loader, not the API)')
        return (phases_mod.PhaseResult('enroll', seconds, len(uuids),
                                       interrupted), uuids)
    return None, []


def _clean_up_nodes(settings, options, node_uuids):
    if options.keep or not node_uuids:
        return None
    _say('Removing the %d nodes of this run (--keep keeps them)'
         % len(node_uuids))
    if options.enroll == 'bulk':
        from tools.bench import bulk
        bulk.delete_nodes(options.db_url, node_uuids)
        return None
    return phases_mod.delete_nodes_api(settings, node_uuids,
                                       threading.Event())


def _cpu(pid):
    """CPU seconds used so far by this process, by the service and by
    the whole machine (every process: the service's helpers, databases,
    brokers, the benchmark itself)."""
    times = os.times()
    return {'client': times.user + times.system,
            'service': service_mod.cpu_seconds(pid) if pid else None,
            'machine': service_mod.machine_busy_seconds()}


def _group_pids(cpu_groups):
    """{label: set of pids} of the processes matching each pattern now."""
    return {label: set(service_mod.pids_matching(pattern))
            for label, pattern in cpu_groups}


def _group_cpu(groups):
    """{label: {pid: CPU seconds used so far}} of the processes that are
    still there."""
    result = {}
    for label, pids in groups.items():
        result[label] = {}
        for pid in pids:
            seconds = service_mod.cpu_seconds(pid)
            if seconds is not None:
                result[label][pid] = seconds
    return result


def _group_usage(cpu_groups, before):
    """{label: {'pids', 'seconds', 'programs'}}: CPU used since
    ``before`` (a _group_cpu result) by the processes matching each
    pattern now, and the program files they run (for a Python service,
    which interpreter build: runs compare only on the same one).

    A process that started during the phase, such as a database backend
    serving a connection the first measured request opened, counts with
    all its CPU time; one that exited during it cannot be read any more
    and is left out.
    """
    usage = {}
    for label, used in _group_cpu(_group_pids(cpu_groups)).items():
        earlier = before.get(label, {})
        programs = {service_mod.executable_of(pid) for pid in used}
        usage[label] = {
            'pids': len(used),
            'seconds': sum(seconds - earlier.get(pid, 0.0)
                           for pid, seconds in used.items()),
            'programs': sorted(p for p in programs if p)}
    return usage


def settled(count, quiet=2.0, timeout=60.0, clock=time.monotonic,
            sleep=time.sleep):
    """``count()`` once it has not changed for ``quiet`` seconds: work the
    service queued (the placement backend's node syncs) ends after the
    phase that caused it.  At most ``timeout`` seconds of waiting."""
    last = count()
    since = start = clock()
    while clock() - since < quiet and clock() - start < timeout:
        sleep(0.5)
        now = count()
        if now != last:
            last, since = now, clock()
    return last


def _memory(pid):
    return service_mod.memory_of(pid) if pid else None


def _run_checks(settings, records, stage, after_delete, found, timings,
                stop):
    """Run the checks of one stage; Ctrl-C skips them (and sets stop)."""
    _say('Checking through the API (%s)' % stage)
    client = settings.client()
    try:
        results, seconds = checks_mod.run(client, records, after_delete)
    except KeyboardInterrupt:
        stop.set()
        _say('\nInterrupted: checks skipped')
        return
    finally:
        client.close()
    found.extend((stage, c) for c in results)
    timings[stage] = seconds


def run(settings, options):
    """Run the benchmark once.

    :returns: the result document (see report.build_run).
    """
    stop = threading.Event()
    machine = report.machine_info()
    machine['load_before'] = report.load_average()
    name_prefix = 'bench-%s' % uuid.uuid4().hex[:8]
    pid = options.service_pid
    memory = {}
    phases = {}
    records = []
    found_checks = []
    check_seconds = {}
    profile = None
    enrolled = []
    cpu = {}
    setup = {}
    requests = {}
    count = options.request_counter
    started = None
    try:
        phases['enroll'], enrolled = _enroll(settings, options, name_prefix,
                                             stop)
        if pid:
            memory['loaded'] = (_memory(pid) or {}).get('rss')
        if options.after_enroll is not None and not stop.is_set():
            setup = options.after_enroll(options.nodes)
        if not stop.is_set():
            sampler = None
            if options.profile:
                profile, sampler = _start_profile(pid)
            groups_before = _group_cpu(_group_pids(options.cpu_groups))
            cpu_before = _cpu(pid)
            started = count() if count else None
            try:
                phases['allocate'], records = phases_mod.allocate(
                    settings, options.allocations, stop)
            finally:
                if sampler is not None:
                    profile = sampler.stop()
            if count:
                requests['allocate'] = dict(count() - started)
            cpu = {name: (after - cpu_before[name]
                          if None not in (after, cpu_before[name])
                          else None)
                   for name, after in _cpu(pid).items()}
            if options.cpu_groups:
                cpu['groups'] = _group_usage(options.cpu_groups,
                                             groups_before)
            if pid:
                memory['after_allocate'] = (_memory(pid) or {}).get('rss')
        if options.checks and records and not stop.is_set():
            _run_checks(settings, records, 'after allocate', False,
                        found_checks, check_seconds, stop)
        # NOTE: allocations are deleted even after Ctrl-C (as clean-up,
        # with a fresh stop event); a second Ctrl-C aborts.
        interrupted = stop.is_set()
        phases['delete'] = phases_mod.delete(
            settings, records, threading.Event())
        phases['delete'].interrupted |= interrupted
        if count and started is not None:
            requests['cycle'] = dict(settled(count) - started)
        if options.checks and records and not interrupted:
            _run_checks(settings, records, 'after delete', True,
                        found_checks, check_seconds, threading.Event())
            if options.extra_check is not None:
                found_checks.append(('after delete',
                                     options.extra_check(records)))
    finally:
        cleanup = _clean_up_nodes(settings, options, enrolled)
    if cleanup is not None and cleanup.errors:
        _say('Node clean-up errors: %s' % dict(cleanup.errors))
    machine['load_after'] = report.load_average()
    extra = {'machine': machine, 'check_seconds': check_seconds,
             'allocate_cpu_seconds': cpu}
    if setup:
        extra['setup_seconds'] = setup
    if requests:
        extra['placement_requests'] = requests
    if pid:
        peak = (_memory(pid) or {}).get('peak')
        memory['after_run'] = (_memory(pid) or {}).get('rss')
        memory['peak'] = peak
        extra['service'] = {'pid': pid, 'rss_mib': memory}
    if profile is not None:
        extra['profile'] = profile
    return report.build_run(settings, options.describe(), phases, records,
                            found_checks, extra)


def _start_profile(pid):
    """:returns: (profile document or None, Sampler or None)."""
    if not pid:
        return profile_mod.unavailable(
            'no service pid (run --service-pid, or sweep): profile '
            'skipped'), None
    workdir = tempfile.mkdtemp(prefix='bench-profile-')
    sampler = profile_mod.Sampler(pid, os.path.join(workdir, 'stacks.txt'))
    reason = sampler.start()
    if reason:
        _say(reason)
        return profile_mod.unavailable(reason), None
    _say('Profiling process %d with py-spy (%s)' % (pid, sampler.output))
    return None, sampler


def check_endpoint(settings):
    """Fail early, with a clear message, when the API is unusable.

    :returns: None, or an error message.
    """
    client = settings.client()
    try:
        response = client.request('GET', '/v1/allocations',
                                  params={'limit': 1})
    except api_client.ConnectionFailed as exc:
        return 'cannot reach %s: %s' % (settings.endpoint, exc)
    finally:
        client.close()
    if response.status != 200:
        return 'GET /v1/allocations on %s: %s' % (
            settings.endpoint, api_client.error_kind(response))
    return None

