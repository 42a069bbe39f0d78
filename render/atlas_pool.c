/* atlas_pool.c - one batch of head cameras drawn by several GL contexts at
 * once (pa_render_atlas.h). On llvmpipe a context's own work (vertex
 * shading, set-up, binning) runs on the thread that calls GL, and for small
 * tiles it is most of a batch: one context keeps about one core busy
 * whatever its rasteriser threads do. Each helper is a thread with its own
 * EGL context (on llvmpipe its own screen, whose rasteriser the caller's
 * context never waits for: pa_render_egl_create_helper), its own copy of
 * the scene and its own atlas; it draws the
 * last tiles while the caller draws the first ones, each tile where one
 * atlas for the whole batch puts it, so the bytes are that atlas's.
 *
 * Which tiles each context draws follows the last batches' times
 * (pa_render_atlas_pool_balance): the first tiles of a batch may see more
 * than the last ones (a crowd in one corner of the world), and a helper
 * starts a wake-up later than the caller. The split is by tile, not by row:
 * both contexts then clear and read back the row they share, which costs
 * far less than a row's worth of imbalance. */
#define _GNU_SOURCE
#include "pa_render_atlas.h"
#include "render_int.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { JOB_NONE, JOB_START, JOB_BUILD, JOB_DRAW, JOB_QUIT };

typedef struct helper {
  const char *renderer; /* the caller's */
  bool own;             /* on a display of its own (the first helper) */
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int job; /* posted, JOB_NONE once done */
  bool up; /* its context works */
  int rc;  /* of the last job */
  char err[256];
  pa_render_egl *egl;
  pa_render_scene *scene;
  pa_render_atlas *atlas;
  /* JOB_BUILD */
  const pa_grid *g;
  const pa_robot_info *robots;
  uint32_t robot_count;
  const pa_obstacle_info *obstacles;
  uint32_t obstacle_count;
  /* JOB_DRAW: views [t0, t1) of n, tiles w x h */
  const pa_render_view *views;
  const bool *draw;
  uint32_t n, t0, t1, w, h;
  uint8_t *rgb;
  int64_t done_ns; /* when its last job was done (CLOCK_MONOTONIC) */
} helper;

struct pa_render_atlas_pool {
  uint32_t count;     /* helpers started */
  char renderer[128]; /* the caller's GL_RENDERER */
  uint64_t key;       /* their scenes' (pa_render_atlas_pool_build), 0: none */
  helper h[PA_RENDER_ATLAS_POOL_MAX];
  /* the split of the next batch of n_split tiles into parts_split parts
   * (0: none yet; an even split by rows first) */
  uint32_t n_split, parts_split;
  uint32_t ends[PA_RENDER_ATLAS_POOL_MAX + 2];
  bool fixed; /* ends set by pa_render_atlas_pool_set_ends: kept */
};

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int helper_draw(helper *h) {
  if (h->atlas && (pa_render_atlas_width(h->atlas) != h->w ||
                   pa_render_atlas_height(h->atlas) != h->h)) {
    pa_render_atlas_free(h->atlas);
    h->atlas = NULL;
  }
  if (!h->atlas &&
      pa_render_atlas_create(&h->atlas, h->w, h->h, h->err, sizeof h->err) < 0)
    return -1;
  return pa_render_atlas_render_part(h->atlas, h->scene, h->views, h->draw,
                                     h->n, h->t0, h->t1, h->rgb, h->err,
                                     sizeof h->err);
}

static int helper_build(helper *h) {
  pa_render_atlas_free(h->atlas); /* its meshes were read from the old one */
  h->atlas = NULL;
  pa_render_scene_free(h->scene);
  h->scene = NULL;
  return pa_render_scene_build(&h->scene, h->g, h->robots, h->robot_count,
                               h->obstacles, h->obstacle_count, h->err,
                               sizeof h->err);
}

/* Waits for job != JOB_NONE, runs it, clears it (under mu). */
static void *helper_main(void *arg) {
  helper *h = arg;
  int rc = pa_render_egl_create_helper(&h->egl, h->renderer, h->own, h->err,
                                       sizeof h->err);
  pthread_mutex_lock(&h->mu);
  h->up = rc == 0;
  h->job = JOB_NONE; /* the start is done */
  pthread_cond_broadcast(&h->cv);
  while (h->up) {
    while (h->job == JOB_NONE)
      pthread_cond_wait(&h->cv, &h->mu);
    int job = h->job;
    if (job == JOB_QUIT)
      break;
    pthread_mutex_unlock(&h->mu);
    int r = job == JOB_BUILD ? helper_build(h) : helper_draw(h);
    int64_t done = now_ns();
    pthread_mutex_lock(&h->mu);
    h->rc = r;
    h->done_ns = done;
    h->job = JOB_NONE;
    pthread_cond_broadcast(&h->cv);
  }
  pthread_mutex_unlock(&h->mu);
  pa_render_atlas_free(h->atlas);
  pa_render_scene_free(h->scene);
  pa_render_egl_destroy(h->egl);
  return NULL;
}

static void post(helper *h, int job) {
  pthread_mutex_lock(&h->mu);
  h->job = job;
  pthread_cond_broadcast(&h->cv);
  pthread_mutex_unlock(&h->mu);
}

/* The job's rc once it is done. */
static int finish(helper *h) {
  pthread_mutex_lock(&h->mu);
  while (h->job != JOB_NONE)
    pthread_cond_wait(&h->cv, &h->mu);
  int rc = h->rc;
  pthread_mutex_unlock(&h->mu);
  return rc;
}

int pa_render_atlas_pool_create(pa_render_atlas_pool **out, uint32_t helpers,
                                char *err, size_t err_sz) {
  *out = NULL;
  if (helpers > PA_RENDER_ATLAS_POOL_MAX) {
    snprintf(err, err_sz, "atlas pool: %u helpers is more than %d", helpers,
             PA_RENDER_ATLAS_POOL_MAX);
    return -1;
  }
  pa_render_atlas_pool *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(err, err_sz, "atlas pool: out of memory");
    return -1;
  }
  /* One at a time, the caller waiting: a helper's context is made while
   * no other thread calls GL (the GL entry points are loaded again) or
   * reads the environment (pa_render_egl_create_helper). */
  snprintf(p->renderer, sizeof p->renderer, "%s", pa_render_gl_renderer());
  for (uint32_t i = 0; i < helpers; i++) {
    helper *h = &p->h[i];
    h->renderer = p->renderer;
    h->own = i == 0; /* one such display a process (EGL's device platform) */
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    h->job = JOB_START; /* JOB_NONE: started */
    /* signals (a stop) stay the caller's: its waits are what they cut */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&h->th, NULL, helper_main, h);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
      pthread_mutex_destroy(&h->mu);
      pthread_cond_destroy(&h->cv);
      snprintf(err, err_sz, "atlas pool: cannot start a thread");
      pa_render_atlas_pool_free(p);
      return -1;
    }
    p->count++;
    finish(h);
    if (!h->up) {
      snprintf(err, err_sz, "atlas pool: a helper's context: %s", h->err);
      pa_render_atlas_pool_free(p);
      return -1;
    }
  }
  *out = p;
  return 0;
}

void pa_render_atlas_pool_free(pa_render_atlas_pool *p) {
  if (!p)
    return;
  for (uint32_t i = 0; i < p->count; i++) {
    helper *h = &p->h[i];
    post(h, JOB_QUIT);
    pthread_join(h->th, NULL);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
  }
  free(p);
}

uint32_t pa_render_atlas_pool_helpers(const pa_render_atlas_pool *p) {
  return p ? p->count : 0;
}

uint64_t pa_render_atlas_pool_key(const pa_render_atlas_pool *p) {
  return p ? p->key : 0;
}

int pa_render_atlas_pool_build(pa_render_atlas_pool *p, const pa_grid *g,
                               const pa_robot_info *robots,
                               uint32_t robot_count,
                               const pa_obstacle_info *obstacles,
                               uint32_t obstacle_count, uint64_t key, char *err,
                               size_t err_sz) {
  p->key = 0;
  for (uint32_t i = 0; i < p->count; i++) { /* the helpers build at once */
    helper *h = &p->h[i];
    h->g = g, h->robots = robots, h->robot_count = robot_count;
    h->obstacles = obstacles, h->obstacle_count = obstacle_count;
    post(h, JOB_BUILD);
  }
  int rc = 0;
  for (uint32_t i = 0; i < p->count; i++)
    if (finish(&p->h[i]) < 0 && rc == 0) {
      snprintf(err, err_sz, "atlas pool: %s", p->h[i].err);
      rc = -1;
    }
  if (rc == 0)
    p->key = key;
  return rc;
}

void pa_render_atlas_pool_balance(uint32_t *ends, uint32_t parts,
                                  const int64_t *ns) {
  uint32_t n = ends[parts];
  if (parts < 2 || parts > PA_RENDER_ATLAS_POOL_MAX + 1 || n < parts)
    return;
  /* each part's speed in tiles a ns at its last batch */
  double speed[PA_RENDER_ATLAS_POOL_MAX + 1], sum = 0;
  for (uint32_t k = 0; k < parts; k++) {
    if (ends[k + 1] <= ends[k] || ns[k] <= 0)
      return; /* nothing to go by */
    speed[k] = (double)(ends[k + 1] - ends[k]) / (double)ns[k];
    sum += speed[k];
  }
  /* the ends at which every part would have taken as long; each end moves
   * half the way there, by whole tiles, and stays unless it would move by
   * more than half a tile (a batch's times vary by more than that) */
  double want = 0;
  uint32_t next[PA_RENDER_ATLAS_POOL_MAX + 2];
  next[0] = 0, next[parts] = n;
  for (uint32_t k = 1; k < parts; k++) {
    want += (double)n * speed[k - 1] / sum;
    double to = ((double)ends[k] + want) / 2;
    next[k] = fabs(to - (double)ends[k]) > 0.5 ? (uint32_t)lround(to) : ends[k];
  }
  /* at least one tile a part */
  for (uint32_t k = 1; k < parts; k++)
    if (next[k] < next[k - 1] + 1)
      next[k] = next[k - 1] + 1;
  for (uint32_t k = parts - 1; k >= 1; k--)
    if (next[k] > next[k + 1] - 1)
      next[k] = next[k + 1] - 1;
  for (uint32_t k = 1; k < parts; k++)
    ends[k] = next[k];
}

int pa_render_atlas_pool_set_ends(pa_render_atlas_pool *p, uint32_t n,
                                  uint32_t parts, const uint32_t *ends) {
  if (!p)
    return -1;
  if (parts == 0) { /* back to the balanced split */
    p->fixed = false, p->n_split = 0;
    return 0;
  }
  if (parts < 2 || parts > p->count + 1 || ends[0] != 0 || ends[parts] != n)
    return -1;
  for (uint32_t k = 0; k < parts; k++)
    if (ends[k + 1] <= ends[k])
      return -1;
  for (uint32_t k = 0; k <= parts; k++)
    p->ends[k] = ends[k];
  p->n_split = n, p->parts_split = parts, p->fixed = true;
  return 0;
}

uint32_t pa_render_atlas_pool_ends(const pa_render_atlas_pool *p,
                                   uint32_t *ends) {
  if (!p || !p->n_split)
    return 0;
  for (uint32_t k = 0; k <= p->parts_split; k++)
    ends[k] = p->ends[k];
  return p->parts_split;
}

int pa_render_atlas_pool_render(pa_render_atlas_pool *p, pa_render_atlas *a,
                                pa_render_scene *s, const pa_render_view *views,
                                const bool *draw, uint32_t n, uint8_t *rgb,
                                char *err, size_t err_sz) {
  uint32_t cols = n ? pa_render_atlas_columns(a, n) : 1;
  uint32_t rows = n ? (n + cols - 1) / cols : 0;
  uint32_t parts = p && p->key ? p->count + 1 : 1;
  if (parts > rows)
    parts = rows;
  if (parts < 2 || n > pa_render_atlas_tiles_per_pass(a) ||
      n > PA_RENDER_ATLAS_MAX_TILES)
    return pa_render_atlas_render(a, s, views, draw, n, rgb, err, err_sz);
  uint32_t *ends = p->ends;
  if (p->n_split != n || p->parts_split != parts) {
    /* rows of tiles evenly, the caller the first ones; then by the times */
    for (uint32_t k = 0; k <= parts; k++) {
      uint32_t t = rows * k / parts * cols;
      ends[k] = t < n ? t : n;
    }
    p->n_split = n, p->parts_split = parts, p->fixed = false;
  }
  int64_t t0 = now_ns();
  for (uint32_t k = 1; k < parts; k++) {
    helper *h = &p->h[k - 1];
    /* the helper is idle: its scene is ours to set */
    pa_render_scene_copy_state(h->scene, s);
    h->views = views, h->draw = draw, h->n = n;
    h->t0 = ends[k], h->t1 = ends[k + 1];
    h->w = pa_render_atlas_width(a), h->h = pa_render_atlas_height(a);
    h->rgb = rgb;
    post(h, JOB_DRAW);
  }
  int rc = pa_render_atlas_render_part(a, s, views, draw, n, 0, ends[1], rgb,
                                       err, err_sz);
  int64_t ns[PA_RENDER_ATLAS_POOL_MAX + 1];
  ns[0] = now_ns() - t0;
  for (uint32_t k = 1; k < parts; k++) {
    if (finish(&p->h[k - 1]) < 0 && rc == 0) {
      snprintf(err, err_sz, "%s", p->h[k - 1].err);
      rc = -1;
    }
    ns[k] = p->h[k - 1].done_ns - t0;
  }
  if (rc == 0 && !p->fixed)
    pa_render_atlas_pool_balance(ends, parts, ns);
  return rc;
}
