/* json_camera_batch.c - camera_batch: every asked robot's head camera from
 * the newest tick, drawn by pa-render in one atlas into the atlas segment
 * (shm/pa_layout.h pa_atlas_seg), for same-host pixel RL. The gateway only
 * checks and writes the request and wakes pa-render; the reply names the
 * request's sequence number, which the client waits for in the segment. */
#define _GNU_SOURCE
#include "json_int.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

/* The segment, attached on the first request (pa-render creates it), again
 * when the instance was created anew. */
static pa_shm_seg atlas_seg;
static pa_atlas_seg *atlas;

static int atlas_get(jctx *x) {
  pa_netgw *g = x->c->g;
  char err[256];
  const pa_shm_header *ch = g->st->ctl_seg.base;
  char name[PA_SHM_NAME_MAX];
  if (pa_shm_name(name, sizeof name, g->ctl->def.instance, "atlas", NULL, 0))
    name[0] = 0;
  if (atlas &&
      (((const pa_shm_header *)atlas_seg.base)->boot_id != ch->boot_id ||
       strcmp(atlas_seg.name, name))) {
    pa_shm_detach(&atlas_seg); /* another instance's (a test's gateways) */
    atlas = NULL;
  }
  if (!atlas &&
      pa_stack_atlas_attach(g->st, &atlas_seg, &atlas, err, sizeof err) != 0) {
    atlas = NULL;
    pa_json_fail(x, PA_ERR_BUSY,
                 "no pa-render is serving batched cameras for this instance "
                 "(started with --no-render, or restarting): %s",
                 err);
    return -1;
  }
  int32_t pid = __atomic_load_n(&atlas->render_pid, __ATOMIC_ACQUIRE);
  if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH)) {
    pa_json_fail(x, PA_ERR_BUSY,
                 "no pa-render is serving batched cameras for this instance "
                 "(started with --no-render, or restarting)");
    return -1;
  }
  return 0;
}

/* data.robots_range [first, count] (default every robot): 0 or -1. */
static int atlas_robots(jctx *x, long long w, long long h, uint32_t *first,
                        uint32_t *count) {
  uint32_t n = __atomic_load_n(&x->c->g->ctl->robot_count, __ATOMIC_ACQUIRE);
  double r[2];
  size_t got = 0;
  if (pa_json_vec(x, "robots_range", 2, 0, r, &got) < 0)
    return -1;
  if (!got) {
    r[0] = 0;
    r[1] = n;
  }
  if (r[0] != (double)(uint32_t)r[0] || r[1] != (double)(uint32_t)r[1] ||
      r[1] < 1) {
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "data.robots_range [first, count]: whole numbers, count >= "
                 "1 (there are %u robots)",
                 n);
    return -1;
  }
  if (r[1] > PA_ATLAS_MAX_TILES) {
    pa_json_fail(x, PA_ERR_BATCH_LIMIT,
                 "data.robots_range: %.0f robots is over the %u cameras of one "
                 "camera_batch",
                 r[1], PA_ATLAS_MAX_TILES);
    return -1;
  }
  uint64_t bytes = (uint64_t)r[1] * (uint64_t)w * (uint64_t)h * 3;
  if (bytes > PA_ATLAS_MAX_BYTES) {
    pa_json_fail(x, PA_ERR_BATCH_LIMIT,
                 "%.0f cameras of %lldx%lld are %llu bytes, over the %u-byte "
                 "atlas: fewer robots or smaller images",
                 r[1], w, h, (unsigned long long)bytes, PA_ATLAS_MAX_BYTES);
    return -1;
  }
  if (r[0] + r[1] > n) {
    pa_json_fail(x, PA_ERR_UNKNOWN_ROBOT,
                 "data.robots_range [%.0f, %.0f]: robots %.0f..%.0f asked, "
                 "there are %u",
                 r[0], r[1], r[0], r[0] + r[1] - 1, n);
    return -1;
  }
  *first = (uint32_t)r[0];
  *count = (uint32_t)r[1];
  return 0;
}

json_t *pa_json_act_camera_batch(jctx *x) {
  pa_netgw *g = x->c->g;
  long long w = 84, h = 84, tick = -1;
  uint32_t first = 0, count = 0;
  if (pa_json_int(x, "width", 1, PA_ATLAS_MAX_SIDE, &w) < 0 ||
      pa_json_int(x, "height", 1, PA_ATLAS_MAX_SIDE, &h) < 0 ||
      pa_json_int(x, "tick", 0, INT64_MAX, &tick) < 0 ||
      atlas_robots(x, w, h, &first, &count) < 0)
    return NULL;
  pa_tick t;
  if (!pa_gw_latest_header(g, &t))
    return pa_json_fail(x, PA_ERR_BUSY, "pa-sim has not written a tick yet");
  /* data.tick: a tick still to come (a lockstep client asks before its
   * step; pa-render draws once pa-sim has written it), one step ahead at
   * most */
  if (tick > (long long)t.tick &&
      (unsigned long long)tick - t.tick > PA_CMD_STEPS_MAX)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.tick %lld is more than one step (%u ticks) "
                        "after the latest, %llu",
                        tick, PA_CMD_STEPS_MAX, (unsigned long long)t.tick);
  uint64_t min_tick = tick > (long long)t.tick ? (uint64_t)tick : t.tick;
  if (atlas_get(x) < 0)
    return NULL;
  /* the request under req_seq: odd while written, +2 per request */
  uint64_t q = __atomic_load_n(&atlas->req_seq, __ATOMIC_RELAXED);
  uint64_t odd = q | 1u, next = odd + 1;
  __atomic_store_n(&atlas->req_seq, odd, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  atlas->min_tick = min_tick;
  atlas->first = first, atlas->count = count;
  atlas->width = (uint32_t)w, atlas->height = (uint32_t)h;
  __atomic_store_n(&atlas->req_seq, next, __ATOMIC_RELEASE);
  sem_post(&g->ctl->render_wake);
  json_t *d = json_object();
  json_object_set_new(d, "seq", json_integer((json_int_t)next));
  json_object_set_new(d, "segment", json_string(atlas_seg.name));
  json_object_set_new(d, "offset", json_integer(PA_ATLAS_OFF_FRAMES));
  json_object_set_new(d, "first", json_integer(first));
  json_object_set_new(d, "count", json_integer(count));
  json_object_set_new(d, "width", json_integer(w));
  json_object_set_new(d, "height", json_integer(h));
  json_object_set_new(d, "min_tick", json_integer((json_int_t)min_tick));
  return d;
}
