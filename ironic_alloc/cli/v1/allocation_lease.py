"""``openstack baremetal allocation lease set/unset``: the lease of an
allocation (python-ironicclient's allocation commands leave it alone)."""

from osc_lib.command import command

from ironic_alloc.cli import client
from ironic_alloc.cli.v1 import utils


class SetAllocationLease(command.Command):
    """Set the lease of an allocation: it is deleted when it expires."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('allocation', metavar='<allocation>',
                            help='UUID or name of the allocation.')
        utils.add_lease_arguments(parser, 'allocation')
        return parser

    def take_action(self, parsed_args):
        try:
            utils.api_client(self).set_allocation_lease(
                parsed_args.allocation, ttl=parsed_args.ttl,
                expires_at=parsed_args.expires_at)
        except client.ClientError as exc:
            raise utils.fail(exc)


class UnsetAllocationLease(command.Command):
    """Remove the lease of an allocation: it never expires (Ironic's
    behaviour)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('allocation', metavar='<allocation>',
                            help='UUID or name of the allocation.')
        return parser

    def take_action(self, parsed_args):
        try:
            utils.api_client(self).unset_allocation_lease(
                parsed_args.allocation)
        except client.ClientError as exc:
            raise utils.fail(exc)
