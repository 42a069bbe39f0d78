/* pa-shmctl - list, garbage-collect and remove playarea shm instances.
 *
 *   pa-shmctl ls            every instance in /dev/shm, live, stale or
 *                           not-ours (another user's: liveness unknown)
 *   pa-shmctl gc [PREFIX]   remove instances whose owner pid is dead (only
 *                           those whose name starts with PREFIX)
 *   pa-shmctl rm INSTANCE   remove one instance (all its segments)
 */
#define _GNU_SOURCE
#include "pa_shm_int.h"

#include <dirent.h>
#include <inttypes.h>
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
    char heads[96] = "-";
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
    if (st == PA_STACK_FOREIGN &&
        pa_stack_foreign_info(v[i].name, &uid, &mode, &owner, &alive))
      snprintf(heads, sizeof heads, "uid %u mode %04o", uid, mode);
    printf("%-24s %-8s %8d %4d %10.1f  %s\n", v[i].name, state_name(st),
           (int)owner, v[i].segments, (double)v[i].bytes / (1024.0 * 1024.0),
           heads);
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

static void usage(FILE *f) {
  fprintf(f, "usage: pa-shmctl ls | gc [PREFIX] | rm INSTANCE\n"
             "  ls           list playarea shm instances (live, stale, or\n"
             "               not-ours: another user's, liveness unknown)\n"
             "  gc [PREFIX]  remove instances whose owner process is dead\n"
             "               (only names starting with PREFIX if given)\n"
             "  rm INSTANCE  remove every segment of one instance\n");
}

int main(int argc, char **argv) {
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
  fprintf(stderr, "pa-shmctl: bad command line '%s%s'\n", cmd,
          argc > 2 ? " ..." : "");
  usage(stderr);
  return 2;
}
