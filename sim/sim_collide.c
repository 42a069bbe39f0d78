/* sim_collide.c - clearance of discs (collisions): the distance to walls,
 * obstacles and other robots, and the robots' broad phase. */
#define _GNU_SOURCE
#include "sim_geom_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    n->bx = gx < (double)i         ? (double)i
            : gx > (double)(i + 1) ? (double)(i + 1)
                                   : gx;
    n->by = gy < (double)j         ? (double)j
            : gy > (double)(j + 1) ? (double)(j + 1)
                                   : gy;
  }
}

/* Fills memo's rows for column cx: rows [y0, y1] and the span [x0, x1]
 * with 2 cells to spare on each side where the grid and the memo allow
 * (0 <= x0 <= cx <= x1 < width, 0 <= y0 <= y1 < height). False (memo
 * emptied) if they do not fit. */
static bool memo_fill(const pa_sim_model *m, pa_sim_wall_memo *w, int64_t cx,
                      int64_t x0, int64_t x1, int64_t y0, int64_t y1) {
  const int64_t GW = m->grid.width, GH = m->grid.height;
  int64_t lo = x0 - 2 < 0 ? 0 : x0 - 2, hi = x1 + 2 >= GW ? GW - 1 : x1 + 2;
  int64_t r0 = y0 - 2 < 0 ? 0 : y0 - 2, r1 = y1 + 2 >= GH ? GH - 1 : y1 + 2;
  if (r1 - r0 >= PA_SIM_MEMO_ROWS)
    r1 = r0 + PA_SIM_MEMO_ROWS - 1;
  w->rows = 0;
  if (r1 < y1 || cx - lo > 120 || hi - cx > 120)
    return false;
  for (int64_t j = r0; j <= r1; j++) {
    int64_t k = j - r0;
    w->left[k] = (int8_t)(row_blocked_left(m, j, cx, lo) - cx);
    w->right[k] =
        (int8_t)((cx < hi ? row_blocked_right(m, j, cx + 1, hi) : hi + 1) - cx);
    if (cx - 1 >= lo && cell_blocked(m, cx - 1, j))
      w->west |= 1u << k;
    else
      w->west &= ~(1u << k);
  }
  w->map = m->blocked;
  w->cx = (int32_t)cx;
  w->lo = (int32_t)lo;
  w->hi = (int32_t)hi;
  w->y0 = (int32_t)r0;
  w->rows = (int32_t)(r1 - r0 + 1);
  return true;
}

void pa_sim_int_walls_forget(pa_sim_state *s) {
  for (uint32_t i = 0; i < s->cap_robots; i++) {
    s->motion[i].walls.rows = 0;
    s->motion[i].faces.map = NULL;
    s->motion[i].faces.cmap = NULL;
  }
}

/* Cells [xs, xs + w) of row j as bits (bit t: cell xs + t blocked; outside
 * the grid blocked), w < 64. */
static uint64_t row_window(const pa_sim_model *m, int64_t j, int64_t xs,
                           int w) {
  const uint64_t all = (1ull << w) - 1;
  const int64_t GW = m->grid.width;
  if (j < 0 || j >= (int64_t)m->grid.height)
    return all;
  if (xs >= 0 && xs + w <= GW) {
    const uint64_t *row = m->blocked + (size_t)j * m->blocked_words;
    int64_t wi = xs >> 6, sh = xs & 63;
    uint64_t b = row[wi] >> sh;
    if (sh + w > 64)
      b |= row[wi + 1] << (64 - sh);
    return b & all;
  }
  uint64_t b = 0;
  for (int t = 0; t < w; t++)
    if (cell_blocked(m, xs + t, j))
      b |= 1ull << t;
  return b;
}

/* Fills wc with the faces of the cells around (cx, cy), h cells each way
 * (with a ring of cells more, for the faces on the box's sides). */
static void faces_fill(const pa_sim_model *m, pa_sim_wall_cache *wc, int64_t cx,
                       int64_t cy, int64_t h) {
  wc->map = m->blocked;
  wc->x0 = (int32_t)(cx - h);
  wc->x1 = (int32_t)(cx + h);
  wc->y0 = (int32_t)(cy - h);
  wc->y1 = (int32_t)(cy + h);
  wc->n = 0;
  wc->vert = 0;
  wc->nk = -1;
  const int64_t xs = cx - h - 1, ys = cy - h - 1; /* the ring's corner */
  const int w = (int)(2 * h + 3);                 /* cells xs .. xs + w - 1 */
  int32_t open[64];
  uint64_t prev_v = 0, prev_b = 0;
  for (int64_t j = cy - h - 1; j <= cy + h + 2; j++) {
    /* the sentinel row cy + h + 2 closes the vertical runs */
    uint64_t b = j <= cy + h + 1 ? row_window(m, j, xs, w) : 0;
    uint64_t v = j <= cy + h + 1 ? (b ^ (b >> 1)) & ((1ull << (w - 1)) - 1)
                                 : 0; /* bit t: x = xs + t + 1 */
    for (uint64_t e = prev_v & ~v; e; e &= e - 1) {
      int t = __builtin_ctzll(e);
      if (wc->n == PA_SIM_WALL_SEGS)
        goto full;
      wc->vert |= 1u << wc->n;
      wc->line[wc->n] = (int8_t)(t + 1);
      wc->lo[wc->n] = (int8_t)(open[t] - ys);
      wc->hi[wc->n++] = (int8_t)(j - ys);
    }
    for (uint64_t st = v & ~prev_v; st; st &= st - 1)
      open[__builtin_ctzll(st)] = (int32_t)j;
    prev_v = v;
    if (j > cy - h - 1 && j <= cy + h + 1) { /* line y = j */
      uint64_t hz = prev_b ^ b;
      uint64_t starts = hz & ~(hz << 1), ends = hz & ~(hz >> 1);
      while (starts) {
        int a = __builtin_ctzll(starts), z = __builtin_ctzll(ends);
        if (wc->n == PA_SIM_WALL_SEGS)
          goto full;
        wc->line[wc->n] = (int8_t)(j - ys);
        wc->lo[wc->n] = (int8_t)a;
        wc->hi[wc->n++] = (int8_t)(z + 1);
        starts &= starts - 1;
        ends &= ends - 1;
      }
    }
    prev_b = b;
  }
  return;
full:
  wc->n = -1;
}

/* Keeps a clearance found at (x, y) [m] if it reaches farther than the one
 * kept (less 1 nm for rounding). */
static inline void clear_note(const pa_sim_model *m, pa_sim_wall_cache *wc,
                              double x, double y, double clear) {
  clear -= 1e-9;
  if (wc->cmap == m->blocked) {
    double ex = x - wc->cx, ey = y - wc->cy;
    double left = wc->clear - sqrt(ex * ex + ey * ey);
    if (left >= clear)
      return;
  }
  wc->cmap = m->blocked;
  wc->cx = x;
  wc->cy = y;
  wc->clear = clear;
}

/* What the faces nearby say of a free point's distance to the blocked
 * cells within reach. */
typedef enum faces_say {
  FACES_ASK_ROWS, /* nothing: too many faces here, a box too big for its
                   * rows, the point on a face, or nothing within reach for
                   * an exact question (the row scan's value then is its
                   * window's nearest cell, kept by a clearance) */
  FACES_EXACT,    /* the distance (squared) and the nearest point */
  FACES_WITHIN,   /* any: one face within reach (a distance to it) */
  FACES_CLEAR,    /* nothing within reach (a lower bound of the distance,
                   * squared) */
} faces_say;

/* The smaller of two numbers (no NaN here: no libm call). */
static inline double min2(double a, double b) { return b < a ? b : a; }

/* Face k's squared distance [cells^2] from (gx, gy) and its point nearest
 * to it (px, py). */
static inline double face_dist2(const pa_sim_wall_cache *wc, int32_t k,
                                double gx, double gy, double *px, double *py) {
  const int32_t ox = wc->x0 - 1, oy = wc->y0 - 1; /* the offsets' origin */
  bool v = (wc->vert >> k) & 1;
  int32_t ol = v ? ox : oy, os = v ? oy : ox; /* line, span */
  double line = ol + wc->line[k], lo = os + wc->lo[k], hi = os + wc->hi[k];
  double a = v ? gx : gy, b = v ? gy : gx; /* across, along the line */
  double da = line - a, db = b < lo ? lo - b : b > hi ? b - hi : 0;
  double nb = b < lo ? lo : b > hi ? hi : b;
  *px = v ? line : nb;
  *py = v ? nb : line;
  return da * da + db * db;
}

/* The faces of point (gx, gy) in cell (cx, cy), whose window of reach
 * [m] must lie in wc's box (refilled around the cell otherwise). Near the
 * point of the last full look, the face nearest there answers alone when
 * the others are provably farther (the same answer as all of them: the
 * nearest, or none, within reach). */
static faces_say faces_nearest(const pa_sim_model *m, pa_sim_wall_cache *wc,
                               double gx, double gy, int64_t cx, int64_t cy,
                               double reach, bool any, double *d2, double *bx,
                               double *by) {
  /* rc only sizes the box and filters: 1 / res as to_grid's (one division) */
  const double res = m->grid.resolution, rc = reach * (1.0 / res);
  if (wc->map != m->blocked || pa_sim_ifloor(gx - rc) < wc->x0 ||
      pa_sim_ifloor(gx + rc) > wc->x1 || pa_sim_ifloor(gy - rc) < wc->y0 ||
      pa_sim_ifloor(gy + rc) > wc->y1) {
    int64_t h = (int64_t)rc + 4;
    if (h > 30)
      return FACES_ASK_ROWS;
    faces_fill(m, wc, cx, cy, h);
  }
  if (wc->n < 0)
    return FACES_ASK_ROWS;
  double best = INFINITY, px = 0, py = 0, rest = 0;
  bool one = false; /* face nk alone decides */
  if (wc->nk >= 0) {
    /* every other face at least rest [cells] away (less 1e-7 for
     * rounding: coordinates stay below 1e5 cells) */
    double ex = gx - wc->fx, ey = gy - wc->fy;
    rest = wc->frest - sqrt(ex * ex + ey * ey) - 1e-7;
    best = face_dist2(wc, wc->nk, gx, gy, &px, &py);
    bool near = best < 0.9999 * rc * rc ||
                (best < 1.0001 * rc * rc && sqrt(best) * res < reach);
    one = any ? near || (rest > 0 && rest * res >= reach)
              : rest > 0 && rest * rest > best;
  }
  if (!one) { /* all of them, noting the nearest and the next */
    double next = INFINITY;
    int32_t kb = -1;
    best = INFINITY;
    for (int32_t k = 0; k < wc->n; k++) {
      double qx, qy, e = face_dist2(wc, k, gx, gy, &qx, &qy);
      if (e < best) {
        next = best;
        best = e;
        kb = k;
        px = qx;
        py = qy;
      } else if (e < next) {
        next = e;
      }
    }
    wc->nk = kb;
    wc->fx = gx;
    wc->fy = gy;
    wc->frest = sqrt(next);
    rest = wc->frest;
  }
  /* within reach as the rows decide it: d [m] < reach */
  if (any && (best < 0.9999 * rc * rc ||
              (best < 1.0001 * rc * rc && sqrt(best) * res < reach))) {
    *d2 = best;
    return FACES_WITHIN;
  }
  if (!(sqrt(best) * res < reach)) {
    if (!any)
      return FACES_ASK_ROWS;
    /* every blocked cell is at least as far as the nearest face or, when
     * outside the box, as the box's side: *d2 then bounds the clearance */
    double side = min2(min2(gx - wc->x0, wc->x1 + 1 - gx),
                       min2(gy - wc->y0, wc->y1 + 1 - gy));
    *d2 = min2(min2(best, rest * rest), side * side);
    return FACES_CLEAR;
  }
  if (!(best > 1e-24))
    return FACES_ASK_ROWS;
  *d2 = best;
  *bx = px;
  *by = py;
  return FACES_EXACT;
}

/* The march field's bound [m] of a free point's distance to the walls
 * (clear >= safe + sqrt 2: clear - 1/sqrt 2 - |offset from centre|), when
 * it reaches reach. */
static inline bool march_bound(const pa_sim_model *m, double gx, double gy,
                               int64_t cx, int64_t cy, double reach,
                               double *bound) {
  const double res = m->grid.resolution;
  uint8_t v = m->march[(size_t)(cy + 1) * m->march_w + (size_t)cx + 1];
  double top = m->march_safe[v] + 0.70710; /* the bound at the centre */
  if (!(v >= 2 && top * res >= reach))     /* else the bound is short anyway */
    return false;
  double ox = gx - ((double)cx + 0.5), oy = gy - ((double)cy + 0.5);
  double b = top - sqrt(ox * ox + oy * oy);
  *bound = b * res;
  return b * res >= reach; /* code 1: clear may be < sqrt 2 */
}

static double wall_rows(const pa_sim_model *m, double gx, double gy, int64_t cx,
                        int64_t cy, double reach, double *nx, double *ny,
                        bool any, pa_sim_wall_memo *memo);

/* The distance to the nearest blocked cell region within reach (see
 * pa_sim_int_wall_clearance); any = a yes/no question (is it below reach?):
 * rows nearest first, returning as soon as one value is below reach (the
 * normal is then not set). Without an early exit both orders give the same
 * minimum. memo (or NULL): one robot's memory of the walls near it: its
 * blocked cell near[] is tried first when any (one cell within reach
 * decides the question; any value below reach is as good an answer) and set
 * to the cell found nearest; its rows stand in for the row searches (the
 * same cells: the nearest on each side of the point's column). */
static inline double wall_dist(const pa_sim_model *m, double x, double y,
                               double reach, double *nx, double *ny, bool any,
                               pa_sim_wall_memo *memo, pa_sim_wall_cache *wc) {
  double gx, gy;
  to_grid(m, x, y, &gx, &gy);
  double res = m->grid.resolution;
  int64_t cx = pa_sim_ifloor(gx), cy = pa_sim_ifloor(gy);
  /* A point within the clearance last noted is in a free cell: its march
   * byte (often a cache miss) is then read only if the faces cannot say. */
  bool known_free = false;
  if (wc && wc->cmap == m->blocked) {
    double ex = x - wc->cx, ey = y - wc->cy;
    known_free = wc->clear > 0 && ex * ex + ey * ey < wc->clear * wc->clear;
  }
  if (known_free || !cell_blocked(m, cx, cy)) {
    double bound;
    if (!known_free && march_bound(m, gx, gy, cx, cy, reach, &bound)) {
      if (wc)
        clear_note(m, wc, x, y, bound);
      return bound;
    }
    /* Near a wall: the nearest face of the robot's walls nearby (when
     * within reach, the march bound above is short: the same answer). */
    double d2 = 0, bx = 0, by = 0;
    faces_say say =
        wc ? faces_nearest(m, wc, gx, gy, cx, cy, reach, any, &d2, &bx, &by)
           : FACES_ASK_ROWS;
    if (say == FACES_WITHIN)
      return sqrt(d2) * res;
    if (say == FACES_CLEAR) { /* no blocked cell within reach */
      double d = sqrt(d2) * res;
      clear_note(m, wc, x, y, d > reach ? d : reach);
      return reach + res;
    }
    if (say == FACES_EXACT) {
      double d = sqrt(d2);
      clear_note(m, wc, x, y, d * res);
      if (nx && ny) {
        double ex = (gx - bx) / d, ey = (gy - by) / d;
        *nx = m->cos_yaw * ex - m->sin_yaw * ey;
        *ny = m->sin_yaw * ex + m->cos_yaw * ey;
      }
      return d * res;
    }
    if (known_free && march_bound(m, gx, gy, cx, cy, reach, &bound)) {
      clear_note(m, wc, x, y, bound);
      return bound;
    }
  }
  return wall_rows(m, gx, gy, cx, cy, reach, nx, ny, any, memo);
}

/* wall_dist's rows (the point's cell blocked, or the faces and the march
 * field could not say): out of line, so that the common answers above
 * keep a small frame. */
static __attribute__((noinline)) double
wall_rows(const pa_sim_model *m, double gx, double gy, int64_t cx, int64_t cy,
          double reach, double *nx, double *ny, bool any,
          pa_sim_wall_memo *memo) {
  const double res = m->grid.resolution;
  const int64_t GW = m->grid.width, GH = m->grid.height;
  int32_t *near = memo ? memo->near : NULL;
  if (any && near && near[0] >= 0 && near[0] < GW && near[1] >= 0 &&
      near[1] < GH && cell_blocked(m, near[0], near[1])) {
    /* The same value as the scan below gives this cell: the cell is then
     * inside its window (a whole cell beyond reach on each side). */
    double ddx = span_gap(gx, near[0]), ddy = span_gap(gy, near[1]);
    double d = sqrt(ddx * ddx + ddy * ddy);
    if (d * res < reach)
      return d * res;
  }
  /* Exact: nearest point of every blocked cell within reach. */
  double rc = reach / res + 1.0;
  int64_t x0 = pa_sim_ifloor(gx - rc), x1 = pa_sim_ifloor(gx + rc);
  int64_t y0 = pa_sim_ifloor(gy - rc), y1 = pa_sim_ifloor(gy + rc);
  nearest_cell n = {INFINITY, 0, 0, 0, 0};
  if (x0 >= 0 && y0 >= 0 && x1 < GW && y1 < GH && cx - x0 < 255 &&
      x1 - cx < 255) {
    /* Inside the grid: per row only the nearest blocked cell on each side
     * of the point can be the row's nearest (the runs), found in the same
     * order and with the same ties as the loop below (smallest j, then i). */
    const int64_t cyc = cy < y0 ? y0 : cy > y1 ? y1 : cy;
    /* The memo's rows when they cover this window for this column. */
    const pa_sim_wall_memo *w = NULL;
    if (memo) {
      if (memo->rows > 0 && memo->map == m->blocked && memo->cx == cx &&
          memo->lo <= x0 && x1 <= memo->hi && memo->y0 <= y0 &&
          y1 < memo->y0 + memo->rows)
        w = memo;
      else if (memo_fill(m, memo, cx, x0, x1, y0, y1))
        w = memo;
    }
    for (int64_t q = 0; q <= 2 * (y1 - y0) + 1; q++) {
      /* any: cyc, cyc + 1, cyc - 1, cyc + 2, ... within [y0, y1] */
      int64_t j = !any ? y0 + q : (q & 1) ? cyc + (q + 1) / 2 : cyc - q / 2;
      if (j < y0 || j > y1)
        continue;
      double ddy = span_gap(gy, j);
      if (ddy * ddy >= n.best)
        continue;
      int64_t cand[2], nc = 0, il, ir = x1 + 1;
      bool west; /* cell (cx - 1, j) is blocked (asked only if cx - 1 >= x0) */
      if (w) {   /* the nearest in a wider span: in [x0, x1] or none there */
        int64_t k = j - w->y0;
        il = cx + w->left[k];
        ir = cx + w->right[k];
        west = (w->west >> k) & 1;
      } else {
        il = row_blocked_left(m, j, cx, x0);
        west = il == cx && gx == (double)cx && cx - 1 >= x0 &&
               cell_blocked(m, cx - 1, j);
      }
      bool cb = il == cx; /* the point's own cell */
      /* a point on the line between two blocked cells: the lower i first */
      if (cb && gx == (double)cx && cx - 1 >= x0 && west)
        il = cx - 1;
      if (il >= x0)
        cand[nc++] = il;
      if (!cb) {
        if (!w)
          ir = row_blocked_right(m, j, cx + 1, x1);
        if (ir <= x1)
          cand[nc++] = ir;
      }
      for (int64_t k = 0; k < nc; k++) {
        int64_t i = cand[k];
        nearest_consider(&n, i, j, gx, gy, ddy);
        if (any && n.best < INFINITY && sqrt(n.best) * res < reach) {
          if (near) {
            near[0] = (int32_t)n.cx;
            near[1] = (int32_t)n.cy;
          }
          return sqrt(n.best) * res;
        }
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
  if (near && n.cx >= 0 && n.cx < GW && n.cy >= 0 && n.cy < GH) {
    near[0] = (int32_t)n.cx;
    near[1] = (int32_t)n.cy;
  }
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

double pa_sim_int_wall_clearance(const pa_sim_model *m, double x, double y,
                                 double reach, double *nx, double *ny) {
  return wall_dist(m, x, y, reach, nx, ny, false, NULL, NULL);
}

static double bodies_clearance(const pa_sim_state *s, uint32_t skip, double x,
                               double y, double best, double wnx, double wny,
                               double *nx, double *ny, bool robots,
                               const pa_sim_near *nb);

/* The sign test of pa_sim_int_clearance(margin 0) >= 0, with early exits
 * (its best only decreases: once below r, the answer is known). */
bool pa_sim_int_free(const pa_sim_model *m, const pa_sim_state *s,
                     uint32_t skip, double x, double y, double r, bool robots) {
  return pa_sim_int_free_near(m, s, skip, x, y, r, robots, NULL);
}

bool pa_sim_int_free_near(const pa_sim_model *m, const pa_sim_state *s,
                          uint32_t skip, double x, double y, double r,
                          bool robots, pa_sim_wall_memo *memo) {
  double wall = wall_dist(m, x, y, r, NULL, NULL, true, memo, NULL);
  if (wall < r)
    return false;
  return bodies_clearance(s, skip, x, y, wall, 0, 0, NULL, NULL, robots, NULL) -
             r >=
         0;
}

/* Whether the face nearest at the robot's last full look at its walls
 * nearby lies well within r [m] of (x, y): a blocked cell then does (the
 * face is one of its sides), so every path of wall_dist answers below r. A
 * robot pressing a wall asks this of its first test every tick. */
static inline bool face_within(const pa_sim_model *m,
                               const pa_sim_wall_cache *wc, double x, double y,
                               double r) {
  if (wc->map != m->blocked || wc->n <= 0 || wc->nk < 0)
    return false;
  double gx, gy, px, py;
  to_grid(m, x, y, &gx, &gy);
  double rc = r * (1.0 / m->grid.resolution);
  double d2 = face_dist2(wc, wc->nk, gx, gy, &px, &py);
  /* 1e-6 cells to spare: far more than any rounding of either side. Well
   * within (by 2e-6 cells) needs no root: the same answer, as the root
   * is then below rc - 2e-6 by far more than a rounding. */
  double in = rc - 2e-6;
  if (in > 0 && d2 < in * in)
    return true;
  return d2 < rc * rc && sqrt(d2) + 1e-6 < rc;
}

bool pa_sim_int_move_free(const pa_sim_model *m, const pa_sim_state *s,
                          uint32_t skip, double x, double y, double r,
                          const pa_sim_near *nb, pa_sim_wall_memo *memo,
                          pa_sim_wall_cache *wc, bool pressed) {
  double wall = INFINITY;
  /* The walls are known to be clear by more than r here: no lookup. */
  double ex = x - wc->cx, ey = y - wc->cy, left = wc->clear - r;
  if (!(wc->cmap == m->blocked && left > 0 &&
        ex * ex + ey * ey < left * left)) {
    if (pressed && face_within(m, wc, x, y, r))
      return false;
    wall = wall_dist(m, x, y, r, NULL, NULL, true, memo, wc);
  }
  if (wall < r)
    return false;
  if (!nb && s->obstacle_count == 0) /* no other body to ask */
    return true;
  return bodies_clearance(s, skip, x, y, wall, 0, 0, NULL, NULL, nb != NULL,
                          nb && !nb->all ? nb : NULL) -
             r >=
         0;
}

/* ---- obstacles ----------------------------------------------------------- */

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

/* ---- robot broad phase -----------------------------------------------------
 */

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
  return h->start && h->items && h->key && h->ix && h->iy && h->ir && h->icx &&
                 h->icy
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

/* The buckets' items from the robots' keys (h->key) and counts (start[k +
 * 1] of bucket k, nb buckets): a counting sort, stable in robot order
 * (determinism), with the contiguous copies for the scans (no robot records
 * touched per item); cells: each item's cell too (icx, icy by item: the
 * hashed layout's aliasing check). */
static void buckets_fill(pa_sim_hash *h, const pa_sim_state *s, uint32_t nb,
                         bool cells) {
  for (uint32_t k = 0; k < nb; k++)
    h->start[k + 1] += h->start[k];
  uint32_t *fill = h->start; /* reuse: shift back afterwards */
  for (uint32_t i = 0; i < s->robot_count; i++) {
    if (!s->info[i].active)
      continue;
    uint32_t p = fill[h->key[i]]++;
    double x = s->rs[i].x, y = s->rs[i].y;
    h->items[p] = i;
    h->ix[p] = x;
    h->iy[p] = y;
    h->ir[p] = s->info[i].radius;
    if (cells) {
      h->icx[p] = pa_sim_ifloor(x / h->cell);
      h->icy[p] = pa_sim_ifloor(y / h->cell);
    }
  }
  memmove(h->start + 1, h->start, (size_t)nb * sizeof *h->start);
  h->start[0] = 0;
}

void pa_sim_int_hash_build(pa_sim_hash *h, const pa_sim_state *s, double cell) {
  h->cell = cell;
  h->rmax = 0;
  uint32_t size = h->mask + 1;
  memset(h->start, 0, ((size_t)size + 1) * sizeof *h->start);
  for (uint32_t i = 0; i < s->robot_count; i++) {
    if (!s->info[i].active)
      continue;
    uint32_t k = pa_sim_int_hash_key(h, pa_sim_ifloor(s->rs[i].x / cell),
                                     pa_sim_ifloor(s->rs[i].y / cell));
    h->key[i] = k;
    h->start[k + 1]++;
    if (s->info[i].radius > h->rmax)
      h->rmax = s->info[i].radius;
  }
  buckets_fill(h, s, size, true);
  h->dense = false;
  h->valid = true;
}

void pa_sim_int_lhash_build(pa_sim_hash *h, const pa_sim_state *s,
                            double cell) {
  /* Each robot's cell, once (icx, icy by robot here: the buckets' bounds). */
  int64_t x0 = INT64_MAX, y0 = INT64_MAX, x1 = INT64_MIN, y1 = INT64_MIN;
  double rmax = 0;
  for (uint32_t i = 0; i < s->robot_count; i++) {
    if (!s->info[i].active)
      continue;
    int64_t cx = pa_sim_ifloor(s->rs[i].x / cell);
    int64_t cy = pa_sim_ifloor(s->rs[i].y / cell);
    h->icx[i] = cx;
    h->icy[i] = cy;
    x0 = cx < x0 ? cx : x0;
    x1 = cx > x1 ? cx : x1;
    y0 = cy < y0 ? cy : y0;
    y1 = cy > y1 ? cy : y1;
    if (s->info[i].radius > rmax)
      rmax = s->info[i].radius;
  }
  uint64_t size = (uint64_t)h->mask + 1;
  if (x1 < x0 || (uint64_t)(x1 - x0) >= size || (uint64_t)(y1 - y0) >= size ||
      (uint64_t)(x1 - x0 + 1) * (uint64_t)(y1 - y0 + 1) > size) {
    pa_sim_int_hash_build(h, s, cell); /* spread out (or none): hashed */
    return;
  }
  uint32_t gw = (uint32_t)(x1 - x0 + 1), gh = (uint32_t)(y1 - y0 + 1);
  uint32_t cells = gw * gh;
  h->cell = cell;
  h->rmax = rmax;
  memset(h->start, 0, ((size_t)cells + 1) * sizeof *h->start);
  for (uint32_t i = 0; i < s->robot_count; i++) {
    if (!s->info[i].active)
      continue;
    uint32_t k = (uint32_t)((h->icy[i] - y0) * gw + (h->icx[i] - x0));
    h->key[i] = k;
    h->start[k + 1]++;
  }
  buckets_fill(h, s, cells, false);
  h->gx0 = x0;
  h->gy0 = y0;
  h->gw = gw;
  h->gh = gh;
  h->dense = true;
  h->valid = true;
}

void pa_sim_int_lhash_plan(pa_sim_state *s, double cell) {
  s->lhash.cell = cell;
  s->lhash.valid = false;
  __atomic_store_n(&s->lhash.build, 1, __ATOMIC_RELEASE);
}

void pa_sim_int_lhash_ready(const pa_sim_state *s) {
  /* a cache of the positions: built through a const state */
  pa_sim_hash *h = (pa_sim_hash *)&s->lhash;
  int want = 1;
  if (__atomic_load_n(&h->build, __ATOMIC_ACQUIRE) == 0)
    return;
  if (__atomic_compare_exchange_n(&h->build, &want, 2, false, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE)) {
    pa_sim_int_lhash_build(h, s, h->cell);
    __atomic_store_n(&h->build, 0, __ATOMIC_RELEASE); /* publishes it */
    return;
  }
  /* the builder takes ~10 us for 1000 robots */
  pa_sim_waiter w = {0, 0};
  while (__atomic_load_n(&h->build, __ATOMIC_ACQUIRE) != 0)
    pa_sim_int_wait_step(&w);
}

/* ---- clearance ------------------------------------------------------------
 */

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
  return pa_sim_int_clearance_near(m, s, skip, x, y, r, margin, nx, ny, robots,
                                   NULL);
}

double pa_sim_int_clearance_near(const pa_sim_model *m, const pa_sim_state *s,
                                 uint32_t skip, double x, double y, double r,
                                 double margin, double *nx, double *ny,
                                 bool robots, pa_sim_wall_memo *memo) {
  double reach = r + margin;
  double wnx = 0, wny = 0;
  double best = wall_dist(m, x, y, reach, &wnx, &wny, false, memo, NULL);
  return bodies_clearance(s, skip, x, y, best, wnx, wny, nx, ny, robots, NULL) -
         r;
}

double pa_sim_int_move_clearance(const pa_sim_model *m, const pa_sim_state *s,
                                 uint32_t skip, double x, double y, double r,
                                 double margin, double *nx, double *ny,
                                 const pa_sim_near *nb, pa_sim_wall_memo *memo,
                                 pa_sim_wall_cache *wc) {
  double reach = r + margin;
  double wnx = 0, wny = 0;
  double best = wall_dist(m, x, y, reach, &wnx, &wny, false, memo, wc);
  if (!nb && s->obstacle_count == 0) { /* no other body to ask */
    if (nx && ny) {
      *nx = wnx;
      *ny = wny;
    }
    return best - r;
  }
  return bodies_clearance(s, skip, x, y, best, wnx, wny, nx, ny, nb != NULL,
                          nb && !nb->all ? nb : NULL) -
         r;
}

/* The robots of a move's strips (pa_sim_near): their radii from the strips'
 * copies, their positions as they are now. */
static void near_robots(const pa_sim_state *s, const pa_sim_near *nb,
                        uint32_t skip, double x, double y, double *best,
                        double *bnx, double *bny) {
  const pa_sim_strips *st = nb->st;
  for (uint32_t k = 0; k < nb->parts; k++)
    for (uint32_t p = nb->lo[k]; p < nb->hi[k]; p++) {
      uint32_t j = st->e[p].id;
      if (j == skip)
        continue;
      double ex = x - s->rs[j].x, ey = y - s->rs[j].y, rj = st->e[p].r;
      double rr = *best + rj, d2 = ex * ex + ey * ey;
      if (d2 >= rr * rr)
        continue;
      double len = sqrt(d2), d = len - rj;
      if (d < *best) {
        *best = d;
        *bnx = len > 1e-12 ? ex / len : 1;
        *bny = len > 1e-12 ? ey / len : 0;
      }
    }
}

/* The rest of the clearance after the walls: obstacles and robots nearer
 * than best (the wall value, with its normal). Returns the smallest. */
static double bodies_clearance(const pa_sim_state *s, uint32_t skip, double x,
                               double y, double best, double wnx, double wny,
                               double *nx, double *ny, bool robots,
                               const pa_sim_near *nb) {
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
  } else if (nb) {
    near_robots(s, nb, skip, x, y, &best, &bnx, &bny);
  } else if (h->valid) {
    int64_t cx = pa_sim_ifloor(x / h->cell), cy = pa_sim_ifloor(y / h->cell);
    /* Aliased buckets are not skipped: a robot considered twice changes
     * nothing the second time (its distance is no longer below best). */
    for (int64_t j = cy - 1; j <= cy + 1; j++)
      for (int64_t i = cx - 1; i <= cx + 1; i++) {
        uint32_t k = pa_sim_int_hash_key(h, i, j);
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

bool pa_sim_overlaps(const pa_sim_model *m, const pa_sim_state *s, uint32_t id,
                     double x, double y) {
  return pa_sim_clearance(m, s, id, x, y, s->info[id].radius, 0, NULL, NULL) <
         0;
}
