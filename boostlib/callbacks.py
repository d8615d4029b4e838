"""``boostlib.callbacks`` is ``boostlib.engine.callbacks``
(this name is kept for users and plugins)."""
import sys

from .engine import callbacks as _module

sys.modules[__name__] = _module
