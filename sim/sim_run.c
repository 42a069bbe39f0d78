/* sim_run.c - the fixed-rate process loop of pa-sim: commands at the start of
 * each tick, absolute deadlines on CLOCK_MONOTONIC, lockstep STEP, health. */
#define _GNU_SOURCE
#include "pa_sim.h"
#include "sim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "pa_util.h"

#define CATCH_UP_TICKS 10            /* behind by more: re-sync */
#define HEALTH_PERIOD_NS 100000000LL /* 100 ms */
#define PAUSED_WAIT_NS 100000000LL   /* wake to notice SIGTERM */
#define LOCKSTEP_ACTIVE_NS 2000000LL /* a command this recent: spin first */
#define SPIN_MIN_NS 20000LL          /* spin at least this long, */
#define SPIN_MAX_NS 200000LL         /* at most this (adaptive between) */
#define LEAN_SAMPLE 16               /* see `timed` */
#define LOADER_POLL_NS 1000000L      /* paused: check a load this often */
#define INLINE_STEP_TICKS 100        /* a STEP this short: scans inline */

/* set_map, generate_map and set_scenario read and build their map on this
 * thread, so a big or hostile file never holds up the tick; the loop swaps
 * the result in between two ticks. The command stays at the queue front (in
 * flight) until then, as a STEP does. */
typedef struct loader {
  pthread_t th;
  bool busy; /* a thread runs (or finished, not yet joined) */
  int done;  /* atomic: the thread has finished */
  pa_cmd cmd;
  pa_map_guard guard;      /* data_dir: the canonical --data_dir */
  char data_dir[PATH_MAX]; /* "" = none could be resolved: files refused */
  /* results */
  int rc;
  pa_status status;
  char err[256];
  pa_world w;
  bool have_world;
  pa_grid g;
  bool have_grid;
  pa_sim_def def; /* the running model's settings, copied */
  bool unknown_blocks;
  pa_sim_model nm; /* the new model, built here */
  bool have_model;
  const pa_stack *st; /* read only: the instance, map_gen */
  bool staged;        /* nm's cells are the map segment staged for commit */
  int64_t started_ns;
  char ignored[160]; /* map.yaml keys map_server does not read: warned */
} loader;

typedef struct run_ctx {
  pa_sim_model *m;         /* SET_MAP / GENERATE_MAP replace its map */
  pa_sim_state *s;
  pa_stack *st;
  pa_lat *lat;             /* tick start-to-start periods [ns] */
  int64_t last_start;      /* 0 = no previous tick to measure from */
  int64_t last_health;
  uint64_t overruns;
  uint64_t cmds;
  int64_t last_cmd_ns;     /* when the last command was applied */
  uint64_t scans;
  double phase_ewma[PA_SIM_PH_COUNT]; /* [ns] */
  bool stepping;           /* a STEP command is being run */
  bool lane_step;          /* ... the step lane's (answered there) */
  uint32_t lane_req;
  pa_cmd *lane_cmds; /* a lane batch's SET_CMDS (max_robots drives) */
  pa_cmd step_cmd;
  uint64_t step_left;
  loader ld;
  pa_shm_seg obs_seg; /* the observation segment, once a STEP asked */
  pa_obs_seg *obs;
  bool obs_warned; /* its failure is logged once, not every step */
} run_ctx;

static void set_inflight(pa_ctl *ctl, uint64_t v) {
  __atomic_store_n(&ctl->cmd_inflight, v, __ATOMIC_SEQ_CST);
}

/* A STEP's observation block: 0 (the client reads the rings) when the
 * segment cannot be made. */
static uint64_t write_obs(run_ctx *k) {
  if (!k->obs) {
    char err[256];
    if (pa_stack_obs_open(k->st, &k->obs_seg, &k->obs, err, sizeof err) != 0) {
      if (!k->obs_warned)
        pa_warn("observation segment: %s (clients read the rings)", err);
      k->obs_warned = true;
      return 0;
    }
  }
  return pa_sim_obs_write(k->s, k->st, k->obs, k->step_cmd.step.obs_first,
                          k->step_cmd.step.obs_count,
                          k->step_cmd.step.obs_beams);
}

/* Replies are pushed only while the reply queue has room (checked before
 * consuming), so a push cannot fail here. */
static void finish_cmd(pa_stack *st, const pa_cmd *c, const pa_reply *r) {
  if (!(c->flags & PA_CMDF_NO_REPLY) &&
      pa_queue_push_watched(st->reply, r, &st->ctl->reply_watch_until) != 0)
    pa_warn("reply queue full: dropped the reply to request %llu",
            (unsigned long long)c->request_id);
  pa_queue_pop(st->cmd);
  set_inflight(st->ctl, 0);
}

int pa_sim_shm_answer_inflight(const pa_sim_state *s, pa_stack *st) {
  uint64_t inflight = __atomic_load_n(&st->ctl->cmd_inflight, __ATOMIC_SEQ_CST);
  if (!inflight)
    return 0;
  pa_cmd c;
  int64_t pos = pa_queue_peek(st->cmd, &c);
  if (pos < 0 || (uint64_t)pos + 1 != inflight) {
    /* Already popped before the crash: nothing left to answer. */
    set_inflight(st->ctl, 0);
    return 0;
  }
  pa_reply r;
  memset(&r, 0, sizeof r);
  r.client_id = c.client_id;
  r.request_id = c.request_id;
  r.op = c.op;
  r.status = PA_ERR_BUSY;
  r.tick = s->tick;
  r.sim_time = s->sim_time;
  snprintf(r.msg, sizeof r.msg,
           "simulator restarted while applying this command");
  finish_cmd(st, &c, &r);
  pa_warn("answered in-flight command %llu (op %u) with busy after a restart",
          (unsigned long long)c.request_id, c.op);
  return 1;
}

/* Commands that move things outside a tick get a state record at once, so a
 * reader asking right after the reply sees the change. */
/* Completes the overlapped scans in flight and writes their records: before
 * a command applies (and may change what they were cast with), before a
 * STEP's reply, and when a recording or the loop ends. */
static void flush_scans(pa_sim_model *m, pa_sim_state *s, pa_stack *st) {
  if (pa_sim_scans_settle(m, s, true))
    pa_sim_shm_publish_late(m, s, st);
}

/* A reply envelope for c (request ids, tick, time), as pa_sim_apply gives. */
static void reply_envelope(pa_sim_model *m, pa_sim_state *s, const pa_cmd *c,
                           pa_reply *r) {
  pa_cmd sync = *c;
  sync.op = PA_OP_SYNC;
  pa_sim_apply(m, s, &sync, r);
  r->op = c->op;
}

/* The new map segment made and filled here, so the loop only renames it
 * (pa_stack_map_commit); the model's own copy of the cells is freed for
 * the segment's, as share_cells does. A failure only costs the loop the
 * copy: map_cmd_finish publishes the old way. */
static void stage_map(loader *ld) {
  pa_sim_model *nm = &ld->nm;
  const pa_grid *g = &nm->grid;
  pa_shm_seg seg;
  const int8_t *cells;
  char err[256];
  if (pa_stack_map_stage(ld->st, &seg, g->width, g->height, g->resolution,
                         g->origin_x, g->origin_y, g->origin_yaw, g->cells,
                         g->occupied_min, &cells, err, sizeof err) != 0) {
    pa_warn("staging the new map: %s (published on the loop)", err);
    return;
  }
  free(nm->grid.cells);
  nm->grid.cells = (int8_t *)(uintptr_t)cells;
  nm->cells_seg = seg;
  ld->staged = true;
}

static void *free_model_main(void *arg) {
  pa_sim_model_free(arg);
  free(arg);
  return NULL;
}

/* The replaced model freed on a thread of its own (hundreds of MB of a big
 * map's fields take the loop tens of ms to give back); inline if none. */
static void free_model_later(pa_sim_model *old) {
  pa_sim_model *p = malloc(sizeof *p);
  pthread_t th;
  pthread_attr_t a;
  bool started = false;
  if (p && pthread_attr_init(&a) == 0) {
    *p = *old;
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    started = pthread_create(&th, &a, free_model_main, p) == 0;
    pthread_attr_destroy(&a);
  }
  if (!started) {
    free(p);
    pa_sim_model_free(old);
  }
}

/* The loader thread: files (confined to the data directory, see
 * pa_map_guard) or the generator -> a world and/or a grid. Touches nothing
 * of the running simulation. */
static void *load_main(void *arg) {
  loader *ld = arg;
  const pa_cmd *c = &ld->cmd;
  char path[PA_CMD_PATH_MAX];
  memcpy(path, c->path, sizeof path);
  path[sizeof path - 1] = 0;
  const pa_map_guard *g = &ld->guard;
  int rc = 0;
  ld->status = PA_ERR_INVALID_MESSAGE;
  /* "ssl-a" / "ssl-b": the built-in SSL worlds, as --world names them */
  char div = c->op == PA_OP_SET_SCENARIO ? pa_sim_ssl_world_division(path) : 0;
  if (div) {
    rc = pa_sim_ssl_world(div, ld->def.ssl_robots, &ld->w, &ld->g, ld->err,
                          sizeof ld->err);
    if (rc == 0) {
      ld->have_world = true;
      ld->w.ssl_division = div;
    }
  } else if (path[0] && !ld->data_dir[0]) {
    snprintf(ld->err, sizeof ld->err,
             "no data directory for files: start pa-sim with --data_dir");
    rc = -1;
  } else if (c->op == PA_OP_SET_SCENARIO) {
    rc = path[0] ? pa_world_load_g(path, g, &ld->w, ld->err, sizeof ld->err)
                 : pa_world_default(&ld->w, ld->err, sizeof ld->err);
    if (rc == 0) {
      ld->have_world = true;
      snprintf(ld->ignored, sizeof ld->ignored, "%s", ld->w.map.ignored_keys);
      /* a world with an ssl: section: its field is the map */
      rc = ld->w.ssl_division
               ? pa_sim_ssl_world_file(&ld->w, &ld->g, ld->err, sizeof ld->err)
               : pa_map_load_g(&ld->w.map, g, &ld->g, ld->err, sizeof ld->err);
    }
  } else if (c->op == PA_OP_SET_MAP) {
    rc = path[0]
             ? pa_map_load_yaml_gk(path, g, &ld->g, ld->ignored,
                                   sizeof ld->ignored, ld->err, sizeof ld->err)
             : pa_map_load_default(&ld->g, ld->err, sizeof ld->err);
  } else if (c->gen_map.scenario > 0) {
    rc = pa_scenario_generate((int)c->gen_map.scenario - 1,
                              (uint64_t)c->gen_map.seed, &ld->g, ld->err,
                              sizeof ld->err);
  } else {
    pa_mapgen p = pa_mapgen_default();
    p.width = c->gen_map.width;
    p.height = c->gen_map.height;
    p.resolution = c->gen_map.resolution;
    p.seed = (uint64_t)c->gen_map.seed;
    p.rooms_x = (uint32_t)c->gen_map.rooms_x;
    p.rooms_y = (uint32_t)c->gen_map.rooms_y;
    p.clutter = (uint32_t)c->gen_map.clutter;
    rc = pa_map_generate(&p, &ld->g, ld->err, sizeof ld->err);
  }
  if (rc == 0) {
    ld->have_grid = true;
    /* The distance fields of a big map cost as much as reading it. */
    rc = pa_sim_int_model_prepare_take(
        &ld->def, ld->unknown_blocks,
        c->op == PA_OP_SET_SCENARIO ? &ld->w : NULL, &ld->g, &ld->nm, ld->err,
        sizeof ld->err);
    ld->have_model = rc == 0;
    /* the model has its copy: the grid's goes now, not after the swap */
    pa_grid_free(&ld->g);
    ld->have_grid = false;
  }
  if (rc == 0)
    stage_map(ld);
  ld->rc = rc;
  __atomic_store_n(&ld->done, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void loader_clear(loader *ld) {
  if (ld->staged) { /* not committed: the staging name goes */
    char name[PA_SHM_NAME_MAX];
    if (pa_shm_name(name, sizeof name, ld->st->ctl->def.instance, "map-next",
                    NULL, 0) == 0)
      pa_shm_unlink(name);
    ld->staged = false;
  }
  if (ld->have_world)
    pa_world_free(&ld->w);
  if (ld->have_grid)
    pa_grid_free(&ld->g);
  if (ld->have_model)
    pa_sim_model_free(&ld->nm);
  ld->have_world = ld->have_grid = ld->have_model = false;
  ld->busy = false;
}

/* The data directory as the guard compares it: --data_dir, else the working
 * directory, resolved once. */
static void loader_init(loader *ld, const pa_sim_def *d) {
  memset(ld, 0, sizeof *ld);
  char err[PATH_MAX + 64];
  /* created if missing: save_* and export_dataset write under it too */
  if (pa_sim_int_data_dir(d->data_dir, ld->data_dir, err, sizeof err) != 0) {
    pa_warn("%s: set_map and set_scenario will refuse files", err);
    ld->data_dir[0] = 0;
  } else if (!strcmp(ld->data_dir, "/")) {
    pa_warn("set_map and set_scenario may read any file (the data directory "
            "is /): give --data_dir");
  } else {
    pa_info("set_map and set_scenario read files under %s", ld->data_dir);
  }
  if (ld->data_dir[0]) { /* what a killed pa-sim's writers left (packing) */
    int fd = open(ld->data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int n = fd >= 0 ? pa_safe_clean_tmp(fd, ".tar.gz.tmp") : 0;
    if (n)
      pa_info("removed %d temporary file(s) a crash left in the data "
              "directory",
              n);
    if (fd >= 0)
      close(fd);
  }
  ld->guard.data_dir = ld->data_dir;
}

/* Starts loading c: PA_OK (the reply comes when it is done), or an error
 * status with r filled. */
static pa_status map_cmd_start(run_ctx *k, const pa_cmd *c, pa_reply *r) {
  loader *ld = &k->ld;
  reply_envelope(k->m, k->s, c, r);
  const pa_sim_op_def *d = pa_sim_op(c->op);
  pa_status st = d->apply ? d->apply(k->m, k->s, c, r) : PA_OK;
  if (st != PA_OK)
    return st;
  ld->cmd = *c;
  ld->rc = -1;
  ld->err[0] = 0;
  ld->ignored[0] = 0;
  ld->have_world = ld->have_grid = ld->have_model = false;
  ld->staged = false;
  ld->st = k->st;
  ld->def = k->m->def;
  ld->unknown_blocks = k->m->unknown_blocks;
  __atomic_store_n(&ld->done, 0, __ATOMIC_RELAXED);
  ld->started_ns = pa_now_ns();
  int e = pthread_create(&ld->th, NULL, load_main, ld);
  if (e != 0)
    return pa_sim_int_fail(r, PA_ERR_BUSY, "cannot start the map loader: %s",
                           strerror(e));
  ld->busy = true;
  return PA_OK;
}

/* The loader's result swapped in (one call, between two ticks): the model
 * gets the new grid (SET_MAP, GENERATE_MAP) or world (SET_SCENARIO), then
 * the map segment is republished (map_gen + 1: pa-render and pa-netgw
 * follow). */
static pa_status map_cmd_finish(run_ctx *k, pa_reply *r) {
  loader *ld = &k->ld;
  const pa_cmd *c = &ld->cmd;
  pa_sim_state *s = k->s;
  pthread_join(ld->th, NULL);
  reply_envelope(k->m, s, c, r);
  char err[256];
  uint32_t moved = 0;
  pa_status st = PA_OK;
  /* the new world's SSL field (0: none), taken before loader_clear */
  char div =
      c->op == PA_OP_SET_SCENARIO && ld->have_world ? ld->w.ssl_division : 0;
  if (ld->rc != 0) {
    /* Paths under the data directory shortened to it (the reply holds 96
     * bytes; the client knows where its files are). */
    size_t n = strlen(ld->data_dir);
    char *e = ld->err, *hit;
    while (n > 1 && (hit = strstr(e, ld->data_dir)) && hit[n] == '/')
      memmove(hit, hit + n + 1, strlen(hit + n + 1) + 1), e = hit;
    st = pa_sim_int_fail(r, ld->status, "%s", ld->err);
  } else {
    /* The model is taken (or freed) either way. */
    ld->have_model = false;
    pa_sim_model old;
    int rc = c->op == PA_OP_SET_SCENARIO
                 ? pa_sim_int_swap_world_model(k->m, s, &ld->nm, &old, err,
                                               sizeof err)
                 : pa_sim_int_swap_grid_model(k->m, s, &ld->nm, &moved, &old,
                                              err, sizeof err);
    if (rc == 0)
      free_model_later(&old);
    if (rc != 0)
      st = pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, "%s", err);
    else if (c->op == PA_OP_SET_SCENARIO &&
             pa_sim_ssl_set_field(s, div, err, sizeof err) != 0)
      st = pa_sim_int_fail(r, PA_ERR_BUSY, "%s", err);
    else if (c->op == PA_OP_GENERATE_MAP && c->gen_map.scenario > 0)
      pa_sim_ssl_free(s); /* a named scenario has no field: nor a ball */
  }
  double load_ms = (double)(pa_now_ns() - ld->started_ns) / 1e6;
  /* staged and taken: the model's cells are the segment to commit */
  bool commit = st == PA_OK && ld->staged;
  if (commit)
    ld->staged = false;
  loader_clear(ld);
  if (st != PA_OK)
    return st;
  pa_sim_rec_stop(s); /* its map and robots files would no longer match */
  if (commit &&
      pa_stack_map_commit(k->st, &k->m->cells_seg, err, sizeof err) != 0) {
    pa_warn("committing the staged map: %s (publishing it again)", err);
    pa_shm_unlink(k->m->cells_seg.name);
    commit = false;
  }
  if (!commit && pa_sim_shm_publish_map(k->m, k->st, err, sizeof err) != 0) {
    /* The model has the new map but the stack cannot hold it: say so
     * loudly; readers keep the last map. */
    pa_error("publishing the new map: %s", err);
    return pa_sim_int_fail(r, PA_ERR_BUSY, "publishing the map: %s", err);
  }
  if (ld->ignored[0]) /* as at start-up (as map_server): warned, not refused */
    pa_warn("%s %.*s: ignoring keys map_server does not read: %s",
            pa_sim_op(c->op)->name, (int)sizeof c->path, c->path, ld->ignored);
  pa_info("%s: %ux%u cells at %g m, %u robot%s, %u obstacle%s, %u moved off "
          "walls (%.0f ms)",
          pa_sim_op(c->op)->name, k->m->grid.width, k->m->grid.height,
          k->m->grid.resolution, s->robot_count, s->robot_count == 1 ? "" : "s",
          s->obstacle_count, s->obstacle_count == 1 ? "" : "s", moved, load_ms);
  r->map.moved = moved;
  r->map.width = k->m->grid.width;
  r->map.height = k->m->grid.height;
  r->map.resolution = k->m->grid.resolution;
  r->map.origin_x = k->m->grid.origin_x;
  r->map.origin_y = k->m->grid.origin_y;
  r->map.robots = s->robot_count;
  r->map.obstacles = s->obstacle_count;
  return PA_OK;
}

/* Whether command c may have changed what sim-keep holds and must be kept
 * before its reply: every command answered, and the unanswered ones that
 * hold forces or take them away; not the stream of velocity commands to
 * kinematic robots (their next tick keeps anything anyway). */
static bool keep_after(const pa_sim_state *s, const pa_cmd *c) {
  if (!(c->flags & PA_CMDF_NO_REPLY) || c->op == PA_OP_SET_FORCE ||
      c->op == PA_OP_SET_THRUST)
    return true;
  if (c->op == PA_OP_SET_CMDS) {
    for (uint32_t i = 0; i < c->count && i < PA_CMD_DRIVES_MAX; i++)
      if (c->drives[i].robot < s->robot_count &&
          s->info[c->drives[i].robot].dynamics == PA_DYN_DYNAMIC)
        return true;
    return false;
  }
  return (c->op == PA_OP_SET_CMD || c->op == PA_OP_STOP) &&
         c->robot < s->robot_count &&
         s->info[c->robot].dynamics == PA_DYN_DYNAMIC;
}

/* Replies and bookkeeping of one applied command. */
static void cmd_done(run_ctx *k, const pa_cmd *c, pa_status rc,
                     const pa_reply *r) {
  if (rc == PA_OK && (pa_sim_op_flags(c->op) & PA_SIM_OPF_PUBLISH))
    pa_sim_shm_publish_state(k->m, k->s, k->st);
  else if (k->s->world_dirty) {
    pa_sim_shm_publish_world(k->s, k->st);
    k->s->world_dirty = false;
  }
  if (keep_after(k->s, c)) /* before the reply: what it acknowledges stays */
    pa_sim_keep_write(k->s);
  else
    k->s->keep_stale = true; /* the next tick keeps it */
  finish_cmd(k->st, c, r);
}

/* The step lane's request, as the commands pa-netgw would queue: a
 * batch's SET_CMDS as queued ones, then its STEP (answered after its
 * ticks), or the refusal at once. */
static void lane_start(run_ctx *k) {
  pa_stack *st = k->st;
  pa_cmd c;
  pa_reply r;
  size_t nc = 0;
  uint32_t req = pa_sim_lane_take(st, k->s, &c, k->lane_cmds, &nc, &r);
  flush_scans(k->m, k->s, st);
  if (r.status != PA_OK) {
    pa_sim_lane_answer(st, req, &r);
    return;
  }
  for (size_t i = 0; i < nc; i++) { /* no reply, as queued ones */
    pa_sim_apply(k->m, k->s, &k->lane_cmds[i], &r);
    k->cmds++;
    if (keep_after(k->s, &k->lane_cmds[i]))
      pa_sim_keep_write(k->s);
    else
      k->s->keep_stale = true;
  }
  pa_status rc = pa_sim_apply(k->m, k->s, &c, &r);
  k->cmds++;
  k->last_cmd_ns = pa_now_ns();
  k->s->keep_stale = true; /* its drive: the next tick keeps it */
  if (rc != PA_OK) {
    pa_sim_lane_answer(st, req, &r);
  } else {
    k->stepping = k->lane_step = true;
    k->lane_req = req;
    k->step_cmd = c;
    k->step_left = c.step.ticks;
  }
}

/* Returns whether it applied anything. */
static bool consume(run_ctx *k) {
  pa_stack *st = k->st;
  bool any = false;
  pa_reply er; /* finished exports that were waited for */
  while (k->s->rec && pa_queue_space(st->reply) > 0 &&
         pa_sim_int_rec_collect(k->s, &er))
    pa_queue_push(st->reply, &er);
  if (k->ld.busy) {
    /* A load in flight holds the queue front: later commands wait for it. */
    if (!__atomic_load_n(&k->ld.done, __ATOMIC_ACQUIRE) ||
        pa_queue_space(st->reply) == 0)
      return false;
    pa_cmd c = k->ld.cmd;
    flush_scans(k->m, k->s, st);
    pa_reply r;
    pa_status rc = map_cmd_finish(k, &r);
    k->cmds++;
    k->last_cmd_ns = pa_now_ns();
    cmd_done(k, &c, rc, &r);
    any = true;
  }
  while (!k->stepping && pa_queue_space(st->reply) > 0) {
    pa_cmd c;
    int64_t pos = pa_queue_peek(st->cmd, &c);
    if (pos < 0)
      break;
    set_inflight(st->ctl, (uint64_t)pos + 1);
    any = true;
    flush_scans(k->m, k->s, st);
    pa_reply r;
    unsigned flags = pa_sim_op_flags(c.op);
    if (flags & PA_SIM_OPF_LOADER) {
      pa_status rc = map_cmd_start(k, &c, &r);
      if (rc == PA_OK)
        break; /* answered when the loader is done */
      k->cmds++;
      k->last_cmd_ns = pa_now_ns();
      cmd_done(k, &c, rc, &r);
      continue;
    }
    pa_status rc = pa_sim_apply(k->m, k->s, &c, &r);
    k->cmds++;
    k->last_cmd_ns = pa_now_ns();
    if ((flags & PA_SIM_OPF_LATER) && rc == PA_OK &&
        (c.dataset.flags & PA_DATASET_WAIT)) {
      pa_cmd q = c; /* answered by pa_sim_int_rec_collect */
      q.flags |= PA_CMDF_NO_REPLY;
      cmd_done(k, &q, rc, &r);
      continue;
    }
    if ((flags & PA_SIM_OPF_TICKS) && rc == PA_OK) {
      /* Answered after its ticks; stays at the queue front (and in flight)
       * until then. */
      k->stepping = true;
      k->step_cmd = c;
      k->step_left = c.step.ticks;
      break;
    }
    cmd_done(k, &c, rc, &r);
  }
  if (!k->stepping && !k->ld.busy && pa_sim_lane_pending(st)) {
    lane_start(k);
    any = true;
  }
  return any;
}

/* pa_queue_wait, also woken by the step lane (its client posts the queue's
 * semaphore). */
static int wait_cmd(pa_stack *st, int64_t timeout_ns) {
  int64_t deadline = pa_now_ns() + timeout_ns;
  for (;;) {
    if (pa_queue_count(st->cmd) > 0 || pa_sim_lane_pending(st))
      return 0;
    int64_t left = deadline - pa_now_ns();
    if (left <= 0)
      return PA_SHM_ETIMEDOUT;
    if (pa_shm_sem_wait(pa_queue_sem(st->cmd), left) == PA_SHM_ESYS)
      return PA_SHM_ESYS;
  }
}

/* pa_percentile_i64 of an array already sorted. */
static int64_t percentile_sorted(const int64_t *v, size_t n, double pct) {
  if (n == 0)
    return 0;
  size_t i = (size_t)(pct / 100.0 * (double)(n - 1) + 0.5);
  return v[i < n ? i : n - 1];
}

static void publish_health(run_ctx *k, int64_t now) {
  pa_health *h = &k->st->ctl->health[PA_PROC_SIM];
  h->heartbeat_ns = now;
  if (now - k->last_health < HEALTH_PERIOD_NS)
    return;
  k->last_health = now;
  h->loops = k->s->tick;
  h->overruns = k->overruns;
  /* One sort for both (each is ~0.2% of a free-running loop's time). */
  size_t n =
      k->lat->count < PA_LAT_WINDOW ? (size_t)k->lat->count : PA_LAT_WINDOW;
  int64_t tmp[PA_LAT_WINDOW];
  memcpy(tmp, k->lat->samples, n * sizeof *tmp);
  h->period_p50_ns = pa_percentile_i64(tmp, n, 50);
  h->period_p99_ns = percentile_sorted(tmp, n, 99);
  h->period_max_ns = k->lat->max;
  for (int i = 0; i < PA_SIM_PH_COUNT; i++)
    h->phase_ms[i] = k->phase_ewma[i] / 1e6;
  h->counters[PA_SIM_CTR_SCANS] = k->scans;
  h->counters[PA_SIM_CTR_CMDS] = k->cmds;
  h->counters[PA_SIM_CTR_BUMPS] = k->s->bumps;
  h->counters[PA_SIM_CTR_TICK] = k->s->tick;
  h->counters[PA_SIM_CTR_LATE_SCANS] = k->s->late_scans;
}

/* Sleeping to a deadline wakes late by the machine's wake-up latency (on a
 * VM mostly the host waking an idle vCPU, whatever the timer slack). The
 * loop sleeps to `margin` before each deadline and spins the rest. Auto mode
 * keeps the margin at the p99 of the last WAKE_WINDOW wake-ups' lateness +
 * 20 us, capped at SPIN_CAP_NS but never below 5% nor above 25% of the
 * period. What that costs on measured machines: docs/sim.md, "Loop timing". */
#define RT_SPIN_NS 300000LL  /* --realtime without --spin_us */
#define WAKE_WINDOW 256
#define SPIN_CAP_NS 250000.0
#define SPIN_PAD_NS 20000LL

typedef struct waker {
  int64_t fixed;             /* >= 0: a fixed margin [ns]; -1: auto */
  int64_t margin;            /* auto: the current margin [ns] */
  int64_t late[WAKE_WINDOW]; /* auto: lateness of recent wake-ups [ns] */
  uint32_t n;
} waker;

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void waker_init(waker *w, const pa_sim_def *d) {
  memset(w, 0, sizeof *w);
  w->fixed = d->spin_us >= 0 ? (int64_t)d->spin_us * 1000
             : d->realtime   ? RT_SPIN_NS
                             : -1;
  w->margin = 200000; /* until measured; the budget caps it */
}

static void sleep_until(waker *w, int64_t t, int64_t period) {
  int64_t margin = w->fixed;
  if (margin < 0) {
    double c = fmin(fmax(SPIN_CAP_NS, 0.05 * (double)period), 0.25 * (double)period);
    int64_t cap = (int64_t)c;
    margin = w->margin < cap ? w->margin : cap;
  }
  int64_t wake = t - margin;
  struct timespec ts = {(time_t)(wake / 1000000000), (long)(wake % 1000000000)};
  clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
  int64_t now = pa_now_ns();
  if (w->fixed < 0) {
    w->late[w->n++] = now - wake;
    if (w->n == WAKE_WINDOW) {
      qsort(w->late, WAKE_WINDOW, sizeof w->late[0], cmp_i64);
      w->margin = w->late[WAKE_WINDOW * 99 / 100] + SPIN_PAD_NS;
      w->n = 0;
    }
  }
  while (now < t)
    now = pa_now_ns();
}

static void tuner_start(pa_sim_spin_tuner *tu, int phase, int64_t now) {
  tu->phase = phase;
  tu->t0 = now;
  tu->n = 0;
  if (phase < 2)
    tu->spin = (phase ^ tu->flip) != 0;
}

void pa_sim_int_tuner_init(pa_sim_spin_tuner *tu) {
  memset(tu, 0, sizeof *tu);
  tu->spin = true; /* until measured: the way lockstep has always waited */
}

void pa_sim_int_tuner_note(pa_sim_spin_tuner *tu, int64_t now, int64_t gap) {
  if (gap > PA_SIM_TUNE_ACTIVE_NS) {
    /* not lockstep: this window says nothing */
    tuner_start(tu, tu->phase, now);
    return;
  }
  tu->n++;
  int64_t dt = now - tu->t0;
  if (tu->phase == 2) {
    if (dt >= PA_SIM_TUNE_KEEP_NS)
      tuner_start(tu, 0, now);
    return;
  }
  if (dt < PA_SIM_TUNE_PROBE_NS)
    return;
  double r = (double)tu->n * 1e9 / (double)dt;
  double *e = &tu->rate[tu->spin];
  *e = *e > 0 ? 0.5 * (*e + r) : r;
  if (tu->phase == 0) {
    tuner_start(tu, 1, now);
    return;
  }
  tu->flip = !tu->flip;
  /* Spinning costs a core: it has to be clearly faster. */
  bool spin = tu->rate[1] > 1.03 * tu->rate[0];
  tuner_start(tu, 2, now);
  tu->spin = spin;
}

void pa_sim_run(pa_sim_model *m, pa_sim_state *s, pa_stack *st,
                volatile sig_atomic_t *stop) {
  run_ctx k;
  memset(&k, 0, sizeof k);
  k.m = m;
  k.s = s;
  k.st = st;
  s->stack = st;
  loader_init(&k.ld, &m->def);
  k.lat = calloc(1, sizeof *k.lat);
  if (!k.lat) {
    pa_error("out of memory");
    return;
  }
  pa_lat_reset(k.lat);
  k.lane_cmds = calloc(
      (m->def.max_robots + PA_CMD_DRIVES_MAX - 1) / PA_CMD_DRIVES_MAX + 1,
      sizeof *k.lane_cmds);
  if (!k.lane_cmds) {
    pa_error("out of memory");
    free(k.lat);
    return;
  }
  waker wk;
  waker_init(&wk, &m->def);
  pa_sim_lane_init(st, s);
  int64_t cmd_gap = SPIN_MIN_NS; /* EWMA: paused -> the next command [ns] */
  pa_sim_spin_tuner tu;
  pa_sim_int_tuner_init(&tu);
  int64_t last_got = 0; /* when the last command came to a paused loop */
  /* The default 50 us timer slack would be most of our period error. */
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  int64_t next = pa_now_ns();
  int64_t carry = 0; /* the previous tick's end, when nothing ran since */
  while (!*stop) {
    int64_t t0 = carry ? carry : pa_now_ns();
    carry = 0;
    int64_t t1 = consume(&k) ? pa_now_ns() : t0;
    if (s->paused && !k.stepping) {
      k.last_start = 0; /* a pause is not a period */
      publish_health(&k, t1);
      /* In a lockstep session the next STEP follows within microseconds:
       * spin a little before paying a semaphore wake-up. */
      if (k.ld.busy) {
        /* The queue holds the loading command: poll for its end instead. */
        struct timespec ts = {0, LOADER_POLL_NS};
        nanosleep(&ts, NULL);
        next = pa_now_ns();
        continue;
      }
      /* The client decides before its next STEP: no job soon. */
      pa_sim_int_pool_idle(s->pool);
      bool got = false;
      if (tu.spin && t1 - k.last_cmd_ns < LOCKSTEP_ACTIVE_NS &&
          cmd_gap < SPIN_MAX_NS) {
        /* Twice the usual gap to the client's next command, bounded; the
         * yield lets the gateway and the client run on a shared core. The
         * tuner turns spinning off where it measured it slows them. */
        int64_t bound = 2 * cmd_gap < SPIN_MIN_NS   ? SPIN_MIN_NS
                        : 2 * cmd_gap > SPIN_MAX_NS ? SPIN_MAX_NS
                                                    : 2 * cmd_gap;
        while (
            !(got = pa_queue_count(st->cmd) > 0 || pa_sim_lane_pending(st)) &&
            pa_now_ns() - t1 < bound && !*stop)
          sched_yield();
      }
      if (got || wait_cmd(st, PAUSED_WAIT_NS) == 0) {
        next = pa_now_ns();
        /* Capped: a pause between two sessions is soon forgotten. */
        int64_t gap = next - t1 < 4 * SPIN_MAX_NS ? next - t1 : 4 * SPIN_MAX_NS;
        cmd_gap += (gap - cmd_gap) / 8;
        pa_sim_int_tuner_note(&tu, next, next - last_got);
        last_got = next;
      } else {
        next = pa_now_ns();
      }
      continue;
    }
    if (k.last_start)
      pa_lat_add(k.lat, t0 - k.last_start);
    k.last_start = t0;

    /* Running free (or in the middle of a STEP), a lone robot's scan may be
     * cast during the next ticks (see pa_sim_scans_settle). */
    bool lean = s->speed <= 0 || k.stepping;
    s->defer_scans = (!s->paused && s->speed <= 0) ||
                     (k.stepping && k.step_left > 1);
    /* A short lockstep STEP of a few robots: a scan takes microseconds on
     * this thread, while a worker's wake-up and watch would take a core from
     * the gateway and the client that wait for it (3 processes, often 2
     * cores). A long STEP runs free: overlapped as above. */
    s->inline_scans = s->paused && k.stepping && s->robot_count <= 8 &&
                      k.step_cmd.step.ticks <= INLINE_STEP_TICKS;
    /* Ticks back to back (free-running, STEP) read the clock once, at the
     * end of the tick (each read is ~5% of a tick); every LEAN_SAMPLE-th
     * one is timed in full for the phase costs. */
    bool timed = !lean || s->tick % LEAN_SAMPLE == 0;
    uint64_t late0 = s->late_scans;
    int64_t t2 = pa_sim_int_step(m, s, t1, timed);
    pa_sim_shm_publish_tick_at(m, s, st, t2);
    pa_sim_keep_tick(s);
    k.scans += s->scan_due_count + (s->late_scans - late0);
    /* A recording's last tick: the scans in flight go in too. */
    if (s->rec && pa_sim_int_rec_due(s)) {
      flush_scans(m, s, st);
      pa_sim_rec_stop(s);
    }
    int64_t t3 = timed ? pa_now_ns() : t2;
    if (timed) {
      s->phase_ns[PA_SIM_PH_CMD] = t1 - t0;
      s->phase_ns[PA_SIM_PH_PUBLISH] = t3 - t2;
      for (int i = 0; i < PA_SIM_PH_COUNT; i++)
        k.phase_ewma[i] += 0.01 * ((double)s->phase_ns[i] - k.phase_ewma[i]);
    }

    if (k.stepping && --k.step_left == 0) {
      flush_scans(m, s, st); /* every scan of the STEP before its reply */
      pa_reply r;
      reply_envelope(m, s, &k.step_cmd, &r);
      if (k.step_cmd.robot < s->robot_count && s->info[k.step_cmd.robot].active)
        pa_sim_int_reply_pose(&r, s, k.step_cmd.robot);
      if (k.step_cmd.flags & PA_CMDF_OBS)
        r.step.obs_seq = write_obs(&k);
      if (k.lane_step)
        pa_sim_lane_answer(st, k.lane_req, &r);
      else
        finish_cmd(st, &k.step_cmd, &r);
      k.stepping = k.lane_step = false;
    }
    publish_health(&k, t3);

    /* Lockstep (paused: the next tick is another STEP) and "as fast as
     * possible" do not sleep. */
    if (s->paused || s->speed <= 0) {
      next = t3;
      carry = t3;
      continue;
    }
    int64_t period = (int64_t)llround(1e9 / (m->def.control_hz * s->speed));
    next += period;
    int64_t now = t3; /* just taken */
    if (now > next) {
      k.overruns++;
      if (now - next > CATCH_UP_TICKS * period)
        next = now; /* too far behind: re-sync instead of bursting */
      continue;
    }
    sleep_until(&wk, next, period);
  }
  flush_scans(m, s, st);
  pa_sim_rec_close(s);
  pa_reply er;
  while (s->rec && pa_sim_int_rec_collect(s, &er))
    if (pa_queue_push(st->reply, &er) != 0)
      pa_warn("reply queue full: dropped the reply to request %llu",
              (unsigned long long)er.request_id);
  s->stack = NULL;
  if (k.ld.busy) {
    /* Bounded (the loader's limits); the command stays in flight and the
     * next pa-sim answers it busy. */
    pthread_join(k.ld.th, NULL);
    loader_clear(&k.ld);
  }
  publish_health(&k, pa_now_ns());
  pa_shm_detach(&k.obs_seg);
  free(k.lane_cmds);
  free(k.lat);
}
