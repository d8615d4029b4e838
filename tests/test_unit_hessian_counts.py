"""Trees fitted to unit hessians (an unweighted squared error) with min_samples_leaf > 1
count rows by their hessian sums, without a count channel: the same trees as with it."""
import numpy as np
import pytest

from boostlib import BoostClassifier, BoostRegressor
from boostlib.engine.grower import TreeGrower
from boostlib.engine.split_rules import SplitRules


def data(n=800, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[rng.random(n) < 0.1, 1] = np.nan
    y = X[:, 0] + np.sin(3 * np.nan_to_num(X[:, 1])) + 0.3 * rng.normal(size=n)
    return X, y


def channels_used(monkeypatch):
    seen = []
    grow = TreeGrower.grow

    def spy(self, *args, **kwargs):
        out = grow(self, *args, **kwargs)
        seen.append(self.histograms.n_channels)
        return out

    monkeypatch.setattr(TreeGrower, "grow", spy)
    return seen


@pytest.mark.parametrize("policy", ["depthwise", "symmetric", "lossguide"])
def test_unit_hessians_grow_the_counted_trees(policy, monkeypatch):
    X, y = data()
    kw = dict(max_leaves=31, max_depth=12) if policy == "lossguide" else dict(max_depth=5)
    fit = lambda: BoostRegressor(grow_policy=policy, min_samples_leaf=40, n_estimators=30,
                                 random_state=0, n_jobs=2, **kw).fit(X, y)
    seen = channels_used(monkeypatch)
    free = fit()
    assert seen and set(seen) == {2}
    monkeypatch.setattr(SplitRules, "_unit_hessians", staticmethod(lambda h: False))
    seen.clear()
    counted = fit()
    assert set(seen) == {3}
    assert np.array_equal(free.predict(X), counted.predict(X))
    leaves = [t.n_leaves() for t in free.ensemble_.scalar_trees()]
    assert max(leaves) > 4          # the constraint left room to split


def test_other_hessians_keep_the_count_channel(monkeypatch):
    X, y = data()
    seen = channels_used(monkeypatch)
    BoostRegressor(min_samples_leaf=40, n_estimators=3).fit(X, y, sample_weight=np.full(
        y.size, 2.0))
    BoostClassifier(min_samples_leaf=40, n_estimators=3).fit(X, y > 0)
    assert set(seen) == {3}
