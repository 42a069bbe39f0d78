/* foxglove_rec.c - MCAP recordings of the Foxglove channels (the /commands
 * log, the final /state) and their replay. */
#define _GNU_SOURCE
#include "foxglove_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- recording ----------------------------------------------------- */

void pa_fox_note_command(pa_netgw *g, const pa_cmd *cmd) {
  pa_fox *f = g->fox;
  if (!f || !f->rec)
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
  pa_mcap_def d = pa_mcap_def_default();
  d.path = path;
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
  memset(f->rec_schema, 0, sizeof f->rec_schema);
  memset(f->rec_world, 0, sizeof f->rec_world);
  for (uint32_t r = 0; r < f->g->ctl->def.max_robots; r++)
    memset(f->robots[r].rec, 0, sizeof f->robots[r].rec);
  f->map_dirty = f->scene_dirty = true; /* the file starts with both */
  f->next_state_time = 0;
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
  }
  o->replay = f->rp.state;
  o->replay_pushed = f->rp.next;
  o->replay_total = f->rp.n;
  o->replay_errors = f->rp.errors;
  snprintf(o->replay_detail, sizeof o->replay_detail, "%s", f->rp.detail);
}

/* ---- replay -------------------------------------------------------- */

typedef struct replay_load {
  pa_cmd *cmds;
  uint32_t n, cap;
  char *final;
  size_t final_len;
  bool bad;
} replay_load;

static int replay_msg(void *arg, const char *topic, uint64_t log_ns,
                      const uint8_t *d, size_t n) {
  (void)log_ns;
  replay_load *l = arg;
  if (!strcmp(topic, "/state")) {
    free(l->final);
    l->final = malloc(n + 1);
    if (l->final) {
      memcpy(l->final, d, n);
      l->final[n] = 0;
      l->final_len = n;
    }
  } else if (!strcmp(topic, "/commands")) {
    if (l->n == l->cap) {
      uint32_t cap = l->cap ? l->cap * 2 : 256;
      pa_cmd *p = realloc(l->cmds, cap * sizeof *p);
      if (!p)
        return 1;
      l->cmds = p;
      l->cap = cap;
    }
    if (pa_fox_dec_command((const char *)d, n, &l->cmds[l->n]) != 0) {
      l->bad = true;
      return 1;
    }
    l->n++;
  }
  return 0;
}

int pa_fox_replay_start(pa_fox *f, const char *path, char *err, size_t err_sz) {
  if (!strcmp(f->rp.state, "running")) {
    snprintf(err, err_sz, "a replay is running");
    return -1;
  }
  replay_load l = {0};
  long got = pa_mcap_read(path, replay_msg, &l, err, err_sz);
  if (got < 0 || l.bad || !l.n || !l.final) {
    if (got < 0)
      ; /* err says why */
    else if (l.bad)
      snprintf(err, err_sz, "%s: a malformed /commands message", path);
    else if (!l.n || !l.final)
      snprintf(err, err_sz,
               "%s: no /commands or no final /state (recorded by "
               "record_mcap and stopped by stop_record_mcap?)",
               path);
    free(l.cmds);
    free(l.final);
    return -1;
  }
  free(f->rp.cmds);
  free(f->rp.final);
  f->rp.cmds = l.cmds;
  f->rp.n = l.n;
  f->rp.next = 0;
  f->rp.errors = 0;
  f->rp.final = l.final;
  f->rp.final_len = l.final_len;
  f->rp.sync_req = 0;
  f->rp.detail[0] = 0;
  f->rp.state = "running";
  /* Paused first: only the recorded commands (steps among them) move it. */
  pa_cmd p;
  memset(&p, 0, sizeof p);
  p.op = PA_OP_PAUSE;
  p.client_id = FOX_REPLAY_ID;
  p.request_id = ++f->g->next_req;
  if (pa_lim_queue_push(f->g, PA_LIM_SRC_REPLAY, &p) != 0) {
    f->rp.state = "failed";
    snprintf(err, err_sz, "the command queue is full");
    return -1;
  }
  f->rp.deadline = pa_now_ns() + 60 * 1000000000LL;
  pa_fox_replay_feed(f);
  pa_fox_arm(f);
  return 0;
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
  if (strcmp(f->rp.state, "running"))
    return;
  if (pa_now_ns() > f->rp.deadline) {
    replay_end(f, "failed", "pa-sim did not take the commands in 60 s");
    return;
  }
  while (f->rp.next < f->rp.n) {
    pa_cmd c = f->rp.cmds[f->rp.next];
    c.client_id = FOX_REPLAY_ID;
    c.request_id = ++f->g->next_req;
    c.flags &= ~(uint32_t)PA_CMDF_NO_REPLY; /* every error counted */
    if (pa_lim_queue_push(f->g, PA_LIM_SRC_REPLAY, &c) != 0)
      return; /* full: the next turn goes on */
    f->rp.next++;
  }
  if (!f->rp.sync_req) {
    pa_cmd c;
    memset(&c, 0, sizeof c);
    c.op = PA_OP_SYNC;
    c.client_id = FOX_REPLAY_ID;
    c.request_id = ++f->g->next_req;
    if (pa_lim_queue_push(f->g, PA_LIM_SRC_REPLAY, &c) == 0)
      f->rp.sync_req = c.request_id;
  }
}

void pa_fox_replay_reply(pa_fox *f, const pa_reply *r) {
  if (strcmp(f->rp.state, "running"))
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
