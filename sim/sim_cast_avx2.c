/* sim_cast_avx2.c - the exact vector caster (sim_cast_vec.h) for AVX2 +
 * FMA: 8 float / 4 double lanes with hardware gathers. Compiled for any
 * x86-64 (the functions carry their own target); the dispatcher
 * (sim_cast.c) calls it only on a CPU that has AVX2 and FMA. */
#define _GNU_SOURCE
#include "sim_geom_int.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(PA_SIM_NO_SIMD)
#include <immintrin.h>

#define VEC_TARGET __attribute__((target("avx2,fma,popcnt")))
#define VEC_FN(name) avx2_##name
/* 32-bit loads at byte offsets (the field has 4 bytes of tail padding) */
#define VEC_GATHER_F(F, idx)                                                   \
  ((vec_i)_mm256_and_si256(                                                    \
      _mm256_i32gather_epi32((const int *)(const void *)(F), (__m256i)(idx),   \
                             1),                                               \
      _mm256_set1_epi32(0xff)))
#define VEC_GATHER_D(F, idx)                                                   \
  ((vec_d)_mm256_cvtepi32_pd(_mm_and_si128(                                    \
      _mm_i32gather_epi32((const int *)(const void *)(F),                      \
                          _mm256_cvttpd_epi32((__m256d)(idx)), 1),             \
      _mm_set1_epi32(0xff))))
#define VEC_FMA_F(a, b, c)                                                     \
  ((vec_f)_mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c)))
#define VEC_TRUNC_D(x)                                                         \
  ((vec_d)_mm256_round_pd((__m256d)(x), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC))
#define VEC_BITS_D(m) ((unsigned)_mm256_movemask_pd((__m256d)(m)))

#define VEC_BITS_F(m) ((unsigned)_mm256_movemask_ps((__m256)(m)))

/* Expand loads (AVX-512 has them): a masked load of the first popcount(fr)
 * elements, then a permutation from a table by fr (64-bit lanes, as pairs
 * of 32). Packing (AVX-512's compress): a permutation by the lane mask. */
static uint8_t avx2_perm4[16][8];
static int32_t avx2_pack8[256][8]; /* lane l takes lane [b][l] */

static void avx2_tables(void) {
  for (unsigned m = 0; m < 16; m++)
    for (int l = 0, k = 0; l < 4; l++) {
      int e = m >> l & 1 ? k++ : 0;
      avx2_perm4[m][2 * l] = (uint8_t)(2 * e);
      avx2_perm4[m][2 * l + 1] = (uint8_t)(2 * e + 1);
    }
  for (unsigned m = 0; m < 256; m++) {
    int k = 0;
    for (int l = 0; l < 8; l++)
      if (m >> l & 1)
        avx2_pack8[m][k++] = l;
    while (k < 8)
      avx2_pack8[m][k++] = 0;
  }
}

VEC_TARGET static inline __m256d avx2_expand4(unsigned fr, const double *src) {
  __m256i first = _mm256_cmpgt_epi64(_mm256_set1_epi64x(__builtin_popcount(fr)),
                                     _mm256_setr_epi64x(0, 1, 2, 3));
  __m256d v = _mm256_maskload_pd(src, first);
  __m256i perm = _mm256_cvtepu8_epi32(
      _mm_loadl_epi64((const __m128i *)(const void *)avx2_perm4[fr]));
  return _mm256_castps_pd(_mm256_permutevar8x32_ps(_mm256_castpd_ps(v), perm));
}

#define VEC_EXPAND_D(fr, src) ((vec_d)avx2_expand4(fr, src))
typedef __m256i avx2_perm;
#define VEC_PERM(b)                                                            \
  _mm256_loadu_si256((const __m256i *)(const void *)avx2_pack8[b])
#define VEC_CST_F(dst, v, p)                                                   \
  _mm256_storeu_ps(dst, _mm256_permutevar8x32_ps((__m256)(v), p))
#define VEC_CST_I(dst, v, p)                                                   \
  _mm256_storeu_si256((__m256i *)(void *)(dst),                                \
                      _mm256_permutevar8x32_epi32((__m256i)(v), p))

#include "sim_cast_vec.h"
/* the face caster's table lookups: 8 lanes by AVX2's gathers */
#define FACE_GATHER_I(p, idx)                                                  \
  ((VEC_FN(v8i))_mm256_i32gather_epi32((const int *)(const void *)(p),         \
                                       (__m256i)(idx), 4))
#define FACE_GATHER_F(p, idx)                                                  \
  ((VEC_FN(v8f))_mm256_i32gather_ps(p, (__m256i)(idx), 4))
/* the lanes in bits b of v, packed at dst (8 slots written) */
#define FACE_PACK(dst, v, b)                                                   \
  _mm256_storeu_si256(                                                         \
      (__m256i *)(void *)(dst),                                                \
      _mm256_permutevar8x32_epi32(                                             \
          (__m256i)(v),                                                        \
          _mm256_loadu_si256((const __m256i *)(const void *)avx2_pack8[b])))
#define FACE_BITS(m) ((unsigned)_mm256_movemask_ps((__m256)(m)))
#include "sim_cast_face.h"

/* Called once (the dispatcher's probe), before any cast. */
pa_sim_cast_fn pa_sim_int_caster_avx2(void) {
  avx2_tables();
  return avx2_cast;
}
pa_sim_face_fn pa_sim_int_facer_avx2(void) { return avx2_faces; }
#else
pa_sim_cast_fn pa_sim_int_caster_avx2(void) { return NULL; }
pa_sim_face_fn pa_sim_int_facer_avx2(void) { return NULL; }
#endif
