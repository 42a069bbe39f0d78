/* bench_sim.c - pa-sim figures: exact beams/s per core (fast caster checked
 * against the plain traversal), free-running real-time factor for 1, 100
 * and 1000 robots (in-process: pa_sim_step, no shared memory), fixed-rate
 * lockstep STEP round trips through the real queues, loop timing (the real
 * pa_sim_run loop on a private instance), RSS.
 *
 *   bench-sim [seconds_per_loop_test] [--beams] [--rtf] [--rtf1] [--phases]
 *             [--loops] [--realtime] [--simd PATH] [--help]  (see usage)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pa_map.h"
#include "pa_proc.h"
#include "pa_shm.h"
#include "pa_sim.h"
#include "pa_util.h"
#include "sim_office.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of this thread [s]: beam rates on a shared machine (time the
 * thread waits for a core does not count). */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what, const char *err) {
  fprintf(stderr, "bench-sim: %s: %s\n", what, err);
  exit(1);
}

/* Robots without a pose start packed around (0, 0); a crowd benchmark wants
 * them spread over the whole map as before, so every robot but the first is
 * teleported to a seeded random free pose (the same poses every run). */
static void scatter(const pa_sim_model *m, pa_sim_state *s, const pa_grid *g) {
  uint64_t rng = 11;
  for (uint32_t i = 1; i < s->robot_count; i++) {
    for (int tries = 0; tries < 100000; tries++) {
      int cx = (int)(pa_sim_rng_uniform(&rng) * g->width);
      int cy = (int)(pa_sim_rng_uniform(&rng) * g->height);
      double x, y;
      pa_grid_cell_center(g, cx, cy, &x, &y);
      if (pa_sim_clearance(m, s, i, x, y, s->info[i].radius, 0.05, NULL, NULL) <
          0.05)
        continue;
      pa_cmd c;
      pa_reply r;
      memset(&c, 0, sizeof c);
      c.op = PA_OP_TELEPORT;
      c.robot = i;
      c.pose.x = x;
      c.pose.y = y;
      c.pose.theta = (pa_sim_rng_uniform(&rng) * 2 - 1) * M_PI;
      if (pa_sim_apply(m, s, &c, &r) == PA_OK)
        break;
    }
  }
}

static void make_t(pa_sim_model *m, pa_sim_state *s, const pa_grid *g,
                   uint32_t robots, uint32_t max_robots, uint32_t threads) {
  pa_world w;
  memset(&w, 0, sizeof w);
  w.unknown_blocks = true;
  /* first robot on a free cell via --robots placement */
  pa_sim_def d = pa_sim_def_default();
  d.robots = robots;
  d.max_robots = max_robots;
  d.seed = 1;
  d.threads = threads;
  char err[256];
  if (pa_sim_model_init(m, &d, &w, g, err, sizeof err) != 0)
    die("model", err);
  if (pa_sim_state_init(m, s, err, sizeof err) != 0)
    die("state", err);
  scatter(m, s, g);
}

static void make(pa_sim_model *m, pa_sim_state *s, const pa_grid *g,
                 uint32_t robots, uint32_t max_robots) {
  make_t(m, s, g, robots, max_robots, 1);
}

/* bench_beams' caster modes: path p with the face caster (mode p), path p
 * with the march caster alone (mode p + PA_SIM_SIMD_COUNT). */
static void cast_mode(int mode) {
  pa_sim_simd_set((pa_sim_simd)(mode % PA_SIM_SIMD_COUNT));
  pa_sim_faces_set(mode < PA_SIM_SIMD_COUNT);
}

static void bench_beams(const char *name, const pa_grid *g) {
  pa_sim_model m;
  pa_sim_state s;
  make(&m, &s, g, 1, 4);
  /* random free poses */
  enum { POSES = 4000, BEAMS = 360 };
  double *px = malloc(POSES * sizeof(double)), *py = malloc(POSES * sizeof(double)),
         *pt = malloc(POSES * sizeof(double));
  uint64_t rng = 5;
  int n = 0;
  while (n < POSES) {
    uint32_t cx = (uint32_t)(pa_sim_rng_uniform(&rng) * g->width);
    uint32_t cy = (uint32_t)(pa_sim_rng_uniform(&rng) * g->height);
    if (g->cells[(size_t)cy * g->width + cx] != 0)
      continue;
    pa_grid_cell_center(g, (int)cx, (int)cy, &px[n], &py[n]);
    pt[n] = 2 * M_PI * pa_sim_rng_uniform(&rng);
    n++;
  }
  double dc[BEAMS], ds[BEAMS];
  for (int i = 0; i < BEAMS; i++) {
    dc[i] = cos(-M_PI + i * 2 * M_PI / BEAMS);
    ds[i] = sin(-M_PI + i * 2 * M_PI / BEAMS);
  }
  /* The casters: every vector path this CPU has, the scalar fast caster
   * (fans of single rays) and the plain traversal, timed in the same run,
   * interleaved, in CPU time of this thread (a busy box slows all alike),
   * best of 7. */
  /* modes: each path with the face caster for fans, each without (the
   * march caster alone; mode path + MARCH), the plain traversal */
  enum { MARCH = PA_SIM_SIMD_COUNT, MODES = 2 * PA_SIM_SIMD_COUNT + 1 };
  const int PLAIN = 2 * PA_SIM_SIMD_COUNT; /* mode of the plain traversal */
  const bool faces_were = pa_sim_faces_on();
  const pa_sim_simd was = pa_sim_simd_path(NULL);
  bool on[MODES] = {false};
  for (int p = PA_SIM_SIMD_AVX512; p <= PA_SIM_SIMD_SCALAR; p++) {
    on[p] = pa_sim_simd_has((pa_sim_simd)p);
    on[p + MARCH] = on[p] && p != PA_SIM_SIMD_SCALAR; /* scalar: no faces */
  }
  on[PLAIN] = true;
  /* exactness on a subset: each path's fans (the scan's path) and single
   * rays against the plain traversal */
  long mismatches = 0, checked = 0;
  double fdx[BEAMS], fdy[BEAMS], fr[BEAMS];
  for (int mode = PA_SIM_SIMD_AVX512; mode < PLAIN; mode++) {
    if (!on[mode])
      continue;
    cast_mode(mode);
    for (int p = 0; p < 300; p++) {
      double c = cos(pt[p]), sn = sin(pt[p]);
      for (int i = 0; i < BEAMS; i++) {
        fdx[i] = c * dc[i] - sn * ds[i];
        fdy[i] = sn * dc[i] + c * ds[i];
      }
      pa_sim_cast_fan(&m, px[p], py[p], fdx, fdy, BEAMS, 10.0, fr);
      for (int i = 0; i < BEAMS; i++) {
        double q = pa_sim_cast_plain(&m, px[p], py[p], fdx[i], fdy[i], 10.0);
        double f = pa_sim_cast_fast(&m, px[p], py[p], fdx[i], fdy[i], 10.0);
        mismatches += (fr[i] != q) + (f != q);
        checked += 2;
      }
    }
  }
  double best[MODES] = {0};
  volatile double sink = 0;
  for (int rep = 0; rep < 7; rep++) {
    for (int mode = PA_SIM_SIMD_AVX512; mode < MODES; mode++) {
      if (!on[mode])
        continue;
      if (mode != PLAIN)
        cast_mode(mode);
      double t0 = cpu_s();
      long beams = 0;
      for (int p = 0; p < POSES; p++) {
        double c = cos(pt[p]), sn = sin(pt[p]);
        for (int i = 0; i < BEAMS; i++) {
          fdx[i] = c * dc[i] - sn * ds[i];
          fdy[i] = sn * dc[i] + c * ds[i];
        }
        if (mode != PLAIN) {
          pa_sim_cast_fan(&m, px[p], py[p], fdx, fdy, BEAMS, 10.0, fr);
          sink += fr[p % BEAMS];
        } else {
          for (int i = 0; i < BEAMS; i++)
            sink += pa_sim_cast_plain(&m, px[p], py[p], fdx[i], fdy[i], 10.0);
        }
        beams += BEAMS;
      }
      double rate = beams / (cpu_s() - t0);
      if (rate > best[mode])
        best[mode] = rate;
    }
  }
  pa_sim_simd_set(was);
  pa_sim_faces_set(faces_were);
  /* the full scan path (pa_sim_scan: table directions, shapes, clamping) */
  float out[BEAMS];
  s.info[0].laser_range_max = 10.0f;
  double scan_rate = 0; /* in CPU time, best of 3, as the casters */
  for (int rep = 0; rep < 3; rep++) {
    double t0 = cpu_s();
    for (int p = 0; p < POSES; p++) {
      s.rs[0].x = px[p];
      s.rs[0].y = py[p];
      s.rs[0].theta = pt[p];
      pa_sim_scan(&m, &s, 0, out);
    }
    double rate = (double)POSES * BEAMS / (cpu_s() - t0);
    scan_rate = rate > scan_rate ? rate : scan_rate;
  }
  printf("beams %s, %ux%u cells (per CPU second): plain traversal %.2f M "
         "beams/s\n",
         name, g->width, g->height, best[PLAIN] / 1e6);
  for (int mode = PA_SIM_SIMD_AVX512; mode <= PA_SIM_SIMD_SCALAR; mode++) {
    if (on[mode] && on[mode + MARCH])
      printf("beams   %-8s fan %6.2f M beams/s  %5.2fx plain (march "
             "caster alone %6.2f M beams/s  %5.2fx plain; faces/march "
             "%4.2fx)\n",
             pa_sim_simd_name((pa_sim_simd)mode), best[mode] / 1e6,
             best[mode] / best[PLAIN], best[mode + MARCH] / 1e6,
             best[mode + MARCH] / best[PLAIN], best[mode] / best[mode + MARCH]);
    else if (on[mode])
      printf("beams   %-8s fan %6.2f M beams/s  %5.2fx plain\n",
             pa_sim_simd_name((pa_sim_simd)mode), best[mode] / 1e6,
             best[mode] / best[PLAIN]);
    else
      printf("beams   %-8s skipped: this CPU lacks it\n",
             pa_sim_simd_name((pa_sim_simd)mode));
  }
  printf("beams   pa_sim_scan (path %s, face caster %s) %.2f M beams/s  "
         "%5.2fx plain; fast == plain on %ld/%ld casts\n",
         pa_sim_simd_name(pa_sim_simd_path(NULL)),
         pa_sim_faces_on() ? "on" : "off", scan_rate / 1e6,
         scan_rate / best[PLAIN], checked - mismatches, checked);
  free(px);
  free(py);
  free(pt);
  pa_sim_state_free(&s);
  pa_sim_model_free(&m);
}

/* Holds a random drive command (the same sequence for the same rng) on
 * robot i. */
static void set_drive(const pa_sim_model *m, pa_sim_state *s, uint32_t i,
                      uint64_t *rng) {
  pa_cmd c;
  memset(&c, 0, sizeof c);
  c.op = PA_OP_SET_CMD;
  c.robot = i;
  c.drive.v = 0.3 + 0.5 * pa_sim_rng_uniform(rng);
  c.drive.w = 2 * pa_sim_rng_uniform(rng) - 1;
  pa_reply r;
  pa_sim_apply(m, s, &c, &r);
}

/* Free-running real-time factor with `threads` scan threads (0 = auto);
 * overlap: the scans overlap the next ticks (s->defer_scans, as the
 * free-running loop and a STEP do). */
static double bench_rtf(const pa_grid *g, uint32_t robots, double seconds,
                        uint32_t threads, bool overlap) {
  pa_sim_model m;
  pa_sim_state s;
  long rss0 = pa_proc_rss_kb(0);
  make_t(&m, &s, g, robots, robots, threads);
  uint64_t rng = 3;
  for (uint32_t i = 0; i < s.robot_count; i++)
    set_drive(&m, &s, i, &rng);
  s.defer_scans = overlap;
  double t0 = now_s(), t;
  uint64_t ticks = 0;
  double phys = 0, sens = 0;
  do {
    pa_sim_step(&m, &s);
    ticks++;
    phys += s.phase_ns[PA_SIM_PH_PHYSICS];
    sens += s.phase_ns[PA_SIM_PH_SENSORS];
    t = now_s() - t0;
  } while (t < seconds);
  pa_sim_scans_settle(&m, &s, true);
  double rtf = ticks * m.dt / t;
  printf("rtf   %4u robots, %u thread%s%s (200 Hz control, 10 Hz 360-beam "
         "scans): %.1fx real time (%llu ticks in %.2f s; per tick physics "
         "%.1f us, sensors %.1f us; %llu bumps; %.0f%% of moves in parallel); "
         "RSS %ld kB, of which this model+state %ld kB\n",
         robots, s.threads, s.threads == 1 ? "" : "s",
         overlap ? ", scans overlapped" : "", rtf, (unsigned long long)ticks, t,
         phys / ticks / 1e3, sens / ticks / 1e3, (unsigned long long)s.bumps,
         100.0 * (double)s.alone_moves / ((double)ticks * s.robot_count),
         pa_proc_rss_kb(0), pa_proc_rss_kb(0) - rss0);
  pa_sim_state_free(&s);
  pa_sim_model_free(&m);
  return rtf;
}

/* 1 and 2 scan threads (and the auto count if it differs) in one run. */
static void bench_rtf_threads(const pa_grid *g, uint32_t robots,
                              double seconds) {
  double r1 = bench_rtf(g, robots, seconds, 1, false);
  double r2 = bench_rtf(g, robots, seconds, 2, false);
  double r3 = bench_rtf(g, robots, seconds, 2, true);
  uint32_t au = pa_sim_threads_resolve(0, robots);
  printf("rtf   %4u robots: 2 threads / 1 thread = %.2fx, scans overlapped "
         "/ not = %.2fx (auto = %u thread%s)\n",
         robots, r2 / r1, r3 / r2, au, au == 1 ? "" : "s");
  if (au > 2)
    bench_rtf(g, robots, seconds, au, false);
}

static volatile sig_atomic_t stop_flag;
static bool loop_realtime; /* --realtime: as pa-sim --realtime */
static char current_instance[PA_SHM_INSTANCE_MAX]; /* removed if interrupted */

static void on_interrupt(int sig) {
  if (current_instance[0])
    pa_stack_unlink(current_instance);
  signal(sig, SIG_DFL);
  raise(sig);
}

static void on_alarm(int sig) {
  (void)sig;
  stop_flag = 1;
}

/* A private instance ("<tag>-<pid>", removed if interrupted) with a
 * one-robot world on g, its map and first tick published. */
static void bench_instance(char inst[PA_SHM_INSTANCE_MAX], const char *tag,
                           const pa_grid *g, pa_sim_def *sd, pa_stack *st,
                           pa_sim_model *m, pa_sim_state *s) {
  snprintf(inst, PA_SHM_INSTANCE_MAX, "%s-%d", tag, (int)getpid());
  snprintf(current_instance, sizeof current_instance, "%s", inst);
  pa_stack_def d = pa_stack_def_default();
  snprintf(d.instance, sizeof d.instance, "%s", inst);
  char err[256];
  if (pa_stack_create(st, &d, err, sizeof err) != 0)
    die("instance", err);
  sd->max_robots = d.max_robots;
  pa_world w;
  memset(&w, 0, sizeof w);
  w.unknown_blocks = true;
  if (pa_sim_model_init(m, sd, &w, g, err, sizeof err) != 0 ||
      pa_sim_state_init(m, s, err, sizeof err) != 0)
    die("model", err);
  pa_sim_shm_publish_map(m, st, err, sizeof err);
  pa_sim_shm_publish_state(m, s, st);
}

/* The physics benches' world: robots scattered on g driving, scans every
 * 100 s (none in a run), 200 ticks on (the robots meet their walls). */
static void physics_world(const pa_grid *g, uint32_t robots, uint32_t threads,
                          pa_sim_model *m, pa_sim_state *s) {
  pa_world w;
  memset(&w, 0, sizeof w);
  w.unknown_blocks = true;
  pa_sim_def d = pa_sim_def_default();
  d.robots = d.max_robots = robots;
  d.seed = 1;
  d.threads = threads;
  d.scan_hz = 0.01;
  char err[256];
  if (pa_sim_model_init(m, &d, &w, g, err, sizeof err) != 0 ||
      pa_sim_state_init(m, s, err, sizeof err) != 0)
    die("model", err);
  scatter(m, s, g);
  uint64_t rng = 3;
  for (uint32_t i = 0; i < s->robot_count; i++)
    set_drive(m, s, i, &rng);
  for (int i = 0; i < 200; i++)
    pa_sim_step(m, s);
}

/* The physics alone (issue 37's figure: time per robot per tick): the
 * 1000-robot office, scans every 100 s (none in the run), 1 then 2
 * threads (or PA_BENCH_THREADS): the physics phase per tick (wall) and the
 * process's CPU per tick (every thread's). */
static void bench_physics(const pa_grid *g, uint32_t robots, double seconds,
                          uint32_t threads) {
  pa_sim_model m;
  pa_sim_state s;
  physics_world(g, robots, threads, &m, &s);
  uint64_t bumps0 = s.bumps, ticks = 0;
  double phys = 0, t0 = now_s();
  struct timespec c0, c1;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
  do {
    pa_sim_step(&m, &s);
    phys += (double)s.phase_ns[PA_SIM_PH_PHYSICS];
    ticks++;
  } while (now_s() - t0 < seconds);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
  double cpu = (c1.tv_sec - c0.tv_sec) * 1e9 + (c1.tv_nsec - c0.tv_nsec);
  double per = (double)ticks * s.robot_count;
  printf("physics %u robots, %u thread%s: %.1f us a tick (%.1f ns per robot "
         "per tick), CPU %.1f us a tick (%.1f ns per robot-tick, every "
         "thread); %.0f%% of robot-ticks bumped (%llu ticks)\n",
         robots, s.threads, s.threads == 1 ? "" : "s", phys / ticks / 1e3,
         phys / per, cpu / ticks / 1e3, cpu / per,
         100.0 * (double)(s.bumps - bumps0) / per, (unsigned long long)ticks);
  pa_sim_state_free(&s);
  pa_sim_model_free(&m);
}

/* The physics of 1 and 2 threads side by side: two simulations of the
 * same world (their moves are the same whatever the threads), stepped in
 * alternate windows of 50 ticks, so that both meet the same robots at the
 * same ticks and the same moments of a busy host (on a shared VM the
 * latency of an L2-sized working set was seen to move 3x from one run to
 * the next, seconds apart). Prints the medians of the windows and of their
 * ratios. */
static void bench_physics_ab(const pa_grid *g, uint32_t robots,
                             double seconds) {
  enum { WINDOW = 50, MAXW = 4096 };
  pa_sim_model m[2];
  pa_sim_state s[2];
  for (int k = 0; k < 2; k++)
    physics_world(g, robots, (uint32_t)k + 1, &m[k], &s[k]);
  static double ns[2][MAXW], ratio[MAXW];
  int nw = 0;
  double t0 = now_s();
  while (nw < MAXW && (now_s() - t0 < seconds || nw < 5)) {
    for (int k = 0; k < 2; k++) {
      double phys = 0;
      for (int i = 0; i < WINDOW; i++) {
        pa_sim_step(&m[k], &s[k]);
        phys += (double)s[k].phase_ns[PA_SIM_PH_PHYSICS];
      }
      ns[k][nw] = phys / ((double)WINDOW * s[k].robot_count);
    }
    ratio[nw] = ns[1][nw] / ns[0][nw];
    nw++;
  }
  qsort(ns[0], (size_t)nw, sizeof(double), cmp_double);
  qsort(ns[1], (size_t)nw, sizeof(double), cmp_double);
  qsort(ratio, (size_t)nw, sizeof(double), cmp_double);
  printf("physics %u robots, 1 and 2 threads alternating (%d windows of %d "
         "ticks each): median %.1f and %.1f ns a robot-tick (wall); 2 "
         "threads / 1 thread: median %.2f (quartiles %.2f, %.2f)\n",
         robots, nw, WINDOW, ns[0][nw / 2], ns[1][nw / 2], ratio[nw / 2],
         ratio[nw / 4], ratio[3 * nw / 4]);
  for (int k = 0; k < 2; k++) {
    pa_sim_state_free(&s[k]);
    pa_sim_model_free(&m[k]);
  }
}

/* Where a many-robot tick goes: pa_sim_step's phases (physics includes the
 * broad phase) and publishing the tick and the due scans into a private
 * instance, as pa_sim_run does each tick; RSS of the whole process. */
static void bench_rtf_phases(const pa_grid *g, uint32_t robots, double seconds,
                             uint32_t threads) {
  char inst[PA_SHM_INSTANCE_MAX], err[256];
  snprintf(inst, sizeof inst, "bench-sim-ph-%d", (int)getpid());
  snprintf(current_instance, sizeof current_instance, "%s", inst);
  long rss0 = pa_proc_rss_kb(0);
  pa_stack_def d = pa_stack_def_default();
  snprintf(d.instance, sizeof d.instance, "%s", inst);
  d.max_robots = robots;
  pa_stack st;
  if (pa_stack_create(&st, &d, err, sizeof err) != 0)
    die("instance", err);
  long rss_shm = pa_proc_rss_kb(0);
  pa_sim_model m;
  pa_sim_state s;
  make_t(&m, &s, g, robots, robots, threads);
  uint64_t rng = 3;
  for (uint32_t i = 0; i < s.robot_count; i++)
    set_drive(&m, &s, i, &rng);
  pa_sim_shm_publish_map(&m, &st, err, sizeof err);
  pa_sim_shm_publish_world(&s, &st);
  /* as the loop running free: scans overlapped (PA_BENCH_OVERLAP=0: not) */
  const char *ov = getenv("PA_BENCH_OVERLAP");
  s.defer_scans = !ov || strcmp(ov, "0") != 0;
  double phys = 0, sens = 0, pub = 0, step = 0;
  uint64_t ticks = 0;
  struct timespec u0, u1; /* the process's CPU time (every thread) */
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &u0);
  int64_t t0 = pa_now_ns(), end = t0 + (int64_t)(seconds * 1e9), t2 = t0;
  while (t2 < end) {
    int64_t a = pa_now_ns();
    pa_sim_step(&m, &s);
    int64_t b = pa_now_ns();
    pa_sim_shm_publish_tick_at(&m, &s, &st, b);
    t2 = pa_now_ns();
    phys += s.phase_ns[PA_SIM_PH_PHYSICS];
    sens += s.phase_ns[PA_SIM_PH_SENSORS];
    step += b - a;
    pub += t2 - b;
    ticks++;
  }
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &u1);
  double wall = (t2 - t0) / 1e9, per = 1e3 * ticks;
  double used = ((double)(u1.tv_sec - u0.tv_sec) * 1e9 +
                 (double)(u1.tv_nsec - u0.tv_nsec)) /
                per; /* us of CPU a tick, every thread */
  pa_sim_scans_settle(&m, &s, true);
  printf("phases %u robots, %u thread%s%s: %.2fx real time, per tick %.1f us: "
         "physics (moves, broad phase, contacts) %.1f us, sensors %.1f us, "
         "rest of the step %.1f us, publishing %.1f us (%llu ticks)\n",
         robots, s.threads, s.threads == 1 ? "" : "s",
         s.defer_scans ? ", scans overlapped" : "", ticks * m.dt / wall,
         (step + pub) / per, phys / per, sens / per, (step - phys - sens) / per,
         pub / per, (unsigned long long)ticks);
  printf("phases %u robots: RSS %ld kB (instance shm touched %ld kB, "
         "model+state+rings %ld kB)\n",
         robots, pa_proc_rss_kb(0), rss_shm - rss0,
         pa_proc_rss_kb(0) - rss_shm);
  /* The caster's share of the sensors: every robot's scan from its pose
   * now, walls only (pa_sim_cast_fan, the scans' caster), in CPU time of
   * this thread, per tick's worth of scans. */
  double dx[360], dy[360], out[360], cast = 0;
  uint64_t scans = 0;
  for (int rep = 0; rep < 3; rep++)
    for (uint32_t i = 0; i < s.robot_count; i++) {
      if (!s.info[i].active)
        continue;
      for (int b = 0; b < 360; b++) {
        double a = s.rs[i].theta - M_PI + b * (2 * M_PI / 360);
        dx[b] = cos(a);
        dy[b] = sin(a);
      }
      double c0 = cpu_s();
      pa_sim_cast_fan(&m, s.rs[i].x, s.rs[i].y, dx, dy, 360,
                      s.info[i].laser_range_max, out);
      cast += cpu_s() - c0;
      scans++;
    }
  double per_tick = cast / (double)scans * (double)s.robot_count /
                    (double)m.ticks_per_scan * 1e6;
  printf("phases %u robots: the caster alone %.1f us CPU a tick (360-beam "
         "fans from every robot's pose, %.2f M beams/s), %.1f us over %u "
         "thread%s; the sensors phase above %.1f us\n",
         robots, per_tick, 360.0 * (double)scans / cast / 1e6,
         per_tick / s.threads, s.threads, s.threads == 1 ? "" : "s",
         sens / per);
  /* A ceiling from this run's own figures: the caster alone and the
   * physics (on the loop's thread) shared perfectly over the threads with
   * nothing else (issue 37 asks 25x on AVX-512 and 18x on AVX2). */
  double tick_min = (per_tick + phys / per) / s.threads;
  printf("phases %u robots: the ticks used %.1f us of CPU each (every "
         "thread); the caster alone and the physics are %.1f us of it: "
         "shared perfectly over %u thread%s with nothing else, at most "
         "%.1fx real time\n",
         robots, used, per_tick + phys / per, s.threads,
         s.threads == 1 ? "" : "s", m.dt * 1e6 / tick_min);
  pa_sim_state_free(&s);
  pa_sim_model_free(&m);
  pa_stack_detach(&st);
  pa_stack_unlink(inst);
  current_instance[0] = '\0';
}

/* Frees what bench_instance made and removes the instance. */
static void bench_instance_free(const char *inst, pa_stack *st,
                                pa_sim_model *m, pa_sim_state *s) {
  pa_sim_state_free(s);
  pa_sim_model_free(m);
  pa_stack_detach(st);
  pa_stack_unlink(inst);
  current_instance[0] = '\0';
}

/* The real loop (pa_sim_run) on a private instance for `seconds` with
 * --spin_us spin_us (-1 = auto); figures from its health block: tick period
 * p50/p99/max and overruns, and the CPU the loop's thread used. */
static void bench_loop(const pa_grid *g, double hz, double seconds,
                       int spin_us) {
  char inst[PA_SHM_INSTANCE_MAX];
  pa_stack st;
  pa_sim_model m;
  pa_sim_state s;
  pa_sim_def sd = pa_sim_def_default();
  sd.control_hz = hz;
  sd.realtime = loop_realtime;
  sd.spin_us = spin_us;
  bench_instance(inst, "bench-sim", g, &sd, &st, &m, &s);
  stop_flag = 0;
  signal(SIGALRM, on_alarm);
  alarm((unsigned)ceil(seconds));
  struct timespec c0, c1;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  double w0 = now_s();
  pa_sim_run(&m, &s, &st, &stop_flag);
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  double cpu = (c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) * 1e-9;
  double wall = now_s() - w0;
  const pa_health *h = &st.ctl->health[PA_PROC_SIM];
  double period = 1e9 / hz;
  char mode[48];
  if (loop_realtime)
    snprintf(mode, sizeof mode, "--realtime");
  else if (spin_us < 0)
    snprintf(mode, sizeof mode, "--spin_us auto");
  else
    snprintf(mode, sizeof mode, "--spin_us %d", spin_us);
  printf("loop  %5.0f Hz, %-15s for %.0f s: %llu ticks, period p50 %.1f us, "
         "p99 %.1f us, max %.1f us (nominal %.1f us) -> p99 error %.1f us, "
         "max error %.1f us; overruns %llu; CPU %.1f%% of a core\n",
         hz, mode, ceil(seconds),
         (unsigned long long)s.tick, h->period_p50_ns / 1e3,
         h->period_p99_ns / 1e3, h->period_max_ns / 1e3, period / 1e3,
         fabs(h->period_p99_ns - period) / 1e3,
         fabs(h->period_max_ns - period) / 1e3,
         (unsigned long long)h->overruns, 100.0 * cpu / wall);
  bench_instance_free(inst, &st, &m, &s);
}

/* The real loop (pa_sim_run, publishing every tick to the shm rings) free
 * running (--speed 0) with one robot for `seconds`: the process's own
 * real-time factor, with `threads` threads (0 = auto). */
static void bench_rtf_loop(const pa_grid *g, double seconds, uint32_t threads) {
  char inst[PA_SHM_INSTANCE_MAX];
  pa_stack st;
  pa_sim_model m;
  pa_sim_state s;
  pa_sim_def sd = pa_sim_def_default();
  sd.speed = 0;
  sd.threads = threads;
  sd.seed = 1; /* the in-process runs' world: the same drive */
  bench_instance(inst, "bench-rtf", g, &sd, &st, &m, &s);
  uint64_t rng = 3;
  set_drive(&m, &s, 0, &rng);
  stop_flag = 0;
  signal(SIGALRM, on_alarm);
  uint64_t t0 = s.tick;
  double w0 = now_s();
  alarm((unsigned)ceil(seconds));
  pa_sim_run(&m, &s, &st, &stop_flag);
  double wall = now_s() - w0;
  printf("rtf   1 robot, pa_sim_run free-running (--speed 0, publishing every "
         "tick to shm), %u thread%s: %.1fx real time (%llu ticks in %.2f s; "
         "%llu bumps)\n",
         s.threads, s.threads == 1 ? "" : "s",
         (double)(s.tick - t0) * m.dt / wall,
         (unsigned long long)(s.tick - t0), wall,
         (unsigned long long)s.bumps);
  bench_instance_free(inst, &st, &m, &s);
}

/* Lockstep round trip through the real queues: a forked child runs
 * pa_sim_run paused; the parent pushes STEP 1 and spins on the reply queue
 * (what netgw's step does). */
static void bench_step_rtt(const pa_grid *g, int n) {
  char inst[PA_SHM_INSTANCE_MAX];
  pa_stack st;
  pa_sim_model m;
  pa_sim_state s;
  pa_sim_def sd = pa_sim_def_default();
  sd.paused = true;
  sd.threads = 1; /* the child runs it: workers do not survive fork() */
  bench_instance(inst, "bench-rtt", g, &sd, &st, &m, &s);
  pid_t pid = fork();
  if (pid == 0) {
    stop_flag = 0;
    signal(SIGTERM, on_alarm);
    pa_sim_run(&m, &s, &st, &stop_flag);
    _exit(0);
  }
  double t0 = now_s();
  for (int i = 0; i < n; i++) {
    pa_cmd c;
    memset(&c, 0, sizeof c);
    c.request_id = (uint64_t)i + 1;
    c.op = PA_OP_STEP;
    c.step.ticks = 1;
    c.flags = PA_CMDF_DRIVE;
    c.step.drive.v = 0.2;
    c.step.drive.w = 0.5;
    while (pa_queue_push(st.cmd, &c) != 0)
      ;
    pa_reply r;
    while (pa_queue_peek(st.reply, &r) < 0)
      ;
    pa_queue_pop(st.reply);
    if (r.request_id != c.request_id || r.status != PA_OK)
      die("step", "unexpected reply");
  }
  double t = now_s() - t0;
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
  printf("step  lockstep STEP 1 round trips through cmd/reply queues "
         "(paused sim, 360-beam scan every 20 ticks): %.0f steps/s "
         "(%.1f us each)\n",
         n / t, t / n * 1e6);
  bench_instance_free(inst, &st, &m, &s);
}

static const char usage[] =
    "usage: bench-sim [seconds_per_loop_test (default 5)] [--beams] [--rtf]\n"
    "                 [--rtf1] [--phases] [--loops] [--realtime] [--simd "
    "PATH]\n"
    "                 [--physics] [--no-faces] [--help]\n"
    "  --beams     only the beam rates of every caster path and the plain\n"
    "              traversal (ratios in one run) and their exactness check\n"
    "  --rtf       only the real-time factors (1 and 2 scan threads)\n"
    "  --rtf1      only 1 robot for seconds_per_loop_test (profiling;\n"
    "              PA_BENCH_THREADS=N, PA_BENCH_LOOP=1 the real loop,\n"
    "              PA_BENCH_OVERLAP=1 in process with scans overlapped,\n"
    "              PA_BENCH_ROBOTS=N N robots on the default map)\n"
    "  --phases    only where a 1000-robot tick goes (large office; physics,\n"
    "              sensors, publishing to shm; PA_BENCH_THREADS=N, default 2;\n"
    "              scans overlapped as in the loop; PA_BENCH_OVERLAP=0 not;\n"
    "              then the caster alone and the ceiling it and the physics\n"
    "              leave when shared perfectly over the threads)\n"
    "  --physics   only the physics of 1000 robots on the office, no scans,\n"
    "              1 and 2 threads, then the two alternating in windows of\n"
    "              50 ticks (PA_BENCH_THREADS=N: only N)\n"

    "  --loops     only the loop timing (auto spin and none)\n"
    "  --realtime  SCHED_FIFO + mlockall + spin 300 us, as pa-sim --realtime\n"
    "  --simd PATH caster path of the scans: auto|avx512|avx2|portable|scalar\n"
    "              (the beam rates measure every path anyway)\n"
    "  --no-faces  scans without the face caster (the march caster alone;\n"
    "              the beam rates measure both anyway)\n";

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGINT, on_interrupt);
  signal(SIGTERM, on_interrupt);
  signal(SIGHUP, on_interrupt);
  signal(SIGPIPE, on_interrupt); /* e.g. piped into head: still clean up */
  double loop_s = 5;
  bool only_loops = false, only_rtf = false, only_rtf1 = false,
       only_beams = false, only_phases = false, only_physics = false;
  for (int i = 1; i < argc; i++) {
    char *end;
    double v = strtod(argv[i], &end);
    if (i == 1 && end != argv[i] && *end == 0 && v > 0) {
      loop_s = v;
    } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(usage, stdout);
      return 0;
    } else if (!strcmp(argv[i], "--simd")) {
      pa_sim_simd p;
      if (i + 1 >= argc || pa_sim_simd_parse(argv[i + 1], &p) != 0) {
        fprintf(stderr, "bench-sim: --simd wants auto|avx512|avx2|portable|"
                        "scalar\n");
        return 2;
      }
      if (pa_sim_simd_set(p) != 0) {
        fprintf(stderr, "bench-sim: --simd %s: this CPU lacks it\n",
                argv[i + 1]);
        return 2;
      }
      i++;
    } else if (!strcmp(argv[i], "--no-faces")) {
      pa_sim_faces_set(false);
    } else if (!strcmp(argv[i], "--realtime")) {
      loop_realtime = true;
      struct sched_param sp = {.sched_priority = 10};
      if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
        fprintf(stderr, "bench-sim: SCHED_FIFO refused (%s)\n", strerror(errno));
      if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0)
        fprintf(stderr, "bench-sim: mlockall failed (%s)\n", strerror(errno));
    } else if (!strcmp(argv[i], "--loops")) {
      only_loops = true;
    } else if (!strcmp(argv[i], "--rtf")) {
      only_rtf = true;
    } else if (!strcmp(argv[i], "--rtf1")) {
      only_rtf1 = true;
    } else if (!strcmp(argv[i], "--phases")) {
      only_phases = true;
    } else if (!strcmp(argv[i], "--physics")) {
      only_physics = true;

    } else if (!strcmp(argv[i], "--beams")) {
      only_beams = true;
    } else {
      fprintf(stderr, "bench-sim: unknown argument %s\n%s", argv[i], usage);
      return 2;
    }
  }
  printf("caster path: %s, face caster %s\n",
         pa_sim_simd_name(pa_sim_simd_path(NULL)),
         pa_sim_faces_on() ? "on" : "off");
  char err[256];
  pa_grid def;
  if (pa_map_load_default(&def, err, sizeof err) != 0)
    die("default map", err);
  if (only_rtf1) { /* for profilers: 1 robot for `seconds` */
    const char *th = getenv("PA_BENCH_THREADS"); /* default auto */
    uint32_t threads = th ? (uint32_t)atoi(th) : 0;
    if (getenv("PA_BENCH_LOOP"))
      bench_rtf_loop(&def, loop_s, threads);
    else {
      const char *nr = getenv("PA_BENCH_ROBOTS"); /* on the default map */
      uint32_t robots = 1;
      if (nr) {
        char *end;
        unsigned long v = strtoul(nr, &end, 10);
        if (end == nr || *end || v < 1 || v > 10000) {
          fprintf(stderr, "bench-sim: PA_BENCH_ROBOTS=%s: want 1..10000\n", nr);
          pa_grid_free(&def);
          return 2;
        }
        robots = (uint32_t)v;
      }
      bench_rtf(&def, robots, loop_s, threads,
                getenv("PA_BENCH_OVERLAP") != NULL);
    }
    pa_grid_free(&def);
    return 0;
  }
  pa_grid big;
  ts_office(&big, 2000, 2000);
  if (!big.cells)
    die("office map", "out of memory");
  if (only_physics) {
    const char *th = getenv("PA_BENCH_THREADS");
    if (th) {
      bench_physics(&big, 1000, loop_s, (uint32_t)atoi(th));
    } else {
      bench_physics(&big, 1000, loop_s, 1);
      bench_physics(&big, 1000, loop_s, 2);
      bench_physics_ab(&big, 1000, loop_s);
    }
    pa_grid_free(&def);
    pa_grid_free(&big);
    return 0;
  }
  if (only_phases) {
    const char *th = getenv("PA_BENCH_THREADS");
    bench_rtf_phases(&big, 1000, loop_s, th ? (uint32_t)atoi(th) : 2);
    pa_grid_free(&def);
    pa_grid_free(&big);
    return 0;
  }
  bool all = !only_beams && !only_rtf && !only_loops;
  if (all || only_beams) {
    bench_beams("default map", &def);
    bench_beams("large office (100x100 m)", &big);
  }
  if (all || (only_rtf && !only_beams)) {
    bench_rtf_threads(&def, 1, 2);
    bench_rtf_loop(&def, 3, 1);
    bench_rtf_loop(&def, 3, 0);
    bench_rtf_threads(&def, 100, 3);
    bench_rtf_threads(&big, 1000, 5);
  }
  if (all)
    bench_step_rtt(&def, 50000);
  if (!only_beams && !only_rtf) {
    /* auto spin against none, alternating, in one run */
    for (int hz = 200; hz <= 1000; hz += 800) {
      bench_loop(&def, hz, loop_s, -1);
      if (!loop_realtime)
        bench_loop(&def, hz, loop_s, 0);
    }
  }
  pa_grid_free(&def);
  pa_grid_free(&big);
  return 0;
}
