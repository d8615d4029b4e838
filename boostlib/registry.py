"""``boostlib.registry``: the plugin registry, the public names of
``boostlib.plugin.registry`` (kept for users and plugins; the same objects)."""
from .plugin.registry import *  # noqa: F401,F403
from .plugin.registry import __all__  # noqa: F401
