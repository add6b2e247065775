"""RPC endpoints of the conductor: thin, they lock, check and delegate."""

from oslo_log import log
import oslo_messaging as messaging

from ironic_alloc.common import exception
from ironic_alloc.conductor import allocations
from ironic_alloc.conductor import nodes
from ironic_alloc.conductor import placement_claims
from ironic_alloc.conductor import provisioning
from ironic_alloc.conductor import task
from ironic_alloc.objects import allocation as allocation_obj
from ironic_alloc.objects import node as node_obj

LOG = log.getLogger(__name__)

# Errors that are answers to the caller, not conductor faults: they are not
# logged with a traceback.
_EXPECTED = (exception.IronicAllocException,)


class ConductorManager:
    """RPC endpoint; see rpcapi.ConductorAPI for the contract."""

    # NOTE: must equal rpcapi.RPC_API_VERSION.  Messages of every 1.x
    # version are accepted: arguments added since 1.0 have defaults.
    RPC_API_VERSION = '1.2'
    target = messaging.Target(version=RPC_API_VERSION)

    def __init__(self, service):
        self.service = service
        self.host = service.host

    @messaging.expected_exceptions(*_EXPECTED)
    def update_node(self, context, node_obj):
        changes = node_obj.obj_get_changes()
        changes.pop('traits', None)
        with task.node_lock(context, node_obj.id, self.host) as lock:
            nodes.check_update(lock.node, changes)
            node = lock.node
            if ('instance_uuid' in changes and not changes['instance_uuid']
                    and node.allocation_id):
                # NOTE: removing the instance removes its allocation.
                allocations.destroy(context, node.allocation_id,
                                    self.service.placement_client)
                node.refresh()
            node.update(changes)
            node.save()
        node.reservation = None
        node.obj_reset_changes(['reservation'])
        self.service.sync_node_later(node.uuid)
        return node

    @messaging.expected_exceptions(*_EXPECTED)
    def destroy_node(self, context, node_id):
        with task.node_lock(context, node_id, self.host) as lock:
            nodes.check_destroy(lock.node)
            # NOTE: a node deleted in maintenance takes its allocation
            # along; its Placement claim goes after the rows.
            claimed_by = None
            if lock.node.allocation_id:
                claimed_by = allocation_obj.Allocation.get_by_id(
                    context, lock.node.allocation_id).uuid
            lock.node.destroy()
            lock.handoff()  # the row is gone: nothing to release
        LOG.info('Node %s deleted', lock.node.uuid)
        self._release_claim(claimed_by)
        self.service.sync_node_later(lock.node.uuid)

    @messaging.expected_exceptions(*_EXPECTED)
    def set_node_traits(self, context, node_id, traits):
        with task.node_lock(context, node_id, self.host) as lock:
            lock.node.set_traits(traits)
        self.service.sync_node_later(lock.node.uuid)

    @messaging.expected_exceptions(*_EXPECTED)
    def add_node_trait(self, context, node_id, trait):
        with task.node_lock(context, node_id, self.host) as lock:
            lock.node.add_trait(trait)
        self.service.sync_node_later(lock.node.uuid)

    @messaging.expected_exceptions(*_EXPECTED)
    def remove_node_trait(self, context, node_id, trait):
        with task.node_lock(context, node_id, self.host) as lock:
            lock.node.remove_trait(trait)
        self.service.sync_node_later(lock.node.uuid)

    @messaging.expected_exceptions(*_EXPECTED)
    def do_provisioning_action(self, context, node_id, action,
                               configdrive=None):
        with task.node_lock(context, node_id, self.host) as lock:
            transition = provisioning.plan_action(lock.node, action)
            LOG.info('Node %(node)s: %(action)s from %(state)s',
                     {'node': lock.node.uuid, 'action': action,
                      'state': lock.node.provision_state})
            if transition.working == transition.success:
                lock.release({'provision_state': transition.success,
                              'target_provision_state': None,
                              'last_error': None})
                lock.handoff()
                self.service.sync_node_later(lock.node.uuid)
                return
            rollback = {'provision_state': lock.node.provision_state,
                        'target_provision_state':
                            lock.node.target_provision_state}
            lock.node.update(provisioning.start_values(transition))
            lock.node.save()
            self.service.spawn_with_lock(
                lock, rollback, self._finish_provisioning, context, lock,
                action, transition)

    @messaging.expected_exceptions(*_EXPECTED)
    def change_node_power_state(self, context, node_id, new_state,
                                timeout=None):
        """:param timeout: since RPC 1.1; None from 1.0 callers."""
        provisioning.check_power_target(new_state)
        with task.node_lock(context, node_id, self.host) as lock:
            lock.node.target_power_state = \
                provisioning.power_target(new_state)
            lock.node.save()
            self.service.spawn_with_lock(
                lock, {'target_power_state': None}, self._finish_power,
                lock, new_state, timeout)

    def create_allocation(self, context, allocation_id, wait=None):
        """The row exists already; start working on it.

        :param wait: since RPC 1.2, sent with a call: seconds to wait for
            the work to end before answering.
        :returns: True when the work ended within ``wait``.
        """
        if not wait:
            self.service.start_allocation(allocation_id)
            return False
        return self.service.wait_for_allocation(allocation_id, wait)

    @messaging.expected_exceptions(*_EXPECTED)
    def destroy_allocation(self, context, allocation_id):
        node_id = allocations.destroy(context, allocation_id,
                                      self.service.placement_client)
        if node_id is not None:
            self._sync_node_id(context, node_id)

    # Placement ([allocation]backend = placement; no-ops otherwise)

    def _release_claim(self, allocation_uuid):
        if allocation_uuid and self.service.placement_client is not None:
            placement_claims.release_quietly(self.service.placement_client,
                                             allocation_uuid)

    def _sync_node_id(self, context, node_id):
        if self.service.placement_client is None:
            return
        for node_uuid in node_obj.Node.uuids_by_id(context,
                                                   [node_id]).values():
            self.service.sync_node_later(node_uuid)

    # Workers (run on the service's pool, holding the node lock)

    def _finish_provisioning(self, context, lock, action, transition):
        node = lock.node

        def write_intermediate(values):
            node.update(values)
            node.save()

        try:
            values = provisioning.finish_values(node, action, transition,
                                                on_state=write_intermediate)
            if action == 'undeploy' and node.allocation_id:
                # NOTE: tear-down ends the allocation (rebuild keeps it).
                allocations.destroy(context, node.allocation_id,
                                    self.service.placement_client,
                                    node_states=None)
        except Exception as exc:
            LOG.exception('Node %(node)s: %(action)s failed',
                          {'node': node.uuid, 'action': action})
            values = {'provision_state': transition.failure,
                      'target_provision_state': None,
                      'last_error': '%s failed: %s' % (action, exc)}
        lock.release(values)
        self.service.sync_node_later(node.uuid)
        LOG.info('Node %(node)s: %(action)s finished in %(state)s',
                 {'node': node.uuid, 'action': action,
                  'state': values['provision_state']})

    def _finish_power(self, lock, new_state, timeout=None):
        try:
            values = provisioning.power_values(new_state, timeout)
        except Exception as exc:
            LOG.exception('Node %s: power action failed', lock.node.uuid)
            values = {'target_power_state': None,
                      'last_error': 'Power action failed: %s' % exc}
        lock.release(values)
        self.service.sync_node_later(lock.node.uuid)
