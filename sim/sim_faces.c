/* sim_faces.c - the grid's wall faces for the face caster (sim_cast_face.h):
 * every boundary between a free and a blocked cell of the padded grid, by
 * the side a ray meets it from, merged into runs along its grid line and
 * cut into pieces at the tiles' edges, stored by tile. Built once with the
 * march field, read-only after; grids up to 65535 cells a side (the
 * pieces are packed in 16-bit fields). */
#define _GNU_SOURCE
#include "sim_geom_int.h"

#include <stdlib.h>
#include <string.h>

/* A growing list of pieces of one orientation (before the tile sort). */
typedef struct {
  int32_t *line, *lo, *hi;
  uint8_t *ends;
  size_t n, cap, max;
} piece_list;

static int piece_add(piece_list *p, int32_t line, int32_t lo, int32_t hi,
                     uint8_t ends) {
  if (p->n == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 4096;
    if (cap > p->max)
      cap = p->max;
    if (p->n == cap)
      return -1; /* more pieces than the map may have: no index */
    int32_t *a = realloc(p->line, cap * sizeof *a);
    if (a)
      p->line = a;
    int32_t *b = a ? realloc(p->lo, cap * sizeof *b) : NULL;
    if (b)
      p->lo = b;
    int32_t *c = b ? realloc(p->hi, cap * sizeof *c) : NULL;
    if (c)
      p->hi = c;
    uint8_t *d = c ? realloc(p->ends, cap) : NULL;
    if (!d)
      return -1;
    p->ends = d;
    p->cap = cap;
  }
  p->line[p->n] = line;
  p->lo[p->n] = lo;
  p->hi[p->n] = hi;
  p->ends[p->n] = ends;
  p->n++;
  return 0;
}

static void piece_free(piece_list *p) {
  free(p->line);
  free(p->lo);
  free(p->hi);
  free(p->ends);
}

typedef struct {
  const uint8_t *f; /* the march field: 0 = blocked */
  int32_t w, h;     /* the padded grid */
} grid_view;

/* Outside the padded grid counts as blocked (no ray gets there). */
static inline bool blocked_at(const grid_view *g, int32_t x, int32_t y) {
  if (x < 0 || y < 0 || x >= g->w || y >= g->h)
    return true;
  return g->f[(size_t)y * (size_t)g->w + (size_t)x] == 0;
}

/* Is there a face of orientation o on grid line `line` at cell `v` along
 * it? o: 0 met by rays with dx > 0 (cell (line, v) blocked, (line - 1, v)
 * free), 1 by dx < 0 ((line - 1, v) blocked, (line, v) free), 2 by dy > 0
 * ((v, line) blocked, (v, line - 1) free), 3 by dy < 0. */
static inline bool face_at(const grid_view *g, int o, int32_t line, int32_t v) {
  int32_t a = o < 2 ? line : v, b = o < 2 ? v : line;
  int32_t pa = o < 2 ? line - 1 : v, pb = o < 2 ? v : line - 1;
  bool here = blocked_at(g, a, b), before = blocked_at(g, pa, pb);
  return o % 2 == 0 ? here && !before : before && !here;
}

/* The runs of orientation o, cut at multiples of PA_SIM_FACE_TILE along
 * their line; ends bit 0: the piece's low end is the run's, bit 1: its
 * high end. Lines of the run's own axis are walked in the field's row
 * order (o 2, 3: along a row; o 0, 1: a row at a time, every line's open
 * run kept). */
static int collect(const grid_view *g, int o, piece_list *p) {
  const int32_t T = PA_SIM_FACE_TILE;
  if (o >= 2) {
    for (int32_t line = 1; line < g->h; line++)
      for (int32_t v = 0; v < g->w;) {
        if (!face_at(g, o, line, v)) {
          v++;
          continue;
        }
        int32_t a = v;
        while (v < g->w && face_at(g, o, line, v))
          v++;
        for (int32_t s = a; s < v;) {
          int32_t e = (s / T + 1) * T < v ? (s / T + 1) * T : v;
          if (piece_add(p, line, s, e, (uint8_t)((s == a) | (e == v) << 1)))
            return -1;
          s = e;
        }
      }
    return 0;
  }
  int32_t *open = malloc((size_t)g->w * sizeof *open); /* -1: none */
  uint8_t *real = malloc((size_t)g->w);                /* low end the run's */
  if (!open || !real) {
    free(open);
    free(real);
    return -1;
  }
  for (int32_t x = 0; x < g->w; x++)
    open[x] = -1;
  int rc = 0;
  for (int32_t v = 0; v <= g->h && rc == 0; v++)
    for (int32_t line = 1; line < g->w && rc == 0; line++) {
      bool on = v < g->h && face_at(g, o, line, v);
      if (open[line] >= 0 && (!on || v % T == 0)) {
        rc = piece_add(p, line, open[line], v,
                       (uint8_t)(real[line] | (!on) << 1));
        open[line] = on ? v : -1;
        real[line] = 0;
      } else if (open[line] < 0 && on) {
        open[line] = v;
        real[line] = 1;
      }
    }
  free(open);
  free(real);
  return rc;
}

void pa_sim_int_faces_free(pa_sim_faces *fc) {
  if (!fc)
    return;
  for (int o = 0; o < 4; o++) {
    free(fc->o[o].a);
    free(fc->o[o].b);
    free(fc->o[o].start);
  }
  free(fc);
}

/* Sorts orientation o's pieces into tiles (line / T, lo / T), counting, and
 * packs them. */
static int by_tile(pa_sim_faces *fc, int o, const piece_list *p) {
  const int32_t T = PA_SIM_FACE_TILE;
  pa_sim_face_set *s = &fc->o[o];
  const uint32_t tl = o < 2 ? fc->tiles_x : fc->tiles_y;
  const uint32_t tv = o < 2 ? fc->tiles_y : fc->tiles_x;
  size_t nt = (size_t)tl * tv, n = p->n;
  s->tiles_v = tv;
  s->count = (uint32_t)n;
  s->start = calloc(nt + 1, sizeof *s->start);
  /* + slack: the caster copies faces 16 at a time */
  s->a = calloc(n + 16, sizeof *s->a);
  s->b = calloc(n + 16, sizeof *s->b);
  uint32_t *at = malloc(nt * sizeof *at);
  if (!s->start || !s->a || !s->b || !at) {
    free(at);
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    s->start[(size_t)(p->line[i] / T) * tv + (size_t)(p->lo[i] / T) + 1]++;
  for (size_t t = 0; t < nt; t++)
    s->start[t + 1] += s->start[t];
  memcpy(at, s->start, nt * sizeof *at);
  for (size_t i = 0; i < n; i++) {
    uint32_t k = at[(size_t)(p->line[i] / T) * tv + (size_t)(p->lo[i] / T)]++;
    s->a[k] = p->line[i] | (int32_t)p->ends[i] << 16;
    s->b[k] = (int32_t)((uint32_t)p->lo[i] | (uint32_t)p->hi[i] << 16);
  }
  free(at);
  return 0;
}

pa_sim_faces *pa_sim_int_faces_build(const pa_sim_model *m) {
  const grid_view g = {m->march, (int32_t)m->march_w,
                       (int32_t)m->grid.height + 2};
  const int32_t T = PA_SIM_FACE_TILE;
  /* At most one piece per 16 cells an orientation (a checkerboard has one
   * per cell): beyond that the march caster serves the map alone. */
  size_t cells = (size_t)g.w * (size_t)g.h;
  pa_sim_faces *fc = calloc(1, sizeof *fc);
  if (!fc || g.w > 65535 || g.h > 65535) /* packed in 16 bits */
    goto fail;
  fc->tiles_x = (uint32_t)(g.w / T + 2);
  fc->tiles_y = (uint32_t)(g.h / T + 2);
  for (int o = 0; o < 4; o++) {
    piece_list p = {.max = cells / 16 + 64};
    int rc = collect(&g, o, &p);
    if (rc == 0)
      rc = by_tile(fc, o, &p);
    piece_free(&p);
    if (rc)
      goto fail;
  }
  return fc;
fail:
  pa_sim_int_faces_free(fc);
  return NULL;
}
