/* bench_netgw.c - figures for pa-netgw with the real pa-sim behind it:
 *   1. lockstep `step` round trips from one client (JSON, 360-beam scan in
 *      every reply): rate and p50/p99 latency, then both processes' CPU
 *      with the client connected and idle;
 *   2. odom frame age: pa_tick.wall_ns (sim wrote the tick) -> datagram
 *      received by the client, p50/p99;
 *   3. fan-out: 32 clients on odom + scan: frames dropped at the sender,
 *      frames lost at the receivers, sim tick period p99 with and without.
 * Usage: bench-netgw [seconds per phase, default 3] [phases: any of
 *        step, odom, fan, odomrt; default step,odom,fan] [pa-netgw
 *        flags...]. odomrt: odom age with pa-sim and pa-netgw in --realtime
 *        against the default, alternating runs, with the ratio. Exits 1 when a
 *        phase measured nothing (the processes' logs are printed). */
#define _GNU_SOURCE
#include "netgw_harness.h"
#include "pa_proc.h"
#include "pa_util.h"

#include <inttypes.h>
#include <math.h>
#include <sys/wait.h>
#include <time.h>

static int64_t pct(int64_t *v, size_t n, double p) {
  return n ? pa_percentile_i64(v, n, p) : 0;
}

static int failures;
static const char *const *gw_flags; /* extra pa-netgw flags from argv */

/* A phase that measured nothing must not print zeros as if they were
 * figures: say why, show both logs, and make the exit status non-zero. */
static void fail(ng_stack *s, const char *phase, const char *why) {
  failures++;
  bool sim_alive = s->sim > 0 && pa_test_alive(s->sim);
  bool gw_alive = s->gw > 0 && pa_test_alive(s->gw);
  /* A running pa-sim that stopped writing ticks is stuck (or paused). */
  char last[96] = "no tick written";
  uint32_t len;
  uint64_t seq;
  static uint8_t tb[1 << 16];
  if (s->st.state && pa_ring_read_latest(s->st.state, tb, sizeof tb, &len,
                                         &seq) == 0 &&
      len >= sizeof(pa_tick))
    snprintf(last, sizeof last, "last tick %" PRIu64 " written %.0f ms ago",
             ((const pa_tick *)tb)->tick,
             (pa_now_ns() - ((const pa_tick *)tb)->wall_ns) / 1e6);
  fprintf(stderr,
          "bench-netgw: FAILED %s: %s (pa-sim %s, %s; pa-netgw %s)\n", phase,
          why, sim_alive ? "running" : "NOT running", last,
          gw_alive ? "running" : "NOT running");
  fprintf(stderr, "pa-sim log:\n");
  pa_test_dump_file(s->sim_log);
  fprintf(stderr, "pa-netgw log:\n");
  pa_test_dump_file(s->gw_log);
}

/* Sim tick period as a consumer sees it: wall_ns between consecutive state
 * records, read from the ring (the sim's own health window spans 20 s at
 * 200 Hz, longer than a phase, so it cannot separate two phases). */
typedef struct tick_watch {
  pa_ring_cursor cur;
  uint64_t last_seq;
  int64_t last_wall;
  int64_t *v;
  size_t n, cap;
  void *buf;
  uint32_t buf_cap;
} tick_watch;

static void tw_init(tick_watch *w, pa_stack *st, size_t cap) {
  memset(w, 0, sizeof *w);
  w->cur = pa_ring_cursor_now(st->state);
  w->cap = cap;
  w->v = malloc(cap * sizeof *w->v);
  w->buf_cap = pa_ring_max_record(st->state);
  w->buf = malloc(w->buf_cap);
}

static void tw_drain(tick_watch *w, pa_stack *st) {
  uint32_t len;
  uint64_t seq;
  while (pa_ring_read_next(st->state, &w->cur, w->buf, w->buf_cap, &len,
                           &seq) == 0) {
    if (len < sizeof(pa_tick))
      continue;
    int64_t wall = ((const pa_tick *)w->buf)->wall_ns;
    if (w->last_seq && seq == w->last_seq + 1 && w->n < w->cap)
      w->v[w->n++] = wall - w->last_wall;
    w->last_seq = seq;
    w->last_wall = wall;
  }
}

static void tw_free(tick_watch *w) {
  free(w->v);
  free(w->buf);
}

/* ---- 1. lockstep ---------------------------------------------------------*/

/* The spinning that speeds up lockstep must stop with it: CPU of both
 * processes while the client stays connected but sends nothing. */
#define IDLE_SECS 5
static void idle_cpu(ng_stack *s) {
  struct timespec settle = {0, 300000000}; /* past any spin window */
  nanosleep(&settle, NULL);
  int64_t sim0 = pa_proc_cpu_ms(s->sim), gw0 = pa_proc_cpu_ms(s->gw);
  int64_t t0 = pa_now_ns();
  struct timespec idle = {IDLE_SECS, 0};
  nanosleep(&idle, NULL);
  double ms = (pa_now_ns() - t0) / 1e6;
  int64_t sim1 = pa_proc_cpu_ms(s->sim), gw1 = pa_proc_cpu_ms(s->gw);
  if (sim0 < 0 || gw0 < 0 || sim1 < 0 || gw1 < 0) {
    fail(s, "idle cpu", "cannot read the processes' CPU time");
    return;
  }
  printf("  idle (client connected, no step) over %.1f s: pa-sim %.2f %% "
         "of a core, pa-netgw %.2f %%\n",
         ms / 1e3, 100.0 * (double)(sim1 - sim0) / ms,
         100.0 * (double)(gw1 - gw0) / ms);
}

/* Request-reply round trips on fd for secs, reqs[i % nreq] in turn, each
 * timed into lat (while i < cap; lat NULL: counted only); the last reply
 * stays in line, the wall seconds go to *wall. Returns the count (it stops
 * early at a request that got no reply within 5 s). */
static size_t round_trips(int fd, const char *const *reqs, size_t nreq,
                          double secs, int64_t *lat, size_t cap, char *line,
                          size_t line_n, double *wall) {
  size_t n = 0;
  int64_t t0 = pa_now_ns(), end = t0 + (int64_t)(secs * 1e9);
  for (int64_t a = t0; a < end && (!lat || n < cap); a = pa_now_ns()) {
    if (pa_test_send_str(fd, reqs[n % nreq]) != 0 ||
        pa_test_read_line(fd, line, line_n, 5000) < 0) {
      fprintf(stderr, "bench-netgw: no reply to %.40s\n", reqs[n % nreq]);
      break;
    }
    if (lat)
      lat[n] = pa_now_ns() - a;
    n++;
  }
  *wall = (pa_now_ns() - t0) / 1e9;
  return n;
}

/* The machine's own floor for a step: a loopback TCP round trip to a
 * process that answers each line at once (blocking reads on both sides, as
 * the bench's client and pa-netgw's loop wait), in the same run. A step
 * adds pa-netgw's work and its two hand-offs with pa-sim through shared
 * memory, but pa-netgw and pa-sim spin a little before they block: on a
 * machine whose wake-ups are slow the step can beat this floor. p50 [ns]
 * into *p50; round trips a second returned (0: it could not run). */
static double echo_floor(double secs, int64_t *lat, size_t cap, int64_t *p50) {
  *p50 = 0;
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(ls, 1) != 0 || getsockname(ls, (struct sockaddr *)&a, &al) != 0) {
    if (ls >= 0)
      close(ls);
    return 0;
  }
  pid_t pid = fork();
  if (pid < 0) {
    close(ls);
    return 0;
  }
  if (pid == 0) { /* the echo: each read written back, until EOF */
    int c = accept(ls, NULL, NULL);
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char b[4096];
    ssize_t r;
    while ((r = read(c, b, sizeof b)) > 0)
      for (ssize_t off = 0, w; off < r; off += w)
        if ((w = write(c, b + off, (size_t)(r - off))) <= 0)
          _exit(0);
    _exit(0);
  }
  close(ls);
  int fd = pa_test_tcp_connect(ntohs(a.sin_port));
  size_t n = 0;
  double wall = 0;
  if (fd >= 0) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    static const char *const req[] = {"step\n"};
    char line[64];
    n = round_trips(fd, req, 1, secs, lat, cap, line, sizeof line, &wall);
    close(fd);
  }
  kill(pid, SIGKILL); /* it ends at our EOF anyway; never left behind */
  waitpid(pid, NULL, 0);
  if (!n)
    return 0;
  *p50 = pct(lat, n, 50);
  return n / wall;
}

#define WARM_NS 500000000LL /* unmeasured steps first */

static void bench_step(double secs) {
  ng_stack s;
  /* Lockstep as learning loops run it: paused, each request steps. */
  const char *sim[] = {"--paused", NULL};
  if (ng_start(&s, "bstep", sim, gw_flags) != 0) {
    ng_stop(&s);
    failures++;
    return;
  }
  int fd = ng_connect(&s);
  static char line[1 << 20];
  /* Forward and back in turn: the robot stays clear of walls, so the figure
   * is the gateway's and not the cost of sliding along a wall in pa-sim. */
  static const char *const reqs[2] = {
      "{\"type\":\"command\",\"action\":\"step\",\"data\":{\"v\":0.2,\"w\":0.1}"
      "}\n",
      "{\"type\":\"command\",\"action\":\"step\",\"data\":{\"v\":-0.2,\"w\":-0."
      "1}}\n"};
  size_t cap = 2000000;
  int64_t *lat = malloc(cap * sizeof *lat);
  double wall, warm_wall;
  /* The stack's first moments (its processes' first touches, pa-sim's
   * spin tuner measuring both ways) are counted apart: a learning loop
   * runs for hours. */
  size_t warm = round_trips(fd, reqs, 2, WARM_NS / 1e9, NULL, 0, line,
                            sizeof line, &warm_wall);
  size_t n = round_trips(fd, reqs, 2, secs, lat, cap, line, sizeof line, &wall);
  if (n == 0) {
    fail(&s, "lockstep step", "no step was answered");
    free(lat);
    close(fd);
    ng_stop(&s);
    return;
  }
  bool scan_ok = strstr(line, "\"ranges\":[") != NULL;
  if (!scan_ok)
    fail(&s, "lockstep step", "the step reply carried no scan ranges");
  printf("lockstep step (JSON, 1 client, %s 360-beam scan per reply, %zu "
         "bytes): %.0f steps/s, p50 %.1f us, p99 %.1f us, max %.1f us "
         "(%zu steps)\n",
         scan_ok ? "with" : "WITHOUT", strlen(line), n / wall,
         pct(lat, n, 50) / 1e3, pct(lat, n, 99) / 1e3, pct(lat, n, 100) / 1e3,
         n);
  printf("  the first %.1f s after the start (not counted above): %.0f "
         "steps/s\n",
         WARM_NS / 1e9, warm / warm_wall);
  printf("  targets (issue 37): >= 30000 steps/s, p50 <= 30 us, p50 within "
         "1.5x of the text step's\n");
  int64_t json_p50 = pct(lat, n, 50);
  /* The same round trip without the state in the reply (text `step`). */
  static const char *const text[] = {"step\n"};
  n = round_trips(fd, text, 1, secs, lat, cap, line, sizeof line, &wall);
  if (n == 0)
    fail(&s, "text step", "no text step was answered");
  printf("  text `step` (reply `ok`, no state): %.0f steps/s, p50 %.1f us, "
         "p99 %.1f us; JSON p50 / text p50 %.2f\n",
         n / wall, pct(lat, n, 50) / 1e3, pct(lat, n, 99) / 1e3,
         n ? (double)json_p50 / (double)pct(lat, n, 50) : 0.0);
  /* The floor in the same run, the stack idle beside it. */
  int64_t echo_p50;
  double echo_rate = echo_floor(secs, lat, cap, &echo_p50);
  if (echo_rate > 0)
    printf("  the machine's floor: a loopback TCP round trip to a process "
           "that answers at once: %.0f/s, p50 %.1f us; JSON step p50 / "
           "that p50 %.2f\n",
           echo_rate, echo_p50 / 1e3, (double)json_p50 / (double)echo_p50);
  else
    printf("  the machine's floor: the loopback echo could not run\n");
  idle_cpu(&s);
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

/* One datagram and the kernel's receive timestamp of it, converted from
 * CLOCK_REALTIME to pa_now_ns()'s clock (-1 when absent). Length or -1. */
static int recv_stamped(int fd, void *buf, size_t n, int timeout_ms,
                        int64_t *kernel_ns) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  *kernel_ns = -1;
  if (poll(&p, 1, timeout_ms) <= 0)
    return -1;
  struct iovec iov = {buf, n};
  union {
    char b[CMSG_SPACE(sizeof(struct timespec))];
    struct cmsghdr align;
  } ctl;
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1,
                     .msg_control = ctl.b, .msg_controllen = sizeof ctl.b};
  ssize_t r = recvmsg(fd, &m, MSG_DONTWAIT);
  if (r < 0)
    return -1;
  struct timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  int64_t now = pa_now_ns();
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
      struct timespec ts;
      memcpy(&ts, CMSG_DATA(c), sizeof ts);
      int64_t back = ((int64_t)rt.tv_sec - ts.tv_sec) * 1000000000 +
                     (rt.tv_nsec - ts.tv_nsec); /* how long it waited */
      *kernel_ns = now - back;
    }
  return (int)r;
}

/* Frame ages of one run, in ns: received (age) and kernel-stamped (kage). */
typedef struct odom_run {
  int64_t *age, *kage;
  size_t n, nk, unknown;
} odom_run;

static void print_age(const char *what, const odom_run *r) {
  printf("odom frame age%s (tick written by pa-sim -> datagram received): "
         "p50 %.1f us, p90 %.1f us, p99 %.1f us, max %.1f us (%zu frames, "
         "%zu unmatched)\n",
         what, pct(r->age, r->n, 50) / 1e3, pct(r->age, r->n, 90) / 1e3,
         pct(r->age, r->n, 99) / 1e3, pct(r->age, r->n, 100) / 1e3, r->n,
         r->unknown);
  printf("  of which in pa-netgw (tick written -> datagram queued at the "
         "client's socket, kernel stamp): p50 %.1f us, p90 %.1f us, p99 %.1f "
         "us, max %.1f us (%zu stamps)\n",
         pct(r->kage, r->nk, 50) / 1e3, pct(r->kage, r->nk, 90) / 1e3,
         pct(r->kage, r->nk, 99) / 1e3, pct(r->kage, r->nk, 100) / 1e3,
         r->nk);
}

/* Appends secs of odom ages to r (arrays sized by the caller: max). With
 * realtime, both pa-sim and pa-netgw get --realtime. */
static void odom_age_run(double secs, bool realtime, odom_run *r, size_t max) {
  ng_stack s;
  const char *sim_rt[] = {"--realtime", NULL};
  const char *gw_args[32];
  int na = 0;
  if (realtime)
    gw_args[na++] = "--realtime";
  for (int i = 0; gw_flags && gw_flags[i] && na < 31; i++)
    gw_args[na++] = gw_flags[i];
  gw_args[na] = NULL;
  if (ng_start(&s, "bage", realtime ? sim_rt : NULL, gw_args) != 0) {
    ng_stop(&s);
    failures++;
    return;
  }
  int fd = ng_connect(&s);
  uint16_t up;
  int u = pa_test_udp_bind(&up);
  int one = 1;
  /* The kernel stamps each datagram as it is queued to our socket: the age
   * at that point is pa-netgw's part, without this process's wake-up. */
  setsockopt(u, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
  char line[128];
  snprintf(line, sizeof line, "cmd 0.1 0.1\nsub odom %u\nping\n", up);
  pa_test_send_str(fd, line);
  pa_test_read_line(fd, line, sizeof line, 5000);
  uint32_t cap = pa_ring_max_record(s.st.state);
  void *buf = malloc(cap);
  size_t n0 = r->n, unknown0 = r->unknown;
  int64_t end = pa_now_ns() + (int64_t)(secs * 1e9);
  while (pa_now_ns() < end && r->n < max) {
    uint8_t b[64];
    int64_t kns;
    int got = recv_stamped(u, b, sizeof b, 1000, &kns);
    int64_t now = pa_now_ns();
    pa_test_odom o;
    if (!pa_test_parse_odom(b, got, &o))
      continue;
    int64_t w = tick_wall_ns(&s.st, o.t, buf, cap);
    if (w < 0) {
      r->unknown++;
      continue;
    }
    r->age[r->n++] = now - w;
    if (kns >= 0)
      r->kage[r->nk++] = kns - w;
  }
  size_t got = r->n - n0;
  if (got < (size_t)(secs * 50)) {
    char why[160];
    snprintf(why, sizeof why,
             "%zu odom frames matched in %.1f s (%zu unmatched), expected "
             "about %.0f at 100 Hz",
             got, secs, r->unknown - unknown0, secs * 100);
    fail(&s, "odom frame age", why);
  }
  free(buf);
  close(u);
  close(fd);
  ng_stop(&s);
}

static void odom_run_alloc(odom_run *r, size_t max) {
  memset(r, 0, sizeof *r);
  r->age = malloc(max * sizeof *r->age);
  r->kage = malloc(max * sizeof *r->kage);
}

static void odom_run_free(odom_run *r) {
  free(r->age);
  free(r->kage);
}

static void bench_odom_age(double secs) {
  size_t max = 1000000;
  odom_run r;
  odom_run_alloc(&r, max);
  odom_age_run(secs, false, &r, max);
  print_age("", &r);
  printf("  target: p99 <= 200 us\n");
  odom_run_free(&r);
}

/* Default vs --realtime (pa-sim and pa-netgw), alternating runs of secs/2 in
 * one session so both modes see the same machine load; pooled figures. */
static void bench_odom_rt(double secs) {
  enum { ROUNDS = 4 };
  size_t max = 1000000;
  odom_run def, rt;
  odom_run_alloc(&def, max);
  odom_run_alloc(&rt, max);
  for (int i = 0; i < ROUNDS; i++) {
    odom_age_run(secs / 2, false, &def, max);
    odom_age_run(secs / 2, true, &rt, max);
  }
  printf("odom age, %d alternating runs of %.1f s per mode:\n", ROUNDS,
         secs / 2);
  print_age(" [default]", &def);
  print_age(" [--realtime]", &rt);
  int64_t d99 = pct(def.age, def.n, 99), r99 = pct(rt.age, rt.n, 99);
  int64_t dk99 = pct(def.kage, def.nk, 99), rk99 = pct(rt.kage, rt.nk, 99);
  printf("  p99 realtime/default: received %.2f, in pa-netgw %.2f; p50 "
         "received %.2f\n",
         d99 ? (double)r99 / (double)d99 : 0.0,
         dk99 ? (double)rk99 / (double)dk99 : 0.0,
         pct(def.age, def.n, 50)
             ? (double)pct(rt.age, rt.n, 50) / (double)pct(def.age, def.n, 50)
             : 0.0);
  printf("  target: p99 <= 200 us\n");
  odom_run_free(&def);
  odom_run_free(&rt);
}

/* ---- 3. fan-out ----------------------------------------------------------------*/

enum { FAN = 32 };

static void bench_fanout(double secs) {
  ng_stack s;
  if (ng_start(&s, "bfan", NULL, gw_flags) != 0) {
    ng_stop(&s);
    failures++;
    return;
  }
  pa_health *gw = &s.st.ctl->health[PA_PROC_NETGW];
  size_t tcap = (size_t)(secs * 10000) + 64; /* room for 10 kHz ticks */
  tick_watch idle, busy;
  tw_init(&idle, &s.st, tcap);
  /* Baseline: nobody subscribed; the ring holds 64 ticks, drain often. */
  uint64_t tick0 = s.st.ctl->health[PA_PROC_SIM].loops;
  for (int64_t end = pa_now_ns() + (int64_t)(secs * 1e9); pa_now_ns() < end;) {
    usleep(20000);
    tw_drain(&idle, &s.st);
  }
  double control_hz = s.st.ctl->control_hz;
  if ((double)idle.n < secs * control_hz / 2) {
    char why[200];
    snprintf(why, sizeof why,
             "pa-sim wrote %zu consecutive ticks in %.1f s without "
             "subscribers, about %.0f expected at %.0f Hz (tick %" PRIu64
             " at the start)",
             idle.n, secs, secs * control_hz, control_hz, tick0);
    fail(&s, "fan-out baseline", why);
    tw_free(&idle);
    ng_stop(&s);
    return;
  }
  /* Nothing streams yet, so these are current despite the 250 ms refresh. */
  uint64_t drop0 = gw->frames_dropped, sent0 = gw->frames_sent;
  uint64_t odom_sent0 = gw->counters[PA_NETGW_CTR_ODOM_FRAMES];

  int tcp[FAN], udp[FAN];
  struct pollfd pf[FAN];
  uint32_t last_odom[FAN] = {0}, last_scan[FAN] = {0};
  uint64_t odom_n = 0, scan_n = 0, odom_gaps = 0, scan_gaps = 0;
  int subscribed = 0;
  for (int i = 0; i < FAN; i++) {
    tcp[i] = ng_connect(&s);
    uint16_t up = 0;
    udp[i] = pa_test_udp_bind(&up);
    pf[i].fd = udp[i];
    pf[i].events = POLLIN;
    char line[128];
    snprintf(line, sizeof line, "sub odom %u\nsub scan %u\nping\n", up, up);
    if (tcp[i] >= 0 && udp[i] >= 0 && pa_test_send_str(tcp[i], line) == 0 &&
        pa_test_read_line(tcp[i], line, sizeof line, 5000) > 0 &&
        !strcmp(line, "pong"))
      subscribed++;
  }
  if (subscribed != FAN) {
    char why[96];
    snprintf(why, sizeof why, "only %d of %d clients subscribed", subscribed,
             FAN);
    fail(&s, "fan-out", why);
  }
  tw_init(&busy, &s.st, tcap);
  int64_t end = pa_now_ns() + (int64_t)(secs * 1e9);
  int64_t drain_end = end + 200000000;
  static uint8_t b[65536];
  bool closed = false;
  while (pa_now_ns() < drain_end) {
    if (!closed && pa_now_ns() >= end) {
      /* Closing stops the streams; what is in flight is still counted. */
      for (int i = 0; i < FAN; i++)
        if (tcp[i] >= 0)
          close(tcp[i]);
      closed = true;
    }
    int pr = poll(pf, FAN, 20);
    if (!closed)
      tw_drain(&busy, &s.st);
    if (pr <= 0)
      continue;
    for (int i = 0; i < FAN; i++) {
      if (!(pf[i].revents & POLLIN))
        continue;
      int r;
      while ((r = (int)recv(udp[i], b, sizeof b, MSG_DONTWAIT)) >= 8) {
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
  if (!closed)
    for (int i = 0; i < FAN; i++)
      if (tcp[i] >= 0)
        close(tcp[i]);
  usleep(300000); /* let netgw's health (250 ms) catch up */
  uint64_t sent = gw->frames_sent - sent0;
  uint64_t dropped = gw->frames_dropped - drop0;
  uint64_t odom_sent = gw->counters[PA_NETGW_CTR_ODOM_FRAMES] - odom_sent0;
  int64_t p50_idle = pct(idle.v, idle.n, 50), p99_idle = pct(idle.v, idle.n, 99);
  int64_t p50_fan = pct(busy.v, busy.n, 50), p99_fan = pct(busy.v, busy.n, 99);
  printf("fan-out, %d clients on odom + scan for %.1f s: %" PRIu64
         " odom + %" PRIu64 " scan frames received, %" PRIu64
         " datagrams sent (%" PRIu64 " odom), dropped at the sender %" PRIu64
         ", lost before the receivers: %" PRIu64 " odom, %" PRIu64 " scan\n",
         FAN, secs, odom_n, scan_n, sent, odom_sent, dropped, odom_gaps,
         scan_gaps);
  printf("  sim tick period p50/p99 (state ring wall_ns): %.1f/%.1f us "
         "without subscribers (%zu ticks), %.1f/%.1f us with them (%zu "
         "ticks; p99 change %+.1f%%)\n",
         p50_idle / 1e3, p99_idle / 1e3, idle.n, p50_fan / 1e3, p99_fan / 1e3,
         busy.n,
         p99_idle ? 100.0 * (double)(p99_fan - p99_idle) / (double)p99_idle
                  : 0.0);
  printf("  targets: no odom frame dropped at the sender, tick p99 within "
         "10%%\n");
  /* 100 Hz odom per client, 10 Hz scans: well below half of that means the
   * stream is broken, not slow. */
  double want = secs * 100.0 * FAN;
  if (busy.n < 10 || odom_n < want / 2 || scan_n == 0) {
    char why[200];
    snprintf(why, sizeof why,
             "measured nothing useful: %" PRIu64 " odom (about %.0f expected) "
             "and %" PRIu64 " scan frames received, %zu ticks seen",
             odom_n, want, scan_n, busy.n);
    fail(&s, "fan-out", why);
  }
  for (int i = 0; i < FAN; i++)
    if (udp[i] >= 0)
      close(udp[i]);
  tw_free(&idle);
  tw_free(&busy);
  ng_stop(&s);
}

/* Whether the comma-separated list names phase exactly ("odom" is not
 * "odomrt"). */
static bool has_phase(const char *list, const char *phase) {
  size_t n = strlen(phase);
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    if (len == n && !strncmp(p, phase, n))
      return true;
    p += len + (p[len] == ',');
  }
  return false;
}

int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 3.0;
  if (!(secs > 0 && secs < 3600)) {
    fprintf(stderr, "usage: bench-netgw [seconds per phase] [step,odom,fan,odomrt] "
                    "[pa-netgw flags...]\n");
    return 2;
  }
  if (!getenv("PA_BIN_DIR")) {
    char dir[4096];
    pa_exe_dir(dir, sizeof dir);
    setenv("PA_BIN_DIR", dir, 1);
  }
  const char *only = argc > 2 ? argv[2] : "";
  if (argc > 3)
    gw_flags = (const char *const *)argv + 3; /* argv[argc] is NULL */
  if (!only[0] || has_phase(only, "step"))
    bench_step(secs);
  if (!only[0] || has_phase(only, "odom"))
    bench_odom_age(secs);
  if (has_phase(only, "odomrt"))
    bench_odom_rt(secs);
  if (!only[0] || has_phase(only, "fan"))
    bench_fanout(secs);
  if (failures) {
    fprintf(stderr, "bench-netgw: %d phase(s) FAILED (see above)\n", failures);
    return 1;
  }
  return 0;
}
