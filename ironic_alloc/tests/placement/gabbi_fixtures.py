"""Gabbi fixtures of the placement tier: those of the functional tier,
with the conductor on [allocation]backend = placement against this test
process's real Placement (emptied per YAML file)."""

import unittest

from ironic_alloc.api import hooks
from ironic_alloc.conf import CONF
from ironic_alloc.tests import base as ia_base
from ironic_alloc.tests.functional import fixtures as ia_fixtures
from ironic_alloc.tests.functional import gabbi_fixtures
from ironic_alloc.tests.placement import base
from ironic_alloc.tests.placement import fixtures as pl_fixtures


class ConductorFixture(gabbi_fixtures.APIFixture):
    """APIFixture plus a conductor ``test-conductor`` whose allocations
    claim their nodes in Placement."""

    def start_fixture(self):
        reason = pl_fixtures.missing_reason()
        if reason and not ia_base.running_in_ci():
            raise unittest.SkipTest(reason)
        server, error = base.shared_placement()
        if server is None:
            raise RuntimeError(error)
        super().start_fixture()
        base.PlacementTestCase._empty_placement(
            base.PlacementTestCase.make_client(server))
        for group, values in base.backend_settings(server).items():
            for name, value in values.items():
                CONF.set_override(name, value, group=group)
        self._use(ia_fixtures.ConductorFixture(host='test-conductor'))
        hooks.reset_rpcapi()


def __getattr__(name):
    # NOTE: every other fixture a YAML file names is the functional one.
    return getattr(gabbi_fixtures, name)
