"""Claims of concurrent allocations sent to Placement together.

Placement spends most of a claim's CPU on the request itself (routing,
microversion, policy, its transactions), so several consumers' claims in
one ``POST /allocations`` cost it about half as much per claim as one
``PUT /allocations/{consumer}`` each.  The conductor's allocation threads
therefore hand their claims to one ``ClaimBatcher``:

* a claim that finds nothing in flight is sent at once, alone, as a
  ``PUT`` by its own thread (the batcher adds no wait when allocations do
  not overlap);
* claims made while a request is in flight wait for it, and the next one
  carries all of them (group commit): one ``POST /allocations`` with
  every waiting claim, each for a consumer that must not exist yet;
* Placement applies a ``POST`` whole or not at all.  When it refuses
  one (a provider held by another consumer, a consumer that exists
  already, an unknown provider) or its answer is lost, each of its
  claims is sent again alone, by its own thread, with the single claim's
  handling of every answer (``placement_claims._Claimer``; a claim the
  lost answer had made is found there as the consumer's own).  Two
  waiting claims of one provider never share a ``POST``: the second is
  sent alone at once.

A conductor keeps one claim request in flight at a time
(``REQUESTS_IN_FLIGHT``); the thread that sent it passes the turn to the
oldest waiting claim when it is done.  ``begin()`` and ``end()`` keep two
allocations of one conductor from claiming the same provider at once,
which Placement would refuse to one of them (and to every claim sharing
its request).
"""

import threading

from oslo_log import log

from ironic_alloc.common import exception

LOG = log.getLogger(__name__)

# Claim requests a conductor keeps in flight at once.  One makes the
# largest shared requests, which cost Placement the least CPU per claim;
# a second in flight was measured to cost more CPU per allocation without
# making allocations faster (see the performance archive).
REQUESTS_IN_FLIGHT = 1


class _Waiting:
    """One claim waiting for its turn."""

    def __init__(self, consumer, provider_uuid, body):
        self.consumer = consumer
        self.provider_uuid = provider_uuid
        self.body = body
        self.done = threading.Event()
        # Set before ``done``: whether a shared POST made the claim, and
        # whether this claim's thread is to send the next request.
        self.claimed = False
        self.sends_next = False


class ClaimBatcher:
    """Sends the claims of concurrent allocations in shared requests."""

    def __init__(self, client, max_claims):
        """:param max_claims: a callable giving the most claims in one
        ``POST`` ([placement]claim_batch_size, read at every claim); 1
        sends every claim alone, at once."""
        self.client = client
        self.max_claims = max_claims
        self._lock = threading.Lock()
        self._waiting = []
        self._turns = 0
        # Providers an allocation of this conductor is claiming, from its
        # search to its reservation (see begin()).
        self._claiming = set()

    def begin(self, provider_uuid):
        """Mark a provider as being claimed by one of this conductor's
        allocations, until end().

        :returns: False when another allocation of the conductor is
            claiming it already: a claim of it would be refused, or would
            make a shared POST refused for every claim in it.
        """
        with self._lock:
            if provider_uuid in self._claiming:
                return False
            self._claiming.add(provider_uuid)
            return True

    def end(self, provider_uuid):
        with self._lock:
            self._claiming.discard(provider_uuid)

    @property
    def waiting(self):
        """How many claims wait for the next request."""
        with self._lock:
            return len(self._waiting)

    def claim(self, consumer, provider_uuid, body, alone, claimed):
        """Claim one provider for ``consumer``.

        :param body: the consumer's claim (placement_claims.claim_body(),
            generation null).
        :param alone: a callable sending this claim alone and returning
            its outcome; it may raise.
        :param claimed: what to return when a shared POST made the claim.
        :returns: ``claimed``, or what ``alone()`` returned.
        """
        if self.max_claims() < 2:
            return alone()
        own = _Waiting(consumer, provider_uuid, body)
        with self._lock:
            if self._turns >= REQUESTS_IN_FLIGHT:
                self._waiting.append(own)
            else:
                self._turns += 1
                own.sends_next = True
        if not own.sends_next:
            own.done.wait()
            if own.claimed:
                return claimed
            if not own.sends_next:
                return alone()
        scatter = True
        try:
            batch = self._take_batch(own)
            if len(batch) == 1:
                outcome = alone()
                scatter = False
                return outcome
            shared = answered = False
            try:
                shared, answered = self._post(batch)
            finally:
                for waiting in batch[1:]:
                    waiting.claimed = shared
                    waiting.done.set()
            scatter = not answered
        finally:
            self._pass_turn(scatter)
        return claimed if shared else alone()

    def _take_batch(self, own):
        """``own`` claim and the waiting ones that join it."""
        max_claims = self.max_claims()
        with self._lock:
            batch = [own]
            providers = {own.provider_uuid}
            rest = []
            for waiting in self._waiting:
                if waiting.provider_uuid in providers:
                    # NOTE: it would make Placement refuse the whole POST.
                    waiting.done.set()
                elif len(batch) < max_claims:
                    batch.append(waiting)
                    providers.add(waiting.provider_uuid)
                else:
                    rest.append(waiting)
            self._waiting = rest
        return batch

    def _post(self, batch):
        """:returns: (whether the POST made the claims, whether Placement
        answered)."""
        try:
            self.client.post('/allocations',
                             {w.consumer: w.body for w in batch},
                             expected=(204,))
            return True, True
        except exception.IronicAllocException as exc:
            # NOTE: each claim is sent again alone, which tells which
            # one Placement refuses, or finds the claim a lost answer
            # made.
            LOG.debug('A shared claim of %(count)d consumers was not made, '
                      'each is sent alone: %(exc)s',
                      {'count': len(batch), 'exc': exc})
            return False, not isinstance(exc, exception.PlacementUnavailable)

    def _pass_turn(self, scatter):
        """Give the next request to the oldest waiting claim, or end the
        turns.

        :param scatter: the turn's request got no answer (or raised):
            every waiting claim is sent alone, at once, rather than each
            waiting for the one before it to time out as well.
        """
        with self._lock:
            if scatter or not self._waiting:
                woken, self._waiting = self._waiting, []
                self._turns -= 1
            else:
                woken = [self._waiting.pop(0)]
                woken[0].sends_next = True
        for waiting in woken:
            waiting.done.set()
