"""Direct routes for the most frequent requests.

Pecan's RestController finds its way by inspecting the signatures of the
controllers on every request, a large part of the CPU of
``GET /v1/allocations/{uuid}``.  The routes here give the same answers for
the plain cases and leave everything else to Pecan.
"""

from pecan import rest

# (method, number of path segments left) -> the RestController method.
_PLAIN_ACTIONS = {('GET', 1): 'get_one', ('POST', 0): 'post',
                  ('DELETE', 1): 'delete'}
# NOTE: Pecan gives these segments a meaning of their own on GET.
_RESERVED = frozenset(['new', 'edit', 'delete'])


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
