"""Thread-count helpers shared by the Python layer.

Fork safety: GNU OpenMP (libgomp, what GCC builds link) keeps its worker threads in a pool
that a ``fork()`` does not copy, and the child's next parallel region with more than one
thread waits for them forever. A process forked from one that already ran OpenMP code
(``multiprocessing``'s default start method on Linux, ``os.fork``) therefore runs
boostlib's kernels on one thread: :func:`effective_n_threads` returns 1 in a forked child
and warns once. The ``spawn`` and ``forkserver`` start methods keep every thread.
"""
import os
import warnings

from ._cpu_limits import idle_cpus, usable_cpus

_forked = False
_warned = False


def _after_fork_in_child():
    global _forked, _warned
    _forked = True
    _warned = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def in_forked_child():
    """Return True in a process created by ``fork()`` after boostlib was imported."""
    return _forked

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
        ``None`` means every core the process may use (``OMP_NUM_THREADS`` caps it); a
        positive number is a count, capped at the number of cores the process may use
        (more threads than cores only make OpenMP's threads wait for each other); a negative
        number counts back from the number of cores (``-1`` = all, ``-2`` = all but one), as
        in joblib. The cores the process may use are the fewest of its CPU affinity mask,
        its control groups' CPU quota (a container's ``--cpus``) and ``os.cpu_count()``
        (:func:`boostlib._kernels._cpu_limits.usable_cpus`).

    Returns
    -------
    int
        At least 1; always 1 when boostlib was built without OpenMP, and in a forked child
        process (see the module's notes on fork safety; a RuntimeWarning says so once).
    """
    global _warned
    if n_jobs is not None and (isinstance(n_jobs, bool) or int(n_jobs) != n_jobs or n_jobs == 0):
        raise ValueError(
            f"n_jobs={n_jobs!r} is invalid; expected None, a positive or a negative integer")
    if boostlib_openmp_enabled() == 0:
        return 1
    n_cpus = usable_cpus()
    if n_jobs is None:
        n = max(1, min(n_cpus, boostlib_omp_max_threads()))
    elif n_jobs < 0:
        n = max(1, n_cpus + 1 + int(n_jobs))
    else:
        n = min(int(n_jobs), n_cpus)
    if _forked and n > 1:
        if not _warned:
            _warned = True
            warnings.warn("boostlib runs on one thread in this process: it was forked, and "
                          "OpenMP threads cannot be used after a fork (they would hang). "
                          "Start worker processes with the 'spawn' or 'forkserver' method "
                          "to use several threads in each", RuntimeWarning, stacklevel=2)
        return 1
    return n


def training_n_threads(n_jobs=None):
    """Number of threads a fit uses for ``n_jobs``: :func:`effective_n_threads`, and with
    ``n_jobs=None`` at most the machine's CPUs that other processes leave idle now
    (:func:`boostlib._kernels._cpu_limits.idle_cpus`; the training loop asks again during
    the fit).

    Beside a busy process, a fit on fewer threads than cores runs about twice its quiet
    time, where OpenMP threads waiting on a descheduled thread make it 4-9x slower
    (``benchmarks/bench_contention.py``). The model does not depend on the thread count.
    """
    n = effective_n_threads(n_jobs)
    if n_jobs is None and n > 1:
        n = min(n, idle_cpus())
    return n
