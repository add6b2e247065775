"""The root document: GET / lists the API versions."""

import pecan
from pecan import rest

from ironic_alloc import api
from ironic_alloc.api.controllers import routing
from ironic_alloc.api.controllers import v1
from ironic_alloc.api.controllers.v1 import extensions
from ironic_alloc.api.controllers.v1 import negotiation
from ironic_alloc.api.controllers.v1 import types
from ironic_alloc.api import expose


# The API versions served under their own path segment.
VERSIONS = ('v1',)
DEFAULT_VERSION = 'v1'


class RootController(rest.RestController):

    v1 = v1.Controller()

    @expose.expose(types.jsontype)
    def get(self):
        """Name, description and versions of the API (unversioned)."""
        current = v1.version_document(api.request.public_url)
        return extensions.add_document({
            'name': 'OpenStack Ironic API',
            'description': 'ironic_alloc is a bare metal node allocation '
                           'service speaking the OpenStack Bare Metal '
                           '(Ironic) API v1.',
            'default_version': current,
            'versions': [current],
        })

    @pecan.expose()
    def _route(self, args, request=None):
        # NOTE: redirect-free handling of "/v1" without the trailing slash
        # and of a trailing slash on the root.
        if args and args[0] == '':
            args = args[1:]
        if not args:
            # NOTE: the root document is unversioned for Ironic, but tells
            # the extension range; /v1 negotiates in its own _route.
            api.request.extension_version = (
                negotiation.negotiate_extension(api.request.headers))
        elif args[0] not in VERSIONS:
            # NOTE: a path without a version segment ("/nodes/...") is
            # served by the default version, as Ironic does; clients that
            # build paths from the catalog endpoint alone (the tempest
            # plugin's node allocation request) rely on it.
            args = [DEFAULT_VERSION] + list(args)
        return (routing.sub_controller(self, args, request)
                or super()._route(args, request))
