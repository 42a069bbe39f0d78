/* ssl_gw.c - the RoboCup SSL simulation protocol over UDP (protobuf, the
 * messages of netgw/ssl/proto): SimulatorCommand on the control port,
 * RobotControl on each team's port (replies to the sender), and vision
 * (SSL_WrapperPacket, millimetres) at --ssl_vision_hz. Open only when the
 * world has an SSL field (also when it gains one at run time). What
 * pa-netgw can check (ids, unsupported fields, numbers) is answered as a
 * SimulatorError at once; a datagram's commands go to pa-sim with a reply
 * and its response waits for them, so a refusal of pa-sim comes back as a
 * SimulatorError too (busy after --request_timeout_ms). docs/ssl.md.
 * This file: the messages, checked and turned into pa-sim's commands; the
 * sockets and the waiting are ssl_ports.c's, vision ssl_vision.c's. */
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
#include "ssl_simulation_custom_erforce_robot_spec.pb-c.h"
#include "ssl_simulation_robot_control.pb-c.h"

void pa_ssl_err_add(ssl_errs *e, const char *code, const char *fmt, ...) {
  if (e->n >= SSL_ERRORS_MAX)
    return;
  size_t i = e->n++;
  SimulatorError init = SIMULATOR_ERROR__INIT;
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

const char *pa_ssl_team_name(int team) { return team == 0 ? "blue" : "yellow"; }

/* The command names itself in a refusal of pa-sim as x->what says. */
static bool push(pa_ssl_gw *x, pa_cmd *c, ssl_errs *e) {
  pa_netgw *g = x->g;
  ssl_pend *p = x->cur;
  char err[160];
  /* without a datagram waiting (all SSL_PEND_MAX are): no reply wanted */
  unsigned ms = p ? g->def.request_timeout_ms : 0;
  if (pa_core_ask(g, PA_LIM_SRC_DATAGRAM, c, 1, ms, pa_ssl_done, NULL,
                  p ? pa_ssl_tag(x, p, p->sent) : 0, err, sizeof err) == 0) {
    if (p) {
      if (p->sent < SSL_PEND_CMDS)
        snprintf(p->what[p->sent], sizeof p->what[0], "%s", x->what);
      p->sent++;
      p->waiting++;
    }
    return true;
  }
  g->busy++;
  pa_ssl_err_add(e, "busy", "the command queue is full: command dropped");
  return false;
}

static bool finite_in(double v, double lo, double hi) {
  return v >= lo && v <= hi;
}

/* ---- control port: SimulatorCommand ------------------------------------ */

static void teleport_ball(pa_ssl_gw *x, const TeleportBall *b, ssl_errs *e) {
  bool bad = false;
  /* None of x, y, z, vx, vy, vz: not a teleport (the protocol's way to end
   * a by_force move without placing the ball). */
  bool any =
      b->has_x || b->has_y || b->has_z || b->has_vx || b->has_vy || b->has_vz;
  if (b->has_teleport_safely && b->teleport_safely) {
    pa_ssl_err_add(
        e, "unsupported:teleport_ball.teleport_safely",
        "teleport_ball.teleport_safely is not supported: robots are not "
        "moved out of the way (the ball was not moved)");
    bad = true;
  }
  if (b->has_by_force && b->by_force) {
    pa_ssl_err_add(
        e, "unsupported:teleport_ball.by_force",
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
      pa_ssl_err_add(e, "invalid:teleport_ball",
                     "teleport_ball: numbers must be finite, within 1000");
      bad = true;
      break;
    }
  if (bad || !any)
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
static bool bot_id_ok(const RobotId *id, int *team) {
  if (!id || !id->has_id || !id->has_team ||
      (id->team != TEAM__BLUE && id->team != TEAM__YELLOW) || id->id >= 16)
    return false;
  *team = id->team == TEAM__BLUE ? 0 : 1;
  return true;
}

static void teleport_robot(pa_ssl_gw *x, const TeleportRobot *r, ssl_errs *e) {
  const RobotId *id = r->id;
  int team;
  if (!bot_id_ok(id, &team)) {
    pa_ssl_err_add(
        e, "invalid:teleport_robot.id",
        "teleport_robot.id needs an id 0..15 and team BLUE or YELLOW");
    return;
  }
  if (r->has_by_force && r->by_force) {
    pa_ssl_err_add(e, "unsupported:teleport_robot.by_force",
                   "teleport_robot.by_force is not supported (%s %u not moved)",
                   pa_ssl_team_name(team), id->id);
    return;
  }
  double v[6] = {r->x, r->y, r->orientation, r->v_x, r->v_y, r->v_angular};
  for (int i = 0; i < 6; i++)
    if (!finite_in(v[i], -1e6, 1e6)) {
      pa_ssl_err_add(e, "invalid:teleport_robot",
                     "teleport_robot: numbers must be finite");
      return;
    }
  char name[16];
  robot_name(name, sizeof name, team, id->id);
  snprintf(x->what, sizeof x->what, "teleport_robot %s %u",
           pa_ssl_team_name(team), id->id);
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
      pa_ssl_err_add(e, "unknown_robot",
                     "%s robot %u is not on the field (present = true adds it)",
                     pa_ssl_team_name(team), id->id);
      return;
    }
    if (!r->has_x || !r->has_y) {
      pa_ssl_err_add(e, "invalid:teleport_robot.present",
                     "adding %s robot %u needs x and y", pa_ssl_team_name(team),
                     id->id);
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
static bool bot_lookup(pa_ssl_gw *x, const RobotId *id, const char *what,
                       ssl_errs *e, uint32_t *idx, int *team) {
  if (!bot_id_ok(id, team)) {
    pa_ssl_err_add(e, "invalid:id",
                   "%s.id needs an id 0..15 and team BLUE or YELLOW", what);
    return false;
  }
  char name[16];
  pa_robot_info info;
  robot_name(name, sizeof name, *team, id->id);
  if (pa_gw_robot(x->g, name, -1, &info, idx) != 0) {
    pa_ssl_err_add(e, "unknown_robot", "%s: %s robot %u is not on the field",
                   what, pa_ssl_team_name(*team), id->id);
    return false;
  }
  return true;
}

/* Whether an Any's type URL names message `name`: the part after its last
 * '/' is the name alone (the published files have no package, so
 * Any.Pack gives "type.googleapis.com/RobotSpecErForce") or with package
 * `pkg` (ER-Force's own copies: "sslsim."). */
bool pa_ssl_any_is(const char *url, const char *name, const char *pkg) {
  if (!url)
    return false;
  const char *slash = strrchr(url, '/');
  const char *t = slash ? slash + 1 : url;
  size_t pl = pkg ? strlen(pkg) : 0;
  if (!strcmp(t, name))
    return true;
  return pl && !strncmp(t, pkg, pl) && t[pl] == '.' &&
         !strcmp(t + pl + 1, name);
}

/* The custom specs: only RobotSpecErForce, and of it the dribbler width
 * alone; false with the error in e. */
static bool specs_custom(const RobotSpecs *sp, pa_cmd_ssl_specs *a,
                         ssl_errs *e) {
  for (size_t k = 0; k < sp->n_custom; k++) {
    const Google__Protobuf__Any *any = sp->custom[k];
    RobotSpecErForce *ef = NULL;
    if (pa_ssl_any_is(any->type_url, "RobotSpecErForce", "sslsim"))
      ef = robot_spec_er_force__unpack(NULL, any->value.len, any->value.data);
    if (!ef) {
      pa_ssl_err_add(e, "unsupported:robot_specs.custom",
                     "robot_specs.custom '%.80s' is not supported (only "
                     "RobotSpecErForce)",
                     any->type_url ? any->type_url : "");
      return false;
    }
    bool bad = ef->has_shoot_radius;
    if (ef->has_dribbler_width) {
      a->has |= PA_SSL_SPEC_DRIBBLER_WIDTH;
      a->dribbler_width = ef->dribbler_width;
    }
    robot_spec_er_force__free_unpacked(ef, NULL);
    if (bad) {
      pa_ssl_err_add(e, "unsupported:robot_specs.custom.shoot_radius",
                     "RobotSpecErForce shoot_radius is not supported (the ball "
                     "touches the flat front)");
      return false;
    }
  }
  return true;
}

/* The specs given (mass, kick speeds, dribbler distance, limits, wheel
 * angles) into a, each with its has bit. */
static void specs_fields(const RobotSpecs *sp, pa_cmd_ssl_specs *a) {
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
  const RobotLimits *l = sp->limits;
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
}

static void robot_specs(pa_ssl_gw *x, const RobotSpecs *sp, ssl_errs *e) {
  uint32_t idx;
  int team;
  if (!bot_lookup(x, sp->id, "robot_specs", e, &idx, &team))
    return;
  snprintf(x->what, sizeof x->what, "robot_specs %s %u", pa_ssl_team_name(team),
           sp->id->id);
  pa_cmd c;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SSL_SPECS;
  c.robot = idx;
  pa_cmd_ssl_specs *a = &c.ssl_specs;
  if (!specs_custom(sp, a, e))
    return;
  specs_fields(sp, a);
  const float chk[] = {a->mass,   a->max_kick, a->max_chip,      a->c2d,
                       a->lim[0], a->lim[1],   a->lim[2],        a->lim[3],
                       a->lim[4], a->lim[5],   a->dribbler_width};
  for (size_t i = 0; i < sizeof chk / sizeof chk[0]; i++)
    if (!(chk[i] >= 0 && chk[i] <= 1e4f)) {
      pa_ssl_err_add(
          e, "invalid:robot_specs",
          "robot_specs of %s %u: masses, speeds, limits and lengths must "
          "be finite and >= 0 (not applied)",
          pa_ssl_team_name(team), sp->id->id);
      return;
    }
  for (int i = 0; i < 4; i++)
    if (!(fabsf(a->wheel[i]) <= 100)) {
      pa_ssl_err_add(e, "invalid:robot_specs.wheel_angles",
                     "wheel angles must be finite [rad] (not applied)");
      return;
    }
  if ((sp->has_radius && !pa_prop_ok_float(PA_PR_RADIUS, sp->radius)) ||
      (sp->has_height && !pa_prop_ok_float(PA_PR_HEIGHT, sp->height))) {
    char rr[48], hr[48];
    pa_ssl_err_add(
        e, "invalid:robot_specs",
        "robot_specs of %s %u: radius must be %s, height %s (not applied)",
        pa_ssl_team_name(team), sp->id->id,
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

static void config(pa_ssl_gw *x, const SimulatorConfig *c, ssl_errs *e) {
  if (c->geometry)
    pa_ssl_err_add(e, "unsupported:config.geometry",
                   "config.geometry is not supported: the field is the world's "
                   "(--world ssl-a or ssl-b)");
  for (size_t i = 0; i < c->n_robot_specs; i++)
    robot_specs(x, c->robot_specs[i], e);
  if (c->realism_config)
    pa_ssl_realism(x, c->realism_config, e);
  if (c->has_vision_port) {
    if (c->vision_port == 0 || c->vision_port > 65535)
      pa_ssl_err_add(e, "invalid:config.vision_port",
                     "config.vision_port must be 1..65535, got %u",
                     c->vision_port);
    else {
      x->vdest.sin_port = htons((uint16_t)c->vision_port);
      pa_core_dest_set(x->g, "ssl", "ssl_vision", c->vision_port);
    }
  }
}

void pa_ssl_simulator_command(pa_ssl_gw *x, const SimulatorCommand *m,
                              ssl_errs *e) {
  const SimulatorControl *ctl = m->control;
  if (ctl) {
    if (ctl->teleport_ball)
      teleport_ball(x, ctl->teleport_ball, e);
    for (size_t i = 0; i < ctl->n_teleport_robot; i++)
      teleport_robot(x, ctl->teleport_robot[i], e);
    if (ctl->has_simulation_speed) {
      if (!finite_in(ctl->simulation_speed, 0, PA_NETGW_SPEED_MAX)) {
        pa_ssl_err_add(
            e, "invalid:simulation_speed",
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

void pa_ssl_robot_command(pa_ssl_gw *x, int team, const RobotCommand *r,
                          ssl_errs *e, RobotFeedback *fb) {
  char name[16];
  pa_robot_info info;
  uint32_t idx;
  if (r->id >= 16) {
    pa_ssl_err_add(e, "unknown_robot", "%s robot id %u: ids are 0..15",
                   pa_ssl_team_name(team), r->id);
    return;
  }
  robot_name(name, sizeof name, team, r->id);
  if (pa_gw_robot(x->g, name, -1, &info, &idx) != 0) {
    pa_ssl_err_add(e, "unknown_robot", "%s robot %u is not on the field",
                   pa_ssl_team_name(team), r->id);
    return;
  }
  snprintf(x->what, sizeof x->what, "%s robot %u", pa_ssl_team_name(team),
           r->id);
  pa_cmd c;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SSL_ROBOT;
  c.robot = idx;
  pa_cmd_ssl_robot *a = &c.ssl_robot;
  a->has = PA_SSL_HAS_TIMEOUT;
  const RobotMoveCommand *mv = r->move_command;
  if (mv) {
    switch (mv->command_case) {
    case ROBOT_MOVE_COMMAND__COMMAND_WHEEL_VELOCITY:
      a->move = PA_SSL_MOVE_WHEELS;
      a->m[0] = mv->wheel_velocity->front_right;
      a->m[1] = mv->wheel_velocity->back_right;
      a->m[2] = mv->wheel_velocity->back_left;
      a->m[3] = mv->wheel_velocity->front_left;
      break;
    case ROBOT_MOVE_COMMAND__COMMAND_LOCAL_VELOCITY:
      a->move = PA_SSL_MOVE_LOCAL;
      a->m[0] = mv->local_velocity->forward;
      a->m[1] = mv->local_velocity->left;
      a->m[2] = mv->local_velocity->angular;
      break;
    case ROBOT_MOVE_COMMAND__COMMAND_GLOBAL_VELOCITY:
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
      pa_ssl_err_add(e, "invalid:move_command",
                     "%s robot %u: velocities must be finite, within 1e6",
                     pa_ssl_team_name(team), r->id);
      return;
    }
  if (r->has_kick_speed) {
    double ang = r->has_kick_angle ? r->kick_angle : 0;
    if (!finite_in(r->kick_speed, 0, 100) || !finite_in(ang, 0, 80)) {
      pa_ssl_err_add(e, "invalid:kick",
                     "%s robot %u: kick_speed must be 0..100 m/s, kick_angle "
                     "0..80 deg",
                     pa_ssl_team_name(team), r->id);
      return;
    }
    a->has |= PA_SSL_HAS_KICK;
    a->kick_speed = r->kick_speed;
    a->kick_angle = ang;
  } else if (r->has_kick_angle && !finite_in(r->kick_angle, 0, 80)) {
    /* alone it arms nothing (kick_speed absent is no kick) */
    pa_ssl_err_add(e, "invalid:kick",
                   "%s robot %u: kick_angle must be 0..80 deg",
                   pa_ssl_team_name(team), r->id);
    return;
  }
  if (r->has_dribbler_speed) {
    if (!finite_in(r->dribbler_speed, 0, 1e5)) {
      pa_ssl_err_add(e, "invalid:dribbler_speed",
                     "%s robot %u: dribbler_speed must be 0..1e5 rpm",
                     pa_ssl_team_name(team), r->id);
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

void pa_ssl_feedback_now(pa_ssl_gw *x, int team, RobotFeedback *fb) {
  char name[16];
  pa_robot_info info;
  uint32_t idx;
  robot_name(name, sizeof name, team, fb->id);
  const pa_tick *t = pa_gw_latest(x->g);
  if (!t || pa_gw_robot(x->g, name, -1, &info, &idx) != 0)
    return;
  const pa_robot_state *rs = pa_gw_robot_state(t, idx);
  fb->has_dribbler_ball_contact = 1;
  fb->dribbler_ball_contact = rs && (rs->flags & PA_RS_BALL_CONTACT);
}

/* ---- synchronous ports: the step ---------------------------------------- */

void pa_ssl_sync_step(pa_ssl_gw *x, double sim_step, ssl_errs *e) {
  double hz = x->g->ctl->control_hz > 0 ? x->g->ctl->control_hz : 200;
  if (!finite_in(sim_step, 0, 1000)) {
    pa_ssl_err_add(e, "invalid:sim_step", "sim_step must be 0..1000 s, got %g",
                   sim_step);
    return;
  }
  pa_cmd c;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_PAUSE; /* synchronous: the world moves only when asked */
  snprintf(x->what, sizeof x->what, "sim_step (pause)");
  if (!push(x, &c, e) || sim_step <= 0)
    return;
  long ticks = lround(sim_step * hz);
  memset(&c, 0, sizeof c);
  c.op = PA_OP_STEP;
  c.step.ticks = (uint32_t)(ticks < 1 ? 1 : ticks);
  snprintf(x->what, sizeof x->what, "sim_step %g s (%u ticks)", sim_step,
           c.step.ticks);
  push(x, &c, e);
}
