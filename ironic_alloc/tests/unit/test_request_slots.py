"""The order and bound of request slots (common/request_slots.py), with
real threads."""

import threading
import time

import testtools

from ironic_alloc.common import request_slots


def _wait_for(condition, timeout=30):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError('condition not met in %s s' % timeout)
        time.sleep(0.001)


class TestRequestSlots(testtools.TestCase):

    def _start(self, target):
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        self.addCleanup(thread.join, 30)
        return thread

    def test_slots_go_in_the_order_asked(self):
        slots = request_slots.RequestSlots(1)
        entered = []
        slots.acquire()

        def request(name):
            slots.acquire()
            entered.append(name)
            slots.release()

        threads = []
        for number, name in enumerate(('first', 'second', 'third'), 1):
            threads.append(self._start(lambda name=name: request(name)))
            _wait_for(lambda number=number: slots.waiting() == number)
        # The holder asks again at once: the slot it gave back went to
        # the thread that waited longest, and it waits behind the others.
        slots.release()
        slots.acquire()
        entered.append('holder')
        slots.release()
        for thread in threads:
            thread.join(30)
        self.assertEqual(['first', 'second', 'third', 'holder'], entered)
        self.assertEqual(0, slots.waiting())

    def test_a_request_outside_queues_again_to_come_back(self):
        slots = request_slots.RequestSlots(1)
        entered = []
        outside = threading.Event()
        back = threading.Event()

        def waits_outside():
            with slots.held():
                with request_slots.released():
                    outside.set()
                    back.wait(30)
                entered.append('came back')

        def request():
            with slots.held():
                entered.append('other')

        slots.acquire()
        first = self._start(waits_outside)
        _wait_for(lambda: slots.waiting() == 1)
        slots.release()
        self.assertTrue(outside.wait(30))
        # The slot it gave back is free: the next request takes it.
        slots.acquire()
        other = self._start(request)
        _wait_for(lambda: slots.waiting() == 1)
        back.set()
        _wait_for(lambda: slots.waiting() == 2)
        slots.release()
        first.join(30)
        other.join(30)
        self.assertEqual(['other', 'came back'], entered)

    def test_never_more_holders_than_slots_and_none_left_waiting(self):
        slots = request_slots.RequestSlots(2)
        lock = threading.Lock()
        holders = [0]
        most = [0]
        done = []

        def requests():
            for _ in range(300):
                with slots.held():
                    with lock:
                        holders[0] += 1
                        most[0] = max(most[0], holders[0])
                    # Let other threads run while the slot is held.
                    time.sleep(0)
                    with lock:
                        holders[0] -= 1
            done.append(True)

        threads = [self._start(requests) for _ in range(12)]
        for thread in threads:
            thread.join(60)
        self.assertEqual(12, len(done))
        self.assertEqual(2, most[0])
        self.assertEqual(0, slots.waiting())
        # Both slots are free again.
        slots.acquire()
        slots.acquire()
        self.assertEqual(0, slots.waiting())

    def test_releasing_a_free_slot_is_an_error(self):
        slots = request_slots.RequestSlots(1)
        self.assertRaises(RuntimeError, slots.release)

    def test_no_limit_holds_nothing(self):
        slots = request_slots.RequestSlots(0)
        with slots.held():
            with slots.held():
                self.assertEqual(0, slots.waiting())
