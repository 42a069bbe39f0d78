/* bridge.c - POSIX semaphores cannot be polled, so one small thread per
 * semaphore waits on it and signals an eventfd that the libevent loop
 * watches: the thread only wakes the loop, the loop reads the rings. A
 * direct bridge (no loop) runs its callback on the thread instead, after
 * each wake-up and at the deadline the callback returned. */
#define _GNU_SOURCE
#include "netgw_int.h"

#include "pa_util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#define BRIDGE_POLL_NS 250000000 /* stop flag check interval */

static void *bridge_main(void *arg) {
  pa_bridge *b = arg;
  int64_t due = 0; /* a direct callback's own deadline, 0 = none */
  if (b->tcb)
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* its deadlines are in us */
  while (!atomic_load_explicit(&b->stop, memory_order_acquire)) {
    int rc;
    if (b->active && !atomic_load_explicit(b->active, memory_order_acquire)) {
      /* Nobody listens: sleep until poked (the callback catches up then). */
      due = 0;
      rc = pa_shm_sem_wait(&b->poke, BRIDGE_POLL_NS);
      if (rc == 0 && !atomic_load_explicit(b->active, memory_order_acquire))
        continue;
    } else {
      int64_t wait = BRIDGE_POLL_NS;
      if (due) {
        int64_t left = due - pa_now_ns();
        wait = left < 0 ? 0 : left < wait ? left : wait;
      }
      rc = b->ring ? pa_ring_wait(b->ring, b->reader, wait)
                   : pa_shm_sem_wait(b->sem, wait);
    }
    if (b->tcb) {
      if (rc == 0 || (due && pa_now_ns() >= due))
        due = b->tcb(b->arg);
      continue;
    }
    if (rc != 0)
      continue;
    uint64_t one = 1;
    ssize_t w = write(b->efd, &one, sizeof one);
    (void)w; /* EAGAIN only when the counter is huge: the loop wakes anyway */
  }
  return NULL;
}

static void on_efd(evutil_socket_t fd, short what, void *arg) {
  (void)what;
  pa_bridge *b = arg;
  uint64_t v;
  if (read(fd, &v, sizeof v) == (ssize_t)sizeof v)
    b->wakes += v;
  b->cb(b->arg);
}

void pa_bridge_set_active_flag(pa_bridge *b, const atomic_bool *active) {
  if (!b->poke_init) {
    sem_init(&b->poke, 0, 0);
    b->poke_init = true;
  }
  b->active = active;
}

void pa_bridge_poke(pa_bridge *b) {
  if (b->poke_init)
    sem_post(&b->poke);
}

/* Clears all but what pa_bridge_set_active_flag set up before a start,
 * then sets what both kinds of bridge have. */
static void bridge_reset(pa_bridge *b, pa_ring *ring, int reader, void *arg) {
  b->started = false;
  b->efd = -1;
  b->ev = NULL;
  b->ring = ring;
  b->reader = reader;
  b->sem = NULL;
  b->cb = NULL;
  b->tcb = NULL;
  b->arg = arg;
  b->wakes = 0;
  atomic_init(&b->stop, false);
}

int pa_bridge_start(pa_bridge *b, struct event_base *base, pa_ring *ring,
                    int reader, sem_t *sem, void (*cb)(void *), void *arg,
                    char *err, size_t err_sz) {
  bridge_reset(b, ring, reader, arg);
  b->sem = sem;
  b->cb = cb;
  b->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (b->efd < 0) {
    snprintf(err, err_sz, "eventfd: %s", strerror(errno));
    return -1;
  }
  b->ev = event_new(base, b->efd, EV_READ | EV_PERSIST, on_efd, b);
  if (!b->ev || event_add(b->ev, NULL) != 0) {
    snprintf(err, err_sz, "event_add for a ring wake-up failed");
    pa_bridge_stop(b);
    return -1;
  }
  int rc = pthread_create(&b->thread, NULL, bridge_main, b);
  if (rc != 0) {
    snprintf(err, err_sz, "pthread_create: %s", strerror(rc));
    pa_bridge_stop(b);
    return -1;
  }
  b->started = true;
  return 0;
}

int pa_bridge_start_direct(pa_bridge *b, pa_ring *ring, int reader,
                           int64_t (*tcb)(void *), void *arg, char *err,
                           size_t err_sz) {
  bridge_reset(b, ring, reader, arg);
  b->tcb = tcb;
  int rc = pthread_create(&b->thread, NULL, bridge_main, b);
  if (rc != 0) {
    snprintf(err, err_sz, "pthread_create: %s", strerror(rc));
    return -1;
  }
  b->started = true;
  return 0;
}

void pa_bridge_stop(pa_bridge *b) {
  if (b->started) {
    atomic_store_explicit(&b->stop, true, memory_order_release);
    /* An extra post only costs the loop one empty drain; it ends the wait. */
    sem_t *s = b->ring ? pa_ring_reader_sem(b->ring, b->reader) : b->sem;
    if (s)
      sem_post(s);
    pa_bridge_poke(b);
    pthread_join(b->thread, NULL);
    b->started = false;
  }
  if (b->poke_init) {
    sem_destroy(&b->poke);
    b->poke_init = false;
    b->active = NULL; /* a restart must set it (and the poke) up again */
  }
  if (b->ev) {
    event_free(b->ev);
    b->ev = NULL;
  }
  if (b->efd >= 0) {
    close(b->efd);
    b->efd = -1;
  }
}
