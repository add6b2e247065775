"""The time rule of leases (common/lease_time.py)."""

import datetime

import testtools

from ironic_alloc.common import lease_time


class TestLeaseTime(testtools.TestCase):

    def test_whole_second_rounds_down_or_up(self):
        value = datetime.datetime(2026, 1, 2, 3, 4, 5, 1)
        self.assertEqual(datetime.datetime(2026, 1, 2, 3, 4, 5),
                         lease_time.whole_second(value))
        self.assertEqual(datetime.datetime(2026, 1, 2, 3, 4, 6),
                         lease_time.whole_second(value, up=True))

    def test_whole_second_keeps_a_whole_second(self):
        value = datetime.datetime(2026, 1, 2, 3, 4, 5)
        self.assertEqual(value, lease_time.whole_second(value, up=True))

    def test_a_lease_is_never_shorter_than_its_ttl(self):
        now = datetime.datetime(2026, 12, 31, 23, 59, 59, 999999)
        end = lease_time.end_after(now, 60)
        self.assertEqual(datetime.datetime(2027, 1, 1, 0, 1), end)
        self.assertGreaterEqual(end - now, datetime.timedelta(seconds=60))
        self.assertEqual(0, end.microsecond)
