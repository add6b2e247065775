"""What the commands of this plugin share."""

import argparse
import logging

from osc_lib import exceptions

from ironic_alloc.cli import client

LOG = logging.getLogger(__name__)


def add_lease_arguments(parser, what):
    """--ttl or --expires-at, exactly one of them."""
    lease = parser.add_mutually_exclusive_group(required=True)
    lease.add_argument(
        '--ttl', metavar='<seconds>', type=int,
        help='The %s expires this many seconds from now (by the '
             'service\'s database clock).' % what)
    lease.add_argument(
        '--expires-at', metavar='<time>', dest='expires_at',
        help='The %s expires at this time (ISO 8601, UTC unless it names '
             'an offset, for example 2030-01-31T12:00:00Z).' % what)


def positive_int(text):
    """argparse type: an integer greater than zero."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError('%r is not an integer' % text)
    if value <= 0:
        raise argparse.ArgumentTypeError('%d is not greater than zero'
                                         % value)
    return value


def api_client(cmd):
    return cmd.app.client_manager.baremetal_alloc


def fail(exc):
    """The command error of a failed API call: the service's message
    (and the reasons of a refused reservation), exit status 1."""
    return exceptions.CommandError(str(exc))


def delete_each(names, delete, noun, plural):
    """Call ``delete(name)`` for every name, logging each outcome, so that
    one refusal does not stop the others; then a command error counting
    the refusals, if any.

    :param noun: what one deleted thing is called, in the messages
        (``plural``: what several are called).
    """
    failed = 0
    for name in names:
        try:
            delete(name)
        except client.ClientError as exc:
            failed += 1
            LOG.error('Failed to delete %s %s: %s', noun, name, exc)
        else:
            LOG.info('Deleted %s %s', noun, name)
    if failed:
        raise exceptions.CommandError(
            '%d of %d %s could not be deleted' % (failed, len(names), plural))
