/* sim_keep.c - what pa-sim holds beyond the world snapshot and the state
 * ring (dynamic bodies' held forces, thrusters and pulses; agents' goals,
 * speed, velocity and generators), kept in the shm object
 * "/playarea.<instance>.sim-keep" after every command and every tick that
 * changed them, so a pa-sim the launcher restarts after a crash picks them
 * up with the robots' state.
 *
 * Two slots written in turn, each under its own sequence number (odd while
 * being written): a pa-sim killed in the middle of a write leaves the other
 * slot whole. Only the records up to the last one holding anything are
 * written (none without held inputs or agents), and a tick writes only when
 * pulses or agents moved, so a world without them pays nothing. */
#define _GNU_SOURCE
#include "pa_sim.h"
#include "sim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pa_util.h"

#define KEEP_MAGIC 0x70616b6565703031ull /* "pakeep01" */
#define KEEP_VERSION 1

typedef struct keep_hdr {
  uint64_t magic;
  uint64_t boot_id; /* the instance's creation (ctl header) */
  uint32_t version, cap_robots, cap_obstacles, dyn_size, agent_size;
  uint32_t live;       /* the last slot holds pulses or agents (writer's) */
  uint64_t seq[2];     /* per slot: odd while written, 0 never */
  uint32_t robots[2];  /* dyn records in the slot */
  uint32_t agents[2];  /* agent records in the slot */
  uint64_t writes;     /* slots written so far */
  uint8_t reserved[8]; /* to 88 */
} keep_hdr;

static size_t slot_bytes(const pa_sim_state *s) {
  size_t n = (size_t)s->cap_robots * sizeof(pa_sim_dyn) +
             (size_t)s->cap_obstacles * sizeof(pa_sim_agent);
  return (n + 63) & ~(size_t)63;
}

static size_t slot_off(int k, size_t slot) {
  return ((sizeof(keep_hdr) + 63) & ~(size_t)63) + (size_t)k * slot;
}

static bool finite_n(const double *v, size_t n, double lim) {
  for (size_t i = 0; i < n; i++)
    if (!(fabs(v[i]) <= lim))
      return false;
  return true;
}

/* A kept dyn record is usable (else it is dropped: the robot holds none). */
static bool dyn_ok(const pa_sim_dyn *d) {
  const double f[3] = {d->fx, d->fy, d->tz};
  if (d->frame > PA_FRAME_WORLD || d->pulses > PA_SIM_PULSES_MAX ||
      !finite_n(f, 3, 1e9) || !finite_n(d->thrust, PA_THRUSTERS_MAX, 1))
    return false;
  for (uint32_t k = 0; k < d->pulses; k++) {
    const double p[5] = {d->pulse[k].fx, d->pulse[k].fy, d->pulse[k].tz,
                         d->pulse[k].px, d->pulse[k].py};
    if (!finite_n(p, 5, 1e9) || d->pulse[k].frame > PA_FRAME_WORLD)
      return false;
  }
  return true;
}

static bool agent_ok(const pa_sim_agent *a) {
  const double v[3] = {a->speed, a->vx, a->vy};
  if (a->wp_count > PA_AGENT_WAYPOINTS_MAX ||
      (a->wp_count ? a->wp >= a->wp_count : a->wp != 0) ||
      !finite_n(v, 3, 1e3) || a->speed < 0 ||
      !finite_n(a->wpx, a->wp_count, 1e6) ||
      !finite_n(a->wpy, a->wp_count, 1e6))
    return false;
  return true;
}

/* The whole slot a previous pa-sim wrote last into s: 1, or 0 (none). */
static int restore(pa_sim_state *s, const keep_hdr *h, const uint8_t *base,
                   size_t slot) {
  int k = -1;
  for (int i = 0; i < 2; i++) {
    uint64_t q = __atomic_load_n(&h->seq[i], __ATOMIC_ACQUIRE);
    if (q && !(q & 1) && (k < 0 || q > h->seq[k]))
      k = i;
  }
  if (k < 0)
    return 0;
  uint32_t nr = h->robots[k], no = h->agents[k];
  if (nr > s->cap_robots || no > s->cap_obstacles)
    return 0;
  const pa_sim_dyn *d = (const void *)(base + slot_off(k, slot));
  const pa_sim_agent *a =
      (const void *)(base + slot_off(k, slot) + (size_t)nr * sizeof *d);
  uint32_t dropped = 0;
  for (uint32_t i = 0; i < nr; i++) {
    if (dyn_ok(&d[i]))
      s->dyn[i] = d[i];
    else
      dropped++;
  }
  for (uint32_t i = 0; i < no; i++) {
    if (agent_ok(&a[i]))
      s->agents[i] = a[i];
    else
      dropped++;
  }
  if (dropped)
    pa_warn("sim-keep: %u malformed record%s dropped", dropped,
            dropped == 1 ? "" : "s");
  pa_info("resumed %u dynamic bodies' inputs and %u agents' behaviours", nr,
          no);
  return 1;
}

int pa_sim_keep_open(const pa_sim_model *m, pa_sim_state *s, pa_stack *st,
                     bool resume) {
  char name[PA_SHM_NAME_MAX];
  if (!m->def.instance[0] ||
      pa_shm_name(name, sizeof name, m->def.instance, "sim-keep", NULL, 0))
    return -1;
  const pa_shm_header *ch = st->ctl_seg.base;
  size_t slot = slot_bytes(s), total = slot_off(2, slot);
  char why[PA_SHM_NAME_MAX + 96];
  int fd =
      pa_shm_open_checked(name, O_RDWR | O_CREAT, 0600, NULL, why, sizeof why);
  if (fd < 0) {
    pa_warn("sim-keep %s: held forces and agents will not survive a restart",
            why);
    return -1;
  }
  struct stat sb;
  bool fits = fstat(fd, &sb) == 0 && (size_t)sb.st_size == total;
  if (!fits && ftruncate(fd, (off_t)total) != 0) {
    pa_warn("sim-keep %s: %s", name, strerror(errno));
    close(fd);
    return -1;
  }
  void *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    pa_warn("sim-keep %s: %s", name, strerror(errno));
    return -1;
  }
  keep_hdr *h = p;
  if (resume && fits && h->magic == KEEP_MAGIC && h->version == KEEP_VERSION &&
      h->boot_id == ch->boot_id && h->cap_robots == s->cap_robots &&
      h->cap_obstacles == s->cap_obstacles &&
      h->dyn_size == sizeof(pa_sim_dyn) &&
      h->agent_size == sizeof(pa_sim_agent))
    restore(s, h, p, slot);
  memset(h, 0, sizeof *h); /* this pa-sim's from here on */
  h->boot_id = ch->boot_id;
  h->version = KEEP_VERSION;
  h->cap_robots = s->cap_robots;
  h->cap_obstacles = s->cap_obstacles;
  h->dyn_size = sizeof(pa_sim_dyn);
  h->agent_size = sizeof(pa_sim_agent);
  __atomic_store_n(&h->magic, KEEP_MAGIC, __ATOMIC_RELEASE);
  s->keep = p;
  s->keep_size = total;
  pa_sim_keep_write(s);
  return 0;
}

/* Records up to the last one holding anything: robots with a held force,
 * thrusters or pulses (an empty record is a robot's default), agents. */
static uint32_t dyn_used(const pa_sim_state *s) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->robot_count; i++)
    if (s->dyn[i].forced || s->dyn[i].pulses)
      n = i + 1;
  return n;
}

static uint32_t agents_used(const pa_sim_state *s) {
  uint32_t n = 0;
  if (s->agent_count)
    for (uint32_t i = 0; i < s->obstacle_count; i++)
      if (s->obs[i].active && s->obs[i].agent != PA_AGENT_NONE)
        n = i + 1;
  return n;
}

static bool pulses_held(const pa_sim_state *s, uint32_t nr) {
  for (uint32_t i = 0; i < nr; i++)
    if (s->dyn[i].pulses)
      return true;
  return false;
}

static void keep_slot(pa_sim_state *s, uint32_t nr, uint32_t no) {
  keep_hdr *h = s->keep;
  int k = (int)(h->writes & 1);
  size_t slot = slot_bytes(s);
  uint64_t q = 2 * (h->writes + 1);
  __atomic_store_n(&h->seq[k], q - 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  uint8_t *b = (uint8_t *)h + slot_off(k, slot);
  memcpy(b, s->dyn, (size_t)nr * sizeof *s->dyn);
  memcpy(b + (size_t)nr * sizeof *s->dyn, s->agents,
         (size_t)no * sizeof *s->agents);
  h->robots[k] = nr;
  h->agents[k] = no;
  __atomic_store_n(&h->seq[k], q, __ATOMIC_RELEASE);
  h->writes++;
  /* Pulses and agents change by the tick: the next tick writes again. */
  h->live = no || pulses_held(s, nr);
  s->keep_stale = false;
}

void pa_sim_keep_write(pa_sim_state *s) {
  keep_hdr *h = s->keep;
  if (!h || !s->dyn)
    return;
  uint32_t nr = dyn_used(s), no = agents_used(s);
  int last = h->writes ? (int)((h->writes - 1) & 1) : 1;
  if (!nr && !no && h->writes && !h->robots[last] && !h->agents[last])
    return; /* nothing held, as the last slot says */
  keep_slot(s, nr, no);
}

void pa_sim_keep_tick(pa_sim_state *s) {
  keep_hdr *h = s->keep;
  /* A tick changes only pulses and agents; commands write their own. */
  if (h && (h->live || s->keep_stale || s->agent_count))
    pa_sim_keep_write(s);
}

void pa_sim_keep_close(pa_sim_state *s) {
  if (s->keep)
    munmap(s->keep, s->keep_size);
  s->keep = NULL;
  s->keep_size = 0;
}
