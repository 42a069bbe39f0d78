/* pa_scenario.c - the built-in named scenarios (OceanSim's set_scenario
 * {"scenario": NAME, "seed": N}): generated maps, the same name and seed
 * giving the same cells. One row per scenario; world (0, 0) is kept clear in
 * every one, so a robot starting there starts in the open. */
#include "../common/pa_rng.h"
#include "pa_map.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define RES 0.05 /* [m/cell] of every scenario */

typedef struct gen {
  pa_grid g;
  uint64_t rng;
  long W, H, t; /* cells; wall thickness */
} gen;

static double uni(gen *s, double lo, double hi) {
  return lo + (hi - lo) * pa_splitmix64_unit(&s->rng);
}

static long cells(double m) { return lround(m / RES); }

/* Fills [x0, x1) x [y0, y1) in metres from the map's bottom-left corner. */
static void box(gen *s, double x0, double y0, double x1, double y1, int8_t v) {
  long a = cells(x0), b = cells(y0), c = cells(x1), d = cells(y1);
  a = a < 0 ? 0 : a;
  b = b < 0 ? 0 : b;
  c = c > s->W ? s->W : c;
  d = d > s->H ? s->H : d;
  for (long y = b; y < d; y++)
    for (long x = a; x < c; x++)
      s->g.cells[(size_t)y * (size_t)s->W + (size_t)x] = v;
}

static void disc(gen *s, double cx, double cy, double r) {
  for (long y = cells(cy - r) - 1; y <= cells(cy + r) + 1; y++)
    for (long x = cells(cx - r) - 1; x <= cells(cx + r) + 1; x++) {
      double dx = (x + 0.5) * RES - cx, dy = (y + 0.5) * RES - cy;
      if (x >= 0 && y >= 0 && x < s->W && y < s->H &&
          dx * dx + dy * dy <= r * r)
        s->g.cells[(size_t)y * (size_t)s->W + (size_t)x] = PA_CELL_OCCUPIED;
    }
}

/* A w x h m map with outer walls; world (0, 0) at (ox, oy) m from its
 * bottom-left corner. */
static int begin(gen *s, uint64_t seed, const char *name, double w, double h,
                 double ox, double oy, char *err, size_t err_sz) {
  memset(s, 0, sizeof *s);
  s->W = cells(w);
  s->H = cells(h);
  s->t = cells(0.1);
  s->rng = seed ^ 0x7363656e65ull;    /* "scene" */
  for (const char *p = name; *p; p++) /* each scenario its own stream */
    s->rng = s->rng * 131 + (unsigned char)*p;
  s->g.width = (uint32_t)s->W;
  s->g.height = (uint32_t)s->H;
  s->g.resolution = RES;
  s->g.occupied_min = PA_CELL_OCCUPIED;
  s->g.origin_x = -ox;
  s->g.origin_y = -oy;
  s->g.cells = calloc((size_t)s->W * (size_t)s->H, 1);
  if (!s->g.cells) {
    snprintf(err, err_sz, "scenario %s: out of memory", name);
    return -1;
  }
  box(s, 0, 0, w, 0.1, PA_CELL_OCCUPIED);
  box(s, 0, h - 0.1, w, h, PA_CELL_OCCUPIED);
  box(s, 0, 0, 0.1, h, PA_CELL_OCCUPIED);
  box(s, w - 0.1, 0, w, h, PA_CELL_OCCUPIED);
  return 0;
}

static void empty(gen *s) { (void)s; }

/* Baffles from the floor and the ceiling in turn, gaps of 0.75-1.05 m. */
static void narrow(gen *s) {
  const double h = 6.0;
  for (double x = 3.0; x < 22.0; x += uni(s, 2.0, 3.0)) {
    double gap = uni(s, 0.75, 1.05), at = uni(s, 0.6, h - 0.6 - gap);
    box(s, x, 0, x + 0.1, at, PA_CELL_OCCUPIED);
    box(s, x, at + gap, x + 0.1, h, PA_CELL_OCCUPIED);
  }
}

/* A 9 x 9 perfect maze of 1.2 m cells (depth-first, seeded). */
#define MAZE_N 9
static void maze(gen *s) {
  const double c = 1.2;
  /* walls of every cell: bit 0 east, bit 1 north */
  unsigned char wall[MAZE_N][MAZE_N], seen[MAZE_N][MAZE_N] = {{0}};
  memset(wall, 3, sizeof wall);
  int stack[MAZE_N * MAZE_N][2], top = 0;
  stack[top][0] = MAZE_N / 2, stack[top][1] = MAZE_N / 2, top++;
  seen[MAZE_N / 2][MAZE_N / 2] = 1;
  static const int dir[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
  while (top) {
    int x = stack[top - 1][0], y = stack[top - 1][1], opts[4], n = 0;
    for (int k = 0; k < 4; k++) {
      int nx = x + dir[k][0], ny = y + dir[k][1];
      if (nx >= 0 && ny >= 0 && nx < MAZE_N && ny < MAZE_N && !seen[nx][ny])
        opts[n++] = k;
    }
    if (!n) {
      top--;
      continue;
    }
    int k = opts[(int)uni(s, 0, n)];
    int nx = x + dir[k][0], ny = y + dir[k][1];
    if (k == 0)
      wall[x][y] &= (unsigned char)~1u;
    else if (k == 1)
      wall[nx][ny] &= (unsigned char)~1u;
    else if (k == 2)
      wall[x][y] &= (unsigned char)~2u;
    else
      wall[nx][ny] &= (unsigned char)~2u;
    seen[nx][ny] = 1;
    stack[top][0] = nx, stack[top][1] = ny, top++;
  }
  for (int x = 0; x < MAZE_N; x++)
    for (int y = 0; y < MAZE_N; y++) {
      if ((wall[x][y] & 1) && x < MAZE_N - 1)
        box(s, (x + 1) * c - 0.05, y * c, (x + 1) * c + 0.05,
            (y + 1) * c + 0.05, PA_CELL_OCCUPIED);
      if ((wall[x][y] & 2) && y < MAZE_N - 1)
        box(s, x * c, (y + 1) * c - 0.05, (x + 1) * c + 0.05,
            (y + 1) * c + 0.05, PA_CELL_OCCUPIED);
    }
}

/* A 2 m corridor along the middle, rooms of 3 m on both sides, each with a
 * 0.9 m door at a seeded place. */
static void corridor(gen *s) {
  const double len = 30.0, y0 = 2.0, y1 = 4.0;
  box(s, 0, y0 - 0.05, len, y0 + 0.05, PA_CELL_OCCUPIED);
  box(s, 0, y1 - 0.05, len, y1 + 0.05, PA_CELL_OCCUPIED);
  for (double x = 0; x < len - 0.1; x += 3.0) {
    if (x > 0) {
      box(s, x - 0.05, 0, x + 0.05, y0, PA_CELL_OCCUPIED);
      box(s, x - 0.05, y1, x + 0.05, 6.0, PA_CELL_OCCUPIED);
    }
    double d = x + uni(s, 0.3, 3.0 - 0.3 - 0.9);
    box(s, d, y0 - 0.05, d + 0.9, y0 + 0.05, PA_CELL_FREE);
    d = x + uni(s, 0.3, 3.0 - 0.3 - 0.9);
    box(s, d, y1 - 0.05, d + 0.9, y1 + 0.05, PA_CELL_FREE);
  }
}

/* Rows of 0.8 m shelves with 2.2 m aisles, cut by seeded cross aisles;
 * seeded pallets in the aisles' far halves. */
static void warehouse(gen *s) {
  for (double y = 3.0; y < 18.0; y += 3.0) {
    double cut = uni(s, 6.0, 22.0), cut2 = uni(s, 6.0, 22.0);
    for (double x = 3.0; x < 27.0; x += 0.5) {
      bool open = (x + 0.5 > cut && x < cut + 2.0) ||
                  (x + 0.5 > cut2 && x < cut2 + 2.0);
      if (!open)
        box(s, x, y, x + 0.5, y + 0.8, PA_CELL_OCCUPIED);
    }
  }
  for (int k = 0; k < 8; k++) {
    double x = uni(s, 15.0, 26.0), y = 3.0 * (int)uni(s, 1, 6) - 1.4;
    box(s, x, y, x + 1.2, y + 0.8, PA_CELL_OCCUPIED);
  }
}

/* Trees: 70 discs of 0.1-0.35 m, none within 1.2 m of the origin. */
static void forest(gen *s) {
  for (int k = 0; k < 70; k++) {
    double x = uni(s, 0.6, 19.4), y = uni(s, 0.6, 19.4);
    double r = uni(s, 0.1, 0.35);
    if (hypot(x - 10.0, y - 10.0) < 1.2 + r)
      continue;
    disc(s, x, y, r);
  }
}

static void rooms(gen *s) { (void)s; } /* pa_map_generate's building */

typedef struct scenario {
  const char *name, *about;
  double w, h, ox, oy; /* [m]: size; world (0, 0) from the bottom-left */
  void (*make)(gen *s);
} scenario;

static const scenario scenarios[] = {
    {"Empty", "a 12 x 12 m room, walls only", 12, 12, 6, 6, empty},
    {"Rooms", "a 20 x 15 m building of 3 x 2 rooms with doors and boxes", 20,
     15, 0, 0, rooms},
    {"NarrowMap", "a 24 x 6 m hall of staggered baffles, gaps 0.75-1.05 m", 24,
     6, 1.5, 3, narrow},
    {"Maze", "a 9 x 9 maze of 1.2 m cells", 10.8, 10.8, 5.4, 5.4, maze},
    {"Corridor", "a 30 m corridor, 2 m wide, with rooms on both sides", 30, 6,
     1.5, 3, corridor},
    {"Warehouse", "30 x 20 m: rows of shelves, aisles 2.2 m, pallets", 30, 20,
     1.5, 1.5, warehouse},
    {"Forest", "20 x 20 m of random round trees", 20, 20, 10, 10, forest},
};
#define N_SCENARIOS (sizeof scenarios / sizeof scenarios[0])

const char *pa_scenario_name(int i) {
  return i >= 0 && (size_t)i < N_SCENARIOS ? scenarios[i].name : NULL;
}

const char *pa_scenario_about(int i) {
  return i >= 0 && (size_t)i < N_SCENARIOS ? scenarios[i].about : NULL;
}

int pa_scenario_find(const char *name) {
  for (size_t i = 0; i < N_SCENARIOS; i++)
    if (!strcasecmp(name, scenarios[i].name))
      return (int)i;
  return -1;
}

int pa_scenario_generate(int id, uint64_t seed, pa_grid *out, char *err,
                         size_t err_sz) {
  memset(out, 0, sizeof *out);
  if (id < 0 || (size_t)id >= N_SCENARIOS) {
    snprintf(err, err_sz, "no built-in scenario %d", id);
    return -1;
  }
  const scenario *sc = &scenarios[id];
  if (sc->make == rooms) {
    pa_mapgen p = pa_mapgen_default();
    p.seed = seed;
    return pa_map_generate(&p, out, err, err_sz);
  }
  gen s;
  if (begin(&s, seed, sc->name, sc->w, sc->h, sc->ox, sc->oy, err, err_sz))
    return -1;
  sc->make(&s);
  /* the origin's surroundings stay clear (a robot of up to 0.4 m) */
  box(&s, sc->ox - 0.45, sc->oy - 0.45, sc->ox + 0.45, sc->oy + 0.45,
      PA_CELL_FREE);
  *out = s.g;
  return 0;
}
