/* player_dev.c - the Player devices a playarea stack offers (docs/player.md
 * has every message): simulation:0 (poses and properties of robots and
 * obstacles by name, PAUSE, RESET, SAVE), position2d:N, laser:N and
 * ranger:N for robot N, map:0 (the occupancy grid). pa-sim is reached only
 * through pa_core_ask; poses, scans and the map through the core's views. */
#define _GNU_SOURCE
#include "player_int.h"

#include "pa_props.h"
#include "pa_util.h"

#include <event2/buffer.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static bool robot_of(pa_player *p, uint32_t index, pa_robot_info *ri) {
  uint32_t idx;
  return pa_gw_robot(p->g, NULL, index, ri, &idx) == 0;
}

bool pl_dev_exists(pa_player *p, uint32_t interf, uint32_t index) {
  pa_robot_info ri;
  const pa_map_block *mb;
  const int8_t *cells;
  switch (interf) {
  case PL_I_SIMULATION:
    return index == 0;
  case PL_I_MAP:
    return index == 0 && pa_gw_map(p->g, &mb, &cells) == 0;
  case PL_I_POSITION2D:
  case PL_I_LASER:
  case PL_I_RANGER:
  case PL_I_CAMERA:
    return robot_of(p, index, &ri);
  default:
    return false;
  }
}

static void wr_addr(pl_wr *w, uint32_t interf, uint32_t index) {
  pl_wr_u32(w, 0);
  pl_wr_u32(w, 0);
  pl_wr_u32(w, interf);
  pl_wr_u32(w, index);
}

void pl_dev_list(pa_player *p) {
  static const uint32_t per_robot[] = {PL_I_POSITION2D, PL_I_LASER, PL_I_RANGER,
                                       PL_I_CAMERA};
  enum { K = sizeof per_robot / sizeof per_robot[0] };
  uint32_t nr = p->g->ctl->def.max_robots, n = 0;
  pa_robot_info ri;
  pl_wr *w = &p->out;
  pl_wr_u32(w, 0); /* devices_count, then the XDR array's own length: */
  pl_wr_u32(w, 0); /* filled in once the robots are counted */
  size_t at = w->n;
  wr_addr(w, PL_I_SIMULATION, 0);
  wr_addr(w, PL_I_MAP, 0);
  for (uint32_t i = 0; i < nr; i++)
    if (robot_of(p, i, &ri))
      for (int k = 0; k < K; k++, n++)
        wr_addr(w, per_robot[k], i);
  if (w->bad)
    return;
  n += 2;
  for (int k = 0; k < 2; k++) /* big-endian, as pl_wr_u32 writes */
    for (int b = 0; b < 4; b++)
      w->p[at - 8 + 4 * k + b] = (uint8_t)(n >> (24 - 8 * b));
}

/* ---- data ------------------------------------------------------------ */

/* Odometry as Player clients set it (SET_ODOM, RESET_ODOM). */
static void odom_of(const pa_player *p, uint32_t robot,
                    const pa_robot_state *rs, double o[3]) {
  const pl_odom *od = &p->odom[robot];
  if (!od->set) {
    o[0] = rs->odom_x, o[1] = rs->odom_y, o[2] = rs->odom_theta;
    return;
  }
  double dx = rs->odom_x - od->at[0], dy = rs->odom_y - od->at[1];
  double a = od->pose[2] - od->at[2];
  o[0] = od->pose[0] + cos(a) * dx - sin(a) * dy;
  o[1] = od->pose[1] + sin(a) * dx + cos(a) * dy;
  o[2] = atan2(sin(rs->odom_theta + a), cos(rs->odom_theta + a));
}

static bool pos_data(pl_conn *c, pl_sub *s, const pa_tick *t) {
  const pa_robot_state *rs = t ? pa_gw_robot_state(t, s->index) : NULL;
  if (!rs || (s->sent && s->last == t->tick))
    return false;
  double o[3];
  odom_of(c->p, s->index, rs, o);
  pl_wr *w = &c->p->out;
  for (int i = 0; i < 3; i++)
    pl_wr_f64(w, o[i]);
  pl_wr_f64(w, rs->v);
  pl_wr_f64(w, rs->vy);
  pl_wr_f64(w, rs->w);
  pl_wr_u32(w, (rs->flags & PA_RS_BUMPED) ? 1 : 0); /* stall */
  pl_send(c, PL_I_POSITION2D, s->index, PL_DATA, 1, t->sim_time);
  s->sent = true;
  s->last = t->tick;
  return true;
}

/* A range as Player allows it: finite, not negative (libplayerc asserts). */
static double range_ok(float r, float max) {
  return isfinite(r) ? (r < 0 ? 0 : r) : max;
}

static bool scan_data(pl_conn *c, pl_sub *s) {
  const pa_scan *sc = pa_gw_scan(c->p->g, s->index);
  if (!sc || (s->sent && s->last == sc->seq))
    return false;
  const float *r = (const float *)(sc + 1);
  pl_wr *w = &c->p->out;
  uint32_t n = sc->count;
  if (s->interf == PL_I_LASER) {
    pl_wr_f32(w, sc->angle_min);
    pl_wr_f32(w, sc->angle_min + sc->angle_increment * (float)(n ? n - 1 : 0));
    pl_wr_f32(w, sc->angle_increment);
    pl_wr_f32(w, sc->range_max);
    pl_wr_u32(w, n);
    pl_wr_u32(w, n);
    for (uint32_t i = 0; i < n; i++)
      pl_wr_f32(w, (float)range_ok(r[i], sc->range_max));
    pl_wr_u32(w, 0); /* no intensities */
    pl_wr_u32(w, 0);
    pl_wr_u32(w, sc->seq); /* id */
  } else {
    pl_wr_u32(w, n);
    pl_wr_u32(w, n);
    for (uint32_t i = 0; i < n; i++)
      pl_wr_f64(w, range_ok(r[i], sc->range_max));
  }
  pl_send(c, s->interf, s->index, PL_DATA, 1, sc->sim_time);
  s->sent = true;
  s->last = sc->seq;
  return true;
}

/* ---- camera:N: raw RGB while subscribed -------------------------------- */

void pl_dev_sub(pa_player *p, const pl_sub *s, int delta) {
  if (s->interf != PL_I_CAMERA)
    return;
  if (delta > 0 && !p->cam_subs++) /* from the newest image on */
    p->cam_cur = pa_ring_cursor_now(p->g->st->camera);
  else if (delta < 0 && p->cam_subs)
    p->cam_subs--;
  pa_gw_cam_demand(p->g, s->index, delta); /* pa-render draws it meanwhile */
}

void pl_dev_cam_take(pa_player *p) {
  uint32_t len, nr = p->g->ctl->def.max_robots;
  while (pa_gw_ring_next(p->g->st->camera, &p->cam_cur, p->cam_buf, p->cam_cap,
                         &len)) {
    const pa_frame *f = (const pa_frame *)p->cam_buf;
    if (len < sizeof *f || f->robot >= nr ||
        f->size != (uint32_t)f->width * f->height * 3 ||
        sizeof *f + (uint64_t)f->size > len)
      continue;
    if (!p->cam[f->robot] && !(p->cam[f->robot] = malloc(p->cam_cap)))
      continue;
    uint8_t *t = p->cam[f->robot]; /* swap: both hold cam_cap bytes */
    p->cam[f->robot] = p->cam_buf;
    p->cam_buf = t;
  }
}

static bool cam_data(pl_conn *c, pl_sub *s) {
  const pa_frame *f = (const pa_frame *)c->p->cam[s->index];
  if (!f || (s->sent && s->last == f->seq))
    return false;
  pl_wr *w = &c->p->out;
  pl_wr_u32(w, f->width);
  pl_wr_u32(w, f->height);
  pl_wr_u32(w, 24); /* bpp */
  pl_wr_u32(w, 5);  /* PLAYER_CAMERA_FORMAT_RGB888 */
  pl_wr_u32(w, 0);  /* fdiv */
  pl_wr_u32(w, 0);  /* PLAYER_CAMERA_COMPRESS_RAW */
  pl_wr_bytes(w, f + 1, f->size);
  pl_send(c, PL_I_CAMERA, s->index, PL_DATA, 1, f->sim_time);
  s->sent = true;
  s->last = f->seq;
  return true;
}

bool pl_dev_data(pl_conn *c, pl_sub *s, const pa_tick *t) {
  if (!c->pull &&
      evbuffer_get_length(bufferevent_get_output(c->bev)) > PL_DATA_SKIP)
    return false; /* a slow PUSH reader gets the newest later */
  bool sent = false;
  if (s->interf == PL_I_POSITION2D)
    sent = pos_data(c, s, t);
  else if (s->interf == PL_I_LASER || s->interf == PL_I_RANGER)
    sent = scan_data(c, s);
  else if (s->interf == PL_I_CAMERA)
    sent = cam_data(c, s);
  c->p->data_sent += sent;
  return sent;
}

/* ---- pa-sim's answers ------------------------------------------------ */

/* A request answered by pa-sim: an empty ACK, or a NACK with its error. */
static void on_done(pa_netgw *g, void *arg, uint64_t tag, const pa_reply *r,
                    pa_status st, const char *msg) {
  (void)arg;
  (void)r;
  pl_conn *c = pl_conn_of(g->player, tag);
  if (!c)
    return;
  if (st == PA_OK)
    pl_ack(c, &c->pend);
  else
    pl_nack(c, &c->pend, "%s", msg);
  pl_resume(c);
}

/* A command's outcome: commands get no reply, so a failure is logged. */
static void on_cmd_done(pa_netgw *g, void *arg, uint64_t tag, const pa_reply *r,
                        pa_status st, const char *msg) {
  (void)g;
  (void)arg;
  (void)r;
  if (st != PA_OK)
    pa_info("player: command %llu: %s", (unsigned long long)tag, msg);
}

static void command(pl_conn *c, pa_cmd *cmd, const char *what) {
  char err[160];
  if (pa_core_ask(c->p->g, PA_LIM_SRC_CLIENT, cmd, 1, PL_ASK_MS, on_cmd_done,
                  NULL, cmd->op, err, sizeof err) != 0)
    pa_info("player: client %u: %s: %s", c->slot, what, err);
}

/* ---- simulation:0 ---------------------------------------------------- */

/* A named object: a robot (its index) or an obstacle (by name). */
typedef struct pl_obj {
  bool robot;
  uint32_t idx;
  pa_robot_info ri;
  pa_obstacle_info oi;
} pl_obj;

static bool find_obj(pl_conn *c, const pl_msg *m, pl_obj *o) {
  memset(o, 0, sizeof *o);
  if (pa_gw_robot(c->p->g, m->name, -1, &o->ri, &o->idx) == 0) {
    o->robot = true;
    return true;
  }
  if (pa_gw_obstacle(c->p->g, m->name, &o->oi, &o->idx) == 0)
    return true;
  pl_nack(c, m, "no robot, obstacle or agent named '%s'", m->name);
  return false;
}

static bool obj_pose(pl_conn *c, const pl_obj *o, double pose[3], double *now) {
  const pa_tick *t = pa_gw_latest(c->p->g);
  *now = t ? t->sim_time : 0;
  if (!o->robot) {
    pose[0] = o->oi.x, pose[1] = o->oi.y, pose[2] = o->oi.theta;
    return true;
  }
  const pa_robot_state *rs = t ? pa_gw_robot_state(t, o->idx) : NULL;
  if (!rs)
    return false;
  pose[0] = rs->x, pose[1] = rs->y, pose[2] = rs->theta;
  return true;
}

static void sim_get_pose(pl_conn *c, const pl_msg *m, bool three_d) {
  pl_obj o;
  double pose[3], now;
  if (!find_obj(c, m, &o))
    return;
  if (!obj_pose(c, &o, pose, &now)) {
    pl_nack(c, m, "the simulator has not written '%s' yet", m->name);
    return;
  }
  pl_wr *w = &c->p->out;
  pl_wr_bytes(w, m->name, (uint32_t)strlen(m->name) + 1);
  pl_wr_f64(w, pose[0]);
  pl_wr_f64(w, pose[1]);
  if (three_d) { /* z, roll, pitch: the plane's */
    for (int i = 0; i < 3; i++)
      pl_wr_f64(w, 0);
  }
  pl_wr_f64(w, pose[2]);
  if (three_d)
    pl_wr_f64(w, now); /* simtime */
  pl_ack(c, m);
}

static void sim_set_pose(pl_conn *c, const pl_msg *m, bool three_d) {
  pl_obj o;
  double yaw = three_d ? m->d[5] : m->d[2];
  static const char *const off_plane[] = {"z", "roll", "pitch"};
  for (int i = 2; three_d && i < 5; i++)
    if (m->d[i] != 0) {
      pl_nack(c, m,
              "pose %s = %g: the world is planar (z, roll and pitch "
              "must be 0)",
              off_plane[i - 2], m->d[i]);
      return;
    }
  for (int i = 0; i < 2; i++)
    if (!isfinite(m->d[i]) || !isfinite(yaw)) {
      pl_nack(c, m, "pose (%g, %g, %g) is not a number", m->d[0], m->d[1], yaw);
      return;
    }
  if (!find_obj(c, m, &o))
    return;
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_TELEPORT;
  cmd.pose.x = m->d[0];
  cmd.pose.y = m->d[1];
  cmd.pose.theta = yaw;
  cmd.robot = o.robot ? o.idx : UINT32_MAX;
  if (!o.robot)
    snprintf(cmd.name, sizeof cmd.name, "%s", o.oi.name);
  pl_ask(c, &cmd, on_done, m);
}

/* A property's row for the object (-1: none), "color" being "colour". */
static int prop_row(const pl_obj *o, const char *name) {
  return pa_prop_find(name, o->robot ? PA_PK_ROBOT : PA_PK_OBSTACLE);
}

static void sim_get_prop(pl_conn *c, const pl_msg *m) {
  pl_obj o;
  if (!find_obj(c, m, &o))
    return;
  uint8_t val[32];
  uint32_t n = 0;
  if (!strcmp(m->prop, "simtime")) {
    double now = pl_now(c->p);
    memcpy(val, &now, sizeof now);
    n = sizeof now;
  } else {
    int row = prop_row(&o, m->prop);
    if (row < 0) {
      pl_nack(c, m, "%s '%s' has no property '%s'",
              o.robot ? "robot" : "obstacle", m->name, m->prop);
      return;
    }
    const void *rec = o.robot ? (const void *)&o.ri : (const void *)&o.oi;
    int k = pa_prop_ncomp((pa_prop_row)row);
    for (int i = 0; i < k; i++) {
      double v = pa_prop_get((pa_prop_row)row, rec, i);
      if (pa_prop((pa_prop_row)row)->store == PA_ST_RGBA) {
        float f = (float)(v / 255.0); /* Stage's colour: RGBA in 0..1 */
        memcpy(val + n, &f, sizeof f);
        n += sizeof f;
      } else {
        memcpy(val + n, &v, sizeof v);
        n += sizeof v;
      }
    }
  }
  pl_wr *w = &c->p->out;
  pl_wr_bytes(w, m->name, (uint32_t)strlen(m->name) + 1);
  pl_wr_bytes(w, m->prop, (uint32_t)strlen(m->prop) + 1);
  pl_wr_u32(w, m->u[0]);
  pl_wr_bytes(w, val, n);
  pl_ack(c, m);
}

static void sim_set_prop(pl_conn *c, const pl_msg *m) {
  pl_obj o;
  if (!find_obj(c, m, &o))
    return;
  int row = prop_row(&o, m->prop);
  if (row < 0 || pa_prop((pa_prop_row)row)->wire == PA_PROP_NONE) {
    pl_nack(c, m, "%s '%s': property '%s' %s", o.robot ? "robot" : "obstacle",
            m->name, m->prop, row < 0 ? "does not exist" : "is read-only");
    return;
  }
  const pa_prop_def *d = pa_prop((pa_prop_row)row);
  int k = pa_prop_ncomp((pa_prop_row)row);
  bool rgba = d->store == PA_ST_RGBA;
  uint32_t want = (uint32_t)k * (rgba ? 4 : 8);
  if (m->value_len != want) {
    pl_nack(c, m, "property '%s' takes %u bytes (%d %s), not %u", m->prop, want,
            k, rgba ? "floats RGBA in 0..1" : "doubles", m->value_len);
    return;
  }
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_SET_PROPERTY;
  cmd.prop.prop = d->wire;
  for (int i = 0; i < k; i++) {
    if (rgba) {
      float f;
      memcpy(&f, m->value + 4 * i, sizeof f);
      cmd.prop.v[i] = isfinite(f) ? nearbyint((double)f * 255.0) : NAN;
    } else {
      memcpy(&cmd.prop.v[i], m->value + 8 * i, sizeof(double));
    }
    if (!pa_prop_ok((pa_prop_row)row, cmd.prop.v[i])) {
      pl_nack(c, m, "property '%s'[%d] = %g is out of its range", m->prop, i,
              cmd.prop.v[i]);
      return;
    }
  }
  cmd.robot = o.robot ? o.idx : UINT32_MAX;
  if (!o.robot)
    snprintf(cmd.name, sizeof cmd.name, "%s", o.oi.name);
  pl_ask(c, &cmd, on_done, m);
}

static void sim_command(pl_conn *c, const pl_msg *m) {
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  if (m->h.subtype == 1) { /* PAUSE: pause if running, resume if paused */
    pa_tick t;
    bool paused =
        pa_gw_latest_header(c->p->g, &t) && (t.flags & PA_TICK_PAUSED);
    cmd.op = paused ? PA_OP_RESUME : PA_OP_PAUSE;
    command(c, &cmd, paused ? "PAUSE (resume)" : "PAUSE");
  } else if (m->h.subtype == 2) {
    cmd.op = PA_OP_RESET;
    command(c, &cmd, "RESET");
  } else {
    cmd.op = PA_OP_SAVE_SNAPSHOT_JSON; /* the world to a file, as `save` */
    cmd.flags = PA_CMDF_OVERWRITE;
    snprintf(cmd.path, sizeof cmd.path, "%s", PL_SAVE_PATH);
    command(c, &cmd, "SAVE");
  }
}

static void sim_message(pl_conn *c, const pl_msg *m) {
  if (m->h.type == PL_CMD) {
    sim_command(c, m);
    return;
  }
  switch (m->h.subtype) {
  case 1:
  case 3:
    sim_get_pose(c, m, m->h.subtype == 3);
    return;
  case 2:
  case 4:
    sim_set_pose(c, m, m->h.subtype == 4);
    return;
  case 5:
    sim_get_prop(c, m);
    return;
  default:
    sim_set_prop(c, m);
  }
}

/* ---- position2d:N ---------------------------------------------------- */

static void pos_velocity(pl_conn *c, const pl_msg *m) {
  uint32_t robot = m->h.index;
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.robot = robot;
  for (int i = 0; i < 3; i++)
    if (!isfinite(m->d[i]) || fabs(m->d[i]) > PA_CMD_SPEED_LIMIT) {
      pa_info("player: client %u: position2d:%u velocity %g: not a speed",
              c->slot, robot, m->d[i]);
      return;
    }
  if (m->u[0] == 0 || c->p->motor_off[robot]) { /* motors off: it stops */
    cmd.op = PA_OP_STOP;
  } else {
    cmd.op = PA_OP_SET_CMD;
    cmd.drive.v = m->d[0];
    cmd.drive.vy = m->d[1];
    cmd.drive.w = m->d[2];
  }
  command(c, &cmd, "position2d velocity");
}

static void pos_set_odom(pl_conn *c, const pl_msg *m, const double pose[3]) {
  for (int i = 0; i < 3; i++)
    if (!isfinite(pose[i])) {
      pl_nack(c, m, "odometry pose[%d] = %g is not a number", i, pose[i]);
      return;
    }
  const pa_tick *t = pa_gw_latest(c->p->g);
  const pa_robot_state *rs = t ? pa_gw_robot_state(t, m->h.index) : NULL;
  if (!rs) {
    pl_nack(c, m, "robot %u has no state yet", m->h.index);
    return;
  }
  pl_odom *od = &c->p->odom[m->h.index];
  od->set = true;
  memcpy(od->pose, pose, sizeof od->pose);
  od->at[0] = rs->odom_x, od->at[1] = rs->odom_y, od->at[2] = rs->odom_theta;
  pl_ack(c, m);
}

static void pos_geom(pl_conn *c, const pl_msg *m, const pa_robot_info *ri) {
  pl_wr *w = &c->p->out;
  for (int i = 0; i < 6; i++) /* pose3d: the body's centre */
    pl_wr_f64(w, 0);
  pl_wr_f64(w, 2.0 * ri->radius); /* bbox3d: width, length, height */
  pl_wr_f64(w, 2.0 * ri->radius);
  pl_wr_f64(w, ri->height);
  pl_ack(c, m);
}

static void pos_message(pl_conn *c, const pl_msg *m, const pa_robot_info *ri) {
  static const double zero[3] = {0, 0, 0};
  if (m->h.type == PL_CMD) {
    if (m->h.subtype == 1)
      pos_velocity(c, m);
    else
      pl_nack(c, m, "position2d %s command: robot %u drives by velocity only",
              m->h.subtype == 2   ? "position"
              : m->h.subtype == 3 ? "car-like"
                                  : "velocity-heading",
              m->h.index);
    return;
  }
  switch (m->h.subtype) {
  case 1:
    pos_geom(c, m, ri);
    return;
  case 2: /* MOTOR_POWER */
    c->p->motor_off[m->h.index] = m->u[0] == 0;
    pl_ack(c, m);
    return;
  case 3: /* VELOCITY_MODE: one mode, whatever is asked */
    pl_ack(c, m);
    return;
  case 4:
    if (m->u[0] != 0)
      pl_nack(c, m, "POSITION_MODE %u: robot %u drives by velocity only",
              m->u[0], m->h.index);
    else
      pl_ack(c, m);
    return;
  case 5:
    pos_set_odom(c, m, m->d);
    return;
  case 6:
    pos_set_odom(c, m, zero);
    return;
  default:
    pl_nack(c, m,
            "position2d request %u (PID and speed profiles) has no "
            "meaning for a simulated drive",
            m->h.subtype);
  }
}

/* ---- laser:N and ranger:N -------------------------------------------- */

/* The scan configuration: from the newest scan, else the robot's. */
static void scan_config(pa_player *p, uint32_t robot, const pa_robot_info *ri,
                        double cfg[7]) {
  const pa_scan *sc = pa_gw_scan(p->g, robot);
  uint32_t n = sc ? sc->count : ri->laser_beams;
  double inc = sc ? sc->angle_increment : 2 * M_PI / (n ? n : 1);
  cfg[0] = sc ? sc->angle_min : -M_PI;
  cfg[1] = cfg[0] + inc * (n ? n - 1 : 0);
  cfg[2] = inc;
  cfg[3] = ri->laser_range_min; /* as set now, before the next scan */
  cfg[4] = ri->laser_range_max;
  cfg[5] = 0; /* range resolution: continuous */
  cfg[6] = 0; /* scan frequency: by the sim clock */
}

static void scan_geom(pl_conn *c, const pl_msg *m, const pa_robot_info *ri) {
  pl_wr *w = &c->p->out;
  for (int i = 0; i < 6; i++)
    pl_wr_f64(w, i == 2 ? ri->head_height : 0); /* at the body's centre */
  for (int i = 0; i < 3; i++)
    pl_wr_f64(w, 0);
  if (m->h.interf == PL_I_RANGER) { /* one element, the device itself */
    pl_wr_u32(w, 1);
    pl_wr_u32(w, 1);
    for (int i = 0; i < 6; i++)
      pl_wr_f64(w, i == 2 ? ri->head_height : 0);
    pl_wr_u32(w, 1);
    pl_wr_u32(w, 1);
    for (int i = 0; i < 3; i++)
      pl_wr_f64(w, 0);
  }
  pl_ack(c, m);
}

static void scan_get_config(pl_conn *c, const pl_msg *m,
                            const pa_robot_info *ri) {
  double cfg[7];
  scan_config(c->p, m->h.index, ri, cfg);
  pl_wr *w = &c->p->out;
  if (m->h.interf == PL_I_RANGER) {
    for (int i = 0; i < 7; i++)
      pl_wr_f64(w, cfg[i]);
  } else { /* min, max angle, resolution, max range, range res, ... */
    static const int order[] = {0, 1, 2, 4, 5};
    for (int i = 0; i < 5; i++)
      pl_wr_f32(w, (float)cfg[order[i]]);
    pl_wr_u32(w, 0); /* no intensities */
    pl_wr_f32(w, (float)cfg[6]);
  }
  pl_ack(c, m);
}

/* SET_CONFIG: the maximum range is the robot's laser_range_max property;
 * the angles and resolution are the robot's beams (NACK if they differ). */
static void scan_set_config(pl_conn *c, const pl_msg *m,
                            const pa_robot_info *ri) {
  double cfg[7], want_max = m->h.interf == PL_I_RANGER ? m->d[4] : m->d[3];
  scan_config(c->p, m->h.index, ri, cfg);
  for (int i = 0; i < 3; i++)
    if (fabs(m->d[i] - cfg[i]) > 1e-4) {
      pl_nack(c, m,
              "%s:%u: the angles and resolution are the robot's "
              "laser_beams (%g rad from %g); only the maximum range "
              "is set here",
              pa_player_interf_name(m->h.interf), m->h.index, cfg[2], cfg[0]);
      return;
    }
  if (!pa_prop_ok(PA_PR_LASER_RANGE_MAX, want_max)) {
    pl_nack(c, m, "maximum range %g is out of its range", want_max);
    return;
  }
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_SET_PROPERTY;
  cmd.robot = m->h.index;
  cmd.prop.prop = PA_PROP_LASER_RANGE_MAX;
  cmd.prop.v[0] = want_max;
  pl_ask(c, &cmd, on_done, m);
}

static void scan_message(pl_conn *c, const pl_msg *m, const pa_robot_info *ri) {
  bool ranger = m->h.interf == PL_I_RANGER;
  uint32_t st = m->h.subtype;
  if (st == 1)
    scan_geom(c, m, ri);
  else if (st == (ranger ? 5u : 3u))
    scan_get_config(c, m, ri);
  else if (st == (ranger ? 4u : 2u))
    scan_set_config(c, m, ri);
  else if (st == (ranger ? 2u : 4u) && m->u[0] != 0)
    pl_ack(c, m); /* power on: it is */
  else
    pl_nack(c, m, "%s request %u: %s", pa_player_interf_name(m->h.interf), st,
            st == (ranger ? 2u : 4u) ? "the laser cannot be switched off"
                                     : "not offered (no intensities, ids or "
                                       "filters)");
}

/* ---- map:0 ----------------------------------------------------------- */

static void map_message(pl_conn *c, const pl_msg *m) {
  const pa_map_block *mb;
  const int8_t *cells;
  if (pa_gw_map(c->p->g, &mb, &cells) != 0) {
    pl_nack(c, m, "no map segment");
    return;
  }
  pl_wr *w = &c->p->out;
  if (m->h.subtype == 1) { /* GET_INFO */
    pl_wr_f32(w, (float)mb->resolution);
    pl_wr_u32(w, mb->width);
    pl_wr_u32(w, mb->height);
    pl_wr_f64(w, mb->origin_x);
    pl_wr_f64(w, mb->origin_y);
    pl_wr_f64(w, mb->origin_yaw);
    pl_ack(c, m);
    return;
  }
  if (m->h.subtype != 2) {
    pl_nack(c, m, "map:0 is a grid: no vector map (GET_VECTOR)");
    return;
  }
  uint32_t col = m->u[0], row = m->u[1];
  if (col >= mb->width || row >= mb->height) {
    pl_nack(c, m, "tile at column %u row %u is off the %ux%u map", col, row,
            mb->width, mb->height);
    return;
  }
  uint32_t tw = m->u[2] < mb->width - col ? m->u[2] : mb->width - col;
  uint32_t th = m->u[3] < mb->height - row ? m->u[3] : mb->height - row;
  int8_t occ = pa_map_block_occupied_min(mb);
  size_t n = (size_t)tw * th;
  uLongf zn = compressBound(n);
  uint8_t *raw = malloc(n ? n : 1), *z = malloc(zn);
  for (uint32_t j = 0; raw && j < th; j++) {
    const int8_t *src = cells + (size_t)(row + j) * mb->width + col;
    for (uint32_t i = 0; i < tw; i++) /* -1 free, 0 unknown, +1 occupied */
      raw[(size_t)j * tw + i] = (uint8_t)(int8_t)(src[i] < 0      ? 0
                                                  : src[i] >= occ ? 1
                                                                  : -1);
  }
  if (!raw || !z || compress2(z, &zn, raw, n, Z_BEST_SPEED) != Z_OK) {
    free(raw);
    free(z);
    pl_nack(c, m, "the tile did not compress (out of memory)");
    return;
  }
  pl_wr_u32(w, col);
  pl_wr_u32(w, row);
  pl_wr_u32(w, tw);
  pl_wr_u32(w, th);
  pl_wr_u32(w, (uint32_t)zn); /* data_count: the zlib stream's bytes */
  pl_wr_u32(w, 1);            /* data_range */
  pl_wr_u32(w, (uint32_t)zn);
  pl_wr_opaque(w, z, (uint32_t)zn);
  free(raw);
  free(z);
  pl_ack(c, m);
}

void pl_dev_message(pl_conn *c, const pl_msg *m) {
  pa_robot_info ri;
  switch (m->h.interf) {
  case PL_I_SIMULATION:
    sim_message(c, m);
    return;
  case PL_I_MAP:
    map_message(c, m);
    return;
  default:
    break;
  }
  if (!robot_of(c->p, m->h.index, &ri)) {
    pl_nack(c, m, "robot %u is gone", m->h.index);
    return;
  }
  if (m->h.interf == PL_I_POSITION2D)
    pos_message(c, m, &ri);
  else if (m->h.interf == PL_I_CAMERA)
    pl_nack(c, m,
            "camera request %u: the head camera has one source and "
            "streams its images as data",
            m->h.subtype);
  else
    scan_message(c, m, &ri);
}
