"""ironic-alloc-status upgrade check: is this deployment ready for (or
done with) an upgrade?

Built on oslo.upgradecheck: each check returns a Result, the command
prints them in a table (or JSON with --json) and exits with the worst
code: 0 success, 1 warning, 2 failure (255 when a check itself broke).
The checks read the configuration files and the database; they change
nothing and contact no other service.
"""

import functools
import sys

from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_log import log
from oslo_upgradecheck import upgradecheck
from oslo_utils import versionutils
import sqlalchemy.exc

from ironic_alloc.common import context as ia_context
from ironic_alloc.common import release_mappings
from ironic_alloc.conductor import backends
from ironic_alloc.conf import CONF
from ironic_alloc.conf import opts
from ironic_alloc.db import api as db_api
from ironic_alloc.db import migration
from ironic_alloc import objects

Code = upgradecheck.Code
Result = upgradecheck.Result

# Rows read per query while loading the stored objects.
LOAD_PAGE = 500
# Rows a detail line names at most.
NAMED_AT_MOST = 3


def _needs_database(check):
    """A check that reads the database: an unreachable or unreadable
    database is that check's failure, with the driver's message."""
    @functools.wraps(check)
    def wrapper(self):
        try:
            return check(self)
        except (db_exc.DBError, sqlalchemy.exc.SQLAlchemyError) as exc:
            return Result(Code.FAILURE,
                          'The database could not be read (see the '
                          'schema check): %s' % _driver_error(exc))
    return wrapper


def _driver_error(exc):
    """The driver's own message of a database error, without the SQL
    statement SQLAlchemy appends."""
    while True:
        inner = (getattr(exc, 'inner_exception', None)
                 or getattr(exc, 'orig', None))
        if inner is None or inner is exc:
            return _one_line(exc)
        exc = inner


def _one_line(exc):
    return ' '.join(str(exc).split())


class Checks(upgradecheck.UpgradeCommands):
    """The upgrade checks of ironic_alloc."""

    display_title = 'ironic-alloc upgrade status'

    def __init__(self, conf=CONF):
        """:param conf: the configuration the checks read (the process's
            by default)."""
        self.conf = conf
        self.dbapi = db_api.get_instance()
        self.context = ia_context.get_admin_context()

    @_needs_database
    def _check_schema(self):
        state = migration.schema_state()
        if state.is_current:
            return Result(Code.SUCCESS,
                          'The database schema is at the newest revision '
                          'this code knows (%s).' % state.head)
        return Result(Code.FAILURE,
                      'The database schema is at revision %s; this code '
                      'needs %s. Run "ironic-alloc-dbsync upgrade".'
                      % (state.current or 'empty (no schema)', state.head))

    @_needs_database
    def _check_release_pin_and_objects(self):
        try:
            pin = self.conf.pin_release_version
        except cfg.ConfigFileValueError as exc:
            return Result(Code.FAILURE,
                          '[DEFAULT]pin_release_version names no release '
                          'this code serves (%s): %s. Set one of them or '
                          'unset it.' % (
                              ', '.join(release_mappings.PINNABLE_RELEASES)
                              or 'none', _one_line(exc)))
        broken, total, newer = self._load_stored_objects(pin)
        if broken:
            return Result(Code.FAILURE,
                          '%d of %d stored rows do not load as this code\'s '
                          'objects: %s.' % (len(broken), total, '; '.join(
                              broken[:NAMED_AT_MOST])))
        pinned = ('pinned to release %s' % pin if pin
                  else 'not pinned ([DEFAULT]pin_release_version unset)')
        if newer:
            version = release_mappings.object_versions(pin)['Allocation']
            return Result(Code.WARNING,
                          'Services are %s, whose conductors know '
                          'Allocation %s; %d allocations or reservations '
                          'hold data of newer versions (%s), which those '
                          'conductors ignore until every service runs this '
                          'code and the pin is removed. All %d stored rows '
                          'load.' % (pinned, version, len(newer),
                                     '; '.join(newer[:NAMED_AT_MOST]),
                                     total))
        return Result(Code.SUCCESS,
                      'Services are %s; all %d stored rows (allocations, '
                      'reservations, nodes, conductors, chassis) load as '
                      'this code\'s objects.' % (pinned, total))

    def _load_stored_objects(self, pin):
        """Load every stored row as its object.

        :returns: (descriptions of rows that do not load, number of
            rows, descriptions of holds needing a newer Allocation version
            than the pinned release's).
        """
        pinned_version = release_mappings.object_versions(pin).get(
            'Allocation')
        broken, newer, total = [], [], 0
        pages = (
            (objects.Allocation, 'allocation',
             lambda marker: self.dbapi.get_allocation_list(
                 limit=LOAD_PAGE, marker=marker)),
            (objects.Allocation, 'reservation',
             lambda marker: self.dbapi.get_reservation_list(
                 limit=LOAD_PAGE, marker=marker)),
            (objects.Node, 'node',
             lambda marker: self.dbapi.get_node_list(
                 limit=LOAD_PAGE, marker=marker)),
            (objects.Conductor, 'conductor',
             lambda marker: self.dbapi.get_conductor_list(
                 limit=LOAD_PAGE, marker=marker)),
            (objects.Chassis, 'chassis',
             lambda marker: self.dbapi.get_chassis_list(
                 limit=LOAD_PAGE, marker=marker)),
        )
        for cls, kind, read_page in pages:
            marker = None
            while True:
                rows = read_page(marker)
                for row in rows:
                    total += 1
                    try:
                        obj = cls.from_db_row(self.context, row)
                    except (ValueError, TypeError) as exc:
                        broken.append('%s id %s: %s' % (kind, row.id,
                                                        _one_line(exc)))
                        continue
                    if pinned_version and cls is objects.Allocation:
                        lowest = obj.lowest_version()
                        if versionutils.convert_version_to_tuple(lowest) > \
                                versionutils.convert_version_to_tuple(
                                    pinned_version):
                            newer.append('%s %s needs %s'
                                         % (kind, obj.uuid, lowest))
                if len(rows) < LOAD_PAGE:
                    break
                marker = rows[-1].id
        return broken, total, newer

    @_needs_database
    def _check_long_allocating(self):
        timeout = self.conf.conductor.heartbeat_timeout
        rows = self.dbapi.get_long_allocating(timeout)
        if not rows:
            return Result(Code.SUCCESS,
                          'No allocation has been allocating for longer '
                          'than the take-over timeout ([conductor]'
                          'heartbeat_timeout, %d seconds).' % timeout)
        alive = {c.id: c.hostname for c in
                 self.dbapi.get_alive_conductors(timeout)}
        orphans = [row for row in rows if row.conductor_affinity not in alive]
        oldest = rows[0]
        owner = alive.get(oldest.conductor_affinity)
        summary = ('%d allocations have been allocating for longer than '
                   'the take-over timeout ([conductor]heartbeat_timeout, %d '
                   'seconds); the oldest, %s, since %s UTC (%s).'
                   % (len(rows), timeout, oldest.uuid, oldest.created_at,
                      'worked on by live conductor %s' % owner if owner
                      else 'its conductor is not alive'))
        if orphans:
            return Result(Code.FAILURE,
                          summary + ' %d of them belong to no live '
                          'conductor and no live conductor took them over: '
                          'start a conductor (with [conductor]'
                          'check_allocations_interval above 0 they are '
                          'taken over), or delete them, before the '
                          'upgrade.' % len(orphans))
        return Result(Code.WARNING,
                      summary + ' Their conductors are alive but slow: '
                      'look at their worker pools and logs before the '
                      'upgrade.')

    def _check_backend(self):
        name, problems, summary = backends.check_configuration(self.conf)
        details = ' '.join(
            ['[allocation]backend is %s: %s.' % (name, summary)]
            + [_one_line(message) for _fatal, message in problems])
        if any(fatal for fatal, _message in problems):
            return Result(Code.FAILURE, details)
        if problems:
            return Result(Code.WARNING, details)
        return Result(Code.SUCCESS, details)

    _upgrade_checks = (
        ('Database schema', _check_schema),
        ('Release pin and stored objects', _check_release_pin_and_objects),
        ('Long allocating allocations', _check_long_allocating),
        ('Allocation backend settings', _check_backend),
    )


def main(argv=None):
    log.register_options(CONF)
    opts.update_opt_defaults()
    objects.register_all()
    return upgradecheck.main(
        CONF, project='ironic-alloc', upgrade_command=Checks(),
        argv=sys.argv[1:] if argv is None else argv)


if __name__ == '__main__':
    sys.exit(main())
