/* sim_snap.c - named snapshots of the world: every robot's static and
 * dynamic state and the obstacles, kept as POSIX shm objects of the
 * instance ("/playarea.<instance>.snap-<name>"), so they outlive a pa-sim
 * crash and go when the instance is removed. A load puts the world back as
 * saved while tick, sim time and every stream seq keep running (as reset
 * does), and the scans at the same ticks after the load as after the save. */
#define _GNU_SOURCE
#include "pa_sim.h"
#include "sim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t pa_sim_int_snap_sum(const pa_sim_snap_hdr *h, const void *body,
                             size_t n) {
  pa_sim_snap_hdr c = *h;
  c.checksum = 0;
  return fnv(fnv(0xcbf29ce484222325ull, body, n), &c, sizeof c);
}

/* The object name of snapshot `name` (terminated by pa_sim_apply), or an
 * error in r. */
static int snap_path(const pa_sim_model *m, const char *name,
                     char out[PA_SHM_NAME_MAX], pa_reply *r) {
  if (!m->def.instance[0]) {
    pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
              "snapshots need a shared-memory instance");
    return -1;
  }
  if (!pa_snapshot_name_ok(name)) {
    pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
              "snapshot name '%.32s': use 1 to %d of A-Z a-z 0-9 _ -", name,
              PA_SNAPSHOT_NAME_MAX);
    return -1;
  }
  char seg[48];
  snprintf(seg, sizeof seg, "snap-%s", name);
  if (pa_shm_name(out, PA_SHM_NAME_MAX, m->def.instance, seg, NULL, 0) != 0) {
    pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, "snapshot name '%s' is too long",
              name);
    return -1;
  }
  return 0;
}

pa_status pa_sim_int_snapshot_save(const pa_sim_model *m,
                                   const pa_sim_state *s, const pa_cmd *c,
                                   pa_reply *r) {
  const char *name = c->name;
  char path[PA_SHM_NAME_MAX];
  if (snap_path(m, name, path, r) != 0)
    return (pa_status)r->status;
  char why[PA_SHM_NAME_MAX + 96] = "";
  int fd = pa_shm_open_checked(path, O_RDWR, 0600, NULL, why, sizeof why);
  bool exists = fd >= 0;
  if (!exists && (errno == EINVAL || errno == ELOOP))
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "cannot save snapshot '%s': %s", name, why);
  if (!exists) {
    if (pa_stack_count_objects(m->def.instance, "snap-") >= PA_SNAPSHOTS_MAX)
      return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                       "%d snapshots kept already: save over one of them",
                       PA_SNAPSHOTS_MAX);
    fd = pa_shm_open_checked(path, O_RDWR | O_CREAT | O_EXCL, 0600, NULL, NULL,
                             0);
  }
  if (fd < 0)
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, "cannot create snapshot '%s': %s",
                     name, strerror(errno));
  pa_sim_snap_hdr h;
  memset(&h, 0, sizeof h);
  h.magic = PA_SIM_SNAP_MAGIC;
  h.version = PA_SIM_SNAP_VERSION;
  h.robot_count = s->robot_count;
  h.obstacle_count = s->obstacle_count;
  h.info_size = sizeof(pa_robot_info);
  h.state_size = sizeof(pa_robot_state);
  h.obstacle_size = sizeof(pa_obstacle_info);
  h.tick = s->tick;
  h.sim_time = s->sim_time;
  h.scan_phase = (uint32_t)((s->tick - s->scan_tick0) % m->ticks_per_scan);
  size_t ni = (size_t)h.robot_count * sizeof(pa_robot_info);
  size_t ns = (size_t)h.robot_count * sizeof(pa_robot_state);
  size_t no = (size_t)h.obstacle_count * sizeof(pa_obstacle_info);
  size_t body = ni + ns + no, total = sizeof h + body;
  void *p = MAP_FAILED;
  if (ftruncate(fd, (off_t)total) == 0)
    p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) {
    if (!exists)
      shm_unlink(path);
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, "cannot write snapshot '%s': %s",
                     name, strerror(e));
  }
  char *b = (char *)p + sizeof h;
  memcpy(b, s->info, ni);
  memcpy(b + ni, s->rs, ns);
  memcpy(b + ni + ns, s->obs, no);
  h.checksum = pa_sim_int_snap_sum(&h, b, body);
  memcpy(p, &h, sizeof h); /* last: a half-written object fails its sum */
  munmap(p, total);
  r->snapshot.robots = h.robot_count;
  r->snapshot.tick = h.tick;
  r->snapshot.sim_time = h.sim_time;
  r->snapshot.obstacles = h.obstacle_count;
  return PA_OK;
}

/* True (with the reason in why) if an active record of a loaded snapshot
 * could not have come from this simulator: records are checked on copies
 * with their names terminated. */
bool pa_sim_int_snap_records_bad(const pa_sim_model *m, const pa_robot_info *si,
                                 const pa_robot_state *ss, uint32_t nr,
                                 const pa_obstacle_info *so, uint32_t no,
                                 char *why, size_t why_sz) {
  for (uint32_t i = 0; i < nr; i++) {
    if (!si[i].active)
      continue;
    pa_robot_info ri = si[i];
    ri.name[sizeof ri.name - 1] = 0;
    if (pa_sim_int_check_robot(&ri, m->beam_cap, why, why_sz) != 0)
      return true;
    if (!pa_sim_int_state_ok(&ss[i])) {
      snprintf(why, why_sz, "robot '%s': state out of range", ri.name);
      return true;
    }
  }
  for (uint32_t i = 0; i < no; i++) {
    if (!so[i].active)
      continue;
    pa_obstacle_info o = so[i];
    o.name[sizeof o.name - 1] = 0;
    if (pa_sim_int_check_obstacle(&o, why, why_sz) != 0)
      return true;
  }
  return false;
}

pa_status pa_sim_int_snapshot_load(const pa_sim_model *m, pa_sim_state *s,
                                   const pa_cmd *c, pa_reply *r) {
  const char *name = c->name;
  char path[PA_SHM_NAME_MAX];
  if (snap_path(m, name, path, r) != 0)
    return (pa_status)r->status;
  int fd = pa_shm_open_checked(path, O_RDONLY, 0, NULL, NULL, 0);
  if (fd < 0)
    return pa_sim_int_fail(r, PA_ERR_UNKNOWN_OBJECT, "no snapshot named '%s'", name);
  struct stat st;
  void *p = MAP_FAILED;
  size_t total = 0;
  if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(pa_sim_snap_hdr)) {
    total = (size_t)st.st_size;
    p = mmap(NULL, total, PROT_READ, MAP_SHARED, fd, 0);
  }
  close(fd);
  if (p == MAP_FAILED)
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, "snapshot '%s' is damaged",
                     name);
  pa_sim_snap_hdr h;
  memcpy(&h, p, sizeof h);
  const char *b = (const char *)p + sizeof h;
  size_t ni = (size_t)h.robot_count * sizeof(pa_robot_info);
  size_t ns = (size_t)h.robot_count * sizeof(pa_robot_state);
  size_t no = (size_t)h.obstacle_count * sizeof(pa_obstacle_info);
  pa_status rc = PA_OK;
  if (h.magic != PA_SIM_SNAP_MAGIC || h.version != PA_SIM_SNAP_VERSION ||
      h.info_size != sizeof(pa_robot_info) ||
      h.state_size != sizeof(pa_robot_state) ||
      h.obstacle_size != sizeof(pa_obstacle_info) ||
      h.robot_count > s->cap_robots || h.obstacle_count > s->cap_obstacles ||
      total != sizeof h + ni + ns + no ||
      pa_sim_int_snap_sum(&h, b, ni + ns + no) != h.checksum) {
    rc = pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                   "snapshot '%s' is damaged or from another build or a larger "
                   "world",
                   name);
    goto out;
  }
  const pa_robot_info *si = (const pa_robot_info *)(const void *)b;
  const pa_robot_state *ss = (const pa_robot_state *)(const void *)(b + ni);
  const pa_obstacle_info *so =
      (const pa_obstacle_info *)(const void *)(b + ni + ns);
  /* Another program may have written a well-summed object: every record
   * must pass the checks a world's does before anything changes. */
  char why[160];
  if (pa_sim_int_snap_records_bad(m, si, ss, h.robot_count, so,
                                  h.obstacle_count, why, sizeof why)) {
    rc = pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, "snapshot '%s': %s", name,
                         why);
    goto out;
  }
  /* Generations as saved: a client's ids of that world stay valid. */
  pa_sim_world_src w = {.robots = si,
                        .robot_count = h.robot_count,
                        .states = ss,
                        .state_count = h.robot_count,
                        .obstacles = so,
                        .obstacle_count = h.obstacle_count};
  pa_sim_int_world_install(m, s, &w);
  /* The scan schedule as saved: robot i scans as many ticks after the load
   * as it did after the save, so a reloaded episode sees the same scans
   * (ticks_per_scan the same: one pa-sim's snapshot). */
  uint64_t phase = h.scan_phase % m->ticks_per_scan;
  if (s->tick >= phase)
    s->scan_tick0 = s->tick - phase;
  r->snapshot.robots = h.robot_count;
  r->snapshot.tick = h.tick;
  r->snapshot.sim_time = h.sim_time;
  r->snapshot.obstacles = h.obstacle_count;
out:
  munmap(p, total);
  return rc;
}
