"""The interface every allocation backend implements."""

import abc

from ironic_alloc.db import api as db_api


class AllocationBackend(metaclass=abc.ABCMeta):
    """Where allocations find and claim their nodes.

    One instance per conductor process, made by ``backends.load()`` from
    ``[allocation]backend``; callers use it without asking which one it
    is.  Whatever the backend, the database stays the truth of who holds
    a node: a reservation is always the guarded UPDATE of the database
    API, and a backend only adds its own bookkeeping around it.
    """

    name = None

    def __init__(self):
        self.dbapi = db_api.get_instance()

    @classmethod
    def check_configuration(cls, conf):
        """The backend's settings, checked without contacting anything
        (for ``ironic-alloc-status upgrade check``).

        :returns: (problems, summary): problems are (fatal, message)
            pairs, fatal when a conductor could not work with them; the
            summary says what was checked.
        """
        return [], 'nothing to check'

    # Life cycle of the background work

    def start(self):
        """Start background work (called once, before any other call)."""

    def stop(self, graceful=True):
        """Stop background work; with ``graceful`` let queued work end."""

    def periodic_tasks(self, reloading=False):
        """The backend's periodic work.

        :param reloading: the tasks are restarted for new intervals, not
            started with the conductor.
        :returns: list of (spacing in seconds as configured, 0 when
            disabled; callable; run at once).
        """
        return []

    # Allocations

    def prefetch(self, allocation, criteria):
        """Read what reserve() needs first, inside the read transaction of
        the allocation (one connection check-out for both).

        :returns: an opaque value for reserve(), or None.
        """
        return None

    @abc.abstractmethod
    def reserve(self, context, allocation, criteria, conductor_id,
                prefetched):
        """Pick a node for ``allocation`` and reserve it.

        :param criteria: from allocations.criteria_of().
        :param prefetched: what prefetch() returned.
        :returns: the id of the reserved node, or None when no candidate
            could be had.
        :raises: AllocationLost when the allocation was deleted or taken
            over meanwhile; AllocationBackendFailed when the backend
            could not be used.
        """

    def release(self, allocation_uuid):
        """Release what the backend holds for an allocation that is gone
        or failed.  Never raises: a release that fails is repaired by the
        backend's periodic work."""

    def explain(self, criteria):
        """Why no node could be picked, in one sentence for last_error."""
        return self.dbapi.explain_no_candidates(criteria)

    # Keeping external state in step

    def node_changed(self, node_uuid):
        """A node changed (or was deleted): bring any state kept outside
        the database in line, soon and best effort."""

    def node_id_changed(self, node_id):
        """node_changed() for a node known by its id."""

    # Allocation groups (conductor/groups.py)

    def unclaimable(self, context, node_ids):
        """The nodes among ``node_ids`` (candidates of a group) that the
        backend knows it could not claim now; a group's search skips
        them."""
        return set()

    def claim_group(self, context, plan, rows):
        """Claim outside the database, all or nothing, what a solved
        group's plan gives (groups._plan): new members' nodes, hand-overs
        and releases.  Called before the group's database commit.

        :param rows: {member uuid: allocation} of the new and hand-over
            members.
        :returns: an opaque value for release_group_claims(), or None.
        :raises: AllocationGroupClaimRefused (nothing claimed; the group
            may be solved again without its ``node_ids``),
            AllocationBackendFailed.
        """
        return None

    def release_group_claims(self, claims):
        """Undo claim_group() when the commit did not happen, restoring
        what was held before.  Never raises."""

    def release_failed_group(self, context, members):
        """A group failed, owned by this conductor: release what the
        backend holds for its new and hand-over members (left by an
        earlier owner that died after its claims), giving hand-over
        units back to their sources.  Never raises.

        :param members: a plan's ``new`` (uuids only) and ``handovers``
            (groups._failed_members).
        """

    def node_reserved(self, node_id):
        """reserve() reserved this node for an allocation: it is no longer
        pickable."""
        self.node_id_changed(node_id)
