"""Options of the versioned notifications ([DEFAULT], Ironic's names).

The transport and driver of the notifications are oslo.messaging's own
``[oslo_messaging_notifications]`` options.
"""

from oslo_config import cfg
from oslo_messaging import opts as messaging_opts

LEVELS = ('debug', 'info', 'warning', 'error', 'critical')

notification_opts = [
    cfg.StrOpt('notification_level',
               choices=[(level, 'Send notifications of this priority and '
                                'of the higher ones.') for level in LEVELS],
               help='The lowest priority of the versioned notifications '
                    'sent (debug < info < warning < error < critical). '
                    'Unset, the default, sends none. The notifications '
                    'also need a driver in [oslo_messaging_notifications] '
                    '(messagingv2 for a message broker).'),
    cfg.ListOpt('versioned_notifications_topics',
                default=['ironic_versioned_notifications'],
                help='Topics the versioned notifications are sent to: '
                     'Ironic\'s, so that consumers written for Ironic '
                     'find them (on the exchange of [DEFAULT]'
                     'control_exchange).'),
    cfg.IntOpt('notification_queue_size',
               default=1000, min=1,
               help='Notifications waiting to be sent, at most, in each '
                    'process. A request queues its notifications and goes '
                    'on; one thread sends them. A notification that finds '
                    'the queue full is dropped and counted in the metric '
                    'ironic_alloc_notifications_dropped_total.'),
    cfg.IntOpt('notification_send_retries',
               default=1, min=0,
               help='Times the sending thread retries to reach the message '
                    'broker for one notification before dropping it '
                    '(oslo.messaging\'s retry argument; its own default '
                    'retries for ever, which would stop every later '
                    'notification behind one that cannot be sent).'),
]


NOTIFIER_GROUP = 'oslo_messaging_notifications'


def register_opts(conf):
    conf.register_opts(notification_opts)
    # NOTE: oslo.messaging registers its notifier's options only when a
    # notification transport is made; registered here (the same options,
    # from its public list) they can be read, checked and overridden at
    # start-up like ours.
    for group, opts in messaging_opts.list_opts():
        if group == NOTIFIER_GROUP:
            conf.register_opts(opts, group=group)
