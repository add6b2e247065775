"""ironic-alloc-api: the API on the development WSGI server.

Listens on [api]host_ip:[api]port.  For production run
``ironic_alloc.wsgi.api:application`` under a WSGI server instead.
"""

import sys

from oslo_log import log

from ironic_alloc.api import app
from ironic_alloc.api.middleware import auth
from ironic_alloc.common import exception
from ironic_alloc.common import service as service_utils
from ironic_alloc.common import wsgi_server
from ironic_alloc.conf import CONF
from ironic_alloc.db import api as db_api

LOG = log.getLogger(__name__)


def build_server():
    """The development server with the API, bound to [api]host_ip:port."""
    return wsgi_server.Server(app.setup_app(), CONF.api.host_ip,
                              CONF.api.port)


def main():
    service_utils.prepare_service()
    try:
        auth.check_config(CONF)
    except exception.ConfigInvalid as exc:
        raise SystemExit(str(exc))
    db_api.get_instance().connect_on_demand()
    workers = CONF.api.api_workers
    if workers > 1:
        # NOTE: bound here, before the fork, so every worker accepts on the
        # same socket; the application is built in each worker.
        server = wsgi_server.Server(None, CONF.api.host_ip, CONF.api.port)
        LOG.info('ironic-alloc-api listening on http://%(host)s:%(port)s '
                 'with %(workers)d worker processes',
                 {'host': CONF.api.host_ip, 'port': server.port,
                  'workers': workers})
        wsgi_server.serve_in_processes(server, app.setup_app, workers)
        return 0
    server = build_server()
    LOG.info('ironic-alloc-api listening on http://%(host)s:%(port)s',
             {'host': CONF.api.host_ip, 'port': server.port})
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
