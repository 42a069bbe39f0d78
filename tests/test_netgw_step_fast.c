/* test_netgw_step_fast.c - the lockstep `step` reply that json_fast.c writes
 * with no jansson tree is the general road's reply byte for byte: after each
 * step on a paused pa-sim, a get_state with the same request_id (answered by
 * the tree, json_robot.c's state_json) must give the same line but for the
 * action's name. Steps of 1 and 20 ticks (old and fresh scans), forward,
 * back and turning (negative, tiny and zero velocities), request_ids of
 * every kind, including ones the fast road leaves to the general one (a
 * string to escape, non-ASCII); and a step in a batch. Then the loop's
 * watch for a lockstep client's next STEP ends when the client goes
 * quiet. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "netgw_harness.h"
#include "pa_proc.h"
#include "pa_util.h"

#include <time.h>

#include <jansson.h>

static char got[1 << 16], want[1 << 16];

/* line with its action's name replaced by "step" (the one place the two
 * replies differ), into out */
static void as_step(const char *line, char *out, size_t n) {
  const char *a = strstr(line, "\"action\":\"get_state\"");
  assert_non_null(a);
  snprintf(out, n, "%.*s\"action\":\"step\"%s", (int)(a - line), line,
           a + strlen("\"action\":\"get_state\""));
}

static void step_equals_state(int fd, const char *rid, double v, double w,
                              int steps) {
  char req[512];
  snprintf(req, sizeof req,
           "{\"type\":\"command\",%s%s\"action\":\"step\",\"data\":{\"v\":%.9g,"
           "\"w\":%.9g,\"steps\":%d}}",
           rid, rid[0] ? "," : "", v, w, steps);
  assert_true(ng_ask(fd, req, got, sizeof got) > 0);
  snprintf(req, sizeof req,
           "{\"type\":\"command\",%s%s\"action\":\"get_state\"}", rid,
           rid[0] ? "," : "");
  char state[1 << 16];
  assert_true(ng_ask(fd, req, state, sizeof state) > 0);
  as_step(state, want, sizeof want);
  if (strcmp(got, want) != 0)
    fail_msg("step reply\n%s\ndiffers from the tree's\n%s", got, want);
  json_error_t je;
  json_t *j = json_loads(got, 0, &je);
  assert_non_null(j);
  if (strcmp(json_string_value(json_object_get(j, "type")), "state") != 0)
    fail_msg("%s -> %s", req, got);
  json_t *sc = json_object_get(
      json_object_get(json_object_get(j, "data"), "sensors"), "scan");
  if (steps >= 20)
    assert_int_equal(json_array_size(json_object_get(sc, "ranges")), 360);
  json_decref(j);
}

static void step_reply_is_the_trees(void **state) {
  (void)state;
  ng_stack s;
  static const char *const sim[] = {"--paused", NULL};
  int fd = ng_open(&s, "stepfast", sim, NULL);
  static const char *const rids[] = {
      "",
      "\"request_id\":7",
      "\"request_id\":-123456789012",
      "\"request_id\":\"r-1 x\"",
      "\"request_id\":2.5",
      "\"request_id\":1e-7",
      "\"request_id\":\"a\\\"b\\\\c\\n\"",      /* escaped: the general road */
      "\"request_id\":\"caf\\u00e9 \xc3\xa9\"", /* non-ASCII: general */
      "\"request_id\":\"@@pa-ranges-0@@\"",
  };
  const size_t nr = sizeof rids / sizeof *rids;
  for (int i = 0; i < 120; i++) {
    double v = (i % 3 == 0) ? 0.4 : (i % 3 == 1) ? -0.3 : 1e-6 * i;
    double w = (i % 4 == 0) ? 0.0 : (i % 4 == 1) ? 0.7 : -1.1;
    step_equals_state(fd, rids[(size_t)i % nr], v, w, i % 5 == 0 ? 20 : 1);
  }
  /* a step in a batch: the general road, as before */
  assert_true(ng_ask(fd,
                     "{\"type\":\"batch\",\"requests\":[{\"type\":\"command\","
                     "\"action\":\"step\",\"data\":{\"steps\":20}}]}",
                     got, sizeof got) > 0);
  json_error_t je;
  json_t *j = json_loads(got, 0, &je);
  assert_non_null(j);
  json_t *r0 = json_array_get(json_object_get(j, "responses"), 0);
  assert_string_equal(json_string_value(json_object_get(r0, "action")), "step");
  assert_int_equal(
      json_array_size(json_object_get(
          json_object_get(
              json_object_get(json_object_get(r0, "data"), "sensors"), "scan"),
          "ranges")),
      360);
  json_decref(j);
  ng_finish(&s, fd, -1);
}

/* After a lockstep reply pa-netgw's loop polls for the client's next STEP
 * for twice the client's think time (simlink.c): a client that stops
 * stepping, connected and silent, must find the gateway blocking again at
 * once, not polling. Its CPU over a second then: a poll that never ended
 * takes a whole core (ASan and TSan builds included); blocking costs the
 * health timer's few percent. */
static void watch_for_next_step_ends(void **state) {
  (void)state;
  ng_stack s;
  static const char *const sim[] = {"--paused", NULL};
  int fd = ng_open(&s, "stepwatch", sim, NULL);
  for (int i = 0; i < 300; i++) /* back to back: the loop watches */
    assert_true(ng_ask(fd,
                       i % 2 ? "step"
                             : "{\"type\":\"command\","
                               "\"action\":\"step\"}",
                       got, sizeof got) > 0);
  struct timespec settle = {0, 50000000}; /* 250x the longest watch */
  nanosleep(&settle, NULL);
  int64_t c0 = pa_proc_cpu_ms(s.gw), t0 = pa_now_ns();
  struct timespec idle = {1, 0};
  nanosleep(&idle, NULL);
  int64_t c1 = pa_proc_cpu_ms(s.gw);
  double ms = (pa_now_ns() - t0) / 1e6;
  assert_true(c0 >= 0 && c1 >= c0);
  double share = (double)(c1 - c0) / ms;
  if (share > 0.5)
    fail_msg("pa-netgw used %.0f %% of a core while its lockstep client sat "
             "idle: the watch for the next STEP did not end",
             100 * share);
  /* and it still answers at once */
  assert_true(ng_ask(fd, "step", got, sizeof got) > 0);
  assert_string_equal(got, "ok");
  ng_finish(&s, fd, -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(step_reply_is_the_trees),
      cmocka_unit_test(watch_for_next_step_ends),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
