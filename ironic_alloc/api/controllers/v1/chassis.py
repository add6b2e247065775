"""Chassis: /v1/chassis, /v1/chassis/detail, /v1/chassis/{uuid} and the
nodes of a chassis, /v1/chassis/{uuid}/nodes[/detail].

A chassis groups nodes and carries a description and free metadata; no
conductor is involved, the API writes through objects.  Nodes join a
chassis by their ``chassis_uuid`` (node.py), and a chassis with nodes
cannot be deleted.
"""

from oslo_log import log
from oslo_utils import uuidutils
import pecan
from pecan import rest
import wsme
from wsme import types as wtypes

from ironic_alloc import api
from ironic_alloc.api.controllers import base
from ironic_alloc.api.controllers import link
from ironic_alloc.api.controllers import routing
from ironic_alloc.api.controllers.v1 import access
from ironic_alloc.api.controllers.v1 import collection
from ironic_alloc.api.controllers.v1 import node
from ironic_alloc.api.controllers.v1 import types
from ironic_alloc.api.controllers.v1 import utils
from ironic_alloc.api import expose
from ironic_alloc.common import exception
from ironic_alloc import objects

LOG = log.getLogger(__name__)

DESCRIPTION_MAX_LENGTH = 255

# Fields a plain (non-detailed) chassis list shows, as Ironic.
DEFAULT_RETURN_FIELDS = ['uuid', 'description']

# Columns a chassis list can be sorted by (not extra, as Ironic).
SORT_KEYS = frozenset(['id', 'uuid', 'description', 'created_at',
                       'updated_at'])

# Wire attributes that are links, not fields of the chassis.
LINK_FIELDS = ('links', 'nodes')

PATCHABLE = ('description', 'extra')


class Chassis(base.APIBase):
    """API representation of a chassis (Ironic's wire shape)."""

    uuid = types.uuid
    """The UUID of the chassis"""

    description = wsme.wsattr(
        types.StrictStringType(max_length=DESCRIPTION_MAX_LENGTH))
    """The description of the chassis"""

    extra = types.dicttype
    """The metadata of the chassis"""

    links = wsme.wsattr([link.Link], readonly=True)
    """The chassis' own links"""

    nodes = wsme.wsattr([link.Link], readonly=True)
    """Links to the nodes of the chassis"""


types.json_object(Chassis)


class ChassisCollection(collection.Collection):
    """API representation of a page of chassis."""

    chassis = [Chassis]
    """A list containing chassis objects"""


class ChassisPatchType(types.JsonPatchType):
    """One operation of a chassis PATCH."""

    @staticmethod
    def internal_attrs():
        return types.JsonPatchType.internal_attrs() + ['/nodes']


types.json_object(ChassisPatchType)


def chassis_fields():
    """Names accepted in ``fields``."""
    return ({a.key for a in wtypes.list_attributes(Chassis)}
            - set(LINK_FIELDS))


def convert_with_links(rpc_chassis, fields=None):
    """The wire form of a chassis for ``fields`` (all when None)."""
    item = Chassis(uuid=rpc_chassis.uuid,
                   description=rpc_chassis.description,
                   extra=rpc_chassis.extra or {},
                   created_at=rpc_chassis.created_at,
                   updated_at=rpc_chassis.updated_at)
    url = api.request.public_url
    item.links = link.make_links('chassis', rpc_chassis.uuid, url)
    if fields is None:
        item.nodes = link.make_links('chassis', rpc_chassis.uuid + '/nodes',
                                     url)
    else:
        item.unset_fields_except(list(fields) + ['links'])
    return item


def _check_fields(fields):
    utils.check_allowed_fields(fields)
    utils.check_for_invalid_fields(fields, chassis_fields())


def get_chassis(chassis_uuid):
    """:raises: ChassisNotFound (404)."""
    return objects.Chassis.get_by_uuid(api.request.context, chassis_uuid)


def _check_values(values):
    """Rules of a new or patched chassis on wire-named values.

    :raises: Invalid (400).
    """
    description = values.get('description')
    if description is not None:
        if not isinstance(description, str):
            raise exception.Invalid('The description of a chassis must be '
                                    'a string.')
        if len(description) > DESCRIPTION_MAX_LENGTH:
            raise exception.Invalid(
                'The description of a chassis cannot exceed %d characters.'
                % DESCRIPTION_MAX_LENGTH)
    if not isinstance(values.get('extra') or {}, dict):
        raise exception.Invalid('The extra of a chassis must be an object.')
    utils.check_stored_sizes(values)


class ChassisController(rest.RestController):
    """REST controller for chassis."""

    _custom_actions = {
        'detail': ['GET'],
    }

    @pecan.expose()
    def _route(self, args, request=None):
        routing.refuse_post_to_item(self, args, pecan.request)
        return super()._route(args, request)

    @pecan.expose()
    def _lookup(self, ident, *remainder):
        if not remainder or remainder[0] != 'nodes':
            return
        if not uuidutils.is_uuid_like(ident):
            raise exception.InvalidUUID(uuid=ident)
        return node.NodesController(chassis_uuid=ident), remainder[1:]

    # Reads

    def _get_chassis_collection(self, query, resource, detail):
        """One page of chassis for a normalised list query.

        :param query: dict of every query argument (None when absent).
        :param resource: 'chassis' or 'chassis/detail' (for ``next``).
        :param detail: whether all fields are shown by default.
        """
        access.authorize('baremetal:chassis:get')
        fields = query['fields']
        _check_fields(fields)
        if fields is None and not detail:
            fields = DEFAULT_RETURN_FIELDS
        limit = utils.validate_limit(query['limit'])
        sort_dir = utils.validate_sort_dir(query['sort_dir'] or 'asc')
        sort_key = utils.validate_sort_key(query['sort_key'] or 'id',
                                           SORT_KEYS)
        marker = None
        if query['marker'] is not None:
            try:
                marker = get_chassis(query['marker']).id
            except exception.ChassisNotFound as e:
                # NOTE: a marker is a query argument: 400, as for nodes.
                e.code = 400
                raise
        rpc_chassis = objects.Chassis.list(
            api.request.context, limit=limit, marker=marker,
            sort_key=sort_key, sort_dir=sort_dir)
        page = ChassisCollection()
        page.chassis = [convert_with_links(c, fields) for c in rpc_chassis]
        page.next = collection.next_link(
            resource, {k: v for k, v in query.items()
                       if k not in ('limit', 'marker')},
            rpc_chassis, limit)
        return page

    @expose.expose(ChassisCollection, types.uuid, int, str, str,
                   types.listtype, types.boolean)
    def get_all(self, marker=None, limit=None, sort_key=None, sort_dir=None,
                fields=None, detail=None):
        """List chassis (paging, sorting, ``fields`` and ``detail``)."""
        query = dict(locals())
        del query['self']
        utils.check_detail_query(detail, fields)
        return self._get_chassis_collection(query, 'chassis', bool(detail))

    @expose.expose(ChassisCollection, types.uuid, int, str, str)
    def detail(self, marker=None, limit=None, sort_key=None, sort_dir=None):
        """List chassis with all their fields."""
        # NOTE: Pecan routes GET /v1/chassis/<uuid>/detail here as well
        # (the UUID as the first argument); as in Ironic, only the
        # collection has a detail.
        if api.request.path.rstrip('/').split('/')[-2] != 'chassis':
            raise exception.NotFound()
        query = dict(locals(), fields=None, detail=None)
        del query['self']
        return self._get_chassis_collection(query, 'chassis/detail', True)

    @expose.expose(Chassis, types.uuid, types.listtype)
    def get_one(self, chassis_uuid, fields=None):
        """Show one chassis."""
        access.authorize('baremetal:chassis:get')
        _check_fields(fields)
        return convert_with_links(get_chassis(chassis_uuid), fields)

    # Writes

    @expose.expose(Chassis, body=Chassis, status_code=201)
    def post(self, chassis):
        """Create a chassis."""
        access.authorize('baremetal:chassis:create')
        values = chassis.as_dict()
        _check_values(values)
        values.setdefault('uuid', None)
        if values['uuid'] is None:
            values['uuid'] = uuidutils.generate_uuid()
        if values.get('extra') is None:
            values['extra'] = {}
        new_chassis = objects.Chassis(api.request.context, **values)
        new_chassis.create()
        LOG.info('Chassis %s created', new_chassis.uuid)
        utils.set_location('chassis', new_chassis.uuid)
        return convert_with_links(new_chassis)

    @expose.expose(Chassis, types.uuid, body=[ChassisPatchType])
    def patch(self, chassis_uuid, patch=None):
        """Change the description or extra of a chassis (JSON patch)."""
        access.authorize('baremetal:chassis:update')
        if not patch:
            raise exception.Invalid('A JSON patch (a non-empty list of '
                                    'operations) is required.')
        for root in utils.patched_roots(patch):
            if root not in PATCHABLE:
                raise exception.Invalid(
                    'Cannot update /%s: only %s may be changed on a '
                    'chassis.' % (root,
                                  ', '.join('/' + p for p in PATCHABLE)))
        rpc_chassis = get_chassis(chassis_uuid)
        doc = {'description': rpc_chassis.description,
               'extra': dict(rpc_chassis.extra or {})}
        patched = utils.apply_jsonpatch(doc, patch)
        values = {name: patched.get(name) for name in PATCHABLE}
        _check_values(values)
        if values['extra'] is None:
            values['extra'] = {}
        for name, value in values.items():
            if rpc_chassis[name] != value:
                rpc_chassis[name] = value
        try:
            rpc_chassis.save()
        except exception.ChassisNotFound:
            # NOTE: deleted since the read: named as the client named it.
            raise exception.ChassisNotFound(chassis=chassis_uuid) from None
        return convert_with_links(rpc_chassis)

    @expose.expose(None, types.uuid, status_code=204)
    def delete(self, chassis_uuid):
        """Delete a chassis; 400 while nodes belong to it."""
        access.authorize('baremetal:chassis:delete')
        rpc_chassis = get_chassis(chassis_uuid)
        try:
            rpc_chassis.destroy()
        except exception.ChassisNotFound:
            raise exception.ChassisNotFound(chassis=chassis_uuid) from None
        LOG.info('Chassis %s deleted', chassis_uuid)
