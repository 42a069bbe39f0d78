/* sim_step.c - one tick (limits, kinematics, collisions, odometry, sensors);
 * the commands that change the state between ticks are in sim_cmd.c. */
#include "pa_sim.h"
#include "sim_heading.h"
#include "sim_int.h"
#include "sim_ssl_int.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- limits --------------------------------------------------------------- */

static double clampd(double v, double lim) {
  return v > lim ? lim : v < -lim ? -lim : v;
}

/* Moves cur towards target: acc while |v| grows, dec while it shrinks
 * (through zero: brake first, then speed up with what is left of dt). */
static inline double approach(double cur, double target, double acc, double dec,
                              double dt) {
  /* At the target (most ticks): the sum the steps below end with (dv 0;
   * never so for infinities, whose difference is NaN). */
  double dv0 = target - cur;
  if (dv0 == 0)
    return cur + dv0;
  if (cur * target < 0) {
    double brake = dec * dt;
    if (fabs(cur) > brake)
      return cur > 0 ? cur - brake : cur + brake;
    double rest = dt - fabs(cur) / dec;
    double up = acc * rest;
    return target > 0 ? (target < up ? target : up)
                      : (target > -up ? target : -up);
  }
  double rate = fabs(target) > fabs(cur) ? acc : dec;
  double step = rate * dt;
  double dv = target - cur;
  if (dv > step)
    dv = step;
  else if (dv < -step)
    dv = -step;
  return cur + dv;
}

/* ---- collisions ----------------------------------------------------------- */

#define SMALL_WORLD 8 /* robots up to this: no broad phase */

static bool free_at(const pa_sim_model *m, pa_sim_state *s, uint32_t id,
                    double x, double y, const pa_sim_near *nb, bool pressed) {
  /* pa_sim_int_move_free's first test without the call: no robot near, no
   * obstacle, and the walls known clear by more than the radius here */
  const pa_sim_wall_cache *wc = &s->motion[id].faces;
  if (!nb && s->obstacle_count == 0 && wc->cmap == m->blocked) {
    double ex = x - wc->cx, ey = y - wc->cy,
           left = wc->clear - s->info[id].radius;
    if (left > 0 && ex * ex + ey * ey < left * left)
      return true;
  }
  return pa_sim_int_move_free(m, s, id, x, y, s->info[id].radius, nb,
                              &s->motion[id].walls, &s->motion[id].faces,
                              pressed);
}

/* Whether the robot of strip entry p (not robot id) overlaps a disc of
 * radius r at (x, y) by more than any rounding: near_robots' own distance
 * to it, 1e-9 m below r. pa_sim_int_move_free (with nb's windows, which
 * hold p) then answers not free: its smallest distance is at most that. */
static inline bool entry_within(const pa_sim_state *s, const pa_sim_strips *st,
                                uint32_t p, double x, double y, double r) {
  uint32_t j = st->e[p].id;
  double ex = x - s->rs[j].x, ey = y - s->rs[j].y;
  return sqrt(ex * ex + ey * ey) - st->e[p].r < r - 1e-9;
}

/* An entry of nb's windows (not robot id) that overlaps the disc at (x, y)
 * as entry_within says, or -1. */
static int64_t find_blocker(const pa_sim_state *s, const pa_sim_near *nb,
                            uint32_t id, double x, double y, double r) {
  const pa_sim_strips *st = nb->st;
  for (uint32_t k = 0; k < nb->parts; k++)
    for (uint32_t p = nb->lo[k]; p < nb->hi[k]; p++)
      if (st->e[p].id != id && entry_within(s, st, p, x, y, r))
        return p;
  return -1;
}

/* Largest f in [0, 1] with the robot free at p + f * d (p itself free).
 * A robot jammed among others tests one point after another that the same
 * neighbour blocks: that neighbour, once found, is asked first (the
 * answer free_at would give, without the walls' and the others' look).
 * A blocked point with no such neighbour is blocked by the walls, which
 * likely block the rest too (pressed: free_at asks their nearest face
 * first): no more search then. */
static double bisect_free(const pa_sim_model *m, pa_sim_state *s, uint32_t id,
                          double x, double y, double dx, double dy,
                          const pa_sim_near *nb) {
  bool look = nb && !nb->all && !s->ghosts; /* for a blocking neighbour */
  const double r = s->info[id].radius;
  int64_t hint = -1;
  double lo = 0, hi = 1;
  for (int it = 0; it < 12; it++) {
    double mid = 0.5 * (lo + hi);
    double px = x + mid * dx, py = y + mid * dy;
    if (hint >= 0 && entry_within(s, nb->st, (uint32_t)hint, px, py, r)) {
      hi = mid;
      continue;
    }
    if (free_at(m, s, id, px, py, nb, true)) {
      lo = mid;
    } else {
      hi = mid;
      if (look) { /* none found: a wall, likely for the rest (no more) */
        hint = find_blocker(s, nb, id, px, py, r);
        look = hint >= 0;
      }
    }
  }
  return lo;
}

/* Moves robot id by (dx, dy) as far as it can: sub-steps no longer than a
 * quarter radius (no tunnelling). A blocked sub-step keeps its part along
 * the contact tangent and approaches the contact only up to the current gap
 * (one check for a flat wall); if that is still blocked (corners, several
 * bodies), it bisects to the contact and slides what is left. Returns true
 * if the motion was limited. */
static bool move_disc(const pa_sim_model *m, pa_sim_state *s, uint32_t id,
                      double dx, double dy, const pa_sim_near *nb) {
  pa_robot_state *r = &s->rs[id];
  const double rad = s->info[id].radius;
  double len2 = dx * dx + dy * dy, len = 0;
  if (len2 == 0)
    return false;
  /* A move within a quarter radius (nearly every tick) is one sub-step:
   * the same n and the same sx, sy as the general form, without its
   * divisions (and its length's square root only when it is needed: well
   * within, len <= 0.25 rad whatever the roundings). */
  int n = 1;
  double sx = dx, sy = dy, q = 0.25 * rad;
  bool short_move = len2 < 0.999 * (q * q);
  if (!short_move)
    len = sqrt(len2);
  if (!short_move && !(len <= q)) {
    n = (int)ceil(len / (0.25 * rad));
    if (n < 1)
      n = 1;
    if (n > 256)
      n = 256;
    sx = dx / n;
    sy = dy / n;
  }
  /* pressing a wall last tick: likely still (the slides and the second
   * tests below mostly find the point free) */
  const bool pressed = (r->flags & PA_RS_BUMPED) != 0;
  bool bumped = false;
  for (int k = 0; k < n; k++) {
    if (free_at(m, s, id, r->x + sx, r->y + sy, nb, pressed)) {
      r->x += sx;
      r->y += sy;
      continue;
    }
    bumped = true;
    if (short_move)
      len = sqrt(len2);
    double nx = 0, ny = 0;
    double gap =
        pa_sim_int_move_clearance(m, s, id, r->x, r->y, rad, len, &nx, &ny, nb,
                                  &s->motion[id].walls, &s->motion[id].faces);
    if (gap < 0)
      gap = 0;
    double into = -(sx * nx + sy * ny);
    if (into > 0) {
      double keep = into < gap ? into : gap;
      double tx = sx + into * nx - keep * nx, ty = sy + into * ny - keep * ny;
      if (free_at(m, s, id, r->x + tx, r->y + ty, nb, false)) {
        r->x += tx;
        r->y += ty;
        continue;
      }
    }
    double f = bisect_free(m, s, id, r->x, r->y, sx, sy, nb);
    r->x += f * sx;
    r->y += f * sy;
    double rx = (1 - f) * sx, ry = (1 - f) * sy;
    pa_sim_int_move_clearance(m, s, id, r->x + rx, r->y + ry, rad, 0, &nx, &ny,
                              nb, &s->motion[id].walls, &s->motion[id].faces);
    double in2 = rx * nx + ry * ny;
    if (in2 < 0) {
      rx -= in2 * nx;
      ry -= in2 * ny;
    }
    if (free_at(m, s, id, r->x + rx, r->y + ry, nb, false)) {
      r->x += rx;
      r->y += ry;
    } else {
      double g = bisect_free(m, s, id, r->x, r->y, rx, ry, nb);
      r->x += g * rx;
      r->y += g * ry;
    }
  }
  return bumped;
}

/* ---- one robot's tick ----------------------------------------------------- */

/* Limits, head and the wanted displacement: reads and writes only the
 * robot's own state, so every plan can be made before anyone moves. */
static inline __attribute__((always_inline)) void
robot_plan(const pa_sim_model *m, pa_sim_state *s, uint32_t id,
           pa_sim_motion *mv) {
  const pa_robot_info *ri = &s->info[id];
  pa_robot_state *r = &s->rs[id];
  if (ri->dynamics == PA_DYN_DYNAMIC) { /* forces, not velocities (sim_dyn.c) */
    pa_sim_int_dyn_plan(m, s, id, mv);
    return;
  }
  const double dt = m->dt;
  const double th0 = r->theta;
  if (!mv->sc_ok || th0 != mv->sc_theta) {
    mv->sc_theta = th0;
    pa_sim_int_heading_sincos(th0, &mv->sc_c, &mv->sc_s);
    mv->sc_ok = true;
  }
  const double c0 = mv->sc_c, s0 = mv->sc_s;

  /* Targets in the robot frame, clamped to the velocity limits. */
  double tvx = r->cmd_v, tvy = 0, tw = r->cmd_w;
  if (ri->drive == PA_DRIVE_OMNI) {
    tvy = r->cmd_vy;
    if (r->cmd_frame == PA_FRAME_WORLD) {
      tvx = c0 * r->cmd_v + s0 * r->cmd_vy;
      tvy = -s0 * r->cmd_v + c0 * r->cmd_vy;
    }
  }
  tvx = clampd(tvx, ri->max_v);
  tvy = ri->drive == PA_DRIVE_OMNI ? clampd(tvy, ri->max_vy) : 0;
  tw = clampd(tw, ri->max_w);
  /* Acceleration and braking limits from the last achieved velocities. */
  double v = approach(r->v, tvx, ri->acc_v, ri->dec_v, dt);
  double vy =
      ri->drive == PA_DRIVE_OMNI
          ? approach(r->vy, tvy, ri->acc_vy > 0 ? ri->acc_vy : ri->acc_v,
                     ri->dec_v, dt)
          : 0;
  double w = approach(r->w, tw, ri->acc_w, ri->dec_w, dt);
  /* Head: rate limit, then angle limit; achieved rate from the angle. */
  double hr = clampd(r->cmd_head, ri->max_head_rate);
  double head = clampd(r->head + hr * dt, ri->head_limit);
  r->head_rate = (head - r->head) / dt;
  r->head = head;

  /* Exact integration of a constant body twist over dt. */
  double dth = w * dt, a, b;
  if (ri->drive == PA_DRIVE_OMNI && r->cmd_frame == PA_FRAME_WORLD) {
    a = 1; /* world-frame velocity: a straight line while turning */
    b = 0;
  } else if (fabs(dth) < 1e-6) {
    a = 1 - dth * dth / 6;
    b = 0.5 * dth;
  } else if (dth == mv->arc_dth) { /* turning as last tick: the same arc */
    a = mv->arc_a;
    b = mv->arc_b;
  } else {
    a = sin(dth) / dth;
    b = (1 - cos(dth)) / dth;
    mv->arc_dth = dth;
    mv->arc_a = a;
    mv->arc_b = b;
  }
  double bx = (v * a - vy * b) * dt, by = (v * b + vy * a) * dt;
  mv->dx = c0 * bx - s0 * by;
  mv->dy = s0 * bx + c0 * by;
  mv->v = v;
  mv->vy = vy;
  mv->w = w;
  mv->th0 = th0;
  mv->dth = dth;
  mv->c0 = c0;
  mv->s0 = s0;
}

/* Odometry without error ratios: the achieved pose (robot_move's
 * odom_exact, asked once a strip instead of once a robot). */
static inline bool odom_exact(const pa_sim_model *m) {
  const double *e = m->def.odom_error;
  return e[0] == 0 && e[1] == 0 && e[2] == 0;
}

/* GCC pairs robot_move's loads of two doubles just stored one by one (its
 * plan's dx, dy; the pose move_disc wrote, for the odometry) into one
 * 16-byte load, which cannot take them from the stores still in flight
 * and waits until they reach the cache: 6-8 % of the physics. */
#if defined(__GNUC__) && !defined(__clang__)
#define NO_PAIR_LOADS __attribute__((optimize("no-tree-slp-vectorize")))
#else
#define NO_PAIR_LOADS
#endif

/* The planned motion against the world (nb: the other robots that may
 * matter; NULL: none is near enough), then velocities and odometry
 * (odom_exact: odom_exact(m)). Returns bumped. */
static NO_PAIR_LOADS bool robot_move(const pa_sim_model *m, pa_sim_state *s,
                                     uint32_t id, const pa_sim_motion *mv,
                                     const pa_sim_near *nb, bool odom_exact) {
  const pa_robot_info *ri = &s->info[id];
  pa_robot_state *r = &s->rs[id];
  const double dt = m->dt;
  const double th0 = mv->th0, dth = mv->dth;
  const double c0 = mv->c0, s0 = mv->s0; /* cos, sin of th0 */

  double x0 = r->x, y0 = r->y;
  bool bumped = move_disc(m, s, id, mv->dx, mv->dy, nb);
  double ax = r->x - x0, ay = r->y - y0;
  double th1 = th0 + dth; /* pa_sim_wrap's own test first: no call */
  r->theta = th1 >= -M_PI && th1 <= M_PI ? th1 : pa_sim_wrap(th1);
  r->w = mv->w;
  if (bumped) {
    /* Report what it really did: achieved displacement in the mid frame. */
    double cm, sm;
    pa_sim_int_heading_sincos(th0 + 0.5 * dth, &cm, &sm);
    r->v = (cm * ax + sm * ay) / dt;
    r->vy = (-sm * ax + cm * ay) / dt;
    r->flags |= PA_RS_BUMPED;
  } else {
    r->v = mv->v;
    r->vy = mv->vy;
    r->flags &= ~(uint32_t)PA_RS_BUMPED;
  }

  /* Odometry: the achieved motion, optionally scaled by the robot's
   * constant per-axis error ratios (Stage-like). */
  const double *e = m->def.odom_error;
  if (odom_exact) {
    r->odom_x = r->x;
    r->odom_y = r->y;
    r->odom_theta = r->theta;
  } else {
    uint64_t g = pa_sim_int_seed(m->def.seed ^ 0x6f646f6dull, id, ri->gen);
    double ex = e[0] * (2 * pa_sim_rng_uniform(&g) - 1);
    double ey = e[1] * (2 * pa_sim_rng_uniform(&g) - 1);
    double et = e[2] * (2 * pa_sim_rng_uniform(&g) - 1);
    double lbx = (c0 * ax + s0 * ay) * (1 + ex);
    double lby = (-s0 * ax + c0 * ay) * (1 + ey);
    double co = cos(r->odom_theta), so = sin(r->odom_theta);
    r->odom_x += co * lbx - so * lby;
    r->odom_y += so * lbx + co * lby;
    r->odom_theta = pa_sim_wrap(r->odom_theta + dth * (1 + et));
  }
  return bumped;
}

/* ---- the moves, partitioned by space ------------------------------------ */

int pa_sim_int_strips_init(pa_sim_strips *st, uint32_t cap) {
  memset(st, 0, sizeof *st);
  size_t n = cap ? cap : 1;
  st->e = calloc(n, sizeof *st->e);
  st->by = calloc(n, sizeof *st->by);
  st->order = calloc(n, sizeof *st->order);
  st->ys = calloc(n + PA_SIM_STRIPS, sizeof *st->ys);
  return st->e && st->by && st->order && st->ys ? 0 : -1;
}

void pa_sim_int_strips_free(pa_sim_strips *st) {
  free(st->e);
  free(st->by);
  free(st->order);
  free(st->ys);
  memset(st, 0, sizeof *st);
}

/* The moves of a tick as pool items (or run in item order on one thread:
 * the same result, see pa_sim_int_step): item 0 sorts the robots into
 * strips; 1..S order strip i by start y; then the even strips move, then
 * the odd ones. A strip moves its robots in its order, each against the
 * robots of its own and the neighbouring strips: an even strip while the odd
 * ones stand still, an odd one after both its even neighbours have moved.
 * Strips two apart are more than a reach apart, so they cannot change each
 * other's moves: any number of threads gives the same result. Each robot is
 * planned just before it moves: a plan reads and writes only the robot's own
 * state, which no other robot's move reads or writes, so it is the plan any
 * order gives, and the robot's lines are read once a tick instead of twice
 * (once in id order for the plans, once in strip order for the moves). */
typedef struct move_job {
  const pa_sim_model *m;
  pa_sim_state *s;
  pa_sim_strips *st;
  uint32_t pooled;                  /* moves run on the pool */
  atomic_uint sorted;               /* item 0 is done */
  atomic_uint ready[PA_SIM_STRIPS]; /* strip k is in its order */
  atomic_uint moved[PA_SIM_STRIPS]; /* strip k has moved */
} move_job;

/* Waits for a flag that an item taken before this one sets (the pool hands
 * items out in order: whoever took it is running it). */
static void move_wait(atomic_uint *flag) {
  pa_sim_waiter w = {0, 0};
  while (!atomic_load_explicit(flag, memory_order_acquire))
    pa_sim_int_wait_step(&w);
}

static bool ent_before(const pa_sim_strip_ent *a, const pa_sim_strip_ent *b) {
  return a->y < b->y || (a->y == b->y && a->id < b->id);
}

static int ent_cmp(const void *pa, const void *pb) {
  const pa_sim_strip_ent *a = pa, *b = pb;
  return ent_before(a, b) ? -1 : ent_before(b, a) ? 1 : 0;
}

/* Robot i's entry into its strip's next place. */
static void strip_put(pa_sim_strips *st, uint32_t *fill, uint32_t i) {
  pa_sim_strip_ent *b = &st->by[i], *e = &st->e[fill[b->id]++];
  *e = *b; /* read before b->seen is written: a load over a store still in
            * flight waits for it (no forwarding) */
  e->id = i;
  e->seen = 1;
  b->seen = 1;
}

/* The robots into strips (a counting sort), each strip in the last tick's
 * order, then the robots new to the strips in id order: nearly sorted for
 * strip_order (whose result does not depend on the input order). */
static void strips_sort(const pa_sim_state *s, pa_sim_strips *st) {
  uint32_t *start = st->start, n = st->count;
  memset(start, 0, sizeof st->start);
  double inv = 1.0 / st->w;
  for (uint32_t i = 0; i < s->robot_count; i++) {
    pa_sim_strip_ent *b = &st->by[i];
    if (b->r < 0)
      continue;
    uint32_t k = (uint32_t)((b->x - st->x0) * inv);
    k = k < n ? k : n - 1;
    b->id = k; /* its strip, until the entry is copied */
    start[k + 1]++;
  }
  for (uint32_t k = 0; k < n; k++)
    start[k + 1] += start[k];
  uint32_t fill[PA_SIM_STRIPS];
  memcpy(fill, start, sizeof fill);
  uint32_t placed = 0;
  for (uint32_t p = 0; p < st->last; p++) {
    uint32_t i = st->order[p];
    if (i < s->robot_count && st->by[i].r >= 0 && !st->by[i].seen) {
      strip_put(st, fill, i);
      placed++;
    }
  }
  if (placed == start[n]) /* every robot was in the last tick's order */
    return;
  for (uint32_t i = 0; i < s->robot_count; i++)
    if (st->by[i].r >= 0 && !st->by[i].seen)
      strip_put(st, fill, i);
}

/* Strip k by (y, id) (a total order: the same result from any input order
 * and either sort). */
static void strip_sort(pa_sim_strips *st, uint32_t k) {
  pa_sim_strip_ent *e = st->e + st->start[k];
  uint32_t n = st->start[k + 1] - st->start[k];
  /* insertion (nearly sorted: the last tick's order), qsort past 8 moves a
   * robot (a new world, teleports) */
  uint64_t moves = 0, most = 8ull * n + 64;
  for (uint32_t i = 1; i < n; i++) {
    pa_sim_strip_ent t = e[i];
    uint32_t j = i;
    for (; j > 0 && ent_before(&t, &e[j - 1]); j--)
      e[j] = e[j - 1];
    e[j] = t;
    moves += i - j;
    if (moves > most) {
      qsort(e, n, sizeof *e, ent_cmp);
      return;
    }
  }
}

/* Strip k's ys after its sentinel-ended copy (see pa_sim_strips). */
static void strip_ys(pa_sim_strips *st, uint32_t k) {
  const pa_sim_strip_ent *e = st->e + st->start[k];
  uint32_t n = st->start[k + 1] - st->start[k];
  double *y = st->ys + st->start[k] + k;
  for (uint32_t i = 0; i < n; i++)
    y[i] = e[i].y;
  y[n] = INFINITY;
}

/* Strip k in its order, then its ys. */
static void strip_order(pa_sim_strips *st, uint32_t k) {
  strip_sort(st, k);
  strip_ys(st, k);
}

/* Window k of a mover at entry p (ys yk): [lo, hi) moved forward to the
 * entries within (ylo, yhi), mostly a step of 0 or 1 (the first one without
 * a branch); clears alone if one of them other than p starts within reach,
 * and adds a non-empty window to nb. */
static inline void strip_window(const pa_sim_strips *st, const double *yk,
                                uint32_t *lo, uint32_t *hi, uint32_t p,
                                double ylo, double yhi, double r2, bool *alone,
                                pa_sim_near *nb) {
  const pa_sim_strip_ent *e = &st->e[p];
  uint32_t a = *lo + (yk[*lo] <= ylo);
  while (yk[a] <= ylo)
    a++;
  uint32_t b = *hi > a ? *hi : a;
  b += yk[b] < yhi;
  while (yk[b] < yhi)
    b++;
  *lo = a;
  *hi = b;
  for (uint32_t t = a; t < b && *alone; t++) {
    double ex = st->e[t].x - e->x, ey = st->e[t].y - e->y;
    if (t != p && ex * ex + ey * ey < r2)
      *alone = false;
  }
  if (b > a) {
    nb->lo[nb->parts] = a;
    nb->hi[nb->parts++] = b;
  }
}

/* The robots of strip q in its order, each moved against the robots near
 * its start: those of strips q - 1 .. q + 1 within reach in y (windows that
 * only move forward, as the robots come in y order). Returns the bumps. */
static uint64_t strip_moves(move_job *j, uint32_t q) {
  const pa_sim_strips *st = j->st;
  const double reach = st->reach, r2 = reach * reach;
  const uint32_t k0 = q > 0 ? q - 1 : 0, k1 = q + 1 < st->count ? q + 1 : q;
  uint32_t lo[3], hi[3], nk = j->s->ghosts ? 0 : k1 - k0 + 1;
  for (uint32_t k = 0; k < nk; k++)
    lo[k] = hi[k] = st->start[k0 + k];
  const double *y0 = st->ys + k0, *y1 = y0 + 1, *y2 = y0 + 2; /* yk[p] */
  const bool exact = odom_exact(j->m);
  uint64_t bumps = 0;
  for (uint32_t p = st->start[q]; p < st->start[q + 1]; p++) {
    const pa_sim_strip_ent *e = &st->e[p];
    pa_sim_near nb = {.st = st, .parts = 0, .all = false};
    bool alone = true;
    const double ylo = e->y - reach, yhi = e->y + reach;
    if (nk == 3) { /* an inner strip: its three windows unrolled */
      strip_window(st, y0, &lo[0], &hi[0], p, ylo, yhi, r2, &alone, &nb);
      strip_window(st, y1, &lo[1], &hi[1], p, ylo, yhi, r2, &alone, &nb);
      strip_window(st, y2, &lo[2], &hi[2], p, ylo, yhi, r2, &alone, &nb);
    } else {
      for (uint32_t k = 0; k < nk; k++)
        strip_window(st, y0 + k, &lo[k], &hi[k], p, ylo, yhi, r2, &alone, &nb);
    }
    pa_sim_motion *mv = &j->s->motion[e->id];
    robot_plan(j->m, j->s, e->id, mv);
    mv->alone = alone;
    bumps += robot_move(j->m, j->s, e->id, mv, alone ? NULL : &nb, exact);
  }
  return bumps;
}

/* Pool item i of the moves (see move_job). count: bumps in the low 32
 * bits, robots moved on the pool in the high bits. */
static void move_item(void *arg, uint32_t i, pa_sim_scratch *k,
                      uint64_t *count) {
  move_job *j = arg;
  pa_sim_state *s = j->s;
  pa_sim_strips *st = j->st;
  const uint32_t n = st->count;
  (void)k;
  if (i == 0) {
    strips_sort(s, st);
    atomic_store_explicit(&j->sorted, 1, memory_order_release);
    return;
  }
  if (i <= n) {
    uint32_t q = i - 1;
    move_wait(&j->sorted);
    strip_order(st, q);
    atomic_store_explicit(&j->ready[q], 1, memory_order_release);
    return;
  }
  uint32_t t = i - n - 1, even = (n + 1) / 2;
  uint32_t q = t < even ? 2 * t : 2 * (t - even) + 1;
  if (q % 2 == 0) {
    for (uint32_t a = q > 0 ? q - 1 : 0; a <= q + 1 && a < n; a++)
      move_wait(&j->ready[a]);
  } else {
    move_wait(&j->moved[q - 1]);
    if (q + 1 < n)
      move_wait(&j->moved[q + 1]);
  }
  uint32_t moved = st->start[q + 1] - st->start[q];
  *count += strip_moves(j, q) + ((uint64_t)(j->pooled ? moved : 0) << 32);
  atomic_store_explicit(&j->moved[q], 1, memory_order_release);
}

/* The moves of a world of more than SMALL_WORLD robots (their strips set
 * up by the caller: by, x0, w, count, reach), on the pool when there is
 * one. */
static void moves_run(const pa_sim_model *m, pa_sim_state *s) {
  pa_sim_pool *pool = pa_sim_int_pool_between(s);
  move_job j = {.m = m, .s = s, .st = s->strips, .pooled = pool != NULL};
  atomic_init(&j.sorted, 0);
  for (uint32_t k = 0; k < PA_SIM_STRIPS; k++) {
    atomic_init(&j.ready[k], 0);
    atomic_init(&j.moved[k], 0);
  }
  uint32_t n = 1 + 2 * s->strips->count;
  uint64_t c = 0;
  if (pool)
    c = pa_sim_int_pool_run(pool, move_item, &j, n, 1);
  else
    for (uint32_t i = 0; i < n; i++)
      move_item(&j, i, NULL, &c);
  s->bumps += c & 0xffffffffu;
  s->alone_moves += c >> 32;
  pa_sim_strips *st = s->strips; /* this order is the next sort's input */
  st->last = st->start[st->count];
  for (uint32_t p = 0; p < st->last; p++)
    st->order[p] = st->e[p].id;
}

void pa_sim_step(const pa_sim_model *m, pa_sim_state *s) {
  pa_sim_int_step(m, s, pa_sim_int_now(), true);
}

/* ---- overlapped scans ----------------------------------------------------- */

int pa_sim_int_late_init(pa_sim_state *s, uint32_t beam_cap) {
  pa_sim_late *L = calloc(1, sizeof *L);
  if (!L)
    return -1;
  s->late = L;
  size_t n = beam_cap ? beam_cap : 1;
  for (int i = 0; i < PA_SIM_LATE_FLY; i++)
    if (!(L->fly[i].buf = calloc(n, sizeof(float))))
      return -1;
  for (int i = 0; i < PA_SIM_LATE_READY; i++)
    if (!(L->ready_buf[i] = calloc(n, sizeof(float))))
      return -1;
  /* The worker's part; it settles where the two threads finish together. */
  L->share = 0.7;
  for (int i = 0; i < 2; i++) {
    if (pa_sim_int_hash_init(&L->held[i], s->cap_robots) != 0)
      return -1;
    L->held[i].pinned = true;
  }
  return 0;
}

void pa_sim_int_late_free(pa_sim_state *s) {
  pa_sim_late *L = s->late;
  if (!L)
    return;
  for (int i = 0; i < 2; i++) {
    free(L->batch_id[i]);
    free(L->batch_buf[i]);
    free(L->batch_stamp[i]);
    pa_sim_int_hash_free(&L->held[i]);
  }
  for (int i = 0; i < PA_SIM_LATE_FLY; i++)
    free(L->fly[i].buf);
  for (int i = 0; i < PA_SIM_LATE_READY; i++)
    free(L->ready_buf[i]);
  free(L);
  s->late = NULL;
}

static bool late_cast(pa_sim_pool *p, const pa_sim_late_scan *f) {
  return pa_sim_int_pool_task_done(p, f->task_a) &&
         pa_sim_int_pool_task_done(p, f->task_b);
}

/* The oldest scan in flight, all its beams cast: bodies, clamping and
 * noise (in scan order: the noise generator's), then it is the robot's
 * latest scan and waits for its record. */
static void late_finish(const pa_sim_model *m, pa_sim_state *s) {
  pa_sim_late *L = s->late;
  pa_sim_late_scan *f = &L->fly[L->head];
  pa_sim_int_scan_finish(m, s, &f->at, f->buf,
                         pa_sim_int_pool_scratch(s->pool));
  size_t bytes = f->at.beams * sizeof(float);
  memcpy(s->ranges + (size_t)f->at.id * m->beam_cap, f->buf, bytes);
  if (L->ready_count < PA_SIM_LATE_READY) { /* at most FLY + 1 per tick */
    memcpy(L->ready_buf[L->ready_count], f->buf, bytes);
    L->ready[L->ready_count++] = f->stamp;
  }
  L->head = (L->head + 1) % PA_SIM_LATE_FLY;
  L->count--;
}

/* ---- overlapped scans of many robots -------------------------------------
 *
 * Running free or inside a STEP, with threads, a tick's due scans are cast
 * whole on the workers (one stream task each) while this thread runs the
 * next tick's moves. At the next tick's scans this thread posts that tick's
 * batch first, then settles the one before, taking what is left of it and,
 * while the worker ends its last one, scans of the new batch: neither core
 * stands by. A scan reads the robot's pose as the tick left it (its
 * pa_sim_scan_at copy), the other robots from its batch's own laser
 * buckets (built from the poses of its tick when it was posted), the
 * walls, and the robot's own noise generator, which the moves never touch:
 * the same ranges, bit for bit, as cast at once. Obstacles and the SSL
 * ball move during a tick (agents, kicks): worlds with them cast at once.
 * Commands and a STEP's reply settle every batch first
 * (pa_sim_scans_settle); a batch's records are written at the publish
 * after its settle, after the tick's own. */

pa_sim_pool *pa_sim_int_pool_between(const pa_sim_state *s) {
  return s->late && (s->late->batch_n[0] || s->late->batch_n[1]) ? NULL
                                                                 : s->pool;
}

static bool batch_ok(const pa_sim_state *s, uint32_t n) {
  return s->late && s->pool && s->defer_scans && !s->inline_scans &&
         s->robot_count > 1 && s->agent_count == 0 && !s->ssl && n > 0 &&
         n <= PA_SIM_POOL_TASKS / 2; /* two batches' tasks at most */
}

/* Room for n scans in each set (false: out of memory, cast at once). */
static bool batch_room(const pa_sim_model *m, pa_sim_late *L, uint32_t n) {
  if (n <= L->batch_cap)
    return true;
  uint32_t cap = n < 16 ? 16 : n;
  size_t beams = m->beam_cap ? m->beam_cap : 1;
  for (int i = 0; i < 2; i++) {
    uint32_t *id = realloc(L->batch_id[i], cap * sizeof *id);
    if (!id)
      return false;
    L->batch_id[i] = id;
    float *b = realloc(L->batch_buf[i], (size_t)cap * beams * sizeof *b);
    if (!b)
      return false;
    L->batch_buf[i] = b;
    pa_sim_scan_stamp *t = realloc(L->batch_stamp[i], cap * sizeof *t);
    if (!t)
      return false;
    L->batch_stamp[i] = t;
  }
  L->batch_cap = cap;
  return true;
}

/* The batch in flight in `set` done (wait: this thread takes what no
 * worker has, then scans of any later batch until the worker ends the
 * last of this one; else only if it is done already): its ranges are the
 * robots' latest scans and wait for their records. */
static bool batch_settle(const pa_sim_model *m, pa_sim_state *s, uint32_t set,
                         bool wait) {
  pa_sim_late *L = s->late;
  if (!L || !L->batch_n[set])
    return false;
  uint64_t last = L->batch_first[set] + L->batch_n[set] - 1;
  if (wait) {
    pa_sim_int_pool_help(s->pool, last);
    for (uint64_t t = L->batch_first[set]; t <= last; t++)
      pa_sim_int_pool_wait_busy(s->pool, t);
  } else {
    for (uint64_t t = L->batch_first[set]; t <= last; t++)
      if (!pa_sim_int_pool_task_done(s->pool, t))
        return false;
  }
  size_t beams = m->beam_cap ? m->beam_cap : 1;
  const float *buf = L->batch_buf[set];
  for (uint32_t k = 0; k < L->batch_n[set]; k++) {
    const pa_sim_scan_stamp *t = &L->batch_stamp[set][k];
    memcpy(s->ranges + (size_t)L->batch_id[set][k] * m->beam_cap,
           buf + k * beams, t->beams * sizeof(float));
  }
  L->bready_n = L->batch_n[set];
  L->bready_set = set;
  L->batch_n[set] = 0;
  return true;
}

/* The batch in flight, if any (none is left unless !wait). batch_post
 * settles the one before a new one at once: at most one is in flight
 * anywhere else (and so one batch's records wait for the publish). */
static void batches_settle(const pa_sim_model *m, pa_sim_state *s, bool wait) {
  if (s->late)
    batch_settle(m, s, s->late->batch_set, wait);
}

/* The due scans s->scan_due[0, n) as a batch into the set that is not in
 * flight (its records were written at the last publish), with its own
 * laser buckets from the robots' poses now (however few they are: the
 * scans must not read the robots' records; none for ghost robots). Then
 * the batch before it is settled. */
static bool batch_post(const pa_sim_model *m, pa_sim_state *s, double lcell) {
  pa_sim_late *L = s->late;
  uint32_t n = s->scan_due_count, set = L->batch_set ^ 1u;
  if (!batch_room(m, L, n))
    return false;
  pa_sim_hash *h = &L->held[set];
  if (s->ghosts)
    h->valid = false; /* no scan sees the other robots: none to build */
  else
    pa_sim_int_lhash_build(h, s, lcell);
  size_t beams = m->beam_cap ? m->beam_cap : 1;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t id = s->scan_due[k];
    pa_sim_scan_at at;
    pa_sim_int_scan_at(m, s, id, &at);
    at.lh = h;
    pa_sim_int_scan_stamp(m, s, id, &L->batch_stamp[set][k]);
    L->batch_id[set][k] = id;
    uint64_t t = pa_sim_int_pool_task_scan(s->pool, m, s, &at,
                                           L->batch_buf[set] + k * beams);
    if (k == 0)
      L->batch_first[set] = t;
  }
  L->batch_n[set] = n;
  L->batch_set = set;
  s->late_scans += n;
  batch_settle(m, s, set ^ 1u, true);
  return true;
}

bool pa_sim_scans_settle(const pa_sim_model *m, pa_sim_state *s, bool wait) {
  pa_sim_late *L = s->late;
  if (!L)
    return false;
  batches_settle(m, s, wait);
  while (L->count > 0) {
    pa_sim_late_scan *f = &L->fly[L->head];
    if (wait) {
      pa_sim_int_pool_wait(s->pool, f->task_b);
      pa_sim_int_pool_wait(s->pool, f->task_a);
    } else if (!late_cast(s->pool, f)) {
      break;
    }
    late_finish(m, s);
  }
  if (wait)
    pa_sim_int_pool_stream_close(s->pool);
  return L->ready_count > 0 || L->bready_n > 0;
}

/* Robot id's scan of this tick (its pose now), overlapped with the next
 * ticks when the driver allows it and it is the only robot (nothing else
 * moves meanwhile that the scan must see). Returns whether it was.
 *
 * Its beams are posted in two parts: a worker casts the first while this
 * thread runs the next ticks; this thread takes the second at the next
 * scan (unless the worker got to it first), without waiting for the
 * worker: the scan completes at a later tick, or at the latest before the
 * one after (its buffer is reused). The first part's share steers the
 * split: it grows when the worker had taken both parts of the last scan by
 * then, and shrinks when it had not finished the first by the time this
 * thread finished the second. Both parts stay big: fewer beams cast
 * together cost more per beam. */
static bool scan_late(const pa_sim_model *m, pa_sim_state *s, uint32_t id) {
  pa_sim_late *L = s->late;
  if (!L || !s->defer_scans || s->robot_count != 1) {
    pa_sim_scans_settle(m, s, true);
    return false;
  }
  pa_sim_pool *p = s->pool;
  if (L->count == PA_SIM_LATE_FLY) { /* its buffer is needed */
    pa_sim_late_scan *f = &L->fly[L->head];
    pa_sim_int_pool_wait(p, f->task_b);
    pa_sim_int_pool_wait(p, f->task_a);
    late_finish(m, s);
  }
  bool behind = L->count > 0; /* the last scan is still in flight */
  pa_sim_late_scan *f = &L->fly[(L->head + L->count) % PA_SIM_LATE_FLY];
  pa_sim_int_scan_at(m, s, id, &f->at);
  pa_sim_int_scan_stamp(m, s, id, &f->stamp);
  uint32_t beams = f->at.beams;
  uint32_t first = (uint32_t)(L->share * beams + 0.5);
  first = first < 1 ? 1 : first > beams ? beams : first;
  f->task_a = pa_sim_int_pool_task(p, m, s, &f->at, f->buf, 0, first);
  f->task_b = first < beams ? pa_sim_int_pool_task(p, m, s, &f->at, f->buf,
                                                   first, beams)
                            : f->task_a;
  L->count++;
  s->late_scans++;
  if (behind) {
    const pa_sim_late_scan *last = &L->fly[L->head];
    bool ahead = pa_sim_int_pool_taken(p) >= last->task_b;
    pa_sim_int_pool_help(p, last->task_b);
    if (ahead)
      L->share += 0.01;
    else if (!pa_sim_int_pool_task_done(p, last->task_a))
      L->share -= 0.01;
  } else {
    L->share += 0.01; /* the worker had finished it all */
  }
  L->share = L->share < 0.3 ? 0.3 : L->share > 0.95 ? 0.95 : L->share;
  pa_sim_scans_settle(m, s, false);
  return true;
}

int64_t pa_sim_int_step(const pa_sim_model *m, pa_sim_state *s, int64_t t0,
                        bool timed) {
  pa_sim_scans_settle(m, s, s->inline_scans);
  pa_sim_int_agents_step(m, s); /* agents move first (sim_agents.c) */
  /* Bounds of the tick: the largest radius and move, and where the robots
   * start (the strips' copies). */
  const bool strips = s->robot_count > SMALL_WORLD;
  pa_sim_strips *st = s->strips;
  double rmax = 0.05, lmax = 0, xmin = INFINITY, xmax = -INFINITY;
  float range_max = 0; /* the lasers' longest, for the scans' buckets */
  for (uint32_t i = 0; i < s->robot_count; i++) {
    const pa_robot_info *ri = &s->info[i];
    if (!ri->active) {
      if (strips)
        st->by[i].r = -1;
      continue;
    }
    if (ri->radius > rmax)
      rmax = ri->radius;
    if (ri->laser_range_max > range_max)
      range_max = ri->laser_range_max;
    /* Length bound of its move: limited velocities stay within
     * max(|achieved|, limit) and the arc factor |(a, b)| is <= 1. */
    const pa_robot_state *r = &s->rs[i];
    double av = fabs(r->v), avy = fabs(r->vy); /* no libm fmax per robot */
    double l = ((av > ri->max_v ? av : ri->max_v) +
                (avy > ri->max_vy ? avy : ri->max_vy)) *
               m->dt * (1 + 1e-6);
    if (ri->dynamics == PA_DYN_DYNAMIC) /* forces may outrun max_v */
      l = fmax(l, pa_sim_int_dyn_speed_bound(m, s, i) * m->dt * (1 + 1e-6));
    if (l > lmax)
      lmax = l;
    if (strips) {
      st->by[i] = (pa_sim_strip_ent){r->x, r->y, ri->radius, 0, 0};
      xmin = r->x < xmin ? r->x : xmin;
      xmax = r->x > xmax ? r->x : xmax;
    }
  }
  if (s->ssl)
    pa_sim_ssl_pre(m, s);
  if (strips && xmin <= xmax) {
    /* Robots whose centres start more than 2 radii + 3 moves + 1 cm apart
     * do not change each other's moves: every point one tests lies within
     * a move L of its start, and so does the other's centre of its own, so
     * each stays >= r + L + 1 cm from the other's tests; a clearance asked
     * after a blocked test finds a body nearer than r + L, so the other is
     * never the nearest one, nor overlaps a tested point. (With 2 moves,
     * robots faster than 1 cm a tick could be nearer than a wall the
     * clearance found.) Strips at least that wide, at most PA_SIM_STRIPS. */
    st->reach = 2.0 * rmax + 3.0 * lmax + 0.01;
    st->x0 = xmin;
    st->w = fmax(st->reach, (xmax - xmin) / (PA_SIM_STRIPS - 1));
    double n = floor((xmax - xmin) / st->w) + 1;
    st->count = n < PA_SIM_STRIPS ? (uint32_t)n : PA_SIM_STRIPS;
    moves_run(m, s);
  } else {
    /* A few robots: in id order, each against all the others. */
    pa_sim_near all = {.all = true};
    const pa_sim_near *nb = s->robot_count > 1 && !s->ghosts ? &all : NULL;
    for (uint32_t i = 0; i < s->robot_count; i++)
      if (s->info[i].active) {
        robot_plan(m, s, i, &s->motion[i]);
        s->bumps += robot_move(m, s, i, &s->motion[i], nb, odom_exact(m));
      }
  }
  if (s->ssl)
    pa_sim_ssl_post(m, s);
  s->tick++;
  s->sim_time = (double)s->tick * m->dt;
  int64_t t1 = timed ? pa_sim_int_now() : 0;

  /* Sensors, staggered: robot i scans when (tick - scan_tick0 + i) %
   * ticks_per_scan == 0, at its pose after this tick's motion. */
  s->scan_due_count = 0;
  bool hashed = false;
  /* Only every ticks_per_scan-th robot from the first due one is looked at
   * (no division and no robot record per robot); if (tick - scan_tick0 +
   * i) wraps around (it does not: scan_tick0 <= tick), each is checked. */
  const uint64_t tps = m->ticks_per_scan, since = s->tick - s->scan_tick0;
  const uint32_t nr = s->robot_count;
  const bool wraps = since + nr < since;
  /* the laser buckets' cell: max(1, longest / 3), the same as the max of
   * each range / 3 */
  double lcell = 1.0;
  if ((double)range_max / 3.0 > lcell)
    lcell = (double)range_max / 3.0;
  const uint64_t phase = since % tps;
  const uint32_t stride = wraps ? 1 : (uint32_t)tps;
  for (uint32_t i = wraps   ? 0
                    : phase ? (uint32_t)(tps - phase)
                            : 0;
       i < nr; i += stride) {
    if (!s->info[i].active || (wraps && (since + i) % tps != 0))
      continue;
    /* Final positions of this tick, laser-sized buckets (a scan uses them
     * only with more robots than the 3x3 buckets it would visit). */
    if (!hashed && s->robot_count > 9 && !s->ghosts) {
      pa_sim_int_lhash_plan(s, lcell);
      hashed = true;
    }
    if (!s->pool || s->inline_scans)
      pa_sim_scan(m, s, i, s->ranges + (size_t)i * m->beam_cap);
    s->rs[i].scan_seq++;
    s->scan_due[s->scan_due_count++] = i;
  }
  /* With threads: the same scans, cast together once the list is known
   * (each writes only its own ranges and noise generator). */
  if (s->inline_scans) {
    /* cast above */
  } else if (batch_ok(s, s->scan_due_count) && batch_post(m, s, lcell)) {
    s->scan_due_count = 0; /* their records are written when they complete */
  } else if (s->pool && s->scan_due_count) {
    batches_settle(m, s, true); /* its ranges are older than these */
    if (s->scan_due_count > 1)
      pa_sim_int_pool_scan(s->pool, m, s, s->scan_due, s->scan_due_count);
    else if (scan_late(m, s, s->scan_due[0]))
      s->scan_due_count = 0; /* its record is written when it completes */
    else
      pa_sim_int_pool_scan_one(s->pool, m, s, s->scan_due[0]);
  }
  s->hash.valid = false;
  s->lhash.valid = false;
  int64_t t2 = pa_sim_int_now();
  if (timed) {
    s->phase_ns[PA_SIM_PH_PHYSICS] = t1 - t0;
    s->phase_ns[PA_SIM_PH_SENSORS] = t2 - t1;
  }
  return t2;
}
