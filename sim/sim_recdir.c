/* sim_recdir.c - where export_dataset writes: its directory claimed under
 * --data_dir without following a symlink (pa_safefile), refused by name
 * when used (unless overwrite, or an export a crash cut short), and the
 * temporary files a crashed export left removed. */
#define _GNU_SOURCE
#include "pa_sim.h"
#include "sim_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* True if the directory dirfd has entries (other than . and ..), or
 * cannot be read. */
static bool dir_used(int dirfd) {
  int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0)
      close(fd);
    return true;
  }
  struct dirent *e;
  bool used = false;
  while (!used && (e = readdir(d)))
    used = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  return used;
}

/* The export directory rel under the data directory dd, claimed (its
 * absolute path in dir): resolved beneath dd without
 * following a symlink (pa_safefile: errors name rel as given, never tell
 * what exists outside); created, or reused when it is empty, holds an
 * export that never finished (PA_SIM_EXPORT_MARKER: a crash, a kill while
 * packing) or the request says overwrite. The temp files a crashed export
 * left beside it are removed. 0, or -1 with r set. */
int pa_sim_int_export_claim(const char *dd, const char *rel, const pa_cmd *c,
                            const char *const *busy, size_t n_busy, char *dir,
                            size_t dir_sz, pa_reply *r) {
  char err[PA_SAFE_REL_MAX + 128], base[PA_SAFE_NAME_MAX];
  int pfd = -1, root = pa_safe_root_open(dd, err, sizeof err);
  int rc = root < 0 ? PA_SAFE_IO
                    : pa_safe_parent(root, dd, rel, PA_SAFE_MKDIRS, &pfd, base,
                                     err, sizeof err);
  if (root >= 0)
    close(root);
  if (rc != PA_SAFE_OK) {
    pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, "export_dir: %s", err);
    return -1;
  }
  const char *inside = rel[0] == '/' ? rel + strlen(dd) : rel;
  snprintf(dir, dir_sz, "%s/%s", dd, inside[0] == '/' ? inside + 1 : inside);
  for (size_t i = 0; i < n_busy; i++)
    if (!strcmp(busy[i], dir)) {
      close(pfd);
      pa_sim_int_fail(r, PA_ERR_BUSY, "export_dir '%.60s' is being written",
                      rel);
      return -1;
    }
  bool ow = c->flags & PA_CMDF_OVERWRITE,
       pack = c->dataset.flags & PA_DATASET_PACK;
  char name[PA_SAFE_NAME_MAX + 16];
  snprintf(name, sizeof name, "%s.tar.gz.tmp", base); /* older pa-sims' */
  unlinkat(pfd, name, 0);
  pa_safe_clean_tmp(pfd, NULL);
  snprintf(name, sizeof name, "%s.tar.gz", base);
  struct stat sb;
  const char *why = NULL;
  if (pack && !ow && fstatat(pfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0)
    why = "%.60s.tar.gz exists already: give a new export_dir, or overwrite: "
          "true";
  int dfd = -1;
  if (!why && fstatat(pfd, base, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
    dfd =
        S_ISDIR(sb.st_mode)
            ? openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            : -1;
    bool crashed = dfd >= 0 && faccessat(dfd, PA_SIM_EXPORT_MARKER, F_OK,
                                         AT_SYMLINK_NOFOLLOW) == 0;
    if (dfd < 0)
      why = "export_dir '%.60s' exists and is not a directory";
    else if (!crashed && !ow && dir_used(dfd))
      why = "export_dir '%.60s' is not empty: give a new one, or overwrite: "
            "true";
  } else if (!why && mkdirat(pfd, base, 0755) == 0) {
    dfd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (!why && dfd < 0)
    why = "export_dir '%.60s': cannot create it";
  close(pfd);
  if (why) {
    if (dfd >= 0)
      close(dfd);
    pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, why, rel);
    return -1;
  }
  /* a reused one: no stale "complete" marker, no temp files; the export
   * marks itself unfinished until it is */
  unlinkat(dfd, "dataset.json", 0);
  unlinkat(dfd, "dataset.incomplete.json", 0);
  pa_safe_clean_tmp(dfd, ".tmp");
  int mfd = openat(dfd, PA_SIM_EXPORT_MARKER,
                   O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (mfd >= 0)
    close(mfd);
  close(dfd);
  return 0;
}
