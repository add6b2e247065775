from oslo_config import cfg
from oslo_db import options as db_options

opt_group = cfg.OptGroup(name='database',
                         title='Options for the database connection')

# NOTE: connections a process keeps open between transactions.  A conductor
# runs up to [conductor]workers_pool_size allocations at once, each in
# transactions of its own, plus its RPC and periodic work; with oslo.db's
# smaller default pool, every burst opened connections that were closed
# again at check-in, and a new connection is expensive (client and
# PostgreSQL: password exchange, a new server process, its catalog caches).
POOL_SIZE = 20

sqlite_opts = [
    cfg.IntOpt('sqlite_busy_timeout',
               default=30000,
               min=0,
               help='Milliseconds an SQLite connection waits for the '
                    'database lock before giving up. Used only with an '
                    'sqlite:// connection.'),
    cfg.IntOpt('sqlite_pool_size',
               default=POOL_SIZE,
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
    # NOTE: on the option itself, so the sample configuration shows it.
    cfg.set_defaults(db_options.database_opts, max_pool_size=POOL_SIZE)
    db_options.set_defaults(conf)
    conf.register_opts(sqlite_opts, group=opt_group)

