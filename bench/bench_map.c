/*
 * bench_map.c - load + distance transform of the default map and of a
 * generated 4000 x 4000 map (written to a temp PNG first). Prints ms and MB.
 * Targets: default < 20 ms, 4000 x 4000 < 1.5 s.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pa_map.h"
#include "pa_map_int.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Best of n runs of load (+ distance field) for one map def. */
static int run(const char *label, const pa_map_def *def, int n) {
  char err[1024];
  double best_load = 1e30, best_dist = 1e30, best_total = 1e30;
  size_t mb = 0;
  for (int i = 0; i < n; i++) {
    pa_grid g;
    pa_dist d;
    double t0 = now_ms();
    if (pa_map_load(def, &g, err, sizeof err)) {
      fprintf(stderr, "bench-map: %s\n", err);
      return -1;
    }
    double t1 = now_ms();
    if (pa_dist_build(&g, true, &d, err, sizeof err)) {
      fprintf(stderr, "bench-map: %s\n", err);
      pa_grid_free(&g);
      return -1;
    }
    double t2 = now_ms();
    if (t1 - t0 < best_load) best_load = t1 - t0;
    if (t2 - t1 < best_dist) best_dist = t2 - t1;
    if (t2 - t0 < best_total) best_total = t2 - t0;
    size_t cells = (size_t)g.width * g.height;
    mb = cells * (sizeof(int8_t) + sizeof(float));
    pa_dist_free(&d);
    pa_grid_free(&g);
  }
  printf("%-22s load %8.2f ms  dist %8.2f ms  total %8.2f ms  grid+dist %7.1f MB"
         "  (best of %d)\n",
         label, best_load, best_dist, best_total, mb / 1048576.0, n);
  return 0;
}

int main(void) {
  pa_map_def def = pa_map_def_default();
  if (run("default 500x500", &def, 20)) return 1;

  /* A 4000 x 4000 map: walls, rooms and random clutter. */
  const int N = 4000;
  unsigned char *px = malloc((size_t)N * N);
  if (!px) return 1;
  memset(px, 254, (size_t)N * N);
  srand(1);
  for (int y = 0; y < N; y++)
    for (int x = 0; x < N; x++)
      if (x < 8 || y < 8 || x >= N - 8 || y >= N - 8 ||
          ((x % 400) < 4 && (y % 400) > 60) || ((y % 400) < 4 && (x % 400) > 60))
        px[(size_t)y * N + x] = 0;
  for (int k = 0; k < 3000; k++) {
    int cx = rand() % N, cy = rand() % N, r = 3 + rand() % 20;
    for (int y = cy - r; y <= cy + r; y++)
      for (int x = cx - r; x <= cx + r; x++)
        if (x >= 0 && y >= 0 && x < N && y < N &&
            (x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r)
          px[(size_t)y * N + x] = (k % 7 == 0) ? 205 : 0;
  }
  char dir[] = "/tmp/bench-map-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char png[64];
  snprintf(png, sizeof png, "%s/big.png", dir);
  if (pa_map_img_write_png(png, N, N, px)) {
    fprintf(stderr, "bench-map: cannot write %s\n", png);
    return 1;
  }
  free(px);
  pa_map_def big = pa_map_def_default();
  snprintf(big.image, sizeof big.image, "%s", png);
  big.resolution = 0.05;
  big.origin[0] = big.origin[1] = 0;
  int rc = run("generated 4000x4000", &big, 3);
  unlink(png);
  rmdir(dir);
  return rc ? 1 : 0;
}
