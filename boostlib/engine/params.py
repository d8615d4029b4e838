"""Training parameters: their names, defaults and validation (shared by
:func:`boostlib.train` and the estimators, which take the same names)."""
from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import numpy as np

from .._messages import shown
from .class_weights import check_class_weight
from .encoding import ENCODINGS
from .importance import check_importance_type
from ..plugin.api import Metric
from ..plugin.callables import function_name, is_function
from .trees import GROW_POLICIES, TreeGroup, kind_of
from .trees.base import MAX_DEPTH
from .validation import check_choice, check_number

LEAF_ESTIMATIONS = ("newton", "gradient")

#: Largest ``|n_jobs|`` accepted (a thread count; model files store it).
MAX_N_JOBS = 1024
#: Deepest symmetric trees: an oblivious tree of depth ``d`` has ``2**d`` leaves.
MAX_SYMMETRIC_DEPTH = 16
#: Most scalar trees a model may hold (every output's tree counts): the bound model files
#: enforce, so every model training gives can be saved and loaded back.
MAX_TREES = 500_000
#: ``n_estimators=None``: this many iterations without early stopping ...
DEFAULT_ROUNDS = 100
#: ... and at most this many with it (the held-out score picks the best of them).
STOPPING_ROUNDS_CAP = 1000
#: Most bytes the trees of a model may take in a model file (their arrays, as the file's
#: binary blocks hold them before base64): what training's parameters allow is checked
#: against it at the start, so that every model fits a model file (at most 1 GiB: the
#: trees' 853 MiB of base64 at this bound, with room for the rest; see docs/reliability.md).
MAX_TREE_BYTES = 640 << 20

#: Most leaves of a leaf-wise tree (``max_leaves``; LightGBM's bound on ``num_leaves``).
MAX_LEAVES = 131_072

#: ``max_leaves`` of leaf-wise trees when the parameter is None (LightGBM's ``num_leaves``).
DEFAULT_MAX_LEAVES = 31

def metric_specs(value: Any) -> List[Any]:
    """``eval_metric`` as a list of metric names, :class:`~boostlib.api.Metric` instances
    and metric functions (None: none), or a TypeError/ValueError naming it."""
    if value is None:
        return []
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if not items:
        raise ValueError("eval_metric=[] is invalid; expected None, a metric name, a Metric "
                         "or a non-empty list of them")
    for item in items:
        if not (isinstance(item, str) and item or isinstance(item, Metric)
                or is_function(item)):
            raise TypeError(f"eval_metric={value!r} is invalid; expected a metric name, a "
                            "boostlib.api.Metric, a function (y_true, y_pred, "
                            "sample_weight) -> float, or a list of them")
    names = [m if isinstance(m, str) else function_name(m) if is_function(m) else
             (m.name or type(m).__name__) for m in items]
    if len(set(names)) != len(names):
        raise ValueError(f"eval_metric={value!r} names a metric twice")
    return items


def min_data_per_group(value: Any, n_rows: int) -> int:
    """``min_data_per_group``, with None (the default) meaning 0.5% of the training rows,
    at least 10 and at most 200: on UCI Adult (5-fold cross-validation, with and without a
    ~2,000-level column) fixed values of 10 overfit set splits, 100-200 beat ordinal codes,
    and a fixed 100 would forbid set splits on small data altogether."""
    if value is not None:
        return int(value)
    return int(min(200, max(10, round(n_rows / 200))))


#: ``cli`` values of :class:`Parameter`: how ``boostlib train`` reads an option's text.
#: ``"int"``, ``"float"``: a number; ``"bool"``: true/false, yes/no, 1/0; ``"name"``: a
#: registered plugin's name; ``"choice"``: one of the type's ``{...}`` values; ``"object"``:
#: a JSON object; ``"names"``: comma-separated names; ``"value"``: a JSON value, else the
#: text itself.
OPTION_KINDS = ("int", "float", "bool", "name", "choice", "object", "names", "value")

#: ``scope`` values of :class:`Parameter`: ``"train"`` for :func:`boostlib.train` and
#: every estimator, ``"estimator"`` for the estimators only, ``"classifier"`` for
#: :class:`boostlib.BoostClassifier` only.
SCOPES = ("train", "estimator", "classifier")

_HINTS = {"int": int, "float": float, "bool": bool, "dict": Dict[str, Any]}


@dataclass(frozen=True)
class Parameter:
    """One parameter, declared once: the estimators' signatures and docstrings,
    :func:`resolve`, the command line's options and the documentation's list derive from
    it.

    Attributes
    ----------
    name : str
    default : object
    type : str
        Its numpydoc type, without the default (``"int"``, ``'{"newton", "gradient"}'``).
    doc : str
        Its numpydoc description (reStructuredText; the first sentence is the command
        line's help unless ``cli_help`` is given).
    check : callable, optional
        ``check(name, value)`` raises ValueError or TypeError naming the parameter, its value
        and what was expected. Checks between parameters are :func:`resolve`'s.
    cli : str or None
        How ``boostlib train`` reads the option's text (one of :data:`OPTION_KINDS`), or None
        for a parameter that is not an option (set otherwise, or meaningless for one run).
    cli_help : str, optional
        The option's help when the description speaks of the Python API.
    scope : str
        Who takes it (one of :data:`SCOPES`).
    """

    name: str
    default: Any
    type: str
    doc: str
    check: Optional[Callable[[str, Any], None]] = None
    cli: Optional[str] = "value"
    cli_help: Optional[str] = None
    scope: str = "train"

    def __post_init__(self) -> None:
        if self.cli is not None and self.cli not in OPTION_KINDS:
            raise ValueError(f"parameter {self.name!r}: cli={self.cli!r}; expected one of "
                             f"{OPTION_KINDS} or None")
        if self.scope not in SCOPES:
            raise ValueError(f"parameter {self.name!r}: scope={self.scope!r}; expected one "
                             f"of {SCOPES}")

    @property
    def choices(self) -> Optional[Tuple[str, ...]]:
        """The values of a ``{"a", "b"}`` type, else None."""
        match = re.match(r"\{([^}]*)\}", self.type)
        return tuple(re.findall(r'"([^"]+)"', match.group(1))) if match else None

    @property
    def type_line(self) -> str:
        """The numpydoc type line: the type and the default."""
        if self.default is None:
            return f"{self.type}, optional"
        shown = f'"{self.default}"' if isinstance(self.default, str) else repr(self.default)
        return f"{self.type}, default {shown}"

    @property
    def annotation(self) -> Any:
        """The type hint of the estimators' signatures."""
        hint = str if self.choices else _HINTS.get(self.type, Any)
        return Optional[hint] if self.default is None and hint is not Any else hint

    def numpydoc(self, indent: int = 4, width: int = 92) -> str:
        """The parameter's entry in a numpydoc ``Parameters`` section."""
        body = textwrap.fill(" ".join(self.doc.split()), width=width - indent - 4,
                             break_long_words=False, break_on_hyphens=False)
        return f"{' ' * indent}{self.name} : {self.type_line}\n" \
            + textwrap.indent(body, " " * (indent + 4)) + "\n"

    @property
    def help(self) -> str:
        """The command line's help: ``cli_help``, else the description's first sentence
        (the whole of a short description of choices, which says what each does), in plain
        text, with the default."""
        text = self.cli_help
        if text is None:
            text = " ".join(self.doc.replace("``", "").split())
            text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text)    # :class:`boostlib.api.Metric`
            if not (self.choices and len(text) <= 200):
                text = re.split(r"(?<=\.)\s", text, maxsplit=1)[0]
        text = text.rstrip(".")
        if self.name != "loss" and "default" not in text:
            shown = "none" if self.default is None else json.dumps(self.default)
            text = f"{text} (default: {shown})"
        return text


def _number(low: float, high: float = np.inf, *, integer: bool = False,
            low_open: bool = False, optional: bool = False) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if not (optional and value is None):
            check_number(name, value, low, high, integer=integer, low_open=low_open)
    return check


#: ``multi_strategy``: a tree per output, or one vector-leaf tree for every output
MULTI_STRATEGIES = ("one_output_per_tree", "multi_output_tree")


def _no_constraint(value: Any) -> bool:
    """Whether a ``monotonic_cst`` value constrains nothing (all zeros, or an empty dict)."""
    if isinstance(value, Mapping):
        return not any(value.values())
    try:
        return not np.any(np.asarray(value, dtype=float))
    except (TypeError, ValueError):
        return False


def _choice(choices: Tuple[str, ...]) -> Callable[[str, Any], None]:
    return lambda name, value: check_choice(name, value, choices)


def _boolean(name: str, value: Any) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}={value!r} is invalid; expected True or False")


def _dict_or_none(name: str, value: Any) -> None:
    if value is not None and not isinstance(value, dict):
        raise TypeError(f"{name}={shown(value)} is invalid; expected a dict or None")


def _n_jobs(name: str, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(
            value, (int, np.integer)) or value == 0 or abs(value) > MAX_N_JOBS):
        raise ValueError(f"{name}={value!r} is invalid; expected None or a non-zero integer "
                         f"in [-{MAX_N_JOBS}, {MAX_N_JOBS}] (negative: all cores but some)")


def _early_stopping(name: str, value: Any) -> None:
    if not (isinstance(value, (bool, np.bool_)) or isinstance(value, str) and value == "auto"):
        raise ValueError(f"{name}={shown(value)} is invalid; expected 'auto', True or False")


def _verbose(name: str, value: Any) -> None:
    if value is not True:
        check_number(name, value, 0, integer=True)


def _plugin_help(kind: str) -> str:
    label = "update rule" if kind == "update" else kind
    return f"registered {label} name (see 'boostlib plugins')"


def _params_help(kind: str) -> str:
    return f"the {kind}'s parameters as a JSON object, e.g. '{{\"name\": value}}'"


#: Every training parameter, in the estimators' order.
PARAMETERS: Tuple[Parameter, ...] = (
    Parameter("n_estimators", None, "int", f"""\
Number of boosting iterations. None (the default): {DEFAULT_ROUNDS}, or {STOPPING_ROUNDS_CAP:,}
when early stopping is on (``early_stopping_rounds``; for the estimators also
``early_stopping``, which is on from 10,000 training rows by default), where the held-out
score decides how many are kept.""",
              _number(1, MAX_TREES, integer=True, optional=True), "int"),
    Parameter("learning_rate", 0.1, "float", "Step size (the coefficient of each SGB tree).",
              _number(0.0, low_open=True), "float"),
    Parameter("max_depth", 6, "int", f"""\
Maximum tree depth: 1 to {MAX_DEPTH}, and at most {MAX_SYMMETRIC_DEPTH} for symmetric trees (a
symmetric tree of depth d has 2**d leaves). For leaf-wise trees, a cap on the depth of any
leaf.""", _number(1, MAX_DEPTH, integer=True), "int"),
    Parameter("grow_policy", "symmetric", '{"symmetric", "depthwise", "lossguide"}', """\
Oblivious trees (one split per level, CatBoost-style), per-node splits level by level, or
leaf-wise trees (LightGBM's: the leaf whose split gains most is split next, up to
``max_leaves`` leaves).""", _choice(GROW_POLICIES), "choice"),
    Parameter("multi_strategy", "one_output_per_tree",
              '{"one_output_per_tree", "multi_output_tree"}', """\
With several outputs (multiclass, multi-target regression, multilabel): one tree per output
each round, each with its own structure (LightGBM's and XGBoost's default), or one tree
whose leaves hold a value per output, its splits chosen by the outputs' summed gains
(CatBoost's ``MultiClass``/``MultiRMSE`` trees, XGBoost's ``multi_output_tree``): a round
then costs about one tree. Vector-leaf trees split on thresholds only (no categorical
features, monotone constraints or ``prune_features``).""",
              _choice(MULTI_STRATEGIES), "choice"),
    Parameter("max_leaves", None, "int", f"""\
Leaves of a leaf-wise tree (``grow_policy="lossguide"`` only; 2 to {MAX_LEAVES}, default
{DEFAULT_MAX_LEAVES}, LightGBM's ``num_leaves``).""",
              _number(2, MAX_LEAVES, integer=True, optional=True), "int"),
    Parameter("prune_features", False, "bool", """\
Leaf-wise trees only: a feature with no split of positive gain in a leaf is not searched
again in that leaf's subtree, as LightGBM does. Faster, and on small data a regulariser;
the trees are then not the exact greedy ones (a child can have a gainful split on a feature
its parent had none on).""", _boolean, "bool"),
    Parameter("max_bins", 255, "int",
              "Bins per feature for non-missing values (2 to 255); NaN has its own bin.",
              _number(2, 255, integer=True), "int"),
    Parameter("min_samples_bin", 1, "int", """\
Fewest of the binning sample's values in a bin of a numeric feature (LightGBM's
``min_data_in_bin``, 3 there): rarer values share a bin with their neighbours. 1 gives every
distinct value its own bin, up to ``max_bins``.""", _number(1, integer=True), "int"),
    Parameter("monotonic_cst", None, "array-like of {-1, 0, 1} or dict", """\
Monotone constraints (scikit-learn's name): per feature, or a dict by feature name or index;
1: predictions never decrease as the feature grows, -1: never increase. Numeric features
only; see ``docs/training_controls.md``.""", None, "value"),
    Parameter("interaction_constraints", None, "list of lists", """\
Groups of features (names or indices) that may appear together on a path from the root
(XGBoost's semantics; depthwise and leaf-wise trees).""", None, "value"),
    Parameter("colsample_bytree", 1.0, "float", """\
Fraction of the features drawn for each tree, from the ``"columns"`` random stream.""",
              _number(0.0, 1.0, low_open=True), "float"),
    Parameter("colsample_bynode", 1.0, "float", """\
Fraction of a tree's features drawn for each node (each level of a symmetric tree), from the
``"columns"`` random stream.""", _number(0.0, 1.0, low_open=True), "float"),
    Parameter("l2_regularization", 1.0, "float",
              "``lambda`` in the gain ``G^2/(H+lambda)`` and in the leaves ``-G/(H+lambda)``.",
              _number(0.0), "float"),
    Parameter("min_samples_leaf", 1, "int", "Minimum rows in a child of a split.",
              _number(1, integer=True), "int"),
    Parameter("min_child_weight", 1e-3, "float", "Minimum hessian sum in a child of a split.",
              _number(0.0), "float"),
    Parameter("max_delta_step", None, "float", """\
Largest ``|value|`` of a Newton leaf, before the learning rate (XGBoost's and LightGBM's
``max_delta_step``): each leaf ``-G/(H+l2)`` is clipped to ``[-max_delta_step,
max_delta_step]``, for every tree kind and each output of a vector leaf. ``0``: no cap.
``None`` (the default): the loss's own ``max_delta_step``, which is ``1.5`` for the log-link
losses ``poisson``, ``gamma`` and ``tweedie`` (whose Newton steps are unbounded where the
predicted mean is far below or above the target; see ``docs/losses.md``) and no cap for the
others. Split gains are not changed.""", _number(0.0, optional=True), "float"),
    Parameter("linear_leaves", False, "bool", """Linear leaves (LightGBM's ``linear_tree``): each leaf adds to its value a ridge regression
on the raw values of the numeric features its path splits on (a symmetric tree's leaves: the
features of all its levels), fitted by a Newton step from the leaf's gradients and hessians;
a row missing one of those features gets the leaf's value. Every tree kind; not with
``multi_strategy="multi_output_tree"``, monotone constraints, losses that renew their leaf
values (``l1``, ``quantile``) or a Dataset read in batches. See
``docs/model_families.md``.""", _boolean, "bool"),
    Parameter("linear_lambda", 0.0, "float", """L2 penalty on the slopes of linear leaves (LightGBM's ``linear_lambda``); the leaf's
constant keeps ``l2_regularization``. Only with ``linear_leaves=True``.""", _number(0.0),
              "float"),
    Parameter("categorical_features", "auto",
              '"auto", list of str or int, or boolean mask', """\
The categorical features. ``"auto"``: a DataFrame's category, object and string columns. A
numeric array's categorical columns hold integer codes ``0 .. 2**20 - 1`` (NaN: missing). A
split on a categorical feature sends a set of categories left (see ``docs/categorical.md``);
categories unseen in training count as missing.""", None, None, scope="estimator"),
    Parameter("cat_smooth", 10.0, "float", """\
Added to a category's hessian sum when categories are ordered by ``G / (H + cat_smooth)``
(shrinks rare categories toward 0).""", _number(0.0), "float"),
    Parameter("cat_l2", 10.0, "float", "Extra ``l2`` in the gains of categorical splits.",
              _number(0.0), "float"),
    Parameter("min_data_per_group", None, "int", """\
Rows a category needs in a node to be placed by its own statistics; rarer ones follow the
right child. Default: 0.5% of the training rows, at least 10 and at most 200 (smaller values
let set splits overfit many-level columns).""", _number(1, integer=True, optional=True),
              "int"),
    Parameter("max_cat_threshold", 32, "int",
              "At most this many categories go left in one split.",
              _number(1, 255, integer=True), "int"),
    Parameter("categorical_encoding", "auto", '{"auto", "sets", "onehot", "target_stats"}',
              """\
How categorical features enter the trees. ``"sets"``: split by sets of categories.
``"onehot"``: a 0/1 column per level for features of at most ``max_cat_to_onehot`` levels (one
level against the rest), sets for the others. ``"target_stats"``: CatBoost's ordered target
statistics (the category's mean target over the rows before each row in a random
permutation, with a prior; per class for ``multiclass``) and its frequency, as numeric
columns. ``"auto"`` (the default): chosen per feature from its number of levels and how many
of its rows fall in levels too rare for set splits (see ``docs/categorical.md``); set splits
in distributed training and for a Dataset read in batches. A continued model keeps its
encoding.""", _choice(ENCODINGS), "choice"),
    Parameter("max_cat_to_onehot", 4, "int", """\
Most levels a feature may have to be one-hot encoded (``categorical_encoding="onehot"`` or
``"auto"``).""", _number(1, 255, integer=True), "int"),
    Parameter("leaf_estimation", "newton", '{"newton", "gradient"}', """\
``"newton"``: leaves ``-G/(H+l2)``. ``"gradient"``: hessians replaced by the row weights,
leaves ``-G/(W+l2)`` (the SGLB paper's leaf averaging).""", _choice(LEAF_ESTIMATIONS),
              "choice"),
    Parameter("random_strength", 0.0, "float", """\
Gaussian noise on split scores: std ``random_strength * RMS(g) / (1 + e^{t lr}/N)`` at
iteration ``t`` (CatBoost's schedule, SGLB supplement B).""", _number(0.0), "float"),
    Parameter("loss", None, "str or Loss", """\
A registered loss name, an instance of :class:`boostlib.api.Loss`, or a function ``(y_true,
raw) -> (gradient, hessian)`` (a custom objective, as LightGBM's and XGBoost's; its optional
attributes ``init_raw(y, sample_weight)`` and ``loss(y_true, raw)`` give the starting score,
0 by default, and the pointwise loss; see ``docs/losses.md``). ``None``: ``"mse"`` for
:class:`~boostlib.BoostRegressor`, ``"logloss"`` for two classes and ``"multiclass"``
(softmax cross-entropy, one raw score per class) for more for
:class:`~boostlib.BoostClassifier`, ``"lambdarank"`` for :class:`~boostlib.BoostRanker`. See
``boostlib plugins`` for the registered losses (``"sla"``, ``"poisson"``, ...).""", None, "name",
              _plugin_help("loss") + ", default: logloss for two classes, multiclass for "
              "more, mse for regression"),
    Parameter("loss_params", None, "dict", """\
Keyword arguments of the loss, e.g. ``{"scale": 0.1}`` for ``"sla"``.""", _dict_or_none,
              "object", _params_help("loss")),
    Parameter("sampler", None, "str or Sampler", """\
Row sampler: ``"uniform"`` (Bernoulli, weight 1), ``"goss"`` (LightGBM's gradient-based
one-side sampling), ``"mvs"`` (CatBoost's Minimal Variance Sampling), a registered plugin's
name or an instance. With ``None`` and ``subsample < 1``, ``"uniform"`` is used. See
``docs/samplers.md``.""", None, "name", _plugin_help("sampler")),
    Parameter("subsample", 1.0, "float", """\
Fraction of rows each tree is fitted on, in (0, 1]; 1 means no sampling (the same model as
``sampler=None``). Ignored when ``sampler`` is an instance.""",
              _number(0.0, 1.0, low_open=True), "float"),
    Parameter("sampler_params", None, "dict", """\
Keyword arguments of the sampler, e.g. ``{"leaf_values": "all"}`` (leaf values on every row,
the sample choosing only the structure, as CatBoost does), GOSS's ``top_rate``,
``other_rate``, ``score`` and ``warmup``, MVS's ``mvs_reg``. Given without a sampler
(``sampler=None`` and ``subsample=1``), non-empty ones are an error: no sampler would receive
them.""", _dict_or_none, "object",
              _params_help("sampler")),
    Parameter("update", "sgb", "str or UpdateRule", """\
The update rule (what one iteration does): a registered name or an instance of
:class:`boostlib.api.UpdateRule`.""", None, "name", _plugin_help("update")),
    Parameter("update_params", None, "dict", "Keyword arguments of the update rule.",
              _dict_or_none, "object", _params_help("update")),
    Parameter("early_stopping_rounds", None, "int", """\
Stop when the primary score (the first ``eval_metric``, else the loss) on the last eval set
has not improved for this many iterations; the model is truncated to the best iteration.""",
              _number(1, integer=True, optional=True), "int",
              "stop when the score on the held-out rows (needs --eval-fraction) has not "
              "improved for N iterations, and keep the model of the best iteration"),
    Parameter("eval_metric", None, "str, Metric or list of them", """\
Evaluation metrics recorded on every eval set after every iteration, in ``evals_result_``
(registered names such as ``"auc"``, ``"rmse"``, ``"multi_logloss"``: see ``boostlib
plugins``; :class:`boostlib.api.Metric` instances; or functions ``(y_true, y_pred,
sample_weight) -> float`` of the response, lower is better unless the function's
``higher_is_better`` or ``greater_is_better`` attribute is True). The first one drives early
stopping and ``best_iteration_``.""", lambda name, value: metric_specs(value), "names",
              "comma-separated registered metric names (see 'boostlib plugins'), e.g. auc or "
              "auc,logloss, recorded on the --eval-fraction rows every iteration; the first "
              "one drives --early-stopping-rounds"),
    Parameter("random_state", None, "int, numpy Generator or RandomState", """\
Seeds every random stream; the same value gives bit-identical models whatever ``n_jobs``.
``None`` (the default) draws a fresh seed from the operating system on every fit, so fits
that use randomness (a ``sampler`` or ``subsample < 1``, ``random_strength > 0``,
``update="sglb"``, binning more than 200,000 rows) are **not reproducible**: pass an int for
the same model every time.""", None, "int",
              "seed of every random stream and of the --eval-fraction rows: the same N gives "
              "the same model, bit for bit. Without it, a fit that uses randomness (a sampler "
              "or --subsample below 1, --random-strength, --update sglb, more than 200,000 "
              "rows to bin) differs from run to run, and the held-out rows are drawn with "
              "seed 0"),
    Parameter("n_jobs", None, "int", """\
Threads for the kernels (None: all cores; negative counts back from all cores). The cores
are those the process may use: the fewest of its CPU affinity mask, its control group's CPU
quota (a container's ``--cpus``, a Kubernetes CPU limit) and the machine's cores;
``OMP_NUM_THREADS`` caps the default. With None, a fit also leaves out the cores other
processes keep busy, looking when it starts and every second after (beside a busy process,
fewer threads run far faster than threads waiting on each other; the model is the same).
In a process forked after boostlib was imported, one thread (with a warning): OpenMP
threads hang after a fork; see ``docs/estimators.md``.""",
              _n_jobs, "int"),
    Parameter("verbose", 0, "bool or int", """\
``True``: show the progress of the fit on stderr with the current losses and metrics (a tqdm
bar when tqdm is installed, otherwise a log line every tenth of the iterations); an int
``N > 0``: a log line every ``N`` iterations.""", _verbose, "value"),
    Parameter("warm_start", False, "bool", """\
Let ``fit`` on a fitted estimator add iterations to its model instead of fitting a new one
(scikit-learn's warm start): ``fit`` again with a larger ``n_estimators`` runs ``n_estimators
- model_.n_iterations`` more iterations, whose trees are appended to the model's (started
from its raw scores, binned with its borders); the same ``n_estimators`` fits nothing, a
smaller one is an error. ``loss``, ``loss_params``, ``grow_policy``, ``max_bins`` and
``min_samples_bin`` cannot change (an error names the one that did); other changed
parameters apply to the new trees. With the same data and parameters, fitting ``n`` then
``n + m`` iterations gives the model a fit of ``n + m`` gives (bit for bit for
``update="sgb"``, also with sampling and an int ``random_state``). See
``docs/training_controls.md`` for the update rules with state and ``evals_result_``.""",
              _boolean, None, scope="estimator"),
    Parameter("early_stopping", "auto", '"auto" or bool', """\
Stop when the score on held-out rows stops improving, as scikit-learn's
``HistGradientBoosting*``: ``True`` holds out ``validation_fraction`` of the training rows
when ``fit`` gets no ``eval_set`` (per class for a classifier, whole queries for a
ranker, drawn with ``random_state``), and stops after ``early_stopping_rounds`` (or
``n_iter_no_change``; default 10, or 50 with ``n_estimators=None``, which then runs up to
1,000 iterations) iterations without improvement. ``"auto"`` (the default): ``True`` for at
least 10,000 training rows. ``False``: only when ``early_stopping_rounds`` is given
(held-out rows are then split off too when there is no ``eval_set``).""",
              _early_stopping, None, scope="estimator"),
    Parameter("validation_fraction", 0.1, "float", """\
Fraction of the training rows held out for early stopping when ``fit`` gets no
``eval_set`` (see ``early_stopping``).""", _number(0.0, 1.0, low_open=True), None,
              scope="estimator"),
    Parameter("n_iter_no_change", None, "int", """\
scikit-learn's name for ``early_stopping_rounds`` (give one of them).""",
              _number(1, integer=True, optional=True), None, scope="estimator"),
    Parameter("importance_type", "gain", '{"gain", "split", "total_gain", "cover"}', """\
What ``feature_importances_`` (and :func:`boostlib.plotting.plot_importance`) measure:
``"gain"``, the total split gain of each feature normalised to sum to 1; ``"total_gain"``,
the same unnormalised (LightGBM's ``gain``); ``"split"``, the number of splits on it
(LightGBM's ``split``); ``"cover"``, the mean number of training rows reaching its splits.
Every output's trees count; a symmetric tree's level is one split.""",
              check_importance_type, None, scope="estimator"),
    Parameter("class_weight", None, '"balanced" or dict', """\
Weights of the classes, multiplying ``sample_weight`` (both given: their product), as
scikit-learn and LightGBM do. ``"balanced"``: ``n_samples / (n_classes * np.bincount(y))``,
counted on the ``y`` of each fit (scikit-learn's ``compute_sample_weight("balanced", y)``).
A dict ``{label: weight}`` keyed by the original labels (as in ``classes_``); classes left
out weigh 1; weights are finite and > 0. ``None`` (the default): every class weighs 1.
Validation sets (``eval_set``) are not reweighted (LightGBM's choice): pass
``eval_sample_weight`` for that. See ``docs/training_controls.md``.""",
              lambda name, value: check_class_weight(value), None, scope="classifier"),
)

#: The parameters of :func:`boostlib.train` (those of scope ``"train"``).
TRAINING: Tuple[Parameter, ...] = tuple(p for p in PARAMETERS if p.scope == "train")

#: Every training parameter with its default (what :func:`resolve` fills in).
DEFAULTS: Dict[str, Any] = {p.name: p.default for p in TRAINING}


def parameters_of(*scopes: str) -> Tuple[Parameter, ...]:
    """The parameters of the given scopes (:data:`SCOPES`), in table order."""
    return tuple(p for p in PARAMETERS if p.scope in scopes)


def n_rounds(n_estimators: Optional[int], stopping: bool) -> int:
    """The iterations a fit runs: ``n_estimators``, or for None :data:`DEFAULT_ROUNDS`
    (:data:`STOPPING_ROUNDS_CAP` when early stopping is on)."""
    if n_estimators is None:
        return STOPPING_ROUNDS_CAP if stopping else DEFAULT_ROUNDS
    return int(n_estimators)


def resolve(params: Mapping[str, Any]) -> Dict[str, Any]:
    """``params`` over the defaults, validated.

    Raises
    ------
    TypeError, ValueError
        An unknown name (the message lists the known ones) or a value out of range (the
        message names the parameter, the value and what was expected).
    """
    if not isinstance(params, Mapping):
        raise TypeError(f"params={params!r} is invalid; expected a dict of training "
                        "parameters")
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown training parameter(s) {unknown}; expected names among "
                         f"{sorted(DEFAULTS)}")
    p = {**DEFAULTS, **params}
    for parameter in TRAINING:
        if parameter.check is not None:
            parameter.check(parameter.name, p[parameter.name])
    p["n_estimators"] = n_rounds(p["n_estimators"], p["early_stopping_rounds"] is not None)
    if p["grow_policy"] == "symmetric" and p["max_depth"] > MAX_SYMMETRIC_DEPTH:
        raise ValueError(f"max_depth={p['max_depth']!r} is too deep for symmetric trees; "
                         f"expected at most {MAX_SYMMETRIC_DEPTH} (a symmetric tree of depth d "
                         "has 2**d leaves)")
    if p["max_leaves"] is not None and p["grow_policy"] != "lossguide":
        raise ValueError(f"max_leaves={p['max_leaves']!r} is for grow_policy='lossguide' "
                         f"(leaf-wise trees); grow_policy={p['grow_policy']!r} trees are "
                         "limited by max_depth: leave max_leaves=None")
    if p["prune_features"] and p["grow_policy"] != "lossguide":
        raise ValueError(f"prune_features=True is for grow_policy='lossguide' (leaf-wise "
                         f"trees); grow_policy={p['grow_policy']!r} trees search every "
                         "feature in every node: leave prune_features=False")
    if p["interaction_constraints"] is not None and p["grow_policy"] == "symmetric":
        raise ValueError("interaction_constraints need grow_policy='depthwise' or "
                         "'lossguide': a symmetric tree shares each level's split among all "
                         "its leaves, so every path uses the same features")
    if p["multi_strategy"] == "multi_output_tree":
        for name, unset in (("monotonic_cst", None), ("prune_features", False)):
            if p[name] is not unset and not (name == "monotonic_cst" and _no_constraint(
                    p[name])):
                raise ValueError(f"{name}={p[name]!r} is not supported with multi_strategy="
                                 "'multi_output_tree' (vector-leaf trees split on thresholds "
                                 "without constraints); use multi_strategy="
                                 "'one_output_per_tree'")
    if p["linear_leaves"]:
        if p["multi_strategy"] == "multi_output_tree":
            raise ValueError("linear_leaves=True is not supported with multi_strategy="
                             "'multi_output_tree'; use multi_strategy='one_output_per_tree'")
        if p["monotonic_cst"] is not None and not _no_constraint(p["monotonic_cst"]):
            raise ValueError(f"linear_leaves=True cannot keep monotonic_cst="
                             f"{p['monotonic_cst']!r}: a leaf's slopes may run against "
                             "them; expected one of the two")
    elif p["linear_lambda"] != 0.0:
        raise ValueError(f"linear_lambda={p['linear_lambda']!r} has no linear leaves to "
                         "regularise; set linear_leaves=True too (or leave linear_lambda=0)")
    if p["l2_regularization"] == 0 and p["min_child_weight"] == 0:
        raise ValueError("l2_regularization and min_child_weight cannot both be 0 (leaf "
                         "values -G/(H+l2) would divide by zero)")
    return p


def check_orphaned_params(p: Mapping[str, Any]) -> None:
    """Refuse parameter dicts that no component would receive: ``sampler_params`` (non-empty)
    with ``sampler=None`` and ``subsample=1``, where rows are not sampled. (``loss_params``
    and ``update_params`` always reach their component, which refuses unknown keys; so do
    ``sampler_params`` given with a sampler.)

    Separate from :func:`resolve`, which the model-file loader also runs: files written
    before this check may hold such dicts, and they still load.

    Parameters
    ----------
    p : mapping
        Resolved parameters (:func:`resolve`).

    Raises
    ------
    ValueError
        Naming ``sampler_params`` and what it needs.
    """
    if p["sampler_params"] and p["sampler"] is None and p["subsample"] >= 1.0:
        raise ValueError(f"sampler_params={shown(p['sampler_params'])} has no sampler to go "
                         "to: with sampler=None and subsample=1.0 rows are not sampled; "
                         "expected sampler=NAME too (or subsample below 1, which samples "
                         "with 'uniform')")


def check_model_size(p: Mapping[str, Any], n_outputs: int, n_rows: int, categorical: bool,
                     update: Any, init_ensemble: Optional[Any] = None) -> None:
    """Refuse, before training starts, parameters that allow a model larger than a model
    file holds: more than :data:`MAX_TREES` trees, or trees of more than
    :data:`MAX_TREE_BYTES`, counting every tree at the largest size the parameters allow.

    Parameters
    ----------
    p : mapping
        The parameters, as :func:`resolve` gives them.
    n_outputs : int
        The loss's number of outputs (each term has a tree per output).
    n_rows : int
        Training rows: a depthwise or leaf-wise tree has at most one leaf per
        ``min_samples_leaf`` of them.
    categorical : bool
        Whether the data has categorical features (a categorical split stores a set).
    update : UpdateRule
        The update rule; an iteration adds at most its ``trees_per_iteration`` terms.
    init_ensemble : Ensemble, optional
        The model training continues (``init_model``), whose trees count as they are.

    Raises
    ------
    ValueError
        Naming the parameters, what they allow and the limit.
    """
    per_iteration = int(getattr(update, "trees_per_iteration", 1))
    n_new = p["n_estimators"] * per_iteration * n_outputs
    before = [] if init_ensemble is None else [
        s for t in init_ensemble.trees for s in (t.trees if isinstance(t, TreeGroup) else [t])]
    given = f"n_estimators={p['n_estimators']}" \
        + (f" x {per_iteration} trees per iteration (update rule "
           f"{getattr(update, 'name', '') or type(update).__name__!r})"
           if per_iteration > 1 else "") \
        + (f" x {n_outputs} outputs" if n_outputs > 1 else "")
    if len(before) + n_new > MAX_TREES:
        raise ValueError(f"{given} would give {len(before) + n_new} trees"
                         + (f" (init_model has {len(before)})" if before else "")
                         + f"; a model holds at most MAX_TREES = {MAX_TREES}: lower "
                           "n_estimators")
    policy, depth = p["grow_policy"], p["max_depth"]
    kind = kind_of(policy)
    msl = p["min_samples_leaf"]
    leaves = min(1 << depth, max(1, n_rows // msl))      # a leaf holds min_samples_leaf rows
    shape = f"max_depth={depth}: {1 << depth} leaves"
    advice = "n_estimators or max_depth"
    if policy != "symmetric":
        max_leaves = p["max_leaves"] or DEFAULT_MAX_LEAVES
        if policy == "lossguide":
            leaves = min(leaves, max_leaves)
        shape = (f"max_leaves={max_leaves}, " if policy == "lossguide" else "") \
            + f"max_depth={depth}, min_samples_leaf={msl} of {n_rows} rows: up to " \
              f"{leaves} leaves"
        advice = ("n_estimators, max_leaves or max_depth" if policy == "lossguide" else
                  "n_estimators or max_depth") + ", or raise min_samples_leaf"
    per_tree = kind.max_tree_bytes(depth, leaves, categorical, bool(p["linear_leaves"]))
    total = sum(kind_of(t.policy).tree_bytes(t) for t in before) + n_new * per_tree
    if total > MAX_TREE_BYTES:
        raise ValueError(f"{given} {policy} trees ({shape}, {per_tree / 2**20:.3g} MiB each) "
                         f"could take {total / 2**20:.4g} MiB"
                         + (" with init_model's trees" if before else "")
                         + ", more than a model file "
                         f"holds (MAX_TREE_BYTES = {MAX_TREE_BYTES >> 20} MiB of trees): "
                         f"lower {advice}")


def max_delta_step(value: Any, loss: Any) -> float:
    """The cap on ``|leaf value|`` a fit uses: the parameter ``max_delta_step``, or when it
    is None the loss's ``max_delta_step`` attribute (None or 0: no cap); 0 means no cap.

    Raises
    ------
    ValueError
        When the loss declares a cap that is not a number ``>= 0``.
    """
    if value is not None:
        return float(value)
    declared = getattr(loss, "max_delta_step", None)
    if declared is None:
        return 0.0
    if (isinstance(declared, (bool, np.bool_)) or not isinstance(declared, (int, float))
            or not (declared >= 0 and np.isfinite(declared))):
        raise ValueError(f"loss {getattr(loss, 'name', type(loss).__name__)!r} declares "
                         f"max_delta_step={declared!r}; expected None or a finite number "
                         ">= 0")
    return float(declared)
