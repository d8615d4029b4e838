"""``boostlib.plotting``: the plotting functions, the public names of
``boostlib.frontend.plotting`` (kept for users and plugins; the same objects)."""
from .frontend.plotting import *  # noqa: F401,F403
from .frontend.plotting import __all__  # noqa: F401
