/*
 * test_map.c - pa_map: ROS map_server fixtures made here (PGM, grey/RGB/RGBA
 * PNG, negate, trinary/scale/raw), the per-pixel occupancy against the
 * map_server rules, flip and origin, the default world, save -> load, flags,
 * and every bad input naming its problem.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "pa_map.h"
#include "pa_map_int.h"
#include "test_map_util.h"
#include "testutil.h"

static char errbuf[2048];

static void write_file(const char *path, const char *fmt, ...) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  assert_int_equal(fclose(f), 0);
}

static void tpath(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", pa_test_tmpdir(), name);
}

static void write_pgm(const char *path, int w, int h, const unsigned char *px) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fprintf(f, "P5\n# made by test_map\n%d %d\n255\n", w, h);
  assert_int_equal(fwrite(px, 1, (size_t)(w * h), f), (size_t)(w * h));
  assert_int_equal(fclose(f), 0);
}

static void write_map_yaml(const char *path, const char *image, double res,
                           double ox, double oy, double oyaw, int negate,
                           double occ, double fr, const char *mode) {
  write_file(path,
             "image: %s\nresolution: %.17g\norigin: [%.17g, %.17g, %.17g]\n"
             "negate: %d\noccupied_thresh: %.17g\nfree_thresh: %.17g\n%s%s%s",
             image, res, ox, oy, oyaw, negate, occ, fr, mode ? "mode: " : "",
             mode ? mode : "", mode ? "\n" : "");
}

/* The map_server rule, written out independently of pa_map.c: channel values
 * as SDL hands them over (grey+alpha becomes RGBA), alpha < 1.0 on a byte. */
static int expect_cell(const unsigned char *p, int comp, int negate,
                       double occ_th, double free_th, const char *mode) {
  unsigned char ch[4];
  int n;
  bool alpha_ch = comp == 2 || comp == 4;
  if (comp == 2) {
    ch[0] = ch[1] = ch[2] = p[0];
    ch[3] = p[1];
    n = 4;
  } else {
    memcpy(ch, p, (size_t)comp);
    n = comp;
  }
  bool trinary = !strcmp(mode, "trinary");
  int avg_n = (trinary || !alpha_ch) ? n : n - 1;
  int sum = 0;
  for (int k = 0; k < avg_n; k++) sum += ch[k];
  double avg = sum / (double)avg_n;
  int alpha = alpha_ch ? ch[n - 1] : 255;
  if (negate) avg = 255 - avg;
  if (!strcmp(mode, "raw")) {
    unsigned char v = (unsigned char)avg;
    return v > 100 ? -1 : v;
  }
  double occ = (255 - avg) / 255.0;
  if (occ > occ_th) return 100;
  if (occ < free_th) return 0;
  if (trinary || alpha < 1.0) return -1;
  return (unsigned char)(1 + 98 * ((occ - free_th) / (occ_th - free_th)));
}

static void check_all_pixels(const pa_grid *g, const unsigned char *px, int w,
                             int h, int comp, int negate, double occ_th,
                             double free_th, const char *mode) {
  assert_int_equal(g->width, (uint32_t)w);
  assert_int_equal(g->height, (uint32_t)h);
  for (int j = 0; j < h; j++)
    for (int i = 0; i < w; i++) {
      const unsigned char *p = px + ((size_t)j * w + i) * comp;
      int want = expect_cell(p, comp, negate, occ_th, free_th, mode);
      int got = g->cells[(size_t)(h - 1 - j) * w + i]; /* image row 0 = north */
      if (want != got)
        fail_msg("%s comp %d negate %d pixel (%d,%d) [%d %d %d %d]: want %d "
                 "got %d",
                 mode, comp, negate, i, j, p[0], comp > 1 ? p[1] : -1,
                 comp > 2 ? p[2] : -1, comp > 3 ? p[3] : -1, want, got);
    }
}

/* Every grey level 0..255 once: 16 x 16. */
static void test_pgm_every_grey(void **state) {
  (void)state;
  unsigned char px[256];
  for (int i = 0; i < 256; i++) px[i] = (unsigned char)i;
  char img[512], yml[512];
  tpath(img, sizeof img, "grey.pgm");
  write_pgm(img, 16, 16, px);
  const char *modes[] = {"trinary", "scale", "raw"};
  for (int negate = 0; negate <= 1; negate++)
    for (int m = 0; m < 3; m++) {
      tpath(yml, sizeof yml, "grey.yaml");
      write_map_yaml(yml, "grey.pgm", 0.05, 0, 0, 0, negate, 0.65, 0.196,
                     m == 0 ? NULL : modes[m]); /* trinary is the default */
      pa_grid g;
      assert_int_equal(pa_map_load_yaml(yml, &g, errbuf, sizeof errbuf), 0);
      check_all_pixels(&g, px, 16, 16, 1, negate, 0.65, 0.196, modes[m]);
      /* Spot values that do not depend on the reference above. */
      if (m == 0 && negate == 0) {
        assert_int_equal(g.cells[15 * 16 + 0], 100);  /* grey 0, image row 0 */
        assert_int_equal(g.cells[0 * 16 + 15], 0);    /* grey 255 */
        assert_int_equal(g.cells[3 * 16 + 13], -1);   /* grey 205 = 12*16+13 */
        assert_int_equal(g.cells[3 * 16 + 14], 0);    /* grey 206 */
        assert_int_equal(g.occupied_min, 100);
      }
      if (m == 0 && negate == 1) {
        assert_int_equal(g.cells[15 * 16 + 0], 0);    /* black is free */
        assert_int_equal(g.cells[0 * 16 + 15], 100);
      }
      if (m == 2) {
        assert_int_equal(g.occupied_min, 66); /* value / 100 > 0.65 */
        if (negate == 0) assert_int_equal(g.cells[15 * 16 + 7], 7);
      }
      if (m == 1 && negate == 0) {
        /* grey 120: occ 0.529 -> 1 + 98 * (0.529 - 0.196) / 0.454 = 72 */
        assert_int_equal(g.cells[(15 - 7) * 16 + 8], 72);
      }
      pa_grid_free(&g);
    }
}

static void random_pixels(unsigned char *px, size_t n, unsigned seed) {
  srand(seed);
  for (size_t i = 0; i < n; i++) {
    int r = rand() % 10;
    /* Lots of extremes and the band around the thresholds. */
    px[i] = r == 0 ? 0 : r == 1 ? 255 : r < 4 ? (unsigned char)(150 + rand() % 80)
                                              : (unsigned char)(rand() % 256);
  }
}

static void test_png_channels(void **state) {
  (void)state;
  const int w = 37, h = 23;
  unsigned char px[37 * 23 * 4];
  const char *modes[] = {"trinary", "scale", "raw"};
  for (int comp = 1; comp <= 4; comp++) {
    random_pixels(px, sizeof px, (unsigned)comp * 7u);
    if (comp == 2 || comp == 4) /* some fully transparent pixels */
      for (int i = 0; i < w * h; i += 5) px[i * comp + comp - 1] = 0;
    char img[512], yml[512], name[64];
    snprintf(name, sizeof name, "c%d.png", comp);
    tpath(img, sizeof img, name);
    assert_int_equal(pa_map_img_write_png_n(img, w, h, comp, px), 0);
    for (int negate = 0; negate <= 1; negate++)
      for (int m = 0; m < 3; m++) {
        tpath(yml, sizeof yml, "c.yaml");
        write_map_yaml(yml, name, 0.1, 0, 0, 0, negate, 0.7, 0.25, modes[m]);
        pa_grid g;
        assert_int_equal(pa_map_load_yaml(yml, &g, errbuf, sizeof errbuf), 0);
        check_all_pixels(&g, px, w, h, comp, negate, 0.7, 0.25, modes[m]);
        pa_grid_free(&g);
      }
  }
}

/* Hand-computed: trinary averages alpha in (map_server keeps that "to
 * preserve existing behaviour"); scale leaves it out and makes transparent
 * mid-band pixels unknown. */
static void test_png_alpha_known(void **state) {
  (void)state;
  unsigned char rgba[4 * 4] = {0,   0,   0,   255, /* black opaque */
                               255, 255, 255, 0,   /* white transparent */
                               128, 128, 128, 0,   /* mid transparent */
                               128, 128, 128, 255};
  char img[512], yml[512];
  tpath(img, sizeof img, "known4.png");
  assert_int_equal(pa_map_img_write_png_n(img, 4, 1, 4, rgba), 0);
  tpath(yml, sizeof yml, "known4.yaml");
  pa_grid g;
  write_map_yaml(yml, "known4.png", 0.1, 0, 0, 0, 0, 0.65, 0.196, "trinary");
  assert_int_equal(pa_map_load_yaml(yml, &g, errbuf, sizeof errbuf), 0);
  assert_int_equal(g.cells[0], 100); /* avg 63.75 -> occ 0.75 */
  assert_int_equal(g.cells[1], -1);  /* avg 191.25 -> occ 0.25 */
  assert_int_equal(g.cells[2], -1);  /* avg 96 -> occ 0.62 */
  assert_int_equal(g.cells[3], -1);  /* avg 159.75 -> occ 0.37 */
  pa_grid_free(&g);
  write_map_yaml(yml, "known4.png", 0.1, 0, 0, 0, 0, 0.65, 0.196, "scale");
  assert_int_equal(pa_map_load_yaml(yml, &g, errbuf, sizeof errbuf), 0);
  assert_int_equal(g.cells[0], 100); /* avg 0 */
  assert_int_equal(g.cells[1], 0);   /* avg 255: thresholds come first */
  assert_int_equal(g.cells[2], -1);  /* occ 0.498, transparent */
  assert_int_equal(g.cells[3], 66);  /* 1 + 98 * 0.302 / 0.454 */
  pa_grid_free(&g);
}

/* Relative paths resolve against the yaml's directory, absolute ones stay. */
static void test_image_paths(void **state) {
  (void)state;
  char dir[512], sub[600], img[700], yml[700];
  tpath(dir, sizeof dir, "paths");
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(sub, sizeof sub, "%s/img", dir);
  assert_int_equal(mkdir(sub, 0700), 0);
  unsigned char px[6] = {0, 255, 255, 255, 255, 0};
  snprintf(img, sizeof img, "%s/m.pgm", sub);
  write_pgm(img, 3, 2, px);
  snprintf(yml, sizeof yml, "%s/rel.yaml", dir);
  write_map_yaml(yml, "img/m.pgm", 1.0, 0, 0, 0, 0, 0.65, 0.196, NULL);
  pa_map_def def = pa_map_def_default();
  assert_int_equal(pa_map_parse_yaml(yml, &def, errbuf, sizeof errbuf), 0);
  assert_string_equal(def.image, img);
  pa_grid g;
  assert_int_equal(pa_map_load_yaml(yml, &g, errbuf, sizeof errbuf), 0);
  assert_int_equal(g.cells[1 * 3 + 0], 100);
  assert_int_equal(g.cells[0 * 3 + 2], 100);
  pa_grid_free(&g);
  /* Absolute image path, yaml elsewhere. */
  snprintf(yml, sizeof yml, "%s/abs.yaml", pa_test_tmpdir());
  write_map_yaml(yml, img, 1.0, 0, 0, 0, 0, 0.65, 0.196, NULL);
  assert_int_equal(pa_map_load_yaml(yml, &g, errbuf, sizeof errbuf), 0);
  assert_int_equal(g.cells[1 * 3 + 0], 100);
  pa_grid_free(&g);
  /* Relative yaml path from the current directory. */
  char cwd[1024];
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(pa_test_tmpdir()), 0);
  assert_int_equal(pa_map_load_yaml("paths/rel.yaml", &g, errbuf, sizeof errbuf),
                   0);
  assert_int_equal(g.cells[1 * 3 + 0], 100);
  pa_grid_free(&g);
  assert_int_equal(chdir(cwd), 0);
}

/* One black pixel in the image's top-left corner = the grid's north-west
 * cell; world probes land on it through the origin. */
static void test_flip_and_origin(void **state) {
  (void)state;
  const int w = 4, h = 3;
  unsigned char px[12];
  memset(px, 255, sizeof px);
  px[0] = 0;
  char img[512], yml[512];
  tpath(img, sizeof img, "corner.png");
  assert_int_equal(pa_map_img_write_png_n(img, w, h, 1, px), 0);
  tpath(yml, sizeof yml, "corner.yaml");
  write_map_yaml(yml, "corner.png", 0.5, 1.0, 2.0, 0.0, 0, 0.65, 0.196, NULL);
  pa_grid g;
  assert_int_equal(pa_map_load_yaml(yml, &g, errbuf, sizeof errbuf), 0);
  assert_int_equal(g.cells[(h - 1) * w + 0], 100);
  for (int i = 0; i < w * h; i++)
    if (i != (h - 1) * w) assert_int_equal(g.cells[i], 0);
  int cx, cy;
  /* The north-west cell spans x [1.0, 1.5), y [2.0 + 1.0, 2.0 + 1.5). */
  assert_true(pa_grid_world_to_cell(&g, 1.25, 3.25, &cx, &cy));
  assert_int_equal(cx, 0);
  assert_int_equal(cy, 2);
  assert_true(pa_grid_blocked(&g, cx, cy, true));
  assert_true(pa_grid_world_to_cell(&g, 1.0, 2.0, &cx, &cy)); /* the origin */
  assert_int_equal(cx, 0);
  assert_int_equal(cy, 0);
  assert_false(pa_grid_blocked(&g, cx, cy, true));
  assert_true(pa_grid_world_to_cell(&g, 2.99, 3.49, &cx, &cy));
  assert_int_equal(cx, 3);
  assert_int_equal(cy, 2);
  assert_false(pa_grid_world_to_cell(&g, 0.99, 2.5, &cx, &cy));
  assert_false(pa_grid_world_to_cell(&g, 3.0, 2.5, &cx, &cy));
  assert_false(pa_grid_world_to_cell(&g, 1.5, 3.5, &cx, &cy));
  assert_false(pa_grid_world_to_cell(&g, NAN, 2.5, &cx, &cy));
  assert_false(pa_grid_world_to_cell(&g, 1e300, 2.5, &cx, &cy));
  double x, y;
  pa_grid_cell_center(&g, 0, 2, &x, &y);
  assert_float_equal(x, 1.25, 1e-12);
  assert_float_equal(y, 3.25, 1e-12);
  /* Outside the grid blocks; unknown blocks only when asked. */
  assert_true(pa_grid_blocked(&g, -1, 0, false));
  assert_true(pa_grid_blocked(&g, 0, 3, false));
  assert_true(pa_grid_blocked(&g, 4, 0, false));
  g.cells[1] = -1;
  assert_true(pa_grid_blocked(&g, 1, 0, true));
  assert_false(pa_grid_blocked(&g, 1, 0, false));
  pa_grid_free(&g);

  /* Yaw 90 deg: the grid's x axis points north. */
  write_map_yaml(yml, "corner.png", 0.5, 1.0, 2.0, M_PI / 2, 0, 0.65, 0.196,
                 NULL);
  assert_int_equal(pa_map_load_yaml(yml, &g, errbuf, sizeof errbuf), 0);
  /* cell (0, 2) centre, local (0.25, 1.25) -> world (1 - 1.25, 2 + 0.25) */
  pa_grid_cell_center(&g, 0, 2, &x, &y);
  assert_float_equal(x, -0.25, 1e-9);
  assert_float_equal(y, 2.25, 1e-9);
  assert_true(pa_grid_world_to_cell(&g, -0.25, 2.25, &cx, &cy));
  assert_int_equal(cx, 0);
  assert_int_equal(cy, 2);
  assert_true(pa_grid_blocked(&g, cx, cy, true));
  assert_false(pa_grid_world_to_cell(&g, 1.25, 3.25, &cx, &cy));
  pa_grid_free(&g);
}

static bool world_free(const pa_grid *g, const pa_dist *d, double x, double y,
                       double clearance) {
  int cx, cy;
  if (!pa_grid_world_to_cell(g, x, y, &cx, &cy)) return false;
  return d->d[(size_t)cy * g->width + cx] >= clearance;
}

static void test_default_world(void **state) {
  (void)state;
  pa_grid g;
  assert_int_equal(pa_map_load_default(&g, errbuf, sizeof errbuf), 0);
  assert_int_equal(g.width, 500);
  assert_int_equal(g.height, 500);
  assert_float_equal(g.resolution, 0.022178, 1e-15);
  assert_float_equal(g.origin_x, -5.5445, 1e-15);
  assert_float_equal(g.origin_y, -5.5445, 1e-15);
  assert_float_equal(g.origin_yaw, 0, 0);
  assert_float_equal(g.width * g.resolution, 11.089, 1e-9);
  /* Map centre at world (0, 0). */
  int cx, cy;
  assert_true(pa_grid_world_to_cell(&g, 0.001, 0.001, &cx, &cy));
  assert_int_equal(cx, 250);
  assert_int_equal(cy, 250);
  /* Start disc: every cell centre within 1 m of (0, 0) is free. */
  size_t nfree = 0, nocc = 0, nunk = 0;
  for (uint32_t y = 0; y < g.height; y++)
    for (uint32_t x = 0; x < g.width; x++) {
      double wx, wy;
      pa_grid_cell_center(&g, (int)x, (int)y, &wx, &wy);
      int8_t v = g.cells[y * g.width + x];
      if (wx * wx + wy * wy <= 1.0) assert_int_equal(v, 0);
      nfree += v == 0;
      nocc += v == 100;
      nunk += v == -1;
    }
  assert_int_equal(nfree + nocc, 500 * 500);
  assert_int_equal(nunk, 0);
  /* Outer walls: the border ring is occupied all round. */
  for (uint32_t i = 0; i < 500; i++) {
    assert_int_equal(g.cells[i], 100);
    assert_int_equal(g.cells[499 * 500 + i], 100);
    assert_int_equal(g.cells[i * 500], 100);
    assert_int_equal(g.cells[i * 500 + 499], 100);
  }
  /* The built-in copy is exactly maps/default.yaml + default.png. */
  char src[1024];
  pa_test_src(src, sizeof src, "maps/default.yaml");
  pa_grid f;
  assert_int_equal(pa_map_load_yaml(src, &f, errbuf, sizeof errbuf), 0);
  assert_int_equal(f.width, g.width);
  assert_memory_equal(f.cells, g.cells, 500 * 500);
  pa_map_def fd = pa_map_def_default(), dd = pa_map_def_default();
  assert_int_equal(pa_map_parse_yaml(src, &fd, errbuf, sizeof errbuf), 0);
  assert_true(fd.resolution == dd.resolution);
  assert_true(fd.origin[0] == dd.origin[0] && fd.origin[1] == dd.origin[1] &&
              fd.origin[2] == dd.origin[2]);
  assert_true(fd.occupied_thresh == dd.occupied_thresh &&
              fd.free_thresh == dd.free_thresh && fd.negate == dd.negate &&
              fd.mode == dd.mode);
  assert_string_equal(dd.image, "");
  pa_grid_free(&f);

  /* Worth driving: every room is reachable from the start by a 0.18 m robot
   * (flood fill over cells with clearance > radius + one cell). */
  pa_dist d;
  assert_int_equal(pa_dist_build(&g, true, &d, errbuf, sizeof errbuf), 0);
  double clear = 0.18 + g.resolution;
  uint8_t *seen = calloc(500 * 500, 1);
  int *stack = malloc(sizeof(int) * 500 * 500);
  assert_non_null(seen);
  assert_non_null(stack);
  size_t sp = 0;
  stack[sp++] = 250 * 500 + 250;
  seen[250 * 500 + 250] = 1;
  while (sp) {
    int c = stack[--sp], x = c % 500, y = c / 500;
    const int nb[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
    for (int k = 0; k < 4; k++) {
      int nx = x + nb[k][0], ny = y + nb[k][1];
      if (nx < 0 || ny < 0 || nx >= 500 || ny >= 500) continue;
      int ni = ny * 500 + nx;
      if (seen[ni] || d.d[ni] < clear) continue;
      seen[ni] = 1;
      stack[sp++] = ni;
    }
  }
  const double rooms[][2] = {{-2.0, 2.6},  /* library */
                             {1.4, 4.8},   /* gallery */
                             {-2.0, -3.5}, /* workshop */
                             {2.0, -3.8},  /* store */
                             {4.6, 0.0},   /* corridor */
                             {4.6, 5.0},   /* corridor, north end */
                             {-4.5, 0.0}}; /* hall, west */
  for (size_t i = 0; i < sizeof rooms / sizeof rooms[0]; i++) {
    assert_true(world_free(&g, &d, rooms[i][0], rooms[i][1], clear));
    assert_true(pa_grid_world_to_cell(&g, rooms[i][0], rooms[i][1], &cx, &cy));
    if (!seen[cy * 500 + cx])
      fail_msg("(%g, %g) is not reachable from the start", rooms[i][0],
               rooms[i][1]);
  }
  free(seen);
  free(stack);
  pa_dist_free(&d);
  pa_grid_free(&g);

  /* pa_world_default and the robot defaults. */
  pa_world w;
  assert_int_equal(pa_world_default(&w, errbuf, sizeof errbuf), 0);
  assert_int_equal(w.robot_count, 1);
  assert_int_equal(w.obstacle_count, 0);
  assert_true(w.unknown_blocks);
  assert_string_equal(w.map.image, "");
  const pa_robot_def *r = &w.robots[0];
  assert_string_equal(r->name, "robot0");
  assert_true(r->x == 0 && r->y == 0 && r->theta == 0);
  assert_int_equal(r->drive, 0);
  assert_true(r->radius == 0.18 && r->height == 0.25 && r->head_height == 0.35);
  tm_expect_limits(r, 1.0, 1.0, 3.0, 2.0, 4.0, 8.0, 12.0, 2.6, 3.0);
  tm_expect_sensors(r, 360, 0.15, 12.0, 0.0, 640, 480, M_PI / 3, 1e-15);
  assert_int_equal(r->colour[3], 255);
  pa_grid wg;
  assert_int_equal(pa_map_load(&w.map, &wg, errbuf, sizeof errbuf), 0);
  assert_int_equal(wg.width, 500);
  pa_grid_free(&wg);
  pa_world_free(&w);
}

static void roundtrip(pa_grid *g, const char *name, const char *ext) {
  char yml[512], img[512], n2[128];
  snprintf(n2, sizeof n2, "%s.yaml", name);
  tpath(yml, sizeof yml, n2);
  snprintf(n2, sizeof n2, "%s.%s", name, ext);
  tpath(img, sizeof img, n2);
  if (pa_map_save(g, yml, img, errbuf, sizeof errbuf)) fail_msg("%s", errbuf);
  pa_grid b;
  if (pa_map_load_yaml(yml, &b, errbuf, sizeof errbuf)) fail_msg("%s", errbuf);
  assert_int_equal(b.width, g->width);
  assert_int_equal(b.height, g->height);
  assert_true(b.resolution == g->resolution);
  assert_true(b.origin_x == g->origin_x && b.origin_y == g->origin_y &&
              b.origin_yaw == g->origin_yaw);
  assert_int_equal(b.occupied_min, g->occupied_min);
  assert_memory_equal(b.cells, g->cells, (size_t)g->width * g->height);
  pa_grid_free(&b);
}

static void test_save_roundtrip(void **state) {
  (void)state;
  pa_grid g = {.width = 53,
               .height = 31,
               .resolution = 0.0371234567891,
               .origin_x = -12.345678901234567,
               .origin_y = 3.0000000000000004,
               .origin_yaw = 0.3,
               .occupied_min = 100};
  g.cells = malloc(53 * 31);
  assert_non_null(g.cells);
  srand(5);
  const int8_t tri[3] = {-1, 0, 100};
  for (int i = 0; i < 53 * 31; i++) g.cells[i] = tri[rand() % 3];
  roundtrip(&g, "tri", "png");
  roundtrip(&g, "tri_pgm", "pgm");
  roundtrip(&g, "tri_bmp", "bmp");
  /* Scale-like values survive too (written as raw). */
  for (int i = 0; i < 53 * 31; i++) g.cells[i] = (int8_t)(rand() % 102 - 1);
  roundtrip(&g, "scale", "png");
  g.occupied_min = 66;
  roundtrip(&g, "raw66", "png");
  g.occupied_min = 1;
  roundtrip(&g, "raw1", "pgm");
  /* The default map too. */
  pa_grid d;
  assert_int_equal(pa_map_load_default(&d, errbuf, sizeof errbuf), 0);
  roundtrip(&d, "default", "png");
  pa_grid_free(&d);
  /* Refusals. */
  char yml[512], img[512];
  tpath(yml, sizeof yml, "x.yaml");
  tpath(img, sizeof img, "x.gif");
  assert_int_equal(pa_map_save(&g, yml, img, errbuf, sizeof errbuf), -1);
  assert_non_null(strstr(errbuf, ".png"));
  tpath(img, sizeof img, "x.png");
  g.cells[3] = 101;
  assert_int_equal(pa_map_save(&g, yml, img, errbuf, sizeof errbuf), -1);
  assert_non_null(strstr(errbuf, "101"));
  g.cells[3] = 0;
  assert_int_equal(
      pa_map_save(&g, yml, "/nonexistent-dir/x.png", errbuf, sizeof errbuf), -1);
  assert_non_null(strstr(errbuf, "/nonexistent-dir/x.png"));
  pa_grid_free(&g);
}

/* Loads yaml text (image = a valid 2x2 PGM) and expects an error with the
 * given pieces. */
static void expect_yaml_error(const char *text, const char *want1,
                              const char *want2) {
  char img[512], yml[512];
  tpath(img, sizeof img, "ok.pgm");
  unsigned char px[4] = {0, 255, 255, 0};
  write_pgm(img, 2, 2, px);
  tpath(yml, sizeof yml, "bad.yaml");
  write_file(yml, "%s", text);
  pa_grid g;
  errbuf[0] = '\0';
  if (pa_map_load_yaml(yml, &g, errbuf, sizeof errbuf) == 0)
    fail_msg("loaded without error:\n%s", text);
  if (!strstr(errbuf, want1) || (want2 && !strstr(errbuf, want2)))
    fail_msg("error '%s' lacks '%s' / '%s'", errbuf, want1,
             want2 ? want2 : "");
  assert_null(g.cells);
}

#define GOOD_TAIL "negate: 0\noccupied_thresh: 0.65\nfree_thresh: 0.196\n"

static void test_bad_yaml(void **state) {
  (void)state;
  pa_grid g;
  assert_int_equal(
      pa_map_load_yaml("/nonexistent/map.yaml", &g, errbuf, sizeof errbuf), -1);
  assert_non_null(strstr(errbuf, "/nonexistent/map.yaml"));
  assert_non_null(strstr(errbuf, "No such file"));
  assert_int_equal(pa_map_load_yaml("", &g, errbuf, sizeof errbuf), -1);
  assert_int_equal(pa_map_load_yaml(pa_test_tmpdir(), &g, errbuf, sizeof errbuf),
                   -1);

  expect_yaml_error("image: ok.pgm\nresolution: [0.05\n", "bad.yaml:", "YAML");
  expect_yaml_error("", "empty", NULL);
  expect_yaml_error("- a\n- b\n", "bad.yaml:1:1:", "expected a mapping");
  expect_yaml_error("resolution: 0.05\norigin: [0, 0, 0]\n" GOOD_TAIL,
                    "missing key 'image'", NULL);
  expect_yaml_error("image: ok.pgm\norigin: [0, 0, 0]\n" GOOD_TAIL,
                    "missing key 'resolution'", NULL);
  expect_yaml_error("image: ok.pgm\nresolution: 0.05\n" GOOD_TAIL,
                    "missing key 'origin'", NULL);
  expect_yaml_error("image: ok.pgm\nresolution: 0.05\norigin: [0, 0, 0]\n"
                    "occupied_thresh: 0.65\nfree_thresh: 0.196\n",
                    "missing key 'negate'", NULL);
  expect_yaml_error("image: ok.pgm\nresolution: abc\norigin: [0, 0, 0]\n" GOOD_TAIL,
                    "bad.yaml:2:13: resolution: expected a number, got 'abc'",
                    NULL);
  expect_yaml_error(
      "image: ok.pgm\nresolution: -0.05\norigin: [0, 0, 0]\n" GOOD_TAIL,
      "bad.yaml:2:13:", "resolution must be in [0.0001, 1000] m");
  expect_yaml_error(
      "image: ok.pgm\nresolution: 0\norigin: [0, 0, 0]\n" GOOD_TAIL,
      "resolution must be in [0.0001, 1000] m", NULL);
  expect_yaml_error("image: ok.pgm\nresolution: nan\norigin: [0, 0, 0]\n" GOOD_TAIL,
                    "resolution", "finite");
  expect_yaml_error("image: ok.pgm\nresolution: .nan\norigin: [0, 0, 0]\n" GOOD_TAIL,
                    "resolution", "number");
  expect_yaml_error("image: ok.pgm\nresolution: inf\norigin: [0, 0, 0]\n" GOOD_TAIL,
                    "resolution", "finite");
  expect_yaml_error("image: ok.pgm\nresolution: 0.05\norigin: 5\n" GOOD_TAIL,
                    "bad.yaml:3:9: origin: expected a sequence of 3 numbers",
                    NULL);
  expect_yaml_error("image: ok.pgm\nresolution: 0.05\norigin: [0, 0]\n" GOOD_TAIL,
                    "origin: expected 3 numbers, got 2", NULL);
  expect_yaml_error("image: ok.pgm\nresolution: 0.05\norigin: [0, x, 0]\n" GOOD_TAIL,
                    "origin[1]: expected a number", NULL);
  expect_yaml_error("image: [a]\nresolution: 0.05\norigin: [0, 0, 0]\n" GOOD_TAIL,
                    "image: expected a string, got a sequence", NULL);
  expect_yaml_error("image: ok.pgm\nresolution: 0.05\norigin: [0, 0, 0]\n"
                    "negate: maybe\noccupied_thresh: 0.65\nfree_thresh: 0.196\n",
                    "bad.yaml:4:9: negate: expected true or false", NULL);
  expect_yaml_error("image: ok.pgm\nresolution: 0.05\norigin: [0, 0, 0]\n"
                    "negate: 0\noccupied_thresh: 1.5\nfree_thresh: 0.196\n",
                    "bad.yaml:5:18: occupied_thresh must be in [0, 1]", NULL);
  expect_yaml_error("image: ok.pgm\nresolution: 0.05\norigin: [0, 0, 0]\n"
                    "negate: 0\noccupied_thresh: 0.65\nfree_thresh: -0.1\n",
                    "free_thresh must be in [0, 1]", NULL);
  expect_yaml_error("image: ok.pgm\nresolution: 0.05\norigin: [0, 0, 0]\n"
                    "negate: 0\noccupied_thresh: 0.3\nfree_thresh: 0.5\n",
                    "free_thresh (0.5) must be below occupied_thresh (0.3)",
                    NULL);
  expect_yaml_error("image: ok.pgm\nresolution: 0.05\norigin: [0, 0, 0]\n" GOOD_TAIL
                    "mode: fancy\n",
                    "bad.yaml:7:7: mode: expected trinary, scale or raw", NULL);
  expect_yaml_error(
      "image: ok.pgm\nresolutoin: 0.05\norigin: [0, 0, 0]\n" GOOD_TAIL,
      "missing key 'resolution'", "(unknown keys: resolutoin)");
  expect_yaml_error("image: ok.pgm\nresolution: 0.05\nresolution: 0.1\n"
                    "origin: [0, 0, 0]\n" GOOD_TAIL,
                    "bad.yaml:3:1:", "duplicate key 'resolution'");
  expect_yaml_error(
      "image: missing.png\nresolution: 0.05\norigin: [0, 0, 0]\n" GOOD_TAIL,
      "missing.png: cannot open: No such file", NULL);
  expect_yaml_error("image: ''\nresolution: 0.05\norigin: [0, 0, 0]\n" GOOD_TAIL,
                    "image: empty path", NULL);
}

/* pa_map_load(def) is refused with an error naming want. */
static void expect_load_err(const pa_map_def *def, const char *want) {
  pa_grid g;
  assert_int_equal(pa_map_load(def, &g, errbuf, sizeof errbuf), -1);
  if (!strstr(errbuf, want))
    fail_msg("error '%s' lacks '%s'", errbuf, want);
}

/* pa_map_flags_resolve(f) is refused with an error naming want. */
static void expect_resolve_err(const pa_map_flags *f, const char *want) {
  pa_world w;
  assert_int_equal(pa_map_flags_resolve(f, &w, errbuf, sizeof errbuf), -1);
  if (!strstr(errbuf, want))
    fail_msg("error '%s' lacks '%s'", errbuf, want);
}

static void test_bad_images(void **state) {
  (void)state;
  char img[512], yml[512];
  /* Over the size limit: refused before decoding. */
  unsigned char px[16 * 12];
  memset(px, 255, sizeof px);
  tpath(img, sizeof img, "big.png");
  assert_int_equal(pa_map_img_write_png_n(img, 16, 12, 1, px), 0);
  tpath(yml, sizeof yml, "big.yaml");
  write_map_yaml(yml, "big.png", 0.05, 0, 0, 0, 0, 0.65, 0.196, NULL);
  pa_map_def def = pa_map_def_default();
  assert_int_equal(def.max_width, 8192);
  assert_int_equal(def.max_height, 8192);
  assert_int_equal(pa_map_parse_yaml(yml, &def, errbuf, sizeof errbuf), 0);
  def.max_width = 15;
  pa_grid g;
  expect_load_err(&def, "16 x 12");
  assert_non_null(strstr(errbuf, "over the limit of 15 x 8192"));
  def.max_width = 16;
  def.max_height = 11;
  expect_load_err(&def, "over the limit");
  def.max_height = 12;
  assert_int_equal(pa_map_load(&def, &g, errbuf, sizeof errbuf), 0);
  pa_grid_free(&g);
  /* Defs made in code are range-checked too. */
  def.resolution = -1;
  expect_load_err(&def, "resolution");
  def.resolution = NAN;
  expect_load_err(&def, "resolution");
  def.resolution = 0.05;
  def.free_thresh = 2;
  expect_load_err(&def, "free_thresh");

  /* Truncated PNG: header intact, data cut. */
  unsigned char rnd[64 * 64];
  random_pixels(rnd, sizeof rnd, 9);
  tpath(img, sizeof img, "trunc.png");
  assert_int_equal(pa_map_img_write_png_n(img, 64, 64, 1, rnd), 0);
  FILE *f = fopen(img, "rb");
  assert_non_null(f);
  unsigned char buf[65536];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  assert_true(n > 200);
  f = fopen(img, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(buf, 1, n / 2, f), n / 2);
  fclose(f);
  tpath(yml, sizeof yml, "trunc.yaml");
  write_map_yaml(yml, "trunc.png", 0.05, 0, 0, 0, 0, 0.65, 0.196, NULL);
  assert_int_equal(pa_map_load_yaml(yml, &g, errbuf, sizeof errbuf), -1);
  assert_non_null(strstr(errbuf, "trunc.png: PNG"));
  /* Only the first 20 bytes: not even a header. */
  f = fopen(img, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(buf, 1, 20, f), 20);
  fclose(f);
  assert_int_equal(pa_map_load_yaml(yml, &g, errbuf, sizeof errbuf), -1);
  assert_non_null(strstr(errbuf, "trunc.png"));
  /* Not an image at all. */
  tpath(img, sizeof img, "text.png");
  write_file(img, "hello, I am not a PNG\n");
  write_map_yaml(yml, "text.png", 0.05, 0, 0, 0, 0, 0.65, 0.196, NULL);
  assert_int_equal(pa_map_load_yaml(yml, &g, errbuf, sizeof errbuf), -1);
  assert_non_null(
      strstr(errbuf, "text.png: an unknown format image is not supported"));
}

static void test_flags(void **state) {
  (void)state;
  pa_map_flags f = pa_map_flags_default();
  assert_null(f.world);
  assert_null(f.map_yaml);
  assert_true(f.map_resolution == 0.05 && f.map_occupied_thresh == 0.65 &&
              f.map_free_thresh == 0.196 && f.map_negate == 0);
  pa_world w;
  /* Nothing given: the default world. */
  assert_int_equal(pa_map_flags_resolve(&f, &w, errbuf, sizeof errbuf), 0);
  assert_string_equal(w.map.image, "");
  assert_int_equal(w.robot_count, 1);
  pa_world_free(&w);
  /* --map_yaml PATH. */
  char img[512], yml[512];
  unsigned char px[4] = {0, 255, 255, 0};
  tpath(img, sizeof img, "flags.pgm");
  write_pgm(img, 2, 2, px);
  tpath(yml, sizeof yml, "flags.yaml");
  write_map_yaml(yml, "flags.pgm", 0.25, 1, 2, 0, 1, 0.6, 0.3, NULL);
  f.map_yaml = yml;
  assert_int_equal(pa_map_flags_resolve(&f, &w, errbuf, sizeof errbuf), 0);
  assert_string_equal(w.map.image, img);
  assert_true(w.map.resolution == 0.25 && w.map.negate == 1 &&
              w.map.occupied_thresh == 0.6);
  assert_int_equal(w.robot_count, 1);
  pa_world_free(&w);
  /* --map_yaml "" + --map_image and the --map_* flags. */
  f.map_yaml = "";
  expect_resolve_err(&f, "--map_image");
  f.map_image = img;
  f.map_resolution = 0.1;
  f.map_origin_x = -3;
  f.map_origin_y = 4;
  f.map_negate = 1;
  assert_int_equal(pa_map_flags_resolve(&f, &w, errbuf, sizeof errbuf), 0);
  assert_string_equal(w.map.image, img);
  assert_true(w.map.resolution == 0.1 && w.map.origin[0] == -3 &&
              w.map.origin[1] == 4 && w.map.negate == 1);
  pa_grid g;
  assert_int_equal(pa_map_load(&w.map, &g, errbuf, sizeof errbuf), 0);
  /* south row is [255, 0]; with negate white is occupied, black free */
  assert_int_equal(g.cells[0], 100);
  assert_int_equal(g.cells[1], 0);
  pa_grid_free(&g);
  pa_world_free(&w);
  f.map_resolution = -0.1;
  expect_resolve_err(&f, "resolution");
  f.map_resolution = 0.1;
  f.map_free_thresh = 0.9;
  expect_resolve_err(&f, "free_thresh");
  f.map_free_thresh = 0.196;
  f.map_negate = 2;
  expect_resolve_err(&f, "negate");
  f.map_negate = 0;
  /* --world wins over everything. */
  char wf[512];
  tpath(wf, sizeof wf, "flags.world.yaml");
  write_file(wf, "map: flags.yaml\nrobots:\n  - {name: a, pose: [1, 1, 0]}\n"
                 "  - {name: b, pose: [2, 1, 0]}\n");
  f.world = wf;
  assert_int_equal(pa_map_flags_resolve(&f, &w, errbuf, sizeof errbuf), 0);
  assert_int_equal(w.robot_count, 2);
  assert_true(w.map.resolution == 0.25);
  pa_world_free(&w);
  f.world = "/nonexistent/w.yaml";
  expect_resolve_err(&f, "/nonexistent/w.yaml");
  f.map_yaml = "/nonexistent/m.yaml";
  f.world = NULL;
  expect_resolve_err(&f, "/nonexistent/m.yaml");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pgm_every_grey),
      cmocka_unit_test(test_png_channels),
      cmocka_unit_test(test_png_alpha_known),
      cmocka_unit_test(test_image_paths),
      cmocka_unit_test(test_flip_and_origin),
      cmocka_unit_test(test_default_world),
      cmocka_unit_test(test_save_roundtrip),
      cmocka_unit_test(test_bad_yaml),
      cmocka_unit_test(test_bad_images),
      cmocka_unit_test(test_flags),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
