/* Which caster paths this CPU can run, asked at run time. Its own file so
 * that the caster's standalone cross-build (tests/sim_cast_cross.sh) compiles
 * the same probe pa-sim uses. */
#include "pa_sim.h"

#include <stdbool.h>

bool pa_sim_simd_cpu_has(pa_sim_simd p) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  /* popcnt: the face caster counts lanes (every AVX2 CPU has it) */
  if (p == PA_SIM_SIMD_AVX512)
    return __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("popcnt");
  if (p == PA_SIM_SIMD_AVX2)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("popcnt");
#else
  if (p == PA_SIM_SIMD_AVX512 || p == PA_SIM_SIMD_AVX2)
    return false;
#endif
  return (unsigned)p < PA_SIM_SIMD_COUNT;
}
