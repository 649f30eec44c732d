"""``python -m lightspeed``."""

import sys

from lightspeed.cli.main import main

sys.exit(main())
