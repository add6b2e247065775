"""The picking rule: which nodes a new allocation may be given.

This module is the rule's one home.  Everything that needs it derives its
own form from ``PICKABLE``:

* the candidate search and the reservation's guard build their SQL from it
  (``db/sqlalchemy/statements.py``), and an empty search is explained with
  the conditions' descriptions;
* the partial index of free nodes (``db/sqlalchemy/models.py``) is built
  from the conditions it covers;
* the Placement backend keeps the one unit of a node's provider reserved
  while ``may_be_picked(node)`` is False.

A node lock (``nodes.reservation``) is not part of the rule: locks last as
long as one operation, so mirroring them would churn Placement for nothing.
The reservation's guard checks the lock on its own (``NODE_UNLOCKED`` in
``statements``).

Constants and pure functions only: the database layer imports it.
"""

import collections

from ironic_alloc.common import states

# How a condition tests its field.
EQUALS = '='
IS = 'IS'
IS_NOT = 'IS NOT'

Condition = collections.namedtuple('Condition',
                                   'field test value description')

# NOTE: the order is that of the free-node index's predicate (models.py),
# whose text must stay the one its migration created.
PICKABLE = (
    Condition('provision_state', EQUALS, states.AVAILABLE,
              'provision state available'),
    Condition('maintenance', IS, False, 'not in maintenance'),
    Condition('retired', IS, False, 'not retired'),
    Condition('power_state', IS_NOT, None, 'with a power state'),
    Condition('allocation_id', IS, None, 'no allocation'),
    Condition('instance_uuid', IS, None, 'no instance'),
)


def holds(condition, value):
    """Whether ``value`` passes ``condition``, with SQL's meaning (a NULL
    is never equal to anything)."""
    if condition.test == EQUALS:
        return value is not None and value == condition.value
    if condition.test == IS:
        return value is condition.value or (
            isinstance(condition.value, bool) and value is not None
            and bool(value) is condition.value)
    return value is not condition.value


def may_be_picked(node):
    """True when ``node`` (anything with the node's fields as attributes)
    may be given to a new allocation."""
    return all(holds(condition, getattr(node, condition.field))
               for condition in PICKABLE)


def describe():
    """The rule in words, for operators reading why nothing was found."""
    return ', '.join(condition.description for condition in PICKABLE)


def sql_text(fields):
    """The conditions on ``fields`` as literal SQL (for an index predicate,
    which takes no bind parameters), in the rule's order."""
    parts = []
    for condition in PICKABLE:
        if condition.field not in fields:
            continue
        if condition.value is None:
            value = 'NULL'
        elif isinstance(condition.value, bool):
            value = 'true' if condition.value else 'false'
        else:
            value = "'%s'" % condition.value
        parts.append('%s %s %s' % (condition.field, condition.test, value))
    return ' AND '.join(parts)
