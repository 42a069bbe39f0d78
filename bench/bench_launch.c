/* bench_launch.c - prints the launcher's figures on the real stack:
 *   cold start: spawn `playarea` -> ready line -> first odom frame;
 *   restart: SIGKILL a child -> serving again (sim, netgw: first new odom
 *   frame, after reconnecting for netgw; render: ready with a new pid),
 *   p50/max over N kills each.
 * Targets: start <= 500 ms, restart <= 200 ms.
 *   bench-launch [kills=20] [starts=5] */
#include "pa_launch.h"
#include "test_launch_util.h"
#include "testutil.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double ms_since(int64_t t0) { return (double)(pa_test_now_ms() - t0); }

static void report(const char *what, int64_t *v, int n, double target) {
  if (n == 0) {
    printf("%-38s no samples\n", what);
    return;
  }
  int64_t p50 = pa_percentile_i64(v, (size_t)n, 50);
  int64_t mx = pa_percentile_i64(v, (size_t)n, 100);
  printf("%-38s n=%-3d p50 %5lld ms  max %5lld ms  (target <= %.0f ms: %s)\n",
         what, n, (long long)p50, (long long)mx, target,
         p50 <= target ? "p50 met" : "p50 MISSED");
}

/* Waits for an odom frame with seq > *seq (updated). */
static bool next_odom(lt_odom *o, uint32_t *seq, int timeout_ms) {
  int64_t end = pa_test_now_ms() + timeout_ms;
  lt_odom_frame f;
  while (pa_test_now_ms() < end)
    if (lt_odom_recv(o, &f, 50) == 0 && f.seq > *seq) {
      *seq = f.seq;
      return true;
    }
  return false;
}

int main(int argc, char **argv) {
  int kills = argc > 1 ? atoi(argv[1]) : 20;
  int starts = argc > 2 ? atoi(argv[2]) : 5;
  if (kills < 1 || kills > 1000 || starts < 1 || starts > 100) {
    fprintf(stderr, "usage: bench-launch [kills 1..1000] [starts 1..100]\n");
    return 2;
  }
  if (!getenv("PA_BIN_DIR")) {
    char dir[4096];
    pa_exe_dir(dir, sizeof dir);
    setenv("PA_BIN_DIR", dir, 0);
  }
  setenv("LIBGL_ALWAYS_SOFTWARE", "1", 0);
  setenv("PA_LOG_LEVEL", "warn", 0);
  int64_t start_ready[100], start_odom[100];
  int ns = 0;
  for (int i = 0; i < starts; i++) {
    lt_stack t;
    int64_t t0 = pa_test_now_ms();
    if (lt_start(&t, "bench", NULL, 60000) != 0) {
      fprintf(stderr, "start %d failed\n", i);
      return 1;
    }
    int64_t ready = (int64_t)ms_since(t0);
    lt_odom o;
    uint32_t seq = 0;
    if (lt_odom_open(&o, t.port, NULL) != 0 || !next_odom(&o, &seq, 10000)) {
      fprintf(stderr, "no odom after start %d\n", i);
      lt_stop(&t, 30000);
      return 1;
    }
    start_ready[ns] = ready;
    start_odom[ns++] = (int64_t)ms_since(t0);
    lt_odom_close(&o);
    lt_stop(&t, 30000);
  }
  report("cold start -> ready line", start_ready, ns, 500);
  report("cold start -> first odom frame", start_odom, ns, 500);

  /* Restarts: one stack, the crash window short enough that every kill is a
   * "first crash" (10 ms backoff), which is the path measured. */
  const char *extra[] = {"--crash_window_ms", "50", NULL};
  lt_stack t;
  if (lt_start(&t, "benchk", extra, 60000) != 0)
    return 1;
  lt_odom o;
  uint32_t seq = 0;
  if (lt_odom_open(&o, t.port, NULL) != 0 || !next_odom(&o, &seq, 10000)) {
    fprintf(stderr, "no odom\n");
    lt_stop(&t, 30000);
    return 1;
  }
  const int procs[] = {PA_PROC_SIM, PA_PROC_NETGW, PA_PROC_RENDER};
  const char *what[] = {"SIGKILL pa-sim -> next odom frame",
                        "SIGKILL pa-netgw -> odom (reconnect)",
                        "SIGKILL pa-render -> ready"};
  int rc = 0;
  for (int k = 0; k < 3; k++) {
    int p = procs[k];
    int64_t *v = calloc((size_t)kills, sizeof *v);
    int n = 0;
    for (int i = 0; i < kills; i++) {
      usleep(150000); /* > crash window: each kill counts as a first crash */
      pid_t old = lt_pid(&t, p);
      lt_odom_frame last;
      lt_odom_drain(&o, &last);
      if (old <= 0 || kill(old, SIGKILL) != 0) {
        fprintf(stderr, "%s: no process to kill\n", pa_launch_proc_exe(p));
        rc = 1;
        break;
      }
      int64_t t0 = pa_test_now_ms();
      bool ok;
      if (p == PA_PROC_RENDER)
        ok = lt_wait_new_pid(&t, p, old, 30000);
      else if (p == PA_PROC_NETGW)
        /* as a client would: reconnect once the new netgw listens (a
         * connect to the dying one may still be accepted, then reset) */
        ok = lt_wait_new_pid(&t, p, old, 30000) &&
             lt_odom_reconnect(&o, t.port, NULL, 30000) == 0 &&
             next_odom(&o, &seq, 30000);
      else
        ok = next_odom(&o, &seq, 30000);
      if (!ok) {
        fprintf(stderr, "%s did not serve again\n", pa_launch_proc_exe(p));
        rc = 1;
        break;
      }
      v[n++] = (int64_t)ms_since(t0);
    }
    report(what[k], v, n, 200);
    free(v);
  }
  lt_odom_close(&o);
  lt_stop(&t, 30000);
  return rc;
}
