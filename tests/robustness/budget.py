"""How many examples the fuzzing tests of the robustness suite run.

The default run (CI) runs a few thousand mutations; the tests marked ``nightly`` (deselected
by default: ``pytest -m nightly tests/robustness``) run many more. Both can be overridden
through the environment.
"""
import os

#: examples of a fuzzing test in the default run
DEFAULT_EXAMPLES = int(os.environ.get("BOOSTLIB_FUZZ_EXAMPLES", "2000"))
#: examples of a fuzzing test in the nightly run
NIGHTLY_EXAMPLES = int(os.environ.get("BOOSTLIB_NIGHTLY_EXAMPLES", "50000"))
