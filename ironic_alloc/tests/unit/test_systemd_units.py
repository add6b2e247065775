"""The systemd units under etc/ pass ``systemd-analyze verify`` cleanly.

What the units promise of the daemons (READY=1 for Type=notify, SIGHUP,
SIGTERM) is tested on real processes in
ironic_alloc/tests/functional/test_service_signals.py.
"""

import configparser
import glob
import os
import shutil
import subprocess
import sys

import fixtures
import testtools

from ironic_alloc.conf import conductor as conductor_conf
from ironic_alloc.tests import base

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__),
                                         '..', '..', '..'))
UNITS = sorted(glob.glob(os.path.join(REPO_ROOT, 'etc', '**', '*.service'),
                         recursive=True))
# Where the samples expect the virtualenv.
SAMPLE_BIN_DIR = '/opt/ironic-alloc/venv/bin/'
# Where this test run's commands are (ironic-alloc, ironic-alloc-conductor).
BIN_DIR = os.path.dirname(sys.executable) + '/'


class SystemdUnitsTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.analyze = shutil.which('systemd-analyze')
        if self.analyze is None:
            base.skip_or_fail(self, 'systemd-analyze not found (Debian '
                                    'package systemd)')
        self.tmpdir = self.useFixture(fixtures.TempDir()).path

    def test_units_found(self):
        names = [os.path.basename(u) for u in UNITS]
        self.assertIn('ironic-alloc-conductor.service', names)
        self.assertIn('ironic-alloc.service', names)

    def test_verify_without_warnings(self):
        for unit in UNITS:
            with open(unit) as f:
                text = f.read()
            # NOTE: verify checks that ExecStart= names an existing
            # executable; the sample's virtualenv does not exist here, so
            # a temporary copy points at the commands of this test run
            # (the same console scripts).  The service user need not
            # exist: verify does not resolve User=.
            self.assertIn(SAMPLE_BIN_DIR, text, unit)
            copy = os.path.join(self.tmpdir, os.path.basename(unit))
            with open(copy, 'w') as f:
                f.write(text.replace(SAMPLE_BIN_DIR, BIN_DIR))
            result = subprocess.run(
                [self.analyze, 'verify', '--man=no', copy],
                capture_output=True, text=True, timeout=60)
            # Any output is a warning (unknown key, bad value, missing
            # executable...); systemd-analyze exits 0 on most of them.
            self.assertEqual(
                (0, ''), (result.returncode,
                          (result.stdout + result.stderr).strip()),
                '%s: systemd-analyze verify complained' % unit)

    def test_daemon_contract(self):
        for unit in UNITS:
            parser = configparser.ConfigParser(interpolation=None,
                                               strict=False)
            parser.optionxform = str
            parser.read(unit)
            service = parser['Service']
            # READY=1 is sent by ironic_alloc.common.service
            # (run_until_signalled).
            self.assertEqual('notify', service['Type'], unit)
            self.assertEqual('on-failure', service['Restart'], unit)
            self.assertEqual('SIGTERM', service['KillSignal'], unit)
            self.assertEqual('/bin/kill -HUP $MAINPID',
                             service['ExecReload'], unit)
            # Longer than the default [conductor]graceful_shutdown_timeout,
            # with time left for the hand-back of unfinished allocations.
            graceful = [o.default for o in conductor_conf.conductor_opts
                        if o.name == 'graceful_shutdown_timeout']
            self.assertGreaterEqual(int(service['TimeoutStopSec']),
                                    graceful[0] + 20, unit)
