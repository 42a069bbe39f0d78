/* pa_shm.c - segments: names, create/attach with header validation, unlink. */
#define _GNU_SOURCE
#include "pa_shm_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How long attach waits for a segment that is being created. */
#define ATTACH_READY_WAIT_NS 100000000LL

void pa_shm_errf(char *err, size_t err_sz, const char *fmt, ...) {
  if (!err || !err_sz)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, err_sz, fmt, ap);
  va_end(ap);
}

int pa_shm_check_head(const char *what, const void *mem, size_t avail,
                      size_t head, uint32_t want, char *err, size_t err_sz) {
  if (!mem || avail < head) {
    pa_shm_errf(err, err_sz, "%s: %zu bytes is smaller than a %s header", what,
                avail, what);
    return PA_SHM_EMISMATCH;
  }
  uint32_t magic;
  memcpy(&magic, mem, sizeof magic); /* the first field of both */
  if (magic != want) {
    pa_shm_errf(err, err_sz,
                "%s: magic is 0x%08" PRIx32 ", expected 0x%08" PRIx32, what,
                magic, want);
    return PA_SHM_EMISMATCH;
  }
  return 0;
}

const char *pa_shm_strerror(int code) {
  switch (code) {
  case PA_SHM_OK: return "ok";
  case PA_SHM_EINVAL: return "invalid argument";
  case PA_SHM_ESYS: return "system call failed";
  case PA_SHM_EEXIST: return "already exists";
  case PA_SHM_ENOENT: return "does not exist";
  case PA_SHM_EMISMATCH: return "layout mismatch";
  case PA_SHM_EMPTY: return "empty";
  case PA_SHM_EFULL: return "full";
  case PA_SHM_ETIMEDOUT: return "timed out";
  case PA_SHM_ETOOBIG: return "record larger than buffer";
  case PA_SHM_ESTALE: return "stale (owner dead)";
  case PA_SHM_ENOTREADY: return "not ready yet";
  default: return "unknown error";
  }
}

int64_t pa_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void pa_shm_deadline(struct timespec *ts, int64_t timeout_ns) {
  int64_t t = pa_now_ns() + (timeout_ns > 0 ? timeout_ns : 0);
  ts->tv_sec = (time_t)(t / 1000000000LL);
  ts->tv_nsec = (long)(t % 1000000000LL);
}

void pa_shm_sem_post_once(sem_t *sem) {
  /* The caller's store (queue head, slot seq) must be visible before the
   * value is read, or a waiter that just consumed the last post misses it. */
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  int v = 0;
  if (sem_getvalue(sem, &v) == 0 && v > 0)
    return;
  sem_post(sem);
}

int pa_shm_sem_wait(sem_t *sem, int64_t timeout_ns) {
  if (timeout_ns < 0) {
    while (sem_wait(sem) != 0)
      if (errno != EINTR)
        return PA_SHM_ESYS;
    return 0;
  }
  struct timespec ts;
  pa_shm_deadline(&ts, timeout_ns);
  while (sem_clockwait(sem, CLOCK_MONOTONIC, &ts) != 0) {
    if (errno == ETIMEDOUT)
      return PA_SHM_ETIMEDOUT;
    if (errno != EINTR)
      return PA_SHM_ESYS;
  }
  return 0;
}

bool pa_shm_pid_dead(int32_t pid) {
  if (pid <= 0)
    return false;
  return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

bool pa_shm_is_stale(const pa_shm_header *h) {
  return pa_shm_pid_dead(__atomic_load_n(&h->owner_pid, __ATOMIC_RELAXED));
}

uint64_t pa_shm_new_boot_id(void) {
  uint64_t id = 0;
  while (id == 0) {
    if (getrandom(&id, sizeof id, 0) != (ssize_t)sizeof id)
      id = (uint64_t)pa_now_ns() ^ ((uint64_t)getpid() << 32);
  }
  return id;
}

static bool instance_ok(const char *s, size_t *len) {
  size_t n = 0;
  for (; s[n]; n++) {
    char c = s[n];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok || n >= PA_SHM_INSTANCE_MAX - 1)
      return false;
  }
  *len = n;
  return n > 0;
}

bool pa_snapshot_name_ok(const char *name) {
  size_t n = 0;
  for (; name[n]; n++) {
    char ch = name[n];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
          (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
      return false;
  }
  return n >= 1 && n <= PA_SNAPSHOT_NAME_MAX;
}

int pa_shm_name(char *out, size_t out_sz, const char *instance,
                const char *segment, char *err, size_t err_sz) {
  size_t n = 0;
  if (!instance || !instance_ok(instance, &n)) {
    pa_shm_errf(err, err_sz,
                "bad instance name '%.60s': use 1 to %d characters of "
                "A-Z a-z 0-9 _ -",
                instance ? instance : "(null)", PA_SHM_INSTANCE_MAX - 1);
    return PA_SHM_EINVAL;
  }
  size_t sn = 0;
  if (!segment || !instance_ok(segment, &sn)) {
    pa_shm_errf(err, err_sz, "bad segment name '%.60s'",
                segment ? segment : "(null)");
    return PA_SHM_EINVAL;
  }
  int w = snprintf(out, out_sz, "/playarea.%s.%s", instance, segment);
  if (w < 0 || (size_t)w >= out_sz || (size_t)w >= PA_SHM_NAME_MAX) {
    pa_shm_errf(err, err_sz, "segment name for '%s.%s' too long", instance,
                segment);
    return PA_SHM_EINVAL;
  }
  return 0;
}

const char *pa_shm_kind_name(uint32_t kind) {
  switch (kind) {
  case PA_SEG_CTL: return "ctl";
  case PA_SEG_STATE: return "state";
  case PA_SEG_SCAN: return "scan";
  case PA_SEG_CAMERA: return "camera";
  case PA_SEG_MAP: return "map";
  case PA_SEG_OBS:
    return "obs";
  case PA_SEG_ATLAS:
    return "atlas";
  case PA_SEG_TEST: return "test";
  default: return "unknown";
  }
}

/* Names of sizes[] per kind; must match pa_stack.c's layout table. */
static const char *const size_names_ctl[PA_SHM_MAX_SIZES] = {
    "max_robots", "max_obstacles", "cmd_capacity", "sizeof(pa_ctl)",
    "sizeof(pa_robot_info)", "sizeof(pa_obstacle_info)", "sizeof(pa_cmd)",
    "sizeof(pa_reply)"};
static const char *const size_names_state[PA_SHM_MAX_SIZES] = {
    "slot_count", "max_record", "max_readers", "max_robots",
    "sizeof(pa_tick)", "sizeof(pa_robot_state)", NULL, NULL};
static const char *const size_names_scan[PA_SHM_MAX_SIZES] = {
    "slot_count", "max_record", "max_readers", "max_beams",
    "sizeof(pa_scan)", NULL, NULL, NULL};
static const char *const size_names_camera[PA_SHM_MAX_SIZES] = {
    "slot_count", "max_record", "max_readers", "max_cam_width",
    "max_cam_height", "sizeof(pa_frame)", NULL, NULL};
static const char *const size_names_map[PA_SHM_MAX_SIZES] = {
    "width", "height", "sizeof(pa_map_block)", NULL, NULL, NULL, NULL, NULL};

const char *pa_shm_size_name(uint32_t kind, unsigned i, char *tmp,
                             size_t tmp_sz) {
  const char *const *t = NULL;
  switch (kind) {
  case PA_SEG_CTL: t = size_names_ctl; break;
  case PA_SEG_STATE: t = size_names_state; break;
  case PA_SEG_SCAN: t = size_names_scan; break;
  case PA_SEG_CAMERA: t = size_names_camera; break;
  case PA_SEG_MAP: t = size_names_map; break;
  default: break;
  }
  if (t && i < PA_SHM_MAX_SIZES && t[i])
    return t[i];
  snprintf(tmp, tmp_sz, "sizes[%u]", i);
  return tmp;
}

const char *pa_shm_file_type(unsigned st_mode) {
  switch (st_mode & S_IFMT) {
  case S_IFREG:
    return "a regular file";
  case S_IFIFO:
    return "a FIFO";
  case S_IFSOCK:
    return "a socket";
  case S_IFCHR:
    return "a character device";
  case S_IFBLK:
    return "a block device";
  case S_IFDIR:
    return "a directory";
  case S_IFLNK:
    return "a symlink";
  default:
    return "of an unknown type";
  }
}

int pa_shm_open_checked(const char *name, int flags, unsigned mode,
                        struct stat *st, char *err, size_t err_sz) {
  /* O_NONBLOCK: a planted FIFO must not hold open() until a writer comes */
  int fd =
      shm_open(name, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
               (mode_t)mode);
  if (fd < 0) {
    int e = errno;
    if (e == ELOOP)
      pa_shm_errf(err, err_sz, "/dev/shm%s: not a regular file (a symlink)",
                  name);
    else
      pa_shm_errf(err, err_sz, "%s: %s", name,
                  e == ENOENT ? "does not exist" : strerror(e));
    errno = e;
    return -1;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    pa_shm_errf(err, err_sz, "%s: fstat: %s", name, strerror(e));
    close(fd);
    errno = e;
    return -1;
  }
  if (!S_ISREG(sb.st_mode)) {
    pa_shm_errf(err, err_sz, "/dev/shm%s: not a regular file (%s)", name,
                pa_shm_file_type(sb.st_mode));
    close(fd);
    errno = EINVAL;
    return -1;
  }
  if (st)
    *st = sb;
  return fd;
}

int pa_shm_create(pa_shm_seg *seg, const char *name, uint32_t kind,
                  const uint64_t sizes[PA_SHM_MAX_SIZES], size_t total_size,
                  uint64_t boot_id, char *err, size_t err_sz) {
  memset(seg, 0, sizeof *seg);
  if (!name || name[0] != '/' || strlen(name) >= PA_SHM_NAME_MAX) {
    pa_shm_errf(err, err_sz, "bad segment name '%.100s'", name ? name : "");
    return PA_SHM_EINVAL;
  }
  if (total_size < PA_SHM_BODY_OFF) {
    pa_shm_errf(err, err_sz, "%s: total size %zu is smaller than the header",
                name, total_size);
    return PA_SHM_EINVAL;
  }
  char why[PA_SHM_NAME_MAX + 96];
  int fd = pa_shm_open_checked(name, O_RDWR | O_CREAT | O_EXCL, 0600, NULL, why,
                               sizeof why);
  if (fd < 0) {
    int e = errno;
    pa_shm_errf(err, err_sz, "%s: create: %s", name, strerror(e));
    errno = e;
    return e == EEXIST ? PA_SHM_EEXIST : PA_SHM_ESYS;
  }
  /* 0600 whatever the umask: probes take any other mode for not ours. */
  if (fchmod(fd, 0600) != 0) {
    int e = errno;
    close(fd);
    shm_unlink(name);
    pa_shm_errf(err, err_sz, "%s: chmod 0600: %s", name, strerror(e));
    errno = e;
    return PA_SHM_ESYS;
  }
  /* ftruncate, not posix_fallocate: tmpfs pages come lazily, creation is fast */
  if (ftruncate(fd, (off_t)total_size) != 0) {
    int e = errno;
    close(fd);
    shm_unlink(name);
    pa_shm_errf(err, err_sz, "%s: size %zu bytes: %s", name, total_size,
                strerror(e));
    errno = e;
    return PA_SHM_ESYS;
  }
  void *p = mmap(NULL, total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(name);
    pa_shm_errf(err, err_sz, "%s: mmap %zu bytes: %s", name, total_size,
                strerror(e));
    errno = e;
    return PA_SHM_ESYS;
  }
  pa_shm_header *h = p;
  h->magic = PA_SHM_MAGIC;
  h->version = PA_SHM_LAYOUT_VERSION;
  h->kind = kind;
  h->header_size = (uint32_t)sizeof(pa_shm_header);
  h->total_size = total_size;
  for (int i = 0; i < PA_SHM_MAX_SIZES; i++)
    h->sizes[i] = sizes ? sizes[i] : 0;
  h->owner_pid = (int32_t)getpid();
  h->boot_id = boot_id;
  /* instance = the part between "/playarea." and the last '.' */
  const char *b = strchr(name + 1, '.');
  const char *d = strrchr(name, '.');
  if (b && d && d > b) {
    size_t n = (size_t)(d - b - 1);
    if (n >= sizeof h->instance)
      n = sizeof h->instance - 1;
    memcpy(h->instance, b + 1, n);
  }
  snprintf(seg->name, sizeof seg->name, "%s", name);
  seg->base = p;
  seg->size = total_size;
  return 0;
}

void pa_shm_publish(pa_shm_seg *seg) {
  pa_shm_header *h = seg->base;
  __atomic_store_n(&h->ready, 1u, __ATOMIC_RELEASE);
}

#define MISMATCH(...)                                                         \
  do {                                                                        \
    pa_shm_errf(err, err_sz, __VA_ARGS__);                                    \
    rc = PA_SHM_EMISMATCH;                                                    \
    goto fail;                                                                \
  } while (0)

int pa_shm_attach(pa_shm_seg *seg, const char *name, uint32_t kind,
                  const uint64_t expect_sizes[PA_SHM_MAX_SIZES], char *err,
                  size_t err_sz) {
  memset(seg, 0, sizeof *seg);
  if (!name || name[0] != '/' || strlen(name) >= PA_SHM_NAME_MAX) {
    pa_shm_errf(err, err_sz, "bad segment name '%.100s'", name ? name : "");
    return PA_SHM_EINVAL;
  }
  int fd = pa_shm_open_checked(name, O_RDWR, 0, NULL, err, err_sz);
  if (fd < 0) {
    int e = errno;
    if (e == EINVAL || e == ELOOP)
      return PA_SHM_EMISMATCH;
    return e == ENOENT ? PA_SHM_ENOENT : PA_SHM_ESYS;
  }
  int rc = 0;
  void *p = MAP_FAILED;
  size_t size = 0;
  int64_t deadline = pa_now_ns() + ATTACH_READY_WAIT_NS;
  /* A creator may not have sized, filled or published it yet: poll briefly. */
  for (;;) {
    struct stat st;
    if (fstat(fd, &st) != 0) {
      pa_shm_errf(err, err_sz, "%s: fstat: %s", name, strerror(errno));
      rc = PA_SHM_ESYS;
      goto fail;
    }
    /* Only what playarea made as this user: another user's object (a
     * squatter's) must not feed our processes. */
    if (st.st_uid != geteuid() || (st.st_mode & 07777) != 0600) {
      pa_shm_errf(err, err_sz,
                  "%s: owned by uid %u with mode %04o, not ours (uid %u, "
                  "0600): refusing it",
                  name, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
                  (unsigned)geteuid());
      rc = PA_SHM_EMISMATCH;
      goto fail;
    }
    size = (size_t)st.st_size;
    if (size >= PA_SHM_BODY_OFF) {
      if (p == MAP_FAILED) {
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
          pa_shm_errf(err, err_sz, "%s: mmap %zu bytes: %s", name, size,
                      strerror(errno));
          rc = PA_SHM_ESYS;
          goto fail;
        }
      }
      if (__atomic_load_n(&((pa_shm_header *)p)->ready, __ATOMIC_ACQUIRE))
        break;
    }
    if (pa_now_ns() > deadline) {
      pa_shm_errf(err, err_sz, "%s: not ready yet (being created)", name);
      rc = PA_SHM_ENOTREADY;
      goto fail;
    }
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
  const pa_shm_header *h = p;
  if (h->magic != PA_SHM_MAGIC)
    MISMATCH("%s: magic is 0x%08" PRIx32 ", expected 0x%08" PRIx32
             " (not a playarea segment)",
             name, h->magic, (uint32_t)PA_SHM_MAGIC);
  if (h->version != PA_SHM_LAYOUT_VERSION)
    MISMATCH("%s: layout version is %" PRIu32 ", expected %u", name,
             h->version, PA_SHM_LAYOUT_VERSION);
  if (h->header_size != sizeof(pa_shm_header))
    MISMATCH("%s: header size is %" PRIu32 ", expected %zu", name,
             h->header_size, sizeof(pa_shm_header));
  if (h->kind != kind)
    MISMATCH("%s: kind is %" PRIu32 " (%s), expected %" PRIu32 " (%s)", name,
             h->kind, pa_shm_kind_name(h->kind), kind,
             pa_shm_kind_name(kind));
  if (h->total_size != size)
    MISMATCH("%s: total size is %" PRIu64 " bytes in the header, but the "
             "object has %zu",
             name, h->total_size, size);
  if (expect_sizes) {
    for (unsigned i = 0; i < PA_SHM_MAX_SIZES; i++) {
      if (expect_sizes[i] == PA_SHM_SIZE_ANY || h->sizes[i] == expect_sizes[i])
        continue;
      char tmp[16];
      MISMATCH("%s: %s is %" PRIu64 ", expected %" PRIu64, name,
               pa_shm_size_name(kind, i, tmp, sizeof tmp), h->sizes[i],
               expect_sizes[i]);
    }
  }
  close(fd);
  snprintf(seg->name, sizeof seg->name, "%s", name);
  seg->base = p;
  seg->size = size;
  return 0;
fail:
  if (p != MAP_FAILED)
    munmap(p, size);
  close(fd);
  return rc;
}

void pa_shm_detach(pa_shm_seg *seg) {
  if (seg->base)
    munmap(seg->base, seg->size);
  seg->base = NULL;
  seg->size = 0;
}

int pa_shm_rename(const char *from, const char *to) {
  if (!from || from[0] != '/' || !to || to[0] != '/')
    return PA_SHM_EINVAL;
  char a[PA_SHM_NAME_MAX + 16], b[PA_SHM_NAME_MAX + 16];
  snprintf(a, sizeof a, "/dev/shm%s", from);
  snprintf(b, sizeof b, "/dev/shm%s", to);
  return rename(a, b) == 0 ? 0 : PA_SHM_ESYS;
}

int pa_shm_unlink(const char *name) {
  if (!name || name[0] != '/')
    return PA_SHM_EINVAL;
  if (shm_unlink(name) != 0 && errno != ENOENT)
    return PA_SHM_ESYS;
  return 0;
}
