"""ironic_alloc's own ``openstack baremetal`` commands (an OSC plugin).

Installed with the ``cli`` extra (``pip install 'ironic-alloc[cli]'``) and
loaded by python-openstackclient through its plugin entry points.  Only
the client libraries (osc-lib, cliff, keystoneauth1) are imported here:
nothing of the service, so the plugin also works where the package is
installed without the service's requirements.
"""
