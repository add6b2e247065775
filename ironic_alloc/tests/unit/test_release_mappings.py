"""The release mapping, the pinned serializer and the pin option."""

import os
import tempfile

from oslo_config import cfg
from oslo_utils import versionutils
from oslo_versionedobjects import base as ovo_base

from ironic_alloc.common import release_mappings
from ironic_alloc.common import service
from ironic_alloc.conductor import manager
from ironic_alloc.conductor import rpcapi
from ironic_alloc.conf import default
from ironic_alloc.objects import base as objects_base
from ironic_alloc.objects import fields
from ironic_alloc.tests import base


def _tuple(version):
    return versionutils.convert_version_to_tuple(version)


class ReleaseMappingTestCase(base.TestCase):

    def test_current_matches_the_code(self):
        current = release_mappings.RELEASE_MAPPING[release_mappings.CURRENT]
        self.assertEqual(rpcapi.RPC_API_VERSION, current['rpc'])
        self.assertEqual(manager.ConductorManager.RPC_API_VERSION,
                         current['rpc'])
        registered = {name: classes[0].VERSION for name, classes in
                      objects_base.IronicAllocObjectRegistry.obj_classes()
                      .items()}
        self.assertEqual(registered, current['objects'])

    def test_releases_are_not_newer_than_current(self):
        current = release_mappings.RELEASE_MAPPING[release_mappings.CURRENT]
        for name, release in release_mappings.RELEASE_MAPPING.items():
            self.assertEqual(_tuple(current['rpc'])[0],
                             _tuple(release['rpc'])[0], name)
            self.assertLessEqual(_tuple(release['rpc']),
                                 _tuple(current['rpc']), name)
            # NOTE: an object added since (Chassis) is absent from an
            # older release; none may have been removed.
            self.assertLessEqual(set(release['objects']),
                                 set(current['objects']), name)
            for obj, version in release['objects'].items():
                self.assertLessEqual(_tuple(version),
                                     _tuple(current['objects'][obj]),
                                     '%s %s' % (name, obj))

    def test_pin(self):
        self.assertEqual('1.0', release_mappings.rpc_version_cap('2026.2'))
        self.assertEqual({'Allocation': '1.0', 'Conductor': '1.0',
                          'Node': '1.0'},
                         release_mappings.object_versions('2026.2'))
        self.assertIsNone(release_mappings.rpc_version_cap(None))
        self.assertEqual({}, release_mappings.object_versions(None))
        self.assertEqual(['2026.2'], release_mappings.PINNABLE_RELEASES)


# NOTE: register_if(False) builds the field properties without adding the
# class to the registry, which the fingerprint test reads.
@objects_base.IronicAllocObjectRegistry.register_if(False)
class _Gadget(objects_base.IronicAllocObject):
    """Serialized only.  1.1 added ``colour``."""

    VERSION = '1.1'
    fields = {'name': fields.StringField(),
              'colour': fields.StringField(nullable=True)}

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if _tuple(target_version) < (1, 1):
            primitive.pop('colour', None)


class PinnedSerializerTestCase(base.TestCase):

    def _gadget(self):
        gadget = _Gadget(name='g', colour='red')
        return gadget

    def test_backported_to_pinned_version(self):
        serializer = objects_base.IronicAllocObjectSerializer(
            {'_Gadget': '1.0'})
        primitive = serializer.serialize_entity(None, [self._gadget()])[0]
        self.assertEqual('1.0', primitive['ironic_alloc_object.version'])
        self.assertEqual({'name': 'g'},
                         primitive['ironic_alloc_object.data'])
        self.assertEqual(['name'],
                         primitive['ironic_alloc_object.changes'])

    def test_own_version_when_not_pinned(self):
        serializer = objects_base.IronicAllocObjectSerializer()
        primitive = serializer.serialize_entity(
            None, {'x': self._gadget()})['x']
        self.assertEqual('1.1', primitive['ironic_alloc_object.version'])
        self.assertEqual('red',
                         primitive['ironic_alloc_object.data']['colour'])

    def test_newer_pin_than_code_is_refused(self):
        serializer = objects_base.IronicAllocObjectSerializer(
            {'_Gadget': '1.5'})
        self.assertRaises(ovo_base.exception.InvalidTargetVersion,
                          serializer.serialize_entity, None,
                          self._gadget())


class PinOptionTestCase(base.TestCase):

    def _conf(self, value):
        conf = cfg.ConfigOpts()
        default.register_opts(conf)
        fd, path = tempfile.mkstemp(suffix='.conf')
        self.addCleanup(os.remove, path)
        with os.fdopen(fd, 'w') as f:
            f.write('[DEFAULT]\npin_release_version = %s\n' % value)
        conf(['--config-file', path])
        return conf

    def test_unknown_release_stops_start_up(self):
        conf = self._conf('2019.1')
        exc = self.assertRaises(SystemExit, service.check_release_pin, conf)
        self.assertIn('Invalid [DEFAULT]pin_release_version', str(exc))
        self.assertIn("'2019.1'", str(exc))
        self.assertIn('2026.2', str(exc))

    def test_known_release_accepted(self):
        service.check_release_pin(self._conf('2026.2'))
