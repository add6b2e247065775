"""The hooks python-openstackclient looks for in a plugin module.

OSC finds this module through the ``openstack.cli.extension`` entry point,
reads API_NAME, API_VERSION_OPTION, DEFAULT_API_VERSION and API_VERSIONS,
calls build_option_parser() while it builds its parser and make_client()
the first time a command asks for ``client_manager.baremetal_alloc``.  The
commands are the ``openstack.baremetal_alloc.v1`` entry points.

API_NAME is not "baremetal": that name belongs to python-ironicclient's
plugin, and two plugins of one name would replace each other's client.

Adding a command: its class in v1/, its entry point in pyproject.toml's
``openstack.baremetal_alloc.v1`` group (the words of the command joined
by underscores, ``baremetal_`` first; never a command python-ironicclient
has), its name in PLUGIN_COMMANDS of the clients tier's
test_osc_plugin.py, and its section in doc/source/cli/openstack-baremetal.rst.
"""

import logging

from ironic_alloc.cli import client

LOG = logging.getLogger(__name__)

API_NAME = 'baremetal_alloc'
"""The client_manager attribute and the command group (openstack.API_NAME.v1)
"""

API_VERSION_OPTION = 'os_baremetal_alloc_api_version'
"""The configuration key OSC reads for the major version of the commands.

No command line option sets it: there is a single major version, and the
extension version the commands speak is fixed by the plugin
(client.EXTENSION_VERSION).  A clouds.yaml may still name it.
"""

DEFAULT_API_VERSION = '1'

API_VERSIONS = {'1': 'ironic_alloc.cli.client.Client'}


def make_client(instance):
    """The API client of the commands, on OSC's keystoneauth session.

    :param instance: OSC's ClientManager.
    """
    endpoint = instance.get_endpoint_for_service_type(
        client.SERVICE_TYPE, region_name=instance.region_name,
        interface=instance.interface)
    LOG.debug('ironic_alloc API endpoint: %s', endpoint)
    return client.Client(instance.session, endpoint,
                         region_name=instance.region_name,
                         interface=instance.interface)


def build_option_parser(parser):
    """OSC's hook for global options: the plugin adds none.

    The endpoint and authentication come from OSC's own options (--os-*,
    --os-endpoint, --os-auth-type), the same as python-ironicclient's.
    """
    return parser
