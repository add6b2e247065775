"""Drivers: /v1/drivers and /v1/drivers/{name}: the one 'fake-hardware'.

No hardware is driven, so the only hardware type is ``fake-hardware``;
its hosts are the live conductors.  Driver properties are empty; RAID
logical disk properties and vendor passthru are unsupported (400).
"""

import pecan
from pecan import rest
import wsme
from wsme import types as wtypes

from ironic_alloc import api
from ironic_alloc.api.controllers import link
from ironic_alloc.api.controllers.v1 import access
from ironic_alloc.api.controllers.v1 import conductor
from ironic_alloc.api.controllers.v1 import types
from ironic_alloc.api.controllers.v1 import unsupported
from ironic_alloc.api.controllers.v1 import utils
from ironic_alloc.api import expose
from ironic_alloc.common import exception


class Driver(wtypes.Base):
    """API representation of a driver (hardware type)."""

    name = str
    hosts = [str]
    type = str
    links = wsme.wsattr([link.Link], readonly=True)
    properties = wsme.wsattr([link.Link], readonly=True)


class DriverList(wtypes.Base):
    drivers = [Driver]


def _convert(name, hosts):
    driver = Driver(name=name, hosts=hosts)
    if utils.allow_dynamic_drivers():
        driver.type = 'dynamic'
    driver.links = link.make_links('drivers', name)
    if utils.allow_links_node_states():
        driver.properties = link.make_links('drivers', name + '/properties')
    return driver


def _hosts():
    return sorted(c.hostname for c in
                  api.request.rpcapi.list_alive_conductors(
                      api.request.context))


class DriverPropertiesController:
    """/v1/drivers/{name}/properties: no properties are required."""

    def __init__(self, name):
        self.name = name

    @pecan.expose('json')
    def index(self, **kwargs):
        # NOTE: a plain controller answers every method; only GET reads
        # the properties (405 otherwise, as Ironic's routing answers).
        if pecan.request.method not in ('GET', 'HEAD'):
            pecan.abort(405)
        # NOTE: here, not in _lookup: routing runs before the hooks that
        # build the request context.
        access.authorize('baremetal:driver:get_properties')
        return {}


# Driver sub-resources other than properties (vendor_passthru, raid...).
_DriverResourceController = unsupported.feature_controller(
    'Driver features')


class DriversController(rest.RestController):
    """REST controller for drivers."""

    @pecan.expose()
    def _lookup(self, name, *remainder):
        if not remainder:
            return
        # NOTE: as in Ironic, the version is checked before the driver:
        # RAID properties did not exist before 1.12, for any driver.
        if remainder[0] == 'raid' and not utils.allow_raid_config():
            raise exception.NotAcceptable(
                'The RAID properties of drivers need API version 1.12 or '
                'newer; this request has %s.' % api.request.version)
        if name not in conductor.DRIVERS:
            raise exception.DriverNotFound(driver_name=name)
        if remainder[0] == 'properties':
            return DriverPropertiesController(name), remainder[1:]
        return _DriverResourceController(
            name, 'Driver %s' % remainder[0]), remainder[1:]

    @expose.expose(DriverList, str, types.boolean, types.listtype)
    def get_all(self, type=None, detail=None, fields=None):
        """List drivers: 'fake-hardware' (a dynamic driver)."""
        access.authorize('baremetal:driver:get')
        if type not in (None, 'dynamic', 'classic'):
            raise exception.Invalid('"type" must be "classic" or '
                                    '"dynamic", not "%s".' % type)
        hosts = _hosts()
        drivers = [] if type == 'classic' else [
            _convert(name, hosts) for name in conductor.DRIVERS]
        return DriverList(drivers=drivers)

    @expose.expose(Driver, str, types.listtype)
    def get_one(self, name, fields=None):
        """Show one driver.  :raises: DriverNotFound (404)."""
        access.authorize('baremetal:driver:get')
        if name not in conductor.DRIVERS:
            raise exception.DriverNotFound(driver_name=name)
        return _convert(name, _hosts())
