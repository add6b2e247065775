"""The WSGI module's configuration files come from the environment."""

import testtools

from ironic_alloc.wsgi import api as wsgi_api


class ConfigFileArgsTestCase(testtools.TestCase):

    def test_unset_means_default_locations(self):
        self.assertEqual([], wsgi_api.config_file_args({}))
        self.assertEqual([], wsgi_api.config_file_args(
            {wsgi_api.CONFIG_FILE_ENV: ''}))

    def test_paths_in_order(self):
        self.assertEqual(
            ['--config-file', '/etc/ia/a.conf',
             '--config-file', '/etc/ia/b.conf'],
            wsgi_api.config_file_args(
                {wsgi_api.CONFIG_FILE_ENV: '/etc/ia/a.conf::/etc/ia/b.conf'}))
