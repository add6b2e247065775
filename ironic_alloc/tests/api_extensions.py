"""A made-up API extension for the tests of the extension machinery.

The gates, the field hiding and the endpoint routing are proved on a
made-up version one above the newest real one (MAX_MINOR + 1) and its
feature, which exist only while the fixture is in place (the tables of
extensions.py patched, and restored afterwards), so the tests do not
depend on what the real versions add.
"""

from unittest import mock

import fixtures

from ironic_alloc.api.controllers.v1 import extensions

FEATURE = 'test-feature'
MINOR = extensions.MAX_MINOR + 1
VERSION = '%d.%d' % (extensions.MAJOR, MINOR)


class TestExtension(fixtures.Fixture):
    """Extension version VERSION adding FEATURE, with the given extension
    fields and endpoints.

    :param fields: {resource: [wire field names]} made FEATURE's fields.
    :param endpoints: {top-level name: controller} made FEATURE's
        endpoints.
    """

    def __init__(self, fields=None, endpoints=None):
        super().__init__()
        self.fields = fields or {}
        self.endpoints = endpoints or {}

    def _patch(self, patcher):
        patcher.start()
        self.addCleanup(patcher.stop)

    def _setUp(self):
        self._patch(mock.patch.object(extensions, 'MAX_MINOR', MINOR))
        self._patch(mock.patch.dict(extensions.VERSIONS,
                                    {MINOR: 'Test only: %s.' % FEATURE}))
        self._patch(mock.patch.dict(extensions.FEATURES, {FEATURE: MINOR}))
        for resource, names in self.fields.items():
            self._patch(mock.patch.dict(extensions.FIELDS[resource],
                                        {name: FEATURE for name in names}))
        self._patch(mock.patch.dict(
            extensions.ENDPOINTS,
            {name: (FEATURE, controller)
             for name, controller in self.endpoints.items()}))
