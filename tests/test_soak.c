/* test_soak.c - one stack under the attack mixes of issue 32 for ~60 s:
 * TCP clients pipelining heavy requests, HTTP pipelining, unfinished
 * 32 MiB POSTs, WebSocket ping floods (/ws and Foxglove), idle connections
 * past the per-peer cap, one after the other and then all at once, while a
 * bystander pings every 100 ms and streams odometry. The stack runs under
 * its launcher with the watchdog at 2 s: pa-netgw must never be found hung
 * or restarted, its RSS stays under 256 MB, the bystander's p99 under
 * 100 ms, and no ping goes unanswered. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <signal.h>

#include "limits_attacks.h"
#include "test_launch_util.h"

#define PHASE_MS 9000

typedef struct phase {
  const char *name;
  void (*attack)(la_ctx *);
} phase;

/* Runs attack for ms (pumping the attackers, sampling RSS), then closes
 * its connections. */
static void run_phase(la_ctx *x, const phase *p, int ms) {
  int64_t t0 = pa_test_now_ms();
  int pings0 = x->by.n;
  p->attack(x);
  while (pa_test_now_ms() < t0 + ms) {
    la_sample_rss(x);
    usleep(100000);
  }
  fprintf(stderr, "  %s: %d attackers, %d pings, RSS max so far %ld MB\n",
          p->name, x->nfds, x->by.n - pings0, x->rss_max_kb / 1024);
  la_end(x);
  usleep(500000); /* the closes are seen before the next phase */
}

static void all_at_once(la_ctx *x) {
  la_tcp_pipeline(x);
  la_http_pipeline(x);
  la_post_bodies(x);
  la_ws_ping_flood(x);
}

static void soak(void **state) {
  (void)state;
  const char *const extra[] = {"--no-render", "--hang_ms", "2000", NULL};
  lt_stack t;
  memset(&t, 0, sizeof t);
  assert_int_equal(lt_start(&t, "soak", extra, 60000), 0);
  pid_t gw = lt_pid(&t, PA_PROC_NETGW), sim = lt_pid(&t, PA_PROC_SIM);
  assert_true(gw > 0 && sim > 0);
  static la_ctx x;
  la_begin(&x, t.s.ctl, gw, NULL);
  la_bystander_start(&x);
  static const phase phases[] = {
      {"tcp pipeline", la_tcp_pipeline},    {"http pipeline", la_http_pipeline},
      {"unfinished posts", la_post_bodies}, {"ws ping flood", la_ws_ping_flood},
      {"idle connections", la_idle},        {"all at once", all_at_once},
  };
  for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++)
    run_phase(&x, &phases[i], PHASE_MS);
  la_bystander_stop(&x);
  la_report(&x, "soak");
  bool hung = lt_log_contains(&t, "is hung");
  pid_t gw_now = lt_pid(&t, PA_PROC_NETGW), sim_now = lt_pid(&t, PA_PROC_SIM);
  int rc = lt_stop(&t, 10000);
  if (hung || gw_now != gw || getenv("PA_DEBUG_SLOW"))
    lt_print_log(&t);
  assert_false(hung);
  assert_int_equal(gw_now, gw); /* never killed by the watchdog */
  assert_int_equal(sim_now, sim);
  assert_int_equal(rc, 0);
  assert_int_equal(x.by.lost, 0);
  assert_true(x.by.n >= 400);
  assert_true(la_latency_ok(&x));
  assert_true(x.rss_max_kb > 0 && x.rss_max_kb < LA_RSS_MAX_KB);
  assert_true(x.by.odom > 100); /* odometry flowed all along */
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  la_asan_quarantine(); /* before any stack starts */
  const struct CMUnitTest tests[] = {cmocka_unit_test(soak)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
