"""The root histogram of a tree fitted on every row takes its row counts from the first such
tree (they never change) and builds only the gradient and hessian channels: the same
models as building all three channels every time."""
import numpy as np
import pytest

from boostlib import BoostClassifier
from boostlib.engine import row_entries
from boostlib.engine.grower import TreeGrower


def data(n=1500, seed=0, one_hot=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    X[rng.random(n) < 0.1, 1] = np.nan
    if one_hot:         # bundled columns (read as sparse entries when the limits allow)
        codes = rng.integers(0, 30, size=(n, 3))
        hot = np.zeros((n, 90))
        for j in range(3):
            hot[np.arange(n), 30 * j + codes[:, j]] = 1.0
        X = np.hstack([X, hot])
    y = (X[:, 0] + np.nan_to_num(X[:, 1]) * X[:, 2] + rng.normal(size=n) > 0).astype(int)
    return X, y


def fit_both(monkeypatch, **params):
    """Predictions with the cached counts and with every root built in full, and how many
    roots were built from the cache."""
    X, y = data(one_hot=params.pop("one_hot", False))
    weight = params.pop("sample_weight", None)
    cached = []
    build = TreeGrower._build_root

    def spy(self, inputs, node, hist, all_rows):
        before = self._root_counts is not None
        build(self, inputs, node, hist, all_rows)
        cached.append(before and all_rows and self.n_channels == 3)

    monkeypatch.setattr(TreeGrower, "_build_root", spy)
    a = BoostClassifier(random_state=0, n_estimators=25, **params).fit(
        X, y, sample_weight=weight).predict_proba(X)
    monkeypatch.setattr(TreeGrower, "_build_root",
                        lambda self, i, n, h, all_rows: build(self, i, n, h, False))
    b = BoostClassifier(random_state=0, n_estimators=25, **params).fit(
        X, y, sample_weight=weight).predict_proba(X)
    return a, b, sum(cached)


@pytest.mark.parametrize("policy", ["symmetric", "depthwise", "lossguide"])
@pytest.mark.parametrize("extra", [
    {}, {"one_hot": True}, {"one_hot": True, "entries": True}, {"sample_weight": np.linspace(0.5, 2.0, 1500)},
    {"sampler": "goss", "subsample": 0.5}, {"update": "sglb"},
])
def test_cached_root_counts_give_the_same_model(policy, extra, monkeypatch):
    params = dict(extra)
    if params.pop("entries", False):        # bundled rows read as their sparse entries
        monkeypatch.setattr(row_entries, "MAX_DENSITY", 1.0)
        monkeypatch.setattr(row_entries, "MIN_COLUMNS", 1)
    a, b, n_cached = fit_both(monkeypatch, grow_policy=policy, min_samples_leaf=20,
                              **({"max_leaves": 15} if policy == "lossguide" else {}),
                              **params)
    assert np.array_equal(a, b)
    if "sampler" not in params:
        assert n_cached == 24               # every tree after the first
    # (sampled trees fit a subset and build their roots in full)


def test_without_a_count_channel_nothing_is_cached(monkeypatch):
    a, b, n_cached = fit_both(monkeypatch, grow_policy="depthwise", min_samples_leaf=1)
    assert np.array_equal(a, b) and n_cached == 0
