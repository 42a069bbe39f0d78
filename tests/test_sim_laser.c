/* test_sim_laser.c - laser scans against analytic scenes, the fast caster
 * against the plain traversal, noise statistics, scan scheduling. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_office.h"
#include "test_sim_util.h"

/* 5 m room: interior [0.05, 4.95]^2, centre (2.5, 2.5). */
static void room5(pa_sim_model *m, pa_sim_state *s, pa_robot_def *r, size_t nr,
                  pa_obstacle_def *o, size_t no, const pa_sim_def *d) {
  pa_grid g;
  ts_room(&g, 100, 100, 0.05);
  ts_make(m, s, d, &g, r, nr, o, no);
  pa_grid_free(&g);
}

static double room_range(double phi) {
  double h = 2.45, c = fabs(cos(phi)), s = fabs(sin(phi));
  double a = c > 1e-12 ? h / c : INFINITY, b = s > 1e-12 ? h / s : INFINITY;
  return a < b ? a : b;
}

static void test_square_room(void **st) {
  (void)st;
  const double headings[] = {0, 0.3, -2.0, M_PI};
  for (size_t k = 0; k < 4; k++) {
    pa_robot_def r = ts_robot("r", 2.5, 2.5, headings[k]);
    pa_sim_def d = pa_sim_def_default();
    d.laser_beams = 720;
    pa_sim_model m;
    pa_sim_state s;
    room5(&m, &s, &r, 1, NULL, 0, &d);
    float out[720];
    pa_sim_scan(&m, &s, 0, out);
    double inc = 2 * M_PI / 720;
    for (int i = 0; i < 720; i++) {
      double phi = s.rs[0].theta - M_PI + i * inc;
      double want = room_range(phi);
      if (fabs(out[i] - want) > 1e-3)
        fail_msg("heading %g beam %d: %g, want %g", headings[k], i, out[i],
                 want);
    }
    ts_free(&m, &s);
  }
}

/* Rays exactly along an axis (one direction component 0). */
static void test_axis_rays(void **st) {
  (void)st;
  pa_robot_def r = ts_robot("r", 2.5, 2.5, 0);
  pa_sim_def d = pa_sim_def_default();
  pa_sim_model m;
  pa_sim_state s;
  room5(&m, &s, &r, 1, NULL, 0, &d);
  const double dirs[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
  for (int k = 0; k < 4; k++) {
    for (double off = -1.0; off <= 1.0; off += 0.0125) {
      double x = 2.5 + (dirs[k][1] != 0 ? off : 0);
      double y = 2.5 + (dirs[k][0] != 0 ? off : 0);
      /* offset across the ray, often exactly on a grid line */
      double f = pa_sim_cast_fast(&m, x, y, dirs[k][0], dirs[k][1], 12);
      double p = pa_sim_cast_plain(&m, x, y, dirs[k][0], dirs[k][1], 12);
      assert_true(f == p);
      assert_true(fabs(f - 2.45) < 1e-9);
      double fx[8], fy[8], ff[8];
      for (int q = 0; q < 8; q++) {
        fx[q] = dirs[k][0];
        fy[q] = dirs[k][1];
      }
      pa_sim_cast_fan(&m, x, y, fx, fy, 8, 12, ff);
      for (int q = 0; q < 8; q++)
        assert_true(ff[q] == p);
    }
  }
  ts_free(&m, &s);
}

static void test_range_limits(void **st) {
  (void)st;
  pa_robot_def r = ts_robot("r", 2.5, 2.5, 0);
  r.laser.range_max = 1.0;
  pa_sim_def d = pa_sim_def_default();
  pa_sim_model m;
  pa_sim_state s;
  room5(&m, &s, &r, 1, NULL, 0, &d);
  float out[360];
  pa_sim_scan(&m, &s, 0, out);
  for (int i = 0; i < 360; i++)
    assert_true(out[i] == 1.0f); /* no return = range_max exactly */
  /* next to a wall: returns below range_min are reported as range_min */
  ts_free(&m, &s);
  r = ts_robot("r", 0.25, 2.5, 0);
  r.laser.range_min = 0.3;
  room5(&m, &s, &r, 1, NULL, 0, &d);
  pa_sim_scan(&m, &s, 0, out);
  assert_true(fabs(out[0] - 0.3f) < 1e-6); /* beam -pi: wall at 0.2 m */
  ts_free(&m, &s);
}

static void test_shapes_and_robots(void **st) {
  (void)st;
  pa_robot_def r[2] = {ts_robot("r", 2.5, 2.5, 0), ts_robot("o", 1.5, 2.5, 0)};
  pa_obstacle_def o[2] = {ts_circle("can", 3.5, 2.5, 0.3),
                          ts_box("box", 2.5, 1.5, M_PI / 4, 0.4, 0.4)};
  pa_sim_def d = pa_sim_def_default();
  pa_sim_model m;
  pa_sim_state s;
  room5(&m, &s, r, 2, o, 2, &d);
  float out[360];
  pa_sim_scan(&m, &s, 0, out);
  assert_true(fabs(out[180] - 0.7) < 1e-5);                 /* can, ahead */
  assert_true(fabs(out[90] - (1.0 - 0.2 * sqrt(2))) < 1e-5); /* box corner */
  assert_true(fabs(out[0] - (1.0 - r[1].radius)) < 1e-5);   /* robot behind */
  assert_true(fabs(out[270] - 2.45) < 1e-4);                /* wall, left */
  /* a beam tangent-ish to the can: ray-circle in closed form */
  for (int i = 170; i <= 190; i++) {
    double a = -M_PI + i * (2 * M_PI / 360);
    double b = cos(a), c = 1.0 - 0.09; /* |oc|^2 - r^2 */
    double disc = b * b - c;
    double want = disc >= 0 ? b - sqrt(disc) : room_range(a);
    assert_true(fabs(out[i] - want) < 1e-4);
  }
  /* the other robot sees robot 0 at 1 - r ahead */
  pa_sim_scan(&m, &s, 1, out);
  assert_true(fabs(out[180] - (1.0 - r[0].radius)) < 1e-5);
  ts_free(&m, &s);
}

/* The fan from (x, y) into f (n rays) must equal pa_sim_cast_plain ray by
 * ray (what: where, for the failure); how many rays hit within rmax. */
static int fan_equals_plain(const pa_sim_model *m, const char *what, double x,
                            double y, const double *dx, const double *dy, int n,
                            double rmax, double *f) {
  int hits = 0;
  pa_sim_cast_fan(m, x, y, dx, dy, (uint32_t)n, rmax, f);
  for (int q = 0; q < n; q++) {
    double p = pa_sim_cast_plain(m, x, y, dx[q], dy[q], rmax);
    if (f[q] != p)
      fail_msg("%s: fan from (%.17g, %.17g) dir (%.17g, %.17g) range %.17g: "
               "%.12g, plain %.12g",
               what, x, y, dx[q], dy[q], rmax, f[q], p);
    hits += p < rmax;
  }
  return hits;
}

/* Random map of blocks and unknown cells; the distance-field caster must
 * give exactly the plain traversal's range on random rays. */
static void check_fast_equals_plain(double origin_x, double origin_y,
                                    double yaw) {
  pa_grid g;
  ts_room(&g, 300, 240, 0.05);
  g.origin_x = origin_x;
  g.origin_y = origin_y;
  g.origin_yaw = yaw;
  uint64_t rng = 12345;
  for (int k = 0; k < 120; k++) {
    uint32_t x = (uint32_t)(pa_sim_rng_uniform(&rng) * 290);
    uint32_t y = (uint32_t)(pa_sim_rng_uniform(&rng) * 230);
    uint32_t w = 1 + (uint32_t)(pa_sim_rng_uniform(&rng) * 10);
    uint32_t h = 1 + (uint32_t)(pa_sim_rng_uniform(&rng) * 10);
    int8_t v = k % 7 == 0 ? PA_CELL_UNKNOWN : PA_CELL_OCCUPIED;
    for (uint32_t j = y; j < y + h && j < 240; j++)
      for (uint32_t i = x; i < x + w && i < 300; i++)
        g.cells[(size_t)j * 300 + i] = v;
  }
  pa_robot_def r = ts_robot("r", 0, 0, 0);
  pa_sim_def d = pa_sim_def_default();
  pa_sim_model m;
  pa_sim_state s;
  double cx, cy;
  pa_grid_cell_center(&g, 150, 120, &cx, &cy);
  r.x = cx;
  r.y = cy;
  g.cells[120 * 300 + 150] = 0;
  for (int j = 118; j <= 122; j++)
    for (int i = 148; i <= 152; i++)
      g.cells[j * 300 + i] = 0;
  ts_make(&m, &s, &d, &g, &r, 1, NULL, 0);
  int tested = 0, hits = 0;
  for (int k = 0; k < 200000; k++) {
    int i = (int)(pa_sim_rng_uniform(&rng) * 300);
    int j = (int)(pa_sim_rng_uniform(&rng) * 240);
    if (g.cells[j * 300 + i] != 0)
      continue;
    double x, y;
    pa_grid_cell_center(&g, i, j, &x, &y);
    double a = 2 * M_PI * pa_sim_rng_uniform(&rng);
    x += 0.05 * (pa_sim_rng_uniform(&rng) - 0.5);
    y += 0.05 * (pa_sim_rng_uniform(&rng) - 0.5);
    double rmax = 1 + 20 * pa_sim_rng_uniform(&rng);
    double f = pa_sim_cast_fast(&m, x, y, cos(a), sin(a), rmax);
    double p = pa_sim_cast_plain(&m, x, y, cos(a), sin(a), rmax);
    if (f != p)
      fail_msg("ray from (%.9f, %.9f) at %.9f: fast %.12g, plain %.12g", x, y,
               a, f, p);
    tested++;
    hits += p < rmax;
  }
  assert_true(tested > 50000);
  assert_true(hits > tested / 2);
  /* Fans (the scan's batched, possibly vectorised path) from origins at cell
   * centres, on grid lines and corners and at random points: axis-aligned,
   * diagonal and random directions, with the vector caster on and off. */
  long fan_rays = 0;
  for (int path = PA_SIM_SIMD_AVX512; path <= PA_SIM_SIMD_SCALAR; path++) {
    if (pa_sim_simd_set((pa_sim_simd)path) != 0)
      continue; /* this CPU lacks it: the per-path tests say so by name */
    for (int k = 0; k < 3000; k++) {
      int i = 2 + (int)(pa_sim_rng_uniform(&rng) * 296);
      int j = 2 + (int)(pa_sim_rng_uniform(&rng) * 236);
      if (g.cells[j * 300 + i] != 0)
        continue;
      double x, y;
      pa_grid_cell_center(&g, i, j, &x, &y);
      /* grid frame offsets: centre, on a vertical/horizontal line, corner */
      double ox = (k % 4 == 1 || k % 4 == 3) ? -0.025 : 0;
      double oy = (k % 4 == 2 || k % 4 == 3) ? -0.025 : 0;
      if (k % 8 >= 4) {
        ox = 0.05 * (pa_sim_rng_uniform(&rng) - 0.5);
        oy = 0.05 * (pa_sim_rng_uniform(&rng) - 0.5);
      }
      x += cos(yaw) * ox - sin(yaw) * oy;
      y += sin(yaw) * ox + cos(yaw) * oy;
      enum { N = 61 };
      double dx[N], dy[N], f[N];
      for (int q = 0; q < N; q++) {
        double a = q < 8 ? yaw + q * M_PI / 4
                         : 2 * M_PI * pa_sim_rng_uniform(&rng);
        dx[q] = cos(a);
        dy[q] = sin(a);
        if (q < 8 && yaw == 0) { /* exactly along the axes and diagonals */
          static const double u[8][2] = {{1, 0}, {M_SQRT1_2, M_SQRT1_2},
                                         {0, 1}, {-M_SQRT1_2, M_SQRT1_2},
                                         {-1, 0}, {-M_SQRT1_2, -M_SQRT1_2},
                                         {0, -1}, {M_SQRT1_2, -M_SQRT1_2}};
          dx[q] = u[q][0];
          dy[q] = u[q][1];
        }
      }
      double rmax = 1 + 20 * pa_sim_rng_uniform(&rng);
      fan_equals_plain(&m, pa_sim_simd_name((pa_sim_simd)path), x, y, dx, dy, N,
                       rmax, f);
      fan_rays += N;
    }
  }
  pa_sim_simd_set(PA_SIM_SIMD_AUTO);
  printf("fan == plain on %ld rays (every caster path this CPU has)\n",
         fan_rays);
  assert_true(fan_rays > 100000);
  ts_free(&m, &s);
  pa_grid_free(&g);
}

static void test_fast_equals_plain(void **st) {
  (void)st;
  check_fast_equals_plain(0, 0, 0);
  check_fast_equals_plain(-3.3, 2.1, 0.3);
}

/* Fans on long maps: the vector caster's single-precision open-space pass
 * near its limit (coordinates up to 16k cells, long ranges) and the double
 * path past it must both give the plain traversal's ranges. Sparse posts, so
 * rays travel far before they hit anything. */
static void check_long_map(uint32_t w, uint32_t h, double res) {
  pa_grid g;
  ts_room(&g, w, h, res);
  uint64_t rng = 777;
  for (int k = 0; k < 400; k++) {
    uint32_t x = 2 + (uint32_t)(pa_sim_rng_uniform(&rng) * (w - 8));
    uint32_t y = 2 + (uint32_t)(pa_sim_rng_uniform(&rng) * (h - 8));
    for (uint32_t j = y; j < y + 3; j++)
      for (uint32_t i = x; i < x + 3; i++)
        g.cells[(size_t)j * w + i] = PA_CELL_OCCUPIED;
  }
  pa_robot_def r = ts_robot("r", 0, 0, 0);
  double cx, cy;
  pa_grid_cell_center(&g, w / 2, h / 2, &cx, &cy);
  r.x = cx;
  r.y = cy;
  for (uint32_t j = h / 2 - 3; j <= h / 2 + 3; j++)
    for (uint32_t i = w / 2 - 3; i <= w / 2 + 3; i++)
      g.cells[(size_t)j * w + i] = 0;
  pa_sim_def d = pa_sim_def_default();
  pa_sim_model m;
  pa_sim_state s;
  ts_make(&m, &s, &d, &g, &r, 1, NULL, 0);
  long rays = 0, hits = 0;
  for (int k = 0; k < 300; k++) {
    uint32_t i = 3 + (uint32_t)(pa_sim_rng_uniform(&rng) * (w - 6));
    uint32_t j = 3 + (uint32_t)(pa_sim_rng_uniform(&rng) * (h - 6));
    if (k % 3 == 0) /* far out along the long axis */
      i = w - 4 - (uint32_t)(pa_sim_rng_uniform(&rng) * 40);
    if (g.cells[(size_t)j * w + i] != 0)
      continue;
    double x, y;
    pa_grid_cell_center(&g, (int)i, (int)j, &x, &y);
    if (k % 2) {
      x += res * (pa_sim_rng_uniform(&rng) - 0.5);
      y += res * (pa_sim_rng_uniform(&rng) - 0.5);
    } else { /* on a grid line */
      x -= res / 2;
    }
    enum { N = 64 };
    double dx[N], dy[N], f[N];
    for (int q = 0; q < N; q++) {
      /* mostly along the long axis, some exactly on it */
      double a = (pa_sim_rng_uniform(&rng) - 0.5) * 0.02 + (q % 2 ? M_PI : 0);
      dx[q] = q % 16 == 0 ? (q % 2 ? -1.0 : 1.0) : cos(a);
      dy[q] = q % 16 == 0 ? 0.0 : sin(a);
    }
    double rmax = w * res * (0.3 + 0.7 * pa_sim_rng_uniform(&rng));
    char what[48];
    snprintf(what, sizeof what, "%ux%u map", w, h);
    hits += fan_equals_plain(&m, what, x, y, dx, dy, N, rmax, f);
    rays += N;
  }
  printf("%ux%u map: fan == plain on %ld rays, %ld hits\n", w, h, rays, hits);
  assert_true(rays > 10000);
  assert_true(hits > rays / 4);
  ts_free(&m, &s);
  pa_grid_free(&g);
}

static void test_long_maps(void **st) {
  (void)st;
  /* Every path this CPU has (the vector ones' float pass near its limit and
   * past it). */
  for (int path = PA_SIM_SIMD_AVX512; path <= PA_SIM_SIMD_SCALAR; path++) {
    if (pa_sim_simd_set((pa_sim_simd)path) != 0)
      continue; /* the per-path tests report it skipped by name */
    printf("long maps: %s caster\n", pa_sim_simd_name((pa_sim_simd)path));
    check_long_map(16000, 200, 0.05); /* inside the float pass's range */
    check_long_map(17000, 200, 0.05); /* past it: the double path only */
  }
  pa_sim_simd_set(PA_SIM_SIMD_AUTO);
}

/* ---- every caster path against the plain traversal ---------------------- */

/* Random blocks and unknown cells over a w x h grid (seeded). */
static void random_map(pa_grid *g, uint32_t w, uint32_t h, uint64_t seed) {
  ts_room(g, w, h, 0.05);
  uint64_t rng = seed;
  int blocks = (int)(w * h / 400);
  for (int k = 0; k < blocks; k++) {
    uint32_t x = (uint32_t)(pa_sim_rng_uniform(&rng) * (w - 4));
    uint32_t y = (uint32_t)(pa_sim_rng_uniform(&rng) * (h - 4));
    uint32_t bw = 1 + (uint32_t)(pa_sim_rng_uniform(&rng) * 8);
    uint32_t bh = 1 + (uint32_t)(pa_sim_rng_uniform(&rng) * 8);
    int8_t v = k % 5 == 0 ? PA_CELL_UNKNOWN : PA_CELL_OCCUPIED;
    for (uint32_t j = y; j < y + bh && j < h; j++)
      for (uint32_t i = x; i < x + bw && i < w; i++)
        g->cells[(size_t)j * w + i] = v;
  }
}

/* Walls of cells that touch at their corners only (diagonal and
 * anti-diagonal lines, a staircase two cells thick), a checkerboard patch
 * and single cells, in a w x h room: where faces of different runs meet at
 * a point, the face caster's corner checks at their hardest. */
static void stair_map(pa_grid *g, uint32_t w, uint32_t h) {
  ts_room(g, w, h, 0.05);
  for (uint32_t i = 0; i < 100; i++) {
    g->cells[(size_t)(20 + i) * w + 20 + i] = PA_CELL_OCCUPIED;
    g->cells[(size_t)(20 + i) * w + 200 - i] = PA_CELL_OCCUPIED;
    g->cells[(size_t)(120 + i / 2) * w + 30 + i] = PA_CELL_OCCUPIED;
    g->cells[(size_t)(121 + i / 2) * w + 30 + i] = PA_CELL_OCCUPIED;
  }
  for (uint32_t j = 150; j < 180; j++)
    for (uint32_t i = 150; i < 180; i++)
      if ((i + j) % 2 == 0)
        g->cells[(size_t)j * w + i] = PA_CELL_OCCUPIED;
  for (uint32_t k = 0; k < 40; k++)
    g->cells[(size_t)(30 + (k * 37) % 150) * w + 60 + (k * 53) % 180] =
        PA_CELL_OCCUPIED;
}

/* The model of grid g (one robot placed on a free cell; only the grid is
 * cast against). */
static void grid_model(pa_sim_model *m, const pa_grid *g) {
  pa_world w;
  memset(&w, 0, sizeof w);
  w.unknown_blocks = true;
  pa_sim_def d = pa_sim_def_default();
  d.seed = 1;
  char err[256] = "";
  if (pa_sim_model_init(m, &d, &w, g, err, sizeof err) != 0)
    fail_msg("model: %s", err);
}

/* One fan on the current path against the plain traversal, ray by ray. */
static long fan_vs_plain(const pa_sim_model *m, const char *what, double x,
                         double y, const double *dx, const double *dy,
                         uint32_t n, double rmax, long *hits) {
  double f[720];
  assert_true(n <= 720);
  pa_sim_cast_fan(m, x, y, dx, dy, n, rmax, f);
  for (uint32_t q = 0; q < n; q++) {
    double p = pa_sim_cast_plain(m, x, y, dx[q], dy[q], rmax);
    if (f[q] != p)
      fail_msg("%s, %s caster: ray from (%.17g, %.17g) dir (%.17g, %.17g) "
               "range %.17g: %.17g, plain %.17g",
               what, pa_sim_simd_name(pa_sim_simd_path(NULL)), x, y, dx[q],
               dy[q], rmax, f[q], p);
    *hits += p < rmax;
  }
  return n;
}

/* A point inside free cell (fx, fy) of g (fractions of its width and
 * height), jittered by up to half a cell: false (nothing drawn) when the
 * cell is occupied. */
static bool free_point(const pa_grid *g, double fx, double fy, uint64_t *rng,
                       double *x, double *y) {
  int i = (int)(fx * g->width), j = (int)(fy * g->height);
  if (g->cells[(size_t)j * g->width + (size_t)i] != 0)
    return false;
  pa_grid_cell_center(g, i, j, x, y);
  *x += g->resolution * (pa_sim_rng_uniform(rng) - 0.5);
  *y += g->resolution * (pa_sim_rng_uniform(rng) - 0.5);
  return true;
}

/* Scans (360 beams, any heading) from random free points of g. */
static long scans_vs_plain(const pa_grid *g, const char *what, int scans,
                           double rmax_lo, double rmax_hi, uint64_t seed) {
  pa_sim_model m;
  grid_model(&m, g);
  uint64_t rng = seed;
  long rays = 0, hits = 0;
  double dx[360], dy[360];
  for (int k = 0; k < scans;) {
    double fx = pa_sim_rng_uniform(&rng), fy = pa_sim_rng_uniform(&rng);
    double x, y;
    if (!free_point(g, fx, fy, &rng, &x, &y))
      continue;
    k++;
    double th = 2 * M_PI * pa_sim_rng_uniform(&rng);
    for (int b = 0; b < 360; b++) {
      dx[b] = cos(th - M_PI + b * 2 * M_PI / 360);
      dy[b] = sin(th - M_PI + b * 2 * M_PI / 360);
    }
    double rmax = rmax_lo + (rmax_hi - rmax_lo) * pa_sim_rng_uniform(&rng);
    rays += fan_vs_plain(&m, what, x, y, dx, dy, 360, rmax, &hits);
  }
  assert_true(hits > rays / 4); /* the rays meet walls, not only range_max */
  pa_sim_model_free(&m);
  return rays;
}

/* A cell (i, j) drawn at least 3 cells from g's border: false (drawn
 * anyway) when it is occupied. */
static bool inner_free_cell(const pa_grid *g, uint64_t *rng, int *i, int *j) {
  *i = 3 + (int)(pa_sim_rng_uniform(rng) * (g->width - 6));
  *j = 3 + (int)(pa_sim_rng_uniform(rng) * (g->height - 6));
  return g->cells[(size_t)*j * g->width + (size_t)*i] == 0;
}

/* Rays from grid corners and cell edges, along grid lines, on exact
 * diagonals and aimed at cell corners (ties between the axes). */
static long edges_vs_plain(const pa_grid *g, uint64_t seed) {
  pa_sim_model m;
  grid_model(&m, g);
  const double res = g->resolution;
  uint64_t rng = seed;
  long rays = 0, hits = 0;
  enum { N = 64 };
  double dx[N], dy[N];
  for (int k = 0; k < 600;) {
    int i, j;
    if (!inner_free_cell(g, &rng, &i, &j))
      continue;
    k++;
    /* the cell's lower-left corner, the middle of its left or lower edge */
    double x = g->origin_x + i * res, y = g->origin_y + j * res;
    if (k % 3 == 1)
      y += res / 2;
    else if (k % 3 == 2)
      x += res / 2;
    for (int q = 0; q < N; q++) {
      double ax, ay;
      if (q < 8) { /* along the grid lines and the exact diagonals */
        static const double u[8][2] = {{1, 0},  {M_SQRT1_2, M_SQRT1_2},
                                       {0, 1},  {-M_SQRT1_2, M_SQRT1_2},
                                       {-1, 0}, {-M_SQRT1_2, -M_SQRT1_2},
                                       {0, -1}, {M_SQRT1_2, -M_SQRT1_2}};
        ax = u[q][0];
        ay = u[q][1];
      } else { /* at a cell corner up to 40 cells away */
        double ci = i + (int)(pa_sim_rng_uniform(&rng) * 81) - 40;
        double cj = j + (int)(pa_sim_rng_uniform(&rng) * 81) - 40;
        ax = g->origin_x + ci * res - x;
        ay = g->origin_y + cj * res - y;
        double len = sqrt(ax * ax + ay * ay);
        if (len == 0) {
          ax = 1;
          len = 1;
        }
        ax /= len;
        ay /= len;
      }
      dx[q] = ax;
      dy[q] = ay;
    }
    double rmax = 40 * res * (0.2 + pa_sim_rng_uniform(&rng));
    rays += fan_vs_plain(&m, "edges and corners", x, y, dx, dy, N, rmax, &hits);
  }
  assert_true(hits > 0);
  pa_sim_model_free(&m);
  return rays;
}

/* Fans of any size (1 to 150 rays, a vector's lanes plus or minus some:
 * the casters' remainders and the float pass's hand-over of its last rays
 * to the scalar caster) at random headings from random free points of g,
 * some near the map's far corner (large coordinates). */
static long odd_fans_vs_plain(const pa_grid *g, uint64_t seed) {
  pa_sim_model m;
  grid_model(&m, g);
  uint64_t rng = seed;
  long rays = 0, hits = 0;
  double dx[150], dy[150];
  for (int k = 0; k < 400;) {
    double fx = pa_sim_rng_uniform(&rng), fy = pa_sim_rng_uniform(&rng);
    if (k % 2) { /* the far corner's quarter */
      fx = 0.75 + fx / 4;
      fy = 0.75 + fy / 4;
    }
    double x, y;
    if (!free_point(g, fx, fy, &rng, &x, &y))
      continue;
    k++;
    uint32_t n = 1 + (uint32_t)(pa_sim_rng_uniform(&rng) * 150);
    double th = 2 * M_PI * pa_sim_rng_uniform(&rng);
    for (uint32_t b = 0; b < n; b++) {
      dx[b] = cos(th + b * 2 * M_PI / n);
      dy[b] = sin(th + b * 2 * M_PI / n);
    }
    double rmax = 1 + 20 * pa_sim_rng_uniform(&rng);
    rays += fan_vs_plain(&m, "fans of any size", x, y, dx, dy, n, rmax, &hits);
  }
  assert_true(hits > rays / 4);
  pa_sim_model_free(&m);
  return rays;
}

/* Fans of rays a hair off the grid's axes (1e-1 to 1e-8 rad either side of
 * each): huge inverses on one axis, so the walk's error bounds of that
 * axis are large and its crossings rare, from random free points of g. */
static long near_axis_vs_plain(const pa_grid *g, uint64_t seed) {
  pa_sim_model m;
  grid_model(&m, g);
  uint64_t rng = seed;
  long rays = 0, hits = 0;
  enum { N = 64 };
  double dx[N], dy[N];
  for (int k = 0; k < 300;) {
    double fx = pa_sim_rng_uniform(&rng), fy = pa_sim_rng_uniform(&rng);
    double x, y;
    if (!free_point(g, fx, fy, &rng, &x, &y))
      continue;
    k++;
    for (int q = 0; q < N; q++) {
      double off = pow(10.0, -1 - (q / 2) % 8) * (q % 2 ? 1 : -1);
      double th = (q / 16) * M_PI / 2 + off;
      dx[q] = cos(th);
      dy[q] = sin(th);
    }
    double rmax = 2 + 10 * pa_sim_rng_uniform(&rng);
    rays += fan_vs_plain(&m, "near the axes", x, y, dx, dy, N, rmax, &hits);
  }
  assert_true(hits > rays / 4);
  pa_sim_model_free(&m);
  return rays;
}

static int by_angle(const void *a, const void *b) {
  const double *p = a, *q = b;
  double u = atan2(p[1], p[0]), v = atan2(q[1], q[0]);
  return (u > v) - (u < v);
}

/* Fans in angle order (the face caster's), from points a hair to a cell off
 * a grid line (the faces' smallest offsets) and anywhere: rays aimed at
 * cell corners up to 40 cells away (the caster's corner checks), along the
 * axes and the diagonals, n of 64 to 360 (some rays twice); every fourth
 * fan turning the other way (not the face caster's: the march caster's). */
static long corner_fans_vs_plain(const pa_grid *g, uint64_t seed) {
  pa_sim_model m;
  grid_model(&m, g);
  const double res = g->resolution;
  static const double off[] = {0.0015, 0.003, 0.01, 0.2, 0.5};
  uint64_t rng = seed;
  long rays = 0, hits = 0;
  enum { N = 360 };
  double d[N][2], dx[N], dy[N];
  for (int k = 0; k < 300;) {
    int i, j;
    if (!inner_free_cell(g, &rng, &i, &j))
      continue;
    k++;
    double x = g->origin_x + (i + off[k % 5]) * res;
    double y = g->origin_y + (j + off[(k / 5) % 5]) * res;
    uint32_t n = 64 + (uint32_t)(pa_sim_rng_uniform(&rng) * (N - 63));
    for (uint32_t q = 0; q < n; q++) {
      if (q < 8) { /* the axes and the diagonals */
        d[q][0] = cos(q * M_PI / 4);
        d[q][1] = sin(q * M_PI / 4);
        if (q % 2 == 0) { /* exactly */
          d[q][0] = q == 0 ? 1 : q == 4 ? -1 : 0;
          d[q][1] = q == 2 ? 1 : q == 6 ? -1 : 0;
        }
        continue;
      }
      double cx = i + (int)(pa_sim_rng_uniform(&rng) * 81) - 40;
      double cy = j + (int)(pa_sim_rng_uniform(&rng) * 81) - 40;
      if (q % 7 == 0 && q > 8) { /* the same corner as the ray before */
        d[q][0] = d[q - 1][0];
        d[q][1] = d[q - 1][1];
        continue;
      }
      double ax = g->origin_x + cx * res - x, ay = g->origin_y + cy * res - y;
      double len = sqrt(ax * ax + ay * ay);
      d[q][0] = len > 0 ? ax / len : 1;
      d[q][1] = len > 0 ? ay / len : 0;
    }
    qsort(d, n, sizeof d[0], by_angle);
    for (uint32_t q = 0; q < n; q++) {
      uint32_t r = k % 4 == 3 ? n - 1 - q : q;
      dx[q] = d[r][0];
      dy[q] = d[r][1];
    }
    double rmax = 40 * res * (0.2 + pa_sim_rng_uniform(&rng));
    rays += fan_vs_plain(&m, "fans in angle order at corners", x, y, dx, dy, n,
                         rmax, &hits);
  }
  assert_true(hits > rays / 4);
  pa_sim_model_free(&m);
  return rays;
}

/* One caster path on the default map, a 100 m office, random maps and
 * rays along edges and through corners, with the face caster for fans in
 * angle order and without it (the march caster alone); skipped by name when
 * this CPU (or build) lacks it. */
static void check_path_once(pa_sim_simd path) {
  uint64_t faces0, closes0;
  pa_sim_faces_counts(&faces0, &closes0);
  if (!pa_sim_simd_has(path)) {
    printf("SKIPPED: the %s caster: this CPU or build lacks it\n",
           pa_sim_simd_name(path));
    skip();
  }
  assert_int_equal(pa_sim_simd_set(path), 0);
  assert_int_equal(pa_sim_simd_path(NULL), path);
  char err[256];
  pa_grid g;
  long rays = 0;
  assert_int_equal(pa_map_load_default(&g, err, sizeof err), 0);
  rays += scans_vs_plain(&g, "default map", 300, 1, 12, 11);
  rays += edges_vs_plain(&g, 12);
  rays += odd_fans_vs_plain(&g, 15);
  rays += near_axis_vs_plain(&g, 17);
  rays += corner_fans_vs_plain(&g, 19);
  pa_grid_free(&g);
  ts_office(&g, 2000, 2000);
  assert_non_null(g.cells);
  rays += scans_vs_plain(&g, "100 m office", 150, 5, 30, 13);
  rays += edges_vs_plain(&g, 14);
  rays += odd_fans_vs_plain(&g, 16);
  rays += near_axis_vs_plain(&g, 18);
  rays += corner_fans_vs_plain(&g, 20);
  pa_grid_free(&g);
  stair_map(&g, 260, 220);
  rays += scans_vs_plain(&g, "diagonal walls", 80, 1, 15, 23);
  rays += corner_fans_vs_plain(&g, 24);
  pa_grid_free(&g);
  for (uint64_t seed = 1; seed <= 3; seed++) {
    random_map(&g, 200 + 100 * (uint32_t)seed, 150 + 50 * (uint32_t)seed, seed);
    rays += scans_vs_plain(&g, "random map", 60, 1, 20, 20 + seed);
    rays += edges_vs_plain(&g, 30 + seed);
    rays += corner_fans_vs_plain(&g, 40 + seed);
    pa_grid_free(&g);
  }
  pa_sim_simd_set(PA_SIM_SIMD_AUTO);
  uint64_t fans, closes;
  pa_sim_faces_counts(&fans, &closes);
  if (pa_sim_faces_on() && path != PA_SIM_SIMD_SCALAR) {
    /* the face caster took fans, and recast rays near corners */
    printf("%s: %llu fans by the face caster so far, %llu rays recast\n",
           pa_sim_simd_name(path), (unsigned long long)fans,
           (unsigned long long)closes);
    assert_true(fans >= faces0 + 1000);
    assert_true(closes >= closes0 + 100);
  } else {
    assert_true(fans == faces0); /* off (or scalar): it cast none */
  }
  printf("%s caster%s == plain traversal on %ld rays\n", pa_sim_simd_name(path),
         pa_sim_faces_on() ? " (face caster on)" : " (march caster alone)",
         rays);
  assert_true(rays > 200000);
}

static void check_path(pa_sim_simd path) {
  for (int faces = 1; faces >= 0; faces--) {
    pa_sim_faces_set(faces);
    check_path_once(path);
  }
  pa_sim_faces_set(true);
}

/* One test per caster path, each named for it (main's PATH_TEST rows): the
 * path is the test's initial state. */
static void test_path(void **st) { check_path(*(const pa_sim_simd *)*st); }
#define PATH_TEST(name, path)                                                  \
  {                                                                            \
    "test_path_" name, test_path, NULL, NULL, &(pa_sim_simd) { path }          \
  }

/* The face caster's index: built for the office and the default map, not
 * for a speckled map (more faces than it pays for: the march caster casts
 * its scans, equal to the plain traversal). */
static void test_face_index(void **st) {
  (void)st;
  pa_grid g;
  pa_sim_model m;
  ts_office(&g, 2000, 2000);
  assert_non_null(g.cells);
  grid_model(&m, &g);
  assert_non_null(m.faces);
  pa_sim_model_free(&m);
  pa_grid_free(&g);
  ts_room(&g, 300, 300, 0.05);
  uint64_t rng = 77;
  for (uint32_t j = 2; j < 298; j++)
    for (uint32_t i = 2; i < 298; i++)
      if (pa_sim_rng_uniform(&rng) < 0.3 &&
          !(i > 130 && i < 170 && j > 130 && j < 170)) /* room for a robot */
        g.cells[(size_t)j * 300 + i] = PA_CELL_OCCUPIED;
  grid_model(&m, &g);
  assert_null(m.faces);
  pa_sim_model_free(&m);
  uint64_t fans0, closes0, fans1, closes1;
  pa_sim_faces_counts(&fans0, &closes0);
  long rays = scans_vs_plain(&g, "speckled map", 40, 0.5, 3, 5);
  pa_sim_faces_counts(&fans1, &closes1);
  assert_true(fans1 == fans0); /* no index: none by the face caster */
  printf("speckled map: no face index; %ld rays == plain traversal\n", rays);
  pa_grid_free(&g);
}

/* The path names, the parser, and a model's def.simd winning over the
 * process default. */
static void test_path_choice(void **st) {
  (void)st;
  pa_sim_simd p = PA_SIM_SIMD_AVX2;
  assert_int_equal(pa_sim_simd_parse("avx9", &p), -1);
  assert_int_equal(p, PA_SIM_SIMD_AVX2); /* unchanged */
  for (int i = 0; i < PA_SIM_SIMD_COUNT; i++) {
    assert_int_equal(pa_sim_simd_parse(pa_sim_simd_name((pa_sim_simd)i), &p),
                     0);
    assert_int_equal(p, i);
  }
  assert_true(pa_sim_simd_has(PA_SIM_SIMD_SCALAR));
  assert_int_equal(pa_sim_simd_set(PA_SIM_SIMD_SCALAR), 0);
  assert_int_equal(pa_sim_simd_path(NULL), PA_SIM_SIMD_SCALAR);
  pa_grid g;
  ts_room(&g, 50, 50, 0.05);
  pa_sim_model m;
  pa_world w;
  memset(&w, 0, sizeof w);
  pa_sim_def d = pa_sim_def_default();
  d.simd = PA_SIM_SIMD_PORTABLE;
  char err[256];
  assert_int_equal(pa_sim_model_init(&m, &d, &w, &g, err, sizeof err), 0);
  assert_int_equal(pa_sim_simd_path(&m), pa_sim_simd_has(PA_SIM_SIMD_PORTABLE)
                                             ? PA_SIM_SIMD_PORTABLE
                                             : PA_SIM_SIMD_SCALAR);
  pa_sim_model_free(&m);
  pa_grid_free(&g);
  assert_int_equal(pa_sim_simd_set(PA_SIM_SIMD_AUTO), 0);
  assert_int_not_equal(pa_sim_simd_path(NULL), PA_SIM_SIMD_AUTO);
  printf("auto caster path here: %s\n",
         pa_sim_simd_name(pa_sim_simd_path(NULL)));
}

static void test_noise_statistics(void **st) {
  (void)st;
  pa_robot_def r = ts_robot("r", 2.5, 2.5, 0.1);
  pa_sim_def d = pa_sim_def_default();
  d.laser_noise = 0.02;
  d.seed = 5;
  pa_sim_model m;
  pa_sim_state s;
  room5(&m, &s, &r, 1, NULL, 0, &d);
  float out[360];
  double sum = 0, sum2 = 0;
  int n = 0;
  for (int k = 0; k < 300; k++) {
    pa_sim_scan(&m, &s, 0, out);
    for (int i = 0; i < 360; i++) {
      double e = out[i] - room_range(0.1 - M_PI + i * (2 * M_PI / 360));
      sum += e;
      sum2 += e * e;
      n++;
    }
  }
  double mean = sum / n, sd = sqrt(sum2 / n - mean * mean);
  assert_true(fabs(mean) < 0.0005);
  assert_true(fabs(sd - 0.02) < 0.0008);
  ts_free(&m, &s);
}

/* Scans at scan_hz, staggered across robots, seq +1 per scan. */
static void test_scan_schedule(void **st) {
  (void)st;
  pa_robot_def r[3] = {ts_robot("a", 1, 1, 0), ts_robot("b", 2, 2, 0),
                       ts_robot("c", 3, 3, 0)};
  pa_sim_def d = pa_sim_def_default();
  pa_sim_model m;
  pa_sim_state s;
  room5(&m, &s, r, 3, NULL, 0, &d);
  assert_int_equal(m.ticks_per_scan, 20);
  int per_tick_max = 0, total = 0;
  for (int t = 0; t < 200; t++) {
    pa_sim_step(&m, &s);
    total += (int)s.scan_due_count;
    if ((int)s.scan_due_count > per_tick_max)
      per_tick_max = (int)s.scan_due_count;
  }
  assert_int_equal(total, 30); /* 1 s, 10 Hz, 3 robots */
  assert_int_equal(per_tick_max, 1);
  for (int i = 0; i < 3; i++)
    assert_int_equal(s.rs[i].scan_seq, 10);
  ts_free(&m, &s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_square_room),
      cmocka_unit_test(test_axis_rays),
      cmocka_unit_test(test_range_limits),
      cmocka_unit_test(test_shapes_and_robots),
      cmocka_unit_test(test_fast_equals_plain),
      cmocka_unit_test(test_long_maps),
      PATH_TEST("avx512", PA_SIM_SIMD_AVX512),
      PATH_TEST("avx2", PA_SIM_SIMD_AVX2),
      PATH_TEST("portable", PA_SIM_SIMD_PORTABLE),
      PATH_TEST("scalar", PA_SIM_SIMD_SCALAR),
      cmocka_unit_test(test_face_index),
      cmocka_unit_test(test_path_choice),
      cmocka_unit_test(test_noise_statistics),
      cmocka_unit_test(test_scan_schedule),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
