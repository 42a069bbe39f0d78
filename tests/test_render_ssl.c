/* test_render_ssl.c - the SSL ball and field lines in a head camera (real
 * EGL on Mesa llvmpipe): an orange blob where the pinhole model puts the
 * ball, on the ground and in the air; none without it; white field lines
 * on the floor of an SSL world only. */
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

#define W 640
#define H 480
#define DEG (M_PI / 180)
#define BALL_R 0.021335

#include "test_render_egl.h"

/* A 10 x 8 m room centred on the origin (as an SSL field's grid is). */
static pa_grid field_room(void) {
  pa_grid g = {0};
  g.width = 200, g.height = 160;
  g.resolution = 0.05;
  g.origin_x = -5, g.origin_y = -4;
  g.occupied_min = PA_CELL_OCCUPIED;
  g.cells = calloc((size_t)g.width * g.height, 1);
  assert_non_null(g.cells);
  for (uint32_t x = 0; x < g.width; x++)
    g.cells[x] = g.cells[(size_t)(g.height - 1) * g.width + x] =
        PA_CELL_OCCUPIED;
  for (uint32_t y = 0; y < g.height; y++)
    g.cells[(size_t)y * g.width] = g.cells[(size_t)y * g.width + g.width - 1] =
        PA_CELL_OCCUPIED;
  return g;
}

static uint8_t *render(pa_render_scene *s, const pa_render_view *v) {
  char err[256];
  pa_render_cam *c = NULL;
  assert_int_equal(pa_render_cam_create(&c, W, H, err, sizeof err), 0);
  uint8_t *img = malloc((size_t)W * H * 3);
  assert_non_null(img);
  if (pa_render_cam_render(c, s, v, img, err, sizeof err) != 0)
    fail_msg("render: %s", err);
  pa_render_cam_free(c);
  return img;
}

/* By hue, not brightness: the key light leaves the ball's underside in
 * ambient only (about half as bright as its top). */
static bool orange(const uint8_t *c) {
  return c[0] > 100 && c[1] * 4 > c[0] && c[1] * 3 < c[0] * 2 && c[2] < 50;
}

/* Orange pixels: count and centroid. */
static uint32_t blob(const uint8_t *img, double *cu, double *cv) {
  double su = 0, sv = 0;
  uint32_t n = 0;
  for (uint32_t y = 0; y < H; y++)
    for (uint32_t x = 0; x < W; x++)
      if (orange(img + ((size_t)y * W + x) * 3))
        su += x + 0.5, sv += y + 0.5, n++;
  if (n)
    *cu = su / n, *cv = sv / n;
  return n;
}

/* Brightest (min of r, g, b) pixel within a window around (u, v). */
static int whitest(const uint8_t *img, double u, double v, int half) {
  int best = 0;
  for (int y = (int)v - half; y <= (int)v + half; y++)
    for (int x = (int)u - half; x <= (int)u + half; x++) {
      if (x < 0 || y < 0 || x >= W || y >= H)
        continue;
      const uint8_t *c = img + ((size_t)y * W + x) * 3;
      int m = c[0] < c[1] ? c[0] : c[1];
      m = m < c[2] ? m : c[2];
      best = m > best ? m : best;
    }
  return best;
}

static void test_ball_and_lines(void **state) {
  (void)state;
  pa_grid g = field_room();
  pa_robot_info ri;
  memset(&ri, 0, sizeof ri);
  snprintf(ri.name, sizeof ri.name, "b0");
  ri.active = 1;
  ri.radius = 0.09f, ri.height = 0.15f, ri.head_height = 0.14f;
  ri.colour[2] = ri.colour[3] = 255;
  ri.cam_width = W, ri.cam_height = H;
  ri.cam_fov = (float)(60 * DEG);
  char err[256];
  pa_render_scene *s = NULL;
  if (pa_render_scene_build(&s, &g, &ri, 1, NULL, 0, err, sizeof err) != 0)
    fail_msg("%s", err);
  pa_render_pose pose = {-1.0, 0.0, 0.0, 0.0, true};
  pa_render_scene_set_poses(s, &pose, 1);
  pa_render_view v = pa_render_view_head(&ri, 0, &pose);
  double cu = 0, cv = 0, pu, pv;

  /* No ball, no field: nothing orange, the floor where the halfway line
   * would be. */
  double none[3] = {0, 0, 0};
  pa_render_scene_set_ssl(s, 0, false, none);
  uint8_t *img = render(s, &v);
  assert_int_equal(blob(img, &cu, &cv), 0);
  assert_true(pa_render_project(&v, W, H, 0, 0.4, 0, &pu, &pv));
  int floor_white = whitest(img, pu, pv, 2);
  free(img);

  /* On the ground 1 m ahead, 0.3 m to the left. */
  double ground[3] = {0, 0.3, 0};
  pa_render_scene_set_ssl(s, 0, true, ground);
  img = render(s, &v);
  uint32_t n = blob(img, &cu, &cv);
  assert_true(pa_render_project(&v, W, H, 0, 0.3, BALL_R, &pu, &pv));
  print_message("ground: %u px at (%.1f, %.1f), centre projects to (%.1f, "
                "%.1f)\n",
                n, cu, cv, pu, pv);
  /* 42.67 mm at 1.04 m: about 26 px across (554 px/rad) */
  assert_true(n > 300 && n < 900);
  assert_true(fabs(cu - pu) < 1.5 && fabs(cv - pv) < 1.5);
  free(img);

  /* Chipped, 0.3 m up: higher in the image by the projection. */
  double air[3] = {0, 0.3, 0.3};
  pa_render_scene_set_ssl(s, 0, true, air);
  img = render(s, &v);
  n = blob(img, &cu, &cv);
  assert_true(pa_render_project(&v, W, H, 0, 0.3, 0.3 + BALL_R, &pu, &pv));
  assert_true(n > 300);
  assert_true(fabs(cu - pu) < 1.5 && fabs(cv - pv) < 1.5);
  assert_true(pv < H / 2.0); /* above the horizon: the eye is 0.14 m up */
  free(img);

  /* Division B: the halfway line (x = 0) is white on the floor. */
  pa_render_scene_set_ssl(s, 'B', false, none);
  img = render(s, &v);
  assert_true(pa_render_project(&v, W, H, 0, 0.4, 0, &pu, &pv));
  int line_white = whitest(img, pu, pv, 2);
  print_message("halfway line %d, bare floor %d\n", line_white, floor_white);
  assert_true(line_white > 200 && line_white > floor_white + 60);
  assert_int_equal(blob(img, &cu, &cv), 0);
  free(img);

  pa_render_scene_free(s);
  free(g.cells);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ball_and_lines),
  };
  return cmocka_run_group_tests(tests, egl_setup, egl_teardown);
}
