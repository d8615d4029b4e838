"""Compiled kernels (Cython). They import nothing from the rest of boostlib.

Some kernel modules are also built for CPUs with AVX2 (``_loss_avx2``, ``_predictor_avx2``:
the same source with wider vectors and no fused multiply-add, so their results are
bit-identical to the baseline modules'). The names ``_loss`` and ``_predictor`` of this
package are bound, at import, to the variant this CPU runs best; import them as
``from boostlib._kernels import _loss``. :data:`ISA` says which variant that is.

The environment variable ``BOOSTLIB_ISA`` overrides the choice: ``auto`` (default), ``baseline``
or ``avx2`` (an error if the CPU or the build lacks it).
"""
import os
from importlib import import_module
from types import ModuleType

from . import _cpu

#: the modules that have variants, and the variants in order of preference
VARIANT_MODULES = ("_loss", "_predictor")
ISAS = ("avx2", "baseline")


def _requested() -> str:
    value = os.environ.get("BOOSTLIB_ISA", "").strip().lower() or "auto"
    if value != "auto" and value not in ISAS:
        raise ImportError(f"BOOSTLIB_ISA={value!r} is invalid; expected one of "
                          f"{('auto',) + ISAS}")
    return value


def variant(name: str, isa: str) -> ModuleType:
    """The kernel module ``name`` (one of :data:`VARIANT_MODULES`) built for ``isa``.

    Raises ImportError when that variant was not built (another architecture or compiler, or
    ``BOOSTLIB_NO_ISA_VARIANTS=1``); loading one the CPU cannot run is the caller's error.
    """
    suffix = "" if isa == "baseline" else "_" + isa
    return import_module(f".{name}{suffix}", __name__)


def _choose() -> str:
    requested = _requested()
    if requested == "baseline":
        return "baseline"
    usable = _cpu.has_avx2()
    if requested == "avx2" and not usable:
        raise ImportError("BOOSTLIB_ISA='avx2', but this CPU (or its OS) does not run AVX2 "
                          "code; use 'auto' or 'baseline'")
    if usable:
        try:
            for name in VARIANT_MODULES:
                variant(name, "avx2")
        except ImportError as exc:
            if requested == "avx2":
                raise ImportError("BOOSTLIB_ISA='avx2', but boostlib was built without its "
                                  f"AVX2 kernels ({exc})") from None
            return "baseline"
        return "avx2"
    return "baseline"


#: the instruction set of the kernel variants in use: "avx2" or "baseline"
ISA = _choose()
_loss = variant("_loss", ISA)
_predictor = variant("_predictor", ISA)
