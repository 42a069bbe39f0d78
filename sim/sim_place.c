/* sim_place.c - where the robots of a new model start. A robot given a pose
 * starts there (refused when it overlaps a wall, an obstacle or another
 * robot given one). Every robot given none (robot 0 of a bare map, a world
 * robot without `pose`, the extras of --robots) takes, in index order, the
 * free cell centre nearest the map's (0, 0) that the robots before it left:
 * one outward walk over the cells in a fixed order shared by them all, so
 * 1000 robots cost the cells the walk visits, not a search each. */
#include "pa_sim.h"
#include "sim_int.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLACE_MARGIN 0.05 /* [m] clearance a placed robot keeps first */

/* A cell of the walk: its distance from (0, 0) [cells] and its place in
 * the ring order, which breaks ties. */
typedef struct walk_cell {
  double d;
  uint64_t seq;
  uint32_t cx, cy;
} walk_cell;

typedef struct band {
  walk_cell *c;
  size_t n, cap;
} band;

/* The walk: square rings of cells around the cell of (0, 0) (or the
 * grid's cell nearest it), each in a fixed order, dealt into bands of one
 * cell of distance; a band leaves sorted by (distance, ring order) once no
 * further ring can hold a cell of it. Each cell is visited once, its band
 * sorted once: O(cells visited), memory for about one ring's width. */
typedef struct walk {
  const pa_grid *g;
  const float *clear; /* the wall distance field [cells] */
  float need;         /* cells nearer a wall than this fit no robot */
  double fx, fy;      /* (0, 0) in cell units */
  double gx, gy;      /* how far (0, 0) lies outside the grid [cells] */
  long c0x, c0y;      /* the rings' centre */
  long k;             /* the next ring to push */
  bool rings_out;     /* every further ring is off the grid */
  uint64_t seq;
  long base;   /* the band of index 0: floor of the least distance */
  band *bands; /* by floor(d) - base */
  size_t nb;
  size_t cur, pos; /* the band being dealt and its next cell */
  bool sorted;     /* bands[cur] is complete and sorted */
} walk;

static void walk_start(walk *w, const pa_grid *g, const float *clear,
                       double need) {
  memset(w, 0, sizeof *w);
  w->g = g;
  w->clear = clear;
  w->need = (float)need;
  double c = cos(g->origin_yaw), sn = sin(g->origin_yaw);
  double dx = -g->origin_x, dy = -g->origin_y;
  w->fx = (c * dx + sn * dy) / g->resolution;
  w->fy = (-sn * dx + c * dy) / g->resolution;
  double wd = (double)g->width, ht = (double)g->height;
  w->c0x = w->fx < 0 ? 0 : w->fx >= wd ? (long)wd - 1 : (long)w->fx;
  w->c0y = w->fy < 0 ? 0 : w->fy >= ht ? (long)ht - 1 : (long)w->fy;
  w->gx = fmax(0, fmax(-w->fx, w->fx - wd));
  w->gy = fmax(0, fmax(-w->fy, w->fy - ht));
  w->base = (long)floor(hypot(w->gx, w->gy));
}

/* No cell of ring k is nearer (0, 0) than this [cells]. */
static double ring_least(const walk *w, long k) {
  double a = fmax(0, (double)k - 0.5);
  return fmin(hypot(w->gx + a, w->gy), hypot(w->gx, w->gy + a));
}

static int band_add(walk *w, walk_cell c) {
  long bi = (long)floor(c.d) - w->base;
  size_t i = bi < 0 ? 0 : (size_t)bi;
  if (i < w->cur) /* never: the bound keeps cells out of dealt bands */
    i = w->cur;
  if (i >= w->nb) {
    size_t nb = w->nb ? w->nb : 64;
    while (nb <= i)
      nb *= 2;
    band *b = realloc(w->bands, nb * sizeof *b);
    if (!b)
      return -1;
    memset(b + w->nb, 0, (nb - w->nb) * sizeof *b);
    w->bands = b;
    w->nb = nb;
  }
  band *b = &w->bands[i];
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 64;
    walk_cell *p = realloc(b->c, cap * sizeof *p);
    if (!p)
      return -1;
    b->c = p;
    b->cap = cap;
  }
  b->c[b->n++] = c;
  return 0;
}

static int push_ring(walk *w) {
  long k = w->k++, wd = (long)w->g->width, ht = (long)w->g->height;
  if (w->c0x - k < 0 && w->c0x + k >= wd && w->c0y - k < 0 &&
      w->c0y + k >= ht) {
    w->rings_out = true;
    return 0;
  }
  for (long cy = w->c0y - k; cy <= w->c0y + k; cy++) {
    if (cy < 0 || cy >= ht)
      continue;
    bool edge = cy == w->c0y - k || cy == w->c0y + k;
    long step = edge || k == 0 ? 1 : 2 * k;
    for (long cx = w->c0x - k; cx <= w->c0x + k; cx += step) {
      if (cx < 0 || cx >= wd || w->clear[cy * wd + cx] < w->need)
        continue; /* off the grid, or too near a wall for any robot */
      double ex = (double)cx + 0.5 - w->fx, ey = (double)cy + 0.5 - w->fy;
      walk_cell c = {sqrt(ex * ex + ey * ey), w->seq++, (uint32_t)cx,
                     (uint32_t)cy};
      if (band_add(w, c) != 0)
        return -1;
    }
  }
  return 0;
}

static int cell_cmp(const void *pa, const void *pb) {
  const walk_cell *a = pa, *b = pb;
  if (a->d != b->d)
    return a->d < b->d ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* The next cell nearest (0, 0): 1, none left: 0, out of memory: -1. */
static int walk_next(walk *w, walk_cell *out) {
  for (;;) {
    if (w->sorted && w->cur < w->nb && w->pos < w->bands[w->cur].n) {
      *out = w->bands[w->cur].c[w->pos++];
      return 1;
    }
    if (w->sorted) { /* the band is dealt: on to the next */
      if (w->cur < w->nb) {
        free(w->bands[w->cur].c);
        memset(&w->bands[w->cur], 0, sizeof w->bands[w->cur]);
      }
      w->cur++;
      w->pos = 0;
      w->sorted = false;
    }
    double upper = (double)(w->base + (long)w->cur) + 1; /* the band's end */
    while (!w->rings_out && ring_least(w, w->k) < upper)
      if (push_ring(w) != 0)
        return -1;
    if (w->rings_out && w->cur >= w->nb)
      return 0;
    if (w->cur < w->nb && w->bands[w->cur].n > 1) /* c is NULL when empty */
      qsort(w->bands[w->cur].c, w->bands[w->cur].n, sizeof(walk_cell),
            cell_cmp);
    w->sorted = true;
  }
}

static void walk_free(walk *w) {
  for (size_t i = 0; i < w->nb; i++)
    free(w->bands[i].c);
  free(w->bands);
}

/* The robots placed so far in square buckets of a side no robot pair's
 * reach exceeds (hashed: the robots may lie anywhere). */
typedef struct placed {
  double side;
  uint32_t mask;
  uint32_t *head, *next; /* UINT32_MAX ends a list */
} placed;

static uint32_t bucket_of(const placed *p, double x, double y, long dx,
                          long dy) {
  long bx = (long)floor(x / p->side) + dx, by = (long)floor(y / p->side) + dy;
  uint64_t h = (uint64_t)bx * 0x9e3779b97f4a7c15ull ^
               (uint64_t)by * 0xc2b2ae3d27d4eb4full;
  return (uint32_t)(h >> 32) & p->mask;
}

static void placed_add(placed *p, const pa_robot_info *list, uint32_t i) {
  uint32_t b = bucket_of(p, list[i].start_x, list[i].start_y, 0, 0);
  p->next[i] = p->head[b];
  p->head[b] = i;
}

/* Does robot i at (x, y) keep margin from every robot placed? */
static bool robots_clear(const placed *p, const pa_robot_info *list, uint32_t i,
                         double x, double y, double margin) {
  for (long dy = -1; dy <= 1; dy++)
    for (long dx = -1; dx <= 1; dx++) {
      uint32_t b = bucket_of(p, x, y, dx, dy);
      for (uint32_t j = p->head[b]; j != UINT32_MAX; j = p->next[j]) {
        double ex = list[j].start_x - x, ey = list[j].start_y - y;
        double rr = list[j].radius + list[i].radius + margin;
        if (ex * ex + ey * ey < rr * rr)
          return false;
      }
    }
  return true;
}

static bool fixed_clear(const pa_sim_model *m, double x, double y, double r,
                        double margin) {
  if (pa_sim_int_wall_clearance(m, x, y, r + margin, NULL, NULL) < r + margin)
    return false;
  for (uint32_t i = 0; i < m->obstacle_count0; i++)
    if (pa_sim_int_obstacle_dist(&m->obstacles0[i], x, y, NULL, NULL) <
        r + margin)
      return false;
  return true;
}

/* Robot i from the walk at margin: true when placed. */
static int place_walk(pa_sim_model *m, walk *w, placed *p, uint32_t i,
                      double margin) {
  pa_robot_info *ri = &m->robots0[i];
  walk_cell c;
  int got;
  while ((got = walk_next(w, &c)) == 1) {
    size_t at = (size_t)c.cy * m->grid.width + c.cx;
    if (m->clear[at] * m->grid.resolution < ri->radius + margin)
      continue; /* the wall distance field answers most cells */
    double x, y;
    pa_grid_cell_center(&m->grid, (int)c.cx, (int)c.cy, &x, &y);
    if (robots_clear(p, m->robots0, i, x, y, margin) &&
        fixed_clear(m, x, y, ri->radius, margin)) {
      ri->start_x = x;
      ri->start_y = y;
      return 1;
    }
  }
  return got;
}

int pa_sim_int_place_robots(pa_sim_model *m, const bool *no_pose,
                            uint32_t total, char *err, size_t err_sz) {
  placed p = {0};
  double rmax = 0, rmin = INFINITY;
  for (uint32_t i = 0; i < total; i++) {
    rmax = fmax(rmax, m->robots0[i].radius);
    rmin = fmin(rmin, m->robots0[i].radius);
  }
  p.side = 2 * rmax + PLACE_MARGIN + 1e-9;
  uint32_t nb = 64;
  while (nb < 2 * total)
    nb *= 2;
  p.mask = nb - 1;
  p.head = malloc(nb * sizeof *p.head);
  p.next = malloc((total + 1) * sizeof *p.next);
  walk w[2]; /* at the margin, then touching */
  /* the field is in cells, a little under so rounding drops no cell */
  double res = m->grid.resolution;
  walk_start(&w[0], &m->grid, m->clear, (rmin + PLACE_MARGIN) / res - 1e-6);
  walk_start(&w[1], &m->grid, m->clear, rmin / res - 1e-6);
  int rc = -1;
  if (!p.head || !p.next) {
    snprintf(err, err_sz, "out of memory placing %u robots", total);
    goto out;
  }
  memset(p.head, 0xff, nb * sizeof *p.head);
  for (uint32_t i = 0; i < total; i++) { /* the given poses first */
    const pa_robot_info *ri = &m->robots0[i];
    if (no_pose[i])
      continue;
    if (!fixed_clear(m, ri->start_x, ri->start_y, ri->radius, 0) ||
        !robots_clear(&p, m->robots0, i, ri->start_x, ri->start_y, 0)) {
      snprintf(err, err_sz,
               "robot '%s' at (%g, %g) overlaps a wall, an obstacle or "
               "another robot",
               ri->name, ri->start_x, ri->start_y);
      goto out;
    }
    placed_add(&p, m->robots0, i);
  }
  for (uint32_t i = 0; i < total; i++) {
    pa_robot_info *ri = &m->robots0[i];
    if (!no_pose[i])
      continue;
    int got = 0;
    if (fixed_clear(m, 0, 0, ri->radius, 0) &&
        robots_clear(&p, m->robots0, i, 0, 0, 0)) {
      ri->start_x = ri->start_y = 0; /* (0, 0) itself */
      got = 1;
    }
    if (!got)
      got = place_walk(m, &w[0], &p, i, PLACE_MARGIN);
    if (got == 0)
      got = place_walk(m, &w[1], &p, i, 0);
    if (got < 0) {
      snprintf(err, err_sz, "out of memory placing %u robots", total);
      goto out;
    }
    if (got == 0) {
      snprintf(err, err_sz, "no free place on the map for robot '%s'",
               ri->name);
      goto out;
    }
    placed_add(&p, m->robots0, i);
  }
  rc = 0;
out:
  walk_free(&w[0]);
  walk_free(&w[1]);
  free(p.head);
  free(p.next);
  return rc;
}
