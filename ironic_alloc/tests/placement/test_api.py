"""The allocation stories of the functional tier's gabbits (real WSGI app,
real conductor, real database) again with [allocation]backend = placement
and a real Placement.

Run one with ``stestr --test-path=./ironic_alloc/tests/placement run
test_api.<file name>``.
"""

import unittest

from gabbi import driver

from ironic_alloc.tests.functional import gabbi_fixtures
from ironic_alloc.tests.functional import test_api as functional_test_api
from ironic_alloc.tests.placement import gabbi_fixtures as pl_gabbi_fixtures

# The stories that make allocations (allocations-no-conductor runs no
# conductor, so no backend).
STORIES = ('allocations', 'allocations-backfill', 'allocations-errors',
           'allocations-paging')


def load_tests(loader, tests, pattern):
    everything = driver.build_tests(
        functional_test_api.GABBITS_DIR, loader, host=None,
        intercept=gabbi_fixtures.setup_app,
        fixture_module=pl_gabbi_fixtures, test_loader_name=__name__)
    prefixes = tuple('%s.%s_' % (__name__, story)
                     for story in STORIES)
    suite = unittest.TestSuite()
    for story in everything:
        first = next(iter(story), None)
        if first is not None and first.id().startswith(prefixes):
            suite.addTest(story)
    return suite
