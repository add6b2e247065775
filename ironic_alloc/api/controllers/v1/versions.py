"""Microversions of the v1 API: one constant per feature, one log line each.

The numbers are the Bare Metal API's; this service offers 1.1 to 1.115.
Features that drive hardware are accepted at their Ironic version but
answered with a clear 400 (see v1/unsupported.py); the log says so.
Gates are read only through the ``allow_*()`` helpers of v1/utils.py.

Version log (what each version added in the Bare Metal API):

v1.1: versioning added (Kilo): node.maintenance_reason, maintenance
      endpoint, vendor passthru, config drive
v1.2: NOSTATE ("None") renamed to AVAILABLE ("available")
v1.3: node.driver_internal_info
v1.4: MANAGEABLE state with the 'manage' and 'provide' verbs
v1.5: logical node names
v1.6: INSPECT* states and the 'inspect' verb (inspection: unsupported here)
v1.7: node.clean_step
v1.8: ``fields`` selects a subset of resource fields
v1.9: node list filter ``provision_state``
v1.10: logical names may use all RFC 3986 unreserved characters
v1.11: new nodes start in ENROLL
v1.12: RAID: node.raid_config, node.target_raid_config
v1.13: 'abort' verb
v1.14: links to /v1/nodes/{node}/states and driver properties
v1.15: manual cleaning ('clean' verb: unsupported here)
v1.16: node list filter ``driver``
v1.17: 'adopt' verb
v1.18: port.internal_info
v1.19: port.local_link_connection and port.pxe_enabled
v1.20: node.network_interface
v1.21: node.resource_class and its list filter
v1.22: ramdisk lookup and heartbeat (unsupported here)
v1.23: portgroups
v1.24: node/portgroups and portgroup/ports sub-resources
v1.25: node.chassis_uuid may be unset
v1.26: portgroup.mode and portgroup.properties
v1.27: soft reboot, soft power off and power timeout
v1.28: node/vifs sub-resource
v1.29: inject NMI (unsupported here)
v1.30: dynamic drivers (hardware types) in the drivers API
v1.31: node.{boot,console,deploy,inspect,management,power,raid,vendor}
       _interface
v1.32: volume connectors and targets
v1.33: node.storage_interface
v1.34: port.physical_network
v1.35: config drive with 'rebuild'
v1.36: agent version in heartbeat
v1.37: node traits
v1.38: node.rescue_interface, 'rescue'/'unrescue' verbs (unsupported here)
v1.39: INSPECT WAIT state
v1.40: node.bios_interface and node/bios (unsupported here)
v1.41: abort of inspection
v1.42: node.fault and its list filter
v1.43: ``detail`` flag on list endpoints
v1.44: node.deploy_step
v1.45: ``reset_interfaces`` on node PATCH
v1.46: node.conductor_group and its list filter
v1.47: node.automated_clean
v1.48: node.protected and node.protected_reason
v1.49: node.conductor and /v1/conductors
v1.50: node.owner and its list filter
v1.51: node.description and the ``description_contains`` filter
v1.52: allocations API and node.allocation_uuid
v1.53: smart NIC ports
v1.54: events API (unsupported here)
v1.55: deploy templates API (unsupported here)
v1.56: config drive given as a JSON object
v1.57: allocation update (PATCH)
v1.58: allocation backfill
v1.59: vendor_data in a config drive object
v1.60: allocation.owner
v1.61: node.retired and node.retired_reason and the ``retired`` filter
v1.62: agent token (unsupported here)
v1.63: indicators (unsupported here)
v1.64: network_type in port.local_link_connection
v1.65: node.lessee and its list filter
v1.66: node.network_data
v1.67: port/portgroup UUIDs in VIF attach
v1.68: agent_verify_ca in heartbeat
v1.69: deploy_steps in provisioning
v1.70: disable_ramdisk in manual cleaning
v1.71: scope based roles signifier
v1.72: agent status in heartbeat
v1.73: 'deploy' and 'undeploy' verbs (aliases of 'active' and 'deleted')
v1.74: BIOS registry
v1.75: node.boot_mode and node.secure_boot
v1.76: changing boot mode and secure boot state (unsupported here)
v1.77: ``fields`` on the drivers API
v1.78: node history (unsupported here)
v1.79: allocations prefer a node whose name matches
v1.80: project scoped admins may create and delete their project's nodes
       (informational)
v1.81: node inventory, /v1/nodes/{node}/inventory (unsupported here)
v1.82: node.shard, the ``shard`` and ``sharded`` node list filters and
       /v1/shards
v1.83: node.parent_node, /v1/nodes/{node}/children and the
       ``parent_node`` and ``include_children`` node list filters
v1.84: the ramdisk's continue_inspection callback (unsupported here)
v1.85: 'unhold' verb (unsupported here)
v1.86: node.firmware_interface (stored, not acted upon); firmware
       components, /v1/nodes/{node}/firmware (unsupported here)
v1.87: 'service' verb (unsupported here) and node.service_step (always
       empty here)
v1.88: port.name (ports are not stored here: port writes unsupported)
v1.89: attaching and detaching virtual media, /v1/nodes/{node}/vmedia
       (unsupported here)
v1.90: OVN VTEP switch data in port.local_link_connection (ports are not
       stored here)
v1.91: a trailing .json in a path is part of the name (before, a request
       naming an older version had it dropped)
v1.92: runbooks, /v1/runbooks, and the runbook argument of the clean and
       service verbs (unsupported here)
v1.93: reading the virtual media of a node, GET /v1/nodes/{node}/vmedia
       (unsupported here)
v1.94: ports created naming their node by name (ports are not stored
       here)
v1.95: node.disable_power_off: powering the node off is refused while
       set
v1.96: inspection rules, /v1/inspection_rules (unsupported here)
v1.97: port.description (ports are not stored here)
v1.98: JSON patch paths may hold any character, '~' and '/' escaped as
       '~0' and '~1'
v1.99: the conductor_group filter of the port and portgroup lists
       (always empty here)
v1.100: port.vendor (ports are not stored here)
v1.101: port.category (ports are not stored here)
v1.102: portgroup.physical_network (portgroups are not stored here)
v1.103: portgroup.category (portgroups are not stored here)
v1.104: node.instance_name and its node list filter; it follows
        instance_info.display_name while unset
v1.105: OVN VTEP switch data no longer accepted in
        port.local_link_connection (ports are not stored here)
v1.106: the shard filter of the portgroup list (always empty here)
v1.107: X-OpenStack-Request-Id on every response (sent here at every
        version)
v1.108: disable_ramdisk for the 'service' verb (unsupported here)
v1.109: node.health, reported by the BMC (none here: always null)
v1.110: 'abort' of a node in 'wait call-back' (DEPLOYWAIT)
v1.111: port.available_for_dynamic_portgroup and
        portgroup.dynamic_portgroup (ports and portgroups are not stored
        here)
v1.112: runbook traits and descriptions, /v1/runbooks/{runbook}/traits
        (unsupported here)
v1.113: the project of a node history event (node history unsupported
        here)
v1.114: vendor, model and serial_number of firmware components (firmware
        unsupported here)
v1.115: state, target_provision_state and duration_seconds of node
        history events (node history unsupported here)
"""

BASE_VERSION = 1

MINOR_1_INITIAL_VERSION = 1
MINOR_2_AVAILABLE_STATE = 2
MINOR_3_DRIVER_INTERNAL_INFO = 3
MINOR_4_MANAGEABLE_STATE = 4
MINOR_5_NODE_NAME = 5
MINOR_6_INSPECT_STATE = 6
MINOR_7_NODE_CLEAN = 7
MINOR_8_FETCHING_SUBSET_OF_FIELDS = 8
MINOR_9_PROVISION_STATE_FILTER = 9
MINOR_10_UNRESTRICTED_NODE_NAME = 10
MINOR_11_ENROLL_STATE = 11
MINOR_12_RAID_CONFIG = 12
MINOR_13_ABORT_VERB = 13
MINOR_14_LINKS_NODESTATES_DRIVERPROPERTIES = 14
MINOR_15_MANUAL_CLEAN = 15
MINOR_16_DRIVER_FILTER = 16
MINOR_17_ADOPT_VERB = 17
MINOR_18_PORT_INTERNAL_INFO = 18
MINOR_19_PORT_ADVANCED_NET_FIELDS = 19
MINOR_20_NETWORK_INTERFACE = 20
MINOR_21_RESOURCE_CLASS = 21
MINOR_22_LOOKUP_HEARTBEAT = 22
MINOR_23_PORTGROUPS = 23
MINOR_24_PORTGROUPS_SUBCONTROLLERS = 24
MINOR_25_UNSET_CHASSIS_UUID = 25
MINOR_26_PORTGROUP_MODE_PROPERTIES = 26
MINOR_27_SOFT_POWER_OFF = 27
MINOR_28_VIFS_SUBCONTROLLER = 28
MINOR_29_INJECT_NMI = 29
MINOR_30_DYNAMIC_DRIVERS = 30
MINOR_31_DYNAMIC_INTERFACES = 31
MINOR_32_VOLUME = 32
MINOR_33_STORAGE_INTERFACE = 33
MINOR_34_PORT_PHYSICAL_NETWORK = 34
MINOR_35_REBUILD_CONFIG_DRIVE = 35
MINOR_36_AGENT_VERSION_HEARTBEAT = 36
MINOR_37_NODE_TRAITS = 37
MINOR_38_RESCUE_INTERFACE = 38
MINOR_39_INSPECT_WAIT = 39
MINOR_40_BIOS_INTERFACE = 40
MINOR_41_INSPECTION_ABORT = 41
MINOR_42_FAULT = 42
MINOR_43_ENABLE_DETAIL_QUERY = 43
MINOR_44_NODE_DEPLOY_STEP = 44
MINOR_45_RESET_INTERFACES = 45
MINOR_46_NODE_CONDUCTOR_GROUP = 46
MINOR_47_NODE_AUTOMATED_CLEAN = 47
MINOR_48_NODE_PROTECTED = 48
MINOR_49_CONDUCTORS = 49
MINOR_50_NODE_OWNER = 50
MINOR_51_NODE_DESCRIPTION = 51
MINOR_52_ALLOCATION = 52
MINOR_53_PORT_SMARTNIC = 53
MINOR_54_EVENTS = 54
MINOR_55_DEPLOY_TEMPLATES = 55
MINOR_56_BUILD_CONFIGDRIVE = 56
MINOR_57_ALLOCATION_UPDATE = 57
MINOR_58_ALLOCATION_BACKFILL = 58
MINOR_59_CONFIGDRIVE_VENDOR_DATA = 59
MINOR_60_ALLOCATION_OWNER = 60
MINOR_61_NODE_RETIRED = 61
MINOR_62_AGENT_TOKEN = 62
MINOR_63_INDICATORS = 63
MINOR_64_LOCAL_LINK_CONNECTION_NETWORK_TYPE = 64
MINOR_65_NODE_LESSEE = 65
MINOR_66_NODE_NETWORK_DATA = 66
MINOR_67_NODE_VIF_ATTACH_PORT = 67
MINOR_68_HEARTBEAT_VERIFY_CA = 68
MINOR_69_DEPLOY_STEPS = 69
MINOR_70_CLEAN_DISABLE_RAMDISK = 70
MINOR_71_RBAC_SCOPES = 71
MINOR_72_HEARTBEAT_STATUS = 72
MINOR_73_DEPLOY_UNDEPLOY_VERBS = 73
MINOR_74_BIOS_REGISTRY = 74
MINOR_75_NODE_BOOT_MODE = 75
MINOR_76_NODE_CHANGE_BOOT_MODE = 76
MINOR_77_DRIVER_FIELDS_SELECTOR = 77
MINOR_78_NODE_HISTORY = 78
MINOR_79_ALLOCATION_NODE_NAME = 79
MINOR_80_PROJECT_CREATE_DELETE_NODE = 80
MINOR_81_NODE_INVENTORY = 81
MINOR_82_NODE_SHARD = 82
MINOR_83_PARENT_CHILD_NODES = 83
MINOR_84_CONTINUE_INSPECTION = 84
MINOR_85_UNHOLD_VERB = 85
MINOR_86_FIRMWARE_INTERFACE = 86
MINOR_87_SERVICE = 87
MINOR_88_PORT_NAME = 88
MINOR_89_ATTACH_DETACH_VMEDIA = 89
MINOR_90_OVN_VTEP = 90
MINOR_91_DOT_JSON = 91
MINOR_92_RUNBOOKS = 92
MINOR_93_GET_VMEDIA = 93
MINOR_94_PORT_NODENAME = 94
MINOR_95_DISABLE_POWER_OFF = 95
MINOR_96_INSPECTION_RULES = 96
MINOR_97_PORT_DESCRIPTION = 97
MINOR_98_SUPPORT_SPECIAL_CHAR_IN_ATTRIBUTES = 98
MINOR_99_PORT_PORTGROUP_CONDUCTOR_GROUP_FILTER = 99
MINOR_100_PORT_VENDOR = 100
MINOR_101_PORT_CATEGORY = 101
MINOR_102_PORTGROUP_PHYSICAL_NETWORK = 102
MINOR_103_PORTGROUP_CATEGORY = 103
MINOR_104_NODE_INSTANCE_NAME = 104
MINOR_105_REMOVE_OVN_VTEP = 105
MINOR_106_PORTGROUP_SHARD = 106
MINOR_107_X_OPENSTACK_REQUEST_ID = 107
MINOR_108_SERVICE_DISABLE_RAMDISK = 108
MINOR_109_NODE_HEALTH = 109
MINOR_110_DEPLOYWAIT_ABORT = 110
MINOR_111_DYNAMIC_PORTGROUP = 111
MINOR_112_RUNBOOK_TRAITS = 112
MINOR_113_NODE_HISTORY_PROJECT = 113
MINOR_114_FIRMWARE_IDENTITY = 114
MINOR_115_NODE_HISTORY_FIELDS = 115

# NOTE: when adding a version, update MINOR_MAX_VERSION and the log above.
MINOR_MIN_VERSION = MINOR_1_INITIAL_VERSION
MINOR_MAX_VERSION = MINOR_115_NODE_HISTORY_FIELDS

MIN_VERSION_STRING = '%d.%d' % (BASE_VERSION, MINOR_MIN_VERSION)
MAX_VERSION_STRING = '%d.%d' % (BASE_VERSION, MINOR_MAX_VERSION)
# NOTE: a request without a version header gets the minimum, like Ironic.
DEFAULT_VERSION_STRING = MIN_VERSION_STRING
