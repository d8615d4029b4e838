"""What the CPU running this process can execute (read once, at import).

Compiled for the baseline instruction set, whatever the build: it is what decides whether the
kernel variants built for wider vectors may be loaded (``boostlib._kernels``).
"""

cdef extern from *:
    """
    #if defined(BOOSTLIB_CPU_PROBE) && (defined(__x86_64__) || defined(__i386__))
    /* the compiler runtime checks the CPUID bit and that the OS saves the YMM registers
       (setup.py defines BOOSTLIB_CPU_PROBE when its probe built and linked this call, which
       is when it builds the AVX2 kernels) */
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
    """Return True when this CPU and OS run AVX2 code (False where boostlib was built without
    its AVX2 kernels: other architectures and compilers, ``BOOSTLIB_NO_ISA_VARIANTS=1``)."""
    return bool(boostlib_cpu_avx2())
