"""The benchmark's placement backend end to end at a tiny size:
``python -m tools.bench sweep --backend placement`` starts a real
Placement on a PostgreSQL database of its own and a standalone service
with [allocation]backend = placement, waits for the sync, allocates,
deletes and checks that no claim is left in Placement.  Without the
Placement virtualenv or the PostgreSQL server the test skips (fails with
CI=true)."""

import json
import os
import subprocess
import sys
import tempfile

import sqlalchemy as sa

from ironic_alloc.tests import base
from ironic_alloc.tests.servers import placement_server

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__),
                                         '..', '..', '..'))
# A bound on the whole sweep: it only keeps a hang from stalling the run.
SWEEP_TIMEOUT = 150


def _postgres_problem():
    url = os.environ.get('IRONIC_ALLOC_PLACEMENT_PG') or \
        placement_server.DEFAULT_PG_URL
    engine = sa.create_engine(url)
    try:
        with engine.connect():
            return None
    except sa.exc.OperationalError as exc:
        return 'PostgreSQL for Placement is not usable: %s' % exc
    finally:
        engine.dispose()


class TestBenchPlacementBackend(base.TestCase):

    def test_tiny_sweep(self):
        reason = placement_server.missing_reason() or _postgres_problem()
        if reason:
            base.skip_or_fail(self, reason)
        workdir = tempfile.mkdtemp(prefix='bench-placement-test-')
        self.addCleanup(__import__('shutil').rmtree, workdir, True)
        out = os.path.join(workdir, 'result.json')
        proc = subprocess.run(
            [sys.executable, '-m', 'tools.bench', 'sweep',
             '--backend', 'placement', '--sizes', '20',
             '--allocations', '10', '--concurrency', '4',
             '--placement-sync-interval', '1', '--no-progress',
             '--workdir-root', workdir, '--json', out],
            cwd=REPO_ROOT, capture_output=True, text=True,
            timeout=SWEEP_TIMEOUT, stdin=subprocess.DEVNULL)
        self.assertEqual(0, proc.returncode,
                         'stdout:\n%s\nstderr:\n%s'
                         % (proc.stdout, proc.stderr[-5000:]))
        with open(out) as f:
            document = json.load(f)
        self.assertEqual('placement', document['backend'])
        row, = document['rows']
        self.assertEqual('placement', row['backend'])
        result = row['result']
        self.assertEqual('placement', result['settings']['backend'])
        self.assertEqual(10, result['allocations']['active'])
        self.assertGreaterEqual(
            result['setup_seconds']['placement_sync'], 0)
        claims = [c for c in result['checks']
                  if c['name'] == 'no Placement claim left']
        self.assertEqual([{'stage': 'after delete',
                           'name': 'no Placement claim left', 'ok': True,
                           'detail': ''}], claims)
        self.assertIn('placement sync s', proc.stdout)
