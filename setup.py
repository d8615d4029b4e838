"""Build script: compiles boostlib's Cython kernels.

Environment switches
--------------------
BOOSTLIB_DEBUG_CYTHON=1
    Compile the kernels with ``boundscheck`` and ``wraparound`` on (and ``-O0 -g``), so an
    out-of-range index raises ``IndexError`` instead of corrupting memory. The test suite
    passes in both builds; CI runs the kernel tests in this build too.
BOOSTLIB_NO_OPENMP=1
    Build without OpenMP even where the compiler supports it (kernels then run on one thread).
"""
import os
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

KERNELS = ["_openmp", "_binning", "_histogram", "_splitting", "_partition", "_predictor", "_loss",
           "_sampling", "_order_stats"]
DEBUG = os.environ.get("BOOSTLIB_DEBUG_CYTHON", "0") not in ("", "0")


def openmp_flag():
    """Return the compiler flag that enables OpenMP, or None if it does not compile."""
    if os.environ.get("BOOSTLIB_NO_OPENMP", "0") not in ("", "0"):
        return None
    if sys.platform == "win32":
        return "/openmp"
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    cc = cc.split()
    code = textwrap.dedent(
        """
        #include <omp.h>
        int main(void) {
          int n = 0;
          #pragma omp parallel reduction(+:n)
          n += 1;
          return n > 0 ? 0 : 1;
        }
        """
    )
    tmp = tempfile.mkdtemp()
    try:
        src = os.path.join(tmp, "omp_probe.c")
        with open(src, "w") as fh:
            fh.write(code)
        cmd = cc + ["-fopenmp", src, "-o", os.path.join(tmp, "omp_probe")]
        ok = subprocess.run(cmd, capture_output=True).returncode == 0
    except OSError:
        ok = False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not ok:
        print("boostlib: the C compiler has no OpenMP; kernels will run single-threaded",
              file=sys.stderr)
    return "-fopenmp" if ok else None


class BuildExt(build_ext):
    """Adds the OpenMP flag (when the compiler has it) to every kernel."""

    def build_extensions(self):
        flag = openmp_flag()
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
    for name in KERNELS
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives=directives,
        force=True,  # a switch of BOOSTLIB_DEBUG_CYTHON must regenerate the C files
    ),
    cmdclass={"build_ext": BuildExt},
)
