/* test_dynamics_agents.c - agents in the sim core: each behaviour's path
 * against its definition, the laser and the robots meeting them, the ops'
 * errors, world files, determinism, and a crowd of pedestrians with robots
 * that never overlaps anything. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim_int.h"
#include "test_sim_util.h"
#include "testutil.h"

/* A 20 m x 20 m room (walls inside [0, 0.05] and [19.95, 20]), robot "r"
 * at (2, 2). */
static void room(ts_world *w, uint32_t hz) {
  pa_grid g;
  ts_room(&g, 400, 400, 0.05);
  pa_robot_def r = ts_robot("r", 2, 2, 0);
  pa_sim_def d = pa_sim_def_default();
  if (hz)
    d.control_hz = hz;
  ts_make(&w->m, &w->s, &d, &g, &r, 1, NULL, 0);
  pa_grid_free(&g);
}

static int setup(void **st) {
  room(ts_world_alloc(st), 0);
  return 0;
}

static pa_status spawn(ts_world *w, const char *name, uint32_t beh, double x,
                       double y, double th, double r, double speed,
                       const char *wps, uint32_t *id) {
  pa_cmd c;
  pa_reply rp;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SPAWN_AGENT;
  snprintf(c.name, sizeof c.name, "%s", name);
  snprintf(c.path, sizeof c.path, "%s", wps ? wps : "");
  c.agent = (pa_cmd_agent){x, y, th, r, 0, 0, speed, PA_SHAPE_CIRCLE, beh};
  pa_status st = pa_sim_apply(&w->m, &w->s, &c, &rp);
  if (id)
    *id = rp.obj.id;
  return st;
}

static void steps(ts_world *w, int n) {
  for (int i = 0; i < n; i++)
    pa_sim_step(&w->m, &w->s);
}

/* Straight at its speed along its heading; at a wall it turns back
 * (mirrored), never reaching into it. */
static void test_constant(void **st) {
  ts_world *w = *st;
  uint32_t id;
  assert_int_equal(
      spawn(w, "c", PA_AGENT_CONSTANT, 10, 10, 0, 0.3, 1.0, NULL, &id), PA_OK);
  const pa_obstacle_info *o = &w->s.obs[id];
  steps(w, 200); /* 1 s */
  assert_true(fabs(o->x - 11.0) < 1e-9 && fabs(o->y - 10) < 1e-12);
  double xmax = 0;
  for (int i = 0; i < 3000; i++) {
    pa_sim_step(&w->m, &w->s);
    xmax = fmax(xmax, o->x);
    assert_true(o->x + 0.3 <= 19.95 + 1e-9);
  }
  assert_true(xmax > 19.95 - 0.3 - 0.01); /* it got to the wall */
  assert_true(o->x < 19.0);               /* and came back */
}

/* A loop of waypoints at its speed: on each waypoint at the tick the
 * distance says, and round again. */
static void test_waypoints(void **st) {
  ts_world *w = *st;
  uint32_t id;
  assert_int_equal(spawn(w, "wp", PA_AGENT_WAYPOINTS, 10, 10, 0, 0.3, 1.0,
                         "12,10 12,12 10,12 10,10", &id),
                   PA_OK);
  const pa_obstacle_info *o = &w->s.obs[id];
  const double wx[] = {12, 12, 10, 10}, wy[] = {10, 12, 12, 10};
  for (int lap = 0; lap < 2; lap++)
    for (int k = 0; k < 4; k++) {
      steps(w, 400); /* 2 m at 1 m/s */
      assert_true(fabs(o->x - wx[k]) < 1e-9 && fabs(o->y - wy[k]) < 1e-9);
    }
  steps(w, 200); /* half way along the first side again */
  assert_true(fabs(o->x - 11) < 1e-9 && fabs(o->y - 10) < 1e-9);
}

/* Random walk: its speed while it moves, a new heading each second, the
 * same path for the same seed and another for another seed. */
static uint64_t walk(uint64_t seed, double *path, int n) {
  ts_world w;
  pa_grid g;
  ts_room(&g, 400, 400, 0.05);
  pa_robot_def r = ts_robot("r", 2, 2, 0);
  pa_sim_def d = pa_sim_def_default();
  d.seed = seed;
  ts_make(&w.m, &w.s, &d, &g, &r, 1, NULL, 0);
  pa_grid_free(&g);
  uint32_t id;
  assert_int_equal(
      spawn(&w, "rw", PA_AGENT_RANDOM, 10, 10, 0, 0.3, 0.8, NULL, &id), PA_OK);
  uint64_t h = 1469598103934665603ull;
  double px = w.s.obs[id].x, py = w.s.obs[id].y;
  for (int i = 0; i < n; i++) {
    pa_sim_step(&w.m, &w.s);
    double x = w.s.obs[id].x, y = w.s.obs[id].y;
    double v = hypot(x - px, y - py) / w.m.dt;
    assert_true(v < 1e-9 || fabs(v - 0.8) < 1e-9);
    px = x, py = y;
    if (path)
      path[i] = x;
    uint64_t b;
    memcpy(&b, &x, 8);
    h = (h ^ b) * 1099511628211ull;
    memcpy(&b, &y, 8);
    h = (h ^ b) * 1099511628211ull;
  }
  ts_free(&w.m, &w.s);
  return h;
}

static void test_random_walk(void **st) {
  (void)st;
  static double p[2000];
  uint64_t a = walk(7, p, 2000), b = walk(7, NULL, 2000),
           c = walk(8, NULL, 2000);
  assert_true(a == b);
  assert_true(a != c);
  /* headings change: not a straight line over 10 s */
  double d1 = p[199] - p[0], d2 = p[1999] - p[1800];
  assert_true(fabs(d1 - d2) > 1e-6);
}

/* Pedestrians: one walks to its goal and stays there; two walking at each
 * other swap places without touching. */
static void test_pedestrian(void **st) {
  ts_world *w = *st;
  uint32_t a, b;
  assert_int_equal(
      spawn(w, "pa", PA_AGENT_PEDESTRIAN, 6, 10, 0, 0.25, 1.2, "14,10", &a),
      PA_OK);
  assert_int_equal(
      spawn(w, "pb", PA_AGENT_PEDESTRIAN, 14, 10.05, 0, 0.25, 1.2, "6,10", &b),
      PA_OK);
  const pa_obstacle_info *oa = &w->s.obs[a], *ob = &w->s.obs[b];
  double dmin = 1e9;
  for (int i = 0; i < 4000; i++) {
    pa_sim_step(&w->m, &w->s);
    dmin = fmin(dmin, hypot(oa->x - ob->x, oa->y - ob->y));
  }
  printf("pedestrians: closest %.3f m, ends (%.2f, %.2f) and (%.2f, %.2f)\n",
         dmin, oa->x, oa->y, ob->x, ob->y);
  assert_true(dmin >= 0.5 - 1e-9);
  assert_true(hypot(oa->x - 14, oa->y - 10) < 0.5);
  assert_true(hypot(ob->x - 6, ob->y - 10) < 0.5);
}

/* The laser sees an agent where it is (and where it went); a robot driven
 * at one bumps and stops short of it. */
static void test_laser_and_contact(void **st) {
  ts_world *w = *st;
  uint32_t id;
  /* robot at (2, 2) facing +x; an agent 3 m ahead, standing */
  assert_int_equal(
      spawn(w, "p", PA_AGENT_WAYPOINTS, 5, 2, 0, 0.3, 0, NULL, &id), PA_OK);
  float *ranges = calloc(w->m.beam_cap, sizeof(float));
  pa_sim_scan(&w->m, &w->s, 0, ranges);
  uint32_t beams = w->s.info[0].laser_beams; /* 360 from -pi: beam 180 ahead */
  float ahead = ranges[beams / 2];
  printf("laser ahead: %.4f m\n", (double)ahead);
  assert_true(fabs(ahead - 2.7) < 1e-3);
  /* moved: the laser follows */
  pa_cmd c;
  pa_reply r;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_MOVE_AGENT;
  c.flags = PA_CMDF_AGENT_POSE;
  snprintf(c.name, sizeof c.name, "p");
  c.agent.x = 4;
  c.agent.y = 2;
  assert_int_equal(pa_sim_apply(&w->m, &w->s, &c, &r), PA_OK);
  pa_sim_scan(&w->m, &w->s, 0, ranges);
  assert_true(fabs(ranges[beams / 2] - 1.7) < 1e-3);
  free(ranges);
  /* drive into it */
  assert_int_equal(ts_cmd(&w->m, &w->s, PA_OP_SET_CMD, 0, 1, 0, 0, 0), PA_OK);
  steps(w, 800);
  double gap =
      hypot(w->s.rs[0].x - 4, w->s.rs[0].y - 2) - 0.3 - w->s.info[0].radius;
  assert_true(gap >= -1e-9 && gap < 0.01);
  assert_true(w->s.rs[0].flags & PA_RS_BUMPED);
}

/* Errors by name change nothing; remove and clear. */
static void test_ops(void **st) {
  ts_world *w = *st;
  pa_cmd c;
  pa_reply r;
  assert_int_equal(spawn(w, "a1", PA_AGENT_RANDOM, 8, 8, 0, 0.3, 1, NULL, NULL),
                   PA_OK);
  assert_int_equal(
      spawn(w, "a1", PA_AGENT_RANDOM, 12, 8, 0, 0.3, 1, NULL, NULL),
      PA_ERR_SPAWN_FAILED); /* the name is taken */
  assert_int_equal(spawn(w, "r", PA_AGENT_RANDOM, 12, 8, 0, 0.3, 1, NULL, NULL),
                   PA_ERR_SPAWN_FAILED); /* a robot's name */
  assert_int_equal(
      spawn(w, "a2", PA_AGENT_RANDOM, 8.3, 8, 0, 0.3, 1, NULL, NULL),
      PA_ERR_BLOCKED_POSE);
  assert_int_equal(
      spawn(w, "a2", PA_AGENT_RANDOM, 0.1, 8, 0, 0.3, 1, NULL, NULL),
      PA_ERR_BLOCKED_POSE); /* in the wall */
  assert_int_equal(spawn(w, "a2", 9, 12, 8, 0, 0.3, 1, NULL, NULL),
                   PA_ERR_INVALID_ACTION_SHAPE);
  assert_int_equal(
      spawn(w, "a2", PA_AGENT_RANDOM, 12, 8, 0, 0.3, 11, NULL, NULL),
      PA_ERR_INVALID_ACTION_SHAPE); /* speed */
  assert_int_equal(
      spawn(w, "a2", PA_AGENT_WAYPOINTS, 12, 8, 0, 0.3, 1, "1,2 3", NULL),
      PA_ERR_INVALID_ACTION_SHAPE); /* waypoints */
  /* a path without its NUL (the queue is another process's): refused */
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SPAWN_AGENT;
  memset(c.path, '1', sizeof c.path);
  c.agent = (pa_cmd_agent){
      12, 8, 0, 0.3, 0, 0, 1, PA_SHAPE_CIRCLE, PA_AGENT_WAYPOINTS};
  assert_int_equal(pa_sim_apply(&w->m, &w->s, &c, &r),
                   PA_ERR_INVALID_ACTION_SHAPE);
  assert_int_equal(w->s.agent_count, 1);
  memset(&c, 0, sizeof c);
  c.op = PA_OP_MOVE_AGENT;
  snprintf(c.name, sizeof c.name, "nobody");
  assert_int_equal(pa_sim_apply(&w->m, &w->s, &c, &r), PA_ERR_UNKNOWN_AGENT);
  assert_non_null(strstr(r.msg, "nobody"));
  c.op = PA_OP_REMOVE_AGENT;
  assert_int_equal(pa_sim_apply(&w->m, &w->s, &c, &r), PA_ERR_UNKNOWN_AGENT);
  assert_int_equal(
      spawn(w, "a2", PA_AGENT_CONSTANT, 12, 8, 0, 0.3, 1, NULL, NULL), PA_OK);
  snprintf(c.name, sizeof c.name, "a1");
  assert_int_equal(pa_sim_apply(&w->m, &w->s, &c, &r), PA_OK);
  assert_int_equal(w->s.agent_count, 1);
  c.op = PA_OP_CLEAR_AGENTS;
  assert_int_equal(pa_sim_apply(&w->m, &w->s, &c, &r), PA_OK);
  assert_int_equal(r.obj.id, 1);
  assert_int_equal(w->s.agent_count, 0);
  assert_int_equal(w->s.obstacle_count, 0);
}

/* World files declare agents; reset puts them back where they started. */
static void test_world_file(void **st) {
  (void)st;
  char path[1024]; /* in the test's own directory, removed at exit */
  snprintf(path, sizeof path, "%s/tagtXXXXXX.yaml", pa_test_tmpdir());
  int fd = mkstemps(path, 5);
  assert_true(fd >= 0);
  const char *txt = "robots:\n"
                    "  - {name: r, pose: [0, 0, 0]}\n"
                    "obstacles:\n"
                    "  - {name: crate, shape: box, pose: [1, 2], size: [0.4, "
                    "0.4]}\n"
                    "agents:\n"
                    "  - name: walker\n"
                    "    pose: [0.5, -1, 0]\n"
                    "    behaviour: waypoints\n"
                    "    speed: 0.5\n"
                    "    waypoints: [[1.5, -1], [0.5, -1]]\n"
                    "  - {name: cube, shape: box, size: [0.3, 0.3], pose: [-1, "
                    "1.5, 0], behaviour: random, speed: 0.2}\n";
  assert_true(write(fd, txt, strlen(txt)) == (ssize_t)strlen(txt));
  close(fd);
  pa_world wd;
  char err[256] = "";
  if (pa_world_load(path, &wd, err, sizeof err) != 0)
    fail_msg("%s", err);
  assert_int_equal(wd.obstacle_count, 3);
  assert_int_equal(wd.obstacles[1].agent, PA_AGENT_WAYPOINTS);
  assert_int_equal(wd.obstacles[1].waypoint_count, 2);
  assert_int_equal(wd.obstacles[2].agent, PA_AGENT_RANDOM);
  pa_grid g;
  if (pa_map_load(&wd.map, &g, err, sizeof err) != 0)
    fail_msg("%s", err);
  ts_world w;
  pa_sim_def d = pa_sim_def_default();
  pa_sim_model *m = &w.m;
  pa_sim_state *s = &w.s;
  if (pa_sim_model_init(m, &d, &wd, &g, err, sizeof err) != 0 ||
      pa_sim_state_init(m, s, err, sizeof err) != 0)
    fail_msg("%s", err);
  pa_grid_free(&g);
  assert_int_equal(s->agent_count, 2);
  assert_int_equal(s->obs[1].agent, PA_AGENT_WAYPOINTS);
  steps(&w, 400); /* 2 s at 0.5 m/s: at (1.5, -1) */
  assert_true(fabs(s->obs[1].x - 1.5) < 1e-9);
  assert_true(s->obs[0].x == 1); /* the crate stays */
  pa_sim_reset(m, s);
  assert_true(s->obs[1].x == 0.5 && s->agent_count == 2);
  steps(&w, 200);
  assert_true(fabs(s->obs[1].x - 1.0) < 1e-9);
  ts_free(m, s);
  pa_world_free(&wd);
  /* a behaviour it does not know is an error at its line */
  FILE *f = fopen(path, "w");
  fputs("agents:\n  - {pose: [0, 0], behaviour: dance}\n", f);
  fclose(f);
  assert_int_not_equal(pa_world_load(path, &wd, err, sizeof err), 0);
  assert_non_null(strstr(err, ":2:"));
  unlink(path);
}

typedef struct disc {
  double x, y, r;
} disc;
static int by_x(const void *a, const void *b) {
  double d = ((const disc *)a)->x - ((const disc *)b)->x;
  return d < 0 ? -1 : d > 0;
}

/* 200 pedestrians walking between random waypoints among 10 robots driven
 * at random for 60 simulated seconds (50 Hz): nothing ever overlaps. */
static void test_crowd_no_overlap(void **st) {
  (void)st;
  ts_world w;
  pa_grid g;
  ts_room(&g, 400, 400, 0.05);
  pa_robot_def rs[10];
  for (int i = 0; i < 10; i++) {
    char nm[16];
    snprintf(nm, sizeof nm, "r%d", i);
    rs[i] = ts_robot(nm, 2 + 1.7 * i, 1.0, 0);
  }
  pa_sim_def d = pa_sim_def_default();
  d.control_hz = 50;
  d.seed = 3;
  ts_make(&w.m, &w.s, &d, &g, rs, 10, NULL, 0);
  pa_grid_free(&g);
  uint64_t lcg = 11;
  int placed = 0;
  while (placed < 200) {
    char wp[128];
    int n = 0;
    for (int k = 0; k < 3; k++)
      n += snprintf(wp + n, sizeof wp - (size_t)n, "%.3f,%.3f ",
                    1 + 18 * pa_sim_rng_uniform(&lcg),
                    2.5 + 16.5 * pa_sim_rng_uniform(&lcg));
    char nm[16];
    snprintf(nm, sizeof nm, "p%d", placed);
    double x = 1 + 18 * pa_sim_rng_uniform(&lcg);
    double y = 2.5 + 16.5 * pa_sim_rng_uniform(&lcg);
    if (spawn(&w, nm, PA_AGENT_PEDESTRIAN, x, y, 0, 0.25,
              0.6 + 0.8 * pa_sim_rng_uniform(&lcg), wp, NULL) == PA_OK)
      placed++;
  }
  static disc body[256];
  int64_t t0 = pa_now_ns();
  uint64_t bumps0 = w.s.bumps;
  for (int t = 0; t < 3000; t++) {
    if (t % 50 == 0)
      for (uint32_t i = 0; i < 10; i++)
        assert_int_equal(ts_cmd(&w.m, &w.s, PA_OP_SET_CMD, i,
                                1.6 * pa_sim_rng_uniform(&lcg) - 0.4, 0,
                                4 * pa_sim_rng_uniform(&lcg) - 2, 0),
                         PA_OK);
    pa_sim_step(&w.m, &w.s);
    /* every body against every other (sorted by x: only those within
     * the largest sum of radii along x can touch), and the walls */
    const pa_sim_state *s = &w.s;
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->obstacle_count; i++) {
      const pa_obstacle_info *a = &s->obs[i];
      assert_true(a->active);
      assert_true(pa_sim_int_wall_clearance(&w.m, a->x, a->y, a->radius, NULL,
                                            NULL) >= a->radius - 1e-9);
      body[n++] = (disc){a->x, a->y, a->radius};
    }
    for (uint32_t j = 0; j < s->robot_count; j++)
      body[n++] = (disc){s->rs[j].x, s->rs[j].y, s->info[j].radius};
    qsort(body, n, sizeof body[0], by_x);
    for (uint32_t i = 0; i < n; i++)
      for (uint32_t j = i + 1; j < n && body[j].x - body[i].x < 0.5; j++)
        assert_true(sqrt((body[i].x - body[j].x) * (body[i].x - body[j].x) +
                         (body[i].y - body[j].y) * (body[i].y - body[j].y)) >=
                    body[i].r + body[j].r - 1e-9);
    for (uint32_t i = 0; i < s->robot_count; i++)
      assert_true(pa_sim_clearance(&w.m, s, i, s->rs[i].x, s->rs[i].y,
                                   s->info[i].radius, 0, NULL, NULL) >= 0);
  }
  double moved = 0;
  for (uint32_t i = 0; i < w.s.obstacle_count; i++)
    moved += w.s.obs[i].x;
  printf("crowd: 200 pedestrians, 10 robots, 60 s sim in %.2f s wall, %" PRIu64
         " robot bumps\n",
         (double)(pa_now_ns() - t0) / 1e9, w.s.bumps - bumps0);
  assert_true(moved > 0);
  ts_free(&w.m, &w.s);
}

/* The same agents and seed hash the same twice, and as pinned (a change
 * of any behaviour's arithmetic shows here). */
#define AGENTS_PINNED_HASH 0x13d06ed2b748c2baull
static void test_determinism(void **st) {
  (void)st;
  uint64_t h[2];
  for (int k = 0; k < 2; k++) {
    ts_world w;
    room(&w, 0);
    assert_int_equal(spawn(&w, "a", PA_AGENT_PEDESTRIAN, 8, 8, 0, 0.25, 1,
                           "12,12 4,10", NULL),
                     PA_OK);
    assert_int_equal(
        spawn(&w, "b", PA_AGENT_RANDOM, 12, 8, 0, 0.25, 1, NULL, NULL), PA_OK);
    assert_int_equal(
        spawn(&w, "c", PA_AGENT_CONSTANT, 10, 14, 1, 0.25, 1, NULL, NULL),
        PA_OK);
    assert_int_equal(ts_cmd(&w.m, &w.s, PA_OP_SET_CMD, 0, 0.7, 0, 0.3, 0),
                     PA_OK);
    h[k] = 1469598103934665603ull;
    for (int t = 0; t < 4000; t++) {
      pa_sim_step(&w.m, &w.s);
      for (uint32_t i = 0; i < w.s.obstacle_count; i++) {
        uint64_t b;
        memcpy(&b, &w.s.obs[i].x, 8);
        h[k] = (h[k] ^ b) * 1099511628211ull;
        memcpy(&b, &w.s.obs[i].y, 8);
        h[k] = (h[k] ^ b) * 1099511628211ull;
      }
    }
    ts_free(&w.m, &w.s);
  }
  printf("agents determinism hash: 0x%016" PRIx64 "\n", h[0]);
  assert_true(h[0] == h[1]);
  if (AGENTS_PINNED_HASH != 0)
    assert_true(h[0] == AGENTS_PINNED_HASH);
}

/* Positions and velocities of every obstacle over n ticks, hashed. */
static uint64_t agents_run_hash(ts_world *w, int n) {
  uint64_t h = 1469598103934665603ull;
  for (int t = 0; t < n; t++) {
    pa_sim_step(&w->m, &w->s);
    for (uint32_t i = 0; i < w->s.obstacle_count; i++) {
      const double v[4] = {w->s.obs[i].x, w->s.obs[i].y, w->s.agents[i].vx,
                           w->s.agents[i].vy};
      for (int k = 0; k < 4; k++) {
        uint64_t b;
        memcpy(&b, &v[k], 8);
        h = (h ^ b) * 1099511628211ull;
      }
    }
  }
  return h;
}

static pa_status snapjson(ts_world *w, uint32_t op, const char *path) {
  pa_cmd c;
  pa_reply rp;
  memset(&c, 0, sizeof c);
  c.op = op;
  snprintf(c.path, sizeof c.path, "%s", path);
  return pa_sim_apply(&w->m, &w->s, &c, &rp);
}

/* save_snapshot_json keeps each agent's behaviour, speed, waypoints, the
 * next one, velocity and generator: after a reload the world walks on bit
 * for bit as it did after the save; a broken agent record changes nothing. */
static void test_snapshot_json(void **st) {
  (void)st;
  ts_world w;
  room(&w, 0);
  w.m.def.data_dir = pa_test_tmpdir();
  assert_int_equal(spawn(&w, "p", PA_AGENT_PEDESTRIAN, 8, 8, 0, 0.25, 1,
                         "12,12 4,10 6,4", NULL),
                   PA_OK);
  assert_int_equal(
      spawn(&w, "rw", PA_AGENT_RANDOM, 12, 8, 0, 0.25, 0.8, NULL, NULL), PA_OK);
  assert_int_equal(
      spawn(&w, "c", PA_AGENT_CONSTANT, 10, 14, 1, 0.25, 1, NULL, NULL), PA_OK);
  assert_int_equal(spawn(&w, "wp", PA_AGENT_WAYPOINTS, 5, 15, 0, 0.3, 0.7,
                         "9,15 9,17 5,17", NULL),
                   PA_OK);
  assert_int_equal(ts_cmd(&w.m, &w.s, PA_OP_SET_CMD, 0, 0.5, 0, 0.2, 0), PA_OK);
  steps(&w, 700); /* waypoints part-way, a random walk's generator moved */
  assert_int_equal(snapjson(&w, PA_OP_SAVE_SNAPSHOT_JSON, "a.json"), PA_OK);
  uint64_t h1 = agents_run_hash(&w, 900);
  char f[700];
  snprintf(f, sizeof f, "%s/a.json", pa_test_tmpdir());
  json_error_t je;
  json_t *root = json_load_file(f, 0, &je);
  assert_non_null(root);
  json_t *ag = json_object_get(root, "agents");
  assert_int_equal(json_array_size(ag), 4);
  assert_int_equal(
      json_array_size(json_object_get(json_array_get(ag, 0), "waypoints")), 3);
  /* a record naming no obstacle: refused by name, the world as it was */
  json_object_set_new(json_array_get(ag, 1), "obstacle", json_integer(99));
  snprintf(f, sizeof f, "%s/bad.json", pa_test_tmpdir());
  assert_int_equal(json_dump_file(root, f, JSON_REAL_PRECISION(17)), 0);
  json_decref(root);
  double x0 = w.s.obs[0].x;
  pa_cmd c;
  pa_reply rp;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_LOAD_SNAPSHOT_JSON;
  snprintf(c.path, sizeof c.path, "bad.json");
  assert_int_equal(pa_sim_apply(&w.m, &w.s, &c, &rp), PA_ERR_INVALID_MESSAGE);
  assert_non_null(strstr(rp.msg, "agents[1].obstacle"));
  assert_true(w.s.obs[0].x == x0);
  assert_int_equal(snapjson(&w, PA_OP_LOAD_SNAPSHOT_JSON, "a.json"), PA_OK);
  assert_int_equal(w.s.agent_count, 4);
  uint64_t h2 = agents_run_hash(&w, 900);
  printf("agents after save 0x%016" PRIx64 ", after reload 0x%016" PRIx64 "\n",
         h1, h2);
  assert_true(h1 == h2);
  ts_free(&w.m, &w.s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_constant, setup, ts_world_free),
      cmocka_unit_test_setup_teardown(test_waypoints, setup, ts_world_free),
      cmocka_unit_test(test_random_walk),
      cmocka_unit_test_setup_teardown(test_pedestrian, setup, ts_world_free),
      cmocka_unit_test_setup_teardown(test_laser_and_contact, setup,
                                      ts_world_free),
      cmocka_unit_test_setup_teardown(test_ops, setup, ts_world_free),
      cmocka_unit_test(test_world_file),
      cmocka_unit_test(test_crowd_no_overlap),
      cmocka_unit_test(test_determinism),
      cmocka_unit_test(test_snapshot_json),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
