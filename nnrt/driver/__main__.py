"""Deprecated: ``python -m nnrt.driver`` runs ``python -m nnrt.worker`` (same arguments)."""

import sys

from nnrt.worker.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
