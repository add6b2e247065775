"""Shared plumbing of the driver scripts (run with the client virtualenv).

A driver script is ``python SCRIPT SCENARIO`` with its parameters as one
JSON object on stdin (at least ``endpoint``, the service's URL, and
``timeout``, seconds for each wait).  It prints one JSON document on the
last line of stdout: what the scenario observed, or, when a client call
raised, ``{"error": ..., "observed": <what it saw until then>}`` with the
failed HTTP exchange when there was one, and exits 1.  The HTTP log of the
client libraries goes to stderr.

These scripts import only the client tools, never ironic_alloc.
"""

import json
import sys
import traceback

import openstack
from openstack import exceptions as os_exc


def connect(params, **options):
    """An openstacksdk connection to the auth-less standalone endpoint.

    :param options: more openstacksdk configuration, e.g.
        ``baremetal_status_code_retries=0`` to see a 409 at once instead of
        after openstacksdk's retries.
    """
    return openstack.connect(
        load_yaml_config=False, load_envvars=False,
        auth_type='none',
        baremetal_endpoint_override=params['endpoint'], **options)


def http_failure(exc):
    """The request and response behind an SDK HTTP error, for the report."""
    response = getattr(exc, 'response', None)
    if response is None:
        return None
    request = response.request
    body = request.body
    if isinstance(body, bytes):
        body = body.decode('utf-8', 'replace')
    return {
        'method': request.method,
        'url': request.url,
        'request_headers': {k: v for k, v in request.headers.items()
                            if k.lower().startswith('x-openstack')},
        'request_body': body,
        'status': response.status_code,
        'response_body': response.text,
    }


def exception_chain(exc):
    """The exception and its causes, innermost last."""
    chain = []
    while exc is not None and len(chain) < 5:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    return chain


def describe_error(exc):
    error = {'error': '%s: %s' % (type(exc).__name__, exc),
             'traceback': traceback.format_exc()}
    for cause in exception_chain(exc):
        if isinstance(cause, os_exc.HttpException):
            error['http'] = http_failure(cause)
            break
    return error


def run(scenarios):
    """Run the scenario named by argv[1] and print its JSON result."""
    name = sys.argv[1]
    params = json.load(sys.stdin)
    openstack.enable_logging(debug=True, http_debug=True, stream=sys.stderr)
    observed = {}
    try:
        scenarios[name](params, observed)
    except Exception as exc:
        result = describe_error(exc)
        result['observed'] = observed
        print(json.dumps(result, default=str))
        sys.exit(1)
    print(json.dumps(observed, default=str))
