"""Version negotiation: the one place reading the version headers.

Two independent versions: Ironic's microversion (versions.py) and
ironic_alloc's extension version (extensions.py), the ``ironic-alloc``
entry of ``OpenStack-API-Version``.  A request without that entry is
negotiated, and answered, exactly as before extensions existed.
"""

from webob import headers as webob_headers

from ironic_alloc.api.controllers import base
from ironic_alloc.api.controllers.v1 import extensions
from ironic_alloc.api.controllers.v1 import versions
from ironic_alloc.common import exception
from ironic_alloc.conf import CONF

MIN_VERSION = base.Version(versions.BASE_VERSION, versions.MINOR_MIN_VERSION)
MAX_VERSION = base.Version(versions.BASE_VERSION, versions.MINOR_MAX_VERSION)


def negotiate(headers):
    """The version a request asks for, checked against the served range.

    :returns: a base.Version.
    :raises: Invalid (400) for a malformed header value, NotAcceptable
        (406) for a version this service does not serve.
    """
    text = base.Version.requested(headers)
    if text is None:
        text = versions.DEFAULT_VERSION_STRING
    try:
        version = base.Version.parse(text, versions.MAX_VERSION_STRING)
    except ValueError:
        raise exception.Invalid(
            'Invalid value for %s header: "%s". Expected "1.x" or "latest".'
            % (base.Version.string, text))
    supported = {'ver': version, 'min': versions.MIN_VERSION_STRING,
                 'max': versions.MAX_VERSION_STRING}
    if version.major != versions.BASE_VERSION:
        raise exception.NotAcceptable(
            'Mutually exclusive versions requested. Version %(ver)s '
            'requested but not supported by this service. The supported '
            'version range is: [%(min)s, %(max)s].' % supported)
    if version < MIN_VERSION or version > MAX_VERSION:
        raise exception.NotAcceptable(
            'Version %(ver)s was requested but the minor version is not '
            'supported by this service. The supported version range is: '
            '[%(min)s, %(max)s].' % supported)
    return version


def version_headers(version=None):
    """Response headers telling the served range (and the chosen version).

    :param version: the negotiated version, or None when negotiation
        failed (then only the range is told).
    """
    headers = [(base.Version.min_string, versions.MIN_VERSION_STRING),
               (base.Version.max_string, versions.MAX_VERSION_STRING),
               ('Vary', '%s, %s' % (base.Version.string,
                                    base.Version.generic_string))]
    if version is not None:
        headers += [(base.Version.string, str(version)),
                    (base.Version.generic_string,
                     '%s %s' % (base.Version.service_type, version))]
    return headers


def _extension_text(headers):
    """The version text of the ``ironic-alloc`` entry of
    OpenStack-API-Version ('' when the entry has none), or None when the
    request has no such entry."""
    value = headers.get(base.Version.generic_string)
    # NOTE: the hot path: most requests have no such header, or only a
    # baremetal entry; one lookup and one substring test decide.
    if not value or extensions.TOKEN not in value.lower():
        return None
    for token, words in base.api_version_entries(value):
        if token == extensions.TOKEN:
            return ' '.join(words)
    return None


def negotiate_extension(headers):
    """The extension version a request asks for, checked against the
    served range.

    :returns: a base.Version, or None when the request has no
        ``ironic-alloc`` entry or [api]enable_extensions is False (then
        the entry is ignored, as plain Ironic would).
    :raises: Invalid (400) for a malformed value, NotAcceptable (406) for
        a version this service does not serve.
    """
    text = _extension_text(headers)
    if text is None or not CONF.api.enable_extensions:
        return None
    newest = extensions.max_version()
    try:
        version = base.Version.parse(text, str(newest))
    except ValueError:
        raise exception.Invalid(
            'Invalid value for %(header)s header: "%(entry)s". Expected '
            '"%(token)s 1.N" or "%(token)s latest".'
            % {'header': base.Version.generic_string,
               'entry': ('%s %s' % (extensions.TOKEN, text)).strip(),
               'token': extensions.TOKEN})
    oldest = extensions.min_version()
    if (version.major != extensions.MAJOR or version < oldest
            or version > newest):
        raise exception.NotAcceptable(
            'ironic_alloc API extension version %(ver)s was requested but '
            'is not supported by this service. The supported extension '
            'version range is: [%(min)s, %(max)s].'
            % {'ver': version, 'min': oldest, 'max': newest})
    return version


def _served_extension_headers():
    return [(extensions.MIN_HEADER, str(extensions.min_version())),
            (extensions.MAX_HEADER, str(extensions.max_version()))]


def extension_headers(request_headers):
    """Response headers for the extension entry of a request: none
    without one; the served range, and the version used when it was
    acceptable."""
    try:
        version = negotiate_extension(request_headers)
    except exception.IronicAllocException:
        # NOTE: refused (400/406): the range tells the client what to ask.
        return _served_extension_headers()
    if version is None:
        return []
    # NOTE: a second OpenStack-API-Version header next to the baremetal
    # one, which stays as it is for Ironic's clients.
    return _served_extension_headers() + [
        (base.Version.generic_string, '%s %s' % (extensions.TOKEN, version))]


class VersionHeadersMiddleware:
    """Adds the version headers of negotiation to every API response."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        request_headers = webob_headers.EnvironHeaders(environ)
        try:
            version = negotiate(request_headers)
        except exception.IronicAllocException:
            version = None
        ours = version_headers(version) + extension_headers(request_headers)
        names = {h.lower() for h, _v in ours}

        def add_headers(status, headers, exc_info=None):
            headers = [(h, v) for h, v in headers if h.lower() not in names]
            return start_response(status, headers + ours, exc_info)
        return self.app(environ, add_headers)
