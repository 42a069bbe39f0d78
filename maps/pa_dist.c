/*
 * pa_dist.c - exact Euclidean distance transform of the blocked cells
 * (Felzenszwalb & Huttenlocher, "Distance Transforms of Sampled Functions",
 * Theory of Computing 8, 2012): a 1-D pass down the columns, then the lower
 * envelope of parabolas along each row.
 *
 * Outside the grid counts as blocked: a virtual blocked ring one cell outside
 * the border is enough, because the nearest outside cell is always in it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pa_map_int.h"

/* Lower envelope of parabolas y = f[q] + (x - q)^2 for sites q = 0..n-1
 * (every f finite), evaluated at x = 1..n-2 into out[0..n-3]. Integer
 * arithmetic for f, so the squared distances come out exact. */
static void envelope(const uint32_t *f, int n, int *v, double *z, float *out,
                     double res) {
  int k = 0;
  v[0] = 0;
  z[0] = -HUGE_VAL;
  z[1] = HUGE_VAL;
  for (int q = 1; q < n; q++) {
    double s;
    for (;;) {
      int p = v[k];
      int64_t num = ((int64_t)f[q] + (int64_t)q * q) -
                    ((int64_t)f[p] + (int64_t)p * p);
      s = (double)num / (2.0 * (q - p));
      if (s > z[k]) break; /* z[0] = -inf ends the loop at k = 0 */
      k--;
    }
    k++;
    v[k] = q;
    z[k] = s;
    z[k + 1] = HUGE_VAL;
  }
  k = 0;
  for (int x = 1; x < n - 1; x++) {
    while (z[k + 1] < x) k++;
    int p = v[k];
    int64_t d2 = (int64_t)(x - p) * (x - p) + f[p];
    out[x - 1] = (float)(sqrt((double)d2) * res);
  }
}

int pa_dist_build(const pa_grid *g, bool unknown_blocks, pa_dist *out,
                  char *err, size_t err_sz) {
  memset(out, 0, sizeof *out);
  if (!g || !g->cells || !g->width || !g->height) {
    snprintf(err, err_sz, "distance field: empty grid");
    return -1;
  }
  /* Column distances are <= h / 2 + 1, so their squares fit uint32_t. */
  if (g->width > 65535 || g->height > 65535) {
    snprintf(err, err_sz, "distance field: grid over 65535 cells a side");
    return -1;
  }
  size_t w = g->width, h = g->height, n = w * h;
  float *d = malloc(n * sizeof *d);
  uint32_t *col = malloc(n * sizeof *col);
  uint32_t *f = malloc((w + 2) * sizeof *f);
  int *v = malloc((w + 2) * sizeof *v);
  double *z = malloc((w + 3) * sizeof *z);
  if (!d || !col || !f || !v || !z) {
    free(d);
    free(col);
    free(f);
    free(v);
    free(z);
    snprintf(err, err_sz, "distance field: out of memory for %zu x %zu", w, h);
    return -1;
  }
  /* Column pass, row by row for cache locality: distance (in cells) to the
   * nearest blocked cell above or below, the virtual rows -1 and h included. */
  int8_t om = g->occupied_min;
  for (size_t y = 0; y < h; y++) {
    const int8_t *c = g->cells + y * w;
    uint32_t *r = col + y * w;
    const uint32_t *prev = y ? col + (y - 1) * w : NULL;
    for (size_t x = 0; x < w; x++) {
      int8_t cv = c[x];
      bool b = cv < 0 ? unknown_blocks : cv >= om;
      r[x] = b ? 0 : (prev ? prev[x] + 1 : 1);
    }
  }
  for (size_t y = h; y-- > 0;) {
    uint32_t *r = col + y * w;
    const uint32_t *next = (y + 1 < h) ? col + (y + 1) * w : NULL;
    for (size_t x = 0; x < w; x++) {
      uint32_t below = next ? next[x] + 1 : 1;
      if (below < r[x]) r[x] = below;
    }
  }
  /* Row pass: sites -1 and w are the blocked ring (f = 0). */
  for (size_t y = 0; y < h; y++) {
    const uint32_t *r = col + y * w;
    f[0] = 0;
    for (size_t x = 0; x < w; x++) f[x + 1] = r[x] * r[x];
    f[w + 1] = 0;
    envelope(f, (int)(w + 2), v, z, d + y * w, g->resolution);
  }
  free(col);
  free(f);
  free(v);
  free(z);
  out->width = g->width;
  out->height = g->height;
  out->resolution = g->resolution;
  out->d = d;
  return 0;
}

void pa_dist_free(pa_dist *d) {
  if (!d) return;
  free(d->d);
  d->d = NULL;
  d->width = d->height = 0;
}
