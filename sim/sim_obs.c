/* sim_obs.c - the observation segment: after a STEP with PA_CMDF_OBS, the
 * observed robots' states and newest scans as one PAB1 block (the block
 * step_batch's binary reply holds), written by the scan threads while the
 * step's scans are still in the caches. A same-host client then copies one
 * hot block instead of gathering 1,000 cold ring slots. */
#include "pa_sim.h"
#include "pa_shm.h"
#include "sim_int.h"

#include <math.h>
#include <string.h>

#define OBS_CHUNK 16 /* robots a pool item writes */

typedef struct obs_job {
  const pa_sim_state *s;
  const pa_ring *scan;
  uint32_t first, count, beams;
  uint32_t sectors; /* each scan as sectors (beams of them); 0: as cast */
  char *rows, *ranges;
} obs_job;

const float *pa_sim_scan_record(const pa_ring *scan, uint64_t rec, pa_scan *h) {
  uint32_t len;
  const char *p = rec ? pa_ring_peek(scan, rec, &len) : NULL;
  if (!p || len < sizeof *h)
    return NULL; /* none, or lapped (a robot that stopped scanning) */
  memcpy(h, p, sizeof *h);
  if (sizeof *h + (uint64_t)h->count * 4 > len)
    return NULL;
  return (const float *)(const void *)(p + sizeof *h);
}

/* Robot id's newest scan in the ring (header into *h), or NULL. pa-sim is
 * the ring's only writer and writes nothing meanwhile: no torn record. */
static const float *newest_scan(const pa_sim_state *s, const pa_ring *scan,
                                uint32_t id, pa_scan *h) {
  const float *r = pa_sim_scan_record(scan, s->scan_rec[id].rec, h);
  return r && h->robot == id ? r : NULL;
}

/* Robot first + i's row and ranges (src: its newest scan, header h). */
static void obs_one(const obs_job *j, uint32_t i, const float *src,
                    const pa_scan *h) {
  const pa_sim_state *s = j->s;
  uint32_t id = j->first + i;
  bool live = id < s->robot_count && s->info[id].active;
  double f[PA_OBS_FIELDS];
  pa_obs_row(f, live ? &s->rs[id] : NULL, src ? h : NULL,
             live ? s->info[id].laser_range_max : 0);
  pa_obs_ranges((float *)(void *)(j->ranges + (size_t)i * j->beams * 4),
                j->beams, f, src, src ? h->count : 0, j->sectors);
  memcpy(j->rows + (size_t)i * sizeof f, f, sizeof f);
}

/* Pool item c: robots [c * OBS_CHUNK, + OBS_CHUNK). The scans were cast
 * ticks ago, on either core, in ring slots in no robot order: their
 * records are found first (independent misses, in flight together), then
 * each robot's ranges are fetched while the one before is written. */
static void obs_item(void *arg, uint32_t c, pa_sim_scratch *k,
                     uint64_t *count) {
  (void)k;
  (void)count;
  const obs_job *j = arg;
  const pa_sim_state *s = j->s;
  uint32_t i0 = c * OBS_CHUNK, n = j->count - i0;
  n = n < OBS_CHUNK ? n : OBS_CHUNK;
  pa_scan h[OBS_CHUNK];
  const float *src[OBS_CHUNK];
  for (uint32_t q = 0; q < n; q++) {
    uint32_t id = j->first + i0 + q;
    bool live = id < s->robot_count && s->info[id].active;
    src[q] = live ? newest_scan(s, j->scan, id, &h[q]) : NULL;
  }
  for (uint32_t q = 0; q < n; q++) {
    if (q + 1 < n && src[q + 1])
      pa_obs_prefetch(src[q + 1], h[q + 1].count);
    obs_one(j, i0 + q, src[q], &h[q]);
  }
}

uint64_t pa_sim_obs_write(pa_sim_state *s, pa_stack *st, pa_obs_seg *o,
                          uint32_t first, uint32_t count, uint32_t sectors) {
  if (!o || count == 0 || first >= s->cap_robots ||
      count > s->cap_robots - first)
    return 0;
  /* The widest newest scan still in the ring sets the beam count, as the
   * TCP block's (from the refs: no cold slot is read twice). */
  uint64_t head = pa_ring_head(st->scan), slots = pa_ring_slot_count(st->scan);
  uint32_t w = 0;
  for (uint32_t i = 0; i < count; i++) {
    uint32_t id = first + i;
    const pa_sim_scan_ref *r = &s->scan_rec[id];
    if (id < s->robot_count && s->info[id].active && r->rec &&
        head - r->rec < slots && r->count > w)
      w = r->count;
  }
  if (sectors && w) /* any scan: every row `sectors` wide */
    w = sectors;
  uint64_t bytes =
      PA_OBS_HEADER + (uint64_t)count * (PA_OBS_FIELDS * 8 + 4ull * w);
  if (bytes > o->capacity)
    return 0; /* cannot happen: beams <= max_beams, robots <= max_robots */
  uint64_t seq = o->seq + 1; /* odd: being written */
  __atomic_store_n(&o->seq, seq, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  char *b = (char *)(o + 1); /* off_block: the block follows the header */
  uint32_t hdr[3] = {count, w, PA_OBS_FIELDS};
  memcpy(b, PA_OBS_MAGIC, 4);
  memcpy(b + 4, hdr, sizeof hdr);
  obs_job j = {.s = s,
               .scan = st->scan,
               .first = first,
               .count = count,
               .beams = w,
               .sectors = sectors,
               .rows = b + PA_OBS_HEADER,
               .ranges = b + PA_OBS_HEADER + (size_t)count * PA_OBS_FIELDS * 8};
  /* One chunk's worth on this thread: a worker's wake-up (and its watch
   * for more work after) costs more than a few robots' rows. */
  uint32_t chunks = (count + OBS_CHUNK - 1) / OBS_CHUNK;
  if (s->pool && chunks > 1)
    pa_sim_int_pool_run(s->pool, obs_item, &j, chunks, 1);
  else
    for (uint32_t c = 0; c < chunks; c++)
      obs_item(&j, c, NULL, NULL);
  o->tick = s->tick;
  o->first = first;
  o->count = count;
  o->bytes = bytes;
  __atomic_store_n(&o->seq, seq + 1, __ATOMIC_RELEASE); /* even: done */
  return seq + 1;
}
