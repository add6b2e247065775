"""The periodic fold of node tallies: every conductor adds the tally
changes the triggers on nodes wrote to the tallies an explanation reads
(models.NODE_TALLIES), and deletes them.

The database API's fold takes a lock first, so the folds of several
conductors run one after another; each finds the changes the previous one
left.  An explanation is exact whether or not the changes were folded: it
reads them too.  The fold keeps what it reads short.
"""

from oslo_log import log

from ironic_alloc.db import api as db_api

LOG = log.getLogger(__name__)

# Changes folded per transaction.
FOLD_BATCH = 5000


class TallyFold:

    def __init__(self):
        self.dbapi = db_api.get_instance()

    def fold(self):
        """Fold every change written before this run; returns how many."""
        total = 0
        while True:
            folded = self.dbapi.fold_node_tallies(FOLD_BATCH)
            total += folded
            if folded < FOLD_BATCH:
                break
        if total:
            LOG.debug('Folded %d node tally changes', total)
        return total
