import os
import socket

from oslo_config import cfg

from ironic_alloc.common import release_mappings

service_opts = [
    cfg.StrOpt('host',
               default=socket.gethostname(),
               sample_default='localhost',
               help='Name of this host. It identifies a conductor in the '
                    'conductors table and in RPC topics, so it must be '
                    'unique among conductors sharing one database.'),
    cfg.StrOpt('state_path',
               default=os.path.join(os.path.expanduser('~'), '.local',
                                    'state', 'ironic-alloc'),
               sample_default='$HOME/.local/state/ironic-alloc',
               help='Directory where ironic_alloc keeps its state, such as '
                    'the default SQLite database of the standalone mode.'),
    cfg.StrOpt('auth_strategy',
               default='noauth',
               choices=[('noauth', 'No authentication: every request is '
                                   'allowed. For standalone use on a '
                                   'trusted host only.'),
                        ('keystone', 'OpenStack Identity tokens through '
                                     'keystonemiddleware.'),
                        ('http_basic', 'HTTP basic authentication against '
                                       'an htpasswd file.')],
               help='Authentication strategy of the API.'),
    cfg.StrOpt('http_basic_auth_user_file',
               default='/etc/ironic-alloc/htpasswd',
               deprecated_opts=[cfg.DeprecatedOpt(
                   'http_basic_auth_user_file', group='oslo_middleware')],
               help='Apache-style htpasswd file of the API users when '
                    'auth_strategy is http_basic: one "user:hash" line '
                    'each, bcrypt hashes only (htpasswd -B). The file is '
                    're-read when it changes; the service does not start '
                    'when it is missing, unreadable or malformed.'),
    cfg.StrOpt('rpc_transport',
               default='oslo',
               choices=[('oslo', 'oslo.messaging with the transport given '
                                 'by [DEFAULT]transport_url.')],
               help='RPC transport between the API and the conductors.'),
    cfg.StrOpt('pin_release_version',
               choices=release_mappings.pin_choices(),
               help='During a rolling upgrade, the release the services '
                    'not yet upgraded run: RPC messages are capped at its '
                    'RPC API version and objects sent over RPC are '
                    'backported to its object versions. Set it on every '
                    'upgraded service until all run the new code, then '
                    'unset it and restart them. Unset means the newest '
                    'versions of this code.'),
    cfg.IntOpt('unavailable_log_interval',
               default=60,
               min=0,
               mutable=True,
               help='Seconds between two log lines of one cause of '
                    'failures due to something unavailable: an API answer '
                    '503 because the database, the message broker or a '
                    'conductor cannot be reached, a conductor that cannot '
                    'reach the database. Such a line is a WARNING without '
                    'a traceback; each process writes at most one per '
                    'cause per interval, and the next one is preceded by '
                    'a line counting those left out. 0 writes every one.'),
]


def register_opts(conf):
    conf.register_opts(service_opts)
