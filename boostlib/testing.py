"""Conformance checks for plugin authors: call them from your plugin's test suite.

Each helper exercises one component the way boostlib's training loop will, and raises
``AssertionError`` with a message naming the component (``loss 'boostlib_huber'
(boostlib_huber.HuberLoss)``) and what is wrong. They need only numpy (and pytest is not
required: any test runner, or a plain script, works)::

    from boostlib.testing import (check_loss, check_metric, check_plugin, check_sampler,
                                  check_update_rule)

    def test_conformance():
        check_plugin(my_plugin_module)        # hooks, names, API version, every component
        check_loss(MyLoss(delta=0.5))         # one instance with non-default parameters

What is checked
---------------
:func:`check_loss`
    ``validate_target`` (float64 result, NaN rejected, class labels checked for
    classification losses), ``init_raw`` (finite, consistent with unit weights and with
    zero-weight rows), ``gradient_hessian`` (writes every entry of both buffers in place, or
    returns a valid ``(gradient, hessian)`` pair, which boostlib also accepts; leaves ``y``
    and ``raw`` untouched, which are read-only views as in training; identical results when
    called again or with more threads; gradient and hessian equal to central finite
    differences of ``loss`` and of the gradient; non-negative hessian unless
    ``hessian_can_be_negative`` with a positive ``hessian_floor``), ``loss`` and
    ``transform`` (shape, finiteness, probabilities in [0, 1] for classification; equal
    to the inverse of a declared ``link``), and finiteness at extreme raw scores.
:func:`check_sampler`
    On random, all-zero and tiny (one and two row) gradients, over several iterations:
    ``None`` or a :class:`~boostlib.api.SampleResult` with sorted unique non-empty ``int32``
    indices in range and ``float64`` weights aligned with them, finite, non-negative and not
    all zero; gradients and hessians (read-only views, as in training) not modified; no draw
    from numpy's or Python's global
    random state; the same draws again for the same seed.
:func:`check_update_rule`
    Trains small regression and classification models through the public estimators:
    finite predictions, a training loss below the constant model's, running scores that
    agree with the final model (the rule went through the context), identical models when
    fitted again (``begin`` resets per-fit state) and with another ``n_jobs``.
:func:`check_metric`
    On data of the task the metric accepts (``check_task``: binary, multiclass or
    regression; ranking, with queries of 10 rows and labels 0 .. 4, for a metric with
    ``needs_groups``) in the form it ``reads`` (raw scores, response or classes): a finite
    float;
    the same value again, with inputs left untouched (read-only views); unit weights equal to
    no weights and weights scaled by a constant equal to the unscaled; a perfect prediction
    scores at least as well as a random one in the declared direction
    (``higher_is_better``).
:func:`check_plugin`
    A plugin module or object: declared API version supported, every function a known hook
    marked ``@hookimpl``, each hook returning a mapping of lower_snake_case names to
    factories, each factory (called with the given or default parameters) returning the
    right interface, and then the checks above on every component.
"""
from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any, Callable

import numpy as np

from .plugin.api import LINKS, METRIC_INPUTS, Loss, Metric, Sampler, SampleResult, UpdateRule
from .plugin.checks import fuses_loss

__all__ = ["check_loss", "check_metric", "check_plugin", "check_sampler", "check_update_rule"]


def _label(kind: str, obj: Any) -> str:
    cls = type(obj)
    where = f"{cls.__module__}.{cls.__qualname__}"
    name = getattr(obj, "name", "")
    return f"{kind} {name!r} ({where})" if name else f"{kind} {where}"


class _Checker:
    """Raises AssertionError messages prefixed with the component's label."""

    def __init__(self, label: str):
        self.label = label

    def fail(self, message: str) -> None:
        raise AssertionError(f"{self.label}: {message}")

    def require(self, condition: bool, message: str) -> None:
        if not condition:
            self.fail(message)

    def call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AssertionError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported as a conformance failure
            self.fail(f"{what} raised {exc!r}")

    def array(self, value: Any, what: str, n: int, dtype: Any = None) -> np.ndarray:
        self.require(isinstance(value, np.ndarray),
                     f"{what} must return a numpy array, got {type(value).__name__}")
        self.require(value.shape == (n,) or (value.ndim == 2 and value.shape[0] == n
                                             and what == "validate_target(y)"),
                     f"{what} must have shape ({n},), got {value.shape}")
        if dtype is not None:
            self.require(value.dtype == dtype,
                         f"{what} must have dtype {np.dtype(dtype).name}, got {value.dtype}")
        return value


# ---------------------------------------------------------------------------------------------
# Losses
# ---------------------------------------------------------------------------------------------
def _default_data(loss: Loss, n_rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels {0, 1}, or N(0, 2^2) targets, with N(0, 2^2) raw scores; for a regression loss
    that refuses negative targets (a log link), targets ``exp(N(0, 1))`` and N(0, 1) raw
    scores (log means)."""
    rng = np.random.default_rng(seed)
    if loss.needs_groups:
        return rng.integers(0, 5, n_rows).astype(np.float64), rng.normal(0.0, 2.0, n_rows)
    if getattr(loss, "target_bounds", False):
        return _default_bounds(rng, n_rows), rng.normal(0.0, 1.0, n_rows)
    if loss.is_classification:
        y = np.zeros(n_rows)
        y[rng.permutation(n_rows)[: n_rows // 2]] = 1.0
        return y, rng.normal(0.0, 2.0, n_rows)
    y = rng.normal(0.0, 2.0, n_rows)
    try:
        loss.validate_target(y.copy())
    except ValueError:
        return np.exp(rng.normal(0.0, 1.0, n_rows)), rng.normal(0.0, 1.0, n_rows)
    return y, rng.normal(0.0, 2.0, n_rows)


def _default_bounds(rng: np.random.Generator, n_rows: int) -> np.ndarray:
    """Interval targets (lower, upper) around times ``exp(N(0, 1))``: a quarter each exact,
    right-censored (upper inf), left-censored (lower 0) and interval-censored."""
    t = np.exp(rng.normal(0.0, 1.0, n_rows))
    kind = np.arange(n_rows) % 4
    lower = np.where(kind == 2, 0.0, np.where(kind == 3, 0.7 * t, t))
    upper = np.where(kind == 1, np.inf, np.where(kind == 3, 1.5 * t, t))
    return np.column_stack([lower, upper])


def _read_only(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view


def _call_read_only(c: _Checker, what: str, inputs: str, fn: Callable[..., Any],
                    *args: Any) -> Any:
    """Call ``fn`` whose array inputs are read-only views, as in training."""
    try:
        return fn(*args)
    except ValueError as exc:
        if "read-only" in str(exc):
            c.fail(f"{what} tried to modify {inputs}, which are read-only during training "
                   f"({exc})")
        c.fail(f"{what} raised {exc!r}")
    except AssertionError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported as a conformance failure
        c.fail(f"{what} raised {exc!r}")


def _check_fused(c: _Checker, loss: Loss, y: np.ndarray, raw: np.ndarray, g: np.ndarray,
                 h: np.ndarray, order: str = "C") -> None:
    """A loss's ``gradient_hessian_loss``, when the engine uses it (``fuses_loss``): the
    derivatives ``g`` and ``h`` that ``gradient_hessian`` wrote at ``raw``, bit for bit, and
    ``mean_loss``'s value."""
    if not fuses_loss(loss):
        return
    gf, hf = np.full(g.shape, np.nan, order=order), np.full(h.shape, np.nan, order=order)
    fused = _call_read_only(c, "gradient_hessian_loss", "y or raw", loss.gradient_hessian_loss,
                            _read_only(y), _read_only(raw), gf, hf, None, 1)
    c.require(np.array_equal(gf, g) and np.array_equal(hf, h),
              "gradient_hessian_loss wrote other derivatives than gradient_hessian (they must "
              "be the same, bit for bit)")
    alone = float(c.call("mean_loss(y, raw)", loss.mean_loss, y, raw))
    c.require(isinstance(fused, (int, float, np.floating))
              and abs(float(fused) - alone) <= 1e-6 * (1.0 + abs(alone)),
              f"gradient_hessian_loss returned {fused!r} but mean_loss {alone!r}")


def _derivatives(c: _Checker, loss: Loss, y: np.ndarray, raw: np.ndarray,
                 n_threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The loss's derivatives; buffers prefilled with NaN so unwritten entries show."""
    n = y.shape[0]
    gradient = np.full(n, np.nan)
    hessian = np.full(n, np.nan)
    returned = _call_read_only(c, "gradient_hessian", "y or raw", loss.gradient_hessian,
                               _read_only(y), _read_only(raw), gradient, hessian, n_threads)
    if returned is not None:  # boostlib also accepts a (gradient, hessian) pair
        c.require(isinstance(returned, tuple) and len(returned) == 2,
                  f"gradient_hessian must write into the buffers it is given and return None "
                  f"(or return a (gradient, hessian) pair), got {type(returned).__name__}")
        for arr, what in zip(returned, ("gradient", "hessian")):
            c.require(isinstance(arr, np.ndarray) and arr.shape == (n,)
                      and arr.dtype.kind == "f",
                      f"gradient_hessian returned a {what} that is not a float array of "
                      f"shape ({n},)")
        gradient, hessian = (np.asarray(a, dtype=np.float64) for a in returned)
    for buf, what in ((gradient, "gradient"), (hessian, "hessian")):
        bad = np.flatnonzero(~np.isfinite(buf))
        if bad.size:
            c.fail(f"gradient_hessian left {bad.size} of {n} entries of the {what} buffer "
                   f"unwritten or non-finite (first row {bad[0]}: y={float(y[bad[0]]):.6g}, "
                   f"raw={float(raw[bad[0]]):.6g}); it must write every entry in place (e.g. "
                   f"{what}[:] = ... or out={what}) and return None")
    return gradient, hessian


def _compare(c: _Checker, what: str, ref: str, value: np.ndarray, fd_coarse: np.ndarray,
             fd_fine: np.ndarray, y: np.ndarray, raw: np.ndarray, rtol: float,
             atol: float) -> None:
    """Compare ``value`` with a finite difference where two step sizes agree (no kink)."""
    scale = max(1.0, float(np.max(np.abs(fd_fine))))
    tol = atol * scale + rtol * np.abs(fd_fine)
    smooth = np.abs(fd_coarse - fd_fine) <= 10 * tol
    n_kinks = int(np.sum(~smooth))
    if n_kinks > max(1, y.shape[0] // 20):
        c.fail(f"{ref} is not smooth at {n_kinks} of {y.shape[0]} test points (finite "
               "differences with two step sizes disagree), so the " + what + " cannot be "
               "checked there; pass y and raw away from the loss's kinks")
    err = np.where(smooth, np.abs(value - fd_fine) - tol, -np.inf)
    worst = int(np.argmax(err))
    if err[worst] > 0:
        n_bad = int(np.sum(err > 0))
        c.fail(f"{what} does not match central finite differences of {ref} at {n_bad} of "
               f"{int(smooth.sum())} rows; worst row {worst}: y={float(y[worst]):.6g}, "
               f"raw={float(raw[worst]):.6g}, {what}={float(value[worst]):.6g}, finite "
               f"difference={float(fd_fine[worst]):.6g} (sign convention: derivatives of the "
               "loss itself with respect to the raw score, g = dL/dz and h = d2L/dz2)")


def _rejects_nan_target(c: _Checker, loss: Loss, y: np.ndarray) -> None:
    """``validate_target`` must raise ValueError for a target with a NaN."""
    y_nan = y.copy()
    y_nan[y.shape[0] // 2] = np.nan      # (a whole row of a 2-D target)
    try:
        loss.validate_target(y_nan)
    except ValueError:
        pass
    except Exception as exc:  # noqa: BLE001 - the wrong exception type is the finding
        c.fail(f"validate_target must raise ValueError for a NaN target, raised {exc!r}")
    else:
        c.fail("validate_target accepted a NaN target; it must raise ValueError")


def check_loss(loss: Loss, y: np.ndarray | None = None, raw: np.ndarray | None = None, *,
               n_rows: int = 256, seed: int = 0, rtol: float = 1e-4, atol: float = 1e-6,
               eps: float = 1e-6, extreme: float = 50.0, group: Any = None) -> None:
    """Check that a loss honours the :class:`boostlib.api.Loss` contract.

    Parameters
    ----------
    loss : boostlib.api.Loss
        The instance to check.
    y, raw : ndarray of shape (n_rows,), optional
        Targets and raw scores to test at. By default ``n_rows`` random ones: labels in
        {0, 1} (half each) for classification losses, ``N(0, 2^2)`` targets otherwise, and
        ``N(0, 2^2)`` raw scores. Pass your own when the loss is defined on a narrower
        domain (e.g. positive targets). A loss with several outputs (``is_multiclass``, or
        ``n_outputs > 1``) is checked output by output on raw scores of shape
        ``(n_rows, n_outputs)``, in both memory orders (the engine passes column-major
        views); its default targets are class indices ``0 .. K-1`` for a multiclass loss
        (``K`` its ``n_classes``, else 3); a loss of several targets takes a 2-D ``y``,
        (n_rows, n_outputs). A loss with ``target_bounds`` takes ``y`` of shape
        (n_rows, 2), by default a quarter each of exact, right-, left- and
        interval-censored rows around times ``exp(N(0, 1))``, with ``N(0, 1)`` raw scores.
        For a loss with ``couples_rows`` (``cox``) each row's gradient is compared with the
        finite difference of the summed loss in that row's raw score alone.
    n_rows : int, default 256
        Rows of the generated data.
    seed : int, default 0
        Seed of the generated data.
    rtol, atol : float
        A derivative ``d`` passes where ``|d - fd| <= atol * max(1, max|fd|) + rtol * |fd|``
        for its central finite difference ``fd``.
    eps : float, default 1e-6
        Relative finite-difference step (the step at ``raw`` is ``eps * max(1, |raw|)``).
    extreme : float, default 50.0
        Raw scores ``+-extreme`` at which gradients, hessians, loss values and predictions
        must stay finite.
    group : array-like of int, optional
        Query sizes for a loss with ``needs_groups`` (default: queries of 8 rows; default
        targets are labels 0 .. 4). The loss is checked bound to them
        (:meth:`~boostlib.api.Loss.bind_groups`), without the finite-difference checks:
        ranking gradients (lambdas) are not derivatives of the recorded loss.

    Raises
    ------
    AssertionError
        On the first violation, naming the loss, the method and the offending row.
    """
    c = _Checker(_label("loss", loss))
    c.require(isinstance(loss, Loss), "is not an instance of boostlib.api.Loss")
    if loss.needs_groups:
        n_group_rows = n_rows if y is None else int(np.shape(y)[0])
        sizes = np.asarray(group if group is not None else
                           [8] * (n_group_rows // 8) + ([n_group_rows % 8] if n_group_rows % 8
                                                        else []), dtype=np.int64)
        c.require(sizes.ndim == 1 and bool(np.all(sizes >= 1))
                  and int(sizes.sum()) == n_group_rows,
                  f"group must hold query sizes summing to the {n_group_rows} rows")
        bound = c.call("bind_groups(group_ptr)", loss.bind_groups,
                       np.concatenate([[0], np.cumsum(sizes)]))
        c.require(isinstance(bound, type(loss)),
                  f"bind_groups returned {type(bound).__name__}, not a {type(loss).__name__}")
        loss = bound
    elif group is not None:
        c.fail("group= is only for losses with needs_groups")
    if (loss.is_multiclass or loss.target_columns
            or int(getattr(loss, "n_outputs", 1) or 1) > 1):
        _check_vector_loss(c, loss, y, raw, n_rows, seed, rtol, atol, eps, extreme)
        return
    if y is None or raw is None:
        y_default, raw_default = _default_data(loss, n_rows, seed)
        y = y_default if y is None else y
        raw = raw_default if raw is None else raw
    y = np.ascontiguousarray(y, dtype=np.float64)
    raw = np.ascontiguousarray(raw, dtype=np.float64)
    n = y.shape[0]
    if getattr(loss, "target_bounds", False):
        c.require(y.shape == (n, 2) and raw.shape == (n,) and n >= 2,
                  f"a loss with target_bounds takes y of shape (n, 2) and raw of shape (n,), "
                  f"n >= 2; got {y.shape} and {raw.shape}")
    else:
        c.require(y.ndim == 1 and raw.shape == y.shape and n >= 2,
                  f"y and raw must be 1-D of the same length >= 2, got {y.shape} and "
                  f"{raw.shape}")

    # -- validate_target -----------------------------------------------------------------------
    y_in = y.copy()
    yv = c.array(c.call("validate_target(y)", loss.validate_target, y_in), "validate_target(y)",
                 n, np.float64)
    c.require(np.array_equal(y_in, y), "validate_target modified its input")
    c.require(np.array_equal(yv, y), "validate_target changed the values of a valid target")
    _rejects_nan_target(c, loss, y)
    if loss.is_classification:
        y_bad = y.copy()
        y_bad[0] = 2.0
        try:
            loss.validate_target(y_bad)
        except ValueError:
            pass
        else:
            c.fail("is_classification is True but validate_target accepted the label 2.0; "
                   "it must raise ValueError for labels outside {0, 1}")

    # -- init_raw ------------------------------------------------------------------------------
    def init(yy: np.ndarray, w: np.ndarray | None) -> float:
        value = c.call("init_raw(y, sample_weight)", loss.init_raw, yy, w)
        c.require(isinstance(value, (float, int, np.floating, np.integer))
                  and not isinstance(value, bool) and np.isfinite(value),
                  f"init_raw must return a finite float, got {value!r}")
        return float(value)

    b = init(yv, None)

    def close(a: float, r: float) -> bool:
        return abs(a - r) <= 1e-6 * (1.0 + abs(r))

    b_ones = init(yv, np.ones(n))
    c.require(close(b_ones, b), f"init_raw gives {b_ones!r} with unit weights but {b!r} "
                                "without weights")
    w = np.ones(n)
    w[1::2] = 0.0
    b_zero = init(yv, w)
    b_sub = init(np.ascontiguousarray(yv[::2]), None)
    c.require(close(b_zero, b_sub), f"init_raw gives {b_zero!r} when every other row has weight "
                                    f"0 but {b_sub!r} on the other rows alone; rows of weight "
                                    "0 must not count")

    # -- gradient_hessian ----------------------------------------------------------------------
    raw_in = raw.copy()
    y_keep = yv.copy()
    g, h = _derivatives(c, loss, yv, raw_in)
    c.require(np.array_equal(raw_in, raw) and np.array_equal(yv, y_keep),
              "gradient_hessian modified y or raw")
    g2, h2 = _derivatives(c, loss, yv, raw_in)
    c.require(np.array_equal(g, g2) and np.array_equal(h, h2),
              "gradient_hessian gave different results when called twice on the same input")
    g4, h4 = _derivatives(c, loss, yv, raw_in, n_threads=4)
    c.require(np.array_equal(g, g4) and np.array_equal(h, h4),
              "gradient_hessian gave different results with n_threads=4 than with 1")
    if loss.hessian_can_be_negative:
        floor = loss.hessian_floor
        c.require(isinstance(floor, (int, float)) and np.isfinite(floor) and floor > 0,
                  f"hessian_can_be_negative is True, so hessian_floor must be a finite number "
                  f"> 0 (Newton leaves use max(h, hessian_floor)); got {floor!r}")
    else:
        neg = np.flatnonzero(h < 0)
        if neg.size:
            c.fail(f"hessian is negative at {neg.size} rows (first row {neg[0]}: "
                   f"h={float(h[neg[0]]):.6g}) but hessian_can_be_negative is False; declare "
                   "it and a positive hessian_floor")

    # -- loss ----------------------------------------------------------------------------------
    def values(r: np.ndarray) -> np.ndarray:
        out = _call_read_only(c, "loss(y, raw)", "y or raw", loss.loss, _read_only(yv),
                              _read_only(r))
        out = c.array(out, "loss(y, raw)", n)
        c.require(out.dtype.kind == "f", f"loss(y, raw) must be floating point, got "
                                         f"{out.dtype}")
        return out.astype(np.float64, copy=False)

    l0 = values(raw_in)
    c.require(np.array_equal(raw_in, raw), "loss modified raw")
    bad = np.flatnonzero(~np.isfinite(l0))
    c.require(bad.size == 0, f"loss(y, raw) is not finite at {bad.size} rows")

    _check_fused(c, loss, yv, raw_in, g, h)

    # -- finite differences --------------------------------------------------------------------
    step = eps * np.maximum(1.0, np.abs(raw))

    def central(fn: Callable[[np.ndarray], np.ndarray], s: np.ndarray) -> np.ndarray:
        return (fn(raw + s) - fn(raw - s)) / ((raw + s) - (raw - s))

    def grad_of(r: np.ndarray) -> np.ndarray:
        return _derivatives(c, loss, yv, r)[0]

    y_shown = yv if yv.ndim == 1 else yv[:, 0]      # (the lower bound of an interval)
    if getattr(loss, "couples_rows", False):
        # a row's derivative is that of the whole set's loss: one raw score moved at a time
        def each(fn: Callable[[np.ndarray], np.ndarray], s: np.ndarray,
                 total: bool) -> np.ndarray:
            out = np.empty(n)
            for i in range(n):
                up, dn = raw.copy(), raw.copy()
                up[i] += s[i]
                dn[i] -= s[i]
                a, b = fn(up), fn(dn)
                out[i] = ((a.sum() - b.sum()) if total else (a[i] - b[i])) / (up[i] - dn[i])
            return out

        _compare(c, "gradient", "the summed loss(y, raw)", g, each(values, 4 * step, True),
                 each(values, step, True), y_shown, raw, rtol, atol)
        _compare(c, "hessian", "the gradient", h, each(grad_of, 4 * step, False),
                 each(grad_of, step, False), y_shown, raw, rtol, atol)
    elif not loss.needs_groups:
        _compare(c, "gradient", "loss(y, raw)", g, central(values, 4 * step),
                 central(values, step), y_shown, raw, rtol, atol)
        _compare(c, "hessian", "the gradient", h, central(grad_of, 4 * step),
                 central(grad_of, step), y_shown, raw, rtol, atol)

    # -- transform -----------------------------------------------------------------------------
    pred = c.array(np.asarray(c.call("transform(raw)", loss.transform, raw_in)),
                   "transform(raw)", n)
    c.require(np.array_equal(raw_in, raw), "transform modified raw")
    c.require(bool(np.all(np.isfinite(pred))), "transform(raw) returned non-finite values")
    if loss.is_classification:
        c.require(bool(np.all((pred >= 0) & (pred <= 1))),
                  "transform(raw) of a classification loss must give probabilities in [0, 1]")

    # -- extreme raw scores --------------------------------------------------------------------
    raw_ext = np.where(np.arange(n) % 2 == 0, -extreme, extreme).astype(np.float64)
    _derivatives(c, loss, yv, raw_ext)
    le = c.call("loss(y, raw)", loss.loss, yv, raw_ext)
    pe = c.call("transform(raw)", loss.transform, raw_ext)
    for arr, what in ((le, "loss"), (pe, "transform")):
        c.require(bool(np.all(np.isfinite(arr))),
                  f"{what} is not finite at raw scores +-{extreme:g}")
    _check_link(c, loss, raw_in, pred)


def _link_response(link: str, raw: np.ndarray) -> np.ndarray:
    """What a loss declaring ``link`` (:data:`boostlib.api.LINKS`) predicts from ``raw``."""
    if link == "identity":
        return raw
    if link == "log":
        return np.exp(np.clip(raw, -700.0, 700.0))
    if link == "logit":
        return 0.5 * (1.0 + np.tanh(0.5 * raw))
    e = np.exp(raw - raw.max(axis=1, keepdims=True))         # softmax
    return e / e.sum(axis=1, keepdims=True)


def _check_link(c: _Checker, loss: Loss, raw: np.ndarray, pred: np.ndarray) -> None:
    """A declared ``link`` is one of ``LINKS`` and agrees with ``transform``."""
    link = getattr(loss, "link", None)
    if link is None:
        return
    c.require(isinstance(link, str) and link in LINKS,
              f"link={link!r} is invalid; expected None or one of {list(LINKS)}")
    c.require(link != "softmax" or raw.ndim == 2,
              "link 'softmax' is for losses with several outputs (n_outputs > 1)")
    expected = _link_response(link, np.asarray(raw, dtype=np.float64))
    close = np.isclose(np.asarray(pred, dtype=np.float64), expected, rtol=1e-6, atol=1e-9)
    if not np.all(close):
        row = int(np.argmax(~close.reshape(close.shape[0], -1).all(axis=1)))
        c.fail(f"transform(raw) disagrees with link={link!r} at row {row}: raw "
               f"{np.asarray(raw)[row]!r}, transform {np.asarray(pred)[row]!r}, the link gives "
               f"{expected[row]!r}")


def _check_vector_loss(c: _Checker, loss: Loss, y: np.ndarray | None, raw: np.ndarray | None,
                       n_rows: int, seed: int, rtol: float, atol: float, eps: float,
                       extreme: float) -> None:
    """:func:`check_loss` for a loss with several outputs."""
    rng = np.random.default_rng(seed)
    if y is None:
        if loss.is_multiclass:
            k = getattr(loss, "n_classes", None) or 3
            y = np.arange(n_rows, dtype=np.float64) % k
            rng.shuffle(y)
        elif loss.target_columns:   # three targets (labels {0, 1} for classification)
            y = (rng.integers(0, 2, (n_rows, 3)).astype(np.float64) if loss.is_classification
                 else rng.normal(0.0, 2.0, (n_rows, 3)))
        else:
            y = rng.normal(0.0, 2.0, n_rows)
    y = np.ascontiguousarray(y, dtype=np.float64)
    n = y.shape[0]
    c.require(y.ndim in (1, 2) and n >= 2, f"y must be 1-D (or 2-D, a column per target) "
                                           f"with >= 2 rows, got {y.shape}")
    yv = c.call("validate_target(y)", loss.validate_target, y.copy())
    if y.ndim == 2:     # several targets: validate_target keeps their shape
        c.require(isinstance(yv, np.ndarray) and yv.shape == y.shape and yv.dtype == np.float64,
                  f"validate_target(y) must return float64 of shape {y.shape}")
    else:
        yv = c.array(yv, "validate_target(y)", n, np.float64)
    c.require(np.array_equal(yv, y), "validate_target changed the values of a valid target")
    _rejects_nan_target(c, loss, y)
    k = c.call("n_outputs", lambda: loss.n_outputs)
    c.require(isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 1,
              f"n_outputs must be an int >= 1 after validate_target, got {k!r}")
    k = int(k)
    raw = rng.normal(0.0, 2.0, (n, k)) if raw is None else np.asarray(raw, dtype=np.float64)
    c.require(raw.shape == (n, k), f"raw must have shape ({n}, {k}), got {raw.shape}")

    def init(yy: np.ndarray, w: np.ndarray | None) -> np.ndarray:
        value = np.asarray(c.call("init_raw(y, sample_weight)", loss.init_raw, yy, w),
                           dtype=np.float64)
        c.require(value.shape == (k,) and bool(np.all(np.isfinite(value))),
                  f"init_raw must return {k} finite numbers, got {value!r}")
        return value

    b = init(yv, None)
    c.require(np.allclose(init(yv, np.ones(n)), b, rtol=1e-6, atol=1e-6),
              "init_raw differs with unit weights and without weights")
    w = np.ones(n)
    w[1::2] = 0.0
    c.require(np.allclose(init(yv, w), init(np.ascontiguousarray(yv[::2]), None), rtol=1e-6,
                          atol=1e-6), "init_raw counts rows of weight 0")

    def derivatives(r: np.ndarray, order: str = "F") -> tuple[np.ndarray, np.ndarray]:
        g = np.full((n, k), np.nan, order=order)
        h = np.full((n, k), np.nan, order=order)
        returned = _call_read_only(c, "gradient_hessian", "y or raw", loss.gradient_hessian,
                                   _read_only(yv), _read_only(r), g, h, 1)
        if returned is not None:
            c.require(isinstance(returned, tuple) and len(returned) == 2
                      and all(isinstance(a, np.ndarray) and a.shape == (n, k)
                              for a in returned),
                      f"gradient_hessian must write into its buffers (or return a pair of "
                      f"arrays of shape ({n}, {k}))")
            g, h = (np.asarray(a, dtype=np.float64) for a in returned)
        for buf, what in ((g, "gradient"), (h, "hessian")):
            bad = np.argwhere(~np.isfinite(buf))
            c.require(bad.size == 0, f"gradient_hessian left {len(bad)} entries of the {what} "
                                     f"unwritten or non-finite (first {bad[:1].tolist()})")
        return g, h

    g, h = derivatives(np.asfortranarray(raw))
    _check_fused(c, loss, yv, np.asfortranarray(raw), g, h, "F")
    g_c, h_c = derivatives(np.ascontiguousarray(raw), "C")
    c.require(np.array_equal(g, g_c) and np.array_equal(h, h_c),
              "gradient_hessian gives different results for row-major and column-major arrays")
    if not loss.hessian_can_be_negative:
        c.require(bool(np.all(h >= 0)), "hessian is negative but hessian_can_be_negative is "
                                        "False")

    def values(r: np.ndarray) -> np.ndarray:
        out = _call_read_only(c, "loss(y, raw)", "y or raw", loss.loss, _read_only(yv),
                              _read_only(r))
        out = c.array(np.asarray(out), "loss(y, raw)", n)
        c.require(bool(np.all(np.isfinite(out))), "loss(y, raw) is not finite")
        return out.astype(np.float64, copy=False)

    values(raw)
    for j in range(k):
        step = np.zeros((n, k))
        step[:, j] = eps * np.maximum(1.0, np.abs(raw[:, j]))

        def central(fn: Callable[[np.ndarray], np.ndarray], s: np.ndarray) -> np.ndarray:
            return (fn(raw + s) - fn(raw - s)) / ((raw + s)[:, j] - (raw - s)[:, j])

        def grad_j(r: np.ndarray) -> np.ndarray:
            return derivatives(r)[0][:, j]

        _compare(c, f"gradient[:, {j}]", f"loss(y, raw) in output {j}", g[:, j],
                 central(values, 4 * step), central(values, step), yv, raw[:, j], rtol, atol)
        _compare(c, f"hessian[:, {j}]", f"gradient[:, {j}]", h[:, j],
                 central(grad_j, 4 * step), central(grad_j, step), yv, raw[:, j], rtol, atol)

    pred = np.asarray(c.call("transform(raw)", loss.transform, raw))
    c.require(pred.shape == (n, k) and bool(np.all(np.isfinite(pred))),
              f"transform(raw) must return finite values of shape ({n}, {k}), got "
              f"{pred.shape}")
    if loss.is_multiclass:
        c.require(bool(np.all((pred >= 0) & (pred <= 1)))
                  and np.allclose(pred.sum(axis=1), 1.0),
                  "transform(raw) of a multiclass loss must give probabilities summing to 1")
    raw_ext = np.where(rng.random((n, k)) < 0.5, -extreme, extreme)
    derivatives(raw_ext)
    values(raw_ext)
    c.require(bool(np.all(np.isfinite(loss.transform(raw_ext)))),
              f"transform is not finite at raw scores +-{extreme:g}")
    _check_link(c, loss, raw, pred)


# ---------------------------------------------------------------------------------------------
# Samplers
# ---------------------------------------------------------------------------------------------
def _check_sample(c: _Checker, res: Any, n: int, where: str) -> None:
    if res is None:
        return
    c.require(isinstance(res, SampleResult), f"sample() must return None or a "
                                             f"boostlib.api.SampleResult, got "
                                             f"{type(res).__name__} ({where})")
    idx = res.indices
    c.require(isinstance(idx, np.ndarray) and idx.ndim == 1,
              f"indices must be a 1-D numpy array ({where})")
    c.require(idx.dtype == np.int32, f"indices must have dtype int32, got {idx.dtype} ({where})")
    c.require(idx.size > 0, f"indices are empty: no row to fit a tree on ({where})")
    c.require(int(idx[0]) >= 0 and int(idx[-1]) < n and bool(np.all(idx >= 0))
              and bool(np.all(idx < n)), f"indices out of range [0, {n}) ({where})")
    c.require(bool(np.all(np.diff(idx) > 0)),
              f"indices must be sorted and unique (strictly increasing) ({where})")
    w = res.weights
    if w is None:
        return
    c.require(isinstance(w, np.ndarray) and w.shape == idx.shape,
              f"weights must be a numpy array aligned with indices, shape {idx.shape}, got "
              f"{getattr(w, 'shape', type(w).__name__)} ({where})")
    c.require(w.dtype == np.float64, f"weights must have dtype float64, got {w.dtype} ({where})")
    c.require(bool(np.all(np.isfinite(w))), f"weights must be finite ({where})")
    c.require(bool(np.all(w >= 0)), f"weights must be non-negative ({where})")
    c.require(bool(np.any(w > 0)), f"weights are all zero ({where})")


def _same(a: SampleResult | None, b: SampleResult | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if not np.array_equal(a.indices, b.indices):
        return False
    if a.weights is None or b.weights is None:
        return a.weights is None and b.weights is None
    return np.array_equal(a.weights, b.weights)


class _SamplerContext:
    """The read-only parts of :class:`boostlib.api.Context` a sampler's ``begin`` may use."""

    def __init__(self, n_rows: int, n_iterations: int, learning_rate: float):
        self.iteration = 0
        self.n_iterations = n_iterations
        self.learning_rate = learning_rate
        self.n_rows = n_rows
        raw = np.zeros(n_rows)
        raw.flags.writeable = False
        self.raw = raw


def check_sampler(sampler: Sampler, *, n_rows: int = 1000, n_iterations: int = 4,
                  learning_rate: float = 0.5, seed: int = 0) -> None:
    """Check that a sampler honours the :class:`boostlib.api.Sampler` contract.

    Parameters
    ----------
    sampler : boostlib.api.Sampler
        The instance to check (e.g. ``create("sampler", "mvs", subsample=0.5)``).
    n_rows : int, default 1000
        Rows of the main test case (one- and two-row cases are always run too).
    n_iterations : int, default 4
        Iterations drawn per case, one generator for all of them as in training. Before
        each run ``sampler.begin(ctx)`` is called, when the sampler has it, with a context
        offering ``iteration``, ``n_iterations``, ``learning_rate``, ``n_rows`` and ``raw``.
    learning_rate : float, default 0.5
        The context's learning rate (samplers with a warm-up of ``1 / learning_rate``
        iterations then draw from the third iteration on).
    seed : int, default 0
        Seed of the gradients and of the generator passed to ``sample``.

    Raises
    ------
    AssertionError
        On the first violation, naming the sampler, the case and the iteration.
    """
    c = _Checker(_label("sampler", sampler))
    c.require(isinstance(sampler, Sampler), "is not an instance of boostlib.api.Sampler")
    data_rng = np.random.default_rng(seed)
    cases = {
        "random gradients": (data_rng.normal(size=n_rows), data_rng.uniform(0.05, 1, n_rows)),
        "all-zero gradients": (np.zeros(n_rows), np.ones(n_rows)),
        "one row": (np.array([0.5]), np.array([1.0])),
        "two rows": (np.array([-1.0, 2.0]), np.array([0.25, 1.0])),
    }
    for case, (g, h) in cases.items():
        n = g.shape[0]

        def run(g: np.ndarray = g, h: np.ndarray = h, case: str = case) -> list[Any]:
            rng = np.random.default_rng(seed)
            np_state, py_state = np.random.get_state(), random.getstate()
            begin = getattr(sampler, "begin", None)
            if callable(begin):
                c.call(f"begin(ctx) ({case})", begin,
                       _SamplerContext(g.shape[0], n_iterations, learning_rate))
            g_in, h_in = g.copy(), h.copy()
            out = []
            for it in range(n_iterations):
                res = _call_read_only(c, f"sample() ({case}, iteration {it})",
                                      "the gradient or hessian", sampler.sample,
                                      _read_only(g_in), _read_only(h_in), rng, it)
                c.require(np.array_equal(g_in, g) and np.array_equal(h_in, h),
                          f"sample() modified the gradient or hessian ({case}, iteration {it})")
                out.append(res)
            after = np.random.get_state()
            c.require(all(np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
                          for x, y in zip(np_state, after)) and random.getstate() == py_state,
                      f"sample() drew from numpy's or Python's global random state ({case}); "
                      "every draw must come from its rng argument")
            return out

        first = run()
        for it, res in enumerate(first):
            _check_sample(c, res, n, f"{case}, iteration {it}")
        again = run()
        for it, (a, b) in enumerate(zip(first, again)):
            c.require(_same(a, b), f"sample() is not deterministic: the same seed gave a "
                                   f"different sample ({case}, iteration {it}); reset per-fit "
                                   "state in begin() and draw only from rng")


# ---------------------------------------------------------------------------------------------
# Update rules
# ---------------------------------------------------------------------------------------------
def check_update_rule(update: UpdateRule | str, update_params: Mapping[str, Any] | None = None,
                      *, params: Mapping[str, Any] | None = None, n_rows: int = 300,
                      n_estimators: int = 6, seed: int = 0) -> None:
    """Check an update rule by training small models with it through the public estimators.

    Parameters
    ----------
    update : boostlib.api.UpdateRule or str
        An instance (fitted twice, so ``begin`` must reset any per-fit state) or a
        registered name.
    update_params : mapping, optional
        Parameters when ``update`` is a name.
    params : mapping, optional
        Other training parameters the rule needs (they override the check's own, e.g.
        ``{"learning_rate": 1.0, "subsample": 0.632}`` for ``rf``, which refuses a fit
        without sampling in its ``check_params``).
    n_rows, n_estimators, seed : int
        Size of the synthetic data, boosting iterations, and seed of data and models.

    Raises
    ------
    AssertionError
        On the first violation, naming the rule.
    """
    from .frontend.estimators import BoostClassifier, BoostRegressor

    c = _Checker(_label("update rule", update) if not isinstance(update, str)
                 else f"update rule {update!r}")
    c.require(isinstance(update, (str, UpdateRule)),
              "is neither a registered name nor an instance of boostlib.api.UpdateRule")
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, 5))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.5 * X[:, 2] * X[:, 3] + 0.1 * rng.normal(size=n_rows)
    extra = params
    params = {"update": update,
              "update_params": dict(update_params) if update_params else None,
              "n_estimators": n_estimators, "max_depth": 3, "learning_rate": 0.3,
              "random_state": seed, **dict(extra or {})}

    def fit(cls: type, target: np.ndarray, n_jobs: int) -> Any:
        model = cls(n_jobs=n_jobs, **params)
        return c.call(f"{cls.__name__}.fit", model.fit, X, target, eval_set=[(X, target)])

    for cls, target in ((BoostRegressor, y), (BoostClassifier, (y > np.median(y)).astype(int))):
        what = f"{cls.__name__}"
        model = fit(cls, target, 1)
        c.require(model.n_trees_ >= 1, f"{what}: the model has no tree after {n_estimators} "
                                       "iterations")
        raw = model.predict(X) if cls is BoostRegressor else model.decision_function(X)
        c.require(bool(np.all(np.isfinite(raw))), f"{what}: predictions are not finite")
        loss = model.loss_
        enc = loss.validate_target(target if cls is BoostRegressor else target.astype(float))
        final = float(np.mean(loss.loss(enc, raw)))
        recorded = model.evals_result_["valid_0"][loss.name][-1]
        c.require(abs(final - recorded) <= 1e-8 * (1 + abs(final)),
                  f"{what}: the training loss of the final model ({final!r}) differs from the "
                  f"running one the loop tracked ({recorded!r}); change the model only through "
                  "the context (add_tree, scale_model, set_coefficients, combine)")
        constant = float(np.mean(loss.loss(enc, np.full(n_rows, loss.init_raw(enc, None)))))
        c.require(final < constant, f"{what}: the training loss {final!r} after "
                                    f"{n_estimators} iterations is not below the constant "
                                    f"model's {constant!r}")
        again = fit(cls, target, 1)
        raw2 = again.predict(X) if cls is BoostRegressor else again.decision_function(X)
        c.require(np.array_equal(raw, raw2), f"{what}: fitting again with the same random_state "
                                             "gave a different model (reset per-fit state in "
                                             "begin(), draw only from ctx.rng)")
        threaded = fit(cls, target, 2)
        raw3 = threaded.predict(X) if cls is BoostRegressor else threaded.decision_function(X)
        c.require(np.array_equal(raw, raw3), f"{what}: n_jobs=2 gave a different model than "
                                             "n_jobs=1")


# ---------------------------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------------------------
#: The tasks a metric is tried on: (name, n_outputs, is_classification).
_TASKS = (("regression", 1, False), ("binary", 1, True), ("multiclass", 3, True))


def _metric_task(c: _Checker, metric: Metric) -> tuple[str, int]:
    """The first task the metric accepts (its ``check_task`` raising ValueError for others)."""
    for task, n_outputs, is_classification in _TASKS:
        try:
            metric.check_task(n_outputs, is_classification)
        except ValueError:
            continue
        except Exception as exc:  # noqa: BLE001 - reported as a conformance failure
            c.fail(f"check_task({n_outputs}, {is_classification}) raised {exc!r}; expected "
                   "None or a ValueError")
        return task, n_outputs
    c.fail("check_task refuses binary classification, 3 classes and regression alike")
    raise AssertionError  # unreachable


def _metric_inputs(task: str, reads: str, rng: np.random.Generator, n: int,
                   perfect: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(y_true, y_pred)`` for a task, as the metric reads them; ``perfect``: the best
    prediction (the target itself, or near-certain scores of the right class)."""
    if task == "ranking":           # relevance labels 0 .. 4, scores
        y = rng.integers(0, 5, n).astype(np.float64)
        return y, (y.copy() if perfect else rng.normal(0.0, 1.0, n))
    if task == "regression":
        y = rng.uniform(0.5, 5.0, n)
        return y, (y.copy() if perfect else rng.uniform(0.5, 5.0, n))
    if task in ("times", "bounds"):     # survival: 30% censored; raw risks or log times
        t = rng.uniform(0.5, 5.0, n)
        censored = rng.random(n) < 0.3
        noise = rng.normal(0.0, 1.0, n)
        if task == "times":
            return np.where(censored, -t, t), (-t if perfect else noise)
        y = np.column_stack([t, np.where(censored, np.inf, t)])
        return y, (np.log(t) if perfect else np.log(t).mean() + noise)
    k = 2 if task == "binary" else 3
    y = np.arange(n) % k * 1.0
    rng.shuffle(y)
    raw = rng.normal(size=(n, k)) if not perfect else 8.0 * (np.eye(k)[y.astype(int)] - 0.5)
    if task == "binary":
        raw = raw[:, 1] - raw[:, 0]
        p = 1.0 / (1.0 + np.exp(-raw))
        cls = (p > 0.5) * 1.0
    else:
        e = np.exp(raw - raw.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        cls = np.argmax(p, axis=1) * 1.0
    return y, {"raw": raw, "response": p, "class": cls}[reads]


def check_metric(metric: Metric, *, n_rows: int = 200, seed: int = 0) -> None:
    """Check a :class:`~boostlib.api.Metric` (see the module docstring).

    Raises
    ------
    AssertionError
        Naming the metric and what is wrong.
    """
    c = _Checker(_label("metric", metric))
    c.require(isinstance(metric, Metric), f"is a {type(metric).__name__}, not a "
                                          "boostlib.api.Metric")
    c.require(metric.reads in METRIC_INPUTS, f"reads={metric.reads!r}; expected one of "
                                             f"{METRIC_INPUTS}")
    c.require(isinstance(metric.higher_is_better, bool), "higher_is_better must be a bool")
    survival = getattr(metric, "survival_labels", None)
    c.require(survival in (None, "times", "bounds"),
              f"survival_labels={survival!r}; expected None, 'times' or 'bounds'")
    task = "ranking" if metric.needs_groups else survival or _metric_task(c, metric)[0]
    if metric.needs_groups:
        sizes = [10] * (n_rows // 10) + ([n_rows % 10] if n_rows % 10 else [])
        bound = c.call("bind_groups(group_ptr)", metric.bind_groups,
                       np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))
        c.require(isinstance(bound, type(metric)),
                  f"bind_groups returned {type(bound).__name__}, not a {type(metric).__name__}")
        metric = bound
    rng = np.random.default_rng(seed)
    y, pred = _metric_inputs(task, metric.reads, rng, n_rows, perfect=False)

    def value(y_true: np.ndarray, y_pred: np.ndarray, w: Any = None, what: str = "") -> float:
        out = _call_read_only(c, f"evaluate({what or 'y, pred'})", "its inputs",
                              metric.evaluate, _read_only(y_true), _read_only(y_pred),
                              None if w is None else _read_only(np.asarray(w, np.float64)))
        c.require(isinstance(out, (float, np.floating)) and np.isfinite(out),
                  f"evaluate({what or 'y, pred'}) must return a finite float, got {out!r}")
        return float(out)

    first = value(y, pred)
    c.require(value(y, pred) == first, "evaluate gave another value for the same inputs")
    ones = value(y, pred, np.ones(n_rows), "unit weights")
    c.require(abs(ones - first) <= 1e-9 * max(1.0, abs(first)),
              f"unit weights give {ones!r}, no weights {first!r}")
    w = rng.uniform(0.2, 3.0, n_rows)
    scaled = value(y, pred, 7.0 * w, "weights x 7")
    base = value(y, pred, w, "weights")
    c.require(abs(scaled - base) <= 1e-9 * max(1.0, abs(base)),
              f"weights scaled by 7 give {scaled!r}, unscaled {base!r}")
    y_best, best_pred = _metric_inputs(task, metric.reads, np.random.default_rng(seed), n_rows,
                                       perfect=True)
    _, worse_pred = _metric_inputs(task, metric.reads, np.random.default_rng(seed), n_rows,
                                   perfect=False)
    best, worse = value(y_best, best_pred, what="a perfect prediction"), \
        value(y_best, worse_pred, what="a random prediction")
    sign = 1.0 if metric.higher_is_better else -1.0
    c.require(sign * best >= sign * worse,
              f"a perfect prediction scores {best!r} and a random one {worse!r}, but "
              f"higher_is_better={metric.higher_is_better}")


# ---------------------------------------------------------------------------------------------
# Whole plugins
# ---------------------------------------------------------------------------------------------
def check_plugin(plugin: Any, params: Mapping[str, Mapping[str, Any]] | None = None, *,
                 run_checks: bool = True,
                 check_params: Mapping[str, Mapping[str, Any]] | None = None,
                 require_api_version: bool = True) -> dict[str, list[str]]:
    """Check a plugin module or object as the registry will load it, then its components.

    Parameters
    ----------
    plugin : module or object
        What the entry point names.
    params : mapping, optional
        ``{component name: keyword arguments}`` for factories that need arguments; samplers
        get ``subsample=0.5`` unless given.
    run_checks : bool, default True
        Also run :func:`check_loss`, :func:`check_sampler` or :func:`check_update_rule` on
        every component built.
    check_params : mapping, optional
        ``{component name: keyword arguments}`` for those checks, e.g.
        ``{"poisson": {"y": counts, "raw": log_means}}`` for a loss defined on a narrower
        domain than the default test data.
    require_api_version : bool, default True
        Require the plugin to declare ``BOOSTLIB_API_VERSION`` (recommended for anything
        published: a later boostlib can then refuse it cleanly instead of failing mid-fit).

    Returns
    -------
    dict
        ``{"loss": [...], "sampler": [...], "update": [...]}``: the names it registers.

    Raises
    ------
    AssertionError
        Naming the plugin and what is wrong.
    """
    import pluggy

    from .plugin import hookspecs, registry

    label = getattr(plugin, "__name__", None) or type(plugin).__name__
    c = _Checker(f"plugin {label}")
    if require_api_version:
        c.require(hasattr(plugin, hookspecs.API_VERSION_ATTRIBUTE),
                  f"declares no {hookspecs.API_VERSION_ATTRIBUTE}; set it to the boostlib "
                  f"plugin API version it was written for ({hookspecs.API_VERSION})")
    try:
        registry.check_api_version(plugin, label)
    except registry.PluginError as exc:
        c.fail(str(exc))
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    c.call("registering it", pm.register, plugin, name="checked")
    callers = pm.get_hookcallers(plugin) or []
    c.require(bool(callers), "implements no boostlib hook (mark the functions with "
                             "@boostlib.api.hookimpl)")
    for caller in callers:
        c.require(caller.has_spec(), f"implements {caller.name}(), which is not a boostlib hook")
    params = dict(params or {})
    found: dict[str, list[str]] = {}
    for kind, (hook_name, interface) in registry.KINDS.items():
        found[kind] = []
        for impl in getattr(pm.hook, hook_name).get_hookimpls():
            result = c.call(f"{hook_name}()", impl.function)
            c.require(isinstance(result, Mapping),
                      f"{hook_name}() must return a mapping name -> factory")
            for name, factory in result.items():
                c.require(isinstance(name, str) and name.isidentifier() and name == name.lower(),
                          f"{kind} name {name!r} must be a lower_snake_case identifier")
                kwargs = dict(params.get(name, {}))
                if kind == "sampler":
                    kwargs.setdefault("subsample", 0.5)
                obj = c.call(f"the factory of {kind} {name!r}", factory, **kwargs)
                c.require(isinstance(obj, interface), f"the factory of {kind} {name!r} returned "
                                                      f"{type(obj).__name__}, not a "
                                                      f"boostlib.api.{interface.__name__}")
                found[kind].append(name)
                if run_checks:
                    extra = dict((check_params or {}).get(name, {}))
                    check = {"loss": check_loss, "sampler": check_sampler,
                             "update": check_update_rule, "metric": check_metric}[kind]
                    check(obj, **extra)
    return found
