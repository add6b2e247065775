"""A bound on the requests one API process works on at once.

One Python process runs one thread at a time: beyond a few requests in
progress, more of them only make every request, and the conductor threads
of the standalone service, wait longer for the interpreter (see
``[api]max_concurrent_requests``).  A request gives its slot back while it
waits for something outside the process, such as a conductor's answer:
the web server's own pool of threads cannot, which is why the bound is a
middleware of ours rather than the size of that pool.

Slots are taken in the order requests ask for them: a slot given back goes
to the request that has waited longest, never to a thread that asks again
at once (as a plain semaphore lets it), which keeps the longest waits
short.
"""

import collections
import contextlib
import threading

from oslo_log import log

LOG = log.getLogger(__name__)

# NOTE: the slots held by the request this thread serves, if any.
_held = threading.local()


class RequestSlots:
    """At most ``limit`` holders at once, served first come, first
    served; 0 for no limit."""

    def __init__(self, limit):
        self._limit = limit
        self._lock = threading.Lock()
        self._free = limit
        # NOTE: one locked lock per waiting thread, oldest first; a
        # holder leaving unlocks the oldest, handing its slot over.
        self._waiting = collections.deque()

    def waiting(self):
        """How many threads wait for a slot."""
        with self._lock:
            return len(self._waiting)

    def acquire(self):
        """Take a slot, after every thread that asked before."""
        with self._lock:
            if self._free and not self._waiting:
                self._free -= 1
                return
            turn = threading.Lock()
            turn.acquire()
            self._waiting.append(turn)
        turn.acquire()

    def release(self):
        """Give the slot back: to the oldest waiting thread, if any."""
        with self._lock:
            if self._waiting:
                self._waiting.popleft().release()
            elif self._free < self._limit:
                self._free += 1
            else:
                raise RuntimeError('a request slot released twice')

    @contextlib.contextmanager
    def held(self):
        """Hold a slot (waiting for one) while the request is served."""
        if not self._limit:
            yield
            return
        self.acquire()
        _held.slots = self
        try:
            yield
        finally:
            _held.slots = None
            self.release()


@contextlib.contextmanager
def released():
    """Let another request run while this thread waits outside Python."""
    slots = getattr(_held, 'slots', None)
    if slots is None:
        yield
        return
    _held.slots = None
    slots.release()
    try:
        yield
    finally:
        slots.acquire()
        _held.slots = slots


def bounded(app, limit):
    """``app`` run by at most ``limit`` requests at once (0: no limit).

    The slot is held while the application builds its response; sending
    it to the client, however slow the client, holds none.  Each request
    is logged at debug level, as a web server's access log would.
    """
    slots = RequestSlots(limit)

    def bounded_app(environ, start_response):
        statuses = []

        def recording_start_response(status, headers, exc_info=None):
            statuses.append(status)
            return start_response(status, headers, exc_info)

        with slots.held():
            result = app(environ, recording_start_response)
        LOG.debug('%(client)s "%(method)s %(path)s" %(status)s',
                  {'client': environ.get('REMOTE_ADDR'),
                   'method': environ.get('REQUEST_METHOD'),
                   'path': environ.get('PATH_INFO'),
                   'status': statuses[-1] if statuses else '-'})
        return result

    return bounded_app
