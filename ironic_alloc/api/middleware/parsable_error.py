"""Give every error response Ironic's body.

The body of any 4xx/5xx response becomes::

    {"error_message": "<JSON text of {faultstring, faultcode, debuginfo}>"}

whatever produced it: a WSME fault (already that JSON), a Pecan/WebOb
HTTP error (JSON or text; its detail, when it has one, is the message),
or an error hook.  ``faultcode`` is "Client"
for 4xx and "Server" for 5xx.
"""

import json
import re

from oslo_log import log

LOG = log.getLogger(__name__)

_TAGS = re.compile(r'<[^>]+>')


def _faultstring_from_text(text, status):
    """The message of a non-WSME error body (WebOb JSON, HTML or text)."""
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    # NOTE: keystonemiddleware's errors nest theirs in "error".
    if isinstance(doc, dict) and isinstance(doc.get('error'), dict):
        doc = doc['error']
    # NOTE: Pecan's own JSON for an HTTP error raised while routing has
    # the detail in "description" (None when there is none).
    if isinstance(doc, dict):
        text = (doc.get('message') or doc.get('description')
                or doc.get('title') or '')
    text = _TAGS.sub(' ', text)
    # NOTE: WebOb's plain-text errors begin with the status line.
    if text.strip().startswith(status):
        text = text.strip()[len(status):]
    text = ' '.join(text.split())
    return text or status


def make_fault_body(status, text):
    """The ``error_message`` document for an error response body."""
    code = int(status.split(' ', 1)[0])
    try:
        fault = json.loads(text)
    except ValueError:
        fault = None
    # NOTE: a body that is Ironic's already (this middleware wraps
    # another one when authentication sits between them) stays as it is.
    if isinstance(fault, dict) and isinstance(fault.get('error_message'),
                                              str):
        return fault
    if not (isinstance(fault, dict) and 'faultstring' in fault):
        fault = {'faultstring': _faultstring_from_text(text, status),
                 'debuginfo': None}
    fault['faultcode'] = 'Client' if code < 500 else 'Server'
    fault.setdefault('debuginfo', None)
    return {'error_message': json.dumps(fault)}


class ParsableErrorMiddleware:
    """Replace error bodies with Ironic's parsable JSON (see module doc)."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        # NOTE: Pecan renders HTML errors unless JSON is acceptable.
        if environ.get('HTTP_ACCEPT', '*/*') in ('', '*/*'):
            environ['HTTP_ACCEPT'] = 'application/json'
        state = {}

        def replacement_start_response(status, headers, exc_info=None):
            state['status'] = status
            state['headers'] = headers
            state['exc_info'] = exc_info
            if int(status.split(' ', 1)[0]) < 400:
                return start_response(status, headers, exc_info)
            # NOTE: the body is replaced; the headers are sent with it.
            return lambda data: None

        app_iter = self.app(environ, replacement_start_response)
        if int(state['status'].split(' ', 1)[0]) < 400:
            return app_iter
        try:
            text = b''.join(app_iter).decode('utf-8', 'replace')
        finally:
            if hasattr(app_iter, 'close'):
                app_iter.close()
        body = json.dumps(make_fault_body(state['status'], text)).encode()
        headers = [(h, v) for h, v in state['headers']
                   if h.lower() not in ('content-length', 'content-type')]
        headers += [('Content-Type', 'application/json'),
                    ('Content-Length', str(len(body)))]
        start_response(state['status'], headers, state['exc_info'])
        return [body]
