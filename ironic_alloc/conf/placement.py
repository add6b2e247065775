"""[placement]: how ironic_alloc reaches an OpenStack Placement service.

keystoneauth1's own session, auth and adapter options, registered through
its helpers, so a deployment configures them as in Nova or Ironic.  With a
Placement running ``[api] auth_strategy = noauth2`` (tests, standalone
sites) the ``admin_token`` plugin sends a fixed ``X-Auth-Token`` to a fixed
``endpoint``.
"""

import copy

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

GROUP = 'placement'

opt_group = cfg.OptGroup(
    name=GROUP, title='Options for reaching OpenStack Placement',
    help='keystoneauth1 options of the Placement client: auth_type and '
         'its options, the session (timeouts, TLS) and the adapter '
         '(service type, interfaces, endpoint_override, retries).')

# NOTE: keystoneauth1 has no timeout by default; a Placement that accepts
# connections and never answers must not hang a conductor thread.
DEFAULT_TIMEOUT = 30
DEFAULT_SERVICE_TYPE = 'placement'

# Auth plugins whose options the sample file shows: password for Keystone
# deployments, admin_token for a Placement with noauth2.
_SAMPLE_AUTH_PLUGINS = ('password', 'admin_token')


def register_opts(conf):
    conf.register_group(opt_group)
    ks_loading.register_session_conf_options(conf, GROUP)
    ks_loading.register_auth_conf_options(conf, GROUP)
    ks_loading.register_adapter_conf_options(conf, GROUP)
    conf.set_default('timeout', DEFAULT_TIMEOUT, group=GROUP)
    conf.set_default('service_type', DEFAULT_SERVICE_TYPE, group=GROUP)


def list_opts():
    """The options of [placement] as the sample and the docs show them."""
    opts = (ks_loading.get_session_conf_options()
            + ks_loading.get_auth_common_conf_options()
            + ks_loading.get_adapter_conf_options(include_deprecated=False))
    seen = {opt.dest for opt in opts}
    for plugin in _SAMPLE_AUTH_PLUGINS:
        for opt in ks_loading.get_auth_plugin_conf_options(plugin):
            if opt.dest not in seen:
                seen.add(opt.dest)
                opts.append(opt)
    shown = []
    for opt in opts:
        opt = copy.deepcopy(opt)
        if opt.dest == 'timeout':
            opt.default = DEFAULT_TIMEOUT
        elif opt.dest == 'service_type':
            opt.default = DEFAULT_SERVICE_TYPE
        shown.append(opt)
    return shown
