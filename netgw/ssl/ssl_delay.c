/* ssl_delay.c - vision latency (RealismConfigErForce.vision_delay): the
 * frames show the world as it was that long ago. While a delay is set the
 * vision timer keeps copies of the newest tick every few milliseconds in a
 * ring and sends the newest copy at least the delay old (none until one
 * is); without a delay nothing is kept. */
#define _GNU_SOURCE
#include "ssl_int.h"

#include <stdlib.h>
#include <string.h>

#define DELAY_SLOTS 512   /* copies kept: 2 s at one per 4 ms */
#define DELAY_EVERY 0.004 /* [s] between copies */

typedef struct delay_slot {
  double t; /* [s] Unix time it was the newest */
  size_t len, cap;
  uint8_t *buf; /* pa_tick + its robots' states */
} delay_slot;

struct ssl_delay {
  delay_slot s[DELAY_SLOTS];
  unsigned head, n; /* the next slot written; slots in use */
};

void pa_ssl_delay_free(pa_ssl_gw *x) {
  if (!x->dl)
    return;
  for (unsigned i = 0; i < DELAY_SLOTS; i++)
    free(x->dl->s[i].buf);
  free(x->dl);
  x->dl = NULL;
}

static void record(struct ssl_delay *d, const pa_tick *t, double now) {
  unsigned last = (d->head + DELAY_SLOTS - 1) % DELAY_SLOTS;
  if (d->n && now - d->s[last].t < DELAY_EVERY)
    return;
  size_t len = sizeof *t + (size_t)t->robot_count * sizeof(pa_robot_state);
  delay_slot *s = &d->s[d->head];
  if (s->cap < len) {
    uint8_t *b = realloc(s->buf, len);
    if (!b)
      return; /* a copy missed: an older one serves */
    s->buf = b;
    s->cap = len;
  }
  memcpy(s->buf, t, len);
  s->len = len;
  s->t = now;
  d->head = (d->head + 1) % DELAY_SLOTS;
  if (d->n < DELAY_SLOTS)
    d->n++;
}

const pa_tick *pa_ssl_delay_tick(pa_ssl_gw *x, const pa_tick *t, double now) {
  if (!(x->delay > 0)) {
    pa_ssl_delay_free(x);
    return t;
  }
  if (!x->dl && !(x->dl = calloc(1, sizeof *x->dl)))
    return t; /* out of memory: undelayed */
  struct ssl_delay *d = x->dl;
  record(d, t, now);
  for (unsigned k = 1; k <= d->n; k++) { /* newest first */
    const delay_slot *s = &d->s[(d->head + DELAY_SLOTS - k) % DELAY_SLOTS];
    if (now - s->t >= x->delay)
      return (const pa_tick *)s->buf;
  }
  return NULL; /* nothing old enough yet */
}
