"""The "explain" workload: concurrent POST /v1/allocations/explain.

A fleet that gives every step of the funnel something to remove (held,
in maintenance, without a power state, retired, owned by other projects,
in other conductor groups, lacking or having traits, small memory) is
bulk-loaded, its tally changes folded by the service's conductors and the
database vacuumed and analyzed (bulk.settle); ``concurrency`` clients,
each with its own keep-alive connection, then ask for the explanations of
a few requests in turn, from a plain one to one using every operator of
the matching language, and the latency of every answer is recorded.

Every answer is checked: status 200, its removals plus its matching nodes
equal its starting count, which is the fleet size, and every answer to
one request is the same (nothing changes the fleet during the run).  No
allocation may appear (an explanation writes nothing).
"""

import dataclasses
import threading
import time

import sqlalchemy as sa

from tools.bench import bulk
from tools.bench import client as api_client
from tools.bench import phases
from tools.bench import stats

# The fleet, in shares of the node count: (share, traits, properties).
# The kinds differ in what a request of REQUESTS can find in them.
KINDS = (
    (4, ['CUSTOM_NVME', 'CUSTOM_RACK_A'],
     {'memory_mb': 65536, 'cpus': 32, 'cpu_arch': 'x86_64',
      'capabilities': 'boot_mode:uefi'}),
    (2, ['CUSTOM_NVME', 'CUSTOM_RACK_B'],
     {'memory_mb': '131072', 'cpus': '64', 'cpu_arch': 'x86_64'}),
    (1, ['CUSTOM_NVME', 'CUSTOM_RACK_A', 'CUSTOM_GPU'],
     {'memory_mb': 262144, 'cpus': 64, 'cpu_arch': 'x86_64'}),
    (1, ['CUSTOM_RACK_C'],
     {'memory_mb': 16384, 'cpus': 8, 'cpu_arch': 'aarch64'}),
    (1, ['CUSTOM_NVME', 'CUSTOM_RACK_C'],
     {'memory_mb': 32768, 'cpus': 16, 'cpu_arch': 'x86_64'}),
    (1, [], {}),
)

# Every Nth node of the fleet (in load order) gets the state: the steps
# of the picking rule.  The rest is available; half of it owned by
# "bench-p1", half by "bench-p2", over two conductor groups.
STATES = (
    (2, {'provision_state': 'active', 'instance_uuid': None}),
    (29, {'maintenance': True}),
    (97, {'power_state': None}),
    (101, {'retired': True}),
)

# The requests asked in turn: name -> the body's fields beyond
# resource_class.
REQUESTS = (
    ('plain', {}),
    ('rich', {'traits': ['CUSTOM_NVME', 'CUSTOM_RACK_A', '!CUSTOM_GPU',
                         'in:CUSTOM_RACK_A,CUSTOM_RACK_B'],
              'match': {'memory_mb': 65536}}),
    ('every-operator', {
        'owner': 'bench-p1',
        'traits': ['CUSTOM_NVME', '!CUSTOM_GPU',
                   'in:CUSTOM_RACK_A,CUSTOM_RACK_C'],
        'match': {'memory_mb': 32768, 'cpus': 16,
                  'cpu_arch': 'x86_64',
                  'capabilities': {'boot_mode': 'uefi'},
                  'conductor_group': 'bench-a'}}),
)

TARGET_P99_SECONDS = 0.05


@dataclasses.dataclass
class Options:
    nodes: int
    requests: int
    examples: int = 10
    warmup: int = 20
    db_url: str = None
    enroll: bool = True
    keep: bool = False


def fleet_plan(count):
    """How many nodes of each kind of KINDS: shares of ``count``, the
    rounding left-over going to the first kind.

    :returns: list of (count, traits, properties).
    """
    total = sum(share for share, _t, _p in KINDS)
    counts = [count * share // total for share, _t, _p in KINDS]
    counts[0] += count - sum(counts)
    return [(n, traits, properties)
            for n, (_s, traits, properties) in zip(counts, KINDS)]


def state_changes(index):
    """The node fields of the ``index``-th node of the fleet (from 0):
    the first rule of STATES its position meets, an owner and a
    conductor group."""
    fields = {'owner': 'bench-p1' if index % 4 < 2 else 'bench-p2',
              'conductor_group': 'bench-a' if index % 3 else 'bench-b'}
    for every, changes in STATES:
        if index % every == every - 1:
            fields.update(changes)
            break
    return fields


def _shape_fleet(db_url, uuids):
    """Give the loaded nodes the fields of state_changes() (one UPDATE per
    distinct set of fields)."""

    from ironic_alloc.db.sqlalchemy import models

    nodes = models.Node.__table__
    by_fields = {}
    for index, node_uuid in enumerate(uuids):
        fields = state_changes(index)
        by_fields.setdefault(tuple(sorted(fields.items())), []).append(
            node_uuid)
    engine = bulk._engine(db_url)
    try:
        for fields, members in by_fields.items():
            values = dict(fields)
            if 'instance_uuid' in values:
                # NOTE: held by an instance (its uuid is unique).
                values['instance_uuid'] = nodes.c.uuid
            for start in range(0, len(members), bulk.BATCH):
                with engine.begin() as conn:
                    conn.execute(nodes.update().where(nodes.c.uuid.in_(
                        members[start:start + bulk.BATCH])).values(**values))
    finally:
        engine.dispose()


def load_fleet(settings, options, stop):
    """Bulk-load and shape the fleet.

    :returns: the node uuids, in load order.
    """
    uuids = []
    for number, (count, traits, properties) in enumerate(
            fleet_plan(options.nodes)):
        if not count or stop.is_set():
            continue
        loaded, _seconds = bulk.load_nodes(
            options.db_url, count, settings.resource_class, traits,
            name_prefix='explain-%d' % number,
            progress=settings.progress('load kind %d' % number, count),
            stop=stop, properties=properties)
        uuids.extend(loaded)
    _shape_fleet(options.db_url, uuids)
    return uuids


def wait_for_folds(db_url, stop, timeout=600, poll=0.5):
    """Wait until the conductors folded the tally changes the load wrote
    (a bulk load of N nodes writes about N of them; until they are
    folded, every explanation reads them).

    :returns: the seconds waited, or None when changes were left at the
        timeout.
    """
    from ironic_alloc.db.sqlalchemy import models

    changes = models.NODE_TALLY_CHANGES
    engine = bulk._engine(db_url)
    started = time.perf_counter()
    try:
        while not stop.is_set():
            with engine.connect() as conn:
                left = conn.execute(sa.select(changes.c.id).order_by(
                    changes.c.id).limit(1)).first()
            if left is None:
                return time.perf_counter() - started
            if time.perf_counter() - started > timeout:
                return None
            stop.wait(poll)
    finally:
        engine.dispose()
    return None


def body_of(settings, fields):
    return dict(fields, resource_class=settings.resource_class)


def check_answer(document, nodes):
    """The problems of one explanation (an empty list when it is sound).

    :param nodes: the node count the funnel must start from.
    """
    problems = []
    steps = document.get('steps') or []
    removed = sum(step.get('removed', 0) for step in steps)
    if document.get('nodes') != nodes:
        problems.append('starts from %s nodes, not %d'
                        % (document.get('nodes'), nodes))
    if removed + document.get('matching_nodes', -1) != document.get('nodes'):
        problems.append('removals %d plus matches %s differ from the start '
                        '%s' % (removed, document.get('matching_nodes'),
                                document.get('nodes')))
    return problems


def funnel_of(document):
    """What must be the same in every answer to one request."""
    return (document.get('nodes'), document.get('matching_nodes'),
            tuple((s.get('step'), s.get('removed'))
                  for s in document.get('steps') or []))


def ask(settings, options, nodes, stop):
    """The measured phase: ``options.requests`` explanations (after
    ``options.warmup`` unmeasured ones) by ``settings.concurrency``
    clients, REQUESTS in turn.

    :returns: dict of per-request latencies, problems, funnels and the
        elapsed seconds.
    """
    settings = dataclasses.replace(
        settings, extension=api_client.MATCHING_EXTENSION)
    lock = threading.Lock()
    counter = iter(range(options.warmup + options.requests))
    latencies = {name: [] for name, _f in REQUESTS}
    funnels = {name: set() for name, _f in REQUESTS}
    problems = []
    started = []
    bar = settings.progress('explain', options.requests)

    def work(_index):
        client = settings.client()
        try:
            while not stop.is_set():
                with lock:
                    number = next(counter, None)
                    if number == options.warmup:
                        started.append(time.perf_counter())
                if number is None:
                    return
                name, fields = REQUESTS[number % len(REQUESTS)]
                result, seconds = client.timed(
                    'POST', '/v1/allocations/explain',
                    body_of(settings, fields),
                    {'examples': options.examples})
                if isinstance(result, api_client.ConnectionFailed):
                    found = ['%s: %s' % (name, result.kind)]
                elif result.status != 200:
                    found = ['%s: HTTP %d %s' % (name, result.status,
                                                 result.faultstring)]
                else:
                    document = result.json or {}
                    found = ['%s: %s' % (name, p)
                             for p in check_answer(document, nodes)]
                with lock:
                    problems.extend(found)
                    if number >= options.warmup:
                        latencies[name].append(seconds)
                        bar.advance()
                    if not found:
                        funnels[name].add(funnel_of(document))
        finally:
            client.close()

    interrupted = phases.run_workers(settings.concurrency, work, stop, 30)
    elapsed = time.perf_counter() - started[0] if started else 0.0
    bar.finish()
    for name, seen in funnels.items():
        if len(seen) > 1:
            problems.append('%s: %d different funnels for one fleet'
                            % (name, len(seen)))
    return {'latencies': latencies, 'problems': problems,
            'funnels': {name: [list(f) for f in seen]
                        for name, seen in funnels.items()},
            'seconds': elapsed, 'interrupted': interrupted}


def _allocation_count(settings):
    client = settings.client()
    try:
        resp = client.request('GET', '/v1/allocations',
                              params={'limit': 1})
    finally:
        client.close()
    if resp.status != 200:
        return None
    return len((resp.json or {}).get('allocations', []))


def run(settings, options, stop=None):
    """Load the fleet (unless ``options.enroll`` is false), measure, and
    delete the fleet (unless ``options.keep``).

    :returns: the result document (see report.format_explain).
    """
    stop = stop or threading.Event()
    uuids = []
    folded = 0.0
    if options.enroll:
        uuids = load_fleet(settings, options, stop)
    try:
        if options.db_url:
            folded = wait_for_folds(options.db_url, stop)
            if uuids:
                bulk.settle(options.db_url)
        before = _allocation_count(settings)
        asked = ask(settings, options, len(uuids) or options.nodes, stop)
        after = _allocation_count(settings)
    finally:
        if uuids and not options.keep:
            bulk.delete_nodes(options.db_url, uuids)
    if before != 0 or after != 0:
        asked['problems'].append(
            'allocations before and after the run: %s and %s (expected none: '
            'an explanation writes nothing)' % (before, after))
    if folded is None:
        asked['problems'].append('tally changes were still unfolded 600 s '
                                 'after the load')
    every = [s for values in asked['latencies'].values() for s in values]
    return {
        'fold_seconds': folded,
        'nodes': len(uuids) or options.nodes,
        'concurrency': settings.concurrency,
        'requests': len(every),
        'seconds': asked['seconds'],
        'per_second': stats.rate(len(every), asked['seconds']),
        'latency': stats.summarize(every),
        'by_request': {name: stats.summarize(values)
                       for name, values in asked['latencies'].items()},
        'funnels': asked['funnels'],
        'problems': asked['problems'],
        'target_p99': TARGET_P99_SECONDS,
        'interrupted': asked['interrupted'],
    }
