/* test_raisim_visual_pool.c - the visual objects' point pool under a long
 * random mix of add_visual / update_visual (points replaced, shrunk, grown,
 * appended, emptied) / remove_visual / clear_visuals on every type, and bad
 * requests among them, each checked against a model of what must be drawn:
 * after every request through the shared visual block (every visual, its
 * order, its points packed inside the pool), now and then through
 * list_visuals, and at a few checkpoints in the spectator's screenshot
 * pixels (each visual has a colour of its own and a cell of its own; what
 * the model draws is there, what it does not is not). A shape added after a
 * cloud that later shrank once vanished from every view (issue 38). The
 * seed is PA_TEST_SEED or the time, printed. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "test_launch_util.h"
#include "testutil.h"

#include <jansson.h>
#include <math.h>
#include <stb_image.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define START_MS (10000 * PA_TEST_SLOW)
#define OPS 5000
#define NV 24       /* names, each with its colour and cell */
#define COLS 6      /* cells: 6 x 4, 1 m each */
#define CELL 1.0    /* [m] */
#define ZV 3.0      /* [m] height of the visuals: above every wall */
#define PT_MAX 4000 /* points of one visual here */
#define SW 640
#define SH 480

static const char *const TYPES[] = {
    "sphere",      "box",  "cylinder", "capsule",   "arrow",    "polyline",
    "point_cloud", "text", "mesh",     "heightmap", "instanced"};
#define NT 11
enum { T_POLY = 5, T_CLOUD = 6, T_TEXT = 7, T_MESH = 8, T_HM = 9, T_INST = 10 };
#define HM_SIZE 0.6f /* [m] a height map's side */

/* Whether type t is drawn lit (triangles), not as lines or points. */
static bool lit_type(int t) { return t < T_POLY || t >= T_MESH; }

typedef struct mvis {
  bool used;
  int type;
  bool visible;
  int n;     /* points */
  float *pt; /* 3 per point */
  char text[8];
} mvis;

typedef struct model {
  mvis v[NV];
  int order[NV]; /* names in insertion order */
  int count;
} model;

static unsigned rng_state;
static unsigned rnd(unsigned n) {
  rng_state = rng_state * 1103515245u + 12345u;
  return (rng_state >> 8) % n;
}
static double rndf(double lo, double hi) {
  return lo + (hi - lo) * (double)rnd(1u << 20) / (double)(1u << 20);
}

static unsigned char pal[NV][3];
static double ccx, ccy; /* the grid's centre (the map's) */

static void palette(void) {
  int k = 0;
  static const unsigned char L[3] = {0, 128, 255};
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++)
      for (int c = 0; c < 3; c++)
        if (!(a == b && b == c)) {
          pal[k][0] = L[a], pal[k][1] = L[b], pal[k][2] = L[c];
          k++;
        }
  assert_int_equal(k, NV);
}

static void cell_of(int i, double *x, double *y) {
  *x = ccx + ((i % COLS) - (COLS - 1) / 2.0) * CELL;
  *y = ccy + ((i / COLS) - (NV / COLS - 1) / 2.0) * CELL;
}

/* One request: the parsed reply (free with json_decref). */
static json_t *req(int fd, const char *action, const char *data) {
  size_t len = strlen(data) + strlen(action) + 128;
  char *r = malloc(len);
  assert_non_null(r);
  snprintf(r, len,
           "{\"type\":\"command\",\"protocol_version\":2,"
           "\"action\":\"%s\",\"data\":%s}\n",
           action, data);
  assert_int_equal(pa_test_send_str(fd, r), 0);
  free(r);
  static char line[1 << 16];
  assert_true(pa_test_read_line(fd, line, sizeof line, 5000 * PA_TEST_SLOW) >
              0);
  json_t *j = json_loads(line, 0, NULL);
  assert_non_null(j);
  return j;
}

static void ok(int fd, const char *action, const char *data) {
  json_t *j = req(fd, action, data);
  if (!json_is_true(json_object_get(j, "success"))) {
    char *t = json_dumps(j, JSON_COMPACT);
    fail_msg("%s %.300s: %.300s", action, data, t ? t : "?");
  }
  json_decref(j);
}

static void bad(int fd, const char *action, const char *data) {
  json_t *j = req(fd, action, data);
  if (!json_is_false(json_object_get(j, "success")))
    fail_msg("%s %.300s: wanted a refusal", action, data);
  json_decref(j);
}

/* A growing string. */
typedef struct sbuf {
  char *s;
  size_t n, cap;
} sbuf;
static void sb_add(sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void sb_add(sbuf *b, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    assert_true(k >= 0);
    if (b->n + (size_t)k < b->cap) {
      b->n += (size_t)k;
      return;
    }
    b->cap = b->cap * 2 + (size_t)k + 64;
    b->s = realloc(b->s, b->cap);
    assert_non_null(b->s);
  }
}

static const char B64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Points k0.. k0+n of visual i, in its cell: x spread, y alternating
 * sides by index, so that every polyline segment is long on screen. */
static void gen_points(int i, int k0, int n, float *out) {
  double x, y;
  cell_of(i, &x, &y);
  for (int k = 0; k < n; k++) {
    double s = ((k0 + k) % 2) ? 1 : -1;
    out[3 * k] = (float)(x + rndf(-0.35, 0.35));
    out[3 * k + 1] = (float)(y + s * rndf(0.15, 0.35));
    out[3 * k + 2] = (float)(ZV + rndf(-0.1, 0.1));
  }
}

/* ,"points":[...] or ,"points_b64":"..." (float32 x, y, z). */
static void put_points(sbuf *b, const float *p, int n) {
  if (rnd(2)) {
    sb_add(b, ",\"points\":[");
    for (int k = 0; k < n; k++)
      sb_add(b, "%s[%.9g,%.9g,%.9g]", k ? "," : "", (double)p[3 * k],
             (double)p[3 * k + 1], (double)p[3 * k + 2]);
    sb_add(b, "]");
    return;
  }
  const unsigned char *raw = (const unsigned char *)p;
  size_t len = (size_t)n * 12;
  sb_add(b, ",\"points_b64\":\"");
  for (size_t i = 0; i < len; i += 3) {
    uint32_t v = (uint32_t)raw[i] << 16;
    if (i + 1 < len)
      v |= (uint32_t)raw[i + 1] << 8;
    if (i + 2 < len)
      v |= raw[i + 2];
    sb_add(b, "%c%c%c%c", B64[v >> 18 & 63], B64[v >> 12 & 63],
           i + 1 < len ? B64[v >> 6 & 63] : '=',
           i + 2 < len ? B64[v & 63] : '=');
  }
  sb_add(b, "\"");
}

static int rnd_count(void) {
  unsigned r = rnd(10);
  return r < 2 ? 0 : r < 8 ? (int)rnd(40) : (int)rnd(PT_MAX);
}

/* The type's fields, inside its cell. */
static void put_shape(sbuf *b, int i, int type) {
  double x, y;
  cell_of(i, &x, &y);
  switch (type) {
  case 0:
    sb_add(b, ",\"size\":%.3f", rndf(0.15, 0.35));
    break;
  case 1:
    sb_add(b, ",\"size\":[%.3f,%.3f,%.3f]", rndf(0.2, 0.6), rndf(0.2, 0.6),
           rndf(0.1, 0.4));
    break;
  case 2:
  case 3:
    sb_add(b, ",\"size\":[%.3f,%.3f]", rndf(0.15, 0.3), rndf(0.1, 0.3));
    break;
  case 4: {
    double len = rndf(0.4, 0.8);
    x -= len / 2;
    sb_add(b, ",\"size\":[%.3f,%.3f]", len, rndf(0.1, 0.2));
    break;
  }
  case T_POLY:
    sb_add(b, ",\"size\":3");
    break;
  case T_CLOUD:
    sb_add(b, ",\"size\":4");
    break;
  case T_MESH: {
    double k = rndf(0.5, 1);
    sb_add(b, ",\"size\":[%.3f,%.3f,%.3f]", k, k, k);
    break;
  }
  case T_HM:
    sb_add(b, ",\"size\":[%.3f,%.3f]", (double)HM_SIZE, (double)HM_SIZE);
    break;
  case T_INST:
    sb_add(b, ",\"size\":0.08,\"shape\":\"%s\"", rnd(2) ? "sphere" : "box");
    break;
  default:
    sb_add(b, ",\"size\":%.3f", rndf(0.2, 0.3));
    break;
  }
  sb_add(b, ",\"position\":[%.4f,%.4f,%.4f]", x + rndf(-0.03, 0.03),
         y + rndf(-0.03, 0.03), ZV);
}

static void put_text(sbuf *b, mvis *m) {
  int n = 1 + (int)rnd(3);
  for (int k = 0; k < n; k++)
    m->text[k] = (char)('A' + rnd(26));
  m->text[n] = 0;
  sb_add(b, ",\"text\":\"%s\"", m->text);
}

static void set_points(mvis *m, const float *p, int n, bool append) {
  int keep = append ? m->n : 0;
  float *q = malloc((size_t)(keep + n + 1) * 3 * sizeof *q);
  assert_non_null(q);
  if (keep)
    memcpy(q, m->pt, (size_t)keep * 3 * sizeof *q);
  if (n)
    memcpy(q + 3 * keep, p, (size_t)n * 3 * sizeof *q);
  free(m->pt);
  m->pt = q;
  m->n = keep + n;
}

static void sb_floats(sbuf *b, const char *key, const float *p, int n) {
  sb_add(b, ",\"%s\":[", key);
  for (int k = 0; k < n; k++)
    sb_add(b, "%s%.9g", k ? "," : "", (double)p[k]);
  sb_add(b, "]");
}

/* A mesh (a triangle soup), height map (colormap none: the palette's
 * colour) or instances (stride 1) in the visual's frame, inside its cell:
 * the request's keys into b and the points the block must hold into *p
 * (malloc'd, 3 floats each), *n of them. */
static void gen_geom(sbuf *b, int type, float **p, int *n) {
  if (type == T_MESH) {
    *n = 3 * (1 + (int)rnd(20));
    *p = malloc((size_t)*n * 3 * sizeof **p);
    assert_non_null(*p);
    /* The first triangle covers much of the cell, seen from above (a
     * random one alone can be a sliver that covers no pixel). */
    static const float first[9] = {-0.3f, -0.3f, 0,    0.3f, -0.3f,
                                   0,     0,     0.3f, 0.05f};
    for (int k = 0; k < *n * 3; k++)
      (*p)[k] = k < 9
                    ? first[k]
                    : (float)(k % 3 == 2 ? rndf(-0.1, 0.1) : rndf(-0.35, 0.35));
    sb_floats(b, "vertices", *p, *n * 3);
  } else if (type == T_HM) {
    int nx = 2 + (int)rnd(6), ny = 2 + (int)rnd(6);
    *n = nx * ny;
    *p = malloc((size_t)*n * 3 * sizeof **p);
    float *h = malloc((size_t)*n * sizeof *h);
    assert_true(*p && h);
    for (int j = 0; j < ny; j++)
      for (int i = 0; i < nx; i++) {
        float *q = *p + 3 * (j * nx + i);
        h[j * nx + i] = (float)rndf(0, 0.2);
        q[0] = HM_SIZE * ((float)i / (float)(nx - 1) - 0.5f);
        q[1] = HM_SIZE * ((float)j / (float)(ny - 1) - 0.5f);
        q[2] = h[j * nx + i];
      }
    sb_add(b, ",\"samples\":[%d,%d],\"colormap\":\"none\"", nx, ny);
    sb_floats(b, "heights", h, *n);
    free(h);
  } else {
    *n = 1 + (int)rnd(5);
    *p = malloc((size_t)*n * 3 * sizeof **p);
    assert_non_null(*p);
    sb_add(b, ",\"positions\":[");
    for (int k = 0; k < *n; k++) {
      float *q = *p + 3 * k;
      q[0] = (float)rndf(-0.3, 0.3), q[1] = (float)rndf(-0.3, 0.3), q[2] = 0;
      sb_add(b, "%s[%.9g,%.9g,0]", k ? "," : "", (double)q[0], (double)q[1]);
    }
    sb_add(b, "]");
  }
}

static void op_add(int fd, model *M, int i) {
  mvis *m = &M->v[i];
  int type = (int)rnd(NT);
  sbuf b = {0};
  sb_add(&b, "{\"name\":\"v%02d\"", i);
  bool typed = rnd(3) == 0 && type != T_TEXT;
  if (!typed)
    sb_add(&b, ",\"type\":\"%s\"", TYPES[type]);
  sb_add(&b, ",\"color\":[%.6f,%.6f,%.6f]", pal[i][0] / 255.0,
         pal[i][1] / 255.0, pal[i][2] / 255.0);
  put_shape(&b, i, type);
  memset(m, 0, sizeof *m);
  m->type = type;
  m->visible = rnd(8) != 0;
  if (!m->visible)
    sb_add(&b, ",\"visible\":false");
  if (type == T_TEXT)
    put_text(&b, m);
  float *p = NULL;
  int n = 0;
  if ((type == T_POLY || type == T_CLOUD) && rnd(4)) {
    n = rnd_count();
    p = malloc((size_t)(n + 1) * 3 * sizeof *p);
    assert_non_null(p);
    gen_points(i, 0, n, p);
    put_points(&b, p, n);
  }
  if (type >= T_MESH)
    gen_geom(&b, type, &p, &n);
  sb_add(&b, "}");
  static const char *const act[] = {
      "add_visual_sphere",    "add_visual_box",       "add_visual_cylinder",
      "add_visual_capsule",   "add_visual_arrow",     "add_visual_polyline",
      "add_point_cloud",      "add_visual",           "add_visual_mesh",
      "add_visual_heightmap", "add_instanced_visuals"};
  ok(fd, typed ? act[type] : "add_visual", b.s);
  free(b.s);
  set_points(m, p, n, false);
  free(p);
  m->used = true;
  M->order[M->count++] = i;
}

static void op_update(int fd, model *M, int i) {
  mvis *m = &M->v[i];
  sbuf b = {0};
  sb_add(&b, "{\"name\":\"v%02d\"", i);
  if (rnd(3) == 0)
    put_shape(&b, i, m->type);
  if (rnd(4) == 0) {
    m->visible = rnd(4) != 0;
    sb_add(&b, ",\"visible\":%s", m->visible ? "true" : "false");
  }
  if (m->type == T_TEXT && rnd(3) == 0)
    put_text(&b, m);
  float *p = NULL;
  int n = 0;
  bool append = false, pts = false;
  if ((m->type == T_POLY || m->type == T_CLOUD) && rnd(4)) {
    pts = true;
    append = rnd(3) == 0;
    n = rnd_count();
    if (append && m->n + n > PT_MAX)
      n = 0;
    if (!append && rnd(3) == 0 && m->n) /* shrink */
      n = (int)rnd((unsigned)m->n);
    p = malloc((size_t)(n + 1) * 3 * sizeof *p);
    assert_non_null(p);
    gen_points(i, append ? m->n : 0, n, p);
    if (append)
      sb_add(&b, ",\"append\":true");
    put_points(&b, p, n);
  }
  if (m->type >= T_MESH && rnd(2)) { /* new geometry */
    pts = true;
    gen_geom(&b, m->type, &p, &n);
  }
  sb_add(&b, "}");
  ok(fd, "update_visual", b.s);
  free(b.s);
  if (pts)
    set_points(m, p, n, append);
  free(p);
}

static void op_remove(int fd, model *M, int i) {
  char d[64];
  snprintf(d, sizeof d, "{\"name\":\"v%02d\"}", i);
  ok(fd, "remove_visual", d);
  free(M->v[i].pt);
  memset(&M->v[i], 0, sizeof M->v[i]);
  int k = 0;
  for (int j = 0; j < M->count; j++)
    if (M->order[j] != i)
      M->order[k++] = M->order[j];
  M->count = k;
}

static void op_clear(int fd, model *M) {
  ok(fd, "clear_visuals", "{}");
  for (int i = 0; i < NV; i++) {
    free(M->v[i].pt);
    memset(&M->v[i], 0, sizeof M->v[i]);
  }
  M->count = 0;
}

/* A request that must be refused (and change nothing). */
static void op_bad(int fd, model *M, int i) {
  char d[256];
  mvis *m = &M->v[i];
  switch (rnd(5)) {
  case 0:
    if (m->used) {
      snprintf(d, sizeof d, "{\"name\":\"v%02d\",\"type\":\"box\"}", i);
      bad(fd, "add_visual", d);
    } else {
      snprintf(d, sizeof d, "{\"name\":\"v%02d\",\"visible\":true}", i);
      bad(fd, "update_visual", d);
    }
    break;
  case 1:
    if (m->used && m->type != T_POLY && m->type != T_CLOUD) {
      snprintf(d, sizeof d, "{\"name\":\"v%02d\",\"points\":[[0,0,0]]}", i);
      bad(fd, "update_visual", d);
    }
    break;
  case 2:
    if (m->used) {
      snprintf(d, sizeof d,
               "{\"name\":\"v%02d\",\"visible\":false,\"size\":-1}", i);
      bad(fd, "update_visual", d);
    }
    break;
  case 3:
    if (m->used && (m->type == T_POLY || m->type == T_CLOUD)) {
      snprintf(d, sizeof d,
               "{\"name\":\"v%02d\",\"points\":[[0,0,0],[1,2]],"
               "\"visible\":false,\"points_b64\":\"AAAA\"}",
               i);
      bad(fd, "update_visual", d);
    }
    break;
  default:
    if (!m->used) {
      snprintf(d, sizeof d, "{\"name\":\"v%02d\"}", i);
      bad(fd, "remove_visual", d);
    }
    break;
  }
}

/* The shared block holds exactly the model: order, types, visibility,
 * texts, points (bit for bit) packed inside the pool. */
static void check_block(const lt_stack *s, const model *M, int op,
                        pa_visual_block *b) {
  int tries = 0;
  while (!pa_stack_visual_read(&s->s, b))
    assert_true(++tries < 1000);
  if ((int)b->count != M->count)
    fail_msg("op %d: %u visuals in the block, %d in the model", op, b->count,
             M->count);
  uint64_t sum = 0;
  for (int k = 0; k < M->count; k++) {
    const pa_visual *v = &b->v[k];
    int i = M->order[k];
    const mvis *m = &M->v[i];
    char name[16];
    snprintf(name, sizeof name, "v%02d", i);
    if (strcmp(v->name, name) || (int)v->type != m->type + 1 ||
        (bool)v->visible != m->visible || (int)v->pt_n != m->n)
      fail_msg("op %d: block[%d] is %s type %u visible %u %u points; the "
               "model's %s type %d visible %d %d points",
               op, k, v->name, v->type, v->visible, v->pt_n, name, m->type + 1,
               m->visible, m->n);
    /* what every viewer requires to draw it */
    if ((uint64_t)v->pt_off + v->pt_n > b->pt_used)
      fail_msg("op %d: %s's points [%u, +%u) lie past the pool's %u", op, name,
               v->pt_off, v->pt_n, b->pt_used);
    if (m->type == T_TEXT && strcmp(v->text, m->text))
      fail_msg("op %d: %s's text '%s', not '%s'", op, name, v->text, m->text);
    for (int q = 0; q < m->n; q++) {
      const pa_vis_point *p = &b->pt[v->pt_off + (uint32_t)q];
      if (memcmp(p->p, m->pt + 3 * q, sizeof p->p) || p->rgba)
        fail_msg("op %d: %s's point %d differs", op, name, q);
    }
    for (int k2 = 0; k2 < k; k2++) { /* no two share a point */
      const pa_visual *w = &b->v[k2];
      if (v->pt_n && w->pt_n && v->pt_off < w->pt_off + w->pt_n &&
          w->pt_off < v->pt_off + v->pt_n)
        fail_msg("op %d: %s and %s share points", op, name, w->name);
    }
    sum += v->pt_n;
  }
  if (sum != b->pt_used)
    fail_msg("op %d: %u points in use, %llu owned", op, b->pt_used,
             (unsigned long long)sum);
}

/* list_visuals agrees with the model. */
static void check_list(int fd, const model *M, int op) {
  json_t *j = req(fd, "list_visuals", "{}");
  json_t *d = json_object_get(j, "data");
  json_t *l = json_object_get(d, "visuals");
  assert_int_equal(json_array_size(l), (size_t)M->count);
  for (int k = 0; k < M->count; k++) {
    json_t *e = json_array_get(l, (size_t)k);
    const mvis *m = &M->v[M->order[k]];
    char name[16];
    snprintf(name, sizeof name, "v%02d", M->order[k]);
    if (strcmp(json_string_value(json_object_get(e, "name")), name) ||
        strcmp(json_string_value(json_object_get(e, "type")), TYPES[m->type]) ||
        json_is_true(json_object_get(e, "visible")) != m->visible)
      fail_msg("op %d: list_visuals[%d] is not %s", op, k, name);
    if (m->type == T_POLY || m->type == T_CLOUD)
      assert_int_equal(json_integer_value(json_object_get(e, "points")), m->n);
  }
  json_decref(j);
}

/* Whether the model draws visual i (a polyline needs two points). */
static bool drawn(const mvis *m) {
  if (!m->used || !m->visible)
    return false;
  return m->type == T_POLY                         ? m->n >= 2
         : m->type == T_CLOUD || m->type >= T_MESH ? m->n >= 1
                                                   : true;
}

/* Solid visuals (sphere .. arrow, mesh, height map, instances) are lit and
 * fogged: their pixels keep the palette colour's pattern (which channels are 0,
 * which brighter) but not its values. Seen 7 m off, fog (exp2(-0.05 d),
 * render/gl_util.c) lifts a 0 channel to about a fifth of the sky's; the lit
 * share of a non-zero one stays well above that. A floor, wall or robot pixel
 * has no channel that low. */
static bool lit_like(const unsigned char *p, const unsigned char c[3]) {
  static const double sky[3] = {0.62 * 255, 0.76 * 255, 0.90 * 255};
  for (int k = 0; k < 3; k++) {
    double fog = 0.215 * sky[k];
    if (c[k] ? p[k] < fog + 30 : p[k] > fog + 15)
      return false;
    /* a brighter channel stays brighter; equal ones stay close */
    for (int j = 0; j < 3; j++)
      if ((c[k] > c[j] && p[k] < p[j] + 40) ||
          (j != k && c[k] == c[j] && c[k] && abs(p[k] - p[j]) >= 35))
        return false;
  }
  return true;
}

/* Pixels of colour c (exact, or lit_like when lit) inside cell i's square
 * on the screenshot (the camera 7 m straight above the grid's centre:
 * about 79 px a metre). */
static int colour_px(const unsigned char *img, const unsigned char c[3], int i,
                     bool lit) {
  double x, y, f = SW / 2.0 / tan(M_PI / 6) / 7.0;
  cell_of(i, &x, &y);
  int u0 = (int)(SW / 2.0 + (x - ccx - CELL / 2) * f);
  int u1 = (int)(SW / 2.0 + (x - ccx + CELL / 2) * f);
  int v0 = (int)(SH / 2.0 - (y - ccy + CELL / 2) * f);
  int v1 = (int)(SH / 2.0 - (y - ccy - CELL / 2) * f);
  int n = 0;
  for (int v = v0 < 0 ? 0 : v0; v < v1 && v < SH; v++)
    for (int u = u0 < 0 ? 0 : u0; u < u1 && u < SW; u++) {
      const unsigned char *p = img + 3 * (v * SW + u);
      n += lit ? lit_like(p, c)
               : abs(p[0] - c[0]) <= 3 && abs(p[1] - c[1]) <= 3 &&
                     abs(p[2] - c[2]) <= 3;
    }
  return n;
}

static unsigned char *screenshot(int fd, int k) {
  char d[128];
  snprintf(d, sizeof d, "{\"name\":\"pool%d\"}", k);
  json_t *j = req(fd, "request_screenshot", d);
  assert_true(json_is_true(json_object_get(j, "success")));
  json_t *dd = json_object_get(j, "data");
  char path[1024];
  snprintf(path, sizeof path, "%s",
           json_string_value(json_object_get(dd, "path")));
  json_int_t want = json_integer_value(json_object_get(dd, "request"));
  json_decref(j);
  int64_t end = pa_test_now_ms() + 20000 * PA_TEST_SLOW;
  bool done = false, good = false;
  while (!done && pa_test_now_ms() < end) {
    json_t *st = req(fd, "get_status", "{}");
    json_t *sh = json_object_get(json_object_get(st, "data"), "screenshot");
    done = json_integer_value(json_object_get(sh, "request")) >= want &&
           json_is_false(json_object_get(sh, "pending"));
    good = json_is_true(json_object_get(sh, "ok"));
    json_decref(st);
    if (!done)
      usleep(20000);
  }
  assert_true(done && good);
  int w, h, c;
  unsigned char *img = stbi_load(path, &w, &h, &c, 3);
  assert_non_null(img);
  assert_int_equal(w, SW);
  assert_int_equal(h, SH);
  const char *keep = getenv("PA_TEST_SHOT_DIR"); /* to look at them */
  if (keep) {
    char cmd[2300];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s/'", path, keep);
    assert_int_equal(system(cmd), 0);
  }
  unlink(path);
  return img;
}

/* Every visual the model draws has its colour's pixels (lit, for the
 * solid types) in its cell beyond what the scene alone has there; every
 * other has none beyond it, neither lit nor exact. */
static void check_pixels(int fd, const model *M, int op, int k,
                         int base[2][NV]) {
  unsigned char *img = screenshot(fd, k);
  int shown = 0;
  for (int i = 0; i < NV; i++) {
    bool want = drawn(&M->v[i]), lit = lit_type(M->v[i].type);
    int n = colour_px(img, pal[i], i, lit) - base[lit][i];
    if (!want) {
      int other = colour_px(img, pal[i], i, !lit) - base[!lit][i];
      n = n > other ? n : other;
    }
    shown += want;
    if (want ? n < 4 : n > 0) {
      double x, y, f = SW / 2.0 / tan(M_PI / 6) / 7.0;
      cell_of(i, &x, &y);
      int u = (int)(SW / 2.0 + (x - ccx) * f),
          v = (int)(SH / 2.0 - (y - ccy) * f);
      const unsigned char *p = img + 3 * (v * SW + u);
      fprintf(stderr, "cell %d centre (%d, %d): %d %d %d; colour %d %d %d\n", i,
              u, v, p[0], p[1], p[2], pal[i][0], pal[i][1], pal[i][2]);
    }
    if (want ? n < 4 : n > 0)
      fail_msg("op %d: v%02d (%s, %s, %d points) has %d pixels of its "
               "colour beyond the scene's",
               op, i, M->v[i].used ? TYPES[M->v[i].type] : "removed",
               M->v[i].visible ? "visible" : "hidden", M->v[i].n, n);
  }
  fprintf(stderr, "op %d: %d of %d visuals drawn as the model says\n", op,
          shown, M->count);
  free(img);
}

static void test_pool_random(void **state) {
  (void)state;
  const char *seed_env = getenv("PA_TEST_SEED");
  rng_state = seed_env ? (unsigned)strtoul(seed_env, NULL, 0)
                       : (unsigned)time(NULL) ^ (unsigned)getpid();
  fprintf(stderr, "PA_TEST_SEED=%u\n", rng_state);
  palette();
  const char *extra[] = {"--no_beacon", "--data_dir", pa_test_tmpdir(),
                         "--camera_hz", "1",          NULL};
  lt_stack s;
  assert_int_equal(lt_start(&s, "vpool", extra, START_MS), 0);
  int fd = pa_test_tcp_connect(s.port);
  assert_true(fd >= 0);
  json_t *mi = req(fd, "get_map_info", "{}");
  json_t *d = json_object_get(mi, "data");
  double res = json_number_value(json_object_get(d, "resolution"));
  json_t *org = json_object_get(d, "origin");
  ccx = json_number_value(json_array_get(org, 0)) +
        (double)json_integer_value(json_object_get(d, "width")) * res / 2;
  ccy = json_number_value(json_array_get(org, 1)) +
        (double)json_integer_value(json_object_get(d, "height")) * res / 2;
  json_decref(mi);
  char cam[256];
  snprintf(cam, sizeof cam,
           "{\"position\":[%g,%g,%g],\"look_at\":[%g,%g,%g],\"width\":%d,"
           "\"height\":%d}",
           ccx, ccy - 0.01, ZV + 7, ccx, ccy, ZV, SW, SH);
  ok(fd, "set_camera", cam);
  int base[2][NV];
  unsigned char *img = screenshot(fd, 0);
  for (int i = 0; i < NV; i++)
    for (int lit = 0; lit < 2; lit++)
      base[lit][i] = colour_px(img, pal[i], i, lit);
  free(img);

  /* RaisimServer's keys we do not know (material) are ignored and named in
   * data.warnings, as its seed says; the visual is added all the same. */
  json_t *wj = req(fd, "add_visual_sphere",
                   "{\"name\":\"w\",\"material\":\"gold\",\"glow\":1}");
  assert_true(json_is_true(json_object_get(wj, "success")));
  json_t *wl = json_object_get(json_object_get(wj, "data"), "warnings");
  assert_int_equal(json_array_size(wl), 2);
  char *wt = json_dumps(wl, 0);
  assert_non_null(
      strstr(wt, "data.material is not a key of add_visual_sphere"));
  assert_non_null(strstr(wt, "data.glow"));
  free(wt);
  json_decref(wj);
  ok(fd, "remove_visual", "{\"name\":\"w\"}");
  model M;
  memset(&M, 0, sizeof M);
  pa_visual_block *b = malloc(sizeof *b);
  assert_non_null(b);
  int checkpoint = 0;
  for (int op = 1; op <= OPS; op++) {
    int i = (int)rnd(NV);
    unsigned r = rnd(1000);
    if (r < 3)
      op_clear(fd, &M);
    else if (r < 60)
      op_bad(fd, &M, i);
    else if (!M.v[i].used)
      op_add(fd, &M, i);
    else if (r < 250)
      op_remove(fd, &M, i);
    else
      op_update(fd, &M, i);
    check_block(&s, &M, op, b);
    if (op % 50 == 0)
      check_list(fd, &M, op);
    if (op % (OPS / 4) == 0)
      check_pixels(fd, &M, op, ++checkpoint, base);
  }
  /* the end: every visual shown, then each emptied cloud / polyline and
   * removal leaves the rest drawn */
  for (int i = 0; i < NV; i++) {
    if (!M.v[i].used)
      op_add(fd, &M, i);
    char u[64];
    snprintf(u, sizeof u, "{\"name\":\"v%02d\",\"visible\":true}", i);
    ok(fd, "update_visual", u);
    M.v[i].visible = true;
  }
  for (int i = 0; i < NV; i++)
    if (M.v[i].type == T_POLY || M.v[i].type == T_CLOUD) {
      op_remove(fd, &M, i);
      check_block(&s, &M, OPS + i, b);
    }
  check_list(fd, &M, OPS + NV);
  check_pixels(fd, &M, OPS + NV, ++checkpoint, base);
  for (int i = 0; i < NV; i++)
    free(M.v[i].pt);
  free(b);
  close(fd);
  assert_int_equal(lt_stop(&s, 5000), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_pool_random)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
