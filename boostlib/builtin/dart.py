"""DART: dropouts meet multiple additive regression trees (``update="dart"``).

Rashmi and Gilad-Bachrach, "DART: Dropouts meet Multiple Additive Regression Trees"
(AISTATS 2015), as LightGBM (``boosting="dart"``, ``src/boosting/dart.hpp``) and XGBoost
(``booster="dart"``, ``src/gbm/gbtree.cc``) implement it. Each iteration:

1. unless the iteration is skipped (probability ``skip_drop``), each of the model's ``n``
   trees is dropped with probability ``rate_drop`` (``sample_type="uniform"``) or
   ``rate_drop * n * |c_i| / sum_j |c_j|`` (``"weighted"``: trees of larger coefficient
   more often), at most ``max_drop`` of them (0: no limit; the rate is then also capped at
   ``max_drop / n``), and with ``one_drop`` one tree (drawn the same way) when none was;
2. the derivatives are taken at the model without the ``k`` dropped trees, and a tree is
   fitted to them (with the sampler's rows, as ``sgb``);
3. the dropped trees' coefficients are multiplied by ``a`` and the new tree added with
   coefficient ``b``, with the learning rate ``eta``:

   ====================  ====================  ====================
   ``normalize_type``    dropped ``a``         new ``b``
   ====================  ====================  ====================
   ``"lightgbm"``        ``k / (k + 1)``       ``eta / (k + 1)``
   ``"tree"``            ``k / (k + eta)``     ``eta / (k + eta)``
   ``"forest"``          ``1 / (1 + eta)``     ``eta / (1 + eta)``
   ====================  ====================  ====================

   ``"lightgbm"`` is LightGBM's default (the paper's normalisation, the learning rate on the
   new tree); ``"tree"`` is XGBoost's default and LightGBM's ``xgboost_dart_mode``;
   ``"forest"`` is XGBoost's other choice. Without a dropped tree (``k = 0``) the new tree
   gets ``eta``, exactly as ``sgb``.

The model stays ``bias + sum_k c_k tree_k``: the rescaled coefficients are written through
:meth:`boostlib.api.Context.set_coefficients`, so prediction, model files, SHAP values and
ONNX export need nothing of the rule. The draws come from the fit's random stream
``"dart"``, the same on every worker and for any ``n_jobs``. The weights of
``sample_type="weighted"`` are the current ``|c_i|`` (LightGBM keeps the same numbers as its
tree weights). The rule drops among all the model's trees, a continued model's included
(LightGBM drops only the trees of the current fit). Like ``sglb`` and the AGBM rules it does
not renew leaves (``quantile``, ``l1``): their derivatives are taken at another model than
the one :meth:`~boostlib.api.Context.renew_leaves` reads.
"""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, List

import numpy as np

from ..plugin.api import Context, UpdateRule

SAMPLE_TYPES = ("uniform", "weighted")
NORMALIZE_TYPES = ("lightgbm", "tree", "forest")
PARAMS = ("rate_drop", "skip_drop", "max_drop", "one_drop", "sample_type", "normalize_type")


def _bad(param: str, value: Any, expected: str) -> ValueError:
    return ValueError(f"update rule 'dart': {param}={value!r} is invalid; expected {expected}")


def _probability(param: str, value: Any) -> float:
    if not (isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)
            and 0.0 <= value <= 1.0):
        raise _bad(param, value, "a number in [0, 1]")
    return float(value)


def normalization(normalize_type: str, k: int, eta: float) -> "tuple[float, float]":
    """``(a, b)``: the factor of the ``k`` dropped trees' coefficients and the new tree's
    coefficient, for learning rate ``eta`` (``(1, eta)`` when ``k == 0``)."""
    if k == 0:
        return 1.0, eta
    if normalize_type == "lightgbm":
        return k / (k + 1.0), eta / (k + 1.0)
    if normalize_type == "tree":
        return k / (k + eta), eta / (k + eta)
    return 1.0 / (1.0 + eta), eta / (1.0 + eta)


class DART(UpdateRule):
    """Dropout of earlier trees each iteration (see the module docstring).

    Parameters
    ----------
    rate_drop : float, default 0.1
        Probability of dropping each tree (uniform sampling), in [0, 1]. LightGBM's
        ``drop_rate``.
    skip_drop : float, default 0.5
        Probability of dropping nothing in an iteration, in [0, 1].
    max_drop : int, default 50
        Most trees dropped in one iteration (the rate is capped at ``max_drop / n_trees``
        too); 0 for no limit.
    one_drop : bool, default False
        Drop one tree when the draws dropped none (XGBoost's ``one_drop``; not on skipped
        iterations).
    sample_type : {"uniform", "weighted"}, default "weighted"
        ``"weighted"``: tree ``i`` is dropped with probability
        ``rate_drop * n * |c_i| / sum_j |c_j|`` (LightGBM's ``uniform_drop=False``).
    normalize_type : {"lightgbm", "tree", "forest"}, default "lightgbm"
        How the dropped trees and the new one are weighted (module docstring).

    Notes
    -----
    The defaults are LightGBM's.
    """

    name = "dart"

    def __init__(self, rate_drop: float = 0.1, skip_drop: float = 0.5, max_drop: int = 50,
                 one_drop: bool = False, sample_type: str = "weighted",
                 normalize_type: str = "lightgbm", **unknown: Any):
        if unknown:
            key = sorted(unknown)[0]
            raise TypeError(f"update rule 'dart': unknown parameter {key}={unknown[key]!r}; "
                            f"expected one of: {', '.join(PARAMS)}")
        self.rate_drop = _probability("rate_drop", rate_drop)
        self.skip_drop = _probability("skip_drop", skip_drop)
        if not (isinstance(max_drop, Integral) and not isinstance(max_drop, bool)
                and max_drop >= 0):
            raise _bad("max_drop", max_drop, "an int >= 0 (0: no limit)")
        self.max_drop = int(max_drop)
        if not isinstance(one_drop, (bool, np.bool_)):
            raise _bad("one_drop", one_drop, "True or False")
        self.one_drop = bool(one_drop)
        if sample_type not in SAMPLE_TYPES:
            raise _bad("sample_type", sample_type, f"one of {SAMPLE_TYPES}")
        self.sample_type = sample_type
        if normalize_type not in NORMALIZE_TYPES:
            raise _bad("normalize_type", normalize_type, f"one of {NORMALIZE_TYPES}")
        self.normalize_type = normalize_type
        #: the trees dropped in the last iteration (indices into the model's terms)
        self.dropped_: List[int] = []

    def begin(self, ctx: Context) -> None:
        """Start a fit: no state carries over (the weights are the model's coefficients)."""
        self.dropped_ = []

    def drop(self, coefficients: np.ndarray, rng: np.random.Generator) -> List[int]:
        """The indices of the trees to drop this iteration, in increasing order.

        Parameters
        ----------
        coefficients : float64 (n_trees,)
            The model's coefficients (the weights of ``sample_type="weighted"``).
        rng : numpy Generator
            The fit's ``"dart"`` stream: one draw for the skip, then one per tree (and one
            more for ``one_drop``).
        """
        n = coefficients.shape[0]
        if n == 0 or self.rate_drop == 0.0 or rng.random() < self.skip_drop:
            return []
        rate = self.rate_drop
        if self.max_drop > 0:
            rate = min(rate, self.max_drop / n)
        weights = np.abs(coefficients)
        total = float(weights.sum())
        if self.sample_type == "weighted" and total > 0:
            p = rate * n * weights / total
            choice = weights / total
        else:
            p = np.full(n, rate)
            choice = np.full(n, 1.0 / n)
        draws = rng.random(n)
        dropped = np.flatnonzero(draws < p)
        if self.max_drop > 0:
            dropped = dropped[:self.max_drop]        # LightGBM stops at max_drop, in order
        if dropped.size == 0 and self.one_drop:
            dropped = np.array([int(rng.choice(n, p=choice))])
        return [int(i) for i in dropped]

    def step(self, ctx: Context) -> None:
        coef = ctx.model.coefficients
        dropped = self.drop(coef, ctx.rng("dart"))
        self.dropped_ = dropped
        if dropped:
            raw = np.array(ctx.raw, dtype=np.float64)
            for i in dropped:
                raw -= coef[i] * ctx.tree_output(i)
            gradient, hessian = ctx.gradients(raw)
        else:
            gradient, hessian = ctx.gradients()
        sample = ctx.sample(gradient, hessian)
        tree = ctx.fit_tree(gradient, hessian, sample)
        a, b = normalization(self.normalize_type, len(dropped), ctx.learning_rate)
        if dropped:
            ctx.set_coefficients(dropped, coef[dropped] * a)
        ctx.add_tree(tree, b)
