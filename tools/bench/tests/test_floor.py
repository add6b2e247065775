"""``python -m tools.bench floor`` end to end, with the in-process transport.

The real command in a child process, on an SQLite file of the test (or the
database IRONIC_ALLOC_TEST_DB names): it forks the HTTP servers, runs its
transactions on a scratch table and drops it.  The cast needs a broker;
test_floor_rabbitmq.py measures it.  Its numbers are never asserted, only
that each part was measured.
"""

import json
import os
import subprocess
import sys

import fixtures
from oslotest import base as oslo_base
import sqlalchemy as sa
from testtools import content

from tools.bench import floor

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__),
                                         '..', '..', '..'))


def run_floor(testcase, config_lines, extra_args=()):
    """Run the command; returns its JSON document."""
    workdir = testcase.useFixture(fixtures.TempDir()).path
    conf = os.path.join(workdir, 'floor.conf')
    with open(conf, 'w') as f:
        f.write('\n'.join(config_lines) + '\n')
    out = os.path.join(workdir, 'floor.json')
    result = subprocess.run(
        [sys.executable, '-m', 'tools.bench', 'floor', '--config-file', conf,
         '--count', '300', '--warmup', '5', '--json', out, *extra_args],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=180,
        stdin=subprocess.DEVNULL)
    testcase.addDetail('floor-output', content.text_content(
        result.stdout + result.stderr))
    testcase.assertEqual(0, result.returncode)
    testcase.assertIn('Floor of one allocation', result.stdout)
    with open(out) as f:
        return json.load(f)


def assert_measured(testcase, part):
    testcase.assertEqual(300, part['count'])
    testcase.assertIsNone(part['note'])
    testcase.assertGreater(part['caller'], 0)


def assert_scratch_table_gone(testcase, db_url):
    engine = sa.create_engine(db_url)
    testcase.addCleanup(engine.dispose)
    testcase.assertFalse(sa.inspect(engine).has_table(floor.SCRATCH_TABLE))


class TestFloorCommand(oslo_base.BaseTestCase):

    def test_every_part_but_the_cast(self):
        self.useFixture(fixtures.Timeout(240, gentle=True))
        # NOTE: a server database if one is named, else an SQLite file of
        # this test (base.test_database_url() would wipe this worker's own
        # file).
        db_url = os.environ.get('IRONIC_ALLOC_TEST_DB') or 'sqlite:///%s' % (
            os.path.join(self.useFixture(fixtures.TempDir()).path,
                         'floor.sqlite'))
        document = run_floor(self, ['[DEFAULT]', 'transport_url = fake://',
                                    '[database]', 'connection = %s' % db_url])
        parts = {part['name']: part for part in document['parts']}
        self.assertEqual(['http', 'http_api', 'cast', 'read', 'write'],
                         [part['name'] for part in document['parts']])
        for name in ('http', 'http_api'):
            assert_measured(self, parts[name])
            self.assertGreater(parts[name]['server'], 0)
        for name in ('read', 'write'):
            assert_measured(self, parts[name])
        self.assertIn('in-process transport', parts['cast']['note'])
        self.assertGreater(document['allocation']['seconds'], 0)
        # The servers are forks: everything ran on this interpreter.
        self.assertIn(os.path.realpath(sys.executable), document['machine'])
        assert_scratch_table_gone(self, db_url)
