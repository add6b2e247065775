"""ironic_alloc's own API extensions and their versions: the one home.

Ironic's microversions (versions.py) keep their exact meaning; what
ironic_alloc adds on top of the Bare Metal API is versioned apart, and
a client sees it only when it asks::

    OpenStack-API-Version: ironic-alloc 1.N      (or "ironic-alloc latest")

This module holds the served range, the table of extension versions, the
table of features (name -> version that adds it), the extension fields
of each resource and the extension endpoints; controllers ask only the
helpers here (``allow_extension``, ``require_extension``, the field
gates), never compare numbers themselves.  Negotiation of the header is
in negotiation.py, next to Ironic's.

Adding an extension (one issue, one version):

1. add ``MAX_MINOR + 1`` to VERSIONS with one sentence and raise
   MAX_MINOR;
2. name the feature in FEATURES with that minor version;
3. gate the code with ``allow_extension``/``require_extension``, list new
   fields in FIELDS and new top-level endpoints in ENDPOINTS (never a
   name of IRONIC_RESOURCES);
4. add the row to doc/source/api/extensions.rst and a release note.
"""

from ironic_alloc import api
from ironic_alloc.api.controllers import base
from ironic_alloc.common import exception
from ironic_alloc.conf import CONF

TOKEN = 'ironic-alloc'
"""The service token of the extension entry of OpenStack-API-Version"""

MIN_HEADER = 'X-OpenStack-Ironic-Alloc-Extension-Minimum-Version'
"""Response header: the oldest extension version served"""

MAX_HEADER = 'X-OpenStack-Ironic-Alloc-Extension-Maximum-Version'
"""Response header: the newest extension version served"""

DOCUMENT_KEY = 'ironic_alloc_extensions'
"""The key of GET / and GET /v1 telling the range and the version used"""

MAJOR = 1
MIN_MINOR = 0
MAX_MINOR = 3

# Extension versions, one sentence each.  A version is never reused or
# changed once released; each later issue adds the next number.
VERSIONS = {
    0: 'Baseline: no extension; the Bare Metal API as Ironic defines it.',
    1: 'The matching language of allocations: forbidden ("!TRAIT") and '
       'any-of ("in:A,B") traits, the "match" object (hardware minimums, '
       'cpu_arch, capabilities, conductor group), and the funnel of '
       'POST /v1/allocations/explain and of a failed allocation\'s '
       '"explanation".',
    2: 'Node reservations with leases: the /v1/reservations resource '
       '(synchronous, first free node of an ordered list), the lease of '
       'reservations and allocations ("ttl", "expires_at") and deploys '
       'that must show the reservation of their node.',
    3: 'Allocation groups: the /v1/allocation_groups resource (new, '
       'handed-over and released allocations committed in one transaction '
       'or not at all) and the "group_uuid" of an allocation.',
}

# Feature name -> the minor extension version that adds it.
FEATURES = {
    'matching': 1,
    'reservations': 2,
    'allocation_groups': 3,
}

# Resource -> {wire field name: feature}.  These fields are hidden from
# responses and refused (400) in bodies and ``fields`` below the version
# of their feature.
FIELDS = {
    'node': {},
    'allocation': {'match': 'matching', 'explanation': 'matching',
                   'expires_at': 'reservations', 'ttl': 'reservations',
                   'group_uuid': 'allocation_groups'},
}

# Top-level /v1 name -> (feature, controller instance).  The name must
# not be one of IRONIC_RESOURCES (unit-tested).  Filled by v1/__init__.py,
# which imports the controllers (this module is imported by them):
# 'reservations' (feature "reservations"), 'allocation_groups' (feature
# "allocation_groups").
ENDPOINTS = {}

# Top-level /v1 resources that Ironic has or has announced (its v1
# controller map and api-ref, 2026-08); extension endpoints never take
# one of these names, so no Ironic URL is ever shadowed.
IRONIC_RESOURCES = frozenset([
    'nodes', 'ports', 'portgroups', 'chassis', 'drivers', 'conductors',
    'allocations', 'deploy_templates', 'runbooks', 'volume', 'lookup',
    'heartbeat', 'events', 'shards', 'continue_inspection',
    'inspection_rules',
])


def min_version():
    return base.Version(MAJOR, MIN_MINOR)


def max_version():
    return base.Version(MAJOR, MAX_MINOR)


def version_string(minor):
    return '%d.%d' % (MAJOR, minor)


def requested_version():
    """The extension version negotiated for the request, or None when it
    did not ask for one (or extensions are disabled)."""
    # NOTE: requests routed outside the root and v1 controllers never
    # negotiated; they are plain Ironic requests.
    return getattr(api.request, 'extension_version', None)


def allow_extension(feature):
    """Whether the request's extension version has ``feature``.

    :raises: KeyError for a feature not in FEATURES (a programming error).
    """
    minor = FEATURES[feature]
    version = requested_version()
    return version is not None and version.minor >= minor


def require_extension(feature, what=None):
    """Refuse the request (400) unless its version has ``feature``.

    :param what: what was used, for the message (default: the feature).
    :raises: ExtensionVersionRequired naming the version to ask for.
    """
    if not allow_extension(feature):
        raise exception.ExtensionVersionRequired(
            what=what or 'The "%s" extension' % feature,
            version=version_string(FEATURES[feature]))


def hidden_fields(resource):
    """Extension fields of ``resource`` the request may not see."""
    fields = FIELDS[resource]
    if not fields:
        return ()
    return [name for name, feature in fields.items()
            if not allow_extension(feature)]


def check_fields(resource, names):
    """400 when ``names`` (of ``fields``, a body, a patch) holds an
    extension field of ``resource`` the request's version lacks."""
    fields = FIELDS[resource]
    if not fields or not names:
        return
    for name in sorted(set(names) & fields.keys()):
        require_extension(fields[name], 'The field "%s" of %s (extension '
                          '"%s")' % (name, resource, fields[name]))


def endpoint(name):
    """The controller of extension endpoint /v1/``name``, or None when
    there is none by that name or [api]enable_extensions is False (then
    the path is unknown, 404, as in Ironic).

    :raises: ExtensionVersionRequired (400) when the request's version
        lacks its feature.
    """
    found = ENDPOINTS.get(name)
    if found is None or not CONF.api.enable_extensions:
        return None
    feature, controller = found
    require_extension(feature, 'The endpoint /v1/%s (extension "%s")'
                      % (name, feature))
    return controller


def allowed_endpoints():
    """Names of the extension endpoints the request's version has."""
    return [name for name, (feature, _c) in ENDPOINTS.items()
            if allow_extension(feature)]


def add_document(doc):
    """``doc`` (GET / or GET /v1) plus DOCUMENT_KEY when the request asked
    for an extension version; unchanged otherwise."""
    version = requested_version()
    if version is not None:
        doc[DOCUMENT_KEY] = {'min_version': version_string(MIN_MINOR),
                             'max_version': version_string(MAX_MINOR),
                             'version': str(version)}
    return doc
