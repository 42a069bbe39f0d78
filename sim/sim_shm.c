/* sim_shm.c - pa-sim's side of the shared memory: map, world snapshot, state
 * and scan rings, and resume after a restart (the loop that consumes the
 * command queue is sim_run.c). */
#define _GNU_SOURCE
#include "pa_sim.h"
#include "sim_int.h"
#include "sim_ssl_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "pa_util.h"

/* The model's cells from the map segment just published: its own copy is
 * freed (a byte a cell: 4 MB for a 2000x2000 map), and a fresh read-only
 * mapping holds no pages until read. Keeps the copy if anything differs. */
static void share_cells(pa_sim_model *m, pa_stack *st) {
  pa_shm_seg seg;
  const pa_map_block *mb;
  const int8_t *cells;
  char aerr[256];
  if (pa_stack_map_attach(st, &seg, &mb, &cells, aerr, sizeof aerr) != 0)
    return;
  const pa_grid *g = &m->grid;
  /* only pa-sim publishes: the segment holding the map generation it just
   * wrote holds these cells */
  if (mb->gen != __atomic_load_n(&st->ctl->map_gen, __ATOMIC_ACQUIRE) ||
      mb->width != g->width || mb->height != g->height ||
      mb->resolution != g->resolution || mb->origin_x != g->origin_x ||
      mb->origin_y != g->origin_y || mb->origin_yaw != g->origin_yaw ||
      pa_map_block_occupied_min(mb) != g->occupied_min ||
      mprotect(seg.base, seg.size, PROT_READ) != 0) {
    pa_shm_detach(&seg);
    return;
  }
  /* the header's read faulted 64 KiB of cells in (fault-around): out */
  (void)madvise(seg.base, seg.size, MADV_DONTNEED);
  if (m->cells_seg.base)
    pa_shm_detach(&m->cells_seg);
  else
    free(m->grid.cells);
  m->cells_seg = seg;
  m->grid.cells = (int8_t *)(uintptr_t)cells;
}

int pa_sim_shm_publish_map(pa_sim_model *m, pa_stack *st, char *err,
                           size_t err_sz) {
  const pa_grid *g = &m->grid;
  if (pa_stack_map_publish(st, g->width, g->height, g->resolution, g->origin_x,
                           g->origin_y, g->origin_yaw, g->cells,
                           g->occupied_min, err, err_sz) != 0)
    return -1;
  share_cells(m, st);
  return 0;
}

void pa_sim_shm_publish_world(const pa_sim_state *s, pa_stack *st) {
  pa_ctl *ctl = st->ctl;
  pa_stack_world_begin(st);
  uint32_t nr = s->robot_count <= ctl->def.max_robots ? s->robot_count
                                                      : ctl->def.max_robots;
  uint32_t no = s->obstacle_count <= ctl->def.max_obstacles
                    ? s->obstacle_count
                    : ctl->def.max_obstacles;
  memcpy(st->robots, s->info, nr * sizeof *s->info);
  for (uint32_t i = nr; i < ctl->def.max_robots && st->robots[i].active; i++)
    st->robots[i].active = 0;
  memcpy(st->obstacles, s->obs, no * sizeof *s->obs);
  for (uint32_t i = no; i < ctl->def.max_obstacles && st->obstacles[i].active;
       i++)
    st->obstacles[i].active = 0;
  ctl->robot_count = nr;
  ctl->obstacle_count = no;
  pa_stack_world_end(st);
}

/* One record, header then body, into ring r; false if it does not fit. */
static bool ring_put(pa_ring *r, const void *head, size_t head_n,
                     const void *body, size_t body_n) {
  uint8_t *slot = pa_ring_write_begin(r, (uint32_t)(head_n + body_n));
  if (!slot)
    return false;
  memcpy(slot, head, head_n);
  memcpy(slot + head_n, body, body_n);
  pa_ring_write_commit(r);
  return true;
}

/* A large record's body copied in parts by the scan threads too (the state
 * record of 1000 robots is 152 kB: memory bound, one thread writes it at
 * about half the speed of two). */
#define PUT_PART (32 * 1024)
typedef struct put_job {
  uint8_t *dst;
  const uint8_t *src;
  size_t n;
} put_job;

static void put_part(void *arg, uint32_t i, pa_sim_scratch *k,
                     uint64_t *count) {
  (void)k;
  (void)count;
  const put_job *j = arg;
  size_t a = (size_t)i * PUT_PART,
         b = a + PUT_PART < j->n ? a + PUT_PART : j->n;
  memcpy(j->dst + a, j->src + a, b - a);
}

/* ring_put with the body in parts on the pool's threads (p may be NULL). */
static bool ring_put_pool(pa_sim_pool *p, pa_ring *r, const void *head,
                          size_t head_n, const void *body, size_t body_n) {
  if (!p || body_n < 2 * PUT_PART)
    return ring_put(r, head, head_n, body, body_n);
  uint8_t *slot = pa_ring_write_begin(r, (uint32_t)(head_n + body_n));
  if (!slot)
    return false;
  memcpy(slot, head, head_n);
  put_job j = {slot + head_n, body, body_n};
  pa_sim_int_pool_run_short(p, put_part, &j,
                            (uint32_t)((body_n + PUT_PART - 1) / PUT_PART), 1);
  pa_ring_write_commit(r);
  return true;
}

static void write_tick(const pa_sim_model *m, const pa_sim_state *s,
                       pa_stack *st, int64_t wall_ns) {
  uint32_t n = s->robot_count;
  pa_tick t;
  memset(&t, 0, sizeof t);
  t.tick = s->tick;
  t.sim_time = s->sim_time;
  t.wall_ns = wall_ns;
  t.robot_count = n;
  t.flags = s->paused ? PA_TICK_PAUSED : 0;
  t.speed = s->speed;
  t.world_gen = st->ctl->world_gen;
  t.scan_phase = (uint32_t)(s->scan_tick0 % m->ticks_per_scan);
  pa_sim_ssl_tick_fill(s, &t);
  if (!ring_put_pool(pa_sim_int_pool_between(s), st->state, &t, sizeof t, s->rs,
                     n * sizeof(pa_robot_state)))
    pa_warn("state record of %u robots does not fit the state ring", n);
}

void pa_sim_int_scan_stamp(const pa_sim_model *m, const pa_sim_state *s,
                           uint32_t id, pa_sim_scan_stamp *t) {
  const pa_robot_info *ri = &s->info[id];
  const pa_robot_state *r = &s->rs[id];
  *t = (pa_sim_scan_stamp){
      s->tick, s->sim_time, r->x, r->y, r->theta, id, r->scan_seq,
      ri->laser_beams < m->beam_cap ? ri->laser_beams : m->beam_cap,
      ri->laser_range_min, ri->laser_range_max};
}

static void write_scan(const pa_sim_state *s, pa_stack *st,
                       const pa_sim_scan_stamp *t, const float *ranges,
                       int64_t wall_ns) {
  uint32_t beams = t->beams;
  pa_scan h;
  memset(&h, 0, sizeof h);
  h.tick = t->tick;
  h.sim_time = t->sim_time;
  h.wall_ns = wall_ns;
  h.robot = t->robot;
  h.seq = t->seq;
  h.x = t->x;
  h.y = t->y;
  h.theta = t->theta;
  h.angle_min = (float)-M_PI;
  h.angle_increment = (float)(2.0 * M_PI / beams);
  h.range_min = t->range_min;
  h.range_max = t->range_max;
  h.count = beams;
  if (ring_put(st->scan, &h, sizeof h, ranges, beams * sizeof(float)) &&
      t->robot < s->cap_robots)
    s->scan_rec[t->robot] =
        (pa_sim_scan_ref){.rec = pa_ring_head(st->scan),
                          .count = beams}; /* pa-sim alone writes */
  pa_sim_int_rec_scan(s->rec, &h, ranges);
}

/* Overlapped scans that completed since the last records. */
static void write_late(const pa_sim_model *m, pa_sim_state *s, pa_stack *st,
                       int64_t wall_ns) {
  pa_sim_late *L = s->late;
  if (!L)
    return;
  for (uint32_t i = 0; i < L->ready_count; i++)
    write_scan(s, st, &L->ready[i], L->ready_buf[i], wall_ns);
  L->ready_count = 0;
  size_t beams = m->beam_cap ? m->beam_cap : 1;
  for (uint32_t i = 0; i < L->bready_n; i++)
    write_scan(s, st, &L->batch_stamp[L->bready_set][i],
               L->batch_buf[L->bready_set] + i * beams, wall_ns);
  L->bready_n = 0;
}

/* Overlapped scans that completed since, then (tick: at the tick's own
 * publish) this tick's scans. */
static void write_scans(const pa_sim_model *m, pa_sim_state *s, pa_stack *st,
                        int64_t wall_ns, bool tick) {
  write_late(m, s, st, wall_ns);
  for (uint32_t k = 0; tick && k < s->scan_due_count; k++) {
    uint32_t id = s->scan_due[k];
    pa_sim_scan_stamp t;
    pa_sim_int_scan_stamp(m, s, id, &t);
    write_scan(s, st, &t, s->ranges + (size_t)id * m->beam_cap, wall_ns);
  }
}

void pa_sim_shm_publish_late(const pa_sim_model *m, pa_sim_state *s,
                             pa_stack *st) {
  write_late(m, s, st, pa_now_ns());
}

static void publish(const pa_sim_model *m, pa_sim_state *s, pa_stack *st,
                    int64_t wall_ns, bool tick) {
  if (s->world_dirty) {
    pa_sim_shm_publish_world(s, st);
    s->world_dirty = false;
  }
  write_tick(m, s, st, wall_ns);
  pa_sim_int_rec_tick(s);
  write_scans(m, s, st, wall_ns, tick);
}

/* Never the last tick's scans again: their records are out (a second
 * would carry the same seq, and the pose the command left, with the ranges
 * cast before it). */
void pa_sim_shm_publish_state(const pa_sim_model *m, pa_sim_state *s,
                              pa_stack *st) {
  publish(m, s, st, pa_now_ns(), false);
}

void pa_sim_shm_publish_tick_at(const pa_sim_model *m, pa_sim_state *s,
                                pa_stack *st, int64_t wall_ns) {
  publish(m, s, st, wall_ns, true);
}

int pa_sim_shm_resume_map(pa_sim_model *m, pa_sim_state *s, pa_stack *st,
                          char *err, size_t err_sz) {
  pa_shm_seg seg;
  const pa_map_block *mb;
  const int8_t *cells;
  char aerr[256];
  if (pa_stack_map_attach(st, &seg, &mb, &cells, aerr, sizeof aerr) != 0)
    return 0; /* none published (or unusable): the flags' map stands */
  const pa_grid *g = &m->grid;
  int8_t occ = pa_map_block_occupied_min(mb);
  size_t n = (size_t)mb->width * mb->height;
  if (mb->width == g->width && mb->height == g->height &&
      mb->resolution == g->resolution && mb->origin_x == g->origin_x &&
      mb->origin_y == g->origin_y && mb->origin_yaw == g->origin_yaw &&
      occ == g->occupied_min && !memcmp(cells, g->cells, n)) {
    pa_shm_detach(&seg);
    return 0;
  }
  /* A map set at run time (set_map, generate_map): the world lives on it. */
  pa_grid sg = {.width = mb->width, .height = mb->height,
                .resolution = mb->resolution, .origin_x = mb->origin_x,
                .origin_y = mb->origin_y, .origin_yaw = mb->origin_yaw,
                .cells = (int8_t *)(uintptr_t)cells, .occupied_min = occ};
  uint32_t moved = 0;
  int rc = pa_sim_set_grid(m, s, &sg, &moved, err, err_sz);
  pa_shm_detach(&seg);
  if (rc != 0)
    return -1;
  if (moved)
    pa_warn("resumed map: %u robot%s did not fit and moved", moved,
            moved == 1 ? "" : "s");
  return 1;
}

/* Each robot's newest scan record still in the ring (newest first), as a
 * restarted pa-sim's observation blocks find them. */
static void find_scans(pa_sim_state *s, pa_stack *st) {
  uint64_t head = pa_ring_head(st->scan), slots = pa_ring_slot_count(st->scan);
  for (uint64_t k = head; k >= 1 && head - k < slots; k--) {
    pa_scan h;
    if (pa_sim_scan_record(st->scan, k, &h) && h.robot < s->cap_robots &&
        !s->scan_rec[h.robot].rec)
      s->scan_rec[h.robot] = (pa_sim_scan_ref){.rec = k, .count = h.count};
  }
}

int pa_sim_shm_resume(const pa_sim_model *m, pa_sim_state *s, pa_stack *st,
                      char *err, size_t err_sz) {
  pa_ctl *ctl = st->ctl;
  if (pa_ring_head(st->state) == 0)
    return 0;
  /* World snapshot (robots' static properties, obstacles). */
  uint32_t nr = 0, no = 0;
  for (int attempt = 0;; attempt++) {
    uint64_t seq = pa_stack_world_read_begin(st);
    nr = ctl->robot_count;
    no = ctl->obstacle_count;
    if (nr > s->cap_robots)
      nr = s->cap_robots;
    if (no > s->cap_obstacles)
      no = s->cap_obstacles;
    memcpy(s->info, st->robots, nr * sizeof *s->info);
    memcpy(s->obs, st->obstacles, no * sizeof *s->obs);
    if (!pa_stack_world_read_retry(st, seq))
      break;
    if (attempt > 1000) {
      /* A writer killed inside the seqlock leaves it odd: take the copy. */
      pa_warn("world snapshot was left mid-update; resuming from it anyway");
      break;
    }
  }
  /* A world without robots resumes too: its obstacles and agents, its
   * time (its robots were removed: none comes back from the world file). */
  uint32_t cap = pa_ring_max_record(st->state);
  uint8_t *buf = malloc(cap);
  if (!buf) {
    snprintf(err, err_sz, "out of memory");
    return -1;
  }
  uint32_t len = 0;
  uint64_t seq = 0;
  int rc = pa_ring_read_latest(st->state, buf, cap, &len, &seq);
  if (rc != 0) {
    free(buf);
    return 0; /* nothing readable: start fresh */
  }
  pa_tick t;
  if (len < sizeof t) {
    free(buf);
    snprintf(err, err_sz, "state record %llu is %u bytes, too short",
             (unsigned long long)seq, len);
    return -1;
  }
  memcpy(&t, buf, sizeof t);
  if ((uint64_t)len != sizeof t + (uint64_t)t.robot_count * sizeof(pa_robot_state) ||
      !isfinite(t.sim_time) || !isfinite(t.speed) || t.speed < 0) {
    free(buf);
    snprintf(err, err_sz, "state record %llu is malformed (%u robots in %u "
             "bytes)", (unsigned long long)seq, t.robot_count, len);
    return -1;
  }
  s->tick = t.tick;
  s->sim_time = t.sim_time;
  /* The scan schedule as it ran (same residue; never above the tick). */
  s->scan_tick0 = t.scan_phase % m->ticks_per_scan;
  if (s->scan_tick0 > s->tick)
    s->scan_tick0 = 0;
  s->paused = (t.flags & PA_TICK_PAUSED) != 0;
  s->speed = t.speed;
  /* Every record checked before anything is installed. */
  for (uint32_t i = 0; i < nr; i++) {
    pa_robot_info *ri = &s->info[i];
    ri->name[sizeof ri->name - 1] = 0;
    char why[160];
    if (ri->active &&
        pa_sim_int_check_robot(ri, m->beam_cap, why, sizeof why) != 0) {
      free(buf);
      snprintf(err, err_sz, "world snapshot: robot %u is malformed: %s", i,
               why);
      return -1;
    }
  }
  for (uint32_t i = 0; i < no; i++) {
    s->obs[i].name[sizeof s->obs[i].name - 1] = 0;
    char why[160];
    if (s->obs[i].active &&
        pa_sim_int_check_obstacle(&s->obs[i], why, sizeof why) != 0) {
      free(buf);
      snprintf(err, err_sz, "world snapshot: obstacle %u is malformed: %s", i,
               why);
      return -1;
    }
  }
  /* The world as the segment holds it (copied into s->info / s->obs above,
   * generations included); a robot spawned after the last record was
   * written starts at its spawn pose. */
  pa_sim_world_src w = {.robots = s->info,
                        .robot_count = nr,
                        .states = (const pa_robot_state *)(buf + sizeof t),
                        .state_count = t.robot_count,
                        .obstacles = s->obs,
                        .obstacle_count = no};
  pa_sim_int_world_install(m, s, &w);
  pa_sim_ssl_resume(s, &t); /* the ball continues where it was */
  free(buf);
  find_scans(s, st);
  return 1;
}
