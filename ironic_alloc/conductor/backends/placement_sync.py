"""Mirror the nodes as resource providers in OpenStack Placement.

Each node is one resource provider with the node's uuid, named after the
node (its uuid when it has no name or the name is taken in Placement),
member of one aggregate that marks the providers ironic_alloc manages,
holding one unit of the node's resource class as a custom class, and the
node's traits.  A node that the picking rule (``common/picking.py``) does
not let be picked keeps its inventory with ``reserved`` = 1, so a claim
that exists stays valid and Placement never offers the node.

``sync_all`` brings every provider in line with the database and removes
the managed providers whose node is gone; ``sync_node`` does one node.
Both return a ``SyncReport`` and never raise for one node's failure: the
next full pass repairs what one pass could not.  Given a ``SyncedProviders``
they skip the providers that neither this process nor anybody else changed
since this process last made them match an unchanged node, so a pass over
a quiet fleet costs one listing, not two reads per node.
"""

import collections
from concurrent import futures
import dataclasses
import re
import threading
import uuid

from oslo_log import log

from ironic_alloc.common import exception
from ironic_alloc.common import picking
from ironic_alloc.common import placement
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
    # Of ``synced``: providers skipped, known to match (SyncedProviders).
    unchanged: int = 0
    collisions: list = dataclasses.field(default_factory=list)
    errors: dict = dataclasses.field(default_factory=dict)

    @property
    def ok(self):
        return not self.errors and not self.collisions


# What a provider must look like for its node: its name, the Placement
# class of its one unit (None: no inventory), whether that unit is
# reserved, and its traits (sorted).
Wanted = collections.namedtuple('Wanted', 'name resource_class reserved '
                                          'traits')


def wanted_state(node, colliding):
    return Wanted(name=node.name or node.uuid,
                  resource_class=(None if colliding else
                                  placement_resource_class(
                                      node.resource_class)),
                  reserved=int(not picking.may_be_picked(node)),
                  traits=tuple(sorted(node.traits or [])))


class SyncedProviders:
    """Per provider, the state this process last verified or wrote, with
    the provider generation Placement gave right after it.

    Placement raises a provider's generation on every change of its
    inventory, traits or aggregates (and on claims), so a provider whose
    generation is still the recorded one, and whose node still wants the
    recorded state, needs no reads.  The database stays the truth: an
    entry only lets a pass skip work, and a process starts empty.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._known = {}

    def matches(self, provider_uuid, wanted, generation):
        with self._lock:
            return self._known.get(provider_uuid) == (wanted, generation)

    def record(self, provider_uuid, wanted, generation):
        with self._lock:
            self._known[provider_uuid] = (wanted, generation)

    def forget(self, provider_uuid):
        with self._lock:
            self._known.pop(provider_uuid, None)

    def recorded(self, provider_uuid):
        """The Wanted state last recorded for a provider, or None."""
        with self._lock:
            entry = self._known.get(provider_uuid)
        return entry[0] if entry is not None else None


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
    """Makes one node's provider match the node (module doc).

    Tracks the provider generation through its own reads and writes: a
    provider it created is known to be empty, so its first writes need
    no reads, and when every step started from the generation the
    previous one left, that generation describes exactly the state
    verified (``generation``; None when somebody else wrote in between).
    """

    def __init__(self, client, node, wanted, managed=None):
        """:param managed: the node's provider as a listing of the managed
            aggregate showed it (name, generation), when it did."""
        self.client = client
        self.node = node
        self.wanted = wanted
        self.managed = managed
        self.path = '/resource_providers/%s' % node.uuid
        # The provider's generation after our last step, while every step
        # continued from the one before.
        self.generation = None
        self._consistent = True
        # True right after we created the provider: nothing is on it yet.
        self._empty = False

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
        if not self._consistent:
            self.generation = None
        return created

    # Generation tracking

    def _read(self, suffix, empty):
        """The provider's ``suffix`` document; ``empty`` (with the known
        generation) for a provider we just created."""
        if self._empty:
            return dict(empty, resource_provider_generation=self.generation)
        current = self.client.get(self.path + suffix)
        self._continue_from(current['resource_provider_generation'])
        return current

    def _write(self, suffix, body):
        try:
            result = self.client.put(self.path + suffix, body)
        except exception.IronicAllocException:
            # NOTE: refused or unknown: the retry reads the provider.
            self._empty = False
            self._consistent = False
            raise
        self.generation = result['resource_provider_generation']

    def _continue_from(self, generation):
        if self.generation is not None and generation != self.generation:
            self._consistent = False
        self.generation = generation

    # Steps

    def _ensure_provider(self):
        try:
            provider = self.client.post(
                '/resource_providers',
                {'uuid': self.node.uuid, 'name': self.wanted.name})
        except exception.PlacementConflict:
            # NOTE: either a concurrent pass made this provider, or
            # another provider (not ours) holds the node's name:
            # provider names are unique in Placement.
            provider = self.client.get(self.path, expected=(200, 404))
            if provider is None:
                self._create_named_by_uuid()
                return True
            self._ensure_name(provider)
            return False
        self._created(provider)
        return True

    def _created(self, provider):
        self.generation = provider['generation']
        self._empty = True

    def _ensure_name(self, provider):
        name = self.wanted.name
        if provider['name'] != name:
            try:
                self.client.put(self.path, {'name': name})
            except exception.PlacementConflict:
                if provider['name'] != self.node.uuid:
                    self._rename_to_uuid(name)

    def _create_named_by_uuid(self):
        LOG.warning('Placement has a provider named %(name)s already; '
                    'node %(node)s gets its uuid as name',
                    {'name': self.wanted.name, 'node': self.node.uuid})
        self._created(self.client.post(
            '/resource_providers',
            {'uuid': self.node.uuid, 'name': self.node.uuid}))

    def _rename_to_uuid(self, name):
        LOG.warning('Placement has a provider named %(name)s already; '
                    'node %(node)s keeps its uuid as name',
                    {'name': name, 'node': self.node.uuid})
        self.client.put(self.path, {'name': self.node.uuid})

    def _aggregates(self):
        current = self._read('/aggregates', {'aggregates': []})
        if MANAGED_AGGREGATE in current['aggregates']:
            return
        self._write('/aggregates', {
            'aggregates': current['aggregates'] + [MANAGED_AGGREGATE],
            'resource_provider_generation':
                current['resource_provider_generation']})

    def _inventory(self):
        rc = self.wanted.resource_class
        wanted = {}
        if rc is not None:
            wanted[rc] = {
                'total': 1, 'reserved': self.wanted.reserved,
                'min_unit': 1, 'max_unit': 1, 'step_size': 1,
                'allocation_ratio': 1.0}
        current = self._read('/inventories', {'inventories': {}})
        have = {name: {key: inv[key] for key in wanted.get(name, inv)}
                for name, inv in current['inventories'].items()}
        if have == wanted:
            return
        if rc is not None:
            self.client.ensure_resource_class(rc)
        self._write('/inventories', {
            'inventories': wanted,
            'resource_provider_generation':
                current['resource_provider_generation']})

    def _traits(self):
        wanted = list(self.wanted.traits)
        current = self._read('/traits', {'traits': []})
        if sorted(current['traits']) == wanted:
            return
        for trait in wanted:
            if trait.startswith('CUSTOM_'):
                self.client.ensure_trait(trait)
        self._write('/traits', {
            'traits': wanted,
            'resource_provider_generation':
                current['resource_provider_generation']})


def _sync_one(client, node, wanted, synced, managed=None):
    """Sync one provider.

    :returns: ('created' | 'synced', None) or ('failed', message).
    """
    if synced is not None:
        synced.forget(node.uuid)
    step = _ProviderSync(client, node, wanted, managed)
    try:
        created = step.run()
    except exception.IronicAllocException as exc:
        LOG.warning('Node %(node)s: its Placement provider could not be '
                    'synchronised: %(exc)s', {'node': node.uuid, 'exc': exc})
        # NOTE: the failure may be a custom class or trait deleted behind
        # our back: ask for them again.
        client.forget_custom_names()
        return 'failed', str(exc)
    if synced is not None and step.generation is not None:
        synced.record(node.uuid, wanted, step.generation)
    return ('created' if created else 'synced'), None


def _count(report, node_uuid, outcome):
    kind, message = outcome
    if kind == 'failed':
        report.errors[node_uuid] = message
        return
    report.synced += 1
    if kind == 'created':
        report.created += 1


def _report_collisions(found, report):
    for collision in found.values():
        LOG.error('%s', collision)
        report.collisions.append(collision)


# How many times sync_node writes a node whose row changed while it wrote.
_SETTLE_ATTEMPTS = 5


def _node_and_wanted(context, node_uuid, report):
    """The node and the state its provider must have (None, None when the
    node is gone); collisions found go to ``report``."""
    try:
        node = node_obj.Node.get_by_uuid(context, node_uuid)
    except exception.NodeNotFound:
        return None, None
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
        report.collisions = []
        _report_collisions({rc: exception.ResourceClassCollision(
            names=', '.join(clashing), placement_class=rc,
            nodes=', '.join(sorted(members)))}, report)
    return node, wanted_state(node, colliding)


def sync_node(context, client, node_uuid, synced=None):
    """Make the provider of one node match it; remove it when the node is
    gone.  Resource class collisions are judged against all nodes.

    The node is read again after the write, and written again when it
    changed meanwhile: another conductor may have synced the newer state
    before this write of the older one landed, and nothing else would
    repair that before the next full pass.

    A provider this process made match its node before (``synced``
    holds it) is known to exist and to be ours: only its inventory and
    traits are read, and what differs written.

    :param synced: the process's SyncedProviders, kept up to date.
    :returns: SyncReport.
    """
    report = SyncReport()
    node, wanted = _node_and_wanted(context, node_uuid, report)
    for _ in range(_SETTLE_ATTEMPTS):
        if node is None:
            _delete_provider(client, node_uuid, report, synced)
            return report
        known = _known_provider(synced, node_uuid)
        kind, message = _sync_one(client, node, wanted, synced, known)
        if kind == 'failed' and known is not None:
            # NOTE: the provider may have been deleted or changed behind
            # our back since it was recorded: the whole way round.
            kind, message = _sync_one(client, node, wanted, synced)
        if kind == 'failed':
            report.errors[node_uuid] = message
            return report
        report.created += kind == 'created'
        written = wanted
        node, wanted = _node_and_wanted(context, node_uuid, report)
        if wanted == written:
            break
        LOG.debug('Node %s changed while its provider was written; '
                  'writing it again', node_uuid)
    report.synced += 1
    return report


def _known_provider(synced, provider_uuid):
    """The provider as a listing would show it (its name), when this
    process made it match its node before: it exists and is a member of
    the managed aggregate, so a sync of its node reads and writes only
    its inventory and traits."""
    recorded = synced.recorded(provider_uuid) if synced is not None else None
    return None if recorded is None else {'name': recorded.name}


def _delete_provider(client, provider_uuid, report, synced):
    if synced is not None:
        synced.forget(provider_uuid)
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


def managed_providers(client):
    """{uuid: provider} of every provider in the managed aggregate (one
    listing: uuid, name, generation).

    :raises: PlacementUnavailable, PlacementRequestFailed.
    """
    return {provider['uuid']: provider for provider in client.get(
        '/resource_providers?member_of=%s' % MANAGED_AGGREGATE)[
            'resource_providers']}


def sync_all(context, client, synced=None, concurrency=1, managed=None):
    """Bring every managed provider in line with the nodes (module doc).

    :param synced: the process's SyncedProviders: providers it shows
        unchanged are skipped, and it is kept up to date.
    :param concurrency: how many providers are synchronised at once.
    :param managed: managed_providers() as the caller has just listed
        them (a claim released since only makes a provider be read).
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
    if managed is None:
        managed = managed_providers(client)
    work = []
    for node in nodes:
        wanted = wanted_state(
            node, placement_resource_class(node.resource_class) in found)
        provider = managed.get(node.uuid)
        # NOTE: the name is compared too: renaming a provider may leave
        # its generation alone.
        if (synced is not None and provider is not None
                and provider['name'] == wanted.name
                and synced.matches(node.uuid, wanted,
                                   provider['generation'])):
            report.synced += 1
            report.unchanged += 1
            continue
        work.append((node, wanted, provider))
    if concurrency > 1 and len(work) > 1:
        with futures.ThreadPoolExecutor(
                max_workers=min(concurrency, len(work)),
                thread_name_prefix='placement-sync') as pool:
            outcomes = list(pool.map(
                lambda item: _sync_one(client, item[0], item[1], synced,
                                       item[2]), work))
    else:
        outcomes = [_sync_one(client, node, wanted, synced, provider)
                    for node, wanted, provider in work]
    for (node, _, _), outcome in zip(work, outcomes):
        _count(report, node.uuid, outcome)
    known = {node.uuid for node in nodes}
    for provider_uuid in managed:
        if provider_uuid not in known:
            _delete_provider(client, provider_uuid, report, synced)
    LOG.info('Placement sync: %(synced)d of %(total)d nodes synchronised '
             '(%(unchanged)d known unchanged, %(created)d providers '
             'created, %(deleted)d deleted), %(errors)d failures, '
             '%(collisions)d resource class collisions',
             {'synced': report.synced, 'total': len(nodes),
              'unchanged': report.unchanged, 'created': report.created,
              'deleted': report.deleted, 'errors': len(report.errors),
              'collisions': len(report.collisions)})
    return report
