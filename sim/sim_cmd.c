/* sim_cmd.c - the commands that change the state between ticks: one row per
 * op (pa_sim_ops) with its apply function and how the run loop treats it. */
#include "pa_props.h"
#include "pa_sim.h"
#include "sim_int.h"
#include "sim_ssl_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- commands -------------------------------------------------------------
 */

pa_status pa_sim_int_fail(pa_reply *r, pa_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->msg, sizeof r->msg, fmt, ap);
  va_end(ap);
  r->status = st;
  return st;
}
#define fail pa_sim_int_fail

static bool finite_all(const double *a, int n, double lim) {
  for (int i = 0; i < n; i++)
    if (!isfinite(a[i]) || fabs(a[i]) > lim)
      return false;
  return true;
}

void pa_sim_int_reply_pose(pa_reply *r, const pa_sim_state *s, uint32_t id) {
  const pa_robot_state *rs = &s->rs[id];
  r->pose.x = rs->x;
  r->pose.y = rs->y;
  r->pose.theta = rs->theta;
  r->pose.v = rs->v;
  r->pose.vy = rs->vy;
  r->pose.w = rs->w;
  r->pose.head = rs->head;
  r->pose.robot = id;
}

static bool robot_ok(const pa_sim_state *s, uint32_t id) {
  return id < s->robot_count && s->info[id].active;
}

/* SET_CMD and the drive of a STEP (robot frame): the drive checked as
 * netgw checks it (pa_cmd_drive_error), then against the robot. */
static pa_status set_cmd(pa_sim_state *s, uint32_t robot,
                         const pa_cmd_drive *drive, bool step, pa_reply *r) {
  if (!robot_ok(s, robot))
    return fail(r, PA_ERR_UNKNOWN_ROBOT, "no robot %u", robot);
  pa_cmd_drive d = *drive;
  if (step)
    d.frame = PA_FRAME_ROBOT;
  const char *bad = pa_cmd_drive_error(&d);
  if (bad)
    return fail(r, PA_ERR_INVALID_ACTION_SHAPE, "%s", bad);
  const pa_robot_info *ri = &s->info[robot];
  if (ri->drive == PA_DRIVE_DIFF && (d.vy != 0 || d.frame == PA_FRAME_WORLD))
    return fail(r, PA_ERR_UNSUPPORTED_CONTROL_SCHEME,
                "robot '%s' is differential: no sideways (vy) or world-frame "
                "velocity",
                ri->name);
  pa_robot_state *rs = &s->rs[robot];
  pa_sim_int_dyn_velocity(s, robot); /* a dynamic body: back to velocity */
  rs->cmd_v = d.v;
  rs->cmd_vy = d.vy;
  rs->cmd_w = d.w;
  rs->cmd_head = d.head_rate;
  rs->cmd_frame = d.frame;
  return PA_OK;
}

static uint32_t find_obstacle(const pa_sim_state *s, const char *name) {
  for (uint32_t i = 0; i < s->obstacle_count; i++)
    if (s->obs[i].active && !strcmp(s->obs[i].name, name))
      return i;
  return UINT32_MAX;
}

void pa_sim_int_recount(pa_sim_state *s) {
  while (s->robot_count > 0 && !s->info[s->robot_count - 1].active)
    s->robot_count--;
  while (s->obstacle_count > 0 && !s->obs[s->obstacle_count - 1].active)
    s->obstacle_count--;
}

static pa_status spawn_robot(const pa_sim_model *m, pa_sim_state *s,
                             const pa_cmd *c, pa_reply *r) {
  char rg[64];
  const pa_cmd_spawn_robot *a = &c->spawn_robot;
  const double pose[4] = {a->x, a->y, a->theta, a->radius};
  if (!finite_all(pose, 4, 1e6) ||
      (a->radius != 0 && !pa_prop_ok(PA_PR_RADIUS, a->radius)))
    return fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                "spawn pose must be finite and radius 0 (default) or in %s",
                pa_prop_range(PA_PR_RADIUS, rg, sizeof rg));
  if (a->drive != PA_DRIVE_DIFF && a->drive != PA_DRIVE_OMNI)
    return fail(r, PA_ERR_INVALID_ACTION_SHAPE, "unknown drive %u", a->drive);
  if (a->dynamics != PA_DYN_KINEMATIC && a->dynamics != PA_DYN_DYNAMIC)
    return fail(r, PA_ERR_INVALID_ACTION_SHAPE, "unknown dynamics %u",
                a->dynamics);
  char name[sizeof c->name];
  memcpy(name, c->name, sizeof name);
  uint32_t slot = 0; /* the first free one */
  while (slot < s->cap_robots && s->info[slot].active)
    slot++;
  if (slot == s->cap_robots)
    return fail(r, PA_ERR_SPAWN_FAILED, "no free robot slot (max_robots %u)",
                s->cap_robots);
  if (!name[0])
    snprintf(name, sizeof name, "robot%u", slot);
  uint32_t same = pa_sim_find_robot(s, name); /* by name or index */
  if (same != UINT32_MAX && !strcmp(s->info[same].name, name))
    return fail(r, PA_ERR_SPAWN_FAILED, "a robot named '%s' exists", name);
  pa_robot_info ri = m->robot_template;
  snprintf(ri.name, sizeof ri.name, "%s", name);
  ri.drive = a->drive;
  ri.dynamics = a->dynamics;
  if (a->radius > 0) {
    ri.radius = (float)a->radius;
    ri.wheel_base = (float)(PA_WHEEL_BASE_PER_RADIUS * a->radius);
  }
  ri.start_x = a->x;
  ri.start_y = a->y;
  ri.start_theta = pa_sim_wrap(a->theta);
  ri.gen = s->info[slot].gen + 1;
  /* Check the footprint with the slot still inactive. */
  if (pa_sim_clearance(m, s, UINT32_MAX, ri.start_x, ri.start_y, ri.radius, 0,
                       NULL, NULL) < 0)
    return fail(r, PA_ERR_BLOCKED_POSE,
                "(%g, %g) is inside a wall or another body", ri.start_x,
                ri.start_y);
  s->info[slot] = ri;
  pa_sim_int_robot_place(m, s, slot, ri.start_x, ri.start_y, ri.start_theta);
  if (slot >= s->robot_count)
    s->robot_count = slot + 1;
  s->world_dirty = true;
  pa_sim_int_reply_pose(r, s, slot);
  return PA_OK;
}

/* True when obstacle o overlaps a wall (a blocked cell, or beyond the map),
 * as robots are kept out of them: a circle by its wall clearance, a box by
 * the blocked cells whose centre lies within half a cell of it. */
static bool obstacle_in_wall(const pa_sim_model *m, const pa_obstacle_info *o) {
  const pa_grid *g = &m->grid;
  if (o->shape == PA_SHAPE_CIRCLE)
    return pa_sim_int_wall_clearance(m, o->x, o->y, o->radius, NULL, NULL) <
           o->radius;
  double hx = o->size_x / 2, hy = o->size_y / 2, hd = hypot(hx, hy);
  if (pa_sim_int_wall_clearance(m, o->x, o->y, hd, NULL, NULL) >= hd)
    return false; /* its whole circumcircle is clear */
  double c = cos(o->theta), sn = sin(o->theta);
  int x0 = INT32_MAX, y0 = INT32_MAX, x1 = -1, y1 = -1;
  for (int k = 0; k < 4; k++) {
    double lx = (k & 1) ? hx : -hx, ly = (k & 2) ? hy : -hy;
    int cx, cy;
    if (!pa_grid_world_to_cell(g, o->x + c * lx - sn * ly,
                               o->y + sn * lx + c * ly, &cx, &cy))
      return true; /* reaches beyond the map */
    x0 = cx < x0 ? cx : x0, x1 = cx > x1 ? cx : x1;
    y0 = cy < y0 ? cy : y0, y1 = cy > y1 ? cy : y1;
  }
  for (int cy = y0; cy <= y1; cy++)
    for (int cx = x0; cx <= x1; cx++) {
      if (!((m->blocked[(size_t)cy * m->blocked_words + (size_t)cx / 64] >>
             (cx % 64)) &
            1))
        continue;
      double wx, wy;
      pa_grid_cell_center(g, cx, cy, &wx, &wy);
      if (pa_sim_int_obstacle_dist(o, wx, wy, NULL, NULL) < 0.5 * g->resolution)
        return true;
    }
  return false;
}

pa_status pa_sim_int_obstacle_init(pa_obstacle_info *o, uint32_t shape,
                                   double x, double y, double theta,
                                   double radius, double size_x, double size_y,
                                   pa_reply *r) {
  char rg[64];
  memset(o, 0, sizeof *o);
  o->active = 1;
  o->shape = shape;
  o->x = x;
  o->y = y;
  o->theta = pa_sim_wrap(theta);
  if (shape == PA_SHAPE_BOX) {
    o->size_x = size_x;
    o->size_y = size_y;
    if (!pa_prop_ok(PA_PR_OB_SIZE, size_x) ||
        !pa_prop_ok(PA_PR_OB_SIZE, size_y))
      return fail(r, PA_ERR_INVALID_ACTION_SHAPE, "box size must be in %s",
                  pa_prop_range(PA_PR_OB_SIZE, rg, sizeof rg));
  } else if (shape == PA_SHAPE_CIRCLE) {
    o->radius = radius;
    if (!pa_prop_ok(PA_PR_OB_RADIUS, radius))
      return fail(r, PA_ERR_INVALID_ACTION_SHAPE, "circle radius must be in %s",
                  pa_prop_range(PA_PR_OB_RADIUS, rg, sizeof rg));
  } else {
    return fail(r, PA_ERR_INVALID_ACTION_SHAPE, "unknown shape %u", shape);
  }
  r->status = PA_OK;
  return PA_OK;
}

static pa_status spawn_obstacle(const pa_sim_model *m, pa_sim_state *s,
                                const pa_cmd *c, pa_reply *r) {
  const pa_cmd_spawn_obstacle *a = &c->spawn_obstacle;
  const double num[7] = {a->x,      a->y,      a->theta, a->size_x,
                         a->size_y, a->radius, a->height};
  if (!finite_all(num, 7, 1e6))
    return fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                "obstacle numbers must be finite");
  char rg[64];
  pa_obstacle_info o;
  if (pa_sim_int_obstacle_init(&o, a->shape, a->x, a->y, a->theta, a->radius,
                               a->size_x, a->size_y, r) != PA_OK)
    return r->status;
  /* The schema's height range; 0 = default. */
  if (a->height != 0 && !pa_prop_ok(PA_PR_OB_HEIGHT, a->height))
    return fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                "obstacle height %g is out of range %s (0 = default)",
                a->height, pa_prop_range(PA_PR_OB_HEIGHT, rg, sizeof rg));
  o.height = a->height > 0 ? (float)a->height : 0.5f;
  o.colour[0] = 160;
  o.colour[1] = 120;
  o.colour[2] = 80;
  o.colour[3] = 255;
  uint32_t slot = 0; /* the first free one */
  while (slot < s->cap_obstacles && s->obs[slot].active)
    slot++;
  if (slot == s->cap_obstacles)
    return fail(r, PA_ERR_SPAWN_FAILED,
                "no free obstacle slot (max_obstacles %u)", s->cap_obstacles);
  memcpy(o.name, c->name, sizeof o.name);
  if (!o.name[0])
    snprintf(o.name, sizeof o.name, "obstacle%u", slot);
  if (find_obstacle(s, o.name) != UINT32_MAX)
    return fail(r, PA_ERR_SPAWN_FAILED, "an obstacle named '%s' exists",
                o.name);
  for (uint32_t i = 0; i < s->robot_count; i++)
    if (s->info[i].active &&
        pa_sim_int_obstacle_dist(&o, s->rs[i].x, s->rs[i].y, NULL, NULL) <
            s->info[i].radius)
      return fail(r, PA_ERR_BLOCKED_POSE,
                  "the obstacle would overlap robot '%s'", s->info[i].name);
  if (obstacle_in_wall(m, &o))
    return fail(r, PA_ERR_BLOCKED_POSE,
                "(%g, %g) is inside a wall or beyond the map", o.x, o.y);
  o.gen = s->obs[slot].gen + 1;
  s->obs[slot] = o;
  if (slot >= s->obstacle_count)
    s->obstacle_count = slot + 1;
  s->world_dirty = true;
  r->obj.id = slot;
  return PA_OK;
}

/* The schema row of settable property id for kind (PA_PK_*), or -1. */
static int prop_row(uint32_t id, unsigned kind) {
  for (int i = 0; i < PA_PR_COUNT; i++) {
    const pa_prop_def *p = pa_prop((pa_prop_row)i);
    if (id != PA_PROP_NONE && p->wire == id && (p->kinds & kind) &&
        !(p->kinds & PA_PK_RO))
      return i;
  }
  return -1;
}

/* v in the schema's range of row (one range per property everywhere), or
 * an error naming it. */
static bool prop_in(pa_reply *r, int row, const char *what, double v) {
  if (pa_prop_ok((pa_prop_row)row, v))
    return true;
  char rg[64];
  fail(r, PA_ERR_INVALID_ACTION_SHAPE, "%s %g is out of range %s%s", what, v,
       pa_prop_range((pa_prop_row)row, rg, sizeof rg),
       pa_prop_whole((pa_prop_row)row) ? " (whole)" : "");
  return false;
}

/* The row's check beyond its range (pa_prop_check) for value v of body i
 * (rec: its record as it is); false with the error set. */
static bool prop_check(const pa_sim_model *m, pa_sim_state *s, uint32_t i,
                       int row, const double *v, const void *rec, pa_reply *r) {
  const pa_robot_info *ri = rec;
  const pa_obstacle_info *o = rec;
  switch (pa_prop((pa_prop_row)row)->check) {
  case PA_PC_NONE:
    return true;
  case PA_PC_BEAMS: /* the instance's beam arrays are this long */
    return v[0] <= m->beam_cap ||
           !fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                 "laser_beams must be a whole number in [1, %u]", m->beam_cap);
  case PA_PC_LASER_MIN:
    return v[0] < ri->laser_range_max ||
           !fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                 "laser_range_min %g must be below laser_range_max %g", v[0],
                 (double)ri->laser_range_max);
  case PA_PC_LASER_MAX:
    return v[0] > ri->laser_range_min ||
           !fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                 "laser_range_max %g must be above laser_range_min %g", v[0],
                 (double)ri->laser_range_min);
  case PA_PC_RADIUS:
    return pa_sim_clearance(m, s, i, s->rs[i].x, s->rs[i].y, v[0], 0, NULL,
                            NULL) >= 0 ||
           !fail(r, PA_ERR_BLOCKED_POSE,
                 "robot '%s' with radius %g would overlap a wall or "
                 "another body",
                 ri->name, v[0]);
  case PA_PC_DYNAMICS:
    if ((uint32_t)v[0] != ri->dynamics) /* held forces do not pass over */
      pa_sim_int_dyn_velocity(s, i);
    return true;
  case PA_PC_CIRCLE:
    return o->shape == PA_SHAPE_CIRCLE ||
           !fail(r, PA_ERR_INVALID_MESSAGE,
                 "obstacle '%s' is a box: set its size, not a radius", o->name);
  case PA_PC_BOX:
    return o->shape == PA_SHAPE_BOX ||
           !fail(r, PA_ERR_INVALID_MESSAGE,
                 "obstacle '%s' is a circle: set its radius, not a size",
                 o->name);
  }
  return true;
}

/* An obstacle after a change: a bigger footprint must not swallow a robot
 * nor reach into a wall. */
static pa_status obstacle_fits(const pa_sim_model *m, const pa_sim_state *s,
                               const pa_obstacle_info *o, int row,
                               pa_reply *r) {
  for (uint32_t k = 0; k < s->robot_count; k++)
    if (s->info[k].active &&
        pa_sim_int_obstacle_dist(o, s->rs[k].x, s->rs[k].y, NULL, NULL) <
            s->info[k].radius)
      return fail(r, PA_ERR_BLOCKED_POSE,
                  "obstacle '%s' would overlap robot '%s'", o->name,
                  s->info[k].name);
  pa_prop_check ck = pa_prop((pa_prop_row)row)->check;
  if ((ck == PA_PC_CIRCLE || ck == PA_PC_BOX) && obstacle_in_wall(m, o))
    return fail(r, PA_ERR_BLOCKED_POSE,
                "obstacle '%s' would reach into a wall or beyond the map",
                o->name);
  return PA_OK;
}

/* One property of a robot, or of the obstacle c->name (robot UINT32_MAX),
 * through its row (pa_props.h); nothing changes on an error. */
static pa_status set_property(const pa_sim_model *m, pa_sim_state *s,
                              const pa_cmd *c, pa_reply *r) {
  bool ob = c->robot == UINT32_MAX;
  uint32_t i = ob ? find_obstacle(s, c->name) : c->robot;
  if (ob && i == UINT32_MAX)
    return fail(r, PA_ERR_UNKNOWN_OBJECT, "no obstacle named '%s'", c->name);
  if (!ob && !robot_ok(s, i))
    return fail(r, PA_ERR_UNKNOWN_ROBOT, "no robot %u", i);
  int row = prop_row(c->prop.prop, ob ? PA_PK_OBSTACLE : PA_PK_ROBOT);
  if (row < 0)
    return fail(r, PA_ERR_INVALID_MESSAGE, "property %u does not apply to %s",
                c->prop.prop, ob ? "obstacles" : "robots");
  pa_robot_info ri;
  pa_obstacle_info o;
  if (ob)
    o = s->obs[i];
  else
    ri = s->info[i];
  void *rec = ob ? (void *)&o : (void *)&ri;
  const pa_prop_def *p = pa_prop((pa_prop_row)row);
  int n = pa_prop_ncomp((pa_prop_row)row);
  if (p->check == PA_PC_CIRCLE || p->check == PA_PC_BOX)
    if (!prop_check(m, s, i, row, c->prop.v, rec, r))
      return (pa_status)r->status;
  for (int k = 0; k < n; k++) {
    char what[48];
    if (n == 1)
      snprintf(what, sizeof what, "%s", p->name);
    else if (n == 4)
      snprintf(what, sizeof what, "%s component", p->name);
    else
      snprintf(what, sizeof what, "%s[%d]", p->name, k);
    if (!prop_in(r, row, what, c->prop.v[k]))
      return (pa_status)r->status;
  }
  if (!prop_check(m, s, i, row, c->prop.v, rec, r))
    return (pa_status)r->status;
  for (int k = 0; k < n; k++)
    pa_prop_put((pa_prop_row)row, rec, k, c->prop.v[k]);
  if (ob) {
    if (obstacle_fits(m, s, &o, row, r) != PA_OK)
      return (pa_status)r->status;
    s->obs[i] = o;
  } else {
    pa_robot_state *rs = &s->rs[i];
    s->info[i] = ri;
    if (fabs(rs->head) > ri.head_limit) /* a tighter limit applies at once */
      rs->head = rs->head > 0 ? ri.head_limit : -ri.head_limit;
  }
  s->world_dirty = true;
  r->prop.id = i;
  for (int k = 0; k < 4; k++) /* the value(s) applied */
    r->prop.v[k] = k >= n ? 0
                   : p->store == PA_ST_RGBA
                       ? pa_prop_get((pa_prop_row)row, rec, k)
                       : c->prop.v[k];
  return PA_OK;
}

/* ---- ops: one apply function each ---------------------------------------- */

static pa_status op_set_cmd(const pa_sim_model *m, pa_sim_state *s,
                            const pa_cmd *c, pa_reply *r) {
  (void)m;
  pa_status st = set_cmd(s, c->robot, &c->drive, false, r);
  if (st == PA_OK)
    pa_sim_int_reply_pose(r, s, c->robot);
  return st;
}

/* As count SET_CMDs in a row: every entry applies on its own (one robot
 * gone meanwhile stops nobody else); the first failure is the status. */
static pa_status op_set_cmds(const pa_sim_model *m, pa_sim_state *s,
                             const pa_cmd *c, pa_reply *r) {
  (void)m;
  if (c->count == 0 || c->count > PA_CMD_DRIVES_MAX)
    return fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                "set_cmds: count %u is not 1..%d", c->count, PA_CMD_DRIVES_MAX);
  pa_status first = PA_OK;
  pa_reply er;
  for (uint32_t i = 0; i < c->count; i++) {
    const pa_cmd_drive_of *e = &c->drives[i];
    pa_cmd_drive d = {
        .v = e->v, .vy = e->vy, .w = e->w, .frame = PA_FRAME_ROBOT};
    pa_status st = set_cmd(s, e->robot, &d, false, first ? &er : r);
    if (st != PA_OK && first == PA_OK)
      first = st;
  }
  return first;
}

static pa_status op_stop(const pa_sim_model *m, pa_sim_state *s,
                         const pa_cmd *c, pa_reply *r) {
  (void)m;
  pa_robot_state *rs = &s->rs[c->robot];
  rs->cmd_v = rs->cmd_vy = rs->cmd_w = rs->cmd_head = 0;
  pa_sim_int_dyn_velocity(s, c->robot); /* a dynamic body brakes */
  pa_sim_int_reply_pose(r, s, c->robot);
  return PA_OK;
}

/* TELEPORT of the obstacle `name` (robot UINT32_MAX): Player's set_pose
 * moves any named object; nothing changes when it would overlap. */
static pa_status move_obstacle(const pa_sim_model *m, pa_sim_state *s,
                               const pa_cmd *c, pa_reply *r) {
  uint32_t i = find_obstacle(s, c->name);
  if (i == UINT32_MAX)
    return fail(r, PA_ERR_UNKNOWN_OBJECT, "no obstacle named '%s'", c->name);
  pa_obstacle_info o = s->obs[i];
  o.x = c->pose.x;
  o.y = c->pose.y;
  o.theta = pa_sim_wrap(c->pose.theta);
  for (uint32_t k = 0; k < s->robot_count; k++)
    if (s->info[k].active &&
        pa_sim_int_obstacle_dist(&o, s->rs[k].x, s->rs[k].y, NULL, NULL) <
            s->info[k].radius)
      return fail(r, PA_ERR_BLOCKED_POSE,
                  "obstacle '%s' at (%g, %g) would overlap robot '%s'", c->name,
                  o.x, o.y, s->info[k].name);
  if (obstacle_in_wall(m, &o))
    return fail(r, PA_ERR_BLOCKED_POSE,
                "obstacle '%s' at (%g, %g) would reach into a wall or beyond "
                "the map",
                c->name, o.x, o.y);
  s->obs[i] = o;
  s->world_dirty = true;
  r->pose.robot = i;
  r->pose.x = o.x;
  r->pose.y = o.y;
  r->pose.theta = o.theta;
  return PA_OK;
}

static pa_status op_teleport(const pa_sim_model *m, pa_sim_state *s,
                             const pa_cmd *c, pa_reply *r) {
  const double pose[3] = {c->pose.x, c->pose.y, c->pose.theta};
  if (!finite_all(pose, 3, 1e6))
    return fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                "pose must be 3 finite numbers");
  if (c->robot == UINT32_MAX)
    return move_obstacle(m, s, c, r);
  if (!robot_ok(s, c->robot))
    return fail(r, PA_ERR_UNKNOWN_ROBOT, "no robot %u", c->robot);
  if (pa_sim_overlaps(m, s, c->robot, c->pose.x, c->pose.y))
    return fail(r, PA_ERR_BLOCKED_POSE,
                "(%g, %g) is inside a wall or another body", c->pose.x,
                c->pose.y);
  pa_robot_state *rs = &s->rs[c->robot];
  rs->x = c->pose.x;
  rs->y = c->pose.y;
  rs->theta = pa_sim_wrap(c->pose.theta);
  rs->v = rs->vy = rs->w = 0;
  /* Odometry follows a teleport (documented: it is not wheel motion). */
  rs->odom_x = rs->x;
  rs->odom_y = rs->y;
  rs->odom_theta = rs->theta;
  pa_sim_int_reply_pose(r, s, c->robot);
  return PA_OK;
}

static pa_status op_pause(const pa_sim_model *m, pa_sim_state *s,
                          const pa_cmd *c, pa_reply *r) {
  (void)m, (void)r;
  s->paused = c->op == PA_OP_PAUSE;
  return PA_OK;
}

static pa_status op_step(const pa_sim_model *m, pa_sim_state *s,
                         const pa_cmd *c, pa_reply *r) {
  if (c->step.ticks < 1 || c->step.ticks > PA_CMD_STEPS_MAX)
    return fail(r, PA_ERR_INVALID_ACTION_SHAPE, "steps must be in [1, %u]",
                PA_CMD_STEPS_MAX);
  if ((c->flags & PA_CMDF_OBS) && c->step.obs_beams > m->def.max_beams)
    return fail(r, PA_ERR_INVALID_MESSAGE, PA_SIM_OBS_BEAMS_BAD,
                c->step.obs_beams, m->def.max_beams);
  return (c->flags & PA_CMDF_DRIVE)
             ? set_cmd(s, c->robot, &c->step.drive, true, r)
             : PA_OK;
}

static pa_status op_reset(const pa_sim_model *m, pa_sim_state *s,
                          const pa_cmd *c, pa_reply *r) {
  (void)c, (void)r;
  pa_sim_reset(m, s);
  return PA_OK;
}

static pa_status op_speed(const pa_sim_model *m, pa_sim_state *s,
                          const pa_cmd *c, pa_reply *r) {
  (void)m;
  double f = c->speed.factor;
  if (!isfinite(f) || f < 0 || f > 1e6 || (f > 0 && f < 0.001))
    return fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                "speed must be 0 (as fast as possible) or in [0.001, 1e6]");
  s->speed = f;
  r->speed.factor = s->speed;
  return PA_OK;
}

/* After a removal: the counts, the published world and the reply's id. */
static pa_status removed(pa_sim_state *s, pa_reply *r, uint32_t id) {
  pa_sim_int_recount(s);
  s->world_dirty = true;
  r->obj.id = id;
  return PA_OK;
}

static pa_status op_remove_robot(const pa_sim_model *m, pa_sim_state *s,
                                 const pa_cmd *c, pa_reply *r) {
  (void)m;
  s->info[c->robot].active = 0;
  s->rs[c->robot].flags = 0;
  return removed(s, r, c->robot);
}

static pa_status op_remove_obstacle(const pa_sim_model *m, pa_sim_state *s,
                                    const pa_cmd *c, pa_reply *r) {
  (void)m;
  uint32_t i = find_obstacle(s, c->name);
  if (i == UINT32_MAX)
    return fail(r, PA_ERR_UNKNOWN_OBJECT, "no obstacle named '%s'", c->name);
  s->obs[i].active = 0;
  return removed(s, r, i);
}

static pa_status op_sync(const pa_sim_model *m, pa_sim_state *s,
                         const pa_cmd *c, pa_reply *r) {
  (void)m, (void)s, (void)c, (void)r;
  return PA_OK;
}

static pa_status op_load_snapshot(const pa_sim_model *m, pa_sim_state *s,
                                  const pa_cmd *c, pa_reply *r) {
  pa_status st = pa_sim_int_snapshot_load(m, s, c, r);
  if (st == PA_OK)
    pa_sim_rec_stop(s); /* a recording's robots.csv would not match */
  return st;
}

static pa_status op_save_snapshot_json(const pa_sim_model *m, pa_sim_state *s,
                                       const pa_cmd *c, pa_reply *r) {
  return pa_sim_int_snapshot_json_save(m, s, c, r);
}

static pa_status op_load_snapshot_json(const pa_sim_model *m, pa_sim_state *s,
                                       const pa_cmd *c, pa_reply *r) {
  pa_status st = pa_sim_int_snapshot_json_load(m, s, c, r);
  if (st == PA_OK)
    pa_sim_rec_stop(s); /* a recording's robots.csv would not match */
  return st;
}

static pa_status op_save_snapshot(const pa_sim_model *m, pa_sim_state *s,
                                  const pa_cmd *c, pa_reply *r) {
  return pa_sim_int_snapshot_save(m, s, c, r);
}

/* The loader ops' check on the loop, before the loader thread starts. */
static pa_status op_generate_map(const pa_sim_model *m, pa_sim_state *s,
                                 const pa_cmd *c, pa_reply *r) {
  (void)m, (void)s;
  const pa_cmd_gen_map *g = &c->gen_map;
  const double a[8] = {g->width,   g->height,  g->resolution, g->seed,
                       g->rooms_x, g->rooms_y, g->clutter,    g->scenario};
  for (int i = 0; i < 8; i++) /* the seed up to 2^53, the rest to 1e9 */
    if (!isfinite(a[i]) || a[i] < 0 ||
        a[i] > (i == 3 ? 9007199254740992.0 : 1e9))
      return fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                  "generate_map: parameters must be finite numbers >= 0");
  if (g->scenario > 0 && !pa_scenario_name((int)g->scenario - 1))
    return fail(r, PA_ERR_INVALID_MESSAGE, "no built-in scenario %g",
                g->scenario);
  return PA_OK;
}

/* ---- the op table ----------------------------------------------------------
 */

enum {
  ROBOT = PA_SIM_OPF_ROBOT,
  PUBLISH = PA_SIM_OPF_PUBLISH,
  LOADER = PA_SIM_OPF_LOADER,
  TICKS = PA_SIM_OPF_TICKS,
  LATER = PA_SIM_OPF_LATER,
};
#define OP(id, nm, fn, fl) [PA_OP_##id] = {nm, fn, fl}
static const pa_sim_op_def ops[PA_OP_COUNT] = {
    OP(SET_CMD, "set_cmd", op_set_cmd, ROBOT),
    OP(STOP, "stop", op_stop, ROBOT),
    OP(TELEPORT, "teleport", op_teleport, PUBLISH), /* robot or obstacle */
    OP(PAUSE, "pause", op_pause, PUBLISH),
    OP(RESUME, "resume", op_pause, PUBLISH),
    OP(STEP, "step", op_step, TICKS),
    OP(RESET, "reset", op_reset, PUBLISH),
    OP(SPEED, "speed", op_speed, PUBLISH),
    OP(SPAWN_ROBOT, "spawn_robot", spawn_robot, PUBLISH),
    OP(REMOVE_ROBOT, "remove_robot", op_remove_robot, ROBOT | PUBLISH),
    OP(SPAWN_OBSTACLE, "spawn_obstacle", spawn_obstacle, 0),
    OP(REMOVE_OBSTACLE, "remove_obstacle", op_remove_obstacle, 0),
    OP(SYNC, "sync", op_sync, 0),
    OP(SET_PROPERTY, "set_property", set_property, 0),
    OP(SAVE_SNAPSHOT, "save_snapshot", op_save_snapshot, 0),
    OP(LOAD_SNAPSHOT, "load_snapshot", op_load_snapshot, PUBLISH),
    OP(SET_MAP, "set_map", NULL, LOADER | PUBLISH),
    OP(GENERATE_MAP, "generate_map", op_generate_map, LOADER | PUBLISH),
    OP(SET_SCENARIO, "set_scenario", NULL, LOADER | PUBLISH),
    OP(EXPORT_DATASET, "export_dataset", pa_sim_int_rec_start, LATER),
    OP(SAVE_SNAPSHOT_JSON, "save_snapshot_json", op_save_snapshot_json, 0),
    OP(LOAD_SNAPSHOT_JSON, "load_snapshot_json", op_load_snapshot_json,
       PUBLISH),
    OP(SAVE_WORLD, "save_world", pa_sim_int_save_world, 0),
    OP(SSL_ROBOT, "ssl_robot", pa_sim_int_op_ssl_robot, ROBOT),
    OP(TELEPORT_BALL, "teleport_ball", pa_sim_int_op_teleport_ball, PUBLISH),
    OP(GET_BALL, "get_ball", pa_sim_int_op_get_ball, 0),
    OP(TELEPORT_MOVING, "teleport_moving", pa_sim_int_op_teleport_moving,
       ROBOT | PUBLISH),
    OP(SSL_SPECS, "ssl_specs", pa_sim_int_op_ssl_specs, ROBOT | PUBLISH),
    OP(SET_FORCE, "set_force", pa_sim_int_op_set_force, ROBOT),
    OP(SET_THRUST, "set_thrust", pa_sim_int_op_set_thrust, ROBOT),
    OP(SPAWN_AGENT, "spawn_agent", pa_sim_int_op_spawn_agent, 0),
    OP(MOVE_AGENT, "move_agent", pa_sim_int_op_move_agent, 0),
    OP(REMOVE_AGENT, "remove_agent", pa_sim_int_op_remove_agent, 0),
    OP(CLEAR_AGENTS, "clear_agents", pa_sim_int_op_clear_agents, 0),
    OP(SET_CMDS, "set_cmds", op_set_cmds, 0),
};
#undef OP

const pa_sim_op_def *pa_sim_op(uint32_t op) {
  return op > PA_OP_NONE && op < PA_OP_COUNT && ops[op].name ? &ops[op] : NULL;
}

unsigned pa_sim_op_flags(uint32_t op) {
  const pa_sim_op_def *d = pa_sim_op(op);
  return d ? d->flags : 0;
}

pa_status pa_sim_apply(const pa_sim_model *m, pa_sim_state *s, const pa_cmd *c,
                       pa_reply *r) {
  /* Every op gets its name terminated (the queue is another process's). */
  pa_cmd cmd = *c;
  cmd.name[sizeof cmd.name - 1] = 0;
  c = &cmd;
  memset(r, 0, sizeof *r);
  r->client_id = c->client_id;
  r->request_id = c->request_id;
  r->op = c->op;
  r->status = PA_OK;
  s->hash.valid = false;           /* robots may move outside the tick */
  pa_sim_scans_settle(m, s, true); /* commands see (and change) a still world */
  const pa_sim_op_def *d = pa_sim_op(c->op);
  pa_status st;
  if (!d)
    st = fail(r, PA_ERR_UNKNOWN_ACTION, "unknown command op %u", c->op);
  else if (d->flags & PA_SIM_OPF_LOADER)
    st = fail(r, PA_ERR_UNKNOWN_ACTION, "%s is loaded by pa_sim_run's loader",
              d->name);
  else if ((d->flags & PA_SIM_OPF_ROBOT) && !robot_ok(s, c->robot))
    st = fail(r, PA_ERR_UNKNOWN_ROBOT, "no robot %u", c->robot);
  else
    st = d->apply(m, s, c, r);
  r->status = st;
  r->tick = s->tick;
  r->sim_time = s->sim_time;
  return st;
}
