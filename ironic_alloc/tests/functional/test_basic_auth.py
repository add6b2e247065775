"""auth_strategy = http_basic over real HTTP: the whole application served
by cheroot, an htpasswd file with bcrypt hashes."""

import base64
import http.client
import json
import logging
import os
import subprocess
import sys

import bcrypt
import fixtures
from oslo_config import cfg

from ironic_alloc.api import app as api_app
from ironic_alloc.api import hooks
from ironic_alloc.api.middleware import basic_auth
from ironic_alloc.common import exception
from ironic_alloc.common import wsgi_service
from ironic_alloc.conf import default
from ironic_alloc.tests import base


def htpasswd_line(user, password):
    """What ``htpasswd -B`` writes (its $2y$ prefix included)."""
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode()
    return '%s:$2y$%s\n' % (user, hashed[4:])


def basic(user, password):
    pair = ('%s:%s' % (user, password)).encode()
    return 'Basic ' + base64.b64encode(pair).decode()


class TestBasicAuth(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.users = self.useFixture(fixtures.TempDir()).join('htpasswd')
        self.write_users(htpasswd_line('alice', 'wonderland')
                         + '# operators\n\n'
                         + htpasswd_line('bob', 'builder'))
        self.config(transport_url='fake://', auth_strategy='http_basic',
                    http_basic_auth_user_file=self.users)
        hooks.reset_rpcapi()
        self.addCleanup(hooks.reset_rpcapi)
        self.log = self.useFixture(fixtures.FakeLogger(
            name='ironic_alloc.api.middleware.basic_auth',
            level=logging.INFO))
        self.server = wsgi_service.WSGIService(api_app.setup_app, port=0)
        self.addCleanup(self.server.stop)
        self.server.start()

    def write_users(self, text):
        """Replace the file as ``htpasswd`` does: a new file renamed over
        the old one."""
        tmp = self.users + '.tmp'
        with open(tmp, 'w') as f:
            f.write(text)
        os.replace(tmp, self.users)

    def get(self, path, authorization=None):
        conn = http.client.HTTPConnection('127.0.0.1', self.server.port,
                                          timeout=30)
        self.addCleanup(conn.close)
        headers = {'X-OpenStack-Ironic-API-Version': 'latest'}
        if authorization is not None:
            headers['Authorization'] = authorization
        conn.request('GET', path, headers=headers)
        resp = conn.getresponse()
        return resp, resp.read()

    def assertRefused(self, authorization, message):
        resp, body = self.get('/v1/nodes', authorization)
        self.assertEqual(401, resp.status, body)
        self.assertEqual('Basic realm="Baremetal API"',
                         resp.getheader('WWW-Authenticate'))
        self.assertEqual('application/json', resp.getheader('Content-Type'))
        fault = json.loads(json.loads(body)['error_message'])
        self.assertEqual({'faultcode': 'Client', 'faultstring': message,
                          'debuginfo': None}, fault)
        self.assertTrue(resp.getheader('X-OpenStack-Request-Id'))

    def assertAccepted(self, authorization):
        resp, body = self.get('/v1/nodes', authorization)
        self.assertEqual(200, resp.status, body)
        self.assertEqual({'nodes': []}, json.loads(body))

    def test_right_password(self):
        self.assertAccepted(basic('alice', 'wonderland'))
        self.assertAccepted(basic('bob', 'builder'))
        # The scheme is case-insensitive (RFC 7617).
        self.assertAccepted(basic('bob', 'builder').replace('Basic',
                                                            'basic'))

    def test_wrong_password(self):
        self.assertRefused(basic('alice', 'builder'),
                           'Invalid user name or password.')
        self.assertIn('HTTP basic authentication of user alice refused',
                      self.log.output)

    def test_unknown_user(self):
        self.assertRefused(basic('mallory', 'wonderland'),
                           'Invalid user name or password.')

    def test_password_too_long_for_bcrypt(self):
        self.assertRefused(basic('alice', 'wonderland' + 'x' * 100),
                           'Invalid user name or password.')

    def test_missing_or_garbled_credentials(self):
        missing = ('Authentication required: HTTP basic credentials are '
                   'missing or malformed.')
        no_colon = 'Basic ' + base64.b64encode(b'alice').decode()
        latin1 = 'Basic ' + base64.b64encode(b'\xe9:x').decode()
        for authorization in (None, '', 'Basic', 'Basic ', 'Basic !!!',
                              'Basic YWxpY2U6d29uZGVybGFuZA',  # no padding
                              no_colon, latin1, 'Bearer abc',
                              'Digest username="alice"'):
            self.assertRefused(authorization, missing)

    def test_version_documents_are_public(self):
        for path in ('/', '/v1'):
            resp, _body = self.get(path)
            self.assertEqual(200, resp.status, path)

    def test_file_reread_when_it_changes(self):
        self.assertAccepted(basic('alice', 'wonderland'))
        self.write_users(htpasswd_line('alice', 'looking-glass')
                         + htpasswd_line('carol', 'singer'))
        self.assertRefused(basic('alice', 'wonderland'),
                           'Invalid user name or password.')
        self.assertAccepted(basic('alice', 'looking-glass'))
        self.assertAccepted(basic('carol', 'singer'))
        self.assertRefused(basic('bob', 'builder'),
                           'Invalid user name or password.')
        self.assertIn('Re-read %s: 2 user(s)' % self.users, self.log.output)

    def test_file_rewritten_in_place(self):
        with open(self.users, 'a') as f:
            f.write(htpasswd_line('dave', 'diver'))
        self.assertAccepted(basic('dave', 'diver'))
        self.assertAccepted(basic('alice', 'wonderland'))

    def test_broken_file_keeps_the_users_read_before(self):
        self.write_users('alice:{SHA}notbcrypt\n')
        self.assertAccepted(basic('alice', 'wonderland'))
        self.assertIn('Cannot use the changed user file %s' % self.users,
                      self.log.output)
        self.assertIn('line 1 (user alice) is not a bcrypt hash',
                      self.log.output)
        os.unlink(self.users)
        self.assertAccepted(basic('bob', 'builder'))
        self.write_users(htpasswd_line('erin', 'engineer'))
        self.assertAccepted(basic('erin', 'engineer'))
        self.assertRefused(basic('alice', 'wonderland'),
                           'Invalid user name or password.')


class TestUserFileAtStartUp(base.TestCase):
    """A file the service cannot use stops it from starting."""

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.config(auth_strategy='http_basic')

    def _start_error(self, path):
        self.config(http_basic_auth_user_file=path)
        exc = self.assertRaises(exception.ConfigInvalid, api_app.setup_app)
        self.assertIn('[DEFAULT]http_basic_auth_user_file %s: ' % path,
                      str(exc))
        return str(exc)

    def test_missing(self):
        path = os.path.join(self.dir, 'nope')
        self.assertIn('No such file or directory', self._start_error(path))

    def test_unreadable(self):
        # NOTE: a directory, since the tests may run as root, who can
        # read any file whatever its mode.
        self.assertIn('Is a directory', self._start_error(self.dir))

    def test_not_bcrypt(self):
        path = os.path.join(self.dir, 'htpasswd')
        with open(path, 'w') as f:
            f.write(htpasswd_line('alice', 'x')
                    + 'bob:$apr1$salt$md5hashmd5hashmd5hash\n')
        self.assertIn('line 2 (user bob) is not a bcrypt hash; create it '
                      'with htpasswd -B', self._start_error(path))

    def test_not_user_colon_hash(self):
        path = os.path.join(self.dir, 'htpasswd')
        with open(path, 'w') as f:
            f.write('just-a-name\n')
        self.assertIn('line 1 is not "user:hash"', self._start_error(path))

    def test_commands_refuse_to_start(self):
        path = os.path.join(self.dir, 'missing-htpasswd')
        conf_file = os.path.join(self.dir, 'ironic-alloc.conf')
        with open(conf_file, 'w') as f:
            f.write('[DEFAULT]\nauth_strategy = http_basic\n'
                    'http_basic_auth_user_file = %s\n'
                    'state_path = %s\n[api]\nhost_ip = 127.0.0.1\n'
                    'port = 0\n' % (path, self.dir))
        for command in ('ironic-alloc-api', 'ironic-alloc'):
            result = subprocess.run(
                [os.path.join(os.path.dirname(sys.executable), command),
                 '--config-file', conf_file],
                capture_output=True, text=True, timeout=60,
                stdin=subprocess.DEVNULL)
            self.assertEqual(1, result.returncode, result.stderr)
            self.assertIn('Invalid configuration: [DEFAULT]http_basic_auth_'
                          'user_file %s: [Errno 2] No such file or directory'
                          % path, result.stderr)
            self.assertNotIn('Traceback', result.stderr)

    def test_deprecated_option_group_still_read(self):
        # Files written for earlier releases name the option in
        # [oslo_middleware].
        path = os.path.join(self.dir, 'htpasswd')
        with open(path, 'w') as f:
            f.write(htpasswd_line('alice', 'x'))
        conf_file = os.path.join(self.dir, 'ironic-alloc.conf')
        with open(conf_file, 'w') as f:
            f.write('[oslo_middleware]\nhttp_basic_auth_user_file = %s\n'
                    % path)
        conf = cfg.ConfigOpts()
        default.register_opts(conf)
        conf(['--config-file', conf_file], project='ironic-alloc',
             default_config_files=[], default_config_dirs=[])
        self.assertEqual(path, conf.http_basic_auth_user_file)
        self.assertTrue(basic_auth.UserFile(path).check('alice', b'x'))
