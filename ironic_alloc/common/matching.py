"""The matching language of allocations (API extension "matching").

This module is the language's one home, pure functions only (the database
layer imports it):

* the trait expressions of an allocation's ``traits``: ``TRAIT``
  (required), ``!TRAIT`` (forbidden), ``in:A,B,C`` (at least one of them),
  parsed by ``parse_traits``;
* the ``match`` object of an allocation (hardware minimums, CPU
  architecture, capabilities, conductor group), checked by
  ``check_match``;
* how a node's free-form ``properties`` become the values the SQL matcher
  compares (``node_match_columns`` and ``node_capabilities``), written
  with every node write that can change them.

The SQL of every operator is in ``db/sqlalchemy/statements.py``
(``candidate_groups``).
"""

import collections
import functools
import json
import re

from ironic_alloc.common import exception

FORBIDDEN_PREFIX = '!'
ANY_OF_PREFIX = 'in:'

# ``match`` keys compared as minimums, in the order they are checked (and
# explained): the value of the node's properties must be at least this.
MINIMUMS = ('cpus', 'memory_mb', 'local_gb')
MATCH_KEYS = MINIMUMS + ('cpu_arch', 'capabilities', 'conductor_group')

# NOTE: the normalised columns are BIGINT on every database; a larger
# number is "non-numeric", so it never passes a minimum rather than
# failing a write.
MAX_NUMBER = 2 ** 63 - 1

# Longest capability name and value, CPU architecture and conductor group
# stored and compared (String(255) columns).
MAX_TEXT = 255

# Most capabilities one ``match`` may ask for: each is one probe of the
# capability index, and the statements are cached per count.
MAX_CAPABILITIES = 20

_INTEGER_RE = re.compile(r'^\s*[+-]?[0-9]+\s*$')
# NOTE: Ironic's rule for conductor group names.
_CONDUCTOR_GROUP_RE = re.compile(r'^[a-zA-Z0-9_\-\.]*$')

TraitExpression = collections.namedtuple(
    'TraitExpression', 'required forbidden any_of')
"""Parsed ``traits``: sorted required and forbidden names, and a list of
any-of groups (each a sorted list of names), in the order given."""


def is_expression(entry):
    """Whether a ``traits`` entry uses the matching language (a plain
    trait name does not)."""
    return isinstance(entry, str) and (
        entry.startswith(FORBIDDEN_PREFIX) or entry.startswith(ANY_OF_PREFIX))


def trait_names(entry):
    """Every trait name of one ``traits`` entry (for validation and
    counting).  :raises: Invalid for an empty ``in:`` or member."""
    if entry.startswith(FORBIDDEN_PREFIX):
        return [entry[len(FORBIDDEN_PREFIX):]]
    if entry.startswith(ANY_OF_PREFIX):
        members = entry[len(ANY_OF_PREFIX):].split(',')
        if any(not member for member in members):
            raise exception.Invalid(
                'Invalid trait expression %s: "in:" needs a comma-separated '
                'list of trait names, none of them empty.' % entry)
        return members
    return [entry]


def parse_traits(entries, validate=None):
    """Parse the ``traits`` of an allocation.

    :param entries: list of strings, as stored (the expressions as sent).
    :param validate: called with every trait name; raises for an invalid
        one (the API checks names against os-traits).
    :raises: Invalid naming the offending value: an empty ``in:`` or
        member, a forbidden trait that is also required.
    :returns: TraitExpression.
    """
    required, forbidden, any_of = set(), set(), []
    for entry in entries or []:
        if not isinstance(entry, str):
            raise exception.Invalid('Invalid trait expression %r: a string '
                                    'is expected.' % (entry,))
        names = trait_names(entry)
        if validate is not None:
            for name in names:
                try:
                    validate(name)
                except exception.Invalid as exc:
                    if not is_expression(entry):
                        raise
                    raise exception.Invalid(
                        'Invalid trait expression %s: %s' % (entry, exc))
        if entry.startswith(FORBIDDEN_PREFIX):
            forbidden.add(names[0])
        elif entry.startswith(ANY_OF_PREFIX):
            group = sorted(set(names))
            if group not in any_of:
                any_of.append(group)
        else:
            required.add(entry)
    both = sorted(required & forbidden)
    if both:
        raise exception.Invalid(
            'Invalid traits: %s is both required and forbidden (!%s).'
            % (both[0], both[0]))
    return TraitExpression(sorted(required), sorted(forbidden), any_of)


def _is_integer(value):
    # NOTE: JSON true and false are not numbers, though Python's bool is
    # an int.
    return isinstance(value, int) and not isinstance(value, bool)


def check_match(match):
    """Validate an allocation's ``match`` object and normalise it.

    :raises: Invalid naming the offending key or value.
    :returns: a new dict with only the given keys; the conductor group
        lower-cased as nodes store it.
    """
    if not isinstance(match, dict):
        raise exception.Invalid('The match field must be an object, not '
                                '%s.' % _json_kind(match))
    unknown = sorted(set(match) - set(MATCH_KEYS))
    if unknown:
        raise exception.Invalid(
            'Unknown key %s in match: the keys are %s.'
            % (unknown[0], ', '.join(MATCH_KEYS)))
    result = {}
    for key in MINIMUMS:
        if key not in match:
            continue
        value = match[key]
        if not _is_integer(value) or not 0 <= value <= MAX_NUMBER:
            raise exception.Invalid(
                'Invalid match %s %s: a minimum is a non-negative integer.'
                % (key, _json_text(value)))
        result[key] = value
    for key in ('cpu_arch', 'conductor_group'):
        if key not in match:
            continue
        value = match[key]
        if not isinstance(value, str) or len(value) > MAX_TEXT:
            raise exception.Invalid(
                'Invalid match %s %s: a string of at most %d characters is '
                'expected.' % (key, _json_text(value), MAX_TEXT))
        result[key] = value.strip()
    if result.get('cpu_arch') == '':
        raise exception.Invalid('Invalid match cpu_arch "%s": it cannot be '
                                'empty.' % match['cpu_arch'])
    if 'conductor_group' in result:
        group = result['conductor_group']
        if not _CONDUCTOR_GROUP_RE.match(group):
            raise exception.Invalid(
                'Invalid match conductor_group "%s": it can only contain '
                'alphanumeric characters, dashes, periods and underscores.'
                % group)
        result['conductor_group'] = group.lower()
    if 'capabilities' in match:
        capabilities = match['capabilities']
        if not isinstance(capabilities, dict):
            raise exception.Invalid(
                'Invalid match capabilities %s: an object of capability '
                'name -> string value is expected.'
                % _json_text(capabilities))
        if len(capabilities) > MAX_CAPABILITIES:
            raise exception.Invalid(
                'Too many match capabilities: %d, at most %d.'
                % (len(capabilities), MAX_CAPABILITIES))
        for name, value in capabilities.items():
            if not name.strip() or len(name) > MAX_TEXT:
                raise exception.Invalid(
                    'Invalid match capability name "%s": 1 to %d '
                    'characters.' % (name, MAX_TEXT))
            if not isinstance(value, str) or len(value) > MAX_TEXT:
                raise exception.Invalid(
                    'Invalid match capability %s value %s: a string of at '
                    'most %d characters is expected.'
                    % (name, _json_text(value), MAX_TEXT))
        result['capabilities'] = {name.strip(): value.strip()
                                  for name, value in capabilities.items()}
    return result


def _json_kind(value):
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'a boolean'
    if isinstance(value, (int, float)):
        return 'a number'
    if isinstance(value, str):
        return 'a string'
    if isinstance(value, list):
        return 'an array'
    return 'an object'


def _json_text(value):
    """A value as the client wrote it (JSON), shortened."""
    if value is None:
        text = 'null'
    elif isinstance(value, bool):
        text = 'true' if value else 'false'
    elif isinstance(value, str):
        text = '"%s"' % value
    else:
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + '...'


# Node properties

def property_number(value):
    """A node property as a number: an integer, or a string holding one;
    None for anything else (which never passes a minimum)."""
    if _is_integer(value):
        number = value
    elif isinstance(value, str) and _INTEGER_RE.match(value):
        number = int(value)
    else:
        return None
    return number if -MAX_NUMBER <= number <= MAX_NUMBER else None


def node_match_columns(properties):
    """The normalised columns of a node for its ``properties``.

    :returns: {column name: value} for every normalised column.
    """
    properties = properties if isinstance(properties, dict) else {}
    columns = {'match_%s' % key: property_number(properties.get(key))
               for key in MINIMUMS}
    arch = properties.get('cpu_arch')
    arch = arch.strip() if isinstance(arch, str) else None
    columns['match_cpu_arch'] = arch if arch and _storable(arch) else None
    columns['match_capabilities'] = capabilities_column(
        node_capabilities(properties))
    return columns


def traits_column(traits):
    """A node's traits as the one value of nodes.match_traits."""
    return json.dumps(sorted(set(traits)))


def capabilities_column(capabilities):
    """A node's capabilities ({name: value}) as the one value of
    nodes.match_capabilities."""
    return json.dumps(capabilities, sort_keys=True)


@functools.lru_cache(maxsize=1024)
def tally_traits(value):
    """The set of traits of a match_traits value (None: none)."""
    return frozenset(json.loads(value)) if value else frozenset()


@functools.lru_cache(maxsize=1024)
def tally_capabilities(value):
    """The {name: value} of a match_capabilities value (None: none); the
    same dict for the same value, not to be changed."""
    return json.loads(value) if value else {}


def _capability_text(value):
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if _is_integer(value):
        return str(value)
    return None


def node_capabilities(properties):
    """A node's capabilities from ``properties['capabilities']``: Ironic's
    "k1:v1,k2:v2" string (entries without a colon ignored, the last of a
    repeated name wins) or an object of name -> string, integer or
    boolean.  Whitespace around names and values is dropped, here and in
    ``check_match``: MySQL and MariaDB ignore trailing spaces when they
    compare strings, the other databases do not.

    :returns: {name: value}; names and values longer than MAX_TEXT (or
        holding a NUL) are left out (they cannot be asked for).
    """
    properties = properties if isinstance(properties, dict) else {}
    raw = properties.get('capabilities')
    found = {}
    if isinstance(raw, str):
        for item in raw.split(','):
            name, colon, value = item.partition(':')
            if colon:
                found[name.strip()] = value.strip()
    elif isinstance(raw, dict):
        for name, value in raw.items():
            text = _capability_text(value)
            if text is not None:
                found[str(name).strip()] = text.strip()
    return {name: value for name, value in found.items()
            if name and _storable(name) and _storable(value)}


def _storable(text):
    # NOTE: the API refuses NUL in every JSON string; a row written
    # before that rule must not make the node write fail (PostgreSQL
    # cannot store it).
    return len(text) <= MAX_TEXT and '\x00' not in text


# Criteria and explanations

def criteria(resource_class, traits, candidate_uuids, owner, match):
    """What the matcher searches for (the ``criteria`` of the database
    API and of every backend): ``traits`` the required traits (plain
    names, as without the matching language), ``forbidden_traits`` and
    ``any_of_traits`` (list of lists) the other trait expressions,
    ``match`` the match object.

    :param traits: the allocation's ``traits`` as stored (validated).
    """
    parsed = parse_traits(traits or [])
    return {'resource_class': resource_class,
            'traits': parsed.required,
            'forbidden_traits': parsed.forbidden,
            'any_of_traits': parsed.any_of,
            'match': dict(match or {}),
            'candidate_uuids': list(candidate_uuids or []),
            'owner': owner}


def funnel_line(funnel):
    """An explanation's funnel (db api explain_allocation()) in one line:
    the start, every step that removed nodes, what is left."""
    start = '%d node%s of resource class "%s"' % (
        funnel['nodes'], '' if funnel['nodes'] == 1 else 's',
        funnel['resource_class'])
    if funnel.get('project'):
        start += ' visible to project %s' % funnel['project']
    removed = ['%d %s' % (step['removed'], step['description'])
               for step in funnel['steps'] if step['removed']]
    return 'Funnel: %s%s; %d left.' % (
        start, (': ' + ', '.join(removed)) if removed else '',
        funnel['matching_nodes'])
