"""Mutated model files: every file either loads into a sound model or is refused cleanly.

The base documents are small models (at most 10 trees of depth 3 over 16 bins, so a load
takes about a millisecond) of every shape a model file holds: classifiers and regressors,
symmetric and depthwise trees, three and four classes, string and object class labels,
categorical features (pandas labels and integer codes), SGLB models with a scale history,
AGBM (none), a loss with parameters (``sla``), a validation curve with early stopping, a
bare engine model (``estimator`` null) and the older format versions 1, 2, 4 and 5 (bin
borders as an array per feature, not binary blocks; in 1 to 4 the trees' arrays as JSON
arrays too). They are trained once per session (:func:`base_documents`) and mutated at two
levels:

* **JSON**: a value replaced by a hostile one (huge, tiny or negative integers, ``1e308``,
  ``-0.0``, ``5e-324``, ``NaN`` / ``Infinity`` tokens, numbers no double holds, strings,
  lists, objects, null, booleans), nudged (``+-1``, times a power of ten, the next
  double), deleted; keys added, renamed or duplicated; list entries swapped, duplicated,
  dropped or truncated; values copied over others or nested shallowly or very deeply; and
  whole fields (every leaf value, every scale factor, ...) filled with an extreme or
  scaled. Paths are drawn field by field (:func:`field_groups`), so small fields are
  mutated as often as the large ones. The trees' and borders' binary blocks are mutated as
  strings, or (half the time) as the arrays they hold, written back as blocks where they
  can (:func:`_as_blocks`);
* **bytes**: the serialized file truncated, with bits flipped, bytes inserted or deleted
  (invalid UTF-8, surrogates, a BOM), or re-encoded as UTF-16.

The property (:func:`check_model_file`): reading a mutated file from text, bytes or a file
(``loads``, ``load_model``, ``Model.load`` for a file that names no estimator) allocates at
most 20 times the file's size plus 4 MiB (:func:`_read_measured`), and either raises
:class:`boostlib.ModelFileError` and nothing else, or gives a model that

* predicts (``predict``, ``predict_proba``, ``decision_function``,
  ``predict_virtual_ensembles`` when it has a scale history and enough trees, a DataFrame
  of labels for a model trained on labelled categories, ``feature_importances_``) arrays
  of the right shape, all finite, probabilities in ``[0, 1]`` summing to 1;
* loads deterministically: a second load predicts bit-identically (and ``Model.load`` of
  an estimator's file predicts what the estimator predicts);
* saves: re-saving it (``dumps``, or ``save_model`` / ``Model.save`` to a file) gives a
  file that loads back and predicts bit-identically, and that saves to the same text.

:func:`test_mutated_model_files` runs ``DEFAULT_EXAMPLES`` mutations (about 5 ms each),
:func:`test_mutated_model_files_nightly` (marker ``nightly``) ``NIGHTLY_EXAMPLES``. The
tests at the end probe the loader's resource limits: files with a very long validation
curve, very many trees or outputs, a very deep tree or megabytes of padding are loaded in
a child process limited in time and memory (:func:`load_isolated`), and extreme factors of
a scale history in-process. Each is refused by the documented limit it exceeds
(``docs/reliability.md``), or loads with sound outputs, in bounded time and memory; the
cost of each is printed (``pytest -s``).
"""
from __future__ import annotations

import base64
import copy
import functools
import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import tracemalloc
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from boostlib import (BoostClassifier, BoostRegressor, Dataset, Model, ModelFileError,
                      load_model, train)
from boostlib.frontend.estimator_files import dumps, estimator_from_parts, loads
from boostlib.io import model_files

from model_documents import FIELD_DTYPES, as_lists, border_blocks, encode, with_lists

from .budget import DEFAULT_EXAMPLES, NIGHTLY_EXAMPLES

# -- base documents ------------------------------------------------------------------------
N_ROWS = 200
N_PROBE = 20
#: small models: at most 10 trees of depth <= 3 over 16 bins, so that a load takes ~1 ms
SMALL = dict(n_estimators=6, max_depth=3, max_bins=16, random_state=0, n_jobs=1)


def _training_data() -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N_ROWS, 4))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) + 0.3 * rng.normal(size=N_ROWS)
    codes = rng.integers(0, 5, N_ROWS).astype(np.float64)
    return X, y, codes


def _v1(doc: Dict[str, Any]) -> Dict[str, Any]:
    """A version 1 document of a single-output estimator document (same model)."""
    doc = with_lists(doc, 1)
    del doc["model"]["n_outputs"], doc["bins"]["categorical"]
    for tree in doc["model"]["trees"]:
        del tree["cat_sets"], tree["cover"]
    return doc


def _v2(doc: Dict[str, Any]) -> Dict[str, Any]:
    """A version 2 document of a document without categorical features (same model)."""
    doc = with_lists(doc, 2)
    del doc["bins"]["categorical"]
    for term in doc["model"]["trees"]:
        for tree in term.get("outputs", [term]):
            del tree["cat_sets"], tree["cover"]
    return doc


BASE_NAMES = ("binary_symmetric", "binary_depthwise_eval", "regressor_symmetric",
              "regressor_depthwise", "three_strings_depthwise", "four_objects_symmetric",
              "sglb_regressor", "sglb_classifier_depthwise", "agbm_regressor",
              "sla_classifier", "string_labels_binary", "categorical_pandas",
              "categorical_encoded",
              "categorical_codes_depthwise", "engine_model", "version1_binary",
              "version2_three", "version4_categorical_codes", "version4_four_objects",
              "version5_three_depthwise")


@functools.lru_cache(maxsize=None)
def base_documents() -> Dict[str, str]:
    """The base model files (JSON text) by name, trained once per session."""
    import pandas as pd

    X, y, codes = _training_data()
    binary = (y > 0).astype(int)
    three = np.digitize(y, [-0.5, 0.5])
    four = np.digitize(y, [-1.0, 0.0, 1.0])
    valid = [(X[:50], binary[:50])]
    sglb = dict(update="sglb", update_params={"model_shrink_rate": 0.3,
                                              "diffusion_temperature": 10.0})
    estimators = {
        "binary_symmetric": BoostClassifier(**SMALL).fit(X, binary),
        "binary_depthwise_eval": BoostClassifier(
            **{**SMALL, "n_estimators": 10}, grow_policy="depthwise",
            early_stopping_rounds=3).fit(X, binary, eval_set=valid),
        "regressor_symmetric": BoostRegressor(**SMALL).fit(X, y),
        "regressor_depthwise": BoostRegressor(**SMALL, grow_policy="depthwise").fit(X, y),
        "three_strings_depthwise": BoostClassifier(**SMALL, grow_policy="depthwise").fit(
            X, np.array(["ant", "bee", "cat"])[three]),
        "four_objects_symmetric": BoostClassifier(**{**SMALL, "n_estimators": 4}).fit(
            X, np.array(["w", "x", "y", "z"], dtype=object)[four]),
        "sglb_regressor": BoostRegressor(**{**SMALL, "n_estimators": 10}, **sglb).fit(X, y),
        "sglb_classifier_depthwise": BoostClassifier(
            **{**SMALL, "n_estimators": 8}, grow_policy="depthwise", **sglb).fit(X, binary),
        "agbm_regressor": BoostRegressor(**SMALL, update="agbm").fit(X, y),
        "sla_classifier": BoostClassifier(**SMALL, loss="sla",
                                          loss_params={"scale": 0.5}).fit(X, binary),
        "string_labels_binary": BoostClassifier(**SMALL).fit(
            X, np.array(["no", "yes"])[binary]),
    }
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    frame["c"] = pd.Categorical(np.array(["x", "y", "z"])[codes.astype(int) % 3])
    estimators["categorical_pandas"] = BoostClassifier(**SMALL, categorical_encoding="sets").fit(
        frame, binary ^ (frame["c"] == "y").to_numpy())
    # "auto": c (3 levels) one-hot, k (80 levels of about 2.5 rows each) target statistics
    encoded = frame.copy()
    encoded["k"] = pd.Categorical([f"k{v}" for v in (codes * 16 + np.arange(N_ROWS) % 16)
                                   .astype(int)])
    estimators["categorical_encoded"] = BoostClassifier(**SMALL).fit(
        encoded, binary ^ (frame["c"] == "y").to_numpy())
    assert estimators["categorical_encoded"].model_.encoder.kinds == \
        ["numeric", "numeric", "onehot", "numeric", "target_stats"]
    coded = X.copy()
    coded[:, 3] = codes
    estimators["categorical_codes_depthwise"] = BoostRegressor(
        **SMALL, grow_policy="depthwise", categorical_features=[3]).fit(
            coded, y + 2.0 * (codes == 2))
    docs = {name: dumps(est) for name, est in estimators.items()}
    engine = train({**SMALL, "grow_policy": "depthwise"},
                   Dataset(X, y, feature_names=["p", "q", "r", "s"]))
    docs["engine_model"] = model_files.encode(model_files.model_document(engine))
    docs["version1_binary"] = json.dumps(_v1(json.loads(docs["binary_symmetric"])))
    docs["version2_three"] = json.dumps(_v2(json.loads(docs["three_strings_depthwise"])))
    docs["version4_categorical_codes"] = json.dumps(
        with_lists(json.loads(docs["categorical_codes_depthwise"])))
    docs["version4_four_objects"] = json.dumps(
        with_lists(json.loads(docs["four_objects_symmetric"])))
    docs["version5_three_depthwise"] = json.dumps(
        with_lists(json.loads(docs["three_strings_depthwise"]), 5))
    assert sorted(docs) == sorted(BASE_NAMES)
    return docs


# -- the property ----------------------------------------------------------------------------
_PROBE_RNG_SEED = 11


@functools.lru_cache(maxsize=256)
def _numeric_probe(n_features: int) -> np.ndarray:
    """``N_PROBE`` rows: ordinary values, NaN, zeros of both signs, huge and tiny values."""
    rng = np.random.default_rng(_PROBE_RNG_SEED)
    X = 2.0 * rng.normal(size=(N_PROBE, n_features))
    X[rng.random(X.shape) < 0.1] = np.nan
    X[0], X[1], X[2], X[3] = np.nan, 0.0, -0.0, 5e-324
    X[4], X[5] = 1e300, -1e300
    X.setflags(write=False)
    return X


def probe_rows(model: Model) -> np.ndarray:
    """Rows every model of ``model``'s shape must predict: numeric columns from
    :func:`_numeric_probe`, categorical ones as codes seen in training and beyond."""
    X = np.array(_numeric_probe(model.n_features))
    for f, (known, _) in _categorical_inputs(model).items():
        top = float(known.max()) if known.size else 0.0
        pool = np.array([0.0, 1.0, 2.0, 3.0, top, min(top + 1, 2.0 ** 20 - 1), np.nan])
        X[:, f] = pool[np.arange(N_PROBE) % pool.size]
    return X


def _categorical_inputs(model: Model) -> Dict[int, Tuple[np.ndarray, Any]]:
    """Per categorical feature of the model's input: the codes seen in training (float64)
    and the levels (None for codes). The encoder knows them for an encoded model (its trees
    read the encoded columns, which the mapper bins), else the mapper."""
    mapper, encoder = model.ensemble.bin_mapper, model.encoder
    if encoder is None:
        return {int(f): (np.asarray(mapper.cat_codes_[f], dtype=np.float64), mapper.levels_[f])
                for f in np.flatnonzero(mapper.categorical_)}
    out = {}
    for f, kind in enumerate(encoder.kinds):
        if kind in ("onehot", "target_stats"):
            out[f] = (np.asarray(encoder.codes[f], dtype=np.float64), encoder.levels[f])
        elif kind == "sets":
            column = int(np.flatnonzero(encoder.source == f)[0])
            out[f] = (np.asarray(mapper.cat_codes_[column], dtype=np.float64),
                      encoder.levels[f])
    return out


def _frame_probe(est: Any, X: np.ndarray) -> Optional[Any]:
    """``X`` as a DataFrame whose categorical columns hold the model's labels (for a model
    trained on labelled categories), else None."""
    inputs = _categorical_inputs(est.model_)
    labelled = [f for f, (_, levels) in inputs.items() if levels is not None]
    names = getattr(est, "feature_names_in_", None)
    if not labelled or names is None:
        return None
    import pandas as pd

    frame = pd.DataFrame({name: X[:, j] for j, name in enumerate(names.tolist())})
    for f in labelled:
        levels = list(inputs[f][1]) + ["never-seen", None]
        frame[names[f]] = pd.Series([levels[i % len(levels)] for i in range(N_PROBE)],
                                    dtype=object)
    return frame


def _finite(name: str, out: np.ndarray, shape: Tuple[int, ...]) -> np.ndarray:
    out = np.asarray(out)
    assert out.shape == shape, f"{name}: shape {out.shape}, expected {shape}"
    assert out.dtype.kind == "f", f"{name}: dtype {out.dtype}"
    assert np.all(np.isfinite(out)), f"{name}: non-finite values {out[~np.isfinite(out)][:5]}"
    return out


def _probabilities(name: str, p: np.ndarray, axis: Optional[int]) -> None:
    assert np.all((p >= 0.0) & (p <= 1.0)), f"{name}: probabilities outside [0, 1]"
    if axis is not None:
        sums = p.sum(axis=axis)
        assert np.allclose(sums, 1.0, rtol=0, atol=1e-9), f"{name}: rows sum to {sums[:5]}"


def _n_members(model: Model) -> int:
    """Members of the virtual-ensemble check (0: the model has no scale history or too few
    trees)."""
    if model.ensemble.scale_history is None:
        return 0
    return min(3, model.n_trees // 2)


def model_outputs(obj: Any) -> Dict[str, np.ndarray]:
    """Every prediction of a loaded estimator or engine model on its probe rows, checked
    for shape, finiteness and probabilities in [0, 1] (raises AssertionError)."""
    model = obj if isinstance(obj, Model) else obj.model_
    X = probe_rows(model)
    n, k = X.shape[0], model.n_outputs
    members = _n_members(model)
    out: Dict[str, np.ndarray] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # feature names, overflow in exp, ...
        if isinstance(obj, Model):
            classify = bool(model.loss.is_classification)
            raw_shape = (n,) if k == 1 else (n, k)
            out["raw"] = _finite("predict(raw=True)", obj.predict(X, raw=True), raw_shape)
            out["predict"] = _finite("predict", obj.predict(X), raw_shape)
            if classify:
                _probabilities("predict", out["predict"], None if k == 1 else 1)
            if members:
                shape = (n, members) if k == 1 else (n, k, members)
                v = obj.predict_virtual_ensembles(X, members)
                out["virtual"] = _finite("predict_virtual_ensembles", v, shape)
                if classify:
                    _probabilities("predict_virtual_ensembles", v, None if k == 1 else 1)
            importances = obj.feature_importance()
        elif isinstance(obj, BoostClassifier):
            n_classes = obj.classes_.size
            raw_shape = (n,) if k == 1 else (n, k)
            out["decision"] = _finite("decision_function", obj.decision_function(X), raw_shape)
            proba = _finite("predict_proba", obj.predict_proba(X), (n, n_classes))
            _probabilities("predict_proba", proba, 1)
            out["proba"] = proba
            labels = obj.predict(X)
            assert labels.shape == (n,) and np.all(np.isin(labels, obj.classes_)), "predict"
            out["labels"] = labels
            if members:
                shape = (n, members) if k == 1 else (n, k, members)
                v = obj.predict_virtual_ensembles(X, members)
                out["virtual"] = _finite("predict_virtual_ensembles", v, shape)
                _probabilities("predict_virtual_ensembles", v, None if k == 1 else 1)
            frame = _frame_probe(obj, X)
            if frame is not None:
                proba = _finite("predict_proba(DataFrame)", obj.predict_proba(frame),
                                (n, n_classes))
                _probabilities("predict_proba(DataFrame)", proba, 1)
                out["frame"] = proba
            importances = obj.feature_importances_
        else:
            out["predict"] = _finite("predict", obj.predict(X), (n,))
            if members:
                v = obj.predict_virtual_ensembles(X, members)
                out["virtual"] = _finite("predict_virtual_ensembles", v, (n, members))
            frame = _frame_probe(obj, X)
            if frame is not None:
                out["frame"] = _finite("predict(DataFrame)", obj.predict(frame), (n,))
            importances = obj.feature_importances_
    imp = _finite("feature_importances_", importances, (model.n_features,))
    assert np.all(imp >= 0) and (imp.sum() == 0 or abs(imp.sum() - 1) < 1e-9), \
        f"feature_importances_ {imp}"
    out["importances"] = imp
    return out


def assert_identical(a: Dict[str, np.ndarray], b: Dict[str, np.ndarray], what: str) -> None:
    """Same outputs, bit for bit (dtype, shape and bytes; labels by value)."""
    assert a.keys() == b.keys(), f"{what}: outputs {sorted(a)} != {sorted(b)}"
    for key in a:
        x, y = np.asarray(a[key]), np.asarray(b[key])
        same = x.dtype == y.dtype and x.shape == y.shape and (
            x.tobytes() == y.tobytes() if x.dtype.kind in "biuf" else bool(np.all(x == y)))
        assert same, f"{what}: {key} differs"


def _document_text(obj: Any) -> str:
    """The model file of a loaded estimator or engine model (the writer's text)."""
    if isinstance(obj, Model):
        return model_files.encode(model_files.model_document(obj))
    return dumps(obj)


def _from_parts(parts: model_files.ModelParts) -> Any:
    """The estimator of a validated file, as ``loads`` / ``load_model`` build it, or the
    engine model of a file that names no estimator, as ``Model.load`` builds it."""
    if parts.estimator is None:
        return Model.from_parts(parts)
    return estimator_from_parts(parts)


def _read(data: Any, path: Optional[str]) -> Any:
    """Load ``data`` (text or bytes) from memory, or from a file written at ``path``."""
    if path is None:
        return _from_parts(model_files.parse(data))
    with open(path, "wb") as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    return _from_parts(model_files.read(path))


#: A load may allocate at most this many times the file's size ...
LOAD_MEMORY_FACTOR = 20
#: ... plus this many bytes: the lookup table of a categorical feature takes a byte per
#: code up to its largest (up to 1 MiB, from a few bytes of file), and a first load fills
#: caches. Over 2,000 mutated files the largest excess was 5 KB, the median peak 4.6 times
#: the file's size.
LOAD_MEMORY_CONSTANT = 4 << 20


def _read_measured(data: Any, path: Optional[str]) -> Any:
    """:func:`_read`, checking that reading, validating and building the model (or refusing
    the file) allocates at most ``LOAD_MEMORY_FACTOR`` times the file's size plus
    ``LOAD_MEMORY_CONSTANT`` at its peak (tracemalloc counts Python objects and numpy
    arrays)."""
    if path is not None:             # the file is written first: only the load is measured
        with open(path, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    start = tracemalloc.get_traced_memory()[0]
    try:
        parts = model_files.parse(data) if path is None else model_files.read(path)
        return _from_parts(parts)
    finally:
        peak = tracemalloc.get_traced_memory()[1] - start
        if not tracing:
            tracemalloc.stop()
        size = len(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
        assert peak <= LOAD_MEMORY_FACTOR * size + LOAD_MEMORY_CONSTANT, \
            f"loading a file of {size} bytes allocated {peak} bytes at its peak"


def _read_again(data: Any, path: Optional[str], engine: bool) -> Any:
    """The second load, through the public functions themselves."""
    if path is None:
        return Model.from_parts(model_files.parse(data)) if engine else loads(data)
    return Model.load(path) if engine else load_model(path)


def _check_engine_view(est: Any, engine: Model, outputs: Dict[str, np.ndarray]) -> None:
    """``Model.load`` reads an estimator's file as the estimator's engine model: sound, and
    predicting what the estimator predicts, bit for bit."""
    engine_outputs = model_outputs(engine)
    if isinstance(est, BoostClassifier):
        proba = outputs["proba"]
        expected = proba[:, 1] if est.model_.n_outputs == 1 else proba
    else:
        expected = outputs["predict"]
    assert_identical({"p": expected}, {"p": engine_outputs["predict"]}, "Model.load")


def check_model_file(data: Any, path: Optional[str] = None) -> Optional[Dict[str, Any]]:
    """The property: ``data`` is refused with :class:`ModelFileError` only, or loads into a
    model whose outputs are sound, deterministic and survive a save / load round trip.

    Returns None when the file is refused, else the loaded model's outputs.
    """
    try:
        obj = _read_measured(data, path)
    except ModelFileError:
        return None
    first = model_outputs(obj)
    again = _read_again(data, path, isinstance(obj, Model))
    assert_identical(first, model_outputs(again), "second load")
    if path is not None and not isinstance(obj, Model):
        _check_engine_view(obj, Model.load(path), first)
    try:
        if path is None:
            text = _document_text(obj)
            reloaded = _read(text, None)
        else:                       # save_model / Model.save: validated, atomic, on disk
            resaved = path + ".resaved.json"
            if isinstance(obj, Model):
                obj.save(resaved)
            else:
                obj.save_model(resaved)
            with open(resaved, encoding="utf-8") as fh:
                text = fh.read().rstrip("\n")
            reloaded = _from_parts(model_files.read(resaved))
    except ModelFileError as exc:
        raise AssertionError(f"the loaded model does not save and load back: {exc}") from None
    assert type(reloaded) is type(obj), "round trip changed the class"
    assert_identical(first, model_outputs(reloaded), "round trip")
    assert _document_text(reloaded) == text, "saving the reloaded model gives another file"
    return first


# -- mutations -------------------------------------------------------------------------------
_HUGE_DIGITS = "9" * 5000           # more digits than Python converts (a ValueError in json)
#: tokens that json.dumps cannot write: put in the text in place of a sentinel string
_RAW_TOKENS = ["1e400", "-1e400", "1e-400", "-0", "-0.0e0", "1E+2", _HUGE_DIGITS,
               "-" + _HUGE_DIGITS, "0." + "0" * 400 + "1", "NaN", "Infinity", "-Infinity",
               "[" * 31 + "0" + "]" * 31, "[" * 33 + "0" + "]" * 33,
               "[" * 1000 + "]" * 1000, "[" * 100_000 + "]" * 100_000,
               '{"a":' * 40 + "0" + "}" * 40, '{"a":' * 5000 + "0" + "}" * 5000,
               '"\\ud800"', '"\\u0000"', '"\\udfff\\ud800"']
_INTS = [0, 1, -1, 2, 3, 7, 8, 15, 16, 17, 29, 30, 31, 32, 254, 255, 256, 65_535, 65_536,
         65_537, 2 ** 20 - 1, 2 ** 20, 2 ** 31 - 1, 2 ** 31, -2 ** 31 - 1, 2 ** 32 - 1,
         2 ** 32, 2 ** 53 + 1, 2 ** 63 - 1, 2 ** 63, -2 ** 63 - 1, 2 ** 64, 10 ** 20,
         10 ** 300, -10 ** 300, 10 ** 400]
_FLOATS = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-300, 1e-150, 0.5, -0.5,
           1.0, 1.5, 1e16, 1e150, 1e300, 1e308, -1e308, 1.7976931348623157e308,
           float("nan"), float("inf"), float("-inf")]
_STRINGS = ["", "0", "1.0", "a" * 10_001, "\x00", "é", "symmetric", "depthwise", "logloss",
            "mse", "multiclass", "sla", "sglb", "agbm", "BoostClassifier", "BoostRegressor",
            "<i8", "<f8", "|b1", "|O", "<U3", ">i8", "<U99999", "<M8", "boostlib-model",
            "NaN", "auto", "outputs"]
_KEYS = ["extra", "", "format", "n_outputs", "cat_sets", "categorical", "outputs", "levels",
         "scale", "n_classes", "feature", "value", "left", "__class__", "é"]
_SMALL = [0, 1, -1, 2, 255, 0.5, -0.0, 1e308, None, True, "", "a"]
HOSTILE = st.one_of(
    st.sampled_from(_INTS), st.sampled_from(_FLOATS), st.sampled_from(_STRINGS),
    st.sampled_from([None, True, False, [], {}, [[]], [None], {"outputs": []}]).map(
        copy.deepcopy),                         # fresh containers: mutations edit them
    st.integers(), st.floats(), st.text(max_size=6),
    st.lists(st.sampled_from(_SMALL), max_size=5),
    st.dictionaries(st.sampled_from(_KEYS), st.sampled_from(_SMALL), max_size=2),
)


class _Edit:
    """A document under mutation, with the raw-text tokens and duplicated keys that only
    its serialization can carry."""

    def __init__(self, doc: Any):
        self.doc = doc
        self.tokens: List[Tuple[str, str]] = []        # (sentinel JSON text, raw text)

    def raw(self, text: str) -> str:
        sentinel = f"@@raw{len(self.tokens)}@@"
        self.tokens.append((json.dumps(sentinel), text))
        return sentinel

    def duplicate_key(self, obj: Dict[str, Any], key: str, value: Any) -> None:
        sentinel = f"@@key{len(self.tokens)}@@"
        obj[sentinel] = value
        self.tokens.append((json.dumps(sentinel), json.dumps(key)))

    def text(self) -> str:
        text = json.dumps(self.doc, separators=(",", ":"))
        for sentinel, raw in self.tokens:
            text = text.replace(sentinel, raw, 1)
        return text


#: where shape-keeping mutations go: mostly the trees, the borders and the parameters
_SUBTLE_FIELDS = ["model"] * 5 + ["bins"] * 2 + ["params", "training", "classes", "loss"]


def _walk(draw: Callable, doc: Any, subtle: bool = False) -> List[Any]:
    """A path into ``doc`` (keys and indices) of a drawn depth; every depth is as likely, so
    top-level fields are mutated about as often as leaf values. ``subtle``: a path at
    least two deep into the sections of :data:`_SUBTLE_FIELDS`, where the document has
    them."""
    path, node = [], doc
    if subtle and isinstance(doc, dict):
        first = draw(st.sampled_from(_SUBTLE_FIELDS))
        if isinstance(doc.get(first), (dict, list)) and doc[first]:
            path, node = [first], doc[first]
    for _ in range(draw(st.integers(1, 9))):
        if isinstance(node, dict) and node:
            key = draw(st.sampled_from(sorted(node)))
        elif isinstance(node, list) and node:
            key = draw(st.integers(0, len(node) - 1))
        else:
            break
        path.append(key)
        node = node[key]
    return path


def _get(doc: Any, path: List[Any]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


@functools.lru_cache(maxsize=None)
def field_groups(name: str) -> Dict[str, Tuple[Tuple[Tuple[Any, ...], ...], ...]]:
    """The paths of base document ``name`` by top-level section, then by field, list
    indices as ``*`` (``model/trees/*/value/*``: every leaf value), sorted.

    Drawing a section, then a field, then one of its paths mutates every field as often,
    whatever its size: the numbers of a scale history as often as the leaves of all trees,
    the 30 parameters together as often as the trees.
    """
    groups: Dict[str, Dict[str, List[Tuple[Any, ...]]]] = {}

    def visit(node: Any, path: Tuple[Any, ...]) -> None:
        if path:
            field = "/".join("*" if type(k) is int else k for k in path)
            groups.setdefault(path[0], {}).setdefault(field, []).append(path)
        items = sorted(node.items()) if isinstance(node, dict) else \
            enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            visit(value, path + (key,))

    visit(json.loads(base_documents()[name]), ())
    return {section: tuple(tuple(paths) for _, paths in sorted(fields.items()))
            for section, fields in groups.items()}


def _present(doc: Any, path: Tuple[Any, ...]) -> bool:
    """Whether ``doc`` (mutated) still has ``path``, through objects and arrays only."""
    node = doc
    for key in path:
        if not (isinstance(node, dict) and key in node or isinstance(node, list)
                and type(key) is int and key < len(node)):
            return False
        node = node[key]
    return True


def _field_paths(draw: Callable, doc: Any, name: str, subtle: bool) -> List[List[Any]]:
    """The paths of a drawn field of base document ``name`` that ``doc`` (mutated) still
    has, a drawn one first (``subtle``: a field in the sections of :data:`_SUBTLE_FIELDS`,
    mostly); else one drawn path of ``doc``."""
    groups = field_groups(name)
    section = draw(st.sampled_from(_SUBTLE_FIELDS if subtle else sorted(groups)))
    if section in groups:
        fields = groups[section]
        paths = fields[draw(st.integers(0, len(fields) - 1))]
        first = paths[draw(st.integers(0, len(paths) - 1))]
        if _present(doc, first):
            return [list(first)] + [list(p) for p in paths if p != first and _present(doc, p)]
    return [_walk(draw, doc, subtle)]


#: factors and values of the whole-field mutations, extremes first
_EXTREME_FLOATS = [5e-324, 1e-320, 1e-300, 1e-200, 1e200, 1e300, 1e308, -1e300, 0.0, -0.0]
_POWERS = st.one_of(st.sampled_from([-320, -310, -300, -200, -100, 100, 200, 300]),
                    st.integers(-330, 310))


def _map_numbers(value: Any, fn: Callable[[Any], Any]) -> Any:
    """``value`` with ``fn`` applied to every number in it (booleans left alone)."""
    if isinstance(value, list):
        return [_map_numbers(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: _map_numbers(v, fn) for k, v in value.items()}
    if type(value) in (int, float):
        return fn(value)
    return value


def _number_change(draw: Callable, op: str) -> Callable[[Any], Any]:
    """``"scale"``: non-integers times a drawn power of ten; ``"fill"``: every integer, or
    every other number, set to a drawn extreme."""
    if op == "scale":
        power = draw(_POWERS)
        return lambda v: _scaled(v, power) if type(v) is float else v
    if draw(st.booleans()):
        whole = draw(st.sampled_from(_INTS))
        return lambda v: whole if type(v) is int else v
    real = draw(st.sampled_from(_EXTREME_FLOATS))
    return lambda v: real if type(v) is float else v


def _scaled(value: Any, power: int) -> Any:
    with np.errstate(over="ignore", under="ignore"):
        return float(value * np.float64(10.0) ** power)


def _nudged(draw: Callable, value: Any) -> Any:
    """A value close to ``value`` and of its type: the mutations most likely to pass
    validation and reach prediction."""
    if type(value) is bool:
        return not value
    if type(value) is int:
        how = draw(st.sampled_from(["+1", "-1", "+2", "neg", "double", "half", "big", "any"]))
        if how == "any":
            return draw(st.sampled_from(_INTS))
        return {"+1": value + 1, "-1": value - 1, "+2": value + 2, "neg": -value,
                "double": 2 * value, "half": value // 2, "big": value + 2 ** 31}[how]
    if type(value) is float:
        how = draw(st.sampled_from(["up", "down", "neg", "x2", "x10**k", "x10**k", "zero",
                                    "+1", "any"]))
        if how == "any":
            return draw(st.sampled_from(_FLOATS[:-3]))
        if how == "x10**k":                 # anywhere in the range of doubles
            return _scaled(value, draw(_POWERS))
        return {"up": math.nextafter(value, math.inf),
                "down": math.nextafter(value, -math.inf), "neg": -value, "x2": value * 2.0,
                "zero": 0.0 * value, "+1": value + 1.0}[how]
    if type(value) is str:
        return draw(st.sampled_from([value + "x", value[:-1], value.upper(), value * 2]))
    if isinstance(value, (list, dict)) and value:     # one entry nudged
        value = json.loads(json.dumps(value))
        keys = sorted(value) if isinstance(value, dict) else range(len(value))
        key = draw(st.sampled_from(keys))
        value[key] = _nudged(draw, value[key])
        return value
    return draw(HOSTILE)


_OPS = ["replace", "replace", "nudge", "nudge", "delete", "add_key", "rename_key",
        "duplicate_key", "swap", "duplicate_entry", "drop_entry", "truncate", "extend",
        "copy", "nest", "raw", "root", "fill", "scale"]
_LIST_OPS = ("swap", "duplicate_entry", "drop_entry", "truncate", "extend")
#: mutations that keep the document's shape: the ones likely to load and reach prediction
_SUBTLE_OPS = ["nudge", "nudge", "nudge", "nudge", "swap", "duplicate_entry", "drop_entry",
               "truncate", "copy", "fill", "scale"]


def _mutate(draw: Callable, edit: _Edit, ops: List[str], name: str) -> None:
    """One JSON-level mutation of ``edit.doc`` (from base document ``name``), of one of the
    kinds ``ops``."""
    doc = edit.doc
    op = draw(st.sampled_from(ops))
    if op == "root" or not isinstance(doc, (dict, list)) or not doc:
        edit.doc = draw(HOSTILE)
        return
    subtle = ops is _SUBTLE_OPS
    field = _field_paths(draw, doc, name, subtle) if draw(st.booleans()) else \
        [_walk(draw, doc, subtle)]
    path = field[0]
    parent, key = _get(doc, path[:-1]), path[-1]
    value = parent[key]
    containers = [_get(doc, path[:i]) for i in range(len(path) + 1)]
    lists = [c for c in containers if isinstance(c, list) and c]
    dicts = [c for c in containers if isinstance(c, dict)]
    if op == "replace":
        parent[key] = draw(HOSTILE)
    elif op == "nudge":
        parent[key] = _nudged(draw, value)
    elif op in ("fill", "scale"):           # the numbers at every path of the field
        change = _number_change(draw, op)
        for where in field:
            if _present(edit.doc, tuple(where)):
                holder = _get(edit.doc, where[:-1])
                holder[where[-1]] = _map_numbers(holder[where[-1]], change)
    elif op == "delete":
        del parent[key]
    elif op in ("add_key", "rename_key", "duplicate_key") and dicts:
        obj = dicts[draw(st.integers(0, len(dicts) - 1))]
        if op == "add_key" or not obj:
            obj[draw(st.sampled_from(_KEYS))] = draw(HOSTILE)
            return
        old = draw(st.sampled_from(sorted(obj)))
        if op == "rename_key":
            obj[draw(st.sampled_from([old + "_", old.upper(), " " + old, "extra"]))] = \
                obj.pop(old)
        else:
            edit.duplicate_key(obj, old, draw(st.one_of(st.just(obj[old]), HOSTILE)))
    elif op == "copy" and subtle:                       # a sibling's value
        keys = sorted(parent) if isinstance(parent, dict) else range(len(parent))
        source = parent[draw(st.sampled_from(keys))]
        parent[key] = json.loads(json.dumps(source))
    elif op == "copy":                                  # any part of the document
        parent[key] = json.loads(json.dumps(_get(doc, _walk(draw, doc))))
    elif op == "nest":
        for _ in range(draw(st.integers(1, 3))):
            value = [value] if draw(st.booleans()) else {"a": value}
        parent[key] = value
    elif op == "raw":
        parent[key] = edit.raw(draw(st.sampled_from(_RAW_TOKENS)))
    elif op not in _LIST_OPS or not lists:
        parent[key] = draw(HOSTILE)
    else:
        items = lists[draw(st.integers(0, len(lists) - 1))]
        i = draw(st.integers(0, len(items) - 1))
        j = draw(st.integers(0, len(items) - 1))
        if op == "swap":
            items[i], items[j] = items[j], items[i]
        elif op == "duplicate_entry":
            items.insert(j, json.loads(json.dumps(items[i])))
        elif op == "drop_entry":
            del items[i]
        elif op == "truncate":
            del items[i:]
        else:                                           # extend: the list repeated
            items.extend(json.loads(json.dumps(items)) * draw(st.integers(1, 3)))


def _as_blocks(doc: Any) -> None:
    """Write the trees' arrays and borders of a document mutated in list form
    (:func:`as_lists`) back as binary blocks, where a block can hold them: every number,
    integers wrapped around into the field's type as the bytes of a hostile file would hold
    them; anything else (text, null, nested arrays, ...) is left as the mutation made it."""
    bins = doc.get("bins") if isinstance(doc, dict) else None
    borders = bins.get("borders") if isinstance(bins, dict) else None
    if isinstance(borders, list) and all(
            isinstance(b, list) and all(type(v) in (int, float) for v in b) for b in borders):
        try:
            doc["bins"] = border_blocks(doc)["bins"]
        except (OverflowError, ValueError):      # 10**400 as a float
            pass
    model = doc.get("model") if isinstance(doc, dict) else None
    terms = model.get("trees") if isinstance(model, dict) else None
    for term in terms if isinstance(terms, list) else []:
        outputs = term.get("outputs") if isinstance(term, dict) else None
        for tree in outputs if isinstance(outputs, list) else [term]:
            for field, values in list(tree.items()) if isinstance(tree, dict) else []:
                if field in FIELD_DTYPES and isinstance(values, list):
                    block = _wrapped_block(values, field)
                    tree[field] = values if block is None else block


def _wrapped_block(values: list, field: str) -> Optional[str]:
    """The block of ``values`` (``cat_sets``: rows of words) in ``field``'s type, integers
    wrapped around; None when a block cannot hold them."""
    if field == "cat_sets":
        if not all(type(row) is list for row in values):
            return None
        values = [word for row in values for word in row]
    if not all(type(v) in (bool, int, float) for v in values):
        return None
    dtype = np.dtype(FIELD_DTYPES[field])
    try:
        if dtype.kind == "f":
            arr = np.array(values, dtype=np.float64)
        else:
            arr = np.array([int(v) % (1 << 64) for v in values], dtype=np.uint64).astype(dtype)
    except (OverflowError, ValueError):      # 10**400 as a float, NaN as an integer
        return None
    return base64.b64encode(arr.astype(dtype).tobytes()).decode("ascii")


_INSERTS = [b"\xff", b"\x80", b"\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
            b"\xef\xbb\xbf", b"\x00", b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\",
            b"\\u", b"-", b"0", b"e", b".", b" ", b"\n", b"null", b"NaN", b"1e999"]


def _corrupt(draw: Callable, data: bytes) -> bytes:
    """One byte-level mutation of the serialized file."""
    op = draw(st.sampled_from(["truncate", "flip", "set", "insert", "delete", "bom",
                               "utf16", "repeat"]))
    if op == "bom":
        return b"\xef\xbb\xbf" + data
    if op == "utf16":
        return data.decode("utf-8", "replace").encode("utf-16")
    if not data:
        return draw(st.sampled_from(_INSERTS))
    at = draw(st.integers(0, len(data) - 1))
    if op == "truncate":
        return data[:draw(st.sampled_from([at, len(data) - 1, len(data) - 2, 1, 0]))]
    if op == "flip":
        return data[:at] + bytes([data[at] ^ (1 << draw(st.integers(0, 7)))]) + data[at + 1:]
    if op == "set":
        return data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1:]
    if op == "insert":
        piece = draw(st.one_of(st.sampled_from(_INSERTS), st.binary(min_size=1, max_size=4)))
        return data[:at] + piece + data[at:]
    if op == "delete":
        return data[:at] + data[at + draw(st.integers(1, 16)):]
    return data[:at] + data[at:at + 64] * draw(st.integers(2, 4)) + data[at:]


@st.composite
def mutated_files(draw: Callable) -> Tuple[str, Any, str]:
    """``(base name, mutated file as text or bytes, channel)``; channel ``"text"`` and
    ``"bytes"`` load from memory, ``"file"`` through a file on disk."""
    docs = base_documents()
    name = draw(st.sampled_from(sorted(docs)))
    doc = json.loads(docs[name])
    entries = doc["format_version"] >= 6 and draw(st.booleans())
    edit = _Edit(as_lists(doc) if entries else doc)
    subtle = draw(st.sampled_from([True, True, False]))
    for _ in range(draw(st.integers(1, 3) if subtle else st.integers(0, 4))):
        _mutate(draw, edit, _SUBTLE_OPS if subtle else _OPS, name)
    if entries:
        _as_blocks(edit.doc)
    try:
        text = edit.text()
    except (ValueError, RecursionError):             # a value json.dumps cannot write
        text = json.dumps(repr(edit.doc))
    data = text.encode("utf-8", "surrogatepass")
    for _ in range(0 if subtle else draw(st.sampled_from([0, 0, 0, 1, 2]))):
        data = _corrupt(draw, data)
    channel = draw(st.sampled_from(["text", "bytes", "file"]))
    if channel == "text":
        try:
            return name, data.decode("utf-8"), channel
        except UnicodeDecodeError:
            channel = "bytes"
    return name, data, channel


_FOLDER = tempfile.TemporaryDirectory(prefix="boostlib-mutations-")


def _run(case: Tuple[str, Any, str]) -> None:
    name, data, channel = case
    note(f"base {name!r}, channel {channel!r}, {len(data)} characters/bytes")
    path = os.path.join(_FOLDER.name, "model.json") if channel == "file" else None
    check_model_file(data, path)


_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                       HealthCheck.data_too_large])


@settings(max_examples=DEFAULT_EXAMPLES, **_SETTINGS)
@given(mutated_files())
def test_mutated_model_files(case):
    _run(case)


@pytest.mark.nightly
@settings(max_examples=NIGHTLY_EXAMPLES, **_SETTINGS)
@given(mutated_files())
def test_mutated_model_files_nightly(case):
    _run(case)


# -- the base documents themselves -------------------------------------------------------------
@pytest.mark.parametrize("name", BASE_NAMES)
def test_base_documents_hold_the_property(name):
    """Every base document loads, predicts soundly and re-saves to the same text (older
    versions re-save as the current one)."""
    text = base_documents()[name]
    assert check_model_file(text) is not None
    obj = _read(text, None)
    if not name.startswith("version"):
        assert _document_text(obj) == text
    if name.startswith("sglb"):
        assert len(obj.model_.ensemble.scale_history) >= 8 and _n_members(obj.model_) == 3
    if name == "binary_depthwise_eval":
        assert obj.best_iteration_ is not None and "valid_0" in obj.evals_result_
    if name in ("categorical_pandas", "categorical_encoded"):
        assert _frame_probe(obj, probe_rows(obj.model_)) is not None


@pytest.mark.parametrize("name", ["binary_symmetric", "three_strings_depthwise"])
def test_every_truncation_is_refused(name):
    """A file cut anywhere before its end is refused."""
    data = base_documents()[name].encode()
    for cut in range(0, len(data), 7):
        with pytest.raises(ModelFileError):
            loads(data[:cut])


# -- resource limits of the loader -------------------------------------------------------------
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: a child process running a resource case may use this much address space ...
MEMORY_LIMIT = 4 << 30
#: ... and this long to refuse the file, or to load it and predict (then it is killed)
TIME_LIMIT = 120.0

_CHILD = textwrap.dedent("""
    import json, resource, sys, time, traceback
    path, memory, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    sys.path[:0] = [root, root + "/tests"]
    from boostlib import ModelFileError
    from boostlib.io import model_files
    from tests.robustness.test_model_file_mutations import _from_parts, model_outputs
    start = time.perf_counter()
    result = {}
    try:
        obj = _from_parts(model_files.read(path))
        result["load_seconds"] = round(time.perf_counter() - start, 3)
        model_outputs(obj)
        result["outcome"] = "loaded"
    except ModelFileError as exc:
        result.update(outcome="refused", message=str(exc)[:300])
    except BaseException as exc:
        result.update(outcome="failed", message=f"{type(exc).__name__}: {str(exc)[:300]}",
                      traceback=traceback.format_exc()[-2000:])
    result["seconds"] = round(time.perf_counter() - start, 3)
    # VmHWM: this process's own peak (ru_maxrss counts the parent's, inherited at fork)
    with open("/proc/self/status") as fh:
        peak = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    result["peak_rss_mb"] = peak // 1024
    print(json.dumps(result))
""")


def load_isolated(text: str, folder: Any) -> Dict[str, Any]:
    """Load the model file ``text`` and predict with it in a child process limited to
    :data:`MEMORY_LIMIT` bytes and :data:`TIME_LIMIT` seconds.

    Returns
    -------
    dict
        ``outcome`` ("loaded", "refused": a ModelFileError, or "failed": any other
        exception, MemoryError included), ``message``, ``seconds`` (reading, validating,
        building and predicting), ``load_seconds`` and ``peak_rss_mb`` (of the child,
        boostlib's import included), ``file_mb``.
    """
    path = os.path.join(str(folder), "model.json")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD, path, str(MEMORY_LIMIT), ROOT],
                              capture_output=True, text=True, timeout=TIME_LIMIT, cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"loading a {len(text) / 1e6:.1f} MB model file did not finish within "
                    f"{TIME_LIMIT:g} s")
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, f"the child process died: {proc.stderr[-3000:]}"
    result = json.loads(lines[-1])
    result["file_mb"] = round(os.path.getsize(path) / 1e6, 2)
    print(f"resource case: {result}")
    return result


def assert_refused_or_sound(result: Dict[str, Any]) -> None:
    """The resource-case property: a ModelFileError, or a model with sound outputs; either
    within :data:`TIME_LIMIT` and :data:`MEMORY_LIMIT` (checked by :func:`load_isolated`)."""
    assert result["outcome"] in ("loaded", "refused"), \
        f"{result['message']}\n{result.get('traceback', '')}"


def _edited(name: str, change: Callable[[Dict[str, Any]], None]) -> str:
    doc = json.loads(base_documents()[name])
    change(doc)
    return json.dumps(doc)


def _long_curve(doc: Dict[str, Any]) -> None:
    doc["training"]["evals_result"]["valid_0"]["logloss"] = [0.5] * 2_000_000


def _blocks(tree: Dict[str, list]) -> Dict[str, str]:
    """A tree given as JSON arrays, as binary blocks."""
    return {field: encode(values, field) for field, values in tree.items()}


#: a single-leaf depthwise tree
_LEAF = _blocks({"feature": [-1], "bin": [0], "nan_right": [0], "left": [-1], "right": [-1],
                 "gain": [0.0], "value": [0.5], "cat_sets": []})


def _leaf_trees(n: int) -> Callable[[Dict[str, Any]], None]:
    def change(doc: Dict[str, Any]) -> None:
        leaf = _blocks({"feature": [], "bin": [], "nan_right": [], "gain": [], "value": [0.25],
                        "cat_sets": []})
        doc["model"].update(trees=[leaf] * n, coefficients=[1e-3] * n, scale_history=[])
    return change


def _chain(depth: int) -> Callable[[Dict[str, Any]], None]:
    """A depthwise tree of ``depth`` splits in a chain, each with a leaf child."""
    def change(doc: Dict[str, Any]) -> None:
        n = 2 * depth + 1
        split = [k % 2 == 0 and k < n - 1 for k in range(n)]
        doc["model"]["trees"][0] = _blocks({
            "feature": [0 if s else -1 for s in split], "bin": [0] * n,
            "nan_right": [0] * n, "left": [k + 1 if s else -1 for k, s in enumerate(split)],
            "right": [k + 2 if s else -1 for k, s in enumerate(split)], "gain": [0.0] * n,
            "value": [0.0] * n, "cat_sets": []})
    return change


def _many_outputs(k: int, terms: int = 4, labels: Optional[Dict[str, Any]] = None
                  ) -> Callable[[Dict[str, Any]], None]:
    """A multiclass model of ``k`` classes: ``terms`` terms of ``k`` single-leaf trees, its
    labels ``labels`` (default: the integers ``0 .. k-1``)."""
    def change(doc: Dict[str, Any]) -> None:
        doc["loss"]["params"]["n_classes"] = k
        doc["classes"] = labels or {"dtype": "<i8", "values": list(range(k))}
        doc["model"].update(n_outputs=k, bias=[0.0] * k, coefficients=[0.1] * terms,
                            trees=[{"outputs": [_LEAF] * k}] * terms)
    return change


def _history(pairs: List[List[float]]) -> Callable[[Dict[str, Any]], None]:
    def change(doc: Dict[str, Any]) -> None:
        doc["model"]["scale_history"] = pairs
    return change


def test_very_long_validation_curve_is_refused(tmp_path):
    """2,000,000 entries in one ``evals_result`` curve (a 10 MB file): more than a curve of
    MAX_TREES iterations holds."""
    result = load_isolated(_edited("binary_depthwise_eval", _long_curve), tmp_path)
    assert result["outcome"] == "refused" and "at most 500000" in result["message"], result


def test_very_many_single_leaf_trees(tmp_path):
    """200,000 terms, each a depth-0 symmetric tree (a 21 MB file): within MAX_TREES."""
    result = load_isolated(_edited("regressor_symmetric", _leaf_trees(200_000)), tmp_path)
    assert result["outcome"] == "loaded", result


def test_more_trees_than_a_model_holds_are_refused(tmp_path):
    """500,001 single-leaf trees: one more than MAX_TREES."""
    result = load_isolated(_edited("regressor_symmetric", _leaf_trees(500_001)), tmp_path)
    assert result["outcome"] == "refused" and "at most 500000" in result["message"], result


@pytest.mark.parametrize("limit, value, text", [
    ("MAX_FILE_BYTES", 100, "bytes, more than MAX_FILE_BYTES"),
    ("MAX_JSON_VALUES", 10, "values, more than MAX_JSON_VALUES"),
    ("MAX_JSON_CONTAINERS", 5, "arrays and objects, more than MAX_JSON_CONTAINERS"),
])
def test_files_beyond_the_parsing_budgets_are_refused_before_parsing(tmp_path, monkeypatch,
                                                                     limit, value, text):
    """The budgets are checked on the raw bytes (a scan), so a file beyond them is never
    parsed: shown here with the limits lowered below a small model's counts."""
    path = tmp_path / "model.json"
    path.write_text(base_documents()["binary_symmetric"])
    monkeypatch.setattr(model_files, limit, value)
    parsed = []
    monkeypatch.setattr(model_files.json, "loads", lambda *a, **k: parsed.append(1))
    with pytest.raises(ModelFileError, match=text):
        load_model(path)
    assert not parsed


@pytest.mark.nightly
def test_very_many_outputs(tmp_path):
    """65,536 classes (the most a file may have): 4 terms of 65,536 single-leaf trees
    (a 34 MB file)."""
    assert_refused_or_sound(load_isolated(_edited("three_strings_depthwise",
                                                  _many_outputs(65_536)), tmp_path))


def _wide_labels(n: int) -> Dict[str, Any]:
    """``n`` labels of 5 characters (``"00000"``, ...) typed ``<U10000``: as an array of that
    type they take 40,000 bytes each."""
    return {"dtype": "<U10000", "values": [f"{i:05d}" for i in range(n)]}


def _bounded_memory(result: Dict[str, Any], base: Dict[str, Any]) -> None:
    """The load took at most 20 times the file's size beyond the load of a base document."""
    assert result["peak_rss_mb"] <= base["peak_rss_mb"] + 20 * result["file_mb"] + 16, \
        (result, base)


def test_class_labels_are_counted_before_they_are_built(tmp_path):
    """65,536 labels typed ``<U10000`` (a 0.6 MB list; 2.6 GB as an array of that type) in
    the file of a model of three outputs: refused for their count before the array is
    built, in memory bounded by the file's size."""
    base = load_isolated(base_documents()["three_strings_depthwise"], tmp_path)
    labels = _wide_labels(65_536)
    result = load_isolated(_edited("three_strings_depthwise",
                                   lambda doc: doc.update(classes=labels)), tmp_path)
    assert result["outcome"] == "refused" and "65536 classes for a model of 3 outputs" in \
        result["message"], result
    _bounded_memory(result, base)


def test_class_labels_wider_than_their_text_are_refused(tmp_path):
    """4,096 labels of 5 characters typed ``<U10000`` for a model of 4,096 outputs: as that
    type they would take 164 MB, 300 times their text in the file; refused before the
    array is built (at most 1 MiB, or 16 times the labels' text)."""
    base = load_isolated(base_documents()["three_strings_depthwise"], tmp_path)
    result = load_isolated(_edited("three_strings_depthwise", _many_outputs(
        4096, 1, _wide_labels(4096))), tmp_path)
    assert result["outcome"] == "refused" and "classes.dtype" in result["message"], result
    _bounded_memory(result, base)


def test_very_deep_depthwise_chain_is_refused(tmp_path):
    """A chain of 100,000 splits: refused (deeper than the 30 levels training can grow, as
    ``docs/model_files.md`` says)."""
    result = load_isolated(_edited("regressor_depthwise", _chain(100_000)), tmp_path)
    assert result["outcome"] == "refused" and "deep" in result["message"], result


def test_large_file_of_padding(tmp_path):
    """A valid model followed by 200 MB of whitespace."""
    text = base_documents()["binary_symmetric"] + " " * 200_000_000
    assert_refused_or_sound(load_isolated(text, tmp_path))


#: ``"n"``: the model's number of trees. The members of the virtual ensembles keep the first
#: half or more of the trees and undo the factors recorded when the model held at least as
#: many trees as they keep: early entries touch no member, late ones every member.
_SCALE_CASES = {
    "tiny-early": [[1, 1e-300], [2, 1e-300]],
    "huge-early": [[1, 1e300], [2, 1e300]],
    "huge-late": [["n", 1e300], ["n", 1e300]],
    "small-late": [["n", 1e-200]],
    "tiny-late": [["n-1", 1e-300], ["n", 1e-300]],
    "denormal-late": [["n", 5e-324]],
    "1100-halves-late": [["n", 0.5]] * 1100,
    "100k-entries-early": [[0, 0.5]] * 100_000,
}


@pytest.mark.parametrize("case", sorted(_SCALE_CASES))
@pytest.mark.parametrize("name", ["sglb_regressor", "sglb_classifier_depthwise"])
def test_extreme_scale_history(name, case):
    """Extreme but individually valid shrink factors (each in ``(0, 1e300]``) in an SGLB
    model's history: refused, or virtual-ensemble members with finite outputs. Dividing
    by a product that underflows gives +-inf, or 0/0 = NaN (a PluginError in a
    classifier)."""
    _check_scale_history(name, _SCALE_CASES[case], None, False)


@pytest.mark.parametrize("case, bias, zero", [("tiny-late", 1e10, False),
                                              ("small-late", 1e110, False),
                                              ("tiny-late", None, True),
                                              ("huge-late", None, True)])
@pytest.mark.parametrize("name", ["sglb_regressor", "sglb_classifier_depthwise"])
def test_extreme_scale_history_with_extreme_scores(name, case, bias, zero):
    """The same with a large bias (a member's raw score overflows when the shrinkage is
    undone), or with every raw score exactly 0 (0 / 0)."""
    _check_scale_history(name, _SCALE_CASES[case], bias, zero)


def _check_scale_history(name: str, pairs: Any, bias: Optional[float], zero: bool) -> None:
    """Refused, or sound (the full property, virtual ensembles included), within 30 s."""
    doc = json.loads(base_documents()[name])
    model = doc["model"]
    n = len(model["trees"])
    model["scale_history"] = [[{"n": n, "n-1": n - 1}.get(m, m), f] for m, f in pairs]
    if bias is not None:
        model["bias"] = bias
    if zero:                                     # every raw score exactly 0
        model.update(bias=0.0, coefficients=[0.0] * n)
    start = time.perf_counter()
    outputs = check_model_file(json.dumps(doc))
    assert time.perf_counter() - start < 30.0
    assert outputs is None or "virtual" in outputs


# -- plugins a file names ----------------------------------------------------------------------
@pytest.mark.parametrize("field, name, noun", [("sampler", "no_such_sampler", "sampler"),
                                               ("update", "sgbx", "update rule"),
                                               ("loss", "mse2", "loss")])
def test_files_naming_plugins_that_are_not_installed_say_so(field, name, noun):
    """A sampler, update rule or training loss in ``params`` that is not installed: the
    file loads (prediction needs none of them) with a warning naming it and the installed
    ones, since refitting the model would need it."""
    text = _edited("regressor_depthwise", lambda doc: doc["params"].update({field: name}))
    with pytest.warns(UserWarning, match=rf"names the {noun} '{name}', which is not "
                                         rf"installed \(params\.{field}\): the model "
                                         rf"predicts, but refitting it needs it; available "
                                         rf"{noun}"):
        est = loads(text)
    assert est.get_params()[field] == name


# -- memory of a load --------------------------------------------------------------------------
def test_a_small_file_is_read_into_a_buffer_of_its_size(tmp_path):
    """A file of a few kilobytes is read without a buffer of the size limit (1 GiB), which
    an address-space limit (``ulimit -v``) would turn into a MemoryError."""
    path = str(tmp_path / "model.json")
    check_model_file(base_documents()["binary_symmetric"], path)      # measures the load
