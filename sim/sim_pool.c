/* sim_pool.c - tick workers: the scans of one tick are independent (each
 * reads the tick's final poses and writes only its own ranges and noise
 * generator), and so are the wall beams of one scan and the moves of robots
 * far from others, so they run on a few threads. Which thread takes which
 * item does not change any result.
 *
 * Dispatch: the caller publishes a job (a generation number), wakes parked
 * workers, takes items itself until none is left, then closes the job and
 * waits only for the workers that joined it: a worker still waking up (a
 * thread wake-up; docs/sim.md gives measured figures) finds the job closed and
 * skips it, so the caller never waits for a wake-up. A worker that finished a
 * job watches for the next one for POOL_SPIN_NS (up to twice the recent gaps
 * while jobs come back to back) before parking on the condition variable:
 * back-to-back jobs (free-running, inside a STEP) find it awake; at 200 Hz
 * it parks. When the loop waits for its next lockstep command
 * (pa_sim_int_pool_idle) the workers park at once: the client's reply and
 * decision take longer than a wake-up, and a watching worker takes a core
 * from the loop thread, the gateway and the client on a 2-core machine. */
#include "pa_sim.h"
#include "sim_int.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define POOL_SPIN_NS 50000 /* a worker watches this long for the next job */
/* ... or, while jobs come within POOL_BURST_NS of each other (free-running
 * or stepping many robots: the physics job, the scans, publishing), twice
 * the longest recent gap, up to POOL_SPIN_MAX_NS: the gap from the scans to
 * the next tick's moves is about POOL_SPIN_NS itself. */
#define POOL_BURST_NS 1000000
#define POOL_SPIN_MAX_NS 500000
#define POOL_HOT_NS 200000 /* small jobs this close together wake workers */
#define POOL_YIELD_NS 50000 /* a caller waiting longer for a worker yields */

typedef struct worker {
  pa_sim_pool *pool;
  pthread_t th;
  int64_t gap; /* the longest recent gap between jobs, decaying [ns] */
  pa_sim_scratch scratch;
} worker;

#define SPLIT_MAX 8 /* scans split at the end of a tick's scan job */
#define PARTS_MAX 4 /* parts of each */

/* One scan job: robots ids[i] into s->ranges. The first `whole` scans are
 * an item each; the last `split` ones are `parts` items each, a part being
 * its beams [b0, b1): their walls, then their bodies and clamp (a part's
 * finish reads and writes only its own beams, so the parts of a scan are
 * independent items, with no finish left for whoever casts the last one).
 * The threads run out of work together instead of one waiting for the
 * other's last whole scan. Few parts: each costs the face caster's work of
 * a whole fan (its faces in reach), about a third of a scan's walls. */
typedef struct scan_job {
  const pa_sim_model *m;
  pa_sim_state *s;
  const uint32_t *ids;
  uint32_t first; /* 1: item 0 builds the robots' laser buckets */
  uint32_t whole, parts;
  pa_sim_scan_at at[SPLIT_MAX]; /* of the split scans */
} scan_job;

/* Beams [b0, b1) of scan a into out: walls, then bodies and clamp. */
static void scan_part_all(const pa_sim_model *m, const pa_sim_state *s,
                          const pa_sim_scan_at *a, float *out,
                          pa_sim_scratch *k, uint32_t b0, uint32_t b1) {
  pa_sim_int_scan_walls(m, s, a, out, k, b0, b1);
  pa_sim_int_scan_finish_part(m, s, a, out, k, b0, b1);
}

/* Another thread is building the robots' laser buckets (a scan's bodies
 * would wait for them). */
static bool buckets_busy(const pa_sim_state *s) {
  return __atomic_load_n(&s->lhash.build, __ATOMIC_ACQUIRE) == 2;
}

/* The bodies of the scans this thread cast the walls of while the buckets
 * were being built (waits for them if they still are). */
static void scan_flush(scan_job *j, pa_sim_scratch *k) {
  for (uint32_t q = 0; q < k->ndefer; q++) {
    uint32_t id = k->defer[q];
    pa_sim_scan_at a;
    pa_sim_int_scan_at(j->m, j->s, id, &a);
    pa_sim_int_scan_finish(j->m, j->s, &a,
                           j->s->ranges + (size_t)id * j->m->beam_cap, k);
  }
  k->ndefer = 0;
}

static void scan_end(void *arg, pa_sim_scratch *k) { scan_flush(arg, k); }

static void scan_one(void *arg, uint32_t i, pa_sim_scratch *k,
                     uint64_t *count) {
  scan_job *j = arg;
  (void)count;
  const pa_sim_model *m = j->m;
  if (i < j->first) { /* the first taker, while the others cast walls */
    pa_sim_int_lhash_ready(j->s);
    return;
  }
  i -= j->first;
  if (i < j->whole) {
    uint32_t id = j->ids[i];
    float *out = j->s->ranges + (size_t)id * m->beam_cap;
    pa_sim_scan_at a;
    pa_sim_int_scan_at(m, j->s, id, &a);
    pa_sim_int_scan_walls(m, j->s, &a, out, k, 0, UINT32_MAX);
    if (buckets_busy(j->s) && k->ndefer < PA_SIM_DEFER) {
      k->defer[k->ndefer++] = id; /* finished once they are built */
      return;
    }
    scan_flush(j, k);
    pa_sim_int_scan_finish(m, j->s, &a, out, k);
    return;
  }
  uint32_t q = (i - j->whole) / j->parts, part = (i - j->whole) % j->parts;
  const pa_sim_scan_at *a = &j->at[q];
  uint32_t step = (a->beams + j->parts - 1) / j->parts;
  scan_part_all(m, j->s, a, j->s->ranges + (size_t)a->id * m->beam_cap, k,
                part * step, (part + 1) * step);
}

/* One scan's beams in contiguous parts of `step` beams, part i from beam
 * i * step (neighbouring beams cast together share cells; smaller parts
 * cost more per beam): their walls, and with `finish` their bodies and
 * clamp too. */
typedef struct split_job {
  const pa_sim_model *m;
  pa_sim_state *s;
  const pa_sim_scan_at *at;
  uint32_t step;
  float *out;
  bool finish;
} split_job;

/* A stream task: wall beams [b0, b1) of a scan into out. done = its ticket
 * once run. */
#define POOL_TASKS PA_SIM_POOL_TASKS
typedef struct task {
  const pa_sim_model *m;
  const pa_sim_state *s;
  pa_sim_scan_at at;
  float *out;
  uint32_t b0, b1;
  bool whole; /* the finish too (pa_sim_int_pool_task_scan) */
  atomic_uint_fast64_t done;
} task;

struct pa_sim_pool {
  pthread_mutex_t mu;
  pthread_cond_t go;       /* parked workers wait for a new job (or quit) */
  atomic_uint_fast64_t job;    /* generation, bumped per dispatch */
  atomic_uint_fast64_t closed; /* the last generation closed to joiners */
  atomic_uint active;      /* workers inside the current job */
  atomic_uint parked;      /* workers on (or about to wait on) `go` */
  atomic_bool quit;
  atomic_bool idle; /* the loop waits for a command: park now */
  /* The job (written before the generation is published). */
  pa_sim_pool_fn fn;
  void (*fin)(void *arg, pa_sim_scratch *k); /* each taker's last call */
  void *arg;
  uint32_t n, chunk;
  atomic_uint next;        /* next item to take */
  atomic_uint_fast64_t count; /* the workers' counts */
  pa_sim_scratch scratch;  /* the caller's */
  int64_t last_end;        /* when the last small job ended [ns] */
  uint32_t nworkers;
  worker *w;
  /* The task stream: a job the workers stay in, taking tasks in order. */
  bool stream;             /* the stream job is open */
  task tasks[POOL_TASKS];  /* task i in slot i % POOL_TASKS */
  atomic_uint_fast64_t t_posted; /* tasks posted */
  atomic_uint_fast64_t t_next;   /* tasks taken */
};

uint32_t pa_sim_threads_resolve(uint32_t threads, uint32_t robots) {
  if (threads > 0)
    return threads;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 1)
    cpus = 1;
  /* A few robots: their scans split over 2 threads at most (more parts
   * cost more per beam than they save); many: up to 8. */
  long cap = robots <= 8 ? 2 : 8;
  return cpus > cap ? (uint32_t)cap : (uint32_t)cpus;
}

/* Runs items of the job, `chunk` at a time, until none is left. */
static uint64_t drain(pa_sim_pool *p, pa_sim_scratch *k) {
  uint64_t count = 0;
  for (;;) {
    uint32_t i0 =
        atomic_fetch_add_explicit(&p->next, p->chunk, memory_order_relaxed);
    if (i0 >= p->n)
      return count;
    uint32_t i1 = p->n - i0 < p->chunk ? p->n : i0 + p->chunk;
    for (uint32_t i = i0; i < i1; i++)
      p->fn(p->arg, i, k, &count);
  }
}

/* drain, then the job's end hook on this thread's scratch. */
static uint64_t drain_fin(pa_sim_pool *p, pa_sim_scratch *k) {
  uint64_t count = drain(p, k);
  if (p->fin)
    p->fin(p->arg, k);
  return count;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

void pa_sim_int_wait_step(pa_sim_waiter *w) {
  if ((++w->i & 255) == 0) {
    int64_t now = pa_sim_int_now();
    if (!w->until)
      w->until = now + POOL_YIELD_NS;
    else if (now > w->until)
      sched_yield();
  }
  cpu_relax();
}

/* Waits for a generation other than `seen` (or quit): watches first, then
 * parks; at once while the pool is idle (*idled: it parked so). */
static uint64_t next_job(pa_sim_pool *p, uint64_t seen, int64_t spin,
                         bool *idled) {
  int64_t t0 = pa_sim_int_now(), until = t0 + spin;
  /* past POOL_SPIN_NS it yields as it watches: a thread that is ready (the
   * gateway or a client between lockstep steps) gets the core */
  bool yield = false;
  for (int i = 0;; i++) {
    uint64_t g = atomic_load(&p->job);
    if (g != seen || atomic_load(&p->quit))
      return g;
    if (atomic_load_explicit(&p->idle, memory_order_relaxed)) {
      *idled = true;
      break;
    }
    if ((i & 63) == 63 || yield) {
      int64_t now = pa_sim_int_now();
      if (now > until)
        break;
      yield = now - t0 > POOL_SPIN_NS;
    }
    if (yield)
      sched_yield();
    else
      cpu_relax();
  }
  pthread_mutex_lock(&p->mu);
  /* Announce before the last look (the caller publishes, then looks at
   * `parked`: one of the two sees the other). */
  atomic_fetch_add(&p->parked, 1);
  uint64_t g;
  while ((g = atomic_load(&p->job)) == seen && !atomic_load(&p->quit))
    pthread_cond_wait(&p->go, &p->mu);
  atomic_fetch_sub(&p->parked, 1);
  pthread_mutex_unlock(&p->mu);
  return g;
}

static void stream_run(pa_sim_pool *p, pa_sim_scratch *k, uint64_t g);

static void *worker_main(void *arg) {
  worker *w = arg;
  pa_sim_pool *p = w->pool;
  uint64_t seen = 0;
  int64_t end = pa_sim_int_now(), spin = POOL_SPIN_NS;
  for (;;) {
    bool idled = false;
    uint64_t g = next_job(p, seen, spin, &idled);
    if (atomic_load(&p->quit))
      break;
    seen = g;
    /* The wait for a lockstep command is not a gap between the ticks' jobs
     * (it would shorten the watch inside the next STEP). */
    int64_t gap = idled ? 0 : pa_sim_int_now() - end;
    w->gap = gap > w->gap - w->gap / 8 ? gap : w->gap - w->gap / 8;
    spin = w->gap > POOL_BURST_NS                  ? POOL_SPIN_NS
           : 2 * w->gap + 20000 < POOL_SPIN_NS     ? POOL_SPIN_NS
           : 2 * w->gap + 20000 > POOL_SPIN_MAX_NS ? POOL_SPIN_MAX_NS
                                                   : 2 * w->gap + 20000;
    /* Join, then check it is still open (the caller closes, then counts
     * `active`: one of the two sees the other). A closed or newer job is
     * left alone: its fields may be the next job's. */
    atomic_fetch_add(&p->active, 1);
    if (atomic_load(&p->closed) >= g || atomic_load(&p->job) != g) {
      atomic_fetch_sub(&p->active, 1);
      continue;
    }
    if (p->stream) {
      stream_run(p, &w->scratch, g);
    } else {
      uint64_t c = drain_fin(p, &w->scratch);
      atomic_fetch_add(&p->count, c);
    }
    end = pa_sim_int_now();
    atomic_fetch_sub(&p->active, 1); /* releases this worker's writes */
  }
  return NULL;
}

pa_sim_pool *pa_sim_int_pool_new(const pa_sim_model *m, uint32_t threads,
                                 char *err, size_t err_sz) {
  if (threads <= 1)
    return NULL;
  /* Settle the CPU feature check before any worker reads it. */
  (void)pa_sim_simd_path(m);
  pa_sim_pool *p = calloc(1, sizeof *p);
  if (!p)
    goto oom;
  p->nworkers = threads - 1;
  p->w = calloc(p->nworkers, sizeof *p->w);
  if (!p->w || pa_sim_int_scratch_init(&p->scratch, m->beam_cap) != 0) {
    free(p->w);
    pa_sim_int_scratch_free(&p->scratch);
    free(p);
    goto oom;
  }
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->go, NULL);
  atomic_init(&p->job, 0);
  atomic_init(&p->closed, 0);
  atomic_init(&p->active, 0);
  atomic_init(&p->parked, 0);
  atomic_init(&p->quit, false);
  atomic_init(&p->idle, false);
  atomic_init(&p->next, 0);
  atomic_init(&p->count, 0);
  atomic_init(&p->t_posted, 0);
  atomic_init(&p->t_next, 0);
  for (int i = 0; i < POOL_TASKS; i++)
    atomic_init(&p->tasks[i].done, 0);
  uint32_t started = 0;
  for (; started < p->nworkers; started++) {
    worker *w = &p->w[started];
    w->pool = p;
    if (pa_sim_int_scratch_init(&w->scratch, m->beam_cap) != 0) {
      snprintf(err, err_sz, "out of memory for scan thread %u", started + 1);
      break;
    }
    int rc = pthread_create(&w->th, NULL, worker_main, w);
    if (rc != 0) {
      pa_sim_int_scratch_free(&w->scratch);
      snprintf(err, err_sz, "cannot start scan thread %u of %u: %s",
               started + 1, p->nworkers, strerror(rc));
      break;
    }
  }
  if (started < p->nworkers) {
    p->nworkers = started; /* only the started ones to join */
    pa_sim_int_pool_free(p);
    return NULL;
  }
  return p;
oom:
  snprintf(err, err_sz, "out of memory for %u scan threads", threads);
  return NULL;
}

void pa_sim_int_pool_free(pa_sim_pool *p) {
  if (!p)
    return;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->quit, true);
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  for (uint32_t i = 0; i < p->nworkers; i++) {
    pthread_join(p->w[i].th, NULL);
    pa_sim_int_scratch_free(&p->w[i].scratch);
  }
  pthread_cond_destroy(&p->go);
  pthread_mutex_destroy(&p->mu);
  pa_sim_int_scratch_free(&p->scratch);
  free(p->w);
  free(p);
}

/* Publishes a job and, if wake, wakes parked workers. No worker is inside a job here (the last one was closed and
 * waited for), and none joins before the generation is published. */
static uint64_t post(pa_sim_pool *p, pa_sim_pool_fn fn,
                     void (*fin)(void *, pa_sim_scratch *), void *arg,
                     uint32_t n, uint32_t chunk, bool wake) {
  p->fn = fn;
  p->fin = fin;
  p->arg = arg;
  p->n = n;
  p->chunk = chunk ? chunk : 1;
  atomic_store_explicit(&p->count, 0, memory_order_relaxed);
  atomic_store_explicit(&p->next, 0, memory_order_relaxed);
  if (atomic_load_explicit(&p->idle, memory_order_relaxed))
    atomic_store_explicit(&p->idle, false, memory_order_relaxed);
  uint64_t g = atomic_load(&p->job) + 1;
  atomic_store(&p->job, g); /* publishes the fields above */
  if (wake && atomic_load(&p->parked) > 0) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
  }
  return g;
}

/* Closes the current job to joiners and waits only for the workers inside
 * it (the caller closes, then counts `active`; a joiner counts itself, then
 * checks `closed`: one of the two sees the other). */
static void close_job(pa_sim_pool *p) {
  atomic_store(&p->closed, atomic_load(&p->job));
  pa_sim_waiter w = {0, 0};
  while (atomic_load(&p->active) > 0)
    pa_sim_int_wait_step(&w);
}

/* The caller takes what is left, then closes the job (the workers' items
 * are short). */
static uint64_t complete(pa_sim_pool *p) {
  uint64_t count = drain_fin(p, &p->scratch);
  close_job(p);
  return count + atomic_load(&p->count);
}

/* small: a job shorter than a wake-up (one scan split in parts) wakes
 * parked workers only when jobs come back to back (the last one ended
 * within POOL_HOT_NS): at 10 Hz the caller just does it alone. fin: each
 * taker's last call (NULL: none). */
static uint64_t pool_run_fin(pa_sim_pool *p, pa_sim_pool_fn fn,
                             void (*fin)(void *, pa_sim_scratch *), void *arg,
                             uint32_t n, uint32_t chunk, bool small) {
  pa_sim_int_pool_stream_close(p);
  post(p, fn, fin, arg, n, chunk,
       !small || pa_sim_int_now() - p->last_end < POOL_HOT_NS);
  uint64_t count = complete(p);
  if (small)
    p->last_end = pa_sim_int_now();
  return count;
}

static uint64_t pool_run(pa_sim_pool *p, pa_sim_pool_fn fn, void *arg,
                         uint32_t n, uint32_t chunk, bool small) {
  return pool_run_fin(p, fn, NULL, arg, n, chunk, small);
}

uint64_t pa_sim_int_pool_run(pa_sim_pool *p, pa_sim_pool_fn fn, void *arg,
                             uint32_t n, uint32_t chunk) {
  return pool_run(p, fn, arg, n, chunk, false);
}

uint64_t pa_sim_int_pool_run_short(pa_sim_pool *p, pa_sim_pool_fn fn, void *arg,
                                   uint32_t n, uint32_t chunk) {
  return pool_run(p, fn, arg, n, chunk, true);
}

/* A scan that can be cast in parts: its laser has no noise (the draws
 * follow the beams in order). */
static bool splits(const pa_sim_state *s, uint32_t id) {
  return s->info[id].laser_noise == 0;
}

void pa_sim_int_pool_scan(pa_sim_pool *p, const pa_sim_model *m,
                          pa_sim_state *s, const uint32_t *ids, uint32_t n) {
  scan_job j = {.m = m, .s = s, .ids = ids};
  j.first = __atomic_load_n(&s->lhash.build, __ATOMIC_ACQUIRE) == 1;
  /* The last scans in one part per thread: the tail is a part (half a
   * scan with 2 threads) instead of a whole scan. As many as leave the
   * whole ones a multiple of the threads (at least one), or one per thread
   * if that is none (their costs differ). */
  uint32_t threads = p->nworkers + 1;
  uint32_t split = n % threads ? n % threads : threads;
  split = split > n ? n : split;
  split = split > SPLIT_MAX ? SPLIT_MAX : split;
  while (split > 0 && !splits(s, ids[n - split]))
    split--; /* noisy: whole (the ones after it are split) */
  j.whole = n - split;
  j.parts = threads < PARTS_MAX ? threads : PARTS_MAX;
  for (uint32_t q = 0; q < split; q++)
    pa_sim_int_scan_at(m, s, ids[j.whole + q], &j.at[q]);
  pool_run_fin(p, scan_one, scan_end, &j, j.first + j.whole + split * j.parts,
               1, false);
}

static void scan_part(void *arg, uint32_t i, pa_sim_scratch *k,
                      uint64_t *count) {
  split_job *j = arg;
  uint32_t b0 = i * j->step, b1 = b0 + j->step;
  if (j->finish)
    scan_part_all(j->m, j->s, j->at, j->out, k, b0, b1);
  else
    pa_sim_int_scan_walls(j->m, j->s, j->at, j->out, k, b0, b1);
  (void)count;
}

static float *ranges_of(const pa_sim_model *m, pa_sim_state *s, uint32_t id) {
  return s->ranges + (size_t)id * m->beam_cap;
}

void pa_sim_int_pool_scan_one(pa_sim_pool *p, const pa_sim_model *m,
                              pa_sim_state *s, uint32_t id) {
  pa_sim_scan_at a;
  pa_sim_int_scan_at(m, s, id, &a);
  uint32_t parts = p->nworkers + 1;
  uint32_t step = (a.beams + parts - 1) / parts;
  split_job j = {m, s, &a, step, ranges_of(m, s, id), splits(s, id)};
  pool_run(p, scan_part, &j, parts, 1, true);
  if (!j.finish)
    pa_sim_int_scan_finish(m, s, &a, j.out, &p->scratch);
}

/* ---- the task stream (overlapped scans) ---------------------------------- */

/* Runs task i (its slot) and marks it done. */
static void run_task(pa_sim_pool *p, uint64_t i, pa_sim_scratch *k) {
  task *t = &p->tasks[i % POOL_TASKS];
  pa_sim_int_scan_walls(t->m, t->s, &t->at, t->out, k, t->b0, t->b1);
  if (t->whole)
    pa_sim_int_scan_finish(t->m, t->s, &t->at, t->out, k);
  atomic_store_explicit(&t->done, i + 1, memory_order_release);
}

/* Takes the next posted task, if any, and runs it. */
static bool take_task(pa_sim_pool *p, pa_sim_scratch *k) {
  uint64_t i = atomic_load_explicit(&p->t_next, memory_order_relaxed);
  if (i == atomic_load_explicit(&p->t_posted, memory_order_acquire))
    return false;
  if (!atomic_compare_exchange_strong(&p->t_next, &i, i + 1))
    return true; /* someone else took it: look again */
  run_task(p, i, k);
  return true;
}

/* A worker inside the stream job g: tasks until the job is closed. */
static void stream_run(pa_sim_pool *p, pa_sim_scratch *k, uint64_t g) {
  for (;;) {
    if (take_task(p, k))
      continue;
    if (atomic_load(&p->closed) >= g || atomic_load(&p->quit))
      return;
    cpu_relax();
  }
}

static uint64_t task_post(pa_sim_pool *p, const pa_sim_model *m,
                          const pa_sim_state *s, const pa_sim_scan_at *a,
                          float *out, uint32_t b0, uint32_t b1, bool whole) {
  if (!p->stream) {
    p->stream = true;
    post(p, NULL, NULL, NULL, 0, 1, true);
  }
  uint64_t i = atomic_load_explicit(&p->t_posted, memory_order_relaxed);
  task *t = &p->tasks[i % POOL_TASKS];
  /* The task that used the slot before must be done (callers keep fewer
   * in flight; this only guards). */
  while (i >= POOL_TASKS &&
         atomic_load_explicit(&t->done, memory_order_acquire) <
             i + 1 - POOL_TASKS)
    if (!take_task(p, &p->scratch))
      cpu_relax();
  t->m = m;
  t->s = s;
  t->at = *a;
  t->out = out;
  t->b0 = b0;
  t->b1 = b1;
  t->whole = whole;
  atomic_store_explicit(&p->t_posted, i + 1, memory_order_release);
  return i + 1;
}

uint64_t pa_sim_int_pool_task(pa_sim_pool *p, const pa_sim_model *m,
                              const pa_sim_state *s, const pa_sim_scan_at *a,
                              float *out, uint32_t b0, uint32_t b1) {
  return task_post(p, m, s, a, out, b0, b1, false);
}

uint64_t pa_sim_int_pool_task_scan(pa_sim_pool *p, const pa_sim_model *m,
                                   const pa_sim_state *s,
                                   const pa_sim_scan_at *a, float *out) {
  return task_post(p, m, s, a, out, 0, UINT32_MAX, true);
}

uint64_t pa_sim_int_pool_taken(pa_sim_pool *p) {
  return atomic_load_explicit(&p->t_next, memory_order_relaxed);
}

void pa_sim_int_pool_help(pa_sim_pool *p, uint64_t ticket) {
  while (atomic_load_explicit(&p->t_next, memory_order_relaxed) < ticket &&
         take_task(p, &p->scratch))
    ;
}

bool pa_sim_int_pool_task_done(pa_sim_pool *p, uint64_t ticket) {
  /* A slot's done only grows (ticket, ticket + POOL_TASKS, ...). */
  return atomic_load_explicit(&p->tasks[(ticket - 1) % POOL_TASKS].done,
                              memory_order_acquire) >= ticket;
}

void pa_sim_int_pool_wait(pa_sim_pool *p, uint64_t ticket) {
  pa_sim_int_pool_help(p, ticket);
  pa_sim_waiter w = {0, 0};
  while (!pa_sim_int_pool_task_done(p, ticket))
    pa_sim_int_wait_step(&w);
}

void pa_sim_int_pool_wait_busy(pa_sim_pool *p, uint64_t ticket) {
  pa_sim_waiter w = {0, 0};
  while (!pa_sim_int_pool_task_done(p, ticket))
    if (!take_task(p, &p->scratch))
      pa_sim_int_wait_step(&w);
}

void pa_sim_int_pool_stream_close(pa_sim_pool *p) {
  if (!p || !p->stream)
    return;
  /* Every posted task runs first (the caller takes what is left). */
  uint64_t end = atomic_load_explicit(&p->t_posted, memory_order_relaxed);
  while (take_task(p, &p->scratch))
    ;
  pa_sim_waiter w = {0, 0};
  for (uint64_t i = end > POOL_TASKS ? end - POOL_TASKS : 0; i < end; i++)
    while (!pa_sim_int_pool_task_done(p, i + 1))
      pa_sim_int_wait_step(&w);
  close_job(p);
  p->stream = false;
}

pa_sim_scratch *pa_sim_int_pool_scratch(pa_sim_pool *p) { return &p->scratch; }

void pa_sim_int_pool_idle(pa_sim_pool *p) {
  if (p && !atomic_load_explicit(&p->idle, memory_order_relaxed))
    atomic_store_explicit(&p->idle, true, memory_order_relaxed);
}
