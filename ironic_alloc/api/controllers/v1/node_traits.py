"""Node traits: /v1/nodes/{node}/traits[/{trait}] (1.37+)."""

from pecan import rest
from wsme import types as wtypes

from ironic_alloc import api
from ironic_alloc.api.controllers.v1 import types
from ironic_alloc.api.controllers.v1 import utils
from ironic_alloc.api import expose
from ironic_alloc.common import exception


class Traits(wtypes.Base):
    """The traits of a node."""

    traits = wtypes.ArrayType(str)
    """node traits"""


class NodeTraitsController(rest.RestController):
    """Traits of one node; changes go to the node's conductor."""

    def __init__(self, node_ident):
        super().__init__()
        self.node_ident = node_ident

    @expose.expose(Traits)
    def get_all(self):
        """List the node's traits."""
        return Traits(traits=utils.get_node(
            self.node_ident, 'baremetal:node:traits:list').traits)

    @expose.expose(None, str, types.jsontype, status_code=204)
    def put(self, trait=None, traits=None):
        """Add one trait (``/traits/{trait}``, no body) or replace all
        (``/traits`` with ``{"traits": [...]}``)."""
        if (trait is None) == (traits is None):
            raise exception.Invalid(
                'A single node trait may be added via PUT /v1/nodes/<node '
                'identifier>/traits/<trait> with no body, or all node '
                'traits may be replaced via PUT /v1/nodes/<node '
                'identifier>/traits with the list of traits specified in '
                'the request body.')
        node = utils.get_node(self.node_ident, 'baremetal:node:traits:set')
        context, rpcapi = api.request.context, api.request.rpcapi
        host = utils.conductor_host(node)
        if trait is not None:
            if api.request.body and api.request.body.strip() not in (
                    b'', b'{}', b'null'):
                raise exception.Invalid(
                    'No body should be provided when adding a trait')
            utils.validate_trait(trait)
            if trait not in node.traits:
                utils.check_list_length(
                    'traits', list(node.traits) + [trait],
                    api.request.cfg.api.max_traits)
            with utils.node_rpc(self.node_ident):
                rpcapi.add_node_trait(context, node.id, trait, host)
            utils.set_location('nodes', self.node_ident, 'traits', trait)
            return
        if not isinstance(traits, list):
            raise exception.Invalid('"traits" must be a list of strings.')
        for item in traits:
            utils.validate_trait(item)
        utils.check_list_length('traits', set(traits),
                                api.request.cfg.api.max_traits)
        with utils.node_rpc(self.node_ident):
            rpcapi.set_node_traits(context, node.id, sorted(set(traits)),
                                   host)

    @expose.expose(None, str, status_code=204)
    def delete(self, trait=None):
        """Remove one trait, or all when none is named."""
        node = utils.get_node(self.node_ident,
                              'baremetal:node:traits:delete')
        context, rpcapi = api.request.context, api.request.rpcapi
        host = utils.conductor_host(node)
        if trait is None:
            with utils.node_rpc(self.node_ident):
                rpcapi.set_node_traits(context, node.id, [], host)
            return
        try:
            with utils.node_rpc(self.node_ident):
                rpcapi.remove_node_trait(context, node.id, trait, host)
        except exception.NodeTraitNotFound:
            # NOTE: the internal node id must not be shown.
            raise exception.NodeTraitNotFound(node_id=node.uuid,
                                              trait=trait)
