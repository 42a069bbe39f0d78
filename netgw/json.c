/* json.c - JSON lines (PROTOCOL.md section 3): envelope, typed responses,
 * errors, batches, and every action whose simulator side exists. A request
 * that needs pa-sim leaves the client waiting; pa_json_complete() finishes
 * it (and the rest of a batch) when the reply or the timeout comes. */
#define _GNU_SOURCE
#include "netgw_int.h"
#include "pa_map.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(12))

enum {
  A_NONE = -1,
  A_GET_STATE,
  A_GET_SENSORS,
  A_STEP,
  A_SET_VELOCITY,
  A_SET_VELOCITY_LOCAL,
  A_SET_VELOCITY_GLOBAL,
  A_STOP,
  A_GET_POSE,
  A_SET_POSE,
  A_SUBSCRIBE,
  A_UNSUBSCRIBE,
  A_LIST_ROBOTS,
  A_SPAWN_ROBOT,
  A_REMOVE_ROBOT,
  A_SPAWN_OBSTACLE,
  A_REMOVE_OBSTACLE,
  A_LIST_OBSTACLES,
  A_GET_MAP_INFO,
  A_GET_TERRAIN_GRID,
  A_AUTH,
  A_PING,
  A_PAUSE,
  A_RESUME,
  A_STEP_N,
  A_RESET,
  A_SET_TIME_SCALE,
  A_GET_STATUS,
  A_GET_PROPERTY,
  A_SET_PROPERTY,
  A_SAVE_SNAPSHOT,
  A_LOAD_SNAPSHOT,
  A_SET_WHEELS,
  A_SET_MAP,
  A_GENERATE_MAP,
  A_SET_SCENARIO,
  A_SET_NAV_PATH,
  A_SET_WAYPOINTS,
  A_CLEAR_NAV,
  A_EXPORT_DATASET,
  A_COUNT
};

static const char *const action_names[A_COUNT] = {
    "get_state",         "get_sensors",     "step",
    "set_velocity",      "set_velocity_local", "set_velocity_global",
    "stop",              "get_pose",        "set_pose",
    "subscribe",         "unsubscribe",     "list_robots",
    "spawn_robot",       "remove_robot",    "spawn_obstacle",
    "remove_obstacle",   "list_obstacles",  "get_map_info",
    "get_terrain_grid",  "auth",              "ping",            "pause",
    "resume",            "step_n",          "reset",
    "set_time_scale",    "get_status",      "get_property",
    "set_property",      "save_snapshot",   "load_snapshot",
    "set_wheels",        "set_map",         "generate_map",
    "set_scenario",      "set_nav_path",    "set_waypoints",
    "clear_nav",         "export_dataset",
};

/* Address used as "this request now waits for pa-sim". */
static char pending_tag;
#define JPENDING ((json_t *)(void *)&pending_tag)

typedef struct jctx {
  pa_client *c;
  json_t *req;
  json_t *data; /* request data (borrowed), an object */
  int action;
  pa_status st;
  char msg[256];
} jctx;

static json_t *jfail(jctx *x, pa_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static json_t *jfail(jctx *x, pa_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(x->msg, sizeof x->msg, fmt, ap);
  va_end(ap);
  x->st = st;
  return NULL;
}

static double now_sim_time(pa_netgw *g) {
  const pa_tick *t = pa_gw_latest(g);
  return t ? t->sim_time : 0.0;
}

#define SPLICE_TAG "@@pa-ranges-"

/* A placeholder string for these ranges, or NULL when out of memory. */
static json_t *ranges_placeholder(pa_client *c, const float *r, uint32_t n) {
  if (c->n_spl == c->cap_spl) {
    size_t cap = c->cap_spl ? c->cap_spl * 2 : 4;
    pa_splice *ns = realloc(c->spl, cap * sizeof *ns);
    if (!ns)
      return NULL;
    c->spl = ns;
    c->cap_spl = cap;
  }
  float *copy = malloc((size_t)(n ? n : 1) * sizeof *copy);
  if (!copy)
    return NULL;
  memcpy(copy, r, (size_t)n * sizeof *copy);
  c->spl[c->n_spl].r = copy;
  c->spl[c->n_spl].n = n;
  char tag[64];
  snprintf(tag, sizeof tag, SPLICE_TAG "%016" PRIx64 "-%zu@@",
           c->g->splice_nonce, c->n_spl++);
  return json_string(tag);
}

static void splices_free(pa_client *c) {
  for (size_t i = 0; i < c->n_spl; i++)
    free(c->spl[i].r);
  free(c->spl);
  c->spl = NULL;
  c->n_spl = c->cap_spl = 0;
}

/* A range as JSON, rounded to a micrometre: "3.5", "12", "0.000125". */
static size_t fmt_range(char *out, float f) {
  double d = (double)f;
  if (!isfinite(d) || fabs(d) > 1e9) {
    memcpy(out, "null", 4);
    return 4;
  }
  char *p = out;
  long long q = llround(d * 1e6);
  if (q < 0) {
    *p++ = '-';
    q = -q;
  }
  long long ip = q / 1000000, fp = q % 1000000;
  char tmp[24];
  int k = 0;
  do {
    tmp[k++] = (char)('0' + ip % 10);
    ip /= 10;
  } while (ip);
  while (k)
    *p++ = tmp[--k];
  if (fp) {
    *p++ = '.';
    char frac[6];
    for (int i = 5; i >= 0; i--) {
      frac[i] = (char)('0' + fp % 10);
      fp /= 10;
    }
    int last = 5;
    while (frac[last] == '0')
      last--;
    memcpy(p, frac, (size_t)last + 1);
    p += last + 1;
  }
  return (size_t)(p - out);
}

/* ---- envelope ------------------------------------------------------------*/

static void echo_id(json_t *out, const json_t *req) {
  json_t *id = req && json_is_object(req) ? json_object_get(req, "request_id")
                                          : NULL;
  if (id && (json_is_string(id) || json_is_integer(id) || json_is_real(id)))
    json_object_set(out, "request_id", id);
}

static json_t *envelope_ok(const json_t *req, int action, json_t *data,
                           double sim_time) {
  bool state = action == A_GET_STATE || action == A_GET_SENSORS ||
               action == A_STEP;
  json_t *o = json_object();
  json_object_set_new(o, "type", json_string(state ? "state" : "response"));
  json_object_set_new(o, "protocol_version", json_integer(2));
  echo_id(o, req);
  json_object_set_new(o, "action", json_string(action_names[action]));
  json_object_set_new(o, "status", json_string("ok"));
  json_object_set_new(o, "success", json_true());
  json_object_set_new(o, "sim_time", json_real(sim_time));
  json_object_set_new(o, "data", data ? data : json_object());
  return o;
}

static json_t *envelope_err(const json_t *req, const char *action,
                            pa_status st, const char *msg, double sim_time) {
  json_t *o = json_object();
  json_object_set_new(o, "type", json_string("error"));
  json_object_set_new(o, "protocol_version", json_integer(2));
  echo_id(o, req);
  if (action)
    json_object_set_new(o, "action", json_string(action));
  json_object_set_new(o, "status", json_string("error"));
  json_object_set_new(o, "success", json_false());
  json_object_set_new(o, "sim_time", json_real(sim_time));
  json_t *e = json_object();
  json_object_set_new(e, "code", json_string(pa_status_code(st)));
  json_object_set_new(e, "message", json_string(msg));
  json_object_set_new(o, "error", e);
  return o;
}

/* Room for n more bytes in the growing reply *buf: 0, or -1 (no memory). */
static int buf_reserve(char **buf, size_t len, size_t *cap, size_t n) {
  if (len + n <= *cap)
    return 0;
  size_t nc = *cap ? *cap : 4096;
  while (nc < len + n)
    nc *= 2;
  char *nb = realloc(*buf, nc);
  if (!nb)
    return -1;
  *buf = nb;
  *cap = nc;
  return 0;
}

static int buf_put(char **buf, size_t *len, size_t *cap, const char *s,
                   size_t n) {
  if (buf_reserve(buf, *len, cap, n) != 0)
    return -1;
  memcpy(*buf + *len, s, n);
  *len += n;
  return 0;
}

/* Writes s with every ranges placeholder replaced by its numbers, as one
 * write (one send for the whole reply). */
static void write_spliced(pa_client *c, const char *s, size_t n) {
  const char *p = s, *end = s + n;
  char num[40];
  char *out = NULL;
  size_t len = 0, cap = 0;
  int bad = 0;
  while (p < end) {
    static const char tag[] = "\"" SPLICE_TAG;
    const char *q = memmem(p, (size_t)(end - p), tag, sizeof tag - 1);
    if (!q) {
      bad |= buf_put(&out, &len, &cap, p, (size_t)(end - p));
      break;
    }
    bad |= buf_put(&out, &len, &cap, p, (size_t)(q - p));
    char *after;
    const char *h = q + 1 + strlen(SPLICE_TAG);
    /* The text is a JSON document ending in "\n" with no NUL: parse the
     * tag from a bounded copy. */
    char tagbuf[64];
    size_t avail = (size_t)(end - h) < sizeof tagbuf - 1 ? (size_t)(end - h)
                                                          : sizeof tagbuf - 1;
    memcpy(tagbuf, h, avail);
    tagbuf[avail] = '\0';
    char *t_after;
    unsigned long long nonce = strtoull(tagbuf, &t_after, 16);
    unsigned long k =
        *t_after == '-' ? strtoul(t_after + 1, &t_after, 10) : ~0ul;
    after = (char *)h + (t_after - tagbuf);
    if (nonce != c->g->splice_nonce || k >= c->n_spl ||
        strncmp(t_after, "@@\"", 3) != 0) {
      bad |= buf_put(&out, &len, &cap, q, 1); /* a client string alike */
      p = q + 1;
      continue;
    }
    const pa_splice *sp = &c->spl[k];
    /* 18 bytes per number at most ("-1000000000.000001") + comma */
    if (bad || buf_reserve(&out, len, &cap, (size_t)sp->n * 20 + 2) != 0) {
      bad = -1;
      break;
    }
    out[len++] = '[';
    for (uint32_t i = 0; i < sp->n; i++) {
      if (i)
        out[len++] = ',';
      size_t m = fmt_range(num, sp->r[i]);
      memcpy(out + len, num, m);
      len += m;
    }
    out[len++] = ']';
    p = after + 3;
  }
  if (bad) {
    static const char oom[] =
        "{\"type\":\"error\",\"status\":\"error\",\"success\":false,"
        "\"error\":{\"code\":\"busy\",\"message\":\"out of memory\"}}\n";
    pa_gw_write(c, oom, sizeof oom - 1);
  } else {
    pa_gw_write(c, out, len);
  }
  free(out);
}

static void send_json(pa_client *c, json_t *o) {
  char *s = json_dumps(o, DUMP_FLAGS);
  json_decref(o);
  if (!s) {
    static const char oom[] =
        "{\"type\":\"error\",\"status\":\"error\",\"success\":false,"
        "\"error\":{\"code\":\"busy\",\"message\":\"out of memory\"}}\n";
    pa_gw_write(c, oom, sizeof oom - 1);
    splices_free(c);
    return;
  }
  size_t n = strlen(s);
  s[n] = '\n'; /* replaces the terminator: one write for line + EOL */
  if (c->n_spl)
    write_spliced(c, s, n + 1);
  else
    pa_gw_write(c, s, n + 1);
  free(s);
  splices_free(c);
}

void pa_json_error_line(pa_client *c, pa_status st, const char *msg) {
  send_json(c, envelope_err(NULL, NULL, st, msg, now_sim_time(c->g)));
}

/* ---- field readers ---------------------------------------------------------*/

/* Optional finite number: 1 found, 0 absent, -1 bad (error set). */
static int get_num(jctx *x, const char *key, double *out) {
  json_t *v = json_object_get(x->data, key);
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_number(v) || !isfinite(json_number_value(v))) {
    jfail(x, PA_ERR_INVALID_ACTION_SHAPE, "data.%s must be a finite number",
          key);
    return -1;
  }
  *out = json_number_value(v);
  return 1;
}

/* Optional integer in [lo, hi]. */
static int get_int(jctx *x, const char *key, long long lo, long long hi,
                   long long *out) {
  json_t *v = json_object_get(x->data, key);
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_integer(v) || json_integer_value(v) < lo ||
      json_integer_value(v) > hi) {
    jfail(x, PA_ERR_INVALID_MESSAGE, "data.%s must be an integer in [%lld, %lld]",
          key, lo, hi);
    return -1;
  }
  *out = json_integer_value(v);
  return 1;
}

/* Optional string of 1..max-1 bytes. */
static int get_str(jctx *x, const char *key, size_t max, const char **out) {
  json_t *v = json_object_get(x->data, key);
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_string(v) || json_string_length(v) == 0 ||
      json_string_length(v) >= max ||
      strlen(json_string_value(v)) != json_string_length(v)) {
    jfail(x, PA_ERR_INVALID_MESSAGE,
          "data.%s must be a non-empty string shorter than %zu bytes", key,
          max);
    return -1;
  }
  *out = json_string_value(v);
  return 1;
}

/* A required string: 0, or -1 (error set). */
static int need_str(jctx *x, const char *key, size_t max, const char **out) {
  int r = get_str(x, key, max, out);
  if (r == 0)
    jfail(x, PA_ERR_INVALID_MESSAGE, "data.%s is required", key);
  return r > 0 ? 0 : -1;
}

/* A numeric vector of one of the allowed lengths (n2 = 0: only n1). */
static int get_vec(jctx *x, const char *key, size_t n1, size_t n2, double *out,
                   size_t *n) {
  json_t *v = json_object_get(x->data, key);
  if (!v || json_is_null(v))
    return 0;
  size_t len = json_is_array(v) ? json_array_size(v) : 0;
  if (!json_is_array(v) || (len != n1 && (n2 == 0 || len != n2))) {
    if (n2)
      jfail(x, PA_ERR_INVALID_ACTION_SHAPE,
            "data.%s must be an array of %zu or %zu numbers", key, n1, n2);
    else
      jfail(x, PA_ERR_INVALID_ACTION_SHAPE,
            "data.%s must be an array of %zu numbers", key, n1);
    return -1;
  }
  for (size_t i = 0; i < len; i++) {
    json_t *e = json_array_get(v, i);
    if (!json_is_number(e) || !isfinite(json_number_value(e))) {
      jfail(x, PA_ERR_INVALID_ACTION_SHAPE,
            "data.%s[%zu] must be a finite number", key, i);
      return -1;
    }
    out[i] = json_number_value(e);
  }
  *n = len;
  return 1;
}

/* A required data.pose [x, y, theta]: 0, or -1 (error set). */
static int need_pose3(jctx *x, double p[3]) {
  size_t n;
  int r = get_vec(x, "pose", 3, 0, p, &n);
  if (r == 0)
    jfail(x, PA_ERR_INVALID_ACTION_SHAPE,
          "data.pose is required: [x, y, theta]");
  return r > 0 ? 0 : -1;
}

/* A robot or obstacle lookup stuck on a world snapshot left mid-update:
 * busy (true), else the caller says it is unknown. */
static bool lookup_busy(jctx *x, int rc) {
  if (rc != PA_GW_BUSY)
    return false;
  jfail(x, PA_ERR_BUSY, "the world snapshot is being rewritten; try again");
  return true;
}

/* data.robot (id or name), default the connection's robot. */
static int get_robot(jctx *x, pa_robot_info *info, uint32_t *idx) {
  pa_netgw *g = x->c->g;
  json_t *v = json_object_get(x->data, "robot");
  if (!v || json_is_null(v)) {
    int rc = pa_gw_robot(g, NULL, (long)x->c->robot, info, idx);
    if (rc != 0) {
      if (!lookup_busy(x, rc))
        jfail(x, PA_ERR_UNKNOWN_ROBOT, "robot %u does not exist",
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
      if (!lookup_busy(x, rc))
        jfail(x, PA_ERR_UNKNOWN_ROBOT, "no robot with id %lld",
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
      if (!lookup_busy(x, rc))
        jfail(x, PA_ERR_UNKNOWN_ROBOT, "no robot named '%.64s'", name);
      return -1;
    }
    return 0;
  }
  jfail(x, PA_ERR_INVALID_MESSAGE, "data.robot must be an id or a name");
  return -1;
}

static int get_channel(jctx *x, int *ch) {
  const char *s = NULL;
  int r = get_str(x, "channel", 16, &s);
  if (r < 0)
    return -1;
  if (r == 0) {
    jfail(x, PA_ERR_INVALID_MESSAGE, "data.channel is required (odom, scan "
                                     "or camera)");
    return -1;
  }
  *ch = pa_netgw_channel_parse(s);
  if (*ch < 0) {
    jfail(x, PA_ERR_INVALID_MESSAGE,
          "unknown channel '%s' (odom, scan or camera)", s);
    return -1;
  }
  return 0;
}

/* ---- state payloads ----------------------------------------------------------*/

static json_t *drive_json(const pa_robot_info *i) {
  return json_string(i->drive == PA_DRIVE_OMNI ? "omni" : "diff");
}

/* The latest tick (*tick) and the robot's row in it, or NULL (error set). */
static const pa_robot_state *robot_state_now(jctx *x, uint32_t robot,
                                             const pa_tick **tick) {
  const pa_tick *t = pa_gw_latest(x->c->g);
  if (!t) {
    jfail(x, PA_ERR_BUSY, "the simulator has not written a tick yet");
    return NULL;
  }
  const pa_robot_state *rs = pa_gw_robot_state(t, robot);
  if (!rs)
    jfail(x, PA_ERR_UNKNOWN_ROBOT, "robot %u is not in the state",
          (unsigned)robot);
  *tick = t;
  return rs;
}

static json_t *vec3(double a, double b, double c) {
  json_t *v = json_array();
  json_array_append_new(v, json_real(a));
  json_array_append_new(v, json_real(b));
  json_array_append_new(v, json_real(c));
  return v;
}

static json_t *scan_json(pa_client *c, const pa_scan *s) {
  json_t *o = json_object();
  json_object_set_new(o, "seq", json_integer(s->seq));
  json_object_set_new(o, "tick", json_integer((json_int_t)s->tick));
  json_object_set_new(o, "sim_time", json_real(s->sim_time));
  json_object_set_new(o, "angle_min", json_real(s->angle_min));
  json_object_set_new(o, "angle_increment", json_real(s->angle_increment));
  json_object_set_new(o, "range_min", json_real(s->range_min));
  json_object_set_new(o, "range_max", json_real(s->range_max));
  json_t *a = ranges_placeholder(c, (const float *)(s + 1), s->count);
  json_object_set_new(o, "ranges", a ? a : json_null());
  return o;
}

static json_t *sensors_json(pa_client *c, uint32_t robot) {
  json_t *o = json_object();
  const pa_scan *s = pa_gw_scan(c->g, robot);
  json_object_set_new(o, "scan", s ? scan_json(c, s) : json_null());
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
  json_object_set_new(d, "drive", drive_json(info));
  json_object_set_new(d, "pose", vec3(rs->x, rs->y, rs->theta));
  json_object_set_new(d, "odom", vec3(rs->odom_x, rs->odom_y, rs->odom_theta));
  if (info->drive == PA_DRIVE_OMNI) {
    json_object_set_new(d, "velocity", vec3(rs->v, rs->vy, rs->w));
  } else {
    json_t *v = json_array();
    json_array_append_new(v, json_real(rs->v));
    json_array_append_new(v, json_real(rs->w));
    json_object_set_new(d, "velocity", v);
  }
  json_object_set_new(d, "head", json_real(rs->head));
  json_object_set_new(d, "bumped", json_boolean(rs->flags & PA_RS_BUMPED));
  json_object_set_new(d, "tick", json_integer((json_int_t)t->tick));
  json_object_set_new(d, "sim_time", json_real(t->sim_time));
  json_object_set_new(d, "paused", json_boolean(t->flags & PA_TICK_PAUSED));
  json_object_set_new(d, "sensors", sensors_json(x->c, robot));
  return d;
}

/* ---- actions ---------------------------------------------------------------------*/

/* Pushes cmd for robot: 0, or -1 with the error set (queue full). */
static int push_cmd(jctx *x, pa_cmd *cmd, uint32_t robot, bool wait) {
  cmd->robot = robot;
  if ((wait ? pa_gw_push_wait(x->c, cmd) : pa_gw_push_nowait(x->c, cmd)) !=
      0) {
    x->c->g->busy++;
    jfail(x, PA_ERR_BUSY, "%s", x->c->g->busy_msg);
    return -1;
  }
  return 0;
}

static json_t *wait_for_sim(jctx *x, pa_cmd *cmd, uint32_t robot) {
  if (push_cmd(x, cmd, robot, true) != 0)
    return NULL;
  x->c->pend = PEND_JSON;
  x->c->pend_action = x->action;
  x->c->pend_robot = robot;
  return JPENDING;
}

static json_t *push_nowait(jctx *x, pa_cmd *cmd, uint32_t robot) {
  if (push_cmd(x, cmd, robot, false) != 0)
    return NULL;
  json_t *d = json_object();
  json_object_set_new(d, "robot", json_integer(robot));
  return d;
}

/* Velocity command fields for step / set_velocity*: fills a[0..3] and the
 * frame; checks the drive can do it. */
static int drive_fields(jctx *x, const pa_robot_info *info, pa_cmd *cmd) {
  double v = 0, vy = 0, w = 0, head = 0;
  int rv;
  bool omni = info->drive == PA_DRIVE_OMNI;
  cmd->u = PA_FRAME_ROBOT;
  switch (x->action) {
  case A_SET_VELOCITY_LOCAL:
    if (get_num(x, "forward", &v) < 0 || get_num(x, "left", &vy) < 0 ||
        get_num(x, "angular", &w) < 0 || get_num(x, "head", &head) < 0)
      return -1;
    break;
  case A_SET_VELOCITY_GLOBAL:
    if (get_num(x, "x", &v) < 0 || get_num(x, "y", &vy) < 0 ||
        get_num(x, "angular", &w) < 0 || get_num(x, "head", &head) < 0)
      return -1;
    if (!omni) {
      jfail(x, PA_ERR_UNSUPPORTED_CONTROL_SCHEME,
            "robot '%s' has a differential drive: world-frame velocities "
            "need an omnidirectional robot",
            info->name);
      return -1;
    }
    cmd->u = PA_FRAME_WORLD;
    break;
  case A_SET_WHEELS: {
    /* Wheel rim speeds [m/s] of a differential robot: v is their mean, w
     * their difference over the wheel separation. */
    double l = 0, r = 0;
    int hl = get_num(x, "left", &l), hr = get_num(x, "right", &r);
    if (hl < 0 || hr < 0 || get_num(x, "head", &head) < 0)
      return -1;
    if (hl == 0 || hr == 0) {
      jfail(x, PA_ERR_INVALID_ACTION_SHAPE,
            "data.left and data.right (wheel speeds, m/s) are required");
      return -1;
    }
    if (omni) {
      jfail(x, PA_ERR_UNSUPPORTED_CONTROL_SCHEME,
            "robot '%s' is omnidirectional: it has no left and right wheels",
            info->name);
      return -1;
    }
    if (!(info->wheel_base > 0)) {
      jfail(x, PA_ERR_UNSUPPORTED_CONTROL_SCHEME,
            "robot '%s' has no wheel_base", info->name);
      return -1;
    }
    v = 0.5 * l + 0.5 * r;
    w = (r - l) / info->wheel_base;
    break;
  }
  default:
    if ((rv = get_num(x, "v", &v)) < 0 || (rv == 0 && get_num(x, "vx", &v) < 0) ||
        get_num(x, "vy", &vy) < 0 || get_num(x, "w", &w) < 0 ||
        get_num(x, "head", &head) < 0)
      return -1;
    break;
  }
  if (!omni && vy != 0) {
    jfail(x, PA_ERR_UNSUPPORTED_CONTROL_SCHEME,
          "robot '%s' has a differential drive: it cannot move sideways",
          info->name);
    return -1;
  }
  /* pa-sim refuses these, and some drive commands take no reply: say it
   * here (wheel speeds over a small wheel base can overflow). */
  if (!(fabs(v) <= 1e6 && fabs(vy) <= 1e6 && fabs(w) <= 1e6 &&
        fabs(head) <= 1e6)) {
    jfail(x, PA_ERR_INVALID_ACTION_SHAPE,
          "velocities must be within 1e6 (got v %g, vy %g, w %g, head %g)", v,
          vy, w, head);
    return -1;
  }
  cmd->op = PA_OP_SET_CMD;
  cmd->a[0] = v;
  cmd->a[1] = vy;
  cmd->a[2] = w;
  cmd->a[3] = head;
  return 0;
}

enum { P_ROBOT = 1, P_OBSTACLE = 2 };

/* The object a request names: data.name (a robot or an obstacle) or
 * data.robot (default: the connection's). kind P_ROBOT or P_OBSTACLE. */
static int named_object(jctx *x, unsigned *kind, pa_robot_info *ri,
                       pa_obstacle_info *oi, uint32_t *idx) {
  const char *name = NULL;
  if (get_str(x, "name", 32, &name) < 0)
    return -1;
  int rc = name ? pa_gw_robot(x->c->g, name, -1, ri, idx) : 0;
  if (lookup_busy(x, rc))
    return -1;
  if (rc != 0) {
    rc = pa_gw_obstacle(x->c->g, name, oi, idx);
    if (lookup_busy(x, rc))
      return -1;
    if (rc != 0) {
      jfail(x, PA_ERR_UNKNOWN_OBJECT, "no robot or obstacle named '%s'", name);
      return -1;
    }
    *kind = P_OBSTACLE;
    return 0;
  }
  if (!name && get_robot(x, ri, idx) < 0)
    return -1;
  *kind = P_ROBOT;
  return 0;
}

static json_t *act_get_pose(jctx *x, double *sim_time) {
  unsigned kind;
  pa_robot_info info;
  pa_obstacle_info ob;
  uint32_t idx;
  if (named_object(x, &kind, &info, &ob, &idx) < 0)
    return NULL;
  if (kind == P_OBSTACLE) {
    json_t *d = json_object();
    json_object_set_new(d, "name", json_string(ob.name));
    json_object_set_new(d, "kind", json_string("obstacle"));
    json_object_set_new(d, "pose", vec3(ob.x, ob.y, ob.theta));
    *sim_time = now_sim_time(x->c->g);
    json_object_set_new(d, "sim_time", json_real(*sim_time));
    return d;
  }
  const pa_tick *t;
  const pa_robot_state *rs = robot_state_now(x, idx, &t);
  if (!rs)
    return NULL;
  *sim_time = t->sim_time;
  json_t *d = json_object();
  json_object_set_new(d, "name", json_string(info.name));
  json_object_set_new(d, "kind", json_string("robot"));
  json_object_set_new(d, "robot", json_integer(idx));
  json_object_set_new(d, "pose", vec3(rs->x, rs->y, rs->theta));
  json_object_set_new(d, "sim_time", json_real(t->sim_time));
  return d;
}

static json_t *act_set_pose(jctx *x) {
  unsigned kind;
  pa_robot_info info;
  pa_obstacle_info ob;
  uint32_t idx;
  if (named_object(x, &kind, &info, &ob, &idx) < 0)
    return NULL;
  if (kind == P_OBSTACLE)
    return jfail(x, PA_ERR_INVALID_MESSAGE,
                 "obstacle '%s' is static: remove_obstacle and "
                 "spawn_obstacle it to move it",
                 ob.name);
  double p[6];
  size_t n = 0;
  int r = get_vec(x, "pose", 3, 6, p, &n);
  if (r < 0)
    return NULL;
  if (r == 0)
    return jfail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "data.pose is required: [x, y, theta] or [x, y, z, roll, "
                 "pitch, yaw]");
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_TELEPORT;
  cmd.a[0] = p[0];
  cmd.a[1] = p[1];
  cmd.a[2] = n == 6 ? p[5] : p[2]; /* 3D: only the yaw applies on a plane */
  return wait_for_sim(x, &cmd, idx);
}

static json_t *act_subscribe(jctx *x, bool sub) {
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
  if (get_robot(x, &info, &idx) < 0)
    return NULL;
  long long port = 0;
  int r = get_int(x, "udp_port", 1, 65535, &port);
  if (r < 0)
    return NULL;
  if (r == 0)
    return jfail(x, PA_ERR_INVALID_MESSAGE, "data.udp_port is required");
  pa_gw_subscribe(c, ch, idx, (uint16_t)port);
  json_t *d = json_object();
  json_object_set_new(d, "channel", json_string(pa_netgw_channel_name(ch)));
  json_object_set_new(d, "udp_port", json_integer(port));
  json_object_set_new(d, "robot", json_integer(idx));
  return d;
}

static json_t *act_list_robots(jctx *x) {
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
    json_object_set_new(o, "drive", drive_json(&info));
    json_object_set_new(o, "radius", json_real(info.radius));
    json_object_set_new(o, "max_v", json_real(info.max_v));
    json_object_set_new(o, "max_w", json_real(info.max_w));
    json_object_set_new(o, "laser_beams", json_integer(info.laser_beams));
    json_object_set_new(o, "camera", vec3(info.cam_width, info.cam_height,
                                          info.cam_fov));
    json_array_append_new(list, o);
  }
  json_t *d = json_object();
  json_object_set_new(d, "count", json_integer((json_int_t)json_array_size(list)));
  json_object_set_new(d, "robots", list);
  return d;
}

static json_t *shape_json(const pa_obstacle_info *o) {
  return json_string(o->shape == PA_SHAPE_CIRCLE ? "circle" : "box");
}

/* An obstacle's radius (circle) or size (box), into j. */
static void extent_json(json_t *j, const pa_obstacle_info *o) {
  if (o->shape == PA_SHAPE_CIRCLE) {
    json_object_set_new(j, "radius", json_real(o->radius));
  } else {
    json_t *sz = json_array();
    json_array_append_new(sz, json_real(o->size_x));
    json_array_append_new(sz, json_real(o->size_y));
    json_object_set_new(j, "size", sz);
  }
}

static json_t *act_list_obstacles(jctx *x) {
  pa_netgw *g = x->c->g;
  uint32_t max = g->ctl->def.max_obstacles, n = 0;
  pa_obstacle_info *copy = malloc((size_t)(max ? max : 1) * sizeof *copy);
  if (!copy)
    return jfail(x, PA_ERR_BUSY, "out of memory");
  /* An untorn copy, or busy: the world is being rewritten all the time, or
   * its writer died mid-update (read_begin waited 50 ms; a restarted pa-sim
   * republishes it). */
  for (int tries = 0;; tries++) {
    uint64_t s = pa_stack_world_read_begin(g->st);
    if (tries == 1000 || (s & 1u)) {
      free(copy);
      return jfail(x, PA_ERR_BUSY,
                   "the world snapshot is being rewritten; try again");
    }
    n = __atomic_load_n(&g->ctl->obstacle_count, __ATOMIC_ACQUIRE);
    if (n > max)
      n = max;
    memcpy(copy, g->st->obstacles, (size_t)n * sizeof *copy);
    if (!pa_stack_world_read_retry(g->st, s))
      break;
  }
  json_t *list = json_array();
  for (uint32_t i = 0; i < n; i++) {
    const pa_obstacle_info *o = &copy[i];
    if (!o->active)
      continue;
    json_t *j = json_object();
    json_object_set_new(j, "name", json_stringn(o->name, strnlen(o->name,
                                                                sizeof o->name)));
    json_object_set_new(j, "shape", shape_json(o));
    json_object_set_new(j, "pose", vec3(o->x, o->y, o->theta));
    extent_json(j, o);
    json_object_set_new(j, "height", json_real(o->height));
    json_array_append_new(list, j);
  }
  free(copy);
  json_t *d = json_object();
  json_object_set_new(d, "count", json_integer((json_int_t)json_array_size(list)));
  json_object_set_new(d, "obstacles", list);
  return d;
}

static json_t *act_spawn_robot(jctx *x) {
  const char *name = NULL, *drive = NULL;
  double p[3] = {0, 0, 0}, radius = 0;
  if (need_str(x, "name", 32, &name) < 0 || need_pose3(x, p) < 0 ||
      get_num(x, "radius", &radius) < 0 || get_str(x, "drive", 8, &drive) < 0)
    return NULL;
  if (radius < 0 || radius > 5)
    return jfail(x, PA_ERR_INVALID_MESSAGE,
                 "data.radius %g is out of range [0, 5] (0 = default)",
                 radius);
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_SPAWN_ROBOT;
  if (!drive || !strcmp(drive, "diff"))
    cmd.u = PA_DRIVE_DIFF;
  else if (!strcmp(drive, "omni"))
    cmd.u = PA_DRIVE_OMNI;
  else
    return jfail(x, PA_ERR_INVALID_MESSAGE,
                 "data.drive '%s' is not diff or omni", drive);
  pa_robot_info info;
  uint32_t idx;
  if (pa_gw_robot(x->c->g, name, -1, &info, &idx) == 0)
    return jfail(x, PA_ERR_SPAWN_FAILED, "a robot named '%s' exists", name);
  snprintf(cmd.name, sizeof cmd.name, "%s", name);
  cmd.a[0] = p[0];
  cmd.a[1] = p[1];
  cmd.a[2] = p[2];
  cmd.a[3] = radius;
  return wait_for_sim(x, &cmd, 0);
}

static json_t *act_spawn_obstacle(jctx *x) {
  const char *name = NULL, *shape = NULL;
  double p[3] = {0, 0, 0}, size[2] = {0, 0}, radius = 0, height = 0;
  size_t n;
  if (need_str(x, "name", 32, &name) < 0 ||
      get_str(x, "shape", 8, &shape) < 0 || need_pose3(x, p) < 0 ||
      get_vec(x, "size", 2, 0, size, &n) < 0 ||
      get_num(x, "radius", &radius) < 0 || get_num(x, "height", &height) < 0)
    return NULL;
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_SPAWN_OBSTACLE;
  if (!shape || !strcmp(shape, "box")) {
    if (!(size[0] > 0 && size[1] > 0 && size[0] <= 1000 && size[1] <= 1000))
      return jfail(x, PA_ERR_INVALID_ACTION_SHAPE,
                   "a box needs data.size [size_x, size_y], each in (0, 1000]");
    cmd.u = PA_SHAPE_BOX;
    cmd.a[3] = size[0];
    cmd.a[4] = size[1];
  } else if (!strcmp(shape, "circle")) {
    if (!(radius > 0 && radius <= 500))
      return jfail(x, PA_ERR_INVALID_ACTION_SHAPE,
                   "a circle needs data.radius in (0, 500]");
    cmd.u = PA_SHAPE_CIRCLE;
    cmd.a[3] = radius;
    cmd.a[4] = radius;
  } else {
    return jfail(x, PA_ERR_INVALID_MESSAGE,
                 "data.shape '%s' is not box or circle", shape);
  }
  if (height < 0 || height > 100)
    return jfail(x, PA_ERR_INVALID_MESSAGE,
                 "data.height %g is out of range [0, 100] (0 = default)",
                 height);
  snprintf(cmd.name, sizeof cmd.name, "%s", name);
  cmd.a[0] = p[0];
  cmd.a[1] = p[1];
  cmd.a[2] = p[2];
  cmd.a[5] = height;
  return wait_for_sim(x, &cmd, 0);
}

/* ---- properties ----------------------------------------------------------- */

typedef struct prop_def {
  const char *name;
  uint32_t id;    /* enum pa_prop */
  unsigned kinds; /* P_ROBOT | P_OBSTACLE */
  unsigned n;     /* numbers in the value (colour: 3 or 4) */
} prop_def;

static const prop_def props[] = {
    {"max_v", PA_PROP_MAX_V, P_ROBOT, 1},
    {"max_vy", PA_PROP_MAX_VY, P_ROBOT, 1},
    {"max_w", PA_PROP_MAX_W, P_ROBOT, 1},
    {"acc_v", PA_PROP_ACC_V, P_ROBOT, 1},
    {"dec_v", PA_PROP_DEC_V, P_ROBOT, 1},
    {"acc_w", PA_PROP_ACC_W, P_ROBOT, 1},
    {"dec_w", PA_PROP_DEC_W, P_ROBOT, 1},
    {"head_limit", PA_PROP_HEAD_LIMIT, P_ROBOT, 1},
    {"max_head_rate", PA_PROP_MAX_HEAD_RATE, P_ROBOT, 1},
    {"laser_beams", PA_PROP_LASER_BEAMS, P_ROBOT, 1},
    {"laser_range_min", PA_PROP_LASER_RANGE_MIN, P_ROBOT, 1},
    {"laser_range_max", PA_PROP_LASER_RANGE_MAX, P_ROBOT, 1},
    {"laser_noise", PA_PROP_LASER_NOISE, P_ROBOT, 1},
    {"radius", PA_PROP_RADIUS, P_ROBOT | P_OBSTACLE, 1},
    {"height", PA_PROP_HEIGHT, P_ROBOT | P_OBSTACLE, 1},
    {"head_height", PA_PROP_HEAD_HEIGHT, P_ROBOT, 1},
    {"colour", PA_PROP_COLOUR, P_ROBOT | P_OBSTACLE, 4},
    {"color", PA_PROP_COLOUR, P_ROBOT | P_OBSTACLE, 4},
    {"size", PA_PROP_SIZE, P_OBSTACLE, 2},
    {"wheel_base", PA_PROP_WHEEL_BASE, P_ROBOT, 1},
};

static json_t *colour_json(const uint8_t c[4]) {
  json_t *v = json_array();
  for (int i = 0; i < 4; i++)
    json_array_append_new(v, json_integer(c[i]));
  return v;
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

/* Every property of a robot: the settable ones, then read-only ones. */
static json_t *robot_props(const pa_robot_info *i) {
  json_t *p = json_object();
  json_object_set_new(p, "max_v", jfloat(i->max_v));
  json_object_set_new(p, "max_vy", jfloat(i->max_vy));
  json_object_set_new(p, "max_w", jfloat(i->max_w));
  json_object_set_new(p, "acc_v", jfloat(i->acc_v));
  json_object_set_new(p, "dec_v", jfloat(i->dec_v));
  json_object_set_new(p, "acc_w", jfloat(i->acc_w));
  json_object_set_new(p, "dec_w", jfloat(i->dec_w));
  json_object_set_new(p, "head_limit", jfloat(i->head_limit));
  json_object_set_new(p, "max_head_rate", jfloat(i->max_head_rate));
  json_object_set_new(p, "laser_beams", json_integer(i->laser_beams));
  json_object_set_new(p, "laser_range_min", jfloat(i->laser_range_min));
  json_object_set_new(p, "laser_range_max", jfloat(i->laser_range_max));
  json_object_set_new(p, "laser_noise", jfloat(i->laser_noise));
  json_object_set_new(p, "radius", jfloat(i->radius));
  json_object_set_new(p, "wheel_base", jfloat(i->wheel_base));
  json_object_set_new(p, "height", jfloat(i->height));
  json_object_set_new(p, "head_height", jfloat(i->head_height));
  json_object_set_new(p, "colour", colour_json(i->colour));
  json_object_set_new(p, "drive", drive_json(i));
  json_object_set_new(p, "camera_width", json_integer(i->cam_width));
  json_object_set_new(p, "camera_height", json_integer(i->cam_height));
  json_object_set_new(p, "camera_fov_deg",
                      jfloat((float)(i->cam_fov * 180.0 / M_PI)));
  return p;
}

static json_t *obstacle_props(const pa_obstacle_info *o) {
  json_t *p = json_object();
  json_object_set_new(p, "shape", shape_json(o));
  extent_json(p, o);
  json_object_set_new(p, "height", jfloat(o->height));
  json_object_set_new(p, "colour", colour_json(o->colour));
  return p;
}

/* The properties object of a robot or obstacle as the world snapshot has
 * it now; with `only`, just {"property": only, "value": ...}. */
static json_t *props_reply(jctx *x, unsigned kind, const pa_robot_info *ri,
                           const pa_obstacle_info *oi, uint32_t idx,
                           const char *only) {
  json_t *all = kind == P_ROBOT ? robot_props(ri) : obstacle_props(oi);
  json_t *d = json_object();
  json_object_set_new(d, "name", json_string(kind == P_ROBOT ? ri->name
                                                             : oi->name));
  json_object_set_new(d, "kind", json_string(kind == P_ROBOT ? "robot"
                                                             : "obstacle"));
  if (kind == P_ROBOT)
    json_object_set_new(d, "robot", json_integer(idx));
  if (only) {
    const char *key = strcmp(only, "color") ? only : "colour";
    json_t *v = json_object_get(all, key);
    if (!v) {
      json_decref(all);
      json_decref(d);
      return jfail(x, PA_ERR_INVALID_MESSAGE, "%s '%s' has no property '%s'",
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

static json_t *act_get_property(jctx *x) {
  unsigned kind;
  pa_robot_info ri;
  pa_obstacle_info oi;
  uint32_t idx;
  const char *only = NULL;
  if (named_object(x, &kind, &ri, &oi, &idx) < 0 ||
      get_str(x, "property", 32, &only) < 0)
    return NULL;
  return props_reply(x, kind, &ri, &oi, idx, only);
}

static json_t *act_set_property(jctx *x) {
  unsigned kind;
  pa_robot_info ri;
  pa_obstacle_info oi;
  uint32_t idx;
  const char *key = NULL;
  if (named_object(x, &kind, &ri, &oi, &idx) < 0)
    return NULL;
  int r = get_str(x, "property", 32, &key);
  if (r == 0)
    jfail(x, PA_ERR_INVALID_MESSAGE,
          "data.property is required (one property per request; use a batch "
          "for several)");
  if (r <= 0)
    return NULL;
  const prop_def *p = NULL;
  for (size_t i = 0; i < sizeof props / sizeof props[0] && !p; i++)
    if (!strcmp(props[i].name, key))
      p = &props[i];
  if (!p) {
    json_t *all = kind == P_ROBOT ? robot_props(&ri) : obstacle_props(&oi);
    bool known = json_object_get(all, key) != NULL;
    json_decref(all);
    return jfail(x, PA_ERR_INVALID_MESSAGE,
                 known ? "property '%s' is read-only"
                       : "unknown property '%s' (see get_property)",
                 key);
  }
  if (!(p->kinds & kind))
    return jfail(x, PA_ERR_INVALID_MESSAGE, "property '%s' is not one of %s",
                 key, kind == P_ROBOT ? "a robot's" : "an obstacle's");
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_SET_PROPERTY;
  cmd.u = p->id;
  size_t n = 0;
  json_t *v = json_object_get(x->data, "value");
  if (p->n == 1) {
    if (!v || !json_is_number(v) || !isfinite(json_number_value(v)))
      return jfail(x, PA_ERR_INVALID_ACTION_SHAPE,
                   "data.value must be a finite number for '%s'", key);
    cmd.a[0] = json_number_value(v);
  } else if (p->id == PA_PROP_COLOUR) {
    r = get_vec(x, "value", 3, 4, cmd.a, &n);
    if (r == 0)
      return jfail(x, PA_ERR_INVALID_ACTION_SHAPE,
                   "data.value must be [r, g, b] or [r, g, b, a] (0..255)");
    if (r < 0)
      return NULL;
    if (n == 3)
      cmd.a[3] = 255;
  } else {
    r = get_vec(x, "value", p->n, 0, cmd.a, &n);
    if (r == 0)
      return jfail(x, PA_ERR_INVALID_ACTION_SHAPE,
                   "data.value must be an array of %u numbers", p->n);
    if (r < 0)
      return NULL;
  }
  if (kind == P_OBSTACLE) {
    snprintf(cmd.name, sizeof cmd.name, "%s", oi.name);
    return wait_for_sim(x, &cmd, UINT32_MAX);
  }
  return wait_for_sim(x, &cmd, idx);
}

/* save_snapshot / load_snapshot: data.name. */
/* set_map {"map_yaml": "/abs/map.yaml"} or {"map": "default"}; pa-sim
 * reads the file, so the path must be absolute (its working directory is
 * not the client's). */
static json_t *act_set_map(jctx *x) {
  const char *path = NULL, *name = NULL;
  if (get_str(x, "map_yaml", PA_CMD_PATH_MAX, &path) < 0 ||
      get_str(x, "map", 16, &name) < 0)
    return NULL;
  if (!path == !name)
    return jfail(x, PA_ERR_INVALID_MESSAGE,
                 "give data.map_yaml (an absolute path to a map_server "
                 "YAML) or data.map \"default\"");
  if (name && strcmp(name, "default"))
    return jfail(x, PA_ERR_INVALID_MESSAGE,
                 "data.map '%s': the only built-in map is \"default\"", name);
  if (path && path[0] != '/')
    return jfail(x, PA_ERR_INVALID_MESSAGE,
                 "data.map_yaml '%s' must be an absolute path (pa-sim reads "
                 "it)", path);
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_SET_MAP;
  if (path)
    snprintf(cmd.path, sizeof cmd.path, "%s", path);
  return wait_for_sim(x, &cmd, 0);
}

/* set_nav_path {robot, path: [[x, y], ...]}, set_waypoints {robot,
 * waypoints: [...]}: a drawing for the viewer, kept in shared memory until
 * replaced or cleared (an empty list clears that part). clear_nav {robot}
 * clears a robot's, without robot every robot's. */
/* Removes robot idx's drawings (a removed robot's must not pass to the next
 * robot in its slot). */
static void nav_clear_robot(pa_netgw *g, uint32_t idx) {
  pa_nav_block *nb = g->st->nav;
  for (int i = 0; i < PA_NAV_OVERLAYS; i++)
    if (nb->ov[i].robot == idx) {
      pa_stack_nav_begin(g->st);
      nb->ov[i].robot = UINT32_MAX;
      nb->ov[i].path_n = nb->ov[i].wp_n = 0;
      pa_stack_nav_end(g->st);
    }
}

static json_t *act_nav(jctx *x) {
  pa_netgw *g = x->c->g;
  pa_nav_block *nb = g->st->nav;
  bool all = x->action == A_CLEAR_NAV &&
             (!json_object_get(x->data, "robot") ||
              json_is_null(json_object_get(x->data, "robot")));
  pa_robot_info info;
  uint32_t idx = UINT32_MAX;
  if (!all && get_robot(x, &info, &idx) < 0)
    return NULL;
  bool path = x->action == A_SET_NAV_PATH;
  const char *key = path ? "path" : "waypoints";
  uint32_t max = path ? PA_NAV_PATH_MAX : PA_NAV_WAYPOINTS_MAX;
  float pts[PA_NAV_PATH_MAX][2];
  uint32_t n = 0;
  if (x->action != A_CLEAR_NAV) {
    json_t *v = json_object_get(x->data, key);
    if (!json_is_array(v) || json_array_size(v) > max)
      return jfail(x, PA_ERR_INVALID_ACTION_SHAPE,
                   "data.%s must be an array of at most %u [x, y] points", key,
                   max);
    for (size_t i = 0; i < json_array_size(v); i++) {
      json_t *p = json_array_get(v, i);
      double xy[2];
      for (int k = 0; k < 2; k++) {
        json_t *c = json_array_get(p, (size_t)k);
        xy[k] = json_is_number(c) ? json_number_value(c) : NAN;
      }
      if (!json_is_array(p) || json_array_size(p) != 2 || !isfinite(xy[0]) ||
          !isfinite(xy[1]) || fabs(xy[0]) > 1e6 || fabs(xy[1]) > 1e6)
        return jfail(x, PA_ERR_INVALID_ACTION_SHAPE,
                     "data.%s[%zu] must be [x, y], finite numbers", key, i);
      pts[n][0] = (float)xy[0];
      pts[n][1] = (float)xy[1];
      n++;
    }
  }
  /* The robot's slot, or a free one (a full table: the reply says so). */
  int slot = -1, free_slot = -1;
  for (int i = 0; i < PA_NAV_OVERLAYS; i++) {
    if (nb->ov[i].robot == idx)
      slot = i;
    else if (nb->ov[i].robot == UINT32_MAX && free_slot < 0)
      free_slot = i;
  }
  if (!all && slot < 0 && x->action != A_CLEAR_NAV && n > 0) {
    if (free_slot < 0)
      return jfail(x, PA_ERR_BUSY,
                   "%d robots have drawings already: clear_nav one first",
                   PA_NAV_OVERLAYS);
    slot = free_slot;
  }
  pa_stack_nav_begin(g->st);
  if (all) {
    for (int i = 0; i < PA_NAV_OVERLAYS; i++)
      nb->ov[i].robot = UINT32_MAX, nb->ov[i].path_n = nb->ov[i].wp_n = 0;
  } else if (slot >= 0) {
    pa_nav_overlay *o = &nb->ov[slot];
    if (o->robot != idx) {
      o->robot = idx;
      o->path_n = o->wp_n = 0;
    }
    if (x->action == A_CLEAR_NAV) {
      o->path_n = o->wp_n = 0;
    } else if (path) {
      memcpy(o->path, pts, n * sizeof pts[0]);
      o->path_n = n;
    } else {
      memcpy(o->wp, pts, n * sizeof pts[0]);
      o->wp_n = n;
    }
    if (!o->path_n && !o->wp_n)
      o->robot = UINT32_MAX; /* nothing left to draw: the slot is free */
  }
  pa_stack_nav_end(g->st);
  json_t *d = json_object();
  if (!all)
    json_object_set_new(d, "robot", json_integer(idx));
  if (x->action != A_CLEAR_NAV)
    json_object_set_new(d, "points", json_integer(n));
  return d;
}

/* export_dataset {name, seconds (default 10) or ticks}: pa-sim records the
 * next ticks into its --dataset_dir/<name>/. */
static json_t *act_export_dataset(jctx *x) {
  const char *name = NULL;
  double seconds = 10;
  long long ticks = 0;
  if (need_str(x, "name", 64, &name) < 0 ||
      get_num(x, "seconds", &seconds) < 0 ||
      get_int(x, "ticks", 1, 100000000, &ticks) < 0)
    return NULL;
  if (!pa_snapshot_name_ok(name))
    return jfail(x, PA_ERR_INVALID_MESSAGE,
                 "dataset name '%s': use 1 to %d of A-Z a-z 0-9 _ -", name,
                 PA_SNAPSHOT_NAME_MAX);
  if (!ticks) {
    double hz = x->c->g->ctl->control_hz;
    if (!(seconds > 0) || !(hz > 0) || seconds * hz > 100000000)
      return jfail(x, PA_ERR_INVALID_MESSAGE,
                   "data.seconds must be > 0 and at most 1e8 ticks");
    ticks = llround(seconds * hz);
    if (ticks < 1)
      ticks = 1;
  }
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_EXPORT_DATASET;
  cmd.u = (uint32_t)ticks;
  snprintf(cmd.name, sizeof cmd.name, "%s", name);
  return wait_for_sim(x, &cmd, 0);
}

/* set_scenario {"world": "/abs/x.world.yaml" | "default"}: robots,
 * obstacles and map from a world file (pa-sim reads it). */
static json_t *act_set_scenario(jctx *x) {
  const char *path = NULL;
  if (need_str(x, "world", PA_CMD_PATH_MAX, &path) < 0)
    return NULL;
  bool dflt = !strcmp(path, "default");
  if (!dflt && path[0] != '/')
    return jfail(x, PA_ERR_INVALID_MESSAGE,
                 "data.world '%s' must be an absolute path to a world file "
                 "(pa-sim reads it) or \"default\"",
                 path);
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_SET_SCENARIO;
  if (!dflt)
    snprintf(cmd.path, sizeof cmd.path, "%s", path);
  return wait_for_sim(x, &cmd, 0);
}

/* generate_map {width, height, resolution, seed, rooms: [x, y], clutter}:
 * checked here for a clear error before the sim builds it. */
static json_t *act_generate_map(jctx *x) {
  pa_mapgen p = pa_mapgen_default();
  long long seed = (long long)p.seed, clutter = p.clutter;
  double rooms[2] = {p.rooms_x, p.rooms_y};
  size_t nr = 0;
  if (get_num(x, "width", &p.width) < 0 || get_num(x, "height", &p.height) < 0 ||
      get_num(x, "resolution", &p.resolution) < 0 ||
      get_int(x, "seed", 0, 9007199254740991ll, &seed) < 0 ||
      get_int(x, "clutter", 0, 64, &clutter) < 0 ||
      get_vec(x, "rooms", 2, 0, rooms, &nr) < 0)
    return NULL;
  for (int i = 0; i < 2; i++)
    if (rooms[i] != floor(rooms[i]) || rooms[i] < 1 || rooms[i] > 32)
      return jfail(x, PA_ERR_INVALID_MESSAGE,
                   "data.rooms must be two whole numbers in [1, 32]");
  p.seed = (uint64_t)seed;
  p.clutter = (uint32_t)clutter;
  p.rooms_x = (uint32_t)rooms[0];
  p.rooms_y = (uint32_t)rooms[1];
  char err[160];
  if (pa_mapgen_check(&p, err, sizeof err) != 0)
    return jfail(x, PA_ERR_INVALID_MESSAGE, "%s", err);
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_GENERATE_MAP;
  cmd.a[0] = p.width;
  cmd.a[1] = p.height;
  cmd.a[2] = p.resolution;
  cmd.a[3] = (double)p.seed;
  cmd.a[4] = p.rooms_x;
  cmd.a[5] = p.rooms_y;
  cmd.a[6] = p.clutter;
  return wait_for_sim(x, &cmd, 0);
}

static json_t *act_snapshot(jctx *x) {
  const char *name = NULL;
  if (need_str(x, "name", 64, &name) < 0)
    return NULL;
  if (!pa_snapshot_name_ok(name))
    return jfail(x, PA_ERR_INVALID_MESSAGE,
                 "snapshot name '%s': use 1 to %d of A-Z a-z 0-9 _ -", name,
                 PA_SNAPSHOT_NAME_MAX);
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = x->action == A_SAVE_SNAPSHOT ? PA_OP_SAVE_SNAPSHOT
                                        : PA_OP_LOAD_SNAPSHOT;
  snprintf(cmd.name, sizeof cmd.name, "%s", name);
  return wait_for_sim(x, &cmd, 0);
}

static json_t *act_map_info(jctx *x) {
  const pa_map_block *m;
  const int8_t *cells;
  if (pa_gw_map(x->c->g, &m, &cells) != 0)
    return jfail(x, PA_ERR_BUSY, "the simulator has not published a map yet");
  json_t *d = json_object();
  json_object_set_new(d, "width", json_integer(m->width));
  json_object_set_new(d, "height", json_integer(m->height));
  json_object_set_new(d, "resolution", json_real(m->resolution));
  json_object_set_new(d, "origin", vec3(m->origin_x, m->origin_y,
                                        m->origin_yaw));
  json_object_set_new(d, "size", vec3(m->width * m->resolution,
                                      m->height * m->resolution, 0));
  json_array_remove(json_object_get(d, "size"), 2);
  json_object_set_new(d, "gen", json_integer(m->gen));
  uint64_t occ = 0, unk = 0, total = (uint64_t)m->width * m->height;
  for (uint64_t i = 0; i < total; i++) {
    if (cells[i] < 0)
      unk++;
    else if (cells[i] >= 65)
      occ++;
  }
  json_object_set_new(d, "occupied_cells", json_integer((json_int_t)occ));
  json_object_set_new(d, "unknown_cells", json_integer((json_int_t)unk));
  return d;
}

#define TERRAIN_MAX_CELLS (2u << 20) /* keeps the reply near 2 MB */

/* Occupancy for planners: cells within `inflation` metres of a blocked cell
 * are blocked too (exact distance transform), optionally downsampled. */
static json_t *act_terrain_grid(jctx *x) {
  const pa_map_block *m;
  const int8_t *cells;
  if (pa_gw_map(x->c->g, &m, &cells) != 0)
    return jfail(x, PA_ERR_BUSY, "the simulator has not published a map yet");
  double inflation = 0;
  long long stride = 1, threshold = 65;
  json_t *ub = json_object_get(x->data, "unknown_blocks");
  if (get_num(x, "inflation", &inflation) < 0 ||
      get_int(x, "stride", 1, 64, &stride) < 0 ||
      get_int(x, "threshold", 1, 100, &threshold) < 0)
    return NULL;
  if (ub && !json_is_boolean(ub))
    return jfail(x, PA_ERR_INVALID_MESSAGE, "data.unknown_blocks must be true "
                                            "or false");
  if (inflation < 0 || inflation > 100)
    return jfail(x, PA_ERR_INVALID_MESSAGE,
                 "data.inflation %g is out of range [0, 100] m", inflation);
  bool unknown_blocks = ub && json_is_true(ub);
  uint32_t ow = (m->width + (uint32_t)stride - 1) / (uint32_t)stride;
  uint32_t oh = (m->height + (uint32_t)stride - 1) / (uint32_t)stride;
  if ((uint64_t)ow * oh > TERRAIN_MAX_CELLS)
    return jfail(x, PA_ERR_INVALID_MESSAGE,
                 "the grid would have %llu cells (limit %u): ask with a "
                 "larger data.stride",
                 (unsigned long long)ow * oh, TERRAIN_MAX_CELLS);
  pa_grid grid;
  memset(&grid, 0, sizeof grid);
  grid.width = m->width;
  grid.height = m->height;
  grid.resolution = m->resolution;
  grid.origin_x = m->origin_x;
  grid.origin_y = m->origin_y;
  grid.origin_yaw = m->origin_yaw;
  grid.cells = (int8_t *)cells; /* read only: pa_dist_build takes const */
  grid.occupied_min = (int8_t)threshold;
  pa_dist dist;
  memset(&dist, 0, sizeof dist);
  char err[128];
  if (inflation > 0 &&
      pa_dist_build(&grid, unknown_blocks, &dist, err, sizeof err) != 0)
    return jfail(x, PA_ERR_BUSY, "distance transform failed: %s", err);
  json_t *rows = json_array();
  char *row = malloc((size_t)ow + 1);
  if (!row) {
    pa_dist_free(&dist);
    json_decref(rows);
    return jfail(x, PA_ERR_BUSY, "out of memory");
  }
  uint64_t blocked_n = 0;
  for (uint32_t oy = 0; oy < oh; oy++) {
    for (uint32_t ox = 0; ox < ow; ox++) {
      char ch = '.';
      for (uint32_t y = oy * (uint32_t)stride;
           y < (oy + 1) * (uint32_t)stride && y < m->height && ch != '#'; y++)
        for (uint32_t cx = ox * (uint32_t)stride;
             cx < (ox + 1) * (uint32_t)stride && cx < m->width; cx++) {
          size_t i = (size_t)y * m->width + cx;
          int8_t v = cells[i];
          bool blocked = v >= threshold || (v < 0 && unknown_blocks) ||
                         (inflation > 0 && dist.d[i] <= inflation);
          if (blocked) {
            ch = '#';
            break;
          }
          if (v < 0)
            ch = '?';
        }
      blocked_n += ch == '#';
      row[ox] = ch;
    }
    json_array_append_new(rows, json_stringn(row, ow));
  }
  free(row);
  pa_dist_free(&dist);
  json_t *d = json_object();
  json_object_set_new(d, "width", json_integer(ow));
  json_object_set_new(d, "height", json_integer(oh));
  json_object_set_new(d, "resolution", json_real(m->resolution * (double)stride));
  json_object_set_new(d, "origin", vec3(m->origin_x, m->origin_y, m->origin_yaw));
  json_object_set_new(d, "inflation", json_real(inflation));
  json_object_set_new(d, "threshold", json_integer(threshold));
  json_object_set_new(d, "stride", json_integer(stride));
  json_object_set_new(d, "gen", json_integer(m->gen));
  json_object_set_new(d, "blocked_cells", json_integer((json_int_t)blocked_n));
  json_object_set_new(d, "encoding", json_string("rows: row 0 = south edge, "
                                                 "'.' free, '#' blocked, '?' "
                                                 "unknown"));
  json_object_set_new(d, "rows", rows);
  return d;
}

static json_t *act_status(jctx *x, double *sim_time) {
  pa_netgw *g = x->c->g;
  const pa_tick *t = pa_gw_latest(g);
  json_t *d = json_object();
  json_object_set_new(d, "tick", json_integer(t ? (json_int_t)t->tick : 0));
  *sim_time = t ? t->sim_time : 0;
  json_object_set_new(d, "sim_time", json_real(*sim_time));
  json_object_set_new(d, "paused", json_boolean(t && (t->flags & PA_TICK_PAUSED)));
  json_object_set_new(d, "speed", json_real(t ? t->speed : 0));
  json_object_set_new(d, "control_hz", json_real(g->ctl->control_hz));
  json_object_set_new(d, "scan_hz", json_real(g->ctl->scan_hz));
  json_object_set_new(d, "feedback_hz", json_real(g->def.feedback_hz));
  json_object_set_new(d, "robot_count", json_integer(g->ctl->robot_count));
  json_object_set_new(d, "obstacle_count",
                      json_integer(g->ctl->obstacle_count));
  json_object_set_new(d, "clients", json_integer(g->n_clients));
  json_object_set_new(d, "sim_ready",
                      json_boolean(g->ctl->health[PA_PROC_SIM].ready));
  return d;
}

static int find_action(const char *name) {
  for (int i = 0; i < A_COUNT; i++)
    if (!strcmp(name, action_names[i]))
      return i;
  return A_NONE;
}

/* Runs one request: the response envelope, or JPENDING. */
static json_t *exec_one(pa_client *c, json_t *req) {
  pa_netgw *g = c->g;
  jctx x;
  memset(&x, 0, sizeof x);
  x.c = c;
  x.req = req;
  x.action = A_NONE;
  const char *aname = NULL;
  double sim_time = 0;
  json_t *d = NULL;
  if (!json_is_object(req)) {
    jfail(&x, PA_ERR_INVALID_MESSAGE, "a request must be a JSON object");
    goto err;
  }
  json_t *type = json_object_get(req, "type");
  json_t *pv = json_object_get(req, "protocol_version");
  json_t *act = json_object_get(req, "action");
  if (act && json_is_string(act))
    aname = json_string_value(act);
  if (!type || !json_is_string(type)) {
    jfail(&x, PA_ERR_INVALID_MESSAGE, "missing \"type\" (command, sim_control "
                                      "or batch)");
    goto err;
  }
  const char *ts = json_string_value(type);
  if (!strcmp(ts, "batch")) {
    jfail(&x, PA_ERR_INVALID_MESSAGE, "a batch cannot contain a batch");
    goto err;
  }
  bool simctl = !strcmp(ts, "sim_control");
  if (!simctl && strcmp(ts, "command") != 0) {
    jfail(&x, PA_ERR_UNKNOWN_TYPE,
          "type '%.64s' is not supported (command, sim_control or batch)", ts);
    goto err;
  }
  if (pv && (!json_is_integer(pv) || json_integer_value(pv) != 2)) {
    jfail(&x, PA_ERR_INVALID_MESSAGE, "protocol_version must be 2");
    goto err;
  }
  if (!aname) {
    jfail(&x, PA_ERR_INVALID_MESSAGE, "missing \"action\" string");
    goto err;
  }
  x.data = json_object_get(req, "data");
  if (x.data && !json_is_object(x.data) && !json_is_null(x.data)) {
    jfail(&x, PA_ERR_INVALID_MESSAGE, "\"data\" must be an object");
    goto err;
  }
  json_t *empty = NULL;
  if (!x.data || json_is_null(x.data))
    x.data = empty = json_object();
  x.action = find_action(aname);
  if (g->token[0] && !c->authed && x.action != A_AUTH) {
    jfail(&x, PA_ERR_NOT_AUTHORIZED,
          "send {\"type\": \"command\", \"action\": \"auth\", \"data\": "
          "{\"token\": ...}} first");
    goto err_data;
  }
  pa_robot_info info;
  uint32_t idx;
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  sim_time = -1;
  switch (x.action) {
  case A_GET_STATE:
    if (get_robot(&x, &info, &idx) == 0)
      d = state_json(&x, idx, &info, &sim_time);
    break;
  case A_GET_SENSORS:
    if (get_robot(&x, &info, &idx) == 0) {
      const pa_tick *t = pa_gw_latest(g);
      d = sensors_json(c, idx);
      json_object_set_new(d, "robot", json_integer(idx));
      json_object_set_new(d, "tick", json_integer(t ? (json_int_t)t->tick : 0));
    }
    break;
  case A_STEP: {
    long long steps = 1;
    if (get_robot(&x, &info, &idx) < 0 ||
        get_int(&x, "steps", 1, PA_NETGW_STEP_MAX, &steps) < 0 ||
        drive_fields(&x, &info, &cmd) < 0)
      break;
    cmd.op = PA_OP_STEP;
    cmd.flags = PA_CMDF_DRIVE;
    cmd.u = (uint32_t)steps;
    cmd.a[4] = PA_FRAME_ROBOT;
    d = wait_for_sim(&x, &cmd, idx);
    break;
  }
  case A_SET_VELOCITY:
  case A_SET_VELOCITY_LOCAL:
  case A_SET_VELOCITY_GLOBAL:
  case A_SET_WHEELS:
    if (get_robot(&x, &info, &idx) == 0 && drive_fields(&x, &info, &cmd) == 0)
      d = push_nowait(&x, &cmd, idx);
    break;
  case A_STOP:
    if (get_robot(&x, &info, &idx) == 0) {
      cmd.op = PA_OP_STOP;
      d = push_nowait(&x, &cmd, idx);
    }
    break;
  case A_GET_POSE:
    d = act_get_pose(&x, &sim_time);
    break;
  case A_SET_POSE:
    d = act_set_pose(&x);
    break;
  case A_SUBSCRIBE:
  case A_UNSUBSCRIBE:
    d = act_subscribe(&x, x.action == A_SUBSCRIBE);
    break;
  case A_LIST_ROBOTS:
    d = act_list_robots(&x);
    break;
  case A_SPAWN_ROBOT:
    d = act_spawn_robot(&x);
    break;
  case A_REMOVE_ROBOT:
    if (get_robot(&x, &info, &idx) == 0) {
      cmd.op = PA_OP_REMOVE_ROBOT;
      d = wait_for_sim(&x, &cmd, idx);
    }
    break;
  case A_SPAWN_OBSTACLE:
    d = act_spawn_obstacle(&x);
    break;
  case A_REMOVE_OBSTACLE: {
    const char *name = NULL;
    pa_obstacle_info ob;
    if (need_str(&x, "name", 32, &name) < 0)
      break;
    int rc = pa_gw_obstacle(g, name, &ob, &idx);
    if (rc != 0) {
      if (!lookup_busy(&x, rc))
        jfail(&x, PA_ERR_UNKNOWN_OBJECT, "no obstacle named '%s'", name);
      break;
    }
    cmd.op = PA_OP_REMOVE_OBSTACLE;
    snprintf(cmd.name, sizeof cmd.name, "%s", name);
    d = wait_for_sim(&x, &cmd, 0);
    break;
  }
  case A_LIST_OBSTACLES:
    d = act_list_obstacles(&x);
    break;
  case A_GET_MAP_INFO:
    d = act_map_info(&x);
    break;
  case A_GET_PROPERTY:
    d = act_get_property(&x);
    break;
  case A_SAVE_SNAPSHOT:
  case A_LOAD_SNAPSHOT:
    d = act_snapshot(&x);
    break;
  case A_SET_MAP:
    d = act_set_map(&x);
    break;
  case A_GENERATE_MAP:
    d = act_generate_map(&x);
    break;
  case A_SET_SCENARIO:
    d = act_set_scenario(&x);
    break;
  case A_SET_NAV_PATH:
  case A_SET_WAYPOINTS:
  case A_CLEAR_NAV:
    d = act_nav(&x);
    break;
  case A_EXPORT_DATASET:
    d = act_export_dataset(&x);
    break;
  case A_SET_PROPERTY:
    d = act_set_property(&x);
    break;
  case A_GET_TERRAIN_GRID:
    d = act_terrain_grid(&x);
    break;
  case A_AUTH: {
    const char *tok = NULL;
    if (get_str(&x, "token", 256, &tok) < 0)
      break;
    if (g->token[0] && (!tok || !pa_gw_auth_try(x.c, tok))) {
      jfail(&x, PA_ERR_NOT_AUTHORIZED, "wrong token");
      break;
    }
    c->authed = true;
    d = json_object();
    break;
  }
  case A_PING:
    d = json_object();
    json_object_set_new(d, "pong", json_true());
    break;
  case A_PAUSE:
  case A_RESUME:
  case A_RESET:
    cmd.op = x.action == A_PAUSE    ? PA_OP_PAUSE
             : x.action == A_RESUME ? PA_OP_RESUME
                                    : PA_OP_RESET;
    d = wait_for_sim(&x, &cmd, 0);
    break;
  case A_STEP_N: {
    long long steps = 1;
    if (get_int(&x, "steps", 1, PA_NETGW_STEP_MAX, &steps) < 0)
      break;
    cmd.op = PA_OP_STEP;
    cmd.u = (uint32_t)steps;
    d = wait_for_sim(&x, &cmd, 0);
    break;
  }
  case A_SET_TIME_SCALE: {
    double f = 1;
    int r = get_num(&x, "scale", &f);
    if (r == 0)
      r = get_num(&x, "factor", &f);
    if (r == 0)
      jfail(&x, PA_ERR_INVALID_MESSAGE, "data.scale is required (0 = as fast "
                                        "as possible)");
    if (r <= 0)
      break;
    if (f < 0 || f > PA_NETGW_SPEED_MAX) {
      jfail(&x, PA_ERR_INVALID_MESSAGE, "data.scale %g is out of range [0, %g]",
            f, PA_NETGW_SPEED_MAX);
      break;
    }
    cmd.op = PA_OP_SPEED;
    cmd.a[0] = f;
    d = wait_for_sim(&x, &cmd, 0);
    break;
  }
  case A_GET_STATUS:
    d = act_status(&x, &sim_time);
    break;
  default:
    jfail(&x, PA_ERR_UNKNOWN_ACTION, "unknown action '%.64s'", aname);
    break;
  }
  if (empty)
    json_decref(empty);
  if (d == JPENDING) {
    json_incref(req);
    c->jreq = req;
    return JPENDING;
  }
  if (d) {
    if (sim_time < 0)
      sim_time = now_sim_time(g);
    return envelope_ok(req, x.action, d, sim_time);
  }
  goto err;
err_data:
  if (empty)
    json_decref(empty);
err:
  if (x.st == PA_OK)
    jfail(&x, PA_ERR_INVALID_MESSAGE, "request failed");
  return envelope_err(req, x.action >= 0 ? action_names[x.action] : aname,
                      x.st, x.msg, now_sim_time(g));
}

/* ---- batches and completion --------------------------------------------------*/

static void finish_batch(pa_client *c) {
  json_t *o = json_object();
  json_object_set_new(o, "type", json_string("response"));
  json_object_set_new(o, "protocol_version", json_integer(2));
  echo_id(o, c->jbatch);
  json_object_set_new(o, "action", json_string("batch"));
  json_object_set_new(o, "status", json_string("ok"));
  json_object_set_new(o, "success", json_true());
  json_object_set_new(o, "sim_time", json_real(now_sim_time(c->g)));
  size_t n = json_array_size(c->jresponses);
  json_object_set_new(o, "count", json_integer((json_int_t)n));
  json_t *d = json_object();
  json_object_set_new(d, "count", json_integer((json_int_t)n));
  json_object_set(d, "responses", c->jresponses);
  json_object_set_new(o, "data", d);
  json_decref(c->jbatch);
  json_decref(c->jresponses);
  c->jbatch = c->jresponses = NULL;
  send_json(c, o);
}

/* Runs batch requests from jbatch_i until one waits or all are answered. */
static void run_batch(pa_client *c) {
  json_t *reqs = json_object_get(c->jbatch, "requests");
  while (c->jbatch_i < json_array_size(reqs)) {
    json_t *r = exec_one(c, json_array_get(reqs, c->jbatch_i));
    if (r == JPENDING)
      return;
    json_array_append_new(c->jresponses, r);
    c->jbatch_i++;
  }
  finish_batch(c);
}

void pa_json_line(pa_client *c, const char *line, size_t len) {
  json_error_t je;
  json_t *req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
  if (!req) {
    char msg[256];
    snprintf(msg, sizeof msg, "bad JSON at column %d: %s", je.column, je.text);
    pa_json_error_line(c, PA_ERR_INVALID_MESSAGE, msg);
    return;
  }
  json_t *type = json_is_object(req) ? json_object_get(req, "type") : NULL;
  if (type && json_is_string(type) &&
      !strcmp(json_string_value(type), "batch")) {
    json_t *reqs = json_object_get(req, "requests");
    const char *bad = NULL;
    pa_status st = PA_ERR_INVALID_MESSAGE;
    char msg[128];
    if (c->g->token[0] && !c->authed) {
      st = PA_ERR_NOT_AUTHORIZED;
      bad = "authenticate before sending a batch";
    } else if (!json_is_array(reqs)) {
      bad = "a batch needs \"requests\": [...]";
    } else if (json_array_size(reqs) > PA_NETGW_BATCH_MAX) {
      st = PA_ERR_BATCH_LIMIT;
      snprintf(msg, sizeof msg, "a batch holds at most %u requests, got %zu",
               PA_NETGW_BATCH_MAX, json_array_size(reqs));
      bad = msg;
    }
    if (bad) {
      send_json(c, envelope_err(req, "batch", st, bad, now_sim_time(c->g)));
      json_decref(req);
      return;
    }
    c->jbatch = req;
    c->jresponses = json_array();
    c->jbatch_i = 0;
    run_batch(c);
    return;
  }
  json_t *r = exec_one(c, req);
  if (r != JPENDING)
    send_json(c, r);
  json_decref(req);
}

void pa_json_complete(pa_client *c, const pa_reply *r) {
  pa_netgw *g = c->g;
  json_t *req = c->jreq;
  c->jreq = NULL;
  int action = c->pend_action;
  json_t *resp;
  if (!r) {
    char msg[128];
    snprintf(msg, sizeof msg, "the simulator did not answer within %u ms",
             g->def.request_timeout_ms);
    resp = envelope_err(req, action_names[action], PA_ERR_BUSY, msg,
                        now_sim_time(g));
  } else if (r->status != PA_OK) {
    char msg[sizeof r->msg + 1];
    memcpy(msg, r->msg, sizeof r->msg);
    msg[sizeof r->msg] = '\0';
    pa_status st = r->status > 0 && r->status < PA_STATUS_COUNT
                       ? (pa_status)r->status
                       : PA_ERR_INVALID_MESSAGE;
    resp = envelope_err(req, action_names[action], st,
                        msg[0] ? msg : "rejected by the simulator",
                        r->sim_time);
  } else {
    json_t *d = NULL;
    double sim_time = r->sim_time;
    jctx x;
    memset(&x, 0, sizeof x);
    x.c = c;
    x.action = action;
    if (action == A_STEP) {
      g->steps++;
      pa_robot_info info;
      uint32_t idx;
      if (pa_gw_robot(g, NULL, (long)c->pend_robot, &info, &idx) == 0)
        d = state_json(&x, idx, &info, &sim_time);
      else
        jfail(&x, PA_ERR_UNKNOWN_ROBOT, "robot %u is gone",
              (unsigned)c->pend_robot);
    } else if (action == A_SET_PROPERTY) {
      /* The object as the sim published it (before its reply). */
      x.data = json_object_get(req, "data");
      pa_robot_info ri;
      pa_obstacle_info oi;
      uint32_t idx = 0;
      const char *key = json_string_value(json_object_get(x.data, "property"));
      int rc = c->pend_robot == UINT32_MAX
                   ? pa_gw_obstacle(
                         g, json_string_value(json_object_get(x.data, "name")),
                         &oi, &idx)
                   : pa_gw_robot(g, NULL, (long)c->pend_robot, &ri, &idx);
      if (rc == 0)
        d = props_reply(&x, c->pend_robot == UINT32_MAX ? P_OBSTACLE : P_ROBOT,
                        &ri, &oi, idx, key);
      else if (!lookup_busy(&x, rc))
        jfail(&x,
              c->pend_robot == UINT32_MAX ? PA_ERR_UNKNOWN_OBJECT
                                          : PA_ERR_UNKNOWN_ROBOT,
              "the %s is gone",
              c->pend_robot == UINT32_MAX ? "obstacle" : "robot");
      if (d)
        json_object_set_new(d, "tick", json_integer((json_int_t)r->tick));
    } else {
      d = json_object();
      json_object_set_new(d, "tick", json_integer((json_int_t)r->tick));
      if (action == A_SET_POSE) {
        json_object_set_new(d, "robot", json_integer(c->pend_robot));
        json_object_set_new(d, "pose", vec3(r->a[0], r->a[1], r->a[2]));
        json_object_set_new(d, "sim_time", json_real(r->sim_time));
      } else if (action == A_SPAWN_ROBOT) {
        json_object_set_new(d, "robot", json_integer(r->u));
      } else if (action == A_REMOVE_ROBOT) {
        json_object_set_new(d, "robot", json_integer(c->pend_robot));
        nav_clear_robot(g, c->pend_robot);
      } else if (action == A_SAVE_SNAPSHOT || action == A_LOAD_SNAPSHOT) {
        json_t *nm = json_object_get(json_object_get(req, "data"), "name");
        json_object_set(d, "name", nm);
        json_object_set_new(d, "robots", json_integer(r->u));
        json_object_set_new(d, "obstacles", json_integer((json_int_t)r->a[2]));
        json_object_set_new(d, "saved_tick", json_integer((json_int_t)r->a[0]));
        json_object_set_new(d, "saved_sim_time", json_real(r->a[1]));
      } else if (action == A_EXPORT_DATASET) {
        json_t *nm = json_object_get(json_object_get(req, "data"), "name");
        json_object_set(d, "name", nm);
        json_object_set_new(d, "first_tick", json_integer((json_int_t)r->a[0]));
        json_object_set_new(d, "last_tick", json_integer((json_int_t)r->a[1]));
      } else if (action == A_SET_MAP || action == A_GENERATE_MAP ||
                 action == A_SET_SCENARIO) {
        json_object_set_new(d, "width", json_integer((json_int_t)r->a[0]));
        json_object_set_new(d, "height", json_integer((json_int_t)r->a[1]));
        json_object_set_new(d, "resolution", json_real(r->a[2]));
        json_t *o = json_array();
        json_array_append_new(o, json_real(r->a[3]));
        json_array_append_new(o, json_real(r->a[4]));
        json_object_set_new(d, "origin", o);
        json_object_set_new(d, "robots_moved", json_integer(r->u));
        if (action == A_SET_SCENARIO) {
          json_object_set_new(d, "robots", json_integer((json_int_t)r->a[5]));
          json_object_set_new(d, "obstacles",
                              json_integer((json_int_t)r->a[6]));
        }
      }
    }
    resp = d ? envelope_ok(req, action, d, sim_time)
             : envelope_err(req, action_names[action], x.st, x.msg, sim_time);
  }
  json_decref(req);
  if (c->jbatch) {
    json_array_append_new(c->jresponses, resp);
    c->jbatch_i++;
    run_batch(c);
  } else {
    send_json(c, resp);
  }
}

void pa_json_release(pa_client *c) {
  json_decref(c->jreq); /* each may be NULL */
  json_decref(c->jbatch);
  json_decref(c->jresponses);
  c->jreq = c->jbatch = c->jresponses = NULL;
  splices_free(c);
}
