"""Authentication middleware chosen by [DEFAULT]auth_strategy.

* ``noauth``: none; every request is allowed.
* ``keystone``: keystonemiddleware's auth_token ([keystone_authtoken]).
* ``http_basic``: basic_auth.BasicAuthMiddleware against the htpasswd
  (bcrypt) file [DEFAULT]http_basic_auth_user_file.

The version discovery documents (GET / and GET /v1) stay public, as in
Ironic, so clients can negotiate before authenticating.
"""

from oslo_log import log

from ironic_alloc.api.middleware import basic_auth
from ironic_alloc.api.middleware import parsable_error

LOG = log.getLogger(__name__)

PUBLIC_PATHS = frozenset(['', '/', '/v1', '/v1/'])


class PublicRoutes:
    """Send public paths around the authentication middleware."""

    def __init__(self, app, authenticated_app):
        self.app = app
        self.authenticated_app = authenticated_app

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO', '') in PUBLIC_PATHS and \
                environ.get('REQUEST_METHOD') in ('GET', 'HEAD'):
            return self.app(environ, start_response)
        return self.authenticated_app(environ, start_response)


def check_config(conf):
    """Raise ConfigInvalid when the strategy cannot work, before the
    service binds its port: for http_basic, a user file that is missing,
    unreadable or malformed."""
    if conf.auth_strategy == 'http_basic':
        basic_auth.UserFile(conf.http_basic_auth_user_file)


def wrap(app, conf):
    """``app`` behind the authentication of ``conf.auth_strategy``."""
    strategy = conf.auth_strategy
    if strategy == 'noauth':
        LOG.warning('The API runs without authentication '
                    '([DEFAULT]auth_strategy = noauth).')
        return app
    if strategy == 'keystone':
        from keystonemiddleware import auth_token
        # NOTE: its refusals (401, 503 when Keystone is unreachable) get
        # Ironic's error body too; the headers (WWW-Authenticate) stay.
        authenticated = parsable_error.ParsableErrorMiddleware(
            auth_token.AuthProtocol(app, {'oslo_config_config': conf}))
    else:
        authenticated = basic_auth.BasicAuthMiddleware(
            app, conf.http_basic_auth_user_file)
    return PublicRoutes(app, authenticated)
