"""The time rule of leases, one place for the API and the database layer.

Leases are kept in whole seconds, as every database stores them (MySQL's
DATETIME column has no fraction), and a lease asked for by a ``ttl`` is
never shorter than that ttl.  The "now" they count from is always the
database's clock, read by the caller.
"""

import datetime


def whole_second(value, up=False):
    """``value`` (a datetime) in whole seconds: rounded down, or up."""
    whole = value.replace(microsecond=0)
    if up and whole != value:
        whole += datetime.timedelta(seconds=1)
    return whole


def end_after(now, ttl):
    """The end of a lease of ``ttl`` seconds starting at ``now`` (the
    database's time): ``now`` rounded up to the second, plus ``ttl``."""
    return whole_second(now, up=True) + datetime.timedelta(seconds=ttl)
