/* test_dynamics.c - dynamic bodies in the sim core: closed forms of a damped
 * body under a constant force and torque, walls, the velocity controller's
 * force bound, pulses at a point, thrusters, and the refusals. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pa_props.h"
#include "test_sim_util.h"
#include "testutil.h"

/* A 40 m x 40 m room (wall cells inside [0, 0.05] and [39.95, 40]) with one
 * robot "r" at (x, y, 0), dynamic unless kin. */
static void room(ts_world *w, double x, double y, bool kin, bool omni,
                 bool thr) {
  pa_grid g;
  ts_room(&g, 800, 800, 0.05);
  pa_robot_def r = ts_robot("r", x, y, 0);
  r.dynamics = kin ? PA_DYN_KINEMATIC : PA_DYN_DYNAMIC;
  r.drive = omni ? PA_DRIVE_OMNI : PA_DRIVE_DIFF;
  r.mass = 10;
  r.inertia = 0.25;
  r.lin_damping = 20;
  r.ang_damping = 1;
  r.max_force = 100;
  r.max_torque = 10;
  if (thr) { /* two thrusters 0.2 m either side, pushing ahead */
    r.thruster_count = 2;
    r.thrusters[0] = (pa_thruster_def){"left", 0, 0.25, 0, 10};
    r.thrusters[1] = (pa_thruster_def){"right", 0, -0.25, 0, 10};
  }
  ts_make_default(&w->m, &w->s, &g, &r, 1, NULL, 0);
}

static int dyn_room(void **st) {
  room(ts_world_alloc(st), 20, 20, false, false, false);
  return 0;
}

static pa_status force(ts_world *w, double fx, double fy, double tz,
                       uint32_t frame, uint32_t mode, double px, double py,
                       double secs) {
  pa_cmd c;
  pa_reply r;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SET_FORCE;
  c.robot = 0;
  c.force = (pa_cmd_force){fx, fy, tz, px, py, secs, frame, mode};
  return pa_sim_apply(&w->m, &w->s, &c, &r);
}

static void steps(ts_world *w, int n) {
  for (int i = 0; i < n; i++)
    pa_sim_step(&w->m, &w->s);
}

/* m dv/dt = F - c v from rest: v = F/c (1 - e^(-ct/m)), x = F/c (t - m/c (1
 * - e^(-ct/m))). The scheme is exact for a constant force: 1e-9. */
static void test_terminal_velocity(void **st) {
  ts_world *w = *st;
  const double F = 40, c = 20, m = 10;
  assert_int_equal(force(w, F, 0, 0, PA_FRAME_WORLD, PA_FORCE_HOLD, 0, 0, 0),
                   PA_OK);
  double x0 = w->s.rs[0].x;
  for (int k = 1; k <= 3; k++) {
    steps(w, 200); /* 1 s at 200 Hz */
    double t = k * 1.0, e = exp(-c * t / m);
    double v = F / c * (1 - e), x = F / c * (t - m / c * (1 - e));
    assert_true(fabs(w->s.rs[0].v - v) < 1e-9);
    assert_true(fabs(w->s.rs[0].x - x0 - x) < 1e-9);
    assert_true(fabs(w->s.rs[0].y - 20) < 1e-12);
  }
  /* Terminal velocity F/c = 2 m/s (beyond max_v 1: forces are not limited
   * by the velocity limits). */
  assert_true(fabs(w->s.rs[0].v - 2.0) < 0.01);
  assert_true(!(w->s.rs[0].flags & PA_RS_BUMPED));
}

/* I dw/dt = T - c w: the same closed form for the heading. */
static void test_torque_turn(void **st) {
  ts_world *w = *st;
  const double T = 1, c = 1, I = 0.25;
  assert_int_equal(force(w, 0, 0, T, PA_FRAME_ROBOT, PA_FORCE_HOLD, 0, 0, 0),
                   PA_OK);
  steps(w, 100); /* 0.5 s */
  double t = 0.5, e = exp(-c * t / I);
  double wz = T / c * (1 - e), th = T / c * (t - I / c * (1 - e));
  assert_true(fabs(w->s.rs[0].w - wz) < 1e-9);
  assert_true(fabs(w->s.rs[0].theta - th) < 1e-9);
  assert_true(fabs(w->s.rs[0].x - 20) < 1e-12); /* a pure torque */
}

/* A body pushed into a wall stops at it: never inside, and no speed into
 * it left; it slides along it with the tangential part. */
static void test_wall_stop(void **st) {
  ts_world *w = *st;
  w->s.rs[0].x = 38;
  double rad = w->s.info[0].radius, wall = 39.95;
  assert_int_equal(force(w, 80, 30, 0, PA_FRAME_WORLD, PA_FORCE_HOLD, 0, 0, 0),
                   PA_OK);
  bool bumped = false;
  for (int i = 0; i < 800; i++) {
    pa_sim_step(&w->m, &w->s);
    assert_true(w->s.rs[0].x + rad <= wall + 1e-9);
    assert_true(pa_sim_clearance(&w->m, &w->s, 0, w->s.rs[0].x, w->s.rs[0].y,
                                 rad, 0, NULL, NULL) >= 0);
    bumped |= (w->s.rs[0].flags & PA_RS_BUMPED) != 0;
  }
  assert_true(bumped);
  assert_true(w->s.rs[0].x + rad > wall - 0.01); /* at the wall */
  /* world-frame velocity: x (into the wall) gone, y sliding at 30/20 */
  double th = w->s.rs[0].theta, c0 = cos(th), s0 = sin(th);
  double vx = c0 * w->s.rs[0].v - s0 * w->s.rs[0].vy;
  double vy = s0 * w->s.rs[0].v + c0 * w->s.rs[0].vy;
  printf("wall: x %.9f vx %g vy %g\n", w->s.rs[0].x, vx, vy);
  assert_true(fabs(vx) < 1e-6);
  assert_true(fabs(vy - 1.5) < 0.03); /* the contact's slide keeps 98+% */
}

/* Velocity commands drive a dynamic body through the controller: it reaches
 * the target, and no tick's change of speed needs more than max_force. */
static void test_velocity_controller(void **st) {
  ts_world *w = *st;
  assert_int_equal(ts_cmd(&w->m, &w->s, PA_OP_SET_CMD, 0, 0.8, 0, 0.5, 0),
                   PA_OK);
  const double dt = w->m.dt, amax = 100.0 / 10.0;
  double v0 = 0;
  int first = -1;
  for (int i = 0; i < 400; i++) {
    pa_sim_step(&w->m, &w->s);
    double v = w->s.rs[0].v;
    assert_true(v - v0 <= amax * dt * (1 + 1e-9));
    if (first < 0 && fabs(v - 0.8) < 1e-9)
      first = i;
    v0 = v;
  }
  printf("controller: 0.8 m/s after %d ticks\n", first);
  /* 0.8 m/s at 10 m/s^2 less damping: more than 16 ticks, under 40 */
  assert_true(first > 16 && first < 40);
  assert_true(fabs(w->s.rs[0].v - 0.8) < 1e-6);
  assert_true(fabs(w->s.rs[0].w - 0.5) < 1e-6);
  /* stop brakes with the same bound */
  assert_int_equal(ts_cmd(&w->m, &w->s, PA_OP_STOP, 0, 0, 0, 0, 0), PA_OK);
  steps(w, 400);
  assert_true(fabs(w->s.rs[0].v) < 1e-9 && fabs(w->s.rs[0].w) < 1e-9);
}

/* A force command hands the body to the force (the controller lets go);
 * a velocity command takes it back. */
static void test_modes(void **st) {
  ts_world *w = *st;
  assert_int_equal(ts_cmd(&w->m, &w->s, PA_OP_SET_CMD, 0, 0.5, 0, 0, 0), PA_OK);
  steps(w, 200);
  assert_int_equal(force(w, 0, 0, 0, PA_FRAME_WORLD, PA_FORCE_HOLD, 0, 0, 0),
                   PA_OK);
  steps(w, 200); /* coasts down: v = 0.5 e^(-2 t) */
  assert_true(fabs(w->s.rs[0].v - 0.5 * exp(-2.0)) < 1e-6);
  assert_int_equal(ts_cmd(&w->m, &w->s, PA_OP_SET_CMD, 0, 0.5, 0, 0, 0), PA_OK);
  steps(w, 200);
  assert_true(fabs(w->s.rs[0].v - 0.5) < 1e-9);
}

/* apply_force at a body point for one tick: the torque px * fy turns it,
 * exactly as one tick of the closed form says; then it coasts. */
static void test_pulse_at_point(void **st) {
  ts_world *w = *st;
  assert_int_equal(force(w, 0, 0, 0, PA_FRAME_WORLD, PA_FORCE_HOLD, 0, 0, 0),
                   PA_OK);
  assert_int_equal(force(w, 0, 5, 0, PA_FRAME_ROBOT, PA_FORCE_PULSE, 0.4, 0, 0),
                   PA_OK);
  pa_sim_step(&w->m, &w->s);
  double dt = w->m.dt, T = 0.4 * 5, I = 0.25, c = 1, e = exp(-c * dt / I);
  assert_true(fabs(w->s.rs[0].w - T / c * (1 - e)) < 1e-12);
  assert_true(fabs(w->s.rs[0].y - 20 -
                   (5 / 20.0 * dt - 5 / 20.0 * 0.5 * (1 - exp(-2 * dt)))) <
              1e-12);
  double w1 = w->s.rs[0].w;
  pa_sim_step(&w->m, &w->s); /* gone: only damping now */
  assert_true(fabs(w->s.rs[0].w - w1 * e) < 1e-12);
  /* a pulse lasting 0.5 s: 100 ticks */
  assert_int_equal(force(w, 0, 0, 1, PA_FRAME_WORLD, PA_FORCE_PULSE, 0, 0, 0.5),
                   PA_OK);
  steps(w, 100);
  double w2 = w->s.rs[0].w;
  pa_sim_step(&w->m, &w->s);
  assert_true(fabs(w->s.rs[0].w - w2 * e) < 1e-12);
}

static int thr_room(void **st) {
  room(ts_world_alloc(st), 20, 20, false, false, true);
  return 0;
}

static pa_status thrust(ts_world *w, double l, double r) {
  pa_cmd c;
  pa_reply rp;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SET_THRUST;
  for (int k = 0; k < PA_THRUSTERS_MAX; k++)
    c.thrust.value[k] = NAN;
  c.thrust.value[0] = l;
  c.thrust.value[1] = r;
  return pa_sim_apply(&w->m, &w->s, &c, &rp);
}

/* Both thrusters ahead: a straight push of 2 x 10 N; opposed: a pure
 * torque 2 x 10 x 0.2 = 4 N m (left pushing ahead turns it right). */
static void test_thrusters(void **st) {
  ts_world *w = *st;
  assert_int_equal(thrust(w, 1, 1), PA_OK);
  steps(w, 200);
  assert_true(fabs(w->s.rs[0].v - 20.0 / 20 * (1 - exp(-2.0))) < 1e-9);
  assert_true(fabs(w->s.rs[0].w) < 1e-12);
  assert_int_equal(thrust(w, 1, -1), PA_OK);
  steps(w, 1);
  double e = exp(-1 * w->m.dt / 0.25);
  assert_true(fabs(w->s.rs[0].w - (-5.0) * (1 - e)) < 1e-12);
  /* a value out of [-1, 1] or a missing thruster changes nothing */
  assert_int_equal(thrust(w, 1.5, 0), PA_ERR_INVALID_ACTION_SHAPE);
  pa_cmd c;
  pa_reply rp;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SET_THRUST;
  for (int k = 0; k < PA_THRUSTERS_MAX; k++)
    c.thrust.value[k] = NAN;
  c.thrust.value[5] = 0.5;
  assert_int_equal(pa_sim_apply(&w->m, &w->s, &c, &rp), PA_ERR_INVALID_MESSAGE);
  assert_non_null(strstr(rp.msg, "no thruster 5"));
  steps(w, 1);
  assert_true(w->s.rs[0].w < 0); /* still turning right under 1, -1 */
}

static int kin_room(void **st) {
  room(ts_world_alloc(st), 20, 20, true, false, false);
  return 0;
}

/* A kinematic robot refuses forces by name; a force over max_force is
 * refused and changes nothing; set_property switches dynamics. */
static void test_refusals(void **st) {
  ts_world *w = *st;
  pa_cmd c;
  pa_reply r;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SET_FORCE;
  c.force.fx = 1;
  assert_int_equal(pa_sim_apply(&w->m, &w->s, &c, &r),
                   PA_ERR_UNSUPPORTED_CONTROL_SCHEME);
  assert_non_null(strstr(r.msg, "kinematic"));
  c.op = PA_OP_SET_THRUST;
  assert_int_equal(pa_sim_apply(&w->m, &w->s, &c, &r),
                   PA_ERR_UNSUPPORTED_CONTROL_SCHEME);
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SET_PROPERTY;
  c.prop.prop = PA_PROP_DYNAMICS;
  c.prop.v[0] = 2;
  assert_int_equal(pa_sim_apply(&w->m, &w->s, &c, &r),
                   PA_ERR_INVALID_ACTION_SHAPE);
  c.prop.v[0] = PA_DYN_DYNAMIC;
  assert_int_equal(pa_sim_apply(&w->m, &w->s, &c, &r), PA_OK);
  assert_int_equal(w->s.info[0].dynamics, PA_DYN_DYNAMIC);
  c.prop.prop = PA_PROP_MASS;
  c.prop.v[0] = 0;
  assert_int_equal(pa_sim_apply(&w->m, &w->s, &c, &r),
                   PA_ERR_INVALID_ACTION_SHAPE);
  c.prop.v[0] = 20;
  assert_int_equal(pa_sim_apply(&w->m, &w->s, &c, &r), PA_OK);
  assert_true(w->s.info[0].mass == 20.0f);
  assert_int_equal(force(w, 101, 0, 0, PA_FRAME_WORLD, PA_FORCE_HOLD, 0, 0, 0),
                   PA_ERR_INVALID_ACTION_SHAPE);
  assert_int_equal(force(w, 0, 0, 11, PA_FRAME_WORLD, PA_FORCE_HOLD, 0, 0, 0),
                   PA_ERR_INVALID_ACTION_SHAPE);
  assert_int_equal(force(w, NAN, 0, 0, PA_FRAME_WORLD, PA_FORCE_HOLD, 0, 0, 0),
                   PA_ERR_INVALID_ACTION_SHAPE);
  assert_int_equal(force(w, 1, 0, 0, 7, PA_FORCE_HOLD, 0, 0, 0),
                   PA_ERR_INVALID_ACTION_SHAPE);
  steps(w, 50); /* nothing held: at rest */
  assert_true(w->s.rs[0].x == 20 && w->s.rs[0].v == 0);
  /* now it takes a force: F / m for one tick at the start (mass 20) */
  assert_int_equal(force(w, 100, 0, 0, PA_FRAME_WORLD, PA_FORCE_HOLD, 0, 0, 0),
                   PA_OK);
  pa_sim_step(&w->m, &w->s);
  double dt = w->m.dt;
  assert_true(fabs(w->s.rs[0].v - 100 / 20.0 * (1 - exp(-dt))) < 1e-12);
  /* back to kinematic: held forces go, the velocity command drives */
  c.prop.prop = PA_PROP_DYNAMICS;
  c.prop.v[0] = PA_DYN_KINEMATIC;
  assert_int_equal(pa_sim_apply(&w->m, &w->s, &c, &r), PA_OK);
  steps(w, 400);
  assert_true(fabs(w->s.rs[0].v) < 1e-12);
}

/* The world file's dynamics keys reach the robot. */
static void test_world_file(void **st) {
  (void)st;
  char path[1024]; /* in the test's own directory, removed at exit */
  snprintf(path, sizeof path, "%s/tdynXXXXXX.yaml", pa_test_tmpdir());
  int fd = mkstemps(path, 5);
  assert_true(fd >= 0);
  const char *txt =
      "robots:\n"
      "  - name: sub\n"
      "    pose: [2, 2, 0]\n"
      "    dynamics:\n"
      "      mass: 4\n"
      "      inertia: 0.1\n"
      "      linear_damping: 2\n"
      "      max_force: 30\n"
      "      thrusters:\n"
      "        - {name: aft, position: [-0.2, 0], direction: 0}\n"
      "        - {name: bow, position: [0.2, 0], direction: 1.5708, "
      "max_force: 5}\n"
      "  - name: cart\n"
      "    pose: [3, 3, 0]\n"
      "    dynamics: kinematic\n";
  assert_true(write(fd, txt, strlen(txt)) == (ssize_t)strlen(txt));
  close(fd);
  pa_world wd;
  char err[256] = "";
  int rc = pa_world_load(path, &wd, err, sizeof err);
  if (rc != 0)
    fail_msg("%s", err);
  assert_int_equal(wd.robot_count, 2);
  assert_int_equal(wd.robots[0].dynamics, 1);
  assert_true(wd.robots[0].mass == 4 && wd.robots[0].max_force == 30);
  assert_int_equal(wd.robots[0].thruster_count, 2);
  assert_string_equal(wd.robots[0].thrusters[1].name, "bow");
  assert_true(wd.robots[0].thrusters[0].max_force == 30); /* the robot's */
  assert_true(wd.robots[0].thrusters[1].max_force == 5);
  assert_int_equal(wd.robots[1].dynamics, 0);
  pa_world_free(&wd);
  /* bad values are errors at their line */
  const char *bad[] = {
      "robots:\n  - pose: [2, 2, 0]\n    dynamics: floating\n",
      "robots:\n  - pose: [2, 2, 0]\n    dynamics: {mass: 0}\n",
      "robots:\n  - pose: [2, 2, 0]\n    dynamics: {thrusters: [{name: a}, "
      "{name: a}]}\n",
      "robots:\n  - pose: [2, 2, 0]\n    dynamics: {drag: 1}\n",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(bad[i], f);
    fclose(f);
    err[0] = 0;
    assert_int_not_equal(pa_world_load(path, &wd, err, sizeof err), 0);
    assert_non_null(strstr(err, ":3:"));
  }
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_terminal_velocity, dyn_room,
                                      ts_world_free),
      cmocka_unit_test_setup_teardown(test_torque_turn, dyn_room,
                                      ts_world_free),
      cmocka_unit_test_setup_teardown(test_wall_stop, dyn_room, ts_world_free),
      cmocka_unit_test_setup_teardown(test_velocity_controller, dyn_room,
                                      ts_world_free),
      cmocka_unit_test_setup_teardown(test_modes, dyn_room, ts_world_free),
      cmocka_unit_test_setup_teardown(test_pulse_at_point, dyn_room,
                                      ts_world_free),
      cmocka_unit_test_setup_teardown(test_thrusters, thr_room, ts_world_free),
      cmocka_unit_test_setup_teardown(test_refusals, kin_room, ts_world_free),
      cmocka_unit_test(test_world_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
