/* test_dynamics_restart.c - nothing is lost when pa-sim crashes: under the
 * real launcher, a dynamic robot spun by a held torque and an agent walking
 * its waypoint loop; pa-sim SIGKILLed and restarted by the launcher; the
 * torque is still applied (the yaw rate stays at torque / damping instead
 * of decaying) and the agent walks on along its loop. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "pa_layout.h"
#include "test_launch_util.h"

/* sub: dynamic, inertia 0.5, angular damping 1: a held torque of 0.5 N m
 * spins it at 0.5 rad/s (time constant 0.5 s). */
static const char *world_txt = "map: default\n"
                               "robots:\n"
                               "  - name: sub\n"
                               "    pose: [0, 0, 0]\n"
                               "    dynamics:\n"
                               "      mass: 4\n"
                               "      inertia: 0.5\n"
                               "      linear_damping: 2\n"
                               "      angular_damping: 1\n"
                               "      max_force: 20\n"
                               "      max_torque: 4\n";

static int fd = -1;

static json_t *ask(const char *action, const char *data) {
  char req[512], buf[1 << 16];
  snprintf(req, sizeof req,
           "{\"type\":\"command\",\"action\":\"%s\",\"data\":%s}\n", action,
           data);
  if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
    fail_msg("cannot send %s", req);
  if (pa_test_read_line(fd, buf, sizeof buf, 10000) < 0)
    fail_msg("no reply to %s", req);
  json_t *j = json_loads(buf, 0, NULL);
  if (!j || json_object_get(j, "success") != json_true())
    fail_msg("%s -> %s", req, buf);
  return j;
}

static double yaw_rate(void) {
  json_t *j = ask("get_state", "{\"robot\":\"sub\"}");
  double w = json_number_value(
      json_object_get(json_object_get(j, "data"), "yaw_rate"));
  json_decref(j);
  return w;
}

static void agent_xy(double *x, double *y) {
  json_t *j = ask("get_agents", "{}");
  json_t *a =
      json_array_get(json_object_get(json_object_get(j, "data"), "agents"), 0);
  json_t *p = json_object_get(a, "pose");
  if (!p)
    fail_msg("no agent");
  *x = json_number_value(json_array_get(p, 0));
  *y = json_number_value(json_array_get(p, 1));
  json_decref(j);
}

/* The agent's path over ms: how far it went; it stays on its loop. */
static double walk(int ms) {
  double dist = 0, x0, y0;
  agent_xy(&x0, &y0);
  for (int t = 0; t < ms; t += 100) {
    usleep(100 * 1000);
    double x, y;
    agent_xy(&x, &y);
    assert_true(fabs(y + 1) < 1e-9 && x > 0.49 && x < 1.51);
    dist += fabs(x - x0);
    x0 = x;
  }
  return dist;
}

static void test_crash_keeps_forces_and_agents(void **st) {
  (void)st;
  char path[1024];
  snprintf(path, sizeof path, "%s/restart.world.yaml", pa_test_tmpdir());
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(world_txt, f);
  fclose(f);
  const char *extra[] = {"--no-render", "--world", path, NULL};
  lt_stack t;
  assert_int_equal(lt_start(&t, "keep", extra, 30000), 0);
  fd = pa_test_tcp_connect(t.port);
  assert_true(fd >= 0);
  json_decref(
      ask("set_body_wrench", "{\"robot\":\"sub\",\"wrench\":[0,0,0,0,0,0.5]}"));
  json_decref(ask("spawn_agent", "{\"name\":\"walker\",\"pose\":[0.5,-1,0],"
                                 "\"behaviour\":\"waypoints\",\"speed\":0.6,"
                                 "\"waypoints\":[[1.5,-1],[0.5,-1]]}"));
  double before = walk(2000);
  double w0 = yaw_rate();
  printf("before the crash: yaw rate %.4f rad/s, agent walked %.3f m in 2 s\n",
         w0, before);
  assert_true(w0 > 0.4 && w0 < 0.51);
  assert_true(before > 0.8);
  pid_t sim = lt_pid(&t, PA_PROC_SIM);
  assert_int_equal(kill(sim, SIGKILL), 0);
  assert_true(lt_wait_new_pid(&t, PA_PROC_SIM, sim, 30000));
  usleep(1500 * 1000); /* three time constants: a lost torque shows */
  double after = walk(2000);
  double w1 = yaw_rate();
  printf("after the restart: yaw rate %.4f rad/s, agent walked %.3f m in 2 s\n",
         w1, after);
  assert_true(lt_log_contains(&t, "agents' behaviours"));
  assert_true(w1 > 0.45 && w1 < 0.51);
  assert_true(after > 0.8);
  close(fd);
  fd = -1;
  assert_int_equal(lt_stop(&t, 30000), 0);
  assert_int_equal(pa_test_shm_count(t.instance), 0); /* sim-keep too */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crash_keeps_forces_and_agents),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
