"""``python -m foldlog`` runs the command line."""

import sys

from foldlog.cli.main import main

sys.exit(main())
