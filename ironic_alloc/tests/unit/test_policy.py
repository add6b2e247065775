"""The policy layer: registered rules, enforcement, request contexts."""

import ast
import os
import tempfile

from oslo_policy import generator
import yaml

from ironic_alloc.common import context as ia_context
from ironic_alloc.common import exception
from ironic_alloc.common import policies
from ironic_alloc.common import policy
from ironic_alloc.tests import base

API_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'api')

# Registered rules only composed into others or read by oslo.policy
# callers other than the controllers.
BUILDING_BLOCKS = {r.name for r in policies.base.rules}


def _rule_literals_in_api():
    """Every 'baremetal:...' string literal of the API code, and of the
    node PATCH table (rules named there through a mapping)."""
    found = set()
    paths = [os.path.join(root, name)
             for root, _dirs, files in os.walk(API_DIR)
             for name in files if name.endswith('.py')]
    for path in paths:
        with open(path) as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(
                    node.value, str) and node.value.startswith(
                        'baremetal:') and '%' not in node.value:
                found.add(node.value)
    found |= set(policies.node.PATCH_RULES.values())
    return found


class RulesTestCase(base.TestCase):

    def test_every_rule_the_api_checks_is_registered(self):
        registered = {r.name for r in policies.list_rules()}
        used = _rule_literals_in_api()
        self.assertEqual(set(), used - registered)
        # The per-field read rules are composed from their field names.
        composed = {'baremetal:node:get:%s' % f for f in (
            'last_error', 'reservation', 'driver_internal_info',
            'driver_info')}
        composed |= {'baremetal:node:list', 'baremetal:node:list_all',
                     'baremetal:allocation:list',
                     'baremetal:allocation:list_all',
                     'baremetal:reservation:list',
                     'baremetal:reservation:list_all',
                     'baremetal:allocation_group:list',
                     'baremetal:allocation_group:list_all'}
        self.assertEqual(set(), registered - used - composed -
                         BUILDING_BLOCKS)

    def test_names_unique_and_scoped(self):
        names = [r.name for r in policies.list_rules()]
        self.assertEqual(len(names), len(set(names)))
        for rule in policies.list_rules():
            if rule.name.startswith('baremetal:'):
                self.assertEqual(['system', 'project'], rule.scope_types,
                                 rule.name)
                self.assertTrue(rule.operations, rule.name)

    def test_sample_lists_every_rule(self):
        with tempfile.NamedTemporaryFile(suffix='.yaml') as f:
            generator._generate_sample(['ironic_alloc'], f.name)
            text = open(f.name).read()
        # Every default is commented out: the file parses to nothing.
        self.assertIsNone(yaml.safe_load(text))
        uncommented = yaml.safe_load('\n'.join(
            line[1:] for line in text.splitlines()
            if line.startswith('#"')))
        self.assertEqual({r.name: r.check_str
                          for r in policies.list_rules()}, uncommented)


def _context(roles, project=None, system=None, domain=None):
    return ia_context.RequestContext(
        roles=roles, project_id=project, system_scope=system,
        domain_id=domain, user_id='u')


class EnforceTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.config(auth_strategy='keystone')
        policy.reset()
        self.addCleanup(policy.reset)

    def authorize(self, rule, ctx, **target):
        values = ctx.to_policy_values()
        values.update(target)
        policy.authorize(rule, values, ctx)

    def test_forbidden_names_the_rule(self):
        ctx = _context(['reader'], project='p')
        e = self.assertRaises(exception.HTTPForbidden, self.authorize,
                              'baremetal:node:get', ctx,
                              **{'node.owner': 'q'})
        self.assertEqual(403, e.code)
        self.assertIn('baremetal:node:get', str(e))
        self.authorize('baremetal:node:get', ctx, **{'node.lessee': 'p'})

    def test_system_scope(self):
        self.authorize('baremetal:node:create',
                       _context(['admin', 'member', 'reader'], system='all'))
        # The same roles on a project are not enough.
        self.assertRaises(exception.HTTPForbidden, self.authorize,
                          'baremetal:node:create',
                          _context(['admin', 'member', 'reader'],
                                   project='p'))

    def test_domain_scope_refused(self):
        self.assertRaises(exception.HTTPForbidden, self.authorize,
                          'baremetal:allocation:create',
                          _context(['admin', 'member', 'reader'],
                                   domain='d'))

    def test_policy_file_overrides(self):
        with tempfile.NamedTemporaryFile('w', suffix='.yaml',
                                         delete=False) as f:
            f.write('"baremetal:node:create": "role:member"\n')
        self.addCleanup(os.unlink, f.name)
        self.config(policy_file=f.name, group='oslo_policy')
        policy.reset()
        self.authorize('baremetal:node:create',
                       _context(['member'], project='p'))

    def test_secrets_never_shown_by_default(self):
        ctx = _context(['admin', 'member', 'reader'], system='all')
        self.assertFalse(policy.shows('show_password',
                                      ctx.to_policy_values(), ctx))
        self.config(auth_strategy='noauth')
        self.assertFalse(policy.shows('show_instance_secrets',
                                      ctx.to_policy_values(), ctx))

    def test_noauth_and_http_basic_allow_everything(self):
        for strategy in ('noauth', 'http_basic'):
            self.config(auth_strategy=strategy)
            self.authorize('baremetal:node:delete', _context([]))
            self.assertIsNone(policy.project_of(_context([], project='p')))


class ContextTestCase(base.TestCase):

    ENVIRON = {'HTTP_X_ROLES': 'reader', 'HTTP_X_PROJECT_ID': 'p',
               'HTTP_X_USER_ID': 'u', 'HTTP_X_USER': 'basic-user',
               'openstack.request_id': 'req-1'}

    def test_keystone_reads_the_auth_token_headers(self):
        self.config(auth_strategy='keystone')
        ctx = ia_context.from_request_environ(
            dict(self.ENVIRON, HTTP_OPENSTACK_SYSTEM_SCOPE='all'))
        self.assertEqual((['reader'], 'p', 'u', 'all', False, 'req-1'),
                         (ctx.roles, ctx.project_id, ctx.user_id,
                          ctx.system_scope, ctx.is_admin, ctx.request_id))

    def test_other_strategies_trust_no_identity_header(self):
        for strategy, user in (('noauth', None),
                               ('http_basic', 'basic-user')):
            self.config(auth_strategy=strategy)
            ctx = ia_context.from_request_environ(dict(self.ENVIRON))
            self.assertEqual(([], None, None, True, user, 'req-1'),
                             (ctx.roles, ctx.project_id, ctx.system_scope,
                              ctx.is_admin, ctx.user_name, ctx.request_id))
