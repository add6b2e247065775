"""Leases of holds at the API (extension "reservations"): the one place
that turns a request's ``ttl`` or ``expires_at`` into the end of a lease.

A lease ends at a time of the database clock: ``ttl`` counts from the
database's current time, and an ``expires_at`` is checked against it,
so conductors judging expiry (by the same clock, in SQL) and the API
never disagree however the hosts' clocks drift.  Leases are kept to the
second (common/lease_time.py).
"""

import datetime

from oslo_utils import timeutils
from oslo_utils import versionutils
from wsme import types as wtypes

from ironic_alloc import api
from ironic_alloc.api.controllers.v1 import utils
from ironic_alloc.common import exception
from ironic_alloc.common import lease_time
from ironic_alloc.common import release_mappings
from ironic_alloc import objects

# The first Allocation object version whose conductors know leases and
# reservations (kind, instance_uuid, expires_at).
_LEASES_OBJECT_VERSION = (1, 3)


def check_not_pinned():
    """Refuse reservations and leases during a rolling upgrade from a
    release whose conductors know neither: they would not release ended
    leases nor guard the deploys of reserved nodes.

    :raises: Invalid (400).
    """
    pin = api.request.cfg.pin_release_version
    if not pin:
        return
    version = release_mappings.object_versions(pin).get('Allocation')
    if versionutils.convert_version_to_tuple(version) < \
            _LEASES_OBJECT_VERSION:
        raise exception.Invalid(
            'Reservations and leases cannot be used while '
            '[DEFAULT]pin_release_version is %s: the conductors of that '
            'release would neither end leases nor guard the deploys of '
            'reserved nodes. Retry once the upgrade is over.' % pin)


def _max_ttl():
    return api.request.cfg.reservation.max_ttl


def check_ttl(ttl):
    """:raises: Invalid (400) unless ``ttl`` is a whole number of seconds
    from 1 to [reservation]max_ttl."""
    maximum = _max_ttl()
    # NOTE: JSON true is an int to Python; it is not a number of seconds.
    if isinstance(ttl, bool) or not isinstance(ttl, int):
        raise exception.Invalid(
            'Invalid ttl %s: a whole number of seconds is expected.'
            % utils.quoted(ttl))
    if not 1 <= ttl <= maximum:
        raise exception.Invalid(
            'Invalid ttl %d: a lease lasts from 1 to %d seconds '
            '([reservation]max_ttl).' % (ttl, maximum))


def parse_expires_at(value):
    """An ``expires_at`` as the client wrote it (ISO 8601; without a time
    zone it is UTC) -> naive UTC.

    :raises: Invalid (400).
    """
    if not isinstance(value, str):
        raise exception.Invalid(
            'Invalid expires_at %s: an ISO 8601 date and time (UTC) is '
            'expected.' % utils.quoted(value))
    try:
        # NOTE: a time zone may move a date out of datetime's range.
        return timeutils.normalize_time(
            timeutils.parse_isotime(value)).replace(microsecond=0)
    except (ValueError, OverflowError):
        raise exception.Invalid(
            'Invalid expires_at %s: an ISO 8601 date and time (UTC) is '
            'expected.' % utils.quoted(value))


PATHS = ('/expires_at', '/ttl')
"""The paths of a PATCH that change a hold's lease"""


def lease_of_patch(ops):
    """The lease operations of a PATCH (paths of PATHS), applied in order.

    :returns: (whether the lease changes, its new end or None for none).
    :raises: Invalid (400).
    """
    changed, end = False, None
    for op in ops:
        if op['op'] not in ('add', 'replace', 'remove'):
            raise exception.Invalid(
                'Cannot %s %s: the lease is replaced or removed.'
                % (op['op'], op['path']))
        if op['op'] == 'remove':
            if op['path'] == '/ttl':
                raise exception.Invalid(
                    'Cannot remove /ttl: it is write-only; remove '
                    '/expires_at to end the lease\'s expiry.')
            changed, end = True, None
            continue
        if op.get('value', wtypes.Unset) in (wtypes.Unset, None):
            raise exception.Invalid(
                'A value is required to %s %s (remove /expires_at for no '
                'expiry).' % (op['op'], op['path']))
        if op['path'] == '/ttl':
            end = lease_end(ttl=op['value'])
        else:
            end = lease_end(expires_at=op['value'])
        changed = True
    return changed, end


def lease_end(ttl=None, expires_at=None):
    """The end of a lease asked for by ``ttl`` (seconds from now) or
    ``expires_at`` (one of them, not both), by the database clock.

    :returns: a naive UTC datetime.
    :raises: Invalid (400) for both, a bad value, a ttl out of
        [1, max_ttl], or an expires_at not in the future or beyond now +
        max_ttl.
    """
    check_not_pinned()
    if ttl is not None and expires_at is not None:
        raise exception.Invalid('Give either ttl or expires_at, not both.')
    if ttl is not None:
        check_ttl(ttl)
        return lease_time.end_after(
            objects.Allocation.database_time(api.request.context), ttl)
    end = parse_expires_at(expires_at)
    now = objects.Allocation.database_time(api.request.context)
    latest = now + datetime.timedelta(seconds=_max_ttl())
    if end <= now:
        raise exception.Invalid(
            'Invalid expires_at %s: it is not in the future (the '
            'database\'s time is %s UTC).' % (end.isoformat(),
                                              now.replace(
                                                  microsecond=0).isoformat()))
    if end > latest:
        raise exception.Invalid(
            'Invalid expires_at %s: a lease ends at most %d seconds from '
            'now ([reservation]max_ttl), by %s UTC.'
            % (end.isoformat(), _max_ttl(),
               latest.replace(microsecond=0).isoformat()))
    return end


def shown(value):
    """A lease end as responses show it (ISO 8601, UTC), or None."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value.astimezone(datetime.timezone.utc).isoformat()
