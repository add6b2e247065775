"""Test case base of the clients tier.

Each test class gets one ``ironic-alloc`` service, started by the first
test that needs it and stopped in ``tearDownClass``; tests of a class share
it, so each test names its nodes and resource classes uniquely.  Client
commands run from the client virtualenv (tools/setup-client-venv.sh); when
it is missing the tests skip, or fail under CI=true.
"""

import json
import os
import shlex
import time
import uuid

import fixtures
from oslotest import base as oslo_base
from testtools import content

from ironic_alloc.tests import base as ia_base
from ironic_alloc.tests.clients import fixtures as client_fixtures

# Bounds a hung test; the client and service calls have their own bounds.
TEST_TIMEOUT = 300
# The --wait of CLI commands and the timeouts of the driver scripts.
WAIT = 60


def unique(prefix):
    return '%s-%s' % (prefix, uuid.uuid4().hex[:8])


def unique_rc(prefix='CLIENTS'):
    """A resource class no other test uses (they share the service)."""
    return '%s_%s' % (prefix, uuid.uuid4().hex[:8].upper())


class ClientFailed(AssertionError):
    pass


class ClientTestCase(oslo_base.BaseTestCase):
    """Runs the real client tools against a real service."""

    service_config = {}
    """Extra configuration of this class's service: {group: {opt: value}}"""

    _service = None
    _service_error = None

    @classmethod
    def tearDownClass(cls):
        if cls._service is not None:
            cls._service.cleanup()
            cls._service = None
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(TEST_TIMEOUT, gentle=True))
        self.venv = client_fixtures.ClientVenv()
        reason = self.venv.missing_reason()
        if reason:
            ia_base.skip_or_fail(self, reason)
        self.service = self._class_service()
        self.endpoint = self.service.url
        self.home = self.useFixture(fixtures.TempDir()).path
        self.shell = client_fixtures.OpenStackShell(self.venv, self.home)
        self.addCleanup(self.shell.close)
        self.transcript = []
        offset = self.service.log_size()
        self.addOnException(self._attach_logs(offset))

    @classmethod
    def _start_service(cls):
        service = client_fixtures.Service(extra_config=cls.service_config)
        try:
            service.start()
        except client_fixtures.ServiceError as exc:
            service.cleanup()
            cls._service_error = str(exc)
        else:
            cls._service = service

    def _class_service(self):
        cls = type(self)
        if cls._service is None and cls._service_error is None:
            cls._start_service()
        if cls._service_error is not None:
            self.fail(cls._service_error)
        status = cls._service.process.poll()
        if status is not None:
            self.fail('the service of %s exited with status %s; its log:\n%s'
                      % (cls.__name__, status,
                         cls._service.log_since(0, limit=20000)))
        return cls._service

    def _attach_logs(self, offset):
        def attach(exc_info):
            self.addDetail('client-transcript', content.text_content(
                '\n\n'.join(self.transcript) or '(no client command ran)'))
            self.addDetail('service-log', content.text_content(
                self.service.log_since(offset)))
        return attach

    def _run(self, argv, stdin=None):
        started = time.monotonic()
        result = self.venv.run(argv, self.home, stdin=stdin)
        self._record(argv, result, time.monotonic() - started, stdin=stdin)
        return result

    def _run_in_shell(self, argv):
        """``_run`` for an ``openstack`` command, in the test's
        long-lived ``openstack`` process."""
        started = time.monotonic()
        result = self.shell.run(argv)
        self._record(argv, result, time.monotonic() - started)
        return result

    def _record(self, argv, result, elapsed, stdin=None):
        entry = ['$ %s' % shlex.join(argv)]
        if stdin:
            entry.append('stdin: %s' % stdin)
        entry.append('exit status: %s (%.1fs)' % (result.returncode,
                                                  elapsed))
        if result.stdout:
            entry.append('stdout:\n%s' % result.stdout.rstrip())
        if result.stderr:
            entry.append('stderr:\n%s' % result.stderr.rstrip())
        self.transcript.append('\n'.join(entry))

    # The "openstack baremetal" command (python-openstackclient with the
    # python-ironicclient plugin).

    def cli_argv(self, *args):
        return [self.venv.openstack, '--os-auth-type', 'none',
                '--os-endpoint', self.endpoint, 'baremetal'] + list(args)

    def cli(self, *args, expect_failure=False):
        """Run ``openstack baremetal ARGS`` in the test's ``openstack``
        process (drivers/osc_shell.py); return the CompletedProcess.

        Fails the test when the exit status is not the expected one (zero,
        or non-zero with ``expect_failure``).
        """
        argv = self.cli_argv(*args)
        result = self._run_in_shell(argv)
        command = 'openstack baremetal %s' % shlex.join(args)
        if expect_failure and result.returncode == 0:
            raise ClientFailed('expected "%s" to fail, it exited 0:\n%s'
                               % (command, result.stdout))
        if not expect_failure and result.returncode != 0:
            raise ClientFailed('"%s" exited %d:\nstdout: %s\nstderr: %s'
                               % (command, result.returncode,
                                  result.stdout, result.stderr))
        return result

    def cli_json(self, *args):
        """Run ``openstack baremetal ARGS -f json``; return the parsed
        output."""
        result = self.cli(*(args + ('-f', 'json')))
        try:
            return json.loads(result.stdout)
        except ValueError:
            raise ClientFailed('%s printed no JSON: %r'
                               % (shlex.join(args), result.stdout))

    def cli_error(self, *args):
        """Run a command that must fail; return its stderr."""
        return self.cli(*args, expect_failure=True).stderr

    # Driver scripts (openstacksdk, metalsmith) run with the client
    # virtualenv's python; they read their parameters as JSON on stdin and
    # print one JSON document.

    def driver(self, script, scenario, **params):
        """Run ``drivers/SCRIPT SCENARIO``; return its JSON result.

        A driver reports a failed client call with {"error": ...} and a
        non-zero exit status; that fails the test with the driver's
        message and its HTTP log (stderr).
        """
        params.setdefault('endpoint', self.endpoint)
        params.setdefault('timeout', WAIT)
        argv = [self.venv.python,
                os.path.join(client_fixtures.DRIVERS_DIR, script), scenario]
        result = self._run(argv, stdin=json.dumps(params))
        try:
            output = json.loads(result.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            output = None
        if result.returncode != 0 or output is None or 'error' in output:
            raise ClientFailed(
                '%s %s failed (exit status %d): %s\nstderr (last 4000 '
                'characters):\n%s'
                % (script, scenario, result.returncode,
                   json.dumps(output, indent=2, sort_keys=True)
                   if output is not None else result.stdout,
                   result.stderr[-4000:]))
        return output
