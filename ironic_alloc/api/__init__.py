"""The HTTP API tier (Pecan + WSME), wire-compatible with Bare Metal v1.

``request`` and ``response`` are Pecan's thread-local proxies; controllers
use them as ``api.request.context``, ``api.request.rpcapi``,
``api.request.version`` and ``api.request.public_url`` (set by hooks).
"""

import pecan

request = pecan.request
response = pecan.response
