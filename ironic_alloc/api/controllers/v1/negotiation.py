"""Microversion negotiation: the one place reading the version headers."""

from webob import headers as webob_headers

from ironic_alloc.api.controllers import base
from ironic_alloc.api.controllers.v1 import versions
from ironic_alloc.common import exception

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

        def add_headers(status, headers, exc_info=None):
            names = {h.lower() for h, _v in version_headers(version)}
            headers = [(h, v) for h, v in headers if h.lower() not in names]
            return start_response(status, headers + version_headers(version),
                                  exc_info)
        return self.app(environ, add_headers)
