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


def api_version_entries(value):
    """(service token, [version words]) of each entry of an
    ``OpenStack-API-Version`` value, in order.

    The value may name several services, comma-separated: a client may
    send ``baremetal 1.79, ironic-alloc 1.0``, and WSGI servers fold a
    repeated header into one such value (RFC 9110, section 5.3).  Tokens
    are lowercased; empty entries are skipped.
    """
    for item in value.split(','):
        words = item.split()
        if words:
            yield words[0].lower(), words[1:]


class Version:
    """A requested API version, parsed from the request headers.

    ``X-OpenStack-Ironic-API-Version: 1.x|latest`` wins over
    ``OpenStack-API-Version: baremetal 1.x|latest``; without either the
    default (minimum) version applies.  Other entries of
    ``OpenStack-API-Version`` (other services, ironic_alloc's extension
    version) never change the Ironic version.
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
        value = headers.get(cls.generic_string)
        if value:
            # NOTE: the first well-formed baremetal entry; an entry of
            # another token, or a baremetal one that is not two words,
            # is not ours (as before extensions existed).
            for token, words in api_version_entries(value):
                if token == cls.service_type and len(words) == 1:
                    return words[0]
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
