/* visuals_solid.c - the clients' solid visual objects (sphere, box,
 * cylinder, capsule, arrow, mesh, height map, instanced; shm/pa_visual.h)
 * as filled triangles with normals in world coordinates, drawn with the
 * scene's lit program (its key and fill lights and fog, render/gl_util.c),
 * depth-tested, the translucent ones blended after the opaque ones. The
 * triangles are built on the CPU only when the block changed (its
 * generation), into one buffer in four runs: opaque seen by the head
 * cameras, opaque others, translucent seen by the cameras, translucent
 * others; a camera draws the first run of each kind, the viewer and the
 * spectator both. An instanced visual's shape is made once and drawn per
 * instance by the GL (the lit program's instance attributes): 20 000
 * spheres cost their poses, not 20 000 copies of a sphere. Polylines, point
 * clouds and text stay lines and points (visuals.c). */
#include "render_int.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A local-to-world map: world = R (s * p) + t; normals R (n / s). */
typedef struct xform {
  float r[9]; /* column-major 3x3 */
  float t[3], s[3];
} xform;

/* The build's output: one of the four runs, and the colour of what is
 * emitted now. */
typedef struct sbuild {
  rmesh *m;
  xform x;
  uint8_t rgba[4];
} sbuild;

bool pa_render_vis_solid(uint32_t t) {
  return (t >= PA_VIS_SPHERE && t <= PA_VIS_ARROW) || t == PA_VIS_MESH ||
         t == PA_VIS_HEIGHTMAP || t == PA_VIS_INSTANCED;
}

static void quat_mat(const float q[4], float r[9]) {
  float w = q[0], x = q[1], y = q[2], z = q[3];
  r[0] = 1 - 2 * (y * y + z * z), r[1] = 2 * (x * y + w * z);
  r[2] = 2 * (x * z - w * y);
  r[3] = 2 * (x * y - w * z), r[4] = 1 - 2 * (x * x + z * z);
  r[5] = 2 * (y * z + w * x);
  r[6] = 2 * (x * z + w * y), r[7] = 2 * (y * z - w * x);
  r[8] = 1 - 2 * (x * x + y * y);
}

static void mat_vec(const float r[9], const float v[3], float o[3]) {
  for (int i = 0; i < 3; i++)
    o[i] = r[i] * v[0] + r[3 + i] * v[1] + r[6 + i] * v[2];
}

static void push(rmesh *m, const float p[3], const float n[3],
                 const uint8_t c[4]) {
  rvertex *v = pa_render_mesh_next(m);
  if (!v)
    return;
  memcpy(v->pos, p, sizeof v->pos);
  memcpy(v->normal, n, sizeof v->normal);
  memcpy(v->colour, c, sizeof v->colour);
}

/* One local vertex through the build's map. */
static void emit_c(sbuild *B, const float p[3], const float n[3],
                   const uint8_t c[4]) {
  float sp[3] = {p[0] * B->x.s[0], p[1] * B->x.s[1], p[2] * B->x.s[2]};
  float sn[3] = {n[0] / B->x.s[0], n[1] / B->x.s[1], n[2] / B->x.s[2]};
  float wp[3], wn[3];
  mat_vec(B->x.r, sp, wp);
  mat_vec(B->x.r, sn, wn);
  float l = sqrtf(wn[0] * wn[0] + wn[1] * wn[1] + wn[2] * wn[2]);
  for (int i = 0; i < 3; i++)
    wp[i] += B->x.t[i], wn[i] = l > 0 ? wn[i] / l : 0;
  push(B->m, wp, wn, c);
}

static void emit(sbuild *B, const float p[3], const float n[3]) {
  emit_c(B, p, n, B->rgba);
}

/* ---- shapes in local coordinates (as the wireframes were) ---------------- */

/* Points of a surface of revolution about z: ring k at height z[k] with
 * radius rad[k] and normal (nr[k] radial, nz[k]). */
static void revolve(sbuild *B, int segs, int rings, const float *z,
                    const float *rad, const float *nr, const float *nz) {
  for (int k = 0; k + 1 < rings; k++)
    for (int j = 0; j < segs; j++) {
      float a0 = (float)(2 * M_PI * j / segs);
      float a1 = (float)(2 * M_PI * (j + 1) / segs);
      float c0 = cosf(a0), s0 = sinf(a0), c1 = cosf(a1), s1 = sinf(a1);
      float p[4][3] = {{rad[k] * c0, rad[k] * s0, z[k]},
                       {rad[k] * c1, rad[k] * s1, z[k]},
                       {rad[k + 1] * c1, rad[k + 1] * s1, z[k + 1]},
                       {rad[k + 1] * c0, rad[k + 1] * s0, z[k + 1]}};
      float n[4][3] = {{nr[k] * c0, nr[k] * s0, nz[k]},
                       {nr[k] * c1, nr[k] * s1, nz[k]},
                       {nr[k + 1] * c1, nr[k + 1] * s1, nz[k + 1]},
                       {nr[k + 1] * c0, nr[k + 1] * s0, nz[k + 1]}};
      static const int tri[6] = {0, 1, 2, 0, 2, 3};
      for (int i = 0; i < 6; i++)
        emit(B, p[tri[i]], n[tri[i]]);
    }
}

#define RINGS_MAX 40

/* Sphere (h = 0) or capsule: two hemispheres of radius r h apart. */
static void capsule(sbuild *B, float r, float h, int segs, int half_rings) {
  float z[RINGS_MAX], rad[RINGS_MAX], nr[RINGS_MAX], nz[RINGS_MAX];
  int n = 0;
  for (int side = 0; side < 2; side++)
    for (int k = 0; k <= half_rings; k++) {
      /* latitude from the south pole up to the equator, then on up */
      float f = (float)(M_PI / 2 * k / half_rings) - (float)M_PI / 2;
      if (side)
        f = (float)(M_PI / 2 * k / half_rings);
      nr[n] = cosf(f), nz[n] = sinf(f);
      rad[n] = r * nr[n];
      z[n] = r * nz[n] + (side ? h / 2 : -h / 2);
      n++;
    }
  revolve(B, segs, n, z, rad, nr, nz);
}

/* A closed cylinder or cone frustum along z from z0 (radius r0) to z1
 * (radius r1), with its caps. */
static void frustum(sbuild *B, float r0, float r1, float z0, float z1,
                    int segs) {
  float len = z1 - z0, slope = (r0 - r1) / (len > 0 ? len : 1);
  float l = sqrtf(1 + slope * slope);
  float z[2] = {z0, z1}, rad[2] = {r0, r1};
  float nr[2] = {1 / l, 1 / l}, nz[2] = {slope / l, slope / l};
  revolve(B, segs, 2, z, rad, nr, nz);
  float zc[2] = {z0, z0}, rc[2] = {0, r0}, n0[2] = {0, 0}, d[2] = {-1, -1};
  revolve(B, segs, 2, zc, rc, n0, d); /* bottom, facing down */
  if (r1 > 0) {
    float zt[2] = {z1, z1}, rt[2] = {r1, 0}, u[2] = {1, 1};
    revolve(B, segs, 2, zt, rt, n0, u);
  }
}

static void box(sbuild *B, const float s[3]) {
  float h[3] = {s[0] / 2, s[1] / 2, s[2] / 2};
  for (int ax = 0; ax < 3; ax++)
    for (int sg = -1; sg <= 1; sg += 2) {
      int u = (ax + 1) % 3, w = (ax + 2) % 3;
      float n[3] = {0, 0, 0}, p[4][3];
      n[ax] = (float)sg;
      static const float cu[4] = {-1, 1, 1, -1}, cw[4] = {-1, -1, 1, 1};
      for (int k = 0; k < 4; k++) {
        p[k][ax] = sg * h[ax];
        p[k][u] = cu[k] * h[u] * (float)sg;
        p[k][w] = cw[k] * h[w];
      }
      static const int tri[6] = {0, 1, 2, 0, 2, 3};
      for (int i = 0; i < 6; i++)
        emit(B, p[tri[i]], n);
    }
}

/* Shape t of size s (pa_visual.size) in local coordinates; detail 0 is
 * the finest, 1 and 2 coarser (an instanced visual of many). */
static void shape(sbuild *B, uint32_t t, const float s[3], int detail) {
  static const int SEGS[3] = {24, 12, 8}, HALF[3] = {8, 4, 2};
  int segs = SEGS[detail], half = HALF[detail];
  float r = s[0] > 0 ? s[0] : 0.1f, h = s[1];
  switch (t) {
  case PA_VIS_SPHERE:
    capsule(B, r, 0, segs, half);
    break;
  case PA_VIS_BOX:
    box(B, s);
    break;
  case PA_VIS_CYLINDER:
    frustum(B, r, r, -h / 2, h / 2, segs);
    break;
  case PA_VIS_CAPSULE:
    capsule(B, r, h, segs, half);
    break;
  case PA_VIS_ARROW: {
    /* along local x: a shaft and a cone head size[1] long and wide */
    float len = s[0], head = s[1] > 0 ? s[1] : len / 5;
    xform keep = B->x;
    static const float to_x[9] = {0, 0, -1, 0, 1, 0, 1, 0, 0}; /* z -> x */
    float r2[9];
    for (int c = 0; c < 3; c++)
      mat_vec(keep.r, &to_x[3 * c], &r2[3 * c]);
    memcpy(B->x.r, r2, sizeof r2);
    frustum(B, head / 6, head / 6, 0, fmaxf(len - head, 0), segs);
    frustum(B, head / 2, 0, fmaxf(len - head, 0), len, segs);
    B->x = keep;
    break;
  }
  default:
    break;
  }
}

static void colour_of(uint32_t rgba, const float def[4], uint8_t out[4]) {
  float a = def[3] < 0 ? 0 : def[3] > 1 ? 1 : def[3];
  if (!rgba) {
    for (int i = 0; i < 3; i++)
      out[i] = (uint8_t)lroundf(fminf(fmaxf(def[i], 0), 1) * 255);
    out[3] = (uint8_t)lroundf(a * 255);
    return;
  }
  out[0] = (uint8_t)(rgba >> 24), out[1] = (uint8_t)(rgba >> 16);
  out[2] = (uint8_t)(rgba >> 8);
  out[3] = (uint8_t)lroundf((float)(rgba & 255) * a);
}

/* A corner of a mesh's triangle, sorted by position to find the corners
 * that share a vertex. */
typedef struct corner {
  float p[3];
  uint32_t k; /* its index in the triangle soup */
} corner;

static int corner_cmp(const void *a, const void *b) {
  const float *x = ((const corner *)a)->p, *y = ((const corner *)b)->p;
  for (int i = 0; i < 3; i++)
    if (x[i] != y[i])
      return x[i] < y[i] ? -1 : 1;
  return 0;
}

#define CREASE_COS 0.77f /* faces more than ~40 degrees apart keep an edge */

/* Per-corner normals: the mean of the faces at the same vertex that are
 * within the crease angle of the corner's own face (a sphere is smooth, a
 * box keeps its edges); NULL (flat) when there is no memory for it. */
static float (*corner_normals(const pa_vis_point *p, uint32_t n))[3] {
  float(*fn)[3] = malloc((size_t)(n / 3 ? n / 3 : 1) * sizeof *fn);
  float(*cn)[3] = malloc((size_t)(n ? n : 1) * sizeof *cn);
  corner *c = malloc((size_t)(n ? n : 1) * sizeof *c);
  if (!fn || !cn || !c) {
    free(fn), free(cn), free(c);
    return NULL;
  }
  for (uint32_t t = 0; t < n / 3; t++) {
    const float *a = p[3 * t].p, *b = p[3 * t + 1].p, *d = p[3 * t + 2].p;
    float e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    float e2[3] = {d[0] - a[0], d[1] - a[1], d[2] - a[2]};
    float x[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                  e1[0] * e2[1] - e1[1] * e2[0]};
    float l = sqrtf(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
    for (int i = 0; i < 3; i++)
      fn[t][i] = l > 0 ? x[i] / l : 0;
  }
  for (uint32_t k = 0; k < n; k++) {
    memcpy(c[k].p, p[k].p, sizeof c[k].p);
    c[k].k = k;
  }
  qsort(c, n, sizeof *c, corner_cmp);
  for (uint32_t g = 0, e; g < n; g = e) {
    for (e = g + 1; e < n && !corner_cmp(&c[g], &c[e]); e++)
      ;
    for (uint32_t i = g; i < e; i++) {
      const float *own = fn[c[i].k / 3];
      float s[3] = {0, 0, 0};
      for (uint32_t j = g; j < e; j++) {
        const float *o = fn[c[j].k / 3];
        if (own[0] * o[0] + own[1] * o[1] + own[2] * o[2] > CREASE_COS)
          s[0] += o[0], s[1] += o[1], s[2] += o[2];
      }
      memcpy(cn[c[i].k], s, sizeof s);
    }
  }
  free(fn), free(c);
  return cn;
}

static void mesh(sbuild *B, const pa_visual *v, const pa_vis_point *p) {
  uint32_t n = v->pt_n / 3 * 3;
  float(*cn)[3] = corner_normals(p, n);
  for (uint32_t k = 0; k < n; k += 3) {
    const float *a = p[k].p, *b = p[k + 1].p, *c = p[k + 2].p;
    float e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    float e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    float f[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                  e1[0] * e2[1] - e1[1] * e2[0]};
    for (uint32_t i = 0; i < 3; i++) {
      uint8_t col[4];
      colour_of(p[k + i].rgba, v->rgba, col);
      emit_c(B, p[k + i].p, cn ? cn[k + i] : f, col);
    }
  }
  free(cn);
}

static void heightmap(sbuild *B, const pa_visual *v, const pa_vis_point *p) {
  uint32_t nx = v->grid_nx, ny = v->grid_ny;
  if (nx < 2 || ny < 2 || (uint64_t)nx * ny != v->pt_n)
    return;
  for (uint32_t j = 0; j + 1 < ny; j++)
    for (uint32_t i = 0; i + 1 < nx; i++) {
      static const uint32_t di[6] = {0, 1, 1, 0, 1, 0},
                            dj[6] = {0, 0, 1, 0, 1, 1};
      for (int k = 0; k < 6; k++) {
        uint32_t x = i + di[k], y = j + dj[k];
        const pa_vis_point *q = &p[y * nx + x];
        /* normal from central differences of the heights */
        const pa_vis_point *xl = &p[y * nx + (x ? x - 1 : x)];
        const pa_vis_point *xr = &p[y * nx + (x + 1 < nx ? x + 1 : x)];
        const pa_vis_point *yl = &p[(y ? y - 1 : y) * nx + x];
        const pa_vis_point *yr = &p[(y + 1 < ny ? y + 1 : y) * nx + x];
        float dx = xr->p[0] - xl->p[0], dy = yr->p[1] - yl->p[1];
        float n[3] = {-(xr->p[2] - xl->p[2]) / (dx != 0 ? dx : 1),
                      -(yr->p[2] - yl->p[2]) / (dy != 0 ? dy : 1), 1};
        uint8_t col[4];
        colour_of(q->rgba, v->rgba, col);
        emit_c(B, q->p, n, col);
      }
    }
}

/* An instanced visual's per-instance attributes (the lit program's
 * a_ipos, a_iquat, a_iscale, a_iinv), floats. */
typedef struct inst_attr {
  float pos[3], quat[4], scale[3], inv[4];
} inst_attr;

/* a times b, quaternions w, x, y, z */
static void qmul(const float a[4], const float b[4], float o[4]) {
  o[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
  o[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
  o[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
  o[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
}

/* Instance k's world pose and colour: the instance's frame composed with
 * the visual's (vq, B->x). False when it is translucent. */
static bool instance(const sbuild *B, const float vq[4], const pa_visual *v,
                     const pa_vis_point *p, inst_attr *o) {
  uint32_t st = v->inst_stride;
  float q[4] = {1, 0, 0, 0}, wq[4];
  if (st >= 2) {
    const float *u = p[1].p;
    float w2 = 1 - u[0] * u[0] - u[1] * u[1] - u[2] * u[2];
    q[0] = w2 > 0 ? sqrtf(w2) : 0, q[1] = u[0], q[2] = u[1], q[3] = u[2];
  }
  qmul(vq, q, wq);
  o->quat[0] = wq[1], o->quat[1] = wq[2], o->quat[2] = wq[3];
  o->quat[3] = wq[0];
  mat_vec(B->x.r, p[0].p, o->pos);
  uint8_t c[4];
  colour_of(p[0].rgba, v->rgba, c);
  for (int i = 0; i < 3; i++) {
    o->pos[i] += B->x.t[i];
    o->scale[i] = (st == 3 ? p[2].p[i] : 1) - 1;
    o->inv[i] = 1 - (float)c[i] / 255.0f;
  }
  o->inv[3] = (float)c[3] / 255.0f;
  return c[3] == 255;
}

/* An instanced visual: its shape once into tm (white, in its own frame)
 * and its instances' attributes into ia, opaque ones first; the draws go
 * to L's list. */
static void instances(pa_render_lines *L, sbuild *B, const float vq[4],
                      const pa_visual *v, const pa_vis_point *p, bool cam,
                      rmesh *tm, inst_attr **ia, uint32_t *nia, uint32_t *cap) {
  uint32_t st = v->inst_stride, n = st ? v->pt_n / st : 0;
  if (st < 1 || st > 3 || v->inst_shape < PA_VIS_SPHERE ||
      v->inst_shape > PA_VIS_ARROW || !n || L->s_ndraw >= PA_VIS_MAX)
    return;
  if (*nia + n > *cap) {
    uint32_t c = (*nia + n) * 2;
    inst_attr *g = realloc(*ia, (size_t)c * sizeof *g);
    if (!g)
      return;
    *ia = g, *cap = c;
  }
  uint32_t first = tm->n, base = *nia, opaque = 0;
  sbuild T;
  memset(&T, 0, sizeof T);
  quat_mat((const float[4]){1, 0, 0, 0}, T.x.r);
  T.x.s[0] = T.x.s[1] = T.x.s[2] = 1;
  memset(T.rgba, 255, sizeof T.rgba);
  T.m = tm;
  shape(&T, v->inst_shape, v->size, n > 2000 ? 2 : n > 200 ? 1 : 0);
  /* opaque instances from the front of the run, translucent from the back */
  uint32_t back = base + n;
  for (uint32_t k = 0; k < n; k++) {
    inst_attr a;
    if (instance(B, vq, v, p + (size_t)k * st, &a))
      (*ia)[base + opaque++] = a;
    else
      (*ia)[--back] = a;
  }
  *nia += n;
  pa_render_idraw *d = &L->s_draw[L->s_ndraw++];
  d->first = (GLint)first;
  d->count = (GLsizei)(tm->n - first);
  d->inst = base, d->n_opaque = opaque, d->n_blend = n - opaque;
  d->cam = cam;
}

/* Whether visual v's points lie inside the block. */
static bool points_ok(const pa_visual_block *b, const pa_visual *v) {
  return b->pt_used <= PA_VIS_POINTS_MAX &&
         (!v->pt_n || (uint64_t)v->pt_off + v->pt_n <= b->pt_used);
}

/* The visual's frame into B (and its unit quaternion into q). */
static void frame(const pa_visual *v, sbuild *B, float q[4]) {
  memset(B, 0, sizeof *B);
  memcpy(q, v->quat, 4 * sizeof *q);
  float ql = sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  if (!(ql > 1e-6f) || !isfinite(ql))
    q[0] = 1, q[1] = q[2] = q[3] = 0, ql = 1;
  for (int i = 0; i < 4; i++)
    q[i] /= ql;
  quat_mat(q, B->x.r);
  memcpy(B->x.t, v->pos, sizeof B->x.t);
  B->x.s[0] = B->x.s[1] = B->x.s[2] = 1;
  colour_of(0, v->rgba, B->rgba);
}

/* Visual v's triangles into op (opaque) or bl (translucent). */
static void visual(const pa_visual_block *b, const pa_visual *v, rmesh *op,
                   rmesh *bl) {
  sbuild B;
  float q[4];
  frame(v, &B, q);
  B.m = B.rgba[3] < 255 ? bl : op;
  const pa_vis_point *p = &b->pt[v->pt_n ? v->pt_off : 0];
  switch (v->type) {
  case PA_VIS_MESH:
    for (int i = 0; i < 3; i++)
      B.x.s[i] = v->size[i] > 0 ? v->size[i] : 1;
    mesh(&B, v, p);
    break;
  case PA_VIS_HEIGHTMAP:
    heightmap(&B, v, p);
    break;
  default:
    shape(&B, v->type, v->size, 0);
    break;
  }
}

static bool same_block(const pa_render_lines *L, const pa_visual_block *b) {
  return L->s_ok && L->s_block == b && L->s_gen == b->gen &&
         L->s_seq == b->seq && L->s_count == b->count &&
         L->s_pt_used == b->pt_used;
}

/* The instanced visuals' shapes and attributes into their buffers, and
 * their VAO: attributes 0-2 from the shapes, 3-6 per instance (pointed at
 * each draw's instances when drawn). */
static void bake_instances(pa_render_lines *L, const rmesh *tm,
                           const inst_attr *ia, uint32_t nia) {
  if (tm->oom)
    L->s_ndraw = 0;
  if (!L->s_ivao) {
    glGenVertexArrays(1, &L->s_ivao);
    glGenBuffers(1, &L->s_tvbo);
    glGenBuffers(1, &L->s_ivbo);
    glBindVertexArray(L->s_ivao);
    glBindBuffer(GL_ARRAY_BUFFER, L->s_tvbo);
    pa_render_rvertex_attribs();
    for (GLuint a = PA_RENDER_ATTR_IPOS; a <= PA_RENDER_ATTR_IINV; a++) {
      glEnableVertexAttribArray(a);
      glVertexAttribDivisor(a, 1);
    }
    glBindVertexArray(0);
  }
  glBindBuffer(GL_ARRAY_BUFFER, L->s_tvbo);
  glBufferData(GL_ARRAY_BUFFER,
               (GLsizeiptr)(L->s_ndraw ? tm->n * sizeof *tm->v : 0), tm->v,
               GL_STATIC_DRAW);
  glBindBuffer(GL_ARRAY_BUFFER, L->s_ivbo);
  glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)(L->s_ndraw ? nia * sizeof *ia : 0),
               ia, GL_STATIC_DRAW);
  glBindBuffer(GL_ARRAY_BUFFER, 0);
}

/* Draws the instanced visuals' opaque instances, or their translucent
 * ones (blend), those seen by the head cameras only when camera_only. */
static void draw_instances(const pa_render_lines *L, bool blend,
                           bool camera_only) {
  if (!L->s_ndraw)
    return;
  glBindVertexArray(L->s_ivao);
  glBindBuffer(GL_ARRAY_BUFFER, L->s_ivbo);
  for (uint32_t i = 0; i < L->s_ndraw; i++) {
    const pa_render_idraw *d = &L->s_draw[i];
    uint32_t first = d->inst + (blend ? d->n_opaque : 0);
    uint32_t n = blend ? d->n_blend : d->n_opaque;
    if (!n || (camera_only && !d->cam))
      continue;
    size_t at = (size_t)first * sizeof(inst_attr);
    glVertexAttribPointer(PA_RENDER_ATTR_IPOS, 3, GL_FLOAT, GL_FALSE,
                          sizeof(inst_attr),
                          (void *)(at + offsetof(inst_attr, pos)));
    glVertexAttribPointer(PA_RENDER_ATTR_IQUAT, 4, GL_FLOAT, GL_FALSE,
                          sizeof(inst_attr),
                          (void *)(at + offsetof(inst_attr, quat)));
    glVertexAttribPointer(PA_RENDER_ATTR_ISCALE, 3, GL_FLOAT, GL_FALSE,
                          sizeof(inst_attr),
                          (void *)(at + offsetof(inst_attr, scale)));
    glVertexAttribPointer(PA_RENDER_ATTR_IINV, 4, GL_FLOAT, GL_FALSE,
                          sizeof(inst_attr),
                          (void *)(at + offsetof(inst_attr, inv)));
    glDrawArraysInstanced(GL_TRIANGLES, d->first, d->count, (GLsizei)n);
  }
  glBindBuffer(GL_ARRAY_BUFFER, 0);
  pa_render_lit_instance_defaults(); /* 3.3: undefined after such draws */
}

/* Re-makes L's buffer from b: the four runs. */
static void bake(pa_render_lines *L, const pa_visual_block *b) {
  rmesh run[4], tm = {0};
  memset(run, 0, sizeof run);
  inst_attr *ia = NULL;
  uint32_t nia = 0, cap = 0;
  L->s_ndraw = 0;
  for (uint32_t i = 0; i < b->count && i < PA_VIS_MAX; i++) {
    const pa_visual *v = &b->v[i];
    if (!v->visible || !pa_render_vis_solid(v->type) || !points_ok(b, v))
      continue;
    int cam = v->camera_visible ? 0 : 1;
    if (v->type == PA_VIS_INSTANCED) {
      sbuild B;
      float q[4];
      frame(v, &B, q);
      instances(L, &B, q, v, &b->pt[v->pt_n ? v->pt_off : 0], !cam, &tm, &ia,
                &nia, &cap);
    } else {
      visual(b, v, &run[cam], &run[2 + cam]);
    }
  }
  bake_instances(L, &tm, ia, nia);
  pa_render_mesh_free(&tm);
  free(ia);
  size_t total = 0;
  bool oom = false;
  for (int k = 0; k < 4; k++)
    total += run[k].n, oom = oom || run[k].oom;
  rvertex *all = oom ? NULL : malloc((total ? total : 1) * sizeof *all);
  size_t at = 0;
  for (int k = 0; k < 4; k++) {
    if (all && run[k].n)
      memcpy(all + at, run[k].v, run[k].n * sizeof *all);
    L->s_run[k] = all ? (GLsizei)run[k].n : 0;
    at += run[k].n;
    pa_render_mesh_free(&run[k]);
  }
  if (!L->s_vao) {
    glGenVertexArrays(1, &L->s_vao);
    glGenBuffers(1, &L->s_vbo);
    glBindVertexArray(L->s_vao);
    glBindBuffer(GL_ARRAY_BUFFER, L->s_vbo);
    pa_render_rvertex_attribs();
    glBindVertexArray(0);
  }
  glBindBuffer(GL_ARRAY_BUFFER, L->s_vbo);
  glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)(all ? total * sizeof *all : 0),
               all, GL_STATIC_DRAW);
  glBindBuffer(GL_ARRAY_BUFFER, 0);
  free(all);
  L->s_ok = true;
  L->s_block = b;
  L->s_gen = b->gen, L->s_seq = b->seq;
  L->s_count = b->count, L->s_pt_used = b->pt_used;
}

void pa_render_visuals_solid(pa_render_lines *L, const pa_visual_block *b,
                             const pa_render_scene *s, bool camera_only) {
  if (!b || !s)
    return;
  if (!same_block(L, b))
    bake(L, b);
  GLint first[2] = {0, L->s_run[0] + L->s_run[1]};
  GLsizei n[2] = {camera_only ? L->s_run[0] : L->s_run[0] + L->s_run[1],
                  camera_only ? L->s_run[2] : L->s_run[2] + L->s_run[3]};
  if (!n[0] && !n[1] && !L->s_ndraw)
    return;
  /* The scene's program with the uniforms its draw of this frame set
   * (view, projection, lights, fog): the world-space triangles need only
   * an identity model and a white tint. */
  glUseProgram(s->lit.prog);
  float id[16];
  pa_render_mat_identity(id);
  glUniformMatrix4fv(s->lit.u_model, 1, GL_FALSE, id);
  glUniform4f(s->lit.u_tint, 1, 1, 1, 1);
  glEnable(GL_DEPTH_TEST);
  glDisable(GL_CULL_FACE); /* a client's mesh may wind either way */
  glBindVertexArray(L->s_vao);
  if (n[0])
    glDrawArrays(GL_TRIANGLES, first[0], n[0]);
  draw_instances(L, false, camera_only);
  glEnable(GL_BLEND);
  glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA);
  glDepthMask(GL_FALSE);
  if (n[1]) {
    glBindVertexArray(L->s_vao);
    glDrawArrays(GL_TRIANGLES, first[1], n[1]);
  }
  draw_instances(L, true, camera_only);
  glDepthMask(GL_TRUE);
  glDisable(GL_BLEND);
  glBindVertexArray(0);
  glEnable(GL_CULL_FACE);
  glUseProgram(0);
}

void pa_render_solid_free(pa_render_lines *L) {
  if (L->s_vbo)
    glDeleteBuffers(1, &L->s_vbo);
  if (L->s_vao)
    glDeleteVertexArrays(1, &L->s_vao);
  if (L->s_tvbo)
    glDeleteBuffers(1, &L->s_tvbo);
  if (L->s_ivbo)
    glDeleteBuffers(1, &L->s_ivbo);
  if (L->s_ivao)
    glDeleteVertexArrays(1, &L->s_ivao);
  L->s_vbo = L->s_vao = L->s_tvbo = L->s_ivbo = L->s_ivao = 0;
  L->s_ndraw = 0;
  L->s_ok = false;
}
