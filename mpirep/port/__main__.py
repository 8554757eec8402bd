import sys

from mpirep.port.cli import main

sys.exit(main())
