"""Nodes: /v1/nodes, /v1/nodes/detail, /v1/nodes/{node} and sub-resources.

Node creation writes through objects (no conductor needed); updates,
deletion, trait changes and actions go to the node's conductor by RPC.
"""

import contextlib
import datetime
import re

from oslo_log import log
from oslo_utils import strutils
from oslo_utils import uuidutils
from oslo_utils import versionutils
import pecan
from pecan import rest
import webob.exc as webob_exc
import wsme
from wsme import types as wtypes

from ironic_alloc import api
from ironic_alloc.api.controllers import base
from ironic_alloc.api.controllers import link
from ironic_alloc.api.controllers import routing
from ironic_alloc.api.controllers.v1 import access
from ironic_alloc.api.controllers.v1 import allocation
from ironic_alloc.api.controllers.v1 import collection
from ironic_alloc.api.controllers.v1 import extensions
from ironic_alloc.api.controllers.v1 import node_children
from ironic_alloc.api.controllers.v1 import node_states
from ironic_alloc.api.controllers.v1 import node_traits
from ironic_alloc.api.controllers.v1 import types
from ironic_alloc.api.controllers.v1 import unsupported
from ironic_alloc.api.controllers.v1 import utils
from ironic_alloc.api import expose
from ironic_alloc.common import exception
from ironic_alloc.common.policies import node as node_policies
from ironic_alloc.common import release_mappings
from ironic_alloc.common import states
from ironic_alloc.conf import CONF
from ironic_alloc import objects
from ironic_alloc.objects import node as node_obj

LOG = log.getLogger(__name__)

DESCRIPTION_MAX_LENGTH = 4096
INSTANCE_NAME_MAX_LENGTH = 255

# Fields a plain (non-detailed) node list shows.
DEFAULT_RETURN_FIELDS = ['instance_uuid', 'maintenance', 'power_state',
                         'provision_state', 'uuid', 'name']

# Columns a node list can be sorted by.
SORT_KEYS = frozenset([
    'id', 'uuid', 'name', 'driver', 'resource_class', 'instance_uuid',
    'chassis_uuid', 'provision_state', 'target_provision_state',
    'provision_updated_at', 'power_state', 'target_power_state',
    'maintenance', 'fault', 'reservation', 'conductor_group', 'owner',
    'lessee', 'protected', 'retired', 'automated_clean', 'console_enabled',
    'boot_mode', 'secure_boot', 'inspection_started_at',
    'inspection_finished_at', 'created_at', 'updated_at',
])

_CONDUCTOR_GROUP_RE = re.compile(r'^[a-zA-Z0-9_\-\.]*$')

_str255 = types.StrictStringType(max_length=255)


class Node(base.APIBase):
    """API representation of a bare metal node (Ironic's wire shape)."""

    uuid = types.uuid
    """Unique UUID for this node"""

    name = wsme.wsattr(_str255)
    """The logical name for this node"""

    driver = wsme.wsattr(_str255, mandatory=True)
    """The driver (hardware type) of this node"""

    driver_info = types.dicttype
    """This node's driver configuration"""

    driver_internal_info = wsme.wsattr(types.dicttype, readonly=True)
    """This node's internal driver information"""

    extra = types.dicttype
    """This node's meta data"""

    instance_info = types.dicttype
    """This node's instance info"""

    instance_uuid = types.uuid
    """The UUID of the instance deployed on this node"""

    chassis_uuid = types.uuid
    """The UUID of the chassis the node belongs to"""

    properties = types.dicttype
    """The physical characteristics of this node"""

    provision_state = wsme.wsattr(str, readonly=True)
    """Represent the current provision state of the node"""

    target_provision_state = wsme.wsattr(str, readonly=True)
    """The user modified desired provision state of the node"""

    provision_updated_at = wsme.wsattr(datetime.datetime, readonly=True)
    """The UTC date and time of the last provision state change"""

    power_state = wsme.wsattr(str, readonly=True)
    """Represent the current (not transition) power state of the node"""

    target_power_state = wsme.wsattr(str, readonly=True)
    """The user modified desired power state of the node"""

    maintenance = types.boolean
    """Indicates whether the node is in maintenance mode"""

    maintenance_reason = wsme.wsattr(str, readonly=True)
    """Indicates reason for putting a node in maintenance mode"""

    fault = wsme.wsattr(str, readonly=True)
    """Indicates the active fault of a node"""

    last_error = wsme.wsattr(str, readonly=True)
    """Any error from the most recent transaction that started but failed"""

    reservation = wsme.wsattr(str, readonly=True)
    """The hostname of the conductor that holds an exclusive lock on it"""

    console_enabled = wsme.wsattr(types.boolean, readonly=True)
    """Indicates whether the console access is enabled or disabled"""

    clean_step = wsme.wsattr(types.dicttype, readonly=True)
    """The current clean step"""

    deploy_step = wsme.wsattr(types.dicttype, readonly=True)
    """The current deploy step"""

    raid_config = wsme.wsattr(types.dicttype, readonly=True)
    """Represents the current RAID configuration of the node"""

    target_raid_config = wsme.wsattr(types.dicttype, readonly=True)
    """The user modified RAID configuration of the node"""

    inspection_started_at = wsme.wsattr(datetime.datetime, readonly=True)
    """The UTC date and time when hardware inspection was started"""

    inspection_finished_at = wsme.wsattr(datetime.datetime, readonly=True)
    """The UTC date and time when hardware inspection finished"""

    resource_class = wsme.wsattr(types.StrictStringType(max_length=80))
    """The resource class of the node, matched by allocations"""

    bios_interface = wsme.wsattr(_str255)
    boot_interface = wsme.wsattr(_str255)
    console_interface = wsme.wsattr(_str255)
    deploy_interface = wsme.wsattr(_str255)
    firmware_interface = wsme.wsattr(_str255)
    inspect_interface = wsme.wsattr(_str255)
    management_interface = wsme.wsattr(_str255)
    network_interface = wsme.wsattr(_str255)
    power_interface = wsme.wsattr(_str255)
    raid_interface = wsme.wsattr(_str255)
    rescue_interface = wsme.wsattr(_str255)
    storage_interface = wsme.wsattr(_str255)
    vendor_interface = wsme.wsattr(_str255)
    """Hardware interface names: stored and shown, not acted upon"""

    traits = wsme.wsattr([str], readonly=True)
    """The traits of this node (changed through /traits)"""

    conductor_group = wsme.wsattr(_str255)
    """The conductor group to manage this node"""

    conductor = wsme.wsattr(str, readonly=True)
    """The conductor handling this node (1.49+)"""

    allocation_uuid = wsme.wsattr(types.uuid, readonly=True)
    """The UUID of the node's allocation (1.52+)"""

    automated_clean = types.boolean
    """Enable or disable automated cleaning"""

    protected = types.boolean
    """Whether the node is protected from undeploying, rebuilding and
    deletion"""

    protected_reason = wsme.wsattr(str)
    """Why the node is protected"""

    owner = wsme.wsattr(_str255)
    """The project owning the node"""

    lessee = wsme.wsattr(_str255)
    """The project leasing the node"""

    description = wsme.wsattr(str)
    """A free-form description of the node"""

    retired = types.boolean
    """Whether the node is retired"""

    retired_reason = wsme.wsattr(str)
    """Why the node is retired"""

    network_data = types.dicttype
    """Static network configuration of the node"""

    boot_mode = wsme.wsattr(str, readonly=True)
    """The boot mode of the node"""

    secure_boot = wsme.wsattr(types.boolean, readonly=True)
    """Whether secure boot is on"""

    shard = wsme.wsattr(_str255)
    """The shard of the node, a label clients split nodes by (1.82+)"""

    parent_node = wsme.wsattr(types.StrictStringType(max_length=36))
    """The UUID of the node's parent (1.83+; a name is accepted and
    stored as the UUID it names)"""

    disable_power_off = types.boolean
    """Whether powering the node off is refused (1.95+)"""

    instance_name = wsme.wsattr(_str255)
    """The name of the instance deployed on the node (1.104+); follows
    ``instance_info.display_name`` while unset"""

    health = wsme.wsattr(str, readonly=True)
    """The health reported by the node's BMC (1.109+): none here"""

    service_step = wsme.wsattr(types.dicttype, readonly=True)
    """The service step running (1.87): always empty, no node is serviced
    here"""

    links = wsme.wsattr([link.Link], readonly=True)
    ports = wsme.wsattr([link.Link], readonly=True)
    portgroups = wsme.wsattr([link.Link], readonly=True)
    states = wsme.wsattr([link.Link], readonly=True)
    volume = wsme.wsattr([link.Link], readonly=True)
    """Links to the node and its sub-resources"""


types.json_object(Node)

# Wire attributes that are links, not fields of the node.
LINK_FIELDS = ('links', 'ports', 'portgroups', 'states', 'volume')

# Wire fields computed by the API, not stored with the node.
API_ONLY_FIELDS = ('conductor', 'allocation_uuid', 'service_step')


def node_fields():
    """Names accepted in ``fields`` (before version gates)."""
    return {a.key for a in wtypes.list_attributes(Node)} - set(LINK_FIELDS)


def _object_to_wire_dict(rpc_node):
    """The stored fields of a node under their wire names."""
    values = {k: v for k, v in rpc_node.as_dict().items()
              if k not in ('id', 'interfaces', 'conductor_affinity',
                           'allocation_id')}
    defaults = node_obj.DEFAULT_INTERFACES.get(rpc_node.driver, {})
    for name in node_obj.INTERFACE_FIELDS:
        values[name] = rpc_node.get_interface(name) or defaults.get(name)
    return values


# API-only fields: name -> version gate.
_API_ONLY_GATES = {
    'conductor': utils.allow_expose_conductors,
    'allocation_uuid': utils.allow_allocations,
    'service_step': utils.allow_service_step,
}


def _shows(fields, name):
    return _API_ONLY_GATES[name]() and (fields is None or name in fields)


def preload(nodes, fields):
    """What the API-only fields of a page of nodes need, one query each.

    NOTE: this is the one place for API-only fields, so a page costs a
    constant number of queries whatever its size.
    """
    context = api.request.context
    return {
        'hosts': (utils.conductor_hosts_for(nodes)
                  if _shows(fields, 'conductor') else {}),
        'allocation_uuids': (objects.Allocation.uuids_by_id(
            context, [n.allocation_id for n in nodes])
            if _shows(fields, 'allocation_uuid') else {}),
    }


def api_only_fields(rpc_node, fields, preloaded):
    """Wire fields computed by the API rather than stored with the node.

    :param fields: the requested ``fields`` or None for all.
    :param preloaded: the result of preload() for the page.
    """
    values = {}
    if _shows(fields, 'conductor'):
        values['conductor'] = preloaded['hosts'].get(rpc_node.uuid)
    if _shows(fields, 'allocation_uuid'):
        values['allocation_uuid'] = preloaded['allocation_uuids'].get(
            rpc_node.allocation_id)
    if _shows(fields, 'service_step'):
        # NOTE: the service verb is refused, so no step ever runs.
        values['service_step'] = {}
    return values


def convert_with_links(rpc_node, fields=None, preloaded=None, masks=None):
    """The wire form of a node for the request version and ``fields``.

    :param masks: an access.NodeMasks shared by a page of nodes.
    """
    if preloaded is None:
        preloaded = preload([rpc_node], fields)
    values = _object_to_wire_dict(rpc_node)
    (masks or access.NodeMasks()).apply(values, rpc_node, fields)
    values.update(api_only_fields(rpc_node, fields, preloaded))
    values['provision_state'] = utils.shown_provision_state(
        values['provision_state'])
    node = Node()
    for name, value in values.items():
        setattr(node, name, value)
    url = api.request.public_url
    node.links = link.make_links('nodes', node.uuid, url)
    if fields is None:
        node.ports = link.make_links('nodes', node.uuid + '/ports', url)
        if utils.allow_links_node_states():
            node.states = link.make_links('nodes', node.uuid + '/states',
                                          url)
        if utils.allow_portgroups_subcontrollers():
            node.portgroups = link.make_links(
                'nodes', node.uuid + '/portgroups', url)
        if utils.allow_volume():
            node.volume = link.make_links('nodes', node.uuid + '/volume',
                                          url)
    for name in utils.disallowed_fields():
        setattr(node, name, wtypes.Unset)
    for name in extensions.hidden_fields('node'):
        setattr(node, name, wtypes.Unset)
    if fields is not None:
        node.unset_fields_except(list(fields) + ['links'])
    return node


class NodePatchType(types.JsonPatchType):
    """One operation of a node PATCH."""

    @staticmethod
    def internal_attrs():
        return types.JsonPatchType.internal_attrs() + [
            '/console_enabled', '/last_error', '/power_state',
            '/provision_state', '/reservation', '/target_power_state',
            '/target_provision_state', '/provision_updated_at',
            '/maintenance_reason', '/driver_internal_info',
            '/inspection_finished_at', '/inspection_started_at',
            '/clean_step', '/deploy_step', '/raid_config',
            '/target_raid_config', '/fault', '/conductor', '/boot_mode',
            '/secure_boot', '/health', '/ports', '/portgroups', '/states',
            '/volume',
        ] + ['/%s' % f for f in API_ONLY_FIELDS]

    @staticmethod
    def non_removable_attrs():
        return {'/driver'}


types.json_object(NodePatchType)


class NodeCollection(collection.Collection):
    """API representation of a page of nodes."""

    nodes = [Node]
    """A list containing node objects"""


def check_name(name, verb='create node'):
    """:raises: NotAcceptable before 1.5, Invalid for a bad/reserved name."""
    if not utils.allow_node_logical_names():
        raise exception.NotAcceptable(
            'Node names require API version 1.5 or newer.')
    if not utils.is_valid_node_name(name):
        raise exception.Invalid("Cannot %s with invalid name '%s'"
                                % (verb, name))
    reserved = sorted(NodesController._custom_actions)
    if name in reserved:
        raise exception.Invalid(
            'The word "%s" is reserved and can not be used as a node name. '
            'Reserved words are: %s.' % (name, ', '.join(reserved)))


def _check_values(values):
    """Rules shared by create and update on wire-named values."""
    if 'driver' in values and not values['driver']:
        raise exception.Invalid('The driver of a node cannot be empty.')
    if values.get('chassis_uuid'):
        with chassis_named_by_node():
            objects.Chassis.get_by_uuid(api.request.context,
                                        values['chassis_uuid'])
    group = values.get('conductor_group')
    if group and not _CONDUCTOR_GROUP_RE.match(group):
        raise exception.Invalid(
            'Invalid conductor_group "%s": it can only contain alphanumeric '
            'characters, dashes, periods and underscores.' % group)
    if 'instance_name' in values and values['instance_name'] == '':
        raise exception.Invalid('The instance_name of a node cannot be an '
                                'empty string.')
    description = values.get('description')
    if description and len(description) > DESCRIPTION_MAX_LENGTH:
        raise exception.Invalid('Node description cannot exceed %d '
                                'characters.' % DESCRIPTION_MAX_LENGTH)
    utils.check_stored_sizes(values)


@contextlib.contextmanager
def chassis_named_by_node():
    """Around a node write or check naming a chassis: a chassis that does
    not exist (or was deleted meanwhile) is a 400, as in Ironic: the
    request is about the node, which exists."""
    try:
        yield
    except exception.ChassisNotFound as e:
        e.code = 400
        raise


def _to_object_values(values):
    """Wire-named values -> Node object fields (interfaces folded)."""
    result = {}
    interfaces = {}
    for name, value in values.items():
        if name in node_obj.INTERFACE_FIELDS:
            if value is not None:
                interfaces[name] = value
        elif name not in LINK_FIELDS and name not in API_ONLY_FIELDS:
            result[name] = value
    if 'conductor_group' in result:
        result['conductor_group'] = (result['conductor_group'] or '').lower()
    result['interfaces'] = interfaces
    return result


# Sub-resources of a node: name -> (version gate or None, controller
# class taking the node identifier).  Allocation routes add to this dict.
SUBRESOURCES = {
    'allocation': (None, allocation.NodeAllocationController),
    'states': (None, node_states.NodeStatesController),
    'maintenance': (None, node_states.NodeMaintenanceController),
    'traits': (utils.allow_traits, node_traits.NodeTraitsController),
    'children': (utils.allow_parent_nodes,
                 node_children.NodeChildrenController),
    'ports': (None, unsupported.NodePortsController),
    'portgroups': (utils.allow_portgroups_subcontrollers,
                   unsupported.NodePortgroupsController),
    'vifs': (utils.allow_vifs_subcontroller,
             unsupported.NodeVifsController),
    'volume': (utils.allow_volume, unsupported.NodeVolumeController),
}
for _name, _feature in unsupported.NODE_FEATURES.items():
    SUBRESOURCES[_name] = (None, unsupported.feature_controller(_feature))


def _refuse_traits_before_1_37():
    """Ironic's answers about node traits before API 1.37: reading them
    is not acceptable (406), setting them not allowed (405); removing one
    falls through to 404.

    :raises: NotAcceptable, HTTPMethodNotAllowed.
    """
    method = pecan.request.method
    message = ('The traits of nodes need API version 1.37 or newer; '
               'this request has %s.' % api.request.version)
    if method == 'GET':
        raise exception.NotAcceptable(message)
    if method in ('PUT', 'POST'):
        raise webob_exc.HTTPMethodNotAllowed(detail=message)


class NodesController(rest.RestController):
    """REST controller for nodes; with ``chassis_uuid``, the list of the
    nodes of that chassis (/v1/chassis/{uuid}/nodes[/detail]): the node
    list's filters, paging and rules, cut down to one chassis."""

    def __init__(self, chassis_uuid=None):
        super().__init__()
        self.chassis_uuid = chassis_uuid

    _custom_actions = {
        'detail': ['GET'],
        'validate': ['GET'],
    }

    @pecan.expose()
    def _route(self, args, request=None):
        if self.chassis_uuid is not None:
            self._check_chassis_route(args)
        routing.refuse_post_to_item(self, args, pecan.request)
        return super()._route(args, request)

    @staticmethod
    def _check_chassis_route(args):
        """Under a chassis, nodes are listed only, as in Ironic (which
        answers 400 for anything else there).

        :raises: Invalid (400).
        """
        remainder = [a for a in args if a]
        if (pecan.request.method not in ('GET', 'HEAD')
                or remainder not in ([], ['detail'])):
            raise exception.Invalid(
                'The nodes of a chassis are only listed here (GET '
                '/v1/chassis/{chassis_uuid}/nodes or /nodes/detail); nodes '
                'are shown and changed under /v1/nodes.')

    @pecan.expose()
    def _lookup(self, ident, *remainder):
        if not remainder:
            return
        gate, controller = SUBRESOURCES.get(remainder[0], (None, None))
        if controller is None:
            return
        if gate is not None and not gate():
            if remainder[0] == 'traits':
                _refuse_traits_before_1_37()
            raise exception.NotFound(
                'The resource %s of nodes is not available in API version '
                '%s.' % (remainder[0], api.request.version))
        return controller(ident), remainder[1:]

    # Reads

    def _get_nodes_collection(self, query, resource, detail):
        """One page of nodes for a normalised list query.

        :param query: dict of every query argument (None when absent).
        :param resource: 'nodes' or 'nodes/detail' (for ``next``).
        :param detail: whether all fields are shown by default.
        """
        fields = query['fields']
        utils.check_allowed_fields(fields)
        extensions.check_fields('node', fields)
        utils.check_for_invalid_fields(fields, node_fields())
        if fields is None and not detail:
            fields = DEFAULT_RETURN_FIELDS
        limit = utils.validate_limit(query['limit'])
        sort_dir = utils.validate_sort_dir(query['sort_dir'] or 'asc')
        sort_key = utils.validate_sort_key(query['sort_key'] or 'id',
                                           SORT_KEYS)
        utils.check_fields_exist_in_version([sort_key])
        extensions.check_fields('node', [sort_key])
        marker = None
        if query['marker'] is not None:
            marker = utils.get_query_node(query['marker']).id
        if query['chassis_uuid'] is not None:
            # NOTE: an unknown chassis is a 404, as in Ironic, rather than
            # an empty list.
            objects.Chassis.get_by_uuid(api.request.context,
                                        query['chassis_uuid'])
        filters = _list_filters(query)
        # NOTE: as in Ironic, a caller without list_all may only ask for
        # its own project (another one is a 403), and an empty ``project``
        # asks for nothing more than the caller's view.
        project = access.list_project('node', query['project'] or None)
        if project is not None:
            # NOTE: a project sees the nodes it owns or leases.
            filters['project'] = project
        host = filters.pop('conductor', None)
        if host is None:
            nodes = objects.Node.list(api.request.context, filters=filters,
                                      limit=limit, marker=marker,
                                      sort_key=sort_key, sort_dir=sort_dir)
        else:
            nodes = _nodes_of_conductor(host, filters, limit, marker,
                                        sort_key, sort_dir)
        preloaded = preload(nodes, fields)
        masks = access.NodeMasks(nodes, fields)
        page = NodeCollection()
        page.nodes = [convert_with_links(n, fields, preloaded, masks)
                      for n in nodes]
        # NOTE: under /v1/chassis/{uuid}/nodes the chassis is in the path.
        in_path = ('chassis_uuid',) if self.chassis_uuid else ()
        page.next = collection.next_link(
            resource, {k: v for k, v in query.items()
                       if k not in ('limit', 'marker') + in_path},
            nodes, limit)
        return page

    def _resource(self, name):
        """The path of a node list under /v1, for its ``next`` link."""
        if self.chassis_uuid is None:
            return name
        return 'chassis/%s/%s' % (self.chassis_uuid, name)

    @expose.expose(NodeCollection, types.uuid, types.boolean,
                   types.boolean, types.boolean, str, types.uuid, int, str,
                   str, str, types.listtype, str, str, str, types.boolean,
                   str, str, str, types.uuid, types.listtype, types.boolean,
                   str, types.boolean, str, str, str)
    def get_all(self, instance_uuid=None, associated=None, maintenance=None,
                retired=None, provision_state=None, marker=None,
                limit=None, sort_key=None, sort_dir=None, driver=None,
                fields=None, resource_class=None, fault=None,
                conductor_group=None, detail=None, owner=None, lessee=None,
                description_contains=None, chassis_uuid=None, shard=None,
                sharded=None, parent_node=None, include_children=None,
                instance_name=None, conductor=None, project=None):
        """List nodes (Ironic's filters, paging and ``fields``)."""
        query = dict(locals())
        del query['self']
        if self.chassis_uuid is not None:
            query['chassis_uuid'] = self.chassis_uuid
        utils.check_detail_query(detail, fields)
        return self._get_nodes_collection(query, self._resource('nodes'),
                                          bool(detail))

    @expose.expose(NodeCollection, types.uuid, types.boolean,
                   types.boolean, types.boolean, str, types.uuid, int, str,
                   str, str, str, str, str, str, str, str, types.uuid,
                   types.listtype, types.boolean, str, types.boolean, str,
                   str, str)
    def detail(self, instance_uuid=None, associated=None, maintenance=None,
               retired=None, provision_state=None, marker=None, limit=None,
               sort_key=None, sort_dir=None, driver=None,
               resource_class=None, fault=None, conductor_group=None,
               owner=None, lessee=None, description_contains=None,
               chassis_uuid=None, shard=None, sharded=None,
               parent_node=None, include_children=None, instance_name=None,
               conductor=None, project=None):
        """List nodes with all their fields."""
        # NOTE: Pecan routes GET /v1/nodes/<ident>/detail here as well
        # (the identifier as the first argument); as in Ironic, only the
        # collection has a detail.
        if api.request.path.rstrip('/').split('/')[-2] != 'nodes':
            raise exception.NotFound()
        query = dict(locals(), fields=None, detail=None)
        del query['self']
        if self.chassis_uuid is not None:
            query['chassis_uuid'] = self.chassis_uuid
        return self._get_nodes_collection(
            query, self._resource('nodes/detail'), True)

    @expose.expose(Node, types.uuid_or_name, types.listtype)
    def get_one(self, node_ident, fields=None):
        """Show one node.

        :param node_ident: UUID or logical name of a node.
        :param fields: the fields to show, or all.
        """
        utils.check_allowed_fields(fields)
        extensions.check_fields('node', fields)
        utils.check_for_invalid_fields(fields, node_fields())
        return convert_with_links(utils.get_node(node_ident), fields)

    @expose.expose(wtypes.DictType(str, types.jsontype), types.uuid_or_name,
                   types.uuid)
    def validate(self, node=None, node_uuid=None):
        """Validate a node's interfaces: all pass (no hardware here).

        Reached as /v1/nodes/{node}/validate or /v1/nodes/validate?node=.
        """
        ident = node_uuid or node
        if ident is None:
            raise exception.MissingArgument(arg='node')
        utils.get_node(ident, 'baremetal:node:validate')
        return {name.replace('_interface', ''): {'result': True}
                for name in node_obj.INTERFACE_FIELDS
                if name != 'firmware_interface'
                or utils.allow_firmware_interface()}

    # Writes

    @expose.expose(Node, body=Node, status_code=201)
    def post(self, node):
        """Create a node (in 'enroll' at 1.11+, 'available' before)."""
        given = node.as_dict()
        owner = _owner_of_new_node(given.get('owner'))
        # NOTE: an empty conductor_group is the default, as in Ironic.
        set_fields = [f for f, v in given.items() if v is not None and
                      not (f == 'conductor_group' and v == '')]
        utils.reject_fields_in_newer_versions(set_fields)
        extensions.check_fields('node', set_fields)
        if owner is not None:
            given['owner'] = owner
        if 'protected' in given or 'protected_reason' in given:
            raise exception.Invalid(
                'Cannot specify protected or protected_reason on node '
                'creation. These fields can only be set for active nodes')
        if given.get('name') is not None:
            check_name(given['name'])
        _check_values(given)
        # NOTE: an empty string names no node: a 400 like any other.
        if given.get('parent_node') is not None:
            given['parent_node'] = _parent_uuid(given['parent_node'],
                                                given.get('owner'))
        values = _to_object_values(given)
        values.setdefault('uuid', uuidutils.generate_uuid())
        for name in ('properties', 'extra', 'driver_info', 'instance_info',
                     'driver_internal_info'):
            if values.get(name) is None:
                values[name] = {}
        values.update(provision_state=utils.initial_node_provision_state(),
                      power_state=None, traits=[])
        values.setdefault('conductor_group', '')
        for name in ('maintenance', 'retired', 'protected',
                     'console_enabled', 'disable_power_off'):
            values[name] = bool(values.get(name))
        new_node = objects.Node(api.request.context, **values)
        with node_states.notifying(new_node, 'create'), \
                chassis_named_by_node():
            new_node.create()
        LOG.info('Node %s created', new_node.uuid)
        utils.set_location('nodes', new_node.uuid)
        return convert_with_links(new_node)

    @expose.expose(Node, types.uuid_or_name, types.boolean,
                   body=[NodePatchType])
    def patch(self, node_ident, reset_interfaces=None, patch=None):
        """Update a node with an RFC 6902 JSON patch (through RPC)."""
        if not patch:
            raise exception.Invalid('A JSON patch (a non-empty list of '
                                    'operations) is required.')
        _check_patch(patch, reset_interfaces)
        _check_not_pinned(utils.patched_roots(patch))
        rules = _patch_rules(patch)
        rpc_node = utils.get_node(node_ident, rules[0])
        for rule in rules[1:]:
            access.authorize_node(rule, rpc_node)
        if 'owner' in utils.patched_roots(patch):
            _check_owner_change(rpc_node)
        for name in utils.get_patch_values(patch, '/name'):
            if name is not None:
                check_name(name, 'change name of node %s to' % node_ident)
        doc = _object_to_wire_dict(rpc_node)
        view, hidden = access.patchable_node(doc)
        patched = utils.apply_jsonpatch(view, patch)
        access.unmask_patched(patched, hidden)
        changed = _validated_changes(doc, patched)
        _check_values(changed)
        if changed.get('parent_node') is not None:
            changed['parent_node'] = _parent_uuid(changed['parent_node'],
                                                  rpc_node.owner)
            if changed['parent_node'] == rpc_node.uuid:
                raise exception.NodeParentInvalid(
                    reason='a node cannot be its own parent')
        values = _to_object_values(dict(changed))
        _follow_display_name(rpc_node, values)
        if (rpc_node.chassis_uuid and 'chassis_uuid' in values
                and not values['chassis_uuid']
                and not utils.allow_remove_chassis_uuid()):
            raise exception.NotAcceptable(
                'Removing the chassis_uuid of a node requires API version '
                '1.25 or newer.')
        interfaces = {} if reset_interfaces else dict(
            rpc_node.interfaces or {})
        for name in node_obj.INTERFACE_FIELDS:
            if name in changed:
                interfaces.pop(name, None)
        interfaces.update(values.pop('interfaces'))
        if interfaces != (rpc_node.interfaces or {}):
            rpc_node.interfaces = interfaces
        for name, value in values.items():
            if rpc_node[name] != value:
                rpc_node[name] = value
        with node_states.notifying(rpc_node, 'update') as notified, \
                utils.node_rpc(node_ident), chassis_named_by_node():
            new_node = api.request.rpcapi.update_node(
                api.request.context, rpc_node,
                utils.conductor_host(rpc_node))
            if not all(new_node.obj_attr_is_set(f)
                       for f in new_node.fields):
                # NOTE: a conductor of an older release (a pinned rolling
                # upgrade) answers with a node lacking the newer fields;
                # the database has them all.
                new_node = objects.Node.get_by_id(api.request.context,
                                                  new_node.id)
            notified.node = new_node
        return convert_with_links(new_node)

    @expose.expose(None, types.uuid_or_name, status_code=204)
    def delete(self, node_ident):
        """Delete a node (through its conductor)."""
        rpc_node = utils.get_node(node_ident)
        if not (access.node_allowed('baremetal:node:delete', rpc_node) or (
                CONF.api.project_admin_can_manage_own_nodes
                and access.node_allowed(
                    'baremetal:node:delete:self_owned_node', rpc_node))):
            raise exception.HTTPForbidden(resource='baremetal:node:delete')
        with node_states.notifying(rpc_node, 'delete'), \
                utils.node_rpc(node_ident):
            api.request.rpcapi.destroy_node(
                api.request.context, rpc_node.id,
                utils.conductor_host(rpc_node))


# Node list filters: query name -> version gate (None: always).
FILTERS = {
    'instance_uuid': None,
    'chassis_uuid': None,
    'associated': None,
    'maintenance': None,
    'provision_state': utils.allow_provision_state_filter,
    'driver': utils.allow_driver_filter,
    'resource_class': utils.allow_resource_class_filter,
    'fault': utils.allow_fault_filter,
    'conductor_group': utils.allow_conductor_group_filter,
    'owner': utils.allow_owner_filter,
    'description_contains': utils.allow_description_filter,
    'retired': utils.allow_retired_filter,
    'lessee': utils.allow_lessee_filter,
    'shard': utils.allow_shards,
    'sharded': utils.allow_shards,
    'parent_node': utils.allow_parent_nodes,
    'include_children': utils.allow_parent_nodes,
    'instance_name': utils.allow_instance_name,
    # NOTE: the nodes a project owns or leases; as in Ironic, at every
    # version.
    'project': None,
    # NOTE: not a database filter: which conductor serves a node is worked
    # out from the live conductors (see _nodes_of_conductor).
    'conductor': utils.allow_expose_conductors,
}

# Query names whose database filter has another name: the ``shard`` query
# is a comma separated list (lower-cased, as Ironic does).
_DB_FILTER_NAMES = {'shard': 'shard_in'}


def _nodes_of_conductor(host, filters, limit, marker, sort_key, sort_dir):
    """One page of the nodes ``filters`` selects that conductor ``host``
    serves (the ``conductor`` list filter, API 1.49).

    Which conductor serves a node depends on the live conductors, not on
    a column, so pages of the filtered list are read in order and kept
    for the nodes of ``host`` until the page is full or the list ends:
    the page and its ``next`` marker are those of the filtered list.
    """
    context = api.request.context
    found = []
    while len(found) < limit:
        batch = objects.Node.list(context, filters=filters, limit=limit,
                                  marker=marker, sort_key=sort_key,
                                  sort_dir=sort_dir)
        hosts = utils.conductor_hosts_for(batch)
        found.extend(n for n in batch if hosts.get(n.uuid) == host)
        if len(batch) < limit:
            break
        marker = batch[-1].id
    return found[:limit]


def _list_filters(query):
    """The DB filters of a list query.  :raises: NotAcceptable (406)."""
    filters = {}
    for name, gate in FILTERS.items():
        if query.get(name) is None:
            continue
        if gate is not None and not gate():
            raise exception.NotAcceptable(
                'The "%s" filter is not available in API version %s.'
                % (name, api.request.version))
        filters[_DB_FILTER_NAMES.get(name, name)] = query[name]
    if 'fault' in filters and filters['fault'] not in states.FAULTS:
        raise exception.Invalid(
            'Unknown fault "%s"; the valid faults are: %s.'
            % (filters['fault'], ', '.join(states.FAULTS)))
    # NOTE: as in Ironic, at every version a list leaves out the nodes
    # that have a parent, unless it asks for the children of one parent
    # or for every node (include_children, which then wins over
    # parent_node).
    if filters.pop('include_children', False):
        filters.pop('parent_node', None)
    elif 'parent_node' not in filters:
        filters['has_parent'] = False
    return filters


def _check_patch(patch, reset_interfaces):
    """Version and content rules of a node PATCH (before applying it)."""
    if reset_interfaces is not None and not utils.allow_reset_interfaces():
        raise exception.NotAcceptable(
            'The "reset_interfaces" parameter requires API version 1.45 '
            'or newer.')
    roots = utils.patched_roots(patch)
    utils.reject_fields_in_newer_versions(roots)
    extensions.check_fields('node', roots)
    if 'traits' in roots:
        raise exception.Invalid(
            'Cannot update node traits via node patch. Node traits should '
            'be updated via the node traits API.')
    if reset_interfaces and not utils.get_patch_values(patch, '/driver'):
        raise exception.Invalid(
            "The reset_interfaces parameter can only be used when changing "
            "the node's driver.")


# Node fields and the Node object version that carries them: a conductor
# of an older release would drop them from a change sent to it.
_OBJECT_VERSION_OF_FIELD = {'shard': (1, 1), 'parent_node': (1, 2),
                            'disable_power_off': (1, 3),
                            'instance_name': (1, 3), 'health': (1, 3)}


def _check_not_pinned(roots):
    """Refuse changing a field during a rolling upgrade from a release
    whose conductors do not know it (they would silently drop it).

    :raises: Conflict (409) naming the field and the pin.
    """
    pin = api.request.cfg.pin_release_version
    if not pin:
        return
    pinned = versionutils.convert_version_to_tuple(
        release_mappings.object_versions(pin)['Node'])
    too_new = sorted(name for name in roots
                     if _OBJECT_VERSION_OF_FIELD.get(name, (1, 0)) > pinned)
    if too_new:
        raise exception.Conflict(
            'Field(s) %s cannot be changed while '
            '[DEFAULT]pin_release_version is %s: the conductors of that '
            'release do not store them. Retry once the upgrade is over.'
            % (', '.join(too_new), pin))


def _parent_uuid(ident, owner):
    """The UUID of the parent a node write names by UUID or name.

    As in Ironic, a parent the caller may not see, or owned by another
    project than the node, is answered as one that does not exist.

    :raises: Invalid (400).
    """
    refused = exception.Invalid(
        "Unable to apply the requested parent_node '%s'. Requested value "
        "was invalid." % ident)
    try:
        parent = utils.get_node(ident)
    except (exception.NotFound, exception.Invalid,
            exception.HTTPForbidden):
        raise refused
    if parent.owner != owner:
        raise refused
    return parent.uuid


def _owner_of_new_node(owner):
    """Authorize enrolling a node; the owner it gets.

    baremetal:node:create allows any owner.  Failing that, with
    [api]project_admin_can_manage_own_nodes, a project caller allowed
    baremetal:node:create:self_owned_node enrolls a node owned by its
    project, as in Ironic.

    :raises: HTTPForbidden (403) naming baremetal:node:create, Invalid
        (400) for a project admin naming another owner.
    """
    if access.caller_allowed('baremetal:node:create'):
        return owner
    project = access.project_caller()
    if not (project and CONF.api.project_admin_can_manage_own_nodes
            and access.caller_allowed(
                'baremetal:node:create:self_owned_node')):
        raise exception.HTTPForbidden(resource='baremetal:node:create')
    if owner is not None and owner != project:
        raise exception.Invalid(
            'Cannot create a node as a project scoped admin with an owner '
            'other than your own project.')
    return project


def _patch_rules(patch):
    """The policy rules a node PATCH needs, each once, in patch order."""
    rules = []
    for op in patch:
        root = utils.decode_pointer_segment(op['path'].split('/')[1])
        rule = node_policies.PATCH_RULES.get(root)
        if rule is None and root in node_obj.INTERFACE_FIELDS:
            rule = 'baremetal:node:update:driver_interfaces'
        if rule is None and root == 'automated_clean' and \
                strutils.bool_from_string(op.get('value'),
                                          default=None) is False:
            rule = 'baremetal:node:disable_cleaning'
        rule = rule or 'baremetal:node:update'
        if rule not in rules:
            rules.append(rule)
    return rules


def _follow_display_name(rpc_node, values):
    """As in Ironic, at every version: a change of instance_info giving
    a display_name sets instance_name when the node has none (Nova sets
    the display name; 1.104 clients read instance_name)."""
    if 'instance_info' not in values or (
            values.get('instance_name', rpc_node.instance_name)):
        return
    display_name = (values['instance_info'] or {}).get('display_name')
    if display_name and isinstance(display_name, str):
        values['instance_name'] = display_name[:INSTANCE_NAME_MAX_LENGTH]


def _check_owner_change(rpc_node):
    """Ironic's guards on changing the owner of a node in use.

    :raises: Conflict (409) for an active node unless
        baremetal:node:update_owner_provisioned allows it, and for a node
        whose allocation has an owner.
    """
    if rpc_node.provision_state == states.ACTIVE:
        try:
            access.authorize_node('baremetal:node:update_owner_provisioned',
                                  rpc_node)
        except exception.HTTPForbidden:
            raise exception.Conflict(
                'Cannot update owner of node "%s" while it is in state '
                '"%s".' % (rpc_node.uuid, states.ACTIVE))
    if rpc_node.allocation_id is not None:
        try:
            allocation = objects.Allocation.get_by_id(
                api.request.context, rpc_node.allocation_id)
        except exception.AllocationNotFound:
            return
        if allocation.owner is not None:
            raise exception.Conflict(
                'Cannot update owner of node "%s" while it is allocated to '
                'an allocation with an owner.' % rpc_node.uuid)


def _validated_changes(old, new):
    """The changed wire values of a patched node, type-checked.

    :raises: Invalid (400) for a value of the wrong type.
    """
    changes = {}
    check = Node()
    for name in set(old) | set(new):
        if name in old and old.get(name) == new.get(name):
            continue
        value = new.get(name)
        try:
            setattr(check, name, value)
        except (ValueError, exception.Invalid) as e:
            raise exception.Invalid('Invalid value for field %s: %s'
                                    % (name, e))
        if value is None and name in _NOT_NULL:
            raise exception.Invalid('The %s of a node cannot be null.'
                                    % name)
        changes[name] = value
    return changes


_NOT_NULL = ('driver', 'maintenance', 'protected', 'retired',
             'disable_power_off')
