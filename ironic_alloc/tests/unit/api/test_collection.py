"""Next links: present only on full pages, keeping the whole query."""

import types
import urllib.parse

from wsme import types as wtypes

from ironic_alloc.api.controllers.v1 import collection
from ironic_alloc.tests.unit.api import base


def _items(*uuids):
    return [types.SimpleNamespace(uuid=u, hostname='h-' + u) for u in uuids]


class TestNextLink(base.RequestTestCase):

    def setUp(self):
        super().setUp()
        self.set_version(79)

    def _query(self, url):
        parsed = urllib.parse.urlsplit(url)
        return parsed.path, dict(urllib.parse.parse_qsl(parsed.query))

    def test_partial_page_has_no_next(self):
        self.assertIs(wtypes.Unset,
                      collection.next_link('nodes', {}, _items('a'), 2))
        self.assertIs(wtypes.Unset, collection.next_link('nodes', {}, [], 2))

    def test_full_page_keeps_every_filter(self):
        query = {'resource_class': 'gold', 'maintenance': False,
                 'fields': ['name', 'uuid'], 'sort_key': 'name',
                 'sort_dir': 'desc', 'owner': None, 'detail': None,
                 'description_contains': '100% a&b=c'}
        url = collection.next_link('nodes', query, _items('a', 'b'), 2)
        path, params = self._query(url)
        self.assertTrue(url.startswith('http://api.example.com:6385/'))
        self.assertEqual('/v1/nodes', path)
        self.assertEqual({'resource_class': 'gold', 'maintenance': 'False',
                          'fields': 'name,uuid', 'sort_key': 'name',
                          'sort_dir': 'desc', 'limit': '2', 'marker': 'b',
                          'description_contains': '100% a&b=c'}, params)

    def test_marker_attribute(self):
        url = collection.next_link('conductors', {}, _items('a'), 1,
                                   marker_attr='hostname')
        path, params = self._query(url)
        self.assertEqual('/v1/conductors', path)
        self.assertEqual('h-a', params['marker'])

    def test_sub_resource(self):
        url = collection.next_link('nodes/detail', {}, _items('a'), 1)
        self.assertEqual('/v1/nodes/detail', self._query(url)[0])
