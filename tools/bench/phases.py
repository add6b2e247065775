"""The measured phases: enroll, allocate, delete.

Each phase hands its items to ``concurrency`` worker threads, each with its
own keep-alive ApiClient. Every wait is bounded: an allocation still not
``active`` or ``error`` after ``timeout`` seconds is recorded as stuck, and
a stop event (set on Ctrl-C) ends every loop within one poll interval or
one request timeout.
"""

import collections
import dataclasses
import sys
import threading
import time

from tools.bench import client as api_client
from tools.bench import progress as progress_mod

TERMINAL_STATES = ('active', 'error')
DRIVER = 'fake-hardware'


@dataclasses.dataclass
class Settings:
    """What every phase needs to know."""

    endpoint: str
    concurrency: int = 20
    resource_class: str = 'bench'
    traits: tuple = ()
    poll_interval: float = 0.05
    timeout: float = 60.0
    token: str = None
    request_timeout: float = 30.0
    show_progress: bool = True
    # The ``match`` object of every allocation (ironic_alloc's extension
    # "matching"), or None.
    match: dict = None
    # The ironic_alloc extension version every request asks for, or None.
    extension: str = None

    def client(self):
        extra_headers = None
        if self.extension:
            extra_headers = {api_client.EXTENSION_HEADER: '%s %s' % (
                api_client.EXTENSION_TOKEN, self.extension)}
        return api_client.ApiClient(self.endpoint, token=self.token,
                                    timeout=self.request_timeout,
                                    extra_headers=extra_headers)

    def progress(self, label, total):
        return progress_mod.Progress(label, total,
                                     enabled=self.show_progress)


@dataclasses.dataclass
class AllocationRecord:
    """What one allocation request went through, as the client saw it."""

    index: int
    uuid: str = None
    post_seconds: float = None
    post_error: str = None
    state: str = None
    node_uuid: str = None
    last_error: str = None
    # From sending the POST to the first poll that saw active or error.
    to_terminal_seconds: float = None
    polls: int = 0
    poll_errors: list = dataclasses.field(default_factory=list)
    stuck: bool = False
    vanished: bool = False
    delete_seconds: float = None
    delete_error: str = None

    @property
    def outcome(self):
        """not_sent, post_failed, active, error, stuck, vanished or
        unfinished (interrupted while allocating)."""
        if self.uuid is None:
            return 'post_failed' if self.post_error else 'not_sent'
        if self.vanished:
            return 'vanished'
        if self.state in TERMINAL_STATES:
            return self.state
        return 'stuck' if self.stuck else 'unfinished'

    def error_kind(self, timeout):
        """The kind of failure of this allocation, or None when active."""
        outcome = self.outcome
        if outcome == 'post_failed':
            return self.post_error
        if outcome == 'error':
            return api_client.state_error_kind(self.last_error)
        if outcome == 'stuck':
            return 'stuck: still %s after %gs' % (self.state, timeout)
        if outcome == 'vanished':
            return 'vanished: HTTP 404 while polling'
        return None

    def observe(self, document):
        """Take state, node and last_error from an allocation document."""
        if not isinstance(document, dict):
            return
        self.state = document.get('state', self.state)
        self.node_uuid = document.get('node_uuid')
        self.last_error = document.get('last_error')


@dataclasses.dataclass
class PhaseResult:
    name: str
    seconds: float
    items: int
    interrupted: bool = False
    errors: collections.Counter = dataclasses.field(
        default_factory=collections.Counter)


class _Queue:
    """Hands out items to worker threads, each at most once."""

    def __init__(self, items):
        self._items = iter(items)
        self._lock = threading.Lock()

    def next(self):
        with self._lock:
            return next(self._items, None)


def run_workers(count, work, stop, grace):
    """Run ``work(worker_index)`` in ``count`` threads and wait for them.

    Ctrl-C sets ``stop`` and waits at most ``grace`` seconds for the
    workers to notice; a second Ctrl-C is not caught.

    :returns: True when the phase was interrupted.
    """
    crashes = []

    def guarded(index):
        try:
            work(index)
        except Exception as exc:  # a bug: report it, stop the others
            crashes.append(exc)
            stop.set()

    threads = [threading.Thread(target=guarded, args=(i,), daemon=True,
                                name='bench-worker-%d' % i)
               for i in range(count)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)
    except KeyboardInterrupt:
        stop.set()
        print('\nInterrupted: waiting up to %ds for requests in flight '
              '(Ctrl-C again to abort)' % grace, file=sys.stderr)
        deadline = time.monotonic() + grace
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return True
    if crashes:
        raise crashes[0]
    return stop.is_set()


def _each(settings, items, stop, handle, label):
    """Run ``handle(client, item)`` for every item with the worker pool.

    :returns: (seconds, items handled, interrupted).
    """
    queue = _Queue(items)
    bar = settings.progress(label, len(items))

    def work(_index):
        client = settings.client()
        try:
            while not stop.is_set():
                item = queue.next()
                if item is None:
                    return
                handle(client, item)
                bar.advance()
        finally:
            client.close()

    start = time.perf_counter()
    interrupted = run_workers(min(settings.concurrency, max(1, len(items))),
                              work, stop, settings.request_timeout + 1)
    seconds = time.perf_counter() - start
    bar.finish('(interrupted)' if interrupted else '')
    return seconds, bar.done, interrupted


# Enroll through the API


def _wait_provision_state(settings, client, node_uuid, wanted, stop):
    """Poll a node until its provision_state is ``wanted``.

    :returns: None on success, else an error kind.
    """
    deadline = time.monotonic() + settings.timeout
    while not stop.is_set():
        result, _ = client.timed('GET', '/v1/nodes/%s' % node_uuid,
                                 params={'fields': 'provision_state,'
                                         'target_provision_state,'
                                         'last_error'})
        if not isinstance(result, api_client.Response) or not result.ok:
            return api_client.error_kind(result)
        node = result.json or {}
        if node.get('provision_state') == wanted:
            return None
        if (node.get('target_provision_state') is None
                and node.get('last_error')):
            return 'enroll %s failed: %s' % (wanted,
                                             api_client.normalize_message(
                                                 node['last_error']))
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return 'enroll: node still %s after %gs' % (
                node.get('provision_state'), settings.timeout)
        stop.wait(min(settings.poll_interval, remaining))
    return 'interrupted'


def _enroll_one(settings, client, name, stop):
    """Create one node and bring it to available.

    :returns: (node uuid or None, error kind or None).
    """
    result, _ = client.timed('POST', '/v1/nodes', {
        'driver': DRIVER, 'name': name,
        'resource_class': settings.resource_class})
    if not isinstance(result, api_client.Response) or result.status != 201:
        return None, api_client.error_kind(result)
    node_uuid = (result.json or {}).get('uuid')
    if settings.traits:
        result, _ = client.timed('PUT', '/v1/nodes/%s/traits' % node_uuid,
                                 {'traits': list(settings.traits)})
        if not isinstance(result, api_client.Response) or not result.ok:
            return node_uuid, api_client.error_kind(result)
    for verb, wanted in (('manage', 'manageable'),
                         ('provide', 'available')):
        result, _ = client.timed(
            'PUT', '/v1/nodes/%s/states/provision' % node_uuid,
            {'target': verb})
        if not isinstance(result, api_client.Response) or not result.ok:
            return node_uuid, api_client.error_kind(result)
        error = _wait_provision_state(settings, client, node_uuid, wanted,
                                      stop)
        if error:
            return node_uuid, error
    return node_uuid, None


def enroll_api(settings, count, name_prefix, stop):
    """Create ``count`` fake-hardware nodes and make them available.

    :returns: (PhaseResult, uuids of the nodes created, including those
        that failed to become available).
    """
    created = []
    errors = collections.Counter()
    lock = threading.Lock()

    def handle(client, index):
        node_uuid, error = _enroll_one(
            settings, client, '%s-%06d' % (name_prefix, index), stop)
        with lock:
            if node_uuid:
                created.append(node_uuid)
            if error and error != 'interrupted':
                errors[error] += 1

    seconds, done, interrupted = _each(settings, range(count), stop, handle,
                                       'enroll')
    return (PhaseResult('enroll', seconds, done, interrupted, errors),
            created)


def delete_nodes_api(settings, node_uuids, stop):
    """Delete nodes through the API (clean-up, not measured).

    :returns: PhaseResult.
    """
    errors = collections.Counter()
    lock = threading.Lock()

    def handle(client, node_uuid):
        result, _ = client.timed('DELETE', '/v1/nodes/%s' % node_uuid)
        if not isinstance(result, api_client.Response) or not result.ok:
            with lock:
                errors[api_client.error_kind(result)] += 1

    seconds, done, interrupted = _each(settings, list(node_uuids), stop,
                                       handle, 'cleanup')
    return PhaseResult('cleanup', seconds, done, interrupted, errors)


# Allocate


def _allocate_one(settings, client, record, stop):
    body = {'resource_class': settings.resource_class}
    if settings.traits:
        body['traits'] = list(settings.traits)
    if settings.match:
        body['match'] = dict(settings.match)
    start = time.perf_counter()
    result, record.post_seconds = client.timed('POST', '/v1/allocations',
                                               body)
    if not isinstance(result, api_client.Response) or result.status != 201:
        record.post_error = api_client.error_kind(result)
        return
    document = result.json or {}
    if not document.get('uuid'):
        record.post_error = 'HTTP 201 without an allocation uuid'
        return
    record.uuid = document['uuid']
    record.observe(document)
    deadline = start + settings.timeout
    path = '/v1/allocations/%s' % record.uuid
    while record.state not in TERMINAL_STATES and not stop.is_set():
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            record.stuck = True
            return
        if stop.wait(min(settings.poll_interval, remaining)):
            return
        result, _ = client.timed('GET', path)
        record.polls += 1
        if isinstance(result, api_client.Response) and result.status == 200:
            record.observe(result.json)
        elif (isinstance(result, api_client.Response)
                and result.status == 404):
            record.vanished = True
            return
        else:
            record.poll_errors.append(api_client.error_kind(result))
    if record.state in TERMINAL_STATES:
        record.to_terminal_seconds = time.perf_counter() - start


def allocate(settings, count, stop):
    """POST ``count`` allocations and poll each until it is terminal.

    :returns: (PhaseResult, list of AllocationRecord).
    """
    records = [AllocationRecord(index=i) for i in range(count)]
    seconds, done, interrupted = _each(
        settings, records, stop,
        lambda client, record: _allocate_one(settings, client, record, stop),
        'allocate')
    errors = collections.Counter(
        kind for kind in (r.error_kind(settings.timeout) for r in records)
        if kind)
    return PhaseResult('allocate', seconds, done, interrupted,
                       errors), records


# Delete


def _delete_one(client, record):
    result, record.delete_seconds = client.timed(
        'DELETE', '/v1/allocations/%s' % record.uuid)
    if not isinstance(result, api_client.Response) or result.status != 204:
        record.delete_error = api_client.error_kind(result)


def delete(settings, records, stop):
    """DELETE every allocation that was created.

    :returns: PhaseResult.
    """
    created = [r for r in records if r.uuid]
    seconds, done, interrupted = _each(
        settings, created, stop, lambda client, r: _delete_one(client, r),
        'delete')
    errors = collections.Counter(r.delete_error for r in created
                                 if r.delete_error)
    return PhaseResult('delete', seconds, done, interrupted, errors)
