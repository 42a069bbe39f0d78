/* pa_queue.c - bounded single-producer/single-consumer queue of fixed-size
 * records in shared memory; push never blocks, full is reported. */
#define _GNU_SOURCE
#include "pa_shm_int.h"

#include <inttypes.h>
#include <string.h>

#define QUEUE_MAGIC 0x55455551u /* "QUEU" */
#define QUEUE_MAX_CAPACITY (1u << 24)
#define QUEUE_MAX_RECORD (1u << 20)

struct pa_queue {
  uint32_t magic; /* first: pa_shm_check_head reads it there */
  uint32_t capacity;
  uint32_t record_size;
  uint32_t stride;      /* record_size rounded up to 8 */
  uint64_t total_bytes;
  char pad0[64 - 24];
  uint64_t head;        /* records ever pushed (producer); own line */
  char pad1[56];
  uint64_t tail;        /* records ever popped (consumer); own line */
  char pad2[56];
  sem_t sem;            /* posted on push, at most one pending */
  char pad3[64 - sizeof(sem_t)];
  /* records[capacity] */
};

_Static_assert(sizeof(struct pa_queue) == 256, "queue header is four lines");

static bool sizes_ok(uint32_t capacity, uint32_t record_size) {
  return capacity >= 1 && capacity <= QUEUE_MAX_CAPACITY && record_size >= 1 &&
         record_size <= QUEUE_MAX_RECORD;
}

static uint64_t queue_size(uint32_t capacity, uint32_t record_size) {
  uint64_t stride = ((uint64_t)record_size + 7u) & ~(uint64_t)7u;
  return PA_ALIGN64(sizeof(struct pa_queue) + stride * capacity);
}

size_t pa_queue_bytes(uint32_t capacity, uint32_t record_size) {
  if (!sizes_ok(capacity, record_size))
    return 0;
  return (size_t)queue_size(capacity, record_size);
}

int pa_queue_init(void *mem, uint32_t capacity, uint32_t record_size) {
  if (!mem || ((uintptr_t)mem & 63u) || !sizes_ok(capacity, record_size))
    return PA_SHM_EINVAL;
  struct pa_queue *q = mem;
  memset(q, 0, sizeof *q);
  q->capacity = capacity;
  q->record_size = record_size;
  q->stride = (record_size + 7u) & ~7u;
  q->total_bytes = queue_size(capacity, record_size);
  sem_init(&q->sem, 1, 0);
  __atomic_store_n(&q->magic, QUEUE_MAGIC, __ATOMIC_RELEASE);
  return 0;
}

int pa_queue_check(const void *mem, size_t avail, char *err, size_t err_sz) {
  const struct pa_queue *q = mem;
  int rc = pa_shm_check_head("queue", mem, avail, sizeof *q, QUEUE_MAGIC, err,
                             err_sz);
  if (rc)
    return rc;
  if (!sizes_ok(q->capacity, q->record_size) ||
      q->stride != ((q->record_size + 7u) & ~7u) ||
      q->total_bytes != queue_size(q->capacity, q->record_size)) {
    pa_shm_errf(err, err_sz,
                "queue: inconsistent sizes (capacity %" PRIu32
                ", record size %" PRIu32 ")",
                q->capacity, q->record_size);
    return PA_SHM_EMISMATCH;
  }
  if (q->total_bytes > avail) {
    pa_shm_errf(err, err_sz,
                "queue: needs %" PRIu64 " bytes, the segment gives it %zu",
                q->total_bytes, avail);
    return PA_SHM_EMISMATCH;
  }
  return 0;
}

static char *rec_at(const pa_queue *q, uint64_t pos) {
  return (char *)q + sizeof *q + (pos % q->capacity) * q->stride;
}

/* The producer's half of every push: n records (stride bytes apart) copied
 * in and published by one head store, all or none; no post. */
static int store(pa_queue *q, const void *recs, size_t n, size_t stride) {
  uint64_t h = __atomic_load_n(&q->head, __ATOMIC_RELAXED);
  uint64_t t = __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE);
  if (n > q->capacity || h - t > q->capacity - n)
    return PA_SHM_EFULL;
  for (size_t i = 0; i < n; i++)
    memcpy(rec_at(q, h + i), (const char *)recs + i * stride, q->record_size);
  __atomic_store_n(&q->head, h + n, __ATOMIC_RELEASE);
  return 0;
}

int pa_queue_push(pa_queue *q, const void *rec) {
  return pa_queue_push_many(q, rec, 1, q->record_size);
}

int pa_queue_push_many(pa_queue *q, const void *recs, size_t n, size_t stride) {
  /* One head store: a polling consumer takes them all in one pass instead
   * of racing the producer record by record. */
  int rc = store(q, recs, n, stride);
  if (rc == 0 && n > 0)
    pa_shm_sem_post_once(&q->sem);
  return rc;
}

int pa_queue_push_watched(pa_queue *q, const void *rec,
                          const int64_t *watch_until) {
  int rc = store(q, rec, 1, q->record_size);
  if (rc)
    return rc;
  /* The head before the deadline: a consumer that stores 0 and then looks
   * at the queue sees this record, or this load sees its 0. */
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  int64_t until = __atomic_load_n(watch_until, __ATOMIC_SEQ_CST);
  int64_t now = until ? pa_now_ns() : 0;
  /* Another process wrote the deadline: one further ahead than any poll
   * lasts is not believed (the post is what a blocked reader needs). */
  if (until == 0 || now >= until || until - now > PA_QUEUE_WATCH_MAX_NS)
    pa_shm_sem_post_once(&q->sem);
  return 0;
}

int64_t pa_queue_peek(const pa_queue *q, void *rec) {
  uint64_t t = __atomic_load_n(&q->tail, __ATOMIC_RELAXED);
  uint64_t h = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);
  if (h <= t)
    return PA_SHM_EMPTY;
  if (rec)
    memcpy(rec, rec_at(q, t), q->record_size);
  return (int64_t)t;
}

void pa_queue_pop(pa_queue *q) {
  uint64_t t = __atomic_load_n(&q->tail, __ATOMIC_RELAXED);
  uint64_t h = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);
  if (t < h)
    __atomic_store_n(&q->tail, t + 1, __ATOMIC_RELEASE);
}

uint32_t pa_queue_count(const pa_queue *q) {
  uint64_t t = __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE);
  uint64_t h = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);
  if (h <= t)
    return 0;
  return h - t > q->capacity ? q->capacity : (uint32_t)(h - t);
}

uint32_t pa_queue_space(const pa_queue *q) {
  return q->capacity - pa_queue_count(q);
}

int pa_queue_wait(pa_queue *q, int64_t timeout_ns) {
  int64_t deadline = timeout_ns < 0 ? 0 : pa_now_ns() + timeout_ns;
  for (;;) {
    if (pa_queue_count(q) > 0)
      return 0;
    int64_t left = -1;
    if (timeout_ns >= 0) {
      left = deadline - pa_now_ns();
      if (left <= 0)
        return PA_SHM_ETIMEDOUT;
    }
    int rc = pa_shm_sem_wait(&q->sem, left);
    if (rc == PA_SHM_ESYS)
      return rc;
    /* A stale post (already consumed record) loops back to the count check. */
  }
}

sem_t *pa_queue_sem(pa_queue *q) { return &q->sem; }

uint32_t pa_queue_record_size(const pa_queue *q) { return q->record_size; }
uint32_t pa_queue_capacity(const pa_queue *q) { return q->capacity; }
