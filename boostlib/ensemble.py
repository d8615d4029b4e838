"""The additive model ``raw(x) = bias + sum_k c_k * tree_k(x)`` and its prediction."""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple, Union

import numpy as np

from ._kernels import _predictor
from .binning import BinMapper
from .tree import DepthwiseTree, ObliviousTree

Tree = Union[ObliviousTree, DepthwiseTree]


class Ensemble:
    """Trees with per-tree coefficients, a bias, and the bin borders they split on.

    Parameters
    ----------
    bin_mapper : BinMapper
        Borders used to bin raw features at prediction time.
    policy : {"symmetric", "depthwise"}
    bias : float
    """

    def __init__(self, bin_mapper: BinMapper, policy: str, bias: float = 0.0):
        self.bin_mapper = bin_mapper
        self.policy = policy
        self.bias = float(bias)
        self.trees: List[Tree] = []
        self._coef = np.empty(16)
        #: ``(n_trees, factor)`` of every :meth:`scale` call, in order, or None once the
        #: coefficients were rewritten otherwise (then past states cannot be recovered).
        self.scale_history: Optional[List[Tuple[int, float]]] = []
        self._compact_cache = None

    @property
    def n_trees(self) -> int:
        return len(self.trees)

    @property
    def coef(self) -> np.ndarray:
        """The tree coefficients, shape ``(n_trees,)`` (a view of the model's storage)."""
        return self._coef[:len(self.trees)]

    @coef.setter
    def coef(self, values) -> None:
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (self.n_trees,):
            raise ValueError(f"coef must have shape ({self.n_trees},), got {values.shape}")
        self._coef[:self.n_trees] = values
        self.scale_history = None
        self._compact_cache = None

    def add(self, tree: Tree, coef: float) -> int:
        """Append a tree; return its index."""
        if tree.policy != self.policy:
            raise ValueError(f"cannot add a {tree.policy} tree to a {self.policy} ensemble")
        n = self.n_trees
        if n == self._coef.size:
            self._coef = np.concatenate([self._coef, np.empty(max(16, n))])
        self._coef[n] = float(coef)
        self.trees.append(tree)
        self._compact_cache = None
        return n

    def scale(self, factor: float) -> None:
        """Multiply the bias and every coefficient by ``factor`` (recorded in
        :attr:`scale_history`)."""
        factor = float(factor)
        self.bias *= factor
        self._coef[:self.n_trees] *= factor
        if self.scale_history is not None:
            self.scale_history.append((self.n_trees, factor))
        self._compact_cache = None

    def truncate(self, n_trees: int, bias: float, coef: np.ndarray) -> None:
        """Keep the first ``n_trees`` trees with the given bias and coefficients (a state the
        model had when it held ``n_trees`` trees, e.g. the best iteration)."""
        del self.trees[n_trees:]
        self._coef[:n_trees] = np.asarray(coef, dtype=np.float64)[:n_trees]
        self.bias = float(bias)
        if self.scale_history is not None:
            self.scale_history = [(m, f) for m, f in self.scale_history if m < n_trees]
        self._compact_cache = None

    def _pack(self, trees: List[Tree]):
        def offsets(sizes):
            return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)

        def cat(arrays, dtype):
            return np.ascontiguousarray(np.concatenate(arrays) if arrays else
                                        np.empty(0), dtype=dtype)

        if self.policy == "symmetric":
            return dict(
                split_feature=cat([t.feature for t in trees], np.int32),
                split_bin=cat([t.bin for t in trees], np.int32),
                nan_right=cat([t.nan_right for t in trees], np.uint8),
                split_offset=offsets([t.feature.size for t in trees]),
                leaf_value=cat([t.value for t in trees], np.float64),
                leaf_offset=offsets([t.value.size for t in trees]))
        return dict(
            feature=cat([t.feature for t in trees], np.int32),
            split_bin=cat([t.bin for t in trees], np.int32),
            nan_right=cat([t.nan_right for t in trees], np.uint8),
            left=cat([t.left for t in trees], np.int32),
            right=cat([t.right for t in trees], np.int32),
            value=cat([t.value for t in trees], np.float64),
            node_offset=offsets([t.value.size for t in trees]))

    def add_trees_binned(self, X_binned: np.ndarray, out: np.ndarray, trees: List[Tree],
                         coef: np.ndarray, n_threads: int = 1) -> None:
        """``out += sum coef[t] * trees[t](X)`` on a binned matrix (n_features, n_rows)."""
        packed = self._pack(trees)
        coef = np.ascontiguousarray(coef, dtype=np.float64)
        missing = self.bin_mapper.missing_bin
        if self.policy == "symmetric":
            scratch = np.empty(X_binned.shape[1], dtype=np.int32)
            _predictor.predict_oblivious(X_binned, coef=coef, missing_bin=missing, out=out,
                                         scratch=scratch, n_threads=n_threads, **packed)
        else:
            _predictor.predict_depthwise(X_binned, coef=coef, missing_bin=missing, out=out,
                                         n_threads=n_threads, **packed)

    def _scores(self, X_binned: np.ndarray, trees: List[Tree], coef: np.ndarray,
                n_threads: int) -> np.ndarray:
        out = np.full(X_binned.shape[1], self.bias)
        if trees:
            self.add_trees_binned(X_binned, out, trees, coef, n_threads)
        return out

    def predict_binned(self, X_binned: np.ndarray, n_threads: int = 1) -> np.ndarray:
        """Raw scores of rows binned with ``bin_mapper`` (n_features, n_rows)."""
        return self._scores(X_binned, self.trees, self.coef.copy(), n_threads)

    def _compact(self):
        """Prediction tables that bin only on the borders some split uses (CatBoost's trick).

        Binning is a binary search per value; searching the used borders only (often far
        fewer than ``max_bins``) makes it cheaper. Split bins are renumbered accordingly;
        the order of borders is kept, so every comparison gives the same side.
        """
        mapper = self.bin_mapper
        width = mapper.max_bins + 1
        inner = [t.feature >= 0 if t.policy == "symmetric" else t.left >= 0
                 for t in self.trees]
        feats = np.concatenate([t.feature[m] for t, m in zip(self.trees, inner)] or [[]])
        bins = np.concatenate([t.bin[m] for t, m in zip(self.trees, inner)] or [[]])
        feats, bins = feats.astype(np.int64), bins.astype(np.int64)
        sizes = np.array([b.size for b in mapper.borders_], dtype=np.int64)
        real = bins < sizes[feats] if feats.size else np.zeros(0, bool)  # size: "all left"
        used = np.unique(feats[real] * width + bins[real])
        first = np.searchsorted(used, np.arange(mapper.n_features) * width)
        compact = BinMapper(mapper.max_bins).set_borders(
            [mapper.borders_[f][used[first[f]:first[f + 1] if f + 1 < mapper.n_features
                                  else used.size] - f * width]
             for f in range(mapper.n_features)])
        # rank of each split's border among its feature's used borders
        new_bins = np.searchsorted(used, feats * width + bins) - first[feats]
        trees, pos = [], 0
        for t, m in zip(self.trees, inner):
            new_bin = t.bin.copy()
            k = int(m.sum())
            new_bin[m] = new_bins[pos:pos + k]
            pos += k
            trees.append(type(t)(**{**{k: getattr(t, k) for k in t.__dataclass_fields__
                                       if k != "policy"}, "bin": new_bin}))
        return compact, trees, self.coef.copy()

    def predict_raw(self, X: np.ndarray, n_threads: int = 1) -> np.ndarray:
        """Raw scores of raw float64 rows ``X`` (n_rows, n_features); NaN = missing."""
        if self._compact_cache is None:
            self._compact_cache = self._compact()
        mapper, trees, coef = self._compact_cache
        return self._scores(mapper.transform(X, n_threads), trees, coef, n_threads)

    def state_factors(self, ends: Sequence[int]) -> np.ndarray:
        """For each ``end``, the factor the model's first ``end`` trees and bias were scaled by
        after the model held ``end`` trees (1 when never scaled).

        Dividing the current bias and first ``end`` coefficients by it gives back the model as
        it was when it held ``end`` trees (SGLB's shrinkage undone, CatBoost's "un-shrink").

        Raises
        ------
        ValueError
            When the coefficients were rewritten other than by :meth:`scale` (e.g. AGBM),
            so past states are not recorded.
        """
        if self.scale_history is None:
            raise ValueError("this model's coefficients were rewritten during training (e.g. "
                             "by AGBM), so its earlier states cannot be recovered")
        out = np.ones(len(ends))
        for m, f in self.scale_history:
            for k, end in enumerate(ends):
                if m >= end:
                    out[k] *= f
        return out

    def predict_states_raw(self, X: np.ndarray, ends: Sequence[int],
                           n_threads: int = 1) -> np.ndarray:
        """Raw scores of the model as it was when it held ``ends[k]`` trees.

        Parameters
        ----------
        X : float64 (n_rows, n_features); NaN = missing.
        ends : increasing tree counts in ``[0, n_trees]``.

        Returns
        -------
        ndarray of shape (n_rows, len(ends))
            One pass over the trees: each segment between consecutive ends is added once.
        """
        ends = [int(e) for e in ends]
        increasing = all(a < b for a, b in zip(ends, ends[1:]))
        if not (ends and increasing and 0 <= ends[0] and ends[-1] <= self.n_trees):
            raise ValueError(f"ends must increase within [0, {self.n_trees}], got {ends}")
        factors = self.state_factors(ends)
        if self._compact_cache is None:
            self._compact_cache = self._compact()
        mapper, trees, coef = self._compact_cache
        X_binned = mapper.transform(X, n_threads)
        running = np.full(X_binned.shape[1], self.bias)
        out = np.empty((X_binned.shape[1], len(ends)))
        start = 0
        for k, end in enumerate(ends):
            if end > start:
                self.add_trees_binned(X_binned, running, trees[start:end], coef[start:end],
                                      n_threads)
                start = end
            out[:, k] = running / factors[k]
        return out

    def feature_importances(self) -> np.ndarray:
        """Total split gain per feature, normalised to sum to 1 (zeros if no split)."""
        imp = np.zeros(self.bin_mapper.n_features)
        for t in self.trees:
            mask = t.feature >= 0
            np.add.at(imp, t.feature[mask], t.gain[mask])
        total = imp.sum()
        return imp / total if total > 0 else imp
