"""Helpers for unit tests of the API tier."""

from unittest import mock

from ironic_alloc.api.controllers import base as api_base
from ironic_alloc.tests import base


class RequestTestCase(base.TestCase):
    """Runs helpers that read ``api.request`` with a fake request."""

    def set_version(self, minor):
        """Pretend the current request negotiated version 1.``minor``."""
        # NOTE: no extension version, as for a request without the
        # ironic-alloc entry; set_extension_version() changes it.
        request = mock.Mock(version=api_base.Version(1, minor),
                            extension_version=None,
                            public_url='http://api.example.com:6385')
        patcher = mock.patch('ironic_alloc.api.request', request)
        patcher.start()
        self.addCleanup(patcher.stop)
        return request

    def set_extension_version(self, minor, ironic_minor=79):
        """Pretend the request negotiated extension version 1.``minor``
        (None: it asked for none) and Ironic version 1.``ironic_minor``."""
        request = self.set_version(ironic_minor)
        request.extension_version = (None if minor is None
                                     else api_base.Version(1, minor))
        return request
