"""The real service and the real client tools, each in its own process.

``Service`` runs the all-in-one ``ironic-alloc`` command (API and
conductor in one process, SQLite under a temporary state_path) on a free
loopback port.  ``ClientVenv`` locates the client tools' virtualenv built by
tools/setup-client-venv.sh and runs the ``openstack`` command and the
driver scripts of ``drivers/`` with it.

Nothing here imports the client libraries: they exist only in the client
virtualenv, whose versions never meet ours.
"""

import json
import os
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

# NOTE: computed at import: oslotest points tempfile at a per-test
# directory that is removed when the test ends, and a service outlives the
# test that started it.
_TMP_ROOT = tempfile.gettempdir()

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__),
                                         '..', '..', '..'))
DRIVERS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           'drivers')

# Bounds on waiting: they only keep a hang from stalling the run.
SERVICE_START_TIMEOUT = 60
SERVICE_STOP_TIMEOUT = 20
CLIENT_TIMEOUT = 120

SETUP_HINT = 'run tools/setup-client-venv.sh to create it'


class ServiceError(Exception):
    """The service did not start; the message ends with its log."""


def client_venv_path():
    return os.environ.get('IRONIC_ALLOC_CLIENT_VENV') or os.path.join(
        REPO_ROOT, '.venv-clients')


def free_port():
    """A TCP port nobody listens on at the moment of the call."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _tail(path, limit=20000):
    try:
        with open(path, 'rb') as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode('utf-8', 'replace')
    except OSError as exc:
        return '(no log: %s)' % exc


class ClientVenv:
    """The client tools' virtualenv and how to run things in it."""

    def __init__(self, path=None):
        self.path = path or client_venv_path()
        self.python = os.path.join(self.path, 'bin', 'python')
        self.openstack = os.path.join(self.path, 'bin', 'openstack')

    def missing_reason(self):
        """Why the virtualenv cannot be used, or None when it can."""
        for exe in (self.python, self.openstack):
            if not os.access(exe, os.X_OK):
                return ('client tools virtualenv not found: %s is missing '
                        '(%s; IRONIC_ALLOC_CLIENT_VENV selects another '
                        'place)' % (exe, SETUP_HINT))
        return None

    def environ(self, home):
        """A clean environment: no OS_* settings, no clouds.yaml of ours.

        :param home: an empty directory used as HOME, so that neither a
            user's clouds.yaml nor their caches take part.
        """
        env = {key: value for key, value in os.environ.items()
               if not key.startswith('OS_')
               and key not in ('PYTHONPATH', 'VIRTUAL_ENV')}
        env.update(HOME=home, XDG_CONFIG_HOME=os.path.join(home, '.config'),
                   XDG_CACHE_HOME=os.path.join(home, '.cache'),
                   PYTHONUNBUFFERED='1', PYTHONDONTWRITEBYTECODE='1')
        return env

    def run(self, argv, home, timeout=CLIENT_TIMEOUT, stdin=None):
        """Run ``argv`` and return a ``subprocess.CompletedProcess``."""
        return subprocess.run(argv, input=stdin, capture_output=True,
                              text=True, timeout=timeout,
                              env=self.environ(home), cwd=home)



class OpenStackShell:
    """A long-lived ``openstack`` (drivers/osc_shell.py) for one test.

    ``run`` has the contract of ``ClientVenv.run`` for the argv of an
    ``openstack`` command; the process starts with the first command, with
    the environment ``ClientVenv.run`` would give it, and ``close`` ends
    it.
    """

    def __init__(self, venv, home):
        self.venv = venv
        self.home = home
        self.process = None

    def _start(self):
        self.process = subprocess.Popen(
            [self.venv.python, os.path.join(DRIVERS_DIR, 'osc_shell.py')],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True,
            env=self.venv.environ(self.home), cwd=self.home)

    def run(self, argv, stdin=None, timeout=CLIENT_TIMEOUT):
        """Run ``argv`` (``[<path of openstack>, args...]``)."""
        if self.process is None:
            self._start()
        request = {'argv': list(argv[1:]), 'stdin': stdin}
        try:
            self.process.stdin.write(json.dumps(request) + '\n')
            self.process.stdin.flush()
        except BrokenPipeError:
            return self._died(argv)
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            self.close()
            raise subprocess.TimeoutExpired(argv, timeout)
        line = self.process.stdout.readline()
        if not line:
            return self._died(argv)
        answer = json.loads(line)
        return subprocess.CompletedProcess(argv, answer['returncode'],
                                           answer['stdout'], answer['stderr'])

    def _died(self, argv):
        status = self.process.wait()
        self.process = None
        return subprocess.CompletedProcess(
            argv, status or 1, '', 'osc_shell.py exited with status %s'
            % status)

    def close(self):
        process, self.process = self.process, None
        if process is None:
            return
        process.stdin.close()
        try:
            process.wait(timeout=SERVICE_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()


class Service:
    """One ``ironic-alloc`` process with its own state directory."""

    def __init__(self, executable=None, extra_config=None, command=None):
        """:param command: the argv that runs the service (the option
            naming its configuration file is appended), for example
            ``[sys.executable, '-m', 'ironic_alloc.cmd.standalone']`` to
            run the code of the tree the tests come from; default: the
            ``ironic-alloc`` console script (``executable``, or the one
            next to the running Python).
        """
        self.executable = executable or os.path.join(
            os.path.dirname(sys.executable), 'ironic-alloc')
        self.command = list(command or [self.executable])
        self.extra_config = extra_config or {}
        self.workdir = None
        self.port = None
        self.process = None
        self.log_path = None
        self.host = 'clients-%s' % uuid.uuid4().hex[:8]

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.port

    def _config(self):
        sections = {
            'DEFAULT': {
                'state_path': self.workdir,
                'host': self.host,
                'debug': 'true',
            },
            'api': {'host_ip': '127.0.0.1', 'port': str(self.port)},
            'conductor': {
                # NOTE: long enough that clients see the transient states,
                # short enough to keep the tier fast.
                'fake_action_delay': '0.05',
                'heartbeat_interval': '2',
                'allocation_redrive_interval': '1',
                'graceful_shutdown_timeout': '5',
            },
        }
        for group, options in self.extra_config.items():
            sections.setdefault(group, {}).update(options)
        lines = []
        for group, options in sections.items():
            lines.append('[%s]' % group)
            lines.extend('%s = %s' % item for item in options.items())
            lines.append('')
        return '\n'.join(lines)

    def start(self):
        if not os.access(self.command[0], os.X_OK):
            raise ServiceError('%s not found: install the service into the '
                               'virtualenv running the tests (pip install '
                               '-e .)' % self.command[0])
        self.workdir = tempfile.mkdtemp(prefix='ironic-alloc-clients-',
                                        dir=_TMP_ROOT)
        self.log_path = os.path.join(self.workdir, 'service.log')
        # NOTE: the port is free when picked but may be taken before the
        # service binds it; a start that fails on that is retried on
        # another port.
        for attempt in range(3):
            self.port = free_port()
            conf = os.path.join(self.workdir, 'ironic-alloc.conf')
            with open(conf, 'w') as f:
                f.write(self._config())
            log_start = self.log_size()
            with open(self.log_path, 'ab') as log:
                log.write(('--- start %d on port %d\n'
                           % (attempt, self.port)).encode())
                log.flush()
                self.process = subprocess.Popen(
                    self.command + ['--config-file', conf],
                    stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, cwd=self.workdir,
                    start_new_session=True)
            if self._wait_ready():
                return
            if (self.process.poll() is None
                    or 'Address already in use'
                    not in self.log_since(log_start)):
                break
        status = self.process.poll()
        self.stop()
        if status is None:
            what = 'did not answer GET %s/ within %ds' % (
                self.url, SERVICE_START_TIMEOUT)
        else:
            what = 'exited with status %d before answering GET %s/' % (
                status, self.url)
        raise ServiceError('the service %s; command: %s; log %s:\n%s'
                           % (what, shlex.join(self.process.args),
                              self.log_path, _tail(self.log_path)))

    def _wait_ready(self):
        """True once GET / answers 200; False when the process died first
        or the time is up."""
        deadline = time.monotonic() + SERVICE_START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(self.url + '/', timeout=5) as r:
                    if r.status == 200:
                        json.load(r)
                        return True
            except (OSError, urllib.error.URLError, ValueError):
                pass
            time.sleep(0.2)
        return False

    def stop(self):
        """SIGTERM, then SIGKILL after SERVICE_STOP_TIMEOUT; returns the
        exit status (None when it was not running)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(SERVICE_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(SERVICE_STOP_TIMEOUT)
        return self.process.returncode

    def cleanup(self):
        """Stop the service and remove its state directory."""
        try:
            self.stop()
        finally:
            if self.workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)

    def log_size(self):
        try:
            return os.path.getsize(self.log_path)
        except (OSError, TypeError):
            return 0

    def log_since(self, offset, limit=200000):
        """The service log written since ``offset`` (its last ``limit``
        bytes)."""
        try:
            with open(self.log_path, 'rb') as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(offset, size - limit))
                return f.read().decode('utf-8', 'replace')
        except (OSError, TypeError) as exc:
            return '(no log: %s)' % exc
