"""``python -m hierbench``: the same command as ``hierbench``."""

import sys

from .cli import main

if __name__ == "__main__":  # pragma: no branch
    sys.exit(main())
