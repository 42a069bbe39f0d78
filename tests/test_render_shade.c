/* test_render_shade.c - the shaded look (real EGL on Mesa llvmpipe): a lit
 * box shows its top and its side in clearly different shades, an obstacle
 * darkens the floor beside it with its soft shadow (and nothing does with
 * shadows off), a wall's shadow map shadow falls on the floor away from the
 * key light, a multisampled camera gives edge pixels between the two
 * sides' colours where a plain one has none, and an SSL world's floor is
 * the green carpet. */
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

#define W 320
#define H 240

#include "test_render_egl.h"

/* A 6 x 6 m room (border walls), origin at its corner, one grey box
 * obstacle 0.4 x 0.4 x 1 m at (2.5, 2.5). */
static pa_render_scene *room_with_box(pa_grid *g, double origin) {
  memset(g, 0, sizeof *g);
  g->width = g->height = 120;
  g->resolution = 0.05;
  g->origin_x = g->origin_y = origin;
  g->occupied_min = PA_CELL_OCCUPIED;
  g->cells = calloc((size_t)g->width * g->height, 1);
  assert_non_null(g->cells);
  for (uint32_t i = 0; i < g->width; i++) {
    g->cells[i] = g->cells[(size_t)(g->height - 1) * g->width + i] =
        PA_CELL_OCCUPIED;
    g->cells[(size_t)i * g->width] =
        g->cells[(size_t)i * g->width + g->width - 1] = PA_CELL_OCCUPIED;
  }
  pa_obstacle_info o;
  memset(&o, 0, sizeof o);
  snprintf(o.name, sizeof o.name, "box");
  o.active = 1, o.shape = PA_SHAPE_BOX, o.height = 1.0f;
  o.x = 2.5 + origin, o.y = 2.5 + origin;
  o.size_x = o.size_y = 0.4;
  o.colour[0] = o.colour[1] = o.colour[2] = 128, o.colour[3] = 255;
  char err[256];
  pa_render_scene *s = NULL;
  if (pa_render_scene_build(&s, g, NULL, 0, &o, 1, err, sizeof err) != 0)
    fail_msg("%s", err);
  return s;
}

static uint8_t *render(pa_render_scene *s, const pa_render_view *v,
                       uint32_t msaa) {
  char err[256];
  pa_render_cam *c = NULL;
  assert_int_equal(pa_render_cam_create(&c, W, H, err, sizeof err), 0);
  if (pa_render_cam_set_msaa(c, msaa, err, sizeof err) != 0)
    fail_msg("msaa: %s", err);
  assert_int_equal(pa_render_cam_msaa(c), msaa > 1 ? msaa : 0);
  uint8_t *img = malloc((size_t)W * H * 3);
  assert_non_null(img);
  if (pa_render_cam_render(c, s, v, img, err, sizeof err) != 0)
    fail_msg("render: %s", err);
  pa_render_cam_free(c);
  return img;
}

/* Mean of r + g + b over a 3 x 3 window at world point (x, y, z). */
static double lum_at(const uint8_t *img, const pa_render_view *v, double x,
                     double y, double z) {
  double u, vp;
  assert_true(pa_render_project(v, W, H, x, y, z, &u, &vp));
  assert_true(u >= 2 && vp >= 2 && u < W - 2 && vp < H - 2);
  double sum = 0;
  for (int dy = -1; dy <= 1; dy++)
    for (int dx = -1; dx <= 1; dx++) {
      const uint8_t *c = img + ((size_t)((int)vp + dy) * W + (int)u + dx) * 3;
      sum += c[0] + c[1] + c[2];
    }
  return sum / 9;
}

static void test_lit_faces(void **state) {
  (void)state;
  pa_grid g;
  pa_render_scene *s = room_with_box(&g, 0);
  /* From the south, above: the box's top and its south face. */
  pa_render_view v = {2.5, 0.5,        2.0,  M_PI / 2, -0.6,
                      1.2, UINT32_MAX, true, false};
  uint8_t *img = render(s, &v, 0);
  double top = lum_at(img, &v, 2.5, 2.5, 1.0);
  double side = lum_at(img, &v, 2.5, 2.3, 0.5);
  print_message("top %.1f, south face %.1f (ratio %.2f)\n", top, side,
                side / top);
  /* the face turned from the key light has ambient and a little fill only
   * (the old wrap lighting left it at three quarters of the top) */
  assert_true(side < 0.68 * top);
  assert_true(side > 0.3 * top); /* still lit: not black */
  free(img);
  pa_render_scene_free(s);
  free(g.cells);
}

static void test_shadow(void **state) {
  (void)state;
  pa_grid g;
  pa_render_scene *s = room_with_box(&g, 0);
  /* Straight down (almost) from 5 m over the box. */
  pa_render_view v = {2.5, 2.45,       5.0,  M_PI / 2, -M_PI / 2 + 0.05,
                      1.2, UINT32_MAX, true, false};
  /* Both points in the floor tile [2, 3] x [2, 3] (one shade): one beside
   * the box on the side away from the key light, one across it, beyond the
   * shadow's reach. */
  uint8_t *img = render(s, &v, 0);
  double shade = lum_at(img, &v, 2.2, 2.12, 0);
  double open = lum_at(img, &v, 2.92, 2.94, 0);
  free(img);
  pa_render_scene_set_shadows(s, false);
  img = render(s, &v, 0);
  double shade_off = lum_at(img, &v, 2.2, 2.12, 0);
  double open_off = lum_at(img, &v, 2.92, 2.94, 0);
  free(img);
  print_message("floor in shadow %.1f, open %.1f; shadows off %.1f, %.1f\n",
                shade, open, shade_off, open_off);
  assert_true(shade < 0.8 * open);
  assert_true(fabs(shade_off - open_off) < 6);
  assert_true(fabs(open - open_off) < 3);
  pa_render_scene_free(s);
  free(g.cells);
}

/* The room of room_with_box without the box, and with wall (a 1 m high
 * row of cells at y = 3, x from 1 to 5) when asked. */
static pa_render_scene *room_with_wall(pa_grid *g, bool wall) {
  pa_render_scene *s = room_with_box(g, 0);
  pa_render_scene_free(s);
  for (uint32_t x = 20; wall && x < 100; x++)
    g->cells[(size_t)60 * g->width + x] = PA_CELL_OCCUPIED;
  char err[256];
  s = NULL;
  if (pa_render_scene_build(&s, g, NULL, 0, NULL, 0, err, sizeof err) != 0)
    fail_msg("%s", err);
  return s;
}

/* With the shadow map, the wall darkens the floor on its side away from
 * the key light (south-west: the light comes from the north-east) and not
 * on its lit side; without the map, or without the wall, the two are
 * alike. Both points are in floor tiles of the same shade. */
static void test_shadow_map(void **state) {
  (void)state;
  pa_render_view v = {3.0, 3.0,        6.0,  M_PI / 2, -M_PI / 2 + 0.05,
                      1.2, UINT32_MAX, true, true};
  double lum[3][2];
  for (int k = 0; k < 3; k++) {
    pa_grid g;
    pa_render_scene *s = room_with_wall(&g, k != 2);
    pa_render_view vk = v;
    vk.shadow_map = k != 1;
    uint8_t *img = render(s, &vk, k == 0 ? 4 : 0);
    lum[k][0] = lum_at(img, &vk, 2.5, 2.6, 0); /* 0.4 m south of it */
    lum[k][1] = lum_at(img, &vk, 3.5, 3.4, 0); /* 0.35 m north */
    free(img);
    pa_render_scene_free(s);
    free(g.cells);
  }
  print_message("beside the wall, away from / towards the light: shadow "
                "map %.1f / %.1f; blobs only %.1f / %.1f; no wall %.1f / "
                "%.1f\n",
                lum[0][0], lum[0][1], lum[1][0], lum[1][1], lum[2][0],
                lum[2][1]);
  assert_true(lum[0][0] < 0.8 * lum[0][1]);
  assert_true(fabs(lum[1][0] - lum[1][1]) < 6);
  assert_true(fabs(lum[2][0] - lum[2][1]) < 6);
  assert_true(fabs(lum[0][1] - lum[2][1]) < 6); /* the lit side: as open */
}

/* The room of room_with_box without the box, one robot in it (radius 0.3
 * m, 0.5 m high, its head at 0.6 m; no pose yet). */
static pa_render_scene *room_with_robot(pa_grid *g) {
  pa_render_scene *s = room_with_box(g, 0);
  pa_render_scene_free(s);
  pa_robot_info ri;
  memset(&ri, 0, sizeof ri);
  ri.active = 1, ri.radius = 0.3f, ri.height = 0.5f, ri.head_height = 0.6f;
  ri.colour[0] = 200, ri.colour[3] = 255;
  char err[256];
  s = NULL;
  if (pa_render_scene_build(&s, g, &ri, 1, NULL, 0, err, sizeof err) != 0)
    fail_msg("%s", err);
  return s;
}

/* A robot's shadow from the map follows it: the floor beside it on the
 * side away from the light is shaded, and lit once it drove away (the map
 * is kept between frames while nothing moves, so this checks it is
 * redrawn when something does). */
static void test_shadow_map_follows_robot(void **state) {
  (void)state;
  pa_grid g;
  pa_render_scene *s = room_with_robot(&g);
  pa_render_view v = {1.85, 1.55,       6.0,  M_PI / 2, -M_PI / 2 + 0.05,
                      1.2,  UINT32_MAX, true, true};
  double lum[3];
  const double at[3][2] = {{2, 2}, {2, 2}, {4, 4}};
  for (int k = 0; k < 3; k++) {
    pa_render_pose p = {at[k][0], at[k][1], 0, 0, true};
    pa_render_scene_set_poses(s, &p, 1);
    uint8_t *img = render(s, &v, 0);
    lum[k] = lum_at(img, &v, 1.85, 1.55, 0);
    free(img);
  }
  print_message("floor beside the robot %.1f, again %.1f, robot gone %.1f\n",
                lum[0], lum[1], lum[2]);
  assert_true(lum[0] < 0.8 * lum[2]);
  assert_true(fabs(lum[0] - lum[1]) < 1); /* the kept map: the same */
  pa_render_scene_free(s);
  free(g.cells);
}

/* A robot's soft shadow (no shadow map) is a disc under it, shifted away
 * from the key light: as dark as it gets out to the robot's radius, half
 * that at 1.25 radii, round (the same half across the shift), nothing past
 * 1.5 radii; floor luminance as a share of the same point's with shadows
 * off. */
static void test_robot_soft_shadow(void **state) {
  (void)state;
  pa_grid g;
  pa_render_scene *s = room_with_robot(&g);
  pa_render_pose p = {2.6, 2.65, 0, 0, true};
  pa_render_scene_set_poses(s, &p, 1);
  /* the shift: away from the key light (0.35, 0.55, 0.76), 0.35 of the
   * height */
  double sx = -0.35 / 0.76 * 0.5 * 0.35, sy = -0.55 / 0.76 * 0.5 * 0.35;
  double cx = p.x + sx, cy = p.y + sy, n = hypot(sx, sy);
  double ux = sx / n, uy = sy / n; /* outwards, past the body */
  const double pt[4][2] = {
      {cx + 0.9 * 0.3 * ux, cy + 0.9 * 0.3 * uy},   /* full */
      {cx + 1.25 * 0.3 * ux, cy + 1.25 * 0.3 * uy}, /* half */
      {cx - 1.25 * 0.3 * uy, cy + 1.25 * 0.3 * ux}, /* half, across */
      {cx + 1.7 * 0.3 * ux, cy + 1.7 * 0.3 * uy}};  /* none */
  pa_render_view v = {2.5, 2.45,       5.0,  M_PI / 2, -M_PI / 2 + 0.05,
                      1.2, UINT32_MAX, true, false};
  uint8_t *on = render(s, &v, 0);
  pa_render_scene_set_shadows(s, false);
  uint8_t *off = render(s, &v, 0);
  double r[4];
  for (int k = 0; k < 4; k++)
    r[k] = lum_at(on, &v, pt[k][0], pt[k][1], 0) /
           lum_at(off, &v, pt[k][0], pt[k][1], 0);
  print_message("shadow's share of the light: %.3f at 0.9 r, %.3f and %.3f "
                "at 1.25 r, %.3f at 1.7 r\n",
                r[0], r[1], r[2], r[3]);
  assert_true(r[0] > 0.5 && r[0] < 0.7); /* 110 of 255 opaque */
  double half = (1 + r[0]) / 2;
  assert_true(fabs(r[1] - half) < 0.04);
  assert_true(fabs(r[2] - half) < 0.04);
  assert_true(fabs(r[3] - 1) < 0.01);
  free(on);
  free(off);
  pa_render_scene_free(s);
  free(g.cells);
}

/* Pixels of the multisampled image that differ from the plain one lie on
 * the plain image's edges, strictly between the colours around them. */
static void test_msaa(void **state) {
  (void)state;
  pa_grid g;
  pa_render_scene *s = room_with_box(&g, 0);
  pa_render_view v = {1.0, 0.9, 0.6, 0.8, 0.1, 1.0, UINT32_MAX, true, false};
  uint8_t *plain = render(s, &v, 0);
  uint8_t *ms = render(s, &v, 4);
  uint32_t differ = 0, between = 0;
  for (int y = 1; y < H - 1; y++)
    for (int x = 1; x < W - 1; x++) {
      const uint8_t *p = plain + ((size_t)y * W + x) * 3;
      const uint8_t *m = ms + ((size_t)y * W + x) * 3;
      int d = abs(p[0] - m[0]) + abs(p[1] - m[1]) + abs(p[2] - m[2]);
      if (d < 24)
        continue;
      differ++;
      int lo = 765, hi = 0, ml = m[0] + m[1] + m[2];
      for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
          const uint8_t *q = plain + ((size_t)(y + dy) * W + x + dx) * 3;
          int l = q[0] + q[1] + q[2];
          lo = l < lo ? l : lo, hi = l > hi ? l : hi;
        }
      if (hi - lo > 30 && ml > lo + 4 && ml < hi - 4)
        between++;
    }
  print_message("msaa: %u pixels differ, %u of them between their "
                "neighbours\n",
                differ, between);
  assert_true(between > 40);
  assert_true(between * 10 > differ * 6); /* mostly edge blends */
  assert_true(differ < W * H / 20);       /* edges only */
  free(plain);
  free(ms);
  char err[256];
  pa_render_cam *c = NULL;
  assert_int_equal(pa_render_cam_create(&c, W, H, err, sizeof err), 0);
  assert_int_equal(pa_render_cam_set_msaa(c, 4096, err, sizeof err), -1);
  print_message("refused: %s\n", err);
  assert_non_null(strstr(err, "MSAA samples"));
  assert_int_equal(pa_render_cam_msaa(c), 0);
  pa_render_cam_free(c);
  pa_render_scene_free(s);
  free(g.cells);
}

static void test_ssl_carpet(void **state) {
  (void)state;
  pa_grid g;
  pa_render_scene *s = room_with_box(&g, -3); /* centred on the origin */
  pa_render_view v = {0,   -2.0,       1.5,  M_PI / 2, -0.5,
                      1.2, UINT32_MAX, true, false};
  double none[3] = {0, 0, 0};
  pa_render_scene_set_ssl(s, 'B', false, none);
  uint8_t *img = render(s, &v, 0);
  double u, vp;
  assert_true(pa_render_project(&v, W, H, -0.4, -0.7, 0, &u, &vp));
  const uint8_t *c = img + ((size_t)vp * W + (size_t)u) * 3;
  print_message("carpet %u %u %u\n", c[0], c[1], c[2]);
  assert_true(c[1] > c[0] + 40 && c[1] > c[2] + 30);
  free(img);
  pa_render_scene_set_ssl(s, 0, false, none);
  img = render(s, &v, 0);
  c = img + ((size_t)vp * W + (size_t)u) * 3;
  assert_true(abs(c[1] - c[0]) < 12); /* grey floor without a field */
  free(img);
  pa_render_scene_free(s);
  free(g.cells);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lit_faces),
      cmocka_unit_test(test_shadow),
      cmocka_unit_test(test_shadow_map),
      cmocka_unit_test(test_shadow_map_follows_robot),
      cmocka_unit_test(test_robot_soft_shadow),
      cmocka_unit_test(test_msaa),
      cmocka_unit_test(test_ssl_carpet),
  };
  return cmocka_run_group_tests(tests, egl_setup, egl_teardown);
}
