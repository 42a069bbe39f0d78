/* pa-shmctl - list, garbage-collect and remove playarea shm instances.
 *
 *   pa-shmctl ls            every instance in /dev/shm, live, stale or
 *                           not-ours (another user's: liveness unknown)
 *   pa-shmctl gc [PREFIX]   remove instances whose owner pid is dead (only
 *                           those whose name starts with PREFIX)
 *   pa-shmctl rm INSTANCE   remove one instance (all its segments)
 *   pa-shmctl layout --json the shared layout a lock-free reader needs (ring
 *                           header and slots, the state/scan/camera records),
 *                           from the structs themselves (offsetof, sizeof)
 */
#define _GNU_SOURCE
#include "pa_shm_int.h"
#include "pa_util.h"

#include <dirent.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_INSTANCES 1024

typedef struct inst_info {
  char name[PA_SHM_INSTANCE_MAX];
  int segments;
  uint64_t bytes; /* object sizes (tmpfs pages are allocated lazily) */
} inst_info;

static int find_instance(inst_info *v, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(v[i].name, name))
      return i;
  return -1;
}

/* Collects "playarea.<instance>.<segment>" objects by instance. */
static int scan_instances(inst_info *v, int max) {
  DIR *d = opendir("/dev/shm");
  if (!d) {
    perror("pa-shmctl: /dev/shm");
    return -1;
  }
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, "playarea.", 9) != 0)
      continue;
    const char *b = e->d_name + 9;
    const char *dot = strchr(b, '.');
    if (!dot || (size_t)(dot - b) >= PA_SHM_INSTANCE_MAX || dot == b)
      continue;
    char inst[PA_SHM_INSTANCE_MAX];
    memcpy(inst, b, (size_t)(dot - b));
    inst[dot - b] = '\0';
    int i = find_instance(v, n, inst);
    if (i < 0) {
      if (n >= max)
        continue;
      i = n++;
      memset(&v[i], 0, sizeof v[i]);
      snprintf(v[i].name, sizeof v[i].name, "%s", inst);
    }
    v[i].segments++;
    char path[300];
    struct stat st;
    snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
    if (stat(path, &st) == 0)
      v[i].bytes += (uint64_t)st.st_size;
  }
  closedir(d);
  return n;
}

static int32_t owner_of(const char *instance) {
  char name[PA_SHM_NAME_MAX];
  pa_shm_seg seg;
  if (pa_shm_name(name, sizeof name, instance, "ctl", NULL, 0) ||
      pa_shm_attach(&seg, name, PA_SEG_CTL, NULL, NULL, 0))
    return 0;
  int32_t pid = ((const pa_shm_header *)seg.base)->owner_pid;
  pa_shm_detach(&seg);
  return pid;
}

static const char *state_name(int st) {
  /* Another user's instance: we cannot see whether its owner lives. */
  return st == PA_STACK_LIVE      ? "live"
         : st == PA_STACK_STALE   ? "stale"
         : st == PA_STACK_FOREIGN ? "not-ours"
                                  : "gone";
}

static int cmd_ls(void) {
  static inst_info v[MAX_INSTANCES];
  int n = scan_instances(v, MAX_INSTANCES);
  if (n < 0)
    return 1;
  printf("%-24s %-8s %8s %4s %10s  %s\n", "INSTANCE", "STATE", "OWNER", "SEGS",
         "MB", "HEADS (state scan camera)");
  for (int i = 0; i < n; i++) {
    int st = pa_stack_probe(v[i].name);
    char heads[400] = "-";
    pa_stack s;
    char err[256];
    if (st == PA_STACK_LIVE && pa_stack_attach(&s, v[i].name, err, sizeof err) == 0) {
      snprintf(heads, sizeof heads, "%" PRIu64 " %" PRIu64 " %" PRIu64,
               pa_ring_head(s.state), pa_ring_head(s.scan),
               pa_ring_head(s.camera));
      pa_stack_detach(&s);
    }
    int32_t owner = owner_of(v[i].name);
    uint32_t uid, mode;
    bool alive;
    char why[400];
    const char *state = state_name(st);
    if (st == PA_STACK_FOREIGN &&
        pa_stack_refused(v[i].name, why, sizeof why)) {
      state = "refused"; /* a planted FIFO or device: listed, never opened */
      snprintf(heads, sizeof heads, "%s", why);
    } else if (st == PA_STACK_FOREIGN &&
               pa_stack_foreign_info(v[i].name, &uid, &mode, &owner, &alive)) {
      snprintf(heads, sizeof heads, "uid %u mode %04o", uid, mode);
    }
    printf("%-24s %-8s %8d %4d %10.1f  %s\n", v[i].name, state, (int)owner,
           v[i].segments, (double)v[i].bytes / (1024.0 * 1024.0), heads);
  }
  return 0;
}

static int cmd_gc(const char *prefix) {
  static inst_info v[MAX_INSTANCES];
  int n = scan_instances(v, MAX_INSTANCES);
  if (n < 0)
    return 1;
  int removed = 0;
  for (int i = 0; i < n; i++) {
    if (prefix && strncmp(v[i].name, prefix, strlen(prefix)) != 0)
      continue;
    int st = pa_stack_probe(v[i].name);
    char why[400];
    if (st == PA_STACK_FOREIGN &&
        pa_stack_refused(v[i].name, why, sizeof why)) {
      printf("left instance %s: refused: %s\n", v[i].name, why);
      continue;
    }
    if (st == PA_STACK_FOREIGN) {
      uint32_t uid = 0, mode = 0;
      int32_t pid = 0;
      bool alive = false;
      pa_stack_foreign_info(v[i].name, &uid, &mode, &pid, &alive);
      printf("left instance %s: not ours (uid %u, mode %04o%s)\n", v[i].name,
             uid, mode, alive ? ", its owner is running" : "");
      continue;
    }
    if (st != PA_STACK_STALE)
      continue;
    int32_t pid = owner_of(v[i].name);
    int k = pa_stack_unlink(v[i].name);
    printf("removed stale instance %s (owner pid %d dead, %d segments)\n",
           v[i].name, (int)pid, k < 0 ? 0 : k);
    removed++;
  }
  if (!removed)
    printf("no stale instances\n");
  return 0;
}

static int cmd_rm(const char *instance) {
  char name[PA_SHM_NAME_MAX], err[200];
  if (pa_shm_name(name, sizeof name, instance, "ctl", err, sizeof err)) {
    fprintf(stderr, "pa-shmctl rm: %s\n", err);
    return 2;
  }
  int st = pa_stack_probe(instance);
  int32_t pid = owner_of(instance);
  int k = pa_stack_unlink(instance);
  if (k <= 0) {
    fprintf(stderr, "pa-shmctl rm: no instance '%s'\n", instance);
    return 1;
  }
  if (st == PA_STACK_LIVE)
    printf("removed live instance %s (owner pid %d still running; its "
           "processes keep their mappings)\n",
           instance, (int)pid);
  else
    printf("removed instance %s (%d segments)\n", instance, k);
  return 0;
}

/* ---- layout --json ---------------------------------------------------------
 * numpy-style type codes of the fields, chosen by the compiler. */
#define TCODE(v)                                                               \
  _Generic((v), uint8_t                                                        \
           : "u1", uint16_t                                                    \
           : "u2", uint32_t                                                    \
           : "u4", int32_t                                                     \
           : "i4", uint64_t                                                    \
           : "u8", int64_t                                                     \
           : "i8", float                                                       \
           : "f4", double                                                      \
           : "f8")

static bool first_field;
static void field(const char *name, size_t off, const char *type) {
  printf("%s\"%s\": {\"offset\": %zu, \"type\": \"%s\"}",
         first_field ? "" : ", ", name, off, type);
  first_field = false;
}
#define FIELD(T, f) field(#f, offsetof(T, f), TCODE(((T *)0)->f))

static void record_begin(const char *name, size_t size) {
  printf("\"%s\": {\"size\": %zu, \"fields\": {", name, size);
  first_field = true;
}

/* The records a reader decodes, field by field. */
static void records(void) {
  record_begin("pa_tick", sizeof(pa_tick));
  FIELD(pa_tick, tick);
  FIELD(pa_tick, sim_time);
  FIELD(pa_tick, wall_ns);
  FIELD(pa_tick, robot_count);
  FIELD(pa_tick, flags);
  FIELD(pa_tick, speed);
  FIELD(pa_tick, world_gen);
  printf("}}, ");
  record_begin("pa_robot_state", sizeof(pa_robot_state));
  FIELD(pa_robot_state, id);
  FIELD(pa_robot_state, gen);
  FIELD(pa_robot_state, flags);
  FIELD(pa_robot_state, scan_seq);
  FIELD(pa_robot_state, x);
  FIELD(pa_robot_state, y);
  FIELD(pa_robot_state, theta);
  FIELD(pa_robot_state, odom_x);
  FIELD(pa_robot_state, odom_y);
  FIELD(pa_robot_state, odom_theta);
  FIELD(pa_robot_state, v);
  FIELD(pa_robot_state, vy);
  FIELD(pa_robot_state, w);
  FIELD(pa_robot_state, head);
  FIELD(pa_robot_state, head_rate);
  FIELD(pa_robot_state, cmd_v);
  FIELD(pa_robot_state, cmd_vy);
  FIELD(pa_robot_state, cmd_w);
  FIELD(pa_robot_state, cmd_head);
  printf("}}, ");
  record_begin("pa_scan", sizeof(pa_scan));
  FIELD(pa_scan, tick);
  FIELD(pa_scan, sim_time);
  FIELD(pa_scan, wall_ns);
  FIELD(pa_scan, robot);
  FIELD(pa_scan, seq);
  FIELD(pa_scan, x);
  FIELD(pa_scan, y);
  FIELD(pa_scan, theta);
  FIELD(pa_scan, angle_min);
  FIELD(pa_scan, angle_increment);
  FIELD(pa_scan, range_min);
  FIELD(pa_scan, range_max);
  FIELD(pa_scan, count);
  printf("}}, ");
  record_begin("pa_frame", sizeof(pa_frame));
  FIELD(pa_frame, tick);
  FIELD(pa_frame, sim_time);
  FIELD(pa_frame, wall_ns);
  FIELD(pa_frame, robot);
  FIELD(pa_frame, seq);
  FIELD(pa_frame, x);
  FIELD(pa_frame, y);
  FIELD(pa_frame, theta);
  FIELD(pa_frame, head);
  FIELD(pa_frame, width);
  FIELD(pa_frame, height);
  FIELD(pa_frame, size);
  printf("}}, ");
  record_begin("pa_obs_seg", sizeof(pa_obs_seg));
  FIELD(pa_obs_seg, seq);
  FIELD(pa_obs_seg, tick);
  FIELD(pa_obs_seg, off_block);
  FIELD(pa_obs_seg, bytes);
  FIELD(pa_obs_seg, capacity);
  FIELD(pa_obs_seg, first);
  FIELD(pa_obs_seg, count);
  printf("}}, ");
  record_begin("pa_atlas_seg", sizeof(pa_atlas_seg));
  FIELD(pa_atlas_seg, req_seq);
  FIELD(pa_atlas_seg, seq);
  FIELD(pa_atlas_seg, done);
  FIELD(pa_atlas_seg, tick);
  FIELD(pa_atlas_seg, sim_time);
  FIELD(pa_atlas_seg, status);
  FIELD(pa_atlas_seg, render_pid);
  FIELD(pa_atlas_seg, d_first);
  FIELD(pa_atlas_seg, d_count);
  FIELD(pa_atlas_seg, d_width);
  FIELD(pa_atlas_seg, d_height);
  FIELD(pa_atlas_seg, off_frames);
  FIELD(pa_atlas_seg, capacity);
  FIELD(pa_atlas_seg, render_ns);
  FIELD(pa_atlas_seg, wake);
  printf("}}, ");
  record_begin("pa_lane", sizeof(pa_lane));
  FIELD(pa_lane, req);
  FIELD(pa_lane, done);
  FIELD(pa_lane, robot);
  FIELD(pa_lane, ticks);
  FIELD(pa_lane, v);
  FIELD(pa_lane, w);
  FIELD(pa_lane, status);
  FIELD(pa_lane, count);
  FIELD(pa_lane, beams);
  FIELD(pa_lane, tick);
  FIELD(pa_lane, obs_seq);
  FIELD(pa_lane, wake_off);
  FIELD(pa_lane, act_off);
  field("msg", offsetof(pa_lane, msg), "S96");
  field("reply_sem", offsetof(pa_lane, reply_sem), "sem");
  printf("}}");
}

static int cmd_layout(void) {
  pa_ring_layout r;
  pa_ring_get_layout(&r);
  printf("{\"layout_version\": %u, \"shm_dir\": \"/dev/shm\", "
         "\"segment_name\": \"playarea.{instance}.{segment}\", "
         "\"segments\": {\"state\": \"pa_tick\", \"scan\": \"pa_scan\", "
         "\"camera\": \"pa_frame\"}, \"body_offset\": %u, ",
         PA_SHM_LAYOUT_VERSION, (unsigned)PA_SHM_BODY_OFF);
  printf("\"header\": {\"size\": %zu, \"magic\": %u, \"fields\": {",
         sizeof(pa_shm_header), PA_SHM_MAGIC);
  first_field = true;
  field("magic", offsetof(pa_shm_header, magic), "u4");
  field("version", offsetof(pa_shm_header, version), "u4");
  field("kind", offsetof(pa_shm_header, kind), "u4");
  field("total_size", offsetof(pa_shm_header, total_size), "u8");
  field("ready", offsetof(pa_shm_header, ready), "u4");
  field("boot_id", offsetof(pa_shm_header, boot_id), "u8");
  printf("}}, \"ring\": {\"size\": %u, \"slot_header\": %u, \"fields\": {",
         r.size, r.slot_header);
  first_field = true;
  field("slot_count", r.off_slot_count, "u4");
  field("max_record", r.off_max_record, "u4");
  field("slot_size", r.off_slot_size, "u8");
  field("off_slots", r.off_off_slots, "u8");
  field("head", r.off_head, "u8");
  printf("}, \"slot_fields\": {");
  first_field = true;
  field("seq", r.off_slot_seq, "u8");
  field("len", r.off_slot_len, "u4");
  printf("}}, \"records\": {");
  records();
  /* the observation segment: pa_obs_seg at body_offset, then a PAB1 block */
  printf("}, \"obs\": {\"segment\": \"obs\", \"record\": \"pa_obs_seg\", "
         "\"kind\": %u, \"magic\": \"%s\", \"fields\": %u}",
         (unsigned)PA_SEG_OBS, PA_OBS_MAGIC, (unsigned)PA_OBS_FIELDS);
  /* the step lane: pa_lane in the ctl segment, at offset */
  printf(", \"lane\": {\"segment\": \"ctl\", \"record\": \"pa_lane\", "
         "\"offset\": %zu, \"status\": [",
         (size_t)PA_SHM_BODY_OFF + offsetof(pa_ctl, lane));
  for (int i = 0; i < PA_STATUS_COUNT; i++)
    printf("%s\"%s\"", i ? ", " : "", pa_status_code((pa_status)i));
  printf("]}");
  /* the atlas segment: pa_atlas_seg at body_offset, frames at off_frames */
  printf(", \"atlas\": {\"segment\": \"atlas\", \"record\": \"pa_atlas_seg\", "
         "\"kind\": %u, \"status\": {\"ok\": %d, \"bad_request\": %d, "
         "\"gl_error\": %d}}",
         (unsigned)PA_SEG_ATLAS, PA_ATLAS_OK, PA_ATLAS_BAD_REQUEST,
         PA_ATLAS_GL_ERROR);
  printf(", \"flags\": {\"PA_RS_ACTIVE\": %u, \"PA_RS_BUMPED\": %u, "
         "\"PA_TICK_PAUSED\": %u}}\n",
         (unsigned)PA_RS_ACTIVE, (unsigned)PA_RS_BUMPED,
         (unsigned)PA_TICK_PAUSED);
  return fflush(stdout) == 0 ? 0 : 1;
}

static void usage(FILE *f) {
  fprintf(f, "usage: pa-shmctl ls | gc [PREFIX] | rm INSTANCE | layout --json\n"
             "  ls           list playarea shm instances (live, stale, or\n"
             "               not-ours: another user's, liveness unknown)\n"
             "  gc [PREFIX]  remove instances whose owner process is dead\n"
             "               (only names starting with PREFIX if given)\n"
             "  rm INSTANCE  remove every segment of one instance\n"
             "  layout --json  the shared-memory layout for lock-free readers "
             "(JSON)\n");
}

int main(int argc, char **argv) {
  if (pa_version_arg("pa-shmctl", argc, argv))
    return 0;
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(cmd, "ls") && argc == 2)
    return cmd_ls();
  if (!strcmp(cmd, "gc") && argc <= 3)
    return cmd_gc(argc == 3 ? argv[2] : NULL);
  if (!strcmp(cmd, "rm") && argc == 3)
    return cmd_rm(argv[2]);
  if (!strcmp(cmd, "layout") && argc == 3 && !strcmp(argv[2], "--json"))
    return cmd_layout();
  fprintf(stderr, "pa-shmctl: bad command line '%s%s'\n", cmd,
          argc > 2 ? " ..." : "");
  usage(stderr);
  return 2;
}
