"""The children of a node: GET /v1/nodes/{node}/children (1.83+).

A child node names its parent in ``parent_node``; the list answers the
UUIDs of the children the caller may see and a link to the node list
filtered by that parent, in Ironic's shape.
"""

import pecan
from pecan import rest

from ironic_alloc import api
from ironic_alloc.api.controllers.v1 import access
from ironic_alloc.api.controllers.v1 import types
from ironic_alloc.api.controllers.v1 import utils
from ironic_alloc.api import expose
from ironic_alloc.common import exception
from ironic_alloc import objects


class NodeChildrenController(rest.RestController):
    """The children of one node (read only)."""

    def __init__(self, node_ident):
        super().__init__()
        self.node_ident = node_ident

    @pecan.expose()
    def _route(self, args, request=None):
        if [a for a in args if a]:
            # NOTE: as in Ironic, a child is shown under /v1/nodes only.
            raise exception.NotFound()
        return super()._route(args, request)

    @expose.expose(types.jsontype)
    def get_all(self):
        """The UUIDs of the node's children the caller may see."""
        try:
            parent = utils.get_node(self.node_ident)
        except exception.HTTPForbidden:
            # NOTE: a caller who may not see the node is not told it
            # exists.
            raise exception.NodeNotFound(node=self.node_ident)
        filters = {'parent_node': parent.uuid}
        project = access.list_project('node')
        if project is not None:
            filters['project'] = project
        children = objects.Node.list(api.request.context, filters=filters,
                                     sort_key='id', sort_dir='asc')
        url = api.request.public_url.rstrip('/')
        return {'children': [child.uuid for child in children],
                'links': {'href': '%s/v1/nodes?parent_node=%s'
                                  % (url, parent.uuid),
                          'rel': 'children'}}
