"""Collections and their paging: the ``next`` link is built here only."""

import urllib.parse

from wsme import types as wtypes

from ironic_alloc.api.controllers import link


class Collection(wtypes.Base):
    """A page of resources; subclasses add the list attribute."""

    next = str
    """A link to the next page, when this page is full"""


def next_link(resource, query, items, limit, marker_attr='uuid'):
    """The URL of the page after ``items``, or Unset on the last page.

    :param resource: the path under /v1, e.g. 'nodes' or 'nodes/detail'.
    :param query: the normalised query of this request: every filter,
        ``fields``, sorting and ``detail``, with None for absent ones.  The
        next page repeats all of it, so it obeys the same filters.
    :param items: the objects of this page.
    :param limit: the page size used.
    :param marker_attr: the attribute identifying the last item.
    """
    if not items or len(items) < limit:
        return wtypes.Unset
    params = {}
    for key, value in query.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            value = ','.join(value)
        elif isinstance(value, bool):
            value = str(value)
        params[key] = value
    params['limit'] = limit
    params['marker'] = getattr(items[-1], marker_attr)
    return link.build_url(resource, '?' + urllib.parse.urlencode(params))
