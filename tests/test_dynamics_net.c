/* test_dynamics_net.c - dynamic bodies end to end: a world file declaring
 * them, the real pa-sim and pa-netgw (paused, lockstep), OceanSim's force
 * actions and frames, step with force equal to set_force + step, and the
 * refusals that change nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>

#include "netgw_harness.h"

static ng_stack stack;
static int fd = -1;

/* sub: dynamic, mass 4, damping 2, two thrusters; cart: kinematic. */
static const char *world_txt =
    "map: default\n"
    "robots:\n"
    "  - name: sub\n"
    "    pose: [0, 0, 0]\n"
    "    dynamics:\n"
    "      mass: 4\n"
    "      inertia: 0.5\n"
    "      linear_damping: 2\n"
    "      angular_damping: 1\n"
    "      max_force: 20\n"
    "      max_torque: 4\n"
    "      thrusters:\n"
    "        - {name: port, position: [-0.1, 0.125], direction: 0, "
    "max_force: 4}\n"
    "        - {name: starboard, position: [-0.1, -0.125], direction: 0, "
    "max_force: 4}\n"
    "  - name: cart\n"
    "    pose: [-2.5, -3.6, 0]\n";

static int up(void **st) {
  (void)st;
  char path[1024];
  snprintf(path, sizeof path, "%s/dyn.world.yaml", pa_test_tmpdir());
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  fputs(world_txt, f);
  fclose(f);
  const char *sim[] = {"--world", path, "--paused", NULL};
  if (ng_start(&stack, "dyn", sim, NULL) != 0)
    return -1;
  fd = ng_connect(&stack);
  return fd >= 0 ? 0 : -1;
}

static int down(void **st) {
  (void)st;
  if (fd >= 0)
    close(fd);
  fd = -1;
  return ng_stop(&stack) == 0 ? 0 : -1;
}

static json_t *ask(const char *fmt, ...) {
  char req[1024], buf[1 << 16];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(req, sizeof req, fmt, ap);
  va_end(ap);
  if (ng_ask(fd, req, buf, sizeof buf) < 0)
    fail_msg("no reply to %s", req);
  json_t *j = json_loads(buf, 0, NULL);
  if (!j)
    fail_msg("reply to %s is not JSON: %s", req, buf);
  return j;
}

/* The request succeeds; its data (the caller frees the reply *j). */
static json_t *ok(json_t **j, const char *action, const char *data) {
  *j =
      ask("{\"type\":\"command\",\"action\":\"%s\",\"data\":%s}", action, data);
  if (json_object_get(*j, "success") != json_true()) {
    char *s = json_dumps(*j, JSON_COMPACT);
    fail_msg("%s %s -> %s", action, data, s);
  }
  return json_object_get(*j, "data");
}

/* The request succeeds; its reply is dropped. */
static void ok0(const char *action, const char *data) {
  json_t *j;
  ok(&j, action, data);
  json_decref(j);
}

/* The request fails with code and a message holding needle. */
static void err(const char *action, const char *data, const char *code,
                const char *needle) {
  json_t *j =
      ask("{\"type\":\"command\",\"action\":\"%s\",\"data\":%s}", action, data);
  json_t *e = json_object_get(j, "error");
  const char *c = json_string_value(json_object_get(e, "code"));
  const char *m = json_string_value(json_object_get(e, "message"));
  if (!c || strcmp(c, code) || !m || !strstr(m, needle)) {
    char *s = json_dumps(j, JSON_COMPACT);
    fail_msg("%s %s -> %s, expected %s '%s'", action, data, s, code, needle);
  }
  json_decref(j);
}

/* Robot name's pose [x, y, theta] from get_state. */
static void pose(const char *name, double p[3]) {
  json_t *j;
  char data[64];
  snprintf(data, sizeof data, "{\"robot\":\"%s\"}", name);
  json_t *d = ok(&j, "get_state", data);
  json_t *a = json_object_get(d, "pose");
  for (int i = 0; i < 3; i++)
    p[i] = json_number_value(json_array_get(a, (size_t)i));
  json_decref(j);
}

static void reset(void) {
  json_t *j = ask("{\"type\":\"sim_control\",\"action\":\"reset\"}");
  assert_true(json_object_get(j, "success") == json_true());
  json_decref(j);
}

/* The world file's dynamics, as get_property shows them. */
static void test_properties(void **st) {
  (void)st;
  json_t *j;
  json_t *p = json_object_get(ok(&j, "get_property", "{\"robot\":\"sub\"}"),
                              "properties");
  assert_string_equal(json_string_value(json_object_get(p, "dynamics")),
                      "dynamic");
  assert_true(json_number_value(json_object_get(p, "mass")) == 4);
  assert_true(json_number_value(json_object_get(p, "max_force")) == 20);
  json_decref(j);
  p = json_object_get(ok(&j, "get_property", "{\"robot\":\"cart\"}"),
                      "properties");
  assert_string_equal(json_string_value(json_object_get(p, "dynamics")),
                      "kinematic");
  json_decref(j);
}

/* OceanSim's step with a force: world y is forward; the same as set_force
 * then a plain step, to the last bit; and the closed form of the damped
 * body (F/c (t - m/c (1 - e^(-ct/m))). */
static void test_step_force_equals_set_force(void **st) {
  (void)st;
  double a[3], b[3];
  reset();
  ok0("step", "{\"robot\":\"sub\",\"force\":[0,20,0],\"steps\":40}");
  pose("sub", a);
  reset();
  ok0("set_force", "{\"robot\":\"sub\",\"force\":[0,20,0]}");
  ok0("step", "{\"robot\":\"sub\",\"steps\":40}");
  pose("sub", b);
  printf("step with force: (%.17g, %.17g), set_force + step: (%.17g, %.17g)\n",
         a[0], a[1], b[0], b[1]);
  assert_true(a[0] == b[0] && a[1] == b[1] && a[2] == b[2]);
  double t = 40 / 200.0, F = 20, c = 2, m = 4;
  double y = F / c * (t - m / c * (1 - exp(-c * t / m)));
  assert_true(fabs(a[1] - y) < 1e-9);
  assert_true(fabs(a[0]) < 1e-12 && fabs(a[2]) < 1e-12);
  /* the held force goes on with the next plain step */
  ok0("step", "{\"robot\":\"sub\",\"steps\":1}");
  pose("sub", b);
  assert_true(b[1] > a[1]);
}

/* step_batch's forces: per robot, beside the velocity actions of the
 * kinematic ones; equal to set_force + step; each bad entry refused by name
 * before anything is sent. */
static void test_step_batch_forces(void **st) {
  (void)st;
  double a[3], b[3], c0[3], c1[3];
  reset();
  pose("cart", c0);
  ok0("step_batch",
      "{\"robots\":[0,1],\"forces\":[[0,20,0],null],"
      "\"actions\":[null,[0.2,0]],\"steps\":40,\"observe\":false}");
  pose("sub", a);
  pose("cart", c1);
  assert_true(c1[0] > c0[0] + 0.01); /* its velocity action drove it */
  reset();
  ok0("set_force", "{\"robot\":\"sub\",\"force\":[0,20,0]}");
  ok0("step", "{\"robot\":\"sub\",\"steps\":40}");
  pose("sub", b);
  printf("step_batch force: (%.17g, %.17g), set_force + step: (%.17g, "
         "%.17g)\n",
         a[0], a[1], b[0], b[1]);
  assert_true(a[0] == b[0] && a[1] == b[1] && a[2] == b[2]);
  /* a body wrench [fx, fy, fz, tx, ty, tz] turns it */
  reset();
  ok0("step_batch", "{\"robots\":[0],\"forces\":[[0,0,0,0,0,2]],\"steps\":40}");
  pose("sub", a);
  assert_true(a[2] > 0.01 && fabs(a[0]) < 1e-12 && fabs(a[1]) < 1e-12);
  /* refusals change nothing */
  reset();
  pose("sub", a);
  err("step_batch", "{\"robots\":[0,1],\"forces\":[[0,2,0],[0,2,0]]}",
      "unsupported_control_scheme",
      "data.forces[1]: robot 1 ('cart') is "
      "kinematic");
  err("step_batch", "{\"robots\":[0],\"forces\":[[0,2,1]]}",
      "unsupported_control_scheme", "data.forces[0][2] (fz = 1)");
  err("step_batch", "{\"robots\":[0],\"forces\":[[0,200,0]]}",
      "invalid_action_shape", "above its max_force");
  err("step_batch",
      "{\"robots\":[0],\"forces\":[[0,2,0]],\"actions\":[[0.1,0]]}",
      "invalid_message", "both drive robot 0");
  err("step_batch", "{\"robots\":[0,1],\"forces\":[[0,2,0]]}",
      "invalid_action_shape", "data.forces has 1 entries for 2 robots");
  err("step_batch", "{\"robots\":[0],\"forces\":[[0,2]]}",
      "invalid_action_shape", "data.forces[0] (robot 0) must be null");
  err("step_batch",
      "{\"robots\":[0],\"forces\":[null],\"actions_b64\":\"AAAA\"}",
      "invalid_message", "not data.actions_b64");
  ok0("step", "{\"robot\":\"sub\",\"steps\":10}");
  pose("sub", b); /* no force was held: it stayed */
  assert_true(a[0] == b[0] && a[1] == b[1] && a[2] == b[2]);
}

/* set_force_body: OceanSim's body y is ahead (our body x); thrusters push
 * along theirs; a velocity command takes the body back. */
static void test_frames_and_thrusters(void **st) {
  (void)st;
  json_t *j;
  double p[3];
  reset();
  ok0("set_force_body", "{\"robot\":\"sub\",\"force\":[0,10,0]}");
  ok0("step", "{\"robot\":\"sub\",\"steps\":20}");
  pose("sub", p);
  assert_true(p[0] > 0.01 && fabs(p[1]) < 1e-12); /* heading 0: world +x */
  reset();
  ok0("set_thrusters", "{\"robot\":\"sub\",\"thrusters\":{\"port\":1}}");
  ok0("step", "{\"robot\":\"sub\",\"steps\":40}");
  pose("sub", p);
  assert_true(p[0] > 0.01 && p[2] < -1e-4); /* port pushes: turns right */
  ok0("step", "{\"robot\":\"sub\",\"thrusters\":{\"port\":1,\"starboard\":1},"
              "\"steps\":1}");
  /* set_body_velocity: [u, v, w, p, q, r], v ahead */
  ok0("set_body_velocity", "{\"robot\":\"sub\",\"velocity\":[0,0.5,0,0,0,0]}");
  ok0("step", "{\"robot\":\"sub\",\"steps\":400}");
  json_t *d = ok(&j, "get_state", "{\"robot\":\"sub\"}");
  double v = json_number_value(json_array_get(json_object_get(d, "twist"), 0));
  json_decref(j);
  assert_true(fabs(v - 0.5) < 1e-6);
}

/* Refusals by name, and nothing changes: 3-D components, a kinematic robot
 * (today's silent zeroing of step's force is an error now), limits, an
 * unknown thruster. */
static void test_refusals(void **st) {
  (void)st;
  json_t *j;
  double a[3], b[3];
  reset();
  pose("sub", a);
  err("set_force", "{\"robot\":\"sub\",\"force\":[0,10,3]}",
      "unsupported_control_scheme", "fz = 3");
  err("set_body_wrench", "{\"robot\":\"sub\",\"wrench\":[0,10,0,0,2,0]}",
      "unsupported_control_scheme", "ty = 2");
  err("set_body_velocity", "{\"robot\":\"sub\",\"velocity\":[0,1,0,0.5,0,0]}",
      "unsupported_control_scheme", "p = 0.5");
  err("step", "{\"robot\":\"cart\",\"force\":[0,100,0],\"steps\":20}",
      "unsupported_control_scheme", "kinematic");
  err("set_force", "{\"robot\":\"sub\",\"force\":[0,30,0]}",
      "invalid_action_shape", "max_force 20");
  err("set_thrusters", "{\"robot\":\"sub\",\"thrusters\":{\"bow\":1}}",
      "invalid_message", "no thruster 'bow'");
  ok0("step", "{\"robot\":\"sub\",\"steps\":20}");
  pose("sub", b);
  assert_true(a[0] == b[0] && a[1] == b[1] && a[2] == b[2]);
  /* the cart becomes dynamic, and then takes a force */
  ok0("set_property",
      "{\"robot\":\"cart\",\"property\":\"dynamics\",\"value\":\"dynamic\"}");
  ok0("set_force", "{\"robot\":\"cart\",\"force\":[10,0,0]}");
  pose("cart", a);
  ok0("step", "{\"robot\":\"cart\",\"steps\":20}");
  pose("cart", b);
  assert_true(b[0] > a[0] + 1e-3);
  reset(); /* the world's values again */
  json_t *p = json_object_get(ok(&j, "get_property", "{\"robot\":\"cart\"}"),
                              "properties");
  assert_string_equal(json_string_value(json_object_get(p, "dynamics")),
                      "kinematic");
  json_decref(j);
}

/* Agents through the real stack: spawned, seen by the sub's laser, moving
 * in get_agents, moved and removed by name or id, unknown_agent from pa-sim
 * for a name it does not have. */
static void test_agents(void **st) {
  (void)st;
  json_t *j;
  reset();
  json_t *d = ok(&j, "spawn_agent",
                 "{\"name\":\"post\",\"pose\":[1.2,0,0],\"radius\":0.25,"
                 "\"behaviour\":\"waypoints\",\"speed\":0}");
  json_int_t post = json_integer_value(json_object_get(d, "agent"));
  json_decref(j);
  ok0("spawn_agent",
      "{\"name\":\"ped\",\"pose\":[0.5,-1,0],\"behaviour\":\"pedestrian\","
      "\"speed\":0.5,\"goal\":[1.5,-1]}");
  err("spawn_agent",
      "{\"name\":\"ped\",\"pose\":[-1,-1,0],"
      "\"behaviour\":\"random\"}",
      "spawn_failed", "taken");
  err("spawn_agent",
      "{\"name\":\"in\",\"pose\":[0,0,0],"
      "\"behaviour\":\"random\"}",
      "blocked_pose", "inside");
  ok(&j, "step", "{\"robot\":\"sub\",\"steps\":40}"); /* a fresh scan */
  json_decref(j);
  d = ok(&j, "get_state", "{\"robot\":\"sub\"}");
  json_t *ranges = json_object_get(
      json_object_get(json_object_get(d, "sensors"), "scan"), "ranges");
  size_t nb = json_array_size(ranges);
  double ahead = json_number_value(json_array_get(ranges, nb / 2));
  json_decref(j);
  printf("sub's laser ahead: %.4f m (the post's near side at 0.95)\n", ahead);
  assert_true(fabs(ahead - 0.95) < 0.01);
  d = ok(&j, "get_agents", "{}");
  assert_int_equal(json_integer_value(json_object_get(d, "count")), 2);
  json_t *ped = json_array_get(json_object_get(d, "agents"), 1);
  assert_string_equal(json_string_value(json_object_get(ped, "behaviour")),
                      "pedestrian");
  double px =
      json_number_value(json_array_get(json_object_get(ped, "pose"), 0));
  json_decref(j);
  printf("pedestrian at x %.4f\n", px);
  assert_true(px > 0.505 && px < 1.5); /* walking to its goal */
  /* get_state (and step) list them as get_agents does, world-level */
  d = ok(&j, "get_state", "{\"robot\":\"cart\"}");
  json_t *sa = json_object_get(d, "agents");
  assert_int_equal(json_array_size(sa), 2);
  ped = json_array_get(sa, 1);
  assert_string_equal(json_string_value(json_object_get(ped, "name")), "ped");
  assert_true(
      json_number_value(json_array_get(json_object_get(ped, "pose"), 0)) == px);
  json_decref(j);
  /* get_terrain_grid: the post is an agent (class 3) with
   * include_dynamic_agents, and no static obstacle without it */
  for (int with = 0; with < 2; with++) {
    char q[160];
    snprintf(q, sizeof q,
             "{\"cell_size\":0.5,\"include_static_obstacles\":true,"
             "\"include_dynamic_agents\":%s}",
             with ? "true" : "false");
    d = ok(&j, "get_terrain_grid", q);
    json_t *org = json_object_get(d, "origin");
    long cx =
        (long)floor((1.2 - json_number_value(json_array_get(org, 0))) / 0.5);
    long cy =
        (long)floor((0 - json_number_value(json_array_get(org, 1))) / 0.5);
    json_t *cg = json_object_get(d, "class_grid");
    json_int_t cls = json_integer_value(
        json_array_get(json_array_get(cg, (size_t)cy), (size_t)cx));
    json_int_t blk = json_integer_value(json_array_get(
        json_array_get(json_object_get(d, "grid"), (size_t)cy), (size_t)cx));
    json_decref(j);
    printf("terrain cell of the post, agents %s: class %lld, blocked %lld\n",
           with ? "on" : "off", (long long)cls, (long long)blk);
    assert_int_equal(cls, with ? 3 : 0);
    assert_int_equal(blk, with ? 1 : 0);
  }
  char data[128];
  snprintf(data, sizeof data, "{\"agent\":%lld,\"pose\":[0.9,0,0]}",
           (long long)post);
  ok0("move_agent", data);
  err("move_agent", "{\"name\":\"nobody\",\"speed\":1}", "unknown_agent",
      "nobody");
  err("move_agent", "{\"agent\":99,\"speed\":1}", "unknown_agent", "99");
  ok0("step", "{\"robot\":\"sub\",\"steps\":20}");
  d = ok(&j, "get_state", "{\"robot\":\"sub\"}");
  ranges = json_object_get(
      json_object_get(json_object_get(d, "sensors"), "scan"), "ranges");
  ahead = json_number_value(json_array_get(ranges, nb / 2));
  json_decref(j);
  assert_true(fabs(ahead - 0.65) < 0.01);
  ok0("remove_agent", "{\"name\":\"post\"}");
  err("remove_agent", "{\"name\":\"post\"}", "unknown_agent", "post");
  d = ok(&j, "clear_agents", "{}");
  assert_int_equal(json_integer_value(json_object_get(d, "removed")), 1);
  json_decref(j);
  d = ok(&j, "get_agents", "{}");
  assert_int_equal(json_integer_value(json_object_get(d, "count")), 0);
  json_decref(j);
  d = ok(&j, "get_state", "{\"robot\":\"cart\"}");
  assert_null(json_object_get(d, "agents")); /* none: as before agents */
  json_decref(j);
  /* a snapshot keeps an agent's pose, and it walks on after a load */
  ok0("spawn_agent",
      "{\"name\":\"p2\",\"pose\":[0.5,-1,0],\"behaviour\":\"pedestrian\","
      "\"speed\":0.5,\"goal\":[1.5,-1]}");
  ok0("save_snapshot", "{\"name\":\"ag\"}");
  ok0("step", "{\"robot\":\"sub\",\"steps\":40}");
  ok0("load_snapshot", "{\"name\":\"ag\"}");
  d = ok(&j, "get_agents", "{}");
  double x0 = json_number_value(json_array_get(
      json_object_get(json_array_get(json_object_get(d, "agents"), 0), "pose"),
      0));
  json_decref(j);
  assert_true(x0 == 0.5);
  ok0("step", "{\"robot\":\"sub\",\"steps\":40}");
  d = ok(&j, "get_agents", "{}");
  double x1 = json_number_value(json_array_get(
      json_object_get(json_array_get(json_object_get(d, "agents"), 0), "pose"),
      0));
  json_decref(j);
  assert_true(x1 > 0.505);
  ok0("clear_agents", "{}");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_properties),
      cmocka_unit_test(test_step_force_equals_set_force),
      cmocka_unit_test(test_step_batch_forces),
      cmocka_unit_test(test_frames_and_thrusters),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_agents),
  };
  return cmocka_run_group_tests(tests, up, down);
}
