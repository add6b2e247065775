"""Gabbi fixtures: the real WSGI app on a real database, plus a conductor.

Requests go through httpx's WSGI transport (no sockets); RPC between the
API and the in-process conductor goes through oslo.messaging's fake://
transport.
"""

import datetime
import os

from gabbi import fixture
from oslo_config import fixture as config_fixture
from oslo_utils import uuidutils
import sqlalchemy as sa

from ironic_alloc.api import app as api_app
from ironic_alloc.api import hooks
from ironic_alloc.common import context as ia_context
from ironic_alloc.common import states
from ironic_alloc.conf import CONF
from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.db.sqlalchemy import models
from ironic_alloc import objects
from ironic_alloc.tests import base
from ironic_alloc.tests.functional import fixtures as ia_fixtures


class LazyApp:
    """The WSGI app, built at the first request.

    NOTE: gabbi asks for the intercepted app before the fixtures start,
    i.e. before the configuration and the database exist.
    """

    def __init__(self):
        self._app = None

    def __call__(self, environ, start_response):
        if self._app is None:
            self._app = api_app.setup_app()
        return self._app(environ, start_response)


def setup_app():
    return LazyApp()


class APIFixture(fixture.GabbiFixture):
    """Configuration, an empty database and UUIDs in the environment.

    No conductor runs: node creation and reads work, node updates and
    actions answer 503.
    """

    def start_fixture(self):
        base._parse_conf_once()
        self._cleanups = []
        self._use(config_fixture.Config(CONF))
        CONF.set_override('auth_strategy', 'noauth')
        CONF.set_override('host', 'test-api')
        # NOTE: the RPC transport is built once per process by the first
        # request; without a conductor it must still be the in-process
        # one, or a later ConductorFixture in this worker would inherit a
        # RabbitMQ transport that retries forever.
        CONF.set_override('transport_url', 'fake://')
        self._use(base.Database())
        hooks.reset_rpcapi()
        for name in ('NODE_UUID', 'NODE2_UUID', 'INSTANCE_UUID',
                     'MISSING_UUID', 'CHASSIS_UUID', 'CHASSIS2_UUID'):
            os.environ[name] = uuidutils.generate_uuid()

    def _use(self, fix):
        fix.setUp()
        self._cleanups.append(fix.cleanUp)
        return fix

    def stop_fixture(self):
        while self._cleanups:
            self._cleanups.pop()()
        hooks.reset_rpcapi()


class ConductorFixture(APIFixture):
    """APIFixture plus a live conductor named ``test-conductor``."""

    def start_fixture(self):
        super().start_fixture()
        self._use(ia_fixtures.ConductorFixture(host='test-conductor'))
        hooks.reset_rpcapi()


def _make_node(**values):
    """A node written through objects, bypassing the API's rules (to give
    it a state or a fault the API cannot set)."""
    fields = dict(driver='fake-hardware', provision_state=states.ENROLL,
                  maintenance=False, protected=False, retired=False,
                  console_enabled=False, conductor_group='', traits=[],
                  properties={}, extra={}, driver_info={}, instance_info={},
                  driver_internal_info={})
    fields.update(values)
    node = objects.Node(ia_context.get_admin_context(), **fields)
    node.create()
    return node


class NodeListFixture(APIFixture):
    """APIFixture plus five nodes covering every list filter, and
    [api]max_limit = 3.

    ======== ====== ========== ===== ============= ===== ====== ======= ===
    name     class  state      maint fault         owner lessee group   ret
    ======== ====== ========== ===== ============= ===== ====== ======= ===
    gold-1   gold   available  no                  p1                   no
    gold-2   gold   active     no                  p1    p2             no
    silver-1 silver available  no                  p1                   no
    gold-3   gold   available  yes   power failure p2           group-a no
    gold-4   gold   manageable no                        p1     group-a yes
    ======== ====== ========== ===== ============= ===== ====== ======= ===

    gold-2 has instance INSTANCE_UUID; gold-4 has driver other-hardware.
    Descriptions: gold-1 "100% tested", gold-2 "rack_2", silver-1
    "100 percent", gold-3 "rack 3", gold-4 none.
    """

    def start_fixture(self):
        super().start_fixture()
        CONF.set_override('max_limit', 3, group='api')
        common = dict(power_state=states.POWER_OFF)
        _make_node(name='gold-1', resource_class='gold', owner='p1',
                   provision_state=states.AVAILABLE,
                   description='100% tested', **common)
        _make_node(name='gold-2', resource_class='gold', owner='p1',
                   lessee='p2', provision_state=states.ACTIVE,
                   instance_uuid=os.environ['INSTANCE_UUID'],
                   description='rack_2', **common)
        _make_node(name='silver-1', resource_class='silver', owner='p1',
                   provision_state=states.AVAILABLE,
                   description='100 percent', **common)
        _make_node(name='gold-3', resource_class='gold', owner='p2',
                   provision_state=states.AVAILABLE, maintenance=True,
                   fault='power failure', conductor_group='group-a',
                   description='rack 3', **common)
        _make_node(name='gold-4', resource_class='gold', lessee='p1',
                   provision_state=states.MANAGEABLE, retired=True,
                   conductor_group='group-a', driver='other-hardware',
                   **common)


class LockedNodeFixture(ConductorFixture):
    """ConductorFixture plus node ``locked-node`` (LOCKED_NODE_UUID),
    available, whose lock is held by the live conductor as if an action
    were running on it."""

    def start_fixture(self):
        super().start_fixture()
        # NOTE: the lock is never released: the conductor's retries run
        # back to back, so that each refusal does not wait for nothing.
        CONF.set_override('node_locked_retry_interval', 0,
                          group='conductor')
        os.environ['LOCKED_NODE_UUID'] = uuidutils.generate_uuid()
        _make_node(uuid=os.environ['LOCKED_NODE_UUID'], name='locked-node',
                   resource_class='gold', provision_state=states.AVAILABLE,
                   power_state=states.POWER_OFF,
                   reservation='test-conductor')


class StaleConductorFixture(ConductorFixture):
    """ConductorFixture plus conductor ``stale-conductor`` whose last
    heartbeat is an hour old (registered, then aged by direct SQL)."""

    def start_fixture(self):
        super().start_fixture()
        stale = objects.Conductor.register(ia_context.get_admin_context(),
                                           'stale-conductor', 'group-b')
        engine = sqla_api.get_engine()
        with engine.begin() as conn:
            conn.execute(
                sa.update(models.Conductor.__table__)
                .where(models.Conductor.__table__.c.id == stale.id)
                .values(heartbeat_at=datetime.datetime(2020, 1, 1)))


class SmallLimitsFixture(ConductorFixture):
    """ConductorFixture with small input limits, so that a test can reach
    each one with a short body: 2048-byte bodies, JSON depth 5, 3 traits,
    2 candidate nodes."""

    def start_fixture(self):
        super().start_fixture()
        CONF.set_override('max_request_body_size', 2048, group='api')
        CONF.set_override('max_json_depth', 5, group='api')
        CONF.set_override('max_traits', 3, group='api')
        CONF.set_override('max_candidate_nodes', 2, group='api')
