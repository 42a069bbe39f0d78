/* bench_netgw.c - figures for pa-netgw with the real pa-sim behind it:
 *   1. lockstep `step` round trips from one client (JSON, 360-beam scan in
 *      every reply): rate and p50/p99 latency;
 *   2. odom frame age: pa_tick.wall_ns (sim wrote the tick) -> datagram
 *      received by the client, p50/p99;
 *   3. fan-out: 32 clients on odom + scan: frames dropped at the sender,
 *      frames lost at the receivers, sim tick period p99 with and without.
 * Usage: bench-netgw [seconds per phase, default 3]. */
#define _GNU_SOURCE
#include "netgw_harness.h"
#include "pa_util.h"

#include <inttypes.h>
#include <math.h>

static int64_t pct(int64_t *v, size_t n, double p) {
  return n ? pa_percentile_i64(v, n, p) : 0;
}

/* ---- 1. lockstep ---------------------------------------------------------*/

static void bench_step(double secs) {
  ng_stack s;
  /* Lockstep as learning loops run it: paused, each request steps. */
  const char *sim[] = {"--paused", NULL};
  if (ng_start(&s, "bstep", sim, NULL) != 0) {
    ng_stop(&s);
    return;
  }
  int fd = ng_connect(&s);
  static char line[1 << 20];
  /* Forward and back in turn: the robot stays clear of walls, so the figure
   * is the gateway's and not the cost of sliding along a wall in pa-sim. */
  const char *reqs[2] = {
      "{\"type\":\"command\",\"action\":\"step\",\"data\":{\"v\":0.2,\"w\":0.1}}\n",
      "{\"type\":\"command\",\"action\":\"step\",\"data\":{\"v\":-0.2,\"w\":-0.1}}\n"};
  size_t cap = 2000000;
  int64_t *lat = malloc(cap * sizeof *lat);
  size_t n = 0;
  int64_t t0 = pa_now_ns(), end = t0 + (int64_t)(secs * 1e9);
  size_t reply_bytes = 0;
  bool scan_ok = true;
  while (n < cap) {
    int64_t a = pa_now_ns();
    if (a >= end)
      break;
    if (pa_test_send_str(fd, reqs[n & 1]) != 0 ||
        pa_test_read_line(fd, line, sizeof line, 5000) < 0) {
      fprintf(stderr, "step: no reply\n");
      break;
    }
    lat[n++] = pa_now_ns() - a;
    reply_bytes = strlen(line);
  }
  scan_ok = strstr(line, "\"ranges\":[") != NULL;
  double wall = (pa_now_ns() - t0) / 1e9;
  printf("lockstep step (JSON, 1 client, %s 360-beam scan per reply, %zu "
         "bytes): %.0f steps/s, p50 %.1f us, p99 %.1f us, max %.1f us "
         "(%zu steps)\n",
         scan_ok ? "with" : "WITHOUT", reply_bytes, n / wall,
         pct(lat, n, 50) / 1e3, pct(lat, n, 99) / 1e3, pct(lat, n, 100) / 1e3,
         n);
  printf("  targets: >= 10000 steps/s, p50 <= 100 us\n");
  /* The same round trip without the state in the reply (text `step`). */
  n = 0;
  t0 = pa_now_ns();
  end = t0 + (int64_t)(secs * 1e9);
  while (n < cap && pa_now_ns() < end) {
    int64_t a = pa_now_ns();
    if (pa_test_send_str(fd, "step\n") != 0 ||
        pa_test_read_line(fd, line, sizeof line, 5000) < 0)
      break;
    lat[n++] = pa_now_ns() - a;
  }
  wall = (pa_now_ns() - t0) / 1e9;
  printf("  text `step` (reply `ok`, no state): %.0f steps/s, p50 %.1f us, "
         "p99 %.1f us\n",
         n / wall, pct(lat, n, 50) / 1e3, pct(lat, n, 99) / 1e3);
  free(lat);
  close(fd);
  ng_stop(&s);
}

/* ---- 2. odom age -----------------------------------------------------------*/

/* wall_ns of the state record whose sim_time is t (searched from the head). */
static int64_t tick_wall_ns(pa_stack *st, double t, void *buf, uint32_t cap) {
  uint64_t head = pa_ring_head(st->state);
  for (uint64_t k = 0; k < 32 && k < head; k++) {
    pa_ring_cursor c = {head - k, 0};
    uint32_t len;
    uint64_t seq;
    if (pa_ring_read_next(st->state, &c, buf, cap, &len, &seq) != 0)
      continue;
    const pa_tick *tk = buf;
    if (tk->sim_time == t)
      return tk->wall_ns;
  }
  return -1;
}

static void bench_odom_age(double secs) {
  ng_stack s;
  if (ng_start(&s, "bage", NULL, NULL) != 0) {
    ng_stop(&s);
    return;
  }
  int fd = ng_connect(&s);
  uint16_t up;
  int u = pa_test_udp_bind(&up);
  char line[128];
  snprintf(line, sizeof line, "cmd 0.1 0.1\nsub odom %u\nping\n", up);
  pa_test_send_str(fd, line);
  pa_test_read_line(fd, line, sizeof line, 5000);
  uint32_t cap = pa_ring_max_record(s.st.state);
  void *buf = malloc(cap);
  size_t max = 100000, n = 0, unknown = 0;
  int64_t *age = malloc(max * sizeof *age);
  int64_t end = pa_now_ns() + (int64_t)(secs * 1e9);
  while (pa_now_ns() < end && n < max) {
    uint8_t b[64];
    int r = pa_test_udp_recv(u, b, sizeof b, 1000);
    int64_t now = pa_now_ns();
    if (r != 36)
      continue;
    double t;
    memcpy(&t, b + 8, 8);
    int64_t w = tick_wall_ns(&s.st, t, buf, cap);
    if (w < 0) {
      unknown++;
      continue;
    }
    age[n++] = now - w;
  }
  printf("odom frame age (tick written by pa-sim -> datagram received): p50 "
         "%.1f us, p99 %.1f us, max %.1f us (%zu frames, %zu unmatched)\n",
         pct(age, n, 50) / 1e3, pct(age, n, 99) / 1e3, pct(age, n, 100) / 1e3,
         n, unknown);
  printf("  target: p99 <= 200 us\n");
  free(age);
  free(buf);
  close(u);
  close(fd);
  ng_stop(&s);
}

/* ---- 3. fan-out ----------------------------------------------------------------*/

enum { FAN = 32 };

static void bench_fanout(double secs) {
  ng_stack s;
  if (ng_start(&s, "bfan", NULL, NULL) != 0) {
    ng_stop(&s);
    return;
  }
  pa_health *sim = &s.st.ctl->health[PA_PROC_SIM];
  pa_health *gw = &s.st.ctl->health[PA_PROC_NETGW];
  usleep((useconds_t)(secs * 1e6)); /* baseline: nobody subscribed */
  int64_t p99_idle = sim->period_p99_ns, p50_idle = sim->period_p50_ns;
  uint64_t drop0 = gw->frames_dropped;

  int tcp[FAN], udp[FAN];
  struct pollfd pf[FAN];
  uint32_t last_odom[FAN] = {0}, last_scan[FAN] = {0};
  uint64_t odom_n = 0, scan_n = 0, odom_gaps = 0, scan_gaps = 0;
  for (int i = 0; i < FAN; i++) {
    tcp[i] = ng_connect(&s);
    uint16_t up;
    udp[i] = pa_test_udp_bind(&up);
    char line[128];
    snprintf(line, sizeof line, "sub odom %u\nsub scan %u\nping\n", up, up);
    pa_test_send_str(tcp[i], line);
    pa_test_read_line(tcp[i], line, sizeof line, 5000);
    pf[i].fd = udp[i];
    pf[i].events = POLLIN;
  }
  uint64_t sent0 = gw->frames_sent;
  int64_t end = pa_now_ns() + (int64_t)(secs * 1e9);
  static uint8_t b[65536];
  while (pa_now_ns() < end) {
    if (poll(pf, FAN, 100) <= 0)
      continue;
    for (int i = 0; i < FAN; i++) {
      if (!(pf[i].revents & POLLIN))
        continue;
      int r;
      while ((r = (int)recv(udp[i], b, sizeof b, MSG_DONTWAIT)) > 0) {
        uint32_t seq;
        memcpy(&seq, b + 4, 4);
        bool odom = !memcmp(b, "ODM1", 4);
        uint32_t *last = odom ? &last_odom[i] : &last_scan[i];
        if (*last && seq != *last + 1)
          (odom ? &odom_gaps : &scan_gaps)[0] += seq - *last - 1;
        *last = seq;
        (odom ? &odom_n : &scan_n)[0]++;
      }
    }
  }
  usleep(300000); /* let health catch up */
  int64_t p99_fan = sim->period_p99_ns, p50_fan = sim->period_p50_ns;
  printf("fan-out, %d clients on odom + scan for %.0f s: %" PRIu64
         " odom + %" PRIu64 " scan frames received, %" PRIu64
         " datagrams sent, dropped at the sender %" PRIu64
         ", lost before the receivers: %" PRIu64 " odom, %" PRIu64 " scan\n",
         FAN, secs, odom_n, scan_n, gw->frames_sent - sent0,
         gw->frames_dropped - drop0, odom_gaps, scan_gaps);
  printf("  sim tick period p50/p99: %.1f/%.1f us without subscribers, "
         "%.1f/%.1f us with them (p99 change %+.1f%%)\n",
         p50_idle / 1e3, p99_idle / 1e3, p50_fan / 1e3, p99_fan / 1e3,
         p99_idle ? 100.0 * (double)(p99_fan - p99_idle) / (double)p99_idle
                  : 0.0);
  printf("  targets: no odom frame dropped at the sender, tick p99 within "
         "10%%\n");
  for (int i = 0; i < FAN; i++) {
    close(tcp[i]);
    close(udp[i]);
  }
  ng_stop(&s);
}

int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 3.0;
  if (!(secs > 0 && secs < 3600)) {
    fprintf(stderr, "usage: bench-netgw [seconds per phase]\n");
    return 2;
  }
  if (!getenv("PA_BIN_DIR")) {
    char dir[4096];
    pa_exe_dir(dir, sizeof dir);
    setenv("PA_BIN_DIR", dir, 1);
  }
  bench_step(secs);
  bench_odom_age(secs);
  bench_fanout(secs);
  return 0;
}
