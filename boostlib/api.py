"""``boostlib.api``: the interfaces plugins implement, the public names of
``boostlib.plugin.api`` (kept for users and plugins; the same objects)."""
from .plugin.api import *  # noqa: F401,F403
from .plugin.api import __all__  # noqa: F401
