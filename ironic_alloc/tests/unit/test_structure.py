"""Tests of the code's structure rather than its behaviour.

* The import layering rule of doc/source/contributor/architecture.rst
  ("Layers"), checked by parsing the imports (``ast``) of every module of
  each package.
* Nothing under ironic_alloc, its tests included, imports the developer
  tools of the repository (``tools``).
* Only the backend package asks which allocation backend runs.
* No entry point monkey-patches the standard library: ironic_alloc runs on
  native threads, and eventlet (still installed by oslo.service) must stay
  inert.
* Only common/compat.py uses private parts of libraries.
"""

import ast
import inspect
import json
import os
import subprocess
import sys

import fixtures

from ironic_alloc.tests import base

PACKAGE = 'ironic_alloc'
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _module_name(path):
    rel = os.path.relpath(path, os.path.dirname(PACKAGE_DIR))
    parts = rel[:-len('.py')].split(os.sep)
    if parts[-1] == '__init__':
        parts.pop()
    return '.'.join(parts)


def _is_module(name):
    """True when ``name`` is a module or package of ironic_alloc."""
    parts = name.split('.')
    if parts[0] != PACKAGE:
        return False
    path = os.path.join(os.path.dirname(PACKAGE_DIR), *parts)
    return os.path.isfile(path + '.py') or os.path.isfile(
        os.path.join(path, '__init__.py'))


def _resolve_from(path, node):
    """The absolute module named by ``from X import ...`` in ``path``."""
    if not node.level:
        return node.module
    package = _module_name(path).split('.')
    if os.path.basename(path) != '__init__.py':
        package.pop()
    if node.level > 1:
        package = package[:-(node.level - 1)]
    return '.'.join(package + ([node.module] if node.module else []))


def imported_modules(path):
    """Every module imported anywhere in the file at ``path``.

    ``from a.b import c`` counts as ``a.b.c`` when that is one of our
    modules and as ``a.b`` otherwise; ``__import__('x')`` and
    ``importlib.import_module('x')`` with a literal name count too.
    """
    with open(path) as f:
        tree = ast.parse(f.read(), filename=path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _resolve_from(path, node)
            for alias in node.names:
                candidate = '%s.%s' % (source, alias.name)
                found.add(candidate if _is_module(candidate) else source)
        elif (isinstance(node, ast.Call) and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            func = node.func
            name = (func.id if isinstance(func, ast.Name) else
                    func.attr if isinstance(func, ast.Attribute) else None)
            if name in ('__import__', 'import_module'):
                found.add(node.args[0].value)
    return found


def package_modules(tests=False):
    """{module name: path} of ironic_alloc, tests excluded unless
    ``tests``."""
    skipped = ('__pycache__',) if tests else ('tests', '__pycache__')
    modules = {}
    for root, dirs, files in os.walk(PACKAGE_DIR):
        dirs[:] = [d for d in dirs if d not in skipped]
        for name in files:
            if name.endswith('.py'):
                path = os.path.join(root, name)
                modules[_module_name(path)] = path
    return modules


def _within(name, prefix):
    return name == prefix or name.startswith(prefix + '.')


# Modules of the conductor package that are RPC plumbing, not domain code:
# they may use oslo.messaging.
_CONDUCTOR_RPC_MODULES = ('ironic_alloc.conductor.rpcapi',
                          'ironic_alloc.conductor.manager',
                          'ironic_alloc.conductor.service')

# architecture.rst, "Layers": what each layer must not import: (rule,
# applies to module?, forbidden import?).  Each callable takes a module
# name.
LAYERING_RULES = [
    ('api/ imports conductor.rpcapi only, never conductor.manager or '
     'domain modules',
     lambda m: _within(m, 'ironic_alloc.api'),
     lambda i: (_within(i, 'ironic_alloc.conductor')
                and i not in ('ironic_alloc.conductor',
                              'ironic_alloc.conductor.rpcapi'))),
    ('api/ must not import db.*',
     lambda m: _within(m, 'ironic_alloc.api'),
     lambda i: _within(i, 'ironic_alloc.db')),
    ('conductor/rpcapi.py must not import api or conductor.manager',
     lambda m: m == 'ironic_alloc.conductor.rpcapi',
     lambda i: (_within(i, 'ironic_alloc.api')
                or _within(i, 'ironic_alloc.conductor.manager'))),
    ('conductor/ must not import api',
     lambda m: _within(m, 'ironic_alloc.conductor'),
     lambda i: _within(i, 'ironic_alloc.api')),
    ('conductor domain modules must not import oslo_messaging',
     lambda m: (_within(m, 'ironic_alloc.conductor')
                and m != 'ironic_alloc.conductor'
                and m not in _CONDUCTOR_RPC_MODULES),
     lambda i: _within(i, 'oslo_messaging')),
    ('objects/ must not import api or conductor',
     lambda m: _within(m, 'ironic_alloc.objects'),
     lambda i: (_within(i, 'ironic_alloc.api')
                or _within(i, 'ironic_alloc.conductor'))),
    ('db/ must not import api, conductor or objects',
     lambda m: _within(m, 'ironic_alloc.db'),
     lambda i: any(_within(i, p) for p in (
         'ironic_alloc.api', 'ironic_alloc.conductor',
         'ironic_alloc.objects'))),
    # NOTE: states, picking, matching and lease_time are constants and
    # pure functions, so they are as safe as exception; compat imports
    # nothing of ironic_alloc, metrics nothing but the logging.
    ('db/ imports only common.exception, common.states, common.picking, '
     'common.matching, common.lease_time, common.metrics and '
     'common.compat from common',
     lambda m: _within(m, 'ironic_alloc.db'),
     lambda i: (_within(i, 'ironic_alloc.common')
                and i not in ('ironic_alloc.common',
                              'ironic_alloc.common.compat',
                              'ironic_alloc.common.exception',
                              'ironic_alloc.common.lease_time',
                              'ironic_alloc.common.matching',
                              'ironic_alloc.common.metrics',
                              'ironic_alloc.common.picking',
                              'ironic_alloc.common.states'))),
    ('common/compat.py imports nothing of ironic_alloc',
     lambda m: m == 'ironic_alloc.common.compat',
     lambda i: _within(i, 'ironic_alloc')),
    # NOTE: the OSC plugin is installed next to pinned client tools
    # without the service's requirements (tools/setup-client-venv.sh).
    ('cli/ imports nothing of ironic_alloc outside cli',
     lambda m: _within(m, 'ironic_alloc.cli'),
     lambda i: (_within(i, 'ironic_alloc')
                and not _within(i, 'ironic_alloc.cli'))),
    ('common/ must not import api, conductor or objects',
     lambda m: _within(m, 'ironic_alloc.common'),
     lambda i: any(_within(i, p) for p in (
         'ironic_alloc.api', 'ironic_alloc.conductor',
         'ironic_alloc.objects'))),
]

# NOTE: existing back-edges, each to be removed together with its entry
# (test_known_violations_still_exist fails when an entry is stale).
# Ironic's own pattern avoids both: common/rpc.py takes the object
# serializer as an argument from its callers, and object registration
# happens in the entry points.
KNOWN_VIOLATIONS = {
    ('ironic_alloc.common.rpc', 'ironic_alloc.objects.base'),
    ('ironic_alloc.common.service', 'ironic_alloc.objects'),
}


def layering_violations():
    """[(rule, module, imported module)] for every broken rule."""
    found = []
    for module, path in sorted(package_modules().items()):
        imports = imported_modules(path)
        for rule, applies, forbidden in LAYERING_RULES:
            if not applies(module):
                continue
            for imported in sorted(imports):
                if forbidden(imported):
                    found.append((rule, module, imported))
    return found


class TestLayering(base.TestCase):

    def test_import_parsing(self):
        # The parser sees what the rules need: relative and absolute
        # from-imports of modules and of names, and literal __import__.
        imports = imported_modules(os.path.join(PACKAGE_DIR, 'objects',
                                                '__init__.py'))
        self.assertIn('ironic_alloc.objects.node', imports)
        imports = imported_modules(os.path.join(PACKAGE_DIR, 'db', 'api.py'))
        self.assertIn('ironic_alloc.conf', imports)
        self.assertIn('oslo_db', imports)

    def test_rules_cover_every_layer(self):
        modules = package_modules()
        for layer in ('api', 'conductor', 'objects', 'db', 'common', 'cli'):
            prefix = 'ironic_alloc.%s' % layer
            covered = [m for m in modules if _within(m, prefix)
                       and any(applies(m) for _, applies, _ in
                               LAYERING_RULES)]
            if any(_within(m, prefix) for m in modules):
                self.assertTrue(covered, layer)

    def test_layering(self):
        violations = [v for v in layering_violations()
                      if (v[1], v[2]) not in KNOWN_VIOLATIONS]
        self.assertEqual(
            [], violations,
            'Imports that break the layering rule of '
            'doc/source/contributor/architecture.rst '
            '(rule, module, imported module):\n%s' % '\n'.join(
                '  %s: %s imports %s' % v for v in violations))

    def test_known_violations_still_exist(self):
        current = {(m, i) for _, m, i in layering_violations()}
        stale = KNOWN_VIOLATIONS - current
        self.assertEqual(set(), stale,
                         'Fixed layering violations: remove them from '
                         'KNOWN_VIOLATIONS in %s' % __file__)


# Entry points whose import must leave the standard library unpatched.
# The WSGI application and the conductor must exist; any other module of
# ironic_alloc/cmd and ironic_alloc/wsgi is checked as soon as it exists.
REQUIRED_ENTRY_MODULES = ('ironic_alloc.wsgi.api',
                          'ironic_alloc.cmd.conductor')
PATCHABLE = ('socket', 'thread', 'time', 'select', 'os')

_PROBE = """
import importlib
import json
import os
import sys

# NOTE: entry modules may parse sys.argv on import (the WSGI module builds
# its application); give them an empty command line.
sys.argv = [sys.argv[0]]
importlib.import_module(os.environ['IRONIC_ALLOC_PROBE_MODULE'])
from eventlet import patcher
print(json.dumps({m: patcher.is_monkey_patched(m)
                  for m in os.environ['IRONIC_ALLOC_PROBE_PATCHABLE'].split()}))
"""


def entry_modules():
    found = set(REQUIRED_ENTRY_MODULES)
    for package in ('cmd', 'wsgi'):
        directory = os.path.join(PACKAGE_DIR, package)
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            if name.endswith('.py') and name != '__init__.py':
                found.add('ironic_alloc.%s.%s' % (package, name[:-3]))
    return sorted(found)


class TestNoMonkeyPatching(base.TestCase):

    def _probe(self, module):
        """Import module in a fresh interpreter, return what is patched."""
        env = dict(os.environ, IRONIC_ALLOC_PROBE_MODULE=module,
                   IRONIC_ALLOC_PROBE_PATCHABLE=' '.join(PATCHABLE),
                   PYTHONWARNINGS='ignore')
        result = subprocess.run([sys.executable, '-c', _PROBE], env=env,
                                stdin=subprocess.DEVNULL,
                                capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            return None, result.stderr[-3000:]
        return json.loads(result.stdout.strip().splitlines()[-1]), None

    def test_required_entry_modules_exist(self):
        for module in REQUIRED_ENTRY_MODULES:
            path = os.path.join(os.path.dirname(PACKAGE_DIR),
                                *module.split('.')) + '.py'
            self.assertTrue(os.path.isfile(path),
                            '%s is missing: it is a required entry point'
                            % path)

    def test_nothing_is_monkey_patched(self):
        problems = []
        for module in entry_modules():
            patched, error = self._probe(module)
            if error is not None:
                problems.append('%s cannot be imported:\n%s'
                                % (module, error))
                continue
            for name in PATCHABLE:
                if patched[name] is not False:
                    problems.append('importing %s monkey-patched %s'
                                    % (module, name))
        self.assertEqual([], problems, '\n'.join(problems))


# Ways of asking which allocation backend runs (doc/source/contributor/
# architecture.rst, "Backends"): only conductor/backends may, the
# configuration module declares the choices.
_BACKEND_CHECKS = ('allocation.backend', 'allocation_conf.PLACEMENT',
                   'allocation_conf.DATABASE', 'placement_client',
                   '_sync_pool')


class TestBackendSeam(base.TestCase):

    def test_no_backend_check_outside_the_backend_package(self):
        found = []
        for module, path in sorted(package_modules().items()):
            if (_within(module, 'ironic_alloc.conductor.backends')
                    or module == 'ironic_alloc.conf.allocation'):
                continue
            with open(path) as f:
                source = f.read()
            found.extend('%s: %s' % (module, check)
                         for check in _BACKEND_CHECKS if check in source)
        self.assertEqual([], found, 'Only ironic_alloc.conductor.backends '
                         'may ask which allocation backend is configured')

    def test_manager_is_given_its_parts(self):
        # The RPC endpoints get the parts they use, never the service
        # object that made them (architecture.rst, "Layers").
        from ironic_alloc.conductor import manager
        self.assertNotIn('service', inspect.signature(
            manager.ConductorManager).parameters)
        path = package_modules()['ironic_alloc.conductor.manager']
        self.assertNotIn('ironic_alloc.conductor.service',
                         imported_modules(path))
        with open(path) as f:
            self.assertNotIn('self.service', f.read())


# The repository's developer tools (the benchmark, scripts): they may use
# ironic_alloc, never the other way round, so that the product and its
# tests stand without them.
TOOLS_PACKAGE = 'tools'


def tools_imports(modules):
    """[(module, imported module)] of ``modules`` ({name: path}) that
    import the tools package or anything in it."""
    return [(module, imported)
            for module, path in sorted(modules.items())
            for imported in sorted(imported_modules(path))
            if _within(imported, TOOLS_PACKAGE)]


class TestToolsApart(base.TestCase):

    def test_parser_sees_every_form_of_import(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'user.py')
        with open(path, 'w') as f:
            f.write('import tools\n'
                    'import tools.bench.cli as cli\n'
                    'from tools.bench import bulk\n'
                    'from tools import placement\n'
                    "__import__('tools.bench.floor')\n"
                    "importlib.import_module('tools.bench.sweep')\n"
                    'import toolsmith\n')
        self.assertEqual(
            [('user', 'tools'), ('user', 'tools.bench'),
             ('user', 'tools.bench.cli'), ('user', 'tools.bench.floor'),
             ('user', 'tools.bench.sweep')],
            tools_imports({'user': path}))

    def test_tests_are_walked(self):
        modules = package_modules(tests=True)
        self.assertIn('ironic_alloc.tests.unit.test_structure', modules)
        self.assertIn('ironic_alloc.api.app', modules)

    def test_nothing_in_ironic_alloc_imports_tools(self):
        found = tools_imports(package_modules(tests=True))
        self.assertEqual(
            [], found,
            'Modules of ironic_alloc (tests included) that import the '
            "repository's tools; move what they need under ironic_alloc "
            '(for tests: ironic_alloc/tests):\n%s' % '\n'.join(
                '  %s imports %s' % item for item in found))


# Libraries' private parts (doc/source/contributor/architecture.rst,
# "Libraries' private parts"): only this module may use them.
COMPAT_MODULE = 'ironic_alloc.common.compat'

# Names with a leading underscore that their library documents for users.
PUBLIC_UNDERSCORE_NAMES = frozenset([
    # Pecan: the routing hooks of controllers and RestController's table
    # of custom actions.
    '_route', '_lookup', '_default', '_custom_actions',
    # oslo.versionedobjects: an object's context, set as its documentation
    # shows in _from_db_object().
    '_context',
    # collections.namedtuple's methods; os._exit().
    '_replace', '_asdict', '_fields', '_make', '_exit',
])

# Private parts of Pecan, WSME, oslo.messaging and SQLAlchemy that
# ironic_alloc used once, or that their objects make easy to reach: refused
# outside compat.py even where a name of ours is spelled the same.
KNOWN_PRIVATE_NAMES = frozenset([
    '_getargspec', '_cfg', '_pecan', '_wsme_original_func',
    '_wsme_definition', '_driver', '_get_reply_q', '_reply_q', '_dispatch',
])

_ATTRIBUTE_FUNCTIONS = ('getattr', 'setattr', 'hasattr', 'delattr')


def _is_private(name):
    return name.startswith('_') and not name.startswith('__')


def _parse(path):
    with open(path) as f:
        return ast.parse(f.read(), filename=path)


def own_private_names(trees):
    """The underscore names ironic_alloc defines itself: functions,
    classes, module and class variables, arguments, attributes of
    ``self``/``cls``."""
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                 ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.Name) and isinstance(node.ctx,
                                                           ast.Store):
                names.add(node.id)
            elif (isinstance(node, ast.Attribute)
                    and isinstance(node.ctx, ast.Store)
                    and isinstance(node.value, ast.Name)
                    and node.value.id in ('self', 'cls')):
                names.add(node.attr)
    return {name for name in names if _is_private(name)}


def private_library_uses(tree, own_names):
    """[(line, what)] for every use of a library's private part in
    ``tree``: an import of a private module or name, an attribute, keyword
    argument or getattr() name with one leading underscore that
    ironic_alloc does not define itself (or one of KNOWN_PRIVATE_NAMES),
    and any class that replaces ``__getattribute__``."""
    found = []

    def foreign(name):
        return (_is_private(name) and name not in PUBLIC_UNDERSCORE_NAMES
                and (name in KNOWN_PRIVATE_NAMES or name not in own_names))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not _within(alias.name, PACKAGE) and any(
                        _is_private(p) for p in alias.name.split('.')):
                    found.append((node.lineno, 'import %s' % alias.name))
        elif isinstance(node, ast.ImportFrom) and not node.level:
            if _within(node.module, PACKAGE):
                continue
            parts = node.module.split('.') + [a.name for a in node.names]
            if any(_is_private(p) for p in parts):
                found.append((node.lineno, 'from %s import %s' % (
                    node.module, ', '.join(a.name for a in node.names))))
        elif isinstance(node, ast.Attribute):
            value = node.value
            on_self = isinstance(value, ast.Name) and value.id in ('self',
                                                                   'cls')
            on_super = (isinstance(value, ast.Call)
                        and isinstance(value.func, ast.Name)
                        and value.func.id == 'super')
            if foreign(node.attr) and (
                    node.attr in KNOWN_PRIVATE_NAMES
                    or not (on_self or on_super)):
                found.append((node.lineno, 'attribute .%s' % node.attr))
        elif isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg and foreign(keyword.arg):
                    found.append((node.lineno,
                                  'keyword argument %s=' % keyword.arg))
            if (isinstance(node.func, ast.Name)
                    and node.func.id in _ATTRIBUTE_FUNCTIONS
                    and len(node.args) > 1
                    and isinstance(node.args[1], ast.Constant)
                    and isinstance(node.args[1].value, str)
                    and foreign(node.args[1].value)):
                found.append((node.lineno, '%s(..., %r)' % (
                    node.func.id, node.args[1].value)))
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                targets = (
                    [item.name] if isinstance(item, ast.FunctionDef) else
                    [t.id for t in item.targets if isinstance(t, ast.Name)]
                    if isinstance(item, ast.Assign) else [])
                if '__getattribute__' in targets:
                    found.append((item.lineno, 'class %s replaces '
                                  '__getattribute__' % node.name))
    return sorted(found)


class TestNoPrivateLibraryParts(base.TestCase):

    # The uses issue 19 removed or moved into compat.py, as they were.
    ORIGINAL_USES = {
        'pecan.util._getargspec':
            'from pecan import util as pecan_util\n'
            'inspect = pecan_util._getargspec\n'
            'pecan_util._getargspec = getargspec\n',
        "pecan.util._cfg()['argspec']":
            'import pecan.util\n'
            "pecan.util._cfg(exposed)['argspec'] = argspec\n",
        "WSME's _wsme_original_func":
            'wrapper._wsme_original_func = f\n',
        "Pecan request's __getattribute__":
            'class _Request(pecan.Request):\n'
            '    __getattribute__ = object.__getattribute__\n',
        "oslo.messaging driver's _get_reply_q":
            "create = getattr(getattr(transport, '_driver', None),\n"
            "                 '_get_reply_q', None)\n",
        "SQLAlchemy pool's _dispatch":
            'engine.pool = sa.pool.QueuePool(\n'
            '    connect, pool_size=size, _dispatch=old_pool.dispatch)\n',
        "a library's private module":
            'from oslo_messaging._drivers import amqpdriver\n',
    }

    def _own_names(self):
        return own_private_names(
            _parse(path) for module, path in package_modules().items()
            if module != COMPAT_MODULE)

    def test_original_uses_are_found(self):
        own_names = self._own_names()
        for name, source in self.ORIGINAL_USES.items():
            self.assertNotEqual([], private_library_uses(
                ast.parse(source), own_names), name)

    def test_public_names_and_own_private_names_are_not_found(self):
        source = ('class Controller(rest.RestController):\n'
                  '    _custom_actions = {"x": ["GET"]}\n'
                  '    def _route(self, args, request=None):\n'
                  '        self._cache = sub._route(args, request)\n'
                  '        return super()._route(args, request)\n'
                  'transition._replace(target=x)\n'
                  'obj._context = context\n')
        self.assertEqual([], private_library_uses(ast.parse(source),
                                                  {'_cache'}))

    def test_compat_is_the_only_module_using_private_parts(self):
        own_names = self._own_names()
        found = []
        for module, path in sorted(package_modules().items()):
            if module == COMPAT_MODULE:
                continue
            found.extend('%s:%d: %s' % (module, line, what) for line, what
                         in private_library_uses(_parse(path), own_names))
        self.assertEqual(
            [], found, 'Private parts of libraries used outside %s (see '
            'doc/source/contributor/architecture.rst, "Libraries\' private '
            'parts"):\n%s' % (COMPAT_MODULE, '\n'.join(found)))

    def test_compat_uses_no_private_module_at_import(self):
        # NOTE: importing compat.py must not fail on a changed library:
        # its entries find what they use when they run.
        path = package_modules()[COMPAT_MODULE]
        imports = [n for n in ast.walk(_parse(path))
                   if isinstance(n, (ast.Import, ast.ImportFrom))]
        found = private_library_uses(ast.Module(body=imports,
                                                type_ignores=[]), set())
        self.assertEqual([], found)
