"""Per-project limits on holds over HTTP, limits from the configuration.

The real WSGI app on a real socket with a real conductor, behind the
stand-in for keystonemiddleware of the policy matrix (test_policy_matrix
.KeystoneHeaders: a token is a persona name), so requests come from
project members, project admins and system scoped callers as with
Keystone.  Limits of [limits]driver = config: the total and per resource
class, the 403 naming the limit, allocations and reservations counted
together, exempt callers, and twenty clients of one project racing past a
limit of five.
"""

import http.client
import json
import os
import subprocess
import sys
import threading

import fixtures
from oslo_utils import uuidutils
import sqlalchemy as sa

from ironic_alloc.api.controllers.v1 import versions
from ironic_alloc.common import limits
from ironic_alloc.common import policy
from ironic_alloc.db import api as db_api
from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.db.sqlalchemy import models
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import openapi
from ironic_alloc.tests.functional import test_policy_matrix as matrix

OWNER = matrix.OWNER
OTHER = matrix.OTHER
RESERVATIONS = 'ironic-alloc 1.2'


class _LimitsTestCase(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.config(transport_url='fake://', auth_strategy='keystone')
        self.config(host_ip='127.0.0.1', port=0, group='api')
        self.config(allocation_create_wait=30, group='api')
        self.config(driver='config', group='limits')
        # NOTE: token validation by Keystone is outside this tier (the
        # keystone tier covers it); see test_policy_matrix.
        self.useFixture(fixtures.MonkeyPatch(
            'keystonemiddleware.auth_token.AuthProtocol',
            matrix.KeystoneHeaders))
        policy.reset()
        self.addCleanup(policy.reset)
        self.api = self.useFixture(openapi.ServedAPI())

    @staticmethod
    def headers(persona, extension=None):
        headers = {'X-OpenStack-Ironic-API-Version':
                   versions.MAX_VERSION_STRING,
                   'Content-Type': 'application/json',
                   'X-Auth-Token': persona}
        if extension:
            headers['OpenStack-API-Version'] = extension
        return headers

    def call(self, persona, method, url, doc=None, extension=None):
        status, _headers, data = self.api.request(
            method, url, None if doc is None else json.dumps(doc),
            self.headers(persona, extension))
        return status, (json.loads(data) if data else None)

    def allocate(self, persona, resource_class='gold'):
        return self.call(persona, 'POST', '/v1/allocations',
                         {'resource_class': resource_class})

    def reserve(self, persona, nodes):
        return self.call(persona, 'POST', '/v1/reservations',
                         {'instance_uuid': uuidutils.generate_uuid(),
                          'node_uuid': list(nodes)}, RESERVATIONS)

    def nodes(self, count, resource_class='gold', owner=OWNER):
        return [utils.make_available_node(
            self.context, resource_class=resource_class, owner=owner).uuid
            for _ in range(count)]

    def holds(self, owner=OWNER):
        with sqla_api.get_engine().connect() as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(
                models.Allocation.__table__).where(
                    models.Allocation.owner == owner)).scalar()

    def assertLimited(self, status, doc, resource, limit, usage,
                      project=OWNER):
        self.assertEqual(403, status, doc)
        fault = json.loads(doc['error_message'])
        self.assertEqual('Client', fault['faultcode'])
        self.assertEqual(
            'Project %s has reached its limit %s: %d of %d holds '
            '(allocations and reservations) are in use, so no new one can '
            'be created.' % (project, resource, usage, limit),
            fault['faultstring'])
        self.assertNotIn('Traceback', doc['error_message'])


    def assertGroupLimited(self, status, doc, resource, limit, usage,
                           requested, project=OWNER):
        self.assertEqual(403, status, doc)
        fault = json.loads(doc['error_message'])
        self.assertEqual('Client', fault['faultcode'])
        self.assertEqual(
            'Project %s would pass its limit %s: %d of %d holds '
            '(allocations and reservations) are in use and the allocation '
            'group asks for %d more, so none of them can be created.'
            % (project, resource, usage, limit, requested),
            fault['faultstring'])


class TestConfiguredLimits(_LimitsTestCase):

    def test_total_counts_allocations_and_reservations(self):
        self.config(project_holds=3, group='limits')
        gold = self.nodes(4)
        self.nodes(1, owner=OTHER)
        status, first = self.allocate('owner_member')
        self.assertEqual(201, status, first)
        self.assertEqual('active', first['state'])
        status, _ = self.reserve('owner_member', gold)
        self.assertEqual(201, status)
        # An allocation that finds no node ends in error and still counts:
        # the limit is on holds in any state.
        status, failed = self.allocate('owner_member', 'none-such')
        self.assertEqual(201, status, failed)
        self.assertEqual('error', failed['state'])
        status, doc = self.allocate('owner_member')
        self.assertLimited(status, doc, 'baremetal_holds', 3, 3)
        status, doc = self.reserve('owner_member', gold)
        self.assertLimited(status, doc, 'baremetal_holds', 3, 3)
        self.assertEqual(3, self.holds())
        # Another project has a limit of its own.
        status, doc = self.allocate('other_member')
        self.assertEqual(201, status, doc)
        # A hold deleted makes room.
        status, _ = self.call('owner_member', 'DELETE',
                              '/v1/allocations/%s' % failed['uuid'])
        self.assertEqual(204, status)
        status, doc = self.allocate('owner_member')
        self.assertEqual(201, status, doc)
        self.assertEqual(3, self.holds())

    def test_per_resource_class(self):
        self.config(project_holds_per_resource_class={'gold': 1},
                    group='limits')
        self.nodes(2)
        self.nodes(1, resource_class='silver')
        status, doc = self.allocate('owner_member')
        self.assertEqual(201, status, doc)
        status, doc = self.allocate('owner_member')
        self.assertLimited(status, doc, 'baremetal_holds:gold', 1, 1)
        # Other classes are not limited.
        status, doc = self.allocate('owner_member', 'silver')
        self.assertEqual(201, status, doc)
        # A reservation's class is its node's: the free gold node is not
        # tried, the silver one after it is reserved.
        gold = self.nodes(1)[0]
        silver = self.nodes(1, resource_class='silver')[0]
        status, doc = self.reserve('owner_member', [gold, silver])
        self.assertEqual(201, status, doc)
        self.assertEqual(silver, doc['reservation']['node_uuid'])
        status, doc = self.reserve('owner_member', [gold])
        self.assertLimited(status, doc, 'baremetal_holds:gold', 1, 1)
        self.assertEqual(3, self.holds())
        # The usage oslo.limit would be given: the reservation counts in
        # its node's class.
        self.assertEqual({'gold': 1, 'silver': 2},
                         db_api.get_instance().count_project_holds(OWNER))
        self.assertEqual(
            {'baremetal_holds': 3, 'baremetal_holds:silver': 2,
             'baremetal_holds:bronze': 0},
            limits._count_holds(OWNER, ['baremetal_holds',
                                        'baremetal_holds:silver',
                                        'baremetal_holds:bronze']))

    def test_class_and_total_together(self):
        self.config(project_holds=2, group='limits')
        self.config(project_holds_per_resource_class={'gold': 5,
                                                      'silver': -1},
                    group='limits')
        self.nodes(3)
        for _ in range(2):
            status, doc = self.allocate('owner_member')
            self.assertEqual(201, status, doc)
        # Room in the class, none in the total: the total is named.
        status, doc = self.allocate('owner_member')
        self.assertLimited(status, doc, 'baremetal_holds', 2, 2)
        status, doc = self.allocate('owner_member', 'silver')
        self.assertLimited(status, doc, 'baremetal_holds', 2, 2)

    def test_exempt_callers(self):
        self.config(project_holds=1, group='limits')
        self.nodes(4)
        status, doc = self.allocate('owner_member')
        self.assertEqual(201, status, doc)
        status, doc = self.allocate('owner_member')
        self.assertEqual(403, status, doc)
        # A project admin and a system member creating for the project are
        # exempt by default; their holds count for the project's members.
        status, doc = self.allocate('owner_admin')
        self.assertEqual(201, status, doc)
        self.assertEqual(OWNER, doc['owner'])
        status, doc = self.call('system_member', 'POST', '/v1/allocations',
                                {'resource_class': 'gold', 'owner': OWNER})
        self.assertEqual(201, status, doc)
        self.assertEqual(3, self.holds())
        status, doc = self.allocate('owner_member')
        self.assertLimited(status, doc, 'baremetal_holds', 1, 3)

    def test_exemption_is_a_policy_rule(self):
        self.config(project_holds=1, group='limits')
        policy_file = self.useFixture(fixtures.TempDir()).join('p.yaml')
        with open(policy_file, 'w') as f:
            f.write('"baremetal:allocation:limit_exempt": "!"\n')
        self.config(policy_file=policy_file, group='oslo_policy')
        policy.reset()
        self.nodes(2)
        status, doc = self.allocate('owner_admin')
        self.assertEqual(201, status, doc)
        status, doc = self.allocate('owner_admin')
        self.assertLimited(status, doc, 'baremetal_holds', 1, 1)

    def test_no_limit_by_default(self):
        self.config(driver='none', project_holds=0, group='limits')
        self.nodes(2)
        for _ in range(2):
            status, doc = self.allocate('owner_member')
            self.assertEqual(201, status, doc)

    def test_bad_limits_request_is_not_a_server_error(self):
        # A limit of zero refuses every hold, with the limit named, and a
        # request that is bad in itself stays a 400.
        self.config(project_holds=0, group='limits')
        status, doc = self.allocate('owner_member')
        self.assertLimited(status, doc, 'baremetal_holds', 0, 0)
        status, doc = self.call('owner_member', 'POST', '/v1/allocations',
                                {'resource_class': 7})
        self.assertEqual(400, status, doc)


class TestLimitRace(_LimitsTestCase):
    """Twenty clients of one project, each on a connection of its own,
    released at once past a limit of five."""

    CLIENTS = 20
    LIMIT = 5

    def _race(self, post):
        start = threading.Barrier(self.CLIENTS)
        statuses = [None] * self.CLIENTS

        def client(index):
            conn = http.client.HTTPConnection(
                self.api.server.host, self.api.server.port, timeout=120)
            try:
                start.wait()
                conn.request('POST', *post(index))
                response = conn.getresponse()
                body = response.read()
                statuses[index] = (response.status, body)
            finally:
                conn.close()

        threads = [threading.Thread(target=client, args=(i,))
                   for i in range(self.CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return statuses

    def _check(self, statuses, resource):
        codes = sorted(status for status, _body in statuses)
        self.assertEqual([201] * self.LIMIT
                         + [403] * (self.CLIENTS - self.LIMIT), codes,
                         statuses)
        for status, body in statuses:
            if status == 403:
                self.assertIn('has reached its limit %s' % resource,
                              json.loads(body)['error_message'])
        self.assertEqual(self.LIMIT, self.holds())

    def test_allocations(self):
        self.config(project_holds=self.LIMIT, group='limits')
        self.nodes(self.CLIENTS)
        body = json.dumps({'resource_class': 'gold'})
        statuses = self._race(lambda index: (
            '/v1/allocations', body, self.headers('owner_member')))
        self._check(statuses, 'baremetal_holds')

    def test_allocations_and_reservations_of_a_class(self):
        self.config(project_holds_per_resource_class={'gold': self.LIMIT},
                    group='limits')
        nodes = self.nodes(self.CLIENTS)

        def post(index):
            if index % 2:
                return ('/v1/allocations',
                        json.dumps({'resource_class': 'gold'}),
                        self.headers('owner_member'))
            return ('/v1/reservations', json.dumps({
                'instance_uuid': uuidutils.generate_uuid(),
                'node_uuid': nodes}), self.headers('owner_member',
                                                   RESERVATIONS))

        statuses = self._race(post)
        self._check(statuses, 'baremetal_holds:gold')


class TestBadConfiguration(base.TestCase):
    """Malformed limits stop the services before they serve anything,
    with one line naming the option."""

    def run_service(self, module, conf_text):
        workdir = self.useFixture(fixtures.TempDir()).path
        conf = os.path.join(workdir, 'service.conf')
        with open(conf, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = fake://\n'
                    '[database]\nconnection = sqlite:///%s\n%s'
                    % (os.path.join(workdir, 'ia.sqlite'), conf_text))
        return subprocess.run(
            [sys.executable, '-m', module, '--config-file', conf],
            capture_output=True, text=True, timeout=120)

    def test_malformed_limits_stop_start_up(self):
        cases = [
            ('[limits]\ndriver = config\n'
             'project_holds_per_resource_class = gold:lots\n',
             'Invalid [limits]project_holds_per_resource_class: '),
            ('[limits]\ndriver = keystone\n',
             'Invalid [limits]driver keystone: [oslo_limit] names no '
             'endpoint'),
        ]
        for module in ('ironic_alloc.cmd.api', 'ironic_alloc.cmd.conductor'):
            for conf_text, message in cases:
                result = self.run_service(module, conf_text)
                self.assertEqual(1, result.returncode, result.stderr)
                # NOTE: libraries may warn on stderr before it (deprecation
                # warnings); the service's own word is its last line, with
                # no traceback.
                self.assertNotIn('Traceback', result.stderr)
                last = result.stderr.strip().splitlines()[-1]
                self.assertTrue(last.startswith(message), result.stderr)


class TestGroupLimits(_LimitsTestCase):
    """Allocation groups (extension 1.3): every new member counts as one
    hold, checked in the transaction that writes the group."""

    def group(self, persona, count):
        return self.call(persona, 'POST', '/v1/allocation_groups', {
            'members': {uuidutils.generate_uuid(): {'resource_class': 'gold'}
                        for _ in range(count)}}, 'ironic-alloc 1.3')

    def groups(self):
        with sqla_api.get_engine().connect() as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(
                models.AllocationGroup.__table__)).scalar()

    def test_members_count_as_holds(self):
        self.config(project_holds=3, group='limits')
        self.nodes(5)
        status, first = self.allocate('owner_member')
        self.assertEqual(201, status, first)
        # One hold plus three members would be four: nothing is written,
        # and the message tells the holds in use from those asked for.
        status, doc = self.group('owner_member', 3)
        self.assertGroupLimited(status, doc, 'baremetal_holds', 3, 1, 3)
        self.assertEqual((1, 0), (self.holds(), self.groups()))
        status, doc = self.group('owner_member', 2)
        self.assertEqual(201, status, doc)
        self.assertEqual((3, 1), (self.holds(), self.groups()))
        status, doc = self.group('owner_member', 1)
        self.assertGroupLimited(status, doc, 'baremetal_holds', 3, 3, 1)
        # Exempt callers are not limited.
        status, doc = self.group('system_admin', 1)
        self.assertEqual(201, status, doc)

    def test_per_resource_class_message(self):
        self.config(project_holds_per_resource_class={'gold': 2},
                    group='limits')
        self.nodes(4)
        status, first = self.allocate('owner_member')
        self.assertEqual(201, status, first)
        status, doc = self.group('owner_member', 2)
        self.assertGroupLimited(status, doc, 'baremetal_holds:gold', 2, 1, 2)
        self.assertEqual((1, 0), (self.holds(), self.groups()))
        status, doc = self.group('owner_member', 1)
        self.assertEqual(201, status, doc)
