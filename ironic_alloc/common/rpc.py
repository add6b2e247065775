"""oslo.messaging plumbing shared by the API (client) and conductor (server).

``init()`` is called once per process.  The standalone service uses the
in-process ``fake://`` transport, so API and conductor talk through
oslo.messaging without a broker.
"""

import threading

from oslo_log import log
import oslo_messaging as messaging
from oslo_messaging import opts as messaging_opts
from oslo_messaging.rpc import dispatcher

from ironic_alloc.common import context as ia_context
from ironic_alloc.conf import CONF
from ironic_alloc.objects import base as objects_base

LOG = log.getLogger(__name__)

TRANSPORT = None
_LOCK = threading.Lock()

# NOTE: only our own exceptions are re-raised on the caller's side, each
# with its HTTP status (see common/exception.py).
ALLOWED_EXMODS = ['ironic_alloc.common.exception']

CONDUCTOR_TOPIC = 'ironic_alloc.conductor_manager'


def register_opts(conf=CONF):
    # NOTE: registered up front (oslo.messaging would do it lazily) so that
    # [DEFAULT]transport_url can be read and overridden before init().
    for group, opts in messaging_opts.list_opts():
        conf.register_opts(opts, group=group)


register_opts()


def init(conf=CONF):
    """Create the process-wide RPC transport (idempotent)."""
    global TRANSPORT
    with _LOCK:
        if TRANSPORT is None:
            TRANSPORT = messaging.get_rpc_transport(
                conf, allowed_remote_exmods=ALLOWED_EXMODS)
    return TRANSPORT


def cleanup():
    global TRANSPORT
    with _LOCK:
        if TRANSPORT is not None:
            TRANSPORT.cleanup()
        TRANSPORT = None


def set_defaults(control_exchange, conf=CONF):
    # NOTE: not messaging.set_transport_defaults(): it replaces the option
    # object registered above, which then clashes at get_transport().
    conf.set_default('control_exchange', control_exchange)


class RequestContextSerializer(messaging.Serializer):
    """Serializes objects with the versioned-object serializer and the
    request context as a plain dict."""

    def __init__(self):
        self._base = objects_base.IronicAllocObjectSerializer()

    def serialize_entity(self, context, entity):
        return self._base.serialize_entity(context, entity)

    def deserialize_entity(self, context, entity):
        return self._base.deserialize_entity(context, entity)

    def serialize_context(self, context):
        return context.to_dict()

    def deserialize_context(self, context):
        return ia_context.RequestContext.from_dict(context)


def get_client(target, version_cap=None):
    return messaging.get_rpc_client(init(), target,
                                    version_cap=version_cap,
                                    serializer=RequestContextSerializer())


def get_server(target, endpoints):
    """An RPC server running endpoints on native threads."""
    return messaging.get_rpc_server(
        init(), target, endpoints, executor='threading',
        serializer=RequestContextSerializer(),
        access_policy=dispatcher.DefaultRPCAccessPolicy)
