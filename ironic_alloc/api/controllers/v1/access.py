"""Who may see and do what: the policy checks of the v1 controllers.

Ironic's semantics: a project caller who may not see a node or an
allocation is told it does not exist (404); a caller who may see it but
not act on it gets a 403 naming the rule.  Lists of a caller without the
``list_all`` rule are cut down to its project.  Secrets in node
responses are masked for everyone unless show_password /
show_instance_secrets say otherwise.
"""

from oslo_utils import strutils
from oslo_utils import uuidutils

from ironic_alloc import api
from ironic_alloc.common import exception
from ironic_alloc.common import limits
from ironic_alloc.common import policy
from ironic_alloc.common import states
from ironic_alloc import objects

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


def reservation_visible(reservation_uuid):
    """Whether the caller may see the reservation ``reservation_uuid``
    (baremetal:reservation:get), which an error may name only then: its
    UUID is what proves the right to deploy its node.  False for one that
    is gone."""
    context = _context()
    if not policy.enforced():
        return True
    try:
        reservation = objects.Allocation.get_reservation(
            context, reservation_uuid)[0]
    except exception.ReservationNotFound:
        return False
    return allowed('baremetal:reservation:get', reservation)


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


def named_reservation(instance_info):
    """The reservation UUID (lower case) an instance_info names under
    states.RESERVATION_KEY, or None when it names none (a value that is
    not a UUID names none)."""
    if not isinstance(instance_info, dict):
        return None
    value = instance_info.get(states.RESERVATION_KEY)
    if isinstance(value, str) and uuidutils.is_uuid_like(value):
        return value.lower()
    return None


# The owner recorded for a UUID that is no reservation's.
_NOT_A_RESERVATION = object()


class ReservationSight:
    """Which reservations named in nodes' instance_info the caller may
    see (baremetal:reservation:get), for one request.

    A reservation's UUID is what proves the right to deploy its node, so
    the node's owner, who may see the node but not a lessee's
    reservation, is never shown it.  A value naming no reservation hides
    nothing and is shown.
    """

    def __init__(self):
        context = self.context = _context()
        # NOTE: a caller allowed without an owner in the target (a system
        # reader; anyone when rules are not enforced) sees every
        # reservation: no read at all.
        self.sees_all = policy.check('baremetal:reservation:get',
                                     policy.allocation_target(context),
                                     context)
        self._owners = {}
        self._allowed = {}

    def preload(self, nodes):
        """Read the owners of what ``nodes`` name, in one query."""
        if self.sees_all:
            return
        wanted = {named_reservation(n.instance_info) for n in nodes}
        wanted -= {None}
        wanted -= set(self._owners)
        if not wanted:
            return
        found = objects.Allocation.reservation_owners(self.context, wanted)
        for uuid in wanted:
            self._owners[uuid] = found.get(uuid, _NOT_A_RESERVATION)

    def shown(self, uuid):
        """Whether the caller may see what names reservation ``uuid``
        (a lower-case UUID)."""
        if self.sees_all:
            return True
        if uuid not in self._owners:
            self._owners.update(objects.Allocation.reservation_owners(
                self.context, [uuid]))
            self._owners.setdefault(uuid, _NOT_A_RESERVATION)
        owner = self._owners[uuid]
        if owner is _NOT_A_RESERVATION:
            return True
        if owner not in self._allowed:
            self._allowed[owner] = policy.check(
                'baremetal:reservation:get',
                policy.allocation_target(self.context, owner=owner),
                self.context)
        return self._allowed[owner]

    def hide(self, values):
        """Mask, in a node's wire ``values``, the reservation UUID the
        caller may not see (a copy of instance_info is made).

        :returns: the value masked, or None.
        """
        info = values.get('instance_info')
        named = named_reservation(info)
        if named is None or self.shown(named):
            return None
        values['instance_info'] = dict(info, **{states.RESERVATION_KEY:
                                                MASK})
        return info[states.RESERVATION_KEY]


def patchable_node(values):
    """A node's wire ``values`` as the caller's PATCH applies to them:
    as shown to the caller, what it may not see masked.  Pass the result
    of the patch to unmask_patched().

    :returns: (the values to patch, what was masked or None).
    """
    view = dict(values)
    return view, ReservationSight().hide(view)


def unmask_patched(patched, hidden):
    """Put back into ``patched`` (patchable_node() values after the
    patch) the reservation UUID a kept mask stands for: the shown node
    sent back whole never writes the mask over the real value."""
    info = patched.get('instance_info')
    if (hidden is not None and isinstance(info, dict)
            and info.get(states.RESERVATION_KEY) == MASK):
        info[states.RESERVATION_KEY] = hidden


def check_deploy_reservation(node):
    """A deploy naming a reservation the caller may not see is refused:
    only those who may see a reservation deploy with it (its project,
    system callers), even once its UUID is in the node's instance_info.

    :raises: ReservationNotVisible (409), naming no reservation.
    """
    named = named_reservation(node.instance_info)
    if named is not None and not ReservationSight().shown(named):
        raise exception.ReservationNotVisible(node=node.uuid)


class NodeMasks:
    """What the caller may see of nodes, decided once per response.

    :param nodes: the nodes of the response, whose named reservations
        are then read at once (see ReservationSight).
    """

    def __init__(self, nodes=(), fields=None):
        self.reservations = ReservationSight()
        if fields is None or 'instance_info' in fields:
            self.reservations.preload(nodes)
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
        self.reservations.hide(values)
