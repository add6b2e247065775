"""ironic-alloc-dbsync: create or upgrade the database schema."""

import sys

from oslo_config import cfg

from ironic_alloc.common import service as service_utils
from ironic_alloc.conf import CONF
from ironic_alloc.db import migration


def _upgrade():
    migration.upgrade(CONF.command.revision)
    print('Database schema is at revision %s' % migration.version())
    return 0


def _version():
    print(migration.version() or 'empty (no schema yet)')
    return 0


def _check():
    try:
        current, head = migration.version(), migration.head_revision()
    except Exception as exc:
        # NOTE: its own exit status: "cannot tell" is not "upgrade needed".
        print('ERROR: the schema revision could not be read: %s' % exc)
        return 2
    if current == head:
        print('OK: the database schema is current (revision %s).' % head)
        return 0
    print('UPGRADE NEEDED: the database schema is at revision %s, this '
          'code needs %s. Run "ironic-alloc-dbsync upgrade".'
          % (current or 'empty', head))
    return 1


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


command_opt = cfg.SubCommandOpt('command', title='Command',
                                help='Available commands',
                                handler=_add_parsers)


def main():
    CONF.register_cli_opt(command_opt)
    service_utils.prepare_service()
    sys.exit(CONF.command.func())


if __name__ == '__main__':
    main()
