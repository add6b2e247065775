"""A bound on the requests one API process works on at once.

One Python process runs one thread at a time: beyond a few requests in
progress, more of them only make every request, and the conductor threads
of the standalone service, wait longer for the interpreter (see
``[api]max_concurrent_requests``).  A request gives its slot back while it
waits for something outside the process, such as a conductor's answer:
the web server's own pool of threads cannot, which is why the bound is a
middleware of ours rather than the size of that pool.
"""

import contextlib
import threading

from oslo_log import log

LOG = log.getLogger(__name__)

# NOTE: the slots held by the request this thread serves, if any.
_held = threading.local()


class RequestSlots:
    """At most ``limit`` holders at once; 0 for no limit."""

    def __init__(self, limit):
        self._semaphore = threading.BoundedSemaphore(limit) if limit else None

    @contextlib.contextmanager
    def held(self):
        """Hold a slot (waiting for one) while the request is served."""
        if self._semaphore is None:
            yield
            return
        self._semaphore.acquire()
        _held.slots = self
        try:
            yield
        finally:
            _held.slots = None
            self._semaphore.release()


@contextlib.contextmanager
def released():
    """Let another request run while this thread waits outside Python."""
    slots = getattr(_held, 'slots', None)
    if slots is None:
        yield
        return
    _held.slots = None
    slots._semaphore.release()
    try:
        yield
    finally:
        slots._semaphore.acquire()
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
