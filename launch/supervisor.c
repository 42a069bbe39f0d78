/* supervisor.c - the process table: start pa-sim, pa-render, pa-netgw in
 * order, restart whichever exits unexpectedly (backoff, crash-loop guard) or
 * stops beating (hang watchdog), stop them in reverse order. Signals only set
 * flags; everything happens in the loop, which sleeps in ppoll() with the
 * signals unblocked. */
#define _GNU_SOURCE
#include "pa_launch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <poll.h>
#include <unistd.h>

enum child_state {
  CH_OFF,      /* not wanted (--no-render) or not started yet */
  CH_BACKOFF,  /* waiting to be (re)started at next_start_ns */
  CH_STARTING, /* running, not ready yet */
  CH_RUNNING,  /* ready */
  CH_RESTART,  /* restart requested: TERM sent, waiting for the exit */
  CH_DOWN,     /* given up on (crash loop or configuration error) */
};

typedef struct child {
  int proc;
  char **argv;
  pid_t pid;            /* our direct child; also its process group */
  enum child_state state;
  bool restarting;      /* the next ready is a restart ("serving again") */
  int64_t spawn_ns, deadline_ns, next_start_ns, down_ns;
  int64_t crash_ns[PA_LAUNCH_CRASH_MAX]; /* ring of recent crash times */
  int ncrash;
  uint32_t restarts;
  int64_t timeout_ns;   /* ready deadline after spawn */
  int64_t hang_ns;      /* watchdog limit on the heartbeat's age, 0 = off */
  int64_t ready_ns;     /* when we saw it ready: the heartbeat's floor */
  int64_t hung_ns;      /* heartbeat age when the watchdog killed it, 0 = not */
  bool wrapped;         /* run under --wrap: the pa-* process is its child */
} child;

static volatile sig_atomic_t stop_sig;
static volatile sig_atomic_t got_chld;
static volatile sig_atomic_t restart_mask; /* bit per PA_PROC_* */

static void on_hup(int sig) { stop_sig = sig; }
static void on_chld(int sig) { got_chld = 1; }
static void on_usr1(int sig, siginfo_t *si, void *uc) {
  int p = si->si_value.sival_int;
  if (si->si_code == SI_QUEUE && p > PA_PROC_LAUNCH && p < PA_PROC_COUNT)
    restart_mask |= 1 << p;
}

long pa_launch_backoff_ms(int n) {
  long ms = PA_LAUNCH_BACKOFF_MIN_MS;
  for (int i = 1; i < n && ms < PA_LAUNCH_BACKOFF_MAX_MS; i++)
    ms *= 2;
  return ms < PA_LAUNCH_BACKOFF_MAX_MS ? ms : PA_LAUNCH_BACKOFF_MAX_MS;
}

static const char *name_of(const child *c) { return pa_launch_proc_exe(c->proc); }

/* "exit code 3" / "signal SIGSEGV (Segmentation fault)". */
static void describe_status(int st, char *out, size_t n) {
  if (WIFEXITED(st))
    snprintf(out, n, "exit code %d", WEXITSTATUS(st));
  else if (WIFSIGNALED(st)) {
    const char *abbr = sigabbrev_np(WTERMSIG(st));
    snprintf(out, n, "signal SIG%s (%s)%s", abbr ? abbr : "?",
             strsignal(WTERMSIG(st)), WCOREDUMP(st) ? ", core dumped" : "");
  } else
    snprintf(out, n, "status 0x%x", st);
}

/* keep: pa-netgw's held listeners and their environment, else NULL. */
typedef struct spawn_keep {
  const pa_launch_keep *k;
  const char *keep, *kept;
} spawn_keep;

static pid_t spawn(child *c, pid_t launcher, const sigset_t *orig_mask,
                   int death_sig, const spawn_keep *keep) {
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    /* Own process group: the terminal's Ctrl-C reaches only the launcher,
     * which stops the children in order; a wrapper and its tracee share the
     * group, so signalling the group reaches both. */
    setpgid(0, 0);
    /* Children never outlive the launcher, even if it is SIGKILLed (see
     * start_child for which signal). */
    prctl(PR_SET_PDEATHSIG, death_sig);
    if (getppid() != launcher)
      _exit(1);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    signal(SIGUSR1, SIG_DFL);
    sigprocmask(SIG_SETMASK, orig_mask, NULL);
    /* stdin: nothing; stdout is the launcher's one-line contract, so the
     * children's stdout goes to stderr. */
    int fd = open("/dev/null", O_RDONLY);
    if (fd >= 0 && fd != 0) {
      dup2(fd, 0);
      close(fd);
    }
    dup2(2, 1);
    if (keep)
      pa_launch_keep_child(keep->k, keep->keep, keep->kept);
    execvp(c->argv[0], c->argv);
    pa_error("cannot run %s: %s", c->argv[0], strerror(errno));
    _exit(errno == ENOENT ? PA_EXIT_CONFIG : 127);
  }
  setpgid(pid, pid); /* also here: no race with the first kill(-pid) */
  return pid;
}

typedef struct sup {
  const pa_launch_cfg *cfg;
  const char *bin_dir;
  unsigned bound_port; /* pa-netgw's port once it was first ready */
  unsigned bound_http; /* and its web port (0 = none) */
  pa_stack stack;
  child ch[PA_PROC_COUNT];
  pid_t self;
  sigset_t orig_mask;
  pa_launch_keep keep; /* pa-netgw's listeners across its restarts */
  bool all_ready;  /* the ready line was printed */
  int fatal;       /* exit code once a fatal condition was seen, else -1 */
} sup;

/* With --tcp_port 0 the first pa-netgw picked a port; a restarted one must
 * listen on the same port so that clients can reconnect to it. */
static void start_child(sup *s, child *c, int64_t now) {
  pa_health *h = &s->stack.ctl->health[c->proc];
  /* The process writes its own pid and ready; a dead one's stale values
   * must not look like the new one being ready. */
  h->ready = 0;
  h->pid = 0;
  if (c->restarting)
    h->restarts = ++c->restarts;
  h->hang_ms =
      c->wrapped ? PA_LAUNCH_HANG_WRAPPED : (uint32_t)(c->hang_ns / 1000000);
  c->hung_ns = 0;
  /* A restarted pa-netgw gets its predecessor's listeners from us (keep.c)
   * or binds the same ports again by itself: its core keeps them in the
   * control block (netgw/core/listen.c). */
  char keep_env[16], kept_env[PA_PORTS_MAX * (PA_PORT_NAME_MAX + 16)];
  spawn_keep sk = {&s->keep, keep_env, kept_env};
  if (c->proc == PA_PROC_NETGW) {
    pa_launch_keep_drain(&s->keep);
    if (pa_launch_keep_env(&s->keep, keep_env, sizeof keep_env, kept_env,
                           sizeof kept_env) != 0) {
      /* not handed over, so not held either: pa-netgw binds them again */
      pa_launch_keep_release(&s->keep);
      kept_env[0] = 0;
    }
    if (c->restarting && pa_launch_keep_count(&s->keep))
      pa_info("pa-netgw: %u listeners held across the restart",
              pa_launch_keep_count(&s->keep));
  }
  /* SIGKILL: a stopped or hung child must die with the launcher too, and a
   * pa-* process loses nothing by it (its state is in shm). A wrapper gets
   * SIGTERM so that it can write its output and pass the signal on. */
  int death_sig = s->cfg->wrap[c->proc] ? SIGTERM : SIGKILL;
  pid_t pid = spawn(c, s->self, &s->orig_mask, death_sig,
                    c->proc == PA_PROC_NETGW ? &sk : NULL);
  if (pid < 0) {
    pa_error("%s: fork failed: %s; retrying", name_of(c), strerror(errno));
    c->state = CH_BACKOFF;
    c->next_start_ns = now + 100000000;
    return;
  }
  c->pid = pid;
  c->spawn_ns = now;
  c->deadline_ns = now + c->timeout_ns;
  c->state = CH_STARTING;
  pa_debug("%s: started pid %d", name_of(c), (int)pid);
}

/* Kills whatever is left of a child's process group (e.g. the process a
 * wrapper like strace was tracing). */
static void sweep_group(pid_t pgid) {
  if (pgid > 0 && kill(-pgid, 0) == 0)
    kill(-pgid, SIGKILL);
}

static void give_up(sup *s, child *c, int code, const char *why) {
  c->state = CH_DOWN;
  c->down_ns = pa_now_ns();
  if (c->proc == PA_PROC_RENDER) {
    pa_error("GIVING UP on %s: %s; the stack keeps running WITHOUT camera "
             "frames (fix it, then: playarea restart render --instance %s)",
             name_of(c), why, s->cfg->instance);
    return;
  }
  pa_error("GIVING UP on %s: %s; stopping the stack", name_of(c), why);
  s->fatal = code;
}

/* [ns] TERM -> KILL: a wrapper (a profiler writing its output, valgrind)
 * needs longer to exit than the process alone. */
static int64_t grace_ns(const sup *s, const child *c) {
  return (int64_t)s->cfg->grace_ms * 1000000 * (c->wrapped ? 10 : 1);
}

static void on_exit_status(sup *s, child *c, int st, int64_t now) {
  pa_health *h = &s->stack.ctl->health[c->proc];
  char why[256];
  describe_status(st, why, sizeof why);
  pid_t dead = c->pid;
  /* Under a wrapper the status is the wrapper's (gdb -batch exits 0 after
   * its inferior's SIGSEGV). The pa-* process clears its health pid on a
   * clean exit; a pid left there means it died inside the wrapper. */
  int32_t inner = __atomic_load_n(&h->pid, __ATOMIC_ACQUIRE);
  bool inner_died = c->wrapped && inner > 0 && c->state != CH_RESTART;
  if (inner_died) {
    char wst[96];
    describe_status(st, wst, sizeof wst);
    if (inner != dead)
      snprintf(why, sizeof why,
               "a crash inside its wrapper: %s (pid %d) never reached its "
               "clean exit; the wrapper (pid %d) ended with %s",
               name_of(c), (int)inner, (int)dead, wst);
    else
      snprintf(why, sizeof why,
               "a crash inside its wrapper (%s, without its clean exit)", wst);
  }
  bool hung = c->hung_ns && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
  if (hung)
    snprintf(why, sizeof why, "hung (no heartbeat for %.0f ms, SIGKILLed)",
             (double)c->hung_ns / 1e6);
  c->hung_ns = 0;
  h->last_exit = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
  h->pid = 0;
  h->ready = 0;
  sweep_group(c->pid);
  c->pid = 0;
  c->restarting = true;
  if (c->state == CH_RESTART) {
    pa_info("%s stopped (%s) for the requested restart", name_of(c), why);
    c->state = CH_BACKOFF;
    c->next_start_ns = now;
    return;
  }
  bool was_starting = c->state == CH_STARTING;
  if (WIFEXITED(st) && WEXITSTATUS(st) == PA_EXIT_CONFIG) {
    pa_error("%s: configuration error (exit code %d), not restarting",
             name_of(c), PA_EXIT_CONFIG);
    give_up(s, c, PA_EXIT_CONFIG, "configuration error");
    if (!s->all_ready)
      s->fatal = PA_EXIT_CONFIG; /* bad flags: nothing should run */
    return;
  }
  /* --exit_after_screenshot: pa-render's clean exit after saving the PNG
   * is the end of the run, not something to restart. */
  if (c->proc == PA_PROC_RENDER && s->cfg->render.exit_after_screenshot &&
      WIFEXITED(st) && WEXITSTATUS(st) == 0 && !inner_died) {
    pa_info("pa-render exited after saving --screenshot %s "
            "(--exit_after_screenshot): stopping the stack",
            s->cfg->render.screenshot ? s->cfg->render.screenshot : "");
    c->state = CH_OFF;
    s->fatal = 0;
    return;
  }
  if (!inner_died && ((WIFEXITED(st) && WEXITSTATUS(st) == 0) ||
                      (WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM))) {
    /* Someone stopped it on purpose (kill PID, a tool): not a crash. */
    pa_warn("%s stopped (%s) without the launcher asking; restarting it",
            name_of(c), why);
    c->state = CH_BACKOFF;
    c->next_start_ns = now;
    return;
  }
  /* A crash: count those within the window (the newest crash_limit, or
   * PA_LAUNCH_CRASH_MAX when the guard is off, are enough). */
  long limit = s->cfg->crash_limit;
  int ring = limit > 0 ? (int)limit : PA_LAUNCH_CRASH_MAX;
  int64_t window = (int64_t)s->cfg->crash_window_ms * 1000000;
  c->crash_ns[c->ncrash % ring] = now;
  c->ncrash++;
  int recent = 0;
  for (int i = 0; i < ring && i < c->ncrash; i++)
    if (now - c->crash_ns[i] <= window)
      recent++;
  if (limit > 0 && recent >= limit) {
    char msg[400];
    snprintf(msg, sizeof msg, "%d crashes within %g s (last: %s)", recent,
             (double)s->cfg->crash_window_ms / 1000, why);
    give_up(s, c, 1, msg);
    return;
  }
  long delay = pa_launch_backoff_ms(recent);
  char guard[96] = "";
  if (limit > 0)
    snprintf(guard, sizeof guard, "; giving up at %ld within %g s", limit,
             (double)s->cfg->crash_window_ms / 1000);
  pa_warn("%s (pid %d) %s %s; restarting in %ld ms (crash %d%s)", name_of(c),
          (int)dead,
          hung           ? "was"
          : was_starting ? "failed to start with"
                         : "died with",
          why, delay, recent, guard);
  c->state = CH_BACKOFF;
  c->next_start_ns = now + delay * 1000000;
}

static void reap(sup *s) {
  int st;
  pid_t pid;
  while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
    int64_t now = pa_now_ns();
    child *c = NULL;
    for (int p = PA_PROC_SIM; p < PA_PROC_COUNT; p++)
      if (s->ch[p].pid == pid)
        c = &s->ch[p];
    if (c)
      on_exit_status(s, c, st, now);
    /* else: an orphaned grandchild re-parented to us (subreaper) */
  }
}

/* Stops one child: TERM to its group, KILL after grace_ms. */
static void stop_child(sup *s, child *c) {
  if (c->pid <= 0)
    return;
  pid_t pid = c->pid;
  kill(-pid, SIGTERM);
  kill(pid, SIGTERM);
  kill(-pid, SIGCONT); /* a stopped child cannot act on TERM */
  int64_t end = pa_now_ns() + grace_ns(s, c);
  int st = 0;
  for (;;) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR))
      break;
    if (pa_now_ns() >= end) {
      pa_warn("%s (pid %d) did not stop within %ld ms; SIGKILL", name_of(c),
              (int)pid, (long)(grace_ns(s, c) / 1000000));
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
      break;
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  sweep_group(pid);
  s->stack.ctl->health[c->proc].pid = 0;
  s->stack.ctl->health[c->proc].ready = 0;
  c->pid = 0;
  c->state = CH_OFF;
  pa_info("%s stopped", name_of(c));
}

static void stop_all(sup *s) {
  const int order[] = {PA_PROC_NETGW, PA_PROC_RENDER, PA_PROC_SIM};
  for (size_t i = 0; i < 3; i++)
    stop_child(s, &s->ch[order[i]]);
  /* Reap whatever else was re-parented to us. */
  while (waitpid(-1, NULL, WNOHANG) > 0)
    ;
}

static void handle_restart_requests(sup *s, int64_t now) {
  int mask = restart_mask;
  if (!mask)
    return;
  restart_mask = 0;
  for (int p = PA_PROC_SIM; p < PA_PROC_COUNT; p++) {
    if (!(mask & (1 << p)))
      continue;
    child *c = &s->ch[p];
    switch (c->state) {
    case CH_STARTING:
    case CH_RUNNING:
      pa_info("restart of %s (pid %d) requested", name_of(c), (int)c->pid);
      kill(-c->pid, SIGTERM);
      kill(c->pid, SIGTERM);
      kill(-c->pid, SIGCONT);
      c->state = CH_RESTART;
      c->deadline_ns = now + grace_ns(s, c);
      break;
    case CH_DOWN:
    case CH_BACKOFF:
      pa_info("restart of %s requested: starting it now", name_of(c));
      c->ncrash = 0;
      c->restarting = true;
      c->state = CH_BACKOFF;
      c->next_start_ns = now;
      break;
    case CH_OFF:
      pa_warn("restart of %s requested, but it is not part of this stack",
              name_of(c));
      break;
    case CH_RESTART:
      break;
    }
  }
}

/* The hang watchdog: a ready process whose heartbeat is older than hang_ns
 * (a SIGSTOPped one, a loop that never returns) is SIGKILLed; its exit then
 * takes the crash path with the cause "hung". Returns when to look again. */
static int64_t watch_heartbeat(child *c, const pa_health *h, int64_t now) {
  int64_t beat = __atomic_load_n(&h->heartbeat_ns, __ATOMIC_ACQUIRE);
  if (beat < c->ready_ns)
    beat = c->ready_ns; /* an old process's beat, or none yet */
  int64_t age = now - beat;
  if (age <= c->hang_ns)
    return beat + c->hang_ns + 1000000;
  pa_warn("%s (pid %d) is hung: no heartbeat for %.0f ms (--hang_ms %.0f); "
          "killing it",
          name_of(c), (int)c->pid, (double)age / 1e6, (double)c->hang_ns / 1e6);
  c->hung_ns = age;
  kill(-c->pid, SIGKILL);
  kill(c->pid, SIGKILL);
  return now + 100000000;
}

/* Advances every child's state machine; returns the next deadline. */
static int64_t step_children(sup *s, int64_t now) {
  int64_t next = now + 100000000; /* heartbeat at least every 100 ms */
  for (int p = PA_PROC_SIM; p < PA_PROC_COUNT; p++) {
    child *c = &s->ch[p];
    pa_health *h = &s->stack.ctl->health[p];
    switch (c->state) {
    case CH_BACKOFF:
      if (now >= c->next_start_ns) {
        start_child(s, c, now);
        next = now + 1000000; /* the new process may be ready soon */
      } else if (c->next_start_ns < next)
        next = c->next_start_ns;
      break;
    case CH_STARTING:
      if (__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE) && h->pid != 0) {
        c->state = CH_RUNNING;
        c->ready_ns = now;
        double ms = (double)(now - c->spawn_ns) / 1e6;
        if (c->restarting)
          pa_info("%s serving again: pid %d, ready %.1f ms after start "
                  "(restart %u)",
                  name_of(c), (int)h->pid, ms, c->restarts);
        else
          pa_info("%s ready: pid %d, %.1f ms", name_of(c), (int)h->pid, ms);
        break;
      }
      if (now >= c->deadline_ns) {
        if (!s->all_ready) {
          pa_error("%s did not become ready within %.1f s; stopping",
                   name_of(c), (double)c->timeout_ns / 1e9);
          s->fatal = 1;
        } else {
          pa_error("%s (pid %d) did not become ready within %.1f s; killing it",
                   name_of(c), (int)c->pid, (double)c->timeout_ns / 1e9);
          kill(-c->pid, SIGKILL);
          kill(c->pid, SIGKILL);
          c->deadline_ns = now + 1000000000;
        }
      }
      next = now + 2000000; /* poll readiness every 2 ms */
      break;
    case CH_RESTART:
      if (now >= c->deadline_ns) {
        kill(-c->pid, SIGKILL);
        kill(c->pid, SIGKILL);
        c->deadline_ns = now + 1000000000;
      }
      if (c->deadline_ns < next)
        next = c->deadline_ns;
      break;
    case CH_RUNNING:
      if (c->hang_ns > 0 && !c->hung_ns) {
        int64_t due = watch_heartbeat(c, h, now);
        if (due < next)
          next = due;
      }
      break;
    case CH_OFF:
    case CH_DOWN:
      break;
    }
  }
  return next;
}

/* Starts processes in dependency order: each waits for the previous one to
 * be ready (or, for render, given up on). */
static void advance_startup(sup *s, int64_t now) {
  if (s->all_ready)
    return;
  const int order[] = {PA_PROC_SIM, PA_PROC_RENDER, PA_PROC_NETGW};
  for (size_t i = 0; i < 3; i++) {
    child *c = &s->ch[order[i]];
    if (c->proc == PA_PROC_RENDER && s->cfg->no_render)
      continue;
    if (c->state == CH_OFF) {
      start_child(s, c, now);
      return;
    }
    if (c->state == CH_RUNNING || (c->state == CH_DOWN && c->proc == PA_PROC_RENDER))
      continue;
    return; /* still starting */
  }
  s->all_ready = true;
  pa_ctl *ctl = s->stack.ctl;
  unsigned port = __atomic_load_n(&ctl->tcp_port, __ATOMIC_ACQUIRE);
  s->bound_port = port;
  s->bound_http = __atomic_load_n(&ctl->http_port, __ATOMIC_ACQUIRE);
  unsigned fox = __atomic_load_n(&ctl->foxglove_port, __ATOMIC_ACQUIRE);
  printf("tcp %s:%u instance %s\n", s->cfg->bind, port, s->cfg->instance);
  /* The other listeners on lines of their own: the first line's form is
   * what every client parses. */
  if (s->bound_http)
    printf("http %s:%u\n", s->cfg->bind, s->bound_http);
  if (fox)
    printf("foxglove %s:%u\n", s->cfg->bind, fox);
  pa_port_rec ports[PA_PORTS_MAX];
  size_t np = pa_stack_ports_read(&s->stack, ports);
  for (size_t i = 0; i < np; i++) /* Player clients' port (docs/player.md) */
    if (!strcmp(ports[i].name, "player") && ports[i].up)
      printf("player %s:%u\n", s->cfg->bind, ports[i].port);
  fflush(stdout);
  ctl->health[PA_PROC_LAUNCH].ready = 1;
  pa_info("stack ready in %.1f ms: tcp %s:%u, http %u, foxglove %u, "
          "instance %s",
          (double)(now - ctl->health[PA_PROC_LAUNCH].start_ns) / 1e6,
          s->cfg->bind, port, s->bound_http, fox, s->cfg->instance);
}

static int create_stack(sup *s) {
  const pa_launch_cfg *cfg = s->cfg;
  char err[256] = "";
  int pr = pa_stack_probe(cfg->instance);
  if (pr == PA_STACK_LIVE) {
    pa_stack probe;
    int owner = 0;
    if (pa_stack_attach(&probe, cfg->instance, err, sizeof err) == 0) {
      owner = probe.ctl_seg.base
                  ? ((const pa_shm_header *)probe.ctl_seg.base)->owner_pid
                  : 0;
      pa_stack_detach(&probe);
    }
    pa_error("instance %s is already running (launcher pid %d); use "
             "--instance or --tcp_port to start another stack",
             cfg->instance, owner);
    return 1;
  }
  if (pr == PA_STACK_STALE) {
    /* Cleaning, not resuming: resuming would mean adopting processes we did
     * not start (see docs/operations.md). */
    int owner = 0;
    char name[PA_SHM_NAME_MAX];
    pa_shm_seg seg;
    if (pa_shm_name(name, sizeof name, cfg->instance, "ctl", err, sizeof err) == 0 &&
        pa_shm_attach(&seg, name, PA_SEG_CTL, NULL, err, sizeof err) == 0) {
      owner = ((const pa_shm_header *)seg.base)->owner_pid;
      pa_shm_detach(&seg);
    }
    pa_stack_unlink(cfg->instance);
    pa_warn("removed stale instance %s left by dead launcher pid %d",
            cfg->instance, owner);
  }
  pa_stack_def d = pa_launch_stack_def(cfg);
  if (pa_stack_create(&s->stack, &d, err, sizeof err) < 0) {
    pa_error("cannot create instance %s: %s", cfg->instance, err);
    return 1;
  }
  if (err[0])
    pa_warn("%s", err);
  pa_ctl *ctl = s->stack.ctl;
  ctl->control_hz = cfg->control_hz;
  ctl->scan_hz = cfg->scan_hz;
  ctl->feedback_hz = cfg->tcp_feedback_hz;
  ctl->camera_hz = cfg->camera_hz;
  ctl->tcp_port_requested = (uint32_t)cfg->tcp_port;
  pa_health *h = &ctl->health[PA_PROC_LAUNCH];
  h->pid = (int32_t)getpid();
  h->start_ns = pa_now_ns();
  h->heartbeat_ns = h->start_ns;
  return 0;
}

int pa_launch_run(const pa_launch_cfg *cfg, const char *bin_dir) {
  sup s;
  memset(&s, 0, sizeof s);
  s.cfg = cfg;
  s.bin_dir = bin_dir;
  s.fatal = -1;
  s.self = getpid();
  int rc = 1;

  /* Signals become flags, delivered only inside ppoll(). */
  stop_sig = 0;
  got_chld = 0;
  restart_mask = 0;
  pa_signals_install(&stop_sig);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = on_hup;
  sigaction(SIGHUP, &sa, NULL);
  sa.sa_handler = on_chld;
  sa.sa_flags = SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, NULL);
  sa.sa_flags = SA_SIGINFO;
  sa.sa_sigaction = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGHUP);
  sigaddset(&block, SIGCHLD);
  sigaddset(&block, SIGUSR1);
  sigprocmask(SIG_BLOCK, &block, &s.orig_mask);
  /* Orphans of a wrapper (e.g. strace's tracee) come to us to be reaped. */
  prctl(PR_SET_CHILD_SUBREAPER, 1);

  for (int p = PA_PROC_SIM; p < PA_PROC_COUNT; p++) {
    child *c = &s.ch[p];
    c->proc = p;
    c->state = CH_OFF;
    c->wrapped = cfg->wrap[p] != NULL;
    c->timeout_ns = (int64_t)cfg->start_timeout_ms * 1000000 *
                    (cfg->wrap[p] ? 10 : 1);
    /* A wrapped process may legitimately stand still (a debugger's
     * breakpoint, valgrind's pace): not watched. */
    c->hang_ns = cfg->wrap[p] ? 0 : (int64_t)cfg->hang_ms * 1000000;
    if (p == PA_PROC_RENDER && cfg->no_render)
      continue;
    char err[256];
    c->argv = pa_launch_child_argv(cfg, p, bin_dir, err, sizeof err);
    if (!c->argv) {
      pa_error("%s: %s", pa_launch_proc_exe(p), err);
      rc = PA_EXIT_CONFIG;
      goto out_free;
    }
    if (!cfg->wrap[p] && access(c->argv[0], X_OK) != 0) {
      pa_error("cannot run %s: %s (set PA_BIN_DIR to the directory of the "
               "pa-* programs)", c->argv[0], strerror(errno));
      rc = PA_EXIT_CONFIG;
      goto out_free;
    }
  }
  if (create_stack(&s) != 0)
    goto out_free;
  pa_launch_keep_open(&s.keep);
  pa_info("instance %s: starting %s; hang watchdog %s", cfg->instance,
          cfg->no_render ? "pa-sim, pa-netgw" : "pa-sim, pa-render, pa-netgw",
          cfg->hang_ms ? "on" : "off (--hang_ms 0)");

  for (;;) {
    int64_t now = pa_now_ns();
    s.stack.ctl->health[PA_PROC_LAUNCH].heartbeat_ns = now;
    s.stack.ctl->health[PA_PROC_LAUNCH].loops++;
    if (stop_sig) {
      pa_info("%s: stopping", strsignal(stop_sig));
      rc = 0;
      break;
    }
    got_chld = 0;
    pa_launch_keep_drain(&s.keep);
    reap(&s);
    if (s.fatal >= 0) {
      rc = s.fatal;
      break;
    }
    handle_restart_requests(&s, now);
    int64_t next = step_children(&s, now);
    if (s.fatal >= 0) {
      rc = s.fatal;
      break;
    }
    advance_startup(&s, now);
    if (!s.all_ready)
      next = now + 1000000; /* starting: check readiness often */
    int64_t wait = next - pa_now_ns();
    if (wait < 0)
      wait = 0;
    struct timespec ts = {(time_t)(wait / 1000000000), (long)(wait % 1000000000)};
    /* pa-netgw's port messages wake us too: held at once */
    struct pollfd pfd = {.fd = s.keep.sock, .events = POLLIN};
    if (!got_chld && !stop_sig && !restart_mask)
      ppoll(&pfd, s.keep.sock >= 0, &ts, &s.orig_mask);
  }
  stop_all(&s);
  pa_launch_keep_close(&s.keep);
  pa_stack_detach(&s.stack);
  pa_stack_unlink(cfg->instance);
  pa_info("instance %s removed; exit %d", cfg->instance, rc);
out_free:
  for (int p = 0; p < PA_PROC_COUNT; p++)
    pa_launch_argv_free(s.ch[p].argv);
  sigprocmask(SIG_SETMASK, &s.orig_mask, NULL);
  return rc;
}
