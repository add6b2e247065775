"""SQLAlchemy implementation of ironic_alloc.db.api.Connection."""

import collections
import datetime
import os
import threading
import types

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
from oslo_db.sqlalchemy import utils as db_utils
from oslo_log import log
from oslo_utils import uuidutils
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.ext import compiler as sa_compiler

from ironic_alloc.common import compat
from ironic_alloc.common import exception
from ironic_alloc.common import lease_time
from ironic_alloc.common import matching
from ironic_alloc.common import metrics
from ironic_alloc.common import picking
from ironic_alloc.common import states
from ironic_alloc.conf import CONF
from ironic_alloc.db import api
from ironic_alloc.db.sqlalchemy import models
from ironic_alloc.db.sqlalchemy import statements as stmts

LOG = log.getLogger(__name__)

_CONTEXT = threading.local()
# NOTE: set while a writer transaction starts on this thread, so SQLite
# begins it with BEGIN IMMEDIATE (see _configure_sqlite).
_WRITE_INTENT = threading.local()
_configured = threading.Lock()
_is_configured = False


def get_backend():
    """The backend is this module itself (oslo.db's DBAPI contract)."""
    return Connection()


def default_connection():
    """The standalone default: an SQLite file under [DEFAULT]state_path."""
    return 'sqlite:///%s' % os.path.join(CONF.state_path,
                                         'ironic-alloc.sqlite')


def _configure_engine_facade():
    global _is_configured
    with _configured:
        if _is_configured:
            return
        if not CONF.database.connection:
            os.makedirs(CONF.state_path, exist_ok=True)
            CONF.set_default('connection', default_connection(),
                             group='database')
        # NOTE: oslo.db sleeps(0) at every connection check-in so that green
        # threads get a turn; ironic_alloc runs real threads, where it only
        # costs time on every transaction.
        enginefacade.configure(thread_checkin=False)
        enginefacade.writer.append_on_engine_create(_pool_sqlite_connections)
        _is_configured = True


def _pool_sqlite_connections(engine):
    # NOTE: oslo.db gives SQLite files a NullPool: a new connection, with its
    # PRAGMAs, for every transaction, a large part of an allocation's cost
    # in the embedded service.  Connections are safe to hand from one
    # thread to the next once check_same_thread is off, since the pool
    # gives each to one thread at a time.
    size = CONF.database.sqlite_pool_size
    if (engine.dialect.name != 'sqlite' or not size
            or not isinstance(engine.pool, sa.pool.NullPool)):
        return
    cargs, cparams = engine.dialect.create_connect_args(engine.url)
    cparams['check_same_thread'] = False

    def connect():
        return engine.dialect.connect(*cargs, **cparams)

    # NOTE: max_overflow=-1: a busy service opens more connections rather
    # than queueing for one.
    try:
        compat.replace_pool(engine, sa.pool.QueuePool, connect,
                            pool_size=size, max_overflow=-1,
                            reset_on_return='rollback')
    except compat.LibraryChanged as exc:
        LOG.error('%s', exc)


def get_engine():
    _configure_engine_facade()
    return enginefacade.writer.get_engine()


class utc_now(sa.sql.expression.FunctionElement):
    """The database server's current UTC time as a naive timestamp."""
    type = sa.DateTime()
    inherit_cache = True


@sa_compiler.compiles(utc_now)
def _utc_now_default(element, compiler, **kw):
    return 'CURRENT_TIMESTAMP'


@sa_compiler.compiles(utc_now, 'postgresql')
def _utc_now_postgresql(element, compiler, **kw):
    return "(now() AT TIME ZONE 'UTC')"


@sa_compiler.compiles(utc_now, 'mysql')
def _utc_now_mysql(element, compiler, **kw):
    return 'UTC_TIMESTAMP(6)'


@sa_compiler.compiles(utc_now, 'sqlite')
def _utc_now_sqlite(element, compiler, **kw):
    return "strftime('%Y-%m-%d %H:%M:%f', 'now')"


# Leases, judged by the database clock (utc_now, not a process's clock).

# The database's time and the node that instance "instance_uuid" is
# already bound to (NULL when none), in one round trip: how a reservation
# starts.
_TIME_AND_INSTANCE_HOLDER = sa.select(
    utc_now().label('now'),
    stmts.NODE_UUID_BY_INSTANCE.scalar_subquery().label('holder'))

# At most "limit" holds (allocations of both kinds) whose lease passed and
# that the expiry may take now, the oldest lease first: those without a
# node and those whose node no conductor is changing.  Each is then
# released, or, when its node is deployed (statements.HOLD_DEPLOYED:
# nothing should have left a lease on it), its lease is removed; so none
# is found again.
_EXPIRED_HOLDS = sa.select(stmts.ALLOCATIONS.c.id).select_from(
    stmts.ALLOCATIONS.outerjoin(
        stmts.NODES, stmts.NODES.c.id == stmts.ALLOCATIONS.c.node_id),
).where(
    stmts.ALLOCATIONS.c.expires_at < utc_now(),
    # NOTE: a group's members expire with their group, never alone.
    stmts.ALLOCATIONS.c.group_id.is_(None),
    sa.or_(stmts.NODES.c.id.is_(None), stmts.NODE_UNLOCKED),
).order_by(stmts.ALLOCATIONS.c.expires_at, stmts.ALLOCATIONS.c.id).limit(
    sa.bindparam('limit'))

# The release itself: the row goes only while its lease has passed, so of
# several conductors releasing it one deletes it (rowcount 1) and a lease
# renewed or cleared meanwhile keeps it; and only while its node may lose
# it (statements.HOLD_RELEASABLE), whatever wrote the lease.
_DELETE_EXPIRED_HOLD = stmts.ALLOCATIONS.delete().where(
    stmts.ALLOCATIONS.c.id == sa.bindparam('id'),
    stmts.ALLOCATIONS.c.group_id.is_(None),
    stmts.ALLOCATIONS.c.expires_at < utc_now(),
    stmts.HOLD_RELEASABLE)

# An ended lease found on a deployed node's hold goes instead: that hold
# ends at tear-down, and a lease left on it would release it at the
# first moment the node is free to lose it.
_CLEAR_DEPLOYED_HOLD_LEASE = stmts.ALLOCATIONS.update().where(
    stmts.ALLOCATIONS.c.id == sa.bindparam('hold_id'),
    stmts.ALLOCATIONS.c.group_id.is_(None),
    stmts.ALLOCATIONS.c.expires_at < utc_now(),
    stmts.HOLD_DEPLOYED).values(expires_at=None)

# A member of group "groups.id" whose node a conductor is changing: the
# group waits for the next pass.
_GROUP_MEMBER_BUSY = sa.exists().where(
    stmts.ALLOCATIONS.c.group_id == stmts.GROUPS.c.id,
    stmts.NODES.c.id == stmts.ALLOCATIONS.c.node_id,
    ~stmts.NODE_UNLOCKED)

# The groups whose lease ended and whose members' nodes no conductor is
# changing, the oldest lease first.
_EXPIRED_GROUPS = sa.select(stmts.GROUPS.c.id).where(
    stmts.GROUPS.c.expires_at < utc_now(), ~_GROUP_MEMBER_BUSY,
).order_by(stmts.GROUPS.c.expires_at, stmts.GROUPS.c.id).limit(
    sa.bindparam('limit'))

# The group whose lease ended, locked first (the lock order of the
# group's DELETE and of a member's deploy): of several conductors one
# finds it, the others wait and then find nothing.
_EXPIRED_GROUP_FOR_DELETE = sa.select(stmts.GROUPS).where(
    stmts.GROUPS.c.id == sa.bindparam('id'),
    stmts.GROUPS.c.expires_at < utc_now()).with_for_update()

# The ended lease of a group of which a member's node is deployed goes,
# as a single hold's (its members' leases with it).
_CLEAR_DEPLOYED_GROUP_LEASE = stmts.GROUPS.update().where(
    stmts.GROUPS.c.id == sa.bindparam('group_id'),
    stmts.GROUPS.c.expires_at < utc_now(),
    stmts.GROUP_HOLDS_DEPLOYED).values(expires_at=None)

# One member of an ended group, deleted only while its node may lose it.
_DELETE_EXPIRED_MEMBER = stmts.ALLOCATIONS.delete().where(
    stmts.ALLOCATIONS.c.id == sa.bindparam('id'),
    stmts.ALLOCATIONS.c.group_id == sa.bindparam('group_id'),
    stmts.HOLD_RELEASABLE)


@event.listens_for(sa.engine.Engine, 'connect')
def _configure_sqlite(dbapi_conn, connection_record):
    if type(dbapi_conn).__module__.split('.')[0] != 'sqlite3':
        return
    # NOTE: WAL lets readers run beside the one writer, and the busy
    # timeout makes writers queue for the lock instead of failing.
    cur = dbapi_conn.cursor()
    cur.execute('PRAGMA busy_timeout = %d' % CONF.database.sqlite_busy_timeout)
    try:
        cur.execute('PRAGMA journal_mode = WAL')
    except Exception:  # in-memory databases have no WAL; fine
        pass
    cur.close()


@event.listens_for(sa.engine.Engine, 'before_cursor_execute', retval=True)
def _begin_immediate_for_writers(conn, cursor, statement, parameters,
                                 context, executemany):
    # NOTE: oslo.db begins SQLite transactions itself with a plain BEGIN.
    # A writer must take the write lock up front (BEGIN IMMEDIATE): a
    # deferred transaction that reads and then writes fails at once with
    # "database is locked" when another writer committed meanwhile, and the
    # busy timeout cannot help it.
    if (statement == 'BEGIN' and conn.dialect.name == 'sqlite'
            and getattr(_WRITE_INTENT, 'value', False)):
        statement = 'BEGIN IMMEDIATE'
    return statement, parameters


def _is_sqlite_locked(exc):
    return isinstance(exc, db_exc.DBError) and \
        'database is locked' in str(exc)


def _is_conflict(exc):
    """Whether a writer retries ``exc`` (a deadlock, SQLite's lock); each
    one is counted in the metrics."""
    if isinstance(exc, db_exc.DBDeadlock):
        metrics.db_retry(metrics.DB_DEADLOCK)
        return True
    if _is_sqlite_locked(exc):
        metrics.db_retry(metrics.DB_LOCKED)
        return True
    return False


CONFLICT_RETRIES = 8
"""How many times retry_on_conflict retries a writer transaction"""


def _conflict_name(exc):
    """What kind of conflict ``exc`` is, or None when it is none."""
    if isinstance(exc, db_exc.DBDeadlock):
        return 'deadlock'
    if _is_sqlite_locked(exc):
        return 'database locked'
    return None


def retry_on_conflict(f):
    """Retry a whole writer transaction on deadlock or SQLite lock."""
    # NOTE: deadlocks are recognised by the exception checker rather than
    # by oslo.db's retry_on_deadlock, which would retry them without
    # asking it: the checker is where retries are counted.
    return oslo_db_api.wrap_db_retry(
        max_retries=CONFLICT_RETRIES, retry_interval=0.05,
        max_retry_interval=1, inc_retry_interval=True,
        exception_checker=_is_conflict)(f)


def _session_for_read():
    _configure_engine_facade()
    return enginefacade.reader.using(_CONTEXT)


def _connection_for_read():
    """A Core connection in a reader transaction (see statements)."""
    _configure_engine_facade()
    return enginefacade.reader.connection.using(_CONTEXT)


class _Writer:
    """enginefacade's writer (a session, or a Core connection), telling
    SQLite to begin IMMEDIATE."""

    def __init__(self, mode):
        self._mode = mode

    def __enter__(self):
        _configure_engine_facade()
        self._outer = getattr(_WRITE_INTENT, 'value', False)
        _WRITE_INTENT.value = True
        self._cm = self._mode.using(_CONTEXT)
        return self._cm.__enter__()

    def __exit__(self, *exc_info):
        try:
            return self._cm.__exit__(*exc_info)
        finally:
            _WRITE_INTENT.value = self._outer


def _session_for_write():
    return _Writer(enginefacade.writer)


def _connection_for_write():
    return _Writer(enginefacade.writer.connection)


def _paginate_query(model, limit, marker, sort_key, sort_dir, query):
    sort_keys = ['id']
    if sort_key and sort_key not in sort_keys:
        sort_keys.insert(0, sort_key)
    try:
        query = db_utils.paginate_query(query, model, limit, sort_keys,
                                        marker=marker, sort_dir=sort_dir)
    except db_exc.InvalidSortKey:
        raise exception.InvalidParameterValue(
            err='The sort_key value "%s" is an invalid field for sorting'
            % sort_key)
    return query.all()


def _uuids_by_id(model, ids):
    # NOTE: only the two columns: list pages map ids to UUIDs for every
    # row they show, so loading whole rows (nodes with their traits) here
    # would cost more than the page itself.
    ids = list({i for i in ids if i is not None})
    if not ids:
        return {}
    with _session_for_read() as session:
        return dict(session.query(model.id, model.uuid)
                    .filter(model.id.in_(ids)).all())


def _backfill_refusal(conn, node_id, node_uuid, node_states,
                      allocation_uuid):
    """Why BACKFILL_NODE matched no row, read in its transaction.

    :returns: NodeLocked while a conductor holds the node, NodeChanged
        otherwise.
    """
    node = conn.execute(stmts.NODE_FOR_BACKFILL_CHECK,
                        {'node_id': node_id}).first()
    if node is None:
        reason = 'it was deleted'
    elif node.reservation is not None:
        return exception.NodeLocked(node=node.uuid, host=node.reservation)
    elif node.provision_state not in node_states:
        reason = 'it is in provision state %s' % node.provision_state
    elif node.allocation_id is not None:
        reason = 'it got an allocation'
    elif node.instance_uuid not in (None, allocation_uuid):
        reason = 'it got instance %s' % node.instance_uuid
    else:
        # NOTE: the lock was released between the UPDATE and this read.
        reason = 'a conductor was changing it'
    return exception.NodeChanged(node=node_uuid, reason=reason)


def _node_unique_violation(exc, values):
    columns = exc.columns or []
    if 'name' in columns or 'uniq_nodes0name' in columns:
        return exception.DuplicateName(name=values.get('name'))
    if 'instance_uuid' in columns or 'uniq_nodes0instance_uuid' in columns:
        return exception.InstanceAssociated(
            instance_uuid=values.get('instance_uuid'),
            node=values.get('uuid') or values.get('id'))
    return exception.NodeAlreadyExists(uuid=values.get('uuid'))


_NODE_LIST_FILTERS = ('provision_state', 'resource_class', 'maintenance',
                      'associated', 'owner', 'lessee', 'project',
                      'conductor_group', 'driver', 'reserved',
                      'reserved_by_any_of', 'fault', 'retired',
                      'description_contains', 'uuid_in', 'instance_uuid',
                      'id_in', 'chassis_uuid', 'shard_in', 'sharded', 'parent_node',
                      'instance_name', 'has_parent')


def _filter_nodes(query, filters):
    unknown = set(filters) - set(_NODE_LIST_FILTERS)
    if unknown:
        raise ValueError('Unknown node filters: %s' % sorted(unknown))
    m = models.Node
    for key in ('resource_class', 'owner', 'lessee', 'driver', 'fault',
                'instance_uuid', 'chassis_uuid', 'instance_name'):
        if key in filters:
            query = query.filter(getattr(m, key) == filters[key])
    if 'conductor_group' in filters:
        query = query.filter(
            sa.func.lower(m.conductor_group) ==
            filters['conductor_group'].lower())
    if 'provision_state' in filters:
        states = filters['provision_state']
        if isinstance(states, (list, tuple, set)):
            query = query.filter(m.provision_state.in_(list(states)))
        else:
            query = query.filter(m.provision_state == states)
    for key in ('maintenance', 'retired'):
        if key in filters:
            query = query.filter(getattr(m, key) == bool(filters[key]))
    if 'associated' in filters:
        if filters['associated']:
            query = query.filter(m.instance_uuid.isnot(None))
        else:
            query = query.filter(m.instance_uuid.is_(None))
    if 'reserved' in filters:
        if filters['reserved']:
            query = query.filter(m.reservation.isnot(None))
        else:
            query = query.filter(m.reservation.is_(None))
    if 'reserved_by_any_of' in filters:
        query = query.filter(
            m.reservation.in_(list(filters['reserved_by_any_of'])))
    if 'project' in filters:
        query = query.filter(sa.or_(m.owner == filters['project'],
                                    m.lessee == filters['project']))
    if 'description_contains' in filters:
        # NOTE: user text is matched literally: % and _ are escaped.
        query = query.filter(m.description.contains(
            filters['description_contains'], autoescape=True))
    if 'uuid_in' in filters:
        query = query.filter(m.uuid.in_(list(filters['uuid_in'])))
    if 'id_in' in filters:
        query = query.filter(m.id.in_(list(filters['id_in'])))
    if 'shard_in' in filters:
        query = query.filter(m.shard.in_(list(filters['shard_in'])))
    if 'sharded' in filters:
        if filters['sharded']:
            query = query.filter(m.shard.isnot(None))
        else:
            query = query.filter(m.shard.is_(None))
    if 'parent_node' in filters:
        query = query.filter(m.parent_node == filters['parent_node'])
    if 'has_parent' in filters:
        if filters['has_parent']:
            query = query.filter(m.parent_node.isnot(None))
        else:
            query = query.filter(m.parent_node.is_(None))
    return query


def _lock_named_chassis(session, values):
    """Lock the chassis a node write names (``values['chassis_uuid']``)
    until the write commits, so destroy_chassis() waits for it and then
    sees the node.

    :raises: ChassisNotFound.
    """
    chassis_uuid = values.get('chassis_uuid')
    if not chassis_uuid:
        return
    found = session.query(models.Chassis.id).filter_by(
        uuid=chassis_uuid).with_for_update().first()
    if found is None:
        raise exception.ChassisNotFound(chassis=chassis_uuid)


def _lock_parent_chain(session, node_uuid, values):
    """Lock the parent a node write names (``values['parent_node']``) and
    each of its ancestors until the write commits, checking that the node
    is not among them.

    NOTE: two writes making each node the parent of the other lock the
    same rows in opposite orders: the database aborts one of them as a
    deadlock, and its retry finds the other's parent and refuses.

    :raises: NodeParentInvalid when the parent does not exist or the
        change would make the node its own ancestor.
    """
    parent = values.get('parent_node')
    if not parent:
        return
    seen = set()
    current = parent
    while current is not None:
        if current == node_uuid:
            raise exception.NodeParentInvalid(
                reason='node %s would be its own ancestor' % node_uuid)
        if current in seen:
            # NOTE: a loop written before these checks existed; it does
            # not go through this node, so it is not this write's doing.
            return
        seen.add(current)
        row = session.query(models.Node.parent_node).filter_by(
            uuid=current).with_for_update().first()
        if row is None:
            if current == parent:
                raise exception.NodeParentInvalid(
                    reason='node %s does not exist' % parent)
            # NOTE: an ancestor deleted earlier ends the chain, as in
            # Ironic, where deleting a parent leaves its children as
            # they are.
            return
        current = row.parent_node


def _with_match_columns(values):
    """``values`` of a node write plus its normalised properties, when it
    writes ``properties``."""
    if 'properties' not in values:
        return values
    return dict(values, **matching.node_match_columns(values['properties']))


def _write_capabilities(session, node_id, properties):
    """Replace a node's capability rows, in the caller's transaction."""
    session.query(models.NodeCapability).filter_by(
        node_id=node_id).delete(synchronize_session=False)
    for name, value in sorted(matching.node_capabilities(
            properties).items()):
        session.add(models.NodeCapability(node_id=node_id, name=name,
                                          value=value))


def _write_match_traits(session, node_id):
    """Write a node's match_traits from its trait rows, in the caller's
    transaction (after the rows changed)."""
    traits = [row.trait for row in session.query(
        models.NodeTrait.trait).filter_by(node_id=node_id)]
    session.query(models.Node).filter_by(id=node_id).update(
        {'match_traits': matching.traits_column(traits)},
        synchronize_session=False)


def _refusal(node, project):
    """Why ``node`` (a row of NODES_FOR_RESERVATION) cannot be reserved
    by a caller of ``project`` (None: sees every node), or None."""
    if project and project not in (node.owner, node.lessee):
        return 'not found'
    for condition in picking.PICKABLE:
        if not picking.holds(condition, getattr(node, condition.field)):
            if (condition.field == 'allocation_id'
                    and node.holder_kind == states.RESERVATION_KIND):
                return 'reserved'
            return stmts.REFUSALS[condition.field] % node._asdict()
    if node.reservation is not None:
        return 'locked by a conductor'
    return None


def _reservation_reasons(node_uuids, nodes, project, default=None):
    """One reason per requested node, in order, for a reservation's 409:
    ``nodes`` are the rows of NODES_FOR_RESERVATION read for the request;
    ``default`` is the reason of a node that could be reserved when read.
    """
    by_uuid = {node.uuid: node for node in nodes}
    reasons = []
    for node_uuid in node_uuids:
        node = by_uuid.get(node_uuid)
        reason = ('not found' if node is None
                  else _refusal(node, project) or default)
        reasons.append({'node_uuid': node_uuid, 'reason': reason})
    return reasons


# Why an allocation with an owner found no node when its owner owns or
# leases none of the class.
_NONE_OF_THE_OWNERS = ('no node owned or leased by "%(owner)s" has '
                       'resource class "%(resource_class)s"')

# Why no node was reserved when some pass every constraint.
_ALL_TAKEN = ('all matching nodes were reserved by concurrent allocations '
              'or locked by other operations')


def _funnel_of_tallies(groups, params, rows):
    """The funnel's counts (as stmts.funnel() gives them: the number of
    the first constraint of ``groups`` each node fails, 0 for a match) of
    the rows of stmts.tally_rows()."""
    rows = list(rows)
    steps = _TALLY_STEPS.steps(groups, params)
    if len(steps) > 2 * len(rows) + _TallyStepCache.SPARE_KEYS:
        # NOTE: keys of nodes changed since (a tally key is forgotten
        # when its last node leaves it).
        steps.clear()
    counts = collections.Counter()
    for row in rows:
        # NOTE: a tally is known by its key_json, a change by its key's
        # columns; the nodes of one key count where the key goes, so a
        # change and its tally add up without being matched first.
        key = row[0] if row[0] is not None else tuple(row[1:-1])
        step = steps.get(key)
        if step is None:
            step = steps[key] = _first_failed(groups, params, key)
        counts[step] += row[-1]
    return counts


def _first_failed(groups, params, values):
    """The number of the first constraint of ``groups`` (from 1) the
    nodes of the tally key ``values`` (as stmts.tally_rows() gives it)
    fail, 0 when they pass all."""
    key = stmts.tally_key(values)
    for number, constraint in enumerate(groups[1:], 1):
        if not constraint.tally(key, params):
            return number
    return 0


class _TallyStepCache:
    """What _first_failed() answered, per criteria: a pure function of
    the criteria and the key, and the keys of a fleet are few and
    long-lived, so an explanation of criteria asked recently classifies
    only the keys it has not seen.  The criteria asked last are kept.
    """

    # Criteria kept, and keys kept beyond twice those of the class.
    SIZE = 64
    SPARE_KEYS = 1000

    def __init__(self):
        self._lock = threading.Lock()
        self._by_criteria = collections.OrderedDict()

    def steps(self, groups, params):
        """{key values: step} for these constraints and parameters; the
        caller adds what it computes."""
        criteria = (id(groups), tuple(sorted(
            (name, tuple(value) if isinstance(value, list) else value)
            for name, value in params.items())))
        with self._lock:
            steps = self._by_criteria.get(criteria)
            if steps is None:
                # NOTE: keyed by the id of the groups, which
                # stmts.candidate_groups() keeps for the process's life.
                steps = self._by_criteria[criteria] = {}
                if len(self._by_criteria) > self.SIZE:
                    self._by_criteria.popitem(last=False)
            else:
                self._by_criteria.move_to_end(criteria)
        return steps


_TALLY_STEPS = _TallyStepCache()


def _fold_tallies(conn, limit):
    """Add at most ``limit`` of the oldest tally changes to the tallies
    and delete them, in the caller's transaction, which holds the lock of
    the folds.

    :returns: the number of changes folded.
    """
    changes = conn.execute(stmts.TALLY_CHANGES_TO_FOLD,
                           {'limit': limit}).all()
    if not changes:
        return 0
    deltas = collections.Counter()
    for change in changes:
        deltas[tuple(change[2:])] += change.delta
    tallies = {tuple(row[2:]): row for row in conn.execute(stmts.ALL_TALLIES)}
    for key, delta in deltas.items():
        tally = tallies.get(key)
        if not delta:
            continue
        if tally is None:
            conn.execute(stmts.INSERT_TALLY,
                         dict(zip(models.TALLY_KEY, key), nodes=delta,
                              key_json=stmts.tally_key_json(key)))
        elif tally.nodes + delta == 0:
            conn.execute(stmts.DELETE_TALLY, {'tally_id': tally.id})
        else:
            conn.execute(stmts.ADD_TO_TALLY, {'tally_id': tally.id,
                                              'delta': delta})
    ids = [change.id for change in changes]
    for start in range(0, len(ids), _FOLD_DELETE_CHUNK):
        conn.execute(stmts.DELETE_TALLY_CHANGES,
                     {'ids': ids[start:start + _FOLD_DELETE_CHUNK]})
    return len(changes)


# Change rows deleted per statement by a fold.
_FOLD_DELETE_CHUNK = 1000


class _NodeNotReserved(Exception):
    """Rolls back a reservation whose node was no longer a candidate."""


class Connection(api.Connection):

    def connect_on_demand(self):
        _configure_engine_facade()
        try:
            # NOTE: oslo.db skips its connection test (and the retries)
            # when max_retries is 0; later connections are made by the
            # pool on demand either way.
            enginefacade.configure(max_retries=0)
        except enginefacade.AlreadyStartedError:
            # The engine exists: no start-up test is left to skip.
            pass

    # Nodes

    @retry_on_conflict
    def create_node(self, values):
        values = dict(values)
        traits = values.pop('traits', None) or []
        values.setdefault('uuid', uuidutils.generate_uuid())
        values = dict(values, match_traits=matching.traits_column(traits),
                      **matching.node_match_columns(
                          values.get('properties')))
        node = models.Node()
        node.update(values)
        node.traits = [models.NodeTrait(trait=t) for t in sorted(set(traits))]
        try:
            with _session_for_write() as session:
                _lock_named_chassis(session, values)
                _lock_parent_chain(session, values['uuid'], values)
                session.add(node)
                session.flush()
                _write_capabilities(session, node.id,
                                    values.get('properties'))
                session.flush()
        except db_exc.DBDuplicateEntry as exc:
            raise _node_unique_violation(exc, values)
        return self.get_node_by_uuid(values['uuid'])

    def _get_node(self, **criteria):
        with _session_for_read() as session:
            node = session.query(models.Node).filter_by(**criteria).first()
            if node is None:
                raise exception.NodeNotFound(
                    node=next(iter(criteria.values())))
            return node

    def get_node_by_id(self, node_id):
        return self._get_node(id=node_id)

    def get_node_by_uuid(self, node_uuid):
        return self._get_node(uuid=node_uuid)

    def get_node_by_name(self, node_name):
        return self._get_node(name=node_name)

    def get_node_by_instance(self, instance_uuid):
        if not uuidutils.is_uuid_like(instance_uuid):
            raise exception.InvalidUUID(uuid=instance_uuid)
        try:
            return self._get_node(instance_uuid=instance_uuid)
        except exception.NodeNotFound:
            raise exception.NodeNotFound(
                node='with instance %s' % instance_uuid)

    def get_node_list(self, filters=None, limit=None, marker=None,
                      sort_key=None, sort_dir=None):
        with _session_for_read() as session:
            query = _filter_nodes(session.query(models.Node), filters or {})
            marker_obj = None
            if marker is not None:
                marker_obj = session.get(models.Node, marker)
            return _paginate_query(models.Node, limit, marker_obj, sort_key,
                                   sort_dir, query)

    def get_node_resource_classes(self):
        with _session_for_read() as session:
            return {row.resource_class for row in session.query(
                models.Node.resource_class).filter(
                    models.Node.resource_class.isnot(None)).distinct()}

    def get_shard_counts(self):
        with _session_for_read() as session:
            rows = session.query(
                models.Node.shard, sa.func.count(models.Node.id)).group_by(
                    models.Node.shard).all()
        return [(shard, count) for shard, count in rows]

    @retry_on_conflict
    def update_node(self, node_id, values):
        if 'traits' in values:
            raise ValueError('Traits are changed with set_node_traits')
        if 'uuid' in values:
            raise exception.InvalidParameterValue(
                err='Cannot overwrite UUID for an existing node.')
        try:
            with _session_for_write() as session:
                node = session.query(models.Node).filter_by(
                    id=node_id).with_for_update().first()
                if node is None:
                    raise exception.NodeNotFound(node=node_id)
                node_uuid = node.uuid  # for the error below (not the id)
                _lock_named_chassis(session, values)
                _lock_parent_chain(session, node_uuid, values)
                if 'provision_state' in values:
                    values = dict(values,
                                  provision_updated_at=datetime.datetime.now(
                                      datetime.timezone.utc).replace(
                                          tzinfo=None))
                node.update(_with_match_columns(values))
                if 'properties' in values:
                    _write_capabilities(session, node_id,
                                        values['properties'])
                session.flush()
        except db_exc.DBDuplicateEntry as exc:
            raise _node_unique_violation(exc, dict(values, uuid=node_uuid))
        return self.get_node_by_id(node_id)

    @retry_on_conflict
    def destroy_node(self, node_id):
        with _session_for_write() as session:
            # NOTE: a node deleted in maintenance takes its allocation
            # with it, in the same transaction.
            session.query(models.Allocation).filter_by(
                node_id=node_id).delete()
            session.query(models.NodeTrait).filter_by(
                node_id=node_id).delete()
            session.query(models.NodeCapability).filter_by(
                node_id=node_id).delete()
            count = session.query(models.Node).filter_by(
                id=node_id).delete()
            if not count:
                raise exception.NodeNotFound(node=node_id)

    @retry_on_conflict
    def reserve_node(self, tag, node_id):
        with _session_for_write() as session:
            count = session.query(models.Node).filter(
                models.Node.id == node_id, stmts.NODE_UNLOCKED).update(
                    {'reservation': tag}, synchronize_session=False)
            if count != 1:
                node = session.query(models.Node).filter_by(
                    id=node_id).first()
                if node is None:
                    raise exception.NodeNotFound(node=node_id)
                raise exception.NodeLocked(node=node.uuid,
                                           host=node.reservation)
        return self.get_node_by_id(node_id)

    @retry_on_conflict
    def release_node(self, tag, node_id, values=None):
        values = _with_match_columns(dict(values or {}, reservation=None))
        if 'provision_state' in values:
            values['provision_updated_at'] = datetime.datetime.now(
                datetime.timezone.utc).replace(tzinfo=None)
        with _session_for_write() as session:
            count = session.query(models.Node).filter_by(
                id=node_id, reservation=tag).update(
                    values, synchronize_session=False)
            if count == 1 and 'properties' in values:
                _write_capabilities(session, node_id, values['properties'])
        return count == 1

    @retry_on_conflict
    def set_node_traits(self, node_id, traits):
        with _session_for_write() as session:
            # NOTE: the node's row lock orders the trait writes of one
            # node, so that match_traits is written from every committed
            # row.
            if not session.query(models.Node.id).filter_by(
                    id=node_id).with_for_update().first():
                raise exception.NodeNotFound(node=node_id)
            session.query(models.NodeTrait).filter_by(
                node_id=node_id).delete()
            for trait in sorted(set(traits)):
                session.add(models.NodeTrait(node_id=node_id, trait=trait))
            # NOTE: bump updated_at so clients see the node changed.
            session.query(models.Node).filter_by(id=node_id).update(
                {'updated_at': datetime.datetime.now(
                    datetime.timezone.utc).replace(tzinfo=None),
                 'match_traits': matching.traits_column(traits)},
                synchronize_session=False)

    @retry_on_conflict
    def add_node_trait(self, node_id, trait):
        with _session_for_write() as session:
            # NOTE: the node's row lock orders the trait writes of one
            # node, so that match_traits is written from every committed
            # row.
            if not session.query(models.Node.id).filter_by(
                    id=node_id).with_for_update().first():
                raise exception.NodeNotFound(node=node_id)
            exists = session.query(models.NodeTrait).filter_by(
                node_id=node_id, trait=trait).first()
            if not exists:
                session.add(models.NodeTrait(node_id=node_id, trait=trait))
                session.flush()
                _write_match_traits(session, node_id)

    @retry_on_conflict
    def delete_node_trait(self, node_id, trait):
        with _session_for_write() as session:
            # NOTE: the node's row lock orders the trait writes of one
            # node, so that match_traits is written from every committed
            # row.
            if not session.query(models.Node.id).filter_by(
                    id=node_id).with_for_update().first():
                raise exception.NodeNotFound(node=node_id)
            count = session.query(models.NodeTrait).filter_by(
                node_id=node_id, trait=trait).delete()
            if not count:
                raise exception.NodeTraitNotFound(node_id=node_id,
                                                  trait=trait)
            _write_match_traits(session, node_id)

    @retry_on_conflict
    def release_dead_reservations(self, timeout, abandoned_states,
                                  hostname=None):
        if hostname is None:
            alive = [c.hostname for c in self.get_alive_conductors(timeout)]
        released = []
        with _session_for_write() as session:
            query = session.query(models.Node).filter(
                models.Node.reservation.isnot(None))
            if hostname is not None:
                query = query.filter(models.Node.reservation == hostname)
            elif alive:
                query = query.filter(models.Node.reservation.notin_(alive))
            for node in query.with_for_update():
                released.append((node.uuid, node.reservation,
                                 node.provision_state))
                if node.provision_state in abandoned_states:
                    node.last_error = (
                        'Conductor %s stopped while the node was %s; the '
                        'action was abandoned.' % (node.reservation,
                                                   node.provision_state))
                    node.provision_state = abandoned_states[
                        node.provision_state]
                    node.target_provision_state = None
                    node.provision_updated_at = datetime.datetime.now(
                        datetime.timezone.utc).replace(tzinfo=None)
                if node.target_power_state is not None:
                    node.target_power_state = None
                node.reservation = None
        return released

    # Chassis

    @retry_on_conflict
    def create_chassis(self, values):
        values = dict(values)
        values.setdefault('uuid', uuidutils.generate_uuid())
        chassis = models.Chassis()
        chassis.update(values)
        try:
            with _session_for_write() as session:
                session.add(chassis)
                session.flush()
        except db_exc.DBDuplicateEntry:
            raise exception.ChassisAlreadyExists(uuid=values['uuid'])
        return self.get_chassis_by_uuid(values['uuid'])

    def _get_chassis(self, **criteria):
        with _session_for_read() as session:
            chassis = session.query(models.Chassis).filter_by(
                **criteria).first()
            if chassis is None:
                raise exception.ChassisNotFound(
                    chassis=next(iter(criteria.values())))
            return chassis

    def get_chassis_by_id(self, chassis_id):
        return self._get_chassis(id=chassis_id)

    def get_chassis_by_uuid(self, chassis_uuid):
        return self._get_chassis(uuid=chassis_uuid)

    def get_chassis_list(self, limit=None, marker=None, sort_key=None,
                         sort_dir=None):
        with _session_for_read() as session:
            marker_obj = None
            if marker is not None:
                marker_obj = session.get(models.Chassis, marker)
            return _paginate_query(models.Chassis, limit, marker_obj,
                                   sort_key, sort_dir,
                                   session.query(models.Chassis))

    @retry_on_conflict
    def update_chassis(self, chassis_id, values):
        if 'uuid' in values:
            raise exception.InvalidParameterValue(
                err='Cannot overwrite UUID for an existing chassis.')
        with _session_for_write() as session:
            chassis = session.query(models.Chassis).filter_by(
                id=chassis_id).with_for_update().first()
            if chassis is None:
                raise exception.ChassisNotFound(chassis=chassis_id)
            chassis.update(values)
            session.flush()
        return self.get_chassis_by_id(chassis_id)

    @retry_on_conflict
    def destroy_chassis(self, chassis_id):
        with _session_for_write() as session:
            # NOTE: locked before looking for nodes: a node write naming
            # this chassis holds the same lock until it commits (see
            # _lock_named_chassis), so its node is seen here or its write
            # finds the chassis gone.
            chassis = session.query(models.Chassis).filter_by(
                id=chassis_id).with_for_update().first()
            if chassis is None:
                raise exception.ChassisNotFound(chassis=chassis_id)
            has_nodes = session.query(models.Node.id).filter_by(
                chassis_uuid=chassis.uuid).first() is not None
            if has_nodes:
                raise exception.ChassisNotEmpty(chassis=chassis.uuid)
            session.delete(chassis)

    # Allocations

    @retry_on_conflict
    def create_allocation(self, values, limits=None):
        values = _naive_lease_end(values)
        values.setdefault('uuid', uuidutils.generate_uuid())
        values.setdefault('state', states.ALLOCATING)
        with _connection_for_write() as conn:
            if limits:
                _check_project_limits(conn, limits, values['resource_class'])
            allocation = self._insert_allocation(conn, values)
        # NOTE: answered from the committed transaction, with no second
        # query that could fail after the commit (the API must not turn a
        # committed allocation into an error a client would retry).
        return allocation

    @staticmethod
    def _insert_allocation(conn, values, backfilled_node=None):
        """:param backfilled_node: UUID of the node a backfill binds, which
            may already have the allocation's UUID as its instance.
        :returns: the new row (every column, as attributes).
        """
        try:
            result = conn.execute(stmts.INSERT_ALLOCATION, values)
        except db_exc.DBDuplicateEntry as exc:
            columns = exc.columns or []
            if 'name' in columns or 'uniq_allocations0name' in columns:
                raise exception.AllocationDuplicateName(
                    name=values.get('name'))
            raise exception.AllocationAlreadyExists(uuid=values['uuid'])
        # NOTE: after the INSERT, so that a UUID taken by another hold is
        # "already exists" whoever holds it; the node that has the UUID
        # as its instance is never named, the caller may not see it.  The
        # row goes with the transaction.
        node_uuid = conn.execute(stmts.NODE_UUID_BY_INSTANCE,
                                 {'instance_uuid': values['uuid']}).scalar()
        if node_uuid is not None and node_uuid != backfilled_node:
            raise exception.InstanceAlreadyAssociated(
                instance_uuid=values['uuid'])
        # NOTE: the inserted parameters include the column defaults
        # (created_at) computed for the INSERT.
        row = dict.fromkeys(stmts.ALLOCATIONS.columns.keys())
        row.update(result.last_inserted_params())
        row['id'] = result.inserted_primary_key[0]
        return types.SimpleNamespace(**row)

    @retry_on_conflict
    def backfill_allocation(self, values, node_id, node_uuid, node_states,
                            limits=None):
        values = dict(_naive_lease_end(values),
                      state=states.ALLOCATION_ACTIVE, node_id=node_id)
        values.setdefault('uuid', uuidutils.generate_uuid())
        with _connection_for_write() as conn:
            if limits:
                _check_project_limits(conn, limits,
                                      values.get('resource_class'))
            allocation = self._insert_allocation(conn, values,
                                                 backfilled_node=node_uuid)
            count = conn.execute(stmts.BACKFILL_NODE, {
                'node_id': node_id, 'node_states': list(node_states),
                'allocation_id': allocation.id,
                'allocation_uuid': values['uuid']}).rowcount
            if count != 1:
                # Raising rolls the transaction back: the allocation
                # inserted above goes with it.
                raise _backfill_refusal(conn, node_id, node_uuid,
                                        node_states, values['uuid'])
        return self.get_allocation_by_uuid(values['uuid'])

    @staticmethod
    def _one_allocation(statements, criteria):
        """Run the statement of ``statements`` for the one criterion."""
        (column, value), = criteria.items()
        with _connection_for_read() as conn:
            row = conn.execute(statements[column], {'value': value}).first()
        if row is None:
            raise exception.AllocationNotFound(allocation=value)
        return row

    def get_allocation_by_id(self, allocation_id):
        return self._one_allocation(stmts.ALLOCATION_BY, {'id': allocation_id})

    def get_allocation_by_uuid(self, allocation_uuid):
        return self._one_allocation(stmts.ALLOCATION_BY,
                                    {'uuid': allocation_uuid})

    def get_allocation_by_name(self, name):
        return self._one_allocation(stmts.ALLOCATION_BY, {'name': name})

    def get_allocation_with_node_uuid(self, **criteria):
        row = self._one_allocation(stmts.ALLOCATION_WITH_NODE_UUID_BY,
                                   criteria)
        return row, row.node_uuid

    def get_node_uuids(self, node_ids):
        return _uuids_by_id(models.Node, node_ids)

    def get_allocation_uuids(self, allocation_ids):
        # NOTE: a node's allocation_uuid: Ironic's API never shows a
        # reservation as one.
        ids = list({i for i in allocation_ids if i is not None})
        if not ids:
            return {}
        a = models.Allocation
        with _session_for_read() as session:
            return dict(session.query(a.id, a.uuid).filter(
                a.id.in_(ids), a.kind == states.ALLOCATION_KIND).all())

    def get_allocation_list(self, filters=None, limit=None, marker=None,
                            sort_key=None, sort_dir=None):
        filters = dict(filters or {})
        with _session_for_read() as session:
            # NOTE: Ironic's allocations only; reservations are listed by
            # get_reservation_list().
            query = session.query(models.Allocation).filter(
                models.Allocation.kind == states.ALLOCATION_KIND)
            id_in = filters.pop('id_in', None)
            if id_in is not None:
                query = query.filter(models.Allocation.id.in_(list(id_in)))
            for key, value in filters.items():
                if key not in ('state', 'resource_class', 'node_id', 'owner',
                               'conductor_affinity'):
                    raise ValueError('Unknown allocation filter %s' % key)
                query = query.filter(getattr(models.Allocation, key) == value)
            marker_obj = None
            if marker is not None:
                marker_obj = session.get(models.Allocation, marker)
            return _paginate_query(models.Allocation, limit, marker_obj,
                                   sort_key, sort_dir, query)

    @retry_on_conflict
    def update_allocation(self, allocation_id, values):
        values = _naive_lease_end(values)
        leased = values.get('expires_at') is not None
        try:
            with _session_for_write() as session:
                query = session.query(models.Allocation).filter_by(
                    id=allocation_id)
                if leased:
                    _lock_hold_and_node(session.connection(), allocation_id)
                    query = query.filter(stmts.HOLD_LEASABLE)
                count = query.update(values, synchronize_session=False)
                if not count and leased:
                    _refuse_lease(session.connection(), [allocation_id])
                if not count:
                    raise exception.AllocationNotFound(
                        allocation=allocation_id)
        except db_exc.DBDuplicateEntry:
            raise exception.AllocationDuplicateName(name=values.get('name'))
        return self.get_allocation_by_id(allocation_id)

    @retry_on_conflict
    def destroy_allocation(self, allocation_id, node_states=None):
        with _connection_for_write() as conn:
            allocation = conn.execute(stmts.ALLOCATION_FOR_DELETE,
                                      {'id': allocation_id}).first()
            if allocation is None:
                raise exception.AllocationNotFound(allocation=allocation_id)
            group = conn.execute(stmts.GROUP_STATE_OF_ALLOCATION,
                                 {'id': allocation_id}).first()
            if group is not None and group.state == states.GROUP_ALLOCATING:
                # NOTE: the group commits or fails as a whole.
                raise exception.AllocationInAllocatingGroup(
                    allocation=allocation.uuid, group=group.uuid)
            _delete_hold(conn, allocation, node_states)
        return allocation.uuid, allocation.node_id

    def get_expired_holds(self, limit):
        with _connection_for_read() as conn:
            return list(conn.execute(_EXPIRED_HOLDS,
                                     {'limit': limit}).scalars())

    @retry_on_conflict
    def release_expired_hold(self, hold_id):
        with _connection_for_write() as conn:
            hold, node = _lock_hold_and_node(conn, hold_id)
            if hold is None:
                return None
            if conn.execute(_DELETE_EXPIRED_HOLD,
                            {'id': hold_id}).rowcount == 1:
                _free_node(conn, hold, node)
                lease_cleared = False
            elif conn.execute(_CLEAR_DEPLOYED_HOLD_LEASE,
                              {'hold_id': hold_id}).rowcount == 1:
                lease_cleared = True
            else:
                # NOTE: renewed, released by another conductor, or its
                # node locked by a conductor: the next pass looks again.
                return None
        return types.SimpleNamespace(
            id=hold.id, uuid=hold.uuid, kind=hold.kind,
            node_id=hold.node_id, expires_at=hold.expires_at,
            node_uuid=node.uuid if node is not None else None,
            node_state=node.provision_state if node is not None else None,
            lease_cleared=lease_cleared)

    def get_expired_groups(self, limit):
        with _connection_for_read() as conn:
            return list(conn.execute(_EXPIRED_GROUPS,
                                     {'limit': limit}).scalars())

    def release_expired_group(self, group_id):
        try:
            return self._release_expired_group(group_id)
        except _GroupBusy:
            return None

    @retry_on_conflict
    def _release_expired_group(self, group_id):
        with _connection_for_write() as conn:
            group = conn.execute(_EXPIRED_GROUP_FOR_DELETE,
                                 {'id': group_id}).first()
            if group is None:
                return None
            member_ids = conn.execute(
                sa.select(stmts.ALLOCATIONS.c.id).where(
                    stmts.ALLOCATIONS.c.group_id == group_id).order_by(
                        stmts.ALLOCATIONS.c.id)).scalars().all()
            if conn.execute(_CLEAR_DEPLOYED_GROUP_LEASE,
                            {'group_id': group_id}).rowcount == 1:
                conn.execute(stmts.ALLOCATIONS.update().where(
                    stmts.ALLOCATIONS.c.group_id == group_id).values(
                        expires_at=None))
                deployed = conn.execute(stmts.DEPLOYED_NODES_OF_HOLDS, {
                    'hold_ids': member_ids}).all()
                return types.SimpleNamespace(
                    id=group.id, uuid=group.uuid,
                    expires_at=group.expires_at, released=[],
                    lease_cleared=True,
                    deployed=[(row.node_uuid, row.provision_state)
                              for row in deployed])
            released = []
            for member_id in member_ids:
                hold, node = _lock_hold_and_node(conn, member_id)
                if conn.execute(_DELETE_EXPIRED_MEMBER, {
                        'id': member_id, 'group_id': group_id,
                }).rowcount != 1:
                    # NOTE: its node is locked by a conductor (or left
                    # the rule since the statement above): raised to roll
                    # back the members deleted so far, the group goes as
                    # a whole or stays.
                    raise _GroupBusy()
                _free_node(conn, hold, node)
                released.append(types.SimpleNamespace(
                    uuid=hold.uuid, node_id=hold.node_id,
                    node_uuid=node.uuid if node is not None else None))
            conn.execute(stmts.GROUPS.delete().where(
                stmts.GROUPS.c.id == group_id))
        return types.SimpleNamespace(id=group.id, uuid=group.uuid,
                                     expires_at=group.expires_at,
                                     released=released, lease_cleared=False,
                                     deployed=[])

    @retry_on_conflict
    def update_allocation_group_lease(self, group_id, expires_at):
        if expires_at is not None:
            expires_at = _naive_lease_end(
                {'expires_at': lease_time.whole_second(expires_at)}
            )['expires_at']
        with _connection_for_write() as conn:
            # NOTE: the group, then its members' nodes: the lock order of
            # a member's deploy, so that the lease is judged on the nodes
            # as a deploy that was waiting left them.
            group = conn.execute(stmts.GROUP_BY['id'].with_for_update(),
                                 {'value': group_id}).first()
            if group is None:
                raise exception.AllocationGroupNotFound(group=group_id)
            if expires_at is not None:
                conn.execute(stmts.LOCK_GROUP_NODES, {'group_id': group_id})
            if conn.execute(stmts.SET_GROUP_LEASE, {
                    'group_id': group_id, 'lease_end': expires_at,
                    'leased': expires_at is not None}).rowcount != 1:
                _refuse_lease(conn, conn.execute(
                    sa.select(stmts.ALLOCATIONS.c.id).where(
                        stmts.ALLOCATIONS.c.group_id == group_id)
                ).scalars().all(), group=group)
                raise exception.AllocationGroupNotFound(group=group_id)
            conn.execute(stmts.ALLOCATIONS.update().where(
                stmts.ALLOCATIONS.c.group_id == group_id).values(
                    expires_at=expires_at))
            return conn.execute(stmts.GROUP_BY['id'],
                                {'value': group_id}).first()

    @retry_on_conflict
    def begin_deploy(self, node_id, host, values, check):
        values = dict(values, provision_updated_at=datetime.datetime.now(
            datetime.timezone.utc).replace(tzinfo=None))
        with _connection_for_write() as conn:
            hold = None
            hold_id = conn.execute(stmts.NODE_HOLD,
                                   {'node_id': node_id}).scalar()
            leased_group = None
            if hold_id is not None:
                group_id = conn.execute(stmts.GROUP_OF_ALLOCATION,
                                        {'id': hold_id}).scalar()
                if group_id is not None:
                    # NOTE: the group before its member: the lock order
                    # of the group's DELETE and expiry.
                    leased_group = conn.execute(
                        stmts.GROUP_BY['id'].with_for_update(),
                        {'value': group_id}).first()
                hold = conn.execute(stmts.ALLOCATION_FOR_DELETE,
                                    {'id': hold_id}).first()
            node = conn.execute(stmts.NODE_FOR_DEPLOY,
                                {'node_id': node_id}).first()
            if node is None:
                raise exception.NodeNotFound(node=node_id)
            if node.reservation != host:
                raise exception.NodeLocked(node=node.uuid,
                                           host=node.reservation)
            if node.allocation_id != (hold.id if hold else None):
                # NOTE: the hold was deleted or replaced between the two
                # reads; a retry reads the new one.
                raise exception.NodeChanged(
                    node=node.uuid, reason='its allocation or reservation '
                    'changed')
            check(node, hold)
            if leased_group is not None and (
                    leased_group.expires_at is not None):
                # NOTE: a lease never pulls a node from a deployment, and
                # a group's members keep one lease: the whole group's
                # ends here.
                conn.execute(stmts.GROUPS.update().where(
                    stmts.GROUPS.c.id == leased_group.id).values(
                        expires_at=None))
                conn.execute(stmts.ALLOCATIONS.update().where(
                    stmts.ALLOCATIONS.c.group_id == leased_group.id).values(
                        expires_at=None))
            elif hold is not None and hold.expires_at is not None:
                conn.execute(stmts.SET_HOLD_EXPIRY,
                             {'hold_id': hold.id, 'lease_end': None})
            conn.execute(stmts.NODES.update().where(
                stmts.NODES.c.id == node_id).values(**values))
        return self.get_node_by_id(node_id)

    def count_project_holds(self, project):
        with _connection_for_read() as conn:
            return _count_holds(conn, project)

    # Reservations

    def create_reservation(self, values, node_uuids, ttl, project=None,
                           limits=None):
        values = dict(values, kind=states.RESERVATION_KIND,
                      state=states.ALLOCATION_ACTIVE)
        values.setdefault('uuid', uuidutils.generate_uuid())
        row = self._reserve_first(values, node_uuids, ttl, project, limits)
        if row is not None:
            return row
        # NOTE: read again: the nodes tried were taken meanwhile, and
        # their reasons are those of now.
        with _connection_for_read() as conn:
            nodes = conn.execute(stmts.NODES_FOR_RESERVATION,
                                 {'uuids': list(node_uuids)}).all()
        raise exception.NoNodeReservable(_reservation_reasons(
            node_uuids, nodes, project,
            default='reserved by a concurrent request'))

    @retry_on_conflict
    def _reserve_first(self, values, node_uuids, ttl, project, limits=None):
        """create_reservation() in one transaction: the database's time,
        the instance's and the nodes' state, then the row and the guarded
        node write for each node that could be reserved when read, in the
        list's order, until one is bound.

        :returns: the new row (with node_uuid), or None when every node
            that could be reserved was taken between the read and the
            write (nothing is written then).
        :raises: NoNodeReservable when no node could be reserved when
            read, InstanceAssociated, AllocationAlreadyExists,
            ProjectLimitExceeded when the limits leave none of them.
        """
        params = {'instance_uuid': values['instance_uuid']}
        if project:
            params['c_visible_project'] = project
        try:
            with _connection_for_write() as conn:
                # NOTE: the project's lock first, before any read of the
                # transaction (see _check_project_limits).
                usage = (_lock_and_count(conn, limits.project)
                         if limits else None)
                now, holder = conn.execute(
                    _TIME_AND_INSTANCE_HOLDER,
                    {'instance_uuid': values['instance_uuid']}).one()
                if holder is not None:
                    raise exception.InstanceAlreadyAssociated(
                        instance_uuid=values['instance_uuid'])
                nodes = conn.execute(stmts.NODES_FOR_RESERVATION,
                                     {'uuids': list(node_uuids)}).all()
                by_uuid = {node.uuid: node for node in nodes}
                uuid_of = {node.id: node.uuid for node in nodes}
                # NOTE: only the nodes that could be reserved when read are
                # tried: a guarded write of a hopeless node would wait for
                # the locks of other writers for nothing.
                tried = [by_uuid[u].id for u in node_uuids
                         if u in by_uuid
                         and _refusal(by_uuid[u], project) is None]
                if not tried:
                    raise exception.NoNodeReservable(_reservation_reasons(
                        node_uuids, nodes, project))
                if usage is not None:
                    tried = _within_limits(limits, usage, tried, nodes)
                values = dict(values, node_id=tried[0],
                              expires_at=lease_time.end_after(
                                  _as_datetime(now), ttl))
                inserted = None
                if conn.dialect.insert_returning:
                    inserted = conn.execute(
                        stmts.INSERT_ALLOCATION_RETURNING, values).one()
                    params['allocation_id'] = inserted.id
                else:
                    params['allocation_id'] = conn.execute(
                        stmts.INSERT_ALLOCATION,
                        values).inserted_primary_key[0]
                reserve = stmts.reserve_for_reservation(project)
                for node_id in tried:
                    if node_id != values['node_id']:
                        conn.execute(stmts.MOVE_RESERVATION, {
                            'reservation_id': params['allocation_id'],
                            'new_node_id': node_id})
                        values['node_id'] = node_id
                        # NOTE: the move changed the row (updated_at).
                        inserted = None
                    if conn.execute(reserve, dict(
                            params, node_id=node_id)).rowcount == 1:
                        if inserted is not None:
                            return types.SimpleNamespace(
                                **inserted._asdict(),
                                node_uuid=uuid_of[node_id])
                        # NOTE: read back as stored (MySQL keeps whole
                        # seconds of created_at), so the answer equals
                        # every later read.
                        return conn.execute(stmts.RESERVATION_BY_ID, {
                            'value': params['allocation_id']}).first()
                # Undoes the INSERT with the transaction.
                raise _NodeNotReserved()
        except _NodeNotReserved:
            return None
        except db_exc.DBDuplicateEntry as exc:
            columns = exc.columns or []
            if 'instance_uuid' in columns or \
                    'uniq_nodes0instance_uuid' in columns:
                # NOTE: another node got the instance since the check.
                raise exception.InstanceAlreadyAssociated(
                    instance_uuid=values['instance_uuid'])
            raise exception.AllocationAlreadyExists(uuid=values['uuid'])

    def get_reservation_by_uuid(self, reservation_uuid):
        with _connection_for_read() as conn:
            row = conn.execute(stmts.RESERVATION_BY_UUID,
                               {'value': reservation_uuid}).first()
        if row is None:
            raise exception.ReservationNotFound(reservation=reservation_uuid)
        return row

    def get_reservation_owners(self, reservation_uuids):
        uuids = list(set(reservation_uuids))
        if not uuids:
            return {}
        a = models.Allocation
        with _session_for_read() as session:
            return dict(session.query(a.uuid, a.owner).filter(
                a.uuid.in_(uuids), a.kind == states.RESERVATION_KIND).all())

    def get_reservation_list(self, filters=None, limit=None, marker=None):
        filters = dict(filters or {})
        unknown = set(filters) - {'instance_uuid', 'node_id', 'owner'}
        if unknown:
            raise ValueError('Unknown reservation filters: %s'
                             % sorted(unknown))
        params = dict(filters, marker=marker or 0)
        # NOTE: no limit is the largest page SQL can express portably.
        params['limit'] = limit if limit else 2 ** 31 - 1
        with _connection_for_read() as conn:
            return conn.execute(stmts.reservation_list(filters),
                                params).all()

    @retry_on_conflict
    def update_reservation_expiry(self, reservation_id, expires_at):
        with _connection_for_write() as conn:
            if _lock_hold_and_node(conn, reservation_id,
                                   stmts.RESERVATION_FOR_DELETE)[0] is None:
                raise exception.ReservationNotFound(
                    reservation=reservation_id)
            count = conn.execute(stmts.RENEW_RESERVATION, {
                'reservation_id': reservation_id,
                'expires_at': lease_time.whole_second(expires_at)}).rowcount
            if count != 1:
                _refuse_lease(conn, [reservation_id])
                raise exception.ReservationNotFound(
                    reservation=reservation_id)
            return conn.execute(stmts.RESERVATION_BY_ID,
                                {'value': reservation_id}).first()

    @retry_on_conflict
    def destroy_reservation(self, reservation_id, node_states=None):
        with _connection_for_write() as conn:
            if conn.dialect.delete_returning:
                reservation = conn.execute(stmts.DELETE_RESERVATION_RETURNING,
                                           {'id': reservation_id}).first()
                deleted = True
            else:
                reservation = conn.execute(stmts.RESERVATION_FOR_DELETE,
                                           {'id': reservation_id}).first()
                deleted = False
            if reservation is None:
                raise exception.ReservationNotFound(
                    reservation=reservation_id)
            _delete_hold(conn, reservation, node_states, deleted=deleted)
        return reservation.uuid, reservation.node_id

    # Allocation groups (extension 1.3)

    @retry_on_conflict
    def create_allocation_group(self, values, members, released_ids,
                                limits=None):
        values = _naive_lease_end(values)
        with _connection_for_write() as conn:
            # NOTE: every new member is one more hold of its owner,
            # counted as a single allocation's under the project's lock;
            # projects are locked in name order, so two groups never
            # deadlock on them.
            for project_limits in sorted(limits or (),
                                         key=lambda lim: lim.project):
                requested = {}
                for member in members:
                    if member.get('owner') == project_limits.project:
                        resource_class = member['resource_class']
                        requested[resource_class] = (
                            requested.get(resource_class, 0) + 1)
                refusal = project_limits.refusal_of_many(
                    _lock_and_count(conn, project_limits.project), requested)
                if refusal is not None:
                    raise refusal
            for allocation_id in released_ids:
                group = conn.execute(stmts.GROUP_STATE_OF_ALLOCATION,
                                     {'id': allocation_id}).first()
                if group is not None and (
                        group.state == states.GROUP_ALLOCATING):
                    uuid = conn.execute(stmts.ALLOCATION_BY['id'], {
                        'value': allocation_id}).first().uuid
                    raise exception.AllocationInAllocatingGroup(
                        allocation=uuid, group=group.uuid)
            try:
                result = conn.execute(stmts.INSERT_GROUP, values)
            except db_exc.DBDuplicateEntry as exc:
                columns = exc.columns or []
                if 'name' in columns or \
                        'uniq_allocation_groups0name' in columns:
                    raise exception.AllocationGroupDuplicateName(
                        name=values.get('name'))
                raise exception.AllocationGroupAlreadyExists(
                    uuid=values['uuid'])
            group_id = result.inserted_primary_key[0]
            for member in members:
                # NOTE: the members follow the group's lease, written in
                # the same transaction.
                self._insert_allocation(conn, dict(
                    member, group_id=group_id,
                    expires_at=values.get('expires_at')))
            return conn.execute(stmts.GROUP_BY['id'],
                                {'value': group_id}).first()

    def get_allocation_group(self, **criteria):
        (column, value), = criteria.items()
        with _connection_for_read() as conn:
            row = conn.execute(stmts.GROUP_BY[column],
                               {'value': value}).first()
        if row is None:
            raise exception.AllocationGroupNotFound(group=value)
        return row

    def get_allocation_group_uuids(self, group_ids):
        return _uuids_by_id(models.AllocationGroup, group_ids)

    def get_allocation_group_members(self, group_id):
        with _connection_for_read() as conn:
            return conn.execute(stmts.GROUP_MEMBERS,
                                {'group_id': group_id}).all()

    def get_allocation_groups_members(self, group_ids):
        members = {group_id: [] for group_id in group_ids}
        if not members:
            return members
        with _connection_for_read() as conn:
            for row in conn.execute(stmts.GROUPS_MEMBERS,
                                    {'group_ids': list(members)}):
                members[row.group_id].append(row)
        return members

    def get_allocation_group_list(self, filters=None, limit=None,
                                  marker=None):
        filters = dict(filters or {})
        g = models.AllocationGroup
        with _session_for_read() as session:
            query = session.query(g)
            for key, value in filters.items():
                if key not in ('state', 'owner'):
                    raise ValueError('Unknown allocation group filter %s'
                                     % key)
                query = query.filter(getattr(g, key) == value)
            marker_obj = None
            if marker is not None:
                marker_obj = session.get(g, marker)
            return _paginate_query(g, limit, marker_obj, 'id', 'asc', query)

    def commit_allocation_group(self, group_id, conductor_id, plan,
                                node_states):
        try:
            self._commit_allocation_group(group_id, conductor_id, plan,
                                          node_states)
        except db_exc.DBError as exc:
            # NOTE: retry_on_conflict gave up: the group's conductor
            # decides (it solves again, a bounded number of times).
            conflict = _conflict_name(exc)
            if conflict is None:
                raise
            raise exception.AllocationGroupCommitConflict(
                tries=CONFLICT_RETRIES + 1, conflict=conflict) from None

    @retry_on_conflict
    def _commit_allocation_group(self, group_id, conductor_id, plan,
                                 node_states):
        with _connection_for_write() as conn:
            if conn.execute(stmts.ACTIVATE_GROUP, {
                    'group_id': group_id,
                    'conductor_id': conductor_id}).rowcount != 1:
                raise exception.AllocationGroupLost(group=group_id)
            for member in plan['releases']:
                hold = conn.execute(stmts.ALLOCATION_FOR_DELETE,
                                    {'id': member['allocation_id']}).first()
                if hold is None:
                    raise exception.AllocationGroupCommitFailed(
                        member=member['uuid'],
                        reason='the allocation to release is gone.')
                try:
                    _delete_hold(conn, hold, node_states)
                except exception.InvalidState as exc:
                    raise exception.AllocationGroupCommitFailed(
                        member=member['uuid'], reason=str(exc)) from None
            for member in plan['handovers']:
                _hand_over(conn, member, conductor_id)
            for member in plan['new']:
                try:
                    _reserve_for_allocation(
                        conn, member['allocation_id'], conductor_id,
                        member['node_id'], member['criteria'])
                except exception.AllocationLost:
                    raise exception.AllocationGroupCommitFailed(
                        member=member['uuid'],
                        reason='the allocation is no longer allocating '
                               'for this conductor.') from None
                except _NodeNotReserved:
                    raise exception.AllocationGroupCommitFailed(
                        member=member['uuid'], node_id=member['node_id'],
                        reason='node %s was changed or taken since the '
                               'search.' % member['node_id']) from None
            for allocation_id, name in plan['names']:
                try:
                    conn.execute(stmts.SET_ALLOCATION_NAME,
                                 {'allocation_id': allocation_id,
                                  'name': name})
                except db_exc.DBDuplicateEntry:
                    raise exception.AllocationGroupCommitFailed(
                        member=allocation_id,
                        reason='the name %s is held by another '
                               'allocation.' % name) from None

    @retry_on_conflict
    def fail_allocation_group(self, group_id, conductor_id, last_error,
                              explanation=None):
        with _connection_for_write() as conn:
            if conn.execute(stmts.FAIL_GROUP, {
                    'group_id': group_id, 'conductor_id': conductor_id,
                    'last_error': last_error,
                    'explanation': explanation}).rowcount != 1:
                return False
            conn.execute(stmts.FAIL_GROUP_MEMBERS, {
                'of_group': group_id,
                'last_error': 'The allocation group failed: %s'
                              % last_error})
        return True

    @retry_on_conflict
    def destroy_allocation_group(self, group_id, node_states=None):
        with _connection_for_write() as conn:
            group = conn.execute(stmts.GROUP_BY['id'].with_for_update(),
                                 {'value': group_id}).first()
            if group is None:
                raise exception.AllocationGroupNotFound(group=group_id)
            member_ids = conn.execute(
                sa.select(stmts.ALLOCATIONS.c.id).where(
                    stmts.ALLOCATIONS.c.group_id == group_id).order_by(
                        stmts.ALLOCATIONS.c.id)).scalars().all()
            released = []
            for member_id in member_ids:
                hold = conn.execute(stmts.ALLOCATION_FOR_DELETE,
                                    {'id': member_id}).first()
                _delete_hold(conn, hold, node_states)
                released.append((hold.uuid, hold.node_id))
            conn.execute(stmts.GROUPS.delete().where(
                stmts.GROUPS.c.id == group_id))
        return group.uuid, released

    def get_allocating_group_ids(self, conductor_id):
        groups = stmts.GROUPS.c
        with _connection_for_read() as conn:
            return conn.execute(sa.select(groups.id).where(
                groups.state == states.GROUP_ALLOCATING,
                groups.conductor_affinity == conductor_id)).scalars().all()

    def get_orphan_allocation_groups(self, alive_ids):
        groups = stmts.GROUPS.c
        query = sa.select(groups.id, groups.conductor_affinity).where(
            groups.state == states.GROUP_ALLOCATING)
        if alive_ids:
            query = query.where(sa.or_(
                groups.conductor_affinity.is_(None),
                groups.conductor_affinity.notin_(list(alive_ids))))
        with _connection_for_read() as conn:
            return [(row.id, row.conductor_affinity)
                    for row in conn.execute(query)]

    @retry_on_conflict
    def take_over_allocation_group(self, group_id, old_conductor_id,
                                   new_conductor_id):
        with _connection_for_write() as conn:
            if conn.execute(stmts.TAKE_OVER_GROUP, {
                    'group_id': group_id, 'old_id': old_conductor_id,
                    'new_id': new_conductor_id}).rowcount != 1:
                return False
            conn.execute(stmts.TAKE_OVER_GROUP_MEMBERS, {
                'of_group': group_id, 'new_id': new_conductor_id})
        return True

    def reading(self):
        # NOTE: enginefacade joins the reads made inside to this
        # transaction (same thread, same context) and refuses a writer.
        return _connection_for_read()

    def writing(self):
        # NOTE: enginefacade joins the reads and writes made inside to
        # this transaction (same thread, same context).
        return _connection_for_write()

    def get_allocation_candidates(self, criteria, limit, pivot=None,
                                  name=None):
        shape, params = stmts.candidate_shape(criteria)
        with _connection_for_read() as conn:
            dialect = conn.dialect.name
            if name is not None:
                return list(conn.execute(
                    stmts.candidates_named(shape, dialect),
                    dict(params, name=name)).scalars())
            if pivot is None:
                return list(conn.execute(
                    stmts.candidates_from(shape, dialect),
                    dict(params, limit=limit)).scalars())
            # NOTE: two range scans of the candidate index from a random
            # pivot instead of ORDER BY random(), which reads every row.
            ids = list(conn.execute(
                stmts.candidates_after_pivot(shape, dialect),
                dict(params, pivot=pivot, limit=limit)).scalars())
            if len(ids) < limit:
                ids += conn.execute(
                    stmts.candidates_before_pivot(shape, dialect),
                    dict(params, pivot=pivot,
                         limit=limit - len(ids))).scalars()
            return ids

    def explain_no_candidates(self, criteria):
        # NOTE: a probe per constraint (LIMIT 1), cheaper than the funnel
        # of explain_allocation(), which reads every node of the class.
        shape, params = stmts.candidate_shape(criteria)
        groups = stmts.candidate_groups(shape)
        applied = []
        if shape.owner:
            # NOTE: the owner's nodes first: the sentence is shown to the
            # owner's project, and must not change with the nodes it may
            # not see (whether other projects have nodes of the class,
            # and in what state).
            applied.extend(next(g for g in groups
                                if g.step == 'owner').clauses)
        with _connection_for_read() as conn:
            for constraint in groups:
                applied.extend(constraint.clauses)
                found = conn.execute(sa.select(stmts.NODES.c.id).where(
                    *applied).limit(1), params).first()
                if found is None:
                    reason = constraint.reason
                    if shape.owner and constraint is groups[0]:
                        reason = _NONE_OF_THE_OWNERS
                    return reason % stmts.words(criteria, params)
        return _ALL_TAKEN

    def explain_allocation(self, criteria, examples=0, project=None):
        shape, params = stmts.candidate_shape(criteria)
        if project:
            params = dict(params, c_visible_project=project)
        groups = stmts.candidate_groups(shape)
        with _connection_for_read() as conn:
            if shape.candidates:
                # NOTE: a tally does not know which nodes it counts, so
                # a candidate list needs the pass over the nodes.
                counts = dict(conn.execute(stmts.funnel(shape, project),
                                           params).all())
            else:
                counts = _funnel_of_tallies(
                    groups, params, conn.execute(
                        stmts.tally_rows(project), params).all())
            uuids = []
            if examples and counts.get(0):
                uuids = list(conn.execute(
                    stmts.matching_uuids(shape, project,
                                         conn.dialect.name),
                    dict(params, limit=examples)).scalars())
        words = stmts.words(criteria, params)
        remaining = sum(counts.values())
        start = remaining
        steps = []
        reason = None
        if not remaining:
            reason = groups[0].reason % words
        for number, constraint in enumerate(groups[1:], 1):
            removed = counts.get(number, 0)
            remaining -= removed
            steps.append({
                'step': constraint.step,
                'value': stmts.constraint_value(constraint, params),
                'removed': removed,
                'remaining': remaining,
                'description': constraint.removes % words})
            if reason is None and not remaining:
                reason = constraint.reason % words
        if reason is None:
            reason = _ALL_TAKEN
        return {'resource_class': criteria['resource_class'],
                'nodes': start, 'steps': steps,
                'matching_nodes': remaining, 'examples': uuids,
                'reason': reason}

    def refresh_node_matching(self, after_id, limit):
        with _session_for_read() as session:
            node_ids = [row.id for row in session.query(models.Node.id).filter(
                models.Node.id > after_id).order_by(
                    models.Node.id).limit(limit)]
        for node_id in node_ids:
            self._refresh_one_node_matching(node_id)
        return node_ids

    @retry_on_conflict
    def _refresh_one_node_matching(self, node_id):
        with _session_for_write() as session:
            node = session.query(models.Node).filter_by(
                id=node_id).with_for_update().first()
            if node is None:
                return
            traits = [row.trait for row in session.query(
                models.NodeTrait.trait).filter_by(node_id=node_id)]
            values = dict(matching.node_match_columns(node.properties),
                          match_traits=matching.traits_column(traits))
            if any(getattr(node, name) != value
                   for name, value in values.items()):
                node.update(values)
            _write_capabilities(session, node_id, node.properties)

    @retry_on_conflict
    def fold_node_tallies(self, limit):
        with _connection_for_read() as conn:
            if conn.execute(stmts.ANY_TALLY_CHANGE).first() is None:
                return 0
        with _connection_for_write() as conn:
            # NOTE: the lock first: the changes and tallies read after it
            # are those the previous fold left (on MySQL too, whose
            # snapshot starts at the first read).
            conn.execute(stmts.LOCK_TALLY_FOLDS, {
                'now': datetime.datetime.now(
                    datetime.timezone.utc).replace(tzinfo=None)})
            return _fold_tallies(conn, limit)

    @retry_on_conflict
    def reserve_node_for_allocation(self, allocation_id, conductor_id,
                                    node_id, criteria):
        try:
            with _connection_for_write() as conn:
                _reserve_for_allocation(conn, allocation_id, conductor_id,
                                        node_id, criteria)
        except _NodeNotReserved:
            return False
        return True

    @retry_on_conflict
    def fail_allocation(self, allocation_id, conductor_id, last_error,
                        explanation=None):
        with _session_for_write() as session:
            count = session.query(models.Allocation).filter_by(
                id=allocation_id, state=states.ALLOCATING,
                conductor_affinity=conductor_id).update(
                    {'state': states.ALLOCATION_ERROR,
                     'last_error': last_error,
                     'explanation': explanation},
                    synchronize_session=False)
        return count == 1

    @retry_on_conflict
    def take_over_allocation(self, allocation_id, old_conductor_id,
                             new_conductor_id):
        with _session_for_write() as session:
            count = session.query(models.Allocation).filter_by(
                id=allocation_id, state=states.ALLOCATING,
                conductor_affinity=old_conductor_id).update(
                    {'conductor_affinity': new_conductor_id},
                    synchronize_session=False)
        return count == 1

    def count_allocations_by_state(self):
        a = models.Allocation
        with _session_for_read() as session:
            return [(state, kind, count) for state, kind, count in
                    session.query(a.state, a.kind, sa.func.count(a.id))
                    .group_by(a.state, a.kind)]

    def get_allocating_ids(self, conductor_id):
        with _session_for_read() as session:
            return [row.id for row in session.query(
                models.Allocation.id).filter_by(
                    state=states.ALLOCATING,
                    conductor_affinity=conductor_id,
                    # NOTE: a group's members are driven with their group.
                    group_id=None)]

    def get_orphan_allocations(self, alive_ids):
        a = models.Allocation
        with _session_for_read() as session:
            query = session.query(a.id, a.conductor_affinity).filter(
                a.state == states.ALLOCATING, a.group_id.is_(None))
            if alive_ids:
                query = query.filter(sa.or_(
                    a.conductor_affinity.is_(None),
                    a.conductor_affinity.notin_(list(alive_ids))))
            return [(row.id, row.conductor_affinity) for row in query]

    def get_long_allocating(self, older_than):
        allocations = stmts.ALLOCATIONS.c
        threshold = self._age_threshold(older_than)
        with _connection_for_read() as conn:
            return conn.execute(
                sa.select(allocations.uuid, allocations.created_at,
                          allocations.conductor_affinity)
                .where(allocations.state == states.ALLOCATING,
                       allocations.created_at < threshold)
                .order_by(allocations.created_at, allocations.id)).all()

    # Purge

    def _age_threshold(self, seconds):
        return self.get_database_time() - datetime.timedelta(
            seconds=seconds)

    def get_purgeable_error_allocations(self, older_than, limit,
                                        after_id=0):
        rule = _purgeable_error_allocations(self._age_threshold(older_than))
        allocations = stmts.ALLOCATIONS.c
        return _purgeable_rows(
            (allocations.id, allocations.uuid, allocations.updated_at),
            rule, limit, after_id)

    def purge_error_allocations(self, older_than, batch_size=1000):
        rule = _purgeable_error_allocations(self._age_threshold(older_than))
        return _purge_in_batches(stmts.ALLOCATIONS, rule, batch_size)

    def get_purgeable_error_groups(self, older_than, limit, after_id=0):
        rule = _purgeable_error_groups(self._age_threshold(older_than))
        groups = stmts.GROUPS.c
        members = sa.select(sa.func.count()).where(
            stmts.ALLOCATIONS.c.group_id == groups.id).scalar_subquery()
        return _purgeable_rows(
            (groups.id, groups.uuid, groups.updated_at,
             members.label('members')), rule, limit, after_id)

    def purge_error_groups(self, older_than, batch_size=1000):
        rule = _purgeable_error_groups(self._age_threshold(older_than))
        groups = members = 0
        while True:
            listed, deleted_groups, deleted_members = _purge_group_batch(
                rule, batch_size)
            groups += deleted_groups
            members += deleted_members
            # NOTE: as _purge_in_batches: a batch of which nothing went
            # changed under us; stop rather than list it again.
            if listed < batch_size or not deleted_groups:
                return groups, members

    def get_purgeable_conductors(self, older_than, alive_timeout, limit,
                                 after_id=0):
        rule = _purgeable_conductors(self._age_threshold(older_than),
                                     self._age_threshold(alive_timeout))
        conductors = _CONDUCTORS.c
        return _purgeable_rows(
            (conductors.id, conductors.hostname, conductors.heartbeat_at),
            rule, limit, after_id)

    def purge_conductors(self, older_than, alive_timeout, batch_size=1000):
        rule = _purgeable_conductors(self._age_threshold(older_than),
                                     self._age_threshold(alive_timeout))
        return _purge_in_batches(_CONDUCTORS, rule, batch_size)

    # Conductors

    @retry_on_conflict
    def register_conductor(self, hostname, conductor_group):
        with _session_for_write() as session:
            previous = [row.id for row in session.query(
                models.Conductor.id).filter_by(hostname=hostname)]
            session.query(models.Conductor).filter_by(
                hostname=hostname).delete()
            session.flush()
            conductor = models.Conductor(
                hostname=hostname, conductor_group=conductor_group,
                online=True)
            session.add(conductor)
            session.flush()
            session.query(models.Conductor).filter_by(
                id=conductor.id).update({'heartbeat_at': utc_now()},
                                        synchronize_session=False)
            conductor_id = conductor.id
            if previous:
                # NOTE: a restart resumes the unfinished allocations of the
                # previous run of this host; the guarded writes of a stale
                # process of that run fail from here on.
                session.query(models.Allocation).filter(
                    models.Allocation.state == states.ALLOCATING,
                    models.Allocation.conductor_affinity.in_(previous),
                ).update({'conductor_affinity': conductor_id},
                         synchronize_session=False)
        with _session_for_read() as session:
            return session.get(models.Conductor, conductor_id)

    @retry_on_conflict
    def touch_conductor(self, conductor_id):
        with _session_for_write() as session:
            count = session.query(models.Conductor).filter_by(
                id=conductor_id).update(
                    {'heartbeat_at': utc_now(), 'online': True},
                    synchronize_session=False)
        return count == 1

    @retry_on_conflict
    def unregister_conductor(self, conductor_id):
        with _session_for_write() as session:
            session.query(models.Conductor).filter_by(
                id=conductor_id).update({'online': False},
                                        synchronize_session=False)

    def get_conductor(self, hostname):
        with _session_for_read() as session:
            conductor = session.query(models.Conductor).filter_by(
                hostname=hostname).first()
            if conductor is None:
                raise exception.ConductorNotFound(conductor=hostname)
            return conductor

    def get_conductor_list(self, limit=None, marker=None, sort_key=None,
                           sort_dir=None):
        with _session_for_read() as session:
            marker_obj = None
            if marker is not None:
                marker_obj = session.get(models.Conductor, marker)
            return _paginate_query(models.Conductor, limit, marker_obj,
                                   sort_key, sort_dir,
                                   session.query(models.Conductor))

    def get_alive_conductors(self, timeout, conductor_group=None):
        with _session_for_read() as session:
            now = session.execute(sa.select(utc_now())).scalar()
            now = _as_datetime(now)
            threshold = now - datetime.timedelta(seconds=timeout)
            query = session.query(models.Conductor).filter(
                models.Conductor.online.is_(True),
                models.Conductor.heartbeat_at >= threshold)
            if conductor_group is not None:
                query = query.filter(
                    sa.func.lower(models.Conductor.conductor_group) ==
                    conductor_group.lower())
            return query.order_by(models.Conductor.id).all()

    def get_database_time(self):
        with _session_for_read() as session:
            return _as_datetime(session.execute(sa.select(utc_now())).scalar())


_CONDUCTORS = models.Conductor.__table__


def _purgeable_error_allocations(threshold):
    """The rule of purgeable error allocations (db api): in state error,
    unchanged since ``threshold``, and no node points to them (a node
    still bound to one keeps it, so no node is left pointing to a
    missing hold)."""
    allocations = stmts.ALLOCATIONS.c
    return sa.and_(
        allocations.state == states.ALLOCATION_ERROR,
        sa.func.coalesce(allocations.updated_at,
                         allocations.created_at) < threshold,
        # NOTE: a group's members go with their group, never alone
        # (_purgeable_error_groups).
        allocations.group_id.is_(None),
        ~sa.exists().where(stmts.NODES.c.allocation_id == allocations.id))


def _purgeable_error_groups(threshold):
    """The rule of purgeable allocation groups (db api): in state error
    (a finished group that holds nothing), unchanged since
    ``threshold``, and no member bound to a node."""
    groups = stmts.GROUPS.c
    allocations = stmts.ALLOCATIONS.c
    return sa.and_(
        groups.state == states.GROUP_ERROR,
        sa.func.coalesce(groups.updated_at, groups.created_at) < threshold,
        ~sa.exists().where(allocations.group_id == groups.id,
                           stmts.NODES.c.allocation_id == allocations.id))


def _purgeable_conductors(threshold, alive_threshold):
    """The rule of purgeable conductor rows (db api): no heartbeat since
    ``threshold``, not alive by the take-over rule (online with a
    heartbeat since ``alive_threshold``), owning no allocating
    allocation (take-over moves those to a live conductor first) and
    holding no node lock (nodes.reservation names the hostname; the
    release of dead conductors' locks clears it first)."""
    conductors = _CONDUCTORS.c
    last_seen = sa.func.coalesce(conductors.heartbeat_at,
                                 conductors.created_at)
    allocations = stmts.ALLOCATIONS.c
    return sa.and_(
        last_seen < threshold,
        ~sa.and_(conductors.online == sa.true(),
                 last_seen >= alive_threshold),
        ~sa.exists().where(allocations.state == states.ALLOCATING,
                           allocations.conductor_affinity == conductors.id),
        ~sa.exists().where(stmts.NODES.c.reservation == conductors.hostname))


def _purgeable_rows(columns, rule, limit, after_id):
    table = columns[0].table
    with _connection_for_read() as conn:
        return conn.execute(
            sa.select(*columns).where(rule, table.c.id > after_id)
            .order_by(table.c.id).limit(limit)).all()


def _purge_in_batches(table, rule, batch_size):
    """Delete the rows of ``table`` matching ``rule``, ``batch_size`` per
    transaction, so no transaction locks many rows for long.

    :returns: the number deleted.
    """
    deleted = 0
    while True:
        listed, count = _purge_batch(table, rule, batch_size)
        deleted += count
        # NOTE: a batch of which nothing went changed under us
        # (concurrent writers); stop rather than list it again.
        if listed < batch_size or not count:
            return deleted


@retry_on_conflict
def _purge_batch(table, rule, batch_size):
    with _connection_for_write() as conn:
        ids = conn.execute(sa.select(table.c.id).where(rule).order_by(
            table.c.id).limit(batch_size)).scalars().all()
        if not ids:
            return 0, 0
        # NOTE: the rule is checked again by the DELETE itself: a row
        # that changed since the SELECT (on a server's READ COMMITTED)
        # stays.
        result = conn.execute(table.delete().where(table.c.id.in_(ids),
                                                   rule))
        return len(ids), result.rowcount


@retry_on_conflict
def _purge_group_batch(rule, batch_size):
    """One transaction: up to ``batch_size`` groups matching ``rule``,
    locked (as the group's DELETE locks it first), then their members and
    the groups.

    :returns: (groups listed, groups deleted, members deleted).
    """
    groups = stmts.GROUPS
    with _connection_for_write() as conn:
        ids = conn.execute(sa.select(groups.c.id).where(rule).order_by(
            groups.c.id).limit(batch_size).with_for_update()).scalars().all()
        listed = len(ids)
        if not ids:
            return 0, 0, 0
        # NOTE: the rule again, on the locked rows: a group that changed
        # since the SELECT (on a server's READ COMMITTED) stays, with its
        # members.
        ids = conn.execute(sa.select(groups.c.id).where(
            groups.c.id.in_(ids), rule)).scalars().all()
        if not ids:
            return listed, 0, 0
        members = conn.execute(stmts.ALLOCATIONS.delete().where(
            stmts.ALLOCATIONS.c.group_id.in_(ids))).rowcount
        deleted = conn.execute(groups.delete().where(
            groups.c.id.in_(ids))).rowcount
        return listed, deleted, members


def _count_holds(conn, project):
    return {rc: count for rc, count in conn.execute(
        stmts.PROJECT_HOLDS, {'project': project})}


def _lock_and_count(conn, project):
    """Lock ``project`` and count its holds by class (see
    _check_project_limits)."""
    stmts.lock_project(conn, project)
    return _count_holds(conn, project)


def _check_project_limits(conn, limits, resource_class):
    """Refuse one more hold of ``resource_class`` past ``limits``.

    It runs first in the transaction that inserts the hold: the lock on
    the project's row makes another request of the project wait until
    this transaction ends, and the count, read after the lock, sees every
    hold committed before it (on MySQL, too, whose repeatable reads see
    the data as of the first read of the transaction).

    :raises: ProjectLimitExceeded.
    """
    refusal = limits.refusal(_lock_and_count(conn, limits.project),
                             resource_class)
    if refusal is not None:
        raise refusal


def _within_limits(limits, usage, node_ids, nodes):
    """The nodes of ``node_ids`` whose class has room for one more hold.

    :raises: ProjectLimitExceeded naming the limit of the first node when
        none has room.
    """
    classes = {node.id: node.resource_class for node in nodes}
    kept = [node_id for node_id in node_ids
            if limits.refusal(usage, classes[node_id]) is None]
    if not kept:
        raise limits.refusal(usage, classes[node_ids[0]])
    return kept


def _lock_hold_and_node(conn, hold_id, statement=stmts.ALLOCATION_FOR_DELETE):
    """Lock hold ``hold_id`` (read by ``statement``), then its node: the
    lock order of deletion and of begin_deploy, so that a lease written
    next is judged on the node as a deploy that was waiting left it.

    :returns: (the hold's row, its node's row); (None, None) when there
        is no such hold, its node None when it holds none.
    """
    hold = conn.execute(statement, {'id': hold_id}).first()
    node = None
    if hold is not None and hold.node_id is not None:
        node = conn.execute(stmts.NODE_FOR_DEALLOCATION,
                            {'id': hold.node_id}).first()
    return hold, node


def _refuse_lease(conn, hold_ids, group=None):
    """Raise the refusal of a lease for the first of ``hold_ids`` whose
    node is deployed (a lease write found statements.HOLD_LEASABLE
    false); return when none is.

    :param group: the group's row when the holds are its members.
    :raises: LeaseOnDeployedNode.
    """
    row = conn.execute(stmts.DEPLOYED_NODES_OF_HOLDS,
                       {'hold_ids': list(hold_ids)}).first()
    if row is None:
        return
    hold = ('allocation group %s' % group.uuid if group is not None
            else '%s %s' % (row.kind, row.uuid))
    raise exception.LeaseOnDeployedNode(hold=hold, node=row.node_uuid,
                                        state=row.provision_state)


def _delete_hold(conn, hold, node_states, deleted=False):
    """Delete ``hold`` (an allocation or a reservation, locked by the
    caller's transaction) and free its node, as DELETE does.

    :param node_states: provision states in which the node may lose its
        hold (any while in maintenance); None for any state.
    :param deleted: the caller's transaction has deleted the row already
        (its refusal below rolls that back with the transaction).
    :raises: InvalidState when the node is in another state.
    """
    node = None
    if hold.node_id is not None:
        node = conn.execute(stmts.NODE_FOR_DEALLOCATION,
                            {'id': hold.node_id}).first()
    if (node is not None and node_states is not None
            and not node.maintenance
            and node.provision_state not in node_states):
        raise exception.InvalidState(
            'Cannot remove %(kind)s %(hold)s since node %(node)s is in '
            'provision state "%(state)s" and not in maintenance'
            % {'kind': hold.kind, 'hold': hold.uuid, 'node': node.uuid,
               'state': node.provision_state})
    if not deleted:
        conn.execute(stmts.DELETE_ALLOCATION, {'id': hold.id})
    _free_node(conn, hold, node)


def _free_node(conn, hold, node):
    """Unbind ``node`` from ``hold``, deleted in the caller's transaction.

    The node's instance goes with the hold that bound it: an allocation's
    own uuid (with the traits it wrote into instance_info), a
    reservation's instance_uuid (with the reservation_uuid a deploy was
    given); another instance, set by a client, stays.
    """
    if node is None or node.allocation_id != hold.id:
        return
    if hold.kind == states.RESERVATION_KIND:
        bound, written = hold.instance_uuid, 'reservation_uuid'
    else:
        bound, written = hold.uuid, 'traits'
    if bound is not None and node.instance_uuid == bound:
        info = dict(node.instance_info or {})
        info.pop(written, None)
        conn.execute(stmts.FREE_NODE_AND_INSTANCE,
                     {'node_id': node.id, 'instance_info': info})
    else:
        conn.execute(stmts.FREE_NODE, {'node_id': node.id})


def _reserve_for_allocation(conn, allocation_id, conductor_id, node_id,
                            criteria):
    """The reservation of ``node_id`` for an allocating allocation, in
    the caller's transaction.

    :raises: AllocationLost when the allocation is no longer allocating
        and ours, _NodeNotReserved when the node is no longer a candidate
        (the caller's transaction must then be rolled back: the
        allocation's UPDATE is made first).
    """
    shape, params = stmts.candidate_shape(criteria)
    # NOTE: the allocation first (the lock order of destroy_allocation
    # too), by a conditional UPDATE rather than a locking read: one
    # statement fewer per allocation.
    count = conn.execute(stmts.ACTIVATE_ALLOCATION, {
        'allocation_id': allocation_id,
        'conductor_id': conductor_id,
        'node_id': node_id}).rowcount
    if count != 1:
        raise exception.AllocationLost(allocation=allocation_id)
    count = conn.execute(
        stmts.reserve_node(shape, conn.dialect.name),
        dict(params, node_id=node_id, allocation_id=allocation_id)).rowcount
    if count != 1:
        raise _NodeNotReserved()
    traits = set(criteria.get('traits') or [])
    any_of = sorted({trait for group in criteria.get(
        'any_of_traits') or [] for trait in group})
    if any_of:
        # NOTE: the members of the any-of groups the node has are
        # requested traits too, as deploy templates see them.
        rows = conn.execute(stmts.NODE_INSTANCE_INFO_AND_TRAITS_AMONG, {
            'node_id': node_id, 'traits': any_of}).all()
        info = rows[0].instance_info
        traits.update(row.trait for row in rows if row.trait is not None)
    elif traits:
        info = conn.execute(stmts.NODE_INSTANCE_INFO,
                            {'node_id': node_id}).scalar()
    if traits:
        conn.execute(stmts.SET_NODE_INSTANCE_INFO, {
            'node_id': node_id,
            'instance_info': dict(info or {}, traits=sorted(traits))})


def _hand_over(conn, member, conductor_id):
    """One hand-over of a group's commit: the node of allocation
    ``member['from_id']`` passes to the new allocation
    ``member['allocation_id']``, the old one is deleted.

    :raises: AllocationGroupCommitFailed (solving again cannot help: the
        node was named by the client).
    """
    old = conn.execute(stmts.ALLOCATION_FOR_DELETE,
                       {'id': member['from_id']}).first()
    if old is None:
        raise exception.AllocationGroupCommitFailed(
            member=member['uuid'],
            reason='allocation %s to hand the node over from is gone.'
            % member['from_uuid'])
    node = conn.execute(stmts.NODE_FOR_DEALLOCATION,
                        {'id': member['node_id']}).first()
    if conn.execute(stmts.HAND_OVER_NODE, {
            'node_id': member['node_id'], 'old_id': old.id,
            'old_uuid': old.uuid, 'new_id': member['allocation_id'],
            'new_uuid': member['uuid']}).rowcount != 1:
        if node is None:
            reason = 'its node is gone.'
        elif node.allocation_id != old.id:
            reason = ('node %s is no longer held by allocation %s.'
                      % (node.uuid, old.uuid))
        elif node.reservation is not None:
            reason = ('node %s is locked by conductor %s.'
                      % (node.uuid, node.reservation))
        else:
            reason = ('node %s is in provision state "%s"; a hand-over '
                      'needs one of %s.' % (node.uuid, node.provision_state,
                                            ', '.join(
                                                states.HANDOVER_STATES)))
        raise exception.AllocationGroupCommitFailed(member=member['uuid'],
                                                    reason=reason)
    conn.execute(stmts.DELETE_ALLOCATION, {'id': old.id})
    if conn.execute(stmts.ACTIVATE_ALLOCATION, {
            'allocation_id': member['allocation_id'],
            'conductor_id': conductor_id,
            'node_id': member['node_id']}).rowcount != 1:
        raise exception.AllocationGroupCommitFailed(
            member=member['uuid'], reason='the allocation is no longer '
                                          'allocating for this conductor.')


class _GroupBusy(Exception):
    """A member's node cannot be freed now: the transaction releasing
    its group rolls back."""


def _naive_lease_end(values):
    """``values`` with an aware expires_at as naive UTC, what the
    expires_at column holds and utc_now() is compared with (PostgreSQL
    would otherwise convert it by the session's time zone)."""
    values = dict(values)
    end = values.get('expires_at')
    if end is not None and end.tzinfo is not None:
        values['expires_at'] = end.astimezone(
            datetime.timezone.utc).replace(tzinfo=None)
    return values


def _as_datetime(value):
    # NOTE: SQLite returns text for expressions, other backends datetimes.
    if isinstance(value, str):
        return datetime.datetime.fromisoformat(value)
    return value.replace(tzinfo=None) if value.tzinfo else value
