"""The one decorator exposing WSME-typed controller methods, as JSON."""

import functools
import inspect

from oslo_db import exception as db_exc
from oslo_log import log
import pecan.util
from sqlalchemy import exc as sa_exc
import wsme
from wsmeext import pecan as wsme_pecan

from ironic_alloc.common import exception

LOG = log.getLogger(__name__)

DB_UNAVAILABLE = ('The database is unavailable. The request may be '
                  'retried.')


def _hide_unexpected_errors(f):
    """Turn an exception without an HTTP status into a bare 500.

    WSME answers any exception with its ``str()``; for errors we did not
    anticipate (a driver message, an SQL fragment) that may leak internals,
    so they are logged with their traceback and the client gets a generic
    message.  Our exceptions and WSME's client errors carry ``code`` and
    pass through unchanged.
    """
    @functools.wraps(f)
    def wrapper(self, *args, **kwargs):
        try:
            return f(self, *args, **kwargs)
        except (exception.IronicAllocException, wsme.exc.ClientSideError):
            raise
        except (db_exc.DBConnectionError, db_exc.DBNonExistentDatabase,
                sa_exc.OperationalError) as exc:
            # NOTE: the database server is down or restarting (a failed
            # new connection is not translated by oslo.db: it arrives as
            # SQLAlchemy's OperationalError): a 503 tells clients to
            # retry, a 500 would say the request is wrong.
            LOG.warning('Database unreachable in %(func)s: %(exc)s',
                        {'func': f.__qualname__, 'exc': exc})
            raise exception.TemporaryFailure(DB_UNAVAILABLE) from exc
        except Exception as exc:
            if isinstance(getattr(exc, 'code', None), int):
                raise
            LOG.exception('Unexpected error in %s', f.__qualname__)
            raise exception.IronicAllocException(
                'An internal error occurred; see the API service log.')
    # NOTE: WSME reads the argument names of the exposed method from here.
    wrapper._wsme_original_func = f
    return wrapper


def expose(*args, **kwargs):
    """``wsexpose`` forcing JSON; arguments are WSME's signature."""
    kwargs.setdefault('rest_content_types', ('json',))

    def decorate(f):
        exposed = wsme_pecan.wsexpose(*args, **kwargs)(
            _hide_unexpected_errors(f))
        # NOTE: Pecan maps URL segments and parameters to the arguments of
        # the original method, as with a plain wsexpose.
        pecan.util._cfg(exposed)['argspec'] = inspect.getfullargspec(f)
        return exposed
    return decorate
