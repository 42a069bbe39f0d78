/* sim_ssl.c - the SSL field in a running pa_sim: the built-in worlds
 * ssl-a / ssl-b, the ball stepped after the robots each tick, each SSL
 * robot's command through the protocol's norm limits, and the SSL ops
 * (SSL_ROBOT, TELEPORT_BALL, GET_BALL, TELEPORT_MOVING). */
#include "pa_props.h"
#include "sim_ssl_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

typedef struct pa_sim_ssl {
  pa_ssl_field f;
  pa_ssl_params p;
  pa_ssl_ball ball;
  pa_ssl_bot *bot;   /* [cap] */
  pa_ssl_body *body; /* [cap] scratch of a tick */
  uint32_t *gen;     /* [cap] the robot generation bot[i] was set up for */
  double *last;      /* [cap * 3] the command written last (robot frame) */
  uint32_t cap;
} pa_sim_ssl;

/* "b3" / "y15" -> team and id; false for any other name. */
static bool ssl_name(const char *name, uint8_t *team, uint8_t *id) {
  if (name[0] != 'b' && name[0] != 'y')
    return false;
  char *end;
  if (name[1] < '0' || name[1] > '9')
    return false;
  long v = strtol(name + 1, &end, 10);
  if (*end || v < 0 || v >= PA_SSL_TEAM_IDS)
    return false;
  *team = name[0] == 'b' ? PA_SSL_BLUE : PA_SSL_YELLOW;
  *id = (uint8_t)v;
  return true;
}

/* The robot record every SSL robot of a team gets (docs/ssl.md): the world's
 * and one spawned by name alike. */
static void ssl_robot_def(pa_robot_def *r, const pa_ssl_bot *b, int team) {
  r->drive = PA_DRIVE_OMNI;
  r->radius = 0.09;
  r->height = 0.15;
  r->head_height = 0.14;
  r->max_v = r->max_vy = b->lim.v_max;
  r->max_w = b->lim.w_max;
  /* The norm limits act before the step: its per-axis ones must not. */
  r->acc_v = r->dec_v = 1000;
  r->acc_w = r->dec_w = 1000;
  r->laser.beams = 1; /* SSL robots carry no laser; the camera sees */
  const uint8_t colour[2][4] = {{30, 80, 230, 255}, {240, 220, 20, 255}};
  memcpy(r->colour, colour[team == PA_SSL_YELLOW], 4);
}

int pa_sim_ssl_world(char division, uint32_t per_team, pa_world *w, pa_grid *g,
                     char *err, size_t err_sz) {
  pa_ssl_field f;
  memset(w, 0, sizeof *w);
  memset(g, 0, sizeof *g);
  if (pa_ssl_field_get(division, &f) != 0) {
    snprintf(err, err_sz, "ssl: unknown division '%c'", division);
    return -1;
  }
  if (per_team == 0)
    per_team = f.division == 'A' ? 11 : 6;
  if (per_team > PA_SSL_TEAM_IDS) {
    snprintf(err, err_sz, "ssl: %u robots per team, at most %d", per_team,
             PA_SSL_TEAM_IDS);
    return -1;
  }
  if (pa_ssl_field_grid(&f, 0.02, g, err, err_sz) != 0)
    return -1;
  w->map = pa_map_def_default();
  w->unknown_blocks = true;
  w->robots = calloc(2 * per_team, sizeof *w->robots);
  if (!w->robots) {
    pa_grid_free(g);
    snprintf(err, err_sz, "ssl: out of memory");
    return -1;
  }
  pa_ssl_bot b = pa_ssl_bot_default();
  for (uint32_t t = 0; t < 2; t++)
    for (uint32_t i = 0; i < per_team; i++) {
      pa_robot_def *r = &w->robots[w->robot_count++];
      *r = pa_robot_def_default();
      snprintf(r->name, sizeof r->name, "%c%u", t ? 'y' : 'b', i);
      ssl_robot_def(r, &b, t ? PA_SSL_YELLOW : PA_SSL_BLUE);
      /* Blue in the -x half facing +x, yellow mirrored: rows 0.5 m
       * apart, 0.6 m between robots of a row. */
      double side = t ? 1 : -1;
      uint32_t row = i / 4, col = i % 4;
      r->x = side * (0.5 + 0.5 * row);
      r->y = (col - 1.5) * 0.6;
      r->theta = t ? M_PI : 0;
    }
  return 0;
}

int pa_sim_ssl_world_file(pa_world *w, pa_grid *g, char *err, size_t err_sz) {
  pa_world f;
  if (pa_sim_ssl_world(w->ssl_division, w->ssl_robots, &f, g, err, err_sz) != 0)
    return -1;
  if (!w->robots_given) {
    free(w->robots);
    w->robots = f.robots;
    w->robot_count = f.robot_count;
    f.robots = NULL;
    f.robot_count = 0;
  }
  pa_world_free(&f);
  return 0;
}

int pa_sim_ssl_enable(pa_sim_state *s, char division, char *err,
                      size_t err_sz) {
  pa_sim_ssl *x = calloc(1, sizeof *x);
  if (!x) {
    snprintf(err, err_sz, "ssl: out of memory");
    return -1;
  }
  x->cap = s->cap_robots;
  x->bot = calloc(x->cap, sizeof *x->bot);
  x->body = calloc(x->cap, sizeof *x->body);
  x->gen = calloc(x->cap, sizeof *x->gen);
  x->last = calloc((size_t)x->cap * 3, sizeof *x->last);
  if (!x->bot || !x->body || !x->gen || !x->last ||
      pa_ssl_field_get(division, &x->f) != 0) {
    snprintf(err, err_sz, "ssl: out of memory or no division '%c'", division);
    s->ssl = x;
    pa_sim_ssl_free(s);
    return -1;
  }
  x->p = pa_ssl_params_default();
  for (uint32_t i = 0; i < x->cap; i++)
    x->gen[i] = UINT32_MAX;
  s->ssl = x;
  pa_sim_ssl_reset(s);
  return 0;
}

void pa_sim_ssl_free(pa_sim_state *s) {
  pa_sim_ssl *x = s->ssl;
  if (!x)
    return;
  free(x->bot);
  free(x->body);
  free(x->gen);
  free(x->last);
  free(x);
  s->ssl = NULL;
}

int pa_sim_ssl_set_field(pa_sim_state *s, char division, char *err,
                         size_t err_sz) {
  if (s->ssl && s->ssl->f.division == division) {
    pa_sim_ssl_reset(s);
    return 0;
  }
  pa_sim_ssl_free(s);
  return division ? pa_sim_ssl_enable(s, division, err, err_sz) : 0;
}

void pa_sim_ssl_reset(pa_sim_state *s) {
  pa_sim_ssl *x = s->ssl;
  if (!x)
    return;
  pa_ssl_ball_place(&x->ball, 0, 0, 0, 0, 0, 0, true);
  for (uint32_t i = 0; i < x->cap; i++)
    x->gen[i] = UINT32_MAX; /* set up again from the robot's name */
}

/* Robot i's SSL side, set up once per generation. */
static pa_ssl_bot *bot_of(pa_sim_ssl *x, pa_sim_state *s, uint32_t i) {
  if (i >= x->cap || !s->info[i].active)
    return NULL;
  pa_ssl_bot *b = &x->bot[i];
  if (x->gen[i] != s->info[i].gen) {
    *b = pa_ssl_bot_default();
    b->ssl = ssl_name(s->info[i].name, &b->team, &b->ssl_id);
    x->gen[i] = s->info[i].gen;
    /* Whatever command it holds now becomes its target. */
    x->last[3 * i] = x->last[3 * i + 1] = x->last[3 * i + 2] = NAN;
    if (b->ssl) {
      pa_robot_info *ri = &s->info[i];
      pa_robot_def d = pa_robot_def_default();
      ssl_robot_def(&d, b, b->team);
      /* A robot spawned by name (present = true) gets the SSL body: every
       * property (its rows) as its world twin's. */
      if (ri->drive != PA_DRIVE_OMNI || ri->acc_v < 1000) {
        pa_sim_int_props_from_def(ri, &d, PA_PK_ROBOT);
        ri->wheel_base = (float)(PA_WHEEL_BASE_PER_RADIUS * d.radius);
        s->world_dirty = true;
      }
    }
  }
  return b;
}

/* A team port's command older than --ssl_command_timeout_ms (sim time):
 * the robot stops, its dribbler and kicker off, as if told so. */
static void lapse(const pa_sim_model *m, const pa_sim_state *s, pa_ssl_bot *b) {
  uint32_t ms = m->def.ssl_cmd_timeout_ms;
  if (!b->cmd_lapses || !ms || s->sim_time - b->cmd_time <= ms * 1e-3)
    return;
  b->cmd_lapses = false;
  if (b->move_lapses) {
    b->tx = b->ty = b->tw = 0;
    b->tframe = PA_FRAME_ROBOT;
    b->driving = true;
  }
  b->dribbler_rpm = 0;
  b->kick_speed = 0;
}

void pa_sim_ssl_pre(const pa_sim_model *m, pa_sim_state *s) {
  pa_sim_ssl *x = s->ssl;
  for (uint32_t i = 0; i < s->robot_count; i++) {
    pa_ssl_bot *b = bot_of(x, s, i);
    if (!b || !b->ssl)
      continue;
    pa_robot_state *r = &s->rs[i];
    double *last = &x->last[3 * i];
    double c = cos(r->theta), sn = sin(r->theta);
    /* A command set another way (set_cmd, step): it becomes the target. */
    if (r->cmd_v != last[0] || r->cmd_vy != last[1] || r->cmd_w != last[2] ||
        r->cmd_frame != PA_FRAME_ROBOT) {
      b->move_lapses = false; /* the kicker and dribbler still lapse */
      b->tx = r->cmd_v;
      b->ty = r->cmd_vy;
      b->tw = r->cmd_w;
      b->tframe = r->cmd_frame;
      b->driving = true;
    }
    lapse(m, s, b);
    if (!b->driving)
      continue;
    double tgt[3] = {b->tx, b->ty, b->tw};
    if (b->tframe == PA_FRAME_ROBOT) {
      tgt[0] = c * b->tx - sn * b->ty;
      tgt[1] = sn * b->tx + c * b->ty;
    }
    double cur[3] = {c * r->v - sn * r->vy, sn * r->v + c * r->vy, r->w};
    double out[3];
    pa_ssl_limit(&b->lim, cur, tgt, m->dt, out);
    r->cmd_v = last[0] = c * out[0] + sn * out[1];
    r->cmd_vy = last[1] = -sn * out[0] + c * out[1];
    r->cmd_w = last[2] = out[2];
    r->cmd_frame = PA_FRAME_ROBOT;
  }
}

void pa_sim_ssl_post(const pa_sim_model *m, pa_sim_state *s) {
  pa_sim_ssl *x = s->ssl;
  uint32_t n = s->robot_count < x->cap ? s->robot_count : x->cap;
  for (uint32_t i = 0; i < n; i++) {
    pa_ssl_bot *b = bot_of(x, s, i);
    pa_ssl_body *o = &x->body[i];
    if (!b) {
      o->active = false;
      continue;
    }
    const pa_robot_state *r = &s->rs[i];
    double c = cos(r->theta), sn = sin(r->theta);
    *o = (pa_ssl_body){.active = true,
                       .x = r->x,
                       .y = r->y,
                       .theta = r->theta,
                       .vx = c * r->v - sn * r->vy,
                       .vy = sn * r->v + c * r->vy,
                       .w = r->w,
                       .radius = s->info[i].radius,
                       .height = s->info[i].height};
  }
  pa_ssl_ball_step(&x->f, &x->p, &x->ball, x->body, x->bot, n, m->dt);
  for (uint32_t i = 0; i < n; i++) {
    /* the ball's push (its mass against the robot's): the new velocity */
    pa_robot_state *r = &s->rs[i];
    const pa_ssl_body *o = &x->body[i];
    double c = cos(r->theta), sn = sin(r->theta);
    double vx = c * r->v - sn * r->vy, vy = sn * r->v + c * r->vy;
    if (o->active && (o->vx != vx || o->vy != vy)) {
      r->v = c * o->vx + sn * o->vy;
      r->vy = -sn * o->vx + c * o->vy;
    }
    if (x->bot[i].ball_contact)
      s->rs[i].flags |= PA_RS_BALL_CONTACT;
    else
      s->rs[i].flags &= ~(uint32_t)PA_RS_BALL_CONTACT;
  }
}

void pa_sim_ssl_tick_fill(const pa_sim_state *s, pa_tick *t) {
  const pa_sim_ssl *x = s->ssl;
  if (!x)
    return;
  t->ssl = (uint32_t)x->f.division;
  t->ball_holder = x->ball.present ? x->ball.holder : -2;
  const pa_ssl_ball *b = &x->ball;
  double v[6] = {b->x, b->y, b->z, b->vx, b->vy, b->vz};
  memcpy(t->ball, v, sizeof v);
  t->ball_v_switch = b->v_switch;
}

static pa_status no_field(pa_reply *r) {
  return pa_sim_int_fail(r, PA_ERR_UNSUPPORTED_CONTROL_SCHEME,
                         "this world has no SSL field (--world ssl-a or "
                         "ssl-b)");
}

static void reply_ball(const pa_sim_ssl *x, pa_reply *r, int32_t robot) {
  const pa_ssl_ball *b = &x->ball;
  double v[6] = {b->x, b->y, b->z, b->vx, b->vy, b->vz};
  memcpy(r->ssl.ball, v, sizeof v);
  r->ssl.holder = b->present ? b->holder : -2;
  r->ssl.division = (uint32_t)x->f.division;
  if (robot >= 0) {
    r->ssl.contact = x->bot[robot].ball_contact;
    r->ssl.kicks = x->bot[robot].kicks;
  }
}

static bool finite_all(const double *v, int n, double lim) {
  for (int i = 0; i < n; i++)
    if (!(v[i] >= -lim && v[i] <= lim))
      return false;
  return true;
}

pa_status pa_sim_int_op_ssl_robot(const pa_sim_model *m, pa_sim_state *s,
                                  const pa_cmd *c, pa_reply *r) {
  (void)m;
  pa_sim_ssl *x = s->ssl;
  if (!x)
    return no_field(r);
  const pa_cmd_ssl_robot *a = &c->ssl_robot;
  pa_ssl_bot *b = bot_of(x, s, c->robot);
  if (!b->ssl)
    return pa_sim_int_fail(r, PA_ERR_UNSUPPORTED_CONTROL_SCHEME,
                           "robot '%s' is not an SSL robot (b0..b15, "
                           "y0..y15)",
                           s->info[c->robot].name);
  double k[3] = {a->kick_speed, a->kick_angle, a->dribbler_rpm};
  if (!finite_all(a->m, 4, PA_CMD_SPEED_LIMIT) ||
      !finite_all(k, 3, PA_CMD_SPEED_LIMIT))
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "ssl command: numbers must be finite, within 1e6");
  if ((a->has & PA_SSL_HAS_KICK) &&
      (a->kick_speed < 0 || a->kick_angle < 0 || a->kick_angle > 80))
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "kick: speed must be >= 0 and angle 0..80 deg");
  if ((a->has & PA_SSL_HAS_DRIBBLER) && a->dribbler_rpm < 0)
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "dribbler_speed must be >= 0 rpm");
  double tw[3] = {a->m[0], a->m[1], a->m[2]};
  if (a->move == PA_SSL_MOVE_WHEELS && pa_ssl_wheels_to_twist(b, a->m, tw) != 0)
    return pa_sim_int_fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                           "the robot's wheel angles leave the twist "
                           "undetermined");
  if (a->move > PA_SSL_MOVE_GLOBAL)
    return pa_sim_int_fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                           "unknown move command %u", a->move);
  if (a->move != PA_SSL_MOVE_NONE) {
    b->tx = tw[0];
    b->ty = tw[1];
    b->tw = tw[2];
    b->tframe = a->move == PA_SSL_MOVE_GLOBAL ? PA_FRAME_WORLD : PA_FRAME_ROBOT;
    b->driving = true;
  }
  if (a->has & PA_SSL_HAS_KICK) {
    b->kick_speed = a->kick_speed;
    b->kick_angle = a->kick_angle;
  }
  if (a->has & PA_SSL_HAS_DRIBBLER)
    b->dribbler_rpm = a->dribbler_rpm;
  b->cmd_lapses = b->move_lapses = (a->has & PA_SSL_HAS_TIMEOUT) != 0;
  b->cmd_time = s->sim_time;
  r->status = PA_OK;
  reply_ball(x, r, (int32_t)c->robot);
  return PA_OK;
}

/* A ball placed inside an SSL robot's body (below its top) goes out
 * through the nearer face, 1 mm clear: the index + 1 of the robot it was
 * in, 0 when it was clear (a few passes: out of one, maybe into another). */
static uint32_t ball_out_of_robots(pa_sim_ssl *x, pa_sim_state *s,
                                   pa_ssl_ball *b) {
  uint32_t moved = 0;
  uint32_t n = s->robot_count < x->cap ? s->robot_count : x->cap;
  for (int pass = 0; pass < 3; pass++) {
    bool clear = true;
    for (uint32_t i = 0; i < n; i++) {
      pa_ssl_bot *bot = bot_of(x, s, i);
      if (!bot || b->z >= s->info[i].height)
        continue;
      const pa_robot_state *r = &s->rs[i];
      pa_ssl_body o = {.active = true,
                       .x = r->x,
                       .y = r->y,
                       .theta = r->theta,
                       .radius = s->info[i].radius,
                       .height = s->info[i].height};
      double nx, ny, fy;
      bool front;
      double d = pa_ssl_hull_dist(&o, bot->center_to_dribbler, b->x, b->y, &nx,
                                  &ny, &front, &fy);
      if (d >= 0) /* its centre outside the body: touching is fine */
        continue;
      double k = PA_SSL_BALL_RADIUS - d + 0.001;
      b->x += nx * k;
      b->y += ny * k;
      moved = i + 1;
      clear = false;
    }
    if (clear)
      break;
  }
  return moved;
}

pa_status pa_sim_int_op_teleport_ball(const pa_sim_model *m, pa_sim_state *s,
                                      const pa_cmd *c, pa_reply *r) {
  (void)m;
  pa_sim_ssl *x = s->ssl;
  if (!x)
    return no_field(r);
  const pa_cmd_ball *a = &c->ball;
  double v[6] = {a->x, a->y, a->z, a->vx, a->vy, a->vz};
  if (!finite_all(v, 6, 1e3))
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "ball: numbers must be finite, within 1e3");
  double hx = x->f.length / 2 + x->f.boundary - PA_SSL_BALL_RADIUS;
  double hy = x->f.width / 2 + x->f.boundary - PA_SSL_BALL_RADIUS;
  if (a->present && (fabs(a->x) > hx || fabs(a->y) > hy || a->z < 0))
    return pa_sim_int_fail(r, PA_ERR_BLOCKED_POSE,
                           "ball at (%g, %g, %g) is outside the field walls "
                           "(|x| <= %g, |y| <= %g, z >= 0)",
                           a->x, a->y, a->z, hx, hy);
  uint32_t moved = 0;
  if (a->present) {
    pa_ssl_ball_place(&x->ball, a->x, a->y, a->z, a->vx, a->vy, a->vz,
                      a->roll != 0);
    moved = ball_out_of_robots(x, s, &x->ball);
  } else {
    x->ball.present = false;
  }
  r->status = PA_OK;
  reply_ball(x, r, -1);
  r->ssl.moved_from = moved;
  if (moved)
    snprintf(r->msg, sizeof r->msg,
             "(%.3f, %.3f) is inside robot '%s': placed at (%.3f, %.3f)", a->x,
             a->y, s->info[moved - 1].name, x->ball.x, x->ball.y);
  return PA_OK;
}

pa_status pa_sim_int_op_get_ball(const pa_sim_model *m, pa_sim_state *s,
                                 const pa_cmd *c, pa_reply *r) {
  (void)m;
  pa_sim_ssl *x = s->ssl;
  if (!x)
    return no_field(r);
  bool robot = c->robot < s->robot_count && s->info[c->robot].active &&
               c->robot < x->cap;
  r->status = PA_OK;
  reply_ball(x, r, robot ? (int32_t)c->robot : -1);
  return PA_OK;
}

pa_status pa_sim_int_op_teleport_moving(const pa_sim_model *m, pa_sim_state *s,
                                        const pa_cmd *c, pa_reply *r) {
  const pa_cmd_moving *a = &c->moving;
  double v[6] = {a->x, a->y, a->theta, a->vx, a->vy, a->w};
  if (!finite_all(v, 3, 1e7) || !finite_all(v + 3, 3, PA_CMD_SPEED_LIMIT))
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "pose and velocity must be finite numbers");
  uint32_t id = c->robot;
  if (!pa_sim_int_free(m, s, id, a->x, a->y, s->info[id].radius, true))
    return pa_sim_int_fail(r, PA_ERR_BLOCKED_POSE,
                           "pose (%g, %g) overlaps a wall or another body",
                           a->x, a->y);
  pa_sim_int_robot_place(m, s, id, a->x, a->y, a->theta);
  pa_robot_state *rs = &s->rs[id];
  double c0 = cos(rs->theta), s0 = sin(rs->theta);
  rs->v = rs->cmd_v = c0 * a->vx + s0 * a->vy;
  rs->vy = rs->cmd_vy = -s0 * a->vx + c0 * a->vy;
  rs->w = rs->cmd_w = a->w;
  rs->cmd_frame = PA_FRAME_ROBOT;
  s->hash.valid = false;
  if (s->ssl) {
    pa_ssl_bot *b = bot_of(s->ssl, s, id);
    double *last = &s->ssl->last[3 * id];
    last[0] = rs->cmd_v;
    last[1] = rs->cmd_vy;
    last[2] = rs->cmd_w;
    b->tx = a->vx;
    b->ty = a->vy;
    b->tw = a->w;
    b->tframe = PA_FRAME_WORLD;
    b->driving = true;
  }
  pa_sim_int_reply_pose(r, s, id);
  r->status = PA_OK;
  return PA_OK;
}

pa_status pa_sim_int_op_ssl_specs(const pa_sim_model *m, pa_sim_state *s,
                                  const pa_cmd *c, pa_reply *r) {
  (void)m;
  pa_sim_ssl *x = s->ssl;
  if (!x)
    return no_field(r);
  const pa_cmd_ssl_specs *a = &c->ssl_specs;
  pa_ssl_bot *b = bot_of(x, s, c->robot);
  pa_robot_info *ri = &s->info[c->robot];
  if (!b->ssl)
    return pa_sim_int_fail(r, PA_ERR_UNSUPPORTED_CONTROL_SCHEME,
                           "robot '%s' is not an SSL robot", ri->name);
  const float v[] = {a->mass,     a->max_kick, a->max_chip,      a->c2d,
                     a->lim[0],   a->lim[1],   a->lim[2],        a->lim[3],
                     a->lim[4],   a->lim[5],   a->wheel[0],      a->wheel[1],
                     a->wheel[2], a->wheel[3], a->dribbler_width};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (!(v[i] >= -1e4f && v[i] <= 1e4f) || (i < 10 && v[i] < 0))
      return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                             "robot specs: numbers must be finite and >= 0 "
                             "(angles finite)");
  if ((a->has & PA_SSL_SPEC_C2D) && (a->c2d <= 0 || a->c2d > ri->radius))
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "center_to_dribbler %g must be in (0, radius %g]",
                           a->c2d, ri->radius);
  pa_ssl_bot nb = *b;
  if (a->has & PA_SSL_SPEC_MASS)
    nb.mass = a->mass;
  if (a->has & PA_SSL_SPEC_MAX_KICK)
    nb.max_kick = a->max_kick;
  if (a->has & PA_SSL_SPEC_MAX_CHIP)
    nb.max_chip = a->max_chip;
  if (a->has & PA_SSL_SPEC_C2D)
    nb.center_to_dribbler = a->c2d;
  if (a->has & PA_SSL_SPEC_DRIBBLER_WIDTH)
    nb.dribbler_width = a->dribbler_width;
  if (a->has & PA_SSL_SPEC_LIMITS) {
    double *l[6] = {&nb.lim.acc_up,      &nb.lim.acc_up_w, &nb.lim.acc_brake,
                    &nb.lim.acc_brake_w, &nb.lim.v_max,    &nb.lim.w_max};
    for (int i = 0; i < 6; i++)
      if (a->has & (1u << (8 + i)))
        *l[i] = a->lim[i];
  }
  if (a->has & PA_SSL_SPEC_WHEELS) {
    for (int i = 0; i < 4; i++)
      nb.wheel_angle[i] = a->wheel[i];
    double u[4] = {1, 0, 0, 0}, t[3];
    if (pa_ssl_wheels_to_twist(&nb, u, t) != 0)
      return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                             "wheel angles leave the twist undetermined");
  }
  *b = nb;
  /* The step's own limits must not bite below the norm limits. */
  ri->max_v = ri->max_vy =
      b->lim.v_max > 0 ? (float)fmin(b->lim.v_max, 100) : 100.0f;
  ri->max_w = b->lim.w_max > 0 ? (float)fmin(b->lim.w_max, 100) : 100.0f;
  s->world_dirty = true;
  r->status = PA_OK;
  reply_ball(x, r, (int32_t)c->robot);
  return PA_OK;
}

void pa_sim_ssl_resume(pa_sim_state *s, const pa_tick *t) {
  /* The running world's field, which set_scenario may have changed since
   * the flags' world was read (its map comes back as the running map). */
  char div = t->ssl == 'A' || t->ssl == 'B' ? (char)t->ssl : 0;
  char err[128];
  if ((s->ssl ? s->ssl->f.division : 0) != div &&
      pa_sim_ssl_set_field(s, div, err, sizeof err) != 0)
    pa_warn("resume: %s", err);
  pa_sim_ssl *x = s->ssl;
  if (!x)
    return;
  pa_ssl_ball *b = &x->ball;
  if (t->ball_holder == -2) {
    b->present = false;
    return;
  }
  if (!finite_all(t->ball, 6, 1e6) ||
      !(t->ball_v_switch >= 0 && t->ball_v_switch < 1e6)) {
    pa_warn("resume: the ball's record is malformed; the ball starts afresh");
    return;
  }
  b->x = t->ball[0];
  b->y = t->ball[1];
  b->z = t->ball[2];
  b->vx = t->ball[3];
  b->vy = t->ball[4];
  b->vz = t->ball[5];
  b->v_switch = t->ball_v_switch;
  b->holder = t->ball_holder >= 0 && (uint32_t)t->ball_holder < s->robot_count
                  ? t->ball_holder
                  : -1;
  b->present = true;
}

bool pa_sim_ssl_laser_ball(const pa_sim_state *s, double *x, double *y,
                           double *r) {
  const pa_sim_ssl *c = s->ssl;
  if (!c || !c->ball.present)
    return false;
  const pa_ssl_ball *b = &c->ball;
  double dz = PA_SSL_LASER_HEIGHT - (b->z + PA_SSL_BALL_RADIUS);
  double r2 = PA_SSL_BALL_RADIUS * PA_SSL_BALL_RADIUS - dz * dz;
  if (!(r2 > 0))
    return false;
  *x = b->x;
  *y = b->y;
  *r = sqrt(r2);
  return true;
}
