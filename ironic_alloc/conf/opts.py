"""Option lists for oslo-config-generator and the documentation."""

import itertools

from oslo_config import cfg
from oslo_log import log

from ironic_alloc.conf import allocation
from ironic_alloc.conf import api
from ironic_alloc.conf import conductor
from ironic_alloc.conf import database
from ironic_alloc.conf import default
from ironic_alloc.conf import limits
from ironic_alloc.conf import metrics
from ironic_alloc.conf import notification
from ironic_alloc.conf import placement
from ironic_alloc.conf import policy
from ironic_alloc.conf import reservation

_opts = [
    ('DEFAULT', default.service_opts + notification.notification_opts),
    (allocation.GROUP, allocation.allocation_opts),
    ('api', api.api_opts),
    ('conductor', conductor.conductor_opts),
    ('database', database.sqlite_opts),
    (limits.GROUP, limits.limits_opts),
    (metrics.GROUP, metrics.metrics_opts),
    (placement.GROUP, placement.list_opts()),
    (reservation.GROUP, reservation.reservation_opts),
]


def list_opts():
    """Return (group, options) pairs of ironic_alloc's own options.

    Library options ([database] connection, [oslo_messaging_*], logging...)
    come from the libraries' own entry points listed in
    tools/config/ironic-alloc-config-generator.conf.
    """
    return [(group, list(itertools.chain(opts))) for group, opts in _opts]


def update_opt_defaults():
    policy.set_defaults(cfg.CONF)
    log.set_defaults(default_log_levels=[
        'amqp=WARNING',
        'amqplib=WARNING',
        'sqlalchemy=WARNING',
        'oslo_messaging=INFO',
        'oslo.messaging=INFO',
        'oslo_db=INFO',
        'stevedore=INFO',
        'keystonemiddleware=WARNING',
        'keystoneauth=WARNING',
        'urllib3.connectionpool=WARNING',
        'futurist=INFO',
        'alembic=INFO',
    ])
