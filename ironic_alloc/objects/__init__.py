"""Versioned objects; ``register_all()`` imports every object module."""


def register_all():
    __import__('ironic_alloc.objects.allocation')
    __import__('ironic_alloc.objects.allocation_group')
    __import__('ironic_alloc.objects.chassis')
    __import__('ironic_alloc.objects.conductor')
    __import__('ironic_alloc.objects.node')
    __import__('ironic_alloc.objects.notification')
