"""``boostlib.hookspecs`` is ``boostlib.plugin.hookspecs``
(this name is kept for users and plugins)."""
import sys

from .plugin import hookspecs as _module

sys.modules[__name__] = _module
