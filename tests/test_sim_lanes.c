/* test_sim_lanes.c - the vector casters' lanes past a list's end (issue
 * 32: UBSan saw avx512_floor_i overflow under load): a stack left full of
 * huge floats changes no result and makes no lane overflow. Worth most in
 * the ASan+UBSan build (tests/run.sh's sanitize mode). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_sim_util.h"

static void grid_model(pa_sim_model *m, const pa_grid *g) {
  pa_world w;
  memset(&w, 0, sizeof w);
  w.unknown_blocks = true;
  pa_sim_def d = pa_sim_def_default();
  d.seed = 1;
  char err[256] = "";
  if (pa_sim_model_init(m, &d, &w, g, err, sizeof err) != 0)
    fail_msg("model: %s", err);
}

/* A point inside free cell (fx, fy) of g, jittered by up to half a cell:
 * false when the cell is occupied. */
static bool free_point(const pa_grid *g, double fx, double fy, uint64_t *rng,
                       double *x, double *y) {
  int i = (int)(fx * g->width), j = (int)(fy * g->height);
  if (g->cells[(size_t)j * g->width + (size_t)i] != 0)
    return false;
  pa_grid_cell_center(g, i, j, x, y);
  *x += g->resolution * (pa_sim_rng_uniform(rng) - 0.5);
  *y += g->resolution * (pa_sim_rng_uniform(rng) - 0.5);
  return true;
}

/* Fills the stack below the caller with -1e30f: what a caster that read
 * lanes past its lists' ends would see of an earlier call's frames. */
__attribute__((noinline)) static void poison_stack(void) {
  volatile float junk[1 << 17];
  for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++)
    junk[i] = -1e30f;
}

/* The vector casters' lanes past a list's end hold nothing of the fan: a
 * stack left full of huge floats by an earlier call changes no result and
 * makes no lane overflow (UBSan: signed overflow in floor_i, issue 32). */
static void test_stale_lanes(void **st) {
  (void)st;
  static const pa_sim_simd paths[] = {PA_SIM_SIMD_AVX512, PA_SIM_SIMD_AVX2,
                                      PA_SIM_SIMD_PORTABLE};
  pa_grid g;
  char err[256];
  assert_int_equal(pa_map_load_default(&g, err, sizeof err), 0);
  pa_sim_model m;
  grid_model(&m, &g);
  int ran = 0;
  for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
    if (!pa_sim_simd_has(paths[p]))
      continue;
    assert_int_equal(pa_sim_simd_set(paths[p]), 0);
    for (int faces = 0; faces <= 1; faces++) {
      pa_sim_faces_set(faces);
      uint64_t rng = 7;
      for (int k = 0; k < 200;) {
        double x, y;
        if (!free_point(&g, pa_sim_rng_uniform(&rng), pa_sim_rng_uniform(&rng),
                        &rng, &x, &y))
          continue;
        k++;
        /* not a whole number of vectors: the last one has room past n */
        uint32_t n = 5 + 2 * (uint32_t)(pa_sim_rng_uniform(&rng) * 300);
        double dx[720], dy[720];
        double th = 2 * M_PI * pa_sim_rng_uniform(&rng);
        for (uint32_t b = 0; b < n; b++) {
          dx[b] = cos(th + b * 2 * M_PI / n);
          dy[b] = sin(th + b * 2 * M_PI / n);
        }
        double f[720];
        poison_stack();
        pa_sim_cast_fan(&m, x, y, dx, dy, n, 30, f);
        for (uint32_t q = 0; q < n; q++) {
          double pl = pa_sim_cast_plain(&m, x, y, dx[q], dy[q], 30);
          if (f[q] != pl)
            fail_msg("%s caster over a stack of huge floats: ray from "
                     "(%.17g, %.17g) dir (%.17g, %.17g): %.17g, plain %.17g",
                     pa_sim_simd_name(paths[p]), x, y, dx[q], dy[q], f[q], pl);
        }
        ran++;
      }
    }
  }
  pa_sim_faces_set(true);
  pa_sim_simd_set(PA_SIM_SIMD_AUTO);
  pa_sim_model_free(&m);
  pa_grid_free(&g);
  if (!ran) {
    printf("SKIPPED: no vector caster on this CPU or build\n");
    skip();
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stale_lanes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
