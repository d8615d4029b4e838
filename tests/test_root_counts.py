"""The root histogram of a tree fitted on every row takes its row counts from a count-only
histogram built once (they never change) and builds only the gradient and hessian channels:
the same models as building all three channels every time, in the compiled loop
(``_leafwise.grow_tree`` builds the root) and in the Python loops."""
import numpy as np
import pytest

from boostlib import BoostClassifier
from boostlib.engine import row_entries
from boostlib.engine.histograms import Histograms
from boostlib.engine.trees import compiled


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
    roots took the cached counts."""
    X, y = data(one_hot=params.pop("one_hot", False))
    weight = params.pop("sample_weight", None)
    cached = []
    counts = Histograms.root_counts

    def spy(self, inputs, all_rows):
        out = counts(self, inputs, all_rows)
        cached.append(out is not None)
        return out

    monkeypatch.setattr(Histograms, "root_counts", spy)
    a = BoostClassifier(random_state=0, n_estimators=25, **params).fit(
        X, y, sample_weight=weight).predict_proba(X)
    monkeypatch.setattr(Histograms, "root_counts", lambda self, inputs, all_rows: None)
    b = BoostClassifier(random_state=0, n_estimators=25, **params).fit(
        X, y, sample_weight=weight).predict_proba(X)
    return a, b, sum(cached)


@pytest.mark.parametrize("policy, compiled_loop", [
    ("symmetric", False), ("depthwise", True), ("depthwise", False), ("lossguide", True),
    ("lossguide", False)])
@pytest.mark.parametrize("extra", [
    {}, {"one_hot": True}, {"one_hot": True, "entries": True}, {"sample_weight": np.linspace(0.5, 2.0, 1500)},
    {"sampler": "goss", "subsample": 0.5}, {"update": "sglb"},
])
def test_cached_root_counts_give_the_same_model(policy, extra, compiled_loop, monkeypatch):
    monkeypatch.setattr(compiled, "ENABLED", compiled_loop)
    params = dict(extra)
    if params.pop("entries", False):        # bundled rows read as their sparse entries
        monkeypatch.setattr(row_entries, "MAX_DENSITY", 1.0)
        monkeypatch.setattr(row_entries, "MIN_COLUMNS", 1)
    a, b, n_cached = fit_both(monkeypatch, grow_policy=policy, min_samples_leaf=20,
                              **({"max_leaves": 15} if policy == "lossguide" else {}),
                              **params)
    assert np.array_equal(a, b)
    if "sampler" not in params:
        assert n_cached == 25               # every tree
    # (sampled trees fit a subset and build their roots in full)


def test_without_a_count_channel_nothing_is_cached(monkeypatch):
    a, b, n_cached = fit_both(monkeypatch, grow_policy="depthwise", min_samples_leaf=1)
    assert np.array_equal(a, b) and n_cached == 0
