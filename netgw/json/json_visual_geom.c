/* json_visual_geom.c - the geometry of mesh, height-map and instanced
 * visuals (shm/pa_visual.h): a mesh from raw arrays (or a file:
 * json_visual_mesh.c), a grid of heights coloured by a colormap, one shape
 * at many poses. Everything is checked and built into a new point array
 * before the block is touched (json_visual.c stores it). */
#define _GNU_SOURCE
#include "json_int.h"

#include "pa_safefile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEIGHT_MAX 1e4 /* [m] |height| of a height map sample */

/* data.key as a flat array of finite numbers in [lo, hi] (*a malloc'd,
 * *len of them): 1, 0 (absent) or -1. */
static int flat(jctx *x, const char *key, size_t max, double lo, double hi,
                double **a, size_t *len) {
  json_t *j = json_object_get(x->data, key);
  *a = NULL;
  *len = 0;
  if (!j || json_is_null(j))
    return 0;
  if (!json_is_array(j)) {
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "data.%s must be a flat array of numbers", key);
    return -1;
  }
  size_t n = json_array_size(j);
  if (n > max) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE, "data.%s: %zu numbers, at most %zu",
                 key, n, max);
    return -1;
  }
  double *d = malloc((n ? n : 1) * sizeof *d);
  if (!d) {
    pa_json_fail(x, PA_ERR_BUSY, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(j, i);
    d[i] = json_is_number(e) ? json_number_value(e) : NAN;
    if (!isfinite(d[i]) || d[i] < lo || d[i] > hi) {
      free(d);
      pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                   "data.%s[%zu] must be a number in [%g, %g]", key, i, lo, hi);
      return -1;
    }
  }
  *a = d;
  *len = n;
  return 1;
}

static int alloc_pts(jctx *x, size_t n, pa_vis_point **p) {
  *p = calloc(n ? n : 1, sizeof **p);
  if (!*p) {
    pa_json_fail(x, PA_ERR_BUSY, "out of memory");
    return -1;
  }
  return 0;
}

/* ---- mesh ---------------------------------------------------------------- */

/* data.vertices [x, y, z, ...], data.indices [a, b, c, ...] (a triangle
 * list; absent: the vertices taken three by three), data.vertex_colors
 * [r, g, b, ...] 0..255 per vertex (RaisimServer's colorArray). */
static int mesh_arrays(jctx *x, pa_vis_point **pts, uint32_t *n) {
  double *vx = NULL, *ix = NULL, *cx = NULL;
  size_t nv = 0, ni = 0, nc = 0;
  const size_t vmax = 9u * PA_VIS_MESH_TRIS_MAX;
  int r = flat(x, "vertices", vmax, -VIS_COORD_MAX, VIS_COORD_MAX, &vx, &nv);
  if (r <= 0)
    return r;
  int ri = flat(x, "indices", 3u * PA_VIS_MESH_TRIS_MAX + 3, 0, 4294967295.0,
                &ix, &ni);
  int rc = ri < 0 ? -1 : flat(x, "vertex_colors", vmax, 0, 255, &cx, &nc);
  size_t verts = nv / 3, tris = ri > 0 ? ni / 3 : verts / 3;
  int out = -1;
  if (rc < 0)
    goto done;
  if (nv % 3) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.vertices: %zu numbers, not a multiple of 3 (x, y, z "
                 "per vertex)",
                 nv);
    goto done;
  }
  if (ri > 0 && ni % 3) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.indices: %zu indices, not a multiple of 3 (a triangle "
                 "list)",
                 ni);
    goto done;
  }
  if (ri == 0 && verts % 3) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.vertices: %zu vertices are not whole triangles (give "
                 "data.indices)",
                 verts);
    goto done;
  }
  if (!tris || tris > PA_VIS_MESH_TRIS_MAX) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.indices: %zu triangles, a mesh has 1..%d", tris,
                 PA_VIS_MESH_TRIS_MAX);
    goto done;
  }
  if (rc > 0 && nc != nv) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.vertex_colors: %zu numbers, must be as many as "
                 "data.vertices (%zu: r, g, b per vertex)",
                 nc, nv);
    goto done;
  }
  for (size_t i = 0; ri > 0 && i < ni; i++)
    if (ix[i] != floor(ix[i]) || ix[i] >= (double)verts) {
      pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                   "data.indices[%zu] = %g: out of range (%zu vertices)", i,
                   ix[i], verts);
      goto done;
    }
  if (alloc_pts(x, tris * 3, pts) < 0)
    goto done;
  for (size_t k = 0; k < tris * 3; k++) {
    size_t v = ri > 0 ? (size_t)ix[k] : k;
    for (int c = 0; c < 3; c++)
      (*pts)[k].p[c] = (float)vx[3 * v + (size_t)c];
    if (rc > 0)
      (*pts)[k].rgba = (uint32_t)lround(cx[3 * v]) << 24 |
                       (uint32_t)lround(cx[3 * v + 1]) << 16 |
                       (uint32_t)lround(cx[3 * v + 2]) << 8 | 255u;
  }
  *n = (uint32_t)(tris * 3);
  out = 1;
done:
  free(vx), free(ix), free(cx);
  return out;
}

static int mesh(jctx *x, bool add, pa_vis_point **pts, uint32_t *n) {
  const char *file = NULL;
  int rf = pa_json_str(x, "file", PA_SAFE_REL_MAX, &file);
  if (rf < 0)
    return -1;
  bool arrays = json_object_get(x->data, "vertices") != NULL;
  if (rf > 0 && arrays) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.file or data.vertices, not both");
    return -1;
  }
  if (rf > 0) {
    int rm = pa_json_vis_mesh_file(x, file, pts, n);
    if (rm != 0)
      return rm < 0 ? -1 : 2;              /* 2: decoding off the loop */
    if (json_object_get(x->data, "color")) /* the colour given wins */
      for (uint32_t i = 0; i < *n; i++)
        (*pts)[i].rgba = 0;
    return 1;
  }
  if (!arrays && (json_object_get(x->data, "indices") ||
                  json_object_get(x->data, "vertex_colors"))) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.indices and data.vertex_colors go with data.vertices");
    return -1;
  }
  if (!arrays && add) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "a mesh needs data.file (.obj, .stl, .ply under --data_dir) "
                 "or data.vertices");
    return -1;
  }
  return arrays ? mesh_arrays(x, pts, n) : 0;
}

/* ---- height map ---------------------------------------------------------- */

typedef struct cstop {
  float t, r, g, b;
} cstop;
static const cstop VIRIDIS[] = {
    {0, 68, 1, 84},       {0.25f, 59, 82, 139}, {0.5f, 33, 145, 140},
    {0.75f, 94, 201, 98}, {1, 253, 231, 37},
};
static const cstop TURBO[] = {
    {0, 48, 18, 59},       {0.15f, 70, 107, 227}, {0.3f, 40, 188, 235},
    {0.45f, 50, 241, 152}, {0.6f, 164, 252, 60},  {0.75f, 250, 186, 57},
    {0.9f, 228, 70, 11},   {1, 122, 4, 3},
};
static const cstop GRAY[] = {{0, 40, 40, 40}, {1, 235, 235, 235}};
static const struct {
  const char *name;
  const cstop *s;
  size_t n;
} CMAPS[] = {{"none", NULL, 0},
             {"viridis", VIRIDIS, sizeof VIRIDIS / sizeof VIRIDIS[0]},
             {"turbo", TURBO, sizeof TURBO / sizeof TURBO[0]},
             {"gray", GRAY, 2}};
#define NCMAPS (sizeof CMAPS / sizeof CMAPS[0])

const char *pa_json_vis_colormap_name(uint32_t c) {
  return c < NCMAPS ? CMAPS[c].name : "none";
}

static uint32_t cmap(uint32_t c, float t) {
  const cstop *s = CMAPS[c].s;
  size_t n = CMAPS[c].n, k = 1;
  t = fminf(fmaxf(t, 0), 1);
  while (k + 1 < n && s[k].t < t)
    k++;
  float f = (t - s[k - 1].t) / (s[k].t - s[k - 1].t);
  uint32_t r = (uint32_t)lroundf(s[k - 1].r + f * (s[k].r - s[k - 1].r));
  uint32_t g = (uint32_t)lroundf(s[k - 1].g + f * (s[k].g - s[k - 1].g));
  uint32_t b = (uint32_t)lroundf(s[k - 1].b + f * (s[k].b - s[k - 1].b));
  return r << 24 | g << 16 | b << 8 | 255u;
}

/* The grid's points from heights h[nx * ny]: local x, y across size[0],
 * size[1], centred; colours from v's colormap (0: the visual's colour). */
static void grid_points(const pa_visual *v, const float *h, pa_vis_point *p) {
  uint32_t nx = v->grid_nx, ny = v->grid_ny, m = nx * ny;
  float lo = h[0], hi = h[0];
  for (uint32_t i = 1; i < m; i++)
    lo = fminf(lo, h[i]), hi = fmaxf(hi, h[i]);
  for (uint32_t j = 0; j < ny; j++)
    for (uint32_t i = 0; i < nx; i++) {
      pa_vis_point *q = &p[j * nx + i];
      q->p[0] = v->size[0] * ((float)i / (float)(nx - 1) - 0.5f);
      q->p[1] = v->size[1] * ((float)j / (float)(ny - 1) - 0.5f);
      q->p[2] = h[j * nx + i];
      q->rgba =
          v->colormap && v->colormap < NCMAPS
              ? cmap(v->colormap, hi > lo ? (q->p[2] - lo) / (hi - lo) : 0.5f)
              : 0;
    }
}

static int heightmap_colour(jctx *x, pa_visual *v, bool add) {
  const char *cm = NULL;
  int r = pa_json_str(x, "colormap", 16, &cm);
  if (r < 0)
    return -1;
  if (r > 0) {
    uint32_t c = 0;
    while (c < NCMAPS && strcmp(CMAPS[c].name, cm))
      c++;
    if (c == NCMAPS) {
      pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                   "data.colormap '%s': viridis, turbo, gray or none (the "
                   "visual's colour)",
                   cm);
      return -1;
    }
    v->colormap = c;
  } else if (json_object_get(x->data, "color")) {
    v->colormap = 0;
  } else if (add) {
    v->colormap = 1;
  }
  return 0;
}

/* data.heights (row-major, x fastest, from -y) with data.samples [nx, ny];
 * a new size, colormap or colour re-makes the points from the heights it
 * has. */
static int heightmap(jctx *x, const pa_visual_block *b, int idx, pa_visual *v,
                     pa_vis_point **pts, uint32_t *n) {
  bool add = idx < 0;
  if (heightmap_colour(x, v, add) < 0)
    return -1;
  double s[2];
  size_t ns = 0;
  int rs = pa_json_vec(x, "samples", 2, 0, s, &ns);
  if (rs < 0)
    return -1;
  if (rs > 0) {
    if (s[0] != floor(s[0]) || s[1] != floor(s[1]) || s[0] < 2 || s[1] < 2 ||
        s[0] * s[1] > PA_VIS_GRID_MAX) {
      pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                   "data.samples [%g, %g]: whole numbers >= 2, at most %d in "
                   "all",
                   s[0], s[1], PA_VIS_GRID_MAX);
      return -1;
    }
    v->grid_nx = (uint32_t)s[0], v->grid_ny = (uint32_t)s[1];
  }
  double *h = NULL;
  size_t nh = 0;
  int rh =
      flat(x, "heights", PA_VIS_GRID_MAX, -HEIGHT_MAX, HEIGHT_MAX, &h, &nh);
  if (rh < 0)
    return -1;
  if (add && (rh == 0 || rs == 0)) {
    free(h);
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "a height map needs data.samples [nx, ny] and data.heights "
                 "(nx * ny, row-major)");
    return -1;
  }
  uint32_t m = v->grid_nx * v->grid_ny;
  if ((rh > 0 || rs > 0) && nh != m) {
    free(h);
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.heights: %zu heights, data.samples says %u x %u = %u",
                 nh, v->grid_nx, v->grid_ny, m);
    return -1;
  }
  bool remake = rh > 0 || json_object_get(x->data, "size") ||
                json_object_get(x->data, "colormap") ||
                json_object_get(x->data, "color");
  if (!remake) {
    free(h);
    return 0;
  }
  if (rh == 0 && (idx < 0 || b->v[idx].pt_n != m)) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.heights: this height map has none to re-make");
    return -1;
  }
  float *hf = malloc((m ? m : 1) * sizeof *hf);
  if (!hf || alloc_pts(x, m, pts) < 0) {
    free(h), free(hf);
    if (!hf)
      pa_json_fail(x, PA_ERR_BUSY, "out of memory");
    return -1;
  }
  for (uint32_t i = 0; i < m; i++) /* new, or the ones it has */
    hf[i] = rh > 0 ? (float)h[i] : b->pt[b->v[idx].pt_off + i].p[2];
  grid_points(v, hf, *pts);
  free(h), free(hf);
  *n = m;
  return 1;
}

/* ---- instanced ----------------------------------------------------------- */

/* data.key: an array of count entries, each a vector of n1 or n2 numbers
 * (or a bare number when n1 == 1) into out[count * 4]: 1, 0, -1. */
static int rows(jctx *x, const char *key, size_t count, size_t n1, size_t n2,
                double lo, double hi, double *out) {
  json_t *a = json_object_get(x->data, key);
  if (!a || json_is_null(a))
    return 0;
  if (!json_is_array(a) || json_array_size(a) != count) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.%s must be an array of %zu entries (one per position)",
                 key, count);
    return -1;
  }
  for (size_t i = 0; i < count; i++) {
    json_t *e = json_array_get(a, i);
    size_t k = json_is_array(e) ? json_array_size(e) : json_is_number(e);
    bool ok = k == n1 || k == n2;
    for (size_t j = 0; ok && j < k; j++) {
      json_t *q = json_is_array(e) ? json_array_get(e, j) : e;
      double d = json_is_number(q) ? json_number_value(q) : NAN;
      ok = isfinite(d) && d >= lo && d <= hi;
      out[i * 4 + j] = d;
    }
    if (k == 1) /* one scale for all three axes */
      out[i * 4 + 1] = out[i * 4 + 2] = out[i * 4];
    if (!ok) {
      pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                   "data.%s[%zu] must have %zu or %zu numbers in [%g, %g]", key,
                   i, n1, n2, lo, hi);
      return -1;
    }
  }
  return 1;
}

static int inst_shape(jctx *x, pa_visual *v, bool add) {
  const char *sh = NULL;
  int r = pa_json_str(x, "shape", 32, &sh);
  if (r < 0)
    return -1;
  if (r == 0) {
    if (add)
      v->inst_shape = PA_VIS_SPHERE;
    return 0;
  }
  uint32_t t = pa_vis_type_from_name(sh);
  if (t < PA_VIS_SPHERE || t > PA_VIS_ARROW) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.shape '%s': sphere, box, cylinder, capsule or arrow",
                 sh);
    return -1;
  }
  v->inst_shape = t;
  return 0;
}

/* data.positions [[x, y(, z)], ...] with optional data.orientations
 * [[w, x, y, z], ...], data.scales [s or [sx, sy, sz], ...] and
 * data.colors [[r, g, b(, a)], ...]: one entry per instance. */
static int instanced(jctx *x, pa_visual *v, bool add, pa_vis_point **pts,
                     uint32_t *n) {
  if (inst_shape(x, v, add) < 0)
    return -1;
  if (add && !json_object_get(x->data, "size"))
    pa_json_vis_default_size(v->inst_shape, v->size);
  json_t *pa = json_object_get(x->data, "positions");
  if (!pa) {
    if (json_object_get(x->data, "orientations") ||
        json_object_get(x->data, "scales") ||
        json_object_get(x->data, "colors")) {
      pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                   "data.orientations, scales and colors go with "
                   "data.positions");
      return -1;
    }
    if (add) {
      pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                   "instanced visuals need data.positions [[x, y, z], ...]");
      return -1;
    }
    return 0;
  }
  size_t cnt = json_is_array(pa) ? json_array_size(pa) : 0;
  if (cnt > PA_VIS_INST_MAX) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.positions: %zu instances, at most %d", cnt,
                 PA_VIS_INST_MAX);
    return -1;
  }
  double *d = calloc((cnt ? cnt : 1) * 16, sizeof *d);
  if (!d) {
    pa_json_fail(x, PA_ERR_BUSY, "out of memory");
    return -1;
  }
  double *P = d, *Q = d + 4 * cnt, *S = d + 8 * cnt, *C = d + 12 * cnt;
  int rp = json_is_array(pa) ? rows(x, "positions", cnt, 2, 3, -VIS_COORD_MAX,
                                    VIS_COORD_MAX, P)
                             : -1;
  if (!json_is_array(pa))
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "data.positions must be an array of [x, y, z]");
  int rq = rp < 0 ? -1 : rows(x, "orientations", cnt, 4, 4, -1e3, 1e3, Q);
  int rs = rq < 0 ? -1 : rows(x, "scales", cnt, 1, 3, 1e-6, 1e4, S);
  int rc = rs < 0 ? -1 : rows(x, "colors", cnt, 3, 4, 0, 1, C);
  if (rc < 0) {
    free(d);
    return -1;
  }
  uint32_t stride = rs > 0 ? 3 : rq > 0 ? 2 : 1;
  if (alloc_pts(x, cnt * stride, pts) < 0) {
    free(d);
    return -1;
  }
  for (size_t i = 0; i < cnt; i++) {
    pa_vis_point *o = *pts + i * stride;
    json_t *pe = json_array_get(pa, i);
    bool z = json_array_size(pe) == 3;
    o[0].p[0] = (float)P[i * 4], o[0].p[1] = (float)P[i * 4 + 1];
    o[0].p[2] = z ? (float)P[i * 4 + 2] : 0;
    if (rc > 0) {
      json_t *ce = json_array_get(json_object_get(x->data, "colors"), i);
      double a = json_array_size(ce) == 4 ? C[i * 4 + 3] : 1;
      uint32_t u = 0;
      for (int k = 0; k < 4; k++)
        u = u << 8 | (uint32_t)lround((k < 3 ? C[i * 4 + k] : a) * 255);
      o[0].rgba = u ? u : 1;
    }
    if (stride >= 2) {
      double w = 1, qx = 0, qy = 0, qz = 0;
      if (rq > 0) {
        const double *q = Q + i * 4;
        double l = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
        if (!(l > 1e-9)) {
          free(d), free(*pts);
          *pts = NULL;
          pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                       "data.orientations[%zu] [w, x, y, z] must not be zero",
                       i);
          return -1;
        }
        double sg = q[0] < 0 ? -1 : 1; /* w >= 0: stored as x, y, z */
        w = q[0] * sg / l, qx = q[1] * sg / l, qy = q[2] * sg / l;
        qz = q[3] * sg / l;
      }
      (void)w;
      o[1].p[0] = (float)qx, o[1].p[1] = (float)qy, o[1].p[2] = (float)qz;
    }
    if (stride == 3)
      for (int k = 0; k < 3; k++)
        o[2].p[k] = (float)S[i * 4 + (size_t)k];
  }
  free(d);
  v->inst_stride = stride;
  *n = (uint32_t)(cnt * stride);
  return 1;
}

/* The keys of each geometry, refused on every other type. */
static const struct {
  uint32_t type;
  const char *keys[6];
} GEOM_KEYS[] = {
    {PA_VIS_MESH, {"file", "vertices", "indices", "vertex_colors"}},
    {PA_VIS_HEIGHTMAP, {"samples", "heights", "colormap"}},
    {PA_VIS_INSTANCED,
     {"shape", "positions", "orientations", "scales", "colors"}},
};

int pa_json_vis_geom(jctx *x, const pa_visual_block *b, int idx, pa_visual *v,
                     pa_vis_point **pts, uint32_t *n) {
  *pts = NULL;
  *n = 0;
  for (size_t g = 0; g < sizeof GEOM_KEYS / sizeof GEOM_KEYS[0]; g++)
    for (size_t k = 0; GEOM_KEYS[g].type != v->type && GEOM_KEYS[g].keys[k];
         k++)
      if (json_object_get(x->data, GEOM_KEYS[g].keys[k])) {
        pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                     "data.%s is for %s visuals only", GEOM_KEYS[g].keys[k],
                     pa_vis_type_name(GEOM_KEYS[g].type));
        return -1;
      }
  switch (v->type) {
  case PA_VIS_MESH:
    return mesh(x, idx < 0, pts, n);
  case PA_VIS_HEIGHTMAP:
    return heightmap(x, b, idx, v, pts, n);
  case PA_VIS_INSTANCED:
    return instanced(x, v, idx < 0, pts, n);
  default:
    return 0;
  }
}
