"""[metrics]: the Prometheus metrics of the API and the conductors."""

from oslo_config import cfg

GROUP = 'metrics'

opt_group = cfg.OptGroup(name=GROUP, title='Options for Prometheus metrics')

metrics_opts = [
    cfg.PortOpt('port',
                default=0,
                help='TCP port on which each conductor serves its '
                     'Prometheus metrics (HTTP, path /metrics, no '
                     'authentication). 0 serves none. The API serves its '
                     'own at GET /metrics, protected by the policy rule '
                     'baremetal:metrics:get.'),
    cfg.HostAddressOpt('host',
                       default='127.0.0.1',
                       help='Address on which the conductor serves its '
                            'metrics when [metrics]port is set.'),
    cfg.StrOpt('api_multiprocess_dir',
               default='$state_path/prometheus-api',
               help='Directory where the worker processes of '
                    'ironic-alloc-api keep their metrics (prometheus-client '
                    'multiprocess mode), so that any worker answers a '
                    'scrape with the sum of all. ironic-alloc-api creates '
                    'it and wipes it at start; it must belong to that '
                    'service only, preferably on a memory file system.'),
]


def register_opts(conf):
    conf.register_group(opt_group)
    conf.register_opts(metrics_opts, group=opt_group)
