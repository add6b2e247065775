"""Correctness checks through the API: what the service says, not its DB.

After the allocate phase:

* one allocation per node: no two active allocations name the same node,
  and no allocation uuid appears on two nodes;
* every allocation is terminal: each allocation the benchmark created is
  listed, in state active or error;
* nodes and allocations agree: an active allocation's node points back to
  it (allocation_uuid, and has an instance_uuid), a node's allocation is
  active on that node, and an allocation in another state has no node;
* the client's view holds: an allocation the client saw active on a node
  is still listed active on that node.

After the delete phase: the deleted allocations are no longer listed and
no node still refers to them.

The listings are paged with limit/marker (``GET /v1/nodes?fields=...``:
Ironic accepts ``fields`` on /v1/nodes, not on /v1/nodes/detail).
"""

import collections
import time

from tools.bench import client as api_client

PAGE_LIMIT = 1000
LIST_TIMEOUT = 900.0
EXAMPLES = 3
NODE_FIELDS = 'uuid,instance_uuid,allocation_uuid'

Check = collections.namedtuple('Check', ['name', 'ok', 'detail'])


class ListingFailed(Exception):
    """A listing needed by the checks could not be read completely."""


def list_collection(client, path, key, params=None, limit=PAGE_LIMIT,
                    timeout=LIST_TIMEOUT):
    """Every item of a paged collection, following limit/marker.

    The next page is asked for while the answer has a ``next`` link (Ironic
    adds it to full pages only), with the last item's uuid as the marker.

    :raises: ListingFailed on an HTTP error, a page that makes no progress
        or after ``timeout`` seconds.
    :raises: client.ConnectionFailed when the service does not answer.
    """
    items = []
    marker = None
    deadline = time.monotonic() + timeout
    while True:
        query = dict(params or {}, limit=limit)
        if marker:
            query['marker'] = marker
        response = client.request('GET', path, params=query)
        if response.status != 200 or not isinstance(response.json, dict):
            raise ListingFailed('GET %s: %s' % (
                path, api_client.error_kind(response)))
        page = response.json.get(key) or []
        items.extend(page)
        if not page or not response.json.get('next'):
            return items
        next_marker = page[-1].get('uuid')
        if not next_marker or next_marker == marker:
            raise ListingFailed('GET %s: paging made no progress at marker '
                                '%s' % (path, marker))
        marker = next_marker
        if time.monotonic() > deadline:
            raise ListingFailed('GET %s: still paging after %ds (%d items)'
                                % (path, timeout, len(items)))


def fetch_listings(client):
    """All nodes (uuid, instance_uuid, allocation_uuid) and allocations.

    :returns: (nodes, allocations), lists of dicts.
    """
    nodes = list_collection(client, '/v1/nodes', 'nodes',
                            {'fields': NODE_FIELDS})
    allocations = list_collection(client, '/v1/allocations', 'allocations')
    return nodes, allocations


def named_check(name, problems):
    if not problems:
        return Check(name, True, '')
    shown = '; '.join(problems[:EXAMPLES])
    more = len(problems) - EXAMPLES
    return Check(name, False, '%d problem(s): %s%s' % (
        len(problems), shown, ' (and %d more)' % more if more > 0 else ''))


def _one_allocation_per_node(nodes, allocations):
    problems = []
    holders = collections.defaultdict(list)
    for alloc in allocations:
        if alloc.get('state') == 'active' and alloc.get('node_uuid'):
            holders[alloc['node_uuid']].append(alloc['uuid'])
    for node_uuid, uuids in sorted(holders.items()):
        if len(uuids) > 1:
            problems.append('node %s has allocations %s'
                            % (node_uuid, ', '.join(sorted(uuids))))
    places = collections.defaultdict(list)
    for node in nodes:
        if node.get('allocation_uuid'):
            places[node['allocation_uuid']].append(node['uuid'])
    for alloc_uuid, node_uuids in sorted(places.items()):
        if len(node_uuids) > 1:
            problems.append('allocation %s is on nodes %s'
                            % (alloc_uuid, ', '.join(sorted(node_uuids))))
    return named_check('one allocation per node', problems)


def _all_terminal(records, by_uuid):
    problems = []
    for record in records:
        if not record.uuid:
            continue
        listed = by_uuid.get(record.uuid)
        if listed is None:
            problems.append('allocation %s is not listed' % record.uuid)
        elif listed.get('state') not in ('active', 'error'):
            problems.append('allocation %s is %s' % (record.uuid,
                                                     listed.get('state')))
    return named_check('every allocation terminal', problems)


def _rows_agree(nodes, allocations, by_uuid):
    problems = []
    nodes_by_uuid = {n['uuid']: n for n in nodes}
    for alloc in allocations:
        node_uuid = alloc.get('node_uuid')
        if alloc.get('state') != 'active':
            if node_uuid:
                problems.append('allocation %s is %s but has node %s' % (
                    alloc['uuid'], alloc.get('state'), node_uuid))
            continue
        node = nodes_by_uuid.get(node_uuid)
        if node is None:
            problems.append('active allocation %s has unknown node %s'
                            % (alloc['uuid'], node_uuid))
        elif node.get('allocation_uuid') != alloc['uuid']:
            problems.append('allocation %s is on node %s whose '
                            'allocation_uuid is %s' % (
                                alloc['uuid'], node_uuid,
                                node.get('allocation_uuid')))
        elif not node.get('instance_uuid'):
            problems.append('node %s of allocation %s has no instance_uuid'
                            % (node_uuid, alloc['uuid']))
    for node in nodes:
        alloc_uuid = node.get('allocation_uuid')
        if not alloc_uuid:
            continue
        alloc = by_uuid.get(alloc_uuid)
        if alloc is None:
            problems.append('node %s points to unlisted allocation %s'
                            % (node['uuid'], alloc_uuid))
        elif alloc.get('state') != 'active':
            problems.append('node %s points to allocation %s in state %s'
                            % (node['uuid'], alloc_uuid, alloc.get('state')))
        elif alloc.get('node_uuid') != node['uuid']:
            problems.append('node %s points to allocation %s of node %s'
                            % (node['uuid'], alloc_uuid,
                               alloc.get('node_uuid')))
    return named_check('nodes and allocations agree', problems)


def _client_view_holds(records, by_uuid):
    problems = []
    for record in records:
        if record.outcome != 'active':
            continue
        listed = by_uuid.get(record.uuid) or {}
        if (listed.get('state') != 'active'
                or listed.get('node_uuid') != record.node_uuid):
            problems.append('allocation %s was seen active on %s, now %s on '
                            '%s' % (record.uuid, record.node_uuid,
                                    listed.get('state'),
                                    listed.get('node_uuid')))
    return named_check('allocations stay where they were seen', problems)


def check_after_allocate(records, nodes, allocations):
    """The checks of the state after the allocate phase.

    :param records: the AllocationRecords of the allocate phase.
    :param nodes: listed nodes (dicts with uuid, instance_uuid,
        allocation_uuid).
    :param allocations: listed allocations (dicts with uuid, state,
        node_uuid).
    :returns: list of Check.
    """
    by_uuid = {a['uuid']: a for a in allocations}
    return [_one_allocation_per_node(nodes, allocations),
            _all_terminal(records, by_uuid),
            _rows_agree(nodes, allocations, by_uuid),
            _client_view_holds(records, by_uuid)]


def check_after_delete(records, nodes, allocations):
    """The checks of the state after the delete phase.

    Allocations whose DELETE failed are left out (they are counted as
    delete errors already).

    :returns: list of Check.
    """
    deleted = {r.uuid for r in records if r.uuid and not r.delete_error}
    remaining = sorted(a['uuid'] for a in allocations
                       if a['uuid'] in deleted)
    referring = sorted(
        'node %s still refers to %s' % (
            n['uuid'], n.get('allocation_uuid') or n.get('instance_uuid'))
        for n in nodes
        if n.get('allocation_uuid') in deleted
        or n.get('instance_uuid') in deleted)
    return [named_check('deleted allocations are gone',
                   ['allocation %s is still listed' % u for u in remaining]),
            named_check('deleted allocations freed their nodes', referring)]


def run(client, records, after_delete=False):
    """List through the API and run the checks of one stage.

    :returns: (list of Check, seconds). A failed listing is one failed
        check naming the error.
    """
    start = time.perf_counter()
    try:
        nodes, allocations = fetch_listings(client)
    except (ListingFailed, api_client.ConnectionFailed) as exc:
        return ([Check('listings readable', False, str(exc))],
                time.perf_counter() - start)
    check = check_after_delete if after_delete else check_after_allocate
    return check(records, nodes, allocations), time.perf_counter() - start
