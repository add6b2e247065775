"""Client side of the conductor RPC API.

API version history:

    1.0 - Initial version: node updates, deletion, traits, provision and
          power actions, allocation creation (cast) and deletion (call).
    1.1 - change_node_power_state: ``timeout`` argument.
    1.2 - create_allocation: ``wait`` argument; sent as a call with it.
    1.3 - create_allocation_group (cast): allocation groups.
    1.4 - release_allocation_group (cast): what the backend holds for the
          members of a deleted group.

Released versions are recorded in common/release_mappings.py; while
``[DEFAULT]pin_release_version`` is set, the client sends nothing newer
than that release's version.
"""

import datetime
import hashlib
import random
import threading
import time

from kombu import exceptions as kombu_exc
from oslo_log import log
import oslo_messaging as messaging

from ironic_alloc.common import exception
from ironic_alloc.common import metrics
from ironic_alloc.common import request_slots
from ironic_alloc.common import rpc
from ironic_alloc.common import unavailable_log
from ironic_alloc.conf import CONF
from ironic_alloc.objects import conductor as conductor_obj

LOG = log.getLogger(__name__)

# NOTE: must equal ConductorManager.RPC_API_VERSION and the 'master' entry
# of common/release_mappings.py.
RPC_API_VERSION = '1.4'

# NOTE: how many times a message is re-sent when the broker connection
# fails.  oslo.messaging's default (None) retries forever: while the broker
# is down every cast and call would block its API request (and its thread)
# until the broker is back, instead of answering.  One retry rides over a
# connection the broker closed when it restarted.
SEND_RETRIES = 1

# NOTE: how long get_random_conductor(recent=True) reuses the list of live
# conductors it read.  The database stays the source of truth: a pick that
# died or stopped meanwhile only delays its allocation, which the live
# conductors take over from the database.
RECENTLY_ALIVE_SECONDS = 1.0

# NOTE: how much longer than the conductor's wait a create_allocation call
# waits for the conductor's answer.
CALL_MARGIN_SECONDS = 1.0

# NOTE: a conductor whose heartbeat is more than this many heartbeat
# intervals older than the newest one of the live conductors has missed
# beats (dead, paused or cut off from its database): it is asked after
# the others (prefer_fresh()).  Compared with the newest heartbeat rather
# than with a clock, so that no host's clock matters.
MISSED_HEARTBEATS = 2

# NOTE: a call that is safe to repeat is not sent to another conductor
# with less time than this left of [api]rpc_call_timeout.
MIN_ATTEMPT_SECONDS = 1.0

# The RemoteError types of a conductor that could not reach its database.
LOST_DATABASE = ('DBConnectionError', 'OperationalError')

_FAILOVERS = unavailable_log.UnavailableLog(LOG)


def _wrap_transport_errors(f):
    """Turn 'the conductor did not answer' into a clear 503."""
    def wrapper(*args, **kwargs):
        try:
            # NOTE: waiting for a conductor, the request lets another one
            # use the interpreter.
            with request_slots.released():
                return f(*args, **kwargs)
        except messaging.MessagingTimeout as exc:
            metrics.rpc_failure(f.__name__, metrics.RPC_TIMEOUT)
            raise exception.ConductorUnreachable(
                reason='no answer within %s seconds' %
                CONF.api.rpc_call_timeout) from exc
        except messaging.MessageDeliveryFailure as exc:
            metrics.rpc_failure(f.__name__, metrics.RPC_DELIVERY)
            raise exception.ConductorUnreachable(
                reason='message delivery failed') from exc
        except (kombu_exc.OperationalError, ConnectionError) as exc:
            # NOTE: with bounded retries (SEND_RETRIES), a connection the
            # rabbit driver could not open surfaces as kombu's error.
            metrics.rpc_failure(f.__name__, metrics.RPC_BROKER)
            raise exception.ConductorUnreachable(
                reason='message broker unreachable') from exc
        except messaging.MessagingException as exc:
            if isinstance(exc, messaging.RemoteError):
                if exc.exc_type in LOST_DATABASE:
                    # NOTE: the conductor lost the database: as temporary
                    # for the client as the API losing it (503).
                    metrics.rpc_failure(f.__name__,
                                        metrics.RPC_REMOTE_DATABASE)
                    raise exception.TemporaryFailure(
                        'The conductor could not reach the database. The '
                        'request may be retried.') from exc
                metrics.rpc_failure(f.__name__, metrics.RPC_REMOTE_ERROR)
                raise
            metrics.rpc_failure(f.__name__, metrics.RPC_OTHER)
            raise exception.ConductorUnreachable(
                reason=type(exc).__name__) from exc
    wrapper.__name__ = f.__name__
    wrapper.__doc__ = f.__doc__
    return wrapper


def fresh_conductors(alive, interval):
    """The conductors of ``alive`` that missed no heartbeat: none more
    than MISSED_HEARTBEATS intervals older than the newest heartbeat.

    :param alive: live Conductor objects.
    :param interval: [conductor]heartbeat_interval, in seconds.
    """
    beats = [c.heartbeat_at for c in alive if c.heartbeat_at is not None]
    if not beats:
        return list(alive)
    oldest = max(beats) - datetime.timedelta(
        seconds=MISSED_HEARTBEATS * interval)
    return [c for c in alive
            if c.heartbeat_at is not None and c.heartbeat_at >= oldest]


def prefer_fresh(first, alive, interval):
    """The order in which the conductors of a call are asked: the fresh
    ones (fresh_conductors()) before the others, ``first`` (the choice of
    the routing: the node's hashed conductor, or a random one) ahead of
    its kind, the rest each by newest heartbeat.

    :param first: a hostname, or None.
    :param alive: live Conductor objects that may serve the call.
    :returns: their hostnames, each once.
    """
    fresh = {id(c) for c in fresh_conductors(alive, interval)}
    newest_first = sorted(
        alive, key=lambda c: c.heartbeat_at.timestamp()
        if c.heartbeat_at is not None else float('-inf'), reverse=True)
    ordered = sorted(newest_first, key=lambda c: (id(c) not in fresh,
                                                  c.hostname != first))
    hostnames = []
    for conductor in ordered:
        if conductor.hostname not in hostnames:
            hostnames.append(conductor.hostname)
    return hostnames


class Route:
    """The conductors that may serve one call, in the order they are
    asked (prefer_fresh()).  Only a call that is safe to repeat goes past
    the first."""

    def __init__(self, hostnames):
        if not hostnames:
            raise ValueError('a route needs a conductor')
        self.hostnames = tuple(hostnames)

    @property
    def first(self):
        return self.hostnames[0]

    def __str__(self):
        return self.first

    def __repr__(self):
        return 'Route(%r)' % (self.hostnames,)


def _hostnames(host):
    """The conductors to ask, in turn: ``host`` is a Route or one
    hostname."""
    return host.hostnames if isinstance(host, Route) else (host,)


class ConductorAPI:
    """Client side of the conductor RPC API (see the module docstring)."""

    recently_alive_seconds = RECENTLY_ALIVE_SECONDS

    def __init__(self, topic=rpc.CONDUCTOR_TOPIC):
        self.topic = topic
        self._recently_alive = (None, [])
        self._recently_alive_lock = threading.Lock()
        target = messaging.Target(topic=self.topic,
                                  version=RPC_API_VERSION)
        self.client = rpc.get_client(target)

    # Routing

    @staticmethod
    def _alive(context, conductor_group=None):
        return conductor_obj.Conductor.list_alive(
            context, CONF.conductor.heartbeat_timeout,
            conductor_group=conductor_group)

    @staticmethod
    def conductor_for_node(node, alive):
        """The conductor serving ``node`` among preloaded live conductors.

        Lets a caller that shows many nodes load the live conductors once.

        :param alive: live Conductor objects (of any groups).
        :raises: NoValidHost when no conductor of the node's group is in
            ``alive``.
        """
        group = (node.conductor_group or '').lower()
        hostnames = sorted(c.hostname for c in alive
                           if (c.conductor_group or '').lower() == group)
        if not hostnames:
            raise exception.NoValidHost(
                reason='no conductor of conductor group "%s" is alive'
                % (node.conductor_group or ''))
        digest = hashlib.md5(node.uuid.encode(),
                             usedforsecurity=False).hexdigest()
        return hostnames[int(digest, 16) % len(hostnames)]

    def route_for_node(self, context, node):
        """The Route of a call about ``node``: the live conductors of its
        conductor group, its hashed one (conductor_for_node(): stable
        while the set of live conductors of the group does not change)
        first unless it missed heartbeats.  Any of them can serve the
        call: the conductor takes the node's lock itself.

        :raises: NoValidHost when no conductor of the group is alive.
        """
        alive = self._alive(context, node.conductor_group or '')
        first = self.conductor_for_node(node, alive)
        return Route(prefer_fresh(first, alive,
                                  CONF.conductor.heartbeat_interval))

    def route_to_any(self, context):
        """The Route of a call any conductor can serve: a random pick
        (get_random_conductor(recent=True)) first, then the other live
        conductors.

        :raises: NoValidHost when none is alive.
        """
        first = self.get_random_conductor(context, recent=True)
        return Route(prefer_fresh(first.hostname,
                                  [first] + self._recent_alive(context),
                                  CONF.conductor.heartbeat_interval))

    def list_alive_conductors(self, context):
        """All live conductors, for conductor_for_node()."""
        return self._alive(context)

    def get_random_conductor(self, context, recent=False):
        """Any live conductor, one that missed no heartbeat if there is
        one (fresh_conductors()).

        :param recent: accept conductors seen alive up to
            ``recently_alive_seconds`` ago, for work that the live
            conductors take over when its owner dies (new allocations) or
            that fails in time when it does (calls), so that not every
            request reads the conductors table.
        :raises: NoValidHost when none is alive.
        """
        alive = (self._recent_alive(context) if recent
                 else self._alive(context))
        if not alive:
            raise exception.NoValidHost(reason='no conductor is alive')
        return random.choice(fresh_conductors(
            alive, CONF.conductor.heartbeat_interval) or alive)

    def _recent_alive(self, context):
        with self._recently_alive_lock:
            read_at, alive = self._recently_alive
        now = time.monotonic()
        if read_at is not None and now - read_at < self.recently_alive_seconds:
            return alive
        alive = self._alive(context)
        # NOTE: an empty answer is not kept: a conductor that starts is
        # used at once.
        with self._recently_alive_lock:
            self._recently_alive = (now if alive else None, alive)
        return alive

    def _prepare_call(self, host, version='1.0'):
        """A call context bounded by ``[api]rpc_call_timeout`` in all.

        :raises: MessageBrokerUnreachable when the reply queue cannot be
            created in time.
        """
        timeout = CONF.api.rpc_call_timeout
        started = time.monotonic()
        rpc.wait_for_reply_queue(timeout)
        # NOTE: the wait for the reply queue and the call share one bound.
        remaining = max(1.0, timeout - (time.monotonic() - started))
        return self.client.prepare(server=_hostnames(host)[0],
                                   version=version, timeout=remaining,
                                   retry=SEND_RETRIES)

    def _call_repeatable(self, context, host, method, gone=(), **kwargs):
        """Call ``method``, which is safe to repeat, on the conductors of
        ``host`` in turn, within ``[api]rpc_call_timeout`` in all.

        The next one is asked when one shows no sign of life for
        ``[api]rpc_attempt_timeout`` (a conductor working on the call
        sends oslo.messaging's call-monitor heartbeats, so a slow call is
        not sent twice) or answers that it could not reach its database.
        The message to a silent conductor expires with the call.

        :param host: a Route, or one hostname.
        :param gone: exceptions that, from a conductor asked after
            another, mean the work is done: the earlier one did it after
            all.
        :raises: what the last conductor asked raised; MessageBroker-
            Unreachable as _prepare_call().
        """
        hostnames = _hostnames(host)
        timeout = CONF.api.rpc_call_timeout
        deadline = time.monotonic() + timeout
        rpc.wait_for_reply_queue(timeout)
        silent_after = CONF.api.rpc_attempt_timeout
        failure = None
        for number, hostname in enumerate(hostnames, 1):
            remaining = deadline - time.monotonic()
            if failure is not None and remaining < MIN_ATTEMPT_SECONDS:
                raise failure
            remaining = max(MIN_ATTEMPT_SECONDS, remaining)
            options = {}
            monitored = (number < len(hostnames)
                         and remaining > silent_after)
            if monitored:
                options['call_monitor_timeout'] = silent_after
            cctxt = self.client.prepare(server=hostname, version='1.0',
                                        timeout=remaining,
                                        retry=SEND_RETRIES, **options)
            try:
                return cctxt.call(context, method, **kwargs)
            except gone:
                if failure is None:
                    raise
                LOG.info('%(method)s: conductor %(host)s finds it done '
                         'already, by a conductor asked before',
                         {'method': method, 'host': hostname})
                return None
            except messaging.MessagingTimeout as exc:
                if not monitored:
                    raise
                failure, reason = exc, metrics.RPC_TIMEOUT
                why = 'showed no sign of life for %s seconds' % silent_after
            except messaging.RemoteError as exc:
                if (number == len(hostnames)
                        or exc.exc_type not in LOST_DATABASE):
                    raise
                failure, reason = exc, metrics.RPC_REMOTE_DATABASE
                why = 'could not reach its database'
            metrics.rpc_failover(method, reason)
            # NOTE: while a conductor is lost, every request routed to it
            # fails over: one line per conductor and reason per interval.
            _FAILOVERS.warning(
                '%s %s' % (hostname, reason),
                'Conductor %(host)s %(why)s in %(method)s; asking '
                'conductor %(next)s', {
                    'host': hostname, 'why': why, 'method': method,
                    'next': hostnames[number]})
        raise failure

    # Nodes

    # NOTE: the node calls below take ``host``, a Route (route_for_node())
    # or one hostname.  Those safe to repeat go to the next conductor of
    # the Route when one fails to serve them (_call_repeatable()): each
    # sets values or deletes, so a second conductor doing it again, or
    # finding it done, leaves what the client asked for.  Provision and
    # power actions start work that is not safe to start twice: they go
    # to the Route's first conductor only.

    @_wrap_transport_errors
    def update_node(self, context, node, host):
        """Save the changed fields of a node under its lock.

        Repeatable: the same fields set to the same values; an instance
        removed once has no allocation left to remove.

        :returns: the updated node.
        :raises: NodeLocked, InvalidState, NodeAssociated, DuplicateName,
            InstanceAssociated, NodeNotFound, ConductorUnreachable.
        """
        return self._call_repeatable(context, host, 'update_node',
                                     node_obj=node)

    @_wrap_transport_errors
    def destroy_node(self, context, node_id, host):
        """Delete a node.  Repeatable: a node already gone is deleted.

        :raises: NodeLocked, InvalidState, NodeProtected, NodeAssociated,
            NodeNotFound, ConductorUnreachable.
        """
        return self._call_repeatable(context, host, 'destroy_node',
                                     gone=exception.NodeNotFound,
                                     node_id=node_id)

    @_wrap_transport_errors
    def set_node_traits(self, context, node_id, traits, host):
        """Replace a node's traits under its lock.  Repeatable.

        :raises: NodeLocked, NodeNotFound, ConductorUnreachable.
        """
        return self._call_repeatable(context, host, 'set_node_traits',
                                     node_id=node_id, traits=traits)

    @_wrap_transport_errors
    def add_node_trait(self, context, node_id, trait, host):
        """Repeatable: a trait the node has is not added again.

        :raises: NodeLocked, NodeNotFound, ConductorUnreachable.
        """
        return self._call_repeatable(context, host, 'add_node_trait',
                                     node_id=node_id, trait=trait)

    @_wrap_transport_errors
    def remove_node_trait(self, context, node_id, trait, host):
        """Repeatable: a trait already gone is removed.

        :raises: NodeLocked, NodeNotFound, NodeTraitNotFound,
            ConductorUnreachable.
        """
        return self._call_repeatable(context, host, 'remove_node_trait',
                                     gone=exception.NodeTraitNotFound,
                                     node_id=node_id, trait=trait)

    @_wrap_transport_errors
    def do_provisioning_action(self, context, node_id, action, host,
                               configdrive=None):
        """Start a provision action; it finishes asynchronously.  Sent to
        the first conductor of ``host`` only.

        :param action: a canonical action of states.VERBS.
        :raises: NodeLocked, InvalidStateRequested, NodeInMaintenance,
            NodeProtected, NoFreeConductorWorker, ConductorUnreachable.
        """
        return self._prepare_call(host).call(
            context, 'do_provisioning_action', node_id=node_id,
            action=action, configdrive=configdrive)

    @_wrap_transport_errors
    def change_node_power_state(self, context, node_id, new_state, host,
                                timeout=None):
        """Start a power action; it finishes asynchronously.  Sent to the
        first conductor of ``host`` only.

        :param timeout: seconds the action may take before it fails; None
            for no bound.  Dropped (with a warning) while
            pinned to a release older than RPC 1.1, whose conductors do
            not know it.
        :raises: NodeLocked, InvalidParameterValue, NoFreeConductorWorker,
            ConductorUnreachable.
        """
        kwargs = {'node_id': node_id, 'new_state': new_state}
        version = '1.0'
        if self.client.can_send_version('1.1'):
            version = '1.1'
            kwargs['timeout'] = timeout
        elif timeout is not None:
            LOG.warning('Power timeout of node %(node)s not sent: RPC is '
                        'pinned to release %(pin)s, which ignores it',
                        {'node': node_id, 'pin': CONF.pin_release_version})
        return self._prepare_call(host, version).call(
            context, 'change_node_power_state', **kwargs)

    # Allocations

    def create_allocation(self, context, allocation_id, host, wait=0):
        """Wake conductor ``host`` up to process an allocation.

        The allocation row is already committed with conductor_affinity =
        that conductor, which re-drives it periodically, so a lost message
        only delays it: transport errors are logged, never raised.

        :param wait: seconds to wait for the conductor to finish the work
            (a call, RPC 1.2); 0, or a conductor too old, sends a cast.
        :returns: True when the conductor finished the work in the wait:
            the row then holds its end state.
        """
        # NOTE: a call needs the reply queue: until it exists (the
        # process's first requests, or the broker is down), cast.
        call = bool(wait and self.client.can_send_version('1.2')
                    and rpc.reply_queue_ready())
        try:
            # NOTE: sending is quick unless the broker is unreachable; then
            # it waits for its reconnection attempts (and a call for the
            # conductor), and must not hold a request slot meanwhile (other
            # requests would queue behind it).
            with request_slots.released():
                if not call:
                    self.client.prepare(server=host, version='1.0',
                                        retry=SEND_RETRIES).cast(
                        context, 'create_allocation',
                        allocation_id=allocation_id)
                    return False
                # NOTE: the conductor stops waiting at ``wait`` and
                # answers; the margin lets that answer arrive in time.
                return bool(self.client.prepare(
                    server=host, version='1.2',
                    timeout=wait + CALL_MARGIN_SECONDS,
                    retry=SEND_RETRIES).call(
                        context, 'create_allocation',
                        allocation_id=allocation_id, wait=wait))
        except messaging.MessagingTimeout:
            metrics.rpc_failure('create_allocation', metrics.RPC_TIMEOUT)
            LOG.info('Conductor %(host)s did not answer in time for '
                     'allocation %(id)s; it goes on from the database',
                     {'host': host, 'id': allocation_id})
        except Exception as exc:
            metrics.rpc_failure('create_allocation', metrics.RPC_OTHER)
            LOG.warning('%(kind)s of allocation %(id)s to %(host)s failed '
                        '(%(exc)s); the conductor re-drives it from the '
                        'database', {'kind': 'Call' if call else 'Cast',
                                     'id': allocation_id, 'host': host,
                                     'exc': exc})
        return False

    def create_allocation_group(self, context, group_id, host):
        """Wake conductor ``host`` up to process an allocation group (a
        cast).

        The group is committed with conductor_affinity = that conductor,
        which re-drives its groups periodically: transport errors are
        logged, never raised.
        """
        try:
            with request_slots.released():
                self.client.prepare(server=host, version='1.3',
                                    retry=SEND_RETRIES).cast(
                    context, 'create_allocation_group', group_id=group_id)
        except Exception as exc:
            metrics.rpc_failure('create_allocation_group', metrics.RPC_OTHER)
            LOG.warning('Cast of allocation group %(id)s to %(host)s failed '
                        '(%(exc)s); the conductor re-drives it from the '
                        'database', {'id': group_id, 'host': host,
                                     'exc': exc})

    def release_allocation_group(self, context, members, host):
        """Ask conductor ``host`` to release what its backend holds
        outside the database for the members of a group the API deleted
        (a cast).

        The rows are gone already; the backend's periodic work releases
        what a lost cast leaves, so transport errors are logged, never
        raised.

        :param members: [(allocation uuid, id of the node it held, or
            None)].
        """
        if not self.client.can_send_version('1.4'):
            LOG.info('Not asking conductor %(host)s to release the members '
                     'of a deleted allocation group: pinned to release '
                     '%(pin)s; the periodic work releases them',
                     {'host': host, 'pin': CONF.pin_release_version})
            return
        try:
            with request_slots.released():
                self.client.prepare(server=host, version='1.4',
                                    retry=SEND_RETRIES).cast(
                    context, 'release_allocation_group',
                    members=[[uuid, node_id] for uuid, node_id in members])
        except Exception as exc:
            metrics.rpc_failure('release_allocation_group', metrics.RPC_OTHER)
            LOG.warning('Cast of the release of %(count)d allocation group '
                        'member(s) to %(host)s failed (%(exc)s); the '
                        'backend\'s periodic work releases them',
                        {'count': len(members), 'host': host, 'exc': exc})

    @_wrap_transport_errors
    def destroy_allocation(self, context, allocation_id, host):
        """Delete an allocation and free its node (a call).  Repeatable
        (any conductor can do it: it takes no node lock): an allocation
        already gone is deleted.

        :param host: a Route (route_to_any()), or one hostname.
        :raises: AllocationNotFound, InvalidState, ConductorUnreachable.
        """
        return self._call_repeatable(context, host, 'destroy_allocation',
                                     gone=exception.AllocationNotFound,
                                     allocation_id=allocation_id)
