"""The expose decorator (api/expose.py) in a Pecan application of its own:
Pecan and WSME give URL segments, query parameters and the body to the
arguments of the decorated method, and the method's unexpected errors
reach the client as a bare 500."""

import pecan
from pecan import rest
import webtest
from wsme import types as wtypes

from ironic_alloc.api import expose
from ironic_alloc.tests import base

SECRET = 'password=hunter2'


class Thing(wtypes.Base):
    name = wtypes.text
    size = int


class ThingsController(rest.RestController):

    @expose.expose(wtypes.text, wtypes.text, wtypes.text, int)
    def get_one(self, ident, fields=None, limit=10):
        """One thing."""
        return '%s|%s|%s' % (ident, fields, limit)

    @expose.expose(Thing, body=Thing, status_code=201)
    def post(self, thing):
        return Thing(name=thing.name.upper(), size=thing.size)

    @expose.expose(None, wtypes.text, status_code=204)
    def delete(self, ident):
        raise RuntimeError(SECRET)


class RootController:
    things = ThingsController()


class TestExpose(base.TestCase):

    def setUp(self):
        super().setUp()
        self.app = webtest.TestApp(pecan.make_app(RootController()))

    def test_segment_and_query_parameters_reach_the_arguments(self):
        resp = self.app.get('/things/abc?fields=name,size&limit=3')
        self.assertEqual('abc|name,size|3', resp.json)
        self.assertEqual('abc|None|10', self.app.get('/things/abc').json)

    def test_body_reaches_its_argument(self):
        resp = self.app.post_json('/things', {'name': 'x', 'size': 2})
        self.assertEqual(201, resp.status_int)
        self.assertEqual({'name': 'X', 'size': 2}, resp.json)

    def test_unknown_parameter_is_a_client_error(self):
        resp = self.app.get('/things/abc?colour=red', expect_errors=True)
        self.assertEqual(400, resp.status_int)
        self.assertIn('colour', resp.text)

    def test_unexpected_error_is_a_bare_500(self):
        resp = self.app.delete('/things/abc', expect_errors=True)
        self.assertEqual(500, resp.status_int)
        self.assertNotIn(SECRET, resp.text)
        self.assertIn('An internal error occurred', resp.text)

    def test_method_keeps_its_name_and_documentation(self):
        method = ThingsController.get_one
        self.assertEqual('get_one', method.__name__)
        self.assertEqual('One thing.', method.__doc__)
