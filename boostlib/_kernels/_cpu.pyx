"""What the CPU running this process can execute (read once, at import).

Compiled for the baseline instruction set, whatever the build: it is what decides whether the
kernel variants built for wider vectors may be loaded (``boostlib._kernels``).
"""

cdef extern from *:
    """
    #if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
    /* the compiler runtime checks the CPUID bit and that the OS saves the YMM registers */
    static int boostlib_cpu_avx2(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") ? 1 : 0;
    }
    #else
    static int boostlib_cpu_avx2(void) { return 0; }
    #endif
    """
    int boostlib_cpu_avx2() noexcept nogil


def has_avx2():
    """Return True when this CPU and OS run AVX2 code (False on compilers or architectures
    this module cannot ask)."""
    return bool(boostlib_cpu_avx2())
