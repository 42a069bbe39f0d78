/* foxglove_msgs.c - the Foxglove channels' messages as JSON: Foxglove's
 * well-known schemas (foxglove.Grid, LaserScan, FrameTransforms,
 * CompressedImage, SceneUpdate), a nav_msgs/Odometry-shaped odometry and the
 * commands log. Numbers are printed directly (no jansson): a scan's ranges
 * or a map's base64 cells are most of the bytes. */
#define _GNU_SOURCE
#include "foxglove.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <turbojpeg.h>

/* A string literal, its length counted by the compiler. */
#define PUTS(b, lit) pa_fox_buf_put((b), (lit), sizeof(lit) - 1)

/* ---- buffer -------------------------------------------------------- */

static bool grow(pa_fox_buf *b, size_t more) {
  if (b->oom)
    return false;
  if (b->n + more + 1 <= b->cap)
    return true;
  size_t cap = b->cap ? b->cap : 1024;
  while (cap < b->n + more + 1)
    cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    b->oom = true;
    return false;
  }
  b->p = p;
  b->cap = cap;
  return true;
}

void pa_fox_buf_put(pa_fox_buf *b, const void *d, size_t n) {
  if (!grow(b, n))
    return;
  memcpy(b->p + b->n, d, n);
  b->n += n;
  b->p[b->n] = 0;
}

void pa_fox_buf_printf(pa_fox_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char tmp[256];
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n < sizeof tmp) {
    pa_fox_buf_put(b, tmp, (size_t)n);
    return;
  }
  if (!grow(b, (size_t)n))
    return;
  va_start(ap, fmt);
  vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->n += (size_t)n;
}

void pa_fox_buf_free(pa_fox_buf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

/* A finite number, or 0 (JSON has no NaN; a non-finite value never leaves
 * pa-sim for a pose, and a range is clamped by the caller). */
static void num(pa_fox_buf *b, double v) {
  if (!isfinite(v))
    v = 0;
  pa_fox_buf_printf(b, "%.9g", v);
}

static void str(pa_fox_buf *b, const char *s) {
  PUTS(b, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      pa_fox_buf_printf(b, "\\%c", *p);
    else if (*p < 0x20)
      pa_fox_buf_printf(b, "\\u%04x", *p);
    else
      pa_fox_buf_put(b, p, 1);
  }
  PUTS(b, "\"");
}

static void stamp(pa_fox_buf *b, uint64_t t_ns) {
  pa_fox_buf_printf(b, "{\"sec\":%llu,\"nsec\":%u}",
                    (unsigned long long)(t_ns / 1000000000u),
                    (unsigned)(t_ns % 1000000000u));
}

static void vec3(pa_fox_buf *b, double x, double y, double z) {
  PUTS(b, "{\"x\":");
  num(b, x);
  PUTS(b, ",\"y\":");
  num(b, y);
  PUTS(b, ",\"z\":");
  num(b, z);
  PUTS(b, "}");
}

/* A rotation about z as a quaternion. */
static void yaw_quat(pa_fox_buf *b, double yaw) {
  pa_fox_buf_printf(b, "{\"x\":0,\"y\":0,\"z\":");
  num(b, sin(yaw / 2));
  PUTS(b, ",\"w\":");
  num(b, cos(yaw / 2));
  PUTS(b, "}");
}

static void pose(pa_fox_buf *b, double x, double y, double z, double yaw) {
  PUTS(b, "{\"position\":");
  vec3(b, x, y, z);
  PUTS(b, ",\"orientation\":");
  yaw_quat(b, yaw);
  PUTS(b, "}");
}

static void color(pa_fox_buf *b, const uint8_t c[4]) {
  pa_fox_buf_printf(b, "{\"r\":%.4g,\"g\":%.4g,\"b\":%.4g,\"a\":%.4g}",
                    c[0] / 255.0, c[1] / 255.0, c[2] / 255.0,
                    c[3] ? c[3] / 255.0 : 1.0);
}

static void base64(pa_fox_buf *b, const uint8_t *in, size_t n) {
  static const char tab[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t out = (n + 2) / 3 * 4;
  if (!grow(b, out))
    return;
  char *o = b->p + b->n;
  size_t i = 0;
  for (; i + 2 < n; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
    *o++ = tab[v >> 18];
    *o++ = tab[(v >> 12) & 63];
    *o++ = tab[(v >> 6) & 63];
    *o++ = tab[v & 63];
  }
  if (i < n) {
    uint32_t v =
        (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
    *o++ = tab[v >> 18];
    *o++ = tab[(v >> 12) & 63];
    *o++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
    *o++ = '=';
  }
  b->n += out;
  b->p[b->n] = 0;
}

/* ---- schemas ------------------------------------------------------- */

#define TIME_S                                                                 \
  "{\"type\":\"object\",\"properties\":{\"sec\":{\"type\":\"integer\"},"       \
  "\"nsec\":{\"type\":\"integer\"}}}"
#define VEC3_S                                                                 \
  "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\"},"          \
  "\"y\":{\"type\":\"number\"},\"z\":{\"type\":\"number\"}}}"
#define QUAT_S                                                                 \
  "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\"},"          \
  "\"y\":{\"type\":\"number\"},\"z\":{\"type\":\"number\"},"                   \
  "\"w\":{\"type\":\"number\"}}}"
#define POSE_S                                                                 \
  "{\"type\":\"object\",\"properties\":{\"position\":" VEC3_S                  \
  ",\"orientation\":" QUAT_S "}}"
#define NUMS_S "{\"type\":\"array\",\"items\":{\"type\":\"number\"}}"
#define OBJS_S "{\"type\":\"array\",\"items\":{\"type\":\"object\"}}"

static const struct {
  const char *name, *schema, *topic;
} kinds[PA_FOX_KINDS] = {
    [PA_FOX_MAP] = {"foxglove.Grid",
                    "{\"title\":\"foxglove.Grid\",\"type\":\"object\","
                    "\"properties\":{\"timestamp\":" TIME_S
                    ",\"frame_id\":{\"type\":\"string\"},\"pose\":" POSE_S
                    ",\"column_count\":{\"type\":\"integer\"},"
                    "\"cell_size\":{\"type\":\"object\",\"properties\":{"
                    "\"x\":{\"type\":\"number\"},\"y\":{\"type\":\"number\"}}},"
                    "\"row_stride\":{\"type\":\"integer\"},"
                    "\"cell_stride\":{\"type\":\"integer\"},"
                    "\"fields\":" OBJS_S ",\"data\":{\"type\":\"string\","
                    "\"contentEncoding\":\"base64\"}}}",
                    "/map"},
    [PA_FOX_TF] =
        {"foxglove.FrameTransforms",
         "{\"title\":\"foxglove.FrameTransforms\",\"type\":\"object\","
         "\"properties\":{\"transforms\":{\"type\":\"array\","
         "\"items\":{\"type\":\"object\",\"properties\":{"
         "\"timestamp\":" TIME_S ",\"parent_frame_id\":{\"type\":\"string\"},"
         "\"child_frame_id\":{\"type\":\"string\"},"
         "\"translation\":" VEC3_S ",\"rotation\":" QUAT_S "}}}}}",
         "/tf"},
    [PA_FOX_SCENE] = {"foxglove.SceneUpdate",
                      "{\"title\":\"foxglove.SceneUpdate\",\"type\":\"object\","
                      "\"properties\":{\"deletions\":" OBJS_S
                      ",\"entities\":" OBJS_S "}}",
                      "/scene"},
    [PA_FOX_COMMANDS] = {"playarea.Command",
                         "{\"title\":\"playarea.Command\",\"type\":\"object\","
                         "\"properties\":{\"tick\":{\"type\":\"integer\"},"
                         "\"op\":{\"type\":\"integer\"},"
                         "\"robot\":{\"type\":\"integer\"},"
                         "\"flags\":{\"type\":\"integer\"},"
                         "\"name\":{\"type\":\"string\"},"
                         "\"path\":{\"type\":\"string\"},"
                         "\"args\":{\"type\":\"string\","
                         "\"contentEncoding\":\"base64\"}}}",
                         "/commands"},
    [PA_FOX_STATE] = {"playarea.State",
                      "{\"title\":\"playarea.State\",\"type\":\"object\","
                      "\"properties\":{\"tick\":{\"type\":\"integer\"},"
                      "\"sim_time\":{\"type\":\"number\"},"
                      "\"robots\":" OBJS_S "}}",
                      "/state"},
    [PA_FOX_SCAN] = {"foxglove.LaserScan",
                     "{\"title\":\"foxglove.LaserScan\",\"type\":\"object\","
                     "\"properties\":{\"timestamp\":" TIME_S
                     ",\"frame_id\":{\"type\":\"string\"},\"pose\":" POSE_S
                     ",\"start_angle\":{\"type\":\"number\"},"
                     "\"end_angle\":{\"type\":\"number\"},"
                     "\"ranges\":" NUMS_S ",\"intensities\":" NUMS_S "}}",
                     "scan"},
    [PA_FOX_ODOM] = {"nav_msgs/Odometry",
                     "{\"title\":\"nav_msgs/Odometry\",\"type\":\"object\","
                     "\"properties\":{\"header\":{\"type\":\"object\","
                     "\"properties\":{\"stamp\":" TIME_S
                     ",\"frame_id\":{\"type\":\"string\"}}},"
                     "\"child_frame_id\":{\"type\":\"string\"},"
                     "\"pose\":{\"type\":\"object\",\"properties\":{"
                     "\"pose\":" POSE_S ",\"covariance\":" NUMS_S "}},"
                     "\"twist\":{\"type\":\"object\",\"properties\":{"
                     "\"twist\":{\"type\":\"object\",\"properties\":{"
                     "\"linear\":" VEC3_S ",\"angular\":" VEC3_S "}},"
                     "\"covariance\":" NUMS_S "}}}}",
                     "odom"},
    [PA_FOX_CAMERA] =
        {"foxglove.CompressedImage",
         "{\"title\":\"foxglove.CompressedImage\","
         "\"type\":\"object\",\"properties\":{\"timestamp\":" TIME_S
         ",\"frame_id\":{\"type\":\"string\"},"
         "\"data\":{\"type\":\"string\","
         "\"contentEncoding\":\"base64\"},"
         "\"format\":{\"type\":\"string\"}}}",
         "camera"},
};

const char *pa_fox_schema_name(int kind) {
  return kind >= 0 && kind < PA_FOX_KINDS ? kinds[kind].name : NULL;
}

const char *pa_fox_schema(int kind) {
  return kind >= 0 && kind < PA_FOX_KINDS ? kinds[kind].schema : NULL;
}

void pa_fox_topic(int kind, const char *robot, char *out, size_t sz) {
  if (kind < PA_FOX_WORLD_KINDS)
    snprintf(out, sz, "%s", kinds[kind].topic);
  else
    snprintf(out, sz, "/%s/%s", robot, kinds[kind].topic);
}

/* ---- messages ------------------------------------------------------ */

void pa_fox_enc_grid(pa_fox_buf *b, uint64_t t_ns, const pa_map_block *m,
                     const int8_t *cells) {
  /* Row 0 is the map's first row, at its origin: Grid's own layout. */
  PUTS(b, "{\"timestamp\":");
  stamp(b, t_ns);
  pa_fox_buf_printf(b, ",\"frame_id\":\"map\",\"pose\":");
  pose(b, m->origin_x, m->origin_y, 0, m->origin_yaw);
  pa_fox_buf_printf(b, ",\"column_count\":%u,\"cell_size\":{\"x\":", m->width);
  num(b, m->resolution);
  PUTS(b, ",\"y\":");
  num(b, m->resolution);
  /* type 2 = INT8 (foxglove.NumericType): -1 unknown, 0..100 occupancy */
  pa_fox_buf_printf(b,
                    "},\"row_stride\":%u,\"cell_stride\":1,\"fields\":"
                    "[{\"name\":\"occupancy\",\"offset\":0,\"type\":2}],"
                    "\"data\":\"",
                    m->width);
  base64(b, (const uint8_t *)cells, (size_t)m->width * m->height);
  PUTS(b, "\"}");
}

/* A range rounded to a micrometre, as the JSON protocol prints it (json.c)
 * so the two agree digit for digit; integer formatting: ~10x faster than
 * printf("%.9g") on a 360-beam scan. */
static void range_um(pa_fox_buf *b, float f) {
  double d = (double)f;
  if (!isfinite(d) || fabs(d) > 1e9) {
    PUTS(b, "null");
    return;
  }
  char tmp[32], *e = tmp + sizeof tmp, *p = e;
  long long q = llround(d * 1e6);
  bool neg = q < 0;
  if (neg)
    q = -q;
  long long ip = q / 1000000, fp = q % 1000000;
  if (fp) {
    int digits = 6;
    while (fp % 10 == 0) {
      fp /= 10;
      digits--;
    }
    for (int k = 0; k < digits; k++, fp /= 10)
      *--p = (char)('0' + fp % 10);
    *--p = '.';
  }
  do {
    *--p = (char)('0' + ip % 10);
    ip /= 10;
  } while (ip);
  if (neg)
    *--p = '-';
  pa_fox_buf_put(b, p, (size_t)(e - p));
}

void pa_fox_enc_scan(pa_fox_buf *b, const char *robot, const pa_scan *s) {
  const float *r = (const float *)(s + 1);
  PUTS(b, "{\"timestamp\":");
  stamp(b, pa_fox_ns(s->sim_time));
  PUTS(b, ",\"frame_id\":");
  char frame[64];
  snprintf(frame, sizeof frame, "%s/laser", robot);
  str(b, frame);
  PUTS(b, ",\"pose\":");
  pose(b, 0, 0, 0, 0);
  PUTS(b, ",\"start_angle\":");
  num(b, s->angle_min);
  PUTS(b, ",\"end_angle\":");
  num(b, (double)s->angle_min +
             (double)s->angle_increment * (s->count ? s->count - 1 : 0));
  PUTS(b, ",\"ranges\":[");
  for (uint32_t i = 0; i < s->count; i++) {
    if (i)
      PUTS(b, ",");
    range_um(b, r[i]);
  }
  PUTS(b, "],\"intensities\":[]}");
}

static void transform(pa_fox_buf *b, uint64_t t_ns, const char *parent,
                      const char *child, double x, double y, double z,
                      double yaw) {
  PUTS(b, "{\"timestamp\":");
  stamp(b, t_ns);
  PUTS(b, ",\"parent_frame_id\":");
  str(b, parent);
  PUTS(b, ",\"child_frame_id\":");
  str(b, child);
  PUTS(b, ",\"translation\":");
  vec3(b, x, y, z);
  PUTS(b, ",\"rotation\":");
  yaw_quat(b, yaw);
  PUTS(b, "}");
}

void pa_fox_enc_tf(pa_fox_buf *b, uint64_t t_ns, const pa_robot_info *info,
                   const pa_robot_state *const *rs, uint32_t n) {
  PUTS(b, "{\"transforms\":[");
  bool first = true;
  for (uint32_t i = 0; i < n; i++) {
    if (!rs[i])
      continue;
    const pa_robot_info *ri = &info[i];
    const pa_robot_state *s = rs[i];
    char base[64], child[64];
    snprintf(base, sizeof base, "%s/base_link", ri->name);
    if (!first)
      PUTS(b, ",");
    first = false;
    /* map -> base: ground truth */
    transform(b, t_ns, "map", base, s->x, s->y, 0, s->theta);
    /* map -> odom: truth composed with the inverse of the odometry, so
     * odom -> base is what the wheels believe */
    double dth = s->theta - s->odom_theta;
    double c = cos(dth), sn = sin(dth);
    double ox = s->x - (c * s->odom_x - sn * s->odom_y);
    double oy = s->y - (sn * s->odom_x + c * s->odom_y);
    snprintf(child, sizeof child, "%s/odom", ri->name);
    PUTS(b, ",");
    transform(b, t_ns, "map", child, ox, oy, 0, dth);
    snprintf(child, sizeof child, "%s/laser", ri->name);
    PUTS(b, ",");
    transform(b, t_ns, base, child, 0, 0, 0,
              0); /* pa-sim casts from the centre */
    snprintf(child, sizeof child, "%s/camera", ri->name);
    PUTS(b, ",");
    transform(b, t_ns, base, child, 0, 0,
              ri->head_height > 0 ? ri->head_height : 0.35, s->head);
  }
  PUTS(b, "]}");
}

void pa_fox_enc_odom(pa_fox_buf *b, uint64_t t_ns, const char *robot,
                     const pa_robot_state *rs) {
  char frame[64];
  PUTS(b, "{\"header\":{\"stamp\":");
  stamp(b, t_ns);
  snprintf(frame, sizeof frame, "%s/odom", robot);
  PUTS(b, ",\"frame_id\":");
  str(b, frame);
  snprintf(frame, sizeof frame, "%s/base_link", robot);
  PUTS(b, "},\"child_frame_id\":");
  str(b, frame);
  PUTS(b, ",\"pose\":{\"pose\":");
  pose(b, rs->odom_x, rs->odom_y, 0, rs->odom_theta);
  /* Nominal covariances (x, y, yaw and v, w): pa-sim's odometry drifts but
   * does not estimate its own uncertainty. Unused axes get a large value. */
  PUTS(b, ",\"covariance\":[");
  for (int i = 0; i < 36; i++) {
    const char *v = "0";
    if (i % 7 == 0)
      v = (i == 0 || i == 7) ? "0.01" : (i == 35 ? "0.02" : "1e6");
    pa_fox_buf_printf(b, "%s%s", i ? "," : "", v);
  }
  PUTS(b, "]},\"twist\":{\"twist\":{\"linear\":");
  vec3(b, rs->v, rs->vy, 0);
  PUTS(b, ",\"angular\":");
  vec3(b, 0, 0, rs->w);
  PUTS(b, "},\"covariance\":[");
  for (int i = 0; i < 36; i++) {
    const char *v = "0";
    if (i % 7 == 0)
      v = (i == 0 || i == 7) ? "0.001" : (i == 35 ? "0.002" : "1e6");
    pa_fox_buf_printf(b, "%s%s", i ? "," : "", v);
  }
  PUTS(b, "]}}");
}

int pa_fox_enc_image(pa_fox_buf *b, void *tj, const char *robot,
                     const pa_frame *f, int quality, char *err, size_t sz) {
  unsigned char *jpeg = NULL;
  unsigned long jlen = 0;
  if (tjCompress2((tjhandle)tj, (const unsigned char *)(f + 1), f->width, 0,
                  f->height, TJPF_RGB, &jpeg, &jlen, TJSAMP_420, quality,
                  TJFLAG_FASTDCT) != 0) {
    snprintf(err, sz, "jpeg: %s", tjGetErrorStr2((tjhandle)tj));
    tjFree(jpeg);
    return -1;
  }
  char frame[64];
  snprintf(frame, sizeof frame, "%s/camera", robot);
  PUTS(b, "{\"timestamp\":");
  stamp(b, pa_fox_ns(f->sim_time));
  PUTS(b, ",\"frame_id\":");
  str(b, frame);
  PUTS(b, ",\"format\":\"jpeg\",\"data\":\"");
  base64(b, jpeg, jlen);
  PUTS(b, "\"}");
  tjFree(jpeg);
  return 0;
}

/* ---- /scene -------------------------------------------------------- */

/* The primitive arrays of a SceneEntity, in the order they are written. */
enum { PR_ARROWS, PR_CUBES, PR_SPHERES, PR_CYLINDERS, PR_LINES, PR_TEXTS };
static const char *const pr_names[PA_FOX_PRIMS] = {
    "arrows", "cubes", "spheres", "cylinders", "lines", "texts"};

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
  stamp(b, x->t_ns);
  x->body_at = b->n;
  PUTS(b, ",\"frame_id\":\"map\",\"id\":");
  str(b, x->id);
  PUTS(b, ",\"lifetime\":{\"sec\":0,\"nsec\":0},\"frame_locked\":false,"
          "\"metadata\":[");
  va_list ap;
  va_start(ap, id);
  bool first = true;
  for (const char *k; (k = va_arg(ap, const char *));) {
    const char *v = va_arg(ap, const char *);
    if (!first)
      PUTS(b, ",");
    PUTS(b, "{\"key\":");
    str(b, k);
    PUTS(b, ",\"value\":");
    str(b, v);
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
  PUTS(b, ",\"triangles\":[],\"models\":[]}");
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
  vec3(b, x, y, z);
  PUTS(b, ",\"orientation\":{\"x\":");
  num(b, q[1]);
  PUTS(b, ",\"y\":");
  num(b, q[2]);
  PUTS(b, ",\"z\":");
  num(b, q[3]);
  PUTS(b, ",\"w\":");
  num(b, q[0]);
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
    pose(p, o->x, o->y, h / 2, o->theta);
    PUTS(p, ",\"size\":");
    if (circle)
      vec3(p, 2 * o->radius, 2 * o->radius, h);
    else
      vec3(p, o->size_x, o->size_y, h);
    if (circle)
      PUTS(p, ",\"bottom_scale\":1,\"top_scale\":1");
    PUTS(p, ",\"color\":");
    color(p, o->colour);
    PUTS(p, "}");
    if (agent) {
      /* its heading, on its top: it walks on its own */
      double r = circle ? o->radius : fmax(o->size_x, o->size_y) / 2;
      p = prim(x, PR_ARROWS);
      PUTS(p, "{\"pose\":");
      pose(p, o->x, o->y, h + 0.02, o->theta);
      pa_fox_buf_printf(p,
                        ",\"shaft_length\":%.4g,\"shaft_diameter\":%.4g,"
                        "\"head_length\":%.4g,\"head_diameter\":%.4g,"
                        "\"color\":{\"r\":1,\"g\":1,\"b\":1,\"a\":1}}",
                        r * 0.7, r * 0.15, r * 0.4, r * 0.4);
    }
    ent_close(x);
  }
}

/* type 0 = LINE_STRIP: a path thin, its waypoints a thicker strip */
static void line_strip(pa_fox_buf *b, const float (*pts)[2], uint32_t n,
                       const uint8_t col[4], double thick) {
  PUTS(b, "{\"type\":0,\"pose\":");
  pose(b, 0, 0, 0.02, 0);
  pa_fox_buf_printf(b,
                    ",\"thickness\":%g,\"scale_invariant\":false,"
                    "\"points\":[",
                    thick);
  for (uint32_t i = 0; i < n; i++) {
    if (i)
      PUTS(b, ",");
    vec3(b, pts[i][0], pts[i][1], 0);
  }
  PUTS(b, "],\"color\":");
  color(b, col);
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
  pose(p, t->ball[0], t->ball[1], t->ball[2] + PA_FOX_BALL_RADIUS, 0);
  PUTS(p, ",\"size\":");
  vec3(p, 2 * PA_FOX_BALL_RADIUS, 2 * PA_FOX_BALL_RADIUS,
       2 * PA_FOX_BALL_RADIUS);
  PUTS(p, ",\"color\":{\"r\":1,\"g\":0.55,\"b\":0,\"a\":1}}");
  ent_close(x);
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
      vec3(p, 2 * s[0], 2 * s[0], 2 * s[0]);
    else
      vec3(p, s[0], s[1], s[2]);
    PUTS(p, ",\"color\":");
    color_f(p, v->rgba);
    PUTS(p, "}");
    break;
  case PA_VIS_CYLINDER:
  case PA_VIS_CAPSULE:
    p = prim(x, PR_CYLINDERS);
    PUTS(p, "{\"pose\":");
    pose_q(p, px, py, pz, v->quat);
    PUTS(p, ",\"size\":");
    vec3(p, 2 * s[0], 2 * s[0], s[1]);
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
      vec3(p, 2 * s[0], 2 * s[0], 2 * s[0]);
      PUTS(p, ",\"color\":");
      color_f(p, v->rgba);
      PUTS(p, "}");
    }
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
  case PA_VIS_POLYLINE: {
    p = prim(x, PR_LINES);
    PUTS(p, "{\"type\":0,\"pose\":");
    pose(p, 0, 0, 0, 0);
    pa_fox_buf_printf(p,
                      ",\"thickness\":%.4g,\"scale_invariant\":true,"
                      "\"points\":[",
                      s[0] > 0 ? s[0] : 1);
    bool own = true;
    for (uint32_t k = 0; k < n; k++) {
      if (k)
        PUTS(p, ",");
      vec3(p, pt[k].p[0], pt[k].p[1], pt[k].p[2]);
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
    break;
  }
  case PA_VIS_POINT_CLOUD: {
    /* SceneEntity has no points: cubes of 1 cm per pixel of point size,
     * at most PA_FOX_CLOUD_CUBES of them (evenly sampled) */
    uint32_t step = n > PA_FOX_CLOUD_CUBES
                        ? (n + PA_FOX_CLOUD_CUBES - 1) / PA_FOX_CLOUD_CUBES
                        : 1;
    double e = 0.01 * (s[0] > 0 ? s[0] : 1);
    static const float q0[4] = {1, 0, 0, 0};
    for (uint32_t k = 0; k < n; k += step) {
      p = prim(x, PR_CUBES);
      PUTS(p, "{\"pose\":");
      pose_q(p, pt[k].p[0], pt[k].p[1], pt[k].p[2], q0);
      PUTS(p, ",\"size\":");
      vec3(p, e, e, e);
      PUTS(p, ",\"color\":");
      color_packed(p, pt[k].rgba, v->rgba);
      PUTS(p, "}");
    }
    break;
  }
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
    str(p, text);
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
    stamp(b, t_ns);
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
      stamp(b, t_ns);
      PUTS(b, ",\"type\":0,\"id\":");
      str(b, m->prev[i].id);
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

void pa_fox_enc_command(pa_fox_buf *b, uint64_t tick, const pa_cmd *c) {
  pa_fox_buf_printf(b,
                    "{\"tick\":%llu,\"op\":%u,\"robot\":%u,\"flags\":%u,"
                    "\"name\":",
                    (unsigned long long)tick, c->op, c->robot, c->flags);
  char name[sizeof c->name + 1], path[sizeof c->path + 1];
  snprintf(name, sizeof name, "%.*s", (int)sizeof c->name, c->name);
  snprintf(path, sizeof path, "%.*s", (int)sizeof c->path, c->path);
  str(b, name);
  PUTS(b, ",\"path\":");
  str(b, path);
  /* the op's argument area as it was pushed: replay pushes it back */
  PUTS(b, ",\"args\":\"");
  base64(b, c->args_raw, sizeof c->args_raw);
  PUTS(b, "\"}");
}

static int unbase64(const char *in, uint8_t *out, size_t cap) {
  size_t n = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (const char *p = in; *p && *p != '='; p++) {
    const char *tab =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *q = strchr(tab, *p);
    if (!q)
      return -1;
    acc = acc << 6 | (uint32_t)(q - tab);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (n == cap)
        return -1;
      out[n++] = (uint8_t)(acc >> bits);
    }
  }
  return (int)n;
}

int pa_fox_dec_command(const char *json, size_t len, pa_cmd *c) {
  json_t *j = json_loadb(json, len, 0, NULL);
  memset(c, 0, sizeof *c);
  json_t *op = json_object_get(j, "op"), *rb = json_object_get(j, "robot"),
         *fl = json_object_get(j, "flags");
  const char *name = json_string_value(json_object_get(j, "name"));
  const char *path = json_string_value(json_object_get(j, "path"));
  const char *args = json_string_value(json_object_get(j, "args"));
  int rc = -1;
  if (json_is_integer(op) && json_is_integer(rb) && json_is_integer(fl) &&
      name && path && args && json_integer_value(op) > 0 &&
      json_integer_value(op) < PA_OP_COUNT && strlen(name) < sizeof c->name &&
      strlen(path) < sizeof c->path &&
      unbase64(args, c->args_raw, sizeof c->args_raw) ==
          (int)sizeof c->args_raw) {
    c->op = (uint32_t)json_integer_value(op);
    c->robot = (uint32_t)json_integer_value(rb);
    c->flags = (uint32_t)json_integer_value(fl);
    memcpy(c->name, name, strlen(name));
    memcpy(c->path, path, strlen(path));
    rc = 0;
  }
  json_decref(j);
  return rc;
}

/* The fields a replay compares, in a fixed order. */
#define STATE_FIELDS(X)                                                        \
  X(x) X(y) X(theta) X(odom_x) X(odom_y) X(odom_theta) X(v) X(vy) X(w) X(head)

void pa_fox_enc_state(pa_fox_buf *b, const pa_tick *t,
                      const pa_robot_info *info, uint32_t n) {
  pa_fox_buf_printf(b, "{\"tick\":%llu,\"sim_time\":%.17g,\"robots\":[",
                    (unsigned long long)t->tick, t->sim_time);
  const pa_robot_state *rs = (const pa_robot_state *)(t + 1);
  bool first = true;
  for (uint32_t i = 0; i < t->robot_count; i++) {
    const pa_robot_state *r = &rs[i];
    if (!(r->flags & PA_RS_ACTIVE))
      continue;
    pa_fox_buf_printf(b, "%s{\"id\":%u,\"name\":", first ? "" : ",", r->id);
    str(b, r->id < n ? info[r->id].name : "");
#define X(f) pa_fox_buf_printf(b, ",\"" #f "\":%.17g", r->f);
    STATE_FIELDS(X)
#undef X
    pa_fox_buf_printf(b, ",\"rng\":\"%llu\"}", (unsigned long long)r->rng);
    first = false;
  }
  PUTS(b, "]}");
}

int pa_fox_cmp_state(const char *json, size_t len, const pa_tick *t, char *why,
                     size_t why_sz) {
  json_t *j = json_loadb(json, len, 0, NULL);
  json_t *robots = json_object_get(j, "robots");
  int rc = -1;
  if (!json_is_array(robots)) {
    snprintf(why, why_sz, "the recorded /state is malformed");
    goto out;
  }
  const pa_robot_state *rs = (const pa_robot_state *)(t + 1);
  uint32_t active = 0;
  for (uint32_t i = 0; i < t->robot_count; i++)
    active += (rs[i].flags & PA_RS_ACTIVE) != 0;
  if (json_array_size(robots) != active) {
    snprintf(why, why_sz, "%zu robots recorded, %u now",
             json_array_size(robots), active);
    goto out;
  }
  size_t k;
  json_t *r;
  json_array_foreach(robots, k, r) {
    json_int_t id = json_integer_value(json_object_get(r, "id"));
    const pa_robot_state *s = NULL;
    for (uint32_t i = 0; i < t->robot_count && !s; i++)
      if (rs[i].id == id && (rs[i].flags & PA_RS_ACTIVE))
        s = &rs[i];
    if (!s) {
      snprintf(why, why_sz, "robot %lld is gone", (long long)id);
      goto out;
    }
#define X(f)                                                                   \
  {                                                                            \
    double want = json_number_value(json_object_get(r, #f));                   \
    if (want != s->f) {                                                        \
      snprintf(why, why_sz,                                                    \
               "robot %lld " #f ": recorded %.17g, replayed %.17g",            \
               (long long)id, want, s->f);                                     \
      goto out;                                                                \
    }                                                                          \
  }
    STATE_FIELDS(X)
#undef X
    char rng[32];
    snprintf(rng, sizeof rng, "%llu", (unsigned long long)s->rng);
    const char *want = json_string_value(json_object_get(r, "rng"));
    if (!want || strcmp(want, rng)) {
      snprintf(why, why_sz, "robot %lld noise state: recorded %s, replayed %s",
               (long long)id, want ? want : "?", rng);
      goto out;
    }
  }
  snprintf(why, why_sz, "%zu robots identical at tick %llu",
           json_array_size(robots), (unsigned long long)t->tick);
  rc = 0;
out:
  json_decref(j);
  return rc;
}
