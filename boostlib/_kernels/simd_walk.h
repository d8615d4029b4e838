/* The walk of 64 rows down one depthwise tree, 8 rows to an AVX2 vector.
 *
 * The tree is the one _partition._walk_tables packs (children consecutive, a leaf its own
 * left child), with each node's split in one 32-bit word:
 *
 *     bits  0-7   threshold: a row goes right when its bin is above it ...
 *     bits  8-15  upper:     ... and not above this (the missing bin's side, as WalkNode)
 *     bits 16-31  feature:   its row in the block's feature-major copy
 *
 * and its left child in ``left``. A leaf's word (threshold 255) never sends a row right, so
 * a row that reached a leaf stays there for the remaining levels. Only numeric splits:
 * trees with categorical ones take the scalar walk.
 *
 * The 8 vectors go through each level before the next, so their chains of gathers overlap.
 * Each row gets out[j] += c * value[leaf], one product and one addition, exactly as the
 * scalar walk in _predictor.pyx (-mno-fma: no contraction), so the two sum bit-identically.
 *
 * Compiled only where the compiler targets AVX2 (the _predictor_avx2 variant); elsewhere
 * BOOSTLIB_SIMD_WALK is 0 and the stub is never called.
 */
#ifndef BOOSTLIB_SIMD_WALK_H
#define BOOSTLIB_SIMD_WALK_H

#include <stdint.h>

#define BOOSTLIB_SIMD_WALK_ROWS 64

#ifdef __AVX2__
#include <immintrin.h>

#define BOOSTLIB_SIMD_WALK 1

/* One level for the 8 rows of vector k: gather their nodes' words and left children, then
 * their bins. */
#define BOOSTLIB_WALK_STEP(k)                                                              \
    do {                                                                                   \
        __m256i w = _mm256_i32gather_epi32((const int*)word, node[k], 4);                  \
        __m256i l = _mm256_i32gather_epi32((const int*)left, node[k], 4);                  \
        __m256i at = _mm256_add_epi32(_mm256_sll_epi32(_mm256_srli_epi32(w, 16), shift),   \
                                      _mm256_add_epi32(row0, _mm256_set1_epi32(8 * (k)))); \
        __m256i b = _mm256_and_si256(_mm256_i32gather_epi32((const int*)X, at, 1), byte);  \
        __m256i thr = _mm256_and_si256(w, byte);                                           \
        __m256i upper = _mm256_and_si256(_mm256_srli_epi32(w, 8), byte);                   \
        __m256i right = _mm256_andnot_si256(_mm256_cmpgt_epi32(b, upper),                  \
                                            _mm256_cmpgt_epi32(b, thr));                   \
        node[k] = _mm256_sub_epi32(l, right);                                              \
    } while (0)

/* out[j] += c * value[leaf(row start + j)] for j < 64.
 *
 * X: the block's bins, feature f's at X[f << log_stride]; the 3 bytes after the last
 * feature's rows must be readable (a gather loads 4 bytes to use 1).
 * word, left, value: the tree's nodes (root first), depth: its depth. */
static inline void simd_walk64(const uint8_t* X, int log_stride, int start, int depth,
                               const uint32_t* word, const int32_t* left,
                               const double* value, double c, double* out) {
    const __m256i byte = _mm256_set1_epi32(255);
    const __m128i shift = _mm_cvtsi32_si128(log_stride);
    const __m256i row0 = _mm256_add_epi32(_mm256_set1_epi32(start),
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256d cv = _mm256_set1_pd(c);
    __m256i node[8];
    int k, level;
    for (k = 0; k < 8; k++)
        node[k] = _mm256_setzero_si256();
    for (level = 0; level < depth; level++) {
        BOOSTLIB_WALK_STEP(0); BOOSTLIB_WALK_STEP(1); BOOSTLIB_WALK_STEP(2);
        BOOSTLIB_WALK_STEP(3); BOOSTLIB_WALK_STEP(4); BOOSTLIB_WALK_STEP(5);
        BOOSTLIB_WALK_STEP(6); BOOSTLIB_WALK_STEP(7);
    }
    for (k = 0; k < 8; k++) {
        __m256d lo = _mm256_i32gather_pd(value, _mm256_castsi256_si128(node[k]), 8);
        __m256d hi = _mm256_i32gather_pd(value, _mm256_extracti128_si256(node[k], 1), 8);
        double* o = out + 8 * k;
        _mm256_storeu_pd(o, _mm256_add_pd(_mm256_loadu_pd(o), _mm256_mul_pd(cv, lo)));
        _mm256_storeu_pd(o + 4, _mm256_add_pd(_mm256_loadu_pd(o + 4), _mm256_mul_pd(cv, hi)));
    }
}

#undef BOOSTLIB_WALK_STEP

#else

#define BOOSTLIB_SIMD_WALK 0

static inline void simd_walk64(const uint8_t* X, int log_stride, int start, int depth,
                               const uint32_t* word, const int32_t* left,
                               const double* value, double c, double* out) {
    (void)X; (void)log_stride; (void)start; (void)depth; (void)word; (void)left;
    (void)value; (void)c; (void)out;
}

#endif
#endif
