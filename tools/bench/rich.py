"""The plain and the rich allocation request, compared in one run.

``run --compare-rich`` bulk-loads one fleet in which about half of the
nodes match the rich request (two required traits, a forbidden one, an
any-of group and a memory minimum, through ironic_alloc's extension
"matching"), while every other node fails exactly one of its constraints.
Then it measures plain requests (the resource class alone, which any node
satisfies) and rich ones in alternating rounds on that same fleet, each
round a whole ``run`` (allocate, checks, delete, checks), and reports the
allocations/s of each kind and their ratio.

The rounds go in pairs, plain then rich, then rich then plain, and so on,
so that a machine slowing down or speeding up during the run weighs on
both kinds alike.  Unmeasured allocations of both kinds come first, so
that the first round does not alone pay for a freshly started service
(its database connections and caches).
"""

import collections
import dataclasses
import statistics
import sys
import threading
import uuid

from tools.bench import checks as checks_mod
from tools.bench import client as api_client
from tools.bench import phases as phases_mod
from tools.bench import report
from tools.bench import runner
from tools.bench import stats

PLAIN = 'plain'
RICH = 'rich'

EXTENSION = api_client.MATCHING_EXTENSION
RICH_TRAITS = ('CUSTOM_A', 'CUSTOM_B', '!CUSTOM_GPU',
               'in:CUSTOM_RACK_1,CUSTOM_RACK_2')
MEMORY_MINIMUM = 65536
RICH_MATCH = {'memory_mb': MEMORY_MINIMUM}
TARGET_RATIO = 0.8

ENOUGH_MEMORY = 2 * MEMORY_MINIMUM
LOW_MEMORY = MEMORY_MINIMUM // 2

Group = collections.namedtuple('Group',
                               'label count traits memory_mb matches')
"""Nodes loaded alike: how many, their traits and memory, and whether
they match the rich request."""

# The groups that fail the rich request, each by one constraint only.
MISFITS = (
    ('no-required', ('CUSTOM_A', 'CUSTOM_RACK_1'), ENOUGH_MEMORY),
    ('forbidden', ('CUSTOM_A', 'CUSTOM_B', 'CUSTOM_GPU', 'CUSTOM_RACK_2'),
     ENOUGH_MEMORY),
    ('no-any-of', ('CUSTOM_A', 'CUSTOM_B', 'CUSTOM_RACK_3'), ENOUGH_MEMORY),
    ('low-memory', ('CUSTOM_A', 'CUSTOM_B', 'CUSTOM_RACK_1'), LOW_MEMORY),
)


def _split(total, parts):
    """``total`` in ``parts`` counts differing by one at most."""
    return [total // parts + (1 if i < total % parts else 0)
            for i in range(parts)]


def fleet(nodes):
    """The groups of a fleet of ``nodes`` nodes: the larger half matches
    the rich request (in both racks of its any-of group), the other half
    is shared by the MISFITS.

    :returns: list of Group (empty groups left out).
    """
    matching = nodes - nodes // 2
    rack_1, rack_2 = _split(matching, 2)
    groups = [
        Group('rack-1', rack_1, ('CUSTOM_A', 'CUSTOM_B', 'CUSTOM_RACK_1'),
              ENOUGH_MEMORY, True),
        Group('rack-2', rack_2, ('CUSTOM_A', 'CUSTOM_B', 'CUSTOM_RACK_2'),
              ENOUGH_MEMORY, True)]
    for (label, traits, memory), count in zip(
            MISFITS, _split(nodes - matching, len(MISFITS))):
        groups.append(Group(label, count, traits, memory, False))
    return [group for group in groups if group.count]


def matching_nodes(nodes):
    """How many nodes of a fleet of ``nodes`` match the rich request."""
    return sum(group.count for group in fleet(nodes) if group.matches)


def order(pairs):
    """The requests of ``pairs`` pairs of rounds, alternating which kind
    goes first: plain, rich, rich, plain, plain, rich..."""
    kinds = []
    for index in range(pairs):
        kinds += [PLAIN, RICH] if index % 2 == 0 else [RICH, PLAIN]
    return kinds


def settings_for(settings, kind):
    """The phases.Settings of a round of requests of ``kind``."""
    if kind == RICH:
        return dataclasses.replace(settings, traits=RICH_TRAITS,
                                   match=dict(RICH_MATCH),
                                   extension=EXTENSION)
    return dataclasses.replace(settings, traits=(), match=None,
                               extension=None)


def on_matching_nodes(records, matching):
    """The check of a rich round: every allocation that became active
    holds a node of the matching groups."""
    return checks_mod.named_check('rich allocations on matching nodes', [
        'allocation %s got node %s, which does not match' % (
            record.uuid, record.node_uuid)
        for record in records
        if record.outcome == 'active' and record.node_uuid not in matching])


def load_fleet(settings, db_url, groups, name_prefix, stop):
    """Bulk-load the groups (ironic_alloc's database only).  Ctrl-C
    sets ``stop`` and ends the load: the batch in flight is rolled back
    and the groups loaded before it are returned; earlier batches of the
    group in flight (one larger than bulk.BATCH) stay, named with
    ``name_prefix``.

    :returns: (uuids of every node loaded, set of those that match,
        seconds).
    """
    from tools.bench import bulk
    bar = settings.progress('load', sum(group.count for group in groups))
    loaded = []
    matching = set()
    seconds = 0.0
    try:
        for group in groups:
            if stop.is_set():
                break
            uuids, took = bulk.load_nodes(
                db_url, group.count, settings.resource_class, group.traits,
                name_prefix='%s-%s' % (name_prefix, group.label),
                progress=bar, stop=stop,
                properties={'memory_mb': group.memory_mb})
            loaded += uuids
            if group.matches:
                matching.update(uuids)
            seconds += took
    except KeyboardInterrupt:
        stop.set()
    finally:
        bar.finish('(bulk loader, not the API)')
    return loaded, matching, seconds


def warm_up(settings, count, stop):
    """``count`` unmeasured allocations of each kind, deleted at once.

    :returns: {kind: number of allocations that failed or were not
        deleted}.
    """
    failed = {}
    for kind in (PLAIN, RICH):
        kind_settings = dataclasses.replace(settings_for(settings, kind),
                                            show_progress=False)
        phase, records = phases_mod.allocate(kind_settings, count, stop)
        deleted = phases_mod.delete(kind_settings, records,
                                    threading.Event())
        failed[kind] = (sum(phase.errors.values())
                        + sum(deleted.errors.values()))
    return failed


def compare(settings, options, pairs, warmup=0):
    """Load the fleet, warm up, run the rounds of ``order(pairs)``,
    remove the fleet (unless ``options.keep``).

    :param options: runner.RunOptions; its ``nodes`` and ``db_url`` make
        the fleet, its ``allocations`` is the count of every round.
    :param warmup: unmeasured allocations of each kind before the rounds.
    :returns: the comparison document (see build_comparison).
    """
    groups = fleet(options.nodes)
    name_prefix = 'bench-%s' % uuid.uuid4().hex[:8]
    stop = threading.Event()
    rounds = []
    loaded = []
    matching = set()
    seconds = None
    warmup_failures = {}
    try:
        loaded, matching, seconds = load_fleet(
            settings, options.db_url, groups, name_prefix, stop)
        if warmup and not stop.is_set():
            print('Warming up: %d allocations of each request, not '
                  'measured' % warmup, file=sys.stderr, flush=True)
            warmup_failures = warm_up(settings, warmup, stop)
        for kind in order(pairs):
            if stop.is_set():
                break
            round_options = dataclasses.replace(options, enroll='none')
            if kind == RICH:
                round_options.extra_check = (
                    lambda records: on_matching_nodes(records, matching))
            result = runner.run(settings_for(settings, kind), round_options)
            result['settings'].update(request=kind, enroll=options.enroll)
            rounds.append({'request': kind, 'result': result})
            if result['interrupted']:
                stop.set()
    finally:
        if loaded and not options.keep:
            from tools.bench import bulk
            print('Removing the %d nodes of this run (--keep keeps them)'
                  % len(loaded), file=sys.stderr, flush=True)
            bulk.delete_nodes(options.db_url, loaded)
    document = build_comparison(groups, rounds, seconds,
                                interrupted=stop.is_set())
    document['warmup'] = {'allocations': warmup,
                          'failures': warmup_failures}
    return document


def _kind_summary(results):
    """Totals of the rounds of one kind: the rate is every active
    allocation over the summed wall time of the allocate phases."""
    active = sum(r['allocations']['active'] for r in results)
    seconds = sum(r['phases']['allocate']['seconds'] for r in results
                  if r['phases'].get('allocate'))
    return {
        'rounds': len(results),
        'requested': sum(r['allocations']['requested'] for r in results),
        'active': active,
        'allocate_seconds': seconds,
        'active_per_second': stats.rate(active, seconds),
        'round_rates': [r['allocations']['active_per_second']
                        for r in results],
        'post_to_active_p50': _median(
            r['latency']['post_to_active']['p50'] for r in results),
        'post_p99': _median(r['latency']['post']['p99'] for r in results),
        'errors': sum(sum(r['errors'].values()) for r in results),
        'stuck': sum(r['allocations']['stuck'] for r in results),
        'passed': all(report.passed(r) for r in results),
    }


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def pair_ratios(rounds):
    """rich/plain allocations/s of each complete pair of rounds."""
    ratios = []
    for first, second in zip(rounds[0::2], rounds[1::2]):
        rates = {r['request']: r['result']['allocations']['active_per_second']
                 for r in (first, second)}
        ratios.append(stats.ratio(rates.get(RICH), rates.get(PLAIN)))
    return ratios


def build_comparison(groups, rounds, load_seconds, interrupted=False):
    """The result document of ``run --compare-rich``.

    :param groups: the fleet (list of Group).
    :param rounds: list of {'request': kind, 'result': run document}.
    """
    summary = {kind: _kind_summary([r['result'] for r in rounds
                                    if r['request'] == kind])
               for kind in (PLAIN, RICH)}
    return {
        'fleet': [group._asdict() for group in groups],
        'matching_nodes': sum(g.count for g in groups if g.matches),
        'load_seconds': load_seconds,
        'rich_request': {'traits': list(RICH_TRAITS),
                         'match': dict(RICH_MATCH),
                         'extension': EXTENSION},
        'rounds': rounds,
        'summary': summary,
        'ratio': stats.ratio(summary[RICH]['active_per_second'],
                             summary[PLAIN]['active_per_second']),
        'pair_ratios': pair_ratios(rounds),
        'target_ratio': TARGET_RATIO,
        'interrupted': interrupted,
    }
