"""The database layer of reservations: allocation rows of kind
'reservation' that hold their node like an allocation, written by one
guarded transaction that tries the candidate nodes in the request's
order."""

import datetime
import threading

from oslo_utils import uuidutils
import sqlalchemy as sa

from ironic_alloc.common import exception
from ironic_alloc.common import states
from ironic_alloc.db import api as db_api
from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import utils

dbapi = db_api.get_instance()

PROJECT = 'd4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4'


def _values(instance=None, owner=None):
    return {'instance_uuid': instance or uuidutils.generate_uuid(),
            'owner': owner}


class TestCreateReservation(base.DbTestCase):

    def test_answer_is_the_row_as_stored(self):
        # The new row comes from INSERT ... RETURNING where the database
        # returns rows, from a read otherwise: either way it is what every
        # later read returns, column for column.
        node = utils.make_available_node(self.context)
        row = dbapi.create_reservation(_values(owner=PROJECT), [node.uuid],
                                       ttl=300)
        stored = dbapi.get_reservation_by_uuid(row.uuid)
        for column in stored._fields:
            self.assertEqual(getattr(stored, column), getattr(row, column),
                             column)

    def test_first_reservable_node_in_order(self):
        in_maintenance = utils.make_available_node(self.context,
                                                   maintenance=True)
        deployed = utils.make_available_node(
            self.context, provision_state=states.ACTIVE)
        first = utils.make_available_node(self.context)
        second = utils.make_available_node(self.context)
        values = _values()
        before = dbapi.get_database_time()
        row = dbapi.create_reservation(
            values, [in_maintenance.uuid, deployed.uuid, first.uuid,
                     second.uuid], ttl=300)
        self.assertEqual(first.uuid, row.node_uuid)
        self.assertEqual('reservation', row.kind)
        self.assertEqual(states.ALLOCATION_ACTIVE, row.state)
        self.assertEqual(values['instance_uuid'], row.instance_uuid)
        after = dbapi.get_database_time()
        self.assertGreaterEqual(
            row.expires_at, before + datetime.timedelta(seconds=300))
        self.assertLessEqual(row.expires_at,
                             after + datetime.timedelta(seconds=301))
        self.assertEqual(0, row.expires_at.microsecond)
        node = node_obj.Node.get_by_uuid(self.context, first.uuid)
        self.assertEqual(row.id, node.allocation_id)
        self.assertEqual(values['instance_uuid'], node.instance_uuid)
        self.assertIsNone(node_obj.Node.get_by_uuid(
            self.context, second.uuid).allocation_id)
        self.assertEqual([], utils.check_invariant())

    def test_reasons_for_every_node_in_order(self):
        missing = uuidutils.generate_uuid()
        in_maintenance = utils.make_available_node(self.context,
                                                   maintenance=True)
        manageable = utils.make_available_node(
            self.context, provision_state=states.MANAGEABLE)
        retired = utils.make_available_node(self.context, retired=True)
        no_power = utils.make_available_node(self.context, power_state=None)
        with_instance = utils.make_available_node(
            self.context, instance_uuid=uuidutils.generate_uuid())
        locked = utils.make_available_node(self.context)
        dbapi.reserve_node('some-conductor', locked.id)
        reserved = utils.make_available_node(self.context)
        dbapi.create_reservation(_values(), [reserved.uuid], ttl=60)
        allocated = utils.make_available_node(self.context)
        allocation = utils.make_allocation(
            self.context, None, state=states.ALLOCATION_ACTIVE,
            node_id=allocated.id)
        allocated.allocation_id = allocation.id
        allocated.instance_uuid = allocation.uuid
        allocated.save()
        requested = [missing, in_maintenance.uuid, manageable.uuid,
                     retired.uuid, no_power.uuid, with_instance.uuid,
                     locked.uuid, reserved.uuid, allocated.uuid]
        error = self.assertRaises(exception.NoNodeReservable,
                                  dbapi.create_reservation, _values(),
                                  requested, ttl=60)
        self.assertEqual([
            {'node_uuid': missing, 'reason': 'not found'},
            {'node_uuid': in_maintenance.uuid, 'reason': 'in maintenance'},
            {'node_uuid': manageable.uuid,
             'reason': 'in provision state manageable'},
            {'node_uuid': retired.uuid, 'reason': 'retired'},
            {'node_uuid': no_power.uuid, 'reason': 'without a power state'},
            {'node_uuid': with_instance.uuid,
             'reason': 'held by an instance'},
            {'node_uuid': locked.uuid, 'reason': 'locked by a conductor'},
            {'node_uuid': reserved.uuid, 'reason': 'reserved'},
            {'node_uuid': allocated.uuid, 'reason': 'held by an allocation'},
        ], error.reasons)
        self.assertEqual(409, error.code)
        self.assertIn('%s in maintenance' % in_maintenance.uuid, str(error))
        # Nothing written: the one reservation is the earlier one.
        self.assertEqual(1, len(dbapi.get_reservation_list()))

    def test_project_reserves_only_nodes_it_owns_or_leases(self):
        foreign = utils.make_available_node(self.context, owner='other')
        leased = utils.make_available_node(self.context, owner='other',
                                           lessee=PROJECT)
        error = self.assertRaises(
            exception.NoNodeReservable, dbapi.create_reservation,
            _values(owner=PROJECT), [foreign.uuid], ttl=60,
            project=PROJECT)
        self.assertEqual([{'node_uuid': foreign.uuid,
                           'reason': 'not found'}], error.reasons)
        row = dbapi.create_reservation(_values(owner=PROJECT),
                                       [foreign.uuid, leased.uuid], ttl=60,
                                       project=PROJECT)
        self.assertEqual(leased.uuid, row.node_uuid)
        self.assertEqual(PROJECT, row.owner)

    def test_instance_of_another_node_is_a_conflict(self):
        first = utils.make_available_node(self.context)
        second = utils.make_available_node(self.context)
        values = _values()
        dbapi.create_reservation(values, [first.uuid], ttl=60)
        error = self.assertRaises(
            exception.InstanceAssociated, dbapi.create_reservation,
            _values(instance=values['instance_uuid']), [second.uuid],
            ttl=60)
        # NOTE: the node that has the instance is never named.
        self.assertEqual('Instance %s is already associated with a node.'
                         % values['instance_uuid'], str(error))
        self.assertIsNone(node_obj.Node.get_by_uuid(
            self.context, second.uuid).allocation_id)

    def test_node_taken_between_read_and_write_moves_to_the_next(self):
        first = utils.make_available_node(self.context)
        second = utils.make_available_node(self.context)
        engine = sqla_api.get_engine()
        taken = []

        def take_first_node(conn, cursor, statement, parameters, *args):
            # NOTE: a concurrent writer, simulated in the transaction of
            # the reservation itself, after its read and before its guarded
            # write of the first node: the same end state as a peer that
            # commits in between, without depending on thread timing.
            if taken or not statement.lstrip().upper().startswith(
                    'UPDATE NODES'):
                return
            taken.append(True)
            raw = conn.connection.dbapi_connection.cursor()
            raw.execute('UPDATE nodes SET maintenance = TRUE WHERE id = %d'
                        % first.id)
            raw.close()

        sa.event.listen(engine, 'before_cursor_execute', take_first_node)
        self.addCleanup(sa.event.remove, engine, 'before_cursor_execute',
                        take_first_node)
        row = dbapi.create_reservation(_values(), [first.uuid, second.uuid],
                                       ttl=60)
        self.assertEqual([True], taken)
        self.assertEqual(second.uuid, row.node_uuid)
        self.assertEqual(second.id, row.node_id)
        self.assertIsNone(node_obj.Node.get_by_uuid(
            self.context, first.uuid).allocation_id)
        self.assertEqual([], utils.check_invariant())

    def test_nothing_written_when_every_node_is_taken_meanwhile(self):
        only = utils.make_available_node(self.context)
        engine = sqla_api.get_engine()

        def take_the_node(conn, cursor, statement, parameters, *args):
            if statement.lstrip().upper().startswith('UPDATE NODES'):
                raw = conn.connection.dbapi_connection.cursor()
                raw.execute('UPDATE nodes SET maintenance = TRUE '
                            'WHERE id = %d' % only.id)
                raw.close()

        sa.event.listen(engine, 'before_cursor_execute', take_the_node)
        self.addCleanup(sa.event.remove, engine, 'before_cursor_execute',
                        take_the_node)
        exc = self.assertRaises(exception.NoNodeReservable,
                                dbapi.create_reservation, _values(),
                                [only.uuid], ttl=60)
        # NOTE: the simulated writer's change went with the rolled back
        # transaction; the reasons come from a fresh read.
        self.assertEqual([{'node_uuid': only.uuid,
                           'reason': 'reserved by a concurrent request'}],
                         exc.reasons)
        self.assertEqual([], dbapi.get_reservation_list())
        self.assertEqual([], utils.check_invariant())

    def test_concurrent_reservations_hold_each_node_once(self):
        nodes = [utils.make_available_node(self.context).uuid
                 for _ in range(3)]
        results = []
        lock = threading.Lock()

        def reserve(index):
            # Overlapping lists in different orders.
            order = nodes[index % 3:] + nodes[:index % 3]
            try:
                row = dbapi.create_reservation(_values(), order, ttl=60)
                outcome = row.node_uuid
            except exception.NoNodeReservable as exc:
                outcome = exc.reasons
            with lock:
                results.append(outcome)

        threads = [threading.Thread(target=reserve, args=(i,))
                   for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        won = [r for r in results if isinstance(r, str)]
        self.assertEqual(sorted(nodes), sorted(won))
        for refused in (r for r in results if not isinstance(r, str)):
            self.assertEqual({'reserved'}, {r['reason'] for r in refused})
        self.assertEqual([], utils.check_invariant())


class TestReservationRows(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.node = utils.make_available_node(self.context)
        self.row = dbapi.create_reservation(_values(owner=PROJECT),
                                            [self.node.uuid], ttl=60)

    def test_get(self):
        row = dbapi.get_reservation_by_uuid(self.row.uuid)
        self.assertEqual(self.node.uuid, row.node_uuid)
        self.assertEqual(self.row.instance_uuid, row.instance_uuid)
        self.assertRaises(exception.ReservationNotFound,
                          dbapi.get_reservation_by_uuid,
                          uuidutils.generate_uuid())

    def test_hidden_from_allocation_reads(self):
        self.assertRaises(exception.AllocationNotFound,
                          dbapi.get_allocation_by_uuid, self.row.uuid)
        self.assertRaises(exception.AllocationNotFound,
                          dbapi.get_allocation_with_node_uuid,
                          uuid=self.row.uuid)
        self.assertRaises(exception.AllocationNotFound,
                          dbapi.get_allocation_with_node_uuid,
                          id=self.row.id)
        self.assertEqual([], dbapi.get_allocation_list())
        self.assertEqual({}, dbapi.get_allocation_uuids([self.row.id]))
        # An allocation's uuid is no reservation either.
        allocation = utils.make_allocation(self.context, None)
        self.assertRaises(exception.ReservationNotFound,
                          dbapi.get_reservation_by_uuid, allocation.uuid)
        self.assertEqual([allocation.uuid],
                         [a.uuid for a in dbapi.get_allocation_list()])

    def test_list_filters_and_pages(self):
        other_node = utils.make_available_node(self.context)
        other = dbapi.create_reservation(_values(), [other_node.uuid],
                                         ttl=60)
        self.assertEqual([self.row.uuid, other.uuid],
                         [r.uuid for r in dbapi.get_reservation_list()])
        self.assertEqual([other.uuid], [r.uuid for r in
                                        dbapi.get_reservation_list(
                                            marker=self.row.id)])
        self.assertEqual([self.row.uuid], [r.uuid for r in
                                           dbapi.get_reservation_list(
                                               limit=1)])
        self.assertEqual([other.uuid], [r.uuid for r in
                                        dbapi.get_reservation_list(
                                            {'node_id': other_node.id})])
        self.assertEqual([self.row.uuid], [r.uuid for r in
                                           dbapi.get_reservation_list(
                                               {'instance_uuid':
                                                self.row.instance_uuid})])
        self.assertEqual([self.row.uuid], [r.uuid for r in
                                           dbapi.get_reservation_list(
                                               {'owner': PROJECT})])
        self.assertEqual(other_node.uuid,
                         dbapi.get_reservation_list(
                             {'node_id': other_node.id})[0].node_uuid)

    def test_renew(self):
        later = dbapi.get_database_time().replace(
            microsecond=0) + datetime.timedelta(hours=2)
        row = dbapi.update_reservation_expiry(self.row.id, later)
        self.assertEqual(later, row.expires_at)
        self.assertEqual(self.node.uuid, row.node_uuid)
        self.assertEqual(later,
                         dbapi.get_reservation_by_uuid(
                             self.row.uuid).expires_at)
        # Whole seconds on every database.
        row = dbapi.update_reservation_expiry(
            self.row.id, later + datetime.timedelta(microseconds=700000))
        self.assertEqual(later, row.expires_at)
        self.assertRaises(exception.ReservationNotFound,
                          dbapi.update_reservation_expiry, 0, later)

    def test_destroy_frees_the_node(self):
        uuid, node_id = dbapi.destroy_reservation(self.row.id)
        self.assertEqual((self.row.uuid, self.node.id), (uuid, node_id))
        node = node_obj.Node.get_by_uuid(self.context, self.node.uuid)
        self.assertIsNone(node.allocation_id)
        self.assertIsNone(node.instance_uuid)
        self.assertRaises(exception.ReservationNotFound,
                          dbapi.destroy_reservation, self.row.id)
        # The node can be reserved again.
        again = dbapi.create_reservation(_values(), [self.node.uuid],
                                         ttl=60)
        self.assertEqual(self.node.uuid, again.node_uuid)
        self.assertEqual([], utils.check_invariant())

    def test_destroy_refused_for_a_deployed_node(self):
        node = node_obj.Node.get_by_uuid(self.context, self.node.uuid)
        node.provision_state = states.ACTIVE
        node.save()
        self.assertRaises(exception.InvalidState,
                          dbapi.destroy_reservation, self.row.id,
                          node_states=states.UPDATE_ALLOWED_STATES)
        self.assertEqual(self.row.uuid,
                         dbapi.get_reservation_by_uuid(self.row.uuid).uuid)

    def test_destroy_does_not_touch_allocations(self):
        allocation = utils.make_allocation(self.context, None)
        self.assertRaises(exception.ReservationNotFound,
                          dbapi.destroy_reservation, allocation.id)
