"""Rules of /v1/nodes and its sub-resources (Ironic's names).

A project caller who may not ``baremetal:node:get`` a node is answered
404 for it, as if it did not exist; a caller who may see the node but not
act on it gets 403.
"""

from oslo_policy import policy

from ironic_alloc.common.policies import base

NODE = '/nodes/{node_ident}'


def _rule(name, check_str, description, operations):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{'method': m, 'path': p} for m, p in operations],
        scope_types=base.SCOPES)


def _patch(field, check_str, what):
    return _rule('baremetal:node:update:%s' % field, check_str,
                 'Change %s of a node.' % what, [('PATCH', NODE)])


rules = [
    _rule('baremetal:node:create', 'rule:system_admin',
          'Enroll a node.', [('POST', '/nodes')]),
    _rule('baremetal:node:create:self_owned_node', 'role:admin',
          'Enroll a node owned by the caller\'s project (with '
          '[api]project_admin_can_manage_own_nodes).',
          [('POST', '/nodes')]),
    _rule('baremetal:node:list', 'rule:project_reader',
          'List the nodes the caller\'s project owns or leases.',
          [('GET', '/nodes'), ('GET', '/nodes/detail')]),
    _rule('baremetal:node:list_all', 'rule:system_reader',
          'List every node, whatever its owner or lessee.',
          [('GET', '/nodes'), ('GET', '/nodes/detail')]),
    _rule('baremetal:node:get', base.SYSTEM_OR_NODE_READER,
          'Show a node. Project callers without it are answered 404.',
          [('GET', NODE)]),
    _rule('baremetal:node:get:filter_threshold', 'rule:system_reader',
          'Callers matching it see every field of a node; the others get '
          'the fields below checked one by one.',
          [('GET', NODE), ('GET', '/nodes/detail')]),
    _rule('baremetal:node:get:last_error', base.SYSTEM_OR_OWNER_READER,
          'See last_error of a node (it may name internal hosts).',
          [('GET', NODE), ('GET', '/nodes/detail')]),
    _rule('baremetal:node:get:reservation', base.SYSTEM_OR_OWNER_READER,
          'See the conductor holding a node\'s lock.',
          [('GET', NODE), ('GET', '/nodes/detail')]),
    _rule('baremetal:node:get:driver_internal_info',
          base.SYSTEM_OR_OWNER_READER,
          'See driver_internal_info of a node.',
          [('GET', NODE), ('GET', '/nodes/detail')]),
    _rule('baremetal:node:get:driver_info', base.SYSTEM_OR_OWNER_READER,
          'See driver_info of a node (its secrets stay masked unless '
          'show_password allows them).',
          [('GET', NODE), ('GET', '/nodes/detail')]),
    _rule('baremetal:node:update', base.SYSTEM_OR_NODE_MEMBER,
          'Change fields of a node that no more specific rule below '
          'covers (resource_class, description, maintenance, '
          'protected...).', [('PATCH', NODE)]),
    _rule('baremetal:node:update_extra', base.SYSTEM_OR_NODE_MEMBER,
          'Change extra of a node.', [('PATCH', NODE)]),
    _rule('baremetal:node:update_instance_info',
          base.SYSTEM_OR_OWNER_MEMBER_OR_LESSEE_ADMIN,
          'Change instance_info of a node.', [('PATCH', NODE)]),
    _patch('driver_info', base.SYSTEM_OR_OWNER_MEMBER, 'driver_info'),
    _patch('properties', base.SYSTEM_OR_OWNER_MEMBER, 'properties'),
    _patch('chassis_uuid', 'rule:system_admin', 'the chassis'),
    _patch('instance_uuid', base.SYSTEM_OR_OWNER_MEMBER, 'instance_uuid'),
    _patch('lessee', base.SYSTEM_OR_OWNER_MEMBER, 'the lessee'),
    _patch('owner', 'rule:system_member', 'the owner'),
    _patch('driver_interfaces', base.SYSTEM_OR_OWNER_ADMIN,
           'the driver or a hardware interface (a field ending in '
           '_interface)'),
    _patch('network_data', base.SYSTEM_OR_OWNER_MEMBER, 'network_data'),
    _patch('conductor_group', 'rule:system_member', 'the conductor group'),
    _patch('name', base.SYSTEM_OR_OWNER_MEMBER, 'the name'),
    _patch('retired', base.SYSTEM_OR_OWNER_MEMBER,
           'retired and retired_reason'),
    _patch('shard', 'rule:system_admin', 'the shard'),
    _patch('parent_node', 'rule:system_member', 'the parent node'),
    _patch('disable_power_off', 'rule:system_admin',
           'disable_power_off (whether powering the node off is refused)'),
    _rule('baremetal:node:update_owner_provisioned', 'rule:system_admin',
          'Change the owner of an active node; without it the change is a '
          '409.', [('PATCH', NODE)]),
    _rule('baremetal:node:disable_cleaning', 'rule:system_admin',
          'Set automated_clean to false.', [('PATCH', NODE)]),
    _rule('baremetal:node:delete', 'rule:system_admin',
          'Delete a node.', [('DELETE', NODE)]),
    _rule('baremetal:node:delete:self_owned_node', 'rule:node_owner_admin',
          'Delete a node the caller\'s project owns (with '
          '[api]project_admin_can_manage_own_nodes).',
          [('DELETE', NODE)]),
    _rule('baremetal:node:validate',
          base.SYSTEM_OR_OWNER_MEMBER_OR_LESSEE_ADMIN,
          'Validate the interfaces of a node.',
          [('GET', NODE + '/validate'),
           ('GET', '/nodes/validate?node={node_ident}')]),
    _rule('baremetal:node:set_maintenance',
          base.SYSTEM_OR_OWNER_MEMBER_OR_LESSEE_ADMIN,
          'Put a node in maintenance.',
          [('PUT', NODE + '/maintenance')]),
    _rule('baremetal:node:clear_maintenance',
          base.SYSTEM_OR_OWNER_MEMBER_OR_LESSEE_ADMIN,
          'Take a node out of maintenance.',
          [('DELETE', NODE + '/maintenance')]),
    _rule('baremetal:node:get_states', base.SYSTEM_OR_NODE_READER,
          'Show the power and provision states of a node.',
          [('GET', NODE + '/states')]),
    _rule('baremetal:node:set_power_state', base.SYSTEM_OR_NODE_MEMBER,
          'Change the power state of a node.',
          [('PUT', NODE + '/states/power')]),
    _rule('baremetal:node:set_provision_state',
          base.SYSTEM_OR_OWNER_MEMBER_OR_LESSEE_ADMIN,
          'Start a provision action (manage, provide, deploy, undeploy, '
          'rebuild, abort, adopt) on a node.',
          [('PUT', NODE + '/states/provision')]),
    _rule('baremetal:node:traits:list', base.SYSTEM_OR_NODE_READER,
          'List the traits of a node.', [('GET', NODE + '/traits')]),
    _rule('baremetal:node:traits:set', base.SYSTEM_OR_OWNER_ADMIN,
          'Add a trait to a node or replace all its traits.',
          [('PUT', NODE + '/traits'), ('PUT', NODE + '/traits/{trait}')]),
    _rule('baremetal:node:traits:delete', base.SYSTEM_OR_OWNER_ADMIN,
          'Remove one or all traits of a node.',
          [('DELETE', NODE + '/traits'),
           ('DELETE', NODE + '/traits/{trait}')]),
    _rule('baremetal:shards:get', 'rule:system_reader',
          'List the shards of the nodes and how many nodes each holds '
          '(every node counted, whatever its owner).',
          [('GET', '/shards')]),
]

# Node fields with a PATCH rule of their own: top-level field -> rule.
# Hardware interfaces (*_interface) follow the driver; every other field
# falls under baremetal:node:update.
PATCH_RULES = {
    'instance_info': 'baremetal:node:update_instance_info',
    'instance_name': 'baremetal:node:update_instance_info',
    'extra': 'baremetal:node:update_extra',
    'driver_info': 'baremetal:node:update:driver_info',
    'properties': 'baremetal:node:update:properties',
    'chassis_uuid': 'baremetal:node:update:chassis_uuid',
    'instance_uuid': 'baremetal:node:update:instance_uuid',
    'lessee': 'baremetal:node:update:lessee',
    'owner': 'baremetal:node:update:owner',
    'driver': 'baremetal:node:update:driver_interfaces',
    'network_data': 'baremetal:node:update:network_data',
    'conductor_group': 'baremetal:node:update:conductor_group',
    'name': 'baremetal:node:update:name',
    'retired': 'baremetal:node:update:retired',
    'retired_reason': 'baremetal:node:update:retired',
    'shard': 'baremetal:node:update:shard',
    'parent_node': 'baremetal:node:update:parent_node',
    'disable_power_off': 'baremetal:node:update:disable_power_off',
}
