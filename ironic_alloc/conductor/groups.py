"""Allocation groups (API extension 1.3): every member holds its node
after one commit, or the group fails holding nothing.

The API wrote the group and its new members (state allocating, owned by
this conductor).  Here the candidates of every new member are searched
with the single allocations' SQL search, the assignment of nodes to
members is solved as a whole (``group_solver``), and the result is
written by one transaction (db api ``commit_allocation_group``), whose
guards are the reservation's: a node changed since the search rolls
everything back, and the group is solved again without it, a bounded
number of times.  Before the commit the backend claims the plan outside
the database, all or nothing (``claim_group``: the Placement backend's
one POST /allocations), and undoes that claim when the commit does not
happen; a refused claim is solved again without the refused nodes.
Every write is conditional on the group still being allocating and
owned by this conductor.
"""

from oslo_log import log
from oslo_utils import excutils
from oslo_utils import uuidutils

from ironic_alloc.common import exception
from ironic_alloc.common import matching
from ironic_alloc.common import notifications
from ironic_alloc.common import states
from ironic_alloc.conductor import allocations
from ironic_alloc.conductor import group_solver
from ironic_alloc.conf import CONF
from ironic_alloc.db import api as db_api
from ironic_alloc.objects import allocation_group as group_obj

LOG = log.getLogger(__name__)

dbapi = db_api.get_instance()


def do_allocate_group(context, group_id, conductor_id, backend):
    """Solve and commit an allocation group, or set it to error.

    :param backend: the conductor's allocation backend.
    :returns: the ids of the nodes the new members reserved, or None.
    """
    try:
        group = group_obj.AllocationGroup.get(context, id=group_id)
    except exception.AllocationGroupNotFound:
        return None
    if (group.state != states.GROUP_ALLOCATING
            or group.conductor_affinity != conductor_id):
        return None
    rows = {allocation.uuid: allocation
            for allocation, _node_uuid in group.members()}
    spec = group.spec or {}
    if any(uuid not in rows for uuid, member in spec.items()
           if member['kind'] != states.MEMBER_RELEASE):
        # NOTE: the group was deleted between the two reads: nothing to
        # do.
        return None
    searching = sorted(uuid for uuid, member in spec.items()
                       if member['kind'] == states.MEMBER_NEW)
    criteria = {uuid: allocations.criteria_of(rows[uuid])
                for uuid in searching}
    # NOTE: the nodes handed over stay out of every search: they are
    # held, so the search would not return them anyway, unless the
    # hand-over's source was deleted meanwhile.
    excluded = {member['node_id'] for member in spec.values()
                if member['kind'] == states.MEMBER_HANDOVER}
    # The nodes the backend refused or knows it cannot claim.
    unclaimable = set()
    retries = CONF.allocation.group_retries
    for attempt in range(retries + 1):
        candidates = _candidates(context, criteria, excluded, backend,
                                 unclaimable)
        solution = group_solver.solve(candidates)
        if solution.unmatched:
            _fail_unmatched(context, group, conductor_id, solution,
                            criteria, backend, bool(unclaimable))
            return None
        plan = _plan(spec, rows, criteria, solution.assignment)
        try:
            claims = backend.claim_group(context, plan, rows)
        except exception.AllocationGroupClaimRefused as exc:
            if not exc.node_ids or attempt == retries:
                _fail(context, group, conductor_id, backend,
                      'The group could not be claimed: %s' % exc)
                return None
            LOG.info('Allocation group %(group)s: %(error)s; solving again '
                     'without those nodes', {'group': group.uuid,
                                             'error': exc})
            excluded.update(exc.node_ids)
            unclaimable.update(exc.node_ids)
            continue
        except exception.AllocationBackendFailed as exc:
            _fail(context, group, conductor_id, backend, str(exc))
            return None
        try:
            dbapi.commit_allocation_group(group.id, conductor_id, plan,
                                          allocations.DEALLOCATION_STATES)
        except exception.AllocationGroupLost:
            LOG.info('Allocation group %s was deleted or taken over while '
                     'being processed', group.uuid)
            # NOTE: a new owner's claim finds these claims and drops
            # them; undoing them here could undo that owner's own.
            if not _taken_over(context, group.id, conductor_id):
                backend.release_group_claims(claims)
            return None
        except exception.AllocationGroupCommitFailed as exc:
            backend.release_group_claims(claims)
            if not exc.solve_again or attempt == retries:
                _fail(context, group, conductor_id, backend,
                      'The group could not be committed: %s' % exc)
                return None
            LOG.info('Allocation group %(group)s: %(error)s; solving again',
                     {'group': group.uuid, 'error': exc})
            # NOTE: None when the database refused the commit as a
            # conflict: every node may be tried again.
            if exc.node_id is not None:
                excluded.add(exc.node_id)
            continue
        except Exception:
            # NOTE: a database error: the claims go before the error
            # does (the re-drive solves the group again).
            with excutils.save_and_reraise_exception():
                backend.release_group_claims(claims)
        LOG.info('Allocation group %(group)s is active: %(count)d members',
                 {'group': group.uuid, 'count': len(spec)})
        _notify_processed(context, group, 'success')
        return list(solution.assignment.values())
    return None


def _candidates(context, criteria, excluded, backend, unclaimable):
    """{member uuid: candidate node ids}: up to m per member (m = the
    number of members searching), which is enough for a complete
    assignment: a member with m candidates always keeps one whatever
    the other m - 1 take.  Nodes the backend knows it cannot claim are
    left out (added to ``excluded`` and ``unclaimable``) and the search
    made again."""
    while True:
        found = _search(criteria, excluded)
        skipped = backend.unclaimable(
            context, sorted({i for ids in found.values() for i in ids}))
        if not skipped:
            return found
        excluded.update(skipped)
        unclaimable.update(skipped)


def _taken_over(context, group_id, conductor_id):
    try:
        group = group_obj.AllocationGroup.get(context, id=group_id)
    except exception.AllocationGroupNotFound:
        return False
    return (group.state == states.GROUP_ALLOCATING
            and group.conductor_affinity != conductor_id)


def _search(criteria, excluded):
    wanted = len(criteria)
    found = {}
    for uuid, member_criteria in criteria.items():
        # NOTE: from a random pivot of the candidate index, as single
        # allocations search, so that concurrent groups rarely want the
        # same nodes.
        ids = dbapi.get_allocation_candidates(
            member_criteria, wanted + len(excluded),
            pivot=uuidutils.generate_uuid())
        found[uuid] = [i for i in ids if i not in excluded][:wanted]
    return found


def _plan(spec, rows, criteria, assignment):
    """What commit_allocation_group() writes (see db api)."""
    plan = {'releases': [], 'handovers': [], 'new': [], 'names': []}
    for uuid, member in sorted(spec.items()):
        if member['kind'] == states.MEMBER_RELEASE:
            plan['releases'].append({'uuid': uuid,
                                     'allocation_id': member['allocation_id']})
            continue
        row = rows[uuid]
        if member['kind'] == states.MEMBER_HANDOVER:
            plan['handovers'].append({
                'uuid': uuid, 'allocation_id': row.id,
                'from_id': member['from_id'],
                'from_uuid': member['from_uuid'],
                'node_id': member['node_id']})
        else:
            plan['new'].append({'uuid': uuid, 'allocation_id': row.id,
                                'node_id': assignment[uuid],
                                'criteria': criteria[uuid]})
        if member.get('pending_name'):
            plan['names'].append((row.id, member['pending_name']))
    # NOTE: the commit locks the nodes in this order: in ascending node id,
    # two groups committing at once on shared nodes wait for each other
    # instead of deadlocking (which PostgreSQL resolves by failing one).
    plan['new'].sort(key=lambda member: member['node_id'])
    return plan


def _fail_unmatched(context, group, conductor_id, solution, criteria,
                    backend, refused):
    """Fail a group some member of which got no node, naming the first
    such member with its funnel (and, when nodes match it, the members
    it competes with for too few nodes, or, when the backend ``refused``
    nodes, its sentence on why).
    """
    member = solution.unmatched[0]
    funnel = allocations.explain(criteria[member])
    conflict = solution.conflict
    # NOTE: a member left with no candidate at all competes with nobody.
    others = sorted(str(m) for m in (conflict.members if conflict else ())
                    if m != member)
    if funnel['matching_nodes'] and others:
        why = ('it and member(s) %s can only use %d node(s) between them'
               % (', '.join(others), len(conflict.nodes)))
    elif funnel['matching_nodes']:
        why = 'the nodes that match it are taken'
        if refused:
            why += ' (%s)' % backend.explain(criteria[member])
    else:
        why = 'no node matches it'
    reason = ('Member %s could not be given a node: %s. %s'
              % (member, why, matching.funnel_line(funnel)))
    if len(solution.unmatched) > 1:
        reason += (' %d other member(s) got no node either.'
                   % (len(solution.unmatched) - 1))
    _fail(context, group, conductor_id, backend, reason,
          {'member': member, 'funnel': funnel})


def _fail(context, group, conductor_id, backend, reason,
          explanation=None):
    if dbapi.fail_allocation_group(group.id, conductor_id, reason,
                                   explanation=explanation):
        LOG.info('Allocation group %(group)s failed: %(reason)s',
                 {'group': group.uuid, 'reason': reason})
        # NOTE: a conductor that died after its claims leaves them for
        # the members, even when this attempt claimed nothing (no
        # solution).  Once the group failed under our ownership nobody
        # claims for its members any more: drop them now, since the
        # backend's periodic work could not give a hand-over's unit back
        # to its source.
        backend.release_failed_group(context,
                                     _failed_members(group.spec or {}))
        _notify_processed(context, group, 'error')


def _failed_members(spec):
    """The members of a failed group whose consumers may hold claims
    outside the database, in the shape of a plan (see _plan) without
    nodes for the new members: ``new`` [{uuid}], ``handovers`` [{uuid,
    from_uuid, node_id}]."""
    failed = {'releases': [], 'handovers': [], 'new': [], 'names': []}
    for uuid, member in sorted(spec.items()):
        if member['kind'] == states.MEMBER_HANDOVER:
            failed['handovers'].append({
                'uuid': uuid, 'from_uuid': member['from_uuid'],
                'node_id': member['node_id']})
        elif member['kind'] == states.MEMBER_NEW:
            failed['new'].append({'uuid': uuid, 'node_id': None})
    return failed


def release_members(backend, members):
    """After the rows of a group's members are gone (the group deleted,
    or its lease expired): release what the backend holds for them
    outside the database.

    :param members: [(allocation uuid, id of the node it held, or
        None)].
    """
    for uuid, node_id in members:
        backend.release(uuid)
        if node_id is not None:
            backend.node_id_changed(node_id)


def _notify_processed(context, group, status):
    """ironic_alloc.allocation_group.process.<status>, after the commit
    or the failure: the group as it was written, read again (the copy in
    hand when it was deleted since)."""
    level = 'error' if status == 'error' else 'info'
    if not notifications.enabled(level):
        return
    try:
        group = group_obj.AllocationGroup.get(context, id=group.id)
    except exception.AllocationGroupNotFound:
        pass
    group_obj.notify(context, group, 'process', status,
                     notifications.CONDUCTOR_SERVICE)
