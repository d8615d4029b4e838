"""Tracked models: ``bias + sum_k coef[k] * tree_k`` over one fit's trees, with their
scores, as update rules combine them (AGBM's momentum model, ``ctx.track``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Sequence, Tuple

import numpy as np

if TYPE_CHECKING:                      # the context owns its tracked models
    from .context import BoostingContext


class Tracked:
    """A tracked model of one fit (implements :class:`boostlib.api.TrackedModel`).

    ``bias + sum_k coef[k] * tree_k`` over the context's trees, with its raw scores on the
    training rows and on every validation set. The model being trained (``ctx.model``) keeps
    its bias and coefficients in the ensemble and its scores in the context's arrays; an
    auxiliary one (``ctx.track(name)``) owns them. Coefficients past the stored ones are 0
    (trees added after the last change of this model).
    """

    def __init__(self, ctx: "BoostingContext", name: str):
        self._ctx = ctx
        self._name = name
        self._bias = np.zeros(ctx.n_outputs)
        self._coef = np.zeros(16)
        self._train = np.empty(0)
        self._evals: List[np.ndarray] = []

    @property
    def is_model(self) -> bool:
        """Whether this is the model being trained."""
        return self is self._ctx.model

    @property
    def name(self) -> str:
        """``"model"`` or the name given to ``ctx.track``."""
        return self._name

    @property
    def bias(self):
        """The constant term (an array of shape (n_outputs,) with several outputs)."""
        if self.is_model:
            return self._ctx.ensemble.bias
        return float(self._bias[0]) if self._bias.size == 1 else self._bias.copy()

    @property
    def coefficients(self) -> np.ndarray:
        """A copy of the coefficients, shape ``(n_trees,)``."""
        return self.coef_array().copy()

    @property
    def raw(self) -> np.ndarray:
        """Raw scores on the training rows (read-only view, shaped as ``ctx.raw``)."""
        view = self._ctx._public(self.train_scores()).view()
        view.flags.writeable = False
        return view

    # -- used by the context (not part of the plugin interface) ----------------------------
    def coef_array(self) -> np.ndarray:
        """The coefficients of all ``n_trees`` trees (the storage itself; do not modify)."""
        n = self._ctx.ensemble.n_trees
        if self.is_model:
            return self._ctx.ensemble.coef
        if self._coef.size < n:
            self._coef = np.concatenate([self._coef, np.zeros(max(n, 16))])
        return self._coef[:n]

    def train_scores(self) -> np.ndarray:
        """Training scores, shape (n_outputs, n_rows) (the storage itself)."""
        return self._ctx._raw if self.is_model else self._train

    def eval_scores(self) -> List[np.ndarray]:
        """Scores on each validation set, in ``ctx.evals`` order, each of shape
        (n_outputs, n_rows) (the storage itself)."""
        return [ev.raw for ev in self._ctx.evals] if self.is_model else self._evals

    def assign(self, bias, coef: np.ndarray, train: np.ndarray,
               evals: Sequence[np.ndarray]) -> None:
        """Replace bias, coefficients and scores (already consistent with each other)."""
        if self.is_model:
            self._ctx.ensemble.bias = bias
            self._ctx.ensemble.coef = coef
            self._ctx._raw[...] = train
            self._ctx._raw_version += 1
            for ev, scores in zip(self._ctx.evals, evals):
                ev.raw[...] = scores
            return
        self._bias = np.asarray(bias, dtype=np.float64).reshape(-1).copy()
        self.coef_array()[...] = coef
        self._train = train             # owned from now on: callers pass new arrays
        self._evals = list(evals)

    def add_coefficient(self, index: int, value: float) -> None:
        """``coef[index] += value`` (scores are updated by the caller)."""
        if self.is_model:
            coef = self._ctx.ensemble.coef.copy()
            coef[index] += value
            self._ctx.ensemble.coef = coef
        else:
            self.coef_array()[index] += value

    def __repr__(self) -> str:
        return f"<tracked model {self._name!r}>"


def _lincomb(terms: Sequence[Tuple[float, np.ndarray]]) -> np.ndarray:
    """``sum_i w_i * a_i`` in a new array, terms added in order."""
    (w0, a0), rest = terms[0], terms[1:]
    out = np.multiply(a0, w0)
    for w, a in rest:
        out += w * a
    return out
