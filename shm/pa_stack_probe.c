/* pa_stack_probe.c - what is in /dev/shm for an instance: live, stale, none
 * or not ours (another user's, or not 0600), and removing an instance. */
#define _GNU_SOURCE
#include "pa_shm_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A ctl object without a filled header this old was left by a crash. */
#define CREATE_GRACE_S 10

/* ---- probing and unlinking ------------------------------------------------
 */

/* Calls fn for every /dev/shm object of the instance whose segment name
 * starts with seg (name without '/'); returns how many there are. */
static int for_each_object(const char *instance, const char *seg,
                           void (*fn)(const char *name, void *arg), void *arg) {
  char prefix[PA_SHM_NAME_MAX];
  snprintf(prefix, sizeof prefix, "playarea.%s.%s", instance, seg);
  size_t pl = strlen(prefix);
  DIR *dir = opendir("/dev/shm");
  if (!dir)
    return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    if (strncmp(e->d_name, prefix, pl) != 0)
      continue;
    n++;
    if (fn)
      fn(e->d_name, arg);
  }
  closedir(dir);
  return n;
}

int pa_stack_count_objects(const char *instance, const char *segment_prefix) {
  return for_each_object(instance, segment_prefix, NULL, NULL);
}

/* An object playarea made and we may trust: ours, mode 0600. */
static bool ours(const struct stat *st) {
  return st->st_uid == geteuid() && (st->st_mode & 07777) == 0600;
}

typedef struct foreign_find {
  bool found;
  struct stat st;
  char name[300];
} foreign_find;

static void find_foreign(const char *name, void *arg) {
  foreign_find *f = arg;
  char path[320];
  struct stat st;
  snprintf(path, sizeof path, "/dev/shm/%s", name);
  if (f->found || lstat(path, &st) != 0)
    return;
  if (!S_ISREG(st.st_mode) || !ours(&st)) {
    f->found = true;
    f->st = st;
    snprintf(f->name, sizeof f->name, "/%s", name);
  }
}

typedef struct odd_find {
  char *why;
  size_t why_sz;
  bool found;
} odd_find;

static void find_odd(const char *name, void *arg) {
  odd_find *f = arg;
  char path[320];
  struct stat st;
  snprintf(path, sizeof path, "/dev/shm/%s", name);
  if (f->found || lstat(path, &st) != 0 || S_ISREG(st.st_mode))
    return;
  f->found = true;
  pa_shm_errf(f->why, f->why_sz, "%s: not a regular file (%s)", path,
              pa_shm_file_type(st.st_mode));
}

bool pa_stack_refused(const char *instance, char *why, size_t why_sz) {
  odd_find f = {why, why_sz, false};
  for_each_object(instance, "", find_odd, &f);
  return f.found;
}

/* The owner pid written in a ctl object (0 when unreadable). */
static int32_t ctl_owner(int fd, const struct stat *st) {
  if ((size_t)st->st_size < sizeof(pa_shm_header))
    return 0;
  void *p = mmap(NULL, sizeof(pa_shm_header), PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return 0;
  const pa_shm_header *h = p;
  int32_t owner = h->magic == PA_SHM_MAGIC
                      ? __atomic_load_n(&h->owner_pid, __ATOMIC_RELAXED)
                      : 0;
  munmap(p, sizeof(pa_shm_header));
  return owner;
}

/* PA_STACK_* of the instance; *owner gets the ctl's owner pid (0 unknown). */
int pa_stack_int_probe_owner(const char *instance, int32_t *owner) {
  *owner = 0;
  char name[PA_SHM_NAME_MAX];
  if (pa_shm_name(name, sizeof name, instance, "ctl", NULL, 0))
    return PA_STACK_NONE;
  /* Anything of another user (or not 0600) is not ours to judge: a
   * squatter's object must neither pass as live nor be taken for stale. */
  foreign_find ff;
  memset(&ff, 0, sizeof ff);
  for_each_object(instance, "", find_foreign, &ff);
  if (ff.found)
    return PA_STACK_FOREIGN;
  int fd = pa_shm_open_checked(name, O_RDONLY, 0, NULL, NULL, 0);
  if (fd < 0) {
    if (errno == EACCES || errno == EINVAL || errno == ELOOP)
      return PA_STACK_FOREIGN; /* planted since the scan: not ours either */
    /* Segments without a ctl are leftovers of a crash or a half unlink. */
    return for_each_object(instance, "", NULL, NULL) > 0 ? PA_STACK_STALE
                                                         : PA_STACK_NONE;
  }
  struct stat st;
  int res = PA_STACK_LIVE;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return PA_STACK_LIVE;
  }
  if (!ours(&st)) {
    close(fd);
    return PA_STACK_FOREIGN;
  }
  bool young = time(NULL) - st.st_ctime < CREATE_GRACE_S;
  if ((size_t)st.st_size < sizeof(pa_shm_header)) {
    res = young ? PA_STACK_LIVE : PA_STACK_STALE;
  } else {
    void *p = mmap(NULL, sizeof(pa_shm_header), PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      res = PA_STACK_LIVE;
    } else {
      const pa_shm_header *h = p;
      *owner = __atomic_load_n(&h->owner_pid, __ATOMIC_RELAXED);
      if (h->magic != PA_SHM_MAGIC || *owner <= 0)
        res = young ? PA_STACK_LIVE : PA_STACK_STALE;
      else
        res = pa_shm_pid_dead(*owner) ? PA_STACK_STALE : PA_STACK_LIVE;
      munmap(p, sizeof(pa_shm_header));
    }
  }
  close(fd);
  return res;
}

int pa_stack_probe(const char *instance) {
  int32_t owner;
  return pa_stack_int_probe_owner(instance, &owner);
}

bool pa_stack_foreign_info(const char *instance, uint32_t *uid, uint32_t *mode,
                           int32_t *owner, bool *owner_alive) {
  foreign_find ff;
  memset(&ff, 0, sizeof ff);
  *uid = *mode = 0;
  *owner = 0;
  *owner_alive = false;
  char name[PA_SHM_NAME_MAX];
  if (pa_shm_name(name, sizeof name, instance, "ctl", NULL, 0))
    return false;
  for_each_object(instance, "", find_foreign, &ff);
  struct stat st;
  int fd = pa_shm_open_checked(name, O_RDONLY, 0, &st, NULL, 0);
  if (fd >= 0) {
    if (!ff.found && !ours(&st)) {
      ff.found = true;
      ff.st = st;
    }
    *owner = ctl_owner(fd, &st);
  } else if (fd < 0 && errno == EACCES && !ff.found) {
    ff.found = true; /* hidden from us: its uid from the directory */
    char path[320];
    snprintf(path, sizeof path, "/dev/shm%s", name);
    if (stat(path, &ff.st) != 0)
      memset(&ff.st, 0, sizeof ff.st);
  }
  if (fd >= 0)
    close(fd);
  if (!ff.found)
    return false;
  *uid = (uint32_t)ff.st.st_uid;
  *mode = (uint32_t)(ff.st.st_mode & 07777);
  /* Another user's real instance: its owner runs as that user (an object of
   * ours with a wrong mode is no instance of ours, live or not). */
  if (*owner > 0 && *uid != (uint32_t)geteuid() && !pa_shm_pid_dead(*owner)) {
    char proc[64];
    struct stat ps;
    snprintf(proc, sizeof proc, "/proc/%d", (int)*owner);
    *owner_alive = stat(proc, &ps) == 0 && ps.st_uid == ff.st.st_uid;
  }
  return true;
}

static void unlink_object(const char *name, void *arg) {
  int *n = arg;
  char full[300];
  snprintf(full, sizeof full, "/%s", name);
  if (shm_unlink(full) == 0)
    (*n)++;
}

int pa_stack_unlink(const char *instance) {
  char name[PA_SHM_NAME_MAX];
  if (pa_shm_name(name, sizeof name, instance, "ctl", NULL, 0))
    return PA_SHM_EINVAL;
  int removed = 0;
  for_each_object(instance, "", unlink_object, &removed);
  /* In case /dev/shm is not where shm_open keeps objects. */
  static const char *const segs[] = {"ctl", "state", "scan",     "camera",
                                     "map", "obs",   "map-next", "atlas"};
  for (size_t i = 0; i < sizeof segs / sizeof segs[0]; i++) {
    pa_shm_name(name, sizeof name, instance, segs[i], NULL, 0);
    if (shm_unlink(name) == 0)
      removed++;
  }
  return removed;
}
