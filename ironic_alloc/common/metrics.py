"""Every Prometheus metric of ironic_alloc, and how they are exposed.

The metrics are prometheus-client objects, made once per process on first
use; the rest of the code records through the functions here, which never
raise: a metric that cannot be recorded is logged, the work goes on.

Two kinds of processes:

* one process (a conductor, the all-in-one ``ironic-alloc``): the metrics
  live in memory, and a scrape reads them there;
* the worker processes of ``ironic-alloc-api`` (or of another WSGI server
  that sets ``PROMETHEUS_MULTIPROC_DIR``): prometheus-client's
  multiprocess mode, each worker writing its values to files of its own
  in one directory, and a scrape answered by any worker sums them.
  prometheus-client chooses the mode when it is first imported, so it is
  imported here on first use, after ``prepare_multiprocess()``.

Values read at scrape time (allocations by state, the conductor's worker
pool) are collectors called by the scrape itself.
"""

import datetime
import glob
import os
import re
import sys
import threading

from oslo_log import log

from ironic_alloc.common import states

LOG = log.getLogger(__name__)

MULTIPROCESS_ENV = 'PROMETHEUS_MULTIPROC_DIR'
PREFIX = 'ironic_alloc_'
CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

# Why an allocation failed, as the label of allocation_failures: the
# conductor's failure paths, never the text of the error.
FAILURE_NO_CANDIDATE = 'no_candidate'
FAILURE_BACKEND = 'backend_failed'
FAILURE_REASONS = (FAILURE_NO_CANDIDATE, FAILURE_BACKEND)

# Why an RPC from the API failed (rpc_failures' "reason").
RPC_TIMEOUT = 'timeout'
RPC_DELIVERY = 'delivery_failed'
RPC_BROKER = 'broker_unreachable'
RPC_REMOTE_DATABASE = 'remote_database'
RPC_REMOTE_ERROR = 'remote_error'
RPC_OTHER = 'other'

# Database conflicts the writers retry (db_retries' "reason").
DB_DEADLOCK = 'deadlock'
DB_LOCKED = 'database_locked'

# Why a notification was dropped (notifications_dropped' "reason"), as
# common/notifications.py names them.
NOTIFICATION_DROP_REASONS = ('queue_full', 'send_failed', 'stopping')

# Upper bounds, in seconds, of the POST-to-active histogram: from an
# allocation found while its request waits to one that waited for a
# re-drive or a take-over.
ALLOCATION_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                              30.0, 60.0, 120.0, 300.0, 600.0)

_lock = threading.Lock()
_metrics = None
_client = None
# Callable returning [(state, kind, count)] for the allocations table.
_allocation_counter = None
# {conductor host: callable returning (in use, queued, size)}
_worker_pools = {}


def _prometheus():
    """The prometheus_client package, imported on first use.

    NOTE: prometheus-client picks its in-memory or multiprocess values
    when it is imported, from the environment: importing it with the
    other modules would fix the mode before ironic-alloc-api has read
    its configuration.
    """
    global _client
    if _client is None:
        import prometheus_client
        from prometheus_client import core  # noqa: F401
        from prometheus_client import multiprocess  # noqa: F401
        # NOTE: the creation time of every series doubles the exposition
        # for a value Prometheus does not need.
        prometheus_client.disable_created_metrics()
        _client = prometheus_client
    return _client


def is_multiprocess():
    """Whether this process's values are the multiprocess mode's files."""
    return bool(os.environ.get(MULTIPROCESS_ENV))


def prepare_multiprocess(directory):
    """Use the multiprocess mode in this process and its children, the
    directory created and emptied of earlier runs' files.

    Called by ironic-alloc-api before it starts its workers.

    :raises: RuntimeError when metrics were already made in the other
        mode; OSError when the directory cannot be used.
    """
    global _metrics
    with _lock:
        # NOTE: a library importing prometheus-client counts too: the
        # mode is fixed by the import, whoever does it.
        imported = _client is not None or 'prometheus_client' in sys.modules
        if imported and not is_multiprocess():
            raise RuntimeError('prometheus-client was imported before the '
                               'multiprocess mode was chosen')
        os.makedirs(directory, exist_ok=True)
        for path in glob.glob(os.path.join(directory, '*.db')):
            os.remove(path)
        os.environ[MULTIPROCESS_ENV] = directory
        _metrics = None


class _Metrics:
    """The metric objects of one process."""

    def __init__(self):
        client = _prometheus()
        self.registry = client.CollectorRegistry()
        reg = self.registry
        self.api_requests = client.Counter(
            PREFIX + 'api_requests',
            'API requests answered, by method, route class (the resource '
            'of the path, never the path itself) and HTTP status.',
            ['method', 'route', 'status'], registry=reg)
        self.rpc_failures = client.Counter(
            PREFIX + 'rpc_failures',
            'RPC calls and casts from the API to a conductor that '
            'failed, by RPC method and reason (timeout, delivery_failed, '
            'broker_unreachable, remote_database, remote_error, other).',
            ['method', 'reason'], registry=reg)
        self.rpc_failovers = client.Counter(
            PREFIX + 'rpc_failovers',
            'RPC calls from the API, safe to repeat, that a conductor did '
            'not serve and that were sent to the next live conductor, by '
            'RPC method and reason (timeout: no sign of life in time, '
            'remote_database: it could not reach its database).',
            ['method', 'reason'], registry=reg)
        self.db_retries = client.Counter(
            PREFIX + 'db_retries',
            'Database transactions that hit a conflict their writer '
            'retries (deadlock, database_locked); the last one of a '
            'writer out of retries is counted too.',
            ['reason'], registry=reg)
        self.allocation_latency = client.Histogram(
            PREFIX + 'allocation_active_seconds',
            'Seconds from an allocation\'s creation (its row\'s created_at, '
            'by the API host\'s clock) to the conductor reserving its node '
            '(by the conductor\'s clock), observed by the conductor.',
            buckets=ALLOCATION_LATENCY_BUCKETS, registry=reg)
        self.allocation_failures = client.Counter(
            PREFIX + 'allocation_failures',
            'Allocations the conductor set to error, by reason '
            '(no_candidate, backend_failed).',
            ['reason'], registry=reg)
        self.takeovers = client.Counter(
            PREFIX + 'allocation_takeovers',
            'Allocations a conductor took over from a dead conductor.',
            registry=reg)
        self.redrives = client.Counter(
            PREFIX + 'allocation_redrives',
            'Allocations whose processing a conductor restarted from the '
            'database (its periodic re-drive of its allocating rows).',
            registry=reg)
        self.notifications_dropped = client.Counter(
            PREFIX + 'notifications_dropped',
            'Versioned notifications dropped, by reason: queue_full (the '
            'process\'s queue of notifications to send was full), '
            'send_failed (the notifier could not deliver it, e.g. the '
            'message broker is down), stopping (still queued when the '
            'process stopped).',
            ['reason'], registry=reg)
        for reason in FAILURE_REASONS:
            self.allocation_failures.labels(reason)
        for reason in NOTIFICATION_DROP_REASONS:
            self.notifications_dropped.labels(reason)
        for reason in (DB_DEADLOCK, DB_LOCKED):
            self.db_retries.labels(reason)


def _get():
    global _metrics
    metrics = _metrics
    if metrics is None:
        with _lock:
            if _metrics is None:
                _metrics = _Metrics()
            metrics = _metrics
    return metrics


def _recording(func):
    """Record a metric without ever raising to the caller."""
    def wrapper(*args, **kwargs):
        try:
            func(*args, **kwargs)
        except Exception:
            LOG.exception('Recording metric %s failed', func.__name__)
    wrapper.__name__ = func.__name__
    wrapper.__doc__ = func.__doc__
    return wrapper


@_recording
def api_request(method, route, status):
    """One API request answered with ``status`` (a number, as text)."""
    _get().api_requests.labels(method, route, status).inc()


@_recording
def rpc_failure(method, reason):
    _get().rpc_failures.labels(method, reason).inc()


@_recording
def rpc_failover(method, reason):
    """A repeatable call sent on to the next conductor (``reason``:
    RPC_TIMEOUT or RPC_REMOTE_DATABASE)."""
    _get().rpc_failovers.labels(method, reason).inc()


@_recording
def db_retry(reason):
    _get().db_retries.labels(reason).inc()


@_recording
def allocation_active(created_at):
    """An allocation created at ``created_at`` (UTC) became active now."""
    if created_at.tzinfo is not None:
        created_at = created_at.astimezone(
            datetime.timezone.utc).replace(tzinfo=None)
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    # NOTE: two hosts' clocks: a conductor slightly behind the API host
    # must not record a negative duration.
    seconds = max(0.0, (now - created_at).total_seconds())
    _get().allocation_latency.observe(seconds)


@_recording
def allocation_failed(reason):
    if reason not in FAILURE_REASONS:
        raise ValueError('Unknown allocation failure reason %s' % reason)
    _get().allocation_failures.labels(reason).inc()


@_recording
def allocation_taken_over():
    _get().takeovers.inc()


@_recording
def allocation_redriven():
    _get().redrives.inc()


@_recording
def notification_dropped(reason):
    if reason not in NOTIFICATION_DROP_REASONS:
        raise ValueError('Unknown notification drop reason %s' % reason)
    _get().notifications_dropped.labels(reason).inc()


def set_allocation_counter(counter):
    """Count the allocations table at scrape time with ``counter()``,
    which returns [(state, kind, count)]."""
    global _allocation_counter
    _allocation_counter = counter


def watch_worker_pool(host, usage):
    """Report a conductor's worker pool; ``usage()`` returns
    (in use, queued, size)."""
    with _lock:
        _worker_pools[host] = usage


def forget_worker_pool(host):
    with _lock:
        _worker_pools.pop(host, None)


class _ScrapeTimeCollector:
    """The values computed when a scrape asks: allocations by state (one
    query) and the worker pools of this process's conductors."""

    def collect(self):
        core = _prometheus().core
        counter = _allocation_counter
        if counter is not None:
            up = core.GaugeMetricFamily(
                PREFIX + 'allocation_count_up',
                '1 when this scrape could count the allocations in the '
                'database, 0 when the database did not answer.')
            try:
                rows = counter()
            except Exception as exc:
                LOG.warning('Metrics: counting allocations failed: %s', exc)
                up.add_metric([], 0)
                yield up
            else:
                by_state = core.GaugeMetricFamily(
                    PREFIX + 'allocations',
                    'Allocations and reservations in the database, by '
                    'state and kind, counted at scrape time (every API '
                    'and conductor reports the same value).',
                    labels=['state', 'kind'])
                # NOTE: every known state and kind is reported, zero
                # included, so that a series never vanishes when it empties.
                counts = dict.fromkeys(
                    ((state, kind) for state in states.ALLOCATION_STATES
                     for kind in (states.ALLOCATION_KIND,
                                  states.RESERVATION_KIND)), 0)
                for state, kind, count in rows:
                    counts[(state, kind)] = count
                for (state, kind), count in sorted(counts.items()):
                    by_state.add_metric([state, kind], count)
                up.add_metric([], 1)
                yield by_state
                yield up
        with _lock:
            pools = sorted(_worker_pools.items())
        if not pools:
            return
        families = [core.GaugeMetricFamily(
            PREFIX + 'conductor_workers_' + name, text,
            labels=['conductor']) for name, text in (
                ('in_use', 'Threads of the conductor\'s worker pool running '
                           'an allocation or a node action.'),
                ('queued', 'Work waiting for a thread of the conductor\'s '
                           'worker pool.'),
                ('size', 'Threads of the conductor\'s worker pool '
                         '([conductor]workers_pool_size).'))]
        for host, usage in pools:
            for family, value in zip(families, usage()):
                family.add_metric([host], value)
        yield from families


_SCRAPE_TIME = _ScrapeTimeCollector()


def _scrape_registry():
    client = _prometheus()
    registry = client.CollectorRegistry()
    if is_multiprocess():
        client.multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(_get().registry)
    registry.register(_SCRAPE_TIME)
    return registry


def exposition():
    """The metrics of this process (or of every worker, in multiprocess
    mode) in the Prometheus text format.

    :raises: nothing that a caller should turn into a server error is
        expected, but the API still catches everything around it.
    """
    # NOTE: the process's metrics exist before the first scrape, so that
    # their zero values are reported.
    _get()
    return _prometheus().generate_latest(_scrape_registry())


def start_exporter(host, port):
    """Serve this process's metrics over HTTP on ``host``:``port`` in a
    thread of their own.

    :returns: the server, for stop_exporter().
    :raises: OSError when the port cannot be bound.
    """
    _get()
    server, _thread = _prometheus().start_http_server(
        port, addr=host, registry=_scrape_registry())
    return server


def stop_exporter(server):
    server.shutdown()
    server.server_close()


_PID_FILE = re.compile(r'_(\d+)\.db$')


def _process_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def forget_dead_processes():
    """Tell the multiprocess mode which processes of the directory have
    gone (prometheus-client's mark_process_dead), so that their live
    gauges no longer count.

    A worker that stops cleanly marks itself (process_stopping()); one
    that was killed is found here, by its replacement.
    """
    directory = os.environ.get(MULTIPROCESS_ENV)
    if not directory:
        return
    try:
        pids = set()
        for path in glob.glob(os.path.join(directory, '*.db')):
            match = _PID_FILE.search(os.path.basename(path))
            if match:
                pids.add(int(match.group(1)))
        for pid in pids:
            if pid != os.getpid() and not _process_alive(pid):
                _prometheus().multiprocess.mark_process_dead(pid, directory)
    except Exception:
        LOG.exception('Metrics: forgetting dead processes failed')


def process_stopping():
    """This worker process stops: its live gauges stop counting."""
    directory = os.environ.get(MULTIPROCESS_ENV)
    if not directory:
        return
    try:
        _prometheus().multiprocess.mark_process_dead(os.getpid(), directory)
    except Exception:
        LOG.exception('Metrics: marking this process dead failed')


