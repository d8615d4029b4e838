"""``importance_type``: split counts, gains and covers per feature, for every tree kind."""
import numpy as np
import pytest

from boostlib import BoostClassifier, BoostRegressor
from boostlib.engine.importance import feature_importance
from boostlib.engine.trees import DepthwiseTree, ObliviousTree
from optional_imports import importorskip


def _node_tree(nodes):
    """A depthwise tree from ``[(feature, gain, cover, left, right), ...]`` (leaves have
    feature -1, left -1)."""
    f, g, c, lft, rgt = (np.array(v) for v in zip(*nodes))
    return DepthwiseTree(feature=f.astype(np.int32), bin=np.zeros(f.size, np.int32),
                         nan_right=np.zeros(f.size, np.uint8), left=lft.astype(np.int32),
                         right=rgt.astype(np.int32), gain=g.astype(float),
                         value=np.zeros(f.size), cover=c.astype(float))


def test_definitions_on_hand_built_trees():
    a = _node_tree([(0, 4.0, 100, 1, 2), (2, 1.0, 60, 3, 4), (-1, 0, 40, -1, -1),
                    (-1, 0, 30, -1, -1), (-1, 0, 30, -1, -1)])
    b = _node_tree([(2, 3.0, 100, 1, 2), (-1, 0, 70, -1, -1), (-1, 0, 30, -1, -1)])
    sym = ObliviousTree(feature=np.array([1, 2], np.int32), bin=np.zeros(2, np.int32),
                        nan_right=np.zeros(2, np.uint8), gain=np.array([2.0, 0.5]),
                        value=np.zeros(4), cover=np.array([10.0, 20, 30, 40]))
    trees = [a, b, sym]
    np.testing.assert_array_equal(feature_importance(trees, 4, "split"), [1, 1, 3, 0])
    np.testing.assert_array_equal(feature_importance(trees, 4, "total_gain"),
                                  [4.0, 2.0, 4.5, 0])
    np.testing.assert_allclose(feature_importance(trees, 4, "gain"),
                               np.array([4.0, 2.0, 4.5, 0]) / 10.5)
    # cover: mean rows reaching the splits; every row of a symmetric tree reaches a level
    np.testing.assert_allclose(feature_importance(trees, 4, "cover"),
                               [100, 100, (60 + 100 + 100) / 3, 0])
    with pytest.raises(ValueError, match=r"importance_type='weight' is invalid; expected "
                                         r"one of 'gain', 'split', 'total_gain', 'cover'"):
        feature_importance(trees, 4, "weight")


def _lightgbm_trees(booster):
    """boostlib trees with the node arrays of a LightGBM booster's trees."""
    trees = []
    for info in booster.dump_model()["tree_info"]:
        nodes = []

        def visit(node):
            k = len(nodes)
            nodes.append(None)
            if "split_index" not in node:
                nodes[k] = (-1, 0.0, node["leaf_count"], -1, -1)
                return k
            left, right = visit(node["left_child"]), visit(node["right_child"])
            nodes[k] = (node["split_feature"], node["split_gain"], node["internal_count"],
                        left, right)
            return k

        visit(info["tree_structure"])
        trees.append(_node_tree(nodes))
    return trees


def test_split_and_gain_equal_lightgbms_on_the_same_trees():
    lgb = importorskip("lightgbm")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 6))
    y = X[:, 0] + 2 * X[:, 1] * X[:, 2] + rng.normal(size=2000) * 0.3
    booster = lgb.train({"objective": "regression", "num_leaves": 15, "verbose": -1},
                        lgb.Dataset(X, y), num_boost_round=20)
    trees = _lightgbm_trees(booster)
    np.testing.assert_array_equal(feature_importance(trees, 6, "split"),
                                  booster.feature_importance("split"))
    np.testing.assert_allclose(feature_importance(trees, 6, "total_gain"),
                               booster.feature_importance("gain"), rtol=1e-6)


@pytest.mark.parametrize("policy", ["symmetric", "depthwise", "lossguide"])
def test_estimators_choose_the_importance_type(policy):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(800, 4))
    y = rng.integers(0, 3, 800)
    y[X[:, 0] > 0.5] = 2
    est = BoostClassifier(n_estimators=6, grow_policy=policy, random_state=0).fit(X, y)
    model = est.model_
    assert est.feature_importances_.sum() == pytest.approx(1.0)
    trees = model.ensemble.scalar_trees()
    n_splits = sum(int(np.count_nonzero(
        (t.left >= 0) if hasattr(t, "left") else (t.feature >= 0))) for t in trees)
    est.set_params(importance_type="split")
    assert est.feature_importances_.sum() == n_splits        # every class's trees count
    est.set_params(importance_type="total_gain")
    np.testing.assert_allclose(est.feature_importances_ / est.feature_importances_.sum(),
                               model.feature_importance("gain"))
    est.set_params(importance_type="cover")
    assert np.all(est.feature_importances_ <= 800) and est.feature_importances_.max() > 0
    est.set_params(importance_type="bad")
    with pytest.raises(ValueError, match="importance_type='bad' is invalid"):
        est.feature_importances_
    with pytest.raises(ValueError, match="importance_type='bad' is invalid"):
        est.fit(X, y)


def test_plot_importance_takes_the_estimators_type():
    importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    from boostlib.plotting import plot_importance
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 3))
    est = BoostRegressor(n_estimators=5, importance_type="split").fit(X, X[:, 0])
    ax = plot_importance(est)
    widths = sorted(p.get_width() for p in ax.patches)
    assert widths == sorted(est.feature_importances_[est.feature_importances_ > 0])
    ax = plot_importance(est, importance_type="gain")
    assert sum(p.get_width() for p in ax.patches) == pytest.approx(1.0)
