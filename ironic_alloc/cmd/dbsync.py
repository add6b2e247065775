"""ironic-alloc-dbsync: create or upgrade the database schema, and purge
old rows."""

import sys

from oslo_config import cfg

from ironic_alloc.common import service as service_utils
from ironic_alloc.conf import CONF
from ironic_alloc.db import api as db_api
from ironic_alloc.db import migration

# Defaults of "purge" (documented in doc/source/cli/ironic-alloc-dbsync.rst).
PURGE_OLDER_THAN_DAYS = 30
PURGE_BATCH_SIZE = 1000


def _upgrade():
    migration.upgrade(CONF.command.revision)
    print('Database schema is at revision %s' % migration.version())
    return 0


def _version():
    print(migration.version() or 'empty (no schema yet)')
    return 0


def _check():
    try:
        state = migration.schema_state()
    except Exception as exc:
        # NOTE: its own exit status: "cannot tell" is not "upgrade needed".
        print('ERROR: the schema revision could not be read: %s' % exc)
        return 2
    if state.is_current:
        print('OK: the database schema is current (revision %s).'
              % state.head)
        return 0
    print('UPGRADE NEEDED: the database schema is at revision %s, this '
          'code needs %s. Run "ironic-alloc-dbsync upgrade".'
          % (state.current or 'empty', state.head))
    return 1


def _refresh_node_matching():
    batch_size = CONF.command.batch_size
    if batch_size < 1:
        print('ERROR: --batch-size must be 1 or more nodes.')
        return 2
    dbapi = db_api.get_instance()
    last, count = 0, 0
    while True:
        node_ids = dbapi.refresh_node_matching(last, batch_size)
        if not node_ids:
            break
        last = node_ids[-1]
        count += len(node_ids)
    print('Refreshed the matching columns of %d nodes.' % count)
    return 0


def _purge():
    days = CONF.command.older_than
    batch_size = CONF.command.batch_size
    if days < 0 or batch_size < 1:
        print('ERROR: --older-than must be 0 or more days and --batch-size '
              '1 or more rows.')
        return 2
    dbapi = db_api.get_instance()
    older_than = days * 86400
    alive_timeout = CONF.conductor.heartbeat_timeout
    if CONF.command.dry_run:
        allocations = _print_all(
            lambda limit, after: dbapi.get_purgeable_error_allocations(
                older_than, limit, after),
            batch_size, 'error allocation %(name)s (updated %(at)s)',
            'uuid', 'updated_at')
        groups, members = _print_groups(dbapi, older_than, batch_size)
        conductors = _print_all(
            lambda limit, after: dbapi.get_purgeable_conductors(
                older_than, alive_timeout, limit, after),
            batch_size, 'conductor %(name)s (last heartbeat %(at)s)',
            'hostname', 'heartbeat_at')
        print('Dry run: %d error allocations, %d error allocation groups '
              '(with %d member allocations) and %d conductors older than '
              '%d days would be purged; nothing was deleted.'
              % (allocations, groups, members, conductors, days))
        return 0
    allocations = dbapi.purge_error_allocations(older_than, batch_size)
    groups, members = dbapi.purge_error_groups(older_than, batch_size)
    conductors = dbapi.purge_conductors(older_than, alive_timeout,
                                        batch_size)
    print('Purged %d error allocations, %d error allocation groups (with '
          '%d member allocations) and %d conductors older than %d days.'
          % (allocations, groups, members, conductors, days))
    return 0


def _print_groups(dbapi, older_than, batch_size):
    """Print the error groups a purge would delete, page by page;
    returns (how many groups, how many member allocations)."""
    groups = members = after = 0
    while True:
        rows = dbapi.get_purgeable_error_groups(older_than, batch_size,
                                                after)
        for row in rows:
            print('Would purge error allocation group %s (updated %s) and '
                  'its %d member allocations'
                  % (row.uuid, row.updated_at, row.members))
            members += row.members
        groups += len(rows)
        if len(rows) < batch_size:
            return groups, members
        after = rows[-1].id


def _print_all(list_page, batch_size, line, name, at):
    """Print every row ``list_page(limit, after id)`` lists, page by
    page; returns how many."""
    count, after = 0, 0
    while True:
        rows = list_page(batch_size, after)
        for row in rows:
            print('Would purge ' + line % {'name': getattr(row, name),
                                           'at': getattr(row, at)})
        count += len(rows)
        if len(rows) < batch_size:
            return count
        after = rows[-1].id


def _add_parsers(subparsers):
    parser = subparsers.add_parser(
        'upgrade', help='Upgrade the schema to the newest (or given) '
                        'revision.')
    parser.add_argument('--revision', default='head',
                        help='Alembic revision to upgrade to.')
    parser.set_defaults(func=_upgrade)
    parser = subparsers.add_parser(
        'version', help='Print the current schema revision.')
    parser.set_defaults(func=_version)
    parser = subparsers.add_parser(
        'check', help='Exit 0 when the schema is current, 1 when an '
                      'upgrade is needed, 2 when the database cannot be '
                      'read.')
    parser.set_defaults(func=_check)
    parser = subparsers.add_parser(
        'purge', help='Delete allocations and allocation groups (with '
                      'their members) in state error and rows of offline '
                      'conductors older than --older-than days, in '
                      'batches.')
    parser.add_argument('--older-than', type=int,
                        default=PURGE_OLDER_THAN_DAYS, metavar='DAYS',
                        help='Age in days (database clock) of the rows to '
                             'delete: error allocations and groups not '
                             'updated and '
                             'conductors without a heartbeat for that '
                             'long. Default: %(default)s.')
    parser.add_argument('--batch-size', type=int, default=PURGE_BATCH_SIZE,
                        metavar='N',
                        help='Rows deleted per transaction. Default: '
                             '%(default)s.')
    parser.add_argument('--dry-run', action='store_true',
                        help='Print the rows that would be deleted and '
                             'their counts; delete nothing.')
    parser.set_defaults(func=_purge)
    parser = subparsers.add_parser(
        'refresh-node-matching',
        help='Write again the columns the matching language and node '
             'tallies read (normalised properties, traits, capabilities) '
             'of every node, from its properties and traits; for after a '
             'rolling upgrade, whose older processes wrote nodes without '
             'them.')
    parser.add_argument('--batch-size', type=int, default=PURGE_BATCH_SIZE,
                        metavar='N',
                        help='Node ids read per query (each node is '
                             'written in a transaction of its own). '
                             'Default: %(default)s.')
    parser.set_defaults(func=_refresh_node_matching)


command_opt = cfg.SubCommandOpt('command', title='Command',
                                help='Available commands',
                                handler=_add_parsers)


def main():
    CONF.register_cli_opt(command_opt)
    service_utils.prepare_service()
    sys.exit(CONF.command.func())


if __name__ == '__main__':
    main()
