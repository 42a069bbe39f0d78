/*
 * pa_props.h - the one schema of robot and obstacle properties: name, type,
 * unit, range, who may set it, and where it lives: its field in the shared
 * records (pa_robot_info, pa_obstacle_info) and in the world file's defs,
 * its storage type and scale, its world-file key, its wire id, its default
 * and the check a range cannot say. World files (pa_world.c), defaults,
 * the model's copies and checks (sim_model.c), set_property (sim_cmd.c),
 * get/set_property (netgw), snapshot files, save_world and the protocol
 * notes' table are loops over these rows, so a new property is its row, its
 * field and its use.
 *
 * Header only (an X-macro list, as MuJoCo's mjxmacro.h): a user expands
 * PA_PROPS(X) with its own X, or reads the rows through pa_prop_defs() and
 * their values through pa_prop_get / pa_prop_put.
 */
#ifndef PA_PROPS_H
#define PA_PROPS_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "pa_layout.h"
#include "pa_map.h"

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

/* Where a property lives: the storage type of its field. */
typedef enum pa_prop_store {
  PA_ST_F32,   /* float */
  PA_ST_F64,   /* double */
  PA_ST_U32,   /* uint32_t */
  PA_ST_U16,   /* uint16_t */
  PA_ST_WORD,  /* uint32_t holding an enum (pa_prop_word_name's index) */
  PA_ST_RGBA,  /* uint8_t[4] */
  PA_ST_SIZE2, /* two doubles side by side (size_x, size_y) */
} pa_prop_store;

/* The checks a range cannot say, run where a value is set (pa-sim's
 * set_property) or where a property is shown (PA_PC_CIRCLE / _BOX). */
typedef enum pa_prop_check {
  PA_PC_NONE,
  PA_PC_BEAMS,     /* at most the instance's max_beams */
  PA_PC_LASER_MIN, /* below laser_range_max */
  PA_PC_LASER_MAX, /* above laser_range_min */
  PA_PC_RADIUS,    /* no overlap with walls or bodies after the change */
  PA_PC_DYNAMICS,  /* held forces do not pass over the switch */
  PA_PC_CIRCLE,    /* circles only */
  PA_PC_BOX,       /* boxes only */
} pa_prop_check;

/* X(row, name, wire id (PA_PROP_<id> in pa_layout.h, NONE if read-only),
 *   type, unit, lo, lo_open, hi, hi_open, kinds, default (in the unit;
 *   colours as 0xRRGGBBAA), store, R (robot) or O (obstacle), field (of
 *   pa_robot_info / pa_obstacle_info; also the snapshot file's key), scale
 * (field = value * scale), world-file path (NULL: the loader's own, as drive
 * and shape), field of pa_robot_def / pa_obstacle_def (value * scale, doubles
 *   for F32/F64, uint32_t for U32/U16, int for WORD; a new robot property
 *   takes a free slot ext[k] of pa_robot_def), check).
 * One row per name and kind: a robot's radius and a circle's differ. */
#define PA_DEG_RAD (3.14159265358979323846 / 180.0)
#define PA_PROPS(X)                                                            \
  X(MAX_V, "max_v", MAX_V, PA_PT_NUM, "m/s", 0, 1, 100, 0, PA_PK_ROBOT, 1.0,   \
    F32, R, max_v, 1, "limits.max_v", max_v, NONE)                             \
  X(MAX_VY, "max_vy", MAX_VY, PA_PT_NUM, "m/s", 0, 1, 100, 0, PA_PK_ROBOT,     \
    1.0, F32, R, max_vy, 1, "limits.max_vy", max_vy, NONE)                     \
  X(MAX_W, "max_w", MAX_W, PA_PT_NUM, "rad/s", 0, 1, 100, 0, PA_PK_ROBOT, 3.0, \
    F32, R, max_w, 1, "limits.max_w", max_w, NONE)                             \
  X(ACC_V, "acc_v", ACC_V, PA_PT_NUM, "m/s^2", 0, 1, 1000, 0, PA_PK_ROBOT,     \
    2.0, F32, R, acc_v, 1, "limits.acc_v", acc_v, NONE)                        \
  /* omni robots' sideways speed-up; default 0: acc_v's */                     \
  X(ACC_VY, "acc_vy", ACC_VY, PA_PT_NUM, "m/s^2", 0, 0, 1000, 0, PA_PK_ROBOT,  \
    0, F32, R, acc_vy, 1, "limits.acc_vy", ext[0], NONE)                       \
  X(DEC_V, "dec_v", DEC_V, PA_PT_NUM, "m/s^2", 0, 1, 1000, 0, PA_PK_ROBOT,     \
    4.0, F32, R, dec_v, 1, "limits.dec_v", dec_v, NONE)                        \
  X(ACC_W, "acc_w", ACC_W, PA_PT_NUM, "rad/s^2", 0, 1, 1000, 0, PA_PK_ROBOT,   \
    8.0, F32, R, acc_w, 1, "limits.acc_w", acc_w, NONE)                        \
  X(DEC_W, "dec_w", DEC_W, PA_PT_NUM, "rad/s^2", 0, 1, 1000, 0, PA_PK_ROBOT,   \
    12.0, F32, R, dec_w, 1, "limits.dec_w", dec_w, NONE)                       \
  X(HEAD_LIMIT, "head_limit", HEAD_LIMIT, PA_PT_NUM, "rad", 0, 0,              \
    3.14159265358979323846, 0, PA_PK_ROBOT, 2.6, F32, R, head_limit, 1,        \
    "limits.head_limit", head_limit, NONE)                                     \
  X(MAX_HEAD_RATE, "max_head_rate", MAX_HEAD_RATE, PA_PT_NUM, "rad/s", 0, 1,   \
    100, 0, PA_PK_ROBOT, 3.0, F32, R, max_head_rate, 1,                        \
    "limits.max_head_rate", max_head_rate, NONE)                               \
  X(LASER_BEAMS, "laser_beams", LASER_BEAMS, PA_PT_INT, "", 1, 0, 65536, 0,    \
    PA_PK_ROBOT, 360, U32, R, laser_beams, 1, "laser.beams", laser.beams,      \
    BEAMS)                                                                     \
  X(LASER_RANGE_MIN, "laser_range_min", LASER_RANGE_MIN, PA_PT_NUM, "m", 0, 0, \
    1000, 0, PA_PK_ROBOT, 0.15, F32, R, laser_range_min, 1, "laser.range_min", \
    laser.range_min, LASER_MIN)                                                \
  X(LASER_RANGE_MAX, "laser_range_max", LASER_RANGE_MAX, PA_PT_NUM, "m", 0, 1, \
    1000, 0, PA_PK_ROBOT, 12.0, F32, R, laser_range_max, 1, "laser.range_max", \
    laser.range_max, LASER_MAX)                                                \
  X(LASER_NOISE, "laser_noise", LASER_NOISE, PA_PT_NUM, "m", 0, 0, 100, 0,     \
    PA_PK_ROBOT, 0, F32, R, laser_noise, 1, "laser.noise", laser.noise, NONE)  \
  X(RADIUS, "radius", RADIUS, PA_PT_NUM, "m", 0, 1, 5, 0, PA_PK_ROBOT, 0.18,   \
    F32, R, radius, 1, "radius", radius, RADIUS)                               \
  /* default 0: 1.6 x radius (PA_WHEEL_BASE_PER_RADIUS) */                     \
  X(WHEEL_BASE, "wheel_base", WHEEL_BASE, PA_PT_NUM, "m", 0, 1, 10, 0,         \
    PA_PK_ROBOT, 0, F32, R, wheel_base, 1, "wheel_base", wheel_base, NONE)     \
  X(HEIGHT, "height", HEIGHT, PA_PT_NUM, "m", 0, 1, 10, 0, PA_PK_ROBOT, 0.25,  \
    F32, R, height, 1, "height", height, NONE)                                 \
  X(HEAD_HEIGHT, "head_height", HEAD_HEIGHT, PA_PT_NUM, "m", 0, 1, 10, 0,      \
    PA_PK_ROBOT, 0.35, F32, R, head_height, 1, "head_height", head_height,     \
    NONE)                                                                      \
  X(COLOUR, "colour", COLOUR, PA_PT_COLOUR, "", 0, 0, 255, 0, PA_PK_ROBOT,     \
    0x286edcff, RGBA, R, colour, 1, "colour", colour, NONE)                    \
  X(DRIVE, "drive", NONE, PA_PT_WORD, "", 0, 0, 1, 0, PA_PK_ROBOT | PA_PK_RO,  \
    0, WORD, R, drive, 1, NULL, drive, NONE)                                   \
  X(CAMERA_WIDTH, "camera_width", NONE, PA_PT_INT, "px", 1, 0, 4096, 0,        \
    PA_PK_ROBOT | PA_PK_RO, 640, U16, R, cam_width, 1, "camera.width",         \
    camera.width, NONE)                                                        \
  X(CAMERA_HEIGHT, "camera_height", NONE, PA_PT_INT, "px", 1, 0, 4096, 0,      \
    PA_PK_ROBOT | PA_PK_RO, 480, U16, R, cam_height, 1, "camera.height",       \
    camera.height, NONE)                                                       \
  X(CAMERA_FOV_DEG, "camera_fov_deg", NONE, PA_PT_NUM, "deg", 0, 1, 180, 1,    \
    PA_PK_ROBOT | PA_PK_RO, 60, F32, R, cam_fov, PA_DEG_RAD, "camera.fov",     \
    camera.fov, NONE)                                                          \
  X(OB_SHAPE, "shape", NONE, PA_PT_WORD, "", 0, 0, 1, 0,                       \
    PA_PK_OBSTACLE | PA_PK_RO, 0, WORD, O, shape, 1, NULL, shape, NONE)        \
  X(OB_RADIUS, "radius", RADIUS, PA_PT_NUM, "m", 0, 1, 500, 0, PA_PK_OBSTACLE, \
    0.5, F64, O, radius, 1, "radius", radius, CIRCLE)                          \
  X(OB_SIZE, "size", SIZE, PA_PT_SIZE, "m", 0, 1, 1000, 0, PA_PK_OBSTACLE, 1,  \
    SIZE2, O, size_x, 1, "size", size_x, BOX)                                  \
  X(OB_HEIGHT, "height", HEIGHT, PA_PT_NUM, "m", 0, 1, 100, 0, PA_PK_OBSTACLE, \
    0.5, F32, O, height, 1, "height", height, NONE)                            \
  X(OB_COLOUR, "colour", COLOUR, PA_PT_COLOUR, "", 0, 0, 255, 0,               \
    PA_PK_OBSTACLE, 0x808080ff, RGBA, O, colour, 1, "colour", colour, NONE)    \
  X(DYNAMICS, "dynamics", DYNAMICS, PA_PT_WORD, "", 0, 0, 1, 0, PA_PK_ROBOT,   \
    0, WORD, R, dynamics, 1, "dynamics.type", dynamics, DYNAMICS)              \
  X(MASS, "mass", MASS, PA_PT_NUM, "kg", 0, 1, 1e6, 0, PA_PK_ROBOT, 10, F32,   \
    R, mass, 1, "dynamics.mass", mass, NONE)                                   \
  X(INERTIA, "inertia", INERTIA, PA_PT_NUM, "kg m^2", 0, 1, 1e6, 0,            \
    PA_PK_ROBOT, 0.2, F32, R, inertia, 1, "dynamics.inertia", inertia, NONE)   \
  X(LINEAR_DAMPING, "linear_damping", LINEAR_DAMPING, PA_PT_NUM, "N s/m", 0,   \
    0, 1e6, 0, PA_PK_ROBOT, 10, F32, R, lin_damping, 1,                        \
    "dynamics.linear_damping", lin_damping, NONE)                              \
  X(ANGULAR_DAMPING, "angular_damping", ANGULAR_DAMPING, PA_PT_NUM,            \
    "N m s/rad", 0, 0, 1e6, 0, PA_PK_ROBOT, 1, F32, R, ang_damping, 1,         \
    "dynamics.angular_damping", ang_damping, NONE)                             \
  X(MAX_FORCE, "max_force", MAX_FORCE, PA_PT_NUM, "N", 0, 1, 1e9, 0,           \
    PA_PK_ROBOT, 40, F32, R, max_force, 1, "dynamics.max_force", max_force,    \
    NONE)                                                                      \
  X(MAX_TORQUE, "max_torque", MAX_TORQUE, PA_PT_NUM, "N m", 0, 1, 1e9, 0,      \
    PA_PK_ROBOT, 5, F32, R, max_torque, 1, "dynamics.max_torque", max_torque,  \
    NONE)

/* Row indices: PA_PR_MAX_V, ..., PA_PR_MAX_TORQUE. */
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
  uint32_t wire;         /* enum pa_prop; PA_PROP_NONE: not settable */
  double dflt;           /* in the unit; colours 0xRRGGBBAA */
  pa_prop_store store;
  size_t off;        /* in pa_robot_info / pa_obstacle_info */
  const char *field; /* its name there: the snapshot file's key */
  double scale;      /* field = value * scale */
  const char *path;  /* world-file key, "section.key"; NULL: none */
  size_t def_off;    /* in pa_robot_def / pa_obstacle_def */
  pa_prop_check check;
} pa_prop_def;

/* The structs a row's fields belong to (R robots, O obstacles). */
#define PA_PROP_INFO_R(f) offsetof(pa_robot_info, f)
#define PA_PROP_INFO_O(f) offsetof(pa_obstacle_info, f)
#define PA_PROP_DEF_R(f) offsetof(pa_robot_def, f)
#define PA_PROP_DEF_O(f) offsetof(pa_obstacle_def, f)

/* The rows, indexed by pa_prop_row. */
static inline const pa_prop_def *pa_prop_defs(void) {
#define PA_PROP_DEF_ROW(row, name, id, type, unit, lo, lo_open, hi, hi_open,   \
                        kinds, dflt, st, rec, field, scale, path, dfield,      \
                        check)                                                 \
  {name,         type,    unit,       lo,                                      \
   hi,           lo_open, hi_open,    kinds,                                   \
   PA_PROP_##id, dflt,    PA_ST_##st, PA_PROP_INFO_##rec(field),               \
   #field,       scale,   path,       PA_PROP_DEF_##rec(dfield),               \
   PA_PC_##check},
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

/* Whether the row's values are whole numbers (integers, words' indices). */
static inline bool pa_prop_whole(pa_prop_row row) {
  return pa_prop(row)->type == PA_PT_INT || pa_prop(row)->type == PA_PT_WORD;
}

/* v within the row's range (finite; whole for PA_PT_INT and PA_PT_WORD). */
static inline bool pa_prop_ok(pa_prop_row row, double v) {
  const pa_prop_def *p = pa_prop(row);
  if (!isfinite(v) || (pa_prop_whole(row) && v != floor(v)))
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

/* A word property's name for value v (dynamics: "kinematic" 0, "dynamic" 1;
 * drive: "diff", "omni"; shape: "box", "circle"), NULL out of range;
 * pa_prop_word is the way back (-1 if none). */
static inline const char *pa_prop_word_name(pa_prop_row row, int v) {
  static const char *const dyn[] = {"kinematic", "dynamic"};
  static const char *const drive[] = {"diff", "omni"};
  static const char *const shape[] = {"box", "circle"};
  if (v < 0 || v > 1)
    return NULL;
  return row == PA_PR_DYNAMICS   ? dyn[v]
         : row == PA_PR_DRIVE    ? drive[v]
         : row == PA_PR_OB_SHAPE ? shape[v]
                                 : NULL;
}
static inline int pa_prop_word(pa_prop_row row, const char *word) {
  for (int v = 0; pa_prop_word_name(row, v); v++)
    if (!strcmp(pa_prop_word_name(row, v), word))
      return v;
  return -1;
}

/* ---- a row's storage: values in the row's unit, component k ------------ */

/* How many numbers the value is: 4 (colour), 2 (size) or 1. */
static inline int pa_prop_ncomp(pa_prop_row row) {
  pa_prop_store st = pa_prop(row)->store;
  return st == PA_ST_RGBA ? 4 : st == PA_ST_SIZE2 ? 2 : 1;
}

/* Component k of the row's default (a colour's from 0xRRGGBBAA). */
static inline double pa_prop_dflt(pa_prop_row row, int k) {
  const pa_prop_def *p = pa_prop(row);
  if (p->store == PA_ST_RGBA)
    return (double)(((uint32_t)p->dflt >> (8 * (3 - k))) & 0xffu);
  return p->dflt;
}

/* Component k of the row's field in rec (pa_robot_info/pa_obstacle_info). */
static inline double pa_prop_get(pa_prop_row row, const void *rec, int k) {
  const pa_prop_def *p = pa_prop(row);
  const unsigned char *b = (const unsigned char *)rec + p->off;
  float f;
  double d;
  uint32_t u;
  uint16_t h;
  switch (p->store) {
  case PA_ST_F32:
    memcpy(&f, b, sizeof f);
    return p->scale == 1 ? (double)f : (double)f / p->scale;
  case PA_ST_F64:
  case PA_ST_SIZE2:
    memcpy(&d, b + (size_t)k * sizeof d, sizeof d);
    return p->scale == 1 ? d : d / p->scale;
  case PA_ST_U32:
  case PA_ST_WORD:
    memcpy(&u, b, sizeof u);
    return u;
  case PA_ST_U16:
    memcpy(&h, b, sizeof h);
    return h;
  case PA_ST_RGBA:
    return b[k];
  }
  return 0;
}

/* Sets component k of the row's field in rec to v (in range: checked). */
static inline void pa_prop_put(pa_prop_row row, void *rec, int k, double v) {
  const pa_prop_def *p = pa_prop(row);
  unsigned char *b = (unsigned char *)rec + p->off;
  float f = (float)(v * p->scale);
  double d = v * p->scale;
  uint32_t u = (uint32_t)llround(v);
  uint16_t h = (uint16_t)llround(v);
  switch (p->store) {
  case PA_ST_F32:
    memcpy(b, &f, sizeof f);
    break;
  case PA_ST_F64:
  case PA_ST_SIZE2:
    memcpy(b + (size_t)k * sizeof d, &d, sizeof d);
    break;
  case PA_ST_U32:
  case PA_ST_WORD:
    memcpy(b, &u, sizeof u);
    break;
  case PA_ST_U16:
    memcpy(b, &h, sizeof h);
    break;
  case PA_ST_RGBA:
    b[k] = (uint8_t)u;
    break;
  }
}

/* The same in a pa_robot_def / pa_obstacle_def, whose fields are doubles
 * (F32, F64, SIZE2), uint32_t (U32, U16), int (WORD) or uint8_t[4]. */
static inline double pa_prop_def_get(pa_prop_row row, const void *def, int k) {
  const pa_prop_def *p = pa_prop(row);
  const unsigned char *b = (const unsigned char *)def + p->def_off;
  double d;
  uint32_t u;
  int i;
  switch (p->store) {
  case PA_ST_F32:
  case PA_ST_F64:
  case PA_ST_SIZE2:
    memcpy(&d, b + (size_t)k * sizeof d, sizeof d);
    return p->scale == 1 ? d : d / p->scale;
  case PA_ST_U32:
  case PA_ST_U16:
    memcpy(&u, b, sizeof u);
    return u;
  case PA_ST_WORD:
    memcpy(&i, b, sizeof i);
    return i;
  case PA_ST_RGBA:
    return b[k];
  }
  return 0;
}
static inline void pa_prop_def_put(pa_prop_row row, void *def, int k,
                                   double v) {
  const pa_prop_def *p = pa_prop(row);
  unsigned char *b = (unsigned char *)def + p->def_off;
  double d = v * p->scale;
  uint32_t u = (uint32_t)llround(v);
  int i = (int)llround(v);
  switch (p->store) {
  case PA_ST_F32:
  case PA_ST_F64:
  case PA_ST_SIZE2:
    memcpy(b + (size_t)k * sizeof d, &d, sizeof d);
    break;
  case PA_ST_U32:
  case PA_ST_U16:
    memcpy(b, &u, sizeof u);
    break;
  case PA_ST_WORD:
    memcpy(b, &i, sizeof i);
    break;
  case PA_ST_RGBA:
    b[k] = (uint8_t)u;
    break;
  }
}

/* Whether the row is a property of this obstacle (radius: circles, size:
 * boxes); rows of any other check apply to every body of their kind. */
static inline bool pa_prop_applies(pa_prop_row row, uint32_t shape) {
  pa_prop_check c = pa_prop(row)->check;
  return c == PA_PC_CIRCLE ? shape == PA_SHAPE_CIRCLE
         : c == PA_PC_BOX  ? shape == PA_SHAPE_BOX
                           : true;
}

/* Every row's default into a def of its kind (PA_PK_ROBOT: pa_robot_def). */
static inline void pa_prop_def_defaults(void *def, unsigned kind) {
  for (int i = 0; i < PA_PR_COUNT; i++)
    if (pa_prop((pa_prop_row)i)->kinds & kind)
      for (int k = 0; k < pa_prop_ncomp((pa_prop_row)i); k++)
        pa_prop_def_put((pa_prop_row)i, def, k,
                        pa_prop_dflt((pa_prop_row)i, k));
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
