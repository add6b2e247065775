"""oslo.messaging plumbing shared by the API (client) and conductor (server).

``init()`` is called once per process.  The standalone service uses the
in-process ``fake://`` transport, so API and conductor talk through
oslo.messaging without a broker.
"""

import threading
import time

from oslo_log import log
import oslo_messaging as messaging
from oslo_messaging import opts as messaging_opts
from oslo_messaging.rpc import dispatcher

from ironic_alloc.common import compat
from ironic_alloc.common import context as ia_context
from ironic_alloc.common import exception
from ironic_alloc.common import release_mappings
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
    global TRANSPORT, _REPLY_QUEUE
    with _LOCK:
        if TRANSPORT is not None:
            TRANSPORT.cleanup()
        TRANSPORT = None
        _REPLY_QUEUE = None


class _ReplyQueueSetup:
    """The reply queue of one transport, created by one thread at a time.

    oslo.messaging's AMQP drivers create the queue that RPC replies come
    back on at a process's first call, connecting with unbounded retries
    under a driver lock: the call's ``timeout`` and ``retry`` do not apply.
    With the broker down, that first call, and every call queued behind the
    lock, would hang until the broker is back.  Here one background thread
    creates the queue; callers wait for it with a bound and never enter the
    driver's set-up themselves, so at most one thread is ever stuck in it.
    Once an attempt has run longer than a caller's bound, the broker is
    known to be unreachable and callers answer at once.
    """

    def __init__(self, create):
        """:param create: the function that creates the queue, or None
            when the transport needs none (in-process ``fake://``)."""
        self._create = create
        self.ready = threading.Event()
        self._thread = None
        self._started_at = None
        self._lock = threading.Lock()
        if self._create is None:
            self.ready.set()

    def start(self):
        """Start creating the queue unless it exists or is being created.

        :returns: when the attempt in flight started (time.monotonic()).
        """
        with self._lock:
            if self.ready.is_set() or (self._thread is not None
                                       and self._thread.is_alive()):
                return self._started_at
            self._started_at = time.monotonic()
            self._thread = threading.Thread(
                target=self._run, name='rpc-reply-queue', daemon=True)
            self._thread.start()
            return self._started_at

    def wait(self, timeout):
        """Wait for the queue while its creation has taken less than
        ``timeout`` seconds.

        :raises: MessageBrokerUnreachable when it is not ready by then.
        """
        if self.ready.is_set():
            return
        started = self.start()
        left = timeout - (time.monotonic() - started)
        if left <= 0:
            raise exception.MessageBrokerUnreachable(
                reason='the queue for RPC replies could not be created '
                       'in %d seconds of trying' % (time.monotonic() -
                                                   started))
        if not self.ready.wait(left):
            raise exception.MessageBrokerUnreachable(
                reason='the queue for RPC replies could not be created '
                       'within %s seconds' % timeout)

    def _run(self):
        try:
            self._create()
        except Exception:
            # NOTE: not retried here: the next call that needs the queue
            # starts a new attempt.
            LOG.exception('Creating the RPC reply queue failed')
            return
        LOG.debug('RPC reply queue ready')
        self.ready.set()


_REPLY_QUEUE = None


def _reply_queue_creator(transport, conf=CONF):
    if messaging.TransportURL.parse(conf).transport == 'fake':
        return None
    try:
        return compat.rpc_reply_queue_creator(transport)
    except compat.LibraryChanged as exc:
        # NOTE: calls then create the queue themselves, as oslo.messaging
        # does without this set-up.
        LOG.error('%s', exc)
        return None


def _reply_queue():
    global _REPLY_QUEUE
    transport = init()
    with _LOCK:
        if _REPLY_QUEUE is None:
            _REPLY_QUEUE = _ReplyQueueSetup(_reply_queue_creator(transport))
        return _REPLY_QUEUE


def prepare_reply_queue():
    """Start creating this process's RPC reply queue; does not block.

    Called when a process that makes RPC calls starts, so that its first
    call does not wait for the set-up.
    """
    _reply_queue().start()


def reply_queue_ready():
    """Whether RPC calls can be sent without waiting for the reply queue
    (its creation is started when it is not)."""
    setup = _reply_queue()
    if not setup.ready.is_set():
        setup.start()
        return False
    return True


def wait_for_reply_queue(timeout):
    """Wait at most ``timeout`` seconds for the RPC reply queue.

    :raises: MessageBrokerUnreachable when it is not ready in time (the
        broker cannot be reached); set-up goes on in the background.
    """
    _reply_queue().wait(timeout)


def set_defaults(control_exchange, conf=CONF):
    # NOTE: not messaging.set_transport_defaults(): it replaces the option
    # object registered above, which then clashes at get_transport().
    conf.set_default('control_exchange', control_exchange)


class RequestContextSerializer(messaging.Serializer):
    """Serializes objects with the versioned-object serializer and the
    request context as a plain dict."""

    def __init__(self, object_versions=None):
        self._base = objects_base.IronicAllocObjectSerializer(
            object_versions)

    def serialize_entity(self, context, entity):
        return self._base.serialize_entity(context, entity)

    def deserialize_entity(self, context, entity):
        return self._base.deserialize_entity(context, entity)

    def serialize_context(self, context):
        return context.to_dict()

    def deserialize_context(self, context):
        return ia_context.RequestContext.from_dict(context)


def _pinned_serializer(conf):
    return RequestContextSerializer(
        release_mappings.object_versions(conf.pin_release_version))


def get_client(target, conf=CONF):
    """An RPC client; while ``[DEFAULT]pin_release_version`` is set, its
    messages are capped at that release's RPC API version and objects."""
    return messaging.get_rpc_client(
        init(), target,
        version_cap=release_mappings.rpc_version_cap(
            conf.pin_release_version),
        serializer=_pinned_serializer(conf))


def get_server(target, endpoints, conf=CONF):
    """An RPC server running endpoints on native threads; the objects it
    answers with are at the pinned release's versions, if any."""
    return messaging.get_rpc_server(
        init(), target, endpoints, executor='threading',
        serializer=_pinned_serializer(conf),
        access_policy=dispatcher.DefaultRPCAccessPolicy)
