"""The only module that uses private parts of libraries.

ironic_alloc uses the public API of its libraries everywhere else (a
structure test, ``TestNoPrivateLibraryParts`` in
``ironic_alloc/tests/unit/test_structure.py``, fails on a private name of
a library in any other module).  Each entry here does what no public API
does; it checks the shape of the private part it relies on each time it
runs, raises ``LibraryChanged`` when that shape is not there, and its
caller logs the error and carries on without the feature.  The unit tests
of ``ironic_alloc/tests/unit/test_compat.py`` fail on a library that
changed shape.

Entries, and why each exists:

``rpc_reply_queue_creator()`` (oslo.messaging, correctness)
    The AMQP drivers create the queue on which RPC replies arrive during
    a process's first call, with unbounded retries under a driver lock
    that ignore the call's ``timeout`` and ``retry``: with the message
    broker down, every caller would hang.  ``common/rpc.py`` creates the
    queue in one background thread, and callers wait for it with a bound.
    oslo.messaging has no public way to create the queue without sending a
    call.

``NotifierFailures`` (oslo.messaging, correctness)
    oslo.messaging's notifier and its messaging drivers catch a failed
    send (the broker unreachable, retries exhausted) and log it with the
    whole payload, at error level, instead of raising: their caller cannot
    tell a notification delivered from one lost.
    ``common/notifications.py`` counts the lost ones and logs them once
    per burst; this filter of the two modules' loggers tells it which
    sends failed, in the sending thread only, and keeps their records
    (payloads included) out of the log.

``cache_pecan_signatures()`` (Pecan, speed-up)
    Pecan inspects the signature of the controller it routes through and
    of the one it calls on every request, building a new namedtuple class
    each time.  The one function Pecan calls for every inspection is a
    private module global; this replaces it with one that keeps the
    answers per function.

``replace_pool()`` (SQLAlchemy, speed-up)
    oslo.db gives an SQLite file a ``NullPool``: a new connection, set up
    again, for every transaction.  A new pool keeps the event listeners of
    the pool it replaces (the dialect's and oslo.db's connection set-up)
    only through the private argument SQLAlchemy's own ``Pool.recreate()``
    uses; no public API lists or copies the listeners of a pool.

What the speed-ups save, measured with the standalone service on SQLite
(``python -m tools.bench sweep --sizes 1000 --allocations 500
--concurrency 20``), as the service's CPU seconds in the allocate phase
per allocation: six alternating pairs of runs of commit 6312535 with and
without each, on the 2-CPU reference machine of
doc/source/admin/performance.rst, shared with other work (one-minute load
average 3.3 to 10.7) on 2026-11-25.  Every run: 500 of 500 allocations
active, no error, every check passed.

* Signature cache: 14.0-17.7 ms (median 15.44) with it, 15.3-17.6 ms
  (median 16.74) without; without it a pair used 6.4 % more CPU (median
  of the six pairs' differences, -0.3 to +12.3 %): the cache saves 6.0 %
  of the CPU per allocation.
* SQLite pool (``[database]sqlite_pool_size`` at its default, and 0):
  12.5-17.6 ms (median 15.45) with it, 19.1-23.1 ms (median 21.05)
  without; without it a pair used 33.8 % more CPU (median of the
  differences, +21.7 to +66.9 %): the pool saves 25.2 % of the CPU per
  allocation.
"""

import contextlib
import inspect
import logging
import threading

from oslo_messaging.notify import messaging as om_messaging_driver
from oslo_messaging.notify import notifier as om_notifier
from pecan import util as pecan_util
from sqlalchemy import events as sa_events
from sqlalchemy import pool as sa_pool


class LibraryChanged(RuntimeError):
    """A library no longer has the private part an entry here relies on."""

    def __init__(self, library, part, feature):
        super().__init__(
            '%(lib)s changed: %(part)s is not there any more, so '
            '%(feature)s is off (see ironic_alloc/common/compat.py)'
            % {'lib': library, 'part': part, 'feature': feature})


def _takes_no_arguments(func):
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty
               or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in params)


def rpc_reply_queue_creator(transport):
    """The function that creates ``transport``'s queue for RPC replies.

    Calling it blocks until the queue exists (while the broker is
    unreachable, for ever); it returns at once once it does.  For a
    transport whose URL has a broker (not ``fake://``).

    :raises: LibraryChanged when the transport's driver has no such
        function.
    """
    feature = ('creating the RPC reply queue with a bound on the wait '
               '(calls hang while the message broker is unreachable)')
    driver = getattr(transport, '_driver', None)
    create = getattr(driver, '_get_reply_q', None)
    if create is None or not _takes_no_arguments(create):
        raise LibraryChanged(
            'oslo.messaging', 'Transport._driver._get_reply_q() of the %s'
            % type(driver).__name__, feature)
    return create


# Where oslo.messaging logs a notification it failed to send, instead of
# raising: (module, its logger's attribute, the function that logs,
# a part of the logged message).  The messaging drivers log a failure of
# the transport; the notifier logs a failure of any other driver.
_NOTIFY_FAILURE_LOGS = (
    (om_messaging_driver, 'LOG', ('MessagingDriver', 'notify'),
     'Could not send notification to'),
    (om_notifier, '_LOG', ('Notifier', '_notify'),
     'attempting to send to'),
)


def notifier_failure_loggers():
    """{logger name: message part} of the failures NotifierFailures sees.

    :raises: LibraryChanged when oslo.messaging no longer logs a failed
        send where and as it did.
    """
    feature = 'counting the notifications oslo.messaging failed to send'
    found = {}
    for module, attribute, (cls, func), marker in _NOTIFY_FAILURE_LOGS:
        logger = getattr(module, attribute, None)
        if (not isinstance(logger, logging.Logger)
                or logger.name != module.__name__):
            raise LibraryChanged('oslo.messaging', 'the logger %s.%s'
                                 % (module.__name__, attribute), feature)
        try:
            source = inspect.getsource(getattr(getattr(module, cls), func))
        except (AttributeError, OSError, TypeError):
            source = ''
        if marker not in source or '.exception(' not in source:
            raise LibraryChanged('oslo.messaging', '%s.%s.%s() logging "%s"'
                                 % (module.__name__, cls, func, marker),
                                 feature)
        found[logger.name] = marker
    return found


class NotifierFailures(logging.Filter):
    """Which notifications the notifier failed to send.

    ``with failures.watch() as failed:`` around one send in a thread;
    ``failed`` is true afterwards when the notifier logged a failure of
    that send.  Failures of other threads are left to the log.
    """

    def __init__(self):
        super().__init__()
        self._local = threading.local()
        try:
            self._markers = notifier_failure_loggers()
        except LibraryChanged as exc:
            logging.getLogger(__name__).error('%s', exc)
            self._markers = {}
        for name in self._markers:
            logging.getLogger(name).addFilter(self)

    @contextlib.contextmanager
    def watch(self):
        failed = []
        self._local.failed = failed
        try:
            yield failed
        finally:
            self._local.failed = None

    def filter(self, record):
        failed = getattr(self._local, 'failed', None)
        if failed is None:
            return True
        marker = self._markers.get(record.name)
        if (marker is not None and record.levelno >= logging.ERROR
                and marker in str(record.msg)):
            failed.append(record)
            return False
        return True

    def close(self):
        for name in self._markers:
            logging.getLogger(name).removeFilter(self)


_signatures_cached = threading.Lock()


def _signature_probe(self, probe_argument):
    """Inspected by cache_pecan_signatures() to check the cache is used."""


def cache_pecan_signatures():
    """Make Pecan inspect each function's signature once per process.

    Signatures do not change while the process runs.  Idempotent.

    :raises: LibraryChanged when Pecan does not inspect signatures through
        the function this replaces.
    """
    feature = 'the cache of controller signatures'
    with _signatures_cached:
        inspect_signature = getattr(pecan_util, '_getargspec', None)
        if getattr(inspect_signature, 'cached', False):
            return
        if inspect_signature is None or not callable(inspect_signature):
            raise LibraryChanged('Pecan', 'pecan.util._getargspec()',
                                 feature)
        answers = {}

        def getargspec(func):
            # NOTE: a bound method has the signature of its function.
            key = getattr(func, '__func__', func)
            try:
                return answers[key]
            except KeyError:
                answer = answers[key] = inspect_signature(func)
                return answer
            except TypeError:  # unhashable: not a plain function
                return inspect_signature(func)

        getargspec.cached = True
        pecan_util._getargspec = getargspec
        # NOTE: pecan.util.getargspec() must now answer from the cache;
        # when it no longer calls the function replaced, the cache is
        # useless: put the original back and say so.
        answer = pecan_util.getargspec(_signature_probe)
        if (answers.get(_signature_probe) is not answer
                or list(answer.args) != ['self', 'probe_argument']):
            pecan_util._getargspec = inspect_signature
            raise LibraryChanged('Pecan', 'pecan.util.getargspec() calling '
                                 'pecan.util._getargspec()', feature)


# The events of SQLAlchemy's pools (sqlalchemy.events.PoolEvents).
_POOL_EVENTS = tuple(
    name for name, value in vars(sa_events.PoolEvents).items()
    if inspect.isfunction(value) and not name.startswith('_'))


def replace_pool(engine, pool_class, creator, **pool_args):
    """Give ``engine`` a new ``pool_class(creator, **pool_args)`` that
    keeps every event listener of the engine's current pool.

    The current pool is disposed of.

    :raises: LibraryChanged when SQLAlchemy's pools cannot be given the
        listeners of another; the engine then keeps its pool.
    """
    feature = 'the pool of SQLite connections'
    if '_dispatch' not in inspect.signature(sa_pool.Pool).parameters:
        raise LibraryChanged('SQLAlchemy', 'Pool(_dispatch=...)', feature)
    old_pool = engine.pool
    new_pool = pool_class(creator, dialect=engine.dialect,
                          _dispatch=old_pool.dispatch, **pool_args)
    for name in _POOL_EVENTS:
        old_listeners = list(getattr(old_pool.dispatch, name, ()))
        new_listeners = list(getattr(new_pool.dispatch, name, ()))
        if old_listeners != new_listeners:
            new_pool.dispose()
            raise LibraryChanged(
                'SQLAlchemy', 'Pool(_dispatch=...) copying the %r '
                'listeners' % name, feature)
    engine.pool = new_pool
    old_pool.dispose()
