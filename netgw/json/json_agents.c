/* json_agents.c - agents, obstacles that move on their own (OceanSim's
 * spawn_agent, move_agent, remove_agent, clear_agents, get_agents): pa-sim
 * moves them (sim_agents.c); get_agents reads the world snapshot. */
#define _GNU_SOURCE
#include "json_int.h"
#include "pa_props.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const behaviours[PA_AGENT_COUNT] = {
    [PA_AGENT_CONSTANT] = "constant",
    [PA_AGENT_WAYPOINTS] = "waypoints",
    [PA_AGENT_RANDOM] = "random",
    [PA_AGENT_PEDESTRIAN] = "pedestrian",
};

/* data.waypoints [[x, y], ...] (or data.goal [x, y], one) into the
 * command's path as "x,y x,y"; 1 read, 0 absent, -1 error set. */
static int waypoints(jctx *x, pa_cmd *cmd) {
  json_t *w = json_object_get(x->data, "waypoints");
  json_t *goal = json_object_get(x->data, "goal");
  if (w && goal) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.goal and data.waypoints: give one");
    return -1;
  }
  if (!w && !goal)
    return 0;
  json_t *one = NULL;
  if (goal) { /* a goal is one waypoint */
    one = json_array();
    json_array_append(one, goal);
    w = one;
  }
  size_t n = json_is_array(w) ? json_array_size(w) : 0, len = 0;
  int rc = 1;
  if (!json_is_array(w) || n == 0 || n > PA_AGENT_WAYPOINTS_MAX) {
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "data.waypoints must be 1 to %d points [x, y] (data.goal "
                 "one [x, y])",
                 PA_AGENT_WAYPOINTS_MAX);
    rc = -1;
  }
  for (size_t i = 0; rc > 0 && i < n; i++) {
    json_t *p = json_array_get(w, i);
    json_t *px = json_array_get(p, 0), *py = json_array_get(p, 1);
    if (!json_is_array(p) || json_array_size(p) != 2 || !json_is_number(px) ||
        !json_is_number(py) || !(fabs(json_number_value(px)) <= 1e6) ||
        !(fabs(json_number_value(py)) <= 1e6)) {
      pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                   "%s must be [x, y], finite numbers within 1e6",
                   goal ? "data.goal" : "data.waypoints[i]");
      rc = -1;
      break;
    }
    len += (size_t)snprintf(cmd->path + len, sizeof cmd->path - len,
                            "%s%.9g,%.9g", i ? " " : "", json_number_value(px),
                            json_number_value(py));
  }
  json_decref(one);
  return rc;
}

/* data.speed, or data.velocity [vx, vy] (a speed and a heading): 1, 0, -1. */
static int speed(jctx *x, double *sp, double *heading, bool *has_heading) {
  double v[2];
  size_t n = 0;
  int rs = pa_json_num(x, "speed", sp);
  int rv = pa_json_vec(x, "velocity", 2, 0, v, &n);
  if (rs < 0 || rv < 0)
    return -1;
  *has_heading = false;
  if (rv > 0) {
    if (rs > 0) {
      pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                   "data.speed and data.velocity: give one");
      return -1;
    }
    *sp = hypot(v[0], v[1]);
    *heading = atan2(v[1], v[0]);
    *has_heading = true;
    return 1;
  }
  return rs;
}

/* The agent a request names: data.name, or data.agent (its id or name),
 * into out; 0, or -1 with the error set (unknown_agent for an id that is
 * no agent). */
static int agent_name(jctx *x, char out[32]) {
  const char *name = NULL;
  json_t *a = json_object_get(x->data, "agent");
  if (pa_json_str(x, "name", 32, &name) < 0)
    return -1;
  if (!name && a && json_is_string(a))
    name = json_string_value(a);
  if (name) {
    if (strlen(name) >= 32) {
      pa_json_fail(x, PA_ERR_UNKNOWN_AGENT, "no agent named '%.40s'", name);
      return -1;
    }
    snprintf(out, 32, "%s", name);
    return 0;
  }
  if (!a || !json_is_integer(a)) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.name or data.agent (an id or a name) is required");
    return -1;
  }
  json_int_t id = json_integer_value(a);
  pa_netgw *g = x->c->g;
  pa_obstacle_info o;
  memset(&o, 0, sizeof o);
  for (int tries = 0;; tries++) {
    uint64_t s = pa_stack_world_read_begin(g->st);
    if (tries == 1000 || (s & 1u)) {
      pa_json_fail(x, PA_ERR_BUSY, "the world snapshot is being rewritten");
      return -1;
    }
    uint32_t n = __atomic_load_n(&g->ctl->obstacle_count, __ATOMIC_ACQUIRE);
    if (id >= 0 && id < n && id < g->ctl->def.max_obstacles)
      memcpy(&o, &g->st->obstacles[id], sizeof o);
    if (!pa_stack_world_read_retry(g->st, s))
      break;
  }
  if (!o.active || o.agent == PA_AGENT_NONE) {
    pa_json_fail(x, PA_ERR_UNKNOWN_AGENT, "no agent with id %lld",
                 (long long)id);
    return -1;
  }
  memcpy(out, o.name, 32);
  out[31] = 0;
  return 0;
}

json_t *pa_json_act_spawn_agent(jctx *x) {
  const char *name = NULL, *shape = NULL, *beh = NULL;
  double p[3] = {0, 0, 0}, size[2] = {0.5, 0.5}, radius = 0.25, sp = 0.5;
  double heading = 0;
  bool has_heading = false;
  size_t n;
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  if (pa_json_str(x, "name", 32, &name) < 0 ||
      pa_json_str(x, "shape", 8, &shape) < 0 ||
      pa_json_need_str(x, "behaviour", 16, &beh) < 0 ||
      pa_json_need_pose3(x, p) < 0 ||
      pa_json_vec(x, "size", 2, 0, size, &n) < 0 ||
      pa_json_num(x, "radius", &radius) < 0 ||
      speed(x, &sp, &heading, &has_heading) < 0 || waypoints(x, &cmd) < 0)
    return NULL;
  cmd.op = PA_OP_SPAWN_AGENT;
  pa_cmd_agent *a = &cmd.agent;
  for (uint32_t b = 1; b < PA_AGENT_COUNT; b++)
    if (!strcmp(beh, behaviours[b]))
      a->behaviour = b;
  if (!a->behaviour)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.behaviour '%s' is not constant, waypoints, "
                        "random or pedestrian",
                        beh);
  if (!shape || !strcmp(shape, "circle")) {
    a->shape = PA_SHAPE_CIRCLE;
    a->radius = radius;
  } else if (!strcmp(shape, "box")) {
    a->shape = PA_SHAPE_BOX;
    a->size_x = size[0];
    a->size_y = size[1];
  } else {
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.shape '%s' is not circle or box", shape);
  }
  if (name)
    snprintf(cmd.name, sizeof cmd.name, "%s", name);
  a->x = p[0];
  a->y = p[1];
  a->theta = has_heading ? heading : p[2];
  a->speed = sp;
  return pa_json_wait_for_sim(x, &cmd, 0);
}

json_t *pa_json_done_spawn_agent(jctx *x, const pa_reply *r) {
  (void)x;
  json_t *d = pa_json_tick(r);
  json_object_set_new(d, "agent", json_integer(r->obj.id));
  return d;
}

json_t *pa_json_act_move_agent(jctx *x) {
  char name[32];
  double p[3] = {0, 0, 0}, sp = 0, heading = 0;
  bool has_heading = false;
  size_t n = 0;
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  int rp, rs, rw;
  if (agent_name(x, name) < 0 ||
      (rp = pa_json_vec(x, "pose", 3, 2, p, &n)) < 0 ||
      (rs = speed(x, &sp, &heading, &has_heading)) < 0 ||
      (rw = waypoints(x, &cmd)) < 0)
    return NULL;
  if (!rp && !rs && !rw)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "move_agent needs data.pose, data.goal / "
                        "data.waypoints or data.speed / data.velocity");
  cmd.op = PA_OP_MOVE_AGENT;
  snprintf(cmd.name, sizeof cmd.name, "%s", name);
  cmd.flags = (rp ? PA_CMDF_AGENT_POSE : 0) | (rw ? PA_CMDF_AGENT_GOAL : 0) |
              (rs ? PA_CMDF_AGENT_SPEED : 0);
  cmd.agent.x = p[0];
  cmd.agent.y = p[1];
  cmd.agent.theta = has_heading ? heading : p[2];
  cmd.agent.speed = sp;
  if (has_heading && rp) /* the velocity's heading wins over the pose's */
    cmd.agent.theta = heading;
  return pa_json_wait_for_sim(x, &cmd, 0);
}

json_t *pa_json_act_remove_agent(jctx *x) {
  char name[32];
  if (agent_name(x, name) < 0)
    return NULL;
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_REMOVE_AGENT;
  snprintf(cmd.name, sizeof cmd.name, "%s", name);
  return pa_json_wait_for_sim(x, &cmd, 0);
}

json_t *pa_json_act_clear_agents(jctx *x) {
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_CLEAR_AGENTS;
  return pa_json_wait_for_sim(x, &cmd, 0);
}

json_t *pa_json_done_clear_agents(jctx *x, const pa_reply *r) {
  (void)x;
  json_t *d = pa_json_tick(r);
  json_object_set_new(d, "removed", json_integer(r->obj.id));
  return d;
}

size_t pa_json_cost_get_agents(jctx *x) {
  return (size_t)x->c->g->ctl->def.max_obstacles * PA_JSON_AGENT_BYTES +
         PA_JSON_SMALL_REPLY;
}

uint32_t pa_json_agents_count(pa_netgw *g) {
  uint32_t n = __atomic_load_n(&g->ctl->obstacle_count, __ATOMIC_ACQUIRE),
           k = 0;
  if (n > g->ctl->def.max_obstacles)
    n = g->ctl->def.max_obstacles;
  for (uint32_t i = 0; i < n; i++) /* an estimate: racing the writer is fine */
    k += g->st->obstacles[i].active &&
         g->st->obstacles[i].agent != PA_AGENT_NONE;
  return k;
}

json_t *pa_json_agents_list(jctx *x) {
  uint32_t n = 0;
  pa_obstacle_info *copy = pa_json_obstacles_copy(x, &n);
  if (!copy)
    return NULL;
  json_t *list = json_array();
  for (uint32_t i = 0; i < n; i++) {
    const pa_obstacle_info *o = &copy[i];
    if (!o->active || o->agent == PA_AGENT_NONE || o->agent >= PA_AGENT_COUNT)
      continue;
    json_t *j = json_object();
    json_object_set_new(j, "id", json_integer(i));
    json_object_set_new(
        j, "name", json_stringn(o->name, strnlen(o->name, sizeof o->name)));
    json_object_set_new(j, "behaviour", json_string(behaviours[o->agent]));
    json_object_set_new(j, "shape", pa_json_shape(o));
    json_object_set_new(j, "pose", pa_json_vec3(o->x, o->y, o->theta));
    /* world frame, OceanSim's [vx, vy, vz] as the robots' */
    json_object_set_new(j, "velocity", pa_json_vec3(o->vx, o->vy, 0.0));
    pa_json_extent(j, o);
    json_array_append_new(list, j);
  }
  free(copy);
  return list;
}

json_t *pa_json_act_get_agents(jctx *x) {
  json_t *list = pa_json_agents_list(x);
  return list ? pa_json_counted("agents", list) : NULL;
}
