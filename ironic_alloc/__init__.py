# NOTE: ironic_alloc runs on native threads.  oslo.service (pulled in by
# oslo.messaging and oslo.db) defaults to its eventlet backend, so the
# threading backend is selected before anything can import it.
try:
    from oslo_service import backend as _oslo_service_backend
except ImportError:
    # NOTE: the OSC plugin (ironic_alloc.cli) may be installed without the
    # service's requirements, next to pinned client tools; with no
    # oslo.service there is no backend to select, and the service's own
    # modules fail on their imports as they would anyway.
    _oslo_service_backend = None

if _oslo_service_backend is not None:
    _oslo_service_backend.init_backend(
        _oslo_service_backend.BackendType.THREADING)
