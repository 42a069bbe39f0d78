/* atlas_serve.c - camera_batch in pa-render: read the request pa-netgw
 * wrote into the atlas segment, draw the robots' head cameras from the
 * newest tick into one atlas and write the tiles straight into the
 * segment, then mark the request done (pa_layout.h, pa_atlas_seg). */
#define _GNU_SOURCE
#include "render_atlas.h"

#include "pa_render_atlas.h"

#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct pa_atlas_srv {
  pa_shm_seg seg;
  pa_atlas_seg *a;
  pa_render_atlas *atlas;
  pa_render_view *views; /* [cap] */
  bool *draw;
  uint32_t cap;
};

int pa_atlas_srv_open(pa_atlas_srv **out, pa_stack *st, char *err,
                      size_t err_sz) {
  *out = NULL;
  pa_atlas_srv *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, err_sz, "atlas: out of memory");
    return -1;
  }
  if (pa_stack_atlas_open(st, &s->seg, &s->a, err, err_sz) != 0) {
    free(s);
    return -1;
  }
  __atomic_store_n(&s->a->render_pid, (int32_t)getpid(), __ATOMIC_RELEASE);
  *out = s;
  return 0;
}

void pa_atlas_srv_close(pa_atlas_srv *s) {
  if (!s)
    return;
  int32_t me = (int32_t)getpid();
  __atomic_compare_exchange_n(&s->a->render_pid, &me, 0, false,
                              __ATOMIC_RELEASE, __ATOMIC_RELAXED);
  pa_render_atlas_free(s->atlas);
  pa_shm_detach(&s->seg);
  free(s->views);
  free(s->draw);
  free(s);
}

/* The request under its seqlock, or false when none is complete and new. */
static bool read_request(const pa_atlas_seg *a, pa_atlas_seg *r) {
  uint64_t q = __atomic_load_n(&a->req_seq, __ATOMIC_ACQUIRE);
  if ((q & 1) || q == __atomic_load_n(&a->done, __ATOMIC_ACQUIRE))
    return false;
  r->min_tick = a->min_tick;
  r->first = a->first, r->count = a->count;
  r->width = a->width, r->height = a->height;
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  if (__atomic_load_n(&a->req_seq, __ATOMIC_RELAXED) != q)
    return false; /* being rewritten: the next pass reads it */
  r->req_seq = q;
  return true;
}

bool pa_atlas_srv_pending(const pa_atlas_srv *s) {
  pa_atlas_seg r;
  return s && read_request(s->a, &r);
}

static void answer(pa_atlas_seg *a, const pa_atlas_seg *r, uint32_t status,
                   const pa_tick *t) {
  a->status = status;
  a->d_first = r->first, a->d_count = status ? 0 : r->count;
  a->d_width = r->width, a->d_height = r->height;
  a->tick = t ? t->tick : 0;
  a->sim_time = t ? t->sim_time : 0;
  a->answered++;
  __atomic_store_n(&a->done, r->req_seq, __ATOMIC_RELEASE);
}

/* After an answer is complete: wake's +1 and every reader sleeping on it
 * woken (a reader that read wake before the answer finds it changed). */
static void wake_readers(pa_atlas_seg *a) {
  __atomic_fetch_add(&a->wake, 1, __ATOMIC_RELEASE);
  syscall(SYS_futex, &a->wake, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static int grow(pa_atlas_srv *s, uint32_t n) {
  if (n <= s->cap)
    return 0;
  pa_render_view *v = realloc(s->views, n * sizeof *v);
  if (v)
    s->views = v;
  bool *d = realloc(s->draw, n * sizeof *d);
  if (d)
    s->draw = d;
  if (!v || !d)
    return -1;
  s->cap = n;
  return 0;
}

int pa_atlas_srv_serve(pa_atlas_srv *s, pa_render_atlas_pool *pool,
                       pa_render_scene *scene, const pa_robot_info *robots,
                       uint32_t robot_count, const pa_render_pose *poses,
                       const pa_tick *t, char *err, size_t err_sz) {
  pa_atlas_seg r;
  pa_atlas_seg *a = s->a;
  if (!read_request(a, &r))
    return 0;
  if (t && t->tick < r.min_tick)
    return 1; /* the tick it asks for is not in the state ring yet */
  uint64_t bytes = (uint64_t)r.count * r.width * r.height * 3;
  if (!t || r.count < 1 || r.count > PA_RENDER_ATLAS_MAX_TILES ||
      r.first >= robot_count || r.count > robot_count - r.first ||
      r.width < 1 || r.height < 1 || r.width > PA_RENDER_ATLAS_MAX_SIDE ||
      r.height > PA_RENDER_ATLAS_MAX_SIDE || bytes > a->capacity ||
      grow(s, r.count) < 0) {
    answer(a, &r, PA_ATLAS_BAD_REQUEST, t); /* pa-netgw checked it: rare */
    wake_readers(a);
    return 0;
  }
  if (s->atlas && (pa_render_atlas_width(s->atlas) != r.width ||
                   pa_render_atlas_height(s->atlas) != r.height)) {
    pa_render_atlas_free(s->atlas);
    s->atlas = NULL;
  }
  if (!s->atlas &&
      pa_render_atlas_create(&s->atlas, r.width, r.height, err, err_sz) < 0) {
    answer(a, &r, PA_ATLAS_BAD_REQUEST, t);
    wake_readers(a);
    return 0;
  }
  for (uint32_t k = 0; k < r.count; k++) {
    uint32_t i = r.first + k;
    s->draw[k] = poses[i].active;
    s->views[k] = pa_render_view_head(&robots[i], i, &poses[i]);
  }
  int64_t t0 = pa_now_ns();
  uint64_t q = __atomic_load_n(&a->seq, __ATOMIC_RELAXED);
  __atomic_store_n(&a->seq, q | 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  uint8_t *frames = (uint8_t *)s->seg.base + PA_ATLAS_OFF_FRAMES;
  int rc = pa_render_atlas_pool_render(pool, s->atlas, scene, s->views, s->draw,
                                       r.count, frames, err, err_sz);
  answer(a, &r, rc < 0 ? PA_ATLAS_GL_ERROR : PA_ATLAS_OK, t);
  __atomic_store_n(&a->seq, (q | 1) + 1, __ATOMIC_RELEASE);
  a->render_ns = (uint64_t)(pa_now_ns() - t0);
  wake_readers(a);
  return rc < 0 ? -1 : 0;
}
