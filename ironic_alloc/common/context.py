from oslo_context import context

from ironic_alloc.conf import CONF


class RequestContext(context.RequestContext):
    """The security context of a request, carried over RPC."""

    def to_policy_values(self):
        values = super().to_policy_values()
        values['project_id'] = self.project_id
        return values


def from_request_environ(environ):
    """The context of an API request.

    With keystone, identity comes from the headers keystonemiddleware's
    auth_token sets after validating the token (X-User-Id, X-Project-Id,
    X-Roles, OpenStack-System-Scope...), having first removed any
    such header the client sent.  With noauth and http_basic no header
    is trusted: the caller is an administrator, as in standalone Ironic.
    """
    if CONF.auth_strategy != 'keystone':
        # NOTE: the basic auth middleware sets X-User to the checked user
        # name (for logs); with noauth nobody checked it.
        user = (environ.get('HTTP_X_USER')
                if CONF.auth_strategy == 'http_basic' else None)
        return RequestContext(
            is_admin=True, user_name=user,
            request_id=environ.get('openstack.request_id'),
            global_request_id=environ.get('openstack.global_request_id'))
    ctx = RequestContext.from_environ(environ)
    ctx.is_admin = False
    # NOTE: keystonemiddleware (13.0) writes OpenStack-System-Scope for a
    # service token (X-Service-Token) too, over the user token's, so a
    # system-scoped user calling through another service would lose its
    # scope: take the scope from the validated user token itself.
    token_auth = environ.get('keystone.token_auth')
    user_token = getattr(token_auth, 'user', None)
    if user_token is not None:
        ctx.system_scope = ('all' if user_token.system_scoped
                            and user_token.system.get('all') else None)
    return ctx


def get_admin_context():
    """A context for the service's own work (periodic tasks, start-up)."""
    return RequestContext(is_admin=True, overwrite=False)
