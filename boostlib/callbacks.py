"""``boostlib.callbacks``: the training callbacks, the public names of
``boostlib.engine.callbacks`` (kept for users and plugins; the same objects)."""
from .engine.callbacks import *  # noqa: F401,F403
from .engine.callbacks import __all__  # noqa: F401
