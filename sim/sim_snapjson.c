/* sim_snapjson.c - the world as a JSON file under --data_dir (OceanSim's
 * save_snapshot_json, Player's SAVE): map reference and checksum, every
 * robot's properties and dynamic state, obstacles, tick and seed, with each
 * number written so it reads back to the same bits (a reloaded world's next
 * tick is the saved world's). Loading keeps tick and sim time running, as a
 * shared-memory snapshot does. */
#define _GNU_SOURCE
#include "pa_props.h"
#include "pa_sim.h"
#include "sim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SNAPJSON_FORMAT "playarea-world"
#define SNAPJSON_VERSION 1
#define SNAPJSON_MAX_BYTES                                                     \
  (64u << 20) /* a file larger than this is refused                            \
               */

/* ---- the fields: one table per record, read and written alike ------------*/

typedef enum {
  F_NAME, /* char[32] */
  F_NAME16,
  F_U32,
  F_U16,
  F_F32,
  F_F64,
  F_U64,
  F_RGBA
} ftype;
typedef struct {
  const char *key;
  ftype t;
  size_t off;
  int row; /* a property row (pa_props.h): absent takes its default; -1:
              required */
} field;

/* The fields of a robot's and an obstacle's record that are not
 * properties; record_fields adds one per property row. */
#define RI(k, t)                                                               \
  { #k, t, offsetof(pa_robot_info, k), -1 }
static const field robot_fixed[] = {
    RI(name, F_NAME),   RI(active, F_U32),  RI(gen, F_U32),
    RI(start_x, F_F64), RI(start_y, F_F64), RI(start_theta, F_F64),
};
#define RS(k, t)                                                               \
  { #k, t, offsetof(pa_robot_state, k), -1 }
static const field state_fields[] = {
    RS(id, F_U32),         RS(gen, F_U32),       RS(flags, F_U32),
    RS(scan_seq, F_U32),   RS(x, F_F64),         RS(y, F_F64),
    RS(theta, F_F64),      RS(odom_x, F_F64),    RS(odom_y, F_F64),
    RS(odom_theta, F_F64), RS(v, F_F64),         RS(vy, F_F64),
    RS(w, F_F64),          RS(head, F_F64),      RS(head_rate, F_F64),
    RS(cmd_v, F_F64),      RS(cmd_vy, F_F64),    RS(cmd_w, F_F64),
    RS(cmd_head, F_F64),   RS(cmd_frame, F_U32), RS(rng, F_U64),
};
#define OB(k, t)                                                               \
  { #k, t, offsetof(pa_obstacle_info, k), -1 }
static const field obstacle_fixed[] = {
    OB(name, F_NAME), OB(active, F_U32), OB(gen, F_U32),
    OB(x, F_F64),     OB(y, F_F64),      OB(theta, F_F64),
};
#define AG(k, t)                                                               \
  { #k, t, offsetof(pa_sim_agent, k), -1 }
static const field agent_fields[] = {
    AG(wp, F_U32), AG(turn, F_U32), AG(speed, F_F64),
    AG(vx, F_F64), AG(vy, F_F64),   AG(rng, F_U64),
};
#define TH(k, t)                                                               \
  { #k, t, offsetof(pa_thruster, k), -1 }
static const field thruster_fields[] = {
    TH(name, F_NAME16), TH(x, F_F32),         TH(y, F_F32),
    TH(dir, F_F32),     TH(max_force, F_F32),
};
#undef TH
#undef AG
#undef RI
#undef RS
#undef OB
#define NF(a) (sizeof a / sizeof a[0])
#define FIELDS_MAX (PA_PR_COUNT + 16)

/* fixed, then a field per property row of kind, keyed by the name of the
 * field it lives in (a size is two: size_x, size_y); returns the count. */
static size_t record_fields(field *out, const field *fixed, size_t nfixed,
                            unsigned kind) {
  static const ftype by_store[] = {
      [PA_ST_F32] = F_F32,  [PA_ST_F64] = F_F64,  [PA_ST_U32] = F_U32,
      [PA_ST_U16] = F_U16,  [PA_ST_WORD] = F_U32, [PA_ST_RGBA] = F_RGBA,
      [PA_ST_SIZE2] = F_F64};
  size_t n = 0;
  for (; n < nfixed; n++)
    out[n] = fixed[n];
  for (int i = 0; i < PA_PR_COUNT && n + 2 <= FIELDS_MAX; i++) {
    const pa_prop_def *p = pa_prop((pa_prop_row)i);
    if (!(p->kinds & kind))
      continue;
    out[n++] = (field){p->field, by_store[p->store], p->off, i};
    if (p->store == PA_ST_SIZE2)
      out[n++] = (field){"size_y", F_F64, p->off + sizeof(double), i};
  }
  return n;
}

static json_t *fields_out(const void *rec, const field *f, size_t n) {
  json_t *o = json_object();
  const char *b = rec;
  for (size_t i = 0; i < n; i++) {
    const void *p = b + f[i].off;
    json_t *v = NULL;
    switch (f[i].t) {
    case F_NAME:
    case F_NAME16: {
      size_t len = f[i].t == F_NAME ? 32 : 16;
      char nm[33];
      memcpy(nm, p, len);
      nm[len] = 0;
      v = json_string(nm);
      break;
    }
    case F_U32: {
      uint32_t u;
      memcpy(&u, p, sizeof u);
      v = json_integer(u);
      break;
    }
    case F_U16: {
      uint16_t u;
      memcpy(&u, p, sizeof u);
      v = json_integer(u);
      break;
    }
    case F_F32: {
      float x;
      memcpy(&x, p, sizeof x);
      v = json_real(x); /* a float is exact as a double */
      break;
    }
    case F_F64: {
      double x;
      memcpy(&x, p, sizeof x);
      v = json_real(x);
      break;
    }
    case F_U64: { /* beyond 2^53: a hex string keeps every bit */
      uint64_t u;
      memcpy(&u, p, sizeof u);
      char hex[24];
      snprintf(hex, sizeof hex, "%016" PRIx64, u);
      v = json_string(hex);
      break;
    }
    case F_RGBA: {
      const uint8_t *c = p;
      v = json_array();
      for (int k = 0; k < 4; k++)
        json_array_append_new(v, json_integer(c[k]));
      break;
    }
    }
    json_object_set_new(o, f[i].key, v);
  }
  return o;
}

/* Fills rec from o: 0, or -1 with the field named in err (where = "robots[2]
 * .state" etc.). A property absent (a file older than it) takes its row's
 * default; every other field is required. */
static int fields_in(json_t *o, void *rec, const field *f, size_t n,
                     const char *where, char *err, size_t err_sz) {
  char *b = rec;
  if (!json_is_object(o)) {
    snprintf(err, err_sz, "%s must be an object", where);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    json_t *v = json_object_get(o, f[i].key);
    void *p = b + f[i].off;
    bool ok = v != NULL;
    size_t len = f[i].t == F_NAME ? 32 : 16;
    if (!v && f[i].row >= 0) {
      for (int k = 0; k < pa_prop_ncomp((pa_prop_row)f[i].row); k++)
        pa_prop_put((pa_prop_row)f[i].row, rec, k,
                    pa_prop_dflt((pa_prop_row)f[i].row, k));
      continue;
    }
    switch (f[i].t) {
    case F_NAME:
    case F_NAME16:
      ok = ok && json_is_string(v) && json_string_length(v) < len &&
           strlen(json_string_value(v)) == json_string_length(v);
      if (ok) {
        memset(p, 0, len);
        memcpy(p, json_string_value(v), json_string_length(v));
      }
      break;
    case F_U32:
    case F_U16: {
      json_int_t hi = f[i].t == F_U32 ? UINT32_MAX : UINT16_MAX;
      ok = ok && json_is_integer(v) && json_integer_value(v) >= 0 &&
           json_integer_value(v) <= hi;
      if (ok && f[i].t == F_U32) {
        uint32_t u = (uint32_t)json_integer_value(v);
        memcpy(p, &u, sizeof u);
      } else if (ok) {
        uint16_t u = (uint16_t)json_integer_value(v);
        memcpy(p, &u, sizeof u);
      }
      break;
    }
    case F_F32:
    case F_F64: {
      ok = ok && json_is_number(v);
      double x = ok ? json_number_value(v) : 0;
      if (ok && f[i].t == F_F32) {
        float fx = (float)x;
        memcpy(p, &fx, sizeof fx);
      } else if (ok) {
        memcpy(p, &x, sizeof x);
      }
      break;
    }
    case F_U64: {
      const char *s = ok && json_is_string(v) ? json_string_value(v) : NULL;
      char *end = NULL;
      errno = 0;
      uint64_t u = s && *s ? strtoull(s, &end, 16) : 0;
      ok = s && *s && end && !*end && errno == 0 && strlen(s) <= 16;
      if (ok)
        memcpy(p, &u, sizeof u);
      break;
    }
    case F_RGBA:
      ok = ok && json_is_array(v) && json_array_size(v) == 4;
      for (size_t k = 0; ok && k < 4; k++) {
        json_t *e = json_array_get(v, k);
        ok = json_is_integer(e) && json_integer_value(e) >= 0 &&
             json_integer_value(e) <= 255;
        if (ok)
          ((uint8_t *)p)[k] = (uint8_t)json_integer_value(e);
      }
      break;
    }
    if (!ok) {
      snprintf(err, err_sz, "%s.%s is missing or of the wrong type", where,
               f[i].key);
      return -1;
    }
  }
  return 0;
}

/* A robot's info: its fields and its thrusters. */
static json_t *robot_info_out(const pa_robot_info *ri, const field *f,
                              size_t n) {
  json_t *o = fields_out(ri, f, n);
  json_t *th = json_array();
  for (uint32_t k = 0; k < ri->thruster_count && k < PA_THRUSTERS_MAX; k++)
    json_array_append_new(th, fields_out(&ri->thrusters[k], thruster_fields,
                                         NF(thruster_fields)));
  json_object_set_new(o, "thrusters", th);
  return o;
}

/* The way back; no "thrusters" (an older file): none. */
static int robot_info_in(json_t *o, pa_robot_info *ri, const field *f, size_t n,
                         const char *where, char *err, size_t err_sz) {
  if (fields_in(o, ri, f, n, where, err, err_sz) != 0)
    return -1;
  json_t *th = json_object_get(o, "thrusters");
  if (th && (!json_is_array(th) || json_array_size(th) > PA_THRUSTERS_MAX)) {
    snprintf(err, err_sz, "%s.thrusters must be a list of at most %d", where,
             PA_THRUSTERS_MAX);
    return -1;
  }
  ri->thruster_count = th ? (uint32_t)json_array_size(th) : 0;
  for (uint32_t k = 0; k < ri->thruster_count; k++) {
    char w[96];
    snprintf(w, sizeof w, "%s.thrusters[%u]", where, k);
    if (fields_in(json_array_get(th, k), &ri->thrusters[k], thruster_fields,
                  NF(thruster_fields), w, err, err_sz) != 0)
      return -1;
  }
  return 0;
}

/* Agent record i of a file: its behaviour state into *a, its obstacle slot
 * (which becomes an agent of its behaviour) into *slot; 0, or -1 with err. */
static int agent_in(json_t *j, size_t i, pa_obstacle_info *ob, size_t no,
                    pa_sim_agent *a, uint32_t *slot, char *err, size_t err_sz) {
  char where[48];
  snprintf(where, sizeof where, "agents[%zu]", i);
  memset(a, 0, sizeof *a);
  if (fields_in(j, a, agent_fields, NF(agent_fields), where, err, err_sz) != 0)
    return -1;
  json_t *jo = json_object_get(j, "obstacle");
  json_t *jb = json_object_get(j, "behaviour");
  json_t *jr = json_object_get(j, "record");
  json_t *wp = json_object_get(j, "waypoints");
  json_int_t k = json_is_integer(jo) ? json_integer_value(jo) : -1;
  json_int_t b = json_is_integer(jb) ? json_integer_value(jb) : -1;
  if (k < 0 || (size_t)k >= no || !ob[k].active || ob[k].agent) {
    snprintf(err, err_sz, "%s.obstacle must name an obstacle, once", where);
    return -1;
  }
  if (b <= PA_AGENT_NONE || b >= PA_AGENT_COUNT || !json_is_boolean(jr)) {
    snprintf(err, err_sz, "%s.behaviour must be 1 to %d, record a boolean",
             where, PA_AGENT_COUNT - 1);
    return -1;
  }
  size_t n = json_is_array(wp) ? json_array_size(wp) : SIZE_MAX;
  bool ok = n <= PA_AGENT_WAYPOINTS_MAX && (n ? a->wp < n : a->wp == 0) &&
            isfinite(a->speed) && a->speed >= 0 && a->speed <= 10 &&
            isfinite(a->vx) && isfinite(a->vy) && fabs(a->vx) <= 1e3 &&
            fabs(a->vy) <= 1e3;
  for (size_t q = 0; ok && q < n; q++) {
    json_t *p = json_array_get(wp, q);
    json_t *px = json_array_get(p, 0), *py = json_array_get(p, 1);
    ok = json_array_size(p) == 2 && json_is_number(px) && json_is_number(py) &&
         fabs(json_number_value(px)) <= 1e6 &&
         fabs(json_number_value(py)) <= 1e6;
    if (ok) {
      a->wpx[q] = json_number_value(px);
      a->wpy[q] = json_number_value(py);
    }
  }
  if (!ok) {
    snprintf(err, err_sz,
             "%s: waypoints (up to %d [x, y]), wp, speed or velocity out of "
             "range",
             where, PA_AGENT_WAYPOINTS_MAX);
    return -1;
  }
  a->wp_count = (uint32_t)n;
  a->gen = json_is_true(jr); /* 1: walks on; 0: stands (no record) */
  ob[k].agent = (uint32_t)b;
  *slot = (uint32_t)k;
  return 0;
}

/* ---- the map reference
 * -----------------------------------------------------*/

/* FNV-1a 64 of the map's size, placement, threshold and cells: a snapshot
 * belongs to the map it was saved on. */
static uint64_t map_checksum(const pa_grid *g) {
  uint64_t h = 0xcbf29ce484222325ull;
  const double geo[4] = {g->resolution, g->origin_x, g->origin_y,
                         g->origin_yaw};
  const uint32_t wh[2] = {g->width, g->height};
  const struct {
    const void *p;
    size_t n;
  } parts[] = {{wh, sizeof wh},
               {geo, sizeof geo},
               {&g->occupied_min, 1},
               {g->cells, (size_t)g->width * g->height}};
  for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++)
    for (size_t i = 0; i < parts[k].n; i++) {
      h ^= ((const unsigned char *)parts[k].p)[i];
      h *= 0x100000001b3ull;
    }
  return h;
}

static json_t *map_json(const pa_sim_model *m) {
  const pa_grid *g = &m->grid;
  json_t *o = json_object();
  char hex[24];
  snprintf(hex, sizeof hex, "%016" PRIx64, map_checksum(g));
  json_object_set_new(o, "checksum", json_string(hex));
  json_object_set_new(o, "width", json_integer(g->width));
  json_object_set_new(o, "height", json_integer(g->height));
  json_object_set_new(o, "resolution", json_real(g->resolution));
  json_t *org = json_array();
  json_array_append_new(org, json_real(g->origin_x));
  json_array_append_new(org, json_real(g->origin_y));
  json_array_append_new(org, json_real(g->origin_yaw));
  json_object_set_new(o, "origin", org);
  return o;
}

/* ---- paths under --data_dir
 * --------------------------------------------------*/

int pa_sim_int_data_dir(const char *flag, char *out, char *err, size_t err_sz) {
  const char *d = flag && flag[0] ? flag : ".";
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s", d) >= (int)sizeof tmp) {
    snprintf(err, err_sz, "--data_dir is too long");
    return -1;
  }
  for (char *p = tmp + 1;; p++) { /* mkdir -p */
    bool end = !*p;
    if (*p == '/' || end) {
      char c = *p;
      *p = 0;
      if (mkdir(tmp, 0755) != 0 && errno != EEXIST) {
        snprintf(err, err_sz, "cannot create the data directory %s: %s", tmp,
                 strerror(errno));
        return -1;
      }
      *p = c;
    }
    if (end)
      break;
  }
  if (!realpath(tmp, out)) {
    snprintf(err, err_sz, "data directory %s: %s", d, strerror(errno));
    return -1;
  }
  return 0;
}

/* The data directory (created if missing) or r's error: 0 or -1. */
static int data_dir(const pa_sim_model *m, char out[PATH_MAX], pa_reply *r) {
  char err[PATH_MAX + 64];
  if (pa_sim_int_data_dir(m->def.data_dir, out, err, sizeof err) == 0)
    return 0;
  pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, "%s", err);
  return -1;
}

int pa_sim_int_file_begin(const pa_sim_model *m, const pa_cmd *c,
                          const char *rel, pa_safe_file *f, pa_reply *r) {
  char dir[PATH_MAX], err[PA_CMD_PATH_MAX + 128];
  f->fd = f->dirfd = -1;
  if (data_dir(m, dir, r) != 0)
    return -1;
  int root = pa_safe_root_open(dir, err, sizeof err);
  unsigned flags = PA_SAFE_MKDIRS;
  if (c->flags & PA_CMDF_OVERWRITE)
    flags |= PA_SAFE_OVERWRITE;
  int rc = root < 0 ? PA_SAFE_IO
                    : pa_safe_begin(f, root, dir, rel, flags, err, sizeof err);
  if (root >= 0)
    close(root);
  if (rc == PA_SAFE_OK)
    return 0;
  pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, "%s", err);
  return -1;
}

int pa_sim_int_file_end(pa_safe_file *f, int e, pa_reply *r) {
  char err[PA_CMD_PATH_MAX + 128];
  if (e) {
    pa_safe_io_error(f, e, err, sizeof err);
    pa_safe_abort(f);
  } else if (pa_safe_commit(f, err, sizeof err) == PA_SAFE_OK) {
    return 0;
  }
  pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, "%s", err);
  return -1;
}

/* ---- save and load
 * -----------------------------------------------------------*/

pa_status pa_sim_int_snapshot_json_save(const pa_sim_model *m,
                                        const pa_sim_state *s, const pa_cmd *c,
                                        pa_reply *r) {
  char cpath[PA_CMD_PATH_MAX];
  memcpy(cpath, c->path, sizeof cpath);
  cpath[sizeof cpath - 1] = 0;
  if (!cpath[0])
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "a file path is required");
  pa_safe_file file;
  if (pa_sim_int_file_begin(m, c, cpath, &file, r) != 0)
    return (pa_status)r->status;
  json_t *root = json_object();
  json_object_set_new(root, "format", json_string(SNAPJSON_FORMAT));
  json_object_set_new(root, "version", json_integer(SNAPJSON_VERSION));
  json_object_set_new(root, "map", map_json(m));
  json_object_set_new(root, "tick", json_integer((json_int_t)s->tick));
  json_object_set_new(root, "sim_time", json_real(s->sim_time));
  /* the scan schedule, as a shm snapshot keeps it (sim_snap.c) */
  json_object_set_new(root, "scan_phase",
                      json_integer((json_int_t)((s->tick - s->scan_tick0) %
                                                m->ticks_per_scan)));
  char seed[24];
  snprintf(seed, sizeof seed, "%" PRIu64, m->def.seed);
  json_object_set_new(root, "seed", json_string(seed));
  field rf[FIELDS_MAX], of[FIELDS_MAX];
  size_t nrf = record_fields(rf, robot_fixed, NF(robot_fixed), PA_PK_ROBOT);
  size_t nof =
      record_fields(of, obstacle_fixed, NF(obstacle_fixed), PA_PK_OBSTACLE);
  json_t *robots = json_array();
  for (uint32_t i = 0; i < s->robot_count; i++) {
    json_t *o = json_object();
    json_object_set_new(o, "info", robot_info_out(&s->info[i], rf, nrf));
    json_object_set_new(o, "state",
                        fields_out(&s->rs[i], state_fields, NF(state_fields)));
    json_array_append_new(robots, o);
  }
  json_object_set_new(root, "robots", robots);
  json_t *obs = json_array();
  for (uint32_t i = 0; i < s->obstacle_count; i++)
    json_array_append_new(obs, fields_out(&s->obs[i], of, nof));
  json_object_set_new(root, "obstacles", obs);
  /* agents: the behaviour state pa-sim holds for each agent obstacle (the
   * obstacle record holds its pose) */
  json_t *agents = json_array();
  for (uint32_t i = 0; s->agents && i < s->obstacle_count; i++) {
    const pa_obstacle_info *o = &s->obs[i];
    if (!o->active || o->agent == PA_AGENT_NONE)
      continue;
    pa_sim_agent a = s->agents[i];
    if (a.gen != o->gen) /* one without a record stands: save it so */
      memset(&a, 0, sizeof a);
    json_t *j = fields_out(&a, agent_fields, NF(agent_fields));
    json_object_set_new(j, "obstacle", json_integer(i));
    json_object_set_new(j, "behaviour", json_integer(o->agent));
    json_object_set_new(j, "record", json_boolean(a.gen == o->gen));
    json_t *wp = json_array();
    for (uint32_t k = 0; k < a.wp_count && k < PA_AGENT_WAYPOINTS_MAX; k++) {
      json_t *p = json_array();
      json_array_append_new(p, json_real(a.wpx[k]));
      json_array_append_new(p, json_real(a.wpy[k]));
      json_array_append_new(wp, p);
    }
    json_object_set_new(j, "waypoints", wp);
    json_array_append_new(agents, j);
  }
  json_object_set_new(root, "agents", agents);
  /* written whole then renamed: a crash never leaves half a file */
  errno = 0;
  int rc = json_dumpfd(root, file.fd, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
  int e = rc != 0 ? (errno ? errno : EIO) : 0;
  json_decref(root);
  if (pa_sim_int_file_end(&file, e, r) != 0)
    return (pa_status)r->status;
  r->snapshot.robots = s->robot_count;
  r->snapshot.obstacles = s->obstacle_count;
  r->snapshot.tick = s->tick;
  r->snapshot.sim_time = s->sim_time;
  return PA_OK;
}

/* A file's format, version, map and the keys every file has: PA_OK, or
 * the error set. */
static pa_status file_ok(const pa_sim_model *m, json_t *root, const char *cpath,
                         pa_reply *r) {
  json_t *fmt = json_object_get(root, "format");
  json_t *ver = json_object_get(root, "version");
  json_t *robots = json_object_get(root, "robots");
  json_t *obs = json_object_get(root, "obstacles");
  json_t *agents = json_object_get(root, "agents");
  json_t *tick = json_object_get(root, "tick");
  json_t *simt = json_object_get(root, "sim_time");
  const char *sum = json_string_value(
      json_object_get(json_object_get(root, "map"), "checksum"));
  char want[24];
  snprintf(want, sizeof want, "%016" PRIx64, map_checksum(&m->grid));
  if (!json_is_string(fmt) || strcmp(json_string_value(fmt), SNAPJSON_FORMAT) ||
      !json_is_integer(ver) || json_integer_value(ver) != SNAPJSON_VERSION)
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "%s is not a playarea world file (format \"%s\" "
                           "version %d)",
                           cpath, SNAPJSON_FORMAT, SNAPJSON_VERSION);
  if (!sum || strcmp(sum, want))
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "%s was saved on another map (checksum %.20s, this "
                           "map's %s): set that map first",
                           cpath, sum ? sum : "missing", want);
  if (!json_is_array(robots) || !json_is_array(obs) || !json_is_integer(tick) ||
      json_integer_value(tick) < 0 || !json_is_number(simt))
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "%s: robots, obstacles, tick and sim_time are "
                           "required",
                           cpath);
  if (agents && !json_is_array(agents))
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "%s: agents must be an array", cpath);
  json_t *phase = json_object_get(root, "scan_phase"); /* optional */
  if (phase && (!json_is_integer(phase) || json_integer_value(phase) < 0))
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "%s: scan_phase must be an integer >= 0", cpath);
  return PA_OK;
}

/* The robots' and obstacles' records of a file: 0, or -1 with the field
 * named in err. */
static int records_in(json_t *robots, json_t *obs, pa_robot_info *ri,
                      pa_robot_state *rs, pa_obstacle_info *ob, char *err,
                      size_t err_sz) {
  char where[48];
  field rf[FIELDS_MAX], of[FIELDS_MAX];
  size_t nrf = record_fields(rf, robot_fixed, NF(robot_fixed), PA_PK_ROBOT);
  size_t nof =
      record_fields(of, obstacle_fixed, NF(obstacle_fixed), PA_PK_OBSTACLE);
  for (size_t i = 0; i < json_array_size(robots); i++) {
    json_t *e = json_array_get(robots, i);
    snprintf(where, sizeof where, "robots[%zu].info", i);
    if (robot_info_in(json_object_get(e, "info"), &ri[i], rf, nrf, where, err,
                      err_sz) != 0)
      return -1;
    snprintf(where, sizeof where, "robots[%zu].state", i);
    if (fields_in(json_object_get(e, "state"), &rs[i], state_fields,
                  NF(state_fields), where, err, err_sz) != 0)
      return -1;
  }
  for (size_t i = 0; i < json_array_size(obs); i++) {
    snprintf(where, sizeof where, "obstacles[%zu]", i);
    if (fields_in(json_array_get(obs, i), &ob[i], of, nof, where, err,
                  err_sz) != 0)
      return -1;
  }
  return 0;
}

pa_status pa_sim_int_snapshot_json_load(const pa_sim_model *m, pa_sim_state *s,
                                        const pa_cmd *c, pa_reply *r) {
  char cpath[PA_CMD_PATH_MAX], dir[PATH_MAX], path[PATH_MAX],
      err[PATH_MAX + 64];
  memcpy(cpath, c->path, sizeof cpath);
  cpath[sizeof cpath - 1] = 0;
  if (!cpath[0])
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "a file path is required");
  if (data_dir(m, dir, r) != 0)
    return (pa_status)r->status;
  pa_map_guard g = {.data_dir = dir};
  if (pa_map_guard_path(&g, cpath, path, sizeof path, err, sizeof err) != 0)
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, "%s", err);
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
      (uint64_t)st.st_size > SNAPJSON_MAX_BYTES)
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "%s: not a regular file of at most %u bytes", cpath,
                           SNAPJSON_MAX_BYTES);
  json_error_t je;
  json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
  if (!root)
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, "%s:%d: %s", cpath,
                           je.line, je.text);
  pa_status rc = PA_OK;
  pa_robot_info *ri = NULL;
  pa_robot_state *rs = NULL;
  pa_obstacle_info *ob = NULL;
  pa_sim_agent *ag = NULL;
  uint32_t *agslot = NULL;
  json_t *robots = json_object_get(root, "robots");
  json_t *obs = json_object_get(root, "obstacles");
  json_t *agents = json_object_get(root, "agents");
  json_t *tick = json_object_get(root, "tick");
  json_t *simt = json_object_get(root, "sim_time");
  if ((rc = file_ok(m, root, cpath, r)) != PA_OK)
    goto out;
  size_t nr = json_array_size(robots), no = json_array_size(obs);
  if (nr > s->cap_robots || no > s->cap_obstacles) {
    rc = pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                         "%s has %zu robots and %zu obstacles; this instance "
                         "holds %u and %u",
                         cpath, nr, no, s->cap_robots, s->cap_obstacles);
    goto out;
  }
  ri = calloc(nr ? nr : 1, sizeof *ri);
  rs = calloc(nr ? nr : 1, sizeof *rs);
  ob = calloc(no ? no : 1, sizeof *ob);
  if (!ri || !rs || !ob) {
    rc = pa_sim_int_fail(r, PA_ERR_BUSY, "out of memory");
    goto out;
  }
  if (records_in(robots, obs, ri, rs, ob, err, sizeof err) != 0)
    goto bad;
  size_t na = agents ? json_array_size(agents) : 0;
  ag = calloc(na ? na : 1, sizeof *ag);
  agslot = calloc(na ? na : 1, sizeof *agslot);
  if (!ag || !agslot) {
    rc = pa_sim_int_fail(r, PA_ERR_BUSY, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < na; i++)
    if (agent_in(json_array_get(agents, i), i, ob, no, &ag[i], &agslot[i], err,
                 sizeof err) != 0)
      goto bad;
  /* the checks a world file's and a shm snapshot's records pass */
  if (pa_sim_int_snap_records_bad(m, ri, rs, (uint32_t)nr, ob, (uint32_t)no,
                                  err, sizeof err))
    goto bad;
  pa_sim_world_src w = {.robots = ri,
                        .robot_count = (uint32_t)nr,
                        .states = rs,
                        .state_count = (uint32_t)nr,
                        .obstacles = ob,
                        .obstacle_count = (uint32_t)no};
  pa_sim_int_world_install(m, s, &w);
  /* The scan schedule as saved: each robot scans as many ticks after the
   * load as after the save (a file without scan_phase: the schedule runs
   * on as it was). */
  json_t *phase = json_object_get(root, "scan_phase");
  if (phase) {
    uint64_t ph = (uint64_t)json_integer_value(phase) % m->ticks_per_scan;
    if (s->tick >= ph)
      s->scan_tick0 = s->tick - ph;
  }
  for (size_t i = 0; i < na; i++) { /* their behaviour as saved */
    uint32_t k = agslot[i];
    s->agents[k] = ag[i];
    s->agents[k].gen = ag[i].gen ? s->obs[k].gen : s->obs[k].gen - 1;
  }
  r->snapshot.robots = (uint32_t)nr;
  r->snapshot.obstacles = (uint32_t)no;
  r->snapshot.tick = (uint64_t)json_integer_value(tick);
  r->snapshot.sim_time = json_number_value(simt);
  goto out;
bad:
  rc = pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, "%s: %s", cpath, err);
out:
  free(ri);
  free(rs);
  free(ob);
  free(ag);
  free(agslot);
  json_decref(root);
  return rc;
}
