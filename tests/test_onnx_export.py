"""ONNX export (``boostlib.export.to_onnx``, ``boostlib export``): onnxruntime runs the graph
and its outputs equal boostlib's predictions, for every task and tree kind, on float32 rows
with NaN, values on the bin borders and categorical codes (seen, rare and unseen)."""
import json
import sys

import numpy as np
import pytest

from optional_imports import importorskip

onnx = importorskip("onnx")
ort = importorskip("onnxruntime")

from boostlib import (BoostClassifier, BoostRanker, BoostRegressor, Dataset, Model,  # noqa: E402
                      train)
from boostlib.builtin.losses import MSELoss  # noqa: E402
from boostlib.export import onnx_input, to_onnx  # noqa: E402
from boostlib.export.onnx_trees import float32_floor  # noqa: E402
from boostlib.frontend.cli import main  # noqa: E402

POLICIES = ("symmetric", "depthwise", "lossguide")
SMALL = dict(n_estimators=25, max_depth=4, learning_rate=0.3, random_state=0, n_jobs=1)
TOL = 1e-5


def _session(model, **kw):
    onx = to_onnx(model, **kw)
    return ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])


def _run(model, X, **kw):
    """The graph's outputs by name."""
    sess = _session(model, **kw)
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {"X": X})))


def _numeric(n=300, seed=0):
    """float32 features: normal, uniform, integers 0..9 (borders at k + 0.5, exact in
    float32), a heavy tail; about 10% NaN."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=n), rng.uniform(-3, 3, n), rng.integers(0, 10, n),
                         rng.standard_exponential(n) * 1e3]).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    return X


def _probes(model, X, cat_codes=None):
    """``X`` plus rows with each numeric feature on each border (the largest float32 at or
    below it, which goes left, and the next float32, which goes right) and each categorical
    feature on each training code, unseen codes and NaN; and a row of NaN."""
    mapper = (model.model_ if hasattr(model, "model_") else model).ensemble.bin_mapper
    rows = [X, np.full((1, X.shape[1]), np.nan, dtype=np.float32)]
    for f in range(X.shape[1]):
        if mapper.categorical_[f]:
            codes = mapper.cat_codes_[f]
            top = int(codes.max()) if codes.size else 0
            values = np.concatenate([codes, [top + 1, top + 7, 999, np.nan]]
                                    + ([cat_codes] if cat_codes is not None else []))
        else:
            low = float32_floor(mapper.borders_[f])
            values = np.concatenate([low, np.nextafter(low, np.float32(np.inf))])
        block = X[np.arange(values.size) % X.shape[0]].copy()
        block[:, f] = values
        rows.append(block)
    return np.ascontiguousarray(np.concatenate(rows), dtype=np.float32)


def _check_classifier(clf, X):
    out = _run(clf, X)
    proba = clf.predict_proba(X)
    assert out["probabilities"].shape == proba.shape
    np.testing.assert_allclose(out["probabilities"], proba, rtol=0, atol=TOL)
    # labels: rows whose top two raw scores are apart (float32 sums may swap a near tie)
    raw = clf.decision_function(X)
    margin = np.abs(raw) if raw.ndim == 1 else np.diff(np.sort(raw, axis=1)[:, -2:])[:, 0]
    clear = margin > 1e-4
    assert clear.mean() > 0.95
    assert np.array_equal(out["label"][clear], clf.predict(X)[clear])
    assert out["label"].dtype.kind == clf.classes_.dtype.kind or clf.classes_.dtype.kind in "UO"


def _check_regressor(reg, X):
    out = _run(reg, X)
    pred = reg.predict(X)
    assert out["prediction"].shape == pred.shape
    np.testing.assert_allclose(out["prediction"], pred, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("policy", POLICIES)
def test_binary_classifier(policy):
    X = _numeric()
    y = np.where(np.nan_to_num(X[:, 0]) + (np.nan_to_num(X[:, 2]) > 4) > 0.5, "yes", "no")
    clf = BoostClassifier(grow_policy=policy, **SMALL).fit(X, y)
    _check_classifier(clf, _probes(clf, X))


@pytest.mark.parametrize("policy", POLICIES)
def test_multiclass_classifier(policy):
    X = _numeric(seed=1)
    score = np.nan_to_num(X[:, 0]) + 0.3 * np.nan_to_num(X[:, 2])
    y = np.digitize(score, [0.5, 1.5, 2.5]) * 10        # 4 classes: 0, 10, 20, 30
    clf = BoostClassifier(grow_policy=policy, **SMALL).fit(X, y)
    assert clf.classes_.size == 4
    _check_classifier(clf, _probes(clf, X))


@pytest.mark.parametrize("policy", POLICIES)
def test_mse_regressor(policy):
    X = _numeric(seed=2)
    y = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 2]) + np.isnan(X[:, 1])
    reg = BoostRegressor(grow_policy=policy, **SMALL).fit(X, y)
    _check_regressor(reg, _probes(reg, X))


@pytest.mark.parametrize("loss,policy", [("poisson", "symmetric"), ("gamma", "depthwise"),
                                         ("tweedie", "lossguide"), ("poisson", "lossguide"),
                                         ("quantile", "symmetric"), ("l1", "depthwise")])
def test_regression_losses(loss, policy):
    X = _numeric(seed=3)
    rng = np.random.default_rng(3)
    mean = np.exp(0.5 * np.nan_to_num(X[:, 0]) + 0.1 * np.nan_to_num(X[:, 2]))
    y = rng.poisson(mean) + (0.5 if loss == "gamma" else 0.0)
    reg = BoostRegressor(loss=loss, grow_policy=policy, **SMALL).fit(X, y)
    _check_regressor(reg, _probes(reg, X))


@pytest.mark.parametrize("policy", POLICIES)
def test_ranker(policy):
    X = _numeric(n=400, seed=4)
    rng = np.random.default_rng(4)
    y = np.clip(np.round(np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 2]) / 4
                         + rng.normal(0, 0.5, 400)), 0, 4)
    ranker = BoostRanker(grow_policy=policy, **SMALL).fit(X, y, group=[20] * 20)
    Xp = _probes(ranker, X)
    out = _run(ranker, Xp)
    np.testing.assert_allclose(out["prediction"], ranker.predict(Xp), rtol=TOL, atol=TOL)


@pytest.mark.parametrize("update", ["sglb", "agbm", "dart", "rf"])
def test_rescaled_and_rewritten_coefficients(update):
    X = _numeric(seed=11)
    y = (np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) > 0).astype(int)
    extra = {"dart": {"update_params": {"rate_drop": 0.3, "skip_drop": 0.0}},
             "rf": {"learning_rate": 1.0, "subsample": 0.632}}.get(update, {})
    clf = BoostClassifier(update=update, **{**SMALL, **extra}).fit(X, y)
    _check_classifier(clf, _probes(clf, X))


def test_sparse_input_and_bundled_features():
    sparse = importorskip("scipy.sparse")
    rng = np.random.default_rng(12)
    onehot = np.eye(20)[rng.integers(0, 20, 300)]
    dense = np.hstack([onehot, rng.normal(size=(300, 2)) * (rng.random((300, 2)) < 0.3)])
    X = sparse.csr_matrix(dense)
    y = (onehot[:, :5].sum(axis=1) + dense[:, 20] > 0.5).astype(int)
    clf = BoostClassifier(grow_policy="depthwise", **SMALL).fit(X, y)
    X32 = onnx_input(clf, X)                                  # dense float32 rows
    assert isinstance(X32, np.ndarray) and X32.shape == dense.shape
    out = _run(clf, X32)
    np.testing.assert_allclose(out["probabilities"], clf.predict_proba(X32), atol=TOL)
    np.testing.assert_allclose(clf.predict_proba(sparse.csr_matrix(X32)),
                               clf.predict_proba(X32), rtol=0, atol=0)


def _categorical_frame(n, seed):
    pd = importorskip("pandas")
    rng = np.random.default_rng(seed)
    levels = [f"city{i}" for i in range(8)]
    city = rng.choice(levels, n).astype(object)
    city[rng.random(n) < 0.05] = None
    codes = rng.zipf(1.5, n).clip(1, 60) - 1                  # 60 codes: rare ones share a bin
    frame = pd.DataFrame({
        "city": pd.Categorical(city, categories=levels),
        "code": codes.astype(np.float64),
        "x": rng.normal(size=n).astype(np.float32)})
    frame.loc[rng.random(n) < 0.05, "code"] = np.nan
    effect = {lv: e for lv, e in zip(levels, rng.normal(0, 1.5, 8))}
    score = (frame.city.map(effect).astype(float).fillna(0).to_numpy()
             + np.where(frame.code.to_numpy() % 3 == 0, 1.0, -0.5) + frame.x.to_numpy())
    return frame, score, rng


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("task", ["binary", "multiclass", "regression"])
def test_categorical_features(policy, task):
    frame, score, rng = _categorical_frame(400, seed=5)
    params = dict(SMALL, grow_policy=policy, max_bins=16, categorical_features=["city", "code"],
                  min_data_per_group=5)
    if task == "regression":
        model = BoostRegressor(**params).fit(frame, score)
    else:
        cuts = [0.0] if task == "binary" else [-1.0, 0.0, 1.0]
        model = BoostClassifier(**params).fit(frame, np.digitize(score, cuts))
    mapper = model.model_.ensemble.bin_mapper
    assert mapper.categorical_.tolist() == [True, True, False]
    assert mapper.cat_other_.tolist() == [False, True, False]    # "code" has an "other" bin
    trees = model.model_.ensemble.scalar_trees()
    assert any((t.nan_right == 2).any() for t in trees)           # set splits were taken
    X = onnx_input(model, frame)                                  # codes of the levels
    np.testing.assert_array_equal(X, np.column_stack([
        frame.city.cat.codes.replace(-1, np.nan), frame.code, frame.x]).astype(np.float32))
    Xp = _probes(model, X)
    if task == "regression":
        _check_regressor(model, Xp)
    else:
        _check_classifier(model, Xp)


def test_onnx_input_codes_labels_against_the_training_levels():
    pd = importorskip("pandas")
    frame, score, _ = _categorical_frame(200, seed=6)
    clf = BoostClassifier(n_estimators=5, categorical_features=["city", "code"],
                          random_state=0).fit(frame, score > 0)
    new = pd.DataFrame({"city": pd.Categorical(["city3", "paris", None, "city0"],
                                               categories=["paris", "city0", "city3"]),
                        "code": [1.0, 500.0, np.nan, 2.0], "x": [0.5, -1.0, 2.0, np.nan]})
    X = onnx_input(clf, new)
    assert X.dtype == np.float32 and X.flags.c_contiguous
    np.testing.assert_array_equal(X[:, 0], [3, np.nan, np.nan, 0])    # unseen label: missing
    np.testing.assert_array_equal(X[:, 1], [1, 500, np.nan, 2])
    out = _run(clf, X)
    np.testing.assert_allclose(out["probabilities"], clf.predict_proba(new), atol=TOL)
    assert onnx_input(clf, new, dtype="float64").dtype == np.float64


@pytest.mark.parametrize("policy", POLICIES)
def test_float64_graph_is_exact_on_float64_rows(policy):
    X = _numeric(seed=7).astype(np.float64)
    X[:, 0] += 1e-9 * np.arange(X.shape[0])                  # not float32 values
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) > 0).astype(int)
    clf = BoostClassifier(grow_policy=policy, **SMALL).fit(X, y)
    mapper = clf.model_.ensemble.bin_mapper
    rows = [X]
    for f in range(X.shape[1]):                              # on each border and just above
        b = mapper.borders_[f]
        block = X[np.arange(2 * b.size) % X.shape[0]].copy()
        block[:, f] = np.concatenate([b, np.nextafter(b, np.inf)])
        rows.append(block)
    Xp = np.concatenate(rows)
    out = _run(clf, Xp, dtype="float64")
    assert out["probabilities"].dtype == np.float64
    np.testing.assert_allclose(out["probabilities"], clf.predict_proba(Xp), rtol=0, atol=1e-12)
    assert np.array_equal(out["label"], clf.predict(Xp))


def test_engine_models_and_raw_scores():
    X = _numeric(seed=8)
    y3 = np.digitize(np.nan_to_num(X[:, 0]), [-0.5, 0.5])
    params = dict(n_estimators=10, max_depth=3, random_state=0, n_jobs=1)
    multi = train(dict(params, loss="multiclass"), Dataset(X, y3))
    out = _run(multi, X)
    np.testing.assert_allclose(out["probabilities"], multi.predict(X), atol=TOL)
    assert out["label"].dtype == np.int64 and set(np.unique(out["label"])) <= {0, 1, 2}
    raw = _run(multi, X, raw=True)
    assert list(raw) == ["raw_score"]
    np.testing.assert_allclose(raw["raw_score"], multi.predict(X, raw=True), atol=TOL)

    binary = train(params, Dataset(X, (y3 == 2).astype(float)))     # logloss
    out = _run(binary, X)
    np.testing.assert_allclose(out["probabilities"][:, 1], binary.predict(X), atol=TOL)
    assert out["probabilities"].shape == (X.shape[0], 2)
    assert out["label"].tolist() == (binary.predict(X, raw=True) > 0).astype(int).tolist()

    reg = train(dict(params, loss="poisson"), Dataset(X, y3.astype(float)))
    out = _run(reg, X)
    np.testing.assert_allclose(out["prediction"], reg.predict(X), rtol=TOL, atol=TOL)
    raw = _run(reg, X, raw=True)["raw_score"]
    np.testing.assert_allclose(raw, reg.predict(X, raw=True), rtol=TOL, atol=TOL)


@pytest.mark.parametrize("policy", POLICIES)
def test_trees_without_splits(policy):
    X = np.ones((50, 3), dtype=np.float32)                  # constant: no tree can split
    y = np.arange(50) % 3
    clf = BoostClassifier(n_estimators=3, grow_policy=policy, random_state=0).fit(X, y)
    kind = clf.model_.ensemble.kind
    assert not any(kind.split_mask(t).any() for t in clf.model_.ensemble.scalar_trees())
    out = _run(clf, X)
    np.testing.assert_allclose(out["probabilities"], clf.predict_proba(X), atol=TOL)


@pytest.mark.parametrize("labels", [[False, True], [3, 7], ["no", "yes"], ["a", "b", "c"]])
def test_labels_keep_their_type(labels):
    X = _numeric(n=120, seed=10)
    labels = np.array(labels)
    y = labels[np.digitize(np.nan_to_num(X[:, 0]), [-0.3, 0.3][:labels.size - 1])]
    clf = BoostClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    out = _run(clf, X)
    assert out["label"].tolist() == clf.predict(X).tolist()
    assert type(out["label"].tolist()[0]) is type(clf.classes_.tolist()[0])


def test_graph_details():
    X = _numeric(n=50)
    clf = BoostClassifier(n_estimators=3, random_state=0).fit(X, np.arange(50) % 2)

    onx = to_onnx(clf, name="my_model")
    assert onx.graph.name == "my_model" and onx.producer_name == "boostlib"
    assert [i.name for i in onx.graph.input] == ["X"]
    assert [o.name for o in onx.graph.output] == ["label", "probabilities"]
    assert {"": 21, "ai.onnx.ml": 5} == {o.domain: o.version for o in onx.opset_import}
    meta = {p.key: json.loads(p.value) for p in onx.metadata_props}
    assert meta["categorical_features"] == [] and meta["loss"] == "logloss"
    ops = [n.op_type for n in onx.graph.node]
    assert ops.count("TreeEnsemble") == 1 and "Sigmoid" in ops


def test_float32_floor():
    rng = np.random.default_rng(0)
    v = np.concatenate([rng.normal(size=1000) * 10.0 ** rng.integers(-30, 30, 1000),
                        [0.0, 1.5, -2.25, 1e39, -1e39, np.inf, -np.inf, 3.4028235e38]])
    low = float32_floor(v)
    assert low.dtype == np.float32
    assert np.all(low.astype(np.float64) <= v)
    with np.errstate(over="ignore"):
        up = np.nextafter(low, np.float32(np.inf)).astype(np.float64)
    assert np.all((up > v) | np.isinf(v) | (low == np.finfo(np.float32).max))
    assert float32_floor(np.array([1.5]))[0] == np.float32(1.5)     # exact borders stay


class _Doubled(MSELoss):
    """A plugin-like loss whose transform has no declared link."""

    name = "doubled"
    link = None

    def transform(self, raw):
        return 2.0 * raw


def test_errors_name_the_parameter_and_the_expectation(monkeypatch):
    from boostlib._compat import NotFittedError

    with pytest.raises(NotFittedError, match="BoostRegressor instance is not fitted"):
        to_onnx(BoostRegressor())
    with pytest.raises(TypeError, match=r"model='model.json' is invalid; expected a fitted"):
        to_onnx("model.json")
    X = _numeric(n=60)
    y = np.nan_to_num(X[:, 0])
    reg = BoostRegressor(n_estimators=3, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match=r"dtype='float16' is invalid; expected 'float32' or"):
        to_onnx(reg, dtype="float16")
    with pytest.raises(ValueError, match=r"raw='yes' is invalid"):
        to_onnx(reg, raw="yes")
    doubled = BoostRegressor(n_estimators=3, loss=_Doubled(), random_state=0).fit(X, y)
    with pytest.raises(ValueError, match=r"loss 'doubled' \(.*_Doubled\) does not declare its "
                                         r"link.*raw=True"):
        to_onnx(doubled)
    raw = _run(doubled, X, raw=True)["raw_score"]           # the raw scores still export
    np.testing.assert_allclose(2.0 * raw, doubled.predict(X), rtol=TOL, atol=TOL)
    monkeypatch.setitem(sys.modules, "onnx", None)          # onnx not installed
    with pytest.raises(ImportError, match=r'pip install "boostlib\[onnx\]"'):
        to_onnx(reg)


def test_cli_export(tmp_path, capsys):
    X = _numeric(n=200, seed=9)
    y = np.where(np.nan_to_num(X[:, 0]) > 0, "a", np.where(np.nan_to_num(X[:, 1]) > 0, "b",
                                                           "c"))
    clf = BoostClassifier(n_estimators=10, max_depth=3, random_state=0).fit(X, y)
    path = tmp_path / "model.json"
    clf.save_model(path)
    assert main(["export", str(path), "--format", "onnx"]) == 0      # default: model.onnx
    assert "exported to" in capsys.readouterr().out
    sess = ort.InferenceSession(str(tmp_path / "model.onnx"),
                                providers=["CPUExecutionProvider"])
    label, proba = sess.run(None, {"X": X})
    np.testing.assert_allclose(proba, clf.predict_proba(X), atol=TOL)
    assert label.tolist() == clf.predict(X).tolist()

    engine_path = tmp_path / "engine.json"                           # an engine model file
    train(dict(n_estimators=5, random_state=0), Dataset(X, np.nan_to_num(X[:, 0]))).save(
        engine_path)
    out = tmp_path / "served.onnx"
    assert main(["export", str(engine_path), "-o", str(out), "--dtype", "float64"]) == 0
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    (pred,) = sess.run(None, {"X": X.astype(np.float64)})
    np.testing.assert_allclose(pred, Model.load(engine_path).predict(X), atol=1e-12)

    with pytest.raises(SystemExit) as exc:                           # unknown format
        main(["export", str(path), "--format", "pmml"])
    assert exc.value.code == 2
    assert "invalid choice: 'pmml'" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err
    assert main(["export", str(path), "--output", str(path)]) == 2  # would overwrite the input
    assert "is the MODEL.json file" in capsys.readouterr().err
