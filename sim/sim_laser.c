/* sim_laser.c - the laser scan: wall beams on the casters, then
 * obstacles, other robots, clamping and noise; per-thread scratch. */
#define _GNU_SOURCE
#include "sim_geom_int.h"
#include "sim_ssl_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_CHUNK CAST_CHUNK /* beams cast together */

typedef struct scan_ctx {
  double x, y, c, s; /* sensor pose */
  double theta;      /* [rad] */
  double inc;        /* [rad] */
  double inv_inc;    /* 1 / inc */
  uint32_t beams;
  double range_max;
  const double *dx, *dy; /* world beam directions */
  float *out;
  double far; /* no body beyond this can change out[] */
} scan_ctx;

/* Beam index of an unwrapped window position (windows span < 3 turns). */
static inline uint32_t wrap_beam(int64_t q, int64_t n) {
  while (q < 0)
    q += n;
  while (q >= n)
    q -= n;
  return (uint32_t)q;
}

/* atan2 to within 2e-6 rad (a polynomial: this runs once per body per scan;
 * beam windows get a margin that covers the error). */
static inline double fast_atan2(double y, double x) {
  double ax = fabs(x), ay = fabs(y);
  double mn = ax < ay ? ax : ay, mx = ax < ay ? ay : ax;
  double a = mx > 0 ? mn / mx : 0, q = a * a;
  double r =
      a * (0.99997726 +
           q * (-0.33262347 +
                q * (0.19354346 +
                     q * (-0.11643287 + q * (0.05265332 + q * -0.01172120)))));
  if (ay > ax)
    r = M_PI_2 - r;
  if (x < 0)
    r = M_PI - r;
  return y < 0 ? -r : r;
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
  int64_t n = (int64_t)k->beams;
  for (int64_t q = k0; q <= k1; q++)
    if ((double)k->out[wrap_beam(q, n)] > near)
      return false;
  return true;
}

static void scan_circle(const scan_ctx *k, double cx, double cy, double r) {
  double ex = cx - k->x, ey = cy - k->y;
  double lim = k->far + r, d2 = ex * ex + ey * ey;
  if (d2 >= lim * lim)
    return;
  int64_t k0, k1;
  double d = sqrt(d2);
  shape_window(k, ex, ey, d, r, &k0, &k1);
  if (occluded(k, d, r, k0, k1))
    return;
  int64_t n = (int64_t)k->beams;
  for (int64_t q = k0; q <= k1; q++) {
    uint32_t i = wrap_beam(q, n);
    double t = ray_circle(k->x, k->y, k->dx[i], k->dy[i], cx, cy, r);
    if (t < (double)k->out[i])
      k->out[i] = (float)t;
  }
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
    double t = ray_box(k->x, k->y, k->dx[i], k->dy[i], o, c, s);
    if (t < (double)k->out[i])
      k->out[i] = (float)t;
  }
}

int pa_sim_int_scratch_init(pa_sim_scratch *k, uint32_t beam_cap) {
  memset(k, 0, sizeof *k);
  size_t n = beam_cap ? beam_cap : 1;
  k->beam_cos = calloc(n, sizeof(float));
  k->beam_sin = calloc(n, sizeof(float));
  k->dx = calloc(n, sizeof(double));
  k->dy = calloc(n, sizeof(double));
  if (!k->beam_cos || !k->beam_sin || !k->dx || !k->dy) {
    pa_sim_int_scratch_free(k);
    return -1;
  }
  return 0;
}

void pa_sim_int_scratch_free(pa_sim_scratch *k) {
  free(k->beam_cos);
  free(k->beam_sin);
  free(k->dx);
  free(k->dy);
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
  sc->beam_table_n = beams;
}

typedef float v4f __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));

/* dx[i] = c * bc[i] - s * bs[i], dy[i] = s * bc[i] + c * bs[i] for i < n:
 * four beams at a time (the same operations on each, so the same bits). */
static void beam_dirs(double c, double s, const float *bc, const float *bs,
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

typedef int32_t v4i __attribute__((vector_size(16)));
typedef int64_t v4l __attribute__((vector_size(32)));

/* out[q] = t[q] >= maxc ? rmax : (float)(t[q] * res), raised to lo: four
 * beams at a time (the same operations and roundings as one by one; rmax
 * is a float's value, so choosing before the conversion is the same). */
static void cells_to_ranges(const double *t, uint32_t n, double maxc,
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
  for (uint32_t i0 = b0; i0 < b1; i0 += SCAN_CHUNK) {
    uint32_t nb = b1 - i0 < SCAN_CHUNK ? b1 - i0 : SCAN_CHUNK;
    double bdx[SCAN_CHUNK], bdy[SCAN_CHUNK], bt[SCAN_CHUNK];
    beam_dirs(gc, gs, bc + i0, bs + i0, nb, bdx, bdy);
    pa_sim_int_cast_many(m, a->gx, a->gy, bdx, bdy, nb, maxc, bt);
    cells_to_ranges(bt, nb, maxc, res, rmax, lo, out + i0);
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
  const uint32_t id = a->id;
  const pa_robot_info *ri = &s->info[id];
  uint64_t *rng = &s->rs[id].rng; /* the robot's own: no other scan uses it */
  uint32_t beams = a->beams;
  double rmax = ri->laser_range_max, rmin = ri->laser_range_min;
  double sigma = ri->laser_noise;
  bool others = s->robot_count > 1 && !s->ghosts; /* robots in its scan */
  double bx, by, br; /* the SSL ball where it crosses the beam plane */
  bool ball = pa_sim_ssl_laser_ball(s, &bx, &by, &br);
  bool bodies = s->obstacle_count > 0 || others || ball;
  if (!bodies && sigma == 0)
    return; /* the walls clamped already; nothing else to do */
  const double inc = 2.0 * M_PI / beams;
  scan_ctx k = {a->x,  a->y, a->c,   a->s,   a->theta, inc, 1.0 / inc,
                beams, rmax, sc->dx, sc->dy, out,      rmax};
  float far = 0; /* the farthest wall return */
  if (bodies) {
    /* World beam directions: only bodies (obstacles, robots) use them. */
    beam_table(sc, beams);
    const float *bc = sc->beam_cos, *bs = sc->beam_sin;
    beam_dirs(k.c, k.s, bc, bs, beams, sc->dx, sc->dy);
    /* Four chains: a single one waits on each comparison. */
    float fm[4] = {0, 0, 0, 0};
    uint32_t i4 = beams & ~3u;
    for (uint32_t i = 0; i < i4; i += 4)
      for (int j = 0; j < 4; j++)
        fm[j] = out[i + j] > fm[j] ? out[i + j] : fm[j];
    for (uint32_t i = i4; i < beams; i++)
      fm[0] = out[i] > fm[0] ? out[i] : fm[0];
    for (int j = 0; j < 4; j++)
      far = fm[j] > far ? fm[j] : far;
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
  const pa_sim_hash *h = &s->lhash;
  /* + the largest robot radius (bucketed by centre) */
  int64_t span = h->valid ? pa_sim_iceil((rmax + h->rmax) / h->cell) : 0;
  if (!others) {
  } else if (h->valid &&
             (2 * span + 1) * (2 * span + 1) < (int64_t)s->robot_count) {
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
    /* Buckets can alias; a robot seen twice just intersects twice. */
    for (int64_t j = cy - span; j <= cy + span; j++) {
      double y0 = (double)j * cell, y1 = (double)(j + 1) * cell;
      double ry = a->y < y0 ? y0 - a->y : a->y > y1 ? a->y - y1 : 0;
      if (ry > reach)
        continue;
      double w = sqrt(reach * reach - ry * ry) + 1e-6;
      int64_t i0 = pa_sim_ifloor((a->x - w) / cell) - 1;
      int64_t i1 = pa_sim_ifloor((a->x + w) / cell) + 1;
      i0 = i0 < cx - span ? cx - span : i0;
      i1 = i1 > cx + span ? cx + span : i1;
      for (int64_t i = i0; i <= i1; i++) {
        uint32_t key = pa_sim_int_hash_key(h, i, j);
        for (uint32_t p = h->start[key]; p < h->start[key + 1]; p++) {
          /* aliased bucket: its own cell visits it */
          if (h->icx[p] != i || h->icy[p] != j || h->items[p] == id)
            continue;
          scan_circle(&k, h->ix[p], h->iy[p], h->ir[p]);
        }
      }
    }
  } else {
    for (uint32_t o = 0; o < s->robot_count; o++)
      if (o != id && s->info[o].active)
        scan_circle(&k, s->rs[o].x, s->rs[o].y, s->info[o].radius);
  }
  /* Clamp and noise: only returns get noise; no return stays range_max. */
  if (sigma == 0) {
    /* The same in float (both limits are floats), without a branch. */
    clamp_ranges(out, beams, ri->laser_range_min, ri->laser_range_max);
    return;
  }
  for (uint32_t i = 0; i < beams; i++) {
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
