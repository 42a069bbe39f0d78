/* foxglove_vis.c - the geometry /scene shows for mesh, height-map and
 * instanced visuals (shm/pa_visual.h), apart from how an update encodes it:
 * a triangle list in the visual's frame for a mesh or a height map, a pose,
 * size and colour per instance. foxglove_scene.c writes them as
 * TriangleListPrimitive and shape primitives. */
#define _GNU_SOURCE
#include "foxglove.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void unpack(uint32_t u, const float own[4], float c[4]) {
  if (!u) {
    memcpy(c, own, 4 * sizeof *c);
    return;
  }
  c[0] = (float)(u >> 24) / 255.0f, c[1] = (float)(u >> 16 & 255) / 255.0f;
  c[2] = (float)(u >> 8 & 255) / 255.0f;
  c[3] = (float)(u & 255) / 255.0f * own[3];
}

uint32_t pa_fox_vis_tris(const pa_visual *v, const pa_vis_point *pt, uint32_t n,
                         double (**pts)[3], float (**colors)[4]) {
  *pts = NULL;
  *colors = NULL;
  uint32_t nx = v->grid_nx, ny = v->grid_ny, m = 0;
  if (v->type == PA_VIS_MESH)
    m = n / 3 * 3;
  else if (v->type == PA_VIS_HEIGHTMAP && nx >= 2 && ny >= 2 &&
           (uint64_t)nx * ny == n)
    m = (nx - 1) * (ny - 1) * 6;
  if (!m)
    return 0;
  double(*p)[3] = malloc((size_t)m * sizeof *p);
  float(*c)[4] = malloc((size_t)m * sizeof *c);
  if (!p || !c) {
    free(p), free(c);
    return 0;
  }
  bool own = true;
  for (uint32_t k = 0; k < m; k++) {
    uint32_t i = k;
    if (v->type == PA_VIS_HEIGHTMAP) {
      /* cell (cx, cy), two triangles */
      static const uint32_t di[6] = {0, 1, 1, 0, 1, 0},
                            dj[6] = {0, 0, 1, 0, 1, 1};
      uint32_t cell = k / 6, cx = cell % (nx - 1), cy = cell / (nx - 1);
      i = (cy + dj[k % 6]) * nx + cx + di[k % 6];
    }
    for (int a = 0; a < 3; a++) /* a mesh's size is its scale */
      p[k][a] = pt[i].p[a] *
                (v->type == PA_VIS_MESH && v->size[a] > 0 ? v->size[a] : 1.0f);
    unpack(pt[i].rgba, v->rgba, c[k]);
    own = own && !pt[i].rgba;
  }
  if (own) {
    free(c);
    c = NULL;
  }
  *pts = p;
  *colors = c;
  return m;
}

uint32_t pa_fox_vis_instances(const pa_visual *v, uint32_t n) {
  uint32_t st = v->inst_stride;
  if (v->type != PA_VIS_INSTANCED || st < 1 || st > 3)
    return 0;
  return n / st;
}

/* a times b, quaternions w, x, y, z */
static void qmul(const double a[4], const double b[4], double o[4]) {
  o[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
  o[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
  o[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
  o[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
}

void pa_fox_vis_instance(const pa_visual *v, const pa_vis_point *pt, uint32_t k,
                         double pos[3], double q[4], double s[3],
                         float color[4]) {
  uint32_t st = v->inst_stride;
  const pa_vis_point *p = pt + (size_t)k * st;
  double vq[4] = {v->quat[0], v->quat[1], v->quat[2], v->quat[3]};
  double iq[4] = {1, 0, 0, 0};
  if (st >= 2) {
    double x = p[1].p[0], y = p[1].p[1], z = p[1].p[2];
    double w2 = 1 - x * x - y * y - z * z;
    iq[0] = w2 > 0 ? sqrt(w2) : 0, iq[1] = x, iq[2] = y, iq[3] = z;
  }
  qmul(vq, iq, q);
  /* the instance's position turned by the visual's orientation */
  double l[3] = {p[0].p[0], p[0].p[1], p[0].p[2]}, t[3];
  t[0] = 2 * (vq[2] * l[2] - vq[3] * l[1]);
  t[1] = 2 * (vq[3] * l[0] - vq[1] * l[2]);
  t[2] = 2 * (vq[1] * l[1] - vq[2] * l[0]);
  pos[0] = l[0] + vq[0] * t[0] + (vq[2] * t[2] - vq[3] * t[1]) + v->pos[0];
  pos[1] = l[1] + vq[0] * t[1] + (vq[3] * t[0] - vq[1] * t[2]) + v->pos[1];
  pos[2] = l[2] + vq[0] * t[2] + (vq[1] * t[1] - vq[2] * t[0]) + v->pos[2];
  for (int a = 0; a < 3; a++)
    s[a] = st == 3 ? p[2].p[a] : 1;
  unpack(p[0].rgba, v->rgba, color);
}
