"""One schemathesis run against the real service, and what it saw.

``run()`` starts the all-in-one service (``python -m
ironic_alloc.cmd.standalone``: the API on a real HTTP server and a
conductor, SQLite under a temporary state_path), creates known nodes and
allocations over HTTP, writes a schemathesis configuration whose
dictionaries name them, runs the schemathesis command line on
ironic_alloc/api/openapi.yaml with every phase (examples, coverage,
fuzzing, stateful), and reads its NDJSON and JUnit reports into a
``Report``: per operation, the status codes answered and the failed
checks.

Why the dictionaries: an operation on one node or allocation answers 2xx
only for an identifier that exists, and a generated one never does.  Each
path parameter takes a known identifier in most cases and a generated
value in the others.  Deleting operations get identifiers of their own
(``doomed_*``), so a deletion never removes what the other operations
read; only empty chassis are ``doomed``, so deleting one answers 204.
The stateful phase follows the ``links`` of openapi.yaml instead (create
or list nodes, allocations and chassis, then act on one).
"""

import collections
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

from ironic_alloc.tests.clients import fixtures as service_fixtures
from ironic_alloc.tests.functional import openapi

OPENAPI_PATH = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
    'api', 'openapi.yaml')

# The run's settings: fixed, so that every run sends the same requests
# (Environment: IRONIC_ALLOC_SCHEMATHESIS_SEED and
# IRONIC_ALLOC_SCHEMATHESIS_EXAMPLES override them for a longer or
# another run).
SEED = int(os.environ.get('IRONIC_ALLOC_SCHEMATHESIS_SEED', '2019'))
MAX_EXAMPLES = int(os.environ.get('IRONIC_ALLOC_SCHEMATHESIS_EXAMPLES',
                                  '100'))
PHASES = ('examples', 'coverage', 'fuzzing', 'stateful')
# What fails the run: a 5xx, and any answer the description does not
# describe (status code, content type, headers, body); after a deletion
# the object must be gone, after a creation it must be there (stateful);
# an error without Ironic's body (ours, in schemathesis_hooks.py).
CHECKS = ('not_a_server_error', 'status_code_conformance',
          'content_type_conformance', 'response_headers_conformance',
          'response_schema_conformance', 'use_after_free',
          'ensure_resource_availability', 'ironic_error_body')
HOOKS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          'schemathesis_hooks.py')

# Bounds that only keep a hung run from stalling the tier.
RUN_TIMEOUT = 1500
REQUEST_TIMEOUT = 30
SETTLE_TIMEOUT = 60

MICROVERSIONS = ['latest', '1.79', '1.60', '1.58', '1.57', '1.52', '1.37',
                 '1.5', '1.1']
TRAITS = ['CUSTOM_ST_A', 'CUSTOM_ST_B', 'CUSTOM_ST_NEW']
# NOTE: no /conductor_group: an action on a node of a group no conductor
# serves is a designed 503 (retry once one is back), and the service
# here has one conductor, of the default group.  For the same reason,
# nodes are created in the default group (the conductor_groups
# dictionary).
NODE_PATCH_PATHS = ['/extra/st', '/description', '/name', '/owner',
                    '/lessee', '/resource_class', '/properties/cpus',
                    '/instance_info/image_source', '/driver_info/st',
                    '/maintenance', '/protected', '/retired',
                    '/automated_clean']
ALLOCATION_PATCH_PATHS = ['/name', '/extra/st', '/owner']
CHASSIS_PATCH_PATHS = ['/description', '/extra/st']
GROUP_PATCH_PATHS = ['/ttl', '/expires_at']
# OpenStack-API-Version values of the operations of an extension: mostly
# its version (else the operation could never answer 2xx), sometimes
# none or an older one.
EXTENSION_VERSIONS = ['ironic-alloc 1.1', 'ironic-alloc latest',
                      'baremetal 1.79, ironic-alloc 1.1']
# The same for the operations of extension 1.2 (reservations).
RESERVATION_EXTENSION_VERSIONS = ['ironic-alloc 1.2', 'ironic-alloc latest',
                                  'baremetal 1.79, ironic-alloc 1.2',
                                  'ironic-alloc 1.1']
# The same for the operations of extension 1.3 (allocation groups).
GROUP_EXTENSION_VERSIONS = ['ironic-alloc 1.3', 'ironic-alloc latest',
                            'baremetal 1.79, ironic-alloc 1.3',
                            'ironic-alloc 1.2']

# Operations given identifiers of their own dictionary, by parameter.
OPERATION_DICTIONARIES = {
    'deleteNode': {'path.node_ident': 'doomed_nodes'},
    'getNodeAllocation': {'path.node_ident': 'allocated_nodes'},
    'deleteNodeAllocation': {'path.node_ident': 'doomed_allocated_nodes'},
    'deleteAllocation': {'path.allocation_ident': 'doomed_allocations'},
    'deleteChassis': {'path.chassis_uuid': 'doomed_chassis'},
    'updateChassis': {'body.[*].path': 'chassis_patch_paths'},
    'updateNode': {'body.[*].path': 'node_patch_paths'},
    'updateAllocation': {'body.[*].path': 'allocation_patch_paths'},
    'explainAllocation': {'header.OpenStack-API-Version':
                          'extension_versions',
                          'body.resource_class': 'resource_classes'},
}
_RESERVATION_DICTIONARIES = {
    'createReservation': {'body.node_uuid[*]': 'reservable_nodes'},
    'listReservations': {},
    'getReservation': {'path.reservation_uuid': 'reservations'},
    'renewReservation': {'path.reservation_uuid': 'reservations'},
    'deleteReservation': {'path.reservation_uuid': 'doomed_reservations'},
}
for _operation, _bindings in _RESERVATION_DICTIONARIES.items():
    OPERATION_DICTIONARIES[_operation] = dict(
        _bindings, **{'header.OpenStack-API-Version':
                      'reservation_extension_versions'})
_GROUP_DICTIONARIES = {
    'createAllocationGroup': {},
    'listAllocationGroups': {},
    'getAllocationGroup': {'path.allocation_group_ident': 'groups'},
    'updateAllocationGroupLease': {'path.allocation_group_ident': 'groups',
                                   'body.[*].path': 'group_patch_paths'},
    'deleteAllocationGroup': {'path.allocation_group_ident':
                              'doomed_groups'},
}
for _operation, _bindings in _GROUP_DICTIONARIES.items():
    OPERATION_DICTIONARIES[_operation] = dict(
        _bindings, **{'header.OpenStack-API-Version':
                      'group_extension_versions'})

# How often a bound parameter takes a dictionary value rather than a
# generated one.
DICTIONARY_PROBABILITY = 0.8


class SeedError(Exception):
    """The service refused to create a known resource."""


class Seeder:
    """Creates the known resources over HTTP and waits for them."""

    def __init__(self, host, port):
        self.host = host
        self.port = port

    def request(self, method, path, body=None):
        headers = {'X-OpenStack-Ironic-API-Version': 'latest',
                   'Content-Type': 'application/json'}
        if path.startswith('/v1/reservations'):
            headers['OpenStack-API-Version'] = RESERVATION_EXTENSION_VERSIONS[0]
        elif path.startswith('/v1/allocation_groups'):
            headers['OpenStack-API-Version'] = GROUP_EXTENSION_VERSIONS[0]
        conn = http.client.HTTPConnection(self.host, self.port,
                                          timeout=REQUEST_TIMEOUT)
        try:
            conn.request(method, path,
                         body=None if body is None else json.dumps(body),
                         headers=headers)
            response = conn.getresponse()
            data = response.read()
        finally:
            conn.close()
        return response.status, json.loads(data) if data else None

    def expect(self, status, method, path, body=None):
        got, doc = self.request(method, path, body)
        if got != status:
            raise SeedError('%s %s %s -> %s %s' % (method, path, body, got,
                                                   doc))
        return doc

    def _wait(self, path, done, what):
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while True:
            doc = self.expect(200, 'GET', path)
            if done(doc):
                return doc
            if time.monotonic() > deadline:
                raise SeedError('%s did not settle: %s' % (what, doc))
            time.sleep(0.05)

    def node(self, name, resource_class, state='enroll', traits=()):
        """A node in ``state`` (enroll, manageable, available or
        active); returns its UUID."""
        node = self.expect(201, 'POST', '/v1/nodes', {
            'name': name, 'driver': 'fake-hardware',
            'resource_class': resource_class})
        path = '/v1/nodes/%s' % node['uuid']
        steps = {'enroll': [], 'manageable': ['manage'],
                 'available': ['manage', 'provide'],
                 'active': ['manage', 'provide', 'active']}[state]
        for target in steps:
            self.expect(202, 'PUT', path + '/states/provision',
                        {'target': target})
            self._wait(path, lambda n: n['target_provision_state'] is None,
                       'node %s' % name)
        if traits:
            self.expect(204, 'PUT', path + '/traits',
                        {'traits': list(traits)})
        return node['uuid']

    def allocation(self, name, resource_class, node_uuid):
        """An active allocation of the available node ``node_uuid``;
        returns its UUID."""
        alloc = self.expect(201, 'POST', '/v1/allocations', {
            'name': name, 'resource_class': resource_class,
            'candidate_nodes': [node_uuid]})
        done = self._wait('/v1/allocations/%s' % alloc['uuid'],
                          lambda a: a['state'] != 'allocating',
                          'allocation %s' % name)
        if done['state'] != 'active':
            raise SeedError('allocation %s: %s' % (name, done))
        return alloc['uuid']

    def group(self, name, resource_class, size):
        """An active allocation group of ``size`` new members of
        ``resource_class``; returns its UUID."""
        doc = self.expect(201, 'POST', '/v1/allocation_groups', {
            'name': name, 'members': {str(uuid.uuid4()): {
                'resource_class': resource_class} for _i in range(size)}})
        done = self._wait('/v1/allocation_groups/%s' % doc['uuid'],
                          lambda g: g['state'] != 'allocating',
                          'allocation group %s' % name)
        if done['state'] != 'active':
            raise SeedError('allocation group %s: %s' % (name, done))
        return doc['uuid']

    def chassis(self, description):
        """A chassis; returns its UUID."""
        return self.expect(201, 'POST', '/v1/chassis',
                           {'description': description})['uuid']

    def reservation(self, node_uuid):
        """A reservation of the available node ``node_uuid``; returns its
        UUID."""
        doc = self.expect(201, 'POST', '/v1/reservations', {
            'instance_uuid': str(uuid.uuid4()), 'node_uuid': [node_uuid]})
        return doc['reservation']['uuid']


def seed(seeder, conductor_host):
    """Create the known resources; returns the dictionaries naming them
    ({dictionary name: [values]})."""
    nodes = []
    for state in ('enroll', 'manageable', 'available', 'active'):
        name = 'st-%s' % state
        nodes += [seeder.node(name, 'st-silver', state, TRAITS[:2]), name]

    def allocated(prefix, count):
        node_idents, alloc_idents = [], []
        for i in range(count):
            node_name = '%s-node-%d' % (prefix, i)
            node_uuid = seeder.node(node_name, 'st-' + prefix, 'available')
            alloc_name = '%s-%d' % (prefix, i)
            alloc_uuid = seeder.allocation(alloc_name, 'st-' + prefix,
                                           node_uuid)
            node_idents += [node_uuid, node_name]
            alloc_idents += [alloc_uuid, alloc_name]
        return node_idents, alloc_idents

    allocated_nodes, allocations = allocated('gold', 2)
    doomed_allocated_nodes, _ = allocated('bronze', 3)
    _, doomed_allocations = allocated('copper', 3)
    # Reservations: known ones to show and renew, doomed ones to delete,
    # and free nodes of their own to reserve.
    reserve_nodes = [seeder.node('st-reserve-%d' % i, 'st-reserve',
                                 'available') for i in range(9)]
    reservations = [seeder.reservation(n) for n in reserve_nodes[:2]]
    doomed_reservations = [seeder.reservation(n)
                           for n in reserve_nodes[2:5]]
    # Allocation groups: known ones to show, doomed ones to delete (one
    # node each).
    for i in range(5):
        seeder.node('st-group-node-%d' % i, 'st-group', 'available')
    groups = [seeder.group('st-group-%d' % i, 'st-group', 1)
              for i in range(2)]
    doomed_groups = [seeder.group('st-doomed-group-%d' % i, 'st-group', 1)
                     for i in range(3)]
    # Chassis: known ones (nodes may be created in them), and empty
    # doomed ones to delete.
    chassis = [seeder.chassis('st-chassis-%d' % i) for i in range(2)]
    doomed_chassis = [seeder.chassis('st-doomed-chassis-%d' % i)
                      for i in range(3)]
    doomed_nodes = []
    for i in range(4):
        name = 'st-doomed-%d' % i
        doomed_nodes += [seeder.node(name, 'st-silver'), name]
    return {
        'microversions': MICROVERSIONS,
        'nodes': nodes,
        'allocated_nodes': allocated_nodes,
        'allocations': allocations,
        'doomed_nodes': doomed_nodes,
        'doomed_allocated_nodes': doomed_allocated_nodes,
        'doomed_allocations': doomed_allocations,
        'traits': TRAITS,
        'drivers': ['fake-hardware'],
        'conductor_groups': [''],
        'conductors': [conductor_host],
        'node_patch_paths': NODE_PATCH_PATHS,
        'allocation_patch_paths': ALLOCATION_PATCH_PATHS,
        'extension_versions': EXTENSION_VERSIONS,
        'reservation_extension_versions': RESERVATION_EXTENSION_VERSIONS,
        'reservations': reservations,
        'group_extension_versions': GROUP_EXTENSION_VERSIONS,
        'groups': groups,
        'group_patch_paths': GROUP_PATCH_PATHS,
        'doomed_groups': doomed_groups,
        'doomed_reservations': doomed_reservations,
        'reservable_nodes': reserve_nodes[5:],
        'resource_classes': ['st-silver', 'st-gold'],
        'chassis': chassis,
        'doomed_chassis': doomed_chassis,
        'chassis_patch_paths': CHASSIS_PATCH_PATHS,
    }


def _toml(value):
    """A TOML value for a string, number, boolean or list of them.

    NOTE: a JSON string is a valid TOML basic string (same escapes).
    """
    if isinstance(value, (list, tuple)):
        return '[%s]' % ', '.join(_toml(v) for v in value)
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return json.dumps(value)


def _binding(dictionary, probability=DICTIONARY_PROBABILITY):
    return '{ dictionary = %s, probability = %s }' % (
        _toml(dictionary), probability)


def config_text(dictionaries, report_dir):
    """The schemathesis.toml of the run."""
    lines = [
        'hooks = %s' % _toml(HOOKS_PATH),
        'seed = %d' % SEED,
        'workers = 1',
        'request-timeout = %d' % REQUEST_TIMEOUT,
        'continue-on-failure = true',
        '',
        '[generation]',
        'max-examples = %d' % MAX_EXAMPLES,
        # NOTE: no example database: a run never depends on an earlier one.
        'database = "none"',
        '',
        '[phases]',
    ]
    lines += ['%s.enabled = true' % phase for phase in PHASES]
    # NOTE: the stateful phase follows the links of openapi.yaml only;
    # inferred ones (a list to an item of an always-empty list) would
    # take most of its steps.
    lines.append('stateful.inference.algorithms = []')
    lines += ['', '[checks]', 'enabled = false']
    lines += ['%s.enabled = true' % check for check in CHECKS]
    lines += ['', '[reports]', 'directory = %s' % _toml(report_dir),
              'ndjson.enabled = true', 'junit.enabled = true', '',
              '[dictionaries]']
    for name, values in sorted(dictionaries.items()):
        lines.append('%s = { values = %s }' % (name, _toml(values)))
    lines += [
        '', '[parameters]',
        '"header.X-OpenStack-Ironic-API-Version" = %s'
        % _binding('microversions'),
        '"path.node_ident" = %s' % _binding('nodes'),
        '"query.node" = %s' % _binding('nodes'),
        '"path.allocation_ident" = %s' % _binding('allocations'),
        '"path.trait" = %s' % _binding('traits'),
        '"path.driver_name" = %s' % _binding('drivers'),
        # NOTE: fake-hardware is the one driver here; any other is a 400.
        '"body.driver" = %s' % _binding('drivers'),
        '"body.conductor_group" = %s' % _binding('conductor_groups', 1.0),
        '"path.hostname" = %s' % _binding('conductors'),
        '"path.chassis_uuid" = %s' % _binding('chassis'),
        '"query.chassis_uuid" = %s' % _binding('chassis'),
        '"body.chassis_uuid" = %s' % _binding('chassis'),
    ]
    for operation_id, bindings in sorted(OPERATION_DICTIONARIES.items()):
        lines += ['', '[[operations]]',
                  'include-operation-id = %s' % _toml(operation_id),
                  '[operations.parameters]']
        lines += ['%s = %s' % (_toml(key), _binding(name))
                  for key, name in sorted(bindings.items())]
    return '\n'.join(lines) + '\n'


class Report:
    """What one run saw, per operation (schemathesis's label, "METHOD
    /path")."""

    def __init__(self, ndjson_path, junit_path, returncode, output):
        self.returncode = returncode
        self.output = output
        self.statuses = collections.defaultdict(collections.Counter)
        self.failures = collections.defaultdict(list)
        self.failure_texts = {}
        self.errors = []
        self.phases = {}
        self.scenarios = collections.Counter()
        self.stop_reason = None
        # Successful stateful steps whose input came from a link.
        self.stateful_steps = 0
        self.initialize = {}
        with open(ndjson_path) as f:
            for line in f:
                self._event(json.loads(line))
        if junit_path:
            self._junit(junit_path)

    def _event(self, event):
        (kind, value), = event.items()
        if kind == 'Initialize':
            self.initialize = value
        elif kind == 'PhaseFinished':
            self.phases[value['phase']['name']] = value['status']
        elif kind == 'NonFatalError':
            self.errors.append('%s (%s phase): %s: %s' % (
                value.get('label'), value.get('phase'),
                value['value'].get('type'), value['value'].get('message')))
        elif kind == 'FatalError':
            self.errors.append('fatal: %s' % json.dumps(value)[:2000])
        elif kind == 'EngineFinished':
            self.stop_reason = value.get('stop_reason')
        elif kind == 'ScenarioFinished':
            self._scenario(value)

    def _scenario(self, value):
        recorder = value['recorder']
        label = recorder['label']
        self.scenarios[value['phase']] += 1
        cases = recorder.get('cases', {})
        for case_id, interaction in recorder.get('interactions',
                                                 {}).items():
            response = interaction.get('response')
            if not response:
                continue
            # NOTE: in the stateful phase one scenario holds the steps
            # of several operations: count each under its own.
            case = cases.get(case_id, {})
            case_label = label
            status = response['status_code']
            if value['phase'] == 'stateful' and case:
                case_label = self._label_of(case.get('value', {}))
                if case.get('is_transition_applied') and \
                        200 <= status < 300:
                    self.stateful_steps += 1
            self.statuses[case_label][status] += 1
        for case_id, checks in recorder.get('checks', {}).items():
            for check in checks:
                if check.get('status') == 'failure':
                    case = cases.get(case_id, {}).get('value', {})
                    self.failures[self._label_of(case) if case
                                  else label].append(
                        (value['phase'], check['name'], case_id,
                         json.dumps(check)[:1500]))

    def _label_of(self, case):
        return '%s %s' % (case.get('method'), case.get('path'))

    def _junit(self, path):
        import xml.etree.ElementTree as ET
        for testcase in ET.parse(path).iter('testcase'):
            texts = [f.text or '' for f in testcase
                     if f.tag in ('failure', 'error')]
            if texts:
                self.failure_texts[testcase.get('name')] = '\n\n'.join(texts)

    def two_hundreds(self, label):
        return sum(n for status, n in self.statuses[label].items()
                   if 200 <= status < 300)


def run():
    """Start the service, seed it, run schemathesis; returns
    (Report, service log text)."""
    workdir = tempfile.mkdtemp(prefix='ironic-alloc-schemathesis-')
    try:
        return _run(workdir)
    finally:
        # NOTE: the reports are large (every request and answer).
        shutil.rmtree(workdir, ignore_errors=True)


def _run(workdir):
    service = service_fixtures.Service(
        command=[sys.executable, '-m', 'ironic_alloc.cmd.standalone'],
        extra_config={
            'DEFAULT': {'debug': 'false'},
            # NOTE: actions settle at once, so a generated sequence meets
            # the states it asked for.
            'conductor': {'fake_action_delay': '0'}})
    service.start()
    try:
        seeder = Seeder('127.0.0.1', service.port)
        dictionaries = seed(seeder, service.host)
        report_dir = os.path.join(workdir, 'report')
        config_path = os.path.join(workdir, 'schemathesis.toml')
        with open(config_path, 'w') as f:
            f.write(config_text(dictionaries, report_dir))
        ndjson = os.path.join(report_dir, 'events.ndjson')
        junit = os.path.join(report_dir, 'junit.xml')
        command = [
            sys.executable, '-m', 'schemathesis.cli',
            '--config-file', config_path, '--no-color',
            'run', OPENAPI_PATH, '--url', service.url,
            '--report-ndjson-path', ndjson, '--report-junit-path', junit,
        ]
        proc = subprocess.run(command, capture_output=True, text=True,
                              timeout=RUN_TIMEOUT, cwd=workdir,
                              stdin=subprocess.DEVNULL)
        output = proc.stdout + proc.stderr
        if not os.path.exists(ndjson):
            raise RuntimeError('schemathesis wrote no report (exit %s):\n%s'
                               % (proc.returncode, output[-20000:]))
        report = Report(ndjson, junit if os.path.exists(junit) else None,
                        proc.returncode, output)
        return report, service.log_since(0)
    finally:
        service.cleanup()

