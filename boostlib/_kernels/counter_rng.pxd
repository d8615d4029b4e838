# Counter-based uniform draws shared by the sampling kernels.
#
# Row ``i`` of a draw with seed ``s`` gets the ``i``-th output of the SplitMix64 generator
# started at state ``s`` (Steele, Lea & Flood, "Fast splittable pseudorandom number
# generators", OOPSLA 2014): ``z = s + (i + 1) * golden_gamma`` through the SplitMix64
# finaliser. It is a pure function of ``(s, i)``, so a draw can be computed in any order, by
# any number of threads, and always gives the same numbers; the samplers take one 64-bit seed
# per iteration from the estimator's seeded generator.

from libc.stdint cimport int64_t, uint64_t


cdef inline uint64_t splitmix64(uint64_t seed, uint64_t i) noexcept nogil:
    """The ``i``-th (0-based) SplitMix64 output of the stream started at ``seed``."""
    cdef uint64_t z = seed + (i + 1) * <uint64_t>0x9E3779B97F4A7C15
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline double uniform01(uint64_t seed, uint64_t i) noexcept nogil:
    """A uniform double in [0, 1): the top 53 bits of ``splitmix64(seed, i)`` times 2**-53."""
    return <double>(<int64_t>(splitmix64(seed, i) >> 11)) * 1.1102230246251565e-16
