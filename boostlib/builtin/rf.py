"""Random forest mode (``update="rf"``), as LightGBM's ``boosting="rf"``.

Every tree is fitted to the loss's derivatives at the *starting* scores (the bias, plus the
offsets ``init_score`` if any), on its own rows (bagging: ``subsample`` or a sampler) and/or
columns (``colsample_bytree``, ``colsample_bynode``), and the trees are averaged::

    raw(x) = bias + (1/k) * sum_{j=1..k} tree_j(x)

after ``k`` trees. Each iteration sets every coefficient to ``1/k`` exactly (through
:meth:`boostlib.api.Context.set_coefficients`, which rescales the scores in ``O(n_rows)``),
so the model is the plain ``bias + sum_k c_k tree_k`` every other rule gives: prediction,
model files, SHAP values and ONNX export need nothing of the rule, and a forest's prediction
is the mean of its trees' (plus the bias).

Refused, with an error naming the parameter (:meth:`RandomForest.check_params`):

* ``learning_rate`` other than 1.0: the trees are averaged, not shrunk (LightGBM ignores
  the learning rate in this mode; here it must say what the model does);
* no row and no column sampling: every tree would be the same tree.

Early stopping is sound: the loop keeps the best iteration's whole coefficient vector,
``1/k`` for its ``k`` trees, so the model cut back to it is the forest of that iteration.
A continued fit (``init_model``, ``warm_start``) continues a random forest only (a model
whose coefficients are all ``1/n_trees``): its derivatives are taken at the starting scores
(the model's scores minus its trees' mean) and every coefficient becomes ``1/k`` of the
larger forest. Staged predictions are prefixes of the final model: step ``k`` is
``bias + (1/n_trees) sum_{j<=k} tree_j``, not the forest of ``k`` trees.
Losses that renew leaves (``quantile``, ``l1``) are not renewed, as with ``sglb``.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np

from ..plugin.api import Context, UpdateRule


class RandomForest(UpdateRule):
    """Averaged trees fitted to the derivatives at the starting scores (no parameters)."""

    name = "rf"

    def __init__(self, **unknown: Any):
        if unknown:
            key = sorted(unknown)[0]
            raise TypeError(f"update rule 'rf': unknown parameter {key}={unknown[key]!r}; "
                            "it takes no parameters (sampling comes from subsample, sampler, "
                            "colsample_bytree and colsample_bynode)")
        self._start: Optional[np.ndarray] = None

    def check_params(self, params: Mapping[str, Any]) -> None:
        """Refuse a learning rate other than 1 and a fit without row or column sampling."""
        rate = params.get("learning_rate", 1.0)
        if rate != 1.0:
            raise ValueError(f"update rule 'rf': learning_rate={rate!r} is invalid; a random "
                             "forest averages its trees (coefficients 1/k) and shrinks "
                             "nothing: expected learning_rate=1.0")
        rows = params.get("sampler") is not None or params.get("subsample", 1.0) < 1.0
        columns = (params.get("colsample_bytree", 1.0) < 1.0
                   or params.get("colsample_bynode", 1.0) < 1.0)
        if not (rows or columns):
            raise ValueError("update rule 'rf': subsample=1.0, sampler=None, colsample_bytree"
                             "=1.0 and colsample_bynode=1.0 make every tree the same tree; "
                             "expected row sampling (subsample < 1, e.g. 0.632, or a "
                             "sampler) and/or column sampling (colsample_bytree or "
                             "colsample_bynode < 1)")

    def begin(self, ctx: Context) -> None:
        """Record the starting scores (for a continued forest: the model's scores less its
        trees' mean)."""
        coef = ctx.model.coefficients
        start = np.array(ctx.raw, dtype=np.float64)
        n = coef.shape[0]
        if n:
            if not np.all(coef == 1.0 / n):
                raise ValueError("update rule 'rf' continues only a random forest (every "
                                 f"coefficient 1/n_trees = {1.0 / n!r}); init_model's "
                                 f"coefficients range from {coef.min()!r} to {coef.max()!r}")
            for i in range(n):
                start -= coef[i] * ctx.tree_output(i)
        start.flags.writeable = False
        self._start = start

    def step(self, ctx: Context) -> None:
        gradient, hessian = ctx.gradients(self._start)
        sample = ctx.sample(gradient, hessian)
        tree = ctx.fit_tree(gradient, hessian, sample)
        n = ctx.model.coefficients.shape[0]
        if n:
            ctx.set_coefficients(np.arange(n), 1.0 / (n + 1))
        ctx.add_tree(tree, 1.0 / (n + 1))
