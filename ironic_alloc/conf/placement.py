"""[placement]: how ironic_alloc reaches an OpenStack Placement service.

keystoneauth1's own session, auth and adapter options (two of them with
defaults of ours), so a deployment configures them as in Nova or Ironic.
With a Placement running ``[api] auth_strategy = noauth2`` (tests,
standalone sites) the ``admin_token`` plugin sends a fixed
``X-Auth-Token`` to a fixed ``endpoint``.
"""

import copy

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

GROUP = 'placement'


def _opt_group():
    # NOTE: a new object for every ConfigOpts: oslo.config keeps the
    # registered options (and their overrides) in the group object, so a
    # shared one would leak them between configurations.
    return cfg.OptGroup(
        name=GROUP, title='Options for reaching OpenStack Placement',
        help='keystoneauth1 options of the Placement client: auth_type '
             'and its options, the session (timeouts, TLS) and the adapter '
             '(service type, interfaces, endpoint_override, retries).')


# NOTE: keystoneauth1 has no timeout by default; a Placement that accepts
# connections and never answers must not hang a conductor thread.
DEFAULT_TIMEOUT = 30
DEFAULT_SERVICE_TYPE = 'placement'
_OUR_DEFAULTS = {'timeout': DEFAULT_TIMEOUT,
                 'service_type': DEFAULT_SERVICE_TYPE}

# Auth plugins whose options the sample file shows: password for Keystone
# deployments, admin_token for a Placement with noauth2.
_SAMPLE_AUTH_PLUGINS = ('password', 'admin_token')


def _with_our_defaults(options):
    # NOTE: copies of keystoneauth1's options with our defaults, rather
    # than conf.set_default(): ConfigOpts.clear() (every config fixture)
    # drops what set_default() set.
    copies = []
    for opt in options:
        opt = copy.deepcopy(opt)
        if opt.dest in _OUR_DEFAULTS:
            opt.default = _OUR_DEFAULTS[opt.dest]
        copies.append(opt)
    return copies


def _session_opts():
    return _with_our_defaults(ks_loading.get_session_conf_options())


def _adapter_opts():
    return _with_our_defaults(
        ks_loading.get_adapter_conf_options(include_deprecated=False))


# Options of ours, used with [allocation]backend = placement.
placement_opts = [
    cfg.IntOpt('sync_interval',
               default=600,
               mutable=True,
               min=0,
               help='Seconds between full passes in which a conductor '
                    'brings every resource provider in Placement in line '
                    'with the nodes and releases claims that no allocation '
                    'holds any more (left by a Placement outage or a '
                    'crash). Only with [allocation]backend = placement. '
                    'Single node changes are synchronised as they happen; '
                    'this pass repairs what they missed. The first pass '
                    'runs when the conductor starts. 0 disables it.'),
    cfg.IntOpt('claim_batch_size',
               default=10,
               mutable=True,
               min=1,
               help='The most claims of concurrent allocations a conductor '
                    'sends to Placement in one POST /allocations. A claim '
                    'made while another request of the conductor is in '
                    'flight waits for it and goes with the next request, '
                    'with the other claims waiting; a claim made when '
                    'none is in flight is sent at once. A shared request '
                    'costs Placement less CPU per claim than a request '
                    'each. 1 sends every claim in its own PUT at once.'),
    cfg.IntOpt('sync_concurrency',
               default=4,
               mutable=True,
               min=1,
               help='How many resource providers a full pass (see '
                    'sync_interval) synchronises at once, each with its '
                    'own requests to Placement. Only providers whose node '
                    'or provider changed since this conductor last '
                    'synchronised them are read or written.'),
]


def register_opts(conf):
    conf.register_group(_opt_group())
    conf.register_opts(placement_opts, group=GROUP)
    conf.register_opts(_session_opts(), group=GROUP)
    ks_loading.register_auth_conf_options(conf, GROUP)
    conf.register_opts(_adapter_opts(), group=GROUP)


def list_opts():
    """The options of [placement] as the sample and the docs show them."""
    opts = (placement_opts + _session_opts()
            + ks_loading.get_auth_common_conf_options() + _adapter_opts())
    seen = {opt.dest for opt in opts}
    for plugin in _SAMPLE_AUTH_PLUGINS:
        for opt in ks_loading.get_auth_plugin_conf_options(plugin):
            if opt.dest not in seen:
                seen.add(opt.dest)
                opts.append(opt)
    return opts
