"""Who may see and do what: the policy checks of the v1 controllers.

Ironic's semantics: a project caller who may not see a node or an
allocation is told it does not exist (404); a caller who may see it but
not act on it gets a 403 naming the rule.  Lists of a caller without the
``list_all`` rule are cut down to its project.  Secrets in node
responses are masked for everyone unless show_password /
show_instance_secrets say otherwise.
"""

from oslo_utils import strutils

from ironic_alloc import api
from ironic_alloc.common import exception
from ironic_alloc.common import limits
from ironic_alloc.common import policy

MASK = '******'

# driver_info keys that hold secrets without "password" in their name.
_EXTRA_DRIVER_SECRETS = ('snmp_auth_key', 'snmp_priv_key')

# Node fields a caller below baremetal:node:get:filter_threshold sees only
# with the rule baremetal:node:get:<field>.
_FILTERED_FIELDS = ('last_error', 'reservation', 'driver_internal_info',
                    'driver_info')


def _context():
    return api.request.context


def authorize(rule):
    """A rule about the caller only.  :raises: HTTPForbidden (403)."""
    context = _context()
    policy.authorize(rule, context.to_policy_values(), context)


def caller_allowed(rule):
    """Whether a rule about the caller only allows it (no exception)."""
    context = _context()
    return policy.check(rule, context.to_policy_values(), context)


def project_caller():
    """The caller's project when it acts as a project, else None."""
    return policy.project_of(_context())


def hold_limits(owner):
    """The limits on the holds of ``owner`` that apply to this caller:
    None for a caller baremetal:allocation:limit_exempt allows, or when
    nothing limits ``owner``.

    :raises: LimitsUnavailable (503) when Keystone cannot be read.
    """
    # NOTE: the exemption is a policy check: only made when limits apply.
    if (owner is None or not limits.enabled()
            or caller_allowed('baremetal:allocation:limit_exempt')):
        return None
    return limits.for_project(owner)


def check_node_visible(node, ident):
    """:raises: NodeNotFound (404) for a project caller, HTTPForbidden
    (403) for others, when the caller may not see ``node``."""
    context = _context()
    rule = 'baremetal:node:get'
    if policy.check(rule, policy.node_target(context, node), context):
        return
    if project_caller() is not None:
        raise exception.NodeNotFound(node=ident)
    raise exception.HTTPForbidden(resource=rule)


def node_allowed(rule, node):
    """Whether ``rule`` allows the caller on ``node`` (no exception)."""
    context = _context()
    return policy.check(rule, policy.node_target(context, node), context)


def authorize_node(rule, node):
    """:raises: HTTPForbidden (403) naming ``rule``."""
    context = _context()
    policy.authorize(rule, policy.node_target(context, node), context)


def check_allocation_visible(allocation, ident):
    """:raises: AllocationNotFound (404) when the caller may not see
    ``allocation`` (for every caller, as Ironic does)."""
    context = _context()
    if not policy.check('baremetal:allocation:get',
                        policy.allocation_target(context, allocation),
                        context):
        raise exception.AllocationNotFound(allocation=ident)


def authorize_allocation(rule, allocation=None, owner=None):
    """:raises: HTTPForbidden (403) naming ``rule``."""
    context = _context()
    policy.authorize(
        rule, policy.allocation_target(context, allocation, owner), context)


def allowed(rule, allocation=None, owner=None):
    """Whether an allocation ``rule`` allows the caller (no exception)."""
    context = _context()
    return policy.check(
        rule, policy.allocation_target(context, allocation, owner), context)


def list_project(kind, owner=None):
    """The project a list of ``kind`` ('node', 'allocation') is cut
    down to, or None when the caller may list everything.

    :param owner: the owner the caller filters by, if any: asking for
        another project's items without ``list_all`` is a 403.
    :raises: HTTPForbidden (403).
    """
    context = _context()
    list_all = 'baremetal:%s:list_all' % kind
    if policy.check(list_all, context.to_policy_values(), context):
        return None
    project = context.project_id
    if not project or (owner is not None and owner != project):
        raise exception.HTTPForbidden(resource=list_all)
    authorize('baremetal:%s:list' % kind)
    return project


class NodeMasks:
    """What the caller may see of nodes, decided once per response."""

    def __init__(self):
        context = self.context = _context()
        caller = context.to_policy_values()
        self.show_driver_secrets = policy.shows('show_password', caller,
                                                context)
        self.show_instance_secrets = policy.shows('show_instance_secrets',
                                                  caller, context)
        self.filtered = not policy.check(
            'baremetal:node:get:filter_threshold', caller, context)

    def apply(self, values, rpc_node, fields=None):
        """Redact and mask the wire ``values`` of ``rpc_node`` in place.

        :param fields: the fields the response shows (None: all); the
            others are left alone, which saves a page of plain node lists
            the work.
        """
        if fields is not None:
            shown = {k: values[k] for k in fields if k in values}
            self.apply(shown, rpc_node)
            values.update(shown)
            return
        if self.filtered:
            target = policy.node_target(self.context, rpc_node)
            for name in _FILTERED_FIELDS:
                rule = 'baremetal:node:get:%s' % name
                if values.get(name) is None or policy.check(
                        rule, target, self.context):
                    continue
                text = '** Redacted: requires the %s rule. **' % rule
                values[name] = ({'content': text}
                                if isinstance(values[name], dict) else text)
        if not self.show_driver_secrets:
            for name in ('driver_info', 'driver_internal_info'):
                if isinstance(values.get(name), dict):
                    values[name] = strutils.mask_dict_password(values[name],
                                                               MASK)
            info = values.get('driver_info')
            if isinstance(info, dict):
                for key in _EXTRA_DRIVER_SECRETS:
                    if info.get(key):
                        info[key] = MASK
        info = values.get('instance_info')
        if not self.show_instance_secrets and isinstance(info, dict):
            info = values['instance_info'] = strutils.mask_dict_password(
                info, MASK)
            for key in ('configdrive', 'image_url'):
                if info.get(key):
                    info[key] = MASK
