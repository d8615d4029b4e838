"""Hostile training parameters: every value is either used as documented (the model trains,
predicts finite values and its file loads back bit-identically) or refused by an error that
names the parameter."""
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boostlib import BoostClassifier, BoostRegressor, Dataset, load_model, train

from .budget import DEFAULT_EXAMPLES

RNG = np.random.default_rng(0)
X = RNG.normal(size=(120, 3))
Y = (X[:, 0] + 0.3 * RNG.normal(size=120) > 0).astype(int)

#: values no parameter should crash on
HOSTILE = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([2 ** 31, 2 ** 64, 10 ** 30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.5, 1.0, 1e-300, 1e300, -0.0, 2.0 ** -1074, np.float32(0.5),
                     np.int64(2), np.uint8(3)]),
    st.text(max_size=6), st.sampled_from(["symmetric", "depthwise", "uniform", "goss", "mvs",
                                          "sglb", "agbm", "newton", "gradient", "auto"]),
    st.lists(st.integers(0, 3), max_size=3), st.dictionaries(st.text(max_size=4),
                                                             st.integers(0, 3), max_size=2),
    st.just(object()), st.just(np.array([1, 2])), st.just(b"bytes"), st.just(1 + 2j))

PARAMS = sorted(set(BoostClassifier().get_params()) - {"verbose"})
#: valid values that would make a test slow, not wrong
SLOW = {"n_estimators": 50, "early_stopping_rounds": math.inf}


def _slow(name, value):
    bound = SLOW.get(name)
    return (bound is not None and isinstance(value, (int, float, np.number))
            and not isinstance(value, bool) and value == value and value > bound)


def _check(cls, y, params, tmp_path):
    model = cls(n_estimators=3, max_depth=2, random_state=0, n_jobs=1)
    try:
        model.set_params(**params)
        model.fit(X, y)
    except (ValueError, TypeError, FloatingPointError) as exc:   # PluginError: a ValueError
        message = str(exc)
        named = [name for name in params if name in message or
                 name.replace("_params", "") in message]
        assert named, f"{type(exc).__name__} does not name {list(params)}: {message}"
        return
    out = model.predict_proba(X) if cls is BoostClassifier else model.predict(X)
    assert np.all(np.isfinite(out))
    path = tmp_path / "model.json"
    model.save_model(path)
    again = load_model(path)
    same = again.predict_proba(X) if cls is BoostClassifier else again.predict(X)
    np.testing.assert_array_equal(out, same)


@settings(max_examples=max(50, DEFAULT_EXAMPLES // 5), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(PARAMS), value=HOSTILE, regression=st.booleans())
def test_a_hostile_parameter_is_used_or_refused_by_name(tmp_path, name, value, regression):
    if _slow(name, value):
        return
    cls, y = (BoostRegressor, Y * 2.0) if regression else (BoostClassifier, Y)
    _check(cls, y, {name: value}, tmp_path)


@pytest.mark.parametrize("name,value", [
    ("n_estimators", 10 ** 6), ("n_estimators", 2.0), ("max_depth", 17), ("max_depth", 31),
    ("n_jobs", 2.0), ("n_jobs", 1e300), ("n_jobs", 0), ("n_jobs", 10 ** 6),
    ("sampler", 0), ("sampler", False), ("sampler", ""), ("learning_rate", math.nan),
    ("max_bins", 256), ("subsample", 0.0), ("loss_params", {"nope": 1}),
    ("sampler_params", {"nope": 1}), ("update_params", {"nope": 1}),
])
def test_known_bad_values_name_the_parameter(tmp_path, name, value):
    params = {name: value}
    if name == "sampler_params":
        params["sampler"] = "goss"
    with pytest.raises((ValueError, TypeError)) as info:
        BoostClassifier(n_estimators=2, random_state=0, **params).fit(X, Y)
    assert name.replace("_params", "") in str(info.value)


@pytest.mark.parametrize("fit", [
    lambda params: BoostClassifier(n_estimators=2, **params).fit(X, Y),
    lambda params: BoostRegressor(n_estimators=2, **params).fit(X, Y * 1.0),
    lambda params: train({"n_estimators": 2, **params}, Dataset(X, Y)),
])
@pytest.mark.parametrize("sampler_params", [{"nope": 1}, {"leaf_values": "all"}])
def test_sampler_params_without_a_sampler_are_refused(fit, sampler_params):
    # no sampler would receive them (they were silently ignored, unknown keys too)
    with pytest.raises(ValueError, match=r"sampler_params=\{'\w+': .*\} has no sampler"):
        fit({"sampler_params": sampler_params})
    fit({"sampler_params": {}})                 # nothing to receive: accepted


def test_sampler_params_with_subsample_go_to_the_uniform_sampler():
    with pytest.raises(ValueError, match="sampler 'uniform'.*nope"):
        BoostRegressor(n_estimators=2, subsample=0.5, sampler_params={"nope": 1}).fit(X, Y)
    BoostRegressor(n_estimators=2, subsample=0.5, sampler_params={"leaf_values": "all"}
                   ).fit(X, Y)


def test_a_model_file_with_sampler_params_and_no_sampler_still_loads(tmp_path):
    # such files were written before the parameters were refused
    model = BoostRegressor(n_estimators=2, random_state=0).fit(X, Y * 1.0)
    path = tmp_path / "model.json"
    model.save_model(path)
    doc = json.loads(path.read_text())
    doc["params"]["sampler_params"] = {"leaf_values": "all"}
    path.write_text(json.dumps(doc))
    np.testing.assert_array_equal(load_model(path).predict(X), model.predict(X))
