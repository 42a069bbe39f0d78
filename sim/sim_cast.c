/* sim_cast.c - the caster dispatch: which vector path casts a fan of rays
 * (by what the CPU has, or forced), and the fast world-frame casts built on
 * it. Every path gives the plain traversal's ranges bit for bit. */
#define _GNU_SOURCE
#include "sim_geom_int.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

static pa_sim_cast_fn casters[PA_SIM_SIMD_COUNT]; /* NULL: not here */
static pa_sim_face_fn facers[PA_SIM_SIMD_COUNT];  /* the same paths' */
static _Atomic bool faces_on = true;
/* the face caster's working memory, one a thread (with the thread's counts
 * for pa_sim_faces_counts) */
static _Thread_local pa_sim_face_scratch face_scratch;
static pa_sim_simd best = PA_SIM_SIMD_SCALAR;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static _Atomic int process_path = PA_SIM_SIMD_AUTO;

/* What this build and CPU have; the fastest is auto's choice. */
static void probe(void) {
  if (pa_sim_simd_cpu_has(PA_SIM_SIMD_AVX512)) {
    casters[PA_SIM_SIMD_AVX512] = pa_sim_int_caster_avx512();
    facers[PA_SIM_SIMD_AVX512] = pa_sim_int_facer_avx512();
  }
  if (pa_sim_simd_cpu_has(PA_SIM_SIMD_AVX2)) {
    casters[PA_SIM_SIMD_AVX2] = pa_sim_int_caster_avx2();
    facers[PA_SIM_SIMD_AVX2] = pa_sim_int_facer_avx2();
  }
  casters[PA_SIM_SIMD_PORTABLE] = pa_sim_int_caster_portable();
  facers[PA_SIM_SIMD_PORTABLE] = pa_sim_int_facer_portable();
  /* then the portable path (4-lane vectors: on SSE2 about twice the scalar
   * fast caster, docs/benchmarks.md), then scalar */
  for (int p = PA_SIM_SIMD_AVX512; p <= PA_SIM_SIMD_PORTABLE; p++)
    if (casters[p]) {
      best = (pa_sim_simd)p;
      break;
    }
}

bool pa_sim_simd_has(pa_sim_simd p) {
  pthread_once(&probe_once, probe);
  if (p == PA_SIM_SIMD_AUTO || p == PA_SIM_SIMD_SCALAR)
    return true;
  return (unsigned)p < PA_SIM_SIMD_COUNT && casters[p];
}

int pa_sim_simd_set(pa_sim_simd p) {
  if (!pa_sim_simd_has(p))
    return -1;
  atomic_store_explicit(&process_path, (int)p, memory_order_relaxed);
  return 0;
}

void pa_sim_faces_set(bool on) {
  atomic_store_explicit(&faces_on, on, memory_order_relaxed);
}

void pa_sim_faces_counts(uint64_t *fans, uint64_t *closes) {
  *fans = face_scratch.fans;
  *closes = face_scratch.closes;
}

bool pa_sim_faces_on(void) {
  return atomic_load_explicit(&faces_on, memory_order_relaxed);
}

pa_sim_simd pa_sim_simd_path(const pa_sim_model *m) {
  pthread_once(&probe_once, probe);
  pa_sim_simd p = m ? m->def.simd : PA_SIM_SIMD_AUTO;
  if (p == PA_SIM_SIMD_AUTO || !pa_sim_simd_has(p))
    p = (pa_sim_simd)atomic_load_explicit(&process_path, memory_order_relaxed);
  return p == PA_SIM_SIMD_AUTO ? best : p;
}

void pa_sim_int_cast_many(const pa_sim_model *m, double ox, double oy,
                          const double *dxs, const double *dys, uint32_t n,
                          double maxc, double *out) {
  const double pox = ox + 1.0, poy = oy + 1.0; /* padded, as cast_one */
  const double W = m->march_w, H = (double)m->grid.height + 2;
  const pa_sim_simd path = pa_sim_simd_path(m);
  pa_sim_cast_fn fn = n >= 4 ? casters[path] : NULL;
  /* fans of at least this many rays pay the face caster's per-scan work */
  pa_sim_face_fn face = n >= PA_SIM_FACE_MIN && m->faces && pa_sim_faces_on()
                            ? facers[path]
                            : NULL;
  /* indices in 32 bits; the origin's cell free */
  if (fn && W * H < 2147483000.0 && pox >= 0 && poy >= 0 && pox < W &&
      poy < H && m->march[(size_t)poy * m->march_w + (size_t)pox] != 0) {
    for (uint32_t i0 = 0; i0 < n; i0 += CAST_CHUNK) {
      uint32_t k = n - i0 < CAST_CHUNK ? n - i0 : CAST_CHUNK;
      if (!face || k < PA_SIM_FACE_MIN ||
          !face(m, pox, poy, dxs + i0, dys + i0, k, maxc, out + i0,
                &face_scratch))
        fn(m, pox, poy, dxs + i0, dys + i0, k, maxc, out + i0);
    }
    return;
  }
  for (uint32_t i = 0; i < n; i++)
    out[i] = pa_sim_int_cast_one(m, ox, oy, dxs[i], dys[i], maxc);
}

double pa_sim_cast_fast(const pa_sim_model *m, double x, double y, double dx,
                        double dy, double range_max) {
  grid_ray g = ray_in_grid(m, x, y, dx, dy, range_max);
  double t;
  pa_sim_int_cast_many(m, g.gx, g.gy, &g.gdx, &g.gdy, 1, g.maxc, &t);
  return cells_to_range(t, g.maxc, range_max, m->grid.resolution);
}

void pa_sim_cast_fan(const pa_sim_model *m, double x, double y,
                     const double *dx, const double *dy, uint32_t n,
                     double range_max, double *out) {
  double gx, gy;
  to_grid(m, x, y, &gx, &gy);
  double res = m->grid.resolution, maxc = range_max / res;
  enum { CHUNK = CAST_CHUNK };
  double gdx[CHUNK], gdy[CHUNK], t[CHUNK];
  for (uint32_t i0 = 0; i0 < n; i0 += CHUNK) {
    uint32_t k = n - i0 < CHUNK ? n - i0 : CHUNK;
    for (uint32_t q = 0; q < k; q++) { /* as pa_sim_cast_fast */
      gdx[q] = m->cos_yaw * dx[i0 + q] + m->sin_yaw * dy[i0 + q];
      gdy[q] = -m->sin_yaw * dx[i0 + q] + m->cos_yaw * dy[i0 + q];
    }
    pa_sim_int_cast_many(m, gx, gy, gdx, gdy, k, maxc, t);
    for (uint32_t q = 0; q < k; q++)
      out[i0 + q] = cells_to_range(t[q], maxc, range_max, res);
  }
}
