/* test_sim_cast_exact.c - every caster path this CPU has (AVX-512, AVX2,
 * portable, scalar; the face caster on and off) gives the plain traversal's
 * range bit for bit, on generated maps (rooms with doors, pillars, diagonal
 * walls, speckle, single cells) from random poses: fans in angle order (the
 * face caster's case), fans in random order (the march caster's), single
 * rays, rays along the axes.
 *
 * Built twice: natively as a ctest against pa_sim, and (PA_CAST_STANDALONE)
 * by tests/sim_cast_cross.sh from the caster's sources alone with a cross
 * compiler, run under qemu-user: the portable path (NEON on AArch64) is
 * checked where it is the vector path. No cmocka, no map loader (neither is
 * there for the target): the march field is built here as pa_sim builds it
 * (sim_model.c's code formula) from a distance that is never more than the
 * true one (chamfer over the 8 neighbours: the field stays safe). Exit 0
 * when every cast matches, 1 (with the first mismatches) else. */
#define _GNU_SOURCE
#include "sim_geom_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const path_names[PA_SIM_SIMD_COUNT] = {
    "auto", "avx512", "avx2", "portable", "scalar"};

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) { /* xorshift64 */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}
static double unif(void) {
  return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0);
}
static int irnd(int n) { return (int)(rnd() % (uint64_t)n); }

static void block(pa_grid *g, int x, int y) {
  if (x >= 0 && y >= 0 && x < (int)g->width && y < (int)g->height)
    g->cells[(size_t)y * g->width + (size_t)x] = 100;
}

static void rect(pa_grid *g, int x0, int y0, int x1, int y1) {
  for (int y = y0; y <= y1; y++)
    for (int x = x0; x <= x1; x++)
      block(g, x, y);
}

/* kind 0: rooms with doors and pillars; 1: diagonal walls and speckle; 2:
 * single cells and thin walls in open space (faces meeting at corners) */
static void make_map(pa_grid *g, uint32_t w, uint32_t h, int kind) {
  g->width = w;
  g->height = h;
  g->resolution = 0.05;
  g->origin_x = -1.5;
  g->origin_y = 2.25;
  g->origin_yaw = 0;
  g->occupied_min = 100;
  g->cells = calloc((size_t)w * h, 1);
  rect(g, 0, 0, (int)w - 1, 0);
  rect(g, 0, (int)h - 1, (int)w - 1, (int)h - 1);
  rect(g, 0, 0, 0, (int)h - 1);
  rect(g, (int)w - 1, 0, (int)w - 1, (int)h - 1);
  if (kind == 0) {
    for (int x = 40; x < (int)w - 10; x += 40 + irnd(20)) {
      rect(g, x, 0, x + irnd(3), (int)h - 1);
      for (int d = 0; d < 3; d++) { /* doors */
        int y = 5 + irnd((int)h - 20);
        for (int yy = y; yy < y + 8 + irnd(6); yy++)
          for (int xx = x; xx <= x + 3; xx++)
            g->cells[(size_t)yy * w + (size_t)xx] = 0;
      }
    }
    for (int y = 50; y < (int)h - 10; y += 50 + irnd(20))
      for (int x = 1; x < (int)w - 1; x++)
        if ((x / 17) % 3 != 1)
          block(g, x, y);
    for (int p = 0; p < 60; p++) {
      int x = 2 + irnd((int)w - 8), y = 2 + irnd((int)h - 8), s = irnd(5);
      rect(g, x, y, x + s, y + s);
    }
  } else if (kind == 1) {
    for (int l = 0; l < 12; l++) {
      double x = irnd((int)w), y = irnd((int)h), a = unif() * 6.283;
      for (int s = 0; s < 120; s++)
        block(g, (int)(x + s * cos(a)), (int)(y + s * sin(a)));
    }
    for (int p = 0; p < (int)(w * h / 150); p++)
      block(g, irnd((int)w), irnd((int)h));
  } else {
    for (int p = 0; p < 400; p++)
      block(g, irnd((int)w), irnd((int)h));
    for (int l = 0; l < 20; l++) {
      int x = irnd((int)w), y = irnd((int)h), n = 5 + irnd(40);
      if (l % 2)
        rect(g, x, y, x + n, y);
      else
        rect(g, x, y, x, y + n);
    }
  }
}

/* pa_sim's fields for g (sim_model.c's build_fields, with a chamfer
 * distance that is at most the Euclidean one). */
static void make_model(pa_sim_model *m, const pa_grid *g, double yaw) {
  memset(m, 0, sizeof *m);
  m->grid = *g;
  m->cos_yaw = cos(yaw);
  m->sin_yaw = sin(yaw);
  const uint32_t w = g->width, h = g->height;
  const size_t n = (size_t)w * h;
  m->blocked_words = (w + 63) / 64;
  m->blocked = calloc((size_t)m->blocked_words * h, sizeof(uint64_t));
  m->march_w = w + 2;
  m->march = calloc((size_t)m->march_w * (h + 2) + 4, 1);
  double *d = malloc(n * sizeof(double));
  for (size_t i = 0; i < n; i++) {
    size_t x = i % w, y = i / w;
    bool b = g->cells[i] >= g->occupied_min;
    if (b)
      m->blocked[y * m->blocked_words + x / 64] |= 1ull << (x % 64);
    /* outside the grid counts as blocked: the ring just outside */
    double e = (double)(x + 1 < w - x ? x + 1 : w - x);
    double f = (double)(y + 1 < h - y ? y + 1 : h - y);
    d[i] = b ? 0 : (e < f ? e : f);
  }
  const double D = 1.0; /* diagonal step 1: never more than Euclidean */
  for (int pass = 0; pass < 2; pass++)
    for (size_t k = 0; k < n; k++) {
      size_t i = pass ? n - 1 - k : k;
      int x = (int)(i % w), y = (int)(i / w);
      for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
          int xx = x + dx, yy = y + dy;
          if ((dx || dy) && xx >= 0 && yy >= 0 && xx < (int)w && yy < (int)h) {
            double c = d[(size_t)yy * w + (size_t)xx] + (dx && dy ? D : 1.0);
            d[i] = c < d[i] ? c : d[i];
          }
        }
    }
  for (size_t i = 0; i < n; i++) {
    double c = d[i];
    double s = c - 1.4143 - 1e-3 * c - 0.02;
    int code = s < 0    ? 1
               : s < 32 ? 1 + (int)floor(4 * s)
                        : 129 + (int)fmin(126, floor(s - 32));
    size_t x = i % w, y = i / w;
    m->march[(y + 1) * m->march_w + x + 1] = d[i] == 0 ? 0 : (uint8_t)code;
  }
  for (int v = 1; v < 256; v++) {
    m->march_safe[v] = v <= 128 ? (v - 1) * 0.25 : 32.0 + (v - 129);
    m->march_safeq[v] = (int32_t)(m->march_safe[v] * 1024.0);
  }
  free(d);
  m->faces = pa_sim_int_faces_build(m);
}

static void free_model(pa_sim_model *m) {
  pa_sim_int_faces_free(m->faces);
  free(m->blocked);
  free(m->march);
}

/* A free pose in world coordinates: a cell centre, or anywhere in it. */
static void pose(const pa_sim_model *m, double *x, double *y) {
  const pa_grid *g = &m->grid;
  for (;;) {
    int cx = irnd((int)g->width), cy = irnd((int)g->height);
    if (g->cells[(size_t)cy * g->width + (size_t)cx] >= g->occupied_min)
      continue;
    double fx = rnd() % 4 ? unif() : 0.5, fy = rnd() % 4 ? unif() : 0.5;
    double gx = (cx + fx) * g->resolution, gy = (cy + fy) * g->resolution;
    /* grid frame -> world (the inverse of to_grid) */
    *x = g->origin_x + m->cos_yaw * gx - m->sin_yaw * gy;
    *y = g->origin_y + m->sin_yaw * gx + m->cos_yaw * gy;
    return;
  }
}

typedef struct {
  long casts, bad;
} tally;

static void check(tally *t, const char *what, int path, bool faces, double x,
                  double y, double dx, double dy, double got, double want) {
  t->casts++;
  if (got == want)
    return;
  if (t->bad++ < 10)
    fprintf(stderr,
            "MISMATCH %s path %s faces %d from (%.17g, %.17g) along (%.17g, "
            "%.17g): %.17g, plain %.17g\n",
            what, path_names[path], faces, x, y, dx, dy, got, want);
}

enum { BEAMS = 360 };

static void run_map(tally *t, const pa_sim_model *m, int poses, double rmax) {
  double dx[BEAMS], dy[BEAMS], out[BEAMS], want[BEAMS];
  for (int p = 0; p < poses; p++) {
    double x, y;
    pose(m, &x, &y);
    const double th = unif() * 6.283185307179586;
    const bool ordered = p % 4 != 3;
    for (int i = 0; i < BEAMS; i++) {
      double a = ordered ? th - M_PI + i * (2 * M_PI / BEAMS)
                         : unif() * 6.283185307179586;
      dx[i] = cos(a);
      dy[i] = sin(a);
    }
    if (p % 16 == 5) /* along the axes (one of dx, dy zero) */
      for (int i = 0; i < BEAMS; i++) {
        dx[i] = i % 4 == 0 ? 1 : i % 4 == 2 ? -1 : 0;
        dy[i] = i % 4 == 1 ? 1 : i % 4 == 3 ? -1 : 0;
      }
    for (int i = 0; i < BEAMS; i++)
      want[i] = pa_sim_cast_plain(m, x, y, dx[i], dy[i], rmax);
    for (int path = PA_SIM_SIMD_AVX512; path < PA_SIM_SIMD_COUNT; path++) {
      if (!pa_sim_simd_has((pa_sim_simd)path))
        continue;
      pa_sim_simd_set((pa_sim_simd)path);
      for (int faces = 1; faces >= 0; faces--) {
        pa_sim_faces_set(faces);
        pa_sim_cast_fan(m, x, y, dx, dy, BEAMS, rmax, out);
        for (int i = 0; i < BEAMS; i++)
          check(t, "fan", path, faces, x, y, dx[i], dy[i], out[i], want[i]);
      }
      for (int i = 0; i < BEAMS; i += 7)
        check(t, "single", path, true, x, y, dx[i], dy[i],
              pa_sim_cast_fast(m, x, y, dx[i], dy[i], rmax), want[i]);
    }
  }
  pa_sim_simd_set(PA_SIM_SIMD_AUTO);
  pa_sim_faces_set(true);
}

int main(int argc, char **argv) {
  /* poses per map (the cross run under qemu may ask for fewer) */
  int poses = argc > 1 ? atoi(argv[1]) : 200;
  if (poses <= 0) {
    fprintf(stderr, "usage: %s [poses per map > 0]\n", argv[0]);
    return 2;
  }
  tally t = {0, 0};
  uint64_t fans0, closes0, fans1, closes1;
  pa_sim_faces_counts(&fans0, &closes0);
  static const struct {
    uint32_t w, h;
    int kind;
    double yaw, rmax;
  } maps[] = {{500, 500, 0, 0, 10.0},
              {300, 220, 1, 0.3, 8.0},
              {260, 260, 2, 0, 30.0},
              {500, 500, 0, -1.1, 25.0},
              {200, 300, 1, 0, 3.5}};
  for (size_t k = 0; k < sizeof maps / sizeof maps[0]; k++) {
    pa_grid g;
    make_map(&g, maps[k].w, maps[k].h, maps[k].kind);
    pa_sim_model m;
    make_model(&m, &g, maps[k].yaw);
    run_map(&t, &m, poses, maps[k].rmax);
    free_model(&m);
    free(g.cells);
  }
  pa_sim_faces_counts(&fans1, &closes1);
  printf("paths here:");
  for (int p = PA_SIM_SIMD_AVX512; p < PA_SIM_SIMD_COUNT; p++)
    if (pa_sim_simd_has((pa_sim_simd)p))
      printf(" %s", path_names[p]);
  printf("; auto = %s\n", path_names[pa_sim_simd_path(NULL)]);
  printf("%ld/%ld casts equal to the plain traversal (%llu fans by the face "
         "caster, %llu rays recast)\n",
         t.casts - t.bad, t.casts, (unsigned long long)(fans1 - fans0),
         (unsigned long long)(closes1 - closes0));
  if (!pa_sim_simd_has(PA_SIM_SIMD_PORTABLE)) {
    fprintf(stderr, "FAIL: no portable vector path in this build\n");
    return 1;
  }
  if (fans1 - fans0 < 100) {
    fprintf(stderr, "FAIL: the face caster cast only %llu fans\n",
            (unsigned long long)(fans1 - fans0));
    return 1;
  }
  return t.bad ? 1 : 0;
}
