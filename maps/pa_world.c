/*
 * pa_world.c - YAML world files (docs/world-format.md): the map, robots and
 * static obstacles. Strict: unknown keys, wrong types, out-of-range values
 * and duplicate names are errors at file:line:column.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pa_map_int.h"
#include "pa_props.h"

#define PA_WORLD_MAX_ROBOTS 256
#define PA_WORLD_MAX_OBSTACLES 4096
#define PA_DEG (3.14159265358979323846 / 180.0)

typedef struct wctx {
  pa_ydoc *d;
  char *err;
  size_t err_sz;
  const pa_map_guard *g; /* run-time load: confined, quiet */
} wctx;

static size_t seq_len(const yaml_node_t *n) {
  return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

/* A number in [lo, hi] (lo_open / hi_open exclude the bound). */
static int num_in(wctx *c, yaml_node_t *n, const char *what, double lo,
                  bool lo_open, double hi, bool hi_open, double *out) {
  double v;
  if (pa_map_ynum(c->d, n, what, &v, c->err, c->err_sz)) return -1;
  if ((lo_open ? !(v > lo) : !(v >= lo)) || (hi_open ? !(v < hi) : !(v <= hi)))
    return pa_map_yerr(c->d, n, c->err, c->err_sz,
                       "%s must be in %c%g, %g%c, got %g", what,
                       lo_open ? '(' : '[', lo, hi, hi_open ? ')' : ']', v);
  *out = v;
  return 0;
}

/* Key what (node v) is word a (*out 0) or b (*out 1); else the error says
 * which it expected. */
static int one_of_two(wctx *c, yaml_node_t *v, const char *what, const char *a,
                      const char *b, int *out) {
  char s[32];
  if (pa_map_ystr(c->d, v, what, s, sizeof s, c->err, c->err_sz) ||
      (strcmp(s, a) && strcmp(s, b)))
    return pa_map_yerr(c->d, v, c->err, c->err_sz, "%s: expected %s or %s",
                       what, a, b);
  *out = !strcmp(s, b) ? 1 : 0;
  return 0;
}

/* A number in the schema's range of that property (pa_props.h). */
static int prop_in(wctx *c, yaml_node_t *n, const char *what, pa_prop_row row,
                   double *out) {
  const pa_prop_def *p = pa_prop(row);
  return num_in(c, n, what, p->lo, p->lo_open, p->hi, p->hi_open, out);
}

static int int_in(wctx *c, yaml_node_t *n, const char *what, long lo, long hi,
                  long *out) {
  long v;
  if (pa_map_yint(c->d, n, what, &v, c->err, c->err_sz)) return -1;
  if (v < lo || v > hi)
    return pa_map_yerr(c->d, n, c->err, c->err_sz,
                       "%s must be in [%ld, %ld], got %ld", what, lo, hi, v);
  *out = v;
  return 0;
}

static int colour(wctx *c, yaml_node_t *n, const char *what, uint8_t out[4]) {
  if (n->type != YAML_SEQUENCE_NODE || seq_len(n) < 3 || seq_len(n) > 4)
    return pa_map_yerr(c->d, n, c->err, c->err_sz,
                       "%s: expected [r, g, b] or [r, g, b, a] with values "
                       "0..255",
                       what);
  out[3] = 255;
  for (size_t i = 0; i < seq_len(n); i++) {
    char w[96];
    long v = 0;
    snprintf(w, sizeof w, "%s[%zu]", what, i);
    if (int_in(c, pa_map_ynode(c->d, n->data.sequence.items.start[i]), w,
               (long)pa_prop(PA_PR_COLOUR)->lo, (long)pa_prop(PA_PR_COLOUR)->hi,
               &v))
      return -1;
    out[i] = (uint8_t)v;
  }
  return 0;
}

static int pose(wctx *c, yaml_node_t *n, const char *what, double *x,
                double *y, double *th) {
  double v[3] = {0, 0, 0};
  if (pa_map_ynums(c->d, n, what, v, 2, 3, NULL, c->err, c->err_sz)) return -1;
  *x = v[0];
  *y = v[1];
  *th = v[2];
  return 0;
}

/* The pose key a robot's or obstacle's (kind) mapping n must have. */
static int need_pose(wctx *c, yaml_node_t *n, const char *kind, const char *nm,
                     double *x, double *y, double *th) {
  yaml_node_t *v = pa_map_yget(c->d, n, "pose");
  if (!v)
    return pa_map_yerr(c->d, n, c->err, c->err_sz,
                       "%s '%s': missing key 'pose' ([x, y, theta])", kind,
                       pa_map_yq(c->d, nm));
  return pose(c, v, "pose", x, y, th);
}

static int name(wctx *c, yaml_node_t *n, const char *what, char *out) {
  if (pa_map_ystr(c->d, n, what, out, PA_MAP_NAME_MAX, c->err, c->err_sz))
    return -1;
  if (!out[0]) return pa_map_yerr(c->d, n, c->err, c->err_sz, "%s: empty", what);
  for (const char *p = out; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.')
      return pa_map_yerr(c->d, n, c->err, c->err_sz,
                         "%s: '%s' may only use letters, digits, '_', '-', '.'",
                         what, pa_map_yq(c->d, out));
  return 0;
}

/* The keys of one level of a body's mapping: extra, then those the rows
 * give (NULL-terminated in p). */
typedef struct keyset {
  char k[PA_PR_COUNT][32];
  const char *p[PA_PR_COUNT + 8];
} keyset;

/* The keys the rows of kind give section sec ("" = the body's own level:
 * its top-level keys and the sections' names), after extra. */
static const char *const *row_keys(keyset *ks, const char *sec, unsigned kind,
                                   const char *const *extra) {
  size_t n = 0, nk = 0, sl = strlen(sec);
  for (; extra && extra[n]; n++)
    ks->p[n] = extra[n];
  for (int i = 0; i < PA_PR_COUNT; i++) {
    const pa_prop_def *p = pa_prop((pa_prop_row)i);
    const char *dot = p->path ? strchr(p->path, '.') : NULL;
    if (!p->path || !(p->kinds & kind) ||
        (sl &&
         (!dot || (size_t)(dot - p->path) != sl || strncmp(p->path, sec, sl))))
      continue;
    const char *k = sl ? dot + 1 : p->path;
    size_t kl = sl || !dot ? strlen(k) : (size_t)(dot - p->path);
    char *key = ks->k[nk];
    snprintf(key, sizeof ks->k[0], "%.*s", (int)kl, k);
    bool seen = false;
    for (size_t j = 0; j < n && !seen; j++)
      seen = !strcmp(ks->p[j], key);
    if (!seen && n + 1 < sizeof ks->p / sizeof ks->p[0]) {
      ks->p[n++] = key;
      nk++;
    }
  }
  ks->p[n] = NULL;
  return ks->p;
}

/* Whether key is a section of kind's bodies: some row's path is "key.x". */
static bool is_section(const char *key, unsigned kind) {
  size_t kl = strlen(key);
  for (int i = 0; i < PA_PR_COUNT; i++) {
    const pa_prop_def *p = pa_prop((pa_prop_row)i);
    if ((p->kinds & kind) && p->path && !strncmp(p->path, key, kl) &&
        p->path[kl] == '.')
      return true;
  }
  return false;
}

/* Every row of kind whose path lies in section sec of mapping n: its value
 * from the file (type and range of the row, named by the path) into def. */
static int rows_in(wctx *c, yaml_node_t *n, const char *sec, unsigned kind,
                   void *def) {
  size_t sl = strlen(sec);
  for (int i = 0; i < PA_PR_COUNT; i++) {
    const pa_prop_def *p = pa_prop((pa_prop_row)i);
    const char *dot = p->path ? strchr(p->path, '.') : NULL;
    if (!p->path || !(p->kinds & kind) || p->check == PA_PC_CIRCLE ||
        p->check == PA_PC_BOX || /* the obstacle loader's own, by shape */
        (sl ? !dot || (size_t)(dot - p->path) != sl || strncmp(p->path, sec, sl)
            : dot != NULL))
      continue;
    yaml_node_t *v = pa_map_yget(c->d, n, sl ? dot + 1 : p->path);
    if (!v)
      continue;
    char what[64];
    snprintf(what, sizeof what, "%s%s", p->path,
             p->scale != 1 ? " (degrees)" : "");
    double x;
    long l = 0;
    uint8_t rgba[4];
    int w;
    switch (p->type) {
    case PA_PT_NUM:
      if (prop_in(c, v, what, (pa_prop_row)i, &x))
        return -1;
      pa_prop_def_put((pa_prop_row)i, def, 0, x);
      break;
    case PA_PT_INT:
      if (int_in(c, v, what, (long)p->lo, (long)p->hi, &l))
        return -1;
      pa_prop_def_put((pa_prop_row)i, def, 0, (double)l);
      break;
    case PA_PT_COLOUR:
      if (colour(c, v, what, rgba))
        return -1;
      for (int k = 0; k < 4; k++)
        pa_prop_def_put((pa_prop_row)i, def, k, rgba[k]);
      break;
    case PA_PT_WORD:
      if (one_of_two(c, v, what, pa_prop_word_name((pa_prop_row)i, 0),
                     pa_prop_word_name((pa_prop_row)i, 1), &w))
        return -1;
      pa_prop_def_put((pa_prop_row)i, def, 0, w);
      break;
    case PA_PT_SIZE: /* obstacles' size: the loader's own (by shape) */
      break;
    }
  }
  return 0;
}

/* A section of a robot (limits, laser, camera): its rows, no other key. */
static int robot_section(wctx *c, yaml_node_t *n, const char *sec,
                         pa_robot_def *r) {
  keyset ks;
  return pa_map_ycheck_keys(c->d, n, sec, row_keys(&ks, sec, PA_PK_ROBOT, NULL),
                            c->err, c->err_sz) ||
         rows_in(c, n, sec, PA_PK_ROBOT, r);
}

/* Optional key of mapping n: a number in row's range into *dst (what names
 * it in errors). 0 (also when absent) or -1. */
static int key_num(wctx *c, yaml_node_t *n, const char *key, const char *what,
                   pa_prop_row row, double *dst) {
  yaml_node_t *v = pa_map_yget(c->d, n, key);
  return v ? prop_in(c, v, what, row, dst) : 0;
}

static int thruster(wctx *c, yaml_node_t *n, size_t i, pa_robot_def *r) {
  static const char *const keys[] = {"name", "position", "direction",
                                     "max_force", NULL};
  pa_thruster_def *t = &r->thrusters[i];
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "t%u", (unsigned)i); /* i < 8 */
  t->max_force = r->max_force;
  if (pa_map_ycheck_keys(c->d, n, "thruster", keys, c->err, c->err_sz))
    return -1;
  yaml_node_t *v;
  char nm[PA_MAP_NAME_MAX];
  if ((v = pa_map_yget(c->d, n, "name"))) {
    if (name(c, v, "thruster name", nm))
      return -1;
    if (strlen(nm) >= sizeof t->name)
      return pa_map_yerr(c->d, v, c->err, c->err_sz,
                         "thruster name '%s' is longer than %zu characters",
                         pa_map_yq(c->d, nm), sizeof t->name - 1);
    memcpy(t->name, nm, strlen(nm) + 1); /* fits: checked above */
  }
  for (size_t k = 0; k < i; k++)
    if (!strcmp(r->thrusters[k].name, t->name))
      return pa_map_yerr(c->d, n, c->err, c->err_sz,
                         "duplicate thruster name '%s'",
                         pa_map_yq(c->d, t->name));
  double p[2] = {0, 0};
  if ((v = pa_map_yget(c->d, n, "position")) &&
      pa_map_ynums(c->d, v, "thruster position", p, 2, 2, NULL, c->err,
                   c->err_sz))
    return -1;
  if (!(fabs(p[0]) <= 100 && fabs(p[1]) <= 100))
    return pa_map_yerr(c->d, v, c->err, c->err_sz,
                       "thruster position must be within 100 m of the centre");
  t->x = p[0];
  t->y = p[1];
  if ((v = pa_map_yget(c->d, n, "direction")) &&
      num_in(c, v, "thruster direction (rad)", -10, false, 10, false, &t->dir))
    return -1;
  if (key_num(c, n, "max_force", "thruster max_force", PA_PR_MAX_FORCE,
              &t->max_force))
    return -1;
  return 0;
}

/* dynamics: kinematic | dynamic | {type, mass, inertia, linear_damping,
 * angular_damping, max_force, max_torque, thrusters}. */
static int robot_dynamics(wctx *c, yaml_node_t *n, pa_robot_def *r) {
  static const char *const extra[] = {"thrusters", NULL};
  keyset ks;
  if (n->type == YAML_SCALAR_NODE)
    return one_of_two(c, n, "dynamics", "kinematic", "dynamic", &r->dynamics);
  if (pa_map_ycheck_keys(c->d, n, "dynamics",
                         row_keys(&ks, "dynamics", PA_PK_ROBOT, extra), c->err,
                         c->err_sz))
    return -1;
  yaml_node_t *v;
  r->dynamics = 1; /* a mapping describes a dynamic body unless it says */
  if (rows_in(c, n, "dynamics", PA_PK_ROBOT, r))
    return -1;
  if ((v = pa_map_yget(c->d, n, "thrusters"))) {
    if (v->type != YAML_SEQUENCE_NODE || seq_len(v) > PA_MAP_THRUSTERS_MAX)
      return pa_map_yerr(c->d, v, c->err, c->err_sz,
                         "dynamics.thrusters: expected a list of at most %d",
                         PA_MAP_THRUSTERS_MAX);
    for (size_t i = 0; i < seq_len(v); i++) {
      yaml_node_t *t = pa_map_ynode(c->d, v->data.sequence.items.start[i]);
      if (t->type != YAML_MAPPING_NODE)
        return pa_map_yerr(c->d, t, c->err, c->err_sz,
                           "thruster: expected a mapping");
      if (thruster(c, t, i, r))
        return -1;
    }
    r->thruster_count = seq_len(v);
  }
  return 0;
}

static int robot(wctx *c, yaml_node_t *n, size_t i, pa_robot_def *r) {
  static const char *const extra[] = {"name", "pose", "drive", NULL};
  keyset ks;
  const char *const *keys = row_keys(&ks, "", PA_PK_ROBOT, extra);
  *r = pa_robot_def_default();
  snprintf(r->name, sizeof r->name, "robot%zu", i);
  if (pa_map_ycheck_keys(c->d, n, "robot", keys, c->err, c->err_sz)) return -1;
  yaml_node_t *v;
  if ((v = pa_map_yget(c->d, n, "name")) && name(c, v, "robot name", r->name))
    return -1;
  /* no pose: the free pose nearest (0, 0) that the robots before leave */
  if ((v = pa_map_yget(c->d, n, "pose"))) {
    if (pose(c, v, "pose", &r->x, &r->y, &r->theta))
      return -1;
  } else {
    r->place_near_origin = true;
  }
  if ((v = pa_map_yget(c->d, n, "drive")) && /* enum pa_drive */
      one_of_two(c, v, "drive", "differential", "omni", &r->drive))
    return -1;
  if (rows_in(c, n, "", PA_PK_ROBOT, r))
    return -1;
  /* the sections the rows name; dynamics also takes a word and thrusters */
  for (size_t k = 0; keys[k]; k++)
    if (is_section(keys[k], PA_PK_ROBOT) && strcmp(keys[k], "dynamics") &&
        (v = pa_map_yget(c->d, n, keys[k])) && robot_section(c, v, keys[k], r))
      return -1;
  if ((v = pa_map_yget(c->d, n, "dynamics")) && robot_dynamics(c, v, r))
    return -1;
  if (!(r->laser.range_min < r->laser.range_max))
    return pa_map_yerr(c->d, (v = pa_map_yget(c->d, n, "laser")) ? v : n,
                       c->err, c->err_sz,
                       "laser: range_min (%g) must be below range_max (%g)",
                       r->laser.range_min, r->laser.range_max);
  return 0;
}

/* Obstacle n (named name) of this shape has its own key (node own, named
 * own_key in the error) and not the other shape's (node other). */
static int shape_keys(wctx *c, yaml_node_t *n, const char *shape,
                      const char *name, yaml_node_t *own, const char *own_key,
                      yaml_node_t *other, const char *other_msg) {
  if (other)
    return pa_map_yerr(c->d, other, c->err, c->err_sz, "%s", other_msg);
  if (!own)
    return pa_map_yerr(c->d, n, c->err, c->err_sz, "%s '%s': missing key %s",
                       shape, pa_map_yq(c->d, name), own_key);
  return 0;
}

/* An obstacle's defaults: its rows' (a box), no size yet. */
static void pa_obstacle_default(pa_obstacle_def *o) {
  memset(o, 0, sizeof *o);
  for (int i = 0; i < PA_PR_COUNT; i++)
    if ((pa_prop((pa_prop_row)i)->kinds & PA_PK_OBSTACLE) &&
        pa_prop((pa_prop_row)i)->check == PA_PC_NONE)
      for (int k = 0; k < pa_prop_ncomp((pa_prop_row)i); k++)
        pa_prop_def_put((pa_prop_row)i, o, k, pa_prop_dflt((pa_prop_row)i, k));
}

static int obstacle(wctx *c, yaml_node_t *n, size_t i, pa_obstacle_def *o) {
  static const char *const extra[] = {"name", "shape", "pose", NULL};
  keyset ks;
  pa_obstacle_default(o);
  snprintf(o->name, sizeof o->name, "obstacle%zu", i);
  if (pa_map_ycheck_keys(c->d, n, "obstacle",
                         row_keys(&ks, "", PA_PK_OBSTACLE, extra), c->err,
                         c->err_sz))
    return -1;
  yaml_node_t *v;
  if ((v = pa_map_yget(c->d, n, "name")) &&
      name(c, v, "obstacle name", o->name))
    return -1;
  if (!(v = pa_map_yget(c->d, n, "shape")))
    return pa_map_yerr(c->d, n, c->err, c->err_sz,
                       "obstacle '%s': missing key 'shape' (box or circle)",
                       pa_map_yq(c->d, o->name));
  if (one_of_two(c, v, "shape", "box", "circle", &o->shape)) /* pa_shape */
    return -1;
  if (need_pose(c, n, "obstacle", o->name, &o->x, &o->y, &o->theta))
    return -1;
  yaml_node_t *size = pa_map_yget(c->d, n, "size");
  yaml_node_t *rad = pa_map_yget(c->d, n, "radius");
  if (o->shape == 0) {
    if (shape_keys(c, n, "box", o->name, size, "'size' ([x, y] metres)", rad,
                   "radius: a box takes size: [x, y], not radius"))
      return -1;
    double sz[2];
    if (pa_map_ynums(c->d, size, "size", sz, 2, 2, NULL, c->err, c->err_sz))
      return -1;
    if (!pa_prop_ok(PA_PR_OB_SIZE, sz[0]) ||
        !pa_prop_ok(PA_PR_OB_SIZE, sz[1])) {
      char rg[64];
      return pa_map_yerr(
          c->d, size, c->err, c->err_sz, "size must be in %s, got [%g, %g]",
          pa_prop_range(PA_PR_OB_SIZE, rg, sizeof rg), sz[0], sz[1]);
    }
    o->size_x = sz[0];
    o->size_y = sz[1];
  } else {
    if (shape_keys(c, n, "circle", o->name, rad, "'radius'", size,
                   "size: a circle takes radius, not size"))
      return -1;
    if (prop_in(c, rad, "radius", PA_PR_OB_RADIUS, &o->radius))
      return -1;
  }
  return rows_in(c, n, "", PA_PK_OBSTACLE, o);
}

/* Names identify robots and obstacles on the wire: unique across both. */
static int unique_name(wctx *c, yaml_node_t *n, const pa_world *w,
                       const char *nm, size_t robots_done,
                       size_t obstacles_done) {
  for (size_t i = 0; i < robots_done; i++)
    if (!strcmp(w->robots[i].name, nm))
      return pa_map_yerr(c->d, n, c->err, c->err_sz,
                         "duplicate name '%s' (already robot %zu)",
                         pa_map_yq(c->d, nm), i);
  for (size_t i = 0; i < obstacles_done; i++)
    if (!strcmp(w->obstacles[i].name, nm))
      return pa_map_yerr(c->d, n, c->err, c->err_sz,
                         "duplicate name '%s' (already obstacle %zu)",
                         pa_map_yq(c->d, nm), i);
  return 0;
}

static int world_map(wctx *c, yaml_node_t *n, const char *dir, pa_world *w) {
  if (n->type == YAML_MAPPING_NODE)
    return pa_map_def_from_node(c->d, n, dir, &w->map, c->err, c->err_sz);
  char s[PA_MAP_PATH_MAX], path[PA_MAP_PATH_MAX];
  if (n->type != YAML_SCALAR_NODE)
    return pa_map_yerr(c->d, n, c->err, c->err_sz,
                       "map: expected 'default', a map.yaml path or a mapping");
  if (pa_map_ystr(c->d, n, "map", s, sizeof s, c->err, c->err_sz)) return -1;
  if (!strcmp(s, "default")) {
    w->map = pa_map_def_default();
    return 0;
  }
  if (!s[0]) return pa_map_yerr(c->d, n, c->err, c->err_sz, "map: empty path");
  if (pa_map_join(dir, s, path, sizeof path))
    return pa_map_yerr(c->d, n, c->err, c->err_sz, "map: path too long");
  char e[1024];
  if (pa_map_parse_yaml_g(path, c->g, &w->map, e, sizeof e))
    return pa_map_yerr(c->d, n, c->err, c->err_sz, "map: %s", e);
  return 0;
}

/* ssl: {division: a|b, robots: N per team}: an SSL field is the map. */
static int world_ssl(wctx *c, yaml_node_t *n, yaml_node_t *root, pa_world *w) {
  static const char *const keys[] = {"division", "robots", NULL};
  if (n->type != YAML_MAPPING_NODE)
    return pa_map_yerr(c->d, n, c->err, c->err_sz,
                       "ssl: expected a mapping {division: a|b, robots: N}");
  if (pa_map_ycheck_keys(c->d, n, "ssl", keys, c->err, c->err_sz))
    return -1;
  if (pa_map_yget(c->d, root, "map"))
    return pa_map_yerr(c->d, n, c->err, c->err_sz,
                       "ssl: the field is the map; remove 'map'");
  yaml_node_t *v = pa_map_yget(c->d, n, "division");
  char s[8];
  if (!v)
    return pa_map_yerr(c->d, n, c->err, c->err_sz,
                       "ssl.division is required: a or b");
  if (pa_map_ystr(c->d, v, "ssl.division", s, sizeof s, c->err, c->err_sz))
    return -1;
  if (strcasecmp(s, "a") && strcasecmp(s, "b"))
    return pa_map_yerr(c->d, v, c->err, c->err_sz,
                       "ssl.division: '%s' is not a or b", s);
  w->ssl_division = (char)toupper((unsigned char)s[0]);
  long r = 0;
  if ((v = pa_map_yget(c->d, n, "robots"))) {
    if (pa_map_yint(c->d, v, "ssl.robots", &r, c->err, c->err_sz))
      return -1;
    if (r < 0 || r > 16)
      return pa_map_yerr(c->d, v, c->err, c->err_sz,
                         "ssl.robots: %ld per team, expected 0..16", r);
  }
  w->ssl_robots = (uint32_t)r;
  return 0;
}

/* An agent (the world's agents: list): an obstacle that moves on its own,
 * a circle of radius 0.25 m and height 1.7 m unless it says. */
static int agent(wctx *c, yaml_node_t *n, size_t i, pa_obstacle_def *o) {
  static const char *const extra[] = {"name",  "shape",     "pose", "behaviour",
                                      "speed", "waypoints", NULL};
  static const char *const beh[] = {"constant", "waypoints", "random",
                                    "pedestrian"};
  memset(o, 0, sizeof *o);
  snprintf(o->name, sizeof o->name, "agent%zu", i);
  o->shape = 1; /* circle */
  o->radius = 0.25;
  o->height = 1.7;
  o->colour[0] = 230, o->colour[1] = 90, o->colour[2] = 160;
  o->colour[3] = 255;
  o->speed = 0.5;
  keyset ks;
  if (pa_map_ycheck_keys(c->d, n, "agent",
                         row_keys(&ks, "", PA_PK_OBSTACLE, extra), c->err,
                         c->err_sz))
    return -1;
  yaml_node_t *v;
  if ((v = pa_map_yget(c->d, n, "name")) && name(c, v, "agent name", o->name))
    return -1;
  if ((v = pa_map_yget(c->d, n, "shape")) &&
      one_of_two(c, v, "shape", "box", "circle", &o->shape))
    return -1;
  if (need_pose(c, n, "agent", o->name, &o->x, &o->y, &o->theta))
    return -1;
  if (o->shape == 0) {
    double sz[2] = {0.5, 0.5};
    if ((v = pa_map_yget(c->d, n, "size")) &&
        pa_map_ynums(c->d, v, "size", sz, 2, 2, NULL, c->err, c->err_sz))
      return -1;
    if (!pa_prop_ok(PA_PR_OB_SIZE, sz[0]) || !pa_prop_ok(PA_PR_OB_SIZE, sz[1]))
      return pa_map_yerr(c->d, v ? v : n, c->err, c->err_sz,
                         "size must be positive, got [%g, %g]", sz[0], sz[1]);
    o->size_x = sz[0];
    o->size_y = sz[1];
  } else if (key_num(c, n, "radius", "radius", PA_PR_OB_RADIUS, &o->radius)) {
    return -1;
  }
  if (rows_in(c, n, "", PA_PK_OBSTACLE, o)) /* height, colour */
    return -1;
  char b[32];
  if (!(v = pa_map_yget(c->d, n, "behaviour")))
    return pa_map_yerr(c->d, n, c->err, c->err_sz,
                       "agent '%s': missing key 'behaviour' (constant, "
                       "waypoints, random or pedestrian)",
                       pa_map_yq(c->d, o->name));
  if (pa_map_ystr(c->d, v, "behaviour", b, sizeof b, c->err, c->err_sz))
    return -1;
  for (int k = 0; k < 4; k++)
    if (!strcmp(b, beh[k]))
      o->agent = k + 1; /* enum pa_agent */
  if (!o->agent)
    return pa_map_yerr(c->d, v, c->err, c->err_sz,
                       "behaviour: expected constant, waypoints, random or "
                       "pedestrian");
  if ((v = pa_map_yget(c->d, n, "speed")) &&
      num_in(c, v, "speed", 0, false, 10, false, &o->speed))
    return -1;
  if ((v = pa_map_yget(c->d, n, "waypoints"))) {
    if (v->type != YAML_SEQUENCE_NODE || seq_len(v) > 7)
      return pa_map_yerr(c->d, v, c->err, c->err_sz,
                         "waypoints: expected a list of up to 7 [x, y]");
    for (size_t k = 0; k < seq_len(v); k++) {
      yaml_node_t *p = pa_map_ynode(c->d, v->data.sequence.items.start[k]);
      if (pa_map_ynums(c->d, p, "waypoint", o->waypoints[k], 2, 2, NULL, c->err,
                       c->err_sz))
        return -1;
    }
    o->waypoint_count = seq_len(v);
  }
  return 0;
}

/* The world's agents: list, after its obstacles. */
static int world_agents(wctx *c, yaml_node_t *root, pa_world *w) {
  yaml_node_t *ag = pa_map_yget(c->d, root, "agents");
  if (!ag)
    return 0;
  if (ag->type != YAML_SEQUENCE_NODE)
    return pa_map_yerr(c->d, ag, c->err, c->err_sz,
                       "agents: expected a sequence of agents");
  size_t na = seq_len(ag), no = w->obstacle_count;
  if (na + no > PA_WORLD_MAX_OBSTACLES)
    return pa_map_yerr(c->d, ag, c->err, c->err_sz,
                       "obstacles and agents: at most %d together",
                       PA_WORLD_MAX_OBSTACLES);
  if (na == 0)
    return 0;
  pa_obstacle_def *all = realloc(w->obstacles, (no + na) * sizeof *all);
  if (!all)
    return pa_map_yerr(c->d, NULL, c->err, c->err_sz, "out of memory");
  w->obstacles = all;
  for (size_t i = 0; i < na; i++) {
    yaml_node_t *an = pa_map_ynode(c->d, ag->data.sequence.items.start[i]);
    if (agent(c, an, i, &w->obstacles[no + i]))
      return -1;
    if (unique_name(c, an, w, w->obstacles[no + i].name, w->robot_count,
                    no + i))
      return -1;
    w->obstacle_count = no + i + 1;
  }
  return 0;
}

static int world_parse(wctx *c, const char *path, pa_world *w) {
  static const char *const keys[] = {
      "map", "unknown_blocks", "robots", "obstacles", "ssl", "agents", NULL};
  yaml_node_t *root = pa_map_ydoc_root(c->d);
  if (pa_map_ycheck_keys(c->d, root, "world", keys, c->err, c->err_sz))
    return -1;
  char dir[PA_MAP_PATH_MAX];
  pa_map_dirname(path, dir, sizeof dir);
  w->map = pa_map_def_default();
  w->unknown_blocks = true;
  yaml_node_t *v;
  if ((v = pa_map_yget(c->d, root, "map")) && world_map(c, v, dir, w))
    return -1;
  if ((v = pa_map_yget(c->d, root, "unknown_blocks")) &&
      pa_map_ybool(c->d, v, "unknown_blocks", &w->unknown_blocks, c->err,
                   c->err_sz))
    return -1;

  if ((v = pa_map_yget(c->d, root, "ssl")) && world_ssl(c, v, root, w))
    return -1;

  yaml_node_t *robots = pa_map_yget(c->d, root, "robots");
  w->robots_given = robots != NULL;
  size_t nr = 1;
  if (robots) {
    if (robots->type != YAML_SEQUENCE_NODE)
      return pa_map_yerr(c->d, robots, c->err, c->err_sz,
                         "robots: expected a sequence of robots");
    nr = seq_len(robots);
    if (nr == 0 || nr > PA_WORLD_MAX_ROBOTS)
      return pa_map_yerr(c->d, robots, c->err, c->err_sz,
                         "robots: need 1 to %d robots, got %zu",
                         PA_WORLD_MAX_ROBOTS, nr);
  }
  w->robots = calloc(nr, sizeof *w->robots);
  if (!w->robots)
    return pa_map_yerr(c->d, NULL, c->err, c->err_sz, "out of memory");
  if (!robots) {
    w->robots[0] = pa_robot_def_default();
    w->robots[0].place_near_origin = true; /* no pose given */
    w->robot_count = 1;
  }
  for (size_t i = 0; robots && i < nr; i++) {
    yaml_node_t *rn = pa_map_ynode(c->d, robots->data.sequence.items.start[i]);
    if (robot(c, rn, i, &w->robots[i])) return -1;
    if (unique_name(c, rn, w, w->robots[i].name, i, 0)) return -1;
    w->robot_count = i + 1;
  }

  yaml_node_t *obs = pa_map_yget(c->d, root, "obstacles");
  if (!obs)
    return world_agents(c, root, w);
  if (obs->type != YAML_SEQUENCE_NODE)
    return pa_map_yerr(c->d, obs, c->err, c->err_sz,
                       "obstacles: expected a sequence of obstacles");
  size_t no = seq_len(obs);
  if (no > PA_WORLD_MAX_OBSTACLES)
    return pa_map_yerr(c->d, obs, c->err, c->err_sz,
                       "obstacles: at most %d, got %zu", PA_WORLD_MAX_OBSTACLES,
                       no);
  if (no == 0)
    return world_agents(c, root, w);
  w->obstacles = calloc(no, sizeof *w->obstacles);
  if (!w->obstacles)
    return pa_map_yerr(c->d, NULL, c->err, c->err_sz, "out of memory");
  for (size_t i = 0; i < no; i++) {
    yaml_node_t *on = pa_map_ynode(c->d, obs->data.sequence.items.start[i]);
    if (obstacle(c, on, i, &w->obstacles[i])) return -1;
    if (unique_name(c, on, w, w->obstacles[i].name, w->robot_count, i))
      return -1;
    w->obstacle_count = i + 1;
  }
  return world_agents(c, root, w);
}

int pa_world_load(const char *path, pa_world *w, char *err, size_t err_sz) {
  return pa_world_load_g(path, NULL, w, err, err_sz);
}

int pa_world_load_g(const char *path, const pa_map_guard *g, pa_world *w,
                    char *err, size_t err_sz) {
  memset(w, 0, sizeof *w);
  if (!path || !path[0]) {
    snprintf(err, err_sz, "world: empty path");
    return -1;
  }
  pa_ydoc d;
  if (pa_map_ydoc_load_file(&d, path, g, err, err_sz))
    return -1;
  wctx c = {&d, err, err_sz, g};
  int rc = world_parse(&c, path, w);
  pa_map_ydoc_free(&d);
  if (rc) pa_world_free(w);
  return rc;
}
