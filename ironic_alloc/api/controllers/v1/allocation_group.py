"""Allocation groups: /v1/allocation_groups (extension 1.3, feature
"allocation_groups").

A group changes many allocations in one database transaction, or none:
new allocations (a node searched for each, like POST /v1/allocations),
hand-overs (a node passes from an existing allocation to a new one) and
releases (an existing allocation is deleted).  A swap is a release of X
plus a new member named like X: names are unique, so the new row is
written without a name while the group is allocating and takes X's name
in the commit that deletes X.

Creating a group writes the group (state allocating, owned by a live
conductor picked here) and its new members' rows (state allocating) in
one transaction, then casts to that conductor, which solves the group and
commits it (conductor/groups.py).  Every bad input is a 400 naming the
member, before anything is written.
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
from ironic_alloc.api.controllers.v1 import allocation as allocation_ctl
from ironic_alloc.api.controllers.v1 import collection
from ironic_alloc.api.controllers.v1 import leases
from ironic_alloc.api.controllers.v1 import types
from ironic_alloc.api.controllers.v1 import utils
from ironic_alloc.api import expose
from ironic_alloc.common import exception
from ironic_alloc.common import notifications
from ironic_alloc.common import release_mappings
from ironic_alloc.common import states
from ironic_alloc import objects
from ironic_alloc.objects import allocation_group as group_obj

LOG = log.getLogger(__name__)

RESOURCE = 'allocation_groups'

# The fields of a group on the wire, in their order.
FIELDS = ('uuid', 'name', 'state', 'owner', 'last_error', 'explanation',
          'members', 'expires_at', 'created_at', 'updated_at', 'links')

# What a PATCH may change: the group's lease, which is its members'.
LEASE_PATHS = leases.PATHS

# What a POST body may hold.
CREATE_FIELDS = frozenset(['name', 'members', 'ttl', 'expires_at'])

# What a hand-over member may hold.
HANDOVER_FIELDS = frozenset(['handover_from', 'node', 'name', 'extra'])

# What a new member may not hold: the member's key is its uuid, and the
# group's lease is its members'.
NOT_IN_NEW_MEMBER = ('uuid', 'ttl', 'expires_at', 'node')


def convert(group, members, fields=None):
    """The wire form of a group.

    :param members: [(Allocation, node UUID)] of its rows.
    """
    rows = {allocation.uuid: (allocation, node_uuid)
            for allocation, node_uuid in members}
    shown = []
    for uuid, member in sorted((group.spec or {}).items()):
        allocation, node_uuid = rows.get(uuid, (None, None))
        shown.append({
            'uuid': uuid, 'kind': member['kind'],
            'name': allocation.name if allocation is not None else None,
            'state': allocation.state if allocation is not None else None,
            'node_uuid': node_uuid,
            'handover_from': member.get('from_uuid'),
        })
    values = {
        'uuid': group.uuid, 'name': group.name, 'state': group.state,
        'owner': group.owner, 'last_error': group.last_error,
        'explanation': group.explanation or None, 'members': shown,
        'expires_at': leases.shown(group.expires_at),
        'created_at': leases.shown(group.created_at),
        'updated_at': leases.shown(group.updated_at),
        'links': [{'href': lk.href, 'rel': lk.rel} for lk in
                  link.make_links(RESOURCE, group.uuid)],
    }
    if fields is not None:
        keep = set(fields) | {'links'}
        values = {k: v for k, v in values.items() if k in keep}
    return values


def _check_fields(fields):
    if fields is not None:
        utils.check_for_invalid_fields(fields, FIELDS)


def get_group(ident, rule=None):
    """A group by UUID or name if the caller may see it
    (baremetal:allocation_group:get); ``rule`` applied to it.

    :raises: AllocationGroupNotFound (404), InvalidUuidOrName (400),
        HTTPForbidden (403) when ``rule`` denies.
    """
    context = api.request.context
    if uuidutils.is_uuid_like(ident):
        criteria = {'uuid': str(uuid_lib.UUID(ident))}
    elif utils.is_valid_logical_name(ident):
        criteria = {'name': ident}
    else:
        raise exception.InvalidUuidOrName(name=ident)
    group = objects.AllocationGroup.get(context, **criteria)
    if not access.allowed('baremetal:allocation_group:get', group):
        raise exception.AllocationGroupNotFound(group=ident)
    if rule is not None:
        access.authorize_allocation(rule, group)
    return group


def _check_not_pinned():
    """Refuse groups during a rolling upgrade from a release whose
    conductors do not know them (no object AllocationGroup): they would
    process neither the cast nor the group's members.

    :raises: Invalid (400).
    """
    pin = api.request.cfg.pin_release_version
    if pin and 'AllocationGroup' not in release_mappings.object_versions(
            pin):
        raise exception.Invalid(
            'Allocation groups cannot be created while '
            '[DEFAULT]pin_release_version is %s: the conductors of that '
            'release do not process them. Retry once the upgrade is over.'
            % pin)


def _invalid(uuid, message):
    return exception.Invalid('Member %s: %s' % (uuid, message))


def _member_uuid(key):
    if not uuidutils.is_uuid_like(key):
        raise exception.Invalid('Member %s: a member\'s key is the UUID of '
                                'its allocation.' % utils.quoted(key))
    return str(uuid_lib.UUID(key))


def _existing(uuid, ident, what):
    """The existing allocation ``ident`` a member ends (release or
    hand-over), if the caller may delete it one by one.

    :raises: Invalid (400) naming the member when it is unknown or hidden,
        HTTPForbidden (403) when the caller may see but not delete it.
    """
    try:
        return allocation_ctl.get_allocation(ident,
                                             'baremetal:allocation:delete')
    except (exception.AllocationNotFound, exception.InvalidUuidOrName):
        raise _invalid(uuid, 'the allocation %s %s cannot be found.'
                       % (what, utils.quoted(ident))) from None


def _new_member(uuid, body):
    """The row values of a new member (the checks of POST
    /v1/allocations)."""
    refused = sorted(set(body) & set(NOT_IN_NEW_MEMBER))
    if refused:
        raise _invalid(uuid, 'a new member cannot have %s (its key is its '
                       'UUID; a lease is the group\'s; a node is handed '
                       'over with "handover_from").' % ', '.join(refused))
    candidates = body.get('candidate_nodes')
    if isinstance(candidates, list):
        named = [c for c in candidates if isinstance(c, str)]
        twice = sorted({c for c in named if named.count(c) > 1})
        if twice:
            raise _invalid(uuid, 'candidate_nodes names node(s) %s more '
                           'than once.' % ', '.join(twice))
    try:
        typed = wsme.rest.json.fromjson(allocation_ctl.Allocation, body)
        values = allocation_ctl.new_allocation_values(typed.as_dict())
    except (ValueError, TypeError, wsme.exc.ClientSideError) as exc:
        raise _invalid(uuid, str(exc)) from None
    except exception.Invalid as exc:
        raise _invalid(uuid, str(exc)) from None
    if not values['resource_class']:
        raise _invalid(uuid, 'resource_class is mandatory for a new '
                       'member.')
    values['uuid'] = uuid
    return values


def _handover_member(uuid, body):
    """(row values, the allocation handed over from, the node)."""
    unknown = sorted(set(body) - HANDOVER_FIELDS)
    if unknown:
        raise _invalid(uuid, 'a hand-over member has only %s; unknown: %s.'
                       % (', '.join(sorted(HANDOVER_FIELDS)),
                          ', '.join(unknown)))
    if not isinstance(body.get('handover_from'), str):
        raise _invalid(uuid, 'handover_from is the UUID or name of an '
                       'allocation.')
    if not isinstance(body.get('node'), str):
        raise _invalid(uuid, 'a hand-over names its node (UUID or name).')
    source = _existing(uuid, body['handover_from'], 'to hand over from')
    try:
        node = utils.get_node(body['node'])
    except (exception.NodeNotFound, exception.InvalidUuidOrName):
        raise _invalid(uuid, 'node %s cannot be found.'
                       % utils.quoted(body['node'])) from None
    if node.allocation_id != source.id:
        raise _invalid(uuid, 'node %s is not held by allocation %s.'
                       % (node.uuid, source.uuid))
    name = body.get('name')
    if name is not None:
        if not isinstance(name, str):
            raise _invalid(uuid, 'the name of an allocation is a string.')
        try:
            allocation_ctl.check_name(name)
        except exception.Invalid as exc:
            raise _invalid(uuid, str(exc)) from None
    extra = body.get('extra') or {}
    if not isinstance(extra, dict):
        raise _invalid(uuid, 'extra is an object.')
    utils.check_stored_sizes({'extra': extra})
    values = {'uuid': uuid, 'name': name, 'extra': extra,
              'resource_class': source.resource_class or node.resource_class,
              'owner': source.owner, 'traits': [], 'candidate_nodes': []}
    return values, source, node


def _members(members):
    """The checked members of a POST body.

    :returns: (rows of the new members, ids of the allocations ended,
        the group's spec).
    :raises: Invalid (400) naming the member; nothing is written.
    """
    if not isinstance(members, dict) or not members:
        raise exception.Invalid('members must be a non-empty object: '
                                '{allocation UUID: member}.')
    maximum = api.request.cfg.allocation.max_group_size
    if len(members) > maximum:
        raise exception.Invalid('An allocation group has at most %d members '
                                '([allocation]max_group_size), got %d.'
                                % (maximum, len(members)))
    rows, ended, spec = [], {}, {}
    handed_nodes = {}
    for key, body in sorted(members.items()):
        uuid = _member_uuid(key)
        if uuid in spec:
            raise _invalid(uuid, 'the member is given twice.')
        if not isinstance(body, dict):
            raise _invalid(uuid, 'a member is an object ({} to release '
                           'the allocation).')
        try:
            existing = allocation_ctl.get_allocation(uuid)
        except exception.AllocationNotFound:
            existing = None
        if not body:
            if existing is None:
                raise _invalid(uuid, 'an empty member releases an existing '
                               'allocation, and none has this UUID.')
            source = _existing(uuid, uuid, 'to release')
            if source.id in ended:
                raise _invalid(uuid, 'allocation %s is released or handed '
                               'over twice.' % source.uuid)
            ended[source.id] = source
            spec[uuid] = {'kind': states.MEMBER_RELEASE,
                          'allocation_id': source.id}
            continue
        if existing is not None:
            raise _invalid(uuid, 'an allocation with this UUID exists; a '
                           'member naming an existing allocation releases '
                           'it and is empty ({}).')
        if 'handover_from' in body:
            values, source, node = _handover_member(uuid, body)
            if source.id in ended:
                raise _invalid(uuid, 'allocation %s is released or handed '
                               'over twice.' % source.uuid)
            if node.id in handed_nodes:
                raise _invalid(uuid, 'node %s is also handed over by member '
                               '%s.' % (node.uuid, handed_nodes[node.id]))
            ended[source.id] = source
            handed_nodes[node.id] = uuid
            spec[uuid] = {'kind': states.MEMBER_HANDOVER,
                          'from_id': source.id, 'from_uuid': source.uuid,
                          'node_id': node.id, 'node_uuid': node.uuid}
        else:
            values = _new_member(uuid, body)
            spec[uuid] = {'kind': states.MEMBER_NEW}
        rows.append(values)
    _check_names(rows, ended, spec)
    return rows, list(ended), spec


def _check_names(rows, ended, spec):
    """Names of new members: unique among them; one taken from an
    allocation the group ends is written by the commit (a swap)."""
    freed = {a.name for a in ended.values() if a.name}
    seen = {}
    for values in rows:
        name = values.get('name')
        if name is None:
            continue
        if name in seen:
            raise _invalid(values['uuid'], 'the name %s is also given to '
                           'member %s.' % (name, seen[name]))
        seen[name] = values['uuid']
        if name in freed:
            values['name'] = None
            spec[values['uuid']]['pending_name'] = name


def _lease_of_patch(patch):
    """The lease operations of a group PATCH applied in order (the
    rules of an allocation's lease).

    :returns: (whether the lease changes, its new end or None for none).
    :raises: Invalid (400).
    """
    if not isinstance(patch, list) or not patch:
        raise exception.Invalid('A JSON patch (a non-empty list of '
                                'operations) is required.')
    for op in patch:
        if not isinstance(op, dict) or not isinstance(op.get('path'), str):
            raise exception.Invalid('A JSON patch operation is an object '
                                    'with "op" and "path".')
        if op['path'] not in LEASE_PATHS:
            raise exception.Invalid(
                'Cannot update %s: only %s may be changed on an allocation '
                'group.' % (utils.quoted(op['path']),
                            ', '.join(LEASE_PATHS)))
        if op.get('op') not in ('add', 'replace', 'remove'):
            raise exception.Invalid(
                'Cannot %s %s: the lease is replaced or removed.'
                % (utils.quoted(op.get('op')), op['path']))
    return leases.lease_of_patch(patch)


def _check_lease_allowed(spec, group=None):
    """The rule of leases (states.LEASE_ALLOWED_STATES) for the nodes the
    hand-over members of ``spec`` name, which a conductor binds to the
    group only when it commits it.  The nodes of the members a group holds
    are judged by the write of the lease itself
    (db update_allocation_group_lease), and the expiry never releases a
    deployed node whatever wrote the lease.

    :param group: the group, None for a new one.
    :raises: LeaseOnDeployedNode (409).
    """
    context = api.request.context
    node_ids = {member['node_id'] for member in spec.values()
                if member.get('node_id') is not None}
    for node_id in sorted(node_ids):
        node = objects.Node.get_by_id(context, node_id)
        if node.provision_state not in states.LEASE_ALLOWED_STATES:
            raise exception.LeaseOnDeployedNode(
                hold=('allocation group %s' % group.uuid if group
                      else 'a new allocation group'),
                node=node.uuid, state=node.provision_state)


class AllocationGroupsController(rest.RestController):
    """REST controller for /v1/allocation_groups."""

    @pecan.expose()
    def _route(self, args, request=None):
        routing.refuse_post_to_item(self, args, pecan.request)
        return super()._route(args, request)

    @expose.expose(types.jsontype, str, int, str, types.listtype)
    def get_all(self, state=None, limit=None, marker=None, fields=None):
        """List allocation groups (filter, paging and ``fields``)."""
        _check_fields(fields)
        limit = utils.validate_limit(limit)
        filters = {}
        if state is not None:
            if state not in states.GROUP_STATES:
                raise exception.Invalid(
                    'Invalid allocation group state "%s". Valid states '
                    'are: %s.' % (state, ', '.join(states.GROUP_STATES)))
            filters['state'] = state
        project = access.list_project('allocation_group')
        if project is not None:
            filters['owner'] = project
        marker_id = None
        if marker is not None:
            marker_id = get_group(marker).id
        groups = objects.AllocationGroup.list(
            api.request.context, filters=filters, limit=limit,
            marker=marker_id)
        members = objects.AllocationGroup.members_of(api.request.context,
                                                     groups)
        result = {RESOURCE: [convert(g, members[g.id], fields)
                             for g in groups]}
        following = collection.next_link(
            RESOURCE, {'state': state, 'fields': fields}, groups, limit)
        if following is not wsme.types.Unset:
            result['next'] = following
        return result

    @expose.expose(types.jsontype, str, types.listtype)
    def get_one(self, group_ident, fields=None):
        """Show one group with its members."""
        _check_fields(fields)
        group = get_group(group_ident)
        return convert(group, group.members(), fields)

    @expose.expose(types.jsontype, body=types.jsontype, status_code=201)
    def post(self, body):
        """Create a group: its rows now, its nodes by a conductor."""
        context = api.request.context
        access.authorize('baremetal:allocation_group:create')
        if not isinstance(body, dict):
            raise exception.Invalid('An allocation group request is a JSON '
                                    'object.')
        unknown = sorted(set(body) - CREATE_FIELDS)
        if unknown:
            raise exception.Invalid('Unknown field(s) of an allocation '
                                    'group: %s.' % ', '.join(unknown))
        name = body.get('name')
        if name is not None:
            if not isinstance(name, str) or not utils.is_valid_logical_name(
                    name) or uuidutils.is_uuid_like(name):
                raise exception.Invalid('Invalid allocation group name %s.'
                                        % utils.quoted(name))
        _check_not_pinned()
        lease_end = None
        if body.get('ttl') is not None or body.get('expires_at') is not None:
            lease_end = leases.lease_end(body.get('ttl'),
                                         body.get('expires_at'))
        rows, ended, spec = _members(body.get('members'))
        if lease_end is not None:
            _check_lease_allowed(spec)
        if any(member['kind'] == states.MEMBER_NEW
               for member in spec.values()):
            # NOTE: a hand-over creates its allocation too, but only
            # within what the caller may delete, checked per member.
            access.authorize('baremetal:allocation:create')
        owner = access.project_caller()
        owners = sorted({row['owner'] for row in rows if row['owner']})
        hold_limits = [lim for lim in (access.hold_limits(o) for o in owners)
                       if lim]
        # NOTE: 503 only here, before anything is written.
        conductor = api.request.rpcapi.get_random_conductor(context,
                                                            recent=True)
        for row in rows:
            row.update(state=states.ALLOCATING,
                       conductor_affinity=conductor.id)
        group = objects.AllocationGroup(
            context, uuid=uuidutils.generate_uuid(), name=name, owner=owner,
            state=states.GROUP_ALLOCATING, conductor_affinity=conductor.id,
            spec=spec, expires_at=lease_end)
        group.create(rows, ended, limits=hold_limits)
        LOG.info('Allocation group %(group)s created for conductor '
                 '%(host)s: %(count)d members',
                 {'group': group.uuid, 'host': conductor.hostname,
                  'count': len(spec)})
        utils.set_location(RESOURCE, group.uuid)
        group_obj.notify(context, group, 'create', 'success',
                         notifications.API_SERVICE)
        api.request.rpcapi.create_allocation_group(context, group.id,
                                                   conductor.hostname)
        return convert(group, group.members())

    @expose.expose(types.jsontype, str, body=types.jsontype)
    def patch(self, group_ident, patch=None):
        """Change the lease of a group and of all its members, in one
        transaction (only /expires_at and /ttl)."""
        group = get_group(group_ident, 'baremetal:allocation_group:update')
        changed, end = _lease_of_patch(patch)
        if not changed:
            raise exception.Invalid('A JSON patch of /expires_at or /ttl '
                                    'is required.')
        if end is not None and group.state == states.GROUP_ALLOCATING:
            _check_lease_allowed(group.spec or {}, group)
        try:
            group.set_lease(end)
        except exception.AllocationGroupNotFound:
            raise exception.AllocationGroupNotFound(
                group=group_ident) from None
        LOG.info('Lease of allocation group %(group)s set to %(end)s',
                 {'group': group.uuid, 'end': end or 'none'})
        return convert(group, group.members())

    @expose.expose(None, str, status_code=204)
    def delete(self, group_ident):
        """Release every member and delete the group, in one
        transaction."""
        group = get_group(group_ident, 'baremetal:allocation_group:delete')
        try:
            released = group.destroy(
                node_states=states.UPDATE_ALLOWED_STATES)
        except exception.AllocationGroupNotFound:
            raise exception.AllocationGroupNotFound(
                group=group_ident) from None
        LOG.info('Allocation group %(group)s deleted with %(count)d '
                 'members', {'group': group.uuid, 'count': len(released)})
        group_obj.notify(api.request.context, group, 'delete', 'success',
                         notifications.API_SERVICE)
        _release_members(api.request.context, released)


def _release_members(context, released):
    """Wake a conductor to release what its backend keeps outside the
    database for the deleted members (the Placement backend's claims),
    as a single allocation's DELETE does.  The delete is committed
    already: with no conductor alive or a lost cast, the backend's
    periodic work releases them."""
    if not released:
        return
    try:
        conductor = api.request.rpcapi.get_random_conductor(context,
                                                            recent=True)
    except exception.NoValidHost as exc:
        LOG.warning('The members of a deleted allocation group are '
                    'released outside the database by the periodic work '
                    'only: %s', exc)
        return
    api.request.rpcapi.release_allocation_group(context, released,
                                                conductor.hostname)
