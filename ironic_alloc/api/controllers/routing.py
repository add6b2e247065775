"""Direct routes for the most frequent requests.

Pecan's RestController finds its way by inspecting the signatures of the
controllers on every request (``getargspec``, which builds a namedtuple
class each time): about a fifth of the CPU of
``GET /v1/allocations/{uuid}``.  The routes here give the same answers for
the plain cases and leave everything else to Pecan.
"""

import threading

from pecan import rest
from pecan import util as pecan_util

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


_signatures_cached = threading.Lock()


def cache_signatures():
    """Make Pecan inspect each controller's signature once.

    Pecan still inspects a signature twice per request (the root's
    ``_route`` and the controller it calls), and each inspection builds a
    namedtuple class: about 60 us each.  Signatures do not change while
    the process runs, so the answers are kept, per function.
    """
    with _signatures_cached:
        inspect = pecan_util._getargspec
        if getattr(inspect, 'cached', False):
            return
        answers = {}

        def getargspec(func):
            # NOTE: a bound method has the signature of its function.
            key = getattr(func, '__func__', func)
            try:
                return answers[key]
            except KeyError:
                answer = answers[key] = inspect(func)
                return answer
            except TypeError:  # unhashable: not a plain function
                return inspect(func)

        getargspec.cached = True
        pecan_util._getargspec = getargspec
