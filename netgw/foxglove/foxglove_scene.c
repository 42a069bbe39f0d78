/* foxglove_scene.c - /scene: the world (obstacles, agents, navigation
 * drawings, the SSL ball, each robot's body) and the visual objects as one
 * foxglove.SceneUpdate, with the memo that makes each update carry only what
 * changed. Its JSON pieces are foxglove_msgs.c's. */
#define _GNU_SOURCE
#include "foxglove.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A string literal, its length counted by the compiler. */
#define PUTS(b, lit) pa_fox_buf_put((b), (lit), sizeof(lit) - 1)

/* The primitive arrays of a SceneEntity, in the order they are written. */
enum {
  PR_ARROWS,
  PR_CUBES,
  PR_SPHERES,
  PR_CYLINDERS,
  PR_LINES,
  PR_TEXTS,
  PR_TRIANGLES
};
static const char *const pr_names[PA_FOX_PRIMS] = {
    "arrows", "cubes", "spheres", "cylinders", "lines", "texts", "triangles"};

typedef struct pa_fox_ent_memo {
  uint64_t key, body; /* hashes of the id and of the entity but its stamp */
  uint32_t group;     /* SG_*: which source it came from */
  char id[80];
} pa_fox_ent_memo;

enum { SG_WORLD, SG_VISUAL, SG_BALL };

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

/* An update being written: the message, the memo, what it holds. */
typedef struct scene_ctx {
  pa_fox_buf *b;
  pa_fox_scene_memo *m;
  uint64_t t_ns;
  bool full;
  size_t kept; /* entities written */
  size_t ent_at, body_at;
  char id[80];
  uint32_t group;
  const char *frame; /* the next entity's frame (NULL = map, not locked) */
} scene_ctx;

/* Opens an entity: header and metadata (key/value pairs, NULL-ended). */
static void ent_open(scene_ctx *x, uint32_t group, const char *id, ...) {
  pa_fox_buf *b = x->b;
  snprintf(x->id, sizeof x->id, "%s", id);
  x->group = group;
  x->ent_at = b->n;
  if (x->kept)
    PUTS(b, ",");
  PUTS(b, "{\"timestamp\":");
  pa_fox_stamp(b, x->t_ns);
  x->body_at = b->n;
  PUTS(b, ",\"frame_id\":");
  pa_fox_str(b, x->frame ? x->frame : "map");
  PUTS(b, ",\"id\":");
  pa_fox_str(b, x->id);
  /* frame_locked: an entity in a robot's frame moves with its /tf */
  pa_fox_buf_printf(b,
                    ",\"lifetime\":{\"sec\":0,\"nsec\":0},"
                    "\"frame_locked\":%s,\"metadata\":[",
                    x->frame ? "true" : "false");
  va_list ap;
  va_start(ap, id);
  bool first = true;
  for (const char *k; (k = va_arg(ap, const char *));) {
    const char *v = va_arg(ap, const char *);
    if (!first)
      PUTS(b, ",");
    PUTS(b, "{\"key\":");
    pa_fox_str(b, k);
    PUTS(b, ",\"value\":");
    pa_fox_str(b, v);
    PUTS(b, "}");
    first = false;
  }
  va_end(ap);
  PUTS(b, "]");
  for (int i = 0; i < PA_FOX_PRIMS; i++) {
    x->m->prim[i].n = 0;
    x->m->prim[i].oom = false;
  }
}

/* The primitive array k, a comma written when it holds one already. */
static pa_fox_buf *prim(scene_ctx *x, int k) {
  pa_fox_buf *p = &x->m->prim[k];
  if (p->n)
    PUTS(p, ",");
  return p;
}

/* Closes the entity; keeps it unless an update that is not full finds it
 * as the last one sent. */
static void ent_close(scene_ctx *x) {
  pa_fox_buf *b = x->b;
  for (int i = 0; i < PA_FOX_PRIMS; i++) {
    pa_fox_buf_printf(b, ",\"%s\":[", pr_names[i]);
    if (x->m->prim[i].oom)
      b->oom = true;
    else if (x->m->prim[i].n)
      pa_fox_buf_put(b, x->m->prim[i].p, x->m->prim[i].n);
    PUTS(b, "]");
  }
  PUTS(b, ",\"models\":[]}");
  if (b->oom)
    return;
  pa_fox_ent_memo *e = memo_add(x->m);
  if (!e) {
    b->oom = true;
    return;
  }
  e->key = fnv(FNV0, x->id, strlen(x->id));
  e->body = fnv(FNV0, b->p + x->body_at, b->n - x->body_at);
  e->group = x->group;
  snprintf(e->id, sizeof e->id, "%s", x->id);
  const pa_fox_ent_memo *old = x->full ? NULL : memo_find(x->m, e->key);
  if (old && old->body == e->body) {
    b->n = x->ent_at; /* unchanged since the last update */
    b->p[b->n] = 0;
  } else {
    x->kept++;
  }
}

/* A pose of position p and orientation q = w, x, y, z. */
static void pose_q(pa_fox_buf *b, double x, double y, double z,
                   const float q[4]) {
  PUTS(b, "{\"position\":");
  pa_fox_vec3(b, x, y, z);
  PUTS(b, ",\"orientation\":{\"x\":");
  pa_fox_num(b, q[1]);
  PUTS(b, ",\"y\":");
  pa_fox_num(b, q[2]);
  PUTS(b, ",\"z\":");
  pa_fox_num(b, q[3]);
  PUTS(b, ",\"w\":");
  pa_fox_num(b, q[0]);
  PUTS(b, "}}");
}

static void color_f(pa_fox_buf *b, const float c[4]) {
  pa_fox_buf_printf(b, "{\"r\":%.4g,\"g\":%.4g,\"b\":%.4g,\"a\":%.4g}", c[0],
                    c[1], c[2], c[3]);
}

/* 0xRRGGBBAA as a colour; 0 = the visual's own. */
static void color_packed(pa_fox_buf *b, uint32_t u, const float own[4]) {
  if (!u) {
    color_f(b, own);
    return;
  }
  const float c[4] = {(u >> 24) / 255.0f, ((u >> 16) & 255) / 255.0f,
                      ((u >> 8) & 255) / 255.0f, (u & 255) / 255.0f};
  color_f(b, c);
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
    if (agent)
      ent_open(x, SG_WORLD, id, "behaviour",
               o->agent < PA_AGENT_COUNT ? behaviours[o->agent] : "other",
               (const char *)NULL);
    else
      ent_open(x, SG_WORLD, id, (const char *)NULL);
    double h = o->height > 0 ? o->height : 0.5;
    bool circle = o->shape != 0 && o->radius > 0;
    pa_fox_buf *p = prim(x, circle ? PR_CYLINDERS : PR_CUBES);
    PUTS(p, "{\"pose\":");
    pa_fox_pose(p, o->x, o->y, h / 2, o->theta);
    PUTS(p, ",\"size\":");
    if (circle)
      pa_fox_vec3(p, 2 * o->radius, 2 * o->radius, h);
    else
      pa_fox_vec3(p, o->size_x, o->size_y, h);
    if (circle)
      PUTS(p, ",\"bottom_scale\":1,\"top_scale\":1");
    PUTS(p, ",\"color\":");
    pa_fox_color(p, o->colour);
    PUTS(p, "}");
    if (agent) {
      /* its heading, on its top: it walks on its own */
      double r = circle ? o->radius : fmax(o->size_x, o->size_y) / 2;
      p = prim(x, PR_ARROWS);
      PUTS(p, "{\"pose\":");
      pa_fox_pose(p, o->x, o->y, h + 0.02, o->theta);
      pa_fox_buf_printf(p,
                        ",\"shaft_length\":%.4g,\"shaft_diameter\":%.4g,"
                        "\"head_length\":%.4g,\"head_diameter\":%.4g,"
                        "\"color\":{\"r\":1,\"g\":1,\"b\":1,\"a\":1}}",
                        r * 0.7, r * 0.15, r * 0.4, r * 0.4);
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
    ent_open(x, SG_WORLD, id, "robot", name, (const char *)NULL);
    x->frame = NULL;
    pa_fox_buf *p = prim(x, PR_CYLINDERS);
    PUTS(p, "{\"pose\":");
    pa_fox_pose(p, 0, 0, h / 2, 0);
    PUTS(p, ",\"size\":");
    pa_fox_vec3(p, 2 * rad, 2 * rad, h);
    PUTS(p, ",\"bottom_scale\":1,\"top_scale\":1,\"color\":");
    pa_fox_color(p, ri->colour);
    PUTS(p, "}");
    p = prim(x, PR_ARROWS);
    PUTS(p, "{\"pose\":");
    pa_fox_pose(p, 0, 0, h + 0.01, 0);
    pa_fox_buf_printf(p,
                      ",\"shaft_length\":%.4g,\"shaft_diameter\":%.4g,"
                      "\"head_length\":%.4g,\"head_diameter\":%.4g,"
                      "\"color\":{\"r\":1,\"g\":1,\"b\":1,\"a\":1}}",
                      rad * 0.7, rad * 0.15, rad * 0.4, rad * 0.4);
    p = prim(x, PR_TEXTS);
    PUTS(p, "{\"pose\":");
    pa_fox_pose(p, 0, 0, h + 0.15, 0);
    PUTS(p, ",\"billboard\":true,\"font_size\":14,\"scale_invariant\":"
            "true,\"color\":{\"r\":1,\"g\":1,\"b\":1,\"a\":1},\"text\":");
    pa_fox_str(p, name);
    PUTS(p, "}");
    ent_close(x);
  }
}

/* type 0 = LINE_STRIP: a path thin, its waypoints a thicker strip */
static void line_strip(pa_fox_buf *b, const float (*pts)[2], uint32_t n,
                       const uint8_t col[4], double thick) {
  PUTS(b, "{\"type\":0,\"pose\":");
  pa_fox_pose(b, 0, 0, 0.02, 0);
  pa_fox_buf_printf(b,
                    ",\"thickness\":%g,\"scale_invariant\":false,"
                    "\"points\":[",
                    thick);
  for (uint32_t i = 0; i < n; i++) {
    if (i)
      PUTS(b, ",");
    pa_fox_vec3(b, pts[i][0], pts[i][1], 0);
  }
  PUTS(b, "],\"color\":");
  pa_fox_color(b, col);
  PUTS(b, ",\"colors\":[],\"indices\":[]}");
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
    ent_open(x, SG_WORLD, id, (const char *)NULL);
    uint32_t pn = ov->path_n > PA_NAV_PATH_MAX ? PA_NAV_PATH_MAX : ov->path_n;
    uint32_t wn =
        ov->wp_n > PA_NAV_WAYPOINTS_MAX ? PA_NAV_WAYPOINTS_MAX : ov->wp_n;
    if (pn)
      line_strip(prim(x, PR_LINES), (const float(*)[2])ov->path, pn, col, 0.03);
    if (wn)
      line_strip(prim(x, PR_LINES), (const float(*)[2])ov->wp, wn, col, 0.08);
    ent_close(x);
  }
}

static void ball_ent(scene_ctx *x, const pa_tick *t) {
  if (!t || !t->ssl || t->ball_holder == -2)
    return;
  char holder[16];
  snprintf(holder, sizeof holder, "%d", (int)t->ball_holder);
  ent_open(x, SG_BALL, "ball", "holder", holder, (const char *)NULL);
  pa_fox_buf *p = prim(x, PR_SPHERES);
  PUTS(p, "{\"pose\":");
  /* ball[2] is the height of its bottom */
  pa_fox_pose(p, t->ball[0], t->ball[1], t->ball[2] + PA_FOX_BALL_RADIUS, 0);
  PUTS(p, ",\"size\":");
  pa_fox_vec3(p, 2 * PA_FOX_BALL_RADIUS, 2 * PA_FOX_BALL_RADIUS,
              2 * PA_FOX_BALL_RADIUS);
  PUTS(p, ",\"color\":{\"r\":1,\"g\":0.55,\"b\":0,\"a\":1}}");
  ent_close(x);
}

/* A cylinder, or a capsule: a cylinder and two spheres for its caps. */
static void vis_cylinder(scene_ctx *x, const pa_visual *v) {
  const float *s = v->size;
  double px = v->pos[0], py = v->pos[1], pz = v->pos[2];
  pa_fox_buf *p = prim(x, PR_CYLINDERS);
  PUTS(p, "{\"pose\":");
  pose_q(p, px, py, pz, v->quat);
  PUTS(p, ",\"size\":");
  pa_fox_vec3(p, 2 * s[0], 2 * s[0], s[1]);
  PUTS(p, ",\"bottom_scale\":1,\"top_scale\":1,\"color\":");
  color_f(p, v->rgba);
  PUTS(p, "}");
  for (int end = -1; v->type == PA_VIS_CAPSULE && end <= 1; end += 2) {
    /* the caps: spheres at the ends of its local z axis */
    double a[3] = {0, 0, end * s[1] / 2.0}, w[3];
    quat_rotate(v->quat, a, w);
    p = prim(x, PR_SPHERES);
    PUTS(p, "{\"pose\":");
    pose_q(p, px + w[0], py + w[1], pz + w[2], v->quat);
    PUTS(p, ",\"size\":");
    pa_fox_vec3(p, 2 * s[0], 2 * s[0], 2 * s[0]);
    PUTS(p, ",\"color\":");
    color_f(p, v->rgba);
    PUTS(p, "}");
  }
}

/* A polyline: one LINE_STRIP, per-point colours unless all are its own. */
static void vis_polyline(scene_ctx *x, const pa_visual *v,
                         const pa_vis_point *pt, uint32_t n) {
  const float *s = v->size;
  pa_fox_buf *p = prim(x, PR_LINES);
  PUTS(p, "{\"type\":0,\"pose\":");
  pa_fox_pose(p, 0, 0, 0, 0);
  pa_fox_buf_printf(p,
                    ",\"thickness\":%.4g,\"scale_invariant\":true,"
                    "\"points\":[",
                    s[0] > 0 ? s[0] : 1);
  bool own = true;
  for (uint32_t k = 0; k < n; k++) {
    if (k)
      PUTS(p, ",");
    pa_fox_vec3(p, pt[k].p[0], pt[k].p[1], pt[k].p[2]);
    own = own && !pt[k].rgba;
  }
  PUTS(p, "],\"color\":");
  color_f(p, v->rgba);
  PUTS(p, ",\"colors\":[");
  for (uint32_t k = 0; !own && k < n; k++) {
    if (k)
      PUTS(p, ",");
    color_packed(p, pt[k].rgba, v->rgba);
  }
  PUTS(p, "],\"indices\":[]}");
}

/* A point cloud: SceneEntity has no points, so cubes of 1 cm per pixel of
 * point size, at most PA_FOX_CLOUD_CUBES of them (evenly sampled). */
static void vis_cloud(scene_ctx *x, const pa_visual *v, const pa_vis_point *pt,
                      uint32_t n) {
  const float *s = v->size;
  uint32_t step = n > PA_FOX_CLOUD_CUBES
                      ? (n + PA_FOX_CLOUD_CUBES - 1) / PA_FOX_CLOUD_CUBES
                      : 1;
  double e = 0.01 * (s[0] > 0 ? s[0] : 1);
  static const float q0[4] = {1, 0, 0, 0};
  for (uint32_t k = 0; k < n; k += step) {
    pa_fox_buf *p = prim(x, PR_CUBES);
    PUTS(p, "{\"pose\":");
    pose_q(p, pt[k].p[0], pt[k].p[1], pt[k].p[2], q0);
    PUTS(p, ",\"size\":");
    pa_fox_vec3(p, e, e, e);
    PUTS(p, ",\"color\":");
    color_packed(p, pt[k].rgba, v->rgba);
    PUTS(p, "}");
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
  pa_fox_buf *p = prim(x, PR_TRIANGLES);
  PUTS(p, "{\"pose\":");
  pose_q(p, v->pos[0], v->pos[1], v->pos[2], v->quat);
  PUTS(p, ",\"points\":[");
  for (uint32_t k = 0; k < m; k++) {
    if (k)
      PUTS(p, ",");
    pa_fox_vec3(p, pts[k][0], pts[k][1], pts[k][2]);
  }
  PUTS(p, "],\"color\":");
  color_f(p, v->rgba);
  PUTS(p, ",\"colors\":[");
  for (uint32_t k = 0; cols && k < m; k++) {
    if (k)
      PUTS(p, ",");
    color_f(p, cols[k]);
  }
  PUTS(p, "],\"indices\":[]}");
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
  for (uint32_t k = 0; k < ni; k += step) {
    double pos[3], q[4], sc[3];
    float c[4], qf[4];
    pa_fox_vis_instance(v, pt, k, pos, q, sc, c);
    for (int i = 0; i < 4; i++)
      qf[i] = (float)q[i];
    int kind = t == PA_VIS_BOX      ? PR_CUBES
               : t == PA_VIS_ARROW  ? PR_ARROWS
               : t == PA_VIS_SPHERE ? PR_SPHERES
                                    : PR_CYLINDERS;
    pa_fox_buf *p = prim(x, kind);
    PUTS(p, "{\"pose\":");
    pose_q(p, pos[0], pos[1], pos[2], qf);
    if (kind == PR_ARROWS) {
      double len = s[0] * sc[0], head = fmin(s[1] * sc[1], len);
      pa_fox_buf_printf(p,
                        ",\"shaft_length\":%.6g,\"shaft_diameter\":%.6g,"
                        "\"head_length\":%.6g,\"head_diameter\":%.6g",
                        len - head, head / 2, head, head);
    } else {
      PUTS(p, ",\"size\":");
      if (kind == PR_CUBES)
        pa_fox_vec3(p, s[0] * sc[0], s[1] * sc[1], s[2] * sc[2]);
      else if (kind == PR_SPHERES)
        pa_fox_vec3(p, 2 * s[0] * sc[0], 2 * s[0] * sc[1], 2 * s[0] * sc[2]);
      else
        pa_fox_vec3(p, 2 * s[0] * sc[0], 2 * s[0] * sc[1], s[1] * sc[2]);
    }
    if (kind == PR_CYLINDERS)
      PUTS(p, ",\"bottom_scale\":1,\"top_scale\":1");
    PUTS(p, ",\"color\":");
    color_f(p, c);
    PUTS(p, "}");
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
  ent_open(x, SG_VISUAL, id, "type", tn ? tn : "none", (const char *)NULL);
  const float *s = v->size;
  double px = v->pos[0], py = v->pos[1], pz = v->pos[2];
  uint32_t off = v->pt_off, n = v->pt_n;
  if (off > vb->pt_used || n > vb->pt_used - off)
    n = 0; /* out of the pack: another process's memory, not trusted */
  const pa_vis_point *pt = vb->pt + off;
  pa_fox_buf *p;
  switch (v->type) {
  case PA_VIS_SPHERE:
  case PA_VIS_BOX:
    p = prim(x, v->type == PA_VIS_SPHERE ? PR_SPHERES : PR_CUBES);
    PUTS(p, "{\"pose\":");
    pose_q(p, px, py, pz, v->quat);
    PUTS(p, ",\"size\":");
    if (v->type == PA_VIS_SPHERE)
      pa_fox_vec3(p, 2 * s[0], 2 * s[0], 2 * s[0]);
    else
      pa_fox_vec3(p, s[0], s[1], s[2]);
    PUTS(p, ",\"color\":");
    color_f(p, v->rgba);
    PUTS(p, "}");
    break;
  case PA_VIS_CYLINDER:
  case PA_VIS_CAPSULE:
    vis_cylinder(x, v);
    break;
  case PA_VIS_ARROW: {
    double head = s[1] < s[0] ? s[1] : s[0];
    p = prim(x, PR_ARROWS);
    PUTS(p, "{\"pose\":");
    pose_q(p, px, py, pz, v->quat);
    pa_fox_buf_printf(p,
                      ",\"shaft_length\":%.6g,\"shaft_diameter\":%.6g,"
                      "\"head_length\":%.6g,\"head_diameter\":%.6g,"
                      "\"color\":",
                      s[0] - head, head / 2, head, head);
    color_f(p, v->rgba);
    PUTS(p, "}");
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
    p = prim(x, PR_TEXTS);
    PUTS(p, "{\"pose\":");
    pose_q(p, px, py, pz, v->quat);
    pa_fox_buf_printf(p,
                      ",\"billboard\":true,\"font_size\":%.4g,"
                      "\"scale_invariant\":false,\"color\":",
                      s[0] > 0 ? s[0] : 0.2);
    color_f(p, v->rgba);
    PUTS(p, ",\"text\":");
    pa_fox_str(p, text);
    PUTS(p, "}");
    break;
  default:
    break;
  }
  ent_close(x);
}

size_t pa_fox_enc_scene(pa_fox_buf *b, uint64_t t_ns, const pa_fox_scene_in *in,
                        pa_fox_scene_memo *m, bool full, pa_netgw *g,
                        const pa_fox_scene_hook *hooks, size_t n_hooks) {
  scene_ctx x = {.b = b, .m = m, .t_ns = t_ns, .full = full};
  m->n_cur = 0;
  PUTS(b, "{\"entities\":[");
  obstacle_ents(&x, in);
  robot_ents(&x, in);
  nav_ents(&x, in);
  ball_ent(&x, in->tick);
  if (in->vis && (full || !m->have_vis || in->vis->gen != m->vis_gen)) {
    for (uint32_t i = 0; i < in->vis->count && i < PA_VIS_MAX; i++)
      if (in->vis->v[i].visible)
        visual_ent(&x, in->vis, &in->vis->v[i]);
    m->vis_gen = in->vis->gen;
    m->have_vis = true;
  } else if (!full) {
    /* the visuals are as they were: their entities stand, unencoded */
    for (uint32_t i = 0; i < m->n_prev; i++) {
      if (m->prev[i].group != SG_VISUAL)
        continue;
      pa_fox_ent_memo *e = memo_add(m);
      if (!e) {
        b->oom = true;
        break;
      }
      *e = m->prev[i];
    }
  }
  /* Hooks' entities are sent every time (their removal shows at the next
   * full update). */
  size_t before = b->n;
  for (size_t h = 0; h < n_hooks; h++)
    hooks[h](g, b, t_ns);
  if (b->n > before) {
    if (!x.kept && b->p[before] == ',')
      b->p[before] = ' '; /* the first entity of all needs no comma */
    x.kept++;
  }
  PUTS(b, "],\"deletions\":[");
  size_t dels = 0;
  if (m->n_cur > 1)
    qsort(m->cur, m->n_cur, sizeof *m->cur, memo_cmp);
  if (full) {
    /* type 1 = ALL: what came before this update's stamp */
    PUTS(b, "{\"timestamp\":");
    pa_fox_stamp(b, t_ns);
    PUTS(b, ",\"type\":1,\"id\":\"\"}");
    dels++;
  } else {
    /* type 0 = MATCHING_ID: the entities gone since the last update */
    for (uint32_t i = 0, j = 0; i < m->n_prev; i++) {
      while (j < m->n_cur && m->cur[j].key < m->prev[i].key)
        j++;
      if (j < m->n_cur && m->cur[j].key == m->prev[i].key)
        continue;
      if (dels)
        PUTS(b, ",");
      PUTS(b, "{\"timestamp\":");
      pa_fox_stamp(b, t_ns);
      PUTS(b, ",\"type\":0,\"id\":");
      pa_fox_str(b, m->prev[i].id);
      PUTS(b, "}");
      dels++;
    }
  }
  PUTS(b, "]}");
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
