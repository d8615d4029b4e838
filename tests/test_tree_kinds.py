"""Every tree kind behind the one interface: its explicit binary tree (what plots draw) and
its model-file form agree with the kind's own prediction."""
import numpy as np
import pytest

from boostlib import Dataset, train
from boostlib.engine.linear_leaves import LINEAR_FIELDS
from boostlib.engine.trees import GROW_POLICIES, KINDS, kind_of
from reference.strategies import random_tree


def _walk(a, x_binned, missing_bin):
    """The leaf value of one binned row, following the explicit binary tree."""
    k = 0
    while a["left"][k] >= 0:
        b = x_binned[a["feature"][k]]
        right = a["nan_right"][k] if b == missing_bin else b > a["bin"][k]
        k = a["right"][k] if right else a["left"][k]
    return a["value"][k]


@pytest.mark.parametrize("policy", GROW_POLICIES)
def test_node_arrays_walk_to_the_leaf_the_kind_predicts(policy):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) > 0).astype(float)
    model = train(dict(n_estimators=3, max_depth=4, grow_policy=policy, random_state=0),
                  Dataset(X, y))
    ens = model.ensemble
    kind = kind_of(policy)
    Xb = ens.bin_mapper.transform(X)
    for tree in ens.trees:
        expected = np.zeros(X.shape[0])
        ens.add_scalar_trees_binned(Xb, expected, [tree], np.ones(1))
        a = kind.node_arrays(tree)
        walked = [_walk(a, Xb[:, i], ens.bin_mapper.missing_bin) for i in range(X.shape[0])]
        np.testing.assert_array_equal(walked, expected)
        # every field but the linear parts, which trees without linear leaves lack
        assert kind.to_document(tree).keys() == set(kind.fields) - set(LINEAR_FIELDS)


def test_unknown_grow_policy_is_named_in_the_error():
    with pytest.raises(ValueError, match=r"grow_policy='leafwise' is invalid; expected one of "
                                         r"\['symmetric', 'depthwise', 'lossguide'\]"):
        kind_of("leafwise")
    assert set(KINDS) == set(GROW_POLICIES)


@pytest.mark.parametrize("shuffle", [False, True])
def test_subtree_sums_are_the_sums_over_each_nodes_leaves(shuffle):
    from boostlib.engine.trees.base import level_nodes, subtree_sums
    rng = np.random.default_rng(3)
    for n_splits in (0, 1, 5, 40):
        left, right = random_tree(rng, n_splits, shuffle)
        values = rng.normal(size=left.size)

        def brute(k):
            return values[k] if left[k] < 0 else brute(left[k]) + brute(right[k])

        expected = np.array([brute(k) for k in range(left.size)])
        fast = subtree_sums(left, right, values)
        by_level = subtree_sums(left, right, values, level_nodes(left, right))
        np.testing.assert_array_equal(fast, expected)
        np.testing.assert_array_equal(by_level, expected)
