"""A bound on the requests one API process works on at once.

One Python process runs one thread at a time: beyond a few requests in
progress, more of them only make every request, and the conductor threads
of the standalone service, wait longer for the interpreter (see
``[api]max_concurrent_requests``).  A request gives its slot back while it
waits for something outside the process, such as a conductor's answer.
"""

import contextlib
import threading

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
