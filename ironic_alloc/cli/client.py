"""The HTTP client of the commands: ironic_alloc's API over keystoneauth.

Every request goes through the keystoneauth session OSC built from the
--os-* options, so tokens, TLS settings, --os-endpoint and
--os-auth-type none behave as with python-ironicclient.  Every request
asks for extension version EXTENSION_VERSION (the version of the wire
spec these commands were written for) and for Ironic microversion
IRONIC_API_VERSION (allocations are PATCHed, which needs 1.57 or later).
"""

import json
from urllib import parse
import uuid

from keystoneauth1 import adapter

SERVICE_TYPE = 'baremetal'
"""ironic_alloc serves the Bare Metal API: it has Ironic's service type"""

EXTENSION_VERSION = '1.3'
IRONIC_API_VERSION = '1.60'

HEADERS = {
    'OpenStack-API-Version': 'ironic-alloc %s' % EXTENSION_VERSION,
    'X-OpenStack-Ironic-API-Version': IRONIC_API_VERSION,
    'Accept': 'application/json',
}

RESERVATION_FIELDS = ('uuid', 'node_uuid', 'instance_uuid', 'owner',
                      'expires_at', 'created_at', 'updated_at')
"""The fields of a reservation a client may ask for (``fields``)"""


class ClientError(Exception):
    """A request could not be made or its answer was not understood."""


class APIError(ClientError):
    """The API refused a request (HTTP 4xx or 5xx).

    ``message`` is the error's faultstring; ``reasons`` the per-node
    reasons of a refused reservation ([{"node_uuid", "reason"}], empty for
    other errors).
    """

    def __init__(self, status_code, message, reasons=()):
        self.status_code = status_code
        self.message = message
        self.reasons = list(reasons)
        super().__init__(self._text())

    def _text(self):
        lines = ['%s (HTTP %d)' % (self.message, self.status_code)]
        for item in self.reasons:
            lines.append('  %s: %s' % (item.get('node_uuid'),
                                       item.get('reason')))
        return '\n'.join(lines)

    @classmethod
    def from_response(cls, response):
        """The error of an Ironic-format error response.

        Ironic's error body is {"error_message": "<JSON text>"} where the
        JSON text holds "faultstring" (and here, for a refused
        reservation, "reasons"); anything else is shown as it came.
        """
        try:
            body = response.json()
        except ValueError:
            body = None
        error = body.get('error_message') if isinstance(body, dict) else None
        if isinstance(error, str):
            try:
                error = json.loads(error)
            except ValueError:
                error = {'faultstring': error}
        if not isinstance(error, dict):
            error = {}
        message = error.get('faultstring')
        if not message:
            message = (response.text or '').strip() or response.reason or (
                'HTTP error')
        reasons = error.get('reasons')
        if not isinstance(reasons, list):
            reasons = []
        reasons = [item for item in reasons if isinstance(item, dict)]
        return cls(response.status_code, message, reasons)


def _path(collection, ident):
    """/v1/COLLECTION/IDENT with the identifier quoted: a name may hold
    any character."""
    return '/v1/%s/%s' % (collection, parse.quote(ident, safe=''))


def is_uuid(value):
    try:
        uuid.UUID(value)
    except (TypeError, ValueError):
        return False
    return True


def _api_root(endpoint):
    """The service root of a catalog or --os-endpoint URL (with or
    without its /v1)."""
    root = endpoint.rstrip('/')
    if root.endswith('/v1'):
        root = root[:-len('/v1')]
    return root


class Client:
    """ironic_alloc's reservations, allocation groups and allocation
    leases."""

    def __init__(self, session, endpoint, region_name=None, interface=None):
        """:param session: a keystoneauth1 session.
        :param endpoint: the Bare Metal endpoint (--os-endpoint or the
            catalog's); None when none was found.
        """
        if not endpoint:
            raise ClientError(
                'No endpoint of service type "%s" was found: give '
                '--os-endpoint, or authenticate with a catalog that has '
                'the bare metal service' % SERVICE_TYPE)
        self.endpoint = _api_root(endpoint)
        self._adapter = adapter.Adapter(
            session, service_type=SERVICE_TYPE, interface=interface,
            region_name=region_name, endpoint_override=self.endpoint,
            client_name='ironic-alloc-cli')

    def _request(self, method, path, body=None, params=None):
        response = self._adapter.request(
            path, method, json=body, params=params, headers=HEADERS,
            raise_exc=False)
        if response.status_code >= 400:
            raise APIError.from_response(response)
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise ClientError('%s %s answered HTTP %d with a body that is '
                              'not JSON' % (method, path,
                                            response.status_code))

    @staticmethod
    def _one(body, key, method, path):
        if not isinstance(body, dict) or not isinstance(body.get(key),
                                                        dict):
            raise ClientError('%s %s answered without "%s"'
                              % (method, path, key))
        return body[key]

    # Nodes

    def node_uuid(self, node):
        """The UUID of a node given by UUID or name (a UUID is not
        looked up: the API judges it)."""
        if is_uuid(node):
            return node
        path = _path('nodes', node)
        found = self._request('GET', path, params={'fields': 'uuid'})
        if not isinstance(found, dict) or not found.get('uuid'):
            raise ClientError('GET %s answered without "uuid"' % path)
        return found['uuid']

    # Reservations

    def create_reservation(self, instance_uuid, nodes, ttl=None):
        """Reserve the first node of ``nodes`` (UUIDs or names, in order)
        that can be reserved.

        :raises: APIError; a 409 carries the reason of each node.
        """
        body = {'instance_uuid': instance_uuid,
                'node_uuid': [self.node_uuid(node) for node in nodes]}
        if ttl is not None:
            body['ttl'] = ttl
        path = '/v1/reservations'
        return self._one(self._request('POST', path, body=body),
                         'reservation', 'POST', path)

    def list_reservations(self, instance_uuid=None, node=None, limit=None,
                          marker=None, fields=None):
        """Reservations, following the pages until ``limit`` (all when
        None)."""
        params = {}
        if instance_uuid:
            params['instance_uuid'] = instance_uuid
        if node:
            params['node'] = node
        if fields:
            # NOTE: the next page starts after the last uuid seen.
            params['fields'] = ','.join(dict.fromkeys(
                list(fields) + ['uuid']))
        path = '/v1/reservations'
        found = []
        while True:
            page = dict(params)
            if marker:
                page['marker'] = marker
            if limit is not None:
                page['limit'] = limit - len(found)
            body = self._request('GET', path, params=page)
            items = body.get('reservations') if isinstance(body,
                                                           dict) else None
            if not isinstance(items, list):
                raise ClientError('GET %s answered without "reservations"'
                                  % path)
            found.extend(items)
            if (not items or not body.get('next')
                    or (limit is not None and len(found) >= limit)):
                return found
            marker = items[-1].get('uuid')

    def get_reservation(self, reservation, fields=None):
        path = _path('reservations', reservation)
        params = {'fields': ','.join(fields)} if fields else None
        return self._one(self._request('GET', path, params=params),
                         'reservation', 'GET', path)

    def renew_reservation(self, reservation, ttl=None, expires_at=None):
        """Renew the lease: for ``ttl`` seconds from now, or until
        ``expires_at`` (ISO 8601)."""
        path = _path('reservations', reservation)
        return self._one(
            self._request('PATCH', path,
                          body=[_lease_patch(ttl, expires_at)]),
            'reservation', 'PATCH', path)

    def delete_reservation(self, reservation):
        self._request('DELETE', _path('reservations', reservation))

    # Allocation groups

    def create_allocation_group(self, members, name=None, ttl=None,
                                expires_at=None):
        """Ask for a group: ``members`` maps allocation UUIDs to what
        each one is (a new allocation's fields, a hand-over, or {} for a
        release).  The answer comes at once, with the group allocating.
        """
        body = {'members': members}
        if name:
            body['name'] = name
        if ttl is not None:
            body['ttl'] = ttl
        if expires_at is not None:
            body['expires_at'] = expires_at
        path = '/v1/allocation_groups'
        return self._group(self._request('POST', path, body=body), 'POST',
                           path)

    @staticmethod
    def _group(body, method, path):
        # NOTE: a group is answered bare, as Ironic answers an allocation.
        if not isinstance(body, dict) or 'uuid' not in body:
            raise ClientError('%s %s answered without an allocation group'
                              % (method, path))
        return body

    def list_allocation_groups(self, limit=None, marker=None):
        """Groups, following the pages until ``limit`` (all when None)."""
        path = '/v1/allocation_groups'
        found = []
        while True:
            page = {}
            if marker:
                page['marker'] = marker
            if limit is not None:
                page['limit'] = limit - len(found)
            body = self._request('GET', path, params=page)
            items = (body.get('allocation_groups')
                     if isinstance(body, dict) else None)
            if not isinstance(items, list):
                raise ClientError('GET %s answered without '
                                  '"allocation_groups"' % path)
            found.extend(items)
            if (not items or not body.get('next')
                    or (limit is not None and len(found) >= limit)):
                return found
            marker = items[-1].get('uuid')

    def get_allocation_group(self, group):
        path = _path('allocation_groups', group)
        return self._group(self._request('GET', path), 'GET', path)

    def delete_allocation_group(self, group):
        self._request('DELETE', _path('allocation_groups', group))

    def set_allocation_group_lease(self, group, ttl=None, expires_at=None):
        """Set or renew the lease of a group and all its members: for
        ``ttl`` seconds from now, or until ``expires_at`` (ISO 8601)."""
        path = _path('allocation_groups', group)
        return self._group(
            self._request('PATCH', path,
                          body=[_lease_patch(ttl, expires_at)]),
            'PATCH', path)

    def unset_allocation_group_lease(self, group):
        """The group and its members no longer expire."""
        path = _path('allocation_groups', group)
        return self._group(
            self._request('PATCH', path, body=[
                {'op': 'remove', 'path': '/expires_at'}]),
            'PATCH', path)

    # Allocation leases

    def set_allocation_lease(self, allocation, ttl=None, expires_at=None):
        path = _path('allocations', allocation)
        return self._request('PATCH', path,
                             body=[_lease_patch(ttl, expires_at)])

    def unset_allocation_lease(self, allocation):
        """The allocation no longer expires."""
        path = _path('allocations', allocation)
        return self._request('PATCH', path, body=[
            {'op': 'remove', 'path': '/expires_at'}])


def _lease_patch(ttl, expires_at):
    if (ttl is None) == (expires_at is None):
        raise ClientError('give either a ttl or an expiry time')
    if ttl is not None:
        return {'op': 'replace', 'path': '/ttl', 'value': ttl}
    return {'op': 'replace', 'path': '/expires_at', 'value': expires_at}
