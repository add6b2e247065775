"""``openstack baremetal reservation create/list/show/set/delete``."""

from osc_lib.command import command

from ironic_alloc.cli import client
from ironic_alloc.cli.v1 import utils

LIST_COLUMNS = ('uuid', 'node_uuid', 'instance_uuid', 'expires_at')
"""The columns of ``reservation list`` without --long or --fields"""


def add_fields_argument(parser):
    parser.add_argument(
        '--fields', nargs='+', dest='fields', metavar='<field>',
        action='append', choices=client.RESERVATION_FIELDS, default=[],
        help='One or more reservation fields; only these are fetched '
             'from the service and shown.  Can be repeated.')


def requested_fields(parsed_args):
    """The flat, ordered list of --fields, or None when not given."""
    fields = [name for group in parsed_args.fields for name in group]
    return list(dict.fromkeys(fields)) or None


def show_reservation(reservation, fields=None):
    """ShowOne's (names, values) of a reservation: the requested fields,
    or every field the service sent but its links."""
    names = fields or [name for name in client.RESERVATION_FIELDS
                       if name in reservation]
    return names, [reservation.get(name) for name in names]


class CreateReservation(command.ShowOne):
    """Reserve the first node of a list that can be reserved.

    The nodes are tried in the order given; the answer is immediate.  When
    none can be reserved the command fails and prints the reason of each
    node.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--instance-uuid', metavar='<uuid>', dest='instance_uuid',
            required=True,
            help='The instance the node is reserved for; it becomes the '
                 'node\'s instance_uuid.')
        parser.add_argument(
            '--node', metavar='<node>', dest='nodes', action='append',
            required=True,
            help='A candidate node (UUID or name).  Repeat it to give '
                 'several, in the order of preference.')
        parser.add_argument(
            '--ttl', metavar='<seconds>', type=int,
            help='Lease of the reservation in seconds (default: the '
                 'service\'s [reservation]default_ttl).')
        return parser

    def take_action(self, parsed_args):
        try:
            reservation = utils.api_client(self).create_reservation(
                parsed_args.instance_uuid, parsed_args.nodes,
                ttl=parsed_args.ttl)
        except client.ClientError as exc:
            # NOTE: a 409's error carries the reason of each node, which
            # the message ends with, one line each.
            raise utils.fail(exc)
        return show_reservation(reservation)


class ListReservation(command.Lister):
    """List reservations."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--instance-uuid', metavar='<uuid>', dest='instance_uuid',
            help='Only the reservations of this instance.')
        parser.add_argument(
            '--node', metavar='<node>',
            help='Only the reservation of this node (UUID or name).')
        parser.add_argument(
            '--limit', metavar='<count>', type=utils.positive_int,
            help='At most this many reservations (default: all of them, '
                 'fetched page by page).')
        parser.add_argument(
            '--marker', metavar='<uuid>',
            help='Start after the reservation of this UUID (the last one '
                 'of a previous list).')
        columns = parser.add_mutually_exclusive_group()
        columns.add_argument(
            '--long', action='store_true', default=False,
            help='Show every field of the reservations.')
        add_fields_argument(columns)
        return parser

    def take_action(self, parsed_args):
        fields = requested_fields(parsed_args)
        if fields:
            columns = fields
        elif parsed_args.long:
            columns = list(client.RESERVATION_FIELDS)
        else:
            columns = list(LIST_COLUMNS)
        try:
            reservations = utils.api_client(self).list_reservations(
                instance_uuid=parsed_args.instance_uuid,
                node=parsed_args.node, limit=parsed_args.limit,
                marker=parsed_args.marker, fields=fields)
        except client.ClientError as exc:
            raise utils.fail(exc)
        return columns, ([item.get(name) for name in columns]
                         for item in reservations)


class ShowReservation(command.ShowOne):
    """Show a reservation."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('reservation', metavar='<uuid>',
                            help='UUID of the reservation.')
        add_fields_argument(parser)
        return parser

    def take_action(self, parsed_args):
        fields = requested_fields(parsed_args)
        try:
            reservation = utils.api_client(self).get_reservation(
                parsed_args.reservation, fields=fields)
        except client.ClientError as exc:
            raise utils.fail(exc)
        return show_reservation(reservation, fields)


class SetReservation(command.Command):
    """Renew the lease of a reservation."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('reservation', metavar='<uuid>',
                            help='UUID of the reservation.')
        utils.add_lease_arguments(parser, 'reservation')
        return parser

    def take_action(self, parsed_args):
        try:
            utils.api_client(self).renew_reservation(
                parsed_args.reservation, ttl=parsed_args.ttl,
                expires_at=parsed_args.expires_at)
        except client.ClientError as exc:
            raise utils.fail(exc)


class DeleteReservation(command.Command):
    """Delete reservations, freeing their nodes."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('reservations', metavar='<uuid>', nargs='+',
                            help='UUID of a reservation to delete.')
        return parser

    def take_action(self, parsed_args):
        utils.delete_each(parsed_args.reservations,
                          utils.api_client(self).delete_reservation,
                          'reservation', 'reservations')
