/* json_prop.c - get_property / set_property: the properties of robots and
 * obstacles. */
#define _GNU_SOURCE
#include "json_int.h"
#include "pa_props.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *pa_json_shape(const pa_obstacle_info *o) {
  return json_string(o->shape == PA_SHAPE_CIRCLE ? "circle" : "box");
}

/* An obstacle's radius (circle) or size (box), into j. */
void pa_json_extent(json_t *j, const pa_obstacle_info *o) {
  if (o->shape == PA_SHAPE_CIRCLE) {
    json_object_set_new(j, "radius", json_real(o->radius));
  } else {
    json_t *sz = json_array();
    json_array_append_new(sz, json_real(o->size_x));
    json_array_append_new(sz, json_real(o->size_y));
    json_object_set_new(j, "size", sz);
  }
}

/* ---- properties ----------------------------------------------------------*/

/* v in the schema's range of row, else the error set (false). */
bool pa_json_prop_in(jctx *x, int row, const char *what, double v) {
  if (pa_prop_ok((pa_prop_row)row, v))
    return true;
  char rg[64];
  pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE, "%s %g is out of range %s%s",
               what, v, pa_prop_range((pa_prop_row)row, rg, sizeof rg),
               pa_prop_whole((pa_prop_row)row) ? " (whole)" : "");
  return false;
}

/* A float property as the shortest decimal that reads back to it (0.4, not
 * 0.40000000596). */
static json_t *jfloat(float f) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.9g", (double)f);
  for (int prec = 6; prec < 9; prec++) {
    char t[32];
    snprintf(t, sizeof t, "%.*g", prec, (double)f);
    if (strtof(t, NULL) == f) {
      memcpy(buf, t, sizeof t);
      break;
    }
  }
  return json_real(strtod(buf, NULL));
}

/* Every property of a robot (kind PA_PK_ROBOT) or an obstacle, by its rows
 * (pa_props.h): numbers, colours and sizes as arrays, words by name. */
static json_t *props_json(const void *rec, unsigned kind, uint32_t shape) {
  json_t *p = json_object();
  for (int i = 0; i < PA_PR_COUNT; i++) {
    const pa_prop_def *d = pa_prop((pa_prop_row)i);
    if (!(d->kinds & kind) || !pa_prop_applies((pa_prop_row)i, shape))
      continue;
    int n = pa_prop_ncomp((pa_prop_row)i);
    json_t *v = n > 1 ? json_array() : NULL;
    for (int k = 0; k < n; k++) {
      double x = pa_prop_get((pa_prop_row)i, rec, k);
      json_t *e =
          d->type == PA_PT_WORD
              ? json_string(pa_prop_word_name((pa_prop_row)i, (int)x)
                                ? pa_prop_word_name((pa_prop_row)i, (int)x)
                                : "?")
          : d->type == PA_PT_INT || d->type == PA_PT_COLOUR
              ? json_integer((json_int_t)x)
          : d->store == PA_ST_F32 ? jfloat((float)x)
                                  : json_real(x);
      if (v)
        json_array_append_new(v, e);
      else
        v = e;
    }
    json_object_set_new(p, d->name, v);
  }
  return p;
}
static json_t *robot_props(const pa_robot_info *i) {
  return props_json(i, PA_PK_ROBOT, 0);
}
static json_t *obstacle_props(const pa_obstacle_info *o) {
  return props_json(o, PA_PK_OBSTACLE, o->shape);
}

/* The properties object of a robot or obstacle as the world snapshot has
 * it now; with `only`, just {"property": only, "value": ...}. */
static json_t *props_reply(jctx *x, unsigned kind, const pa_robot_info *ri,
                           const pa_obstacle_info *oi, uint32_t idx,
                           const char *only) {
  json_t *all = kind == P_ROBOT ? robot_props(ri) : obstacle_props(oi);
  json_t *d = json_object();
  json_object_set_new(d, "name",
                      json_string(kind == P_ROBOT ? ri->name : oi->name));
  json_object_set_new(d, "kind",
                      json_string(kind == P_ROBOT ? "robot" : "obstacle"));
  if (kind == P_ROBOT)
    json_object_set_new(d, "robot", json_integer(idx));
  if (only) {
    const char *key = strcmp(only, "color") ? only : "colour";
    json_t *v = json_object_get(all, key);
    if (!v) {
      json_decref(all);
      json_decref(d);
      return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                          "%s '%s' has no property '%s'",
                          kind == P_ROBOT ? "robot" : "obstacle",
                          kind == P_ROBOT ? ri->name : oi->name, only);
    }
    json_object_set_new(d, "property", json_string(key));
    json_object_set(d, "value", v);
    json_decref(all);
  } else {
    json_object_set_new(d, "properties", all);
  }
  return d;
}

/* data.index (Player's index into an array property): 1 with *i, 0 absent,
 * -1 (error set); only with a property, and only an array one. */
static int prop_index(jctx *x, const char *prop, long long *i) {
  int r = pa_json_int(x, "index", 0, 3, i);
  if (r <= 0)
    return r;
  if (!prop) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.index needs data.property (an array property)");
    return -1;
  }
  int row = pa_prop_find(prop, PA_PK_ROBOT | PA_PK_OBSTACLE);
  const pa_prop_def *p = row >= 0 ? pa_prop((pa_prop_row)row) : NULL;
  if (p && p->type != PA_PT_COLOUR && p->type != PA_PT_SIZE) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "property '%s' is not an array: data.index applies to "
                 "colour [r, g, b, a] and size [x, y]",
                 prop);
    return -1;
  }
  if (p && p->type == PA_PT_SIZE && *i > 1) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.index %lld is out of range for size [x, y] (0 or 1)",
                 *i);
    return -1;
  }
  return 1;
}

json_t *pa_json_act_get_property(jctx *x) {
  pa_json_obj o;
  const char *only = NULL;
  long long index = 0;
  int hi;
  if (pa_json_named_object(x, &o) < 0 ||
      pa_json_str(x, "property", 32, &only) < 0 ||
      (hi = prop_index(x, only, &index)) < 0)
    return NULL;
  json_t *d = props_reply(x, o.kind, &o.ri, &o.oi, o.idx, only);
  if (d && hi) {
    json_t *v = json_object_get(d, "value");
    if (!json_is_array(v) || (size_t)index >= json_array_size(v)) {
      json_decref(d);
      return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                          "property '%s' has no element %lld", only, index);
    }
    json_object_set(d, "value", json_array_get(v, (size_t)index));
    json_object_set_new(d, "index", json_integer(index));
  }
  return d;
}

json_t *pa_json_act_set_property(jctx *x) {
  pa_json_obj o;
  const char *key = NULL;
  if (pa_json_named_object(x, &o) < 0)
    return NULL;
  int r = pa_json_str(x, "property", 32, &key);
  if (r == 0)
    pa_json_fail(
        x, PA_ERR_INVALID_MESSAGE,
        "data.property is required (one property per request; use a batch "
        "for several)");
  if (r <= 0)
    return NULL;
  unsigned pk = o.kind == P_ROBOT ? PA_PK_ROBOT : PA_PK_OBSTACLE;
  int row = pa_prop_find(key, pk);
  if (row < 0 && pa_prop_find(key, PA_PK_ROBOT | PA_PK_OBSTACLE) >= 0)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "property '%s' is not one of %s", key,
                        o.kind == P_ROBOT ? "a robot's" : "an obstacle's");
  if (row < 0)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "unknown property '%s' (see get_property)", key);
  const pa_prop_def *p = pa_prop((pa_prop_row)row);
  if ((p->kinds & PA_PK_RO) || p->wire == PA_PROP_NONE)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE, "property '%s' is read-only",
                        key);
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_SET_PROPERTY;
  cmd.prop.prop = p->wire;
  size_t n = 0;
  long long index = 0;
  int hi = prop_index(x, key, &index);
  if (hi < 0)
    return NULL;
  json_t *v = json_object_get(x->data, "value");
  if (hi) {
    /* One element: the others stay as they are now. */
    if (!v || !json_is_number(v) || !isfinite(json_number_value(v)))
      return pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                          "data.value must be a finite number with data.index");
    json_t *all =
        o.kind == P_ROBOT ? robot_props(&o.ri) : obstacle_props(&o.oi);
    json_t *cur = json_object_get(all, p->name);
    n = json_array_size(cur);
    for (size_t i = 0; i < n && i < 4; i++)
      cmd.prop.v[i] = json_number_value(json_array_get(cur, i));
    json_decref(all);
    if ((size_t)index >= n)
      return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                          "property '%s' has no element %lld", key, index);
    cmd.prop.v[index] = json_number_value(v);
  } else if (p->type == PA_PT_NUM || p->type == PA_PT_INT) {
    if (!v || !json_is_number(v) || !isfinite(json_number_value(v)))
      return pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                          "data.value must be a finite number for '%s'", key);
    cmd.prop.v[0] = json_number_value(v);
    n = 1;
  } else if (p->type == PA_PT_WORD) { /* dynamics: a word */
    const char *w = v && json_is_string(v) ? json_string_value(v) : NULL;
    int k = w ? pa_prop_word((pa_prop_row)row, w) : -1;
    if (k < 0)
      return pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                          "data.value for '%s' must be \"%s\" or \"%s\"", key,
                          pa_prop_word_name((pa_prop_row)row, 0),
                          pa_prop_word_name((pa_prop_row)row, 1));
    cmd.prop.v[0] = k;
    n = 1;
  } else if (p->type == PA_PT_COLOUR) {
    r = pa_json_vec(x, "value", 3, 4, cmd.prop.v, &n);
    if (r == 0)
      return pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                          "data.value must be [r, g, b] or [r, g, b, a] "
                          "(0..255)");
    if (r < 0)
      return NULL;
    if (n == 3)
      cmd.prop.v[n++] = 255;
  } else {
    r = pa_json_vec(x, "value", 2, 0, cmd.prop.v, &n);
    if (r == 0)
      return pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                          "data.value must be an array of 2 numbers");
    if (r < 0)
      return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    char what[48];
    if (n > 1)
      snprintf(what, sizeof what, "%s[%zu]", p->name, i);
    else
      snprintf(what, sizeof what, "%s", p->name);
    if (!pa_json_prop_in(x, row, what, cmd.prop.v[i]))
      return NULL;
  }
  if (o.kind == P_OBSTACLE) {
    snprintf(cmd.name, sizeof cmd.name, "%s", o.oi.name);
    return pa_json_wait_for_sim(x, &cmd, UINT32_MAX);
  }
  return pa_json_wait_for_sim(x, &cmd, o.idx);
}

json_t *pa_json_done_set_property(jctx *x, const pa_reply *r) {
  /* The object as the sim published it (before its reply). */
  pa_client *c = x->c;
  bool obstacle = c->pend_robot == UINT32_MAX;
  pa_robot_info ri;
  pa_obstacle_info oi;
  uint32_t idx = 0;
  const char *key = json_string_value(json_object_get(x->data, "property"));
  int rc = obstacle
               ? pa_gw_obstacle(
                     c->g, json_string_value(json_object_get(x->data, "name")),
                     &oi, &idx)
               : pa_gw_robot(c->g, NULL, (long)c->pend_robot, &ri, &idx);
  if (rc != 0) {
    if (!pa_json_lookup_busy(x, rc))
      pa_json_fail(x, obstacle ? PA_ERR_UNKNOWN_OBJECT : PA_ERR_UNKNOWN_ROBOT,
                   "the %s is gone", obstacle ? "obstacle" : "robot");
    return NULL;
  }
  json_t *d =
      props_reply(x, obstacle ? P_OBSTACLE : P_ROBOT, &ri, &oi, idx, key);
  if (d)
    json_object_set_new(d, "tick", json_integer((json_int_t)r->tick));
  return d;
}
