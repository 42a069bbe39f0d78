/* pa_obs.c - a step's observation block's ranges (pa_shm.h, 2a'): a scan
 * as sectors (pa_obs_sectors), what pa-sim writes into the observation
 * block and pa-netgw into step_batch's replies for a policy that looks at
 * fewer directions than the laser casts, and a row's ranges either way. */
#include "pa_shm.h"

#include <math.h>
#include <string.h>

#if defined(__SSE__)
#include <xmmintrin.h>
#elif defined(__ARM_NEON)
#include <arm_neon.h>
#endif

/* fmin over p[0 .. k): a NaN loses to a number (NaN when all are). */
static float fmin_span(const float *p, uint32_t k) {
  float m = __builtin_nanf("");
  for (uint32_t i = 0; i < k; i++)
    m = p[i] < m || m != m ? p[i] : m;
  return m;
}

/* Four floats a lane at a time, the baseline of each CPU (SSE on x86-64,
 * NEON on AArch64; else GCC's vector types): no dispatch needed. min4 is
 * exact where neither lane is a NaN (minps and vminq agree then). */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

static inline v4f load4(const float *p) {
  v4f v;
  memcpy(&v, p, sizeof v);
  return v;
}

static inline v4f min4(v4f a, v4f b) {
#if defined(__SSE__)
  return (v4f)_mm_min_ps((__m128)a, (__m128)b);
#elif defined(__ARM_NEON)
  return (v4f)vminq_f32((float32x4_t)a, (float32x4_t)b);
#else
  v4i lt = a < b;
  return (v4f)((lt & (v4i)a) | (~lt & (v4i)b));
#endif
}

/* Sectors of k >= 4 consecutive beams: each one's least from loads of four
 * at its start, every four on, and its last four (overlapping: a minimum
 * does not mind), a NaN anywhere noted on the way. Returns 0 when the
 * scan holds one (the caller then takes the rule beam by beam). */
static int sectors4(float *out, uint32_t beams, const float *src, uint32_t k) {
  v4i nan = {0, 0, 0, 0};
  for (uint32_t j = 0; j < beams; j++) {
    const float *p = src + (size_t)j * k;
    v4f m = load4(p + k - 4);
    nan |= m != m;
    for (uint32_t i = 0; i + 4 < k; i += 4) {
      v4f v = load4(p + i);
      nan |= v != v;
      m = min4(m, v);
    }
    float a = m[0] < m[1] ? m[0] : m[1], b = m[2] < m[3] ? m[2] : m[3];
    out[j] = a < b ? a : b;
  }
  return !(nan[0] | nan[1] | nan[2] | nan[3]);
}

void pa_obs_sectors(float *out, uint32_t beams, const float *src, uint32_t n) {
  if (!beams)
    return;
  if (n >= 4 * beams && n % beams == 0 && sectors4(out, beams, src, n / beams))
    return;
  for (uint32_t j = 0; j < beams; j++) {
    uint32_t lo = (uint32_t)((uint64_t)j * n / beams);
    uint32_t hi = (uint32_t)((uint64_t)(j + 1) * n / beams);
    out[j] = fmin_span(src + lo, hi - lo);
  }
}

void pa_obs_ranges(float *out, uint32_t w, double *row, const float *src,
                   uint32_t n, uint32_t sectors) {
  uint32_t c = 0;
  if (src && sectors && w) {
    row[PA_OBS_ANGLE_INC] = pa_obs_sector_inc(row[PA_OBS_ANGLE_INC], n, w);
    pa_obs_sectors(out, w, src, n);
    c = w;
  } else if (src) {
    c = n < w ? n : w;
    memcpy(out, src, (size_t)c * sizeof *out);
  }
  for (uint32_t b = c; b < w; b++)
    out[b] = NAN;
}

void pa_obs_prefetch(const float *src, uint32_t n) {
  const char *p = (const char *)src;
  for (size_t o = 0; o < (size_t)n * sizeof *src; o += 64)
    __builtin_prefetch(p + o);
}
