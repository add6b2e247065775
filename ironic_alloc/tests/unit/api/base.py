"""Helpers for unit tests of the API tier."""

from unittest import mock

from ironic_alloc.api.controllers import base as api_base
from ironic_alloc.tests import base


class RequestTestCase(base.TestCase):
    """Runs helpers that read ``api.request`` with a fake request."""

    def set_version(self, minor):
        """Pretend the current request negotiated version 1.``minor``."""
        request = mock.Mock(version=api_base.Version(1, minor),
                            public_url='http://api.example.com:6385')
        patcher = mock.patch('ironic_alloc.api.request', request)
        patcher.start()
        self.addCleanup(patcher.stop)
        return request
