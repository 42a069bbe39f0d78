/* test_sim_ball.c - the SSL ball's physics: friction distances against the
 * two-phase model, wall/goal/hull bounces, kicks and caps, chips over a
 * robot, the dribbler holding through a turn, the field grid, 4-wheel
 * least squares and norm limits. */
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
#include "pa_sim.h"
#include "sim_ssl.h"

#define DT 0.005 /* 200 Hz, pa-sim's default */

typedef struct world {
  pa_ssl_field f;
  pa_ssl_params p;
  pa_ssl_ball b;
  pa_ssl_body body[4];
  pa_ssl_bot bot[4];
  uint32_t n;
} world;

static void world_init(world *w, char div) {
  memset(w, 0, sizeof *w);
  assert_int_equal(pa_ssl_field_get(div, &w->f), 0);
  w->p = pa_ssl_params_default();
  w->b.holder = -1;
  for (int i = 0; i < 4; i++)
    w->bot[i] = pa_ssl_bot_default();
}

static uint32_t add_robot(world *w, double x, double y, double theta) {
  uint32_t i = w->n++;
  w->body[i] = (pa_ssl_body){.active = true,
                             .x = x,
                             .y = y,
                             .theta = theta,
                             .radius = 0.09,
                             .height = 0.15};
  return i;
}

/* Steps until the ball stops (or max ticks); returns the ticks run. */
static int run_until_rest(world *w, int max) {
  for (int t = 0; t < max; t++) {
    pa_ssl_ball_step(&w->f, &w->p, &w->b, w->body, w->bot, w->n, DT);
    if (w->b.vx == 0 && w->b.vy == 0 && w->b.z == 0 && w->b.vz == 0)
      return t + 1;
  }
  return max;
}

static void test_field(void **st) {
  (void)st;
  pa_ssl_field f;
  assert_int_equal(pa_ssl_field_get('a', &f), 0);
  assert_true(f.length == 12 && f.width == 9 && f.goal_width == 1.8);
  assert_int_equal(pa_ssl_field_get('B', &f), 0);
  assert_true(f.length == 9 && f.width == 6 && f.goal_width == 1.0);
  pa_ssl_field bad;
  assert_int_equal(pa_ssl_field_get('c', &bad), -1);

  pa_grid g;
  char err[128];
  assert_int_equal(pa_ssl_field_grid(&f, 0.02, &g, err, sizeof err), 0);
  int cx, cy;
  /* Centre free, the boundary wall and the goal's back wall blocked, the
   * goal mouth free. */
  assert_true(pa_grid_world_to_cell(&g, 0, 0, &cx, &cy));
  assert_false(pa_grid_blocked(&g, cx, cy, true));
  assert_true(pa_grid_world_to_cell(&g, 4.5 + 0.3 + 0.03, 0, &cx, &cy));
  assert_true(pa_grid_blocked(&g, cx, cy, true));
  assert_true(pa_grid_world_to_cell(&g, 4.5 + 0.18 + 0.01, 0.2, &cx, &cy));
  assert_true(pa_grid_blocked(&g, cx, cy, true));
  assert_true(pa_grid_world_to_cell(&g, 4.5 + 0.1, 0.0, &cx, &cy));
  assert_false(pa_grid_blocked(&g, cx, cy, true));
  assert_true(pa_grid_world_to_cell(&g, 4.5 + 0.1, 0.5 + 0.01, &cx, &cy));
  assert_true(pa_grid_blocked(&g, cx, cy, true));
  pa_grid_free(&g);
  assert_int_equal(pa_ssl_field_grid(&f, 5, &g, err, sizeof err), -1);
  assert_non_null(strstr(err, "resolution"));
}

/* A rolling ball stops after v^2 / (2 a_roll); a kicked (sliding) one
 * after the sliding phase down to 5/7 of its speed, then rolling. */
static void test_friction_distances(void **st) {
  (void)st;
  world w;
  world_init(&w, 'A');
  double v0 = 2.0;
  pa_ssl_ball_place(&w.b, -4, 0, 0, v0, 0, 0, true);
  int ticks = run_until_rest(&w, 100000);
  double want = v0 * v0 / (2 * w.p.acc_roll);
  assert_true(fabs((w.b.x + 4) - want) < 0.01);
  assert_true(fabs(ticks * DT - v0 / w.p.acc_roll) < 2 * DT);

  world_init(&w, 'A');
  v0 = 3.0;
  pa_ssl_ball_place(&w.b, -5, 1, 0, v0, 0, 0, false);
  run_until_rest(&w, 100000);
  double vs = v0 * 5 / 7;
  want =
      (v0 * v0 - vs * vs) / (2 * w.p.acc_slide) + vs * vs / (2 * w.p.acc_roll);
  assert_true(fabs((w.b.x + 5) - want) < 0.01);
  assert_true(fabs(w.b.y - 1) < 1e-12);
}

static void test_wall_bounce(void **st) {
  (void)st;
  world w;
  world_init(&w, 'B');
  w.p.acc_roll = w.p.acc_slide = 0; /* no friction: only the wall acts */
  double wall = 9.0 / 2 + 0.3;
  pa_ssl_ball_place(&w.b, 0, 2, 0, 0, 2.0, 0, true);
  for (int t = 0; t < 400; t++) {
    pa_ssl_ball_step(&w.f, &w.p, &w.b, w.body, w.bot, w.n, DT);
    assert_true(w.b.y <= 3.0 + 0.3 - PA_SSL_BALL_RADIUS + 1e-9);
  }
  assert_true(fabs(w.b.vy + 2.0 * w.p.e_wall) < 1e-9);
  /* Into the goal: the back wall sends it back, it never leaves. */
  world_init(&w, 'B');
  w.p.acc_roll = w.p.acc_slide = 0;
  pa_ssl_ball_place(&w.b, 4.0, 0, 0, 3.0, 0, 0, true);
  double xmax = 0;
  for (int t = 0; t < 200; t++) {
    pa_ssl_ball_step(&w.f, &w.p, &w.b, w.body, w.bot, w.n, DT);
    xmax = fmax(xmax, w.b.x);
  }
  assert_true(xmax > 4.5 && xmax <= 4.5 + 0.18 - PA_SSL_BALL_RADIUS + 1e-9);
  assert_true(w.b.vx < 0);
  (void)wall;
}

/* Against the round back: restitution e_robot relative to the hull; the
 * ball never ends inside it. */
static void test_hull_bounce(void **st) {
  (void)st;
  world w;
  world_init(&w, 'A');
  w.p.acc_roll = w.p.acc_slide = 0;
  uint32_t r = add_robot(&w, 1.0, 0, 0); /* faces +x: its back faces us */
  pa_ssl_ball_place(&w.b, 0, 0, 0, 2.0, 0, 0, true);
  for (int t = 0; t < 200; t++) {
    pa_ssl_ball_step(&w.f, &w.p, &w.b, w.body, w.bot, w.n, DT);
    double nx, ny, fy;
    bool front;
    double d = pa_ssl_hull_dist(&w.body[r], w.bot[r].center_to_dribbler, w.b.x,
                                w.b.y, &nx, &ny, &front, &fy);
    assert_true(d >= PA_SSL_BALL_RADIUS - 1e-9);
  }
  /* the robot's 2.3 kg takes its part of the impulse: momentum holds */
  double M = w.bot[r].mass, mb = PA_SSL_BALL_MASS;
  double share = M / (M + mb);
  assert_true(fabs(w.b.vx - (2.0 - 2.0 * (1 + w.p.e_robot) * share)) < 1e-9);
  assert_true(fabs(mb * w.b.vx + M * w.body[r].vx - mb * 2.0) < 1e-12);
  assert_false(w.bot[r].ball_contact);
  /* A spec's mass takes effect: a robot as light as the ball takes
   * (1 + e) / 2 of its speed, the ball keeps (1 - e) / 2. */
  world_init(&w, 'A');
  w.p.acc_roll = w.p.acc_slide = 0;
  r = add_robot(&w, 1.0, 0, 0);
  w.bot[r].mass = PA_SSL_BALL_MASS;
  pa_ssl_ball_place(&w.b, 0, 0, 0, 2.0, 0, 0, true);
  for (int t = 0; t < 200; t++)
    pa_ssl_ball_step(&w.f, &w.p, &w.b, w.body, w.bot, w.n, DT);
  print_message("light robot: ball %.4f m/s, robot %.4f m/s\n", w.b.vx,
                w.body[r].vx);
  assert_true(fabs(w.b.vx - 2.0 * (1 - w.p.e_robot) / 2) < 1e-9);
  assert_true(fabs(w.body[r].vx - 2.0 * (1 + w.p.e_robot) / 2) < 1e-9);
  /* Onto the flat front with nothing armed: e_front, contact reported. */
  world_init(&w, 'A');
  w.p.acc_roll = w.p.acc_slide = 0;
  r = add_robot(&w, 1.0, 0, M_PI); /* faces -x: its bar faces us */
  pa_ssl_ball_place(&w.b, 0, 0, 0, 1.0, 0, 0, true);
  bool contact = false;
  for (int t = 0; t < 300; t++) {
    pa_ssl_ball_step(&w.f, &w.p, &w.b, w.body, w.bot, w.n, DT);
    contact |= w.bot[r].ball_contact;
    assert_true(w.b.x <= 1.0 - 0.08 - PA_SSL_BALL_RADIUS + 1e-9);
  }
  assert_true(contact);
  share = w.bot[r].mass / (w.bot[r].mass + PA_SSL_BALL_MASS);
  assert_true(fabs(w.b.vx - (1.0 - 1.0 * (1 + w.p.e_front) * share)) < 1e-9);
}

/* Armed kicker: fires once the ball reaches the bar, capped, disarmed. */
static void test_kick(void **st) {
  (void)st;
  world w;
  world_init(&w, 'A');
  uint32_t r = add_robot(&w, 0, 0, M_PI / 2); /* faces +y */
  w.bot[r].kick_speed = 5.0;
  pa_ssl_ball_place(&w.b, 0, 0.3, 0, 0, -0.5, 0, true); /* rolls to it */
  for (int t = 0; t < 200 && w.bot[r].kicks == 0; t++)
    pa_ssl_ball_step(&w.f, &w.p, &w.b, w.body, w.bot, w.n, DT);
  assert_int_equal(w.bot[r].kicks, 1);
  assert_true(w.bot[r].kick_speed == 0);
  assert_true(fabs(hypot(w.b.vx, w.b.vy) - 5.0) < 0.05);
  assert_true(w.b.vy > 4.9 && w.b.vz == 0);

  world_init(&w, 'A');
  r = add_robot(&w, 0, 0, 0);
  w.bot[r].kick_speed = 20.0; /* above the 6.5 m/s cap */
  pa_ssl_ball_place(&w.b, 0.08 + PA_SSL_BALL_RADIUS - 0.001, 0, 0, 0, 0, 0,
                    true);
  pa_ssl_ball_step(&w.f, &w.p, &w.b, w.body, w.bot, w.n, DT);
  assert_int_equal(w.bot[r].kicks, 1);
  assert_true(fabs(w.b.vx - 6.5) < 0.05);
}

/* The cap is the ball's speed: a robot driving forward at 2 m/s kicks at
 * 6.5 m/s, not 8.5 (the rules' limit, issue 38); a spec's own cap holds the
 * same way, a chip's too (3-D). On the tick the kick fires the ball is
 * leaving: no dribbler contact; a ball resting against the bar touches it
 * every tick. */
static void test_kick_cap_with_motion(void **st) {
  (void)st;
  world w;
  const double caps[] = {6.5, 4.0};
  const double angles[] = {0, 30};
  for (int k = 0; k < 2; k++)
    for (int a = 0; a < 2; a++) {
      world_init(&w, 'A');
      uint32_t r = add_robot(&w, 0, 0, 0);
      w.body[r].vx = 2.0;
      w.body[r].w = 1.0;
      w.bot[r].max_kick = w.bot[r].max_chip = caps[k];
      w.bot[r].kick_speed = 20.0;
      w.bot[r].kick_angle = angles[a];
      pa_ssl_ball_place(&w.b, 0.08 + PA_SSL_BALL_RADIUS - 0.001, 0, 0, 0, 0, 0,
                        true);
      pa_ssl_ball_step(&w.f, &w.p, &w.b, w.body, w.bot, w.n, DT);
      assert_int_equal(w.bot[r].kicks, 1);
      double sp = sqrt(w.b.vx * w.b.vx + w.b.vy * w.b.vy + w.b.vz * w.b.vz);
      print_message("cap %.1f angle %.0f: ball leaves at %.4f m/s\n", caps[k],
                    angles[a], sp);
      assert_true(sp <= caps[k] + 1e-9 && sp > caps[k] - 0.01);
      assert_false(w.bot[r].ball_contact);
    }
  /* Resting at the bar (no dribbler, no kick): contact every tick. */
  world_init(&w, 'A');
  uint32_t r = add_robot(&w, 0, 0, 0);
  pa_ssl_ball_place(&w.b, 0.08 + PA_SSL_BALL_RADIUS - 0.0005, 0, 0, 0, 0, 0,
                    true);
  for (int t = 0; t < 50; t++) {
    pa_ssl_ball_step(&w.f, &w.p, &w.b, w.body, w.bot, w.n, DT);
    assert_true(w.bot[r].ball_contact);
  }
  /* Armed now: it fires, the tick of the kick has no contact, nor any after
   * it (the ball is gone). */
  w.bot[r].kick_speed = 3.0;
  for (int t = 0; t < 50; t++) {
    pa_ssl_ball_step(&w.f, &w.p, &w.b, w.body, w.bot, w.n, DT);
    assert_false(w.bot[r].ball_contact);
  }
  assert_int_equal(w.bot[r].kicks, 1);
}

/* A 45 degree chip clears a robot 0.8 m ahead and first lands where the
 * ballistic range says. */
static void test_chip_over_robot(void **st) {
  (void)st;
  world w;
  world_init(&w, 'A');
  uint32_t k = add_robot(&w, -2, 0, 0);
  uint32_t o = add_robot(&w, -2 + 0.8, 0, M_PI);
  w.bot[k].kick_speed = 4.0;
  w.bot[k].kick_angle = 45;
  double x0 = -2 + 0.08 + PA_SSL_BALL_RADIUS;
  pa_ssl_ball_place(&w.b, x0 - 0.001, 0, 0, 0, 0, 0, true);
  bool flew = false;
  double land = 0;
  for (int t = 0; t < 400; t++) {
    double vz0 = w.b.vz;
    pa_ssl_ball_step(&w.f, &w.p, &w.b, w.body, w.bot, w.n, DT);
    assert_false(w.bot[o].ball_contact);
    if (w.b.z > 0.15)
      flew = true;
    if (flew && vz0 < 0 && w.b.vz >= 0 && land == 0) /* the first bounce */
      land = w.b.x;
  }
  assert_true(flew);
  double range = 4.0 * 4.0 / PA_SSL_GRAVITY; /* sin(90 deg) = 1 */
  print_message("chip lands at %.4f, ballistic %.4f\n", land,
                x0 + 0.001 + range);
  assert_true(fabs(land - (x0 + 0.001 + range)) < 0.03);
  assert_true(w.b.x > -2 + 0.8 + 0.2); /* beyond the robot */
}

/* The dribbler holds a ball at the bar while the robot turns and drives;
 * switched off, the ball is free again. */
static void test_dribble_and_turn(void **st) {
  (void)st;
  world w;
  world_init(&w, 'A');
  uint32_t r = add_robot(&w, 0, 0, 0);
  w.bot[r].dribbler_rpm = 3000;
  pa_ssl_ball_place(&w.b, 0.3, 0, 0, -0.5, 0, 0, true);
  for (int t = 0; t < 200; t++)
    pa_ssl_ball_step(&w.f, &w.p, &w.b, w.body, w.bot, w.n, DT);
  assert_int_equal(w.b.holder, (int)r);
  /* Turn at 2 rad/s for a half turn, moving at 0.5 m/s along y. */
  for (int t = 0; t < 314; t++) {
    w.body[r].w = 2.0;
    w.body[r].vy = 0.5;
    w.body[r].theta += 2.0 * DT;
    w.body[r].y += 0.5 * DT;
    pa_ssl_ball_step(&w.f, &w.p, &w.b, w.body, w.bot, w.n, DT);
    assert_true(w.bot[r].ball_contact);
    double bx = w.body[r].x + cos(w.body[r].theta) * (0.08 + 0.021335);
    double by = w.body[r].y + sin(w.body[r].theta) * (0.08 + 0.021335);
    assert_true(hypot(w.b.x - bx, w.b.y - by) < 1e-6);
  }
  assert_true(w.b.x < -0.05); /* it went round with the robot */
  w.bot[r].dribbler_rpm = 0;
  w.body[r].w = 0;
  pa_ssl_ball_step(&w.f, &w.p, &w.b, w.body, w.bot, w.n, DT);
  assert_int_equal(w.b.holder, -1);
}

static void test_wheels(void **st) {
  (void)st;
  pa_ssl_bot b = pa_ssl_bot_default();
  double tw[3] = {1.2, -0.4, 2.5}, wh[4], back[3];
  pa_ssl_twist_to_wheels(&b, tw, wh);
  assert_int_equal(pa_ssl_wheels_to_twist(&b, wh, back), 0);
  for (int i = 0; i < 3; i++)
    assert_true(fabs(back[i] - tw[i]) < 1e-9);
  /* Inconsistent wheels: the least-squares twist leaves a residual
   * orthogonal to every column of the drive matrix. */
  double u[4] = {1.0, -0.3, 0.7, 0.2};
  assert_int_equal(pa_ssl_wheels_to_twist(&b, u, back), 0);
  double fit[4];
  pa_ssl_twist_to_wheels(&b, back, fit);
  double e0 = 0, e1 = 0, e2 = 0;
  for (int i = 0; i < 4; i++) {
    double res = u[i] - fit[i];
    e0 += sin(b.wheel_angle[i]) * res;
    e1 += cos(b.wheel_angle[i]) * res;
    e2 += b.wheel_dist * res;
  }
  assert_true(fabs(e0) < 1e-9 && fabs(e1) < 1e-9 && fabs(e2) < 1e-9);
  /* All wheels at one angle: undetermined, refused. */
  for (int i = 0; i < 4; i++)
    b.wheel_angle[i] = 1.0;
  assert_int_equal(pa_ssl_wheels_to_twist(&b, u, back), -1);
}

static void test_norm_limits(void **st) {
  (void)st;
  pa_ssl_limits l = {.acc_up = 4,
                     .acc_brake = 8,
                     .acc_up_w = 10,
                     .acc_brake_w = 20,
                     .v_max = 3.5,
                     .w_max = 6};
  double cur[3] = {0, 0, 0}, tgt[3] = {3, 3, 10}, out[3];
  pa_ssl_limit(&l, cur, tgt, 0.01, out);
  /* The norm of the change is acc * dt, along the diagonal (per axis
   * limits would give 0.04 on each axis, 0.057 in norm). */
  assert_true(fabs(hypot(out[0], out[1]) - 0.04) < 1e-12);
  assert_true(fabs(out[0] - out[1]) < 1e-12);
  assert_true(fabs(out[2] - 0.1) < 1e-12);
  for (int t = 0; t < 1000; t++) {
    memcpy(cur, out, sizeof cur);
    pa_ssl_limit(&l, cur, tgt, 0.01, out);
  }
  assert_true(fabs(hypot(out[0], out[1]) - 3.5) < 1e-9);
  assert_true(fabs(out[2] - 6) < 1e-9);
  /* Braking uses the brake limit. */
  memcpy(cur, out, sizeof cur);
  double stop[3] = {0, 0, 0};
  pa_ssl_limit(&l, cur, stop, 0.01, out);
  assert_true(fabs(hypot(out[0], out[1]) - (3.5 - 0.08)) < 1e-9);
  assert_true(fabs(out[2] - (6 - 0.2)) < 1e-9);
}

/* The division B field with its ball, one thread, as pa-sim runs it. */
static void ssl_b_up(pa_world *w, pa_grid *g, pa_sim_model *m,
                     pa_sim_state *s) {
  char err[256];
  assert_int_equal(pa_sim_ssl_world('B', 0, w, g, err, sizeof err), 0);
  pa_sim_def d = pa_sim_def_default();
  d.threads = 1;
  if (pa_sim_model_init(m, &d, w, g, err, sizeof err) != 0)
    fail_msg("%s", err);
  assert_int_equal(pa_sim_state_init(m, s, err, sizeof err), 0);
  assert_int_equal(pa_sim_ssl_enable(s, 'B', err, sizeof err), 0);
}

static void ssl_b_down(pa_world *w, pa_grid *g, pa_sim_model *m,
                       pa_sim_state *s) {
  pa_sim_state_free(s);
  pa_sim_model_free(m);
  pa_grid_free(g);
  pa_world_free(w);
}

/* The built-in world in a real pa_sim: a diagonal set_cmd accelerates at
 * the norm limit, the ball rolls, RESET puts it back. */
static void test_sim_world(void **st) {
  (void)st;
  pa_world w;
  pa_grid g;
  pa_sim_model m;
  pa_sim_state s;
  ssl_b_up(&w, &g, &m, &s);
  assert_int_equal(w.robot_count, 12);
  pa_cmd c;
  pa_reply r;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SET_CMD;
  c.robot = 1;
  c.drive.v = 2;
  c.drive.vy = 2;
  assert_int_equal(pa_sim_apply(&m, &s, &c, &r), PA_OK);
  for (int t = 0; t < 40; t++)
    pa_sim_step(&m, &s);
  double sp = hypot(s.rs[1].v, s.rs[1].vy);
  print_message("speed after 0.2 s: %g\n", sp);
  assert_true(fabs(sp - 0.8) < 1e-6);
  memset(&c, 0, sizeof c);
  c.op = PA_OP_TELEPORT_BALL;
  c.ball = (pa_cmd_ball){.x = -3, .y = 2.2, .vx = 1, .roll = 1, .present = 1};
  assert_int_equal(pa_sim_apply(&m, &s, &c, &r), PA_OK);
  for (int t = 0; t < 700; t++)
    pa_sim_step(&m, &s);
  memset(&c, 0, sizeof c);
  c.op = PA_OP_GET_BALL;
  assert_int_equal(pa_sim_apply(&m, &s, &c, &r), PA_OK);
  assert_true(fabs(r.ssl.ball[0] - (-3 + 1 / 0.7)) < 0.01);
  assert_int_equal(r.ssl.division, 'B');
  pa_sim_reset(&m, &s);
  assert_int_equal(pa_sim_apply(&m, &s, &c, &r), PA_OK);
  assert_true(r.ssl.ball[0] == 0 && r.ssl.holder == -1);
  ssl_b_down(&w, &g, &m, &s);
}

/* A robot spawned by an SSL name gets its world twin's body: y5 removed and
 * spawned again by name has every property (every row) it had. */
static void test_spawned_by_name_is_its_twin(void **st) {
  (void)st;
  pa_world w;
  pa_grid g;
  pa_sim_model m;
  pa_sim_state s;
  ssl_b_up(&w, &g, &m, &s);
  uint32_t k = pa_sim_find_robot(&s, "y5");
  assert_true(k != UINT32_MAX);
  pa_robot_info twin = s.info[k];
  pa_cmd c;
  pa_reply r;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_REMOVE_ROBOT;
  c.robot = k;
  assert_int_equal(pa_sim_apply(&m, &s, &c, &r), PA_OK);
  pa_sim_step(&m, &s);
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SPAWN_ROBOT;
  snprintf(c.name, sizeof c.name, "y5");
  c.spawn_robot.x = 2;
  c.spawn_robot.y = 2;
  assert_int_equal(pa_sim_apply(&m, &s, &c, &r), PA_OK);
  pa_sim_step(&m, &s); /* the SSL robot's body comes with its first tick */
  k = pa_sim_find_robot(&s, "y5");
  assert_true(k != UINT32_MAX);
  for (int i = 0; i < PA_PR_COUNT; i++)
    if (pa_prop((pa_prop_row)i)->kinds & PA_PK_ROBOT)
      for (int j = 0; j < pa_prop_ncomp((pa_prop_row)i); j++)
        if (pa_prop_get((pa_prop_row)i, &s.info[k], j) !=
            pa_prop_get((pa_prop_row)i, &twin, j))
          fail_msg("spawned y5's %s is %g, its world twin's %g",
                   pa_prop((pa_prop_row)i)->name,
                   pa_prop_get((pa_prop_row)i, &s.info[k], j),
                   pa_prop_get((pa_prop_row)i, &twin, j));
  ssl_b_down(&w, &g, &m, &s);
}

/* The laser sees the ball where it crosses the beam plane (20 mm): on the
 * ground at its distance less its cross-section's radius; in the air
 * above the plane not at all. */
static void test_laser_sees_ball(void **st) {
  (void)st;
  pa_world w;
  pa_grid g;
  pa_sim_model m;
  pa_sim_state s;
  ssl_b_up(&w, &g, &m, &s);
  assert_true(m.beam_cap >= 360);
  pa_robot_info *ri = &s.info[0]; /* SSL robots carry none: give it one */
  ri->laser_beams = 360;
  ri->laser_range_min = 0.05f;
  ri->laser_range_max = 12;
  ri->laser_noise = 0;
  const pa_robot_state *r0 = &s.rs[0];
  const double dist = 0.5, R = PA_SSL_BALL_RADIUS;
  double bx = r0->x + dist * cos(r0->theta), by = r0->y + dist * sin(r0->theta);
  float *out = calloc(360, sizeof *out);
  assert_non_null(out);
  const uint32_t ahead = 180; /* beam i looks at -pi + i * 2 pi / 360 */
  pa_cmd c;
  pa_reply r;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_TELEPORT_BALL;
  c.ball = (pa_cmd_ball){.present = 0};
  assert_int_equal(pa_sim_apply(&m, &s, &c, &r), PA_OK);
  pa_sim_scan(&m, &s, 0, out);
  float bare = out[ahead], bare3 = out[ahead + 3];
  assert_true(bare > dist + 0.3); /* nothing else on that beam short of it */
  /* On the ground: the plane cuts it 20 mm up, 1.3 mm below its centre. */
  c.ball = (pa_cmd_ball){.x = bx, .y = by, .present = 1};
  assert_int_equal(pa_sim_apply(&m, &s, &c, &r), PA_OK);
  pa_sim_scan(&m, &s, 0, out);
  double dz = PA_SSL_LASER_HEIGHT - R;
  double want = dist - sqrt(R * R - dz * dz);
  print_message("ball ahead: %.5f m (want %.5f)\n", out[ahead], want);
  assert_true(fabs(out[ahead] - want) < 1e-4);
  assert_true(out[ahead + 3] == bare3); /* 26 mm aside: not it */
  /* Chipped, its bottom 25 mm up: above the plane, not seen. */
  c.ball = (pa_cmd_ball){.x = bx, .y = by, .z = 0.025, .present = 1};
  assert_int_equal(pa_sim_apply(&m, &s, &c, &r), PA_OK);
  pa_sim_scan(&m, &s, 0, out);
  assert_true(fabs(out[ahead] - bare) < 1e-4);
  /* Low in the air, bottom 10 mm up: seen again. */
  c.ball = (pa_cmd_ball){.x = bx, .y = by, .z = 0.01, .present = 1};
  assert_int_equal(pa_sim_apply(&m, &s, &c, &r), PA_OK);
  pa_sim_scan(&m, &s, 0, out);
  dz = PA_SSL_LASER_HEIGHT - (0.01 + R);
  assert_true(fabs(out[ahead] - (dist - sqrt(R * R - dz * dz))) < 1e-4);
  free(out);
  ssl_b_down(&w, &g, &m, &s);
}

/* A world file's ssl: section: the field is the map, the formation is
 * placed when the file lists no robots; bad sections are named. */
static void test_world_file(void **st) {
  (void)st;
  char path[] = "/tmp/t-ssl-world-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  struct {
    const char *text, *err;
  } cases[] = {
      {"ssl: {division: b, robots: 3}\n", NULL},
      {"ssl: {division: c}\n", "not a or b"},
      {"ssl: {division: a, robots: 17}\n", "0..16"},
      {"map: default\nssl: {division: a}\n", "remove 'map'"},
      {"ssl: {robots: 2}\n", "division is required"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(cases[i].text, f);
    fclose(f);
    pa_world w;
    char err[256] = "";
    int rc = pa_world_load(path, &w, err, sizeof err);
    if (cases[i].err) {
      assert_int_equal(rc, -1);
      if (!strstr(err, cases[i].err))
        fail_msg("'%s': got '%s'", cases[i].text, err);
      continue;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(w.ssl_division, 'B');
    assert_false(w.robots_given);
    pa_grid g;
    assert_int_equal(pa_sim_ssl_world_file(&w, &g, err, sizeof err), 0);
    assert_int_equal(w.robot_count, 6);
    assert_string_equal(w.robots[3].name, "y0");
    assert_true(fabs(g.width * g.resolution - (9 + 0.6 + 0.08)) < 0.05);
    pa_grid_free(&g);
    pa_world_free(&w);
  }
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_field),
      cmocka_unit_test(test_friction_distances),
      cmocka_unit_test(test_wall_bounce),
      cmocka_unit_test(test_hull_bounce),
      cmocka_unit_test(test_kick),
      cmocka_unit_test(test_kick_cap_with_motion),
      cmocka_unit_test(test_chip_over_robot),
      cmocka_unit_test(test_dribble_and_turn),
      cmocka_unit_test(test_wheels),
      cmocka_unit_test(test_norm_limits),
      cmocka_unit_test(test_sim_world),
      cmocka_unit_test(test_world_file),
      cmocka_unit_test(test_laser_sees_ball),
      cmocka_unit_test(test_spawned_by_name_is_its_twin),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
