"""The kernel variants built for AVX2 against the baseline build: bit for bit.

``boostlib._kernels`` loads ``_loss`` and ``_predictor`` built with -mavx2 when the CPU has
AVX2. Their source is the baseline modules'; without FMA every operation rounds the same way,
so every output must be bit-identical, and so must a whole fit (the same ``random_state``
gives the same model on any machine). The tests run both variants side by side; they are
skipped where this CPU or this build has no AVX2 variant.
"""
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import boostlib
from boostlib.engine import context
from boostlib.engine.trees import depthwise, symmetric
from boostlib.builtin import losses
from boostlib import _kernels
from boostlib._kernels import _cpu
from reference.strategies import KERNEL_SETTINGS, binned_data

from test_kernels_predictor import _ensemble, depthwise_tree, oblivious_tree

FL = dict(allow_nan=False, allow_infinity=False, allow_subnormal=False)


def _variants(name):
    if not _cpu.has_avx2():
        pytest.skip("this CPU does not run AVX2 code")
    try:
        return _kernels.variant(name, "baseline"), _kernels.variant(name, "avx2")
    except ImportError:
        pytest.skip("boostlib was built without its AVX2 kernels")


def _bits(a):
    """The values' bits, every NaN made the same one (which NaN an operation on two NaNs
    returns depends on its operands' order in the vector instruction: all mean "no value")."""
    a = np.array(a, dtype=np.float64)
    a[np.isnan(a)] = np.nan
    return a.view(np.uint64)


def assert_same_bits(a, b, what):
    a, b = _bits(a), _bits(b)
    bad = np.flatnonzero(a != b)
    assert bad.size == 0, (f"{what}: {bad.size} values differ, first at {bad[:5]}: "
                           f"{a[bad][:5].view(np.float64)} vs {b[bad][:5].view(np.float64)}")


# raw scores over the whole range the kernels meet, with the edges: huge, NaN, +-0, +-inf
RAW = st.one_of(st.floats(-50, 50), st.floats(-1e6, 1e6),
                st.sampled_from([0.0, -0.0, 745.0, -745.0, 800.0, -800.0, np.nan, np.inf,
                                 -np.inf]))


@st.composite
def loss_inputs(draw):
    n = draw(st.integers(1, 300))
    z = draw(hnp.arrays(np.float64, n, elements=RAW))
    y = draw(hnp.arrays(np.float64, n, elements=st.one_of(st.sampled_from([0.0, 1.0]),
                                                          st.floats(0, 1))))
    w = draw(st.one_of(st.just(np.empty(0)),
                       hnp.arrays(np.float64, n, elements=st.floats(0, 10))))
    return y, z, w


@KERNEL_SETTINGS
@given(inputs=loss_inputs(), kind=st.sampled_from([0, 1, 2]), scale=st.sampled_from([0.1, 2.0]),
       n_threads=st.sampled_from([1, 2]))
def test_loss_kernels_are_bit_identical(inputs, kind, scale, n_threads):
    base, avx2 = _variants("_loss")
    y, z, w = inputs
    n = y.size
    name = ("logloss", "mse", "sla")[kind]
    out = {}
    for label, mod in (("baseline", base), ("avx2", avx2)):
        g, h = np.full(n, np.nan), np.full(n, np.nan)
        if name == "sla":
            mod.sla_gradient(y, z, w, scale, g, h, n_threads)
            total = mod.sla_sum(y, z, w, scale, n_threads)
        else:
            getattr(mod, f"{name}_gradient")(y, z, w, g, h, n_threads)
            total = getattr(mod, f"{name}_sum")(y, z, w, n_threads)
        out[label] = (g, h, np.array([total]))
    for what, a, b in zip(("gradient", "hessian", "loss sum"), out["baseline"], out["avx2"]):
        assert_same_bits(a, b, f"{name} {what}")


@KERNEL_SETTINGS
@given(x=hnp.arrays(np.float64, st.integers(1, 300),
                    elements=st.one_of(st.floats(-800, 0), st.sampled_from([0.0, -0.0, np.nan]))))
def test_exp_is_bit_identical(x):
    base, avx2 = _variants("_loss")
    a, b = np.empty_like(x), np.empty_like(x)
    base.exp_nonpositive(x, a)
    avx2.exp_nonpositive(x, b)
    assert_same_bits(a, b, "exp")



@KERNEL_SETTINGS
@given(data=binned_data(max_rows=1200), policy=st.sampled_from(["symmetric", "depthwise"]),
       pick=st.data(), n_threads=st.sampled_from([1, 2]))
def test_prediction_kernels_are_bit_identical(data, policy, pick, n_threads):
    base, avx2 = _variants("_predictor")
    make = oblivious_tree if policy == "symmetric" else depthwise_tree
    trees = pick.draw(st.lists(make(data.nbnm), min_size=0, max_size=4))
    coef = pick.draw(hnp.arrays(np.float64, len(trees), elements=st.floats(-2, 2, **FL)))
    start = pick.draw(hnp.arrays(np.float64, data.n_rows, elements=st.floats(-5, 5, **FL)))
    ens = _ensemble(policy, data.missing_bin)
    out = {}
    for label, mod in (("baseline", base), ("avx2", avx2)):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(symmetric if policy == "symmetric" else depthwise, "_predictor", mod)
            out[label] = start.copy()
            ens.add_trees_binned(data.X_binned, out[label], trees, coef, n_threads)
    assert_same_bits(out["baseline"], out["avx2"], f"{policy} prediction")


@KERNEL_SETTINGS
@given(n=st.integers(1, 2000), pick=st.data(), n_threads=st.sampled_from([1, 2]))
def test_add_leaf_values_is_bit_identical(n, pick, n_threads):
    base, avx2 = _variants("_predictor")
    rows = np.flatnonzero(pick.draw(hnp.arrays(np.bool_, n))).astype(np.int32)
    value = pick.draw(hnp.arrays(np.float64, st.integers(1, 64), elements=st.floats(-9, 9, **FL)))
    node = pick.draw(hnp.arrays(np.int32, rows.size,
                                elements=st.integers(0, value.size - 1)))
    coef = pick.draw(st.floats(-2, 2, **FL))
    start = pick.draw(hnp.arrays(np.float64, n, elements=st.floats(-5, 5, **FL)))
    a, b = start.copy(), start.copy()
    base.add_leaf_values(a, rows, node, value, coef, n_threads)
    avx2.add_leaf_values(b, rows, node, value, coef, n_threads)
    assert_same_bits(a, b, "add_leaf_values")


def _use(monkeypatch, isa):
    for module, name in ((losses, "_loss"), (context, "_predictor"), (symmetric, "_predictor"),
                         (depthwise, "_predictor")):
        monkeypatch.setattr(module, name, _kernels.variant(name, isa))


@pytest.mark.parametrize("policy", ["symmetric", "depthwise"])
@pytest.mark.parametrize("sampler", [None, "mvs"])
def test_fit_is_bit_identical_on_either_variant(binary_data, monkeypatch, policy, sampler):
    """The end-to-end promise: a model does not depend on the CPU's instruction set."""
    _variants("_loss")
    X, y = binary_data
    X_test = X[:300].copy()
    X_test[::7, 0] = np.nan
    got = {}
    for isa in ("baseline", "avx2"):
        _use(monkeypatch, isa)
        est = boostlib.BoostClassifier(n_estimators=25, grow_policy=policy, sampler=sampler,
                                       subsample=0.6 if sampler else 1.0, random_state=3,
                                       n_jobs=2)
        est.fit(X, y)
        got[isa] = (est.decision_function(X_test),
                    np.asarray(est.evals_result_["train"]["logloss"]))
    assert_same_bits(got["baseline"][0], got["avx2"][0], "decision_function")
    assert_same_bits(got["baseline"][1], got["avx2"][1], "training loss curve")


def _isa_in_subprocess(value):
    env = dict(os.environ, BOOSTLIB_ISA=value)
    code = ("from boostlib._kernels import ISA, _loss, _predictor; "
            "print(ISA, _loss.__name__, _predictor.__name__)")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True)


def test_isa_can_be_forced_to_baseline():
    res = _isa_in_subprocess("baseline")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["baseline", "boostlib._kernels._loss",
                                  "boostlib._kernels._predictor"]


def test_isa_auto_takes_avx2_where_it_can():
    res = _isa_in_subprocess("auto")
    assert res.returncode == 0, res.stderr
    isa = res.stdout.split()[0]
    try:
        built = all(_kernels.variant(m, "avx2") for m in _kernels.VARIANT_MODULES)
    except ImportError:
        built = False
    assert isa == ("avx2" if _cpu.has_avx2() and built else "baseline")
    suffix = "_avx2" if isa == "avx2" else ""
    assert res.stdout.split()[1:] == [f"boostlib._kernels._loss{suffix}",
                                      f"boostlib._kernels._predictor{suffix}"]


def test_isa_unknown_value_is_an_error_naming_it():
    res = _isa_in_subprocess("sse9")
    assert res.returncode != 0
    assert "BOOSTLIB_ISA='sse9' is invalid" in res.stderr
    assert "'baseline'" in res.stderr
