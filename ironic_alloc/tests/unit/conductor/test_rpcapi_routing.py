"""Which conductors the API asks, in which order, and within what time
(conductor/rpcapi.py: prefer_fresh(), ConductorAPI._call_repeatable())."""

import datetime
import types

import fixtures
import oslo_messaging as messaging

from ironic_alloc.common import exception
from ironic_alloc.common import rpc
from ironic_alloc.conductor import rpcapi
from ironic_alloc.tests import base

NOW = datetime.datetime(2026, 11, 28, 12, 0, 0,
                        tzinfo=datetime.timezone.utc)
INTERVAL = 10


def _conductor(hostname, age):
    """A live conductor whose heartbeat is ``age`` seconds old (None: it
    has none)."""
    beat = None if age is None else NOW - datetime.timedelta(seconds=age)
    return types.SimpleNamespace(hostname=hostname, heartbeat_at=beat)


class TestPreferFresh(base.TestCase):

    def test_fresh_first_pick_is_kept_first(self):
        alive = [_conductor('a', 5), _conductor('b', 0), _conductor('c', 12)]
        self.assertEqual(['c', 'b', 'a'],
                         rpcapi.prefer_fresh('c', alive, INTERVAL))

    def test_first_pick_that_missed_heartbeats_goes_after_the_fresh(self):
        alive = [_conductor('a', 5), _conductor('b', 0), _conductor('c', 21),
                 _conductor('d', 50)]
        self.assertEqual(['b', 'a', 'c', 'd'],
                         rpcapi.prefer_fresh('c', alive, INTERVAL))
        self.assertEqual(['b', 'a', 'd', 'c'],
                         rpcapi.prefer_fresh('d', alive[:2] + alive[3:] +
                                             alive[2:3], INTERVAL))

    def test_two_intervals_behind_the_newest_is_still_fresh(self):
        alive = [_conductor('old', 2 * INTERVAL + 3), _conductor('new', 3)]
        self.assertEqual(['old', 'new'],
                         rpcapi.prefer_fresh('old', alive, INTERVAL))
        self.assertEqual(['old', 'new'], [
            c.hostname for c in rpcapi.fresh_conductors(alive, INTERVAL)])

    def test_without_heartbeats_the_first_pick_leads(self):
        alive = [_conductor('a', None), _conductor('b', None)]
        self.assertEqual(['b', 'a'],
                         rpcapi.prefer_fresh('b', alive, INTERVAL))
        self.assertEqual(['b', 'a'], rpcapi.prefer_fresh(
            'b', alive + [_conductor('c', 0)], INTERVAL)[1:])

    def test_a_hostname_registered_twice_is_asked_once(self):
        # A restarted conductor: the killed registration looks alive
        # until its heartbeat times out.
        alive = [_conductor('a', 40), _conductor('a', 1), _conductor('b', 0)]
        self.assertEqual(['a', 'b'],
                         rpcapi.prefer_fresh('a', alive, INTERVAL))

    def test_random_picks_avoid_conductors_that_missed_heartbeats(self):
        alive = [_conductor('a', 0), _conductor('b', 30)]
        self.assertEqual(['a'], [
            c.hostname for c in rpcapi.fresh_conductors(alive, INTERVAL)])


class _Clock:
    """The time rpcapi reads (time.monotonic), moved by the conductors'
    scripted answers instead of by waiting."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now


class _ScriptedConductors:
    """Stands in for the RPC client: each conductor answers as its
    script says.  NOTE: the in-process fake:// transport has no
    call-monitor heartbeats, so a silent conductor cannot be told from a
    slow one in-process; the multi-process tier
    (tests/multiprocess/test_conductor_failover.py) runs this for real
    over RabbitMQ."""

    def __init__(self, clock, script):
        self.clock = clock
        self.script = script
        self.asked = []

    def can_send_version(self, version):
        return True

    def prepare(self, server, version, timeout, retry,
                call_monitor_timeout=None):
        return types.SimpleNamespace(call=lambda ctx, method, **kw: self._call(
            server, method, timeout, call_monitor_timeout))

    def _call(self, server, method, timeout, monitor):
        self.asked.append({'host': server, 'method': method,
                           'at': self.clock.now, 'timeout': timeout,
                           'monitor': monitor})
        answer = self.script[server]
        if answer == 'silent':
            # NOTE: oslo.messaging gives up after the call-monitor time
            # when there is one, else after the call's timeout.
            self.clock.now += monitor or timeout
            raise messaging.MessagingTimeout('no reply')
        if isinstance(answer, Exception):
            raise answer
        return answer


class TestCallRepeatable(base.TestCase):

    def setUp(self):
        super().setUp()
        self.config(transport_url='fake://')
        self.config(rpc_call_timeout=10, rpc_attempt_timeout=3,
                    group='api')
        rpc.init()
        self.clock = _Clock()
        self.useFixture(fixtures.MonkeyPatch(
            'ironic_alloc.conductor.rpcapi.time', self.clock))
        self.api = rpcapi.ConductorAPI()

    def _script(self, **answers):
        self.api.client = _ScriptedConductors(self.clock, answers)
        return self.api.client

    def _asked(self):
        return [(a['host'], a['monitor']) for a in self.api.client.asked]

    def test_silent_conductor_then_the_next(self):
        self._script(a='silent', b=None, c=None)
        self.api.destroy_allocation(self.context, 1,
                                    rpcapi.Route(['a', 'b', 'c']))
        self.assertEqual([('a', 3), ('b', 3)], self._asked())

    def test_conductor_without_its_database_then_the_next(self):
        self._script(a=messaging.RemoteError('DBConnectionError', 'gone'),
                     b='node')
        self.assertEqual('node', self.api.update_node(
            self.context, object(), rpcapi.Route(['a', 'b'])))
        self.assertEqual([('a', 3), ('b', None)], self._asked())
        self._script(a=messaging.RemoteError('OperationalError', 'gone'),
                     b=None)
        self.api.set_node_traits(self.context, 1, [],
                                 rpcapi.Route(['a', 'b']))
        self.assertEqual(['a', 'b'], [h for h, _m in self._asked()])

    def test_other_errors_are_answers(self):
        self._script(a=messaging.RemoteError('ValueError', 'bad'), b=None)
        self.assertRaises(messaging.RemoteError, self.api.destroy_node,
                          self.context, 1, rpcapi.Route(['a', 'b']))
        self._script(a=exception.NodeLocked(node='n', host='x'), b=None)
        self.assertRaises(exception.NodeLocked, self.api.add_node_trait,
                          self.context, 1, 'CUSTOM_A',
                          rpcapi.Route(['a', 'b']))
        self.assertEqual(['a'], [h for h, _m in self._asked()])

    def test_gone_after_another_conductor_means_done(self):
        self._script(a='silent', b=exception.AllocationNotFound(
            allocation=1))
        self.assertIsNone(self.api.destroy_allocation(
            self.context, 1, rpcapi.Route(['a', 'b'])))
        self._script(a='silent', b=exception.NodeTraitNotFound(
            node_id=1, trait='CUSTOM_A'))
        self.assertIsNone(self.api.remove_node_trait(
            self.context, 1, 'CUSTOM_A', rpcapi.Route(['a', 'b'])))
        self._script(a='silent', b=exception.NodeNotFound(node=1))
        self.assertIsNone(self.api.destroy_node(
            self.context, 1, rpcapi.Route(['a', 'b'])))

    def test_gone_from_the_first_conductor_is_not_found(self):
        self._script(a=exception.AllocationNotFound(allocation=1), b=None)
        self.assertRaises(exception.AllocationNotFound,
                          self.api.destroy_allocation, self.context, 1,
                          rpcapi.Route(['a', 'b']))
        self.assertEqual(['a'], [h for h, _m in self._asked()])

    def test_last_conductor_without_its_database_is_503(self):
        self._script(a=messaging.RemoteError('DBConnectionError', 'gone'),
                     b=messaging.RemoteError('DBConnectionError', 'gone'))
        self.assertRaises(exception.TemporaryFailure,
                          self.api.destroy_allocation, self.context, 1,
                          rpcapi.Route(['a', 'b']))
        self.assertEqual(['a', 'b'], [h for h, _m in self._asked()])

    def test_actions_not_safe_to_repeat_ask_the_first_only(self):
        self._script(a='silent', b=None)
        route = rpcapi.Route(['a', 'b'])
        self.assertRaises(exception.ConductorUnreachable,
                          self.api.do_provisioning_action, self.context, 1,
                          'manage', route)
        self.assertRaises(exception.ConductorUnreachable,
                          self.api.change_node_power_state, self.context, 1,
                          'power on', route)
        self.assertEqual([('a', None), ('a', None)], self._asked())

    def test_every_attempt_within_the_overall_bound(self):
        started = self.clock.now
        self._script(a='silent', b='silent', c='silent', d='silent',
                     e='silent')
        self.assertRaises(exception.ConductorUnreachable,
                          self.api.destroy_allocation, self.context, 1,
                          rpcapi.Route(['a', 'b', 'c', 'd', 'e']))
        asked = self.api.client.asked
        # 3 + 3 + 3 seconds of silence, then the 1 second left goes to
        # the fourth, whose silence is the call's timeout.
        self.assertEqual([('a', 3), ('b', 3), ('c', 3), ('d', None)],
                         self._asked())
        for attempt in asked:
            self.assertLessEqual(
                attempt['at'] + (attempt['monitor'] or attempt['timeout']),
                started + 10)
        self.assertEqual(started + 10, self.clock.now)

    def test_no_next_conductor_without_time_for_it(self):
        self.config(rpc_call_timeout=7, group='api')
        self._script(a='silent', b='silent', c=None)
        # After 3 + 3 seconds of silence, the second left go to c, with no
        # call monitor: there is no time for another after it.
        self.api.destroy_allocation(self.context, 1,
                                    rpcapi.Route(['a', 'b', 'c']))
        self.assertEqual([('a', 3), ('b', 3), ('c', None)], self._asked())
        self.config(rpc_call_timeout=6, group='api')
        self._script(a='silent', b='silent', c=None)
        # b gets the 3 seconds left, all of them: c is never asked.
        self.assertRaises(exception.ConductorUnreachable,
                          self.api.destroy_allocation, self.context, 1,
                          rpcapi.Route(['a', 'b', 'c']))
        self.assertEqual([('a', 3), ('b', None)], self._asked())

    def test_one_hostname_is_one_attempt(self):
        self._script(a='silent')
        self.assertRaises(exception.ConductorUnreachable,
                          self.api.destroy_allocation, self.context, 1, 'a')
        self.assertEqual([('a', None)], self._asked())

