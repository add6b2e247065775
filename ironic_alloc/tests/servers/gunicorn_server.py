"""Third-party services the test tiers run under gunicorn (Keystone,
Placement), each from a virtualenv of its own (tools/setup-*-venv.sh).

The tests (and the benchmark, tools/bench) only talk HTTP to them; this
module finds the virtualenv, runs the gunicorn process on a free loopback
port and stops it.
"""

import os
import signal
import socket
import subprocess
import time

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__),
                                         '..', '..', '..'))

# Bounds on waiting: they only keep a hang from stalling the run.
START_TIMEOUT = 60
STOP_TIMEOUT = 20


def venv_path(env_var, default_dir):
    """The virtualenv ``env_var`` names, else ``default_dir`` of the
    repository root."""
    return os.environ.get(env_var) or os.path.join(REPO_ROOT,
                                                   default_dir)


def missing_reason(what, venv, executables, env_var, hint):
    """Why ``what`` cannot be run from ``venv``, or None when it can."""
    for exe in executables:
        path = os.path.join(venv, 'bin', exe)
        if not os.access(path, os.X_OK):
            return ('%s virtualenv not found: %s is missing (%s; %s selects '
                    'another place)' % (what, path, hint, env_var))
    return None


def free_port():
    """A loopback TCP port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def read_log(path):
    """A log file's text, or why there is none."""
    try:
        with open(path, 'rb') as f:
            return f.read().decode('utf-8', 'replace')
    except OSError as exc:
        return '(no log: %s)' % exc


class GunicornServer:
    """One gunicorn process, in a session of its own, on a loopback port.

    :param ready: ``ready(url)`` is True once the service answers; it is
        called until then, or until the process exits.
    """

    def __init__(self, venv, workdir, log_path, ready):
        self.gunicorn = os.path.join(venv, 'bin', 'gunicorn')
        self.workdir = workdir
        self.log_path = log_path
        self.ready = ready
        self.process = None
        self.port = None

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.port

    def start(self, arguments, env=None):
        """Start gunicorn with ``arguments(port)`` and wait until it is
        ready.  A port taken between choosing and binding it costs another
        try on another port.

        :returns: False when it did not get ready (its log says why).
        """
        for attempt in range(3):
            self.port = free_port()
            argv = [self.gunicorn] + list(arguments(self.port))
            with open(self.log_path, 'ab') as log:
                log.write(('--- start %d on port %d\n'
                           % (attempt, self.port)).encode())
                log.flush()
                self.process = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, cwd=self.workdir, env=env,
                    start_new_session=True)
            if self._wait_ready():
                return True
            self.stop()
            if 'Address already in use' not in read_log(self.log_path):
                break
        return False

    def _wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            if self.ready(self.url):
                return True
            time.sleep(0.2)
        return False

    def stop(self):
        if self.process is None or self.process.poll() is not None:
            return
        # NOTE: gunicorn's master stops its workers on SIGTERM.
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(STOP_TIMEOUT)
