"""Start-up shared by every ironic_alloc process."""

import signal
import sys
import threading

from oslo_config import cfg
from oslo_log import log
from oslo_service import systemd

from ironic_alloc.common import limits
from ironic_alloc.common import notifications
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
    check_release_pin()
    notifications.check_config()
    limits.check_config()
    objects.register_all()


def check_release_pin(conf=CONF):
    """Stop start-up on an unknown ``[DEFAULT]pin_release_version``.

    oslo.config checks an option's ``choices`` only when the option is
    read: read it now rather than at the first RPC message.

    :raises: SystemExit with the option's error.
    """
    try:
        pin = conf.pin_release_version
    except cfg.ConfigFileValueError as exc:
        raise SystemExit('Invalid [DEFAULT]pin_release_version: %s' % exc)
    if pin:
        LOG.warning('RPC messages and objects are pinned to release %s '
                    '(rolling upgrade): unset [DEFAULT]pin_release_version '
                    'once every service runs this code', pin)


def run_until_signalled(service, on_reload=None, started=None):
    """Block until SIGTERM/SIGINT, then stop ``service`` gracefully.

    Once ``service`` has started (at once, or when the event ``started``
    is set) it tells systemd that the service is ready (``READY=1`` to
    $NOTIFY_SOCKET, for ``Type=notify`` units).  SIGHUP calls
    ``on_reload``.  Returns the process exit status: 0 after a requested
    stop, 1 when the service stopped by itself (or never started).
    """
    requested = []
    reload_lock = threading.Lock()

    def _stop(signum, frame):
        LOG.info('Caught signal %s, stopping', signum)
        requested.append(signum)
        threading.Thread(target=service.stop, daemon=True).start()

    def _locked_reload():
        LOG.info('Caught SIGHUP, reloading the configuration files')
        with reload_lock:
            try:
                on_reload()
            except Exception:
                LOG.exception('Reloading the configuration failed; the '
                              'service goes on with the options it had')

    def _reload(signum, frame):
        if on_reload is not None:
            # NOTE: not in the handler itself: a handler interrupts the
            # main thread wherever it is, possibly holding a lock the
            # reload (logging, oslo.config) needs.
            threading.Thread(target=_locked_reload, name='reload',
                             daemon=True).start()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGHUP, _reload)
    if started is not None:
        while not (started.wait(1) or service.stopped.is_set()):
            pass
    if not service.stopped.is_set():
        systemd.notify_once()
    while not service.stopped.wait(1):
        pass
    return 0 if requested else 1
