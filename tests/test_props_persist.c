/* test_props_persist.c - every property survives every save path (issue 33).
 * Under the real launcher, a world with a differential robot, a dynamic
 * omni robot with thrusters, a kinematic omni robot, a circle, a box and a
 * waypoint agent, every property away from its default:
 * save_snapshot_json -> load_snapshot_json, a pa-sim crash (the shm
 * snapshot), and save_world -> --world each give the same records back, bit
 * for bit (the snapshot file writes every field so that it reads back to
 * the same bits). A snapshot file written before the property rows carried
 * their storage (tests/fixtures/) still loads, its missing properties at
 * their rows' defaults; a loaded value outside its row's range is refused
 * by name. Also the rows themselves: one field, one slot and one wire id
 * each. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "pa_layout.h"
#include "pa_props.h"
#include "test_launch_util.h"

static const char *world_txt =
    "map: default\n"
    "robots:\n"
    "  - name: diffy\n"
    "    pose: [0.5, 0.5, 0.3]\n"
    "    drive: differential\n"
    "    radius: 0.21\n"
    "    wheel_base: 0.33\n"
    "    height: 0.31\n"
    "    head_height: 0.41\n"
    "    colour: [1, 2, 3, 4]\n"
    "    limits: {max_v: 1.25, max_vy: 0.75, max_w: 2.5, acc_v: 1.5, dec_v: "
    "3.5, acc_w: 7.5, dec_w: 11.5, head_limit: 1.25, max_head_rate: 2.75}\n"
    "    laser: {beams: 181, range_min: 0.2, range_max: 9.5, noise: 0.01}\n"
    "    camera: {width: 320, height: 240, fov: 75}\n"
    "  - name: boat\n"
    "    pose: [-0.6, 0.4, -0.7]\n"
    "    drive: omni\n"
    "    radius: 0.23\n"
    "    height: 0.37\n"
    "    head_height: 0.43\n"
    "    colour: [11, 12, 13, 14]\n"
    "    limits: {max_v: 1.1, max_vy: 0.9, max_w: 2.1, acc_v: 1.7, dec_v: "
    "3.3, acc_w: 6.5, dec_w: 10.5, head_limit: 1.5, max_head_rate: 2.25, "
    "acc_vy: 0.85}\n"
    "    laser: {beams: 90, range_min: 0.1, range_max: 7.5, noise: 0.02}\n"
    "    camera: {width: 160, height: 120, fov: 90}\n"
    "    dynamics: {type: dynamic, mass: 4.5, inertia: 0.35, linear_damping: "
    "2.5, angular_damping: 0.75, max_force: 22.5, max_torque: 3.5,\n"
    "      thrusters: [{name: bow, position: [0.1, 0.0], direction: 1.5, "
    "max_force: 5.5}, {name: aft, position: [-0.1, 0.02], direction: -1.5}]}\n"
    "  - name: cart\n"
    "    pose: [0.6, -0.5, 1.1]\n"
    "    drive: omni\n"
    "    radius: 0.15\n"
    "    dynamics: {type: kinematic, mass: 7, inertia: 0.5, linear_damping: "
    "3, angular_damping: 2, max_force: 30, max_torque: 6}\n"
    "obstacles:\n"
    "  - {name: pillar, shape: circle, pose: [1.6, -1.2, 0], radius: 0.3, "
    "height: 1.2, colour: [9, 8, 7, 6]}\n"
    "  - {name: crate, shape: box, pose: [-1.6, -1.2, 0.4], size: [0.4, "
    "0.6], height: 0.8, colour: [5, 6, 7, 8]}\n"
    "agents:\n"
    "  - {name: walker, shape: circle, pose: [1.2, 1.4, 0.2], radius: 0.2, "
    "height: 1.6, colour: [50, 60, 70, 80], behaviour: waypoints, speed: 0,\n"
    "     waypoints: [[1.2, 1.4], [2.2, 1.4]]}\n";

static int fd = -1;
static char ddir[600];

static json_t *ask(const char *action, const char *data, bool want_ok) {
  char req[1024], buf[1 << 16];
  snprintf(req, sizeof req,
           "{\"type\":\"command\",\"action\":\"%s\",\"data\":%s}\n", action,
           data);
  if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
    fail_msg("cannot send %s", req);
  if (pa_test_read_line(fd, buf, sizeof buf, 10000) < 0)
    fail_msg("no reply to %s", req);
  json_t *j = json_loads(buf, 0, NULL);
  if (!j || (json_object_get(j, "success") == json_true()) != want_ok)
    fail_msg("%s -> %s", req, buf);
  return j;
}

/* The records of a snapshot saved now as name: robots' info, the obstacles
 * and the agents' behaviours, without what a load renumbers (gen,
 * active). */
static json_t *records(const char *name) {
  char data[256], path[1024];
  snprintf(data, sizeof data, "{\"path\":\"%s\"}", name);
  json_decref(ask("save_snapshot_json", data, true));
  snprintf(path, sizeof path, "%s/%s", ddir, name);
  json_t *f = json_load_file(path, 0, NULL);
  assert_non_null(f);
  json_t *out = json_object();
  json_t *robots = json_array(), *r;
  size_t i;
  json_array_foreach(json_object_get(f, "robots"), i, r) {
    json_t *info = json_deep_copy(json_object_get(r, "info"));
    json_object_del(info, "gen");
    json_object_del(info, "active");
    json_array_append_new(robots, info);
  }
  json_t *obs = json_deep_copy(json_object_get(f, "obstacles"));
  json_array_foreach(obs, i, r) {
    json_object_del(r, "gen");
    json_object_del(r, "active");
  }
  json_object_set_new(out, "robots", robots);
  json_object_set_new(out, "obstacles", obs);
  json_object_set(out, "agents", json_object_get(f, "agents"));
  json_decref(f);
  return out;
}

static void same(json_t *a, json_t *b, const char *path) {
  if (!json_equal(a, b)) {
    char *sa = json_dumps(a, JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    char *sb = json_dumps(b, JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    fprintf(stderr, "saved:    %s\nafter %s: %s\n", sa, path, sb);
    free(sa);
    free(sb);
    fail_msg("%s changed a property", path);
  }
}

static void start(lt_stack *t, const char *world) {
  const char *extra[] = {"--no-render", "--world", world,
                         "--data_dir",  ddir,      NULL};
  assert_int_equal(lt_start(t, "props", extra, 30000), 0);
  fd = pa_test_tcp_connect(t->port);
  assert_true(fd >= 0);
}

static void stop(lt_stack *t) {
  close(fd);
  fd = -1;
  assert_int_equal(lt_stop(t, 30000), 0);
  assert_int_equal(pa_test_shm_count(t->instance), 0);
}

/* Every property away from its default, through every path. */
static void test_every_path_keeps_every_property(void **st) {
  (void)st;
  char world[700], saved[700];
  snprintf(ddir, sizeof ddir, "%s/data", pa_test_tmpdir());
  assert_int_equal(mkdir(ddir, 0700) == 0 || access(ddir, F_OK) == 0, 1);
  snprintf(world, sizeof world, "%s/props.world.yaml", ddir);
  FILE *f = fopen(world, "w");
  assert_non_null(f);
  fputs(world_txt, f);
  fclose(f);
  lt_stack t;
  start(&t, world);
  /* a property set through pa-netgw's row-driven set_property */
  json_decref(ask("set_property",
                  "{\"robot\":\"boat\",\"property\":\"acc_vy\",\"value\":0.8}",
                  true));
  json_t *a = records("s1.json");
  /* the file holds what the world said (a few by name) */
  json_t *boat = json_array_get(json_object_get(a, "robots"), 1);
  assert_int_equal(json_integer_value(json_object_get(boat, "dynamics")), 1);
  assert_true(json_real_value(json_object_get(boat, "mass")) == 4.5);
  assert_int_equal(json_array_size(json_object_get(boat, "thrusters")), 2);
  assert_true(json_real_value(json_object_get(boat, "acc_vy")) == 0.8f);
  assert_int_equal(json_array_size(json_object_get(a, "agents")), 1);
  json_decref(ask("save_world", "{\"path\":\"saved.yaml\"}", true));
  /* save_snapshot_json -> load_snapshot_json */
  json_decref(ask("load_snapshot_json", "{\"path\":\"s1.json\"}", true));
  json_t *b = records("s2.json");
  same(a, b, "load_snapshot_json");
  json_decref(b);
  /* the shm snapshot: pa-sim killed, restarted by the launcher */
  pid_t sim = lt_pid(&t, PA_PROC_SIM);
  assert_int_equal(kill(sim, SIGKILL), 0);
  assert_true(lt_wait_new_pid(&t, PA_PROC_SIM, sim, 30000));
  b = records("s3.json");
  same(a, b, "a pa-sim restart");
  json_decref(b);
  stop(&t);
  /* save_world -> --world */
  snprintf(saved, sizeof saved, "%s/saved.yaml", ddir);
  start(&t, saved);
  b = records("s4.json");
  same(a, b, "save_world and --world");
  json_decref(b);
  stop(&t);
  json_decref(a);
}

/* A snapshot file of the format before the rows (no dynamics, no
 * thrusters) loads with its missing properties at the rows' defaults; a
 * value out of its row's range is refused by name. */
static void test_old_snapshot_loads_bad_value_refused(void **st) {
  (void)st;
  char src[1024], dst[1024];
  snprintf(ddir, sizeof ddir, "%s/old", pa_test_tmpdir());
  assert_true(mkdir(ddir, 0700) == 0 || access(ddir, F_OK) == 0);
  pa_test_src(src, sizeof src, "tests/fixtures/snapshot-before-rows.json");
  json_t *old = json_load_file(src, 0, NULL);
  assert_non_null(old);
  assert_null(json_object_get(
      json_object_get(json_array_get(json_object_get(old, "robots"), 0),
                      "info"),
      "mass"));
  snprintf(dst, sizeof dst, "%s/old.json", ddir);
  assert_int_equal(json_dump_file(old, dst, JSON_REAL_PRECISION(17)), 0);
  lt_stack t;
  const char *extra[] = {"--no-render", "--data_dir", ddir, NULL};
  assert_int_equal(lt_start(&t, "propsold", extra, 30000), 0);
  fd = pa_test_tcp_connect(t.port);
  assert_true(fd >= 0);
  json_decref(ask("load_snapshot_json", "{\"path\":\"old.json\"}", true));
  json_t *j = ask("get_property", "{\"robot\":0}", true);
  json_t *p = json_object_get(json_object_get(j, "data"), "properties");
  assert_string_equal(json_string_value(json_object_get(p, "dynamics")),
                      "kinematic");
  assert_true(json_number_value(json_object_get(p, "mass")) ==
              pa_prop(PA_PR_MASS)->dflt);
  assert_true(json_number_value(json_object_get(p, "max_force")) ==
              pa_prop(PA_PR_MAX_FORCE)->dflt);
  json_decref(j);
  /* out of range: refused by name, nothing changes */
  json_t *r0 = json_object_get(
      json_array_get(json_object_get(old, "robots"), 0), "info");
  json_object_set_new(r0, "mass", json_real(-1));
  snprintf(dst, sizeof dst, "%s/bad.json", ddir);
  assert_int_equal(json_dump_file(old, dst, JSON_REAL_PRECISION(17)), 0);
  j = ask("load_snapshot_json", "{\"path\":\"bad.json\"}", false);
  char *reply = json_dumps(j, 0); /* the error text names the field */
  bool named = reply && strstr(reply, "mass -1 must be in (0, 1e+06] kg");
  if (!named)
    fprintf(stderr, "reply: %s\n", reply ? reply : "?");
  free(reply);
  assert_true(named);
  json_decref(j);
  json_decref(old);
  close(fd);
  fd = -1;
  assert_int_equal(lt_stop(&t, 30000), 0);
  assert_int_equal(pa_test_shm_count(t.instance), 0);
}

/* The rows: one field, one def slot each per kind; a settable row's wire id
 * is a pa_prop value, at most once per kind; defaults are in range. */
static void test_rows_bind_distinct_storage(void **st) {
  (void)st;
  for (int i = 0; i < PA_PR_COUNT; i++) {
    const pa_prop_def *p = pa_prop((pa_prop_row)i);
    unsigned kind = p->kinds & (PA_PK_ROBOT | PA_PK_OBSTACLE);
    assert_true(kind == PA_PK_ROBOT || kind == PA_PK_OBSTACLE);
    assert_true(p->wire < PA_PROP_COUNT);
    assert_true((p->wire == PA_PROP_NONE) == !!(p->kinds & PA_PK_RO));
    if (p->type != PA_PT_WORD && i != PA_PR_WHEEL_BASE) /* 0: derived */
      for (int k = 0; k < pa_prop_ncomp((pa_prop_row)i); k++)
        assert_true(
            pa_prop_ok((pa_prop_row)i, pa_prop_dflt((pa_prop_row)i, k)));
    for (int j = 0; j < i; j++) {
      const pa_prop_def *q = pa_prop((pa_prop_row)j);
      if (!(q->kinds & kind))
        continue;
      if (p->off == q->off || p->def_off == q->def_off)
        fail_msg("rows %s and %s share a field", p->name, q->name);
      if (p->wire != PA_PROP_NONE && p->wire == q->wire)
        fail_msg("rows %s and %s share wire id %u", p->name, q->name, p->wire);
    }
  }
  for (uint32_t w = 1; w < PA_PROP_COUNT; w++) {
    bool used = false;
    for (int i = 0; i < PA_PR_COUNT && !used; i++)
      used = pa_prop((pa_prop_row)i)->wire == w;
    if (!used)
      fail_msg("wire id %u has no row", w);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows_bind_distinct_storage),
      cmocka_unit_test(test_every_path_keeps_every_property),
      cmocka_unit_test(test_old_snapshot_loads_bad_value_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
