"""Personas the default rules are made of (secure RBAC).

Keystone's default roles imply one another (admin > member > reader), so
a token carries every implied role: "role:reader" also matches members
and admins.  A caller is either system scoped (``system_scope:all``,
the operators of the deployment) or project scoped; a project relates to
a node as its owner or its lessee, and to an allocation as its owner.
Override one of these named rules to change every policy that uses it.
"""

from oslo_policy import policy

SCOPES = ['system', 'project']

rules = [
    policy.RuleDefault(
        'system_admin', 'role:admin and system_scope:all',
        description='Administrator of the whole deployment.'),
    policy.RuleDefault(
        'system_member', 'role:member and system_scope:all',
        description='Operator of the deployment who may change nodes and '
                    'allocations of any project.'),
    policy.RuleDefault(
        'system_reader', 'role:reader and system_scope:all',
        description='Auditor who may read everything.'),
    policy.RuleDefault(
        'project_reader', 'role:reader',
        description='Any caller holding the reader role; what it may see '
                    'is filtered by project in the API.'),
    policy.RuleDefault(
        'project_member', 'role:member',
        description='Any caller holding the member role.'),
    policy.RuleDefault(
        'node_owner_admin', 'role:admin and project_id:%(node.owner)s',
        description='Administrator of the project owning the node.'),
    policy.RuleDefault(
        'node_owner_member', 'role:member and project_id:%(node.owner)s',
        description='Member of the project owning the node.'),
    policy.RuleDefault(
        'node_owner_reader', 'role:reader and project_id:%(node.owner)s',
        description='Reader of the project owning the node.'),
    policy.RuleDefault(
        'node_lessee_admin', 'role:admin and project_id:%(node.lessee)s',
        description='Administrator of the project leasing the node.'),
    policy.RuleDefault(
        'node_lessee_member', 'role:member and project_id:%(node.lessee)s',
        description='Member of the project leasing the node.'),
    policy.RuleDefault(
        'node_lessee_reader', 'role:reader and project_id:%(node.lessee)s',
        description='Reader of the project leasing the node.'),
    policy.RuleDefault(
        'allocation_owner_member',
        'role:member and project_id:%(allocation.owner)s',
        description='Member of the project owning the allocation.'),
    policy.RuleDefault(
        'allocation_owner_reader',
        'role:reader and project_id:%(allocation.owner)s',
        description='Reader of the project owning the allocation.'),
    policy.RuleDefault(
        'show_password', '!',
        description='Show the secrets of driver_info and '
                    'driver_internal_info (passwords, keys, tokens) in API '
                    'responses instead of "******". Nobody by default.'),
    policy.RuleDefault(
        'show_instance_secrets', '!',
        description='Show the secrets of instance_info (passwords, config '
                    'drive, image URL) in API responses instead of '
                    '"******". Nobody by default.'),
]

# Compositions used by the node and allocation rules.
SYSTEM_OR_NODE_READER = ('rule:system_reader or rule:node_owner_reader or '
                         'rule:node_lessee_reader')
SYSTEM_OR_OWNER_READER = 'rule:system_reader or rule:node_owner_reader'
SYSTEM_OR_NODE_MEMBER = ('rule:system_member or rule:node_owner_member or '
                         'rule:node_lessee_member')
SYSTEM_OR_OWNER_MEMBER_OR_LESSEE_ADMIN = (
    'rule:system_member or rule:node_owner_member or '
    'rule:node_lessee_admin')
SYSTEM_OR_OWNER_MEMBER = 'rule:system_member or rule:node_owner_member'
SYSTEM_OR_OWNER_ADMIN = 'rule:system_member or rule:node_owner_admin'
