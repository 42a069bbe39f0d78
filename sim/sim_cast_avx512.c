/* sim_cast_avx512.c - the exact vector caster (sim_cast_vec.h) with
 * AVX-512: 16 float / 8 double lanes, hardware gathers, compress for the
 * packed lists and expand loads. Compiled for any x86-64 (the functions
 * carry their own target); the dispatcher (sim_cast.c) calls it only on a
 * CPU that has AVX-512 (F, DQ, VL). */
#define _GNU_SOURCE
#include "sim_geom_int.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(PA_SIM_NO_SIMD)
#include <immintrin.h>

#define VEC_TARGET                                                             \
  __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma,popcnt")))
#define VEC_FN(name) avx512_##name
#define VEC_BYTES 64
/* 32-bit loads at byte offsets (the field has 4 bytes of tail padding) */
#define VEC_GATHER_F(F, idx)                                                   \
  ((vec_i)_mm512_and_si512(                                                    \
      _mm512_i32gather_epi32((__m512i)(idx), (const void *)(F), 1),            \
      _mm512_set1_epi32(0xff)))
#define VEC_GATHER_D(F, idx)                                                   \
  ((vec_d)_mm512_cvtepi32_pd(_mm256_and_si256(                                 \
      _mm256_i32gather_epi32((const int *)(const void *)(F),                   \
                             _mm512_cvttpd_epi32((__m512d)(idx)), 1),          \
      _mm256_set1_epi32(0xff))))
#define VEC_FMA_F(a, b, c)                                                     \
  ((vec_f)_mm512_fmadd_ps((__m512)(a), (__m512)(b), (__m512)(c)))
#define VEC_TRUNC_D(x)                                                         \
  ((vec_d)_mm512_roundscale_pd((__m512d)(x),                                   \
                               _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC))
#define VEC_BITS_F(m) ((unsigned)_mm512_movepi32_mask((__m512i)(m)))
#define VEC_BITS_D(m) ((unsigned)_mm512_movepi64_mask((__m512i)(m)))
#define VEC_EXPAND_D(fr, src)                                                  \
  ((vec_d)_mm512_maskz_expandloadu_pd((__mmask8)(fr), src))
/* packed stores: compress in a register, then a plain store (a compress
 * straight to memory is slow on some CPUs) */
typedef __mmask16 avx512_perm;
#define VEC_PERM(b) ((__mmask16)(b))
#define VEC_CST_F(dst, v, p)                                                   \
  _mm512_storeu_ps(dst, _mm512_maskz_compress_ps(p, (__m512)(v)))
#define VEC_CST_I(dst, v, p)                                                   \
  _mm512_storeu_si512((void *)(dst),                                           \
                      _mm512_maskz_compress_epi32(p, (__m512i)(v)))

#include "sim_cast_vec.h"
/* the face caster's (16 lanes): table lookups by gathers, lanes packed by
 * a compress in a register */
#define FACE_GATHER_I(p, idx)                                                  \
  ((VEC_FN(v8i))_mm512_i32gather_epi32((__m512i)(idx), (const void *)(p), 4))
#define FACE_GATHER_F(p, idx)                                                  \
  ((VEC_FN(v8f))_mm512_i32gather_ps((__m512i)(idx), (const void *)(p), 4))
#define FACE_PACK(dst, v, b)                                                   \
  _mm512_storeu_si512((void *)(dst), _mm512_maskz_compress_epi32(              \
                                         (__mmask16)(b), (__m512i)(v)))
#define FACE_BITS(m) ((unsigned)_mm512_movepi32_mask((__m512i)(m)))
#include "sim_cast_face.h"

pa_sim_cast_fn pa_sim_int_caster_avx512(void) { return avx512_cast; }
pa_sim_face_fn pa_sim_int_facer_avx512(void) { return avx512_faces; }
#else
pa_sim_cast_fn pa_sim_int_caster_avx512(void) { return NULL; }
pa_sim_face_fn pa_sim_int_facer_avx512(void) { return NULL; }
#endif
