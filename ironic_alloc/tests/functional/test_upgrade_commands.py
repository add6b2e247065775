"""Commands of a rolling upgrade as an operator runs them: real processes,
a real SQLite file, their exit statuses and messages."""

import os
import subprocess
import sys

import fixtures

from ironic_alloc.tests import base

BIN_DIR = os.path.dirname(sys.executable)


class UpgradeCommandsTestCase(base.TestCase):

    def run_command(self, command, conf_text, *args):
        conf = os.path.join(self.useFixture(
            fixtures.TempDir()).path, 'command.conf')
        with open(conf, 'w') as f:
            f.write(conf_text)
        return subprocess.run(
            [os.path.join(BIN_DIR, command), '--config-file', conf]
            + list(args), capture_output=True, text=True, timeout=120)

    def dbsync(self, url, *args):
        return self.run_command('ironic-alloc-dbsync',
                                '[database]\nconnection = %s\n' % url,
                                *args)

    def test_dbsync_check_exit_statuses(self):
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

    def test_unknown_pin_stops_start_up(self):
        workdir = self.useFixture(fixtures.TempDir()).path
        conf = ('[DEFAULT]\npin_release_version = 2019.1\n'
                'transport_url = fake://\n[database]\nconnection = '
                'sqlite:///%s\n' % os.path.join(workdir, 'ia.sqlite'))
        for command in ('ironic-alloc-api', 'ironic-alloc-conductor'):
            result = self.run_command(command, conf)
            self.assertNotEqual(0, result.returncode, command)
            self.assertIn('Invalid [DEFAULT]pin_release_version',
                          result.stderr, command)
            self.assertIn("'2019.1'", result.stderr, command)
