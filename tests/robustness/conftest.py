"""The robustness suite: boostlib used as a hostile or careless user would.

Every case asserts either a clear error that names the culprit (parameter, value, plugin, file
field) or the exact correct result; none may hang, crash or write a file that does not load.
The fuzzing tests run a few thousand examples in the default run; tests marked ``nightly``
(deselected by default) run far more: ``pytest -m nightly tests/robustness``.
"""
