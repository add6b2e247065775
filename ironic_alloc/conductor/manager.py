"""RPC endpoints of the conductor: thin, they lock, check and delegate."""

import functools

from oslo_db import exception as db_exc
from oslo_log import log
import oslo_messaging as messaging
from sqlalchemy import exc as sa_exc

from ironic_alloc.common import exception
from ironic_alloc.common import notifications
from ironic_alloc.common import states
from ironic_alloc.common import unavailable_log
from ironic_alloc.conductor import allocations
from ironic_alloc.conductor import groups
from ironic_alloc.conductor import leases
from ironic_alloc.conductor import nodes
from ironic_alloc.conductor import provisioning
from ironic_alloc.conductor import task
from ironic_alloc.objects import allocation as allocation_obj
from ironic_alloc.objects import node as node_obj

LOG = log.getLogger(__name__)

# Errors that are answers to the caller, not conductor faults: they are not
# logged with a traceback.
_EXPECTED = (exception.IronicAllocException,)

# A database this conductor cannot reach: an answer too (the API answers
# 503, or asks another conductor), sent with its own type, which the API
# recognises (conductor/rpcapi.py); logged once per interval per process
# (common/unavailable_log.py) instead of with a traceback per call.
_DATABASE_UNREACHABLE = (db_exc.DBConnectionError, sa_exc.OperationalError)

_UNAVAILABLE = unavailable_log.UnavailableLog(LOG)


def _endpoint(method):
    """An RPC endpoint whose errors of _EXPECTED and _DATABASE_UNREACHABLE
    go back to the caller without a traceback in this log."""
    expected = messaging.expected_exceptions(
        *(_EXPECTED + _DATABASE_UNREACHABLE))(method)

    @functools.wraps(method)
    def endpoint(*args, **kwargs):
        try:
            return expected(*args, **kwargs)
        except messaging.ExpectedException as exc:
            error = exc.exc_info[1]
            if not isinstance(error, _DATABASE_UNREACHABLE):
                raise
            answer = exc
        # NOTE: logged out of the except clause, where oslo.log would
        # repeat the error at the end of the line.
        _UNAVAILABLE.warning(
            'database unreachable',
            'Could not reach the database in RPC %(method)s; the caller '
            'gets the error: %(error)s',
            {'method': method.__name__,
             'error': unavailable_log.first_line(error)})
        raise answer
    return endpoint


class ConductorManager:
    """RPC endpoint; see rpcapi.ConductorAPI for the contract.

    :param host: the conductor's hostname (its node locks carry it).
    :param pool: the workers.WorkerPool running node actions.
    :param allocation_worker: the workers.AllocationWorker.
    :param backend: the allocation backend (conductor/backends).
    """

    # NOTE: must equal rpcapi.RPC_API_VERSION.  Messages of every 1.x
    # version are accepted: arguments added since 1.0 have defaults.
    RPC_API_VERSION = '1.4'
    target = messaging.Target(version=RPC_API_VERSION)

    def __init__(self, host, pool, allocation_worker, backend):
        self.host = host
        self.pool = pool
        self.allocation_worker = allocation_worker
        self.backend = backend

    @_endpoint
    def update_node(self, context, node_obj):
        changes = node_obj.obj_get_changes()
        changes.pop('traits', None)
        with task.node_lock(context, node_obj.id, self.host) as lock:
            nodes.check_reservation(context, lock.node, changes)
            nodes.check_update(lock.node, changes)
            node = lock.node
            if ('instance_uuid' in changes and not changes['instance_uuid']
                    and node.allocation_id):
                # NOTE: removing the instance removes its allocation.
                allocations.destroy(context, node.allocation_id,
                                    self.backend)
                node.refresh()
            node.update(changes)
            node.save()
        node.reservation = None
        node.obj_reset_changes(['reservation'])
        self.backend.node_changed(node.uuid)
        return node

    @_endpoint
    def destroy_node(self, context, node_id):
        with task.node_lock(context, node_id, self.host) as lock:
            nodes.check_destroy(lock.node)
            # NOTE: a node deleted in maintenance takes its allocation
            # along; the backend releases it after the rows are gone.
            claimed_by = None
            if lock.node.allocation_id:
                claimed_by = allocation_obj.Allocation.get_by_id(
                    context, lock.node.allocation_id).uuid
            lock.node.destroy()
            lock.handoff()  # the row is gone: nothing to release
        LOG.info('Node %s deleted', lock.node.uuid)
        if claimed_by is not None:
            self.backend.release(claimed_by)
        self.backend.node_changed(lock.node.uuid)

    @_endpoint
    def set_node_traits(self, context, node_id, traits):
        with task.node_lock(context, node_id, self.host) as lock:
            lock.node.set_traits(traits)
        self.backend.node_changed(lock.node.uuid)

    @_endpoint
    def add_node_trait(self, context, node_id, trait):
        with task.node_lock(context, node_id, self.host) as lock:
            lock.node.add_trait(trait)
        self.backend.node_changed(lock.node.uuid)

    @_endpoint
    def remove_node_trait(self, context, node_id, trait):
        with task.node_lock(context, node_id, self.host) as lock:
            lock.node.remove_trait(trait)
        self.backend.node_changed(lock.node.uuid)

    @_endpoint
    def do_provisioning_action(self, context, node_id, action,
                               configdrive=None):
        with task.node_lock(context, node_id, self.host) as lock:
            transition = provisioning.plan_action(lock.node, action)
            LOG.info('Node %(node)s: %(action)s from %(state)s',
                     {'node': lock.node.uuid, 'action': action,
                      'state': lock.node.provision_state})
            previous = (lock.node.provision_state,
                        lock.node.target_provision_state)
            if transition.working == transition.success:
                values = {'provision_state': transition.success,
                          'target_provision_state': None,
                          'last_error': None}
                lock.release(values)
                lock.handoff()
                self.backend.node_changed(lock.node.uuid)
                _notify_provision(context, lock.node, values, 'success',
                                  previous, action)
                return
            rollback = {'provision_state': lock.node.provision_state,
                        'target_provision_state':
                            lock.node.target_provision_state}
            if action == 'deploy':
                # NOTE: the deploy guard and the end of the hold's lease,
                # in the transaction that moves the node to deploying.
                leases.begin_deploy(lock.node, self.host,
                                    provisioning.start_values(transition))
            else:
                lock.node.update(provisioning.start_values(transition))
                lock.node.save()
            _notify_provision(context, lock.node, {}, 'start', previous,
                              action)
            self.pool.spawn_with_lock(
                lock, rollback, self._finish_provisioning, context, lock,
                action, transition)

    @_endpoint
    def change_node_power_state(self, context, node_id, new_state,
                                timeout=None):
        """:param timeout: since RPC 1.1; None from 1.0 callers."""
        provisioning.check_power_target(new_state)
        with task.node_lock(context, node_id, self.host) as lock:
            # NOTE: checked again under the lock: a PATCH setting
            # disable_power_off may have landed after the API's check.
            states.check_power_off_allowed(lock.node, new_state)
            lock.node.target_power_state = \
                provisioning.power_target(new_state)
            lock.node.save()
            node_obj.notify(context, lock.node, 'power_set', 'start',
                            notifications.CONDUCTOR_SERVICE,
                            to_power=new_state)
            self.pool.spawn_with_lock(
                lock, {'target_power_state': None}, self._finish_power,
                lock, new_state, timeout, context)

    def create_allocation(self, context, allocation_id, wait=None):
        """The row exists already; start working on it.

        :param wait: since RPC 1.2, sent with a call: seconds to wait for
            the work to end before answering.
        :returns: True when the work ended within ``wait``.
        """
        if not wait:
            self.allocation_worker.start(allocation_id)
            return False
        return self.allocation_worker.wait(allocation_id, wait)

    def create_allocation_group(self, context, group_id):
        """Since RPC 1.3: the group's rows exist already; start working on
        it (a cast)."""
        self.allocation_worker.start_group(group_id)

    def release_allocation_group(self, context, members):
        """Since RPC 1.4: the API deleted an allocation group; release
        what the backend holds for its members (a cast).

        :param members: [[allocation uuid, node id or None]].
        """
        groups.release_members(self.backend, members)

    @_endpoint
    def destroy_allocation(self, context, allocation_id):
        node_id = allocations.destroy(context, allocation_id, self.backend)
        if node_id is not None:
            self.backend.node_id_changed(node_id)

    # Workers (run on the pool, holding the node lock)

    def _finish_provisioning(self, context, lock, action, transition):
        node = lock.node
        previous = (node.provision_state, node.target_provision_state)
        status = 'end'

        def write_intermediate(values):
            node.update(values)
            node.save()

        try:
            values = provisioning.finish_values(node, action, transition,
                                                on_state=write_intermediate)
            if action == 'undeploy' and node.allocation_id:
                # NOTE: tear-down ends the allocation or the reservation
                # holding the node (rebuild keeps it).
                allocations.destroy(context, node.allocation_id,
                                    self.backend, node_states=None)
        except Exception as exc:
            LOG.exception('Node %(node)s: %(action)s failed',
                          {'node': node.uuid, 'action': action})
            values = {'provision_state': transition.failure,
                      'target_provision_state': None,
                      'last_error': '%s failed: %s' % (action, exc)}
            status = 'error'
        lock.release(values)
        self.backend.node_changed(node.uuid)
        _notify_provision(context, node, values, status, previous, action)
        LOG.info('Node %(node)s: %(action)s finished in %(state)s',
                 {'node': node.uuid, 'action': action,
                  'state': values['provision_state']})

    def _finish_power(self, lock, new_state, timeout=None, context=None):
        status = 'end'
        try:
            values = provisioning.power_values(new_state, timeout)
        except Exception as exc:
            LOG.exception('Node %s: power action failed', lock.node.uuid)
            values = {'target_power_state': None,
                      'last_error': 'Power action failed: %s' % exc}
            status = 'error'
        lock.release(values)
        self.backend.node_changed(lock.node.uuid)
        if notifications.enabled('error' if status == 'error' else 'info'):
            node = lock.node.obj_clone()
            node.update(values)
            node_obj.notify(context, node, 'power_set', status,
                            notifications.CONDUCTOR_SERVICE,
                            to_power=new_state)


def _notify_provision(context, node, values, status, previous, action):
    """Ironic's baremetal.node.provision_set.<status>: the node as the
    ``values`` just written leave it; ``previous`` is its (provision
    state, target) before the step; the event is the action's verb."""
    if not notifications.enabled('error' if status == 'error' else 'info'):
        return
    node = node.obj_clone()
    node.update(values)
    node_obj.notify(context, node, 'provision_set', status,
                    notifications.CONDUCTOR_SERVICE,
                    prev_state=previous[0], prev_target=previous[1],
                    event=action)
