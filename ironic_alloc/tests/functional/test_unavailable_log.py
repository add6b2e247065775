"""What ironic-alloc-api logs while the database or the message broker
cannot be reached: one WARNING line per cause, without a traceback, at
most once per [DEFAULT]unavailable_log_interval, and a line counting the
ones left out; a genuine 500 keeps its traceback.

The real command with one worker over HTTP.  An unreachable server is a
loopback port nothing listens on: the connection is refused at once, as
a stopped server's is (see test_database_unreachable).
"""

import collections
from concurrent import futures
import json
import os
import re
import socket
import subprocess
import sys
import time

import fixtures
from oslo_utils import uuidutils
import requests
import sqlalchemy as sa
from testtools import content

from ironic_alloc.common import states
from ironic_alloc import objects
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import utils

HEADERS = {'X-OpenStack-Ironic-API-Version': '1.79'}
REQUEST_TIMEOUT = 30
# NOTE: an interval no test outlasts: every line of a cause after the
# first is left out.
LONG_INTERVAL = 3600

_ANSWERED = re.compile(r' WARNING \S+ \[[^\]]*\] Answered 503 \((?P<cls>\w+)\) '
                       r'to \S+ \S+: (?P<error>.*)$')
_LEFT_OUT = re.compile(r' WARNING \S+ \[[^\]]*\] (?P<count>\d+) more '
                       r'line\(s\) of cause "(?P<cause>[^"]*)" left out')


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class UnavailableLogTestCase(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.log_path = os.path.join(self.tmp, 'api.log')
        self.addOnException(self._attach_log)

    def _attach_log(self, exc_info):
        if os.path.exists(self.log_path):
            with open(self.log_path, errors='replace') as f:
                self.addDetail('api-log', content.text_content(
                    f.read()[-20000:]))

    def start_api(self, interval, database=None, transport_url='fake://',
                  extra=''):
        """ironic-alloc-api with one worker; its base URL."""
        port = _free_port()
        conf_path = os.path.join(self.tmp, 'ironic-alloc.conf')
        with open(conf_path, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = %s\n'
                    'auth_strategy = noauth\nstate_path = %s\n'
                    'unavailable_log_interval = %d\n'
                    '[api]\nhost_ip = 127.0.0.1\nport = %d\n'
                    'api_workers = 1\n'
                    '[database]\nconnection = %s\n%s'
                    % (transport_url, self.tmp, interval, port,
                       database or self.db.engine.url.render_as_string(
                           hide_password=False), extra))
        with open(self.log_path, 'wb') as log:
            proc = subprocess.Popen(
                [sys.executable, '-m', 'ironic_alloc.cmd.api',
                 '--config-file', conf_path],
                stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
        self.addCleanup(self._stop, proc)
        url = 'http://127.0.0.1:%d' % port
        deadline = time.monotonic() + 60
        while True:
            self.assertIsNone(proc.poll(), 'ironic-alloc-api exited')
            try:
                # NOTE: the root document needs neither the database nor
                # a conductor.
                if requests.get(url + '/', timeout=5).ok:
                    return url
            except requests.RequestException:
                pass
            self.assertLess(time.monotonic(), deadline, 'API not serving')
            time.sleep(0.2)

    @staticmethod
    def _stop(proc):
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait(30)

    def send(self, requests_to_send):
        """Send (method, url) requests, four at a time.

        :returns: [(status, faultstring or None)].
        """
        def one(request):
            method, url = request
            kwargs = ({'json': {'resource_class': 'gold'}}
                      if method == 'POST' else {})
            resp = requests.request(method, url, headers=HEADERS,
                                    timeout=REQUEST_TIMEOUT, **kwargs)
            fault = None
            if resp.status_code >= 400:
                fault = json.loads(resp.json()['error_message'])[
                    'faultstring']
            return resp.status_code, fault

        with futures.ThreadPoolExecutor(4) as pool:
            return list(pool.map(one, requests_to_send))

    def log_text(self):
        with open(self.log_path, errors='replace') as f:
            return f.read()

    def answered_lines(self, faults):
        """{cause: number of 'Answered 503' lines}, [(count, cause)] of
        the lines counting the ones left out.

        :param faults: the faultstrings the clients got: each line names
            one of them.
        """
        answered = collections.Counter()
        left_out = []
        for line in self.log_text().splitlines():
            match = _ANSWERED.search(line)
            if match:
                fault = [f for f in faults
                         if match.group('error').startswith(f)]
                self.assertEqual(1, len(fault), line)
                cause = match.group('cls')
                if cause == 'TemporaryFailure':
                    cause += ': ' + fault[0]
                answered[cause] += 1
            match = _LEFT_OUT.search(line)
            if match:
                left_out.append((int(match.group('count')),
                                 match.group('cause')))
        return answered, left_out

    def assert_quiet(self, ours_only=False):
        """No traceback, no ERROR line (of ironic_alloc and WSME only:
        oslo.messaging writes one per attempt to connect to the broker,
        not per request)."""
        text = self.log_text()
        self.assertNotIn('Traceback', text)
        self.assertNotIn('Server-side error', text)
        self.assertEqual([], [line for line in text.splitlines()
                              if ' ERROR ' in line and not (
                                  ours_only and ' ERROR oslo.messaging'
                                  in line)])

    def _database_down_requests(self, url, count):
        paths = [('GET', '/v1/nodes'), ('GET', '/v1/nodes/detail'),
                 ('POST', '/v1/allocations'), ('GET', '/v1/allocations'),
                 ('DELETE', '/v1/allocations/' + uuidutils.generate_uuid()),
                 ('GET', '/v1/conductors')]
        return [(m, url + p) for m, p in
                (paths[i % len(paths)] for i in range(count))]

    def _dead_database(self):
        # NOTE: MySQL, whose refused connection oslo.db classifies as a
        # connection error (see test_database_unreachable).
        return ('mysql+pymysql://nobody:secret@127.0.0.1:%d/ironic_alloc'
                % _free_port())

    def test_database_down_one_line_per_cause(self):
        url = self.start_api(LONG_INTERVAL, database=self._dead_database())
        answers = self.send(self._database_down_requests(url, 30))
        self.assertEqual({503}, {status for status, _ in answers}, answers)
        faults = {fault for _, fault in answers}
        self.assertEqual(1, len(faults), faults)
        answered, left_out = self.answered_lines(faults)
        self.assertEqual({'TemporaryFailure: ' + faults.pop(): 1},
                         dict(answered))
        # Nothing counted yet: no line of the cause came after the first.
        self.assertEqual([], left_out)
        self.assert_quiet()

    def test_lines_left_out_are_counted(self):
        interval = 2
        url = self.start_api(interval, database=self._dead_database())
        answers = self.send(self._database_down_requests(url, 20))
        # NOTE: a wait longer than the interval, so that the next answer's
        # line is written with the count of those left out before it.
        time.sleep(interval + 0.5)
        answers += self.send([('GET', url + '/v1/nodes')])
        self.assertEqual({503}, {status for status, _ in answers}, answers)
        answered, left_out = self.answered_lines(
            {fault for _, fault in answers})
        self.assertEqual(1, len(answered), answered)
        (cause, written), = answered.items()
        self.assertGreaterEqual(written, 2)
        self.assertNotEqual([], left_out)
        self.assertEqual({cause}, {c for _, c in left_out})
        # Every answer is in the log: written, or counted as left out.
        self.assertEqual(len(answers),
                         written + sum(n for n, _ in left_out))
        self.assert_quiet()

    def test_broker_down_one_line_per_cause(self):
        conductor = objects.Conductor.register(self.context,
                                               'broker-test-conductor', '')
        uuids = []
        for i in range(12):
            node = utils.make_available_node(self.context,
                                             name='broker-node-%d' % i)
            uuids.append(utils.make_allocation(
                self.context, conductor.id, state=states.ALLOCATION_ACTIVE,
                node_id=node.id).uuid)
        url = self.start_api(
            LONG_INTERVAL,
            transport_url='rabbit://guest:guest@127.0.0.1:%d/'
                          % _free_port(),
            extra='[api]\nrpc_call_timeout = 2\n')
        answers = self.send([('DELETE', '%s/v1/allocations/%s' % (url, u))
                             for u in uuids])
        self.assertEqual({503}, {status for status, _ in answers}, answers)
        answered, left_out = self.answered_lines(
            {fault for _, fault in answers})
        self.assertNotEqual({}, answered)
        # NOTE: a cause is the class of the answer: the broker answers
        # are one cause whatever their wording.
        self.assertEqual({1}, set(answered.values()), answered)
        self.assertEqual([], left_out)
        self.assert_quiet(ours_only=True)

    def test_internal_error_keeps_its_traceback(self):
        """A genuine 500 (here: a node row whose JSON column the database
        holds corrupt) is still logged with its traceback."""
        node = utils.make_available_node(self.context, name='corrupt')
        with self.db.engine.begin() as conn:
            conn.execute(sa.text("UPDATE nodes SET extra = '{not json' "
                                 "WHERE id = :id"), {'id': node.id})
        url = self.start_api(LONG_INTERVAL)
        answers = self.send([('GET', url + '/v1/nodes/corrupt')] * 3)
        self.assertEqual({500}, {status for status, _ in answers}, answers)
        text = self.log_text()
        self.assertEqual(3, text.count('Unexpected error in'), text)
        self.assertIn('Traceback', text)
        self.assertNotIn('Answered 503', text)
