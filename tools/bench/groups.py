"""The "groups" workload: allocation groups (extension 1.3) end to end.

Two modes, each on a fleet of its own (bulk-loaded, resource class
``<resource class>-large`` and ``<resource class>-scarce``):

``large``
    One group of ``members`` new members on ``large_nodes`` nodes, from
    the POST until a GET first shows it ``active``, ``repeat`` times; the
    group is deleted between two runs.  Reports p50, p90 and max of that
    latency; every run must end active with every member on a node of its
    own.
``scarcity``
    ``clients`` clients, released together by a barrier, each create one
    group of ``group_size`` members on ``scarce_nodes`` nodes and wait for
    it to end; ``rounds`` times.  A round must end with exactly as many
    groups active as the fleet can hold (``scarce_nodes // group_size``,
    at most ``clients``) and all the others in error, every active group
    with every member on a node of its own, no node held by two groups,
    no member of a failed group holding a node, and the fleet's rows
    agreeing (as many nodes held as active members).  Every group is
    deleted at the end of its round.

Any broken rule is a problem; the command exits 1 when there is one.
"""

import dataclasses
import threading
import time
import uuid as uuid_mod

from tools.bench import bulk
from tools.bench import client as api_client
from tools.bench import stats

# The extension version of allocation groups.
EXTENSION = '1.3'
TARGET_P50_SECONDS = 1.0
MODES = ('large', 'scarcity')


@dataclasses.dataclass
class Options:
    modes: tuple = MODES
    large_nodes: int = 1000
    members: int = 50
    repeat: int = 10
    scarce_nodes: int = 100
    clients: int = 20
    group_size: int = 10
    rounds: int = 20
    poll_interval: float = 0.01
    timeout: float = 120.0
    db_url: str = None
    keep: bool = False


def _members(count, resource_class):
    return {str(uuid_mod.uuid4()): {'resource_class': resource_class}
            for _ in range(count)}


def check_group(group, size):
    """The problems of a finished group's document (GET answer)."""
    members = group.get('members') or []
    name = group.get('uuid')
    problems = []
    if len(members) != size:
        problems.append('group %s has %d members, not %d'
                        % (name, len(members), size))
    nodes = [m.get('node_uuid') for m in members]
    if group.get('state') == 'active':
        if {m.get('state') for m in members} != {'active'} or None in nodes:
            problems.append('active group %s has a member without a node: '
                            'a partial group' % name)
        if len(set(nodes)) != len(nodes):
            problems.append('active group %s holds a node twice' % name)
    elif group.get('state') == 'error':
        held = [n for n in nodes if n is not None]
        if held:
            problems.append('failed group %s holds %d nodes: a partial '
                            'group' % (name, len(held)))
        if not group.get('last_error'):
            problems.append('failed group %s without last_error' % name)
    else:
        problems.append('group %s ended %s' % (name, group.get('state')))
    return problems


def check_round(groups, size, nodes, clients):
    """The problems of a scarcity round: {group uuid: document}."""
    problems = []
    for group in groups.values():
        problems.extend(check_group(group, size))
    states = [g.get('state') for g in groups.values()]
    expected = min(clients, nodes // size)
    if states.count('active') != expected or \
            states.count('error') != clients - expected:
        problems.append('%d groups active and %d error, expected %d and %d'
                        % (states.count('active'), states.count('error'),
                           expected, clients - expected))
    owners = {}
    for group in groups.values():
        if group.get('state') != 'active':
            continue
        for member in group.get('members') or []:
            node = member.get('node_uuid')
            other = owners.setdefault(node, group.get('uuid'))
            if other != group.get('uuid'):
                problems.append('node %s held by groups %s and %s'
                                % (node, other, group.get('uuid')))
    return problems


class _Client:

    def __init__(self, settings, options):
        self.options = options
        self.api = api_client.ApiClient(
            settings.endpoint, token=settings.token,
            timeout=settings.request_timeout,
            extra_headers={api_client.EXTENSION_HEADER: '%s %s' % (
                api_client.EXTENSION_TOKEN, EXTENSION)})

    def close(self):
        self.api.close()

    def create(self, size, resource_class):
        """POST a group; (its uuid or None, problem or None, started)."""
        started = time.perf_counter()
        result = self.api.request('POST', '/v1/allocation_groups', {
            'members': _members(size, resource_class)})
        if result.status != 201:
            return None, 'POST: HTTP %d %s' % (result.status,
                                                result.faultstring), started
        return result.json['uuid'], None, started

    def wait(self, group_uuid, stop):
        """GET the group until it leaves allocating; (document or None,
        problem or None, the perf_counter of that GET's answer)."""
        deadline = time.monotonic() + self.options.timeout
        while not stop.is_set():
            result = self.api.request('GET', '/v1/allocation_groups/%s'
                                      % group_uuid)
            if result.status != 200:
                return None, 'GET: HTTP %d %s' % (
                    result.status, result.faultstring), None
            if result.json.get('state') != 'allocating':
                return result.json, None, time.perf_counter()
            if time.monotonic() > deadline:
                return None, 'group %s still allocating after %.0f s' % (
                    group_uuid, self.options.timeout), None
            time.sleep(self.options.poll_interval)
        return None, 'interrupted', None

    def delete(self, group_uuid):
        result = self.api.request('DELETE', '/v1/allocation_groups/%s'
                                  % group_uuid)
        if result.status != 204:
            return 'DELETE: HTTP %d %s' % (result.status, result.faultstring)
        return None


def held_nodes(db_url, uuids):
    """How many nodes of ``uuids`` hold an allocation or an instance."""
    import sqlalchemy as sa

    from ironic_alloc.db.sqlalchemy import models

    nodes = models.Node.__table__
    engine = bulk._engine(db_url)
    holding = 0
    try:
        with engine.connect() as conn:
            for start in range(0, len(uuids), bulk.BATCH):
                holding += conn.execute(sa.select(sa.func.count()).where(
                    nodes.c.uuid.in_(uuids[start:start + bulk.BATCH]),
                    sa.or_(nodes.c.instance_uuid.isnot(None),
                           nodes.c.allocation_id.isnot(None)))).scalar()
    finally:
        engine.dispose()
    return holding


def run_large(settings, options, stop):
    resource_class = settings.resource_class + '-large'
    uuids, _seconds = bulk.load_nodes(
        options.db_url, options.large_nodes, resource_class,
        name_prefix='groups-large',
        progress=settings.progress('load', options.large_nodes), stop=stop)
    latencies = []
    problems = []
    bar = settings.progress('large group', options.repeat)
    client = _Client(settings, options)
    try:
        for _ in range(options.repeat):
            if stop.is_set():
                break
            group_uuid, problem, started = client.create(options.members,
                                                         resource_class)
            if problem:
                problems.append(problem)
                continue
            group, problem, ended = client.wait(group_uuid, stop)
            if problem:
                problems.append(problem)
            else:
                problems.extend(check_group(group, options.members))
                if group['state'] != 'active':
                    problems.append('the large group %s failed: %s' % (
                        group_uuid, group.get('last_error')))
                else:
                    latencies.append(ended - started)
            problem = client.delete(group_uuid)
            if problem:
                problems.append(problem)
            bar.advance()
        left = held_nodes(options.db_url, uuids)
        if left:
            problems.append('%d nodes still held after the large groups '
                            'were deleted' % left)
    finally:
        client.close()
        bar.finish()
        if not options.keep:
            bulk.delete_nodes(options.db_url, uuids)
    return {'nodes': len(uuids), 'members': options.members,
            'runs': len(latencies),
            'latency': stats.summarize(latencies),
            'target_p50': TARGET_P50_SECONDS, 'problems': problems}


def _scarcity_round(settings, options, resource_class, uuids, stop):
    barrier = threading.Barrier(options.clients)
    lock = threading.Lock()
    groups, problems, created, latencies = {}, [], [], []

    def work(index):
        client = _Client(settings, options)
        try:
            try:
                barrier.wait(options.timeout)
            except threading.BrokenBarrierError:
                with lock:
                    problems.append('client %d: the barrier broke' % index)
                return
            group_uuid, problem, started = client.create(
                options.group_size, resource_class)
            if group_uuid:
                with lock:
                    created.append(group_uuid)
                group, problem, ended = client.wait(group_uuid, stop)
            with lock:
                if problem:
                    problems.append(problem)
                else:
                    groups[group_uuid] = group
                    latencies.append(ended - started)
        finally:
            client.close()

    threads = [threading.Thread(target=work, args=(i,), daemon=True)
               for i in range(options.clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    if not problems:
        problems.extend(check_round(groups, options.group_size,
                                    len(uuids), options.clients))
    active = sum(1 for g in groups.values() if g['state'] == 'active')
    held = held_nodes(options.db_url, uuids)
    if held != active * options.group_size:
        problems.append('%d nodes of the fleet held, but %d active groups '
                        'of %d' % (held, active, options.group_size))
    client = _Client(settings, options)
    try:
        for group_uuid in created:
            problem = client.delete(group_uuid)
            if problem:
                problems.append(problem)
    finally:
        client.close()
    left = held_nodes(options.db_url, uuids)
    if left:
        problems.append('%d nodes still held after the round\'s groups '
                        'were deleted' % left)
    return {'active': active,
            'error': sum(1 for g in groups.values()
                         if g['state'] == 'error'),
            'seconds': seconds, 'slowest': max(latencies, default=None),
            'problems': problems}


def run_scarcity(settings, options, stop):
    resource_class = settings.resource_class + '-scarce'
    uuids, _seconds = bulk.load_nodes(
        options.db_url, options.scarce_nodes, resource_class,
        name_prefix='groups-scarce',
        progress=settings.progress('load', options.scarce_nodes), stop=stop)
    rounds = []
    bar = settings.progress('scarcity round', options.rounds)
    try:
        for _ in range(options.rounds):
            if stop.is_set():
                break
            rounds.append(_scarcity_round(settings, options, resource_class,
                                          uuids, stop))
            bar.advance()
    finally:
        bar.finish()
        if not options.keep:
            bulk.delete_nodes(options.db_url, uuids)
    expected = min(options.clients, len(uuids) // options.group_size)
    return {'nodes': len(uuids), 'clients': options.clients,
            'group_size': options.group_size, 'rounds': rounds,
            'expected_active': expected,
            'active': sum(r['active'] for r in rounds),
            'error': sum(r['error'] for r in rounds),
            'round_seconds': stats.summarize(r['seconds'] for r in rounds),
            'problems': [p for r in rounds for p in r['problems']]}


def run(settings, options, stop=None):
    """Run the modes asked for; the result document (see format_groups)."""
    stop = stop or threading.Event()
    document = {'workload': 'groups', 'interrupted': False}
    if 'large' in options.modes:
        document['large'] = run_large(settings, options, stop)
    if 'scarcity' in options.modes and not stop.is_set():
        document['scarcity'] = run_scarcity(settings, options, stop)
    document['problems'] = [p for mode in MODES
                            for p in document.get(mode, {}).get(
                                'problems', [])]
    document['interrupted'] = stop.is_set()
    return document


def _ms(seconds):
    return '-' if seconds is None else '%.0f' % (seconds * 1000)


def format_groups(document):
    """The text of a groups run."""
    lines = []
    large = document.get('large')
    if large:
        latency = large['latency']
        p50 = latency['p50']
        lines.append(
            'one large group: %d members on %d nodes, %d runs; POST -> '
            'active p50 %s ms, p90 %s ms, max %s ms; p50 target <= %.0f ms '
            '%s' % (large['members'], large['nodes'], large['runs'],
                    _ms(p50), _ms(latency['p90']), _ms(latency['max']),
                    large['target_p50'] * 1000,
                    'met' if p50 is not None and p50 <= large['target_p50']
                    else 'NOT met'))
    scarcity = document.get('scarcity')
    if scarcity:
        lines.append(
            'scarcity: %d clients, one group of %d each, on %d nodes, '
            '%d rounds (expected per round: %d active, %d error)' % (
                scarcity['clients'], scarcity['group_size'],
                scarcity['nodes'], len(scarcity['rounds']),
                scarcity['expected_active'],
                scarcity['clients'] - scarcity['expected_active']))
        lines.append('  round  active  error  seconds  slowest group ms  '
                     'problems')
        for number, row in enumerate(scarcity['rounds'], 1):
            lines.append('  %5d  %6d  %5d  %7.2f  %16s  %8d' % (
                number, row['active'], row['error'], row['seconds'],
                _ms(row['slowest']), len(row['problems'])))
        lines.append('  total  %6d  %5d  round p50 %.2f s, max %.2f s' % (
            scarcity['active'], scarcity['error'],
            scarcity['round_seconds']['p50'] or 0,
            scarcity['round_seconds']['max'] or 0))
    if document['problems']:
        lines.append('PROBLEMS (%d):' % len(document['problems']))
        lines += ['  ' + p for p in document['problems'][:20]]
    else:
        lines.append('every group checked: all members held or none, no '
                     'node held twice, nothing left held')
    return '\n'.join(lines)
