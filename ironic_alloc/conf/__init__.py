"""Configuration options of ironic_alloc, registered on one global CONF."""

from oslo_config import cfg

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

CONF = cfg.CONF

allocation.register_opts(CONF)
api.register_opts(CONF)
conductor.register_opts(CONF)
database.register_opts(CONF)
default.register_opts(CONF)
limits.register_opts(CONF)
metrics.register_opts(CONF)
notification.register_opts(CONF)
placement.register_opts(CONF)
policy.register_opts(CONF)
reservation.register_opts(CONF)
