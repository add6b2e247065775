"""Allocations: /v1/allocations and /v1/nodes/{node}/allocation (1.52+).

Creating an allocation commits the row (state allocating, owned by a live
conductor picked here) and only then tells that conductor: a cast, or with
``[api]allocation_create_wait`` a call bounded by it, so that the answer
can show the end state.  The answer is 201 whatever happens to the
message, since the conductor re-drives its rows from the database.
Backfilling (1.58+, ``node`` given) is synchronous.
Deletion is an RPC call to any live conductor, so a 204 means the node is
already free and a 409 reaches the client.
"""

import contextlib
import json

from oslo_log import log
from oslo_utils import uuidutils
from oslo_utils import versionutils
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
from ironic_alloc.api.controllers.v1 import extensions
from ironic_alloc.api.controllers.v1 import leases
from ironic_alloc.api.controllers.v1 import types
from ironic_alloc.api.controllers.v1 import utils
from ironic_alloc.api import expose
from ironic_alloc.common import exception
from ironic_alloc.common import matching
from ironic_alloc.common import notifications
from ironic_alloc.common import release_mappings
from ironic_alloc.common import states
from ironic_alloc import objects
from ironic_alloc.objects import allocation as allocation_obj

LOG = log.getLogger(__name__)


SORT_KEYS = frozenset(['id', 'uuid', 'name', 'state', 'resource_class',
                       'owner', 'created_at', 'updated_at'])

# Fields newer than 1.52, the version of the allocation API itself.
_VERSIONED_FIELDS = {'owner': utils.allow_allocation_owner}

PATCHABLE = ('name', 'extra')

# The lease's paths of a PATCH (extension "reservations"): the end of the
# lease, and "ttl", write-only, which sets it to the database's time plus
# that many seconds.
LEASE_PATHS = leases.PATHS

# How many UUIDs of matching nodes POST /v1/allocations/explain returns
# ("examples" query parameter): by default, and at most.
EXPLAIN_EXAMPLES = 10
MAX_EXPLAIN_EXAMPLES = 100


class Allocation(base.APIBase):
    """API representation of an allocation (Ironic's wire shape)."""

    uuid = types.uuid
    """Unique UUID for this allocation"""

    name = wsme.wsattr(str)
    """The logical name of this allocation"""

    node_uuid = wsme.wsattr(types.uuid, readonly=True)
    """The UUID of the node this allocation belongs to"""

    node = wsme.wsattr(str)
    """A node to backfill this allocation for (request only, 1.58+)"""

    state = wsme.wsattr(str, readonly=True)
    """The current state of the allocation"""

    last_error = wsme.wsattr(str, readonly=True)
    """Last error that happened to this allocation"""

    resource_class = wsme.wsattr(wtypes.StringType(max_length=80))
    """Requested resource class for this allocation"""

    owner = wsme.wsattr(types.StrictStringType(max_length=255))
    """Owner of the allocation (1.60+)"""

    traits = wsme.wsattr([str])
    """Requested traits for the allocation"""

    candidate_nodes = wsme.wsattr([str])
    """Candidate nodes for this allocation, as UUIDs"""

    extra = {str: types.jsontype}
    """This allocation's meta data"""

    match = wsme.wsattr(types.jsontype)
    """Hardware constraints of the matching language (extension 1.1)"""

    explanation = wsme.wsattr(types.jsontype, readonly=True)
    """Why a failed allocation found no node: its funnel (extension 1.1)"""

    expires_at = wsme.wsattr(types.jsontype)
    """The end of the allocation's lease, ISO 8601 UTC; null: none
    (extension 1.2)"""

    ttl = wsme.wsattr(types.jsontype)
    """Request only: the lease in seconds from now (extension 1.2)"""

    group_uuid = wsme.wsattr(types.uuid, readonly=True)
    """The allocation group the allocation was made in (extension 1.3)"""

    links = wsme.wsattr([link.Link], readonly=True)
    """A list containing a self link and associated allocation links"""


# NOTE: a body that is not an object, or that sets a read-only field
# (state, node_uuid, last_error, links), is a 400.
types.json_object(Allocation)

_WIRE_FIELDS = frozenset(
    a.key for a in wtypes.list_attributes(Allocation)) - {'node', 'links',
                                                          'ttl'}


def convert_with_links(rpc_allocation, node_uuids, fields=None,
                       group_uuids=None):
    """The wire form of an allocation for the request version.

    :param node_uuids: {node id: node uuid}, preloaded for a whole page.
    :param group_uuids: {group id: group uuid}, preloaded for a whole
        page; read here when not given.
    """
    allocation = Allocation()
    for name in ('uuid', 'name', 'state', 'last_error', 'resource_class',
                 'owner', 'created_at', 'updated_at', 'extra'):
        setattr(allocation, name, rpc_allocation[name])
    allocation.traits = list(rpc_allocation.traits or [])
    allocation.candidate_nodes = list(rpc_allocation.candidate_nodes or [])
    allocation.match = rpc_allocation.match
    allocation.explanation = rpc_allocation.explanation
    allocation.node_uuid = node_uuids.get(rpc_allocation.node_id)
    allocation.expires_at = leases.shown(rpc_allocation.expires_at)
    allocation.ttl = wtypes.Unset
    allocation.group_uuid = None
    if rpc_allocation.group_id is not None and \
            extensions.allow_extension('allocation_groups'):
        if group_uuids is None:
            group_uuids = _group_uuids([rpc_allocation])
        allocation.group_uuid = group_uuids.get(rpc_allocation.group_id)
    allocation.links = link.make_links('allocations', allocation.uuid)
    for name, gate in _VERSIONED_FIELDS.items():
        if not gate():
            setattr(allocation, name, wtypes.Unset)
    for name in extensions.hidden_fields('allocation'):
        setattr(allocation, name, wtypes.Unset)
    if fields is not None:
        allocation.unset_fields_except(list(fields) + ['links'])
    return allocation


def _node_uuids(allocations):
    """{node id: uuid} for the nodes of a page, in one query."""
    ids = [a.node_id for a in allocations if a.node_id is not None]
    if not ids:
        return {}
    return objects.Node.uuids_by_id(api.request.context, ids)


def _group_uuids(allocations):
    """{group id: uuid} for the groups of a page, in one query (none
    below the extension version that shows them)."""
    ids = [a.group_id for a in allocations if a.group_id is not None]
    if not ids or not extensions.allow_extension('allocation_groups'):
        return {}
    return objects.AllocationGroup.uuids_by_id(api.request.context, ids)


class AllocationCollection(collection.Collection):
    """API representation of a page of allocations."""

    allocations = [Allocation]
    """A list containing allocation objects"""


def _check_fields(fields):
    if fields is None:
        return
    utils.check_allowed_fields(fields)
    too_new = sorted(f for f in fields if f in _VERSIONED_FIELDS
                     and not _VERSIONED_FIELDS[f]())
    if too_new:
        raise exception.NotAcceptable(
            'Field(s) %s are not available in API version %s.'
            % (', '.join(too_new), api.request.version))
    extensions.check_fields('allocation', fields)
    utils.check_for_invalid_fields(fields, _WIRE_FIELDS)


def check_name(name):
    if not utils.is_valid_logical_name(name) or uuidutils.is_uuid_like(
            name):
        raise exception.Invalid(
            "Cannot create allocation with invalid name '%s'" % name)


def get_allocation(ident, rule=None):
    """An allocation by UUID or name, if the caller may see it
    (baremetal:allocation:get) and, when given, apply ``rule`` to it.

    :raises: AllocationNotFound (404) for a missing or hidden allocation,
        InvalidUuidOrName (400), HTTPForbidden (403) when ``rule`` denies.
    """
    return get_allocation_with_node_uuids(ident, rule)[0]


def get_allocation_with_node_uuids(ident, rule=None):
    """get_allocation() and the {node id: UUID} convert_with_links() needs,
    read in one query.

    :returns: (Allocation, {node id: node UUID}).
    """
    return utils.with_json_suffix(_allocation_with_node_uuids, ident,
                                  exception.AllocationNotFound, rule)


def _allocation_with_node_uuids(ident, rule):
    context = api.request.context
    if uuidutils.is_uuid_like(ident):
        criteria = {'uuid': ident}
    elif utils.is_valid_logical_name(ident):
        criteria = {'name': ident}
    else:
        raise exception.InvalidUuidOrName(name=ident)
    allocation, node_uuid = objects.Allocation.get_with_node_uuid(
        context, **criteria)
    access.check_allocation_visible(allocation, ident)
    if rule is not None:
        access.authorize_allocation(rule, allocation)
    return allocation, _node_uuid_map(allocation, node_uuid)


def _node_uuid_map(allocation, node_uuid):
    if allocation.node_id is None or node_uuid is None:
        return {}
    return {allocation.node_id: node_uuid}


def _list(query, resource, node=None):
    """One page of allocations for a normalised query (every filter)."""
    fields = query['fields']
    _check_fields(fields)
    limit = utils.validate_limit(query['limit'])
    sort_dir = utils.validate_sort_dir(query['sort_dir'] or 'asc')
    sort_key = utils.validate_sort_key(query['sort_key'] or 'id', SORT_KEYS)
    filters = {}
    if query.get('state') is not None:
        if query['state'] not in states.ALLOCATION_STATES:
            raise exception.Invalid(
                'Invalid allocation state "%s". Valid states are: %s.'
                % (query['state'], ', '.join(states.ALLOCATION_STATES)))
        filters['state'] = query['state']
    if query.get('resource_class') is not None:
        filters['resource_class'] = query['resource_class']
    if query.get('owner') is not None:
        if not utils.allow_allocation_owner():
            raise exception.NotAcceptable(
                'The "owner" filter requires API version 1.60 or newer.')
        filters['owner'] = query['owner']
    project = access.list_project('allocation', query.get('owner'))
    if project is not None:
        filters['owner'] = project
    if node is not None:
        filters['node_id'] = node.id
    elif query.get('node') is not None:
        filters['node_id'] = utils.get_query_node(query['node']).id
    marker = None
    if query.get('marker') is not None:
        marker = get_allocation(query['marker']).id
    allocations = objects.Allocation.list(
        api.request.context, filters=filters, limit=limit, marker=marker,
        sort_key=sort_key, sort_dir=sort_dir)
    node_uuids = _node_uuids(allocations)
    group_uuids = _group_uuids(allocations)
    page = AllocationCollection()
    page.allocations = [convert_with_links(a, node_uuids, fields,
                                           group_uuids)
                        for a in allocations]
    page.next = collection.next_link(
        resource, {k: v for k, v in query.items()
                   if k not in ('limit', 'marker')}, allocations, limit)
    return page


def _candidate_uuids(idents):
    """Candidate node names or UUIDs -> UUIDs (order kept).

    :raises: InvalidParameterValue (400) naming every unknown node.
    """
    uuids, missing = [], []
    for ident in idents:
        # NOTE: WSME lets null through a list of strings.
        if not isinstance(ident, str):
            raise exception.Invalid('Candidate nodes are node names or '
                                    'UUIDs, not %s.' % json.dumps(ident))
        try:
            node = utils.get_node(ident)
        except (exception.NodeNotFound, exception.InvalidUuidOrName):
            missing.append(ident)
            continue
        if node.uuid not in uuids:
            uuids.append(node.uuid)
    if missing:
        raise exception.InvalidParameterValue(
            err='Nodes cannot be found: %s' % ', '.join(missing))
    return uuids


def _owner_for_caller(owner):
    """The owner of an allocation a project caller creates: its project
    unless it names another one and baremetal:allocation:create_restricted
    allows that; an empty owner names none (system callers keep what they
    give, an empty owner included, as in Ironic).

    :raises: NotAuthorized (403) naming the rule.
    """
    project = access.project_caller()
    if project is None:
        return owner
    if not owner:
        # NOTE: as in Ironic, an empty owner is no owner: the caller's.
        return project
    rule = 'baremetal:allocation:create_restricted'
    if owner != project and not access.allowed(rule, owner=owner):
        raise exception.NotAuthorized(
            'Creating an allocation owned by %s, not by the requesting '
            'project %s, needs the policy rule %s.' % (owner, project, rule))
    return owner


def _check_backfill(node, values):
    """Rules of a backfilled allocation (1.58).

    :raises: Invalid (400) for a node that does not match the request,
        Conflict (409) when it is already allocated.
    """
    if node.allocation_id is not None:
        raise exception.Conflict('Node %s already has an allocation'
                                 % node.uuid)
    if node.instance_uuid and node.instance_uuid != values['uuid']:
        raise exception.NodeAssociated(node=node.uuid,
                                       instance=node.instance_uuid)
    if node.provision_state not in states.BACKFILL_STATES:
        raise exception.Invalid(
            'Cannot create an allocation for node %s in provision state '
            '"%s": backfilling needs one of %s.'
            % (node.uuid, node.provision_state,
               ', '.join(states.BACKFILL_STATES)))
    if values.get('resource_class') and (
            values['resource_class'] != node.resource_class):
        raise exception.Invalid(
            'Cannot create an allocation with resource class "%s" for node '
            '%s with resource class "%s"'
            % (values['resource_class'], node.uuid, node.resource_class))
    traits = matching.parse_traits(values['traits'])
    missing = sorted(set(traits.required) - set(node.traits))
    if missing:
        raise exception.Invalid('Cannot create an allocation with traits '
                                '%s for node %s that lacks them'
                                % (', '.join(missing), node.uuid))
    present = sorted(set(traits.forbidden) & set(node.traits))
    if present:
        raise exception.Invalid('Cannot create an allocation forbidding '
                                'traits %s for node %s that has them'
                                % (', '.join(present), node.uuid))
    for group in traits.any_of:
        if not set(group) & set(node.traits):
            raise exception.Invalid('Cannot create an allocation asking for '
                                    'one of the traits %s for node %s that '
                                    'has none of them'
                                    % (', '.join(group), node.uuid))
    if values['candidate_nodes'] and (
            node.uuid not in values['candidate_nodes']):
        raise exception.Invalid('Candidate nodes must include the node %s '
                                'when backfilling' % node.uuid)
    if values.get('owner') and values['owner'] not in (node.owner,
                                                        node.lessee):
        raise exception.Invalid('Node %s is not owned or leased by %s'
                                % (node.uuid, values['owner']))


def _checked_traits(traits):
    """The ``traits`` of a new allocation, validated, as sent.

    Without the "matching" extension every entry is a trait name, as in
    Ironic; with it, entries may also be trait expressions ("!TRAIT",
    "in:A,B"), and the limit counts every name they hold.

    :raises: InvalidTrait, Invalid (400) naming the offending value.
    """
    traits = traits or []
    maximum = api.request.cfg.api.max_traits
    utils.check_list_length('traits', traits, maximum)
    if not extensions.allow_extension('matching'):
        return [utils.validate_trait(t) for t in traits]
    matching.parse_traits(traits, validate=utils.validate_trait)
    names = sum(len(matching.trait_names(t)) for t in traits)
    if names > maximum:
        raise exception.Invalid(
            'The trait expressions name %d traits, at most %d.'
            % (names, maximum))
    return list(traits)


def _uses_matching(values):
    return bool(values.get('match')) or any(
        matching.is_expression(t) for t in values['traits'])


def _check_not_pinned(values):
    """Refuse the matching language during a rolling upgrade from a
    release whose conductors would ignore it (and pick nodes it rules
    out).  :raises: Invalid (400)."""
    pin = api.request.cfg.pin_release_version
    if not pin or not _uses_matching(values):
        return
    version = release_mappings.object_versions(pin).get('Allocation')
    if versionutils.convert_version_to_tuple(version) < (1, 1):
        raise exception.Invalid(
            'Trait expressions and the match field cannot be used while '
            '[DEFAULT]pin_release_version is %s: the conductors of that '
            'release would ignore them. Retry once the upgrade is over.'
            % pin)


def _values_of(allocation):
    """The validated values of a new allocation's body (a create or an
    explanation): every check that needs no node, in the order of
    Ironic's.

    :returns: (the body as a dict, the values of the new row).
    :raises: Invalid and its kind (400), NotAcceptable (406),
        NotAuthorized (403).
    """
    given = allocation.as_dict()
    return given, new_allocation_values(given)


def new_allocation_values(given):
    """The validated values of a new allocation's fields (``given``,
    those of a POST body, validated by their types): the checks of
    _values_of(), shared with the members of allocation groups.

    :raises: Invalid and its kind (400), NotAcceptable (406),
        NotAuthorized (403).
    """
    extensions.check_fields(
        'allocation', [f for f, v in given.items() if v is not None])
    if given.get('owner') is not None and \
            not utils.allow_allocation_owner():
        raise exception.NotAcceptable(
            'The "owner" field requires API version 1.60 or newer.')
    if given.get('node') is not None and \
            not utils.allow_allocation_backfill():
        raise exception.NotAcceptable(
            'The "node" field requires API version 1.58 or newer.')
    utils.check_list_length('traits', given.get('traits'),
                            api.request.cfg.api.max_traits)
    utils.check_list_length('candidate_nodes',
                            given.get('candidate_nodes'),
                            api.request.cfg.api.max_candidate_nodes)
    values = {
        'uuid': given.get('uuid'),
        'name': given.get('name'),
        'resource_class': given.get('resource_class'),
        'traits': _checked_traits(given.get('traits')),
        'extra': given.get('extra') or {},
        'owner': given.get('owner'),
    }
    if given.get('match') is not None:
        values['match'] = matching.check_match(given['match'])
    _check_not_pinned(values)
    values['owner'] = _owner_for_caller(values['owner'])
    if values['name'] is not None:
        check_name(values['name'])
    utils.check_stored_sizes({'extra': values['extra']})
    # NOTE: nodes hidden from a project caller are "not found" (400).
    values['candidate_nodes'] = _candidate_uuids(
        given.get('candidate_nodes') or [])
    return values


class AllocationPatchType(types.JsonPatchType):
    """One operation of an allocation PATCH."""


types.json_object(AllocationPatchType)


def _patched_values(rpc_allocation, patch):
    """The new name/extra (and lease) of an allocation.

    :raises: Invalid (400), Conflict (409).
    """
    extensions.check_fields('allocation', utils.patched_roots(patch))
    lease_changed, lease_end = leases.lease_of_patch(
        [op for op in patch if op['path'] in LEASE_PATHS])
    patch = [op for op in patch if op['path'] not in LEASE_PATHS]
    for op in patch:
        root = utils.decode_pointer_segment(op['path'].split('/')[1])
        if root not in PATCHABLE:
            allowed = ['/' + p for p in PATCHABLE]
            if extensions.allow_extension('reservations'):
                allowed.extend(LEASE_PATHS)
            raise exception.Invalid(
                'Cannot update %s: only %s may be changed on an '
                'allocation.' % (op['path'], ', '.join(allowed)))
    doc = {'name': rpc_allocation.name,
           'extra': dict(rpc_allocation.extra or {})}
    patched = utils.apply_jsonpatch(doc, patch)
    if patched.get('name') is not None:
        if not isinstance(patched['name'], str):
            raise exception.Invalid('The name of an allocation must be a '
                                    'string.')
        check_name(patched['name'])
    if not isinstance(patched.get('extra') or {}, dict):
        raise exception.Invalid('The extra of an allocation must be an '
                                'object.')
    values = {k: patched.get(k) for k in PATCHABLE}
    utils.check_stored_sizes(values)
    if lease_changed:
        if rpc_allocation.group_id is not None:
            # NOTE: a group's members follow the group's lease and are
            # released together or not at all.
            raise exception.Invalid(
                'Allocation %s was made in an allocation group: it cannot '
                'have a lease of its own (PATCH the group\'s /expires_at or '
                '/ttl).' % rpc_allocation.uuid)
        # NOTE: a deployed node's hold takes no lease: the write itself
        # refuses it (LeaseOnDeployedNode, 409), so a deploy cannot slip
        # in between a check and the write.
        values['expires_at'] = lease_end
    return values


def _gate(method):
    """Allocations exist from 1.52: 404 on reads before, 405 otherwise."""
    if not utils.allow_allocations():
        if method == 'GET':
            raise exception.NotFound()
        pecan.abort(405)


class AllocationsController(rest.RestController):
    """REST controller for allocations."""

    @pecan.expose()
    def _route(self, args, request=None):
        _gate(pecan.request.method)
        # NOTE: /v1/allocations/explain exists only for a request with the
        # extension version; below it the path is an allocation's, where
        # POST is not allowed (405, as for any other segment).
        if (list(args) == ['explain'] and pecan.request.method == 'POST'
                and extensions.allow_extension('matching')):
            return _EXPLAIN._route([], request)
        routing.refuse_post_to_item(self, args, pecan.request)
        return (routing.plain_action(self, args, pecan.request)
                or super()._route(args, request))

    @expose.expose(AllocationCollection, types.uuid_or_name, str, str,
                   types.uuid_or_name, int, str, str, types.listtype, str)
    def get_all(self, node=None, resource_class=None, state=None,
                marker=None, limit=None, sort_key=None, sort_dir=None,
                fields=None, owner=None):
        """List allocations (filters, paging and ``fields``)."""
        query = dict(locals())
        del query['self']
        return _list(query, 'allocations')

    @expose.expose(Allocation, types.uuid_or_name, types.listtype)
    def get_one(self, allocation_ident, fields=None):
        """Show one allocation by UUID or name."""
        _check_fields(fields)
        rpc_allocation, node_uuids = get_allocation_with_node_uuids(
            allocation_ident)
        return convert_with_links(rpc_allocation, node_uuids, fields)

    @expose.expose(Allocation, body=Allocation, status_code=201)
    def post(self, allocation):
        """Create an allocation (or backfill one for a deployed node)."""
        context = api.request.context
        access.authorize('baremetal:allocation:create')
        given, values = _values_of(allocation)
        if given.get('ttl') is not None or given.get('expires_at') is not None:
            if given.get('node') is not None:
                raise exception.Invalid(
                    'A backfilled allocation holds a deployed node, whose '
                    'hold has no lease: ttl and expires_at cannot be used '
                    'when backfilling.')
            values['expires_at'] = leases.lease_end(given.get('ttl'),
                                                    given.get('expires_at'))
        if given.get('node') is not None:
            if values.get('match'):
                raise exception.Invalid(
                    'The match field applies to the search for a node; it '
                    'cannot be used when backfilling a given node.')
            node = utils.get_query_node(given['node'])
            if values['uuid'] is None:
                values['uuid'] = node.instance_uuid or \
                    uuidutils.generate_uuid()
            _check_backfill(node, values)
            if values['resource_class'] is None:
                values['resource_class'] = node.resource_class
            new = objects.Allocation(context, **values)
            # NOTE: 409 at once while a conductor holds the node, as for
            # every node change of this API (no wait for the lock).
            hold_limits = access.hold_limits(values['owner'])
            with notifying(new, 'create', node_uuid=node.uuid):
                new.backfill(node, states.BACKFILL_STATES,
                             limits=hold_limits)
            LOG.info('Allocation %(alloc)s backfilled for node %(node)s',
                     {'alloc': new.uuid, 'node': node.uuid})
            utils.set_location('allocations', new.uuid)
            return convert_with_links(new, {node.id: node.uuid})

        if not values['resource_class']:
            raise exception.Invalid('The resource_class field is mandatory '
                                    'when not backfilling')
        values['uuid'] = values['uuid'] or uuidutils.generate_uuid()
        hold_limits = access.hold_limits(values['owner'])
        # NOTE: 503 only here, before anything is written.  A conductor
        # seen alive a moment ago will do: should it be gone, the live ones
        # take its allocations over.
        conductor = api.request.rpcapi.get_random_conductor(context,
                                                            recent=True)
        new = objects.Allocation(context, state=states.ALLOCATING,
                                 conductor_affinity=conductor.id, **values)
        with notifying(new, 'create') as notified:
            new.create(limits=hold_limits)
            LOG.info('Allocation %(alloc)s created for conductor %(host)s',
                     {'alloc': new.uuid, 'host': conductor.hostname})
            utils.set_location('allocations', new.uuid)
            node_uuids = {}
            if api.request.rpcapi.create_allocation(
                    context, new.id, conductor.hostname,
                    wait=api.request.cfg.api.allocation_create_wait):
                # NOTE: the conductor finished within [api]
                # allocation_create_wait: answer with the end state.
                try:
                    new, node_uuid = objects.Allocation.get_with_node_uuid(
                        context, id=new.id)
                    node_uuids = _node_uuid_map(new, node_uuid)
                    notified.allocation, notified.node_uuid = new, node_uuid
                except exception.AllocationNotFound:
                    # NOTE: deleted meanwhile; the creation did happen.
                    pass
        return convert_with_links(new, node_uuids)

    @expose.expose(Allocation, types.uuid_or_name,
                   body=[AllocationPatchType])
    def patch(self, allocation_ident, patch=None):
        """Change the name or extra of an allocation (1.57+), or its lease
        (extension 1.2)."""
        if not utils.allow_allocation_update():
            pecan.abort(405)
        if not patch:
            raise exception.Invalid('A JSON patch (a non-empty list of '
                                    'operations) is required.')
        rpc_allocation, node_uuids = get_allocation_with_node_uuids(
            allocation_ident, 'baremetal:allocation:update')
        for name, value in _patched_values(rpc_allocation, patch).items():
            if name == 'expires_at' or rpc_allocation[name] != value:
                rpc_allocation[name] = value
        with notifying(rpc_allocation, 'update',
                       node_uuid=node_uuids.get(rpc_allocation.node_id)) \
                as notified:
            with _allocation_gone(allocation_ident):
                rpc_allocation.save()
            if (rpc_allocation.node_id is not None
                    and rpc_allocation.node_id not in node_uuids):
                # NOTE: the conductor reserved a node since the read.
                node_uuids = _node_uuids([rpc_allocation])
            notified.node_uuid = node_uuids.get(rpc_allocation.node_id)
        return convert_with_links(rpc_allocation, node_uuids)

    @expose.expose(None, types.uuid_or_name, status_code=204)
    def delete(self, allocation_ident):
        """Delete an allocation, freeing its node (through a conductor)."""
        rpc_allocation, node_uuids = get_allocation_with_node_uuids(
            allocation_ident, 'baremetal:allocation:delete')
        with notifying(rpc_allocation, 'delete',
                       node_uuid=node_uuids.get(rpc_allocation.node_id)):
            with _allocation_gone(allocation_ident):
                _destroy(rpc_allocation)


class _Notified:
    """What the end notification of a change reports: the allocation
    (and its node) as the change left them."""

    def __init__(self, allocation, node_uuid):
        self.allocation = allocation
        self.node_uuid = node_uuid


@contextlib.contextmanager
def notifying(allocation, action, node_uuid=None):
    """Around a change of an allocation, Ironic's notifications of the
    API: baremetal.allocation.<action>.start before, .end after, .error
    (then the error goes on) when it fails."""
    context = api.request.context
    allocation_obj.notify(context, allocation, 'allocation', action,
                          'start', notifications.API_SERVICE,
                          node_uuid=node_uuid)
    notified = _Notified(allocation, node_uuid)
    try:
        yield notified
    except Exception:
        allocation_obj.notify(context, allocation, 'allocation', action,
                              'error', notifications.API_SERVICE,
                              node_uuid=node_uuid)
        raise
    allocation_obj.notify(context, notified.allocation, 'allocation', action,
                          'end', notifications.API_SERVICE,
                          node_uuid=notified.node_uuid)


@contextlib.contextmanager
def _allocation_gone(ident):
    """Around a change of an allocation read before: one deleted
    meanwhile is not found by what the client named it by (``ident``),
    never by the row id the database and the conductor know it by."""
    try:
        yield
    except exception.AllocationNotFound:
        raise exception.AllocationNotFound(allocation=ident) from None


def _destroy(rpc_allocation):
    context = api.request.context
    # NOTE: a conductor dead for less than [conductor]heartbeat_timeout is
    # still on the list of live ones: the route asks the next one when the
    # first does not serve the call (conductor/rpcapi.py).
    route = api.request.rpcapi.route_to_any(context)
    api.request.rpcapi.destroy_allocation(context, rpc_allocation.id,
                                          route)


class AllocationExplainController(rest.RestController):
    """POST /v1/allocations/explain (extension "matching"): the funnel
    of a new allocation's body, writing nothing."""

    @expose.expose(types.jsontype, int, body=Allocation)
    def post(self, examples=None, allocation=None):
        """How many nodes match, some of their UUIDs, and how many each
        constraint removes, over the nodes the caller may see."""
        context = api.request.context
        access.authorize('baremetal:allocation:explain')
        if examples is None:
            examples = EXPLAIN_EXAMPLES
        if not 0 <= examples <= MAX_EXPLAIN_EXAMPLES:
            raise exception.Invalid(
                'Invalid examples %s: from 0 to %d.'
                % (examples, MAX_EXPLAIN_EXAMPLES))
        if allocation is None:
            raise exception.Invalid('An allocation body is required.')
        given, values = _values_of(allocation)
        if given.get('node') is not None:
            raise exception.Invalid(
                'An explanation describes the search for a node; it cannot '
                'be asked for a backfill (node).')
        if not values['resource_class']:
            raise exception.Invalid('The resource_class field is mandatory '
                                    'when not backfilling')
        # NOTE: a project caller counts the nodes GET /v1/nodes shows it.
        project = access.list_project('node')
        criteria = matching.criteria(
            values['resource_class'], values['traits'],
            values['candidate_nodes'], values['owner'], values.get('match'))
        # NOTE: the request keeps its slot: the funnel is read from the
        # tallies, and classifying them is work for this interpreter.
        funnel = objects.Allocation.explain(context, criteria, examples,
                                            project)
        funnel['project'] = project
        funnel['summary'] = matching.funnel_line(funnel)
        return funnel


_EXPLAIN = AllocationExplainController()


def _node_to_read_from(node_ident):
    """The node whose allocation is read, as Ironic finds it: Ironic
    reads it as the allocation list filtered by that node, where a node
    that does not exist is a 400 (clients such as ironic-tempest-plugin
    rely on that answer); a node hidden from the caller stays a 404.

    :raises: NodeNotFound (400 or 404).
    """
    try:
        return utils.get_node(node_ident)
    except exception.NodeNotFound as exc:
        try:
            utils.find_node_unchecked(node_ident)
        except exception.NodeNotFound:
            exc.code = 400
        raise


class NodeAllocationController(rest.RestController):
    """/v1/nodes/{node}/allocation: the allocation of one node."""

    def __init__(self, node_ident):
        super().__init__()
        self.node_ident = node_ident

    @pecan.expose()
    def _route(self, args, request=None):
        _gate(pecan.request.method)
        return super()._route(args, request)

    def _allocation(self, rule, find_node=utils.get_node):
        """The node and its allocation; ``rule`` applied to the latter.

        NOTE: a node hidden from the caller is a 404; an allocation of a
        node the caller sees but belonging to another project is a 403.
        """
        node = find_node(self.node_ident)
        if node.allocation_id is None:
            raise exception.AllocationNotFound(
                allocation='of node %s' % self.node_ident)
        rpc_allocation = objects.Allocation.get_by_id(api.request.context,
                                                      node.allocation_id)
        if rpc_allocation.kind != 'allocation':
            # NOTE: a node held by a reservation (extension 1.2) has no
            # allocation for Ironic's API, only an instance.
            raise exception.AllocationNotFound(
                allocation='of node %s' % self.node_ident)
        access.authorize_allocation(rule, rpc_allocation)
        return node, rpc_allocation

    @expose.expose(Allocation, types.listtype)
    def get_all(self, fields=None):
        """Show the allocation of the node."""
        _check_fields(fields)
        node, rpc_allocation = self._allocation(
            'baremetal:allocation:get', find_node=_node_to_read_from)
        return convert_with_links(rpc_allocation, {node.id: node.uuid},
                                  fields)

    @expose.expose(None, status_code=204)
    def delete(self):
        """Delete the allocation of the node."""
        node, rpc_allocation = self._allocation(
            'baremetal:allocation:delete')
        with notifying(rpc_allocation, 'delete', node_uuid=node.uuid):
            with _allocation_gone('of node %s' % self.node_ident):
                _destroy(rpc_allocation)
