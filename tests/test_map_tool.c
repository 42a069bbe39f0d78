/*
 * test_map_tool.c - the real pa-map binary: check (map, world, default, bad
 * input, robot in a wall), convert round trip, dist preview, ascii, usage.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "pa_map.h"
#include "testutil.h"

static char out[65536];

/* Runs pa-map with args; returns its exit code, output (stdout+stderr) in out. */
static int run(const char *a1, const char *a2, const char *a3, const char *a4,
               const char *a5) {
  static int seq;
  char bin[1024], log[600];
  pa_test_bin(bin, sizeof bin, "pa-map");
  snprintf(log, sizeof log, "%s/tool%d.log", pa_test_tmpdir(), seq++);
  char *argv[] = {bin, (char *)a1, (char *)a2, (char *)a3, (char *)a4,
                  (char *)a5, NULL};
  pid_t pid = pa_test_spawn(argv, log);
  assert_true(pid > 0);
  int st = pa_test_stop(pid, 0, 30000);
  assert_true(WIFEXITED(st));
  assert_true(pa_test_read_file(log, out, sizeof out) >= 0);
  return WEXITSTATUS(st);
}

static void tpath(char *o, size_t n, const char *name) {
  snprintf(o, n, "%s/%s", pa_test_tmpdir(), name);
}

static void test_check(void **state) {
  (void)state;
  assert_int_equal(run("check", "default", NULL, NULL, NULL), 0);
  assert_non_null(strstr(out, "size: 500 x 500 cells, 11.089 x 11.089 m"));
  assert_non_null(strstr(out, "resolution: 0.022178"));
  assert_non_null(strstr(out, "origin: [-5.5445, -5.5445, 0]"));
  assert_non_null(strstr(out, "unknown 0"));
  assert_non_null(strstr(out, "\nok\n"));
  char src[1024];
  pa_test_src(src, sizeof src, "maps/default.yaml");
  assert_int_equal(run("check", src, NULL, NULL, NULL), 0);
  assert_non_null(strstr(out, "(map)"));
  pa_test_src(src, sizeof src, "maps/example.world.yaml");
  assert_int_equal(run("check", src, NULL, NULL, NULL), 0);
  assert_non_null(strstr(out, "robots: 2, obstacles: 3"));
  /* Bad inputs: exit 1 with the error. */
  assert_int_equal(run("check", "/nonexistent/m.yaml", NULL, NULL, NULL), 1);
  assert_non_null(strstr(out, "/nonexistent/m.yaml: cannot open"));
  char w[512];
  tpath(w, sizeof w, "wall.world.yaml");
  FILE *f = fopen(w, "w");
  assert_non_null(f);
  fprintf(f, "robots:\n  - {name: stuck, pose: [-5.5, 0, 0]}\n");
  fclose(f);
  assert_int_equal(run("check", w, NULL, NULL, NULL), 1);
  assert_non_null(strstr(out, "robot 'stuck'"));
  f = fopen(w, "w");
  assert_non_null(f);
  fprintf(f, "robots:\n  - {name: x, pose: [0, 0], radius: fat}\n");
  fclose(f);
  assert_int_equal(run("check", w, NULL, NULL, NULL), 1);
  assert_non_null(strstr(out, "wall.world.yaml:2:37: radius: expected a number"));
  assert_int_equal(run("frobnicate", "x", NULL, NULL, NULL), 2);
  assert_non_null(strstr(out, "usage"));
  assert_int_equal(run("--help", NULL, NULL, NULL, NULL), 0);
}

static void test_convert_dist_ascii(void **state) {
  (void)state;
  char yml[512], pgm[512];
  tpath(yml, sizeof yml, "conv.yaml");
  tpath(pgm, sizeof pgm, "conv.pgm");
  assert_int_equal(run("convert", "default", yml, "--image", pgm), 0);
  pa_grid a, b;
  char err[1024];
  assert_int_equal(pa_map_load_default(&a, err, sizeof err), 0);
  assert_int_equal(pa_map_load_yaml(yml, &b, err, sizeof err), 0);
  assert_int_equal(a.width, b.width);
  assert_true(a.resolution == b.resolution && a.origin_x == b.origin_x);
  assert_memory_equal(a.cells, b.cells, (size_t)a.width * a.height);
  pa_grid_free(&b);
  /* Default image name: OUT with .png. */
  tpath(yml, sizeof yml, "conv2.yaml");
  assert_int_equal(run("convert", "default", yml, NULL, NULL), 0);
  assert_int_equal(pa_map_load_yaml(yml, &b, err, sizeof err), 0);
  assert_memory_equal(a.cells, b.cells, (size_t)a.width * a.height);
  pa_grid_free(&b);
  pa_grid_free(&a);
  char gif[512];
  tpath(gif, sizeof gif, "x.gif");
  assert_int_equal(run("convert", "default", yml, "--image", gif), 1);
  assert_int_equal(access(gif, F_OK), -1); /* refused: nothing written */
  assert_non_null(strstr(out, ".png"));

  char png[512];
  tpath(png, sizeof png, "dist.png");
  assert_int_equal(run("dist", "default", png, NULL, NULL), 0);
  assert_non_null(strstr(out, "max clearance"));
  /* The preview is a real 500 x 500 image: load it as a map. */
  FILE *f = fopen(yml, "w");
  assert_non_null(f);
  fprintf(f, "image: dist.png\nresolution: 1\norigin: [0, 0, 0]\nnegate: 0\n"
             "occupied_thresh: 0.65\nfree_thresh: 0.196\n");
  fclose(f);
  assert_int_equal(pa_map_load_yaml(yml, &b, err, sizeof err), 0);
  assert_int_equal(b.width, 500);
  assert_int_equal(b.cells[0], 100); /* the wall corner is black */
  pa_grid_free(&b);

  assert_int_equal(run("ascii", "default", "--width", "40", NULL), 0);
  /* 40 columns, 20 rows, the robot '@' somewhere in the middle. */
  int lines = 0;
  for (char *p = out; *p; p++) lines += *p == '\n';
  assert_int_equal(lines, 20);
  assert_int_equal(strchr(out, '\n') - out, 40);
  assert_non_null(strchr(out, '@'));
  assert_int_equal(strspn(out, "#+"), 40); /* the north wall */
  assert_int_equal(run("ascii", "default", "--width", "0", NULL), 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_check),
      cmocka_unit_test(test_convert_dist_ascii),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
