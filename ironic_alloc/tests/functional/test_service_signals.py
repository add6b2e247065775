"""Real ``ironic-alloc-conductor`` and ``ironic-alloc`` processes and the
signals systemd sends them: readiness (``READY=1`` to $NOTIFY_SOCKET, the
units are ``Type=notify``), SIGHUP (reload of the mutable options) and
SIGTERM (graceful stop).

The processes use oslo.messaging's in-process ``fake://`` transport (no
other process talks to them over RPC here) and an SQLite file of their
own, so these tests need no server.
"""

import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import fixtures
from oslotest import base as oslo_base
import requests
import sqlalchemy as sa
from testtools import content

from ironic_alloc.tests import db_rows

BIN_DIR = os.path.dirname(sys.executable)
# Bounds on waiting: they only keep a hang from stalling the run.
START_TIMEOUT = 60
WAIT_TIMEOUT = 30
RESOURCE_CLASS = 'signals'


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class ServiceProcessTestCase(oslo_base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(240, gentle=True))
        self.workdir = self.useFixture(fixtures.TempDir()).path
        self.db_url = 'sqlite:///%s' % os.path.join(self.workdir,
                                                    'ironic-alloc.sqlite')
        self.conf = os.path.join(self.workdir, 'ironic-alloc.conf')
        self.log_path = os.path.join(self.workdir, 'service.log')
        self.host = 'signals-%s' % uuid.uuid4().hex[:8]
        self.engine = sa.create_engine(self.db_url)
        self.addCleanup(self.engine.dispose)
        self.proc = None
        self.addOnException(self._attach_log)

    def _attach_log(self, exc_info):
        self.addDetail('service-log', content.text_content(self.log_text()))

    # Helpers

    def write_conf(self, debug, redrive_interval=1, port=None):
        lines = ['[DEFAULT]',
                 'transport_url = fake://',
                 'host = %s' % self.host,
                 'debug = %s' % ('true' if debug else 'false'),
                 '[database]',
                 'connection = %s' % self.db_url,
                 '[conductor]',
                 'heartbeat_interval = 1',
                 'allocation_redrive_interval = %d' % redrive_interval]
        if port:
            lines += ['[api]', 'host_ip = 127.0.0.1', 'port = %d' % port]
        # NOTE: written to a new file renamed over the old one, as
        # configuration tools do: the process never reads half a file.
        with open(self.conf + '.new', 'w') as f:
            f.write('\n'.join(lines) + '\n')
        os.rename(self.conf + '.new', self.conf)

    def upgrade_schema(self):
        subprocess.run([os.path.join(BIN_DIR, 'ironic-alloc-dbsync'),
                        '--config-file', self.conf, 'upgrade'],
                       check=True, capture_output=True, timeout=120)

    def start(self, command):
        """Start ``command`` with a NOTIFY_SOCKET of ours; returns what it
        sent there first and the conductor rows seen at that moment."""
        notify_path = os.path.join(self.workdir, 'notify.sock')
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(notify.close)
        notify.bind(notify_path)
        notify.settimeout(START_TIMEOUT)
        env = dict(os.environ, NOTIFY_SOCKET=notify_path)
        with open(os.path.join(self.workdir, 'service.out'), 'ab') as out:
            self.proc = subprocess.Popen(
                [os.path.join(BIN_DIR, command), '--config-file', self.conf,
                 '--log-file', self.log_path],
                stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.addCleanup(self._kill)
        try:
            message = notify.recv(4096)
        except TimeoutError:
            self.fail('%s sent nothing to NOTIFY_SOCKET in %ds'
                      % (command, START_TIMEOUT))
        return message, self.conductor_rows()

    def _kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def conductor_rows(self):
        with self.engine.connect() as conn:
            return conn.execute(sa.text(
                'SELECT id, online, heartbeat_at FROM conductors '
                'WHERE hostname = :h'), {'h': self.host}).all()

    def log_text(self):
        try:
            with open(self.log_path, 'rb') as f:
                return f.read().decode('utf-8', 'replace')
        except OSError:
            return ''

    def wait_for_log(self, text, after=0):
        """Wait until ``text`` is in the log beyond offset ``after``."""
        deadline = time.monotonic() + WAIT_TIMEOUT
        while text not in self.log_text()[after:]:
            self.assertIsNone(self.proc.poll(), 'the process exited')
            if time.monotonic() > deadline:
                self.fail('%r not logged within %ds' % (text, WAIT_TIMEOUT))
            time.sleep(0.1)

    def debug_lines(self, start=0):
        return [line for line in self.log_text()[start:].splitlines()
                if ' DEBUG ' in line]

    def reload_debug(self):
        """Turn [DEFAULT]debug on in the file and send SIGHUP; returns the
        log offset at the signal."""
        self.assertEqual([], self.debug_lines())
        self.write_conf(debug=True, redrive_interval=2,
                        port=getattr(self, 'port', None))
        offset = len(self.log_text())
        self.proc.send_signal(signal.SIGHUP)
        self.wait_for_log('reloaded its mutable options', offset)
        self.wait_for_log('wrote its heartbeat', offset)
        return offset

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.assertEqual(0, self.proc.wait(WAIT_TIMEOUT))
        self.assertEqual([False], [r.online for r in self.conductor_rows()])

    def insert_allocating(self, conductor_id, count):
        """``count`` available nodes and as many allocating allocations
        owned by the conductor, as POST /v1/allocations writes them."""
        db_rows.insert_available_nodes(self.engine, count, RESOURCE_CLASS,
                                       self.host)
        db_rows.insert_allocating_allocations(self.engine, count,
                                              RESOURCE_CLASS, conductor_id)

    def allocation_states(self):
        with self.engine.connect() as conn:
            return dict(conn.execute(sa.text(
                'SELECT state, count(*) FROM allocations GROUP BY state'))
                .all())

    # Tests

    def test_conductor_ready_reload_and_stop(self):
        self.write_conf(debug=False)
        self.upgrade_schema()
        message, rows = self.start('ironic-alloc-conductor')
        # READY=1 comes once the conductor is registered and serving.
        self.assertEqual(b'READY=1', message)
        self.assertEqual(1, len(rows))
        self.assertTrue(rows[0].online)
        conductor_id = rows[0].id

        # Work in flight while the configuration is reloaded.
        self.insert_allocating(conductor_id, 20)
        offset = self.reload_debug()
        self.assertNotEqual([], self.debug_lines(offset))
        # The changed re-drive interval restarted the periodic tasks.
        self.wait_for_log('Periodic task intervals changed to (2, ',
                          offset)
        deadline = time.monotonic() + WAIT_TIMEOUT
        while self.allocation_states() != {'active': 20}:
            self.assertLess(time.monotonic(), deadline,
                            self.allocation_states())
            time.sleep(0.2)

        # Same registration, still heartbeating.
        before = self.conductor_rows()
        self.assertEqual([(conductor_id, True)],
                         [(r.id, r.online) for r in before])
        deadline = time.monotonic() + WAIT_TIMEOUT
        while self.conductor_rows()[0].heartbeat_at == \
                before[0].heartbeat_at:
            self.assertLess(time.monotonic(), deadline,
                            'no heartbeat after the reload')
            time.sleep(0.2)
        self.stop()

    def test_standalone_ready_reload_and_stop(self):
        self.port = _free_port()
        self.write_conf(debug=False, port=self.port)
        message, rows = self.start('ironic-alloc')
        # READY=1 comes once the API listens and the conductor serves.
        self.assertEqual(b'READY=1', message)
        self.assertEqual([True], [r.online for r in rows])
        url = 'http://127.0.0.1:%d' % self.port
        self.assertEqual(200, requests.get(url + '/v1', timeout=10)
                         .status_code)

        offset = self.reload_debug()
        self.assertNotEqual([], self.debug_lines(offset))
        # The API still answers, now logging its requests in debug.
        resp = requests.get(url + '/v1/nodes', timeout=10,
                            headers={'X-OpenStack-Ironic-API-Version':
                                     '1.79'})
        self.assertEqual(200, resp.status_code, resp.text)
        self.stop()
