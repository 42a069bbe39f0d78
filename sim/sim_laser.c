/* sim_laser.c - the laser scan: wall beams on the casters, then
 * obstacles, other robots, clamping and noise; per-thread scratch. */
#define _GNU_SOURCE
#include "sim_geom_int.h"
#include "sim_ssl_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_CHUNK CAST_CHUNK /* beams cast together */

typedef float v4f __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef int64_t v4l __attribute__((vector_size(32)));
typedef double v2d __attribute__((vector_size(16)));
typedef float v2f __attribute__((vector_size(8)));

/* A few loops are compiled twice: for the baseline and, on x86-64, for
 * AVX2 without FMA (4 doubles a vector instead of 2; no contraction is
 * possible, so the same bits), chosen with the caster path. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define WIDE_DIRS 1
#endif
#define BODY static inline __attribute__((always_inline))
/* fn's build for k's path: fn_avx2 when k->wide (WIDE_DIRS), else fn */
#ifdef WIDE_DIRS
#define ON_PATH(k, fn, ...)                                                    \
  ((k)->wide ? fn##_avx2(__VA_ARGS__) : fn(__VA_ARGS__))
#else
#define ON_PATH(k, fn, ...) fn(__VA_ARGS__)
#endif

#ifdef WIDE_DIRS
/* The caster path has AVX2 (AVX-512 implies it): the loops' AVX2 build. */
static inline bool wide_path(const pa_sim_model *m) {
  pa_sim_simd path = pa_sim_simd_path(m);
  return path == PA_SIM_SIMD_AVX512 || path == PA_SIM_SIMD_AVX2;
}
#endif

typedef struct scan_ctx {
  double x, y, c, s; /* sensor pose */
  double theta;      /* [rad] */
  double inc;        /* [rad] */
  double inv_inc;    /* 1 / inc */
  uint32_t beams;
  uint32_t b0, b1; /* the beams this pass owns: bodies change only these */
  double range_max;
  const float *bc, *bs; /* beam_table: beam directions in the sensor frame */
  float *out;
  double far;          /* no body beyond this can change out[] */
  const int32_t *qpos; /* scratch qpos: pseudo-angle step -> beam */
  const float *smax;   /* scratch smax: sector maxima (sector_max) */
  uint32_t stride;     /* of smax's levels */
  bool wide;           /* the AVX2 loops (WIDE_DIRS, an AVX2 caster path) */
} scan_ctx;

/* Beam i's world direction: the same operations as beam_dirs (its vector
 * lanes and its tail), so the same bits. */
static inline void beam_dir(const scan_ctx *k, uint32_t i, double *dx,
                            double *dy) {
  double bc = k->bc[i], bs = k->bs[i];
  *dx = k->c * bc - k->s * bs;
  *dy = k->s * bc + k->c * bs;
}

/* Beam index of an unwrapped window position (windows span < 3 turns). */
static inline uint32_t wrap_beam(int64_t q, int64_t n) {
  while (q < 0)
    q += n;
  while (q >= n)
    q -= n;
  return (uint32_t)q;
}

/* c ? a : b without a branch (the same value). */
static inline double seld(bool c, double a, double b) {
  uint64_t ua, ub, m = -(uint64_t)c;
  memcpy(&ua, &a, sizeof ua);
  memcpy(&ub, &b, sizeof ub);
  ua = (ua & m) | (ub & ~m);
  memcpy(&a, &ua, sizeof a);
  return a;
}

/* atan2 to within 2e-6 rad (a polynomial: this runs once per body per scan;
 * beam windows get a margin that covers the error). Its choices without
 * branches (a body's direction is not predictable; the same values). */
static inline double fast_atan2(double y, double x) {
  double ax = fabs(x), ay = fabs(y);
  bool swap = ax < ay;
  double mn = seld(swap, ax, ay), mx = seld(swap, ay, ax);
  double a = seld(mx > 0, mn / mx, 0), q = a * a;
  double r =
      a * (0.99997726 +
           q * (-0.33262347 +
                q * (0.19354346 +
                     q * (-0.11643287 + q * (0.05265332 + q * -0.01172120)))));
  r = seld(ay > ax, M_PI_2 - r, r);
  r = seld(x < 0, M_PI - r, r);
  return seld(y < 0, -r, r);
}

/* Beam indices [k0, k1] (unwrapped, may run past either end) that can see a
 * body of bounding radius rb at (ex, ey) from the sensor, distance d. The
 * window may be a little wider than the body (its extra beams miss it): the
 * half angle asin(rb / d) is bounded by its tangent (no second atan). */
static void shape_window(const scan_ctx *k, double ex, double ey, double d,
                         double rb, int64_t *k0, int64_t *k1) {
  if (d <= rb + 1e-9) { /* sensor inside the bound: every beam */
    *k0 = 0;
    *k1 = (int64_t)k->beams - 1;
    return;
  }
  /* tan(asin(rb / d)) >= asin(rb / d), + the atan error margin */
  double half = rb / sqrt(d * d - rb * rb) + 1e-5;
  /* angle of the body in the sensor frame, relative to angle_min = -pi */
  double phi = fast_atan2(ey, ex) - k->theta + M_PI;
  *k0 = pa_sim_iceil((phi - half) * k->inv_inc) - 1;
  *k1 = pa_sim_ifloor((phi + half) * k->inv_inc) + 1;
  if (*k1 - *k0 >= (int64_t)k->beams) {
    *k0 = 0;
    *k1 = (int64_t)k->beams - 1;
  }
}

/* The beams of window [k0, k1] (k1 - k0 < n) as two runs: [*a, *b) and
 * [0, *c) (the part past beam n - 1, often empty). */
static inline void window_runs(int64_t k0, int64_t k1, uint32_t n, uint32_t *a,
                               uint32_t *b, uint32_t *c) {
  uint32_t i = wrap_beam(k0, n), w = (uint32_t)(k1 - k0 + 1);
  *a = i;
  *b = w <= n - i ? i + w : n;
  *c = w <= n - i ? 0 : w - (n - i);
}

/* The runs of window_runs that lie in the beams k owns, [b0, b1): r[0]..r[1]
 * and r[2]..r[3] (empty when the start is not below the end). */
static inline void part_runs(const scan_ctx *k, int64_t k0, int64_t k1,
                             uint32_t r[4]) {
  uint32_t a, b, c;
  window_runs(k0, k1, k->beams, &a, &b, &c);
  r[0] = a > k->b0 ? a : k->b0;
  r[1] = b < k->b1 ? b : k->b1;
  r[2] = k->b0;
  r[3] = c < k->b1 ? c : k->b1;
}

/* Does every beam of [k0, k1] already return nearer than a body whose
 * bound (radius rb) is at distance d? Then none can change: a beam meets
 * it at t >= (d - rb) / |dir|, |dir| within 1e-7 of 1, and ray_circle /
 * ray_box lose less than 1e-6 m to rounding. Bodies behind the walls of
 * the room (most of them in an office) end here, before their beams. */
static bool occluded(const scan_ctx *k, double d, double rb, int64_t k0,
                     int64_t k1) {
  double near = (d - rb) * (1.0 - 1e-6) - 1e-6;
  if (!(near > 0))
    return false;
  uint32_t r[4];
  part_runs(k, k0, k1, r);
  for (uint32_t i = r[0]; i < r[1]; i++)
    if ((double)k->out[i] > near)
      return false;
  for (uint32_t i = r[2]; i < r[3]; i++)
    if ((double)k->out[i] > near)
      return false;
  return true;
}

/* The pseudo-angle of a direction (u, v): its quadrant (0..3 from +x,
 * counterclockwise) + the part within it, |v| / (|u| + |v|) in the even
 * quadrants and |u| / (|u| + |v|) in the odd ones: in [0, 4), monotone in
 * the angle and moving at most 1 per radian (one division, no atan).
 * qpos[j]: the beam index (floor) at pseudo-angle 4 j / PA_SIM_QBINS of the
 * sensor-frame direction turned by pi (angle_min = -pi is 0). */
static void qpos_table(int32_t *qpos, uint32_t beams) {
  for (uint32_t j = 0; j <= PA_SIM_QBINS; j++) {
    double q = 4.0 * j / PA_SIM_QBINS, f = q - floor(q);
    double a = floor(q) * M_PI_2 + atan2(f, 1.0 - f); /* its angle */
    double p = floor(a * beams / (2.0 * M_PI));
    qpos[j] = j == PA_SIM_QBINS ? (int32_t)beams : (int32_t)p;
  }
}

static inline v2d sqrt2(v2d x) {
#if defined(__SSE2__)
  return __builtin_ia32_sqrtpd(x);
#else
  return (v2d){sqrt(x[0]), sqrt(x[1])};
#endif
}

/* scan_circle's beam loop four beams at a time (oc > 0), from beam i
 * while i + 4 <= end: beam_dir and ray_circle's operations lane by lane
 * (the same bits), and the nearer of the hit and out[] (a float's value
 * survives the trip through double). Returns the next beam. */
BODY uint32_t ray_circle4_body(const scan_ctx *k, uint32_t i, uint32_t end,
                               double ox, double oy, double oc) {
  const v4d zero = {0, 0, 0, 0};
  const v4d inf = {INFINITY, INFINITY, INFINITY, INFINITY};
  for (; i + 4 <= end; i += 4) {
    v4f fc, fs, fo;
    memcpy(&fc, k->bc + i, sizeof fc);
    memcpy(&fs, k->bs + i, sizeof fs);
    memcpy(&fo, k->out + i, sizeof fo);
    v4d bc = __builtin_convertvector(fc, v4d);
    v4d bs = __builtin_convertvector(fs, v4d);
    v4d dx = k->c * bc - k->s * bs, dy = k->s * bc + k->c * bs;
    v4d bb = ox * dx + oy * dy, disc = bb * bb - oc;
    v4l pos = disc > 0;
    v4d sq = (v4d)(((v4l)disc & pos) | ((v4l)zero & ~pos));
    v2d lo = sqrt2((v2d){sq[0], sq[1]}), hi = sqrt2((v2d){sq[2], sq[3]});
    sq = (v4d){lo[0], lo[1], hi[0], hi[1]};
    v4d t = -bb - sq;
    v4l miss = (bb > 0) | (disc < 0);
    t = (v4d)(((v4l)inf & miss) | ((v4l)t & ~miss));
    v4d o = __builtin_convertvector(fo, v4d);
    v4l near = t < o;
    v4d v = (v4d)(((v4l)t & near) | ((v4l)o & ~near));
    fo = __builtin_convertvector(v, v4f);
    memcpy(k->out + i, &fo, sizeof fo);
  }
  return i;
}

static uint32_t ray_circle4(const scan_ctx *k, uint32_t i, uint32_t end,
                            double ox, double oy, double oc) {
  return ray_circle4_body(k, i, end, ox, oy, oc);
}

#ifdef WIDE_DIRS
__attribute__((target("avx2"))) static uint32_t
ray_circle4_avx2(const scan_ctx *k, uint32_t i, uint32_t end, double ox,
                 double oy, double oc) {
  return ray_circle4_body(k, i, end, ox, oy, oc);
}
#endif

/* scan_circle's beams [k0, k1] of a body at distance d (its window). */
static void circle_beams(const scan_ctx *k, double cx, double cy, double r,
                         double d, int64_t k0, int64_t k1) {
  if (occluded(k, d, r, k0, k1))
    return;
  uint32_t rr[4];
  part_runs(k, k0, k1, rr);
  /* ray_circle's terms of this body, then per beam without branches (the
   * same operations: the same bits; a beam that misses gets INFINITY) */
  double ox = k->x - cx, oy = k->y - cy, oc = ox * ox + oy * oy - r * r;
  for (uint32_t run = 0; run < 2; run++) {
    uint32_t i = rr[2 * run], end = rr[2 * run + 1];
    if (oc > 0) { /* four beams at a time (the sensor outside it) */
      i = ON_PATH(k, ray_circle4, k, i, end, ox, oy, oc);
    }
    for (; i < end; i++) {
      double dx, dy;
      beam_dir(k, i, &dx, &dy);
      double t = ray_circle(k->x, k->y, dx, dy, cx, cy, r);
      if (t < (double)k->out[i])
        k->out[i] = (float)t;
    }
  }
}

static void scan_circle(const scan_ctx *k, double cx, double cy, double r) {
  double ex = cx - k->x, ey = cy - k->y;
  double lim = k->far + r, d2 = ex * ex + ey * ey;
  if (d2 >= lim * lim)
    return;
  int64_t k0, k1;
  double d = sqrt(d2);
  shape_window(k, ex, ey, d, r, &k0, &k1);
  circle_beams(k, cx, cy, r, d, k0, k1);
}

/* Sectors are 4 beams; smax level L holds the max of 2^L sectors from
 * each, over the beams twice round (a window across beam 0 is one run). */
#define SECTOR_LEVELS 4 /* windows of up to 8 sectors */
#define BATCH 64        /* robots culled together */

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

static inline v4f sqrt4(v4f x) {
#if defined(__SSE__)
  return __builtin_ia32_sqrtps(x);
#else
  v4f r;
  for (int j = 0; j < 4; j++)
    r[j] = sqrtf(x[j]);
  return r;
#endif
}

/* x where m (all ones), else y (a macro: a function returning 32 bytes
 * would be passed differently with AVX than without) */
#define SEL8(m, x, y) ((v8f)(((v8i)(x) & (m)) | ((v8i)(y) & ~(m))))
#define SELI8(m, x, y) (((x) & (m)) | ((y) & ~(m)))

/* Which of 8 robots (centres at ex, ey from the sensor, radii r) are
 * hidden behind the walls: all the returns in their windows nearer than
 * them? Bit j set only if occluded() would say so for robot j (or its
 * window misses the beams k owns: the same for a part). Only a
 * filter (the rest take the exact path), so in float, 8 at a time and
 * without branches, with margins for float's error: near within 1e-5 d +
 * 1e-5 below occluded's; a window of pseudo-angle +-(r / (d - r) + 5e-5)
 * around the centre's (at least shape_window's half angle + its atan
 * error + float's; the pseudo-angle moves at most 1 per radian), widened
 * by 3 beams (shape_window's extra beam, the table's rounding). Every lane
 * in vectors; the two table reads (qpos, then the sector maxima) one lane
 * at a time between them. */
BODY unsigned hidden8_body(const scan_ctx *k, const float *fx, const float *fy,
                           const float *fr) {
  v8f ex, ey, r;
  memcpy(&ex, fx, sizeof ex);
  memcpy(&ey, fy, sizeof ey);
  memcpy(&r, fr, sizeof r);
  const int32_t n = (int32_t)k->beams, Q = PA_SIM_QBINS;
  const float c = (float)k->c, s = (float)k->s;
  v8f d2 = ex * ex + ey * ey;
  v4f dl = sqrt4((v4f){d2[0], d2[1], d2[2], d2[3]});
  v4f dh = sqrt4((v4f){d2[4], d2[5], d2[6], d2[7]});
  v8f d = {dl[0], dl[1], dl[2], dl[3], dh[0], dh[1], dh[2], dh[3]};
  v8f dr = d - r;
  v8f near = dr - 1e-5f * d - 1e-5f;
  v8f h = r / dr + 5e-5f;
  v8i ok = (near > 0) & (h < 1.0f);
  /* the direction in the sensor frame turned by pi (angle_min is 0) */
  v8f u = -(c * ex + s * ey), v = s * ex - c * ey;
  v8f au = (v8f)((v8i)u & INT32_MAX), av = (v8f)((v8i)v & INT32_MAX);
  /* pseudo_angle: quadrant (0..3) + the part within it */
  v8i qu = u < 0, qv = v < 0; /* -1 or 0 */
  v8i quad = (qv & 3) + (qu & (1 | (qv & -2)));
  v8i even = (quad & 1) == 0;
  v8f q = __builtin_convertvector(quad, v8f) + SEL8(even, av, au) / (au + av);
  v8f qa = (q - h) * (float)(Q / 4), qb = (q + h) * (float)(Q / 4);
  /* in range whenever ok (h < 1); clamped for the rest (and not a number) */
  const float alo = (float)(-Q / 4), ahi = (float)(Q - 1);
  const float bhi = (float)(Q + Q / 4);
  const v8f zero = {0, 0, 0, 0, 0, 0, 0, 0};
  qa = SEL8((qa > alo) & (qa < ahi), qa, zero);
  qb = SEL8((qb > 0) & (qb < bhi), qb, zero);
  v8i ta = __builtin_convertvector(qa, v8i),
      tb = __builtin_convertvector(qb, v8i);
  v8i ia = ta + (qa < __builtin_convertvector(ta, v8f)); /* floor */
  v8i ib = tb - (qb > __builtin_convertvector(tb, v8f)); /* ceil */
  v8i wa = ia < 0; /* the window starts before the table: once round */
  v8i wb = ib > Q; /* it ends past the table: once round */
  v8i ja = ia & (Q - 1), jb = ib - (wb & Q), pa, pb;
  for (int j = 0; j < 8; j++) {
    pa[j] = k->qpos[ja[j]];
    pb[j] = k->qpos[jb[j]];
  }
  v8i k0 = pa - 3 - (wa & n), k1 = pb + 4 + (wb & n);
  v8i sh = (k0 < 0) & n;
  k0 += sh;
  k1 += sh;
  v8i okj = ok & (k0 >= 0) & (k1 - k0 + 1 < n);
  k0 &= ~(k0 < 0);
  v8i last = (v8i){0} + (2 * n - 1);
  k1 = SELI8(k1 < k0, k0, SELI8(k1 > last, last, k1));
  /* a window (k0 < n) that meets none of the beams k owns, [b0, b1) or
   * the same twice round: none of its beams changes here (never for a
   * whole scan) */
  const int32_t p0 = (int32_t)k->b0, p1 = (int32_t)k->b1;
  v8i apart = okj & ((k1 < p0) | (k0 >= p1)) & ((k1 < p0 + n) | (k0 >= p1 + n));
  v8i t0 = k0 >> 2, t1 = k1 >> 2, w = t1 - t0 + 1;
  okj &= w <= (1 << (SECTOR_LEVELS - 1));
  v8i lv = -((w > 1) + (w > 3) + (w > 7)); /* log2 of min(w, 8) */
  v8i at = lv * (int32_t)k->stride + t0;
  v8i bt = lv * (int32_t)k->stride + t1 - (1 << lv) + 1;
  v8f a, b;
  for (int j = 0; j < 8; j++) {
    a[j] = k->smax[at[j]];
    b[j] = k->smax[bt[j]];
  }
  v8f mx = SEL8(a > b, a, b);
  v8i hid = (okj & (mx <= near)) | apart;
  unsigned mask = 0;
  for (int j = 0; j < 8; j++)
    mask |= (unsigned)(hid[j] & 1) << j;
  return mask;
}

static unsigned hidden8(const scan_ctx *k, const float *ex, const float *ey,
                        const float *r) {
  return hidden8_body(k, ex, ey, r);
}

#ifdef WIDE_DIRS
__attribute__((target("avx2"))) static unsigned hidden8_avx2(const scan_ctx *k,
                                                             const float *ex,
                                                             const float *ey,
                                                             const float *r) {
  return hidden8_body(k, ex, ey, r);
}
#endif

typedef struct batch {
  double x[BATCH], y[BATCH], r[BATCH];
  uint32_t n;
} batch;

/* The robots of b: the hidden ones dropped together, then the others. */
static void flush(const scan_ctx *k, batch *b) {
  uint32_t vis[BATCH], nv = 0;
  for (uint32_t i = 0; i < b->n; i += 8) {
    float ex[8], ey[8], r[8];
    for (int j = 0; j < 8; j++) { /* lanes past n: not hidden */
      uint32_t q = i + j < b->n ? i + j : i;
      ex[j] = (float)(b->x[q] - k->x);
      ey[j] = (float)(b->y[q] - k->y);
      r[j] = (float)b->r[q];
    }
    unsigned hid = ON_PATH(k, hidden8, k, ex, ey, r);
    for (uint32_t j = 0; j < 8 && i + j < b->n; j++) {
      vis[nv] = i + j;
      nv += !((hid >> j) & 1);
    }
  }
  /* scan_circle in two passes: every window first (no branch that depends
   * on a robot between them: they overlap), then the beams */
  int64_t k0[BATCH], k1[BATCH];
  double dd[BATCH];
  uint32_t nw = 0;
  for (uint32_t i = 0; i < nv; i++) {
    uint32_t q = vis[i];
    double ex = b->x[q] - k->x, ey = b->y[q] - k->y, r = b->r[q];
    double lim = k->far + r, d2 = ex * ex + ey * ey;
    dd[nw] = sqrt(d2);
    shape_window(k, ex, ey, dd[nw], r, &k0[nw], &k1[nw]);
    vis[nw] = q;
    nw += d2 < lim * lim; /* push() checked it: as scan_circle */
  }
  for (uint32_t i = 0; i < nw; i++)
    circle_beams(k, b->x[vis[i]], b->y[vis[i]], b->r[vis[i]], dd[i], k0[i],
                 k1[i]);
  b->n = 0;
}

/* Adds a robot to b (n of them so far, returns the new count) if it is
 * within far + r of the sensor (scan_circle drops the others first
 * anyway); the count stays in a register, not in b. */
static inline uint32_t push(const scan_ctx *k, batch *b, uint32_t n, double x,
                            double y, double r, bool take) {
  double ex = x - k->x, ey = y - k->y, lim = k->far + r;
  b->x[n] = x;
  b->y[n] = y;
  b->r[n] = r;
  n += take && ex * ex + ey * ey < lim * lim;
  if (n == BATCH) {
    b->n = n;
    flush(k, b);
    n = 0;
  }
  return n;
}

static void scan_box(const scan_ctx *k, const pa_obstacle_info *o) {
  double rb = obstacle_bound(o);
  double ex = o->x - k->x, ey = o->y - k->y;
  double lim = k->far + rb;
  if (ex * ex + ey * ey >= lim * lim)
    return;
  int64_t k0, k1;
  double d = sqrt(ex * ex + ey * ey);
  shape_window(k, ex, ey, d, rb, &k0, &k1);
  if (occluded(k, d, rb, k0, k1))
    return;
  double c = cos(o->theta), s = sin(o->theta);
  int64_t n = (int64_t)k->beams;
  for (int64_t q = k0; q <= k1; q++) {
    uint32_t i = wrap_beam(q, n);
    if (i < k->b0 || i >= k->b1)
      continue;
    double dx, dy;
    beam_dir(k, i, &dx, &dy);
    double t = ray_box(k->x, k->y, dx, dy, o, c, s);
    if (t < (double)k->out[i])
      k->out[i] = (float)t;
  }
}

int pa_sim_int_scratch_init(pa_sim_scratch *k, uint32_t beam_cap) {
  memset(k, 0, sizeof *k);
  size_t n = beam_cap ? beam_cap : 1;
  k->beam_cos = calloc(n, sizeof(float));
  k->beam_sin = calloc(n, sizeof(float));
  k->qpos = calloc(PA_SIM_QBINS + 1, sizeof(int32_t));
  k->smax = calloc(SECTOR_LEVELS * (n / 2 + 2), sizeof(float));
  k->part = calloc(n, sizeof(float));
  if (!k->beam_cos || !k->beam_sin || !k->qpos || !k->smax || !k->part) {
    pa_sim_int_scratch_free(k);
    return -1;
  }
  return 0;
}

void pa_sim_int_scratch_free(pa_sim_scratch *k) {
  free(k->beam_cos);
  free(k->beam_sin);
  free(k->qpos);
  free(k->smax);
  free(k->part);
  memset(k, 0, sizeof *k);
}

void pa_sim_scan(const pa_sim_model *m, pa_sim_state *s, uint32_t id,
                 float *out) {
  pa_sim_int_scan(m, s, id, out, s->scratch);
}

/* The beam direction table of the scratch for this beam count. */
static void beam_table(pa_sim_scratch *sc, uint32_t beams) {
  if (sc->beam_table_n == beams)
    return;
  double inc = 2.0 * M_PI / beams;
  for (uint32_t i = 0; i < beams; i++) {
    double a = -M_PI + inc * i;
    sc->beam_cos[i] = (float)cos(a);
    sc->beam_sin[i] = (float)sin(a);
  }
  qpos_table(sc->qpos, beams);
  sc->beam_table_n = beams;
}

/* The wall beams' two loops below are compiled twice (as the bodies'
 * beams above): for the baseline and, on x86-64, for AVX2. */

/* dx[i] = c * bc[i] - s * bs[i], dy[i] = s * bc[i] + c * bs[i] for i < n:
 * four beams at a time (the same operations on each, so the same bits). */
BODY void beam_dirs_body(double c, double s, const float *bc, const float *bs,
                         uint32_t n, double *dx, double *dy) {
  uint32_t i = 0;
  for (; i + 4 <= n; i += 4) {
    v4f fc, fs;
    memcpy(&fc, bc + i, sizeof fc);
    memcpy(&fs, bs + i, sizeof fs);
    v4d vc = __builtin_convertvector(fc, v4d);
    v4d vs = __builtin_convertvector(fs, v4d);
    v4d x = c * vc - s * vs, y = s * vc + c * vs;
    memcpy(dx + i, &x, sizeof x);
    memcpy(dy + i, &y, sizeof y);
  }
  for (; i < n; i++) {
    dx[i] = c * bc[i] - s * bs[i];
    dy[i] = s * bc[i] + c * bs[i];
  }
}

/* out[q] = t[q] >= maxc ? rmax : (float)(t[q] * res), raised to lo: four
 * beams at a time (the same operations and roundings as one by one; rmax
 * is a float's value, so choosing before the conversion is the same). */
BODY void cells_to_ranges_body(const double *t, uint32_t n, double maxc,
                               double res, double rmax, float lo, float *out) {
  uint32_t q = 0;
  const v4d vmax = {rmax, rmax, rmax, rmax};
  const v4f vlo = {lo, lo, lo, lo};
  for (; q + 4 <= n; q += 4) {
    v4d vt;
    memcpy(&vt, t + q, sizeof vt);
    v4l far = vt >= maxc; /* -1 or 0 per lane */
    v4l r = ((v4l)(vt * res) & ~far) | ((v4l)vmax & far);
    v4f v = __builtin_convertvector((v4d)r, v4f);
    v4i low = v < vlo;
    v4i x = ((v4i)v & ~low) | ((v4i)vlo & low);
    memcpy(out + q, &x, sizeof x);
  }
  for (; q < n; q++) {
    float v = t[q] >= maxc ? (float)rmax : (float)(t[q] * res);
    out[q] = v < lo ? lo : v;
  }
}

typedef void dirs_fn(double c, double s, const float *bc, const float *bs,
                     uint32_t n, double *dx, double *dy);
typedef void ranges_fn(const double *t, uint32_t n, double maxc, double res,
                       double rmax, float lo, float *out);

static void beam_dirs(double c, double s, const float *bc, const float *bs,
                      uint32_t n, double *dx, double *dy) {
  beam_dirs_body(c, s, bc, bs, n, dx, dy);
}

static void cells_to_ranges(const double *t, uint32_t n, double maxc,
                            double res, double rmax, float lo, float *out) {
  cells_to_ranges_body(t, n, maxc, res, rmax, lo, out);
}

#ifdef WIDE_DIRS
__attribute__((target("avx2"))) static void
beam_dirs_avx2(double c, double s, const float *bc, const float *bs, uint32_t n,
               double *dx, double *dy) {
  beam_dirs_body(c, s, bc, bs, n, dx, dy);
}

__attribute__((target("avx2"))) static void
cells_to_ranges_avx2(const double *t, uint32_t n, double maxc, double res,
                     double rmax, float lo, float *out) {
  cells_to_ranges_body(t, n, maxc, res, rmax, lo, out);
}
#endif

/* out[i] = out[i] >= hi ? hi : out[i] < lo ? lo : out[i], four at a time. */
static void clamp_ranges(float *out, uint32_t n, float lo, float hi) {
  uint32_t i = 0;
  const v4f vlo = {lo, lo, lo, lo}, vhi = {hi, hi, hi, hi};
  for (; i + 4 <= n; i += 4) {
    v4f v;
    memcpy(&v, out + i, sizeof v);
    v4i top = v >= vhi, low = (v < vlo) & ~top;
    v4i x = ((v4i)v & ~(top | low)) | ((v4i)vhi & top) | ((v4i)vlo & low);
    memcpy(out + i, &x, sizeof x);
  }
  for (; i < n; i++)
    out[i] = out[i] >= hi ? hi : out[i] < lo ? lo : out[i];
}

/* max(a, b) of four floats (as a > b ? a : b in each). */
static inline v4f max4(v4f a, v4f b) {
  v4i m = a > b;
  return (v4f)(((v4i)a & m) | ((v4i)b & ~m));
}

/* The largest of a[0, n) and 0, four chains at a time. */
static float max_of(const float *a, uint32_t n) {
  v4f f = {0, 0, 0, 0};
  uint32_t i = 0;
  for (; i + 4 <= n; i += 4) {
    v4f v;
    memcpy(&v, a + i, sizeof v);
    f = max4(v, f);
  }
  float far = 0;
  for (int j = 0; j < 4; j++)
    far = f[j] > far ? f[j] : far;
  for (; i < n; i++)
    far = a[i] > far ? a[i] : far;
  return far;
}

/* smax level 0: the max of each 4 beams of out[] taken twice round
 * (beam i + n is beam i; the last of the first round may mix both);
 * level L: of 2^L of them from each. Returns the max of all (0 if none). */
static float sector_max(const float *out, uint32_t n, float *smax,
                        uint32_t stride) {
  uint32_t ns = (2 * n + 3) / 4, t = 0; /* sectors twice round */
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)
  /* four sectors at a time: their beams transposed, then two maxima (the
   * maximum in another order: the same value, ranges being >= +0) */
  for (; 16 * (t / 4) + 16 <= n; t += 4) {
    v4f a, b, c, d;
    memcpy(&a, out + 4 * t, sizeof a);
    memcpy(&b, out + 4 * t + 4, sizeof b);
    memcpy(&c, out + 4 * t + 8, sizeof c);
    memcpy(&d, out + 4 * t + 12, sizeof d);
    v4f ab = max4(__builtin_shufflevector(a, b, 0, 1, 4, 5),
                  __builtin_shufflevector(a, b, 2, 3, 6, 7));
    v4f cd = max4(__builtin_shufflevector(c, d, 0, 1, 4, 5),
                  __builtin_shufflevector(c, d, 2, 3, 6, 7));
    v4f m4 = max4(__builtin_shufflevector(ab, cd, 0, 2, 4, 6),
                  __builtin_shufflevector(ab, cd, 1, 3, 5, 7));
    memcpy(smax + t, &m4, sizeof m4);
  }
#endif
  for (; 4 * t + 4 <= n; t++) {
    const float *o = out + 4 * t;
    float a = o[0] > o[1] ? o[0] : o[1], b = o[2] > o[3] ? o[2] : o[3];
    smax[t] = a > b ? a : b;
  }
  if (n % 4 == 0) {
    memcpy(smax + t, smax, t * sizeof *smax);
  } else {
    for (; t < ns; t++) {
      float a = 0;
      for (uint32_t i = 4 * t; i < 4 * t + 4 && i < 2 * n; i++) {
        float v = out[i < n ? i : i - n];
        a = v > a ? v : a;
      }
      smax[t] = a;
    }
  }
  /* the max of all: over the first round's level 0 */
  float far = max_of(smax, (n + 3) / 4);
  for (uint32_t lv = 1; lv < SECTOR_LEVELS; lv++) {
    const float *p = smax + (size_t)(lv - 1) * stride;
    float *c = smax + (size_t)lv * stride;
    uint32_t half = 1u << (lv - 1), i = 0;
    if (ns + 1 < 2 * half)
      break; /* no window that wide */
    uint32_t end = ns + 1 - 2 * half;
    for (; i + 4 <= end; i += 4) {
      v4f x, y;
      memcpy(&x, p + i, sizeof x);
      memcpy(&y, p + i + half, sizeof y);
      x = max4(x, y);
      memcpy(c + i, &x, sizeof x);
    }
    for (; i < end; i++)
      c[i] = p[i] > p[i + half] ? p[i] : p[i + half];
  }
  return far;
}

/* smax's level stride: sectors twice round the most beams, + slack. */
static uint32_t beam_stride(const pa_sim_model *m) {
  return (m->beam_cap ? m->beam_cap : 1) / 2 + 2;
}

static uint32_t scan_beams(const pa_sim_model *m, const pa_robot_info *ri) {
  return ri->laser_beams > m->beam_cap ? m->beam_cap : ri->laser_beams;
}

void pa_sim_int_scan_at(const pa_sim_model *m, const pa_sim_state *s,
                        uint32_t id, pa_sim_scan_at *a) {
  const pa_robot_state *r = &s->rs[id];
  a->id = id;
  a->beams = scan_beams(m, &s->info[id]);
  a->x = r->x;
  a->y = r->y;
  a->theta = r->theta;
  a->c = cos(r->theta);
  a->s = sin(r->theta);
  to_grid(m, r->x, r->y, &a->gx, &a->gy);
  a->gc = m->cos_yaw * a->c + m->sin_yaw * a->s;
  a->gs = -m->sin_yaw * a->c + m->cos_yaw * a->s;
  a->lh = NULL;
}

void pa_sim_int_scan_walls(const pa_sim_model *m, const pa_sim_state *s,
                           const pa_sim_scan_at *a, float *out,
                           pa_sim_scratch *sc, uint32_t b0, uint32_t b1) {
  const pa_robot_info *ri = &s->info[a->id];
  uint32_t beams = a->beams;
  if (b1 > beams)
    b1 = beams;
  beam_table(sc, beams);
  double rmax = ri->laser_range_max;
  double res = m->grid.resolution, maxc = rmax / res;
  const double gc = a->gc, gs = a->gs;
  /* Without noise the finish's clamp to range_min can come first (it
   * commutes with taking the nearer body), here on the casting threads. */
  const float lo = ri->laser_noise > 0 ? 0.0f : ri->laser_range_min;
  const float *bc = sc->beam_cos, *bs = sc->beam_sin;
  dirs_fn *dirs = beam_dirs;
  ranges_fn *ranges = cells_to_ranges;
#ifdef WIDE_DIRS
  if (wide_path(m)) {
    dirs = beam_dirs_avx2;
    ranges = cells_to_ranges_avx2;
  }
#endif
  for (uint32_t i0 = b0; i0 < b1; i0 += SCAN_CHUNK) {
    uint32_t nb = b1 - i0 < SCAN_CHUNK ? b1 - i0 : SCAN_CHUNK;
    double bdx[SCAN_CHUNK], bdy[SCAN_CHUNK], bt[SCAN_CHUNK];
    dirs(gc, gs, bc + i0, bs + i0, nb, bdx, bdy);
    pa_sim_int_cast_many(m, a->gx, a->gy, bdx, bdy, nb, maxc, bt);
    ranges(bt, nb, maxc, res, rmax, lo, out + i0);
  }
}

void pa_sim_int_scan(const pa_sim_model *m, const pa_sim_state *s, uint32_t id,
                     float *out, pa_sim_scratch *sc) {
  pa_sim_scan_at a;
  pa_sim_int_scan_at(m, s, id, &a);
  pa_sim_int_scan_walls(m, s, &a, out, sc, 0, UINT32_MAX);
  pa_sim_int_scan_finish(m, s, &a, out, sc);
}

void pa_sim_int_scan_finish(const pa_sim_model *m, const pa_sim_state *s,
                            const pa_sim_scan_at *a, float *out,
                            pa_sim_scratch *sc) {
  pa_sim_int_scan_finish_part(m, s, a, out, sc, 0, UINT32_MAX);
}

/* The farthest return of out[b0, b1) (0 if none), and smax from a copy of
 * out with the beams outside [b0, b1) at infinity: no window that reaches
 * them is hidden (their returns are not known yet). */
static float part_max(const float *out, uint32_t n, uint32_t b0, uint32_t b1,
                      float *tmp, float *smax, uint32_t stride) {
  for (uint32_t i = 0; i < b0; i++)
    tmp[i] = INFINITY;
  memcpy(tmp + b0, out + b0, (b1 - b0) * sizeof *tmp);
  for (uint32_t i = b1; i < n; i++)
    tmp[i] = INFINITY;
  sector_max(tmp, n, smax, stride);
  return max_of(out + b0, b1 - b0);
}

void pa_sim_int_scan_finish_part(const pa_sim_model *m, const pa_sim_state *s,
                                 const pa_sim_scan_at *a, float *out,
                                 pa_sim_scratch *sc, uint32_t b0, uint32_t b1) {
  const uint32_t id = a->id;
  const pa_robot_info *ri = &s->info[id];
  uint64_t *rng = &s->rs[id].rng; /* the robot's own: no other scan uses it */
  uint32_t beams = a->beams;
  b1 = b1 > beams ? beams : b1;
  if (b0 >= b1)
    return;
  const bool whole = b0 == 0 && b1 == beams;
  double rmax = ri->laser_range_max, rmin = ri->laser_range_min;
  double sigma = ri->laser_noise;
  bool others = s->robot_count > 1 && !s->ghosts; /* robots in its scan */
  double bx, by, br; /* the SSL ball where it crosses the beam plane */
  bool ball = pa_sim_ssl_laser_ball(s, &bx, &by, &br);
  bool bodies = s->obstacle_count > 0 || others || ball;
  if (!bodies && sigma == 0)
    return; /* the walls clamped already; nothing else to do */
  const double inc = 2.0 * M_PI / beams;
  scan_ctx k = {.x = a->x,
                .y = a->y,
                .c = a->c,
                .s = a->s,
                .theta = a->theta,
                .inc = inc,
                .inv_inc = 1.0 / inc,
                .beams = beams,
                .b0 = b0,
                .b1 = b1,
                .range_max = rmax,
                .bc = sc->beam_cos,
                .bs = sc->beam_sin,
                .out = out,
                .far = rmax,
                .qpos = sc->qpos,
                .smax = sc->smax,
                .stride = beam_stride(m)};
#ifdef WIDE_DIRS
  k.wide = wide_path(m);
#endif
  float far = 0; /* the farthest wall return */
  if (bodies) {
    /* Beam directions (only bodies use them) and the returns' max per 4
     * beams (hidden()) and overall. */
    beam_table(sc, beams);
    far = whole ? sector_max(out, beams, sc->smax, k.stride)
                : part_max(out, beams, b0, b1, sc->part, sc->smax, k.stride);
  }
  /* Obstacles and other robots: only the beams their bounds subtend, and
   * only bodies nearer than the farthest wall return (+ rounding slack). */
  k.far = (double)far + 1e-6;
  for (uint32_t i = 0; i < s->obstacle_count; i++) {
    const pa_obstacle_info *o = &s->obs[i];
    if (!o->active)
      continue;
    if (o->shape == PA_SHAPE_CIRCLE)
      scan_circle(&k, o->x, o->y, o->radius);
    else
      scan_box(&k, o);
  }
  if (ball)
    scan_circle(&k, bx, by, br);
  const pa_sim_hash *h = a->lh; /* a batch's own, built when posted */
  if (!h) {
    if (others)
      pa_sim_int_lhash_ready(s); /* planned this tick: built by the first */
    h = &s->lhash;
  }
  batch b;
  uint32_t bn = 0; /* robots in b */
  /* + the largest robot radius (bucketed by centre) */
  int64_t span = h->valid ? pa_sim_iceil((rmax + h->rmax) / h->cell) : 0;
  if (!others) {
  } else if (h->valid && (h->pinned || (2 * span + 1) * (2 * span + 1) <
                                           (int64_t)s->robot_count)) {
    int64_t cx = pa_sim_ifloor(a->x / h->cell);
    int64_t cy = pa_sim_ifloor(a->y / h->cell);
    /* Only buckets that can hold a centre within far + rmax (scan_circle
     * drops any body beyond far + its radius anyway). */
    int64_t fspan =
        pa_sim_iceil((k.far + h->rmax) / h->cell) + 1; /* +1: rounding */
    if (fspan < span)
      span = fspan;
    /* Per row only the buckets that meet the disc of radius far + rmax
     * around the sensor (+ slack for rounding): scan_circle drops the
     * centres beyond it anyway. */
    const double cell = h->cell, reach = k.far + h->rmax + 1e-6;
    /* Dense buckets: only the rows and columns that hold robots. */
    int64_t j0 = cy - span, j1 = cy + span;
    if (h->dense) {
      j0 = j0 < h->gy0 ? h->gy0 : j0;
      j1 = j1 > h->gy0 + h->gh - 1 ? h->gy0 + h->gh - 1 : j1;
    }
    /* Buckets can alias; a robot seen twice just intersects twice. */
    for (int64_t j = j0; j <= j1; j++) {
      double y0 = (double)j * cell, y1 = (double)(j + 1) * cell;
      double ry = a->y < y0 ? y0 - a->y : a->y > y1 ? a->y - y1 : 0;
      if (ry > reach)
        continue;
      double w = sqrt(reach * reach - ry * ry) + 1e-6;
      int64_t i0 = pa_sim_ifloor((a->x - w) / cell) - 1;
      int64_t i1 = pa_sim_ifloor((a->x + w) / cell) + 1;
      i0 = i0 < cx - span ? cx - span : i0;
      i1 = i1 > cx + span ? cx + span : i1;
      if (h->dense) { /* a row's buckets are one run */
        i0 = i0 < h->gx0 ? h->gx0 : i0;
        i1 = i1 > h->gx0 + h->gw - 1 ? h->gx0 + h->gw - 1 : i1;
        if (i0 > i1)
          continue;
        size_t row = (size_t)(j - h->gy0) * h->gw - (size_t)h->gx0;
        uint32_t p0 = h->start[row + (size_t)i0];
        uint32_t p1 = h->start[row + (size_t)i1 + 1];
        for (uint32_t p = p0; p < p1; p++)
          bn =
              push(&k, &b, bn, h->ix[p], h->iy[p], h->ir[p], h->items[p] != id);
        continue;
      }
      for (int64_t i = i0; i <= i1; i++) {
        uint32_t key = pa_sim_int_hash_key(h, i, j);
        for (uint32_t p = h->start[key]; p < h->start[key + 1]; p++)
          /* aliased bucket: its own cell visits it */
          bn = push(&k, &b, bn, h->ix[p], h->iy[p], h->ir[p],
                    h->icx[p] == i && h->icy[p] == j && h->items[p] != id);
      }
    }
  } else {
    for (uint32_t o = 0; o < s->robot_count; o++)
      bn = push(&k, &b, bn, s->rs[o].x, s->rs[o].y, s->info[o].radius,
                o != id && s->info[o].active);
  }
  b.n = bn;
  flush(&k, &b);
  /* Clamp and noise: only returns get noise; no return stays range_max. */
  if (sigma == 0) {
    /* The same in float (both limits are floats), without a branch. */
    clamp_ranges(out + b0, b1 - b0, ri->laser_range_min, ri->laser_range_max);
    return;
  }
  /* noise draws from the robot's generator in beam order: whole scans only
   * (callers split only scans without noise) */
  for (uint32_t i = b0; i < b1; i++) {
    double v = out[i];
    if (v >= rmax) {
      out[i] = (float)rmax;
      continue;
    }
    if (sigma > 0)
      v += sigma * pa_sim_rng_normal(rng);
    if (v < rmin)
      v = rmin;
    if (v > rmax)
      v = rmax;
    out[i] = (float)v;
  }
}
