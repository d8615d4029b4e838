"""Build script: compiles boostlib's Cython kernels.

Environment switches
--------------------
BOOSTLIB_DEBUG_CYTHON=1
    Compile the kernels with ``boundscheck`` and ``wraparound`` on (and ``-O0 -g``), so an
    out-of-range index raises ``IndexError`` instead of corrupting memory. The test suite
    passes in both builds; CI runs the kernel tests in this build too.
BOOSTLIB_NO_OPENMP=1
    Build without OpenMP even where the compiler supports it (kernels then run on one thread).
BOOSTLIB_NO_ISA_VARIANTS=1
    Build only the baseline kernels. By default, on x86-64 with GCC or Clang, the kernel
    modules listed in ``ISA_VARIANTS`` are also built for AVX2 (``<name>_avx2``, from a stub
    that includes the same source); ``boostlib._kernels`` loads them when the CPU has AVX2.
"""
import multiprocessing
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

KERNELS = ["_openmp", "_cpu", "_binning", "_bundling", "_histogram", "_splitting",
           "_leafwise", "_partition", "_predictor", "_loss", "_sampling", "_order_stats", "_auc",
           "_ranking", "_treeshap", "_vector", "_survival", "_linear"]
# Kernel modules also built for wider vectors, where it pays: the logloss derivatives (their
# exp) and the oblivious trees' walk (score updates, prediction) run 1.3-2x faster with AVX2.
# No FMA: without fused multiply-adds every operation rounds as in the baseline build, so the
# variants' results are bit-identical to it (tests/test_kernels_isa.py checks).
ISA_VARIANTS = {"avx2": (["_loss", "_predictor"], ["-mavx2", "-mno-fma", "-ffp-contract=off"])}
DEBUG = os.environ.get("BOOSTLIB_DEBUG_CYTHON", "0") not in ("", "0")


def _compiles(code, flags):
    """Return True if the C compiler builds ``code`` into a program with ``flags``."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    tmp = tempfile.mkdtemp()
    try:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as fh:
            fh.write(textwrap.dedent(code))
        cmd = cc.split() + list(flags) + [src, "-o", os.path.join(tmp, "probe")]
        return subprocess.run(cmd, capture_output=True).returncode == 0
    except OSError:
        return False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def openmp_flag():
    """Return the compiler flag that enables OpenMP, or None if it does not compile."""
    if os.environ.get("BOOSTLIB_NO_OPENMP", "0") not in ("", "0"):
        return None
    if sys.platform == "win32":
        return "/openmp"
    ok = _compiles(
        """
        #include <omp.h>
        int main(void) {
          int n = 0;
          #pragma omp parallel reduction(+:n)
          n += 1;
          return n > 0 ? 0 : 1;
        }
        """, ["-fopenmp"])
    if not ok:
        print("boostlib: the C compiler has no OpenMP; kernels will run single-threaded",
              file=sys.stderr)
    return "-fopenmp" if ok else None


def isa_flags(isa):
    """Return the compiler flags of a kernel variant (``ISA_VARIANTS``), or None when it is
    not built here: another architecture, MSVC, a compiler that rejects the flags, or
    ``BOOSTLIB_NO_ISA_VARIANTS=1``."""
    if os.environ.get("BOOSTLIB_NO_ISA_VARIANTS", "0") not in ("", "0"):
        return None
    if sys.platform == "win32" or platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    flags = ISA_VARIANTS[isa][1]
    ok = _compiles(
        """
        int main(void) {  /* compiles with the flags, and the runtime check links */
          __builtin_cpu_init();
          (void)__builtin_cpu_supports("avx2");
          return 0;
        }
        """, flags)
    if not ok:
        print(f"boostlib: the C compiler rejects {' '.join(flags)}; the {isa} kernel variants "
              "are not built (the baseline kernels run everywhere)", file=sys.stderr)
    return flags if ok else None


class BuildExt(build_ext):
    """Adds the OpenMP flag (when the compiler has it) to every kernel, and the instruction-set
    flags to the kernel variants (dropped where they cannot be built)."""

    def build_extensions(self):
        flag = openmp_flag()
        for isa in ISA_VARIANTS:
            variant = [e for e in self.extensions if e.name.endswith("_" + isa)]
            flags = isa_flags(isa)
            if flags is None:
                self.extensions = [e for e in self.extensions if e not in variant]
                continue
            for ext in variant:
                ext.extra_compile_args += flags
            # _cpu asks the CPU with __builtin_cpu_supports only where the probe built it
            for ext in self.extensions:
                if ext.name == "boostlib._kernels._cpu":
                    ext.define_macros.append(("BOOSTLIB_CPU_PROBE", "1"))
        for ext in self.extensions:
            if flag:
                ext.extra_compile_args.append(flag)
                ext.extra_link_args.append(flag)
            if DEBUG:
                ext.extra_compile_args += ["-O0", "-g"]
            elif sys.platform != "win32":
                # -fno-trapping-math and -fno-math-errno change no result (boostlib never
                # reads FP exception flags or errno); the first lets GCC turn comparisons into
                # selects, so branch-free kernels (the logloss derivatives with their exp)
                # vectorise, the second lets a square root be one instruction, so loops
                # taking them (the MVS scores) vectorise.
                ext.extra_compile_args += ["-O3", "-fno-trapping-math", "-fno-math-errno"]
        if not self.parallel:       # the kernels compile independently: one job per core
            self.parallel = os.cpu_count() or 1
        super().build_extensions()


directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "nonecheck": False,
    "cdivision": True,
    "cpow": True,
}

extensions = [
    Extension(
        f"boostlib._kernels.{name}",
        [f"boostlib/_kernels/{name}.pyx"],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION"),
                       ("BOOSTLIB_DEBUG", "1" if DEBUG else "0")],
    )
    for name in KERNELS + [f"{m}_{isa}" for isa, (mods, _) in ISA_VARIANTS.items() for m in mods]
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives=directives,
        force=True,  # a switch of BOOSTLIB_DEBUG_CYTHON must regenerate the C files
        # Cython in a process per core where processes fork: a spawned one would import
        # this script again, and set up a second build
        nthreads=(os.cpu_count() or 1) if multiprocessing.get_start_method() == "fork" else 0,
    ),
    cmdclass={"build_ext": BuildExt},
)
