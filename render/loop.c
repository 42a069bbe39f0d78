/* loop.c - pa-render over a running instance: attach, build the scene from
 * the map segment and the world snapshot, render subscribed head cameras at
 * camera_hz into the camera ring, sleep on render_wake while nobody
 * watches, and drive the viewer window when asked. */
#define _GNU_SOURCE
#include "render_int.h"
#include "render_atlas.h"

#include <errno.h>
#include <math.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pa_util.h"

#define MAX_CAM_SIZES 4              /* distinct camera sizes kept alive */
#define IDLE_WAIT_NS 200000000LL     /* re-check stop/world while idle */
#define SCENE_BEAT_AHEAD_NS 60000000000LL /* a scene build may take 60 s */
#define ATTACH_WAIT_NS 3000000000LL  /* instance being created */

pa_render_def pa_render_def_default(void) {
  pa_render_def d = {0};
  d.instance = "p9000";
  d.camera_hz = 15;
  d.viewer_width = 1280;
  d.viewer_height = 800;
  d.msaa = 4;
  return d;
}

typedef struct rloop {
  const pa_render_def *def;
  pa_stack st;
  bool attached;
  pa_health *health;
  pa_render_egl *egl;
  pa_render_viewer *viewer;
  pa_render_scene *scene;
  uint32_t world_gen, map_gen;
  bool have_scene;
  pa_robot_info *robots;     /* [max_robots] snapshot copy */
  pa_obstacle_info *obstacles; /* [max_obstacles] */
  uint32_t robot_count, obstacle_count;
  pa_render_pose *poses;     /* [max_robots] */
  uint8_t *tick_buf;         /* state ring record */
  uint32_t tick_cap;
  pa_render_cam *cams[MAX_CAM_SIZES];
  pa_lat period;
  int64_t last_batch_ns;
  uint64_t frames, dropped;
  pa_spec_state spec; /* headless only: the spectator camera */
  bool spec_on;
  bool spec_refused;    /* a viewer that cannot serve them said so once */
  pa_visual_block *vis; /* the clients' visuals, copied when they change */
  uint32_t vis_gen;
  bool vis_read, vis_gl_on;
  pa_render_lines vis_gl;     /* their drawing in the cameras */
  pa_atlas_srv *atlas;        /* camera_batch requests (headless only) */
  uint64_t scene_builds;      /* the scene's number (the pool's key) */
  pa_render_atlas_pool *pool; /* camera_batch's helpers, at the first one */
  bool pool_off;              /* none wanted, or they failed (said once) */
  int state_reader; /* the state ring's blocking reader slot, or < 0: a
                     * camera_batch for a tick not yet written waits on it */
} rloop;

static void sleep_until(int64_t t_ns) {
  struct timespec ts = {(time_t)(t_ns / 1000000000LL),
                        (long)(t_ns % 1000000000LL)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
    ;
}

/* Copies robots and obstacles under the world seqlock. */
static void read_world(rloop *L) {
  const pa_ctl *c = L->st.ctl;
  uint32_t max_r = c->def.max_robots, max_o = c->def.max_obstacles;
  for (int tries = 0; tries < 1000; tries++) {
    uint64_t q = pa_stack_world_read_begin(&L->st);
    uint32_t rc = __atomic_load_n(&c->robot_count, __ATOMIC_RELAXED);
    uint32_t oc = __atomic_load_n(&c->obstacle_count, __ATOMIC_RELAXED);
    L->robot_count = rc < max_r ? rc : max_r;
    L->obstacle_count = oc < max_o ? oc : max_o;
    memcpy(L->robots, L->st.robots, L->robot_count * sizeof *L->robots);
    memcpy(L->obstacles, L->st.obstacles,
           L->obstacle_count * sizeof *L->obstacles);
    if (!pa_stack_world_read_retry(&L->st, q))
      return;
  }
}

/* Copies the clients' visuals when they changed and hands them to the
 * cameras: the spectator draws all of them, the head cameras those marked
 * camera_visible. A copy torn by a writer is retried on the next pass. */
/* A viewer serves the spectator's screenshots and videos while no other
 * live pa-render has claimed them (render_pid), and gives them up as soon
 * as one does: never two answers to one request. */
static void viewer_spectator(rloop *L, const char *data_dir) {
  pa_spectator *sp = &L->st.vis->spec;
  int32_t pid = __atomic_load_n(&sp->render_pid, __ATOMIC_ACQUIRE);
  if (L->spec_on) {
    if (pid != (int32_t)getpid()) {
      pa_info("spectator: pa-render %d serves the screenshots now", (int)pid);
      pa_render_spectator_free(&L->spec, NULL); /* not ours to clear */
      L->spec_on = false;
    }
    return;
  }
  if (L->spec_refused || (pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH)))
    return; /* another pa-render serves them */
  char err[256];
  if (pa_render_spectator_init(&L->spec, &L->st, data_dir, L->def->msaa, err,
                               sizeof err) < 0) {
    pa_warn("spectator: the viewer cannot serve screenshots: %s", err);
    L->spec_refused = true;
    return;
  }
  L->spec_on = true;
  pa_info("spectator: served by this viewer");
}

static void refresh_visuals(rloop *L) {
  if (!L->vis || !L->vis_gl_on)
    return;
  uint32_t gen = __atomic_load_n(&L->st.vis->gen, __ATOMIC_ACQUIRE);
  if (!L->vis_read || gen != L->vis_gen) {
    if (pa_stack_visual_read(&L->st, L->vis)) {
      L->vis_gen = L->vis->gen;
      L->vis_read = true;
    }
  }
  pa_render_cam_visuals(L->vis_read ? L->vis : NULL, &L->vis_gl);
}

/* The published map as a grid over its segment (mapped until the caller
 * detaches seg). 0, 1 when there is no map yet (or it is being replaced),
 * -1 when the one published is unusable (err set). */
static int map_grid(rloop *L, pa_shm_seg *seg, pa_grid *g, char *err,
                    size_t err_sz) {
  const pa_map_block *mb;
  const int8_t *cells;
  char merr[256];
  int arc = pa_stack_map_attach(&L->st, seg, &mb, &cells, merr, sizeof merr);
  if (arc == PA_SHM_EINVAL) { /* a published map that is unusable */
    snprintf(err, err_sz, "%s", merr);
    return -1;
  }
  if (arc != 0)
    return 1; /* pa-sim has not published a map yet (or is replacing it) */
  /* The segment stays mapped until detach, so its cells are safe to read
   * even if pa-sim replaces the map meanwhile (we rebuild again then). */
  *g = (pa_grid){.width = mb->width,
                 .height = mb->height,
                 .resolution = mb->resolution,
                 .origin_x = mb->origin_x,
                 .origin_y = mb->origin_y,
                 .origin_yaw = mb->origin_yaw,
                 .cells = (int8_t *)(uintptr_t)cells,
                 .occupied_min = pa_map_block_occupied_min(mb)};
  return 0;
}

/* (Re)builds the scene from the current map and world. Returns 0, 1 when
 * there is no map yet, -1 on a GL or input error. */
static int build_scene(rloop *L, char *err, size_t err_sz) {
  uint32_t wgen = __atomic_load_n(&L->st.ctl->world_gen, __ATOMIC_ACQUIRE);
  uint32_t mgen = __atomic_load_n(&L->st.ctl->map_gen, __ATOMIC_ACQUIRE);
  pa_shm_seg seg;
  pa_grid g;
  int arc = map_grid(L, &seg, &g, err, err_sz);
  if (arc != 0)
    return arc;
  read_world(L);
  pa_render_scene *s = NULL;
  int rc = pa_render_scene_build(&s, &g, L->robots, L->robot_count,
                                 L->obstacles, L->obstacle_count, err, err_sz);
  pa_shm_detach(&seg);
  if (rc < 0)
    return -1;
  pa_render_scene_free(L->scene);
  L->scene = s;
  L->scene_builds++;
  L->world_gen = wgen;
  L->map_gen = mgen;
  L->have_scene = true;
  pa_info("scene built: map %ux%u cells, %u wall boxes, %u triangles, "
          "%u robots, %u obstacles (world gen %u, map gen %u)",
          g.width, g.height, pa_render_scene_wall_boxes(s),
          pa_render_scene_triangles(s), L->robot_count, L->obstacle_count,
          wgen, mgen);
  return 0;
}

/* The GL contexts drawing a camera_batch: --atlas_contexts, or (0) two
 * with two CPUs or more (measured on two: docs/benchmarks.md), else one. */
static uint32_t atlas_contexts(const pa_render_def *d) {
  if (d->atlas_contexts)
    return d->atlas_contexts;
  return sysconf(_SC_NPROCESSORS_ONLN) >= 2 ? 2 : 1;
}

/* camera_batch's helpers with scenes of the current one, started at the
 * first batch and built again after every scene build; NULL: the batch is
 * drawn by this thread alone (none wanted, they failed, or the map changed
 * while they built). */
static pa_render_atlas_pool *atlas_pool(rloop *L) {
  uint32_t want = atlas_contexts(L->def) - 1;
  if (L->pool_off || want == 0)
    return NULL;
  char err[256];
  if (!L->pool &&
      pa_render_atlas_pool_create(&L->pool, want, err, sizeof err) < 0) {
    pa_warn("camera_batch drawn by one GL context: %s", err);
    L->pool_off = true;
    return NULL;
  }
  if (pa_render_atlas_pool_key(L->pool) == L->scene_builds)
    return L->pool;
  pa_shm_seg seg;
  pa_grid g;
  if (map_grid(L, &seg, &g, err, sizeof err) != 0)
    return NULL;
  L->health->heartbeat_ns = pa_now_ns() + SCENE_BEAT_AHEAD_NS;
  int rc = pa_render_atlas_pool_build(L->pool, &g, L->robots, L->robot_count,
                                      L->obstacles, L->obstacle_count,
                                      L->scene_builds, err, sizeof err);
  pa_shm_detach(&seg);
  L->health->heartbeat_ns = pa_now_ns();
  if (rc < 0) {
    pa_warn("camera_batch drawn by one GL context: %s", err);
    pa_render_atlas_pool_free(L->pool);
    L->pool = NULL;
    L->pool_off = true;
    return NULL;
  }
  /* the map or world replaced meanwhile: the loop builds again first */
  if (__atomic_load_n(&L->st.ctl->world_gen, __ATOMIC_ACQUIRE) !=
          L->world_gen ||
      __atomic_load_n(&L->st.ctl->map_gen, __ATOMIC_ACQUIRE) != L->map_gen)
    return NULL;
  return L->pool;
}

/* Latest tick from the state ring into poses; NULL when none yet. */
static const pa_tick *latest_tick(rloop *L) {
  uint32_t len = 0;
  uint64_t seq = 0;
  if (pa_ring_read_latest(L->st.state, L->tick_buf, L->tick_cap, &len,
                          &seq) != 0 ||
      len < sizeof(pa_tick))
    return NULL;
  pa_tick *t = (pa_tick *)L->tick_buf;
  uint32_t fit = (uint32_t)((len - sizeof(pa_tick)) / sizeof(pa_robot_state));
  if (t->robot_count > fit)
    t->robot_count = fit; /* our copy: the viewer trusts it too */
  uint32_t n = t->robot_count;
  if (n > L->robot_count)
    n = L->robot_count;
  const pa_robot_state *rs = (const pa_robot_state *)(t + 1);
  for (uint32_t i = 0; i < n; i++) {
    pa_render_pose *p = &L->poses[i];
    p->x = rs[i].x, p->y = rs[i].y, p->theta = rs[i].theta;
    p->head = rs[i].head;
    p->active = (rs[i].flags & PA_RS_ACTIVE) && L->robots[i].active &&
                isfinite(p->x) && isfinite(p->y) && isfinite(p->theta) &&
                isfinite(p->head);
  }
  for (uint32_t i = n; i < L->robot_count; i++)
    L->poses[i].active = false;
  pa_render_scene_set_poses(L->scene, L->poses, L->robot_count);
  pa_render_scene_set_ssl(L->scene, (char)t->ssl, t->ball_holder != -2,
                          t->ball); /* the ball where pa-sim has it */
  return t;
}

static int publish_oldest(rloop *L, pa_render_cam *c, char *err,
                          size_t err_sz);

static pa_render_cam *cam_for(rloop *L, uint32_t w, uint32_t h, char *err,
                              size_t err_sz) {
  for (int i = 0; i < MAX_CAM_SIZES; i++)
    if (L->cams[i] && pa_render_cam_width(L->cams[i]) == w &&
        pa_render_cam_height(L->cams[i]) == h)
      return L->cams[i];
  int slot = 0;
  for (int i = 0; i < MAX_CAM_SIZES; i++)
    if (!L->cams[i]) {
      slot = i;
      break;
    }
  /* All sizes in use: recycle slot 0 after publishing what it holds. */
  if (L->cams[slot]) {
    while (pa_render_cam_pending(L->cams[slot]))
      if (publish_oldest(L, L->cams[slot], err, err_sz) < 0)
        return NULL;
    pa_render_cam_free(L->cams[slot]);
    L->cams[slot] = NULL;
  }
  if (pa_render_cam_create(&L->cams[slot], w, h, err, err_sz) < 0)
    return NULL;
  return L->cams[slot];
}

/* Fetches the oldest frame of c straight into a camera ring slot. */
static int publish_oldest(rloop *L, pa_render_cam *c, char *err,
                          size_t err_sz) {
  const pa_frame *m = pa_render_cam_peek(c);
  uint32_t len = (uint32_t)sizeof(pa_frame) + m->size;
  uint8_t *slot = pa_ring_write_begin(L->st.camera, len);
  if (!slot) {
    /* Cannot happen with sizes clamped to the ring; drain and count it. */
    uint8_t *tmp = malloc(m->size);
    int rc = tmp ? pa_render_cam_fetch(c, NULL, tmp, err, err_sz) : 0;
    free(tmp);
    L->dropped++;
    return rc;
  }
  pa_frame meta;
  if (pa_render_cam_fetch(c, &meta, slot + sizeof(pa_frame), err, err_sz) < 0)
    return -1;
  memcpy(slot, &meta, sizeof meta);
  /* seq first: a crash in between costs clients a gap, never a duplicate. */
  __atomic_store_n(&L->st.cam[meta.robot].seq, meta.seq, __ATOMIC_RELEASE);
  pa_ring_write_commit(L->st.camera);
  L->frames++;
  return 0;
}

static void clamp_size(const rloop *L, const pa_robot_info *ri, uint32_t *w,
                       uint32_t *h) {
  const pa_stack_def *d = &L->st.ctl->def;
  uint32_t cw = ri->cam_width ? ri->cam_width : 640;
  uint32_t ch = ri->cam_height ? ri->cam_height : 480;
  if (cw > d->max_cam_width)
    cw = d->max_cam_width;
  if (ch > d->max_cam_height)
    ch = d->max_cam_height;
  uint32_t max_rec = pa_ring_max_record(L->st.camera);
  while (cw > 1 && ch > 1 && sizeof(pa_frame) + (size_t)cw * ch * 3 > max_rec)
    cw /= 2, ch /= 2;
  *w = cw ? cw : 1;
  *h = ch ? ch : 1;
}

/* One deadline: every subscribed robot's view from the latest tick. The
 * readback of one robot's frame overlaps the rendering of the next. */
static int camera_batch(rloop *L, char *err, size_t err_sz) {
  const pa_tick *t = latest_tick(L);
  if (!t)
    return 0;
  int64_t wall = pa_now_ns();
  for (uint32_t i = 0; i < L->robot_count; i++) {
    if (!__atomic_load_n(&L->st.cam[i].subscribers, __ATOMIC_ACQUIRE) ||
        !L->poses[i].active)
      continue;
    const pa_robot_info *ri = &L->robots[i];
    uint32_t w, h;
    clamp_size(L, ri, &w, &h);
    pa_render_cam *c = cam_for(L, w, h, err, err_sz);
    if (!c)
      return -1;
    if (pa_render_cam_pending(c) == PA_RENDER_CAM_SLOTS &&
        publish_oldest(L, c, err, err_sz) < 0)
      return -1;
    /* Many robots on a software renderer: a slow batch is not a hang. */
    L->health->heartbeat_ns = pa_now_ns();
    const pa_render_pose *p = &L->poses[i];
    pa_frame meta = {.tick = t->tick, .sim_time = t->sim_time,
                     .wall_ns = wall, .robot = i,
                     .seq = __atomic_load_n(&L->st.cam[i].seq,
                                            __ATOMIC_ACQUIRE) + 1,
                     .x = p->x, .y = p->y, .theta = p->theta, .head = p->head,
                     .width = (uint16_t)w, .height = (uint16_t)h,
                     .size = w * h * 3};
    pa_render_view v = pa_render_view_head(ri, i, p);
    if (pa_render_cam_submit(c, L->scene, &v, &meta, err, err_sz) < 0)
      return -1;
  }
  for (int k = 0; k < MAX_CAM_SIZES; k++)
    while (L->cams[k] && pa_render_cam_pending(L->cams[k]))
      if (publish_oldest(L, L->cams[k], err, err_sz) < 0)
        return -1;
  return 0;
}

/* camera_batch: answers a pending request from the newest tick; 1 while
 * the tick it asks for has not been published yet. */
static int serve_atlas(rloop *L, char *err, size_t err_sz) {
  if (!L->atlas || !L->scene || !pa_atlas_srv_pending(L->atlas))
    return 0;
  /* A world changed since the scene was built (robots spawned just before
   * the request): rebuild first, on the next pass. */
  if (__atomic_load_n(&L->st.ctl->world_gen, __ATOMIC_ACQUIRE) !=
          L->world_gen ||
      __atomic_load_n(&L->st.ctl->map_gen, __ATOMIC_ACQUIRE) != L->map_gen)
    return 1;
  const pa_tick *t = latest_tick(L);
  L->health->heartbeat_ns = pa_now_ns();
  pa_render_atlas_pool *pool = atlas_pool(L);
  int rc = pa_atlas_srv_serve(L->atlas, pool, L->scene, L->robots,
                              L->robot_count, L->poses, t, err, err_sz);
  if (rc == 0)
    L->health->heartbeat_ns = pa_now_ns();
  return rc;
}

static bool any_demand(const rloop *L) {
  for (uint32_t i = 0; i < L->robot_count; i++)
    if (__atomic_load_n(&L->st.cam[i].subscribers, __ATOMIC_ACQUIRE) &&
        L->robots[i].active)
      return true;
  return false;
}

/* The longest wait on the state ring for a camera_batch's tick: a request
 * (render_wake) meanwhile is seen this late at most. */
#define TICK_WAIT_NS 1000000

/* Until render_wake is posted or timeout_ns passes; tick (a camera_batch
 * waits for a tick not yet written): until pa-sim writes a tick instead
 * (the caller's timeout is TICK_WAIT_NS at most then). */
static void wait_wake(rloop *L, int64_t timeout_ns, bool tick) {
  if (tick && L->state_reader >= 0) {
    /* woken by pa-sim's next tick (or one written since the last wake) */
    pa_ring_wait(L->st.state, L->state_reader, timeout_ns);
    while (sem_trywait(&L->st.ctl->render_wake) == 0)
      ; /* the next pass looks at whatever it was for */
    return;
  }
  pa_shm_sem_wait(&L->st.ctl->render_wake, timeout_ns);
  /* Several posts may have piled up; one wake is enough. */
  while (sem_trywait(&L->st.ctl->render_wake) == 0)
    ;
}

static void publish_health(rloop *L, int64_t now) {
  pa_health *h = L->health;
  h->heartbeat_ns = now;
  h->frames_sent = L->frames;
  h->frames_dropped = L->dropped;
  if (L->period.count && (h->loops % 16) == 0) {
    h->period_p50_ns = pa_lat_percentile(&L->period, 50);
    h->period_p99_ns = pa_lat_percentile(&L->period, 99);
    h->period_max_ns = L->period.max;
  }
}

static int attach(rloop *L, volatile sig_atomic_t *stop, char *err,
                  size_t err_sz) {
  int64_t until = pa_now_ns() + ATTACH_WAIT_NS;
  for (;;) {
    int rc = pa_stack_attach(&L->st, L->def->instance, err, err_sz);
    if (rc == 0)
      return 0;
    if (rc != PA_SHM_ENOTREADY || pa_now_ns() > until || *stop)
      return PA_EXIT_CONFIG;
    sleep_until(pa_now_ns() + 20000000);
  }
}

static void loop_free(rloop *L) {
  if (L->spec_on)
    pa_render_spectator_free(&L->spec, L->attached ? &L->st : NULL);
  pa_atlas_srv_close(L->atlas);
  pa_render_atlas_pool_free(L->pool);
  for (int i = 0; i < MAX_CAM_SIZES; i++)
    pa_render_cam_free(L->cams[i]);
  pa_render_scene_free(L->scene);
  pa_render_cam_visuals(NULL, NULL);
  if (L->vis_gl_on)
    pa_render_lines_free(&L->vis_gl);
  free(L->vis);
  pa_render_viewer_close(L->viewer);
  pa_render_egl_destroy(L->egl);
  if (L->attached) {
    if (L->state_reader >= 0)
      pa_ring_reader_unregister(L->st.state, L->state_reader);
    L->health->ready = 0;
    L->health->pid = 0;
    pa_stack_detach(&L->st);
  }
  free(L->robots);
  free(L->obstacles);
  free(L->poses);
  free(L->tick_buf);
  free(L);
}

int pa_render_run(const pa_render_def *d, volatile sig_atomic_t *stop,
                  char *err, size_t err_sz) {
  if (!(d->camera_hz > 0 && d->camera_hz <= 1000)) {
    snprintf(err, err_sz, "--camera_hz: %g is outside (0, 1000]",
             d->camera_hz);
    return PA_EXIT_CONFIG;
  }
  rloop *L = calloc(1, sizeof *L);
  if (!L) {
    snprintf(err, err_sz, "out of memory");
    return 1;
  }
  L->def = d;
  L->state_reader = -1;
  int ret = attach(L, stop, err, err_sz);
  if (ret)
    goto out_nolock;
  L->attached = true;
  L->health = &L->st.ctl->health[PA_PROC_RENDER];
  L->health->ready = 0;
  L->health->pid = getpid();
  L->health->start_ns = pa_now_ns();
  L->health->heartbeat_ns = L->health->start_ns;
  const pa_stack_def *sd = &L->st.ctl->def;
  L->robots = calloc(sd->max_robots ? sd->max_robots : 1, sizeof *L->robots);
  L->obstacles =
      calloc(sd->max_obstacles ? sd->max_obstacles : 1, sizeof *L->obstacles);
  L->poses = calloc(sd->max_robots ? sd->max_robots : 1, sizeof *L->poses);
  L->tick_cap = pa_ring_max_record(L->st.state);
  L->tick_buf = malloc(L->tick_cap);
  if (!L->robots || !L->obstacles || !L->poses || !L->tick_buf) {
    snprintf(err, err_sz, "out of memory for %u robots", sd->max_robots);
    ret = 1;
    goto out_nolock;
  }
  pa_lat_reset(&L->period);

  if (d->viewer) {
    if (pa_render_viewer_open(&L->viewer, d, &L->st, err, err_sz) < 0) {
      ret = PA_EXIT_CONFIG; /* no usable display: restarting cannot help */
      goto out_nolock;
    }
  } else if (pa_render_egl_create_threads(&L->egl, d->raster_threads, err,
                                          err_sz) < 0) { /* no thread yet */
    ret = 1;
    goto out_nolock;
  }
  pa_info("GL context: %s", pa_render_gl_renderer());
  L->vis = calloc(1, sizeof *L->vis);
  if (!L->vis || pa_render_lines_init(&L->vis_gl, err, err_sz) < 0) {
    if (!L->vis)
      snprintf(err, err_sz, "out of memory for the visuals");
    pa_render_lines_free(&L->vis_gl); /* what a failed init made */
    ret = 1;
    goto out_nolock;
  }
  L->vis_gl_on = true;
  /* The spectator's requests are the headless pa-render's; a --viewer
   * serves them while no other pa-render does (viewer_spectator), so that
   * screenshots and videos work with `playarea --viewer` too. */
  if (L->egl) {
    if (pa_render_spectator_init(&L->spec, &L->st, d->data_dir, d->msaa, err,
                                 err_sz) < 0) {
      ret = PA_EXIT_CONFIG;
      goto out_nolock;
    }
    L->spec_on = true;
    if (pa_atlas_srv_open(&L->atlas, &L->st, err, err_sz) < 0) {
      ret = 1;
      goto out_nolock;
    }
    L->state_reader = pa_ring_reader_register(L->st.state);
    if (L->state_reader < 0)
      pa_warn("no reader slot left on the state ring: a camera_batch for a "
              "tick not yet written looks for it every 0.2 ms");
  }

  int64_t period = (int64_t)(1e9 / d->camera_hz);
  int64_t next = 0;
  while (!*stop) {
    int64_t now = pa_now_ns();
    L->health->loops++;
    publish_health(L, now);
    uint32_t wgen = __atomic_load_n(&L->st.ctl->world_gen, __ATOMIC_ACQUIRE);
    uint32_t mgen = __atomic_load_n(&L->st.ctl->map_gen, __ATOMIC_ACQUIRE);
    if (!L->have_scene || wgen != L->world_gen || mgen != L->map_gen) {
      /* A big map takes seconds to turn into walls: beat ahead so that the
       * launcher's watchdog waits for it. */
      L->health->heartbeat_ns = now + SCENE_BEAT_AHEAD_NS;
      int rc = build_scene(L, err, err_sz);
      L->health->heartbeat_ns = pa_now_ns();
      if (rc < 0) {
        ret = 1;
        goto out_nolock;
      }
      if (rc == 1 && !L->have_scene) {
        /* No map yet: keep the viewer alive and wait for pa-sim. */
        if (L->viewer && !pa_render_viewer_frame(L->viewer, NULL, NULL, 0))
          break;
        sleep_until(pa_now_ns() + 50000000);
        continue;
      }
      L->health->ready = 1;
    }
    refresh_visuals(L);
    if (L->viewer)
      viewer_spectator(L, d->data_dir);
    int64_t spec_next = 0;
    if (L->spec_on && L->scene) {
      latest_tick(L); /* poses for a spectator following a robot */
      spec_next = pa_render_spectator_step(&L->spec, &L->st, L->scene, L->poses,
                                           L->robot_count, L->obstacles,
                                           L->obstacle_count, pa_now_ns());
      L->health->heartbeat_ns = pa_now_ns();
    }
    int arc = serve_atlas(L, err, err_sz);
    if (arc < 0) {
      ret = 1;
      goto out_nolock;
    }
    /* look for its tick again: at pa-sim's next tick (1 ms at most), or
     * in 0.2 ms without a reader slot on the state ring */
    int64_t soon = pa_now_ns() + (L->state_reader >= 0 ? TICK_WAIT_NS : 200000);
    if (arc == 1 && (spec_next == 0 || spec_next > soon))
      spec_next = soon;
    bool demand = any_demand(L);
    if (L->viewer) {
      const pa_tick *t = latest_tick(L);
      if (!pa_render_viewer_frame(L->viewer, L->scene, t,
                                  demand && next ? next : 0))
        break;
    }
    if (!demand) {
      next = 0;
      L->last_batch_ns = 0; /* an idle wait is not a loop period */
      if (!L->viewer) {
        int64_t wait = IDLE_WAIT_NS;
        if (spec_next && spec_next - pa_now_ns() < wait)
          wait = spec_next - pa_now_ns();
        if (wait > 0)
          wait_wake(L, wait, arc == 1);
      }
      continue;
    }
    now = pa_now_ns();
    if (next == 0)
      next = now;
    if (now >= next) {
      if (L->last_batch_ns)
        pa_lat_add(&L->period, now - L->last_batch_ns);
      L->last_batch_ns = now;
      int64_t t0 = pa_now_ns();
      if (camera_batch(L, err, err_sz) < 0) {
        ret = 1;
        goto out_nolock;
      }
      L->health->phase_ms[0] = (pa_now_ns() - t0) / 1e6;
      if (L->egl && pa_render_egl_check(L->egl, err, err_sz) < 0) {
        ret = 1;
        goto out_nolock;
      }
      next += period;
      /* Bounded catch-up: far behind, re-sync instead of bursting. */
      if (pa_now_ns() - next > 2 * period) {
        L->health->overruns++;
        next = pa_now_ns() + period;
      }
    }
    if (!L->viewer) { /* a camera_batch request posts render_wake */
      int64_t until = spec_next && spec_next < next ? spec_next : next;
      if (until > pa_now_ns())
        wait_wake(L, until - pa_now_ns(), arc == 1);
    }
    /* (the viewer waits in its event loop instead) */
  }
  ret = 0;
out_nolock:
  loop_free(L);
  return ret;
}
