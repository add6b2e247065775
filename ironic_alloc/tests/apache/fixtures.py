"""The API under a real Apache httpd + mod_wsgi, with a real conductor.

``Deployment`` writes an ironic_alloc configuration (an SQLite file
shared by both processes, RabbitMQ, ``http_basic`` authentication), builds the schema with
``ironic-alloc-dbsync``, starts an ``ironic-alloc-conductor`` process and an
``apache2`` of its own (own ServerRoot, port, pid file and logs in a
temporary directory) whose virtual host is the shipped sample
``etc/ironic_alloc/ironic-alloc-api.conf`` with its paths replaced.

mod_wsgi runs the API from a virtualenv (``python-home``) that must be
made with the Python mod_wsgi is built for, and hold ironic_alloc
installed from this tree (Debian's ``libapache2-mod-wsgi-py3`` is built
for /usr/bin/python3)::

    /usr/bin/python3 -m venv /opt/ironic-alloc/venv
    /opt/ironic-alloc/venv/bin/pip install -c upper-constraints.txt \\
        -r requirements.txt .

The environment overrides the defaults:

IRONIC_ALLOC_APACHE_VENV
    That virtualenv (default /opt/ironic-alloc/venv, as in the sample).
IRONIC_ALLOC_APACHE_BIN, IRONIC_ALLOC_APACHE_MODULES
    The httpd binary (default apache2 or httpd on PATH or in /usr/sbin)
    and its modules directory (default Debian's /usr/lib/apache2/modules).
IRONIC_ALLOC_TEST_TRANSPORT_URL
    The RabbitMQ the API and conductor share (default the vhost of
    tools/test-multiprocess-setup.sh).
"""

import filecmp
import grp
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

import requests

from ironic_alloc.tests.multiprocess import fixtures as mp

REPO_ROOT = mp.REPO_ROOT
SAMPLE_VHOST = os.path.join(REPO_ROOT, 'etc', 'ironic_alloc',
                            'ironic-alloc-api.conf')
DEFAULT_VENV = '/opt/ironic-alloc/venv'
DEFAULT_MODULES = '/usr/lib/apache2/modules'
# The paths of the sample, replaced by the test's.
SAMPLE_WSGI_DIR = ('/opt/ironic-alloc/venv/lib/python3.11/site-packages/'
                   'ironic_alloc/wsgi')
SAMPLE_USER = 'user=ironic-alloc group=ironic-alloc'

USER = 'admin'
PASSWORD = 'apache-test-secret'
START_TIMEOUT = 60
STOP_TIMEOUT = 15


def venv_dir():
    return os.environ.get('IRONIC_ALLOC_APACHE_VENV') or DEFAULT_VENV


def apache_binary():
    configured = os.environ.get('IRONIC_ALLOC_APACHE_BIN')
    if configured:
        return configured
    path = '%s:/usr/sbin:/usr/local/sbin' % os.environ.get('PATH', '')
    return shutil.which('apache2', path=path) or \
        shutil.which('httpd', path=path)


def modules_dir():
    return os.environ.get('IRONIC_ALLOC_APACHE_MODULES') or DEFAULT_MODULES


def installed_wsgi_dir(venv):
    """Directory of ironic_alloc/wsgi/api.py in ``venv`` (asks its
    Python, as the sample's comment tells operators to)."""
    result = subprocess.run(
        [os.path.join(venv, 'bin', 'python'), '-c',
         'import ironic_alloc.wsgi.api as m; print(m.__file__)'],
        capture_output=True, text=True, timeout=60)
    if result.returncode:
        raise RuntimeError(result.stderr.strip().splitlines()[-1])
    return os.path.dirname(result.stdout.strip())


def stale_files(wsgi_dir):
    """Modules of the service whose installed copy differs from this tree.

    NOTE: the virtualenv holds a copy of the code (an operator's install
    is not editable); testing an old copy would prove nothing.
    """
    installed = os.path.dirname(wsgi_dir)
    source = os.path.join(REPO_ROOT, 'ironic_alloc')
    stale = []
    for dirpath, dirnames, filenames in os.walk(source):
        dirnames[:] = [d for d in dirnames
                       if d not in ('tests', '__pycache__')]
        for name in filenames:
            if not name.endswith('.py'):
                continue
            path = os.path.join(dirpath, name)
            relative = os.path.relpath(path, source)
            copy = os.path.join(installed, relative)
            if not os.path.exists(copy) or \
                    not filecmp.cmp(path, copy, shallow=False):
                stale.append(relative)
    return stale


def missing_reason():
    """Why Apache + mod_wsgi cannot run here, or None."""
    binary = apache_binary()
    if not binary:
        return 'apache2/httpd not found (Debian: apt-get install apache2)'
    module = os.path.join(modules_dir(), 'mod_wsgi.so')
    if not os.path.exists(module):
        return ('%s not found (Debian: apt-get install '
                'libapache2-mod-wsgi-py3)' % module)
    venv = venv_dir()
    if not os.path.exists(os.path.join(venv, 'bin', 'python')):
        return ('no virtualenv %s for mod_wsgi (see %s)'
                % (venv, __name__))
    try:
        wsgi_dir = installed_wsgi_dir(venv)
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        return 'ironic_alloc is not importable in %s: %s' % (venv, exc)
    stale = stale_files(wsgi_dir)
    if stale:
        return ('ironic_alloc in %s differs from this tree (%s...): '
                'reinstall it with %s/bin/pip install %s'
                % (venv, ', '.join(stale[:3]), venv, REPO_ROOT))
    return _rabbit_reason()


def _rabbit_reason():
    import kombu
    # NOTE: oslo.messaging's rabbit:// is kombu's amqp://.
    amqp_url = 'amqp://' + mp.transport_url().split('://', 1)[1]
    try:
        with kombu.Connection(amqp_url, connect_timeout=3) as conn:
            conn.ensure_connection(max_retries=1)
    except Exception as exc:
        return 'RabbitMQ %s not reachable (%s; %s)' % (
            mp._safe(mp.transport_url()), exc, mp.SETUP_HINT)
    return None


def _service_account():
    """User and group of httpd and the mod_wsgi daemon processes.

    NOTE: httpd refuses to serve as root; started by root it switches to
    ``nobody``, so the work directory and the database are given to that
    user.  Started by anyone else it keeps that user.
    """
    if os.geteuid() != 0:
        entry = pwd.getpwuid(os.geteuid())
    else:
        entry = pwd.getpwnam('nobody')
    return entry.pw_name, grp.getgrgid(entry.pw_gid).gr_name, \
        entry.pw_uid, entry.pw_gid


class Deployment:
    """One Apache (API) and one conductor process sharing a database."""

    def __init__(self, name):
        self.workdir = tempfile.mkdtemp(prefix='ironic-alloc-apache-%s-'
                                        % name, dir=mp._TMP_ROOT)
        self.user, self.group, self.uid, self.gid = _service_account()
        self.db_url = 'sqlite:///%s' % os.path.join(
            self.workdir, 'ironic-alloc.sqlite')
        self.port = None
        self.url = None
        self.apache = None
        self.conductor = None
        self.conf = os.path.join(self.workdir, 'ironic-alloc.conf')
        self.htpasswd = os.path.join(self.workdir, 'htpasswd')
        self.error_log = os.path.join(self.workdir, 'error.log')
        self.access_log = os.path.join(self.workdir, 'access.log')
        self.conductor_log = os.path.join(self.workdir, 'conductor.log')

    # Files

    def write_config(self):
        import bcrypt
        with open(self.htpasswd, 'w') as f:
            f.write('%s:%s\n' % (USER, bcrypt.hashpw(
                PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()))
        mp.Cluster._write(self.conf, {
            'DEFAULT': {'transport_url': mp.transport_url(),
                        'auth_strategy': 'http_basic',
                        'host': 'apache-%s' % os.path.basename(
                            self.workdir)[-8:]},
            'database': {'connection': self.db_url},
            'api': {'rpc_call_timeout': '10'},
            'oslo_middleware': {'http_basic_auth_user_file': self.htpasswd},
            'conductor': {'heartbeat_interval': '1',
                          'allocation_redrive_interval': '1',
                          'workers_pool_size': '16'},
        })

    def upgrade_schema(self):
        result = subprocess.run(
            [os.path.join(mp.BIN_DIR, 'ironic-alloc-dbsync'),
             '--config-file', self.conf, 'upgrade'],
            capture_output=True, text=True, timeout=120, cwd=self.workdir)
        if result.returncode:
            raise RuntimeError('ironic-alloc-dbsync upgrade failed: %s%s'
                               % (result.stdout, result.stderr))

    def _give_to_service_account(self):
        # NOTE: the SQLite file and its directory must be writable by the
        # daemon processes (SQLite creates its journal next to the file;
        # run by root it gives the journal the database file's owner).
        for dirpath, _dirs, files in os.walk(self.workdir):
            os.chown(dirpath, self.uid, self.gid)
            for name in files:
                os.chown(os.path.join(dirpath, name), self.uid, self.gid)
        os.chmod(self.workdir, 0o755)

    def vhost(self, venv, wsgi_dir):
        """The sample virtual host with this deployment's paths."""
        with open(SAMPLE_VHOST) as f:
            text = f.read()
        replacements = [
            (SAMPLE_WSGI_DIR, wsgi_dir),
            ('python-home=%s' % DEFAULT_VENV, 'python-home=%s' % venv),
            (SAMPLE_USER, 'user=%s group=%s' % (self.user, self.group)),
            ('Listen 6385', 'Listen 127.0.0.1:%d' % self.port),
            ('<VirtualHost *:6385>', '<VirtualHost 127.0.0.1:%d>'
             % self.port),
            ('/var/log/apache2/ironic-alloc-api_error.log', self.error_log),
            ('/var/log/apache2/ironic-alloc-api_access.log',
             self.access_log),
        ]
        for old, new in replacements:
            # NOTE: a sample that changed shape must fail here, not run
            # with its production paths.
            if old not in text:
                raise AssertionError('%s no longer contains %r: update '
                                     '%s' % (SAMPLE_VHOST, old, __name__))
            text = text.replace(old, new)
        return text

    def httpd_conf(self, vhost_path):
        modules = modules_dir()
        lines = [
            'ServerRoot %s' % self.workdir,
            'ServerName 127.0.0.1',
            'PidFile %s/httpd.pid' % self.workdir,
            'DefaultRuntimeDir %s' % self.workdir,
            'ErrorLog %s' % self.error_log,
            'LogLevel warn',
            'LogFormat "%h %l %u %t \\"%r\\" %>s %b" combined',
            'LoadModule mpm_event_module %s/mod_mpm_event.so' % modules,
            'LoadModule authz_core_module %s/mod_authz_core.so' % modules,
            'LoadModule wsgi_module %s/mod_wsgi.so' % modules,
            # NOTE: the daemon processes' sockets; httpd's user must reach
            # them.
            'WSGISocketPrefix %s/wsgi' % self.workdir,
            # NOTE: no Python in httpd's own processes: only the daemon
            # processes of the virtual host run the API.
            'WSGIRestrictEmbedded On',
        ]
        if os.geteuid() == 0:
            lines += ['User %s' % self.user, 'Group %s' % self.group]
        lines.append('Include %s' % vhost_path)
        return '\n'.join(lines) + '\n'

    # Processes

    def start(self):
        venv = venv_dir()
        wsgi_dir = installed_wsgi_dir(venv)
        self.write_config()
        self.upgrade_schema()
        self.conductor = mp.Process(
            'conductor', [os.path.join(mp.BIN_DIR, 'ironic-alloc-conductor'),
                          '--config-file', self.conf,
                          '--log-file', self.conductor_log],
            os.path.join(self.workdir, 'conductor.out'), self.workdir)
        for attempt in range(3):
            self.port = mp.free_port()
            vhost_path = os.path.join(self.workdir, 'ironic-alloc-api.conf')
            with open(vhost_path, 'w') as f:
                f.write(self.vhost(venv, wsgi_dir))
            httpd_conf = os.path.join(self.workdir, 'httpd.conf')
            with open(httpd_conf, 'w') as f:
                f.write(self.httpd_conf(vhost_path))
            self._give_to_service_account()
            env = dict(os.environ)
            # NOTE: how the vhost finds the configuration: mod_wsgi daemon
            # processes inherit httpd's environment (an operator sets it
            # in /etc/apache2/envvars).
            env['IRONIC_ALLOC_CONFIG_FILE'] = self.conf
            for var in ('PYTHONPATH', 'PYTHONHOME', 'VIRTUAL_ENV'):
                env.pop(var, None)
            with open(os.path.join(self.workdir, 'httpd.out'), 'ab') as out:
                self.apache = subprocess.Popen(
                    [apache_binary(), '-f', httpd_conf, '-DFOREGROUND'],
                    stdin=subprocess.DEVNULL, stdout=out,
                    stderr=subprocess.STDOUT, cwd=self.workdir, env=env,
                    start_new_session=True)
            self.url = 'http://127.0.0.1:%d' % self.port
            if self._wait_http():
                return
            self.stop_apache()
            if 'Address already in use' not in self.logs():
                break
        raise RuntimeError('Apache did not serve %s:\n%s'
                           % (self.url, self.logs()))

    def _wait_http(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.apache.poll() is not None:
                return False
            try:
                if requests.get(self.url + '/', timeout=5).status_code \
                        == 200:
                    return True
            except requests.RequestException:
                pass
            time.sleep(0.2)
        return False

    def stop_apache(self):
        """Stop httpd (SIGTERM to its parent stops the children)."""
        if self.apache is None:
            return
        if self.apache.poll() is None:
            self.apache.send_signal(signal.SIGTERM)
            try:
                self.apache.wait(STOP_TIMEOUT)
                return
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.apache.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.apache.wait(STOP_TIMEOUT)

    def cleanup(self, keep=False):
        self.stop_apache()
        if self.conductor is not None:
            self.conductor.stop()
        if not keep:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def logs(self, limit=4000):
        parts = []
        for path in (self.error_log, os.path.join(self.workdir, 'httpd.out'),
                     self.conductor_log):
            try:
                with open(path, 'rb') as f:
                    text = f.read().decode('utf-8', 'replace')
            except OSError:
                continue
            parts.append('--- %s\n%s' % (path, text[-limit:]))
        return '\n'.join(parts)
