"""HTTP basic authentication against an Apache-style htpasswd file.

The file ([DEFAULT]http_basic_auth_user_file) holds one ``user:hash`` line
per user, bcrypt hashes only (``htpasswd -B``); blank lines and ``#``
comments are ignored.  It is read at start-up, where a missing, unreadable
or malformed file stops the service, and read again whenever its
modification time, size or inode change, so users can be added, removed
or given new passwords while the service runs.  A file that cannot be read
or parsed later is logged as an error and the users read last stay in
force until it is fixed (an editor half-way through writing it must not
lock everybody out or let anybody in).

A refused request gets a 401 with ``WWW-Authenticate: Basic realm=...``
and Ironic's error body.
"""

import base64
import binascii
import json
import os
import threading

import bcrypt
from oslo_log import log

from ironic_alloc.api.middleware import parsable_error
from ironic_alloc.common import exception

LOG = log.getLogger(__name__)

# The realm standalone Ironic announces; clients show it when prompting.
REALM = 'Baremetal API'
_BCRYPT_PREFIXES = ('$2y$', '$2a$', '$2b$')
# For an empty file: a hash to check unknown users against.
_DUMMY_HASH = bcrypt.hashpw(b'unknown user', bcrypt.gensalt(4))


def parse_user_file(path):
    """{user: bcrypt hash} of the htpasswd file at ``path``.

    :raises: OSError when the file cannot be read, ValueError naming the
        line when a line is not ``user:bcrypt-hash``.
    """
    users = {}
    with open(path, encoding='utf-8') as f:
        for number, line in enumerate(f, 1):
            entry = line.strip()
            if not entry or entry.startswith('#'):
                continue
            user, sep, hashed = entry.partition(':')
            if not sep or not user:
                raise ValueError('line %d is not "user:hash"' % number)
            if not hashed.startswith(_BCRYPT_PREFIXES):
                raise ValueError('line %d (user %s) is not a bcrypt hash; '
                                 'create it with htpasswd -B'
                                 % (number, user))
            # NOTE: like Apache, the first line of a user counts.
            users.setdefault(user, hashed.encode('ascii', 'replace'))
    return users


class UserFile:
    """The users of an htpasswd file, re-read when the file changes."""

    def __init__(self, path):
        self.path = path
        self._lock = threading.Lock()
        try:
            self._stamp = self._file_stamp()
            self._users = parse_user_file(path)
        except (OSError, ValueError) as exc:
            raise exception.ConfigInvalid(
                error_msg='[DEFAULT]http_basic_auth_user_file %s: %s'
                % (path, exc))
        LOG.info('HTTP basic authentication with %(count)d user(s) from '
                 '%(path)s', {'count': len(self._users), 'path': path})

    def _file_stamp(self):
        st = os.stat(self.path)
        return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev)

    def users(self):
        """The current {user: hash}, re-read if the file changed."""
        try:
            stamp = self._file_stamp()
        except OSError as exc:
            stamp = ('unreadable', str(exc))
        if stamp == self._stamp:
            return self._users
        with self._lock:
            if stamp != self._stamp:
                self._stamp = stamp
                try:
                    self._users = parse_user_file(self.path)
                except (OSError, ValueError) as exc:
                    LOG.error('Cannot use the changed user file %(path)s, '
                              'the users read before stay in force: '
                              '%(error)s', {'path': self.path, 'error': exc})
                else:
                    LOG.info('Re-read %(path)s: %(count)d user(s)',
                             {'path': self.path, 'count': len(self._users)})
            return self._users

    def check(self, user, password):
        """True when ``password`` (bytes) is ``user``'s."""
        users = self.users()
        hashed = users.get(user)
        # NOTE: an unknown user is checked against another user's hash,
        # so that the time a refusal takes does not tell which user names
        # exist.
        try:
            matches = bcrypt.checkpw(
                password,
                hashed or next(iter(users.values()), _DUMMY_HASH))
        except ValueError:
            # NOTE: a malformed hash, or a password bcrypt refuses (longer
            # than 72 bytes).
            return False
        return matches and hashed is not None


def credentials(environ):
    """(user, password bytes) of a Basic Authorization header, or None
    when there is none or it cannot be decoded."""
    header = environ.get('HTTP_AUTHORIZATION', '')
    scheme, _sep, encoded = header.strip().partition(' ')
    if scheme.lower() != 'basic' or not encoded.strip():
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True)
        user, sep, password = decoded.partition(b':')
        if not sep:
            return None
        return user.decode('utf-8'), password
    except (binascii.Error, UnicodeDecodeError):
        return None


class BasicAuthMiddleware:
    """Let through requests with the password of a user of the file."""

    def __init__(self, app, user_file):
        self.app = app
        self.user_file = UserFile(user_file)

    def __call__(self, environ, start_response):
        creds = credentials(environ)
        if creds is None:
            return self._refuse(start_response, 'Authentication required: '
                                'HTTP basic credentials are missing or '
                                'malformed.')
        user, password = creds
        if not self.user_file.check(user, password):
            LOG.info('HTTP basic authentication of user %s refused', user)
            return self._refuse(start_response,
                                'Invalid user name or password.')
        # NOTE: the password goes no further than this middleware; the
        # user name is for the request context (logs).
        del environ['HTTP_AUTHORIZATION']
        environ['HTTP_X_USER'] = user
        environ['HTTP_X_USER_NAME'] = user
        return self.app(environ, start_response)

    @staticmethod
    def _refuse(start_response, message):
        status = '401 Unauthorized'
        body = json.dumps(parsable_error.make_fault_body(
            status, json.dumps({'faultstring': message}))).encode()
        start_response(status, [
            ('WWW-Authenticate', 'Basic realm="%s"' % REALM),
            ('Content-Type', 'application/json'),
            ('Content-Length', str(len(body)))])
        return [body]
