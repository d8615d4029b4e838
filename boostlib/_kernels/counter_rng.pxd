# Counter-based uniform draws shared by the sampling kernels.
#
# The draws come in pairs: rows ``2q`` and ``2q + 1`` of a draw with seed ``s`` share the
# ``q``-th output of the SplitMix64 generator started at state ``s`` (Steele, Lea & Flood,
# "Fast splittable pseudorandom number generators", OOPSLA 2014): ``z = s + (q + 1) *
# golden_gamma`` through the SplitMix64 finaliser. Row ``2q`` gets its high 32 bits, row
# ``2q + 1`` its low 32 bits: row ``i``'s draw is the integer ``u32_i`` in [0, 2**32), the
# uniform ``u_i = u32_i * 2**-32``. A draw is a pure function of ``(s, i)``, so it can be
# computed in any order, by any number of threads, and always gives the same numbers; the
# samplers take one 64-bit seed per iteration from the estimator's seeded generator. One
# 64-bit output per two rows halves the generator's cost per row, and a 32-bit integer is
# compared without any conversion to floating point; what the resolution of 2**-32 means
# for each sampler's probabilities is in ``docs/samplers.md``.

from libc.stdint cimport uint64_t


cdef inline uint64_t splitmix64(uint64_t seed, uint64_t q) noexcept nogil:
    """The ``q``-th (0-based) SplitMix64 output of the stream started at ``seed``: the draws
    of rows ``2q`` (high 32 bits) and ``2q + 1`` (low 32 bits)."""
    cdef uint64_t z = seed + (q + 1) * <uint64_t>0x9E3779B97F4A7C15
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline uint64_t high32(uint64_t z) noexcept nogil:
    """The draw of the even row of the pair ``z``."""
    return z >> 32


cdef inline uint64_t low32(uint64_t z) noexcept nogil:
    """The draw of the odd row of the pair ``z``."""
    return z & <uint64_t>0xFFFFFFFF


cdef inline uint64_t draw32(uint64_t seed, uint64_t i) noexcept nogil:
    """Row ``i``'s draw ``u32_i`` on its own (the kernels take both halves of each output)."""
    cdef uint64_t z = splitmix64(seed, i >> 1)
    return low32(z) if i & 1 else high32(z)
