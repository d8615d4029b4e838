"""The engine layer: ``Dataset -> train() -> Model`` (no scikit-learn needed, except where a
test compares with the estimators)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from optional_imports import importorskip

import boostlib
from boostlib import Dataset, Model, ModelFileError, train
from boostlib.booster.training import default_loss


def _data(n=600, d=5, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random((n, d)) < 0.05] = np.nan
    z = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1] * X[:, 2]) + 0.5 * rng.normal(size=n)
    if classes == 0:
        return X, z
    edges = np.quantile(z, np.linspace(0, 1, classes + 1)[1:-1])
    return X, np.searchsorted(edges, z).astype(float)


P = dict(n_estimators=15, max_depth=3, random_state=0)


@pytest.mark.parametrize("policy", ["symmetric", "depthwise"])
def test_estimator_and_engine_give_the_same_model(policy):
    sk = importorskip("sklearn")  # noqa: F841 - only the estimator needs it
    X, y = _data()
    p = {**P, "grow_policy": policy, "sampler": "mvs", "subsample": 0.5}
    est = boostlib.BoostClassifier(**p).fit(X, y)
    model = train(p, Dataset(X, y))
    np.testing.assert_array_equal(est.predict_proba(X)[:, 1], model.predict(X))
    assert est.model_.loss_spec == model.loss_spec == {"name": "logloss", "params": {}}


def test_default_loss_follows_the_target():
    assert default_loss(np.array([0.0, 1.0, 1.0])) == "logloss"
    assert default_loss(np.array([0.0, 0.0])) == "mse"
    assert default_loss(np.array([0.0, 1.0, 2.0])) == "mse"
    X, z = _data(classes=0)
    assert train(P, Dataset(X, z)).loss_spec["name"] == "mse"


def test_float32_is_binned_without_a_float64_copy_and_gives_the_same_model():
    X, y = _data()
    X32 = X.astype(np.float32)
    ds = Dataset(X32, y)
    assert ds.X is X32 or np.shares_memory(ds.X, X32)
    m32 = train(P, ds)
    m64 = train(P, Dataset(X32.astype(np.float64), y))
    np.testing.assert_array_equal(m32.predict(X32), m64.predict(X32.astype(np.float64)))
    np.testing.assert_array_equal(m32.predict(np.asfortranarray(X32)), m32.predict(X32))


def test_validation_sets_are_binned_with_the_training_borders():
    X, y = _data()
    train_set = Dataset(X[:400], y[:400])
    valid = Dataset(X[400:], y[400:], reference=train_set)
    model = train({**P, "early_stopping_rounds": 3, "n_estimators": 200}, train_set,
                  valid_sets=[valid], valid_names=["holdout"])
    curve = model.evals_result["holdout"]["logloss"]
    assert len(curve) < 200 and model.best_iteration == int(np.argmin(curve))
    raw = model.predict(X[400:], raw=True)
    p = 1 / (1 + np.exp(-raw))
    expected = -np.mean(y[400:] * np.log(p) + (1 - y[400:]) * np.log(1 - p))
    assert curve[model.best_iteration] == pytest.approx(expected, rel=1e-9)


def test_train_rejects_bad_input_with_clear_errors():
    X, y = _data()
    with pytest.raises(ValueError, match=r"unknown training parameter\(s\) \['n_trees'\]"):
        train({"n_trees": 3}, Dataset(X, y))
    with pytest.raises(ValueError, match="learning_rate"):
        train({"learning_rate": -1.0}, Dataset(X, y))
    with pytest.raises(ValueError, match="has no target"):
        train(P, Dataset(X))
    with pytest.raises(TypeError, match="boostlib.Dataset"):
        train(P, X)
    other = Dataset(X, y)
    with pytest.raises(ValueError, match="another training set"):
        train(P, Dataset(X, y), valid_sets=[Dataset(X, y, reference=other)])
    with pytest.raises(ValueError, match="feature_names has 2 entries"):
        Dataset(X, y, feature_names=["a", "b"])
    with pytest.raises(ValueError, match="valid_names"):
        train(P, Dataset(X, y), valid_sets=[Dataset(X, y)], valid_names=["train"])


@pytest.mark.parametrize("classes", [0, 2, 4])
def test_model_save_load_round_trip(tmp_path, classes):
    X, y = _data(classes=classes)
    p = {**P, "loss": "multiclass"} if classes > 2 else P
    model = train(p, Dataset(X, y, feature_names=[f"f{i}" for i in range(5)]))
    model.save(tmp_path / "m.json")
    loaded = Model.load(tmp_path / "m.json")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.predict(X, raw=True), model.predict(X, raw=True))
    assert list(loaded.feature_names) == [f"f{i}" for i in range(5)]
    assert loaded.n_outputs == (classes if classes > 2 else 1)
    with pytest.raises(ModelFileError, match="engine model"):
        boostlib.load_model(tmp_path / "m.json")


def test_multiclass_model_predicts_probabilities_that_sum_to_one():
    X, y = _data(classes=4)
    model = train({**P, "loss": "multiclass"}, Dataset(X, y))
    proba = model.predict(X)
    assert proba.shape == (X.shape[0], 4)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    raw = model.predict(X, raw=True)
    assert raw.shape == (X.shape[0], 4) and model.n_trees == 15
    np.testing.assert_array_equal(np.argmax(proba, axis=1), np.argmax(raw, axis=1))
    imp = model.feature_importance()
    assert imp.shape == (5,) and imp.sum() == pytest.approx(1.0)


def test_predict_checks_the_number_of_features():
    X, y = _data()
    model = train(P, Dataset(X, y))
    with pytest.raises(ValueError, match="X has 4 features, but the model expects 5"):
        model.predict(X[:, :4])


def test_engine_and_model_files_work_without_scikit_learn(tmp_path):
    # the engine, the model files and train() must not import scikit-learn
    code = textwrap.dedent(f"""
        import sys
        sys.modules["sklearn"] = None        # any import of scikit-learn now fails
        import numpy as np
        import boostlib
        rng = np.random.default_rng(0)
        X = rng.normal(size=(200, 3)); y = (X[:, 0] > 0).astype(float)
        m = boostlib.train({{"n_estimators": 5}}, boostlib.Dataset(X, y))
        m.save({str(tmp_path / "m.json")!r})
        back = boostlib.Model.load({str(tmp_path / "m.json")!r})
        assert (back.predict(X) == m.predict(X)).all()
        mc = boostlib.train({{"n_estimators": 3, "loss": "multiclass"}},
                            boostlib.Dataset(X, np.arange(200) % 3))
        assert mc.predict(X).shape == (200, 3)
        print("ok")
    """)
    env = {**os.environ, "BOOSTLIB_DISABLE_PLUGIN_AUTOLOAD": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
