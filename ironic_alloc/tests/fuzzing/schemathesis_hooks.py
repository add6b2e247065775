"""Checks of ours that schemathesis runs on every answer.

Loaded by schemathesis itself (``hooks`` in the configuration that
schemathesis_run.py writes), from this file's path.

``ironic_error_body``: an error has Ironic's body, which the description
can only call a string: ``error_message`` holds the JSON text of
``{faultcode, faultstring, debuginfo}``, faultcode is "Client" for a 4xx
and "Server" for a 5xx, debuginfo is null (the service runs without
[api]debug_tracebacks_in_api) and the faultstring carries no traceback.
"""

import json

import schemathesis

TRACEBACK_MARKER = 'Traceback (most recent call last)'


@schemathesis.check
def ironic_error_body(ctx, response, case):
    status = response.status_code
    # NOTE: an answer to HEAD has no body.
    if status < 400 or case.method.upper() == 'HEAD':
        return None
    try:
        fault = json.loads(json.loads(response.content)['error_message'])
    except (ValueError, KeyError, TypeError) as exc:
        raise AssertionError('The %d answer is not an Ironic error body '
                             '(%s): %r' % (status, exc,
                                           response.content[:500]))
    if not isinstance(fault, dict):
        raise AssertionError('error_message is not a JSON object: %r'
                             % fault)
    expected = 'Client' if status < 500 else 'Server'
    if fault.get('faultcode') != expected:
        raise AssertionError('faultcode %r in a %d answer (expected %r)'
                             % (fault.get('faultcode'), status, expected))
    if fault.get('debuginfo') is not None:
        raise AssertionError('debuginfo is not null: %r'
                             % fault.get('debuginfo'))
    faultstring = fault.get('faultstring')
    if not isinstance(faultstring, str) or not faultstring:
        raise AssertionError('faultstring is not a message: %r'
                             % faultstring)
    if TRACEBACK_MARKER in faultstring:
        raise AssertionError('faultstring carries a traceback: %r'
                             % faultstring)
    return None
