/* test_files.c - files the stack writes on a client's request, end to end
 * against the real pa-sim and pa-netgw (issue 32): uploads never written
 * through a planted symlink. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <sys/stat.h>

#include "netgw_harness.h"

static ng_stack stack; /* torn down even when a test fails */
static int cfd = -1;
static char ddir[512]; /* a test's directory (removed by teardown) */

static int teardown(void **state) {
  (void)state;
  if (cfd >= 0)
    close(cfd);
  cfd = -1;
  int rc = ng_stop(&stack) == 0 ? 0 : -1;
  if (ddir[0]) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", ddir);
    if (system(cmd) != 0)
      rc = -1;
    ddir[0] = 0;
  }
  return rc;
}

/* A fresh directory for the test under the temp dir: ddir/<sub>. */
static void test_dir(const char *tag) {
  snprintf(ddir, sizeof ddir, "%s/t%d-%s", pa_test_tmpdir(), (int)getpid(),
           tag);
  assert_int_equal(mkdir(ddir, 0755), 0);
}

static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* POST body to /api/upload?name=name on the stack's web port: the status
 * code (0 when no answer), the whole answer in out. */
static int upload(const char *name, const char *body, char *out, size_t n) {
  uint16_t port =
      (uint16_t)__atomic_load_n(&stack.st.ctl->http_port, __ATOMIC_ACQUIRE);
  int fd = pa_test_tcp_connect(port);
  assert_true(fd >= 0);
  char req[1024];
  int k = snprintf(req, sizeof req,
                   "POST /api/upload?name=%s HTTP/1.0\r\nHost: 127.0.0.1\r\n"
                   "Content-Length: %zu\r\n\r\n%s",
                   name, strlen(body), body);
  assert_int_equal(write(fd, req, (size_t)k), k);
  size_t got = 0;
  int64_t end = pa_test_now_ms() + 5000 * PA_TEST_SLOW;
  while (got < n - 1 && pa_test_now_ms() < end) {
    ssize_t r = read(fd, out + got, n - 1 - got);
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  close(fd);
  out[got] = 0;
  return strncmp(out, "HTTP/1.", 7) ? 0 : atoi(out + 9);
}

/* Issue 32 #12: the upload's temp file and target are never written
 * through a symlink planted in --upload_dir. */
static void uploads_no_symlinks(void **state) {
  (void)state;
  test_dir("upload");
  char up[600], victim[600], link[700], text[256];
  static char out[1 << 14];
  snprintf(up, sizeof up, "%s/up", ddir);
  snprintf(victim, sizeof victim, "%s/victim.yaml", ddir);
  assert_int_equal(mkdir(up, 0755), 0);
  put(victim, "untouched");
  const char *gw[] = {"--upload_dir", up, NULL};
  cfd = ng_open(&stack, "upload", NULL, gw);
  assert_true(stack.st.ctl->http_port != 0);
  /* the target a symlink out: replaced, not written through */
  snprintf(link, sizeof link, "%s/map.yaml", up);
  assert_int_equal(symlink(victim, link), 0);
  assert_int_equal(upload("map.yaml", "a: 1\n", out, sizeof out), 200);
  pa_test_read_file(victim, text, sizeof text);
  assert_string_equal(text, "untouched");
  struct stat st;
  assert_int_equal(lstat(link, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  pa_test_read_file(link, text, sizeof text);
  assert_string_equal(text, "a: 1\n");
  /* the old temp name (<name>.tmp<pid>) planted as a symlink: unused */
  char tmpl[700];
  snprintf(tmpl, sizeof tmpl, "%s/w.yaml.tmp%d", up, (int)stack.gw);
  assert_int_equal(symlink(victim, tmpl), 0);
  assert_int_equal(upload("w.yaml", "b: 2\n", out, sizeof out), 200);
  pa_test_read_file(victim, text, sizeof text);
  assert_string_equal(text, "untouched");
  /* a second upload of a name replaces it (the editor saves again) */
  assert_int_equal(upload("w.yaml", "c: 3\n", out, sizeof out), 200);
  snprintf(link, sizeof link, "%s/w.yaml", up);
  pa_test_read_file(link, text, sizeof text);
  assert_string_equal(text, "c: 3\n");
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Issue 32 #5: --record run.mcap, then pa-netgw crashes: the restarted one
 * records into run.1.mcap (then run.2.mcap), never over run.mcap, and says
 * so in its log; it does not exit on the existing file. */
static void record_continues_numbered(void **state) {
  (void)state;
  test_dir("record");
  char f0[700], f1[700], f2[700];
  snprintf(f0, sizeof f0, "%s/run.mcap", ddir);
  snprintf(f1, sizeof f1, "%s/run.1.mcap", ddir);
  snprintf(f2, sizeof f2, "%s/run.2.mcap", ddir);
  const char *gw[] = {"--data_dir", ddir, "--record", "run.mcap", NULL};
  cfd = ng_open(&stack, "record", NULL, gw);
  assert_true(file_size(f0) > 0);
  close(cfd);
  cfd = -1;
  for (int k = 1; k <= 2; k++) {
    pa_test_stop(stack.gw, SIGKILL, 5000); /* a crash */
    long before = file_size(f0);
    assert_int_equal(ng_start_gw(&stack, gw), 0);
    assert_true(file_size(k == 1 ? f1 : f2) > 0);
    assert_int_equal(file_size(f0), before); /* untouched */
    assert_true(pa_test_file_contains(stack.gw_log, "exists (an earlier run"));
  }
  assert_true(file_size(f1) > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(uploads_no_symlinks, teardown),
      cmocka_unit_test_teardown(record_continues_numbered, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
