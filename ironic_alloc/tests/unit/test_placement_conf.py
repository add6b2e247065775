"""[placement]: keystoneauth1's options, registered and listed for the
sample configuration file."""

import io

from oslo_config import cfg
from oslo_config import generator

from ironic_alloc.conf import CONF
from ironic_alloc.conf import opts
from ironic_alloc.conf import placement as placement_conf
from ironic_alloc.tests import base


class TestPlacementOptions(base.TestCase):

    def test_registered_with_our_defaults(self):
        self.assertEqual(30, CONF.placement.timeout)
        self.assertEqual('placement', CONF.placement.service_type)
        self.assertIsNone(CONF.placement.auth_type)

    def test_listed_for_the_generator(self):
        listed = dict(opts.list_opts())['placement']
        by_name = {opt.dest: opt for opt in listed}
        for name in ('auth_type', 'auth_section', 'timeout', 'cafile',
                     'insecure', 'service_type', 'valid_interfaces',
                     'endpoint_override', 'connect_retries',
                     'status_code_retries', 'endpoint', 'token',
                     'auth_url', 'username', 'password'):
            self.assertIn(name, by_name)
        self.assertEqual(placement_conf.DEFAULT_TIMEOUT,
                         by_name['timeout'].default)
        self.assertEqual(len(listed), len(by_name))

    def test_defaults_survive_a_configuration_reset(self):
        # ConfigOpts.clear() drops defaults changed with set_default().
        conf = cfg.ConfigOpts()
        placement_conf.register_opts(conf)
        conf([])
        conf.clear()
        conf([])
        self.assertEqual(30, conf.placement.timeout)
        self.assertEqual('placement', conf.placement.service_type)

    def test_sample_file_shows_the_section(self):
        conf = cfg.ConfigOpts()
        generator.register_cli_opts(conf)
        conf(['--namespace', 'ironic_alloc'])
        out = io.StringIO()
        generator.generate(conf, output_file=out)
        sample = out.getvalue()
        section = sample[sample.index('[placement]'):]
        self.assertIn('#timeout = 30', section)
        self.assertIn('#service_type = placement', section)
        self.assertIn('#auth_type = <None>', section)

    def test_configurations_do_not_share_settings(self):
        first = cfg.ConfigOpts()
        placement_conf.register_opts(first)
        second = cfg.ConfigOpts()
        placement_conf.register_opts(second)
        first([])
        second([])
        first.set_override('timeout', 1, group='placement')
        self.assertEqual(1, first.placement.timeout)
        self.assertEqual(30, second.placement.timeout)
