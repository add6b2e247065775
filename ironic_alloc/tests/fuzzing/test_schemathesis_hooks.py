"""Our schemathesis check refuses what it should (without a run)."""

import json
import types

from oslotest import base as oslo_base

from ironic_alloc.tests.fuzzing import schemathesis_hooks


def _answer(status, body, method='GET'):
    response = types.SimpleNamespace(
        status_code=status,
        content=body if isinstance(body, bytes) else json.dumps(
            body).encode())
    return response, types.SimpleNamespace(method=method)


def _ironic(code, faultstring='Node x could not be found.',
            debuginfo=None):
    return {'error_message': json.dumps({
        'faultcode': code, 'faultstring': faultstring,
        'debuginfo': debuginfo})}


class TestIronicErrorBody(oslo_base.BaseTestCase):

    def check(self, status, body, method='GET'):
        response, case = _answer(status, body, method)
        return schemathesis_hooks.ironic_error_body(None, response, case)

    def test_accepted(self):
        self.assertIsNone(self.check(404, _ironic('Client')))
        self.assertIsNone(self.check(503, _ironic('Server')))
        self.assertIsNone(self.check(200, {'nodes': []}))
        self.assertIsNone(self.check(404, b'', method='HEAD'))

    def test_refused(self):
        for status, body in [
                (400, {'message': 'plain'}),
                (400, b'not json'),
                (400, {'error_message': 'not json'}),
                (400, {'error_message': '[1]'}),
                (404, _ironic('Server')),
                (500, _ironic('Client')),
                (400, _ironic('Client', debuginfo='Traceback ...')),
                (400, _ironic('Client', faultstring='')),
                (500, _ironic('Server', faultstring=(
                    'oops Traceback (most recent call last):\n  File'))),
        ]:
            self.assertRaises(AssertionError, self.check, status, body)
