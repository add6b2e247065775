"""[limits]: per-project limits on holds (allocations and reservations),
and the [oslo_limit] options of Keystone unified limits."""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_config import types
from oslo_limit import opts as oslo_limit_opts

GROUP = 'limits'

DRIVER_NONE = 'none'
DRIVER_CONFIG = 'config'
DRIVER_KEYSTONE = 'keystone'

opt_group = cfg.OptGroup(name=GROUP,
                         title='Options for per-project limits on holds')

limits_opts = [
    cfg.StrOpt('driver',
               default=DRIVER_NONE,
               choices=[
                   (DRIVER_NONE, 'No limit: a project may hold every node.'),
                   (DRIVER_CONFIG, 'The limits of project_holds and '
                                   'project_holds_per_resource_class, the '
                                   'same for every project.'),
                   (DRIVER_KEYSTONE, 'Keystone unified limits of this '
                                     'service, read with oslo.limit with '
                                     'the options of [oslo_limit] '
                                     '(endpoint_id, or the endpoint\'s '
                                     'service and region, and the '
                                     'credentials).')],
               help='Where the limits on the holds of a project come '
                    'from. A hold is an allocation in any state or a '
                    'reservation, counted against the project that owns '
                    'it. Callers that the policy rule '
                    'baremetal:allocation:limit_exempt allows are not '
                    'limited.'),
    cfg.IntOpt('project_holds',
               default=-1,
               min=-1,
               help='With driver = config: most holds one project may '
                    'have, of every resource class together; -1 for no '
                    'limit.'),
    cfg.Opt('project_holds_per_resource_class',
            type=types.Dict(value_type=types.Integer(min=-1)),
            default={},
            help='With driver = config: most holds one project may '
                 'have of a resource class, as resource_class:limit '
                 'pairs (for example "gold:2,silver:10"); -1 for no '
                 'limit. Classes not listed are limited by '
                 'project_holds only.'),
    cfg.IntOpt('cache_time',
               default=30,
               min=0,
               help='With driver = keystone: seconds the limits read from '
                    'Keystone for a project are used before they are read '
                    'again; 0 reads them for every request that creates a '
                    'hold. A limit changed in Keystone applies after at '
                    'most this time.'),
]


def register_opts(conf):
    conf.register_group(opt_group)
    conf.register_opts(limits_opts, group=opt_group)
    oslo_limit_opts.register_opts(conf)
    # NOTE: oslo.limit registers its authentication options on the global
    # configuration whatever ``conf`` is; the start-up check reads them
    # from ``conf``.
    ks_loading.register_auth_conf_options(conf, 'oslo_limit')
