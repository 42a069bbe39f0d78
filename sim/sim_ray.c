/* sim_ray.c - rays against the grid, one at a time: the plain traversal
 * (the reference every caster must match, bit for bit) and the scalar fast
 * caster (jumps through open space by the march field's safe step). */
#define _GNU_SOURCE
#include "sim_geom_int.h"

#include <math.h>

/* The plain Amanatides-Woo traversal in the padded grid (cell units, origin
 * shifted by one cell): the reference the fast caster must match. Each
 * boundary crossing is computed from the origin (not by accumulation), so
 * the fast caster, which shares this formula, takes identical decisions from
 * any cell they share. */
double pa_sim_int_cast_plain_cells(const pa_sim_model *m, double ox, double oy,
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
 * hit cell by cell_entry, so the result equals the plain traversal bit for
 * bit. */
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

double pa_sim_int_cast_one(const pa_sim_model *m, double ox, double oy,
                           double dx, double dy, double maxc) {
  return cast_one(m, ox, oy, dx, dy, maxc);
}

double pa_sim_cast_plain(const pa_sim_model *m, double x, double y, double dx,
                         double dy, double range_max) {
  grid_ray g = ray_in_grid(m, x, y, dx, dy, range_max);
  double t = pa_sim_int_cast_plain_cells(m, g.gx, g.gy, g.gdx, g.gdy, g.maxc);
  return cells_to_range(t, g.maxc, range_max, m->grid.resolution);
}
