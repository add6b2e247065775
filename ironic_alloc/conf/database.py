from oslo_config import cfg
from oslo_db import options as db_options

opt_group = cfg.OptGroup(name='database',
                         title='Options for the database connection')

sqlite_opts = [
    cfg.IntOpt('sqlite_busy_timeout',
               default=30000,
               min=0,
               help='Milliseconds an SQLite connection waits for the '
                    'database lock before giving up. Used only with an '
                    'sqlite:// connection.'),
    cfg.IntOpt('sqlite_pool_size',
               default=10,
               min=0,
               help='Idle connections to an SQLite database file kept open '
                    'for reuse (more are opened when needed and closed '
                    'when returned). Opening a connection and setting it up '
                    'costs more than a short transaction, so the embedded '
                    'service keeps a few. 0 opens a new connection for '
                    'every transaction. Used only with an sqlite:// '
                    'connection.'),
]


def register_opts(conf):
    # NOTE: the standalone default is an SQLite file under state_path;
    # ironic_alloc.db.sqlalchemy.api fills it in when connection is unset.
    db_options.set_defaults(conf)
    conf.register_opts(sqlite_opts, group=opt_group)

