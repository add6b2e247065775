import sys

from tools.bench import cli

sys.exit(cli.main())
