"""The periodic purge of old allocations and allocation groups in state
error (a group with its members, never a member alone).

Its own periodic task, whatever the take-over settings are: disabling
take-over ([conductor]check_allocations_interval = 0) must not keep
error allocations forever.  What may be purged is decided by the
database API's one rule (db.api get_purgeable_error_allocations), the
same as for ``ironic-alloc-dbsync purge``.
"""

from oslo_log import log

from ironic_alloc.conf import CONF
from ironic_alloc.db import api as db_api

LOG = log.getLogger(__name__)

# Rows deleted per transaction.
PURGE_BATCH = 1000


class ErrorAllocationPurge:

    def __init__(self):
        self.dbapi = db_api.get_instance()

    @staticmethod
    def spacing():
        """Seconds between purges; 0 (no task) while
        [conductor]error_allocation_max_age keeps error allocations."""
        if not CONF.conductor.error_allocation_max_age:
            return 0
        return CONF.conductor.error_allocation_purge_interval

    def purge_error_allocations(self):
        """Delete the error allocations and error groups (with their
        members) older than [conductor]error_allocation_max_age; returns
        how many allocations."""
        max_age = CONF.conductor.error_allocation_max_age
        if not max_age:
            return 0
        purged = self.dbapi.purge_error_allocations(max_age, PURGE_BATCH)
        if purged:
            LOG.info('Purged %(count)d allocations in state error not '
                     'updated for %(age)d seconds',
                     {'count': purged, 'age': max_age})
        groups, members = self.dbapi.purge_error_groups(max_age,
                                                        PURGE_BATCH)
        if groups:
            LOG.info('Purged %(count)d allocation groups in state error '
                     'not updated for %(age)d seconds, with their '
                     '%(members)d member allocations',
                     {'count': groups, 'members': members, 'age': max_age})
        return purged + members
