"""The "reservations" workload: POST /v1/reservations, then DELETE.

A fleet of available nodes is bulk-loaded; ``concurrency`` clients, each
with its own keep-alive connection, then repeat: reserve the first free
node of a random list of ``choose`` nodes of the fleet (extension
"reservations"), and delete the reservation.  The latency of every POST
and DELETE is recorded.

Every answer is checked while the run goes on:

* a 201 names a node of the list asked for, and no other client holds
  that node at that moment (a node is dropped from the held set before
  its DELETE is sent, so a late DELETE never looks like a double hold);
* a 409 gives one reason per node asked for;
* a DELETE answers 204;
* anything else is a problem.

After the run no reservation may remain and no node of the fleet may
hold an instance or an allocation.
"""

import dataclasses
import json
import random
import threading
import time
import uuid

from tools.bench import bulk
from tools.bench import client as api_client
from tools.bench import phases
from tools.bench import stats

# The extension version of reservations (extension "reservations").
EXTENSION = '1.2'

TARGET_P99_SECONDS = 0.05
TARGET_PER_SECOND = 200


@dataclasses.dataclass
class Options:
    nodes: int
    requests: int
    choose: int = 5
    warmup: int = 20
    ttl: int = 600
    seed: int = 0
    db_url: str = None
    enroll: bool = True
    keep: bool = False


def reasons_of(document):
    """The per-node reasons of a 409 body (Ironic's error format, whose
    error object carries ``reasons``), or None."""
    if not isinstance(document, dict):
        return None
    inner = document.get('error_message')
    if isinstance(inner, str):
        try:
            inner = json.loads(inner)
        except ValueError:
            return None
    if not isinstance(inner, dict):
        return None
    return inner.get('reasons')


class HeldNodes:
    """The nodes the clients hold now, as their answers tell it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._held = {}

    def take(self, node_uuid, reservation_uuid):
        """Note a 201; a problem string when the node is already held."""
        with self._lock:
            other = self._held.get(node_uuid)
            if other is not None:
                return ('node %s reserved by %s while %s still holds it'
                        % (node_uuid, reservation_uuid, other))
            self._held[node_uuid] = reservation_uuid
            return None

    def drop(self, node_uuid):
        with self._lock:
            self._held.pop(node_uuid, None)


def check_created(document, asked):
    """The problems of a 201 body, and the (reservation, node) it holds."""
    reservation = (document or {}).get('reservation') or {}
    node_uuid = reservation.get('node_uuid')
    problems = []
    if node_uuid not in asked:
        problems.append('201 for node %s, not one of %s' % (node_uuid,
                                                            asked))
    if not reservation.get('uuid'):
        problems.append('201 without a reservation uuid')
    if not reservation.get('expires_at'):
        problems.append('201 without expires_at')
    return problems, reservation.get('uuid'), node_uuid


def check_refused(document, asked):
    reasons = reasons_of(document)
    if not isinstance(reasons, list) or [
            r.get('node_uuid') for r in reasons] != list(asked):
        return ['409 whose reasons %r are not one per node asked for, in '
                'order' % (reasons,)]
    return []


def reserve_and_release(settings, options, uuids, stop):
    """The measured phase.

    :returns: dict of latencies (post, delete), counts by outcome,
        problems and the elapsed seconds.
    """
    settings = dataclasses.replace(settings, extension=EXTENSION)
    lock = threading.Lock()
    counter = iter(range(options.warmup + options.requests))
    post_latencies = []
    delete_latencies = []
    outcomes = {'created': 0, 'refused': 0}
    problems = []
    started = []
    held = HeldNodes()
    bar = settings.progress('reserve', options.requests)

    def work(index):
        rng = random.Random('%s-%d' % (options.seed, index))
        client = settings.client()
        try:
            while not stop.is_set():
                with lock:
                    number = next(counter, None)
                    if number == options.warmup:
                        started.append(time.perf_counter())
                if number is None:
                    return
                measured = number >= options.warmup
                asked = rng.sample(uuids, options.choose)
                body = {'instance_uuid': str(uuid.UUID(
                            int=rng.getrandbits(128), version=4)),
                        'node_uuid': asked, 'ttl': options.ttl}
                result, seconds = client.timed('POST', '/v1/reservations',
                                               body)
                found, deleted = [], None
                if isinstance(result, api_client.ConnectionFailed):
                    found.append('POST: %s' % result.kind)
                elif result.status == 201:
                    found, reservation, node_uuid = check_created(
                        result.json, asked)
                    if reservation and node_uuid:
                        double = held.take(node_uuid, reservation)
                        if double:
                            found.append(double)
                        held.drop(node_uuid)
                        deleted = client.timed(
                            'DELETE', '/v1/reservations/%s' % reservation)
                elif result.status == 409:
                    found = check_refused(result.json, asked)
                else:
                    found.append('POST: HTTP %d %s' % (result.status,
                                                       result.faultstring))
                if deleted is not None:
                    answer, delete_seconds = deleted
                    if isinstance(answer, api_client.ConnectionFailed):
                        found.append('DELETE: %s' % answer.kind)
                    elif answer.status != 204:
                        found.append('DELETE: HTTP %d %s' % (
                            answer.status, answer.faultstring))
                with lock:
                    problems.extend(found)
                    if measured:
                        post_latencies.append(seconds)
                        if deleted is not None:
                            delete_latencies.append(deleted[1])
                        if getattr(result, 'status', None) == 201:
                            outcomes['created'] += 1
                        elif getattr(result, 'status', None) == 409:
                            outcomes['refused'] += 1
                        bar.advance()
        finally:
            client.close()

    interrupted = phases.run_workers(settings.concurrency, work, stop, 30)
    elapsed = time.perf_counter() - started[0] if started else 0.0
    bar.finish()
    return {'post': post_latencies, 'delete': delete_latencies,
            'outcomes': outcomes, 'problems': problems, 'seconds': elapsed,
            'interrupted': interrupted}


def leftovers(db_url, uuids):
    """Reservations left, and nodes of the fleet still holding something.

    :returns: a list of problem strings.
    """
    import sqlalchemy as sa

    from ironic_alloc.db.sqlalchemy import models

    nodes = models.Node.__table__
    allocations = models.Allocation.__table__
    engine = bulk._engine(db_url)
    problems = []
    try:
        with engine.connect() as conn:
            left = conn.execute(sa.select(sa.func.count()).where(
                allocations.c.kind == 'reservation')).scalar()
            if left:
                problems.append('%d reservations left after the run' % left)
            holding = 0
            for start in range(0, len(uuids), bulk.BATCH):
                holding += conn.execute(sa.select(sa.func.count()).where(
                    nodes.c.uuid.in_(uuids[start:start + bulk.BATCH]),
                    sa.or_(nodes.c.instance_uuid.isnot(None),
                           nodes.c.allocation_id.isnot(None)))).scalar()
            if holding:
                problems.append('%d nodes still hold an instance or an '
                                'allocation after the run' % holding)
    finally:
        engine.dispose()
    return problems


def run(settings, options, stop=None):
    """Load the fleet (unless ``options.enroll`` is false), measure, check
    what is left, and delete the fleet (unless ``options.keep``).

    :returns: the result document (see report.format_reservations).
    """
    stop = stop or threading.Event()
    uuids = []
    if options.enroll:
        uuids, _seconds = bulk.load_nodes(
            options.db_url, options.nodes, settings.resource_class,
            name_prefix='resv',
            progress=settings.progress('load', options.nodes), stop=stop)
    try:
        measured = reserve_and_release(settings, options, uuids, stop)
        measured['problems'].extend(leftovers(options.db_url, uuids))
    finally:
        if uuids and not options.keep:
            bulk.delete_nodes(options.db_url, uuids)
    outcomes = measured['outcomes']
    return {
        'nodes': len(uuids),
        'choose': options.choose,
        'concurrency': settings.concurrency,
        'requests': len(measured['post']),
        'created': outcomes['created'],
        'refused': outcomes['refused'],
        'seconds': measured['seconds'],
        'per_second': stats.rate(outcomes['created'], measured['seconds']),
        'post_latency': stats.summarize(measured['post']),
        'delete_latency': stats.summarize(measured['delete']),
        'problems': measured['problems'],
        'target_p99': TARGET_P99_SECONDS,
        'target_per_second': TARGET_PER_SECOND,
        'interrupted': measured['interrupted'],
    }
