"""TreeGrower against a brute-force NumPy grower (tests/reference/kernels.py), for both grow
policies: partition, leaf values, subtraction trick, determinism, constraints, split noise."""
import math

import numpy as np
import pytest
from hypothesis import event, given, strategies as st
from hypothesis.extra import numpy as hnp

from boostlib.engine.binning import BinMapper
from boostlib.engine.ensemble import Ensemble
from boostlib.engine.grower import GrowParams, TreeGrower
from reference import kernels as ref
from reference.strategies import SLOW_SETTINGS, binned_data, gradients, make_binned

POLICIES = ["symmetric", "depthwise"]


def grow(data, rows, g, h, policy, depth, l2, msl, mcw, n_threads=1, **kw):
    params = GrowParams(max_depth=depth, l2_regularization=l2, min_samples_leaf=msl,
                        min_child_weight=mcw)
    grower = TreeGrower(data.X_binned, data.nbnm, data.missing_bin, policy,
                        params, n_threads=n_threads)
    return grower.grow(np.asarray(rows, np.int32), np.asarray(g, np.float64),
                       np.asarray(h, np.float64), **kw)


def leaf_of_rows(tree, Xb, missing_bin):
    """Leaf (oblivious: index, depthwise: node id) of every column of ``Xb`` by traversal."""
    out = np.empty(Xb.shape[1], dtype=np.int64)
    for p in range(Xb.shape[1]):
        if tree.policy == "symmetric":
            out[p] = ref.oblivious_leaf_binned(Xb[:, p], tree.feature, tree.bin,
                                               tree.nan_right, missing_bin)
        else:
            out[p] = ref.depthwise_leaf_binned(Xb[:, p], tree.feature, tree.bin,
                                               tree.nan_right, tree.left, tree.right,
                                               missing_bin)
    return out


def kernel_node_at(tree, path):
    """Depthwise node id at ``path`` ("", "L", "RL", ...), or None past a leaf."""
    k = 0
    for c in path:
        if tree.left[k] < 0:
            return None
        k = int(tree.left[k] if c == "L" else tree.right[k])
    return k


def majority_oracle(get_kernel_side, errors):
    """Side of a missing value unseen in training: the grower's own choice, which must be
    a majority side (right when strictly more rows -- or hessian, which may stand in for
    the count -- go right), or, when the only missing rows have g == h == 0, the
    tie-breaking choice of the brute force."""
    def side(where, stats):
        d = get_kernel_side(where)
        if d is None:
            return 0
        allowed = {int(stats["n_right"] > stats["n_left"]),
                   int(stats["h_right"] > stats["h_left"])}
        if stats["any_missing"]:
            allowed.add(stats["tie_d"])
        if d not in allowed:
            errors.append(f"unseen missing side at {where!r} is {d}, not a majority side "
                          f"({stats})")
        return d
    return side


def f32(a):
    return np.asarray(a, np.float32).astype(np.float64)


def reference_tree(policy, tree, Xb, g, h, nbnm, missing_bin, depth, l2, msl, mcw,
                   leaf_g=None):
    """The brute-force tree, with unseen missing sides taken from the grower's tree."""
    errors = []
    if policy == "symmetric":
        side = majority_oracle(lambda lvl: int(tree.nan_right[lvl]) if lvl < tree.depth
                               else None, errors)
        r = ref.grow_symmetric(Xb, f32(g), f32(h), nbnm, missing_bin, depth, l2, msl, mcw,
                               leaf_g=leaf_g, unseen_side=side)
    else:
        def kside(path):
            k = kernel_node_at(tree, path)
            return None if k is None or tree.left[k] < 0 else int(tree.nan_right[k])
        r = ref.grow_depthwise(Xb, f32(g), f32(h), nbnm, missing_bin, depth, l2, msl, mcw,
                               leaf_g=leaf_g, unseen_side=majority_oracle(kside, errors))
    return r, errors


def compare_symmetric(tree, node, r, exact, rel=1e-9):
    """Errors between the grower's oblivious tree and the reference (levels after a
    near-tie are not compared unless ``exact``)."""
    errs = []
    n = min(tree.depth, len(r["feature"]))
    for lvl in range(max(tree.depth, len(r["feature"]))):
        if lvl < len(r["margins"]) and not exact and r["margins"][lvl] <= rel * r["scales"][lvl]:
            return errs       # a near-tie: the rest may legitimately differ
        if lvl >= n:
            errs.append(f"depth {tree.depth} vs reference {len(r['feature'])}")
            return errs
        got = (int(tree.feature[lvl]), int(tree.bin[lvl]), int(tree.nan_right[lvl]))
        exp = (r["feature"][lvl], r["bin"][lvl], r["nan_right"][lvl])
        if got != exp:
            errs.append(f"level {lvl}: grower {got}, reference {exp} "
                        f"(margin {r['margins'][lvl]:.3g})")
            return errs
        if not math.isclose(tree.gain[lvl], r["gain"][lvl], rel_tol=1e-9,
                            abs_tol=1e-9 * r["scales"][lvl]):
            errs.append(f"level {lvl}: gain {tree.gain[lvl]!r} vs {r['gain'][lvl]!r}")
    if not np.array_equal(node, r["leaf_of_row"]):
        errs.append(f"node_of_row {node.tolist()} vs reference {r['leaf_of_row'].tolist()}")
    return errs


def compare_depthwise(tree, r, exact, k=0, path="", rel=1e-9, scale_above=0.0):
    """Errors between the grower's depthwise tree and the reference. A node whose
    histogram came by subtraction (parent minus sibling) carries rounding errors of its
    ancestors' magnitude, so near-ties and gains are judged on the largest scale on the
    path (a node whose true gradients are 1e-34 under a parent holding a gradient of 3 has
    gains that are rounding noise)."""
    noise = rel * scale_above              # gains this small may be rounding alone
    if tree.left[k] < 0:
        return [] if "feature" not in r or r["gain"] <= noise else [
            f"{path or 'root'}: grower leaf, reference split {r['feature'], r['bin']}"]
    if "feature" not in r:
        return [] if tree.gain[k] <= noise else [
            f"{path or 'root'}: grower split, reference leaf"]
    scale = max(r["scale"], scale_above)
    if not exact and (r["margin"] <= rel * scale or r["gain"] <= noise):
        return []
    got = (int(tree.feature[k]), int(tree.bin[k]), int(tree.nan_right[k]))
    exp = (r["feature"], r["bin"], r["nan_right"])
    if got != exp:
        return [f"{path or 'root'}: grower {got}, reference {exp} (margin {r['margin']:.3g})"]
    if not math.isclose(tree.gain[k], r["gain"], rel_tol=1e-9, abs_tol=1e-9 * scale):
        return [f"{path or 'root'}: gain {tree.gain[k]!r} vs {r['gain']!r}"]
    return (compare_depthwise(tree, r["left"], exact, int(tree.left[k]), path + "L", rel, scale)
            + compare_depthwise(tree, r["right"], exact, int(tree.right[k]), path + "R", rel,
                                scale))


def check_values_and_constraints(tree, node, g_leaf, h, l2, msl, mcw, groups=None):
    """(b) and (e): leaf values are -G/(H+l2) over the rows of each leaf (or of each group
    of leaves for oblivious trees: ``groups[leaf]`` = group id), every child of a split
    holds at least ``min_samples_leaf`` rows and ``min_child_weight`` hessian."""
    errs = []
    if tree.policy == "depthwise":
        n_nodes = tree.value.size
        subtree_rows = [[] for _ in range(n_nodes)]
        # rows of every node = rows of the leaves below it
        parent = {int(c): k for k in range(n_nodes) for c in (tree.left[k], tree.right[k])
                  if c >= 0}
        for p, k in enumerate(node):
            k = int(k)
            if tree.left[k] >= 0:
                errs.append(f"row {p} sits in inner node {k}")
                continue
            while True:
                subtree_rows[k].append(p)
                if k not in parent:
                    break
                k = parent[k]
        for k in range(n_nodes):
            m = np.array(subtree_rows[k], dtype=np.int64)
            if tree.left[k] < 0 and m.size:
                G, H = math.fsum(g_leaf[m]), math.fsum(h[m])
                v = -G / (H + l2) if H + l2 > 0 else 0.0
                if not math.isclose(tree.value[k], v, rel_tol=1e-12, abs_tol=1e-12):
                    errs.append(f"leaf {k}: value {tree.value[k]!r}, expected {v!r}")
            if k != 0 and tree.left[parent[k]] >= 0:       # a child of a split
                if m.size < msl or math.fsum(f32(h)[m]) < mcw:
                    errs.append(f"node {k}: {m.size} rows, hessian {math.fsum(h[m])} "
                                f"(min_samples_leaf {msl}, min_child_weight {mcw})")
    else:
        depth = tree.depth
        groups = np.arange(1 << depth) if groups is None else np.asarray(groups)
        for gid in np.unique(groups):
            leaves = np.flatnonzero(groups == gid)
            m = np.isin(node, leaves)
            G, H = math.fsum(g_leaf[m]), math.fsum(h[m])
            v = -G / (H + l2) if H + l2 > 0 else 0.0
            for k in leaves:
                if m.any() and not math.isclose(tree.value[k], v, rel_tol=1e-12,
                                                abs_tol=1e-12):
                    errs.append(f"leaf {k} (group {leaves.tolist()}): value "
                                f"{tree.value[k]!r}, expected {v!r}")
            if m.any() and leaves.size < (1 << depth):          # not the root itself
                if m.sum() < msl or math.fsum(f32(h)[m]) < mcw:
                    errs.append(f"group {leaves.tolist()}: {m.sum()} rows, hessian "
                                f"{math.fsum(h[m])} (min_samples_leaf {msl}, "
                                f"min_child_weight {mcw})")
    return errs


@st.composite
def grow_case(draw, max_depth=4, exact=None, max_rows=40):
    data = draw(binned_data(max_rows=max_rows, max_features=3,
                            max_bins=[2, 3, 4, 7, 16, 255], max_nb=16))
    subset = draw(st.sampled_from(["all", "all", "hypothesis", "random"]))
    if subset == "all":
        rows = np.arange(data.n_rows, dtype=np.int32)
    else:
        if subset == "hypothesis":
            keep = draw(hnp.arrays(np.bool_, data.n_rows))
        else:
            keep = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).random(
                data.n_rows) < 0.7
        rows = np.flatnonzero(keep).astype(np.int32)   # sorted, unique, like a sampler's
        if rows.size == 0:
            rows = np.array([0], np.int32)
    exact = draw(st.booleans()) if exact is None else exact
    g, h = draw(gradients(rows.size, exact=exact))
    depth = 0 if draw(st.integers(0, 9)) == 0 else draw(st.integers(1, max_depth))
    l2 = draw(st.sampled_from([0.0, 0.5, 1.0, 10.0]))
    msl = draw(st.sampled_from([1, 1, 2, 3]))
    mcw = draw(st.sampled_from([0.0, 1e-3, 0.5, 2.0]))
    if l2 == 0.0 and mcw == 0.0:
        mcw = 1e-3
    leaf_g = None
    if draw(st.integers(0, 4)) == 0:      # SGLB: leaf values from another gradient
        leaf_g = draw(gradients(rows.size, exact=exact, weighted=False))[0]
    return data, rows, g, h, exact, depth, (l2, msl, mcw), leaf_g


def run_against_reference(policy, case, n_threads=1):
    data, rows, g, h, exact, depth, (l2, msl, mcw), leaf_g = case
    kw = {} if leaf_g is None else {"leaf_gradient": leaf_g}
    tree, node = grow(data, rows, g, h, policy, depth, l2, msl, mcw, n_threads, **kw)
    Xb = np.ascontiguousarray(data.X_binned[:, rows])
    g_leaf = g if leaf_g is None else leaf_g
    errs = []
    # (a) node_of_row is the traversal of the returned tree
    trav = leaf_of_rows(tree, Xb, data.missing_bin)
    if not np.array_equal(trav, node):
        errs.append(f"node_of_row {node.tolist()} != traversal {trav.tolist()}")
    # (c) against the brute-force grower (every histogram from the rows)
    r, oracle_errs = reference_tree(policy, tree, Xb, g, h, data.nbnm, data.missing_bin,
                                    depth, l2, msl, mcw, leaf_g=g_leaf)
    errs += oracle_errs
    if policy == "symmetric":
        struct = compare_symmetric(tree, node, r, exact)
        errs += struct
        # After a near-tie (non-exact gradients) the two trees may legitimately differ from
        # that level on; the reference's leaf groups apply only to the very same structure.
        same = (not struct and len(r["feature"]) == tree.depth
                and [tuple(map(int, x)) for x in zip(tree.feature, tree.bin, tree.nan_right)]
                == list(zip(r["feature"], r["bin"], r["nan_right"])))
        groups = r["group"] if same else None
        if not struct and exact:
            if not np.allclose(tree.value, r["value"], rtol=1e-12, atol=1e-12):
                errs.append(f"values {tree.value.tolist()} vs reference {r['value'].tolist()}")
    else:
        errs += compare_depthwise(tree, r, exact)
        groups = None
    # (b) + (e) leaf values and constraints, on the grower's own partition
    if policy == "depthwise" or groups is not None:
        errs += check_values_and_constraints(tree, node, g_leaf, h, l2, msl, mcw, groups)
    return tree, node, errs


@pytest.mark.parametrize("policy", POLICIES)
@SLOW_SETTINGS
@given(case=grow_case())
def test_grower_matches_brute_force(policy, case):
    tree, node, errs = run_against_reference(policy, case)
    event(f"splits: {min(tree.n_leaves() - 1, 3)}+, rows>=10: {case[1].size >= 10}")
    assert not errs, "\n".join(errs)


@pytest.mark.parametrize("policy", POLICIES)
@SLOW_SETTINGS
@given(case=grow_case(max_depth=2, exact=True), depth=st.sampled_from([1, 2]))
def test_subtraction_trick_exact_at_depth_1_and_2(policy, case, depth):
    """Dyadic gradients: every histogram sum is exact, so the trees grown with sibling
    histograms by subtraction must equal the brute force exactly (ties included)."""
    data, rows, g, h, exact, _, params, leaf_g = case
    tree, node, errs = run_against_reference(policy, (data, rows, g, h, True, depth, params,
                                                      leaf_g))
    assert not errs, "\n".join(errs)


@pytest.mark.parametrize("policy", POLICIES)
@SLOW_SETTINGS
@given(case=grow_case(max_depth=5))
def test_grower_is_deterministic_across_threads(policy, case):
    data, rows, g, h, exact, depth, (l2, msl, mcw), leaf_g = case
    t1, n1 = grow(data, rows, g, h, policy, depth, l2, msl, mcw, n_threads=1)
    t2, n2 = grow(data, rows, g, h, policy, depth, l2, msl, mcw, n_threads=2)
    np.testing.assert_array_equal(n1, n2)
    for name in t1.__dataclass_fields__:
        a, b = getattr(t1, name), getattr(t2, name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b), name   # bit-identical
        else:
            assert a == b


# --------------------------------------------------------------------------------------------
# explicit edge cases
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("weighted", [False, True])
def test_row_weights_gather_the_sample_in_the_grower(policy, weighted):
    # grow(rows, g, h, row_weights=w) with full-length derivatives (the fused gather of
    # sampled fits) grows the tree grow(rows, g[rows] * w, h[rows] * w) grows, bit for bit,
    # also when a second tree reuses the work arrays with another sample size.
    rng = np.random.default_rng(5)
    n = 3000
    data = make_binned(rng.integers(0, 16, size=(n, 4)).astype(np.uint8), [16] * 4, 16)
    params = GrowParams(max_depth=4, l2_regularization=1.0, min_samples_leaf=1,
                        min_child_weight=1e-3)
    grower = TreeGrower(data.X_binned, data.nbnm, data.missing_bin, policy,
                        params, n_threads=2)
    for frac in (0.5, 0.7, 0.2):
        g, h = rng.normal(size=n), rng.uniform(0.1, 1.0, n)
        rows = np.flatnonzero(rng.random(n) < frac).astype(np.int32)
        w = rng.uniform(0.5, 3.0, rows.size) if weighted else np.empty(0)
        scale = w if weighted else 1.0
        t0, n0 = grower.grow(rows, g[rows] * scale, h[rows] * scale)
        t1, n1 = grower.grow(rows, g, h, row_weights=w)
        np.testing.assert_array_equal(n0, n1)
        for a in ("feature", "bin", "nan_right", "value"):
            assert getattr(t0, a).tobytes() == getattr(t1, a).tobytes()
    with pytest.raises(ValueError, match="one value per training row"):
        grower.grow(rows, g[rows], h[rows], row_weights=np.empty(0))
    with pytest.raises(ValueError, match="strict subset"):
        grower.grow(np.arange(n, dtype=np.int32), g, h, row_weights=np.empty(0))


@pytest.mark.parametrize("policy", POLICIES)
def test_one_row(policy):
    data = make_binned(np.array([[1, 2]], np.uint8), [2, 2], 2)
    tree, node = grow(data, [0], [3.0], [2.0], policy, 3, 1.0, 1, 0.0)
    assert tree.n_leaves() == 1 and node.tolist() == [0]
    assert tree.value[0] == pytest.approx(-1.0)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("max_bins", [2, 3, 255])
def test_constant_features_and_zero_gradients_give_no_split(policy, max_bins):
    X = np.zeros((6, 2), np.uint8)
    data = make_binned(X, [1, 1], max_bins)          # constant features
    tree, node = grow(data, np.arange(6), np.arange(6.0) - 2, np.ones(6), policy, 3, 1.0, 1,
                      1e-3)
    assert tree.n_leaves() == 1 and np.all(node == 0)
    assert tree.value[0] == pytest.approx(-(15.0 - 12.0) / 7.0)
    X = np.array([[0, 1], [1, 0], [2, 2], [0, max_bins]], np.uint8)
    data = make_binned(X, [min(3, max_bins)] * 2, max_bins)   # (bin 2 is missing at 2 bins)
    tree, node = grow(data, np.arange(4), np.zeros(4), np.ones(4), policy, 3, 1.0, 1, 1e-3)
    assert tree.n_leaves() == 1 and np.all(tree.value == 0)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("msl,mcw", [(1, 1e-3), (2, 0.0), (1, 0.0)])
def test_missing_values_are_a_split_of_their_own(policy, msl, mcw):
    """One constant feature with NaNs: the only split is non-missing left / NaN right."""
    X = np.array([[0], [3], [0], [3], [0], [3]], np.uint8)
    data = make_binned(X, [1], 3)
    g = np.array([1.0, -1.0, 2.0, -2.0, 1.0, -1.0])
    tree, node = grow(data, np.arange(6), g, np.ones(6), policy, 2, 0.0 if mcw else 1.0,
                      msl, mcw)
    if policy == "symmetric":
        assert (tree.feature.tolist(), tree.bin.tolist(), tree.nan_right.tolist()) == (
            [0], [0], [1])
        np.testing.assert_array_equal(node, [0, 1, 0, 1, 0, 1])
    else:
        assert (tree.feature[0], tree.bin[0], tree.nan_right[0]) == (0, 0, 1)
        assert np.all(node[[1, 3, 5]] == tree.right[0])


@pytest.mark.parametrize("policy", POLICIES)
def test_min_samples_leaf_and_min_child_weight_are_respected(policy):
    rng = np.random.default_rng(5)
    X = rng.integers(0, 16, size=(300, 3)).astype(np.uint8)
    X[rng.random(X.shape) < 0.1] = 16
    data = make_binned(X, [16, 16, 16], 16)
    g = rng.normal(size=300)
    h = rng.uniform(0.05, 1.0, size=300)
    for msl, mcw in [(40, 0.0), (1, 25.0), (10, 5.0)]:
        tree, node = grow(data, np.arange(300), g, h, policy, 5, 1.0, msl, mcw)
        assert tree.n_leaves() > 1
        r, _ = reference_tree(policy, tree, data.X_binned, g, h, data.nbnm, 16, 5, 1.0, msl,
                              mcw)
        groups = r["group"] if policy == "symmetric" else None
        errs = check_values_and_constraints(tree, node, g, h, 1.0, msl, mcw, groups)
        assert not errs, "\n".join(errs)


@pytest.mark.parametrize("policy", POLICIES)
def test_symmetric_unsplit_leaves_share_their_value(policy):
    """Level 1 can't split the small leaf (min_samples_leaf): its two children stay one node
    and share the value of their union, and the reference agrees on the whole tree."""
    # feature 0 separates 2 rows from 8; feature 1 splits the 8 evenly
    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1], [1, 0], [1, 1], [1, 0], [1, 1], [1, 0],
                  [1, 1]], np.uint8)
    data = make_binned(X, [2, 2], 2)
    g = np.array([-8.0, -8.0, 4.0, -2.0, 4.0, -2.0, 4.0, -2.0, 4.0, -2.0])
    case = (data, np.arange(10, dtype=np.int32), g, np.ones(10), True, 2, (1.0, 2, 0.0), None)
    tree, node, errs = run_against_reference(policy, case)
    assert not errs, "\n".join(errs)
    if policy == "symmetric":
        assert tree.feature.tolist() == [0, 1]
        # leaves 0 and 2 (feature 0 left) form one group: -(-16)/(2+1)
        assert tree.value[0] == tree.value[2] == pytest.approx(16.0 / 3.0)
        assert tree.value[1] == pytest.approx(-16.0 / 5.0)
        assert tree.value[3] == pytest.approx(8.0 / 5.0)


def test_symmetric_leaf_not_split_at_a_level_is_split_at_the_next():
    """A leaf where a level's split leaves a child empty is carried down whole and split by
    the next level (CatBoost's oblivious trees grow it on; the rule before froze it).

    x in {0, 1, 2}, z in {0, 1}; targets t = -g (h = 1, l2 = 0, so a value is a mean):
    x=0: t = 5 (z=0), 3 (z=1); x=1: t = 0; x=2: t = -3; two rows per (x, z).
    Level 0: x > 0 (gain 64 + 18 - 16/12 against 32 + 36 - 16/12 for x > 1). Level 1:
    x > 1 gains 0 + 36 - 18 = 18 in the leaf x >= 1 and has an empty child in the leaf x = 0;
    z gains 4 (x = 0) + 0. Level 2: only z gains, 4, in the carried leaf x = 0, which the
    frozen rule did not search (its tree stopped at depth 2, x = 0 one value, 4).
    """
    x = np.repeat([0, 1, 2], 4)
    z = np.tile([0, 0, 1, 1], 3)
    t = np.array([5.0, 5, 3, 3, 0, 0, 0, 0, -3, -3, -3, -3])
    data = make_binned(np.column_stack([x, z]).astype(np.uint8), [3, 2], 3)
    tree, node = grow(data, np.arange(12), -t, np.ones(12), "symmetric", 3, 0.0, 1, 1e-3)
    assert (tree.feature.tolist(), tree.bin.tolist()) == ([0, 0, 1], [0, 1, 0])
    np.testing.assert_allclose(tree.gain, [64 + 18 - 16 / 12, 18, 4])
    # leaf = (x > 0) + 2 (x > 1) + 4 (z > 0); leaves 2 and 6 (x = 0 but x > 1) are empty
    # and share the values of 0 and 4, the leaves of the node they were carried with
    np.testing.assert_array_equal(node, [0, 0, 4, 4, 1, 1, 5, 5, 3, 3, 7, 7])
    np.testing.assert_allclose(tree.value, [5, 0, 5, -3, 3, 0, 3, -3])
    r, errs = reference_tree("symmetric", tree, data.X_binned, -t, np.ones(12), data.nbnm,
                             3, 3, 0.0, 1, 1e-3)
    assert not errs and r["group"].tolist() == [0, 1, 0, 3, 4, 5, 4, 7]
    np.testing.assert_allclose(r["value"], tree.value)


@pytest.mark.parametrize("policy", POLICIES)
def test_missing_rows_with_zero_hessian_follow_the_evaluated_split(policy):
    """A missing row with a zero hessian (saturated logloss: h rounds to 0, g = +-1) is
    still a row: the best split sends it left with row 0 (gain 18 + 4/3 - 4; sending it
    right gains -1/2), so
    it must end up there, and the leaf values must be those of that partition."""
    X = np.array([[0], [1], [1], [2]], np.uint8)          # row 3 is missing
    data = make_binned(X, [2], 2)
    g = np.array([-1.0, 1.0, 1.0, -5.0])
    h = np.array([1.0, 1.0, 1.0, 0.0])
    tree, node = grow(data, np.arange(4), g, h, policy, 1, 1.0, 1, 1e-3)
    left = tree.left[0] if policy == "depthwise" else 0
    right = tree.right[0] if policy == "depthwise" else 1
    assert node.tolist() == [left, right, right, left]
    assert tree.nan_right[0] == 0
    assert tree.value[left] == pytest.approx(3.0) and tree.value[right] == pytest.approx(-2 / 3)


@pytest.mark.parametrize("policy", POLICIES)
def test_split_noise(policy):
    """(f) Large score noise changes the structure across seeds; a seed reproduces it."""
    rng = np.random.default_rng(1)
    X = rng.integers(0, 8, size=(200, 4)).astype(np.uint8)
    data = make_binned(X, [8] * 4, 8)
    g = rng.normal(size=200) + 0.3 * X[:, 0]
    h = np.ones(200)
    rows = np.arange(200)

    def structure(seed, std=1e4):
        tree, node = grow(data, rows, g, h, policy, 3, 1.0, 1, 1e-3, split_noise_std=std,
                          split_rng=np.random.default_rng(seed))
        return tree, node, (tree.feature.tobytes(), tree.bin.tobytes(), tree.nan_right.tobytes())

    base, _ = grow(data, rows, g, h, policy, 3, 1.0, 1, 1e-3)
    structures = {structure(seed)[2] for seed in range(8)}
    assert len(structures) >= 3
    for seed in (0, 3):
        t1, n1, s1 = structure(seed)
        t2, n2, s2 = structure(seed)
        assert s1 == s2 and np.array_equal(n1, n2) and np.array_equal(t1.value, t2.value)
        # noise changes the ranking only: leaf values and partition stay consistent
        assert np.array_equal(leaf_of_rows(t1, data.X_binned, 8), n1)
        if policy == "depthwise":
            errs = check_values_and_constraints(t1, n1, g, h, 1.0, 1, 1e-3)
            assert not errs, "\n".join(errs)
    # tiny noise only breaks ties: same tree as without noise here
    t0, _, _ = structure(0, std=1e-12)
    np.testing.assert_array_equal(t0.feature, base.feature)
    with pytest.raises(ValueError):
        grow(data, rows, g, h, policy, 3, 1.0, 1, 1e-3, split_noise_std=1.0)


@pytest.mark.parametrize("policy", POLICIES)
def test_trained_ensemble_predicts_like_raw_traversal(policy):
    """End to end on raw floats: bin, grow a few trees, Ensemble.predict_raw == traversal
    with raw thresholds; on the training rows it equals the leaf values the grower
    assigned."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(150, 3))
    X[rng.random(X.shape) < 0.1] = np.nan
    X[:, 2] = np.round(X[:, 2])                      # few distinct values
    y = np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) ** 2 + rng.normal(0, 0.1, 150)
    bm = BinMapper(max_bins=7).fit(X)
    Xr = bm.transform(X, layout="row")
    Xf = np.ascontiguousarray(Xr.T)
    grower = TreeGrower(Xf, bm.n_bins_nonmissing_, bm.missing_bin, policy,
                        GrowParams(max_depth=3, l2_regularization=1.0))
    ens = Ensemble(bm, policy, bias=float(y.mean()))
    raw = np.full(150, y.mean())
    rows = np.arange(150, dtype=np.int32)
    for _ in range(4):
        tree, node = grower.grow(rows, raw - y, np.ones(150))
        ens.add(tree, 0.5)
        raw = raw + 0.5 * tree.value[node]
    X_new = np.vstack([X, rng.normal(size=(40, 3)) * 3])
    X_new[-5:] = np.nan
    expected = ref.predict_trees_raw(X_new, ens.trees, ens.coef, bm.threshold, ens.bias)
    np.testing.assert_allclose(ens.predict_raw(X_new), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ens.predict_raw(X), raw, rtol=1e-12, atol=1e-12)
