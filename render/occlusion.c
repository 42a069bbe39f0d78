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

int pa_render_walls_build(rwalls *o, const pa_grid *g) {
  memset(o, 0, sizeof *o);
  size_t n = (size_t)g->width * g->height;
  o->bits = calloc(n / 8 + 1, 1);
  if (!o->bits)
    return -1;
  for (size_t i = 0; i < n; i++) {
    int8_t v = g->cells[i];
    if (v < 0 || v >= g->occupied_min) /* as scene.c's cell_blocks */
      o->bits[i >> 3] |= (uint8_t)(1u << (i & 7));
  }
  o->w = g->width, o->h = g->height;
  o->res = g->resolution;
  o->ox = g->origin_x, o->oy = g->origin_y;
  o->c = cos(g->origin_yaw), o->s = sin(g->origin_yaw);
  return 0;
}

void pa_render_walls_free(rwalls *o) {
  free(o->bits);
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

/* Horizontal distance [m] from (x, y) (grid frame, cells) along unit
 * direction (dx, dy) to the first blocked cell; INFINITY when the ray
 * passes so close to a cell corner that the rasteriser may round the other
 * way, or the eye's own cell blocks. */
static double walls_ray(const rwalls *o, double x, double y, double dx,
                        double dy) {
  int64_t cx = (int64_t)floor(x), cy = (int64_t)floor(y);
  if (walls_block(o, cx, cy))
    return INFINITY;
  int sx = dx > 0 ? 1 : -1, sy = dy > 0 ? 1 : -1;
  double ax = fabs(dx), ay = fabs(dy);
  double tdx = ax > 1e-12 ? 1 / ax : INFINITY;
  double tdy = ay > 1e-12 ? 1 / ay : INFINITY;
  double tx = ax > 1e-12 ? (dx > 0 ? cx + 1 - x : x - cx) * tdx : INFINITY;
  double ty = ay > 1e-12 ? (dy > 0 ? cy + 1 - y : y - cy) * tdy : INFINITY;
  for (;;) {
    double t, u; /* u: the other coordinate where the ray crosses a line */
    bool xline = tx < ty;
    if (xline) {
      t = tx, tx += tdx, cx += sx;
    } else {
      t = ty, ty += tdy, cy += sy;
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
  for (uint32_t c = 0; c < w; c++) {
    /* pixel centre c + 0.5 looks along forward - k * right */
    double k = (2 * (c + 0.5) / w - 1) * tx;
    double a = v->yaw - atan(k) - atan2(o->s, o->c);
    double t = walls_ray(o, gx, gy, cos(a), sin(a));
    dist[c] = t < OCC_NEAR * sqrt(1 + k * k) ? INFINITY : (float)t;
  }
}

bool pa_render_columns_hide(const pa_render_view *v, const rcolumns *occ,
                            double lo, double hi, double near) {
  uint32_t w = occ->w;
  const float *dist = occ->dist;
  if (!(lo > -M_PI_2 + 0.05 && hi < M_PI_2 - 0.05 && lo <= hi))
    return false;
  double tx = tan(v->fov / 2);
  /* columns whose centres can fall in [lo, hi] (angles left positive),
   * one more each side */
  double c0 = floor((-tan(hi) / tx + 1) * w / 2 - 0.5) - 1;
  double c1 = ceil((-tan(lo) / tx + 1) * w / 2 - 0.5) + 1;
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
