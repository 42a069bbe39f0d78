/* foxglove_rec.c - MCAP recordings of the Foxglove channels (the /commands
 * log, the final /state) and their replay. */
#define _GNU_SOURCE
#include "foxglove_int.h"

#include "pa_safefile.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- recording ----------------------------------------------------- */

/* A replay waits for pa-sim's replies as long as for it to take them. */
#define REPLAY_WAIT_MS 60000
static void replay_done(pa_netgw *g, void *arg, uint64_t tag, const pa_reply *r,
                        pa_status st, const char *msg);

void pa_fox_note_command(pa_netgw *g, const pa_cmd *cmd) {
  pa_fox *f = g->fox;
  if (!f || !f->rec)
    return;
  /* the ticks of the commands before it, before the ring laps them (steps
   * come faster than the turn timer) */
  pa_fox_drain(f);
  if (!f->rec)
    return;
  const pa_tick *t = pa_gw_latest(g);
  uint64_t ns = pa_fox_ns(t ? t->sim_time : 0);
  int ch = pa_fox_rec_channel(f, PA_FOX_COMMANDS,
                              &f->rec_world[PA_FOX_COMMANDS], "/commands");
  if (!ch)
    return;
  /* A packed SET_CMDS is recorded as the SET_CMDs it stands for: /commands
   * keeps one command per message, each replayable on its own. */
  uint32_t n = cmd->op == PA_OP_SET_CMDS ? cmd->count : 1;
  for (uint32_t i = 0; i < n && i < PA_CMD_DRIVES_MAX; i++) {
    pa_cmd one;
    const pa_cmd *c = cmd;
    if (cmd->op == PA_OP_SET_CMDS) {
      const pa_cmd_drive_of *e = &cmd->drives[i];
      memset(&one, 0, sizeof one);
      one.client_id = cmd->client_id;
      one.request_id = cmd->request_id;
      one.op = PA_OP_SET_CMD;
      one.flags = cmd->flags;
      one.robot = e->robot;
      one.drive = (pa_cmd_drive){
          .v = e->v, .vy = e->vy, .w = e->w, .frame = PA_FRAME_ROBOT};
      c = &one;
    }
    pa_fox_buf b = {0};
    pa_fox_enc_command(&b, t ? t->tick : 0, c);
    if (!b.oom)
      pa_mcap_write(f->rec, ch, ns, ns, b.p, b.n);
    pa_fox_buf_free(&b);
  }
}

#define RECORD_NUMBERED_MAX 9999 /* run.1.mcap .. run.9999.mcap */

int pa_fox_record_next_path(const pa_netgw *g, const char *in, char *out,
                            size_t out_sz, char *err, size_t err_sz) {
  char cand[PATH_MAX], e2[256];
  size_t n = strlen(in);
  if (n < 6 || n >= sizeof cand - 16 || strcmp(in + n - 5, ".mcap"))
    return pa_core_data_path(g, in, false, out, out_sz, err, err_sz);
  snprintf(cand, sizeof cand, "%s", in);
  for (int k = 1; k <= RECORD_NUMBERED_MAX + 1; k++) {
    if (pa_core_data_path(g, cand, false, out, out_sz, err, err_sz) == 0) {
      if (k > 1)
        pa_info("--record: %s exists (an earlier run of this pa-netgw): "
                "recording to %s",
                in, cand);
      return 0;
    }
    /* only a regular file that exists moves on to the next number */
    if (pa_core_data_path(g, cand, true, out, out_sz, e2, sizeof e2) != 0)
      return -1;
    snprintf(cand, sizeof cand, "%.*s.%d.mcap", (int)(n - 5), in, k);
  }
  snprintf(err, err_sz, "path %s: %s.%d.mcap exist already", in, in,
           RECORD_NUMBERED_MAX);
  return -1;
}

int pa_fox_record_start(pa_fox *f, const char *path, const char *const *topics,
                        double seconds, char *err, size_t err_sz) {
  if (f->rec) {
    snprintf(err, err_sz,
             "a recording to %s is running: stop_record_mcap "
             "first",
             f->rec_path);
    return -1;
  }
  if (strlen(path) >= sizeof f->rec_path) {
    snprintf(err, err_sz, "path: longer than %zu bytes",
             sizeof f->rec_path - 1);
    return -1;
  }
  char **tl = NULL;
  if (topics) {
    size_t n = 0;
    while (topics[n])
      n++;
    tl = calloc(n + 1, sizeof *tl);
    for (size_t i = 0; tl && i < n; i++)
      if (!(tl[i] = strdup(topics[i]))) {
        pa_fox_free_topics(tl);
        tl = NULL;
      }
    if (!tl) {
      snprintf(err, err_sz, "out of memory");
      return -1;
    }
  }
  /* opened beneath the data directory through no symlink, O_EXCL
   * (pa_safefile): a recording never replaces a file */
  char dd[PATH_MAX];
  const char *dflag =
      f->g->def.data_dir && *f->g->def.data_dir ? f->g->def.data_dir : ".";
  int root = realpath(dflag, dd) ? pa_safe_root_open(dd, err, err_sz) : -1;
  int fd = root < 0 ? -1 : pa_safe_open_direct(root, dd, path, 0, err, err_sz);
  if (root >= 0)
    close(root);
  else
    snprintf(err, err_sz, "--data_dir %s: %s", dflag, strerror(errno));
  if (fd < 0) {
    pa_fox_free_topics(tl);
    return -1;
  }
  pa_mcap_def d = pa_mcap_def_default();
  d.path = path;
  d.fd = fd;
  d.profile = "";
  d.library = "playarea";
  f->rec = pa_mcap_open(&d, err, err_sz);
  if (!f->rec) {
    pa_fox_free_topics(tl);
    return -1;
  }
  snprintf(f->rec_path, sizeof f->rec_path, "%s", path);
  f->rec_topics = tl;
  f->rec_seconds = seconds > 0 ? seconds : 0;
  f->rec_until = 0;
  f->rec_started_time = false;
  f->rec_any = false;
  memset(f->rec_schema, 0, sizeof f->rec_schema);
  memset(f->rec_world, 0, sizeof f->rec_world);
  for (uint32_t r = 0; r < f->g->ctl->def.max_robots; r++)
    memset(f->robots[r].rec, 0, sizeof f->robots[r].rec);
  f->map_dirty = f->scene_dirty = true; /* the file starts with both */
  f->next_state_time = 0;
  if (f->idle) { /* from what is new on (as on_turn would) */
    f->state_cur = pa_ring_cursor_now(f->g->st->state);
    f->scan_cur = pa_ring_cursor_now(f->g->st->scan);
    f->cam_cur = pa_ring_cursor_now(f->g->st->camera);
    f->idle = false;
  }
  pa_fox_cam_update(f);
  pa_fox_arm(f);
  return 0;
}

int pa_fox_record_stop(pa_fox *f, pa_mcap_stats *st, char *path, size_t path_sz,
                       char *err, size_t err_sz) {
  if (!f->rec) {
    snprintf(err, err_sz, "no recording is running");
    return -1;
  }
  snprintf(path, path_sz, "%s", f->rec_path);
  pa_fox_drain(f); /* the ticks since the last turn (the last step's) */
  /* The end state, to the bit: what a replay must reach. */
  const pa_tick *t = pa_gw_latest(f->g);
  int ch = pa_fox_rec_channel(f, PA_FOX_STATE, &f->rec_world[PA_FOX_STATE],
                              "/state");
  if (t && ch) {
    pa_fox_refresh_world(f);
    pa_fox_buf b = {0};
    pa_fox_enc_state(&b, t, f->info, f->n_info);
    if (!b.oom)
      pa_mcap_write(f->rec, ch, pa_fox_ns(t->sim_time), pa_fox_ns(t->sim_time),
                    b.p, b.n);
    pa_fox_buf_free(&b);
  }
  int rc = pa_mcap_close(f->rec, st, err, err_sz);
  f->rec = NULL;
  f->rec_path[0] = 0;
  pa_fox_free_topics(f->rec_topics);
  f->rec_topics = NULL;
  pa_fox_cam_update(f);
  return rc;
}

void pa_fox_get_info(pa_fox *f, pa_fox_info *o) {
  memset(o, 0, sizeof *o);
  o->port = f->port;
  o->clients = f->n_conns;
  o->sent = f->sent;
  o->dropped = f->dropped;
  o->jpeg_frames = f->jpeg_frames;
  o->recording = f->rec != NULL;
  if (f->rec) {
    snprintf(o->record_path, sizeof o->record_path, "%s", f->rec_path);
    pa_mcap_get_stats(f->rec, &o->rec);
    pa_mcap_error(f->rec, o->record_error, sizeof o->record_error);
  }
  o->replay = f->rp.state;
  o->replay_path = f->rp.path;
  o->replay_pushed = f->rp.next;
  o->replay_total = f->rp.n;
  o->replay_errors = f->rp.errors;
  snprintf(o->replay_detail, sizeof o->replay_detail, "%s", f->rp.detail);
}

/* ---- replay -------------------------------------------------------- */

/* A file's load on the worker thread; the loop only looks at `done`. */
typedef struct fox_replay_job {
  pthread_t thread;
  char *path;
  pa_cmd *cmds;
  uint32_t n, cap;
  char *final; /* the last /state */
  size_t final_len;
  int cancel; /* atomic: the gateway stops */
  int done;   /* atomic: the thread has finished */
  char err[256];
} fox_replay_job;

static int replay_msg(void *arg, const char *topic, uint64_t log_ns,
                      const uint8_t *d, size_t n) {
  (void)log_ns;
  fox_replay_job *j = arg;
  if (__atomic_load_n(&j->cancel, __ATOMIC_ACQUIRE))
    return snprintf(j->err, sizeof j->err, "the gateway stopped"), 1;
  if (!strcmp(topic, "/state")) {
    free(j->final);
    j->final = malloc(n + 1);
    if (!j->final)
      return snprintf(j->err, sizeof j->err, "out of memory"), 1;
    memcpy(j->final, d, n);
    j->final[n] = 0;
    j->final_len = n;
  } else if (!strcmp(topic, "/commands")) {
    if (j->n == FOX_REPLAY_MAX)
      return snprintf(j->err, sizeof j->err,
                      "more than %u /commands (the replay limit)",
                      FOX_REPLAY_MAX),
             1;
    if (j->n == j->cap) {
      uint32_t cap = j->cap ? j->cap * 2 : 256;
      pa_cmd *p = realloc(j->cmds, cap * sizeof *p);
      if (!p)
        return snprintf(j->err, sizeof j->err, "out of memory"), 1;
      j->cmds = p;
      j->cap = cap;
    }
    if (pa_fox_dec_command((const char *)d, n, &j->cmds[j->n]) != 0)
      return snprintf(j->err, sizeof j->err,
                      "a malformed /commands message (number %u)", j->n + 1),
             1;
    j->n++;
  }
  return 0;
}

/* The worker: reads the whole file; the reason in j->err on failure. */
static void *replay_load(void *arg) {
  fox_replay_job *j = arg;
  char err[sizeof j->err];
  long got = pa_mcap_read(j->path, replay_msg, j, err, sizeof err);
  if (got < 0) {
    /* the reason without the full path (the client named the file) */
    size_t pl = strlen(j->path);
    const char *why = strncmp(err, j->path, pl) || strncmp(err + pl, ": ", 2)
                          ? err
                          : err + pl + 2;
    snprintf(j->err, sizeof j->err, "%s", why);
  } else if (!j->err[0] && (!j->n || !j->final)) {
    snprintf(j->err, sizeof j->err,
             "no /commands or no final /state (recorded by record_mcap and "
             "stopped by stop_record_mcap?)");
  }
  __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void job_free(fox_replay_job *j) {
  free(j->path);
  free(j->cmds);
  free(j->final);
  free(j);
}

void pa_fox_replay_cancel(pa_fox *f) {
  fox_replay_job *j = f->rp.job;
  if (!j)
    return;
  __atomic_store_n(&j->cancel, 1, __ATOMIC_RELEASE);
  pthread_join(j->thread, NULL);
  job_free(j);
  f->rp.job = NULL;
  f->rp.state = "failed";
}

int pa_fox_replay_start(pa_fox *f, const char *path, uint64_t client_id,
                        uint64_t req, char *err, size_t err_sz) {
  if (!strcmp(f->rp.state, "running") || f->rp.job) {
    snprintf(err, err_sz, "a replay is running");
    return -1;
  }
  fox_replay_job *j = calloc(1, sizeof *j);
  if (!j || !(j->path = strdup(path))) {
    free(j);
    snprintf(err, err_sz, "out of memory");
    return -1;
  }
  int rc = pthread_create(&j->thread, NULL, replay_load, j);
  if (rc != 0) {
    job_free(j);
    snprintf(err, err_sz, "cannot start the replay's reader: %s", strerror(rc));
    return -1;
  }
  f->rp.job = j;
  f->rp.wait_client = client_id;
  f->rp.wait_req = req;
  f->rp.state = "loading";
  f->rp.detail[0] = 0;
  f->rp.n = f->rp.next = f->rp.errors = 0;
  free(f->rp.path);
  f->rp.path = strdup(path);
  pa_fox_arm(f); /* the turn timer watches the load */
  return 0;
}

/* The loaded commands become the replay: pauses the sim first (only the
 * recorded commands, steps among them, move it). 0, or -1 with err. */
static int replay_begin(pa_fox *f, fox_replay_job *j, char *err,
                        size_t err_sz) {
  if (j->err[0]) {
    snprintf(err, err_sz, "%s", j->err);
    return -1;
  }
  free(f->rp.cmds);
  free(f->rp.final);
  f->rp.cmds = j->cmds;
  f->rp.n = j->n;
  f->rp.final = j->final;
  f->rp.final_len = j->final_len;
  j->cmds = NULL;
  j->final = NULL;
  f->rp.next = 0;
  f->rp.errors = 0;
  f->rp.sync_req = 0;
  f->rp.detail[0] = 0;
  f->rp.state = "running";
  pa_cmd p;
  memset(&p, 0, sizeof p);
  p.op = PA_OP_PAUSE;
  if (pa_core_ask(f->g, PA_LIM_SRC_REPLAY, &p, 1, REPLAY_WAIT_MS, replay_done,
                  NULL, 0, err, err_sz) != 0) {
    f->rp.state = "failed";
    return -1;
  }
  f->rp.deadline = pa_now_ns() + 60 * 1000000000LL;
  return 0;
}

/* On the loop, once the worker is done: the replay starts or fails, and the
 * waiting replay_mcap gets its answer. */
static void replay_loaded(pa_fox *f) {
  fox_replay_job *j = f->rp.job;
  if (!__atomic_load_n(&j->done, __ATOMIC_ACQUIRE))
    return;
  pthread_join(j->thread, NULL);
  f->rp.job = NULL;
  pa_reply r;
  memset(&r, 0, sizeof r);
  r.client_id = f->rp.wait_client;
  r.request_id = f->rp.wait_req;
  r.status = PA_OK;
  const pa_tick *t = pa_gw_latest(f->g);
  r.tick = t ? t->tick : 0;
  r.sim_time = t ? t->sim_time : 0;
  char err[256];
  if (replay_begin(f, j, err, sizeof err) != 0) {
    f->rp.state = "failed";
    snprintf(f->rp.detail, sizeof f->rp.detail, "%s", err);
    pa_info("replay: failed: %s", err);
    r.status = PA_ERR_INVALID_MESSAGE;
    snprintf(r.msg, sizeof r.msg, "%.95s", err); /* r.msg's size */
  }
  job_free(j);
  pa_gw_local_reply(f->g, &r);
}

static void replay_end(pa_fox *f, const char *state, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void replay_end(pa_fox *f, const char *state, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->rp.detail, sizeof f->rp.detail, fmt, ap);
  va_end(ap);
  f->rp.state = state;
  pa_info("replay: %s: %s", state, f->rp.detail);
}

/* Pushes what the queue takes; the SYNC after the last one. */
void pa_fox_replay_feed(pa_fox *f) {
  if (f->rp.job)
    replay_loaded(f);
  if (strcmp(f->rp.state, "running"))
    return;
  if (pa_now_ns() > f->rp.deadline) {
    replay_end(f, "failed", "pa-sim did not take the commands in 60 s");
    return;
  }
  char err[160];
  while (f->rp.next < f->rp.n) {
    pa_cmd c = f->rp.cmds[f->rp.next];
    c.flags &= ~(uint32_t)PA_CMDF_NO_REPLY; /* every error counted */
    if (pa_core_ask(f->g, PA_LIM_SRC_REPLAY, &c, 1, REPLAY_WAIT_MS, replay_done,
                    NULL, 0, err, sizeof err) != 0)
      return; /* full: the next turn goes on */
    f->rp.next++;
  }
  if (!f->rp.sync_req) {
    pa_cmd c;
    memset(&c, 0, sizeof c);
    c.op = PA_OP_SYNC;
    if (pa_core_ask(f->g, PA_LIM_SRC_REPLAY, &c, 1, REPLAY_WAIT_MS, replay_done,
                    NULL, 0, err, sizeof err) == 0)
      f->rp.sync_req = c.request_id;
  }
}

/* pa-sim's answer to a replayed command: errors counted; the SYNC's ends
 * the replay (none in time: the 60 s deadline fails it). */
static void replay_done(pa_netgw *g, void *arg, uint64_t tag, const pa_reply *r,
                        pa_status st, const char *msg) {
  (void)arg, (void)tag, (void)st, (void)msg;
  pa_fox *f = g->fox;
  if (!f || !r || strcmp(f->rp.state, "running"))
    return;
  if (r->status != PA_OK)
    f->rp.errors++;
  if (!f->rp.sync_req || r->request_id != f->rp.sync_req)
    return;
  const pa_tick *t = pa_gw_latest(f->g);
  char why[200];
  if (!t)
    replay_end(f, "failed", "no state record");
  else if (pa_fox_cmp_state(f->rp.final, f->rp.final_len, t, why, sizeof why) ==
           0)
    replay_end(f, "match", "%u commands (%u refused): %s", f->rp.n,
               f->rp.errors, why);
  else
    replay_end(f, "mismatch", "%u commands (%u refused): %s", f->rp.n,
               f->rp.errors, why);
}
