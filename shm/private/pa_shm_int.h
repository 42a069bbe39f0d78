/* pa_shm_int.h - private to the pa_shm library: helpers shared by its files. */
#ifndef PA_SHM_INT_H
#define PA_SHM_INT_H

#include "pa_shm.h"

#include <stdarg.h>

#define PA_ALIGN64(x) (((uint64_t)(x) + 63u) & ~(uint64_t)63u)
/* Body of every segment starts here (header rounded to a cache line). */
#define PA_SHM_BODY_OFF PA_ALIGN64(sizeof(pa_shm_header))

/* Name of sizes[i] for a segment kind ("max_robots"), for error messages. */
const char *pa_shm_size_name(uint32_t kind, unsigned i, char *tmp,
                             size_t tmp_sz);
const char *pa_shm_kind_name(uint32_t kind);
/* snprintf into err when err is not NULL. */
void pa_shm_errf(char *err, size_t err_sz, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The checks a queue or ring header starts with: mem has room for head
 * bytes and starts with the magic want. 0, or PA_SHM_EMISMATCH with err
 * naming what ("ring"). */
int pa_shm_check_head(const char *what, const void *mem, size_t avail,
                      size_t head, uint32_t want, char *err, size_t err_sz);
/* kill(pid, 0) says the process is gone. */
bool pa_shm_pid_dead(int32_t pid);
/* PA_STACK_* of an instance's objects; *owner = the ctl's launcher pid (0 if
 * unknown). pa_stack_probe.c. */
int pa_stack_int_probe_owner(const char *instance, int32_t *owner);
/* Absolute CLOCK_MONOTONIC deadline timeout_ns from now. */
void pa_shm_deadline(struct timespec *ts, int64_t timeout_ns);
/* Post sem unless a post is already pending (keeps it at most 1). */
void pa_shm_sem_post_once(sem_t *sem);

/* Queue internals the stack validates against its record types. */
uint32_t pa_queue_record_size(const pa_queue *q);
uint32_t pa_queue_capacity(const pa_queue *q);
/* Ring reader slots (for pa-shmctl and tests of reclaim). */
uint32_t pa_ring_max_readers(const pa_ring *r);
/* Pid holding reader entry i, 0 if free. */
int32_t pa_ring_reader_owner(const pa_ring *r, uint32_t i);

/* Where a ring keeps what a lock-free reader needs (pa-shmctl layout). */
typedef struct pa_ring_layout {
  uint32_t size;           /* sizeof the ring header */
  uint32_t off_slot_count; /* uint32 */
  uint32_t off_max_record; /* uint32 */
  uint32_t off_slot_size;  /* uint64: bytes per slot */
  uint32_t off_off_slots;  /* uint64: first slot, from the ring */
  uint32_t off_head;       /* uint64: seq of the newest record */
  uint32_t slot_header;    /* bytes before a slot's record */
  uint32_t off_slot_seq;   /* uint64: record number held, 0 while written */
  uint32_t off_slot_len;   /* uint32: record bytes */
} pa_ring_layout;
void pa_ring_get_layout(pa_ring_layout *l);

#endif
