/* test_map_scenario.c - the built-in named scenarios (maps/pa_scenario.c):
 * seeded (same seed same cells, another seed other cells), the origin clear,
 * and every free cell of the connected kinds reachable from it. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "pa_map.h"

/* Free cells reachable from the cell of world (0, 0), 4-connected, over
 * cells that are free with a margin of `keep` cells (a robot's body). */
static size_t reachable(const pa_grid *g, long keep, size_t *free_n) {
  size_t n = (size_t)g->width * g->height;
  unsigned char *ok = calloc(n, 1), *seen = calloc(n, 1);
  size_t *q = malloc(n * sizeof *q);
  assert_true(ok && seen && q);
  *free_n = 0;
  for (long y = 0; y < (long)g->height; y++)
    for (long x = 0; x < (long)g->width; x++) {
      bool clear = true;
      for (long dy = -keep; dy <= keep && clear; dy++)
        for (long dx = -keep; dx <= keep && clear; dx++) {
          long xx = x + dx, yy = y + dy;
          clear = xx >= 0 && yy >= 0 && xx < (long)g->width &&
                  yy < (long)g->height &&
                  g->cells[(size_t)yy * g->width + (size_t)xx] < 50;
        }
      ok[(size_t)y * g->width + (size_t)x] = clear;
      *free_n += clear;
    }
  long ox = (long)(-g->origin_x / g->resolution);
  long oy = (long)(-g->origin_y / g->resolution);
  size_t start = (size_t)oy * g->width + (size_t)ox, h = 0, t = 0, got = 0;
  assert_true(ok[start]); /* a robot at (0, 0) starts in the open */
  seen[start] = 1;
  q[t++] = start;
  while (h < t) {
    size_t i = q[h++];
    got++;
    long x = (long)(i % g->width), y = (long)(i / g->width);
    const long nb[4][2] = {{x + 1, y}, {x - 1, y}, {x, y + 1}, {x, y - 1}};
    for (int k = 0; k < 4; k++) {
      if (nb[k][0] < 0 || nb[k][1] < 0 || nb[k][0] >= (long)g->width ||
          nb[k][1] >= (long)g->height)
        continue;
      size_t j = (size_t)nb[k][1] * g->width + (size_t)nb[k][0];
      if (ok[j] && !seen[j]) {
        seen[j] = 1;
        q[t++] = j;
      }
    }
  }
  free(ok);
  free(seen);
  free(q);
  return got;
}

static void scenarios_seeded_and_open(void **state) {
  (void)state;
  static const char *const want[] = {
      "Empty", "Rooms", "NarrowMap", "Maze", "Corridor", "Warehouse", "Forest"};
  char err[256];
  int n = 0;
  for (; pa_scenario_name(n); n++)
    assert_string_equal(pa_scenario_name(n), want[n]);
  assert_int_equal(n, 7);
  assert_int_equal(pa_scenario_find("narrowmap"), 2);
  assert_int_equal(pa_scenario_find("Moon"), -1);
  assert_int_not_equal(
      pa_scenario_generate(7, 1, &(pa_grid){0}, err, sizeof err), 0);
  for (int i = 0; i < n; i++) {
    pa_grid a, b, c;
    assert_int_equal(pa_scenario_generate(i, 1, &a, err, sizeof err), 0);
    assert_int_equal(pa_scenario_generate(i, 1, &b, err, sizeof err), 0);
    assert_int_equal(pa_scenario_generate(i, 2, &c, err, sizeof err), 0);
    size_t cells = (size_t)a.width * a.height;
    assert_true(b.width == a.width && b.height == a.height);
    assert_memory_equal(a.cells, b.cells, cells);
    if (i != 0) /* Empty has nothing a seed could move */
      assert_memory_not_equal(a.cells, c.cells, cells);
    /* a 0.3 m robot (6 cells margin... 0.15 m) reaches most of the map;
     * the maze, corridor and baffles all of it */
    size_t free_n, got = reachable(&a, 3, &free_n);
    double frac = (double)got / (double)free_n;
    if (frac < (i == 1 || i == 5 || i == 6 ? 0.85 : 0.999))
      fail_msg("%s: %zu of %zu free cells reachable from (0, 0)", want[i], got,
               free_n);
    pa_grid_free(&a);
    pa_grid_free(&b);
    pa_grid_free(&c);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(scenarios_seeded_and_open),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
