/* sim_office.h - the synthetic office bench-sim measures and test_sim_laser
 * checks every caster path on: the same cells in both. Header-only and
 * without cmocka so that the benchmark can use it. */
#ifndef PA_SIM_OFFICE_H
#define PA_SIM_OFFICE_H

#include "pa_map.h"
#include "pa_sim.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A w x h grid of 0.05 m cells: 8 m rooms with 1.2 m doors and w * h / 2000
 * furniture boxes (seeded). g->cells is NULL when out of memory. */
static inline void ts_office(pa_grid *g, uint32_t w, uint32_t h) {
  memset(g, 0, sizeof *g);
  g->width = w;
  g->height = h;
  g->resolution = 0.05;
  g->occupied_min = PA_CELL_OCCUPIED;
  g->cells = calloc((size_t)w * h, 1);
  if (!g->cells)
    return;
  uint64_t rng = 99;
  for (uint32_t y = 0; y < h; y++)
    for (uint32_t x = 0; x < w; x++) {
      bool wall = x < 2 || y < 2 || x >= w - 2 || y >= h - 2;
      if ((x % 160 < 3 && (y % 160) / 24 != 3) ||
          (y % 160 < 3 && (x % 160) / 24 != 4))
        wall = true;
      g->cells[(size_t)y * w + x] = wall ? PA_CELL_OCCUPIED : 0;
    }
  for (int k = 0; k < (int)(w * h / 2000); k++) {
    uint32_t x = (uint32_t)(pa_sim_rng_uniform(&rng) * (w - 20));
    uint32_t y = (uint32_t)(pa_sim_rng_uniform(&rng) * (h - 20));
    uint32_t bw = 2 + (uint32_t)(pa_sim_rng_uniform(&rng) * 14);
    uint32_t bh = 2 + (uint32_t)(pa_sim_rng_uniform(&rng) * 14);
    for (uint32_t j = y; j < y + bh; j++)
      for (uint32_t i = x; i < x + bw; i++)
        g->cells[(size_t)j * w + i] = PA_CELL_OCCUPIED;
  }
}

#endif
