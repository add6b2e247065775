"""SQLAlchemy models; the alembic migrations must produce exactly these."""

from oslo_db.sqlalchemy import models
from oslo_db.sqlalchemy import types as db_types
import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy import orm

from ironic_alloc.common import picking


def table_args():
    return {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


def exact_string(length):
    """A string column compared byte for byte on every database: MySQL's
    and MariaDB's default collation ignores case, so the matching language
    would answer differently there."""
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, collation='utf8mb4_bin'), 'mysql', 'mariadb')


class IronicAllocBase(models.TimestampMixin, models.ModelBase):

    def as_dict(self):
        return {c.name: getattr(self, c.name)
                for c in self.__table__.columns}


Base = orm.declarative_base(cls=IronicAllocBase)


class Conductor(Base):
    """One row per running conductor process.

    A restarted conductor gets a new row id (see db.api.register_conductor),
    so ``allocations.conductor_affinity`` names one process, never a host.
    """

    __tablename__ = 'conductors'
    __table_args__ = (
        sa.UniqueConstraint('hostname', name='uniq_conductors0hostname'),
        dict(sqlite_autoincrement=True, **table_args()),
    )
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    hostname = sa.Column(sa.String(255), nullable=False)
    conductor_group = sa.Column(sa.String(255), nullable=False,
                                server_default='', default='')
    online = sa.Column(sa.Boolean, nullable=False, default=True)
    # NOTE: written with the database server's clock, never the conductor's,
    # so liveness does not depend on clock agreement between hosts.
    heartbeat_at = sa.Column(sa.DateTime, nullable=True)


# Nodes that no allocation or instance holds (see nodes_free_candidate_idx):
# conditions of the picking rule, so every candidate search implies the
# predicate and PostgreSQL can use the index.
FREE_NODE_PREDICATE = picking.sql_text(('provision_state', 'allocation_id',
                                        'instance_uuid'))


class Node(Base):
    __tablename__ = 'nodes'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_nodes0uuid'),
        sa.UniqueConstraint('name', name='uniq_nodes0name'),
        sa.UniqueConstraint('instance_uuid', name='uniq_nodes0instance_uuid'),
        # NOTE: the candidate search of an allocation is an equality match on
        # these three columns followed by a range scan on uuid (a random
        # pivot spreads concurrent allocations), so one index answers it.
        sa.Index('nodes_candidate_idx', 'resource_class', 'provision_state',
                 'maintenance', 'uuid'),
        # NOTE: PostgreSQL only (MySQL has no partial index; SQLite and
        # MariaDB walk nodes_candidate_idx or the uuid index in order): the
        # nodes no allocation holds, in uuid order.  Without it, once most
        # nodes of a class are allocated, PostgreSQL's planner expects few
        # free ones and reads and sorts all of them for every search.
        sa.Index('nodes_free_candidate_idx', 'resource_class', 'uuid',
                 postgresql_where=sa.text(FREE_NODE_PREDICATE)).ddl_if(
                     dialect='postgresql'),
        sa.Index('nodes_conductor_group_idx', 'conductor_group'),
        sa.Index('nodes_reservation_idx', 'reservation'),
        sa.Index('nodes_owner_idx', 'owner'),
        sa.Index('nodes_lessee_idx', 'lessee'),
        sa.Index('nodes_allocation_id_idx', 'allocation_id'),
        # NOTE: the nodes of a chassis: its node list, and the check that
        # it has none before it is deleted.
        sa.Index('nodes_chassis_uuid_idx', 'chassis_uuid'),
        # NOTE: the node list's shard filters and the shard counts.
        sa.Index('nodes_shard_idx', 'shard'),
        # NOTE: the node list's instance_name filter (1.104).
        sa.Index('nodes_instance_name_idx', 'instance_name'),
        # NOTE: the children of a node (its children list and the node
        # list's parent_node filter).
        sa.Index('nodes_parent_node_idx', 'parent_node'),
        # NOTE: the normalised properties of the matching language
        # (common/matching.py), each searchable on its own.
        sa.Index('nodes_match_cpus_idx', 'match_cpus'),
        sa.Index('nodes_match_memory_mb_idx', 'match_memory_mb'),
        sa.Index('nodes_match_local_gb_idx', 'match_local_gb'),
        sa.Index('nodes_match_cpu_arch_idx', 'match_cpu_arch'),
        table_args(),
    )
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False)
    name = sa.Column(sa.String(255), nullable=True)
    driver = sa.Column(sa.String(255), nullable=False)
    resource_class = sa.Column(sa.String(80), nullable=True)
    description = sa.Column(sa.Text, nullable=True)
    properties = sa.Column(db_types.JsonEncodedDict, nullable=True)
    extra = sa.Column(db_types.JsonEncodedDict, nullable=True)
    driver_info = sa.Column(db_types.JsonEncodedDict, nullable=True)
    driver_internal_info = sa.Column(db_types.JsonEncodedDict, nullable=True)
    instance_info = sa.Column(db_types.JsonEncodedDict, nullable=True)
    instance_uuid = sa.Column(sa.String(36), nullable=True)
    # NOTE: the hardware interface names and the rarely used structured
    # fields of the Bare Metal API are stored, shown and patchable, but
    # nothing acts on them: no hardware is driven by this service.
    interfaces = sa.Column(db_types.JsonEncodedDict, nullable=True)
    chassis_uuid = sa.Column(sa.String(36), nullable=True)
    provision_state = sa.Column(sa.String(15), nullable=True)
    target_provision_state = sa.Column(sa.String(15), nullable=True)
    provision_updated_at = sa.Column(sa.DateTime, nullable=True)
    power_state = sa.Column(sa.String(15), nullable=True)
    target_power_state = sa.Column(sa.String(15), nullable=True)
    maintenance = sa.Column(sa.Boolean, nullable=False, default=False)
    maintenance_reason = sa.Column(sa.Text, nullable=True)
    fault = sa.Column(sa.String(255), nullable=True)
    last_error = sa.Column(sa.Text, nullable=True)
    reservation = sa.Column(sa.String(255), nullable=True)
    conductor_affinity = sa.Column(sa.Integer, nullable=True)
    conductor_group = sa.Column(sa.String(255), nullable=False,
                                server_default='', default='')
    owner = sa.Column(sa.String(255), nullable=True)
    lessee = sa.Column(sa.String(255), nullable=True)
    protected = sa.Column(sa.Boolean, nullable=False, default=False)
    protected_reason = sa.Column(sa.Text, nullable=True)
    retired = sa.Column(sa.Boolean, nullable=False, default=False)
    retired_reason = sa.Column(sa.Text, nullable=True)
    automated_clean = sa.Column(sa.Boolean, nullable=True)
    console_enabled = sa.Column(sa.Boolean, nullable=False, default=False)
    raid_config = sa.Column(db_types.JsonEncodedDict, nullable=True)
    target_raid_config = sa.Column(db_types.JsonEncodedDict, nullable=True)
    clean_step = sa.Column(db_types.JsonEncodedDict, nullable=True)
    deploy_step = sa.Column(db_types.JsonEncodedDict, nullable=True)
    network_data = sa.Column(db_types.JsonEncodedDict, nullable=True)
    boot_mode = sa.Column(sa.String(16), nullable=True)
    secure_boot = sa.Column(sa.Boolean, nullable=True)
    inspection_started_at = sa.Column(sa.DateTime, nullable=True)
    inspection_finished_at = sa.Column(sa.DateTime, nullable=True)
    allocation_id = sa.Column(sa.Integer, nullable=True)
    shard = sa.Column(sa.String(255), nullable=True)
    # NOTE: the UUID of another node, not a foreign key, as in Ironic:
    # deleting a parent leaves its children naming it.
    parent_node = sa.Column(sa.String(36), nullable=True)
    disable_power_off = sa.Column(sa.Boolean, nullable=False, default=False,
                                  server_default=sa.false())
    instance_name = sa.Column(sa.String(255), nullable=True)
    # NOTE: reported by a BMC in Ironic; no fake node has one, so it stays
    # NULL here.
    health = sa.Column(sa.String(32), nullable=True)
    # NOTE: properties normalised for the matching language, written with
    # properties in the same transaction (matching.node_match_columns):
    # an integer or integer string as its number, else NULL, which never
    # passes a minimum.
    match_cpus = sa.Column(sa.BigInteger, nullable=True)
    match_memory_mb = sa.Column(sa.BigInteger, nullable=True)
    match_local_gb = sa.Column(sa.BigInteger, nullable=True)
    match_cpu_arch = sa.Column(exact_string(255), nullable=True)
    # NOTE: the node's traits and capabilities as one value each
    # (matching.traits_column, matching.capabilities_column), written with
    # the rows of node_traits and node_capabilities in the same
    # transaction: the key of the node's tally (NodeTally).
    match_traits = sa.Column(sa.Text, nullable=True)
    match_capabilities = sa.Column(sa.Text, nullable=True)

    traits = orm.relationship('NodeTrait', lazy='selectin',
                              cascade='all, delete-orphan',
                              passive_deletes=True)


class Chassis(Base):
    """A chassis of the Bare Metal API: a group of nodes and free metadata.

    Nodes name their chassis by ``nodes.chassis_uuid``, with no foreign
    key: a node write naming a chassis locks its row (db.api), and deleting
    a chassis locks it before looking for its nodes, so neither can miss
    the other.
    """

    __tablename__ = 'chassis'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_chassis0uuid'),
        table_args(),
    )
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False)
    description = sa.Column(sa.String(255), nullable=True)
    extra = sa.Column(db_types.JsonEncodedDict, nullable=True)


class NodeTrait(Base):
    __tablename__ = 'node_traits'
    __table_args__ = (
        # NOTE: (trait, node_id) lets "has trait T" be an index probe inside
        # the candidate query.
        sa.Index('node_traits_idx', 'trait', 'node_id'),
        table_args(),
    )
    node_id = sa.Column(sa.Integer, sa.ForeignKey('nodes.id',
                                                  ondelete='CASCADE'),
                        primary_key=True, nullable=False)
    trait = sa.Column(sa.String(255), primary_key=True, nullable=False)


class NodeCapability(Base):
    """One capability of a node's properties (matching.node_capabilities),
    written with the properties in the same transaction."""

    __tablename__ = 'node_capabilities'
    __table_args__ = (
        # NOTE: (name, value, node_id) lets "has capability name=value" be
        # an index probe inside the candidate query.
        sa.Index('node_capabilities_idx', 'name', 'value', 'node_id'),
        table_args(),
    )
    node_id = sa.Column(sa.Integer, sa.ForeignKey('nodes.id',
                                                  ondelete='CASCADE'),
                        primary_key=True, nullable=False)
    name = sa.Column(exact_string(255), primary_key=True, nullable=False)
    value = sa.Column(exact_string(255), nullable=False)


class Allocation(Base):
    """A hold on a node; ``conductor_affinity`` names the conductor
    process (conductors.id) that currently owns it.

    ``kind`` tells an Ironic allocation ('allocation') from a reservation
    of the reservations extension ('reservation'): both hold their node
    the same way (nodes.allocation_id and nodes.instance_uuid), so no
    second lock table can disagree with the node rows.
    """

    __tablename__ = 'allocations'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_allocations0uuid'),
        sa.UniqueConstraint('name', name='uniq_allocations0name'),
        # NOTE: re-drive and take-over look for allocating rows by owner
        # conductor; node lookups go through node_id.
        sa.Index('allocations_state_affinity_idx', 'state',
                 'conductor_affinity'),
        sa.Index('allocations_node_id_idx', 'node_id'),
        sa.Index('allocations_owner_idx', 'owner'),
        sa.Index('allocations_resource_class_idx', 'resource_class'),
        # NOTE: every list reads one kind, in id order.
        sa.Index('allocations_kind_idx', 'kind', 'id'),
        # NOTE: the expiry of leases looks for the holds whose time passed.
        sa.Index('allocations_expires_at_idx', 'expires_at'),
        sa.Index('allocations_group_id_idx', 'group_id'),
        dict(sqlite_autoincrement=True, **table_args()),
    )
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    uuid = sa.Column(sa.String(36), nullable=False)
    name = sa.Column(sa.String(255), nullable=True)
    node_id = sa.Column(sa.Integer, nullable=True)
    state = sa.Column(sa.String(15), nullable=False)
    owner = sa.Column(sa.String(255), nullable=True)
    last_error = sa.Column(sa.Text, nullable=True)
    resource_class = sa.Column(sa.String(80), nullable=True)
    traits = sa.Column(db_types.JsonEncodedList, nullable=True)
    candidate_nodes = sa.Column(db_types.JsonEncodedList, nullable=True)
    extra = sa.Column(db_types.JsonEncodedDict, nullable=True)
    # NOTE: the "match" object of the matching language (extension 1.1);
    # its trait expressions stay in ``traits`` as sent.
    match = sa.Column(db_types.JsonEncodedDict, nullable=True)
    # NOTE: the funnel of an allocation that found no node (conductor
    # allocations.explain()); its one-line form is in last_error.
    explanation = sa.Column(db_types.JsonEncodedDict, nullable=True)
    conductor_affinity = sa.Column(sa.Integer, nullable=True)
    kind = sa.Column(sa.String(15), nullable=False,
                     server_default='allocation', default='allocation')
    # NOTE: a reservation's instance, which its node gets as instance_uuid;
    # NULL for an allocation, whose node gets the allocation's own uuid.
    instance_uuid = sa.Column(sa.String(36), nullable=True)
    # NOTE: the end of the hold's lease (UTC, compared with the database
    # clock); NULL means no expiry, Ironic's behaviour.
    expires_at = sa.Column(sa.DateTime, nullable=True)
    # NOTE: the allocation group (extension 1.3) the allocation was made
    # or handed over in; NULL for a single allocation.
    group_id = sa.Column(sa.Integer, nullable=True)


class AllocationGroup(Base):
    """Allocations changed together, in one transaction or not at all
    (extension 1.3).

    ``spec`` holds the normalised members ({allocation uuid: member}),
    what the conductor solves; the new members' rows exist from the
    group's creation (state allocating), the released and handed-over
    allocations are deleted by the commit that makes the group active.
    """

    __tablename__ = 'allocation_groups'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_allocation_groups0uuid'),
        sa.UniqueConstraint('name', name='uniq_allocation_groups0name'),
        # NOTE: re-drive and take-over look for allocating groups by
        # owner conductor, as for allocations.
        sa.Index('allocation_groups_state_affinity_idx', 'state',
                 'conductor_affinity'),
        sa.Index('allocation_groups_owner_idx', 'owner'),
        dict(sqlite_autoincrement=True, **table_args()),
    )
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    uuid = sa.Column(sa.String(36), nullable=False)
    name = sa.Column(sa.String(255), nullable=True)
    state = sa.Column(sa.String(15), nullable=False)
    owner = sa.Column(sa.String(255), nullable=True)
    last_error = sa.Column(sa.Text, nullable=True)
    # NOTE: the member that could not be satisfied and its funnel.
    explanation = sa.Column(db_types.JsonEncodedDict, nullable=True)
    spec = sa.Column(db_types.JsonEncodedDict, nullable=True)
    conductor_affinity = sa.Column(sa.Integer, nullable=True)
    expires_at = sa.Column(sa.DateTime, nullable=True)


class ProjectLock(Base):
    """One row per project that ever created a hold under a limit.

    Creating a hold locks its owner's row first (an upsert, which locks
    the row on PostgreSQL and MySQL; SQLite serializes writers anyway),
    so that the count of the project's holds and the insert of the new
    one are not interleaved with another request of the same project.
    """

    __tablename__ = 'project_locks'
    __table_args__ = (table_args(),)
    project_id = sa.Column(sa.String(255), primary_key=True)



# The columns of a node's tally key (node_tallies), in order: columns of
# the node, then, for each condition of the picking rule, whether the
# node passes it (passes_<field>).  The triggers on nodes (migration
# 6c2e9b4d8f17) compute the key of a node row.
TALLY_NODE_COLUMNS = (
    'resource_class', 'owner', 'lessee', 'conductor_group', 'match_cpus',
    'match_memory_mb', 'match_local_gb', 'match_cpu_arch', 'match_traits',
    'match_capabilities')
TALLY_KEY = TALLY_NODE_COLUMNS + tuple(
    'passes_%s' % condition.field for condition in picking.PICKABLE)


def _tally_key_columns():
    node = Node.__table__.c
    columns = [sa.Column(name, node[name].type, nullable=True)
               for name in TALLY_NODE_COLUMNS]
    return columns + [sa.Column('passes_%s' % condition.field, sa.Boolean,
                                nullable=False)
                      for condition in picking.PICKABLE]


# How many nodes have one tally key: the nodes of a class counted by
# everything an explanation's funnel tests, so that an explanation reads
# a row per kind of node instead of a row per node.  Folds keep one row
# per key.
#
# The counts lag: each change of a node's key adds rows to
# node_tally_changes (by triggers, in the node write's transaction), which
# a conductor's periodic fold adds to these.  The tallies plus the changes
# not yet folded, read by one statement, are the exact counts.
NODE_TALLIES = sa.Table(
    'node_tallies', Base.metadata,
    sa.Column('id', sa.Integer, primary_key=True),
    *_tally_key_columns(),
    # NOTE: the key again, as one value (statements.tally_key_json()): an
    # explanation reads this instead of the key's columns, a fraction of
    # the work for the database and the reader alike.
    sa.Column('key_json', sa.Text, nullable=False),
    sa.Column('nodes', sa.Integer, nullable=False),
    sa.Index('node_tallies_resource_class_idx', 'resource_class'),
    **table_args())

# A node entering (delta 1) or leaving (delta -1) a tally key.
NODE_TALLY_CHANGES = sa.Table(
    'node_tally_changes', Base.metadata,
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer, 'sqlite'),
              primary_key=True),
    *_tally_key_columns(),
    sa.Column('delta', sa.Integer, nullable=False),
    # NOTE: an explanation reads its class's changes by this index, not by
    # a scan, which would also read every row folded (deleted) since the
    # table's last vacuum.
    sa.Index('node_tally_changes_resource_class_idx', 'resource_class'),
    **table_args())

# The one row (id 1) a fold locks first, so that the folds of several
# conductors run one at a time.
NODE_TALLY_FOLDS = sa.Table(
    'node_tally_folds', Base.metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=False),
    sa.Column('folded_at', sa.DateTime, nullable=True),
    **table_args())
