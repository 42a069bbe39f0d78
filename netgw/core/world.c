/* world.c - the gateway's read-only views of the instance: the world
 * snapshot (robots, obstacles), the latest state record, the map segment and
 * whether pa-sim is alive to apply a command. */
#define _GNU_SOURCE
#include "netgw_int.h"

#include "pa_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <event2/buffer.h>

/* Robots and obstacles both start with their name and active flag. */
#define ENTRY_NAME_SZ sizeof(((pa_robot_info *)0)->name)
_Static_assert(ENTRY_NAME_SZ == sizeof(((pa_obstacle_info *)0)->name) &&
                   offsetof(pa_robot_info, name) == 0 &&
                   offsetof(pa_obstacle_info, name) == 0 &&
                   offsetof(pa_robot_info, active) ==
                       offsetof(pa_obstacle_info, active),
               "world entries share their head");

static bool entry_active(const char *e) {
  uint32_t active;
  memcpy(&active, e + offsetof(pa_robot_info, active), sizeof active);
  return active != 0;
}

/* Copies into info (sz bytes) the active entry of the world table at base
 * named name, or at index id when name is NULL, under the world seqlock.
 * count is the table's used length (at most max). 0, -1 when there is no
 * such entry, or PA_GW_BUSY. */
static int find_entry(pa_netgw *g, const void *base, size_t sz,
                      const uint32_t *count, uint32_t max, const char *name,
                      long id, void *info, uint32_t *idx) {
  const char *b = base;
  for (int tries = 0; tries < 1000; tries++) {
    uint64_t s = pa_stack_world_read_begin(g->st);
    if (s & 1u) /* left mid-update for 50 ms: its writer died */
      return PA_GW_BUSY;
    long found = -1;
    uint32_t n = __atomic_load_n(count, __ATOMIC_ACQUIRE);
    if (n > max)
      n = max;
    if (name) {
      for (uint32_t i = 0; i < n && found < 0; i++)
        if (entry_active(b + i * sz) &&
            !strncmp(b + i * sz, name, ENTRY_NAME_SZ))
          found = (long)i;
    } else if (id >= 0 && (uint64_t)id < max && entry_active(b + id * sz)) {
      found = id;
    }
    if (found >= 0)
      memcpy(info, b + found * sz, sz);
    if (pa_stack_world_read_retry(g->st, s))
      continue;
    if (found < 0)
      return -1;
    ((char *)info)[ENTRY_NAME_SZ - 1] = '\0';
    *idx = (uint32_t)found;
    return 0;
  }
  return PA_GW_BUSY; /* rewritten under every try */
}

int pa_gw_robot(pa_netgw *g, const char *name, long id, pa_robot_info *info,
                uint32_t *idx) {
  return find_entry(g, g->st->robots, sizeof *info, &g->ctl->robot_count,
                    g->ctl->def.max_robots, name, id, info, idx);
}

int pa_gw_obstacle(pa_netgw *g, const char *name, pa_obstacle_info *info,
                   uint32_t *idx) {
  return find_entry(g, g->st->obstacles, sizeof *info, &g->ctl->obstacle_count,
                    g->ctl->def.max_obstacles, name, -1, info, idx);
}

/* The kernel's read fault-around maps this much of a file (shm) mapping
 * around each faulting page (fault_around_bytes, 64 KiB by default). */
#define FAULT_AROUND_BYTES (64u << 10)

/* Unmaps (from this process only: the segment keeps its pages) the
 * fault-around window of a state record peeked at. Without it, the 20 Hz
 * header peeks of an idle gateway map 64 KiB of each slot in turn: 1.7 MB
 * of the 4 MB ring at 1000 robots. */
static void drop_peeked(const pa_shm_seg *seg, const void *p) {
  uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(FAULT_AROUND_BYTES - 1);
  uintptr_t hi = lo + FAULT_AROUND_BYTES;
  uintptr_t base = (uintptr_t)seg->base, end = base + seg->size;
  if (lo < base)
    lo = base;
  if (hi > end)
    hi = end & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
  if (hi > lo)
    (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

bool pa_gw_latest_header(pa_netgw *g, pa_tick *out) {
  for (int tries = 0; tries < 8; tries++) {
    uint64_t n = pa_ring_head(g->st->state);
    if (!n)
      return false; /* no tick yet */
    uint32_t len;
    const void *p = pa_ring_peek(g->st->state, n, &len);
    if (!p || len < sizeof *out)
      continue; /* overwritten since the head was read */
    memcpy(out, p, sizeof *out);
    bool ok = pa_ring_still(g->st->state, n);
    drop_peeked(&g->st->state_seg, p);
    if (ok)
      return true;
  }
  return false;
}

const pa_tick *pa_gw_latest(pa_netgw *g) {
  uint32_t len;
  uint64_t seq;
  if (pa_ring_read_latest(g->st->state, g->latest_buf, g->state_cap, &len,
                          &seq) != 0 ||
      len < sizeof(pa_tick))
    return NULL;
  const pa_tick *t = (const pa_tick *)g->latest_buf;
  if (sizeof(pa_tick) + (uint64_t)t->robot_count * sizeof(pa_robot_state) > len)
    return NULL;
  return t;
}

const pa_robot_state *pa_gw_robot_state(const pa_tick *t, uint32_t robot) {
  const pa_robot_state *rs = (const pa_robot_state *)(t + 1);
  if (robot < t->robot_count && rs[robot].id == robot &&
      (rs[robot].flags & PA_RS_ACTIVE))
    return &rs[robot];
  for (uint32_t i = 0; i < t->robot_count; i++)
    if (rs[i].id == robot && (rs[i].flags & PA_RS_ACTIVE))
      return &rs[i];
  return NULL;
}

int pa_gw_map(pa_netgw *g, const pa_map_block **map, const int8_t **cells) {
  uint32_t gen = __atomic_load_n(&g->ctl->map_gen, __ATOMIC_ACQUIRE);
  if (!g->map || gen != g->map_gen) {
    if (g->map)
      pa_shm_detach(&g->map_seg);
    g->map = NULL;
    char err[256];
    if (pa_stack_map_attach(g->st, &g->map_seg, &g->map, &g->cells, err,
                            sizeof err) != 0) {
      g->map = NULL;
      return -1;
    }
    g->map_gen = gen;
  }
  *map = g->map;
  *cells = g->cells;
  return 0;
}

bool pa_gw_token_ok(pa_netgw *g, const char *s) {
  size_t a = strlen(g->token), b = strlen(s);
  unsigned char diff = (unsigned char)(a != b);
  /* Constant time over the token so its length and prefix do not leak. */
  for (size_t i = 0; i < a; i++)
    diff |= (unsigned char)(g->token[i] ^ (i < b ? s[i] : 0));
  return diff == 0;
}

bool pa_gw_auth_try(pa_client *c, const char *s) {
  if (pa_gw_token_ok(c->g, s))
    return true;
  /* Guessing costs a connection per PA_NETGW_AUTH_TRIES tokens. */
  if (++c->auth_failures >= PA_NETGW_AUTH_TRIES) {
    pa_warn("client %" PRIu64 ": %u wrong tokens, closing", c->id,
            c->auth_failures);
    pa_gw_close_soon(c);
  }
  return false;
}

/* pa-sim beats every tick and, paused, every 100 ms: a heartbeat this old
 * means it is stopped, hung or restarting. */
#define SIM_STALL_NS 500000000LL

bool pa_gw_sim_stalled(pa_netgw *g) {
  const pa_health *h = &g->ctl->health[PA_PROC_SIM];
  if (!__atomic_load_n(&h->pid, __ATOMIC_ACQUIRE))
    return false; /* no pa-sim process to judge (a test plays it) */
  int64_t hb = __atomic_load_n(&h->heartbeat_ns, __ATOMIC_ACQUIRE);
  int64_t age = pa_now_ns() - hb, limit = SIM_STALL_NS;
  if (age <= limit)
    return false;
  /* A slow time scale sleeps a whole tick between beats. */
  const pa_tick *t = pa_gw_latest(g);
  double hz = g->ctl->control_hz;
  if (t && hz > 0 && t->speed > 0 && !(t->flags & PA_TICK_PAUSED)) {
    double period = 1e9 / (hz * t->speed);
    if (period * 2 + (double)SIM_STALL_NS > (double)limit)
      limit = (int64_t)fmin(period * 2 + (double)SIM_STALL_NS, 9e18);
    if (age <= limit)
      return false;
  }
  snprintf(g->busy_msg, sizeof g->busy_msg,
           "the simulator has not run for %" PRId64 " ms (stopped or hung); "
           "the command was not applied",
           age / 1000000);
  return true;
}
