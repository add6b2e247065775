"""RPC API and object versions of each release, for rolling upgrades.

During a rolling upgrade, services running the new code are started with
``[DEFAULT]pin_release_version`` set to the release still running
elsewhere: their RPC client caps the messages it sends at that release's
RPC API version and objects sent over RPC are backported to that
release's object versions.  Once every service runs the new code, the pin
is removed and the services restarted.

Add a release here when it is cut: its name, the RPC API version
(conductor/rpcapi.py) and the version of every object (objects/) it
shipped; an object added later is absent from the older releases (it
goes at its own version, and an older peer never receives it).  ``CURRENT`` is the code of this tree;
ironic_alloc/tests/unit/common/test_release_mappings.py checks that it
matches the code.
"""

CURRENT = 'master'

RELEASE_MAPPING = {
    '2026.2': {
        'rpc': '1.0',
        'objects': {
            'Allocation': '1.0',
            'Conductor': '1.0',
            'Node': '1.0',
        },
    },
    CURRENT: {
        'rpc': '1.4',
        'objects': {
            'Allocation': '1.4',
            'AllocationGroup': '1.0',
            'AllocationGroupNotification': '1.0',
            'AllocationGroupPayload': '1.0',
            'AllocationCRUDNotification': '1.0',
            'AllocationCRUDPayload': '1.1',
            'AllocationHoldNotification': '1.0',
            'AllocationHoldPayload': '1.0',
            'Chassis': '1.0',
            'Conductor': '1.0',
            'EventType': '1.0',
            'Node': '1.3',
            'NodeCRUDNotification': '1.0',
            'NodeCRUDPayload': '1.15',
            'NodeMaintenanceNotification': '1.0',
            'NodePayload': '1.17',
            'NodeSetPowerStateNotification': '1.0',
            'NodeSetPowerStatePayload': '1.17',
            'NodeSetProvisionStateNotification': '1.0',
            'NodeSetProvisionStatePayload': '1.18',
            'NotificationPublisher': '1.0',
        },
    },
}

# Releases an operator may pin to (the current code needs no pin).
PINNABLE_RELEASES = sorted(name for name in RELEASE_MAPPING
                           if name != CURRENT)


def pin_choices():
    """(release, description) pairs for the option's ``choices``."""
    return [(name, 'RPC API %s; objects %s' % (
        RELEASE_MAPPING[name]['rpc'], ', '.join(
            '%s %s' % item
            for item in sorted(RELEASE_MAPPING[name]['objects'].items()))))
        for name in PINNABLE_RELEASES]


def _release(pin):
    return RELEASE_MAPPING[pin or CURRENT]


def rpc_version_cap(pin):
    """The RPC API version to cap messages at; None when not pinned."""
    return _release(pin)['rpc'] if pin else None


def object_versions(pin):
    """{object name: version} objects are sent at; {} when not pinned."""
    return dict(_release(pin)['objects']) if pin else {}
