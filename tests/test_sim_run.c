/* test_sim_run.c - determinism: a 10,000-tick lockstep run with several
 * robots, obstacles, laser noise and odometry drift hashes to a pinned
 * value (poses, odometry and every scan, bit for bit). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_sim_util.h"

/* Pinned: change only with a deliberate change of the physics or sensors. */
#define PINNED_HASH 0x93485f5b3cd19d89ull

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
  pa_obstacle_def o[2];
  memset(o, 0, sizeof o);
  snprintf(o[0].name, sizeof o[0].name, "box");
  o[0].shape = PA_SHAPE_BOX;
  o[0].x = 2;
  o[0].y = 3.5;
  o[0].theta = 0.5;
  o[0].size_x = 0.6;
  o[0].size_y = 0.3;
  snprintf(o[1].name, sizeof o[1].name, "can");
  o[1].shape = PA_SHAPE_CIRCLE;
  o[1].x = 5;
  o[1].y = 6;
  o[1].radius = 0.25;
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
  if (threads > 1 && extra > 0) /* the parallel moves ran */
    assert_true(s.alone_moves > 0);
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

/* Threads change nothing: the pinned world with 2 and 3 threads, and a
 * busier one (300 robots: 15 scans per tick, robots shadowing and bumping
 * each other, plans and most moves in parallel) with 1, 2 and 4 threads
 * hash the same. */
static void test_threads_same(void **st) {
  (void)st;
  uint64_t one = run(10000, 1, 0);
  assert_true(run(10000, 2, 0) == one);
  assert_true(run(10000, 3, 0) == one);
  uint64_t busy = run(2000, 1, 296);
  assert_true(busy != one);
  assert_true(run(2000, 2, 296) == busy);
  assert_true(run(2000, 4, 296) == busy);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_determinism),
      cmocka_unit_test(test_threads_same),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
