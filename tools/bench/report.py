"""The result document of a run (JSON-ready) and its text tables.

Times in the document are seconds; the tables show latencies in
milliseconds.
"""

import collections
import json
import os
import platform
import sys
import time

from tools.bench import stats

OUTCOMES = ('active', 'error', 'stuck', 'post_failed', 'vanished',
            'unfinished', 'not_sent')


def machine_info(proc_root='/proc'):
    """CPU count, memory and load average of this machine."""
    info = {'cpus': os.cpu_count(), 'python': platform.python_version(),
            'python_executable': os.path.realpath(sys.executable),
            'platform': platform.platform(terse=True)}
    try:
        with open(os.path.join(proc_root, 'meminfo')) as f:
            for line in f:
                if line.startswith('MemTotal:'):
                    info['memory_gib'] = round(
                        int(line.split()[1]) / 1024 ** 2, 1)
    except OSError:
        pass
    try:
        with open(os.path.join(proc_root, 'cpuinfo')) as f:
            for line in f:
                if line.startswith('model name'):
                    info['cpu_model'] = line.split(':', 1)[1].strip()
                    break
    except OSError:
        pass
    return info


def interpreter_of(info):
    """'Python 3.11.2, /usr/bin/python3.11' from a machine_info()."""
    return 'Python %s, %s' % (info.get('python'),
                              info.get('python_executable'))


def load_average():
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


def phase_dict(phase):
    """The JSON form of a phases.PhaseResult."""
    if phase is None:
        return None
    return {'seconds': phase.seconds, 'items': phase.items,
            'per_second': stats.rate(phase.items, phase.seconds),
            'interrupted': phase.interrupted,
            'errors': dict(phase.errors.most_common())}


def _request_extras(settings):
    """The match object and extension version of the requests, when the
    run sends them (absent from plain runs' documents)."""
    extras = {}
    if settings.match:
        extras['match'] = dict(settings.match)
    if settings.extension:
        extras['extension'] = settings.extension
    return extras


def build_run(settings, options, phases, records, checks, extra=None):
    """The result document of one ``run``.

    :param settings: the phases.Settings used.
    :param options: a dict of the other run parameters (nodes, enroll...).
    :param phases: dict phase name -> PhaseResult (or None if skipped).
    :param records: the AllocationRecords of the allocate phase.
    :param checks: list of (stage, checks.Check).
    :param extra: more top-level keys (machine, service, profile...).
    """
    outcomes = collections.Counter(r.outcome for r in records)
    allocate = phases.get('allocate')
    wall = allocate.seconds if allocate else None
    requested = len(records)
    poll_errors = collections.Counter(
        kind for r in records for kind in r.poll_errors)
    result = {
        'settings': dict(options, endpoint=settings.endpoint,
                         concurrency=settings.concurrency,
                         resource_class=settings.resource_class,
                         traits=list(settings.traits),
                         poll_interval=settings.poll_interval,
                         timeout=settings.timeout,
                         **_request_extras(settings)),
        'phases': {name: phase_dict(p) for name, p in phases.items()},
        'allocations': dict(
            {o: outcomes.get(o, 0) for o in OUTCOMES},
            requested=requested,
            created=sum(1 for r in records if r.uuid),
            active_per_second=stats.rate(outcomes.get('active', 0), wall),
            seconds_per_allocation=(wall / requested
                                    if wall and requested else None),
            polls=sum(r.polls for r in records),
            polls_per_allocation=(sum(r.polls for r in records)
                                  / max(1, sum(1 for r in records
                                               if r.uuid)))),
        'latency': {
            'post': stats.summarize(r.post_seconds for r in records
                                    if r.post_seconds is not None),
            'post_to_active': stats.summarize(
                r.to_terminal_seconds for r in records
                if r.outcome == 'active'),
            'delete': stats.summarize(r.delete_seconds for r in records
                                      if r.delete_seconds is not None),
        },
        'errors': dict((allocate.errors if allocate else
                        collections.Counter()).most_common()),
        'poll_errors': dict(poll_errors.most_common()),
        'checks': [{'stage': stage, 'name': c.name, 'ok': c.ok,
                    'detail': c.detail} for stage, c in checks],
        'interrupted': any(p.interrupted for p in phases.values() if p),
        'finished_at': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
    }
    result.update(extra or {})
    return result


def problems(result):
    """Why a run did not pass: a list of short sentences (empty = pass)."""
    found = []
    if result['interrupted']:
        found.append('interrupted')
    allocations = result['allocations']
    missing = allocations['requested'] - allocations['active']
    if missing:
        found.append('%d of %d allocations not active' % (
            missing, allocations['requested']))
    for name, phase in result['phases'].items():
        if phase and phase['errors']:
            found.append('%d %s errors' % (sum(phase['errors'].values()),
                                           name))
    failed = sum(1 for c in result['checks'] if not c['ok'])
    if failed:
        found.append('%d correctness check(s) failed' % failed)
    return found


def passed(result):
    """True when the run had no errors, nothing stuck and every check ok."""
    return not problems(result)


def _num(value, fmt='%.2f'):
    return '-' if value is None else fmt % value


def _ms(value):
    return '-' if value is None else '%.1f' % (value * 1000)


def _table(header, rows):
    widths = [max(len(str(cell)) for cell in column)
              for column in zip(header, *rows)]
    lines = []
    for i, row in enumerate([header] + rows):
        cells = [str(c).ljust(w) if j == 0 else str(c).rjust(w)
                 for j, (c, w) in enumerate(zip(row, widths))]
        lines.append('  '.join(cells).rstrip())
        if i == 0:
            lines.append('  '.join('-' * w for w in widths))
    return lines


def _counter_lines(title, counts):
    if not counts:
        return ['%s: none' % title]
    lines = ['%s:' % title]
    for kind, count in sorted(counts.items(), key=lambda kv: -kv[1]):
        lines.append('  %6d  %s' % (count, kind))
    return lines


def machine_cpu_usage(result):
    """Busy CPU of the whole machine in the allocate phase: seconds, share
    of all CPUs over the phase's wall time, and per allocation requested;
    None when not measured.  At 100 % the machine is the bound: more
    throughput needs less CPU per allocation or more CPUs."""
    busy = (result.get('allocate_cpu_seconds') or {}).get('machine')
    phase = result['phases'].get('allocate')
    cpus = (result.get('machine') or {}).get('cpus')
    requested = result['allocations']['requested']
    if busy is None or not phase or not phase['seconds'] or not cpus \
            or not requested:
        return None
    return {'seconds': busy, 'cpus': cpus,
            'percent': 100.0 * busy / (phase['seconds'] * cpus),
            'ms_per_allocation': 1000.0 * busy / requested}


def placement_requests_per_allocation(result, phase='cycle'):
    """Placement requests per allocation requested (None: not counted)."""
    counts = (result.get('placement_requests') or {}).get(phase)
    requested = result['allocations']['requested']
    if counts is None or not requested:
        return None
    return sum(counts.values()) / requested


def _placement_request_lines(result):
    counted = result.get('placement_requests') or {}
    lines = []
    for phase, when in (('allocate', 'in the allocate phase'),
                        ('cycle', 'from the allocate phase until Placement '
                                  'was quiet after the deletions')):
        if phase in counted:
            lines.append('  Placement requests %s: %d, %s per allocation '
                         'requested' % (
                             when, sum(counted[phase].values()),
                             _num(placement_requests_per_allocation(
                                 result, phase))))
    for kind, count in sorted((counted.get('cycle') or {}).items(),
                              key=lambda kv: (-kv[1], kv[0])):
        lines.append('    %6d  %s' % (count, kind))
    return lines


def format_run(result):
    """The human-readable report of one run."""
    settings = result['settings']
    lines = ['Benchmark of %s%s' % (
                 settings['endpoint'],
                 ' (backend %s)' % settings['backend']
                 if settings.get('backend') else ''),
             '  nodes %s (enroll: %s), allocations %d, concurrency %d, '
             'resource class %r, traits %s, poll %gs, timeout %gs' % (
                 settings.get('nodes'), settings.get('enroll'),
                 result['allocations']['requested'],
                 settings['concurrency'], settings['resource_class'],
                 ','.join(settings['traits']) or '-',
                 settings['poll_interval'], settings['timeout'])]
    if settings.get('match') or settings.get('extension'):
        lines.append('  match %s, extension ironic-alloc %s' % (
            json.dumps(settings.get('match') or {}, sort_keys=True),
            settings.get('extension') or '-'))
    machine = result.get('machine')
    if machine:
        lines.append('  machine: %s CPUs, %s GiB; load average before %s, '
                     'after %s' % (machine.get('cpus'),
                                   machine.get('memory_gib'),
                                   machine.get('load_before'),
                                   machine.get('load_after')))
        if machine.get('python_executable'):
            lines.append('  benchmark client: %s' % interpreter_of(machine))
    lines.append('')
    rows = []
    for name, phase in result['phases'].items():
        if phase is None:
            continue
        rows.append([name, _num(phase['seconds']), phase['items'],
                     _num(phase['per_second'], '%.1f'),
                     sum(phase['errors'].values()),
                     'yes' if phase['interrupted'] else ''])
    lines += _table(['phase', 'wall s', 'items', 'items/s', 'errors',
                     'interrupted'], rows)
    for name, seconds in sorted((result.get('setup_seconds')
                                 or {}).items()):
        lines.append('Set-up, not measured: %s %s s' % (
            name.replace('_', ' '), _num(seconds, '%.1f')))
    lines.append('')
    alloc = result['allocations']
    lines.append('Allocations: %d requested, %d created, %d active, '
                 '%d error, %d stuck, %d POST failed, %d vanished, '
                 '%d unfinished, %d not sent' % (
                     alloc['requested'], alloc['created'], alloc['active'],
                     alloc['error'], alloc['stuck'], alloc['post_failed'],
                     alloc['vanished'], alloc['unfinished'],
                     alloc['not_sent']))
    lines.append('  %s allocations/s to active; %s s per allocation '
                 '(allocate wall time / requested)' % (
                     _num(alloc['active_per_second'], '%.1f'),
                     _num(alloc['seconds_per_allocation'], '%.4f')))
    lines.append('  %d GET polls, %.1f per allocation created' % (
        alloc['polls'], alloc['polls_per_allocation']))
    cpu = result.get('allocate_cpu_seconds') or {}
    if cpu.get('client') is not None:
        lines.append('  CPU during the allocate phase: benchmark client '
                     '%.1f s, service %s s' % (
                         cpu['client'], _num(cpu.get('service'), '%.1f')))
    requested = result['allocations']['requested']
    for label, group in sorted((cpu.get('groups') or {}).items()):
        lines.append('  CPU of %s (%d processes%s): %.1f s, %s ms per '
                     'allocation requested' % (
                         label, group['pids'],
                         ''.join(', ' + p for p in group.get('programs', ())),
                         group['seconds'],
                         _num(1000.0 * group['seconds'] / requested
                              if requested else None, '%.1f')))
    usage = machine_cpu_usage(result)
    if usage is not None:
        lines.append('  whole machine during the allocate phase: %.1f CPU s '
                     '= %.0f %% of %d CPUs, %.1f CPU ms per allocation '
                     'requested' % (usage['seconds'], usage['percent'],
                                    usage['cpus'], usage['ms_per_allocation']))
    lines += _placement_request_lines(result)
    lines.append('')
    rows = []
    for label, key in (('POST /v1/allocations', 'post'),
                       ('POST -> active', 'post_to_active'),
                       ('DELETE /v1/allocations', 'delete')):
        summary = result['latency'][key]
        rows.append([label, summary['count'], _ms(summary['p50']),
                     _ms(summary['p90']), _ms(summary['p99']),
                     _ms(summary['max'])])
    lines += _table(['latency (ms)', 'count', 'p50', 'p90', 'p99', 'max'],
                    rows)
    lines.append('')
    lines += _counter_lines('Allocation errors', result['errors'])
    delete = result['phases'].get('delete')
    if delete:
        lines += _counter_lines('Delete errors', delete['errors'])
    enroll = result['phases'].get('enroll')
    if enroll and enroll['errors']:
        lines += _counter_lines('Enroll errors', enroll['errors'])
    if result['poll_errors']:
        lines += _counter_lines('Transient poll errors (retried)',
                                result['poll_errors'])
    lines.append('')
    if result['checks']:
        lines.append('Correctness (through the API):')
        for check in result['checks']:
            lines.append('  [%s] %s: %s%s' % (
                'ok' if check['ok'] else 'FAIL', check['stage'],
                check['name'],
                ' - ' + check['detail'] if check['detail'] else ''))
    else:
        lines.append('Correctness: not checked')
    service = result.get('service')
    if service and service.get('rss_mib'):
        lines.append('')
        lines.append('Service RSS (MiB): %s' % ', '.join(
            '%s %s' % (k, _num(v, '%.1f'))
            for k, v in service['rss_mib'].items()))
    if result.get('profile'):
        lines.append('')
        lines += format_profile(result['profile'])
    lines.append('')
    found = problems(result)
    lines.append('Result: %s' % ('FAIL: ' + '; '.join(found) if found else
                                 'PASS (no errors, nothing stuck, checks '
                                 'ok)'))
    return '\n'.join(lines)


def comparison_passed(document):
    """Every round of both kinds passed (the ratio is a measurement, not
    a pass condition)."""
    warmup_failures = (document.get('warmup') or {}).get('failures') or {}
    return (not document['interrupted']
            and not sum(warmup_failures.values())
            and all(document['summary'][kind]['rounds']
                    and document['summary'][kind]['passed']
                    for kind in ('plain', 'rich')))


def format_comparison(document):
    """The text of a comparison: each round's report, then the table of
    the rounds and the ratio."""
    lines = []
    for index, entry in enumerate(document['rounds'], 1):
        lines.append('=== Round %d: %s request ===' % (index,
                                                       entry['request']))
        lines.append(format_run(entry['result']))
        lines.append('')
    fleet_text = ', '.join('%s %d' % (g['label'], g['count'])
                           for g in document['fleet'])
    lines.append('Plain and rich requests on one fleet (%s; %d match the '
                 'rich request)' % (fleet_text, document['matching_nodes']))
    request = document['rich_request']
    warmup = document.get('warmup') or {}
    if warmup.get('allocations'):
        lines.append('  warm-up, not measured: %d allocations of each '
                     'request (%s failed)' % (
                         warmup['allocations'],
                         sum((warmup.get('failures') or {}).values())))
    lines.append('  rich: traits %s, match %s, extension ironic-alloc %s' % (
        ','.join(request['traits']),
        ', '.join('%s >= %s' % item for item in
                  sorted(request['match'].items())),
        request['extension']))
    rows = []
    for index, entry in enumerate(document['rounds'], 1):
        result = entry['result']
        usage = machine_cpu_usage(result)
        rows.append([
            index, entry['request'],
            _num(result['allocations']['active_per_second'], '%.1f'),
            _ms(result['latency']['post']['p50']),
            _ms(result['latency']['post']['p99']),
            _ms(result['latency']['post_to_active']['p50']),
            _ms(result['latency']['post_to_active']['p99']),
            sum(result['errors'].values()), result['allocations']['stuck'],
            _num(usage['ms_per_allocation'] if usage else None, '%.1f'),
            'ok' if passed(result) else 'FAIL'])
    lines += _table(
        ['round', 'request', 'alloc/s', 'POST p50 ms', 'POST p99 ms',
         '->active p50 ms', '->active p99 ms', 'errors', 'stuck',
         'CPU ms/alloc', 'result'], rows)
    lines.append('')
    for kind in ('plain', 'rich'):
        kind_summary = document['summary'][kind]
        lines.append(
            '%-5s %s allocations/s to active (%d of %d active in %d '
            'rounds, %s s of allocate phases), %d errors, %d stuck' % (
                kind, _num(kind_summary['active_per_second'], '%.1f'),
                kind_summary['active'], kind_summary['requested'],
                kind_summary['rounds'],
                _num(kind_summary['allocate_seconds'], '%.1f'),
                kind_summary['errors'], kind_summary['stuck']))
    lines.append('rich/plain: %s (pairs: %s; target >= %g)' % (
        _num(document['ratio']),
        ', '.join(_num(r) for r in document['pair_ratios']) or '-',
        document['target_ratio']))
    lines.append('Result: %s' % (
        'PASS (every round of both requests passed)'
        if comparison_passed(document)
        else 'FAIL (see the rounds above)'))
    return '\n'.join(lines)


def format_profile(profile):
    """The text of a profile.summarize() document (or why it is absent)."""
    if not profile.get('samples'):
        return ['Profile: %s' % (profile.get('note') or 'no samples')]
    lines = ['Profile of the service during the allocate phase: %d samples '
             'of active threads (py-spy, %s Hz)' % (profile['samples'],
                                                    profile.get('rate'))]
    rows = [[a['area'], a['samples'], '%.1f%%' % a['percent']]
            for a in profile['areas']]
    lines += _table(['innermost area', 'samples', 'share'], rows)
    lines.append('')
    rows = [[a['area'], a['samples'], '%.1f%%' % a['percent']]
            for a in profile['inclusive']]
    lines += _table(['on the stack', 'samples', 'share'], rows)
    lines.append('')
    rows = [[f['function'], f['area'], f['samples'],
             '%.1f%%' % f['percent']] for f in profile['functions']]
    lines += _table(['top functions (self)', 'area', 'samples', 'share'],
                    rows)
    if profile.get('note'):
        lines.append(profile['note'])
    return lines


def format_sweep(rows):
    """The scaling table of a sweep.

    :param rows: dicts with nodes, load_seconds, result (a run document)
        and rss_mib (dict: loaded, after, peak).
    """
    if not rows:
        return 'Sweep: no results'
    base = rows[0]['result']['allocations']['seconds_per_allocation']
    base_p50 = rows[0]['result']['latency']['post_to_active']['p50']
    table = []
    for row in rows:
        result = row['result']
        alloc = result['allocations']
        p50 = result['latency']['post_to_active']['p50']
        rss = row.get('rss_mib') or {}
        table.append([
            row['nodes'], _num(row.get('load_seconds'), '%.1f'),
            _num(alloc['active_per_second'], '%.1f'),
            _num(alloc['seconds_per_allocation'], '%.4f'),
            _num(stats.ratio(alloc['seconds_per_allocation'], base)),
            _ms(p50), _num(stats.ratio(p50, base_p50)),
            _num(rss.get('loaded'), '%.0f'), _num(rss.get('after'), '%.0f'),
            _num(rss.get('peak'), '%.0f'),
            sum(result['errors'].values()), alloc['stuck'],
            'ok' if all(c['ok'] for c in result['checks']) else 'FAIL'])
    header = ['nodes', 'load s', 'alloc/s', 's/alloc', 'ratio',
              'p50 ->active ms', 'ratio', 'RSS loaded MiB',
              'RSS after MiB', 'RSS peak MiB', 'errors', 'stuck',
              'checks']
    backends = sorted({row.get('backend') or 'database' for row in rows})
    syncs = [(row['result'].get('setup_seconds') or {}).get(
        'placement_sync') for row in rows]
    if any(v is not None for v in syncs):
        # NOTE: set-up, before the allocate phase: not part of the
        # allocation figures.
        header.insert(2, 'placement sync s')
        for cells, seconds in zip(table, syncs):
            cells.insert(2, _num(seconds, '%.1f'))
    per_allocation = [placement_requests_per_allocation(row['result'])
                      for row in rows]
    if any(v is not None for v in per_allocation):
        header.append('Placement req/alloc')
        for cells, value in zip(table, per_allocation):
            cells.append(_num(value))
    lines = ['Cost per allocation by fleet size, backend %s (ratios to %d '
             'nodes)' % (', '.join(backends), rows[0]['nodes'])]
    lines += _table(header, table)
    if any(v is not None for v in syncs):
        lines.append('placement sync s: set-up (loaded nodes until '
                     'Placement offers them all), not in the allocation '
                     'figures')
    return '\n'.join(lines)


def format_floor(document):
    """The text of a floor measurement (see floor.floor_document)."""
    labels = sorted({label for part in document['parts']
                     for label in part['groups']})
    header = (['part', 'count', 'this process ms', 'server process ms']
              + ['%s ms' % label for label in labels])
    rows = []
    notes = []
    for part in document['parts']:
        if part['note']:
            notes.append('%s: %s' % (part['title'], part['note']))
            continue
        rows.append([part['title'], part['count'],
                     _num(_scaled(part['caller']), '%.3f'),
                     _num(_scaled(part['server']), '%.3f')]
                    + [_num(_scaled(part['groups'].get(label)), '%.3f')
                       for label in labels])
    lines = ['CPU per operation, each part alone (%s)' % document['machine']]
    lines += _table(header, rows)
    lines += notes
    lines += ['', 'Floor of one allocation (the fewest parts it crosses):']
    for term in document['allocation']['terms']:
        lines.append('  %d x %-58s %s ms' % (
            term['times'], term['part'], _num(_scaled(term['seconds']),
                                              '%.3f')))
    floor_ms = document['allocation']['seconds'] * 1000
    cpus = document['cpus']
    lines.append('  = %.2f ms of CPU: at most %.0f allocations/s on %d '
                 'CPUs doing nothing else' % (
                     floor_ms, 1000.0 * cpus / floor_ms if floor_ms else 0,
                     cpus))
    return '\n'.join(lines)


def format_explain(result):
    """The text of an explain run (see explain.run)."""
    header = ['request', 'count', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms']

    def row(name, summary):
        return [name, summary['count']] + [
            _num(_scaled(summary[key]), '%.1f')
            for key in ('p50', 'p90', 'p99', 'max')]

    rows = [row(name, summary)
            for name, summary in sorted(result['by_request'].items())]
    rows.append(row('all', result['latency']))
    lines = ['POST /v1/allocations/explain: %d nodes, %d clients, %d '
             'requests in %.1f s (%s per second)' % (
                 result['nodes'], result['concurrency'], result['requests'],
                 result['seconds'],
                 _num(result['per_second'], '%.1f'))]
    if result.get('fold_seconds') is not None:
        lines.append('the load\'s tally changes were folded %.1f s after '
                     'it ended' % result['fold_seconds'])
    lines += _table(header, rows)
    p99 = result['latency']['p99']
    target = result['target_p99']
    lines.append('p99 %s ms: target <= %.0f ms %s' % (
        _num(_scaled(p99), '%.1f'), target * 1000,
        'met' if p99 is not None and p99 <= target else 'NOT met'))
    for name, funnels in sorted(result['funnels'].items()):
        for nodes, matching, steps in funnels:
            lines.append('%s: %s of %s nodes match; removed: %s' % (
                name, matching, nodes, ', '.join(
                    '%s %s' % (step, removed) for step, removed in steps
                    if removed)))
    if result['problems']:
        lines.append('PROBLEMS (%d):' % len(result['problems']))
        lines += ['  ' + p for p in result['problems'][:20]]
    else:
        lines.append('every answer consistent; no allocation written')
    return '\n'.join(lines)


def format_reservations(result):
    """The text of a reservations run (see reservations.run)."""
    header = ['request', 'count', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms']

    def row(name, summary):
        return [name, summary['count']] + [
            _num(_scaled(summary[key]), '%.1f')
            for key in ('p50', 'p90', 'p99', 'max')]

    lines = ['POST /v1/reservations (first free of %d random nodes), then '
             'DELETE: %d nodes, %d clients, %d reservation requests in '
             '%.1f s: %d created (%s per second), %d refused (409)' % (
                 result['choose'], result['nodes'], result['concurrency'],
                 result['requests'], result['seconds'], result['created'],
                 _num(result['per_second'], '%.1f'), result['refused'])]
    lines += _table(header, [row('POST', result['post_latency']),
                             row('DELETE', result['delete_latency'])])
    p99 = result['post_latency']['p99']
    rate = result['per_second']
    lines.append('POST p99 %s ms: target <= %.0f ms %s; %s reservations '
                 'per second: target >= %d %s' % (
                     _num(_scaled(p99), '%.1f'),
                     result['target_p99'] * 1000,
                     'met' if p99 is not None
                     and p99 <= result['target_p99'] else 'NOT met',
                     _num(rate, '%.1f'), result['target_per_second'],
                     'met' if rate is not None
                     and rate >= result['target_per_second']
                     else 'NOT met'))
    if result['problems']:
        lines.append('PROBLEMS (%d):' % len(result['problems']))
        lines += ['  ' + p for p in result['problems'][:20]]
    else:
        lines.append('every answer checked: no node held twice, every 409 '
                     'with one reason per node, nothing left held')
    return '\n'.join(lines)


def _scaled(seconds):
    return None if seconds is None else seconds * 1000


def write_json(path, document):
    with open(path, 'w') as f:
        json.dump(document, f, indent=2, sort_keys=True, default=str)
        f.write('\n')
