"""Bare Metal API endpoints this service does not offer.

One rule for all of them:

* reading a list of objects that no node can have here (ports,
  portgroups, VIFs, volume connectors and targets) answers 200 with an
  empty list, so clients that enumerate them while provisioning
  (metalsmith, openstacksdk) keep working; reading one such object by id
  answers 404;
* anything else (creating, changing or deleting those objects, and every
  endpoint that needs hardware or a feature absent here: BIOS, firmware,
  management, console, vendor passthru, RAID, events, deploy templates,
  runbooks...) answers 400 with a message naming the feature
  (exception.UnsupportedFeature).
"""

import pecan

from ironic_alloc import api
from ironic_alloc.api.controllers import link
from ironic_alloc.api.controllers.v1 import utils
from ironic_alloc.common import exception

# Node sub-resources that need hardware: path -> feature named in errors.
NODE_FEATURES = {
    'management': 'Node management (boot device, NMI, indicators)',
    'vendor_passthru': 'Vendor passthru',
    'bios': 'BIOS settings',
    'firmware': 'Firmware management',
    'history': 'Node history',
    'inventory': 'Node inventory',
    'vmedia': 'Virtual media',
    'inject_nmi': 'Injecting NMI',
}

# Top-level resources absent here: path -> feature named in errors.
TOP_LEVEL_FEATURES = {
    'deploy_templates': 'Deploy templates',
    'runbooks': 'Runbooks',
    'events': 'Events',
    'lookup': 'Ramdisk lookup',
    'heartbeat': 'Ramdisk heartbeat',
    'continue_inspection': 'Inspection',
    'inspection_rules': 'Inspection rules',
}


def feature_controller(feature):
    """A controller class answering 400 "not supported" on every path."""

    class UnsupportedFeatureController:
        # NOTE: ``name`` refines the feature per instance, so a route
        # with a variable feature needs no new class per request.
        def __init__(self, node_ident=None, name=feature):
            self.node_ident = node_ident
            self.feature = name

        @pecan.expose('json')
        def index(self, *args, **kwargs):
            raise exception.UnsupportedFeature(feature=self.feature)

        @pecan.expose('json')
        def _default(self, *args, **kwargs):
            raise exception.UnsupportedFeature(feature=self.feature)

    UnsupportedFeatureController.__name__ = 'Unsupported%s' % ''.join(
        w.capitalize() for w in feature.split()[:2])
    return UnsupportedFeatureController


class EmptyListController:
    """A collection that is always empty here (see the module doc)."""

    key = None
    """The list attribute of the collection document"""

    feature = None
    """The feature named when asked to change the collection"""

    gate = None
    """The API version check of the collection (None: every version)"""

    def __init__(self, node_ident=None):
        self.node_ident = node_ident

    def _check_version(self):
        # NOTE: as in Ironic, a collection is not found at all before the
        # version that added it, whatever the method.
        if self.gate is not None and not self.gate():
            raise exception.NotFound(
                '%s are not available in API version %s.'
                % (self.feature, api.request.version))

    def _empty(self, item=None):
        self._check_version()
        if pecan.request.method not in ('GET', 'HEAD'):
            raise exception.UnsupportedFeature(feature=self.feature)
        if self.node_ident is not None:
            utils.get_node(self.node_ident)
        if item not in (None, 'detail'):
            self._not_found(item)
        return {self.key: []}

    def _not_found(self, item):
        raise exception.NotFound('%s %s could not be found.'
                                 % (self.feature, item))

    @pecan.expose('json')
    def index(self, **kwargs):
        return self._empty()

    @pecan.expose('json')
    def _default(self, item, *remainder, **kwargs):
        return self._empty(item if not remainder else item + '/')


class PortsController(EmptyListController):
    key = 'ports'
    feature = 'Ports'

    def _not_found(self, item):
        raise exception.PortNotFound(port=item)


class PortgroupsController(EmptyListController):
    key = 'portgroups'
    feature = 'Portgroups'
    gate = staticmethod(utils.allow_portgroups)


class VifsController(EmptyListController):
    key = 'vifs'
    feature = 'Attaching VIFs'


class VolumeConnectorsController(EmptyListController):
    key = 'connectors'
    feature = 'Volume connectors'
    gate = staticmethod(utils.allow_volume)


class VolumeTargetsController(EmptyListController):
    key = 'targets'
    feature = 'Volume targets'
    gate = staticmethod(utils.allow_volume)


class VolumeController:
    """/v1/volume and /v1/nodes/{node}/volume: empty connectors/targets."""

    def __init__(self, node_ident=None):
        self.connectors = VolumeConnectorsController(node_ident)
        self.targets = VolumeTargetsController(node_ident)
        self.node_ident = node_ident

    @pecan.expose('json')
    def index(self, **kwargs):
        if not utils.allow_volume():
            raise exception.NotFound(
                'Volume is not available in API version %s.'
                % api.request.version)
        if pecan.request.method not in ('GET', 'HEAD'):
            raise exception.UnsupportedFeature(feature='Volume')
        base = 'volume'
        if self.node_ident is not None:
            utils.get_node(self.node_ident)
            base = 'nodes/%s/volume' % self.node_ident
        doc = {name: [dict(href=lk.href, rel=lk.rel)
                      for lk in link.make_links(base, name)]
               for name in ('connectors', 'targets')}
        doc['links'] = [dict(href=lk.href, rel=lk.rel)
                        for lk in link.make_links(base, '')]
        return doc


NodePortsController = PortsController
NodePortgroupsController = PortgroupsController
NodeVifsController = VifsController
NodeVolumeController = VolumeController
