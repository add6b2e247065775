"""Reservations: /v1/reservations (extension 1.2, feature "reservations").

A reservation holds a node for an instance until it is deleted or its
lease ends.  It is stored as an allocation row of kind 'reservation' whose
node gets ``allocation_id`` and ``instance_uuid`` like an allocation's, so
nothing else needs to know about it: Ironic's API shows the node as one
with an instance and never shows the reservation as an allocation.

The answer is synchronous: the API writes the reservation itself, in one
transaction that tries the nodes of the request with a guarded write each,
in the request's order (see db.api create_reservation), and answers 201
with the first node it got or 409 with the reason of every node.
"""

import uuid as uuid_lib

from oslo_log import log
from oslo_utils import uuidutils
import pecan
from pecan import rest
import wsme

from ironic_alloc import api
from ironic_alloc.api.controllers import link
from ironic_alloc.api.controllers import routing
from ironic_alloc.api.controllers.v1 import access
from ironic_alloc.api.controllers.v1 import collection
from ironic_alloc.api.controllers.v1 import leases
from ironic_alloc.api.controllers.v1 import types
from ironic_alloc.api.controllers.v1 import utils
from ironic_alloc.api import expose
from ironic_alloc.common import exception
from ironic_alloc.common import notifications
from ironic_alloc.common import states
from ironic_alloc import objects
from ironic_alloc.objects import allocation as allocation_obj

LOG = log.getLogger(__name__)

RESOURCE = 'reservations'

# The fields of a reservation on the wire, in their order.
FIELDS = ('uuid', 'node_uuid', 'instance_uuid', 'owner', 'expires_at',
          'created_at', 'updated_at', 'links')

# What a POST body may hold.
CREATE_FIELDS = frozenset(['instance_uuid', 'node_uuid', 'ttl'])

# What a PATCH may replace: the lease, as a time or as seconds from now.
PATCHABLE = ('/expires_at', '/ttl')


def convert(rpc_reservation, node_uuid, fields=None):
    """The wire form of a reservation (only ``fields`` and the links when
    given)."""
    values = {
        'uuid': rpc_reservation.uuid,
        'node_uuid': node_uuid,
        'instance_uuid': rpc_reservation.instance_uuid,
        'owner': rpc_reservation.owner,
        'expires_at': leases.shown(rpc_reservation.expires_at),
        'created_at': leases.shown(rpc_reservation.created_at),
        'updated_at': leases.shown(rpc_reservation.updated_at),
        'links': [{'href': lk.href, 'rel': lk.rel} for lk in
                  link.make_links(RESOURCE, rpc_reservation.uuid)],
    }
    if fields is not None:
        shown = set(fields) | {'links'}
        values = {k: v for k, v in values.items() if k in shown}
    return values


def _check_fields(fields):
    """:raises: InvalidParameterValue (400) for an unknown field."""
    if fields is not None:
        utils.check_for_invalid_fields(fields, FIELDS)


def _uuid(value, what):
    """``value`` as a canonical UUID string.

    :raises: Invalid (400) naming ``what``.
    """
    if not isinstance(value, str) or not uuidutils.is_uuid_like(value):
        raise exception.Invalid('%s must be a UUID, got %s.'
                                % (what, utils.quoted(value)))
    return str(uuid_lib.UUID(value))


def _create_values(body):
    """The checked instance, node list and ttl of a POST body.

    :raises: Invalid (400) for every bad input of the request, before
        anything is written.
    """
    if not isinstance(body, dict):
        raise exception.Invalid('A reservation request is a JSON object.')
    unknown = sorted(set(body) - CREATE_FIELDS)
    if unknown:
        raise exception.Invalid('Unknown field(s) of a reservation request: '
                                '%s.' % ', '.join(unknown))
    if 'instance_uuid' not in body:
        raise exception.Invalid('instance_uuid is required.')
    instance = _uuid(body['instance_uuid'], 'instance_uuid')
    nodes = body.get('node_uuid')
    if not isinstance(nodes, list) or not nodes:
        raise exception.Invalid('node_uuid must be a non-empty list of node '
                                'UUIDs.')
    max_candidates = api.request.cfg.reservation.max_candidates
    if len(nodes) > max_candidates:
        raise exception.Invalid('At most %d node UUIDs may be given '
                                '([reservation]max_candidates), got %d.'
                                % (max_candidates, len(nodes)))
    uuids = [_uuid(node, 'Every entry of node_uuid') for node in nodes]
    duplicates = sorted({u for u in uuids if uuids.count(u) > 1})
    if duplicates:
        raise exception.Invalid('node_uuid lists a node more than once: %s.'
                                % ', '.join(duplicates))
    if body.get('ttl') is None:
        if 'ttl' in body:
            raise exception.Invalid('Invalid ttl null: a whole number of '
                                    'seconds is expected.')
        ttl = api.request.cfg.reservation.default_ttl
    else:
        ttl = body['ttl']
        leases.check_ttl(ttl)
    return instance, uuids, ttl


def _conflict(error):
    """The 409 of a request that reserved nothing, with the reasons in
    the error object, next to Ironic's faultstring."""
    fault = {'faultcode': 'Client', 'faultstring': str(error),
             'debuginfo': None, 'reasons': error.reasons}
    return wsme.api.Response(fault, status_code=409,
                             return_type=types.jsontype)


def _notify(reservation, action, node_uuid):
    """ironic_alloc.reservation.<action>.success: a reservation is
    written in one transaction, so its change has no start and end."""
    allocation_obj.notify(api.request.context, reservation, 'reservation',
                          action, 'success', notifications.API_SERVICE,
                          node_uuid=node_uuid)


def get_reservation(ident, rule=None):
    """A reservation by UUID, if the caller may see it
    (baremetal:reservation:get) and, when given, apply ``rule`` to it.

    :returns: (Allocation of kind 'reservation', node UUID or None).
    :raises: ReservationNotFound (404) for a missing or hidden one (or a
        value that is no UUID), HTTPForbidden (403) when ``rule`` denies.
    """
    if not uuidutils.is_uuid_like(ident):
        raise exception.ReservationNotFound(reservation=ident)
    reservation, node_uuid = objects.Allocation.get_reservation(
        api.request.context, str(uuid_lib.UUID(ident)))
    if not access.allowed('baremetal:reservation:get', reservation):
        raise exception.ReservationNotFound(reservation=ident)
    if rule is not None:
        access.authorize_allocation(rule, reservation)
    return reservation, node_uuid


def _new_expiry(patch):
    """The end of the lease a renewal asks for (naive UTC), by the
    database's clock (leases.lease_end).

    :raises: Invalid (400).
    """
    if not isinstance(patch, list) or not patch:
        raise exception.Invalid('A JSON patch (a non-empty list of '
                                'operations) is required.')
    expires_at = None
    for op in patch:
        if not isinstance(op, dict) or set(op) - {'op', 'path', 'value'}:
            raise exception.Invalid('Every patch operation is an object '
                                    'with op, path and value.')
        path = op.get('path')
        if path not in PATCHABLE:
            raise exception.Invalid(
                'Cannot update %s: it is read-only; a reservation\'s lease '
                'is renewed by replacing %s.'
                % (utils.quoted(path), ' or '.join(PATCHABLE)))
        if op.get('op') not in ('replace', 'add'):
            raise exception.Invalid(
                'Cannot %s %s: a reservation always has a lease, which is '
                'replaced.' % (utils.quoted(op.get('op')), path))
        if 'value' not in op:
            raise exception.Invalid('The operation on %s needs a value.'
                                    % path)
        if path == '/ttl':
            expires_at = leases.lease_end(ttl=op['value'])
        else:
            expires_at = leases.lease_end(expires_at=op['value'])
    return expires_at


class ReservationsController(rest.RestController):
    """REST controller for /v1/reservations."""

    @pecan.expose()
    def _route(self, args, request=None):
        routing.refuse_post_to_item(self, args, pecan.request)
        return super()._route(args, request)

    @expose.expose(types.jsontype, str, types.uuid_or_name, int, str,
                   types.listtype)
    def get_all(self, instance_uuid=None, node=None, limit=None,
                marker=None, fields=None):
        """List reservations (filters, paging and ``fields``)."""
        _check_fields(fields)
        limit = utils.validate_limit(limit)
        filters = {}
        if instance_uuid is not None:
            filters['instance_uuid'] = _uuid(instance_uuid, 'instance_uuid')
        if node is not None:
            filters['node_id'] = utils.get_query_node(node).id
        project = access.list_project('reservation')
        if project is not None:
            filters['owner'] = project
        marker_id = None
        if marker is not None:
            marker_id = get_reservation(marker)[0].id
        page = objects.Allocation.list_reservations(
            api.request.context, filters=filters, limit=limit,
            marker=marker_id)
        result = {RESOURCE: [convert(r, node_uuid, fields)
                             for r, node_uuid in page]}
        query = {'instance_uuid': instance_uuid, 'node': node,
                 'fields': fields}
        following = collection.next_link(RESOURCE, query,
                                         [r for r, _n in page], limit)
        if following is not wsme.types.Unset:
            result['next'] = following
        return result

    @expose.expose(types.jsontype, str, types.listtype)
    def get_one(self, reservation_uuid, fields=None):
        """Show one reservation."""
        _check_fields(fields)
        reservation, node_uuid = get_reservation(reservation_uuid)
        return {'reservation': convert(reservation, node_uuid, fields)}

    @expose.expose(types.jsontype, body=types.jsontype, status_code=201)
    def post(self, body):
        """Reserve the first node of the list that can be reserved."""
        access.authorize('baremetal:reservation:create')
        instance, node_uuids, ttl = _create_values(body)
        leases.check_not_pinned()
        project = access.project_caller()
        values = {'uuid': uuidutils.generate_uuid(),
                  'instance_uuid': instance, 'owner': project}
        try:
            reservation, node_uuid = objects.Allocation.reserve(
                api.request.context, values, node_uuids, ttl,
                project=project, limits=access.hold_limits(project))
        except exception.NoNodeReservable as error:
            LOG.info('Reservation for instance %(instance)s refused: '
                     '%(error)s', {'instance': instance, 'error': error})
            return _conflict(error)
        except exception.InstanceAssociated as error:
            error.reasons = [
                {'node_uuid': u, 'reason': 'the instance is already on '
                                           'another node'}
                for u in node_uuids]
            return _conflict(error)
        LOG.info('Reservation %(res)s of node %(node)s for instance '
                 '%(instance)s until %(until)s',
                 {'res': reservation.uuid, 'node': node_uuid,
                  'instance': instance, 'until': reservation.expires_at})
        utils.set_location(RESOURCE, reservation.uuid)
        _notify(reservation, 'create', node_uuid)
        return {'reservation': convert(reservation, node_uuid)}

    @expose.expose(types.jsontype, str, body=types.jsontype)
    def patch(self, reservation_uuid, patch=None):
        """Renew the lease: replace /expires_at or /ttl."""
        reservation = get_reservation(reservation_uuid,
                                      'baremetal:reservation:update')[0]
        expires_at = _new_expiry(patch)
        try:
            renewed, node_uuid = objects.Allocation.renew_reservation(
                api.request.context, reservation.id, expires_at)
        except exception.ReservationNotFound:
            raise exception.ReservationNotFound(
                reservation=reservation_uuid) from None
        LOG.info('Reservation %(res)s renewed until %(until)s',
                 {'res': renewed.uuid, 'until': renewed.expires_at})
        _notify(renewed, 'update', node_uuid)
        return {'reservation': convert(renewed, node_uuid)}

    @expose.expose(None, str, status_code=204)
    def delete(self, reservation_uuid):
        """Delete a reservation, freeing its node in the same
        transaction."""
        context = api.request.context
        with objects.Allocation.one_transaction(context):
            reservation, node_uuid = get_reservation(
                reservation_uuid, 'baremetal:reservation:delete')
            try:
                objects.Allocation.destroy_reservation(
                    context, reservation.id,
                    node_states=states.UPDATE_ALLOWED_STATES)
            except exception.ReservationNotFound:
                raise exception.ReservationNotFound(
                    reservation=reservation_uuid) from None
        LOG.info('Reservation %s deleted', reservation.uuid)
        _notify(reservation, 'delete', node_uuid)
