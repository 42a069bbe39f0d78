/* datadir.c - files a client names live under --data_dir: the path check
 * every front-end that reads or writes a client's file goes through. */
#define _GNU_SOURCE
#include "netgw_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int pa_core_data_path(const pa_netgw *g, const char *in, bool existing,
                      char *out, size_t out_sz, char *err, size_t err_sz) {
  char dir[PATH_MAX];
  const char *d = g->def.data_dir && *g->def.data_dir ? g->def.data_dir : ".";
  if (!realpath(d, dir)) {
    snprintf(err, err_sz, "--data_dir %s: %s", d, strerror(errno));
    return -1;
  }
  size_t n = strlen(in);
  if (!n || n >= PATH_MAX / 2) {
    snprintf(err, err_sz, "path: empty or too long");
    return -1;
  }
  if (n < 6 || strcmp(in + n - 5, ".mcap")) {
    snprintf(err, err_sz, "path %s: the file name must end in .mcap", in);
    return -1;
  }
  /* No ".." component: the check below is on the parent's real path, and
   * ".." is never needed to name a file under the data directory. */
  for (const char *p = in; (p = strstr(p, "..")); p += 2)
    if ((p == in || p[-1] == '/') && (p[2] == '/' || p[2] == 0)) {
      snprintf(err, err_sz, "path %s: '..' is not allowed", in);
      return -1;
    }
  /* an absolute path outside is refused on its name, before anything is
   * looked up: the answer must not tell what exists outside */
  size_t dl = strlen(dir);
  if (in[0] == '/' && strcmp(dir, "/") &&
      (strncmp(in, dir, dl) || in[dl] != '/')) {
    snprintf(err, err_sz, "path %s: outside the data directory (--data_dir)",
             in);
    return -1;
  }
  char full[PATH_MAX * 2];
  if (in[0] == '/')
    snprintf(full, sizeof full, "%s", in);
  else
    snprintf(full, sizeof full, "%s/%s", dir, in);
  char *slash = strrchr(full, '/');
  char parent[PATH_MAX * 2], rparent[PATH_MAX];
  snprintf(parent, sizeof parent, "%.*s", (int)(slash - full), full);
  if (!parent[0])
    snprintf(parent, sizeof parent, "/");
  if (!realpath(parent, rparent)) { /* named as given: no data dir shown */
    snprintf(err, err_sz, "path %s: its directory: %s", in, strerror(errno));
    return -1;
  }
  if (strncmp(rparent, dir, dl) ||
      (rparent[dl] != '/' && rparent[dl] != 0 && strcmp(dir, "/"))) {
    snprintf(err, err_sz, "path %s: outside the data directory (--data_dir)",
             in);
    return -1;
  }
  if ((size_t)snprintf(out, out_sz, "%s/%s", rparent, slash + 1) >= out_sz) {
    snprintf(err, err_sz, "path %s: too long", in);
    return -1;
  }
  struct stat st;
  int e = lstat(out, &st);
  if (!existing && e == 0) {
    snprintf(err, err_sz, "path %s: exists (recordings never overwrite)", in);
    return -1;
  }
  if (existing && (e != 0 || !S_ISREG(st.st_mode))) {
    snprintf(err, err_sz, "path %s: %s", in,
             e != 0 ? strerror(errno) : "not a regular file");
    return -1;
  }
  return 0;
}
