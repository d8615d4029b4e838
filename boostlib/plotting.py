"""``boostlib.plotting`` is ``boostlib.frontend.plotting``
(this name is kept for users and plugins)."""
import sys

from .frontend import plotting as _module

sys.modules[__name__] = _module
