/* sim_geom_int.h - what the geometry files of pa_sim share (collisions,
 * rays, the casters, the laser): grid-frame helpers, the hit cell's entry
 * formula, ray vs shape, and the casters' entry points. Private to pa_sim. */
#ifndef PA_SIM_GEOM_INT_H
#define PA_SIM_GEOM_INT_H

#include "sim_int.h"

#include <math.h>

/* Rays cast together: the casters' stack buffers hold this many. */
#define CAST_CHUNK 512
/* Field codes >= this: safe step >= 1 cell (the casters jump). */
#define JUMP_CODE 5
/* The single-precision passes hold coordinates and ranges below this many
 * cells (their error bounds assume it). */
#define FLOAT_PASS_MAX 16384.0

/* The float passes' first jump, the same for every ray of a fan: the safe
 * step of the origin's cell (padded pox, poy: a free cell inside the grid)
 * as their jumps decode it, or 0 when it is below a cell or maxc is 0. */
static inline float first_jump_f(const pa_sim_model *m, double pox, double poy,
                                 float maxc) {
  int v = m->march[(size_t)poy * m->march_w + (size_t)pox];
  if (v < JUMP_CODE || !(0 < maxc))
    return 0;
  float fv = (float)v, s1 = fv * 0.25f - 0.25f, s2 = fv - 97.0f;
  return s1 > s2 ? s1 : s2;
}

/* World point -> grid frame in cell units. */
static inline void to_grid(const pa_sim_model *m, double x, double y,
                           double *gx, double *gy) {
  double rx = x - m->grid.origin_x, ry = y - m->grid.origin_y;
  double inv = 1.0 / m->grid.resolution;
  *gx = (m->cos_yaw * rx + m->sin_yaw * ry) * inv;
  *gy = (-m->sin_yaw * rx + m->cos_yaw * ry) * inv;
}

/* A world ray (from x, y along dx, dy, up to range_max [m]) in the grid
 * frame, cell units: the single-ray casters' common setup. */
typedef struct {
  double gx, gy, gdx, gdy, maxc;
} grid_ray;

static inline grid_ray ray_in_grid(const pa_sim_model *m, double x, double y,
                                   double dx, double dy, double range_max) {
  grid_ray r;
  to_grid(m, x, y, &r.gx, &r.gy);
  r.gdx = m->cos_yaw * dx + m->sin_yaw * dy;
  r.gdy = -m->sin_yaw * dx + m->cos_yaw * dy;
  r.maxc = range_max / m->grid.resolution;
  return r;
}

/* A caster's result t [cells] as a range [m] (res: the grid's resolution):
 * range_max where nothing is hit within maxc. */
static inline double cells_to_range(double t, double maxc, double range_max,
                                    double res) {
  return t >= maxc ? range_max : t * res;
}

static inline bool cell_blocked(const pa_sim_model *m, int64_t cx, int64_t cy) {
  if (cx < 0 || cy < 0 || cx >= (int64_t)m->grid.width ||
      cy >= (int64_t)m->grid.height)
    return true;
  /* the march field's code 0 is a blocked cell (border padded) */
  return m->march[(size_t)(cy + 1) * m->march_w + (size_t)cx + 1] == 0;
}

/* Row cy's blocked cell nearest at or left of cx within [lo, cx], or lo - 1
 * when none; 0 <= lo <= cx < width. */
static inline int64_t row_blocked_left(const pa_sim_model *m, int64_t cy,
                                       int64_t cx, int64_t lo) {
  const uint64_t *row = m->blocked + (size_t)cy * m->blocked_words;
  int64_t w = cx >> 6;
  uint64_t bits = row[w] & (~0ull >> (63 - (cx & 63)));
  for (;;) {
    if (bits) {
      int64_t i = (w << 6) + 63 - __builtin_clzll(bits);
      return i >= lo ? i : lo - 1;
    }
    if (--w < (lo >> 6))
      return lo - 1;
    bits = row[w];
  }
}

/* Row cy's blocked cell nearest at or right of cx within [cx, hi], or hi + 1
 * when none; 0 <= cx <= hi < width. */
static inline int64_t row_blocked_right(const pa_sim_model *m, int64_t cy,
                                        int64_t cx, int64_t hi) {
  const uint64_t *row = m->blocked + (size_t)cy * m->blocked_words;
  int64_t w = cx >> 6;
  uint64_t bits = row[w] & (~0ull << (cx & 63));
  for (;;) {
    if (bits) {
      int64_t i = (w << 6) + __builtin_ctzll(bits);
      return i <= hi ? i : hi + 1;
    }
    if (++w > (hi >> 6))
      return hi + 1;
    bits = row[w];
  }
}

/* Ray parameter [cells] where the ray enters cell (cx, cy): the same formula
 * for every caster so that equal cells give equal ranges, bit for bit. */
static inline double cell_entry(double ox, double oy, double ix, double iy,
                                double dx, double dy, int64_t cx, int64_t cy) {
  double tx = dx > 0   ? ((double)cx - ox) * ix
              : dx < 0 ? ((double)cx + 1.0 - ox) * ix
                       : -INFINITY;
  double ty = dy > 0   ? ((double)cy - oy) * iy
              : dy < 0 ? ((double)cy + 1.0 - oy) * iy
                       : -INFINITY;
  double t = tx > ty ? tx : ty;
  return t > 0 ? t : 0;
}

/* A hit cell (index in the padded grid, or < 0: none) -> the range [cells]
 * of a ray from the padded origin (pox, poy), clamped to maxc. */
static inline double cell_range(const pa_sim_model *m, double pox, double poy,
                                double dx, double dy, int64_t idx,
                                double maxc) {
  if (idx < 0)
    return maxc;
  const int64_t mw = m->march_w;
  const double ix = dx != 0 ? 1.0 / dx : 0, iy = dy != 0 ? 1.0 / dy : 0;
  double e = cell_entry(pox, poy, ix, iy, dx, dy, idx % mw, idx / mw);
  return e < maxc ? e : maxc;
}

/* Bounding radius of an obstacle around its centre. */
static inline double obstacle_bound(const pa_obstacle_info *o) {
  if (o->shape == PA_SHAPE_CIRCLE)
    return o->radius;
  return 0.5 * sqrt(o->size_x * o->size_x + o->size_y * o->size_y);
}

/* Ray (unit direction) vs circle: distance to the first crossing, 0 if the
 * origin is inside, INFINITY if missed. */
static inline double ray_circle(double ox, double oy, double dx, double dy,
                                double cx, double cy, double r) {
  double ex = ox - cx, ey = oy - cy;
  double b = ex * dx + ey * dy;
  double c = ex * ex + ey * ey - r * r;
  if (c <= 0)
    return 0;
  if (b > 0)
    return INFINITY;
  double disc = b * b - c;
  if (disc < 0)
    return INFINITY;
  return -b - sqrt(disc);
}

/* One slab of ray_box: narrows [t0, t1] to where the ray's local coordinate
 * l (moving by ld) is within [-h, h]; false if it never is. */
static inline bool ray_slab(double l, double ld, double h, double *t0,
                            double *t1) {
  if (ld != 0) {
    double a = (-h - l) / ld, b = (h - l) / ld;
    if (a > b) {
      double tmp = a;
      a = b;
      b = tmp;
    }
    *t0 = a > *t0 ? a : *t0;
    *t1 = b < *t1 ? b : *t1;
    return true;
  }
  return !(l < -h || l > h);
}

/* Ray vs box obstacle o (c, s: cos and sin of its heading): as ray_circle. */
static inline double ray_box(double ox, double oy, double dx, double dy,
                             const pa_obstacle_info *o, double c, double s) {
  double ex = ox - o->x, ey = oy - o->y;
  double lx = c * ex + s * ey, ly = -s * ex + c * ey;
  double ldx = c * dx + s * dy, ldy = -s * dx + c * dy;
  double t0 = -INFINITY, t1 = INFINITY;
  if (!ray_slab(lx, ldx, 0.5 * o->size_x, &t0, &t1) ||
      !ray_slab(ly, ldy, 0.5 * o->size_y, &t0, &t1))
    return INFINITY;
  if (t0 > t1 || t1 < 0)
    return INFINITY;
  return t0 > 0 ? t0 : 0;
}

/* ---- the casters (grid frame, cell units; results maxc = no return) ---- */

/* The plain Amanatides-Woo traversal (sim_ray.c): the reference. */
double pa_sim_int_cast_plain_cells(const pa_sim_model *m, double ox, double oy,
                                   double dx, double dy, double maxc);
/* The scalar fast caster for one ray (sim_ray.c): equal to the plain
 * traversal bit for bit. */
double pa_sim_int_cast_one(const pa_sim_model *m, double ox, double oy,
                           double dx, double dy, double maxc);
/* The same for a ray known free up to t0 [cells] (it goes on from there):
 * the vector casters' few close calls. */
double pa_sim_int_cast_from(const pa_sim_model *m, double ox, double oy,
                            double dx, double dy, double maxc, double t0);
/* Several rays from one origin on the caster path in use (sim_cast.c). */
void pa_sim_int_cast_many(const pa_sim_model *m, double ox, double oy,
                          const double *dxs, const double *dys, uint32_t n,
                          double maxc, double *out);

/* A vector caster: n <= CAST_CHUNK rays from the padded origin (pox, poy),
 * whose cell is free and inside the grid, with grid indices in 32 bits;
 * out[i] [cells] equal to the plain traversal bit for bit. */
typedef void (*pa_sim_cast_fn)(const pa_sim_model *m, double pox, double poy,
                               const double *dxs, const double *dys, uint32_t n,
                               double maxc, double *out);
/* Each returns NULL when this build has no such path (the CPU check is the
 * dispatcher's). */
pa_sim_cast_fn pa_sim_int_caster_avx512(void);
pa_sim_cast_fn pa_sim_int_caster_avx2(void);
pa_sim_cast_fn pa_sim_int_caster_portable(void);

/* ---- the face caster (sim_faces.c, sim_cast_face.h) ---------------------- */

/* Tiles of this many cells a side index the faces. */
#define PA_SIM_FACE_TILE 32
/* Fans of fewer rays take the march caster alone. */
#define PA_SIM_FACE_MIN 64
/* One orientation's pieces (faces merged along a grid line, cut at tile
 * edges), sorted by tile: tile (line / T) * tiles_v + lo / T holds
 * [start[t], start[t + 1]); each array has 16 entries of slack. Packed:
 * a = line | ends << 16 (bit 0: lo is the run's end, bit 1: hi is), b =
 * lo | hi << 16 (the span [lo, hi] on the line): grids up to 65535 cells
 * a side. */
typedef struct pa_sim_face_set {
  int32_t *a, *b;
  uint32_t *start;
  uint32_t tiles_v, count;
} pa_sim_face_set;
/* o[0]: the faces rays with dx > 0 meet (lines x = const), o[1] dx < 0,
 * o[2] dy > 0 (lines y = const), o[3] dy < 0; padded grid cells. */
typedef struct pa_sim_faces {
  pa_sim_face_set o[4];
  uint32_t tiles_x, tiles_y;
} pa_sim_faces;

/* The face caster's per-thread working memory (a fan of up to CAST_CHUNK
 * rays; sim_cast.c keeps one a thread). */
#define PA_SIM_FACE_Q 64     /* pseudo-angle slots a half-plane */
#define PA_SIM_FACE_LEVELS 5 /* the nearest-so-far table: spans < 32 */
#define PA_SIM_FACE_ARR (2 * CAST_CHUNK + 64)   /* the fan twice, + slack */
#define PA_SIM_FACE_CAND (8 * CAST_CHUNK + 512) /* faces in reach, at most */
/* faces nearer [cells] go first, unculled; then the others, culled */
#define PA_SIM_FACE_NEAR 100.0f
/* the per-ray arrays on cache lines: a 16-lane vector at a multiple of 16
 * rays is one line (a split store costs two) */
#define PA_SIM_FACE_ALIGNED __attribute__((aligned(64)))
typedef struct pa_sim_face_scratch {
  /* by axis (0: faces on x lines, 1: on y lines), the fan twice */
  float key[2][PA_SIM_FACE_ARR] PA_SIM_FACE_ALIGNED;
  float cr[2][PA_SIM_FACE_ARR] PA_SIM_FACE_ALIGNED;
  float inv[2][PA_SIM_FACE_ARR] PA_SIM_FACE_ALIGNED;
  float z[2][PA_SIM_FACE_ARR] PA_SIM_FACE_ALIGNED;
  float near[2][PA_SIM_FACE_ARR] PA_SIM_FACE_ALIGNED;
  int32_t win[2][PA_SIM_FACE_ARR] PA_SIM_FACE_ALIGNED;
  int32_t slot[2][PA_SIM_FACE_ARR] PA_SIM_FACE_ALIGNED;
  int32_t code[CAST_CHUNK + 32]; /* by ray + 1: its half-planes, bit o */
  /* the farthest of the rays' nearest faces so far over positions
   * [g, g + 2^l) (l 0: each ray's, both copies) */
  float best[PA_SIM_FACE_LEVELS][PA_SIM_FACE_ARR] PA_SIM_FACE_ALIGNED;
  /* the faces in reach (packed as pa_sim_face_set's, + slack), then each
   * one's offsets from the origin [cells], rays [g0, g1), squared distance */
  int32_t ca[PA_SIM_FACE_CAND + 16], cb[PA_SIM_FACE_CAND + 16];
  float dl[PA_SIM_FACE_CAND + 16];
  /* its span on the line, eps out, and its certain part (eps in at a run's
   * end) */
  float ulo[PA_SIM_FACE_CAND + 16], uhi[PA_SIM_FACE_CAND + 16];
  float clo[PA_SIM_FACE_CAND + 16], chi[PA_SIM_FACE_CAND + 16];
  int32_t g0[PA_SIM_FACE_CAND + 16], g1[PA_SIM_FACE_CAND + 16];
  /* the near faces, the far ones, the far ones kept (indices, + slack) */
  int32_t nearf[PA_SIM_FACE_CAND + 16], farf[PA_SIM_FACE_CAND + 16];
  int32_t kept[PA_SIM_FACE_CAND + 16];
  /* the far ones' rays [fg0, fg1) and squared distance (as int32 bits) */
  int32_t fg0[PA_SIM_FACE_CAND + 16], fg1[PA_SIM_FACE_CAND + 16];
  int32_t fd2[PA_SIM_FACE_CAND + 16];
  uint64_t fans, closes; /* fans cast here, rays of them recast (counts) */
} pa_sim_face_scratch;
/* A fan of n <= CAST_CHUNK rays from the padded origin (pox, poy) (free,
 * inside the grid) against m->faces: out[i] [cells] equal to the plain
 * traversal bit for bit; false (out untouched) when the fan is not in
 * angle order or the faces in reach are too many: the caller casts it
 * with the march caster. */
typedef bool (*pa_sim_face_fn)(const pa_sim_model *m, double pox, double poy,
                               const double *dxs, const double *dys, uint32_t n,
                               double maxc, double *out,
                               pa_sim_face_scratch *k);
pa_sim_face_fn pa_sim_int_facer_avx512(void);
pa_sim_face_fn pa_sim_int_facer_avx2(void);
pa_sim_face_fn pa_sim_int_facer_portable(void);

#endif
