"""Plots of fitted boostlib models: learning curves, feature importance and single trees.

matplotlib is an optional dependency (``pip install "boostlib[plot]"``). It is imported
when a plotting function is first called, never by ``import boostlib``. Every function draws
on the given matplotlib ``Axes`` (or on a new figure when ``ax`` is None) and returns it, so
the plot can be styled further or saved with ``ax.figure.savefig(...)``.

Every function takes a fitted estimator or its :class:`boostlib.Model` (``model_``), for
single-output models (regression, binary classification) and multiclass ones alike. A
multiclass model's terms each hold one tree per class: :func:`plot_tree` draws the tree of
one class (``output``), and :func:`plot_importance` sums the gain over all classes' trees.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

import numpy as np

from ..engine.linear_leaves import constant_part, has_linear
from ..engine.trees.base import CAT_SPLIT, set_members

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["plot_learning_curves", "plot_importance", "plot_tree"]

EvalsResult = Mapping[str, Mapping[str, Sequence[float]]]

# Line styles of the data sets in learning curves: training dashed, validation sets solid,
# then dash-dot and dotted (colours tell the models apart).
_TRAIN_STYLE = "--"
_VALID_STYLES = ("-", "-.", ":")


def _pyplot():
    """Import and return ``matplotlib.pyplot``, with a clear error when it is missing."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "boostlib.plotting needs matplotlib, which is not installed; install it with "
            "pip install 'boostlib[plot]' (or pip install matplotlib)") from exc
    return plt


def _new_axes(ax: Optional["Axes"], figsize: Tuple[float, float]) -> "Axes":
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def _is_ensemble(obj: Any) -> bool:
    """Whether ``obj`` is an :class:`~boostlib.engine.ensemble.Ensemble`."""
    return hasattr(obj, "trees") and hasattr(obj, "bin_mapper")


def _is_model(obj: Any) -> bool:
    """Whether ``obj`` is a trained :class:`boostlib.Model` (what :func:`boostlib.train`
    returns and an estimator's ``model_``)."""
    return _is_ensemble(getattr(obj, "ensemble", None)) and hasattr(obj, "evals_result")


def _ensemble(model: Any):
    """The fitted :class:`~boostlib.engine.ensemble.Ensemble` of an estimator, a
    :class:`boostlib.Model` or an ensemble."""
    if _is_ensemble(model):
        return model
    if _is_model(model):
        return model.ensemble
    ensemble = getattr(model, "ensemble_", None)
    if ensemble is None:
        raise ValueError(f"{type(model).__name__} is not fitted yet; call 'fit' first")
    return ensemble


def _feature_names(model: Any, n_features: int,
                   feature_names: Optional[Sequence[str]]) -> List[str]:
    inner = getattr(model, "model_", model) if not _is_ensemble(model) else None
    encoder = getattr(inner, "encoder", None)
    if feature_names is None:
        feature_names = getattr(model, "feature_names_in_", None)
    if feature_names is None and _is_model(model):
        feature_names = model.feature_names
    if encoder is not None:     # the trees split the encoded columns: name them
        if feature_names is not None and len(feature_names) != encoder.n_features:
            raise ValueError(f"feature_names has {len(feature_names)} entries; the model "
                             f"has {encoder.n_features} features")
        feature_names = encoder.column_names(feature_names)
    if feature_names is None:
        return [f"x{i}" for i in range(n_features)]
    names = [str(n) for n in feature_names]
    if len(names) != n_features:
        raise ValueError(f"feature_names has {len(names)} entries; the model has "
                         f"{n_features} features")
    return names


# -- learning curves ---------------------------------------------------------------------------
def _is_evals_result(obj: Any) -> bool:
    """Whether ``obj`` looks like ``{data set: {metric: [values per iteration]}}``."""
    if not isinstance(obj, Mapping) or not obj:
        return False
    for curves in obj.values():
        if not isinstance(curves, Mapping) or not curves:
            return False
        for values in curves.values():
            if isinstance(values, (Mapping, str)) or not hasattr(values, "__len__"):
                return False
    return True


def _describe(model: Any) -> str:
    """A short default label of a fitted estimator or Model: its update rule and sampler."""
    if _is_model(model):
        params = model.params

        def setting(name: str, default: Any = None) -> Any:
            return params.get(name, default)
    else:
        def setting(name: str, default: Any = None) -> Any:
            return getattr(model, name, default)
    update = setting("update")
    label = update if isinstance(update, str) else getattr(update, "name", None) or "model"
    sampler = setting("sampler")
    subsample = setting("subsample", 1.0)
    if sampler is not None or (isinstance(subsample, float) and subsample < 1.0):
        name = sampler if isinstance(sampler, str) else getattr(sampler, "name", "uniform")
        label += f" + {name or 'uniform'} {subsample:g}"
    return label


@dataclass
class _Curves:
    """One model's curves: ``{data set: {metric: values}}``, a CV result's standard
    deviations in the same shape (``bands``), and the best iteration to mark (0-based)."""

    label: str
    result: EvalsResult
    bands: EvalsResult = field(default_factory=dict)
    best: Optional[int] = None


def _is_cv_result(obj: Any) -> bool:
    from ..booster.cv import CVResult
    return isinstance(obj, CVResult)


def _cv_curves(result: Any) -> Tuple[EvalsResult, EvalsResult]:
    """A :class:`~boostlib.CVResult`'s history as the held-out folds' curves: the means,
    and the standard deviations, of every score, under the data set ``"valid"``."""
    from ..booster.cv import VALID
    means = {k[:-len("-mean")]: v for k, v in result.history.items() if k.endswith("-mean")}
    stds = {k[:-len("-std")]: v for k, v in result.history.items() if k.endswith("-std")}
    return {VALID: means}, {VALID: stds}


def _curve_sources(models_or_evals_results: Any,
                   labels: Optional[Sequence[str]]) -> List[_Curves]:
    """The curves of every model, from the accepted input forms."""
    obj = models_or_evals_results
    if _is_evals_result(obj) or hasattr(obj, "evals_result_") or hasattr(obj, "get_params") \
            or _is_model(obj) or _is_cv_result(obj):
        items: List[Tuple[Optional[str], Any]] = [(None, obj)]
    elif isinstance(obj, Mapping):
        items = [(str(k), v) for k, v in obj.items()]
    elif isinstance(obj, Sequence) and not isinstance(obj, str):
        items = [(None, v) for v in obj]
    else:
        raise TypeError("models_or_evals_results must be a fitted estimator, a Model, a "
                        "CVResult, an evals_result_ dict, or a list or dict of those; got "
                        + type(obj).__name__)
    if not items:
        raise ValueError("models_or_evals_results is empty")
    if labels is not None:
        labels = [str(label) for label in labels]
        if len(labels) != len(items):
            raise ValueError(f"labels has {len(labels)} entries for {len(items)} models")
        items = [(label, v) for label, (_, v) in zip(labels, items)]
    sources = []
    for i, (label, item) in enumerate(items):
        bands: EvalsResult = {}
        best: Optional[int] = None
        if _is_evals_result(item):
            result = item
            default = f"model {i}"
        elif _is_cv_result(item):
            result, bands = _cv_curves(item)
            best = int(item.best_iteration)
            default = f"{len(item.folds)}-fold cv"
        else:
            model = item if _is_model(item) else \
                getattr(item, "model_", None) if _fitted(item) else None
            result = None if model is None else model.evals_result
            if result is None:
                raise ValueError(f"item {i} ({type(item).__name__}) has no evals_result_: "
                                 "pass fitted estimators, Models, CVResults or their "
                                 "evals_result_ dicts")
            # the best iteration of the last validation set (without one: the last)
            if any(name != "train" for name in result) and model.best_iteration is not None:
                best = int(model.best_iteration)
            default = _describe(item)
        sources.append(_Curves(label if label is not None else default, result, bands, best))
    if labels is None and len({s.label for s in sources}) < len(sources):
        for i, source in enumerate(sources):
            source.label = f"{source.label} ({i})"
    return sources


def _fitted(estimator: Any) -> bool:
    """Whether an estimator is fitted (scikit-learn's ``__sklearn_is_fitted__``)."""
    check = getattr(estimator, "__sklearn_is_fitted__", None)
    if check is not None:
        return bool(check())
    try:
        return getattr(estimator, "evals_result_", None) is not None
    except Exception:  # noqa: BLE001 - an unfitted estimator's property raising
        return False


def _dataset_style(name: str, valid_styles: Dict[str, str]) -> str:
    if name == "train":
        return _TRAIN_STYLE
    if name not in valid_styles:
        valid_styles[name] = _VALID_STYLES[len(valid_styles) % len(_VALID_STYLES)]
    return valid_styles[name]


def _panels(sources: List[_Curves], metric: Any,
            datasets: Optional[Sequence[str]]) -> Tuple[List[str], Dict[str, List[str]]]:
    """The metrics to draw, one panel each, and each model's data sets to draw from.

    Without ``metric``: every metric any model records, in the order met (each model's
    data sets in order, their metrics in order). With it: those named, each recorded by
    every model on one of its data sets at least."""
    names: Dict[str, List[str]] = {}
    for source in sources:
        found = list(source.result) if datasets is None else \
            [d for d in datasets if d in source.result]
        if datasets is not None and not found:
            raise ValueError(f"{source.label}: none of datasets={list(datasets)} is in its "
                             f"evals_result_ (it has {list(source.result)})")
        names[source.label] = found
    if metric is None:
        metrics: List[str] = []
        for source in sources:
            for name in names[source.label]:
                metrics += [m for m in source.result[name] if m not in metrics]
        if not metrics:
            raise ValueError("the evals_result holds no curve to plot")
        return metrics, names
    metrics = [metric] if isinstance(metric, str) else [str(m) for m in metric]
    if not metrics or len(set(metrics)) != len(metrics):
        raise ValueError(f"metric={metric!r} is invalid; expected a metric name or a list of "
                         "distinct names")
    for source in sources:
        recorded = list(dict.fromkeys(m for name in names[source.label]
                                      for m in source.result[name]))
        for key in metrics:
            if key not in recorded:
                where = names[source.label]
                raise ValueError(f"{source.label}: metric {key!r} is not recorded for "
                                 f"{where[0] if len(where) == 1 else where} (it has "
                                 f"{recorded})")
    return metrics, names


def _panel_axes(ax: Any, n: int) -> np.ndarray:
    """``n`` axes: ``ax`` (one Axes for one panel, else a sequence of ``n``), or a new
    figure of ``n`` panels, three to a row."""
    if ax is None:
        plt = _pyplot()
        n_cols = min(n, 3)
        n_rows = math.ceil(n / n_cols)
        fig, grid = plt.subplots(n_rows, n_cols, figsize=(5.2 * n_cols, 3.9 * n_rows),
                                 squeeze=False, layout="constrained")
        flat = list(grid.ravel())
        for extra in flat[n:]:
            fig.delaxes(extra)
        axes = flat[:n]
    elif hasattr(ax, "plot"):
        axes = [ax]
    else:
        axes = list(np.ravel(np.asarray(ax, dtype=object)))
    if len(axes) != n:
        raise ValueError(f"ax holds {len(axes)} axes for {n} panels (one per metric); "
                         f"expected {n} axes, ax=None, or metric= naming "
                         f"{'one metric' if len(axes) == 1 else f'{len(axes)} metrics'}")
    out = np.empty(n, dtype=object)
    out[:] = axes
    return out


def plot_learning_curves(models_or_evals_results: Any, labels: Optional[Sequence[str]] = None,
                         *, metric: Union[str, Sequence[str], None] = None,
                         datasets: Optional[Sequence[str]] = None,
                         ax: Any = None, title: Optional[str] = None,
                         logy: bool = False, best_iteration: bool = True) -> np.ndarray:
    """Plot every score after every boosting iteration, one panel per metric, for one or
    several models.

    Each panel is titled with its metric and holds that metric's curves only: for every
    model, every data set that records it. Every model gets one colour; its data sets are
    told apart by the line style: the training loss (``"train"``) dashed, the first
    validation set (``"valid_0"``, or a CV result's ``"valid"``) solid, further validation
    sets dash-dotted and dotted. Each line is labelled ``"<model label>: <data set>"`` in
    the legend. The x axis counts iterations: the point at ``x`` is the model after ``x``
    iterations.

    A :class:`~boostlib.CVResult` draws the mean over the held-out folds of every score,
    with a band of ± one standard deviation around it.

    The best iteration of a model with validation data (``best_iteration_``, a Model's
    ``best_iteration``: the best score of the last validation set, where early stopping
    truncates the model) or of a CV result is marked in every panel by a dotted vertical
    line of the model's colour at ``x = best_iteration + 1`` (the iterations the best model
    holds), labelled ``"<model label>: best_iteration <k>"`` in the legend and ``"<k + 1>
    iterations"`` at the top of the line. A continued model's curves hold its new
    iterations only, while its best iteration counts them all: it is marked only when it
    falls on its curves.

    Parameters
    ----------
    models_or_evals_results : estimator, Model, CVResult, dict, or list or dict of those
        Fitted estimators (their ``evals_result_`` is plotted), :class:`boostlib.Model`
        instances (their ``evals_result``), :class:`~boostlib.CVResult` instances (their
        ``history``) or ``evals_result_`` dictionaries (``{data set: {metric: [value per
        iteration]}}``). A dict mapping a label to one of those gives the labels.
    labels : list of str, optional
        One label per model. By default the dict keys, else each estimator's (or Model's)
        update rule (and sampler), ``"<k>-fold cv"`` for a CV result, else ``"model i"``.
    metric : str or list of str, optional
        The metrics to plot, one panel each, in this order; every model must record each
        of them on one of its data sets. By default every metric any model records, in
        the order met: the loss first (``"logloss"`` for a binary classifier,
        ``"multiclass"`` for more classes, ``"mse"`` for a regressor), then the metrics of
        ``eval_metric``. Models of different losses can be drawn together: each loss
        gets its panel.
    datasets : list of str, optional
        Data sets to plot, e.g. ``["valid_0"]``. By default every data set of every model.
    ax : matplotlib Axes or sequence of Axes, optional
        Where to draw: one Axes per panel (a single Axes for a single panel). A new figure
        of one panel per metric (three to a row) is made when None.
    title : str, optional
        Title of the figure (its ``suptitle``); each panel's title is its metric.
    logy : bool, default False
        Use logarithmic y axes.
    best_iteration : bool, default True
        Mark the best iterations; False draws the curves alone.

    Returns
    -------
    numpy.ndarray of matplotlib.axes.Axes
        The panels drawn on, one per metric, in order (``axes[0].figure`` is the figure).
        The best-iteration lines have the gid ``"best_iteration"`` (their labels, the
        texts of that gid), the standard-deviation bands of CV results ``"std_band"``.

    Raises
    ------
    ImportError
        When matplotlib is not installed.
    ValueError
        For an unfitted estimator, an unknown ``metric`` or ``datasets`` entry, a
        ``labels`` list of the wrong length, or ``ax`` holding another number of axes
        than panels.
    """
    sources = _curve_sources(models_or_evals_results, labels)
    metrics, names = _panels(sources, metric, datasets)
    axes = _panel_axes(ax, len(metrics))
    colors = _pyplot().rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    for key, panel in zip(metrics, axes):
        valid_styles: Dict[str, str] = {}
        for source, color in zip(sources, itertools.cycle(colors)):
            drawn = 0
            for name in names[source.label]:
                values = source.result[name].get(key)
                if values is None:
                    continue
                values = np.asarray(values, dtype=np.float64)
                x = np.arange(1, values.size + 1)
                std = source.bands.get(name, {}).get(key)
                label = f"{source.label}: {name}" + (" (mean ± std)" if std is not None
                                                      else "")
                panel.plot(x, values, color=color,
                           linestyle=_dataset_style(name, valid_styles), label=label)
                if std is not None:
                    std = np.asarray(std, dtype=np.float64)
                    panel.fill_between(x, values - std, values + std, color=color,
                                       alpha=0.2, linewidth=0, gid="std_band")
                drawn = max(drawn, values.size)
            if best_iteration and source.best is not None and 0 <= source.best < drawn:
                _mark_best(panel, source.best, color, source.label)
        panel.set_title(key)
        panel.set_xlabel("iterations")
        panel.set_ylabel(key)
        if logy:
            panel.set_yscale("log")
        if panel.get_lines():
            panel.legend(fontsize="small")
    if title is not None:
        axes[0].figure.suptitle(title)
    return axes


def _mark_best(ax: "Axes", best: int, color: Any, label: str) -> None:
    """A dotted vertical line at ``best + 1`` iterations, labelled in the legend
    (``"<label>: best_iteration <best>"``) and at the top of the panel (``"<best + 1>
    iterations"``)."""
    x = best + 1
    ax.axvline(x, color=color, linestyle=":", linewidth=1.2, gid="best_iteration",
               label=f"{label}: best_iteration {best}")
    ax.annotate(f"{x} iterations", xy=(x, 1.0), xycoords=("data", "axes fraction"),
                xytext=(2, -2), textcoords="offset points", ha="left", va="top",
                rotation=90, fontsize="x-small", color=color, gid="best_iteration")


# -- feature importance -------------------------------------------------------------------------
def plot_importance(model: Any, max_features: Optional[int] = 20, *,
                    feature_names: Optional[Sequence[str]] = None, ignore_zero: bool = True,
                    ax: Optional["Axes"] = None, title: Optional[str] = "Feature importance",
                    precision: int = 3, importance_type: Optional[str] = None) -> "Axes":
    """Horizontal bar chart of the features' importance, the largest at the top.

    By default the importance of a feature is its share of the total split gain of the
    model (``importance_type`` chooses another). For a multiclass model that is the gain of
    the splits of every class's trees: one importance per feature for the whole model, as
    ``feature_importances_`` gives it.

    Parameters
    ----------
    model : BoostClassifier, BoostRegressor or Model
        A fitted estimator or a :class:`boostlib.Model` (e.g. an estimator's ``model_``).
    max_features : int or None, default 20
        Show at most this many features (the most important ones); None shows all.
    feature_names : list of str, optional
        Names of the features. By default ``model.feature_names_in_`` (set when the model
        was fitted on a pandas DataFrame; a Model's ``feature_names``), else
        ``x0, x1, ...``.
    ignore_zero : bool, default True
        Leave out features that no split uses.
    ax : matplotlib Axes, optional
        Where to draw; a new figure is made when None.
    title : str or None, default "Feature importance"
        Title of the axes.
    precision : int, default 3
        Significant digits of the value printed at the end of each bar.
    importance_type : {"gain", "split", "total_gain", "cover"}, optional
        See :meth:`boostlib.Model.feature_importance`. Default: an estimator's own
        ``importance_type``, else ``"gain"``.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on; ``ax.patches`` holds one bar per feature shown.

    Raises
    ------
    ImportError
        When matplotlib is not installed.
    ValueError
        For an unfitted model, ``max_features < 1`` or ``feature_names`` of the wrong
        length.
    """
    if max_features is not None and max_features < 1:
        raise ValueError(f"max_features={max_features!r} must be >= 1 or None")
    if importance_type is None:
        importance_type = getattr(model, "importance_type", "gain")
    importance = np.asarray(_ensemble(model).feature_importances(importance_type),
                            dtype=np.float64)
    names = _feature_names(model, importance.size, feature_names)
    order = np.argsort(-importance, kind="stable")
    if ignore_zero:
        order = order[importance[order] > 0]
    if max_features is not None:
        order = order[:max_features]
    ax = _new_axes(ax, (6.5, max(2.0, 0.32 * order.size + 1.0)))
    positions = np.arange(order.size)
    bars = ax.barh(positions, importance[order], height=0.7, color="C0")
    ax.set_yticks(positions, [names[i] for i in order])
    ax.set_ylim(order.size - 0.5, -0.5)    # the most important feature at the top
    if order.size:
        ax.bar_label(bars, labels=[f"{v:.{precision}g}" for v in importance[order]],
                     padding=3, fontsize="small")
        ax.set_xlim(0.0, float(importance[order].max()) * 1.18)
    ax.set_xlabel("importance (share of the total split gain)")
    if title is not None:
        ax.set_title(title)
    return ax


# -- one tree -------------------------------------------------------------------------------
@dataclass
class _Node:
    text: str
    leaf: bool
    depth: int
    children: List["_Node"] = field(default_factory=list)
    edge_labels: Tuple[str, str] = ("", "")
    x: float = 0.0


def _split_text(name: str, feature: int, bin_index: int, nan_right: int, mapper,
                precision: int, cat_sets: Any = None) -> Tuple[str, Tuple[str, str]]:
    """Node text and (left, right) edge labels of the split ``bin <= bin_index``.

    A row goes left when its bin is ``<= bin_index`` and it is not missing; the bin of ``x``
    is the number of borders below ``x``, so that is ``x <= borders[bin_index]``. A bin past
    the last border sends every non-missing row left. A categorical split (``nan_right ==
    2``) reads ``name in {labels}`` (its set ``cat_sets[bin_index]``; at most 6 labels shown).
    """
    if nan_right == CAT_SPLIT:
        labels = mapper.category_labels(feature, set_members(cat_sets[bin_index]))
        shown = ", ".join(labels[:6]) + (f", ... (+{len(labels) - 6})" if len(labels) > 6
                                         else "")
        return f"{name} in {{{shown}}}", ("yes", "no")
    threshold = mapper.threshold(feature, bin_index)
    if math.isinf(threshold):
        text = f"{name} is not missing"
    else:
        text = f"{name} <= {threshold:.{precision}g}"
    if nan_right:
        return text, ("yes", "no, NaN")
    return text, ("yes, NaN", "no")


def _check_output(output: Any, n_outputs: int) -> int:
    """The index of the output (class) whose tree to draw, checked against the model."""
    if n_outputs == 1:
        if output is None or (isinstance(output, (int, np.integer))
                              and not isinstance(output, bool) and output == 0):
            return 0
        raise ValueError(f"output={output!r} is invalid: the model has a single output, so "
                         "output must be 0 or None (it selects a class's tree only in "
                         "multiclass models)")
    if output is None:
        return 0
    if isinstance(output, bool) or not isinstance(output, (int, np.integer)):
        raise ValueError(f"output={output!r} is invalid; expected an int in "
                         f"[0, {n_outputs - 1}], the index of a class (the model has "
                         f"{n_outputs} outputs)")
    if not 0 <= output < n_outputs:
        raise ValueError(f"output={output} is out of range: the model has {n_outputs} "
                         f"outputs (classes), so 0 <= output <= {n_outputs - 1}")
    return int(output)


def _output_name(model: Any, output: int, n_outputs: int) -> str:
    """``"class <label>"`` for an estimator with ``classes_``, else ``"output k"``."""
    classes = getattr(model, "classes_", None)
    if classes is not None and len(classes) == n_outputs:
        return f"class {classes[output]}"
    return f"output {output}"


def _tree_of(ensemble, tree_index: int, output: int) -> Tuple[Any, float]:
    """Output ``output``'s tree of term ``tree_index`` and the term's coefficient."""
    tree = ensemble.trees[tree_index]
    if ensemble.n_outputs > 1:
        tree = tree.trees[output]
    return tree, float(np.asarray(ensemble.coef, dtype=np.float64)[tree_index])


def _tree_nodes(ensemble, tree: Any, coef: float, names: List[str], precision: int,
                tree_index: int) -> _Node:
    """The nodes of ``tree`` as an explicit binary tree, leaf values multiplied by the
    term's coefficient ``coef``; a leaf with a linear part names its features on a second
    line."""
    mapper = ensemble.bin_mapper
    a = ensemble.kind.node_arrays(tree)      # every kind, as an explicit binary tree
    n_nodes = int(a["left"].size)
    slot = None                              # the value slot of every node (linear leaves)
    if has_linear(tree):
        slot = ensemble.kind.node_arrays(constant_part(
            tree, np.arange(tree.value.size, dtype=np.float64)))["value"].astype(np.int64)

    def leaf(k: int, depth: int) -> _Node:
        text = f"{coef * float(a['value'][k]):.{precision}g}"
        if slot is not None:
            s = int(slot[k])
            linear = tree.linear_feature[tree.linear_ptr[s]:tree.linear_ptr[s + 1]]
            if linear.size:
                text += "\n+ linear in " + ", ".join(names[int(f)] for f in linear)
        return _Node(text, True, depth)

    def node(k: int, depth: int) -> _Node:
        if depth > n_nodes:
            raise ValueError(f"tree {tree_index} has a cycle")
        if a["left"][k] < 0:
            return leaf(k, depth)
        f = int(a["feature"][k])
        text, edges = _split_text(names[f], f, int(a["bin"][k]), int(a["nan_right"][k]),
                                  mapper, precision, a.get("cat_sets"))
        return _Node(text, False, depth, [node(int(a["left"][k]), depth + 1),
                                          node(int(a["right"][k]), depth + 1)], edges)

    return node(0, 0)


def _layout(root: _Node) -> Tuple[List[_Node], int, int]:
    """Leaves at consecutive x in drawing order, parents centred above their children."""
    nodes: List[_Node] = []
    next_leaf = [0]

    def place(n: _Node) -> None:
        nodes.append(n)
        if n.leaf:
            n.x = float(next_leaf[0])
            next_leaf[0] += 1
            return
        for child in n.children:
            place(child)
        n.x = (n.children[0].x + n.children[-1].x) / 2.0

    place(root)
    return nodes, next_leaf[0], max(n.depth for n in nodes)


def _draw_node_link(ax: Optional["Axes"], root: _Node) -> "Axes":
    """Draw an explicit binary tree: split and leaf boxes joined by labelled edges."""
    nodes, n_leaves, depth = _layout(root)
    ax = _new_axes(ax, (min(40.0, max(5.0, 1.5 * n_leaves)), 1.0 + 1.3 * (depth + 1)))
    fontsize = 9 if n_leaves <= 16 else 7 if n_leaves <= 32 else 5
    box = dict(boxstyle="round,pad=0.3", linewidth=0.8)
    for n in nodes:
        y = -float(n.depth)
        for child, label, side in zip(n.children, n.edge_labels, ("right", "left")):
            cy = -float(child.depth)
            ax.annotate("", xy=(child.x, cy), xytext=(n.x, y),
                        arrowprops=dict(arrowstyle="-|>", color="0.45", linewidth=0.8,
                                        shrinkA=9, shrinkB=9))
            # the left edge's label ends at the edge, the right edge's starts there
            ax.text((n.x + child.x) / 2.0, (y + cy) / 2.0, f" {label} ", ha=side,
                    va="center", fontsize=fontsize - 1, color="0.3", gid="edge")
        ax.text(n.x, y, n.text, ha="center", va="center", fontsize=fontsize,
                gid="leaf" if n.leaf else "split",
                bbox={**box, "facecolor": "#e8f4e8" if n.leaf else "#e8eef8",
                      "edgecolor": "#5a9a5a" if n.leaf else "#5a78a8"})
    ax.set_xlim(-0.7, max(n_leaves - 1, 0) + 0.7)
    ax.set_ylim(-depth - 0.5, 0.5)
    return ax


def _grid_shape(depth: int) -> Tuple[int, int]:
    """``(column levels, row levels)`` of the leaf table of an oblivious tree: the first
    levels pick the column, the others the row (8 columns for depths 3 to 6, 16 for 7 and
    8, ...; a single row up to depth 3)."""
    n_col = depth if depth <= 3 else max(3, (depth + 1) // 2)
    return n_col, depth - n_col


def _answers(index: int, levels: range) -> str:
    """The answers ``"y"`` (left) or ``"n"`` (right) at ``levels`` of the leaves whose index
    has the bits ``index << levels.start``, level by level."""
    return " ".join("n" if (index >> (lv - levels.start)) & 1 else "y" for lv in levels)


def _level_range(levels: range) -> str:
    return f"level {levels.start}" if len(levels) == 1 else \
        f"levels {levels.start}-{levels.stop - 1}"


def _draw_symmetric(ax: Optional["Axes"], tree: Any, coef: float, names: List[str], mapper,
                    precision: int) -> "Axes":
    """Draw an oblivious tree: one box per level, then the table of its ``2**depth`` leaf
    values, coloured by value.

    Leaf ``i`` is the one reached by the answers ``right_l = (i >> l) & 1`` (1: "no"); the
    table has leaf ``i`` in row ``i // n_cols``, column ``i % n_cols``, so the column is
    chosen by the first levels and the row by the others. Data coordinates: x counts
    columns, y goes down one unit per level row and per table row.
    """
    _pyplot()      # the clear error when matplotlib is missing
    from matplotlib import colormaps
    from matplotlib.colors import Normalize
    from matplotlib.patches import Rectangle

    depth = tree.depth
    n_col_levels, n_row_levels = _grid_shape(depth)
    n_cols, n_rows = 1 << n_col_levels, 1 << n_row_levels
    col_levels = range(0, n_col_levels)
    row_levels = range(n_col_levels, depth)
    values = coef * np.asarray(tree.value, dtype=np.float64)
    # the table's top edge (below the levels and the column labels) and the axes limits
    top = -float(depth) - 0.85 if depth else 0.4
    xlim = (-1.6 if n_row_levels else -0.6, n_cols - 0.4)
    if xlim[1] - xlim[0] < 5.0:       # a few leaves: cells no wider than in a full row
        pad = (5.0 - (xlim[1] - xlim[0])) / 2.0
        xlim = (xlim[0] - pad, xlim[1] + pad)
    ylim = (top - n_rows - 0.1, 0.5)
    x_units, y_units = xlim[1] - xlim[0], ylim[1] - ylim[0]
    if ax is None:      # a figure of its own, with little margin around the axes
        width = min(40.0, max(5.5, 0.95 * x_units + 0.3))
        height = max(2.0, 0.42 * y_units + 0.6)
        ax = _new_axes(ax, (width, height))
        ax.figure.subplots_adjust(left=0.02, right=0.98, bottom=0.02,
                                  top=1.0 - 0.45 / height)
    # the font fits a value ("-0.01234") in a cell and a level box in a row of the axes
    position = ax.get_position()
    fig_w, fig_h = ax.figure.get_size_inches()
    cell_w = 72.0 * position.width * fig_w / x_units          # points
    row_h = 72.0 * position.height * fig_h / y_units
    fontsize = max(4.0, min(9.0, cell_w / (0.62 * (precision + 4)), row_h / 2.0))
    center = (n_cols - 1) / 2.0

    # the levels: one box each, the side missing values go to at its right
    for level in range(depth):
        f = int(tree.feature[level])
        text, edges = _split_text(names[f], f, int(tree.bin[level]),
                                  int(tree.nan_right[level]), mapper, precision,
                                  tree.cat_sets)
        y = -float(level)
        if level:
            ax.annotate("", xy=(center, y), xytext=(center, y + 1.0),
                        arrowprops=dict(arrowstyle="-|>", color="0.45", linewidth=0.8,
                                        shrinkA=8, shrinkB=8))
        box = ax.text(center, y, f"level {level}: {text}", ha="center", va="center",
                      fontsize=fontsize, gid="split",
                      bbox=dict(boxstyle="round,pad=0.3", linewidth=0.8,
                                facecolor="#e8eef8", edgecolor="#5a78a8"))
        nan_side = [side for side, label in zip(("yes", "no"), edges) if "NaN" in label]
        if nan_side:
            ax.annotate(f"NaN: {nan_side[0]}", xy=(1.0, 0.5), xycoords=box,
                        xytext=(8, 0), textcoords="offset points", ha="left", va="center",
                        fontsize=fontsize - 1, color="0.3", gid="missing")

    # the leaf table, its column labels (answers at the first levels) on top and its row
    # labels (answers at the other levels) on the left
    if n_col_levels:
        ax.text(center, top + 0.6, f"answers at {_level_range(col_levels)} "
                "(y: yes, n: no)", ha="center", va="bottom", fontsize=fontsize - 1,
                color="0.3", gid="caption")
        for c in range(n_cols):
            ax.text(c, top + 0.05, _answers(c, col_levels), ha="center", va="bottom",
                    fontsize=fontsize - 1, family="monospace", gid="bits")
    if n_row_levels:
        labels = [ax.text(-0.55, top - r - 0.5, _answers(r, row_levels), ha="right",
                          va="center", fontsize=fontsize - 1, family="monospace", gid="bits")
                  for r in range(n_rows)]
        ax.annotate(f"answers at {_level_range(row_levels)}", xy=(0.0, top - n_rows / 2.0),
                    xycoords=(labels[0], "data"), xytext=(-6, 0), textcoords="offset points",
                    ha="right", va="center", rotation=90, fontsize=fontsize - 1, color="0.3",
                    gid="caption")
    bound = float(np.max(np.abs(values))) if values.size else 0.0
    norm = Normalize(-bound, bound) if bound > 0 else Normalize(-1.0, 1.0)
    cmap = colormaps["RdBu_r"]
    for i, v in enumerate(values):
        r, c = divmod(i, n_cols)
        shade = norm(v) if values.size > 1 else 0.5      # a single leaf: nothing to compare
        ax.add_patch(Rectangle((c - 0.5, top - r - 1.0), 1.0, 1.0, facecolor=cmap(shade),
                               edgecolor="white" if values.size > 1 else "0.6",
                               linewidth=1.5 if values.size > 1 else 0.8))
        ax.text(c, top - r - 0.5, f"{v:.{precision}g}", ha="center", va="center",
                fontsize=fontsize, color="white" if abs(shade - 0.5) > 0.33 else "black",
                gid="leaf")
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    return ax


def plot_tree(model: Any, tree_index: int = 0, *, output: Optional[int] = None,
              feature_names: Optional[Sequence[str]] = None, ax: Optional["Axes"] = None,
              precision: int = 4, title: Optional[Union[str, bool]] = True) -> "Axes":
    """Draw one tree of a fitted model.

    Splits read ``feature <= threshold`` with the threshold in the feature's original
    units, or ``feature in {categories}`` for a categorical split; "yes" goes left, "no"
    right. Leaves show the tree's contribution to the raw score: the leaf value times the
    tree's coefficient in the model.

    A ``depthwise`` or ``lossguide`` tree is drawn as nodes and links: split boxes joined
    to their children by edges labelled "yes" (left) and "no" (right), the edge that
    missing values follow also saying "NaN", down to the leaf boxes.

    An oblivious tree (``grow_policy="symmetric"``, the default) splits every node of a
    level on the same feature and threshold, so it is drawn as it is stored, which stays
    readable up to depth 8:

    - one box per level, from the root down, reading ``level l: feature <= threshold``,
      with ``NaN: yes`` or ``NaN: no`` beside it (the answer of a missing value; none for
      a categorical split: missing values go left when its set holds ``NaN``);
    - a table of the ``2**depth`` leaf values, coloured by value (red positive, blue
      negative, deepest for the largest absolute value). A sample's leaf is found by its
      answers at the levels: the answers at the first levels choose the column (column
      labels such as ``y n y`` for levels 0, 1 and 2, ``y`` for yes and ``n`` for no),
      the answers at the other levels the row (row labels). The table is a single row up
      to depth 3, has 8 columns up to depth 6 (a depth-6 tree is 8 x 8) and 16 for depths
      7 and 8. Row by row, it holds the leaves in the order of the tree's leaf array,
      where a leaf's index is the sum of ``2**l`` over the levels ``l`` answered "no".

    A multiclass model (``K`` classes) has one raw score per class, and each of its terms
    holds ``K`` trees sharing one coefficient, the tree of class ``k`` adding to the raw
    score of ``classes_[k]``; ``output`` chooses which of them is drawn.

    Parameters
    ----------
    model : BoostClassifier, BoostRegressor or Model
        A fitted estimator or a :class:`boostlib.Model` (e.g. an estimator's ``model_``).
    tree_index : int, default 0
        Which term, ``0 <= tree_index < model.n_trees_`` (negative values count from the
        end).
    output : int, optional
        For a multiclass model, the index ``k`` of the class whose tree to draw,
        ``0 <= k < n_classes`` (the class ``classes_[k]``); None means 0. A single-output
        model (regression, binary classification) has one tree per term: only 0 or None.
    feature_names : list of str, optional
        Names of the features. By default ``model.feature_names_in_`` (a Model's
        ``feature_names``), else ``x0, x1, ...``.
    ax : matplotlib Axes, optional
        Where to draw; a new figure sized to the tree is made when None. The texts of a
        symmetric tree are scaled down to fit a smaller ``ax``.
    precision : int, default 4
        Significant digits of thresholds and leaf values.
    title : str or bool, default True
        Title of the axes; True for "tree i of n (policy; leaf values x coefficient c)",
        with ", class <label>" after "of n" for a multiclass estimator (", output k" for a
        multiclass Model, which does not know the class labels); False for none.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on. Split and leaf texts are ``ax.texts`` with the gid
        ``"split"`` or ``"leaf"`` (leaves from left to right; for a symmetric tree one
        ``"split"`` text per level, from the root down, and the leaves in the order of
        the leaf array). Edge labels have the gid ``"edge"``; for a symmetric tree the
        missing-value notes have the gid ``"missing"``, the table's column and row labels
        ``"bits"`` and their two captions ``"caption"``.

    Raises
    ------
    ImportError
        When matplotlib is not installed.
    IndexError
        When the model has no tree ``tree_index``.
    ValueError
        For an unfitted model, ``feature_names`` of the wrong length, or an ``output``
        that is not an int in ``[0, n_classes - 1]`` (not 0 or None for a single-output
        model).

    Notes
    -----
    Depthwise and leaf-wise trees of depth above 5 or 6 have more leaves than fit
    legibly on a page as nodes and links; fit a small model (``max_depth=3``) to look at
    them. Symmetric trees of depth 6 fit a normal figure.
    """
    ensemble = _ensemble(model)
    n_trees = len(ensemble.trees)
    n_outputs = int(getattr(ensemble, "n_outputs", 1))
    output = _check_output(output, n_outputs)
    if not -n_trees <= tree_index < n_trees:
        groups = f" (each a group of {n_outputs} trees, one per class)" if n_outputs > 1 else ""
        raise IndexError(f"tree_index={tree_index} is out of range: the model has {n_trees} "
                         f"trees{groups}")
    tree_index = tree_index % n_trees
    names = _feature_names(model, ensemble.bin_mapper.n_features, feature_names)
    tree, coef = _tree_of(ensemble, tree_index, output)
    if getattr(tree, "policy", None) == "symmetric":
        ax = _draw_symmetric(ax, tree, coef, names, ensemble.bin_mapper, precision)
    else:
        ax = _draw_node_link(ax, _tree_nodes(ensemble, tree, coef, names, precision,
                                             tree_index))
    ax.set_axis_off()
    if title is True:
        which = f", {_output_name(model, output, n_outputs)}" if n_outputs > 1 else ""
        title = (f"tree {tree_index} of {n_trees}{which} ({ensemble.policy}; leaf values x "
                 f"coefficient {coef:.{precision}g}"
                 + ("; linear leaves: each leaf also adds its slopes" if has_linear(tree)
                    else "") + ")")
    if title:
        ax.set_title(str(title))
    return ax
