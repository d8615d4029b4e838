"""ONNX export of models trained with ``categorical_encoding`` "onehot", "target_stats" and
"auto": the graph takes the original features (categorical ones as their codes, NaN:
missing), encodes them as boostlib does, and onnxruntime's outputs equal boostlib's
predictions, for regression, binary and multiclass models of both tree kinds, float32 and
float64 graphs, with seen, unseen and missing categories (and features left to set splits
inside an encoded model)."""
import json

import numpy as np
import pytest

from optional_imports import importorskip

onnx = importorskip("onnx")
ort = importorskip("onnxruntime")
pd = importorskip("pandas")

from boostlib import BoostClassifier, BoostRegressor, Dataset, Model, train  # noqa: E402
from boostlib.engine.categorical import MAX_CODE  # noqa: E402
from boostlib.export import onnx_input, to_onnx  # noqa: E402
from boostlib.export.onnx_encoding import encoding_arrays, snap_float32  # noqa: E402
from boostlib.export.onnx_trees import float32_floor  # noqa: E402

POLICIES = ("depthwise", "symmetric")
ENCODINGS = ("onehot", "target_stats", "auto")
SMALL = dict(n_estimators=12, max_depth=4, learning_rate=0.3, random_state=0, n_jobs=1)
TOL = {"float32": 1e-5, "float64": 1e-12}
#: The encoder's kind of the features x, small (3 levels), mid (10), many (300), z.
KINDS = {"onehot": ["numeric", "onehot", "onehot", "sets", "numeric"],
         "target_stats": ["numeric"] + ["target_stats"] * 3 + ["numeric"]}


def _frame(n, seed, new_levels=False):
    """float32 numeric columns x and z (z with NaN) and category columns of 3, 10 and 300
    levels (the last: a few frequent levels, many rare ones), about 5% NaN each;
    with ``new_levels`` some rows hold levels the training frame has not (and the
    categories are listed in another order), and the score (the target's basis)."""
    rng = np.random.default_rng(seed)
    columns = {"x": rng.normal(size=n).astype(np.float32)}
    codes = {}
    for name, k in (("small", 3), ("mid", 10), ("many", 300)):
        c = rng.integers(0, k, n)
        if name == "many":                            # half the rows on 5 frequent levels
            c = np.where(rng.random(n) < 0.5, c % 5, c)
        levels = [f"{name}{i}" for i in range(k)]
        labels = np.array(levels, dtype=object)[c]
        if new_levels:
            labels[rng.random(n) < 0.1] = f"{name}_new"
            levels = [f"{name}_new"] + levels[::-1]
        labels[rng.random(n) < 0.05] = None
        columns[name] = pd.Categorical(labels, categories=levels)
        codes[name] = c
    z = rng.uniform(-1, 1, n).astype(np.float32)
    z[rng.random(n) < 0.1] = np.nan
    columns["z"] = z
    effect = np.random.default_rng(99).normal(0, 1.5, 300)
    score = (columns["x"] + (codes["small"] == 1) + 0.4 * (codes["mid"] % 3)
             + effect[codes["many"]] + np.nan_to_num(z))
    return pd.DataFrame(columns), score


@pytest.fixture(scope="module")
def data():
    train_frame, score = _frame(600, seed=0)
    test_frame, _ = _frame(200, seed=1, new_levels=True)
    return train_frame, score, test_frame


def _fit(encoding, task, policy, frame, score):
    params = dict(SMALL, grow_policy=policy, categorical_encoding=encoding, max_bins=64)
    if encoding == "onehot":
        params["max_cat_to_onehot"] = 12             # 3 and 10 levels one-hot, 300 sets
    if task == "regression":
        return BoostRegressor(**params).fit(frame, score)
    cuts = [0.5] if task == "binary" else [-0.5, 0.5, 1.5]
    return BoostClassifier(**params).fit(frame, np.digitize(score, cuts))


def _run(model, X, **kw):
    """The graph's outputs by name."""
    sess = ort.InferenceSession(to_onnx(model, **kw).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {"X": X})))


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("task", ["regression", "binary", "multiclass"])
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_graph_predicts_as_the_encoded_model(data, encoding, task, policy):
    frame, score, new = data
    model = _fit(encoding, task, policy, frame, score)
    encoder = model.model_.encoder
    if encoding in KINDS:
        assert encoder.kinds == KINDS[encoding]
    else:
        assert {"onehot", "target_stats"} <= set(encoder.kinds)
    if task == "multiclass" and "target_stats" in encoder.kinds:
        assert encoder.prior.size == 4                # one mean column per class
    rows = pd.concat([frame.iloc[:100], new], ignore_index=True)
    for dtype in ("float32", "float64"):
        X = onnx_input(model, rows, dtype=dtype)     # the original features, as codes
        assert X.shape == (300, 5)
        tol = TOL[dtype]
        out = _run(model, X, dtype=dtype)
        raw = _run(model, X, dtype=dtype, raw=True)["raw_score"]
        if task == "regression":
            np.testing.assert_allclose(out["prediction"], model.predict(rows), rtol=tol,
                                       atol=tol)
            np.testing.assert_allclose(raw, model.predict(rows), rtol=tol, atol=tol)
            continue
        np.testing.assert_allclose(out["probabilities"], model.predict_proba(rows), rtol=0,
                                   atol=tol)
        decision = model.decision_function(rows)
        np.testing.assert_allclose(raw, decision, rtol=tol, atol=tol)
        margin = (np.abs(decision) if decision.ndim == 1
                  else np.diff(np.sort(decision, axis=1)[:, -2:])[:, 0])
        clear = margin > 1e-4
        assert np.array_equal(out["label"][clear], model.predict(rows)[clear])


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_set_splits_inside_an_encoded_model(data):
    """The 300-level feature keeps its set splits (with its "other" bin) next to one-hot
    columns, and the graph sends every code, seen, rare, unseen or missing, as boostlib."""
    frame, score, _ = data
    model = _fit("onehot", "binary", "depthwise", frame, score)
    encoder = model.model_.encoder
    mapper = model.model_.ensemble.bin_mapper
    sets = int(np.flatnonzero(encoder.source == 3)[0])     # the column of "many"
    assert mapper.categorical_[sets] and mapper.cat_other_[sets]
    assert any(((t.nan_right == 2) & (t.feature == sets)).any()
               for t in model.model_.ensemble.scalar_trees())
    X = onnx_input(model, frame)
    probe = X[np.arange(310) % X.shape[0]].copy()
    probe[:300, 3] = np.arange(300)                         # every code of "many"
    probe[300:, 3] = [300, 301, 999, MAX_CODE, np.nan] * 2
    probe[:, 2] = np.arange(310) % 12                       # "mid": seen, unseen, ...
    probe[::7, 2] = np.nan
    out = _run(model, probe)
    np.testing.assert_allclose(out["probabilities"], model.predict_proba(probe), atol=1e-5)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_engine_model_of_codes_unseen_and_missing(encoding):
    """A numeric array's codes: the graph looks up seen codes, gives unseen ones (within
    the levels' range, beyond it, the largest code) the unseen row and NaN the missing row;
    with linear leaves too, whose features include encoded columns."""
    rng = np.random.default_rng(3)
    n = 500
    X = np.column_stack([rng.normal(size=n), rng.integers(0, 3, n) * 2,
                         rng.integers(0, 200, n), rng.integers(0, 8, n)]).astype(np.float64)
    X[rng.random(X.shape) < 0.05] = np.nan
    effect = rng.normal(size=200)
    y = (np.nan_to_num(X[:, 0]) + (X[:, 1] == 2)
         + effect[np.nan_to_num(X[:, 2]).astype(int)] + 0.3 * np.nan_to_num(X[:, 3]))
    params = dict(n_estimators=8, max_depth=3, categorical_encoding=encoding,
                  linear_leaves=True, random_state=0, n_jobs=1)
    model = train(params, Dataset(X, y, categorical_features=[1, 2, 3]))
    assert model.encoder is not None
    Xp = X[:200].copy()
    Xp[:20, 1] = 1                                          # between seen codes 0, 2, 4
    Xp[20:40, 1] = 6
    Xp[40:60, 2] = 200
    Xp[60:70, 2] = MAX_CODE
    Xp[70:80, 3] = 9
    Xp[80:90, 1:] = np.nan
    for dtype in ("float32", "float64"):
        Xd = Xp.astype(dtype)
        tol = TOL[dtype]
        out = _run(model, Xd, dtype=dtype)
        np.testing.assert_allclose(out["prediction"], model.predict(Xd), rtol=tol, atol=tol)


def test_features_without_a_code_seen_in_training():
    """A categorical feature missing in every training row: no one-hot column, target
    statistics NaN whatever the value."""
    rng = np.random.default_rng(4)
    n = 300
    X = np.column_stack([rng.normal(size=n), np.full(n, np.nan), rng.integers(0, 3, n)])
    y = X[:, 0] + (X[:, 2] == 1)
    Xp = X[:60].copy()
    Xp[:20, 1] = 0
    Xp[20:40, 1] = 5
    for encoding, width in (("onehot", 4), ("target_stats", 5)):
        model = train(dict(n_estimators=5, categorical_encoding=encoding, random_state=0,
                           n_jobs=1), Dataset(X, y, categorical_features=[1, 2]))
        assert model.encoder.codes[1].size == 0 and model.encoder.n_columns == width
        for dtype in ("float32", "float64"):
            Xd = Xp.astype(dtype)
            out = _run(model, Xd, dtype=dtype)
            np.testing.assert_allclose(out["prediction"], model.predict(Xd),
                                       rtol=TOL[dtype], atol=TOL[dtype])


def test_float32_tables_bin_as_boostlib(data):
    """Every value of a float32 lookup table falls in the bin of boostlib's float64 value
    under the trees' float32 thresholds."""
    frame, score, _ = data
    engine = _fit("target_stats", "multiclass", "depthwise", frame, score).model_
    mapper = engine.ensemble.bin_mapper
    parts32 = encoding_arrays(engine.encoder, mapper, np.float32).parts
    parts64 = encoding_arrays(engine.encoder, mapper, np.float64).parts
    assert [type(p).__name__ for p in parts32] == ["CopiedColumns", "LookupTable",
                                                   "LookupTable", "LookupTable",
                                                   "CopiedColumns"]
    col = 1
    for p32, p64 in zip(parts32, parts64):
        if type(p32).__name__ == "CopiedColumns":
            col += p32.width
            continue
        assert p32.table.dtype == np.float32 and p64.table.dtype == np.float64
        assert np.isnan(p64.table[-2:]).all()               # unseen and missing rows
        for c in range(p32.width):
            borders = mapper.borders_[col + c]
            want = np.searchsorted(borders, p64.table[:, c], side="left")
            got = np.searchsorted(float32_floor(borders), p32.table[:, c], side="left")
            assert np.array_equal(got, want)
            np.testing.assert_allclose(p32.table[:, c], p64.table[:, c], rtol=1e-6)
        col += p32.width


def test_snap_float32_on_and_between_borders():
    s1 = float(np.spacing(np.float32(1.0)))                 # float32 steps at 1 and 2
    s2 = float(np.spacing(np.float32(2.0)))
    borders = np.array([1.0 + 0.25 * s1, 2.0 + 0.9 * s2, 3.0])   # floors: 1, 2, 3
    values = np.array([1.0, 1.0 + 0.2 * s1,     # bin 0
                       1.0 + 0.3 * s1,          # bin 1, but rounds to 1.0 (bin 0's top)
                       2.0 + 0.8 * s2,          # bin 1, but rounds to 2 + s2 (bin 2)
                       2.0 + 0.95 * s2,         # bin 2
                       3.0, 3.0 + 1e-9,         # bins 2 and 3
                       np.nan])
    snapped = snap_float32(values, borders)
    assert snapped.dtype == np.float32
    want = np.searchsorted(borders, values, side="left")
    got = np.searchsorted(float32_floor(borders), snapped, side="left")
    assert want[:-1].tolist() == [0, 0, 1, 1, 2, 2, 3]
    assert np.array_equal(got[:-1], want[:-1])
    assert np.isnan(snapped[-1])
    np.testing.assert_allclose(snapped[:-1], values[:-1], rtol=2e-7)   # a step at most
    assert snapped[2] == np.float32(1.0 + s1) and snapped[3] == np.float32(2.0)
    # two borders within one float32 step: no float32 between them, the upper end
    close = np.array([1.0 + 0.25 * s1, 1.0 + 0.5 * s1])
    assert snap_float32(np.array([1.0 + 0.3 * s1]), close)[0] == np.float32(1.0)


def test_graph_details_and_model_files(data, tmp_path):
    frame, score, new = data
    clf = _fit("auto", "binary", "symmetric", frame, score)
    onx = to_onnx(clf)
    (x,) = onx.graph.input
    assert [d.dim_value for d in x.type.tensor_type.shape.dim][1] == 5
    meta = {p.key: json.loads(p.value) for p in onx.metadata_props}
    assert meta["categorical_features"] == [1, 2, 3]
    assert meta["categorical_encoding"] == clf.model_.encoder.kinds
    ops = [n.op_type for n in onx.graph.node]
    assert ops.count("TreeEnsemble") == 1 and "LabelEncoder" in ops and "Concat" in ops
    assert "categorical_encoding='auto'" in onx.doc_string
    path = tmp_path / "model.json"                          # the encoder in a model file
    clf.save_model(path)
    loaded = Model.load(path)
    X = onnx_input(clf, new)
    out = _run(loaded, X)
    np.testing.assert_allclose(out["probabilities"][:, 1], clf.predict_proba(new)[:, 1],
                               atol=1e-5)
