"""Node locks held by a conductor while it changes a node."""

import contextlib

from oslo_log import log

from ironic_alloc.objects import node as node_obj

LOG = log.getLogger(__name__)


@contextlib.contextmanager
def node_lock(context, node_id, host):
    """Lock a node for the body of a ``with`` block.

    The body may call ``handoff()`` on the yielded lock to keep the node
    locked past the block (a worker thread then releases it).

    :raises: NodeLocked, NodeNotFound.
    """
    lock = NodeLock(node_obj.Node.reserve(context, host, node_id), host)
    try:
        yield lock
    finally:
        if not lock.handed_off:
            lock.release()


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
