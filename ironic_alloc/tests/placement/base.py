"""Test case base of the placement tier.

One real Placement on SQLite (fixtures.Placement) serves every test of a
test process; it starts with the first test and stops when the process
exits.  Every test starts with no resource provider in it.  Tests that
need several Placement workers start one on PostgreSQL of their own
(``start_placement('postgresql')``).  Without the Placement virtualenv
(tools/setup-placement-venv.sh) the tests skip, or fail under CI=true; a
Placement that does not start always fails them.
"""

import atexit

import fixtures
from keystoneauth1 import loading as ks_loading
from testtools import content

from ironic_alloc.common import placement
from ironic_alloc.conductor.backends import placement as placement_backend
from ironic_alloc.conf import CONF
from ironic_alloc.conf import placement as placement_conf
from ironic_alloc.tests import base as ia_base
from ironic_alloc.tests.placement import fixtures as pl_fixtures

TEST_TIMEOUT = 180
# The microversion of the tests' own reads of Placement (make_reader):
# allocation candidates with required traits (1.17), as another user of
# Placement such as Nova would ask.
READER_MICROVERSION = '1.17'


class _Shared:
    placement = None
    error = None


def _cleanup():
    if _Shared.placement is not None:
        _Shared.placement.cleanup()


def backend_settings(server, **placement_opts):
    """{group: {option: value}} selecting [allocation]backend = placement
    with ``server`` (the admin_token plugin, no periodic full pass: tests
    run it themselves)."""
    # NOTE: an auth plugin's options exist once it is loaded; they must
    # be registered before they can be set.
    CONF.register_opts(ks_loading.get_auth_plugin_conf_options(
        'admin_token'), group=placement_conf.GROUP)
    settings = {'auth_type': 'admin_token', 'endpoint': server.url,
                'token': pl_fixtures.TOKEN, 'sync_interval': 0}
    settings.update(placement_opts)
    return {'allocation': {'backend': 'placement'},
            placement_conf.GROUP: settings}


def shared_placement():
    """The Placement of this test process, started at the first call.

    :returns: (the server, or None, and why it is None).
    """
    reason = pl_fixtures.missing_reason()
    if reason:
        return None, reason
    if _Shared.placement is None and _Shared.error is None:
        _Shared.placement = pl_fixtures.Placement()
        atexit.register(_cleanup)
        try:
            _Shared.placement.start()
        except (pl_fixtures.PlacementError, OSError) as exc:
            _Shared.error = 'Placement did not start: %s' % exc
    if _Shared.error is not None:
        return None, _Shared.error
    return _Shared.placement, None


class PlacementTestCase(ia_base.DbTestCase):
    """Our database (emptied per test) and a real Placement."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(TEST_TIMEOUT, gentle=True))
        reason = pl_fixtures.missing_reason()
        if reason:
            ia_base.skip_or_fail(self, reason)
        server, error = shared_placement()
        if server is None:
            self.fail(error)
        self.placement = self.use_placement(server)
        self.client = self.make_client(self.placement)
        self._empty_placement(self.client)

    def use_placement(self, server):
        status = server.process.poll()
        if status is not None:
            self.fail('Placement exited with status %s:\n%s'
                      % (status, server.logs()))
        self.addOnException(lambda exc_info: self.addDetail(
            'placement-logs', content.text_content(server.logs())))
        return server

    def start_placement(self, database):
        """A Placement of this test's own (stopped when it ends)."""
        server = pl_fixtures.Placement(database=database)
        self.addCleanup(server.cleanup)
        try:
            server.start()
        except pl_fixtures.DatabaseServerMissing as exc:
            ia_base.skip_or_fail(self, str(exc))
        except pl_fixtures.PlacementError as exc:
            self.fail('Placement on %s did not start: %s' % (database, exc))
        return self.use_placement(server)

    @staticmethod
    def make_client(server, **overrides):
        return placement_backend.new_client(server.client_conf(**overrides))

    @staticmethod
    def make_reader(server):
        """A client sending every request at READER_MICROVERSION, for
        reads the backend itself never makes."""
        return placement.PlacementClient(
            lambda method, path: READER_MICROVERSION, server.client_conf())

    @staticmethod
    def _empty_placement(client):
        providers = client.get('/resource_providers')['resource_providers']
        for provider in providers:
            usages = client.get('/resource_providers/%s/allocations'
                                % provider['uuid'])['allocations']
            for consumer in usages:
                client.delete('/allocations/%s' % consumer)
            client.delete('/resource_providers/%s' % provider['uuid'])

    # Reading Placement back

    def provider(self, uuid, client=None):
        client = client or self.client
        path = '/resource_providers/%s' % uuid
        # NOTE: four reads; a conductor may delete the provider between
        # them (tests wait for that): a 404 on any of them is "gone".
        parts = {}
        for key, suffix in (('name', ''), ('inventories', '/inventories'),
                            ('traits', '/traits'),
                            ('aggregates', '/aggregates')):
            body = client.get(path + suffix, expected=(200, 404))
            if body is None:
                return None
            parts[key] = body[key]
        parts['traits'] = sorted(parts['traits'])
        return parts

    def provider_uuids(self, client=None):
        client = client or self.client
        return {p['uuid'] for p in
                client.get('/resource_providers')['resource_providers']}
