/* json_robot.c - JSON actions on robots: state, driving, poses, streams,
 * spawning and removing. */
#define _GNU_SOURCE
#include "json_int.h"
#include "pa_props.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int get_channel(jctx *x, int *ch) {
  const char *s = NULL;
  int r = pa_json_str(x, "channel", 16, &s);
  if (r < 0)
    return -1;
  if (r == 0) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.channel is required (odom, scan "
                 "or camera)");
    return -1;
  }
  *ch = pa_netgw_channel_parse(s);
  if (*ch < 0) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "unknown channel '%s' (odom, scan or camera)", s);
    return -1;
  }
  return 0;
}

/* ---- state payloads ------------------------------------------------------*/

json_t *pa_json_drive_name(const pa_robot_info *i) {
  return json_string(i->drive == PA_DRIVE_OMNI ? "omni" : "diff");
}

/* The latest tick (*tick) and the robot's row in it, or NULL (error set). */
static const pa_robot_state *robot_state_now(jctx *x, uint32_t robot,
                                             const pa_tick **tick) {
  const pa_tick *t = pa_gw_latest(x->c->g);
  if (!t) {
    pa_json_fail(x, PA_ERR_BUSY, "the simulator has not written a tick yet");
    return NULL;
  }
  const pa_robot_state *rs = pa_gw_robot_state(t, robot);
  if (!rs)
    pa_json_fail(x, PA_ERR_UNKNOWN_ROBOT, "robot %u is not in the state",
                 (unsigned)robot);
  *tick = t;
  return rs;
}

json_t *pa_json_scan(pa_client *c, const pa_scan *s, bool with_time) {
  json_t *o = json_object();
  json_object_set_new(o, "seq", json_integer(s->seq));
  json_object_set_new(o, "tick", json_integer((json_int_t)s->tick));
  if (with_time)
    json_object_set_new(o, "sim_time", json_real(s->sim_time));
  json_object_set_new(o, "angle_min", json_real(s->angle_min));
  json_object_set_new(o, "angle_increment", json_real(s->angle_increment));
  json_object_set_new(o, "range_min", json_real(s->range_min));
  json_object_set_new(o, "range_max", json_real(s->range_max));
  json_t *a = pa_json_ranges(c, (const float *)(s + 1), s->count);
  json_object_set_new(o, "ranges", a ? a : json_null());
  return o;
}

static json_t *sensors_json(pa_client *c, uint32_t robot) {
  json_t *o = json_object();
  const pa_scan *s = pa_gw_scan(c->g, robot);
  json_object_set_new(o, "scan", s ? pa_json_scan(c, s, true) : json_null());
  return o;
}

static json_t *state_json(jctx *x, uint32_t robot, const pa_robot_info *info,
                          double *sim_time) {
  const pa_tick *t;
  const pa_robot_state *rs = robot_state_now(x, robot, &t);
  if (!rs)
    return NULL;
  *sim_time = t->sim_time;
  json_t *d = json_object();
  json_object_set_new(d, "robot", json_integer(robot));
  json_object_set_new(d, "name", json_string(info->name));
  json_object_set_new(d, "drive", pa_json_drive_name(info));
  json_object_set_new(d, "pose", pa_json_vec3(rs->x, rs->y, rs->theta));
  json_object_set_new(d, "odom",
                      pa_json_vec3(rs->odom_x, rs->odom_y, rs->odom_theta));
  /* OceanSim's velocity: world frame [vx, vy, vz], what the body does
   * (sideways too when it slides); the body-frame twist beside it. */
  double c = cos(rs->theta), s = sin(rs->theta);
  json_object_set_new(
      d, "velocity",
      pa_json_vec3(c * rs->v - s * rs->vy, s * rs->v + c * rs->vy, 0.0));
  json_object_set_new(d, "twist", pa_json_vec3(rs->v, rs->vy, rs->w));
  json_object_set_new(d, "head", json_real(rs->head));
  /* OceanSim's state fields that a planar robot has */
  json_t *pos = json_array();
  json_array_append_new(pos, json_real(rs->x));
  json_array_append_new(pos, json_real(rs->y));
  json_object_set_new(d, "position", pos);
  json_object_set_new(d, "depth", json_real(0.0)); /* the plane is z = 0 */
  json_object_set_new(d, "speed", json_real(hypot(rs->v, rs->vy)));
  json_object_set_new(d, "heading_deg", json_real(rs->theta * 180.0 / M_PI));
  json_object_set_new(d, "yaw_rate", json_real(rs->w));
  json_object_set_new(d, "bumped", json_boolean(rs->flags & PA_RS_BUMPED));
  json_object_set_new(d, "tick", json_integer((json_int_t)t->tick));
  json_object_set_new(d, "sim_time", json_real(t->sim_time));
  json_object_set_new(d, "paused", json_boolean(t->flags & PA_TICK_PAUSED));
  json_object_set_new(d, "sensors", sensors_json(x->c, robot));
  if (t->ssl) {
    json_object_set_new(d, "ball", pa_json_ssl_ball(t));
    json_object_set_new(d, "ball_contact",
                        json_boolean(rs->flags & PA_RS_BALL_CONTACT));
  }
  if (pa_json_agents_count(x->c->g)) { /* the moving obstacles around it */
    json_t *ag = pa_json_agents_list(x);
    if (!ag) {
      json_decref(d);
      return NULL;
    }
    json_object_set_new(d, "agents", ag);
  }
  return d;
}

/* How a drive action names its velocities. */
enum { DRV_V, DRV_LOCAL, DRV_GLOBAL, DRV_WHEELS };

/* Velocity command fields for step / set_velocity*: fills the drive (with
 * its frame); checks the robot's drive can do it. */
static int drive_fields(jctx *x, int mode, const pa_robot_info *info,
                        pa_cmd_drive *dr) {
  double v = 0, vy = 0, w = 0, head = 0;
  int rv;
  bool omni = info->drive == PA_DRIVE_OMNI;
  dr->frame = PA_FRAME_ROBOT;
  switch (mode) {
  case DRV_LOCAL:
    if (pa_json_num(x, "forward", &v) < 0 || pa_json_num(x, "left", &vy) < 0 ||
        pa_json_num(x, "angular", &w) < 0 || pa_json_num(x, "head", &head) < 0)
      return -1;
    break;
  case DRV_GLOBAL:
    if (pa_json_num(x, "x", &v) < 0 || pa_json_num(x, "y", &vy) < 0 ||
        pa_json_num(x, "angular", &w) < 0 || pa_json_num(x, "head", &head) < 0)
      return -1;
    if (!omni) {
      pa_json_fail(
          x, PA_ERR_UNSUPPORTED_CONTROL_SCHEME,
          "robot '%s' has a differential drive: world-frame velocities "
          "need an omnidirectional robot",
          info->name);
      return -1;
    }
    dr->frame = PA_FRAME_WORLD;
    break;
  case DRV_WHEELS: {
    /* Wheel rim speeds [m/s] of a differential robot: v is their mean, w
     * their difference over the wheel separation. */
    double l = 0, r = 0;
    int hl = pa_json_num(x, "left", &l), hr = pa_json_num(x, "right", &r);
    if (hl < 0 || hr < 0 || pa_json_num(x, "head", &head) < 0)
      return -1;
    if (hl == 0 || hr == 0) {
      pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                   "data.left and data.right (wheel speeds, m/s) are required");
      return -1;
    }
    if (omni) {
      pa_json_fail(
          x, PA_ERR_UNSUPPORTED_CONTROL_SCHEME,
          "robot '%s' is omnidirectional: it has no left and right wheels",
          info->name);
      return -1;
    }
    if (!(info->wheel_base > 0)) {
      pa_json_fail(x, PA_ERR_UNSUPPORTED_CONTROL_SCHEME,
                   "robot '%s' has no wheel_base", info->name);
      return -1;
    }
    v = 0.5 * l + 0.5 * r;
    w = (r - l) / info->wheel_base;
    break;
  }
  default:
    if ((rv = pa_json_num(x, "v", &v)) < 0 ||
        (rv == 0 && pa_json_num(x, "vx", &v) < 0) ||
        pa_json_num(x, "vy", &vy) < 0 || pa_json_num(x, "w", &w) < 0 ||
        pa_json_num(x, "head", &head) < 0)
      return -1;
    break;
  }
  if (!omni && vy != 0) {
    pa_json_fail(x, PA_ERR_UNSUPPORTED_CONTROL_SCHEME,
                 "robot '%s' has a differential drive: it cannot move sideways",
                 info->name);
    return -1;
  }
  dr->v = v;
  dr->vy = vy;
  dr->w = w;
  dr->head_rate = head;
  /* pa-sim's own check, and some drive commands take no reply: say it here
   * (wheel speeds over a small wheel base can overflow). */
  const char *bad = pa_cmd_drive_error(dr);
  if (bad) {
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "%s (got v %g, vy %g, w %g, head %g)", bad, v, vy, w, head);
    return -1;
  }
  return 0;
}

json_t *pa_json_act_get_pose(jctx *x) {
  pa_json_obj o;
  if (pa_json_named_object(x, &o) < 0)
    return NULL;
  if (o.kind == P_OBSTACLE) {
    json_t *d = json_object();
    json_object_set_new(d, "name", json_string(o.oi.name));
    json_object_set_new(d, "kind", json_string("obstacle"));
    json_object_set_new(d, "pose", pa_json_vec3(o.oi.x, o.oi.y, o.oi.theta));
    x->sim_time = pa_json_now(x->c->g);
    json_object_set_new(d, "sim_time", json_real(x->sim_time));
    return d;
  }
  const pa_tick *t;
  const pa_robot_state *rs = robot_state_now(x, o.idx, &t);
  if (!rs)
    return NULL;
  x->sim_time = t->sim_time;
  json_t *d = json_object();
  json_object_set_new(d, "name", json_string(o.ri.name));
  json_object_set_new(d, "kind", json_string("robot"));
  json_object_set_new(d, "robot", json_integer(o.idx));
  json_object_set_new(d, "pose", pa_json_vec3(rs->x, rs->y, rs->theta));
  json_object_set_new(d, "sim_time", json_real(t->sim_time));
  return d;
}

json_t *pa_json_act_set_pose(jctx *x) {
  pa_json_obj o;
  if (pa_json_named_object(x, &o) < 0)
    return NULL;
  double p[6];
  size_t n = 0;
  int r = pa_json_vec(x, "pose", 3, 6, p, &n);
  if (r < 0)
    return NULL;
  if (r == 0)
    return pa_json_fail(
        x, PA_ERR_INVALID_ACTION_SHAPE,
        "data.pose is required: [x, y, theta] or [x, y, z, roll, "
        "pitch, yaw]");
  /* 3-D [x, y, z, roll, pitch, yaw]: the world is planar, so only 0 fits */
  static const char *const off_plane[] = {"z", "roll", "pitch"};
  for (size_t i = 2; n == 6 && i < 5; i++)
    if (p[i] != 0)
      return pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                          "data.pose %s = %g: the world is planar (z, roll "
                          "and pitch must be 0)",
                          off_plane[i - 2], p[i]);
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_TELEPORT;
  cmd.pose.x = p[0];
  cmd.pose.y = p[1];
  cmd.pose.theta = n == 6 ? p[5] : p[2];
  double p3[3] = {cmd.pose.x, cmd.pose.y, cmd.pose.theta};
  int moving = pa_json_moving_pose(x, p3, &cmd); /* with a velocity (SSL) */
  if (moving < 0)
    return NULL;
  if (o.kind == P_OBSTACLE) { /* pa-sim finds it by name, as set_property */
    if (moving)
      return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                          "obstacle '%s' is static: v_x, v_y and v_angular "
                          "apply to robots only",
                          o.oi.name);
    snprintf(cmd.name, sizeof cmd.name, "%s", o.oi.name);
    return pa_json_wait_for_sim(x, &cmd, UINT32_MAX);
  }
  return pa_json_wait_for_sim(x, &cmd, o.idx);
}

static json_t *subscribe(jctx *x, bool sub) {
  int ch;
  if (get_channel(x, &ch) < 0)
    return NULL;
  pa_client *c = x->c;
  if (!sub) {
    if (c->port[ch])
      pa_gw_subscribe(c, ch, c->sub_robot[ch], 0);
    return json_object();
  }
  pa_robot_info info;
  uint32_t idx;
  if (pa_json_robot(x, &info, &idx) < 0)
    return NULL;
  long long port = 0;
  int r = pa_json_int(x, "udp_port", 1, 65535, &port);
  if (r < 0)
    return NULL;
  if (r == 0)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE, "data.udp_port is required");
  pa_gw_subscribe(c, ch, idx, (uint16_t)port);
  json_t *d = json_object();
  json_object_set_new(d, "channel", json_string(pa_netgw_channel_name(ch)));
  json_object_set_new(d, "udp_port", json_integer(port));
  json_object_set_new(d, "robot", json_integer(idx));
  return d;
}

json_t *pa_json_act_subscribe(jctx *x) { return subscribe(x, true); }
json_t *pa_json_act_unsubscribe(jctx *x) { return subscribe(x, false); }

size_t pa_json_cost_list_robots(jctx *x) {
  return (size_t)x->c->g->ctl->def.max_robots * 320 + PA_JSON_SMALL_REPLY;
}

/* A state with its scan: at most 20 bytes per range ("-1000000000.000001,"). */
size_t pa_json_cost_state(jctx *x) {
  return (size_t)x->info.laser_beams * 20 +
         (size_t)pa_json_agents_count(x->c->g) * PA_JSON_AGENT_BYTES +
         PA_JSON_SMALL_REPLY;
}

size_t pa_json_cost_sensors(jctx *x) { /* the scan twice: sensors.scan, scan */
  return (size_t)x->info.laser_beams * 40 + PA_JSON_SMALL_REPLY;
}

json_t *pa_json_act_list_robots(jctx *x) {
  pa_netgw *g = x->c->g;
  json_t *list = json_array();
  uint32_t n = g->ctl->robot_count;
  if (n > g->ctl->def.max_robots)
    n = g->ctl->def.max_robots;
  for (uint32_t i = 0; i < n; i++) {
    pa_robot_info info;
    uint32_t idx;
    if (pa_gw_robot(g, NULL, (long)i, &info, &idx) != 0)
      continue;
    json_t *o = json_object();
    json_object_set_new(o, "robot", json_integer(idx));
    json_object_set_new(o, "name", json_string(info.name));
    json_object_set_new(o, "drive", pa_json_drive_name(&info));
    json_object_set_new(o, "radius", json_real(info.radius));
    json_object_set_new(o, "max_v", json_real(info.max_v));
    json_object_set_new(o, "max_w", json_real(info.max_w));
    json_object_set_new(o, "laser_beams", json_integer(info.laser_beams));
    json_object_set_new(
        o, "camera",
        pa_json_vec3(info.cam_width, info.cam_height, info.cam_fov));
    json_array_append_new(list, o);
  }
  return pa_json_counted("robots", list);
}

json_t *pa_json_act_spawn_robot(jctx *x) {
  const char *name = NULL, *drive = NULL, *dyn = NULL;
  double p[3] = {0, 0, 0}, radius = 0;
  if (pa_json_need_str(x, "name", 32, &name) < 0 ||
      pa_json_need_pose3(x, p) < 0 || pa_json_num(x, "radius", &radius) < 0 ||
      pa_json_str(x, "drive", 8, &drive) < 0 ||
      pa_json_str(x, "dynamics", 16, &dyn) < 0)
    return NULL;
  int dynamics = dyn ? pa_prop_word(PA_PR_DYNAMICS, dyn) : PA_DYN_KINEMATIC;
  if (dynamics < 0)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.dynamics '%s' is not kinematic or dynamic", dyn);
  char rg[64];
  if (radius != 0 && !pa_prop_ok(PA_PR_RADIUS, radius))
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.radius %g is out of range %s (0 = default)",
                        radius, pa_prop_range(PA_PR_RADIUS, rg, sizeof rg));
  uint32_t drv = PA_DRIVE_DIFF;
  if (drive && strcmp(drive, "diff") && strcmp(drive, "omni"))
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.drive '%s' is not diff or omni", drive);
  if (drive && !strcmp(drive, "omni"))
    drv = PA_DRIVE_OMNI;
  pa_robot_info info;
  uint32_t idx;
  if (pa_gw_robot(x->c->g, name, -1, &info, &idx) == 0)
    return pa_json_fail(x, PA_ERR_SPAWN_FAILED, "a robot named '%s' exists",
                        name);
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_SPAWN_ROBOT;
  snprintf(cmd.name, sizeof cmd.name, "%s", name);
  cmd.spawn_robot = (pa_cmd_spawn_robot){.x = p[0],
                                         .y = p[1],
                                         .theta = p[2],
                                         .radius = radius,
                                         .drive = drv,
                                         .dynamics = (uint32_t)dynamics};
  return pa_json_wait_for_sim(x, &cmd, 0);
}

/* ---- state and driving ---------------------------------------------------*/

json_t *pa_json_act_get_state(jctx *x) {
  return state_json(x, x->idx, &x->info, &x->sim_time);
}

/* OceanSim's "state response whose data contains sensors", and the scan
 * beside it as before. */
json_t *pa_json_act_get_sensors(jctx *x) {
  const pa_tick *t = pa_gw_latest(x->c->g);
  json_t *d = json_object(), *sn = sensors_json(x->c, x->idx);
  json_object_set(d, "scan", json_object_get(sn, "scan"));
  json_object_set_new(d, "sensors", sn);
  json_object_set_new(d, "robot", json_integer(x->idx));
  json_object_set_new(d, "tick", json_integer(t ? (json_int_t)t->tick : 0));
  return d;
}

json_t *pa_json_act_step(jctx *x) {
  long long steps = 1;
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  bool drv = true;
  if (pa_json_int(x, "steps", 1, PA_NETGW_STEP_MAX, &steps) < 0 ||
      drive_fields(x, DRV_V, &x->info, &cmd.step.drive) < 0 ||
      pa_json_step_inputs(x, &drv) < 0) /* force / thrusters (json_force.c) */
    return NULL;
  cmd.op = PA_OP_STEP;
  cmd.flags = drv ? PA_CMDF_DRIVE : 0;
  cmd.step.ticks = (uint32_t)steps;
  return pa_json_wait_for_sim(x, &cmd, x->idx);
}

json_t *pa_json_done_step(jctx *x, const pa_reply *r) {
  (void)r;
  pa_client *c = x->c;
  c->g->steps++;
  pa_robot_info info;
  uint32_t idx;
  if (pa_gw_robot(c->g, NULL, (long)c->pend_robot, &info, &idx) != 0)
    return pa_json_fail(x, PA_ERR_UNKNOWN_ROBOT, "robot %u is gone",
                        (unsigned)c->pend_robot);
  return state_json(x, idx, &info, &x->sim_time);
}

static json_t *drive(jctx *x, int mode) {
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  if (drive_fields(x, mode, &x->info, &cmd.drive) < 0)
    return NULL;
  cmd.op = PA_OP_SET_CMD;
  return pa_json_push_nowait(x, &cmd, x->idx);
}

json_t *pa_json_act_set_velocity(jctx *x) { return drive(x, DRV_V); }
json_t *pa_json_act_set_velocity_local(jctx *x) { return drive(x, DRV_LOCAL); }
json_t *pa_json_act_set_velocity_global(jctx *x) {
  return drive(x, DRV_GLOBAL);
}
json_t *pa_json_act_set_wheels(jctx *x) { return drive(x, DRV_WHEELS); }

json_t *pa_json_act_stop(jctx *x) {
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_STOP;
  return pa_json_push_nowait(x, &cmd, x->idx);
}

json_t *pa_json_act_remove_robot(jctx *x) {
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_REMOVE_ROBOT;
  return pa_json_wait_for_sim(x, &cmd, x->idx);
}

json_t *pa_json_done_set_pose(jctx *x, const pa_reply *r) {
  json_t *d = pa_json_tick(r);
  if (x->c->pend_robot == UINT32_MAX) { /* an obstacle */
    json_object_set(d, "name", json_object_get(x->data, "name"));
    json_object_set_new(d, "kind", json_string("obstacle"));
  } else {
    json_object_set_new(d, "robot", json_integer(x->c->pend_robot));
  }
  json_object_set_new(d, "pose",
                      pa_json_vec3(r->pose.x, r->pose.y, r->pose.theta));
  json_object_set_new(d, "sim_time", json_real(r->sim_time));
  return d;
}

json_t *pa_json_done_spawn_robot(jctx *x, const pa_reply *r) {
  (void)x;
  json_t *d = pa_json_tick(r);
  json_object_set_new(d, "robot", json_integer(r->pose.robot));
  return d;
}

json_t *pa_json_done_remove_robot(jctx *x, const pa_reply *r) {
  json_t *d = pa_json_tick(r);
  json_object_set_new(d, "robot", json_integer(x->c->pend_robot));
  pa_json_nav_clear_robot(x->c->g, x->c->pend_robot);
  return d;
}
