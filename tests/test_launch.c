/* test_launch.c - the real stack under the real launcher: start/stop leaves
 * nothing behind; each child SIGKILLed in turn is restarted alone while a
 * client streams odom (pose continuous, seq increasing); restart on demand;
 * status. */
#include "pa_launch.h"
#include "test_launch_util.h"
#include "testutil.h"

#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define START_MS 60000 /* generous: loaded 2-core machine, sanitizers */

static void test_start_stop(void **state) {
  (void)state;
  lt_stack t;
  assert_int_equal(lt_start(&t, "ss", NULL, START_MS), 0);
  assert_true(t.port > 0);
  assert_int_equal(t.s.ctl->tcp_port, t.port);
  pid_t pids[PA_PROC_COUNT];
  for (int p = 0; p < PA_PROC_COUNT; p++) {
    pids[p] = lt_pid(&t, p);
    assert_true(pids[p] > 0);
    assert_int_equal(kill(pids[p], 0), 0);
    assert_int_equal(t.s.ctl->health[p].ready, 1);
  }
  assert_int_equal(pids[PA_PROC_LAUNCH], t.pid);
  assert_true(pa_test_shm_count(t.instance) >= 4);
  assert_true(pa_test_ping(t.port, 10000));

  assert_int_equal(lt_stop(&t, 30000), 0);
  for (int p = PA_PROC_SIM; p < PA_PROC_COUNT; p++)
    assert_true(lt_pid_gone(pids[p], 5000));
  assert_int_equal(pa_test_shm_count(t.instance), 0);
  assert_true(lt_log_contains(&t, "pa-netgw stopped"));
  assert_true(lt_log_contains(&t, "pa-sim stopped"));
}

static double dist(const lt_odom_frame *a, const lt_odom_frame *b) {
  return hypot((double)a->x - b->x, (double)a->y - b->y);
}

/* Receives until a frame newer than last arrives; checks every frame on the
 * way is continuous with the previous one. */
static bool resume_after(lt_odom *o, lt_odom_frame *last, int timeout_ms,
                         double max_jump) {
  int64_t end = pa_test_now_ms() + timeout_ms;
  lt_odom_frame f;
  while (pa_test_now_ms() < end) {
    if (lt_odom_recv(o, &f, 200) < 0)
      continue;
    if (f.seq <= last->seq)
      continue; /* a frame sent before the kill */
    double d = dist(&f, last);
    if (d > max_jump || f.t < last->t) {
      fprintf(stderr, "discontinuity: seq %u t %.3f (%.3f, %.3f) after seq %u "
              "t %.3f (%.3f, %.3f)\n", f.seq, f.t, f.x, f.y, last->seq,
              last->t, last->x, last->y);
      return false;
    }
    *last = f;
    return true;
  }
  return false;
}

static void test_kill_each_child(void **state) {
  (void)state;
  lt_stack t;
  assert_int_equal(lt_start(&t, "kill", NULL, START_MS), 0);
  const char *drive = "cmd 0.3 0.5\n";
  lt_odom o;
  assert_int_equal(lt_odom_open(&o, t.port, drive), 0);
  lt_odom_frame last;
  assert_int_equal(lt_odom_recv(&o, &last, 10000), 0);
  /* let it move a bit */
  for (int i = 0; i < 20; i++)
    assert_true(resume_after(&o, &last, 10000, 0.2));

  const int order[] = {PA_PROC_SIM, PA_PROC_RENDER, PA_PROC_NETGW, PA_PROC_SIM};
  for (size_t k = 0; k < sizeof order / sizeof *order; k++) {
    int p = order[k];
    pid_t before[PA_PROC_COUNT];
    for (int q = 0; q < PA_PROC_COUNT; q++)
      before[q] = lt_pid(&t, q);
    uint32_t restarts = t.s.ctl->health[p].restarts;
    lt_odom_drain(&o, &last);
    assert_int_equal(kill(before[p], SIGKILL), 0);
    assert_true(lt_wait_new_pid(&t, p, before[p], 30000));
    assert_int_equal(t.s.ctl->health[p].restarts, restarts + 1);
    assert_int_equal(t.s.ctl->health[p].last_exit, -SIGKILL);
    if (p == PA_PROC_NETGW) {
      /* the TCP connection died with netgw: reconnect to the same port */
      assert_int_equal(t.s.ctl->tcp_port, t.port);
      assert_int_equal(lt_odom_reconnect(&o, t.port, drive, 10000), 0);
    }
    /* the stream resumes: seq increases, the pose is continuous (the robot
     * moves <= 0.3 m/s; allow for the time the process was down) */
    assert_true(resume_after(&o, &last, 20000, 0.5));
    for (int i = 0; i < 5; i++)
      assert_true(resume_after(&o, &last, 10000, 0.2));
    /* the others were not touched */
    for (int q = 0; q < PA_PROC_COUNT; q++)
      if (q != p)
        assert_int_equal(lt_pid(&t, q), before[q]);
    char cause[64];
    snprintf(cause, sizeof cause, "%s (pid %d) died with signal SIGKILL",
             pa_launch_proc_exe(p), (int)before[p]);
    assert_true(lt_log_contains(&t, cause));
  }
  assert_true(lt_log_contains(&t, "serving again"));
  lt_odom_close(&o);
  assert_int_equal(lt_stop(&t, 30000), 0);
  assert_int_equal(pa_test_shm_count(t.instance), 0);
}

/* One text command on fd that replies "ok". */
static void ask_ok(int fd, const char *line) {
  char buf[256];
  assert_int_equal(pa_test_send_str(fd, line), 0);
  if (pa_test_read_line(fd, buf, sizeof buf, 10000) < 0 || strcmp(buf, "ok"))
    fail_msg("'%s' -> '%s'", line, buf);
}

/* A pa-netgw killed while the sim is paused: its successor sends no odom
 * seq the dead one sent (it used to resend the last one once). */
static void test_odom_seq_after_restart(void **state) {
  (void)state;
  lt_stack t;
  const char *extra[] = {"--no-render", NULL};
  assert_int_equal(lt_start(&t, "oseq", extra, START_MS), 0);
  lt_odom o;
  assert_int_equal(lt_odom_open(&o, t.port, NULL), 0);
  lt_odom_frame last, f;
  assert_int_equal(lt_odom_recv(&o, &last, 10000), 0);
  ask_ok(o.tcp, "pause\n");
  usleep(300000);
  lt_odom_drain(&o, &last);
  pid_t net = lt_pid(&t, PA_PROC_NETGW);
  assert_int_equal(kill(net, SIGKILL), 0);
  assert_true(lt_wait_new_pid(&t, PA_PROC_NETGW, net, 30000));
  assert_int_equal(lt_odom_reconnect(&o, t.port, NULL, 10000), 0);
  int64_t end = pa_test_now_ms() + 1500;
  while (pa_test_now_ms() < end)
    if (lt_odom_recv(&o, &f, 100) == 0 && f.seq <= last.seq)
      fail_msg("odom seq %u after a restart, %u already sent", f.seq, last.seq);
  ask_ok(o.tcp, "step 10\n");
  assert_int_equal(lt_odom_recv(&o, &f, 10000), 0);
  assert_true(f.seq > last.seq);
  lt_odom_close(&o);
  assert_int_equal(lt_stop(&t, 30000), 0);
}

static void test_restart_on_demand(void **state) {
  (void)state;
  lt_stack t;
  const char *extra[] = {"--no-render", NULL};
  assert_int_equal(lt_start(&t, "rst", extra, START_MS), 0);
  assert_int_equal(lt_pid(&t, PA_PROC_RENDER), 0);
  pid_t sim = lt_pid(&t, PA_PROC_SIM), net = lt_pid(&t, PA_PROC_NETGW);
  char log[512];
  snprintf(log, sizeof log, "%s/restart-%s.log", pa_test_tmpdir(), t.instance);
  const char *args[] = {"restart", "sim", "--instance", t.instance, NULL};
  assert_int_equal(lt_run_playarea(args, log, 60000), 0);
  pid_t sim2 = lt_pid(&t, PA_PROC_SIM);
  assert_true(sim2 > 0 && sim2 != sim);
  assert_true(lt_pid_gone(sim, 5000));
  assert_int_equal(lt_pid(&t, PA_PROC_NETGW), net);
  assert_int_equal(t.s.ctl->health[PA_PROC_SIM].restarts, 1);
  assert_true(lt_log_contains(&t, "restart of pa-sim"));
  /* the same command again for netgw, selected by port this time is not
   * possible with --tcp_port 0 instances: use the instance */
  const char *args2[] = {"restart", "netgw", "--instance", t.instance, NULL};
  assert_int_equal(lt_run_playarea(args2, log, 60000), 0);
  assert_true(lt_pid(&t, PA_PROC_NETGW) != net);
  assert_int_equal(lt_pid(&t, PA_PROC_SIM), sim2);
  /* render is not part of this stack */
  const char *args3[] = {"restart", "render", "--instance", t.instance, NULL};
  assert_int_not_equal(lt_run_playarea(args3, log, 5000), 0);
  char text[4096];
  assert_true(pa_test_read_file(log, text, sizeof text) >= 0);
  assert_non_null(strstr(text, "pa-sim serving again"));
  assert_non_null(strstr(text, "pa-netgw serving again"));
  assert_non_null(strstr(text, "not part of this stack"));
  int fd = pa_test_tcp_connect(t.port);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(lt_stop(&t, 30000), 0);
}

/* The line of a process in `playarea status` output, split in columns. */
static int status_row(const char *text, const char *proc, char cols[16][32]) {
  const char *p = text;
  size_t len = strlen(proc);
  while ((p = strstr(p, proc))) {
    if ((p == text || p[-1] == '\n') && p[len] == ' ')
      break;
    p += len;
  }
  if (!p)
    return 0;
  int n = 0;
  while (*p && *p != '\n' && n < 16) {
    while (*p == ' ')
      p++;
    int k = 0;
    while (*p && *p != ' ' && *p != '\n' && k < 31)
      cols[n][k++] = *p++;
    cols[n][k] = '\0';
    if (k)
      n++;
  }
  return n;
}

static void test_status(void **state) {
  (void)state;
  lt_stack t;
  const char *extra[] = {"--no-render", NULL};
  assert_int_equal(lt_start(&t, "st", extra, START_MS), 0);
  usleep(500000); /* let loop statistics fill */
  char text[8192];
  assert_int_equal(lt_status(&t, text, sizeof text, 20000), 0);
  fprintf(stderr, "%s", text);
  assert_non_null(strstr(text, t.instance));
  char cols[16][32];
  /* process pid state uptime rst exit cpu% rss loops p50 p99 max overrun
   * frames bytes clients */
  assert_int_equal(status_row(text, "pa-sim", cols), 16);
  assert_int_equal(atoi(cols[1]), lt_pid(&t, PA_PROC_SIM));
  assert_string_equal(cols[2], "up");
  assert_true(atof(cols[3]) > 0);           /* uptime */
  assert_int_equal(atoi(cols[4]), 0);       /* restarts */
  assert_true(atof(cols[6]) >= 0 && atof(cols[6]) <= 400); /* cpu% */
  assert_true(atof(cols[7]) > 0);           /* rss [MB] */
  assert_true(atoll(cols[8]) > 0);          /* loops */
  double p50 = atof(cols[9]), p99 = atof(cols[10]), mx = atof(cols[11]);
  /* 200 Hz: the period is 5 ms; sane means positive and ordered */
  assert_true(p50 > 0 && p50 < 1000);
  assert_true(p99 >= p50 && mx >= p99);
  assert_int_equal(status_row(text, "pa-netgw", cols), 16);
  assert_int_equal(atoi(cols[1]), lt_pid(&t, PA_PROC_NETGW));
  assert_string_equal(cols[2], "up");
  assert_int_equal(status_row(text, "pa-render", cols), 16);
  assert_string_equal(cols[2], "down");
  /* a connected client shows up */
  int fd = pa_test_tcp_connect(t.port);
  assert_true(fd >= 0);
  assert_int_equal(pa_test_send_str(fd, "ping\n"), 0);
  char line[64];
  assert_true(pa_test_read_line(fd, line, sizeof line, 10000) >= 0);
  assert_string_equal(line, "pong");
  assert_int_equal(lt_status(&t, text, sizeof text, 20000), 0);
  /* the log has both runs; the last pa-netgw row is the newest */
  const char *last = strstr(text, "instance ");
  const char *again = last;
  while (again && (again = strstr(again + 1, "instance ")))
    last = again;
  assert_int_equal(status_row(last, "pa-netgw", cols), 16);
  assert_int_equal(atoi(cols[15]), 1);
  close(fd);
  assert_int_equal(lt_stop(&t, 30000), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_start_stop),
      cmocka_unit_test(test_kill_each_child),
      cmocka_unit_test(test_odom_seq_after_restart),
      cmocka_unit_test(test_restart_on_demand),
      cmocka_unit_test(test_status),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
