/* test_raisim_visual.c - visual objects end to end: each type added over
 * JSON on a real stack, seen by the viewer (pa-render --viewer under
 * xvfb-run) in its colour at the right side of the screenshot, moved,
 * hidden and removed; they survive a pa-netgw crash. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "test_launch_util.h"
#include "testutil.h"

#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stb_image.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define START_MS (10000 * PA_TEST_SLOW)
#define W 640
#define H 400
#define K 0.4 /* [m] per unit of the layout below: fits the default map */

#include "test_json_call.h"

/* The map's centre in world coordinates, from get_map_info. */
static void map_centre(int fd, double *cx, double *cy) {
  json_t *mi = call(fd, "get_map_info", "{}");
  json_t *d = json_object_get(mi, "data");
  double res = json_number_value(json_object_get(d, "resolution"));
  json_t *org = json_object_get(d, "origin");
  *cx = json_number_value(json_array_get(org, 0)) +
        (double)json_integer_value(json_object_get(d, "width")) * res / 2;
  *cy = json_number_value(json_array_get(org, 1)) +
        (double)json_integer_value(json_object_get(d, "height")) * res / 2;
  json_decref(mi);
}

static void call0(int fd, const char *action, const char *data) {
  json_decref(call(fd, action, "%s", data));
}

/* The request is refused: a failure reply naming code (if given) and
 * needle (if given). */
static void refused(int fd, const char *action, const char *data,
                    const char *code, const char *needle) {
  char req[512], line[4096];
  snprintf(req, sizeof req,
           "{\"type\":\"command\",\"protocol_version\":2,"
           "\"action\":\"%s\",\"data\":%s}\n",
           action, data);
  assert_int_equal(pa_test_send_str(fd, req), 0);
  assert_true(pa_test_read_line(fd, line, sizeof line, 5000 * PA_TEST_SLOW) >
              0);
  json_t *r = json_loads(line, 0, NULL);
  assert_non_null(r);
  if (!json_is_false(json_object_get(r, "success")) ||
      (code && !strstr(line, code)) || (needle && !strstr(line, needle)))
    fail_msg("%s %s: wanted %s %s, got %s", action, data, code ? code : "",
             needle ? needle : "", line);
  json_decref(r);
}

typedef struct colour {
  const char *type;
  unsigned char rgb[3];
} colour;

/* One colour per type: exact for the line and point types (an overlay, no
 * lighting, no fog); the solid ones (sphere .. arrow) are lit, so their
 * pixels keep the colour's pattern (which channels are 0) only. */
static const colour cols[] = {
    {"sphere", {0, 255, 0}},        {"box", {0, 0, 255}},
    {"cylinder", {255, 0, 255}},    {"capsule", {0, 255, 255}},
    {"arrow", {255, 255, 0}},       {"polyline", {255, 0, 0}},
    {"point_cloud", {255, 128, 0}}, {"text", {128, 0, 255}},
};
#define NCOL (sizeof cols / sizeof cols[0])
#define NSOLID 5 /* cols[0, NSOLID) are lit */

typedef struct hits {
  int n;
  double cx, cy; /* centroid [px] */
} hits;

/* A lit pixel of a pure colour c (channels 0 or 255) seen through little
 * fog: its 0 channels stay low, its 255 ones are shaded alike. */
static bool lit_like(const unsigned char *p, const unsigned char c[3]) {
  int hi = -1;
  for (int k = 0; k < 3; k++) {
    if (!c[k] ? p[k] > 40 : p[k] < 90)
      return false;
    if (c[k] && hi >= 0 && abs(p[k] - p[hi]) > 50)
      return false;
    if (c[k])
      hi = k;
  }
  return true;
}

static void count_lit(const unsigned char *img, const unsigned char rgb[3],
                      bool lit, hits *h) {
  memset(h, 0, sizeof *h);
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      const unsigned char *p = img + (y * W + x) * 3;
      if (lit ? lit_like(p, rgb)
              : abs(p[0] - rgb[0]) <= 3 && abs(p[1] - rgb[1]) <= 3 &&
                    abs(p[2] - rgb[2]) <= 3) {
        h->n++;
        h->cx += x;
        h->cy += y;
      }
    }
  if (h->n)
    h->cx /= h->n, h->cy /= h->n;
}

/* Pixels of cols[i]'s colour (lit when solid). */
static void count(const unsigned char *img, size_t i, hits *h) {
  count_lit(img, cols[i].rgb, i < NSOLID, h);
}

static void count_wh(const unsigned char *img, int w, int h,
                     const unsigned char rgb[3], int tol, hits *r) {
  memset(r, 0, sizeof *r);
  for (int j = 0; j < h; j++)
    for (int i = 0; i < w; i++) {
      const unsigned char *p = img + (j * w + i) * 3;
      if (abs(p[0] - rgb[0]) <= tol && abs(p[1] - rgb[1]) <= tol &&
          abs(p[2] - rgb[2]) <= tol)
        r->n++, r->cx += i, r->cy += j;
    }
  if (r->n)
    r->cx /= r->n, r->cy /= r->n;
}

/* The viewer's screenshot of the instance, [W*H*3] (free()). */
static unsigned char *viewer_shot(const char *instance, int k) {
  char tag[16], png[512];
  snprintf(tag, sizeof tag, "%d", k);
  if (pa_test_viewer_shot(instance, tag, W, H, png, sizeof png) != 0)
    fail_msg("viewer did not exit cleanly");
  int iw = 0, ih = 0, ic = 0;
  unsigned char *img = stbi_load(png, &iw, &ih, &ic, 3);
  assert_non_null(img);
  assert_int_equal(iw, W);
  assert_int_equal(ih, H);
  return img;
}

static void test_visuals_in_viewer(void **state) {
  (void)state;
  if (access("/usr/bin/xvfb-run", X_OK) != 0) {
    fprintf(stderr, "SKIP: /usr/bin/xvfb-run is missing\n");
    skip();
  }
  const char *extra[] = {"--no-render", "--no_beacon", NULL};
  lt_stack s;
  assert_int_equal(lt_start(&s, "vis", extra, START_MS), 0);
  int fd = pa_test_tcp_connect(s.port);
  assert_true(fd >= 0);
  double cx, cy;
  map_centre(fd, &cx, &cy);

  /* West of the centre: sphere, cylinder, capsule; east: box, arrow, text;
   * north: the point cloud; south: the polyline. Colours: cols[]. */
  json_decref(
      call(fd, "add_visual",
           "{\"name\":\"sph\",\"type\":\"sphere\",\"position\":[%g,%g,1]"
           ",\"size\":0.6,\"color\":[0,1,0]}",
           cx - 5 * K, cy));
  json_decref(call(fd, "add_visual",
                   "{\"name\":\"box\",\"type\":\"box\",\"position\":[%g,%g,1],"
                   "\"size\":[1.2,1.2,0.8],\"yaw\":0.3,\"color\":[0,0,1]}",
                   cx + 5 * K, cy));
  json_decref(
      call(fd, "add_visual",
           "{\"name\":\"cyl\",\"type\":\"cylinder\",\"position\":[%g,%g,"
           "1],\"size\":[0.4,0.8],\"color\":[1,0,1]}",
           cx - 6 * K, cy + 3 * K));
  json_decref(call(fd, "add_visual",
                   "{\"name\":\"cap\",\"type\":\"capsule\",\"position\":[%g,%g,"
                   "1],\"size\":[0.4,0.8],\"color\":[0,1,1]}",
                   cx - 6 * K, cy - 3 * K));
  json_decref(
      call(fd, "add_visual",
           "{\"name\":\"arr\",\"type\":\"arrow\",\"position\":[%g,%g,1],"
           "\"size\":[1.6,0.4],\"color\":[1,1,0]}",
           cx + 3 * K, cy + 3 * K));
  json_decref(call(fd, "add_visual",
                   "{\"name\":\"txt\",\"type\":\"text\",\"position\":[%g,%g,1],"
                   "\"text\":\"hello\",\"size\":1.2,\"color\":[0.5,0,1]}",
                   cx + 6 * K, cy - 3 * K));
  char pts[8192];
  size_t o = 0;
  o += (size_t)snprintf(pts + o, sizeof pts - o, "[");
  for (int i = 0; i < 200; i++)
    o += (size_t)snprintf(pts + o, sizeof pts - o, "%s[%.3f,%.3f,0.5]",
                          i ? "," : "", cx - 2 * K + (i % 20) * 0.08,
                          cy + 6 * K + (i / 20) * 0.08);
  o += (size_t)snprintf(pts + o, sizeof pts - o, "]");
  json_decref(call(fd, "add_visual",
                   "{\"name\":\"cloud\",\"type\":\"point_cloud\",\"color\":[1,"
                   "0.5,0],\"points\":%s}",
                   pts));
  json_decref(call(fd, "add_visual",
                   "{\"name\":\"line\",\"type\":\"polyline\",\"color\":[1,0,0],"
                   "\"points\":[[%g,%g,0.5],[%g,%g,0.5],[%g,%g,0.5]]}",
                   cx - 4 * K, cy - 7 * K, cx, cy - 6 * K, cx + 4 * K,
                   cy - 7 * K));
  json_t *l = call(fd, "list_visuals", "{}");
  assert_int_equal(
      json_integer_value(json_object_get(json_object_get(l, "data"), "count")),
      NCOL);
  json_decref(l);

  unsigned char *img = viewer_shot(s.instance, 0);
  hits h[NCOL];
  for (size_t i = 0; i < NCOL; i++) {
    count(img, i, &h[i]);
    fprintf(stderr, "%-12s %5d px at (%.0f, %.0f)\n", cols[i].type, h[i].n,
            h[i].cx, h[i].cy);
    if (h[i].n < 15)
      fail_msg("%s: %d pixels of its colour", cols[i].type, h[i].n);
  }
  /* Image x grows east, y grows south (the camera looks north). */
  assert_true(h[0].cx < W / 2 - 40); /* sphere, west */
  assert_true(h[1].cx > W / 2 + 40); /* box, east */
  assert_true(h[2].cx < W / 2 && h[3].cx < W / 2);
  assert_true(h[2].cy < h[3].cy); /* cylinder north of capsule */
  assert_true(h[4].cx > W / 2 && h[7].cx > W / 2);
  assert_true(h[6].cy < H / 2 - 20); /* cloud, north */
  assert_true(h[5].cy > H / 2 + 20); /* polyline, south */
  assert_true(fabs(h[6].cx - W / 2) < 60 && fabs(h[5].cx - W / 2) < 60);
  free(img);

  /* Move the sphere east, hide the box, recolour half the cloud per
   * point by appending red-free points, then the crash: pa-netgw is
   * SIGKILLed, the launcher restarts it, the visuals are still there. */
  json_decref(call(fd, "update_visual",
                   "{\"name\":\"sph\",\"position\":[%g,%g,1]}", cx + 6 * K,
                   cy + 5 * K));
  call0(fd, "update_visual", "{\"name\":\"box\",\"visible\":false}");
  pid_t old = lt_pid(&s, PA_PROC_NETGW);
  assert_true(old > 0);
  close(fd);
  kill(old, SIGKILL);
  assert_true(lt_wait_new_pid(&s, PA_PROC_NETGW, old, 10000 * PA_TEST_SLOW));
  int64_t end = pa_test_now_ms() + 5000;
  while ((fd = pa_test_tcp_connect(s.port)) < 0 && pa_test_now_ms() < end)
    usleep(20000);
  assert_true(fd >= 0);
  l = call(fd, "list_visuals", "{}");
  assert_int_equal(
      json_integer_value(json_object_get(json_object_get(l, "data"), "count")),
      NCOL);
  json_decref(l);

  img = viewer_shot(s.instance, 1);
  hits g;
  count(img, 0, &g);
  assert_true(g.n >= 15);
  assert_true(g.cx > W / 2 + 40); /* moved east */
  count(img, 1, &g);
  assert_true(g.n < 5); /* hidden */
  free(img);

  /* remove one, clear the rest: nothing of any colour is left */
  call0(fd, "remove_visual", "{\"name\":\"sph\"}");
  call0(fd, "clear_visuals", "{}");
  l = call(fd, "list_visuals", "{}");
  assert_int_equal(
      json_integer_value(json_object_get(json_object_get(l, "data"), "count")),
      0);
  json_decref(l);
  img = viewer_shot(s.instance, 2);
  for (size_t i = 0; i < NCOL; i++) {
    count(img, i, &g);
    if (g.n >= 5)
      fail_msg("%s: %d pixels of its colour after clear_visuals", cols[i].type,
               g.n);
  }
  free(img);
  close(fd);
  assert_int_equal(lt_stop(&s, 5000), 0);
}

/* A 100k-point cloud, sent in chunks (a JSON line is at most 1 MiB), per
 * point colours; over the cap: refused by name, nothing changed. */
static void test_big_cloud(void **state) {
  (void)state;
  const char *extra[] = {"--no-render", "--no_beacon", NULL};
  lt_stack s;
  assert_int_equal(lt_start(&s, "cloud", extra, START_MS), 0);
  int fd = pa_test_tcp_connect(s.port);
  assert_true(fd >= 0);
  call0(fd, "add_visual", "{\"name\":\"c\",\"type\":\"point_cloud\"}");
  size_t cap = 1u << 20;
  char *pts = malloc(cap);
  assert_non_null(pts);
  for (int chunk = 0; chunk < 4; chunk++) {
    size_t o = 0;
    o += (size_t)snprintf(pts + o, cap - o,
                          "{\"name\":\"c\",\"append\":true,"
                          "\"points\":[");
    for (int i = 0; i < 25000; i++)
      o += (size_t)snprintf(pts + o, cap - o, "%s[%d,%d,0,1,0,0]", i ? "," : "",
                            i % 500, chunk);
    o += (size_t)snprintf(pts + o, cap - o, "]}");
    assert_true(o < cap - 1);
    json_t *r = call(fd, "update_visual", "%s", pts);
    assert_int_equal(json_integer_value(
                         json_object_get(json_object_get(r, "data"), "points")),
                     (chunk + 1) * 25000);
    json_decref(r);
  }
  /* one more point is over the cap */
  refused(fd, "update_visual",
          "{\"name\":\"c\",\"append\":true,\"points\":[[0,0,0]]}",
          "invalid_message", "at most 100000");
  json_t *l = call(fd, "list_visuals", "{}");
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(l, "data"), "points_used")),
                   100000);
  json_decref(l);
  free(pts);
  close(fd);
  assert_int_equal(lt_stop(&s, 5000), 0);
}

/* The spectator's data: data.<key> of get_status. */
static json_t *status_of(int fd, const char *key) {
  json_t *r = call(fd, "get_status", "{}");
  json_t *v = json_incref(json_object_get(json_object_get(r, "data"), key));
  json_decref(r);
  return v;
}

static bool shot_done(int fd, json_int_t req) {
  int64_t end = pa_test_now_ms() + 20000 * PA_TEST_SLOW;
  while (pa_test_now_ms() < end) {
    json_t *s = status_of(fd, "screenshot");
    bool done = json_integer_value(json_object_get(s, "request")) >= req &&
                json_is_false(json_object_get(s, "pending"));
    bool ok = json_is_true(json_object_get(s, "ok"));
    json_decref(s);
    if (done)
      return ok;
    usleep(20000);
  }
  return false;
}

/* request_screenshot of the spectator view: the PNG (w x h, free()). */
static unsigned char *spec_shot(int fd, const char *name, int w, int h) {
  json_t *r = call(fd, "request_screenshot", "{\"name\":\"%s\"}", name);
  json_t *d = json_object_get(r, "data");
  char path[1024];
  snprintf(path, sizeof path, "%s",
           json_string_value(json_object_get(d, "path")));
  json_int_t req = json_integer_value(json_object_get(d, "request"));
  json_decref(r);
  char want[1024];
  snprintf(want, sizeof want, "%s/%s.png", pa_test_tmpdir(), name);
  assert_string_equal(path, want);
  assert_true(shot_done(fd, req));
  int iw, ih, ic;
  unsigned char *img = stbi_load(path, &iw, &ih, &ic, 3);
  assert_non_null(img);
  assert_int_equal(iw, w);
  assert_int_equal(ih, h);
  return img;
}

/* spec_shot of a name that exists: with overwrite: true. */
static unsigned char *spec_shot_over(int fd, const char *name, int w, int h) {
  json_t *r = call(fd, "request_screenshot",
                   "{\"name\":\"%s\",\"overwrite\":true}", name);
  json_int_t req = json_integer_value(
      json_object_get(json_object_get(r, "data"), "request"));
  json_decref(r);
  assert_true(shot_done(fd, req));
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.png", pa_test_tmpdir(), name);
  int iw, ih, ic;
  unsigned char *img = stbi_load(path, &iw, &ih, &ic, 3);
  assert_non_null(img);
  assert_int_equal(iw, w);
  assert_int_equal(ih, h);
  return img;
}

/* Centroid of the pixels within tol of the colour around (x, y). */
static hits near_colour(const unsigned char *img, int w, int h, int x, int y,
                        int tol) {
  const unsigned char *c = img + (y * w + x) * 3;
  unsigned char rgb[3] = {c[0], c[1], c[2]};
  hits r = {0};
  for (int j = 0; j < h; j++)
    for (int i = 0; i < w; i++) {
      const unsigned char *p = img + (j * w + i) * 3;
      if (abs(p[0] - rgb[0]) <= tol && abs(p[1] - rgb[1]) <= tol &&
          abs(p[2] - rgb[2]) <= tol)
        r.n++, r.cx += i, r.cy += j;
    }
  if (r.n)
    r.cx /= r.n, r.cy /= r.n;
  return r;
}

/* Pixel where the spectator camera at P looking at A (60 degrees of
 * horizontal field, as pa-render's) sees world point (x, y, z). */
static void project(const double P[3], const double A[3], int w, int h,
                    double x, double y, double z, double *u, double *v) {
  double f[3] = {A[0] - P[0], A[1] - P[1], A[2] - P[2]};
  double fl = sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
  for (int i = 0; i < 3; i++)
    f[i] /= fl;
  double r[3] = {f[1], -f[0], 0}; /* f x up */
  double rl = hypot(r[0], r[1]);
  r[0] /= rl, r[1] /= rl;
  double up[3] = {r[1] * f[2] - r[2] * f[1], r[2] * f[0] - r[0] * f[2],
                  r[0] * f[1] - r[1] * f[0]};
  double d[3] = {x - P[0], y - P[1], z - P[2]};
  double df = d[0] * f[0] + d[1] * f[1] + d[2] * f[2];
  double dr = d[0] * r[0] + d[1] * r[1] + d[2] * r[2];
  double du = d[0] * up[0] + d[1] * up[1] + d[2] * up[2];
  double tx = tan(M_PI / 6), ty = tx * h / w;
  *u = w / 2.0 * (1 + dr / df / tx);
  *v = h / 2.0 * (1 - du / df / ty);
}

static int start_render_stack(lt_stack *s, const char *tag) {
  const char *extra[] = {"--no_beacon", "--data_dir", pa_test_tmpdir(),
                         "--camera_hz", "5",          NULL};
  return lt_start(s, tag, extra, START_MS);
}

/* set_camera / focus_on / request_screenshot: an obstacle at the look-at
 * point is in the middle of the PNG; moved sideways, it moves off. */
static void test_spectator_screenshot(void **state) {
  (void)state;
  lt_stack s;
  assert_int_equal(start_render_stack(&s, "spec"), 0);
  int fd = pa_test_tcp_connect(s.port);
  assert_true(fd >= 0);
  double cx, cy;
  map_centre(fd, &cx, &cy);
  double ox = cx + 1, oy = cy + 1;
  json_decref(call(fd, "spawn_obstacle",
                   "{\"name\":\"target\",\"shape\":\"box\",\"pose\":[%g,%g,0],"
                   "\"size\":[0.8,0.8],\"height\":1.0}",
                   ox, oy));
  /* from the south-west, 3.5 m off, looking at the box's middle */
  json_decref(call(fd, "set_camera",
                   "{\"position\":[%g,%g,1.6],\"look_at\":[%g,%g,0.5],"
                   "\"width\":320,\"height\":240}",
                   ox - 2.5, oy - 2.5, ox, oy));
  unsigned char *a = spec_shot(fd, "centred", 320, 240);
  hits h1 = near_colour(a, 320, 240, 160, 120, 10);
  fprintf(stderr, "centred: %d px at (%.0f, %.0f)\n", h1.n, h1.cx, h1.cy);
  assert_true(h1.n > 300);
  assert_true(fabs(h1.cx - 160) < 25 && fabs(h1.cy - 120) < 25);
  unsigned char c0[3] = {a[(120 * 320 + 160) * 3], a[(120 * 320 + 160) * 3 + 1],
                         a[(120 * 320 + 160) * 3 + 2]};
  free(a);
  /* look 1.2 m to the camera's right of the box: the box moves left */
  json_decref(call(fd, "set_camera",
                   "{\"position\":[%g,%g,1.6],\"look_at\":[%g,%g,0.5]}",
                   ox - 2.5 + 0.85, oy - 2.5 - 0.85, ox + 0.85, oy - 0.85));
  a = spec_shot(fd, "aside", 320, 240);
  hits h2;
  count_wh(a, 320, 240, c0, 10, &h2);
  fprintf(stderr, "aside: %d px at (%.0f, %.0f)\n", h2.n, h2.cx, h2.cy);
  assert_true(h2.n > 100);
  assert_true(h2.cx < 160 - 40);
  free(a);
  /* focus_on: the look-at point follows the box again, same offset */
  json_decref(call(fd, "set_camera",
                   "{\"position\":[-2.5,-2.5,1.1],\"look_at\":[0,0,0]}"));
  call0(fd, "focus_on", "{\"object\":\"target\"}");
  a = spec_shot(fd, "focused", 320, 240);
  hits h3;
  count_wh(a, 320, 240, c0, 10, &h3);
  fprintf(stderr, "focused: %d px at (%.0f, %.0f)\n", h3.n, h3.cx, h3.cy);
  assert_true(h3.n > 300);
  assert_true(fabs(h3.cx - 160) < 25 && fabs(h3.cy - 120) < 25);
  free(a);
  /* Visuals are drawn in the spectator's screenshots too: a green box
   * between the camera and the look-at point, 0.5 m to the right (nothing
   * in front of it), where the camera model projects it; hidden, gone. */
  double P[3] = {ox - 2.5, oy - 2.5, 1.6}, A[3] = {ox, oy, 0.5};
  json_decref(call(fd, "set_camera",
                   "{\"position\":[%g,%g,%g],\"look_at\":[%g,%g,%g]}", P[0],
                   P[1], P[2], A[0], A[1], A[2]));
  double bx = P[0] + 0.45 * (A[0] - P[0]) + 0.5 * 0.7071;
  double by = P[1] + 0.45 * (A[1] - P[1]) - 0.5 * 0.7071;
  double bz = P[2] + 0.45 * (A[2] - P[2]);
  /* the box's corners bound its wireframe on screen */
  double lo[2] = {1e9, 1e9}, hi[2] = {-1e9, -1e9};
  for (int k = 0; k < 8; k++) {
    double u, v;
    project(P, A, 320, 240, bx + (k & 1 ? 0.1 : -0.1),
            by + (k & 2 ? 0.1 : -0.1), bz + (k & 4 ? 0.1 : -0.1), &u, &v);
    lo[0] = fmin(lo[0], u), lo[1] = fmin(lo[1], v);
    hi[0] = fmax(hi[0], u), hi[1] = fmax(hi[1], v);
  }
  json_decref(call(fd, "add_visual",
                   "{\"name\":\"g\",\"type\":\"box\",\"position\":[%g,%g,"
                   "%g],\"size\":[0.2,0.2,0.2],\"color\":[0,1,0]}",
                   bx, by, bz));
  a = spec_shot(fd, "visual", 320, 240);
  int gl[2] = {9999, 9999}, gh[2] = {-1, -1}, gn = 0;
  for (int j = 0; j < 240; j++)
    for (int i = 0; i < 320; i++) {
      const unsigned char *p = a + (j * 320 + i) * 3;
      if (p[1] > p[0] + 80 && p[1] > p[2] + 80) { /* lit green */
        gn++;
        gl[0] = i < gl[0] ? i : gl[0], gl[1] = j < gl[1] ? j : gl[1];
        gh[0] = i > gh[0] ? i : gh[0], gh[1] = j > gh[1] ? j : gh[1];
      }
    }
  fprintf(stderr,
          "box visual: %d px in [%d, %d]-[%d, %d], projected [%.1f, %.1f]-"
          "[%.1f, %.1f]\n",
          gn, gl[0], gl[1], gh[0], gh[1], lo[0], lo[1], hi[0], hi[1]);
  assert_true(gn > 60);
  assert_true(fabs(gl[0] - lo[0]) < 2.5 && fabs(gl[1] - lo[1]) < 2.5);
  assert_true(fabs(gh[0] - hi[0]) < 2.5 && fabs(gh[1] - hi[1]) < 2.5);
  assert_true(lo[0] > 160 + 20); /* right of the centre: not the obstacle */
  free(a);
  call0(fd, "update_visual", "{\"name\":\"g\",\"visible\":false}");
  a = spec_shot(fd, "hidden", 320, 240);
  gn = 0;
  for (int k = 0; k < 320 * 240; k++) /* no lit green left */
    gn += a[3 * k + 1] > a[3 * k] + 80 && a[3 * k + 1] > a[3 * k + 2] + 80;
  assert_int_equal(gn, 0);
  free(a);
  /* A polyline's width and a cloud's point size are drawn [px]: the same
   * red line 1 and 6 px wide, the same yellow points 2 and 8 px. */
  static const unsigned char red[3] = {255, 0, 0}, yel[3] = {255, 255, 0};
  json_decref(call(fd, "add_visual",
                   "{\"name\":\"pl\",\"type\":\"polyline\",\"size\":1,"
                   "\"color\":[1,0,0],\"points\":[[%g,%g,%g],[%g,%g,%g]]}",
                   bx - 0.5, by + 0.5, bz + 0.3, bx - 0.2, by + 0.2, bz + 0.3));
  json_decref(call(fd, "add_visual",
                   "{\"name\":\"pc\",\"type\":\"point_cloud\",\"size\":2,"
                   "\"color\":[1,1,0],\"points\":[[%g,%g,%g],[%g,%g,%g],"
                   "[%g,%g,%g]]}",
                   bx - 0.5, by + 0.5, bz - 0.3, bx - 0.35, by + 0.35, bz - 0.3,
                   bx - 0.2, by + 0.2, bz - 0.3));
  hits thin, thick, small, big;
  a = spec_shot(fd, "thin", 320, 240);
  count_wh(a, 320, 240, red, 3, &thin);
  count_wh(a, 320, 240, yel, 3, &small);
  free(a);
  call0(fd, "update_visual", "{\"name\":\"pl\",\"size\":6}");
  call0(fd, "update_visual", "{\"name\":\"pc\",\"size\":8}");
  a = spec_shot(fd, "thick", 320, 240);
  count_wh(a, 320, 240, red, 3, &thick);
  count_wh(a, 320, 240, yel, 3, &big);
  free(a);
  fprintf(stderr, "polyline 1 px: %d, 6 px: %d; points 2 px: %d, 8 px: %d\n",
          thin.n, thick.n, small.n, big.n);
  assert_true(thin.n > 20);
  assert_true(thick.n > 4 * thin.n && thick.n < 9 * thin.n);
  assert_true(small.n >= 3 * 4 && small.n <= 3 * 9);
  assert_true(big.n > 3 * 40 && big.n <= 3 * 64);
  /* Text is drawn in letters (a stroke font, flat in the visual's x-y
   * plane): seen from above, "HELLO" is 4 times as wide as high (24 x 6
   * font units), "HI" 4/3 (8 x 6: the I is 2 wide); a marker is square. */
  static const unsigned char pur[3] = {128, 0, 255};
  json_decref(call(fd, "set_camera",
                   "{\"position\":[%g,%g,5],\"look_at\":[%g,%g,0]}", cx,
                   cy - 0.05, cx, cy));
  json_decref(call(fd, "add_visual",
                   "{\"name\":\"t\",\"type\":\"text\",\"text\":\"HELLO\","
                   "\"size\":0.5,\"position\":[%g,%g,1.5],"
                   "\"color\":[0.5,0,1]}",
                   cx, cy));
  const char *texts[] = {"HELLO", "HI"};
  const double aspect[] = {4.0, 4.0 / 3};
  for (int k = 0; k < 2; k++) {
    if (k)
      call0(fd, "update_visual", "{\"name\":\"t\",\"text\":\"HI\"}");
    a = spec_shot(fd, texts[k], 320, 240);
    int lo2[2] = {9999, 9999}, hi2[2] = {-1, -1}, n2 = 0;
    for (int j = 0; j < 240; j++)
      for (int i = 0; i < 320; i++) {
        const unsigned char *p = a + (j * 320 + i) * 3;
        if (abs(p[0] - pur[0]) <= 3 && p[1] <= 3 && p[2] >= 252) {
          n2++;
          lo2[0] = i < lo2[0] ? i : lo2[0], lo2[1] = j < lo2[1] ? j : lo2[1];
          hi2[0] = i > hi2[0] ? i : hi2[0], hi2[1] = j > hi2[1] ? j : hi2[1];
        }
      }
    free(a);
    double ar = (double)(hi2[0] - lo2[0] + 1) / (hi2[1] - lo2[1] + 1);
    fprintf(stderr, "text %s: %d px, %d x %d (aspect %.2f)\n", texts[k], n2,
            hi2[0] - lo2[0] + 1, hi2[1] - lo2[1] + 1, ar);
    assert_true(n2 > 50);
    assert_true(fabs(ar - aspect[k]) < 0.08 * aspect[k]);
    /* centred on its position, under the look-at point */
    assert_true(fabs((lo2[0] + hi2[0]) / 2.0 - 160) < 6);
  }
  /* bad input: by name, nothing written */
  refused(fd, "request_screenshot", "{\"name\":\"../x\"}", "invalid_message",
          NULL);
  refused(fd, "focus_on", "{\"object\":\"nobody\"}", "unknown_object", NULL);
  /* issue 32 #12, #15: an existing file is refused by name unless
   * overwrite: true; a symlink planted under the name is replaced, never
   * written through */
  refused(fd, "request_screenshot", "{\"name\":\"HI\"}", "invalid_message",
          "HI.png already exists (give overwrite: true");
  char victim[1024], link[1024], text[64];
  snprintf(victim, sizeof victim, "%s/victim.txt", pa_test_tmpdir());
  snprintf(link, sizeof link, "%s/planted.png", pa_test_tmpdir());
  FILE *vf = fopen(victim, "w");
  assert_non_null(vf);
  fputs("untouched", vf);
  fclose(vf);
  assert_int_equal(symlink(victim, link), 0);
  json_t *r = call(fd, "request_screenshot",
                   "{\"name\":\"planted\",\"overwrite\":true}");
  json_int_t req = json_integer_value(
      json_object_get(json_object_get(r, "data"), "request"));
  json_decref(r);
  assert_true(shot_done(fd, req));
  pa_test_read_file(victim, text, sizeof text);
  assert_string_equal(text, "untouched");
  struct stat lst;
  assert_int_equal(lstat(link, &lst), 0);
  assert_true(S_ISREG(lst.st_mode) && lst.st_size > 100);
  free(spec_shot_over(fd, "HI", 320, 240));
  close(fd);
  assert_int_equal(lt_stop(&s, 5000), 0);
}

/* Magenta pixels (the test visual's colour) in robot 0's newest camera
 * frame whose ring sequence is past after; -1 if none came in 20 s. */
static int cam_magenta(lt_stack *s, uint8_t *buf, size_t cap, uint64_t after,
                       uint64_t *seq_out) {
  int64_t end = pa_test_now_ms() + 20000 * PA_TEST_SLOW;
  while (pa_test_now_ms() < end) {
    uint32_t len;
    uint64_t seq;
    if (pa_ring_read_latest(s->s.camera, buf, cap, &len, &seq) == 0 &&
        seq > after && len >= sizeof(pa_frame)) {
      const pa_frame *f = (const pa_frame *)buf;
      assert_int_equal(len, sizeof(pa_frame) + f->size);
      const uint8_t *px = (const uint8_t *)(f + 1);
      int n = 0;
      for (uint32_t i = 0; i < (uint32_t)f->width * f->height; i++)
        n += px[3 * i] > px[3 * i + 1] + 80 && /* lit magenta */
             px[3 * i + 2] > px[3 * i + 1] + 80;
      *seq_out = seq;
      return n;
    }
    usleep(20000);
  }
  return -1;
}

/* A visual is seen by the head cameras only when it says camera_visible:
 * a magenta box 0.6 m in front of robot 0's camera, in its real frames. */
static void test_visual_in_head_camera(void **state) {
  (void)state;
  lt_stack s;
  assert_int_equal(start_render_stack(&s, "hcam"), 0);
  assert_true(s.attached);
  int fd = pa_test_tcp_connect(s.port);
  assert_true(fd >= 0);
  json_t *r = call(fd, "get_pose", "{\"robot\":0}");
  json_t *pose = json_object_get(json_object_get(r, "data"), "pose");
  double x = json_number_value(json_array_get(pose, 0));
  double y = json_number_value(json_array_get(pose, 1));
  double th = json_number_value(json_array_get(pose, 2));
  json_decref(r);
  double hh = s.s.robots[0].head_height > 0 ? s.s.robots[0].head_height : 0.35;
  uint16_t up;
  int u = pa_test_udp_bind(&up);
  assert_true(u >= 0);
  json_decref(call(fd, "subscribe",
                   "{\"channel\":\"camera\",\"robot\":0,\"udp_port\":%u}", up));
  size_t cap = pa_ring_max_record(s.s.camera);
  uint8_t *buf = malloc(cap);
  assert_non_null(buf);
  uint64_t seq = 0;
  /* default: not in the camera (the frame is rendered after the add) */
  json_decref(call(fd, "add_visual",
                   "{\"name\":\"m\",\"type\":\"box\",\"position\":[%g,%g,"
                   "%g],\"size\":[0.25,0.25,0.25],\"color\":[1,0,1]}",
                   x + 0.6 * cos(th), y + 0.6 * sin(th), hh));
  assert_true(cam_magenta(&s, buf, cap, 0, &seq) >= 0);
  int n = cam_magenta(&s, buf, cap, seq + 2, &seq);
  fprintf(stderr, "camera_visible false: %d px\n", n);
  assert_int_equal(n, 0);
  json_t *l = call(fd, "list_visuals", "{}");
  json_t *v0 =
      json_array_get(json_object_get(json_object_get(l, "data"), "visuals"), 0);
  assert_true(json_is_false(json_object_get(v0, "camera_visible")));
  json_decref(l);
  /* marked: the camera sees it */
  call0(fd, "update_visual", "{\"name\":\"m\",\"camera_visible\":true}");
  n = cam_magenta(&s, buf, cap, seq + 2, &seq);
  fprintf(stderr, "camera_visible true: %d px\n", n);
  assert_true(n > 100);
  /* unmarked again: gone */
  call0(fd, "update_visual", "{\"name\":\"m\",\"camera_visible\":false}");
  n = cam_magenta(&s, buf, cap, seq + 2, &seq);
  assert_int_equal(n, 0);
  /* a mesh and instances in the head camera too, when
   * marked (the same solid drawing) */
  call0(fd, "remove_visual", "{\"name\":\"m\"}");
  json_decref(call(
      fd, "add_visual_mesh",
      "{\"name\":\"mm\",\"vertices\":[-1,-1,-1,1,-1,-1,1,1,-1,-1,1,-1,"
      "-1,-1,1,1,-1,1,1,1,1,-1,1,1],\"indices\":[0,1,5,0,5,4,1,2,6,1,6,5,2,"
      "3,7,2,7,6,3,0,4,3,4,7],\"size\":0.12,\"position\":[%g,%g,%g],"
      "\"color\":[1,0,1],\"camera_visible\":true}",
      x + 0.6 * cos(th), y + 0.6 * sin(th), hh));
  n = cam_magenta(&s, buf, cap, seq + 2, &seq);
  fprintf(stderr, "mesh, camera_visible: %d px\n", n);
  assert_true(n > 100);
  call0(fd, "remove_visual", "{\"name\":\"mm\"}");
  json_decref(call(fd, "add_instanced_visuals",
                   "{\"name\":\"ii\",\"size\":0.1,\"position\":[%g,%g,%g],"
                   "\"positions\":[[0,-0.12,0],[0,0.12,0]],\"color\":[1,0,1],"
                   "\"camera_visible\":true}",
                   x + 0.6 * cos(th), y + 0.6 * sin(th), hh));
  n = cam_magenta(&s, buf, cap, seq + 2, &seq);
  fprintf(stderr, "instances, camera_visible: %d px\n", n);
  assert_true(n > 100);
  call0(fd, "update_visual", "{\"name\":\"ii\",\"camera_visible\":false}");
  n = cam_magenta(&s, buf, cap, seq + 2, &seq);
  assert_int_equal(n, 0);
  /* bad input by name */
  refused(fd, "update_visual", "{\"name\":\"ii\",\"camera_visible\":1}", NULL,
          "camera_visible");
  free(buf);
  close(u);
  close(fd);
  assert_int_equal(lt_stop(&s, 5000), 0);
}

/* ffprobe's "codec,width,height,frames" of an MP4 into out. */
static void probe(const char *path, char *out, size_t n) {
  char log[600];
  snprintf(log, sizeof log, "%s.probe", path);
  char *argv[] = {"/usr/bin/ffprobe",
                  "-v",
                  "error",
                  "-count_frames",
                  "-select_streams",
                  "v:0",
                  "-show_entries",
                  "stream=codec_name,width,height,nb_read_frames",
                  "-of",
                  "csv=p=0",
                  (char *)path,
                  NULL};
  pid_t pid = pa_test_spawn(argv, log);
  int st = pa_test_stop(pid, 0, 30000);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  pa_test_read_file(log, out, n);
  out[strcspn(out, "\n")] = 0;
}

static json_int_t wait_recorded(int fd) {
  int64_t end = pa_test_now_ms() + 30000 * PA_TEST_SLOW;
  while (pa_test_now_ms() < end) {
    json_t *r = status_of(fd, "recording");
    bool idle =
        !strcmp(json_string_value(json_object_get(r, "state")), "idle") &&
        json_is_false(json_object_get(r, "pending"));
    json_int_t f = json_integer_value(json_object_get(r, "frames"));
    json_decref(r);
    if (idle)
      return f;
    usleep(50000);
  }
  fail_msg("the video did not end");
  return -1;
}

/* start_recording_video: an MP4 (H.264) of the spectator view with the
 * frames asked for, at the size set; stop_recording_video ends an
 * open-ended one with as many frames as reported. */
static void test_video(void **state) {
  (void)state;
  if (access("/usr/bin/ffprobe", X_OK) != 0) {
    fprintf(stderr, "SKIP: no ffprobe\n");
    skip();
  }
  lt_stack s;
  assert_int_equal(start_render_stack(&s, "video"), 0);
  int fd = pa_test_tcp_connect(s.port);
  assert_true(fd >= 0);
  call0(fd, "set_camera",
        "{\"position\":[0,-6,4],\"look_at\":[0,0,0],\"width\":320,"
        "\"height\":240}");
  json_t *r = call(fd, "start_recording_video",
                   "{\"name\":\"fixed\",\"fps\":10,\"frames\":15}");
  char path[1024], want[1024], out[256];
  snprintf(
      path, sizeof path, "%s",
      json_string_value(json_object_get(json_object_get(r, "data"), "path")));
  json_decref(r);
  snprintf(want, sizeof want, "%s/fixed.mp4", pa_test_tmpdir());
  assert_string_equal(path, want);
  assert_int_equal(wait_recorded(fd), 15);
  probe(path, out, sizeof out);
  fprintf(stderr, "fixed.mp4: %s\n", out);
  assert_string_equal(out, "h264,320,240,15");

  call0(fd, "start_recording_video", "{\"name\":\"open\",\"fps\":10}");
  usleep(1500000);
  call0(fd, "stop_recording_video", "{}");
  json_int_t frames = wait_recorded(fd);
  assert_true(frames >= 5);
  snprintf(path, sizeof path, "%s/open.mp4", pa_test_tmpdir());
  probe(path, out, sizeof out);
  snprintf(want, sizeof want, "h264,320,240,%lld", (long long)frames);
  assert_string_equal(out, want);
  /* issue 32 #12: an existing video is refused unless overwrite: true; a
   * symlink under the name is never opened (avio would follow it) */
  refused(fd, "start_recording_video", "{\"name\":\"open\"}", "invalid_message",
          "open.mp4 already exists");
  char victim[1024], link[1024], text[64];
  snprintf(victim, sizeof victim, "%s/victim.mp4.txt", pa_test_tmpdir());
  snprintf(link, sizeof link, "%s/planted.mp4", pa_test_tmpdir());
  FILE *vf = fopen(victim, "w");
  assert_non_null(vf);
  fputs("untouched", vf);
  fclose(vf);
  assert_int_equal(symlink(victim, link), 0);
  call0(fd, "start_recording_video",
        "{\"name\":\"planted\",\"fps\":10,\"frames\":3,\"overwrite\":true}");
  bool failed = false;
  for (int64_t end = pa_test_now_ms() + 10000 * PA_TEST_SLOW;
       !failed && pa_test_now_ms() < end; usleep(50000)) {
    json_t *st = status_of(fd, "recording");
    failed =
        !strcmp(json_string_value(json_object_get(st, "state")), "failed") &&
        json_is_false(json_object_get(st, "pending"));
    json_decref(st);
  }
  assert_true(failed); /* refused by name in pa-render's log */
  pa_test_read_file(victim, text, sizeof text);
  assert_string_equal(text, "untouched");
  call0(fd, "start_recording_video",
        "{\"name\":\"fixed\",\"fps\":10,\"frames\":3,\"overwrite\":true}");
  assert_int_equal(wait_recorded(fd), 3);
  close(fd);
  assert_int_equal(lt_stop(&s, 5000), 0);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_visuals_in_viewer),
      cmocka_unit_test(test_big_cloud),
      cmocka_unit_test(test_spectator_screenshot),
      cmocka_unit_test(test_video),
      cmocka_unit_test(test_visual_in_head_camera),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
