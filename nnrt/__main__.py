"""``python -m nnrt`` runs the ``nnrt`` command."""

import sys

from nnrt.cli.main import main

sys.exit(main())
