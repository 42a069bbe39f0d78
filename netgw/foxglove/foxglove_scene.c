/* foxglove_scene.c - /scene: the world (obstacles, agents, navigation
 * drawings, the SSL ball, each robot's body) and the visual objects as one
 * foxglove.SceneUpdate, with the memo that makes each update carry only what
 * changed. Each primitive is described once (pa_fox_prim) and written by
 * the channel's back-end, JSON or protobuf (foxglove_scene_be.c). */
#define _GNU_SOURCE
#include "foxglove.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The entities' sources, for the memo. */
enum { SG_WORLD, SG_VISUAL, SG_BALL, SG_HOOK };

typedef struct pa_fox_ent_memo {
  uint64_t key, body; /* hashes of the id and of the entity but its stamp */
  uint32_t group;     /* SG_*: which source it came from */
  char id[80];
} pa_fox_ent_memo;

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *c = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ c[i]) * 0x100000001b3ull;
  return h;
}
#define FNV0 0xcbf29ce484222325ull

void pa_fox_scene_memo_free(pa_fox_scene_memo *m) {
  free(m->prev);
  free(m->cur);
  for (int i = 0; i < PA_FOX_PRIMS; i++)
    pa_fox_buf_free(&m->prim[i]);
  pa_fox_buf_free(&m->head);
  pa_fox_buf_free(&m->pts);
  memset(m, 0, sizeof *m);
}

static int memo_cmp(const void *a, const void *b) {
  uint64_t x = ((const pa_fox_ent_memo *)a)->key,
           y = ((const pa_fox_ent_memo *)b)->key;
  return x < y ? -1 : x > y;
}

static const pa_fox_ent_memo *memo_find(const pa_fox_scene_memo *m,
                                        uint64_t key) {
  pa_fox_ent_memo k = {.key = key};
  return m->n_prev ? bsearch(&k, m->prev, m->n_prev, sizeof k, memo_cmp) : NULL;
}

static pa_fox_ent_memo *memo_add(pa_fox_scene_memo *m) {
  if (m->n_cur == m->cap_cur) {
    uint32_t cap = m->cap_cur ? 2 * m->cap_cur : 64;
    pa_fox_ent_memo *p = realloc(m->cur, cap * sizeof *p);
    if (!p)
      return NULL;
    m->cur = p;
    m->cap_cur = cap;
  }
  return &m->cur[m->n_cur++];
}

/* An update being written: the message, its encoding, the memo, what it
 * holds. */
struct pa_fox_scene_ctx {
  pa_fox_buf *b;
  const pa_fox_scene_be *be;
  pa_fox_scene_memo *m;
  uint64_t t_ns;
  bool full;
  size_t kept; /* entities written */
  char id[80];
  uint32_t group;
  const char *frame; /* the next entity's frame (NULL = map, not locked) */
};
typedef pa_fox_scene_ctx scene_ctx;

/* Opens an entity: its id and metadata (key, value, ..., NULL). */
static void ent_open(scene_ctx *x, uint32_t group, const char *id,
                     const char *const *meta) {
  snprintf(x->id, sizeof x->id, "%s", id);
  x->group = group;
  x->m->head.n = 0;
  x->m->head.oom = false;
  /* frame_locked: an entity in a robot's frame moves with its /tf */
  x->be->head(&x->m->head, x->frame ? x->frame : "map", x->id, x->frame != NULL,
              meta);
  for (int i = 0; i < PA_FOX_PRIMS; i++) {
    x->m->prim[i].n = 0;
    x->m->prim[i].oom = false;
  }
}

static void add(scene_ctx *x, const pa_fox_prim *p) {
  if (p->kind >= 0 && p->kind < PA_FOX_PRIMS)
    x->be->prim(&x->m->prim[p->kind], p);
}

/* Closes the entity; writes it unless an update that is not full finds it
 * as the last one sent. */
static void ent_close(scene_ctx *x) {
  pa_fox_buf *b = x->b;
  pa_fox_scene_memo *m = x->m;
  uint64_t body = fnv(FNV0, m->head.p, m->head.n);
  bool oom = m->head.oom;
  for (int i = 0; i < PA_FOX_PRIMS; i++) {
    body = fnv(body, &m->prim[i].n, sizeof m->prim[i].n);
    body = fnv(body, m->prim[i].p, m->prim[i].n);
    oom = oom || m->prim[i].oom;
  }
  pa_fox_ent_memo *e = oom ? NULL : memo_add(m);
  if (!e) {
    b->oom = true;
    return;
  }
  e->key = fnv(FNV0, x->id, strlen(x->id));
  e->body = body;
  e->group = x->group;
  snprintf(e->id, sizeof e->id, "%s", x->id);
  const pa_fox_ent_memo *old = x->full ? NULL : memo_find(m, e->key);
  if (old && old->body == e->body)
    return; /* unchanged since the last update */
  x->be->entity(b, x->kept, x->t_ns, &m->head, m->prim);
  x->kept++;
}

void pa_fox_scene_open(pa_fox_scene_ctx *x, const char *id,
                       const char *const *meta) {
  x->frame = NULL;
  ent_open(x, SG_HOOK, id, meta);
}

void pa_fox_scene_add(pa_fox_scene_ctx *x, const pa_fox_prim *p) { add(x, p); }

void pa_fox_scene_close(pa_fox_scene_ctx *x) { ent_close(x); }

/* A primitive of kind at x, y, z turned by yaw about z, white. */
static pa_fox_prim prim_at(int kind, double x, double y, double z, double yaw) {
  pa_fox_prim p = {.kind = kind,
                   .pos = {x, y, z},
                   .q = {cos(yaw / 2), 0, 0, sin(yaw / 2)},
                   .color = {1, 1, 1, 1},
                   .bottom_scale = 1,
                   .top_scale = 1};
  return p;
}

/* A primitive at a pose of position v and orientation q = w, x, y, z. */
static pa_fox_prim prim_q(int kind, const float v[3], const float q[4]) {
  pa_fox_prim p = prim_at(kind, v[0], v[1], v[2], 0);
  for (int i = 0; i < 4; i++)
    p.q[i] = q[i];
  return p;
}

/* An 8-bit RGBA colour; alpha 0 = opaque. */
static void col8(float out[4], const uint8_t c[4]) {
  for (int i = 0; i < 3; i++)
    out[i] = c[i] / 255.0f;
  out[3] = c[3] ? c[3] / 255.0f : 1.0f;
}

/* 0xRRGGBBAA as a colour; 0 = the visual's own. */
static void col_packed(float out[4], uint32_t u, const float own[4]) {
  if (!u) {
    memcpy(out, own, 4 * sizeof *out);
    return;
  }
  const uint8_t c[4] = {u >> 24, (u >> 16) & 255, (u >> 8) & 255, u & 255};
  for (int i = 0; i < 4; i++)
    out[i] = c[i] / 255.0f;
}

/* Room for n points and n colours in the memo's scratch (NULL: no
 * memory). */
static double (*scratch(scene_ctx *x, uint32_t n, float (**cols)[4]))[3] {
  pa_fox_buf *s = &x->m->pts;
  size_t need = (size_t)(n ? n : 1) * (3 * sizeof(double) + 4 * sizeof(float));
  if (s->cap < need) {
    char *p = realloc(s->p, need);
    if (!p)
      return NULL;
    s->p = p;
    s->cap = need;
  }
  *cols = (float(*)[4])(s->p + (size_t)(n ? n : 1) * 3 * sizeof(double));
  return (double(*)[3])s->p;
}

/* An arrow of shaft and head proportional to r. */
static void arrow_r(pa_fox_prim *p, double r) {
  p->shaft_length = r * 0.7;
  p->shaft_diameter = r * 0.15;
  p->head_length = r * 0.4;
  p->head_diameter = r * 0.4;
}

/* v rotated by the unit quaternion q = w, x, y, z. */
static void quat_rotate(const float q[4], const double v[3], double out[3]) {
  double w = q[0], x = q[1], y = q[2], z = q[3];
  double tx = 2 * (y * v[2] - z * v[1]), ty = 2 * (z * v[0] - x * v[2]),
         tz = 2 * (x * v[1] - y * v[0]);
  out[0] = v[0] + w * tx + (y * tz - z * ty);
  out[1] = v[1] + w * ty + (z * tx - x * tz);
  out[2] = v[2] + w * tz + (x * ty - y * tx);
}

static void obstacle_ents(scene_ctx *x, const pa_fox_scene_in *in) {
  static const char *const behaviours[PA_AGENT_COUNT] = {
      "", "constant", "waypoints", "random", "pedestrian"};
  for (uint32_t i = 0; i < in->n_obs; i++) {
    const pa_obstacle_info *o = &in->obs[i];
    if (!o->active)
      continue;
    char name[sizeof o->name + 1], id[64];
    snprintf(name, sizeof name, "%.*s", (int)sizeof o->name, o->name);
    bool agent = o->agent != PA_AGENT_NONE;
    snprintf(id, sizeof id, "%s/%s", agent ? "agent" : "obstacle", name);
    const char *meta[] = {
        "behaviour", o->agent < PA_AGENT_COUNT ? behaviours[o->agent] : "other",
        NULL};
    ent_open(x, SG_WORLD, id, agent ? meta : NULL);
    double h = o->height > 0 ? o->height : 0.5;
    bool circle = o->shape != 0 && o->radius > 0;
    pa_fox_prim p = prim_at(circle ? PA_FOX_PR_CYLINDER : PA_FOX_PR_CUBE, o->x,
                            o->y, h / 2, o->theta);
    p.size[0] = circle ? 2 * o->radius : o->size_x;
    p.size[1] = circle ? 2 * o->radius : o->size_y;
    p.size[2] = h;
    col8(p.color, o->colour);
    add(x, &p);
    if (agent) {
      /* its heading, on its top: it walks on its own */
      double r = circle ? o->radius : fmax(o->size_x, o->size_y) / 2;
      p = prim_at(PA_FOX_PR_ARROW, o->x, o->y, h + 0.02, o->theta);
      arrow_r(&p, r);
      add(x, &p);
    }
    ent_close(x);
  }
}

/* Each robot's body in its own frame (R/base_link, frame-locked: it moves
 * with /tf, and /scene is not resent as it drives): its footprint as a
 * cylinder of its colour and height, a heading arrow on top, its name
 * above. */
static void robot_ents(scene_ctx *x, const pa_fox_scene_in *in) {
  for (uint32_t r = 0; r < in->n_robots; r++) {
    const pa_robot_info *ri = &in->robots[r];
    if (!ri->active)
      continue;
    char name[sizeof ri->name + 1], id[64], frame[64];
    snprintf(name, sizeof name, "%.*s", (int)sizeof ri->name, ri->name);
    snprintf(id, sizeof id, "robot/%s", name);
    snprintf(frame, sizeof frame, "%s/base_link", name);
    double rad = ri->radius > 0 ? ri->radius : 0.2;
    double h = ri->height > 0 ? ri->height : 0.3;
    x->frame = frame;
    ent_open(x, SG_WORLD, id, (const char *const[]){"robot", name, NULL});
    x->frame = NULL;
    pa_fox_prim p = prim_at(PA_FOX_PR_CYLINDER, 0, 0, h / 2, 0);
    p.size[0] = p.size[1] = 2 * rad;
    p.size[2] = h;
    col8(p.color, ri->colour);
    add(x, &p);
    p = prim_at(PA_FOX_PR_ARROW, 0, 0, h + 0.01, 0);
    arrow_r(&p, rad);
    add(x, &p);
    p = prim_at(PA_FOX_PR_TEXT, 0, 0, h + 0.15, 0);
    p.billboard = true;
    p.font_size = 14;
    p.scale_invariant = true;
    p.text = name;
    add(x, &p);
    ent_close(x);
  }
}

/* A path thin, its waypoints a thicker strip (LINE_STRIP, 2 cm up). */
static void line_strip(scene_ctx *x, const float (*pts)[2], uint32_t n,
                       const uint8_t col[4], double thick) {
  float(*cols)[4];
  double(*p3)[3] = scratch(x, n, &cols);
  if (!p3) {
    x->b->oom = true;
    return;
  }
  for (uint32_t i = 0; i < n; i++) {
    p3[i][0] = pts[i][0];
    p3[i][1] = pts[i][1];
    p3[i][2] = 0;
  }
  pa_fox_prim p = prim_at(PA_FOX_PR_LINE, 0, 0, 0.02, 0);
  p.thickness = thick;
  p.pts = (const double(*)[3])p3;
  p.n_pts = n;
  col8(p.color, col);
  add(x, &p);
}

static void nav_ents(scene_ctx *x, const pa_fox_scene_in *in) {
  for (int i = 0; in->nav && i < PA_NAV_OVERLAYS; i++) {
    const pa_nav_overlay *ov = &in->nav->ov[i];
    if (ov->robot == UINT32_MAX || (!ov->path_n && !ov->wp_n))
      continue;
    char id[64];
    bool known = ov->robot < in->n_robots && in->robots[ov->robot].active;
    snprintf(id, sizeof id, "nav/%.31s",
             known ? in->robots[ov->robot].name : "?");
    uint8_t col[4] = {40, 200, 80, 255};
    if (known)
      memcpy(col, in->robots[ov->robot].colour, 4);
    col[3] = 255;
    ent_open(x, SG_WORLD, id, NULL);
    uint32_t pn = ov->path_n > PA_NAV_PATH_MAX ? PA_NAV_PATH_MAX : ov->path_n;
    uint32_t wn =
        ov->wp_n > PA_NAV_WAYPOINTS_MAX ? PA_NAV_WAYPOINTS_MAX : ov->wp_n;
    if (pn)
      line_strip(x, (const float(*)[2])ov->path, pn, col, 0.03);
    if (wn)
      line_strip(x, (const float(*)[2])ov->wp, wn, col, 0.08);
    ent_close(x);
  }
}

static void ball_ent(scene_ctx *x, const pa_tick *t) {
  if (!t || !t->ssl || t->ball_holder == -2)
    return;
  char holder[16];
  snprintf(holder, sizeof holder, "%d", (int)t->ball_holder);
  ent_open(x, SG_BALL, "ball", (const char *const[]){"holder", holder, NULL});
  /* ball[2] is the height of its bottom */
  pa_fox_prim p = prim_at(PA_FOX_PR_SPHERE, t->ball[0], t->ball[1],
                          t->ball[2] + PA_FOX_BALL_RADIUS, 0);
  p.size[0] = p.size[1] = p.size[2] = 2 * PA_FOX_BALL_RADIUS;
  const float orange[4] = {1, 0.55f, 0, 1};
  memcpy(p.color, orange, sizeof orange);
  add(x, &p);
  ent_close(x);
}

/* A cylinder, or a capsule: a cylinder and two spheres for its caps. */
static void vis_cylinder(scene_ctx *x, const pa_visual *v) {
  const float *s = v->size;
  pa_fox_prim p = prim_q(PA_FOX_PR_CYLINDER, v->pos, v->quat);
  p.size[0] = p.size[1] = 2 * s[0];
  p.size[2] = s[1];
  memcpy(p.color, v->rgba, sizeof p.color);
  add(x, &p);
  for (int end = -1; v->type == PA_VIS_CAPSULE && end <= 1; end += 2) {
    /* the caps: spheres at the ends of its local z axis */
    double a[3] = {0, 0, end * s[1] / 2.0}, w[3];
    quat_rotate(v->quat, a, w);
    pa_fox_prim c = p;
    c.kind = PA_FOX_PR_SPHERE;
    for (int i = 0; i < 3; i++)
      c.pos[i] += w[i];
    c.size[2] = 2 * s[0];
    add(x, &c);
  }
}

/* A polyline: one LINE_STRIP, per-point colours unless all are its own. */
static void vis_polyline(scene_ctx *x, const pa_visual *v,
                         const pa_vis_point *pt, uint32_t n) {
  float(*cols)[4];
  double(*p3)[3] = scratch(x, n, &cols);
  if (!p3) {
    x->b->oom = true;
    return;
  }
  bool own = true;
  for (uint32_t k = 0; k < n; k++) {
    for (int i = 0; i < 3; i++)
      p3[k][i] = pt[k].p[i];
    col_packed(cols[k], pt[k].rgba, v->rgba);
    own = own && !pt[k].rgba;
  }
  pa_fox_prim p = prim_at(PA_FOX_PR_LINE, 0, 0, 0, 0);
  p.thickness = v->size[0] > 0 ? v->size[0] : 1;
  p.scale_invariant = true;
  p.pts = (const double(*)[3])p3;
  p.n_pts = n;
  p.colors = (const float(*)[4])cols;
  p.n_colors = own ? 0 : n;
  memcpy(p.color, v->rgba, sizeof p.color);
  add(x, &p);
}

/* A point cloud: SceneEntity has no points, so cubes of 1 cm per pixel of
 * point size, at most PA_FOX_CLOUD_CUBES of them (evenly sampled). */
static void vis_cloud(scene_ctx *x, const pa_visual *v, const pa_vis_point *pt,
                      uint32_t n) {
  uint32_t step = n > PA_FOX_CLOUD_CUBES
                      ? (n + PA_FOX_CLOUD_CUBES - 1) / PA_FOX_CLOUD_CUBES
                      : 1;
  double e = 0.01 * (v->size[0] > 0 ? v->size[0] : 1);
  static const float q0[4] = {1, 0, 0, 0};
  for (uint32_t k = 0; k < n; k += step) {
    pa_fox_prim p = prim_q(PA_FOX_PR_CUBE, pt[k].p, q0);
    p.size[0] = p.size[1] = p.size[2] = e;
    col_packed(p.color, pt[k].rgba, v->rgba);
    add(x, &p);
  }
}

/* A mesh or a height map: one TriangleListPrimitive at the visual's pose,
 * a colour per vertex unless all are its own. */
static void vis_triangles(scene_ctx *x, const pa_visual *v,
                          const pa_vis_point *pt, uint32_t n) {
  double(*pts)[3];
  float(*cols)[4];
  uint32_t m = pa_fox_vis_tris(v, pt, n, &pts, &cols);
  if (!m)
    return;
  pa_fox_prim p = prim_q(PA_FOX_PR_TRIANGLES, v->pos, v->quat);
  memcpy(p.color, v->rgba, sizeof p.color);
  p.pts = (const double(*)[3])pts;
  p.n_pts = m;
  p.colors = (const float(*)[4])cols;
  p.n_colors = cols ? m : 0;
  add(x, &p);
  free(pts);
  free(cols);
}

/* Instances: the shape's primitive at each pose (a capsule as its
 * cylinder), at most PA_FOX_CLOUD_CUBES of them (evenly sampled). */
static void vis_instances(scene_ctx *x, const pa_visual *v,
                          const pa_vis_point *pt, uint32_t n) {
  uint32_t ni = pa_fox_vis_instances(v, n), t = v->inst_shape;
  uint32_t step = ni > PA_FOX_CLOUD_CUBES
                      ? (ni + PA_FOX_CLOUD_CUBES - 1) / PA_FOX_CLOUD_CUBES
                      : 1;
  const float *s = v->size;
  int kind = t == PA_VIS_BOX      ? PA_FOX_PR_CUBE
             : t == PA_VIS_ARROW  ? PA_FOX_PR_ARROW
             : t == PA_VIS_SPHERE ? PA_FOX_PR_SPHERE
                                  : PA_FOX_PR_CYLINDER;
  for (uint32_t k = 0; k < ni; k += step) {
    double pos[3], q[4], sc[3];
    float c[4];
    pa_fox_vis_instance(v, pt, k, pos, q, sc, c);
    pa_fox_prim p = prim_at(kind, pos[0], pos[1], pos[2], 0);
    memcpy(p.q, q, sizeof p.q);
    memcpy(p.color, c, sizeof p.color);
    if (kind == PA_FOX_PR_ARROW) {
      double len = s[0] * sc[0], head = fmin(s[1] * sc[1], len);
      p.shaft_length = len - head;
      p.shaft_diameter = head / 2;
      p.head_length = p.head_diameter = head;
    } else if (kind == PA_FOX_PR_CUBE) {
      for (int i = 0; i < 3; i++)
        p.size[i] = s[i] * sc[i];
    } else if (kind == PA_FOX_PR_SPHERE) {
      for (int i = 0; i < 3; i++)
        p.size[i] = 2 * s[0] * sc[i];
    } else {
      p.size[0] = 2 * s[0] * sc[0];
      p.size[1] = 2 * s[0] * sc[1];
      p.size[2] = s[1] * sc[2];
    }
    add(x, &p);
  }
}

/* One visual object as SceneEntity primitives (docs/foxglove.md). */
static void visual_ent(scene_ctx *x, const pa_visual_block *vb,
                       const pa_visual *v) {
  char name[PA_VIS_NAME_MAX], id[80], text[PA_VIS_TEXT_MAX];
  snprintf(name, sizeof name, "%s", v->name);
  snprintf(text, sizeof text, "%s", v->text);
  snprintf(id, sizeof id, "visual/%s", name);
  const char *tn = pa_vis_type_name(v->type);
  ent_open(x, SG_VISUAL, id,
           (const char *const[]){"type", tn ? tn : "none", NULL});
  const float *s = v->size;
  uint32_t off = v->pt_off, n = v->pt_n;
  if (off > vb->pt_used || n > vb->pt_used - off)
    n = 0; /* out of the pack: another process's memory, not trusted */
  const pa_vis_point *pt = vb->pt + off;
  pa_fox_prim p = prim_q(PA_FOX_PR_CUBE, v->pos, v->quat);
  memcpy(p.color, v->rgba, sizeof p.color);
  switch (v->type) {
  case PA_VIS_SPHERE:
  case PA_VIS_BOX:
    if (v->type == PA_VIS_SPHERE) {
      p.kind = PA_FOX_PR_SPHERE;
      p.size[0] = p.size[1] = p.size[2] = 2 * s[0];
    } else {
      memcpy(p.size, (const double[]){s[0], s[1], s[2]}, sizeof p.size);
    }
    add(x, &p);
    break;
  case PA_VIS_CYLINDER:
  case PA_VIS_CAPSULE:
    vis_cylinder(x, v);
    break;
  case PA_VIS_ARROW: {
    double head = s[1] < s[0] ? s[1] : s[0];
    p.kind = PA_FOX_PR_ARROW;
    p.shaft_length = s[0] - head;
    p.shaft_diameter = head / 2;
    p.head_length = p.head_diameter = head;
    add(x, &p);
    break;
  }
  case PA_VIS_POLYLINE:
    vis_polyline(x, v, pt, n);
    break;
  case PA_VIS_POINT_CLOUD:
    vis_cloud(x, v, pt, n);
    break;
  case PA_VIS_MESH:
  case PA_VIS_HEIGHTMAP:
    vis_triangles(x, v, pt, n);
    break;
  case PA_VIS_INSTANCED:
    vis_instances(x, v, pt, n);
    break;
  case PA_VIS_TEXT:
    p.kind = PA_FOX_PR_TEXT;
    p.billboard = true;
    p.font_size = s[0] > 0 ? s[0] : 0.2;
    p.text = text;
    add(x, &p);
    break;
  default:
    break;
  }
  ent_close(x);
}

/* The visuals' entities: encoded when they changed (or a full update),
 * else carried over in the memo unencoded. */
static void visual_ents(scene_ctx *x, const pa_fox_scene_in *in) {
  pa_fox_scene_memo *m = x->m;
  if (in->vis && (x->full || !m->have_vis || in->vis->gen != m->vis_gen)) {
    for (uint32_t i = 0; i < in->vis->count && i < PA_VIS_MAX; i++)
      if (in->vis->v[i].visible)
        visual_ent(x, in->vis, &in->vis->v[i]);
    m->vis_gen = in->vis->gen;
    m->have_vis = true;
    return;
  }
  for (uint32_t i = 0; !x->full && i < m->n_prev; i++) {
    if (m->prev[i].group != SG_VISUAL)
      continue;
    pa_fox_ent_memo *e = memo_add(m);
    if (!e) {
      x->b->oom = true;
      break;
    }
    *e = m->prev[i];
  }
}

/* Deletes all (a full update: what came before its stamp), or the entities
 * gone since the last update by id. Returns how many. */
static size_t deletions(scene_ctx *x) {
  pa_fox_scene_memo *m = x->m;
  if (x->full) {
    x->be->deletion(x->b, 0, x->t_ns, NULL);
    return 1;
  }
  size_t dels = 0;
  for (uint32_t i = 0, j = 0; i < m->n_prev; i++) {
    while (j < m->n_cur && m->cur[j].key < m->prev[i].key)
      j++;
    if (j < m->n_cur && m->cur[j].key == m->prev[i].key)
      continue;
    x->be->deletion(x->b, dels++, x->t_ns, m->prev[i].id);
  }
  return dels;
}

size_t pa_fox_enc_scene(pa_fox_buf *b, const pa_fox_scene_be *be, uint64_t t_ns,
                        const pa_fox_scene_in *in, pa_fox_scene_memo *m,
                        bool full, pa_netgw *g, const pa_fox_scene_hook *hooks,
                        size_t n_hooks) {
  scene_ctx x = {.b = b, .be = be, .m = m, .t_ns = t_ns, .full = full};
  m->n_cur = 0;
  be->part(b, 0);
  obstacle_ents(&x, in);
  robot_ents(&x, in);
  nav_ents(&x, in);
  ball_ent(&x, in->tick);
  visual_ents(&x, in);
  for (size_t h = 0; h < n_hooks; h++)
    hooks[h](g, &x);
  be->part(b, 1);
  if (m->n_cur > 1)
    qsort(m->cur, m->n_cur, sizeof *m->cur, memo_cmp);
  size_t dels = deletions(&x);
  be->part(b, 2);
  if (b->oom) {
    m->n_prev = 0; /* unknown what the clients have: the next is full */
    return 0;
  }
  pa_fox_ent_memo *t = m->prev;
  uint32_t tc = m->cap_prev;
  m->prev = m->cur;
  m->n_prev = m->n_cur;
  m->cap_prev = m->cap_cur;
  m->cur = t;
  m->cap_cur = tc;
  m->n_cur = 0;
  return x.kept + dels;
}
