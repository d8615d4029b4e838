# A branch-free exp for non-positive arguments, so that loops calling it vectorise.
#
# Cody-Waite reduction x = k ln2 + r (|r| <= ln2/2, ln2 split in fdlibm's two parts), the
# degree-13 Taylor polynomial of e^r (truncation error below 1e-17 relative; its terms
# from r^4 up by Estrin's scheme, for short dependency chains), and 2^k built
# from exponent bits as the product of two powers of two, so results down to the smallest
# subnormal are gradual. Arguments below -746 give 0 or the smallest subnormal; NaN gives NaN.
# Every step is plain IEEE arithmetic or integer bit manipulation (no table, no branch, no
# libm call), so the result does not depend on where or how often it is evaluated.

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    static inline double boostlib_exp_nonpos(double x) {
        const double shifter = 6755399441055744.0;      /* 1.5 * 2^52 */
        const double log2e = 1.4426950408889634074;
        const double ln2_hi = 6.93147180369123816490e-01;
        const double ln2_lo = 1.90821492927058770002e-10;
        double t, k, r, p;
        int64_t kb, sb, nk, h1, h2, b1, b2;
        double s1, s2;
        x = x < -746.0 ? -746.0 : x;
        t = x * log2e + shifter;                /* round(x log2 e) in the low bits of t */
        k = t - shifter;
        r = (x - k * ln2_hi) - k * ln2_lo;
        {   /* terms from r^4 up by Estrin's scheme (short chains), the first ones by
               Horner's (their rounding dominates the error) */
            double r2 = r * r, r4 = r2 * r2;
            double q0 = 1.0 / 24.0 + r * (1.0 / 120.0);
            double q1 = 1.0 / 720.0 + r * (1.0 / 5040.0);
            double q2 = 1.0 / 40320.0 + r * (1.0 / 362880.0);
            double q3 = 1.0 / 3628800.0 + r * (1.0 / 39916800.0);
            double q4 = 1.0 / 479001600.0 + r * (1.0 / 6227020800.0);
            double tail = (q0 + r2 * q1) + r4 * ((q2 + r2 * q3) + r4 * q4);
            p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * tail)));
        }
        memcpy(&kb, &t, sizeof(double));
        memcpy(&sb, &shifter, sizeof(double));
        nk = sb - kb;                           /* -k >= 0 */
        h1 = (int64_t)((uint64_t)nk >> 1);
        h2 = nk - h1;
        b1 = (1023 - h1) << 52;                 /* 2^-h1 and 2^-h2, both normal */
        b2 = (1023 - h2) << 52;
        memcpy(&s1, &b1, sizeof(double));
        memcpy(&s2, &b2, sizeof(double));
        return (p * s1) * s2;
    }
    """
    double boostlib_exp_nonpos(double x) noexcept nogil
