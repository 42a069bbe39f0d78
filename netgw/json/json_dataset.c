/* json_dataset.c - export_dataset as OceanSim sends it ({export_dir,
 * render_image, pack_dataset}, answered with the paths written and a
 * status) and in its first form ({name, seconds | ticks} under pa-sim's
 * --dataset_dir, answered at once). pa-sim records, writes and packs (off
 * its loop thread, sim_rec.c); this side checks the request, waits as long
 * as the recording takes and names every file in the reply. */
#define _GNU_SOURCE
#include "json_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define EXPORT_MARGIN_MS 60000u /* camera frames, packing (OceanSim: 60 s) */
#define EXPORT_WAIT_MAX_MS 3600000u

/* The files of a dataset directory, in the order pa-sim writes them
 * (shm/pa_layout.h): images and frames.csv only with render_image. */
static const char *const fixed_files[] = {PA_DATASET_FIXED_FILES};

size_t pa_json_cost_export_dataset(jctx *x) {
  json_t *img = json_object_get(x->data, "render_image");
  json_t *dir = json_object_get(x->data, "export_dir");
  size_t n = json_is_string(dir) ? json_string_length(dir) : 64;
  return PA_JSON_SMALL_REPLY +
         (json_is_true(img) ? (size_t)PA_DATASET_IMAGES_MAX * (n + 24) : 0);
}

json_t *pa_json_act_export_dataset(jctx *x) {
  const char *name = NULL, *dir = NULL;
  double seconds = 10;
  long long ticks = 0;
  bool images = false, pack = false, wait = false, overwrite = false;
  int has_dir, has_wait;
  if (pa_json_str(x, "name", 64, &name) < 0 ||
      (has_dir = pa_json_str(x, "export_dir", PA_CMD_PATH_MAX - 16, &dir)) <
          0 ||
      pa_json_num(x, "seconds", &seconds) < 0 ||
      pa_json_int(x, "ticks", 1, 100000000, &ticks) < 0 ||
      pa_json_bool(x, "render_image", &images) < 0 ||
      pa_json_bool(x, "pack_dataset", &pack) < 0 ||
      (has_wait = pa_json_bool(x, "wait", &wait)) < 0 ||
      pa_json_bool(x, "overwrite", &overwrite) < 0)
    return NULL;
  if (name && dir)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "give data.export_dir (under pa-sim's --data_dir) or "
                        "data.name (under --dataset_dir), not both");
  if (name && !pa_snapshot_name_ok(name))
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "dataset name '%s': use 1 to %d of A-Z a-z 0-9 _ -",
                        name, PA_SNAPSHOT_NAME_MAX);
  if (!has_wait)
    wait = !name; /* OceanSim waits for its paths; the first form did not */
  pa_netgw *g = x->c->g;
  const pa_tick *t = pa_gw_latest(g);
  double hz = g->ctl->control_hz;
  if (!ticks) {
    if (!(seconds > 0) || !(hz > 0) || seconds * hz > 100000000)
      return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                          "data.seconds must be > 0 and at most 1e8 ticks");
    ticks = llround(seconds * hz);
    if (ticks < 1)
      ticks = 1;
  }
  uint32_t robot = UINT32_MAX;
  if (json_object_get(x->data, "robot")) {
    if (!images)
      return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                          "data.robot names the camera of render_image: give "
                          "render_image: true");
    pa_robot_info info;
    if (pa_json_robot(x, &info, &robot) < 0)
      return NULL;
  }
  unsigned wait_ms = 0;
  if (wait) {
    if (t && (t->flags & PA_TICK_PAUSED))
      return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                          "the simulation is paused: the recording of %lld "
                          "ticks would not end; resume it, or send wait: false "
                          "and step",
                          ticks);
    double speed = t ? t->speed : 1;
    double ms = speed > 0 && hz > 0 ? (double)ticks / (hz * speed) * 1e3 : 0;
    ms += g->def.request_timeout_ms + EXPORT_MARGIN_MS;
    wait_ms = ms > EXPORT_WAIT_MAX_MS ? EXPORT_WAIT_MAX_MS : (unsigned)ms;
  }
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_EXPORT_DATASET;
  cmd.flags = overwrite ? PA_CMDF_OVERWRITE : 0; /* reuse a used export_dir */
  cmd.dataset.ticks = (uint32_t)ticks;
  cmd.dataset.flags = (images ? PA_DATASET_IMAGES : 0) |
                      (pack ? PA_DATASET_PACK : 0) |
                      (wait ? PA_DATASET_WAIT : 0);
  if (name) {
    snprintf(cmd.name, sizeof cmd.name, "%s", name);
  } else if (dir) { /* none: pa-sim names it dataset_<first tick> */
    snprintf(cmd.path, sizeof cmd.path, "%s", dir);
  }
  x->c->pend_wait_ms = wait_ms;
  json_t *r = pa_json_wait_for_sim(x, &cmd, robot);
  x->c->pend_wait_ms = 0;
  return r;
}

static void add_path(json_t *a, const char *dir, const char *file) {
  json_array_append_new(a, json_sprintf("%s/%s", dir, file));
}

json_t *pa_json_done_export_dataset(jctx *x, const pa_reply *r) {
  json_t *d = pa_json_tick(r);
  json_t *name = json_object_get(x->data, "name");
  json_t *edir = json_object_get(x->data, "export_dir");
  json_t *w = json_object_get(x->data, "wait");
  bool wait = json_is_boolean(w) ? json_is_true(w) : !json_is_string(name);
  bool images = json_is_true(json_object_get(x->data, "render_image"));
  bool pack = json_is_true(json_object_get(x->data, "pack_dataset"));
  const char *dir = json_string_value(json_is_string(name) ? name : edir);
  char rel[PA_CMD_PATH_MAX];
  if (dir)
    snprintf(rel, sizeof rel, "%s", dir);
  else /* OceanSim's export_dir is optional: pa-sim named it so */
    snprintf(rel, sizeof rel, "dataset_%llu",
             (unsigned long long)r->dataset.first_tick);
  for (size_t n = strlen(rel); n > 1 && rel[n - 1] == '/';)
    rel[--n] = 0; /* as pa-sim names it */
  if (json_is_string(name))
    json_object_set(d, "name", name);
  json_object_set_new(d, "status",
                      json_string(wait ? "exported" : "recording"));
  json_object_set_new(d, "export_dir", json_string(rel));
  json_object_set_new(
      d, "under",
      json_string(json_is_string(name) ? "dataset_dir" : "data_dir"));
  json_object_set_new(d, "first_tick",
                      json_integer((json_int_t)r->dataset.first_tick));
  json_object_set_new(d, "last_tick",
                      json_integer((json_int_t)r->dataset.last_tick));
  /* every file, relative to the directory it is under (waiting: written;
   * else: to be written, images not known yet) */
  json_t *paths = json_array();
  for (size_t i = 0; i < sizeof fixed_files / sizeof fixed_files[0]; i++)
    add_path(paths, rel, fixed_files[i]);
  if (images) {
    add_path(paths, rel, "frames.csv");
    for (uint32_t i = 0; wait && i < r->dataset.images; i++) {
      char f[32];
      snprintf(f, sizeof f, "images/%06u.png", i);
      add_path(paths, rel, f);
    }
  }
  add_path(paths, rel, "dataset.json");
  bool packed = wait ? (r->dataset.flags & PA_DATASET_PACK) != 0 : pack;
  if (packed) {
    json_t *a = json_sprintf("%s.tar.gz", rel);
    json_array_append(paths, a);
    json_object_set_new(d, "archive", a);
  }
  json_object_set_new(d, "paths", paths);
  if (wait) {
    json_object_set_new(d, "ticks",
                        json_integer((json_int_t)(r->dataset.last_tick -
                                                  r->dataset.first_tick + 1)));
    json_object_set_new(d, "rows", json_integer((json_int_t)r->dataset.rows));
    json_object_set_new(d, "scans", json_integer(r->dataset.scans));
    if (images) {
      json_object_set_new(d, "images", json_integer(r->dataset.images));
      json_object_set_new(d, "images_lost",
                          json_integer(r->dataset.images_lost));
    }
  }
  return d;
}
