/*
 * pa_safefile.h - files written inside a data directory, safely: the path
 * (as a client gave it, relative to the data directory) is resolved without
 * following a symlink or leaving the directory (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS where the kernel has it, else an O_NOFOLLOW walk one
 * component at a time); the content goes to a temporary file created
 * O_EXCL|O_NOFOLLOW in the target's directory, is fsync'd and renamed into
 * place (the directory fsync'd), so a crash leaves the old file or the new
 * one, never half of one. A file that exists is replaced only when the
 * caller says so. Error texts name the path as the client gave it, never
 * the data directory, and never tell whether something outside it exists.
 */
#ifndef PA_SAFEFILE_H
#define PA_SAFEFILE_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pa_safe_rc {
  PA_SAFE_OK = 0,
  PA_SAFE_FORBIDDEN = -1, /* '..', absolute outside, a symlink on the way */
  PA_SAFE_EXISTS = -2,    /* the target exists and overwrite was not asked */
  PA_SAFE_IO = -3,        /* a system call failed (ENOSPC, EFBIG, EIO ...) */
  PA_SAFE_INVALID = -4,   /* no file name, too long, not a directory ... */
} pa_safe_rc;

enum {
  PA_SAFE_OVERWRITE = 1u << 0, /* replace an existing file */
  PA_SAFE_MKDIRS = 1u << 1,    /* create missing directories (0755) */
};

#define PA_SAFE_NAME_MAX 256 /* a file name, NUL included */
#define PA_SAFE_REL_MAX 1024 /* a path as the client gave it */

/* One file being written: fd is the temporary file; the caller writes it
 * (write(2), fdopen, gzdopen ...) and ends with commit or abort. */
typedef struct pa_safe_file {
  int dirfd; /* the target's directory */
  int fd;    /* the temporary file, -1 once handed over */
  unsigned flags;
  char base[PA_SAFE_NAME_MAX]; /* the target's name in dirfd */
  char tmp[PA_SAFE_NAME_MAX];  /* the temporary file's name in dirfd */
  char rel[PA_SAFE_REL_MAX];   /* as the client gave it, for errors */
} pa_safe_file;

/* Suffix of every temporary file (".<name>.<pid>.<n>.pa-tmp"): what a
 * cleaner after a crash may remove. */
#define PA_SAFE_TMP_SUFFIX ".pa-tmp"

/* The directory fd (O_PATH is not enough for mkdirat on old kernels: a real
 * O_DIRECTORY fd) of canonical data_dir, or -1 with err. */
int pa_safe_root_open(const char *data_dir, char *err, size_t err_sz);

/* The directory that holds rel under root (PA_SAFE_MKDIRS creates missing
 * ones) as an fd, and rel's last component in base. rel may be absolute
 * when it names a place inside data_dir (canonical; NULL = refuse every
 * absolute path). PA_SAFE_* status; *dirfd >= 0 on PA_SAFE_OK. */
int pa_safe_parent(int root, const char *data_dir, const char *rel,
                   unsigned flags, int *dirfd, char base[PA_SAFE_NAME_MAX],
                   char *err, size_t err_sz);

/* Resolves rel, refuses an existing target unless PA_SAFE_OVERWRITE (a
 * directory always), and creates the temporary file. PA_SAFE_* status; on
 * any error nothing is left behind. */
int pa_safe_begin(pa_safe_file *f, int root, const char *data_dir,
                  const char *rel, unsigned flags, char *err, size_t err_sz);

/* Opens the target itself for writing, created O_EXCL (O_TRUNC when
 * PA_SAFE_OVERWRITE, never through a symlink): for a file streamed in
 * place, such as a video that must stay readable up to a crash. The fd, or
 * a negative PA_SAFE_* status with err. */
int pa_safe_open_direct(int root, const char *data_dir, const char *rel,
                        unsigned flags, char *err, size_t err_sz);

/* Writes n bytes to fd, retrying short writes: 0, or -1 with errno. */
int pa_safe_write_all(int fd, const void *buf, size_t n);

/* fsyncs and closes f->fd (unless the caller already closed it: set fd to
 * -1), renames the temporary file into place (never over a file that
 * appeared meanwhile without PA_SAFE_OVERWRITE) and fsyncs the directory.
 * PA_SAFE_* status; on error the temporary file is removed. */
int pa_safe_commit(pa_safe_file *f, char *err, size_t err_sz);

/* Removes the temporary file and closes everything (after an error). */
void pa_safe_abort(pa_safe_file *f);

/* The error text of a failed write through f ("cannot write runs/a.json:
 * No space left on device"), errno e. Returns PA_SAFE_IO. */
int pa_safe_io_error(const pa_safe_file *f, int e, char *err, size_t err_sz);

/* Removes the temporary files (PA_SAFE_TMP_SUFFIX) a crash left in the
 * directory dirfd (those of a writer whose pid still runs, this process's
 * included, are kept), and with a non-NULL suffix also names ending in it
 * ("*.tar.gz.tmp" of older versions). Returns how many were removed. */
int pa_safe_clean_tmp(int dirfd, const char *suffix);

/* Tests: resolve by the component walk even where openat2 exists. */
void pa_safe_force_walk(bool on);

#ifdef __cplusplus
}
#endif
#endif /* PA_SAFEFILE_H */
