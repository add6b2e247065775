"""Start-up shared by every ironic_alloc process."""

import signal
import sys
import threading

from oslo_log import log

from ironic_alloc.common import rpc
from ironic_alloc.conf import CONF
from ironic_alloc.conf import opts
from ironic_alloc import objects

LOG = log.getLogger(__name__)


def prepare_service(argv=None, default_config_files=None):
    """Parse options, set up logging and register objects.

    :param argv: command-line arguments, program name excluded.
    """
    log.register_options(CONF)
    opts.update_opt_defaults()
    rpc.set_defaults(control_exchange='ironic_alloc')
    CONF(sys.argv[1:] if argv is None else argv, project='ironic-alloc',
         default_config_files=default_config_files)
    log.setup(CONF, 'ironic-alloc')
    objects.register_all()


def run_until_signalled(service, on_reload=None):
    """Block until SIGTERM/SIGINT, then stop ``service`` gracefully.

    SIGHUP calls ``on_reload``.  Returns the process exit status: 0 after a
    requested stop, 1 when the service stopped by itself.
    """
    requested = []

    def _stop(signum, frame):
        LOG.info('Caught signal %s, stopping', signum)
        requested.append(signum)
        threading.Thread(target=service.stop, daemon=True).start()

    def _reload(signum, frame):
        if on_reload is not None:
            on_reload()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGHUP, _reload)
    while not service.stopped.wait(1):
        pass
    return 0 if requested else 1
