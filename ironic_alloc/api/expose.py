"""The one decorator exposing WSME-typed controller methods, as JSON."""

import functools
import inspect

from oslo_db import exception as db_exc
from oslo_log import log
from sqlalchemy import exc as sa_exc
import wsme
from wsmeext import pecan as wsme_pecan

from ironic_alloc.common import exception

LOG = log.getLogger(__name__)

DB_UNAVAILABLE = ('The database is unavailable. The request may be '
                  'retried.')


class _HideUnexpectedErrors:
    """A controller method that turns an exception without an HTTP status
    into a bare 500.

    WSME answers any exception with its ``str()``; for errors we did not
    anticipate (a driver message, an SQL fragment) that may leak internals,
    so they are logged with their traceback and the client gets a generic
    message.  Our exceptions and WSME's client errors carry ``code`` and
    pass through unchanged.
    """

    def __init__(self, method):
        functools.update_wrapper(self, method)
        self._method = method
        self._signature = inspect.signature(method)

    @property
    def __signature__(self):
        # NOTE: WSME reads the arguments of the method it exposes, and gives
        # them to Pecan, from its signature (Python's __signature__
        # protocol): this is the method's own.  A property, not an
        # attribute, so that it is not copied (functools.wraps) onto the
        # function WSME wraps around this one, which Pecan's RestController
        # routes by, exactly as for a plain wsexpose.
        return self._signature

    def __call__(self, controller, *args, **kwargs):
        f = self._method
        try:
            return f(controller, *args, **kwargs)
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


def expose(*args, **kwargs):
    """``wsexpose`` forcing JSON; arguments are WSME's signature."""
    kwargs.setdefault('rest_content_types', ('json',))

    def decorate(f):
        return wsme_pecan.wsexpose(*args, **kwargs)(
            _HideUnexpectedErrors(f))
    return decorate
