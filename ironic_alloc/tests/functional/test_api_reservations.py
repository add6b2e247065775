"""Reservations (API extension 1.2) over HTTP.

The WSGI app served on a real socket with a real conductor: the first node
of the list that can be reserved, 409 with the reason of every node, the
400s of bad input with nothing written, listing and paging, renewal,
deletion, the hold as Ironic's API shows it (a node with an instance, no
allocation), and races of several clients on the same few nodes, against
each other and against allocations.
"""

import datetime
import http.client
import json
import random
import threading
import time
import urllib.parse

from oslo_utils import uuidutils
import sqlalchemy as sa

from ironic_alloc.common import states
from ironic_alloc.db import api as db_api
from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.db.sqlalchemy import models
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import test_api_matching

EXTENSION = 'ironic-alloc 1.2'
WIRE_FIELDS = {'uuid', 'node_uuid', 'instance_uuid', 'owner', 'expires_at',
               'created_at', 'updated_at', 'links'}

dbapi = db_api.get_instance()


def _time(text):
    return datetime.datetime.fromisoformat(text).replace(tzinfo=None)


class _ReservationTestCase(test_api_matching._ServedTestCase):

    def call(self, method, url, doc=None, extension=EXTENSION):
        return super().call(method, url, doc, extension=extension)

    def reserve(self, nodes, instance=None, **more):
        doc = dict(instance_uuid=instance or uuidutils.generate_uuid(),
                   node_uuid=list(nodes), **more)
        return self.call('POST', '/v1/reservations', doc)

    def fault(self, doc):
        return json.loads(doc['error_message'])

    def reservation_rows(self):
        with sqla_api.get_engine().connect() as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(
                models.Allocation.__table__).where(
                    models.Allocation.kind == 'reservation')).scalar()


class TestReservationsOverHTTP(_ReservationTestCase):

    def test_first_node_in_order_and_how_ironic_sees_it(self):
        maintenance = utils.make_available_node(self.context,
                                                maintenance=True)
        first = utils.make_available_node(self.context, name='first')
        second = utils.make_available_node(self.context)
        instance = uuidutils.generate_uuid()
        now = dbapi.get_database_time()
        status, doc = self.reserve(
            [maintenance.uuid, first.uuid, second.uuid], instance, ttl=120)
        self.assertEqual(201, status, doc)
        reservation = doc['reservation']
        self.assertEqual(WIRE_FIELDS, set(reservation))
        self.assertEqual(first.uuid, reservation['node_uuid'])
        self.assertEqual(instance, reservation['instance_uuid'])
        self.assertIsNone(reservation['owner'])
        expires = _time(reservation['expires_at'])
        self.assertGreaterEqual(expires, now + datetime.timedelta(
            seconds=120))
        self.assertLessEqual(expires, now + datetime.timedelta(seconds=130))
        self.assertEqual(
            ['self', 'bookmark'], [lk['rel'] for lk in reservation['links']])
        self.assertTrue(reservation['links'][0]['href'].endswith(
            '/v1/reservations/%s' % reservation['uuid']))
        # Ironic's API (no extension) sees a node with an instance.
        status, node = self.call('GET', '/v1/nodes/first', extension=None)
        self.assertEqual(instance, node['instance_uuid'])
        self.assertIsNone(node['allocation_uuid'])
        status, nodes = self.call('GET', '/v1/nodes?associated=False',
                                  extension=None)
        self.assertEqual({maintenance.uuid, second.uuid},
                         {n['uuid'] for n in nodes['nodes']})
        for extension in (None, EXTENSION):
            status, page = self.call('GET', '/v1/allocations',
                                     extension=extension)
            self.assertEqual([], page['allocations'])
            self.assertEqual(404, self.call(
                'GET', '/v1/allocations/%s' % reservation['uuid'],
                extension=extension)[0])
            self.assertEqual(404, self.call(
                'GET', '/v1/nodes/first/allocation', extension=extension)[0])
            self.assertEqual(404, self.call(
                'DELETE', '/v1/allocations/%s' % reservation['uuid'],
                extension=extension)[0])
            self.assertEqual(404, self.call(
                'PATCH', '/v1/allocations/%s' % reservation['uuid'],
                [{'op': 'add', 'path': '/extra/k', 'value': 'v'}],
                extension=extension)[0])
        # An allocation never gets the reserved node.
        status, allocation = self.call('POST', '/v1/allocations', {
            'resource_class': 'gold', 'candidate_nodes': [first.uuid]},
            extension=None)
        self.assertEqual(201, status)
        self.assertEqual('error', allocation['state'])
        # The reservation itself.
        status, shown = self.call('GET',
                                  '/v1/reservations/%s' % reservation['uuid'])
        self.assertEqual(200, status)
        self.assertEqual(reservation, shown['reservation'])
        status, shown = self.call(
            'GET', '/v1/reservations/%s?fields=node_uuid,expires_at'
            % reservation['uuid'])
        self.assertEqual({'node_uuid', 'expires_at', 'links'},
                         set(shown['reservation']))
        self.assertEqual([], utils.check_invariant())

    def test_409_names_every_node_and_its_reason(self):
        missing = uuidutils.generate_uuid()
        maintenance = utils.make_available_node(self.context,
                                                maintenance=True)
        deployed = utils.make_available_node(self.context,
                                             provision_state=states.ACTIVE)
        reserved = utils.make_available_node(self.context)
        self.assertEqual(201, self.reserve([reserved.uuid])[0])
        requested = [missing, maintenance.uuid, deployed.uuid, reserved.uuid]
        status, doc = self.reserve(requested)
        self.assertEqual(409, status, doc)
        fault = self.fault(doc)
        self.assertEqual('Client', fault['faultcode'])
        self.assertEqual([
            {'node_uuid': missing, 'reason': 'not found'},
            {'node_uuid': maintenance.uuid, 'reason': 'in maintenance'},
            {'node_uuid': deployed.uuid,
             'reason': 'in provision state active'},
            {'node_uuid': reserved.uuid, 'reason': 'reserved'},
        ], fault['reasons'])
        for reason in fault['reasons']:
            self.assertIn('%s %s' % (reason['node_uuid'], reason['reason']),
                          fault['faultstring'])
        self.assertEqual(1, self.reservation_rows())

    def test_an_instance_on_another_node_is_a_conflict(self):
        first = utils.make_available_node(self.context)
        second = utils.make_available_node(self.context)
        instance = uuidutils.generate_uuid()
        self.assertEqual(201, self.reserve([first.uuid], instance)[0])
        status, doc = self.reserve([second.uuid], instance)
        self.assertEqual(409, status)
        fault = self.fault(doc)
        # NOTE: the node that has the instance is never named.
        self.assertEqual('Instance %s is already associated with a node.'
                         % instance, fault['faultstring'])
        self.assertEqual([second.uuid],
                         [r['node_uuid'] for r in fault['reasons']])
        self.assertEqual(1, self.reservation_rows())

    def test_bad_input_is_400_and_writes_nothing(self):
        self.config(max_candidates=3, max_ttl=3600, group='reservation')
        node = utils.make_available_node(self.context).uuid
        other = utils.make_available_node(self.context).uuid
        instance = uuidutils.generate_uuid()
        many = [uuidutils.generate_uuid() for _ in range(4)]
        bodies = [
            ({'node_uuid': [node]}, 'instance_uuid is required'),
            ({'instance_uuid': 'not-a-uuid', 'node_uuid': [node]},
             'instance_uuid must be a UUID'),
            ({'instance_uuid': 42, 'node_uuid': [node]},
             'instance_uuid must be a UUID'),
            ({'instance_uuid': None, 'node_uuid': [node]},
             'instance_uuid must be a UUID'),
            ({'instance_uuid': instance}, 'non-empty list'),
            ({'instance_uuid': instance, 'node_uuid': []}, 'non-empty list'),
            ({'instance_uuid': instance, 'node_uuid': node},
             'non-empty list'),
            ({'instance_uuid': instance, 'node_uuid': [node, 'node-1']},
             'Every entry of node_uuid must be a UUID'),
            ({'instance_uuid': instance, 'node_uuid': [node, None]},
             'Every entry of node_uuid must be a UUID'),
            ({'instance_uuid': instance, 'node_uuid': [node, other, node]},
             'more than once: %s' % node),
            ({'instance_uuid': instance,
              'node_uuid': [node, node.upper()]}, 'more than once'),
            ({'instance_uuid': instance, 'node_uuid': many},
             'At most 3 node UUIDs'),
            ({'instance_uuid': instance, 'node_uuid': [node], 'ttl': 0},
             'from 1 to 3600'),
            ({'instance_uuid': instance, 'node_uuid': [node], 'ttl': -5},
             'from 1 to 3600'),
            ({'instance_uuid': instance, 'node_uuid': [node], 'ttl': 3601},
             'from 1 to 3600'),
            ({'instance_uuid': instance, 'node_uuid': [node], 'ttl': '60'},
             'whole number of seconds'),
            ({'instance_uuid': instance, 'node_uuid': [node], 'ttl': 1.5},
             'whole number of seconds'),
            ({'instance_uuid': instance, 'node_uuid': [node], 'ttl': True},
             'whole number of seconds'),
            ({'instance_uuid': instance, 'node_uuid': [node], 'ttl': None},
             'whole number of seconds'),
            ({'instance_uuid': instance, 'node_uuid': [node],
              'owner': 'someone'}, 'Unknown field(s)'),
            ({'instance_uuid': instance, 'node_uuid': [node],
              'uuid': uuidutils.generate_uuid()}, 'Unknown field(s)'),
            ([], 'is a JSON object'),
            ('text', 'is a JSON object'),
        ]
        for body, message in bodies:
            status, doc = self.call('POST', '/v1/reservations', body)
            self.assertEqual(400, status, body)
            self.assertIn(message, self.error(status, doc), body)
        self.assertEqual(0, self.reservation_rows())

    def test_gated_by_the_extension_version(self):
        node = utils.make_available_node(self.context).uuid
        doc = {'instance_uuid': uuidutils.generate_uuid(),
               'node_uuid': [node]}
        for extension in (None, 'ironic-alloc 1.1'):
            status, body = self.call('POST', '/v1/reservations', doc,
                                     extension=extension)
            self.assertEqual(400, status)
            self.assertIn('ironic-alloc 1.2', self.error(status, body))
            self.assertEqual(400, self.call('GET', '/v1/reservations',
                                            extension=extension)[0])
        self.assertEqual(0, self.reservation_rows())
        status, v1 = self.call('GET', '/v1')
        self.assertIn('reservations', v1)
        status, v1 = self.call('GET', '/v1', extension='ironic-alloc 1.1')
        self.assertNotIn('reservations', v1)

    def test_list_filters_and_pages(self):
        nodes = [utils.make_available_node(self.context, name='n%d' % i)
                 for i in range(3)]
        instance = uuidutils.generate_uuid()
        made = []
        for index, node in enumerate(nodes):
            status, doc = self.reserve([node.uuid], instance if index == 1
                                       else None)
            made.append(doc['reservation'])
        status, page = self.call('GET', '/v1/reservations')
        self.assertEqual([r['uuid'] for r in made],
                         [r['uuid'] for r in page['reservations']])
        self.assertNotIn('next', page)
        status, page = self.call('GET', '/v1/reservations?limit=2&fields=uuid')
        self.assertEqual([{'uuid': r['uuid'], 'links': r['links']}
                          for r in made[:2]], page['reservations'])
        query = urllib.parse.parse_qs(urllib.parse.urlparse(
            page['next']).query)
        self.assertEqual({'limit': ['2'], 'marker': [made[1]['uuid']],
                          'fields': ['uuid']}, query)
        status, page = self.call('GET', page['next'].split(':%d' % (
            self.api.server.port), 1)[1])
        self.assertEqual([made[2]['uuid']],
                         [r['uuid'] for r in page['reservations']])
        status, page = self.call('GET', '/v1/reservations?instance_uuid=%s'
                                 % instance)
        self.assertEqual([made[1]['uuid']],
                         [r['uuid'] for r in page['reservations']])
        status, page = self.call('GET', '/v1/reservations?node=n2')
        self.assertEqual([made[2]['uuid']],
                         [r['uuid'] for r in page['reservations']])
        status, page = self.call('GET', '/v1/reservations?node=%s&limit=1'
                                 % nodes[0].uuid)
        self.assertEqual([made[0]['uuid']],
                         [r['uuid'] for r in page['reservations']])
        self.assertIn('node=%s' % nodes[0].uuid, page['next'])
        for bad in ('instance_uuid=nope', 'node=missing', 'limit=0',
                    'fields=uuid,secret', 'limit=x'):
            status, doc = self.call('GET', '/v1/reservations?' + bad)
            self.assertEqual(400, status, bad)
        self.assertEqual(404, self.call(
            'GET', '/v1/reservations?marker=%s'
            % uuidutils.generate_uuid())[0])
        self.assertEqual(404, self.call(
            'GET', '/v1/reservations/%s' % uuidutils.generate_uuid())[0])
        self.assertEqual(404, self.call('GET', '/v1/reservations/nope')[0])
        self.assertEqual(400, self.call(
            'GET', '/v1/reservations/%s?fields=bad' % made[0]['uuid'])[0])

    def test_renewal(self):
        self.config(max_ttl=3600, group='reservation')
        node = utils.make_available_node(self.context)
        status, doc = self.reserve([node.uuid], ttl=60)
        url = '/v1/reservations/%s' % doc['reservation']['uuid']
        status, renewed = self.call(
            'PATCH', url, [{'op': 'replace', 'path': '/ttl', 'value': 3000}])
        self.assertEqual(200, status, renewed)
        now = dbapi.get_database_time()
        expires = _time(renewed['reservation']['expires_at'])
        self.assertGreater(expires, now + datetime.timedelta(seconds=2900))
        self.assertNotIn('ttl', renewed['reservation'])
        target = (now + datetime.timedelta(seconds=1800)).replace(
            microsecond=0)
        for text in (target.isoformat(), target.isoformat() + 'Z',
                     target.isoformat() + '+00:00',
                     (target + datetime.timedelta(hours=2)).isoformat()
                     + '+02:00'):
            status, renewed = self.call('PATCH', url, [
                {'op': 'replace', 'path': '/expires_at', 'value': text}])
            self.assertEqual(200, status, renewed)
            self.assertEqual(target,
                             _time(renewed['reservation']['expires_at']))
        past = (now - datetime.timedelta(seconds=5)).isoformat()
        far = (now + datetime.timedelta(seconds=3700)).isoformat()
        patches = [
            ([{'op': 'replace', 'path': '/node_uuid',
               'value': uuidutils.generate_uuid()}], 'read-only'),
            ([{'op': 'replace', 'path': '/instance_uuid',
               'value': uuidutils.generate_uuid()}], 'read-only'),
            ([{'op': 'replace', 'path': '/owner', 'value': 'x'}],
             'read-only'),
            ([{'op': 'remove', 'path': '/expires_at'}], 'always has a lease'),
            ([{'op': 'replace', 'path': '/ttl', 'value': 0}],
             'from 1 to 3600'),
            ([{'op': 'replace', 'path': '/ttl', 'value': 3601}],
             'from 1 to 3600'),
            ([{'op': 'replace', 'path': '/ttl', 'value': '60'}],
             'whole number'),
            ([{'op': 'replace', 'path': '/expires_at', 'value': past}],
             'in the future'),
            ([{'op': 'replace', 'path': '/expires_at', 'value': far}],
             'at most 3600 seconds'),
            ([{'op': 'replace', 'path': '/expires_at', 'value': 'soon'}],
             'ISO 8601'),
            ([{'op': 'replace', 'path': '/expires_at', 'value': 5}],
             'ISO 8601'),
            ([{'op': 'replace', 'path': '/ttl'}], 'needs a value'),
            ([], 'non-empty list'),
            ({'op': 'replace'}, 'non-empty list'),
            (['x'], 'Every patch operation'),
        ]
        for patch, message in patches:
            status, doc = self.call('PATCH', url, patch)
            self.assertEqual(400, status, patch)
            self.assertIn(message, self.error(status, doc), patch)
        status, shown = self.call('GET', url)
        self.assertEqual(target,
                         _time(shown['reservation']['expires_at']))
        self.assertEqual(404, self.call(
            'PATCH', '/v1/reservations/%s' % uuidutils.generate_uuid(),
            [{'op': 'replace', 'path': '/ttl', 'value': 60}])[0])

    def test_deployed_node_takes_no_lease(self):
        # NOTE: the data loss of issue 38: a renewal after the deploy
        # re-armed the lease, and its end took the instance away.
        node = utils.make_available_node(self.context, name='deployed')
        status, doc = self.reserve([node.uuid], ttl=600)
        reservation = doc['reservation']
        url = '/v1/reservations/%s' % reservation['uuid']
        status, body = self.call('PATCH', '/v1/nodes/deployed', [
            {'op': 'add', 'path': '/instance_info/reservation_uuid',
             'value': reservation['uuid']}])
        self.assertEqual(200, status, body)
        status, body = self.call('PUT', '/v1/nodes/deployed/states/'
                                 'provision', {'target': 'active'})
        self.assertEqual(202, status, body)
        deadline = time.monotonic() + 30
        while True:
            shown = dbapi.get_node_by_id(node.id)
            if shown.provision_state == states.ACTIVE and (
                    shown.reservation is None):
                break
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        self.assertIsNone(self.call('GET', url)[1]['reservation'][
            'expires_at'])
        message = ('Cannot set a lease on reservation %s: its node %s is in '
                   'provision state "active", and the hold of a deployed '
                   'node has no lease (it ends at tear-down).'
                   % (reservation['uuid'], node.uuid))
        later = (dbapi.get_database_time() + datetime.timedelta(
            seconds=300)).replace(microsecond=0).isoformat()
        for maintenance in (False, True):
            if maintenance:
                # The operator's checks of the deployed node change
                # nothing.
                status, body = self.call(
                    'PUT', '/v1/nodes/deployed/maintenance',
                    {'reason': 'checks'}, extension=None)
                self.assertEqual(202, status, body)
            for op in ({'op': 'replace', 'path': '/ttl', 'value': 60},
                       {'op': 'replace', 'path': '/expires_at',
                        'value': later}):
                status, body = self.call('PATCH', url, [op])
                self.assertEqual(409, status, (maintenance, op, body))
                self.assertEqual(message, self.error(status, body))
        status, shown = self.call('GET', url)
        self.assertIsNone(shown['reservation']['expires_at'])
        shown = dbapi.get_node_by_id(node.id)
        self.assertEqual((reservation['instance_uuid'], reservation['uuid']),
                         (shown.instance_uuid,
                          shown.instance_info.get('reservation_uuid')))
        self.assertEqual([], utils.check_invariant())

    def test_delete_frees_the_node(self):
        node = utils.make_available_node(self.context, name='freed')
        status, doc = self.reserve([node.uuid])
        url = '/v1/reservations/%s' % doc['reservation']['uuid']
        status, body = self.call('DELETE', url)
        self.assertEqual(204, status)
        self.assertIsNone(body)
        status, shown = self.call('GET', '/v1/nodes/freed', extension=None)
        self.assertIsNone(shown['instance_uuid'])
        self.assertEqual(404, self.call('GET', url)[0])
        self.assertEqual(404, self.call('DELETE', url)[0])
        self.assertEqual(201, self.reserve([node.uuid])[0])
        self.assertEqual(405, self.call('POST', url, {})[0])

    def test_node_instance_uuid_of_a_reserved_node_is_kept(self):
        node = utils.make_available_node(self.context, name='kept')
        status, doc = self.reserve([node.uuid])
        reservation = doc['reservation']
        for patch in ([{'op': 'replace', 'path': '/instance_uuid',
                        'value': uuidutils.generate_uuid()}],
                      [{'op': 'remove', 'path': '/instance_uuid'}]):
            status, body = self.call('PATCH', '/v1/nodes/kept', patch,
                                     extension=None)
            self.assertEqual(409, status, body)
            self.assertIn(reservation['uuid'], self.error(status, body))
        shown = node_obj.Node.get_by_uuid(self.context, node.uuid)
        self.assertEqual(reservation['instance_uuid'], shown.instance_uuid)
        # Other fields of the node still change.
        status, body = self.call('PATCH', '/v1/nodes/kept', [
            {'op': 'add', 'path': '/extra/k', 'value': 'v'}], extension=None)
        self.assertEqual(200, status, body)
        self.assertEqual([], utils.check_invariant())


class TestReservationRaces(_ReservationTestCase):
    """Clients on connections of their own, at the same time, on the same
    few nodes: nothing is ever held twice and the rows agree."""

    CLIENTS = 8

    def _connection(self):
        return http.client.HTTPConnection(self.api.server.host,
                                          self.api.server.port, timeout=120)

    def _post(self, conn, path, doc, extension=EXTENSION):
        headers = {'X-OpenStack-Ironic-API-Version': 'latest',
                   'Content-Type': 'application/json'}
        if extension:
            headers['OpenStack-API-Version'] = extension
        conn.request('POST', path, json.dumps(doc), headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read())

    def _race(self, work):
        start = threading.Barrier(self.CLIENTS)
        results = [None] * self.CLIENTS

        def client(index):
            conn = self._connection()
            try:
                start.wait()
                results[index] = work(index, conn)
            finally:
                conn.close()

        threads = [threading.Thread(target=client, args=(i,))
                   for i in range(self.CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return results

    def _holders(self):
        with sqla_api.get_engine().connect() as conn:
            return conn.execute(sa.select(
                models.Node.__table__.c.uuid,
                models.Node.__table__.c.allocation_id)).all()

    def test_reservations_against_reservations(self):
        nodes = [utils.make_available_node(self.context).uuid
                 for _ in range(3)]

        def work(index, conn):
            candidates = random.Random(index).sample(nodes, 2 + index % 2)
            return self._post(conn, '/v1/reservations', {
                'instance_uuid': uuidutils.generate_uuid(),
                'node_uuid': candidates})

        results = self._race(work)
        won = [doc['reservation']['node_uuid'] for status, doc in results
               if status == 201]
        refused = [json.loads(doc['error_message']) for status, doc
                   in results if status == 409]
        self.assertEqual(self.CLIENTS, len(won) + len(refused), results)
        self.assertEqual(len(won), len(set(won)))
        self.assertLessEqual(len(won), 3)
        for fault in refused:
            # Every candidate of a refused client was taken.
            self.assertEqual({'reserved'},
                             {r['reason'] for r in fault['reasons']})
            for reason in fault['reasons']:
                self.assertIn(reason['node_uuid'], won)
        self.assertEqual(len(won), self.reservation_rows())
        self.assertEqual([], utils.check_invariant())

    def test_reservations_against_allocations(self):
        nodes = [utils.make_available_node(self.context).uuid
                 for _ in range(3)]

        def work(index, conn):
            if index % 2:
                return 'allocation', self._post(
                    conn, '/v1/allocations', {'resource_class': 'gold',
                                              'candidate_nodes': nodes},
                    extension=None)
            return 'reservation', self._post(conn, '/v1/reservations', {
                'instance_uuid': uuidutils.generate_uuid(),
                'node_uuid': random.Random(index).sample(nodes, 3)})

        results = self._race(work)
        held = []
        for kind, (status, doc) in results:
            if kind == 'reservation':
                self.assertIn(status, (201, 409), doc)
                if status == 201:
                    held.append(doc['reservation']['node_uuid'])
            else:
                self.assertEqual(201, status, doc)
                self.assertIn(doc['state'], ('active', 'error'), doc)
                if doc['state'] == 'active':
                    held.append(doc['node_uuid'])
        self.assertEqual(len(held), len(set(held)), results)
        # Three nodes and more clients: every node ends up held once.
        self.assertEqual(sorted(nodes), sorted(held))
        self.assertEqual([], utils.check_invariant())
        holders = self._holders()
        self.assertEqual(3, len({h.allocation_id for h in holders}))
