"""The shipped OpenAPI description, read for the tests, and a served app.

Used by test_openapi.py (the description matches the routes) and
test_fuzz.py (requests generated from it).
"""

import copy
import gc
import http.client
import importlib
import inspect
import json
import os
import pkgutil
import re

import fixtures
from pecan import rest
import yaml

from ironic_alloc.api import hooks
from ironic_alloc.cmd import api as api_cmd
from ironic_alloc.tests.functional import fixtures as ia_fixtures

OPENAPI_PATH = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
    'api', 'openapi.yaml')

METHODS = ('get', 'put', 'post', 'delete', 'patch', 'head', 'options')
# Paths a middleware answers instead of a controller (api/middleware/):
# unversioned, and no controller method serves them.
MIDDLEWARE_PATHS = frozenset(['/metrics'])

CONTROLLERS_PACKAGE = 'ironic_alloc.api.controllers'

# Pecan methods that only route (pick a sub-controller); the handlers they
# lead to are counted instead.
ROUTING_METHODS = ('_route', '_lookup')


def load():
    with open(OPENAPI_PATH) as f:
        return yaml.safe_load(f)


def resolve(doc, node, seen=()):
    """``node`` with every local $ref replaced by its target.

    :raises: KeyError for a $ref that does not resolve, ValueError for a
        cycle.
    """
    if isinstance(node, dict):
        if '$ref' in node:
            ref = node['$ref']
            if ref in seen:
                raise ValueError('$ref cycle through %s' % ref)
            target = doc
            for part in ref.lstrip('#/').split('/'):
                target = target[part]
            return resolve(doc, target, seen + (ref,))
        return {k: resolve(doc, v, seen) for k, v in node.items()}
    if isinstance(node, list):
        return [resolve(doc, v, seen) for v in node]
    return node


class Operation:
    """One (path, method) of the description, references resolved."""

    def __init__(self, doc, path, method):
        self.path = path
        self.method = method.upper()
        item = doc['paths'][path]
        spec = item[method]
        self.operation_id = spec.get('operationId')
        # The ironic_alloc extension feature the operation needs (served
        # only for a request with an extension version that has it).
        self.extension = spec.get('x-ironic-alloc-extension')
        params = {}
        for p in resolve(doc, item.get('parameters', [])) + resolve(
                doc, spec.get('parameters', [])):
            params[(p['in'], p['name'])] = p
        self.parameters = list(params.values())
        body = resolve(doc, spec.get('requestBody') or {})
        schema = body.get('content', {}).get('application/json', {}).get(
            'schema')
        self.body_schema = copy.deepcopy(schema)
        self.body_required = bool(body.get('required'))

    def params_in(self, location):
        return [p for p in self.parameters if p['in'] == location]

    def url(self, path_values, query=None):
        url = self.path
        for name, value in path_values.items():
            url = url.replace('{%s}' % name, value)
        if query:
            url += '?' + query
        return url

    def __repr__(self):
        return '%s %s' % (self.method, self.path)


def _any_json():
    from hypothesis import strategies as st
    return st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(
            allow_nan=False, allow_infinity=False) | st.text(max_size=20),
        lambda children: st.lists(children, max_size=3) | st.dictionaries(
            st.text(max_size=10), children, max_size=3),
        max_leaves=8)


def strategy_for(schema):
    """A Hypothesis strategy for the values ``schema`` accepts.

    Covers the JSON Schema keywords this description uses (type, also as
    a list, enum, oneOf, properties, required, additionalProperties,
    items, minItems, maxItems, minLength, maxLength, pattern, minimum);
    any other keyword is an error, so the description cannot outgrow the
    generator silently.
    """
    from hypothesis import strategies as st
    known = {'type', 'enum', 'oneOf', 'properties', 'required',
             'additionalProperties', 'items', 'minItems', 'maxItems',
             'minLength', 'maxLength', 'pattern', 'minimum', 'description'}
    unknown = set(schema) - known
    if unknown:
        raise ValueError('no generator for keywords %s' % sorted(unknown))
    if 'enum' in schema:
        return st.sampled_from(schema['enum'])
    if 'oneOf' in schema:
        return st.one_of([strategy_for(s) for s in schema['oneOf']])
    types = schema.get('type')
    if types is None:
        return _any_json()
    if isinstance(types, list):
        return st.one_of([strategy_for(dict(schema, type=t))
                          for t in types])
    if types == 'null':
        return st.none()
    if types == 'boolean':
        return st.booleans()
    if types == 'integer':
        return st.integers(min_value=schema.get('minimum'))
    if types == 'number':
        return st.floats(min_value=schema.get('minimum'), allow_nan=False,
                         allow_infinity=False)
    if types == 'string':
        if 'pattern' in schema:
            text = st.from_regex(schema['pattern'], fullmatch=True)
        else:
            text = st.text(min_size=schema.get('minLength', 0),
                           max_size=min(schema.get('maxLength', 40), 300))
        return text.filter(lambda v: schema.get('minLength', 0) <= len(v)
                           <= schema.get('maxLength', len(v)))
    if types == 'array':
        return st.lists(strategy_for(schema.get('items', {})),
                        min_size=schema.get('minItems', 0),
                        max_size=min(schema.get('maxItems', 5), 8))
    if types == 'object':
        props = schema.get('properties', {})
        required = set(schema.get('required', ()))
        fixed = st.fixed_dictionaries(
            {k: strategy_for(v) for k, v in props.items() if k in required},
            optional={k: strategy_for(v) for k, v in props.items()
                      if k not in required})
        if props or schema.get('additionalProperties') is False:
            return fixed
        return st.dictionaries(st.text(max_size=10), _any_json(),
                               max_size=4)
    raise ValueError('no generator for type %r' % types)


def operations(doc=None):
    doc = doc or load()
    return [Operation(doc, path, method)
            for path, item in doc['paths'].items()
            for method in METHODS if method in item]


def path_parameter_names(path):
    return set(re.findall(r'{([^}]+)}', path))


def controller_handlers():
    """Every (controller class, method name) Pecan can dispatch to.

    Found by importing every module of the controllers package and asking
    the garbage collector for every class defined there (also the classes
    made by factories such as unsupported.feature_controller), then
    keeping the methods Pecan exposes.  A class with subclasses among
    them is a base: its handlers are counted on the subclasses, the
    classes Pecan really instantiates.
    """
    package = importlib.import_module(CONTROLLERS_PACKAGE)
    for info in pkgutil.walk_packages(package.__path__,
                                      CONTROLLERS_PACKAGE + '.'):
        importlib.import_module(info.name)
    classes = [o for o in gc.get_objects()
               if isinstance(o, type)
               and isinstance(getattr(o, '__module__', None), str)
               and o.__module__.startswith(CONTROLLERS_PACKAGE)]
    handlers = set()
    for cls in classes:
        if any(issubclass(other, cls) and other is not cls
               for other in classes):
            continue
        for name, member in inspect.getmembers(cls):
            if (inspect.isfunction(member)
                    and getattr(member, 'exposed', False)
                    and name not in ROUTING_METHODS):
                handlers.add(handler_key(cls, name))
    return handlers


def route_words():
    """Every path segment the controllers may route by name.

    Taken from the code, not from the description: the public attribute
    names of every controller class, the names of their custom actions
    (``_custom_actions``), and the string keys of the module-level
    tables of the controllers package (sub-resources, unsupported
    features, extension endpoints...).  Probing each of them below each
    route of the description finds a route the description lacks.
    """
    package = importlib.import_module(CONTROLLERS_PACKAGE)
    words = set()
    for info in pkgutil.walk_packages(package.__path__,
                                      CONTROLLERS_PACKAGE + '.'):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if name.startswith('_'):
                continue
            if isinstance(value, dict):
                words.update(k for k in value if isinstance(k, str))
            elif _is_controller_class(value):
                words.update(getattr(value, '_custom_actions', None) or ())
                words.update(attr for attr in dir(value)
                             if not attr.startswith('_'))
    return sorted(w for w in words if re.fullmatch(r'[a-z][a-z0-9_]*', w))


def _is_controller_class(value):
    return isinstance(value, type) and (
        issubclass(value, rest.RestController)
        or any(getattr(member, 'exposed', False)
               for member in vars(value).values()))


def template_matches(template, path, prefix=False):
    """How well ``path`` (concrete) matches ``template``: the number of
    literal segments matched, or None when it does not match.

    :param prefix: also match when one of them is longer (their common
        part is compared).
    """
    t_parts = template.strip('/').split('/') if template != '/' else []
    p_parts = path.strip('/').split('/') if path != '/' else []
    if len(t_parts) != len(p_parts) and not prefix:
        return None
    literal = 0
    for t, p in zip(t_parts, p_parts):
        if t.startswith('{'):
            continue
        if t != p:
            return None
        literal += 1
    return literal


def handler_key(cls, name):
    """The class object itself and the method name.

    NOTE: not a dotted name: classes made by a factory share their
    qualified name, one per feature.
    """
    return (cls, name)


def describe_handler(key):
    cls, name = key
    return '%s.%s.%s' % (cls.__module__, cls.__name__, name)


class HandlerRecorder(fixtures.Fixture):
    """Record the controller method Pecan dispatched each request to.

    Wraps our own ConfigHook.before: Pecan runs the before hooks after
    routing, with ``state.controller`` set to the bound handler.
    """

    def _setUp(self):
        self.handlers = []
        original = hooks.ConfigHook.before

        def before(hook, state):
            controller = state.controller
            owner = getattr(controller, '__self__', None)
            if owner is not None:
                self.handlers.append(handler_key(type(owner),
                                                 controller.__name__))
            return original(hook, state)

        self.useFixture(fixtures.MonkeyPatch(
            'ironic_alloc.api.hooks.ConfigHook.before', before))


class ServedAPI(fixtures.Fixture):
    """The real WSGI app on the API's server (a real socket, port
    0) and a real conductor on the fake:// transport.  Needs the Database
    fixture and a config fixture in place."""

    def _setUp(self):
        self.conductor = self.useFixture(
            ia_fixtures.ConductorFixture(host='test-conductor'))
        hooks.reset_rpcapi()
        self.addCleanup(hooks.reset_rpcapi)
        self.server = api_cmd.build_service()
        self.server.start()
        self.addCleanup(self.server.stop)
        self._conn = None
        self.addCleanup(self.close)

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def request(self, method, url, body=None, headers=None):
        """(status, headers dict, body bytes); reconnects as needed."""
        for attempt in (1, 2):
            if self._conn is None:
                self._conn = http.client.HTTPConnection(
                    self.server.host, self.server.port, timeout=60)
            try:
                self._conn.request(method, url, body=body,
                                   headers=headers or {})
                resp = self._conn.getresponse()
                data = resp.read()
            except (http.client.HTTPException, ConnectionError):
                # NOTE: the development server speaks HTTP/1.0 and closes
                # the connection after each answer.
                self.close()
                if attempt == 2:
                    raise
                continue
            if resp.getheader('Connection', '').lower() == 'close' or \
                    resp.version == 10:
                self.close()
            return resp.status, dict(resp.getheaders()), data

    def json(self, method, url, doc=None, version='latest'):
        headers = {'X-OpenStack-Ironic-API-Version': version,
                   'Content-Type': 'application/json',
                   'Accept': 'application/json'}
        body = None if doc is None else json.dumps(doc)
        status, _headers, data = self.request(method, url, body, headers)
        return status, (json.loads(data) if data else None)
