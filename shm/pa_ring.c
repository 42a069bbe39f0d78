/* pa_ring.c - single-writer ring with a seqlock per slot and per-reader
 * wake-up semaphores. All shared fields are accessed with __atomic builtins. */
#define _GNU_SOURCE
#include "pa_shm_int.h"

#include "pa_assert.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define RING_MAGIC 0x474e4952u /* "RING" */
#define RING_MAX_SLOTS (1u << 24)
#define RING_MAX_RECORD (256u << 20)
#define RING_MAX_READERS 256u
#define SLOT_HDR 16u /* seq (8) + len (4) + pad (4) */

typedef struct ring_slot {
  uint64_t seq; /* record number held, 0 while the writer rewrites it */
  uint32_t len; /* [bytes] of the payload that follows */
  uint32_t pad;
} ring_slot;

typedef struct ring_reader {
  int32_t owner;  /* pid holding the entry, 0 = free */
  uint32_t active; /* 1 once sem is initialised: writer may post */
  uint64_t pad;
  sem_t sem;
  char pad2[64 - 16 - sizeof(sem_t)];
} ring_reader;

struct pa_ring {
  uint32_t magic; /* first: pa_shm_check_head reads it there */
  uint32_t slot_count;
  uint32_t max_record;
  uint32_t max_readers;
  uint64_t slot_size;   /* [bytes] per slot, multiple of 64 */
  uint64_t off_readers; /* from the ring */
  uint64_t off_slots;
  uint64_t total_bytes;
  char pad1[64 - 48];
  uint64_t head;        /* records written = seq of the newest; own line */
  uint32_t pending;     /* writer: 1 between write_begin and commit */
  uint32_t pending_len;
  uint32_t reader_hi;   /* entries [0, reader_hi) were ever registered: the
                         * writer looks at those only */
  char pad2[64 - 20];
};

_Static_assert(sizeof(ring_reader) == 64, "reader entry is one cache line");
_Static_assert(sizeof(struct pa_ring) == 128, "ring header is two lines");

void pa_ring_get_layout(pa_ring_layout *l) {
  l->size = sizeof(struct pa_ring);
  l->off_slot_count = offsetof(struct pa_ring, slot_count);
  l->off_max_record = offsetof(struct pa_ring, max_record);
  l->off_slot_size = offsetof(struct pa_ring, slot_size);
  l->off_off_slots = offsetof(struct pa_ring, off_slots);
  l->off_head = offsetof(struct pa_ring, head);
  l->slot_header = SLOT_HDR;
  l->off_slot_seq = offsetof(ring_slot, seq);
  l->off_slot_len = offsetof(ring_slot, len);
}

static uint64_t ring_size(uint32_t slot_count, uint32_t max_record,
                          uint32_t max_readers, uint64_t *slot_size,
                          uint64_t *off_readers, uint64_t *off_slots) {
  uint64_t ss = PA_ALIGN64((uint64_t)SLOT_HDR + max_record);
  uint64_t orr = sizeof(struct pa_ring);
  uint64_t os = PA_ALIGN64(orr + (uint64_t)max_readers * sizeof(ring_reader));
  if (slot_size) *slot_size = ss;
  if (off_readers) *off_readers = orr;
  if (off_slots) *off_slots = os;
  return os + ss * slot_count;
}

static bool sizes_ok(uint32_t slot_count, uint32_t max_record,
                     uint32_t max_readers) {
  return slot_count >= 2 && slot_count <= RING_MAX_SLOTS && max_record >= 1 &&
         max_record <= RING_MAX_RECORD && max_readers <= RING_MAX_READERS;
}

size_t pa_ring_bytes(uint32_t slot_count, uint32_t max_record,
                     uint32_t max_readers) {
  if (!sizes_ok(slot_count, max_record, max_readers))
    return 0;
  uint64_t n = ring_size(slot_count, max_record, max_readers, NULL, NULL, NULL);
  return n > SIZE_MAX ? 0 : (size_t)n;
}

int pa_ring_init(void *mem, uint32_t slot_count, uint32_t max_record,
                 uint32_t max_readers) {
  if (!mem || ((uintptr_t)mem & 63u) ||
      !sizes_ok(slot_count, max_record, max_readers))
    return PA_SHM_EINVAL;
  struct pa_ring *r = mem;
  memset(r, 0, sizeof *r);
  r->slot_count = slot_count;
  r->max_record = max_record;
  r->max_readers = max_readers;
  r->total_bytes = ring_size(slot_count, max_record, max_readers, &r->slot_size,
                             &r->off_readers, &r->off_slots);
  ring_reader *rd = (ring_reader *)((char *)mem + r->off_readers);
  memset(rd, 0, (size_t)max_readers * sizeof *rd);
  for (uint32_t i = 0; i < max_readers; i++)
    sem_init(&rd[i].sem, 1, 0);
  /* Slots stay as the creator's ftruncate left them (zero = empty): touching
   * them would allocate every tmpfs page up front. */
  __atomic_store_n(&r->magic, RING_MAGIC, __ATOMIC_RELEASE);
  return 0;
}

int pa_ring_check(const void *mem, size_t avail, char *err, size_t err_sz) {
  const struct pa_ring *r = mem;
  int rc =
      pa_shm_check_head("ring", mem, avail, sizeof *r, RING_MAGIC, err, err_sz);
  if (rc)
    return rc;
  if (!sizes_ok(r->slot_count, r->max_record, r->max_readers)) {
    pa_shm_errf(err, err_sz,
                "ring: sizes out of range (slot_count %" PRIu32
                ", max_record %" PRIu32 ", max_readers %" PRIu32 ")",
                r->slot_count, r->max_record, r->max_readers);
    return PA_SHM_EMISMATCH;
  }
  uint64_t ss, orr, os;
  uint64_t total = ring_size(r->slot_count, r->max_record, r->max_readers, &ss,
                             &orr, &os);
  if (r->slot_size != ss || r->off_readers != orr || r->off_slots != os ||
      r->total_bytes != total) {
    pa_shm_errf(err, err_sz,
                "ring: internal layout differs (slot size %" PRIu64
                ", expected %" PRIu64 "; total %" PRIu64 ", expected %" PRIu64
                ")",
                r->slot_size, ss, r->total_bytes, total);
    return PA_SHM_EMISMATCH;
  }
  if (total > avail) {
    pa_shm_errf(err, err_sz,
                "ring: needs %" PRIu64 " bytes, the segment gives it %zu",
                total, avail);
    return PA_SHM_EMISMATCH;
  }
  return 0;
}

uint32_t pa_ring_max_record(const pa_ring *r) { return r->max_record; }
uint32_t pa_ring_slot_count(const pa_ring *r) { return r->slot_count; }

uint64_t pa_ring_head(const pa_ring *r) {
  return __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
}

static ring_slot *slot_of(const pa_ring *r, uint64_t n) {
  PA_ASSERT(n >= 1); /* record numbers start at 1; 0 marks a busy slot */
  uint64_t i = (n - 1) % r->slot_count;
  return (ring_slot *)((char *)r + r->off_slots + i * r->slot_size);
}

static ring_reader *readers_of(const pa_ring *r) {
  return (ring_reader *)((char *)r + r->off_readers);
}

/* Marks slot of record n busy before its payload changes. */
static ring_slot *begin_slot(pa_ring *r, uint64_t n, uint32_t len) {
  ring_slot *s = slot_of(r, n);
  __atomic_store_n(&s->seq, 0, __ATOMIC_RELAXED);
  /* Orders the busy mark before every payload store (pairs with the
   * reader's acquire fence). */
  __atomic_thread_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&s->len, len, __ATOMIC_RELAXED);
  return s;
}

static int64_t publish(pa_ring *r, ring_slot *s, uint64_t n) {
  PA_ASSERT(n == __atomic_load_n(&r->head, __ATOMIC_RELAXED) + 1);
  PA_ASSERT(__atomic_load_n(&s->len, __ATOMIC_RELAXED) <= r->max_record);
  __atomic_store_n(&s->seq, n, __ATOMIC_RELEASE);
  __atomic_store_n(&r->head, n, __ATOMIC_RELEASE);
  ring_reader *rd = readers_of(r);
  uint32_t hi = __atomic_load_n(&r->reader_hi, __ATOMIC_ACQUIRE);
  if (hi > r->max_readers)
    hi = r->max_readers;
  for (uint32_t i = 0; i < hi; i++)
    if (__atomic_load_n(&rd[i].active, __ATOMIC_ACQUIRE))
      pa_shm_sem_post_once(&rd[i].sem);
  return (int64_t)n;
}

int64_t pa_ring_write(pa_ring *r, const void *rec, uint32_t len) {
  if (len > r->max_record || (len && !rec))
    return PA_SHM_EINVAL;
  __atomic_store_n(&r->pending, 0, __ATOMIC_RELAXED);
  uint64_t n = __atomic_load_n(&r->head, __ATOMIC_RELAXED) + 1;
  ring_slot *s = begin_slot(r, n, len);
  if (len)
    memcpy(s + 1, rec, len);
  return publish(r, s, n);
}

void *pa_ring_write_begin(pa_ring *r, uint32_t len) {
  if (len > r->max_record)
    return NULL;
  uint64_t n = __atomic_load_n(&r->head, __ATOMIC_RELAXED) + 1;
  ring_slot *s = begin_slot(r, n, len);
  r->pending_len = len;
  __atomic_store_n(&r->pending, 1, __ATOMIC_RELAXED);
  return s + 1;
}

int64_t pa_ring_write_commit(pa_ring *r) {
  if (!__atomic_load_n(&r->pending, __ATOMIC_RELAXED))
    return PA_SHM_EINVAL;
  __atomic_store_n(&r->pending, 0, __ATOMIC_RELAXED);
  uint64_t n = __atomic_load_n(&r->head, __ATOMIC_RELAXED) + 1;
  return publish(r, slot_of(r, n), n);
}

enum { SLOT_OK = 0, SLOT_GONE = 1 };

/* Copies record n if its slot still holds it, untorn. SLOT_GONE when it was
 * overwritten (before or during the copy) or left busy by a killed writer. */
static int slot_read(const pa_ring *r, uint64_t n, void *buf, uint32_t cap,
                     uint32_t *len) {
  const ring_slot *s = slot_of(r, n);
  if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != n)
    return SLOT_GONE;
  uint32_t l = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
  bool fits = l <= r->max_record && l <= cap;
  if (fits && l)
    memcpy(buf, s + 1, l);
  /* The copy must complete before the seq re-check (seqlock reader side). */
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  if (__atomic_load_n(&s->seq, __ATOMIC_RELAXED) != n || l > r->max_record)
    return SLOT_GONE;
  if (len)
    *len = l;
  return fits ? SLOT_OK : PA_SHM_ETOOBIG;
}

int pa_ring_read_latest(const pa_ring *r, void *buf, uint32_t cap,
                        uint32_t *len, uint64_t *seq) {
  for (int attempt = 0; attempt < 64; attempt++) {
    uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
    if (head == 0)
      return PA_SHM_EMPTY;
    uint64_t oldest = head > r->slot_count ? head - r->slot_count + 1 : 1;
    for (uint64_t n = head; n >= oldest; n--) {
      int rc = slot_read(r, n, buf, cap, len);
      if (rc == SLOT_OK) {
        if (seq)
          *seq = n;
        return 0;
      }
      if (rc == PA_SHM_ETOOBIG)
        return rc;
      if (__atomic_load_n(&r->head, __ATOMIC_ACQUIRE) != head)
        break; /* writer moved on: start again from the new head */
    }
  }
  return PA_SHM_EMPTY;
}

const void *pa_ring_peek(const pa_ring *r, uint64_t n, uint32_t *len) {
  uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
  if (n == 0 || n > head || head - n >= r->slot_count)
    return NULL;
  const ring_slot *s = slot_of(r, n);
  if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != n)
    return NULL;
  uint32_t l = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
  if (l > r->max_record)
    return NULL;
  *len = l;
  return s + 1;
}

bool pa_ring_still(const pa_ring *r, uint64_t n) {
  /* The caller's copies complete before the seq re-check (as slot_read). */
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return n >= 1 && __atomic_load_n(&slot_of(r, n)->seq, __ATOMIC_RELAXED) == n;
}

void pa_ring_unmap_slots(const pa_ring *r) {
  uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = (uintptr_t)r + r->off_slots,
            hi = (uintptr_t)r + r->total_bytes;
  lo = (lo + pg - 1) & ~(pg - 1); /* whole pages of the slots only */
  hi &= ~(pg - 1);
  if (hi > lo)
    (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

pa_ring_cursor pa_ring_cursor_now(const pa_ring *r) {
  pa_ring_cursor c = {pa_ring_head(r) + 1, 0};
  return c;
}

int pa_ring_read_next(const pa_ring *r, pa_ring_cursor *c, void *buf,
                      uint32_t cap, uint32_t *len, uint64_t *seq) {
  if (c->next == 0)
    c->next = 1;
  for (;;) {
    uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
    if (c->next > head)
      return PA_SHM_EMPTY;
    uint64_t oldest = head > r->slot_count ? head - r->slot_count + 1 : 1;
    if (c->next < oldest) {
      c->missed += oldest - c->next;
      c->next = oldest;
    }
    int rc = slot_read(r, c->next, buf, cap, len);
    if (rc == SLOT_OK) {
      if (seq)
        *seq = c->next;
      c->next++;
      return 0;
    }
    if (rc == PA_SHM_ETOOBIG)
      return rc; /* cursor stays: the caller may retry with a larger buffer */
    c->missed++; /* overwritten under us, or torn by a killed writer */
    c->next++;
  }
}

int pa_ring_reader_register(pa_ring *r) {
  ring_reader *rd = readers_of(r);
  int32_t me = (int32_t)getpid();
  for (int pass = 0; pass < 2; pass++) {
    for (uint32_t i = 0; i < r->max_readers; i++) {
      int32_t cur = __atomic_load_n(&rd[i].owner, __ATOMIC_ACQUIRE);
      /* First pass takes free entries; the second reclaims dead readers'. */
      if (pass == 0 ? cur != 0 : !pa_shm_pid_dead(cur))
        continue;
      if (!__atomic_compare_exchange_n(&rd[i].owner, &cur, me, false,
                                       __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        continue;
      __atomic_store_n(&rd[i].active, 0, __ATOMIC_RELEASE);
      sem_init(&rd[i].sem, 1, 0);
      __atomic_store_n(&rd[i].active, 1, __ATOMIC_RELEASE);
      uint32_t hi = __atomic_load_n(&r->reader_hi, __ATOMIC_RELAXED);
      while (hi < i + 1 &&
             !__atomic_compare_exchange_n(&r->reader_hi, &hi, i + 1, false,
                                          __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        ;
      return (int)i;
    }
  }
  return PA_SHM_EFULL;
}

void pa_ring_reader_unregister(pa_ring *r, int reader) {
  if (reader < 0 || (uint32_t)reader >= r->max_readers)
    return;
  ring_reader *e = &readers_of(r)[reader];
  __atomic_store_n(&e->active, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&e->owner, 0, __ATOMIC_RELEASE);
}

sem_t *pa_ring_reader_sem(pa_ring *r, int reader) {
  if (reader < 0 || (uint32_t)reader >= r->max_readers)
    return NULL;
  return &readers_of(r)[reader].sem;
}

int pa_ring_wait(pa_ring *r, int reader, int64_t timeout_ns) {
  sem_t *sem = pa_ring_reader_sem(r, reader);
  if (!sem)
    return PA_SHM_EINVAL;
  return pa_shm_sem_wait(sem, timeout_ns);
}

uint32_t pa_ring_max_readers(const pa_ring *r) { return r->max_readers; }

int32_t pa_ring_reader_owner(const pa_ring *r, uint32_t i) {
  if (i >= r->max_readers)
    return 0;
  return __atomic_load_n(&readers_of(r)[i].owner, __ATOMIC_ACQUIRE);
}
