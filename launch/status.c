/* status.c - `playarea status` and `playarea restart`: read (and nudge) a
 * running instance through its ctl segment. */
#define _GNU_SOURCE
#include "pa_launch.h"
#include "pa_proc.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Instance selection shared by both commands. */
typedef struct target {
  const char *instance;
  long tcp_port;
  bool watch;
  char buf[PA_SHM_INSTANCE_MAX];
} target;

static int parse_target(target *t, int argc, char **argv, bool with_watch,
                        char **pos, size_t max_pos, size_t *npos,
                        const char *usage) {
  t->instance = NULL;
  t->tcp_port = 9000;
  t->watch = false;
  pa_opt o[3] = {
      {"instance", PA_OPT_STR, &t->instance, 0, 0, "instance name"},
      {"tcp_port", PA_OPT_INT, &t->tcp_port, 1, 65535,
       "select the instance p<PORT>"},
      {"watch", PA_OPT_FLAG, &t->watch, 0, 0, "refresh every second"},
  };
  size_t n = with_watch ? 3 : 2;
  char err[256];
  int r = pa_opt_parse(o, n, argc, argv, pos, max_pos, npos, err, sizeof err);
  if (r == 1) {
    pa_opt_usage(stdout, usage, NULL, o, n);
    return 0;
  }
  if (r < 0) {
    fprintf(stderr, "playarea %s: %s\n", argv[0], err);
    return PA_EXIT_CONFIG;
  }
  if (!t->instance) {
    pa_stack_instance_for_port(t->buf, sizeof t->buf, (unsigned)t->tcp_port);
    t->instance = t->buf;
  }
  return -1; /* go on */
}

static int attach(pa_stack *s, const char *cmd, const char *instance) {
  int pr = pa_stack_probe(instance);
  if (pr == PA_STACK_NONE) {
    fprintf(stderr, "playarea %s: no instance '%s' is running (select one "
            "with --instance NAME or --tcp_port PORT)\n", cmd, instance);
    return PA_EXIT_CONFIG;
  }
  if (pr == PA_STACK_STALE) {
    fprintf(stderr, "playarea %s: instance '%s' is stale (its launcher is "
            "dead); remove it with pa-shmctl gc\n", cmd, instance);
    return 1;
  }
  char err[256];
  if (pa_stack_attach(s, instance, err, sizeof err) < 0) {
    fprintf(stderr, "playarea %s: %s\n", cmd, err);
    return 1;
  }
  return 0;
}

int pa_launch_instance_port(const char *cmd, const char *instance,
                            unsigned *port) {
  pa_stack s;
  int r = attach(&s, cmd, instance);
  if (r != 0)
    return r;
  *port = __atomic_load_n(&s.ctl->tcp_port, __ATOMIC_ACQUIRE);
  pa_stack_detach(&s);
  if (*port == 0) {
    fprintf(stderr,
            "playarea %s: instance '%s' has no TCP port yet (pa-netgw "
            "is not listening)\n",
            cmd, instance);
    return 1;
  }
  return 0;
}

/* utime + stime of pid [clock ticks], or -1. */
static long long proc_cpu_ticks(int pid) {
  pa_proc_stat st;
  return pa_proc_read_stat(pid, &st) == 0 ? (long long)st.cpu_ticks : -1;
}

static void fmt_dur(char *out, size_t n, int64_t ns) {
  int64_t s = ns / 1000000000;
  if (s < 60)
    snprintf(out, n, "%.1fs", (double)ns / 1e9);
  else if (s < 3600)
    snprintf(out, n, "%dm%02ds", (int)(s / 60), (int)(s % 60));
  else
    snprintf(out, n, "%dh%02dm", (int)(s / 3600), (int)(s / 60 % 60));
}

static void fmt_bytes(char *out, size_t n, uint64_t b) {
  if (b < 10000)
    snprintf(out, n, "%llu", (unsigned long long)b);
  else if (b < 10000000)
    snprintf(out, n, "%.1fk", (double)b / 1e3);
  else if (b < 10000000000ull)
    snprintf(out, n, "%.1fM", (double)b / 1e6);
  else
    snprintf(out, n, "%.1fG", (double)b / 1e9);
}

void pa_launch_status_print(FILE *f, const pa_stack *s, const double *cpu_pct) {
  const pa_ctl *ctl = s->ctl;
  const pa_shm_header *hdr = (const pa_shm_header *)s->ctl_seg.base;
  int64_t now = pa_now_ns();
  /* bounded: the header is another process's memory */
  fprintf(f,
          "instance %.*s  tcp %u  http %u  foxglove %u  launcher pid %d  "
          "robots %u  rates: control "
          "%g Hz, scan %g Hz, odom %g Hz, camera %g Hz\n",
          (int)sizeof hdr->instance, hdr->instance, ctl->tcp_port,
          ctl->http_port, ctl->foxglove_port,
          (int)ctl->health[PA_PROC_LAUNCH].pid, ctl->robot_count,
          ctl->control_hz, ctl->scan_hz, ctl->feedback_hz, ctl->camera_hz);
  /* every port pa-netgw's core bound (or sends to), by front-end */
  pa_port_rec ports[PA_PORTS_MAX];
  size_t np = pa_stack_ports_read(s, ports);
  if (np) {
    static const char *const kind[] = {"", "tcp", "udp", "dest"};
    fprintf(f, "ports:");
    for (size_t i = 0; i < np; i++)
      fprintf(f, " %s/%s %s %u%s", ports[i].frontend, ports[i].name,
              ports[i].kind <= PA_PORT_DEST ? kind[ports[i].kind] : "?",
              ports[i].port, ports[i].up ? "" : " (down)");
    fprintf(f, "\n");
  }
  fprintf(f, "%-9s %7s %-5s %8s %4s %5s %6s %7s %9s %8s %8s %8s %7s %9s %8s %7s\n",
          "process", "pid", "state", "uptime", "rst", "exit", "cpu%", "rss",
          "loops", "p50ms", "p99ms", "maxms", "overrun", "frames", "bytes",
          "clients");
  for (int p = 0; p < PA_PROC_COUNT; p++) {
    pa_health h = ctl->health[p]; /* monitoring copy; may be a tick old */
    bool alive = h.pid > 0 && kill(h.pid, 0) == 0;
    /* The launcher's own limit, or the default where it watches nothing
     * (--hang_ms 0, a wrapped process, the launcher itself). */
    bool wrapped = h.hang_ms == PA_LAUNCH_HANG_WRAPPED;
    int64_t limit =
        (int64_t)(h.hang_ms && !wrapped ? h.hang_ms : PA_LAUNCH_HANG_MS) *
        1000000;
    bool stale = h.ready && h.heartbeat_ns > 0 && now - h.heartbeat_ns > limit;
    const char *state = !h.pid             ? "down"
                        : !alive           ? "dead"
                        : stale && wrapped ? "slow" /* a profiler's pace */
                        : stale            ? "hung"
                        : h.ready          ? "up"
                                           : "start";
    char up[16] = "-", rss[16] = "-", cpu[16] = "-", frames[16], bytes[16],
         ex[16] = "-";
    if (alive && h.start_ns > 0)
      fmt_dur(up, sizeof up, now - h.start_ns);
    long kb = alive ? pa_proc_rss_kb(h.pid) : -1;
    if (kb >= 0)
      snprintf(rss, sizeof rss, "%.1fM", (double)kb / 1024.0);
    if (alive && cpu_pct && cpu_pct[p] >= 0)
      snprintf(cpu, sizeof cpu, "%.1f", cpu_pct[p]);
    if (h.restarts || h.last_exit)
      snprintf(ex, sizeof ex, "%d", (int)h.last_exit);
    fmt_bytes(frames, sizeof frames, h.frames_sent);
    fmt_bytes(bytes, sizeof bytes, h.bytes_sent);
    fprintf(f,
            "%-9s %7d %-5s %8s %4u %5s %6s %7s %9llu %8.3f %8.3f %8.3f %7llu "
            "%9s %8s %7u\n",
            pa_launch_proc_exe(p), (int)h.pid, state, up, h.restarts, ex, cpu,
            rss, (unsigned long long)h.loops, (double)h.period_p50_ns / 1e6,
            (double)h.period_p99_ns / 1e6, (double)h.period_max_ns / 1e6,
            (unsigned long long)h.overruns, frames, bytes, h.clients);
  }
}

/* CPU% of each process over interval_ms. */
static void sample_cpu(const pa_stack *s, long long prev[PA_PROC_COUNT],
                       int prev_pid[PA_PROC_COUNT], int64_t *prev_ns,
                       double out[PA_PROC_COUNT]) {
  int64_t now = pa_now_ns();
  double dt = (double)(now - *prev_ns) / 1e9;
  long hz = sysconf(_SC_CLK_TCK);
  for (int p = 0; p < PA_PROC_COUNT; p++) {
    int pid = s->ctl->health[p].pid;
    long long t = pid > 0 ? proc_cpu_ticks(pid) : -1;
    out[p] = -1;
    if (t >= 0 && prev[p] >= 0 && prev_pid[p] == pid && dt > 0 && hz > 0)
      out[p] = 100.0 * (double)(t - prev[p]) / (double)hz / dt;
    prev[p] = t;
    prev_pid[p] = pid;
  }
  *prev_ns = now;
}

static volatile sig_atomic_t status_stop;

int pa_launch_status_main(int argc, char **argv) {
  target t;
  int r = parse_target(&t, argc, argv, true, NULL, 0, NULL,
                       "playarea status [--watch] [--instance NAME | --tcp_port PORT]");
  if (r >= 0)
    return r;
  pa_stack s;
  if ((r = attach(&s, "status", t.instance)) != 0)
    return r;
  long long prev[PA_PROC_COUNT];
  int prev_pid[PA_PROC_COUNT];
  double cpu[PA_PROC_COUNT];
  int64_t prev_ns = 0;
  for (int p = 0; p < PA_PROC_COUNT; p++)
    prev[p] = -1;
  sample_cpu(&s, prev, prev_pid, &prev_ns, cpu);
  pa_signals_install(&status_stop);
  /* One shot: measure CPU over a quarter second. */
  struct timespec ts = {0, t.watch ? 0 : 250000000};
  for (;;) {
    if (ts.tv_sec || ts.tv_nsec)
      nanosleep(&ts, NULL);
    if (status_stop)
      break;
    sample_cpu(&s, prev, prev_pid, &prev_ns, cpu);
    if (t.watch)
      fputs("\033[H\033[2J", stdout); /* home + clear, like top */
    pa_launch_status_print(stdout, &s, cpu);
    fflush(stdout);
    if (!t.watch)
      break;
    if (pa_stack_probe(t.instance) != PA_STACK_LIVE) {
      printf("instance %s is gone\n", t.instance);
      break;
    }
    ts.tv_sec = 1;
    ts.tv_nsec = 0;
  }
  pa_stack_detach(&s);
  return 0;
}

int pa_launch_restart_main(int argc, char **argv) {
  target t;
  char *pos[2];
  size_t npos = 0;
  const char *usage =
      "playarea restart sim|render|netgw [--instance NAME | --tcp_port PORT]";
  int r = parse_target(&t, argc, argv, false, pos, 2, &npos, usage);
  if (r >= 0)
    return r;
  int proc = npos == 1 ? pa_launch_proc_from_name(pos[0]) : -1;
  if (proc < 0) {
    fprintf(stderr, "playarea restart: %s; usage: %s\n",
            npos == 1 ? "unknown process (sim, render or netgw)"
                      : "name one process",
            usage);
    return PA_EXIT_CONFIG;
  }
  pa_stack s;
  if ((r = attach(&s, "restart", t.instance)) != 0)
    return r;
  pa_ctl *ctl = s.ctl;
  int launcher = ctl->health[PA_PROC_LAUNCH].pid;
  int old = ctl->health[proc].pid;
  uint32_t old_restarts = ctl->health[proc].restarts;
  int rc = 1;
  if (ctl->health[PA_PROC_LAUNCH].ready && ctl->health[proc].start_ns == 0 &&
      ctl->health[proc].restarts == 0) {
    fprintf(stderr, "playarea restart: %s is not part of this stack (started "
            "with --no-render?)\n", pa_launch_proc_exe(proc));
    goto out;
  }
  union sigval v = {.sival_int = proc};
  if (launcher <= 0 || sigqueue(launcher, SIGUSR1, v) < 0) {
    fprintf(stderr, "playarea restart: cannot reach the launcher (pid %d): %s\n",
            launcher, strerror(errno));
    goto out;
  }
  fprintf(stderr, "restarting %s (pid %d) of instance %s...\n",
          pa_launch_proc_exe(proc), old, t.instance);
  int64_t t0 = pa_now_ns();
  /* Wrapped processes (valgrind) may take long: wait up to two minutes. */
  int64_t end = t0 + 120 * (int64_t)1000000000;
  while (pa_now_ns() < end) {
    pa_health *h = &ctl->health[proc];
    int pid = h->pid;
    if (pid > 0 && pid != old && h->restarts != old_restarts &&
        __atomic_load_n(&h->ready, __ATOMIC_ACQUIRE)) {
      printf("%s serving again: pid %d (was %d), %.1f ms\n",
             pa_launch_proc_exe(proc), pid, old,
             (double)(pa_now_ns() - t0) / 1e6);
      rc = 0;
      goto out;
    }
    if (kill(launcher, 0) != 0) {
      fprintf(stderr, "playarea restart: the launcher (pid %d) exited\n",
              launcher);
      goto out;
    }
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "playarea restart: %s was not serving again within 120 s "
          "(see the launcher's log)\n", pa_launch_proc_exe(proc));
out:
  pa_stack_detach(&s);
  return rc;
}
