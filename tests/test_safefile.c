/* test_safefile.c - pa_safefile: writes inside a data directory that never
 * follow a symlink out, never replace a file unasked, never leave half a
 * file, and say why by name (the path as given, no existence oracle). Each
 * case runs with openat2 and with the component walk. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pa_safefile.h"
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char data[PATH_MAX], outside[PATH_MAX];

/* A fresh data directory and a directory outside it. */
static int setup(void **st) {
  (void)st;
  static int n;
  snprintf(data, sizeof data, "%s/data%d", pa_test_tmpdir(), n);
  snprintf(outside, sizeof outside, "%s/out%d", pa_test_tmpdir(), n++);
  assert_int_equal(mkdir(data, 0755), 0);
  assert_int_equal(mkdir(outside, 0755), 0);
  char real[PATH_MAX];
  assert_non_null(realpath(data, real));
  snprintf(data, sizeof data, "%s", real);
  return 0;
}

static void put(const char *dir, const char *name, const char *text) {
  char p[PATH_MAX * 2];
  int n = snprintf(p, sizeof p, "%s/%s", dir, name);
  assert_true(n > 0 && (size_t)n < sizeof p);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static const char *get(const char *dir, const char *name) {
  static char buf[256];
  char p[PATH_MAX * 2];
  int n = snprintf(p, sizeof p, "%s/%s", dir, name);
  assert_true(n > 0 && (size_t)n < sizeof p);
  buf[0] = 0;
  FILE *f = fopen(p, "r");
  if (!f)
    return NULL;
  size_t k = fread(buf, 1, sizeof buf - 1, f);
  buf[k] = 0;
  fclose(f);
  return buf;
}

/* Writes text to rel through the module: its status, err filled. */
static int write_rel(const char *rel, unsigned flags, const char *text,
                     char *err, size_t err_sz) {
  int root = pa_safe_root_open(data, err, err_sz);
  assert_true(root >= 0);
  pa_safe_file f;
  int rc = pa_safe_begin(&f, root, data, rel, flags, err, err_sz);
  if (rc == PA_SAFE_OK) {
    assert_int_equal(pa_safe_write_all(f.fd, text, strlen(text)), 0);
    rc = pa_safe_commit(&f, err, err_sz);
  }
  close(root);
  return rc;
}

/* No temporary file left in dir. */
static void no_tmp(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d)))
    if (strstr(e->d_name, PA_SAFE_TMP_SUFFIX))
      fail_msg("%s left in %s", e->d_name, dir);
  closedir(d);
}

static void cases(bool walk) {
  pa_safe_force_walk(walk);
  char err[512];
  /* written whole, no temporary file left */
  assert_int_equal(write_rel("a.json", 0, "one", err, sizeof err), 0);
  assert_string_equal(get(data, "a.json"), "one");
  no_tmp(data);
  /* an existing file is kept unless overwrite is asked */
  assert_int_equal(write_rel("a.json", 0, "two", err, sizeof err),
                   PA_SAFE_EXISTS);
  assert_string_equal(err, "a.json already exists (give overwrite: true to "
                           "replace it)");
  assert_string_equal(get(data, "a.json"), "one");
  assert_int_equal(
      write_rel("a.json", PA_SAFE_OVERWRITE, "two", err, sizeof err), 0);
  assert_string_equal(get(data, "a.json"), "two");
  /* directories: created only when asked */
  assert_int_equal(write_rel("runs/x/b.txt", 0, "b", err, sizeof err),
                   PA_SAFE_INVALID);
  assert_int_equal(
      write_rel("runs/x/b.txt", PA_SAFE_MKDIRS, "b", err, sizeof err), 0);
  char sub[PATH_MAX * 2];
  snprintf(sub, sizeof sub, "%s/runs/x", data);
  assert_string_equal(get(sub, "b.txt"), "b");
  /* an absolute path inside is the same file */
  char abs[PATH_MAX * 2];
  snprintf(abs, sizeof abs, "%s/runs/x/b.txt", data);
  assert_int_equal(write_rel(abs, PA_SAFE_OVERWRITE, "c", err, sizeof err), 0);
  assert_string_equal(get(sub, "b.txt"), "c");
  /* a symlinked directory leading out: refused, nothing written outside */
  char link[PATH_MAX * 2];
  snprintf(link, sizeof link, "%s/out", data);
  assert_int_equal(symlink(outside, link), 0);
  assert_int_equal(
      write_rel("out/evil.txt", PA_SAFE_MKDIRS, "x", err, sizeof err),
      PA_SAFE_FORBIDDEN);
  assert_string_equal(err, "forbidden path (a symlink, which may lead "
                           "outside the data directory): out/evil.txt");
  assert_null(get(outside, "evil.txt"));
  assert_int_equal(
      write_rel("out/deeper/evil.txt", PA_SAFE_MKDIRS, "x", err, sizeof err),
      PA_SAFE_FORBIDDEN);
  /* a symlink as the target: never written through */
  put(outside, "victim", "safe");
  char victim[PATH_MAX * 2];
  snprintf(victim, sizeof victim, "%s/victim", outside);
  snprintf(link, sizeof link, "%s/snap.json", data);
  assert_int_equal(symlink(victim, link), 0);
  assert_int_equal(write_rel("snap.json", 0, "x", err, sizeof err),
                   PA_SAFE_EXISTS);
  assert_int_equal(
      write_rel("snap.json", PA_SAFE_OVERWRITE, "x", err, sizeof err), 0);
  assert_string_equal(get(outside, "victim"), "safe");
  struct stat sb; /* the link itself was replaced by the new file */
  assert_int_equal(lstat(link, &sb), 0);
  assert_true(S_ISREG(sb.st_mode));
  unlink(link);
  /* '..' and absolute paths outside: refused on the name, the same text
   * whether the outside path exists or not, no absolute data dir shown */
  assert_int_equal(write_rel("../x", 0, "x", err, sizeof err),
                   PA_SAFE_FORBIDDEN);
  assert_string_equal(err, "forbidden path ('..'): ../x");
  char e1[512], e2[512];
  assert_int_equal(
      write_rel("/etc/shadow", PA_SAFE_OVERWRITE, "x", e1, sizeof e1),
      PA_SAFE_FORBIDDEN);
  assert_int_equal(
      write_rel("/etc/nonexistent-pa", PA_SAFE_OVERWRITE, "x", e2, sizeof e2),
      PA_SAFE_FORBIDDEN);
  assert_string_equal(e1, "forbidden path (outside the data directory): "
                          "/etc/shadow");
  assert_string_equal(e2, "forbidden path (outside the data directory): "
                          "/etc/nonexistent-pa");
  assert_null(strstr(e1, data));
  assert_int_equal(write_rel("dir/", 0, "x", err, sizeof err), PA_SAFE_INVALID);
  no_tmp(data);
  pa_safe_force_walk(false);
}

static void test_openat2(void **st) {
  (void)st;
  cases(false);
}

static void test_walk(void **st) {
  (void)st;
  cases(true);
}

/* pa_safe_open_direct: O_EXCL, never through a symlink, a FIFO in the
 * target's place does not block. */
static void test_direct(void **st) {
  (void)st;
  char err[512], p[PATH_MAX * 2];
  int root = pa_safe_root_open(data, err, sizeof err);
  int fd = pa_safe_open_direct(root, data, "v.mp4", 0, err, sizeof err);
  assert_true(fd >= 0);
  assert_int_equal(pa_safe_write_all(fd, "abc", 3), 0);
  close(fd);
  assert_int_equal(pa_safe_open_direct(root, data, "v.mp4", 0, err, sizeof err),
                   PA_SAFE_EXISTS);
  fd = pa_safe_open_direct(root, data, "v.mp4", PA_SAFE_OVERWRITE, err,
                           sizeof err);
  assert_true(fd >= 0);
  close(fd);
  assert_string_equal(get(data, "v.mp4"), "");
  put(outside, "victim2", "safe");
  char victim[PATH_MAX * 2];
  snprintf(victim, sizeof victim, "%s/victim2", outside);
  snprintf(p, sizeof p, "%s/l.mp4", data);
  assert_int_equal(symlink(victim, p), 0);
  assert_int_equal(pa_safe_open_direct(root, data, "l.mp4", PA_SAFE_OVERWRITE,
                                       err, sizeof err),
                   PA_SAFE_FORBIDDEN);
  assert_string_equal(get(outside, "victim2"), "safe");
  snprintf(p, sizeof p, "%s/f.mp4", data);
  assert_int_equal(mkfifo(p, 0600), 0);
  assert_int_equal(pa_safe_open_direct(root, data, "f.mp4", PA_SAFE_OVERWRITE,
                                       err, sizeof err),
                   PA_SAFE_INVALID);
  close(root);
}

/* A write error (EFBIG under RLIMIT_FSIZE, as ENOSPC would be) is seen by
 * the writer; an abort leaves nothing behind; clean_tmp removes what a
 * crash left. */
static void test_write_error_and_clean(void **st) {
  (void)st;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {1000, 1000};
    char err[512], big[5000];
    memset(big, 'x', sizeof big);
    int root = pa_safe_root_open(data, err, sizeof err);
    pa_safe_file f;
    if (root < 0 || setrlimit(RLIMIT_FSIZE, &rl) != 0 ||
        pa_safe_begin(&f, root, data, "big.bin", 0, err, sizeof err) != 0)
      _exit(2);
    if (pa_safe_write_all(f.fd, big, sizeof big) == 0 || errno != EFBIG)
      _exit(3);
    pa_safe_io_error(&f, errno, err, sizeof err);
    if (strcmp(err, "cannot write big.bin: File too large"))
      _exit(4);
    pa_safe_abort(&f);
    _exit(0);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_null(get(data, "big.bin"));
  no_tmp(data);
  /* what a killed writer leaves (a pid that is gone); a running writer's
   * (ours) stays */
  pid_t gone = fork();
  if (gone == 0)
    _exit(0);
  assert_int_equal(waitpid(gone, &status, 0), gone);
  char name[128];
  snprintf(name, sizeof name, ".x.json.%d.0" PA_SAFE_TMP_SUFFIX, (int)gone);
  put(data, name, "half");
  snprintf(name, sizeof name, ".y.json.%d.0" PA_SAFE_TMP_SUFFIX, (int)getpid());
  put(data, name, "being written");
  put(data, "ds.tar.gz.tmp", "half");
  put(data, "keep.json", "whole");
  int fd = open(data, O_RDONLY | O_DIRECTORY);
  assert_int_equal(pa_safe_clean_tmp(fd, ".tar.gz.tmp"), 2);
  close(fd);
  assert_string_equal(get(data, name), "being written");
  char p[PATH_MAX * 2];
  snprintf(p, sizeof p, "%s/%s", data, name);
  unlink(p);
  no_tmp(data);
  assert_null(get(data, "ds.tar.gz.tmp"));
  assert_string_equal(get(data, "keep.json"), "whole");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_openat2, setup),
      cmocka_unit_test_setup(test_walk, setup),
      cmocka_unit_test_setup(test_direct, setup),
      cmocka_unit_test_setup(test_write_error_and_clean, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
