/* foxglove_svc.c - what Foxglove clients send: subscriptions, their own
 * channels (a Twist on /<robot>/cmd_vel drives it), service calls (reset,
 * pause, resume, step, teleport) and parameters. */
#define _GNU_SOURCE
#include "foxglove_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- services ------------------------------------------------------ */

static void send_service_response(fox_conn *c, uint32_t service, uint32_t call,
                                  const char *json) {
  size_t jl = strlen(json);
  uint8_t *m = malloc(17 + jl);
  if (!m)
    return;
  m[0] = 0x03;
  le32(m + 1, service);
  le32(m + 5, call);
  le32(m + 9, 4);
  memcpy(m + 13, "json", 4);
  memcpy(m + 17, json, jl);
  if (pa_ws_send_binary(c->ws, m, 17 + jl) != 0)
    c->dropped++;
  free(m);
}

static void service_failure(fox_conn *c, uint32_t service, uint32_t call,
                            const char *msg) {
  pa_fox_send_json(c,
                   json_pack("{s:s, s:i, s:i, s:s}", "op", "serviceCallFailure",
                             "serviceId", (json_int_t)service, "callId",
                             (json_int_t)call, "message", msg));
}

/* A service call's tag for pa_core_ask: its connection (slot, the low 24
 * bits of its generation), service and call id. */
static uint64_t call_tag(const fox_conn *c, uint32_t service, uint32_t call) {
  return (uint64_t)(c->gen & 0xffffff) << 40 | (uint64_t)call << 8 |
         (uint64_t)service << 5 | c->slot;
}

/* pa-sim's answer to a service call (r NULL: none in time). */
static void call_done(pa_netgw *g, void *arg, uint64_t tag, const pa_reply *r,
                      pa_status st, const char *msg) {
  (void)arg;
  pa_fox *f = g->fox;
  if (!f)
    return; /* the server stopped */
  f->n_calls--;
  uint32_t slot = tag & 31, service = (tag >> 5) & 7;
  uint32_t call = (uint32_t)(tag >> 8), gen = (uint32_t)(tag >> 40);
  fox_conn *c = f->conns[slot];
  if (!c || (c->gen & 0xffffff) != gen)
    return; /* its client left */
  if (!r || st != PA_OK) {
    service_failure(c, service, call, msg);
    return;
  }
  char js[160];
  snprintf(js, sizeof js,
           "{\"success\":true,\"message\":\"\",\"tick\":%" PRIu64
           ",\"sim_time\":%.9g}",
           r->tick, r->sim_time);
  send_service_response(c, service, call, js);
}

static void service_call(fox_conn *c, const uint8_t *d, size_t n) {
  pa_fox *f = c->f;
  if (n < 13) {
    pa_fox_status(c, 2, "service call: %zu bytes is too short", n);
    return;
  }
  uint32_t service = rd32(d + 1), call = rd32(d + 5), el = rd32(d + 9);
  if (el > n - 13) {
    pa_fox_status(c, 2, "service call: bad encoding length");
    return;
  }
  const char *payload = (const char *)d + 13 + el;
  size_t pl = n - 13 - el;
  if (service < 1 || service >= SRV_N) {
    service_failure(c, service, call, "no such service");
    return;
  }
  /* the services are advertised with the json encoding only */
  const char *enc = (const char *)d + 13;
  if (el != 4 || memcmp(enc, "json", 4)) {
    char why[120];
    snprintf(why, sizeof why,
             "encoding '%.*s' is not supported: only json (as advertised)",
             (int)(el < 40 ? el : 40), enc);
    service_failure(c, service, call, why);
    return;
  }
  json_error_t je;
  json_t *req = pl ? json_loadb(payload, pl, 0, &je) : json_object();
  if (!req || !json_is_object(req)) {
    json_decref(req);
    service_failure(c, service, call,
                    "the request must be a JSON object (encoding json)");
    return;
  }
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  char err[160] = "";
  switch (service) {
  case SRV_RESET:
    cmd.op = PA_OP_RESET;
    break;
  case SRV_PAUSE:
    cmd.op = PA_OP_PAUSE;
    break;
  case SRV_RESUME:
    cmd.op = PA_OP_RESUME;
    break;
  case SRV_STEP: {
    json_t *s = json_object_get(req, "steps");
    json_int_t steps =
        s ? (json_is_integer(s) ? json_integer_value(s) : -1) : 1;
    if (steps < 1 || steps > PA_NETGW_STEP_MAX)
      snprintf(err, sizeof err, "steps must be an integer in [1, %u]",
               PA_NETGW_STEP_MAX);
    cmd.op = PA_OP_STEP;
    cmd.step.ticks = (uint32_t)steps;
    break;
  }
  case SRV_TELEPORT: {
    json_t *rb = json_object_get(req, "robot");
    pa_robot_info info;
    uint32_t idx = 0;
    int rc =
        json_is_string(rb)
            ? pa_gw_robot(f->g, json_string_value(rb), -1, &info, &idx)
        : json_is_integer(rb)
            ? pa_gw_robot(f->g, NULL, (long)json_integer_value(rb), &info, &idx)
        : !rb ? pa_gw_robot(f->g, NULL, 0, &info, &idx)
              : -1;
    double v[3];
    const char *keys[3] = {"x", "y", "theta"};
    for (int i = 0; i < 3; i++) {
      json_t *x = json_object_get(req, keys[i]);
      v[i] = json_is_number(x) ? json_number_value(x) : NAN;
      if (i == 2 && !x)
        v[i] = 0;
      if (!isfinite(v[i]) && !err[0])
        snprintf(err, sizeof err, "%s must be a finite number", keys[i]);
    }
    if (rc != 0 && !err[0])
      snprintf(err, sizeof err, "robot: no such robot");
    cmd.op = PA_OP_TELEPORT;
    cmd.robot = idx;
    cmd.pose.x = v[0];
    cmd.pose.y = v[1];
    cmd.pose.theta = v[2];
    break;
  }
  }
  json_decref(req);
  if (err[0]) {
    service_failure(c, service, call, err);
    return;
  }
  if (f->n_calls >= FOX_MAX_CALLS) {
    service_failure(c, service, call, "busy: too many service calls waiting");
    return;
  }
  if (pa_core_ask(f->g, PA_LIM_SRC_CLIENT, &cmd, 1,
                  f->g->def.request_timeout_ms, call_done, NULL,
                  call_tag(c, service, call), err, sizeof err) != 0) {
    service_failure(c, service, call, err);
    return;
  }
  f->n_calls++;
}

void pa_fox_advertise_services(fox_conn *c) {
  static const char *const req_schema[SRV_N] = {
      NULL,
      "{}",
      "{}",
      "{}",
      "{\"type\":\"object\",\"properties\":{\"steps\":{\"type\":\"integer\","
      "\"minimum\":1}}}",
      "{\"type\":\"object\",\"properties\":{\"robot\":{\"type\":[\"string\","
      "\"integer\"]},\"x\":{\"type\":\"number\"},\"y\":{\"type\":\"number\"},"
      "\"theta\":{\"type\":\"number\"}},\"required\":[\"x\",\"y\"]}"};
  const char *resp =
      "{\"type\":\"object\",\"properties\":{\"success\":{\"type\":\"boolean\"},"
      "\"message\":{\"type\":\"string\"},\"tick\":{\"type\":\"integer\"},"
      "\"sim_time\":{\"type\":\"number\"}}}";
  json_t *srvs = json_array();
  for (int s = 1; s < SRV_N; s++) {
    char type[64];
    snprintf(type, sizeof type, "playarea%s", srv_names[s]);
    char req_name[80], resp_name[80];
    snprintf(req_name, sizeof req_name, "%s_Request", type);
    snprintf(resp_name, sizeof resp_name, "%s_Response", type);
    json_array_append_new(
        srvs,
        json_pack("{s:i, s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:{s:s, s:s, s:s, "
                  "s:s}, s:s, s:s}",
                  "id", s, "name", srv_names[s], "type", type, "request",
                  "encoding", "json", "schemaName", req_name, "schemaEncoding",
                  "jsonschema", "schema", req_schema[s], "response", "encoding",
                  "json", "schemaName", resp_name, "schemaEncoding",
                  "jsonschema", "schema", resp, "requestSchema", req_schema[s],
                  "responseSchema", resp));
  }
  pa_fox_send_json(
      c, json_pack("{s:s, s:o}", "op", "advertiseServices", "services", srvs));
}

/* ---- client messages ----------------------------------------------- */

static bool chan_exists(pa_fox *f, uint32_t id) {
  for (int k = 0; k < PA_FOX_WORLD_KINDS; k++)
    if (!pa_fox_rec_only(k) && pa_fox_world_chan[k] == id)
      return true;
  for (uint32_t r = 0; r < f->g->ctl->def.max_robots; r++)
    for (int k = 0; f->robots[r].live && k < PA_FOX_ROBOT_KINDS; k++)
      if (f->robots[r].chan[k] == id)
        return true;
  return false;
}

/* Protocol ids are uint32: a JSON integer outside that would wrap onto
 * another id. */
static bool json_u32(json_t *v, uint32_t *out) {
  if (!json_is_integer(v) || json_integer_value(v) < 0 ||
      json_integer_value(v) > (json_int_t)UINT32_MAX)
    return false;
  *out = (uint32_t)json_integer_value(v);
  return true;
}

static void on_subscribe(fox_conn *c, json_t *subs) {
  pa_fox *f = c->f;
  size_t i;
  json_t *s;
  json_array_foreach(subs, i, s) {
    json_t *id = json_object_get(s, "id"),
           *ch = json_object_get(s, "channelId");
    uint32_t sid, cid;
    if (!json_u32(id, &sid) || !json_u32(ch, &cid)) {
      pa_fox_status(c, 2,
                    "subscribe: each subscription needs integer id and "
                    "channelId (0..4294967295)");
      continue;
    }
    if (!chan_exists(f, cid)) {
      pa_fox_status(c, 1, "subscribe: no channel %u", cid);
      continue;
    }
    bool dup = false;
    for (uint32_t k = 0; k < c->n_subs; k++)
      dup |= c->subs[k].sub == sid;
    if (dup) {
      pa_fox_status(c, 1, "subscribe: subscription id %u is in use", sid);
      continue;
    }
    if (c->n_subs == FOX_MAX_SUBS) {
      pa_fox_status(c, 2, "subscribe: at most %d subscriptions", FOX_MAX_SUBS);
      break;
    }
    c->subs[c->n_subs].sub = sid;
    c->subs[c->n_subs].chan = cid;
    c->n_subs++;
    if (cid == pa_fox_world_chan[PA_FOX_MAP])
      f->map_dirty = true; /* the new subscriber gets the map now */
    if (cid == pa_fox_world_chan[PA_FOX_SCENE])
      f->scene_dirty = true;
  }
  pa_fox_cam_update(f);
}

static void on_unsubscribe(fox_conn *c, json_t *ids) {
  size_t i;
  json_t *v;
  json_array_foreach(ids, i, v) {
    uint32_t sid;
    if (!json_u32(v, &sid))
      continue;
    for (uint32_t k = 0; k < c->n_subs; k++)
      if (c->subs[k].sub == sid) {
        c->subs[k] = c->subs[--c->n_subs];
        break;
      }
  }
  pa_fox_cam_update(c->f);
}

static void on_client_advertise(fox_conn *c, json_t *chans) {
  size_t i;
  json_t *ch;
  json_array_foreach(chans, i, ch) {
    json_t *id = json_object_get(ch, "id"),
           *topic = json_object_get(ch, "topic"),
           *enc = json_object_get(ch, "encoding");
    uint32_t cid;
    if (!json_u32(id, &cid) || !json_is_string(topic)) {
      pa_fox_status(c, 2,
                    "advertise: each channel needs integer id (0..4294967295) "
                    "and topic");
      continue;
    }
    if (!json_is_string(enc) || strcmp(json_string_value(enc), "json")) {
      pa_fox_status(c, 2, "advertise %s: only the json encoding is supported",
                    json_string_value(topic));
      continue;
    }
    bool dup = false;
    for (uint32_t k = 0; k < c->n_pubs; k++)
      dup |= c->pubs[k].id == cid;
    if (dup) {
      /* a second topic on one id would never get a message */
      pa_fox_status(c, 2, "advertise %s: channel id %u is in use",
                    json_string_value(topic), cid);
      continue;
    }
    if (c->n_pubs == FOX_MAX_PUBS) {
      pa_fox_status(c, 2, "advertise: at most %d client channels",
                    FOX_MAX_PUBS);
      break;
    }
    c->pubs[c->n_pubs].id = cid;
    snprintf(c->pubs[c->n_pubs].topic, sizeof c->pubs[0].topic, "%s",
             json_string_value(topic));
    c->n_pubs++;
  }
}

static void on_client_unadvertise(fox_conn *c, json_t *ids) {
  size_t i;
  json_t *v;
  json_array_foreach(ids, i, v) {
    uint32_t cid;
    for (uint32_t k = 0; json_u32(v, &cid) && k < c->n_pubs; k++)
      if (c->pubs[k].id == cid) {
        c->pubs[k] = c->pubs[--c->n_pubs];
        break;
      }
  }
}

static double twist_part(json_t *j, const char *part, const char *axis) {
  json_t *v = json_object_get(json_object_get(j, part), axis);
  return v ? (json_is_number(v) ? json_number_value(v) : NAN) : 0;
}

/* A Twist the robot cannot follow as sent: a warning status saying what
 * happens (sideways on a differential robot: ignored; beyond the robot's
 * limits: pa-sim clamps); the same one at most once a second per client. */
static void twist_warn(fox_conn *c, const char *topic, const pa_robot_info *ri,
                       const pa_cmd_drive *d, double vy) {
  char why[200] = "";
  int kind = 0; /* which warning: the same one is not repeated within 1 s */
  if (vy != 0 && ri->drive != PA_DRIVE_OMNI) {
    kind = 1;
    snprintf(why, sizeof why,
             "linear.y %.4g ignored: the robot is differential (no sideways "
             "motion)",
             vy);
  } else if (fabs(d->v) > ri->max_v) {
    kind = 2;
    snprintf(why, sizeof why, "linear.x %.4g clamped to the robot's max_v %.4g",
             d->v, (double)ri->max_v);
  } else if (ri->drive == PA_DRIVE_OMNI && fabs(d->vy) > ri->max_vy) {
    kind = 3;
    snprintf(why, sizeof why,
             "linear.y %.4g clamped to the robot's max_vy %.4g", d->vy,
             (double)ri->max_vy);
  } else if (fabs(d->w) > ri->max_w) {
    kind = 4;
    snprintf(why, sizeof why,
             "angular.z %.4g clamped to the robot's max_w %.4g", d->w,
             (double)ri->max_w);
  }
  int64_t now = pa_now_ns();
  if (!kind || (kind == c->warn_kind && now - c->warn_ns < 1000000000LL))
    return;
  c->warn_ns = now;
  c->warn_kind = kind;
  pa_fox_status(c, 1, "%s: %s", topic, why);
}

/* A client message: a Twist on /<robot>/cmd_vel drives that robot. */
static void on_client_data(fox_conn *c, const uint8_t *d, size_t n) {
  if (n < 5)
    return;
  uint32_t id = rd32(d + 1);
  const char *topic = NULL;
  for (uint32_t k = 0; k < c->n_pubs && !topic; k++)
    if (c->pubs[k].id == id)
      topic = c->pubs[k].topic;
  if (!topic) {
    pa_fox_status(c, 2, "message on channel %u, which was not advertised", id);
    return;
  }
  char robot[40];
  const char *slash = strchr(topic + 1, '/');
  if (topic[0] != '/' || !slash || strcmp(slash, "/cmd_vel") ||
      (size_t)(slash - topic - 1) >= sizeof robot) {
    pa_fox_status(c, 1, "%s: only /<robot>/cmd_vel (a Twist) is accepted",
                  topic);
    return;
  }
  snprintf(robot, sizeof robot, "%.*s", (int)(slash - topic - 1), topic + 1);
  pa_robot_info info;
  uint32_t idx;
  if (pa_gw_robot(c->f->g, robot, -1, &info, &idx) != 0) {
    pa_fox_status(c, 2, "%s: no robot named %s", topic, robot);
    return;
  }
  json_error_t je;
  json_t *j = json_loadb((const char *)d + 5, n - 5, 0, &je);
  if (!json_is_object(j)) {
    json_decref(j);
    pa_fox_status(c, 2, "%s: not a JSON object: %s", topic, je.text);
    return;
  }
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_SET_CMD;
  cmd.robot = idx;
  cmd.flags = PA_CMDF_NO_REPLY;
  cmd.drive.v = twist_part(j, "linear", "x");
  double vy = twist_part(j, "linear", "y");
  cmd.drive.vy = info.drive == PA_DRIVE_OMNI ? vy : 0;
  cmd.drive.w = twist_part(j, "angular", "z");
  cmd.drive.frame = PA_FRAME_ROBOT;
  json_decref(j);
  const char *bad = pa_cmd_drive_error(&cmd.drive);
  if (bad) {
    pa_fox_status(c, 2, "%s: %s", topic, bad);
    return;
  }
  twist_warn(c, topic, &info, &cmd.drive, vy);
  char err[160];
  if (pa_core_ask(c->f->g, PA_LIM_SRC_CLIENT, &cmd, 1, 0, NULL, NULL, 0, err,
                  sizeof err) != 0)
    pa_fox_status(c, 1, "%s: %s", topic, err);
}

/* ---- parameters: the sim's time scale and pause, and read-only rates --- */

static json_t *param_value(pa_fox *f, const char *name) {
  const pa_tick *t = pa_gw_latest(f->g);
  if (!strcmp(name, "/time_scale"))
    return json_real(t ? t->speed : 1);
  if (!strcmp(name, "/paused"))
    return json_boolean(t && (t->flags & PA_TICK_PAUSED));
  if (!strcmp(name, "/control_hz"))
    return json_real(f->g->ctl->control_hz);
  if (!strcmp(name, "/scan_hz"))
    return json_real(f->g->ctl->scan_hz);
  if (!strcmp(name, "/robot_count"))
    return json_integer(f->g->ctl->robot_count);
  return NULL;
}

static const char *const param_names[] = {
    "/time_scale", "/paused", "/control_hz", "/scan_hz", "/robot_count"};

static void send_params(fox_conn *c, json_t *names, json_t *id,
                        json_t *override) {
  json_t *out = json_array();
  size_t n = json_is_array(names) && json_array_size(names)
                 ? json_array_size(names)
                 : sizeof param_names / sizeof param_names[0];
  for (size_t i = 0; i < n; i++) {
    const char *name = json_is_array(names) && json_array_size(names)
                           ? json_string_value(json_array_get(names, i))
                           : param_names[i];
    json_t *v = name ? json_object_get(override, name) : NULL;
    v = v ? json_incref(v) : (name ? param_value(c->f, name) : NULL);
    if (v)
      json_array_append_new(out,
                            json_pack("{s:s, s:o}", "name", name, "value", v));
  }
  json_t *m =
      json_pack("{s:s, s:o}", "op", "parameterValues", "parameters", out);
  if (json_is_string(id))
    json_object_set(m, "id", id);
  pa_fox_send_json(c, m);
}

/* setParameters: /time_scale and /paused go to pa-sim (applied on its next
 * tick; the answer gives the values as requested); the others are
 * read-only. */
static void on_set_params(fox_conn *c, json_t *params, json_t *id) {
  json_t *names = json_array(), *done = json_object();
  size_t i;
  json_t *p;
  json_array_foreach(params, i, p) {
    const char *name = json_string_value(json_object_get(p, "name"));
    json_t *v = json_object_get(p, "value");
    pa_cmd cmd;
    memset(&cmd, 0, sizeof cmd);
    if (name && !strcmp(name, "/time_scale") && json_is_number(v) &&
        json_number_value(v) >= 0 &&
        json_number_value(v) <= PA_NETGW_SPEED_MAX) {
      cmd.op = PA_OP_SPEED;
      cmd.speed.factor = json_number_value(v);
    } else if (name && !strcmp(name, "/paused") && json_is_boolean(v)) {
      cmd.op = json_is_true(v) ? PA_OP_PAUSE : PA_OP_RESUME;
    } else {
      pa_fox_status(c, 2,
                    "setParameters %s: only /time_scale (0..%g) and /paused "
                    "(boolean) can be set",
                    name ? name : "?", PA_NETGW_SPEED_MAX);
      continue;
    }
    char err[160];
    if (pa_core_ask(c->f->g, PA_LIM_SRC_CLIENT, &cmd, 1, 0, NULL, NULL, 0, err,
                    sizeof err) != 0) {
      pa_fox_status(c, 1, "setParameters %s: %s", name, err);
      continue;
    }
    json_array_append_new(names, json_string(name));
    json_object_set(done, name, v);
  }
  if (id && json_array_size(names))
    send_params(c, names, id, done);
  json_decref(names);
  json_decref(done);
}

void pa_fox_on_text(struct pa_ws *ws, const char *data, size_t len, void *arg) {
  (void)ws;
  fox_conn *c = arg;
  int64_t t0 = pa_now_ns();
  c->active_ns = t0;
  json_error_t je;
  json_t *j = json_loadb(data, len, 0, &je);
  const char *op = json_string_value(json_object_get(j, "op"));
  if (!op) {
    pa_fox_status(c, 2, "not a JSON object with an op: %s",
                  j ? "no op" : je.text);
  } else if (!strcmp(op, "subscribe")) {
    on_subscribe(c, json_object_get(j, "subscriptions"));
  } else if (!strcmp(op, "unsubscribe")) {
    on_unsubscribe(c, json_object_get(j, "subscriptionIds"));
  } else if (!strcmp(op, "advertise")) {
    on_client_advertise(c, json_object_get(j, "channels"));
  } else if (!strcmp(op, "unadvertise")) {
    on_client_unadvertise(c, json_object_get(j, "channelIds"));
  } else if (!strcmp(op, "getParameters")) {
    send_params(c, json_object_get(j, "parameterNames"),
                json_object_get(j, "id"), NULL);
  } else if (!strcmp(op, "setParameters")) {
    on_set_params(c, json_object_get(j, "parameters"),
                  json_object_get(j, "id"));
  } else {
    pa_fox_status(c, 1, "op %s is not supported by this server", op);
  }
  json_decref(j);
  pa_fox_arm(c->f);
  pa_gw_account(c->f->g, t0);
}

void pa_fox_on_binary(struct pa_ws *ws, const uint8_t *data, size_t len,
                      void *arg) {
  (void)ws;
  fox_conn *c = arg;
  int64_t t0 = pa_now_ns();
  c->active_ns = t0;
  if (len && data[0] == 0x01)
    on_client_data(c, data, len);
  else if (len && data[0] == 0x02)
    service_call(c, data, len);
  else
    pa_fox_status(c, 2, "unknown binary opcode %u", len ? data[0] : 0);
  pa_gw_account(c->f->g, t0);
}

void pa_fox_on_close(struct pa_ws *ws, void *arg) {
  (void)ws;
  fox_conn *c = arg;
  pa_fox *f = c->f;
  f->conns[c->slot] = NULL;
  f->n_conns--;
  free(c);
  pa_fox_cam_update(f);
}

/* ---- connection limits ---------------------------------------------- */

/* A free connection slot for addr, or FOX_MAX_CONNS: one address holds at
 * most --max_clients_per_peer, and the last FOX_RESERVE_CONNS only go to
 * an address holding none. */
uint32_t pa_fox_conn_slot(pa_fox *f, uint32_t addr, const char **why) {
  uint32_t same = 0, slot = FOX_MAX_CONNS;
  for (uint32_t i = 0; i < FOX_MAX_CONNS; i++) {
    if (!f->conns[i] && slot == FOX_MAX_CONNS)
      slot = i;
    same += f->conns[i] && f->conns[i]->addr == addr;
  }
  unsigned cap = f->g->def.max_clients_per_peer;
  *why = "too many Foxglove clients";
  if (cap && same >= cap) {
    *why = "too many Foxglove connections from this address";
    pa_lim_count(f->g, PA_LIM_PEER_CAP);
    return FOX_MAX_CONNS;
  }
  if (slot != FOX_MAX_CONNS && same > 0 &&
      f->n_conns >= FOX_MAX_CONNS - FOX_RESERVE_CONNS)
    slot = FOX_MAX_CONNS; /* the reserve is for someone else */
  if (slot == FOX_MAX_CONNS && (!cap || same < cap))
    pa_lim_count(f->g, PA_LIM_SLOTS);
  return slot;
}

/* Connections that subscribed to nothing and sent nothing for the idle
 * timeout go, so that idle ones cannot hold every slot. */
void pa_fox_close_idle(pa_fox *f, int64_t now) {
  int64_t lim = (int64_t)f->g->def.idle_timeout_ms * 1000000;
  if (!lim)
    return;
  for (uint32_t i = 0; i < FOX_MAX_CONNS; i++) {
    fox_conn *c = f->conns[i];
    if (c && !c->n_subs && !c->n_pubs && now - c->active_ns > lim) {
      c->active_ns = now; /* once: the close handshake follows */
      pa_lim_count(f->g, PA_LIM_IDLE);
      pa_ws_close(c->ws, 1008, "idle: no subscription or message");
    }
  }
}
