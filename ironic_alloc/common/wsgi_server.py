"""A small threaded WSGI server for development and the standalone mode.

Built on the standard library (wsgiref + socketserver.ThreadingMixIn): one
thread per request, no eventlet; optionally several worker processes
sharing one listening socket.  Production deployments run
ironic_alloc.wsgi.api:application under a real WSGI server instead.
"""

import ipaddress
import os
import signal
import socketserver
import threading
import time
from wsgiref import simple_server

from oslo_log import log

from ironic_alloc.conf import CONF

LOG = log.getLogger(__name__)


class _ThreadingWSGIServer(socketserver.ThreadingMixIn,
                           simple_server.WSGIServer):
    daemon_threads = True
    allow_reuse_address = True
    # NOTE: the default listen backlog (5) resets connections as soon as a
    # few dozen clients connect at once.
    request_queue_size = 128


class _QuietHandler(simple_server.WSGIRequestHandler):
    """Logs requests through oslo.log instead of stderr."""

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
            handler_class=_QuietHandler)
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
