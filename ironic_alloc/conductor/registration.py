"""Registration and heartbeat of one conductor process."""

import threading

from oslo_log import log

from ironic_alloc.common import context as ia_context
from ironic_alloc.conf import CONF
from ironic_alloc.objects import conductor as conductor_obj

LOG = log.getLogger(__name__)


class Registration:
    """The conductor's row: registered at start, kept alive by a heartbeat
    thread, marked offline at stop.

    :param on_replaced: called (on a new thread) when another process
        registered the same hostname: this one is stale from then on.
    """

    def __init__(self, host, on_replaced):
        self.host = host
        self.context = ia_context.get_admin_context()
        self.conductor = None
        self._on_replaced = on_replaced
        self._stopping = threading.Event()
        self._thread = None

    @property
    def id(self):
        return self.conductor.id

    def register(self):
        """Register under a new row id (a restart is a new conductor)."""
        self.conductor = conductor_obj.Conductor.register(
            self.context, self.host, CONF.conductor.conductor_group)
        LOG.info('Conductor %(host)s registered with id %(id)s',
                 {'host': self.host, 'id': self.conductor.id})

    def start_heartbeat(self):
        self._thread = threading.Thread(target=self._heartbeat_loop,
                                        name='heartbeat', daemon=True)
        self._thread.start()

    def alive_conductors(self):
        """The conductors whose heartbeat is recent, this one included
        while its own heartbeat is."""
        return conductor_obj.Conductor.list_alive(
            self.context, CONF.conductor.heartbeat_timeout)

    def stop_heartbeat(self):
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()

    def unregister(self):
        if self.conductor is None:
            return
        try:
            self.conductor.unregister()
        except Exception:
            LOG.exception('Could not mark conductor %s offline', self.host)

    def _heartbeat_loop(self):
        # NOTE: the interval is read on every turn: it is mutable.
        while not self._stopping.wait(CONF.conductor.heartbeat_interval):
            try:
                alive = self.conductor.touch()
            except Exception:
                LOG.exception('Heartbeat of conductor %s failed; retrying',
                              self.host)
                continue
            LOG.debug('Conductor %s wrote its heartbeat', self.host)
            if not alive:
                # NOTE: another process registered this hostname: this one
                # is stale and its conditional writes fail from now on.
                LOG.error('Conductor %s was replaced by a newer process '
                          'of the same host; stopping', self.host)
                threading.Thread(target=self._on_replaced,
                                 daemon=True).start()
                return
