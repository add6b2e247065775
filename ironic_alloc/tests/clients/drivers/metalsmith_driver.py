"""metalsmith scenarios (see _driver.py for the protocol).

Scenarios:

provision        {resource_class, node_name, hostname, image_source,
                  image_checksum}
    create an available node (openstacksdk), then with metalsmith reserve
    it, provision it with an HTTP whole-disk image, wait, show and list
    the instance, unprovision it; no allocation may be left.
reserve_failure  {resource_class}
    reserve a node of a resource class no node has: metalsmith must raise
    ReservationFailed and delete the failed allocation.
"""

import metalsmith
from metalsmith import exceptions as ms_exc
from metalsmith import sources

import _driver


def allocation_names(bm, **filters):
    return sorted((a.name or a.id) for a in bm.allocations(**filters))


def provision(params, observed):
    conn = _driver.connect(params)
    bm = conn.baremetal
    timeout = params['timeout']
    rc = params['resource_class']

    node = bm.create_node(driver='fake-hardware', name=params['node_name'],
                          resource_class=rc,
                          properties={'local_gb': 20, 'cpus': 4,
                                      'memory_mb': 8192})
    bm.set_node_provision_state(node, 'manage', wait=True, timeout=timeout)
    bm.set_node_provision_state(node, 'provide', wait=True, timeout=timeout)
    observed['node_id'] = node.id

    provisioner = metalsmith.Provisioner(cloud_region=conn.config)
    reserved = provisioner.reserve_node(resource_class=rc)
    observed['reserved'] = {'id': reserved.id,
                            'allocation_id': reserved.allocation_id,
                            'provision_state': reserved.provision_state}

    image = sources.HttpWholeDiskImage(params['image_source'],
                                       checksum=params['image_checksum'])
    instance = provisioner.provision_node(reserved, image=image,
                                          hostname=params['hostname'])
    observed['started'] = {'state': instance.state.value,
                           'provision_state': instance.node.provision_state}
    instance = provisioner.wait_for_provisioning([instance],
                                                 timeout=timeout)[0]
    node = bm.get_node(node.id)
    observed['provisioned'] = {
        'state': instance.state.value,
        'hostname': instance.hostname,
        'uuid': instance.uuid,
        'provision_state': node.provision_state,
        'allocation_id': node.allocation_id,
        'instance_id': node.instance_id,
        'instance_info': node.instance_info,
        'allocation_name': (instance.allocation.name
                            if instance.allocation is not None else None),
    }

    shown = provisioner.show_instance(params['hostname'])
    observed['shown'] = {'hostname': shown.hostname,
                         'uuid': shown.uuid, 'state': shown.state.value}
    observed['listed'] = sorted(i.hostname
                                for i in provisioner.list_instances())

    node = provisioner.unprovision_node(params['hostname'], wait=timeout)
    observed['unprovisioned'] = {
        'provision_state': node.provision_state,
        'allocation_id': node.allocation_id,
        'instance_id': node.instance_id,
    }
    node = bm.get_node(node.id)
    observed['after'] = {
        'provision_state': node.provision_state,
        'allocation_id': node.allocation_id,
        'instance_id': node.instance_id,
        'instance_info': node.instance_info,
        'allocations_for_node': allocation_names(bm, node=node.id),
        'allocations_of_class': allocation_names(bm, resource_class=rc),
    }
    bm.delete_node(node, ignore_missing=False)


def reserve_failure(params, observed):
    conn = _driver.connect(params)
    provisioner = metalsmith.Provisioner(cloud_region=conn.config)
    try:
        node = provisioner.reserve_node(
            resource_class=params['resource_class'])
    except ms_exc.ReservationFailed as exc:
        observed['raised'] = str(exc)
    else:
        observed['raised'] = None
        observed['node'] = node.id
    observed['allocations_left'] = allocation_names(
        conn.baremetal, resource_class=params['resource_class'])


if __name__ == '__main__':
    _driver.run({'provision': provision, 'reserve_failure': reserve_failure})
