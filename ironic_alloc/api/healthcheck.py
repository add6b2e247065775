"""/healthcheck: oslo.middleware's, plus a database probe.

The probe runs one trivial query; while the database is unreachable the
endpoint answers 503.
"""

from oslo_log import log
from oslo_middleware import healthcheck
from oslo_middleware.healthcheck import pluginbase

from ironic_alloc.common import context as ia_context
from ironic_alloc import objects

LOG = log.getLogger(__name__)


class DatabaseHealthcheck(pluginbase.HealthcheckBaseExtension):
    """Healthy when the database answers a query."""

    def healthcheck(self, server_port):
        try:
            objects.Conductor.database_time(ia_context.get_admin_context())
        except Exception as e:
            LOG.warning('Health check: the database is unreachable: %s', e)
            return pluginbase.HealthcheckResult(
                available=False, reason='database unreachable',
                details=str(e))
        return pluginbase.HealthcheckResult(available=True, reason='OK')


class _Extension:
    """What oslo.middleware iterates over: an object with ``obj``."""

    def __init__(self, obj):
        self.obj = obj


class Healthcheck(healthcheck.Healthcheck):
    """oslo.middleware's health check with the database probe added.

    NOTE: oslo.middleware loads backends through stevedore entry points;
    the probe is appended directly so it needs no packaging metadata.
    """

    PATH = '/healthcheck'

    def __init__(self, application, conf):
        super().__init__(application, conf)
        self._backends = list(self._backends) + [
            _Extension(DatabaseHealthcheck(self.oslo_conf, self.conf))]

    def __call__(self, environ, start_response):
        # NOTE: oslo.middleware expects to be mounted at its path; here it
        # wraps the whole API and answers only its own path.  Other
        # requests go on untouched, before WebOb builds a request object
        # for them: every API request crosses this middleware.
        if environ.get('PATH_INFO') != self.PATH:
            return self.application(environ, start_response)
        return super().__call__(environ, start_response)
