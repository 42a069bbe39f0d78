/* occlusion.c - what the map's walls hide from a level camera: the walls
 * are extruded grid cells, higher than the robots and the eyes, so in the
 * vertical plane of one pixel column everything beyond the first wall
 * along that plane is hidden (the line from the eye to it passes through
 * the wall). One ray per column through the grid gives a small camera's
 * occlusion exactly; the atlas skips the robots and static chunks it hides
 * (their fragments would fail the depth test: no pixel changes). */
#include "render_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define OCC_NEAR 0.1 /* [m] walls nearer may be clipped by the near plane */

#define OCC_CLEAR_MAX 255

/* o->clear from o->bits: the Chebyshev distance to the nearest blocked
 * cell, the cells outside the grid counted as blocked (two passes). */
static void walls_clearance(rwalls *o) {
  uint32_t w = o->w, h = o->h;
  uint8_t *c = o->clear;
  for (uint32_t y = 0; y < h; y++)
    for (uint32_t x = 0; x < w; x++) {
      size_t i = (size_t)y * w + x;
      if (o->bits[i >> 3] >> (i & 7) & 1) {
        c[i] = 0;
        continue;
      }
      unsigned m = OCC_CLEAR_MAX;
      /* west, south-west, south, south-east: done, or outside (0) */
      unsigned wv = x ? c[i - 1] : 0, sv = y ? c[i - w] : 0;
      unsigned swv = x && y ? c[i - w - 1] : 0;
      unsigned sev = y && x + 1 < w ? c[i - w + 1] : 0;
      m = wv < m ? wv : m, m = sv < m ? sv : m;
      m = swv < m ? swv : m, m = sev < m ? sev : m;
      c[i] = (uint8_t)(m + 1 < OCC_CLEAR_MAX ? m + 1 : OCC_CLEAR_MAX);
    }
  for (uint32_t y = h; y-- > 0;)
    for (uint32_t x = w; x-- > 0;) {
      size_t i = (size_t)y * w + x;
      if (!c[i])
        continue;
      unsigned m = c[i] - 1u;
      unsigned ev = x + 1 < w ? c[i + 1] : 0, nv = y + 1 < h ? c[i + w] : 0;
      unsigned nev = x + 1 < w && y + 1 < h ? c[i + w + 1] : 0;
      unsigned nwv = x && y + 1 < h ? c[i + w - 1] : 0;
      m = ev < m ? ev : m, m = nv < m ? nv : m;
      m = nev < m ? nev : m, m = nwv < m ? nwv : m;
      c[i] = (uint8_t)(m + 1);
    }
}

int pa_render_walls_build(rwalls *o, const pa_grid *g) {
  memset(o, 0, sizeof *o);
  size_t n = (size_t)g->width * g->height;
  o->bits = calloc(n / 8 + 1, 1);
  o->clear = malloc(n ? n : 1);
  if (!o->bits || !o->clear) {
    pa_render_walls_free(o);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    int8_t v = g->cells[i];
    if (v < 0 || v >= g->occupied_min) /* as scene.c's cell_blocks */
      o->bits[i >> 3] |= (uint8_t)(1u << (i & 7));
  }
  o->w = g->width, o->h = g->height;
  o->res = g->resolution;
  o->ox = g->origin_x, o->oy = g->origin_y;
  o->c = cos(g->origin_yaw), o->s = sin(g->origin_yaw);
  walls_clearance(o);
  return 0;
}

void pa_render_walls_free(rwalls *o) {
  free(o->bits);
  free(o->clear);
  memset(o, 0, sizeof *o);
}

/* Outside the grid blocks, as the scene's walls do. */
static bool walls_block(const rwalls *o, int64_t x, int64_t y) {
  if (x < 0 || y < 0 || x >= o->w || y >= o->h)
    return true;
  size_t i = (size_t)y * o->w + (size_t)x;
  return o->bits[i >> 3] >> (i & 7) & 1;
}

/* Whether grid coordinate u [cells] lies within eps [cells] of a line. */
static bool near_line(double u, double eps) {
  return fabs(u - floor(u + 0.5)) < eps;
}

/* The ray's parameter t at the next grid line after cell k along one
 * axis: from coordinate p, inverse speed td (1 / |d|), step direction sd. */
static double next_line(int64_t k, double p, int sd, double td) {
  if (isinf(td))
    return INFINITY;
  return (sd > 0 ? (double)k + 1 - p : p - (double)k) * td;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

/* Horizontal distance [m] from (x, y) (grid frame, cells) along unit
 * direction (dx, dy) to the first blocked cell; INFINITY when the ray
 * passes so close to a cell corner that the rasteriser may round the other
 * way, or the eye's own cell blocks. A square of free cells around the
 * ray's cell (o->clear) is crossed in one step. */
static double walls_ray(const rwalls *o, double x, double y, double dx,
                        double dy) {
  int64_t cx = (int64_t)floor(x), cy = (int64_t)floor(y);
  if (walls_block(o, cx, cy))
    return INFINITY;
  int sx = dx > 0 ? 1 : -1, sy = dy > 0 ? 1 : -1;
  double ax = fabs(dx), ay = fabs(dy);
  double tdx = ax > 1e-12 ? 1 / ax : INFINITY;
  double tdy = ay > 1e-12 ? 1 / ay : INFINITY;
  double tx = next_line(cx, x, sx, tdx), ty = next_line(cy, y, sy, tdy);
  for (;;) {
    double t, u; /* u: the other coordinate where the ray crosses a line */
    bool xline;
    /* (cx, cy) is a free cell inside the grid, every cell within k - 1 of
     * it too */
    int64_t k = o->clear[(size_t)cy * o->w + (size_t)cx];
    if (k > 1) {
      /* on to the cell just past that square, found from the ray's origin */
      double ex = next_line(cx + sx * (k - 1), x, sx, tdx);
      double ey = next_line(cy + sy * (k - 1), y, sy, tdy);
      xline = ex < ey;
      if (xline) {
        t = ex;
        cx += sx * k;
        cy = clamp64((int64_t)floor(y + t * dy), cy - k + 1, cy + k - 1);
      } else {
        t = ey;
        cy += sy * k;
        cx = clamp64((int64_t)floor(x + t * dx), cx - k + 1, cx + k - 1);
      }
      tx = next_line(cx, x, sx, tdx);
      ty = next_line(cy, y, sy, tdy);
    } else {
      xline = tx < ty;
      if (xline) {
        t = tx, tx += tdx, cx += sx;
      } else {
        t = ty, ty += tdy, cy += sy;
      }
    }
    if (walls_block(o, cx, cy)) {
      /* entered near a corner of this cell, the rasteriser may put the
       * pixel on the other side of it (passing a corner on the free side
       * instead only makes the distance longer: safe) */
      u = xline ? y + t * dy : x + t * dx;
      /* [cells]: ~3 of llvmpipe's 1/256 px at 1 px = 15 mrad, and float */
      double eps = 2e-4 * t + 1e-4 / o->res;
      return near_line(u, eps) ? INFINITY : t * o->res;
    }
    if (t * o->res > 1e4) /* cannot happen inside a grid: a guard */
      return INFINITY;
  }
}

void pa_render_walls_columns(const rwalls *o, const pa_render_view *v,
                             uint32_t w, float *dist) {
  double tx = tan(v->fov / 2);
  /* the eye in the grid frame [cells] */
  double ex = v->x - o->ox, ey = v->y - o->oy;
  double gx = (o->c * ex + o->s * ey) / o->res;
  double gy = (-o->s * ex + o->c * ey) / o->res;
  /* forward and right in the grid frame: column c looks along
   * forward + k * right (k = tan of its angle right of the axis) */
  double fw = v->yaw - atan2(o->s, o->c);
  double fx = cos(fw), fy = sin(fw), rx = fy, ry = -fx;
  for (uint32_t c = 0; c < w; c++) {
    /* pixel centre c + 0.5 */
    double k = (2 * (c + 0.5) / w - 1) * tx;
    double n = 1 / sqrt(1 + k * k);
    double t = walls_ray(o, gx, gy, (fx + k * rx) * n, (fy + k * ry) * n);
    dist[c] = t < OCC_NEAR * sqrt(1 + k * k) ? INFINITY : (float)t;
  }
}

void pa_render_wedge(const pa_render_view *v, rwedge *w) {
  w->half = v->fov / 2 + 0.02;
  w->fx = cos(v->yaw), w->fy = sin(v->yaw);
  double ch = cos(w->half), sh = sin(w->half);
  /* the axis turned by -half (right) and +half (left) */
  w->edges[0] = w->fx * ch + w->fy * sh, w->edges[1] = w->fy * ch - w->fx * sh;
  w->edges[2] = w->fx * ch - w->fy * sh, w->edges[3] = w->fy * ch + w->fx * sh;
  w->th = tan(w->half);
  w->tx = tan(v->fov / 2);
}

bool pa_render_wedge_span(const rwedge *w, const double *px, const double *py,
                          int n, double ahead, double *tlo, double *thi) {
  double lo = INFINITY, hi = -INFINITY;
  for (int k = 0; k < n; k++) {
    double f = px[k] * w->fx + py[k] * w->fy;
    double l = py[k] * w->fx - px[k] * w->fy;
    if (!(f > ahead))
      return false;
    double t = l / f;
    lo = fmin(lo, t), hi = fmax(hi, t);
  }
  *tlo = lo, *thi = hi;
  return true;
}

bool pa_render_columns_hide(const pa_render_view *v, const rcolumns *occ,
                            double lo, double hi, double near) {
  if (!(lo > -M_PI_2 + 0.05 && hi < M_PI_2 - 0.05 && lo <= hi))
    return false;
  return pa_render_columns_hide_tan(occ, tan(v->fov / 2), tan(lo), tan(hi),
                                    near);
}

bool pa_render_columns_hide_tan(const rcolumns *occ, double tx, double tlo,
                                double thi, double near) {
  uint32_t w = occ->w;
  const float *dist = occ->dist;
  const double edge = 1 / tan(0.05); /* tan(pi / 2 - 0.05), folded */
  if (!(tlo > -edge && thi < edge && tlo <= thi))
    return false;
  /* columns whose centres can fall in [lo, hi] (angles left positive),
   * one more each side */
  double c0 = floor((-thi / tx + 1) * w / 2 - 0.5) - 1;
  double c1 = ceil((-tlo / tx + 1) * w / 2 - 0.5) + 1;
  if (c0 < 0)
    c0 = 0;
  if (c1 > w - 1.0)
    c1 = w - 1.0;
  near -= 0.02; /* [m] the depth buffer's and float's slack */
  for (double c = c0; c <= c1; c++)
    if (!(dist[(size_t)c] < near))
      return false;
  return true;
}

bool pa_render_disc_shows(const pa_render_view *v, const rcolumns *occ,
                          const rwedge *wg, double x, double y, double reach) {
  double dx = x - v->x, dy = y - v->y, d = sqrt(dx * dx + dy * dy);
  if (d <= reach + 0.1)
    return true;
  /* wholly beyond one edge of a wedge narrower than a half turn (its
   * edges, the margin below included; none for wider ones): out */
  const double *edges = wg ? wg->edges : NULL;
  if (edges && (edges[0] * dy - edges[1] * dx < -reach ||
                dx * edges[3] - dy * edges[2] < -reach))
    return false;
  double f = wg ? dx * wg->fx + dy * wg->fy : 0;
  if (f > reach) {
    /* wholly ahead of the eye (most robots): the disc's angles as their
     * tangents, without trigonometry: tan(off -+ half) from tan(off) and
     * tan(half) = reach / sqrt(d^2 - reach^2) */
    double t = (dy * wg->fx - dx * wg->fy) / f;
    double s = reach / sqrt(d * d - reach * reach);
    double tlo = (t - s) / (1 + t * s), thi = (t + s) / (1 - t * s);
    if (thi < -wg->th || tlo > wg->th)
      return false;
    return !occ ||
           !pa_render_columns_hide_tan(occ, wg->tx, tlo, thi, d - reach);
  }
  double off = remainder(atan2(dy, dx) - v->yaw, 2 * M_PI);
  double half = asin(reach / d);
  if (fabs(off) > v->fov / 2 + half + 0.02)
    return false;
  return !occ ||
         !pa_render_columns_hide(v, occ, off - half, off + half, d - reach);
}
