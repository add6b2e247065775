"""Sending of the versioned notifications, one sender per process.

A request (or a conductor's worker) never waits for the message broker:
``send()`` puts the notification in a bounded queue and returns; one
daemon thread of the process takes them out and hands them to
oslo.messaging's notifier.  A notification that finds the queue full, or
that the notifier cannot deliver, is dropped: counted in the metric
``ironic_alloc_notifications_dropped_total`` and logged once per burst of
drops.  The notifier's retries are bounded
(``[DEFAULT]notification_send_retries``): its default retries for ever,
and the one thread would then hold every later notification behind a
broker that does not answer.

The sender is made on first use in each process, so that the workers of
``ironic-alloc-api``, forked after start-up, each have their own thread
and connection.  ``stop()`` sends what is queued (within a bound) and
closes the transport.
"""

import contextlib
import os
import queue
import threading

from oslo_config import cfg
from oslo_log import log
import oslo_messaging

from ironic_alloc.common import compat
from ironic_alloc.common import metrics
from ironic_alloc.conf import CONF

LOG = log.getLogger(__name__)

# Priorities, lowest first ([DEFAULT]notification_level).
LEVELS = ('debug', 'info', 'warning', 'error', 'critical')
_RANK = {level: rank for rank, level in enumerate(LEVELS)}

# The publisher ids are Ironic's: "<service>.<host>".
API_SERVICE = 'ironic-api'
CONDUCTOR_SERVICE = 'ironic-conductor'

# Why a notification was dropped (the metric's "reason").
DROP_QUEUE_FULL = 'queue_full'
DROP_SEND_FAILED = 'send_failed'
DROP_STOPPING = 'stopping'
DROP_REASONS = metrics.NOTIFICATION_DROP_REASONS

# How long stop() lets the thread send what is queued.
STOP_TIMEOUT = 10

_STOP = object()
_lock = threading.Lock()
_sender = None


def host():
    return CONF.host


def enabled(level):
    """Whether notifications of priority ``level`` are sent."""
    threshold = CONF.notification_level
    return threshold is not None and _RANK[level] >= _RANK[threshold]


def check_config(conf=CONF):
    """Stop start-up on malformed notification options.

    oslo.config checks ``choices`` only when an option is read, and the
    transport URL only when a transport is made: both are done here.

    :raises: SystemExit with one line naming the option.
    """
    try:
        level = conf.notification_level
        topics = conf.versioned_notifications_topics
    except cfg.ConfigFileValueError as exc:
        raise SystemExit('Invalid notification option: %s' % exc)
    if level is None:
        return
    if not topics or not all(t.strip() for t in topics):
        raise SystemExit('Invalid [DEFAULT]versioned_notifications_topics: '
                         'a list of non-empty topics is needed when '
                         '[DEFAULT]notification_level is set')
    try:
        transport = oslo_messaging.get_notification_transport(conf)
    except (oslo_messaging.InvalidTransportURL,
            oslo_messaging.DriverLoadFailure) as exc:
        raise SystemExit('Invalid transport for notifications '
                         '([oslo_messaging_notifications]transport_url or '
                         '[DEFAULT]transport_url): %s' % exc)
    transport.cleanup()
    if not conf.oslo_messaging_notifications.driver:
        LOG.warning('[DEFAULT]notification_level is %s but '
                    '[oslo_messaging_notifications]driver is empty: no '
                    'notification will leave this process (set it to '
                    'messagingv2)', level)


class _Sender:
    """The queue, its thread and the notifier of one process."""

    def __init__(self, conf):
        self.pid = os.getpid()
        self.queue = queue.Queue(maxsize=conf.notification_queue_size)
        self.transport = oslo_messaging.get_notification_transport(conf)
        self.notifier = oslo_messaging.Notifier(
            self.transport, topics=conf.versioned_notifications_topics,
            retry=conf.notification_send_retries)
        self.failures = compat.NotifierFailures()
        self.burst = 0
        self.burst_lock = threading.Lock()
        self.thread = threading.Thread(target=self._run,
                                       name='notifications', daemon=True)
        self.thread.start()

    def put(self, item):
        try:
            self.queue.put_nowait(item)
        except queue.Full:
            self.dropped(DROP_QUEUE_FULL)

    def dropped(self, reason):
        metrics.notification_dropped(reason)
        with self.burst_lock:
            self.burst += 1
            first = self.burst == 1
        if first:
            # NOTE: one line for a burst of drops; the end of the burst
            # logs how many there were.
            LOG.warning('Dropping notifications (%s); the count is in the '
                        'metric ironic_alloc_notifications_dropped_total',
                        reason)

    def _delivered(self):
        with self.burst_lock:
            burst, self.burst = self.burst, 0
        if burst:
            LOG.warning('Notifications are sent again after %d were '
                        'dropped', burst)

    def _run(self):
        while True:
            item = self.queue.get()
            if item is _STOP:
                return
            ctxt, level, event_type, publisher_id, payload = item
            try:
                notifier = self.notifier.prepare(publisher_id=publisher_id)
                with self.failures.watch() as failed:
                    getattr(notifier, level)(ctxt, event_type, payload)
            except Exception:
                LOG.exception('Sending notification %s failed', event_type)
                self.dropped(DROP_SEND_FAILED)
                continue
            if failed:
                self.dropped(DROP_SEND_FAILED)
            else:
                self._delivered()

    def stop(self, timeout):
        try:
            self.queue.put(_STOP, timeout=timeout)
        except queue.Full:
            pass
        self.thread.join(timeout)
        left = 0
        while True:
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                break
            if item is not _STOP:
                left += 1
        for _ in range(left):
            self.dropped(DROP_STOPPING)
        self.failures.close()
        if not self.thread.is_alive():
            self.transport.cleanup()


def _get():
    global _sender
    sender = _sender
    if sender is None or sender.pid != os.getpid():
        with _lock:
            # NOTE: a sender inherited through fork() has no thread here.
            if _sender is None or _sender.pid != os.getpid():
                _sender = _Sender(CONF)
            sender = _sender
    return sender


def running():
    """Whether this process has a sender (made by the first notification
    sent)."""
    sender = _sender
    return sender is not None and sender.pid == os.getpid()


def send(context, level, event_type, publisher_id, payload):
    """Queue one notification; never raises, never blocks.

    :param context: the request context (or None: an empty one is sent).
    :param payload: the payload already serialised (a primitive).
    """
    try:
        ctxt = context.to_dict() if context is not None else {}
        _get().put((ctxt, level, event_type, publisher_id, payload))
    except Exception:
        LOG.exception('Queueing notification %s failed', event_type)
        metrics.notification_dropped(DROP_SEND_FAILED)


@contextlib.contextmanager
def never_failing(obj, action, status):
    """Around the making of one notification: a failure to build it is
    logged and counted, never raised to the request or the worker."""
    try:
        yield
    except Exception:
        LOG.exception('Building notification %s.%s.%s failed; it is '
                      'dropped', obj, action, status)
        metrics.notification_dropped(DROP_SEND_FAILED)


def stop(timeout=STOP_TIMEOUT):
    """Send what is queued, within ``timeout`` seconds, and stop this
    process's sender (a no-op when none was made)."""
    global _sender
    with _lock:
        sender, _sender = _sender, None
    if sender is not None and sender.pid == os.getpid():
        sender.stop(timeout)
