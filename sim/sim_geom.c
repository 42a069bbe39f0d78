/* sim_geom.c - clearance of discs (collisions) and ray casting (laser)
 * against the grid, obstacles and robots. */
#define _GNU_SOURCE
#include "pa_sim.h"
#include "sim_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Rays cast together: the casters' stack buffers hold this many. */
#define CAST_CHUNK 512

int64_t pa_sim_int_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* World point -> grid frame in cell units. */
static inline void to_grid(const pa_sim_model *m, double x, double y,
                           double *gx, double *gy) {
  double rx = x - m->grid.origin_x, ry = y - m->grid.origin_y;
  double inv = 1.0 / m->grid.resolution;
  *gx = (m->cos_yaw * rx + m->sin_yaw * ry) * inv;
  *gy = (-m->sin_yaw * rx + m->cos_yaw * ry) * inv;
}

static inline bool cell_blocked(const pa_sim_model *m, int64_t cx,
                                int64_t cy) {
  if (cx < 0 || cy < 0 || cx >= (int64_t)m->grid.width ||
      cy >= (int64_t)m->grid.height)
    return true;
  return m->blocked[(size_t)cy * m->grid.width + (size_t)cx] != 0;
}

/* ---- walls ------------------------------------------------------------ */

/* Distance along one axis from coordinate g to the cell span [i, i + 1]. */
static inline double span_gap(double g, int64_t i) {
  double d = (double)i - g;
  if (g - (double)(i + 1) > d)
    d = g - (double)(i + 1);
  return d < 0 ? 0 : d;
}

/* The nearest blocked cell found so far (squared distance in cells). */
typedef struct nearest_cell {
  double best, bx, by; /* bx, by: closest point of that cell to the point */
  int64_t cx, cy;
} nearest_cell;

/* Keeps cell (i, j) if it is strictly nearer than the best so far, so the
 * first cell visited wins ties. */
static inline void nearest_consider(nearest_cell *n, int64_t i, int64_t j,
                                    double gx, double gy, double ddy) {
  double ddx = span_gap(gx, i);
  double d2 = ddx * ddx + ddy * ddy;
  if (d2 < n->best) {
    n->best = d2;
    n->cx = i;
    n->cy = j;
    n->bx = gx < (double)i ? (double)i : gx > (double)(i + 1) ? (double)(i + 1) : gx;
    n->by = gy < (double)j ? (double)j : gy > (double)(j + 1) ? (double)(j + 1) : gy;
  }
}

double pa_sim_int_wall_clearance(const pa_sim_model *m, double x, double y,
                                 double reach, double *nx, double *ny) {
  double gx, gy;
  to_grid(m, x, y, &gx, &gy);
  double res = m->grid.resolution;
  int64_t cx = (int64_t)floor(gx), cy = (int64_t)floor(gy);
  if (!cell_blocked(m, cx, cy)) {
    /* Fast path: the march field (clear >= safe + sqrt 2) bounds the
     * distance from this point: clear - 1/sqrt 2 - |offset from centre|. */
    uint8_t v = m->march[(size_t)(cy + 1) * m->march_w + (size_t)cx + 1];
    double ox = gx - ((double)cx + 0.5), oy = gy - ((double)cy + 0.5);
    double bound = m->march_safe[v] + 0.70710 - sqrt(ox * ox + oy * oy);
    if (v >= 2 && bound * res >= reach) /* code 1: clear may be < sqrt 2 */
      return bound * res;
  }
  /* Exact: nearest point of every blocked cell within reach. */
  double rc = reach / res + 1.0;
  int64_t x0 = (int64_t)floor(gx - rc), x1 = (int64_t)floor(gx + rc);
  int64_t y0 = (int64_t)floor(gy - rc), y1 = (int64_t)floor(gy + rc);
  nearest_cell n = {INFINITY, 0, 0, 0, 0};
  const int64_t GW = m->grid.width, GH = m->grid.height;
  if (x0 >= 0 && y0 >= 0 && x1 < GW && y1 < GH && cx - x0 < 255 &&
      x1 - cx < 255) {
    /* Inside the grid: per row only the nearest blocked cell on each side
     * of the point can be the row's nearest (the runs), found in the same
     * order and with the same ties as the loop below (smallest j, then i). */
    for (int64_t j = y0; j <= y1; j++) {
      double ddy = span_gap(gy, j);
      if (ddy * ddy >= n.best)
        continue;
      size_t row = (size_t)j * (size_t)GW;
      int64_t cand[2], nc = 0;
      bool cb = m->run_l[row + (size_t)cx] == 0; /* the point's own cell */
      int64_t il = cx - m->run_l[row + (size_t)cx];
      /* a point on the line between two blocked cells: the lower i first */
      if (il == cx && gx == (double)cx && cx - 1 >= x0 &&
          m->blocked[row + (size_t)cx - 1])
        il = cx - 1;
      if (il >= x0)
        cand[nc++] = il;
      if (!cb) {
        int64_t ir = cx + m->run_r[row + (size_t)cx];
        if (ir <= x1 && m->blocked[row + (size_t)ir])
          cand[nc++] = ir;
      }
      for (int64_t q = 0; q < nc; q++) {
        int64_t i = cand[q];
        if (!m->blocked[row + (size_t)i])
          continue; /* a capped run */
        nearest_consider(&n, i, j, gx, gy, ddy);
      }
    }
    y1 = y0 - 1; /* done: skip the general loop */
  }
  for (int64_t j = y0; j <= y1; j++) {
    double ddy = span_gap(gy, j);
    if (ddy * ddy >= n.best)
      continue;
    for (int64_t i = x0; i <= x1; i++)
      if (cell_blocked(m, i, j))
        nearest_consider(&n, i, j, gx, gy, ddy);
  }
  if (n.best == INFINITY)
    return reach + res;
  double d = sqrt(n.best);
  if (nx && ny) {
    double ex = gx - n.bx, ey = gy - n.by;
    if (d < 1e-12) { /* inside a blocked cell: away from its centre */
      ex = gx - ((double)n.cx + 0.5);
      ey = gy - ((double)n.cy + 0.5);
    }
    double len = sqrt(ex * ex + ey * ey);
    if (len < 1e-12) {
      ex = 1;
      ey = 0;
      len = 1;
    }
    ex /= len;
    ey /= len;
    *nx = m->cos_yaw * ex - m->sin_yaw * ey;
    *ny = m->sin_yaw * ex + m->cos_yaw * ey;
  }
  return d * res;
}

static double bodies_clearance(const pa_sim_state *s, uint32_t skip,
                               double x, double y, double best, double wnx,
                               double wny, double *nx, double *ny,
                               bool robots);

/* pa_sim_int_wall_clearance(m, x, y, r) < r, answered sooner: the same
 * cells and distances, rows nearest first, stopping at the first cell that
 * overlaps (the minimum is below r as soon as one value is). */
static bool wall_hits(const pa_sim_model *m, double x, double y, double r,
                      double *value) {
  double gx, gy;
  to_grid(m, x, y, &gx, &gy);
  double res = m->grid.resolution;
  int64_t cx = (int64_t)floor(gx), cy = (int64_t)floor(gy);
  if (!cell_blocked(m, cx, cy)) {
    uint8_t v = m->march[(size_t)(cy + 1) * m->march_w + (size_t)cx + 1];
    double ox = gx - ((double)cx + 0.5), oy = gy - ((double)cy + 0.5);
    double bound = m->march_safe[v] + 0.70710 - sqrt(ox * ox + oy * oy);
    if (v >= 2 && bound * res >= r) {
      *value = bound * res;
      return false;
    }
  }
  double rc = r / res + 1.0;
  int64_t x0 = (int64_t)floor(gx - rc), x1 = (int64_t)floor(gx + rc);
  int64_t y0 = (int64_t)floor(gy - rc), y1 = (int64_t)floor(gy + rc);
  const int64_t GW = m->grid.width, GH = m->grid.height;
  if (!(x0 >= 0 && y0 >= 0 && x1 < GW && y1 < GH && cx - x0 < 255 &&
        x1 - cx < 255)) {
    *value = pa_sim_int_wall_clearance(m, x, y, r, NULL, NULL);
    return *value < r;
  }
  double best = INFINITY;
  int64_t cyc = cy < y0 ? y0 : cy > y1 ? y1 : cy;
  for (int64_t q = 0; q <= 2 * (y1 - y0) + 1; q++) {
    /* cyc, cyc + 1, cyc - 1, cyc + 2, ... within [y0, y1] */
    int64_t j = (q & 1) ? cyc + (q + 1) / 2 : cyc - q / 2;
    if (j < y0 || j > y1)
      continue;
    double ddy = span_gap(gy, j);
    if (ddy * ddy >= best)
      continue;
    size_t row = (size_t)j * (size_t)GW;
    int64_t cand[2], nc = 0;
    bool cb = m->run_l[row + (size_t)cx] == 0;
    int64_t il = cx - m->run_l[row + (size_t)cx];
    if (il >= x0)
      cand[nc++] = il;
    if (!cb) {
      int64_t ir = cx + m->run_r[row + (size_t)cx];
      if (ir <= x1 && m->blocked[row + (size_t)ir])
        cand[nc++] = ir;
    }
    for (int64_t k = 0; k < nc; k++) {
      int64_t i = cand[k];
      if (!m->blocked[row + (size_t)i])
        continue;
      double ddx = span_gap(gx, i);
      double d2 = ddx * ddx + ddy * ddy;
      if (d2 < best) {
        best = d2;
        if (sqrt(d2) * res < r)
          return true;
      }
    }
  }
  /* no early exit: the same minimum as the full function */
  *value = best == INFINITY ? r + res : sqrt(best) * res;
  return false;
}

/* The sign test of pa_sim_int_clearance(margin 0) >= 0, with early exits
 * (its best only decreases: once below r, the answer is known). */
bool pa_sim_int_free(const pa_sim_model *m, const pa_sim_state *s,
                     uint32_t skip, double x, double y, double r,
                     bool robots) {
  double wall;
  if (wall_hits(m, x, y, r, &wall))
    return false;
  return bodies_clearance(s, skip, x, y, wall, 0, 0, NULL, NULL, robots) -
             r >=
         0;
}

/* ---- obstacles ----------------------------------------------------------- */

static double obstacle_bound(const pa_obstacle_info *o) {
  if (o->shape == PA_SHAPE_CIRCLE)
    return o->radius;
  return 0.5 * sqrt(o->size_x * o->size_x + o->size_y * o->size_y);
}

double pa_sim_int_obstacle_dist(const pa_obstacle_info *o, double x, double y,
                                double *nx, double *ny) {
  double ex = x - o->x, ey = y - o->y;
  if (o->shape == PA_SHAPE_CIRCLE) {
    double len = sqrt(ex * ex + ey * ey);
    if (nx && ny) {
      *nx = len > 1e-12 ? ex / len : 1;
      *ny = len > 1e-12 ? ey / len : 0;
    }
    return len - o->radius;
  }
  double c = cos(o->theta), s = sin(o->theta);
  double lx = c * ex + s * ey, ly = -s * ex + c * ey;
  double hx = 0.5 * o->size_x, hy = 0.5 * o->size_y;
  double qx = fabs(lx) - hx, qy = fabs(ly) - hy;
  double d, ux, uy;
  if (qx > 0 || qy > 0) {
    double px = qx > 0 ? qx : 0, py = qy > 0 ? qy : 0;
    d = sqrt(px * px + py * py);
    ux = (lx < 0 ? -px : px) / d;
    uy = (ly < 0 ? -py : py) / d;
  } else if (qx > qy) {
    d = qx;
    ux = lx < 0 ? -1 : 1;
    uy = 0;
  } else {
    d = qy;
    ux = 0;
    uy = ly < 0 ? -1 : 1;
  }
  if (nx && ny) {
    *nx = c * ux - s * uy;
    *ny = s * ux + c * uy;
  }
  return d;
}

/* ---- robot broad phase ----------------------------------------------------- */

int pa_sim_int_hash_init(pa_sim_hash *h, uint32_t cap) {
  memset(h, 0, sizeof *h);
  uint32_t size = 64;
  while (size < 2 * cap)
    size *= 2;
  h->mask = size - 1;
  h->cap = cap;
  h->start = calloc((size_t)size + 1, sizeof *h->start);
  h->items = calloc(cap, sizeof *h->items);
  h->key = calloc(cap, sizeof *h->key);
  size_t n = cap ? cap : 1;
  h->ix = calloc(n, sizeof *h->ix);
  h->iy = calloc(n, sizeof *h->iy);
  h->ir = calloc(n, sizeof *h->ir);
  h->icx = calloc(n, sizeof *h->icx);
  h->icy = calloc(n, sizeof *h->icy);
  return h->start && h->items && h->key && h->ix && h->iy && h->ir &&
                 h->icx && h->icy
             ? 0
             : -1;
}

void pa_sim_int_hash_free(pa_sim_hash *h) {
  free(h->start);
  free(h->items);
  free(h->key);
  free(h->ix);
  free(h->iy);
  free(h->ir);
  free(h->icx);
  free(h->icy);
  memset(h, 0, sizeof *h);
}

uint32_t pa_sim_int_hash_key(const pa_sim_hash *h, int64_t cx, int64_t cy) {
  uint32_t k = (uint32_t)cx * 73856093u ^ (uint32_t)cy * 19349663u;
  return k & h->mask;
}

void pa_sim_int_hash_build(pa_sim_hash *h, const pa_sim_state *s,
                           double cell) {
  h->cell = cell;
  h->rmax = 0;
  uint32_t size = h->mask + 1;
  memset(h->start, 0, ((size_t)size + 1) * sizeof *h->start);
  for (uint32_t i = 0; i < s->robot_count; i++) {
    if (!s->info[i].active)
      continue;
    uint32_t k = pa_sim_int_hash_key(h, (int64_t)floor(s->rs[i].x / cell),
                                     (int64_t)floor(s->rs[i].y / cell));
    h->key[i] = k;
    h->start[k + 1]++;
    if (s->info[i].radius > h->rmax)
      h->rmax = s->info[i].radius;
  }
  for (uint32_t k = 0; k < size; k++)
    h->start[k + 1] += h->start[k];
  /* Counting sort, stable in robot order (determinism). */
  uint32_t *fill = h->start; /* reuse: shift back afterwards */
  for (uint32_t i = 0; i < s->robot_count; i++)
    if (s->info[i].active)
      h->items[fill[h->key[i]]++] = i;
  for (uint32_t k = size; k > 0; k--)
    h->start[k] = h->start[k - 1];
  h->start[0] = 0;
  /* Contiguous copies for the scans (no robot records touched per item). */
  for (uint32_t p = 0; p < h->start[size]; p++) {
    uint32_t i = h->items[p];
    h->ix[p] = s->rs[i].x;
    h->iy[p] = s->rs[i].y;
    h->ir[p] = s->info[i].radius;
    h->icx[p] = (int64_t)floor(s->rs[i].x / cell);
    h->icy[p] = (int64_t)floor(s->rs[i].y / cell);
  }
  h->valid = true;
}

/* ---- clearance ------------------------------------------------------------ */

static inline void consider_robot(const pa_sim_state *s, uint32_t j,
                                  uint32_t skip, double x, double y,
                                  double *best, double *bnx, double *bny) {
  if (j == skip || !s->info[j].active)
    return;
  double ex = x - s->rs[j].x, ey = y - s->rs[j].y;
  double rr = *best + s->info[j].radius;
  double d2 = ex * ex + ey * ey;
  if (d2 >= rr * rr)
    return;
  double len = sqrt(d2);
  double d = len - s->info[j].radius;
  if (d < *best) {
    *best = d;
    /* coincident centres: push along +x, any direction is as good */
    *bnx = len > 1e-12 ? ex / len : 1;
    *bny = len > 1e-12 ? ey / len : 0;
  }
}

double pa_sim_clearance(const pa_sim_model *m, const pa_sim_state *s,
                        uint32_t skip, double x, double y, double r,
                        double margin, double *nx, double *ny) {
  return pa_sim_int_clearance(m, s, skip, x, y, r, margin, nx, ny, true);
}

double pa_sim_int_clearance(const pa_sim_model *m, const pa_sim_state *s,
                            uint32_t skip, double x, double y, double r,
                            double margin, double *nx, double *ny,
                            bool robots) {
  double reach = r + margin;
  double wnx = 0, wny = 0;
  double best = pa_sim_int_wall_clearance(m, x, y, reach, &wnx, &wny);
  return bodies_clearance(s, skip, x, y, best, wnx, wny, nx, ny, robots) - r;
}

/* The rest of the clearance after the walls: obstacles and robots nearer
 * than best (the wall value, with its normal). Returns the smallest. */
static double bodies_clearance(const pa_sim_state *s, uint32_t skip,
                               double x, double y, double best, double wnx,
                               double wny, double *nx, double *ny,
                               bool robots) {
  double bnx = wnx, bny = wny;
  for (uint32_t i = 0; i < s->obstacle_count; i++) {
    const pa_obstacle_info *o = &s->obs[i];
    if (!o->active)
      continue;
    double ex = x - o->x, ey = y - o->y, lim = best + obstacle_bound(o);
    if (ex * ex + ey * ey >= lim * lim)
      continue;
    double onx, ony;
    double d = pa_sim_int_obstacle_dist(o, x, y, &onx, &ony);
    if (d < best) {
      best = d;
      bnx = onx;
      bny = ony;
    }
  }
  const pa_sim_hash *h = &s->hash;
  if (!robots || s->ghosts) {
  } else if (h->valid) {
    int64_t cx = (int64_t)floor(x / h->cell), cy = (int64_t)floor(y / h->cell);
    uint32_t seen[9];
    int nseen = 0;
    for (int64_t j = cy - 1; j <= cy + 1; j++)
      for (int64_t i = cx - 1; i <= cx + 1; i++) {
        uint32_t k = pa_sim_int_hash_key(h, i, j);
        bool dup = false;
        for (int q = 0; q < nseen; q++)
          dup = dup || seen[q] == k;
        if (dup)
          continue;
        seen[nseen++] = k;
        for (uint32_t p = h->start[k]; p < h->start[k + 1]; p++)
          consider_robot(s, h->items[p], skip, x, y, &best, &bnx, &bny);
      }
  } else {
    for (uint32_t j = 0; j < s->robot_count; j++)
      consider_robot(s, j, skip, x, y, &best, &bnx, &bny);
  }
  if (nx && ny) {
    *nx = bnx;
    *ny = bny;
  }
  return best;
}

bool pa_sim_overlaps(const pa_sim_model *m, const pa_sim_state *s,
                     uint32_t id, double x, double y) {
  return pa_sim_clearance(m, s, id, x, y, s->info[id].radius, 0, NULL,
                          NULL) < 0;
}

/* ---- ray casting against the grid --------------------------------------- */

/* Ray parameter [cells] where the ray enters cell (cx, cy): the same formula
 * for both casters so that equal cells give equal ranges, bit for bit. */
static inline double cell_entry(double ox, double oy, double ix, double iy,
                                double dx, double dy, int64_t cx, int64_t cy) {
  double tx = dx > 0 ? ((double)cx - ox) * ix
              : dx < 0 ? ((double)cx + 1.0 - ox) * ix
                       : -INFINITY;
  double ty = dy > 0 ? ((double)cy - oy) * iy
              : dy < 0 ? ((double)cy + 1.0 - oy) * iy
                       : -INFINITY;
  double t = tx > ty ? tx : ty;
  return t > 0 ? t : 0;
}

/* The plain Amanatides-Woo traversal in the padded grid (cell units, origin
 * shifted by one cell): the reference the fast caster must match. Each
 * boundary crossing is computed from the origin (not by accumulation), so
 * the fast caster, which shares this formula, takes identical decisions from
 * any cell they share. */
static double cast_plain_cells(const pa_sim_model *m, double ox, double oy,
                               double dx, double dy, double maxc) {
  const int64_t W = m->march_w, H = (int64_t)m->grid.height + 2;
  const uint8_t *F = m->march;
  ox += 1.0;
  oy += 1.0;
  if (!(ox >= 0 && oy >= 0 && ox < (double)W && oy < (double)H))
    return 0;
  int64_t cx = (int64_t)ox, cy = (int64_t)oy;
  int64_t idx = cy * W + cx;
  if (F[idx] == 0)
    return 0;
  const double ix = dx != 0 ? 1.0 / dx : 0, iy = dy != 0 ? 1.0 / dy : 0;
  const int64_t sx = dx > 0 ? 1 : -1, sy = dy > 0 ? 1 : -1;
  const double bxo = dx > 0 ? 1.0 : 0.0, byo = dy > 0 ? 1.0 : 0.0;
  const bool hx = dx != 0, hy = dy != 0;
  /* An axis the ray never crosses: its crossing stays at ~1e300. */
  const double jx = hx ? ix : 1e300, jy = hy ? iy : 1e300;
  double bx = hx ? (double)cx + bxo : ox + 1.0; /* next boundaries */
  double by = hy ? (double)cy + byo : oy + 1.0;
  for (;;) {
    double tx = (bx - ox) * jx, ty = (by - oy) * jy;
    double t;
    if (tx < ty) {
      t = tx;
      bx += (double)sx;
      cx += sx;
    } else {
      t = ty;
      by += (double)sy;
      cy += sy;
    }
    if (t >= maxc)
      return maxc;
    if (F[cy * W + cx] == 0)
      break;
  }
  double e = cell_entry(ox, oy, ix, iy, dx, dy, cx, cy);
  return e < maxc ? e : maxc;
}

/* The fast caster for one ray: from the current point, jump by the field's
 * safe step (from any point of the cell nothing blocked is that close) while
 * it is >= 1 cell, tracking the position in fixed point (short dependency
 * chain; the field's slack covers its error), then take exact crossings from
 * the exact point of the ray. Jumps only cross free space and hits come from
 * exact crossings with the plain formula, and the range is the entry of the
 * hit cell by cell_entry, so the result equals cast_plain_cells bit for bit. */
#define JUMP_CODE 5 /* codes >= this: safe step >= 1 cell */

static inline double cast_one(const pa_sim_model *m, double ox, double oy,
                              double dx, double dy, double maxc) {
  const int64_t W = m->march_w, H = (int64_t)m->grid.height + 2;
  const uint8_t *F = m->march;
  const int32_t *SQ = m->march_safeq;
  ox += 1.0;
  oy += 1.0;
  if (!(ox >= 0 && oy >= 0 && ox < (double)W && oy < (double)H))
    return 0;
  int64_t cx = (int64_t)ox, cy = (int64_t)oy;
  int64_t idx = cy * W + cx;
  if (F[idx] == 0)
    return 0;
  const double ix = dx != 0 ? 1.0 / dx : 0, iy = dy != 0 ? 1.0 / dy : 0;
  const int64_t sx = dx > 0 ? 1 : -1, sy = dy > 0 ? 1 : -1;
  const int64_t syw = sy * W;
  const double bxo = dx > 0 ? 1.0 : 0.0, byo = dy > 0 ? 1.0 : 0.0;
  const bool hx = dx != 0, hy = dy != 0;
  const double fsx = (double)sx, fsy = (double)sy;
  const double jx = hx ? ix : 1e300, jy = hy ? iy : 1e300;
  /* fixed point: positions [2^-20 cell], directions [2^-20], t [2^-10] */
  const int64_t qdx = (int64_t)(dx * 1048576.0);
  const int64_t qdy = (int64_t)(dy * 1048576.0);
  const int64_t qmax = (int64_t)(maxc * 1024.0) + 1;
  double bx = hx ? (double)cx + bxo : ox + 1.0; /* next boundaries */
  double by = hy ? (double)cy + byo : oy + 1.0;
  double t = 0;
  for (;;) {
    unsigned v = F[idx];
    if (v >= JUMP_CODE) {
      /* truncation: qt <= t, so the exact point stays behind the jump */
      int64_t qt = (int64_t)(t * 1024.0);
      int64_t qx = (int64_t)((ox + t * dx) * 1048576.0);
      int64_t qy = (int64_t)((oy + t * dy) * 1048576.0);
      do {
        int64_t q = SQ[v];
        qt += q;
        qx += (q * qdx) >> 10;
        qy += (q * qdy) >> 10;
        idx = (qy >> 20) * W + (qx >> 20);
        v = F[idx];
      } while (v >= JUMP_CODE && qt < qmax);
      t = (double)qt * (1.0 / 1024.0);
      if (t >= maxc)
        return maxc;
      /* Back on the exact ray, in the plain traversal's state after all its
       * crossings up to t: the next boundary is the first one it crosses
       * after t. floor() of the point alone is not enough: a ray along a
       * grid line can round into the neighbouring row. */
      double px = ox + t * dx, py = oy + t * dy;
      cx = (int64_t)px;
      cy = (int64_t)py;
      if (hx) {
        bx = (double)cx + bxo;
        if ((bx - ox) * jx <= t)
          bx += fsx;
        else if ((bx - fsx - ox) * jx > t)
          bx -= fsx;
        cx = (int64_t)(bx - bxo);
      } else {
        bx = ox + 1.0;
      }
      if (hy) {
        by = (double)cy + byo;
        if ((by - oy) * jy <= t)
          by += fsy;
        else if ((by - fsy - oy) * jy > t)
          by -= fsy;
        cy = (int64_t)(by - byo);
      } else {
        by = oy + 1.0;
      }
      idx = cy * W + cx;
      if (F[idx] == 0)
        goto hit;
    }
    /* One exact step: leave the cell through the nearer boundary (written
     * without branches: the choice is unpredictable). */
    double tx = (bx - ox) * jx, ty = (by - oy) * jy;
    bool xs = tx < ty;
    t = xs ? tx : ty;
    bx += xs ? fsx : 0.0;
    by += xs ? 0.0 : fsy;
    idx += xs ? sx : syw;
    if (t >= maxc)
      return maxc;
    if (F[idx] == 0) {
      if (hx) /* an axis never crossed keeps its cell */
        cx = (int64_t)(bx - bxo);
      if (hy)
        cy = (int64_t)(by - byo);
      goto hit;
    }
  }
hit:;
  double e = cell_entry(ox, oy, ix, iy, dx, dy, cx, cy);
  return e < maxc ? e : maxc;
}

/* ---- the same with AVX-512, 24 rays in flight ----------------------------
 * A single-precision pass (jump_f32) first takes every ray through open
 * space; then CAST_WAVES waves of 8 lanes (one ray each) advance together
 * from there. Each iteration
 * a lane either jumps by its cell's safe step (landing in the plain
 * traversal's state, as in cast_one) or takes one exact crossing computed as
 * in cast_plain_cells (IEEE division, subtraction and product: the same bits
 * as the scalar code), whichever goes further. A lane stops on a blocked cell
 * or past maxc, writes the hit cell's entry (cell_entry's operations, in
 * vectors) and takes the next ray, so results equal the plain traversal bit
 * for bit on any machine. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(PA_SIM_NO_SIMD)
#include <immintrin.h>
#define HAVE_AVX512_CASTER 1
#ifndef CAST_WAVES
#define CAST_WAVES 3 /* independent dependency chains in flight */
#endif
#define AVX512_TARGET __attribute__((target("avx512f,avx512dq,avx512vl")))

/* The lowest `left` set bits of free (all of them when there are fewer):
 * the free lanes that take the last rays. */
static inline unsigned first_lanes(unsigned free, uint32_t left) {
  if ((uint32_t)__builtin_popcount(free) <= left)
    return free;
  unsigned keep = 0;
  for (uint32_t got = 0; free && got < left; got++) {
    keep |= free & -free;
    free &= free - 1;
  }
  return keep;
}

typedef struct wave8 {
  __m512d dx, dy, jx, jy, fsx, fsy, bxo, byo, t, bx, by, idx, id;
  __mmask8 live;
} wave8;

typedef struct wave_src {
  const double *dx, *dy, *jx, *jy, *id; /* rays waiting, in order */
  const double *t0;                   /* where each starts (free up to it) */
  uint32_t next, n;
  double c0x, c0y, idx0;              /* the origin's cell */
} wave_src;

/* The plain traversal's state after all its crossings up to tj (see
 * cast_one): next boundaries and cell index. The fused product only guesses
 * the point; the comparisons make the boundaries exact. An axis never
 * crossed has jx = 1e300 and never moves. */
AVX512_TARGET static inline void wave_land(const wave8 *w, __m512d tj,
                                           __m512d ox, __m512d oy, __m512d Wd,
                                           __m512d *bx, __m512d *by,
                                           __m512d *idx) {
  __m512d px = _mm512_fmadd_pd(tj, w->dx, ox);
  __m512d py = _mm512_fmadd_pd(tj, w->dy, oy);
  __m512d bxj = _mm512_add_pd(
      _mm512_roundscale_pd(px, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC), w->bxo);
  __m512d byj = _mm512_add_pd(
      _mm512_roundscale_pd(py, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC), w->byo);
  __mmask8 ax = _mm512_cmp_pd_mask(
      _mm512_mul_pd(_mm512_sub_pd(bxj, ox), w->jx), tj, _CMP_LE_OQ);
  __mmask8 rx = _mm512_mask_cmp_pd_mask(
      (__mmask8)~ax,
      _mm512_mul_pd(_mm512_sub_pd(_mm512_sub_pd(bxj, w->fsx), ox), w->jx), tj,
      _CMP_GT_OQ);
  bxj = _mm512_mask_sub_pd(_mm512_mask_add_pd(bxj, ax, bxj, w->fsx), rx, bxj,
                           w->fsx);
  __mmask8 ay = _mm512_cmp_pd_mask(
      _mm512_mul_pd(_mm512_sub_pd(byj, oy), w->jy), tj, _CMP_LE_OQ);
  __mmask8 ry = _mm512_mask_cmp_pd_mask(
      (__mmask8)~ay,
      _mm512_mul_pd(_mm512_sub_pd(_mm512_sub_pd(byj, w->fsy), oy), w->jy), tj,
      _CMP_GT_OQ);
  byj = _mm512_mask_sub_pd(_mm512_mask_add_pd(byj, ay, byj, w->fsy), ry, byj,
                           w->fsy);
  *bx = bxj;
  *by = byj;
  *idx = _mm512_fmadd_pd(_mm512_sub_pd(byj, w->byo), Wd,
                         _mm512_sub_pd(bxj, w->bxo));
}

/* Starts the next rays in the lanes that are free (expand loads keep the
 * order); the rest of the lanes keep running. */
AVX512_TARGET static inline void wave_fill(wave8 *w, wave_src *q, __m512d ox,
                                           __m512d oy, __m512d Wd) {
  __mmask8 fr = (__mmask8)~w->live;
  uint32_t left = q->n - q->next;
  if (!left || !fr)
    return;
  fr = (__mmask8)first_lanes(fr, left);
  const __m512d zero = _mm512_setzero_pd(), one = _mm512_set1_pd(1.0);
  const uint32_t at = q->next;
  w->dx = _mm512_mask_expandloadu_pd(w->dx, fr, q->dx + at);
  w->dy = _mm512_mask_expandloadu_pd(w->dy, fr, q->dy + at);
  w->jx = _mm512_mask_expandloadu_pd(w->jx, fr, q->jx + at);
  w->jy = _mm512_mask_expandloadu_pd(w->jy, fr, q->jy + at);
  w->id = _mm512_mask_expandloadu_pd(w->id, fr, q->id + at);
  q->next += (uint32_t)__builtin_popcount(fr);
  __mmask8 nx = _mm512_cmp_pd_mask(w->dx, zero, _CMP_LT_OQ);
  __mmask8 ny = _mm512_cmp_pd_mask(w->dy, zero, _CMP_LT_OQ);
  w->fsx = _mm512_mask_mov_pd(w->fsx, fr,
                              _mm512_mask_blend_pd(nx, one, _mm512_set1_pd(-1.0)));
  w->fsy = _mm512_mask_mov_pd(w->fsy, fr,
                              _mm512_mask_blend_pd(ny, one, _mm512_set1_pd(-1.0)));
  w->bxo = _mm512_mask_mov_pd(w->bxo, fr, _mm512_mask_blend_pd(nx, one, zero));
  w->byo = _mm512_mask_mov_pd(w->byo, fr, _mm512_mask_blend_pd(ny, one, zero));
  w->t = _mm512_mask_expandloadu_pd(w->t, fr, q->t0 + at);
  w->bx = _mm512_mask_mov_pd(w->bx, fr,
                             _mm512_add_pd(_mm512_set1_pd(q->c0x), w->bxo));
  w->by = _mm512_mask_mov_pd(w->by, fr,
                             _mm512_add_pd(_mm512_set1_pd(q->c0y), w->byo));
  w->idx = _mm512_mask_mov_pd(w->idx, fr, _mm512_set1_pd(q->idx0));
  /* Rays the float pass moved on start where it left them. */
  __mmask8 moved = _mm512_mask_cmp_pd_mask(fr, w->t, zero, _CMP_GT_OQ);
  if (moved) {
    __m512d bx, by, idx;
    wave_land(w, w->t, ox, oy, Wd, &bx, &by, &idx);
    w->bx = _mm512_mask_mov_pd(w->bx, moved, bx);
    w->by = _mm512_mask_mov_pd(w->by, moved, by);
    w->idx = _mm512_mask_mov_pd(w->idx, moved, idx);
  }
  w->live |= fr;
}

/* One iteration of every live lane; finished lanes write their range
 * [cells] (maxc = no return) to out[id]. */
AVX512_TARGET static inline void wave_step(wave8 *w, const uint8_t *F,
                                           __m512d ox, __m512d oy,
                                           __m512d Wd, __m512d maxc,
                                           double *out) {
  const __m512d zero = _mm512_setzero_pd();
  __m256i vi = _mm512_cvttpd_epi32(w->idx);
  __m256i g = _mm256_i32gather_epi32((const int *)(const void *)F, vi, 1);
  __m512d v = _mm512_cvtepi32_pd(_mm256_and_si256(g, _mm256_set1_epi32(0xff)));
  __mmask8 hit = _mm512_mask_cmp_pd_mask(w->live, v, zero, _CMP_EQ_OQ);
  /* the decode of the field's code: max((v - 1) / 4, v - 97) cells */
  __m512d safe = _mm512_max_pd(
      _mm512_fmadd_pd(v, _mm512_set1_pd(0.25), _mm512_set1_pd(-0.25)),
      _mm512_sub_pd(v, _mm512_set1_pd(97.0)));
  __m512d tx = _mm512_mul_pd(_mm512_sub_pd(w->bx, ox), w->jx);
  __m512d ty = _mm512_mul_pd(_mm512_sub_pd(w->by, oy), w->jy);
  __mmask8 xs = _mm512_cmp_pd_mask(tx, ty, _CMP_LT_OQ);
  __m512d te = _mm512_mask_blend_pd(xs, ty, tx);
  __m512d tj = _mm512_add_pd(w->t, safe);
  /* safe > 0: a jump always makes progress (a landing on a boundary can put
   * the next crossing behind t) */
  __mmask8 j = _mm512_mask_cmp_pd_mask(_mm512_cmp_pd_mask(safe, zero, _CMP_GT_OQ),
                                       tj, te, _CMP_GT_OQ);
  __m512d bxj, byj, lidx;
  wave_land(w, tj, ox, oy, Wd, &bxj, &byj, &lidx);
  __m512d nbx = _mm512_mask_blend_pd(
      j, _mm512_mask_add_pd(w->bx, xs, w->bx, w->fsx), bxj);
  __m512d nby = _mm512_mask_blend_pd(
      j, _mm512_mask_add_pd(w->by, (__mmask8)~xs, w->by, w->fsy), byj);
  __m512d estep = _mm512_mask_blend_pd(xs, _mm512_mul_pd(w->fsy, Wd), w->fsx);
  __m512d nidx = _mm512_mask_blend_pd(j, _mm512_add_pd(w->idx, estep), lidx);
  __m512d nt = _mm512_mask_blend_pd(j, te, tj);
  __mmask8 upd = w->live & (__mmask8)~hit;
  w->t = _mm512_mask_mov_pd(w->t, upd, nt);
  w->bx = _mm512_mask_mov_pd(w->bx, upd, nbx);
  w->by = _mm512_mask_mov_pd(w->by, upd, nby);
  w->idx = _mm512_mask_mov_pd(w->idx, upd, nidx);
  __mmask8 ov = _mm512_mask_cmp_pd_mask(upd, nt, maxc, _CMP_GE_OQ);
  __mmask8 fin = hit | ov;
  if (fin) {
    /* cell_entry of the hit cell, the same operations: the entry boundary
     * of an axis is bx - fsx (an integer), an axis never crossed is -inf */
    const __m512d ninf = _mm512_set1_pd(-INFINITY);
    __mmask8 zx = _mm512_cmp_pd_mask(w->dx, zero, _CMP_NEQ_OQ);
    __mmask8 zy = _mm512_cmp_pd_mask(w->dy, zero, _CMP_NEQ_OQ);
    __m512d ex = _mm512_mask_mul_pd(
        ninf, zx, _mm512_sub_pd(_mm512_sub_pd(w->bx, w->fsx), ox), w->jx);
    __m512d ey = _mm512_mask_mul_pd(
        ninf, zy, _mm512_sub_pd(_mm512_sub_pd(w->by, w->fsy), oy), w->jy);
    __m512d e = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(ex, ey, _CMP_GT_OQ),
                                     ey, ex);
    e = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(e, zero, _CMP_GT_OQ), zero, e);
    e = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(e, maxc, _CMP_LT_OQ), maxc, e);
    e = _mm512_mask_mov_pd(e, ov, maxc);
    _mm512_mask_i64scatter_pd(out, fin, _mm512_cvttpd_epi64(w->id), e, 8);
  }
  w->live &= (__mmask8)~fin;
}

AVX512_TARGET static void cast_cells_avx512(const pa_sim_model *m, double ox,
                                            double oy, const double *dxs,
                                            const double *dys, const double *jxs,
                                            const double *jys, const double *ids,
                                            const double *t0s, uint32_t n,
                                            double maxc, double *out) {
  wave_src q = {dxs, dys, jxs, jys, ids, t0s, 0, n, floor(ox), floor(oy), 0};
  q.idx0 = q.c0y * (double)m->march_w + q.c0x;
  const __m512d vox = _mm512_set1_pd(ox), voy = _mm512_set1_pd(oy);
  const __m512d Wd = _mm512_set1_pd((double)m->march_w);
  const __m512d vmax = _mm512_set1_pd(maxc);
  wave8 w[CAST_WAVES];
  memset(w, 0, sizeof w); /* no lane live; fill sets them up */
  for (int k = 0; k < CAST_WAVES; k++)
    w[k].idx = _mm512_set1_pd(q.idx0);
  for (;;) {
    __mmask8 any = 0;
#pragma GCC unroll 8
    for (int k = 0; k < CAST_WAVES; k++) {
      wave_fill(&w[k], &q, vox, voy, Wd);
      any |= w[k].live;
    }
    if (!any)
      break;
#pragma GCC unroll 8
    for (int k = 0; k < CAST_WAVES; k++)
      wave_step(&w[k], m->march, vox, voy, Wd, vmax, out);
  }
}

/* ---- the ray in single precision, with certified decisions ---------------
 * Three kernels, 16 float lanes each, take each ray as far as single
 * precision can be trusted:
 * - jump_f32: jumps by the safe step of the cell under the point while it
 *   is >= 1 cell (lockstep groups: short, even work). The float error of the
 *   point (< 0.003 cells with coordinates and ranges below FLOAT_PASS_MAX
 *   cells) stays inside the field's 0.02-cell slack, so everything up to the
 *   parameter reached is free.
 * - land_f32: the cell under the point where the jumps stopped, unless the
 *   point is within its error bound of a cell edge (a close call).
 * - walk_f32: crossings cell by cell from there, as the plain traversal
 *   takes them, until a blocked cell (the hit), range_max, or open space
 *   again (safe step >= 2 cells: back to jump_f32). A crossing is taken
 *   only when tx and ty are farther apart than their error bounds (and its
 *   parameter clear of range_max), so it is the choice the double traversal
 *   makes.
 * A close call hands the ray to the double pass from a parameter known to be
 * free. A hit's range is the hit cell's entry computed in double exactly as
 * cell_entry, so every result equals the plain traversal bit for bit. */
#define JUMP_GROUPS 6
#define FLOAT_PASS_MAX 16384.0
#define WALK_K (1.0f / 1048576.0f)  /* 2^-20: a crossing's error bound */
#define LAND_K (1.0f / 2097152.0f)  /* 2^-21: a point's */
#define WALK_OPEN 9                  /* codes >= this: back to jumping */
#define WALK_OPEN_ERR 0.004f         /* when t is known this well */
#define WALK_WAVES 2
enum { RAY_NONE = -1, RAY_DOUBLE = -2, RAY_JUMP = -3 }; /* else: hit cell */

/* Jumps rays [0, n) from t[i]; t[i] is updated. */
AVX512_TARGET static void jump_f32(const uint8_t *F, uint32_t W, float ox,
                                   float oy, const float *dxs,
                                   const float *dys, float *ts, uint32_t n,
                                   float maxc) {
  const __m512 vox = _mm512_set1_ps(ox), voy = _mm512_set1_ps(oy);
  const __m512 vmax = _mm512_set1_ps(maxc);
  const __m512i vW = _mm512_set1_epi32((int)W), ff = _mm512_set1_epi32(0xff);
  const __m512i jump = _mm512_set1_epi32(JUMP_CODE);
  for (uint32_t b = 0; b < n; b += 16 * JUMP_GROUPS) {
    __m512 dx[JUMP_GROUPS], dy[JUMP_GROUPS], t[JUMP_GROUPS];
    __mmask16 live[JUMP_GROUPS], lm[JUMP_GROUPS];
    for (int g = 0; g < JUMP_GROUPS; g++) {
      uint32_t at = b + 16 * (uint32_t)g;
      uint32_t k = at >= n ? 0 : n - at >= 16 ? 16 : n - at;
      lm[g] = live[g] = (__mmask16)((1u << k) - 1);
      dx[g] = _mm512_maskz_loadu_ps(lm[g], dxs + (at < n ? at : 0));
      dy[g] = _mm512_maskz_loadu_ps(lm[g], dys + (at < n ? at : 0));
      t[g] = _mm512_maskz_loadu_ps(lm[g], ts + (at < n ? at : 0));
    }
    for (;;) {
      __mmask16 any = 0;
#pragma GCC unroll 8
      for (int g = 0; g < JUMP_GROUPS; g++) {
        __m512 px = _mm512_fmadd_ps(t[g], dx[g], vox);
        __m512 py = _mm512_fmadd_ps(t[g], dy[g], voy);
        __m512i idx = _mm512_add_epi32(
            _mm512_mullo_epi32(_mm512_cvttps_epi32(py), vW),
            _mm512_cvttps_epi32(px));
        __m512i v = _mm512_and_si512(
            _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live[g], idx,
                                        (const void *)F, 1),
            ff);
        __mmask16 go = _mm512_mask_cmp_epi32_mask(live[g], v, jump, _MM_CMPINT_NLT);
        go = _mm512_mask_cmp_ps_mask(go, t[g], vmax, _CMP_LT_OQ);
        __m512 fv = _mm512_cvtepi32_ps(v);
        __m512 safe = _mm512_max_ps(
            _mm512_fmadd_ps(fv, _mm512_set1_ps(0.25f), _mm512_set1_ps(-0.25f)),
            _mm512_sub_ps(fv, _mm512_set1_ps(97.0f)));
        t[g] = _mm512_mask_add_ps(t[g], go, t[g], safe);
        live[g] = go;
        any |= go;
      }
      if (!any)
        break;
    }
    for (int g = 0; g < JUMP_GROUPS; g++) {
      uint32_t at = b + 16 * (uint32_t)g;
      if (at < n)
        _mm512_mask_storeu_ps(ts + at, lm[g], t[g]);
    }
  }
}

/* The cell under each ray's point at t[i] into cx, cy; close calls (and
 * points past range_max) get res[id] set and ok[i] = 0. */
AVX512_TARGET static void land_f32(float ox, float oy, const float *dxs,
                                   const float *dys, const float *ts,
                                   const int32_t *ids, uint32_t n,
                                   float maxc, int32_t c0x, int32_t c0y,
                                   int32_t *cx, int32_t *cy, int32_t *ok,
                                   int32_t *res, float *rt) {
  const __m512 vox = _mm512_set1_ps(ox), voy = _mm512_set1_ps(oy);
  const __m512 aox = _mm512_set1_ps(fabsf(ox)), aoy = _mm512_set1_ps(fabsf(oy));
  const __m512 K = _mm512_set1_ps(LAND_K), one = _mm512_set1_ps(1.0f);
  const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  const __m512 zero = _mm512_setzero_ps();
  const __m512 vfar = _mm512_set1_ps(maxc * (1.0f + WALK_K));
  for (uint32_t i = 0; i < n; i += 16) {
    __mmask16 lm = (__mmask16)(n - i >= 16 ? 0xffff : (1u << (n - i)) - 1);
    __m512 dx = _mm512_maskz_loadu_ps(lm, dxs + i);
    __m512 dy = _mm512_maskz_loadu_ps(lm, dys + i);
    __m512 t = _mm512_maskz_loadu_ps(lm, ts + i);
    __m512i id = _mm512_maskz_loadu_epi32(lm, ids + i);
    __m512 px = _mm512_fmadd_ps(t, dx, vox), py = _mm512_fmadd_ps(t, dy, voy);
    __m512 at = _mm512_and_ps(t, absmask);
    __m512 ex = _mm512_mul_ps(_mm512_add_ps(aox, _mm512_add_ps(at, at)), K);
    __m512 ey = _mm512_mul_ps(_mm512_add_ps(aoy, _mm512_add_ps(at, at)), K);
    __m512 fx = _mm512_sub_ps(px, _mm512_roundscale_ps(px, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
    __m512 fy = _mm512_sub_ps(py, _mm512_roundscale_ps(py, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
    __mmask16 origin = _mm512_mask_cmp_ps_mask(lm, t, zero, _CMP_EQ_OQ);
    __mmask16 close =
        _mm512_mask_cmp_ps_mask(lm, fx, ex, _CMP_LE_OQ) |
        _mm512_mask_cmp_ps_mask(lm, _mm512_sub_ps(one, fx), ex, _CMP_LE_OQ) |
        _mm512_mask_cmp_ps_mask(lm, fy, ey, _CMP_LE_OQ) |
        _mm512_mask_cmp_ps_mask(lm, _mm512_sub_ps(one, fy), ey, _CMP_LE_OQ);
    close = (__mmask16)(close & ~origin);
    __mmask16 far = _mm512_mask_cmp_ps_mask(lm, t, vfar, _CMP_GE_OQ);
    close = (__mmask16)(close & ~far);
    __m512i vcx = _mm512_mask_mov_epi32(_mm512_cvttps_epi32(px), origin,
                                        _mm512_set1_epi32(c0x));
    __m512i vcy = _mm512_mask_mov_epi32(_mm512_cvttps_epi32(py), origin,
                                        _mm512_set1_epi32(c0y));
    _mm512_mask_storeu_epi32(cx + i, lm, vcx);
    _mm512_mask_storeu_epi32(cy + i, lm, vcy);
    __mmask16 bad = (__mmask16)(close | far);
    _mm512_mask_storeu_epi32(ok + i, lm,
                             _mm512_mask_mov_epi32(_mm512_set1_epi32(1), bad,
                                                   _mm512_setzero_si512()));
    _mm512_mask_i32scatter_epi32(res, far, id, _mm512_set1_epi32(RAY_NONE), 4);
    _mm512_mask_i32scatter_epi32(res, close, id, _mm512_set1_epi32(RAY_DOUBLE), 4);
    _mm512_mask_i32scatter_ps(rt, close, id, t, 4);
  }
}

typedef struct walk16 {
  __m512 dx, dy, ix, iy, bxo, byo, t, tl, te;
  __m512i cx, cy, sx, sy, id;
  __mmask16 live, zx, zy;
} walk16;

typedef struct walk_src {
  const float *dx, *dy, *t;
  const int32_t *cx, *cy, *id;
  uint32_t next, n;
} walk_src;

AVX512_TARGET static inline void walk_fill(walk16 *w, walk_src *q) {
  __mmask16 fr = (__mmask16)~w->live;
  uint32_t left = q->n - q->next;
  if (!left || !fr)
    return;
  fr = (__mmask16)first_lanes(fr, left);
  const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
  const uint32_t at = q->next;
  w->dx = _mm512_mask_expandloadu_ps(w->dx, fr, q->dx + at);
  w->dy = _mm512_mask_expandloadu_ps(w->dy, fr, q->dy + at);
  w->t = _mm512_mask_expandloadu_ps(w->t, fr, q->t + at);
  w->cx = _mm512_mask_expandloadu_epi32(w->cx, fr, q->cx + at);
  w->cy = _mm512_mask_expandloadu_epi32(w->cy, fr, q->cy + at);
  w->id = _mm512_mask_expandloadu_epi32(w->id, fr, q->id + at);
  q->next += (uint32_t)__builtin_popcount(fr);
  __mmask16 nx = _mm512_cmp_ps_mask(w->dx, zero, _CMP_LT_OQ);
  __mmask16 ny = _mm512_cmp_ps_mask(w->dy, zero, _CMP_LT_OQ);
  __mmask16 zx = _mm512_cmp_ps_mask(w->dx, zero, _CMP_EQ_OQ);
  __mmask16 zy = _mm512_cmp_ps_mask(w->dy, zero, _CMP_EQ_OQ);
  w->zx = (__mmask16)((w->zx & ~fr) | (zx & fr));
  w->zy = (__mmask16)((w->zy & ~fr) | (zy & fr));
  w->ix = _mm512_mask_div_ps(w->ix, fr, one, w->dx);
  w->iy = _mm512_mask_div_ps(w->iy, fr, one, w->dy);
  w->sx = _mm512_mask_mov_epi32(w->sx, fr,
                                _mm512_mask_blend_epi32(nx, _mm512_set1_epi32(1),
                                                        _mm512_set1_epi32(-1)));
  w->sy = _mm512_mask_mov_epi32(w->sy, fr,
                                _mm512_mask_blend_epi32(ny, _mm512_set1_epi32(1),
                                                        _mm512_set1_epi32(-1)));
  w->bxo = _mm512_mask_mov_ps(w->bxo, fr, _mm512_mask_blend_ps(nx, one, zero));
  w->byo = _mm512_mask_mov_ps(w->byo, fr, _mm512_mask_blend_ps(ny, one, zero));
  w->tl = _mm512_mask_mov_ps(w->tl, fr, w->t);
  w->te = _mm512_mask_mov_ps(w->te, fr, zero);
  w->live |= fr;
}

AVX512_TARGET static inline void walk_step(walk16 *w, const uint8_t *F,
                                           __m512i vW, __m512 ox, __m512 oy,
                                           __m512 aox, __m512 aoy,
                                           __m512 maxc, int32_t *res,
                                           float *rt) {
  const __m512 K = _mm512_set1_ps(WALK_K);
  const __m512 big = _mm512_set1_ps(3e37f);
  const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  __m512i idx = _mm512_add_epi32(_mm512_mullo_epi32(w->cy, vW), w->cx);
  __m512i v = _mm512_and_si512(
      _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), w->live, idx,
                                  (const void *)F, 1),
      _mm512_set1_epi32(0xff));
  __mmask16 live = w->live;
  /* a blocked cell: the hit (this cell's index is the result) */
  __mmask16 hit = _mm512_mask_cmpeq_epi32_mask(live, v, _mm512_setzero_si512());
  /* open space again, with t known well enough: back to jumping */
  __mmask16 open = _mm512_mask_cmpge_epi32_mask(live, v, _mm512_set1_epi32(WALK_OPEN));
  open = _mm512_mask_cmp_ps_mask(open, w->te, _mm512_set1_ps(WALK_OPEN_ERR),
                                 _CMP_LT_OQ);
  __mmask16 wk = (__mmask16)(live & ~hit & ~open);
  __m512 bx = _mm512_add_ps(_mm512_cvtepi32_ps(w->cx), w->bxo);
  __m512 by = _mm512_add_ps(_mm512_cvtepi32_ps(w->cy), w->byo);
  __m512 tx = _mm512_mask_mov_ps(_mm512_mul_ps(_mm512_sub_ps(bx, ox), w->ix),
                                 w->zx, big);
  __m512 ty = _mm512_mask_mov_ps(_mm512_mul_ps(_mm512_sub_ps(by, oy), w->iy),
                                 w->zy, big);
  __m512 ex = _mm512_maskz_mul_ps(
      (__mmask16)~w->zx,
      _mm512_fmadd_ps(_mm512_and_ps(w->ix, absmask),
                      _mm512_add_ps(aox, _mm512_and_ps(bx, absmask)),
                      _mm512_and_ps(tx, absmask)),
      K);
  __m512 ey = _mm512_maskz_mul_ps(
      (__mmask16)~w->zy,
      _mm512_fmadd_ps(_mm512_and_ps(w->iy, absmask),
                      _mm512_add_ps(aoy, _mm512_and_ps(by, absmask)),
                      _mm512_and_ps(ty, absmask)),
      K);
  __mmask16 xs = _mm512_cmp_ps_mask(tx, ty, _CMP_LT_OQ);
  __m512 tn = _mm512_mask_blend_ps(xs, ty, tx);
  __m512 te = _mm512_mask_blend_ps(xs, ey, ex);
  __m512 gap = _mm512_and_ps(_mm512_sub_ps(tx, ty), absmask);
  __mmask16 close = _mm512_mask_cmp_ps_mask(wk, gap, _mm512_add_ps(ex, ey), _CMP_LE_OQ);
  __m512 dm = _mm512_and_ps(_mm512_sub_ps(tn, maxc), absmask);
  close |= _mm512_mask_cmp_ps_mask(wk, dm, _mm512_fmadd_ps(maxc, K, te), _CMP_LE_OQ);
  wk = (__mmask16)(wk & ~close);
  __mmask16 past = _mm512_mask_cmp_ps_mask(wk, tn, maxc, _CMP_GE_OQ);
  wk = (__mmask16)(wk & ~past);
  __mmask16 fin = (__mmask16)(hit | open | close | past);
  if (fin) {
    __m512i r = _mm512_mask_mov_epi32(_mm512_set1_epi32(RAY_NONE), hit, idx);
    r = _mm512_mask_mov_epi32(r, open, _mm512_set1_epi32(RAY_JUMP));
    r = _mm512_mask_mov_epi32(r, close, _mm512_set1_epi32(RAY_DOUBLE));
    _mm512_mask_i32scatter_epi32(res, fin, w->id, r, 4);
    __mmask16 keep_t = (__mmask16)(open | close);
    if (keep_t) /* open: from here; close: from the landing (t has an error) */
      _mm512_mask_i32scatter_ps(rt, keep_t, w->id,
                                _mm512_mask_mov_ps(w->t, close, w->tl), 4);
    w->live = (__mmask16)(w->live & ~fin);
  }
  w->t = _mm512_mask_mov_ps(w->t, wk, tn);
  w->te = _mm512_mask_mov_ps(w->te, wk, te);
  w->cx = _mm512_mask_add_epi32(w->cx, (__mmask16)(wk & xs), w->cx, w->sx);
  w->cy = _mm512_mask_add_epi32(w->cy, (__mmask16)(wk & ~xs), w->cy, w->sy);
}

AVX512_TARGET static void walk_f32(const pa_sim_model *m, float ox, float oy,
                                   walk_src *q, float maxc, int32_t *res,
                                   float *rt) {
  const __m512 vox = _mm512_set1_ps(ox), voy = _mm512_set1_ps(oy);
  const __m512 aox = _mm512_set1_ps(fabsf(ox)), aoy = _mm512_set1_ps(fabsf(oy));
  const __m512 vmax = _mm512_set1_ps(maxc);
  const __m512i vW = _mm512_set1_epi32((int)m->march_w);
  walk16 w[WALK_WAVES];
  memset(w, 0, sizeof w);
  for (;;) {
    __mmask16 any = 0;
#pragma GCC unroll 4
    for (int k = 0; k < WALK_WAVES; k++) {
      walk_fill(&w[k], q);
      any |= w[k].live;
    }
    if (!any)
      break;
#pragma GCC unroll 4
    for (int k = 0; k < WALK_WAVES; k++)
      walk_step(&w[k], m->march, vW, vox, voy, aox, aoy, vmax, res, rt);
  }
}

/* Rays i < n (padded grid, cell units) in single precision as far as it can
 * be trusted: res[i] = the hit cell's index, RAY_NONE (no return) or
 * RAY_DOUBLE (rt[i]: free up to there; the double pass goes on). */
AVX512_TARGET static void trace_f32(const pa_sim_model *m, double ox,
                                    double oy, const double *dxs,
                                    const double *dys, uint32_t n,
                                    double maxc, int32_t *res, float *rt) {
  enum { N = CAST_CHUNK }; /* n <= CAST_CHUNK: cast_many's chunks */
  float fdx[N], fdy[N], ft[N];
  int32_t cx[N], cy[N], id[N], ok[N];
  const float fox = (float)ox, foy = (float)oy, fmax = (float)maxc;
  const int32_t c0x = (int32_t)ox, c0y = (int32_t)oy;
  uint32_t a = 0; /* the active list: rays still to jump */
  for (uint32_t i = 0; i < n; i++) {
    fdx[a] = (float)dxs[i];
    fdy[a] = (float)dys[i];
    ft[a] = 0;
    id[a++] = (int32_t)i;
  }
  for (int round = 0; a > 0; round++) {
    if (round == 8) { /* grazing many corners: the double pass takes it */
      for (uint32_t i = 0; i < a; i++) {
        res[id[i]] = RAY_DOUBLE;
        rt[id[i]] = ft[i];
      }
      break;
    }
    jump_f32(m->march, m->march_w, fox, foy, fdx, fdy, ft, a, fmax);
    land_f32(fox, foy, fdx, fdy, ft, id, a, fmax, c0x, c0y, cx, cy, ok, res,
             rt);
    uint32_t b = 0; /* the landed ones walk */
    for (uint32_t i = 0; i < a; i++) {
      if (!ok[i])
        continue;
      fdx[b] = fdx[i];
      fdy[b] = fdy[i];
      ft[b] = ft[i];
      cx[b] = cx[i];
      cy[b] = cy[i];
      id[b++] = id[i];
    }
    walk_src q = {fdx, fdy, ft, cx, cy, id, 0, b};
    walk_f32(m, fox, foy, &q, fmax, res, rt);
    a = 0; /* those that reached open space jump again from there */
    for (uint32_t i = 0; i < b; i++) {
      if (res[id[i]] != RAY_JUMP)
        continue;
      fdx[a] = fdx[i];
      fdy[a] = fdy[i];
      ft[a] = rt[id[i]];
      id[a++] = id[i];
    }
  }
}

static bool avx512_ok(void) {
  static int ok = -1; /* racing threads compute the same answer */
  if (ok < 0) {
    __builtin_cpu_init();
    ok = __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl");
  }
  return ok;
}
#endif

static bool use_simd = true;

bool pa_sim_cast_simd(int on) {
  if (on >= 0)
    use_simd = on != 0;
#ifdef HAVE_AVX512_CASTER
  return use_simd && avx512_ok();
#else
  return false;
#endif
}

/* Several rays from one origin (results in cells, maxc = no return). */
static void cast_many(const pa_sim_model *m, double ox, double oy,
                      const double *dxs, const double *dys, uint32_t n,
                      double maxc, double *out) {
#ifdef HAVE_AVX512_CASTER
  const double pox = ox + 1.0, poy = oy + 1.0; /* padded, as cast_one */
  const double W = m->march_w, H = (double)m->grid.height + 2;
  /* indices in 32 bits; the origin's cell free */
  if (n >= 4 && use_simd && avx512_ok() && W * H < 2147483000.0 &&
      pox >= 0 && poy >= 0 && pox < W && poy < H &&
      m->march[(size_t)poy * m->march_w + (size_t)pox] != 0) {
    enum { CHUNK = CAST_CHUNK };
    double jx[CHUNK], jy[CHUNK], ids[CHUNK], t0[CHUNK];
    double cdx[CHUNK], cdy[CHUNK];
    const bool fpass = W <= FLOAT_PASS_MAX && H <= FLOAT_PASS_MAX &&
                       maxc <= FLOAT_PASS_MAX;
    for (uint32_t i0 = 0; i0 < n; i0 += CHUNK) {
      uint32_t k = n - i0 < CHUNK ? n - i0 : CHUNK;
      const double *dx = dxs + i0, *dy = dys + i0;
      int32_t res[CHUNK];
      if (fpass) {
        float rt[CHUNK];
        trace_f32(m, pox, poy, dx, dy, k, maxc, res, rt);
        const int64_t mw = m->march_w;
        for (uint32_t q = 0; q < k; q++) {
          if (res[q] >= 0) { /* the entry of the hit cell, in double */
            const double ix = dx[q] != 0 ? 1.0 / dx[q] : 0;
            const double iy = dy[q] != 0 ? 1.0 / dy[q] : 0;
            double e = cell_entry(pox, poy, ix, iy, dx[q], dy[q], res[q] % mw,
                                  res[q] / mw);
            out[i0 + q] = e < maxc ? e : maxc;
          } else if (res[q] == RAY_NONE) {
            out[i0 + q] = maxc;
          } else {
            t0[q] = rt[q];
          }
        }
      } else {
        for (uint32_t q = 0; q < k; q++) {
          res[q] = RAY_DOUBLE;
          t0[q] = 0;
        }
      }
      /* The rest go on exactly in double (ids keep their place in out). */
      uint32_t c = 0;
      for (uint32_t q = 0; q < k; q++) {
        if (res[q] != RAY_DOUBLE)
          continue;
        cdx[c] = dx[q]; /* as in cast_plain_cells */
        cdy[c] = dy[q];
        jx[c] = dx[q] != 0 ? 1.0 / dx[q] : 1e300;
        jy[c] = dy[q] != 0 ? 1.0 / dy[q] : 1e300;
        ids[c] = (double)q;
        t0[c] = t0[q];
        c++;
      }
      cast_cells_avx512(m, pox, poy, cdx, cdy, jx, jy, ids, t0, c, maxc,
                        out + i0);
    }
    return;
  }
#endif
  for (uint32_t i = 0; i < n; i++)
    out[i] = cast_one(m, ox, oy, dxs[i], dys[i], maxc);
}

static double cast_world(const pa_sim_model *m, double x, double y, double dx,
                         double dy, double range_max, bool march) {
  double gx, gy;
  to_grid(m, x, y, &gx, &gy);
  double gdx = m->cos_yaw * dx + m->sin_yaw * dy;
  double gdy = -m->sin_yaw * dx + m->cos_yaw * dy;
  double res = m->grid.resolution;
  double maxc = range_max / res;
  double t;
  if (march)
    cast_many(m, gx, gy, &gdx, &gdy, 1, maxc, &t);
  else
    t = cast_plain_cells(m, gx, gy, gdx, gdy, maxc);
  return t >= maxc ? range_max : t * res;
}

double pa_sim_cast_fast(const pa_sim_model *m, double x, double y, double dx,
                        double dy, double range_max) {
  return cast_world(m, x, y, dx, dy, range_max, true);
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
    for (uint32_t q = 0; q < k; q++) { /* as cast_world */
      gdx[q] = m->cos_yaw * dx[i0 + q] + m->sin_yaw * dy[i0 + q];
      gdy[q] = -m->sin_yaw * dx[i0 + q] + m->cos_yaw * dy[i0 + q];
    }
    cast_many(m, gx, gy, gdx, gdy, k, maxc, t);
    for (uint32_t q = 0; q < k; q++)
      out[i0 + q] = t[q] >= maxc ? range_max : t[q] * res;
  }
}

double pa_sim_cast_plain(const pa_sim_model *m, double x, double y, double dx,
                         double dy, double range_max) {
  return cast_world(m, x, y, dx, dy, range_max, false);
}

/* ---- ray casting against shapes ------------------------------------------ */

/* Ray (unit direction) vs circle: distance to the first crossing, 0 if the
 * origin is inside, INFINITY if missed. */
static inline double ray_circle(double ox, double oy, double dx, double dy,
                                double cx, double cy, double r) {
  double ex = ox - cx, ey = oy - cy;
  double b = ex * dx + ey * dy;
  double c = ex * ex + ey * ey - r * r;
  if (c <= 0)
    return 0;
  if (b > 0)
    return INFINITY;
  double disc = b * b - c;
  if (disc < 0)
    return INFINITY;
  return -b - sqrt(disc);
}

static inline double ray_box(double ox, double oy, double dx, double dy,
                             const pa_obstacle_info *o, double c, double s) {
  double ex = ox - o->x, ey = oy - o->y;
  double lx = c * ex + s * ey, ly = -s * ex + c * ey;
  double ldx = c * dx + s * dy, ldy = -s * dx + c * dy;
  double hx = 0.5 * o->size_x, hy = 0.5 * o->size_y;
  double t0 = -INFINITY, t1 = INFINITY;
  if (ldx != 0) {
    double a = (-hx - lx) / ldx, b = (hx - lx) / ldx;
    if (a > b) {
      double tmp = a;
      a = b;
      b = tmp;
    }
    t0 = a > t0 ? a : t0;
    t1 = b < t1 ? b : t1;
  } else if (lx < -hx || lx > hx) {
    return INFINITY;
  }
  if (ldy != 0) {
    double a = (-hy - ly) / ldy, b = (hy - ly) / ldy;
    if (a > b) {
      double tmp = a;
      a = b;
      b = tmp;
    }
    t0 = a > t0 ? a : t0;
    t1 = b < t1 ? b : t1;
  } else if (ly < -hy || ly > hy) {
    return INFINITY;
  }
  if (t0 > t1 || t1 < 0)
    return INFINITY;
  return t0 > 0 ? t0 : 0;
}

#define SCAN_CHUNK CAST_CHUNK /* beams cast together */

typedef struct scan_ctx {
  double x, y, c, s;       /* sensor pose */
  double theta;            /* [rad] */
  double inc;              /* [rad] */
  uint32_t beams;
  double range_max;
  const double *dx, *dy;   /* world beam directions */
  float *out;
  double far;              /* no body beyond this can change out[] */
} scan_ctx;

/* Beam index of an unwrapped window position (windows span < 3 turns). */
static inline uint32_t wrap_beam(int64_t q, int64_t n) {
  while (q < 0)
    q += n;
  while (q >= n)
    q -= n;
  return (uint32_t)q;
}

/* atan2 to within 2e-6 rad (a polynomial: this runs once per body per scan;
 * beam windows get a margin that covers the error). */
static inline double fast_atan2(double y, double x) {
  double ax = fabs(x), ay = fabs(y);
  double mn = ax < ay ? ax : ay, mx = ax < ay ? ay : ax;
  double a = mx > 0 ? mn / mx : 0, q = a * a;
  double r = a * (0.99997726 +
                  q * (-0.33262347 +
                       q * (0.19354346 +
                            q * (-0.11643287 +
                                 q * (0.05265332 + q * -0.01172120)))));
  if (ay > ax)
    r = M_PI_2 - r;
  if (x < 0)
    r = M_PI - r;
  return y < 0 ? -r : r;
}

/* Beam indices [k0, k1] (unwrapped, may run past either end) that can see a
 * body of bounding radius rb centred at (bx, by). */
static void shape_window(const scan_ctx *k, double bx, double by, double rb,
                         int64_t *k0, int64_t *k1) {
  double ex = bx - k->x, ey = by - k->y;
  double d = sqrt(ex * ex + ey * ey);
  if (d <= rb + 1e-9) { /* sensor inside the bound: every beam */
    *k0 = 0;
    *k1 = (int64_t)k->beams - 1;
    return;
  }
  /* half the angle it subtends (asin(rb / d)), + the atan error margin */
  double half = fast_atan2(rb, sqrt(d * d - rb * rb)) + 1e-5;
  /* angle of the body in the sensor frame, relative to angle_min = -pi */
  double phi = fast_atan2(ey, ex) - k->theta + M_PI;
  *k0 = (int64_t)ceil((phi - half) / k->inc) - 1;
  *k1 = (int64_t)floor((phi + half) / k->inc) + 1;
  if (*k1 - *k0 >= (int64_t)k->beams) {
    *k0 = 0;
    *k1 = (int64_t)k->beams - 1;
  }
}

static void scan_circle(const scan_ctx *k, double cx, double cy, double r) {
  double ex = cx - k->x, ey = cy - k->y;
  double lim = k->far + r;
  if (ex * ex + ey * ey >= lim * lim)
    return;
  int64_t k0, k1;
  shape_window(k, cx, cy, r, &k0, &k1);
  int64_t n = (int64_t)k->beams;
  for (int64_t q = k0; q <= k1; q++) {
    uint32_t i = wrap_beam(q, n);
    double t = ray_circle(k->x, k->y, k->dx[i], k->dy[i], cx, cy, r);
    if (t < (double)k->out[i])
      k->out[i] = (float)t;
  }
}

static void scan_box(const scan_ctx *k, const pa_obstacle_info *o) {
  double rb = obstacle_bound(o);
  double ex = o->x - k->x, ey = o->y - k->y;
  double lim = k->far + rb;
  if (ex * ex + ey * ey >= lim * lim)
    return;
  int64_t k0, k1;
  shape_window(k, o->x, o->y, rb, &k0, &k1);
  double c = cos(o->theta), s = sin(o->theta);
  int64_t n = (int64_t)k->beams;
  for (int64_t q = k0; q <= k1; q++) {
    uint32_t i = wrap_beam(q, n);
    double t = ray_box(k->x, k->y, k->dx[i], k->dy[i], o, c, s);
    if (t < (double)k->out[i])
      k->out[i] = (float)t;
  }
}

int pa_sim_int_scratch_init(pa_sim_scratch *k, uint32_t beam_cap) {
  memset(k, 0, sizeof *k);
  size_t n = beam_cap ? beam_cap : 1;
  k->beam_cos = calloc(n, sizeof(float));
  k->beam_sin = calloc(n, sizeof(float));
  k->dx = calloc(n, sizeof(double));
  k->dy = calloc(n, sizeof(double));
  if (!k->beam_cos || !k->beam_sin || !k->dx || !k->dy) {
    pa_sim_int_scratch_free(k);
    return -1;
  }
  return 0;
}

void pa_sim_int_scratch_free(pa_sim_scratch *k) {
  free(k->beam_cos);
  free(k->beam_sin);
  free(k->dx);
  free(k->dy);
  memset(k, 0, sizeof *k);
}

void pa_sim_scan(const pa_sim_model *m, pa_sim_state *s, uint32_t id,
                 float *out) {
  pa_sim_int_scan(m, s, id, out, s->scratch);
}

/* The beam direction table of the scratch for this beam count. */
static void beam_table(pa_sim_scratch *sc, uint32_t beams) {
  if (sc->beam_table_n == beams)
    return;
  double inc = 2.0 * M_PI / beams;
  for (uint32_t i = 0; i < beams; i++) {
    double a = -M_PI + inc * i;
    sc->beam_cos[i] = (float)cos(a);
    sc->beam_sin[i] = (float)sin(a);
  }
  sc->beam_table_n = beams;
}

static uint32_t scan_beams(const pa_sim_model *m, const pa_robot_info *ri) {
  return ri->laser_beams > m->beam_cap ? m->beam_cap : ri->laser_beams;
}

void pa_sim_int_scan_at(const pa_sim_model *m, const pa_sim_state *s,
                        uint32_t id, pa_sim_scan_at *a) {
  const pa_robot_state *r = &s->rs[id];
  a->id = id;
  a->beams = scan_beams(m, &s->info[id]);
  a->x = r->x;
  a->y = r->y;
  a->theta = r->theta;
  a->c = cos(r->theta);
  a->s = sin(r->theta);
  to_grid(m, r->x, r->y, &a->gx, &a->gy);
  a->gc = m->cos_yaw * a->c + m->sin_yaw * a->s;
  a->gs = -m->sin_yaw * a->c + m->cos_yaw * a->s;
}

void pa_sim_int_scan_walls(const pa_sim_model *m, const pa_sim_state *s,
                           const pa_sim_scan_at *a, float *out,
                           pa_sim_scratch *sc, uint32_t b0, uint32_t b1) {
  const pa_robot_info *ri = &s->info[a->id];
  uint32_t beams = a->beams;
  if (b1 > beams)
    b1 = beams;
  beam_table(sc, beams);
  double rmax = ri->laser_range_max;
  double res = m->grid.resolution, maxc = rmax / res;
  const double gc = a->gc, gs = a->gs;
  /* Without noise the finish's clamp to range_min can come first (it
   * commutes with taking the nearer body), here on the casting threads. */
  const float lo = ri->laser_noise > 0 ? 0.0f : ri->laser_range_min;
  const float *bc = sc->beam_cos, *bs = sc->beam_sin;
  for (uint32_t i0 = b0; i0 < b1; i0 += SCAN_CHUNK) {
    uint32_t nb = b1 - i0 < SCAN_CHUNK ? b1 - i0 : SCAN_CHUNK;
    double bdx[SCAN_CHUNK], bdy[SCAN_CHUNK], bt[SCAN_CHUNK];
    for (uint32_t q = 0; q < nb; q++) {
      bdx[q] = gc * bc[i0 + q] - gs * bs[i0 + q];
      bdy[q] = gs * bc[i0 + q] + gc * bs[i0 + q];
    }
    cast_many(m, a->gx, a->gy, bdx, bdy, nb, maxc, bt);
    for (uint32_t q = 0; q < nb; q++) {
      float v = bt[q] >= maxc ? (float)rmax : (float)(bt[q] * res);
      out[i0 + q] = v < lo ? lo : v;
    }
  }
}

void pa_sim_int_scan(const pa_sim_model *m, const pa_sim_state *s,
                     uint32_t id, float *out, pa_sim_scratch *sc) {
  pa_sim_scan_at a;
  pa_sim_int_scan_at(m, s, id, &a);
  pa_sim_int_scan_walls(m, s, &a, out, sc, 0, UINT32_MAX);
  pa_sim_int_scan_finish(m, s, &a, out, sc);
}

void pa_sim_int_scan_finish(const pa_sim_model *m, const pa_sim_state *s,
                            const pa_sim_scan_at *a, float *out,
                            pa_sim_scratch *sc) {
  const uint32_t id = a->id;
  const pa_robot_info *ri = &s->info[id];
  uint64_t *rng = &s->rs[id].rng; /* the robot's own: no other scan uses it */
  uint32_t beams = a->beams;
  double rmax = ri->laser_range_max, rmin = ri->laser_range_min;
  double sigma = ri->laser_noise;
  bool others = s->robot_count > 1 && !s->ghosts; /* robots in its scan */
  bool bodies = s->obstacle_count > 0 || others;
  if (!bodies && sigma == 0)
    return; /* the walls clamped already; nothing else to do */
  scan_ctx k = {a->x, a->y, a->c, a->s, a->theta, 2.0 * M_PI / beams,
                beams, rmax, sc->dx, sc->dy, out, rmax};
  float far = 0; /* the farthest wall return */
  if (bodies) {
    /* World beam directions: only bodies (obstacles, robots) use them. */
    beam_table(sc, beams);
    const float *bc = sc->beam_cos, *bs = sc->beam_sin;
    for (uint32_t i = 0; i < beams; i++) {
      sc->dx[i] = k.c * bc[i] - k.s * bs[i];
      sc->dy[i] = k.s * bc[i] + k.c * bs[i];
    }
    /* Four chains: a single one waits on each comparison. */
    float fm[4] = {0, 0, 0, 0};
    uint32_t i4 = beams & ~3u;
    for (uint32_t i = 0; i < i4; i += 4)
      for (int j = 0; j < 4; j++)
        fm[j] = out[i + j] > fm[j] ? out[i + j] : fm[j];
    for (uint32_t i = i4; i < beams; i++)
      fm[0] = out[i] > fm[0] ? out[i] : fm[0];
    for (int j = 0; j < 4; j++)
      far = fm[j] > far ? fm[j] : far;
  }
  /* Obstacles and other robots: only the beams their bounds subtend, and
   * only bodies nearer than the farthest wall return (+ rounding slack). */
  k.far = (double)far + 1e-6;
  for (uint32_t i = 0; i < s->obstacle_count; i++) {
    const pa_obstacle_info *o = &s->obs[i];
    if (!o->active)
      continue;
    if (o->shape == PA_SHAPE_CIRCLE)
      scan_circle(&k, o->x, o->y, o->radius);
    else
      scan_box(&k, o);
  }
  const pa_sim_hash *h = &s->lhash;
  /* + the largest robot radius (bucketed by centre) */
  int64_t span = h->valid ? (int64_t)ceil((rmax + h->rmax) / h->cell) : 0;
  if (!others) {
  } else if (h->valid &&
             (2 * span + 1) * (2 * span + 1) < (int64_t)s->robot_count) {
    int64_t cx = (int64_t)floor(a->x / h->cell);
    int64_t cy = (int64_t)floor(a->y / h->cell);
    /* Only buckets that can hold a centre within far + rmax (scan_circle
     * drops any body beyond far + its radius anyway). */
    int64_t fspan = (int64_t)ceil((k.far + h->rmax) / h->cell) + 1; /* +1: rounding */
    if (fspan < span)
      span = fspan;
    /* Buckets can alias; a robot seen twice just intersects twice. */
    for (int64_t j = cy - span; j <= cy + span; j++)
      for (int64_t i = cx - span; i <= cx + span; i++) {
        uint32_t key = pa_sim_int_hash_key(h, i, j);
        for (uint32_t p = h->start[key]; p < h->start[key + 1]; p++) {
          /* aliased bucket: its own cell visits it */
          if (h->icx[p] != i || h->icy[p] != j || h->items[p] == id)
            continue;
          scan_circle(&k, h->ix[p], h->iy[p], h->ir[p]);
        }
      }
  } else {
    for (uint32_t o = 0; o < s->robot_count; o++)
      if (o != id && s->info[o].active)
        scan_circle(&k, s->rs[o].x, s->rs[o].y, s->info[o].radius);
  }
  /* Clamp and noise: only returns get noise; no return stays range_max. */
  for (uint32_t i = 0; i < beams; i++) {
    double v = out[i];
    if (v >= rmax) {
      out[i] = (float)rmax;
      continue;
    }
    if (sigma > 0)
      v += sigma * pa_sim_rng_normal(rng);
    if (v < rmin)
      v = rmin;
    if (v > rmax)
      v = rmax;
    out[i] = (float)v;
  }
}
