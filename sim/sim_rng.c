/* sim_rng.c - the simulation's random numbers (noise, placement, odometry
 * error) on the shared splitmix64 generator. */
#define _GNU_SOURCE
#include "pa_rng.h"
#include "sim_int.h"

#include <math.h>

double pa_sim_rng_uniform(uint64_t *s) { return pa_splitmix64_unit(s); }

double pa_sim_rng_normal(uint64_t *s) {
  /* Box-Muller, one value per call so the state alone says where we are. */
  double u1 = pa_sim_rng_uniform(s), u2 = pa_sim_rng_uniform(s);
  if (u1 < 1e-300)
    u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

uint64_t pa_sim_int_seed(uint64_t seed, uint64_t a, uint64_t b) {
  uint64_t s = seed ^ (a * 0xD1B54A32D192ED03ull) ^ (b * 0x8CB92BA72F3D8DD7ull);
  pa_splitmix64(&s);
  return s;
}
