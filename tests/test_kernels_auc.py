"""Differential tests of the AUC kernel (``_kernels._auc.roc_auc``) against a pairwise NumPy
reference and scikit-learn's ``roc_auc_score``, and of the ``auc`` metric that runs it."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from optional_imports import importorskip

from boostlib import registry
from boostlib._kernels import _auc
from reference.strategies import KERNEL_SETTINGS

# --------------------------------------------------------------------------------------------
# references
# --------------------------------------------------------------------------------------------


def pairwise_auc(score, y, w=None):
    """The definition: over every (positive, negative) pair, the product of their weights
    when the positive scores higher, half of it when they tie; over the product of the
    classes' total weights. O(n^2)."""
    score, y = np.asarray(score, np.float64), np.asarray(y, np.float64)
    w = np.ones(y.size) if w is None else np.asarray(w, np.float64)
    pos = y == 1
    sp, sn = score[pos], score[~pos]
    wp, wn = w[pos], w[~pos]
    credit = (sp[:, None] > sn[None, :]) + 0.5 * (sp[:, None] == sn[None, :])
    return float(np.sum(wp[:, None] * wn[None, :] * credit) / (wp.sum() * wn.sum()))


def pairwise_count(score, y):
    """Without weights, twice the numerator of the AUC and its denominator, as integers:
    the kernel's result must be exactly their quotient, rounded once."""
    pos = np.asarray(y) == 1
    sp, sn = score[pos], score[~pos]
    twice = 2 * int(np.sum(sp[:, None] > sn[None, :])) + int(np.sum(sp[:, None] == sn[None, :]))
    return twice, 2 * sp.size * sn.size


def sorted_auc(score, y, w=None):
    """The same by sorting (for inputs too large for the pairwise reference): every
    positive counts the negatives' weight below its score, and half of that tied with it."""
    w = np.ones(y.size) if w is None else w
    pos = y == 1
    order = np.argsort(score[~pos], kind="stable")
    sn, wn = score[~pos][order], w[~pos][order]
    cum = np.concatenate([[0.0], np.cumsum(wn)])
    below = cum[np.searchsorted(sn, score[pos], side="left")]
    upto = cum[np.searchsorted(sn, score[pos], side="right")]
    return float(np.sum(w[pos] * (below + 0.5 * (upto - below))) / (w[pos].sum() * wn.sum()))


# --------------------------------------------------------------------------------------------
# strategies
# --------------------------------------------------------------------------------------------

#: Scores with signed zeros, integers, negatives, huge and tiny (subnormal) magnitudes and
#: infinities.
score_values = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, np.inf, -np.inf]),
    st.integers(-5, 5).map(float),
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(-1e-300, 1e-300, allow_subnormal=True),
    st.floats(-1e300, 1e300))

weight_values = st.one_of(st.just(0.0), st.floats(0.1, 10.0), st.floats(1e-3, 1e3))


@st.composite
def auc_case(draw, max_rows=200, finite=False):
    """(score, y, w): both classes present with positive weight."""
    n = draw(st.integers(2, max_rows))
    y = draw(hnp.arrays(np.float64, n, elements=st.sampled_from([0.0, 1.0])))
    i, j = draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
    y[i], y[j] = 1.0, 0.0
    kind = draw(st.sampled_from(["values", "pool", "near", "constant", "integers", "random"]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    if kind == "values":
        score = draw(hnp.arrays(np.float64, n, elements=score_values))
    elif kind == "pool":           # many ties: a few distinct values
        pool = draw(hnp.arrays(np.float64, draw(st.integers(1, 6)), elements=score_values))
        score = pool[draw(hnp.arrays(np.intp, n, elements=st.integers(0, pool.size - 1)))]
    elif kind == "near":           # equal in their top 32 bits, different below (long runs)
        base = draw(st.sampled_from([1.0, -3.0, 1e-200, -7e250, 0.1]))
        k = rng.integers(0, draw(st.integers(1, 300)), n)
        step = draw(st.sampled_from([1, 2 ** 10, 2 ** 19, 2 ** 21]))
        score = base * (1.0 + (k * step).astype(np.float64) * 2.0 ** -52)
    elif kind == "constant":
        score = np.full(n, draw(score_values))
    elif kind == "integers":
        score = draw(hnp.arrays(np.int64, n, elements=st.integers(-3, 3))).astype(np.float64)
    else:                          # dense random data (Hypothesis' arrays repeat values)
        score = rng.normal(size=n) * 10.0 ** rng.integers(-3, 4, n)
    if finite:
        score = np.where(np.isinf(score), np.sign(score) * 1e300, score)
    w = None
    if draw(st.booleans()):
        w = draw(hnp.arrays(np.float64, n, elements=weight_values))
        w[i] = draw(st.floats(0.1, 10.0))
        w[j] = draw(st.floats(0.1, 10.0))
    return score, y, w


# --------------------------------------------------------------------------------------------
# the kernel
# --------------------------------------------------------------------------------------------


@settings(KERNEL_SETTINGS, max_examples=4 * KERNEL_SETTINGS.max_examples)
@given(auc_case())
def test_roc_auc_matches_pairwise_reference(case):
    score, y, w = case
    got = _auc.roc_auc(score, y, w)
    assert got == pytest.approx(pairwise_auc(score, y, w), rel=1e-12, abs=1e-15)
    if w is None:                   # exact counts, one division
        twice, pairs = pairwise_count(score, y)
        assert got == twice / pairs


@KERNEL_SETTINGS
@given(auc_case(finite=True))
def test_roc_auc_matches_sklearn(case):
    sk = importorskip("sklearn.metrics")
    score, y, w = case
    want = sk.roc_auc_score(y, score, sample_weight=w)
    assert _auc.roc_auc(score, y, w) == pytest.approx(want, rel=1e-12, abs=1e-15)


@KERNEL_SETTINGS
@given(auc_case(max_rows=60), st.randoms(use_true_random=False))
def test_roc_auc_depends_on_the_rows_not_their_order(case, rnd):
    score, y, w = case
    order = np.array(rnd.sample(range(y.size), y.size))
    got = _auc.roc_auc(score[order], y[order], None if w is None else w[order])
    assert got == pytest.approx(_auc.roc_auc(score, y, w), rel=1e-13, abs=1e-15)
    if w is None:
        assert got == _auc.roc_auc(score, y)


def test_roc_auc_edge_cases():
    # one row of each class, ordered, reversed and tied
    assert _auc.roc_auc(np.array([1.0, 0.0]), np.array([1.0, 0.0])) == 1.0
    assert _auc.roc_auc(np.array([0.0, 1.0]), np.array([1.0, 0.0])) == 0.0
    assert _auc.roc_auc(np.array([2.0, 2.0]), np.array([1.0, 0.0])) == 0.5
    # -0.0 ties with 0.0, in either class
    assert _auc.roc_auc(np.array([-0.0, 0.0]), np.array([1.0, 0.0])) == 0.5
    assert _auc.roc_auc(np.array([0.0, -0.0, -0.0]), np.array([1.0, 0.0, 1.0])) == 0.5
    # signs, infinities and subnormals keep their order
    s = np.array([-np.inf, -1e308, -5e-324, 0.0, 5e-324, 1e308, np.inf])
    y = np.array([0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0])
    assert _auc.roc_auc(s, y) == pairwise_auc(s, y)
    # labels other than 1 are negatives
    assert _auc.roc_auc(np.array([3.0, 2.0, 1.0]), np.array([1.0, 2.0, 0.0])) == 1.0
    # a zero weight removes a row
    s, y = np.array([0.1, 0.9, 0.5]), np.array([1.0, 0.0, 0.0])
    assert _auc.roc_auc(s, y, np.array([1.0, 0.0, 1.0])) == 0.0
    assert _auc.roc_auc(s, y, np.array([1.0, 1.0, 0.0])) == 0.0
    assert _auc.roc_auc(s[[0, 2]], y[[0, 2]]) == 0.0


def test_roc_auc_large_inputs_with_long_runs():
    # 100,000 rows: continuous scores, scores that share their top 32 bits in runs shorter
    # and longer than the insertion-sort limit, one long run, few distinct values
    rng = np.random.default_rng(0)
    n = 100_000
    y = (rng.random(n) < 0.3).astype(np.float64)
    w = rng.exponential(size=n) * (rng.random(n) < 0.9)
    cases = [rng.normal(size=n) + y,
             (1.0 + rng.integers(0, n // 20, n) * 2.0 ** -18) * (1 + rng.integers(0, 99, n)
                                                                 * 2.0 ** -50),
             (1.0 + rng.integers(0, n // 300, n) * 2.0 ** -18) * (1 + rng.integers(0, 2 ** 20, n)
                                                                  * 2.0 ** -52),
             -(1.0 + rng.integers(0, n, n) * 2.0 ** -52),
             rng.normal(size=31)[rng.integers(0, 31, n)] * 1e-310,
             np.sort(rng.normal(size=n)), np.sort(rng.normal(size=n))[::-1].copy()]
    for score in cases:
        got = _auc.roc_auc(score, y)
        assert got == pytest.approx(sorted_auc(score, y), rel=1e-12)
        assert _auc.roc_auc(score, y, w) == pytest.approx(sorted_auc(score, y, w), rel=1e-11)
        # without weights the count is exact: the integer ratio of searchsorted's counts
        pos = y == 1
        sn = np.sort(score[~pos])
        twice = int(np.sum(np.searchsorted(sn, score[pos], side="left"))
                    + np.sum(np.searchsorted(sn, score[pos], side="right")))
        pairs = 2 * int(pos.sum()) * int((~pos).sum())
        assert got == twice / pairs


def test_sorted_reference_agrees_with_the_pairwise_one():
    rng = np.random.default_rng(1)
    for n in (2, 7, 50):
        y = np.r_[1.0, 0.0, (rng.random(n) < 0.5).astype(np.float64)]
        score = rng.integers(-3, 3, y.size).astype(np.float64)
        w = rng.random(y.size)
        assert sorted_auc(score, y, w) == pytest.approx(pairwise_auc(score, y, w), rel=1e-12)


def test_roc_auc_errors():
    with pytest.raises(ValueError, match="both classes"):
        _auc.roc_auc(np.array([0.2, 0.3]), np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match="both classes"):
        _auc.roc_auc(np.array([0.2, 0.3]), np.array([0.0, 0.0]))
    with pytest.raises(ValueError, match="both classes"):
        _auc.roc_auc(np.array([0.2, 0.3, 0.4]), np.array([1.0, 0.0, 0.0]),
                     np.array([0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="both classes"):
        _auc.roc_auc(np.empty(0), np.empty(0))
    with pytest.raises(ValueError, match="NaN"):
        _auc.roc_auc(np.array([0.2, np.nan, 0.1]), np.array([1.0, 0.0, 0.0]))
    with pytest.raises(ValueError, match="NaN"):     # NaN is refused before anything else
        _auc.roc_auc(np.array([np.nan, 0.1]), np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match="same length"):
        _auc.roc_auc(np.array([0.2, 0.3]), np.array([1.0, 0.0, 1.0]))
    with pytest.raises(ValueError, match="same length"):
        _auc.roc_auc(np.array([0.2, 0.3]), np.array([1.0, 0.0]), np.ones(3))


# --------------------------------------------------------------------------------------------
# the metric
# --------------------------------------------------------------------------------------------


def test_auc_metric_runs_the_kernel_on_any_layout():
    auc = registry.create("metric", "auc")
    rng = np.random.default_rng(2)
    y = (rng.random(500) < 0.5).astype(np.float64)
    both = np.column_stack([rng.normal(size=500), rng.normal(size=500) + y])
    w = np.repeat(rng.random(500), 2)[::2]                  # strided views: copied
    assert auc(y, both[:, 1], w) == pytest.approx(pairwise_auc(both[:, 1], y, w), rel=1e-12)
    assert auc(y.tolist(), both[:, 1].tolist()) == _auc.roc_auc(both[:, 1].copy(), y)


def test_auc_metric_errors_name_it():
    auc = registry.create("metric", "auc")
    with pytest.raises(ValueError, match="'auc' needs both classes"):
        auc([0, 0, 0], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="'auc' needs both classes"):
        auc([0, 1], [0.1, 0.2], [1.0, 0.0])
    with pytest.raises(ValueError, match="'auc' cannot rank NaN"):
        auc([0, 1], [np.nan, 0.2])
    with pytest.raises(ValueError, match="'auc' is for binary scores"):
        auc([0, 1], [[0.1, 0.9], [0.2, 0.8]])
