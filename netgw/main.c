/* main.c - pa-netgw: options -> attach the instance -> gateway loop ->
 * cleanup. See netgw.h and docs/protocol-notes.md. */
#define _GNU_SOURCE
#include "netgw.h"
#include "pa_util.h"

#include <signal.h>
#include <stdio.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
  pa_netgw_def d = pa_netgw_def_default();
  char *instance = "p9000", *bind = "127.0.0.1", *token = "";
  long tcp_port = 9000, max_clients = 256, chunk = PA_CAM_CHUNK_DEFAULT,
       timeout_ms = 2000, max_output = 4l << 20, odom_watch_us = -1,
       idle_ms = 10000, per_peer = 0, reserve = 4;
  double feedback_hz = 100;
  bool realtime = false;
  const pa_opt opts[] = {
      {"instance", PA_OPT_STR, &instance, 0, 0, "shared-memory instance"},
      {"tcp_port", PA_OPT_INT, &tcp_port, 0, 65535,
       "TCP port (0 = pick a free one)"},
      {"bind", PA_OPT_STR, &bind, 0, 0, "IPv4 address to listen on"},
      {"token", PA_OPT_STR, &token, 0, 0,
       "secret a client must send with `auth` first (empty = none)"},
      {"tcp_feedback_hz", PA_OPT_DOUBLE, &feedback_hz, 0.001, 100000,
       "odom frames per simulated second"},
      {"max_clients", PA_OPT_INT, &max_clients, 1, 100000,
       "TCP clients served at once"},
      {"idle_timeout_ms", PA_OPT_INT, &idle_ms, 0, 3600000,
       "close a connection whose line stays unfinished, or (with --token) "
       "that does not authenticate, this long (0 = never)"},
      {"max_clients_per_peer", PA_OPT_INT, &per_peer, 0, 100000,
       "TCP clients from one IPv4 address (0 = no limit)"},
      {"reserve_clients", PA_OPT_INT, &reserve, 0, 1000,
       "slots beyond --max_clients for an address holding no connection "
       "(an admin connects from e.g. 127.0.0.2)"},
      {"camera_chunk", PA_OPT_INT, &chunk, PA_CAM_CHUNK_MIN, PA_CAM_CHUNK_MAX,
       "camera payload bytes per datagram (1400 fits a 1500-byte MTU)"},
      {"request_timeout_ms", PA_OPT_INT, &timeout_ms, 1, 3600000,
       "simulator round trip before a request gets busy"},
      {"max_output", PA_OPT_INT, &max_output, 65536, 1l << 30,
       "bytes of unread replies before a client is disconnected"},
      {"odom_watch_us", PA_OPT_INT, &odom_watch_us, -1,
       PA_NETGW_ODOM_WATCH_MAX_US,
       "wake this early for a due odom tick and watch for it (lower median "
       "frame age for ~that much CPU per frame period; 0 = off; -1 = 0, or "
       "300 with --realtime)"},
      {"realtime", PA_OPT_FLAG, &realtime, 0, -1,
       "odom thread SCHED_FIFO priority 9 (below pa-sim --realtime's 10), "
       "mlockall, --odom_watch_us 300 unless given (needs CAP_SYS_NICE; off "
       "by default)"},
  };
  size_t n_opts = sizeof opts / sizeof opts[0];
  char err[512];
  pa_log_init("pa-netgw", PA_LOG_INFO);
  int rc = pa_opt_parse(opts, n_opts, argc, argv, NULL, 0, NULL, err,
                        sizeof err);
  if (rc == 1) {
    pa_opt_usage(stdout, "pa-netgw [flags]",
                 "TCP control (text and JSON lines) and UDP feedback frames "
                 "for a playarea instance",
                 opts, n_opts);
    return 0;
  }
  if (rc != 0) {
    pa_error("%s", err);
    return PA_EXIT_CONFIG;
  }
  signal(SIGPIPE, SIG_IGN);
  /* ONFAULT: lock what is touched, not every reserved page (thread stacks,
   * sanitizer shadow); no page of the odom path is swapped out. */
  if (realtime && mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0)
    pa_warn("--realtime: mlockall failed (%s)", strerror(errno));
  pa_stack st;
  rc = pa_stack_attach(&st, instance, err, sizeof err);
  for (int tries = 0; rc == PA_SHM_ENOTREADY && tries < 50; tries++) {
    usleep(100000); /* the creator is still initialising it */
    rc = pa_stack_attach(&st, instance, err, sizeof err);
  }
  if (rc != 0) {
    pa_error("instance '%s': %s", instance, err);
    return PA_EXIT_CONFIG;
  }
  d.tcp_port = (unsigned)tcp_port;
  d.bind = bind;
  d.token = token;
  d.feedback_hz = feedback_hz;
  d.max_clients = (unsigned)max_clients;
  d.camera_chunk = (unsigned)chunk;
  d.request_timeout_ms = (unsigned)timeout_ms;
  d.max_output = (size_t)max_output;
  d.idle_timeout_ms = (unsigned)idle_ms;
  d.max_clients_per_peer = (unsigned)per_peer;
  d.reserve_clients = (unsigned)reserve;
  if (odom_watch_us < 0) /* not given: SCHED_FIFO alone does not cut p99 */
    odom_watch_us = realtime ? PA_NETGW_RT_WATCH_US : 0;
  d.odom_watch_us = (unsigned)odom_watch_us;
  d.realtime = realtime;
  int status = 1;
  pa_netgw *g = pa_netgw_create(&d, &st, err, sizeof err);
  if (!g) {
    pa_error("%s", err);
    /* bad settings or a port that cannot be bound: configuration */
    status = strstr(err, "--bind") || strstr(err, "--token") ||
                     !strncmp(err, "cannot listen", 13)
                 ? PA_EXIT_CONFIG
                 : 1;
    goto out;
  }
  pa_info("listening on %s:%u (instance %s)", bind, pa_netgw_port(g),
          instance);
  status = pa_netgw_run(g, true) == 0 ? 0 : 1;
  pa_netgw_destroy(g);
out:
  pa_stack_detach(&st);
  return status;
}
