"""ironic_alloc's API extensions: the tables and the gates (extensions.py).

The gates are tested on the made-up version of tests/api_extensions.py
(one above the newest real one), so they do not depend on what the real
versions add.
"""

import os
import re

from pecan import rest

from ironic_alloc.api.controllers import v1
from ironic_alloc.api.controllers.v1 import extensions
from ironic_alloc.common import exception
from ironic_alloc.tests import api_extensions
from ironic_alloc.tests.unit.api import base

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))),
    'doc', 'source', 'api', 'extensions.rst')


class _Things(rest.RestController):
    """An extension endpoint for the tests (never exposed)."""


class TestTables(base.RequestTestCase):

    def test_baseline(self):
        self.assertEqual((1, 0), (extensions.MAJOR, extensions.MIN_MINOR))
        self.assertIn(0, extensions.VERSIONS)
        self.assertNotIn(0, extensions.FEATURES.values())

    def test_versions_are_contiguous_up_to_the_maximum(self):
        self.assertEqual(
            list(range(extensions.MIN_MINOR, extensions.MAX_MINOR + 1)),
            sorted(extensions.VERSIONS))

    def test_each_version_has_one_sentence(self):
        for minor, text in extensions.VERSIONS.items():
            self.assertTrue(text.endswith('.'), minor)
            self.assertNotIn('\n', text, minor)

    def test_each_later_version_adds_a_feature(self):
        added = set(extensions.FEATURES.values())
        for minor in extensions.VERSIONS:
            if minor > extensions.MIN_MINOR:
                self.assertIn(minor, added, 'version 1.%d adds nothing'
                              % minor)
        for feature, minor in extensions.FEATURES.items():
            self.assertIn(minor, extensions.VERSIONS, feature)

    def test_fields_and_endpoints_name_known_features(self):
        self.assertEqual({'node', 'allocation'}, set(extensions.FIELDS))
        for resource, fields in extensions.FIELDS.items():
            for name, feature in fields.items():
                self.assertIn(feature, extensions.FEATURES,
                              '%s.%s' % (resource, name))
        for name, (feature, controller) in extensions.ENDPOINTS.items():
            self.assertIn(feature, extensions.FEATURES, name)
            self.assertIsInstance(controller, rest.RestController, name)

    def test_doc_table_lists_every_version(self):
        with open(DOC) as f:
            text = f.read()
        for minor, sentence in extensions.VERSIONS.items():
            self.assertIn('   * - %s\n     - %s' % (
                extensions.version_string(minor), sentence), text)
        self.assertEqual(len(extensions.VERSIONS),
                         len(re.findall(r'^   \* - 1\.\d+$', text, re.M)))


def shadowing_endpoints():
    """Extension endpoints whose name Ironic uses (or plans to), or that
    a controller of ours routes already."""
    ours = {name for name in dir(v1.Controller)
            if isinstance(getattr(v1.Controller, name),
                          rest.RestController)} | set(v1.RESOURCES)
    return sorted(name for name in extensions.ENDPOINTS
                  if name in extensions.IRONIC_RESOURCES or name in ours)


class TestEndpointNames(base.RequestTestCase):

    def test_no_endpoint_shadows_an_ironic_url(self):
        self.assertEqual([], shadowing_endpoints())

    def test_the_check_sees_a_shadowing_name(self):
        for name in ('nodes', 'shards', 'runbooks', 'inspection_rules',
                     'volume'):
            with api_extensions.TestExtension(endpoints={name: _Things()}):
                self.assertEqual([name], shadowing_endpoints())
        with api_extensions.TestExtension(
                endpoints={'alloc_things': _Things()}):
            self.assertEqual([], shadowing_endpoints())

    def test_every_route_of_ours_is_an_ironic_name(self):
        # Our own routes are Ironic's; IRONIC_RESOURCES lists them all.
        ours = {name for name in dir(v1.Controller)
                if isinstance(getattr(v1.Controller, name),
                              rest.RestController)} | set(v1.RESOURCES)
        self.assertEqual(set(), ours - extensions.IRONIC_RESOURCES)


class TestGates(base.RequestTestCase):

    def setUp(self):
        super().setUp()
        self.things = _Things()
        self.useFixture(api_extensions.TestExtension(
            fields={'node': ['description']},
            endpoints={'alloc_things': self.things}))

    def test_allow(self):
        self.set_extension_version(None)
        self.assertFalse(extensions.allow_extension(api_extensions.FEATURE))
        self.set_extension_version(api_extensions.MINOR - 1)
        self.assertFalse(extensions.allow_extension(api_extensions.FEATURE))
        self.set_extension_version(api_extensions.MINOR)
        self.assertTrue(extensions.allow_extension(api_extensions.FEATURE))

    def test_unknown_feature_is_a_programming_error(self):
        self.set_extension_version(api_extensions.MINOR)
        self.assertRaises(KeyError, extensions.allow_extension, 'nothing')

    def test_require_names_the_feature_and_the_header(self):
        self.set_extension_version(0)
        exc = self.assertRaises(exception.ExtensionVersionRequired,
                                extensions.require_extension,
                                api_extensions.FEATURE)
        self.assertIsInstance(exc, exception.Invalid)
        self.assertEqual(400, exc.code)
        self.assertIn('"%s"' % api_extensions.FEATURE, str(exc))
        self.assertIn('"OpenStack-API-Version: ironic-alloc %s"'
                      % api_extensions.VERSION, str(exc))
        self.set_extension_version(api_extensions.MINOR)
        extensions.require_extension(api_extensions.FEATURE)

    def test_fields(self):
        self.set_extension_version(None)
        self.assertEqual(['description'], extensions.hidden_fields('node'))
        self.assertEqual(sorted(extensions.FIELDS['allocation']),
                         sorted(extensions.hidden_fields('allocation')))
        extensions.check_fields('node', None)
        extensions.check_fields('node', ['uuid', 'name'])
        extensions.check_fields('allocation', ['description'])
        exc = self.assertRaises(exception.ExtensionVersionRequired,
                                extensions.check_fields, 'node',
                                ['uuid', 'description'])
        self.assertIn('The field "description" of node', str(exc))
        self.assertIn('ironic-alloc %s' % api_extensions.VERSION, str(exc))
        self.set_extension_version(api_extensions.MINOR)
        self.assertEqual([], extensions.hidden_fields('node'))
        extensions.check_fields('node', ['uuid', 'description'])

    def test_endpoint(self):
        self.set_extension_version(None)
        self.assertIsNone(extensions.endpoint('nodes'))
        self.assertEqual([], extensions.allowed_endpoints())
        exc = self.assertRaises(exception.ExtensionVersionRequired,
                                extensions.endpoint, 'alloc_things')
        self.assertIn('/v1/alloc_things', str(exc))
        self.set_extension_version(api_extensions.MINOR)
        self.assertIs(self.things, extensions.endpoint('alloc_things'))
        # The made-up version is above every real one: it has theirs too.
        self.assertEqual(sorted(extensions.ENDPOINTS),
                         sorted(extensions.allowed_endpoints()))
        self.assertIn('alloc_things', extensions.allowed_endpoints())

    def test_endpoint_is_unknown_when_disabled(self):
        self.config(enable_extensions=False, group='api')
        self.set_extension_version(api_extensions.MINOR)
        self.assertIsNone(extensions.endpoint('alloc_things'))


class TestDocument(base.RequestTestCase):

    def test_unchanged_without_a_version(self):
        self.set_extension_version(None)
        doc = {'id': 'v1'}
        self.assertEqual({'id': 'v1'}, extensions.add_document(doc))

    def test_key_with_a_version(self):
        self.set_extension_version(0)
        self.assertEqual(
            {'id': 'v1', 'ironic_alloc_extensions': {
                'min_version': '1.0',
                'max_version': extensions.version_string(
                    extensions.MAX_MINOR),
                'version': '1.0'}},
            extensions.add_document({'id': 'v1'}))

    def test_range_follows_the_table(self):
        self.useFixture(api_extensions.TestExtension())
        self.set_extension_version(0)
        doc = extensions.add_document({})
        self.assertEqual({'min_version': '1.0',
                          'max_version': api_extensions.VERSION,
                          'version': '1.0'}, doc['ironic_alloc_extensions'])
