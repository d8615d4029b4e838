"""``boostlib.api`` is ``boostlib.plugin.api``
(this name is kept for users and plugins)."""
import sys

from .plugin import api as _module

sys.modules[__name__] = _module
