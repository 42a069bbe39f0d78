/* sim_cast_portable.c - the exact vector caster (sim_cast_vec.h) for the
 * compiler's baseline ISA: GCC/Clang vector extensions lower to SSE2 on
 * x86-64 and NEON on AArch64 (16-byte vectors, one register; gathers are
 * lane loads). Any CPU runs it. */
#define _GNU_SOURCE
#include "sim_geom_int.h"

#include <string.h>

#if defined(__GNUC__) && !defined(PA_SIM_NO_SIMD)
#define VEC_TARGET
#define VEC_FN(name) port_##name
#define VEC_BYTES 16 /* one SSE / NEON register: 4 float / 2 double lanes */

#if defined(__SSE2__)
#include <emmintrin.h>
/* lane masks -> bits: one instruction on x86-64's baseline */
#define VEC_BITS_F(m) ((unsigned)_mm_movemask_ps((__m128)(m)))
#define VEC_BITS_D(m) ((unsigned)_mm_movemask_pd((__m128d)(m)))
#define FACE_BITS(m) ((unsigned)_mm_movemask_ps((__m128)(m)))
#endif
/* Every lane mask here has at most 4 bits (4 float / 2 double lanes): its
 * bit count from a constant, where the baseline ISA has no POPCNT (x86-64
 * would call libgcc's). */
#define VEC_POPCNT(b) ((int)(0x4332322132212110ull >> (4 * (b)) & 15))

/* Packed stores without a variable permute (SSE2 has none): the vector
 * through memory, then its lanes by a table of the kept ones. */
static const uint8_t port_pack4[16][4] = {
    {0, 0, 0, 0}, {0, 0, 0, 0}, {1, 0, 0, 0}, {0, 1, 0, 0},
    {2, 0, 0, 0}, {0, 2, 0, 0}, {1, 2, 0, 0}, {0, 1, 2, 0},
    {3, 0, 0, 0}, {0, 3, 0, 0}, {1, 3, 0, 0}, {0, 1, 3, 0},
    {2, 3, 0, 0}, {0, 2, 3, 0}, {1, 2, 3, 0}, {0, 1, 2, 3}};
typedef const uint8_t *port_perm;
#define VEC_PERM(b) (port_pack4[b])
#define PORT_CST(T, dst, v, p)                                                 \
  do {                                                                         \
    T tmp_[4], *d_ = (dst);                                                    \
    memcpy(tmp_, &(v), sizeof tmp_);                                           \
    for (int k_ = 0; k_ < 4; k_++)                                             \
      d_[k_] = tmp_[(p)[k_]];                                                  \
  } while (0)
#define VEC_CST_F(dst, v, p) PORT_CST(float, dst, v, p)
#define VEC_CST_I(dst, v, p) PORT_CST(int32_t, dst, v, p)

#include "sim_cast_vec.h"
#include "sim_cast_face.h"

pa_sim_cast_fn pa_sim_int_caster_portable(void) { return port_cast; }
pa_sim_face_fn pa_sim_int_facer_portable(void) { return port_faces; }
#else
pa_sim_cast_fn pa_sim_int_caster_portable(void) { return NULL; }
pa_sim_face_fn pa_sim_int_facer_portable(void) { return NULL; }
#endif
