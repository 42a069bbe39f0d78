/* test_sim_crowd.c - scans among many robots: every scan a tick casts (the
 * robots' buckets, the culling of robots hidden behind walls) equals, bit
 * for bit, a brute-force scan that intersects every other robot with every
 * beam, with 1 and 2 threads and beam counts that are not multiples of 4,
 * and so does each scan cast in parts (walls, then bodies of each part's
 * beams, as the threads split a tick's last scans); the state record of 1000
 * robots (copied by both threads) byte for byte. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pa_shm.h"
#include "sim_geom_int.h"
#include "sim_office.h"
#include "test_sim_util.h"
#include "testutil.h"

/* Robot id's scan from its pose now, without any culling: the walls, then
 * every other active robot on every beam (beam directions as beam_table
 * and beam_dirs make them), then the clamp (no noise in these worlds). */
static void brute_scan(const pa_sim_model *m, const pa_sim_state *s,
                       uint32_t id, float *out) {
  pa_sim_scratch sc;
  assert_int_equal(pa_sim_int_scratch_init(&sc, m->beam_cap), 0);
  pa_sim_scan_at a;
  pa_sim_int_scan_at(m, s, id, &a);
  pa_sim_int_scan_walls(m, s, &a, out, &sc, 0, UINT32_MAX);
  pa_sim_int_scratch_free(&sc);
  const pa_robot_info *ri = &s->info[id];
  double inc = 2.0 * M_PI / a.beams;
  for (uint32_t i = 0; i < a.beams; i++) {
    double ang = -M_PI + inc * i;
    double bc = (float)cos(ang), bs = (float)sin(ang);
    double dx = a.c * bc - a.s * bs, dy = a.s * bc + a.c * bs;
    for (uint32_t o = 0; o < s->robot_count; o++) {
      if (o == id || !s->info[o].active)
        continue;
      double t = ray_circle(a.x, a.y, dx, dy, s->rs[o].x, s->rs[o].y,
                            s->info[o].radius);
      if (t < (double)out[i])
        out[i] = (float)t;
    }
    float lo = ri->laser_range_min, hi = ri->laser_range_max;
    out[i] = out[i] >= hi ? hi : out[i] < lo ? lo : out[i];
  }
}

/* Runs `ticks` ticks of `robots` robots on g (driving about, varied beam
 * counts and ranges; radius > 0: every robot that small) and checks every
 * scan each tick casts against brute_scan; returns how many beams hit a
 * robot (the scene must have some). */
static long crowd_on(const pa_grid *g, uint32_t robots, uint32_t threads,
                     int ticks, uint64_t seed, pa_sim_simd simd,
                     double radius) {
  pa_sim_def d = pa_sim_def_default();
  d.simd = simd;
  d.robots = robots;
  d.max_robots = robots;
  d.seed = seed;
  d.threads = threads;
  pa_sim_model m;
  pa_sim_state s;
  ts_make(&m, &s, &d, g, NULL, 0, NULL, 0);
  assert_int_equal(s.robot_count, robots);
  static const uint32_t beams[] = {360, 359, 181, 90, 37, 7, 2, 1};
  uint64_t rng = seed;
  for (uint32_t i = 0; i < robots; i++) {
    if (radius > 0) /* smaller only: every reach the world set stays enough */
      s.info[i].radius = radius;
    s.info[i].laser_beams = beams[i % 8];
    if (i % 5 == 0)
      s.info[i].laser_range_max = 4.0f; /* shorter than the buckets' size */
    pa_cmd c;
    memset(&c, 0, sizeof c);
    c.op = PA_OP_SET_CMD;
    c.robot = i;
    c.drive.v = 0.3 + 0.5 * pa_sim_rng_uniform(&rng);
    c.drive.w = 2 * pa_sim_rng_uniform(&rng) - 1;
    pa_reply r;
    pa_sim_apply(&m, &s, &c, &r);
  }
  float *want = malloc(m.beam_cap * sizeof(float));
  float *walls = malloc(m.beam_cap * sizeof(float));
  float *parts = malloc(m.beam_cap * sizeof(float));
  assert_non_null(parts);
  assert_non_null(want);
  assert_non_null(walls);
  long hits = 0, scans = 0;
  for (int t = 0; t < ticks; t++) {
    pa_sim_step(&m, &s);
    for (uint32_t k = 0; k < s.scan_due_count; k++) {
      uint32_t id = s.scan_due[k];
      const float *got = s.ranges + (size_t)id * m.beam_cap;
      brute_scan(&m, &s, id, want);
      uint32_t n = s.info[id].laser_beams;
      for (uint32_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0)
          fail_msg("tick %d robot %u (%u beams, %u threads) beam %u: %.9g, "
                   "brute force %.9g",
                   t, id, n, threads, i, got[i], want[i]);
      /* the robots' share: beams nearer than the walls alone */
      pa_sim_scan_at a;
      pa_sim_int_scan_at(&m, &s, id, &a);
      /* in 2, 3 and 5 parts of uneven sizes (the last one short) */
      for (uint32_t np = 2; np <= 5; np += np == 2 ? 1 : 2) {
        uint32_t step = n / np + 1;
        for (uint32_t b0 = 0; b0 < n; b0 += step) {
          pa_sim_int_scan_walls(&m, &s, &a, parts, s.scratch, b0, b0 + step);
          pa_sim_int_scan_finish_part(&m, &s, &a, parts, s.scratch, b0,
                                      b0 + step);
        }
        for (uint32_t i = 0; i < n; i++)
          if (memcmp(&parts[i], &want[i], sizeof(float)) != 0)
            fail_msg("tick %d robot %u (%u beams) in %u parts beam %u: %.9g, "
                     "brute force %.9g",
                     t, id, n, np, i, parts[i], want[i]);
      }
      pa_sim_int_scan_walls(&m, &s, &a, walls, s.scratch, 0, UINT32_MAX);
      for (uint32_t i = 0; i < n; i++)
        hits += want[i] < walls[i];
      scans++;
    }
  }
  assert_true(scans >= (long)robots * ticks / 20);
  free(want);
  free(walls);
  free(parts);
  ts_free(&m, &s);
  return hits;
}

static long crowd(const pa_grid *g, uint32_t robots, uint32_t threads,
                  int ticks, uint64_t seed) {
  return crowd_on(g, robots, threads, ticks, seed, PA_SIM_SIMD_AUTO, 0);
}

/* The bench's world: 1000 robots in the 100 m office (most of each scan's
 * neighbours behind walls; dense buckets), and 200 (hashed buckets). */
static void test_office_crowd(void **st) {
  (void)st;
  pa_grid g;
  ts_office(&g, 2000, 2000);
  assert_non_null(g.cells);
  for (uint32_t threads = 1; threads <= 2; threads++) {
    assert_true(crowd(&g, 1000, threads, 6, 11) > 50);
    /* 200: a table of 512 buckets for the 625 cells: hashed, not dense */
    assert_true(crowd(&g, 200, threads, 30, 12) > 5);
  }
  free(g.cells);
}

/* A packed room: robots near the sensor (wide windows, windows across beam
 * 0), robots behind robots. */
static void test_room_crowd(void **st) {
  (void)st;
  pa_grid g;
  ts_room(&g, 300, 300, 0.05);
  ts_block(&g, 5.0, 5.0, 6.0, 10.0);
  for (uint32_t threads = 1; threads <= 2; threads++)
    assert_true(crowd(&g, 250, threads, 40, 5) > 1000);
  /* every caster path this CPU has: the bodies' beams have a loop for
   * each (AVX2's and the baseline's) */
  for (int p = PA_SIM_SIMD_AVX512; p < PA_SIM_SIMD_COUNT; p++)
    if (pa_sim_simd_has((pa_sim_simd)p))
      assert_true(crowd_on(&g, 250, 1, 20, 6, (pa_sim_simd)p, 0) > 500);
  /* robots of 1 cm pressing the walls: a robot's near side only 2 cm
   * before the wall behind it (the culling's margin is float's, not
   * centimetres), on every path */
  for (int p = PA_SIM_SIMD_AVX512; p < PA_SIM_SIMD_COUNT; p++)
    if (pa_sim_simd_has((pa_sim_simd)p))
      assert_true(crowd_on(&g, 250, 1, 200, 7, (pa_sim_simd)p, 0.01) > 20);
  pa_grid_free(&g);
}

/* Publishing 1000 robots: the state ring's newest record is the tick's
 * header and every robot's state, byte for byte, with 1 and 2 threads
 * (with 2 the record's body is copied in parts on both). */
static void test_publish_crowd(void **st) {
  (void)st;
  for (uint32_t threads = 1; threads <= 2; threads++) {
    char inst[PA_SHM_INSTANCE_MAX], err[256];
    pa_stack_def sd = pa_test_stack_def(inst, sizeof inst, "crowd");
    sd.max_robots = 1000;
    pa_stack stk;
    assert_int_equal(pa_stack_create(&stk, &sd, err, sizeof err), 0);
    pa_grid g;
    ts_room(&g, 1200, 1200, 0.05);
    pa_sim_def d = pa_sim_def_default();
    d.robots = d.max_robots = 1000;
    d.threads = threads;
    pa_sim_model m;
    pa_sim_state s;
    ts_make(&m, &s, &d, &g, NULL, 0, NULL, 0);
    pa_grid_free(&g);
    uint32_t cap = pa_ring_max_record(stk.state);
    uint8_t *buf = malloc(cap);
    assert_non_null(buf);
    size_t body = 1000 * sizeof(pa_robot_state);
    for (int t = 0; t < 3; t++) {
      pa_sim_step(&m, &s);
      pa_sim_shm_publish_tick_at(&m, &s, &stk, pa_now_ns());
      uint32_t len = 0;
      uint64_t seq = 0;
      assert_int_equal(pa_ring_read_latest(stk.state, buf, cap, &len, &seq), 0);
      assert_int_equal(len, sizeof(pa_tick) + body);
      pa_tick tk;
      memcpy(&tk, buf, sizeof tk);
      assert_int_equal(tk.tick, s.tick);
      assert_int_equal(tk.robot_count, 1000);
      assert_memory_equal(buf + sizeof tk, s.rs, body);
    }
    free(buf);
    ts_free(&m, &s);
    pa_stack_detach(&stk);
    assert_true(pa_stack_unlink(inst) >= 4);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_office_crowd),
      cmocka_unit_test(test_room_crowd),
      cmocka_unit_test(test_publish_crowd),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
