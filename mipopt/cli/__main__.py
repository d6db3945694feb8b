"""``python -m mipopt.cli``: the same as the ``mipopt`` command."""

import sys

from mipopt.cli import main

sys.exit(main())
