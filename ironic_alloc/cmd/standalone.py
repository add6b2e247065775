"""ironic-alloc: API and conductor in one process, no broker needed.

RPC runs through oslo.messaging's in-process ``fake://`` transport unless
[DEFAULT]transport_url says otherwise; the database defaults to an SQLite
file under [DEFAULT]state_path, upgraded at start.
"""

import sys
import threading

from oslo_log import log
from oslo_service import service

from ironic_alloc.api import app
from ironic_alloc.api.middleware import auth
from ironic_alloc.common import exception
from ironic_alloc.common import service as service_utils
from ironic_alloc.common import wsgi_service
from ironic_alloc.conductor import service as conductor_service
from ironic_alloc.conf import CONF
from ironic_alloc.db import migration

LOG = log.getLogger(__name__)


class StandaloneService(service.ServiceBase):
    """The conductor and the API (cheroot) of one process.

    The API's socket is bound when the service is built; start() starts
    the conductor, then serves the API.  ``started`` is set once both
    run; ``stopped`` once the conductor stopped, asked to or by itself.
    """

    def __init__(self):
        self.conductor = conductor_service.ConductorService()
        self.api = wsgi_service.WSGIService(app.setup_app, CONF.api.host_ip,
                                            CONF.api.port)
        self.started = threading.Event()
        self.failed = threading.Event()
        # NOTE: a stop waits for a start in progress, so that it never
        # stops half a conductor.
        self._lock = threading.Lock()

    @property
    def stopped(self):
        return self.conductor.stopped

    def start(self):
        with self._lock:
            try:
                self.conductor.start()
                self.api.start()
            except BaseException:
                self.failed.set()
                self.api.stop()
                self.conductor.stopped.set()
                raise
        LOG.info('ironic_alloc standalone service listening on '
                 'http://%s:%s', self.api.host, self.api.port)
        self.started.set()

    def stop(self):
        with self._lock:
            self.api.stop()
            if not self.failed.is_set():
                self.conductor.stop()

    def wait(self):
        self.conductor.stopped.wait()

    def reset(self):
        """Apply the mutable options the launcher re-read (SIGHUP)."""
        self.conductor.reset()


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

    standalone = StandaloneService()
    # NOTE: oslo.service's in-process launcher: the conductor's
    # registration, its work in flight and the fake:// transport it shares
    # with the API live in this process, so SIGHUP applies the mutable
    # options in place (the launcher's restart() re-reads the files and
    # calls reset()) instead of replacing the process.
    launcher = service.Launcher(CONF, restart_method='mutate')
    launcher.launch_service(standalone)
    try:
        status = service_utils.run_until_signalled(
            standalone, on_reload=launcher.restart,
            started=standalone.started)
    finally:
        launcher.stop()
        launcher.wait()
    sys.exit(1 if standalone.failed.is_set() else status)


if __name__ == '__main__':
    main()
