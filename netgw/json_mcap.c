/* json_mcap.c - the JSON actions of the Foxglove side: record_mcap,
 * stop_record_mcap (MCAP recordings of the Foxglove channels, confined to
 * --data_dir) and foxglove_info (the server's port and counters). */
#define _GNU_SOURCE
#include "foxglove.h"
#include "json_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RECORD_TOPICS_MAX 64

int pa_fox_record_path(const pa_netgw *g, const char *in, bool existing,
                       char *out, size_t out_sz, char *err, size_t err_sz) {
  char dir[PATH_MAX];
  const char *d = g->def.data_dir && *g->def.data_dir ? g->def.data_dir : ".";
  if (!realpath(d, dir)) {
    snprintf(err, err_sz, "--data_dir %s: %s", d, strerror(errno));
    return -1;
  }
  size_t n = strlen(in);
  if (!n || n >= PATH_MAX / 2) {
    snprintf(err, err_sz, "path: empty or too long");
    return -1;
  }
  if (n < 6 || strcmp(in + n - 5, ".mcap")) {
    snprintf(err, err_sz, "path %s: the file name must end in .mcap", in);
    return -1;
  }
  /* No ".." component: the check below is on the parent's real path, and
   * ".." is never needed to name a file under the data directory. */
  for (const char *p = in; (p = strstr(p, "..")); p += 2)
    if ((p == in || p[-1] == '/') && (p[2] == '/' || p[2] == 0)) {
      snprintf(err, err_sz, "path %s: '..' is not allowed", in);
      return -1;
    }
  char full[PATH_MAX * 2];
  if (in[0] == '/')
    snprintf(full, sizeof full, "%s", in);
  else
    snprintf(full, sizeof full, "%s/%s", dir, in);
  char *slash = strrchr(full, '/');
  char parent[PATH_MAX * 2], rparent[PATH_MAX];
  snprintf(parent, sizeof parent, "%.*s", (int)(slash - full), full);
  if (!parent[0])
    snprintf(parent, sizeof parent, "/");
  if (!realpath(parent, rparent)) {
    snprintf(err, err_sz, "path %s: directory %s: %s", in, parent,
             strerror(errno));
    return -1;
  }
  size_t dl = strlen(dir);
  if (strncmp(rparent, dir, dl) ||
      (rparent[dl] != '/' && rparent[dl] != 0 && strcmp(dir, "/"))) {
    snprintf(err, err_sz, "path %s: outside the data directory %s (--data_dir)",
             in, dir);
    return -1;
  }
  if ((size_t)snprintf(out, out_sz, "%s/%s", rparent, slash + 1) >= out_sz) {
    snprintf(err, err_sz, "path %s: too long", in);
    return -1;
  }
  struct stat st;
  int e = lstat(out, &st);
  if (!existing && e == 0) {
    snprintf(err, err_sz, "path %s: exists (recordings never overwrite)", in);
    return -1;
  }
  if (existing && (e != 0 || !S_ISREG(st.st_mode))) {
    snprintf(err, err_sz, "path %s: %s", in,
             e != 0 ? strerror(errno) : "not a regular file");
    return -1;
  }
  return 0;
}

static json_t *stats_json(const pa_mcap_stats *st) {
  return json_pack("{s:I, s:I, s:I, s:I, s:I}", "messages",
                   (json_int_t)st->messages, "chunks", (json_int_t)st->chunks,
                   "bytes", (json_int_t)st->bytes, "raw_bytes",
                   (json_int_t)st->raw_bytes, "dropped",
                   (json_int_t)st->dropped);
}

json_t *pa_json_act_record_mcap(jctx *x) {
  pa_netgw *g = x->c->g;
  const char *path;
  if (pa_json_need_str(x, "path", PATH_MAX / 2, &path) < 0)
    return NULL;
  double seconds = 0;
  if (pa_json_num(x, "seconds", &seconds) < 0)
    return NULL;
  if (seconds < 0 || seconds > 1e7)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.seconds %g must be in [0, 1e7] (0 = until "
                        "stop_record_mcap)",
                        seconds);
  const char *topics[RECORD_TOPICS_MAX + 1];
  const char *const *tp = NULL;
  json_t *tj = json_object_get(x->data, "topics");
  if (tj && !json_is_null(tj)) {
    if (!json_is_array(tj) || json_array_size(tj) < 1 ||
        json_array_size(tj) > RECORD_TOPICS_MAX)
      return pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                          "data.topics must be a list of 1..%d topic strings "
                          "(\"/map\", \"/r0/*\")",
                          RECORD_TOPICS_MAX);
    size_t i;
    json_t *t;
    json_array_foreach(tj, i, t) {
      const char *s = json_string_value(t);
      if (!s || s[0] != '/' || strlen(s) > 95)
        return pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                            "data.topics[%zu] must be a topic starting with "
                            "'/' (at most 95 bytes)",
                            i);
      topics[i] = s;
    }
    topics[json_array_size(tj)] = NULL;
    tp = topics;
  }
  char full[PATH_MAX], err[512];
  if (pa_fox_record_path(g, path, false, full, sizeof full, err, sizeof err) !=
      0)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE, "%s", err);
  if (pa_fox_record_start(g->fox, full, tp, seconds, err, sizeof err) != 0)
    return pa_json_fail(x, PA_ERR_BUSY, "%s", err);
  pa_info("recording MCAP to %s", full);
  return json_pack("{s:s, s:f}", "path", full, "seconds", seconds);
}

json_t *pa_json_act_stop_record_mcap(jctx *x) {
  pa_netgw *g = x->c->g;
  pa_mcap_stats st;
  char path[PATH_MAX], err[512];
  if (pa_fox_record_stop(g->fox, &st, path, sizeof path, err, sizeof err) != 0)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE, "%s", err);
  json_t *d = stats_json(&st);
  json_object_set_new(d, "path", json_string(path));
  return d;
}

/* [ms] a replay_mcap waits this long for its file to load (playarea
 * replay waits 30 s for the answer); a later load still starts the replay */
#define REPLAY_LOAD_MS 25000

json_t *pa_json_act_replay_mcap(jctx *x) {
  pa_netgw *g = x->c->g;
  const char *path;
  if (pa_json_need_str(x, "path", PATH_MAX / 2, &path) < 0)
    return NULL;
  char full[PATH_MAX], err[512];
  if (pa_fox_record_path(g, path, true, full, sizeof full, err, sizeof err) !=
      0)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE, "%s", err);
  if (!(x->act->flags & JF_SIM)) /* its row must say so: the reply waits */
    return pa_json_fail(x, PA_ERR_BUSY, "internal: replay_mcap may not wait");
  /* The file is read off the loop; the answer comes when it is loaded. */
  uint64_t req = ++g->next_req;
  if (pa_fox_replay_start(g->fox, full, x->c->id, req, err, sizeof err) != 0)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE, "%s", err);
  x->c->pend = PEND_JSON;
  x->c->pend_action = pa_json_action_id(x->act);
  pa_gw_wait_local(x->c, req, REPLAY_LOAD_MS);
  return JPENDING;
}

json_t *pa_json_done_replay_mcap(jctx *x, const pa_reply *r) {
  (void)r;
  pa_fox_info i;
  pa_fox_get_info(x->c->g->fox, &i);
  return json_pack("{s:s, s:i}", "path", i.replay_path ? i.replay_path : "",
                   "commands", (int)i.replay_total);
}

json_t *pa_json_act_foxglove_info(jctx *x) {
  pa_fox_info i;
  pa_fox_get_info(x->c->g->fox, &i);
  json_t *d = json_pack("{s:i, s:i, s:I, s:I, s:I, s:b}", "port", (int)i.port,
                        "clients", (int)i.clients, "sent", (json_int_t)i.sent,
                        "dropped", (json_int_t)i.dropped, "jpeg_frames",
                        (json_int_t)i.jpeg_frames, "recording", i.recording);
  if (i.recording) {
    json_t *r = stats_json(&i.rec);
    json_object_set_new(r, "path", json_string(i.record_path));
    json_object_set_new(d, "record", r);
  }
  if (i.replay[0])
    json_object_set_new(
        d, "replay",
        json_pack("{s:s, s:i, s:i, s:i, s:s}", "state", i.replay, "pushed",
                  (int)i.replay_pushed, "total", (int)i.replay_total, "errors",
                  (int)i.replay_errors, "detail", i.replay_detail));
  return d;
}
