"""``ironic-alloc-dbsync check`` as an operator runs it: a real process on
a real SQLite file, its exit status and message."""

import os
import subprocess
import sys

import fixtures

from ironic_alloc.tests import base

BIN_DIR = os.path.dirname(sys.executable)


class DbsyncCheckTestCase(base.TestCase):

    def dbsync(self, url, *args):
        conf = os.path.join(self.useFixture(
            fixtures.TempDir()).path, 'dbsync.conf')
        with open(conf, 'w') as f:
            f.write('[database]\nconnection = %s\n' % url)
        return subprocess.run(
            [os.path.join(BIN_DIR, 'ironic-alloc-dbsync'), '--config-file',
             conf] + list(args), capture_output=True, text=True,
            timeout=120)

    def test_exit_statuses(self):
        workdir = self.useFixture(fixtures.TempDir()).path
        url = 'sqlite:///%s' % os.path.join(workdir, 'ia.sqlite')
        empty = self.dbsync(url, 'check')
        self.assertEqual(1, empty.returncode, empty.stderr)
        self.assertIn('UPGRADE NEEDED', empty.stdout)
        upgraded = self.dbsync(url, 'upgrade')
        self.assertEqual(0, upgraded.returncode, upgraded.stderr)
        current = self.dbsync(url, 'check')
        self.assertEqual(0, current.returncode, current.stderr)
        self.assertIn('OK: the database schema is current', current.stdout)
        # A directory that does not exist: SQLite cannot open the file.
        broken = self.dbsync('sqlite:///%s/missing/ia.sqlite' % workdir,
                             'check')
        self.assertEqual(2, broken.returncode, broken.stderr)
        self.assertIn('ERROR: the schema revision could not be read',
                      broken.stdout)
