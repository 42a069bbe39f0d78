/* sim_cast_portable.c - the exact vector caster (sim_cast_vec.h) for the
 * compiler's baseline ISA: GCC/Clang vector extensions lower to SSE2 on
 * x86-64 and NEON on AArch64 (16-byte vectors, one register; gathers are
 * lane loads). Any CPU runs it. */
#define _GNU_SOURCE
#include "sim_geom_int.h"

#if defined(__GNUC__) && !defined(PA_SIM_NO_SIMD)
#define VEC_TARGET
#define VEC_FN(name) port_##name
#define VEC_BYTES 16 /* one SSE / NEON register: 4 float / 2 double lanes */

#include "sim_cast_vec.h"

pa_sim_cast_fn pa_sim_int_caster_portable(void) { return port_cast; }
#else
pa_sim_cast_fn pa_sim_int_caster_portable(void) { return NULL; }
#endif
