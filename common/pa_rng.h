/* pa_rng.h - splitmix64: one 64-bit word of state (resumable), small,
 * seedable, the same on every platform. The one generator of the project
 * (maps/pa_mapgen.c, sim/sim_rng.c). */
#ifndef PA_RNG_H
#define PA_RNG_H

#include <stdint.h>

/* The next 64 random bits; advances *s. */
static inline uint64_t pa_splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in [0, 1) from the top 53 bits. */
static inline double pa_splitmix64_unit(uint64_t *s) {
  return (double)(pa_splitmix64(s) >> 11) * (1.0 / 9007199254740992.0);
}

#endif
