"""[allocation]: which backend picks and claims nodes for allocations."""

from oslo_config import cfg

GROUP = 'allocation'

DATABASE = 'database'
PLACEMENT = 'placement'

opt_group = cfg.OptGroup(name=GROUP,
                         title='Options for processing allocations')

allocation_opts = [
    cfg.StrOpt('backend',
               default=DATABASE,
               choices=[(DATABASE, 'Nodes are searched and reserved in '
                         'ironic_alloc\'s own database only.'),
                        (PLACEMENT, 'Nodes are mirrored as resource '
                         'providers in OpenStack Placement (the '
                         '[placement] options) and claimed there, then '
                         'reserved in the database like with "database".')],
               help='Where allocations find and claim their nodes. Every '
                    'conductor of a deployment must use the same backend; '
                    'changing it needs a restart of the conductors.'),
    cfg.IntOpt('max_group_size',
               default=100, min=1,
               help='The most members (new, handed-over and released '
                    'allocations together) one allocation group may have '
                    '(API extension 1.3); a larger request is refused with '
                    'a 400.'),
    cfg.IntOpt('group_retries',
               default=3, min=0,
               help='How many times a conductor solves an allocation '
                    'group again when its one-transaction commit finds a '
                    'node taken since the search (solving without that '
                    'node) or the database refused the commit as a '
                    'deadlock every time it was retried; then the group '
                    'fails. 0: it fails at the first such commit.'),
]


def register_opts(conf):
    conf.register_group(opt_group)
    conf.register_opts(allocation_opts, group=opt_group)
