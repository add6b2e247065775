"""Authorization: oslo.policy with Ironic's rule names.

Rules are enforced only with ``[DEFAULT]auth_strategy = keystone``, the
one strategy whose requests carry roles, project and scope.  With
``noauth`` and ``http_basic`` every caller is an administrator, as in
standalone Ironic; secrets in responses stay masked whatever the
strategy (see ``shows``).
"""

import threading

from oslo_log import log
from oslo_policy import policy

from ironic_alloc.common import exception
from ironic_alloc.common import policies
from ironic_alloc.conf import CONF

LOG = log.getLogger(__name__)

_ENFORCER = None
_LOCK = threading.Lock()


def get_enforcer():
    """The process-wide enforcer (also the ``oslo.policy.enforcer`` entry
    point, so oslopolicy-checker and -list-redundant see our defaults)."""
    global _ENFORCER
    with _LOCK:
        if _ENFORCER is None:
            enforcer = policy.Enforcer(CONF)
            enforcer.register_defaults(policies.list_rules())
            _ENFORCER = enforcer
        return _ENFORCER


def reset():
    """Forget the enforcer (tests that change [oslo_policy])."""
    global _ENFORCER
    with _LOCK:
        if _ENFORCER is not None:
            _ENFORCER.clear()
        _ENFORCER = None


def enforced():
    """Whether requests carry identities to check rules against."""
    return CONF.auth_strategy == 'keystone'


def check(rule, target, context):
    """Whether ``rule`` allows ``context`` on ``target`` (always True
    when rules are not enforced)."""
    if not enforced():
        return True
    try:
        return get_enforcer().authorize(rule, target, context,
                                        do_raise=False)
    except policy.InvalidScope:
        return False


def authorize(rule, target, context):
    """Check ``rule``; :raises: HTTPForbidden (403) naming it."""
    if check(rule, target, context):
        return
    LOG.info('Rejected %(rule)s for user %(user)s of project %(project)s '
             '(system scope %(system)s)',
             {'rule': rule, 'user': context.user_id,
              'project': context.project_id,
              'system': context.system_scope})
    raise exception.HTTPForbidden(resource=rule)


def shows(rule, target, context):
    """Whether a show_* rule lets ``context`` see secrets.

    NOTE: evaluated whatever the auth strategy: without identities no
    caller matches, so secrets stay masked.
    """
    try:
        return get_enforcer().authorize(rule, target, context,
                                        do_raise=False)
    except policy.InvalidScope:
        return False


def node_target(context, node):
    """The target of a node rule: the caller plus owner and lessee."""
    target = context.to_policy_values()
    if node.owner:
        target['node.owner'] = node.owner
    if node.lessee:
        target['node.lessee'] = node.lessee
    return target


def allocation_target(context, allocation=None, owner=None):
    """The target of an allocation rule: the caller plus the owner."""
    target = context.to_policy_values()
    owner = allocation.owner if allocation is not None else owner
    if owner:
        target['allocation.owner'] = owner
    return target


def project_of(context):
    """The project a project-scoped caller acts for, or None for system
    (and unauthenticated) callers."""
    if not enforced() or context.system_scope == 'all':
        return None
    return context.project_id
