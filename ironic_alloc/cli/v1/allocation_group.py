"""``openstack baremetal allocation group create/list/show/set/unset/delete``:
allocation groups, changes to many allocations that commit together or
not at all."""

import json
import time
import uuid

from osc_lib.command import command
from osc_lib import exceptions

from ironic_alloc.cli import client
from ironic_alloc.cli.v1 import utils

FIELDS = ('uuid', 'name', 'state', 'owner', 'last_error', 'explanation',
          'expires_at', 'members', 'created_at', 'updated_at')
"""The fields ``show`` prints, in order, when the service sent them"""

LIST_COLUMNS = ('uuid', 'name', 'state', 'expires_at')
"""The columns of ``list`` without --long"""

WAIT_INTERVAL = 1.0
"""Seconds between two looks at a group being allocated (--wait)"""


def _members_from_file(path):
    try:
        with open(path) as f:
            members = json.load(f)
    except (OSError, ValueError) as exc:
        raise exceptions.CommandError('Cannot read the members of %s: %s'
                                      % (path, exc))
    if not isinstance(members, dict):
        raise exceptions.CommandError(
            '%s must hold a JSON object: allocation UUID -> member' % path)
    return members


def _handover(text):
    allocation, sep, node = text.partition('=')
    if not sep or not allocation or not node:
        raise exceptions.CommandError(
            '--handover takes ALLOCATION=NODE, got %r' % text)
    return allocation, node


def build_members(parsed_args):
    """The ``members`` object of the request, from the options."""
    members = {}
    if parsed_args.members_file:
        members.update(_members_from_file(parsed_args.members_file))
    if parsed_args.count:
        if not parsed_args.resource_class:
            raise exceptions.CommandError(
                '--count needs --resource-class')
        new = {'resource_class': parsed_args.resource_class}
        if parsed_args.traits:
            new['traits'] = parsed_args.traits
        if parsed_args.candidate_nodes:
            new['candidate_nodes'] = parsed_args.candidate_nodes
        if parsed_args.owner:
            new['owner'] = parsed_args.owner
        for _ in range(parsed_args.count):
            members[str(uuid.uuid4())] = dict(new)
    elif (parsed_args.resource_class or parsed_args.traits
          or parsed_args.candidate_nodes or parsed_args.owner):
        raise exceptions.CommandError(
            '--resource-class, --trait, --candidate-node and --owner '
            'describe the new members of --count')
    for allocation in parsed_args.release:
        members[allocation] = {}
    for text in parsed_args.handover:
        allocation, node = _handover(text)
        members[str(uuid.uuid4())] = {'handover_from': allocation,
                                      'node': node}
    if not members:
        raise exceptions.CommandError(
            'Give the members: --count with --resource-class, --release, '
            '--handover or --members-file')
    return members


def show_group(group):
    names = [name for name in FIELDS if name in group]
    return names, [group.get(name) for name in names]


class CreateAllocationGroup(command.ShowOne):
    """Create an allocation group: all of its members hold their nodes
    together, or none does.

    New members are allocations to find a node for (--count of them,
    alike, or any number from --members-file); --release deletes an
    allocation and --handover moves an allocation's node to a new one,
    in the same commit.  A release and a new member that takes the
    released allocation's name make a swap.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--name', metavar='<name>',
            help='Unique name of the group.')
        parser.add_argument(
            '--count', metavar='<count>', type=utils.positive_int,
            help='Add this many new members, each asking for a node of '
                 '--resource-class (and the --trait, --candidate-node and '
                 '--owner given).')
        parser.add_argument(
            '--resource-class', metavar='<resource_class>',
            dest='resource_class',
            help='Resource class of the --count new members.')
        parser.add_argument(
            '--trait', metavar='<trait>', dest='traits', action='append',
            default=[],
            help='A trait the nodes of the --count new members must have '
                 '(with the matching language: "!TRAIT" forbids it, '
                 '"in:A,B" asks for one of them).  Repeatable.')
        parser.add_argument(
            '--candidate-node', metavar='<node>', dest='candidate_nodes',
            action='append', default=[],
            help='Limit the --count new members to these nodes (UUID or '
                 'name).  Repeatable.')
        parser.add_argument(
            '--owner', metavar='<project>',
            help='Owner of the --count new members.')
        parser.add_argument(
            '--release', metavar='<allocation>', action='append',
            default=[],
            help='Delete this allocation (UUID) in the group\'s commit.  '
                 'Repeatable.')
        parser.add_argument(
            '--handover', metavar='<allocation>=<node>', action='append',
            default=[],
            help='Move the node (UUID or name) held by the allocation '
                 '(UUID) to a new member; the allocation is deleted in '
                 'the group\'s commit.  Repeatable.')
        parser.add_argument(
            '--members-file', metavar='<path>', dest='members_file',
            help='A JSON file with members of the group: an object whose '
                 'keys are allocation UUIDs (see the API reference).')
        lease = parser.add_mutually_exclusive_group()
        lease.add_argument(
            '--ttl', metavar='<seconds>', type=utils.positive_int,
            help='The group and its members expire this many seconds '
                 'from now.')
        lease.add_argument(
            '--expires-at', metavar='<time>', dest='expires_at',
            help='The group and its members expire at this time (ISO '
                 '8601).')
        parser.add_argument(
            '--wait', metavar='<seconds>', type=int, nargs='?', const=0,
            help='Wait until the group is active or in error (for at most '
                 'this many seconds; no limit when not given).  Exit '
                 'status 1 when it ends in error.')
        return parser

    def take_action(self, parsed_args):
        members = build_members(parsed_args)
        api = utils.api_client(self)
        try:
            group = api.create_allocation_group(
                members, name=parsed_args.name, ttl=parsed_args.ttl,
                expires_at=parsed_args.expires_at)
            if parsed_args.wait is not None:
                group = self._wait(api, group, parsed_args.wait)
        except client.ClientError as exc:
            raise utils.fail(exc)
        return show_group(group)

    @staticmethod
    def _wait(api, group, timeout):
        deadline = time.monotonic() + timeout if timeout else None
        while group.get('state') == 'allocating':
            if deadline is not None and time.monotonic() >= deadline:
                raise exceptions.CommandError(
                    'Allocation group %s is still allocating after %d '
                    'seconds' % (group['uuid'], timeout))
            time.sleep(WAIT_INTERVAL)
            group = api.get_allocation_group(group['uuid'])
        if group.get('state') == 'error':
            raise exceptions.CommandError(
                'Allocation group %s failed: %s'
                % (group['uuid'], group.get('last_error')))
        return group


class ListAllocationGroup(command.Lister):
    """List allocation groups."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--limit', metavar='<count>', type=utils.positive_int,
            help='At most this many groups (default: all of them, fetched '
                 'page by page).')
        parser.add_argument(
            '--marker', metavar='<uuid>',
            help='Start after the group of this UUID (the last one of a '
                 'previous list).')
        parser.add_argument(
            '--long', action='store_true', default=False,
            help='Show every field of the groups but their members and '
                 'explanation.')
        return parser

    def take_action(self, parsed_args):
        if parsed_args.long:
            columns = [name for name in FIELDS
                       if name not in ('members', 'explanation')]
        else:
            columns = list(LIST_COLUMNS)
        try:
            groups = utils.api_client(self).list_allocation_groups(
                limit=parsed_args.limit, marker=parsed_args.marker)
        except client.ClientError as exc:
            raise utils.fail(exc)
        return columns, ([item.get(name) for name in columns]
                         for item in groups)


class ShowAllocationGroup(command.ShowOne):
    """Show an allocation group and its members."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('group', metavar='<group>',
                            help='UUID or name of the group.')
        return parser

    def take_action(self, parsed_args):
        try:
            group = utils.api_client(self).get_allocation_group(
                parsed_args.group)
        except client.ClientError as exc:
            raise utils.fail(exc)
        return show_group(group)


class SetAllocationGroup(command.Command):
    """Set or renew the lease of an allocation group: the group is
    deleted, with all its members, when it expires."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('group', metavar='<group>',
                            help='UUID or name of the group.')
        utils.add_lease_arguments(parser, 'group')
        return parser

    def take_action(self, parsed_args):
        try:
            utils.api_client(self).set_allocation_group_lease(
                parsed_args.group, ttl=parsed_args.ttl,
                expires_at=parsed_args.expires_at)
        except client.ClientError as exc:
            raise utils.fail(exc)


class UnsetAllocationGroup(command.Command):
    """Remove the lease of an allocation group: neither the group nor its
    members expire."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('group', metavar='<group>',
                            help='UUID or name of the group.')
        # NOTE: the lease is the only thing of a group that can be unset;
        # the option says what goes, as OSC's unset commands do.
        parser.add_argument('--lease', action='store_true', required=True,
                            help='Remove the lease of the group and of its '
                                 'members.')
        return parser

    def take_action(self, parsed_args):
        try:
            utils.api_client(self).unset_allocation_group_lease(
                parsed_args.group)
        except client.ClientError as exc:
            raise utils.fail(exc)


class DeleteAllocationGroup(command.Command):
    """Delete allocation groups: every member of a group is deleted, and
    its node freed, in one commit."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('groups', metavar='<group>', nargs='+',
                            help='UUID or name of a group to delete.')
        return parser

    def take_action(self, parsed_args):
        utils.delete_each(parsed_args.groups,
                          utils.api_client(self).delete_allocation_group,
                          'allocation group', 'allocation groups')
