"""The placement backend of the benchmark.

For ``sweep --backend placement`` each size gets a real OpenStack
Placement of its own (the virtualenv tools/setup-placement-venv.sh builds,
a fresh PostgreSQL database, gunicorn with several workers and threads on
a loopback port, ``[api] auth_strategy = noauth2``), and the standalone
service is configured with ``[allocation] backend = placement``.

Bulk-loaded nodes bypass the API, so they reach Placement through the
conductor's periodic full pass: the benchmark waits until Placement offers
every node before the measured part and reports that wait as set-up.
"""

import collections
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from ironic_alloc.conductor.backends import placement_sync
from ironic_alloc.tests.servers import placement_server
from tools.bench import checks as checks_mod

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TOKEN = placement_server.TOKEN
MICROVERSION = 'placement 1.39'
# A short full-pass interval: bulk-loaded nodes reach Placement only
# through the full pass.
DEFAULT_SYNC_INTERVAL = 5
DEFAULT_SYNC_TIMEOUT = 1800.0
# [placement]sync_interval during the measured phases (set with SIGHUP
# once the loaded nodes are in Placement): the service's default.
MEASURED_SYNC_INTERVAL = 600
REQUEST_TIMEOUT = 30
# The command line of Placement's gunicorn processes, for their CPU.
PROCESS_PATTERN = r'placement\.wsgi\.api:application'


class PlacementUnavailable(Exception):
    """Placement could not be started or did not get in step in time."""


def service_options(url, sync_interval=DEFAULT_SYNC_INTERVAL):
    """Config (section, key, value) tuples pointing our service at the
    Placement at ``url`` (noauth2: a fixed admin token)."""
    return (('allocation', 'backend', 'placement'),
            ('placement', 'auth_type', 'admin_token'),
            ('placement', 'endpoint', url),
            ('placement', 'token', TOKEN),
            ('placement', 'sync_interval', str(sync_interval)))


def ensure_venv(venv=None, setup=None):
    """Build the Placement virtualenv with tools/setup-placement-venv.sh
    when it is missing (as CI does).

    :raises: PlacementUnavailable when the script fails.
    """
    if placement_server.missing_reason(venv) is None:
        return
    script = setup or os.path.join(ROOT, 'tools',
                                   'setup-placement-venv.sh')
    print('Building the Placement virtualenv (%s)' % script,
          file=sys.stderr, flush=True)
    result = subprocess.run([script], stdin=subprocess.DEVNULL)
    reason = placement_server.missing_reason(venv)
    if result.returncode != 0 or reason:
        raise PlacementUnavailable('%s exited %d: %s' % (
            script, result.returncode, reason or 'see its output'))


# Placement's own settings for the benchmark, as doc/source/admin/
# placement.rst recommends for a fleet: answers randomised (else
# concurrent allocations all get the same few candidates first), and a
# bound on the candidates Placement builds before it applies the limit
# (else every request costs Placement work in proportion to the fleet).
DEFAULT_PLACEMENT_OPTIONS = (('randomize_allocation_candidates', 'true'),
                             ('max_allocation_candidates', '1000'))


def start(workers=2, threads=4, pg_url=None,
          options=DEFAULT_PLACEMENT_OPTIONS):
    """A started Placement on a fresh PostgreSQL database of its own.

    :param options: (name, value) pairs of placement.conf's [placement].

    :returns: the fixture object (``url``; ``cleanup()`` stops it and
        drops the database).
    :raises: PlacementUnavailable.
    """
    ensure_venv()
    server = placement_server.PlacementServer(
        database='postgresql', workers=workers, threads=threads,
        pg_url=pg_url, options=dict(options))
    try:
        server.start()
    except placement_server.PlacementError as exc:
        server.cleanup()
        raise PlacementUnavailable(str(exc))
    return server


def request(url, path, params=None, method='GET'):
    """One Placement request at microversion 1.39.

    :returns: (status, decoded JSON body or None).
    :raises: OSError when no answer could be read.
    """
    target = url.rstrip('/') + path
    if params:
        target += '?' + urllib.parse.urlencode(params)
    req = urllib.request.Request(
        target, method=method,
        headers={'X-Auth-Token': TOKEN,
                 'OpenStack-API-Version': MICROVERSION,
                 'Accept': 'application/json'})
    try:
        with urllib.request.urlopen(req, timeout=REQUEST_TIMEOUT) as resp:
            status, body = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    try:
        return status, json.loads(body) if body else None
    except ValueError:
        return status, None


def offered_count(url, resource_class):
    """Providers Placement offers one unit of our ``resource_class`` on.

    :raises: PlacementUnavailable on an HTTP error.
    """
    rc = placement_sync.placement_resource_class(resource_class)
    # NOTE: the sync creates the class with the first provider; before
    # that Placement answers 400 to a query naming it.
    status, _ = request(url, '/resource_classes/%s' % rc)
    if status == 404:
        return 0
    status, body = request(url, '/resource_providers',
                           {'resources': '%s:1' % rc})
    if status != 200:
        raise PlacementUnavailable('GET /resource_providers?resources=%s:1 '
                                   'answered %s' % (rc, status))
    return len((body or {}).get('resource_providers', []))


def wait_for_sync(count, expected, timeout, interval=1.0,
                  clock=time.monotonic, sleep=time.sleep, say=None):
    """Poll ``count()`` until it reaches ``expected``.

    :returns: the seconds it took.
    :raises: PlacementUnavailable after ``timeout`` seconds.
    """
    start = clock()
    last_said = start
    while True:
        found = count()
        now = clock()
        if found >= expected:
            return now - start
        if now - start >= timeout:
            raise PlacementUnavailable(
                'Placement offers %d of %d nodes after %.0f s: the '
                'conductor\'s sync did not finish' % (found, expected,
                                                      now - start))
        if say is not None and now - last_said >= 10:
            say('   Placement offers %d/%d nodes (%.0f s)'
                % (found, expected, now - start))
            last_said = now
        sleep(interval)


# One request of gunicorn's access log (its default format): the method,
# the path without its query, the status.
_ACCESS_LINE = re.compile(r'"([A-Z]+) (/[^ ?"]*)[^"]* HTTP/[0-9.]+" '
                          r'([0-9]{3}) ')
_UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   r'[0-9a-f]{12}')
# The resource class or trait named in a path.
_NAMED = re.compile(r'^(/(?:resource_classes|traits)/)[^/]+$')


def request_kind(method, path):
    """``GET /allocations/{uuid}`` for ``GET /allocations/<a uuid>``."""
    path = _NAMED.sub(r'\1{name}', _UUID.sub('{uuid}', path))
    return '%s %s' % (method, path)


def count_requests(lines):
    """{request kind: count} of the requests in gunicorn access log
    lines."""
    counts = collections.Counter()
    for line in lines:
        match = _ACCESS_LINE.search(line)
        if match:
            counts[request_kind(match.group(1), match.group(2))] += 1
    return counts


def request_counter(log_path):
    """``counter()`` -> {request kind: count} of every request Placement
    has answered so far, read from its access log at ``log_path``."""
    def counter():
        with open(log_path, errors='replace') as log:
            return count_requests(log)
    return counter


def leftover_claims(lookup, consumer_uuids):
    """The check that no Placement claim is left after the delete phase.

    :param lookup: ``lookup(consumer_uuid)`` -> (status, body) of
        ``GET /allocations/{consumer_uuid}``.
    :returns: a checks.Check.
    """
    problems = []
    for consumer in consumer_uuids:
        try:
            status, body = lookup(consumer)
        except OSError as exc:
            problems.append('%s: %s' % (consumer, exc))
            continue
        if status != 200:
            problems.append('%s: HTTP %s' % (consumer, status))
        elif (body or {}).get('allocations'):
            problems.append('%s holds a claim on %s' % (
                consumer, ', '.join(sorted(body['allocations']))))
    return checks_mod.named_check('no Placement claim left', problems)


def claims_check(url):
    """``extra_check(records)`` for runner.RunOptions: no claim left for
    any allocation the run created."""
    def check(records):
        consumers = [r.uuid for r in records if r.uuid]
        return leftover_claims(
            lambda c: request(url, '/allocations/%s' % c), consumers)
    return check
