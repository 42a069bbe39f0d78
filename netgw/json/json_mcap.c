/* json_mcap.c - the JSON actions of the Foxglove side: record_mcap,
 * stop_record_mcap (MCAP recordings of the Foxglove channels, confined to
 * --data_dir), replay_mcap and foxglove_info (the server's port and
 * counters). The shapes are checked here; the work is the Foxglove
 * front-end's, asked through the core (pa_core_call). */
#define _GNU_SOURCE
#include "json_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RECORD_TOPICS_MAX 64

/* The Foxglove front-end's service op with args (taken): its result as the
 * response data, or its error. */
static json_t *fox_call(jctx *x, const char *op, json_t *args) {
  pa_status st = PA_ERR_INVALID_MESSAGE;
  char err[512] = "";
  json_t *r = pa_core_call(x->c->g, "foxglove", op, args, &st, err, sizeof err);
  json_decref(args);
  if (!r)
    return pa_json_fail(x, st, "%s", err);
  return r;
}

json_t *pa_json_act_record_mcap(jctx *x) {
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
  json_t *args = json_pack("{s:s, s:f}", "path", path, "seconds", seconds);
  if (tp) {
    json_t *ta = json_array();
    for (const char *const *t = tp; *t; t++)
      json_array_append_new(ta, json_string(*t));
    json_object_set_new(args, "topics", ta);
  }
  return fox_call(x, "record_start", args);
}

json_t *pa_json_act_stop_record_mcap(jctx *x) {
  return fox_call(x, "record_stop", json_object());
}

/* How long replay_mcap waits for its file to load (off the loop). */
#define REPLAY_LOAD_MS 25000

json_t *pa_json_act_replay_mcap(jctx *x) {
  pa_netgw *g = x->c->g;
  const char *path;
  if (pa_json_need_str(x, "path", PATH_MAX / 2, &path) < 0)
    return NULL;
  if (!(x->act->flags & JF_SIM)) /* its row must say so: the reply waits */
    return pa_json_fail(x, PA_ERR_BUSY, "internal: replay_mcap may not wait");
  /* The file is read off the loop; the answer comes when it is loaded
   * (pa_gw_local_reply, as pa-sim's replies come). */
  uint64_t req = ++g->next_req;
  json_t *r = fox_call(x, "replay_start",
                       json_pack("{s:s, s:I, s:I}", "path", path, "client",
                                 (json_int_t)x->c->id, "req", (json_int_t)req));
  if (!r)
    return NULL;
  json_decref(r);
  x->c->pend = PEND_JSON;
  x->c->pend_action = pa_json_action_id(x->act);
  pa_gw_wait_local(x->c, req, REPLAY_LOAD_MS);
  return JPENDING;
}

json_t *pa_json_act_foxglove_info(jctx *x) {
  return fox_call(x, "info", json_object());
}

/* The loaded replay, once its file is in: its path and command count. */
json_t *pa_json_done_replay_mcap(jctx *x, const pa_reply *r) {
  (void)r;
  pa_status st;
  char err[256];
  json_t *info =
      pa_core_call(x->c->g, "foxglove", "info", NULL, &st, err, sizeof err);
  json_t *rp = json_object_get(info, "replay");
  const char *path = json_string_value(json_object_get(rp, "path"));
  json_t *d = json_pack("{s:s, s:I}", "path", path ? path : "", "commands",
                        json_integer_value(json_object_get(rp, "total")));
  json_decref(info);
  return d;
}
