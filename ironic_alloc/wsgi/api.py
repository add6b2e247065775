"""WSGI entry point of the API: ``ironic_alloc.wsgi.api:application``.

Configuration comes from the files named in the environment variable
``IRONIC_ALLOC_CONFIG_FILE`` (one path, or several separated by colons),
or else from the default locations (/etc/ironic-alloc/ironic-alloc.conf
and friends); the web server runs the requests, so no command-line
arguments are parsed.
"""

import atexit
import os
import threading

from ironic_alloc.api import app as api_app
from ironic_alloc.common import notifications
from ironic_alloc.common import service as service_utils
from ironic_alloc.db import api as db_api

CONFIG_FILE_ENV = 'IRONIC_ALLOC_CONFIG_FILE'

_LOCK = threading.Lock()
_APPLICATION = None


def config_file_args(environ=None):
    """``--config-file`` arguments for the paths in $IRONIC_ALLOC_CONFIG_FILE.

    NOTE: a web server gives the application no command line; under
    mod_wsgi the variable comes from Apache's environment (for example
    /etc/apache2/envvars), which daemon processes inherit.
    """
    environ = os.environ if environ is None else environ
    args = []
    for path in environ.get(CONFIG_FILE_ENV, '').split(os.pathsep):
        if path:
            args.extend(['--config-file', path])
    return args


def initialize_wsgi_app(argv=None):
    """Parse configuration, set up logging and build the application.

    :param argv: command-line style arguments; by default those of
        :func:`config_file_args`.
    """
    global _APPLICATION
    with _LOCK:
        if _APPLICATION is None:
            service_utils.prepare_service(
                config_file_args() if argv is None else list(argv))
            db_api.get_instance().connect_on_demand()
            _APPLICATION = api_app.setup_app()
            # NOTE: a WSGI server tells its application nothing when a
            # process ends: the notifications still queued go at exit.
            atexit.register(notifications.stop)
        return _APPLICATION


class _LazyApplication:
    """Builds the application on first use, in the serving process.

    NOTE: pre-forking servers import this module in a master process;
    building lazily keeps configuration parsing and connections in the
    workers.
    """

    def __call__(self, environ, start_response):
        return initialize_wsgi_app()(environ, start_response)


application = _LazyApplication()
