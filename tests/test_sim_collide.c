/* test_sim_collide.c - robots against walls, corners, obstacles and each
 * other: never inside, sliding, reported velocities. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_sim_util.h"
#include "sim_int.h"

/* Nothing overlaps anything (touching allowed up to rounding). */
static void assert_no_overlap(const pa_sim_model *m, const pa_sim_state *s) {
  for (uint32_t i = 0; i < s->robot_count; i++) {
    if (!s->info[i].active)
      continue;
    double c = pa_sim_clearance(m, s, i, s->rs[i].x, s->rs[i].y,
                                s->info[i].radius, 0, NULL, NULL);
    if (c < -1e-9)
      fail_msg("robot %u at (%.6f, %.6f) overlaps by %g m at tick %llu", i,
               s->rs[i].x, s->rs[i].y, -c, (unsigned long long)s->tick);
  }
}

/* Room 6 m x 6 m with an L-shaped inner wall (corners) and obstacles. */
static void arena(pa_sim_model *m, pa_sim_state *s, double max_v) {
  pa_grid g;
  ts_room(&g, 120, 120, 0.05);
  ts_block(&g, 3.5, 1.0, 3.7, 2.5); /* vertical arm */
  ts_block(&g, 3.5, 2.3, 5.0, 2.5); /* horizontal arm */
  pa_robot_def r = ts_robot("r", 1.5, 4.5, 0);
  r.max_v = max_v;
  r.acc_v = 100; /* reach the speed at once */
  r.dec_v = 100;
  pa_obstacle_def o[2] = {ts_box("box", 1.5, 1.5, 0.4, 0.8, 0.4),
                          ts_circle("can", 4.5, 4.5, 0.3)};
  ts_make_default(m, s, &g, &r, 1, o, 2);
}

/* A w x h room (5 cm cells) with `blocks` random blocks of 1-6 x 1-6 cells. */
static void block_room(pa_grid *g, uint32_t W, uint32_t H, int blocks,
                       uint64_t *rng) {
  ts_room(g, W, H, 0.05);
  for (int k = 0; k < blocks; k++) {
    uint32_t x = (uint32_t)(pa_sim_rng_uniform(rng) * (W - 5));
    uint32_t y = (uint32_t)(pa_sim_rng_uniform(rng) * (H - 5));
    uint32_t w = 1 + (uint32_t)(pa_sim_rng_uniform(rng) * 6);
    uint32_t h = 1 + (uint32_t)(pa_sim_rng_uniform(rng) * 6);
    for (uint32_t j = y; j < y + h && j < H; j++)
      for (uint32_t i = x; i < x + w && i < W; i++)
        g->cells[(size_t)j * W + i] = PA_CELL_OCCUPIED;
  }
}

/* Wall clearance (exact within reach, with its normal) against a brute force
 * over every blocked cell, from random points, points on grid lines and
 * corners, near the map border and inside walls: a w x h room with random
 * blocks, reach up to reach_max [m], n points; returns the exact ones. */
static int clearance_vs_brute(uint32_t W, uint32_t H, double reach_min,
                              double reach_max, int n, uint64_t rng) {
  pa_grid g;
  block_room(&g, W, H, (int)(60 * (double)W * H / (120 * 90)), &rng);
  pa_robot_def r = ts_robot("r", 0.3, 0.3, 0);
  for (int j = 4; j <= 8; j++)
    for (int i = 4; i <= 8; i++)
      g.cells[j * W + i] = 0;
  pa_sim_def d = pa_sim_def_default();
  pa_sim_model m;
  pa_sim_state s;
  ts_make(&m, &s, &d, &g, &r, 1, NULL, 0);
  int exact = 0;
  for (int k = 0; k < n; k++) {
    double gx = (W + 1) * pa_sim_rng_uniform(&rng) - 0.5;
    double gy = (H + 1) * pa_sim_rng_uniform(&rng) - 0.5;
    if (k % 3 == 1)
      gx = floor(gx); /* on a vertical grid line */
    if (k % 5 == 2)
      gy = floor(gy);
    double reach =
        reach_min + (reach_max - reach_min) * pa_sim_rng_uniform(&rng);
    double nx = 0, ny = 0;
    double c = pa_sim_int_wall_clearance(&m, gx * 0.05, gy * 0.05, reach, &nx,
                                         &ny);
    double best = INFINITY;
    for (int j = -1; j <= (int)H; j++)
      for (int i = -1; i <= (int)W; i++) {
        bool b = i < 0 || j < 0 || i >= (int)W || j >= (int)H ||
                 g.cells[j * W + i] != 0;
        if (!b)
          continue;
        double ddx = fmax(0, fmax((double)i - gx, gx - (double)(i + 1)));
        double ddy = fmax(0, fmax((double)j - gy, gy - (double)(j + 1)));
        best = fmin(best, ddx * ddx + ddy * ddy);
      }
    double want = sqrt(best) * 0.05;
    if (want < reach) {
      exact++;
      if (fabs(c - want) > 1e-12)
        fail_msg("clearance at (%.17g, %.17g) cells: %.17g, brute force %.17g",
                 gx, gy, c, want);
      assert_true(fabs(hypot(nx, ny) - 1) < 1e-9);
    } else {
      assert_true(c >= reach - 1e-12); /* beyond reach: a lower bound */
    }
  }
  ts_free(&m, &s);
  pa_grid_free(&g);
  return exact;
}

static void test_clearance_brute_force(void **st) {
  (void)st;
  assert_true(clearance_vs_brute(120, 90, 0.02, 0.42, 20000, 77) > 2000);
}

/* Reaches of 60-120 cells in a 300-cell-wide room: the row scans of the
 * blocked bits cross several 64-cell words on each side. */
static void test_clearance_brute_force_wide(void **st) {
  (void)st;
  assert_true(clearance_vs_brute(300, 300, 3.0, 6.0, 1500, 78) > 1000);
}

/* A robot's wall memo (pa_sim_int_free_near, pa_sim_int_clearance_near)
 * changes no answer, bit for bit: walkers with small steps (the memo's rows
 * and cell reused), jumps, points on grid lines, radii too big for the memo,
 * a stale cell guess, and the memo of a robot whose map was replaced. */
static void test_wall_memo_same(void **st) {
  (void)st;
  const uint32_t W = 200, H = 150;
  pa_grid g;
  uint64_t rng = 91;
  block_room(&g, W, H, 140, &rng);
  pa_robot_def r = ts_robot("r", 0.5, 0.5, 0);
  for (int j = 6; j <= 14; j++)
    for (int i = 6; i <= 14; i++)
      g.cells[j * W + i] = 0;
  pa_sim_def d = pa_sim_def_default();
  pa_sim_model m;
  pa_sim_state s;
  ts_make(&m, &s, &d, &g, &r, 1, NULL, 0);
  pa_sim_wall_memo memo[6];
  memset(memo, 0, sizeof memo);
  memo[5].near[0] = 3; /* a guess far from everything */
  memo[5].near[1] = 140;
  long used = 0, hits = 0, blocked = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (int wk = 0; wk < 6; wk++) {
      pa_sim_wall_memo *mm = wk == 0 ? &s.motion[0].walls : &memo[wk];
      double gx = W * pa_sim_rng_uniform(&rng),
             gy = H * pa_sim_rng_uniform(&rng);
      for (int k = 0; k < 3000; k++) {
        gx += 0.4 * pa_sim_rng_uniform(&rng) - 0.2;
        gy += 0.4 * pa_sim_rng_uniform(&rng) - 0.2;
        if (k % 97 == 0) { /* a jump */
          gx = W * pa_sim_rng_uniform(&rng);
          gy = H * pa_sim_rng_uniform(&rng);
        }
        gx = fmin(fmax(gx, -0.5), W + 0.5);
        gy = fmin(fmax(gy, -0.5), H + 0.5);
        double px = k % 7 == 3 ? floor(gx) : gx; /* on a grid line */
        double py = k % 11 == 5 ? floor(gy) : gy;
        double rad = k % 13 == 0 ? 0.6 + 0.4 * pa_sim_rng_uniform(&rng)
                                 : 0.03 + 0.3 * pa_sim_rng_uniform(&rng);
        double margin = k % 2 ? 0 : 0.05 * pa_sim_rng_uniform(&rng);
        double x = px * 0.05, y = py * 0.05;
        bool f0 = pa_sim_int_free(&m, &s, 0, x, y, rad, false);
        bool f1 = pa_sim_int_free_near(&m, &s, 0, x, y, rad, false, mm);
        if (f0 != f1)
          fail_msg("free at (%.17g, %.17g) cells, r %.17g: %d, memo %d", px, py,
                   rad, f0, f1);
        blocked += !f0;
        double nx0 = 0, ny0 = 0, nx1 = 0, ny1 = 0;
        double c0 = pa_sim_int_clearance(&m, &s, 0, x, y, rad, margin, &nx0,
                                         &ny0, false);
        double c1 = pa_sim_int_clearance_near(&m, &s, 0, x, y, rad, margin,
                                              &nx1, &ny1, false, mm);
        if (memcmp(&c0, &c1, sizeof c0) || memcmp(&nx0, &nx1, sizeof nx0) ||
            memcmp(&ny0, &ny1, sizeof ny0))
          fail_msg("clearance at (%.17g, %.17g) cells, r %.17g + %.17g: "
                   "%.17g (%.17g, %.17g), memo %.17g (%.17g, %.17g)",
                   px, py, rad, margin, c0, nx0, ny0, c1, nx1, ny1);
        used += mm->rows > 0;
        hits += mm->near[0] != 0 || mm->near[1] != 0;
      }
    }
    if (pass == 0) { /* a new map: the state's memos are forgotten */
      ts_block(&g, 1.0, 1.0, 9.0, 1.5);
      uint32_t moved = 0;
      char err[256];
      assert_int_equal(pa_sim_set_grid(&m, &s, &g, &moved, err, sizeof err), 0);
      assert_int_equal(s.motion[0].walls.rows, 0);
      memset(memo, 0, sizeof memo); /* the others knew the old map */
    }
  }
  assert_true(used > 10000); /* the memo's rows were in use */
  assert_true(hits > 10000);
  assert_true(blocked > 3000); /* both answers were asked many times */
  ts_free(&m, &s);
  pa_grid_free(&g);
}

/* A move's walls nearby (pa_sim_int_move_free, pa_sim_int_move_clearance:
 * the faces of the cells around the robot, and the clearance it knows)
 * change no answer (bit for bit; a normal up to a rounding where two cells
 * tie): walkers with small steps (the faces and
 * the known clearance reused), jumps, points on grid lines and in walls,
 * radii too big for the box, cluttered places (too many faces: the rows),
 * and a robot whose map was replaced. */
static void test_wall_faces_same(void **st) {
  (void)st;
  const uint32_t W = 200, H = 150;
  pa_grid g;
  uint64_t rng = 93;
  block_room(&g, W, H, 60, &rng);
  pa_robot_def r = ts_robot("r", 0.5, 0.5, 0);
  for (int j = 6; j <= 14; j++)
    for (int i = 6; i <= 14; i++)
      g.cells[j * W + i] = 0;
  pa_sim_def d = pa_sim_def_default();
  pa_sim_model m;
  pa_sim_state s;
  ts_make(&m, &s, &d, &g, &r, 1, NULL, 0);
  long faces = 0, full = 0, known = 0, blocked = 0, near = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (int wk = 0; wk < 6; wk++) {
      pa_sim_motion *mv = &s.motion[0];
      double gx = W * pa_sim_rng_uniform(&rng),
             gy = H * pa_sim_rng_uniform(&rng);
      for (int k = 0; k < 4000; k++) {
        gx += 0.2 * pa_sim_rng_uniform(&rng) - 0.1;
        gy += 0.2 * pa_sim_rng_uniform(&rng) - 0.1;
        if (k % 197 == 0) { /* a jump */
          gx = W * pa_sim_rng_uniform(&rng);
          gy = H * pa_sim_rng_uniform(&rng);
        }
        gx = fmin(fmax(gx, -0.5), W + 0.5);
        gy = fmin(fmax(gy, -0.5), H + 0.5);
        double px = k % 7 == 3 ? floor(gx) : gx; /* on a grid line */
        double py = k % 11 == 5 ? floor(gy) : gy;
        double rad = k % 53 == 0 ? 1.2 + 0.4 * pa_sim_rng_uniform(&rng)
                                 : 0.03 + 0.3 * pa_sim_rng_uniform(&rng);
        double margin = k % 2 ? 0 : 0.05 * pa_sim_rng_uniform(&rng);
        double x = px * 0.05, y = py * 0.05;
        pa_sim_wall_cache before = mv->faces;
        bool f0 = pa_sim_int_free(&m, &s, 0, x, y, rad, false);
        /* pressed on two tests in three: the face nearest asked first */
        bool f1 = pa_sim_int_move_free(&m, &s, 0, x, y, rad, NULL, &mv->walls,
                                       &mv->faces, k % 3 != 0);
        if (f0 != f1)
          fail_msg("free at (%.17g, %.17g) cells, r %.17g: %d, faces %d", px,
                   py, rad, f0, f1);
        blocked += !f0;
        double left = before.clear - rad, ex = x - before.cx,
               ey = y - before.cy;
        known += before.cmap == m.blocked && left > 0 &&
                 ex * ex + ey * ey < left * left;
        double nx0 = 0, ny0 = 0, nx1 = 0, ny1 = 0;
        double c0 = pa_sim_int_clearance(&m, &s, 0, x, y, rad, margin, &nx0,
                                         &ny0, false);
        double c1 =
            pa_sim_int_move_clearance(&m, &s, 0, x, y, rad, margin, &nx1, &ny1,
                                      NULL, &mv->walls, &mv->faces);
        /* the same value; the same normal but where two cells' nearest
         * points tie (a point a rounding off a grid line: each side's) */
        if (memcmp(&c0, &c1, sizeof c0) ||
            (c0 < margin && (fabs(nx0 - nx1) > 1e-9 || fabs(ny0 - ny1) > 1e-9)))
          fail_msg("clearance at (%.17g, %.17g) cells, r %.17g + %.17g: "
                   "%.17g (%.17g, %.17g), faces %.17g (%.17g, %.17g)",
                   px, py, rad, margin, c0, nx0, ny0, c1, nx1, ny1);
        near += c0 < margin;
        faces += mv->faces.map && mv->faces.n > 0;
        full += mv->faces.map && mv->faces.n < 0;
      }
    }
    if (pass == 0) { /* a new map: the state's walls nearby are forgotten */
      ts_block(&g, 1.0, 1.0, 9.0, 1.5);
      uint32_t moved = 0;
      char err[256];
      assert_int_equal(pa_sim_set_grid(&m, &s, &g, &moved, err, sizeof err), 0);
      assert_null(s.motion[0].faces.map);
      assert_null(s.motion[0].faces.cmap);
    }
  }
  printf("faces: %ld answers from faces, %ld cluttered, %ld known clear, "
         "%ld blocked, %ld within reach\n",
         faces, full, known, blocked, near);
  assert_true(faces > 10000); /* the faces answered */
  assert_true(full > 100);    /* and the rows where they were too many */
  assert_true(known > 1000);  /* the known clearance answered */
  assert_true(blocked > 3000 && near > 3000);
  ts_free(&m, &s);
  pa_grid_free(&g);
}

/* From several starts, at many headings and speeds, drive straight further
 * than the room's diagonal: never inside, and it meets something (bumped). */
static void test_walls_many_angles(void **st) {
  (void)st;
  const double speeds[] = {0.5, 1.0, 4.0};
  const double starts[][2] = {{1.5, 4.5}, {3.0, 1.6}, {4.4, 1.8}, {4.5, 3.5}};
  for (size_t sp = 0; sp < 3; sp++) {
    pa_sim_model m;
    pa_sim_state s;
    arena(&m, &s, speeds[sp]);
    for (size_t k = 0; k < 4; k++)
      for (int a = 0; a < 48; a++) {
        double th = a * (2 * M_PI / 48) + 0.01;
        assert_int_equal(ts_cmd(&m, &s, PA_OP_TELEPORT, 0, starts[k][0],
                                starts[k][1], th, 0),
                         PA_OK);
        assert_int_equal(ts_cmd(&m, &s, PA_OP_SET_CMD, 0, speeds[sp], 0, 0, 0),
                         PA_OK);
        int ticks = (int)(8.5 / speeds[sp] / m.dt) + 10; /* > the diagonal */
        bool bumped = false;
        for (int t = 0; t < ticks; t++) {
          pa_sim_step(&m, &s);
          assert_no_overlap(&m, &s);
          bumped = bumped || (s.rs[0].flags & PA_RS_BUMPED);
        }
        assert_true(bumped);
      }
    ts_free(&m, &s);
  }
}

/* Into a wall at 45 degrees: slides along it; reported v is the real
 * motion; into a corner: stops. */
static void test_slide_and_corner(void **st) {
  (void)st;
  pa_sim_model m;
  pa_sim_state s;
  arena(&m, &s, 1.0);
  /* bottom wall's inner face is y = 0.05: drive south-east from near it */
  assert_int_equal(ts_cmd(&m, &s, PA_OP_TELEPORT, 0, 0.6, 0.5, -M_PI / 4, 0),
                   PA_OK);
  assert_int_equal(ts_cmd(&m, &s, PA_OP_SET_CMD, 0, 1.0, 0, 0, 0), PA_OK);
  for (int t = 0; t < 200; t++) {
    pa_sim_step(&m, &s);
    assert_no_overlap(&m, &s);
  }
  double r = s.info[0].radius;
  assert_true(fabs(s.rs[0].y - (0.05 + r)) < 1e-3); /* on the wall */
  assert_true(s.rs[0].flags & PA_RS_BUMPED);
  /* sliding east at |v| cos 45 per tick */
  double x0 = s.rs[0].x;
  pa_sim_step(&m, &s);
  double dx = s.rs[0].x - x0;
  assert_true(fabs(dx - 1.0 * cos(M_PI / 4) * m.dt) < 1e-3 * m.dt + 1e-6);
  assert_true(s.rs[0].v < 0.9 && s.rs[0].v > 0.3); /* what it really did */
  /* into the south-west corner: stops there */
  assert_int_equal(ts_cmd(&m, &s, PA_OP_TELEPORT, 0, 1.0, 0.8, -3 * M_PI / 4, 0),
                   PA_OK);
  assert_int_equal(ts_cmd(&m, &s, PA_OP_SET_CMD, 0, 1.0, 0, 0, 0), PA_OK);
  for (int t = 0; t < 600; t++) {
    pa_sim_step(&m, &s);
    assert_no_overlap(&m, &s);
  }
  assert_true(fabs(s.rs[0].x - (0.05 + r)) < 2e-3);
  assert_true(fabs(s.rs[0].y - (0.05 + r)) < 2e-3);
  assert_true(fabs(s.rs[0].v) < 0.01);
  ts_free(&m, &s);
}

/* Two robots head on: they meet, stop touching, never overlap. */
static void test_head_on(void **st) {
  (void)st;
  pa_grid g;
  ts_room(&g, 200, 100, 0.05);
  pa_robot_def r[2] = {ts_robot("a", 2, 2.5, 0), ts_robot("b", 8, 2.5, M_PI)};
  pa_sim_model m;
  pa_sim_state s;
  ts_make_default(&m, &s, &g, r, 2, NULL, 0);
  assert_int_equal(ts_cmd(&m, &s, PA_OP_SET_CMD, 0, 1, 0, 0, 0), PA_OK);
  assert_int_equal(ts_cmd(&m, &s, PA_OP_SET_CMD, 1, 1, 0, 0, 0), PA_OK);
  for (int t = 0; t < 1200; t++) {
    pa_sim_step(&m, &s);
    assert_no_overlap(&m, &s);
  }
  double gap = s.rs[1].x - s.rs[0].x - s.info[0].radius - s.info[1].radius;
  assert_true(gap >= -1e-9 && gap < 1e-3);
  assert_true(fabs(s.rs[0].y - 2.5) < 1e-9 && fabs(s.rs[1].y - 2.5) < 1e-9);
  assert_true(fabs(s.rs[0].v) < 0.01 && fabs(s.rs[1].v) < 0.01);
  assert_true((s.rs[0].flags & PA_RS_BUMPED) && (s.rs[1].flags & PA_RS_BUMPED));
  ts_free(&m, &s);
}

/* Many robots wandering with random commands among obstacles. */
static void test_crowd_never_overlaps(void **st) {
  (void)st;
  pa_grid g;
  ts_room(&g, 120, 120, 0.05);
  ts_block(&g, 2.0, 2.0, 3.0, 2.2);
  pa_sim_def d = pa_sim_def_default();
  d.robots = 40;
  d.seed = 3;
  pa_sim_model m;
  pa_sim_state s;
  pa_robot_def r0 = ts_robot("r", 1, 1, 0);
  ts_make(&m, &s, &d, &g, &r0, 1, NULL, 0);
  pa_grid_free(&g);
  assert_int_equal(s.robot_count, 40);
  assert_no_overlap(&m, &s);
  uint64_t rng = 99;
  for (int t = 0; t < 2000; t++) {
    if (t % 50 == 0)
      for (uint32_t i = 0; i < s.robot_count; i++)
        ts_cmd(&m, &s, PA_OP_SET_CMD, i, 2 * pa_sim_rng_uniform(&rng) - 0.5, 0,
               6 * pa_sim_rng_uniform(&rng) - 3, 0);
    pa_sim_step(&m, &s);
    assert_no_overlap(&m, &s);
  }
  assert_true(s.bumps > 0);
  ts_free(&m, &s);
}

static void test_teleport_and_spawn_blocked(void **st) {
  (void)st;
  pa_sim_model m;
  pa_sim_state s;
  arena(&m, &s, 1.0);
  double x = s.rs[0].x;
  assert_int_equal(ts_cmd(&m, &s, PA_OP_TELEPORT, 0, 3.6, 1.5, 0, 0),
                   PA_ERR_BLOCKED_POSE); /* in the inner wall */
  assert_int_equal(ts_cmd(&m, &s, PA_OP_TELEPORT, 0, 4.5, 4.3, 0, 0),
                   PA_ERR_BLOCKED_POSE); /* on the circle obstacle */
  assert_int_equal(ts_cmd(&m, &s, PA_OP_TELEPORT, 0, 0.1, 3, 0, 0),
                   PA_ERR_BLOCKED_POSE); /* overlapping the outer wall */
  assert_int_equal(ts_cmd(&m, &s, PA_OP_TELEPORT, 0, -5, 3, 0, 0),
                   PA_ERR_BLOCKED_POSE); /* off the map */
  assert_int_equal(ts_cmd(&m, &s, PA_OP_TELEPORT, 0, NAN, 3, 0, 0),
                   PA_ERR_INVALID_ACTION_SHAPE);
  assert_true(s.rs[0].x == x);
  /* spawn next to robot 0: blocked; further away: ok, then remove */
  pa_cmd c;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SPAWN_ROBOT;
  snprintf(c.name, sizeof c.name, "second");
  c.spawn_robot.x = x + 0.2;
  c.spawn_robot.y = s.rs[0].y;
  pa_reply rep;
  assert_int_equal(pa_sim_apply(&m, &s, &c, &rep), PA_ERR_BLOCKED_POSE);
  assert_string_equal(pa_status_code(rep.status), "blocked_pose");
  c.spawn_robot.x = x + 1.0;
  /* the radius range of world files and set_property: (0, 5], 0 = default */
  double bad_radius[] = {-0.1, 5.01, NAN};
  for (size_t i = 0; i < sizeof bad_radius / sizeof bad_radius[0]; i++) {
    c.spawn_robot.radius = bad_radius[i];
    assert_int_equal(pa_sim_apply(&m, &s, &c, &rep),
                     PA_ERR_INVALID_ACTION_SHAPE);
    assert_non_null(strstr(rep.msg, "(0, 5] m"));
    assert_int_equal(s.robot_count, 1);
  }
  c.spawn_robot.radius = 0;
  assert_int_equal(pa_sim_apply(&m, &s, &c, &rep), PA_OK);
  assert_int_equal(rep.pose.robot, 1);
  assert_int_equal(s.robot_count, 2);
  assert_int_equal(pa_sim_find_robot(&s, "second"), 1);
  assert_int_equal(pa_sim_apply(&m, &s, &c, &rep), PA_ERR_SPAWN_FAILED);
  /* the teleport target now holds robot 1 */
  assert_int_equal(ts_cmd(&m, &s, PA_OP_TELEPORT, 0, x + 1.1, s.rs[0].y, 0, 0),
                   PA_ERR_BLOCKED_POSE);
  /* obstacles: spawn over a robot refused, elsewhere fine, remove by name */
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SPAWN_OBSTACLE;
  c.spawn_obstacle.shape = PA_SHAPE_CIRCLE;
  snprintf(c.name, sizeof c.name, "post");
  c.spawn_obstacle.x = x;
  c.spawn_obstacle.y = s.rs[0].y;
  c.spawn_obstacle.radius = 0.1;
  assert_int_equal(pa_sim_apply(&m, &s, &c, &rep), PA_ERR_BLOCKED_POSE);
  c.spawn_obstacle.x = 2.5;
  c.spawn_obstacle.y = 3.5;
  /* height: [0, 100] (0 = default), as world files and set_property */
  double bad_height[] = {-1, 100.5};
  for (size_t i = 0; i < sizeof bad_height / sizeof bad_height[0]; i++) {
    c.spawn_obstacle.height = bad_height[i];
    assert_int_equal(pa_sim_apply(&m, &s, &c, &rep),
                     PA_ERR_INVALID_ACTION_SHAPE);
    assert_non_null(strstr(rep.msg, "height"));
    assert_int_equal(s.obstacle_count, 2);
  }
  c.spawn_obstacle.height = 0;
  assert_int_equal(pa_sim_apply(&m, &s, &c, &rep), PA_OK);
  assert_int_equal(s.obstacle_count, 3);
  assert_true(s.obs[2].height == 0.5f);
  assert_int_equal(ts_cmd(&m, &s, PA_OP_TELEPORT, 0, 2.5, 3.6, 0, 0),
                   PA_ERR_BLOCKED_POSE);
  memset(&c, 0, sizeof c);
  c.op = PA_OP_REMOVE_OBSTACLE;
  snprintf(c.name, sizeof c.name, "nope");
  assert_int_equal(pa_sim_apply(&m, &s, &c, &rep), PA_ERR_UNKNOWN_OBJECT);
  snprintf(c.name, sizeof c.name, "post");
  assert_int_equal(pa_sim_apply(&m, &s, &c, &rep), PA_OK);
  assert_int_equal(s.obstacle_count, 2);
  assert_int_equal(ts_cmd(&m, &s, PA_OP_TELEPORT, 0, 2.5, 3.6, 0, 0), PA_OK);
  assert_int_equal(ts_cmd(&m, &s, PA_OP_REMOVE_ROBOT, 1, 0, 0, 0, 0), PA_OK);
  assert_int_equal(s.robot_count, 1);
  assert_int_equal(ts_cmd(&m, &s, PA_OP_REMOVE_ROBOT, 1, 0, 0, 0, 0),
                   PA_ERR_UNKNOWN_ROBOT);
  /* reset: back to the initial world, tick continues */
  pa_sim_step(&m, &s);
  uint64_t tick = s.tick;
  assert_int_equal(ts_cmd(&m, &s, PA_OP_RESET, 0, 0, 0, 0, 0), PA_OK);
  assert_true(s.rs[0].x == 1.5 && s.rs[0].y == 4.5);
  assert_int_equal(s.tick, tick);
  ts_free(&m, &s);
}

/* A new map under the running world: robots that fit stay, one inside a
 * new wall moves to a free place (stopped, odometry following), casts and
 * collisions use the new walls, RESET goes back to the world as it stood
 * after the change, and a map with no room is refused with nothing
 * changed. The same world, seed and tick give the same places. */
static void test_set_grid(void **st) {
  (void)st;
  pa_sim_model m;
  pa_sim_state s;
  arena(&m, &s, 1.0);
  pa_cmd c;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SPAWN_ROBOT;
  snprintf(c.name, sizeof c.name, "second");
  c.spawn_robot.x = 4.5;
  c.spawn_robot.y = 1.5;
  pa_reply rep;
  assert_int_equal(pa_sim_apply(&m, &s, &c, &rep), PA_OK);
  assert_int_equal(ts_cmd(&m, &s, PA_OP_SET_CMD, 1, 0.3, 0, 0, 0), PA_OK);
  pa_sim_step(&m, &s);
  double x0 = s.rs[0].x, y0 = s.rs[0].y, x1 = s.rs[1].x, y1 = s.rs[1].y;
  /* The new map: the same room, a wall through robot 1, none elsewhere. */
  pa_grid g;
  ts_room(&g, 120, 120, 0.05);
  ts_block(&g, 4.0, 1.0, 5.0, 2.0);
  uint32_t moved = 99;
  char err[256];
  assert_int_equal(pa_sim_set_grid(&m, &s, &g, &moved, err, sizeof err), 0);
  assert_int_equal(moved, 1);
  assert_true(s.rs[0].x == x0 && s.rs[0].y == y0); /* it fits: untouched */
  assert_false(s.rs[1].x == x1 && s.rs[1].y == y1);
  assert_true(s.rs[1].v == 0 && s.rs[1].odom_x == s.rs[1].x &&
              s.rs[1].odom_y == s.rs[1].y);
  assert_true(pa_sim_clearance(&m, &s, 1, s.rs[1].x, s.rs[1].y,
                               s.info[1].radius, 0, NULL, NULL) >= 0);
  /* the old arm is gone, the new block is there */
  assert_true(pa_sim_cast_plain(&m, 2.0, 2.4, 1, 0, 10) > 3.5);
  assert_true(fabs(pa_sim_cast_plain(&m, 2.0, 1.5, 1, 0, 10) - 2.0) < 1e-9);
  assert_true(pa_sim_overlaps(&m, &s, 0, 4.5, 1.5));
  /* RESET: the world as it stood after the change */
  double mx = s.rs[1].x, my = s.rs[1].y;
  for (int i = 0; i < 50; i++)
    pa_sim_step(&m, &s);
  assert_int_equal(ts_cmd(&m, &s, PA_OP_RESET, 0, 0, 0, 0, 0), PA_OK);
  assert_int_equal(s.robot_count, 2);
  assert_true(s.rs[0].x == x0 && s.rs[1].x == mx && s.rs[1].y == my);
  assert_string_equal(s.info[1].name, "second");
  assert_int_equal(s.obstacle_count, 2);
  /* all blocked: refused, nothing changes */
  pa_grid full;
  ts_room(&full, 120, 120, 0.05);
  ts_block(&full, 0, 0, 6, 6);
  assert_int_equal(pa_sim_set_grid(&m, &s, &full, &moved, err, sizeof err), -1);
  assert_non_null(strstr(err, "no free place"));
  assert_true(s.rs[1].x == mx && s.rs[1].y == my);
  assert_true(pa_sim_cast_plain(&m, 2.0, 2.4, 1, 0, 10) > 3.5);
  pa_grid_free(&full);
  /* the same world, seed and tick: the same place */
  pa_sim_model m2;
  pa_sim_state s2;
  arena(&m2, &s2, 1.0);
  assert_int_equal(pa_sim_apply(&m2, &s2, &c, &rep), PA_OK);
  assert_int_equal(ts_cmd(&m2, &s2, PA_OP_SET_CMD, 1, 0.3, 0, 0, 0), PA_OK);
  pa_sim_step(&m2, &s2);
  assert_int_equal(pa_sim_set_grid(&m2, &s2, &g, &moved, err, sizeof err), 0);
  assert_true(s2.rs[1].x == mx && s2.rs[1].y == my);
  ts_free(&m2, &s2);
  pa_grid_free(&g);
  ts_free(&m, &s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_clearance_brute_force),
      cmocka_unit_test(test_clearance_brute_force_wide),
      cmocka_unit_test(test_wall_memo_same),
      cmocka_unit_test(test_wall_faces_same),
      cmocka_unit_test(test_walls_many_angles),
      cmocka_unit_test(test_slide_and_corner),
      cmocka_unit_test(test_head_on),
      cmocka_unit_test(test_crowd_never_overlaps),
      cmocka_unit_test(test_teleport_and_spawn_blocked),
      cmocka_unit_test(test_set_grid),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
