/* test_raisim_visual_mesh.c - mesh (OBJ, STL and PLY files written here,
 * and raw arrays), height-map and instanced visuals end to end: added over
 * JSON on a real stack, seen in the spectator's screenshots where the
 * camera model puts them, in their colours (lit: hues, not exact values),
 * a height map coloured by height, every instance at its pose, a solid
 * box's faces in different shades; bad requests refused by name. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "test_launch_util.h"
#include "testutil.h"

#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <sys/socket.h>
#include <stb_image.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define START_MS (10000 * PA_TEST_SLOW)
#define W 640
#define H 480
#define Z 3.0 /* [m] the visuals' height: above every wall */

#include "test_json_call.h"

#define CALL0(fd, action, ...) json_decref(call(fd, action, __VA_ARGS__))

/* The request is refused: a failure reply naming code and needle. */
static void refused(int fd, const char *action, const char *data,
                    const char *code, const char *needle) {
  size_t n = strlen(data) + 256;
  char *req = malloc(n);
  assert_non_null(req);
  snprintf(req, n,
           "{\"type\":\"command\",\"protocol_version\":2,"
           "\"action\":\"%s\",\"data\":%s}\n",
           action, data);
  assert_int_equal(pa_test_send_str(fd, req), 0);
  free(req);
  static char line[1 << 16];
  assert_true(pa_test_read_line(fd, line, sizeof line, 20000 * PA_TEST_SLOW) >
              0);
  json_t *r = json_loads(line, 0, NULL);
  assert_non_null(r);
  if (!json_is_false(json_object_get(r, "success")) || !strstr(line, code) ||
      !strstr(line, needle))
    fail_msg("%s: wanted %s '%s', got %s", action, code, needle, line);
  fprintf(
      stderr, "refused: %.160s\n",
      json_string_value(json_object_get(json_object_get(r, "error"), "message"))
          ? json_string_value(
                json_object_get(json_object_get(r, "error"), "message"))
          : line);
  json_decref(r);
}

static double cx, cy; /* the map's centre [m] */

static void map_centre(int fd) {
  json_t *mi = call(fd, "get_map_info", "{}");
  json_t *d = json_object_get(mi, "data");
  double res = json_number_value(json_object_get(d, "resolution"));
  json_t *org = json_object_get(d, "origin");
  cx = json_number_value(json_array_get(org, 0)) +
       (double)json_integer_value(json_object_get(d, "width")) * res / 2;
  cy = json_number_value(json_array_get(org, 1)) +
       (double)json_integer_value(json_object_get(d, "height")) * res / 2;
  json_decref(mi);
}

static bool shot_done(int fd, json_int_t req) {
  int64_t end = pa_test_now_ms() + 20000 * PA_TEST_SLOW;
  while (pa_test_now_ms() < end) {
    json_t *r = call(fd, "get_status", "{}");
    json_t *s = json_object_get(json_object_get(r, "data"), "screenshot");
    bool done = json_integer_value(json_object_get(s, "request")) >= req &&
                json_is_false(json_object_get(s, "pending"));
    bool ok = json_is_true(json_object_get(s, "ok"));
    json_decref(r);
    if (done)
      return ok;
    usleep(20000);
  }
  return false;
}

/* The spectator's screenshot, W x H RGB (free()). */
static unsigned char *shot(int fd, const char *name) {
  json_t *r = call(fd, "request_screenshot", "{\"name\":\"%s\"}", name);
  json_t *d = json_object_get(r, "data");
  char path[1024];
  snprintf(path, sizeof path, "%s",
           json_string_value(json_object_get(d, "path")));
  json_int_t req = json_integer_value(json_object_get(d, "request"));
  json_decref(r);
  assert_true(shot_done(fd, req));
  const char *keep = getenv("PA_TEST_SHOT_DIR"); /* to look at them */
  if (keep) {
    char cmd[2300];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s/'", path, keep);
    assert_int_equal(system(cmd), 0);
  }
  int iw, ih, ic;
  unsigned char *img = stbi_load(path, &iw, &ih, &ic, 3);
  assert_non_null(img);
  assert_int_equal(iw, W);
  assert_int_equal(ih, H);
  return img;
}

/* Pixel where the spectator at P looking at A (60 degrees across) sees
 * world point (x, y, z). */
static void project(const double P[3], const double A[3], double x, double y,
                    double z, double *u, double *v) {
  double f[3] = {A[0] - P[0], A[1] - P[1], A[2] - P[2]};
  double fl = sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
  for (int i = 0; i < 3; i++)
    f[i] /= fl;
  double r[3] = {f[1], -f[0], 0};
  double rl = hypot(r[0], r[1]);
  r[0] /= rl, r[1] /= rl;
  double up[3] = {r[1] * f[2] - r[2] * f[1], r[2] * f[0] - r[0] * f[2],
                  r[0] * f[1] - r[1] * f[0]};
  double d[3] = {x - P[0], y - P[1], z - P[2]};
  double df = d[0] * f[0] + d[1] * f[1] + d[2] * f[2];
  double dr = d[0] * r[0] + d[1] * r[1] + d[2] * r[2];
  double du = d[0] * up[0] + d[1] * up[1] + d[2] * up[2];
  double tx = tan(M_PI / 6), ty = tx * H / W;
  *u = W / 2.0 * (1 + dr / df / tx);
  *v = H / 2.0 * (1 - du / df / ty);
}

/* Hues of lit, fogged colours: which channels lead, by a margin. */
enum { RED, GREEN, BLUE, YELLOW, MAGENTA, NHUE };
static const char *const HUE[NHUE] = {"red", "green", "blue", "yellow",
                                      "magenta"};

static bool is_hue(const unsigned char *p, int hue) {
  int r = p[0], g = p[1], b = p[2];
  switch (hue) {
  case RED:
    return r > g + 70 && r > b + 70;
  case GREEN:
    return g > r + 70 && g > b + 70;
  case BLUE:
    return b > r + 70 && b > g + 70;
  case YELLOW:
    return r > b + 70 && g > b + 70 && abs(r - g) < 60;
  default:
    return r > g + 70 && b > g + 70;
  }
}

typedef struct box2 {
  int n;
  int lo[2], hi[2]; /* pixel bounds */
} box2;

/* Pixels of the hue within rad of (u, v) in img but not in base. */
static box2 hue_near(const unsigned char *img, const unsigned char *base,
                     int hue, double u, double v, int rad) {
  box2 b = {0, {9999, 9999}, {-1, -1}};
  for (int j = (int)v - rad; j <= (int)v + rad; j++)
    for (int i = (int)u - rad; i <= (int)u + rad; i++) {
      if (i < 0 || j < 0 || i >= W || j >= H)
        continue;
      const unsigned char *p = img + (j * W + i) * 3;
      if (!is_hue(p, hue) || is_hue(base + (j * W + i) * 3, hue))
        continue;
      b.n++;
      b.lo[0] = i < b.lo[0] ? i : b.lo[0], b.lo[1] = j < b.lo[1] ? j : b.lo[1];
      b.hi[0] = i > b.hi[0] ? i : b.hi[0], b.hi[1] = j > b.hi[1] ? j : b.hi[1];
    }
  return b;
}

/* Mean of the 5 x 5 pixels around (u, v). */
static void mean_at(const unsigned char *img, double u, double v, double m[3]) {
  m[0] = m[1] = m[2] = 0;
  for (int j = -2; j <= 2; j++)
    for (int i = -2; i <= 2; i++)
      for (int k = 0; k < 3; k++)
        m[k] += img[(((int)v + j) * W + (int)u + i) * 3 + k] / 25.0;
}

static void write_file(const char *name, const char *text) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", pa_test_tmpdir(), name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* A unit cube centred on the origin as OBJ, STL (ASCII) and PLY (ASCII,
 * every vertex blue). */
static void write_meshes(void) {
  static const int q[6][4] = {{0, 2, 3, 1}, {4, 5, 7, 6}, {0, 1, 5, 4},
                              {2, 6, 7, 3}, {0, 4, 6, 2}, {1, 3, 7, 5}};
  double v[8][3];
  for (int i = 0; i < 8; i++)
    for (int k = 0; k < 3; k++)
      v[i][k] = (i >> k & 1) ? 0.5 : -0.5;
  char obj[4096], stl[16384], ply[4096];
  size_t o = 0, s = 0, p = 0;
  s += (size_t)snprintf(stl + s, sizeof stl - s, "solid cube\n");
  p += (size_t)snprintf(ply + p, sizeof ply - p,
                        "ply\nformat ascii 1.0\nelement vertex 8\nproperty "
                        "float x\nproperty float y\nproperty float z\n"
                        "property uchar red\nproperty uchar green\nproperty "
                        "uchar blue\nelement face 12\nproperty list uchar "
                        "int vertex_indices\nend_header\n");
  for (int i = 0; i < 8; i++) {
    o += (size_t)snprintf(obj + o, sizeof obj - o, "v %g %g %g\n", v[i][0],
                          v[i][1], v[i][2]);
    p += (size_t)snprintf(ply + p, sizeof ply - p, "%g %g %g 0 0 255\n",
                          v[i][0], v[i][1], v[i][2]);
  }
  for (int f = 0; f < 6; f++)
    for (int t = 0; t < 2; t++) {
      int a = q[f][0], b = q[f][1 + t], c = q[f][2 + t];
      o += (size_t)snprintf(obj + o, sizeof obj - o, "f %d %d %d\n", a + 1,
                            b + 1, c + 1);
      p += (size_t)snprintf(ply + p, sizeof ply - p, "3 %d %d %d\n", a, b, c);
      s += (size_t)snprintf(stl + s, sizeof stl - s,
                            "facet normal 0 0 0\nouter loop\n");
      int idx[3] = {a, b, c};
      for (int k = 0; k < 3; k++)
        s += (size_t)snprintf(stl + s, sizeof stl - s, "vertex %g %g %g\n",
                              v[idx[k]][0], v[idx[k]][1], v[idx[k]][2]);
      s += (size_t)snprintf(stl + s, sizeof stl - s, "endloop\nendfacet\n");
    }
  s += (size_t)snprintf(stl + s, sizeof stl - s, "endsolid cube\n");
  write_file("cube.obj", obj);
  write_file("cube.stl", stl);
  write_file("cube.ply", ply);
  write_file("junk.obj", "v 1 2\nf 1 2 9 x\n\x01\x02garbage");
}

static int start(lt_stack *s, const char *tag) {
  const char *extra[] = {"--no_beacon", "--data_dir", pa_test_tmpdir(),
                         "--camera_hz", "2",          NULL};
  return lt_start(s, tag, extra, START_MS);
}

/* The spectator straight above (cx, cy), 6 m over the visuals. */
static void top_camera(int fd, double P[3], double A[3]) {
  P[0] = cx, P[1] = cy - 0.01, P[2] = Z + 6;
  A[0] = cx, A[1] = cy, A[2] = Z;
  CALL0(fd, "set_camera",
        "{\"position\":[%g,%g,%g],\"look_at\":[%g,%g,%g],\"width\":%d,"
        "\"height\":%d}",
        P[0], P[1], P[2], A[0], A[1], A[2], W, H);
}

static int expect_hue(const unsigned char *img, const unsigned char *base,
                      const double P[3], const double A[3], const char *what,
                      int hue, double x, double y, double z, int min) {
  double u, v;
  project(P, A, x, y, z, &u, &v);
  box2 b = hue_near(img, base, hue, u, v, 30);
  fprintf(stderr, "%-10s %-7s %4d px near (%.0f, %.0f)\n", what, HUE[hue], b.n,
          u, v);
  if (b.n < min)
    fail_msg("%s: %d %s pixels near (%.0f, %.0f), want >= %d", what, b.n,
             HUE[hue], u, v, min);
  return b.n;
}

static void test_meshes_heightmap_instances(void **state) {
  (void)state;
  write_meshes();
  lt_stack s;
  assert_int_equal(start(&s, "vmesh"), 0);
  int fd = pa_test_tcp_connect(s.port);
  assert_true(fd >= 0);
  map_centre(fd);
  double P[3], A[3];
  top_camera(fd, P, A);
  unsigned char *base = shot(fd, "base");
  double u, v;

  /* files: OBJ red, STL green (scaled flat), PLY its own blue */
  json_t *r =
      call(fd, "add_visual_mesh",
           "{\"name\":\"obj\",\"file\":\"cube.obj\",\"position\":[%g,%g,%g],"
           "\"size\":[0.6,0.6,0.6],\"color\":[1,0,0]}",
           cx - 1.6, cy + 1.0, Z);
  json_t *d = json_object_get(r, "data");
  assert_int_equal(json_integer_value(json_object_get(d, "triangles")), 12);
  assert_string_equal(json_string_value(json_object_get(d, "type")), "mesh");
  json_decref(r);
  CALL0(fd, "add_visual",
        "{\"name\":\"stl\",\"type\":\"mesh\",\"file\":\"cube.stl\","
        "\"position\":[%g,%g,%g],\"size\":[0.6,0.6,0.2],\"color\":[0,1,0]}",
        cx, cy + 1.0, Z);
  CALL0(fd, "add_visual_mesh",
        "{\"name\":\"ply\",\"file\":\"cube.ply\",\"position\":[%g,%g,%g],"
        "\"size\":0.6}",
        cx + 1.6, cy + 1.0, Z);
  /* arrays: a 1 x 1 square (two triangles) scaled 2 x 0.5, turned 90
   * degrees: 0.5 m across x, 2 m along y on screen */
  CALL0(fd, "add_visual_mesh",
        "{\"name\":\"arr\",\"vertices\":[-0.5,-0.5,0, 0.5,-0.5,0, "
        "0.5,0.5,0, -0.5,0.5,0],\"indices\":[0,1,2, 0,2,3],"
        "\"size\":[2,0.5,1],\"yaw\":1.5707963,\"position\":[%g,%g,%g],"
        "\"color\":[1,1,0]}",
        cx - 2.3, cy - 1.2, Z);
  /* a height map rising along x: 2 x 1 m, 20 x 10 samples, viridis */
  char hs[8192];
  size_t o = 0;
  for (int j = 0; j < 10; j++)
    for (int i = 0; i < 20; i++)
      o += (size_t)snprintf(hs + o, sizeof hs - o, "%s%.3f", o ? "," : "",
                            0.4 * i / 19.0);
  r = call(fd, "add_visual_heightmap",
           "{\"name\":\"hm\",\"samples\":[20,10],\"heights\":[%s],"
           "\"size\":[2,1],\"position\":[%g,%g,%g]}",
           hs, cx + 0.2, cy - 1.2, Z - 0.2);
  d = json_object_get(r, "data");
  assert_string_equal(json_string_value(json_object_get(d, "colormap")),
                      "viridis");
  json_decref(r);
  /* four magenta spheres in a row, per-instance colours and poses */
  r = call(fd, "add_instanced_visuals",
           "{\"name\":\"inst\",\"shape\":\"sphere\",\"size\":0.15,"
           "\"position\":[%g,%g,%g],\"positions\":[[0,0,0],[0.6,0,0],"
           "[1.2,0,0],[1.8,0,0]],\"colors\":[[1,0,1],[1,0,1],[1,0,1],"
           "[1,0,1]],\"orientations\":[[1,0,0,0],[1,0,0,0],[0,0,0,1],"
           "[1,0,0,0]]}",
           cx - 0.9, cy - 2.3, Z);
  d = json_object_get(r, "data");
  assert_int_equal(json_integer_value(json_object_get(d, "instances")), 4);
  json_decref(r);

  /* a coarse UV sphere as a triangle soup (8 x 12 facets), white: drawn
   * smooth (normals shared where faces meet gently), not faceted */
  char *sph = malloc(1 << 16);
  assert_non_null(sph);
  size_t so = 0;
  for (int ri = 0; ri < 8; ri++)
    for (int g = 0; g < 12; g++) {
      double f0 = M_PI * ri / 8 - M_PI / 2;
      double f1 = M_PI * (ri + 1) / 8 - M_PI / 2;
      double t0 = 2 * M_PI * g / 12, t1 = 2 * M_PI * (g + 1) / 12;
      double q[4][3] = {{cos(f0) * cos(t0), cos(f0) * sin(t0), sin(f0)},
                        {cos(f0) * cos(t1), cos(f0) * sin(t1), sin(f0)},
                        {cos(f1) * cos(t1), cos(f1) * sin(t1), sin(f1)},
                        {cos(f1) * cos(t0), cos(f1) * sin(t0), sin(f1)}};
      static const int tri[6] = {0, 1, 2, 0, 2, 3};
      for (int k = 0; k < 6; k++)
        for (int a = 0; a < 3; a++)
          so += (size_t)snprintf(sph + so, (1 << 16) - so, "%s%.6f",
                                 so ? "," : "", q[tri[k]][a]);
    }
  CALL0(fd, "add_visual_mesh",
        "{\"name\":\"ball\",\"vertices\":[%s],\"size\":0.45,"
        "\"position\":[%g,%g,%g],\"color\":[0.9,0.9,0.9]}",
        sph, cx + 2.3, cy - 1.3, Z);
  free(sph);

  unsigned char *img = shot(fd, "meshes");
  /* smooth: across the sphere's middle no step between neighbours */
  project(P, A, cx + 2.3, cy - 1.3, Z + 0.45, &u, &v);
  int step = 0;
  for (int i = (int)u - 25; i < (int)u + 25; i++) {
    const unsigned char *a = img + ((int)v * W + i) * 3, *c = a + 3;
    int dl = abs((a[0] + a[1] + a[2]) - (c[0] + c[1] + c[2])) / 3;
    step = dl > step ? dl : step;
  }
  fprintf(stderr, "sphere mesh: largest step between neighbours %d\n", step);
  assert_true(step <= 6);
  int n_obj =
      expect_hue(img, base, P, A, "obj", RED, cx - 1.6, cy + 1.0, Z + 0.3, 400);
  expect_hue(img, base, P, A, "stl", GREEN, cx, cy + 1.0, Z + 0.1, 400);
  int n_ply = expect_hue(img, base, P, A, "ply", BLUE, cx + 1.6, cy + 1.0,
                         Z + 0.3, 400);
  /* "size": 0.6 scales a mesh on all three axes, as [0.6, 0.6, 0.6] */
  assert_true(abs(n_obj - n_ply) < n_obj / 8);
  /* scale and orientation: taller than wide on screen, about 4 to 1 */
  project(P, A, cx - 2.3, cy - 1.2, Z, &u, &v);
  box2 b = hue_near(img, base, YELLOW, u, v, 120);
  int bw = b.hi[0] - b.lo[0] + 1, bh = b.hi[1] - b.lo[1] + 1;
  fprintf(stderr, "arrays mesh: %d px, %d x %d px\n", b.n, bw, bh);
  assert_true(b.n > 400);
  assert_true(bh > 3 * bw && bh < 5 * bw);
  /* the height map: dark purple at its low west end, yellow at the high
   * east end */
  double lo[3], hi[3], ul, vl, uh, vh;
  project(P, A, cx + 0.2 - 0.85, cy - 1.2, Z - 0.2, &ul, &vl);
  project(P, A, cx + 0.2 + 0.85, cy - 1.2, Z + 0.2, &uh, &vh);
  mean_at(img, ul, vl, lo);
  mean_at(img, uh, vh, hi);
  fprintf(stderr,
          "height map: low end (%.0f %.0f %.0f), high end (%.0f %.0f "
          "%.0f)\n",
          lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]);
  assert_true(lo[2] > lo[1] + 20); /* purple: blue over green */
  assert_true(hi[1] > hi[2] + 60); /* yellow: green over blue */
  assert_true(hi[0] + hi[1] > lo[0] + lo[1] + 150);
  /* every instance at its pose, nothing between them */
  for (int k = 0; k < 4; k++) {
    char what[16];
    snprintf(what, sizeof what, "inst %d", k);
    expect_hue(img, base, P, A, what, MAGENTA, cx - 0.9 + 0.6 * k, cy - 2.3,
               Z + 0.15, 150);
    project(P, A, cx - 0.6 + 0.6 * k, cy - 2.3, Z, &u, &v);
    if (k < 3)
      assert_int_equal(hue_near(img, base, MAGENTA, u, v, 3).n, 0);
  }
  free(img);

  /* list, update, remove */
  r = call(fd, "list_visuals", "{}");
  json_t *l = json_object_get(json_object_get(r, "data"), "visuals");
  assert_int_equal(json_array_size(l), 7);
  json_t *hm = json_array_get(l, 4);
  assert_string_equal(json_string_value(json_object_get(hm, "type")),
                      "heightmap");
  assert_int_equal(
      json_integer_value(json_array_get(json_object_get(hm, "samples"), 0)),
      20);
  json_decref(r);
  CALL0(fd, "update_visual",
        "{\"name\":\"inst\",\"positions\":[[0,0,0],[0.6,0,0]],"
        "\"color\":[1,0,1]}");
  CALL0(fd, "update_visual",
        "{\"name\":\"hm\",\"colormap\":\"none\","
        "\"color\":[0,0,1]}");
  CALL0(fd, "remove_visual", "{\"name\":\"obj\"}");
  img = shot(fd, "updated");
  expect_hue(img, base, P, A, "inst 1", MAGENTA, cx - 0.3, cy - 2.3, Z + 0.15,
             150);
  project(P, A, cx + 0.9, cy - 2.3, Z + 0.15, &u, &v);
  assert_int_equal(hue_near(img, base, MAGENTA, u, v, 20).n, 0);
  project(P, A, cx - 1.6, cy + 1.0, Z + 0.3, &u, &v);
  assert_int_equal(hue_near(img, base, RED, u, v, 20).n, 0);
  mean_at(img, uh, vh, hi);
  assert_true(hi[2] > hi[1] + 60); /* one colour now: blue */
  free(img);
  free(base);
  close(fd);
  assert_int_equal(lt_stop(&s, 5000), 0);
}

/* A white box seen from above one corner: its top, west and south faces
 * in distinct shades (key and fill lights), not one flat colour. */
static void test_solid_lit_box(void **state) {
  (void)state;
  lt_stack s;
  assert_int_equal(start(&s, "vlit"), 0);
  int fd = pa_test_tcp_connect(s.port);
  assert_true(fd >= 0);
  map_centre(fd);
  double P[3] = {cx - 2.2, cy - 1.6, Z + 2.2}, A[3] = {cx, cy, Z};
  CALL0(fd, "set_camera",
        "{\"position\":[%g,%g,%g],\"look_at\":[%g,%g,%g],\"width\":%d,"
        "\"height\":%d}",
        P[0], P[1], P[2], A[0], A[1], A[2], W, H);
  CALL0(fd, "add_visual_box",
        "{\"name\":\"b\",\"position\":[%g,%g,%g],\"size\":[1,1,1],"
        "\"color\":[0.8,0.8,0.8]}",
        cx, cy, Z);
  unsigned char *img = shot(fd, "lit");
  double top[3], west[3], south[3], u, v;
  project(P, A, cx, cy, Z + 0.5, &u, &v);
  mean_at(img, u, v, top);
  project(P, A, cx - 0.5, cy + 0.1, Z - 0.1, &u, &v);
  mean_at(img, u, v, west);
  project(P, A, cx + 0.1, cy - 0.5, Z - 0.1, &u, &v);
  mean_at(img, u, v, south);
  fprintf(stderr, "box faces: top %.0f, west %.0f, south %.0f (red)\n", top[0],
          west[0], south[0]);
  assert_true(top[0] > west[0] + 25 && top[0] > south[0] + 25);
  for (int k = 0; k < 3; k++) /* grey, as the box: no hue added */
    assert_true(fabs(top[k] - top[0]) < 40 && fabs(west[k] - west[0]) < 40);
  free(img);

  /* 20 000 instances (the most one visual holds), drawn by the GL per
   * instance from one sphere: half of them translucent (blended after the
   * opaque ones), all in the next screenshot */
  size_t cap = 1u << 20, o = 0;
  char *pos = malloc(cap);
  assert_non_null(pos);
  o += (size_t)snprintf(pos + o, cap - o, "[");
  for (int k = 0; k < 20000; k++)
    o += (size_t)snprintf(pos + o, cap - o, "%s[%.2f,%.2f,0]", k ? "," : "",
                          (k % 200) * 0.03, (k / 200) * 0.03);
  snprintf(pos + o, cap - o, "]");
  char *colours = malloc(cap);
  assert_non_null(colours);
  o = (size_t)snprintf(colours, cap, "[");
  for (int k = 0; k < 20000; k++)
    o += (size_t)snprintf(colours + o, cap - o, "%s[0,1,1,%s]", k ? "," : "",
                          k < 10000 ? "1" : "0.5");
  snprintf(colours + o, cap - o, "]");
  int64_t t0 = pa_test_now_ms();
  CALL0(fd, "add_instanced_visuals",
        "{\"name\":\"many\",\"size\":0.012,\"position\":[%g,%g,%g],"
        "\"positions\":%s,\"colors\":%s}",
        cx - 1.2, cy + 0.6, Z + 0.6, pos, colours);
  free(pos);
  free(colours);
  img = shot(fd, "many");
  fprintf(stderr, "20000 instances: added and drawn in %lld ms\n",
          (long long)(pa_test_now_ms() - t0));
  int cyan_op = 0, cyan_tr = 0;
  double uo, vo, ut, vt;
  /* an opaque spot and a translucent one (rows 50 on), both well inside
   * the picture */
  project(P, A, cx - 1.2 + 2.0, cy + 0.6 + 0.7, Z + 0.6, &uo, &vo);
  project(P, A, cx - 1.2 + 1.0, cy + 0.6 + 1.6, Z + 0.6, &ut, &vt);
  assert_true(uo > 20 && uo < W - 20 && vo > 20 && vo < H - 20);
  assert_true(ut > 20 && ut < W - 20 && vt > 20 && vt < H - 20);
  for (int j = -10; j <= 10; j++)
    for (int i = -10; i <= 10; i++) {
      const unsigned char *a = img + (((int)vo + j) * W + (int)uo + i) * 3;
      const unsigned char *t = img + (((int)vt + j) * W + (int)ut + i) * 3;
      cyan_op += a[1] > a[0] + 60 && a[2] > a[0] + 60;
      cyan_tr += t[1] > t[0] + 20 && t[2] > t[0] + 20;
    }
  fprintf(stderr, "cyan pixels: %d opaque, %d translucent (of 441)\n", cyan_op,
          cyan_tr);
  assert_true(cyan_op > 100 && cyan_tr > 100);
  double mo[3], mt[3]; /* translucent: what is behind shows through */
  mean_at(img, uo, vo, mo);
  mean_at(img, ut, vt, mt);
  fprintf(stderr, "opaque (%.0f %.0f %.0f), translucent (%.0f %.0f %.0f)\n",
          mo[0], mo[1], mo[2], mt[0], mt[1], mt[2]);
  assert_true(mt[0] > mo[0] + 12); /* layers of it: mostly cyan still */
  free(img);
  close(fd);
  assert_int_equal(lt_stop(&s, 5000), 0);
}

/* Bad geometry: each refused by name, nothing added. */
static void test_bad_geometry(void **state) {
  (void)state;
  write_meshes();
  const char *extra[] = {"--no-render", "--no_beacon", "--data_dir",
                         pa_test_tmpdir(), NULL};
  lt_stack s;
  assert_int_equal(lt_start(&s, "vbad", extra, START_MS), 0);
  int fd = pa_test_tcp_connect(s.port);
  assert_true(fd >= 0);
  const char *IM = "invalid_message";
  refused(fd, "add_visual_mesh", "{\"name\":\"m\",\"vertices\":[0,0,0,1]}", IM,
          "not a multiple of 3");
  refused(fd, "add_visual_mesh",
          "{\"name\":\"m\",\"vertices\":[0,0,0,1,0,0,0,1,0],"
          "\"indices\":[0,1,3]}",
          IM, "data.indices[2] = 3: out of range (3 vertices)");
  refused(fd, "add_visual_mesh",
          "{\"name\":\"m\",\"vertices\":[0,0,0,1,0,0,0,1,0],"
          "\"indices\":[0,1]}",
          IM, "not a multiple of 3 (a triangle list)");
  refused(fd, "add_visual_mesh",
          "{\"name\":\"m\",\"vertices\":[0,0,0,1,0,0,0,1,0],"
          "\"vertex_colors\":[255,0,0]}",
          IM, "data.vertex_colors: 3 numbers");
  /* too many triangles: 50 001 of them, all of one vertex */
  size_t cap = 400000;
  char *big = malloc(cap);
  assert_non_null(big);
  size_t o = (size_t)snprintf(big, cap,
                              "{\"name\":\"m\",\"vertices\":[0,0,0],"
                              "\"indices\":[0");
  for (int i = 1; i < 3 * 50001; i++)
    o += (size_t)snprintf(big + o, cap - o, ",0");
  snprintf(big + o, cap - o, "]}");
  refused(fd, "add_visual_mesh", big, IM,
          "50001 triangles, a mesh has 1..50000");
  free(big);
  refused(fd, "add_visual_mesh", "{\"name\":\"m\",\"file\":\"nope.obj\"}", IM,
          "data.file nope.obj: No such file or directory");
  refused(fd, "add_visual_mesh", "{\"name\":\"m\",\"file\":\"cube.dae\"}", IM,
          "a mesh is an .obj, .stl or .ply file");
  refused(fd, "add_visual_mesh", "{\"name\":\"m\",\"file\":\"../x/cube.obj\"}",
          IM, "cube.obj");
  refused(fd, "add_visual_mesh", "{\"name\":\"m\",\"file\":\"/etc/a.stl\"}", IM,
          "a.stl");
  refused(fd, "add_visual_mesh", "{\"name\":\"m\",\"file\":\"junk.obj\"}", IM,
          "data.file junk.obj: not a readable obj mesh");
  char path[1024], link[1024];
  snprintf(path, sizeof path, "%s/huge.stl", pa_test_tmpdir());
  int hf = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  assert_true(hf >= 0);
  assert_int_equal(ftruncate(hf, 40 << 20), 0);
  close(hf);
  refused(fd, "add_visual_mesh", "{\"name\":\"m\",\"file\":\"huge.stl\"}", IM,
          "data.file huge.stl: 41943040 bytes, must be 1..33554432");
  unlink(path);
  snprintf(path, sizeof path, "%s/cube.obj", pa_test_tmpdir());
  snprintf(link, sizeof link, "%s/link.obj", pa_test_tmpdir());
  assert_int_equal(symlink(path, link), 0);
  refused(fd, "add_visual_mesh", "{\"name\":\"m\",\"file\":\"link.obj\"}", IM,
          "link.obj");
  unlink(link);
  refused(fd, "add_visual_mesh", "{\"name\":\"m\"}", IM,
          "a mesh needs data.file");
  refused(fd, "add_visual_heightmap",
          "{\"name\":\"h\",\"samples\":[3,2],\"heights\":[0,1,2,3,4]}", IM,
          "data.heights: 5 heights, data.samples says 3 x 2 = 6");
  refused(fd, "add_visual_heightmap",
          "{\"name\":\"h\",\"samples\":[1,2],\"heights\":[0,1]}", IM,
          "data.samples [1, 2]");
  refused(fd, "add_visual_heightmap",
          "{\"name\":\"h\",\"samples\":[2,2],\"heights\":[0,1,2,3],"
          "\"colormap\":\"jet\"}",
          IM, "data.colormap 'jet'");
  refused(fd, "add_instanced_visuals",
          "{\"name\":\"i\",\"shape\":\"mesh\",\"positions\":[]}", IM,
          "data.shape 'mesh'");
  refused(fd, "add_instanced_visuals",
          "{\"name\":\"i\",\"positions\":[[0,0,0]],"
          "\"orientations\":[[1,0,0,0],[1,0,0,0]]}",
          IM, "data.orientations must be an array of 1 entries");
  refused(fd, "add_instanced_visuals",
          "{\"name\":\"i\",\"positions\":[[0,0,0]],"
          "\"orientations\":[[0,0,0,0]]}",
          IM, "data.orientations[0] [w, x, y, z] must not be zero");
  refused(fd, "add_instanced_visuals", "{\"name\":\"i\"}", IM,
          "instanced visuals need data.positions");
  refused(fd, "add_visual",
          "{\"name\":\"s\",\"type\":\"sphere\",\"vertices\":[0,0,0]}", IM,
          "data.vertices is for mesh visuals only");
  json_t *r = call(fd, "list_visuals", "{}");
  assert_int_equal(
      json_integer_value(json_object_get(json_object_get(r, "data"), "count")),
      0);
  json_decref(r);
  close(fd);
  assert_int_equal(lt_stop(&s, 5000), 0);
}

/* A binary STL of n triangles (a fan of slivers), for a decode that lasts. */
static void write_big_stl(const char *name, uint32_t n) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", pa_test_tmpdir(), name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  char head[80] = "playarea test";
  fwrite(head, 1, sizeof head, f);
  fwrite(&n, 4, 1, f);
  for (uint32_t i = 0; i < n; i++) {
    float t[12] = {0,
                   0,
                   1,
                   0,
                   0,
                   0,
                   (float)(i % 100) * 0.01f,
                   0.5f,
                   0,
                   (float)(i % 100) * 0.01f + 0.01f,
                   0.5f,
                   0};
    uint16_t attr = 0;
    fwrite(t, sizeof t, 1, f);
    fwrite(&attr, 2, 1, f);
  }
  assert_int_equal(fclose(f), 0);
}

/* The decoder child pa-netgw forks for a mesh file, caught and stopped;
 * 0 when it ended before it could be caught. */
static pid_t stop_decoder(pid_t netgw, int64_t within_ms) {
  char path[128];
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)netgw,
           (int)netgw);
  int64_t end = pa_test_now_ms() + within_ms;
  while (pa_test_now_ms() < end) {
    FILE *f = fopen(path, "r");
    int pid = 0;
    if (f) {
      if (fscanf(f, "%d", &pid) != 1)
        pid = 0;
      fclose(f);
    }
    if (pid > 0 && kill(pid, SIGSTOP) == 0)
      return pid;
    usleep(100);
  }
  return 0;
}

/* A new client's add_visual_mesh of big.stl (named prefix + a number)
 * with its decoder caught and stopped: the decoder's pid, the client's
 * connection in *fd. A decode that ended before it was caught is
 * answered and tried again. */
static pid_t mesh_request_stopped(const lt_stack *s, const char *prefix,
                                  int *fd) {
  pid_t net = lt_pid(s, PA_PROC_NETGW);
  char line[1 << 12];
  for (int tries = 0; tries < 10; tries++) {
    int a = pa_test_tcp_connect(s->port);
    assert_true(a >= 0);
    char req[256];
    snprintf(req, sizeof req,
             "{\"type\":\"command\",\"protocol_version\":2,\"action\":"
             "\"add_visual_mesh\",\"data\":{\"name\":\"%s%d\",\"file\":"
             "\"big.stl\"}}\n",
             prefix, tries);
    assert_int_equal(pa_test_send_str(a, req), 0);
    pid_t dec = stop_decoder(net, 3000);
    if (dec > 0) {
      *fd = a;
      return dec;
    }
    assert_true(pa_test_read_line(a, line, sizeof line, 20000) > 0);
    close(a);
  }
  return 0;
}

/* A mesh file is decoded off pa-netgw's loop: while its decoder is held
 * stopped, another client is answered; let go, the request succeeds; a
 * client that is gone (reset) while its decoder runs takes the decoder
 * with it. */
static void test_decode_off_the_loop(void **state) {
  (void)state;
  write_big_stl("big.stl", 50000);
  const char *extra[] = {"--no-render", "--no_beacon", "--data_dir",
                         pa_test_tmpdir(), NULL};
  lt_stack s;
  assert_int_equal(lt_start(&s, "vloop", extra, START_MS), 0);
  int b = pa_test_tcp_connect(s.port);
  assert_true(b >= 0);
  char line[1 << 12];
  int a = -1;
  pid_t dec = mesh_request_stopped(&s, "big", &a);
  assert_true(dec > 0);
  /* the loop serves another client meanwhile */
  assert_int_equal(pa_test_send_str(b, "ping\n"), 0);
  assert_true(pa_test_read_line(b, line, sizeof line, 5000) > 0);
  assert_string_equal(line, "pong");
  assert_int_equal(kill(dec, SIGCONT), 0);
  assert_true(pa_test_read_line(a, line, sizeof line, 20000) > 0);
  json_t *r = json_loads(line, 0, NULL);
  assert_non_null(r);
  assert_true(json_is_true(json_object_get(r, "success")));
  json_decref(r);
  close(a);
  /* a client gone while its decoder runs: the decoder is killed, reaped */
  dec = mesh_request_stopped(&s, "gone", &a);
  assert_true(dec > 0);
  /* reset, as a crashed client's kernel does (a plain close is a
   * half-close: its request would still be answered first) */
  struct linger lg = {1, 0};
  setsockopt(a, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  close(a);
  int64_t end = pa_test_now_ms() + 5000;
  while (kill(dec, 0) == 0 && pa_test_now_ms() < end)
    usleep(10000);
  assert_int_not_equal(kill(dec, 0), 0); /* killed and reaped: no zombie */
  assert_int_equal(pa_test_send_str(b, "ping\n"), 0);
  assert_true(pa_test_read_line(b, line, sizeof line, 5000) > 0);
  assert_string_equal(line, "pong");
  close(b);
  assert_int_equal(lt_stop(&s, 5000), 0);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_geometry),
      cmocka_unit_test(test_meshes_heightmap_instances),
      cmocka_unit_test(test_solid_lit_box),
      cmocka_unit_test(test_decode_off_the_loop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
