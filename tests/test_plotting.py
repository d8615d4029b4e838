"""boostlib.plotting: each plot is rendered to a PNG with the Agg backend and its content checked.

The rendering tests skip when matplotlib is not installed; the error raised then is tested
without it.
"""
import subprocess
import sys

import numpy as np
import pytest

from optional_imports import importorskip

from boostlib import BoostClassifier, BoostRegressor, available
from boostlib.plotting import plot_importance, plot_learning_curves, plot_tree


@pytest.fixture
def plt():
    """matplotlib.pyplot on the Agg backend; figures are closed after the test."""
    mpl = importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as pyplot

    yield pyplot
    pyplot.close("all")


def _render(ax, path):
    """Save the figure of ``ax`` as a PNG and check that it is a non-blank image."""
    from matplotlib.image import imread

    ax.figure.savefig(path, dpi=60)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = imread(path)
    assert pixels.shape[0] > 50 and pixels.shape[1] > 50
    assert pixels[..., :3].std() > 0.01          # something was drawn
    return pixels


@pytest.fixture(scope="module")
def higgs_small():
    from boostlib.datasets import load_higgs

    X, y = load_higgs("train")
    Xt, yt = load_higgs("test")
    return X[:2000], y[:2000], Xt, yt


def _texts(ax, gid):
    return [t.get_text() for t in ax.texts if t.get_gid() == gid]


# -- learning curves ---------------------------------------------------------------------------
def _curves(ax):
    """The learning-curve lines of a panel (not the best-iteration marks)."""
    return [line for line in ax.get_lines() if line.get_gid() != "best_iteration"]


def _best_lines(ax):
    return [line for line in ax.get_lines() if line.get_gid() == "best_iteration"]


def test_learning_curves_of_update_rules_on_one_axes(plt, higgs_small, tmp_path):
    X, y, Xt, yt = higgs_small
    rules = [u for u in ("sgb", "sglb", "agbm") if u in available("update")]
    models = [BoostClassifier(n_estimators=15, max_depth=3, update=u, random_state=0)
              .fit(X, y, eval_set=[(Xt, yt)]) for u in rules]
    axes = plot_learning_curves(models, title="update rules", best_iteration=False)
    assert isinstance(axes, np.ndarray) and axes.shape == (1,)
    ax = axes[0]
    _render(ax, tmp_path / "curves.png")

    lines = ax.get_lines()
    assert len(lines) == 2 * len(rules)         # train + valid_0 per model
    labels = [line.get_label() for line in lines]
    assert labels == [f"{u}: {d}" for u in rules for d in ("train", "valid_0")]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == labels
    for line, (model, d) in zip(lines, [(m, d) for m in models for d in ("train", "valid_0")]):
        curve = model.evals_result_[d]["logloss"]
        np.testing.assert_array_equal(line.get_xdata(), np.arange(1, len(curve) + 1))
        np.testing.assert_array_equal(line.get_ydata(), curve)
        # train dashed, validation solid; one colour per model
        assert line.get_linestyle() == ("--" if d == "train" else "-")
    colors = [lines[2 * i].get_color() for i in range(len(rules))]
    assert len(set(colors)) == len(rules)
    assert all(lines[2 * i + 1].get_color() == colors[i] for i in range(len(rules)))
    assert ax.get_ylabel() == "logloss" and ax.get_xlabel() == "iterations"
    assert ax.get_title() == "logloss" and ax.figure.get_suptitle() == "update rules"


def test_learning_curves_from_dicts_labels_and_dataset_selection(plt, higgs_small, tmp_path):
    X, y, Xt, yt = higgs_small
    fits = {lr: BoostClassifier(n_estimators=10 + i, max_depth=2, learning_rate=lr,
                                random_state=0).fit(X, y, eval_set=[(Xt, yt), (X[:300], y[:300])])
            for i, lr in enumerate((0.05, 0.3))}
    # a mapping label -> evals_result_ dict: no best iteration to mark
    (ax,) = plot_learning_curves({f"lr={lr}": m.evals_result_ for lr, m in fits.items()})
    _render(ax, tmp_path / "dicts.png")
    assert [line.get_label() for line in ax.get_lines()] == [
        f"lr={lr}: {d}" for lr in (0.05, 0.3) for d in ("train", "valid_0", "valid_1")]
    styles = [line.get_linestyle() for line in ax.get_lines()[:3]]
    assert styles == ["--", "-", "-."]
    assert [len(line.get_xdata()) for line in ax.get_lines()] == [10] * 3 + [11] * 3

    # explicit labels, only the validation set, on a given axes
    fig, ax2 = plt.subplots()
    out = plot_learning_curves(list(fits.values()), ["slow", "fast"], datasets=["valid_0"],
                               ax=ax2, logy=True, best_iteration=False)
    assert list(out) == [ax2]
    assert [line.get_label() for line in ax2.get_lines()] == ["slow: valid_0", "fast: valid_0"]
    assert ax2.get_yscale() == "log"

    # a single model, and default labels that would collide get numbered
    (one,) = plot_learning_curves(fits[0.05], best_iteration=False)
    assert [line.get_label() for line in one.get_lines()] == [
        "sgb: train", "sgb: valid_0", "sgb: valid_1"]
    (both,) = plot_learning_curves(list(fits.values()), datasets=["train"])
    assert [line.get_label() for line in _curves(both)] == ["sgb (0): train",
                                                           "sgb (1): train"]
    # the models have a validation set: their best iterations are marked
    assert [line.get_xdata()[0] for line in _best_lines(both)] == [
        m.best_iteration_ + 1 for m in fits.values()]


def test_learning_curves_errors(plt, higgs_small):
    X, y, _, _ = higgs_small
    model = BoostClassifier(n_estimators=3, max_depth=2).fit(X, y)
    with pytest.raises(ValueError, match="metric 'auc'"):
        plot_learning_curves(model, metric="auc")
    with pytest.raises(ValueError, match="none of datasets"):
        plot_learning_curves(model, datasets=["valid_0"])
    with pytest.raises(ValueError, match="labels has 2 entries"):
        plot_learning_curves([model], labels=["a", "b"])
    with pytest.raises(ValueError, match="no evals_result_"):
        plot_learning_curves([BoostClassifier()])
    with pytest.raises(TypeError):
        plot_learning_curves(42)
    with pytest.raises(ValueError, match="metric=.* distinct"):
        plot_learning_curves(model, metric=["logloss", "logloss"])


@pytest.fixture(scope="module")
def early_stopped(higgs_small):
    """A classifier with an AUC metric that stopped early on its eval set."""
    X, y, Xt, yt = higgs_small
    model = BoostClassifier(n_estimators=400, learning_rate=0.5, max_depth=4,
                            eval_metric="auc", early_stopping_rounds=8, random_state=0
                            ).fit(X, y, eval_set=[(Xt, yt)])
    curve = model.evals_result_["valid_0"]["auc"]
    assert model.best_iteration_ == int(np.argmax(curve)) and len(curve) < 400
    return model


def test_one_panel_per_metric_with_the_best_iteration_marked(plt, early_stopped, tmp_path):
    model = early_stopped
    best = model.best_iteration_
    for source in (model, model.model_):
        axes = plot_learning_curves(source, title="HIGGS")
        _render(axes[0], tmp_path / "panels.png")
        assert len(axes) == 2 and [ax.get_title() for ax in axes] == ["logloss", "auc"]
        assert len(axes[0].figure.axes) == 2 and axes[0].figure is axes[1].figure
        logloss, auc = axes
        # the loss panel: the training and validation loss; the AUC panel: validation only
        assert [line.get_label() for line in _curves(logloss)] == ["sgb: train",
                                                                    "sgb: valid_0"]
        assert [line.get_label() for line in _curves(auc)] == ["sgb: valid_0"]
        np.testing.assert_array_equal(_curves(auc)[0].get_ydata(),
                                      model.evals_result_["valid_0"]["auc"])
        np.testing.assert_array_equal(_curves(logloss)[0].get_ydata(),
                                      model.evals_result_["train"]["logloss"])
        for ax in axes:         # the best iteration: a vertical line at best + 1 iterations
            (mark,) = _best_lines(ax)
            assert list(mark.get_xdata()) == [best + 1, best + 1]
            assert mark.get_label() == f"sgb: best_iteration {best}"
            assert mark.get_color() == _curves(ax)[-1].get_color()
            assert _texts(ax, "best_iteration") == [f"{best + 1} iterations"]
            assert mark.get_label() in [t.get_text() for t in ax.get_legend().get_texts()]
        plt.close("all")
    # without validation data the best iteration is the last one: nothing is marked
    X = np.random.default_rng(0).normal(size=(300, 3))
    plain = BoostRegressor(n_estimators=5, max_depth=2).fit(X, X[:, 0])
    (ax,) = plot_learning_curves(plain)
    assert _best_lines(ax) == [] and _texts(ax, "best_iteration") == []
    (ax,) = plot_learning_curves(model, metric="auc", best_iteration=False)
    assert _best_lines(ax) == []


def test_metric_order_and_given_axes(plt, early_stopped):
    fig, given = plt.subplots(1, 2)
    axes = plot_learning_curves(early_stopped, metric=["auc", "logloss"], ax=given)
    assert list(axes) == list(given)
    assert [ax.get_title() for ax in axes] == ["auc", "logloss"]
    with pytest.raises(ValueError, match="ax holds 1 axes for 2 panels"):
        plot_learning_curves(early_stopped, ax=given[0])
    with pytest.raises(ValueError, match="ax holds 2 axes for 1 panels"):
        plot_learning_curves(early_stopped, metric="auc", ax=given)
    # four metrics: panels three to a row
    from boostlib import Dataset, train
    X, y = np.random.default_rng(1).normal(size=(400, 3)), None
    y = (X[:, 0] > 0).astype(float)
    model = train({"n_estimators": 6, "eval_metric": ["auc", "accuracy", "average_precision"]},
                  Dataset(X, y), valid_sets=[Dataset(X[:100], y[:100])])
    axes = plot_learning_curves(model)
    assert [ax.get_title() for ax in axes] == ["logloss", "auc", "accuracy",
                                               "average_precision"]
    assert len(axes[0].figure.axes) == 4
    rows = sorted({round(ax.get_position().y0, 3) for ax in axes})
    assert len(rows) == 2


def test_cv_result_mean_with_a_std_band_and_its_best_iteration(plt, higgs_small, tmp_path):
    from matplotlib.collections import PolyCollection

    from boostlib import Dataset, cv

    X, y, _, _ = higgs_small
    result = cv({"n_estimators": 200, "learning_rate": 0.5, "max_depth": 3,
                 "eval_metric": "auc", "random_state": 0}, Dataset(X, y), nfold=3,
                early_stopping_rounds=5)
    best = result.best_iteration
    n = len(result.history["auc-mean"])
    assert n == best + 6
    axes = plot_learning_curves(result)
    _render(axes[0], tmp_path / "cv.png")
    assert [ax.get_title() for ax in axes] == ["logloss", "auc"]
    for ax, name in zip(axes, ("logloss", "auc")):
        (line,) = _curves(ax)
        assert line.get_label() == "3-fold cv: valid (mean ± std)"
        np.testing.assert_array_equal(line.get_xdata(), np.arange(1, n + 1))
        np.testing.assert_array_equal(line.get_ydata(), result.history[f"{name}-mean"])
        (band,) = [c for c in ax.collections if c.get_gid() == "std_band"]
        assert isinstance(band, PolyCollection)
        vertices = band.get_paths()[0].vertices
        mean = np.array(result.history[f"{name}-mean"])
        std = np.array(result.history[f"{name}-std"])
        # the band's outline runs along mean + std and mean - std
        for x, upper, lower in ((1, mean[0] + std[0], mean[0] - std[0]),
                                (n, mean[-1] + std[-1], mean[-1] - std[-1])):
            at = vertices[np.isclose(vertices[:, 0], x)][:, 1]
            assert np.isclose(at.max(), upper) and np.isclose(at.min(), lower)
        (mark,) = _best_lines(ax)
        assert list(mark.get_xdata()) == [best + 1, best + 1]
    # beside a model, with labels
    estimator = BoostClassifier(n_estimators=20, max_depth=3, eval_metric="auc",
                                random_state=0).fit(X[:1000], y[:1000],
                                                    eval_set=[(X[1000:], y[1000:])])
    axes = plot_learning_curves({"cv": result, "holdout": estimator}, metric="auc")
    assert [line.get_label() for line in _curves(axes[0])] == ["cv: valid (mean ± std)",
                                                               "holdout: valid_0"]
    assert [line.get_xdata()[0] for line in _best_lines(axes[0])] == [
        best + 1, estimator.best_iteration_ + 1]


# -- importance ----------------------------------------------------------------------------------
def test_importance_bars_match_the_model_with_dataframe_names(plt, higgs_small, tmp_path):
    pd = importorskip("pandas")
    X, y, _, _ = higgs_small
    names = [f"feat_{i}" for i in range(X.shape[1])]
    model = BoostClassifier(n_estimators=20, max_depth=3, random_state=0).fit(
        pd.DataFrame(X, columns=names), y)
    imp = model.feature_importances_
    ax = plot_importance(model, max_features=8)
    _render(ax, tmp_path / "importance.png")

    order = np.argsort(-imp, kind="stable")[:8]
    assert len(ax.patches) == 8
    widths = [p.get_width() for p in ax.patches]
    np.testing.assert_allclose(widths, imp[order])
    assert widths == sorted(widths, reverse=True)
    tick_labels = [t.get_text() for t in ax.get_yticklabels()]
    assert tick_labels == [names[i] for i in order]
    # the most important bar is drawn at the top
    ys = [p.get_y() for p in ax.patches]
    lo, hi = ax.get_ylim()
    assert lo > hi and ys[0] < ys[-1]
    assert ax.get_title() == "Feature importance"


def test_importance_all_features_default_names_and_zero_filter(plt, tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 5))
    y = 3 * X[:, 1] - X[:, 3] + 0.1 * rng.normal(size=500)
    model = BoostRegressor(n_estimators=10, max_depth=2, random_state=0).fit(X, y)
    used = np.flatnonzero(model.feature_importances_ > 0)
    ax = plot_importance(model, max_features=None)
    _render(ax, tmp_path / "imp.png")
    assert len(ax.patches) == used.size
    assert {t.get_text() for t in ax.get_yticklabels()} == {f"x{i}" for i in used}
    assert [t.get_text() for t in ax.get_yticklabels()][0] == "x1"

    ax = plot_importance(model, max_features=None, ignore_zero=False,
                         feature_names=list("abcde"), title=None)
    assert len(ax.patches) == 5
    assert sorted(t.get_text() for t in ax.get_yticklabels()) == list("abcde")
    with pytest.raises(ValueError, match="feature_names has 2 entries"):
        plot_importance(model, feature_names=["a", "b"])
    with pytest.raises(ValueError, match="max_features"):
        plot_importance(model, max_features=0)
    with pytest.raises(ValueError, match="not fitted"):
        plot_importance(BoostRegressor())


# -- trees ---------------------------------------------------------------------------------------
def _splits(ax, policy):
    """The split texts drawn, without the ``"level l: "`` prefix of a symmetric tree's
    level boxes (checked: one box per level, in order)."""
    texts = _texts(ax, "split")
    if policy != "symmetric":
        return texts
    for level, text in enumerate(texts):
        assert text.startswith(f"level {level}: ")
    return [text.split(": ", 1)[1] for text in texts]


def test_depthwise_tree_drawing_matches_the_tree(plt, higgs_small, tmp_path):
    X, y, _, _ = higgs_small
    model = BoostClassifier(n_estimators=4, max_depth=3, grow_policy="depthwise",
                            learning_rate=0.2, random_state=0).fit(X, y)
    ens = model.ensemble_
    tree = ens.trees[2]
    coef = float(np.asarray(ens.coef)[2])
    ax = plot_tree(model, tree_index=2)
    _render(ax, tmp_path / "tree_depthwise.png")

    splits, leaves, edges = _texts(ax, "split"), _texts(ax, "leaf"), _texts(ax, "edge")
    # the root is drawn first; its threshold is the border of its bin, in raw units
    f, b = int(tree.feature[0]), int(tree.bin[0])
    assert splits[0] == f"x{f} <= {ens.bin_mapper.borders_[f][b]:.4g}"
    is_leaf = tree.left < 0
    assert len(splits) == int((~is_leaf).sum())
    assert len(leaves) == int(is_leaf.sum())
    assert leaves == _leaf_texts(tree, coef)
    # two labelled edges per split; exactly one of each pair carries "NaN"
    assert len(edges) == 2 * len(splits)
    assert sum("NaN" in e for e in edges) == len(splits)
    assert {e.strip().split(",")[0] for e in edges} == {"yes", "no"}
    # nodes and links only: none of the symmetric layout's texts
    assert not any(t.get_gid() in ("missing", "bits", "caption") for t in ax.texts)
    assert not ax.patches
    assert "tree 2 of 4" in ax.get_title() and "depthwise" in ax.get_title()


@pytest.mark.parametrize("policy", ["depthwise", "symmetric"])
def test_linear_leaves_are_named_in_the_drawing(plt, tmp_path, policy):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = np.where(X[:, 0] > 0, 5 + 2 * X[:, 1], -5 - X[:, 1])
    model = BoostRegressor(n_estimators=2, max_depth=2, grow_policy=policy,
                           linear_leaves=True, random_state=0).fit(X, y)
    tree = model.ensemble_.trees[0]
    ax = plot_tree(model, tree_index=0)
    _render(ax, tmp_path / f"linear_{policy}.png")
    assert "linear leaves: each leaf also adds its slopes" in ax.get_title()
    if policy == "depthwise":
        leaves = _texts(ax, "leaf")
        named = [t for t in leaves if "\n+ linear in " in t]
        # every leaf with a linear part names its features, in order of the leaves
        assert len(named) == int(np.count_nonzero(np.diff(tree.linear_ptr)))
        assert all(set(t.split("linear in ")[1].split(", ")) <= {"x0", "x1", "x2"}
                   for t in named)


def _extents(ax, gid):
    renderer = ax.figure.canvas.get_renderer()
    return [t.get_window_extent(renderer) for t in ax.texts if t.get_gid() == gid]


def test_symmetric_depth_6_tree_is_drawn_by_levels_and_a_leaf_table(plt, higgs_small,
                                                                     tmp_path):
    X, y, _, _ = higgs_small
    names = [f"feat_{i}" for i in range(X.shape[1])]
    model = BoostClassifier(n_estimators=3, max_depth=6, learning_rate=0.2,
                            random_state=0).fit(X, y)
    ens = model.ensemble_
    tree = ens.trees[1]
    assert tree.policy == "symmetric" and tree.depth == 6
    coef = float(np.asarray(ens.coef)[1])
    ax = plot_tree(model, tree_index=1, feature_names=names)
    pixels = _render(ax, tmp_path / "tree_symmetric_6.png")
    # it fits a normal figure
    width, height = ax.figure.get_size_inches()
    assert width <= 10 and height <= 8 and pixels.shape[1] <= 10 * 60

    # one box per level, in order, with the level's split
    splits = _texts(ax, "split")
    expected = []
    for level in range(6):
        f, b = int(tree.feature[level]), int(tree.bin[level])
        expected.append(f"level {level}: {names[f]} <= {ens.bin_mapper.borders_[f][b]:.4g}")
    assert splits == expected
    # each level's feature name is drawn once per level using it, nowhere else
    for f in set(tree.feature.tolist()):
        drawn = [t.get_text() for t in ax.texts if names[f] in t.get_text().split(" ")]
        assert len(drawn) == int((tree.feature == f).sum())
    # the side of missing values, beside each level
    assert _texts(ax, "missing") == [f"NaN: {'no' if r else 'yes'}" for r in tree.nan_right]
    # every leaf value, in the order of the leaf array
    leaves = _texts(ax, "leaf")
    assert leaves == [f"{coef * v:.4g}" for v in tree.value] == _leaf_texts(tree, coef)
    assert len(leaves) == 64

    # the table is 8 x 8: columns labelled by the answers at levels 0-2, rows by 3-5
    bits = [t for t in ax.texts if t.get_gid() == "bits"]
    columns = {t.get_position()[0]: t.get_text() for t in bits if t.get_position()[0] >= 0}
    rows = {t.get_position()[1]: t.get_text() for t in bits if t.get_position()[0] < 0}
    assert len(columns) == len(rows) == 8 and len(bits) == 16
    assert sorted(_texts(ax, "caption")) == ["answers at levels 0-2 (y: yes, n: no)",
                                             "answers at levels 3-5"]
    for i, t in enumerate(t for t in ax.texts if t.get_gid() == "leaf"):
        x, y_ = t.get_position()
        answers = (columns[x] + " " + rows[y_]).split(" ")
        assert len(answers) == 6 and set(answers) <= {"y", "n"}
        # the leaf reached by these answers: bit l set when level l answers "no"
        assert sum(1 << level for level, a in enumerate(answers) if a == "n") == i
    # coloured by value: red cells positive, blue cells negative
    assert len(ax.patches) == 64
    for patch, v in zip(ax.patches, coef * tree.value):
        r, _, b, _ = patch.get_facecolor()
        assert (r > b) if v > 0 else (b > r) if v < 0 else True
    # readable: no two texts of the levels or of the table overlap, and each value lies
    # inside its cell
    boxes = _extents(ax, "split") + _extents(ax, "missing") + _extents(ax, "bits")
    cells = _extents(ax, "leaf")
    for i, a in enumerate(boxes + cells):
        for b in (boxes + cells)[i + 1:]:
            assert not a.overlaps(b)
    renderer = ax.figure.canvas.get_renderer()
    for cell, patch in zip(cells, ax.patches):
        outer = patch.get_window_extent(renderer)
        assert outer.x0 <= cell.x0 and cell.x1 <= outer.x1
        assert outer.y0 <= cell.y0 and cell.y1 <= outer.y1
    assert "tree 1 of 3" in ax.get_title() and "symmetric" in ax.get_title()


def test_symmetric_leaf_table_matches_the_predictions(plt):
    # Drive rows down chosen paths of a depth-3 tree: the drawn leaf of its answers, read
    # from the table's labels, is what the model adds.
    rng = np.random.default_rng(8)
    X = rng.uniform(-1, 1, size=(3000, 3))
    y = (4 * (X[:, 0] > 0) + 2 * (X[:, 1] > 0.3) + (X[:, 2] > -0.2)
         + 0.01 * rng.normal(size=3000))
    model = BoostRegressor(n_estimators=1, max_depth=3, learning_rate=1.0,
                           random_state=0).fit(X, y)
    tree = model.ensemble_.trees[0]
    ax = plot_tree(model, precision=17)
    assert _texts(ax, "caption") == ["answers at levels 0-2 (y: yes, n: no)"]
    columns = {t.get_position()[0]: t.get_text() for t in ax.texts if t.get_gid() == "bits"}
    levels = [(int(tree.feature[level]), float(s.split(" ")[2]))
              for level, s in enumerate(_splits(ax, "symmetric"))]
    assert sorted(f for f, _ in levels) == [0, 1, 2]     # one level per feature
    leaves = [t for t in ax.texts if t.get_gid() == "leaf"]
    assert len(leaves) == 8 and len(columns) == 8
    for t in leaves:
        row = np.zeros(3)
        for (f, threshold), answer in zip(levels, columns[t.get_position()[0]].split(" ")):
            row[f] = threshold if answer == "y" else np.nextafter(threshold, np.inf)
        np.testing.assert_allclose(model.predict(row[None, :]),
                                   model.ensemble_.bias + float(t.get_text()), rtol=1e-12)


@pytest.mark.parametrize("policy", ["symmetric", "depthwise"])
def test_printed_threshold_and_missing_direction_match_predictions(plt, policy):
    # One stump on one feature: rows at the printed threshold go left, just above go right,
    # and a missing value goes where the edge labelled "NaN" points.
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 10, size=800)
    y = (x > 6.0).astype(float) + 0.05 * rng.normal(size=800)
    x[rng.random(800) < 0.1] = np.nan
    y[np.isnan(x)] = 1.0                          # missing rows look like large x
    X = x[:, None]
    model = BoostRegressor(n_estimators=1, max_depth=1, learning_rate=0.5, grow_policy=policy,
                           random_state=0).fit(X, y)
    ax = plot_tree(model, precision=17, feature_names=["size"])
    split, = _splits(ax, policy)
    name, op, threshold = split.split(" ")
    assert (name, op) == ("size", "<=")
    threshold = float(threshold)
    assert 5.5 < threshold < 6.5
    left, right = (float(v) for v in _texts(ax, "leaf"))
    bias = model.ensemble_.bias
    probe = np.array([[threshold], [np.nextafter(threshold, np.inf)], [np.nan]])
    raw = model.predict(probe)
    np.testing.assert_allclose(raw[:2], [bias + left, bias + right], rtol=1e-12)
    if policy == "symmetric":
        assert _texts(ax, "missing") == ["NaN: no"] and _texts(ax, "edge") == []
    else:
        yes, no = _texts(ax, "edge")
        assert "NaN" in no and "NaN" not in yes
    np.testing.assert_allclose(raw[2], bias + right, rtol=1e-12)


@pytest.mark.parametrize("policy", ["symmetric", "depthwise"])
def test_tree_edge_cases(plt, tmp_path, policy):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 3))
    y = rng.normal(size=300)
    # a tree without any split (pure noise, huge regularisation): one leaf
    model = BoostRegressor(n_estimators=2, max_depth=2, min_samples_leaf=200,
                           grow_policy=policy, random_state=0).fit(X, y)
    tree = model.ensemble_.trees[-1]
    coef = float(np.asarray(model.ensemble_.coef)[-1])
    ax = plot_tree(model, tree_index=-1, title="stump")
    _render(ax, tmp_path / f"leaf_{policy}.png")
    assert _texts(ax, "split") == [] and _texts(ax, "edge") == []
    assert _texts(ax, "leaf") == [f"{coef * tree.value[0]:.4g}"] == _leaf_texts(tree, coef)
    # a symmetric tree of depth 0: no levels, a table of one cell without labels
    assert [t.get_gid() for t in ax.texts] == ["leaf"]
    assert len(ax.patches) == (1 if policy == "symmetric" else 0)
    assert ax.get_title() == "stump"
    with pytest.raises(IndexError, match="has 2 trees"):
        plot_tree(model, tree_index=2)
    with pytest.raises(ValueError, match="not fitted"):
        plot_tree(BoostRegressor())
    fig, ax = plt.subplots()
    assert plot_tree(model, ax=ax, title=False) is ax and ax.get_title() == ""


# -- without matplotlib --------------------------------------------------------------------------
def test_clear_error_without_matplotlib(monkeypatch):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(100, 2))
    model = BoostRegressor(n_estimators=2, max_depth=2).fit(X, X[:, 0])
    for mod in ("matplotlib", "matplotlib.pyplot"):
        monkeypatch.setitem(sys.modules, mod, None)     # makes the import fail
    for call in (lambda: plot_importance(model), lambda: plot_tree(model),
                 lambda: plot_learning_curves(model)):
        with pytest.raises(ImportError, match=r"boostlib\[plot\]"):
            call()


def test_import_boostlib_does_not_import_matplotlib():
    code = ("import sys, boostlib, boostlib.plotting; "
            "assert 'matplotlib' not in sys.modules, 'matplotlib imported eagerly'")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("policy", ["symmetric", "depthwise"])
def test_split_of_missing_against_non_missing(plt, policy):
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 10, size=600)
    y = 0.05 * rng.normal(size=600)
    x[::5] = np.nan
    y[::5] = 3.0                                   # only missingness matters
    model = BoostRegressor(n_estimators=1, max_depth=1, grow_policy=policy,
                           random_state=0).fit(x[:, None], y)
    ax = plot_tree(model)
    assert _splits(ax, policy) == ["x0 is not missing"]
    if policy == "symmetric":
        assert _texts(ax, "split") == ["level 0: x0 is not missing"]
        assert _texts(ax, "missing") == ["NaN: no"]
    else:
        assert [e.strip() for e in _texts(ax, "edge")] == ["yes", "no, NaN"]
    left, right = (float(v) for v in _texts(ax, "leaf"))
    raw = model.predict(np.array([[1e300], [-1e300], [np.nan]]))
    bias = model.ensemble_.bias
    np.testing.assert_allclose(raw, bias + np.array([left, left, right]), rtol=1e-3)


# -- multiclass models ---------------------------------------------------------------------------
CLASSES = np.array(["ant", "bee", "cat"])


@pytest.fixture(scope="module")
def three_classes():
    """Three classes, each favoured by its own feature (softmax choice via Gumbel noise)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(900, 5))
    scores = 2.0 * X[:, :3] + rng.gumbel(size=(900, 3))
    y = CLASSES[np.argmax(scores, axis=1)]
    return X[:600], y[:600], X[600:], y[600:]


def _fit_multiclass(data, **params):
    X, y, Xt, yt = data
    params = {"n_estimators": 4, "max_depth": 2, "learning_rate": 0.3, "random_state": 0,
              **params}
    model = BoostClassifier(**params).fit(X, y, eval_set=[(Xt, yt)])
    assert model.model_.n_outputs == 3 and list(model.classes_) == list(CLASSES)
    return model


def _leaf_texts(tree, coef, precision=4):
    """The leaf texts ``plot_tree`` draws for ``tree``, in drawing order."""
    if tree.policy == "symmetric":
        # the leaf table, row by row: the order of the leaf array
        return [f"{coef * v:.{precision}g}" for v in tree.value]
    out = []

    def walk(k):
        if tree.left[k] < 0:
            out.append(f"{coef * tree.value[k]:.{precision}g}")
        else:
            walk(tree.left[k])
            walk(tree.right[k])

    walk(0)
    return out


def test_multiclass_learning_curves_of_estimator_and_model(plt, three_classes, higgs_small,
                                                           tmp_path):
    clf = _fit_multiclass(three_classes, n_estimators=6)
    for source in (clf, clf.model_):
        (ax,) = plot_learning_curves(source)
        _render(ax, tmp_path / "mc_curves.png")
        lines = _curves(ax)
        assert [line.get_label() for line in lines] == ["sgb: train", "sgb: valid_0"]
        for line, d in zip(lines, ("train", "valid_0")):
            curve = clf.evals_result_[d]["multiclass"]
            assert len(curve) == 6
            np.testing.assert_array_equal(line.get_ydata(), curve)
        assert ax.get_ylabel() == "multiclass" and ax.get_title() == "multiclass"
        plt.close("all")
    (ax,) = plot_learning_curves({"3 classes": clf.model_}, metric="multiclass",
                                 datasets=["valid_0"], best_iteration=False)
    assert [line.get_label() for line in ax.get_lines()] == ["3 classes: valid_0"]
    with pytest.raises(ValueError, match=r"metric 'logloss'.*\['multiclass'\]"):
        plot_learning_curves(clf, metric="logloss")
    # a binary and a multiclass model: each its own loss, in its own panel
    X, y, Xt, yt = higgs_small
    binary = BoostClassifier(n_estimators=3, max_depth=2, random_state=0).fit(X, y)
    axes = plot_learning_curves({"binary": binary, "multiclass": clf}, datasets=["train"])
    assert [ax.get_title() for ax in axes] == ["logloss", "multiclass"]
    assert [[line.get_label() for line in _curves(ax)] for ax in axes] == [
        ["binary: train"], ["multiclass: train"]]
    # a model's best iteration is marked where its curves are
    assert [len(_best_lines(ax)) for ax in axes] == [0, 1]
    assert [len(ax.get_lines()[0].get_ydata()) for ax in axes] == [3, 6]


def test_multiclass_importance_sums_the_gain_of_every_class(plt, three_classes, tmp_path):
    clf = _fit_multiclass(three_classes, n_estimators=8)
    ens = clf.ensemble_
    per_class = np.zeros((3, 5))
    for k in range(3):
        for tree in ens.output_trees(k):
            used = tree.feature >= 0
            np.add.at(per_class[k], tree.feature[used], tree.gain[used])
    gain = per_class.sum(axis=0)
    np.testing.assert_allclose(clf.feature_importances_, gain / gain.sum())
    # the classes' trees use the features differently: one class alone would not do
    assert not np.allclose(per_class[0] / per_class[0].sum(), gain / gain.sum())
    for source in (clf, clf.model_):
        ax = plot_importance(source, max_features=None, ignore_zero=False)
        _render(ax, tmp_path / "mc_importance.png")
        order = np.argsort(-gain, kind="stable")
        np.testing.assert_allclose([p.get_width() for p in ax.patches], gain[order] / gain.sum())
        assert [t.get_text() for t in ax.get_yticklabels()] == [f"x{i}" for i in order]
        plt.close("all")


def test_model_gives_its_feature_names_to_the_plots(plt, three_classes):
    pd = importorskip("pandas")
    X, y, _, _ = three_classes
    names = ["alpha", "beta", "gamma", "delta", "eps"]
    clf = BoostClassifier(n_estimators=3, max_depth=2, random_state=0).fit(
        pd.DataFrame(X, columns=names), y)
    ax = plot_importance(clf.model_, max_features=None, ignore_zero=False)
    assert sorted(t.get_text() for t in ax.get_yticklabels()) == sorted(names)
    ax = plot_tree(clf.model_, output=1)
    assert _splits(ax, "symmetric")[0].split(" ")[0] in names


@pytest.mark.parametrize("policy, depth", [("symmetric", 2), ("symmetric", 6),
                                           ("depthwise", 2)])
def test_multiclass_tree_output_selects_the_class_tree(plt, three_classes, tmp_path, policy,
                                                       depth):
    clf = _fit_multiclass(three_classes, grow_policy=policy, max_depth=depth)
    ens = clf.ensemble_
    coef = float(np.asarray(ens.coef)[2])
    drawn = []
    for k, label in enumerate(CLASSES):
        tree = ens.trees[2].trees[k]
        expected = _leaf_texts(tree, coef)
        assert tree is ens.output_trees(k)[2]
        ax = plot_tree(clf, tree_index=2, output=k)
        if k == 1:
            _render(ax, tmp_path / f"mc_tree_{policy}_{depth}.png")
        assert _texts(ax, "leaf") == expected
        if policy == "symmetric":
            # the levels of class k's tree, one box each
            assert tree.depth == depth
            assert _splits(ax, policy) == [
                f"x{f} <= {ens.bin_mapper.threshold(f, b):.4g}"
                for f, b in zip(tree.feature.tolist(), tree.bin.tolist())]
            assert len(_texts(ax, "missing")) == depth
        else:
            assert len(_texts(ax, "edge")) == 2 * len(_texts(ax, "split"))
        title = ax.get_title()
        assert title.startswith(f"tree 2 of 4, class {label} ({policy};")
        # the Model draws the same tree and names the output instead of the class
        ax_model = plot_tree(clf.model_, tree_index=2, output=k)
        assert _texts(ax_model, "leaf") == expected
        assert _texts(ax_model, "split") == _texts(ax, "split")
        assert ax_model.get_title().startswith(f"tree 2 of 4, output {k} ({policy};")
        drawn.append(expected)
        plt.close("all")
    assert drawn[0] != drawn[1] and drawn[1] != drawn[2] and drawn[0] != drawn[2]
    # the default is class 0's tree; negative tree indices count from the end
    assert _texts(plot_tree(clf, tree_index=2), "leaf") == drawn[0]
    last = plot_tree(clf, tree_index=-1, output=2)
    assert _texts(last, "leaf") == _leaf_texts(ens.trees[3].trees[2],
                                               float(np.asarray(ens.coef)[3]))
    assert "tree 3 of 4, class cat" in last.get_title()


@pytest.mark.parametrize("policy", ["symmetric", "depthwise"])
def test_multiclass_stump_leaves_are_the_class_raw_scores(plt, policy):
    # One feature, one stump per class: the drawn tree of class k explains column k of
    # decision_function at the printed threshold and just above it.
    rng = np.random.default_rng(6)
    x = rng.uniform(0, 10, size=900)
    y = np.where(x < 3.0, 0, np.where(x < 7.0, 1, 2))
    flip = rng.random(900) < 0.1
    y[flip] = rng.integers(0, 3, size=int(flip.sum()))
    clf = BoostClassifier(n_estimators=1, max_depth=1, learning_rate=0.5, grow_policy=policy,
                          random_state=0).fit(x[:, None], y)
    bias = clf.ensemble_.bias
    thresholds = []
    for k in range(3):
        ax = plot_tree(clf, output=k, precision=17, feature_names=["size"])
        split, = _splits(ax, policy)
        threshold = float(split.split(" ")[2])
        thresholds.append(threshold)
        left, right = (float(v) for v in _texts(ax, "leaf"))
        probe = np.array([[threshold], [np.nextafter(threshold, np.inf)]])
        raw = clf.decision_function(probe)
        assert raw.shape == (2, 3)
        np.testing.assert_allclose(raw[:, k], [bias[k] + left, bias[k] + right], rtol=1e-12)
        assert f"class {k}" in ax.get_title()
    # class 0 splits near 3 and class 2 near 7: different trees were drawn
    assert 2.0 < thresholds[0] < 4.0 and 6.0 < thresholds[2] < 8.0


def test_tree_output_errors(plt, three_classes):
    clf = _fit_multiclass(three_classes)
    for source in (clf, clf.model_):
        for bad in (3, -1, 10):
            with pytest.raises(ValueError, match=rf"output={bad} is out of range: the model "
                                                 r"has 3 outputs \(classes\), so "
                                                 r"0 <= output <= 2"):
                plot_tree(source, output=bad)
        for bad in (1.0, "bee", True):
            with pytest.raises(ValueError, match=rf"output={bad!r} is invalid; expected an "
                                                 r"int in \[0, 2\]"):
                plot_tree(source, output=bad)
        with pytest.raises(IndexError, match=r"has 4 trees \(each a group of 3 trees"):
            plot_tree(source, tree_index=4, output=1)
    # single-output models: output may only be 0 or None
    rng = np.random.default_rng(7)
    X = rng.normal(size=(200, 2))
    for model in (BoostRegressor(n_estimators=2, max_depth=2).fit(X, X[:, 0]),
                  BoostClassifier(n_estimators=2, max_depth=2).fit(X, X[:, 0] > 0)):
        for source in (model, model.model_):
            for ok in (None, 0, np.int64(0)):
                leaves = _texts(plot_tree(source, output=ok), "leaf")
                assert leaves == _texts(plot_tree(source), "leaf")
            assert "class" not in plot_tree(source).get_title()
            for bad in (1, -1, True):
                with pytest.raises(ValueError, match=rf"output={bad!r} is invalid: the model "
                                                     "has a single output, so output must be "
                                                     "0 or None"):
                    plot_tree(source, output=bad)
            plt.close("all")


@pytest.mark.parametrize("policy", ["symmetric", "depthwise"])
def test_categorical_splits_are_drawn_as_sets(plt, tmp_path, policy):
    pd = importorskip("pandas")
    rng = np.random.default_rng(2)
    city = rng.choice(["ams", "ber", "cph", "dub"], 800)
    y = np.isin(city, ["ber", "dub"]).astype(int) ^ (rng.random(800) < 0.05)
    frame = pd.DataFrame({"city": pd.Categorical(city), "x": rng.normal(size=800)})
    model = BoostClassifier(n_estimators=2, max_depth=2, grow_policy=policy,
                            categorical_encoding="sets", random_state=0).fit(frame, y)
    ax = plot_tree(model, tree_index=0)
    _render(ax, tmp_path / f"cat_{policy}.png")
    root = _splits(ax, policy)[0]
    assert root in ("city in {ams, cph}", "city in {ber, dub}")
    if policy == "symmetric":
        # no missing-value note beside a categorical level: its set says where NaN goes
        tree = model.ensemble_.trees[0]
        assert len(_texts(ax, "missing")) == int((tree.nan_right != 2).sum()) < tree.depth
    else:
        assert [e.strip() for e in _texts(ax, "edge")[:2]] == ["yes", "no"]
