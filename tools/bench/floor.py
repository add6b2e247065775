"""``floor``: the CPU cost of the parts an allocation crosses, alone.

Whatever the service does, an allocation made the way the benchmark makes
it (and the way metalsmith or openstacksdk make it) crosses these parts:

* two HTTP requests: the POST, which answers "allocating", and at least
  one poll; each costs the client its request and the API its HTTP
  server, middlewares, Pecan and WSME;
* one RPC cast to wake a conductor up: the API sends it, the message
  broker routes it, the conductor receives and dispatches it;
* database transactions: the POST's insert and the conductor's
  reservation, both committed durably, and the poll's read.

This measures each part with the service's own configuration, code and
libraries but without any allocation work, one at a time on a quiet
machine: the HTTP server with an empty application, the API answering
``GET /`` (which reads nothing), a cast to an endpoint that does nothing,
and one-row read and write transactions through the service's database
layer on a scratch table.  The sum is a lower bound of what one
allocation can cost on this machine with this stack: no change to the
service's own code goes below it.

It uses the service's configuration file (database and transport URL) but
neither its processes nor its tables: the cast goes to a topic of its own,
and the scratch table ``bench_floor_scratch`` is created and dropped.
"""

import dataclasses
import multiprocessing
import os
import threading
import time
import uuid

from tools.bench import client as api_client
from tools.bench import runner
from tools.bench import service as service_mod

SCRATCH_TABLE = 'bench_floor_scratch'
FLOOR_TOPIC = 'ironic_alloc.bench_floor'
READY_TIMEOUT = 60.0
# NOTE: the fewest parts one allocation can cross through this API (see
# the module docstring); the present service reads twice (the conductor
# reads the allocation before reserving).
ALLOCATION_PARTS = (('client', 2), ('http_api', 2), ('cast', 1),
                    ('read', 1), ('write', 2))


class FloorFailed(Exception):
    """A part could not be measured."""


@dataclasses.dataclass
class Part:
    """CPU seconds per operation of one measured part.

    ``caller`` is this process (the HTTP client, the RPC sender, the
    database client), ``server`` the process serving it (the API server,
    the RPC receiver; None for the database, whose server is a group),
    ``groups`` the --cpu-group processes (database server, broker).
    """
    name: str
    title: str
    count: int
    caller: float = None
    server: float = None
    groups: dict = dataclasses.field(default_factory=dict)
    note: str = None

    def total(self):
        return sum(v for v in [self.caller, self.server,
                               *self.groups.values()] if v is not None)


def _groups_before(cpu_groups):
    return runner._group_cpu(runner._group_pids(cpu_groups))


def _group_delta(cpu_groups, before, count):
    """{label: CPU seconds per operation} since ``before`` (the run
    command's accounting of --cpu-group)."""
    return {label: usage['seconds'] / count for label, usage in
            runner._group_usage(cpu_groups, before).items()}


def _empty_app(environ, start_response):
    start_response('200 OK', [('Content-Type', 'application/json'),
                              ('Content-Length', '2')])
    return [b'{}']


def _api_app():
    from ironic_alloc.api import app as app_mod
    return app_mod.setup_app()


def _serve(make_app, port):
    from ironic_alloc.common import wsgi_service
    api = wsgi_service.WSGIService(make_app, port=port)
    api.start()
    api.wait()


def _wait_for_http(client, process, deadline):
    while True:
        try:
            return client.request('GET', '/')
        except api_client.ConnectionFailed:
            if not process.is_alive():
                raise FloorFailed('the HTTP server process exited (code '
                                  '%s): see its log above'
                                  % process.exitcode)
            if time.monotonic() > deadline:
                raise FloorFailed('the HTTP server did not start')
            time.sleep(0.05)


def measure_http(name, title, make_app, count, warmup):
    """One HTTP server process (forked) serving ``make_app()``; this
    process sends ``GET /`` over one keep-alive connection."""
    port = service_mod.free_port()
    process = multiprocessing.get_context('fork').Process(
        target=_serve, args=(make_app, port), daemon=True)
    process.start()
    client = api_client.ApiClient('http://127.0.0.1:%d' % port)
    try:
        _wait_for_http(client, process, time.monotonic() + READY_TIMEOUT)
        for _ in range(warmup):
            client.request('GET', '/')
        server_before = service_mod.cpu_seconds(process.pid)
        caller_before = time.thread_time()
        for _ in range(count):
            response = client.request('GET', '/')
            if response.status != 200:
                raise FloorFailed('GET / answered %d' % response.status)
        caller = time.thread_time() - caller_before
        server = service_mod.cpu_seconds(process.pid) - server_before
    finally:
        client.close()
        process.terminate()
        process.join()
    return Part(name, title, count, caller=caller / count,
                server=server / count)


class _NoOpEndpoint:
    """Counts the casts it gets; does nothing else."""

    def __init__(self, messaging):
        self.target = messaging.Target(version='1.0')
        self.count = 0
        self._changed = threading.Condition()

    def nothing(self, context):
        with self._changed:
            self.count += 1
            self._changed.notify_all()

    def wait_for(self, count, timeout):
        with self._changed:
            return self._changed.wait_for(lambda: self.count >= count,
                                          timeout)


def _send_casts(server_name, total, warmup, go, report):
    """Forked before this process opened any transport; casts ``total``
    messages once ``go`` is set and reports the CPU of the last
    ``total - warmup``."""
    from ironic_alloc.common import context as ia_context
    from ironic_alloc.common import rpc
    import oslo_messaging as messaging
    try:
        go.wait()
        client = rpc.get_client(messaging.Target(topic=FLOOR_TOPIC,
                                                 version='1.0'))
        cctxt = client.prepare(server=server_name)
        context = ia_context.get_admin_context()
        for _ in range(warmup):
            cctxt.cast(context, 'nothing')
        before = time.process_time()
        for _ in range(total - warmup):
            cctxt.cast(context, 'nothing')
        report.send(('ok', time.process_time() - before))
    except Exception as exc:
        report.send(('error', '%s: %s' % (type(exc).__name__, exc)))
    finally:
        rpc.cleanup()


def measure_cast(count, warmup, cpu_groups, timeout):
    """Casts from a forked sender to an RPC server in this process."""
    from ironic_alloc.common import rpc
    import oslo_messaging as messaging
    forking = multiprocessing.get_context('fork')
    go = forking.Event()
    report_end, sender_end = forking.Pipe(duplex=False)
    server_name = 'floor-%s' % uuid.uuid4().hex[:12]
    total = warmup + count
    # NOTE: the sender forks before this process opens its transport, so
    # that no connection is shared across the fork.
    sender = forking.Process(target=_send_casts, daemon=True,
                             args=(server_name, total, warmup, go,
                                   sender_end))
    sender.start()
    endpoint = _NoOpEndpoint(messaging)
    server = rpc.get_server(
        messaging.Target(topic=FLOOR_TOPIC, server=server_name),
        [endpoint])
    server.start()
    try:
        groups_before = _groups_before(cpu_groups)
        go.set()
        if not endpoint.wait_for(warmup, timeout):
            raise FloorFailed('the warm-up casts did not arrive within '
                              '%g s' % timeout)
        receiver_before = _process_seconds()
        if not endpoint.wait_for(total, timeout):
            raise FloorFailed('%d of %d casts arrived within %g s'
                              % (endpoint.count, total, timeout))
        receiver = _process_seconds() - receiver_before
        groups = _group_delta(cpu_groups, groups_before, total)
        if not report_end.poll(timeout):
            raise FloorFailed('the sender did not report')
        status, value = report_end.recv()
        if status != 'ok':
            raise FloorFailed('the sender failed: %s' % value)
    finally:
        server.stop()
        server.wait()
        # NOTE: a sender still waiting for "go" would never end.
        sender.join(timeout if go.is_set() else 0)
        if sender.is_alive():
            sender.terminate()
            sender.join()
    return Part('cast', 'RPC cast to an endpoint that does nothing', count,
                caller=value / count, server=receiver / count,
                groups=groups)


def _process_seconds():
    times = os.times()
    return times.user + times.system


def _scratch_table():
    import sqlalchemy as sa
    return sa.Table(SCRATCH_TABLE, sa.MetaData(),
                    sa.Column('id', sa.Integer, primary_key=True,
                              autoincrement=False),
                    sa.Column('counter', sa.Integer, nullable=False))


def measure_database(count, warmup, cpu_groups):
    """A read and a write transaction of one row each, through the
    service's own transaction helpers (same engine, pool and checks)."""
    # NOTE: the backend's private helpers on purpose: the floor is the
    # cost of exactly the transactions the service opens.
    from ironic_alloc.db.sqlalchemy import api as db_backend
    import sqlalchemy as sa
    table = _scratch_table()
    with db_backend._connection_for_write() as conn:
        table.drop(conn, checkfirst=True)
        table.create(conn)
        conn.execute(table.insert().values(id=1, counter=0))

    def read():
        with db_backend._connection_for_read() as conn:
            conn.execute(sa.select(table.c.counter).where(
                table.c.id == 1)).scalar_one()

    def write():
        with db_backend._connection_for_write() as conn:
            conn.execute(table.update().where(table.c.id == 1).values(
                counter=table.c.counter + 1))

    parts = []
    try:
        for name, title, work in (
                ('read', 'read transaction: one row by primary key', read),
                ('write', 'write transaction: update one row, commit',
                 write)):
            for _ in range(warmup):
                work()
            groups_before = _groups_before(cpu_groups)
            before = time.thread_time()
            for _ in range(count):
                work()
            caller = time.thread_time() - before
            parts.append(Part(name, title, count, caller=caller / count,
                              groups=_group_delta(cpu_groups, groups_before,
                                                  count)))
    finally:
        with db_backend._connection_for_write() as conn:
            table.drop(conn, checkfirst=True)
    return parts


def is_in_process_transport(conf):
    return (conf.transport_url or 'fake://').startswith('fake:')


def measure(config_files, count, warmup=200, cpu_groups=(), timeout=60.0):
    """Measure every part; returns a list of Part (the cast is a note
    only with the in-process transport, which has no broker)."""
    from ironic_alloc.common import service as ia_service
    from ironic_alloc.conf import CONF
    args = []
    for path in config_files:
        args += ['--config-file', path]
    ia_service.prepare_service(args)
    parts = [
        measure_http('http', 'HTTP server, empty WSGI application',
                     lambda: _empty_app, count, warmup),
        measure_http('http_api', 'API: GET / (every middleware, Pecan, '
                     'WSME; reads nothing)', _api_app, count, warmup),
    ]
    if is_in_process_transport(CONF):
        parts.append(Part('cast', 'RPC cast', 0,
                          note='in-process transport (fake://): no broker, '
                               'not measured'))
    else:
        parts.append(measure_cast(count, warmup, cpu_groups, timeout))
    parts.extend(measure_database(count, warmup, cpu_groups))
    return parts


def allocation_floor(parts):
    """CPU seconds of the fewest parts one allocation crosses
    (ALLOCATION_PARTS), and the terms of the sum; None parts count 0."""
    by_name = {part.name: part for part in parts}
    terms = []
    for name, times in ALLOCATION_PARTS:
        if name == 'client':
            part = by_name.get('http_api')
            seconds = part.caller if part else None
            label = 'HTTP client (load generator)'
        elif name == 'http_api':
            # NOTE: the client's side is its own term.
            part = by_name.get(name)
            seconds = part.server if part else None
            label = part.title if part else name
        else:
            part = by_name.get(name)
            seconds = part.total() if part and part.count else None
            label = part.title if part else name
        terms.append((label, times, seconds))
    total = sum(times * (seconds or 0.0) for _, times, seconds in terms)
    return total, terms


def floor_document(parts, cpus, machine):
    """The JSON-able result of a measurement."""
    seconds, terms = allocation_floor(parts)
    return {
        'cpus': cpus, 'machine': machine,
        'parts': [dataclasses.asdict(part) for part in parts],
        'allocation': {
            'seconds': seconds,
            'terms': [{'part': label, 'times': times, 'seconds': value}
                      for label, times, value in terms]},
    }
