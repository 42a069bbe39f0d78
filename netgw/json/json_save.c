/* json_save.c - the world to and from files under pa-sim's --data_dir:
 * OceanSim's save_snapshot_json / load_snapshot_json, Player's SAVE and
 * save_world (a world YAML).
 * pa-sim writes and reads the file (it holds the whole state and the data
 * directory); this side checks the request and shapes the reply. */
#define _GNU_SOURCE
#include "json_int.h"

#include <stdio.h>
#include <string.h>

#define SAVE_DEFAULT_PATH "snapshot.json"

static json_t *snapshot_file(jctx *x, uint32_t op, const char *dflt) {
  const char *path = dflt;
  int r = pa_json_str(x, "path", PA_CMD_PATH_MAX, &path);
  if (r < 0)
    return NULL;
  if (r == 0 && !dflt)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.path is required (a file under pa-sim's "
                        "--data_dir)");
  bool overwrite = false; /* an existing file is refused unless asked */
  if (op != PA_OP_LOAD_SNAPSHOT_JSON &&
      pa_json_bool(x, "overwrite", &overwrite) < 0)
    return NULL;
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = op;
  cmd.flags = overwrite ? PA_CMDF_OVERWRITE : 0;
  snprintf(cmd.path, sizeof cmd.path, "%s", path);
  return pa_json_wait_for_sim(x, &cmd, 0);
}

json_t *pa_json_act_save_snapshot_json(jctx *x) {
  return snapshot_file(x, PA_OP_SAVE_SNAPSHOT_JSON, SAVE_DEFAULT_PATH);
}

json_t *pa_json_act_load_snapshot_json(jctx *x) {
  return snapshot_file(x, PA_OP_LOAD_SNAPSHOT_JSON, NULL);
}

/* Player's SAVE: the world to a file (default snapshot.json). */
json_t *pa_json_act_save(jctx *x) {
  return snapshot_file(x, PA_OP_SAVE_SNAPSHOT_JSON, SAVE_DEFAULT_PATH);
}

/* The world as a world YAML (+ its map beside it) that --world loads. */
json_t *pa_json_act_save_world(jctx *x) {
  return snapshot_file(x, PA_OP_SAVE_WORLD, NULL);
}

json_t *pa_json_done_snapshot_json(jctx *x, const pa_reply *r) {
  json_t *p = json_object_get(x->data, "path");
  json_t *d = json_object();
  json_object_set_new(d, "path",
                      json_is_string(p) ? json_copy(p)
                                        : json_string(SAVE_DEFAULT_PATH));
  json_object_set_new(
      d, "status",
      json_string(r->op == PA_OP_LOAD_SNAPSHOT_JSON ? "loaded" : "saved"));
  if (r->op == PA_OP_SAVE_WORLD && json_is_string(p)) {
    /* the map written beside it */
    const char *w = json_string_value(p);
    const char *dot = strrchr(w, '.');
    char stem[PA_CMD_PATH_MAX], m[PA_CMD_PATH_MAX + 16];
    snprintf(stem, sizeof stem, "%.*s", (int)(dot ? dot - w : (int)strlen(w)),
             w);
    json_t *files = json_array();
    json_array_append(files, p);
    snprintf(m, sizeof m, "%s.map.yaml", stem);
    json_array_append_new(files, json_string(m));
    snprintf(m, sizeof m, "%s.map.png", stem);
    json_array_append_new(files, json_string(m));
    json_object_set_new(d, "paths", files);
  }
  json_object_set_new(d, "robots", json_integer(r->snapshot.robots));
  json_object_set_new(d, "obstacles", json_integer(r->snapshot.obstacles));
  json_object_set_new(d, "saved_tick",
                      json_integer((json_int_t)r->snapshot.tick));
  json_object_set_new(d, "saved_sim_time", json_real(r->snapshot.sim_time));
  json_object_set_new(d, "tick", json_integer((json_int_t)r->tick));
  return d;
}
