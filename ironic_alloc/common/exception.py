"""ironic_alloc exceptions.

Every error carries its HTTP status in ``code``; the API turns an exception
into an Ironic-format error body with that status, and oslo.messaging
re-raises exceptions of this module on the API side of an RPC call (see
``ironic_alloc.common.rpc``), so no mapping table exists anywhere.
"""

import http.client as http_client

from oslo_log import log
from oslo_serialization import jsonutils

LOG = log.getLogger(__name__)


class IronicAllocException(Exception):
    """Base exception; subclasses set ``_msg_fmt`` and ``code``."""

    _msg_fmt = 'An unknown exception occurred.'
    code = http_client.INTERNAL_SERVER_ERROR
    safe = False

    def __init__(self, message=None, **kwargs):
        # NOTE: keep kwargs JSON-safe so the exception survives RPC.
        self.kwargs = {k: v if _json_safe(v) else str(v)
                       for k, v in kwargs.items()}
        if 'code' in kwargs:
            self.code = kwargs['code']
        if not message:
            try:
                message = self._msg_fmt % self.kwargs
            except (KeyError, TypeError):
                LOG.exception('Exception %(cls)s misses arguments for '
                              '%(fmt)r: %(kw)s',
                              {'cls': type(self).__name__,
                               'fmt': self._msg_fmt, 'kw': self.kwargs})
                message = self._msg_fmt
        super().__init__(message)

    def __str__(self):
        return str(self.args[0])


def _json_safe(value):
    try:
        jsonutils.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


class ConfigInvalid(IronicAllocException):
    """The configuration prevents the service from starting."""
    _msg_fmt = 'Invalid configuration: %(error_msg)s'


# 400 family

class Invalid(IronicAllocException):
    _msg_fmt = 'Unacceptable parameters.'
    code = http_client.BAD_REQUEST


class InvalidParameterValue(Invalid):
    _msg_fmt = '%(err)s'


class NodeParentInvalid(Invalid):
    _msg_fmt = 'Invalid parent_node: %(reason)s.'


class MissingArgument(Invalid):
    _msg_fmt = 'Missing argument: %(arg)s.'


class InvalidUUID(Invalid):
    _msg_fmt = 'Expected a UUID but received %(uuid)s.'


class InvalidName(Invalid):
    _msg_fmt = 'Expected a logical name but received %(name)s.'


class InvalidUuidOrName(Invalid):
    _msg_fmt = 'Expected a logical name or UUID but received %(name)s.'


class InvalidIdentity(Invalid):
    _msg_fmt = 'Expected a UUID or int but received %(identity)s.'


class PatchError(Invalid):
    _msg_fmt = "Couldn't apply patch '%(patch)s'. Reason: %(reason)s"


class InvalidStateRequested(Invalid):
    _msg_fmt = ('The requested action "%(action)s" can not be performed '
                'on node "%(node)s" while it is in state "%(state)s".')


class InvalidTrait(Invalid):
    _msg_fmt = ('Invalid trait %(trait)s: a trait must be a standard '
                'trait from os-traits or match CUSTOM_[A-Z0-9_]+ and be at '
                'most 255 characters long.')


class NodeIsRetired(Invalid):
    _msg_fmt = ('The %(op)s operation can not be performed on node '
                '%(node)s as it is retired.')


class NodeInMaintenance(Invalid):
    _msg_fmt = ('The %(op)s operation can\'t be performed on node '
                '%(node)s because it\'s in maintenance mode.')


class ChassisNotEmpty(Invalid):
    _msg_fmt = ('Cannot complete the requested action because chassis '
                '%(chassis)s contains nodes.')


class UnsupportedFeature(Invalid):
    _msg_fmt = ('%(feature)s is not supported by ironic_alloc: it '
                'allocates and tracks nodes but drives no hardware.')


class UnsupportedDriver(Invalid):
    _msg_fmt = 'Driver %(driver)s is not supported.'


class ExtensionVersionRequired(Invalid):
    # NOTE: 400, not Ironic's 406: the request is fine for Ironic, it only
    # lacks the ironic_alloc extension version; the message says which.
    _msg_fmt = ('%(what)s requires ironic_alloc API extension version '
                '%(version)s: send the header "OpenStack-API-Version: '
                'ironic-alloc %(version)s" (or a newer version).')


# 403 / 404 / 406 / 409

class NotAuthorized(IronicAllocException):
    _msg_fmt = 'Not authorized.'
    code = http_client.FORBIDDEN


class HTTPForbidden(NotAuthorized):
    _msg_fmt = 'Access was denied to the following resource: %(resource)s'


class ProjectLimitExceeded(NotAuthorized):
    _msg_fmt = ('Project %(project)s has reached its limit %(resource)s: '
                '%(usage)s of %(limit)s holds (allocations and reservations) '
                'are in use, so no new one can be created.')


class GroupLimitExceeded(ProjectLimitExceeded):
    _msg_fmt = ('Project %(project)s would pass its limit %(resource)s: '
                '%(usage)s of %(limit)s holds (allocations and reservations) '
                'are in use and the allocation group asks for %(requested)s '
                'more, so none of them can be created.')


class NotFound(IronicAllocException):
    _msg_fmt = 'Resource could not be found.'
    code = http_client.NOT_FOUND


class NodeNotFound(NotFound):
    _msg_fmt = 'Node %(node)s could not be found.'


class NodeTraitNotFound(NotFound):
    _msg_fmt = 'Node %(node_id)s doesn\'t have a trait %(trait)s'


class ConductorNotFound(NotFound):
    _msg_fmt = 'Conductor %(conductor)s could not be found.'


class DriverNotFound(NotFound):
    _msg_fmt = ('Could not find the following driver(s) or hardware '
                'type(s): %(driver_name)s.')


class PortNotFound(NotFound):
    _msg_fmt = 'Port %(port)s could not be found.'


class AllocationNotFound(NotFound):
    _msg_fmt = 'Allocation %(allocation)s could not be found.'


class AllocationGroupNotFound(NotFound):
    _msg_fmt = 'Allocation group %(group)s could not be found.'


class ChassisNotFound(NotFound):
    _msg_fmt = 'Chassis %(chassis)s could not be found.'


class ReservationNotFound(NotFound):
    _msg_fmt = 'Reservation %(reservation)s could not be found.'


class NotAcceptable(IronicAllocException):
    _msg_fmt = 'Request not acceptable.'
    code = http_client.NOT_ACCEPTABLE


class Conflict(IronicAllocException):
    _msg_fmt = 'Conflict.'
    code = http_client.CONFLICT


class DuplicateName(Conflict):
    _msg_fmt = 'A node with name %(name)s already exists.'


class NodeAlreadyExists(Conflict):
    _msg_fmt = 'A node with UUID %(uuid)s already exists.'


class InstanceAssociated(Conflict):
    _msg_fmt = ('Instance %(instance_uuid)s is already associated with a '
                'node, it cannot be associated with this other node '
                '%(node)s')


class InstanceAlreadyAssociated(InstanceAssociated):
    """A new hold's instance is already a node's.  Names no node: the
    caller may not see the one that has it (doc/source/admin/
    authorization.rst, "What a project learns of what it cannot
    see")."""
    _msg_fmt = ('Instance %(instance_uuid)s is already associated with a '
                'node.')


class NodeAssociated(Conflict):
    _msg_fmt = ('Node %(node)s is associated with instance '
                '%(instance)s.')


class NoNodeReservable(Conflict):
    """None of the nodes of a reservation request could be reserved.

    ``reasons``: one {"node_uuid", "reason"} per requested node, in the
    order of the request.
    """

    def __init__(self, reasons):
        self.reasons = [dict(r) for r in reasons]
        super().__init__(
            'No node could be reserved: %s.' % '; '.join(
                '%s %s' % (r['node_uuid'], r['reason'])
                for r in self.reasons),
            reasons=self.reasons)


class NamesReservation(Conflict):
    """A 409 naming the reservation (``reservation``) that holds node
    ``node``.  The API tells a caller who may not see that reservation
    the ``_unnamed_fmt`` message instead (utils.node_rpc()): a
    reservation's UUID is what proves the right to deploy its node."""
    _unnamed_fmt = 'Node %(node)s is reserved.'

    def without_reservation(self):
        """The same error without the reservation's UUID."""
        # NOTE: the class of this module, not the subclass oslo.messaging
        # makes of an exception raised in a conductor (whose str() is
        # always the original message).
        cls = next(c for c in type(self).__mro__
                   if c.__module__ == __name__)
        kwargs = dict(self.kwargs)
        kwargs.pop('reservation', None)
        return cls(self._unnamed_fmt % kwargs, **kwargs)


class NodeReserved(NamesReservation):
    _msg_fmt = ('Node %(node)s is held by reservation %(reservation)s; '
                '%(action)s needs the reservation deleted first.')
    _unnamed_fmt = ('Node %(node)s is reserved; %(action)s needs the '
                    'reservation deleted first.')


class NodeLocked(Conflict):
    _msg_fmt = ('Node %(node)s is locked by host %(host)s, please retry '
                'after the current operation is completed.')


class NodeProtected(HTTPForbidden):
    _msg_fmt = 'Node %(node)s is protected and cannot be undeployed, ' \
               'rebuilt or deleted'


class InvalidState(Conflict):
    _msg_fmt = 'Invalid resource state.'


class ConductorAlreadyRegistered(Conflict):
    _msg_fmt = 'Conductor %(conductor)s already registered.'


class AllocationDuplicateName(Conflict):
    _msg_fmt = 'Allocation with name %(name)s already exists.'


class AllocationAlreadyExists(Conflict):
    _msg_fmt = 'Allocation with UUID %(uuid)s already exists.'


class ChassisAlreadyExists(Conflict):
    _msg_fmt = 'A chassis with UUID %(uuid)s already exists.'


class AllocationLost(Conflict):
    _msg_fmt = ('Allocation %(allocation)s was deleted, finished or taken '
                'over by another conductor.')


class AllocationGroupDuplicateName(Conflict):
    _msg_fmt = 'Allocation group with name %(name)s already exists.'


class AllocationGroupAlreadyExists(Conflict):
    _msg_fmt = 'Allocation group with UUID %(uuid)s already exists.'


class AllocationInAllocatingGroup(Conflict):
    _msg_fmt = ('Allocation %(allocation)s belongs to allocation group '
                '%(group)s, which is still allocating; delete the group or '
                'wait for it to end.')


class AllocationGroupLost(Conflict):
    _msg_fmt = ('Allocation group %(group)s was deleted, finished or taken '
                'over by another conductor.')


class AllocationGroupCommitFailed(Conflict):
    """The commit of a group found a member it could not write; nothing
    was written.  ``node_id`` is the node that changed underneath (the
    group may be solved again without it), None when solving again
    cannot help."""
    _msg_fmt = 'Member %(member)s of the allocation group: %(reason)s'

    def __init__(self, message=None, node_id=None, **kwargs):
        super().__init__(message, **kwargs)
        self.node_id = node_id

    @property
    def solve_again(self):
        """Whether solving the group again may succeed."""
        return self.node_id is not None


class AllocationGroupCommitConflict(AllocationGroupCommitFailed):
    """The database refused the commit of a group as conflicting with
    other transactions (a deadlock, SQLite's lock) as often as writers
    retry; nothing was written, and solving again may succeed."""
    _msg_fmt = ('the database refused the commit %(tries)s times as '
                'conflicting with other transactions (%(conflict)s).')

    @property
    def solve_again(self):
        return True


class AllocationGroupClaimRefused(Conflict):
    """The allocation backend refused the claims of a solved group; it
    holds none of them.  ``node_ids`` are the nodes it could not have
    (the group may be solved again without them)."""
    _msg_fmt = '%(reason)s'

    def __init__(self, message=None, node_ids=(), **kwargs):
        super().__init__(message, **kwargs)
        self.node_ids = set(node_ids)


class ReservationRequired(NamesReservation):
    _msg_fmt = ('Node %(node)s is held by reservation %(reservation)s: a '
                'deploy of it must name that reservation in the node\'s '
                'instance_info.reservation_uuid (it has %(given)s).')
    _unnamed_fmt = ('Node %(node)s is reserved: a deploy of it must name '
                    'its reservation in the node\'s '
                    'instance_info.reservation_uuid (it has %(given)s).')


class ReservationNotVisible(Conflict):
    """A deploy by a caller who may not see the reservation the node's
    instance_info names (that reservation's UUID is never shown to it:
    access.ReservationSight)."""
    _msg_fmt = ('Node %(node)s is reserved: its instance_info.'
                'reservation_uuid names a reservation of another project, '
                'and only a caller who may see that reservation can deploy '
                'the node with it.')


class ReservationNotHolding(Conflict):
    _msg_fmt = ('Reservation %(reservation)s, named by the '
                'instance_info.reservation_uuid of node %(node)s, does not '
                'hold the node (its lease ended or it was deleted); the '
                'node is %(holder)s.')


class LeaseOnDeployedNode(Conflict):
    """A lease asked for on a hold whose node is out of
    states.LEASE_ALLOWED_STATES: allocations, reservations and groups
    alike.  ``hold`` is e.g. "allocation <uuid>"."""
    _msg_fmt = ('Cannot set a lease on %(hold)s: its node %(node)s is in '
                'provision state "%(state)s", and the hold of a deployed '
                'node has no lease (it ends at tear-down).')


class NodeChanged(Conflict):
    _msg_fmt = ('Node %(node)s changed while the request was processed: '
                '%(reason)s. Please retry.')


# 5xx

class TemporaryFailure(IronicAllocException):
    _msg_fmt = 'Resource temporarily unavailable, please retry.'
    code = http_client.SERVICE_UNAVAILABLE


class NoFreeConductorWorker(TemporaryFailure):
    _msg_fmt = 'Requested action cannot be performed due to lack of free ' \
               'conductor workers.'


class NoValidHost(TemporaryFailure):
    _msg_fmt = 'No valid host was found. Reason: %(reason)s'


class ConductorUnreachable(TemporaryFailure):
    _msg_fmt = ('The conductor did not answer in time (%(reason)s). The '
                'request may be retried.')


class PowerOffDisabled(InvalidState):
    _msg_fmt = ('Failed to set node power state to %(pstate)s: powering '
                'off node %(node)s is disabled (disable_power_off).')


class PowerStateFailure(IronicAllocException):
    _msg_fmt = ('The node did not reach power state %(pstate)s within '
                '%(timeout)s seconds.')


class MessageBrokerUnreachable(TemporaryFailure):
    _msg_fmt = ('The message broker is unreachable: %(reason)s. The '
                'request may be retried.')


class DatabaseUnavailable(TemporaryFailure):
    _msg_fmt = 'The database is unavailable: %(reason)s'


class AllocationBackendFailed(TemporaryFailure):
    """The allocation backend could not be used; the allocation fails with
    this text as its last_error."""
    _msg_fmt = '%(reason)s'


class LimitsUnavailable(TemporaryFailure):
    _msg_fmt = ('The limits of project %(project)s could not be read from '
                'Keystone. The request may be retried.')


class PlacementUnavailable(TemporaryFailure):
    _msg_fmt = 'Placement is unavailable: %(reason)s'


class PlacementRequestFailed(TemporaryFailure):
    # NOTE: an answer Placement was not expected to give (a 400 for a
    # request we built, a 5xx): ours to report, the caller's to retry.
    _msg_fmt = ('Placement answered %(method)s %(path)s with %(status)s: '
                '%(detail)s')

    @property
    def status(self):
        return self.kwargs.get('status')


class PlacementConflict(Conflict):
    """A 409 from Placement; ``error_code`` is its machine-readable code
    (``placement.concurrent_update``...), or None."""
    _msg_fmt = ('Placement refused %(method)s %(path)s (%(error_code)s): '
                '%(detail)s')

    @property
    def error_code(self):
        return self.kwargs.get('error_code')


class ResourceClassCollision(Conflict):
    _msg_fmt = ('Resource classes %(names)s all become the Placement class '
                '%(placement_class)s; nodes %(nodes)s are not synchronised '
                'until all but one are renamed.')
