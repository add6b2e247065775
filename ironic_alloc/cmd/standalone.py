"""ironic-alloc: API and conductor in one process, no broker needed.

RPC runs through oslo.messaging's in-process ``fake://`` transport unless
[DEFAULT]transport_url says otherwise; the database defaults to an SQLite
file under [DEFAULT]state_path, upgraded at start.
"""

import sys

from oslo_log import log

from ironic_alloc.api import app
from ironic_alloc.api.middleware import auth
from ironic_alloc.common import exception
from ironic_alloc.common import service as service_utils
from ironic_alloc.common import wsgi_server
from ironic_alloc.conductor import service
from ironic_alloc.conf import CONF
from ironic_alloc.db import migration

LOG = log.getLogger(__name__)


def main():
    # NOTE: a default, so a transport_url in the configuration file (e.g. a
    # RabbitMQ shared with separate conductors) still wins.
    CONF.set_default('transport_url', 'fake://')
    service_utils.prepare_service()
    try:
        auth.check_config(CONF)
    except exception.ConfigInvalid as exc:
        raise SystemExit(str(exc))
    # NOTE: the embedded mode owns its database: bring the schema up to
    # date so that one command is enough.
    migration.upgrade('head')

    conductor = service.ConductorService()
    conductor.start()
    server = wsgi_server.Server(app.setup_app(), CONF.api.host_ip,
                                CONF.api.port)
    server.start()
    LOG.info('ironic_alloc standalone service listening on http://%s:%s',
             CONF.api.host_ip, server.port)
    try:
        status = service_utils.run_until_signalled(
            conductor, on_reload=conductor.reload)
    finally:
        server.stop()
        conductor.stop()
    sys.exit(status)


if __name__ == '__main__':
    main()
