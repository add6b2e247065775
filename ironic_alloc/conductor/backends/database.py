"""The database backend: nodes are searched and reserved in ironic_alloc's
own database only."""

import random
import time

from oslo_utils import uuidutils

from ironic_alloc.conductor.backends import base
from ironic_alloc.conf import allocation as allocation_conf
from ironic_alloc.conf import CONF
from ironic_alloc.db import api as db_api


def search(criteria):
    """A batch of candidate node ids from a random point of the candidate
    index."""
    # NOTE: a random starting point spreads concurrent allocations over
    # the candidate index so they rarely fight for one row.
    return db_api.get_instance().get_allocation_candidates(
        criteria, CONF.conductor.allocation_candidate_batch,
        pivot=uuidutils.generate_uuid())


class DatabaseBackend(base.AllocationBackend):

    name = allocation_conf.DATABASE

    def prefetch(self, allocation, criteria):
        """:returns: (ids of the node named like the allocation, tried
        first; the first batch of candidates, or None when a named node
        was found: it is searched only if that node cannot be reserved).
        """
        named = []
        if allocation.name:
            named = self.dbapi.get_allocation_candidates(
                criteria, 1, name=allocation.name)
        return named, (None if named else search(criteria))

    def reserve(self, context, allocation, criteria, conductor_id,
                prefetched):
        named, batch = prefetched
        for node_id in named:
            if self.dbapi.reserve_node_for_allocation(
                    allocation.id, conductor_id, node_id, criteria):
                return node_id
        for attempt in range(CONF.conductor.allocation_attempts):
            if batch is None:
                batch = search(criteria)
            if not batch:
                return None
            for node_id in batch:
                if self.dbapi.reserve_node_for_allocation(
                        allocation.id, conductor_id, node_id, criteria):
                    return node_id
            batch = None
            # Every candidate was taken meanwhile (or locked): look again.
            time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))
        return None
