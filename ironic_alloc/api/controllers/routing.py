"""Direct routes for the most frequent requests.

Pecan's RestController finds its way by inspecting the signatures of the
controllers on every request, a large part of the CPU of
``GET /v1/allocations/{uuid}``.  The routes here give the same answers for
the plain cases and leave everything else to Pecan.
"""

from pecan import rest
import webob.exc as webob_exc

# (method, number of path segments left) -> the RestController method.
_PLAIN_ACTIONS = {('GET', 1): 'get_one', ('POST', 0): 'post',
                  ('DELETE', 1): 'delete'}
# NOTE: Pecan gives these segments a meaning of their own on GET.
_RESERVED = frozenset(['new', 'edit', 'delete'])
# RestController method -> the HTTP method it answers on one item.
_ITEM_METHODS = (('get_one', 'GET'), ('put', 'PUT'), ('patch', 'PATCH'),
                 ('delete', 'DELETE'))


def sub_controller(controller, args, request):
    """Route into the sub-controller that ``args[0]`` names, when it is a
    RestController attribute; None otherwise (Pecan then routes)."""
    if not args or not args[0] or args[0].startswith('_'):
        return None
    sub = getattr(controller, args[0], None)
    if not isinstance(sub, rest.RestController):
        return None
    return sub._route(args[1:], request)


def plain_action(controller, args, request):
    """(method, args) for a GET of one item, a POST to the collection or
    a DELETE of one item; None for anything else (Pecan then routes)."""
    name = _PLAIN_ACTIONS.get((request.method, len(args)))
    if name is None or request.params.get('_method') is not None:
        return None
    if args and (not args[0] or args[0] in _RESERVED
                 or hasattr(controller, args[0])):
        return None
    return getattr(controller, name), list(args)


def refuse_post_to_item(controller, args, request):
    """Raise 405 for a POST to ``<collection>/<segment>`` that names no
    POST action and no sub-controller of ``controller``.

    Pecan would call the collection's ``post`` with the segment as its
    body argument, and WSME would refuse it as a body that cannot be
    converted, with Python's error text.  An item of a collection is not
    created by a POST to it, so the answer is the one for any method a
    resource does not support, with the methods the item does allow.
    """
    method = request.params.get('_method', request.method)
    if method.upper() != 'POST' or len(args) != 1 or not args[0]:
        return
    actions = getattr(controller, '_custom_actions', None) or {}
    if 'POST' in actions.get(args[0], ()):
        return
    if isinstance(getattr(controller, args[0], None), rest.RestController):
        return
    if args[0] in actions:
        allowed = sorted(actions[args[0]])
    else:
        allowed = sorted(verb for name, verb in _ITEM_METHODS
                         if callable(getattr(controller, name, None)))
    collection = request.path.rstrip('/').rsplit('/', 1)[0]
    raise webob_exc.HTTPMethodNotAllowed(
        detail='Method POST is not allowed for %s, which allows %s; '
        'POST %s creates a new one.'
        % (request.path, ', '.join(allowed), collection),
        headers=[('Allow', ', '.join(allowed))])
