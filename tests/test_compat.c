/* test_compat.c - OceanSim v2 and Player requests as their clients send them
 * (issue 16), against the real pa-sim and pa-netgw: strict envelopes, state
 * fields, obstacles moved by set_pose, the planar 3-D pose, PAUSE as a
 * toggle and a property's index. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <sys/stat.h>

#include "netgw_harness.h"

static ng_stack stack; /* torn down even when a test fails */
static int cfd = -1;
static char ddir[512]; /* a test's --data_dir (removed by teardown) */

static int teardown(void **state) {
  (void)state;
  if (cfd >= 0)
    close(cfd);
  cfd = -1;
  int rc = ng_stop(&stack) == 0 ? 0 : -1;
  if (ddir[0]) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", ddir);
    if (system(cmd) != 0)
      rc = -1;
    ddir[0] = 0;
  }
  return rc;
}

/* Sends a request (action + data text) and returns the whole reply. */
static json_t *req(const char *type, const char *action, const char *data) {
  static char line[4096], buf[1 << 20];
  snprintf(line, sizeof line,
           "{\"type\":\"%s\",\"protocol_version\":2,\"action\":\"%s\","
           "\"data\":%s}",
           type, action, data ? data : "{}");
  if (ng_ask(cfd, line, buf, sizeof buf) < 0)
    fail_msg("no reply to %s", line);
  json_t *j = json_loads(buf, 0, NULL);
  if (!j)
    fail_msg("reply to %s is not JSON: %s", line, buf);
  return j;
}

/* The data of an ok reply (the reply is kept in *keep to decref). */
static json_t *ok(json_t **keep, const char *action, const char *data) {
  json_t *j = req("command", action, data);
  if (json_object_get(j, "success") != json_true())
    fail_msg("%s %s -> %s", action, data, json_dumps(j, JSON_COMPACT));
  *keep = j;
  return json_object_get(j, "data");
}

/* An error reply with code whose message holds needle. */
static void err(const char *type, const char *action, const char *data,
                const char *code, const char *needle) {
  json_t *j = req(type, action, data);
  json_t *e = json_object_get(j, "error");
  const char *c = json_string_value(json_object_get(e, "code"));
  const char *m = json_string_value(json_object_get(e, "message"));
  if (!c || strcmp(c, code) || !m || !strstr(m, needle))
    fail_msg("%s %s -> %s, expected %s '%s'", action, data,
             json_dumps(j, JSON_COMPACT), code, needle);
  json_decref(j);
}

static double num_at(json_t *a, size_t i) {
  return json_number_value(json_array_get(a, i));
}

/* A one-room map (walls all round) and its centre. */
static void empty_room(double *cx, double *cy) {
  json_t *k;
  json_t *d = ok(&k, "generate_map",
                 "{\"width\": 8, \"height\": 8, \"rooms\": [1, 1], "
                 "\"clutter\": 0, \"seed\": 3}");
  json_t *o = json_object_get(d, "origin");
  *cx = num_at(o, 0) + 4;
  *cy = num_at(o, 1) + 4;
  json_decref(k);
}

static void envelope_and_state(void **state) {
  (void)state;
  cfd = ng_open(&stack, "compat", NULL, NULL);
  double cx, cy;
  empty_room(&cx, &cy);
  /* the envelope, strictly */
  static char buf[8192];
  assert_true(ng_ask(cfd,
                     "{\"type\":\"command\",\"request_id\":{\"a\":1},"
                     "\"action\":\"ping\"}",
                     buf, sizeof buf) > 0);
  assert_non_null(strstr(buf, "\"code\":\"invalid_message\""));
  assert_non_null(strstr(buf, "request_id must be a string or a number"));
  err("sim_control", "get_state", "{}", "unknown_action",
      "not a sim_control action");
  /* v_x, v_y, v_angular are set_pose keys (teleport with a velocity,
   * tests/python/test_ssl_json.py); a key it does not take is refused */
  err("command", "set_pose", "{\"pose\": [0, 0, 0], \"v_z\": 0.5}",
      "invalid_message", "data.v_z is not a key of set_pose");
  err("command", "set_velocity", "{\"v\": 0.1, \"kick_speed\": 3}",
      "invalid_message", "data.kick_speed is not a key of set_velocity");
  err("command", "get_terrain_grid", "{\"stride\": \"2\"}",
      "invalid_action_shape", "data.stride");
  /* OceanSim's state fields */
  char data[256];
  snprintf(data, sizeof data, "{\"pose\": [%.6f, %.6f, %.9f]}", cx, cy,
           M_PI / 2);
  json_t *k, *k2;
  ok(&k, "set_pose", data);
  json_decref(k);
  json_t *st = ok(&k, "get_state", "{}");
  assert_true(fabs(json_number_value(json_object_get(st, "heading_deg")) - 90) <
              1e-6);
  assert_true(fabs(json_number_value(json_object_get(st, "speed"))) < 1e-9);
  json_t *pos = json_object_get(st, "position");
  assert_int_equal(json_array_size(pos), 2);
  assert_true(fabs(num_at(pos, 0) - cx) < 1e-6);
  json_decref(k);
  json_t *sd = ok(&k, "step", "{\"v\": 0.4, \"steps\": 100}");
  double sp = json_number_value(json_object_get(sd, "speed"));
  if (!(sp > 0.3 && sp <= 0.4 + 1e-9))
    fail_msg("speed after 0.5 s at v 0.4: %g", sp);
  json_t *sv = ok(&k2, "get_state", "{}");
  assert_true(json_number_value(json_object_get(sv, "speed")) > 0.3);
  json_decref(k2);
  json_decref(k);
}

static void player_semantics(void **state) {
  (void)state;
  cfd = ng_open(&stack, "player", NULL, NULL);
  double cx, cy;
  empty_room(&cx, &cy);
  char data[256];
  json_t *k;
  snprintf(data, sizeof data, "{\"pose\": [%.6f, %.6f, 0]}", cx, cy);
  ok(&k, "set_pose", data);
  json_decref(k);
  /* an obstacle moves with set_pose; into a robot or a wall it does not */
  snprintf(data, sizeof data,
           "{\"name\": \"crate\", \"shape\": \"circle\", \"pose\": [%.6f, "
           "%.6f, 0], \"radius\": 0.3}",
           cx + 2, cy);
  ok(&k, "spawn_obstacle", data);
  json_decref(k);
  snprintf(data, sizeof data,
           "{\"name\": \"crate\", \"pose\": [%.6f, %.6f, 0.5]}", cx + 1.5,
           cy + 1.5);
  json_t *d = ok(&k, "set_pose", data);
  assert_string_equal(json_string_value(json_object_get(d, "kind")),
                      "obstacle");
  json_decref(k);
  snprintf(data, sizeof data,
           "{\"name\": \"crate\", \"pose\": [%.6f, %.6f, 0]}", cx, cy);
  err("command", "set_pose", data, "blocked_pose", "would overlap robot");
  snprintf(data, sizeof data,
           "{\"name\": \"crate\", \"pose\": [%.6f, %.6f, 0]}", cx + 100, cy);
  err("command", "set_pose", data, "blocked_pose", "beyond the map");
  d = ok(&k, "get_pose", "{\"name\": \"crate\"}");
  json_t *p = json_object_get(d, "pose");
  assert_true(fabs(num_at(p, 0) - (cx + 1.5)) < 1e-6);
  assert_true(fabs(num_at(p, 1) - (cy + 1.5)) < 1e-6);
  assert_true(fabs(num_at(p, 2) - 0.5) < 1e-6);
  json_decref(k);
  /* 3-D pose: z, roll, pitch are 0 on the plane; a non-zero one refused */
  d = ok(&k, "get_pose3d", "{\"robot\": 0}");
  p = json_object_get(d, "pose");
  assert_int_equal(json_array_size(p), 6);
  assert_true(fabs(num_at(p, 0) - cx) < 1e-6);
  for (size_t i = 2; i < 5; i++)
    assert_true(num_at(p, i) == 0);
  assert_true(json_is_number(json_object_get(d, "sim_time")));
  json_decref(k);
  snprintf(data, sizeof data, "{\"pose\": [%.6f, %.6f, 0.5, 0, 0, 1]}", cx + 1,
           cy);
  err("command", "set_pose3d", data, "invalid_action_shape", "z = 0.5");
  d = ok(&k, "get_pose", "{}");
  assert_true(fabs(num_at(json_object_get(d, "pose"), 0) - cx) < 1e-6);
  json_decref(k);
  snprintf(data, sizeof data, "{\"pose\": [%.6f, %.6f, 0, 0, 0, 1]}", cx - 1,
           cy);
  d = ok(&k, "set_pose3d", data);
  assert_true(fabs(num_at(json_object_get(d, "pose"), 5) - 1) < 1e-6);
  json_decref(k);
  /* PAUSE toggles */
  for (int i = 0; i < 2; i++) {
    json_t *j = req("sim_control", "toggle_pause", "{}");
    bool paused =
        json_is_true(json_object_get(json_object_get(j, "data"), "paused"));
    assert_true(paused == (i == 0));
    json_decref(j);
    j = req("sim_control", "get_status", "{}");
    assert_true(json_is_true(json_object_get(json_object_get(j, "data"),
                                             "paused")) == (i == 0));
    json_decref(j);
  }
  /* index into an array property; a scalar one refuses it */
  d = ok(&k, "get_property", "{\"property\": \"colour\"}");
  json_t *before = json_deep_copy(json_object_get(d, "value"));
  json_decref(k);
  ok(&k, "set_property",
     "{\"property\": \"colour\", \"index\": 1, \"value\": 17}");
  json_decref(k);
  d = ok(&k, "get_property", "{\"property\": \"colour\"}");
  json_t *after = json_object_get(d, "value");
  for (size_t i = 0; i < 4; i++)
    assert_true(num_at(after, i) == (i == 1 ? 17 : num_at(before, i)));
  json_decref(k);
  json_decref(before);
  d = ok(&k, "get_property", "{\"property\": \"colour\", \"index\": 1}");
  assert_true(json_number_value(json_object_get(d, "value")) == 17);
  json_decref(k);
  err("command", "set_property",
      "{\"property\": \"max_v\", \"index\": 0, \"value\": 1}",
      "invalid_message", "'max_v' is not an array");
}

/* The robots' dynamic state in the newest tick, from x on (id, gen, flags
 * and the scan seq run on), into out; returns the robot count. */
static uint32_t robot_bits(uint8_t *out, size_t cap) {
  static uint8_t rec[1 << 16];
  uint32_t len;
  uint64_t seq;
  assert_int_equal(
      pa_ring_read_latest(stack.st.state, rec, sizeof rec, &len, &seq), 0);
  const pa_tick *t = (const pa_tick *)(const void *)rec;
  const pa_robot_state *rs = (const pa_robot_state *)(const void *)(t + 1);
  size_t off = offsetof(pa_robot_state, x);
  size_t n = sizeof *rs - off;
  assert_true(t->robot_count * n <= cap);
  for (uint32_t i = 0; i < t->robot_count; i++)
    memcpy(out + i * n, (const uint8_t *)&rs[i] + off, n);
  return t->robot_count;
}

/* An error reply's message (freed with the reply: copied out). */
static void err_text(const char *action, const char *data, char *out,
                     size_t n) {
  json_t *j = req("command", action, data);
  const char *m = json_string_value(
      json_object_get(json_object_get(j, "error"), "message"));
  snprintf(out, n, "%s", m ? m : "(no error)");
  json_decref(j);
}

/* Issue 32 #12/#15: a file that exists is replaced only with overwrite:
 * true; a symlink planted in the data directory is never written through;
 * paths outside get one answer whether they exist or not, and no answer
 * shows the data directory. */
static void saves_never_clobber(const char *dd) {
  json_t *k;
  err("command", "save_snapshot_json", "{\"path\": \"runs/b.json\"}",
      "invalid_message", "runs/b.json already exists");
  ok(&k, "save_snapshot_json",
     "{\"path\": \"runs/b.json\", \"overwrite\": true}");
  json_decref(k);
  char victim[700], link[700], text[512];
  snprintf(victim, sizeof victim, "%s/../victim.txt", dd);
  FILE *f = fopen(victim, "w");
  assert_non_null(f);
  fputs("untouched", f);
  fclose(f);
  snprintf(link, sizeof link, "%s/runs/planted.json", dd);
  assert_int_equal(symlink(victim, link), 0);
  err("command", "save_snapshot_json", "{\"path\": \"runs/planted.json\"}",
      "invalid_message", "already exists");
  ok(&k, "save_snapshot_json",
     "{\"path\": \"runs/planted.json\", \"overwrite\": true}");
  json_decref(k);
  pa_test_read_file(victim, text, sizeof text);
  assert_string_equal(text, "untouched");
  struct stat st; /* the link itself was replaced */
  assert_int_equal(lstat(link, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  char e1[512], e2[512];
  err_text("save_snapshot_json", "{\"path\": \"/etc/shadow\"}", e1, sizeof e1);
  err_text("save_snapshot_json", "{\"path\": \"/etc/no-such-file\"}", e2,
           sizeof e2);
  char *p1 = strstr(e1, "/etc/shadow"), *p2 = strstr(e2, "/etc/no-such-file");
  assert_non_null(p1);
  assert_non_null(p2);
  *p1 = *p2 = 0;
  assert_string_equal(e1, e2);
  err_text("save_snapshot_json", "{\"path\": \"runs/b.json\"}", e1, sizeof e1);
  if (strstr(e1, dd) || strstr(e1, pa_test_tmpdir()))
    fail_msg("an error shows the data directory: %s", e1);
}

static void world_files(void **state) {
  (void)state;
  snprintf(ddir, sizeof ddir, "%s/t%d-compat-data", pa_test_tmpdir(),
           (int)getpid());
  char dd[600]; /* missing, two levels deep: pa-sim creates it */
  snprintf(dd, sizeof dd, "%s/a/b", ddir);
  const char *const sim_flags[] = {"--data_dir", dd, "--robots", "2", NULL};
  cfd = ng_open(&stack, "files", sim_flags, NULL);
  double cx, cy;
  empty_room(&cx, &cy);
  char data[256];
  json_t *k;
  snprintf(data, sizeof data,
           "{\"name\": \"c1\", \"shape\": \"circle\", "
           "\"pose\": [%.6f, %.6f, 0], \"radius\": 0.2}",
           cx + 1.5, cy - 1.5);
  ok(&k, "spawn_obstacle", data);
  json_decref(k);
  json_decref(req("sim_control", "pause", "{}"));
  json_t *d = ok(&k, "save_snapshot_json", "{\"path\": \"runs/a.json\"}");
  assert_string_equal(json_string_value(json_object_get(d, "status")), "saved");
  assert_int_equal(json_integer_value(json_object_get(d, "robots")), 2);
  json_decref(k);
  /* the file: a whole world, readable */
  char f[700];
  snprintf(f, sizeof f, "%s/runs/a.json", dd);
  json_error_t je;
  json_t *w = json_load_file(f, 0, &je);
  if (!w)
    fail_msg("%s: %s", f, je.text);
  assert_string_equal(json_string_value(json_object_get(w, "format")),
                      "playarea-world");
  assert_int_equal(strlen(json_string_value(
                       json_object_get(json_object_get(w, "map"), "checksum"))),
                   16);
  assert_int_equal(json_array_size(json_object_get(w, "robots")), 2);
  assert_int_equal(json_array_size(json_object_get(w, "obstacles")), 1);
  assert_true(json_is_array(json_object_get(w, "agents")));
  json_t *r0 = json_array_get(json_object_get(w, "robots"), 0);
  assert_true(
      json_is_number(json_object_get(json_object_get(r0, "state"), "x")));
  json_decref(w);
  /* the next ticks after a reload are the saved world's, bit for bit */
  static uint8_t s1[1 << 14], s2[1 << 14];
  uint8_t s0[1 << 14];
  robot_bits(s0, sizeof s0);
  const char *drive = "{\"robot\": 0, \"v\": 0.3, \"w\": 0.4, \"steps\": 40}";
  ok(&k, "step", drive);
  json_decref(k);
  uint32_t n1 = robot_bits(s1, sizeof s1);
  assert_memory_not_equal(s0, s1, sizeof(double)); /* robot 0 moved */
  d = ok(&k, "load_snapshot_json", "{\"path\": \"runs/a.json\"}");
  assert_string_equal(json_string_value(json_object_get(d, "status")),
                      "loaded");
  json_decref(k);
  ok(&k, "step", drive);
  json_decref(k);
  uint32_t n2 = robot_bits(s2, sizeof s2);
  assert_int_equal(n1, n2);
  assert_memory_equal(
      s1, s2, n1 * (sizeof(pa_robot_state) - offsetof(pa_robot_state, x)));
  /* paths stay inside --data_dir, refused by name */
  err("command", "save_snapshot_json", "{\"path\": \"../x.json\"}",
      "invalid_message", "forbidden path ('..')");
  err("command", "save_snapshot_json", "{\"path\": \"/tmp/x.json\"}",
      "invalid_message", "outside the data directory");
  err("command", "load_snapshot_json", "{\"path\": \"runs/none.json\"}",
      "invalid_message", "cannot open");
  d = ok(&k, "save_snapshot_json", "{\"path\": \"runs/b.json\"}");
  json_decref(k); /* into a directory that exists now */
  saves_never_clobber(dd);
  /* a symlink inside that leads out: refused, nothing made through it */
  char out[600], link[700];
  snprintf(out, sizeof out, "%s/outside", ddir);
  snprintf(link, sizeof link, "%s/link", dd);
  assert_int_equal(mkdir(out, 0755), 0);
  assert_int_equal(symlink(out, link), 0);
  err("command", "save_snapshot_json", "{\"path\": \"link/new/x.json\"}",
      "invalid_message", "outside the data directory");
  snprintf(f, sizeof f, "%s/new", out);
  assert_int_not_equal(stat(f, &(struct stat){0}), 0);
  /* Player's SAVE: the default file */
  json_t *j = req("sim_control", "save", "{}");
  assert_true(json_is_true(json_object_get(j, "success")));
  json_decref(j);
  struct stat st;
  snprintf(f, sizeof f, "%s/snapshot.json", dd);
  assert_int_equal(stat(f, &st), 0);
  /* save_world: a world YAML (+ its map) that set_scenario and --world load:
   * the same map (the JSON snapshot's checksum still fits), the same poses */
  d = ok(&k, "get_pose", "{\"robot\": 1}");
  double p1[3];
  for (size_t i = 0; i < 3; i++)
    p1[i] = num_at(json_object_get(d, "pose"), i);
  json_decref(k);
  d = ok(&k, "save_world", "{\"path\": \"worlds/w.yaml\"}");
  assert_int_equal(json_array_size(json_object_get(d, "paths")), 3);
  json_decref(k);
  err("command", "save_world", "{\"path\": \"worlds/w.yaml\"}",
      "invalid_message", "worlds/w.yaml already exists");
  ok(&k, "save_world", "{\"path\": \"worlds/w.yaml\", \"overwrite\": true}");
  json_decref(k);
  ok(&k, "set_scenario", "{\"world\": \"worlds/w.yaml\"}");
  json_decref(k);
  d = ok(&k, "get_pose", "{\"robot\": 1}");
  for (size_t i = 0; i < 3; i++)
    assert_true(fabs(num_at(json_object_get(d, "pose"), i) - p1[i]) < 1e-9);
  json_decref(k);
  d = ok(&k, "get_pose", "{\"name\": \"c1\"}");
  assert_true(fabs(num_at(json_object_get(d, "pose"), 0) - (cx + 1.5)) < 1e-9);
  json_decref(k);
  ok(&k, "load_snapshot_json", "{\"path\": \"runs/a.json\"}");
  json_decref(k);
  err("command", "save_world", "{\"path\": \"worlds/w.json\"}",
      "invalid_message", "must end in .yaml");
  snprintf(data, sizeof data, "{\"name\": \"r x\", \"pose\": [%.6f, %.6f, 0]}",
           cx - 2, cy - 2);
  ok(&k, "spawn_robot", data);
  json_decref(k);
  err("command", "save_world", "{\"path\": \"worlds/w2.yaml\"}",
      "invalid_message", "robot 'r x' has a name a world file cannot hold");
  ok(&k, "load_snapshot_json", "{\"path\": \"runs/a.json\"}");
  json_decref(k);
  /* a snapshot of another map is refused, and changes nothing */
  ok(&k, "generate_map",
     "{\"width\": 9, \"height\": 8, \"rooms\": [1, 1], \"clutter\": 0, "
     "\"seed\": 4}");
  json_decref(k);
  robot_bits(s1, sizeof s1);
  err("command", "load_snapshot_json", "{\"path\": \"runs/a.json\"}",
      "invalid_message", "saved on another map");
  robot_bits(s2, sizeof s2);
  assert_memory_equal(
      s1, s2, 2 * (sizeof(pa_robot_state) - offsetof(pa_robot_state, x)));
  json_decref(req("sim_control", "resume", "{}"));
}

/* FNV-1a of the terrain grid's rows: the map as the gateway sees it. */
static uint64_t terrain_sum(void) {
  json_t *k;
  json_t *d = ok(&k, "get_terrain_grid", "{\"stride\": 2}");
  json_t *rows = json_object_get(d, "rows");
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < json_array_size(rows); i++)
    for (const char *c = json_string_value(json_array_get(rows, i)); *c; c++)
      h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
  json_decref(k);
  return h;
}

static void named_scenarios(void **state) {
  (void)state;
  cfd = ng_open(&stack, "scen", NULL, NULL);
  json_t *k;
  json_t *d = ok(&k, "list_scenarios", "{}");
  json_t *list = json_object_get(d, "scenarios");
  assert_int_equal(json_array_size(list), 7);
  char names[7][32];
  for (size_t i = 0; i < 7; i++)
    snprintf(
        names[i], sizeof names[i], "%s",
        json_string_value(json_object_get(json_array_get(list, i), "name")));
  json_decref(k);
  assert_string_equal(names[2], "NarrowMap");
  for (size_t i = 0; i < 7; i++) {
    char data[320];
    uint64_t sum[3];
    for (int run = 0; run < 3; run++) {
      snprintf(data, sizeof data, "{\"scenario\": \"%s\", \"seed\": %d}",
               names[i], run < 2 ? 5 : 6);
      d = ok(&k, "set_scenario", data);
      /* the map's metadata, as OceanSim's map manager answers */
      assert_string_equal(json_string_value(json_object_get(d, "scenario")),
                          names[i]);
      assert_int_equal(json_integer_value(json_object_get(d, "seed")),
                       run < 2 ? 5 : 6);
      assert_true(json_integer_value(json_object_get(d, "width")) > 100);
      assert_true(json_number_value(json_object_get(d, "resolution")) > 0);
      assert_int_equal(json_array_size(json_object_get(d, "origin")), 2);
      json_decref(k);
      sum[run] = terrain_sum();
      /* the robot stands free: it can be driven a little */
      d = ok(&k, "get_state", "{}");
      assert_false(json_is_true(json_object_get(d, "bumped")));
      json_decref(k);
    }
    if (sum[0] != sum[1])
      fail_msg("%s: seed 5 twice gave two maps", names[i]);
    if (i != 0 && sum[0] == sum[2]) /* Empty: nothing a seed moves */
      fail_msg("%s: seeds 5 and 6 gave one map", names[i]);
  }
  err("command", "set_scenario", "{\"scenario\": \"Moon\"}", "invalid_message",
      "unknown scenario 'Moon'");
}

/* class_grid[y][x] and grid[y][x] of a get_terrain_grid reply's data. */
static int cell_at(json_t *d, const char *key, double wx, double wy) {
  json_t *o = json_object_get(d, "origin");
  double cs = json_number_value(json_object_get(d, "cell_size"));
  size_t x = (size_t)floor((wx - num_at(o, 0)) / cs);
  size_t y = (size_t)floor((wy - num_at(o, 1)) / cs);
  json_t *row = json_array_get(json_object_get(d, key), y);
  json_t *v = json_array_get(row, x);
  if (!json_is_integer(v))
    fail_msg("%s[%zu][%zu] missing", key, y, x);
  return (int)json_integer_value(v);
}

/* One request on a fresh connection whose reply is a header line and a
 * binary block: the header (to decref) and the block (to free). */
static json_t *ask_binary(const char *line, unsigned char **blk, size_t *n) {
  int fd = ng_connect(&stack);
  assert_true(fd >= 0);
  char l[1024];
  snprintf(l, sizeof l, "%s\n", line);
  assert_int_equal(pa_test_send_str(fd, l), 0);
  size_t cap = 1 << 20, len = 0;
  unsigned char *buf = malloc(cap);
  json_t *hdr = NULL;
  size_t want = 0, hl = 0;
  int64_t end = pa_test_now_ms() + 5000;
  while (pa_test_now_ms() < end && (!hdr || len < hl + want)) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 200) <= 0)
      continue;
    ssize_t r = recv(fd, buf + len, cap - len, 0);
    if (r <= 0)
      break;
    len += (size_t)r;
    unsigned char *nl = memchr(buf, '\n', len);
    if (!hdr && nl) {
      hl = (size_t)(nl - buf) + 1;
      hdr = json_loadb((char *)buf, hl - 1, 0, NULL);
      assert_non_null(hdr);
      want = (size_t)json_integer_value(json_object_get(
          json_object_get(json_object_get(hdr, "data"), "binary"), "bytes"));
      assert_true(hl + want <= cap);
    }
  }
  close(fd);
  if (!hdr || len != hl + want)
    fail_msg("binary reply to %s: %zu bytes", line, len);
  *n = want;
  *blk = malloc(want);
  memcpy(*blk, buf + hl, want);
  free(buf);
  return hdr;
}

static void terrain_grid(void **state) {
  (void)state;
  cfd = ng_open(&stack, "terrain", NULL, NULL);
  double cx, cy;
  empty_room(&cx, &cy);
  char data[256];
  json_t *k, *k2;
  snprintf(data, sizeof data, "{\"pose\": [%.6f, %.6f, 0]}", cx, cy);
  ok(&k, "set_pose", data);
  json_decref(k);
  snprintf(data, sizeof data,
           "{\"name\": \"b\", \"pose\": [%.6f, %.6f, 0.3], \"size\": "
           "[0.5, 0.4]}",
           cx + 2, cy);
  ok(&k, "spawn_obstacle", data);
  json_decref(k);
  /* OceanSim's request: arrays, classes, the obstacle a static one */
  json_t *d = ok(&k, "get_terrain_grid",
                 "{\"cell_size\": 0.1, \"include_static_obstacles\": true, "
                 "\"include_dynamic_agents\": true}");
  assert_true(json_is_array(json_object_get(d, "grid")));
  assert_int_equal(cell_at(d, "class_grid", cx + 2, cy), 2);
  assert_int_equal(cell_at(d, "grid", cx + 2, cy), 1);
  assert_int_equal(cell_at(d, "class_grid", cx, cy), 3); /* the robot */
  assert_int_equal(cell_at(d, "class_grid", cx - 1, cy + 1), 0);
  json_int_t blocked = json_integer_value(json_object_get(d, "blocked_cells"));
  json_t *d2 = ok(&k2, "get_terrain_grid",
                  "{\"cell_size\": 0.1, \"include_static_obstacles\": false}");
  assert_int_equal(cell_at(d2, "class_grid", cx + 2, cy), 0);
  assert_int_equal(cell_at(d2, "class_grid", cx, cy), 0);
  assert_true(json_integer_value(json_object_get(d2, "blocked_cells")) <
              blocked);
  json_decref(k2);
  d2 = ok(&k2, "get_terrain_grid",
          "{\"cell_size\": 0.1, \"include_dynamic_agents\": true, "
          "\"inflation_radius\": 0.3}");
  assert_true(json_integer_value(json_object_get(d2, "blocked_cells")) >
              blocked);
  assert_int_equal(cell_at(d2, "grid", cx + 2.4, cy), 1); /* inflated */
  assert_int_equal(cell_at(d2, "class_grid", cx + 2.4, cy), 0);
  json_decref(k2);
  /* the compact binary form holds the same cells */
  unsigned char *blk;
  size_t n;
  json_t *h = ask_binary(
      "{\"type\":\"command\",\"action\":\"get_terrain_grid\",\"data\":{"
      "\"cell_size\": 0.1, \"include_dynamic_agents\": true, \"format\": "
      "\"binary\"}}",
      &blk, &n);
  uint32_t w, hh;
  assert_memory_equal(blk, "PAG1", 4);
  memcpy(&w, blk + 4, 4);
  memcpy(&hh, blk + 8, 4);
  assert_int_equal(w, json_integer_value(json_object_get(d, "width")));
  assert_int_equal(n, 12 + 2 * (size_t)w * hh);
  json_t *g = json_object_get(d, "grid"),
         *cg = json_object_get(d, "class_grid");
  for (uint32_t y = 0; y < hh; y++)
    for (uint32_t x = 0; x < w; x++) {
      size_t i = (size_t)y * w + x;
      assert_int_equal(blk[12 + i], json_integer_value(json_array_get(
                                        json_array_get(g, y), x)));
      assert_int_equal(
          (signed char)blk[12 + (size_t)w * hh + i],
          json_integer_value(json_array_get(json_array_get(cg, y), x)));
    }
  free(blk);
  json_decref(h);
  json_decref(k);
  /* the older form is unchanged */
  d = ok(&k, "get_terrain_grid", "{\"stride\": 2}");
  assert_true(json_is_string(json_array_get(json_object_get(d, "rows"), 0)));
  json_decref(k);
}

/* The nav block's overlay of robot r, copied (NULL if it has none). */
static const pa_nav_overlay *overlay_of(uint32_t r) {
  static pa_nav_block nb;
  for (int tries = 0; !pa_stack_nav_read(&stack.st, &nb); tries++)
    assert_true(tries < 1000);
  for (int i = 0; i < PA_NAV_OVERLAYS; i++)
    if (nb.ov[i].robot == r)
      return &nb.ov[i];
  return NULL;
}

static void overlays(void **state) {
  (void)state;
  const char *const sim_flags[] = {"--robots", "2", NULL};
  cfd = ng_open(&stack, "overlay", sim_flags, NULL);
  json_t *k;
  ok(&k, "set_nav_path", "{\"robot\": 1, \"path\": [[0, 0], [1, 0]]}");
  json_decref(k);
  ok(&k, "set_waypoint", "{\"robot\": 1, \"waypoint\": [2.5, -1]}");
  json_decref(k);
  ok(&k, "set_pred_trajectory",
     "{\"robot\": 1, \"trajectory\": [[0, 0], [0.5, 0.1], [1, 0.3]]}");
  json_decref(k);
  const pa_nav_overlay *o = overlay_of(1);
  assert_non_null(o);
  assert_int_equal(o->path_n, 2); /* the plan stays beside them */
  assert_int_equal(o->goal_n, 1);
  assert_true(o->goal[0] == 2.5f && o->goal[1] == -1.0f);
  assert_int_equal(o->pred_n, 3);
  assert_true(o->pred[2][0] == 1.0f && o->pred[2][1] == 0.3f);
  assert_null(overlay_of(0)); /* per robot */
  /* a bad one changes nothing */
  err("command", "set_pred_trajectory",
      "{\"robot\": 1, \"trajectory\": [[0, 0], [1]]}", "invalid_action_shape",
      "data.trajectory[1]");
  assert_int_equal(overlay_of(1)->pred_n, 3);
  /* cleared one part at a time, then the slot is free */
  ok(&k, "set_waypoint", "{\"robot\": 1, \"waypoint\": []}");
  json_decref(k);
  assert_int_equal(overlay_of(1)->goal_n, 0);
  ok(&k, "clear_nav", "{\"robot\": 1}");
  json_decref(k);
  assert_null(overlay_of(1));
  ok(&k, "set_pred_trajectory", "{\"robot\": 0, \"trajectory\": [[0, 0]]}");
  json_decref(k);
  assert_int_equal(overlay_of(0)->pred_n, 1);
  ok(&k, "remove_robot", "{\"robot\": 0}");
  json_decref(k);
  assert_null(overlay_of(0)); /* a removed robot's go with it */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(envelope_and_state, teardown),
      cmocka_unit_test_teardown(player_semantics, teardown),
      cmocka_unit_test_teardown(world_files, teardown),
      cmocka_unit_test_teardown(named_scenarios, teardown),
      cmocka_unit_test_teardown(terrain_grid, teardown),
      cmocka_unit_test_teardown(overlays, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
