"""Versioned notifications: the event type, the publisher and the payloads.

The shape is Ironic's: a notification object names its priority (level),
its event type (object, action, status) and its publisher, and carries a
payload object whose ``SCHEMA`` maps each payload field to a field of a
source object.  Payloads of the events Ironic has carry Ironic's fields
and versions, serialised under Ironic's ``ironic_object.*`` keys, so that
a consumer written for Ironic reads them unchanged.  Sending is
``common/notifications.py``'s.
"""

from oslo_utils import strutils

from ironic_alloc.common import notifications
from ironic_alloc.objects import base
from ironic_alloc.objects import fields

STATUSES = ('start', 'end', 'error', 'success')


@base.IronicAllocObjectRegistry.register
class EventType(base.IronicAllocObject):
    # Version 1.0: Initial version (Ironic's EventType 1.1 fields)
    VERSION = '1.0'

    fields = {
        'object': fields.StringField(),
        'action': fields.StringField(),
        'status': fields.EnumField(valid_values=STATUSES),
    }


@base.IronicAllocObjectRegistry.register
class NotificationPublisher(base.IronicAllocObject):
    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'service': fields.StringField(),
        'host': fields.StringField(),
    }


class NotificationBase(base.IronicAllocObject):
    """A notification; subclasses add a ``payload`` object field.

    ``EVENT_PREFIX`` is ``baremetal`` for Ironic's events and
    ``ironic_alloc`` for the events of this service only.
    """

    EVENT_PREFIX = 'baremetal'

    fields = {
        'level': fields.EnumField(valid_values=notifications.LEVELS),
        'event_type': fields.ObjectField('EventType'),
        'publisher': fields.ObjectField('NotificationPublisher'),
    }

    def event_type_name(self):
        return '.'.join((self.EVENT_PREFIX, self.event_type.object,
                         self.event_type.action, self.event_type.status))

    def emit(self, context):
        """Queue the notification for sending, when its level is sent.

        :raises: ValueError when the payload was not filled from its
            source objects (a bug of the caller).
        """
        if not notifications.enabled(self.level):
            return
        if not self.payload.populated:
            raise ValueError('The payload of %s was not populated'
                             % self.obj_name())
        # NOTE: every field of a new payload looks changed; the list of
        # changes would only repeat the field names on the wire.
        self.payload.obj_reset_changes()
        notifications.send(
            context, self.level, self.event_type_name(),
            '%s.%s' % (self.publisher.service, self.publisher.host),
            self.payload.obj_to_primitive())


class NotificationPayloadBase(base.IronicAllocObject):
    """A payload filled from source objects through ``SCHEMA``:
    {payload field: (source name, source field)}."""

    # NOTE: Ironic's keys ("ironic_object.name", "ironic_object.data"...):
    # the payloads are part of the wire-compatible interface.
    OBJ_SERIAL_NAMESPACE = 'ironic_object'
    OBJ_PROJECT_NAMESPACE = 'ironic'

    SCHEMA = {}

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.populated = not self.SCHEMA

    def populate_schema(self, **sources):
        """Copy every field of ``SCHEMA`` from ``sources``.

        :raises: KeyError naming a source not given; AttributeError for a
            source without the field.  A field of a source object that is
            not set is null.
        """
        for name, (source, field) in self.SCHEMA.items():
            obj = sources[source]
            # NOTE: a new object (the start of a creation) has fields not
            # set yet, its creation time for one: they are sent as null.
            if (isinstance(obj, base.IronicAllocObject)
                    and not obj.obj_attr_is_set(field)):
                setattr(self, name, None)
            else:
                setattr(self, name, getattr(obj, field))
        self.populated = True


def publisher(service):
    """The publisher of this host: ``service`` is one of
    notifications.API_SERVICE and notifications.CONDUCTOR_SERVICE."""
    return NotificationPublisher(service=service,
                                 host=notifications.host())


def mask_secrets(value):
    """A copy of a dictionary with its passwords and secrets masked, as
    the API shows them."""
    if not value:
        return value
    return strutils.mask_dict_password(value, '******')
