"""``boostlib.registry`` is ``boostlib.plugin.registry``
(this name is kept for users and plugins)."""
import sys

from .plugin import registry as _module

sys.modules[__name__] = _module
