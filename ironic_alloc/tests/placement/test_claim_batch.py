"""Claims of concurrent allocations in one POST /allocations
(placement_batch.ClaimBatcher) against a real Placement: which claims
share a request, and what happens when Placement refuses or does not
answer it."""

import threading

from ironic_alloc.common import exception
from ironic_alloc.common import states
from ironic_alloc.conductor.backends import placement_batch
from ironic_alloc.conductor.backends import placement_claims
from ironic_alloc.tests.placement import test_allocations

WAIT = 30


class TestClaimBatcher(test_allocations.PlacementAllocationTestCase):

    def setUp(self):
        super().setUp()
        self.size = 10
        self.use_client(self.client)
        self.outcomes = {}
        self.threads = []

    def use_client(self, client):
        """Claim through ``client``, recording the requests it sends."""
        self.sent = []
        self.post_bodies = []
        send = client.request

        def recording(method, path, body=None, expected=(200,)):
            self.sent.append((method, path))
            if (method, path) == ('POST', '/allocations'):
                self.post_bodies.append(body)
            return send(method, path, body=body, expected=expected)

        client.request = recording
        self.batcher = placement_batch.ClaimBatcher(client,
                                                    lambda: self.size)

    def put(self, consumer, provider):
        """A claim sent alone (as the conductor's _Claimer does, without
        its handling of the answers)."""
        try:
            self.batcher.client.put('/allocations/%s' % consumer.uuid,
                                    placement_claims.claim_body(
                                        consumer, provider, 'CUSTOM_GOLD'),
                                    expected=(204,))
            return 'alone'
        except exception.PlacementConflict:
            return 'refused'
        except exception.PlacementUnavailable:
            return 'unavailable'

    def claim(self, name, provider, before=None, entered=None):
        """Claim ``provider`` for a new consumer in a thread; ``before``
        (an Event) holds its claim sent alone back until it is set, and
        ``entered`` is set when that claim starts."""
        consumer = test_allocations.nova_instance()

        def alone():
            if entered is not None:
                entered.set()
            if before is not None:
                self.assertTrue(before.wait(WAIT))
            return self.put(consumer, provider)

        def run():
            self.outcomes[name] = self.batcher.claim(
                consumer.uuid, provider,
                placement_claims.claim_body(consumer, provider,
                                            'CUSTOM_GOLD'),
                alone, 'shared')

        thread = threading.Thread(target=run)
        thread.start()
        self.threads.append(thread)
        return consumer

    def hold_turns(self, providers):
        """Claims that take every turn (one per request in flight) and
        keep them until finish(); the first of ``providers`` is claimed in
        the turn that passes to the waiting claims.

        :returns: the releases of the turns, for finish().
        """
        self.assertEqual(placement_batch.REQUESTS_IN_FLIGHT, len(providers))
        releases = []
        for index, provider in enumerate(providers):
            release = threading.Event()
            entered = threading.Event()
            self.claim('first' if index == 0 else 'turn-%d' % index,
                       provider, before=release, entered=entered)
            self.assertTrue(entered.wait(WAIT))
            releases.append(release)
        return releases

    def queue(self, claims):
        """Claims made while the turns are held: (name, provider)."""
        consumers = {}
        for count, (name, provider) in enumerate(claims, 1):
            consumers[name] = self.claim(name, provider)
            self.wait_for(lambda: self.batcher.waiting == count,
                          'claim %s waiting' % name)
        return consumers

    def finish(self, releases=()):
        """Release the first turn and let the waiting claims finish, then
        release the other turns."""
        holders = len(releases)
        if releases:
            releases[0].set()
        for thread in self.threads[holders:]:
            thread.join(WAIT)
            self.assertFalse(thread.is_alive())
        for release in releases[1:]:
            release.set()
        for thread in self.threads:
            thread.join(WAIT)
            self.assertFalse(thread.is_alive())

    def posts(self):
        return [call for call in self.sent
                if call == ('POST', '/allocations')]

    def test_claims_made_meanwhile_share_one_post(self):
        nodes = [self.node() for _ in range(5)]
        self.sync()
        del self.sent[:]
        releases = self.hold_turns([nodes[0].uuid])
        waiting = self.queue([('n%d' % i, node.uuid)
                              for i, node in enumerate(nodes[1:], 1)])
        self.finish(releases)
        self.assertEqual({'first': 'alone', 'n1': 'shared', 'n2': 'shared',
                          'n3': 'shared', 'n4': 'shared'}, self.outcomes)
        self.assertEqual(['PUT', 'POST'],
                         [method for method, _path in self.sent])
        self.assertEqual(1, len(self.consumers(nodes[0].uuid)))
        for index, node in enumerate(nodes[1:], 1):
            self.assertEqual({waiting['n%d' % index].uuid},
                             self.consumers(node.uuid))
        # The turns ended: the next claim is sent at once, alone.
        later = self.node()
        self.sync()
        del self.sent[:]
        self.claim('later', later.uuid)
        self.finish()
        self.assertEqual('alone', self.outcomes['later'])
        self.assertEqual([], self.posts())

    def test_at_most_claim_batch_size_claims_per_post(self):
        self.size = 2
        nodes = [self.node() for _ in range(6)]
        self.sync()
        del self.sent[:]
        releases = self.hold_turns([nodes[0].uuid])
        self.queue([('n%d' % i, node.uuid)
                    for i, node in enumerate(nodes[1:], 1)])
        self.finish(releases)
        # Five waiting claims: two POSTs of two, and the last claim alone.
        self.assertEqual(2, len(self.posts()))
        self.assertEqual(['alone'] * 2 + ['shared'] * 4,
                         sorted(self.outcomes.values()))
        for node in nodes:
            self.assertEqual(1, len(self.consumers(node.uuid)))

    def test_a_refused_post_sends_each_claim_alone(self):
        free = [self.node() for _ in range(3)]
        held = self.node()
        self.sync()
        nova = test_allocations.nova_instance()
        self.claim_directly(nova, held, user='nova')
        del self.sent[:]
        releases = self.hold_turns([free[0].uuid])
        waiting = self.queue([('free1', free[1].uuid),
                              ('held', held.uuid),
                              ('free2', free[2].uuid)])
        self.finish(releases)
        # Placement refused the whole POST for the held provider: each
        # claim was sent again alone, and only that one was refused.
        self.assertEqual(1, len(self.posts()))
        self.assertEqual({'first': 'alone', 'free1': 'alone',
                          'held': 'refused', 'free2': 'alone'},
                         self.outcomes)
        self.assertEqual({nova.uuid}, self.consumers(held.uuid))
        self.assertEqual({waiting['free1'].uuid},
                         self.consumers(free[1].uuid))
        self.assertEqual({waiting['free2'].uuid},
                         self.consumers(free[2].uuid))
        self.assertEqual(set(), self.claims(waiting['held'].uuid))

    def test_two_claims_of_one_provider_never_share_a_post(self):
        nodes = [self.node() for _ in range(3)]
        self.sync()
        del self.sent[:]
        releases = self.hold_turns([nodes[0].uuid])
        waiting = self.queue([('a', nodes[1].uuid), ('b', nodes[2].uuid),
                              ('a-again', nodes[1].uuid)])
        self.finish(releases)
        # NOTE: the second claim of the provider is sent alone at the
        # time of the shared POST; either may reach Placement first, and
        # the other is refused (the POST then sends its claims alone).
        self.assertEqual('alone', self.outcomes['first'])
        self.assertIn(self.outcomes['b'], ('shared', 'alone'))
        one_provider = [self.outcomes['a'], self.outcomes['a-again']]
        self.assertEqual(1, one_provider.count('refused'), self.outcomes)
        winner = 'a' if self.outcomes['a'] != 'refused' else 'a-again'
        self.assertIn(self.outcomes[winner], ('alone', 'shared'))
        self.assertEqual({waiting[winner].uuid},
                         self.consumers(nodes[1].uuid))
        self.assertGreaterEqual(len(self.posts()), 1)
        for body in self.post_bodies:
            providers = [provider for claim in body.values()
                         for provider in claim['allocations']]
            self.assertEqual(len(providers), len(set(providers)), body)
            self.assertFalse({waiting['a'].uuid, waiting['a-again'].uuid}
                             <= set(body), body)

    def test_placement_down_sends_the_waiting_claims_alone_at_once(self):
        # The shared POST gets no answer: the claims waiting behind it
        # are sent alone right away (each failing as its own request
        # does), not one turn after another, and the turns end.
        self.use_client(self.make_client(
            self.placement, endpoint=test_allocations.unused_url()))
        releases = self.hold_turns(['provider-0'])
        self.queue([('n%d' % i, 'provider-%d' % i) for i in range(1, 4)])
        self.finish(releases)
        self.assertEqual(dict.fromkeys(('first', 'n1', 'n2', 'n3'),
                                       'unavailable'), self.outcomes)
        self.assertEqual(1, len(self.posts()))
        self.assertEqual(0, self.batcher.waiting)
        del self.sent[:]
        self.claim('later', 'provider-0')
        self.finish()
        self.assertEqual('unavailable', self.outcomes['later'])
        self.assertEqual(['PUT'], [method for method, _path in self.sent])

    def test_claim_batch_size_1_sends_every_claim_at_once(self):
        self.size = 1
        nodes = [self.node() for _ in range(2)]
        self.sync()
        release = threading.Event()
        self.claim('first', nodes[0].uuid, before=release)
        # The first claim is held back, yet the second is sent at once.
        self.claim('second', nodes[1].uuid)
        self.wait_for(lambda: 'second' in self.outcomes, 'the second claim')
        self.assertEqual(0, self.batcher.waiting)
        release.set()
        self.finish()
        self.assertEqual({'first': 'alone', 'second': 'alone'},
                         self.outcomes)
        self.assertEqual([], self.posts())


class TestOneClaimPerProvider(test_allocations.PlacementAllocationTestCase):
    """Two allocations of one conductor never claim one provider at once:
    the second passes over the node while the first claims it."""

    def test_node_being_claimed_is_passed_over(self):
        first = self.node()
        second = self.node()
        self.sync()
        batcher = self.service.backend.claim_batcher
        # As if another allocation of this conductor were claiming it.
        self.assertTrue(batcher.begin(first.uuid))
        self.assertFalse(batcher.begin(first.uuid))
        self.assertClaimed(self.allocate(), second)
        # Nothing else is free while the claim goes on...
        busy = self.allocate()
        self.assertEqual(states.ALLOCATION_ERROR, busy.state)
        self.assertEqual(set(), self.consumers(first.uuid))
        # ...and the node is had once it ends.
        batcher.end(first.uuid)
        self.assertClaimed(self.allocate(), first)
        self.assertInvariant()
