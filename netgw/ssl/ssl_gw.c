/* ssl_gw.c - the RoboCup SSL simulation protocol over UDP (protobuf, the
 * messages of netgw/ssl/proto): SimulatorCommand on the control port,
 * RobotControl on each team's port (replies to the sender), and vision
 * (SSL_WrapperPacket, millimetres) at --ssl_vision_hz. Open only when the
 * world has an SSL field (also when it gains one at run time). What
 * pa-netgw can check (ids, unsupported fields, numbers) is answered as a
 * SimulatorError at once; a datagram's commands go to pa-sim with a reply
 * and its response waits for them, so a refusal of pa-sim comes back as a
 * SimulatorError too (busy after --request_timeout_ms). docs/ssl.md. */
#define _GNU_SOURCE
#include "ssl_int.h"

#include "pa_props.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "google/protobuf/any.pb-c.h"
#include "ssl_simulation_control.pb-c.h"
#include "playarea_ssl.pb-c.h"
#include "ssl_simulation_robot_control.pb-c.h"

#define SSL_ERRORS_MAX 32
#define SSL_DGRAM_MAX 65536
#define SSL_BURST 64     /* datagrams read per wake-up */
#define SSL_PEND_MAX 32  /* datagrams waiting for pa-sim's replies */
#define SSL_PEND_CMDS 64 /* commands of one datagram named in its errors */
/* The reply queue's client id of these ports' commands: slot 0xffffffff is
 * no TCP client's (Foxglove's use generations 0 and 1 of it). */
#define SSL_CLIENT_ID 0x00000002ffffffffull

typedef struct ssl_errs {
  Sslsim__SimulatorError e[SSL_ERRORS_MAX];
  Sslsim__SimulatorError *p[SSL_ERRORS_MAX];
  char code[SSL_ERRORS_MAX][64];
  char msg[SSL_ERRORS_MAX][192];
  size_t n;
} ssl_errs;

/* A datagram whose response waits for pa-sim's replies to its commands
 * (request ids req0.. req0 + sent - 1). */
typedef struct ssl_pend {
  pa_ssl_gw *x;
  bool used;
  int s; /* S_CONTROL, S_BLUE, S_YELLOW */
  struct sockaddr_in from;
  uint64_t req0;
  uint32_t sent, waiting;
  ssl_errs e;
  char what[SSL_PEND_CMDS][48]; /* each command, for its error */
  Sslsim__RobotFeedback *fb;
  Sslsim__RobotFeedback **fbp;
  size_t nf;
  struct event *timeout;
} ssl_pend;

static void err_add(ssl_errs *e, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void err_add(ssl_errs *e, const char *code, const char *fmt, ...) {
  if (e->n >= SSL_ERRORS_MAX)
    return;
  size_t i = e->n++;
  Sslsim__SimulatorError init = SSLSIM__SIMULATOR_ERROR__INIT;
  e->e[i] = init;
  snprintf(e->code[i], sizeof e->code[i], "%s", code);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg[i], sizeof e->msg[i], fmt, ap);
  va_end(ap);
  e->e[i].code = e->code[i];
  e->e[i].message = e->msg[i];
  e->p[i] = &e->e[i];
}

bool pa_ssl_out_reserve(pa_ssl_gw *x, size_t n) {
  if (n <= x->out_cap)
    return true;
  uint8_t *b = realloc(x->out, n);
  if (!b)
    return false;
  x->out = b;
  x->out_cap = n;
  return true;
}

/* "b3" / "y12": SSL robots are named by team and id (pa-sim's worlds). */
static void robot_name(char *out, size_t n, int team, uint32_t id) {
  snprintf(out, n, "%c%u", team == 0 ? 'b' : 'y', id);
}

static const char *team_name(int team) { return team == 0 ? "blue" : "yellow"; }

/* The command names itself in a refusal of pa-sim as x->what says. */
static bool push(pa_ssl_gw *x, pa_cmd *c, ssl_errs *e) {
  pa_netgw *g = x->g;
  ssl_pend *p = x->cur;
  if (p) {
    c->client_id = SSL_CLIENT_ID; /* pa_ssl_on_reply gets the reply */
  } else {
    c->flags |= PA_CMDF_NO_REPLY;
    c->client_id = 0;
  }
  c->request_id = ++g->next_req;
  if (pa_lim_queue_push(g, PA_LIM_SRC_DATAGRAM, c) == 0) {
    if (p) {
      if (!p->sent)
        p->req0 = c->request_id;
      if (p->sent < SSL_PEND_CMDS)
        snprintf(p->what[p->sent], sizeof p->what[0], "%s", x->what);
      p->sent++;
      p->waiting++;
    }
    return true;
  }
  g->busy++;
  err_add(e, "busy", "the command queue is full: command dropped");
  return false;
}

static bool finite_in(double v, double lo, double hi) {
  return v >= lo && v <= hi;
}

/* ---- control port: SimulatorCommand ------------------------------------ */

static void teleport_ball(pa_ssl_gw *x, const Sslsim__TeleportBall *b,
                          ssl_errs *e) {
  bool bad = false;
  if (b->has_teleport_safely && b->teleport_safely) {
    err_add(e, "unsupported:teleport_ball.teleport_safely",
            "teleport_ball.teleport_safely is not supported: robots are not "
            "moved out of the way (the ball was not moved)");
    bad = true;
  }
  if (b->has_by_force && b->by_force) {
    err_add(e, "unsupported:teleport_ball.by_force",
            "teleport_ball.by_force is not supported: the ball is placed, "
            "not pushed (the ball was not moved)");
    bad = true;
  }
  const pa_tick *t = pa_gw_latest(x->g);
  double cur[3] = {0, 0, 0};
  if (t && t->ball_holder != -2)
    memcpy(cur, t->ball, sizeof cur);
  double v[6] = {b->has_x ? b->x : cur[0], b->has_y ? b->y : cur[1],
                 b->has_z ? b->z : cur[2], b->has_vx ? b->vx : 0,
                 b->has_vy ? b->vy : 0,    b->has_vz ? b->vz : 0};
  for (int i = 0; i < 6; i++)
    if (!finite_in(v[i], -1e3, 1e3)) {
      err_add(e, "invalid:teleport_ball",
              "teleport_ball: numbers must be finite, within 1000");
      bad = true;
      break;
    }
  if (bad)
    return;
  pa_cmd c;
  memset(&c, 0, sizeof c);
  snprintf(x->what, sizeof x->what, "teleport_ball");
  c.op = PA_OP_TELEPORT_BALL;
  c.ball = (pa_cmd_ball){
      v[0], v[1], v[2], v[3], v[4], v[5], b->has_roll && b->roll, 1};
  push(x, &c, e);
}

/* A BotId names a robot when it has an id 0..15 and team BLUE or YELLOW;
 * *team is then 0 (blue) or 1 (yellow). */
static bool bot_id_ok(const GameController__BotId *id, int *team) {
  if (!id || !id->has_id || !id->has_team ||
      (id->team != GAME_CONTROLLER__TEAM__BLUE &&
       id->team != GAME_CONTROLLER__TEAM__YELLOW) ||
      id->id >= 16)
    return false;
  *team = id->team == GAME_CONTROLLER__TEAM__BLUE ? 0 : 1;
  return true;
}

static void teleport_robot(pa_ssl_gw *x, const Sslsim__TeleportRobot *r,
                           ssl_errs *e) {
  const GameController__BotId *id = r->id;
  int team;
  if (!bot_id_ok(id, &team)) {
    err_add(e, "invalid:teleport_robot.id",
            "teleport_robot.id needs an id 0..15 and team BLUE or YELLOW");
    return;
  }
  if (r->has_by_force && r->by_force) {
    err_add(e, "unsupported:teleport_robot.by_force",
            "teleport_robot.by_force is not supported (%s %u not moved)",
            team_name(team), id->id);
    return;
  }
  double v[6] = {r->x, r->y, r->orientation, r->v_x, r->v_y, r->v_angular};
  for (int i = 0; i < 6; i++)
    if (!finite_in(v[i], -1e6, 1e6)) {
      err_add(e, "invalid:teleport_robot",
              "teleport_robot: numbers must be finite");
      return;
    }
  char name[16];
  robot_name(name, sizeof name, team, id->id);
  snprintf(x->what, sizeof x->what, "teleport_robot %s %u", team_name(team),
           id->id);
  pa_robot_info info;
  uint32_t idx;
  int rc = pa_gw_robot(x->g, name, -1, &info, &idx);
  pa_cmd c;
  memset(&c, 0, sizeof c);
  if (r->has_present && !r->present) {
    if (rc != 0)
      return; /* already absent */
    c.op = PA_OP_REMOVE_ROBOT;
    c.robot = idx;
    push(x, &c, e);
    return;
  }
  if (rc != 0) {
    if (!(r->has_present && r->present)) {
      err_add(e, "unknown_robot",
              "%s robot %u is not on the field (present = true adds it)",
              team_name(team), id->id);
      return;
    }
    if (!r->has_x || !r->has_y) {
      err_add(e, "invalid:teleport_robot.present",
              "adding %s robot %u needs x and y", team_name(team), id->id);
      return;
    }
    c.op = PA_OP_SPAWN_ROBOT;
    snprintf(c.name, sizeof c.name, "%s", name);
    c.spawn_robot.x = r->x;
    c.spawn_robot.y = r->y;
    c.spawn_robot.theta = r->has_orientation ? r->orientation : 0;
    c.spawn_robot.radius = 0.09;
    c.spawn_robot.drive = PA_DRIVE_OMNI;
    push(x, &c, e);
    return;
  }
  const pa_tick *t = pa_gw_latest(x->g);
  const pa_robot_state *rs = t ? pa_gw_robot_state(t, idx) : NULL;
  c.op = PA_OP_TELEPORT_MOVING;
  c.robot = idx;
  c.moving.x = r->has_x ? r->x : rs ? rs->x : 0;
  c.moving.y = r->has_y ? r->y : rs ? rs->y : 0;
  c.moving.theta = r->has_orientation ? r->orientation : rs ? rs->theta : 0;
  c.moving.vx = r->has_v_x ? r->v_x : 0;
  c.moving.vy = r->has_v_y ? r->v_y : 0;
  c.moving.w = r->has_v_angular ? r->v_angular : 0;
  push(x, &c, e);
}

/* A BotId's robot slot, or an error by name. */
static bool bot_lookup(pa_ssl_gw *x, const GameController__BotId *id,
                       const char *what, ssl_errs *e, uint32_t *idx,
                       int *team) {
  if (!bot_id_ok(id, team)) {
    err_add(e, "invalid:id", "%s.id needs an id 0..15 and team BLUE or YELLOW",
            what);
    return false;
  }
  char name[16];
  pa_robot_info info;
  robot_name(name, sizeof name, *team, id->id);
  if (pa_gw_robot(x->g, name, -1, &info, idx) != 0) {
    err_add(e, "unknown_robot", "%s: %s robot %u is not on the field", what,
            team_name(*team), id->id);
    return false;
  }
  return true;
}

static const char er_force_spec[] = "sslsim.RobotSpecErForce";

static void robot_specs(pa_ssl_gw *x, const Sslsim__RobotSpecs *sp,
                        ssl_errs *e) {
  uint32_t idx;
  int team;
  if (!bot_lookup(x, sp->id, "robot_specs", e, &idx, &team))
    return;
  snprintf(x->what, sizeof x->what, "robot_specs %s %u", team_name(team),
           sp->id->id);
  pa_cmd c;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SSL_SPECS;
  c.robot = idx;
  pa_cmd_ssl_specs *a = &c.ssl_specs;
  for (size_t k = 0; k < sp->n_custom; k++) {
    const Google__Protobuf__Any *any = sp->custom[k];
    size_t tl = any->type_url ? strlen(any->type_url) : 0;
    size_t nl = sizeof er_force_spec - 1;
    Sslsim__RobotSpecErForce *ef = NULL;
    if (tl >= nl && !strcmp(any->type_url + tl - nl, er_force_spec))
      ef = sslsim__robot_spec_er_force__unpack(NULL, any->value.len,
                                               any->value.data);
    if (!ef) {
      err_add(e, "unsupported:robot_specs.custom",
              "robot_specs.custom '%.80s' is not supported (only %s)",
              any->type_url ? any->type_url : "", er_force_spec);
      return;
    }
    bool bad = ef->has_shoot_radius || ef->has_dribbler_height;
    if (ef->has_dribbler_width) {
      a->has |= PA_SSL_SPEC_DRIBBLER_WIDTH;
      a->dribbler_width = ef->dribbler_width;
    }
    sslsim__robot_spec_er_force__free_unpacked(ef, NULL);
    if (bad) {
      err_add(e, "unsupported:robot_specs.custom.shoot_radius",
              "RobotSpecErForce shoot_radius and dribbler_height are not "
              "supported (the ball touches the flat front)");
      return;
    }
  }
  if (sp->has_mass) {
    a->has |= PA_SSL_SPEC_MASS;
    a->mass = sp->mass;
  }
  if (sp->has_max_linear_kick_speed) {
    a->has |= PA_SSL_SPEC_MAX_KICK;
    a->max_kick = sp->max_linear_kick_speed;
  }
  if (sp->has_max_chip_kick_speed) {
    a->has |= PA_SSL_SPEC_MAX_CHIP;
    a->max_chip = sp->max_chip_kick_speed;
  }
  if (sp->has_center_to_dribbler) {
    a->has |= PA_SSL_SPEC_C2D;
    a->c2d = sp->center_to_dribbler;
  }
  const Sslsim__RobotLimits *l = sp->limits;
  if (l) {
    const protobuf_c_boolean h[6] = {
        l->has_acc_speedup_absolute_max, l->has_acc_speedup_angular_max,
        l->has_acc_brake_absolute_max,   l->has_acc_brake_angular_max,
        l->has_vel_absolute_max,         l->has_vel_angular_max};
    const float v[6] = {l->acc_speedup_absolute_max, l->acc_speedup_angular_max,
                        l->acc_brake_absolute_max,   l->acc_brake_angular_max,
                        l->vel_absolute_max,         l->vel_angular_max};
    a->has |= PA_SSL_SPEC_LIMITS;
    for (int i = 0; i < 6; i++)
      if (h[i]) {
        a->has |= 1u << (8 + i);
        a->lim[i] = v[i];
      }
  }
  if (sp->wheel_angles) {
    a->has |= PA_SSL_SPEC_WHEELS;
    a->wheel[0] = sp->wheel_angles->front_right;
    a->wheel[1] = sp->wheel_angles->back_right;
    a->wheel[2] = sp->wheel_angles->back_left;
    a->wheel[3] = sp->wheel_angles->front_left;
  }
  const float chk[] = {a->mass,   a->max_kick, a->max_chip,      a->c2d,
                       a->lim[0], a->lim[1],   a->lim[2],        a->lim[3],
                       a->lim[4], a->lim[5],   a->dribbler_width};
  for (size_t i = 0; i < sizeof chk / sizeof chk[0]; i++)
    if (!(chk[i] >= 0 && chk[i] <= 1e4f)) {
      err_add(e, "invalid:robot_specs",
              "robot_specs of %s %u: masses, speeds, limits and lengths must "
              "be finite and >= 0 (not applied)",
              team_name(team), sp->id->id);
      return;
    }
  for (int i = 0; i < 4; i++)
    if (!(fabsf(a->wheel[i]) <= 100)) {
      err_add(e, "invalid:robot_specs.wheel_angles",
              "wheel angles must be finite [rad] (not applied)");
      return;
    }
  if ((sp->has_radius && !pa_prop_ok_float(PA_PR_RADIUS, sp->radius)) ||
      (sp->has_height && !pa_prop_ok_float(PA_PR_HEIGHT, sp->height))) {
    char rr[48], hr[48];
    err_add(e, "invalid:robot_specs",
            "robot_specs of %s %u: radius must be %s, height %s (not applied)",
            team_name(team), sp->id->id,
            pa_prop_range(PA_PR_RADIUS, rr, sizeof rr),
            pa_prop_range(PA_PR_HEIGHT, hr, sizeof hr));
    return;
  }
  /* Only now, so that a refused spec leaves the shape as it was too. */
  if (sp->has_radius || sp->has_height) {
    pa_cmd p;
    memset(&p, 0, sizeof p);
    p.op = PA_OP_SET_PROPERTY;
    p.robot = idx;
    if (sp->has_radius) {
      p.prop.prop = PA_PROP_RADIUS;
      p.prop.v[0] = sp->radius;
      if (!push(x, &p, e))
        return;
    }
    if (sp->has_height) {
      p.prop.prop = PA_PROP_HEIGHT;
      p.prop.v[0] = sp->height;
      if (!push(x, &p, e))
        return;
    }
  }
  if (a->has)
    push(x, &c, e);
}

static const char realism_type[] = "playarea.RealismConfig";

/* Each custom entry must be a playarea.RealismConfig; all or nothing. */
static void realism(pa_ssl_gw *x, const Sslsim__RealismConfig *rc,
                    ssl_errs *e) {
  double pos = x->noise_pos, th = x->noise_theta, drop = x->dropout;
  uint64_t seed = 0;
  bool seeded = false;
  for (size_t k = 0; k < rc->n_custom; k++) {
    const Google__Protobuf__Any *any = rc->custom[k];
    size_t tl = any->type_url ? strlen(any->type_url) : 0;
    size_t nl = sizeof realism_type - 1;
    Playarea__RealismConfig *m = NULL;
    if (tl >= nl && !strcmp(any->type_url + tl - nl, realism_type))
      m = playarea__realism_config__unpack(NULL, any->value.len,
                                           any->value.data);
    if (!m) {
      err_add(e, "unsupported:config.realism_config.custom",
              "realism_config.custom '%.80s' is not supported (only %s; "
              "nothing applied)",
              any->type_url ? any->type_url : "", realism_type);
      return;
    }
    if (m->has_position_noise)
      pos = m->position_noise;
    if (m->has_orientation_noise)
      th = m->orientation_noise;
    if (m->has_dropout)
      drop = m->dropout;
    if (m->has_seed) {
      seed = m->seed;
      seeded = true;
    }
    playarea__realism_config__free_unpacked(m, NULL);
  }
  if (!finite_in(pos, 0, 10) || !finite_in(th, 0, 10) ||
      !finite_in(drop, 0, 1)) {
    err_add(e, "invalid:config.realism_config",
            "position_noise 0..10 m, orientation_noise 0..10 rad, dropout "
            "0..1 (nothing applied)");
    return;
  }
  x->noise_pos = pos;
  x->noise_theta = th;
  x->dropout = drop;
  if (seeded)
    x->rng = seed;
}

static void config(pa_ssl_gw *x, const Sslsim__SimulatorConfig *c,
                   ssl_errs *e) {
  if (c->geometry)
    err_add(e, "unsupported:config.geometry",
            "config.geometry is not supported: the field is the world's "
            "(--world ssl-a or ssl-b)");
  for (size_t i = 0; i < c->n_robot_specs; i++)
    robot_specs(x, c->robot_specs[i], e);
  if (c->realism_config)
    realism(x, c->realism_config, e);
  if (c->has_vision_port) {
    if (c->vision_port == 0 || c->vision_port > 65535)
      err_add(e, "invalid:config.vision_port",
              "config.vision_port must be 1..65535, got %u", c->vision_port);
    else
      x->vdest.sin_port = htons((uint16_t)c->vision_port);
  }
}

static void simulator_command(pa_ssl_gw *x, const Sslsim__SimulatorCommand *m,
                              ssl_errs *e) {
  const Sslsim__SimulatorControl *ctl = m->control;
  if (ctl) {
    if (ctl->teleport_ball)
      teleport_ball(x, ctl->teleport_ball, e);
    for (size_t i = 0; i < ctl->n_teleport_robot; i++)
      teleport_robot(x, ctl->teleport_robot[i], e);
    if (ctl->has_simulation_speed) {
      if (!finite_in(ctl->simulation_speed, 0, PA_NETGW_SPEED_MAX)) {
        err_add(e, "invalid:simulation_speed",
                "simulation_speed must be 0..%g (0 = as fast as possible)",
                PA_NETGW_SPEED_MAX);
      } else {
        pa_cmd c;
        memset(&c, 0, sizeof c);
        c.op = PA_OP_SPEED;
        c.speed.factor = ctl->simulation_speed;
        snprintf(x->what, sizeof x->what, "simulation_speed");
        push(x, &c, e);
      }
    }
  }
  if (m->config)
    config(x, m->config, e);
}

/* ---- team ports: RobotControl ------------------------------------------ */

static void robot_command(pa_ssl_gw *x, int team, const Sslsim__RobotCommand *r,
                          ssl_errs *e, Sslsim__RobotFeedback *fb) {
  char name[16];
  pa_robot_info info;
  uint32_t idx;
  if (r->id >= 16) {
    err_add(e, "unknown_robot", "%s robot id %u: ids are 0..15",
            team_name(team), r->id);
    return;
  }
  robot_name(name, sizeof name, team, r->id);
  if (pa_gw_robot(x->g, name, -1, &info, &idx) != 0) {
    err_add(e, "unknown_robot", "%s robot %u is not on the field",
            team_name(team), r->id);
    return;
  }
  snprintf(x->what, sizeof x->what, "%s robot %u", team_name(team), r->id);
  pa_cmd c;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SSL_ROBOT;
  c.robot = idx;
  pa_cmd_ssl_robot *a = &c.ssl_robot;
  const Sslsim__RobotMoveCommand *mv = r->move_command;
  if (mv) {
    switch (mv->command_case) {
    case SSLSIM__ROBOT_MOVE_COMMAND__COMMAND_WHEEL_VELOCITY:
      a->move = PA_SSL_MOVE_WHEELS;
      a->m[0] = mv->wheel_velocity->front_right;
      a->m[1] = mv->wheel_velocity->back_right;
      a->m[2] = mv->wheel_velocity->back_left;
      a->m[3] = mv->wheel_velocity->front_left;
      break;
    case SSLSIM__ROBOT_MOVE_COMMAND__COMMAND_LOCAL_VELOCITY:
      a->move = PA_SSL_MOVE_LOCAL;
      a->m[0] = mv->local_velocity->forward;
      a->m[1] = mv->local_velocity->left;
      a->m[2] = mv->local_velocity->angular;
      break;
    case SSLSIM__ROBOT_MOVE_COMMAND__COMMAND_GLOBAL_VELOCITY:
      a->move = PA_SSL_MOVE_GLOBAL;
      a->m[0] = mv->global_velocity->x;
      a->m[1] = mv->global_velocity->y;
      a->m[2] = mv->global_velocity->angular;
      break;
    default:
      break;
    }
  }
  for (int i = 0; i < 4; i++)
    if (!finite_in(a->m[i], -PA_CMD_SPEED_LIMIT, PA_CMD_SPEED_LIMIT)) {
      err_add(e, "invalid:move_command",
              "%s robot %u: velocities must be finite, within 1e6",
              team_name(team), r->id);
      return;
    }
  if (r->has_kick_speed) {
    double ang = r->has_kick_angle ? r->kick_angle : 0;
    if (!finite_in(r->kick_speed, 0, 100) || !finite_in(ang, 0, 80)) {
      err_add(e, "invalid:kick",
              "%s robot %u: kick_speed must be 0..100 m/s, kick_angle "
              "0..80 deg",
              team_name(team), r->id);
      return;
    }
    a->has |= PA_SSL_HAS_KICK;
    a->kick_speed = r->kick_speed;
    a->kick_angle = ang;
  } else if (r->has_kick_angle) {
    err_add(e, "invalid:kick_angle",
            "%s robot %u: kick_angle without kick_speed", team_name(team),
            r->id);
  }
  if (r->has_dribbler_speed) {
    if (!finite_in(r->dribbler_speed, 0, 1e5)) {
      err_add(e, "invalid:dribbler_speed",
              "%s robot %u: dribbler_speed must be 0..1e5 rpm", team_name(team),
              r->id);
      return;
    }
    a->has |= PA_SSL_HAS_DRIBBLER;
    a->dribbler_rpm = r->dribbler_speed;
  }
  if (!push(x, &c, e))
    return;
  const pa_tick *t = pa_gw_latest(x->g);
  const pa_robot_state *rs = t ? pa_gw_robot_state(t, idx) : NULL;
  fb->id = r->id;
  fb->has_dribbler_ball_contact = 1;
  fb->dribbler_ball_contact = rs && (rs->flags & PA_RS_BALL_CONTACT);
}

static void reply(pa_ssl_gw *x, int fd, const struct sockaddr_in *to, size_t n,
                  const ProtobufCMessage *m) {
  if (!pa_ssl_out_reserve(x, n))
    return;
  size_t len = protobuf_c_message_pack(m, x->out);
  ssize_t w = sendto(fd, x->out, len, MSG_DONTWAIT, (const struct sockaddr *)to,
                     sizeof *to);
  (void)w; /* a reply the kernel refuses is lost, as UDP may */
}

/* The response of a datagram: its errors (and a team port's feedback). */
static void respond(pa_ssl_gw *x, int s, const struct sockaddr_in *to,
                    ssl_errs *e, Sslsim__RobotFeedback **fbp, size_t nf) {
  if (s == S_CONTROL) {
    Sslsim__SimulatorResponse r = SSLSIM__SIMULATOR_RESPONSE__INIT;
    r.n_errors = e->n;
    r.errors = e->p;
    reply(x, x->fd[s], to, sslsim__simulator_response__get_packed_size(&r),
          &r.base);
  } else {
    Sslsim__RobotControlResponse r = SSLSIM__ROBOT_CONTROL_RESPONSE__INIT;
    r.n_errors = e->n;
    r.errors = e->p;
    r.n_feedback = nf;
    r.feedback = fbp;
    reply(x, x->fd[s], to, sslsim__robot_control_response__get_packed_size(&r),
          &r.base);
  }
  x->errors += e->n;
}

static void pend_release(ssl_pend *p) {
  evtimer_del(p->timeout);
  free(p->fb);
  free(p->fbp);
  p->fb = NULL;
  p->fbp = NULL;
  p->nf = 0;
  p->used = false;
}

static void pend_finish(ssl_pend *p) {
  respond(p->x, p->s, &p->from, &p->e, p->fbp, p->nf);
  pend_release(p);
}

static void on_pend_timeout(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  ssl_pend *p = arg;
  if (!p->used)
    return;
  p->x->g->busy++;
  err_add(&p->e, "busy",
          "the simulator did not answer within %u ms (%u of %u commands "
          "unanswered; they may still be applied)",
          p->x->g->def.request_timeout_ms, p->waiting, p->sent);
  pend_finish(p);
}

bool pa_ssl_on_reply(pa_netgw *g, const pa_reply *r) {
  if (r->client_id != SSL_CLIENT_ID)
    return false;
  pa_ssl_gw *x = g->ssl;
  if (!x)
    return true; /* the ports closed meanwhile */
  for (int i = 0; i < SSL_PEND_MAX; i++) {
    ssl_pend *p = &x->pend[i];
    if (!p->used || r->request_id < p->req0 ||
        r->request_id - p->req0 >= p->sent)
      continue;
    if (r->status != PA_OK) {
      uint64_t k = r->request_id - p->req0;
      pa_status st = r->status > 0 && r->status < PA_STATUS_COUNT
                         ? (pa_status)r->status
                         : PA_ERR_INVALID_MESSAGE;
      /* r->msg comes from another process: bounded, NUL or not */
      int n = (int)strnlen(r->msg, sizeof r->msg);
      err_add(&p->e, pa_status_code(st), "%s: %.*s",
              k < SSL_PEND_CMDS ? p->what[k] : "command", n ? n : 24,
              n ? r->msg : "refused by the simulator");
    }
    if (--p->waiting == 0)
      pend_finish(p);
    return true;
  }
  return true; /* late: its datagram was answered busy */
}

static ssl_pend *pend_take(pa_ssl_gw *x) {
  for (int i = 0; i < SSL_PEND_MAX; i++)
    if (!x->pend[i].used) {
      ssl_pend *p = &x->pend[i];
      p->used = true;
      p->sent = p->waiting = 0;
      p->e.n = 0;
      p->nf = 0;
      return p;
    }
  return NULL; /* all waiting: this one's commands go without replies */
}

static void on_datagram(pa_ssl_gw *x, int s, const uint8_t *buf, size_t n,
                        const struct sockaddr_in *from) {
  ssl_errs local;
  ssl_pend *p = pend_take(x);
  ssl_errs *e = p ? &p->e : &local;
  e->n = 0;
  x->cur = p;
  Sslsim__RobotFeedback *fb = NULL;
  Sslsim__RobotFeedback **fbp = NULL;
  size_t nf = 0;
  if (s == S_CONTROL) {
    Sslsim__SimulatorCommand *m =
        sslsim__simulator_command__unpack(NULL, n, buf);
    if (!m)
      err_add(e, "invalid:message", "not a SimulatorCommand (%zu bytes)", n);
    else
      simulator_command(x, m, e);
    if (m)
      sslsim__simulator_command__free_unpacked(m, NULL);
  } else {
    Sslsim__RobotControl *m = sslsim__robot_control__unpack(NULL, n, buf);
    if (!m) {
      err_add(e, "invalid:message", "not a RobotControl (%zu bytes)", n);
    } else if (m->n_robot_commands) {
      fb = calloc(m->n_robot_commands, sizeof *fb);
      fbp = calloc(m->n_robot_commands, sizeof *fbp);
      if (!fb || !fbp)
        err_add(e, "busy", "out of memory");
      uint32_t seen = 0; /* ids 0..15 with a command in this datagram */
      for (size_t i = 0; fb && fbp && i < m->n_robot_commands; i++) {
        uint32_t id = m->robot_commands[i]->id;
        if (id < 16 && (seen & 1u << id)) {
          /* one datagram of repeats would fill pa-sim's queue and a
           * response too big to send */
          err_add(e, "invalid:robot_commands",
                  "%s robot %u has more than one command in this datagram "
                  "(the first is applied)",
                  team_name(s == S_BLUE ? 0 : 1), id);
          continue;
        }
        if (id < 16)
          seen |= 1u << id;
        Sslsim__RobotFeedback init = SSLSIM__ROBOT_FEEDBACK__INIT;
        fb[nf] = init;
        fb[nf].id = UINT32_MAX;
        robot_command(x, s == S_BLUE ? 0 : 1, m->robot_commands[i], e, &fb[nf]);
        if (fb[nf].id != UINT32_MAX) {
          fbp[nf] = &fb[nf];
          nf++;
        }
      }
    }
    if (m)
      sslsim__robot_control__free_unpacked(m, NULL);
  }
  x->cur = NULL;
  if (p && p->waiting) { /* answered when pa-sim has replied to them all */
    p->s = s;
    p->from = *from;
    p->fb = fb;
    p->fbp = fbp;
    p->nf = nf;
    unsigned ms = x->g->def.request_timeout_ms;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(p->timeout, &tv);
    return;
  }
  respond(x, s, from, e, fbp, nf);
  free(fb);
  free(fbp);
  if (p)
    p->used = false;
}

static void on_readable(evutil_socket_t fd, short what, void *arg) {
  (void)what;
  pa_ssl_gw *x = arg;
  int s = fd == x->fd[S_CONTROL] ? S_CONTROL
          : fd == x->fd[S_BLUE]  ? S_BLUE
                                 : S_YELLOW;
  for (int k = 0; k < SSL_BURST; k++) {
    struct sockaddr_in from;
    socklen_t fl = sizeof from;
    ssize_t n = recvfrom(fd, x->rx, SSL_DGRAM_MAX, MSG_DONTWAIT,
                         (struct sockaddr *)&from, &fl);
    if (n < 0)
      break; /* EAGAIN, or an error the next datagram may not have */
    if (fl != sizeof from || from.sin_family != AF_INET)
      continue;
    on_datagram(x, s, x->rx, (size_t)n, &from);
  }
}

/* ---- setup ------------------------------------------------------------- */

static int open_udp(const char *addr, unsigned port, int *fd, unsigned *bound,
                    const char *flag, char *err, size_t err_sz) {
  struct sockaddr_in sin;
  memset(&sin, 0, sizeof sin);
  sin.sin_family = AF_INET;
  sin.sin_port = htons((uint16_t)port);
  inet_pton(AF_INET, addr, &sin.sin_addr); /* checked by the TCP listener */
  *fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (*fd < 0 || bind(*fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
    snprintf(err, err_sz, "cannot listen on UDP %s:%u: %s (--%s)", addr, port,
             strerror(errno), flag);
    return -1;
  }
  socklen_t l = sizeof sin;
  getsockname(*fd, (struct sockaddr *)&sin, &l);
  *bound = ntohs(sin.sin_port);
  return 0;
}

int pa_ssl_gw_start(pa_netgw *g, char *err, size_t err_sz) {
  pa_tick hdr;
  const pa_tick *t = pa_gw_latest_header(g, &hdr) ? &hdr : NULL;
  if (!t || !t->ssl)
    return 0; /* no SSL field: no sockets */
  pa_ssl_gw *x = calloc(1, sizeof *x);
  if (!x) {
    snprintf(err, err_sz, "out of memory");
    return -1;
  }
  g->ssl = x;
  x->g = g;
  x->vfd = -1;
  for (int s = 0; s < S_COUNT; s++)
    x->fd[s] = -1;
  uint32_t max = g->ctl->def.max_robots;
  x->rx = malloc(SSL_DGRAM_MAX);
  x->team = calloc(max, 1);
  x->sid = calloc(max, 1);
  x->rob = calloc(max, sizeof *x->rob);
  x->blue = calloc(max, sizeof *x->blue);
  x->yellow = calloc(max, sizeof *x->yellow);
  x->pend = calloc(SSL_PEND_MAX, sizeof *x->pend);
  if (!x->rx || !x->team || !x->sid || !x->rob || !x->blue || !x->yellow ||
      !x->pend || pa_ssl_field_get((char)t->ssl, &x->f) != 0) {
    snprintf(err, err_sz, "out of memory");
    return -1;
  }
  for (int i = 0; i < SSL_PEND_MAX; i++) {
    x->pend[i].x = x;
    x->pend[i].timeout = evtimer_new(g->base, on_pend_timeout, &x->pend[i]);
    if (!x->pend[i].timeout) {
      snprintf(err, err_sz, "event setup failed");
      return -1;
    }
  }
  pa_ssl_vision_geometry(x);
  const pa_netgw_def *d = &g->def;
  const char *addr = d->bind ? d->bind : "127.0.0.1";
  const unsigned want[S_COUNT] = {d->ssl_control_port, d->ssl_blue_port,
                                  d->ssl_yellow_port};
  static const char *const flags[S_COUNT] = {
      "ssl_control_port", "ssl_blue_port", "ssl_yellow_port"};
  for (int s = 0; s < S_COUNT; s++) {
    if (open_udp(addr, want[s], &x->fd[s], &x->port[s], flags[s], err,
                 err_sz) != 0)
      return -1;
    x->ev[s] =
        event_new(g->base, x->fd[s], EV_READ | EV_PERSIST, on_readable, x);
    if (!x->ev[s] || event_add(x->ev[s], NULL) != 0) {
      snprintf(err, err_sz, "event setup failed");
      return -1;
    }
  }
  x->vfd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (x->vfd < 0) {
    snprintf(err, err_sz, "vision socket: %s", strerror(errno));
    return -1;
  }
  x->vdest.sin_family = AF_INET;
  x->vdest.sin_port = htons((uint16_t)d->ssl_vision_port);
  if (d->ssl_vision_multicast) {
    unsigned char ttl = 1, loop = 1;
    setsockopt(x->vfd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl);
    setsockopt(x->vfd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop);
    inet_pton(AF_INET, "224.5.23.2", &x->vdest.sin_addr);
  } else {
    inet_pton(AF_INET, "127.0.0.1", &x->vdest.sin_addr);
  }
  x->vision_ev = event_new(g->base, -1, EV_PERSIST, pa_ssl_vision_on_timer, x);
  double period = 1.0 / d->ssl_vision_hz;
  struct timeval tv = {(time_t)period,
                       (suseconds_t)((period - floor(period)) * 1e6)};
  if (!x->vision_ev || event_add(x->vision_ev, &tv) != 0) {
    snprintf(err, err_sz, "event setup failed");
    return -1;
  }
  pa_info("ssl division %c: control udp %s:%u, blue %u, yellow %u; vision "
          "%s:%u at %g Hz",
          x->f.division, addr, x->port[S_CONTROL], x->port[S_BLUE],
          x->port[S_YELLOW],
          d->ssl_vision_multicast ? "224.5.23.2" : "127.0.0.1",
          d->ssl_vision_port, d->ssl_vision_hz);
  return 0;
}

void pa_ssl_gw_poll(pa_netgw *g) {
  pa_tick hdr; /* periodic: the header only (not every robot's state) */
  const pa_tick *t = pa_gw_latest_header(g, &hdr) ? &hdr : NULL;
  if (!t || !(t->ssl == 'A' || t->ssl == 'B'))
    return; /* the ports stay open without a field: pa-sim refuses by name */
  pa_ssl_gw *x = g->ssl;
  if (x) {
    if (t->ssl != (uint32_t)x->f.division &&
        pa_ssl_field_get((char)t->ssl, &x->f) == 0) {
      pa_ssl_vision_geometry(x);
      x->have_map = false;
      pa_info("ssl: the field is now division %c", x->f.division);
    }
    return;
  }
  if (g->ssl_refused == t->ssl)
    return; /* said once */
  char err[256];
  if (pa_ssl_gw_start(g, err, sizeof err) != 0) {
    pa_ssl_gw_stop(g);
    g->ssl_refused = t->ssl;
    pa_warn("ssl: the world has an SSL field but %s: no SSL ports", err);
  }
}

void pa_ssl_gw_stop(pa_netgw *g) {
  pa_ssl_gw *x = g->ssl;
  if (!x)
    return;
  for (int s = 0; s < S_COUNT; s++) {
    if (x->ev[s])
      event_free(x->ev[s]);
    if (x->fd[s] >= 0)
      close(x->fd[s]);
  }
  if (x->vision_ev)
    event_free(x->vision_ev);
  if (x->vfd >= 0)
    close(x->vfd);
  for (int i = 0; x->pend && i < SSL_PEND_MAX; i++) {
    ssl_pend *p = &x->pend[i];
    if (p->timeout) {
      if (p->used)
        pend_release(p); /* closing: its sender gets no response */
      event_free(p->timeout);
    }
  }
  free(x->pend);
  free(x->rx);
  free(x->out);
  free(x->team);
  free(x->sid);
  free(x->rob);
  free(x->blue);
  free(x->yellow);
  free(x);
  g->ssl = NULL;
}

int pa_ssl_gw_ports(const pa_netgw *g, unsigned ports[4]) {
  const pa_ssl_gw *x = g->ssl;
  if (!x)
    return -1;
  ports[0] = x->port[S_CONTROL];
  ports[1] = x->port[S_BLUE];
  ports[2] = x->port[S_YELLOW];
  ports[3] = ntohs(x->vdest.sin_port);
  return 0;
}
