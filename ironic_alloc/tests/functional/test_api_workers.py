"""ironic-alloc-api with [api]api_workers > 1: a real process tree.

Starts the real command with three worker processes on an SQLite file,
checks that the workers share the port and the database, that a killed
worker is replaced while the others keep serving, that SIGHUP replaces
every worker without refusing a request, and that SIGTERM stops the
whole tree.
"""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time

import fixtures
from testtools import content

from ironic_alloc.tests import base

HEADERS = {'Content-Type': 'application/json',
           'X-OpenStack-Ironic-API-Version': '1.79'}
WORKERS = 3


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _children(pid):
    """Pids of the live (not zombie) child processes of ``pid``."""
    found = set()
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as f:
                stat = f.read()
        except OSError:
            continue
        # NOTE: the command name (field 2) may contain spaces: split after
        # its closing parenthesis.
        fields = stat.rsplit(')', 1)[1].split()
        if int(fields[1]) == pid and fields[0] != 'Z':
            found.add(int(entry))
    return found


def _alive(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


class TestApiWorkers(base.TestCase):

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.port = _free_port()
        self.conf_path = os.path.join(tmp, 'ironic-alloc.conf')
        with open(self.conf_path, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = fake://\n'
                    'auth_strategy = noauth\nstate_path = %s\n'
                    '[api]\nhost_ip = 127.0.0.1\nport = %d\n'
                    'api_workers = %d\n'
                    '[database]\nconnection = sqlite:///%s\n'
                    % (tmp, self.port, WORKERS,
                       os.path.join(tmp, 'db.sqlite')))
        subprocess.run([sys.executable, '-m', 'ironic_alloc.cmd.dbsync',
                        '--config-file', self.conf_path, 'upgrade'],
                       check=True, capture_output=True, timeout=120)
        self.log = open(os.path.join(tmp, 'api.log'), 'wb')
        self.addCleanup(self.log.close)
        self.addOnException(self._attach_log)
        self._start()
        self._wait_until(self._answers, 'three workers answering')

    def _start(self):
        self.proc = subprocess.Popen(
            [sys.executable, '-m', 'ironic_alloc.cmd.api',
             '--config-file', self.conf_path],
            stdin=subprocess.DEVNULL, stdout=self.log,
            stderr=subprocess.STDOUT, start_new_session=True)
        self.addCleanup(self._kill_tree, self.proc)
        self._wait_until(lambda: len(_children(self.proc.pid)) == WORKERS,
                         'three workers')

    def _attach_log(self, exc_info):
        self.log.flush()
        with open(self.log.name, errors='replace') as f:
            self.addDetail('api-log', content.text_content(
                f.read()[-20000:]))

    def _kill_tree(self, proc):
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)

    def _wait_until(self, predicate, what, timeout=60):
        deadline = time.monotonic() + timeout
        while not predicate():
            if self.proc.poll() is not None:
                self.fail('ironic-alloc-api exited (%s) while waiting for '
                          '%s' % (self.proc.returncode, what))
            if time.monotonic() > deadline:
                self.fail('no %s after %ss' % (what, timeout))
            time.sleep(0.1)

    def _request(self, method, path, body=None):
        conn = http.client.HTTPConnection('127.0.0.1', self.port,
                                          timeout=30)
        try:
            conn.request(method, path,
                         body=json.dumps(body) if body else None,
                         headers=HEADERS)
            response = conn.getresponse()
            data = response.read()
            return response.status, json.loads(data) if data else None
        finally:
            conn.close()

    def _answers(self):
        try:
            return self._request('GET', '/v1/nodes')[0] == 200
        except OSError:
            return False

    def test_workers_share_port_and_database(self):
        for i in range(12):
            status, body = self._request(
                'POST', '/v1/nodes',
                {'driver': 'fake-hardware', 'name': 'worker-node-%d' % i})
            self.assertEqual(201, status, body)
        # Every new connection may land on another worker: each one must
        # see all the nodes.
        for _ in range(12):
            status, body = self._request('GET', '/v1/nodes')
            self.assertEqual(200, status)
            self.assertEqual(12, len(body['nodes']))

    def test_killed_worker_is_replaced(self):
        workers = _children(self.proc.pid)
        victim = sorted(workers)[0]
        os.kill(victim, signal.SIGKILL)
        # NOTE: until the signal lands, the victim may still accept a
        # connection (the workers share the socket), which then dies with
        # it; only what comes after its death must be served.
        self._wait_until(lambda: victim not in _children(self.proc.pid),
                         'the killed worker gone', timeout=10)
        # The survivors keep serving meanwhile.
        for _ in range(5):
            self.assertEqual(200, self._request('GET', '/v1/nodes')[0])
        self._wait_until(
            lambda: (len(_children(self.proc.pid)) == WORKERS
                     and victim not in _children(self.proc.pid)),
            'replacement worker')
        replaced = _children(self.proc.pid)
        self.assertEqual(WORKERS - 1, len(replaced & workers))
        self._wait_until(self._answers, 'answers after the replacement')

    def test_sigterm_stops_every_worker(self):
        workers = _children(self.proc.pid)
        self.assertEqual(WORKERS, len(workers))
        self.proc.send_signal(signal.SIGTERM)
        self.assertEqual(0, self.proc.wait(30))
        # The parent reaps its workers before it exits.
        alive = [pid for pid in workers if _alive(pid)]
        self.assertEqual([], alive)
        self.assertFalse(self._answers())

    def test_sighup_replaces_every_worker(self):
        """SIGHUP: new workers, the same socket; requests sent meanwhile
        are answered (they wait in the socket's queue at worst)."""
        workers = _children(self.proc.pid)
        self.proc.send_signal(signal.SIGHUP)
        statuses = set()

        def replaced():
            statuses.add(self._request('GET', '/v1/nodes')[0])
            children = _children(self.proc.pid)
            return len(children) == WORKERS and not children & workers

        self._wait_until(replaced, 'every worker replaced')
        self.assertEqual({200}, statuses)
        self.assertIsNone(self.proc.poll())

    def test_sigterm_while_workers_start(self):
        """A stop request that arrives while the workers still build their
        application stops them too."""
        self.proc.send_signal(signal.SIGTERM)
        self.assertEqual(0, self.proc.wait(30))
        self._start()
        workers = _children(self.proc.pid)
        self.proc.send_signal(signal.SIGTERM)
        self.assertEqual(0, self.proc.wait(60))
        self.assertEqual([], [pid for pid in workers if _alive(pid)])
