"""Node states and maintenance: /v1/nodes/{node}/states[/provision|power]
and /v1/nodes/{node}/maintenance."""

import contextlib
import datetime

from oslo_log import log
from pecan import rest
import wsme
from wsme import types as wtypes

from ironic_alloc import api
from ironic_alloc.api.controllers.v1 import access
from ironic_alloc.api.controllers.v1 import types
from ironic_alloc.api.controllers.v1 import unsupported
from ironic_alloc.api.controllers.v1 import utils
from ironic_alloc.api import expose
from ironic_alloc.common import exception
from ironic_alloc.common import notifications
from ironic_alloc.common import states
from ironic_alloc.objects import node as node_obj

LOG = log.getLogger(__name__)

# Provision verbs newer than 1.1: verb -> version gate.
VERB_GATES = {
    'manage': utils.allow_manageable_verbs,
    'provide': utils.allow_manageable_verbs,
    'abort': utils.allow_abort_verb,
    'adopt': utils.allow_adopt_verb,
    'deploy': utils.allow_deploy_undeploy_verbs,
    'undeploy': utils.allow_deploy_undeploy_verbs,
}

_CONFIGDRIVE_KEYS = {'meta_data', 'network_data', 'user_data',
                     'vendor_data'}


class NodeStates(wtypes.Base):
    """The states of a node."""

    console_enabled = types.boolean
    last_error = str
    power_state = str
    provision_state = str
    provision_updated_at = datetime.datetime
    raid_config = types.jsontype
    target_power_state = str
    target_provision_state = str
    target_raid_config = types.jsontype

    @classmethod
    def convert(cls, node):
        result = cls(
            console_enabled=node.console_enabled,
            last_error=node.last_error,
            power_state=node.power_state,
            provision_state=utils.shown_provision_state(
                node.provision_state),
            provision_updated_at=node.provision_updated_at,
            target_power_state=node.target_power_state,
            target_provision_state=node.target_provision_state)
        if 'raid_config' not in utils.disallowed_fields():
            result.raid_config = node.raid_config
            result.target_raid_config = node.target_raid_config
        return result


def check_configdrive(verb, configdrive):
    """Ironic's rules on the (accepted, then ignored) config drive.

    :raises: Invalid (400), NotAcceptable (406).
    """
    if configdrive is None:
        return
    allowed = ['active', 'deploy']
    if utils.allow_rebuild_configdrive():
        allowed.append('rebuild')
    if verb not in allowed:
        raise exception.Invalid(
            'Adding a config drive is only supported when setting '
            'provision state to %s' % ', '.join(allowed))
    if isinstance(configdrive, dict):
        if not utils.allow_build_configdrive():
            raise exception.NotAcceptable(
                'Providing a JSON object for configdrive is only supported '
                'starting with API version 1.56')
        unknown = set(configdrive) - _CONFIGDRIVE_KEYS
        if unknown:
            raise exception.Invalid(
                'Invalid configdrive format: unknown keys %s'
                % ', '.join(sorted(unknown)))
        if ('vendor_data' in configdrive
                and not utils.allow_configdrive_vendor_data()):
            raise exception.NotAcceptable(
                'Providing vendor_data in configdrive is only supported '
                'starting with API version 1.59')
    elif not isinstance(configdrive, str):
        raise exception.Invalid('Invalid configdrive format: expected a '
                                'string or a JSON object')


def canonical_action(verb, node):
    """The action of states.VERBS for a provision target.

    :raises: UnsupportedFeature (400) for verbs this service does not
        offer, NotAcceptable (406) for a verb newer than the version,
        InvalidStateRequested (400) for an unknown verb.
    """
    if verb in states.UNSUPPORTED_VERBS:
        raise exception.UnsupportedFeature(
            feature='The "%s" provision action' % verb)
    if verb not in states.VERBS:
        raise exception.InvalidStateRequested(
            action=verb, node=node.uuid, state=node.provision_state)
    gate = VERB_GATES.get(verb)
    if gate is not None and not gate():
        raise exception.NotAcceptable(
            'The "%s" provision action is not available in API version %s.'
            % (verb, api.request.version))
    return states.VERBS[verb]


class NodeStatesController(rest.RestController):
    """The states of one node and the actions changing them."""

    _custom_actions = {
        'power': ['PUT'],
        'provision': ['PUT'],
    }

    # NOTE: RAID and console need hardware.
    raid = unsupported.feature_controller('RAID configuration')(None)
    console = unsupported.feature_controller('The node console')(None)
    boot_mode = unsupported.feature_controller('Changing boot mode')(None)
    secure_boot = unsupported.feature_controller(
        'Changing secure boot')(None)

    def __init__(self, node_ident):
        super().__init__()
        self.node_ident = node_ident

    @expose.expose(NodeStates)
    def get_all(self):
        """Show the node's states."""
        return NodeStates.convert(utils.get_node(
            self.node_ident, 'baremetal:node:get_states'))

    @expose.expose(None, str, types.jsontype, types.jsontype,
                   types.jsontype, str, types.boolean, str,
                   status_code=202)
    def provision(self, target, configdrive=None, clean_steps=None,
                  service_steps=None, runbook=None, disable_ramdisk=None,
                  rescue_password=None):
        """Start a provision action; 202 and a Location to poll.

        :param target: a verb ('manage', 'provide', 'active'/'deploy',
            'deleted'/'undeploy', 'rebuild', 'abort', 'adopt').
        :param configdrive: accepted (string, or object at 1.56+) and
            ignored: nothing boots here.
        :param clean_steps, service_steps, runbook, disable_ramdisk,
            rescue_password: arguments of the clean, service and rescue
            verbs, which are refused naming the verb.
        """
        node = utils.get_node(self.node_ident,
                              'baremetal:node:set_provision_state')
        action = canonical_action(target, node)
        if (action == 'abort' and node.provision_state == states.DEPLOYWAIT
                and not utils.allow_deploy_abort()):
            raise exception.NotAcceptable(
                'Aborting a deployment in state "%s" requires API version '
                '1.110 or newer.' % states.DEPLOYWAIT)
        steps_args = {'clean_steps': clean_steps,
                      'service_steps': service_steps, 'runbook': runbook,
                      'disable_ramdisk': disable_ramdisk,
                      'rescue_password': rescue_password}
        given = sorted(k for k, v in steps_args.items() if v is not None)
        if given:
            raise exception.Invalid(
                '%s only apply to the clean, service and rescue provision '
                'actions, not to "%s".' % (', '.join(given), target))
        check_configdrive(target, configdrive)
        if action == 'deploy':
            access.check_deploy_reservation(node)
        with utils.node_rpc(self.node_ident):
            api.request.rpcapi.do_provisioning_action(
                api.request.context, node.id, action,
                utils.conductor_host(node))
        utils.set_location('nodes', self.node_ident, 'states')

    @expose.expose(None, str, wtypes.IntegerType(minimum=1),
                   status_code=202)
    def power(self, target, timeout=None):
        """Start a power action; 202 and a Location to poll."""
        node = utils.get_node(self.node_ident,
                              'baremetal:node:set_power_state')
        soft = (states.SOFT_POWER_OFF, states.SOFT_REBOOT)
        if (target in soft or timeout is not None) and \
                not utils.allow_soft_power_off():
            raise exception.NotAcceptable(
                'Soft power actions and timeout require API version 1.27 '
                'or newer.')
        # NOTE: WSME does not enforce the minimum of IntegerType on body
        # arguments.
        if timeout is not None and timeout < 1:
            raise exception.Invalid('timeout has to be positive integer')
        if target not in states.POWER_TARGETS:
            raise exception.InvalidStateRequested(
                action=target, node=node.uuid, state=node.power_state)
        states.check_power_off_allowed(node, target)
        with utils.node_rpc(self.node_ident):
            api.request.rpcapi.change_node_power_state(
                api.request.context, node.id, target,
                utils.conductor_host(node), timeout=timeout)
        utils.set_location('nodes', self.node_ident, 'states')


class _Notified:
    """The node the end notification of a change reports: the one the
    change left."""

    def __init__(self, node):
        self.node = node


@contextlib.contextmanager
def notifying(node, action):
    """Around a change of a node by the API, Ironic's notifications:
    baremetal.node.<action>.start before, .end after, .error (then the
    error goes on) when it fails."""
    context = api.request.context
    node_obj.notify(context, node, action, 'start',
                    notifications.API_SERVICE)
    notified = _Notified(node)
    try:
        yield notified
    except Exception:
        node_obj.notify(context, node, action, 'error',
                        notifications.API_SERVICE)
        raise
    node_obj.notify(context, notified.node, action, 'end',
                    notifications.API_SERVICE)


class NodeMaintenanceController(rest.RestController):
    """Maintenance mode of one node (202 like Ironic)."""

    def __init__(self, node_ident):
        super().__init__()
        self.node_ident = node_ident

    def _set_maintenance(self, maintenance, reason=None):
        node = utils.get_node(self.node_ident,
                              'baremetal:node:set_maintenance'
                              if maintenance else
                              'baremetal:node:clear_maintenance')
        node.maintenance = maintenance
        node.maintenance_reason = reason
        if not maintenance:
            node.fault = None
        with notifying(node, 'maintenance_set') as notified, \
                utils.node_rpc(self.node_ident):
            notified.node = api.request.rpcapi.update_node(
                api.request.context, node, utils.conductor_host(node))

    @expose.expose(None, wsme.types.text, status_code=202)
    def put(self, reason=None):
        """Put the node in maintenance (``reason`` in body or query)."""
        if reason is not None and not isinstance(reason, str):
            raise exception.Invalid('The maintenance reason must be a '
                                    'string.')
        utils.check_stored_sizes({'maintenance_reason': reason})
        self._set_maintenance(True, reason)

    @expose.expose(None, status_code=202)
    def delete(self):
        """Take the node out of maintenance."""
        self._set_maintenance(False)
