"""A small threaded WSGI server for development and the standalone mode.

Built on the standard library (wsgiref + socketserver.ThreadingMixIn): one
thread per connection, no eventlet; optionally several worker processes
sharing one listening socket.  It speaks HTTP/1.1 with persistent
connections: a client that keeps its connection sends its next request
without a new TCP handshake, for up to ``[api]keepalive_timeout`` seconds
of idleness.  Production deployments run
ironic_alloc.wsgi.api:application under a real WSGI server instead.
"""

import ipaddress
import os
import signal
import socket
import socketserver
import threading
import time
from wsgiref import simple_server

from oslo_log import log

from ironic_alloc.common import request_slots
from ironic_alloc.conf import CONF

LOG = log.getLogger(__name__)


class _ThreadingWSGIServer(socketserver.ThreadingMixIn,
                           simple_server.WSGIServer):
    daemon_threads = True
    allow_reuse_address = True
    # NOTE: the default listen backlog (5) resets connections as soon as a
    # few dozen clients connect at once.
    request_queue_size = 128

    def server_activate(self):
        super().server_activate()
        self.idle_timeout = CONF.api.keepalive_timeout
        self.request_slots = request_slots.RequestSlots(
            CONF.api.max_concurrent_requests)
        self.stopping = False
        # NOTE: connections waiting for their next request; stop() ends
        # them so that no thread serves after the server stopped.
        self.idle_connections = set()
        self.idle_lock = threading.Lock()

    def close_idle_connections(self):
        with self.idle_lock:
            self.stopping = True
            idle = list(self.idle_connections)
        for connection in idle:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


# NOTE: responses that never have a body, so need no Content-Length to
# be delimited (RFC 9112, section 6.3).
_NO_BODY_STATUSES = ('1', '204', '304')
# NOTE: a request body left unread by the application is read and
# dropped up to this size to keep the connection; a larger one closes it.
_MAX_DRAIN = 64 * 1024


class _BoundedInput:
    """wsgi.input limited to the request's Content-Length, so that an
    application reading "everything" stops at the end of its own request
    instead of waiting for the client's next one."""

    def __init__(self, stream, length):
        self._stream = stream
        self.remaining = length

    def _size(self, size):
        if size is None or size < 0 or size > self.remaining:
            return self.remaining
        return size

    def read(self, size=-1):
        data = self._stream.read(self._size(size))
        self.remaining -= len(data)
        return data

    def readline(self, size=-1):
        data = self._stream.readline(self._size(size))
        self.remaining -= len(data)
        return data

    def readlines(self, hint=-1):
        return list(iter(self.readline, b''))

    def __iter__(self):
        return iter(self.readline, b'')


class _ServerHandler(simple_server.ServerHandler):
    """Runs one request of a persistent connection.

    The connection stays open after the response only when the client
    can tell where the response ends (Content-Length, or a status without
    body) and the body sent matches it.
    """

    http_version = '1.1'

    def cleanup_headers(self):
        super().cleanup_headers()
        handler = self.request_handler
        delimited = ('Content-Length' in self.headers
                     or self.status.startswith(_NO_BODY_STATUSES))
        if not delimited:
            handler.close_connection = True
        if handler.close_connection:
            self.headers['Connection'] = 'close'

    def close(self):
        # NOTE: BaseHandler.close() forgets the headers and the byte count;
        # check before that whether the body was complete.
        handler = self.request_handler
        length = (self.headers or {}).get('Content-Length')
        if not self.headers_sent or self.headers is None:
            handler.close_connection = True
        elif length is not None and self.bytes_sent != int(length) and not (
                handler.command == 'HEAD' and self.bytes_sent == 0):
            handler.close_connection = True
        super().close()


class _RequestHandler(simple_server.WSGIRequestHandler):
    """Serves the requests of one connection, HTTP/1.1 keep-alive, and
    logs them through oslo.log instead of stderr."""

    protocol_version = 'HTTP/1.1'
    # NOTE: buffered writes: the status line, headers and body leave in
    # one send (wsgiref flushes after each body chunk).
    wbufsize = 64 * 1024

    def setup(self):
        self.timeout = self.server.idle_timeout or None
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY,
                                   1)

    def handle(self):
        self.close_connection = True
        self._handle_one()
        while not self.close_connection:
            if not self._wait_idle():
                return
            self._handle_one()

    def _wait_idle(self):
        """Mark the connection idle until its next request arrives.

        :returns: False when the server is stopping.
        """
        server = self.server
        with server.idle_lock:
            if server.stopping:
                return False
            server.idle_connections.add(self.connection)
        try:
            self.rfile.peek(1)
        except OSError:
            # NOTE: idle for longer than the timeout, or reset.
            return False
        finally:
            with server.idle_lock:
                server.idle_connections.discard(self.connection)
        return not server.stopping

    def _handle_one(self):
        try:
            self.raw_requestline = self.rfile.readline(65537)
        except OSError:
            self.close_connection = True
            return
        if not self.raw_requestline:
            self.close_connection = True
            return
        if len(self.raw_requestline) > 65536:
            self.requestline = self.request_version = self.command = ''
            self.close_connection = True
            self.send_error(414)
            return
        # NOTE: parse_request() sets close_connection from the request's
        # version and Connection header.
        if not self.parse_request():
            self.close_connection = True
            return
        # NOTE: HTTP/1.0 keep-alive needs an explicit header in the
        # response; clients old enough to speak 1.0 get one request each.
        if (not self.server.idle_timeout
                or self.request_version != 'HTTP/1.1'):
            self.close_connection = True
        environ = self.get_environ()
        # NOTE: this server does not decode chunked request bodies: the
        # connection cannot be reused after one.
        if self.headers.get('Transfer-Encoding'):
            self.close_connection = True
        try:
            length = int(environ.get('CONTENT_LENGTH') or 0)
        except ValueError:
            length = -1
        if length < 0:
            # NOTE: where this request ends is unknown: the connection
            # cannot carry another one.
            length = 0
            self.close_connection = True
        body = _BoundedInput(self.rfile, length)
        handler = _ServerHandler(body, self.wfile, self.get_stderr(),
                                 environ, multithread=True)
        handler.request_handler = self
        try:
            with self.server.request_slots.held():
                handler.run(self.server.get_app())
            self.wfile.flush()
        except OSError:
            self.close_connection = True
            return
        if not self.close_connection and body.remaining:
            self._drain(body)

    def _drain(self, body):
        if body.remaining > _MAX_DRAIN:
            self.close_connection = True
            return
        try:
            while body.remaining and body.read(body.remaining):
                pass
        except OSError:
            self.close_connection = True
        if body.remaining:
            self.close_connection = True

    def log_message(self, format, *args):
        LOG.debug('%(client)s %(message)s',
                  {'client': self.address_string(), 'message': format % args})


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


class Server:
    """Serve one WSGI application on ``host``:``port``.

    :param port: 0 binds a free port; ``port`` then tells which.
    """

    def __init__(self, app, host='127.0.0.1', port=0):
        self._server = simple_server.make_server(
            host, port, app, server_class=_ThreadingWSGIServer,
            handler_class=_RequestHandler)
        self._thread = None
        self._serving = threading.Event()
        warn_if_exposed(self.host, self.port)

    def set_app(self, app):
        """Serve ``app`` (for a server built before its application)."""
        self._server.set_app(app)

    @property
    def host(self):
        return self._server.server_address[0]

    @property
    def port(self):
        """The bound TCP port."""
        return self._server.server_address[1]

    def start(self):
        """Serve in a background thread; returns at once."""
        self._thread = threading.Thread(target=self.serve_forever,
                                        name='wsgi-server', daemon=True)
        self._thread.start()
        self._serving.wait()

    def serve_forever(self):
        """Serve in this thread until stop() is called."""
        LOG.info('Serving the API on http://%(host)s:%(port)s',
                 {'host': self.host, 'port': self.port})
        self._serving.set()
        self._server.serve_forever(poll_interval=0.2)

    def stop(self):
        """Stop serving and close the socket (idempotent)."""
        # NOTE: shutdown() waits for serve_forever(), so only call it when
        # that ran.
        if self._serving.is_set():
            self._server.shutdown()
            self._serving.clear()
        self._server.close_idle_connections()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None


# NOTE: a worker that dies sooner than this after its start is replaced
# only after a pause, so a worker that cannot start does not fork in a
# tight loop.
_RESPAWN_PAUSE = 1.0
_STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


def serve_in_processes(server, make_app, workers):
    """Serve with ``workers`` forked processes sharing ``server``'s socket.

    Each worker builds its own application with ``make_app()`` after the
    fork: database engines and RPC connections must never be shared
    between processes.  This process only watches: a worker that dies is
    replaced; SIGTERM or SIGINT stops every worker and returns.
    """
    children = {}
    stopping = []

    def spawn():
        # NOTE: stop signals wait until the new worker is in ``children``
        # here and has its own handler there, so no stop request can miss
        # a worker.
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            pid = os.fork()
            if pid == 0:
                _worker_main(server, make_app)  # never returns
            children[pid] = time.monotonic()
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        LOG.info('Started API worker %d', pid)

    def stop(signum, frame):
        stopping.append(signum)
        for pid in list(children):
            _kill(pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for _ in range(workers):
        spawn()
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        started = children.pop(pid, None)
        if started is None or stopping:
            continue
        LOG.warning('API worker %(pid)d exited (%(status)s); starting '
                    'another', {'pid': pid,
                                'status': _describe_status(status)})
        if time.monotonic() - started < _RESPAWN_PAUSE:
            time.sleep(_RESPAWN_PAUSE)
        if not stopping:
            spawn()
    server.stop()


def _worker_main(server, make_app):
    """The body of a worker process: serve until SIGTERM, then exit."""
    status = 1
    try:
        # NOTE: SystemExit from the handler unwinds whatever the worker
        # does (building the app, waiting for connections); the process
        # then ends at once, as a single-process server's would.
        signal.signal(signal.SIGTERM, _exit_on_signal)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        server.set_app(make_app())
        server.serve_forever()
        status = 0
    except SystemExit:
        status = 0
    except BaseException:
        LOG.exception('API worker %d failed', os.getpid())
    finally:
        os._exit(status)


def _exit_on_signal(signum, frame):
    raise SystemExit(0)


def _kill(pid, signum):
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _describe_status(status):
    if os.WIFSIGNALED(status):
        return 'killed by signal %d' % os.WTERMSIG(status)
    return 'exit status %d' % os.WEXITSTATUS(status)
