/* pa_safefile.c - files written inside a data directory without following
 * symlinks, whole or not at all (see pa_safefile.h). */
#define _GNU_SOURCE
#include "pa_safefile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A symlink is refused wherever it leads: where is not looked up. */
#define SYMLINK_FORBIDDEN                                                      \
  "forbidden path (a symlink, which may lead outside the data directory): %s"

static void errf(char *err, size_t err_sz, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void errf(char *err, size_t err_sz, const char *fmt, ...) {
  if (!err || !err_sz)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, err_sz, fmt, ap);
  va_end(ap);
}

int pa_safe_root_open(const char *data_dir, char *err, size_t err_sz) {
  int fd = open(data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    errf(err, err_sz, "the data directory cannot be opened: %s",
         strerror(errno));
  return fd;
}

/* rel made relative to the data directory: an absolute path must name a
 * place inside data_dir. NULL when it is outside (refused on the name
 * alone: nothing outside is looked up). */
static const char *relative(const char *data_dir, const char *rel) {
  if (rel[0] != '/')
    return rel;
  if (!data_dir)
    return NULL;
  size_t n = strlen(data_dir);
  while (n > 1 && data_dir[n - 1] == '/')
    n--;
  if (strncmp(rel, data_dir, n) || (rel[n] != '/' && rel[n] != 0))
    return NULL;
  return rel + n;
}

static bool force_walk;
void pa_safe_force_walk(bool on) { force_walk = on; }

/* Opens dir (relative to root, no '..' in it) in one call, beneath root and
 * through no symlink: the fd, or -1 with errno (ENOSYS: no openat2). */
static int open_beneath(int root, const char *dir) {
#ifdef SYS_openat2
  if (force_walk)
    return errno = ENOSYS, -1;
  struct open_how how;
  memset(&how, 0, sizeof how);
  how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return (int)syscall(SYS_openat2, root, dir, &how, sizeof how);
#else
  (void)root, (void)dir;
  errno = ENOSYS;
  return -1;
#endif
}

/* One directory component under cur, never through a symlink (created when
 * mk): the fd, or a negative PA_SAFE_* status with err. */
static int open_component(int cur, const char *c, bool mk, const char *rel,
                          char *err, size_t err_sz) {
  for (int tries = 0; tries < 2; tries++) {
    int fd = openat(cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
      return fd;
    int e = errno;
    struct stat st;
    if (e == ELOOP || ((e == ENOTDIR || e == EACCES) &&
                       fstatat(cur, c, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                       S_ISLNK(st.st_mode))) {
      errf(err, err_sz, SYMLINK_FORBIDDEN, rel);
      return PA_SAFE_FORBIDDEN;
    }
    if (e == ENOTDIR) {
      errf(err, err_sz, "%s: '%s' is not a directory", rel, c);
      return PA_SAFE_INVALID;
    }
    if (e != ENOENT || !mk || tries) {
      errf(err, err_sz, "%s: %s", rel, strerror(e));
      return e == ENOENT ? PA_SAFE_INVALID : PA_SAFE_IO;
    }
    if (mkdirat(cur, c, 0755) != 0 && errno != EEXIST) {
      errf(err, err_sz, "%s: cannot create '%s': %s", rel, c, strerror(errno));
      return PA_SAFE_IO;
    }
  }
  errf(err, err_sz, "%s: cannot open", rel);
  return PA_SAFE_IO;
}

int pa_safe_parent(int root, const char *data_dir, const char *rel,
                   unsigned flags, int *dirfd, char base[PA_SAFE_NAME_MAX],
                   char *err, size_t err_sz) {
  *dirfd = -1;
  base[0] = 0;
  const char *r = relative(data_dir, rel);
  if (!r) {
    errf(err, err_sz, "forbidden path (outside the data directory): %s", rel);
    return PA_SAFE_FORBIDDEN;
  }
  /* components: '..' refused, '' and '.' skipped, the last one is base */
  char path[PA_SAFE_REL_MAX], parent[PA_SAFE_REL_MAX] = "";
  if (snprintf(path, sizeof path, "%s", r) >= (int)sizeof path) {
    errf(err, err_sz, "path too long (over %d bytes)", PA_SAFE_REL_MAX - 1);
    return PA_SAFE_INVALID;
  }
  size_t plen = 0;
  char *save = NULL;
  const char *last = NULL;
  for (char *c = strtok_r(path, "/", &save); c;
       c = strtok_r(NULL, "/", &save)) {
    if (!strcmp(c, ".."))
      return errf(err, err_sz, "forbidden path ('..'): %s", rel),
             PA_SAFE_FORBIDDEN;
    if (!strcmp(c, "."))
      continue;
    if (last) /* the previous one is a directory */
      plen += (size_t)snprintf(parent + plen, sizeof parent - plen, "%s%s",
                               plen ? "/" : "", last);
    last = c;
  }
  size_t rl = strlen(r);
  if (!last || strlen(last) >= PA_SAFE_NAME_MAX || r[rl - 1] == '/' ||
      !strcmp(last, ".") || (rl >= 2 && !strcmp(r + rl - 2, "/."))) {
    errf(err, err_sz, "path '%s' does not end in a file name", rel);
    return PA_SAFE_INVALID;
  }
  snprintf(base, PA_SAFE_NAME_MAX, "%s", last);
  if (!parent[0]) {
    *dirfd = fcntl(root, F_DUPFD_CLOEXEC, 0);
    return *dirfd >= 0 ? PA_SAFE_OK
                       : (errf(err, err_sz, "%s: %s", rel, strerror(errno)),
                          PA_SAFE_IO);
  }
  int fd = open_beneath(root, parent);
  if (fd >= 0) {
    *dirfd = fd;
    return PA_SAFE_OK;
  }
  if (errno == EXDEV || errno == ELOOP) {
    errf(err, err_sz, SYMLINK_FORBIDDEN, rel);
    return PA_SAFE_FORBIDDEN;
  }
  /* no openat2, or a directory to create: one component at a time */
  int cur = fcntl(root, F_DUPFD_CLOEXEC, 0);
  if (cur < 0)
    return errf(err, err_sz, "%s: %s", rel, strerror(errno)), PA_SAFE_IO;
  save = NULL;
  for (char *c = strtok_r(parent, "/", &save); c;
       c = strtok_r(NULL, "/", &save)) {
    int next = open_component(cur, c, flags & PA_SAFE_MKDIRS, rel, err, err_sz);
    close(cur);
    if (next < 0)
      return next;
    cur = next;
  }
  *dirfd = cur;
  return PA_SAFE_OK;
}

/* The target base in dirfd may be written: PA_SAFE_OK, EXISTS or INVALID. */
static int check_target(int dirfd, const char *base, unsigned flags,
                        const char *rel, char *err, size_t err_sz) {
  struct stat st;
  if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0)
    return PA_SAFE_OK;
  if (S_ISDIR(st.st_mode)) {
    errf(err, err_sz, "%s is a directory", rel);
    return PA_SAFE_INVALID;
  }
  if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) { /* a FIFO, a device */
    errf(err, err_sz, "%s: not a regular file", rel);
    return PA_SAFE_INVALID;
  }
  if (!(flags & PA_SAFE_OVERWRITE)) {
    errf(err, err_sz, "%s already exists (give overwrite: true to replace it)",
         rel);
    return PA_SAFE_EXISTS;
  }
  return PA_SAFE_OK;
}

int pa_safe_begin(pa_safe_file *f, int root, const char *data_dir,
                  const char *rel, unsigned flags, char *err, size_t err_sz) {
  static unsigned counter;
  memset(f, 0, sizeof *f);
  f->fd = -1;
  f->flags = flags;
  snprintf(f->rel, sizeof f->rel, "%s", rel);
  int rc = pa_safe_parent(root, data_dir, rel, flags, &f->dirfd, f->base, err,
                          err_sz);
  if (rc == PA_SAFE_OK)
    rc = check_target(f->dirfd, f->base, flags, rel, err, err_sz);
  if (rc != PA_SAFE_OK) {
    if (f->dirfd >= 0)
      close(f->dirfd);
    f->dirfd = -1;
    return rc;
  }
  snprintf(f->tmp, sizeof f->tmp, ".%.200s.%d.%u" PA_SAFE_TMP_SUFFIX, f->base,
           (int)getpid(), __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
  f->fd = openat(f->dirfd, f->tmp,
                 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (f->fd < 0) {
    int e = errno;
    close(f->dirfd);
    f->dirfd = -1;
    errf(err, err_sz, "cannot write %s: %s", rel, strerror(e));
    return PA_SAFE_IO;
  }
  return PA_SAFE_OK;
}

int pa_safe_open_direct(int root, const char *data_dir, const char *rel,
                        unsigned flags, char *err, size_t err_sz) {
  char base[PA_SAFE_NAME_MAX];
  int dirfd;
  int rc =
      pa_safe_parent(root, data_dir, rel, flags, &dirfd, base, err, err_sz);
  if (rc != PA_SAFE_OK)
    return rc;
  rc = check_target(dirfd, base, flags, rel, err, err_sz);
  if (rc != PA_SAFE_OK) {
    close(dirfd);
    return rc;
  }
  /* O_NONBLOCK: a FIFO in its place must not hold us; cleared below */
  int o = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
  int fd =
      openat(dirfd, base, o | (flags & PA_SAFE_OVERWRITE ? 0 : O_EXCL), 0644);
  int e = errno;
  close(dirfd);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    close(fd);
    errf(err, err_sz, "%s: not a regular file", rel);
    return PA_SAFE_INVALID;
  }
  if (fd < 0 && e == ELOOP) {
    errf(err, err_sz, "forbidden path (a symlink): %s", rel);
    return PA_SAFE_FORBIDDEN;
  }
  if (fd < 0 && e == EEXIST) {
    errf(err, err_sz, "%s already exists (give overwrite: true to replace it)",
         rel);
    return PA_SAFE_EXISTS;
  }
  if (fd < 0) {
    errf(err, err_sz, "cannot write %s: %s", rel, strerror(e));
    return PA_SAFE_IO;
  }
  if ((flags & PA_SAFE_OVERWRITE) && ftruncate(fd, 0) != 0) {
    e = errno;
    close(fd);
    errf(err, err_sz, "cannot write %s: %s", rel, strerror(e));
    return PA_SAFE_IO;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

int pa_safe_write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0) {
      if (k == 0)
        errno = ENOSPC;
      return -1;
    }
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

int pa_safe_io_error(const pa_safe_file *f, int e, char *err, size_t err_sz) {
  errf(err, err_sz, "cannot write %s: %s", f->rel, strerror(e));
  return PA_SAFE_IO;
}

int pa_safe_commit(pa_safe_file *f, char *err, size_t err_sz) {
  int e = 0;
  if (f->fd >= 0) {
    if (fsync(f->fd) != 0)
      e = errno;
    if (close(f->fd) != 0 && !e)
      e = errno;
    f->fd = -1;
  }
  int rc = PA_SAFE_OK;
  bool linked = false; /* the link fallback leaves the temporary name */
  if (e) {
    rc = pa_safe_io_error(f, e, err, err_sz);
  } else if (f->flags & PA_SAFE_OVERWRITE) {
    if (renameat(f->dirfd, f->tmp, f->dirfd, f->base) != 0)
      rc = pa_safe_io_error(f, errno, err, err_sz);
  } else if (renameat2(f->dirfd, f->tmp, f->dirfd, f->base, RENAME_NOREPLACE) !=
             0) {
    /* a file that appeared meanwhile is not replaced either */
    e = errno;
    if (e == EINVAL && linkat(f->dirfd, f->tmp, f->dirfd, f->base, 0) == 0)
      e = 0, linked = true;
    else if (e == EINVAL)
      e = errno;
    if (e == EEXIST)
      errf(err, err_sz,
           "%s already exists (give overwrite: true to replace it)", f->rel),
          rc = PA_SAFE_EXISTS;
    else if (e)
      rc = pa_safe_io_error(f, e, err, err_sz);
  }
  if (rc != PA_SAFE_OK || linked)
    unlinkat(f->dirfd, f->tmp, 0);
  if (rc == PA_SAFE_OK)
    fsync(f->dirfd); /* the rename itself survives a power cut */
  close(f->dirfd);
  f->dirfd = -1;
  return rc;
}

void pa_safe_abort(pa_safe_file *f) {
  if (f->fd >= 0)
    close(f->fd);
  f->fd = -1;
  if (f->dirfd >= 0) {
    unlinkat(f->dirfd, f->tmp, 0);
    close(f->dirfd);
  }
  f->dirfd = -1;
}

static bool ends_with(const char *s, const char *suf) {
  size_t n = strlen(s), k = strlen(suf);
  return n > k && !strcmp(s + n - k, suf);
}

/* A temporary file of a writer that still runs (".<name>.<pid>.<n>" +
 * PA_SAFE_TMP_SUFFIX with a live pid, ours included): not ours to remove. */
static bool writer_alive(const char *name) {
  size_t n = strlen(name) - strlen(PA_SAFE_TMP_SUFFIX);
  char b[PA_SAFE_NAME_MAX];
  snprintf(b, sizeof b, "%.*s", (int)n, name);
  char *dot = strrchr(b, '.'); /* .<n> */
  if (!dot)
    return false;
  *dot = 0;
  dot = strrchr(b, '.'); /* .<pid> */
  char *end;
  long pid = dot ? strtol(dot + 1, &end, 10) : 0;
  if (!dot || *end || pid <= 0 || pid > INT32_MAX)
    return false;
  return pid == getpid() || kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

int pa_safe_clean_tmp(int dirfd, const char *suffix) {
  int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0)
      close(fd);
    return 0;
  }
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    bool ours = ends_with(e->d_name, PA_SAFE_TMP_SUFFIX);
    if ((!ours && !(suffix && *suffix && ends_with(e->d_name, suffix))) ||
        (ours && writer_alive(e->d_name)))
      continue;
    struct stat st;
    if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        !S_ISDIR(st.st_mode) && unlinkat(dirfd, e->d_name, 0) == 0)
      n++;
  }
  closedir(d);
  return n;
}
