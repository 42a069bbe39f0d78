/* sim_pool.c - scan workers: the scans of one tick are independent (each
 * reads the tick's final poses and writes only its own ranges and noise
 * generator), so they are cast on a few threads. Which thread casts which
 * scan does not change any result. Idle workers block on a condition
 * variable (no spinning). */
#include "pa_sim.h"
#include "sim_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

struct pa_sim_pool {
  pthread_mutex_t mu;
  pthread_cond_t go;    /* workers wait for a new job (or quit) */
  pthread_cond_t done;  /* the caller waits for busy == 0 */
  uint64_t job;         /* job generation, bumped per dispatch */
  uint32_t busy;        /* workers not yet finished with this job */
  bool quit;
  /* The job (written under mu before the generation bump). */
  pa_sim_pool_fn fn;
  void *arg;
  uint32_t n, chunk;
  atomic_uint next;     /* next item to take */
  uint64_t count;       /* the workers' counts, summed under mu */
  pa_sim_scratch scratch; /* the caller's */
  uint32_t nworkers;
  worker *w;
};

uint32_t pa_sim_threads_resolve(uint32_t threads, uint32_t robots) {
  if (threads > 0)
    return threads;
  if (robots <= 8)
    return 1;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 1)
    cpus = 1;
  return cpus > 8 ? 8 : (uint32_t)cpus;
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

static void *worker_main(void *arg) {
  worker *w = arg;
  pa_sim_pool *p = w->pool;
  uint64_t seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->quit && p->job == seen)
      pthread_cond_wait(&p->go, &p->mu);
    if (p->quit)
      break;
    seen = p->job;
    pthread_mutex_unlock(&p->mu);
    uint64_t c = drain(p, &w->scratch);
    pthread_mutex_lock(&p->mu);
    p->count += c;
    if (--p->busy == 0)
      pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
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
  p->w = calloc(p->nworkers, sizeof *p->w);
  if (!p->w || pa_sim_int_scratch_init(&p->scratch, m->beam_cap) != 0) {
    free(p->w);
    pa_sim_int_scratch_free(&p->scratch);
    free(p);
    goto oom;
  }
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->go, NULL);
  pthread_cond_init(&p->done, NULL);
  atomic_init(&p->next, 0);
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
  p->quit = true;
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  for (uint32_t i = 0; i < p->nworkers; i++) {
    pthread_join(p->w[i].th, NULL);
    pa_sim_int_scratch_free(&p->w[i].scratch);
  }
  pthread_cond_destroy(&p->go);
  pthread_cond_destroy(&p->done);
  pthread_mutex_destroy(&p->mu);
  pa_sim_int_scratch_free(&p->scratch);
  free(p->w);
  free(p);
}

uint64_t pa_sim_int_pool_run(pa_sim_pool *p, pa_sim_pool_fn fn, void *arg,
                             uint32_t n, uint32_t chunk) {
  pthread_mutex_lock(&p->mu);
  p->fn = fn;
  p->arg = arg;
  p->n = n;
  p->chunk = chunk ? chunk : 1;
  p->count = 0;
  atomic_store_explicit(&p->next, 0, memory_order_relaxed);
  p->busy = p->nworkers;
  p->job++;
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  uint64_t count = drain(p, &p->scratch);
  /* The mutex hand-off orders every worker's writes before our reads. */
  pthread_mutex_lock(&p->mu);
  while (p->busy > 0)
    pthread_cond_wait(&p->done, &p->mu);
  count += p->count;
  pthread_mutex_unlock(&p->mu);
  return count;
}

void pa_sim_int_pool_scan(pa_sim_pool *p, const pa_sim_model *m,
                          pa_sim_state *s, const uint32_t *ids, uint32_t n) {
  scan_job j = {m, s, ids};
  pa_sim_int_pool_run(p, scan_one, &j, n, 1);
}
