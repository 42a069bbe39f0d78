/* test_launch_ops.c - operations on real stacks: crash-loop guard, --wrap
 * with a real tool, two instances side by side, a live instance refused, a
 * stale one (launcher SIGKILLed) cleaned. */
#include "pa_launch.h"
#include "test_launch_util.h"
#include "testutil.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define START_MS 60000

static void test_crash_loop(void **state) {
  (void)state;
  lt_stack t;
  /* /bin/false exits 1 at once: render crash-loops and is given up on; the
   * documented choice is that the stack keeps serving without camera. */
  const char *extra[] = {"--wrap", "render=/bin/false", NULL};
  assert_int_equal(lt_start(&t, "loop", extra, START_MS), 0);
  assert_true(lt_log_contains(&t, "GIVING UP on pa-render: 5 crashes within 30 s"));
  assert_true(lt_log_contains(&t, "restarting in 10 ms"));
  assert_true(lt_log_contains(&t, "restarting in 80 ms"));
  assert_int_equal(lt_pid(&t, PA_PROC_RENDER), 0);
  assert_int_equal(t.s.ctl->health[PA_PROC_RENDER].restarts, 4);
  assert_int_equal(t.s.ctl->health[PA_PROC_RENDER].last_exit, 1);
  /* still serving */
  assert_true(pa_test_ping(t.port, 10000));
  /* no further attempts after giving up */
  usleep(300000);
  assert_int_equal(t.s.ctl->health[PA_PROC_RENDER].restarts, 4);
  assert_int_equal(lt_stop(&t, 30000), 0);
  assert_int_equal(pa_test_shm_count(t.instance), 0);

  /* the same for pa-sim stops the whole stack with exit 1 */
  char inst[PA_SHM_INSTANCE_MAX], log[512];
  pa_test_instance(inst, sizeof inst, "loopsim");
  snprintf(log, sizeof log, "%s/loopsim.log", pa_test_tmpdir());
  const char *a[] = {"--tcp_port", "0", "--instance", inst, "--no-render",
                     "--wrap", "sim=/bin/false", NULL};
  assert_int_equal(lt_run_playarea(a, log, 60000), 1);
  assert_int_equal(pa_test_shm_count(inst), 0);
  /* a configuration error (exit 78) is not retried: the launcher exits 78 */
  const char *b[] = {"--tcp_port", "0", "--instance", inst, "--no-render",
                     "--wrap", "sim=sh -c 'exit 78'", NULL};
  assert_int_equal(lt_run_playarea(b, log, 60000), PA_EXIT_CONFIG);
  assert_int_equal(pa_test_shm_count(inst), 0);
}

static void test_wrap_strace(void **state) {
  (void)state;
  if (access("/usr/bin/strace", X_OK) != 0) {
    fprintf(stderr, "strace not installed: skipped\n");
    skip();
  }
  char out[512], wrap[600];
  snprintf(out, sizeof out, "%s/netgw.strace", pa_test_tmpdir());
  snprintf(wrap, sizeof wrap, "netgw=strace -f -c -o %s", out);
  const char *extra[] = {"--no-render", "--wrap", wrap, NULL};
  lt_stack t;
  assert_int_equal(lt_start(&t, "wrap", extra, START_MS), 0);
  /* the health pid is the real pa-netgw, a child of strace */
  pid_t net = lt_pid(&t, PA_PROC_NETGW);
  char path[64], comm[64] = "";
  snprintf(path, sizeof path, "/proc/%d/comm", (int)net);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  assert_non_null(fgets(comm, sizeof comm, f));
  fclose(f);
  assert_non_null(strstr(comm, "pa-netgw"));
  assert_true(pa_test_ping(t.port, 20000));
  assert_int_equal(lt_stop(&t, 60000), 0);
  assert_true(lt_pid_gone(net, 5000));
  /* strace wrote its summary when the traced process ended */
  struct stat st;
  assert_int_equal(stat(out, &st), 0);
  assert_true(st.st_size > 0);
  char text[8192];
  assert_true(pa_test_read_file(out, text, sizeof text) > 0);
  assert_non_null(strstr(text, "syscall"));
}

static void test_two_instances(void **state) {
  (void)state;
  const char *extra[] = {"--no-render", NULL};
  lt_stack a, b;
  assert_int_equal(lt_start(&a, "two", extra, START_MS), 0);
  assert_int_equal(lt_start(&b, "two", extra, START_MS), 0);
  assert_true(a.port != b.port);
  assert_string_not_equal(a.instance, b.instance);
  pid_t bsim = lt_pid(&b, PA_PROC_SIM);
  /* killing one stack's sim leaves the other alone */
  pid_t asim = lt_pid(&a, PA_PROC_SIM);
  assert_int_equal(kill(asim, SIGKILL), 0);
  assert_true(lt_wait_new_pid(&a, PA_PROC_SIM, asim, 30000));
  assert_int_equal(lt_pid(&b, PA_PROC_SIM), bsim);
  assert_int_equal(b.s.ctl->health[PA_PROC_SIM].restarts, 0);
  assert_int_equal(lt_stop(&a, 30000), 0);
  assert_int_equal(pa_test_shm_count(a.instance), 0);
  assert_true(pa_test_shm_count(b.instance) >= 4);
  int fd = pa_test_tcp_connect(b.port);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(lt_stop(&b, 30000), 0);
}

static void test_live_refused_stale_cleaned(void **state) {
  (void)state;
  const char *extra[] = {"--no-render", NULL};
  lt_stack a;
  assert_int_equal(lt_start(&a, "stale", extra, START_MS), 0);
  /* a second launcher on the live instance is refused */
  char log[512];
  snprintf(log, sizeof log, "%s/second-%s.log", pa_test_tmpdir(), a.instance);
  const char *args[] = {"--tcp_port", "0", "--no-render", "--instance",
                        a.instance, NULL};
  assert_int_equal(lt_run_playarea(args, log, 30000), 1);
  char text[4096];
  assert_true(pa_test_read_file(log, text, sizeof text) >= 0);
  char want[160];
  snprintf(want, sizeof want, "instance %s is already running (launcher pid %d)",
           a.instance, (int)a.pid);
  assert_non_null(strstr(text, want));
  assert_int_equal(lt_pid(&a, PA_PROC_LAUNCH), a.pid); /* untouched */

  /* SIGKILL the launcher: its children die (PR_SET_PDEATHSIG) and the
   * segments stay behind, stale */
  pid_t sim = lt_pid(&a, PA_PROC_SIM), net = lt_pid(&a, PA_PROC_NETGW);
  pid_t dead = a.pid;
  pa_stack_detach(&a.s);
  a.attached = false;
  pa_test_stop(a.pid, SIGKILL, 5000);
  a.pid = -1;
  assert_true(lt_pid_gone(sim, 10000));
  assert_true(lt_pid_gone(net, 10000));
  assert_true(pa_test_shm_count(a.instance) >= 4);
  assert_int_equal(pa_stack_probe(a.instance), PA_STACK_STALE);

  lt_stack b;
  assert_int_equal(lt_start_named(&b, a.instance, extra, START_MS), 0);
  snprintf(want, sizeof want, "removed stale instance %s left by dead launcher pid %d",
           a.instance, (int)dead);
  assert_true(lt_log_contains(&b, want));
  assert_int_equal(lt_stop(&b, 30000), 0);
  assert_int_equal(pa_test_shm_count(a.instance), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crash_loop),
      cmocka_unit_test(test_wrap_strace),
      cmocka_unit_test(test_two_instances),
      cmocka_unit_test(test_live_refused_stale_cleaned),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
