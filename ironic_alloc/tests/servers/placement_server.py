"""A real OpenStack Placement on loopback, for the placement test tier and
the benchmark's placement backend (tools/bench imports it from here).

``PlacementServer`` writes a placement.conf (``[api] auth_strategy =
noauth2``, ``[placement_database] connection``), creates the schema with
``placement-manage db sync`` and serves ``placement.wsgi.api:application``
with gunicorn on a free loopback port, from the virtualenv built by
tools/setup-placement-venv.sh.  Its users only talk HTTP to it.

Two databases:

* SQLite (the default): one worker with one thread, the only set-up
  Placement supports on SQLite (concurrent writers fail with "database is
  locked");
* PostgreSQL (``database='postgresql'``): a database of its own, created
  on the server ``pg_url`` or ``IRONIC_ALLOC_PLACEMENT_PG`` names
  (default: the main cluster on port 5432, user openstack_citest) and
  dropped at clean-up; several gunicorn workers with several threads
  each, as in a deployment.
"""

import os
import shlex
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid

import sqlalchemy as sa

from ironic_alloc.tests.servers import gunicorn_server

# NOTE: computed at import: oslotest points tempfile at a per-test
# directory that is removed when the test ends, and Placement outlives the
# test that started it.
_TMP_ROOT = tempfile.gettempdir()

SETUP_HINT = 'run tools/setup-placement-venv.sh to create it'
# Where the PostgreSQL databases of the tests are created: a URL of an
# existing database on that server, for a user allowed to create others.
DEFAULT_PG_URL = ('postgresql+psycopg2://openstack_citest:openstack_citest'
                  '@127.0.0.1:5432/openstack_citest')
# noauth2 takes any token; "admin" gives the admin role.
TOKEN = 'admin'

# Bounds on waiting: they only keep a hang from stalling the run.
MANAGE_TIMEOUT = 120
# How long dropping a test database may be retried (see drop()).
DROP_TIMEOUT = 30


class PlacementError(Exception):
    """Placement could not be set up; the message says why, with logs."""


class DatabaseServerMissing(PlacementError):
    """The PostgreSQL server for Placement cannot be reached."""


def placement_venv_path():
    return gunicorn_server.venv_path('IRONIC_ALLOC_PLACEMENT_VENV',
                                     '.venv-placement')


def missing_reason(venv=None):
    """Why Placement cannot be run here, or None when it can."""
    return gunicorn_server.missing_reason(
        'Placement', venv or placement_venv_path(),
        ('placement-manage', 'gunicorn'), 'IRONIC_ALLOC_PLACEMENT_VENV',
        SETUP_HINT)


def _answers_with_noauth2(url):
    # NOTE: "/" needs no token; a listed resource does, so this also
    # proves that noauth2 is in place.
    req = urllib.request.Request(url + '/resource_providers',
                                 headers={'X-Auth-Token': TOKEN})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status == 200
    except (OSError, urllib.error.URLError):
        return False


class _PostgresDatabase:
    """A database of its own on the PostgreSQL server of the tests."""

    def __init__(self, server_url=None):
        self.server_url = sa.engine.make_url(
            server_url or os.environ.get('IRONIC_ALLOC_PLACEMENT_PG')
            or DEFAULT_PG_URL)
        self.name = 'ironic_alloc_placement_%s' % uuid.uuid4().hex[:12]
        self.url = self.server_url.set(database=self.name)

    def _execute(self, statement):
        engine = sa.create_engine(self.server_url,
                                  isolation_level='AUTOCOMMIT')
        try:
            with engine.connect() as conn:
                conn.execute(sa.text(statement))
        finally:
            engine.dispose()

    def create(self):
        try:
            self._execute('CREATE DATABASE %s' % self.name)
        except sa.exc.OperationalError as exc:
            raise DatabaseServerMissing(
                'PostgreSQL at %s is not usable (IRONIC_ALLOC_PLACEMENT_PG '
                'names another): %s'
                % (self.server_url.render_as_string(hide_password=True),
                   exc))

    def drop(self):
        # NOTE: FORCE ends the sessions Placement's workers may have left
        # behind, but PostgreSQL refuses it to a non-superuser while an
        # autovacuum worker is in the database ("must be a member of the
        # role whose process is being terminated"); a plain DROP stops
        # autovacuum workers itself.  Try both until one works.
        deadline = time.monotonic() + DROP_TIMEOUT
        while True:
            for statement in ('DROP DATABASE IF EXISTS %s WITH (FORCE)',
                              'DROP DATABASE IF EXISTS %s'):
                try:
                    self._execute(statement % self.name)
                    return
                except sa.exc.DBAPIError as exc:
                    failure = exc
            if time.monotonic() > deadline:
                raise failure
            time.sleep(0.5)


class PlacementServer:
    """A Placement process (module doc); ``url`` is its endpoint.

    :param database: 'sqlite' or 'postgresql'.
    :param workers: gunicorn worker processes (PostgreSQL only).
    :param threads: threads per worker (PostgreSQL only).
    :param pg_url: a URL of an existing database on the PostgreSQL server
        to create the database on (default: IRONIC_ALLOC_PLACEMENT_PG,
        else DEFAULT_PG_URL).
    :param options: {name: value} of placement.conf's [placement] section
        (Placement's own settings, e.g. randomize_allocation_candidates).
    """

    def __init__(self, database='sqlite', workers=2, threads=4, venv=None,
                 pg_url=None, options=None):
        if database not in ('sqlite', 'postgresql'):
            raise ValueError('database must be sqlite or postgresql')
        self.venv = venv or placement_venv_path()
        self.database = database
        if database == 'sqlite':
            workers = threads = 1
        self.workers = workers
        self.threads = threads
        self.workdir = None
        self.server = None
        self._pg = None
        self._pg_url = pg_url
        self.options = dict(options or {})

    @property
    def url(self):
        return self.server.url

    @property
    def access_log(self):
        """gunicorn's log, with a line per request Placement answered."""
        return self.server.log_path

    @property
    def process(self):
        return self.server.process if self.server else None

    def _connection(self):
        if self.database == 'sqlite':
            return 'sqlite:///%s' % os.path.join(self.workdir,
                                                 'placement.sqlite')
        database = _PostgresDatabase(self._pg_url)
        database.create()
        self._pg = database
        return database.url.render_as_string(hide_password=False)

    def _write_conf(self, connection):
        with open(os.path.join(self.workdir, 'placement.conf'), 'w') as f:
            f.write('[DEFAULT]\n'
                    'log_file = %s\n'
                    '[api]\n'
                    'auth_strategy = noauth2\n'
                    '[placement_database]\n'
                    'connection = %s\n'
                    % (os.path.join(self.workdir, 'placement.log'),
                       connection))
            if self.options:
                f.write('[placement]\n')
                f.writelines('%s = %s\n' % item
                             for item in sorted(self.options.items()))

    def _manage(self, *args):
        argv = [os.path.join(self.venv, 'bin', 'placement-manage'),
                '--config-file', os.path.join(self.workdir,
                                              'placement.conf')]
        argv += list(args)
        result = subprocess.run(argv, capture_output=True, text=True,
                                timeout=MANAGE_TIMEOUT, cwd=self.workdir,
                                stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            raise PlacementError('%s exited %d:\n%s\n%s' % (
                shlex.join(argv), result.returncode, result.stdout[-5000:],
                result.stderr[-5000:]))

    def start(self):
        reason = missing_reason(self.venv)
        if reason:
            raise PlacementError(reason)
        self.workdir = tempfile.mkdtemp(prefix='ironic-alloc-placement-',
                                        dir=_TMP_ROOT)
        self._write_conf(self._connection())
        self._manage('db', 'sync')
        env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=self.workdir)
        self.server = gunicorn_server.GunicornServer(
            self.venv, self.workdir,
            os.path.join(self.workdir, 'gunicorn.log'),
            _answers_with_noauth2)

        def arguments(port):
            # NOTE: Placement reads no command line of its own in the
            # WSGI process, so gunicorn's arguments are safe.
            return ['--bind', '127.0.0.1:%d' % port,
                    '--workers', str(self.workers),
                    '--threads', str(self.threads),
                    '--access-logfile', '-',
                    'placement.wsgi.api:application']

        if not self.server.start(arguments, env=env):
            log_path = self.server.log_path
            raise PlacementError(
                'Placement (gunicorn) did not answer GET %s/resource_'
                'providers within %ds; log %s:\n%s'
                % (self.url, gunicorn_server.START_TIMEOUT, log_path,
                   gunicorn_server.read_log(log_path)[-20000:]))

    def stop(self):
        if self.server is not None:
            self.server.stop()

    def logs(self):
        """The tails of Placement's and gunicorn's logs, for failures."""
        parts = []
        for name in ('placement.log', 'gunicorn.log'):
            path = os.path.join(self.workdir or '', name)
            if os.path.exists(path):
                parts.append('--- %s\n%s' % (
                    name, gunicorn_server.read_log(path)[-10000:]))
        return '\n'.join(parts)

    def cleanup(self):
        try:
            self.stop()
        finally:
            try:
                if self._pg is not None:
                    self._pg.drop()
            finally:
                if self.workdir:
                    shutil.rmtree(self.workdir, ignore_errors=True)
