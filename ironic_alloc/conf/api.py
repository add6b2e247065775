from oslo_config import cfg

opt_group = cfg.OptGroup(name='api', title='Options for the API service')

api_opts = [
    cfg.HostAddressOpt('host_ip',
                       default='127.0.0.1',
                       help='IP address or host name ironic-alloc-api '
                            'and the standalone service listen on.'),
    cfg.PortOpt('port',
                default=6385,
                help='TCP port ironic-alloc-api and the standalone '
                     'service listen on.'),
    cfg.IntOpt('max_limit',
               default=1000,
               min=1,
               help='The largest number of items a collection request '
                    'returns in one page, whatever limit it asks for.'),
    cfg.StrOpt('public_endpoint',
               help='Public URL of the API, used in links and Location '
                    'headers (e.g. https://baremetal.example.com:6385). '
                    'Empty means the URL the request came in on.'),
    cfg.IntOpt('api_workers',
               default=1,
               min=1,
               help='Number of worker processes of ironic-alloc-api '
                    'serving the API on [api]host_ip:[api]port, all on one '
                    'socket (oslo.service\'s process launcher, cheroot in '
                    'each worker); a worker that dies is replaced. The '
                    'all-in-one ironic-alloc always runs one. Under '
                    'mod_wsgi or uWSGI the web server decides.'),
    cfg.BoolOpt('enable_extensions',
                default=True,
                help='Serve ironic_alloc\'s own API extensions to the '
                     'requests that ask for them with the header '
                     '"OpenStack-API-Version: ironic-alloc 1.N". A request '
                     'without that entry is answered as plain Ironic '
                     'either way. False makes the service plain Ironic for '
                     'every request: the ironic-alloc entry is ignored, so '
                     'no response carries extension headers, fields, '
                     'endpoints or the "ironic_alloc_extensions" key of '
                     'GET / and GET /v1.'),
    cfg.BoolOpt('debug_tracebacks_in_api',
                default=False,
                help='Return server tracebacks in the debuginfo field of '
                     'error responses. For debugging only.'),
    cfg.IntOpt('rpc_call_timeout',
               default=10,
               min=1,
               help='Seconds the API waits for a conductor to answer a '
                    'synchronous RPC call (node actions, allocation '
                    'deletion) before answering 503. The bound includes '
                    'waiting for the RPC reply queue while the message '
                    'broker is unreachable, and every conductor asked '
                    '(see rpc_attempt_timeout).'),
    cfg.IntOpt('rpc_attempt_timeout',
               default=4,
               min=2,
               help='Seconds without a sign of life from the conductor '
                    'chosen for a call that is safe to repeat (the '
                    'deletion of an allocation, node updates and trait '
                    'changes, the deletion of a node) after which the API '
                    'asks another live conductor, within '
                    'rpc_call_timeout. A conductor working on the call '
                    'shows it is alive every half of this time, so a slow '
                    'call is not sent twice. Provision and power actions '
                    'are never sent twice: they wait rpc_call_timeout. At '
                    'least 2 (the conductor signals every whole second or '
                    'more); when not smaller than rpc_call_timeout, no '
                    'other conductor is asked after a silent one.'),
    cfg.FloatOpt('allocation_create_wait',
                 default=0.0,
                 min=0.0,
                 max=60.0,
                 help='Seconds POST /v1/allocations may wait for the '
                      'conductor to process the new allocation before '
                      'answering. 0 answers at once with the state '
                      '"allocating", as Ironic does; clients then poll. '
                      'With a wait, the answer usually shows the end state '
                      '("active" with its node, or "error"), which saves '
                      'clients their polls and the API their requests. The '
                      'answer is still 201 when the wait runs out, the '
                      'conductor does not answer or the message broker is '
                      'unreachable: the allocation then shows "allocating" '
                      'and its conductor finishes it from the database. A '
                      'POST takes at most this long plus about a second. '
                      'Needs conductors of RPC API 1.2 (ignored while '
                      '[DEFAULT]pin_release_version names an older '
                      'release).'),
    cfg.IntOpt('max_request_body_size',
               default=4 * 1024 * 1024,
               min=1024,
               help='Largest request body the API reads, in bytes; a '
                    'larger one is refused with 413 before it is read. '
                    'The default leaves room for a config drive sent '
                    'with a deployment.'),
    cfg.IntOpt('max_json_depth',
               default=32,
               min=2,
               help='Deepest nesting of objects and lists accepted in a '
                    'JSON request body (the body itself is level 1); a '
                    'deeper body is refused with 400.'),
    cfg.IntOpt('max_traits',
               default=50,
               min=1,
               max=250,
               help='Most traits a node may have and an allocation may '
                    'request (Ironic allows 50 per node); more is '
                    'refused with 400. At most 250, so that the traits of '
                    'an allocation fit a MySQL TEXT column.'),
    cfg.BoolOpt('project_admin_can_manage_own_nodes',
                default=True,
                help='Let project-scoped admins enroll nodes owned by '
                     'their project and delete the nodes their project '
                     'owns (policy rules baremetal:node:create:'
                     'self_owned_node and baremetal:node:delete:'
                     'self_owned_node), as Ironic does. Only with '
                     '[DEFAULT]auth_strategy = keystone.'),
    cfg.IntOpt('keepalive_timeout',
               default=30,
               min=0,
               help='Seconds ironic-alloc-api and the standalone '
                    'service keep an idle HTTP/1.1 connection open for '
                    'the next request of the same client (cheroot\'s '
                    'timeout); a slower client read or write also ends '
                    'the connection. 0 closes every connection after one '
                    'response. Under mod_wsgi or uWSGI the web server '
                    'decides.'),
    cfg.IntOpt('max_concurrent_requests',
               default=2,
               min=0,
               help='Most requests ironic-alloc-api and the standalone '
                    'service process at once in each process; others '
                    'wait, already accepted, and go in the order they '
                    'came as requests finish; a request waiting for a '
                    'conductor\'s answer lets another one run, and waits '
                    'its turn again to go on. '
                    'One Python process runs one thread at a time: more '
                    'requests in progress only make each of them, and the '
                    'conductor threads of the standalone service, wait '
                    'longer for the interpreter. 0 for no limit other '
                    'than the server\'s pool of threads. Under '
                    'mod_wsgi or uWSGI the web server decides.'),
    cfg.IntOpt('max_candidate_nodes',
               default=1000,
               min=1,
               max=1500,
               help='Most candidate nodes an allocation may name; more '
                    'is refused with 400. At most 1500, so that their '
                    'UUIDs fit a MySQL TEXT column.'),
]


def register_opts(conf):
    conf.register_group(opt_group)
    conf.register_opts(api_opts, group=opt_group)
