/* json_args.c - reading a JSON request's data fields, with errors that name
 * the field, and handing its command to pa-sim. */
#define _GNU_SOURCE
#include "json_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pa_json_vfail(jctx *x, pa_status st, const char *fmt, va_list ap) {
  vsnprintf(x->msg, sizeof x->msg, fmt, ap);
  x->st = st;
}

json_t *pa_json_fail(jctx *x, pa_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pa_json_vfail(x, st, fmt, ap);
  va_end(ap);
  return NULL;
}

/* ---- field readers -------------------------------------------------------*/

/* Optional finite number: 1 found, 0 absent, -1 bad (error set). */
int pa_json_num(jctx *x, const char *key, double *out) {
  json_t *v = json_object_get(x->data, key);
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_number(v) || !isfinite(json_number_value(v))) {
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "data.%s must be a finite number", key);
    return -1;
  }
  *out = json_number_value(v);
  return 1;
}

/* Optional integer in [lo, hi]. */
int pa_json_int(jctx *x, const char *key, long long lo, long long hi,
                long long *out) {
  json_t *v = json_object_get(x->data, key);
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_integer(v) || json_integer_value(v) < lo ||
      json_integer_value(v) > hi) {
    /* a wrong type is a shape error (OceanSim), a wrong value a message */
    pa_json_fail(x,
                 json_is_integer(v) ? PA_ERR_INVALID_MESSAGE
                                    : PA_ERR_INVALID_ACTION_SHAPE,
                 "data.%s must be an integer in [%lld, %lld]", key, lo, hi);
    return -1;
  }
  *out = json_integer_value(v);
  return 1;
}

/* Optional string of 1..max-1 bytes. */
int pa_json_str(jctx *x, const char *key, size_t max, const char **out) {
  json_t *v = json_object_get(x->data, key);
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_string(v) || json_string_length(v) == 0 ||
      json_string_length(v) >= max ||
      strlen(json_string_value(v)) != json_string_length(v)) {
    pa_json_fail(x,
                 json_is_string(v) ? PA_ERR_INVALID_MESSAGE
                                   : PA_ERR_INVALID_ACTION_SHAPE,
                 "data.%s must be a non-empty string shorter than %zu bytes",
                 key, max);
    return -1;
  }
  *out = json_string_value(v);
  return 1;
}

/* A required string: 0, or -1 (error set). */
int pa_json_need_str(jctx *x, const char *key, size_t max, const char **out) {
  int r = pa_json_str(x, key, max, out);
  if (r == 0)
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE, "data.%s is required", key);
  return r > 0 ? 0 : -1;
}

/* A numeric vector of one of the allowed lengths (n2 = 0: only n1). */
int pa_json_vec(jctx *x, const char *key, size_t n1, size_t n2, double *out,
                size_t *n) {
  json_t *v = json_object_get(x->data, key);
  if (!v || json_is_null(v))
    return 0;
  size_t len = json_is_array(v) ? json_array_size(v) : 0;
  if (!json_is_array(v) || (len != n1 && (n2 == 0 || len != n2))) {
    if (n2)
      pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                   "data.%s must be an array of %zu or %zu numbers", key, n1,
                   n2);
    else
      pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                   "data.%s must be an array of %zu numbers", key, n1);
    return -1;
  }
  for (size_t i = 0; i < len; i++) {
    json_t *e = json_array_get(v, i);
    if (!json_is_number(e) || !isfinite(json_number_value(e))) {
      pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                   "data.%s[%zu] must be a finite number", key, i);
      return -1;
    }
    out[i] = json_number_value(e);
  }
  *n = len;
  return 1;
}

/* A required data.pose [x, y, theta]: 0, or -1 (error set). */
int pa_json_need_pose3(jctx *x, double p[3]) {
  size_t n;
  int r = pa_json_vec(x, "pose", 3, 0, p, &n);
  if (r == 0)
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "data.pose is required: [x, y, theta]");
  return r > 0 ? 0 : -1;
}

/* A robot or obstacle lookup stuck on a world snapshot left mid-update:
 * busy (true), else the caller says it is unknown. */
bool pa_json_lookup_busy(jctx *x, int rc) {
  if (rc != PA_GW_BUSY)
    return false;
  pa_json_fail(x, PA_ERR_BUSY,
               "the world snapshot is being rewritten; try again");
  return true;
}

/* An untorn copy of the world snapshot's obstacles (agents among them),
 * malloc'd, *n of them; NULL with busy set when the world is being rewritten
 * all the time, or its writer died mid-update (read_begin waited 50 ms; a
 * restarted pa-sim republishes it). */
pa_obstacle_info *pa_json_obstacles_copy(jctx *x, uint32_t *n) {
  pa_netgw *g = x->c->g;
  uint32_t max = g->ctl->def.max_obstacles;
  pa_obstacle_info *copy = malloc((size_t)(max ? max : 1) * sizeof *copy);
  if (!copy) {
    pa_json_fail(x, PA_ERR_BUSY, "out of memory");
    return NULL;
  }
  for (int tries = 0;; tries++) {
    uint64_t s = pa_stack_world_read_begin(g->st);
    if (tries == 1000 || (s & 1u)) {
      free(copy);
      pa_json_fail(x, PA_ERR_BUSY,
                   "the world snapshot is being rewritten; try again");
      return NULL;
    }
    *n = __atomic_load_n(&g->ctl->obstacle_count, __ATOMIC_ACQUIRE);
    if (*n > max)
      *n = max;
    memcpy(copy, g->st->obstacles, (size_t)*n * sizeof *copy);
    if (!pa_stack_world_read_retry(g->st, s))
      return copy;
  }
}

/* data.robot (id or name), default the connection's robot. */
int pa_json_robot(jctx *x, pa_robot_info *info, uint32_t *idx) {
  pa_netgw *g = x->c->g;
  json_t *v = json_object_get(x->data, "robot");
  if (!v || json_is_null(v)) {
    int rc = pa_gw_robot(g, NULL, (long)x->c->robot, info, idx);
    if (rc != 0) {
      if (!pa_json_lookup_busy(x, rc))
        pa_json_fail(x, PA_ERR_UNKNOWN_ROBOT, "robot %u does not exist",
                     (unsigned)x->c->robot);
      return -1;
    }
    return 0;
  }
  if (json_is_integer(v)) {
    json_int_t id = json_integer_value(v);
    int rc = id < 0 || id > 0x7fffffff
                 ? -1
                 : pa_gw_robot(g, NULL, (long)id, info, idx);
    if (rc != 0) {
      if (!pa_json_lookup_busy(x, rc))
        pa_json_fail(x, PA_ERR_UNKNOWN_ROBOT, "no robot with id %lld",
                     (long long)id);
      return -1;
    }
    return 0;
  }
  if (json_is_string(v)) {
    /* A name with a NUL inside must not match the part before it. */
    const char *name = json_string_value(v);
    int rc = strlen(name) != json_string_length(v)
                 ? -1
                 : pa_gw_robot(g, name, -1, info, idx);
    if (rc != 0) {
      if (!pa_json_lookup_busy(x, rc))
        pa_json_fail(x, PA_ERR_UNKNOWN_ROBOT, "no robot named '%.64s'", name);
      return -1;
    }
    return 0;
  }
  pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
               "data.robot must be an id or a name");
  return -1;
}

json_t *pa_json_vec3(double a, double b, double c) {
  json_t *v = json_array();
  json_array_append_new(v, json_real(a));
  json_array_append_new(v, json_real(b));
  json_array_append_new(v, json_real(c));
  return v;
}

/* ---- the pa-sim round trip -----------------------------------------------*/

/* Pushes cmd for robot: 0, or -1 with the error set (queue full). */
static int push_cmd(jctx *x, pa_cmd *cmd, uint32_t robot, bool wait) {
  cmd->robot = robot;
  if ((wait ? pa_gw_push_wait(x->c, cmd) : pa_gw_push_nowait(x->c, cmd)) != 0) {
    x->c->g->busy++;
    pa_json_fail(x, PA_ERR_BUSY, "%s", x->c->g->busy_msg);
    return -1;
  }
  return 0;
}

json_t *pa_json_wait_for_sim(jctx *x, pa_cmd *cmd, uint32_t robot) {
  if (!(x->act->flags & JF_SIM)) /* its row must say so: the reply needs it */
    return pa_json_fail(x, PA_ERR_BUSY, "internal: '%s' may not wait",
                        x->act->name);
  if (push_cmd(x, cmd, robot, true) != 0)
    return NULL;
  x->c->pend = PEND_JSON;
  x->c->pend_action = pa_json_action_id(x->act);
  x->c->pend_robot = robot;
  return JPENDING;
}

json_t *pa_json_push_nowait(jctx *x, pa_cmd *cmd, uint32_t robot) {
  if (push_cmd(x, cmd, robot, false) != 0)
    return NULL;
  json_t *d = json_object();
  json_object_set_new(d, "robot", json_integer(robot));
  return d;
}

/* The object a request names: data.name (a robot or an obstacle) or
 * data.robot (default: the connection's). kind P_ROBOT or P_OBSTACLE. */
int pa_json_named_object(jctx *x, pa_json_obj *o) {
  const char *name = NULL;
  if (pa_json_str(x, "name", 32, &name) < 0)
    return -1;
  int rc = name ? pa_gw_robot(x->c->g, name, -1, &o->ri, &o->idx) : 0;
  if (pa_json_lookup_busy(x, rc))
    return -1;
  if (rc != 0) {
    rc = pa_gw_obstacle(x->c->g, name, &o->oi, &o->idx);
    if (pa_json_lookup_busy(x, rc))
      return -1;
    if (rc != 0) {
      pa_json_fail(x, PA_ERR_UNKNOWN_OBJECT, "no robot or obstacle named '%s'",
                   name);
      return -1;
    }
    o->kind = P_OBSTACLE;
    return 0;
  }
  if (!name && pa_json_robot(x, &o->ri, &o->idx) < 0)
    return -1;
  o->kind = P_ROBOT;
  return 0;
}

json_t *pa_json_counted(const char *key, json_t *list) {
  json_t *d = json_object();
  json_object_set_new(d, "count",
                      json_integer((json_int_t)json_array_size(list)));
  json_object_set_new(d, key, list);
  return d;
}

json_t *pa_json_tick(const pa_reply *r) {
  json_t *d = json_object();
  json_object_set_new(d, "tick", json_integer((json_int_t)r->tick));
  return d;
}

/* Optional boolean: 1 found, 0 absent, -1 not a boolean (error set). */
int pa_json_bool(jctx *x, const char *key, bool *out) {
  json_t *v = json_object_get(x->data, key);
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_boolean(v)) {
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "data.%s must be true or false", key);
    return -1;
  }
  *out = json_is_true(v);
  return 1;
}
