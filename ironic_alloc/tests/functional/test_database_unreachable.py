"""API processes whose first requests come while the database is down.

oslo.db tests a new engine's connection and retries ``[database]
max_retries`` times; the configuration here retries for ever, so a
request of a process that waited for that would never be answered.  API
processes must answer 503 at once instead (and connect once the database
is back: the multi-process tier restarts a real server for that part).

The database is a MySQL URL on a loopback port nothing listens on: the
connection is refused at once, like a stopped server's.  (MySQL because
oslo.db classifies that refusal as a connection error, which it retries;
psycopg2's wording of it is not recognised, so it fails at once.)
"""

from concurrent import futures
import json
import os
import socket
import subprocess
import sys
import time

import fixtures
from testtools import content

from ironic_alloc.tests import base

HEADERS = {'X-OpenStack-Ironic-API-Version': '1.79'}
# NOTE: far below the retries configured (for ever, 10 s apart), far above
# a refused connection's few milliseconds on a loaded machine.
ANSWER_WITHIN = 15


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class TestDatabaseUnreachable(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.port = _free_port()
        self.conf_path = os.path.join(self.tmp, 'ironic-alloc.conf')
        with open(self.conf_path, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = fake://\n'
                    'auth_strategy = noauth\nstate_path = %s\n'
                    '[api]\nhost_ip = 127.0.0.1\nport = %d\n'
                    'api_workers = 3\n'
                    '[database]\nmax_retries = -1\nretry_interval = 10\n'
                    'connection = mysql+pymysql://nobody:secret@'
                    '127.0.0.1:%d/ironic_alloc\n'
                    % (self.tmp, self.port, _free_port()))
        self.log_path = os.path.join(self.tmp, 'api.log')
        self.addOnException(self._attach_log)

    def _attach_log(self, exc_info):
        if os.path.exists(self.log_path):
            with open(self.log_path, errors='replace') as f:
                self.addDetail('api-log', content.text_content(
                    f.read()[-20000:]))

    def _check_503(self, status, body):
        self.assertEqual(503, status, body)
        fault = json.loads(json.loads(body)['error_message'])
        self.assertIn('database is unavailable', fault['faultstring'])

    def test_api_workers_answer_503_at_once(self):
        """ironic-alloc-api with three fresh workers: 9 concurrent first
        requests (reads and a write), every one 503 within seconds."""
        import requests

        with open(self.log_path, 'wb') as log:
            proc = subprocess.Popen(
                [sys.executable, '-m', 'ironic_alloc.cmd.api',
                 '--config-file', self.conf_path],
                stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
        self.addCleanup(self._stop, proc)
        base_url = 'http://127.0.0.1:%d' % self.port
        deadline = time.monotonic() + 60
        while True:
            self.assertIsNone(proc.poll(), 'ironic-alloc-api exited')
            try:
                # NOTE: the root document needs no database.
                if requests.get(base_url + '/', timeout=5).ok:
                    break
            except requests.RequestException:
                pass
            self.assertLess(time.monotonic(), deadline, 'API not serving')
            time.sleep(0.2)

        def send(index):
            started = time.monotonic()
            if index % 3 == 2:
                resp = requests.post(
                    base_url + '/v1/allocations', json={'resource_class': 'x'},
                    headers=HEADERS, timeout=ANSWER_WITHIN)
            else:
                resp = requests.get(base_url + '/v1/nodes', headers=HEADERS,
                                    timeout=ANSWER_WITHIN)
            return resp.status_code, resp.text, time.monotonic() - started

        # NOTE: each request on its own connection, so that the kernel
        # spreads them over the workers; a request still waiting for the
        # database fails with requests' Timeout.
        with futures.ThreadPoolExecutor(9) as pool:
            answers = list(pool.map(send, range(9)))
        for status, text, elapsed in answers:
            self._check_503(status, text)
        print('first requests of 3 fresh workers, database down: %s in '
              '%.2f s at most' % ([a[0] for a in answers],
                                  max(a[2] for a in answers)))

    def test_wsgi_application_answers_503_at_once(self):
        """The WSGI entry point (what mod_wsgi and gunicorn load) in a
        fresh process: its first request answers 503."""
        script = (
            'import time, webob\n'
            'from ironic_alloc.wsgi import api\n'
            'started = time.monotonic()\n'
            'resp = webob.Request.blank("/v1/nodes", headers=%r)'
            '.get_response(api.application)\n'
            'print("ANSWER", resp.status_int, time.monotonic() - started,'
            ' resp.text.replace("\\n", " "))\n' % HEADERS)
        env = dict(os.environ, IRONIC_ALLOC_CONFIG_FILE=self.conf_path)
        result = subprocess.run(
            [sys.executable, '-c', script], env=env, capture_output=True,
            text=True, timeout=ANSWER_WITHIN + 30, cwd=self.tmp)
        self.assertEqual(0, result.returncode, result.stderr[-5000:])
        answer = [line for line in result.stdout.splitlines()
                  if line.startswith('ANSWER ')]
        self.assertEqual(1, len(answer), result.stdout[-5000:])
        status, elapsed, body = answer[0].split(' ', 3)[1:]
        self._check_503(int(status), body)
        self.assertLess(float(elapsed), ANSWER_WITHIN, result.stderr[-5000:])
        print('first request through ironic_alloc.wsgi.api, database '
              'down: %s in %.2f s' % (status, float(elapsed)))

    @staticmethod
    def _stop(proc):
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait(30)
