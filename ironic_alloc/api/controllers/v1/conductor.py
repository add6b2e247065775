"""Conductors: /v1/conductors and /v1/conductors/{hostname} (1.49+)."""

import datetime

import pecan
from pecan import rest
import wsme
from wsme import types as wtypes

from ironic_alloc import api
from ironic_alloc.api.controllers import base
from ironic_alloc.api.controllers import link
from ironic_alloc.api.controllers.v1 import access
from ironic_alloc.api.controllers.v1 import collection
from ironic_alloc.api.controllers.v1 import types
from ironic_alloc.api.controllers.v1 import utils
from ironic_alloc.api import expose
from ironic_alloc.common import exception
from ironic_alloc.conf import CONF
from ironic_alloc import objects

DRIVERS = ['fake-hardware']
"""The one hardware type of this service"""

DEFAULT_RETURN_FIELDS = ['hostname', 'conductor_group', 'alive']

SORT_KEYS = frozenset(['id', 'hostname', 'conductor_group', 'created_at',
                       'updated_at'])


class Conductor(base.APIBase):
    """API representation of a conductor."""

    hostname = wsme.wsattr(str)
    """The hostname of this conductor"""

    conductor_group = wsme.wsattr(str)
    """The conductor group this conductor belongs to"""

    alive = types.boolean
    """Whether it heartbeated within [conductor]heartbeat_timeout"""

    drivers = wsme.wsattr([str])
    """The drivers enabled on this conductor"""

    updated_at = wtypes.wsattr(datetime.datetime, readonly=True)
    """The time of its last heartbeat"""

    links = wsme.wsattr([link.Link])
    """A list containing a self link and associated conductor links"""


class ConductorCollection(collection.Collection):
    """API representation of a page of conductors."""

    conductors = [Conductor]
    """A list containing conductor objects"""


def convert_with_links(rpc_conductor, alive_ids, fields=None):
    """The wire form of a conductor; ``alive_ids`` from one DB query."""
    item = Conductor(
        hostname=rpc_conductor.hostname,
        conductor_group=rpc_conductor.conductor_group,
        alive=rpc_conductor.id in alive_ids,
        drivers=list(DRIVERS),
        created_at=rpc_conductor.created_at,
        updated_at=rpc_conductor.heartbeat_at or rpc_conductor.updated_at)
    item.links = link.make_links('conductors', rpc_conductor.hostname)
    if fields is not None:
        item.unset_fields_except(list(fields) + ['links'])
    return item


def _alive_ids():
    return {c.id for c in objects.Conductor.list_alive(
        api.request.context, CONF.conductor.heartbeat_timeout)}


def _check_fields(fields):
    utils.check_allowed_fields(fields)
    utils.check_for_invalid_fields(
        fields, {a.key for a in wtypes.list_attributes(Conductor)}
        - {'links'})


class ConductorsController(rest.RestController):
    """REST controller for conductors (404 before 1.49, as Ironic)."""

    @pecan.expose()
    def _route(self, args, request=None):
        if not utils.allow_expose_conductors():
            raise exception.NotFound(
                'Conductors are available from API version 1.49.')
        return super()._route(args, request)

    @expose.expose(ConductorCollection, str, int, str, str, types.listtype,
                   types.boolean)
    def get_all(self, marker=None, limit=None, sort_key='id',
                sort_dir='asc', fields=None, detail=None):
        """List conductors (paging by hostname marker)."""
        access.authorize('baremetal:conductor:get')
        query = {'sort_key': sort_key, 'sort_dir': sort_dir,
                 'fields': fields, 'detail': detail}
        if detail and fields is not None:
            raise exception.Invalid('Can not specify ?detail=True and '
                                    'fields in the same request.')
        _check_fields(fields)
        if fields is None and not detail:
            fields = DEFAULT_RETURN_FIELDS
        limit = utils.validate_limit(limit)
        sort_dir = utils.validate_sort_dir(sort_dir)
        sort_key = utils.validate_sort_key(sort_key, SORT_KEYS)
        marker_id = None
        if marker is not None:
            try:
                marker_id = objects.Conductor.get_by_hostname(
                    api.request.context, marker).id
            except exception.ConductorNotFound as e:
                e.code = 400
                raise
        rpc_conductors = objects.Conductor.list(
            api.request.context, limit=limit, marker=marker_id,
            sort_key=sort_key, sort_dir=sort_dir)
        alive = _alive_ids()
        page = ConductorCollection()
        page.conductors = [convert_with_links(c, alive, fields)
                           for c in rpc_conductors]
        page.next = collection.next_link('conductors', query,
                                         rpc_conductors, limit,
                                         marker_attr='hostname')
        return page

    @expose.expose(Conductor, str, types.listtype)
    def get_one(self, hostname, fields=None):
        """Show one conductor."""
        access.authorize('baremetal:conductor:get')
        _check_fields(fields)
        rpc_conductor = objects.Conductor.get_by_hostname(
            api.request.context, hostname)
        return convert_with_links(rpc_conductor, _alive_ids(), fields)
