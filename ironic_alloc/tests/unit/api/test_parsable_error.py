"""Ironic's error body, whatever produced the error."""

import json

from ironic_alloc.api import hooks
from ironic_alloc.api.middleware import parsable_error
from ironic_alloc.tests import base


def _fault(status, text):
    body = parsable_error.make_fault_body(status, text)
    return json.loads(body['error_message'])


class TestMakeFaultBody(base.TestCase):

    def test_wsme_fault_is_kept(self):
        text = json.dumps({'faultcode': 'Client', 'faultstring': 'bad',
                           'debuginfo': None})
        body = parsable_error.make_fault_body('400 Bad Request', text)
        self.assertEqual(['error_message'], list(body))
        self.assertIsInstance(body['error_message'], str)
        self.assertEqual({'faultcode': 'Client', 'faultstring': 'bad',
                          'debuginfo': None}, _fault('400 Bad Request', text))

    def test_faultcode_follows_the_status(self):
        text = json.dumps({'faultcode': 'Client', 'faultstring': 'x'})
        self.assertEqual('Server', _fault('500 Internal Server Error',
                                          text)['faultcode'])
        self.assertEqual('Server', _fault('503 Service Unavailable',
                                          text)['faultcode'])
        self.assertEqual('Client', _fault('409 Conflict', text)['faultcode'])

    def test_webob_json(self):
        text = json.dumps({'code': '404 Not Found', 'title': 'Not Found',
                           'message': 'The resource could not be found.'})
        fault = _fault('404 Not Found', text)
        self.assertEqual('The resource could not be found.',
                         fault['faultstring'])
        self.assertIsNone(fault['debuginfo'])

    def test_pecan_json_detail(self):
        text = json.dumps({'code': 405, 'title': 'Method Not Allowed',
                           'description': 'POST is not allowed here.'})
        self.assertEqual('POST is not allowed here.',
                         _fault('405 Method Not Allowed', text)['faultstring'])
        text = json.dumps({'code': 404, 'title': 'Not Found',
                           'description': None})
        self.assertEqual('Not Found',
                         _fault('404 Not Found', text)['faultstring'])

    def test_html(self):
        text = ('<html><body><h1>405 Method Not Allowed</h1>'
                'The method is not allowed.</body></html>')
        fault = _fault('405 Method Not Allowed', text)
        self.assertEqual('The method is not allowed.', fault['faultstring'])
        self.assertEqual('Client', fault['faultcode'])

    def test_empty_body(self):
        self.assertEqual('404 Not Found',
                         _fault('404 Not Found', '')['faultstring'])

    def test_keystonemiddleware_json(self):
        text = json.dumps({'error': {
            'code': 401, 'title': 'Unauthorized',
            'message': 'The request you have made requires '
                       'authentication.'}})
        self.assertEqual({'faultcode': 'Client', 'debuginfo': None,
                          'faultstring': 'The request you have made '
                                         'requires authentication.'},
                         _fault('401 Unauthorized', text))

    def test_ironic_body_is_kept(self):
        # Twice through the middleware (around authentication and around
        # Pecan): the inner body is the answer.
        inner = parsable_error.make_fault_body(
            '403 Forbidden', json.dumps({'faultcode': 'Client',
                                         'faultstring': 'rule x'}))
        self.assertEqual(inner, parsable_error.make_fault_body(
            '403 Forbidden', json.dumps(inner)))


class TestStripTraceback(base.TestCase):

    def test_remote_traceback_is_cut(self):
        text = ('Node x is locked.\nTraceback (most recent call last):\n'
                '  File "/srv/conductor.py", line 1\nNodeLocked')
        self.assertEqual('Node x is locked.', hooks.strip_traceback(text))

    def test_plain_message_is_kept(self):
        self.assertEqual('fine', hooks.strip_traceback('fine'))
        self.assertIsNone(hooks.strip_traceback(None))
