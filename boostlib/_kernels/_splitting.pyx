"""Split finding on histograms with the Newton gain ``G^2 / (H + l2)``.

A candidate is (feature ``f``, bin ``b``, missing direction). Rows whose bin is ``<= b`` go
left; missing rows go right when ``nan_right``. A candidate is *valid* for a node when both
children have at least ``min_samples_leaf`` rows and a hessian sum of at least
``min_child_weight``, and both ``H + l2`` are positive. Its gain for that node is
``GL^2/(HL+l2) + GR^2/(HR+l2) - G^2/(H+l2)``. Optional ``noise[f, b]`` (random strength) is
added to the score used to *rank* candidates, never to the reported gain. Only candidates with
a strictly positive gain can be chosen. Ties go to the smaller feature, then the smaller bin,
then ``nan_right = 0``; so the result never depends on ``n_threads``.

Histograms are laid out per feature (``offsets``): feature ``f`` owns the bins
``offsets[f]:offsets[f+1]`` of a node's histogram, ``nb = n_bins_nonmissing[f]`` bins for
values and then its missing bin, so a histogram is ``hist[slot, offsets[f] + b, channel]``.

A *categorical* feature (``is_cat[f]``) has no order: its bins are categories, and a split
sends a set of them left. Its candidates are Fisher's: the categories with at least
``min_data_per_group`` rows (the missing bin is one more category) are sorted by their
smoothed gradient ratio ``G / (H + cat_smooth)``, and the left set is a prefix of that order
(``direction`` 0) or of the reverse order (``direction`` 1) of at most ``max_cat_threshold``
categories; the rarer categories always go right. For a squared-loss gain this scan is
exact among all subsets (Fisher 1958; Breiman et al. 1984), in ``O(k log k)`` instead of
``2**k``. The gain of a categorical candidate uses ``l2 + cat_l2`` (stronger regularisation:
a set split fits the node more closely than a threshold). Such a candidate is reported as
(bin = set size ``k``, nan_right = direction); :func:`category_left_set` turns it into the
set.

Histograms have 3 channels (gradient, hessian, count) or 2 (no count). Without counts, the
hessian sum stands in for the count wherever one is read, so the caller must pass
``min_samples_leaf=0`` and a positive ``min_child_weight`` (a child whose hessian sum reaches
it cannot be empty, so "at least one row" still holds). The missing bin of a node counts as
empty when its count is 0 or, without counts, when its gradient *and* hessian sums are 0 (then
its rows change no sum, so both directions give the same split).
"""
from cython.parallel cimport prange
from libc.float cimport DBL_EPSILON
from libc.math cimport INFINITY, fabs
from libc.stdlib cimport calloc, malloc, free
import numpy as np

from .common cimport (idx_t, uint32_t, uint64_t, CH_G, CH_H, CH_C, SET_WORDS, bit_count,
                      lowest_bit)


cdef CatParams _cat_params(const double[::1] cat_params) except *:
    cdef CatParams cp
    if cat_params.shape[0] != 4:
        raise ValueError("cat_params must be (cat_smooth, cat_l2, min_data_per_group, "
                         "max_cat_threshold)")
    cp.smooth = cat_params[0]
    cp.l2 = cat_params[1]
    cp.min_group = cat_params[2] if cat_params[2] > 1.0 else 1.0
    cp.max_k = <Py_ssize_t> cat_params[3]
    if not (cp.smooth >= 0.0 and cp.l2 >= 0.0 and cp.max_k >= 1):
        raise ValueError("cat_smooth and cat_l2 must be >= 0, max_cat_threshold >= 1")
    return cp


cdef inline bint _valid(double cl, double cr, double hl, double hr, double l2,
                        double min_samples_leaf, double min_child_weight) noexcept nogil:
    return (cl >= min_samples_leaf and cr >= min_samples_leaf and hl >= min_child_weight
            and hr >= min_child_weight and hl + l2 > 0.0 and hr + l2 > 0.0)


cdef inline double _bounded_gain(double G, double H, double l2, double lo, double hi,
                                 double* w) noexcept nogil:
    """The Newton gain of a node whose value is kept in ``[lo, hi]``: ``-(2 G w + (H + l2)
    w^2)`` at the clipped value ``w`` (``G^2 / (H + l2)`` when it is not clipped)."""
    cdef double v = -G / (H + l2)
    if v < lo:
        v = lo
    elif v > hi:
        v = hi
    w[0] = v
    return -(2.0 * G * v + (H + l2) * v * v)


cdef inline uint64_t _bin_bits(const uint64_t* bits, Py_ssize_t b,
                               Py_ssize_t n_channels) noexcept nogil:
    # The bits of bin ``b``'s sums (as ``double_bits``), OR-ed, without the sign bit: 0 iff
    # every sum is 0.0 or -0.0.
    if n_channels == 2:
        return (bits[2 * b] | bits[2 * b + 1]) << 1
    return (bits[3 * b] | bits[3 * b + 1] | bits[3 * b + 2]) << 1


cdef inline bint _consider(double GL, double HL, double CL, double G, double H, double C,
                           double l2, double msl, double mcw, double parent, double* target,
                           Py_ssize_t b, int d, double* best) noexcept nogil:
    """Test one unbounded candidate exactly as :func:`_feature_best`'s scalar scan does
    (validity, the screen against ``target``, then the gain); take it into ``best`` (and
    raise ``target``) when it beats the best so far."""
    cdef double GR = G - GL, HR = H - HL, CR = C - CL, al, ar, gain
    if not _valid(CL, CR, HL, HR, l2, msl, mcw):
        return False
    al = HL + l2
    ar = HR + l2
    if GL * GL * ar + GR * GR * al < target[0] * (al * ar):
        return False
    gain = GL * GL / al + GR * GR / ar - parent
    if not gain > 0.0:
        return False
    if best[1] < 0 or gain > best[0]:
        best[0] = gain
        best[1] = b
        best[2] = d
        best[3] = gain
        target[0] = (parent + gain) * (1.0 - 1e-12)
        return True
    return False


cdef inline double _children_score(double GL, double HL, double CL, double G, double H,
                                   double C, double l2, double msl, double mcw,
                                   bint full) noexcept nogil:
    """A candidate's children's score ``GL^2/(HL+l2) + GR^2/(HR+l2)`` as one fraction (a
    few ulps from the sum of the two), or -inf when the candidate is not valid. Branch
    free, so that the compiler vectorises a loop of them. Without ``full``, only the
    hessian sums are checked: the caller knows that they imply the other conditions."""
    cdef double GR = G - GL, HR = H - HL, CR = C - CL
    cdef double al = HL + l2, ar = HR + l2
    cdef double v = (GL * GL * ar + GR * GR * al) / (al * ar)
    cdef bint ok = (HL >= mcw) & (HR >= mcw)
    if full:
        ok = ok & (CL >= msl) & (CR >= msl) & (al > 0.0) & (ar > 0.0)
    return v if ok else -INFINITY


cdef inline void _score_all(const double* gla, const double* hla, const double* cla,
                            Py_ssize_t n, double gm, double hm, double cm, bint both,
                            double G, double H, double C, double l2, double msl, double mcw,
                            bint full, double* s0, double* s1) noexcept nogil:
    """The children's scores of the candidates at ``n`` bins with left sums ``gla``,
    ``hla``, ``cla``: missing rows left (``s0``), and right (``s1``, with ``both``)."""
    cdef Py_ssize_t i
    if both:
        for i in range(n):
            s0[i] = _children_score(gla[i] + gm, hla[i] + hm, cla[i] + cm, G, H, C, l2, msl,
                                    mcw, full)
            s1[i] = _children_score(gla[i], hla[i], cla[i], G, H, C, l2, msl, mcw, full)
    else:
        for i in range(n):
            s0[i] = _children_score(gla[i] + gm, hla[i] + hm, cla[i] + cm, G, H, C, l2, msl,
                                    mcw, full)


cdef inline double _top(const double* s, Py_ssize_t n, double m0) noexcept nogil:
    """The largest of ``m0`` and ``s[:n]`` (NaN ignored), over four running maxima."""
    cdef double m1 = m0, m2 = m0, m3 = m0
    cdef Py_ssize_t i
    for i in range(0, n - 3, 4):
        m0 = s[i] if s[i] > m0 else m0
        m1 = s[i + 1] if s[i + 1] > m1 else m1
        m2 = s[i + 2] if s[i + 2] > m2 else m2
        m3 = s[i + 3] if s[i + 3] > m3 else m3
    for i in range(n - n % 4, n):
        m0 = s[i] if s[i] > m0 else m0
    return max(max(m0, m1), max(m2, m3))


cdef enum:
    # Features with fewer bins take the scalar scan: the vectorised scan's passes cost more
    # than the few candidates they would screen (binary one-hot features: 2 bins).
    VECTOR_MIN_BINS = 8

cdef bint _vector_scan = True
cdef Py_ssize_t _vector_min_bins = VECTOR_MIN_BINS


def use_vector_scan(bint on, Py_ssize_t min_bins=VECTOR_MIN_BINS):
    """Choose the scan of numeric candidates without bounds or noise: the vectorised one
    (True, the default) for features of at least ``min_bins`` bins, or the scalar one every
    other candidate takes; returns the previous ``(on, min_bins)``. Both choose the same
    split bit for bit; the tests check it through this switch, which is not thread-safe
    (set it before a fit, not during one)."""
    global _vector_scan, _vector_min_bins
    previous = (_vector_scan, _vector_min_bins)
    _vector_scan = on
    _vector_min_bins = min_bins
    return previous


cdef inline bint _mostly_in_use(const uint64_t* in_use, Py_ssize_t nb) noexcept nogil:
    """Whether ``in_use`` (NULL: unknown) marks more than a third of the ``nb`` bins: then
    one pass over every bin costs less than finding the marked ones."""
    cdef Py_ssize_t w, marked = 0
    if in_use == NULL:
        return True
    for w in range((nb + 63) // 64):
        marked += bit_count(in_use[w])
    return 3 * marked > nb


cdef inline Py_ssize_t _prefix_dense(const double* hf, int n_ch, Py_ssize_t nb, double* gla,
                                     double* hla, double* cla, idx_t* bins,
                                     uint64_t* in_use) noexcept nogil:
    """The left sums at the bins in use, in bin order, and the bins in use (into ``in_use``
    unless NULL), in one branch-free pass over every bin: an empty bin adds zeros, which
    change no sum, and its entry is overwritten by the next. ``n_ch`` (2 or 3, a constant
    at each call so the compiler specialises it) channels a bin; with 2, ``cla`` is not
    written (the counts are the hessians)."""
    cdef const uint64_t* bits = <const uint64_t*> hf
    cdef double gl = 0.0, hl = 0.0, cl = 0.0
    cdef Py_ssize_t b, n = 0
    cdef uint64_t nz, word = 0
    for b in range(nb):
        if n_ch == 3:
            nz = ((bits[3 * b] | bits[3 * b + 1] | bits[3 * b + 2]) << 1 != 0) | (b == 0)
        else:
            nz = ((bits[2 * b] | bits[2 * b + 1]) << 1 != 0) | (b == 0)     # bin 0 always
        gl = gl + hf[n_ch * b]
        hl = hl + hf[n_ch * b + 1]
        gla[n] = gl
        hla[n] = hl
        if n_ch == 3:
            cl = cl + hf[3 * b + 2]
            cla[n] = cl
        bins[n] = b
        n += nz
        word |= nz << (b & 63)
        if in_use != NULL and ((b & 63) == 63 or b == nb - 1):
            in_use[b >> 6] = word
            word = 0
    return n


cdef Py_ssize_t _prefix_sparse(const double* hf, Py_ssize_t n_channels, Py_ssize_t nb,
                               uint64_t* in_use, double* gla, double* hla, double* cla,
                               idx_t* bins) noexcept nogil:
    """The left sums at the bins in use, testing only the bins ``in_use`` marks (and bin
    0), which it then marks the bins in use."""
    cdef const uint64_t* bits = <const uint64_t*> hf
    cdef int cc = CH_C if n_channels == 3 else CH_H
    cdef double gl = 0.0, hl = 0.0, cl = 0.0
    cdef Py_ssize_t w, w0, b, n = 0
    cdef uint64_t maybe, word
    for w in range((nb + 63) // 64):
        w0 = w * 64
        word = 0
        maybe = in_use[w] | (w == 0)
        if nb - w0 < 64:
            maybe &= ((<uint64_t> 1) << (nb - w0)) - 1
        while maybe:        # no branch per bin: a child has about half its parent's bins
            b = w0 + lowest_bit(maybe)
            maybe &= maybe - 1
            word |= (<uint64_t> (_bin_bits(bits, b, n_channels) != 0 or b == 0)) << (b - w0)
        in_use[w] = word
        while word:
            b = w0 + lowest_bit(word)
            word &= word - 1
            gl = gl + hf[b * n_channels + CH_G]
            hl = hl + hf[b * n_channels + CH_H]
            cl = cl + hf[b * n_channels + cc]
            gla[n] = gl
            hla[n] = hl
            cla[n] = cl
            bins[n] = b
            n += 1
    return n


cdef void _scan_unbounded(const double* hf, Py_ssize_t n_channels, Py_ssize_t nb,
                          uint64_t* in_use, double G, double H, double C, double gm,
                          double hm, double cm, bint no_miss, double l2, double msl,
                          double mcw, double parent, double* best) noexcept nogil:
    """:func:`_feature_best` without bounds or noise, in three passes.

    1. The bins in use (as :func:`_feature_best` marks them, into ``in_use`` unless NULL)
       and the left sums at each of them, in bin order: the scalar scan's prefix sums,
       kept in arrays. Where every bin may be in use, one branch-free loop does both: an
       empty bin adds zeros to the sums, which changes none of them.
    2. Every candidate's children's score as one fraction (:func:`_children_score`),
       branch free and vectorised, and their maximum ``m``.
    3. In (bin, direction) order, only the candidates whose score reaches
       ``max(m, parent) * (1 - 1e-12)`` are tested as the scalar scan tests them
       (:func:`_consider`). The fraction is within a few ulps of the score the gain is
       computed from, so every candidate that could be the scalar scan's choice passes
       (a margin of 1e-12 against rounding of about 1e-15), and the choice is the same:
       the first of the highest gain.
    """
    cdef double gla[MAX_BINS]
    cdef double hla[MAX_BINS]
    cdef double cla_[MAX_BINS]
    cdef double* cla = cla_
    cdef double s0[MAX_BINS]
    cdef double s1[MAX_BINS]
    cdef idx_t bins[MAX_BINS]
    cdef int cc = CH_C if n_channels == 3 else CH_H
    # Hessian sums of at least mcw > 0 make both H + l2 positive (l2 >= 0); without counts
    # they are the counts (C is H), so they also reach msl <= mcw.
    cdef bint full = not (l2 >= 0.0 and mcw > 0.0 and cc == CH_H and C == H and msl <= mcw)
    cdef double top, target
    cdef Py_ssize_t i, n
    if _mostly_in_use(in_use, nb):
        if n_channels == 2:
            n = _prefix_dense(hf, 2, nb, gla, hla, cla, bins, in_use)
            cla = hla
        else:
            n = _prefix_dense(hf, 3, nb, gla, hla, cla, bins, in_use)
    else:
        n = _prefix_sparse(hf, n_channels, nb, in_use, gla, hla, cla, bins)
        if n_channels == 2:
            cla = hla
    if full:
        _score_all(gla, hla, cla, n, gm, hm, cm, not no_miss, G, H, C, l2, msl, mcw, True,
                   s0, s1)
    else:
        _score_all(gla, hla, cla, n, gm, hm, cm, not no_miss, G, H, C, l2, msl, mcw, False,
                   s0, s1)
    if bins[n - 1] == nb - 1:
        s0[n - 1] = -INFINITY     # everything left: not a split
    top = _top(s0, n, parent)
    if not no_miss:
        top = _top(s1, n, top)
    top = top * (1.0 - 1e-12)
    target = parent * (1.0 - 1e-12)
    for i in range(n):
        if not s0[i] < top:     # NaN included: tested exactly
            _consider(gla[i] + gm, hla[i] + hm, cla[i] + cm, G, H, C, l2, msl, mcw, parent,
                      &target, bins[i], 0, best)
        if not no_miss and not s1[i] < top:
            _consider(gla[i], hla[i], cla[i], G, H, C, l2, msl, mcw, parent, &target,
                      bins[i], 1, best)


cdef void _feature_best(const double* hf, Py_ssize_t n_channels, Py_ssize_t nb,
                        const double* total, double l2, double min_samples_leaf,
                        double min_child_weight, const double* noise_f, double* best,
                        double lo, double hi, int mono, uint64_t* in_use) noexcept nogil:
    """Best threshold candidate of one numeric feature of one node.

    ``hf`` points at the feature's first bin (``nb`` bins in use, then the missing bin;
    ``n_channels`` per bin); ``total`` at the node's (gradient, hessian, count) sums;
    ``noise_f`` at the feature's score noise or NULL. Writes (score, bin, nan_right, gain)
    to ``best``; bin is -1 when no candidate is valid with a positive gain. With monotone
    constraints, the node's value and its children's are kept in ``[lo, hi]`` (gains at the
    clipped values), and a feature with ``mono`` +1 (-1) takes only candidates whose left
    child's value is at most (at least) the right child's.

    An empty bin (all sums exactly 0) after the first gives the children of the bin before
    it, which wins the tie: it is not scanned (unless noise ranks the bins). The bins in use
    are marked in one 64-bit word per 64 bins, from the bits of their sums (no branch per
    bin), and the scan visits only the marked ones: a small node's histogram is mostly
    empty bins. ``in_use`` (NULL: not kept) holds :data:`USE_WORDS` such words: on entry
    the bins that may be in use (a set holding every nonzero bin, such as the parent node's
    bins in use; all ones: unknown), only these are tested; on return the bins in use.

    Without noise or bounds, a candidate is first screened without a division: its
    children's score ``GL^2/(HL+l2) + GR^2/(HR+l2)``, as one fraction, must come within a
    relative 1e-12 of the score that beats the best so far; only then is its gain computed
    as stated above. That case, the common one, takes the vectorised scan
    (:func:`_scan_unbounded`), which chooses the same candidate.
    """
    cdef bint bounded = mono != 0 or lo > -INFINITY or hi < INFINITY
    cdef bint screen = not bounded and noise_f == NULL
    cdef double wl = 0.0, wr = 0.0, wp = 0.0
    cdef Py_ssize_t b, w, w0
    cdef uint64_t used[USE_WORDS]
    cdef uint64_t word, maybe
    cdef const uint64_t* bits = <const uint64_t*> hf
    cdef int d
    cdef int cc = CH_C if n_channels == 3 else CH_H
    cdef bint has_count = n_channels == 3
    cdef double gm = hf[nb * n_channels + CH_G]
    cdef double hm = hf[nb * n_channels + CH_H]
    cdef double cm = hf[nb * n_channels + cc]
    cdef bint no_miss = cm == 0.0 and (has_count or gm == 0.0)
    cdef double G = total[0], H = total[1], C = total[2]
    cdef double gl = 0.0, hl = 0.0, cl = 0.0, al, ar
    cdef double GL, HL, CL, GR, HR, CR, parent, gain, score, target
    if bounded:
        parent = _bounded_gain(G, H, l2, lo, hi, &wp) if H + l2 > 0.0 else 0.0
    else:
        parent = G * G / (H + l2) if H + l2 > 0.0 else 0.0
    target = parent * (1.0 - 1e-12)     # the children's score a candidate must reach
    best[0] = 0.0
    best[1] = -1.0
    best[2] = 0.0
    best[3] = 0.0
    if screen and _vector_scan and nb >= _vector_min_bins:
        _scan_unbounded(hf, n_channels, nb, in_use, G, H, C, gm, hm, cm, no_miss, l2,
                        min_samples_leaf, min_child_weight, parent, best)
        return
    for w in range((nb + 63) // 64):        # the bins to scan: a bit per bin in use
        w0 = w * 64
        word = 0
        maybe = in_use[w] if in_use != NULL else ~(<uint64_t> 0)
        if noise_f != NULL:
            word = ~(<uint64_t> 0)
        elif maybe != ~(<uint64_t> 0):      # test the bins that may be in use
            while maybe:
                b = w0 + lowest_bit(maybe)
                maybe &= maybe - 1
                word |= (<uint64_t> (_bin_bits(bits, b, n_channels) != 0)) << (b - w0)
        elif n_channels == 2:   # a sum's bits without the sign: nonzero iff the sum != 0
            for b in range(w0, min(nb, w0 + 64)):
                word |= (<uint64_t> (_bin_bits(bits, b, 2) != 0)) << (b - w0)
        else:
            for b in range(w0, min(nb, w0 + 64)):
                word |= (<uint64_t> (_bin_bits(bits, b, 3) != 0)) << (b - w0)
        if nb - w0 < 64:
            word &= ((<uint64_t> 1) << (nb - w0)) - 1
        used[w] = word | (w == 0)       # bin 0 always
        if in_use != NULL:
            in_use[w] = used[w]
    for w in range((nb + 63) // 64):
        word = used[w]
        while word:
            b = w * 64 + lowest_bit(word)
            word &= word - 1
            gl = gl + hf[b * n_channels + CH_G]
            hl = hl + hf[b * n_channels + CH_H]
            cl = cl + hf[b * n_channels + cc]
            for d in range(2):
                if d == 0:
                    if b == nb - 1:
                        continue   # everything left: not a split
                    GL = gl + gm
                    HL = hl + hm
                    CL = cl + cm
                else:
                    if no_miss:
                        continue   # same as d == 0: the direction is decided later
                    GL = gl
                    HL = hl
                    CL = cl
                GR = G - GL
                HR = H - HL
                CR = C - CL
                if not _valid(CL, CR, HL, HR, l2, min_samples_leaf, min_child_weight):
                    continue
                if bounded:
                    gain = (_bounded_gain(GL, HL, l2, lo, hi, &wl)
                            + _bounded_gain(GR, HR, l2, lo, hi, &wr) - parent)
                    if (mono > 0 and wl > wr) or (mono < 0 and wl < wr):
                        continue
                else:
                    al = HL + l2
                    ar = HR + l2
                    if screen and GL * GL * ar + GR * GR * al < target * (al * ar):
                        continue
                    gain = GL * GL / al + GR * GR / ar - parent
                if not gain > 0.0:
                    continue
                score = gain + noise_f[b] if noise_f != NULL else gain
                if best[1] < 0 or score > best[0]:
                    best[0] = score
                    best[1] = b
                    best[2] = d
                    best[3] = gain
                    target = (parent + gain) * (1.0 - 1e-12)


cdef Py_ssize_t _cat_order(const double* stats, Py_ssize_t n_channels, Py_ssize_t nb,
                           CatParams cp, idx_t* order, double* key) noexcept nogil:
    """Sort the categories (bins ``0..nb``, the missing bin included) that have at least
    ``cp.min_group`` rows by ``G / (H + cp.smooth)``, ties by bin; returns their number.

    ``stats`` holds ``nb + 1`` bins of ``n_channels`` sums. Insertion sort: at most 256
    categories, and stable, so the order is fully determined.
    """
    cdef Py_ssize_t b, j, m = 0
    cdef int cc = CH_C if n_channels == 3 else CH_H
    cdef double c, r
    for b in range(nb + 1):
        c = stats[b * n_channels + cc]
        if not (c >= cp.min_group and c > 0.0):
            continue
        r = stats[b * n_channels + CH_G] / (stats[b * n_channels + CH_H] + cp.smooth)
        if not r == r:
            r = 0.0    # 0/0 (no hessian, no smoothing): neutral
        j = m
        while j > 0 and key[j - 1] > r:
            key[j] = key[j - 1]
            order[j] = order[j - 1]
            j -= 1
        key[j] = r
        order[j] = <idx_t> b
        m += 1
    return m


cdef void _cat_best(const double* hf, Py_ssize_t n_channels, Py_ssize_t nb, double l2,
                    double min_samples_leaf, double min_child_weight, CatParams cp,
                    const double* noise_f, double* best) noexcept nogil:
    """Best set candidate of one categorical feature of one node; ``best`` as in
    :func:`_feature_best` with (bin, nan_right) = (set size, direction)."""
    cdef idx_t order[MAX_BINS]
    cdef double key[MAX_BINS]
    cdef Py_ssize_t b, i, m, kmax
    cdef int d
    cdef int cc = CH_C if n_channels == 3 else CH_H
    cdef double G = 0.0, H = 0.0, C = 0.0, gl, hl, cl, GR, HR, CR, parent, gain, score
    cdef double lam = l2 + cp.l2
    best[0] = 0.0
    best[1] = -1.0
    best[2] = 0.0
    best[3] = 0.0
    for b in range(nb + 1):
        G = G + hf[b * n_channels + CH_G]
        H = H + hf[b * n_channels + CH_H]
        C = C + hf[b * n_channels + cc]
    m = _cat_order(hf, n_channels, nb, cp, order, key)
    kmax = m if m < cp.max_k else cp.max_k
    parent = G * G / (H + lam) if H + lam > 0.0 else 0.0
    for d in range(2):
        gl = 0.0
        hl = 0.0
        cl = 0.0
        for i in range(kmax):
            b = _cat_pick(order, m, d, i)
            gl = gl + hf[b * n_channels + CH_G]
            hl = hl + hf[b * n_channels + CH_H]
            cl = cl + hf[b * n_channels + cc]
            GR = G - gl
            HR = H - hl
            CR = C - cl
            if not _valid(cl, CR, hl, HR, lam, min_samples_leaf, min_child_weight):
                continue
            gain = gl * gl / (hl + lam) + GR * GR / (HR + lam) - parent
            if not gain > 0.0:
                continue
            score = gain + noise_f[i] if noise_f != NULL else gain
            if best[1] < 0 or score > best[0]:
                best[0] = score
                best[1] = i + 1
                best[2] = d
                best[3] = gain


cdef Py_ssize_t pick_feature(const double* per_feature, Py_ssize_t n_features,
                             const idx_t* listed=NULL) noexcept nogil:
    """Feature with the highest score in ``per_feature`` ((score, bin, nan_right, gain) per
    feature, :func:`_feature_best`'s output; ties: the smaller index); -1 if none is
    valid. ``listed`` (NULL: every feature): only these ``n_features`` features, ascending."""
    cdef Py_ssize_t i, f, best_f = -1
    cdef double best_score = 0.0
    for i in range(n_features):
        f = listed[i] if listed != NULL else i
        if per_feature[4 * f + 1] >= 0 and (best_f < 0 or per_feature[4 * f] > best_score):
            best_f = f
            best_score = per_feature[4 * f]
    return best_f


cdef Py_ssize_t fewest_bins(const idx_t* n_bins_nonmissing, Py_ssize_t n_features) noexcept nogil:
    """The first feature with the fewest bins: :func:`node_sums` reads a node's sums there."""
    cdef Py_ssize_t f, f_min = 0
    for f in range(n_features):
        if n_bins_nonmissing[f] < n_bins_nonmissing[f_min]:
            f_min = f
    return f_min


cdef void node_sums(const double* hs, Py_ssize_t n_ch, const idx_t* offsets,
                    const idx_t* n_bins_nonmissing, Py_ssize_t n_features,
                    double* totals) noexcept nogil:
    """(gradient, hessian, count) sums of the node whose histogram starts at ``hs`` (count:
    the hessian without a count channel), from the feature with the fewest bins: every
    feature's bins hold all of a node's rows, so the search takes a node's sums from here
    rather than from each feature's bins again."""
    feature_sums(hs, n_ch, offsets, n_bins_nonmissing,
                 fewest_bins(n_bins_nonmissing, n_features), totals)


cdef void feature_sums(const double* hs, Py_ssize_t n_ch, const idx_t* offsets,
                       const idx_t* n_bins_nonmissing, Py_ssize_t f,
                       double* totals) noexcept nogil:
    """:func:`node_sums` from feature ``f``'s bins (in bin order)."""
    cdef int cc = CH_C if n_ch == 3 else CH_H
    cdef Py_ssize_t b
    cdef const double* hf = hs + offsets[f] * n_ch
    totals[0] = 0.0
    totals[1] = 0.0
    totals[2] = 0.0
    for b in range(n_bins_nonmissing[f] + 1):
        totals[0] += hf[b * n_ch + CH_G]
        totals[1] += hf[b * n_ch + CH_H]
        totals[2] += hf[b * n_ch + cc]


cdef inline double _result_head(const double* hf, Py_ssize_t n_ch, Py_ssize_t nb,
                               const double* best, Py_ssize_t f, double* out) noexcept nogil:
    """The first four entries of a node's result ``out`` (feature ``f`` and its candidate
    ``best``'s bin, direction and gain); returns the node's row count (hessian sum
    without a count channel) over the feature's ``nb + 1`` bins at ``hf``."""
    cdef int cc = CH_C if n_ch == 3 else CH_H
    cdef Py_ssize_t b
    cdef double total = 0.0
    out[0] = f
    out[1] = best[1]
    out[2] = best[2]
    out[3] = best[3]
    for b in range(nb + 1):
        total = total + hf[b * n_ch + cc]
    return total


cdef void threshold_sums(const double* hf, Py_ssize_t n_ch, Py_ssize_t nb, Py_ssize_t b,
                         int d, Py_ssize_t c, double* left, double* right) noexcept nogil:
    """Channel ``c``'s sums over both children of the threshold split at bin ``b`` (missing
    rows right when ``d``) of the feature whose ``nb + 1`` bins are at ``hf``: the total
    from the missing bin up through the bins, the left side from bin 0 up (then the
    missing bin), the right side their difference, in :func:`find_split_nodes`' order."""
    cdef Py_ssize_t q
    cdef double total = hf[nb * n_ch + c], part = 0.0
    for q in range(nb):
        total = total + hf[q * n_ch + c]
    for q in range(b + 1):
        part = part + hf[q * n_ch + c]
    if not d:
        part = part + hf[nb * n_ch + c]
    left[0] = part
    right[0] = total - part


cdef void numeric_result(const double* hf, Py_ssize_t n_ch, Py_ssize_t nb,
                         const double* best, Py_ssize_t f, double* out) noexcept nogil:
    """A node's search result (``out``: 7 entries as :func:`find_split_nodes` gives them)
    for its best feature ``f``, numeric, with ``nb`` bins in use at ``hf`` and the
    candidate ``best`` (score, bin, nan_right, gain) :func:`_feature_best` found."""
    cdef int cc = CH_C if n_ch == 3 else CH_H
    _result_head(hf, n_ch, nb, best, f, out)
    # the children's rows (hessian sums without a count channel) summed as split_stats
    # sums them: without counts, another order of the bins can differ in the last bit
    threshold_sums(hf, n_ch, nb, <Py_ssize_t> best[1], <int> best[2], cc, &out[4], &out[5])
    if n_ch == 3:
        out[6] = 1.0 if hf[nb * n_ch + CH_C] > 0 else 0.0
    else:
        out[6] = 1.0 if (hf[nb * n_ch + CH_G] != 0.0 or hf[nb * n_ch + CH_H] != 0.0) else 0.0


cdef int _check_layout(Py_ssize_t n_hist_bins, const idx_t[::1] offsets,
                       const idx_t[::1] n_bins_nonmissing, const unsigned char[::1] is_cat,
                       Py_ssize_t n_features) except -1:
    cdef Py_ssize_t f
    if (offsets.shape[0] != n_features + 1 or n_bins_nonmissing.shape[0] != n_features
            or offsets[0] != 0 or offsets[n_features] != n_hist_bins):
        raise ValueError("offsets must have n_features + 1 entries from 0 to the histogram "
                         "length, n_bins_nonmissing n_features")
    if is_cat.shape[0] not in (0, n_features):
        raise ValueError("is_cat must be empty or have one entry per feature")
    for f in range(n_features):
        if not 1 <= n_bins_nonmissing[f] == offsets[f + 1] - offsets[f] - 1:
            raise ValueError("feature f owns n_bins_nonmissing[f] + 1 histogram bins")
        if n_bins_nonmissing[f] >= MAX_BINS:
            raise ValueError("a feature has at most 255 bins (categories) besides its "
                             "missing bin")
    return 0


cdef void cat_result(const double* hf, Py_ssize_t n_ch, Py_ssize_t nb, CatParams cp,
                     const double* best, Py_ssize_t f, double* out) noexcept nogil:
    """A node's categorical split ``out`` row (as :func:`find_split_nodes` gives it) from
    feature ``f``'s :func:`_cat_best` result ``best``: feature, set size, direction, gain,
    the children's row counts (hessian sums without a count channel), 0."""
    cdef idx_t order[MAX_BINS]
    cdef double key[MAX_BINS]
    cdef int cc = CH_C if n_ch == 3 else CH_H
    cdef double total = _result_head(hf, n_ch, nb, best, f, out), left = 0.0
    cdef Py_ssize_t b, i, m
    m = _cat_order(hf, n_ch, nb, cp, order, key)
    for i in range(<Py_ssize_t> best[1]):
        b = _cat_pick(order, m, <int> best[2], i)
        left = left + hf[b * n_ch + cc]
    out[4] = left
    out[5] = total - left
    out[6] = 0.0


cdef void cat_set_bits(const double* hf, Py_ssize_t n_ch, Py_ssize_t nb, CatParams cp,
                       int direction, Py_ssize_t size, int missing_bin,
                       uint32_t* bits) noexcept nogil:
    """The ``SET_WORDS``-word set of a node's categorical candidate ``(size, direction)``
    (its histogram of the feature at ``hf``), as ``grower.set_bits`` makes it from
    :func:`category_left_set`: the bins of the left categories, and with the missing
    category every bin from ``nb`` up to ``missing_bin``."""
    cdef idx_t order[MAX_BINS]
    cdef double key[MAX_BINS]
    cdef Py_ssize_t i, b, m = _cat_order(hf, n_ch, nb, cp, order, key)
    for i in range(SET_WORDS):
        bits[i] = 0
    for i in range(size):
        b = _cat_pick(order, m, direction, i)
        if b < nb:
            bits[b >> 5] |= (<uint32_t> 1) << (b & 31)
        else:
            for b in range(nb, missing_bin + 1):
                bits[b >> 5] |= (<uint32_t> 1) << (b & 31)


def find_split_nodes(const double[:, :, ::1] hist, const idx_t[::1] slots,
                     const idx_t[::1] offsets, const idx_t[::1] n_bins_nonmissing,
                     const unsigned char[::1] is_cat, const double[::1] cat_params,
                     double l2, double min_samples_leaf, double min_child_weight,
                     const double[:, :, ::1] noise, double[:, :, ::1] scratch,
                     double[:, ::1] out, int n_threads,
                     const unsigned char[:, ::1] allowed=None,
                     const signed char[::1] monotone=None,
                     const double[:, ::1] bounds=None):
    """Best split of each of several nodes (a level of a depthwise tree), with the row
    counts of its children, in one parallel region over (node, feature) pairs.

    Parameters
    ----------
    hist : IN (n_slots, offsets[-1], 2 or 3) histograms.
    slots : IN int32 (k,): the nodes' slots.
    offsets : IN int32 (n_features + 1,) the histogram layout.
    n_bins_nonmissing : IN int32 (n_features,): bins in use per feature, missing excluded.
    is_cat : IN uint8 (n_features,) 1 for categorical features, or empty (none).
    cat_params : IN float64 (cat_smooth, cat_l2, min_data_per_group, max_cat_threshold).
    l2, min_samples_leaf, min_child_weight : regularisation and constraints.
    noise : IN (k, n_features, >= max bins) score noise of each node (indexed by bin, or by
        set size - 1 for categorical features), or 0 rows for none.
    scratch : OUT (k, n_features, 4) per-node, per-feature best (score, bin, nan_right,
        gain); bin -1 where a feature has no valid candidate.
    out : OUT (k, 7) per node: feature (-1: no split), bin, nan_right, gain, left and right
        row counts of the split (hessian sums without a count channel), and 1 when the
        node's missing bin of that feature holds rows that matter (count > 0; without counts,
        a non-zero gradient or hessian sum), else 0 (always 0 for a categorical split: the
        missing bin is one of its categories).
    n_threads : OpenMP threads.
    allowed : IN uint8 (k, n_features), optional
        Which features each node may split on (column sampling, interaction constraints);
        default all.
    monotone : IN int8 (n_features,), optional
        Monotone constraint of each feature (-1, 0, +1; 0 for categorical features).
    bounds : IN (k, 2), optional
        The interval ``[lo, hi]`` each node's value, and its children's, are kept in (see
        :func:`_feature_best`). Categorical candidates are scored without them.

    Returns
    -------
    None; ties go to the smaller feature, so the result does not depend on ``n_threads``.
    """
    cdef bint use_mask = allowed is not None
    cdef bint use_mono = monotone is not None
    cdef bint use_bounds = bounds is not None
    cdef double lo = -INFINITY, hi = INFINITY
    cdef int mono = 0
    cdef Py_ssize_t k = slots.shape[0]
    cdef Py_ssize_t n_features = n_bins_nonmissing.shape[0]
    cdef Py_ssize_t n_channels = hist.shape[2]
    cdef bint use_noise = noise.shape[0] > 0
    cdef bint any_cat = is_cat.shape[0] > 0
    cdef Py_ssize_t t, j, f, i
    cdef const double* hf
    cdef CatParams cp = _cat_params(cat_params)
    cdef double[:, ::1] totals
    if not 2 <= n_channels <= 3:
        raise ValueError("hist must have 2 or 3 channels")
    _check_layout(hist.shape[1], offsets, n_bins_nonmissing, is_cat, n_features)
    if scratch.shape[0] != k or scratch.shape[1] != n_features or scratch.shape[2] != 4:
        raise ValueError("scratch must have shape (k, n_features, 4)")
    if out.shape[0] != k or out.shape[1] != 7:
        raise ValueError("out must have shape (k, 7)")
    if use_noise and (noise.shape[0] != k or noise.shape[1] != n_features):
        raise ValueError("noise must have shape (k, n_features, n_bins)")
    for f in range(n_features):
        if use_noise and noise.shape[2] < n_bins_nonmissing[f] + 1:
            raise ValueError("noise needs a value per bin")
    for j in range(k):
        if not 0 <= slots[j] < hist.shape[0]:
            raise ValueError("slot out of range")
    if use_mask and (allowed.shape[0] != k or allowed.shape[1] != n_features):
        raise ValueError("allowed must have shape (k, n_features)")
    if use_mono and monotone.shape[0] != n_features:
        raise ValueError("monotone must have one entry per feature")
    if use_bounds and (bounds.shape[0] != k or bounds.shape[1] != 2):
        raise ValueError("bounds must have shape (k, 2)")
    if n_features == 0:
        out[:, 0] = -1.0
        return
    totals = np.empty((k, 3))
    for j in range(k):
        node_sums(&hist[slots[j], 0, 0], n_channels, &offsets[0], &n_bins_nonmissing[0],
                  n_features, &totals[j, 0])
    with nogil:
        for t in prange(k * n_features, schedule="static", num_threads=n_threads):
            f = t // k
            j = t - f * k
            lo = bounds[j, 0] if use_bounds else -INFINITY
            hi = bounds[j, 1] if use_bounds else INFINITY
            mono = monotone[f] if use_mono else 0
            if use_mask and not allowed[j, f]:
                scratch[j, f, 0] = 0.0
                scratch[j, f, 1] = -1.0
                scratch[j, f, 2] = 0.0
                scratch[j, f, 3] = 0.0
            elif any_cat and is_cat[f]:
                _cat_best(&hist[slots[j], offsets[f], 0], n_channels, n_bins_nonmissing[f],
                          l2, min_samples_leaf, min_child_weight, cp,
                          &noise[j, f, 0] if use_noise else NULL, &scratch[j, f, 0])
            else:
                _feature_best(&hist[slots[j], offsets[f], 0], n_channels,
                              n_bins_nonmissing[f], &totals[j, 0], l2, min_samples_leaf,
                              min_child_weight,
                              &noise[j, f, 0] if use_noise else NULL, &scratch[j, f, 0],
                              lo, hi, mono, NULL)
        for j in range(k):
            f = pick_feature(&scratch[j, 0, 0], n_features)
            if f < 0:
                out[j, 0] = -1.0
                out[j, 1] = -1.0
                for i in range(2, 7):
                    out[j, i] = 0.0
            elif not (any_cat and is_cat[f]):
                hf = &hist[slots[j], offsets[f], 0]
                numeric_result(hf, n_channels, n_bins_nonmissing[f], &scratch[j, f, 0], f,
                               &out[j, 0])
            else:
                cat_result(&hist[slots[j], offsets[f], 0], n_channels, n_bins_nonmissing[f],
                           cp, &scratch[j, f, 0], f, &out[j, 0])


cdef void _level_totals(const double* h0, Py_ssize_t slot_stride, Py_ssize_t n_ch,
                        const idx_t* slots, Py_ssize_t n_slots, Py_ssize_t off, Py_ssize_t nb,
                        double* stats) noexcept nogil:
    """Per-bin sums over the level's leaves (what orders a shared categorical split):
    ``h0`` is the histogram array, ``slot_stride`` the doubles per slot."""
    cdef Py_ssize_t k, b, c
    cdef const double* hf
    for b in range((nb + 1) * n_ch):
        stats[b] = 0.0
    for k in range(n_slots):
        hf = h0 + slots[k] * slot_stride + off * n_ch
        for b in range((nb + 1) * n_ch):
            stats[b] += hf[b]


cdef struct Level:
    # The leaves of a symmetric level and the split settings, as find_split_level has them.
    const double* hist                # hist[slot, bin, channel]
    Py_ssize_t slot_stride            # doubles per slot
    Py_ssize_t n_ch                   # channels: 2, or 3 with a count
    int cc                            # the channel counted by min_samples_leaf
    bint has_count
    const idx_t* slots
    Py_ssize_t n_leaves
    double l2, min_samples_leaf, min_child_weight


cdef inline double _level_gain(const Level* lv, double GL, double HL, double CL, double G,
                               double H, double C, double parent,
                               idx_t* valid) noexcept nogil:
    """A leaf's gain from a level candidate whose left child has the sums ``(GL, HL, CL)``
    of the leaf's ``(G, H, C)`` (0 where the candidate is not valid); ``valid``: OUT 1 or 0."""
    if _valid(CL, C - CL, HL, H - HL, lv.l2, lv.min_samples_leaf, lv.min_child_weight):
        valid[0] = 1
        return GL * GL / (HL + lv.l2) + (G - GL) * (G - GL) / (H - HL + lv.l2) - parent
    valid[0] = 0
    return 0.0


cdef inline bint _bin_used(const double* bin, int cc) noexcept nogil:
    """Whether a histogram bin holds anything: a channel not +-0.0 (adding +-0.0 to a sum
    changes nothing that a gain depends on)."""
    cdef const uint64_t* bits = <const uint64_t*> bin
    return ((bits[CH_G] | bits[CH_H] | bits[cc]) << 1) != 0


cdef inline bint _sparse_leaf(const Level* lv, const double* hf, Py_ssize_t nb) noexcept nogil:
    """Whether under a quarter of a leaf's ``nb`` bins of a feature (from ``hf``) are used,
    judged by every 8th bin."""
    cdef Py_ssize_t b, n = 0
    for b in range(0, nb, 8):
        n = n + _bin_used(hf + b * lv.n_ch, lv.cc)
    return 32 * n < nb


cdef void _leaf_gains(const Level* lv, const double* hf, Py_ssize_t off, Py_ssize_t nb,
                      double* gain_sum, idx_t* n_valid, double* mag) noexcept nogil:
    """Add one leaf's gain at every candidate of a numeric feature (its histogram ``hf``,
    bins ``off .. off + nb - 1`` of the rows of ``gain_sum`` and ``n_valid``), where valid;
    add their magnitudes to ``mag`` unless it is NULL."""
    cdef Py_ssize_t b, n_ch = lv.n_ch
    cdef int d, cc = lv.cc
    cdef double gm, hm, cm, G, H, C, gl, hl, cl, GL, HL, CL, parent, gain
    cdef idx_t valid
    gm = hf[nb * n_ch + CH_G]
    hm = hf[nb * n_ch + CH_H]
    cm = hf[nb * n_ch + cc]
    # no missing rows: both directions have the gains of direction 0
    cdef bint no_miss = cm == 0.0 and (lv.has_count or gm == 0.0)
    G = gm
    H = hm
    C = cm
    for b in range(nb):
        G = G + hf[b * n_ch + CH_G]
        H = H + hf[b * n_ch + CH_H]
        C = C + hf[b * n_ch + cc]
    parent = G * G / (H + lv.l2) if H + lv.l2 > 0.0 else 0.0
    gl = 0.0
    hl = 0.0
    cl = 0.0
    for b in range(nb):
        gl = gl + hf[b * n_ch + CH_G]
        hl = hl + hf[b * n_ch + CH_H]
        cl = cl + hf[b * n_ch + cc]
        for d in range(1 if no_miss else 2):
            if d == 0:
                GL = gl + gm
                HL = hl + hm
                CL = cl + cm
            else:
                GL = gl
                HL = hl
                CL = cl
            gain = _level_gain(lv, GL, HL, CL, G, H, C, parent, &valid)
            if not valid:
                continue
            gain_sum[2 * (off + b) + d] += gain
            n_valid[2 * (off + b) + d] += 1
            if no_miss:
                gain_sum[2 * (off + b) + 1] += gain
                n_valid[2 * (off + b) + 1] += 1
            if mag != NULL:
                mag[0] += fabs(gain)


cdef double _leaf_gain_changes(const Level* lv, const double* hf, Py_ssize_t nb,
                               idx_t* used, double* changes,
                               idx_t* valid_changes) noexcept nogil:
    """:func:`_leaf_gains` of a leaf with few used bins, as changes: the leaf's gains at
    the candidates left of bin 0 are added at bin 0 of ``changes`` (2 nb entries, direction
    in the last axis), and at each used bin the change of its gain there, so that the
    prefix sums of ``changes`` over the bins are the gains; the same for the counts in
    ``valid_changes``. Returns the total magnitude of what it added. ``used``: work space
    (nb entries)."""
    cdef Py_ssize_t b, i, n = 0, n_ch = lv.n_ch
    cdef int cc = lv.cc
    cdef double gm, hm, cm, G, H, C, gl, hl, cl, parent, c0, c1, n0, n1, mag
    cdef idx_t v0, v1, w0, w1
    for b in range(nb):               # branch-free: the used bins, in order
        used[n] = <idx_t> b
        n = n + _bin_used(hf + b * n_ch, cc)
    gm = hf[nb * n_ch + CH_G]
    hm = hf[nb * n_ch + CH_H]
    cm = hf[nb * n_ch + cc]
    cdef bint no_miss = cm == 0.0 and (lv.has_count or gm == 0.0)
    G = gm                            # the sums of _leaf_gains: unused bins add nothing
    H = hm
    C = cm
    for i in range(n):
        b = used[i]
        G = G + hf[b * n_ch + CH_G]
        H = H + hf[b * n_ch + CH_H]
        C = C + hf[b * n_ch + cc]
    parent = G * G / (H + lv.l2) if H + lv.l2 > 0.0 else 0.0
    c0 = _level_gain(lv, gm, hm, cm, G, H, C, parent, &v0)
    c1 = c0 if no_miss else _level_gain(lv, 0.0, 0.0, 0.0, G, H, C, parent, &v1)
    if no_miss:
        v1 = v0
    changes[0] += c0
    changes[1] += c1
    valid_changes[0] += v0
    valid_changes[1] += v1
    mag = fabs(c0) + fabs(c1)
    gl = 0.0
    hl = 0.0
    cl = 0.0
    for i in range(n):
        b = used[i]
        gl = gl + hf[b * n_ch + CH_G]
        hl = hl + hf[b * n_ch + CH_H]
        cl = cl + hf[b * n_ch + cc]
        n0 = _level_gain(lv, gl + gm, hl + hm, cl + cm, G, H, C, parent, &w0)
        if no_miss:
            n1 = n0
            w1 = w0
        else:
            n1 = _level_gain(lv, gl, hl, cl, G, H, C, parent, &w1)
        changes[2 * b] += n0 - c0
        changes[2 * b + 1] += n1 - c1
        valid_changes[2 * b] += w0 - v0
        valid_changes[2 * b + 1] += w1 - v1
        mag += fabs(n0 - c0) + fabs(n1 - c1)
        c0 = n0
        c1 = n1
        v0 = w0
        v1 = w1
    return mag


cdef void _level_exact_sums(const Level* lv, Py_ssize_t off, Py_ssize_t nb, double* gain_sum,
                            idx_t* n_valid) noexcept nogil:
    """The rows of numeric feature ``(off, nb)`` summed again exactly (:func:`_leaf_gains`
    of every leaf, in order)."""
    cdef Py_ssize_t k, b
    for b in range(2 * off, 2 * (off + nb)):
        gain_sum[b] = 0.0
        n_valid[b] = 0
    for k in range(lv.n_leaves):
        _leaf_gains(lv, lv.hist + lv.slots[k] * lv.slot_stride + off * lv.n_ch, off, nb,
                    gain_sum, n_valid, NULL)


cdef double _level_feature_sums(const Level* lv, Py_ssize_t off, Py_ssize_t nb,
                                double* gain_sum, idx_t* n_valid) noexcept nogil:
    """The summed gains and valid-leaf counts of numeric feature ``(off, nb)`` over the
    level's leaves, into its rows of ``gain_sum`` and ``n_valid`` ((offsets[-1], 2),
    zeroed); returns the largest error of the sums (0: exact).

    Exact sums add each leaf's gain at every candidate, leaf by leaf in order
    (:func:`_leaf_gains`). Deep in a tree on few rows, most bins of a leaf are empty and its
    gain only changes at the used ones: a leaf with under a quarter of its bins used (of
    64 or more) adds only those changes (:func:`_leaf_gain_changes`, a fraction of the
    work), and the rows are then within the returned error of the exact sums:
    ``(2 n_leaves + nb + 3) DBL_EPSILON`` times the total magnitude of what was summed,
    twice the rounding bounds of both ways of summing (inf when not finite). The counts
    are exact.
    """
    cdef Py_ssize_t k, b, n_sparse = 0
    cdef const double* hf
    cdef double s0 = 0.0, s1 = 0.0, mag = 0.0
    cdef idx_t t0 = 0, t1 = 0
    cdef idx_t* used = NULL
    cdef double* changes = NULL
    cdef idx_t* valid_changes = NULL
    if nb >= 64:                      # (with fewer bins, changes cost more than they save)
        for k in range(lv.n_leaves):
            n_sparse = n_sparse + _sparse_leaf(lv, lv.hist + lv.slots[k] * lv.slot_stride
                                               + off * lv.n_ch, nb)
    if n_sparse:
        used = <idx_t*> malloc(nb * sizeof(idx_t))
        changes = <double*> calloc(2 * nb, sizeof(double))
        valid_changes = <idx_t*> calloc(2 * nb, sizeof(idx_t))
    if used == NULL or changes == NULL or valid_changes == NULL:
        free(used)        # no leaf uses few bins, or no memory for the changes: every bin
        free(changes)
        free(valid_changes)
        _level_exact_sums(lv, off, nb, gain_sum, n_valid)
        return 0.0
    for k in range(lv.n_leaves):
        hf = lv.hist + lv.slots[k] * lv.slot_stride + off * lv.n_ch
        if _sparse_leaf(lv, hf, nb):
            mag += _leaf_gain_changes(lv, hf, nb, used, changes, valid_changes)
        else:
            _leaf_gains(lv, hf, off, nb, gain_sum, n_valid, &mag)
    for b in range(nb):
        s0 = s0 + changes[2 * b]
        s1 = s1 + changes[2 * b + 1]
        t0 = t0 + valid_changes[2 * b]
        t1 = t1 + valid_changes[2 * b + 1]
        n_valid[2 * (off + b)] += t0
        n_valid[2 * (off + b) + 1] += t1
        # (a sum over no leaf is 0 exactly)
        gain_sum[2 * (off + b)] = gain_sum[2 * (off + b)] + s0 if n_valid[2 * (off + b)] else 0.0
        gain_sum[2 * (off + b) + 1] = (gain_sum[2 * (off + b) + 1] + s1
                                       if n_valid[2 * (off + b) + 1] else 0.0)
    free(used)
    free(changes)
    free(valid_changes)
    mag = 2.0 * (2.0 * lv.n_leaves + nb + 3.0) * DBL_EPSILON * mag
    return mag if mag < INFINITY else INFINITY


cdef double _row_top(const double* gain_sum, const idx_t* n_valid, Py_ssize_t off,
                     Py_ssize_t nb, int d, const double* noise, double err) noexcept nogil:
    """The highest score in direction ``d`` of a feature's approximate sums (within ``err``)
    among the candidates that may have a positive exact gain; -inf for none (and for
    ``err`` not finite: every candidate may be the best, the row is summed exactly)."""
    cdef Py_ssize_t b
    cdef double top = -INFINITY, score
    if not err < INFINITY:
        return INFINITY
    for b in range(nb):
        if n_valid[2 * (off + b) + d] != 0 and gain_sum[2 * (off + b) + d] > -err:
            score = gain_sum[2 * (off + b) + d] + (noise[b] if noise != NULL else 0.0)
            if score > top:
                top = score
    return top


cdef void _row_best(const double* gain_sum, const idx_t* n_valid, Py_ssize_t off,
                    Py_ssize_t n, Py_ssize_t f, int d, const double* noise, Py_ssize_t* best_f,
                    Py_ssize_t* best_b, int* best_d, double* best_score) noexcept nogil:
    """Update the best candidate ``(best_f, best_b, best_d, best_score)`` with the ``n``
    exact candidates of feature ``f`` in direction ``d``: a higher score wins, equal scores
    go to the first in (feature, bin, direction) order; only candidates valid in a leaf and
    of positive gain take part."""
    cdef Py_ssize_t b, bf = best_f[0], bb = best_b[0]
    cdef int bd = best_d[0]
    cdef double score, top = best_score[0]
    for b in range(n):
        if n_valid[2 * (off + b) + d] == 0 or not gain_sum[2 * (off + b) + d] > 0.0:
            continue
        score = gain_sum[2 * (off + b) + d] + (noise[b] if noise != NULL else 0.0)
        if bf < 0 or score > top or score == top and (
                f < bf or f == bf and (b < bb or b == bb and d < bd)):
            bf = f
            bb = b
            bd = d
            top = score
    best_f[0] = bf
    best_b[0] = bb
    best_d[0] = bd
    best_score[0] = top


def find_split_level(const double[:, :, ::1] hist, const idx_t[::1] slots,
                     const idx_t[::1] offsets, const idx_t[::1] n_bins_nonmissing,
                     const unsigned char[::1] is_cat, const double[::1] cat_params,
                     double l2, double min_samples_leaf, double min_child_weight,
                     const double[:, ::1] noise, double[:, ::1] gain_sum,
                     idx_t[:, ::1] n_valid, int n_threads,
                     const unsigned char[::1] allowed=None):
    """Best split shared by all leaves of a level (symmetric / oblivious trees).

    A candidate's gain is the sum of its gains over the leaves where it is valid; leaves
    where it is invalid contribute nothing (the grower does not split them: both children
    keep the parent's value). A candidate valid in no leaf cannot be chosen. A categorical
    feature's categories are ordered once for the level, by their sums over all its leaves
    (the set must be the same in every leaf); each prefix is then scored in every leaf.

    Parameters
    ----------
    hist : IN (n_slots, offsets[-1], 2 or 3) histograms.
    slots : IN int32: the histogram slots of the leaves that take part.
    offsets, n_bins_nonmissing, is_cat, cat_params, l2, min_samples_leaf,
    min_child_weight : as in :func:`find_split_nodes`.
    noise : IN (n_features, >= max bins) score noise (by bin; by set size - 1 for
        categorical features), or an array with 0 rows for none.
    gain_sum : OUT (offsets[-1], 2) summed gain per candidate, in the histogram's layout:
        feature ``f``'s candidates at rows ``offsets[f] + b`` (``b``: the bin, or the set
        size - 1), axis 1 nan_right (or the direction of a categorical candidate). The
        leaves' gains summed in order, except for the features whose leaves mostly use few
        of their bins (see ``_level_feature_sums``): there the sums are within rounding of
        them, and exact only where they could hold the best candidate (0 where no leaf is
        valid). The choice is always that of the exact sums.
    n_valid : OUT (offsets[-1], 2) number of leaves where the candidate is valid.
    n_threads : OpenMP threads (parallel over features).
    allowed : IN uint8 (n_features,), optional
        Which features the level may split on (column sampling); default all.

    Returns
    -------
    (feature, bin, nan_right, gain) : feature is -1 when no candidate has a positive gain;
        for a categorical feature, (bin, nan_right) = (set size, direction).
    """
    cdef Py_ssize_t n_features = n_bins_nonmissing.shape[0]
    cdef Py_ssize_t n_leaves = slots.shape[0]
    cdef Py_ssize_t n_ch = hist.shape[2]
    cdef bint use_noise = noise.shape[0] > 0
    cdef bint any_cat = is_cat.shape[0] > 0
    cdef Py_ssize_t f, b, nb, k, i, m, kmax, best_f, best_b, off
    cdef int d, best_d
    cdef double G, H, C, gl, hl, cl, lam, parent, best_score
    cdef int cc = CH_C if n_ch == 3 else CH_H
    cdef const double* hf
    cdef double* stats
    cdef idx_t* order
    cdef double* key
    cdef CatParams cp = _cat_params(cat_params)
    if not 2 <= n_ch <= 3:
        raise ValueError("hist must have 2 or 3 channels")
    _check_layout(hist.shape[1], offsets, n_bins_nonmissing, is_cat, n_features)
    cdef double* err
    cdef double* row_top
    cdef unsigned char* exact
    cdef Py_ssize_t top_row
    if gain_sum.shape[0] != hist.shape[1] or gain_sum.shape[1] != 2:
        raise ValueError("gain_sum must have shape (offsets[-1], 2)")
    if n_valid.shape[0] != hist.shape[1] or n_valid.shape[1] != 2:
        raise ValueError("n_valid must have shape (offsets[-1], 2)")
    if use_noise and noise.shape[0] != n_features:
        raise ValueError("noise must have shape (n_features, n_bins)")
    for f in range(n_features):
        if use_noise and n_bins_nonmissing[f] + 1 > noise.shape[1]:
            raise ValueError("noise needs a column per bin")
    for k in range(n_leaves):
        if not (0 <= slots[k] < hist.shape[0]):
            raise ValueError("slot out of range")
    cdef bint use_mask = allowed is not None
    if use_mask and allowed.shape[0] != n_features:
        raise ValueError("allowed must have one entry per feature")
    if n_leaves == 0:
        gain_sum[:, :] = 0.0
        n_valid[:, :] = 0
        return -1, -1, 0, 0.0
    cdef Level lv
    lv.hist = &hist[0, 0, 0] if hist.shape[1] else NULL
    lv.slot_stride = hist.shape[1] * n_ch
    lv.n_ch = n_ch
    lv.cc = cc
    lv.has_count = n_ch == 3
    lv.slots = &slots[0]
    lv.n_leaves = n_leaves
    lv.l2 = l2
    lv.min_samples_leaf = min_samples_leaf
    lv.min_child_weight = min_child_weight
    err = <double*> calloc(3 * n_features + 1, sizeof(double))
    exact = <unsigned char*> calloc(2 * n_features + 1, 1)
    if err == NULL or exact == NULL:
        free(err)
        free(exact)
        raise MemoryError("find_split_level: no memory for its work arrays")
    row_top = err + n_features
    with nogil:
        for f in prange(n_features, schedule="static", num_threads=n_threads):
            nb = n_bins_nonmissing[f]
            off = offsets[f]
            for b in range(off, off + nb + 1):
                for d in range(2):
                    gain_sum[b, d] = 0.0
                    n_valid[b, d] = 0
            if use_mask and not allowed[f]:
                continue
            if any_cat and is_cat[f]:
                stats = <double*> malloc((nb + 1) * (n_ch + 1) * sizeof(double))
                order = <idx_t*> malloc((nb + 1) * sizeof(idx_t))
                key = stats + (nb + 1) * n_ch
                _level_totals(&hist[0, 0, 0], hist.shape[1] * n_ch, n_ch, &slots[0],
                              n_leaves, off, nb, stats)
                m = _cat_order(stats, n_ch, nb, cp, order, key)
                kmax = m if m < cp.max_k else cp.max_k
                lam = l2 + cp.l2
                for k in range(n_leaves):
                    hf = &hist[slots[k], off, 0]
                    G = 0.0
                    H = 0.0
                    C = 0.0
                    for b in range(nb + 1):
                        G = G + hf[b * n_ch + CH_G]
                        H = H + hf[b * n_ch + CH_H]
                        C = C + hf[b * n_ch + cc]
                    parent = G * G / (H + lam) if H + lam > 0.0 else 0.0
                    for d in range(2):
                        gl = 0.0
                        hl = 0.0
                        cl = 0.0
                        for i in range(kmax):
                            b = _cat_pick(order, m, d, i)
                            gl = gl + hf[b * n_ch + CH_G]
                            hl = hl + hf[b * n_ch + CH_H]
                            cl = cl + hf[b * n_ch + cc]
                            if _valid(cl, C - cl, hl, H - hl, lam, min_samples_leaf,
                                      min_child_weight):
                                gain_sum[off + i, d] += (gl * gl / (hl + lam) + (G - gl)
                                                         * (G - gl) / (H - hl + lam) - parent)
                                n_valid[off + i, d] += 1
                free(order)
                free(stats)
                continue
            err[f] = _level_feature_sums(&lv, off, nb, &gain_sum[0, 0], &n_valid[0, 0])
            if err[f] > 0.0:
                for d in range(2):
                    row_top[2 * f + d] = _row_top(&gain_sum[0, 0], &n_valid[0, 0], off, nb,
                                                  d, &noise[f, 0] if use_noise else NULL,
                                                  err[f])
    # The rows of gain_sum with err[f] > 0 hold their sums to within err[f] (inf: not at
    # all). The best candidate is the one the exact sums (leaf by leaf, in order) give: the
    # inexact rows are summed exactly, the row whose candidates may score highest first,
    # until no other row can reach the best exact score.
    best_f = -1
    best_b = -1
    best_d = 0
    best_score = 0.0
    for f in range(n_features):       # the rows summed exactly already
        if err[f] > 0.0:
            continue
        for d in range(2):
            exact[2 * f + d] = 1
            _row_best(&gain_sum[0, 0], &n_valid[0, 0], offsets[f], n_bins_nonmissing[f] + 1,
                      f, d, &noise[f, 0] if use_noise else NULL, &best_f, &best_b, &best_d,
                      &best_score)
    while True:
        top_row = -1
        for i in range(2 * n_features):
            if not exact[i] and row_top[i] > -INFINITY and (
                    top_row < 0 or row_top[i] + err[i // 2] > row_top[top_row]
                    + err[top_row // 2]):
                top_row = i
        if top_row < 0 or best_f >= 0 and row_top[top_row] + err[top_row // 2] < best_score:
            break
        f = top_row // 2
        _level_exact_sums(&lv, offsets[f], n_bins_nonmissing[f], &gain_sum[0, 0],
                          &n_valid[0, 0])
        for d in range(2):
            exact[2 * f + d] = 1
            _row_best(&gain_sum[0, 0], &n_valid[0, 0], offsets[f], n_bins_nonmissing[f], f,
                      d, &noise[f, 0] if use_noise else NULL, &best_f, &best_b, &best_d,
                      &best_score)
    free(err)
    free(exact)
    if best_f < 0:
        return -1, -1, 0, 0.0
    off = offsets[best_f]
    if any_cat and is_cat[best_f]:
        return best_f, best_b + 1, best_d, gain_sum[off + best_b, best_d]
    return best_f, best_b, best_d, gain_sum[off + best_b, best_d]


def category_left_set(const double[:, :, ::1] hist, const idx_t[::1] slots, Py_ssize_t offset,
                      Py_ssize_t n_bins_nonmissing, const double[::1] cat_params,
                      int direction, Py_ssize_t size, idx_t[::1] left):
    """The left set of a categorical candidate ``(size, direction)``, as the search chose
    it from the histograms of ``slots`` (one node, or a level's leaves).

    ``left`` : OUT int32 (size,): the categories (bins; ``n_bins_nonmissing`` is the missing
    bin) sent left, in the order the search added them.
    """
    cdef Py_ssize_t nb = n_bins_nonmissing, n_ch = hist.shape[2], m, i
    cdef CatParams cp = _cat_params(cat_params)
    cdef idx_t order[MAX_BINS]
    cdef double key[MAX_BINS]
    cdef double stats[MAX_BINS * 3]
    if not (1 <= nb < MAX_BINS and 0 <= offset and offset + nb + 1 <= hist.shape[1]
            and left.shape[0] == size and direction in (0, 1) and n_ch in (2, 3)):
        raise ValueError("category set out of range")
    for i in range(slots.shape[0]):
        if not 0 <= slots[i] < hist.shape[0]:
            raise ValueError("slot out of range")
    if hist.shape[0] == 0 or slots.shape[0] == 0:
        raise ValueError("no histogram to order the categories by")
    _level_totals(&hist[0, 0, 0], hist.shape[1] * n_ch, n_ch, &slots[0], slots.shape[0],
                  offset, nb, stats)
    m = _cat_order(stats, n_ch, nb, cp, order, key)
    if not 1 <= size <= m:
        raise ValueError("set size out of range")
    for i in range(size):
        left[i] = <idx_t> _cat_pick(order, m, direction, i)


def split_stats(const double[:, :, ::1] hist, const idx_t[::1] slots, Py_ssize_t offset,
                int n_bins_nonmissing, const idx_t[::1] left_set, int split_bin,
                int nan_right, double[:, ::1] left, double[:, ::1] right):
    """(g, h, count) sums of both children of one split, in several nodes.

    Sums are accumulated in the same order as :func:`find_split_nodes` and
    :func:`find_split_level`, so validity decisions made from them agree exactly.

    Parameters
    ----------
    hist : IN (n_slots, offsets[-1], 2 or 3).
    slots : IN int32 (k,) the nodes' slots.
    offset : the feature's first histogram bin.
    n_bins_nonmissing : bins in use of the feature (its missing bin follows).
    left_set : IN int32, empty for a threshold split; for a categorical split, its left set
        in the order :func:`category_left_set` gives (the order the search summed them).
    split_bin, nan_right : a threshold split (ignored for a categorical split).
    left, right : OUT (k, 3); without a count channel, column 2 repeats the hessian sums.
    """
    cdef Py_ssize_t k, b, c, s, src, nb = n_bins_nonmissing
    cdef double total, gl
    cdef bint categorical = left_set.shape[0] > 0
    if left.shape[0] != slots.shape[0] or right.shape[0] != slots.shape[0]:
        raise ValueError("left and right need one row per slot")
    if not (0 <= offset and offset + nb + 1 <= hist.shape[1]
            and (categorical or 0 <= split_bin < nb)):
        raise ValueError("split out of range")
    for b in range(left_set.shape[0]):
        if not 0 <= left_set[b] <= nb:
            raise ValueError("category out of range")
    for k in range(slots.shape[0]):
        s = slots[k]
        if not 0 <= s < hist.shape[0]:
            raise ValueError("slot out of range")
        for c in range(3):
            src = c if c < hist.shape[2] else CH_H
            total = 0.0
            gl = 0.0
            if categorical:
                for b in range(nb + 1):
                    total = total + hist[s, offset + b, src]
                for b in range(left_set.shape[0]):
                    gl = gl + hist[s, offset + left_set[b], src]
                left[k, c] = gl
                right[k, c] = total - gl
            else:
                threshold_sums(&hist[s, offset, 0], hist.shape[2], nb, split_bin, nan_right,
                               src, &left[k, c], &right[k, c])
