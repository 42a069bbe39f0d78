/* json_ssl.c - the RoboCup SSL actions of JSON v2: kick, set_dribbler,
 * teleport_ball, get_ball, the ball in get_state, and set_pose with a
 * velocity (docs/ssl.md). */
#define _GNU_SOURCE
#include "json_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The newest tick, failing by name when the world has no SSL field. */
static const pa_tick *ssl_tick(jctx *x) {
  const pa_tick *t = pa_gw_latest(x->c->g);
  if (!t || !t->ssl) {
    pa_json_fail(x, PA_ERR_UNSUPPORTED_CONTROL_SCHEME,
                 "this world has no SSL field (--world ssl-a or ssl-b)");
    return NULL;
  }
  return t;
}

json_t *pa_json_ssl_ball(const pa_tick *t) {
  json_t *b = json_object();
  json_object_set_new(b, "present", json_boolean(t->ball_holder != -2));
  json_object_set_new(b, "position",
                      pa_json_vec3(t->ball[0], t->ball[1], t->ball[2]));
  json_object_set_new(b, "velocity",
                      pa_json_vec3(t->ball[3], t->ball[4], t->ball[5]));
  json_object_set_new(b, "holder",
                      t->ball_holder >= 0 ? json_integer(t->ball_holder)
                                          : json_null());
  char div[2] = {(char)t->ssl, 0};
  json_object_set_new(b, "division", json_string(div));
  return b;
}

json_t *pa_json_act_get_ball(jctx *x) {
  const pa_tick *t = ssl_tick(x);
  if (!t)
    return NULL;
  x->sim_time = t->sim_time;
  json_t *d = pa_json_ssl_ball(t);
  json_object_set_new(d, "tick", json_integer((json_int_t)t->tick));
  return d;
}

static json_t *ssl_robot(jctx *x, pa_cmd *cmd) {
  if (!ssl_tick(x))
    return NULL;
  cmd->op = PA_OP_SSL_ROBOT;
  return pa_json_wait_for_sim(x, cmd, x->idx);
}

json_t *pa_json_act_kick(jctx *x) {
  double speed = 0, angle = 0;
  int r = pa_json_num(x, "speed", &speed);
  if (r < 0 || pa_json_num(x, "angle", &angle) < 0)
    return NULL;
  if (r == 0)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.speed [m/s] is required (0 = disarm)");
  if (!(speed >= 0 && speed <= 100) || !(angle >= 0 && angle <= 80))
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.speed must be 0..100 m/s and data.angle "
                        "0..80 deg (0 = straight, > 0 = chip)");
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.ssl_robot.has = PA_SSL_HAS_KICK;
  cmd.ssl_robot.kick_speed = speed;
  cmd.ssl_robot.kick_angle = angle;
  return ssl_robot(x, &cmd);
}

json_t *pa_json_act_set_dribbler(jctx *x) {
  double rpm = 0;
  int r = pa_json_num(x, "rpm", &rpm);
  if (r < 0)
    return NULL;
  if (r == 0 || !(rpm >= 0 && rpm <= 1e5))
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.rpm is required: 0..1e5 (0 = off)");
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.ssl_robot.has = PA_SSL_HAS_DRIBBLER;
  cmd.ssl_robot.dribbler_rpm = rpm;
  return ssl_robot(x, &cmd);
}

json_t *pa_json_done_ssl(jctx *x, const pa_reply *r) {
  json_t *d = pa_json_tick(r);
  json_object_set_new(d, "robot", json_integer(x->c->pend_robot));
  json_object_set_new(d, "ball_contact", json_boolean(r->ssl.contact));
  json_object_set_new(d, "kicks", json_integer(r->ssl.kicks));
  return d;
}

/* Optional boolean data[key]: 1 found, 0 absent, -1 bad (error set). */
static int opt_bool(jctx *x, const char *key, bool *out) {
  json_t *v = json_object_get(x->data, key);
  if (!v)
    return 0;
  if (!json_is_boolean(v)) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE, "data.%s must be true or false",
                 key);
    return -1;
  }
  *out = json_is_true(v);
  return 1;
}

json_t *pa_json_act_teleport_ball(jctx *x) {
  if (!ssl_tick(x))
    return NULL;
  double p[3] = {0, 0, 0}, v[3] = {0, 0, 0};
  size_t np = 0, nv = 0;
  bool roll = false, present = true;
  int rp = pa_json_vec(x, "position", 2, 3, p, &np);
  if (rp < 0 || pa_json_vec(x, "velocity", 2, 3, v, &nv) < 0 ||
      opt_bool(x, "roll", &roll) < 0 || opt_bool(x, "present", &present) < 0)
    return NULL;
  if (rp == 0 && present)
    return pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                        "data.position is required: [x, y] or [x, y, z]");
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_TELEPORT_BALL;
  cmd.ball = (pa_cmd_ball){p[0], p[1], p[2], v[0], v[1], v[2], roll, present};
  return pa_json_wait_for_sim(x, &cmd, 0);
}

json_t *pa_json_done_teleport_ball(jctx *x, const pa_reply *r) {
  (void)x;
  json_t *d = pa_json_tick(r);
  json_object_set_new(
      d, "position",
      pa_json_vec3(r->ssl.ball[0], r->ssl.ball[1], r->ssl.ball[2]));
  json_object_set_new(
      d, "velocity",
      pa_json_vec3(r->ssl.ball[3], r->ssl.ball[4], r->ssl.ball[5]));
  json_object_set_new(d, "present", json_boolean(r->ssl.holder != -2));
  if (r->ssl.moved_from) { /* the position asked lay inside a robot */
    int n = (int)strnlen(r->msg, sizeof r->msg);
    json_object_set_new(d, "moved", json_stringn(r->msg, (size_t)n));
  }
  return d;
}

int pa_json_moving_pose(jctx *x, const double p[3], pa_cmd *cmd) {
  static const char *const keys[3] = {"v_x", "v_y", "v_angular"};
  double v[3] = {0, 0, 0};
  int any = 0;
  for (int i = 0; i < 3; i++) {
    int r = pa_json_num(x, keys[i], &v[i]);
    if (r < 0)
      return -1;
    any |= r;
    if (!(fabs(v[i]) <= PA_CMD_SPEED_LIMIT)) {
      pa_json_fail(x, PA_ERR_INVALID_MESSAGE, "data.%s must be within 1e6",
                   keys[i]);
      return -1;
    }
  }
  if (!any)
    return 0;
  cmd->op = PA_OP_TELEPORT_MOVING;
  cmd->moving = (pa_cmd_moving){p[0], p[1], p[2], v[0], v[1], v[2]};
  return 1;
}

json_t *pa_json_act_get_ssl_info(jctx *x) {
  /* The SSL front-end's ports (a field set just now: they open now). */
  pa_status st = PA_ERR_INVALID_MESSAGE;
  char err[256] = "";
  json_t *o = pa_core_call(x->c->g, "ssl", "info", NULL, &st, err, sizeof err);
  if (!o)
    return pa_json_fail(x, st, "%s", err);
  const pa_tick *t = ssl_tick(x);
  if (!t) {
    json_decref(o);
    return NULL;
  }
  char div[2] = {(char)t->ssl, 0};
  json_object_set_new(o, "division", json_string(div));
  return o;
}
