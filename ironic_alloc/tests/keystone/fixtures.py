"""A real Keystone for the keystone tier, and tokens from it.

``Keystone`` bootstraps Keystone in a temporary directory the way a
deployment does (``keystone-manage db_sync``, ``fernet_setup``,
``credential_setup``, ``bootstrap`` with the admin password, a region and
the identity endpoints), on SQLite with fernet tokens, and serves its WSGI
application (``keystone.wsgi.api:application``) with gunicorn on a free
loopback port.  Keystone and gunicorn live in the virtualenv built by
tools/setup-keystone-venv.sh; the tests only talk HTTP to them, through
keystoneauth1 from the test virtualenv.

``Identities`` creates the test domain, the projects (owner, lessee,
other) and, on demand, one user per (role, scope, project) with its role
assignment, and hands out tokens for them: ``token('member', 'project',
'owner')``, ``token('reader', 'system')``.
"""

import contextlib
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid

from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session

from ironic_alloc.tests.servers import gunicorn_server

# NOTE: computed at import: oslotest points tempfile at a per-test
# directory that is removed when the test ends, and Keystone outlives the
# test that started it.
_TMP_ROOT = tempfile.gettempdir()

SETUP_HINT = 'run tools/setup-keystone-venv.sh to create it'
ADMIN_PASSWORD = 'admin-%s' % uuid.uuid4().hex
REGION = 'RegionOne'
DOMAIN = 'ironic-alloc-tests'
PROJECTS = ('owner', 'lessee', 'other')
ROLES = ('admin', 'member', 'reader')
# The user keystonemiddleware of the service under test validates tokens
# as, with the "service" role, in the "service" project.
SERVICE_USER = 'ironic-alloc'
SERVICE_PROJECT = 'service'

# Bounds on waiting: they only keep a hang from stalling the run.
MANAGE_TIMEOUT = 120
HTTP_TIMEOUT = 30


class KeystoneError(Exception):
    """Keystone could not be set up; the message says why, with logs."""


def keystone_venv_path():
    return gunicorn_server.venv_path('IRONIC_ALLOC_KEYSTONE_VENV',
                                     '.venv-keystone')


def missing_reason(venv=None):
    """Why Keystone cannot be run here, or None when it can."""
    return gunicorn_server.missing_reason(
        'Keystone', venv or keystone_venv_path(),
        ('keystone-manage', 'gunicorn'), 'IRONIC_ALLOC_KEYSTONE_VENV',
        SETUP_HINT)


def _ini(sections):
    lines = []
    for group, options in sections.items():
        lines.append('[%s]' % group)
        lines.extend('%s = %s' % item for item in options.items())
        lines.append('')
    return '\n'.join(lines)


def _answers_v3(url):
    try:
        with urllib.request.urlopen(url + '/v3', timeout=5) as resp:
            if resp.status == 200:
                json.load(resp)
                return True
    except (OSError, urllib.error.URLError, ValueError):
        pass
    return False


class _Server(gunicorn_server.GunicornServer):
    """One gunicorn process serving Keystone with one configuration file.

    NOTE: Keystone parses the process's command line as its own
    (oslo.config), so gunicorn gets no arguments: it reads its settings
    from gunicorn.conf.py in its working directory.  One worker with one
    thread: concurrent writers on SQLite fail with "database is locked"
    (last_active_at is written on every password authentication), and the
    tests send one request at a time anyway.
    """

    def __init__(self, venv, workdir, name, keystone_conf):
        workdir = os.path.join(workdir, name)
        os.makedirs(workdir)
        super().__init__(venv, workdir,
                         os.path.join(workdir, 'gunicorn.log'), _answers_v3)
        self.keystone_conf = keystone_conf

    def _settings(self, port):
        with open(os.path.join(self.workdir, 'gunicorn.conf.py'), 'w') as f:
            f.write('bind = %r\n' % ('127.0.0.1:%d' % port)
                    + 'workers = 1\nthreads = 1\n'
                    + "wsgi_app = 'keystone.wsgi.api:application'\n"
                    + 'raw_env = [%r]\n' % (
                        'OS_KEYSTONE_CONFIG_FILES=%s' % self.keystone_conf)
                    + "accesslog = '-'\n")
        return []

    def start(self):
        if not super().start(self._settings):
            raise KeystoneError(
                'Keystone (gunicorn) did not answer GET %s/v3 within %ds; '
                'log %s:\n%s' % (
                    self.url, gunicorn_server.START_TIMEOUT, self.log_path,
                    gunicorn_server.read_log(self.log_path)[-20000:]))


class Keystone:
    """A bootstrapped Keystone on SQLite with fernet tokens (module doc).

    ``url`` is the public identity endpoint (…/v3).  ``issue_expiring``
    gets tokens from a second server on the same database and keys whose
    ``[token]expiration`` is a few seconds, so that a test can hold a
    genuinely expired token.
    """

    SHORT_EXPIRATION = 2

    def __init__(self, venv=None):
        self.venv = venv or keystone_venv_path()
        self.workdir = None
        self.server = None
        self._short_server = None

    @property
    def url(self):
        return self.server.url + '/v3'

    @property
    def database(self):
        return os.path.join(self.workdir, 'keystone.sqlite')

    def _conf(self, name, expiration):
        path = os.path.join(self.workdir, '%s.conf' % name)
        with open(path, 'w') as f:
            f.write(_ini({
                'DEFAULT': {'log_file': os.path.join(self.workdir,
                                                     '%s.log' % name)},
                'database': {'connection': 'sqlite:///%s' % self.database},
                # NOTE: the cheapest bcrypt cost: every user and token
                # made by the tests hashes or checks a password.
                'identity': {'password_hash_rounds': '4'},
                'token': {'provider': 'fernet',
                          'expiration': str(expiration)},
                'fernet_tokens': {'key_repository': os.path.join(
                    self.workdir, 'fernet-keys')},
                'fernet_receipts': {'key_repository': os.path.join(
                    self.workdir, 'fernet-keys')},
                'credential': {'key_repository': os.path.join(
                    self.workdir, 'credential-keys')},
            }))
        return path

    def _manage(self, conf, *args):
        argv = [os.path.join(self.venv, 'bin', 'keystone-manage'),
                '--config-file', conf] + list(args)
        result = subprocess.run(argv, capture_output=True, text=True,
                                timeout=MANAGE_TIMEOUT, cwd=self.workdir,
                                stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            raise KeystoneError('%s exited %d:\n%s\n%s' % (
                shlex.join(argv), result.returncode, result.stdout[-5000:],
                result.stderr[-5000:]))

    def start(self):
        reason = missing_reason(self.venv)
        if reason:
            raise KeystoneError(reason)
        self.workdir = tempfile.mkdtemp(prefix='ironic-alloc-keystone-',
                                        dir=_TMP_ROOT)
        conf = self._conf('keystone', 3600)
        self.server = _Server(self.venv, self.workdir, 'public', conf)
        # NOTE: the endpoints name the port, so it is picked before the
        # bootstrap; keystone-manage only writes the database.
        user = ['--keystone-user', str(os.getuid()),
                '--keystone-group', str(os.getgid())]
        self._manage(conf, 'db_sync')
        # NOTE: in SQLite's default journal mode a reader blocks a writer
        # until it finishes, and Keystone holds a read transaction while
        # it writes last_active_at on password authentication ("database
        # is locked").  Write-ahead logging (kept in the file) lets both
        # proceed, as a server database would.
        with contextlib.closing(sqlite3.connect(self.database)) as db:
            db.execute('PRAGMA journal_mode=WAL')
        self._manage(conf, 'fernet_setup', *user)
        self._manage(conf, 'credential_setup', *user)
        self.server.start()
        self._manage(conf, 'bootstrap',
                     '--bootstrap-password', ADMIN_PASSWORD,
                     '--bootstrap-region-id', REGION,
                     '--bootstrap-admin-url', self.url,
                     '--bootstrap-internal-url', self.url,
                     '--bootstrap-public-url', self.url)

    def issue_expiring(self, username, password, project_id):
        """A project-scoped token that is expired when this returns."""
        if self._short_server is None:
            conf = self._conf('short-tokens', self.SHORT_EXPIRATION)
            self._short_server = _Server(self.venv, self.workdir,
                                         'short-tokens', conf)
            self._short_server.start()
        auth = v3.Password(auth_url=self._short_server.url + '/v3',
                           username=username, password=password,
                           user_domain_name=DOMAIN, project_id=project_id)
        access = auth.get_access(ks_session.Session())
        # NOTE: waiting is the only way to age a real token; the wait ends
        # one second past the expiry Keystone wrote into it.
        remaining = (access.expires.timestamp() - time.time()) + 1
        if remaining > 0:
            time.sleep(remaining)
        return access.auth_token

    def logs(self):
        """The tails of Keystone's and gunicorn's logs, for failures."""
        parts = []
        for name in ('keystone.log', 'short-tokens.log',
                     'public/gunicorn.log', 'short-tokens/gunicorn.log'):
            path = os.path.join(self.workdir or '', name)
            if os.path.exists(path):
                parts.append('--- %s\n%s' % (
                    name, gunicorn_server.read_log(path)[-10000:]))
        return '\n'.join(parts)

    def cleanup(self):
        try:
            for server in (self._short_server, self.server):
                if server is not None:
                    server.stop()
        finally:
            if self.workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)


class Identities:
    """The test domain, projects, users and their tokens in ``keystone``.

    Users are made on first use, one per (role, scope, project), with a
    random password, and their tokens are cached.
    """

    def __init__(self, keystone):
        self.keystone = keystone
        self.admin = ks_session.Session(auth=v3.Password(
            auth_url=keystone.url, username='admin',
            password=ADMIN_PASSWORD, user_domain_id='default',
            system_scope='all'))
        self.domain_id = self._create('domains', 'domain',
                                      {'name': DOMAIN})['id']
        self.project_ids = {
            name: self._create('projects', 'project',
                               {'name': name, 'domain_id': self.domain_id})
            ['id'] for name in PROJECTS}
        self.role_ids = {role['name']: role['id']
                         for role in self._get('/roles')['roles']}
        # NOTE: recent bootstraps create the "service" role too.
        if 'service' not in self.role_ids:
            self.role_ids['service'] = self._create(
                'roles', 'role', {'name': 'service'})['id']
        self.service_project_id = self._create(
            'projects', 'project', {'name': SERVICE_PROJECT,
                                    'domain_id': self.domain_id})['id']
        self.service_password = uuid.uuid4().hex
        service_user = self._user(SERVICE_USER, self.service_password)
        self._put('/projects/%s/users/%s/roles/%s'
                  % (self.service_project_id, service_user,
                     self.role_ids['service']))
        # NOTE: oslo.limit reads every project's limits and the service's
        # endpoint, which Keystone shows to system readers.
        self._put('/system/users/%s/roles/%s'
                  % (service_user, self.role_ids['reader']))
        # The service and endpoint the limits of the service under test
        # are registered for ([oslo_limit]endpoint_id).
        self.limits_service_id = self._create('services', 'service', {
            'type': 'ironic-alloc-limits', 'name': 'ironic-alloc-limits'})[
                'id']
        self.limits_endpoint_id = self._create('endpoints', 'endpoint', {
            'service_id': self.limits_service_id, 'interface': 'public',
            'url': 'http://127.0.0.1/ironic-alloc-limits',
            'region_id': REGION})['id']
        self._users = {}
        self._tokens = {}
        self._catalog = {}

    def _request(self, method, path, body=None):
        resp = self.admin.request(
            path, method, json=body, timeout=HTTP_TIMEOUT,
            endpoint_filter={'service_type': 'identity',
                             'interface': 'public'})
        return resp.json() if resp.content else None

    def _get(self, path):
        return self._request('GET', path)

    def _put(self, path):
        return self._request('PUT', path)

    def _create(self, collection, kind, body):
        return self._request('POST', '/' + collection, {kind: body})[kind]

    def catalog_endpoint(self, service_type, url):
        """Register a public endpoint of ``service_type`` at ``url`` in
        REGION, as a deployment registers its services, so that clients
        find the service in their token's catalog; once per service type.
        """
        if service_type not in self._catalog:
            service = self._create('services', 'service', {
                'type': service_type, 'name': service_type})
            self._create('endpoints', 'endpoint', {
                'service_id': service['id'], 'interface': 'public',
                'url': url, 'region_id': REGION})
            self._catalog[service_type] = url
        return self._catalog[service_type]

    def _user(self, name, password):
        return self._create('users', 'user', {
            'name': name, 'password': password,
            'domain_id': self.domain_id})['id']

    def user(self, role, scope='project', project='owner'):
        """(name, password) of the user with ``role`` on the system
        (``scope='system'``) or on ``project``; made on first use."""
        key = (role, scope, project if scope == 'project' else None)
        if key not in self._users:
            name = '-'.join(filter(None, ('user',) + key))
            password = uuid.uuid4().hex
            user_id = self._user(name, password)
            if scope == 'system':
                self._put('/system/users/%s/roles/%s'
                          % (user_id, self.role_ids[role]))
            else:
                self._put('/projects/%s/users/%s/roles/%s'
                          % (self.project_ids[project], user_id,
                             self.role_ids[role]))
            self._users[key] = (name, password)
        return self._users[key]

    def _auth(self, role, scope, project):
        name, password = self.user(role, scope, project)
        scoping = ({'system_scope': 'all'} if scope == 'system'
                   else {'project_id': self.project_ids[project]})
        return v3.Password(auth_url=self.keystone.url, username=name,
                           password=password, user_domain_name=DOMAIN,
                           **scoping)

    def token(self, role, scope='project', project='owner'):
        """A valid token of ``role`` scoped to the system or ``project``.

        :param scope: 'system' or 'project'.
        :param project: one of PROJECTS (ignored for system scope).
        """
        key = (role, scope, project if scope == 'project' else None)
        if key not in self._tokens:
            auth = self._auth(role, scope, project)
            self._tokens[key] = auth.get_token(ks_session.Session())
        return self._tokens[key]

    def service_token(self):
        """A token of the service user (role "service"), as another
        OpenStack service sends it in X-Service-Token."""
        auth = v3.Password(auth_url=self.keystone.url,
                           username=SERVICE_USER,
                           password=self.service_password,
                           user_domain_name=DOMAIN,
                           project_name=SERVICE_PROJECT,
                           project_domain_name=DOMAIN)
        return auth.get_token(ks_session.Session())

    def access(self, role, scope='project', project='owner'):
        """keystoneauth1's AccessInfo of a fresh token (ids, roles...)."""
        auth = self._auth(role, scope, project)
        return auth.get_access(ks_session.Session())

    def revoked_token(self, role='member', project='owner'):
        """A token of ``role`` on ``project`` that Keystone revoked."""
        token = self._auth(role, 'project', project).get_token(
            ks_session.Session())
        self.admin.request('/auth/tokens', 'DELETE',
                           headers={'X-Subject-Token': token},
                           timeout=HTTP_TIMEOUT,
                           endpoint_filter={'service_type': 'identity',
                                            'interface': 'public'})
        return token

    def expired_token(self, role='member', project='owner'):
        """A token of ``role`` on ``project`` past its expiry."""
        name, password = self.user(role, 'project', project)
        return self.keystone.issue_expiring(name, password,
                                            self.project_ids[project])

    def registered_limit(self, resource_name, default_limit):
        """Register a default limit of the service under test, as an
        operator does with ``openstack registered limit create``."""
        self._request('POST', '/registered_limits', {'registered_limits': [{
            'service_id': self.limits_service_id, 'region_id': REGION,
            'resource_name': resource_name,
            'default_limit': default_limit}]})

    def project_limit(self, project, resource_name, resource_limit):
        """Set the limit of ``project`` (one of PROJECTS), as
        ``openstack limit create --project`` does."""
        self._request('POST', '/limits', {'limits': [{
            'service_id': self.limits_service_id, 'region_id': REGION,
            'project_id': self.project_ids[project],
            'resource_name': resource_name,
            'resource_limit': resource_limit}]})

    def oslo_limit_config(self):
        """The [oslo_limit] section of the service under test."""
        return {
            'endpoint_id': self.limits_endpoint_id,
            'auth_type': 'password',
            'auth_url': self.keystone.url,
            'username': SERVICE_USER,
            'password': self.service_password,
            'user_domain_name': DOMAIN,
            'system_scope': 'all',
        }

    def authtoken_config(self):
        """The [keystone_authtoken] section of the service under test."""
        return {
            'www_authenticate_uri': self.keystone.url,
            'auth_url': self.keystone.url,
            'auth_type': 'password',
            'username': SERVICE_USER,
            'password': self.service_password,
            'user_domain_name': DOMAIN,
            'project_name': SERVICE_PROJECT,
            'project_domain_name': DOMAIN,
            'region_name': REGION,
            'service_token_roles': 'service',
            'service_token_roles_required': 'true',
            'http_request_max_retries': '1',
            # NOTE: no token cache, so a revoked token is refused at once.
            'token_cache_time': '-1',
        }
