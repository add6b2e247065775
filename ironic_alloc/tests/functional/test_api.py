"""Declarative API tests: every YAML file in gabbits/ is one story.

Run one file with ``stestr --test-path=./ironic_alloc/tests/functional
run test_api.<file name>``.
"""

import os

from gabbi import driver

from ironic_alloc.tests.functional import gabbi_fixtures

GABBITS_DIR = os.path.join(os.path.dirname(__file__), 'gabbits')


def load_tests(loader, tests, pattern):
    return driver.build_tests(GABBITS_DIR, loader, host=None,
                              intercept=gabbi_fixtures.setup_app,
                              fixture_module=gabbi_fixtures,
                              test_loader_name=__name__)
