# NOTE: ironic_alloc runs on native threads.  oslo.service (pulled in by
# oslo.messaging and oslo.db) defaults to its eventlet backend, so the
# threading backend is selected before anything can import it.
from oslo_service import backend as _oslo_service_backend

_oslo_service_backend.init_backend(_oslo_service_backend.BackendType.THREADING)
