"""Rows written straight into the database of a service under test.

Tests that run the service in other processes (the multi-process tier,
the systemd signal tests) need many nodes that are already ``available``,
and allocations in flight, before the processes act on them.  Enrolling
nodes through the API (create, manage, provide) would make the set-up the
slowest part of those tests, so they insert the rows the service itself
would have written, with the models' tables, in one transaction each
(the columns left out get the models' defaults).
"""

import datetime
import uuid

import sqlalchemy as sa

from ironic_alloc.common import matching
from ironic_alloc.common import states
from ironic_alloc.db.sqlalchemy import models

# Nodes of this driver need no hardware.
DRIVER = 'fake-hardware'


def insert_available_nodes(engine, count, resource_class, name_prefix,
                           properties=None):
    """Insert ``count`` available, powered off nodes without traits.

    :param engine: an SQLAlchemy engine on a database whose schema is at
        head.
    :param name_prefix: the nodes are named ``<name_prefix>-<index>``.
    :param properties: the nodes' properties (default: none), with their
        normalised columns and capabilities, as the service writes them.
    :returns: the uuids of the new nodes, in name order.
    """
    properties = dict(properties or {})
    # NOTE: the service stores naive UTC times.
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    uuids = [str(uuid.uuid4()) for _ in range(count)]
    rows = [{'uuid': node_uuid,
             'name': '%s-%06d' % (name_prefix, index),
             'driver': DRIVER,
             'resource_class': resource_class,
             'provision_state': states.AVAILABLE,
             'provision_updated_at': now,
             'power_state': states.POWER_OFF,
             'properties': properties, 'extra': {}, 'driver_info': {},
             'driver_internal_info': {}, 'instance_info': {},
             **matching.node_match_columns(properties)}
            for index, node_uuid in enumerate(uuids)]
    capabilities = matching.node_capabilities(properties)
    if rows:
        with engine.begin() as conn:
            conn.execute(models.Node.__table__.insert(), rows)
            if capabilities:
                nodes = models.Node.__table__
                ids = conn.execute(sa.select(nodes.c.id).where(
                    nodes.c.uuid.in_(uuids))).scalars()
                conn.execute(models.NodeCapability.__table__.insert(), [
                    {'node_id': node_id, 'name': name, 'value': value}
                    for node_id in ids
                    for name, value in sorted(capabilities.items())])
    return uuids


def insert_allocating_allocations(engine, count, resource_class,
                                  conductor_id):
    """Insert ``count`` allocations in ``allocating`` owned by a conductor,
    as POST /v1/allocations writes them before the conductor picks a node.

    :returns: the uuids of the new allocations.
    """
    rows = [{'uuid': str(uuid.uuid4()),
             'state': states.ALLOCATING,
             'resource_class': resource_class,
             'traits': [], 'candidate_nodes': [], 'extra': {},
             'conductor_affinity': conductor_id}
            for _ in range(count)]
    if rows:
        with engine.begin() as conn:
            conn.execute(models.Allocation.__table__.insert(), rows)
    return [row['uuid'] for row in rows]
