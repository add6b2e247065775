"""Commands of a rolling upgrade as an operator runs them: real processes,
a real SQLite file, their exit statuses and messages."""

import os
import subprocess
import sys

import fixtures
import sqlalchemy as sa

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

    def test_refresh_node_matching(self):
        # Nodes written as a process of a release before the matching
        # language writes them: properties and trait rows, no normalised
        # columns, no capability rows.
        workdir = self.useFixture(fixtures.TempDir()).path
        url = 'sqlite:///%s' % os.path.join(workdir, 'ia.sqlite')
        self.assertEqual(0, self.dbsync(url, 'upgrade').returncode)
        engine = sa.create_engine(url)
        self.addCleanup(engine.dispose)
        with engine.begin() as conn:
            for index, traits in enumerate([['CUSTOM_A'], ['CUSTOM_A'], []]):
                conn.execute(sa.text(
                    "INSERT INTO nodes (id, uuid, driver, maintenance, "
                    "protected, retired, console_enabled, resource_class, "
                    "conductor_group, disable_power_off, properties) VALUES "
                    "(:id, :uuid, 'fake-hardware', 0, 0, 0, 0, 'gold', '', "
                    "0, :properties)"),
                    {'id': index + 1,
                     'uuid': '00000000-0000-4000-8000-00000000000%d' % index,
                     'properties': '{"cpus": "8", "capabilities": '
                                   '"boot_mode:uefi"}'})
                for trait in traits:
                    conn.execute(sa.text(
                        'INSERT INTO node_traits (node_id, trait) VALUES '
                        '(:id, :trait)'), {'id': index + 1, 'trait': trait})
        result = self.dbsync(url, 'refresh-node-matching', '--batch-size',
                             '2')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertIn('Refreshed the matching columns of 3 nodes',
                      result.stdout)
        with engine.begin() as conn:
            self.assertEqual(
                [('["CUSTOM_A"]', '{"boot_mode": "uefi"}', 8)] * 2
                + [('[]', '{"boot_mode": "uefi"}', 8)],
                [tuple(row) for row in conn.execute(sa.text(
                    'SELECT match_traits, match_capabilities, match_cpus '
                    'FROM nodes ORDER BY id'))])
            self.assertEqual(3, conn.execute(sa.text(
                "SELECT count(*) FROM node_capabilities WHERE name = "
                "'boot_mode' AND value = 'uefi'")).scalar())
            # The tallies (folded or not) count the nodes by their
            # refreshed keys.
            counts = dict(conn.execute(sa.text(
                'SELECT match_traits, sum(n) FROM (SELECT match_traits, '
                'nodes AS n FROM node_tallies UNION ALL SELECT '
                'match_traits, delta FROM node_tally_changes) AS t '
                'GROUP BY match_traits HAVING sum(n) <> 0')).all())
            self.assertEqual({'["CUSTOM_A"]': 2, '[]': 1}, counts)
