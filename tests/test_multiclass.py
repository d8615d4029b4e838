"""Multiclass classification: the softmax loss, vector outputs through every tree kind,
sampler and update rule, the estimator's scikit-learn surface, and model files."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from optional_imports import importorskip

import boostlib
from boostlib import Dataset, train
from boostlib.api import Loss, SampleResult, Sampler
from boostlib.builtin.losses import MulticlassLoss, softmax
from boostlib.testing import check_loss


def _data(n=900, d=6, k=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random((n, d)) < 0.03] = np.nan
    score = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1] * X[:, 2])
             + 0.3 * rng.normal(size=n))
    y = np.searchsorted(np.quantile(score, np.linspace(0, 1, k + 1)[1:-1]), score)
    return X, y.astype(float)            # k balanced classes


# -- the loss ------------------------------------------------------------------------------
def _reference(y, raw):
    """Softmax cross-entropy and its derivatives, written out row by row."""
    n, k = raw.shape
    loss, g, h = np.empty(n), np.empty((n, k)), np.empty((n, k))
    for i in range(n):
        z = raw[i] - raw[i].max()
        p = np.exp(z) / np.exp(z).sum()
        loss[i] = -np.log(p[int(y[i])])
        for j in range(k):
            g[i, j] = p[j] - (1.0 if j == int(y[i]) else 0.0)
            h[i, j] = p[j] * (1.0 - p[j])
    return loss, g, h


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(2, 6), st.integers(1, 40))
def test_multiclass_loss_matches_the_row_by_row_reference(data, k, n):
    raw = data.draw(hnp.arrays(np.float64, (n, k), elements=st.floats(-30, 30)))
    y = data.draw(hnp.arrays(np.float64, n, elements=st.integers(0, k - 1).map(float)))
    loss = MulticlassLoss(n_classes=k)
    loss.validate_target(y)
    want_loss, want_g, want_h = _reference(y, raw)
    g, h = np.empty((k, n)).T, np.empty((k, n)).T      # the engine's column-major buffers
    loss.gradient_hessian(y, raw, g, h)
    np.testing.assert_allclose(g, want_g, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(h, want_h, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(loss.loss(y, raw), want_loss, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g.sum(axis=1), 0.0, atol=1e-12)   # softmax: sum_k g_k = 0
    np.testing.assert_allclose(softmax(raw).sum(axis=1), 1.0, rtol=0, atol=1e-12)


def test_multiclass_loss_passes_the_conformance_checks():
    check_loss(MulticlassLoss())
    check_loss(MulticlassLoss(n_classes=7))


def test_multiclass_loss_bias_is_the_log_of_the_class_frequencies():
    y = np.array([0, 0, 0, 1, 2, 2], dtype=float)
    loss = MulticlassLoss()
    loss.validate_target(y)
    np.testing.assert_allclose(softmax(loss.init_raw(y, None)[None])[0], [0.5, 1 / 6, 1 / 3])
    w = np.array([1, 1, 1, 3, 0, 0], dtype=float)
    np.testing.assert_allclose(softmax(loss.init_raw(y, w)[None])[0][:2], [0.5, 0.5])


@pytest.mark.parametrize("bad, match", [
    (np.array([0.0, 1.5]), "class indices"), (np.array([0.0, -1.0]), "class indices"),
    (np.array([0.0, 0.0]), "at least 2 classes")])
def test_multiclass_loss_rejects_targets_that_are_not_class_indices(bad, match):
    with pytest.raises(ValueError, match=match):
        MulticlassLoss().validate_target(bad)
    with pytest.raises(ValueError, match="n_classes=3; the target holds class index 3"):
        MulticlassLoss(n_classes=3).validate_target(np.array([0.0, 3.0]))


# -- every tree kind, sampler and update rule ---------------------------------------------------
UPDATES = {"sgb": None, "sglb": {"posterior_sampling": True}, "agbm": None, "agbmr": None,
           "vagbm": None, "dart": {"rate_drop": 0.3, "skip_drop": 0.0}, "rf": None}


@pytest.mark.parametrize("policy, sampler, update", list(itertools.product(
    ["symmetric", "depthwise"], [None, "uniform", "goss", "mvs"], sorted(UPDATES))))
def test_every_tree_kind_sampler_and_update_rule_learn_multiclass(policy, sampler, update):
    X, y = _data()
    p = dict(n_estimators=12, max_depth=3, grow_policy=policy, loss="multiclass",
             update=update, update_params=UPDATES[update], random_state=0)
    if update == "rf":                  # averaged trees need bagging (or column sampling)
        p.update(learning_rate=1.0, colsample_bynode=0.7, subsample=0.632)
    if sampler is not None:
        p.update(sampler=sampler, subsample=0.5,
                 sampler_params={"warmup": False} if sampler == "goss" else None)
    train_set = Dataset(X[:700], y[:700])
    model = train(p, train_set, valid_sets=[Dataset(X[700:], y[700:])])
    curve = model.evals_result["valid_0"]["multiclass"]
    assert curve[-1] < curve[0] < np.log(4) + 0.05
    proba = model.predict(X[700:])
    assert proba.shape == (200, 4)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)


def test_sglb_virtual_ensembles_have_one_probability_vector_per_member():
    X, y = _data()
    model = train(dict(n_estimators=20, max_depth=3, loss="multiclass", update="sglb",
                       update_params={"posterior_sampling": True}, random_state=0),
                  Dataset(X, y))
    members = model.predict_virtual_ensembles(X[:7], 4)
    assert members.shape == (7, 4, 4)
    np.testing.assert_allclose(members.sum(axis=1), 1.0, atol=1e-12)
    # the last member is the final model
    np.testing.assert_allclose(members[..., -1], model.predict(X[:7]), rtol=1e-12)


@pytest.mark.parametrize("policy", ["symmetric", "depthwise"])
def test_multiclass_models_do_not_depend_on_n_jobs(policy):
    X, y = _data()
    p = dict(n_estimators=8, max_depth=4, grow_policy=policy, loss="multiclass",
             sampler="mvs", subsample=0.6, random_strength=1.0, random_state=3)
    a = train({**p, "n_jobs": 1}, Dataset(X, y)).predict(X, raw=True)
    b = train({**p, "n_jobs": 2}, Dataset(X, y)).predict(X, raw=True)
    np.testing.assert_array_equal(a, b)


def test_samplers_rank_rows_by_the_norm_of_their_gradient_vector():
    seen = []

    class Recorder(Sampler):
        name = "recorder"

        def sample(self, gradient, hessian, rng, iteration):
            seen.append((gradient.copy(), hessian.copy()))
            return SampleResult(np.arange(0, gradient.shape[0], 2, dtype=np.int32))

    X, y = _data(n=300)
    model = train(dict(n_estimators=1, max_depth=2, loss="multiclass", sampler=Recorder()),
                  Dataset(X, y))
    g_seen, h_seen = seen[0]
    assert g_seen.shape == h_seen.shape == (300,)
    loss = MulticlassLoss(n_classes=4)
    loss.validate_target(y)
    raw = np.tile(model.ensemble.bias_array, (300, 1))
    g, h = np.empty((300, 4)), np.empty((300, 4))
    loss.gradient_hessian(y, raw, g, h)
    np.testing.assert_allclose(g_seen, np.linalg.norm(g, axis=1), rtol=1e-12)
    np.testing.assert_allclose(h_seen, np.linalg.norm(h, axis=1), rtol=1e-12)


class TwoQuantiles(Loss):
    """A third-party vector-output loss: the pinball losses of two quantiles of y."""

    name = "two_quantiles"
    n_outputs = 2
    hessian_can_be_negative = True      # piecewise linear: zero hessian
    hessian_floor = 1.0

    def init_raw(self, y, sample_weight):
        return np.quantile(y, [0.2, 0.8]) if sample_weight is None else np.zeros(2)

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        for j, q in enumerate((0.2, 0.8)):
            gradient[:, j] = np.where(raw[:, j] > y, 1.0 - q, -q)
        hessian[...] = 0.0

    def loss(self, y, raw):
        out = np.zeros(y.shape[0])
        for j, q in enumerate((0.2, 0.8)):
            r = y - raw[:, j]
            out += np.maximum(q * r, (q - 1) * r)
        return out


def test_a_vector_output_plugin_loss_trains_with_every_tree_kind():
    X, z = _data(n=800)
    z = np.nan_to_num(X[:, 0]) + np.random.default_rng(1).normal(size=800)
    for policy in ("symmetric", "depthwise"):
        model = train(dict(n_estimators=40, max_depth=3, grow_policy=policy,
                           loss=TwoQuantiles(), random_state=0), Dataset(X, z))
        pred = model.predict(X)
        assert pred.shape == (800, 2)
        below = np.mean(z[:, None] <= pred, axis=0)
        assert 0.1 < below[0] < 0.35 and 0.65 < below[1] < 0.9


# -- the estimator --------------------------------------------------------------------------
def test_classifier_handles_any_labels_and_follows_scikit_learn_conventions():
    importorskip("sklearn")
    X, y = _data()
    labels = np.array(["ant", "bee", "cat", "dog"])[y.astype(int)]
    clf = boostlib.BoostClassifier(n_estimators=20, max_depth=3, random_state=0)
    clf.fit(X, labels)
    assert list(clf.classes_) == ["ant", "bee", "cat", "dog"]
    proba = clf.predict_proba(X)
    assert proba.shape == (900, 4)
    scores = clf.decision_function(X)
    assert scores.shape == (900, 4)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[np.argmax(proba, axis=1)])
    assert clf.score(X, labels) > 0.6
    assert clf.model_.loss_spec["name"] == "multiclass"
    engine = train(dict(n_estimators=20, max_depth=3, random_state=0, loss="multiclass"),
                   Dataset(X, y))
    np.testing.assert_array_equal(engine.predict(X), proba)


def test_classifier_refuses_a_binary_loss_for_three_classes():
    importorskip("sklearn")
    X, y = _data(k=3)
    with pytest.raises(ValueError, match="'logloss' is a binary loss, but y has 3 classes"):
        boostlib.BoostClassifier(loss="logloss", n_estimators=2).fit(X, y)


def test_multiclass_estimator_model_file_round_trip(tmp_path):
    importorskip("sklearn")
    X, y = _data()
    labels = np.array([10, 20, 30, 40])[y.astype(int)]
    clf = boostlib.BoostClassifier(n_estimators=10, max_depth=3, grow_policy="depthwise",
                                   random_state=0).fit(X, labels)
    clf.save_model(tmp_path / "m.json")
    back = boostlib.load_model(tmp_path / "m.json")
    np.testing.assert_array_equal(back.predict_proba(X), clf.predict_proba(X))
    np.testing.assert_array_equal(back.classes_, clf.classes_)
    assert back.get_params() == clf.get_params()


@pytest.mark.parametrize("edit, match", [
    (lambda d: d["model"]["trees"][0]["outputs"].pop(), "has 3 trees for 4 outputs"),
    (lambda d: d["model"].update(bias=[0.0, 1.0]), "has 2 entries for 4 outputs"),
    (lambda d: d["model"].update(n_outputs=3), "outputs"),
    (lambda d: d["classes"]["values"].pop(), "3 classes for a model of 4 outputs"),
])
def test_corrupt_multiclass_model_files_are_refused(edit, match):
    importorskip("sklearn")
    from boostlib.frontend.estimator_files import estimator_from_dict, estimator_to_dict
    X, y = _data()
    doc = estimator_to_dict(boostlib.BoostClassifier(n_estimators=2, max_depth=2).fit(X, y))
    edit(doc)
    with pytest.raises(boostlib.ModelFileError, match=match):
        estimator_from_dict(doc)
