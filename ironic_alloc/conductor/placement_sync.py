"""Mirror the nodes as resource providers in OpenStack Placement.

Each node is one resource provider with the node's uuid, named after the
node (its uuid when it has no name or the name is taken in Placement),
member of one aggregate that marks the providers ironic_alloc manages,
holding one unit of the node's resource class as a custom class, and the
node's traits.  A node that must not be picked keeps its inventory with
``reserved`` = 1, so a claim that exists stays valid and Placement never
offers the node.

``sync_all`` brings every provider in line with the database and removes
the managed providers whose node is gone; ``sync_node`` does one node.
Both return a ``SyncReport`` and never raise for one node's failure: the
next full pass repairs what one pass could not.
"""

import dataclasses
import re
import uuid

from oslo_log import log

from ironic_alloc.common import exception
from ironic_alloc.common import placement
from ironic_alloc.common import states
from ironic_alloc.objects import node as node_obj

LOG = log.getLogger(__name__)

# The aggregate every provider made here belongs to: a full pass deletes
# the members whose node is gone, and never a provider it did not make
# (Nova's, another service's).
MANAGED_AGGREGATE = str(uuid.uuid5(uuid.NAMESPACE_URL,
                                   'urn:ironic-alloc:managed-nodes'))

_PAGE = 500


def placement_resource_class(name):
    """The Placement class of node resource class ``name`` (or None).

    ``baremetal-gold`` → ``CUSTOM_BAREMETAL_GOLD``: upper case, every
    character but ASCII letters and digits becomes ``_``.
    """
    if not name:
        return None
    return 'CUSTOM_' + re.sub('[^A-Z0-9]', '_', name.upper())


def must_not_be_picked(node):
    """True when the node may not be given to a new allocation."""
    return bool(node.provision_state != states.AVAILABLE
                or node.maintenance
                or node.retired
                or node.power_state is None
                or node.instance_uuid
                or node.allocation_id)


def collisions(nodes):
    """{Placement class: ResourceClassCollision} for every Placement class
    that more than one node resource class becomes."""
    names = {}
    members = {}
    for node in nodes:
        rc = placement_resource_class(node.resource_class)
        if rc is None:
            continue
        names.setdefault(rc, set()).add(node.resource_class)
        members.setdefault(rc, []).append(node.uuid)
    return {rc: exception.ResourceClassCollision(
                names=', '.join(sorted(names[rc])), placement_class=rc,
                nodes=', '.join(sorted(members[rc])))
            for rc in names if len(names[rc]) > 1}


@dataclasses.dataclass
class SyncReport:
    """What one pass did: counts, and per node uuid what failed."""
    synced: int = 0
    created: int = 0
    deleted: int = 0
    collisions: list = dataclasses.field(default_factory=list)
    errors: dict = dataclasses.field(default_factory=dict)

    @property
    def ok(self):
        return not self.errors and not self.collisions


def _all_nodes(context):
    nodes = []
    marker = None
    while True:
        page = node_obj.Node.list(context, limit=_PAGE, marker=marker,
                                  sort_key='id', sort_dir='asc')
        nodes.extend(page)
        if len(page) < _PAGE:
            return nodes
        marker = page[-1].id


class _ProviderSync:
    """Makes one node's provider match the node (module doc)."""

    def __init__(self, client, node, colliding, managed=None):
        """:param managed: the node's provider as a listing of the managed
            aggregate showed it (name, generation), when it did."""
        self.client = client
        self.node = node
        self.managed = managed
        self.path = '/resource_providers/%s' % node.uuid
        self.resource_class = (
            None if colliding
            else placement_resource_class(node.resource_class))

    def run(self):
        """:returns: True when the provider was created."""
        if self.managed is not None:
            # NOTE: listed as a member of the aggregate just now: it
            # exists and is ours; only its name may need a change.
            created = False
            self._ensure_name(self.managed)
        else:
            created = self._ensure_provider()
            placement.retry_concurrent_update(self._aggregates)
        placement.retry_concurrent_update(self._inventory)
        placement.retry_concurrent_update(self._traits)
        return created

    def _ensure_provider(self):
        name = self.node.name or self.node.uuid
        provider = self.client.get(self.path, expected=(200, 404))
        if provider is None:
            try:
                self.client.post('/resource_providers',
                                 {'uuid': self.node.uuid, 'name': name})
                return True
            except exception.PlacementConflict:
                # NOTE: either a concurrent pass made this provider, or
                # another provider (not ours) holds the node's name:
                # provider names are unique in Placement.
                provider = self.client.get(self.path, expected=(200, 404))
                if provider is None:
                    self._create_named_by_uuid(name)
                    return True
        self._ensure_name(provider)
        return False

    def _ensure_name(self, provider):
        name = self.node.name or self.node.uuid
        if provider['name'] != name:
            try:
                self.client.put(self.path, {'name': name})
            except exception.PlacementConflict:
                if provider['name'] != self.node.uuid:
                    self._rename_to_uuid(name)

    def _create_named_by_uuid(self, name):
        LOG.warning('Placement has a provider named %(name)s already; '
                    'node %(node)s gets its uuid as name',
                    {'name': name, 'node': self.node.uuid})
        self.client.post('/resource_providers',
                         {'uuid': self.node.uuid, 'name': self.node.uuid})

    def _rename_to_uuid(self, name):
        LOG.warning('Placement has a provider named %(name)s already; '
                    'node %(node)s keeps its uuid as name',
                    {'name': name, 'node': self.node.uuid})
        self.client.put(self.path, {'name': self.node.uuid})

    def _aggregates(self):
        current = self.client.get(self.path + '/aggregates')
        if MANAGED_AGGREGATE in current['aggregates']:
            return
        self.client.put(self.path + '/aggregates', {
            'aggregates': current['aggregates'] + [MANAGED_AGGREGATE],
            'resource_provider_generation':
                current['resource_provider_generation']})

    def _inventory(self):
        wanted = {}
        if self.resource_class is not None:
            wanted[self.resource_class] = {
                'total': 1, 'reserved': int(must_not_be_picked(self.node)),
                'min_unit': 1, 'max_unit': 1, 'step_size': 1,
                'allocation_ratio': 1.0}
        current = self.client.get(self.path + '/inventories')
        have = {rc: {key: inv[key] for key in wanted.get(rc, inv)}
                for rc, inv in current['inventories'].items()}
        if have == wanted:
            return
        if self.resource_class is not None:
            self.client.ensure_resource_class(self.resource_class)
        self.client.put(self.path + '/inventories', {
            'inventories': wanted,
            'resource_provider_generation':
                current['resource_provider_generation']})

    def _traits(self):
        wanted = sorted(self.node.traits or [])
        current = self.client.get(self.path + '/traits')
        if sorted(current['traits']) == wanted:
            return
        for trait in wanted:
            if trait.startswith('CUSTOM_'):
                self.client.ensure_trait(trait)
        self.client.put(self.path + '/traits', {
            'traits': wanted,
            'resource_provider_generation':
                current['resource_provider_generation']})


def _sync_one(client, node, colliding, report, managed=None):
    try:
        if _ProviderSync(client, node, colliding, managed).run():
            report.created += 1
        report.synced += 1
    except exception.IronicAllocException as exc:
        LOG.warning('Node %(node)s: its Placement provider could not be '
                    'synchronised: %(exc)s', {'node': node.uuid, 'exc': exc})
        report.errors[node.uuid] = str(exc)


def _report_collisions(found, report):
    for collision in found.values():
        LOG.error('%s', collision)
        report.collisions.append(collision)


def sync_node(context, client, node_uuid):
    """Make the provider of one node match it; remove it when the node is
    gone.  Resource class collisions are judged against all nodes.

    :returns: SyncReport.
    """
    report = SyncReport()
    try:
        node = node_obj.Node.get_by_uuid(context, node_uuid)
    except exception.NodeNotFound:
        _delete_provider(client, node_uuid, report)
        return report
    rc = placement_resource_class(node.resource_class)
    # NOTE: one DISTINCT query instead of reading every node: only the
    # classes that normalise like this node's need their members.
    clashing = sorted(name for name in node_obj.Node.resource_classes(
        context) if placement_resource_class(name) == rc)
    colliding = rc is not None and len(clashing) > 1
    if colliding:
        members = []
        for name in clashing:
            members.extend(n.uuid for n in node_obj.Node.list(
                context, filters={'resource_class': name}))
        _report_collisions({rc: exception.ResourceClassCollision(
            names=', '.join(clashing), placement_class=rc,
            nodes=', '.join(sorted(members)))}, report)
    _sync_one(client, node, colliding, report)
    return report


def _delete_provider(client, provider_uuid, report):
    try:
        status = client.delete('/resource_providers/%s' % provider_uuid,
                               expected=(204, 404))
    except exception.IronicAllocException as exc:
        # NOTE: a 409 here means a claim still holds the provider; it is
        # deleted by the first pass after the claim is released.
        LOG.warning('The Placement provider of deleted node %(node)s '
                    'stays for now: %(exc)s',
                    {'node': provider_uuid, 'exc': exc})
        report.errors[provider_uuid] = str(exc)
        return
    if status == 204:
        LOG.info('Deleted the Placement provider of deleted node %s',
                 provider_uuid)
        report.deleted += 1


def sync_all(context, client):
    """Bring every managed provider in line with the nodes (module doc).

    :returns: SyncReport.
    :raises: PlacementUnavailable when Placement cannot be listed; the
        failures of single nodes are in the report instead.
    """
    report = SyncReport()
    nodes = _all_nodes(context)
    found = collisions(nodes)
    _report_collisions(found, report)
    # NOTE: one listing instead of two reads per node (the provider and
    # its aggregates) for every provider made by an earlier pass.
    managed = {provider['uuid']: provider for provider in client.get(
        '/resource_providers?member_of=%s' % MANAGED_AGGREGATE)[
            'resource_providers']}
    for node in nodes:
        colliding = placement_resource_class(node.resource_class) in found
        _sync_one(client, node, colliding, report, managed.get(node.uuid))
    known = {node.uuid for node in nodes}
    for provider_uuid in managed:
        if provider_uuid not in known:
            _delete_provider(client, provider_uuid, report)
    LOG.info('Placement sync: %(synced)d of %(total)d nodes synchronised '
             '(%(created)d providers created, %(deleted)d deleted), '
             '%(errors)d failures, %(collisions)d resource class '
             'collisions', {'synced': report.synced, 'total': len(nodes),
                            'created': report.created,
                            'deleted': report.deleted,
                            'errors': len(report.errors),
                            'collisions': len(report.collisions)})
    return report
