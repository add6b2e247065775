"""Base of the WSME wire types."""

import datetime

from wsme import types as wtypes


class APIBase(wtypes.Base):
    """A wire resource; ``fields`` names its attributes set from objects."""

    created_at = wtypes.wsattr(datetime.datetime, readonly=True)
    """The time in UTC at which the object is created"""

    updated_at = wtypes.wsattr(datetime.datetime, readonly=True)
    """The time in UTC at which the object is updated"""

    def as_dict(self):
        """The set attributes as a dict (unset ones are left out)."""
        return {k: getattr(self, k) for k in self.fields
                if hasattr(self, k) and getattr(self, k) != wtypes.Unset}

    def unset_fields_except(self, except_list=None):
        """Unset every field except those named (all when None)."""
        keep = set(except_list or [])
        for name in self.as_dict():
            if name not in keep:
                setattr(self, name, wtypes.Unset)

    @property
    def fields(self):
        return [attr.key for attr in wtypes.list_attributes(type(self))]


class Version:
    """A requested API version, parsed from the request headers.

    ``X-OpenStack-Ironic-API-Version: 1.x|latest`` wins over
    ``OpenStack-API-Version: baremetal 1.x|latest``; without either the
    default (minimum) version applies.
    """

    string = 'X-OpenStack-Ironic-API-Version'
    """Request and response header carrying the version"""

    min_string = 'X-OpenStack-Ironic-API-Minimum-Version'
    """Response header: the oldest version served"""

    max_string = 'X-OpenStack-Ironic-API-Maximum-Version'
    """Response header: the newest version served"""

    generic_string = 'OpenStack-API-Version'
    """The service-type qualified header of the API-SIG guideline"""

    service_type = 'baremetal'

    def __init__(self, major, minor):
        self.major = major
        self.minor = minor

    def __repr__(self):
        return '%d.%d' % (self.major, self.minor)

    def __eq__(self, other):
        return (self.major, self.minor) == (other.major, other.minor)

    def __lt__(self, other):
        return (self.major, self.minor) < (other.major, other.minor)

    def __gt__(self, other):
        return (self.major, self.minor) > (other.major, other.minor)

    @classmethod
    def requested(cls, headers):
        """The raw version text the client asked for, or None."""
        value = headers.get(cls.string)
        if value is not None:
            return value.strip()
        for item in headers.get(cls.generic_string, '').split(','):
            parts = item.split()
            if len(parts) == 2 and parts[0].lower() == cls.service_type:
                return parts[1]
        return None

    @classmethod
    def parse(cls, text, latest):
        """A Version from ``1.x`` or ``latest`` text.

        :raises: ValueError for anything else.
        """
        if text.lower() == 'latest':
            text = latest
        parts = text.split('.')
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise ValueError(text)
        return cls(int(parts[0]), int(parts[1]))
