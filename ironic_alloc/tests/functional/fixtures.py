"""Fixtures that run real ironic_alloc services inside the test process."""

import json

import fixtures

from ironic_alloc.common import rpc
from ironic_alloc.conductor import rpcapi
from ironic_alloc.conductor import service
from ironic_alloc.conf import CONF


class ConductorFixture(fixtures.Fixture):
    """A real conductor on oslo.messaging's in-process fake:// transport.

    Needs the Database fixture (tests.base) to be in place.
    """

    def __init__(self, host='test-conductor', **conductor_opts):
        super().__init__()
        self.host = host
        self.conductor_opts = conductor_opts

    def _setUp(self):
        CONF.set_override('transport_url', 'fake://')
        self.addCleanup(CONF.clear_override, 'transport_url')
        for name, value in self.conductor_opts.items():
            CONF.set_override(name, value, group='conductor')
            self.addCleanup(CONF.clear_override, name, group='conductor')
        rpc.init()
        self.service = service.ConductorService(host=self.host)
        self.service.start()
        self.addCleanup(self.service.stop)
        self.rpcapi = rpcapi.ConductorAPI()


def json_request(conn, method, path, body=None, headers=None):
    """One JSON request on an http.client connection.

    :returns: (status, decoded body or None).
    """
    conn.request(method, path, body=json.dumps(body) if body else None,
                 headers=headers or {})
    response = conn.getresponse()
    data = response.read()
    return response.status, json.loads(data) if data else None
