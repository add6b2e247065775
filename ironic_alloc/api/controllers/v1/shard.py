"""Shards: GET /v1/shards (1.82+), how many nodes each shard holds.

A shard is a free-form label set on nodes (``shard``) that clients use to
split the nodes they watch between their workers; nothing here acts on
it.  As in Ironic, the nodes without a shard are counted under the name
"None", the list is ordered by descending count, and only the list
exists: a shard is not a resource of its own.
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


def shard_list():
    """[{'name': ..., 'count': ...}] by descending count (then name, so
    that equal counts come in a stable order)."""
    counts = objects.Node.shard_counts(api.request.context)
    ordered = sorted(counts, key=lambda row: (-row[1], str(row[0])))
    return [{'name': str(shard), 'count': count}
            for shard, count in ordered]


class ShardsController(rest.RestController):
    """REST controller for shards (404 before 1.82, as Ironic)."""

    @pecan.expose()
    def _route(self, args, request=None):
        if not utils.allow_shards():
            raise exception.NotFound(
                'Shards are available from API version 1.82.')
        if [a for a in args if a]:
            # NOTE: as in Ironic, a shard cannot be shown on its own.
            raise exception.NotFound()
        return super()._route(args, request)

    @expose.expose(types.jsontype)
    def get_all(self):
        """Every shard with the number of its nodes."""
        access.authorize('baremetal:shards:get')
        return {'shards': shard_list()}
