"""Thread-count helpers shared by the Python layer."""
import os

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int boostlib_openmp_enabled(void) { return 1; }
    static int boostlib_omp_max_threads(void) { return omp_get_max_threads(); }
    #else
    static int boostlib_openmp_enabled(void) { return 0; }
    static int boostlib_omp_max_threads(void) { return 1; }
    #endif
    """
    int boostlib_openmp_enabled() noexcept nogil
    int boostlib_omp_max_threads() noexcept nogil

cdef extern from *:
    """
    #ifndef BOOSTLIB_DEBUG
    #define BOOSTLIB_DEBUG 0
    #endif
    """
    bint BOOSTLIB_DEBUG


def debug_build():
    """Return True for a build made with ``BOOSTLIB_DEBUG_CYTHON=1`` (bounds checks on)."""
    return bool(BOOSTLIB_DEBUG)


def openmp_enabled():
    """Return True when the kernels were compiled with OpenMP."""
    return boostlib_openmp_enabled() == 1


def effective_n_threads(n_jobs=None):
    """Number of threads the kernels use for ``n_jobs``.

    Parameters
    ----------
    n_jobs : int or None
        ``None`` means every core the process may use (``OMP_NUM_THREADS`` caps it);
        a positive number is a count, capped at the number of cores the process may use
        (more threads than cores only make OpenMP's threads wait for each other); a negative
        number counts back from the number of cores (``-1`` = all, ``-2`` = all but one), as
        in joblib.

    Returns
    -------
    int
        At least 1; always 1 when boostlib was built without OpenMP.
    """
    if n_jobs is not None and (isinstance(n_jobs, bool) or int(n_jobs) != n_jobs or n_jobs == 0):
        raise ValueError(
            f"n_jobs={n_jobs!r} is invalid; expected None, a positive or a negative integer")
    if boostlib_openmp_enabled() == 0:
        return 1
    try:
        n_cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        n_cpus = os.cpu_count() or 1
    if n_jobs is None:
        return max(1, min(n_cpus, boostlib_omp_max_threads()))
    if n_jobs < 0:
        return max(1, n_cpus + 1 + int(n_jobs))
    return min(int(n_jobs), n_cpus)
