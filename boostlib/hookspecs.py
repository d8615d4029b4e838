"""``boostlib.hookspecs``: the pluggy hook specifications, the public names of
``boostlib.plugin.hookspecs`` (kept for users and plugins; the same objects)."""
from .plugin.hookspecs import *  # noqa: F401,F403
from .plugin.hookspecs import __all__  # noqa: F401
