from oslo_context import context


class RequestContext(context.RequestContext):
    """The security context of a request, carried over RPC."""

    def to_policy_values(self):
        values = super().to_policy_values()
        values['project_id'] = self.project_id
        return values


def get_admin_context():
    """A context for the service's own work (periodic tasks, start-up)."""
    return RequestContext(is_admin=True, overwrite=False)
