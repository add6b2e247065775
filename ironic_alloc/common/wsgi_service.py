"""The API served by cheroot, as an oslo.service service.

``ironic-alloc-api`` launches a :class:`WSGIService` with oslo.service's
``ProcessLauncher`` (``[api]api_workers`` worker processes); the
all-in-one ``ironic-alloc`` runs one next to its conductor.  The listening
socket is bound when the service is built, in the launching process, and
every worker serves it with cheroot's HTTP/1.1 server: workers share the
port, and the socket outlives a worker that is replaced or restarted.
Production deployments may run ``ironic_alloc.wsgi.api:application`` under
another WSGI server instead.
"""

import ipaddress
import logging
import socket
import threading

from cheroot import server as cheroot_server
from cheroot import wsgi as cheroot_wsgi
from oslo_log import log
from oslo_service import service

from ironic_alloc.common import metrics
from ironic_alloc.common import notifications
from ironic_alloc.common import request_slots
from ironic_alloc.conf import CONF

LOG = log.getLogger(__name__)

# NOTE: the listen backlog: the default of a few connections resets
# clients as soon as a few dozen connect at once.
LISTEN_BACKLOG = 128
# NOTE: cheroot's threads serve requests; [api]max_concurrent_requests
# bounds how many of them run the application at once (request_slots).
# The others wait for a slot, or for a conductor's answer, without using
# the interpreter, so the pool is larger than any useful bound: a request
# only waits for a thread when this many are already taken.
WORKER_THREADS = 64
# NOTE: the socket timeout of a connection when [api]keepalive_timeout is
# 0: connections are then closed after one response, but a client that
# stops sending its request must not hold a thread for ever.
REQUEST_TIMEOUT = 30
SERVER_NAME = 'ironic-alloc'
# NOTE: the most of request line and headers read before the application:
# cheroot reads any amount by default.  Generous for tokens and long
# query strings, small enough that no client can fill the memory.
MAX_REQUEST_HEADER_SIZE = 64 * 1024


def is_loopback(host):
    """True for an address only this machine can reach (127/8, ::1)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == 'localhost'


def warn_if_exposed(host, port):
    """Warn when the API is open, or its credentials readable, to others.

    This server speaks plain HTTP only, so beyond loopback a noauth API is
    open to anyone who can reach it, and the tokens or passwords of
    keystone and http_basic travel in clear text.
    """
    if is_loopback(host):
        return
    values = {'host': host, 'port': port, 'strategy': CONF.auth_strategy}
    if CONF.auth_strategy == 'noauth':
        LOG.warning('auth_strategy noauth and the API listens on '
                    '%(host)s:%(port)s: anyone who can reach %(host)s '
                    'can create, change and delete nodes and '
                    'allocations.', values)
    else:
        LOG.warning('auth_strategy %(strategy)s and the API listens on '
                    '%(host)s:%(port)s over plain HTTP: credentials '
                    '(tokens, passwords) travel in clear text. Terminate '
                    'TLS in front of it (Apache, a load balancer) and '
                    'listen on loopback.', values)


def listen(host, port):
    """A TCP socket bound to ``host``:``port`` and listening.

    :param port: 0 binds a free port.
    :raises: OSError when no address of ``host`` can be bound.
    """
    error = None
    for family, kind, proto, _name, address in socket.getaddrinfo(
            host, port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0,
            socket.AI_PASSIVE):
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # NOTE: inherited by the accepted connections: a response
            # written in several parts leaves at once instead of waiting
            # for the client's acknowledgement of the first (Nagle).
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.bind(address)
            sock.listen(LISTEN_BACKLOG)
        except OSError as exc:
            sock.close()
            error = exc
            continue
        return sock
    raise error or OSError('no address to listen on for %s' % host)


class _FoldedHeaders(dict):
    """Request headers where a header sent on several lines is one value,
    the lines joined with commas (RFC 9110, section 5.3).

    cheroot joins only the headers of its list and otherwise keeps the
    last line: a client sending ``OpenStack-API-Version`` once per
    service would lose all but one.
    """

    def __setitem__(self, name, value):
        if (name in self
                and name not in cheroot_server.comma_separated_headers):
            value = b', '.join((self[name], value))
        super().__setitem__(name, value)


class _HeaderReader(cheroot_server.HeaderReader):
    """cheroot's header parsing, with repeated headers joined and an
    invalid ``Content-Length`` refused.

    A negative or repeated length passes cheroot's check; where that
    request ends would then be unknown, and the connection would still
    carry the next one.  ValueError makes cheroot answer 400 and close
    the connection.
    """

    def __call__(self, rfile, hdict=None):
        headers = _FoldedHeaders()
        super().__call__(rfile, headers)
        length = headers.get(b'Content-Length')
        if length is not None and not length.isdigit():
            raise ValueError('Invalid Content-Length header.')
        if hdict is None:
            hdict = {}
        hdict.update(headers)
        return hdict


class _Request(cheroot_server.HTTPRequest):
    header_reader = _HeaderReader()


class _Connection(cheroot_server.HTTPConnection):
    RequestHandlerClass = _Request


class _Server(cheroot_wsgi.Server):
    """cheroot's WSGI server on a socket bound beforehand, logging
    through oslo.log."""

    ConnectionClass = _Connection

    def __init__(self, listener, app):
        super().__init__(listener.getsockname()[:2], app,
                         numthreads=WORKER_THREADS,
                         server_name=SERVER_NAME,
                         request_queue_size=LISTEN_BACKLOG)
        self._listener = listener
        self.max_request_header_size = MAX_REQUEST_HEADER_SIZE
        keepalive = CONF.api.keepalive_timeout
        # NOTE: the socket timeout bounds a slow client's read or write,
        # and an idle keep-alive connection is closed after as long.
        self.timeout = keepalive or REQUEST_TIMEOUT
        # NOTE: cheroot keeps a few idle keep-alive connections by default
        # and closes the others after their response, which would make
        # most clients of a busy API reconnect for every request.  None is
        # no limit; 0 closes every connection after one response.
        self.keep_alive_conn_limit = None if keepalive else 0

    def bind(self, family, type, proto=0):
        # NOTE: cheroot's prepare() asks for a socket here; every worker
        # process gets the one socket its launcher bound.  Each works on
        # its own descriptor of it, which cheroot closes when it stops.
        sock = self.socket = self._listener.dup()
        self.bind_addr = sock.getsockname()[:2]
        return sock

    def prepare(self):
        super().prepare()
        # NOTE: several processes wait on the shared socket; those that
        # lose the race for a new connection must go back to their other
        # connections at once instead of waiting in accept().
        self.socket.setblocking(False)

    def error_log(self, msg='', level=logging.INFO, traceback=False):
        # NOTE: cheroot reports clients that went away at INFO; they are
        # no news for an operator.
        if level < logging.WARNING:
            level = logging.DEBUG
        LOG.log(level, 'HTTP server: %s', msg, exc_info=traceback)


class WSGIService(service.ServiceBase):
    """Serve the application of ``make_app`` on ``host``:``port``.

    The socket is bound here, in the process that builds the service;
    ``start()`` builds the application (its database engine and RPC
    client belong to the serving process) and serves in a thread.  Under
    oslo.service's ``ProcessLauncher`` each worker process does so on the
    same socket.

    :param make_app: returns the WSGI application.
    :param port: 0 binds a free port; ``port`` then tells which.
    """

    def __init__(self, make_app, host='127.0.0.1', port=0):
        self._make_app = make_app
        self._listener = listen(host, port)
        self.host, self.port = self._listener.getsockname()[:2]
        self._lock = threading.Lock()
        self._stopping = False
        self._server = None
        self._thread = None
        warn_if_exposed(self.host, self.port)

    def start(self):
        """Build the application and serve it in a thread."""
        # NOTE: a worker that was killed could not mark itself gone in the
        # multiprocess metrics; its replacement does (a no-op otherwise).
        metrics.forget_dead_processes()
        app = request_slots.bounded(self._make_app(),
                                    CONF.api.max_concurrent_requests)
        with self._lock:
            # NOTE: a stop requested while the application was being built
            # (a worker told to stop as soon as it started) wins.
            if self._stopping:
                return
            server = _Server(self._listener, app)
            server.prepare()
            self._server = server
            self._thread = threading.Thread(target=server.serve,
                                            name='wsgi-server', daemon=True)
            self._thread.start()
        LOG.info('Serving the API on http://%(host)s:%(port)s',
                 {'host': self.host, 'port': self.port})

    def stop(self):
        """Stop accepting, let the requests in progress finish, close the
        idle connections and this process's listening socket (idempotent).

        A worker process closes only its own descriptor: the launching
        process keeps the socket for the other workers and the next ones.
        """
        with self._lock:
            self._stopping = True
            server, self._server = self._server, None
        if server is not None:
            server.stop()
        if self._thread is not None:
            self._thread.join()
        self._listener.close()
        # NOTE: the requests finished: their notifications are queued.
        notifications.stop()
        metrics.process_stopping()

    def wait(self):
        """Return once serving ended.

        :raises: RuntimeError when the server ended without being stopped,
            so that the launcher replaces the worker.
        """
        thread = self._thread
        if thread is not None:
            thread.join()
        with self._lock:
            if not self._stopping:
                raise RuntimeError('The API server stopped serving')

    def reset(self):
        """Nothing to do on SIGHUP: the options the server uses are read
        when a worker starts, and the application reads its own."""
