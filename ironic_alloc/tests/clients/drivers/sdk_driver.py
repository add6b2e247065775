"""openstacksdk scenarios (see _driver.py for the protocol).

Scenarios:

node_lifecycle  {name, resource_class, traits, image_source, image_checksum}
    create a fake-hardware node, set traits, manage, provide, deploy,
    undeploy, maintenance on and off, delete.
allocations     {resource_class, trait, names: [with trait, without],
                 allocation_name, renamed, backfill_name, image_source,
                 image_checksum}
    allocate by resource class and trait, look the allocation up, rename
    and delete it; an allocation nothing matches, which must end in error;
    backfill the allocation of a deployed node, which cannot be deleted
    while the node is deployed and goes away when it is undeployed.
"""

from openstack import exceptions as os_exc

import _driver


def node_view(node):
    return {
        'id': node.id,
        'name': node.name,
        'driver': node.driver,
        'provision_state': node.provision_state,
        'target_provision_state': node.target_provision_state,
        'is_maintenance': node.is_maintenance,
        'maintenance_reason': node.maintenance_reason,
        'resource_class': node.resource_class,
        'traits': sorted(node.traits or []),
        'allocation_id': node.allocation_id,
        'instance_id': node.instance_id,
        'instance_info': node.instance_info,
        'last_error': node.last_error,
    }


def allocation_view(allocation):
    return {
        'id': allocation.id,
        'name': allocation.name,
        'state': allocation.state,
        'node_id': allocation.node_id,
        'resource_class': allocation.resource_class,
        'traits': sorted(allocation.traits or []),
        'candidate_nodes': allocation.candidate_nodes,
        'last_error': allocation.last_error,
        'extra': allocation.extra,
    }


def make_available(bm, node, timeout):
    bm.set_node_provision_state(node, 'manage', wait=True, timeout=timeout)
    bm.set_node_provision_state(node, 'provide', wait=True, timeout=timeout)
    return bm.get_node(node.id)


def node_lifecycle(params, observed):
    bm = _driver.connect(params).baremetal
    timeout = params['timeout']

    node = bm.create_node(driver='fake-hardware', name=params['name'],
                          resource_class=params['resource_class'])
    observed['created'] = node_view(node)

    bm.set_node_traits(node, params['traits'])
    bm.add_node_trait(node, 'CUSTOM_ADDED')
    observed['traits_after_add'] = sorted(bm.get_node(node.id).traits)
    bm.remove_node_trait(node, 'CUSTOM_ADDED')
    observed['traits'] = sorted(bm.get_node(node.id).traits)

    node = bm.set_node_provision_state(node, 'manage', wait=True,
                                       timeout=timeout)
    observed['managed'] = node_view(node)
    # NOTE: without wait, then the waiting helper metalsmith also uses.
    bm.set_node_provision_state(node, 'provide')
    node = bm.wait_for_nodes_provision_state([node.id], 'available',
                                             timeout=timeout)[0]
    observed['provided'] = node_view(node)

    observed['listed'] = sorted(
        n.name for n in bm.nodes(resource_class=params['resource_class'],
                                 provision_state='available'))

    bm.update_node(node, instance_info={
        'image_source': params['image_source'],
        'image_checksum': params['image_checksum']})
    node = bm.set_node_provision_state(node, 'active', wait=True,
                                       timeout=timeout)
    observed['deployed'] = node_view(node)

    node = bm.set_node_provision_state(node, 'deleted', wait=True,
                                       timeout=timeout)
    observed['undeployed'] = node_view(node)

    bm.set_node_maintenance(node, reason='clients tier')
    observed['maintenance_on'] = node_view(bm.get_node(node.id))
    bm.unset_node_maintenance(node)
    observed['maintenance_off'] = node_view(bm.get_node(node.id))

    bm.delete_node(node, ignore_missing=False)
    try:
        bm.get_node(node.id)
    except os_exc.NotFoundException as exc:
        observed['get_after_delete'] = {'status': exc.status_code,
                                        'message': str(exc)}
    else:
        observed['get_after_delete'] = 'found'


def allocations(params, observed):
    bm = _driver.connect(params).baremetal
    timeout = params['timeout']
    rc = params['resource_class']
    trait = params['trait']
    with_trait, without_trait = params['names']

    nodes = {}
    for name in (with_trait, without_trait):
        node = bm.create_node(driver='fake-hardware', name=name,
                              resource_class=rc)
        if name == with_trait:
            bm.set_node_traits(node, [trait])
        nodes[name] = make_available(bm, node, timeout)
    observed['nodes'] = {name: node.id for name, node in nodes.items()}

    allocation = bm.create_allocation(resource_class=rc, traits=[trait],
                                      name=params['allocation_name'],
                                      extra={'purpose': 'clients tier'})
    observed['created'] = allocation_view(allocation)
    allocation = bm.wait_for_allocation(allocation, timeout=timeout)
    observed['active'] = allocation_view(allocation)
    node = bm.get_node(allocation.node_id)
    observed['node'] = node_view(node)
    observed['by_name'] = allocation_view(
        bm.get_allocation(params['allocation_name']))
    observed['listed_for_node'] = [
        a.id for a in bm.allocations(node=node.id)]
    allocation = bm.update_allocation(allocation, name=params['renamed'])
    observed['renamed'] = allocation_view(allocation)

    bm.delete_allocation(allocation, ignore_missing=False)
    observed['node_after_delete'] = node_view(bm.get_node(node.id))
    try:
        bm.get_allocation(allocation.id)
    except os_exc.NotFoundException as exc:
        observed['get_after_delete'] = {'status': exc.status_code,
                                        'message': str(exc)}
    else:
        observed['get_after_delete'] = 'found'

    # Nothing has this resource class: the allocation ends in error.
    failing = bm.create_allocation(resource_class=rc + '_NONE')
    failing = bm.wait_for_allocation(failing, timeout=timeout,
                                     ignore_error=True)
    observed['failed'] = allocation_view(failing)
    try:
        bm.wait_for_allocation(failing.id, timeout=timeout)
    except os_exc.ResourceFailure as exc:
        observed['wait_raised'] = str(exc)
    else:
        observed['wait_raised'] = None
    bm.delete_allocation(failing, ignore_missing=False)

    # Backfill: the allocation of a node deployed without one.
    node = nodes[without_trait]
    bm.update_node(node, instance_info={
        'image_source': params['image_source'],
        'image_checksum': params['image_checksum']})
    bm.set_node_provision_state(node, 'active', wait=True, timeout=timeout)
    backfill = bm.create_allocation(node=node.id,
                                    name=params['backfill_name'])
    backfill = bm.wait_for_allocation(backfill, timeout=timeout)
    observed['backfill'] = allocation_view(backfill)
    observed['backfilled_node'] = node_view(bm.get_node(node.id))
    no_retry = _driver.connect(params, baremetal_status_code_retries=0)
    try:
        no_retry.baremetal.delete_allocation(backfill, ignore_missing=False)
    except os_exc.ConflictException as exc:
        observed['delete_deployed'] = {'status': exc.status_code,
                                       'message': str(exc)}
    else:
        observed['delete_deployed'] = 'deleted'
    bm.set_node_provision_state(node, 'deleted', wait=True, timeout=timeout)
    observed['undeployed_node'] = node_view(bm.get_node(node.id))
    observed['backfill_after_undeploy'] = [
        a.id for a in bm.allocations(node=node.id)]

    for node in nodes.values():
        bm.delete_node(node, ignore_missing=False)
    observed['deleted'] = True


if __name__ == '__main__':
    _driver.run({'node_lifecycle': node_lifecycle,
                 'allocations': allocations})
