"""A real OpenStack Placement for the placement tier: the server of
ironic_alloc/tests/servers/placement_server.py (see there: SQLite or
PostgreSQL, gunicorn on loopback) plus the [placement] configuration of
our client for it.
"""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from ironic_alloc.conf import placement as placement_conf
from ironic_alloc.tests.servers import placement_server

DEFAULT_PG_URL = placement_server.DEFAULT_PG_URL
TOKEN = placement_server.TOKEN
PlacementError = placement_server.PlacementError
DatabaseServerMissing = placement_server.DatabaseServerMissing
missing_reason = placement_server.missing_reason
placement_venv_path = placement_server.placement_venv_path


class Placement(placement_server.PlacementServer):
    """A Placement process with the client configuration of our service.
    """

    def client_conf(self, **overrides):
        """A private oslo.config object whose [placement] group points at
        this Placement (admin_token: a fixed token for noauth2)."""
        conf = cfg.ConfigOpts()
        placement_conf.register_opts(conf)
        conf([], project='ironic-alloc', default_config_files=[],
             default_config_dirs=[])
        settings = {'auth_type': 'admin_token', 'endpoint': self.url,
                    'token': TOKEN}
        settings.update(overrides)
        # NOTE: an auth plugin's options are registered when it is
        # loaded; they must exist before they can be set.
        conf.register_opts(
            ks_loading.get_auth_plugin_conf_options(settings['auth_type']),
            group=placement_conf.GROUP)
        for key, value in settings.items():
            conf.set_override(key, value, group=placement_conf.GROUP)
        return conf
