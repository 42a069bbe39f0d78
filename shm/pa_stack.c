/* pa_stack.c - the segments of one running instance: layout computed from a
 * pa_stack_def by one table, creation, validation on attach, the world
 * seqlock and the map segment (probing and removal: pa_stack_probe.c). */
#define _GNU_SOURCE
#include "pa_shm_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A segment may not be bigger than this (mapping sanity, not tmpfs size). */
#define SEG_MAX_BYTES (16ull << 30)

/* ---- status codes ------------------------------------------------------- */

static const char *const status_codes[PA_STATUS_COUNT] = {
    [PA_OK] = "ok",
    [PA_ERR_UNKNOWN_TYPE] = "unknown_type",
    [PA_ERR_UNKNOWN_ACTION] = "unknown_action",
    [PA_ERR_INVALID_MESSAGE] = "invalid_message",
    [PA_ERR_INVALID_ACTION_SHAPE] = "invalid_action_shape",
    [PA_ERR_UNKNOWN_ROBOT] = "unknown_robot",
    [PA_ERR_UNKNOWN_OBJECT] = "unknown_object",
    [PA_ERR_UNSUPPORTED_CONTROL_SCHEME] = "unsupported_control_scheme",
    [PA_ERR_SPAWN_FAILED] = "spawn_failed",
    [PA_ERR_BLOCKED_POSE] = "blocked_pose",
    [PA_ERR_BATCH_LIMIT] = "batch_limit",
    [PA_ERR_TOO_LONG] = "too_long",
    [PA_ERR_BUSY] = "busy",
    [PA_ERR_NOT_AUTHORIZED] = "not_authorized",
    [PA_ERR_UNKNOWN_AGENT] = "unknown_agent",
};

const char *pa_status_code(pa_status st) {
  if ((unsigned)st >= PA_STATUS_COUNT)
    return "invalid_message";
  return status_codes[st];
}

/* ---- the def and the layout table ---------------------------------------- */

/* field, default, minimum, maximum: drives the default, the checks and
 * their messages. */
#define PA_STACK_DEF_FIELDS(X)                                                 \
  X(max_robots, 256, 1, 65536)                                                 \
  X(max_obstacles, 1024, 1, 1u << 20)                                          \
  X(max_beams, 4096, 1, 1u << 20)                                              \
  X(max_cam_width, 1920, 1, 8192)                                              \
  X(max_cam_height, 1080, 1, 8192)                                             \
  X(state_slots, 0, 0, 1u << 20)                                               \
  X(scan_slots, 0, 0, 1u << 20)                                                \
  X(camera_slots, 8, 2, 4096)                                                  \
  X(cmd_capacity, 1024, 1, 1u << 20)                                           \
  X(max_readers, 8, 1, 64)

pa_stack_def pa_stack_def_default(void) {
#define DEFAULT_FIELD(f, def, lo, hi) .f = (def),
  pa_stack_def d = {PA_STACK_DEF_FIELDS(DEFAULT_FIELD)};
#undef DEFAULT_FIELD
  snprintf(d.instance, sizeof d.instance, "p9000");
  return d;
}

void pa_stack_instance_for_port(char *out, size_t out_sz, unsigned port) {
  snprintf(out, out_sz, "p%u", port);
}

enum { RING_STATE = 0, RING_SCAN = 1, RING_CAMERA = 2, RING_COUNT = 3 };

static const char *const ring_seg_names[RING_COUNT] = {"state", "scan",
                                                       "camera"};
static const uint32_t ring_kinds[RING_COUNT] = {PA_SEG_STATE, PA_SEG_SCAN,
                                                PA_SEG_CAMERA};

typedef struct ring_layout {
  uint32_t slots, max_record;
  uint64_t total; /* segment bytes */
  uint64_t sizes[PA_SHM_MAX_SIZES];
} ring_layout;

typedef struct stack_layout {
  uint64_t ctl_total;
  uint64_t off_robots, off_obstacles, off_cam, off_cmd, off_reply, off_nav;
  uint64_t off_visual, off_lane_act;
  uint64_t ctl_sizes[PA_SHM_MAX_SIZES];
  ring_layout ring[RING_COUNT];
} stack_layout;

static bool in_range(uint32_t v, uint32_t lo, uint32_t hi) {
  return v >= lo && v <= hi;
}

/* The state ring's auto size (state_slots 0): its pages are all touched as
 * it wraps, in pa-sim and in each reader. */
#define STATE_RING_BUDGET (4ull << 20)

/* The scan ring's record capacity for max_beams: rounded up so that a slot
 * is whole pages and every record starts at the same place in its page.
 * Slots sized for max_beams are mostly untouched by shorter scans, but a
 * record crossing a page boundary touched two pages; this way a scan of up
 * to ~800 beams touches one page of its slot, and the untouched rest of the
 * slot costs no memory. */
static uint64_t scan_record_bytes(uint32_t max_beams) {
  uint64_t need = sizeof(pa_scan) + 4ull * max_beams;
  return ((16 + need + 4095) & ~4095ull) - 16; /* 16: the slot header */
}

/* Validates d and computes every size and offset of the instance. */
static int stack_layout_compute(const pa_stack_def *d, stack_layout *L,
                                char *err, size_t err_sz) {
  memset(L, 0, sizeof *L);
  char name[PA_SHM_NAME_MAX];
  if (memchr(d->instance, '\0', sizeof d->instance) == NULL) {
    pa_shm_errf(err, err_sz, "instance name is not terminated");
    return PA_SHM_EINVAL;
  }
  int rc = pa_shm_name(name, sizeof name, d->instance, "ctl", err, err_sz);
  if (rc)
    return rc;
#define CHECK_FIELD(f, def, lo, hi)                                            \
  if (!in_range(d->f, (lo), (hi))) {                                           \
    pa_shm_errf(err, err_sz, "%s: " #f " is %" PRIu32 ", must be in [%u, %u]", \
                d->instance, d->f, (unsigned)(lo), (unsigned)(hi));            \
    return PA_SHM_EINVAL;                                                      \
  }
  PA_STACK_DEF_FIELDS(CHECK_FIELD)
#undef CHECK_FIELD
  if (d->scan_slots == 1 || d->state_slots == 1) {
    pa_shm_errf(err, err_sz, "%s: %s is 1, must be 0 (auto) or >= 2",
                d->instance, d->scan_slots == 1 ? "scan_slots" : "state_slots");
    return PA_SHM_EINVAL;
  }

  uint64_t off = PA_SHM_BODY_OFF + PA_ALIGN64(sizeof(pa_ctl));
  L->off_robots = off;
  off += PA_ALIGN64((uint64_t)d->max_robots * sizeof(pa_robot_info));
  L->off_obstacles = off;
  off += PA_ALIGN64((uint64_t)d->max_obstacles * sizeof(pa_obstacle_info));
  L->off_cam = off;
  off += PA_ALIGN64((uint64_t)d->max_robots * sizeof(pa_cam_demand));
  L->off_nav = off;
  off += PA_ALIGN64(sizeof(pa_nav_block));
  L->off_cmd = off;
  off += pa_queue_bytes(d->cmd_capacity, sizeof(pa_cmd));
  L->off_reply = off;
  off += pa_queue_bytes(d->cmd_capacity, sizeof(pa_reply));
  L->off_visual = off;
  off += PA_ALIGN64(sizeof(pa_visual_block));
  L->off_lane_act = off; /* the step lane's batch: (v, w) per robot */
  off += PA_ALIGN64((uint64_t)d->max_robots * 2 * sizeof(double));
  L->ctl_total = off;
  uint64_t cs[PA_SHM_MAX_SIZES] = {
      d->max_robots,         d->max_obstacles,
      d->cmd_capacity,       sizeof(pa_ctl),
      sizeof(pa_robot_info), sizeof(pa_obstacle_info),
      sizeof(pa_cmd),        sizeof(pa_reply)};
  memcpy(L->ctl_sizes, cs, sizeof cs);

  /* auto: every robot scans once per scan period, so the newest
   * max_robots records hold each robot's newest scan; a quarter more lets a
   * reader find it while the writer is laying the next ones down (each
   * slot's page is touched as the ring wraps: 4 kB a slot) */
  uint32_t scan_auto = d->max_robots + d->max_robots / 4;
  uint32_t scan_slots = d->scan_slots    ? d->scan_slots
                        : scan_auto > 64 ? scan_auto
                                         : 64;
  uint64_t rec[RING_COUNT] = {
      sizeof(pa_tick) + (uint64_t)d->max_robots * sizeof(pa_robot_state),
      scan_record_bytes(d->max_beams),
      sizeof(pa_frame) + 3ull * d->max_cam_width * d->max_cam_height};
  /* auto: as many ticks as STATE_RING_BUDGET holds, within [16, 64] (a
   * 1000-robot tick is 152 kB: 27 ticks, 135 ms at 200 Hz) */
  uint64_t fit = STATE_RING_BUDGET / rec[RING_STATE];
  uint32_t state_slots = d->state_slots ? d->state_slots
                         : fit < 16     ? 16
                         : fit > 64     ? 64
                                        : (uint32_t)fit;
  uint32_t slots[RING_COUNT] = {state_slots, scan_slots, d->camera_slots};
  for (int i = 0; i < RING_COUNT; i++) {
    ring_layout *R = &L->ring[i];
    R->slots = slots[i];
    R->max_record = (uint32_t)rec[i];
    size_t rb = pa_ring_bytes(R->slots, R->max_record, d->max_readers);
    R->total = PA_SHM_BODY_OFF + rb;
    if (rb == 0 || R->total > SEG_MAX_BYTES) {
      pa_shm_errf(err, err_sz,
                  "%s: %s ring of %" PRIu32 " slots x %" PRIu32
                  " bytes is too large",
                  d->instance, ring_seg_names[i], R->slots, R->max_record);
      return PA_SHM_EINVAL;
    }
    R->sizes[0] = R->slots;
    R->sizes[1] = R->max_record;
    R->sizes[2] = d->max_readers;
  }
  L->ring[RING_STATE].sizes[3] = d->max_robots;
  L->ring[RING_STATE].sizes[4] = sizeof(pa_tick);
  L->ring[RING_STATE].sizes[5] = sizeof(pa_robot_state);
  L->ring[RING_SCAN].sizes[3] = d->max_beams;
  L->ring[RING_SCAN].sizes[4] = sizeof(pa_scan);
  L->ring[RING_CAMERA].sizes[3] = d->max_cam_width;
  L->ring[RING_CAMERA].sizes[4] = d->max_cam_height;
  L->ring[RING_CAMERA].sizes[5] = sizeof(pa_frame);
  return 0;
}

/* ---- create and attach -------------------------------------------------- */

static void stack_set_pointers(pa_stack *s, const stack_layout *L) {
  char *b = s->ctl_seg.base;
  s->ctl = (pa_ctl *)(b + PA_SHM_BODY_OFF);
  s->robots = (pa_robot_info *)(b + L->off_robots);
  s->obstacles = (pa_obstacle_info *)(b + L->off_obstacles);
  s->cam = (pa_cam_demand *)(b + L->off_cam);
  s->nav = (pa_nav_block *)(b + L->off_nav);
  s->cmd = (pa_queue *)(b + L->off_cmd);
  s->reply = (pa_queue *)(b + L->off_reply);
  s->vis = (pa_visual_block *)(b + L->off_visual);
  s->lane_act = (double *)(b + L->off_lane_act);
  if (s->state_seg.base && s->scan_seg.base && s->camera_seg.base) {
    s->state = (pa_ring *)((char *)s->state_seg.base + PA_SHM_BODY_OFF);
    s->scan = (pa_ring *)((char *)s->scan_seg.base + PA_SHM_BODY_OFF);
    s->camera = (pa_ring *)((char *)s->camera_seg.base + PA_SHM_BODY_OFF);
  }
}

static pa_shm_seg *ring_seg(pa_stack *s, int i) {
  return i == RING_STATE ? &s->state_seg
         : i == RING_SCAN ? &s->scan_seg
                          : &s->camera_seg;
}

void pa_stack_detach(pa_stack *s) {
  pa_shm_detach(&s->ctl_seg);
  for (int i = 0; i < RING_COUNT; i++)
    pa_shm_detach(ring_seg(s, i));
  memset(s, 0, sizeof *s);
}

int pa_stack_create(pa_stack *s, const pa_stack_def *d, char *err,
                    size_t err_sz) {
  memset(s, 0, sizeof *s);
  if (err && err_sz)
    err[0] = '\0';
  stack_layout L;
  int rc = stack_layout_compute(d, &L, err, err_sz);
  if (rc)
    return rc;
  int32_t owner = 0;
  int state = pa_stack_int_probe_owner(d->instance, &owner);
  if (state == PA_STACK_LIVE) {
    pa_shm_errf(err, err_sz,
                "instance '%s' is in use (owner pid %d is alive); stop it or "
                "pick another instance",
                d->instance, (int)owner);
    return PA_SHM_EEXIST;
  }
  char stale_note[640] = "";
  if (state == PA_STACK_FOREIGN) {
    uint32_t uid, mode;
    bool alive;
    char why[400] = "";
    pa_stack_foreign_info(d->instance, &uid, &mode, &owner, &alive);
    pa_stack_refused(d->instance, why, sizeof why);
    if (alive) {
      pa_shm_errf(err, err_sz,
                  "instance '%s' belongs to another user (uid %u, owner pid "
                  "%d alive): pick another instance",
                  d->instance, uid, (int)owner);
      return PA_SHM_EEXIST;
    }
    /* A squatter's (or another user's dead) objects: removed when we may
     * (root, or our own with a wrong mode), else refused by name. */
    pa_stack_unlink(d->instance);
    if (pa_stack_probe(d->instance) != PA_STACK_NONE) {
      if (why[0])
        pa_shm_errf(err, err_sz,
                    "instance '%s': %s, that we cannot remove: have it "
                    "removed or pick another instance",
                    d->instance, why);
      else
        pa_shm_errf(err, err_sz,
                    "instance '%s': /dev/shm/playarea.%s.* holds an object of "
                    "uid %u mode %04o, not ours (uid %u, 0600), that we "
                    "cannot remove: have it removed or pick another instance",
                    d->instance, d->instance, uid, mode, (unsigned)geteuid());
      return PA_SHM_EEXIST;
    }
    if (why[0])
      snprintf(stale_note, sizeof stale_note,
               "replaced instance '%s': refused %s", d->instance, why);
    else
      snprintf(stale_note, sizeof stale_note,
               "replaced instance '%s': its objects were not ours (uid %u, "
               "mode %04o, owner pid %d)",
               d->instance, uid, mode, (int)owner);
  }
  if (state == PA_STACK_STALE) {
    pa_stack_unlink(d->instance);
    snprintf(stale_note, sizeof stale_note,
             "replaced stale instance '%s' (owner pid %d is dead)",
             d->instance, (int)owner);
  }

  uint64_t boot = pa_shm_new_boot_id();
  char name[PA_SHM_NAME_MAX];
  /* ctl first: while the rest is built, probes see a live owner. */
  pa_shm_name(name, sizeof name, d->instance, "ctl", NULL, 0);
  rc = pa_shm_create(&s->ctl_seg, name, PA_SEG_CTL, L.ctl_sizes, L.ctl_total,
                     boot, err, err_sz);
  if (rc)
    return rc;
  stack_set_pointers(s, &L);
  pa_ctl *c = s->ctl;
  c->def = *d;
  c->off_robots = L.off_robots;
  c->off_obstacles = L.off_obstacles;
  c->off_cam = L.off_cam;
  c->off_cmd = L.off_cmd;
  c->off_reply = L.off_reply;
  c->off_nav = L.off_nav;
  c->off_visual = L.off_visual;
  c->lane.act_off = L.off_lane_act;
  for (int i = 0; i < PA_NAV_OVERLAYS; i++)
    s->nav->ov[i].robot = UINT32_MAX;
  sem_init(&c->render_wake, 1, 0);
  sem_init(&c->lane.reply_sem, 1, 0);
  pa_queue_init(s->cmd, d->cmd_capacity, sizeof(pa_cmd));
  pa_queue_init(s->reply, d->cmd_capacity, sizeof(pa_reply));

  for (int i = 0; i < RING_COUNT; i++) {
    pa_shm_seg *seg = ring_seg(s, i);
    pa_shm_name(name, sizeof name, d->instance, ring_seg_names[i], NULL, 0);
    rc = pa_shm_create(seg, name, ring_kinds[i], L.ring[i].sizes,
                       L.ring[i].total, boot, err, err_sz);
    if (rc)
      goto fail;
    pa_ring_init((char *)seg->base + PA_SHM_BODY_OFF, L.ring[i].slots,
                 L.ring[i].max_record, d->max_readers);
  }
  stack_set_pointers(s, &L);
  for (int i = 0; i < RING_COUNT; i++)
    pa_shm_publish(ring_seg(s, i));
  pa_shm_publish(&s->ctl_seg);
  if (stale_note[0])
    pa_shm_errf(err, err_sz, "%s", stale_note);
  return 0;
fail:
  /* Remove only what this call created: a racing creator keeps its own. */
  if (s->ctl_seg.base)
    pa_shm_unlink(s->ctl_seg.name);
  for (int i = 0; i < RING_COUNT; i++)
    if (ring_seg(s, i)->base)
      pa_shm_unlink(ring_seg(s, i)->name);
  pa_stack_detach(s);
  return rc;
}

int pa_stack_attach(pa_stack *s, const char *instance, char *err,
                    size_t err_sz) {
  memset(s, 0, sizeof *s);
  char name[PA_SHM_NAME_MAX];
  int rc = pa_shm_name(name, sizeof name, instance, "ctl", err, err_sz);
  if (rc)
    return rc;
  uint64_t expect[PA_SHM_MAX_SIZES] = {
      PA_SHM_SIZE_ANY,       PA_SHM_SIZE_ANY,
      PA_SHM_SIZE_ANY,       sizeof(pa_ctl),
      sizeof(pa_robot_info), sizeof(pa_obstacle_info),
      sizeof(pa_cmd),        sizeof(pa_reply)};
  rc = pa_shm_attach(&s->ctl_seg, name, PA_SEG_CTL, expect, err, err_sz);
  if (rc)
    return rc;
  const pa_shm_header *ch = s->ctl_seg.base;
  pa_stack_def d = ((const pa_ctl *)((char *)ch + PA_SHM_BODY_OFF))->def;
  stack_layout L;
  char why[200];
  if (stack_layout_compute(&d, &L, why, sizeof why)) {
    pa_shm_errf(err, err_sz, "%s: stored sizes are invalid: %s", name, why);
    rc = PA_SHM_EMISMATCH;
    goto fail;
  }
  if (strcmp(d.instance, instance) != 0) {
    pa_shm_errf(err, err_sz, "%s: instance is '%s', expected '%s'", name,
                d.instance, instance);
    rc = PA_SHM_EMISMATCH;
    goto fail;
  }
  for (unsigned i = 0; i < PA_SHM_MAX_SIZES; i++) {
    if (ch->sizes[i] != L.ctl_sizes[i]) {
      char tmp[16];
      pa_shm_errf(err, err_sz, "%s: %s is %" PRIu64 " in the header, %" PRIu64
                  " in the control block",
                  name, pa_shm_size_name(PA_SEG_CTL, i, tmp, sizeof tmp),
                  ch->sizes[i], L.ctl_sizes[i]);
      rc = PA_SHM_EMISMATCH;
      goto fail;
    }
  }
  if (ch->total_size != L.ctl_total) {
    pa_shm_errf(err, err_sz,
                "%s: total size is %" PRIu64 ", expected %" PRIu64
                " for its sizes",
                name, ch->total_size, L.ctl_total);
    rc = PA_SHM_EMISMATCH;
    goto fail;
  }
  const pa_ctl *c = (const pa_ctl *)((char *)ch + PA_SHM_BODY_OFF);
  if (c->off_robots != L.off_robots || c->off_obstacles != L.off_obstacles ||
      c->off_cam != L.off_cam || c->off_cmd != L.off_cmd ||
      c->off_reply != L.off_reply || c->off_nav != L.off_nav ||
      c->off_visual != L.off_visual || c->lane.act_off != L.off_lane_act) {
    pa_shm_errf(err, err_sz, "%s: array offsets differ from this build's", name);
    rc = PA_SHM_EMISMATCH;
    goto fail;
  }
  uint64_t boot = ch->boot_id;
  for (int i = 0; i < RING_COUNT; i++) {
    pa_shm_seg *seg = ring_seg(s, i);
    pa_shm_name(name, sizeof name, instance, ring_seg_names[i], NULL, 0);
    rc = pa_shm_attach(seg, name, ring_kinds[i], L.ring[i].sizes, err, err_sz);
    if (rc)
      goto fail;
    const pa_shm_header *h = seg->base;
    if (h->boot_id != boot) {
      pa_shm_errf(err, err_sz,
                  "%s: boot id %016" PRIx64 " differs from the ctl's %016" PRIx64
                  " (instance was re-created meanwhile)",
                  name, h->boot_id, boot);
      rc = PA_SHM_EMISMATCH;
      goto fail;
    }
    if (h->total_size != L.ring[i].total) {
      pa_shm_errf(err, err_sz,
                  "%s: total size is %" PRIu64 ", expected %" PRIu64, name,
                  h->total_size, L.ring[i].total);
      rc = PA_SHM_EMISMATCH;
      goto fail;
    }
    const void *rmem = (const char *)seg->base + PA_SHM_BODY_OFF;
    rc = pa_ring_check(rmem, seg->size - PA_SHM_BODY_OFF, why, sizeof why);
    if (rc) {
      pa_shm_errf(err, err_sz, "%s: %s", name, why);
      goto fail;
    }
    const pa_ring *r = rmem;
    if (pa_ring_slot_count(r) != L.ring[i].slots ||
        pa_ring_max_record(r) != L.ring[i].max_record) {
      pa_shm_errf(err, err_sz, "%s: ring sizes differ from the header's", name);
      rc = PA_SHM_EMISMATCH;
      goto fail;
    }
  }
  stack_set_pointers(s, &L);
  const pa_queue *qs[2] = {s->cmd, s->reply};
  const uint32_t qrec[2] = {sizeof(pa_cmd), sizeof(pa_reply)};
  for (int i = 0; i < 2; i++) {
    uint64_t avail = (i == 0 ? L.off_reply : L.ctl_total) -
                     (i == 0 ? L.off_cmd : L.off_reply);
    rc = pa_queue_check(qs[i], (size_t)avail, why, sizeof why);
    if (!rc && (pa_queue_record_size(qs[i]) != qrec[i] ||
                pa_queue_capacity(qs[i]) != d.cmd_capacity)) {
      snprintf(why, sizeof why, "queue: record size %" PRIu32
               " / capacity %" PRIu32 ", expected %" PRIu32 " / %" PRIu32,
               pa_queue_record_size(qs[i]), pa_queue_capacity(qs[i]), qrec[i],
               d.cmd_capacity);
      rc = PA_SHM_EMISMATCH;
    }
    if (rc) {
      pa_shm_errf(err, err_sz, "%s %s: %s", s->ctl_seg.name,
                  i == 0 ? "cmd" : "reply", why);
      goto fail;
    }
  }
  return 0;
fail:
  pa_stack_detach(s);
  return rc;
}

/* ---- world seqlock ------------------------------------------------------ */

/* The writer's side of a seqlock (one writer): odd while writing. */
static void seq_begin(uint64_t *seq) {
  uint64_t q = __atomic_load_n(seq, __ATOMIC_RELAXED);
  /* Odd already means a writer died mid-update: stay odd, move on. */
  __atomic_store_n(seq, (q | 1u) + ((q & 1u) ? 2u : 0u), __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void seq_end(uint64_t *seq, uint32_t *gen) {
  uint64_t q = __atomic_load_n(seq, __ATOMIC_RELAXED);
  __atomic_add_fetch(gen, 1u, __ATOMIC_RELAXED);
  __atomic_store_n(seq, (q | 1u) + 1u, __ATOMIC_RELEASE);
}

void pa_stack_world_begin(pa_stack *s) { seq_begin(&s->ctl->world_seq); }

void pa_stack_world_end(pa_stack *s) {
  seq_end(&s->ctl->world_seq, &s->ctl->world_gen);
}

uint64_t pa_stack_world_read_begin(const pa_stack *s) {
  int64_t until = 0;
  for (int spins = 0;; spins++) {
    uint64_t q = __atomic_load_n(&s->ctl->world_seq, __ATOMIC_ACQUIRE);
    if (!(q & 1u))
      return q;
    /* Writer busy: yield; give up after ~50 ms (writer may have died). */
    if (spins > 64) {
      int64_t now = pa_now_ns();
      if (!until)
        until = now + 50000000;
      else if (now > until)
        return q;
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
    }
  }
}

void pa_stack_nav_begin(pa_stack *s) { seq_begin(&s->nav->seq); }

void pa_stack_nav_end(pa_stack *s) { seq_end(&s->nav->seq, &s->nav->gen); }

/* The reader's check after copying: true if the copy may be torn. */
static bool seq_read_retry(const uint64_t *seq, uint64_t q) {
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return (q & 1u) || __atomic_load_n(seq, __ATOMIC_RELAXED) != q;
}

bool pa_stack_nav_read(const pa_stack *s, pa_nav_block *out) {
  uint64_t q = __atomic_load_n(&s->nav->seq, __ATOMIC_ACQUIRE);
  if (q & 1u)
    return false;
  memcpy(out, s->nav, sizeof *out);
  return !seq_read_retry(&s->nav->seq, q);
}

void pa_stack_visual_begin(pa_stack *s) { seq_begin(&s->vis->seq); }

void pa_stack_visual_end(pa_stack *s) { seq_end(&s->vis->seq, &s->vis->gen); }

bool pa_stack_visual_read(const pa_stack *s, pa_visual_block *out) {
  const pa_visual_block *b = s->vis;
  uint64_t q = __atomic_load_n(&b->seq, __ATOMIC_ACQUIRE);
  if (q & 1u)
    return false;
  /* Only what is in use: a 2 MB block is mostly empty. Bounded first, the
   * counts being another process's memory. */
  uint32_t n = __atomic_load_n(&b->count, __ATOMIC_RELAXED);
  uint32_t np = __atomic_load_n(&b->pt_used, __ATOMIC_RELAXED);
  if (n > PA_VIS_MAX || np > PA_VIS_POINTS_MAX)
    return false;
  out->gen = b->gen;
  out->count = n;
  out->pt_used = np;
  memcpy(out->v, b->v, (size_t)n * sizeof b->v[0]);
  memcpy(out->pt, b->pt, (size_t)np * sizeof b->pt[0]);
  out->seq = q;
  return !seq_read_retry(&b->seq, q);
}

bool pa_stack_world_read_retry(const pa_stack *s, uint64_t seq) {
  return seq_read_retry(&s->ctl->world_seq, seq);
}

/* ---- map segment -------------------------------------------------------- */

#define MAP_MAX_CELLS (1ull << 30)
#define MAP_OFF_CELLS (PA_SHM_BODY_OFF + PA_ALIGN64(sizeof(pa_map_block)))

/* What readers rely on: a cell count in range, a finite resolution > 0
 * and a finite origin. Checked by the writer and again by every reader
 * (the segment comes from another process). */
static int map_geom_check(const char *what, const pa_map_block *m, char *err,
                          size_t err_sz) {
  uint64_t n = (uint64_t)m->width * m->height;
  if (m->width == 0 || m->height == 0 || n > MAP_MAX_CELLS) {
    pa_shm_errf(err, err_sz, "%s: %" PRIu32 " x %" PRIu32
                " cells is out of range (1 .. 2^30 cells)", what, m->width,
                m->height);
    return -1;
  }
  if (!isfinite(m->resolution) || m->resolution <= 0) {
    pa_shm_errf(err, err_sz, "%s: resolution %g must be finite and > 0", what,
                m->resolution);
    return -1;
  }
  if (!isfinite(m->origin_x) || !isfinite(m->origin_y) ||
      !isfinite(m->origin_yaw)) {
    pa_shm_errf(err, err_sz, "%s: origin must be finite", what);
    return -1;
  }
  if (m->occupied_min < 0 || m->occupied_min > 100) {
    pa_shm_errf(err, err_sz, "%s: occupied_min %d is not in [0, 100]", what,
                (int)m->occupied_min);
    return -1;
  }
  return 0;
}

/* What publish and stage both refuse: a threshold outside [1, 100], a bad
 * geometry, no cells. 0 or PA_SHM_EINVAL with err. */
static int map_args_check(const pa_map_block *geom, const int8_t *cells,
                          char *err, size_t err_sz) {
  if (geom->occupied_min < 1 || geom->occupied_min > 100) {
    pa_shm_errf(err, err_sz, "map: occupied_min %d is not in [1, 100]",
                geom->occupied_min);
    return PA_SHM_EINVAL;
  }
  if (map_geom_check("map", geom, err, err_sz) < 0)
    return PA_SHM_EINVAL;
  if (!cells) {
    pa_shm_errf(err, err_sz, "map: no cells");
    return PA_SHM_EINVAL;
  }
  return 0;
}

/* Publishing is staging and committing at once: the map is written under
 * "map-next" and renamed over "map", so a reader never sees it half written
 * and holders of the old mapping keep their copy until they re-attach. */
int pa_stack_map_publish(pa_stack *s, uint32_t width, uint32_t height,
                         double resolution, double origin_x, double origin_y,
                         double origin_yaw, const int8_t *cells,
                         int occupied_min, char *err, size_t err_sz) {
  pa_shm_seg seg;
  const int8_t *staged;
  int rc =
      pa_stack_map_stage(s, &seg, width, height, resolution, origin_x, origin_y,
                         origin_yaw, cells, occupied_min, &staged, err, err_sz);
  if (rc)
    return rc;
  rc = pa_stack_map_commit(s, &seg, err, err_sz);
  if (rc) {
    pa_stack_map_discard(s, &seg);
    return rc;
  }
  pa_shm_detach(&seg);
  return 0;
}

int pa_stack_map_stage(const pa_stack *s, pa_shm_seg *seg, uint32_t width,
                       uint32_t height, double resolution, double origin_x,
                       double origin_y, double origin_yaw, const int8_t *cells,
                       int occupied_min, const int8_t **staged, char *err,
                       size_t err_sz) {
  memset(seg, 0, sizeof *seg);
  uint64_t n = (uint64_t)width * height;
  pa_map_block geom = {.width = width,
                       .height = height,
                       .resolution = resolution,
                       .origin_x = origin_x,
                       .origin_y = origin_y,
                       .origin_yaw = origin_yaw,
                       .occupied_min = occupied_min};
  int bad = map_args_check(&geom, cells, err, err_sz);
  if (bad)
    return bad;
  char name[PA_SHM_NAME_MAX];
  int rc = pa_shm_name(name, sizeof name, s->ctl->def.instance, "map-next", err,
                       err_sz);
  if (rc)
    return rc;
  const pa_shm_header *ch = s->ctl_seg.base;
  pa_shm_unlink(name); /* a crashed pa-sim's */
  uint64_t sizes[PA_SHM_MAX_SIZES] = {width, height, sizeof(pa_map_block)};
  rc = pa_shm_create(seg, name, PA_SEG_MAP, sizes, MAP_OFF_CELLS + n,
                     ch->boot_id, err, err_sz);
  if (rc)
    return rc;
  pa_shm_header *h = seg->base;
  h->owner_pid = ch->owner_pid; /* the instance's owner, for staleness */
  geom.gen = __atomic_load_n(&s->ctl->map_gen, __ATOMIC_ACQUIRE) + 1;
  geom.off_cells = MAP_OFF_CELLS;
  *(pa_map_block *)((char *)seg->base + PA_SHM_BODY_OFF) = geom;
  memcpy((char *)seg->base + MAP_OFF_CELLS, cells, (size_t)n);
  pa_shm_publish(seg);
  /* read-only from here; the filled pages stay in the object, not in the
   * writer's resident set until read */
  if (mprotect(seg->base, seg->size, PROT_READ) != 0) {
    pa_shm_errf(err, err_sz, "%s: mprotect: %s", name, strerror(errno));
    pa_stack_map_discard(s, seg);
    return PA_SHM_ESYS;
  }
  (void)madvise(seg->base, seg->size, MADV_DONTNEED);
  *staged = (const int8_t *)seg->base + MAP_OFF_CELLS;
  return 0;
}

int pa_stack_map_commit(pa_stack *s, const pa_shm_seg *seg, char *err,
                        size_t err_sz) {
  const pa_map_block *m =
      (const pa_map_block *)((const char *)seg->base + PA_SHM_BODY_OFF);
  uint32_t gen = __atomic_load_n(&s->ctl->map_gen, __ATOMIC_RELAXED) + 1;
  if (m->gen != gen) {
    pa_shm_errf(err, err_sz, "%s: staged for map generation %u, not %u",
                seg->name, m->gen, gen);
    return PA_SHM_EMISMATCH;
  }
  char name[PA_SHM_NAME_MAX];
  int rc =
      pa_shm_name(name, sizeof name, s->ctl->def.instance, "map", err, err_sz);
  if (rc)
    return rc;
  if (pa_shm_rename(seg->name, name) != 0) {
    pa_shm_errf(err, err_sz, "%s -> %s: %s", seg->name, name, strerror(errno));
    return PA_SHM_ESYS;
  }
  __atomic_store_n(&s->ctl->map_gen, gen, __ATOMIC_RELEASE);
  return 0;
}

void pa_stack_map_discard(const pa_stack *s, pa_shm_seg *seg) {
  (void)s;
  if (!seg->base)
    return;
  pa_shm_unlink(seg->name);
  pa_shm_detach(seg);
}

int pa_stack_map_attach(const pa_stack *s, pa_shm_seg *seg,
                        const pa_map_block **map, const int8_t **cells,
                        char *err, size_t err_sz) {
  char name[PA_SHM_NAME_MAX];
  int rc = pa_shm_name(name, sizeof name, s->ctl->def.instance, "map", err,
                       err_sz);
  if (rc)
    return rc;
  uint64_t expect[PA_SHM_MAX_SIZES] = {PA_SHM_SIZE_ANY, PA_SHM_SIZE_ANY,
                                       sizeof(pa_map_block), 0, 0, 0, 0, 0};
  rc = pa_shm_attach(seg, name, PA_SEG_MAP, expect, err, err_sz);
  if (rc)
    return rc;
  const pa_shm_header *h = seg->base;
  const pa_shm_header *ch = s->ctl_seg.base;
  const pa_map_block *m =
      (const pa_map_block *)((const char *)seg->base + PA_SHM_BODY_OFF);
  uint64_t n = (uint64_t)m->width * m->height;
  if (h->boot_id != ch->boot_id) {
    pa_shm_errf(err, err_sz, "%s: belongs to another creation of the instance",
                name);
    rc = PA_SHM_EMISMATCH;
  } else if (m->width != h->sizes[0] || m->height != h->sizes[1] ||
             m->off_cells != MAP_OFF_CELLS || seg->size < MAP_OFF_CELLS + n) {
    pa_shm_errf(err, err_sz,
                "%s: map block %" PRIu32 " x %" PRIu32
                " does not fit the header (%" PRIu64 " x %" PRIu64
                ", %zu bytes)",
                name, m->width, m->height, h->sizes[0], h->sizes[1], seg->size);
    rc = PA_SHM_EMISMATCH;
  } else if (map_geom_check(name, m, err, err_sz) < 0) {
    rc = PA_SHM_EINVAL; /* a map that can never be used, unlike a mismatch */
  }
  if (rc) {
    pa_shm_detach(seg);
    return rc;
  }
  *map = m;
  *cells = (const int8_t *)seg->base + m->off_cells;
  return 0;
}

/* ---- observation segment ----------------------------------------------- */

#define OBS_OFF_BLOCK (PA_SHM_BODY_OFF + sizeof(pa_obs_seg))

int pa_stack_obs_open(const pa_stack *s, pa_shm_seg *seg, pa_obs_seg **obs,
                      char *err, size_t err_sz) {
  const pa_stack_def *d = &s->ctl->def;
  char name[PA_SHM_NAME_MAX];
  int rc = pa_shm_name(name, sizeof name, d->instance, "obs", err, err_sz);
  if (rc)
    return rc;
  /* Room for a block of every robot with the widest scan. */
  uint64_t cap = PA_OBS_HEADER + (uint64_t)d->max_robots *
                                     (PA_OBS_FIELDS * 8 + 4ull * d->max_beams);
  if (OBS_OFF_BLOCK + cap > SEG_MAX_BYTES) {
    pa_shm_errf(err, err_sz,
                "%s: %" PRIu64 " bytes for max_robots %" PRIu32
                " x max_beams %" PRIu32 " is over the %llu-byte limit",
                name, OBS_OFF_BLOCK + cap, d->max_robots, d->max_beams,
                SEG_MAX_BYTES);
    return PA_SHM_EINVAL;
  }
  uint64_t sizes[PA_SHM_MAX_SIZES] = {d->max_robots, d->max_beams,
                                      sizeof(pa_obs_seg)};
  const pa_shm_header *ch = s->ctl_seg.base;
  /* A restarted pa-sim keeps the segment a client may hold, and its seq
   * goes on: a client's old block can never pass for a new one. */
  if (pa_shm_attach(seg, name, PA_SEG_OBS, sizes, NULL, 0) == 0) {
    const pa_shm_header *h = seg->base;
    pa_obs_seg *o = (pa_obs_seg *)((char *)seg->base + PA_SHM_BODY_OFF);
    if (h->boot_id == ch->boot_id && o->off_block == OBS_OFF_BLOCK &&
        o->capacity == cap && seg->size >= OBS_OFF_BLOCK + cap) {
      if (o->seq & 1) /* a block cut short by the crash */
        __atomic_store_n(&o->seq, o->seq + 1, __ATOMIC_RELEASE);
      *obs = o;
      return 0;
    }
    pa_shm_detach(seg);
  }
  pa_shm_unlink(name);
  rc = pa_shm_create(seg, name, PA_SEG_OBS, sizes, OBS_OFF_BLOCK + cap,
                     ch->boot_id, err, err_sz);
  if (rc)
    return rc;
  pa_shm_header *h = seg->base;
  h->owner_pid = ch->owner_pid; /* the instance's owner, for staleness */
  pa_obs_seg *o = (pa_obs_seg *)((char *)seg->base + PA_SHM_BODY_OFF);
  o->off_block = OBS_OFF_BLOCK;
  o->capacity = cap;
  pa_shm_publish(seg);
  *obs = o;
  return 0;
}

size_t pa_stack_ports_read(const pa_stack *s, pa_port_rec *out) {
  const pa_ctl *ctl = s->ctl;
  for (int tries = 0; tries < 1000; tries++) {
    uint64_t s0 = __atomic_load_n(&ctl->ports_seq, __ATOMIC_ACQUIRE);
    if (s0 & 1)
      continue;
    memcpy(out, (const void *)ctl->ports, sizeof ctl->ports);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&ctl->ports_seq, __ATOMIC_RELAXED) == s0)
      break;
  }
  size_t n = 0;
  for (unsigned i = 0; i < PA_PORTS_MAX; i++)
    if (out[i].kind != PA_PORT_FREE) {
      out[i].name[PA_PORT_NAME_MAX - 1] = 0; /* another process's memory */
      out[i].frontend[PA_PORT_NAME_MAX - 1] = 0;
      out[n++] = out[i];
    }
  return n;
}
