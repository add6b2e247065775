from oslo_config import cfg

opt_group = cfg.OptGroup(name='conductor',
                         title='Options for the conductor service')

conductor_opts = [
    cfg.IntOpt('workers_pool_size',
               default=16,
               min=2,
               help='Size of the conductor worker pool that runs node '
                    'actions and allocations. Work beyond it waits in the '
                    'database and is picked up again by the periodic '
                    're-drive.'),
    cfg.IntOpt('heartbeat_interval',
               default=10,
               mutable=True,
               min=1,
               help='Seconds between heartbeats a conductor writes to the '
                    'database.'),
    cfg.IntOpt('heartbeat_timeout',
               default=60,
               mutable=True,
               min=2,
               help='Seconds since its last heartbeat, measured with the '
                    'database server clock, after which a conductor is '
                    'considered dead: no RPC is routed to it and its work '
                    'may be taken over.'),
    cfg.StrOpt('conductor_group',
               default='',
               help='Name of the conductor group this conductor serves. '
                    'Node actions of a node are routed to a conductor of '
                    'the node\'s conductor_group.'),
    cfg.IntOpt('sync_local_state_interval',
               default=60,
               mutable=True,
               min=0,
               help='Seconds between checks that release node locks held '
                    'by dead conductors and fail node actions they left '
                    'unfinished. 0 disables the check.'),
    cfg.IntOpt('node_locked_retry_attempts',
               default=3,
               mutable=True,
               min=1,
               help='How many times a conductor tries to lock a node for '
                    'a request (node update or deletion, traits, provision '
                    'and power actions) while another operation holds the '
                    'lock, before the request fails with 409 (NodeLocked). '
                    '1 fails at once. Whatever the two options say, no try '
                    'starts later than half of [api]rpc_call_timeout after '
                    'the first, so that the API gets the answer in time.'),
    cfg.IntOpt('node_locked_retry_interval',
               default=1,
               mutable=True,
               min=0,
               help='Seconds a conductor waits between two tries to lock a '
                    'node (see node_locked_retry_attempts).'),
    cfg.FloatOpt('fake_action_delay',
                 default=0.0,
                 mutable=True,
                 min=0.0,
                 help='Seconds the fake driver spends in each intermediate '
                      'provision state (verifying, cleaning, deploying...). '
                      '0 finishes actions as fast as possible.'),
    cfg.IntOpt('check_allocations_interval',
               default=60,
               mutable=True,
               min=0,
               help='Seconds between checks for allocating allocations '
                    'whose conductor is dead (no heartbeat for '
                    '[conductor]heartbeat_timeout); each one found is '
                    'taken over by exactly one live conductor. 0 disables '
                    'the check.'),
    cfg.IntOpt('allocation_redrive_interval',
               default=5,
               mutable=True,
               min=1,
               help='Seconds between passes in which a conductor restarts '
                    'work on its own allocating allocations that have no '
                    'work in flight (their RPC cast was lost, or the worker '
                    'pool was full). Bounds how long a lost message delays '
                    'an allocation.'),
    cfg.IntOpt('allocation_candidate_batch',
               default=16,
               mutable=True,
               min=1,
               help='How many candidate nodes one allocation attempt reads '
                    'from the database at a time.'),
    cfg.IntOpt('allocation_attempts',
               default=5,
               mutable=True,
               min=1,
               help='How many candidate searches an allocation makes when '
                    'every candidate it found was taken by a concurrent '
                    'allocation before it fails.'),
    cfg.IntOpt('error_allocation_max_age',
               default=0,
               mutable=True,
               min=0,
               help='Seconds after which allocations in state error are '
                    'deleted by the periodic purge (every '
                    'error_allocation_purge_interval seconds, whatever the '
                    'take-over settings are). 0 keeps them until a client '
                    'deletes them or "ironic-alloc-dbsync purge" runs.'),
    cfg.IntOpt('error_allocation_purge_interval',
               default=60,
               mutable=True,
               min=1,
               help='Seconds between periodic purges of allocations in '
                    'state error older than error_allocation_max_age. '
                    'Unused while error_allocation_max_age is 0.'),
    cfg.IntOpt('node_tally_fold_interval',
               default=2,
               mutable=True,
               min=1,
               help='Seconds between the folds of node tally changes into '
                    'the node tallies that explanations '
                    '(POST /v1/allocations/explain) read. Every conductor '
                    'folds, one at a time. Explanations are exact either '
                    'way; they read the changes not yet folded too, so a '
                    'longer interval makes them read more rows.'),
    cfg.IntOpt('graceful_shutdown_timeout',
               default=60,
               mutable=True,
               min=0,
               help='Seconds a stopping conductor waits for work in its '
                    'pool to finish before it exits. 0 waits forever.'),
]


def register_opts(conf):
    conf.register_group(opt_group)
    conf.register_opts(conductor_opts, group=opt_group)
