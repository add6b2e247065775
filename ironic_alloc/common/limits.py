"""Per-project limits on holds: where they come from, and what they allow.

A hold is an allocation in any state or a reservation; it counts against
the project that owns it (its ``owner``), of its resource class (a
reservation's is that of its node).  A limit is a number of holds, for
every resource class together or for one class, named as Keystone unified
limits name resources: ``baremetal_holds`` and
``baremetal_holds:<resource class>``.

The limits are read here ([limits]driver: none, config or keystone); the
count and the comparison happen in the database layer, in the transaction
that inserts the hold and under a lock of the project
(db.api create_allocation, backfill_allocation, create_reservation).
"""

import threading
import time

from oslo_config import cfg
from oslo_log import log

from ironic_alloc.common import exception
from ironic_alloc.conf import CONF
from ironic_alloc.conf import limits as limits_conf
from ironic_alloc.db import api as db_api

LOG = log.getLogger(__name__)

TOTAL = 'baremetal_holds'
_CLASS_PREFIX = TOTAL + ':'



def _keystone_errors():
    """What a Keystone (or keystoneauth, or SDK) failure may raise while
    the limits are read: each is the same 503 to the client."""
    from keystoneauth1 import exceptions as ksa_exceptions
    from openstack import exceptions as sdk_exceptions
    from oslo_limit import exception as limit_exception
    return (ksa_exceptions.ClientException, sdk_exceptions.SDKException,
            limit_exception.SessionInitError)


def resource_name(resource_class=None):
    """The resource name of the limit of ``resource_class``, or of every
    class together when it is None."""
    if resource_class is None:
        return TOTAL
    return _CLASS_PREFIX + resource_class


class ProjectLimits:
    """The limits of one project: ``total`` (None: no limit) and
    ``per_class`` ({resource class: limit}); a negative limit is none."""

    def __init__(self, project, total=None, per_class=None):
        self.project = project
        self.total = None if total is None or total < 0 else total
        self.per_class = {rc: n for rc, n in (per_class or {}).items()
                          if n is not None and n >= 0}

    def __bool__(self):
        return self.total is not None or bool(self.per_class)

    def __repr__(self):
        return 'ProjectLimits(%r, total=%r, per_class=%r)' % (
            self.project, self.total, self.per_class)

    def refusal(self, usage, resource_class):
        """Why one more hold of ``resource_class`` is refused, or None.

        :param usage: {resource class (None for none): holds} of the
            project, counted under its lock.
        :returns: a ProjectLimitExceeded naming the first limit reached
            (that of the class, then the total), or None.
        """
        limit = self.per_class.get(resource_class)
        if limit is not None:
            used = usage.get(resource_class, 0)
            if used + 1 > limit:
                return exception.ProjectLimitExceeded(
                    project=self.project,
                    resource=resource_name(resource_class),
                    limit=limit, usage=used)
        if self.total is not None:
            used = sum(usage.values())
            if used + 1 > self.total:
                return exception.ProjectLimitExceeded(
                    project=self.project, resource=TOTAL,
                    limit=self.total, usage=used)
        return None

    def refusal_of_many(self, usage, requested):
        """Why ``requested`` more holds, made together, are refused, or
        None.

        :param usage: as for refusal().
        :param requested: {resource class: new holds}.
        :returns: a GroupLimitExceeded naming the first limit they would
            pass (a class's, in class order, then the total), with the
            holds in use and those requested that count against it.
        """
        for resource_class in sorted(requested, key=str):
            limit = self.per_class.get(resource_class)
            if limit is None:
                continue
            used = usage.get(resource_class, 0)
            if used + requested[resource_class] > limit:
                return exception.GroupLimitExceeded(
                    project=self.project,
                    resource=resource_name(resource_class), limit=limit,
                    usage=used, requested=requested[resource_class])
        if self.total is not None:
            used = sum(usage.values())
            wanted = sum(requested.values())
            if used + wanted > self.total:
                return exception.GroupLimitExceeded(
                    project=self.project, resource=TOTAL, limit=self.total,
                    usage=used, requested=wanted)
        return None


def _from_resource_names(project, named):
    """ProjectLimits from {resource name: limit}; names of other
    resources of the service are not ours and are ignored."""
    per_class = {name[len(_CLASS_PREFIX):]: value
                 for name, value in named.items()
                 if name.startswith(_CLASS_PREFIX)
                 and len(name) > len(_CLASS_PREFIX)}
    return ProjectLimits(project, named.get(TOTAL), per_class)


class _KeystoneLimits:
    """Keystone unified limits through oslo.limit, per project, kept for
    [limits]cache_time seconds."""

    def __init__(self):
        self._lock = threading.Lock()
        self._enforcer = None
        self._cache = {}

    def _get_enforcer(self):
        with self._lock:
            if self._enforcer is None:
                # NOTE: oslo.limit's own cache keeps limits for the life
                # of the enforcer; this module's cache expires instead.
                # NOTE: oslo.limit (and the SDK it loads) only when the
                # keystone driver reads limits: the SDK imports
                # prometheus-client, which must not happen before
                # ironic-alloc-api has chosen its metrics mode
                # (metrics.prepare_multiprocess).
                from oslo_limit import limit as oslo_limit
                self._enforcer = oslo_limit.Enforcer(_count_holds,
                                                     cache=False)
            return self._enforcer

    def _read(self, project):
        enforcer = self._get_enforcer()
        named = dict(enforcer.get_registered_limits(None))
        # NOTE: a project limit replaces the registered (default) limit of
        # the same resource, as in Keystone's flat model.
        named.update(enforcer.get_project_limits(project, None))
        return _from_resource_names(project, named)

    def get(self, project, cache_time):
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(project)
        if cached is not None and cached[0] > now:
            return cached[1]
        try:
            limits = self._read(project)
        except _keystone_errors() as exc:
            LOG.warning('The limits of project %(project)s could not be '
                        'read from Keystone: %(error)s',
                        {'project': project, 'error': exc})
            raise exception.LimitsUnavailable(project=project)
        except ValueError as exc:
            # NOTE: how oslo.limit reports an endpoint, service or region
            # of [oslo_limit] that Keystone does not know.
            LOG.error('The limits of project %(project)s could not be '
                      'read: [oslo_limit] names no endpoint Keystone '
                      'knows: %(error)s', {'project': project, 'error': exc})
            raise exception.LimitsUnavailable(project=project)
        if cache_time > 0:
            with self._lock:
                self._cache[project] = (now + cache_time, limits)
        return limits

    def reset(self):
        with self._lock:
            self._enforcer = None
            self._cache.clear()


_KEYSTONE = _KeystoneLimits()


def _count_holds(project_id, resource_names):
    """oslo.limit's usage callback: the holds of ``project_id`` by
    resource name (only used by oslo.limit's own enforce(), which this
    service does not call: it counts under the project's lock)."""
    usage = db_api.get_instance().count_project_holds(project_id)
    counts = {TOTAL: sum(usage.values())}
    counts.update({resource_name(rc): n for rc, n in usage.items()
                   if rc is not None})
    return {name: counts.get(name, 0) for name in resource_names}


def enabled(conf=CONF):
    """Whether a driver reads limits at all ([limits]driver is not
    none)."""
    return conf.limits.driver != limits_conf.DRIVER_NONE


def for_project(project, conf=CONF):
    """The limits of ``project``'s holds, or None when nothing limits
    them (driver none, no project, or no limit set).

    :raises: LimitsUnavailable (503) when Keystone cannot be read.
    """
    if project is None:
        return None
    driver = conf.limits.driver
    if driver == limits_conf.DRIVER_CONFIG:
        limits = ProjectLimits(
            project, conf.limits.project_holds,
            conf.limits.project_holds_per_resource_class)
    elif driver == limits_conf.DRIVER_KEYSTONE:
        limits = _KEYSTONE.get(project, conf.limits.cache_time)
    else:
        return None
    return limits or None


def reset():
    """Forget the Keystone connection and the cached limits (tests)."""
    _KEYSTONE.reset()


def check_config(conf=CONF):
    """Stop start-up on malformed [limits] or missing [oslo_limit] options.

    oslo.config checks a value when the option is read: read them all now
    rather than at the first request that creates a hold.

    :raises: SystemExit with one line naming the option.
    """
    for name in ('driver', 'project_holds',
                 'project_holds_per_resource_class', 'cache_time'):
        try:
            getattr(conf.limits, name)
        except (cfg.ConfigFileValueError, ValueError) as exc:
            raise SystemExit('Invalid [limits]%s: %s' % (name, exc))
    if conf.limits.driver != limits_conf.DRIVER_KEYSTONE:
        return
    olimit = conf.oslo_limit
    if not (olimit.endpoint_id or olimit.endpoint_service_name
            or olimit.endpoint_service_type):
        raise SystemExit('Invalid [limits]driver keystone: [oslo_limit] '
                         'names no endpoint (set endpoint_id, or '
                         'endpoint_service_name or endpoint_service_type '
                         'with endpoint_region_name)')
    if not olimit.auth_type:
        raise SystemExit('Invalid [limits]driver keystone: [oslo_limit] '
                         'has no auth_type (and the credentials of a user '
                         'who may read limits)')
