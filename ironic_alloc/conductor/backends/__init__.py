"""Allocation backends: where allocations find and claim their nodes.

``load()`` is the one place that reads ``[allocation]backend``; everything
else is given the backend it made and calls the interface of
``base.AllocationBackend`` without asking which backend it is.
"""

from ironic_alloc.conductor.backends import database
from ironic_alloc.conductor.backends import placement
from ironic_alloc.conf import CONF

_BACKENDS = {backend.name: backend for backend in (
    database.DatabaseBackend, placement.PlacementBackend)}


def load():
    """A new backend as configured by ``[allocation]backend``."""
    return _BACKENDS[CONF.allocation.backend]()


def check_configuration(conf=CONF):
    """The configured backend's check_configuration(), with its name.

    :returns: (backend name, problems, summary).
    """
    backend = _BACKENDS[conf.allocation.backend]
    problems, summary = backend.check_configuration(conf)
    return backend.name, problems, summary
