/* foxglove_msgs.c - the Foxglove channels' messages as JSON: Foxglove's
 * well-known schemas (foxglove.Grid, LaserScan, FrameTransforms,
 * CompressedImage; SceneUpdate is foxglove_scene.c's), a
 * nav_msgs/Odometry-shaped odometry and the commands log. Numbers are printed
 * directly (no jansson): a scan's ranges or a map's base64 cells are most of
 * the bytes. */
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
  if (n) /* an empty piece may be a buffer never grown (NULL) */
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
void pa_fox_num(pa_fox_buf *b, double v) {
  if (!isfinite(v))
    v = 0;
  pa_fox_buf_printf(b, "%.9g", v);
}

void pa_fox_str(pa_fox_buf *b, const char *s) {
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

void pa_fox_stamp(pa_fox_buf *b, uint64_t t_ns) {
  pa_fox_buf_printf(b, "{\"sec\":%llu,\"nsec\":%u}",
                    (unsigned long long)(t_ns / 1000000000u),
                    (unsigned)(t_ns % 1000000000u));
}

void pa_fox_vec3(pa_fox_buf *b, double x, double y, double z) {
  PUTS(b, "{\"x\":");
  pa_fox_num(b, x);
  PUTS(b, ",\"y\":");
  pa_fox_num(b, y);
  PUTS(b, ",\"z\":");
  pa_fox_num(b, z);
  PUTS(b, "}");
}

/* A rotation about z as a quaternion. */
static void yaw_quat(pa_fox_buf *b, double yaw) {
  pa_fox_buf_printf(b, "{\"x\":0,\"y\":0,\"z\":");
  pa_fox_num(b, sin(yaw / 2));
  PUTS(b, ",\"w\":");
  pa_fox_num(b, cos(yaw / 2));
  PUTS(b, "}");
}

void pa_fox_pose(pa_fox_buf *b, double x, double y, double z, double yaw) {
  PUTS(b, "{\"position\":");
  pa_fox_vec3(b, x, y, z);
  PUTS(b, ",\"orientation\":");
  yaw_quat(b, yaw);
  PUTS(b, "}");
}

void pa_fox_color(pa_fox_buf *b, const uint8_t c[4]) {
  pa_fox_buf_printf(b, "{\"r\":%.4g,\"g\":%.4g,\"b\":%.4g,\"a\":%.4g}",
                    c[0] / 255.0, c[1] / 255.0, c[2] / 255.0,
                    c[3] ? c[3] / 255.0 : 1.0);
}

void pa_fox_base64(pa_fox_buf *b, const uint8_t *in, size_t n) {
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
    [PA_FOX_POSE] = {"foxglove.PoseInFrame",
                     "{\"title\":\"foxglove.PoseInFrame\",\"type\":\"object\","
                     "\"properties\":{\"timestamp\":" TIME_S
                     ",\"frame_id\":{\"type\":\"string\"},\"pose\":" POSE_S
                     "}}",
                     "pose"},
    [PA_FOX_CAMINFO] = {"foxglove.CameraCalibration",
                        "{\"title\":\"foxglove.CameraCalibration\","
                        "\"type\":\"object\",\"properties\":{"
                        "\"timestamp\":" TIME_S
                        ",\"frame_id\":{\"type\":\"string\"},"
                        "\"width\":{\"type\":\"integer\"},"
                        "\"height\":{\"type\":\"integer\"},"
                        "\"distortion_model\":{\"type\":\"string\"},"
                        "\"D\":" NUMS_S ",\"K\":" NUMS_S ",\"R\":" NUMS_S
                        ",\"P\":" NUMS_S "}}",
                        "camera_info"},
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

/* A map cell's grey: free 255 (white) .. occupied 0 (black), unknown 128
 * (the grey of map_server's PGM and RViz's map colour scheme). */
static uint8_t map_grey(int v) {
  if (v < 0)
    return 128;
  if (v > 100)
    v = 100;
  return (uint8_t)(255 - (v * 255 + 50) / 100);
}

void pa_fox_enc_grid(pa_fox_buf *b, uint64_t t_ns, const pa_map_block *m,
                     const int8_t *cells) {
  /* Row 0 is the map's first row, at its origin: Grid's own layout. */
  PUTS(b, "{\"timestamp\":");
  pa_fox_stamp(b, t_ns);
  pa_fox_buf_printf(b, ",\"frame_id\":\"map\",\"pose\":");
  pa_fox_pose(b, m->origin_x, m->origin_y, 0, m->origin_yaw);
  pa_fox_buf_printf(b, ",\"column_count\":%u,\"cell_size\":{\"x\":", m->width);
  pa_fox_num(b, m->resolution);
  PUTS(b, ",\"y\":");
  pa_fox_num(b, m->resolution);
  /* A cell: occupancy (type 2 = INT8, foxglove.NumericType: -1 unknown,
   * 0..100), then its grey (UINT8, type 1) as red, green and blue, and
   * alpha 255: Lichtblick colours a Grid with red/green/blue/alpha fields
   * by them (rgba-fields) instead of the turbo colormap, so /map looks as
   * a map does: free white, occupied black, unknown grey. */
  pa_fox_buf_printf(b,
                    "},\"row_stride\":%u,\"cell_stride\":3,\"fields\":["
                    "{\"name\":\"occupancy\",\"offset\":0,\"type\":2},"
                    "{\"name\":\"red\",\"offset\":1,\"type\":1},"
                    "{\"name\":\"green\",\"offset\":1,\"type\":1},"
                    "{\"name\":\"blue\",\"offset\":1,\"type\":1},"
                    "{\"name\":\"alpha\",\"offset\":2,\"type\":1}],"
                    "\"data\":\"",
                    m->width * 3u);
  size_t n = (size_t)m->width * m->height;
  uint8_t *d = malloc(n ? n * 3 : 1);
  if (!d) {
    b->oom = true;
    return;
  }
  for (size_t i = 0; i < n; i++) {
    int v = cells[i];
    d[3 * i] = (uint8_t)cells[i];
    d[3 * i + 1] = map_grey(v);
    d[3 * i + 2] = 255;
  }
  pa_fox_base64(b, d, n * 3);
  free(d);
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
  pa_fox_stamp(b, pa_fox_ns(s->sim_time));
  PUTS(b, ",\"frame_id\":");
  char frame[64];
  snprintf(frame, sizeof frame, "%s/laser", robot);
  pa_fox_str(b, frame);
  PUTS(b, ",\"pose\":");
  pa_fox_pose(b, 0, 0, 0, 0);
  PUTS(b, ",\"start_angle\":");
  pa_fox_num(b, s->angle_min);
  PUTS(b, ",\"end_angle\":");
  pa_fox_num(b, (double)s->angle_min +
                    (double)s->angle_increment * (s->count ? s->count - 1 : 0));
  PUTS(b, ",\"ranges\":[");
  for (uint32_t i = 0; i < s->count; i++) {
    if (i)
      PUTS(b, ",");
    /* no return (pa-sim: range_max): foxglove.LaserScan has no range_max,
     * so a number there would be drawn as a ring; null is no number */
    if (!(r[i] < s->range_max))
      PUTS(b, "null");
    else
      range_um(b, r[i]);
  }
  PUTS(b, "],\"intensities\":[]}");
}

static void transform(pa_fox_buf *b, uint64_t t_ns, const char *parent,
                      const char *child, double x, double y, double z,
                      double yaw) {
  PUTS(b, "{\"timestamp\":");
  pa_fox_stamp(b, t_ns);
  PUTS(b, ",\"parent_frame_id\":");
  pa_fox_str(b, parent);
  PUTS(b, ",\"child_frame_id\":");
  pa_fox_str(b, child);
  PUTS(b, ",\"translation\":");
  pa_fox_vec3(b, x, y, z);
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
    /* camera -> camera_optical: z forward, x right, y down (the images'
     * and CameraCalibration's frame) */
    char optical[64];
    snprintf(optical, sizeof optical, "%s/camera_optical", ri->name);
    PUTS(b, ",{\"timestamp\":");
    pa_fox_stamp(b, t_ns);
    PUTS(b, ",\"parent_frame_id\":");
    pa_fox_str(b, child);
    PUTS(b, ",\"child_frame_id\":");
    pa_fox_str(b, optical);
    PUTS(b, ",\"translation\":{\"x\":0,\"y\":0,\"z\":0},"
            "\"rotation\":{\"x\":-0.5,\"y\":0.5,\"z\":-0.5,\"w\":0.5}}");
  }
  PUTS(b, "]}");
}

void pa_fox_enc_caminfo(pa_fox_buf *b, const char *robot, const pa_frame *f,
                        double fov) {
  char frame[64];
  snprintf(frame, sizeof frame, "%s/camera_optical", robot);
  double w = f->width, h = f->height;
  double fx = w / 2 / tan((fov > 0.01 && fov < 3.1 ? fov : 1.0) / 2);
  double cx = w / 2, cy = h / 2; /* square pixels: fy = fx */
  PUTS(b, "{\"timestamp\":");
  pa_fox_stamp(b, pa_fox_ns(f->sim_time));
  PUTS(b, ",\"frame_id\":");
  pa_fox_str(b, frame);
  pa_fox_buf_printf(b,
                    ",\"width\":%u,\"height\":%u,\"distortion_model\":"
                    "\"plumb_bob\",\"D\":[0,0,0,0,0],"
                    "\"K\":[%.9g,0,%.9g,0,%.9g,%.9g,0,0,1],"
                    "\"R\":[1,0,0,0,1,0,0,0,1],"
                    "\"P\":[%.9g,0,%.9g,0,0,%.9g,%.9g,0,0,0,1,0]}",
                    f->width, f->height, fx, cx, fx, cy, fx, cx, fx, cy);
}

void pa_fox_enc_pose(pa_fox_buf *b, uint64_t t_ns, const char *robot,
                     const pa_robot_state *rs) {
  char frame[64];
  snprintf(frame, sizeof frame, "%s/odom", robot);
  PUTS(b, "{\"timestamp\":");
  pa_fox_stamp(b, t_ns);
  PUTS(b, ",\"frame_id\":");
  pa_fox_str(b, frame);
  PUTS(b, ",\"pose\":");
  pa_fox_pose(b, rs->odom_x, rs->odom_y, 0, rs->odom_theta);
  PUTS(b, "}");
}

void pa_fox_enc_odom(pa_fox_buf *b, uint64_t t_ns, const char *robot,
                     const pa_robot_state *rs) {
  char frame[64];
  PUTS(b, "{\"header\":{\"stamp\":");
  pa_fox_stamp(b, t_ns);
  snprintf(frame, sizeof frame, "%s/odom", robot);
  PUTS(b, ",\"frame_id\":");
  pa_fox_str(b, frame);
  snprintf(frame, sizeof frame, "%s/base_link", robot);
  PUTS(b, "},\"child_frame_id\":");
  pa_fox_str(b, frame);
  PUTS(b, ",\"pose\":{\"pose\":");
  pa_fox_pose(b, rs->odom_x, rs->odom_y, 0, rs->odom_theta);
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
  pa_fox_vec3(b, rs->v, rs->vy, 0);
  PUTS(b, ",\"angular\":");
  pa_fox_vec3(b, 0, 0, rs->w);
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
                     const pa_frame *f, int quality, bool pb, char *err,
                     size_t sz) {
  unsigned char *jpeg = NULL;
  unsigned long jlen = 0;
  if (tjCompress2((tjhandle)tj, (const unsigned char *)(f + 1), f->width, 0,
                  f->height, TJPF_RGB, &jpeg, &jlen, TJSAMP_420, quality,
                  TJFLAG_FASTDCT) != 0) {
    snprintf(err, sz, "jpeg: %s", tjGetErrorStr2((tjhandle)tj));
    tjFree(jpeg);
    return -1;
  }
  if (pb) {
    pa_fox_pb_image(b, robot, f, jpeg, jlen);
    tjFree(jpeg);
    return 0;
  }
  char frame[64];
  snprintf(frame, sizeof frame, "%s/camera_optical", robot);
  PUTS(b, "{\"timestamp\":");
  pa_fox_stamp(b, pa_fox_ns(f->sim_time));
  PUTS(b, ",\"frame_id\":");
  pa_fox_str(b, frame);
  PUTS(b, ",\"format\":\"jpeg\",\"data\":\"");
  pa_fox_base64(b, jpeg, jlen);
  PUTS(b, "\"}");
  tjFree(jpeg);
  return 0;
}

void pa_fox_enc_command(pa_fox_buf *b, uint64_t tick, const pa_cmd *c) {
  pa_fox_buf_printf(b,
                    "{\"tick\":%llu,\"op\":%u,\"robot\":%u,\"flags\":%u,"
                    "\"name\":",
                    (unsigned long long)tick, c->op, c->robot, c->flags);
  char name[sizeof c->name + 1], path[sizeof c->path + 1];
  snprintf(name, sizeof name, "%.*s", (int)sizeof c->name, c->name);
  snprintf(path, sizeof path, "%.*s", (int)sizeof c->path, c->path);
  pa_fox_str(b, name);
  PUTS(b, ",\"path\":");
  pa_fox_str(b, path);
  /* the op's argument area as it was pushed: replay pushes it back */
  PUTS(b, ",\"args\":\"");
  pa_fox_base64(b, c->args_raw, sizeof c->args_raw);
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
    pa_fox_str(b, r->id < n ? info[r->id].name : "");
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
