"""ironic-alloc-api: the API served by cheroot under oslo.service.

Listens on [api]host_ip:[api]port with [api]api_workers worker processes.
For production, ``ironic_alloc.wsgi.api:application`` may also run under
another WSGI server.
"""

import sys

from oslo_log import log
from oslo_service import service

from ironic_alloc.api import app
from ironic_alloc.api.middleware import auth
from ironic_alloc.common import exception
from ironic_alloc.common import metrics
from ironic_alloc.common import service as service_utils
from ironic_alloc.common import wsgi_service
from ironic_alloc.conf import CONF
from ironic_alloc.db import api as db_api

LOG = log.getLogger(__name__)


def build_service():
    """The API service, its socket bound to [api]host_ip:[api]port."""
    return wsgi_service.WSGIService(app.setup_app, CONF.api.host_ip,
                                    CONF.api.port)


def main():
    service_utils.prepare_service()
    try:
        auth.check_config(CONF)
    except exception.ConfigInvalid as exc:
        raise SystemExit(str(exc))
    # NOTE: before any metric exists: the workers inherit the mode and
    # write to the directory, emptied of an earlier run's values.
    try:
        metrics.prepare_multiprocess(CONF.metrics.api_multiprocess_dir)
    except (OSError, RuntimeError) as exc:
        raise SystemExit('[metrics]api_multiprocess_dir %s cannot be used: '
                         '%s' % (CONF.metrics.api_multiprocess_dir, exc))
    db_api.get_instance().connect_on_demand()
    # NOTE: bound here, before the launcher forks, so that every worker
    # accepts on the same socket; each builds its application (database
    # engine, RPC client) after the fork.
    api = build_service()
    workers = CONF.api.api_workers
    LOG.info('ironic-alloc-api listening on http://%(host)s:%(port)s '
             'with %(workers)d worker processes',
             {'host': api.host, 'port': api.port, 'workers': workers})
    # NOTE: on SIGHUP the launcher applies the mutable options of the
    # configuration files and replaces the workers, each finishing its
    # requests in progress; connections that arrive meanwhile wait in the
    # socket's queue.  SIGTERM stops the workers the same way.
    launcher = service.ProcessLauncher(CONF, restart_method='mutate')
    launcher.launch_service(api, workers=workers)
    return launcher.wait()


if __name__ == '__main__':
    sys.exit(main())
