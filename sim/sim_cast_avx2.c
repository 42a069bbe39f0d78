/* sim_cast_avx2.c - the exact vector caster (sim_cast_vec.h) for AVX2 +
 * FMA: 8 float / 4 double lanes with hardware gathers. Compiled for any
 * x86-64 (the functions carry their own target); the dispatcher
 * (sim_cast.c) calls it only on a CPU that has AVX2 and FMA. */
#define _GNU_SOURCE
#include "sim_geom_int.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(PA_SIM_NO_SIMD)
#include <immintrin.h>

#define VEC_TARGET __attribute__((target("avx2,fma")))
#define VEC_FN(name) avx2_##name
/* 32-bit loads at byte offsets (the field has 4 bytes of tail padding) */
#define VEC_GATHER_F(F, idx)                                                  \
  ((vec_i)_mm256_and_si256(                                                   \
      _mm256_i32gather_epi32((const int *)(const void *)(F), (__m256i)(idx),  \
                             1),                                              \
      _mm256_set1_epi32(0xff)))
#define VEC_GATHER_D(F, idx)                                                  \
  ((vec_d)_mm256_cvtepi32_pd(_mm_and_si128(                                   \
      _mm_i32gather_epi32((const int *)(const void *)(F),                     \
                          _mm256_cvttpd_epi32((__m256d)(idx)), 1),            \
      _mm_set1_epi32(0xff))))
#define VEC_FMA_F(a, b, c)                                                    \
  ((vec_f)_mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c)))
#define VEC_TRUNC_D(x)                                                        \
  ((vec_d)_mm256_round_pd((__m256d)(x), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC))
#define VEC_BITS_D(m) ((unsigned)_mm256_movemask_pd((__m256d)(m)))

#include "sim_cast_vec.h"

pa_sim_cast_fn pa_sim_int_caster_avx2(void) { return avx2_cast; }
#else
pa_sim_cast_fn pa_sim_int_caster_avx2(void) { return NULL; }
#endif
