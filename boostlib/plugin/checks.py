"""Checks of what plugins hand back to the engine; every error names the plugin.

Shapes and dtypes are checked every time (O(1)). Finiteness costs a pass over the data; its
thoroughness is set by the environment variable ``BOOSTLIB_PLUGIN_CHECKS``:

``fast`` (default)
    One sum per array: a NaN or infinity anywhere makes the sum non-finite (so does a sum
    that overflows, which only values near 1e308 can cause). The loss derivatives take one
    compiled parallel pass over both arrays (sums of magnitudes, ``_sampling.abs_sums``,
    which also sums the negative hessians: a loss that does not declare
    ``hessian_can_be_negative`` must not return any), about 0.4 ms per million rows on 2
    threads.
``full``
    Gradient buffers are filled with NaN before the loss writes them (so a loss that skips
    entries is caught), every value is checked, and after every iteration the training and
    validation scores of the model and of every tracked model (``ctx.track``) are compared
    with fresh predictions (an update rule that changes a model without the context, or the
    scores without the model, is caught). For debugging plugins; it costs prediction passes
    every iteration.
``off``
    No finiteness checks (shape and dtype checks stay); measured by
    ``benchmarks/bench_plugin_checks.py`` as the baseline of the other two.

A sample's rows (in range, strictly increasing) and weights (finite, non-negative) are
checked at every level, every entry, before a kernel reads them (the kernels rely on them),
whether a sampler or an update rule made it. For int32 rows and float64 weights, when the tree
is fitted on the sample's rows, the kernel that gathers them checks them in the same pass
(``_partition.gather_sample``); otherwise it is one compiled pass
(``_sampling.sample_defects``), or NumPy for other dtypes.
"""
from __future__ import annotations

import functools
import math
import os
from typing import Any, Optional, Tuple

import numpy as np

from .._kernels import _sampling
from .api import SampleResult
from .registry import PluginError

_NO_WEIGHTS = np.empty(0)

LEVELS = ("off", "fast", "full")
ENV = "BOOSTLIB_PLUGIN_CHECKS"


def level() -> str:
    """The check level from ``BOOSTLIB_PLUGIN_CHECKS`` (default ``"fast"``)."""
    value = os.environ.get(ENV, "fast").strip().lower() or "fast"
    if value not in LEVELS:
        raise ValueError(f"{ENV}={value!r} is invalid; expected one of {LEVELS}")
    return value


def label(plugin: Any) -> str:
    """The registered name of a plugin instance, or its class name."""
    return getattr(plugin, "name", "") or type(plugin).__name__


class blame:
    """Name the plugin in an exception raised inside one of its methods: a context manager,
    ``with blame("loss", loss, "gradient_hessian", iteration): ...``.

    The exception is re-raised with the same type (a PluginError when that type cannot be
    built from a message), its message prefixed by the plugin's kind and name, the method
    and the iteration, the original chained as its cause. Errors that already name their
    source pass unchanged: boostlib's PluginErrors, one already blamed (a loss's error seen
    again by the update rule that called it) and resource exhaustion (MemoryError,
    RecursionError). (A class, not a generator: it is entered several times an iteration.)
    """

    __slots__ = ("kind", "plugin", "method", "iteration")

    def __init__(self, kind: str, plugin: Any, method: str,
                 iteration: Optional[int] = None) -> None:
        self.kind, self.plugin, self.method, self.iteration = kind, plugin, method, iteration

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if exc is None or not isinstance(exc, Exception) or isinstance(
                exc, (PluginError, MemoryError, RecursionError)) or getattr(
                exc, "_boostlib_blamed", False):
            return False                # no exception, or one that passes unchanged
        it = self.iteration
        when = "" if it is None or it < 0 else f" at iteration {it}"
        message = (f"{self.kind} {label(self.plugin)!r} raised {type(exc).__name__} in "
                   f"{self.method}{when}: {exc}")
        try:
            renamed = type(exc)(message)
        except Exception:
            renamed = PluginError(message)
        raise attributed(renamed) from exc


def attributed(exc: BaseException) -> BaseException:
    """Mark an exception whose message already names its cause, so that :func:`blame`
    passes it through the plugin methods it propagates from unchanged; return it."""
    exc._boostlib_blamed = True
    return exc


def _finite(a: np.ndarray, how: str) -> bool:
    if how == "off":
        return True
    if how == "full":
        return bool(np.isfinite(a).all())
    with np.errstate(over="ignore", invalid="ignore"):      # an overflow is the finding
        return bool(np.isfinite(np.abs(a).sum()))       # as the compiled pass sums them


def fuses_loss(loss: Any) -> bool:
    """Whether ``loss`` has a ``gradient_hessian_loss`` (see
    :attr:`~boostlib.api.Loss.gradient_hessian_loss`) that belongs with its
    ``gradient_hessian``, ``mean_loss`` and ``loss``: one defined by the class that defines
    them, or by a subclass of it. (A subclass that overrides ``gradient_hessian`` and
    inherits a built-in's fused method would otherwise get the built-in's derivatives.)"""
    return _class_fuses(type(loss))


@functools.lru_cache(maxsize=256)
def _class_fuses(cls: type) -> bool:
    return (getattr(cls, "gradient_hessian_loss", None) is not None and belongs_with(
        cls, "gradient_hessian_loss", ("gradient_hessian", "mean_loss", "loss")))


def belongs_with(cls: type, method: str, bases: Tuple[str, ...]) -> bool:
    """Whether the class that gives ``cls`` its ``method`` is, or derives from, each class
    that gives it one of ``bases``: a faster method a subclass inherits while overriding
    what that method stands for does not belong with the subclass's own."""
    def owner(name: str) -> type:
        return next(k for k in cls.__mro__ if name in k.__dict__)

    return all(issubclass(owner(method), owner(base)) for base in bases)


def _flat(a: np.ndarray) -> np.ndarray:
    """``a``'s values in memory order, contiguous (``a`` itself when it is)."""
    if a.ndim == 1 and a.flags.c_contiguous:
        return a
    return np.ascontiguousarray(np.ravel(a, order="K"))


def derivatives(loss: Any, returned: Any, gradient: np.ndarray, hessian: np.ndarray,
                iteration: int, how: str, n_threads: int = 1) -> Tuple[np.ndarray, np.ndarray]:
    """Validate what ``loss.gradient_hessian`` produced; return the (gradient, hessian).

    A loss writes into the buffers it is given and returns None; returning a pair of arrays
    instead is accepted when they have the buffers' shape ((n,) or (n, n_outputs)) and a
    floating dtype.
    """
    name = label(loss)
    shape = gradient.shape
    if returned is not None:
        if not (isinstance(returned, tuple) and len(returned) == 2):
            raise PluginError(f"loss {name!r}: gradient_hessian must write into the arrays it "
                              f"is given and return None (or return a (gradient, hessian) "
                              f"pair), got {type(returned).__name__}")
        gradient, hessian = returned
        for what, arr in (("gradient", gradient), ("hessian", hessian)):
            if not isinstance(arr, np.ndarray) or arr.shape != shape or arr.dtype.kind != "f":
                got = (f"{arr.dtype} array of shape {arr.shape}" if isinstance(arr, np.ndarray)
                       else type(arr).__name__)
                raise PluginError(f"loss {name!r} returned a {what} that is a {got}; "
                                  f"expected a float64 array of shape {shape}")
        gradient = np.asarray(gradient, dtype=np.float64)
        hessian = np.asarray(hessian, dtype=np.float64)
    may_be_negative = bool(getattr(loss, "hessian_can_be_negative", False))
    if how == "fast":
        # both arrays in one parallel pass, in memory order (a view when contiguous)
        flat_g, flat_h = _flat(gradient), _flat(hessian)
        g_sum, h_sum, h_negative = _sampling.abs_sums(flat_g, flat_h, n_threads)
        if math.isfinite(g_sum) and math.isfinite(h_sum) and (may_be_negative
                                                             or h_negative == 0):
            return gradient, hessian
    for what, arr in (("gradient", gradient), ("hessian", hessian)):
        if not _finite(arr, how):
            bad = int(np.count_nonzero(~np.isfinite(arr)))
            detail = (f"{bad} non-finite values" if bad else
                      "values whose sum overflows")
            raise PluginError(f"loss {name!r} returned a {what} with {detail} at iteration "
                              f"{iteration}")
    if how != "off" and not may_be_negative and hessian.size and hessian.min() < 0:
        raise PluginError(f"loss {name!r} returned {int(np.count_nonzero(hessian < 0))} "
                          f"negative hessian values (down to {hessian.min():.3g}) at iteration "
                          f"{iteration}; a loss whose hessian can be negative must set "
                          "hessian_can_be_negative = True (its hessians are then floored)")
    return gradient, hessian


def target(loss: Any, returned: Any, n: int, what: str) -> np.ndarray:
    """Validate ``loss.validate_target(y)`` for ``n`` rows of ``what``: one finite value
    per row (a loss that dropped or added rows would train on other rows than given)."""
    arr = np.asarray(returned)
    if arr.ndim == 0 or arr.shape[0] != n or arr.dtype.kind not in "fiub":
        raise PluginError(f"loss {label(loss)!r}: validate_target returned "
                          f"{arr.dtype} values of shape {arr.shape} for the {n} rows of "
                          f"{what}; expected one number per row")
    finite = np.isfinite(arr) if arr.dtype.kind == "f" else None
    if finite is not None and getattr(loss, "target_bounds", False) and arr.ndim == 2:
        finite = finite | np.isposinf(arr)      # an interval's upper bound may be +inf
    if finite is not None and not finite.all():
        raise PluginError(f"loss {label(loss)!r}: validate_target returned non-finite "
                          f"values for {what}")
    return arr


def response(loss: Any, raw: np.ndarray) -> np.ndarray:
    """``loss.transform(raw)``, validated: the raw scores' shape, finite, and probabilities
    in [0, 1] for a classification loss."""
    with blame("loss", loss, "transform"):
        returned = loss.transform(raw)
    arr = np.asarray(returned)
    name = label(loss)
    if arr.shape != raw.shape or arr.dtype.kind not in "fiu":
        raise PluginError(f"loss {name!r}: transform returned {arr.dtype} values of shape "
                          f"{arr.shape} for raw scores of shape {raw.shape}; expected a "
                          "float array of the same shape")
    if not np.isfinite(arr).all():
        raise PluginError(f"loss {name!r}: transform returned {int((~np.isfinite(arr)).sum())} "
                          "non-finite values (NaN or infinity)")
    if getattr(loss, "is_classification", False) and ((arr < 0) | (arr > 1)).any():
        raise PluginError(f"loss {name!r}: transform returned probabilities outside [0, 1] "
                          f"(from {arr.min()!r} to {arr.max()!r})")
    return arr


def pointwise_loss(loss: Any, values: Any, n: int) -> np.ndarray:
    """Validate ``loss.loss(y, raw)``: a float array of shape ``(n,)``."""
    arr = np.asarray(values)
    if arr.shape != (n,) or arr.dtype.kind not in "fiu":
        raise PluginError(f"loss {label(loss)!r}: loss() returned shape {arr.shape} dtype "
                          f"{arr.dtype}; expected a float array of shape ({n},)")
    return arr


def mean_loss(loss: Any, value: Any, what: str, iteration: int,
              y: Optional[np.ndarray] = None, raw: Optional[np.ndarray] = None) -> float:
    """Validate ``loss.mean_loss(y, raw, ...)``: a finite number.

    A non-finite mean of finite targets and raw scores is reported as a numeric overflow
    (values too large for the loss, e.g. a target near 1e200 squared by ``mse``), non-finite
    raw scores as a diverged model; only otherwise is the loss blamed.
    """
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise PluginError(f"loss {label(loss)!r}: mean_loss() returned {type(value).__name__}; "
                          "expected a float") from None
    if np.isfinite(out):
        return out
    where = f"{what} at iteration {iteration}"
    if raw is not None and not np.isfinite(raw).all():
        raise attributed(FloatingPointError(
            f"the model diverged: its raw scores on {where} are not finite; lower "
            "learning_rate (or rescale the target)"))
    top_y = _largest(y) if y is not None else math.nan
    top_raw = _largest(raw) if raw is not None else math.nan
    if np.isinf(out) or max(top_y, top_raw) > LARGE:
        raise attributed(FloatingPointError(
            f"numeric overflow: the mean loss {label(loss)!r} on {where} is {out} although "
            f"the targets (largest |y| = {top_y:.3g}) and raw scores (largest "
            f"{top_raw:.3g}) are finite; rescale the target or lower learning_rate (if "
            "training diverged)"))
    raise PluginError(f"loss {label(loss)!r}: mean loss on {where} is {out}")


#: Magnitude beyond which a non-finite result of finite inputs is taken for an overflow
#: (their squares overflow) rather than a fault of the plugin.
LARGE = 1e100


def _largest(a: Optional[np.ndarray]) -> float:
    """``max |a|`` (0 for an empty array; NaN when ``a`` is None or holds NaN or inf)."""
    if a is None:
        return math.nan
    a = np.asarray(a, dtype=np.float64)
    if not a.size:
        return 0.0
    top = float(np.max(np.abs(a)))
    return top if math.isfinite(top) else math.nan


def overflow_in_start(loss: Any, value: np.ndarray, y: np.ndarray,
                      weight: Optional[np.ndarray]) -> Optional[str]:
    """The message of a non-finite ``init_raw`` caused by overflow (finite, large targets or
    weights), or None when the loss is at fault."""
    top_y, top_w = _largest(y), _largest(weight) if weight is not None else 1.0
    if max(top_y, top_w) > LARGE:
        return (f"numeric overflow: the starting value of loss {label(loss)!r} (init_raw) is "
                f"{np.ravel(value).tolist()[:3]} for finite targets (largest |y| = "
                f"{top_y:.3g}) and "
                f"weights (largest sample_weight = {top_w:.3g}); rescale y or sample_weight")
    return None


def sample(sampler: Any, res: Any, n_rows: int, how: str, n_threads: int = 1,
           entries: bool = True, part: bool = False) -> Optional[SampleResult]:
    """Validate a sampler's result (None, or sorted unique in-range rows and weights).

    The structure (type, dimensions, dtypes, non-empty) is checked here; the entries (order,
    range, weights) too unless ``entries`` is False, in which case the caller must check them
    before any kernel reads them (:meth:`BoostingContext.fit_tree` does, in the pass that
    gathers the sample when it can: see :func:`sample_entries`). ``part``: the sample is one
    worker's part of a distributed fit's, which may be empty, or hold no positive weight,
    when the other workers' parts do not.
    """
    if res is None:
        return None
    who = f"sampler {label(sampler)!r} returned"
    if not isinstance(res, SampleResult):
        raise PluginError(f"sampler {label(sampler)!r} must return a "
                          f"boostlib.api.SampleResult or None, got {type(res).__name__}")
    sample_structure(who, res, part)
    if entries:
        sample_entries(who, res, n_rows, n_threads)
    return res


def sample_structure(who: str, res: SampleResult, part: bool = False) -> None:
    """Checks of a sample's structure: 1-D integer indices, not empty; weights None or a
    float array aligned with them, some positive (one vectorised pass). ``who`` starts the
    error message ("sampler 'x' returned"); ``part`` as for :func:`sample`."""
    idx = res.indices
    if not (isinstance(idx, np.ndarray) and idx.ndim == 1 and idx.dtype.kind in "iu"):
        raise PluginError(f"{who} indices that are not a 1-D integer index array")
    if part:
        w = res.weights
        if w is not None and not (isinstance(w, np.ndarray) and w.shape == idx.shape
                                  and w.dtype.kind == "f"):
            raise PluginError(f"{who} weights that are not a float array aligned with its "
                              "indices")
        return
    if idx.size == 0:
        raise PluginError(f"{who} an empty sample")
    w = res.weights
    if w is not None and not (isinstance(w, np.ndarray) and w.shape == idx.shape
                              and w.dtype.kind == "f"):
        raise PluginError(f"{who} weights that are not a float array aligned with its "
                          "indices")
    if w is not None and not np.any(w > 0):
        raise PluginError(f"{who} weights none of which is positive: a tree fitted on them "
                          "would fit nothing")


def fused_entries(res: SampleResult) -> bool:
    """Whether a sample's entries can be checked by the kernel that gathers it (int32 rows,
    float64 weights or none, contiguous): else :func:`sample_entries` checks them first."""
    idx, w = res.indices, res.weights
    return (idx.dtype == np.int32 and idx.flags.c_contiguous
            and (w is None or (w.dtype == np.float64 and w.flags.c_contiguous)))


def sample_entries(who: str, res: SampleResult, n_rows: int, n_threads: int = 1) -> None:
    """Check every entry of a sample (rows in ``[0, n_rows)``, strictly increasing; weights
    finite and >= 0): one compiled pass when :func:`fused_entries`, else NumPy."""
    idx, w = res.indices, res.weights
    if fused_entries(res):
        flags = _sampling.sample_defects(idx, _NO_WEIGHTS if w is None else w, n_rows,
                                         n_threads)
    else:
        flags = ((idx[0] < 0 or idx[-1] >= n_rows)
                 | (2 * (idx.size > 1 and not bool(np.all(idx[1:] > idx[:-1]))))
                 | (4 * (w is not None and (not _finite(w, "full") or w.min() < 0))))
    sample_error(who, int(flags), n_rows)


def sample_error(who: str, flags: int, n_rows: int) -> None:
    """Raise the PluginError of a sample's defects (flags as ``_sampling.sample_defects``
    returns them; 0: nothing to raise)."""
    if flags & 1:
        raise PluginError(f"{who} indices out of [0, {n_rows})")
    if flags & 2:
        raise PluginError(f"{who} indices that are not sorted and unique")
    if flags & 4:
        raise PluginError(f"{who} negative or non-finite weights")
