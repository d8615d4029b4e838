"""Hypothesis strategies shared by the kernel tests."""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from hypothesis import Phase, settings, strategies as st
from hypothesis.extra import numpy as hnp

#: ``max_bins`` values worth testing: the smallest ones, a few ordinary ones and the largest.
MAX_BINS_CHOICES = (2, 3, 4, 7, 16, 255)

#: Shrinking a failure of these brute-force comparisons can take minutes, so it is off
#: unless ``BOOSTLIB_TEST_SHRINK=1`` (the failing example is printed unshrunk, and every bug
#: these tests found also has a small hand-written test).
_PHASES = tuple(Phase) if os.environ.get("BOOSTLIB_TEST_SHRINK", "0") not in ("", "0") else (
    Phase.explicit, Phase.reuse, Phase.generate, Phase.target)

#: Settings of the differential tests (fast enough for the whole set to stay well under a
#: minute on 2 cores); ``BOOSTLIB_TEST_EXAMPLES=N`` multiplies the number of examples by N
#: for a longer soak run.
_SCALE = max(1, int(os.environ.get("BOOSTLIB_TEST_EXAMPLES", "1") or 1))
KERNEL_SETTINGS = settings(max_examples=50 * _SCALE, deadline=None, phases=_PHASES)
SLOW_SETTINGS = settings(max_examples=50 * _SCALE, deadline=None, phases=_PHASES)


def supports_two_channels() -> bool:
    """Whether ``build_histograms`` offers the count-free (2-channel) mode. The kernels'
    docstrings describe it as optional; the tests of it are skipped where it is absent."""
    from boostlib._kernels import _histogram

    X = np.zeros((1, 1), np.uint8)
    try:
        _histogram.build_histograms(X, np.empty(0, np.int32), np.zeros(1, np.int32),
                                    np.zeros(1, np.int32), np.ones(1, np.float32),
                                    np.ones(1, np.float32), np.array([0, 2], np.int32),
                                    np.zeros((1, 2, 2)), 1)
    except ValueError:
        return False
    return True


TWO_CHANNELS = supports_two_channels()


@dataclass
class Binned:
    """Binned training data in both layouts."""

    X_rows: np.ndarray       # uint8 (n_rows, n_features), C-contiguous
    X_binned: np.ndarray     # uint8 (n_features, n_rows), C-contiguous
    nbnm: np.ndarray         # int32 (n_features,) bins in use, missing excluded
    missing_bin: int         # == max_bins

    @property
    def n_rows(self) -> int:
        return self.X_rows.shape[0]

    @property
    def n_features(self) -> int:
        return self.X_rows.shape[1]

    @property
    def n_bins(self) -> int:
        return self.missing_bin + 1


def make_binned(X_rows: np.ndarray, nbnm, missing_bin: int) -> Binned:
    X_rows = np.ascontiguousarray(X_rows, dtype=np.uint8)
    return Binned(X_rows, np.ascontiguousarray(X_rows.T), np.asarray(nbnm, dtype=np.int32),
                  int(missing_bin))


def _filler(draw):
    """How the arrays of one example are filled: by Hypothesis element by element (good at
    edge cases: repeated values, extremes) or, from a drawn seed, by NumPy's generator (dense
    random data, so that trees actually split)."""
    if draw(st.booleans()):
        return None
    return np.random.default_rng(draw(st.integers(0, 2**32 - 1)))


@st.composite
def binned_data(draw, min_rows=1, max_rows=40, max_features=4, max_bins=None,
                missing=None, max_nb=None):
    """Random binned data: per-feature bins in use ``1..max_bins`` (1 = constant feature),
    values over them, optional missing values (``missing_bin == max_bins``)."""
    mb = draw(st.sampled_from(MAX_BINS_CHOICES)) if max_bins is None else (
        draw(st.sampled_from(max_bins)) if isinstance(max_bins, (list, tuple)) else max_bins)
    n_features = draw(st.integers(1, max_features))
    if draw(st.integers(0, 2)) == 0:
        n_rows = draw(st.integers(min_rows, max(min_rows, min(8, max_rows))))
    else:
        n_rows = draw(st.integers(max(min_rows, max_rows // 2), max_rows))
    hi = mb if max_nb is None else min(mb, max_nb)
    nbnm = np.array([draw(st.integers(1, hi)) for _ in range(n_features)], dtype=np.int32)
    missing = draw(st.booleans()) if missing is None else missing
    rng = _filler(draw)
    p_missing = draw(st.sampled_from([0.05, 0.2, 0.5])) if rng is not None else 0.0
    X = np.empty((n_rows, n_features), dtype=np.uint8)
    for f in range(n_features):
        if rng is None:
            col = draw(hnp.arrays(np.int64, n_rows,
                                  elements=st.integers(0, int(nbnm[f]) - 1)))
            miss = draw(hnp.arrays(np.bool_, n_rows)) if missing else np.zeros(n_rows, bool)
        else:
            col = rng.integers(0, int(nbnm[f]), n_rows)
            miss = (rng.random(n_rows) < p_missing) if missing else np.zeros(n_rows, bool)
        X[:, f] = np.where(miss, mb, col)
    return make_binned(X, nbnm, mb)


def dyadic(lo: int, hi: int, denom: int):
    """Numbers ``k / denom`` for integers ``lo <= k <= hi``: sums of a few hundred of them
    (times dyadic weights) are exact in float32 and float64, whatever the order."""
    return st.integers(lo, hi).map(lambda k: k / denom)


@st.composite
def gradients(draw, n, exact=None, zero=None, weighted=None, sparse_hessian=None):
    """``(g, h)`` float64 arrays of length ``n``.

    exact : dyadic values (every sum exact) instead of arbitrary float32-ish values.
    zero : all-zero gradients.
    weighted : gradients and hessians multiplied by positive per-row weights.
    sparse_hessian : many rows get a zero hessian but keep their gradient (what a saturated
        logloss gives: ``p (1 - p)`` rounds to 0 while ``p - y`` is +-1).
    """
    exact = draw(st.booleans()) if exact is None else exact
    zero = (draw(st.integers(0, 7)) == 0) if zero is None else zero
    weighted = draw(st.booleans()) if weighted is None else weighted
    if sparse_hessian is None:
        sparse_hessian = st.sampled_from([False, False, True])
    if isinstance(sparse_hessian, st.SearchStrategy):
        sparse_hessian = draw(sparse_hessian)
    rng = _filler(draw)
    if rng is not None:
        if exact:
            g = rng.integers(-256, 257, n) / 64
            h = rng.integers(0, 257, n) / 64
            w = rng.integers(1, 17, n) / 4
        else:
            g = rng.normal(0, 3, n) * 10.0 ** rng.integers(-2, 2, n)
            h = rng.uniform(0, 10, n)
            w = rng.uniform(0.05, 20, n)
        keep_h = rng.random(n) < 0.5
    elif exact:
        g = draw(hnp.arrays(np.float64, n, elements=dyadic(-256, 256, 64)))
        h = draw(hnp.arrays(np.float64, n, elements=dyadic(0, 256, 64)))
        w = draw(hnp.arrays(np.float64, n, elements=dyadic(1, 16, 4)))
        keep_h = draw(hnp.arrays(np.bool_, n)) if sparse_hessian else None
    else:
        fl = dict(allow_nan=False, allow_infinity=False, allow_subnormal=False)
        g = draw(hnp.arrays(np.float64, n, elements=st.floats(-10, 10, **fl)))
        h = draw(hnp.arrays(np.float64, n, elements=st.floats(0.0, 10, **fl)))
        w = draw(hnp.arrays(np.float64, n, elements=st.floats(0.05, 20, **fl)))
        keep_h = draw(hnp.arrays(np.bool_, n)) if sparse_hessian else None
    if zero:
        g = np.zeros(n)
    if sparse_hessian:
        h = np.where(keep_h, h, 0.0)
    if weighted:
        g = g * w
        h = h * w
    return g, h


@st.composite
def split_params(draw, exact=True):
    """``(l2, min_samples_leaf, min_child_weight)`` as the grower would pass them."""
    l2 = draw(st.sampled_from([0.0, 0.5, 1.0, 10.0] if exact else [0.0, 0.1, 1.0, 10.0]))
    msl = draw(st.sampled_from([1, 1, 2, 3, 5]))
    mcw = draw(st.sampled_from([0.0, 1e-3, 0.5, 2.0]))
    if l2 == 0.0 and mcw == 0.0:
        mcw = 1e-3   # the estimators refuse l2 == 0 together with min_child_weight == 0
    return l2, msl, mcw


def random_tree(rng, n_splits, shuffle):
    """Node arrays of a random binary tree grown split by split (children numbered after
    their parent), its ids optionally permuted so that some children come first."""
    left, right = [-1], [-1]
    leaves = [0]
    for _ in range(n_splits):
        k = leaves.pop(int(rng.integers(len(leaves))))
        left[k], right[k] = len(left), len(left) + 1
        left += [-1, -1]
        right += [-1, -1]
        leaves += [left[k], right[k]]
    left, right = np.array(left), np.array(right)
    if shuffle:
        perm = np.concatenate([[0], 1 + rng.permutation(left.size - 1)])  # new id of node
        new_left, new_right = np.full_like(left, -1), np.full_like(right, -1)
        split = left >= 0
        new_left[perm[split]] = perm[left[split]]
        new_right[perm[split]] = perm[right[split]]
        left, right = new_left, new_right
    return left.astype(np.int32), right.astype(np.int32)
