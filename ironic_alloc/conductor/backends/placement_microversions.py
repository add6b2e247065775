"""The Placement microversion each call of the Placement backend needs.

One table: every request the backend sends asks for the version its row
names, so raising one call's version (a new query parameter, a new body
field) changes that call only.  A request that matches no row is refused
before it is sent: a new call needs a row.

Placement gives machine-readable error codes from 1.23 on; every call that
Placement may refuse with a 409 asks for at least that, so refusals are
told apart (``placement.concurrent_update``) and logged with their code.
"""

import re

# (method, path template, microversion, what needs it)
CALLS = (
    ('GET', '/allocations/{consumer}', '1.28',
     'the consumer generation, project and user (whose claim it is) in '
     'the answer'),
    ('PUT', '/allocations/{consumer}', '1.38',
     'consumer generation (1.28: null for a new consumer) and consumer '
     'type (1.38)'),
    ('DELETE', '/allocations/{consumer}', '1.0', 'release a claim'),
    ('POST', '/allocations', '1.38',
     'an allocation group\'s claims in one request: consumer generations '
     '(1.28), consumer type (1.38)'),
    ('GET', '/resource_providers', '1.4',
     'member_of (1.3) and resources (1.4) filters'),
    ('POST', '/resource_providers', '1.23',
     'the created provider in the answer (1.20), error codes (1.23)'),
    ('GET', '/resource_providers/{uuid}', '1.0', 'name and generation'),
    ('PUT', '/resource_providers/{uuid}', '1.23',
     'rename; error codes (1.23) in a refusal'),
    ('DELETE', '/resource_providers/{uuid}', '1.23',
     'delete; error codes (1.23) in a refusal'),
    ('GET', '/resource_providers/{uuid}/aggregates', '1.23',
     'the generation (1.19) and error codes (1.23)'),
    ('PUT', '/resource_providers/{uuid}/aggregates', '1.23',
     'the generation (1.19) and error codes (1.23)'),
    ('GET', '/resource_providers/{uuid}/inventories', '1.26',
     'the generation and error codes (1.23), reserved = total (1.26)'),
    ('PUT', '/resource_providers/{uuid}/inventories', '1.26',
     'reserved equal to total (1.26) for a node held back'),
    ('GET', '/resource_providers/{uuid}/traits', '1.23',
     'traits (1.6) and error codes (1.23)'),
    ('PUT', '/resource_providers/{uuid}/traits', '1.23',
     'traits (1.6) and error codes (1.23)'),
    ('GET', '/resource_providers/{uuid}/allocations', '1.0',
     'the consumers of one provider'),
    ('GET', '/resource_classes/{name}', '1.2',
     'whether a class exists (a claim refused with 400)'),
    ('PUT', '/resource_classes/{name}', '1.7', 'idempotent creation'),
    ('PUT', '/traits/{name}', '1.6', 'idempotent creation'),
)


def _pattern(template):
    return re.compile('^%s$' % re.sub(r'\\\{[a-z_]+\\\}', '[^/?]+',
                                      re.escape(template)))


_TABLE = [(method, _pattern(template), version)
          for method, template, version, _why in CALLS]


def microversion_for(method, path):
    """The microversion of one request (``path`` may carry a query).

    :raises: ValueError when no row of CALLS matches.
    """
    bare = path.split('?', 1)[0]
    for row_method, pattern, version in _TABLE:
        if row_method == method and pattern.match(bare):
            return version
    raise ValueError('No Placement microversion is known for %s %s: add '
                     'the call to %s.CALLS' % (method, bare, __name__))
