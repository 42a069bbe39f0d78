/*
 * test_map_world.c - world files: every field, defaults, map forms (default,
 * path, inline), the shipped example, and errors at file:line:column.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "pa_map.h"
#include "test_map_util.h"
#include "testutil.h"

static char errbuf[2048];
static char wpath[512];

static void write_world(const char *text) {
  snprintf(wpath, sizeof wpath, "%s/w.yaml", pa_test_tmpdir());
  FILE *f = fopen(wpath, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

static void test_every_field(void **state) {
  (void)state;
  write_world(
      "map: default\n"
      "unknown_blocks: false\n"
      "robots:\n"
      "  - name: robot0\n"
      "    pose: [1.5, -2.0, 0.5]\n"
      "    drive: omni\n"
      "    radius: 0.25\n"
      "    wheel_base: 0.33\n"
      "    height: 0.4\n"
      "    head_height: 0.6\n"
      "    colour: [40, 110, 220, 128]\n"
      "    limits: {max_v: 1.5, max_vy: 0.7, max_w: 2.5, acc_v: 3.0, dec_v: 5.0,\n"
      "             acc_w: 9.0, dec_w: 13.0, head_limit: 1.2, max_head_rate: 2.0}\n"
      "    laser: {beams: 720, range_min: 0.1, range_max: 20.0, noise: 0.02}\n"
      "    camera: {width: 320, height: 200, fov: 90}\n"
      "  - pose: [0, 0]\n"
      "obstacles:\n"
      "  - {name: crate1, shape: box, pose: [1.0, 2.0, 0.3], size: [0.5, 0.4],\n"
      "     height: 0.7, colour: [160, 110, 60]}\n"
      "  - {name: barrel, shape: circle, pose: [-1.0, 1.5, 0], radius: 0.2}\n"
      "  - {shape: circle, pose: [3, 3], radius: 0.1}\n");
  pa_world w;
  if (pa_world_load(wpath, &w, errbuf, sizeof errbuf)) fail_msg("%s", errbuf);
  assert_string_equal(w.map.image, "");
  assert_false(w.unknown_blocks);
  assert_int_equal(w.robot_count, 2);
  const pa_robot_def *r = &w.robots[0];
  assert_string_equal(r->name, "robot0");
  assert_true(r->x == 1.5 && r->y == -2.0 && r->theta == 0.5);
  assert_int_equal(r->drive, 1);
  assert_true(r->radius == 0.25 && r->height == 0.4 && r->head_height == 0.6);
  assert_true(r->wheel_base == 0.33);
  assert_int_equal(r->colour[0], 40);
  assert_int_equal(r->colour[1], 110);
  assert_int_equal(r->colour[2], 220);
  assert_int_equal(r->colour[3], 128);
  tm_expect_limits(r, 1.5, 0.7, 2.5, 3.0, 5.0, 9.0, 13.0, 1.2, 2.0);
  tm_expect_sensors(r, 720, 0.1, 20.0, 0.02, 320, 200, M_PI / 2, 1e-12);
  /* The second robot: defaults, named by index, theta 0. */
  pa_robot_def def = pa_robot_def_default();
  r = &w.robots[1];
  assert_string_equal(r->name, "robot1");
  assert_true(r->x == 0 && r->y == 0 && r->theta == 0);
  assert_true(r->radius == def.radius && r->max_w == def.max_w &&
              r->laser.beams == def.laser.beams &&
              r->camera.fov == def.camera.fov && r->drive == 0);
  assert_memory_equal(r->colour, def.colour, 4);
  assert_int_equal(w.obstacle_count, 3);
  const pa_obstacle_def *o = &w.obstacles[0];
  assert_string_equal(o->name, "crate1");
  assert_int_equal(o->shape, 0);
  assert_true(o->x == 1.0 && o->y == 2.0 && o->theta == 0.3);
  assert_true(o->size_x == 0.5 && o->size_y == 0.4 && o->height == 0.7);
  assert_int_equal(o->colour[0], 160);
  assert_int_equal(o->colour[3], 255);
  o = &w.obstacles[1];
  assert_string_equal(o->name, "barrel");
  assert_int_equal(o->shape, 1);
  assert_true(o->radius == 0.2 && o->height == 0.5);
  assert_string_equal(w.obstacles[2].name, "obstacle2");
  pa_world_free(&w);

  /* No robots key: one default robot0. */
  write_world("map: default\n");
  assert_int_equal(pa_world_load(wpath, &w, errbuf, sizeof errbuf), 0);
  assert_int_equal(w.robot_count, 1);
  assert_string_equal(w.robots[0].name, "robot0");
  assert_true(w.unknown_blocks);
  assert_int_equal(w.obstacle_count, 0);
  assert_null(w.obstacles);
  pa_world_free(&w);
}

static void test_map_forms(void **state) {
  (void)state;
  char dir[600], img[700], yml[700];
  snprintf(dir, sizeof dir, "%s/mp", pa_test_tmpdir());
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(img, sizeof img, "%s/m.pgm", dir);
  FILE *f = fopen(img, "wb");
  assert_non_null(f);
  fprintf(f, "P5\n2 2\n255\n");
  fputc(0, f); fputc(255, f); fputc(255, f); fputc(255, f);
  fclose(f);
  snprintf(yml, sizeof yml, "%s/m.yaml", dir);
  f = fopen(yml, "w");
  assert_non_null(f);
  fprintf(f, "image: m.pgm\nresolution: 0.5\norigin: [-1, -1, 0]\nnegate: 0\n"
             "occupied_thresh: 0.65\nfree_thresh: 0.196\n");
  fclose(f);
  pa_world w;
  /* A path relative to the world file. */
  write_world("map: mp/m.yaml\n");
  if (pa_world_load(wpath, &w, errbuf, sizeof errbuf)) fail_msg("%s", errbuf);
  assert_string_equal(w.map.image, img);
  assert_true(w.map.resolution == 0.5);
  pa_grid g;
  assert_int_equal(pa_map_load(&w.map, &g, errbuf, sizeof errbuf), 0);
  assert_int_equal(g.cells[2], 100);
  pa_grid_free(&g);
  pa_world_free(&w);
  /* Inline: image relative to the world file. */
  write_world("map: {image: mp/m.pgm, resolution: 0.25, origin: [0, 0, 0],\n"
              "      negate: 1, occupied_thresh: 0.6, free_thresh: 0.2, mode: scale}\n");
  if (pa_world_load(wpath, &w, errbuf, sizeof errbuf)) fail_msg("%s", errbuf);
  assert_string_equal(w.map.image, img);
  assert_true(w.map.resolution == 0.25 && w.map.negate == 1 &&
              w.map.mode == PA_MAP_SCALE);
  pa_world_free(&w);
  /* A missing map file is reported at the map key, with the cause. */
  write_world("robots: []\n");
  write_world("unknown_blocks: true\nmap: mp/nope.yaml\n");
  assert_int_equal(pa_world_load(wpath, &w, errbuf, sizeof errbuf), -1);
  assert_non_null(strstr(errbuf, "w.yaml:2:6: map:"));
  assert_non_null(strstr(errbuf, "nope.yaml: cannot open"));
  /* The shipped example. */
  char ex[1024];
  pa_test_src(ex, sizeof ex, "maps/example.world.yaml");
  if (pa_world_load(ex, &w, errbuf, sizeof errbuf)) fail_msg("%s", errbuf);
  assert_int_equal(w.robot_count, 2);
  assert_int_equal(w.obstacle_count, 3);
  assert_string_equal(w.robots[1].name, "scout");
  assert_int_equal(w.robots[1].drive, 1);
  pa_world_free(&w);
}

static void expect_err(const char *text, const char *want) {
  write_world(text);
  pa_world w;
  errbuf[0] = '\0';
  if (pa_world_load(wpath, &w, errbuf, sizeof errbuf) == 0)
    fail_msg("accepted:\n%s", text);
  if (!strstr(errbuf, want)) fail_msg("error '%s' lacks '%s'", errbuf, want);
  assert_null(w.robots);
  assert_null(w.obstacles);
}

#define R "robots:\n  - name: a\n    pose: [0, 0, 0]\n"

static void test_errors(void **state) {
  (void)state;
  pa_world w;
  assert_int_equal(pa_world_load("/nonexistent/w.yaml", &w, errbuf, sizeof errbuf),
                   -1);
  assert_non_null(strstr(errbuf, "/nonexistent/w.yaml: cannot open"));
  static const struct {
    const char *text, *want;
  } bad[] = {
      {"robots: [\n", "w.yaml:2:1: invalid YAML"},
      {"mapp: default\n", "w.yaml:1:1: world: unknown key 'mapp'"},
      {"- 1\n", "w.yaml:1:1: world: expected a mapping"},
      {"map: [1]\n", "w.yaml:1:6: map: expected 'default'"},
      {"unknown_blocks: 3\n",
       "w.yaml:1:17: unknown_blocks: expected true or false"},
      {"robots: {a: 1}\n", "w.yaml:1:9: robots: expected a sequence"},
      {"robots: []\n", "robots: need 1 to 256 robots, got 0"},
      {R "    colour: [1, 2]\n", "w.yaml:4:13: colour: expected [r, g, b]"},
      {R "    colour: [1, 2, 256]\n",
       "w.yaml:4:20: colour[2] must be in [0, 255]"},
      {R "    radius: -1\n", "w.yaml:4:13: radius must be in (0, 5]"},
      {R "    radius: big\n",
       "w.yaml:4:13: radius: expected a number, got 'big'"},
      {R "    radius: nan\n", "radius: nan is not a finite number"},
      {R "    wheel_base: 0\n", "w.yaml:4:17: wheel_base must be in (0, 10]"},
      {R "    drive: tank\n",
       "w.yaml:4:12: drive: expected differential or omni"},
      {R "    wheels: 4\n", "w.yaml:4:5: robot: unknown key 'wheels'"},
      {R "    limits: {max_v: 0}\n",
       "w.yaml:4:21: limits.max_v must be in (0, 100]"},
      {R "    limits: {max_vel: 1}\n", "limits: unknown key 'max_vel'"},
      {R "    limits: {head_limit: 4}\n",
       "limits.head_limit must be in [0, 3.14159"},
      {R "    laser: {beams: 0}\n",
       "w.yaml:4:20: laser.beams must be in [1, 65536]"},
      {R "    laser: {beams: 1.5}\n",
       "laser.beams: expected an integer, got '1.5'"},
      {R "    laser: {range_min: 5, range_max: 2}\n",
       "laser: range_min (5) must be below range_max (2)"},
      {R "    laser: {noise: -1}\n", "laser.noise must be in [0, 100]"},
      {R "    camera: {fov: 180}\n",
       "camera.fov (degrees) must be in (0, 180)"},
      {R "    camera: {width: 0}\n", "camera.width must be in [1, 4096]"},
      {R "    camera: {depth: 1}\n", "camera: unknown key 'depth'"},
      {R "    name: b\n", "w.yaml:4:5: robot: duplicate key 'name'"},
      {"robots:\n  - {pose: [1]}\n",
       "w.yaml:2:12: pose: expected 2 to 3 numbers, got 1"},
      {"robots:\n  - {pose: [1, 2, 3, 4]}\n",
       "pose: expected 2 to 3 numbers, got 4"},
      {"robots:\n  - {name: 'a b', pose: [0, 0]}\n",
       "robot name: 'a b' may only use"},
      {"robots:\n  - {name: '', pose: [0, 0]}\n", "robot name: empty"},
      {"robots:\n  - {name: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, pose: [0, "
       "0]}\n",
       "robot name: longer than 31 characters"},
      {"robots:\n  - {name: a, pose: [0, 0]}\n  - {name: a, pose: [1, 0]}\n",
       "w.yaml:3:5: duplicate name 'a' (already robot 0)"},
      {"robots:\n  - {name: robot1, pose: [0, 0]}\n  - {pose: [1, 0]}\n",
       "duplicate name 'robot1'"},
      {R "obstacles:\n  - {name: a, shape: box, pose: [0, 0], size: [1, 1]}\n",
       "w.yaml:5:5: duplicate name 'a' (already robot 0)"},
      {"obstacles:\n  - {shape: box, pose: [0, 0], size: [1, 1]}\n"
       "  - {name: obstacle0, shape: circle, pose: [0, 0], radius: 1}\n",
       "duplicate name 'obstacle0' (already obstacle 0)"},
      {"obstacles: 3\n", "obstacles: expected a sequence"},
      {"obstacles:\n  - {pose: [0, 0]}\n",
       "w.yaml:2:5: obstacle 'obstacle0': missing key 'shape'"},
      {"obstacles:\n  - {shape: cone, pose: [0, 0]}\n",
       "w.yaml:2:13: shape: expected box or circle"},
      {"obstacles:\n  - {shape: box, pose: [0, 0]}\n",
       "box 'obstacle0': missing key 'size'"},
      {"obstacles:\n  - {shape: box, pose: [0, 0], size: [1, 0]}\n",
       "size must be in (0, 1000] m"},
      {"obstacles:\n  - {shape: box, pose: [0, 0], size: [1, 1], radius: 2}\n",
       "a box takes size"},
      {"obstacles:\n  - {shape: circle, pose: [0, 0]}\n",
       "circle 'obstacle0': missing key 'radius'"},
      {"obstacles:\n  - {shape: circle, pose: [0, 0], radius: 1, size: [1, "
       "1]}\n",
       "a circle takes radius"},
      {"obstacles:\n  - {shape: circle, pose: [0, 0], radius: 1, height: 0}\n",
       "height must be in (0, 100]"},
      {"obstacles:\n  - {shape: circle, radius: 1}\n", "missing key 'pose'"},
      {"obstacles:\n  - {shape: circle, pose: [0, 0], radius: 1, mass: 3}\n",
       "obstacle: unknown key 'mass'"},
      {"map: {image: x.png, resolution: 0.1}\n", "map: missing key 'origin'"},
      {"map: {image: x.png, resolution: -1, origin: [0,0,0], negate: 0,"
       " occupied_thresh: 0.65, free_thresh: 0.196}\n",
       "w.yaml:1:33: resolution must be in [0.0001, 1000] m"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    expect_err(bad[i].text, bad[i].want);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_field),
      cmocka_unit_test(test_map_forms),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
