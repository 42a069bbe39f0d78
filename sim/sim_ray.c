/* sim_ray.c - rays against the grid, one at a time: the plain traversal
 * (the reference every caster must match, bit for bit) and the scalar fast
 * caster (jumps through open space by the march field's safe step). */
#define _GNU_SOURCE
#include "sim_geom_int.h"

#include <math.h>

/* Where a ray from (ox, oy) along (dx, dy) starts in the padded grid (cell
 * units, origin shifted by one cell): what both casters begin from. */
typedef struct {
  double ox, oy;   /* the origin, shifted */
  int64_t cx, cy;  /* its cell */
  double ix, iy;   /* 1 / direction (0 on an axis the ray never crosses) */
  int64_t sx, sy;  /* a cell step along each axis */
  double bxo, byo; /* a cell's next boundary is at cx + bxo */
  bool hx, hy;     /* the ray crosses x (y) boundaries */
  double jx, jy;   /* ix, iy, or ~1e300: an axis never crossed */
  double bx, by;   /* the next boundaries */
} ray_start;

/* False when the origin is outside the grid or in a blocked cell (range 0). */
static inline bool start_ray(const pa_sim_model *m, double ox, double oy,
                             double dx, double dy, ray_start *r) {
  const int64_t W = m->march_w, H = (int64_t)m->grid.height + 2;
  ox += 1.0;
  oy += 1.0;
  if (!(ox >= 0 && oy >= 0 && ox < (double)W && oy < (double)H))
    return false;
  const int64_t cx = (int64_t)ox, cy = (int64_t)oy;
  if (m->march[cy * W + cx] == 0)
    return false;
  const double ix = dx != 0 ? 1.0 / dx : 0, iy = dy != 0 ? 1.0 / dy : 0;
  const double bxo = dx > 0 ? 1.0 : 0.0, byo = dy > 0 ? 1.0 : 0.0;
  const bool hx = dx != 0, hy = dy != 0;
  *r = (ray_start){.ox = ox,
                   .oy = oy,
                   .cx = cx,
                   .cy = cy,
                   .ix = ix,
                   .iy = iy,
                   .sx = dx > 0 ? 1 : -1,
                   .sy = dy > 0 ? 1 : -1,
                   .bxo = bxo,
                   .byo = byo,
                   .hx = hx,
                   .hy = hy,
                   .jx = hx ? ix : 1e300,
                   .jy = hy ? iy : 1e300,
                   .bx = hx ? (double)cx + bxo : ox + 1.0,
                   .by = hy ? (double)cy + byo : oy + 1.0};
  return true;
}

/* The plain Amanatides-Woo traversal in the padded grid (cell units, origin
 * shifted by one cell): the reference the fast caster must match. Each
 * boundary crossing is computed from the origin (not by accumulation), so
 * the fast caster, which shares this formula, takes identical decisions from
 * any cell they share. */
double pa_sim_int_cast_plain_cells(const pa_sim_model *m, double ox, double oy,
                                   double dx, double dy, double maxc) {
  ray_start r;
  if (!start_ray(m, ox, oy, dx, dy, &r))
    return 0;
  const int64_t W = m->march_w;
  for (;;) {
    double tx = (r.bx - r.ox) * r.jx, ty = (r.by - r.oy) * r.jy;
    double t;
    if (tx < ty) {
      t = tx;
      r.bx += (double)r.sx;
      r.cx += r.sx;
    } else {
      t = ty;
      r.by += (double)r.sy;
      r.cy += r.sy;
    }
    if (t >= maxc)
      return maxc;
    if (m->march[r.cy * W + r.cx] == 0)
      break;
  }
  double e = cell_entry(r.ox, r.oy, r.ix, r.iy, dx, dy, r.cx, r.cy);
  return e < maxc ? e : maxc;
}

/* One axis after a jump to t (o, bo, j, fs: the axis's ray_start values, fs
 * its step as a double; *c the cell of the point): the next boundary the
 * plain traversal has there, *c its cell. h false: the axis is never crossed
 * and its boundary stays beyond reach. */
static inline double boundary_after(bool h, int64_t *c, double o, double bo,
                                    double j, double fs, double t) {
  if (!h)
    return o + 1.0;
  double b = (double)*c + bo;
  if ((b - o) * j <= t)
    b += fs;
  else if ((b - fs - o) * j > t)
    b -= fs;
  *c = (int64_t)(b - bo);
  return b;
}

/* The fast caster for one ray (free up to t0 >= 0 [cells]: it starts
 * there): from the current point, jump by the field's
 * safe step (from any point of the cell nothing blocked is that close) while
 * it is >= 1 cell, tracking the position in fixed point (short dependency
 * chain; the field's slack covers its error), then take exact crossings from
 * the exact point of the ray. Jumps only cross free space and hits come from
 * exact crossings with the plain formula, and the range is the entry of the
 * hit cell by cell_entry, so the result equals the plain traversal bit for
 * bit. */
static inline double cast_one(const pa_sim_model *m, double ox, double oy,
                              double dx, double dy, double maxc, double t0) {
  ray_start r;
  if (!start_ray(m, ox, oy, dx, dy, &r))
    return 0;
  const int64_t W = m->march_w;
  const uint8_t *F = m->march;
  const int32_t *SQ = m->march_safeq;
  ox = r.ox, oy = r.oy;
  int64_t cx = r.cx, cy = r.cy, idx = cy * W + cx;
  const double ix = r.ix, iy = r.iy, jx = r.jx, jy = r.jy;
  const double bxo = r.bxo, byo = r.byo;
  const int64_t sx = r.sx, syw = r.sy * W;
  const bool hx = r.hx, hy = r.hy;
  const double fsx = (double)r.sx, fsy = (double)r.sy;
  /* fixed point: positions [2^-20 cell], directions [2^-20], t [2^-10] */
  const int64_t qdx = (int64_t)(dx * 1048576.0);
  const int64_t qdy = (int64_t)(dy * 1048576.0);
  const int64_t qmax = (int64_t)(maxc * 1024.0) + 1;
  double bx = r.bx, by = r.by; /* next boundaries */
  double t = t0;
  if (t0 > 0) /* free up to t0: land there as after a jump */
    goto land;
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
    land:
      if (t >= maxc)
        return maxc;
      /* Back on the exact ray, in the plain traversal's state after all its
       * crossings up to t: the next boundary is the first one it crosses
       * after t. floor() of the point alone is not enough: a ray along a
       * grid line can round into the neighbouring row. */
      double px = ox + t * dx, py = oy + t * dy;
      cx = (int64_t)px;
      cy = (int64_t)py;
      bx = boundary_after(hx, &cx, ox, bxo, jx, fsx, t);
      by = boundary_after(hy, &cy, oy, byo, jy, fsy, t);
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

double pa_sim_int_cast_one(const pa_sim_model *m, double ox, double oy,
                           double dx, double dy, double maxc) {
  return cast_one(m, ox, oy, dx, dy, maxc, 0);
}

double pa_sim_int_cast_from(const pa_sim_model *m, double ox, double oy,
                            double dx, double dy, double maxc, double t0) {
  return cast_one(m, ox, oy, dx, dy, maxc, t0);
}

double pa_sim_cast_plain(const pa_sim_model *m, double x, double y, double dx,
                         double dy, double range_max) {
  grid_ray g = ray_in_grid(m, x, y, dx, dy, range_max);
  double t = pa_sim_int_cast_plain_cells(m, g.gx, g.gy, g.gdx, g.gdy, g.maxc);
  return cells_to_range(t, g.maxc, range_max, m->grid.resolution);
}
