"""``boostlib.testing`` is ``boostlib.plugin.testing``
(this name is kept for users and plugins)."""
import sys

from .plugin import testing as _module

sys.modules[__name__] = _module
