"""Per-project limits from Keystone unified limits, read with oslo.limit
by the service under test: a registered (default) limit and a project's
own limit created through Keystone's API, the 403 past them, and the
exemption of project administrators.

Allocations of a resource class no node has end in error, and still
count: a limit is on holds in any state, so no node is needed.
"""

import json
import time
import uuid

from ironic_alloc.tests.keystone import base


class TestKeystoneLimits(base.KeystoneTestCase):

    def allocate(self, token, resource_class):
        return self.request('POST', '/v1/allocations', token,
                            body={'resource_class': resource_class})

    def assertLimited(self, response, resource, limit, project):
        self.assertStatus(403, response)
        fault = json.loads(response.json['error_message'])
        self.assertEqual(
            'Project %s has reached its limit %s: %d of %d holds '
            '(allocations and reservations) are in use, so no new one can '
            'be created.' % (self.identities.project_ids[project], resource,
                             limit, limit), fault['faultstring'])

    def test_registered_and_project_limits(self):
        # NOTE: a class of this test's own: the limits registered here
        # apply to every project of the shared service.
        resource_class = 'LIMITED_%s' % uuid.uuid4().hex[:8].upper()
        resource = 'baremetal_holds:' + resource_class
        self.identities.registered_limit(resource, 1)
        self.identities.project_limit('other', resource, 2)
        # Limits the service read before these were set are forgotten
        # after [limits]cache_time.
        time.sleep(base.LIMITS_CACHE_TIME + 0.5)

        owner = self.identities.token('member', 'project', 'owner')
        self.assertStatus(201, self.allocate(owner, resource_class))
        self.assertLimited(self.allocate(owner, resource_class), resource,
                           1, 'owner')
        # Another class is not limited.
        self.assertStatus(201, self.allocate(owner, resource_class + '_X'))

        # A project with a limit of its own.
        other = self.identities.token('member', 'project', 'other')
        for _ in range(2):
            self.assertStatus(201, self.allocate(other, resource_class))
        self.assertLimited(self.allocate(other, resource_class), resource,
                           2, 'other')

        # A project administrator is exempt by default.
        owner_admin = self.identities.token('admin', 'project', 'owner')
        self.assertStatus(201, self.allocate(owner_admin, resource_class))
