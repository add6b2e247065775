"""Real processes for the multi-process tier: API, conductors, servers.

``Cluster`` writes one configuration (RabbitMQ transport, a PostgreSQL or
MariaDB database, short conductor intervals), rebuilds the schema with
``ironic-alloc-dbsync upgrade``, loads available nodes, and starts
``ironic-alloc-api`` and ``ironic-alloc-conductor`` processes, each in its
own process group with its own log.  ``Broker`` and ``DatabaseServer``
stop and start the servers.  ``Load`` is a pool of HTTP clients counting
every answer.  ``check_consistency`` compares the allocation and node rows.

The servers come from tools/test-multiprocess-setup.sh; the environment
overrides them:

IRONIC_ALLOC_TEST_DB
    SQLAlchemy URL of the database (default: the PostgreSQL cluster of the
    setup script, port 5433).  Its schema is dropped and rebuilt.
IRONIC_ALLOC_TEST_TRANSPORT_URL
    oslo.messaging transport URL (default: the setup script's vhost).
"""

import collections
import fcntl
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import requests
import sqlalchemy as sa

from ironic_alloc.tests import base
from ironic_alloc.tests import db_rows

DEFAULT_DB = ('postgresql+psycopg2://openstack_citest:openstack_citest@'
              '127.0.0.1:5433/ironic_alloc_multiprocess')
DEFAULT_TRANSPORT = ('rabbit://openstack_citest:openstack_citest@'
                     '127.0.0.1:5672/ironic_alloc_multiprocess')
SETUP_HINT = 'run tools/test-multiprocess-setup.sh'

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__),
                                         '..', '..', '..'))
BIN_DIR = os.path.dirname(sys.executable)
# NOTE: computed at import: oslotest points tempfile at a per-test
# directory removed when the test ends, before our cleanups may run.
_TMP_ROOT = tempfile.gettempdir()
LOCK_PATH = os.path.join(_TMP_ROOT, 'ironic-alloc-multiprocess.lock')

API_VERSION = '1.79'
RESOURCE_CLASS = 'mp-test'

# The intervals of the generated configuration (seconds).
HEARTBEAT_INTERVAL = 1
HEARTBEAT_TIMEOUT = 4
CHECK_ALLOCATIONS_INTERVAL = 2
REDRIVE_INTERVAL = 1
RPC_CALL_TIMEOUT = 3
# Bounds on waiting: they only keep a hang from stalling the run.
START_TIMEOUT = 60
STOP_TIMEOUT = 15
REQUEST_TIMEOUT = 20


def db_url():
    return os.environ.get('IRONIC_ALLOC_TEST_DB') or DEFAULT_DB


def transport_url():
    return os.environ.get('IRONIC_ALLOC_TEST_TRANSPORT_URL') or \
        DEFAULT_TRANSPORT


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def log(message, *args):
    """Print what a test does (captured by stestr, shown on failure)."""
    line = '[%s] %s' % (time.strftime('%H:%M:%S'),
                        message % args if args else message)
    print(line, flush=True)


def engine(url=None):
    return sa.create_engine(url or db_url(), pool_pre_ping=True,
                            pool_size=2, max_overflow=2)


def missing_reason():
    """Why the tier cannot run here (server unreachable), or None."""
    try:
        eng = sa.create_engine(db_url(), connect_args=_connect_timeout())
        try:
            with eng.connect() as conn:
                conn.execute(sa.text('SELECT 1'))
        finally:
            eng.dispose()
    except Exception as exc:
        return 'database %s not reachable (%s; %s)' % (
            _safe(db_url()), str(exc).splitlines()[0], SETUP_HINT)
    import kombu
    # NOTE: oslo.messaging's rabbit:// is kombu's amqp://.
    amqp_url = 'amqp://' + transport_url().split('://', 1)[1]
    try:
        with kombu.Connection(amqp_url, connect_timeout=3) as conn:
            conn.ensure_connection(max_retries=1)
    except Exception as exc:
        return 'RabbitMQ %s not reachable (%s; %s)' % (
            _safe(transport_url()), exc, SETUP_HINT)
    for command in ('rabbitmqctl',):
        if shutil.which(command) is None:
            return '%s not found (%s)' % (command, SETUP_HINT)
    return None


def _connect_timeout():
    if db_url().startswith('postgresql'):
        return {'connect_timeout': 3}
    return {'connect_timeout': 3}


def _safe(url):
    parts = urllib.parse.urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(':%s@' % parts.password, ':***@')
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return url


def enter_tier(testcase):
    """Skip (fail under CI=true) without the tier's servers; otherwise
    hold the tier's lock until ``testcase`` ends."""
    reason = missing_reason()
    if reason:
        base.skip_or_fail(testcase, reason)
    lock = TierLock()
    lock.acquire()
    testcase.addCleanup(lock.release)


class TierLock:
    """One test of the tier at a time on this machine (they restart the
    shared broker and database), even under a parallel stestr run."""

    def __init__(self, timeout=600):
        self.timeout = timeout
        self._file = None

    def acquire(self):
        self._file = open(LOCK_PATH, 'a')
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError('another multi-process test held '
                                       '%s for %ds' % (LOCK_PATH,
                                                       self.timeout))
                time.sleep(0.5)

    def release(self):
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None


class Process:
    """One service process in its own process group."""

    def __init__(self, name, argv, log_path, cwd):
        self.name = name
        self.log_path = log_path
        with open(log_path, 'ab') as out:
            self.popen = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True)
        self.pid = self.popen.pid

    def running(self):
        return self.popen.poll() is None

    def signal(self, signum):
        if self.running():
            os.killpg(self.pid, signum)

    def pause(self, timeout=10):
        """SIGSTOP the group and wait until the kernel shows the process
        stopped (state T), so that it runs no more code from here on."""
        self.signal(signal.SIGSTOP)
        deadline = time.monotonic() + timeout
        while True:
            with open('/proc/%d/stat' % self.pid) as f:
                # NOTE: the state follows the parenthesised command name.
                state = f.read().rsplit(')', 1)[1].split()[0]
            if state == 'T':
                return
            if time.monotonic() > deadline:
                raise AssertionError('%s not stopped after SIGSTOP (state '
                                     '%s)' % (self.name, state))
            time.sleep(0.01)

    def kill(self):
        """SIGKILL the whole group and reap it."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.popen.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pass

    def stop(self):
        """SIGTERM (after SIGCONT), SIGKILL after STOP_TIMEOUT."""
        if not self.running():
            self.kill()
            return
        try:
            os.killpg(self.pid, signal.SIGCONT)
            os.killpg(self.pid, signal.SIGTERM)
            self.popen.wait(STOP_TIMEOUT)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def log_text(self):
        try:
            with open(self.log_path, 'rb') as f:
                return f.read().decode('utf-8', 'replace')
        except OSError:
            return ''


class Cluster:
    """API and conductor processes sharing one database and one broker."""

    def __init__(self, name):
        self.name = name
        self.suffix = '%s-%04x' % (name, random.getrandbits(16))
        self.workdir = tempfile.mkdtemp(prefix='ironic-alloc-mp-%s-' % name,
                                        dir=_TMP_ROOT)
        self.db_url = db_url()
        self.apis = []
        self.conductors = {}
        self.engine = engine(self.db_url)
        self.conf = os.path.join(self.workdir, 'common.conf')
        self._write(self.conf, {
            'DEFAULT': {'transport_url': transport_url(),
                        'auth_strategy': 'noauth',
                        'debug': 'false',
                        'host': 'mp-%s' % self.suffix},
            'database': {'connection': self.db_url,
                         # NOTE: reconnect at once after a server restart.
                         'retry_interval': '1',
                         'max_retries': '-1'},
            'api': {'rpc_call_timeout': str(RPC_CALL_TIMEOUT)},
            'conductor': {
                'heartbeat_interval': str(HEARTBEAT_INTERVAL),
                'heartbeat_timeout': str(HEARTBEAT_TIMEOUT),
                'check_allocations_interval': str(CHECK_ALLOCATIONS_INTERVAL),
                'allocation_redrive_interval': str(REDRIVE_INTERVAL),
                'graceful_shutdown_timeout': '5',
                'workers_pool_size': '8'},
            'oslo_messaging_rabbit': {
                # NOTE: reconnect within seconds after a broker restart
                # (the default backoff grows to 30 s).
                'rabbit_retry_interval': '1',
                'rabbit_retry_backoff': '1',
                'rabbit_interval_max': '2',
                'kombu_reconnect_delay': '0.5',
                'heartbeat_timeout_threshold': '10'},
        })

    # Configuration and schema

    @staticmethod
    def _write(path, sections):
        lines = []
        for group, options in sections.items():
            lines.append('[%s]' % group)
            lines.extend('%s = %s' % item for item in options.items())
            lines.append('')
        with open(path, 'w') as f:
            f.write('\n'.join(lines))

    def _run(self, argv, timeout=120):
        result = subprocess.run(argv, capture_output=True, text=True,
                                timeout=timeout, cwd=self.workdir)
        if result.returncode:
            raise RuntimeError('%s failed (%d): %s%s' % (
                ' '.join(argv), result.returncode, result.stdout,
                result.stderr))
        return result.stdout

    def rebuild_schema(self):
        """Drop every table, then ``ironic-alloc-dbsync upgrade``."""
        from ironic_alloc.db.sqlalchemy import models
        with self.engine.begin() as conn:
            models.Base.metadata.drop_all(conn)
            conn.execute(sa.text('DROP TABLE IF EXISTS alembic_version'))
        self._run([os.path.join(BIN_DIR, 'ironic-alloc-dbsync'),
                   '--config-file', self.conf, 'upgrade'])

    def load_nodes(self, count):
        """Insert ``count`` available nodes; returns their uuids."""
        return db_rows.insert_available_nodes(
            self.engine, count, RESOURCE_CLASS, 'mp-%s' % self.suffix)

    def insert_allocations(self, count, conductor_id):
        """Write ``count`` allocating allocations owned by a conductor,
        as POST /v1/allocations does; returns their uuids."""
        return db_rows.insert_allocating_allocations(
            self.engine, count, RESOURCE_CLASS, conductor_id)

    # Processes

    def _start(self, name, executable, sections):
        conf = os.path.join(self.workdir, '%s.conf' % name)
        self._write(conf, sections)
        log_path = os.path.join(self.workdir, '%s.log' % name)
        return Process(name, [os.path.join(BIN_DIR, executable),
                              '--config-file', self.conf,
                              '--config-file', conf,
                              '--log-file', log_path], log_path,
                       self.workdir)

    def start_api(self, workers=1, options=None, sections=None):
        """Start one ``ironic-alloc-api`` with ``workers`` worker
        processes, the extra ``[api]`` ``options`` and the other groups of
        ``sections`` ({group: {option: value}}); returns its base URL
        once it answers (``GET /``, which needs neither database nor
        broker)."""
        for attempt in range(3):
            port = free_port()
            name = 'api-%d' % (len(self.apis) + 1)
            # NOTE: each API process has a multiprocess metrics
            # directory of its own: it wipes it at start.
            groups = {group: dict(values)
                      for group, values in (sections or {}).items()}
            groups.update({'api': dict(options or {},
                                       host_ip='127.0.0.1',
                                       port=str(port),
                                       api_workers=str(workers)),
                           'metrics': {
                               'api_multiprocess_dir': os.path.join(
                                   self.workdir, name + '-metrics')}})
            proc = self._start(name, 'ironic-alloc-api', groups)
            url = 'http://127.0.0.1:%d' % port
            if self._wait_http(proc, url):
                self.apis.append((proc, url))
                return url
            proc.kill()
            if 'Address already in use' not in proc.log_text():
                break
        raise RuntimeError('%s did not start; log %s:\n%s' % (
            proc.name, proc.log_path, proc.log_text()[-5000:]))

    @staticmethod
    def _wait_http(proc, url):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if not proc.running():
                return False
            try:
                if requests.get(url + '/', timeout=2).status_code == 200:
                    return True
            except requests.RequestException:
                pass
            time.sleep(0.2)
        return False

    def start_conductor(self, name, wait=True, options=None):
        """Start ``ironic-alloc-conductor`` with [DEFAULT]host=<name>.

        :param options: more configuration, {group: {option: value}}.
        """
        hostname = '%s-%s' % (name, self.suffix)
        sections = {group: dict(values)
                    for group, values in (options or {}).items()}
        sections.setdefault('DEFAULT', {})['host'] = hostname
        proc = self._start(name, 'ironic-alloc-conductor', sections)
        proc.hostname = hostname
        self.conductors[name] = proc
        if wait:
            self.wait_conductor_alive(name)
        return proc

    def conductor_id(self, name):
        """The id of the newest registration of conductor ``name``."""
        with self.engine.connect() as conn:
            return conn.execute(sa.text(
                'SELECT max(id) FROM conductors WHERE hostname = :h'),
                {'h': self.conductors[name].hostname}).scalar()

    def wait_conductor_alive(self, name):
        proc = self.conductors[name]
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if not proc.running():
                break
            with self.engine.connect() as conn:
                found = conn.execute(sa.text(
                    'SELECT count(*) FROM conductors WHERE hostname = :h '
                    'AND online AND heartbeat_at IS NOT NULL'),
                    {'h': proc.hostname}).scalar()
            if found:
                return
            time.sleep(0.2)
        raise RuntimeError('conductor %s did not register; log %s:\n%s' % (
            name, proc.log_path, proc.log_text()[-5000:]))

    def processes(self):
        return [p for p, _ in self.apis] + list(self.conductors.values())

    def cleanup(self, keep_logs=False):
        """Stop every process; remove the work dir unless keep_logs."""
        for proc in self.processes():
            proc.stop()
        self.engine.dispose()
        if not keep_logs:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def logs_tail(self, limit=3000):
        return '\n'.join('--- %s (%s)\n%s' % (p.name, p.log_path,
                                               p.log_text()[-limit:])
                         for p in self.processes())

    def grep_logs(self, text, names=None):
        """How many log lines of the processes contain ``text``."""
        return sum(p.log_text().count(text) for p in self.processes()
                   if names is None or p.name in names)

    # Database views

    def allocation_states(self):
        with self.engine.connect() as conn:
            return collections.Counter(dict(conn.execute(sa.text(
                'SELECT state, count(*) FROM allocations GROUP BY state'))
                .all()))

    def wait_settled(self, timeout):
        """Wait until no allocation is ``allocating``; returns seconds
        waited, or raises AssertionError with the stuck rows."""
        start = time.monotonic()
        while True:
            states = self.allocation_states()
            if not states.get('allocating'):
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                with self.engine.connect() as conn:
                    stuck = conn.execute(sa.text(
                        "SELECT uuid, conductor_affinity FROM allocations "
                        "WHERE state = 'allocating'")).all()
                raise AssertionError(
                    '%d allocations still allocating after %ds: %s\n%s'
                    % (len(stuck), timeout, stuck[:10],
                       self.conductor_table()))
            time.sleep(0.5)

    def conductor_table(self):
        with self.engine.connect() as conn:
            return conn.execute(sa.text(
                'SELECT id, hostname, online, heartbeat_at FROM conductors '
                'ORDER BY id')).all()


def check_consistency(cluster, api_url, created, deleted, unknown=()):
    """Compare allocation and node rows, and the API's view of them.

    :param created: uuids of allocations the API answered 201 for.
    :param deleted: uuids the API answered 204 for.
    :param unknown: uuids whose DELETE got no 204 (a 503 or no answer):
        a call that timed out may still have been carried out later, so
        these may be gone or not.
    :returns: a dict of counts (printed by the tests).
    :raises: AssertionError naming what disagrees.
    """
    problems = []
    with cluster.engine.connect() as conn:
        allocs = {r.uuid: r for r in conn.execute(sa.text(
            'SELECT id, uuid, state, node_id, conductor_affinity, '
            'last_error FROM allocations'))}
        nodes = {r.id: r for r in conn.execute(sa.text(
            'SELECT id, uuid, allocation_id, instance_uuid FROM nodes '
            'WHERE allocation_id IS NOT NULL OR instance_uuid IS NOT NULL'))}
        doubles = conn.execute(sa.text(
            'SELECT node_id, count(*) FROM allocations WHERE node_id IS NOT '
            'NULL GROUP BY node_id HAVING count(*) > 1')).all()
    by_id = {a.id: a for a in allocs.values()}
    states = collections.Counter(a.state for a in allocs.values())
    if doubles:
        problems.append('nodes with two allocations: %s' % doubles[:10])
    if states.get('allocating'):
        problems.append('%d allocations still allocating'
                        % states['allocating'])
    for a in allocs.values():
        if a.state == 'active':
            node = nodes.get(a.node_id)
            if node is None or node.allocation_id != a.id or \
                    node.instance_uuid != a.uuid:
                problems.append('active allocation %s: node row %s does '
                                'not point back' % (a.uuid, node))
        elif a.node_id is not None:
            problems.append('%s allocation %s has node_id %s'
                            % (a.state, a.uuid, a.node_id))
    for node in nodes.values():
        a = by_id.get(node.allocation_id)
        if a is None or a.node_id != node.id:
            problems.append('node %s points to allocation %s that does not '
                            'point back (%s)' % (node.uuid,
                                                 node.allocation_id, a))
    lost = set(created) - set(deleted) - set(unknown) - set(allocs)
    if lost:
        problems.append('%d allocations answered 201 are gone: %s'
                        % (len(lost), sorted(lost)[:5]))
    resurrected = set(deleted) & set(allocs)
    if resurrected:
        problems.append('%d allocations answered 204 still exist: %s'
                        % (len(resurrected), sorted(resurrected)[:5]))

    # The API's view: the same allocations, states and nodes.
    api_view = list_allocations(api_url)
    node_uuids = {n.id: n.uuid for n in nodes.values()}
    expected = {a.uuid: (a.state, node_uuids.get(a.node_id))
                for a in allocs.values()}
    if api_view != expected:
        diff = set(api_view.items()) ^ set(expected.items())
        problems.append('the API and the database disagree on %d '
                        'allocations: %s' % (len(diff), sorted(diff)[:5]))
    if problems:
        raise AssertionError('; '.join(problems[:20]))
    return {'allocations': len(allocs), 'by_state': dict(states),
            'nodes_with_allocation': len(nodes), 'api_listed': len(api_view),
            'created_201': len(set(created)), 'deleted_204': len(deleted)}


def api_headers():
    return {'X-OpenStack-Ironic-API-Version': API_VERSION,
            'Content-Type': 'application/json'}


def list_allocations(api_url):
    """{uuid: (state, node_uuid)} of every allocation, through the API."""
    result = {}
    url = api_url + '/v1/allocations?limit=1000&fields=uuid,state,node_uuid'
    for _ in range(1000):
        resp = requests.get(url, headers=api_headers(),
                            timeout=REQUEST_TIMEOUT)
        resp.raise_for_status()
        body = resp.json()
        for a in body['allocations']:
            result[a['uuid']] = (a['state'], a.get('node_uuid'))
        url = body.get('next')
        if not url:
            return result
    raise AssertionError('allocation paging did not end')


class Load:
    """HTTP clients creating (and optionally deleting) allocations.

    Every answer is counted as ``(method, status)``; a request that got no
    answer within REQUEST_TIMEOUT counts as ``(method, 'timeout')``, a
    refused connection as ``(method, 'error')``.
    """

    def __init__(self, urls, clients=4, delete_ratio=0.0, total=None,
                 pause=0.0):
        self.urls = list(urls)
        self.clients = clients
        self.delete_ratio = delete_ratio
        self.total = total
        self.pause = pause
        self.counts = collections.Counter()
        self.created = []
        self.deleted = []
        self.delete_unknown = []
        self.samples = {}
        self.slowest = collections.defaultdict(float)
        self.timeline = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = []
        self._issued = 0
        self._claimed = set()

    def start(self):
        for i in range(self.clients):
            thread = threading.Thread(target=self._run, args=(i,),
                                      daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self, timeout=REQUEST_TIMEOUT + 10):
        self._stop.set()
        self.join(timeout)

    def join(self, timeout):
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.1, deadline - time.monotonic()))
        alive = [t for t in self._threads if t.is_alive()]
        if alive:
            raise AssertionError('%d client threads still blocked after '
                                 '%ds' % (len(alive), timeout))

    def claim(self):
        """An allocation created by the load that its clients will not
        delete (for the test's own requests)."""
        with self._lock:
            for uuid in reversed(self.created):
                if uuid not in self._claimed:
                    self._claimed.add(uuid)
                    return uuid
        raise AssertionError('the load created no allocation')

    def _take(self):
        with self._lock:
            if self.total is not None and self._issued >= self.total:
                return False
            self._issued += 1
            return True

    def _record(self, method, status, started, text=None, uuid=None):
        elapsed = time.monotonic() - started
        with self._lock:
            self.counts[(method, status)] += 1
            self.slowest[method] = max(self.slowest[method], elapsed)
            self.timeline.append((started, method, status, elapsed))
            if text is not None and (method, status) not in self.samples:
                self.samples[(method, status)] = text[:300]
            if uuid is not None:
                (self.created if method == 'POST'
                 else self.deleted).append(uuid)

    def _run(self, index):
        session = requests.Session()
        rnd = random.Random(index)
        while not self._stop.is_set() and self._take():
            url = rnd.choice(self.urls)
            victim = None
            if self.delete_ratio and rnd.random() < self.delete_ratio:
                # NOTE: each allocation is deleted by one client only, so
                # a 404 is never the clients' own race.
                with self._lock:
                    pool = [u for u in self.created
                            if u not in self._claimed]
                    victim = rnd.choice(pool) if pool else None
                    if victim:
                        self._claimed.add(victim)
            if victim:
                self.request(session, 'DELETE',
                             '%s/v1/allocations/%s' % (url, victim), victim)
            else:
                self.request(session, 'POST', url + '/v1/allocations')
            if self.pause:
                time.sleep(self.pause)
        session.close()

    def request(self, session, method, url, uuid=None):
        started = time.monotonic()
        try:
            if method == 'POST':
                resp = session.post(
                    url, json={'resource_class': RESOURCE_CLASS},
                    headers=api_headers(), timeout=REQUEST_TIMEOUT)
            else:
                resp = session.delete(url, headers=api_headers(),
                                      timeout=REQUEST_TIMEOUT)
        except requests.Timeout:
            self._record(method, 'timeout', started)
            self._delete_unknown(method, uuid)
            return None
        except requests.RequestException as exc:
            self._record(method, 'error', started, str(exc))
            self._delete_unknown(method, uuid)
            return None
        if method == 'DELETE' and resp.status_code != 204:
            self._delete_unknown(method, uuid)
        if method == 'POST' and resp.status_code == 201:
            uuid = resp.json()['uuid']
        self._record(method, resp.status_code, started,
                     resp.text if resp.status_code >= 300 else None,
                     uuid if resp.status_code in (201, 204) else None)
        return resp

    def _delete_unknown(self, method, uuid):
        if method == 'DELETE' and uuid is not None:
            with self._lock:
                self.delete_unknown.append(uuid)

    def statuses(self, method=None):
        return {k if method is None else k[1]: v
                for k, v in sorted(self.counts.items(), key=str)
                if method is None or k[0] == method}

    def statuses_in_flight(self, start, end, method, overlapping=True):
        """Statuses of requests of ``method`` that were in flight at some
        moment of [start, end] (or, with ``overlapping=False``, never)."""
        with self._lock:
            return collections.Counter(
                status for t, m, status, elapsed in self.timeline
                if m == method
                and (t <= end and t + elapsed >= start) == overlapping)


class Broker:
    """The RabbitMQ server of the transport URL (on this machine)."""

    @staticmethod
    def _ctl(*args, timeout=60):
        return subprocess.run(['rabbitmqctl', '-q'] + list(args),
                              capture_output=True, text=True,
                              timeout=timeout, check=True)

    def stop(self):
        self._ctl('stop_app')

    def start(self):
        self._ctl('start_app')
        self._ctl('await_startup', timeout=120)


def _running(pid):
    """True until process ``pid`` has exited.

    NOTE: a server that start() below launched is a child of this test
    process, which does not wait for it otherwise: once it exits it stays
    a zombie (its /proc entry remains) until it is reaped here.
    """
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


class DatabaseServer:
    """Stop and start the database server of the test URL (on this
    machine, as root): a PostgreSQL cluster found by its port with
    pg_ctlcluster, or a MariaDB/MySQL server found by its pid file and
    started again with the command line it had."""

    def __init__(self, url=None):
        self.url = sa.engine.make_url(url or db_url())
        self.backend = self.url.get_backend_name()
        self._argv = None

    def _pg_cluster(self):
        port = self.url.port or 5432
        out = subprocess.run(['pg_lsclusters', '--no-header'],
                             capture_output=True, text=True, timeout=30,
                             check=True).stdout
        for line in out.splitlines():
            fields = line.split()
            if int(fields[2]) == port:
                return fields[0], fields[1]
        raise RuntimeError('no PostgreSQL cluster on port %d' % port)

    def _mysql_pid(self):
        eng = sa.create_engine(self.url)
        try:
            with eng.connect() as conn:
                pid_file = conn.execute(sa.text('SELECT @@pid_file')).scalar()
        finally:
            eng.dispose()
        with open(pid_file) as f:
            return int(f.read().strip())

    def stop(self):
        if self.backend == 'postgresql':
            version, name = self._pg_cluster()
            subprocess.run(['pg_ctlcluster', version, name, 'stop', '-m',
                            'fast'], check=True, timeout=60,
                           capture_output=True)
            return
        pid = self._mysql_pid()
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            self._argv = [a.decode() for a in f.read().split(b'\0') if a]
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while _running(pid):
            if time.monotonic() > deadline:
                raise RuntimeError('MariaDB (pid %d) did not stop' % pid)
            time.sleep(0.2)

    def start(self):
        if self.backend == 'postgresql':
            version, name = self._pg_cluster()
            subprocess.run(['pg_ctlcluster', version, name, 'start'],
                           check=True, timeout=60, capture_output=True)
        else:
            subprocess.Popen(self._argv, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL,
                             start_new_session=True)
        eng = sa.create_engine(self.url, connect_args=_connect_timeout())
        deadline = time.monotonic() + 60
        try:
            while True:
                try:
                    with eng.connect() as conn:
                        conn.execute(sa.text('SELECT 1'))
                    return
                except sa.exc.OperationalError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
        finally:
            eng.dispose()


class TcpProxy:
    """A TCP relay on a loopback port of its own in front of a server,
    which the test cuts: a process configured with the proxy's address
    loses that server while every other process keeps it.

    ``cut()`` resets every relayed connection and refuses new ones, as a
    database server that went down does; ``restore()`` accepts again on
    the same port.
    """

    def __init__(self, target_host, target_port):
        self.target = (target_host, target_port)
        self.port = free_port()
        self._lock = threading.Lock()
        self._sockets = set()
        self._listener = None
        self._accepting = None
        self.restore()

    def url_for(self, url):
        """``url`` (SQLAlchemy) with its host and port the proxy's."""
        return str(sa.engine.make_url(url).set(
            host='127.0.0.1', port=self.port)
            .render_as_string(hide_password=False))

    def restore(self):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(('127.0.0.1', self.port))
        listener.listen(64)
        # NOTE: the accept loop polls its flag, so that cut() stops it
        # without closing a socket another thread is blocked on.
        listener.settimeout(0.2)
        accepting = threading.Event()
        accepting.set()
        self._listener, self._accepting = listener, accepting
        threading.Thread(target=self._accept, args=(listener, accepting),
                         daemon=True).start()

    def cut(self):
        self._accepting.clear()
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            # NOTE: linger 0: close() sends RST, as a dead server's host
            # answers, instead of an orderly end of the stream.
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                struct.pack('ii', 1, 0))
            except OSError:
                pass
            sock.close()

    close = cut

    def _accept(self, listener, accepting):
        try:
            while accepting.is_set():
                try:
                    client, _ = listener.accept()
                except socket.timeout:
                    continue
                try:
                    server = socket.create_connection(self.target,
                                                      timeout=5)
                except OSError:
                    client.close()
                    continue
                client.settimeout(None)
                server.settimeout(None)
                with self._lock:
                    if not accepting.is_set():
                        client.close()
                        server.close()
                        continue
                    self._sockets.update((client, server))
                for src, dst in ((client, server), (server, client)):
                    threading.Thread(target=self._pipe, args=(src, dst),
                                     daemon=True).start()
        finally:
            listener.close()

    def _pipe(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        # NOTE: one side ended: end the other, as a plain connection
        # would.
        for sock in (src, dst):
            with self._lock:
                self._sockets.discard(sock)
            try:
                sock.close()
            except OSError:
                pass
