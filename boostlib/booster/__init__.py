"""The booster layer: the fitted :class:`~boostlib.booster.model.Model`,
:func:`~boostlib.booster.training.train` and continuing a model (``init_model``).

It sits above ``boostlib.engine`` (binning, trees, the boosting loop) and ``boostlib.io``
(model files: a ``Model`` saves and loads through them), and below the
surfaces (estimators, command line, Dask, export, explanations), which build on it.
"""
