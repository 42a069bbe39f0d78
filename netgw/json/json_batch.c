/* json_batch.c - step_batch: commands for many robots, k lockstep ticks, and
 * the state and latest scan of every one of them in one reply, as JSON or
 * as a JSON header line followed by a binary block (docs/PROTOCOL.md; the
 * block is json_obs_block.c's). The commands go to pa-sim as one SET_CMD
 * each (no reply) and then one STEP, in queue order, so pa-sim needs
 * nothing new. */
#define _GNU_SOURCE
#include "json_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The binary block's format is the contract's (pa_layout.h: PA_OBS_*,
 * pa_obs_row): pa-sim writes the same block into the observation segment. */

/* Each base64 character's value + 1; 0: not in the alphabet. A table, not
 * a chain of compares: 1,000 robots' actions are ~11,000 characters. */
static const unsigned char B64_VAL[256] = {
    ['A'] = 1,  ['B'] = 2,  ['C'] = 3,  ['D'] = 4,  ['E'] = 5,  ['F'] = 6,
    ['G'] = 7,  ['H'] = 8,  ['I'] = 9,  ['J'] = 10, ['K'] = 11, ['L'] = 12,
    ['M'] = 13, ['N'] = 14, ['O'] = 15, ['P'] = 16, ['Q'] = 17, ['R'] = 18,
    ['S'] = 19, ['T'] = 20, ['U'] = 21, ['V'] = 22, ['W'] = 23, ['X'] = 24,
    ['Y'] = 25, ['Z'] = 26, ['a'] = 27, ['b'] = 28, ['c'] = 29, ['d'] = 30,
    ['e'] = 31, ['f'] = 32, ['g'] = 33, ['h'] = 34, ['i'] = 35, ['j'] = 36,
    ['k'] = 37, ['l'] = 38, ['m'] = 39, ['n'] = 40, ['o'] = 41, ['p'] = 42,
    ['q'] = 43, ['r'] = 44, ['s'] = 45, ['t'] = 46, ['u'] = 47, ['v'] = 48,
    ['w'] = 49, ['x'] = 50, ['y'] = 51, ['z'] = 52, ['0'] = 53, ['1'] = 54,
    ['2'] = 55, ['3'] = 56, ['4'] = 57, ['5'] = 58, ['6'] = 59, ['7'] = 60,
    ['8'] = 61, ['9'] = 62, ['+'] = 63, ['/'] = 64,
};

/* Standard base64 (padding optional) into out (room for 3/4 of len);
 * the byte count, or -1 on a character outside the alphabet or a bad end. */
static long b64_decode(const char *s, size_t len, unsigned char *out) {
  while (len && s[len - 1] == '=')
    len--;
  if (len % 4 == 1)
    return -1;
  const unsigned char *u = (const unsigned char *)s;
  long n = 0;
  size_t i = 0;
  for (; i + 4 <= len; i += 4) { /* whole quads: 3 bytes each */
    unsigned a = B64_VAL[u[i]], b = B64_VAL[u[i + 1]], c = B64_VAL[u[i + 2]],
             d = B64_VAL[u[i + 3]];
    if (!a || !b || !c || !d)
      return -1;
    uint32_t q = (a - 1) << 18 | (b - 1) << 12 | (c - 1) << 6 | (d - 1);
    out[n++] = (unsigned char)(q >> 16);
    out[n++] = (unsigned char)(q >> 8);
    out[n++] = (unsigned char)q;
  }
  uint32_t acc = 0;
  unsigned bits = 0;
  for (; i < len; i++) { /* the last 2 or 3 characters */
    unsigned v = B64_VAL[u[i]];
    if (!v)
      return -1;
    acc = (acc << 6) | (v - 1);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[n++] = (unsigned char)(acc >> bits);
    }
  }
  return n;
}

/* pa_json_fail for the id list: NULL. */
static uint32_t *fail_ids(jctx *x, pa_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static uint32_t *fail_ids(jctx *x, pa_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pa_json_vfail(x, st, fmt, ap);
  va_end(ap);
  return NULL;
}

/* A value no id has: data.robots[i] that is not an integer. */
#define NOT_AN_ID INT64_MIN

/* data.robots (integers) or data.robots_b64 (little-endian uint32 in base64:
 * 1,000 ids without 1,000 JSON numbers to parse and free) as *cnt int64
 * values in a new array; NULL with the error set (*cnt 1), or NULL and *cnt
 * 0 when neither is given. */
static int64_t *raw_ids(jctx *x, uint32_t max, size_t *cnt) {
  json_t *rv = json_object_get(x->data, "robots");
  json_t *rb = json_object_get(x->data, "robots_b64");
  json_t *rr = json_object_get(x->data, "robots_range");
  *cnt = 1;
  if (!!rv + !!rb + !!rr > 1)
    return (int64_t *)fail_ids(
        x, PA_ERR_INVALID_MESSAGE,
        "give one of data.robots, data.robots_b64 and data.robots_range");
  if (rr) { /* [first, count]: ids first .. first + count - 1 */
    json_t *f = json_array_get(rr, 0), *k = json_array_get(rr, 1);
    json_int_t first = json_is_integer(f) ? json_integer_value(f) : -1;
    json_int_t n = json_is_integer(k) ? json_integer_value(k) : -1;
    if (!json_is_array(rr) || json_array_size(rr) != 2 || first < 0 || n < 1 ||
        n > (json_int_t)max || first > (json_int_t)max)
      return (int64_t *)fail_ids(x, PA_ERR_INVALID_ACTION_SHAPE,
                                 "data.robots_range must be [first, count] "
                                 "with first >= 0 and count 1 to %u",
                                 (unsigned)max);
    int64_t *raw = malloc((size_t)n * sizeof *raw);
    if (!raw)
      return (int64_t *)fail_ids(x, PA_ERR_BUSY, "out of memory");
    for (json_int_t i = 0; i < n; i++)
      raw[i] = first + i;
    *cnt = (size_t)n;
    return raw;
  }
  if (rv && !json_is_array(rv))
    return (int64_t *)fail_ids(x, PA_ERR_INVALID_ACTION_SHAPE,
                               "data.robots must be an array of robot ids");
  if (rb && !json_is_string(rb))
    return (int64_t *)fail_ids(x, PA_ERR_INVALID_ACTION_SHAPE,
                               "data.robots_b64 must be a base64 string");
  if (!rv && !rb) {
    *cnt = 0;
    return NULL;
  }
  size_t len = rb ? json_string_length(rb) : 0;
  size_t n = rv ? json_array_size(rv) : len / 4 * 3 / 4 + 1;
  int64_t *raw = malloc((n ? n : 1) * sizeof *raw);
  unsigned char *bytes = rb ? malloc(len / 4 * 3 + 3) : NULL;
  if (!raw || (rb && !bytes)) {
    free(raw);
    free(bytes);
    return (int64_t *)fail_ids(x, PA_ERR_BUSY, "out of memory");
  }
  if (rv) {
    for (size_t i = 0; i < n; i++) {
      json_t *e = json_array_get(rv, i);
      raw[i] = json_is_integer(e) ? json_integer_value(e) : NOT_AN_ID;
    }
  } else {
    long got = b64_decode(json_string_value(rb), len, bytes);
    if (got < 0 || got % 4) {
      free(raw);
      free(bytes);
      return (int64_t *)fail_ids(
          x, PA_ERR_INVALID_ACTION_SHAPE,
          got < 0 ? "data.robots_b64 is not base64"
                  : "data.robots_b64 must hold 4 bytes (uint32) per robot id");
    }
    n = (size_t)got / 4;
    for (size_t i = 0; i < n; i++) /* little-endian on any host */
      raw[i] =
          (int64_t)((uint32_t)bytes[4 * i] | (uint32_t)bytes[4 * i + 1] << 8 |
                    (uint32_t)bytes[4 * i + 2] << 16 |
                    (uint32_t)bytes[4 * i + 3] << 24);
    free(bytes);
  }
  if (n == 0 || n > max) {
    free(raw);
    return (int64_t *)fail_ids(x, PA_ERR_INVALID_ACTION_SHAPE,
                               "data.%s has %zu ids: give 1 to %u",
                               rv ? "robots" : "robots_b64", n, (unsigned)max);
  }
  *cnt = n;
  return raw;
}

/* Whether every id of raw is a distinct active robot, checked under one read
 * of the world table's seqlock instead of copying each robot's entry (440
 * bytes, a seqlock read each: 1,000 of them per step_batch); ids filled in.
 * False (not an error) when one is not, or the table changed meanwhile: the
 * caller then checks one by one and names the bad id. */
static bool ids_ok(pa_netgw *g, const int64_t *raw, size_t cnt, uint32_t max,
                   const pa_tick *t, uint32_t *ids, char *seen) {
  uint64_t s = pa_stack_world_read_begin(g->st);
  if (s & 1u)
    return false;
  bool ok = true;
  for (size_t i = 0; ok && i < cnt; i++) {
    int64_t id = raw[i];
    ok = id >= 0 && id < (int64_t)max && !seen[id];
    if (ok && !(t && pa_gw_robot_state(t, (uint32_t)id)))
      ok = __atomic_load_n(&g->st->robots[id].active, __ATOMIC_RELAXED) != 0;
    if (ok) {
      seen[id] = 1;
      ids[i] = (uint32_t)id;
    }
  }
  return ok && !pa_stack_world_read_retry(g->st, s);
}

/* The robot ids of data.robots or data.robots_b64 (default: every active
 * robot), into a new array; NULL with the error set. With a tick t (the
 * reply), an id whose active state t holds is known to be a robot without
 * copying its world entry (a reply for 1,000 robots would copy 1,000 of
 * them); others are looked up as before. */
static uint32_t *batch_robots(jctx *x, size_t *n, const pa_tick *t) {
  pa_netgw *g = x->c->g;
  uint32_t max = g->ctl->def.max_robots;
  size_t cnt = 0;
  int64_t *raw = raw_ids(x, max, &cnt);
  if (!raw && cnt)
    return NULL;
  uint32_t *ids = malloc((size_t)(raw ? cnt : max ? max : 1) * sizeof *ids);
  char *seen = calloc(max ? max : 1, 1);
  if (!ids || !seen) {
    free(raw);
    free(ids);
    free(seen);
    return fail_ids(x, PA_ERR_BUSY, "out of memory");
  }
  pa_robot_info info;
  uint32_t idx;
  if (!raw) {
    uint32_t top = __atomic_load_n(&g->ctl->robot_count, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < top && i < max; i++)
      if ((t && pa_gw_robot_state(t, i)) ||
          pa_gw_robot(g, NULL, (long)i, &info, &idx) == 0)
        ids[cnt++] = i;
    free(seen);
    if (cnt == 0) {
      free(ids);
      return fail_ids(x, PA_ERR_UNKNOWN_ROBOT, "there are no robots");
    }
    *n = cnt;
    return ids;
  }
  if (ids_ok(g, raw, cnt, max, t, ids, seen)) {
    free(raw);
    free(seen);
    *n = cnt;
    return ids;
  }
  const char *key = json_object_get(x->data, "robots")       ? "robots"
                    : json_object_get(x->data, "robots_b64") ? "robots_b64"
                                                             : "robots_range";
  memset(seen, 0, max ? max : 1); /* the slow path names the first bad id */
  for (size_t i = 0; i < cnt; i++) {
    int64_t id = raw[i];
    int rc = id < 0 || id >= (int64_t)max ? -1
             : t && pa_gw_robot_state(t, (uint32_t)id)
                 ? 0
                 : pa_gw_robot(g, NULL, (long)id, &info, &idx);
    const char *why = NULL;
    pa_status st = PA_ERR_UNKNOWN_ROBOT;
    if (id == NOT_AN_ID) {
      why = "is not a robot id";
      st = PA_ERR_INVALID_MESSAGE;
    } else if (rc == PA_GW_BUSY) {
      why = "cannot be read now (the world is being rewritten)";
      st = PA_ERR_BUSY;
    } else if (rc != 0) {
      why = "is not a robot";
    } else if (seen[id]) {
      why = "appears twice";
      st = PA_ERR_INVALID_MESSAGE;
    }
    if (why) {
      free(raw);
      free(ids);
      free(seen);
      if (id == NOT_AN_ID)
        return fail_ids(x, st, "data.%s[%zu] %s", key, i, why);
      return fail_ids(x, st, "data.%s[%zu] (%lld) %s", key, i, (long long)id,
                      why);
    }
    seen[id] = 1;
    ids[i] = (uint32_t)id;
  }
  free(raw);
  free(seen);
  *n = cnt;
  return ids;
}

/* An optional boolean data.key (default dflt): false with the error set. */
static bool flag(jctx *x, const char *key, bool dflt, bool *out) {
  json_t *b = json_object_get(x->data, key);
  *out = b ? json_is_true(b) : dflt;
  if (b && !json_is_boolean(b)) {
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "data.%s must be true or false", key);
    return false;
  }
  return true;
}

static bool want_binary(jctx *x, bool *bin) {
  return flag(x, "binary", false, bin);
}

/* data.observe: true (default: the observations in the reply), false (none)
 * or "shm" (none in the reply: pa-sim writes them into the observation
 * segment, and the reply names the block: obs_seq). */
static bool observe_mode(jctx *x, bool *obs, bool *shm) {
  json_t *o = json_object_get(x->data, "observe");
  *shm = o && json_is_string(o) && !strcmp(json_string_value(o), "shm");
  if (*shm) {
    *obs = false;
    return true;
  }
  if (o && !json_is_boolean(o)) {
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "data.observe must be true, false or \"shm\"");
    return false;
  }
  return flag(x, "observe", true, obs);
}

/* data.beams: each robot's scan as this many sectors (pa_obs_sectors), in
 * whichever form the observations come (JSON, binary, "shm"); 0 when
 * absent. A policy that looks at 36 directions gets 36 numbers a robot
 * from the process that has the scan in its caches, not 360 to reduce. */
static bool sectors_arg(jctx *x, uint32_t *out) {
  long long b = 0;
  *out = 0;
  if (pa_json_int(x, "beams", 1, x->c->g->ctl->def.max_beams, &b) < 0)
    return false;
  *out = (uint32_t)b;
  return true;
}

/* data.actions_b64: n x k little-endian float64 or float32 (k = 2: v, w;
 * 3: v, vy, w) in base64, the same numbers as data.actions without the
 * text floats; the byte count (16n, 24n; 8n, 12n) says which.
 * A malloc'd array of n * k doubles and *k, or NULL with the error set. */
static double *b64_actions(jctx *x, json_t *b, size_t n, size_t *k) {
  if (!json_is_string(b)) {
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "data.actions_b64 must be a base64 string");
    return NULL;
  }
  size_t len = json_string_length(b);
  unsigned char *raw = malloc(len / 4 * 3 + 3);
  if (!raw) {
    pa_json_fail(x, PA_ERR_BUSY, "out of memory");
    return NULL;
  }
  long got = b64_decode(json_string_value(b), len, raw);
  size_t u = got < 0 ? 0 : (size_t)got;
  size_t w = u == n * 16 || u == n * 24 ? 8 : u == n * 8 || u == n * 12 ? 4 : 0;
  if (got < 0 || !w) {
    free(raw);
    if (got < 0)
      pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                   "data.actions_b64 is not base64");
    else
      pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                   "data.actions_b64 holds %ld bytes: %zu robots need %zu "
                   "([v, w]) or %zu ([v, vy, w]) float64, or %zu or %zu "
                   "float32",
                   got, n, n * 16, n * 24, n * 8, n * 12);
    return NULL;
  }
  *k = u / (n * w);
  double *v = malloc(n * *k * sizeof *v);
  if (!v) {
    free(raw);
    pa_json_fail(x, PA_ERR_BUSY, "out of memory");
    return NULL;
  }
  for (size_t i = 0; i < n * *k; i++) { /* little-endian on any host */
    uint64_t bits = 0;
    for (size_t j = w; j-- > 0;)
      bits = (bits << 8) | raw[i * w + j];
    if (w == 8) {
      memcpy(&v[i], &bits, sizeof bits);
    } else {
      uint32_t b32 = (uint32_t)bits;
      float f;
      memcpy(&f, &b32, sizeof f);
      v[i] = f;
    }
  }
  free(raw);
  return v;
}

/* data.forces[i] for robot id: null (nothing: it keeps what it holds) or
 * [fx, fy, fz] world frame (as step's force) or [fx, fy, fz, tx, ty, tz] a
 * body wrench (as set_body_wrench; OceanSim's body frame, x right, y
 * forward), fz / tx / ty 0 (the world is planar), on a dynamic robot within
 * its limits: *cmd a held SET_FORCE, or op NONE; false with the error set. */
static bool batch_force(jctx *x, json_t *e, size_t i, uint32_t id,
                        pa_cmd *cmd) {
  static const char *const names[] = {"fx", "fy", "fz", "tx", "ty", "tz"};
  memset(cmd, 0, sizeof *cmd);
  if (json_is_null(e))
    return true;
  size_t k = json_is_array(e) ? json_array_size(e) : 0;
  double f[6] = {0, 0, 0, 0, 0, 0};
  bool ok = k == 3 || k == 6;
  for (size_t j = 0; ok && j < k; j++) {
    json_t *v = json_array_get(e, j);
    ok = json_is_number(v) && fabs(json_number_value(v)) <= 1e9;
    f[j] = ok ? json_number_value(v) : 0;
  }
  if (!ok) {
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "data.forces[%zu] (robot %u) must be null, [fx, fy, fz] "
                 "(world) or [fx, fy, fz, tx, ty, tz] (body) of finite numbers",
                 i, (unsigned)id);
    return false;
  }
  for (size_t j = 2; j < 5; j++)
    if (f[j] != 0) {
      pa_json_fail(x, PA_ERR_UNSUPPORTED_CONTROL_SCHEME,
                   "data.forces[%zu][%zu] (%s = %g): the world is planar (x, "
                   "y, yaw); %s must be 0",
                   i, j, names[j], f[j], names[j]);
      return false;
    }
  pa_robot_info info;
  uint32_t idx;
  if (pa_gw_robot(x->c->g, NULL, (long)id, &info, &idx) != 0) {
    pa_json_fail(x, PA_ERR_UNKNOWN_ROBOT, "data.robots[%zu] (%u) is gone", i,
                 (unsigned)id);
    return false;
  }
  const char *why = NULL;
  if (info.dynamics != PA_DYN_DYNAMIC)
    why = "is kinematic: a force needs dynamics 'dynamic'";
  else if (hypot(f[0], f[1]) > info.max_force * (1 + 1e-9))
    why = "is given a force above its max_force";
  else if (fabs(f[5]) > info.max_torque * (1 + 1e-9))
    why = "is given a torque above its max_torque";
  if (why) {
    pa_json_fail(x,
                 info.dynamics != PA_DYN_DYNAMIC
                     ? PA_ERR_UNSUPPORTED_CONTROL_SCHEME
                     : PA_ERR_INVALID_ACTION_SHAPE,
                 "data.forces[%zu]: robot %u ('%s') %s", i, (unsigned)id,
                 info.name, why);
    return false;
  }
  bool body = k == 6; /* OceanSim's body (x right, y forward) to ours */
  cmd->op = PA_OP_SET_FORCE;
  cmd->robot = id;
  cmd->force.mode = PA_FORCE_HOLD;
  cmd->force.frame = body ? PA_FRAME_ROBOT : PA_FRAME_WORLD;
  cmd->force.fx = body ? f[1] : f[0];
  cmd->force.fy = body ? -f[0] : f[1];
  cmd->force.tz = f[5];
  return true;
}

size_t pa_json_cost_step_batch(jctx *x) {
  pa_netgw *g = x->c->g;
  uint32_t top = __atomic_load_n(&g->ctl->robot_count, __ATOMIC_ACQUIRE);
  if (top > g->ctl->def.max_robots)
    top = g->ctl->def.max_robots;
  json_t *rv = json_object_get(x->data, "robots");
  json_t *rb = json_object_get(x->data, "robots_b64");
  json_t *rc = json_array_get(json_object_get(x->data, "robots_range"), 1);
  json_int_t rn = json_is_integer(rc) ? json_integer_value(rc) : 0;
  size_t n = rv && json_is_array(rv)    ? json_array_size(rv)
             : rb && json_is_string(rb) ? json_string_length(rb) / 4 * 3 / 4 + 1
             : rn > 0 && rn <= (json_int_t)top ? (size_t)rn
                                               : top;
  bool bin = false, obs = true, shm = false;
  want_binary(x, &bin); /* a bad value fails in the handler */
  observe_mode(x, &obs, &shm);
  /* The widest laser now (a racing set_property makes the reply a little
   * larger than this bound at most once); no scans in the reply: no need. */
  size_t beams = 1;
  for (uint32_t i = 0; obs && i < top; i++)
    if (g->st->robots[i].laser_beams > beams)
      beams = g->st->robots[i].laser_beams;
  if (beams > g->ctl->def.max_beams)
    beams = g->ctl->def.max_beams;
  size_t per = !obs  ? 0
               : bin ? PA_OBS_FIELDS * 8 + beams * 4
                     : 700 + beams * 20;
  return n * per + PA_JSON_SMALL_REPLY;
}

/* data.actions, data.actions_b64 and data.forces: of the right types and
 * not two of them that exclude each other; false with x's error. */
static bool batch_args_ok(jctx *x, json_t *acts, json_t *b64, json_t *forces) {
  if (forces && !json_is_array(forces)) {
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "data.forces must be an array of null, [fx, fy, fz] "
                 "or [fx, fy, fz, tx, ty, tz] per robot");
    return false;
  }
  if (forces && b64) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.forces goes with data.actions (null for a "
                 "robot it forces), not data.actions_b64");
    return false;
  }
  if (acts && !json_is_array(acts)) {
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "data.actions must be an array of [v, w] or "
                 "[v, vy, w] per robot");
    return false;
  }
  if (acts && b64) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "give data.actions or data.actions_b64, not both");
    return false;
  }
  return true;
}

/* data.forces into fcmds[n] (PA_OP_NONE: not forced), *nf of them forced;
 * false with x's error when one is bad or a robot is both driven and
 * forced. */
static bool batch_forces(jctx *x, json_t *forces, json_t *acts,
                         const uint32_t *ids, size_t n, pa_cmd *fcmds,
                         size_t *nf) {
  for (size_t i = 0; forces && i < n; i++) {
    json_t *fe = json_array_get(forces, i);
    if (!batch_force(x, fe, i, ids[i], &fcmds[i]))
      return false;
    if (fcmds[i].op && acts && !json_is_null(json_array_get(acts, i))) {
      pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                   "data.actions[%zu] and data.forces[%zu] both drive "
                   "robot %u: give null for one",
                   i, i, (unsigned)ids[i]);
      return false;
    }
    *nf += fcmds[i].op != PA_OP_NONE;
  }
  return true;
}

/* Every action (data.actions, or bv[n * bk] decoded from
 * data.actions_b64) checked before any is sent (a bad one changes nothing),
 * packed as it passes into SET_CMDS of up to PA_CMD_DRIVES_MAX robots in
 * out; false with x's error. */
static bool pack_drives(jctx *x, json_t *acts, json_t *b64, json_t *forces,
                        const double *bv, size_t bk, const uint32_t *ids,
                        size_t n, pa_cmd *out) {
  pa_netgw *g = x->c->g;
  size_t nd = 0;
  for (size_t i = 0; (acts || bv) && i < n; i++) {
    double v[3] = {0, 0, 0};
    size_t k = bk;
    bool ok = true;
    if (bv) {
      memcpy(v, bv + i * bk, bk * sizeof *v);
    } else if (forces && json_is_null(json_array_get(acts, i))) {
      continue; /* forced: no velocity command */
    } else {
      json_t *a = json_array_get(acts, i);
      k = json_is_array(a) ? json_array_size(a) : 0;
      ok = k == 2 || k == 3;
      for (size_t j = 0; ok && j < k; j++) {
        json_t *e = json_array_get(a, j);
        ok = json_is_number(e);
        v[j] = ok ? json_number_value(e) : 0;
      }
    }
    pa_cmd_drive d = {.v = v[0],
                      .vy = k == 3 ? v[1] : 0,
                      .w = k == 3 ? v[2] : v[1],
                      .frame = PA_FRAME_ROBOT};
    /* the one drive check pa-sim, set_velocity and text cmd use too */
    const char *bad = ok ? pa_cmd_drive_error(&d) : NULL;
    /* the ids were checked above: the drive only matters for a sideways v */
    pa_robot_info info;
    uint32_t idx;
    if (ok && !bad && k == 3 && v[1] != 0 &&
        pa_gw_robot(g, NULL, (long)ids[i], &info, &idx) != 0)
      ok = false;
    const char *why = !ok   ? "must be [v, w] or [v, vy, w] of numbers"
                      : bad ? bad
                            : NULL;
    if (!why && k == 3 && v[1] != 0 && info.drive != PA_DRIVE_OMNI)
      why = "moves sideways: robot has a differential drive";
    if (why) {
      pa_json_fail(x,
                   ok && !bad ? PA_ERR_UNSUPPORTED_CONTROL_SCHEME
                              : PA_ERR_INVALID_ACTION_SHAPE,
                   "data.%s[%zu] (robot %u) %s",
                   b64 ? "actions_b64" : "actions", i, (unsigned)ids[i], why);
      return false;
    }
    pa_cmd *pk = &out[nd++ / PA_CMD_DRIVES_MAX];
    pk->op = PA_OP_SET_CMDS;
    pk->drives[pk->count++] =
        (pa_cmd_drive_of){.v = d.v, .vy = d.vy, .w = d.w, .robot = ids[i]};
  }
  return true;
}

json_t *pa_json_act_step_batch(jctx *x) {
  pa_client *c = x->c;
  pa_netgw *g = c->g;
  long long steps = 1;
  bool bin, obs, shm;
  uint32_t sectors;
  if (pa_json_int(x, "steps", 1, PA_NETGW_STEP_MAX, &steps) < 0 ||
      !want_binary(x, &bin) || !observe_mode(x, &obs, &shm) ||
      !sectors_arg(x, &sectors))
    return NULL;
  if (bin && c->jbatch)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "a binary step_batch cannot be inside a batch");
  json_t *acts = json_object_get(x->data, "actions");
  json_t *b64 = json_object_get(x->data, "actions_b64");
  json_t *forces = json_object_get(x->data, "forces");
  if (!batch_args_ok(x, acts, b64, forces))
    return NULL;
  size_t n;
  uint32_t *ids = batch_robots(x, &n, NULL);
  if (!ids)
    return NULL;
  json_t *res = NULL; /* NULL: refused, the error set in x */
  double *bv = NULL;
  pa_cmd *fcmds = NULL, *out = NULL;
  size_t bk = 0, nf = 0, nv = 0;
  for (size_t i = 1; shm && i < n; i++)
    if (ids[i] != ids[0] + i) {
      pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                   "data.observe \"shm\" needs the robots as one run of ids "
                   "(robots_range [first, count]): %u follows %u",
                   (unsigned)ids[i], (unsigned)ids[i - 1]);
      goto done;
    }
  if (acts && json_array_size(acts) != n) {
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "data.actions has %zu entries for %zu robots",
                 json_array_size(acts), n);
    goto done;
  }
  if (forces && json_array_size(forces) != n) {
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "data.forces has %zu entries for %zu robots",
                 json_array_size(forces), n);
    goto done;
  }
  if (b64 && !(bv = b64_actions(x, b64, n, &bk)))
    goto done;
  /* Held forces (checked before anything is sent; pushed after the
   * velocity commands, which would clear them). */
  if (forces && !(fcmds = calloc(n, sizeof *fcmds))) {
    pa_json_fail(x, PA_ERR_BUSY, "out of memory");
    goto done;
  }
  if (!batch_forces(x, forces, acts, ids, n, fcmds, &nf))
    goto done;
  nv = bv ? n : 0;
  for (size_t i = 0; acts && i < n; i++)
    nv += !json_is_null(json_array_get(acts, i));
  /* Every command and the STEP fit, or nothing is sent: the velocities go
   * as SET_CMDS of up to PA_CMD_DRIVES_MAX robots each, then the forces. */
  size_t np = (nv + PA_CMD_DRIVES_MAX - 1) / PA_CMD_DRIVES_MAX;
  size_t need = np + nf + 1;
  if (pa_queue_space(g->st->cmd) < need) {
    g->busy++;
    pa_json_fail(x, PA_ERR_BUSY,
                 "step_batch needs %zu command queue slots, %u are free (of "
                 "cmd_capacity %u): send fewer robots",
                 need, (unsigned)pa_queue_space(g->st->cmd),
                 (unsigned)g->ctl->def.cmd_capacity);
    goto done;
  }
  if (need > 1 && !(out = calloc(need - 1, sizeof *out))) {
    pa_json_fail(x, PA_ERR_BUSY, "out of memory");
    goto done;
  }
  if (!pack_drives(x, acts, b64, forces, bv, bk, ids, n, out))
    goto done;
  for (size_t i = 0; fcmds && i < n; i++)
    if (fcmds[i].op != PA_OP_NONE)
      out[np++] = fcmds[i];
  if (np && pa_gw_push_many_nowait(c, out, np) != 0) {
    g->busy++; /* pa-sim stalled: nothing of this step_batch was sent */
    pa_json_fail(x, PA_ERR_BUSY, "%s", g->busy_msg);
    goto done;
  }
  pa_cmd step;
  memset(&step, 0, sizeof step);
  step.op = PA_OP_STEP;
  step.step.ticks = (uint32_t)steps;
  if (shm) {
    step.flags |= PA_CMDF_OBS;
    step.step.obs_first = ids[0];
    step.step.obs_count = (uint32_t)n;
    step.step.obs_beams = sectors;
  }
  res = pa_json_wait_for_sim(x, &step, ids[0]);
done:
  free(ids);
  free(bv);
  free(fcmds);
  free(out);
  return res;
}

/* Scan s as `sectors` sectors (pa_obs_sectors) into o, a scan record of
 * room for them (header, then the ranges): o. */
static const pa_scan *scan_sectors(pa_scan *o, const pa_scan *s,
                                   uint32_t sectors) {
  *o = *s;
  o->angle_increment =
      (float)pa_obs_sector_inc(s->angle_increment, s->count, sectors);
  o->count = sectors;
  pa_obs_sectors((float *)(void *)(o + 1), sectors,
                 (const float *)(const void *)(s + 1), s->count);
  return o;
}

/* Robot id's JSON: its state rs and scan s (NULL: none), as `sectors`
 * sectors when not 0 (made in sect, room for them). */
static json_t *robot_json(pa_client *c, uint32_t id, const pa_robot_state *rs,
                          const pa_scan *s, uint32_t sectors, pa_scan *sect) {
  json_t *o = json_object();
  json_object_set_new(o, "robot", json_integer(id));
  if (rs) {
    json_object_set_new(o, "pose", pa_json_vec3(rs->x, rs->y, rs->theta));
    json_object_set_new(o, "odom",
                        pa_json_vec3(rs->odom_x, rs->odom_y, rs->odom_theta));
    /* as get_state: world-frame velocity (OceanSim's), the body's twist */
    double c0 = cos(rs->theta), s0 = sin(rs->theta);
    json_object_set_new(
        o, "velocity",
        pa_json_vec3(c0 * rs->v - s0 * rs->vy, s0 * rs->v + c0 * rs->vy, 0.0));
    json_object_set_new(o, "twist", pa_json_vec3(rs->v, rs->vy, rs->w));
    json_object_set_new(o, "head", json_real(rs->head));
    json_object_set_new(o, "bumped", json_boolean(rs->flags & PA_RS_BUMPED));
  }
  /* a batch's tick carries the time: no sim_time per scan */
  if (s && sectors)
    s = scan_sectors(sect, s, sectors);
  json_object_set_new(o, "scan", s ? pa_json_scan(c, s, false) : json_null());
  return o;
}

json_t *pa_json_done_step_batch(jctx *x, const pa_reply *r) {
  pa_client *c = x->c;
  pa_netgw *g = c->g;
  c->g->steps++;
  bool bin = false, obs = true, shm = false;
  uint32_t sectors = 0;
  want_binary(x, &bin);
  observe_mode(x, &obs, &shm);
  sectors_arg(x, &sectors); /* checked when the request was taken */
  const pa_tick *t = pa_gw_latest(g);
  if (!t)
    return pa_json_fail(x, PA_ERR_BUSY, "no tick to read");
  size_t n;
  uint32_t *ids = batch_robots(x, &n, t); /* a robot removed meanwhile fails */
  if (!ids)
    return NULL;
  x->sim_time = t->sim_time;
  json_t *d = json_object();
  json_object_set_new(d, "tick", json_integer((json_int_t)t->tick));
  json_object_set_new(d, "step_tick", json_integer((json_int_t)r->tick));
  json_object_set_new(d, "sim_time", json_real(t->sim_time));
  json_object_set_new(d, "count", json_integer((json_int_t)n));
  if (shm) /* the block pa-sim wrote (0: none, read the rings) */
    json_object_set_new(d, "obs_seq",
                        json_integer((json_int_t)r->step.obs_seq));
  if (!obs) { /* the client reads them from shared memory */
    free(ids);
    return d;
  }
  if (!bin) {
    pa_scan *sect = NULL; /* the robots' sectors, one at a time */
    if (sectors && !(sect = malloc(sizeof *sect + (size_t)sectors * 4))) {
      free(ids);
      json_decref(d);
      return pa_json_fail(x, PA_ERR_BUSY, "out of memory");
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
      json_array_append_new(arr,
                            robot_json(c, ids[i], pa_gw_robot_state(t, ids[i]),
                                       pa_gw_scan(g, ids[i]), sectors, sect));
    json_object_set_new(d, "robots", arr);
    free(sect);
    free(ids);
    return d;
  }
  uint32_t beams = 0;
  size_t len = 0;
  char *blk = NULL;
  int rc = pa_json_obs_block(g, t, ids, n, true, sectors, &blk, &len, &beams);
  if (rc > 0) /* a scan was overwritten while copied: from the cache */
    rc = pa_json_obs_block(g, t, ids, n, false, sectors, &blk, &len, &beams);
  if (rc < 0) {
    free(ids);
    json_decref(d);
    return pa_json_fail(x, PA_ERR_BUSY, "out of memory");
  }
  free(ids);
  json_t *b = json_object();
  json_object_set_new(b, "bytes", json_integer((json_int_t)len));
  json_object_set_new(b, "beams", json_integer(beams));
  json_object_set_new(b, "fields", json_integer(PA_OBS_FIELDS));
  json_object_set_new(d, "binary", b);
  free(c->bin);
  c->bin = blk;
  c->bin_n = len;
  return d;
}
