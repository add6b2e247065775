"""Version 1 of the API: negotiation of the versions, then routing.

Add a resource by adding a controller attribute to ``Controller`` and,
when it should be advertised in GET /v1, an entry in ``RESOURCES``.
ironic_alloc's own endpoints are not attributes: they are listed in
extensions.ENDPOINTS, gated by their extension version.
"""

import pecan
from pecan import rest

from ironic_alloc import api
from ironic_alloc.api.controllers import base
from ironic_alloc.api.controllers import link
from ironic_alloc.api.controllers import routing
from ironic_alloc.api.controllers.v1 import allocation
from ironic_alloc.api.controllers.v1 import allocation_group
from ironic_alloc.api.controllers.v1 import chassis
from ironic_alloc.api.controllers.v1 import conductor
from ironic_alloc.api.controllers.v1 import driver
from ironic_alloc.api.controllers.v1 import extensions
from ironic_alloc.api.controllers.v1 import negotiation
from ironic_alloc.api.controllers.v1 import node
from ironic_alloc.api.controllers.v1 import reservation
from ironic_alloc.api.controllers.v1 import shard
from ironic_alloc.api.controllers.v1 import types
from ironic_alloc.api.controllers.v1 import unsupported
from ironic_alloc.api.controllers.v1 import utils
from ironic_alloc.api.controllers.v1 import versions
from ironic_alloc.api import expose

# Resources linked from GET /v1: name -> version gate (None: always).
RESOURCES = {
    'chassis': None,
    'nodes': None,
    'ports': None,
    'portgroups': utils.allow_portgroups,
    'drivers': None,
    'conductors': utils.allow_expose_conductors,
    'allocations': utils.allow_allocations,
    'shards': utils.allow_shards,
}


def version_document(public_url):
    """The description of v1 used by GET / and GET /v1."""
    return {
        'id': 'v1',
        'links': [{'href': '%s/v1/' % public_url.rstrip('/'),
                   'rel': 'self'}],
        'status': 'CURRENT',
        'min_version': versions.MIN_VERSION_STRING,
        'version': versions.MAX_VERSION_STRING,
    }


def _links(name):
    return [{'href': lk.href, 'rel': lk.rel}
            for lk in link.make_links(name, '')]


class Controller(rest.RestController):
    """Version 1 API controller root."""

    chassis = chassis.ChassisController()
    nodes = node.NodesController()
    allocations = allocation.AllocationsController()
    conductors = conductor.ConductorsController()
    drivers = driver.DriversController()
    shards = shard.ShardsController()
    ports = unsupported.PortsController()
    portgroups = unsupported.PortgroupsController()
    volume = unsupported.VolumeController()

    @expose.expose(types.jsontype)
    def get(self):
        """The v1 document: links, media types, resources."""
        url = api.request.public_url
        # NOTE: the version document is nested under "version", as Ironic
        # does; keystoneauth's discovery reads it from there.
        doc = {'id': 'v1',
               'links': [{'href': '%s/v1/' % url.rstrip('/'), 'rel': 'self'},
                         {'href': 'https://docs.openstack.org/api-ref/'
                                  'baremetal/',
                          'rel': 'describedby', 'type': 'text/html'}],
               'version': version_document(url)}
        # NOTE: one object, not a list: Ironic's shape, which clients
        # that read the document expect.
        doc['media_types'] = {
            'base': 'application/json',
            'type': 'application/vnd.openstack.ironic.v1+json'}
        for name, gate in RESOURCES.items():
            if gate is None or gate():
                doc[name] = _links(name)
        for name in extensions.allowed_endpoints():
            doc[name] = _links(name)
        return extensions.add_document(doc)

    @pecan.expose()
    def _route(self, args, request=None):
        headers = api.request.headers
        api.request.version = negotiation.negotiate(headers)
        args = _strip_json_suffix(list(args), headers)
        api.request.extension_version = negotiation.negotiate_extension(
            headers)
        # NOTE: one dict lookup for every other request.
        found = (extensions.endpoint(args[0])
                 if args and args[0] in extensions.ENDPOINTS else None)
        if found is not None:
            return found._route(args[1:], request)
        return (routing.sub_controller(self, args, request)
                or super()._route(args, request))


def _strip_json_suffix(args, headers):
    """Before 1.91 a trailing ``.json`` only asked for JSON (a leftover of
    pecan's content-type guessing that Ironic kept): it is dropped from
    the path, and utils.with_json_suffix() still finds a resource whose
    name ends in ``.json``.  As in Ironic, only a request naming an older
    version is affected; without a version header the path is literal.
    """
    while args and args[-1] == '':
        args.pop()
    if (not args or not args[-1].endswith('.json')
            or base.Version.requested(headers) is None
            or utils.allow_literal_json_suffix()):
        return args
    args[-1] = args[-1][:-len('.json')]
    api.request.environ[utils.JSON_SUFFIX_KEY] = args[-1]
    return args


# ironic_alloc's own endpoints, gated by their extension feature.
extensions.ENDPOINTS['reservations'] = (
    'reservations', reservation.ReservationsController())
extensions.ENDPOINTS['allocation_groups'] = (
    'allocation_groups', allocation_group.AllocationGroupsController())

for _name, _feature in unsupported.TOP_LEVEL_FEATURES.items():
    setattr(Controller, _name, unsupported.feature_controller(_feature)())
