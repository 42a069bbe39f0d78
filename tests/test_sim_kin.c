/* test_sim_kin.c - kinematics against closed forms, velocity/acceleration
 * and head limits, omni frames, odometry. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "test_sim_util.h"

/* Most tests' world (cmocka fixture): a 40 m x 40 m room, one robot in the
 * middle (no wall within reach), diff or omni drive. */
static int big_room(void **st, int drive) {
  ts_world *w = ts_world_alloc(st);
  pa_grid g;
  ts_room(&g, 800, 800, 0.05);
  pa_robot_def r = ts_robot("r", 20, 20, 0);
  r.drive = drive;
  r.max_w = 10;
  ts_make_default(&w->m, &w->s, &g, &r, 1, NULL, 0);
  return 0;
}

static int diff_room(void **st) { return big_room(st, PA_DRIVE_DIFF); }
static int omni_room(void **st) { return big_room(st, PA_DRIVE_OMNI); }

/* A full circle of radius v/w returns to the start; half way it is 2R to the
 * left. Started at speed so acceleration limits do not enter. */
static void test_circle(void **st) {
  pa_sim_model *m = &((ts_world *)*st)->m;
  pa_sim_state *s = &((ts_world *)*st)->s;
  const int n = 2000; /* ticks per turn at 200 Hz = 10 s */
  double w = 2 * M_PI / (n * m->dt), v = 1.5 * w; /* R = 1.5 m */
  s->rs[0].v = v;
  s->rs[0].w = w;
  assert_int_equal(ts_cmd(m, s, PA_OP_SET_CMD, 0, v, 0, w, 0), PA_OK);
  double x0 = s->rs[0].x, y0 = s->rs[0].y;
  for (int i = 0; i < n / 2; i++)
    pa_sim_step(m, s);
  assert_true(fabs(s->rs[0].x - x0) < 1e-9);
  assert_true(fabs(s->rs[0].y - (y0 + 3.0)) < 1e-9);
  assert_true(fabs(fabs(s->rs[0].theta) - M_PI) < 1e-9);
  for (int i = 0; i < n / 2; i++)
    pa_sim_step(m, s);
  assert_true(fabs(s->rs[0].x - x0) < 1e-9);
  assert_true(fabs(s->rs[0].y - y0) < 1e-9);
  assert_true(fabs(s->rs[0].theta) < 1e-9);
  assert_true(fabs(s->rs[0].v - v) < 1e-12 && fabs(s->rs[0].w - w) < 1e-12);
  /* no drift model: odometry is the ground truth */
  assert_true(s->rs[0].odom_x == s->rs[0].x && s->rs[0].odom_y == s->rs[0].y);
  assert_int_equal(s->tick, n);
  assert_true(fabs(s->sim_time - 10.0) < 1e-9);
}

static void test_straight_and_velocity_limit(void **st) {
  pa_sim_model *m = &((ts_world *)*st)->m;
  pa_sim_state *s = &((ts_world *)*st)->s;
  /* 5 m/s asked, max_v = 1: after the ramp it goes 1 m/s */
  assert_int_equal(ts_cmd(m, s, PA_OP_SET_CMD, 0, 5, 0, 0, 0), PA_OK);
  for (int i = 0; i < 400; i++)
    pa_sim_step(m, s);
  assert_true(fabs(s->rs[0].v - 1.0) < 1e-12);
  /* ramp 0.5 s at 2 m/s^2 covers 0.25 m, then 1.5 s at 1 m/s */
  assert_true(fabs(s->rs[0].x - (20 + 0.25 + 1.5)) < 0.01);
  assert_true(fabs(s->rs[0].y - 20) < 1e-12);
}

static void test_acceleration_limits(void **st) {
  pa_sim_model *m = &((ts_world *)*st)->m;
  pa_sim_state *s = &((ts_world *)*st)->s;
  const pa_robot_info *ri = &s->info[0];
  assert_int_equal(ts_cmd(m, s, PA_OP_SET_CMD, 0, 1, 0, 2, 0), PA_OK);
  pa_sim_step(m, s);
  assert_true(fabs(s->rs[0].v - ri->acc_v * m->dt) < 1e-6);
  assert_true(fabs(s->rs[0].w - ri->acc_w * m->dt) < 1e-6);
  int ticks = 0;
  while (s->rs[0].v < 1.0 - 1e-9 && ticks < 10000) {
    pa_sim_step(m, s);
    ticks++;
  }
  /* 1 m/s at 2 m/s^2 = 0.5 s = 100 ticks (one already done) */
  assert_int_equal(ticks + 1, (int)lround(1.0 / ri->acc_v / m->dt));
  /* braking uses dec_v (4 m/s^2): 0.25 s to stop */
  assert_int_equal(ts_cmd(m, s, PA_OP_STOP, 0, 0, 0, 0, 0), PA_OK);
  ticks = 0;
  while (s->rs[0].v > 1e-9 && ticks < 10000) {
    double before = s->rs[0].v;
    pa_sim_step(m, s);
    assert_true(before - s->rs[0].v <= ri->dec_v * m->dt + 1e-9);
    ticks++;
  }
  assert_int_equal(ticks, (int)lround(1.0 / ri->dec_v / m->dt));
  /* reversing brakes first (dec) then speeds up (acc) */
  s->rs[0].v = 0.5;
  assert_int_equal(ts_cmd(m, s, PA_OP_SET_CMD, 0, -1, 0, 0, 0), PA_OK);
  pa_sim_step(m, s);
  assert_true(fabs(s->rs[0].v - (0.5 - ri->dec_v * m->dt)) < 1e-9);
}

static void test_head_limits(void **st) {
  pa_sim_model *m = &((ts_world *)*st)->m;
  pa_sim_state *s = &((ts_world *)*st)->s;
  const pa_robot_info *ri = &s->info[0];
  /* rate clamped to max_head_rate */
  assert_int_equal(ts_cmd(m, s, PA_OP_SET_CMD, 0, 0, 0, 0, 100), PA_OK);
  pa_sim_step(m, s);
  assert_true(fabs(s->rs[0].head_rate - ri->max_head_rate) < 1e-5);
  assert_true(fabs(s->rs[0].head - ri->max_head_rate * m->dt) < 1e-5);
  for (int i = 0; i < 1000; i++) {
    pa_sim_step(m, s);
    assert_true(s->rs[0].head <= ri->head_limit + 1e-6);
  }
  assert_true(fabs(s->rs[0].head - ri->head_limit) < 1e-6);
  assert_true(s->rs[0].head_rate == 0); /* at the stop, no motion */
  assert_int_equal(ts_cmd(m, s, PA_OP_SET_CMD, 0, 0, 0, 0, -1), PA_OK);
  for (int i = 0; i < 2000; i++)
    pa_sim_step(m, s);
  assert_true(fabs(s->rs[0].head + ri->head_limit) < 1e-6);
}

static void test_omni_frames(void **st) {
  pa_sim_model *m = &((ts_world *)*st)->m;
  pa_sim_state *s = &((ts_world *)*st)->s;
  /* robot frame: sideways while facing +90 deg = moving -x */
  s->rs[0].theta = M_PI / 2;
  s->rs[0].vy = 0.5;
  assert_int_equal(ts_cmd(m, s, PA_OP_SET_CMD, 0, 0, 0.5, 0, 0), PA_OK);
  for (int i = 0; i < 200; i++)
    pa_sim_step(m, s);
  assert_true(fabs(s->rs[0].x - 19.5) < 1e-9);
  assert_true(fabs(s->rs[0].y - 20) < 1e-9);
  /* world frame while spinning, from rest: straight +y line in the world */
  s->rs[0].v = s->rs[0].vy = 0;
  double x1 = s->rs[0].x;
  pa_cmd c;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SET_CMD;
  c.drive.frame = PA_FRAME_WORLD;
  c.drive.vy = 0.5;
  c.drive.w = 1.0;
  pa_reply r;
  assert_int_equal(pa_sim_apply(m, s, &c, &r), PA_OK);
  for (int i = 0; i < 600; i++)
    pa_sim_step(m, s);
  assert_true(fabs(s->rs[0].x - x1) < 0.01); /* lag of the limits */
  assert_true(s->rs[0].y > 20 + 1.3);
}

/* acc_vy (set through its row) limits an omni robot's sideways speed-up
 * alone; 0 (the default) is acc_v's, as before the property. */
static void test_omni_acc_vy(void **st) {
  pa_sim_model *m = &((ts_world *)*st)->m;
  pa_sim_state *s = &((ts_world *)*st)->s;
  const pa_robot_info *ri = &s->info[0];
  pa_cmd c;
  pa_reply r;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SET_PROPERTY;
  c.prop.prop = PA_PROP_ACC_VY;
  c.prop.v[0] = 0.5;
  assert_int_equal(pa_sim_apply(m, s, &c, &r), PA_OK);
  assert_true(ri->acc_vy == 0.5f);
  assert_int_equal(ts_cmd(m, s, PA_OP_SET_CMD, 0, 1, 1, 0, 0), PA_OK);
  for (int i = 1; i <= 10; i++) {
    pa_sim_step(m, s);
    assert_true(fabs(s->rs[0].v - i * ri->acc_v * m->dt) < 1e-9);
    assert_true(fabs(s->rs[0].vy - i * 0.5 * m->dt) < 1e-9);
  }
  c.prop.v[0] = -1; /* out of its row's range: refused, nothing changes */
  assert_int_equal(pa_sim_apply(m, s, &c, &r), PA_ERR_INVALID_ACTION_SHAPE);
  assert_non_null(strstr(r.msg, "acc_vy"));
  c.prop.v[0] = 0;
  assert_int_equal(pa_sim_apply(m, s, &c, &r), PA_OK);
  double vy = s->rs[0].vy;
  pa_sim_step(m, s);
  assert_true(fabs(s->rs[0].vy - (vy + ri->acc_v * m->dt)) < 1e-9);
}

static void test_diff_refuses_sideways(void **st) {
  pa_sim_model *m = &((ts_world *)*st)->m;
  pa_sim_state *s = &((ts_world *)*st)->s;
  assert_int_equal(ts_cmd(m, s, PA_OP_SET_CMD, 0, 0, 0.3, 0, 0),
                   PA_ERR_UNSUPPORTED_CONTROL_SCHEME);
  assert_int_equal(ts_cmd(m, s, PA_OP_SET_CMD, 0, NAN, 0, 0, 0),
                   PA_ERR_INVALID_ACTION_SHAPE);
  assert_int_equal(ts_cmd(m, s, PA_OP_SET_CMD, 0, INFINITY, 0, 0, 0),
                   PA_ERR_INVALID_ACTION_SHAPE);
  assert_int_equal(ts_cmd(m, s, PA_OP_SET_CMD, 7, 0, 0, 0, 0),
                   PA_ERR_UNKNOWN_ROBOT);
  assert_true(s->rs[0].cmd_vy == 0 && s->rs[0].cmd_v == 0);
}

/* Odometry with a drift model: deviates from the truth, deterministically. */
static void test_odom_drift(void **st) {
  (void)st;
  pa_grid g;
  ts_room(&g, 800, 800, 0.05);
  pa_robot_def r = ts_robot("r", 20, 20, 0);
  pa_sim_def d = pa_sim_def_default();
  d.odom_error[0] = 0.05;
  d.odom_error[2] = 0.05;
  d.seed = 7;
  double fx[2];
  for (int run = 0; run < 2; run++) {
    pa_sim_model m;
    pa_sim_state s;
    ts_make(&m, &s, &d, &g, &r, 1, NULL, 0);
    assert_int_equal(ts_cmd(&m, &s, PA_OP_SET_CMD, 0, 0.5, 0, 0.3, 0), PA_OK);
    for (int i = 0; i < 1000; i++)
      pa_sim_step(&m, &s);
    double ex = s.rs[0].odom_x - s.rs[0].x, ey = s.rs[0].odom_y - s.rs[0].y;
    assert_true(sqrt(ex * ex + ey * ey) > 1e-4);
    assert_true(sqrt(ex * ex + ey * ey) < 0.5);
    fx[run] = s.rs[0].odom_x;
    ts_free(&m, &s);
  }
  assert_true(fx[0] == fx[1]);
  pa_grid_free(&g);
}

/* SET_CMDS (step_batch's packed velocities) is the SET_CMDs it stands for:
 * the same runs bit for bit; an entry refused (no such robot, a sideways v
 * to a differential one) stops no other entry and its status is the
 * first refusal; a count out of 1..PA_CMD_DRIVES_MAX is refused whole. */
static void test_set_cmds(void **st) {
  (void)st;
  pa_sim_model m[2];
  pa_sim_state s[2];
  pa_grid g;
  pa_robot_def r[3] = {ts_robot("a", 5, 5, 0), ts_robot("b", 10, 10, 1),
                       ts_robot("c", 15, 15, 2)};
  r[1].drive = PA_DRIVE_OMNI;
  for (int k = 0; k < 2; k++) {
    ts_room(&g, 400, 400, 0.05);
    ts_make_default(&m[k], &s[k], &g, r, 3, NULL, 0);
    pa_grid_free(&g);
  }
  const double v[3][3] = {{0.5, 0, 0.3}, {0.2, 0.1, -0.4}, {-0.3, 0, 0.2}};
  pa_cmd c;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SET_CMDS;
  c.count = 3;
  for (uint32_t i = 0; i < 3; i++) {
    c.drives[i] = (pa_cmd_drive_of){
        .v = v[i][0], .vy = v[i][1], .w = v[i][2], .robot = 2 - i};
    assert_int_equal(ts_cmd(&m[1], &s[1], PA_OP_SET_CMD, 2 - i, v[i][0],
                            v[i][1], v[i][2], 0),
                     PA_OK);
  }
  pa_reply rep;
  assert_int_equal(pa_sim_apply(&m[0], &s[0], &c, &rep), PA_OK);
  for (int t = 0; t < 100; t++) {
    pa_sim_step(&m[0], &s[0]);
    pa_sim_step(&m[1], &s[1]);
  }
  for (int i = 0; i < 3; i++) {
    assert_memory_equal(&s[0].rs[i].x, &s[1].rs[i].x, sizeof(double));
    assert_memory_equal(&s[0].rs[i].y, &s[1].rs[i].y, sizeof(double));
    assert_memory_equal(&s[0].rs[i].theta, &s[1].rs[i].theta, sizeof(double));
  }
  assert_true(s[0].rs[2].x != 15 && s[0].rs[1].y != 10);
  /* refusals: the others still apply, the first refusal is the status */
  c.count = 3;
  c.drives[0] = (pa_cmd_drive_of){.v = 0.1, .robot = 7};
  c.drives[1] = (pa_cmd_drive_of){.v = 0.1, .vy = 0.2, .robot = 0};
  c.drives[2] = (pa_cmd_drive_of){.v = 0.25, .w = 0.5, .robot = 1};
  assert_int_equal(pa_sim_apply(&m[0], &s[0], &c, &rep), PA_ERR_UNKNOWN_ROBOT);
  assert_true(s[0].rs[1].cmd_v == 0.25 && s[0].rs[1].cmd_w == 0.5);
  assert_true(s[0].rs[0].cmd_v == -0.3 && s[0].rs[0].cmd_vy == 0);
  c.count = 0;
  assert_int_equal(pa_sim_apply(&m[0], &s[0], &c, &rep),
                   PA_ERR_INVALID_ACTION_SHAPE);
  assert_non_null(strstr(rep.msg, "count 0"));
  c.count = PA_CMD_DRIVES_MAX + 1;
  assert_int_equal(pa_sim_apply(&m[0], &s[0], &c, &rep),
                   PA_ERR_INVALID_ACTION_SHAPE);
  assert_true(s[0].rs[1].cmd_v == 0.25);
  for (int k = 0; k < 2; k++)
    ts_free(&m[k], &s[k]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_circle, diff_room, ts_world_free),
      cmocka_unit_test_setup_teardown(test_straight_and_velocity_limit,
                                      diff_room, ts_world_free),
      cmocka_unit_test_setup_teardown(test_acceleration_limits, diff_room,
                                      ts_world_free),
      cmocka_unit_test_setup_teardown(test_head_limits, diff_room,
                                      ts_world_free),
      cmocka_unit_test_setup_teardown(test_omni_frames, omni_room,
                                      ts_world_free),
      cmocka_unit_test_setup_teardown(test_omni_acc_vy, omni_room,
                                      ts_world_free),
      cmocka_unit_test_setup_teardown(test_diff_refuses_sideways, diff_room,
                                      ts_world_free),
      cmocka_unit_test(test_odom_drift),
      cmocka_unit_test(test_set_cmds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
