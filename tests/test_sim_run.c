/* test_sim_run.c - determinism: a 10,000-tick lockstep run with several
 * robots, obstacles, laser noise and odometry drift hashes to a pinned
 * value (poses, odometry and every scan, bit for bit); snapshots whose
 * records could not come from this simulator are refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pa_shm.h"
#include "sim_int.h"
#include "test_sim_util.h"
#include "testutil.h"

/* Pinned: change only with a deliberate change of the physics or sensors. */
#define PINNED_HASH 0xc7c6cf24b0c3f586ull

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

static uint64_t run(int ticks, uint32_t threads, uint32_t extra) {
  pa_grid g;
  uint32_t side = extra > 0 ? 800 : 160; /* the busy world: 40 x 40 m */
  ts_room(&g, side, side, 0.05);
  ts_block(&g, 3.0, 3.0, 5.0, 3.3);
  ts_block(&g, 6.0, 1.0, 6.2, 4.0);
  pa_robot_def r[4] = {ts_robot("a", 1, 1, 0), ts_robot("b", 2, 6, 1),
                       ts_robot("c", 7, 7, -2), ts_robot("d", 4, 5, 3)};
  r[3].drive = PA_DRIVE_OMNI;
  pa_obstacle_def o[2] = {ts_box("box", 2, 3.5, 0.5, 0.6, 0.3),
                          ts_circle("can", 5, 6, 0.25)};
  pa_sim_def d = pa_sim_def_default();
  d.seed = 42;
  d.threads = threads;
  d.robots = 4 + extra; /* extras on free cells: several scans per tick */
  if (d.robots > d.max_robots)
    d.max_robots = d.robots;
  d.laser_noise = 0.01;
  d.odom_error[0] = d.odom_error[1] = d.odom_error[2] = 0.03;
  pa_sim_model m;
  pa_sim_state s;
  ts_make(&m, &s, &d, &g, r, 4, o, 2);
  assert_int_equal(s.threads, threads);
  assert_true(threads > 1 ? s.pool != NULL : s.pool == NULL);
  pa_grid_free(&g);
  uint64_t h = 0xcbf29ce484222325ull, lcg = 7;
  for (int t = 0; t < ticks; t++) {
    if (t % 37 == 0)
      for (uint32_t i = 0; i < s.robot_count; i++) {
        double v = 1.6 * pa_sim_rng_uniform(&lcg) - 0.4;
        double vy = i == 3 ? pa_sim_rng_uniform(&lcg) - 0.5 : 0;
        double w = 4 * pa_sim_rng_uniform(&lcg) - 2;
        double hd = 2 * pa_sim_rng_uniform(&lcg) - 1;
        assert_int_equal(ts_cmd(&m, &s, PA_OP_SET_CMD, i, v, vy, w, hd), PA_OK);
      }
    if (t == 5000) /* a teleport in the middle of the run */
      assert_int_equal(ts_cmd(&m, &s, PA_OP_TELEPORT, 0, 1.0, 1.0, 0.5, 0),
                       PA_OK);
    pa_sim_step(&m, &s);
    for (uint32_t i = 0; i < s.robot_count; i++) {
      const pa_robot_state *q = &s.rs[i];
      double v[] = {q->x, q->y, q->theta, q->odom_x, q->odom_y, q->odom_theta,
                    q->v, q->w, q->head};
      h = fnv(h, v, sizeof v);
    }
    for (uint32_t k = 0; k < s.scan_due_count; k++) {
      uint32_t i = s.scan_due[k];
      h = fnv(h, s.ranges + (size_t)i * m.beam_cap,
              s.info[i].laser_beams * sizeof(float));
      h = fnv(h, &s.rs[i].scan_seq, sizeof s.rs[i].scan_seq);
    }
  }
  assert_true(s.bumps > 0); /* the run exercises collisions */
  if (threads > 1 && extra > 0) /* every move ran on the threads */
    assert_true(s.alone_moves == (uint64_t)ticks * s.robot_count);
  if (threads == 1)
    assert_true(s.alone_moves == 0);
  ts_free(&m, &s);
  return h;
}

static void test_determinism(void **st) {
  (void)st;
  uint64_t a = run(10000, 1, 0), b = run(10000, 1, 0);
  printf("determinism hash: 0x%016" PRIx64 "\n", a);
  assert_true(a == b);
  if (PINNED_HASH != 0)
    assert_true(a == PINNED_HASH);
  assert_true(run(9999, 1, 0) != a);
}

/* The caster path changes nothing: the pinned hash on every path this CPU
 * has (a path it lacks is skipped by name). */
static void test_determinism_every_path(void **st) {
  (void)st;
  for (int p = PA_SIM_SIMD_AVX512; p <= PA_SIM_SIMD_SCALAR; p++) {
    if (pa_sim_simd_set((pa_sim_simd)p) != 0) {
      printf("SKIPPED: the %s caster: this CPU or build lacks it\n",
             pa_sim_simd_name((pa_sim_simd)p));
      continue;
    }
    uint64_t h = run(10000, 1, 0);
    printf("determinism hash, %s caster: 0x%016" PRIx64 "\n",
           pa_sim_simd_name((pa_sim_simd)p), h);
    if (PINNED_HASH != 0)
      assert_true(h == PINNED_HASH);
  }
  assert_int_equal(pa_sim_simd_set(PA_SIM_SIMD_AUTO), 0);
}

/* Threads change nothing: the pinned world with 2 and 3 threads, and
 * busier ones (100 and 300 robots: 5 and 15 scans per tick, robots
 * shadowing and bumping each other, every move in the strips of space on
 * the threads) with 1, 2 and 4 threads hash the same. */
static void test_threads_same(void **st) {
  (void)st;
  uint64_t one = run(10000, 1, 0);
  assert_true(run(10000, 2, 0) == one);
  assert_true(run(10000, 3, 0) == one);
  uint64_t hundred = run(3000, 1, 96);
  assert_true(run(3000, 2, 96) == hundred);
  uint64_t busy = run(2000, 1, 296);
  assert_true(busy != one && busy != hundred);
  assert_true(run(2000, 2, 296) == busy);
  assert_true(run(2000, 4, 296) == busy);
}

/* One scan as its record would carry it: robot, seq, tick, pose, ranges. */
static uint64_t scan_hash(const pa_sim_scan_stamp *t, const float *ranges) {
  uint64_t h = fnv(0xcbf29ce484222325ull, &t->robot, sizeof t->robot);
  h = fnv(h, &t->seq, sizeof t->seq);
  h = fnv(h, &t->tick, sizeof t->tick);
  double pose[] = {t->x, t->y, t->theta};
  h = fnv(h, pose, sizeof pose);
  return fnv(h, ranges, t->beams * sizeof(float));
}

/* The busy world of run() (100 robots, obstacles, laser noise, odometry
 * drift, commands and a teleport), its scans overlapped with the next
 * ticks or not: every pose of every tick hashed in order, and every scan
 * as its record would carry it, summed (an overlapped scan's record comes
 * a tick later); *late: scans that were overlapped. */
static uint64_t overlap_run(int ticks, bool overlap, uint64_t *scans,
                            uint64_t *late) {
  pa_grid g;
  ts_room(&g, 800, 800, 0.05);
  ts_block(&g, 3.0, 3.0, 5.0, 3.3);
  ts_block(&g, 6.0, 1.0, 6.2, 4.0);
  pa_robot_def r = ts_robot("a", 1, 1, 0);
  pa_obstacle_def o[2] = {ts_box("box", 2, 3.5, 0.5, 0.6, 0.3),
                          ts_circle("can", 5, 6, 0.25)};
  pa_sim_def d = pa_sim_def_default();
  d.seed = 42;
  d.threads = 2;
  d.robots = d.max_robots = 100;
  d.laser_noise = 0.01;
  d.odom_error[0] = d.odom_error[1] = d.odom_error[2] = 0.03;
  pa_sim_model m;
  pa_sim_state s;
  ts_make(&m, &s, &d, &g, &r, 1, o, 2);
  pa_grid_free(&g);
  s.defer_scans = overlap;
  uint64_t h = 0xcbf29ce484222325ull, lcg = 7, sum = 0;
  for (int t = 0; t <= ticks; t++) {
    if (t % 37 == 0)
      for (uint32_t i = 0; i < s.robot_count; i++) {
        double v = 1.6 * pa_sim_rng_uniform(&lcg) - 0.4;
        double w = 4 * pa_sim_rng_uniform(&lcg) - 2;
        assert_int_equal(ts_cmd(&m, &s, PA_OP_SET_CMD, i, v, 0, w, 0), PA_OK);
      }
    if (t == ticks / 2)
      assert_int_equal(ts_cmd(&m, &s, PA_OP_TELEPORT, 0, 1.0, 1.0, 0.5, 0),
                       PA_OK);
    if (t == ticks)
      pa_sim_scans_settle(&m, &s, true); /* the last batch */
    else
      pa_sim_step(&m, &s);
    for (uint32_t i = 0; i < s.robot_count && t < ticks; i++) {
      const pa_robot_state *q = &s.rs[i];
      double v[] = {q->x,      q->y,          q->theta, q->odom_x,
                    q->odom_y, q->odom_theta, q->v,     q->w};
      h = fnv(h, v, sizeof v);
    }
    for (uint32_t k = 0; k < s.scan_due_count && t < ticks; k++) {
      pa_sim_scan_stamp st;
      pa_sim_int_scan_stamp(&m, &s, s.scan_due[k], &st);
      sum += scan_hash(&st, s.ranges + (size_t)s.scan_due[k] * m.beam_cap);
    }
    pa_sim_late *L = s.late; /* the records a publish would write now */
    for (uint32_t k = 0; L && k < L->bready_n; k++)
      sum += scan_hash(&L->batch_stamp[L->bready_set][k],
                       L->batch_buf[L->bready_set] + (size_t)k * m.beam_cap);
    if (L)
      L->bready_n = 0;
  }
  *scans = sum;
  *late = s.late_scans;
  ts_free(&m, &s);
  return h;
}

/* Scans overlapped with the next ticks (a tick's scans cast on the workers
 * while the robots move on) give the same records as scans cast at once,
 * and the same poses. */
static void test_overlapped_scans_same(void **st) {
  (void)st;
  uint64_t scans0, scans1, late0, late1;
  uint64_t h0 = overlap_run(600, false, &scans0, &late0);
  uint64_t h1 = overlap_run(600, true, &scans1, &late1);
  assert_true(h1 == h0);
  assert_true(scans1 == scans0);
  assert_int_equal(late0, 0);
  assert_true(late1 > 600 * 100 / 20 * 9 / 10); /* nearly every scan */
}

/* A crowd: 400 robots in a 15 x 15 m room with walls, most within reach of
 * another (moved in index order after the lone ones: sim_step.c), the lone
 * ones on the threads. Hashes every pose for `ticks` ticks; *crowded: ticks
 * with at least 16 robots not alone. */
static uint64_t crowd_run(int ticks, uint32_t threads, int *crowded) {
  pa_grid g;
  ts_room(&g, 300, 300, 0.05);
  ts_block(&g, 5.0, 2.0, 5.3, 11.0);
  ts_block(&g, 8.0, 7.0, 13.0, 7.3);
  pa_robot_def r = ts_robot("a", 1, 1, 0);
  pa_sim_def d = pa_sim_def_default();
  d.seed = 5;
  d.threads = threads;
  d.robots = 400;
  d.max_robots = 400;
  pa_sim_model m;
  pa_sim_state s;
  ts_make(&m, &s, &d, &g, &r, 1, NULL, 0);
  pa_grid_free(&g);
  uint64_t h = 0xcbf29ce484222325ull, lcg = 11;
  *crowded = 0;
  for (int t = 0; t < ticks; t++) {
    if (t % 50 == 0)
      for (uint32_t i = 0; i < s.robot_count; i++) {
        double v = 1.4 * pa_sim_rng_uniform(&lcg) - 0.2;
        double w = 3 * pa_sim_rng_uniform(&lcg) - 1.5;
        assert_int_equal(ts_cmd(&m, &s, PA_OP_SET_CMD, i, v, 0, w, 0), PA_OK);
      }
    pa_sim_step(&m, &s);
    uint32_t rest = 0;
    for (uint32_t i = 0; i < s.robot_count; i++) {
      const pa_robot_state *q = &s.rs[i];
      double v[] = {q->x, q->y, q->theta, q->v, q->vy, q->w};
      h = fnv(h, v, sizeof v);
      rest += s.info[i].active && !s.motion[i].alone;
    }
    *crowded += rest >= 16;
  }
  assert_true(s.bumps > 0);
  ts_free(&m, &s);
  return h;
}

/* A crowd on 2 and 3 threads: the same states as on one (every robot in
 * index order), pinned: 400 robots jammed against each other and the walls
 * take every contact path of a move (slides, bisections among robots). */
#define CROWD_PINNED_HASH 0xbcfb7d1cc0767dfbull
static void test_threads_same_crowd(void **st) {
  (void)st;
  int c1, c2, c3;
  uint64_t one = crowd_run(600, 1, &c1);
  printf("crowd hash: 0x%016" PRIx64 "\n", one);
  assert_true(one == CROWD_PINNED_HASH);
  assert_true(crowd_run(600, 2, &c2) == one);
  assert_true(crowd_run(600, 3, &c3) == one);
  assert_true(c2 > 500); /* threads: crowded nearly every tick */
}

/* A lockstep sequence of ticks: per tick, which robots scanned and their
 * ranges and poses. */
static uint64_t scan_run(const pa_sim_model *m, pa_sim_state *s, int ticks) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int t = 0; t < ticks; t++) {
    if (t == 3)
      for (uint32_t i = 0; i < s->robot_count; i++)
        assert_int_equal(ts_cmd(m, s, PA_OP_SET_CMD, i, 0.4, 0, 0.7, 0), PA_OK);
    pa_sim_step(m, s);
    h = fnv(h, &s->scan_due_count, sizeof s->scan_due_count);
    for (uint32_t k = 0; k < s->scan_due_count; k++) {
      uint32_t i = s->scan_due[k];
      h = fnv(h, &i, sizeof i);
      h = fnv(h, s->ranges + (size_t)i * m->beam_cap,
              s->info[i].laser_beams * sizeof(float));
      h = fnv(h, &s->rs[i].x, sizeof s->rs[i].x);
    }
  }
  return h;
}

/* reset goes back to a fresh start's scan schedule: the same lockstep
 * sequence after a reset at an odd tick gives the same scans as after a
 * fresh start (before the fix robots scanned 7 ticks off). */
static void test_reset_scan_phase(void **st) {
  (void)st;
  pa_grid g;
  ts_room(&g, 160, 160, 0.05);
  ts_block(&g, 3.0, 3.0, 5.0, 3.3);
  pa_robot_def r[2] = {ts_robot("a", 1, 1, 0), ts_robot("b", 6, 6, 1)};
  pa_sim_def d = pa_sim_def_default();
  d.laser_noise = 0.02;
  d.threads = 1;
  pa_sim_model m;
  pa_sim_state s;
  ts_make(&m, &s, &d, &g, r, 2, NULL, 0);
  assert_true(m.ticks_per_scan == 20);
  uint64_t fresh = scan_run(&m, &s, 200);
  for (int t = 0; t < 7; t++)
    pa_sim_step(&m, &s);
  assert_int_equal(ts_cmd(&m, &s, PA_OP_RESET, 0, 0, 0, 0, 0), PA_OK);
  assert_true(s.tick % m.ticks_per_scan != 0);
  assert_true(scan_run(&m, &s, 200) == fresh);
  ts_free(&m, &s);
  pa_grid_free(&g);
}

static pa_status spawn_obs(const pa_sim_model *m, pa_sim_state *s,
                           const char *name, uint32_t shape, double x, double y,
                           double th, double a, double b) {
  pa_cmd c;
  pa_reply r;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SPAWN_OBSTACLE;
  c.spawn_obstacle.shape = shape;
  snprintf(c.name, sizeof c.name, "%s", name);
  c.spawn_obstacle.x = x, c.spawn_obstacle.y = y, c.spawn_obstacle.theta = th;
  if (shape == PA_SHAPE_BOX)
    c.spawn_obstacle.size_x = a, c.spawn_obstacle.size_y = b;
  else
    c.spawn_obstacle.radius = a;
  pa_status st = pa_sim_apply(m, s, &c, &r);
  if (st == PA_ERR_BLOCKED_POSE)
    assert_non_null(strstr(r.msg, "inside a wall"));
  return st;
}

/* The default map, default def, robot0 at the origin. */
static void default_map_one_robot(pa_sim_model *m, pa_sim_state *s) {
  pa_grid g;
  char err[256];
  assert_int_equal(pa_map_load_default(&g, err, sizeof err), 0);
  pa_robot_def r = ts_robot("robot0", 0, 0, 0);
  ts_make_default(m, s, &g, &r, 1, NULL, 0);
}

/* Obstacles are kept out of walls as robots are (a circle at (-4.65,
 * -4.87) r 0.2 on the default map, in its corner wall, used to be ok). */
static void test_obstacle_in_wall(void **st) {
  (void)st;
  pa_sim_model m;
  pa_sim_state s;
  default_map_one_robot(&m, &s);
  assert_int_equal(
      spawn_obs(&m, &s, "w", PA_SHAPE_CIRCLE, -4.65, -4.87, 0, 0.2, 0),
      PA_ERR_BLOCKED_POSE);
  assert_int_equal(spawn_obs(&m, &s, "far", PA_SHAPE_CIRCLE, 40, 0, 0, 0.2, 0),
                   PA_ERR_BLOCKED_POSE);
  assert_int_equal(
      spawn_obs(&m, &s, "bx", PA_SHAPE_BOX, -4.65, -4.87, 0.3, 0.3, 0.3),
      PA_ERR_BLOCKED_POSE);
  /* A long thin box whose end only reaches a wall. */
  assert_int_equal(
      spawn_obs(&m, &s, "bar", PA_SHAPE_BOX, -2.0, 1.5, 0, 9.0, 0.1),
      PA_ERR_BLOCKED_POSE);
  assert_int_equal(s.obstacle_count, 0);
  /* Free floor takes them. */
  assert_int_equal(
      spawn_obs(&m, &s, "ok", PA_SHAPE_CIRCLE, 2.5, -2.5, 0, 0.2, 0), PA_OK);
  assert_int_equal(
      spawn_obs(&m, &s, "okb", PA_SHAPE_BOX, -1.0, 1.0, 0.4, 0.4, 0.2), PA_OK);
  assert_int_equal(s.obstacle_count, 2);
  /* Growing one into a wall is refused too. */
  pa_cmd c;
  pa_reply rr;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SET_PROPERTY;
  c.robot = UINT32_MAX;
  c.prop.prop = PA_PROP_RADIUS;
  snprintf(c.name, sizeof c.name, "ok");
  c.prop.v[0] = 2.8;
  assert_int_equal(pa_sim_apply(&m, &s, &c, &rr), PA_ERR_BLOCKED_POSE);
  assert_non_null(strstr(rr.msg, "into a wall"));
  ts_free(&m, &s);
}

/* The op table has a row for every op; the loop's lists come from it. */
static void test_op_table(void **st) {
  (void)st;
  assert_null(pa_sim_op(PA_OP_NONE));
  assert_null(pa_sim_op(PA_OP_COUNT));
  for (uint32_t op = 1; op < PA_OP_COUNT; op++) {
    const pa_sim_op_def *d = pa_sim_op(op);
    assert_non_null(d);
    assert_non_null(d->name);
    if (!(d->flags & PA_SIM_OPF_LOADER))
      assert_non_null(d->apply);
  }
  assert_true(pa_sim_op_flags(PA_OP_STEP) & PA_SIM_OPF_TICKS);
  assert_true(pa_sim_op_flags(PA_OP_SET_MAP) & PA_SIM_OPF_LOADER);
  assert_true(pa_sim_op_flags(PA_OP_TELEPORT) & PA_SIM_OPF_PUBLISH);
  assert_false(pa_sim_op_flags(PA_OP_SYNC) & PA_SIM_OPF_PUBLISH);
  assert_string_equal(pa_sim_op(PA_OP_GENERATE_MAP)->name, "generate_map");
}

/* set_property in the sim takes the schema's range (pa_props.h): a robot's
 * height is (0, 10] as world files say, an obstacle's (0, 100]; a loader op
 * given to pa_sim_apply is refused by name; nothing changes on an error. */
static void test_property_schema_ranges(void **st) {
  (void)st;
  pa_sim_model m;
  pa_sim_state s;
  default_map_one_robot(&m, &s);
  float h0 = s.info[0].height;
  pa_cmd c;
  pa_reply r;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SET_PROPERTY;
  c.prop.prop = PA_PROP_HEIGHT;
  c.prop.v[0] = 50;
  assert_int_equal(pa_sim_apply(&m, &s, &c, &r), PA_ERR_INVALID_ACTION_SHAPE);
  assert_non_null(strstr(r.msg, "height 50 is out of range (0, 10] m"));
  assert_true(s.info[0].height == h0);
  c.prop.v[0] = 1.5;
  assert_int_equal(pa_sim_apply(&m, &s, &c, &r), PA_OK);
  assert_true(fabs(s.info[0].height - 1.5) < 1e-6);
  c.prop.prop = PA_PROP_SIZE; /* boxes only */
  assert_int_equal(pa_sim_apply(&m, &s, &c, &r), PA_ERR_INVALID_MESSAGE);
  assert_non_null(strstr(r.msg, "does not apply to robots"));
  assert_int_equal(
      spawn_obs(&m, &s, "c", PA_SHAPE_CIRCLE, 2.5, -2.5, 0, 0.2, 0), PA_OK);
  c.robot = UINT32_MAX;
  snprintf(c.name, sizeof c.name, "c");
  c.prop.prop = PA_PROP_HEIGHT;
  c.prop.v[0] = 50;
  assert_int_equal(pa_sim_apply(&m, &s, &c, &r), PA_OK);
  c.prop.v[0] = 101;
  assert_int_equal(pa_sim_apply(&m, &s, &c, &r), PA_ERR_INVALID_ACTION_SHAPE);
  assert_non_null(strstr(r.msg, "(0, 100] m"));
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SET_MAP;
  assert_int_equal(pa_sim_apply(&m, &s, &c, &r), PA_ERR_UNKNOWN_ACTION);
  assert_non_null(strstr(r.msg, "set_map"));
  ts_free(&m, &s);
}

/* A snapshot object another program rewrote, checksum and all: each bad
 * record is refused with invalid_message and nothing changes; the same
 * bytes re-summed unchanged load. */
static void test_snapshot_bad_records(void **st) {
  (void)st;
  pa_grid g;
  ts_room(&g, 100, 100, 0.05);
  pa_robot_def r[2] = {ts_robot("a", 1, 1, 0), ts_robot("b", 3, 3, 1)};
  pa_obstacle_def o[1] = {ts_circle("can", 2, 4, 0.2)};
  pa_sim_def d = pa_sim_def_default();
  pa_test_instance(d.instance, sizeof d.instance, "snapbad");
  pa_sim_model m;
  pa_sim_state s;
  ts_make(&m, &s, &d, &g, r, 2, o, 1);
  pa_cmd c;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SAVE_SNAPSHOT;
  snprintf(c.name, sizeof c.name, "x");
  pa_reply rep;
  assert_int_equal(pa_sim_apply(&m, &s, &c, &rep), PA_OK);
  assert_int_equal(ts_cmd(&m, &s, PA_OP_TELEPORT, 0, 2.0, 1.5, 0.3, 0), PA_OK);
  size_t size;
  int fd = pa_test_open_seg(d.instance, "snap-x", &size);
  assert_true(fd >= 0);
  unsigned char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  assert_true(p != MAP_FAILED);
  unsigned char *orig = malloc(size);
  assert_non_null(orig);
  memcpy(orig, p, size);
  pa_sim_snap_hdr *h = (pa_sim_snap_hdr *)(void *)p;
  unsigned char *body = p + sizeof *h;
  pa_robot_info *ri = (pa_robot_info *)(void *)body;
  pa_robot_state *rs = (pa_robot_state *)(void *)(body + 2 * sizeof *ri);
  pa_obstacle_info *oi = (pa_obstacle_info *)(void *)(body + 2 * sizeof *ri +
                                                      2 * sizeof *rs);
  c.op = PA_OP_LOAD_SNAPSHOT;
  for (int k = 0; k <= 6; k++) {
    memcpy(p, orig, size);
    switch (k) {
    case 0: ri[0].laser_beams = m.beam_cap + 1; break; /* past the buffers */
    case 1: ri[1].radius = NAN; break;
    case 2: ri[0].drive = 7; break;
    case 3: rs[1].x = INFINITY; break;
    case 4: rs[0].cmd_frame = 9; break;
    case 5: oi[0].shape = 5; break;
    case 6: break; /* unchanged: loads */
    }
    h->checksum = pa_sim_int_snap_sum(h, body, size - sizeof *h);
    pa_status want = k == 6 ? PA_OK : PA_ERR_INVALID_MESSAGE;
    pa_status got = pa_sim_apply(&m, &s, &c, &rep);
    if (got != want)
      fail_msg("case %d: status %d (%s), want %d", k, got, rep.msg, want);
    if (k < 6) /* nothing changed */
      assert_true(s.rs[0].x == 2.0 && s.rs[0].y == 1.5);
  }
  assert_true(s.rs[0].x == 1.0 && s.rs[0].y == 1.0); /* the saved pose */
  for (int t = 0; t < 100; t++) /* and it runs */
    pa_sim_step(&m, &s);
  munmap(p, size);
  free(orig);
  pa_stack_unlink(d.instance);
  assert_int_equal(pa_test_open_seg(d.instance, "snap-x", &size),
                   -1); /* gone */
  ts_free(&m, &s);
  pa_grid_free(&g);
}

/* The ticks after a load at which each robot scans, and what it sees, as
 * after the save: a snapshot keeps the scan schedule (the tick runs on). */
static void scans_after(const pa_sim_model *m, pa_sim_state *s, int ticks,
                        uint32_t seen[][2], uint64_t *hash) {
  uint32_t seq0[2] = {s->rs[0].scan_seq, s->rs[1].scan_seq};
  *hash = 1469598103934665603ull;
  for (int t = 0; t < ticks; t++) {
    pa_sim_step(m, s); /* one thread: the scans are cast in the step */
    for (uint32_t i = 0; i < 2; i++) {
      seen[t][i] = s->rs[i].scan_seq - seq0[i];
      if (t > 0 && seen[t][i] == seen[t - 1][i])
        continue; /* no new scan: its ranges are older than the save */
      if (t == 0 && seen[t][i] == 0)
        continue;
      const unsigned char *b =
          (const unsigned char *)(s->ranges + (size_t)i * m->beam_cap);
      for (size_t k = 0; k < (size_t)s->info[i].laser_beams * sizeof(float);
           k++)
        *hash = (*hash ^ b[k]) * 1099511628211ull;
    }
  }
}

static void test_snapshot_scan_schedule(void **st) {
  (void)st;
  pa_grid g;
  ts_room(&g, 100, 100, 0.05);
  pa_robot_def r[2] = {ts_robot("a", 1, 1, 0), ts_robot("b", 3, 3, 1)};
  pa_sim_def d = pa_sim_def_default();
  d.threads = 1;
  pa_test_instance(d.instance, sizeof d.instance, "snapscan");
  pa_sim_model m;
  pa_sim_state s;
  ts_make(&m, &s, &d, &g, r, 2, NULL, 0);
  assert_int_equal(m.ticks_per_scan, 20);
  for (int t = 0; t < 7; t++) /* saved at phase 7 */
    pa_sim_step(&m, &s);
  assert_int_equal(ts_cmd(&m, &s, PA_OP_SET_CMD, 0, 0.5, 0, 0.8, 0), PA_OK);
  assert_int_equal(ts_cmd(&m, &s, PA_OP_SET_CMD, 1, 0.4, 0, -0.6, 0), PA_OK);
  pa_cmd c;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SAVE_SNAPSHOT;
  snprintf(c.name, sizeof c.name, "p");
  pa_reply rep;
  assert_int_equal(pa_sim_apply(&m, &s, &c, &rep), PA_OK);
  static uint32_t a[60][2], b[60][2];
  uint64_t ha, hb;
  scans_after(&m, &s, 60, a, &ha);
  c.op = PA_OP_LOAD_SNAPSHOT;
  for (int extra = 0; extra < 3; extra++) {
    for (int t = 0; t < 13 + 5 * extra; t++) /* loads at other phases */
      pa_sim_step(&m, &s);
    assert_int_equal(pa_sim_apply(&m, &s, &c, &rep), PA_OK);
    scans_after(&m, &s, 60, b, &hb);
    assert_memory_equal(a, b, sizeof a);
    assert_true(ha == hb);
  }
  pa_stack_unlink(d.instance);
  ts_free(&m, &s);
  pa_grid_free(&g);
}

/* save_snapshot_json keeps the scan schedule as save_snapshot does: the
 * loads at other phases scan at the saved world's ticks and see its scans;
 * a bad scan_phase is refused by name and changes nothing. */
static void test_snapshot_json_scan_schedule(void **st) {
  (void)st;
  pa_grid g;
  ts_room(&g, 100, 100, 0.05);
  pa_robot_def r[2] = {ts_robot("a", 1, 1, 0), ts_robot("b", 3, 3, 1)};
  pa_sim_def d = pa_sim_def_default();
  d.threads = 1;
  pa_test_instance(d.instance, sizeof d.instance, "snapjscan");
  pa_sim_model m;
  pa_sim_state s;
  ts_make(&m, &s, &d, &g, r, 2, NULL, 0);
  m.def.data_dir = pa_test_tmpdir();
  for (int t = 0; t < 7; t++) /* saved at phase 7 */
    pa_sim_step(&m, &s);
  assert_int_equal(ts_cmd(&m, &s, PA_OP_SET_CMD, 0, 0.5, 0, 0.8, 0), PA_OK);
  assert_int_equal(ts_cmd(&m, &s, PA_OP_SET_CMD, 1, 0.4, 0, -0.6, 0), PA_OK);
  pa_cmd c;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SAVE_SNAPSHOT_JSON;
  snprintf(c.path, sizeof c.path, "phase.json");
  pa_reply rep;
  assert_int_equal(pa_sim_apply(&m, &s, &c, &rep), PA_OK);
  static uint32_t a[60][2], b[60][2];
  uint64_t ha, hb;
  scans_after(&m, &s, 60, a, &ha);
  c.op = PA_OP_LOAD_SNAPSHOT_JSON;
  for (int extra = 0; extra < 3; extra++) {
    for (int t = 0; t < 13 + 5 * extra; t++) /* loads at other phases */
      pa_sim_step(&m, &s);
    assert_int_equal(pa_sim_apply(&m, &s, &c, &rep), PA_OK);
    scans_after(&m, &s, 60, b, &hb);
    assert_memory_equal(a, b, sizeof a);
    assert_true(ha == hb);
  }
  /* the file names the phase; a bad one is refused, the world unchanged */
  char path[600], text[1 << 16];
  snprintf(path, sizeof path, "%s/phase.json", pa_test_tmpdir());
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  char *at = strstr(text, "\"scan_phase\": 7,");
  assert_non_null(at);
  char bad[sizeof text + 16];
  snprintf(bad, sizeof bad, "%.*s\"scan_phase\": \"7\"%s", (int)(at - text),
           text, at + strlen("\"scan_phase\": 7"));
  snprintf(path, sizeof path, "%s/badphase.json", pa_test_tmpdir());
  f = fopen(path, "w");
  assert_non_null(f);
  fputs(bad, f);
  fclose(f);
  uint64_t tick0 = s.scan_tick0;
  double x0 = s.rs[0].x;
  snprintf(c.path, sizeof c.path, "badphase.json");
  assert_int_equal(pa_sim_apply(&m, &s, &c, &rep), PA_ERR_INVALID_MESSAGE);
  assert_non_null(strstr(rep.msg, "scan_phase must be an integer >= 0"));
  assert_true(s.scan_tick0 == tick0 && s.rs[0].x == x0);
  pa_stack_unlink(d.instance);
  ts_free(&m, &s);
  pa_grid_free(&g);
}

/* Commands at `per_spin` / `per_wait` ns apart, whichever way the tuner
 * waits, for `ns`; returns the tuner's clock after them. */
static int64_t feed(pa_sim_spin_tuner *tu, int64_t now, int64_t ns,
                    int64_t per_spin, int64_t per_wait) {
  int64_t end = now + ns;
  while (now < end) {
    int64_t gap = tu->spin ? per_spin : per_wait;
    now += gap;
    pa_sim_int_tuner_note(tu, now, gap);
  }
  return now;
}

/* The lockstep spin tuner keeps the way commands come faster, probes both
 * ways again later, needs spinning to be clearly faster, and a pause does
 * not count as a slow window. */
static void test_spin_tuner(void **state) {
  (void)state;
  pa_sim_spin_tuner tu;
  pa_sim_int_tuner_init(&tu);
  assert_true(tu.spin);
  int64_t now = 1000000000LL;
  pa_sim_int_tuner_note(&tu, now, now); /* the session's first command */
  /* waiting is faster (a busy machine): after both probes it waits */
  now = feed(&tu, now, 2 * PA_SIM_TUNE_PROBE_NS + 1000000, 90000, 60000);
  assert_int_equal(tu.phase, 2);
  assert_false(tu.spin);
  now = feed(&tu, now, PA_SIM_TUNE_KEEP_NS / 2, 90000, 60000);
  assert_false(tu.spin); /* kept */
  /* the machine goes quiet: spinning becomes faster, and wins next probe */
  now = feed(&tu, now, PA_SIM_TUNE_KEEP_NS, 40000, 60000);
  now = feed(&tu, now, 4 * PA_SIM_TUNE_PROBE_NS, 40000, 60000);
  assert_int_equal(tu.phase, 2);
  assert_true(tu.spin);
  /* 2% faster is not enough to pay for a core */
  for (int i = 0; i < 8; i++)
    now = feed(&tu, now, PA_SIM_TUNE_KEEP_NS + 2 * PA_SIM_TUNE_PROBE_NS, 58800,
               60000);
  assert_false(tu.spin);
  /* a pause inside a probe restarts it: the pause does not count as slow */
  pa_sim_int_tuner_init(&tu);
  pa_sim_int_tuner_note(&tu, now, now);
  now = feed(&tu, now, PA_SIM_TUNE_PROBE_NS * 4 / 5, 50000, 50000);
  assert_int_equal(tu.phase, 0);
  now += 50000000;
  pa_sim_int_tuner_note(&tu, now, 50000000);
  now = feed(&tu, now, 3 * PA_SIM_TUNE_PROBE_NS, 50000, 50000);
  assert_int_equal(tu.phase, 2);
  assert_true(tu.rate[0] > 19000.0 && tu.rate[0] < 21000.0);
  assert_true(tu.rate[1] > 19000.0 && tu.rate[1] < 21000.0);
  assert_false(tu.spin); /* equal: no core spent */
}

/* Resident kB of this process in the mapping that holds p (smaps' Rss) and
 * its permissions into perm[5]; -1 when no mapping holds p. */
static long mapping_rss_kb(const void *p, char perm[5]) {
  FILE *f = fopen("/proc/self/smaps", "r");
  assert_non_null(f);
  char line[512];
  long rss = -1;
  bool in = false;
  uintptr_t a = (uintptr_t)p;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    char pm[5];
    if (sscanf(line, "%lx-%lx %4s ", &lo, &hi, pm) == 3) {
      in = a >= lo && a < hi;
      if (in)
        memcpy(perm, pm, 5);
    } else if (in && !strncmp(line, "Rss:", 4)) {
      rss = strtol(line + 4, NULL, 10);
      break;
    }
  }
  fclose(f);
  return rss;
}

/* Publishing the map hands the model's cells over to the map segment: the
 * same bytes, mapped read-only, no page resident until read; a new map
 * (set_grid) is the model's own copy until it is published in turn. */
static void test_publish_map_shares_cells(void **st) {
  (void)st;
  char inst[PA_SHM_INSTANCE_MAX], err[256], perm[5];
  pa_test_instance(inst, sizeof inst, "cells");
  pa_stack_def sd = pa_test_small_def(inst, 360, 64, 48, 16);
  pa_stack stk;
  assert_int_equal(pa_stack_create(&stk, &sd, err, sizeof err), 0);
  pa_grid g;
  ts_room(&g, 400, 300, 0.05);
  ts_block(&g, 3.0, 3.0, 5.0, 3.3);
  size_t n = (size_t)g.width * g.height;
  int8_t *want = malloc(n);
  assert_non_null(want);
  memcpy(want, g.cells, n);
  pa_robot_def r = ts_robot("a", 1, 1, 0);
  pa_sim_model m;
  pa_sim_state s;
  ts_make_default(&m, &s, &g, &r, 1, NULL, 0);
  assert_null(m.cells_seg.base); /* its own copy until published */
  assert_int_equal(pa_sim_shm_publish_map(&m, &stk, err, sizeof err), 0);
  const char *b = m.cells_seg.base;
  assert_non_null(b);
  assert_true((const char *)m.grid.cells > b &&
              (const char *)m.grid.cells + n <= b + m.cells_seg.size);
  assert_int_equal(mapping_rss_kb(m.grid.cells, perm), 0);
  assert_int_equal(perm[1], '-'); /* read-only */
  assert_memory_equal(m.grid.cells, want, n);
  assert_true(mapping_rss_kb(m.grid.cells, perm) > 0); /* read: mapped */
  for (int i = 0; i < 20; i++) /* it simulates on as before */
    pa_sim_step(&m, &s);
  /* a new map: the model's copy, then shared again once published */
  pa_grid g2;
  ts_room(&g2, 200, 200, 0.05);
  const void *old = m.grid.cells;
  uint32_t moved = 0;
  assert_int_equal(pa_sim_set_grid(&m, &s, &g2, &moved, err, sizeof err), 0);
  assert_null(m.cells_seg.base);
  assert_int_equal(mapping_rss_kb(old, perm), -1); /* the old one unmapped */
  assert_int_equal(pa_sim_shm_publish_map(&m, &stk, err, sizeof err), 0);
  assert_non_null(m.cells_seg.base);
  assert_memory_equal(m.grid.cells, g2.cells, (size_t)200 * 200);
  const void *cells = m.grid.cells;
  ts_free(&m, &s);
  assert_int_equal(mapping_rss_kb(cells, perm), -1); /* freeing unmaps it */
  pa_grid_free(&g2);
  free(want);
  pa_stack_detach(&stk);
  assert_true(pa_stack_unlink(inst) >= 4);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_determinism),
      cmocka_unit_test(test_determinism_every_path),
      cmocka_unit_test(test_threads_same),
      cmocka_unit_test(test_threads_same_crowd),
      cmocka_unit_test(test_overlapped_scans_same),
      cmocka_unit_test(test_snapshot_bad_records),
      cmocka_unit_test(test_snapshot_scan_schedule),
      cmocka_unit_test(test_snapshot_json_scan_schedule),
      cmocka_unit_test(test_reset_scan_phase),
      cmocka_unit_test(test_obstacle_in_wall),
      cmocka_unit_test(test_op_table),
      cmocka_unit_test(test_property_schema_ranges),
      cmocka_unit_test(test_spin_tuner),
      cmocka_unit_test(test_publish_map_shares_cells),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
