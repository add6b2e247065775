"""[oslo_policy]: oslo.policy's options, with secure-RBAC defaults.

Scopes are enforced and only the new (system/project) defaults apply:
ironic_alloc never had the pre-RBAC rules Ironic keeps for upgrades.
"""

from oslo_policy import opts as policy_opts


def set_defaults(conf):
    # NOTE: oslo.policy 6 always enforces scope and no longer has
    # enforce_scope; older releases need it turned on.
    policy_opts.set_defaults(conf, policy_file='policy.yaml',
                             enforce_scope=True, enforce_new_defaults=True)


def register_opts(conf):
    set_defaults(conf)
