"""Pecan's signature inspection, kept per function."""

import inspect
from unittest import mock

from pecan import util as pecan_util

from ironic_alloc.api.controllers import routing
from ironic_alloc.tests import base


class Controller:

    def post(self, allocation, extra=None):
        pass

    def delete(self, ident):
        pass


class TestCacheSignatures(base.TestCase):

    def setUp(self):
        super().setUp()
        routing.cache_signatures()

    def test_each_function_inspected_once(self):
        with mock.patch.object(inspect, 'getfullargspec',
                               wraps=inspect.getfullargspec) as spy:
            first = pecan_util.getargspec(Controller().post)
            # another instance: the same function underneath
            again = pecan_util.getargspec(Controller().post)
            other = pecan_util.getargspec(Controller().delete)
        self.assertEqual(['self', 'allocation', 'extra'], first.args)
        self.assertEqual((None,), first.defaults)
        self.assertIs(first, again)
        self.assertEqual(['self', 'ident'], other.args)
        self.assertEqual(2, spy.call_count)

    def test_installed_once(self):
        installed = pecan_util._getargspec
        routing.cache_signatures()
        self.assertIs(installed, pecan_util._getargspec)
