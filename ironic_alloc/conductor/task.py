"""Node locks held by a conductor while it changes a node."""

import contextlib
import time

from oslo_log import log

from ironic_alloc.common import exception
from ironic_alloc.conf import CONF
from ironic_alloc.objects import node as node_obj

LOG = log.getLogger(__name__)


@contextlib.contextmanager
def node_lock(context, node_id, host):
    """Lock a node for the body of a ``with`` block.

    The body may call ``handoff()`` on the yielded lock to keep the node
    locked past the block (a worker thread then releases it).

    Every taker is an RPC endpoint answering an API request, so each
    waits for a lock another operation holds (see ``reserve``).

    :raises: NodeLocked, NodeNotFound.
    """
    lock = NodeLock(reserve(context, node_id, host), host)
    try:
        yield lock
    finally:
        if not lock.handed_off:
            lock.release()


def reserve(context, node_id, host):
    """Lock a node for ``host``, trying again while another holds it.

    Ironic's rule: at most ``[conductor]node_locked_retry_attempts``
    tries, ``[conductor]node_locked_retry_interval`` seconds apart, so a
    request that meets a short operation on the node waits for it instead
    of failing with 409.  Each try is its own short transaction: nothing
    is held in the database while waiting.  No try starts later than half
    of ``[api]rpc_call_timeout`` after the first: the API must get this
    answer before it stops waiting for it, or it would answer 503 for a
    change made after all.

    :returns: the locked node.
    :raises: NodeLocked after the last try, NodeNotFound.
    """
    attempts = CONF.conductor.node_locked_retry_attempts
    interval = CONF.conductor.node_locked_retry_interval
    last_start = time.monotonic() + CONF.api.rpc_call_timeout / 2.0
    for attempt in range(1, attempts + 1):
        try:
            return node_obj.Node.reserve(context, host, node_id)
        except exception.NodeLocked as exc:
            if (attempt == attempts
                    or time.monotonic() + interval > last_start):
                raise
            LOG.debug('%(exc)s; trying again in %(interval)s s',
                      {'exc': exc, 'interval': interval})
        time.sleep(interval)


class NodeLock:

    def __init__(self, node, host):
        self.node = node
        self.host = host
        self.handed_off = False

    def handoff(self):
        self.handed_off = True

    def release(self, values=None):
        if not self.node.release(self.host, values):
            LOG.warning('Lock of node %(node)s held by %(host)s was '
                        'released by someone else (a take-over?)',
                        {'node': self.node.uuid, 'host': self.host})
            return False
        return True
