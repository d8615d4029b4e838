"""Loss kernels against the formulas of boostlib/losses.py and against finite differences
of ``Loss.loss``."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from boostlib.builtin import losses
from boostlib._kernels import _loss
from reference import kernels as ref
from reference.strategies import KERNEL_SETTINGS

FL = dict(allow_nan=False, allow_infinity=False, allow_subnormal=False)
EMPTY = np.empty(0)
SCALES = [0.1, 0.5, 1.0, 3.0]


def assert_close(actual, desired, rtol, atol, what=""):
    """``|actual - desired| <= atol + rtol |desired|`` elementwise (``atol`` may be an array)."""
    actual, desired = np.broadcast_arrays(np.asarray(actual), np.asarray(desired))
    bad = ~(np.abs(actual - desired) <= atol + rtol * np.abs(desired))
    assert not bad.any(), (f"{what}: {bad.sum()} mismatches, first at {np.flatnonzero(bad)[:5]}: "
                           f"{actual[bad][:5]} vs {desired[bad][:5]}")


def kernel(name, y, z, w=EMPTY, scale=0.1, n_threads=1):
    y, z, w = (np.ascontiguousarray(a, dtype=np.float64) for a in (y, z, w))
    g = np.full(y.shape, np.nan)
    h = np.full(y.shape, np.nan)
    if name == "sla":
        _loss.sla_gradient(y, z, w, scale, g, h, n_threads)
    else:
        getattr(_loss, f"{name}_gradient")(y, z, w, g, h, n_threads)
    return g, h


def reference(name, y, z, w=None, scale=0.1):
    g, h = np.empty(len(y)), np.empty(len(y))
    for i, (yi, zi) in enumerate(zip(y, z)):
        if name == "logloss":
            g[i], h[i] = ref.logloss_grad_hess(float(yi), float(zi))
        elif name == "mse":
            g[i], h[i] = ref.mse_grad_hess(float(yi), float(zi))
        else:
            g[i], h[i] = ref.sla_grad_hess(float(yi), float(zi), scale)
    if w is not None and len(w):
        g, h = g * w, h * w
    return g, h


def loss_object(name, scale=0.1):
    return {"logloss": losses.LogLoss, "mse": losses.MSELoss}[name]() if name != "sla" \
        else losses.SLALoss(scale=scale)


@st.composite
def loss_case(draw, name):
    n = draw(st.integers(1, 50))
    z = draw(hnp.arrays(np.float64, n, elements=st.floats(-20, 20, **FL)))
    if name == "mse":
        y = draw(hnp.arrays(np.float64, n, elements=st.floats(-50, 50, **FL)))
    else:
        y = draw(hnp.arrays(np.float64, n, elements=st.sampled_from([0.0, 1.0])))
    w = draw(st.one_of(st.just(EMPTY), hnp.arrays(np.float64, n,
                                                   elements=st.floats(0.01, 100, **FL))))
    return y, z, w


@pytest.mark.parametrize("name", ["logloss", "mse", "sla"])
@KERNEL_SETTINGS
@given(data=st.data(), scale=st.sampled_from(SCALES), n_threads=st.sampled_from([1, 2]))
def test_kernels_match_formulas(name, data, scale, n_threads):
    y, z, w = data.draw(loss_case(name))
    g, h = kernel(name, y, z, w, scale, n_threads)
    g_ref, h_ref = reference(name, y, z, w, scale)
    ws = w if len(w) else np.ones(len(y))
    gscale = {"logloss": 1.0, "mse": 1.0, "sla": 1.0 / scale}[name]
    hscale = {"logloss": 0.25, "mse": 1.0, "sla": 1.0 / scale ** 2}[name]
    assert_close(g, g_ref, 1e-9, 1e-13 * gscale * ws, "gradient")
    assert_close(h, h_ref, 1e-9, 1e-13 * hscale * ws, "hessian")
    if name != "sla":
        assert np.all(h >= 0)


@pytest.mark.parametrize("name", ["logloss", "mse", "sla"])
@KERNEL_SETTINGS
@given(data=st.data(), scale=st.sampled_from(SCALES))
def test_gradient_hessian_are_derivatives_of_loss(name, data, scale):
    """Central finite differences of ``Loss.loss`` (the Python formula) agree with the kernel's
    g (first difference) and h (second difference, and first difference of g)."""
    y, z, _ = data.draw(loss_case(name))
    obj = loss_object(name, scale)
    s = scale if name == "sla" else 1.0           # the loss varies on this scale
    g, h = kernel(name, y, z, scale=scale)
    # also through the Loss object's own method
    g2, h2 = np.empty_like(g), np.empty_like(h)
    obj.gradient_hessian(y, z, g2, h2)
    np.testing.assert_array_equal(g2, g)
    np.testing.assert_array_equal(h2, h)

    def L(zz):
        return obj.loss(y, zz)

    eps = 1e-16 * (1.0 + np.abs(L(z)) + np.abs(z))    # rounding level of L
    e1 = 1e-5 * s
    fd_g = (L(z + e1) - L(z - e1)) / (2 * e1)
    # truncation ~ e1^2 |L'''| / 6, rounding ~ eps / e1
    assert_close(g, fd_g, 1e-5, 10 * eps / e1 + 1e-9 / s, "g vs FD of loss()")
    e2 = 1e-3 * s
    fd_h = (L(z + e2) - 2 * L(z) + L(z - e2)) / e2 ** 2
    assert_close(h, fd_h, 1e-5, 10 * eps / e2 ** 2 + 1e-7 / s ** 2, "h vs FD2 of loss()")
    gp, _ = kernel(name, y, z + e1, scale=scale)
    gm, _ = kernel(name, y, z - e1, scale=scale)
    assert_close(h, (gp - gm) / (2 * e1), 1e-5, 1e-9 / s ** 2, "h vs FD of g")


def test_logloss_is_finite_at_extreme_scores():
    z = np.array([-700.0, -40.0, 0.0, 40.0, 700.0, -1e4, 1e4])
    for yv in (0.0, 1.0):
        y = np.full(z.size, yv)
        g, h = kernel("logloss", y, z)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h))
        assert np.all((h >= 0) & (h <= 0.25))
        p = np.array([ref._sigmoid(v) for v in z])
        np.testing.assert_allclose(g, p - yv, rtol=1e-12, atol=1e-300)
        loss = losses.LogLoss().loss(y, z)
        assert np.all(np.isfinite(loss)) and np.all(loss >= 0)
    # misclassified by 700: loss ~ 700 and |g| = 1
    np.testing.assert_allclose(losses.LogLoss().loss(np.array([0.0, 1.0]),
                                                     np.array([700.0, -700.0])), 700.0)


def test_vectorised_exp_is_within_one_ulp_of_the_c_library():
    # The logloss kernels' exp (fastexp.pxd) against math.exp: dense and random arguments,
    # the subnormal range, the underflow edge and special values.
    rng = np.random.default_rng(0)
    x = np.concatenate([-rng.exponential(5.0, 200_000), -rng.uniform(0.0, 746.0, 200_000),
                        -np.arange(0.0, 746.0, 0.01), -rng.uniform(0.0, 1e-6, 10_000),
                        [0.0, -0.0, -5e-324, -1e-300, -708.39, -708.4, -709.0, -744.4, -745.1,
                         -745.2, -746.0, -800.0, -1e308, -np.inf]])
    out = np.empty_like(x)
    _loss.exp_nonpositive(x, out)
    expected = np.array([math.exp(v) for v in x])
    ulp = np.spacing(np.maximum(expected, 5e-324))
    assert np.all(np.abs(out - expected) <= ulp), np.max(np.abs(out - expected) / ulp)
    assert np.all(out[x < -746.0] <= 5e-324)
    out1 = np.empty(1)
    _loss.exp_nonpositive(np.array([np.nan]), out1)
    assert np.isnan(out1[0])
    with pytest.raises(ValueError, match="must be <= 0"):
        _loss.exp_nonpositive(np.array([-1.0, 0.5]), np.empty(2))


def test_logloss_kernels_at_special_scores():
    # Scores past the underflow of exp, infinite and NaN scores: p is 0 or 1 exactly as with
    # the C library's exp, NaN stays NaN.
    z = np.array([-1e308, -800.0, -745.5, 745.5, 800.0, 1e308, -np.inf, np.inf, np.nan])
    y = np.array([0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0])
    g, h = np.empty(z.size), np.empty(z.size)
    _loss.logloss_gradient(y, z, EMPTY, g, h, 1)
    p = np.array([ref._sigmoid(v) for v in z[:-1]])
    np.testing.assert_allclose(g[:-1], p - y[:-1], rtol=0, atol=5e-324)
    assert np.all(h[:-1] <= 5e-324) and np.isnan(g[-1]) and np.isnan(h[-1])


@pytest.mark.parametrize("scale", SCALES)
def test_sla_properties(scale):
    sla = losses.SLALoss(scale=scale)
    z = np.linspace(-20, 20, 4001)
    ones, zeros = np.ones_like(z), np.zeros_like(z)
    L1, L0 = sla.loss(ones, z), sla.loss(zeros, z)
    assert np.all((L1 >= 0) & (L1 <= 1)) and np.all((L0 >= 0) & (L0 <= 1))
    mid = np.abs(z) < 5 * scale      # away from saturation the bounds are strict
    assert np.all((L1[mid] > 0) & (L1[mid] < 1))
    np.testing.assert_allclose(sla.loss(ones, z), sla.loss(zeros, -z), rtol=0, atol=1e-15)
    np.testing.assert_allclose(sla.loss(ones, z) + sla.loss(ones, -z), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(sla.loss(zeros, z) + sla.loss(zeros, -z), 1.0, rtol=0,
                               atol=1e-15)
    g1, h1 = kernel("sla", ones, z, scale=scale)
    g0, h0 = kernel("sla", zeros, z, scale=scale)
    # max |g| = 1/(4s), reached at z = 0
    assert np.max(np.abs(g1)) == pytest.approx(1 / (4 * scale), rel=1e-12)
    assert np.abs(g1[z == 0.0][0]) == pytest.approx(1 / (4 * scale), rel=1e-12)
    assert np.all(np.abs(g0) <= 1 / (4 * scale) * (1 + 1e-12))
    # y = 1: decreasing loss (g <= 0), concave on the misclassified side (h < 0 for z < 0)
    assert np.all(g1 <= 0) and np.all(g0 >= 0)
    assert np.all(h1[(z < 0) & mid] < 0) and np.all(h1[(z > 0) & mid] > 0)
    assert np.all(h0[(z > 0) & mid] < 0) and np.all(h0[(z < 0) & mid] > 0)
    np.testing.assert_allclose(g1, -g0[::-1], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(h1, h0[::-1], rtol=1e-12, atol=1e-300)


def test_weights_multiply_gradient_and_hessian():
    y = np.array([0.0, 1.0, 1.0, 0.0])
    z = np.array([-1.0, 0.5, 3.0, 0.0])
    w = np.array([0.5, 2.0, 0.0, 7.0])
    for name in ("logloss", "mse", "sla"):
        g, h = kernel(name, y, z)
        gw, hw = kernel(name, y, z, w)
        np.testing.assert_allclose(gw, g * w, rtol=1e-15, atol=0)
        np.testing.assert_allclose(hw, h * w, rtol=1e-15, atol=0)
    with pytest.raises(ValueError):
        kernel("mse", y, z, w[:2])


def test_mse_exact():
    y = np.array([1.5, -2.0, 0.0])
    z = np.array([1.0, 1.0, -0.25])
    g, h = kernel("mse", y, z)
    np.testing.assert_array_equal(g, [-0.5, 3.0, -0.25])
    np.testing.assert_array_equal(h, [1.0, 1.0, 1.0])


def reference_loss(name, y, z, scale=0.1):
    """Pointwise loss, written directly from the definitions (row by row)."""
    out = []
    for yi, zi in zip(map(float, y), map(float, z)):
        if name == "logloss":
            out.append(math.log(1.0 + math.exp(zi)) - yi * zi)
        elif name == "mse":
            out.append(0.5 * (zi - yi) ** 2)
        else:
            out.append(1.0 - 1.0 / (1.0 + math.exp(-(2 * yi - 1) * zi / scale)))
    return np.array(out)


def loss_sum(name, y, z, w=EMPTY, scale=0.1, n_threads=1):
    if name == "sla":
        return _loss.sla_sum(y, z, w, scale, n_threads)
    return getattr(_loss, f"{name}_sum")(y, z, w, n_threads)


@pytest.mark.parametrize("name", ["logloss", "mse", "sla"])
@KERNEL_SETTINGS
@given(data=st.data(), scale=st.sampled_from(SCALES), n_threads=st.sampled_from([1, 2]))
def test_loss_sums_match_definitions(name, data, scale, n_threads):
    y, z, w = data.draw(loss_case(name))
    pointwise = reference_loss(name, y, z, scale)
    ws = w if len(w) else np.ones(len(y))
    expected = math.fsum(pointwise * ws)
    got = loss_sum(name, y, z, w, scale, n_threads)
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-12 * math.fsum(ws))
    obj = loss_object(name, scale)
    np.testing.assert_allclose(obj.loss(y, z), pointwise, rtol=1e-12, atol=1e-12)
    mean = obj.mean_loss(y, z, w if len(w) else None, n_threads)
    assert mean == pytest.approx(expected / math.fsum(ws), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", ["logloss", "mse", "sla"])
def test_loss_sums_do_not_depend_on_threads(name):
    """Several blocks of rows: bit-identical sums for 1, 2 and 3 threads."""
    rng = np.random.default_rng(3)
    n = 70_001
    z = rng.normal(scale=4, size=n)
    y = rng.normal(size=n) if name == "mse" else (rng.random(n) < 0.5).astype(float)
    w = rng.random(n)
    sums = {nt: loss_sum(name, y, z, w, 0.3, nt) for nt in (1, 2, 3)}
    assert sums[1] == sums[2] == sums[3]
    assert sums[1] == pytest.approx(math.fsum(reference_loss(name, y, z, 0.3) * w), rel=1e-11)
    assert loss_sum(name, y[:0], z[:0], EMPTY) == 0.0
    with pytest.raises(ValueError, match="same length"):
        loss_sum(name, y, z[:-1])
    with pytest.raises(ValueError, match="weight"):
        loss_sum(name, y, z, w[:3])


@KERNEL_SETTINGS
@given(data=st.data(), n_threads=st.sampled_from([1, 2]), blocks=st.integers(0, 2))
def test_fused_logloss_is_the_derivatives_and_the_sum(data, n_threads, blocks):
    """``logloss_gradient_sum`` writes ``logloss_gradient``'s derivatives and returns
    ``logloss_sum``'s sum, bit for bit, with and without weights (``blocks`` adds rows to
    span several blocks of the sums); the LogLoss method is its mean."""
    y, z, w = data.draw(loss_case("logloss"))
    if blocks:
        extra = 2048 * blocks + 17
        y = np.concatenate([y, np.tile([0.0, 1.0], extra)[:extra]])
        z = np.concatenate([z, np.linspace(-30, 30, extra)])
        w = np.concatenate([w, np.linspace(0.1, 3, extra)]) if len(w) else EMPTY
    g, h = kernel("logloss", y, z, EMPTY, n_threads=n_threads)
    g2, h2 = np.full(y.shape, np.nan), np.full(y.shape, np.nan)
    total = _loss.logloss_gradient_sum(y, z, w, g2, h2, n_threads)
    np.testing.assert_array_equal(g2, g)
    np.testing.assert_array_equal(h2, h)
    assert total == _loss.logloss_sum(y, z, w, n_threads)
    g3, h3 = np.empty(y.shape), np.empty(y.shape)
    weight = w if len(w) else None
    mean = losses.LogLoss().gradient_hessian_loss(y, z, g3, h3, weight, n_threads)
    assert mean == losses.LogLoss().mean_loss(y, z, weight, n_threads)
    np.testing.assert_array_equal(g3, g)
    with pytest.raises(ValueError, match="weight"):
        _loss.logloss_gradient_sum(y, z, np.ones(len(y) + 1), g2, h2, n_threads)


@pytest.mark.parametrize("center", [0.0, 5.0, -30.0, 700.0])
def test_logloss_sum_product_form_keeps_its_accuracy(center):
    """The unweighted logloss sum takes one log per block of the product of ``1 + e^-|z|``:
    near z = 0 the product needs rescaling every ~1000 rows, far from 0 its factors are ~1.
    Both must match the row-by-row definition (fsum of logaddexp) to 1e-13."""
    rng = np.random.default_rng(2)
    n = 40_000                     # three blocks
    z = center + rng.normal(scale=0.5, size=n)
    y = (rng.random(n) < 0.5).astype(float)
    expected = math.fsum(np.logaddexp(0.0, z) - y * z)
    for nt in (1, 2):
        got = _loss.logloss_sum(y, z, EMPTY, nt)
        assert got == pytest.approx(expected, rel=1e-13, abs=1e-9)
    ones = np.zeros(n)
    assert _loss.logloss_sum(ones, np.zeros(n), EMPTY, 2) == pytest.approx(n * math.log(2),
                                                                          rel=1e-14)


@st.composite
def multiclass_case(draw):
    """Scores (n, K) with ties, huge and tiny values, class indices and optional weights."""
    n = draw(st.integers(1, 3000))
    K = draw(st.integers(2, 12))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    scale = draw(st.sampled_from([1e-3, 1.0, 30.0, 700.0]))
    z = rng.normal(size=(n, K)) * scale
    if draw(st.booleans()):                     # ties within rows
        z = np.round(z)
    y = rng.integers(0, K, n).astype(np.float64)
    w = rng.uniform(0.0, 3.0, n) if draw(st.booleans()) else None
    return y, z, w


@KERNEL_SETTINGS
@given(case=multiclass_case(), n_threads=st.sampled_from([1, 2]),
       layout=st.sampled_from(["rows", "outputs"]))
def test_multiclass_kernel_matches_the_formulas(case, n_threads, layout):
    y, z, w = case
    n, K = z.shape
    if layout == "rows":
        g, h = np.empty((n, K)), np.empty((n, K))
    else:                                       # (n, K) views of (K, n) buffers
        g, h = np.empty((K, n)).T, np.empty((K, n)).T
    total = _loss.multiclass_gradient(y, z, g, h, EMPTY if w is None else w, n_threads)
    want_g, want_h, want_l = np.empty((n, K)), np.empty((n, K)), np.empty(n)
    for i in range(n):
        gi, hi, li = ref.multiclass_grad_hess_loss(int(y[i]), list(z[i]))
        want_g[i], want_h[i], want_l[i] = gi, hi, li
    np.testing.assert_allclose(g, want_g, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(h, want_h, rtol=1e-13, atol=1e-15)
    want = math.fsum(want_l if w is None else want_l * w)
    assert total == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_multiclass_kernel_does_not_depend_on_threads():
    rng = np.random.default_rng(3)
    z = rng.normal(size=(10_001, 5)) * 4
    y = rng.integers(0, 5, 10_001).astype(np.float64)
    w = rng.uniform(0.5, 2.0, 10_001)
    out = []
    for n_threads in (1, 2):
        g, h = np.empty_like(z), np.empty_like(z)
        out.append((_loss.multiclass_gradient(y, z, g, h, w, n_threads), g, h))
    assert out[0][0] == out[1][0]
    np.testing.assert_array_equal(out[0][1], out[1][1])
    np.testing.assert_array_equal(out[0][2], out[1][2])


def test_multiclass_kernel_refuses_bad_class_indices():
    z = np.zeros((3, 4))
    g, h = np.empty_like(z), np.empty_like(z)
    for bad in (4.0, -1.0, 1.5, np.nan):
        with pytest.raises(ValueError, match=r"y\[1\] = .* is not a class index in 0 \.\. 3"):
            _loss.multiclass_gradient(np.array([0.0, bad, 1.0]), z, g, h, EMPTY, 1)
    with pytest.raises(ValueError, match="same number of columns"):
        _loss.multiclass_gradient(np.zeros(3), z, np.empty((3, 3)), h, EMPTY, 1)
