"""``python -m boostlib`` runs the command line."""
import sys

from .frontend.cli import main

sys.exit(main())
