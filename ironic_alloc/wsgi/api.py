"""WSGI entry point of the API: ``ironic_alloc.wsgi.api:application``.

Configuration comes from the default config file locations
(/etc/ironic-alloc/ironic-alloc.conf and friends); the web server runs
the requests, so no command-line arguments are parsed.
"""

import threading

from ironic_alloc.api import app as api_app
from ironic_alloc.common import service as service_utils

_LOCK = threading.Lock()
_APPLICATION = None


def initialize_wsgi_app(argv=()):
    """Parse configuration, set up logging and build the application."""
    global _APPLICATION
    with _LOCK:
        if _APPLICATION is None:
            service_utils.prepare_service(list(argv))
            _APPLICATION = api_app.setup_app()
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
