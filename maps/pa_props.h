/*
 * pa_props.h - the one schema of robot and obstacle properties: name, type,
 * unit, range and who may set it. World files (pa_world.c), the model checks
 * (sim_model.c), spawn_* and get/set_property (netgw) and the protocol notes
 * read these rows, so a property has one range everywhere.
 *
 * Header only (an X-macro list, as MuJoCo's mjxmacro.h): a user expands
 * PA_PROPS(X) with its own X, or reads the rows through pa_prop_defs().
 */
#ifndef PA_PROPS_H
#define PA_PROPS_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pa_prop_type {
  PA_PT_NUM,    /* one number */
  PA_PT_INT,    /* one whole number */
  PA_PT_COLOUR, /* [r, g, b(, a)], each in the range */
  PA_PT_SIZE,   /* [x, y], each in the range */
  PA_PT_WORD,   /* a name (drive, shape: read-only; dynamics: lo..hi are
                   the indices of its words, see pa_prop_word) */
} pa_prop_type;

enum {
  PA_PK_ROBOT = 1u << 0,
  PA_PK_OBSTACLE = 1u << 1,
  PA_PK_RO = 1u << 2, /* read-only: get_property shows it, set refuses it */
};

/* X(row, name, wire id (PA_PROP_<id> in pa_shm.h, NONE if read-only), type,
 *   unit, lo, lo_open, hi, hi_open, kinds). One row per name and kind: a
 *   robot's radius and a circle's differ. */
#define PA_PROPS(X)                                                            \
  X(MAX_V, "max_v", MAX_V, PA_PT_NUM, "m/s", 0, 1, 100, 0, PA_PK_ROBOT)        \
  X(MAX_VY, "max_vy", MAX_VY, PA_PT_NUM, "m/s", 0, 1, 100, 0, PA_PK_ROBOT)     \
  X(MAX_W, "max_w", MAX_W, PA_PT_NUM, "rad/s", 0, 1, 100, 0, PA_PK_ROBOT)      \
  X(ACC_V, "acc_v", ACC_V, PA_PT_NUM, "m/s^2", 0, 1, 1000, 0, PA_PK_ROBOT)     \
  X(DEC_V, "dec_v", DEC_V, PA_PT_NUM, "m/s^2", 0, 1, 1000, 0, PA_PK_ROBOT)     \
  X(ACC_W, "acc_w", ACC_W, PA_PT_NUM, "rad/s^2", 0, 1, 1000, 0, PA_PK_ROBOT)   \
  X(DEC_W, "dec_w", DEC_W, PA_PT_NUM, "rad/s^2", 0, 1, 1000, 0, PA_PK_ROBOT)   \
  X(HEAD_LIMIT, "head_limit", HEAD_LIMIT, PA_PT_NUM, "rad", 0, 0,              \
    3.14159265358979323846, 0, PA_PK_ROBOT)                                    \
  X(MAX_HEAD_RATE, "max_head_rate", MAX_HEAD_RATE, PA_PT_NUM, "rad/s", 0, 1,   \
    100, 0, PA_PK_ROBOT)                                                       \
  X(LASER_BEAMS, "laser_beams", LASER_BEAMS, PA_PT_INT, "", 1, 0, 65536, 0,    \
    PA_PK_ROBOT)                                                               \
  X(LASER_RANGE_MIN, "laser_range_min", LASER_RANGE_MIN, PA_PT_NUM, "m", 0, 0, \
    1000, 0, PA_PK_ROBOT)                                                      \
  X(LASER_RANGE_MAX, "laser_range_max", LASER_RANGE_MAX, PA_PT_NUM, "m", 0, 1, \
    1000, 0, PA_PK_ROBOT)                                                      \
  X(LASER_NOISE, "laser_noise", LASER_NOISE, PA_PT_NUM, "m", 0, 0, 100, 0,     \
    PA_PK_ROBOT)                                                               \
  X(RADIUS, "radius", RADIUS, PA_PT_NUM, "m", 0, 1, 5, 0, PA_PK_ROBOT)         \
  X(WHEEL_BASE, "wheel_base", WHEEL_BASE, PA_PT_NUM, "m", 0, 1, 10, 0,         \
    PA_PK_ROBOT)                                                               \
  X(HEIGHT, "height", HEIGHT, PA_PT_NUM, "m", 0, 1, 10, 0, PA_PK_ROBOT)        \
  X(HEAD_HEIGHT, "head_height", HEAD_HEIGHT, PA_PT_NUM, "m", 0, 1, 10, 0,      \
    PA_PK_ROBOT)                                                               \
  X(COLOUR, "colour", COLOUR, PA_PT_COLOUR, "", 0, 0, 255, 0,                  \
    PA_PK_ROBOT | PA_PK_OBSTACLE)                                              \
  X(DRIVE, "drive", NONE, PA_PT_WORD, "", 0, 0, 0, 0, PA_PK_ROBOT | PA_PK_RO)  \
  X(CAMERA_WIDTH, "camera_width", NONE, PA_PT_INT, "px", 1, 0, 4096, 0,        \
    PA_PK_ROBOT | PA_PK_RO)                                                    \
  X(CAMERA_HEIGHT, "camera_height", NONE, PA_PT_INT, "px", 1, 0, 4096, 0,      \
    PA_PK_ROBOT | PA_PK_RO)                                                    \
  X(CAMERA_FOV_DEG, "camera_fov_deg", NONE, PA_PT_NUM, "deg", 0, 1, 180, 1,    \
    PA_PK_ROBOT | PA_PK_RO)                                                    \
  X(OB_SHAPE, "shape", NONE, PA_PT_WORD, "", 0, 0, 0, 0,                       \
    PA_PK_OBSTACLE | PA_PK_RO)                                                 \
  X(OB_RADIUS, "radius", RADIUS, PA_PT_NUM, "m", 0, 1, 500, 0, PA_PK_OBSTACLE) \
  X(OB_SIZE, "size", SIZE, PA_PT_SIZE, "m", 0, 1, 1000, 0, PA_PK_OBSTACLE)     \
  X(OB_HEIGHT, "height", HEIGHT, PA_PT_NUM, "m", 0, 1, 100, 0, PA_PK_OBSTACLE) \
  X(DYNAMICS, "dynamics", DYNAMICS, PA_PT_WORD, "", 0, 0, 1, 0, PA_PK_ROBOT)   \
  X(MASS, "mass", MASS, PA_PT_NUM, "kg", 0, 1, 1e6, 0, PA_PK_ROBOT)            \
  X(INERTIA, "inertia", INERTIA, PA_PT_NUM, "kg m^2", 0, 1, 1e6, 0,            \
    PA_PK_ROBOT)                                                               \
  X(LINEAR_DAMPING, "linear_damping", LINEAR_DAMPING, PA_PT_NUM, "N s/m", 0,   \
    0, 1e6, 0, PA_PK_ROBOT)                                                    \
  X(ANGULAR_DAMPING, "angular_damping", ANGULAR_DAMPING, PA_PT_NUM,            \
    "N m s/rad", 0, 0, 1e6, 0, PA_PK_ROBOT)                                    \
  X(MAX_FORCE, "max_force", MAX_FORCE, PA_PT_NUM, "N", 0, 1, 1e9, 0,           \
    PA_PK_ROBOT)                                                               \
  X(MAX_TORQUE, "max_torque", MAX_TORQUE, PA_PT_NUM, "N m", 0, 1, 1e9, 0,      \
    PA_PK_ROBOT)

/* Row indices: PA_PR_MAX_V, ..., PA_PR_OB_HEIGHT. */
#define PA_PROP_ROW_ENUM(row, ...) PA_PR_##row,
typedef enum pa_prop_row { PA_PROPS(PA_PROP_ROW_ENUM) PA_PR_COUNT } pa_prop_row;
#undef PA_PROP_ROW_ENUM

typedef struct pa_prop_def {
  const char *name;
  pa_prop_type type;
  const char *unit;
  double lo, hi;
  bool lo_open, hi_open; /* the bound itself is out of range */
  unsigned kinds;        /* PA_PK_* */
} pa_prop_def;

/* The rows, indexed by pa_prop_row. */
static inline const pa_prop_def *pa_prop_defs(void) {
#define PA_PROP_DEF_ROW(row, name, id, type, unit, lo, lo_open, hi, hi_open,   \
                        kinds)                                                 \
  {name, type, unit, lo, hi, lo_open, hi_open, kinds},
  static const pa_prop_def defs[PA_PR_COUNT] = {PA_PROPS(PA_PROP_DEF_ROW)};
#undef PA_PROP_DEF_ROW
  return defs;
}

static inline const pa_prop_def *pa_prop(pa_prop_row row) {
  return &pa_prop_defs()[row];
}

/* The row of a property of that kind (PA_PK_ROBOT or PA_PK_OBSTACLE), or -1.
 * "color" is "colour". */
static inline int pa_prop_find(const char *name, unsigned kind) {
  if (!strcmp(name, "color"))
    name = "colour";
  for (int i = 0; i < PA_PR_COUNT; i++)
    if ((pa_prop_defs()[i].kinds & kind) &&
        !strcmp(pa_prop_defs()[i].name, name))
      return i;
  return -1;
}

/* v within the row's range (finite; whole for PA_PT_INT). */
static inline bool pa_prop_ok(pa_prop_row row, double v) {
  const pa_prop_def *p = pa_prop(row);
  if (!isfinite(v) || (p->type == PA_PT_INT && v != floor(v)))
    return false;
  return (p->lo_open ? v > p->lo : v >= p->lo) &&
         (p->hi_open ? v < p->hi : v <= p->hi);
}

/* As pa_prop_ok for a value kept as a float: against the bounds rounded to
 * float (a head_limit of pi is stored as 3.1415927 > pi). */
static inline bool pa_prop_ok_float(pa_prop_row row, float v) {
  const pa_prop_def *p = pa_prop(row);
  float lo = (float)p->lo, hi = (float)p->hi;
  if (!isfinite(v) || (p->type == PA_PT_INT && v != floorf(v)))
    return false;
  return (p->lo_open ? v > lo : v >= lo) && (p->hi_open ? v < hi : v <= hi);
}

/* A settable word's value (dynamics: "kinematic" 0, "dynamic" 1), or -1;
 * pa_prop_word_name is the way back (NULL out of range). */
static inline const char *pa_prop_word_name(pa_prop_row row, int v) {
  static const char *const dyn[] = {"kinematic", "dynamic"};
  if (row == PA_PR_DYNAMICS && v >= 0 && v <= 1)
    return dyn[v];
  return NULL;
}
static inline int pa_prop_word(pa_prop_row row, const char *word) {
  for (int v = 0; pa_prop_word_name(row, v); v++)
    if (!strcmp(pa_prop_word_name(row, v), word))
      return v;
  return -1;
}

/* The range as text, "(0, 5] m", into buf; returns buf. */
static inline const char *pa_prop_range(pa_prop_row row, char *buf, size_t n) {
  const pa_prop_def *p = pa_prop(row);
  snprintf(buf, n, "%c%g, %g%c%s%s", p->lo_open ? '(' : '[', p->lo, p->hi,
           p->hi_open ? ')' : ']', p->unit[0] ? " " : "", p->unit);
  return buf;
}

#ifdef __cplusplus
}
#endif

#endif
