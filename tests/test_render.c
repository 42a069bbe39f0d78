/* test_render.c - the renderer without the process: a real EGL context on
 * Mesa (llvmpipe), scenes built from grids, head-camera frames checked by
 * content. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pa_render.h"
#include "testutil.h"
#include "test_render_egl.h"

#define W 320
#define H 240
#define DEG (M_PI / 180)

/* A res x res-metre room: 0.05 m cells, a wall ring one cell thick. */
static pa_grid room(uint32_t cells) {
  pa_grid g = {0};
  g.width = g.height = cells;
  g.resolution = 0.05;
  g.occupied_min = PA_CELL_OCCUPIED;
  g.cells = calloc((size_t)cells * cells, 1);
  assert_non_null(g.cells);
  for (uint32_t i = 0; i < cells; i++) {
    g.cells[i] = g.cells[(size_t)(cells - 1) * cells + i] = PA_CELL_OCCUPIED;
    g.cells[(size_t)i * cells] = g.cells[(size_t)i * cells + cells - 1] =
        PA_CELL_OCCUPIED;
  }
  return g;
}

static void fill(pa_grid *g, uint32_t x0, uint32_t y0, uint32_t x1,
                 uint32_t y1, int8_t v) {
  for (uint32_t y = y0; y < y1; y++)
    for (uint32_t x = x0; x < x1; x++)
      g->cells[(size_t)y * g->width + x] = v;
}

static pa_robot_info robot(uint8_t r, uint8_t g, uint8_t b) {
  pa_robot_info ri;
  memset(&ri, 0, sizeof ri);
  snprintf(ri.name, sizeof ri.name, "r");
  ri.active = 1;
  ri.radius = 0.18f;
  ri.height = 0.25f;
  ri.head_height = 0.35f;
  ri.colour[0] = r, ri.colour[1] = g, ri.colour[2] = b, ri.colour[3] = 255;
  ri.cam_width = W, ri.cam_height = H;
  ri.cam_fov = (float)(60 * DEG);
  return ri;
}

static uint8_t *render(pa_render_scene *s, const pa_render_view *v,
                       uint32_t w, uint32_t h) {
  char err[256];
  pa_render_cam *c = NULL;
  assert_int_equal(pa_render_cam_create(&c, w, h, err, sizeof err), 0);
  uint8_t *img = malloc((size_t)w * h * 3);
  assert_non_null(img);
  int rc = pa_render_cam_render(c, s, v, img, err, sizeof err);
  if (rc)
    fail_msg("render: %s", err);
  pa_render_cam_free(c);
  return img;
}

static const uint8_t *px(const uint8_t *img, uint32_t w, uint32_t x,
                         uint32_t y) {
  return img + ((size_t)y * w + x) * 3;
}

/* Mean colour of a rectangle. */
static void mean_rgb(const uint8_t *img, uint32_t w, uint32_t x0, uint32_t y0,
                     uint32_t x1, uint32_t y1, double out[3]) {
  double s[3] = {0, 0, 0};
  for (uint32_t y = y0; y < y1; y++)
    for (uint32_t x = x0; x < x1; x++)
      for (int k = 0; k < 3; k++)
        s[k] += px(img, w, x, y)[k];
  double n = (double)(x1 - x0) * (y1 - y0);
  for (int k = 0; k < 3; k++)
    out[k] = s[k] / n;
}

static void test_context(void **state) {
  const char *r = pa_render_gl_renderer();
  assert_non_null(r);
  assert_true(strlen(r) > 0);
  char err[128];
  assert_int_equal(pa_render_gl_check("test", err, sizeof err), 0);
}

/* The W x H head-camera image of a one-robot scene of g, the robot (ri)
 * standing at p. */
static uint8_t *render_alone(const pa_grid *g, const pa_robot_info *ri,
                             pa_render_pose p) {
  char err[256];
  pa_render_scene *s = NULL;
  assert_int_equal(
      pa_render_scene_build(&s, g, ri, 1, NULL, 0, err, sizeof err), 0);
  pa_render_scene_set_poses(s, &p, 1);
  pa_render_view v = pa_render_view_head(ri, 0, &p);
  uint8_t *img = render(s, &v, W, H);
  pa_render_scene_free(s);
  return img;
}

/* Facing a wall 0.3 m ahead: the centre is wall, uniformly, beige. */
static void test_wall_close_up(void **state) {
  pa_grid g = room(100);
  fill(&g, 60, 1, 65, 99, PA_CELL_OCCUPIED); /* wall face at x = 3.0 m */
  pa_robot_info ri = robot(40, 90, 220);
  uint8_t *img = render_alone(&g, &ri, (pa_render_pose){2.7, 2.5, 0, 0, true});
  int lo[3] = {255, 255, 255}, hi[3] = {0, 0, 0};
  for (uint32_t y = H * 3 / 10; y < H * 7 / 10; y++)
    for (uint32_t x = W * 3 / 10; x < W * 7 / 10; x++) {
      const uint8_t *c = px(img, W, x, y);
      for (int k = 0; k < 3; k++) {
        lo[k] = c[k] < lo[k] ? c[k] : lo[k];
        hi[k] = c[k] > hi[k] ? c[k] : hi[k];
      }
      /* beige: red clearly above blue (sky and floor are bluish/neutral) */
      if (!(c[0] > c[2] + 20))
        fail_msg("pixel (%u,%u) = %u,%u,%u is not wall-coloured", x, y, c[0],
                 c[1], c[2]);
    }
  for (int k = 0; k < 3; k++)
    assert_true(hi[k] - lo[k] <= 10); /* one flat, evenly lit face */
  free(img);
  free(g.cells);
}

/* Widths that are not a multiple of four (the readback drops alpha four
 * pixels at a time, then one by one): the top row is sky in every pixel,
 * in the right channel order, up to the last byte of the image. */
static void test_odd_widths(void **state) {
  char err[256];
  pa_grid g = room(400);
  pa_robot_info ri = robot(40, 90, 220);
  pa_render_scene *s = NULL;
  assert_int_equal(
      pa_render_scene_build(&s, &g, &ri, 1, NULL, 0, err, sizeof err), 0);
  pa_render_pose p = {10, 10, 0, 0, true};
  pa_render_scene_set_poses(s, &p, 1);
  pa_render_view v = pa_render_view_head(&ri, 0, &p);
  static const uint32_t widths[] = {1, 2, 3, 5, 6, 7, 97};
  for (size_t k = 0; k < sizeof widths / sizeof widths[0]; k++) {
    uint32_t w = widths[k], h = 61;
    uint8_t *img = render(s, &v, w, h); /* exact size: ASan sees overruns */
    const uint8_t *c0 = px(img, w, 0, 0);
    if (!(c0[2] > c0[0] + 40 && c0[1] > c0[0] + 20))
      fail_msg("width %u: top-left %u,%u,%u is not sky", w, c0[0], c0[1],
               c0[2]);
    for (uint32_t x = 1; x < w; x++) {
      const uint8_t *c = px(img, w, x, 0);
      if (memcmp(c, c0, 3) != 0)
        fail_msg("width %u: top row pixel %u = %u,%u,%u, pixel 0 = %u,%u,%u", w,
                 x, c[0], c[1], c[2], c0[0], c0[1], c0[2]);
    }
    free(img);
  }
  pa_render_scene_free(s);
  free(g.cells);
}

/* In the open looking at a distant wall: sky on top, floor at the bottom. */
static void test_not_flipped(void **state) {
  pa_grid g = room(400);
  pa_robot_info ri = robot(40, 90, 220);
  uint8_t *img = render_alone(&g, &ri, (pa_render_pose){10, 10, 0, 0, true});
  double top[3], bottom[3];
  mean_rgb(img, W, 0, 0, W, 8, top);
  mean_rgb(img, W, 0, H - 8, W, H, bottom);
  /* sky: clearly blue; floor: neutral grey, darker than the sky */
  assert_true(top[2] > top[0] + 40);
  assert_true(fabs(bottom[2] - bottom[0]) < 30);
  assert_true(bottom[0] + bottom[1] + bottom[2] < top[0] + top[1] + top[2]);
  free(img);
  free(g.cells);
}

/* Two robots and two obstacles in a room with walls; the robots stand at
 * poses (set here: the first looks along the room at both obstacles). */
static pa_render_scene *cluttered(pa_grid *g, pa_robot_info ri[2],
                                  pa_render_pose poses[2]) {
  char err[256];
  *g = room(120);
  fill(g, 20, 70, 50, 75, PA_CELL_OCCUPIED);
  fill(g, 90, 10, 95, 60, PA_CELL_OCCUPIED);
  ri[0] = robot(40, 90, 220);
  ri[1] = robot(220, 30, 30);
  pa_obstacle_info o[2];
  memset(o, 0, sizeof o);
  o[0].active = 1, o[0].shape = PA_SHAPE_CIRCLE, o[0].x = 1.0, o[0].y = 4.5;
  o[0].radius = 0.3, o[0].height = 0.6, o[0].colour[1] = 200;
  o[1].active = 1, o[1].shape = PA_SHAPE_BOX, o[1].x = 4.0, o[1].y = 4.0;
  o[1].theta = 0.5, o[1].size_x = 0.6, o[1].size_y = 0.3, o[1].height = 0.4;
  o[1].colour[0] = 200, o[1].colour[1] = 160;
  pa_render_scene *s = NULL;
  assert_int_equal(pa_render_scene_build(&s, g, ri, 2, o, 2, err, sizeof err),
                   0);
  poses[0] = (pa_render_pose){3.0, 2.0, 0.3, 0, true};
  poses[1] = (pa_render_pose){4.5, 2.5, 2.0, 0.4, true};
  pa_render_scene_set_poses(s, poses, 2);
  return s;
}

static double diff_frac(const uint8_t *a, const uint8_t *b, size_t n) {
  size_t d = 0;
  for (size_t i = 0; i < n; i += 3)
    if (abs(a[i] - b[i]) + abs(a[i + 1] - b[i + 1]) + abs(a[i + 2] - b[i + 2]) >
        12)
      d++;
  return (double)d / (double)(n / 3);
}

/* Head turned 90 deg == body turned 90 deg; and not the straight view. */
static void test_head_turn(void **state) {
  pa_grid g;
  pa_robot_info ri[2];
  pa_render_pose poses[2];
  pa_render_scene *s = cluttered(&g, ri, poses);
  pa_render_view straight = pa_render_view_head(&ri[0], 0, &poses[0]);
  uint8_t *a = render(s, &straight, W, H);
  poses[0].head = M_PI / 2;
  pa_render_scene_set_poses(s, poses, 2);
  pa_render_view head = pa_render_view_head(&ri[0], 0, &poses[0]);
  uint8_t *b = render(s, &head, W, H);
  poses[0].head = 0;
  poses[0].theta = 0.3 + M_PI / 2;
  pa_render_scene_set_poses(s, poses, 2);
  pa_render_view body = pa_render_view_head(&ri[0], 0, &poses[0]);
  uint8_t *c = render(s, &body, W, H);
  size_t n = (size_t)W * H * 3;
  assert_true(diff_frac(b, c, n) < 0.001);
  assert_true(diff_frac(a, b, n) > 0.2);
  free(a), free(b), free(c);
  pa_render_scene_free(s);
  free(g.cells);
}

/* Another robot in view: its colour blob is where the pinhole model puts
 * it. The expected column is computed here from the geometry alone. */
static void test_robot_projection(void **state) {
  pa_grid g;
  pa_robot_info ri[2];
  pa_render_pose poses[2];
  pa_render_scene *s = cluttered(&g, ri, poses);
  const uint32_t w = 640, h = 480;
  ri[0].cam_width = w, ri[0].cam_height = h;
  poses[0] = (pa_render_pose){2.0, 2.5, 0.1, 0, true};
  poses[1] = (pa_render_pose){4.0, 3.1, 1.0, 0, true};
  pa_render_scene_set_poses(s, poses, 2);
  pa_render_view v = pa_render_view_head(&ri[0], 0, &poses[0]);
  uint8_t *img = render(s, &v, w, h);
  double sx = 0, sy = 0, n = 0;
  for (uint32_t y = 0; y < h; y++)
    for (uint32_t x = 0; x < w; x++) {
      const uint8_t *c = px(img, w, x, y);
      if (c[0] > 110 && c[1] < 70 && c[2] < 70)
        sx += x + 0.5, sy += y + 0.5, n++;
    }
  assert_true(n > 200); /* visible, not a speck */
  double dx = 4.0 - 2.0, dy = 3.1 - 2.5;
  double fwd = dx * cos(0.1) + dy * sin(0.1);
  double left = -dx * sin(0.1) + dy * cos(0.1);
  double expect_u = w / 2.0 * (1 - (left / fwd) / tan(30 * DEG));
  double cu = sx / n;
  if (fabs(cu - expect_u) > 4)
    fail_msg("red robot at column %.1f, expected %.1f", cu, expect_u);
  double pu, pv;
  assert_true(pa_render_project(&v, w, h, 4.0, 3.1, 0.35, &pu, &pv));
  assert_true(fabs(pu - expect_u) < 0.01);
  /* the camera sits at 0.35 m: the head (0.35 m) is on the horizon */
  assert_true(fabs(pv - h / 2.0) < 0.01);
  assert_true(sy / n > h / 2.0); /* the body is mostly below the horizon */
  /* behind the camera is not projected */
  assert_false(pa_render_project(&v, w, h, 0.0, 2.5, 0.3, &pu, &pv));
  free(img);
  pa_render_scene_free(s);
  free(g.cells);
}

/* Standing in the middle of a square room, the four walls differ. */
static void test_wall_shading(void **state) {
  char err[256];
  pa_grid g = room(40); /* 2 m */
  pa_robot_info ri = robot(40, 90, 220);
  pa_render_scene *s = NULL;
  assert_int_equal(pa_render_scene_build(&s, &g, &ri, 1, NULL, 0, err,
                                         sizeof err), 0);
  double shade[4];
  for (int i = 0; i < 4; i++) {
    pa_render_pose p = {1.0, 1.0, i * M_PI / 2, 0, true};
    pa_render_view v = pa_render_view_head(&ri, 0, &p);
    uint8_t *img = render(s, &v, W, H);
    double m[3];
    mean_rgb(img, W, W / 2 - 4, H / 2 - 4, W / 2 + 4, H / 2 + 4, m);
    shade[i] = m[0] + m[1] + m[2];
    free(img);
  }
  for (int i = 0; i < 4; i++)
    for (int j = i + 1; j < 4; j++)
      if (fabs(shade[i] - shade[j]) < 6)
        fail_msg("walls %d and %d look alike (%.0f vs %.0f)", i, j, shade[i],
                 shade[j]);
  pa_render_scene_free(s);
  free(g.cells);
}

/* Blocked cells merge into few boxes; unknown cells are walls too. */
static void test_wall_merge(void **state) {
  char err[256];
  pa_grid g = room(100);
  pa_render_scene *s = NULL;
  assert_int_equal(pa_render_scene_build(&s, &g, NULL, 0, NULL, 0, err,
                                         sizeof err), 0);
  assert_int_equal(pa_render_scene_wall_boxes(s), 4);
  pa_render_scene_free(s);
  fill(&g, 10, 10, 40, 30, PA_CELL_OCCUPIED);  /* one block */
  fill(&g, 60, 60, 70, 70, PA_CELL_UNKNOWN);   /* unknown blocks too */
  assert_int_equal(pa_render_scene_build(&s, &g, NULL, 0, NULL, 0, err,
                                         sizeof err), 0);
  assert_int_equal(pa_render_scene_wall_boxes(s), 6);
  double b[4];
  pa_render_scene_bounds(s, b);
  assert_true(fabs(b[0]) < 1e-9 && fabs(b[2] - 5.0) < 1e-9);
  pa_render_scene_free(s);
  free(g.cells);

  pa_grid def;
  if (pa_map_load_default(&def, err, sizeof err) != 0)
    fail_msg("default map: %s", err);
  size_t blocked = 0;
  for (size_t i = 0; i < (size_t)def.width * def.height; i++)
    blocked += def.cells[i] < 0 || def.cells[i] >= def.occupied_min;
  assert_int_equal(pa_render_scene_build(&s, &def, NULL, 0, NULL, 0, err,
                                         sizeof err), 0);
  uint32_t boxes = pa_render_scene_wall_boxes(s);
  printf("default map: %zu blocked cells -> %u wall boxes, %u triangles\n",
         blocked, boxes, pa_render_scene_triangles(s));
  assert_true(boxes > 0 && boxes * 8 < blocked);
  pa_render_scene_free(s);
  pa_grid_free(&def);
}

/* Two frames in flight come back in order with their metadata, equal to
 * synchronous renders; a third submit is refused. */
static void test_pipelined_readback(void **state) {
  char err[256];
  pa_grid g;
  pa_robot_info ri[2];
  pa_render_pose poses[2];
  pa_render_scene *s = cluttered(&g, ri, poses);
  pa_render_view v0 = pa_render_view_head(&ri[0], 0, &poses[0]);
  pa_render_view v1 = pa_render_view_head(&ri[1], 1, &poses[1]);
  uint8_t *sync0 = render(s, &v0, W, H), *sync1 = render(s, &v1, W, H);
  pa_render_cam *c = NULL;
  assert_int_equal(pa_render_cam_create(&c, W, H, err, sizeof err), 0);
  pa_frame m0 = {.seq = 7, .robot = 0}, m1 = {.seq = 9, .robot = 1}, got;
  assert_int_equal(pa_render_cam_submit(c, s, &v0, &m0, err, sizeof err), 0);
  assert_int_equal(pa_render_cam_submit(c, s, &v1, &m1, err, sizeof err), 0);
  assert_int_equal(pa_render_cam_pending(c), 2);
  assert_int_equal(pa_render_cam_submit(c, s, &v0, &m0, err, sizeof err), -1);
  assert_non_null(strstr(err, "in flight"));
  assert_int_equal(pa_render_cam_peek(c)->seq, 7);
  uint8_t *img = malloc((size_t)W * H * 3);
  assert_int_equal(pa_render_cam_fetch(c, &got, img, err, sizeof err), 0);
  assert_int_equal(got.seq, 7);
  assert_memory_equal(img, sync0, (size_t)W * H * 3);
  assert_int_equal(pa_render_cam_fetch(c, &got, img, err, sizeof err), 0);
  assert_int_equal(got.seq, 9);
  assert_int_equal(got.robot, 1);
  assert_memory_equal(img, sync1, (size_t)W * H * 3);
  assert_int_equal(pa_render_cam_fetch(c, &got, img, err, sizeof err), -1);
  assert_null(pa_render_cam_peek(c));
  free(img), free(sync0), free(sync1);
  pa_render_cam_free(c);
  pa_render_scene_free(s);
  free(g.cells);
}

/* Culling (chunks outside the field of view skipped) changes no pixel:
 * many poses over the default map, culled against everything drawn. */
static void test_culling_exact(void **state) {
  char err[256];
  pa_grid g;
  if (pa_map_load_default(&g, err, sizeof err) != 0)
    fail_msg("default map: %s", err);
  pa_robot_info ri[2] = {robot(40, 90, 220), robot(220, 30, 30)};
  pa_render_scene *s = NULL;
  assert_int_equal(pa_render_scene_build(&s, &g, ri, 2, NULL, 0, err,
                                         sizeof err), 0);
  uint32_t checked = 0;
  for (int i = 0; i < 24; i++) {
    double x = -4.5 + 9.0 * ((i * 7) % 24) / 23.0;
    double y = -4.5 + 9.0 * ((i * 11) % 24) / 23.0;
    int cx, cy;
    if (!pa_grid_world_to_cell(&g, x, y, &cx, &cy) ||
        pa_grid_blocked(&g, cx, cy, true))
      continue;
    pa_render_pose p[2] = {{x, y, i * 0.83, 0, true},
                           {x + 1.0, y + 0.3, 0, 0, true}};
    pa_render_scene_set_poses(s, p, 2);
    pa_render_view v = pa_render_view_head(&ri[0], 0, &p[0]);
    pa_render_scene_set_culling(s, true);
    uint8_t *a = render(s, &v, W, H);
    pa_render_scene_set_culling(s, false);
    uint8_t *b = render(s, &v, W, H);
    double d = diff_frac(a, b, (size_t)W * H * 3);
    if (d > 0.001)
      fail_msg("pose %d (%.2f, %.2f): culling changed %.2f%% of pixels", i, x,
               y, d * 100);
    free(a), free(b);
    checked++;
  }
  assert_true(checked >= 10);
  pa_render_scene_free(s);
  pa_grid_free(&g);
}

static void test_bad_input(void **state) {
  char err[256] = "";
  pa_render_scene *s = NULL;
  pa_grid empty = {0};
  assert_int_equal(pa_render_scene_build(&s, &empty, NULL, 0, NULL, 0, err,
                                         sizeof err), -1);
  assert_null(s);
  assert_non_null(strstr(err, "empty"));
  pa_grid g = room(20);
  g.resolution = -1;
  assert_int_equal(pa_render_scene_build(&s, &g, NULL, 0, NULL, 0, err,
                                         sizeof err), -1);
  assert_non_null(strstr(err, "resolution"));
  g.resolution = 0.05;
  pa_obstacle_info o;
  memset(&o, 0, sizeof o);
  snprintf(o.name, sizeof o.name, "crate");
  o.active = 1, o.shape = PA_SHAPE_BOX, o.size_x = NAN, o.size_y = 1;
  assert_int_equal(pa_render_scene_build(&s, &g, NULL, 0, &o, 1, err,
                                         sizeof err), -1);
  assert_non_null(strstr(err, "crate"));
  o.shape = 7, o.size_x = 1;
  assert_int_equal(pa_render_scene_build(&s, &g, NULL, 0, &o, 1, err,
                                         sizeof err), -1);
  pa_robot_info ri = robot(1, 2, 3);
  ri.radius = -1;
  assert_int_equal(pa_render_scene_build(&s, &g, &ri, 1, NULL, 0, err,
                                         sizeof err), -1);
  assert_non_null(strstr(err, "robot 0"));
  pa_render_cam *c = NULL;
  assert_int_equal(pa_render_cam_create(&c, 0, 10, err, sizeof err), -1);
  assert_int_equal(pa_render_cam_create(&c, 10, 5000, err, sizeof err), -1);
  assert_null(c);
  ri.radius = 0.2f;
  assert_int_equal(pa_render_scene_build(&s, &g, &ri, 1, NULL, 0, err,
                                         sizeof err), 0);
  assert_int_equal(pa_render_cam_create(&c, 16, 16, err, sizeof err), 0);
  pa_render_view v = {0.5, 0.5,        0.3,   0,    0,
                      0,   UINT32_MAX, false, false}; /* fov 0 */
  assert_int_equal(pa_render_cam_submit(c, s, &v, NULL, err, sizeof err), -1);
  assert_non_null(strstr(err, "fov"));
  v.fov = 1.0, v.yaw = INFINITY;
  assert_int_equal(pa_render_cam_submit(c, s, &v, NULL, err, sizeof err), -1);
  uint8_t buf[16 * 16 * 3];
  assert_int_equal(pa_render_cam_fetch(c, NULL, buf, err, sizeof err), -1);
  assert_int_equal(pa_render_write_png("/nonexistent-dir/x.png", buf, 16, 16,
                                       err, sizeof err), -1);
  assert_non_null(strstr(err, "/nonexistent-dir/x.png"));
  pa_render_cam_free(c);
  pa_render_scene_free(s);
  free(g.cells);
}

/* The readback's alpha drop gives each pixel's r, g, b in order for every
 * row length, and writes nothing past the 3n bytes (SIMD steps overlap). */
static void test_rgba_to_rgb(void **state) {
  (void)state;
  uint8_t src[4 * 100], want[3 * 100], got[3 * 100 + 64];
  for (size_t i = 0; i < sizeof src; i++)
    src[i] = (uint8_t)(i * 37 + 11);
  for (uint32_t n = 0; n <= 100; n++) {
    for (uint32_t i = 0; i < n; i++)
      memcpy(want + 3 * i, src + 4 * i, 3);
    memset(got, 0xa5, sizeof got);
    pa_render_rgba_to_rgb(got, src, n);
    if (n)
      assert_memory_equal(got, want, 3 * n);
    for (size_t i = 3 * n; i < sizeof got; i++)
      assert_int_equal(got[i], 0xa5);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_context),
      cmocka_unit_test(test_rgba_to_rgb),
      cmocka_unit_test(test_wall_close_up),
      cmocka_unit_test(test_not_flipped),
      cmocka_unit_test(test_head_turn),
      cmocka_unit_test(test_robot_projection),
      cmocka_unit_test(test_wall_shading),
      cmocka_unit_test(test_wall_merge),
      cmocka_unit_test(test_pipelined_readback),
      cmocka_unit_test(test_culling_exact),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_odd_widths),
  };
  return cmocka_run_group_tests(tests, egl_setup, egl_teardown);
}
