"""UnavailableLog: one line per cause per interval, the rest counted."""

import logging

import fixtures

from ironic_alloc.common import exception
from ironic_alloc.common import unavailable_log
from ironic_alloc.tests import base


class Clock:
    """A clock the test moves (the interval is the subject here)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class TestUnavailableLog(base.TestCase):

    def setUp(self):
        super().setUp()
        self.logs = self.useFixture(fixtures.FakeLogger(
            name='test-unavailable', level=logging.DEBUG,
            format='%(levelname)s %(message)s'))
        self.clock = Clock()
        self.log = unavailable_log.UnavailableLog(
            logging.getLogger('test-unavailable'), clock=self.clock)
        self.config(unavailable_log_interval=60)

    def lines(self):
        return self.logs.output.splitlines()

    def test_one_line_per_cause_per_interval(self):
        self.assertTrue(self.log.warning('db', 'down %d', 1))
        for i in range(5):
            self.assertFalse(self.log.warning('db', 'down %d', i))
        self.assertTrue(self.log.warning('broker', 'broker down'))
        self.assertEqual(['WARNING down 1', 'WARNING broker down'],
                         self.lines())
        self.clock.now += 61
        self.assertTrue(self.log.warning('db', 'down %d', 7))
        self.assertEqual(
            ['WARNING 5 more line(s) of cause "db" left out in the last '
             '61 s ([DEFAULT]unavailable_log_interval)',
             'WARNING down 7'], self.lines()[2:])
        # Nothing left out since: no count before the next line.
        self.clock.now += 61
        self.log.warning('db', 'down again')
        self.assertEqual(['WARNING down again'], self.lines()[4:])

    def test_zero_interval_writes_every_line(self):
        self.config(unavailable_log_interval=0)
        for _ in range(3):
            self.assertTrue(self.log.warning('db', 'down'))
        self.assertEqual(['WARNING down'] * 3, self.lines())

    def test_causes_beyond_the_bound(self):
        self.useFixture(fixtures.MonkeyPatch(
            'ironic_alloc.common.unavailable_log.MAX_CAUSES', 2))
        self.log.warning('a', 'a')
        self.log.warning('a', 'a')
        self.log.warning('b', 'b')
        # No room for c: written every time rather than left out.
        self.assertTrue(self.log.warning('c', 'c'))
        self.assertTrue(self.log.warning('c', 'c'))
        # Once a's interval ended, it is forgotten with its count.
        self.clock.now += 61
        self.assertTrue(self.log.warning('d', 'd'))
        self.assertIn('WARNING 1 more line(s) of cause "a" left out in '
                      'the last 61 s ([DEFAULT]unavailable_log_interval)',
                      self.lines())
        self.assertFalse(self.log.warning('d', 'd'))

    def test_cause_of_answer(self):
        self.assertEqual('MessageBrokerUnreachable',
                         unavailable_log.cause_of_answer(
                             exception.MessageBrokerUnreachable(reason='x')))
        self.assertEqual('TemporaryFailure: The database is down.',
                         unavailable_log.cause_of_answer(
                             exception.TemporaryFailure(
                                 'The database is down.')))

    def test_origin_is_one_line(self):
        error = exception.TemporaryFailure('down')
        self.assertEqual('', unavailable_log.origin_of(error))
        error.__cause__ = ValueError('first\nTraceback (most recent...')
        self.assertEqual('ValueError: first',
                         unavailable_log.origin_of(error))
