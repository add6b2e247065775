"""Helpers of the v1 controllers: version gates, validation, lookups.

Every microversion gate is an ``allow_*()`` function here whose name says
the feature and whose body names its versions.py constant; controllers
never compare version numbers themselves.
"""

import contextlib
import json
import re

import jsonpatch
import os_traits
from oslo_utils import uuidutils
import pecan

from ironic_alloc import api
from ironic_alloc.api.controllers import link
from ironic_alloc.api.controllers.v1 import access
from ironic_alloc.api.controllers.v1 import versions
from ironic_alloc.common import exception
from ironic_alloc.common import states
from ironic_alloc.conf import CONF
from ironic_alloc import objects


def quoted(value):
    """A bad value for a 400's message: as JSON, the way the client sent
    it, shortened so that a huge value never floods the answer."""
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + '...'


def _allowed(minor):
    return api.request.version.minor >= minor


# Version gates, one per feature (oldest first).

def allow_available_state():
    """1.2: 'available' is shown instead of None."""
    return _allowed(versions.MINOR_2_AVAILABLE_STATE)


def allow_manageable_verbs():
    """1.4: 'manage' and 'provide'."""
    return _allowed(versions.MINOR_4_MANAGEABLE_STATE)


def allow_node_logical_names():
    """1.5: nodes have logical names."""
    return _allowed(versions.MINOR_5_NODE_NAME)


def allow_specify_fields():
    """1.8: ``fields`` query parameter."""
    return _allowed(versions.MINOR_8_FETCHING_SUBSET_OF_FIELDS)


def allow_provision_state_filter():
    """1.9: ``provision_state`` node filter."""
    return _allowed(versions.MINOR_9_PROVISION_STATE_FILTER)


def allow_unrestricted_node_names():
    """1.10: names may use every RFC 3986 unreserved character."""
    return _allowed(versions.MINOR_10_UNRESTRICTED_NODE_NAME)


def allow_enroll_state():
    """1.11: new nodes start in 'enroll'."""
    return _allowed(versions.MINOR_11_ENROLL_STATE)


def allow_abort_verb():
    """1.13: 'abort'."""
    return _allowed(versions.MINOR_13_ABORT_VERB)


def allow_links_node_states():
    """1.14: the node's ``states`` link."""
    return _allowed(versions.MINOR_14_LINKS_NODESTATES_DRIVERPROPERTIES)


def allow_driver_filter():
    """1.16: ``driver`` node filter."""
    return _allowed(versions.MINOR_16_DRIVER_FILTER)


def allow_adopt_verb():
    """1.17: 'adopt'."""
    return _allowed(versions.MINOR_17_ADOPT_VERB)


def allow_resource_class_filter():
    """1.21: ``resource_class`` node filter."""
    return _allowed(versions.MINOR_21_RESOURCE_CLASS)


def allow_raid_config():
    """1.12: RAID configuration (node fields, driver RAID properties)."""
    return _allowed(versions.MINOR_12_RAID_CONFIG)


def allow_portgroups():
    """1.23: portgroups."""
    return _allowed(versions.MINOR_23_PORTGROUPS)


def allow_portgroups_subcontrollers():
    """1.24: node/portgroups sub-resource and the node's link to it."""
    return _allowed(versions.MINOR_24_PORTGROUPS_SUBCONTROLLERS)


def allow_remove_chassis_uuid():
    """1.25: chassis_uuid may be removed."""
    return _allowed(versions.MINOR_25_UNSET_CHASSIS_UUID)


def allow_soft_power_off():
    """1.27: soft power targets and power timeout."""
    return _allowed(versions.MINOR_27_SOFT_POWER_OFF)


def allow_vifs_subcontroller():
    """1.28: node/vifs sub-resource."""
    return _allowed(versions.MINOR_28_VIFS_SUBCONTROLLER)


def allow_dynamic_drivers():
    """1.30: drivers ``type`` and ``detail``."""
    return _allowed(versions.MINOR_30_DYNAMIC_DRIVERS)


def allow_volume():
    """1.32: volume sub-resources and the node's link to them."""
    return _allowed(versions.MINOR_32_VOLUME)


def allow_rebuild_configdrive():
    """1.35: a config drive with 'rebuild'."""
    return _allowed(versions.MINOR_35_REBUILD_CONFIG_DRIVE)


def allow_traits():
    """1.37: node traits."""
    return _allowed(versions.MINOR_37_NODE_TRAITS)


def allow_inspect_wait_state():
    """1.39: 'inspect wait' is shown as such."""
    return _allowed(versions.MINOR_39_INSPECT_WAIT)


def allow_bios_interface():
    """1.40: node/bios sub-resource."""
    return _allowed(versions.MINOR_40_BIOS_INTERFACE)


def allow_fault_filter():
    """1.42: ``fault`` node filter."""
    return _allowed(versions.MINOR_42_FAULT)


def allow_detail_query():
    """1.43: ``detail`` flag of list endpoints."""
    return _allowed(versions.MINOR_43_ENABLE_DETAIL_QUERY)


def check_detail_query(detail, fields):
    """The ``detail`` flag of a list request: from 1.43, never with
    ``fields``.

    :raises: NotAcceptable (406) before 1.43, Invalid (400) with fields.
    """
    if detail is not None and not allow_detail_query():
        raise exception.NotAcceptable(
            'The "detail" parameter requires API version 1.43 or newer.')
    if detail and fields is not None:
        raise exception.Invalid('Can not specify ?detail=True and fields '
                                'in the same request.')


def allow_reset_interfaces():
    """1.45: ``reset_interfaces`` on node PATCH."""
    return _allowed(versions.MINOR_45_RESET_INTERFACES)


def allow_conductor_group_filter():
    """1.46: ``conductor_group`` node filter."""
    return _allowed(versions.MINOR_46_NODE_CONDUCTOR_GROUP)


def allow_expose_conductors():
    """1.49: /v1/conductors and node.conductor."""
    return _allowed(versions.MINOR_49_CONDUCTORS)


def allow_owner_filter():
    """1.50: ``owner`` node filter."""
    return _allowed(versions.MINOR_50_NODE_OWNER)


def allow_description_filter():
    """1.51: ``description_contains`` node filter."""
    return _allowed(versions.MINOR_51_NODE_DESCRIPTION)


def allow_allocations():
    """1.52: allocations API and node.allocation_uuid."""
    return _allowed(versions.MINOR_52_ALLOCATION)


def allow_build_configdrive():
    """1.56: config drive given as a JSON object."""
    return _allowed(versions.MINOR_56_BUILD_CONFIGDRIVE)


def allow_allocation_update():
    """1.57: allocation PATCH."""
    return _allowed(versions.MINOR_57_ALLOCATION_UPDATE)


def allow_allocation_backfill():
    """1.58: allocation backfill."""
    return _allowed(versions.MINOR_58_ALLOCATION_BACKFILL)


def allow_configdrive_vendor_data():
    """1.59: vendor_data in a config drive object."""
    return _allowed(versions.MINOR_59_CONFIGDRIVE_VENDOR_DATA)


def allow_allocation_owner():
    """1.60: allocation.owner."""
    return _allowed(versions.MINOR_60_ALLOCATION_OWNER)


def allow_retired_filter():
    """1.61: ``retired`` node filter."""
    return _allowed(versions.MINOR_61_NODE_RETIRED)


def allow_lessee_filter():
    """1.65: ``lessee`` node filter."""
    return _allowed(versions.MINOR_65_NODE_LESSEE)


def allow_deploy_undeploy_verbs():
    """1.73: 'deploy' and 'undeploy'."""
    return _allowed(versions.MINOR_73_DEPLOY_UNDEPLOY_VERBS)


def allow_driver_fields():
    """1.77: ``fields`` on the drivers API."""
    return _allowed(versions.MINOR_77_DRIVER_FIELDS_SELECTOR)


def allow_allocation_node_name():
    """1.79: allocations prefer a node whose name matches."""
    return _allowed(versions.MINOR_79_ALLOCATION_NODE_NAME)


def allow_shards():
    """1.82: node.shard, the ``shard`` and ``sharded`` node filters and
    /v1/shards."""
    return _allowed(versions.MINOR_82_NODE_SHARD)


def allow_parent_nodes():
    """1.83: node.parent_node, /v1/nodes/{node}/children and the
    ``parent_node`` and ``include_children`` node filters."""
    return _allowed(versions.MINOR_83_PARENT_CHILD_NODES)


def allow_firmware_interface():
    """1.86: node.firmware_interface (and ``firmware`` in validate)."""
    return _allowed(versions.MINOR_86_FIRMWARE_INTERFACE)


def allow_service_step():
    """1.87: node.service_step (the 'service' verb is refused)."""
    return _allowed(versions.MINOR_87_SERVICE)


def allow_literal_json_suffix():
    """1.91: a trailing ``.json`` in a path is part of the name."""
    return _allowed(versions.MINOR_91_DOT_JSON)


def allow_escaped_patch_paths():
    """1.98: JSON patch paths may hold any character, with '~' and '/'
    escaped as '~0' and '~1'."""
    return _allowed(versions.MINOR_98_SUPPORT_SPECIAL_CHAR_IN_ATTRIBUTES)


def allow_instance_name():
    """1.104: node.instance_name and its node list filter."""
    return _allowed(versions.MINOR_104_NODE_INSTANCE_NAME)


def allow_deploy_abort():
    """1.110: 'abort' of a node in 'wait call-back' (DEPLOYWAIT)."""
    return _allowed(versions.MINOR_110_DEPLOYWAIT_ABORT)


# Versioned node fields: hidden from responses below their version,
# rejected in ``fields`` (406) and in request bodies (406).

VERSIONED_FIELDS = {
    'driver_internal_info': versions.MINOR_3_DRIVER_INTERNAL_INFO,
    'name': versions.MINOR_5_NODE_NAME,
    'inspection_finished_at': versions.MINOR_6_INSPECT_STATE,
    'inspection_started_at': versions.MINOR_6_INSPECT_STATE,
    'clean_step': versions.MINOR_7_NODE_CLEAN,
    'raid_config': versions.MINOR_12_RAID_CONFIG,
    'target_raid_config': versions.MINOR_12_RAID_CONFIG,
    'network_interface': versions.MINOR_20_NETWORK_INTERFACE,
    'resource_class': versions.MINOR_21_RESOURCE_CLASS,
    'boot_interface': versions.MINOR_31_DYNAMIC_INTERFACES,
    'console_interface': versions.MINOR_31_DYNAMIC_INTERFACES,
    'deploy_interface': versions.MINOR_31_DYNAMIC_INTERFACES,
    'inspect_interface': versions.MINOR_31_DYNAMIC_INTERFACES,
    'management_interface': versions.MINOR_31_DYNAMIC_INTERFACES,
    'power_interface': versions.MINOR_31_DYNAMIC_INTERFACES,
    'raid_interface': versions.MINOR_31_DYNAMIC_INTERFACES,
    'vendor_interface': versions.MINOR_31_DYNAMIC_INTERFACES,
    'storage_interface': versions.MINOR_33_STORAGE_INTERFACE,
    'traits': versions.MINOR_37_NODE_TRAITS,
    'rescue_interface': versions.MINOR_38_RESCUE_INTERFACE,
    'bios_interface': versions.MINOR_40_BIOS_INTERFACE,
    'fault': versions.MINOR_42_FAULT,
    'deploy_step': versions.MINOR_44_NODE_DEPLOY_STEP,
    'conductor_group': versions.MINOR_46_NODE_CONDUCTOR_GROUP,
    'automated_clean': versions.MINOR_47_NODE_AUTOMATED_CLEAN,
    'protected': versions.MINOR_48_NODE_PROTECTED,
    'protected_reason': versions.MINOR_48_NODE_PROTECTED,
    'conductor': versions.MINOR_49_CONDUCTORS,
    'allocation_uuid': versions.MINOR_52_ALLOCATION,
    'owner': versions.MINOR_50_NODE_OWNER,
    'description': versions.MINOR_51_NODE_DESCRIPTION,
    'retired': versions.MINOR_61_NODE_RETIRED,
    'retired_reason': versions.MINOR_61_NODE_RETIRED,
    'lessee': versions.MINOR_65_NODE_LESSEE,
    'network_data': versions.MINOR_66_NODE_NETWORK_DATA,
    'boot_mode': versions.MINOR_75_NODE_BOOT_MODE,
    'secure_boot': versions.MINOR_75_NODE_BOOT_MODE,
    'shard': versions.MINOR_82_NODE_SHARD,
    'parent_node': versions.MINOR_83_PARENT_CHILD_NODES,
    'firmware_interface': versions.MINOR_86_FIRMWARE_INTERFACE,
    'service_step': versions.MINOR_87_SERVICE,
    'disable_power_off': versions.MINOR_95_DISABLE_POWER_OFF,
    'instance_name': versions.MINOR_104_NODE_INSTANCE_NAME,
    'health': versions.MINOR_109_NODE_HEALTH,
}


def disallowed_fields():
    """Versioned fields newer than the requested version."""
    return [f for f, minor in VERSIONED_FIELDS.items() if not _allowed(minor)]


def check_allowed_fields(fields):
    """406 when ``fields`` names a field newer than the request version."""
    if fields is None:
        return
    if not allow_specify_fields():
        raise exception.NotAcceptable(
            'The "fields" parameter requires API version %d.%d or newer.'
            % (versions.BASE_VERSION,
               versions.MINOR_8_FETCHING_SUBSET_OF_FIELDS))
    check_fields_exist_in_version(fields)


def check_fields_exist_in_version(names):
    """406 when a field named (in ``fields``, ``sort_key``...) is newer
    than the request version."""
    too_new = sorted(set(names) & set(disallowed_fields()))
    if too_new:
        raise exception.NotAcceptable(
            'Field(s) %s are not available in API version %s.'
            % (', '.join(too_new), api.request.version))


def check_for_invalid_fields(fields, valid_fields):
    """400 when ``fields`` names something the resource does not have."""
    if fields is None:
        return
    invalid = sorted(set(fields) - set(valid_fields))
    if invalid:
        raise exception.InvalidParameterValue(
            err='Field(s) "%s" are not valid' % ', '.join(invalid))


def reject_fields_in_newer_versions(given_fields):
    """406 when a request body sets a field newer than the version."""
    too_new = sorted(set(given_fields) & set(disallowed_fields()))
    if too_new:
        raise exception.NotAcceptable(
            'Field(s) %s can not be set in API version %s.'
            % (', '.join(too_new), api.request.version))


def shown_provision_state(state):
    """Older clients see the state names of their version."""
    if state == states.AVAILABLE and not allow_available_state():
        return states.NOSTATE
    if state == states.INSPECTWAIT and not allow_inspect_wait_state():
        return states.INSPECTING
    return state


def initial_node_provision_state():
    """'enroll' since 1.11, 'available' before (as Ironic)."""
    return states.ENROLL if allow_enroll_state() else states.AVAILABLE


# Paging

def validate_limit(limit):
    """The page size: [api]max_limit by default and at most.

    :raises: Invalid (400) when not positive.
    """
    if limit is None:
        return CONF.api.max_limit
    if limit <= 0:
        raise exception.Invalid('Limit must be positive')
    return min(CONF.api.max_limit, limit)


def validate_sort_dir(sort_dir):
    """:raises: Invalid (400) unless 'asc' or 'desc'."""
    if sort_dir not in ('asc', 'desc'):
        raise exception.Invalid("Invalid sort direction: %s. Acceptable "
                                "values are 'asc' or 'desc'" % sort_dir)
    return sort_dir


def validate_sort_key(sort_key, sortable):
    """:raises: Invalid (400) for a key one cannot sort by."""
    if sort_key not in sortable:
        raise exception.Invalid(
            'The sort_key value "%s" is an invalid field for sorting'
            % sort_key)
    return sort_key


# Names, traits, patches

_LOGICAL_NAME_RE = re.compile(r'^[A-Z0-9\-._~]+$', re.I)
# NOTE: the older, hostname-like rule of API versions before 1.10.
_HOSTNAME_SAFE_RE = re.compile(r"""^
[a-z0-9]([a-z0-9\-]{0,61}[a-z0-9])?   # host
(\.[a-z0-9\-_]{0,62}[a-z0-9])*        # domain
\.?                                   # trailing dot
$""", re.X)


def is_valid_logical_name(name):
    """RFC 3986 unreserved characters, at most 255 (1.10+ rule)."""
    return (isinstance(name, str) and len(name) <= 255
            and _LOGICAL_NAME_RE.match(name) is not None)


def is_valid_node_name(name):
    """A node name valid for the request version, and not a UUID."""
    if not isinstance(name, str) or len(name) > 255:
        return False
    if uuidutils.is_uuid_like(name):
        return False
    if allow_unrestricted_node_names():
        return _LOGICAL_NAME_RE.match(name) is not None
    return _HOSTNAME_SAFE_RE.match(name) is not None


_STANDARD_TRAITS = frozenset(os_traits.get_traits())
_CUSTOM_TRAIT_RE = re.compile('^%s[A-Z0-9_]+$' % os_traits.CUSTOM_NAMESPACE)


def validate_trait(trait):
    """:raises: InvalidTrait (400) unless standard or CUSTOM_[A-Z0-9_]+."""
    if (not isinstance(trait, str) or not 0 < len(trait) <= 255
            or (trait not in _STANDARD_TRAITS
                and _CUSTOM_TRAIT_RE.match(trait) is None)):
        raise exception.InvalidTrait(trait=trait)
    return trait


# NOTE: free text and JSON fields are TEXT columns, and MySQL/MariaDB's
# TEXT, the smallest of the supported databases, holds 65535 bytes.
MAX_STORED_BYTES = 65535


def check_stored_sizes(values):
    """:raises: Invalid (400) for a text or JSON value of ``values`` (a
    dict of field name -> value) larger than the database can store."""
    for name, value in values.items():
        if value is None or isinstance(value, (bool, int, float)):
            continue
        if isinstance(value, str):
            size = len(value.encode('utf-8'))
        else:
            size = len(json.dumps(value).encode('utf-8'))
        if size > MAX_STORED_BYTES:
            raise exception.Invalid(
                'The %s field is too large: %d bytes, at most %d.'
                % (name, size, MAX_STORED_BYTES))


def check_list_length(name, items, maximum):
    """:raises: Invalid (400) when the list ``items`` is longer than
    ``maximum`` (an [api] limit)."""
    if items is not None and len(items) > maximum:
        raise exception.Invalid('At most %d %s may be given, got %d.'
                                % (maximum, name, len(items)))


_JSONPATCH_EXCEPTIONS = (jsonpatch.JsonPatchException,
                         jsonpatch.JsonPointerException,
                         KeyError, IndexError, TypeError)


def apply_jsonpatch(doc, patch):
    """Apply a JSON patch one operation at a time (clearer errors).

    :raises: Invalid when adding a new root attribute, PatchError when an
        operation does not apply.
    """
    for op in patch:
        if op['op'] == 'add' and op['path'].count('/') == 1 and \
                op['path'].lstrip('/') not in doc:
            raise exception.Invalid(
                'Adding a new attribute (%s) to the root of the resource '
                'is not allowed' % op['path'])
    for op in patch:
        try:
            doc = jsonpatch.apply_patch(doc, jsonpatch.JsonPatch([op]))
        except _JSONPATCH_EXCEPTIONS as e:
            raise exception.PatchError(patch=op, reason=e)
    return doc


def get_patch_values(patch, path):
    """The values a patch gives to ``path`` (in order)."""
    return [p['value'] for p in patch
            if p['path'] == path and p['op'] != 'remove']


def decode_pointer_segment(segment):
    """One segment of a JSON pointer, its RFC 6901 escapes decoded."""
    return segment.replace('~1', '/').replace('~0', '~')


def patched_roots(patch):
    """The top-level attributes a patch touches."""
    return {decode_pointer_segment(p['path'].split('/')[1]) for p in patch}


# Lookups

def find_node_unchecked(node_ident):
    """The node named by UUID or name, whether or not the caller may
    see it; only to tell a hidden node from a missing one.

    :raises: NodeNotFound.
    """
    context = api.request.context
    if uuidutils.is_uuid_like(node_ident):
        return objects.Node.get_by_uuid(context, node_ident)
    return objects.Node.get_by_name(context, node_ident)


def get_node(node_ident, rule=None):
    """The node named by UUID or (1.5+) logical name, if the caller may
    see it (baremetal:node:get) and, when given, apply ``rule`` to it.

    :raises: InvalidUuidOrName (400) for an ill-formed identifier,
        NodeNotFound (404) for a missing node or one hidden from a
        project caller, HTTPForbidden (403) when ``rule`` denies.
    """
    return with_json_suffix(_get_node, node_ident, exception.NodeNotFound,
                            rule)


def _get_node(node_ident, rule):
    context = api.request.context
    if uuidutils.is_uuid_like(node_ident):
        node = objects.Node.get_by_uuid(context, node_ident)
    elif not allow_node_logical_names():
        # NOTE: before names existed, any other identifier was not found.
        raise exception.NodeNotFound(node=node_ident)
    elif is_valid_logical_name(node_ident):
        node = objects.Node.get_by_name(context, node_ident)
    else:
        raise exception.InvalidUuidOrName(name=node_ident)
    access.check_node_visible(node, node_ident)
    if rule is not None:
        access.authorize_node(rule, node)
    return node


# The WSGI environ key remembering the identifier a pre-1.91 request
# named with a ``.json`` suffix (dropped by the v1 router).
JSON_SUFFIX_KEY = 'ironic_alloc.json_suffix_dropped'


def with_json_suffix(lookup, ident, not_found, *args):
    """``lookup(ident, *args)``; when that is not found and the v1 router
    dropped a ``.json`` suffix from ``ident`` (before 1.91), the resource
    whose name keeps the suffix, as Ironic does."""
    try:
        return lookup(ident, *args)
    except not_found:
        if api.request.environ.get(JSON_SUFFIX_KEY) != ident:
            raise
        return lookup(ident + '.json', *args)


@contextlib.contextmanager
def node_rpc(node_ident):
    """Around an RPC about one node: a node deleted meanwhile is not
    found by the identifier the client sent, never by the internal id the
    conductor knows it by; a reservation is named only to a caller who
    may see it."""
    try:
        yield
    except exception.NodeNotFound:
        raise exception.NodeNotFound(node=node_ident) from None
    except exception.NamesReservation as exc:
        if access.reservation_visible(exc.kwargs.get('reservation')):
            raise
        raise exc.without_reservation() from None


def get_query_node(node_ident):
    """Like get_node(), for a node named in a query argument: 400."""
    try:
        return get_node(node_ident)
    except exception.NodeNotFound as e:
        e.code = 400
        raise


def conductor_hosts_for(nodes):
    """``{node uuid: conductor hostname or None}`` with one DB query."""
    rpcapi = api.request.rpcapi
    alive = rpcapi.list_alive_conductors(api.request.context)
    result = {}
    for node in nodes:
        try:
            result[node.uuid] = rpcapi.conductor_for_node(node, alive)
        except exception.NoValidHost:
            result[node.uuid] = None
    return result


def conductor_host(node):
    """The conductors to send a node action to: a Route of the RPC API
    (the first for an action that is not safe to repeat).

    :raises: NoValidHost (503) when no conductor of its group is alive.
    """
    return api.request.rpcapi.route_for_node(api.request.context, node)


def set_location(*path):
    """Set the Location header to a /v1 URL."""
    pecan.response.location = link.build_url(path[0], '/'.join(path[1:]))
