"""Percentiles and summaries of latency samples (seconds)."""

import math


def percentile(values, pct):
    """The ``pct`` percentile of ``values`` by linear interpolation.

    The same definition as numpy's default ("linear"): the value at rank
    ``(n - 1) * pct / 100`` of the sorted samples, interpolated between
    the two neighbouring samples.

    :param values: an iterable of numbers (need not be sorted).
    :param pct: a number between 0 and 100.
    :returns: a float, or None when there are no values.
    :raises: ValueError when ``pct`` is outside [0, 100].
    """
    if not 0 <= pct <= 100:
        raise ValueError('percentile must be between 0 and 100, not %r'
                         % (pct,))
    ordered = sorted(values)
    if not ordered:
        return None
    rank = (len(ordered) - 1) * pct / 100.0
    low = math.floor(rank)
    high = math.ceil(rank)
    if low == high:
        return float(ordered[low])
    weight = rank - low
    return ordered[low] * (1 - weight) + ordered[high] * weight


def summarize(values):
    """count, min, mean, p50, p90, p99 and max of ``values``.

    Every statistic except ``count`` is None for an empty sample.
    """
    values = list(values)
    if not values:
        return {'count': 0, 'min': None, 'mean': None, 'p50': None,
                'p90': None, 'p99': None, 'max': None}
    return {'count': len(values),
            'min': float(min(values)),
            'mean': sum(values) / len(values),
            'p50': percentile(values, 50),
            'p90': percentile(values, 90),
            'p99': percentile(values, 99),
            'max': float(max(values))}


def rate(count, seconds):
    """Items per second, or None when no time elapsed."""
    if not seconds or seconds <= 0:
        return None
    return count / seconds


def ratio(value, reference):
    """``value / reference``, or None when either is missing or zero."""
    if value is None or not reference:
        return None
    return value / reference
