"""ironic-alloc-conductor: the conductor daemon."""

import sys

from ironic_alloc.common import service as service_utils
from ironic_alloc.conductor import service


def main():
    service_utils.prepare_service()
    conductor = service.ConductorService()
    conductor.start()
    sys.exit(service_utils.run_until_signalled(conductor,
                                               on_reload=conductor.reload))


if __name__ == '__main__':
    main()
