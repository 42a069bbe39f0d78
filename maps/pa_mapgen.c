/* pa_mapgen.c - procedural maps: a building of rooms joined by doors, with
 * boxes for clutter, from a seed (the same parameters give the same cells).
 * For learning loops that want a new layout per episode. */
#include "../common/pa_rng.h"
#include "pa_map.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pa_mapgen pa_mapgen_default(void) {
  pa_mapgen p = {.width = 20.0,
                 .height = 15.0,
                 .resolution = 0.05,
                 .seed = 1,
                 .rooms_x = 3,
                 .rooms_y = 2,
                 .clutter = 2};
  return p;
}

/* Uniform in [lo, hi). */
static double uni(uint64_t *s, double lo, double hi) {
  return lo + (hi - lo) * pa_splitmix64_unit(s);
}

/* Fills cells [x0, x1) x [y0, y1) (clipped) with v. */
static void fill(pa_grid *g, long x0, long y0, long x1, long y1, int8_t v) {
  x0 = x0 < 0 ? 0 : x0;
  y0 = y0 < 0 ? 0 : y0;
  x1 = x1 > (long)g->width ? (long)g->width : x1;
  y1 = y1 > (long)g->height ? (long)g->height : y1;
  for (long y = y0; y < y1; y++)
    for (long x = x0; x < x1; x++)
      g->cells[(size_t)y * g->width + (size_t)x] = v;
}

int pa_mapgen_check(const pa_mapgen *p, char *err, size_t err_sz) {
  const char *bad = NULL;
  if (!(p->resolution >= 0.01 && p->resolution <= 1))
    bad = "resolution must be in [0.01, 1] m";
  else if (!(p->width >= 2 && p->width <= 500 && p->height >= 2 &&
             p->height <= 500))
    bad = "width and height must be in [2, 500] m";
  else if (p->width / p->resolution > 8192 || p->height / p->resolution > 8192)
    bad = "at most 8192 x 8192 cells (a coarser resolution, or smaller)";
  else if (p->rooms_x < 1 || p->rooms_x > 32 || p->rooms_y < 1 ||
           p->rooms_y > 32)
    bad = "rooms across and along must be in [1, 32]";
  else if (p->width / p->rooms_x < 1.5 || p->height / p->rooms_y < 1.5)
    bad = "rooms must be at least 1.5 m wide (fewer rooms, or bigger)";
  else if (p->clutter > 64)
    bad = "clutter must be in [0, 64] boxes per room";
  if (bad) {
    snprintf(err, err_sz, "generate_map: %s", bad);
    return -1;
  }
  return 0;
}

int pa_map_generate(const pa_mapgen *p, pa_grid *out, char *err,
                    size_t err_sz) {
  memset(out, 0, sizeof *out);
  if (pa_mapgen_check(p, err, err_sz) != 0)
    return -1;
  pa_grid g = {.resolution = p->resolution,
               .occupied_min = PA_CELL_OCCUPIED};
  g.width = (uint32_t)lround(p->width / p->resolution);
  g.height = (uint32_t)lround(p->height / p->resolution);
  g.cells = calloc((size_t)g.width * g.height, 1);
  if (!g.cells) {
    snprintf(err, err_sz, "generate_map: out of memory for %ux%u cells",
             g.width, g.height);
    return -1;
  }
  uint64_t rng = p->seed ^ 0x6d617067656eull; /* "mapgen" */
  const double res = p->resolution;
  long t = lround(0.1 / res); /* walls 10 cm thick */
  if (t < 1)
    t = 1;
  long door = lround(0.9 / res); /* doors 90 cm wide */
  long W = (long)g.width, H = (long)g.height;
  const int8_t OCC = PA_CELL_OCCUPIED;
  /* Outer walls. */
  fill(&g, 0, 0, W, t, OCC);
  fill(&g, 0, H - t, W, H, OCC);
  fill(&g, 0, 0, t, H, OCC);
  fill(&g, W - t, 0, W, H, OCC);
  /* Room boundaries: column i at x = i * W / rooms_x, row j likewise. */
  long bx[33], by[33];
  for (uint32_t i = 0; i <= p->rooms_x; i++)
    bx[i] = (long)((double)W * i / p->rooms_x);
  for (uint32_t j = 0; j <= p->rooms_y; j++)
    by[j] = (long)((double)H * j / p->rooms_y);
  /* The world origin at the centre of the middle room, kept clear: a robot
   * starting at (0, 0) (the default world's) starts in the open. */
  uint32_t mx = p->rooms_x / 2, my = p->rooms_y / 2;
  long ox = (bx[mx] + bx[mx + 1]) / 2, oy = (by[my] + by[my + 1]) / 2;
  g.origin_x = -((double)ox + 0.5) * res;
  g.origin_y = -((double)oy + 0.5) * res;
  /* Inner walls, each wall segment between two rooms with one door at a
   * random place along it (every room reaches every other). */
  for (uint32_t i = 1; i < p->rooms_x; i++)
    for (uint32_t j = 0; j < p->rooms_y; j++) {
      long x = bx[i] - t / 2, y0 = by[j], y1 = by[j + 1];
      fill(&g, x, y0, x + t, y1, OCC);
      long span = y1 - y0 - 2 * t - door;
      long d0 = y0 + t + (span > 0 ? (long)uni(&rng, 0, (double)span) : 0);
      fill(&g, x, d0, x + t, d0 + door, PA_CELL_FREE);
    }
  for (uint32_t j = 1; j < p->rooms_y; j++)
    for (uint32_t i = 0; i < p->rooms_x; i++) {
      long y = by[j] - t / 2, x0 = bx[i], x1 = bx[i + 1];
      fill(&g, x0, y, x1, y + t, OCC);
      long span = x1 - x0 - 2 * t - door;
      long d0 = x0 + t + (span > 0 ? (long)uni(&rng, 0, (double)span) : 0);
      fill(&g, d0, y, d0 + door, y + t, PA_CELL_FREE);
    }
  /* Clutter: boxes of 0.2-0.6 m, kept 0.6 m off the room's walls so doors
   * and the walls' length stay passable. */
  long keep = lround(0.6 / res);
  for (uint32_t j = 0; j < p->rooms_y; j++)
    for (uint32_t i = 0; i < p->rooms_x; i++)
      for (uint32_t k = 0; k < p->clutter; k++) {
        long sx = lround(uni(&rng, 0.2, 0.6) / res);
        long sy = lround(uni(&rng, 0.2, 0.6) / res);
        long lo_x = bx[i] + keep, hi_x = bx[i + 1] - keep - sx;
        long lo_y = by[j] + keep, hi_y = by[j + 1] - keep - sy;
        if (hi_x <= lo_x || hi_y <= lo_y)
          continue; /* the room is too small for one */
        long x = (long)uni(&rng, (double)lo_x, (double)hi_x);
        long y = (long)uni(&rng, (double)lo_y, (double)hi_y);
        if (x - keep < ox && ox < x + sx + keep && y - keep < oy &&
            oy < y + sy + keep)
          continue; /* the origin stays clear */
        fill(&g, x, y, x + sx, y + sy, OCC);
      }
  *out = g;
  return 0;
}
