/* sim_pool.c - tick workers: the scans of one tick are independent (each
 * reads the tick's final poses and writes only its own ranges and noise
 * generator), and so are the wall beams of one scan and the moves of robots
 * far from others, so they run on a few threads. Which thread takes which
 * item does not change any result.
 *
 * Dispatch: the caller publishes a job (a generation number), wakes parked
 * workers, takes items itself until none is left, then closes the job and
 * waits only for the workers that joined it: a worker still waking up (10 to
 * 300 us on a VM) finds the job closed and skips it, so the caller never
 * waits for a wake-up. A worker that finished a job watches for the next one
 * for POOL_SPIN_NS before parking on the condition variable: back-to-back
 * jobs (free-running, lockstep) find it awake; at 200 Hz it parks. */
#include "pa_sim.h"
#include "sim_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define POOL_SPIN_NS 50000 /* a worker watches this long for the next job */
#define POOL_HOT_NS 200000 /* small jobs this close together wake workers */

typedef struct worker {
  pa_sim_pool *pool;
  pthread_t th;
  pa_sim_scratch scratch;
} worker;

/* One scan job: robots ids[i] into s->ranges. */
typedef struct scan_job {
  const pa_sim_model *m;
  pa_sim_state *s;
  const uint32_t *ids;
} scan_job;

static void scan_one(void *arg, uint32_t i, pa_sim_scratch *k,
                     uint64_t *count) {
  scan_job *j = arg;
  uint32_t id = j->ids[i];
  pa_sim_int_scan(j->m, j->s, id, j->s->ranges + (size_t)id * j->m->beam_cap,
                  k);
  (void)count;
}

/* One scan's wall beams in `n` contiguous parts: the first of `first`
 * beams, the others of `step` (neighbouring beams cast together share
 * cells; smaller parts cost more per beam). */
typedef struct split_job {
  const pa_sim_model *m;
  pa_sim_state *s;
  const pa_sim_scan_at *at;
  uint32_t n, first, step;
  float *out;
} split_job;

struct pa_sim_pool {
  pthread_mutex_t mu;
  pthread_cond_t go;       /* parked workers wait for a new job (or quit) */
  atomic_uint_fast64_t job;    /* generation, bumped per dispatch */
  atomic_uint_fast64_t closed; /* the last generation closed to joiners */
  atomic_uint active;      /* workers inside the current job */
  atomic_uint parked;      /* workers on (or about to wait on) `go` */
  atomic_bool quit;
  /* The job (written before the generation is published). */
  pa_sim_pool_fn fn;
  void *arg;
  uint32_t n, chunk;
  atomic_uint next;        /* next item to take */
  atomic_uint done;        /* items finished (an overlapped job's progress) */
  atomic_uint_fast64_t count; /* the workers' counts */
  pa_sim_scratch scratch;  /* the caller's */
  int64_t last_end;        /* when the last small job ended [ns] */
  uint32_t nworkers;
  worker *w;
  /* The overlapped scan (pa_sim_int_pool_scan_start .. _walls). */
  bool open;               /* a job is posted and not yet closed */
  pa_sim_scan_at at;
  split_job *split;
  double share;            /* of the first part (see scan_start) */
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
    atomic_fetch_add_explicit(&p->done, i1 - i0, memory_order_release);
  }
}

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Waits for a generation other than `seen` (or quit): watches first, then
 * parks. */
static uint64_t next_job(pa_sim_pool *p, uint64_t seen) {
  int64_t until = mono_ns() + POOL_SPIN_NS;
  for (int i = 0;; i++) {
    uint64_t g = atomic_load(&p->job);
    if (g != seen || atomic_load(&p->quit))
      return g;
    if ((i & 63) == 63 && mono_ns() > until)
      break;
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

static void *worker_main(void *arg) {
  worker *w = arg;
  pa_sim_pool *p = w->pool;
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = next_job(p, seen);
    if (atomic_load(&p->quit))
      break;
    seen = g;
    /* Join, then check it is still open (the caller closes, then counts
     * `active`: one of the two sees the other). A closed or newer job is
     * left alone: its fields may be the next job's. */
    atomic_fetch_add(&p->active, 1);
    if (atomic_load(&p->closed) >= g || atomic_load(&p->job) != g) {
      atomic_fetch_sub(&p->active, 1);
      continue;
    }
    uint64_t c = drain(p, &w->scratch);
    atomic_fetch_add(&p->count, c);
    atomic_fetch_sub(&p->active, 1); /* releases this worker's writes */
  }
  return NULL;
}

pa_sim_pool *pa_sim_int_pool_new(const pa_sim_model *m, uint32_t threads,
                                 char *err, size_t err_sz) {
  if (threads <= 1)
    return NULL;
  /* Settle the CPU feature check before any worker reads it. */
  (void)pa_sim_cast_simd(-1);
  pa_sim_pool *p = calloc(1, sizeof *p);
  if (!p)
    goto oom;
  p->nworkers = threads - 1;
  p->share = 0.65;
  p->w = calloc(p->nworkers, sizeof *p->w);
  p->split = calloc(1, sizeof *p->split);
  if (!p->w || !p->split ||
      pa_sim_int_scratch_init(&p->scratch, m->beam_cap) != 0) {
    free(p->w);
    free(p->split);
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
  atomic_init(&p->next, 0);
  atomic_init(&p->count, 0);
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
  free(p->split);
  free(p->w);
  free(p);
}

/* Publishes a job and, if wake, wakes parked workers. No worker is inside a job here (the last one was closed and
 * waited for), and none joins before the generation is published. */
static uint64_t post(pa_sim_pool *p, pa_sim_pool_fn fn, void *arg,
                     uint32_t n, uint32_t chunk, bool wake) {
  p->fn = fn;
  p->arg = arg;
  p->n = n;
  p->chunk = chunk ? chunk : 1;
  atomic_store_explicit(&p->count, 0, memory_order_relaxed);
  atomic_store_explicit(&p->next, 0, memory_order_relaxed);
  atomic_store_explicit(&p->done, 0, memory_order_relaxed);
  uint64_t g = atomic_load(&p->job) + 1;
  atomic_store(&p->job, g); /* publishes the fields above */
  if (wake && atomic_load(&p->parked) > 0) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
  }
  p->open = true;
  return g;
}

/* The caller takes what is left, closes the job and waits only for the
 * workers that joined it (their items are short). */
static uint64_t complete(pa_sim_pool *p) {
  uint64_t count = drain(p, &p->scratch);
  atomic_store(&p->closed, atomic_load(&p->job));
  while (atomic_load(&p->active) > 0)
    cpu_relax();
  p->open = false;
  return count + atomic_load(&p->count);
}

/* small: a job shorter than a wake-up (one scan split in parts) wakes
 * parked workers only when jobs come back to back (the last one ended
 * within POOL_HOT_NS): at 10 Hz the caller just does it alone. */
static uint64_t pool_run(pa_sim_pool *p, pa_sim_pool_fn fn, void *arg,
                         uint32_t n, uint32_t chunk, bool small) {
  post(p, fn, arg, n, chunk,
       !small || mono_ns() - p->last_end < POOL_HOT_NS);
  uint64_t count = complete(p);
  if (small)
    p->last_end = mono_ns();
  return count;
}

uint64_t pa_sim_int_pool_run(pa_sim_pool *p, pa_sim_pool_fn fn, void *arg,
                             uint32_t n, uint32_t chunk) {
  return pool_run(p, fn, arg, n, chunk, false);
}

void pa_sim_int_pool_scan(pa_sim_pool *p, const pa_sim_model *m,
                          pa_sim_state *s, const uint32_t *ids, uint32_t n) {
  scan_job j = {m, s, ids};
  pa_sim_int_pool_run(p, scan_one, &j, n, 1);
}

static void scan_part(void *arg, uint32_t i, pa_sim_scratch *k,
                      uint64_t *count) {
  split_job *j = arg;
  uint32_t b0 = i ? j->first + (i - 1) * j->step : 0;
  uint32_t b1 = i ? b0 + j->step : j->first;
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
  split_job j = {m, s, &a, parts, step, step, ranges_of(m, s, id)};
  pool_run(p, scan_part, &j, j.n, 1, true);
  pa_sim_int_scan_finish(m, s, &a, j.out, &p->scratch);
}

/* Overlapped: two parts. A worker takes the first at once and casts it
 * while the caller runs the next ticks; the caller takes the second when it
 * comes to end the scan (or the worker does, if it is free first). Both
 * stay big: a part of fewer beams casts each one slower (fewer rays in
 * flight), so finer parts balanced better but cost more in all. The first
 * part's share settles where both finish together: it grows when the caller
 * found nothing left or did not wait, shrinks when it waited. */
#define SHARE_MIN 0.3
#define SHARE_MAX 0.95

void pa_sim_int_pool_scan_start(pa_sim_pool *p, const pa_sim_model *m,
                                pa_sim_state *s, const pa_sim_scan_at *a,
                                float *out) {
  p->at = *a;
  uint32_t first = (uint32_t)(p->share * a->beams + 0.5);
  if (first < 1)
    first = 1;
  if (first > a->beams)
    first = a->beams;
  *p->split = (split_job){m, s, &p->at, 2, first, a->beams - first, out};
  post(p, scan_part, p->split, 2, 1, true);
}

bool pa_sim_int_pool_scan_ready(pa_sim_pool *p) {
  return !p->open ||
         atomic_load_explicit(&p->done, memory_order_acquire) >= p->n;
}

void pa_sim_int_pool_scan_walls(pa_sim_pool *p, pa_sim_scan_at *a) {
  *a = p->at;
  if (!p->open)
    return;
  bool none_left = atomic_load(&p->next) >= p->n;
  (void)drain(p, &p->scratch);
  bool wait = atomic_load(&p->done) < p->n;
  p->share += none_left ? 0.02 : wait ? -0.005 : 0.005;
  p->share = p->share < SHARE_MIN   ? SHARE_MIN
             : p->share > SHARE_MAX ? SHARE_MAX
                                    : p->share;
  complete(p);
}

pa_sim_scratch *pa_sim_int_pool_scratch(pa_sim_pool *p) { return &p->scratch; }
