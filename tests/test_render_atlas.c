/* test_render_atlas.c - batched head cameras (render/atlas.c) on a real EGL
 * context: each tile is its own robot's view (robots facing a wall and
 * facing open space differ), tile i equals robot i's single-camera render
 * at the same size, robots and the ball of fewer sides and parts where
 * they are small on screen (the same in both), the ball culled as a robot,
 * passes beyond one framebuffer, a batch shared out to a pool's helpers (their
 * own contexts, at once) giving the same bytes, and bad input. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <glad/gl.h> /* a query around a camera (pa_render loads GL) */

#include "pa_render_atlas.h"
#include "testutil.h"
#include "test_render_egl.h"

#define TW 84
#define TH 84
#define NR 24 /* robots in the scene */
#define DEG (M_PI / 180)

static pa_render_scene *scene;
static pa_robot_info infos[NR];
static pa_render_pose poses[NR];
static pa_grid grid;

/* A 10 m square room (0.05 m cells) with a wall ring and one inner wall at
 * x = 3 m; robot 0 faces that wall from 0.3 m, robot 1 faces the open room
 * along it, the others stand around in all directions. */
static int setup(void **state) {
  if (egl_setup(state) != 0)
    return -1;
  char err[256];
  uint32_t n = 200;
  grid.width = grid.height = n;
  grid.resolution = 0.05;
  grid.occupied_min = PA_CELL_OCCUPIED;
  grid.cells = calloc((size_t)n * n, 1);
  if (!grid.cells)
    return -1;
  for (uint32_t i = 0; i < n; i++) {
    grid.cells[i] = grid.cells[(size_t)(n - 1) * n + i] = PA_CELL_OCCUPIED;
    grid.cells[(size_t)i * n] = grid.cells[(size_t)i * n + n - 1] =
        PA_CELL_OCCUPIED;
  }
  for (uint32_t y = 1; y < 120; y++)
    for (uint32_t x = 60; x < 64; x++)
      grid.cells[(size_t)y * n + x] = PA_CELL_OCCUPIED;
  for (int i = 0; i < NR; i++) {
    pa_robot_info *ri = &infos[i];
    memset(ri, 0, sizeof *ri);
    snprintf(ri->name, sizeof ri->name, "r%d", i);
    ri->active = 1;
    ri->radius = 0.18f;
    ri->height = 0.25f;
    ri->head_height = 0.35f;
    ri->colour[0] = (uint8_t)(40 + 8 * i), ri->colour[1] = 90;
    ri->colour[2] = (uint8_t)(220 - 8 * i), ri->colour[3] = 255;
    ri->cam_width = TW, ri->cam_height = TH;
    ri->cam_fov = (float)(70 * DEG);
    poses[i] = (pa_render_pose){4 + 0.6 * (i % 8), 1 + 1.1 * (i / 8), i * 0.7,
                                0.1 * (i % 3), true};
  }
  poses[0] = (pa_render_pose){2.7, 2.5, 0, 0, true}; /* wall, 0.3 m */
  poses[1] = (pa_render_pose){2.0, 7.0, M_PI / 2 - 0.3, 0, true}; /* room */
  if (pa_render_scene_build(&scene, &grid, infos, NR, NULL, 0, err,
                            sizeof err) != 0) {
    fprintf(stderr, "scene: %s\n", err);
    return -1;
  }
  pa_render_scene_set_poses(scene, poses, NR);
  return 0;
}

static int teardown(void **state) {
  pa_render_scene_free(scene);
  free(grid.cells);
  return egl_teardown(state);
}

static void views_of(pa_render_view *v, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    v[i] = pa_render_view_head(&infos[i % NR], i % NR, &poses[i % NR]);
}

/* A new atlas of TW x TH tiles (the tests' size). */
static pa_render_atlas *atlas_new(void) {
  char err[256];
  pa_render_atlas *a = NULL;
  if (pa_render_atlas_create(&a, TW, TH, err, sizeof err) != 0)
    fail_msg("atlas: %s", err);
  return a;
}

/* The NR views v drawn by atlas a (TW x TH tiles) into a new buffer. */
static uint8_t *atlas_all(pa_render_atlas *a, const pa_render_view *v) {
  char err[256];
  uint8_t *rgb = malloc((size_t)NR * TW * TH * 3);
  assert_non_null(rgb);
  if (pa_render_atlas_render(a, scene, v, NULL, NR, rgb, err, sizeof err) != 0)
    fail_msg("atlas: %s", err);
  return rgb;
}

static uint8_t *single(const pa_render_view *v, uint32_t w, uint32_t h) {
  char err[256];
  pa_render_cam *c = NULL;
  assert_int_equal(pa_render_cam_create(&c, w, h, err, sizeof err), 0);
  uint8_t *img = malloc((size_t)w * h * 3);
  assert_non_null(img);
  if (pa_render_cam_render(c, scene, v, img, err, sizeof err) != 0)
    fail_msg("camera: %s", err);
  pa_render_cam_free(c);
  return img;
}

/* Bytes of a and b (n each) more than tol apart. */
static size_t differ(const uint8_t *a, const uint8_t *b, size_t n, int tol) {
  size_t d = 0;
  for (size_t i = 0; i < n; i++)
    d += abs((int)a[i] - (int)b[i]) > tol;
  return d;
}

/* Tile i is robot i's single-camera render, within rasteriser tolerance. */
static void check_tiles(uint32_t n, uint32_t w, uint32_t h) {
  char err[256];
  pa_render_atlas *a = NULL;
  assert_int_equal(pa_render_atlas_create(&a, w, h, err, sizeof err), 0);
  pa_render_view *v = calloc(n, sizeof *v);
  size_t tile = (size_t)w * h * 3;
  uint8_t *rgb = malloc(n * tile);
  assert_non_null(v);
  assert_non_null(rgb);
  views_of(v, n);
  if (pa_render_atlas_render(a, scene, v, NULL, n, rgb, err, sizeof err))
    fail_msg("atlas: %s", err);
  for (uint32_t i = 0; i < n; i++) {
    uint8_t *one = single(&v[i], w, h);
    size_t d = differ(rgb + i * tile, one, tile, 2);
    if (d > tile / 200) /* 0.5 % of the bytes */
      fail_msg("%ux%u tile %u of %u: %zu of %zu bytes differ from its "
               "single-camera render",
               w, h, i, n, d, tile);
    free(one);
  }
  free(rgb);
  free(v);
  pa_render_atlas_free(a);
}

static void test_tiles_equal_single_cameras(void **state) {
  (void)state;
  check_tiles(NR, TW, TH);
  check_tiles(5, 64, 48); /* not square, a partly filled last row */
  check_tiles(1, 84, 84);
}

/* Wall tile and open-room tile differ, and match what they look at: the
 * wall fills the first one's centre uniformly, the second shows floor below
 * and sky-ish background above. */
static void test_tiles_are_their_robots(void **state) {
  (void)state;
  char err[256];
  pa_render_atlas *a = atlas_new();
  pa_render_view v[NR];
  views_of(v, NR);
  size_t tile = (size_t)TW * TH * 3;
  uint8_t *rgb = atlas_all(a, v);
  const uint8_t *wall = rgb, *open = rgb + tile;
  /* the wall tile: the centre third is one colour (within shading noise) */
  int lo = 255, hi = 0;
  for (uint32_t y = TH / 3; y < 2 * TH / 3; y++)
    for (uint32_t x = TW / 3; x < 2 * TW / 3; x++) {
      int g = wall[(y * TW + x) * 3 + 1];
      lo = g < lo ? g : lo;
      hi = g > hi ? g : hi;
    }
  assert_true(hi - lo <= 6);
  /* the open tile: top row and bottom row differ (far wall/sky vs floor) */
  int top = open[(2 * TW + TW / 2) * 3 + 2];
  int bottom = open[((TH - 3) * TW + TW / 2) * 3 + 2];
  assert_true(abs(top - bottom) > 10);
  assert_true(differ(wall, open, tile, 8) > tile / 4);
  /* swapping two views swaps their tiles, within one grey level: the fog
   * is mixed into the vertex colours (render/gl_util.c), and llvmpipe
   * interpolates them from the tile's own corner, so the same view one
   * tile over may round a pixel the other way */
  pa_render_view t = v[0];
  v[0] = v[1], v[1] = t;
  uint8_t *sw = atlas_all(a, v);
  assert_int_equal(differ(sw, open, tile, 1), 0);
  assert_int_equal(differ(sw + tile, wall, tile, 1), 0);
  assert_int_equal(differ(sw + 2 * tile, rgb + 2 * tile, (NR - 2) * tile, 0),
                   0);
  /* a view not drawn is zero, its neighbours unchanged */
  bool draw[NR];
  for (int i = 0; i < NR; i++)
    draw[i] = i != 3;
  views_of(v, NR);
  assert_int_equal(
      pa_render_atlas_render(a, scene, v, draw, NR, sw, err, sizeof err), 0);
  for (size_t i = 0; i < tile; i++)
    assert_int_equal(sw[3 * tile + i], 0);
  assert_int_equal(differ(sw + 4 * tile, rgb + 4 * tile, tile, 0), 0);
  free(sw);
  free(rgb);
  pa_render_atlas_free(a);
}

/* Culling (the wedge, and what the walls hide: robots 0 and 2.. behind the
 * inner wall from robot 0, chunks beyond the ring) changes no byte. */
static void culling_changes_nothing(pa_render_scene *sc) {
  char err[256];
  pa_render_atlas *a = atlas_new();
  pa_render_view v[NR + 2];
  views_of(v, NR);
  /* a robot in the gap above the inner wall looking past its end, and one
   * in a corner of the ring looking along the wall */
  v[NR] = v[1], v[NR].x = 3.1, v[NR].y = 6.3, v[NR].yaw = -1.2;
  v[NR + 1] = v[1], v[NR + 1].x = 0.3, v[NR + 1].y = 0.3, v[NR + 1].yaw = 0.4;
  v[NR].skip_robot = v[NR + 1].skip_robot = UINT32_MAX;
  size_t tile = (size_t)TW * TH * 3, n = NR + 2;
  uint8_t *on = malloc(n * tile), *off = malloc(n * tile);
  assert_non_null(on);
  assert_non_null(off);
  assert_int_equal(
      pa_render_atlas_render(a, sc, v, NULL, n, on, err, sizeof err), 0);
  pa_render_scene_set_culling(sc, false);
  assert_int_equal(
      pa_render_atlas_render(a, sc, v, NULL, n, off, err, sizeof err), 0);
  pa_render_scene_set_culling(sc, true);
  for (size_t i = 0; i < n; i++)
    if (differ(on + i * tile, off + i * tile, tile, 0))
      fail_msg("tile %zu differs with culling", i);
  free(on);
  free(off);
  pa_render_atlas_free(a);
}

static void test_culling_changes_nothing(void **state) {
  (void)state;
  culling_changes_nothing(scene);
  /* the same cells turned and moved by the map's origin */
  pa_grid g = grid;
  g.origin_x = -1.3, g.origin_y = 0.45, g.origin_yaw = 0.4;
  pa_render_scene *turned = NULL;
  char err[256];
  if (pa_render_scene_build(&turned, &g, infos, NR, NULL, 0, err, sizeof err) !=
      0)
    fail_msg("scene: %s", err);
  /* the robots carried along: the same views of the same walls */
  pa_render_pose keep[NR];
  memcpy(keep, poses, sizeof keep);
  double c = cos(g.origin_yaw), sn = sin(g.origin_yaw);
  for (int i = 0; i < NR; i++) {
    poses[i].x = g.origin_x + c * keep[i].x - sn * keep[i].y;
    poses[i].y = g.origin_y + sn * keep[i].x + c * keep[i].y;
    poses[i].theta = keep[i].theta + g.origin_yaw;
  }
  pa_render_scene_set_poses(turned, poses, NR);
  culling_changes_nothing(turned);
  memcpy(poses, keep, sizeof keep);
  pa_render_scene_free(turned);
}

/* An eye inside another robot's head (robots may overlap) sees its inside:
 * the neck's top, which the head hides from every eye outside, is drawn
 * there as the single camera draws it. */
static void test_eye_inside_a_head(void **state) {
  (void)state;
  char err[256];
  pa_render_atlas *a = atlas_new();
  pa_render_view v[2];
  views_of(v, 2);
  const pa_render_pose *p = &poses[6];
  for (int k = 0; k < 2; k++) { /* 3 cm from its centre, looking down at it */
    v[k].x = p->x - 0.03 * cos(p->theta + k),
    v[k].y = p->y - 0.03 * sin(p->theta + k);
    v[k].yaw = p->theta + k, v[k].pitch = -1.2;
  }
  size_t tile = (size_t)TW * TH * 3;
  uint8_t rgb[2 * TW * TH * 3];
  if (pa_render_atlas_render(a, scene, v, NULL, 2, rgb, err, sizeof err))
    fail_msg("atlas: %s", err);
  for (int k = 0; k < 2; k++) {
    uint8_t *one = single(&v[k], TW, TH);
    size_t d = differ(rgb + k * tile, one, tile, 2);
    if (d > tile / 200)
      fail_msg("view %d: %zu of %zu bytes differ from the single camera", k, d,
               tile);
    free(one);
  }
  pa_render_atlas_free(a);
}

/* Primitives view v's head camera draws at w x h (GL_PRIMITIVES_GENERATED
 * around it). */
static GLuint primitives(const pa_render_view *v, uint32_t w, uint32_t h) {
  char err[256];
  pa_render_cam *c = NULL;
  assert_int_equal(pa_render_cam_create(&c, w, h, err, sizeof err), 0);
  uint8_t *img = malloc((size_t)w * h * 3);
  assert_non_null(img);
  GLuint q, n = 0;
  glGenQueries(1, &q);
  glBeginQuery(GL_PRIMITIVES_GENERATED, q);
  if (pa_render_cam_render(c, scene, v, img, err, sizeof err) != 0)
    fail_msg("camera: %s", err);
  glEndQuery(GL_PRIMITIVES_GENERATED);
  glGetQueryObjectuiv(q, GL_QUERY_RESULT, &n);
  glDeleteQueries(1, &q);
  free(img);
  pa_render_cam_free(c);
  return n;
}

/* A robot a few pixels wide is drawn with cylinders of 8 sides, not 24
 * (its outline within a third of a pixel of the round one): the same view
 * draws fewer primitives at 84 x 84 than at 640 x 480, by at least what
 * one robot's body and neck save. */
static void test_small_robots_fewer_sides(void **state) {
  (void)state;
  pa_render_view v[2];
  views_of(v, 2); /* robot 1 looks over the room at the others */
  GLuint small = primitives(&v[1], 84, 84), big = primitives(&v[1], 640, 480);
  if (!(small + 100 <= big))
    fail_msg("84x84 drew %u primitives, 640x480 %u", small, big);
}

/* What robot k adds to view v's primitives at w x h. */
static GLuint robot_primitives(const pa_render_view *v, uint32_t k, uint32_t w,
                               uint32_t h) {
  GLuint with = primitives(v, w, h);
  poses[k].active = false;
  pa_render_scene_set_poses(scene, poses, NR);
  GLuint without = primitives(v, w, h);
  poses[k].active = true;
  pa_render_scene_set_poses(scene, poses, NR);
  return with - without;
}

/* At the coarsest level (a body 4 px in radius or less) a robot is its
 * body, its head and its shadow: the stripe, the neck and the lens, a pixel
 * wide or less there, are left out. The same robot nearer on screen (640 x
 * 480, the finest level) has all its parts. */
static void test_far_robot_body_and_head(void **state) {
  (void)state;
  pa_render_view v[2];
  views_of(v, 2);
  pa_render_pose keep = poses[2];
  /* 3.5 m from robot 1's eye: 3.1 px in radius at 84 px, 23 at 640 */
  poses[2] = (pa_render_pose){2.0, 3.5, 0.4, 0, true};
  pa_render_scene_set_poses(scene, poses, NR);
  GLuint far = robot_primitives(&v[1], 2, 84, 84);
  GLuint near = robot_primitives(&v[1], 2, 640, 480);
  poses[2] = keep;
  pa_render_scene_set_poses(scene, poses, NR);
  /* 8-sided body 32, head 12, shadow 2 (before: 102, with the rest) */
  if (far != 46 || near < 150)
    fail_msg("robot 2: %u primitives at 84 x 84 (body, head and shadow: 46), "
             "%u at 640 x 480 (every part: 150 or more)",
             far, near);
}

/* Primitives of view v drawn as a one-tile atlas of TW x TH (its culling
 * by the walls on, which the single camera does not do). */
static GLuint atlas_primitives(const pa_render_view *v) {
  char err[256];
  pa_render_atlas *a = atlas_new();
  uint8_t rgb[TW * TH * 3];
  GLuint q, n = 0;
  glGenQueries(1, &q);
  glBeginQuery(GL_PRIMITIVES_GENERATED, q);
  if (pa_render_atlas_render(a, scene, v, NULL, 1, rgb, err, sizeof err) != 0)
    fail_msg("atlas: %s", err);
  glEndQuery(GL_PRIMITIVES_GENERATED);
  glGetQueryObjectuiv(q, GL_QUERY_RESULT, &n);
  glDeleteQueries(1, &q);
  pa_render_atlas_free(a);
  return n;
}

/* What the ball at (x, y) adds to view v's primitives at w x h (atlas: as
 * a one-tile atlas, else a single camera). */
static GLuint ball_primitives_in(const pa_render_view *v, double x, double y,
                                 uint32_t w, uint32_t h, bool atlas) {
  const double xyz[3] = {x, y, 0};
  pa_render_scene_set_ssl(scene, 0, true, xyz);
  GLuint with = atlas ? atlas_primitives(v) : primitives(v, w, h);
  pa_render_scene_set_ssl(scene, 0, false, xyz);
  return with - (atlas ? atlas_primitives(v) : primitives(v, w, h));
}

static GLuint ball_primitives(const pa_render_view *v, double x, double y,
                              uint32_t w, uint32_t h) {
  return ball_primitives_in(v, x, y, w, h, false);
}

/* The ball is culled as a robot is (behind the eye: none of its triangles)
 * and drawn at the level of detail a robot of its size would have there:
 * 0.8 m ahead, the 8-segment sphere (96 triangles) at 84 x 84, where it is
 * 1.6 px in radius, the 16-segment one (384) at 640 x 480 (12 px). With
 * the ball in view of some tiles and behind the inner wall from others,
 * culling changes no pixel of the atlas. */
static void test_ball_culled_and_levels(void **state) {
  (void)state;
  pa_render_view v[2];
  views_of(v, 2);
  double fx = cos(v[1].yaw), fy = sin(v[1].yaw);
  double ax = v[1].x + 0.8 * fx, ay = v[1].y + 0.8 * fy;
  double bx = v[1].x - 1.0 * fx, by = v[1].y - 1.0 * fy;
  GLuint small = ball_primitives(&v[1], ax, ay, 84, 84);
  GLuint big = ball_primitives(&v[1], ax, ay, 640, 480);
  GLuint behind = ball_primitives(&v[1], bx, by, 84, 84);
  GLuint behind_big = ball_primitives(&v[1], bx, by, 640, 480);
  if (small != 96 || big != 384 || behind || behind_big)
    fail_msg("ball ahead: %u primitives at 84 x 84 (96), %u at 640 x 480 "
             "(384); behind: %u, %u (0)",
             small, big, behind, behind_big);
  /* east of the inner wall (x 3 to 3.2 m, y below 6 m): robot 0 faces it
   * from the west, 0.9 m from the ball; the single camera (no culling by
   * the walls) draws the ball, the atlas's tile does not; some of robots
   * 2.. east of the wall see it, some do not */
  pa_render_view all[NR];
  views_of(all, NR);
  GLuint seen = ball_primitives(&all[0], 3.6, 2.4, TW, TH);
  GLuint hidden = ball_primitives_in(&all[0], 3.6, 2.4, TW, TH, true);
  if (seen != 96 || hidden != 0)
    fail_msg("ball behind the wall from robot 0: %u primitives in its single "
             "camera (96), %u in its atlas tile (0)",
             seen, hidden);
  int in_view = 0;
  for (int i = 2; i < NR; i++)
    in_view += ball_primitives(&all[i], 3.6, 2.4, TW, TH) > 0;
  if (in_view < 1 || in_view > NR - 3)
    fail_msg("the ball in view of %d of robots 2..%d: want some, not all",
             in_view, NR - 1);
  const double xyz[3] = {3.6, 2.4, 0};
  pa_render_scene_set_ssl(scene, 0, true, xyz);
  culling_changes_nothing(scene);
  const double off[3] = {0, 0, 0};
  pa_render_scene_set_ssl(scene, 0, false, off);
}

/* A robot's soft shadow is two triangles (a disc of the fragments'
 * distance, not a fan and a ring of 22 to 70): shadows on draw two
 * primitives a robot more than shadows off, at any size, and some robot's
 * shadow is drawn. */
static void test_robot_shadow_two_triangles(void **state) {
  (void)state;
  pa_render_view v[2];
  views_of(v, 2);
  static const uint32_t size[2][2] = {{84, 84}, {640, 480}};
  for (int k = 0; k < 2; k++) {
    GLuint on = primitives(&v[1], size[k][0], size[k][1]);
    pa_render_scene_set_shadows(scene, false);
    GLuint off = primitives(&v[1], size[k][0], size[k][1]);
    pa_render_scene_set_shadows(scene, true);
    /* the single camera draws every robot's shadow, its own too */
    if (on - off != 2 * NR)
      fail_msg("%ux%u: %u primitives with shadows, %u without", size[k][0],
               size[k][1], on, off);
  }
}

/* Small views draw the floor's checkerboard per pixel on large quads: the
 * squares' look within a grey level (a square's edge a pixel off at most
 * here and there), in fewer primitives; 640 x 480 keeps the squares. */
static void test_floor_quads(void **state) {
  (void)state;
  pa_render_atlas *a = atlas_new();
  pa_render_view v[NR];
  views_of(v, NR);
  size_t bytes = (size_t)NR * TW * TH * 3;
  uint8_t *quads = atlas_all(a, v);
  GLuint with = atlas_primitives(&v[0]);
  pa_render_scene_set_floor_quads(scene, false);
  uint8_t *squares = atlas_all(a, v);
  GLuint without = atlas_primitives(&v[0]);
  GLuint big_without = primitives(&v[0], 640, 480);
  pa_render_scene_set_floor_quads(scene, true);
  GLuint big_with = primitives(&v[0], 640, 480);
  size_t off1 = differ(quads, squares, bytes, 1),
         off16 = differ(quads, squares, bytes, 16);
  print_message("floor quads: %zu of %zu bytes more than a grey level off, "
                "%zu more than 16; primitives %u against %u (640 x 480: %u, "
                "%u)\n",
                off1, bytes, off16, with, without, big_with, big_without);
  assert_true(off1 * 1000 < bytes); /* < 0.1 % (0.003 % here) */
  /* a square's edge a pixel over changes a byte by 16 at most (its two
   * greys); a wall's foot a pixel over (a depth tie) by more: a few, on
   * some CPU's rounding (none here) */
  assert_true(off16 * 20000 < bytes);
  assert_true(with + 10 < without); /* its floor squares: 2 triangles */
  assert_int_equal(big_with, big_without);
  free(quads), free(squares);
  pa_render_atlas_free(a);
}

/* More views than one framebuffer holds: further passes, same tiles. */
static void test_passes(void **state) {
  (void)state;
  char err[256];
  pa_render_atlas *a = NULL;
  assert_int_equal(pa_render_atlas_create(&a, 512, 512, err, sizeof err), 0);
  uint32_t per = pa_render_atlas_tiles_per_pass(a);
  assert_int_equal(per, 16);
  pa_render_atlas_free(a);
  check_tiles(per + 3, 512, 512);
}

/* n views (every third not drawn when holes) of w x h by a alone and by
 * the pool with a: byte for byte the same. */
static void check_pool(pa_render_atlas_pool *pool, uint32_t n, uint32_t w,
                       uint32_t h, bool holes) {
  char err[256];
  pa_render_atlas *a = NULL, *b = NULL;
  assert_int_equal(pa_render_atlas_create(&a, w, h, err, sizeof err), 0);
  assert_int_equal(pa_render_atlas_create(&b, w, h, err, sizeof err), 0);
  pa_render_view *v = calloc(n, sizeof *v);
  bool *draw = calloc(n, sizeof *draw);
  size_t bytes = (size_t)n * w * h * 3;
  uint8_t *one = malloc(bytes), *many = malloc(bytes);
  assert_true(v && draw && one && many);
  views_of(v, n);
  for (uint32_t i = 0; i < n; i++)
    draw[i] = !holes || i % 3 != 1;
  memset(many, 0xab, bytes); /* every byte written */
  if (pa_render_atlas_render(a, scene, v, draw, n, one, err, sizeof err) ||
      pa_render_atlas_pool_render(pool, b, scene, v, draw, n, many, err,
                                  sizeof err))
    fail_msg("atlas: %s", err);
  size_t d = differ(one, many, bytes, 0);
  if (d)
    fail_msg("%u views of %ux%u, %u helpers: %zu of %zu bytes differ", n, w, h,
             pa_render_atlas_pool_helpers(pool), d, bytes);
  free(one), free(many), free(v), free(draw);
  pa_render_atlas_free(a);
  pa_render_atlas_free(b);
}

/* The helpers draw the last rows of tiles in their own contexts, with
 * the scene's poses, SSL field, ball and switches of each call. */
static void test_pool_same_bytes(void **state) {
  (void)state;
  char err[256];
  for (uint32_t helpers = 1; helpers <= 3; helpers += 2) {
    pa_render_atlas_pool *pool = NULL;
    assert_int_equal(
        pa_render_atlas_pool_create(&pool, helpers, err, sizeof err), 0);
    assert_int_equal(pa_render_atlas_pool_helpers(pool), helpers);
    assert_int_equal(pa_render_atlas_pool_key(pool), 0);
    check_pool(pool, NR, TW, TH, false); /* no scene yet: the caller alone */
    assert_int_equal(pa_render_atlas_pool_build(pool, &grid, infos, NR, NULL, 0,
                                                7, err, sizeof err),
                     0);
    assert_int_equal(pa_render_atlas_pool_key(pool), 7);
    check_pool(pool, NR, TW, TH, false);
    check_pool(pool, NR, TW, TH, true);
    check_pool(pool, 5, 64, 48, false); /* a partly filled last row */
    check_pool(pool, 2, 84, 84, false); /* fewer rows than contexts */
    /* a helper's atlas made for more columns: its tiles where a's are */
    check_pool(pool, 6, TW, TH, false);
    /* what the tick changes: poses, the SSL field and ball, the switches */
    pa_render_pose moved[NR];
    memcpy(moved, poses, sizeof moved);
    for (int i = 2; i < NR; i++)
      moved[i].theta += 0.9, moved[i].x += 0.2;
    moved[5].active = false;
    pa_render_scene_set_poses(scene, moved, NR);
    const double ball[3] = {4.5, 2.0, 0};
    pa_render_scene_set_ssl(scene, 'B', true, ball);
    pa_render_scene_set_shadows(scene, false);
    check_pool(pool, NR, TW, TH, false);
    pa_render_scene_set_shadows(scene, true);
    pa_render_scene_set_ssl(scene, 0, false, ball);
    pa_render_scene_set_poses(scene, poses, NR);
    check_pool(pool, NR, TW, TH, false);
    pa_render_atlas_pool_free(pool);
  }
  pa_render_atlas_pool *pool = NULL;
  assert_int_equal(pa_render_atlas_pool_create(&pool, 0, err, sizeof err), 0);
  check_pool(pool, NR, TW, TH, false); /* no helpers */
  pa_render_atlas_pool_free(pool);
  check_pool(NULL, NR, TW, TH, false);
  assert_int_equal(pa_render_atlas_pool_create(
                       &pool, PA_RENDER_ATLAS_POOL_MAX + 1, err, sizeof err),
                   -1);
  assert_null(pool);
  assert_non_null(strstr(err, "helpers is more than"));
  assert_int_equal(pa_render_gl_check("after", err, sizeof err), 0);
}

/* The split follows the last batch's times: half the way to equal times,
 * by whole tiles, not for less than half a tile, a tile a part at least. */
static void test_pool_balance(void **state) {
  (void)state;
  uint32_t e[4] = {0, 32, 64};
  int64_t ns[3] = {6000000, 4000000};
  pa_render_atlas_pool_balance(e, 2, ns); /* 25.6 even: half the way */
  assert_int_equal(e[1], 29);
  ns[0] = 4000000;
  pa_render_atlas_pool_balance(e, 2, ns); /* 29 and 35 tiles, as long: kept */
  assert_int_equal(e[1], 29);
  e[1] = 32, ns[0] = 5050000, ns[1] = 5000000; /* 31.84: within half a tile */
  pa_render_atlas_pool_balance(e, 2, ns);
  assert_int_equal(e[1], 32);
  ns[0] = 0; /* nothing to go by */
  pa_render_atlas_pool_balance(e, 2, ns);
  assert_int_equal(e[1], 32);
  ns[0] = 1000000000, ns[1] = 1;
  for (int i = 0; i < 20; i++)
    pa_render_atlas_pool_balance(e, 2, ns);
  assert_int_equal(e[1], 1); /* a tile for the caller still */
  ns[0] = 1, ns[1] = 1000000000;
  for (int i = 0; i < 20; i++)
    pa_render_atlas_pool_balance(e, 2, ns);
  assert_int_equal(e[1], 63);
  uint32_t f[4] = {0, 10, 20, 30};
  int64_t even[3] = {7, 7, 7}, slow_mid[3] = {1000, 4000, 1000};
  pa_render_atlas_pool_balance(f, 3, even);
  assert_int_equal(f[1], 10);
  assert_int_equal(f[2], 20);
  pa_render_atlas_pool_balance(f, 3, slow_mid); /* 13.3, 16.7 even */
  assert_int_equal(f[1], 12);
  assert_int_equal(f[2], 18);
  assert_int_equal(f[3], 30);
}

/* A split anywhere, within a row too (both contexts clear and read it
 * back, each copies out its own tiles): the same bytes. */
static void test_pool_split_by_tile(void **state) {
  (void)state;
  char err[256];
  pa_render_atlas_pool *pool = NULL;
  assert_int_equal(pa_render_atlas_pool_create(&pool, 1, err, sizeof err), 0);
  assert_int_equal(pa_render_atlas_pool_build(pool, &grid, infos, NR, NULL, 0,
                                              9, err, sizeof err),
                   0);
  uint32_t got[PA_RENDER_ATLAS_POOL_MAX + 2];
  assert_int_equal(pa_render_atlas_pool_ends(pool, got), 0); /* none yet */
  const uint32_t at[] = {1, 5, 7, 12, 23};
  for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
    uint32_t e[3] = {0, at[i], NR};
    assert_int_equal(pa_render_atlas_pool_set_ends(pool, NR, 2, e), 0);
    check_pool(pool, NR, TW, TH, i % 2 == 1);
    assert_int_equal(pa_render_atlas_pool_ends(pool, got), 2);
    assert_int_equal(got[1], at[i]); /* kept: fixed */
  }
  uint32_t bad[4][3] = {{0, 0, NR}, {0, NR, NR}, {1, 5, NR}, {0, 5, NR + 1}};
  for (int i = 0; i < 4; i++)
    assert_int_equal(pa_render_atlas_pool_set_ends(pool, NR, 2, bad[i]), -1);
  uint32_t three[4] = {0, 5, 9, NR};
  assert_int_equal(pa_render_atlas_pool_set_ends(pool, NR, 3, three), -1);
  assert_int_equal(pa_render_atlas_pool_ends(pool, got), 2);
  assert_int_equal(got[1], 23); /* unchanged by the refusals */
  /* balanced again: rows evenly first, then wherever the times put it,
   * the same bytes each batch */
  assert_int_equal(pa_render_atlas_pool_set_ends(pool, 0, 0, NULL), 0);
  assert_int_equal(pa_render_atlas_pool_ends(pool, got), 0);
  for (int i = 0; i < 6; i++) {
    check_pool(pool, NR, TW, TH, false);
    assert_int_equal(pa_render_atlas_pool_ends(pool, got), 2);
    assert_true(got[1] >= 1 && got[1] < NR);
  }
  pa_render_atlas_pool_free(pool);
}

static void test_bad_input(void **state) {
  (void)state;
  char err[256];
  pa_render_atlas *a = NULL;
  assert_int_equal(pa_render_atlas_create(&a, 0, 84, err, sizeof err), -1);
  assert_non_null(strstr(err, "outside 1..1024"));
  assert_null(a);
  assert_int_equal(pa_render_atlas_create(&a, 84, 100000, err, sizeof err), -1);
  assert_non_null(strstr(err, "84x100000"));
  assert_int_equal(pa_render_atlas_create(&a, 8, 8, err, sizeof err), 0);
  pa_render_view v[2];
  views_of(v, 2);
  uint8_t rgb[2 * 8 * 8 * 3];
  assert_int_equal(
      pa_render_atlas_render(a, scene, v, NULL, 0, rgb, err, sizeof err), -1);
  assert_non_null(strstr(err, "0 views"));
  assert_int_equal(pa_render_atlas_render(a, scene, v, NULL,
                                          PA_RENDER_ATLAS_MAX_TILES + 1, rgb,
                                          err, sizeof err),
                   -1);
  v[1].fov = 0;
  assert_int_equal(
      pa_render_atlas_render(a, scene, v, NULL, 2, rgb, err, sizeof err), -1);
  assert_non_null(strstr(err, "view 1 is bad"));
  v[1].fov = 1, v[1].x = NAN;
  assert_int_equal(
      pa_render_atlas_render(a, scene, v, NULL, 2, rgb, err, sizeof err), -1);
  v[1].x = 1;
  /* parts: an empty range, past the views, more views than one pass */
  assert_int_equal(pa_render_atlas_render_part(a, scene, v, NULL, 2, 1, 1, rgb,
                                               err, sizeof err),
                   -1);
  assert_non_null(strstr(err, "part [1, 1) of 2 views"));
  assert_int_equal(pa_render_atlas_render_part(a, scene, v, NULL, 2, 0, 3, rgb,
                                               err, sizeof err),
                   -1);
  assert_int_equal(pa_render_atlas_render_part(
                       a, scene, v, NULL, pa_render_atlas_tiles_per_pass(a) + 1,
                       0, 1, rgb, err, sizeof err),
                   -1);
  assert_non_null(strstr(err, "not within one pass"));
  assert_int_equal(pa_render_atlas_render_part(a, scene, v, NULL, 2, 1, 2, rgb,
                                               err, sizeof err),
                   0);
  assert_int_equal(pa_render_gl_check("after", err, sizeof err), 0);
  pa_render_atlas_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tiles_equal_single_cameras),
      cmocka_unit_test(test_tiles_are_their_robots),
      cmocka_unit_test(test_culling_changes_nothing),
      cmocka_unit_test(test_eye_inside_a_head),
      cmocka_unit_test(test_floor_quads),
      cmocka_unit_test(test_small_robots_fewer_sides),
      cmocka_unit_test(test_robot_shadow_two_triangles),
      cmocka_unit_test(test_far_robot_body_and_head),
      cmocka_unit_test(test_ball_culled_and_levels),
      cmocka_unit_test(test_passes),
      cmocka_unit_test(test_pool_same_bytes),
      cmocka_unit_test(test_pool_balance),
      cmocka_unit_test(test_pool_split_by_tile),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
