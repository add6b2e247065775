"""Gabbi fixtures: the real WSGI app on a real database, plus a conductor.

Requests go through httpx's WSGI transport (no sockets); RPC between the
API and the in-process conductor goes through oslo.messaging's fake://
transport.
"""

import os

from gabbi import fixture
from oslo_config import fixture as config_fixture
from oslo_utils import uuidutils

from ironic_alloc.api import app as api_app
from ironic_alloc.api import hooks
from ironic_alloc.conf import CONF
from ironic_alloc.tests import base
from ironic_alloc.tests.functional import fixtures as ia_fixtures


class LazyApp:
    """The WSGI app, built at the first request.

    NOTE: gabbi asks for the intercepted app before the fixtures start,
    i.e. before the configuration and the database exist.
    """

    def __init__(self):
        self._app = None

    def __call__(self, environ, start_response):
        if self._app is None:
            self._app = api_app.setup_app()
        return self._app(environ, start_response)


def setup_app():
    return LazyApp()


class APIFixture(fixture.GabbiFixture):
    """Configuration, an empty database and UUIDs in the environment.

    No conductor runs: node creation and reads work, node updates and
    actions answer 503.
    """

    def start_fixture(self):
        base._parse_conf_once()
        self._cleanups = []
        self._use(config_fixture.Config(CONF))
        CONF.set_override('auth_strategy', 'noauth')
        CONF.set_override('host', 'test-api')
        self._use(base.Database())
        hooks.reset_rpcapi()
        for name in ('NODE_UUID', 'NODE2_UUID', 'INSTANCE_UUID',
                     'MISSING_UUID'):
            os.environ[name] = uuidutils.generate_uuid()

    def _use(self, fix):
        fix.setUp()
        self._cleanups.append(fix.cleanUp)
        return fix

    def stop_fixture(self):
        while self._cleanups:
            self._cleanups.pop()()
        hooks.reset_rpcapi()


class ConductorFixture(APIFixture):
    """APIFixture plus a live conductor named ``test-conductor``."""

    def start_fixture(self):
        super().start_fixture()
        self._use(ia_fixtures.ConductorFixture(host='test-conductor'))
        hooks.reset_rpcapi()
