/*
 * test_map_dist.c - the exact distance field against brute force on random
 * grids (1 x 1, 1 x N, N x 1, odd sizes, empty and full), unknown handling.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pa_map.h"

static char errbuf[512];

/* Nearest blocked cell centre, the ring just outside the grid included. */
static void brute(const pa_grid *g, bool unknown_blocks, float *out) {
  int w = (int)g->width, h = (int)g->height;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int64_t best = INT64_MAX;
      for (int by = -1; by <= h; by++)
        for (int bx = -1; bx <= w; bx++) {
          bool inside = bx >= 0 && by >= 0 && bx < w && by < h;
          if (inside && !pa_grid_blocked(g, bx, by, unknown_blocks)) continue;
          int64_t d2 = (int64_t)(bx - x) * (bx - x) + (int64_t)(by - y) * (by - y);
          if (d2 < best) best = d2;
        }
      out[y * w + x] = (float)(sqrt((double)best) * g->resolution);
    }
}

static void check(uint32_t w, uint32_t h, double density, unsigned seed,
                  int8_t occ_min) {
  pa_grid g = {0};
  g.width = w;
  g.height = h;
  g.resolution = 0.05;
  g.occupied_min = occ_min;
  g.cells = malloc((size_t)w * h);
  assert_non_null(g.cells);
  srand(seed);
  for (size_t i = 0; i < (size_t)w * h; i++) {
    double r = rand() / (double)RAND_MAX;
    g.cells[i] = r < density ? 100 : r < density * 1.3 ? -1
                 : r < density * 1.6 ? (int8_t)(rand() % 100) : 0;
  }
  float *want = malloc(sizeof(float) * w * h);
  assert_non_null(want);
  for (int ub = 0; ub <= 1; ub++) {
    pa_dist d;
    assert_int_equal(pa_dist_build(&g, ub, &d, errbuf, sizeof errbuf), 0);
    assert_int_equal(d.width, w);
    assert_int_equal(d.height, h);
    assert_true(d.resolution == g.resolution);
    brute(&g, ub, want);
    for (size_t i = 0; i < (size_t)w * h; i++) {
      if (d.d[i] != want[i])
        fail_msg("%ux%u density %.2f seed %u ub %d: cell %zu (%zu,%zu) got %.9g "
                 "want %.9g",
                 w, h, density, seed, ub, i, i % w, i / w, d.d[i], want[i]);
      if (pa_grid_blocked(&g, (int)(i % w), (int)(i / w), ub))
        assert_true(d.d[i] == 0.0f);
    }
    pa_dist_free(&d);
  }
  free(want);
  free(g.cells);
}

static void test_random_grids(void **state) {
  (void)state;
  const uint32_t sizes[][2] = {{1, 1},  {1, 17}, {23, 1}, {2, 2},  {7, 5},
                               {5, 7},  {31, 2}, {64, 48}, {37, 91}, {60, 60}};
  const double dens[] = {0.0, 0.01, 0.1, 0.4, 1.0};
  unsigned seed = 1;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (size_t k = 0; k < sizeof dens / sizeof dens[0]; k++) {
      check(sizes[s][0], sizes[s][1], dens[k], seed++, 100);
      check(sizes[s][0], sizes[s][1], dens[k], seed++, 40);
    }
}

/* Empty grid: the distance is to the border ring, e.g. 3 x 1 -> 1, 2, 1. */
static void test_known_values(void **state) {
  (void)state;
  int8_t cells[5] = {0, 0, 0, 0, 0};
  pa_grid g = {.width = 5, .height = 1, .resolution = 0.5, .cells = cells,
               .occupied_min = 100};
  pa_dist d;
  assert_int_equal(pa_dist_build(&g, true, &d, errbuf, sizeof errbuf), 0);
  /* Rows -1 and 1 are the ring: every cell is 1 cell away. */
  for (int i = 0; i < 5; i++) assert_true(d.d[i] == 0.5f);
  pa_dist_free(&d);
  int8_t big[9 * 9];
  memset(big, 0, sizeof big);
  pa_grid g2 = {.width = 9, .height = 9, .resolution = 1.0, .cells = big,
                .occupied_min = 100};
  assert_int_equal(pa_dist_build(&g2, true, &d, errbuf, sizeof errbuf), 0);
  assert_true(d.d[4 * 9 + 4] == 5.0f); /* centre: 5 cells to the ring */
  assert_true(d.d[0] == 1.0f);
  pa_dist_free(&d);
  big[4 * 9 + 4] = 100;
  big[0] = -1;
  assert_int_equal(pa_dist_build(&g2, false, &d, errbuf, sizeof errbuf), 0);
  assert_true(d.d[4 * 9 + 4] == 0.0f);
  assert_float_equal(d.d[5 * 9 + 5], sqrtf(2.0f), 1e-6);
  assert_true(d.d[0] == 1.0f); /* unknown is free here */
  pa_dist_free(&d);
  assert_int_equal(pa_dist_build(&g2, true, &d, errbuf, sizeof errbuf), 0);
  assert_true(d.d[0] == 0.0f);
  pa_dist_free(&d);
  pa_grid empty = {0};
  assert_int_equal(pa_dist_build(&empty, true, &d, errbuf, sizeof errbuf), -1);
  assert_non_null(strstr(errbuf, "empty grid"));
}

/* The default map: sampled cells against a search over the whole grid. */
static void test_default_map_samples(void **state) {
  (void)state;
  pa_grid g;
  assert_int_equal(pa_map_load_default(&g, errbuf, sizeof errbuf), 0);
  pa_dist d;
  assert_int_equal(pa_dist_build(&g, true, &d, errbuf, sizeof errbuf), 0);
  srand(3);
  int w = (int)g.width, h = (int)g.height;
  for (int s = 0; s < 50; s++) {
    int x = rand() % w, y = rand() % h;
    int64_t best = INT64_MAX;
    for (int by = -1; by <= h; by++)
      for (int bx = -1; bx <= w; bx++)
        if (pa_grid_blocked(&g, bx, by, true)) {
          int64_t d2 = (int64_t)(bx - x) * (bx - x) + (int64_t)(by - y) * (by - y);
          if (d2 < best) best = d2;
        }
    float want = (float)(sqrt((double)best) * g.resolution);
    assert_true(d.d[y * w + x] == want);
  }
  pa_dist_free(&d);
  pa_grid_free(&g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_grids),
      cmocka_unit_test(test_known_values),
      cmocka_unit_test(test_default_map_samples),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
