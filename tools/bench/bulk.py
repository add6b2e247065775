"""A fast node loader for ironic_alloc's own database (not part of the API).

Enrolling 100,000 nodes through the API (create, traits, manage, provide)
takes hours, which is not what the benchmark measures. This loader writes
nodes that are already ``available`` (power off, no instance, no
allocation, with their traits) straight into the service's database with
ironic_alloc's models, in batches of multi-row inserts. It works only for
ironic_alloc, and only on a database whose schema is already at head (a
standalone service upgrades it when it starts). The measured phases never
use it: they go through the HTTP API only.
"""

import datetime
import time
import uuid as uuid_mod

import sqlalchemy as sa

BATCH = 2000
DRIVER = 'fake-hardware'


def node_rows(uuids, resource_class, name_prefix, start, now,
              properties=None, match_columns=None):
    """The ``nodes`` rows of available fake-hardware nodes.

    :param start: the index of the first node (for its name).
    :param properties: the nodes' properties (default: none).
    :param match_columns: their normalised columns, as ironic_alloc's
        matching.node_match_columns() makes them (default: none).
    """
    return [{'uuid': node_uuid,
             'name': '%s-%06d' % (name_prefix, start + i),
             'driver': DRIVER,
             'resource_class': resource_class,
             'provision_state': 'available',
             'target_provision_state': None,
             'provision_updated_at': now,
             'power_state': 'power off',
             'maintenance': False,
             'conductor_group': '',
             'protected': False,
             'retired': False,
             'console_enabled': False,
             'properties': dict(properties or {}), 'extra': {},
             'driver_info': {}, 'driver_internal_info': {},
             'instance_info': {}, 'created_at': now,
             **(match_columns or {})}
            for i, node_uuid in enumerate(uuids)]


def trait_rows(node_ids, traits, now):
    return [{'node_id': node_id, 'trait': trait, 'created_at': now}
            for node_id in node_ids for trait in sorted(set(traits))]


def _engine(db_url):
    kwargs = {}
    if db_url.startswith('sqlite'):
        # NOTE: the running service may hold the write lock for a moment.
        kwargs['connect_args'] = {'timeout': 60}
    return sa.create_engine(db_url, **kwargs)


def load_nodes(db_url, count, resource_class, traits=(), name_prefix='bench',
               batch=BATCH, progress=None, stop=None, properties=None):
    """Insert ``count`` available nodes (and their traits).

    Each batch is one transaction: nodes by executemany, their ids read
    back by uuid, then their traits and capabilities by executemany.

    :param properties: the nodes' properties (default: none), with the
        normalised columns and capabilities the service writes with them.

    :param progress: an optional progress.Progress.
    :param stop: an optional threading.Event ending the load early.
    :returns: (list of node uuids inserted, seconds).
    """
    # NOTE: imported here so that the rest of the tool runs without
    # ironic_alloc installed.
    from ironic_alloc.common import matching
    from ironic_alloc.db.sqlalchemy import models

    nodes = models.Node.__table__
    node_traits = models.NodeTrait.__table__
    node_capabilities = models.NodeCapability.__table__
    match_columns = dict(matching.node_match_columns(properties or {}),
                         match_traits=matching.traits_column(traits))
    capabilities = sorted(matching.node_capabilities(
        properties or {}).items())
    engine = _engine(db_url)
    inserted = []
    start_time = time.perf_counter()
    try:
        for start in range(0, count, batch):
            if stop is not None and stop.is_set():
                break
            size = min(batch, count - start)
            uuids = [str(uuid_mod.uuid4()) for _ in range(size)]
            now = datetime.datetime.now(datetime.timezone.utc).replace(
                tzinfo=None)
            with engine.begin() as conn:
                conn.execute(nodes.insert(),
                             node_rows(uuids, resource_class, name_prefix,
                                       start, now, properties,
                                       match_columns))
                if traits or capabilities:
                    ids = [row.id for row in conn.execute(
                        sa.select(nodes.c.id).where(nodes.c.uuid.in_(uuids)))]
                if traits:
                    conn.execute(node_traits.insert(),
                                 trait_rows(ids, traits, now))
                if capabilities:
                    conn.execute(node_capabilities.insert(), [
                        {'node_id': node_id, 'name': name, 'value': value,
                         'created_at': now}
                        for node_id in ids for name, value in capabilities])
            inserted.extend(uuids)
            if progress is not None:
                progress.advance(size)
    finally:
        engine.dispose()
    return inserted, time.perf_counter() - start_time


def delete_nodes(db_url, node_uuids, batch=BATCH):
    """Delete nodes written by load_nodes (with their traits and
    capabilities).

    Nodes that hold an allocation are deleted too; run it after the
    benchmark deleted its allocations.

    :returns: the number of nodes deleted.
    """
    from ironic_alloc.db.sqlalchemy import models

    nodes = models.Node.__table__
    node_traits = models.NodeTrait.__table__
    node_capabilities = models.NodeCapability.__table__
    engine = _engine(db_url)
    deleted = 0
    try:
        for start in range(0, len(node_uuids), batch):
            chunk = list(node_uuids[start:start + batch])
            with engine.begin() as conn:
                ids = sa.select(nodes.c.id).where(nodes.c.uuid.in_(chunk))
                conn.execute(node_traits.delete().where(
                    node_traits.c.node_id.in_(ids)))
                conn.execute(node_capabilities.delete().where(
                    node_capabilities.c.node_id.in_(ids)))
                deleted += conn.execute(nodes.delete().where(
                    nodes.c.uuid.in_(chunk))).rowcount
    finally:
        engine.dispose()
    return deleted


def settle(db_url):
    """Vacuum and analyze what a load wrote, as autovacuum (PostgreSQL)
    or InnoDB's automatic statistics would in the minutes after it: dead
    rows gone and the planner's statistics gathered, so that a
    measurement that follows sees a fleet's steady state, not the
    database catching up with the load.  SQLite is left alone.
    """
    engine = _engine(db_url)
    try:
        with engine.connect() as conn:
            conn = conn.execution_options(isolation_level='AUTOCOMMIT')
            if conn.dialect.name == 'postgresql':
                conn.execute(sa.text('VACUUM ANALYZE'))
            elif conn.dialect.name in ('mysql', 'mariadb'):
                from ironic_alloc.db.sqlalchemy import models
                conn.execute(sa.text('ANALYZE TABLE %s' % ', '.join(
                    table.name for table in
                    models.Base.metadata.sorted_tables)))
    finally:
        engine.dispose()


def wipe(db_url):
    """Drop every ironic_alloc table and the alembic version table.

    For ``sweep`` on a server database dedicated to the benchmark: each
    fleet size starts from an empty database.
    """
    from ironic_alloc.db.sqlalchemy import models

    engine = _engine(db_url)
    try:
        with engine.begin() as conn:
            models.Base.metadata.drop_all(conn)
            conn.execute(sa.text('DROP TABLE IF EXISTS alembic_version'))
    finally:
        engine.dispose()
