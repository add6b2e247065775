"""The one database interface of ironic_alloc.

Objects and the conductor's conditional writes go through
``get_instance()``; nothing else opens sessions.  Every method is
implemented by ``ironic_alloc.db.sqlalchemy.api.Connection``.
"""

import abc

from oslo_db import api as db_api

from ironic_alloc.conf import CONF

_BACKEND_MAPPING = {'sqlalchemy': 'ironic_alloc.db.sqlalchemy.api'}
IMPL = db_api.DBAPI.from_config(CONF, backend_mapping=_BACKEND_MAPPING,
                                lazy=True)


def get_instance():
    """Return the database API object (a Connection)."""
    return IMPL


class Connection(metaclass=abc.ABCMeta):
    """Base class for storage system connections."""

    # Nodes

    @abc.abstractmethod
    def create_node(self, values):
        """Create a node (and its traits, given as ``values['traits']``).

        :returns: the node model with its traits loaded.
        :raises: NodeAlreadyExists, DuplicateName, InstanceAssociated,
            ChassisNotFound when ``chassis_uuid`` names no chassis,
            NodeParentInvalid when ``parent_node`` names no other node.
        """

    @abc.abstractmethod
    def get_node_by_id(self, node_id):
        """:raises: NodeNotFound."""

    @abc.abstractmethod
    def get_node_by_uuid(self, node_uuid):
        """:raises: NodeNotFound."""

    @abc.abstractmethod
    def get_node_by_name(self, node_name):
        """:raises: NodeNotFound."""

    @abc.abstractmethod
    def get_node_by_instance(self, instance_uuid):
        """:raises: NodeNotFound."""

    @abc.abstractmethod
    def get_node_list(self, filters=None, limit=None, marker=None,
                      sort_key=None, sort_dir=None):
        """Return one page of nodes.

        :param filters: dict of filters: provision_state (str or list),
            resource_class, maintenance (bool), associated (bool), owner,
            lessee, project (owner or lessee), conductor_group, driver,
            reserved (bool), reserved_by_any_of (list), fault,
            retired (bool), description_contains, uuid_in (list),
            id_in (list), instance_uuid, chassis_uuid, shard_in (list),
            sharded (bool: whether the node has a shard), parent_node
            (the UUID of the parent), has_parent (bool), instance_name.
        :param marker: the id of the last node of the previous page.
        :raises: InvalidParameterValue for an unknown sort key.
        """

    @abc.abstractmethod
    def get_node_resource_classes(self):
        """The distinct resource classes of all nodes (None left out)."""

    @abc.abstractmethod
    def get_shard_counts(self):
        """[(shard, number of nodes)] for every shard, None (the nodes
        without a shard) included, in one query; unordered."""

    @abc.abstractmethod
    def update_node(self, node_id, values):
        """Update a node; ``values['traits']`` is not accepted here.

        :raises: NodeNotFound, DuplicateName, InstanceAssociated,
            ChassisNotFound when ``chassis_uuid`` names no chassis,
            NodeParentInvalid when ``parent_node`` names no node, the node
            itself or one of its descendants.
        """

    @abc.abstractmethod
    def destroy_node(self, node_id):
        """Delete a node and its traits.  :raises: NodeNotFound."""

    @abc.abstractmethod
    def reserve_node(self, tag, node_id):
        """Lock a node for a conductor with one conditional UPDATE.

        :param tag: the conductor hostname stored in ``reservation``.
        :returns: the node.
        :raises: NodeLocked when another host holds it, NodeNotFound.
        """

    @abc.abstractmethod
    def release_node(self, tag, node_id, values=None):
        """Unlock a node held by ``tag``, applying ``values`` atomically.

        :returns: True when the lock was ours and is released.
        """

    @abc.abstractmethod
    def set_node_traits(self, node_id, traits):
        """Replace a node's traits.  :raises: NodeNotFound."""

    @abc.abstractmethod
    def add_node_trait(self, node_id, trait):
        """Add one trait (idempotent).  :raises: NodeNotFound."""

    @abc.abstractmethod
    def delete_node_trait(self, node_id, trait):
        """:raises: NodeNotFound, NodeTraitNotFound."""

    @abc.abstractmethod
    def release_dead_reservations(self, timeout, abandoned_states,
                                  hostname=None):
        """Release node locks whose holder is dead, failing its actions.

        :param timeout: heartbeat age after which a conductor is dead.
        :param abandoned_states: dict mapping a working provision state to
            the state a node abandoned in it ends in.
        :param hostname: release the locks of this host instead (a
            restarted conductor releasing what its previous run held).
        :returns: list of (node uuid, holder, provision state) released.
        """

    # Chassis

    @abc.abstractmethod
    def create_chassis(self, values):
        """Create a chassis.  :raises: ChassisAlreadyExists."""

    @abc.abstractmethod
    def get_chassis_by_id(self, chassis_id):
        """:raises: ChassisNotFound."""

    @abc.abstractmethod
    def get_chassis_by_uuid(self, chassis_uuid):
        """:raises: ChassisNotFound."""

    @abc.abstractmethod
    def get_chassis_list(self, limit=None, marker=None, sort_key=None,
                         sort_dir=None):
        """One page of chassis.

        :param marker: the id of the last chassis of the previous page.
        :raises: InvalidParameterValue for an unknown sort key.
        """

    @abc.abstractmethod
    def update_chassis(self, chassis_id, values):
        """Change the description or extra of a chassis.

        :raises: ChassisNotFound.
        """

    @abc.abstractmethod
    def destroy_chassis(self, chassis_id):
        """Delete a chassis that no node names.

        The chassis row is locked first, and node writes naming a chassis
        lock it too (create_node, update_node), so a node cannot join a
        chassis while it is being deleted.

        :raises: ChassisNotFound, ChassisNotEmpty.
        """

    # Allocations

    @abc.abstractmethod
    def create_allocation(self, values, limits=None):
        """Create an allocation (normally state allocating).

        :param limits: common.limits.ProjectLimits of the allocation's
            owner, or None: the owner's holds are counted under its lock,
            in the transaction of the insert, and one more must fit.
        :raises: AllocationAlreadyExists, AllocationDuplicateName,
            InstanceAssociated when the uuid is a node's instance_uuid,
            ProjectLimitExceeded (nothing is written).
        """

    @abc.abstractmethod
    def backfill_allocation(self, values, node_id, node_uuid, node_states,
                            limits=None):
        """Create an active allocation for an already deployed node.

        One transaction: the node must still be in ``node_states``, have no
        allocation and no other instance, and must not be locked by a
        conductor (the guard of every reservation).  Nothing is written
        when it fails.

        :param node_uuid: the node's UUID, for the errors.
        :param limits: as for create_allocation.
        :raises: NodeLocked (409) while a conductor holds the node,
            NodeChanged (409) when it changed since the caller read it, and
            the create_allocation errors.
        """

    @abc.abstractmethod
    def get_allocation_by_id(self, allocation_id):
        """:raises: AllocationNotFound."""

    @abc.abstractmethod
    def get_allocation_by_uuid(self, allocation_uuid):
        """:raises: AllocationNotFound."""

    @abc.abstractmethod
    def get_allocation_by_name(self, name):
        """:raises: AllocationNotFound."""

    @abc.abstractmethod
    def get_allocation_with_node_uuid(self, **criteria):
        """An allocation and its node's UUID, in one query.

        :param criteria: exactly one of ``id``, ``uuid`` or ``name``.
        :returns: (allocation, node UUID or None when it has no node).
        :raises: AllocationNotFound.
        """

    @abc.abstractmethod
    def get_allocation_list(self, filters=None, limit=None, marker=None,
                            sort_key=None, sort_dir=None):
        """One page of allocations.

        :param filters: state, resource_class, node_id, owner,
            conductor_affinity, id_in.
        :param marker: id of the last allocation of the previous page.
        """

    @abc.abstractmethod
    def get_node_uuids(self, node_ids):
        """{id: uuid} of the given nodes; unknown ids are left out."""

    @abc.abstractmethod
    def get_allocation_uuids(self, allocation_ids):
        """{id: uuid} of the given allocations; unknown ids are left out."""

    @abc.abstractmethod
    def update_allocation(self, allocation_id, values):
        """Update user fields (name, extra, expires_at).  A lease end (a
        time) is written only while the allocation's node is in
        states.LEASE_ALLOWED_STATES (judged in the write).

        :raises: AllocationNotFound, AllocationDuplicateName,
            LeaseOnDeployedNode.
        """

    @abc.abstractmethod
    def destroy_allocation(self, allocation_id, node_states=None):
        """Delete an allocation and free its node in one transaction.

        :param node_states: when given, the node must be in one of these
            provision states or in maintenance.
        :returns: (uuid, node id or None) of the deleted allocation.
        :raises: AllocationNotFound, InvalidState.
        """

    # Reservations (allocation rows of kind 'reservation', extension 1.2)

    @abc.abstractmethod
    def create_reservation(self, values, node_uuids, ttl, project=None,
                           limits=None):
        """Reserve the first node of ``node_uuids``, in their order, that
        can be reserved.

        One transaction reads the database's time and the nodes, inserts
        the reservation's row (kind 'reservation', state active, its lease
        ending ``ttl`` seconds after that time) and binds a node to it
        (allocation_id, and instance_uuid = values['instance_uuid']) by
        one guarded UPDATE: unlocked, passing the picking rule and, with
        ``project``, owned or leased by it.  Only the nodes that could be
        reserved when read are tried, in order, until one is bound.

        :param values: uuid (optional), instance_uuid, owner.
        :param ttl: seconds of the lease from the database's clock.
        :param project: the project of a project-scoped caller, who may
            reserve only nodes it owns or leases (others are "not found").
        :param limits: ProjectLimits of the owner, or None: counted as for
            create_allocation, the reservation's class being its node's;
            a node whose class is at its limit is not tried.
        :returns: the new row, with ``node_uuid``.
        :raises: NoNodeReservable with the reason of every node,
            InstanceAssociated when another node has the instance,
            AllocationAlreadyExists for a taken uuid,
            ProjectLimitExceeded when every node that could be reserved
            is of a class at its limit, or the total is reached.
        """

    @abc.abstractmethod
    def count_project_holds(self, project):
        """{resource class: holds} of ``project`` (allocations in any
        state and reservations, a reservation of its node's class)."""

    @abc.abstractmethod
    def get_reservation_by_uuid(self, reservation_uuid):
        """A reservation with its node's UUID (``node_uuid``).

        :raises: ReservationNotFound (also for an allocation's uuid).
        """

    @abc.abstractmethod
    def get_reservation_owners(self, reservation_uuids):
        """{uuid: owner} of the given reservations, in one query; other
        uuids (an allocation's, unknown ones) are left out."""

    @abc.abstractmethod
    def get_reservation_list(self, filters=None, limit=None, marker=None):
        """One page of reservations (with ``node_uuid``) in id order.

        :param filters: instance_uuid, node_id, owner.
        :param marker: the id of the last reservation of the previous page.
        """

    @abc.abstractmethod
    def update_reservation_expiry(self, reservation_id, expires_at):
        """Set the end of a reservation's lease, only while its node is
        in states.LEASE_ALLOWED_STATES (judged in the write).

        :returns: the row, with ``node_uuid``.
        :raises: ReservationNotFound, LeaseOnDeployedNode.
        """

    @abc.abstractmethod
    def destroy_reservation(self, reservation_id, node_states=None):
        """Delete a reservation and free its node (allocation_id and
        instance_uuid) in one transaction.

        :param node_states: when given, the node must be in one of these
            provision states or in maintenance.
        :returns: (uuid, node id or None) of the deleted reservation.
        :raises: ReservationNotFound, InvalidState.
        """

    @abc.abstractmethod
    def get_expired_holds(self, limit):
        """Ids of at most ``limit`` holds (allocations and reservations)
        whose lease ended by the database clock and whose node no
        conductor is changing, for release_expired_hold(), the oldest
        lease first.  Members of allocation groups are never among them:
        they expire with their group (get_expired_groups()).
        """

    @abc.abstractmethod
    def release_expired_hold(self, hold_id):
        """Delete a hold whose lease ended and free its node, in one
        transaction, as destroy_allocation() does; only while its lease
        has still passed (by the database clock), its node is not locked
        by a conductor and is in states.LEASE_ALLOWED_STATES (in
        maintenance or not), all judged in the DELETE.  When the node is
        in another state (deployed), the ended lease is removed instead.

        :returns: the hold (id, uuid, kind, node_id, node_uuid,
            node_state, expires_at, lease_cleared: whether the lease was
            removed rather than the hold released), or None when this
            call changed nothing (another conductor did, the lease was
            renewed or cleared, the node is locked).
        """

    @abc.abstractmethod
    def get_expired_groups(self, limit):
        """Ids of at most ``limit`` allocation groups whose lease ended
        by the database clock and whose members' nodes no conductor is
        changing, the oldest lease first.
        """

    @abc.abstractmethod
    def release_expired_group(self, group_id):
        """Delete a group whose lease ended with every member, freeing
        their nodes, in one transaction (as destroy_allocation_group()
        does); only while its lease has still passed by the database
        clock and every member's node may be freed (the rule of
        release_expired_hold(), in each member's DELETE), else nothing
        changes.  When a member's node is deployed, the ended lease of the
        group and its members is removed instead.

        :returns: the group (id, uuid, expires_at, released: the members
            released as (uuid, node_id, node_uuid), lease_cleared, and
            deployed: [(node uuid, provision state)] when the lease was
            removed), or None when this call changed nothing (another
            conductor did, the lease was renewed or cleared, a node is
            locked).
        """

    @abc.abstractmethod
    def update_allocation_group_lease(self, group_id, expires_at):
        """Set the lease end of a group and of all its members (None: no
        lease), in one transaction; a time only while every member's node
        is in states.LEASE_ALLOWED_STATES (judged in the write).

        :returns: the group's row.
        :raises: AllocationGroupNotFound, LeaseOnDeployedNode.
        """

    @abc.abstractmethod
    def begin_deploy(self, node_id, host, values, check):
        """Start a deploy: write ``values`` to the node locked by
        ``host`` and clear the lease of the node's hold, in one
        transaction; when the hold is a member of an allocation group,
        the lease of the whole group (the group and all its members).

        :param check: ``check(node, hold)``, called inside the
            transaction with the locked node row (uuid, allocation_id,
            instance_info) and its locked hold row (uuid, kind,
            instance_uuid, expires_at) or None; an exception it raises
            rolls the transaction back.
        :returns: the node model.
        :raises: NodeNotFound, NodeLocked, NodeChanged, what ``check``
            raises.
        """

    @abc.abstractmethod
    def reading(self):
        """A context manager under which this thread's reads share one
        read transaction (one connection, one begin and end) instead of
        one each.  Writes inside it are refused.
        """

    @abc.abstractmethod
    def writing(self):
        """A context manager under which this thread's reads and writes
        share one write transaction, committed at its end (rolled back on
        an exception), instead of one each.
        """

    @abc.abstractmethod
    def get_allocation_candidates(self, criteria, limit, pivot=None,
                                  name=None):
        """Ids of nodes matching an allocation, in one indexed query.

        :param criteria: dict with resource_class, traits (the required
            ones), candidate_uuids, owner, and optionally forbidden_traits,
            any_of_traits (list of lists of traits) and match (see
            conductor/allocations.criteria_of).
        :param pivot: a uuid; nodes are returned in uuid order starting at
            it, wrapping around, so concurrent allocations start at
            different places of the index.
        :param name: return only the node with this name.
        :returns: list of node ids.
        """

    @abc.abstractmethod
    def explain_no_candidates(self, criteria):
        """Which constraint left an allocation with no candidate.  With
        an owner, over the nodes the owner owns or leases only: the
        sentence is shown to the owner's project.

        :returns: a sentence for the allocation's last_error.
        """

    @abc.abstractmethod
    def explain_allocation(self, criteria, examples=0, project=None):
        """The funnel of an allocation's criteria, writing nothing.

        Starts from the nodes of the resource class; each step is one
        constraint of the search (statements.candidate_groups), in order,
        and counts the nodes it removes from those the steps before left.
        The counts come from the node tallies (models.NODE_TALLIES), or,
        for criteria naming candidates, from one pass over the nodes.

        :param examples: how many UUIDs of matching nodes to return.
        :param project: count only the nodes this project owns or leases.
        :returns: dict with resource_class, nodes (the start), steps (list
            of dicts: step, value, removed, remaining, description),
            matching_nodes, examples (UUIDs) and reason (the sentence of
            explain_no_candidates()).
        """

    @abc.abstractmethod
    def refresh_node_matching(self, after_id, limit):
        """Write again, from their properties and trait rows, the
        normalised matching columns and capability rows of at most
        ``limit`` nodes of ids above ``after_id``, one transaction per
        node: what a process of a release before the matching language
        wrote without them.

        :returns: the ids of the nodes refreshed, in order (empty when
            none was left).
        """

    @abc.abstractmethod
    def fold_node_tallies(self, limit):
        """Add the oldest changes of node tallies (at most ``limit``) to
        the tallies and delete them, one fold at a time across conductors.

        :returns: the number of changes folded (0 when there were none).
        """

    @abc.abstractmethod
    def reserve_node_for_allocation(self, allocation_id, conductor_id,
                                    node_id, criteria):
        """Bind a node to an allocation, or do nothing.

        One transaction of two conditional UPDATEs: the allocation must be
        allocating and owned by ``conductor_id``; the node must still match
        every criterion and be free and unlocked.

        :returns: True when the node was reserved, False when the node was
            no longer a candidate.
        :raises: AllocationLost when the allocation was deleted, finished
            or taken over.
        """

    @abc.abstractmethod
    def fail_allocation(self, allocation_id, conductor_id, last_error,
                        explanation=None):
        """Set state error, conditional on ownership.

        :param explanation: the funnel of explain_allocation(), kept with
            the allocation.

        :returns: False when the allocation is no longer ours.
        """

    @abc.abstractmethod
    def take_over_allocation(self, allocation_id, old_conductor_id,
                             new_conductor_id):
        """Conditional UPDATE of conductor_affinity from old to new.

        :returns: True for the one conductor that wins.
        """

    # Allocation groups (extension 1.3)

    @abc.abstractmethod
    def create_allocation_group(self, values, members, released_ids,
                                limits=None):
        """Insert a group (state allocating) and its new members' rows in
        one transaction.

        :param values: the group's columns.
        :param members: the columns of every new member's allocation
            (state allocating); group_id is set here.
        :param released_ids: ids of the allocations the group releases or
            hands over, which must not belong to an allocating group.
        :param limits: common.limits.ProjectLimits of the members' owners
            (a list): every new member counts as one hold of its owner,
            checked under the project's lock.
        :returns: the group's row.
        :raises: AllocationGroupDuplicateName, AllocationGroupAlreadyExists,
            AllocationDuplicateName, AllocationAlreadyExists,
            InstanceAssociated, AllocationInAllocatingGroup,
            ProjectLimitExceeded; nothing is written then.
        """

    @abc.abstractmethod
    def get_allocation_group(self, **criteria):
        """A group's row by one of id, uuid or name.

        :raises: AllocationGroupNotFound.
        """

    @abc.abstractmethod
    def get_allocation_group_uuids(self, group_ids):
        """{id: uuid} of the given groups."""

    @abc.abstractmethod
    def get_allocation_group_members(self, group_id):
        """The allocation rows of a group (with ``node_uuid``), by id."""

    @abc.abstractmethod
    def get_allocation_groups_members(self, group_ids):
        """{group id: its allocation rows (with ``node_uuid``), by id}
        for every id of ``group_ids``, in one query."""

    @abc.abstractmethod
    def get_allocation_group_list(self, filters=None, limit=None,
                                  marker=None):
        """A page of groups in id order; filters: state, owner."""

    @abc.abstractmethod
    def commit_allocation_group(self, group_id, conductor_id, plan,
                                node_states):
        """Make an allocating group active in one transaction, or change
        nothing.

        :param plan: dict of ``releases`` (dicts: uuid, allocation_id),
            ``handovers`` (dicts: uuid, allocation_id, from_id, from_uuid,
            node_id), ``new`` (dicts: uuid, allocation_id, node_id,
            criteria: the reservation's guard) and ``names`` ((allocation
            id, name) written after the deletions).
        :param node_states: provision states in which a released
            allocation's node may be freed (any in maintenance).
        :raises: AllocationGroupLost when the group is no longer
            allocating and owned by ``conductor_id``;
            AllocationGroupCommitFailed naming the member (and the node
            that changed underneath, if solving again may help);
            AllocationGroupCommitConflict when the database refused the
            transaction as a conflict (a deadlock) every time it was
            retried.
        """

    @abc.abstractmethod
    def fail_allocation_group(self, group_id, conductor_id, last_error,
                              explanation=None):
        """Set the group and its allocating members to error, conditional
        on the group being allocating and owned by ``conductor_id``.

        :returns: False when the group is no longer ours.
        """

    @abc.abstractmethod
    def destroy_allocation_group(self, group_id, node_states=None):
        """Delete every member (freeing its node as destroy_allocation
        does) and the group, in one transaction.

        :returns: (group uuid, [(member uuid, node id or None)]).
        :raises: AllocationGroupNotFound, InvalidState (nothing deleted).
        """

    @abc.abstractmethod
    def get_allocating_group_ids(self, conductor_id):
        """Ids of the allocating groups a conductor owns."""

    @abc.abstractmethod
    def get_orphan_allocation_groups(self, alive_ids):
        """(id, conductor_affinity) of allocating groups whose owner is
        not among ``alive_ids``."""

    @abc.abstractmethod
    def take_over_allocation_group(self, group_id, old_conductor_id,
                                   new_conductor_id):
        """Move an allocating group and its allocating members from the
        old conductor to the new one, in one conditional transaction.

        :returns: True for the one conductor that wins.
        """

    @abc.abstractmethod
    def count_allocations_by_state(self):
        """[(state, kind, count)] of the allocations table, one query."""

    @abc.abstractmethod
    def get_allocating_ids(self, conductor_id):
        """Ids of allocating allocations owned by a conductor, outside
        groups (a group's members are driven with their group)."""

    @abc.abstractmethod
    def get_orphan_allocations(self, alive_ids):
        """(id, conductor_affinity) of allocating allocations outside
        groups whose owner is not among ``alive_ids``."""

    @abc.abstractmethod
    def get_long_allocating(self, older_than):
        """Allocations in state allocating created more than
        ``older_than`` seconds ago (database clock), oldest first.

        :returns: rows (uuid, created_at, conductor_affinity).
        """

    # Purge: one rule each for what may be deleted, shared by the
    # conductor's periodic purge and ``ironic-alloc-dbsync purge``.  Ages
    # are measured with the database clock; each batch is one
    # transaction whose DELETE checks the rule again, so a row that
    # changed since it was listed stays.

    @abc.abstractmethod
    def get_purgeable_error_allocations(self, older_than, limit,
                                        after_id=0):
        """The error allocations purge_error_allocations() would delete:
        in state error, not updated for ``older_than`` seconds, bound to
        no node, and in no allocation group (a group's members go with
        their group, purge_error_groups()).

        :returns: up to ``limit`` rows (id, uuid, updated_at), in id
            order, of ids above ``after_id``.
        """

    @abc.abstractmethod
    def purge_error_allocations(self, older_than, batch_size=1000):
        """Delete the error allocations get_purgeable_error_allocations()
        lists, ``batch_size`` rows per transaction.

        :returns: the number deleted.
        """

    @abc.abstractmethod
    def get_purgeable_error_groups(self, older_than, limit, after_id=0):
        """The allocation groups purge_error_groups() would delete: in
        state error, not updated for ``older_than`` seconds, and with no
        member bound to a node.

        :returns: up to ``limit`` rows (id, uuid, updated_at, members: how
            many allocations it has), in id order, of ids above
            ``after_id``.
        """

    @abc.abstractmethod
    def purge_error_groups(self, older_than, batch_size=1000):
        """Delete the groups get_purgeable_error_groups() lists with
        their members, ``batch_size`` groups per transaction (a group
        and its members always in the same one).

        :returns: (groups deleted, member allocations deleted).
        """

    @abc.abstractmethod
    def get_purgeable_conductors(self, older_than, alive_timeout, limit,
                                 after_id=0):
        """The conductor rows purge_conductors() would delete: no
        heartbeat for ``older_than`` seconds, not alive by the take-over
        rule (online with a heartbeat younger than ``alive_timeout``),
        owning no allocating allocation and holding no node lock.

        :returns: up to ``limit`` rows (id, hostname, heartbeat_at), in
            id order, of ids above ``after_id``.
        """

    @abc.abstractmethod
    def purge_conductors(self, older_than, alive_timeout, batch_size=1000):
        """Delete the conductor rows get_purgeable_conductors() lists,
        ``batch_size`` rows per transaction.

        :returns: the number deleted.
        """

    # Conductors

    @abc.abstractmethod
    def register_conductor(self, hostname, conductor_group):
        """Register a conductor process under a new row id.

        A previous row of the same hostname is removed: its allocations are
        then owned by a dead id and the new process takes them over with
        the same guarded UPDATE any other conductor would use.

        :returns: the conductor model.
        """

    @abc.abstractmethod
    def touch_conductor(self, conductor_id):
        """Write a heartbeat with the database clock.

        :returns: False when the row is gone (another process of this host
            registered since), True otherwise.
        """

    @abc.abstractmethod
    def unregister_conductor(self, conductor_id):
        """Mark a conductor offline."""

    @abc.abstractmethod
    def get_conductor(self, hostname):
        """:raises: ConductorNotFound."""

    @abc.abstractmethod
    def get_conductor_list(self, limit=None, marker=None, sort_key=None,
                           sort_dir=None):
        """Return conductor models."""

    @abc.abstractmethod
    def get_alive_conductors(self, timeout, conductor_group=None):
        """Conductors online whose heartbeat is younger than ``timeout``.

        Ages are computed with the database server's clock.
        :returns: list of conductor models.
        """

    @abc.abstractmethod
    def get_database_time(self):
        """The database server's current time (naive UTC)."""

    # Processes

    @abc.abstractmethod
    def connect_on_demand(self):
        """Connect at each request's first query, without start-up retries.

        For API processes, called before their first request: oslo.db
        otherwise tests the connection when it creates the engine and
        retries ``[database]max_retries`` times, ``retry_interval`` apart,
        so a process whose first request comes during a database outage
        would hold that request (and every one queued behind the engine's
        creation) instead of answering 503.  A no-op once the engine
        exists.
        """
