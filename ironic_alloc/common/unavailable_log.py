"""Quiet logging of failures caused by something unavailable.

While the database, the message broker or the conductors cannot be
reached, every request fails the same way (a 503 the client may retry):
that is no fault of the service, and a line with a traceback per request
would bury everything else in the log.  An ``UnavailableLog`` writes one
WARNING line per cause, without a traceback, at most once every
``[DEFAULT]unavailable_log_interval`` seconds in a process; the first
line of a cause after its interval is preceded by a line counting the
ones left out meanwhile.
"""

import threading
import time

from ironic_alloc.conf import CONF

# NOTE: causes remembered at once; beyond it, causes whose interval has
# ended are forgotten (their count written), and a new cause that still
# finds no room is written every time rather than left out.
MAX_CAUSES = 256


def cause_of_answer(error):
    """The cause of an error answer, as an UnavailableLog key: the class
    of the error (MessageBrokerUnreachable, ConductorUnreachable...), and
    for a plain TemporaryFailure, which says no more, its message too."""
    name = type(error).__name__
    if name == 'TemporaryFailure':
        return '%s: %s' % (name, error)
    return name


def first_line(error):
    """``error``'s class and the first line of its text, cut short: no
    traceback a remote error carries in its text."""
    text = (str(error).strip().splitlines() or [''])[0]
    return '%s: %s' % (type(error).__name__, text[:300])


def origin_of(error):
    """first_line() of the error under ``error`` (its ``__cause__``), or
    ''."""
    if error.__cause__ is None:
        return ''
    return first_line(error.__cause__)


class UnavailableLog:
    """WARNING lines of ``logger``, at most one per cause per interval.

    :param clock: seconds, monotonic.
    """

    def __init__(self, logger, clock=time.monotonic):
        self._logger = logger
        self._clock = clock
        self._lock = threading.Lock()
        # cause -> [when its last line was written, lines left out since]
        self._causes = {}

    def warning(self, cause, msg, *args):
        """Write ``msg % args`` unless a line of ``cause`` was written
        less than the interval ago (then count it).

        :returns: whether the line was written.
        """
        interval = CONF.unavailable_log_interval
        now = self._clock()
        with self._lock:
            state = self._causes.get(cause)
            if state is not None and now - state[0] < interval:
                state[1] += 1
                return False
            forgotten = []
            if state is None and len(self._causes) >= MAX_CAUSES:
                forgotten = self._forget_ended(now, interval)
            if state is not None or len(self._causes) < MAX_CAUSES:
                self._causes[cause] = [now, 0]
        for ended_cause, (written_at, left_out) in forgotten:
            self._summary(ended_cause, left_out, now - written_at)
        if state is not None and state[1]:
            self._summary(cause, state[1], now - state[0])
        self._logger.warning(msg, *args)
        return True

    def _forget_ended(self, now, interval):
        ended = [(c, s) for c, s in self._causes.items()
                 if now - s[0] >= interval]
        for cause, _state in ended:
            del self._causes[cause]
        return [(c, s) for c, s in ended if s[1]]

    def _summary(self, cause, left_out, seconds):
        self._logger.warning(
            '%(count)d more line(s) of cause "%(cause)s" left out in the '
            'last %(seconds)d s ([DEFAULT]unavailable_log_interval)',
            {'count': left_out, 'cause': cause, 'seconds': seconds})
