/* atlas.c - batched head cameras: n views of one size drawn into the tiles
 * of one framebuffer and read back at once (pa_render_atlas.h). On
 * llvmpipe a small camera costs mostly per-frame overhead (target switch,
 * clear, readback, the wait for the rasteriser), which one atlas pays once
 * for all its tiles. */
#include "pa_render_atlas.h"
#include "render_int.h"
#include "render_parts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* framebuffer side [px]: more tiles, more passes */
#define ATLAS_MAX_FB 2048u

/* a->unit[]: the cylinders by level of detail, the blob, the cube */
#define UNIT_BLOB PA_RENDER_LODS
#define UNIT_CUBE (PA_RENDER_LODS + 1)
#define UNITS (PA_RENDER_LODS + 2)

/* A unit mesh read back from its buffer as its distinct vertices and one
 * index per original vertex: the same triangles, each vertex shaded once
 * (llvmpipe's vertex work is most of a robot's cost). */
typedef struct unit_mesh {
  rvertex *raw, *uniq;
  uint32_t *idx;
  /* per distinct vertex: its normal straight up (1), down (-1) or neither
   * (0); a part's pose (a turn about z, positive scales) keeps it */
  int8_t *level;
  size_t n, nu, cap;
} unit_mesh;

struct pa_render_atlas {
  uint32_t w, h;       /* tile [px] */
  uint32_t cols, rows; /* of the current framebuffer */
  GLuint fbo, rb[2];
  uint8_t *rgba; /* readback, cols*w x rows*h RGBA */
  bool *active;  /* the scene's robots' pose flags, kept */
  uint32_t active_cap;
  /* every robot's parts merged in world coordinates, drawn per view with
   * one multi-draw (and one for their shadows) instead of six draws each */
  GLuint vao, vbo, ibo;
  rvertex *v;   /* merged vertices */
  uint32_t *ix; /* merged triangles */
  size_t v_cap, ix_cap;
  /* the scene's unit meshes read back: its cylinders by level of detail,
   * its blob, then its cube (UNIT_*) */
  unit_mesh unit[UNITS];
  uint64_t unit_serial; /* of the scene they were read from, 0: none */
  /* per robot and level of detail (i * PA_RENDER_LODS + level): its
   * parts' indices and their count (0: not merged); per robot (i): its
   * shadow's, the same at every level */
  size_t *first, *bfirst;
  GLsizei *count, *bcount, *dcount; /* dcount: per view */
  const void **doff;                /* per view: offsets of the draws */
  double *reach;   /* per robot: its vertices' farthest from its centre [m] */
  uint8_t *levels; /* per robot: the levels of detail the views need */
  uint32_t robots_cap;
  float top;     /* [m] the robots' highest vertex */
  float *wall_d; /* [w] the view's wall distances (occlusion.c) */
  double focal[PA_RENDER_ATLAS_MAX_TILES]; /* the merge's views' [px] */
  rprogram plain; /* the lit program without instancing, made at first use */
};

int pa_render_atlas_create(pa_render_atlas **out, uint32_t w, uint32_t h,
                           char *err, size_t err_sz) {
  *out = NULL;
  if (w < 1 || h < 1 || w > PA_RENDER_ATLAS_MAX_SIDE ||
      h > PA_RENDER_ATLAS_MAX_SIDE) {
    snprintf(err, err_sz, "atlas: tile size %ux%u is outside 1..%u", w, h,
             PA_RENDER_ATLAS_MAX_SIDE);
    return -1;
  }
  pa_render_atlas *a = calloc(1, sizeof *a);
  if (!a) {
    snprintf(err, err_sz, "atlas: out of memory");
    return -1;
  }
  a->w = w, a->h = h;
  a->wall_d = malloc(w * sizeof *a->wall_d);
  if (!a->wall_d) {
    free(a);
    snprintf(err, err_sz, "atlas: out of memory");
    return -1;
  }
  *out = a;
  return 0;
}

static void atlas_free_fb(pa_render_atlas *a) {
  if (a->fbo)
    glDeleteFramebuffers(1, &a->fbo);
  if (a->rb[0])
    glDeleteRenderbuffers(2, a->rb);
  a->fbo = a->rb[0] = a->rb[1] = 0;
  free(a->rgba);
  a->rgba = NULL;
  a->cols = a->rows = 0;
}

static void unit_free(unit_mesh *u);

void pa_render_atlas_free(pa_render_atlas *a) {
  if (!a)
    return;
  atlas_free_fb(a);
  if (a->vbo)
    glDeleteBuffers(1, &a->vbo);
  if (a->ibo)
    glDeleteBuffers(1, &a->ibo);
  if (a->vao)
    glDeleteVertexArrays(1, &a->vao);
  free(a->active);
  free(a->v);
  free(a->ix);
  for (int i = 0; i < UNITS; i++)
    unit_free(&a->unit[i]);
  free(a->first), free(a->bfirst);
  free(a->count), free(a->bcount), free(a->dcount);
  free(a->doff);
  free(a->reach);
  free(a->levels);
  free(a->wall_d);
  if (a->plain.prog)
    glDeleteProgram(a->plain.prog);
  free(a);
}

uint32_t pa_render_atlas_width(const pa_render_atlas *a) { return a->w; }
uint32_t pa_render_atlas_height(const pa_render_atlas *a) { return a->h; }

uint32_t pa_render_atlas_tiles_per_pass(const pa_render_atlas *a) {
  return (ATLAS_MAX_FB / a->w) * (ATLAS_MAX_FB / a->h);
}

/* The columns of n views' layout (as square as the limits let it be: less
 * to clear and read than one long strip). */
static uint32_t layout_cols(const pa_render_atlas *a, uint32_t n) {
  uint32_t max_c = ATLAS_MAX_FB / a->w, max_r = ATLAS_MAX_FB / a->h;
  uint32_t cols = (uint32_t)ceil(sqrt((double)n * a->h / a->w));
  if (cols < 1)
    cols = 1;
  if (cols > max_c)
    cols = max_c;
  if (cols > n)
    cols = n;
  if ((n + cols - 1) / cols > max_r) /* too tall: as wide as it takes */
    cols = (n + max_r - 1) / max_r;  /* (n <= max_c * max_r) */
  return cols;
}

uint32_t pa_render_atlas_columns(const pa_render_atlas *a, uint32_t n) {
  return n ? layout_cols(a, n) : 1;
}

/* A framebuffer of n views' layout; exact: with just its columns (the
 * tiles where another atlas of the same size puts them: parts of one
 * batch drawn by several contexts), else any one that holds them. */
static int atlas_fit(pa_render_atlas *a, uint32_t n, bool exact, char *err,
                     size_t err_sz) {
  uint32_t cols = layout_cols(a, n), rows = (n + cols - 1) / cols;
  if (a->fbo && (exact ? a->cols == cols : a->cols >= cols) && a->rows >= rows)
    return 0; /* the one we have holds them */
  atlas_free_fb(a);
  GLsizei fw = (GLsizei)(cols * a->w), fh = (GLsizei)(rows * a->h);
  GLenum st = pa_render_target(0, fw, fh, &a->fbo, a->rb);
  a->rgba = malloc((size_t)fw * (size_t)fh * 4);
  if (st != GL_FRAMEBUFFER_COMPLETE || !a->rgba) {
    snprintf(err, err_sz, "atlas: %dx%d framebuffer %s (0x%04x)", (int)fw,
             (int)fh, a->rgba ? "incomplete" : "out of memory", (unsigned)st);
    atlas_free_fb(a);
    return -1;
  }
  a->cols = cols, a->rows = rows;
  return pa_render_gl_check("creating an atlas target", err, err_sz);
}

/* Copies tile t of the readback to dst (h rows of w RGB, row 0 = top). */
static void tile_out(const pa_render_atlas *a, uint32_t t, uint8_t *dst) {
  uint32_t c = t % a->cols, r = t / a->cols;
  size_t stride = (size_t)a->cols * a->w * 4;
  for (uint32_t y = 0; y < a->h; y++)
    pa_render_rgba_to_rgb(dst + (size_t)y * a->w * 3,
                          a->rgba +
                              ((size_t)r * a->h + (a->h - 1 - y)) * stride +
                              (size_t)c * a->w * 4,
                          a->w);
}

static int unit_read(unit_mesh *u, const rgpu_mesh *g) {
  size_t n = (size_t)g->count;
  if (n > u->cap) {
    rvertex *r = realloc(u->raw, n * sizeof *r);
    if (r)
      u->raw = r;
    rvertex *q = realloc(u->uniq, n * sizeof *q);
    if (q)
      u->uniq = q;
    uint32_t *x = realloc(u->idx, n * sizeof *x);
    if (x)
      u->idx = x;
    int8_t *l = realloc(u->level, n * sizeof *l);
    if (l)
      u->level = l;
    if (!r || !q || !x || !l)
      return -1;
    u->cap = n;
  }
  u->n = n;
  glBindBuffer(GL_ARRAY_BUFFER, g->vbo);
  glGetBufferSubData(GL_ARRAY_BUFFER, 0, (GLsizeiptr)(n * sizeof(rvertex)),
                     u->raw);
  glBindBuffer(GL_ARRAY_BUFFER, 0);
  u->nu = 0;
  for (size_t i = 0; i < n; i++) {
    size_t j = 0;
    while (j < u->nu && memcmp(&u->uniq[j], &u->raw[i], sizeof(rvertex)))
      j++;
    if (j == u->nu)
      u->uniq[u->nu++] = u->raw[i];
    u->idx[i] = (uint32_t)j;
  }
  for (size_t j = 0; j < u->nu; j++) {
    const float *nv = u->uniq[j].normal;
    float nn = nv[0] * nv[0] + nv[1] * nv[1] + nv[2] * nv[2];
    u->level[j] = nv[2] * nv[2] > 0.999f * nn ? (nv[2] > 0 ? 1 : -1) : 0;
  }
  return 0;
}

static void unit_free(unit_mesh *u) {
  free(u->raw);
  free(u->uniq);
  free(u->idx);
  free(u->level);
}

/* Appends part q (unit mesh u) in world coordinates, as the lit shader would
 * place and light it with q's model matrix (its tint baked into the colour
 * bytes): its vertices at a->v + *vat, its triangles' indices at a->ix +
 * *iat, less those facing down from below every eye (eye_lo) and those
 * facing up from above up_from (back faces to all the views, culled
 * anyway, or hidden: top_hidden); widens *reach2 (squared) from (cx, cy). */
static void put_part(pa_render_atlas *a, size_t *vat, size_t *iat,
                     const rpart *q, const unit_mesh *u, double eye_lo,
                     double up_from, double cx, double cy, double *reach2) {
  float m[16];
  pa_render_mat_pose_cs(m, q->x, q->y, q->z, q->c, q->s, q->scale);
  rvertex *o = &a->v[*vat];
  uint8_t from[4] = {0, 0, 0, 0}, tinted[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < u->nu; i++) {
    const rvertex *src = &u->uniq[i];
    rvertex *t = &o[i];
    for (int r = 0; r < 3; r++) {
      t->pos[r] = m[r] * src->pos[0] + m[4 + r] * src->pos[1] +
                  m[8 + r] * src->pos[2] + m[12 + r];
      t->normal[r] = m[r] * src->normal[0] + m[4 + r] * src->normal[1] +
                     m[8 + r] * src->normal[2];
    }
    /* a unit mesh has one or two colours: each tinted once */
    if (!i || src->colour[0] != from[0] || src->colour[1] != from[1] ||
        src->colour[2] != from[2]) {
      memcpy(from, src->colour, 3);
      for (int r = 0; r < 3; r++) {
        float c = q->rgb[r] * src->colour[r];
        tinted[r] = (uint8_t)(c <= 0 ? 0 : c >= 255 ? 255 : lrintf(c));
      }
    }
    memcpy(t->colour, tinted, 3);
    t->colour[3] = src->colour[3];
    double ex = t->pos[0] - cx, ey = t->pos[1] - cy;
    if (ex * ex + ey * ey > *reach2)
      *reach2 = ex * ex + ey * ey;
    if (t->pos[2] > a->top)
      a->top = t->pos[2];
  }
  uint32_t base = (uint32_t)*vat, *out = &a->ix[*iat];
  for (size_t i = 0; i + 2 < u->n; i += 3) {
    const uint32_t *id = &u->idx[i];
    int l = u->level[id[0]];
    if (l && u->level[id[1]] == l && u->level[id[2]] == l) {
      float z0 = o[id[0]].pos[2], z1 = o[id[1]].pos[2], z2 = o[id[2]].pos[2];
      if (l < 0 ? z0 < eye_lo && z1 < eye_lo && z2 < eye_lo
                : z0 > up_from && z1 > up_from && z2 > up_from)
        continue;
    }
    out[0] = base + id[0], out[1] = base + id[1], out[2] = base + id[2];
    out += 3;
  }
  *iat = (size_t)(out - a->ix);
  *vat += u->nu;
}

static int grow_robots(pa_render_atlas *a, uint32_t n, size_t verts,
                       size_t idx) {
  if (n > a->robots_cap) {
    GLsizei **c[3] = {&a->count, &a->bcount, &a->dcount};
    size_t **f[2] = {&a->first, &a->bfirst};
    static const unsigned per_c[3] = {PA_RENDER_LODS, 1, 2};
    static const unsigned per_f[2] = {PA_RENDER_LODS, 1};
    for (int k = 0; k < 3; k++) {
      GLsizei *nc = realloc(*c[k], per_c[k] * n * sizeof **c[k]);
      if (!nc)
        return -1;
      *c[k] = nc;
    }
    for (int k = 0; k < 2; k++) {
      size_t *nf = realloc(*f[k], per_f[k] * n * sizeof **f[k]);
      if (!nf)
        return -1;
      *f[k] = nf;
    }
    const void **o = realloc(a->doff, 2 * n * sizeof *o);
    if (!o)
      return -1;
    a->doff = o;
    double *r = realloc(a->reach, n * sizeof *r);
    if (!r)
      return -1;
    a->reach = r;
    uint8_t *lv = realloc(a->levels, n * sizeof *lv);
    if (!lv)
      return -1;
    a->levels = lv;
    a->robots_cap = n;
  }
  if (verts > a->v_cap) {
    rvertex *v = realloc(a->v, verts * sizeof *v);
    if (!v)
      return -1;
    a->v = v, a->v_cap = verts;
  }
  if (idx > a->ix_cap) {
    uint32_t *x = realloc(a->ix, idx * sizeof *x);
    if (!x)
      return -1;
    a->ix = x, a->ix_cap = idx;
  }
  return 0;
}

static void merge_upload(pa_render_atlas *a, size_t verts, size_t idx) {
  if (!a->vao) {
    glGenVertexArrays(1, &a->vao);
    glGenBuffers(1, &a->vbo);
    glGenBuffers(1, &a->ibo);
    glBindVertexArray(a->vao);
    glBindBuffer(GL_ARRAY_BUFFER, a->vbo);
    glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, a->ibo); /* kept by the VAO */
    pa_render_rvertex_attribs();
    glBindVertexArray(0);
  }
  glBindBuffer(GL_ARRAY_BUFFER, a->vbo);
  glBufferData(GL_ARRAY_BUFFER,
               (GLsizeiptr)((verts ? verts : 1) * sizeof(rvertex)), a->v,
               GL_STREAM_DRAW);
  glBindBuffer(GL_ARRAY_BUFFER, 0);
  glBindVertexArray(a->vao);
  glBufferData(GL_ELEMENT_ARRAY_BUFFER,
               (GLsizeiptr)((idx ? idx : 1) * sizeof(uint32_t)), a->ix,
               GL_STREAM_DRAW);
  glBindVertexArray(0);
}

/* The height above which cylinder part c's faces up are never seen: its
 * top cap lies in the bottom face of box part b, strictly inside it (a
 * robot's neck under its head), so from an eye above that face the box is
 * in front of it and from below it faces away; with every eye (views, as
 * pa_render_atlas_render's) outside the box and beyond the near plane from
 * it (an eye inside a robot that overlaps another sees its inside).
 * INFINITY when not so. */
static double top_hidden(const rpart *c, const rpart *b,
                         const pa_render_view *views, const bool *draw,
                         uint32_t nv) {
  double top = c->z + c->scale[2];        /* unit cylinder: z in [0, 1] */
  double bottom = b->z - b->scale[2] / 2; /* unit cube: centred */
  if (!(fabs(top - bottom) < 1e-6))
    return INFINITY;
  double dx = c->x - b->x, dy = c->y - b->y, cs = b->c, sn = b->s;
  double lx = cs * dx + sn * dy, ly = cs * dy - sn * dx;
  double r = fmax(c->scale[0], c->scale[1]) + 1e-4; /* [m] slack */
  if (!(fabs(lx) + r < b->scale[0] / 2 && fabs(ly) + r < b->scale[1] / 2))
    return INFINITY;
  /* [m] the box's half diagonal, the near plane's 0.03 and slack */
  double clear = hypot(b->scale[0], b->scale[1]) / 2 + 0.1;
  for (uint32_t e = 0; e < nv; e++) {
    double ex = views[e].x - b->x, ey = views[e].y - b->y;
    if ((!draw || draw[e]) && ex * ex + ey * ey <= clear * clear)
      return INFINITY;
  }
  return top - 1e-5;
}

/* The scene's mesh that a->unit[k] is read from. */
static const rgpu_mesh *unit_src(const pa_render_scene *s, int k) {
  return k < UNIT_BLOB ? &s->cyl[k] : k == UNIT_BLOB ? &s->blob : &s->cube;
}

/* The unit mesh (of a->unit) that scene mesh g was read into. */
static const unit_mesh *unit_of(const pa_render_atlas *a,
                                const pa_render_scene *s, const rgpu_mesh *g) {
  int k = 0;
  while (k < UNIT_CUBE && unit_src(s, k) != g)
    k++;
  return &a->unit[k];
}

/* The scene's unit meshes read back (once a scene). */
static int units_read(pa_render_atlas *a, const pa_render_scene *s) {
  if (a->unit_serial == s->serial)
    return 0;
  a->unit_serial = 0;
  for (int k = 0; k < UNITS; k++)
    if (unit_read(&a->unit[k], unit_src(s, k)) < 0)
      return -1;
  a->unit_serial = s->serial;
  return 0;
}

/* a->levels: for each robot, the levels of detail at which some of the
 * views [0, nv) may draw it: those whose wedge it may show in by its
 * reach_bound (draw_robots tests its reach, which is less, so a robot it
 * draws is merged at the view's level), all for views that do not cull. */
static void robot_levels(pa_render_atlas *a, const pa_render_scene *s,
                         const pa_render_view *views, const bool *draw,
                         uint32_t nv) {
  uint32_t n = s->pose_count;
  memset(a->levels, 0, n * sizeof *a->levels);
  for (uint32_t e = 0; e < nv; e++) {
    const pa_render_view *v = &views[e];
    if (draw && !draw[e])
      continue;
    rwedge wg;
    pa_render_wedge(v, &wg);
    bool cull = !s->no_culling && v->pitch == 0 && wg.half < M_PI_2;
    const double *g = wg.edges;
    for (uint32_t i = 0; i < n; i++) {
      if (i == v->skip_robot || !a->active[i] || !s->robots[i].active)
        continue;
      const pa_render_pose *p = &s->poses[i];
      double b = s->robots[i].reach_bound, dx = p->x - v->x, dy = p->y - v->y;
      if (cull && dx * dx + dy * dy > (b + 0.1) * (b + 0.1) &&
          (g[0] * dy - g[1] * dx < -b || dx * g[3] - dy * g[2] < -b))
        continue; /* wholly beyond an edge of its wedge: not drawn */
      a->levels[i] |= (uint8_t)(1u << pa_render_robot_lod(
                                    v, a->focal[e], s->robots[i].radius, p));
    }
  }
}

/* Every active robot's parts and shadow at each level of detail some view
 * (views[0..nv), tiles a->w wide) draws it at, merged into one indexed
 * buffer for this atlas (the poses are the tick's: they change every
 * call). */
static int merge_robots(pa_render_atlas *a, const pa_render_scene *s,
                        const pa_render_view *views, const bool *draw,
                        uint32_t nv, double eye_lo, double eye_hi, char *err,
                        size_t err_sz) {
  uint32_t n = s->pose_count;
  if (units_read(a, s) < 0) {
    snprintf(err, err_sz, "atlas: out of memory for the robots' meshes");
    return -1;
  }
  /* at most every level of every robot; level 0 is the largest */
  const unit_mesh *c0 = &a->unit[0], *cube = &a->unit[UNIT_CUBE],
                  *b0 = &a->unit[UNIT_BLOB];
  size_t most_v = PA_RENDER_LODS * (2 * c0->nu + 3 * cube->nu) + b0->nu;
  size_t most_i = PA_RENDER_LODS * (2 * c0->n + 3 * cube->n) + b0->n;
  if (grow_robots(a, n ? n : 1, n * most_v + 1, n * most_i + 1) < 0) {
    snprintf(err, err_sz, "atlas: out of memory for %u robots", n);
    return -1;
  }
  for (uint32_t e = 0; e < nv; e++)
    a->focal[e] = pa_render_lod_focal(&views[e], a->w);
  robot_levels(a, s, views, draw, nv);
  size_t vat = 0, iat = 0;
  a->top = -INFINITY;
  /* counts 0: not merged (first and bfirst are read only past a count) */
  memset(a->count, 0, PA_RENDER_LODS * n * sizeof *a->count);
  memset(a->bcount, 0, n * sizeof *a->bcount);
  for (uint32_t i = 0; i < n; i++) {
    a->reach[i] = 0;
    if (!a->active[i] || !s->robots[i].active)
      continue;
    const pa_render_pose *p = &s->poses[i];
    unsigned levels = a->levels[i];
    double reach2 = 0;
    for (int l = 0; l < PA_RENDER_LODS; l++) {
      if (!(levels >> l & 1))
        continue;
      size_t at = i * PA_RENDER_LODS + (size_t)l;
      rpart q[PA_RENDER_ROBOT_PARTS];
      a->first[at] = iat;
      int k = pa_render_robot_parts(s, &s->robots[i], p, l, q);
      for (int j = 0; j < k; j++) {
        double up = eye_hi;
        bool cyl = q[j].mesh >= s->cyl && q[j].mesh < s->cyl + PA_RENDER_LODS;
        for (int b = 0; b < k && cyl; b++)
          if (q[b].mesh == &s->cube)
            up = fmin(up, top_hidden(&q[j], &q[b], views, draw, nv));
        put_part(a, &vat, &iat, &q[j], unit_of(a, s, q[j].mesh), eye_lo, up,
                 p->x, p->y, &reach2);
      }
      a->count[at] = (GLsizei)(iat - a->first[at]);
    }
    if (levels) {
      a->bfirst[i] = iat;
      rpart b = pa_render_robot_shadow(s, &s->robots[i], p);
      double square2 = 0; /* its corners, past the disc: nothing drawn */
      put_part(a, &vat, &iat, &b, unit_of(a, s, b.mesh), eye_lo, eye_hi, p->x,
               p->y, &square2);
      a->bcount[i] = (GLsizei)(iat - a->bfirst[i]);
      double disc = hypot(b.x - p->x, b.y - p->y) + 1.5 * b.scale[0];
      reach2 = fmax(reach2, disc * disc);
    }
    a->reach[i] = sqrt(reach2);
  }
  merge_upload(a, vat, iat);
  return pa_render_gl_check("merging the robots", err, err_sz);
}

/* The robots view v shows (its own skipped, those outside its wedge or
 * behind the walls too), their opaque parts, before the scene's statics
 * (as the scene draws them for one camera): they are small and usually in
 * front, and llvmpipe shades no pixel of a wall or the floor that fails
 * the depth test. The same bytes (bench-atlas --dump, both maps), 1-3 %
 * less CPU a frame. Returns how many; their draws stay in a->doff and
 * a->dcount for draw_robot_shadows. */
static GLsizei draw_robots(pa_render_atlas *a, const pa_render_scene *s,
                           const pa_render_view *v, const float view[16],
                           const float proj[16], const rcolumns *occ,
                           uint32_t n) {
  GLsizei m = 0;
  bool cull = !s->no_culling && v->pitch == 0;
  if (!(a->top <= PA_RENDER_WALL_HEIGHT))
    occ = NULL; /* robots taller than the walls show over them */
  rwedge wg;
  pa_render_wedge(v, &wg);
  const rwedge *e = wg.half < M_PI_2 ? &wg : NULL; /* else no wedge */
  const double focal = pa_render_lod_focal(v, a->w);
  for (uint32_t i = 0; i < n; i++) {
    if (i == v->skip_robot || !a->active[i] || !s->robots[i].active)
      continue;
    /* its level of detail here: one merge_robots made for this view */
    size_t at = i * PA_RENDER_LODS +
                (size_t)pa_render_robot_lod(v, focal, s->robots[i].radius,
                                            &s->poses[i]);
    if (!a->count[at] ||
        (cull && !pa_render_disc_shows(v, occ, e, s->poses[i].x, s->poses[i].y,
                                       a->reach[i] + 0.01)))
      continue;
    a->doff[m] = (const void *)(uintptr_t)(a->first[at] * sizeof(uint32_t));
    a->dcount[m] = a->count[at];
    a->doff[n + m] = (const void *)(uintptr_t)(a->bfirst[i] * sizeof(uint32_t));
    a->dcount[n + m] = a->bcount[i];
    m++;
  }
  if (!m)
    return 0;
  float id[16];
  pa_render_mat_identity(id);
  pa_render_scene_use_lit(s, &a->plain, view, proj);
  glUniformMatrix4fv(a->plain.u_model, 1, GL_FALSE, id);
  glUniform4f(a->plain.u_tint, 1, 1, 1, 1);
  glEnable(GL_DEPTH_TEST);
  glEnable(GL_CULL_FACE);
  glBindVertexArray(a->vao);
  glMultiDrawElements(GL_TRIANGLES, a->dcount, GL_UNSIGNED_INT, a->doff, m);
  glBindVertexArray(0);
  return m;
}

/* Their blended shadows, after the statics (the floor under them). */
static void draw_robot_shadows(pa_render_atlas *a, const pa_render_scene *s,
                               const float view[16], const float proj[16],
                               uint32_t n, GLsizei m) {
  if (!m || s->no_shadows)
    return;
  glBindVertexArray(a->vao);
  pa_render_scene_use_blobs(s, view, proj);
  glEnable(GL_BLEND);
  glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA);
  glDepthMask(GL_FALSE);
  glMultiDrawElements(GL_TRIANGLES, a->dcount + n, GL_UNSIGNED_INT, a->doff + n,
                      m);
  glDepthMask(GL_TRUE);
  glDisable(GL_BLEND);
  glBindVertexArray(0);
}

/* Draws views [t0, t1) of a pass of n into their tiles (the rows of tiles
 * they cover cleared, drawn and read back) and copies them out to rgb
 * (tile i at rgb + i * tile). */
static int atlas_pass(pa_render_atlas *a, pa_render_scene *s,
                      const pa_render_view *views, const bool *draw,
                      uint32_t t0, uint32_t t1, uint8_t *rgb, char *err,
                      size_t err_sz) {
  uint32_t robots = s->pose_count;
  glBindFramebuffer(GL_FRAMEBUFFER, a->fbo);
  GLsizei fw = (GLsizei)(a->cols * a->w);
  uint32_t r0 = t0 / a->cols, r1 = (t1 + a->cols - 1) / a->cols;
  GLint y0 = (GLint)(r0 * a->h);
  GLsizei fh = (GLsizei)((r1 - r0) * a->h);
  /* The whole framebuffer, though another context may draw some rows: each
   * draws into its own, and llvmpipe clears whole bins faster than a
   * scissored part (a helper's batch 0.2 ms sooner: bench-atlas). */
  glDisable(GL_SCISSOR_TEST);
  glViewport(0, y0, fw, fh);
  glClearColor(PA_RENDER_SKY_RGB, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
  glEnable(GL_SCISSOR_TEST); /* nothing of a view spills into its neighbours */
  for (uint32_t i = t0; i < t1; i++) {
    if (draw && !draw[i])
      continue;
    GLint x = (GLint)((i % a->cols) * a->w), y = (GLint)((i / a->cols) * a->h);
    glViewport(x, y, (GLsizei)a->w, (GLsizei)a->h);
    glScissor(x, y, (GLsizei)a->w, (GLsizei)a->h);
    float view[16], proj[16];
    pa_render_view_matrices(&views[i], a->w, a->h, view, proj);
    const pa_render_view *v = &views[i];
    /* what the walls hide: level cameras with their eye within the walls'
     * height (the scene culls level cameras only) */
    rcolumns occ = {a->wall_d, a->w}, *o = NULL;
    if (!s->no_culling && v->pitch == 0 && v->fov < M_PI * 0.95 && v->z >= 0 &&
        v->z <= PA_RENDER_WALL_HEIGHT) {
      pa_render_walls_columns(&s->walls, v, a->w, a->wall_d);
      o = &occ;
    }
    GLsizei m = draw_robots(a, s, v, view, proj, o, robots);
    s->pose_count = 0; /* the scene draws its statics, the atlas the robots */
    pa_render_scene_draw_occluded(s, view, proj, v->skip_robot, v, o, &a->plain,
                                  a->w);
    s->pose_count = robots;
    draw_robot_shadows(a, s, view, proj, robots, m);
  }
  glDisable(GL_SCISSOR_TEST);
  glPixelStorei(GL_PACK_ALIGNMENT, 4);
  glReadBuffer(GL_COLOR_ATTACHMENT0);
  /* RGBA: the target's own layout, a plain copy on llvmpipe */
  glReadPixels(0, y0, fw, fh, GL_RGBA, GL_UNSIGNED_BYTE,
               a->rgba + (size_t)y0 * (size_t)fw * 4);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  if (pa_render_gl_check("rendering an atlas", err, err_sz) < 0)
    return -1;
  size_t tile = (size_t)a->w * a->h * 3;
  for (uint32_t i = t0; i < t1; i++) {
    if (draw && !draw[i])
      memset(rgb + i * tile, 0, tile);
    else
      tile_out(a, i, rgb + i * tile);
  }
  return 0;
}

/* The checks and set-up of a call over views [0, n): the views, the
 * robots' flags, the program, the merged robots of the views [t0, t1). */
static int atlas_begin(pa_render_atlas *a, pa_render_scene *s,
                       const pa_render_view *views, const bool *draw,
                       uint32_t n, uint32_t t0, uint32_t t1, char *err,
                       size_t err_sz) {
  if (n < 1 || n > PA_RENDER_ATLAS_MAX_TILES) {
    snprintf(err, err_sz, "atlas: %u views is outside 1..%u", n,
             PA_RENDER_ATLAS_MAX_TILES);
    return -1;
  }
  for (uint32_t i = 0; i < n; i++) {
    const pa_render_view *v = &views[i];
    if ((!draw || draw[i]) &&
        (!(v->fov > 0 && v->fov < M_PI) || !isfinite(v->x) || !isfinite(v->y) ||
         !isfinite(v->z) || !isfinite(v->yaw) || !isfinite(v->pitch))) {
      snprintf(err, err_sz, "atlas: view %u is bad (fov %g rad, pose %g %g %g)",
               i, v->fov, v->x, v->y, v->yaw);
      return -1;
    }
  }
  if (s->pose_count > a->active_cap) {
    bool *k = realloc(a->active, s->pose_count * sizeof *k);
    if (!k) {
      snprintf(err, err_sz, "atlas: out of memory");
      return -1;
    }
    a->active = k, a->active_cap = s->pose_count;
  }
  for (uint32_t i = 0; i < s->pose_count; i++)
    a->active[i] = s->poses[i].active;
  double eye_lo = INFINITY, eye_hi = -INFINITY; /* these views' eyes */
  for (uint32_t i = t0; i < t1; i++)
    if (!draw || draw[i]) {
      eye_lo = fmin(eye_lo, views[i].z);
      eye_hi = fmax(eye_hi, views[i].z);
    }
  if (!a->plain.prog && pa_render_program_plain(&a->plain, err, err_sz) < 0)
    return -1;
  return merge_robots(a, s, views + t0, draw ? draw + t0 : NULL, t1 - t0,
                      eye_lo, eye_hi, err, err_sz);
}

int pa_render_atlas_render(pa_render_atlas *a, pa_render_scene *s,
                           const pa_render_view *views, const bool *draw,
                           uint32_t n, uint8_t *rgb, char *err, size_t err_sz) {
  if (atlas_begin(a, s, views, draw, n, 0, n, err, err_sz) < 0)
    return -1;
  uint32_t per = pa_render_atlas_tiles_per_pass(a);
  if (atlas_fit(a, n < per ? n : per, false, err, err_sz) < 0)
    return -1;
  size_t tile = (size_t)a->w * a->h * 3;
  for (uint32_t at = 0; at < n; at += per) {
    uint32_t k = n - at < per ? n - at : per;
    if (atlas_pass(a, s, views + at, draw ? draw + at : NULL, 0, k,
                   rgb + at * tile, err, err_sz) < 0)
      return -1;
  }
  return 0;
}

int pa_render_atlas_render_part(pa_render_atlas *a, pa_render_scene *s,
                                const pa_render_view *views, const bool *draw,
                                uint32_t n, uint32_t t0, uint32_t t1,
                                uint8_t *rgb, char *err, size_t err_sz) {
  if (n > pa_render_atlas_tiles_per_pass(a) || t0 >= t1 || t1 > n) {
    snprintf(err, err_sz,
             "atlas: part [%u, %u) of %u views is not within one pass", t0, t1,
             n);
    return -1;
  }
  if (atlas_begin(a, s, views, draw, n, t0, t1, err, err_sz) < 0 ||
      atlas_fit(a, n, true, err, err_sz) < 0)
    return -1;
  return atlas_pass(a, s, views, draw, t0, t1, rgb, err, err_sz);
}
