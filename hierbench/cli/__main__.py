"""``python -m hierbench.cli``: the same as ``hierbench``."""

import sys

from . import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
