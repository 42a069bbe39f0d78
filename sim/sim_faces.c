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

/* A piece: a run's part within one tile along its line. */
typedef struct {
  int32_t line, lo, hi;
  uint8_t ends; /* bit 0: lo is the run's end, bit 1: hi is */
} piece;

/* A growing list of pieces of one orientation (before the tile sort). */
typedef struct {
  piece *at;
  size_t n, cap, max;
} piece_list;

/* The run [a, v) on `line`, cut at multiples of PA_SIM_FACE_TILE; -1 when
 * out of memory or past the list's bound (the map gets no index). */
static int run_add(piece_list *p, int32_t line, int32_t a, int32_t v) {
  const int32_t T = PA_SIM_FACE_TILE;
  for (int32_t s = a; s < v;) {
    int32_t e = (s / T + 1) * T < v ? (s / T + 1) * T : v;
    if (p->n == p->cap) {
      size_t cap = p->cap ? 2 * p->cap : 4096;
      cap = cap > p->max ? p->max : cap;
      piece *at = p->n < cap ? realloc(p->at, cap * sizeof *at) : NULL;
      if (!at)
        return -1;
      p->at = at;
      p->cap = cap;
    }
    p->at[p->n++] = (piece){line, s, e, (uint8_t)((s == a) | (e == v) << 1)};
    s = e;
  }
  return 0;
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

/* The runs of orientation o, cut at the tiles (run_add). The field is
 * walked in its row order: o 2, 3 along a row (their lines); o 0, 1 a row
 * at a time, with every line's open run. */
static int collect(const grid_view *g, int o, piece_list *p) {
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
        if (run_add(p, line, a, v))
          return -1;
      }
    return 0;
  }
  int32_t *open = malloc((size_t)g->w * sizeof *open); /* -1: none */
  if (!open)
    return -1;
  for (int32_t x = 0; x < g->w; x++)
    open[x] = -1;
  int rc = 0;
  for (int32_t v = 0; v <= g->h && rc == 0; v++)
    for (int32_t line = 1; line < g->w && rc == 0; line++) {
      bool on = v < g->h && face_at(g, o, line, v);
      if (open[line] >= 0 && !on) {
        rc = run_add(p, line, open[line], v);
        open[line] = -1;
      } else if (open[line] < 0 && on) {
        open[line] = v;
      }
    }
  free(open);
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
    s->start[(size_t)(p->at[i].line / T) * tv + (size_t)(p->at[i].lo / T) +
             1]++;
  for (size_t t = 0; t < nt; t++)
    s->start[t + 1] += s->start[t];
  memcpy(at, s->start, nt * sizeof *at);
  for (size_t i = 0; i < n; i++) {
    const piece *q = &p->at[i];
    uint32_t k = at[(size_t)(q->line / T) * tv + (size_t)(q->lo / T)]++;
    s->a[k] = q->line | (int32_t)q->ends << 16;
    s->b[k] = (int32_t)((uint32_t)q->lo | (uint32_t)q->hi << 16);
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
    free(p.at);
    if (rc)
      goto fail;
  }
  return fc;
fail:
  pa_sim_int_faces_free(fc);
  return NULL;
}
