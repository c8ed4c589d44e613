"""Allows ``python -m tailcut`` where the console script is not on PATH."""

import sys

from tailcut.cli import main

sys.exit(main())
