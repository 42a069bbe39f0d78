/* test_sim_place.c - where a robot without a pose starts (the free pose
 * nearest (0, 0), never a refused map), --robot_pose and --map_unknown, and
 * map.yaml keys map_server does not read (warned, ignored). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sim_office.h"
#include "test_sim_util.h"

/* ---- a private directory for map.yaml files, removed with its files ---- */

static char dir[64];
static char files[8][128];
static int nfiles;

static int dir_setup(void **st) {
  (void)st;
  snprintf(dir, sizeof dir, "/tmp/pa-place-XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int dir_teardown(void **st) {
  (void)st;
  for (int i = 0; i < nfiles; i++)
    unlink(files[i]);
  nfiles = 0;
  return rmdir(dir);
}

static const char *write_file(const char *name, const char *text) {
  assert_true(nfiles < 8);
  char *p = files[nfiles];
  snprintf(p, sizeof files[0], "%s/%s", dir, name);
  bool seen = false;
  for (int i = 0; i < nfiles; i++)
    seen = seen || !strcmp(files[i], p);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  if (!seen)
    nfiles++;
  return p;
}

/* ---- map.yaml keys ---- */

static const char *const base_yaml = "image: m.pgm\nresolution: 0.05\n"
                                     "origin: [-1.0, -1.0, 0.0]\nnegate: 0\n"
                                     "occupied_thresh: 0.65\n"
                                     "free_thresh: 0.196\n";

static void test_extra_keys_ignored(void **st) {
  (void)st;
  char text[512];
  snprintf(text, sizeof text, "%smap_type: occupancy\nfoo: [1, 2]\n",
           base_yaml);
  const char *y = write_file("extra.yaml", text);
  pa_map_def def = pa_map_def_default();
  char err[512] = "";
  assert_int_equal(pa_map_parse_yaml(y, &def, err, sizeof err), 0);
  assert_string_equal(def.ignored_keys, "map_type, foo");
  assert_true(def.resolution == 0.05 && def.origin[0] == -1.0);
  /* the keys it reads are still checked; a duplicate still refused */
  snprintf(text, sizeof text, "%sresolution: 0.1\n", base_yaml);
  y = write_file("dup.yaml", text);
  assert_int_equal(pa_map_parse_yaml(y, &def, err, sizeof err), -1);
  assert_non_null(strstr(err, "duplicate key 'resolution'"));
  y = write_file("plain.yaml", base_yaml);
  assert_int_equal(pa_map_parse_yaml(y, &def, err, sizeof err), 0);
  assert_string_equal(def.ignored_keys, "");
  /* a world file's inline map stays strict (docs/world-format.md) */
  y = write_file("w.yaml", "map:\n  image: m.pgm\n  resolution: 0.05\n"
                           "  origin: [0, 0, 0]\n  negate: 0\n"
                           "  occupied_thresh: 0.65\n  free_thresh: 0.196\n"
                           "  map_type: occupancy\n");
  pa_world w;
  assert_int_equal(pa_world_load(y, &w, err, sizeof err), -1);
  assert_non_null(strstr(err, "unknown key 'map_type'"));
}

/* ---- the flags ---- */

static void test_flags_pose_and_unknown(void **st) {
  (void)st;
  const char *y = write_file("plain.yaml", base_yaml);
  pa_map_flags f = pa_map_flags_default();
  f.map_yaml = y;
  pa_world w;
  char err[512] = "";
  assert_int_equal(pa_map_flags_resolve(&f, &w, err, sizeof err), 0);
  assert_true(w.robots[0].place_near_origin); /* no pose given */
  assert_true(w.unknown_blocks);
  pa_world_free(&w);

  f.robot_pose = "1.5,-2,0.5";
  f.map_unknown = "free";
  assert_int_equal(pa_map_flags_resolve(&f, &w, err, sizeof err), 0);
  assert_false(w.robots[0].place_near_origin);
  assert_true(w.robots[0].x == 1.5 && w.robots[0].y == -2 &&
              w.robots[0].theta == 0.5);
  assert_false(w.unknown_blocks);
  pa_world_free(&w);
  f.map_unknown = "blocked";
  assert_int_equal(pa_map_flags_resolve(&f, &w, err, sizeof err), 0);
  assert_true(w.unknown_blocks);
  pa_world_free(&w);

  static const char *const bad_pose[] = {
      "1,2",     "1,2,3,4", "a,b,c",   "1,,2", "nan,0,0",
      "1e9,0,0", "1,2,3 ",  "inf,0,0", ",1,2", NULL};
  f.map_unknown = NULL;
  for (int i = 0; bad_pose[i]; i++) {
    f.robot_pose = bad_pose[i];
    err[0] = '\0';
    assert_int_equal(pa_map_flags_resolve(&f, &w, err, sizeof err), -1);
    assert_non_null(strstr(err, "--robot_pose"));
    assert_null(w.robots); /* nothing left allocated */
  }
  f.robot_pose = NULL;
  f.map_unknown = "maybe";
  assert_int_equal(pa_map_flags_resolve(&f, &w, err, sizeof err), -1);
  assert_non_null(strstr(err, "--map_unknown: expected blocked or free"));
  assert_null(w.robots);
}

/* ---- placement ---- */

/* A 5 m x 5 m room around (0, 0) (origin (-2.5, -2.5)). */
static void room(pa_grid *g) {
  ts_room(g, 100, 100, 0.05);
  g->origin_x = g->origin_y = -2.5;
}

static int make_seeded(pa_grid *g, pa_robot_def *r, size_t nr, uint32_t extra,
                       uint64_t seed, pa_sim_model *m, pa_sim_state *s,
                       char *err, size_t err_sz) {
  pa_world w;
  memset(&w, 0, sizeof w);
  w.robots = r;
  w.robot_count = nr;
  w.unknown_blocks = true;
  pa_sim_def d = pa_sim_def_default();
  d.robots = extra;
  d.seed = seed;
  if (d.max_robots < extra)
    d.max_robots = extra;
  int rc = pa_sim_model_init(m, &d, &w, g, err, err_sz);
  if (rc == 0 && pa_sim_state_init(m, s, err, err_sz) != 0) {
    pa_sim_model_free(m);
    return -1;
  }
  return rc;
}

static int make(pa_grid *g, pa_robot_def *r, size_t nr, uint32_t extra,
                pa_sim_model *m, pa_sim_state *s, char *err, size_t err_sz) {
  return make_seeded(g, r, nr, extra, 0, m, s, err, err_sz);
}

static pa_robot_def unplaced(void) {
  pa_robot_def r = pa_robot_def_default();
  r.place_near_origin = true;
  return r;
}

static void test_origin_free_keeps_origin(void **st) {
  (void)st;
  pa_grid g;
  room(&g);
  pa_robot_def r = unplaced();
  pa_sim_model m;
  pa_sim_state s;
  char err[256];
  assert_int_equal(make(&g, &r, 1, 1, &m, &s, err, sizeof err), 0);
  assert_true(s.rs[0].x == 0 && s.rs[0].y == 0);
  ts_free(&m, &s);
  pa_grid_free(&g);
}

static void test_blocked_origin_nearest(void **st) {
  (void)st;
  pa_grid g;
  room(&g);
  ts_block(&g, -0.5, -0.5, 0.5, 0.3); /* a pillar over (0, 0) */
  pa_robot_def r = unplaced();
  pa_sim_model m;
  pa_sim_state s;
  char err[256];
  assert_int_equal(make(&g, &r, 1, 1, &m, &s, err, sizeof err), 0);
  double x = s.rs[0].x, y = s.rs[0].y;
  double rad = s.info[0].radius;
  assert_true(pa_sim_clearance(&m, &s, 0, x, y, rad, 0, NULL, NULL) >= 0.05);
  /* nearest: above the pillar (its top edge 0.325 m, the cell edge 0.35 m),
   * not beside it (0.525 m or more) */
  assert_true(y > 0.3 && fabs(x) < 0.05);
  assert_true(hypot(x, y) < 0.35 + rad + 0.05 + 0.05);
  ts_free(&m, &s);
  /* the same map, the same pose */
  assert_int_equal(make(&g, &r, 1, 1, &m, &s, err, sizeof err), 0);
  assert_true(s.rs[0].x == x && s.rs[0].y == y);
  ts_free(&m, &s);
  /* an explicit pose on the pillar is refused by name */
  pa_robot_def e = pa_robot_def_default();
  assert_int_equal(make(&g, &e, 1, 1, &m, &s, err, sizeof err), -1);
  assert_non_null(strstr(err, "robot 'robot0' at (0, 0) overlaps a wall"));
  /* extra robots (--robots) still find places, clear of robot0 */
  assert_int_equal(make(&g, &r, 1, 4, &m, &s, err, sizeof err), 0);
  assert_true(s.rs[0].x == x && s.rs[0].y == y);
  for (uint32_t i = 0; i < 4; i++)
    assert_false(pa_sim_overlaps(&m, &s, i, s.rs[i].x, s.rs[i].y));
  ts_free(&m, &s);
  pa_grid_free(&g);
}

/* (0, 0) outside a map turned by its origin yaw: the pose is on the map, in
 * a free cell of the turned grid, at the nearest such cell's centre. */
static void test_origin_outside_yawed(void **st) {
  (void)st;
  pa_grid g;
  ts_room(&g, 60, 40, 0.05);
  g.origin_x = 3.0;
  g.origin_y = -1.0;
  g.origin_yaw = M_PI / 6;
  pa_robot_def r = unplaced();
  pa_sim_model m;
  pa_sim_state s;
  char err[256];
  assert_int_equal(make(&g, &r, 1, 1, &m, &s, err, sizeof err), 0);
  double x = s.rs[0].x, y = s.rs[0].y;
  int cx, cy;
  assert_true(pa_grid_world_to_cell(&g, x, y, &cx, &cy));
  assert_false(pa_grid_blocked(&g, cx, cy, true));
  assert_true(
      pa_sim_clearance(&m, &s, 0, x, y, s.info[0].radius, 0, NULL, NULL) >= 0);
  /* no free cell centre of the grid is nearer (0, 0) by more than one cell */
  double best = INFINITY;
  for (int j = 0; j < (int)g.height; j++)
    for (int i = 0; i < (int)g.width; i++) {
      double px, py;
      pa_grid_cell_center(&g, i, j, &px, &py);
      if (pa_sim_clearance(&m, &s, 0, px, py, s.info[0].radius + 0.05, 0, NULL,
                           NULL) >= 0)
        best = fmin(best, hypot(px, py));
    }
  assert_true(isfinite(best));
  assert_true(hypot(x, y) <= best + 1e-9);
  ts_free(&m, &s);
  pa_grid_free(&g);
}

static void test_no_free_place(void **st) {
  (void)st;
  pa_grid g;
  room(&g);
  memset(g.cells, PA_CELL_OCCUPIED, (size_t)g.width * g.height);
  pa_robot_def r = unplaced();
  pa_sim_model m;
  pa_sim_state s;
  char err[256] = "";
  assert_int_equal(make(&g, &r, 1, 1, &m, &s, err, sizeof err), -1);
  assert_non_null(strstr(err, "no free place on the map for robot 'robot0'"));
  pa_grid_free(&g);
}

/* 2048 x 2048 cells, (0, 0) deep in a 20 m x 20 m block: still a start, in
 * well under a second. */
static void test_big_map(void **st) {
  (void)st;
  pa_grid g;
  ts_room(&g, 2048, 2048, 0.05);
  g.origin_x = g.origin_y = -51.2;
  ts_block(&g, -10, -10, 10, 10);
  pa_robot_def r = unplaced();
  pa_sim_model m;
  pa_sim_state s;
  char err[256];
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  assert_int_equal(make(&g, &r, 1, 1, &m, &s, err, sizeof err), 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double x = s.rs[0].x, y = s.rs[0].y;
  /* the block's edge is 10.025 m out: the nearest pose is beside one side's
   * middle */
  double edge = fmax(fabs(x), fabs(y));
  assert_true(edge > 10.025 + s.info[0].radius &&
              edge < 10.025 + s.info[0].radius + 0.15);
  assert_true(fmin(fabs(x), fabs(y)) < 0.05);
  double init_s = (double)(t1.tv_sec - t0.tv_sec) +
                  (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  print_message("2048x2048 model with the search: %.2f s\n", init_s);
  ts_free(&m, &s);
  pa_grid_free(&g);
}

/* Is the centre of cell (cx, cy) a place for robot i by 5 cm, clear of the
 * walls and of robots 0..i-1 (the later ones ignored)? */
static bool free_before(const pa_sim_model *m, pa_sim_state *s, uint32_t i,
                        double x, double y) {
  double r = s->info[i].radius;
  s->ghosts = true; /* the walls and obstacles alone */
  double c = pa_sim_clearance(m, s, i, x, y, r, 0, NULL, NULL);
  s->ghosts = false;
  if (c < 0.05)
    return false;
  for (uint32_t j = 0; j < i; j++) {
    double rr = s->info[j].radius + r + 0.05;
    if (hypot(s->rs[j].x - x, s->rs[j].y - y) < rr)
      return false;
  }
  return true;
}

/* --robots extras start as robot 0 does: each on the free cell centre
 * nearest (0, 0) that the robots before it leave (no nearer one exists),
 * the same for every seed, heading as the template's. Seeded random spots
 * all over the room fail this. */
static void test_extras_nearest_in_order(void **st) {
  (void)st;
  pa_grid g;
  room(&g);
  ts_block(&g, -0.5, -0.5, 0.5, 0.3); /* a pillar over (0, 0) */
  ts_block(&g, -2.5, 0.9, -0.2, 1.0); /* a wall across the room's top */
  pa_robot_def r = unplaced();
  pa_sim_model m;
  pa_sim_state s;
  char err[256];
  enum { N = 40 };
  double pose[N][2];
  assert_int_equal(make_seeded(&g, &r, 1, N, 1, &m, &s, err, sizeof err), 0);
  assert_int_equal(s.robot_count, N);
  for (uint32_t i = 0; i < N; i++) {
    double x = s.rs[i].x, y = s.rs[i].y, d = hypot(x, y);
    pose[i][0] = x;
    pose[i][1] = y;
    assert_false(pa_sim_overlaps(&m, &s, i, x, y));
    assert_true(s.rs[i].theta == 0);
    assert_true(free_before(&m, &s, i, x, y));
    for (int cy = 0; cy < (int)g.height; cy++)
      for (int cx = 0; cx < (int)g.width; cx++) {
        double px, py;
        pa_grid_cell_center(&g, cx, cy, &px, &py);
        if (hypot(px, py) < d - 1e-9 && free_before(&m, &s, i, px, py)) {
          print_error("robot %u at (%g, %g): (%g, %g) is nearer and free\n", i,
                      x, y, px, py);
          fail();
        }
      }
  }
  ts_free(&m, &s);
  /* another seed: the same poses */
  assert_int_equal(make_seeded(&g, &r, 1, N, 77, &m, &s, err, sizeof err), 0);
  for (uint32_t i = 0; i < N; i++)
    assert_true(s.rs[i].x == pose[i][0] && s.rs[i].y == pose[i][1]);
  ts_free(&m, &s);
  pa_grid_free(&g);
}

/* World robots: those given no pose take the walk's places around those
 * given one (the given ones keep theirs, whatever their order). */
static void test_world_mix(void **st) {
  (void)st;
  pa_grid g;
  room(&g);
  pa_robot_def r[3] = {unplaced(), ts_robot("fixed", 0.6, 0, 0.5), unplaced()};
  snprintf(r[2].name, sizeof r[2].name, "robot2");
  pa_sim_model m;
  pa_sim_state s;
  char err[256];
  assert_int_equal(make(&g, r, 3, 6, &m, &s, err, sizeof err), 0);
  assert_true(s.rs[0].x == 0 && s.rs[0].y == 0); /* (0, 0) itself */
  assert_true(s.rs[1].x == 0.6 && s.rs[1].y == 0 && s.rs[1].theta == 0.5);
  for (uint32_t i = 0; i < 6; i++) {
    assert_false(pa_sim_overlaps(&m, &s, i, s.rs[i].x, s.rs[i].y));
    assert_true(hypot(s.rs[i].x, s.rs[i].y) < 1.5); /* packed round (0, 0) */
  }
  ts_free(&m, &s);
  /* full: a no-pose robot that finds no room is refused by name */
  pa_grid_free(&g);
  ts_room(&g, 20, 20, 0.05); /* 1 m x 1 m: room for a few */
  g.origin_x = g.origin_y = -0.5;
  pa_robot_def one = unplaced();
  assert_int_equal(make(&g, &one, 1, 40, &m, &s, err, sizeof err), -1);
  assert_non_null(strstr(err, "no free place on the map for robot 'robot"));
  pa_grid_free(&g);
}

/* 1000 robots on the 100 m office: every one placed, none overlapping,
 * packed round (0, 0), the model built in well under a second. */
static void test_thousand_office(void **st) {
  (void)st;
  pa_grid g;
  ts_office(&g, 2000, 2000);
  assert_non_null(g.cells);
  g.origin_x = g.origin_y = -50;
  pa_robot_def r = unplaced();
  pa_sim_model m;
  pa_sim_state s;
  char err[256];
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  assert_int_equal(make(&g, &r, 1, 1000, &m, &s, err, sizeof err), 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double far = 0;
  for (uint32_t i = 0; i < 1000; i++) {
    assert_false(pa_sim_overlaps(&m, &s, i, s.rs[i].x, s.rs[i].y));
    far = fmax(far, hypot(s.rs[i].x, s.rs[i].y));
  }
  double init_s = (double)(t1.tv_sec - t0.tv_sec) +
                  (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  print_message("1000 robots on the 2000x2000 office: model %.2f s, the "
                "farthest %.1f m from (0, 0)\n",
                init_s, far);
  assert_true(far < 30); /* random spots reach 50 m out */
  ts_free(&m, &s);
  pa_grid_free(&g);
}

/* A world file's robot without `pose` starts by (0, 0) like robot 0 of a
 * bare map; the robots with one keep theirs. */
static void test_world_file_no_pose(void **st) {
  (void)st;
  const char *y = write_file("nopose.yaml", "map: default\nrobots:\n"
                                            "  - {name: a}\n"
                                            "  - {name: b, pose: [1, 0, 2]}\n"
                                            "  - {name: c}\n");
  pa_world w;
  char err[512] = "";
  assert_int_equal(pa_world_load(y, &w, err, sizeof err), 0);
  assert_true(w.robots[0].place_near_origin && w.robots[2].place_near_origin);
  assert_false(w.robots[1].place_near_origin);
  pa_grid g;
  assert_int_equal(pa_map_load(&w.map, &g, err, sizeof err), 0);
  pa_sim_def d = pa_sim_def_default();
  pa_sim_model m;
  pa_sim_state s;
  assert_int_equal(pa_sim_model_init(&m, &d, &w, &g, err, sizeof err), 0);
  assert_int_equal(pa_sim_state_init(&m, &s, err, sizeof err), 0);
  assert_true(s.rs[1].x == 1 && s.rs[1].y == 0 && s.rs[1].theta == 2);
  for (uint32_t i = 0; i < 3; i++) {
    assert_false(pa_sim_overlaps(&m, &s, i, s.rs[i].x, s.rs[i].y));
    assert_true(hypot(s.rs[i].x, s.rs[i].y) < 1.2);
  }
  ts_free(&m, &s);
  pa_grid_free(&g);
  pa_world_free(&w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_extra_keys_ignored),
      cmocka_unit_test(test_flags_pose_and_unknown),
      cmocka_unit_test(test_origin_free_keeps_origin),
      cmocka_unit_test(test_blocked_origin_nearest),
      cmocka_unit_test(test_origin_outside_yawed),
      cmocka_unit_test(test_no_free_place),
      cmocka_unit_test(test_big_map),
      cmocka_unit_test(test_extras_nearest_in_order),
      cmocka_unit_test(test_world_mix),
      cmocka_unit_test(test_thousand_office),
      cmocka_unit_test(test_world_file_no_pose),
  };
  return cmocka_run_group_tests(tests, dir_setup, dir_teardown);
}
