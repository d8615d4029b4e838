"""The additive model ``raw(x) = bias + sum_k c_k * tree_k(x)`` and its prediction."""
from __future__ import annotations

from typing import List, Union

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
        self.coef: List[float] = []
        self._compact_cache = None

    @property
    def n_trees(self) -> int:
        return len(self.trees)

    def add(self, tree: Tree, coef: float) -> int:
        """Append a tree; return its index."""
        if tree.policy != self.policy:
            raise ValueError(f"cannot add a {tree.policy} tree to a {self.policy} ensemble")
        self.trees.append(tree)
        self.coef.append(float(coef))
        self._compact_cache = None
        return len(self.trees) - 1

    def scale(self, factor: float) -> None:
        """Multiply the bias and every coefficient by ``factor``."""
        self.bias *= factor
        self.coef = [c * factor for c in self.coef]
        self._compact_cache = None

    def truncate(self, n_trees: int, bias: float, coef: np.ndarray) -> None:
        """Keep the first ``n_trees`` trees with the given bias and coefficients."""
        del self.trees[n_trees:]
        self.coef = [float(c) for c in coef[:n_trees]]
        self.bias = float(bias)
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
        return self._scores(X_binned, self.trees, np.asarray(self.coef, dtype=np.float64),
                            n_threads)

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
        return compact, trees, np.asarray(self.coef, dtype=np.float64)

    def predict_raw(self, X: np.ndarray, n_threads: int = 1) -> np.ndarray:
        """Raw scores of raw float64 rows ``X`` (n_rows, n_features); NaN = missing."""
        if self._compact_cache is None:
            self._compact_cache = self._compact()
        mapper, trees, coef = self._compact_cache
        return self._scores(mapper.transform(X, n_threads), trees, coef, n_threads)

    def feature_importances(self) -> np.ndarray:
        """Total split gain per feature, normalised to sum to 1 (zeros if no split)."""
        imp = np.zeros(self.bin_mapper.n_features)
        for t in self.trees:
            mask = t.feature >= 0
            np.add.at(imp, t.feature[mask], t.gain[mask])
        total = imp.sum()
        return imp / total if total > 0 else imp
