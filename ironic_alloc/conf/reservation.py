"""[reservation]: node reservations and the leases of holds (API
extension 1.2)."""

from oslo_config import cfg

GROUP = 'reservation'

opt_group = cfg.OptGroup(name=GROUP,
                         title='Options for node reservations and leases')

reservation_opts = [
    cfg.IntOpt('default_ttl',
               default=600,
               min=1,
               help='Lease of a reservation, in seconds, when its request '
                    'gives no "ttl". It must not exceed max_ttl.'),
    cfg.IntOpt('max_ttl',
               default=86400,
               min=1,
               help='Longest lease, in seconds, that a reservation or an '
                    'allocation may ask for or be renewed to; a longer '
                    'one is refused with 400.'),
    cfg.IntOpt('max_candidates',
               default=100,
               min=1,
               help='Most entries of the "node_uuid" list of one '
                    'reservation request; a longer list is refused with '
                    '400.'),
    cfg.IntOpt('expiry_interval',
               default=10,
               min=1,
               help='Seconds between two runs of the periodic task of '
                    'each conductor that releases the reservations and '
                    'allocations whose lease has passed. The task runs on '
                    'every conductor whatever the take-over settings: '
                    'each hold is released by exactly one of them.'),
]


def register_opts(conf):
    conf.register_group(opt_group)
    conf.register_opts(reservation_opts, group=opt_group)
