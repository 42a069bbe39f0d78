/*
 * test_map_files.c - hostile and corrupt map files: formats outside PNG,
 * PGM, BMP and JPEG refused by name (a crafted Softimage PIC crashed stb),
 * corrupt images refused (bad CRC, truncated pixel data, maxval 0), sizes
 * and YAML depth checked before any decoding, only regular files opened,
 * and run-time loads confined to a data directory without quoting files.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "pa_map.h"
#include "pa_map_int.h"
#include "testutil.h"

static char errbuf[2048];

static void tpath(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", pa_test_tmpdir(), name);
}

static void write_bytes(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

static void write_text(const char *path, const char *s) {
  write_bytes(path, s, strlen(s));
}

static unsigned char *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  unsigned char *b = malloc(1 << 20);
  assert_non_null(b);
  *n = fread(b, 1, 1 << 20, f);
  fclose(f);
  return b;
}

/* A map.yaml next to image `img` (a file name in the temp dir). */
static void map_yaml(char *yml, size_t n, const char *img) {
  char text[512];
  tpath(yml, n, "m.yaml");
  snprintf(text, sizeof text,
           "image: %s\nresolution: 0.05\norigin: [0, 0, 0]\nnegate: 0\n"
           "occupied_thresh: 0.65\nfree_thresh: 0.196\n",
           img);
  write_text(yml, text);
}

/* Loading image `name` (bytes b) through a map.yaml fails with both
 * substrings in the error. */
static void expect_image_refused(const char *name, const void *b, size_t n,
                                 const char *want1, const char *want2) {
  char img[512], yml[512];
  tpath(img, sizeof img, name);
  write_bytes(img, b, n);
  map_yaml(yml, sizeof yml, name);
  pa_grid g;
  errbuf[0] = 0;
  if (pa_map_load_yaml(yml, &g, errbuf, sizeof errbuf) == 0)
    fail_msg("%s loaded (%ux%u)", name, g.width, g.height);
  if (!strstr(errbuf, want1) || (want2 && !strstr(errbuf, want2)))
    fail_msg("%s: error '%s' lacks '%s' / '%s'", name, errbuf, want1,
             want2 ? want2 : "");
  assert_null(g.cells);
  unlink(img);
}

static void be32w(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

static uint32_t crc(const unsigned char *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++)
      c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xffffffffu;
}

static void test_formats_refused(void **state) {
  (void)state;
  /* The 109-byte Softimage PIC shape that crashed the PIC decoder. */
  unsigned char pic[109];
  memset(pic, 0xff, sizeof pic);
  pic[0] = 0x53, pic[1] = 0x80, pic[2] = 0xf6, pic[3] = 0x34;
  memcpy(pic + 88, "PICT", 4);
  expect_image_refused("evil.pic", pic, sizeof pic,
                       "evil.pic: Softimage PIC image is not supported",
                       "PNG, PGM (P5), BMP or JPEG");
  static const unsigned char gif[] = "GIF89a\x01\x00\x01\x00\x00\x00\x00;";
  expect_image_refused("a.gif", gif, sizeof gif - 1,
                       "a.gif: GIF image is not supported", NULL);
  expect_image_refused("a.ppm", "P6\n1 1\n255\nabc", 14,
                       "a.ppm: PPM (P6) image is not supported", NULL);
  expect_image_refused("a.psd", "8BPS\0\1", 6, "PSD image is not supported",
                       NULL);
}

static void test_corrupt_images(void **state) {
  (void)state;
  /* A good PNG, then one byte of its pixel data flipped: bad CRC. */
  unsigned char px[32 * 32];
  for (size_t i = 0; i < sizeof px; i++)
    px[i] = (unsigned char)(i * 7);
  char img[512];
  tpath(img, sizeof img, "good.png");
  assert_int_equal(pa_map_img_write_png_n(img, 32, 32, 1, px), 0);
  size_t n;
  unsigned char *b = read_all(img, &n);
  b[n - 20] ^= 0x40; /* inside IDAT (IEND is the last 12 bytes) */
  expect_image_refused("crc.png", b, n, "crc.png: PNG chunk", "bad CRC");
  free(b);

  /* PGM with 1% of its pixel data. */
  char pgm[16384];
  int h = snprintf(pgm, sizeof pgm, "P5\n100 100\n255\n");
  memset(pgm + h, 200, 100);
  expect_image_refused("short.pgm", pgm, (size_t)h + 100,
                       "short.pgm: PGM truncated", "100 of 10000 bytes");
  expect_image_refused("max0.pgm", "P5\n2 2\n0\n\0\0\0\0", 13,
                       "max0.pgm: PGM maxval 0 is out of range", NULL);
  expect_image_refused("over.pgm", "P5\n99999999999 2\n255\n", 21,
                       "over.pgm: PGM header: bad width", NULL);
  expect_image_refused("big.pgm", "P5\n9000 2\n255\n", 14,
                       "big.pgm: image is 9000 x 2 pixels, over the limit",
                       NULL);
  /* A value above maxval is corrupt. */
  expect_image_refused("hi.pgm", "P5\n2 1\n100\n\x10\x90", 13,
                       "hi.pgm: PGM pixel 1 is 144, above maxval 100", NULL);

  /* Truncated BMP: header says 64 x 64, half the rows are there. */
  tpath(img, sizeof img, "good.bmp");
  unsigned char grey[64 * 64];
  memset(grey, 254, sizeof grey);
  assert_int_equal(pa_map_img_write_bmp(img, 64, 64, grey), 0);
  b = read_all(img, &n);
  expect_image_refused("trunc.bmp", b, n / 2, "trunc.bmp: BMP truncated", NULL);
  free(b);

  /* A JPEG cut short has no end-of-image marker. */
  static const unsigned char jpg[] = {0xff, 0xd8, 0xff, 0xe0, 0, 16, 'J',
                                      'F',  'I',  'F',  0,    1, 1};
  expect_image_refused("cut.jpg", jpg, sizeof jpg, "cut.jpg: JPEG", NULL);
  /* A Huffman table of more than 256 codes (stb wrote past its tables). */
  unsigned char dht[2 + 4 + 17 + 2];
  memset(dht, 0, sizeof dht);
  dht[0] = 0xff, dht[1] = 0xd8, dht[2] = 0xff, dht[3] = 0xc4;
  dht[5] = 2 + 17;
  for (int k = 0; k < 16; k++)
    dht[7 + k] = 20; /* 320 codes */
  dht[23] = 0xff, dht[24] = 0xd9;
  expect_image_refused("dht.jpg", dht, sizeof dht,
                       "dht.jpg: JPEG Huffman table of 320 codes is corrupt",
                       NULL);
}

/* A PNG header claiming 16384 x 16384 (300 KB of zlib data froze the sim
 * for 23 s at 3.7 GB): refused from the header, at once. */
static void test_huge_dimensions(void **state) {
  (void)state;
  unsigned char b[8 + 25 + 12 + 12];
  static const unsigned char sig[8] = {0x89, 'P',  'N',  'G',
                                       '\r', '\n', 0x1a, '\n'};
  memcpy(b, sig, 8);
  unsigned char *c = b + 8;
  be32w(c, 13);
  memcpy(c + 4, "IHDR", 4);
  be32w(c + 8, 16384);
  be32w(c + 12, 16384);
  c[16] = 8, c[17] = 0, c[18] = 0, c[19] = 0, c[20] = 0;
  be32w(c + 21, crc(c + 4, 17));
  c += 25;
  be32w(c, 0);
  memcpy(c + 4, "IDAT", 4);
  be32w(c + 8, crc(c + 4, 4));
  c += 12;
  be32w(c, 0);
  memcpy(c + 4, "IEND", 4);
  be32w(c + 8, crc(c + 4, 4));
  int64_t t0 = pa_test_now_ms();
  expect_image_refused("huge.png", b, sizeof b,
                       "huge.png: image is 16384 x 16384 pixels",
                       "over the limit of 8192 x 8192");
  assert_true(pa_test_now_ms() - t0 < 200);
  /* A chunk length running past the end (stb read past its buffer). */
  be32w(b + 16, 4);
  be32w(b + 20, 4);
  be32w(b + 29, crc(b + 12, 17));
  be32w(b + 8 + 25, 0x7ffffff0u);
  expect_image_refused("len.png", b, sizeof b, "len.png: PNG chunk 1 runs past",
                       NULL);
}

static void test_yaml_limits(void **state) {
  (void)state;
  char yml[512];
  tpath(yml, sizeof yml, "deep.yaml");
  /* 100 KB of nesting: took 3.5 s in libyaml. */
  size_t depth = 50000;
  char *s = malloc(2 * depth + 16);
  assert_non_null(s);
  char *p = s;
  p += sprintf(p, "image: ");
  for (size_t i = 0; i < depth; i++)
    *p++ = '[';
  for (size_t i = 0; i < depth; i++)
    *p++ = ']';
  *p++ = '\n';
  *p = 0;
  write_text(yml, s);
  free(s);
  pa_grid g;
  int64_t t0 = pa_test_now_ms();
  assert_int_equal(pa_map_load_yaml(yml, &g, errbuf, sizeof errbuf), -1);
  assert_true(pa_test_now_ms() - t0 < 300);
  assert_non_null(strstr(errbuf, "deep.yaml:1:"));
  assert_non_null(strstr(errbuf, "YAML nested deeper than 64 levels"));
  /* 64 levels are fine for the parser (the map then says what it wants). */
  tpath(yml, sizeof yml, "multi.yaml");
  write_text(yml, "image: a.pgm\nresolution: 0.05\norigin: [0, 0, 0]\n"
                  "negate: 0\noccupied_thresh: 0.65\nfree_thresh: 0.196\n"
                  "---\nimage: b.pgm\n");
  assert_int_equal(pa_map_load_yaml(yml, &g, errbuf, sizeof errbuf), -1);
  assert_non_null(
      strstr(errbuf, "multi.yaml:7:1: more than one YAML document"));
  static const char *const res[] = {"1e-300", "1e300", "0.00001", "2000"};
  for (size_t i = 0; i < 4; i++) {
    char text[256];
    tpath(yml, sizeof yml, "res.yaml");
    snprintf(text, sizeof text,
             "image: a.pgm\nresolution: %s\norigin: [0, 0, 0]\nnegate: 0\n"
             "occupied_thresh: 0.65\nfree_thresh: 0.196\n",
             res[i]);
    write_text(yml, text);
    pa_map_def def = pa_map_def_default();
    assert_int_equal(pa_map_parse_yaml(yml, &def, errbuf, sizeof errbuf), -1);
    if (!strstr(errbuf, "res.yaml:2:13: resolution must be in [0.0001, 1000]"))
      fail_msg("resolution %s: '%s'", res[i], errbuf);
  }
}

/* FIFOs and devices are refused without blocking (opening a FIFO with no
 * writer used to hang pa-sim for good). */
static void test_not_regular(void **state) {
  (void)state;
  char fifo[512], yml[512];
  tpath(fifo, sizeof fifo, "fifo.yaml");
  assert_int_equal(mkfifo(fifo, 0600), 0);
  pa_grid g;
  int64_t t0 = pa_test_now_ms();
  assert_int_equal(pa_map_load_yaml(fifo, &g, errbuf, sizeof errbuf), -1);
  assert_non_null(strstr(errbuf, "fifo.yaml: not a regular file"));
  map_yaml(yml, sizeof yml, "fifo.yaml"); /* a FIFO as the image */
  assert_int_equal(pa_map_load_yaml(yml, &g, errbuf, sizeof errbuf), -1);
  assert_non_null(strstr(errbuf, "fifo.yaml: not a regular file"));
  assert_int_equal(pa_map_load_yaml("/dev/ptmx", &g, errbuf, sizeof errbuf),
                   -1);
  assert_non_null(strstr(errbuf, "/dev/ptmx: not a regular file"));
  assert_int_equal(pa_map_load_yaml("/dev/zero", &g, errbuf, sizeof errbuf),
                   -1);
  assert_non_null(strstr(errbuf, "/dev/zero: not a regular file"));
  assert_true(pa_test_now_ms() - t0 < 500);
  unlink(fifo);
}

/* Run-time loads: inside the data directory only, and errors that never
 * show what a file holds. */
static void test_guard(void **state) {
  (void)state;
  char dir[512], real[4096], outside[512], yml[8192], link[8192], text[8192];
  tpath(dir, sizeof dir, "data");
  assert_int_equal(mkdir(dir, 0700), 0);
  assert_non_null(realpath(dir, real));
  pa_map_guard gd = {real};
  tpath(outside, sizeof outside, "secret.yaml");
  write_text(outside, "root:*:20228:0:99999:7:::\n");
  pa_grid g;
  pa_world w;
  /* Started unconfined, the old leak: the file's first line in the error. */
  assert_int_equal(pa_map_load_yaml(outside, &g, errbuf, sizeof errbuf), -1);
  assert_non_null(strstr(errbuf, "root:*:20228"));
  /* Confined: refused by name, before the file is looked at. */
  assert_int_equal(pa_map_load_yaml_g(outside, &gd, &g, errbuf, sizeof errbuf),
                   -1);
  assert_non_null(strstr(errbuf, "forbidden path"));
  assert_null(strstr(errbuf, "root"));
  assert_int_equal(
      pa_map_load_yaml_g("/etc/shadow", &gd, &g, errbuf, sizeof errbuf), -1);
  assert_non_null(strstr(
      errbuf, "forbidden path (outside the data directory): /etc/shadow"));
  /* An absent file outside answers the same: nothing learnt about it. */
  char e2[2048];
  assert_int_equal(
      pa_map_load_yaml_g("/nonexistent/x.yaml", &gd, &g, e2, sizeof e2), -1);
  assert_non_null(strstr(
      e2, "forbidden path (outside the data directory): /nonexistent/x.yaml"));
  snprintf(text, sizeof text, "%s/../secret.yaml", real);
  assert_int_equal(pa_world_load_g(text, &gd, &w, errbuf, sizeof errbuf), -1);
  assert_non_null(strstr(errbuf, "forbidden path ('..')"));
  /* A symlink inside pointing out. */
  snprintf(link, sizeof link, "%s/link.yaml", real);
  assert_int_equal(symlink(outside, link), 0);
  assert_int_equal(pa_world_load_g(link, &gd, &w, errbuf, sizeof errbuf), -1);
  assert_non_null(
      strstr(errbuf, "forbidden path (outside the data directory): "));
  assert_null(strstr(errbuf, "root"));
  /* A map.yaml inside whose image is outside. */
  snprintf(yml, sizeof yml, "%s/m.yaml", real);
  snprintf(text, sizeof text,
           "image: %s\nresolution: 0.05\norigin: [0, 0, 0]\nnegate: 0\n"
           "occupied_thresh: 0.65\nfree_thresh: 0.196\n",
           outside);
  write_text(yml, text);
  assert_int_equal(pa_map_load_yaml_g(yml, &gd, &g, errbuf, sizeof errbuf), -1);
  assert_non_null(
      strstr(errbuf, "forbidden path (outside the data directory): "));
  /* Inside, errors name the place but not the text. */
  snprintf(yml, sizeof yml, "%s/w.yaml", real);
  write_text(yml, "map: default\nsecretkey: 1\n");
  assert_int_equal(pa_world_load_g(yml, &gd, &w, errbuf, sizeof errbuf), -1);
  assert_non_null(strstr(errbuf, "w.yaml:2:1: world: unknown key '...'"));
  assert_null(strstr(errbuf, "secretkey"));
  write_text(yml, "map: default\nrobots:\n  - {name: bob, pose: [0, 0, 0]}\n"
                  "  - {name: bob, pose: [1, 0, 0]}\n");
  assert_int_equal(pa_world_load_g(yml, &gd, &w, errbuf, sizeof errbuf), -1);
  assert_non_null(strstr(errbuf, "duplicate name"));
  assert_null(strstr(errbuf, "bob"));
  /* And a good world inside loads, relative map paths included. */
  unsigned char px[4] = {254, 254, 254, 0};
  snprintf(text, sizeof text, "%s/ok.png", real);
  assert_int_equal(pa_map_img_write_png_n(text, 2, 2, 1, px), 0);
  snprintf(text, sizeof text, "%s/ok.yaml", real);
  write_text(text, "image: ok.png\nresolution: 0.05\norigin: [0, 0, 0]\n"
                   "negate: 0\noccupied_thresh: 0.65\nfree_thresh: 0.196\n");
  write_text(yml,
             "map: ok.yaml\nrobots:\n  - {name: bob, pose: [0.02, 0.07]}\n");
  assert_int_equal(pa_world_load_g(yml, &gd, &w, errbuf, sizeof errbuf), 0);
  assert_int_equal(pa_map_load_g(&w.map, &gd, &g, errbuf, sizeof errbuf), 0);
  assert_int_equal(g.width, 2);
  pa_grid_free(&g);
  pa_world_free(&w);
  assert_int_equal(
      pa_map_load_yaml_g("ok.yaml", &gd, &g, errbuf, sizeof errbuf), 0);
  pa_grid_free(&g);
}

/* A 24 x 20 baseline JPEG (made once with Pillow, quality 85). */
static const unsigned char small_jpg[] = {
    0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01,
    0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0xff, 0xdb, 0x00, 0x43,
    0x00, 0x05, 0x03, 0x04, 0x04, 0x04, 0x03, 0x05, 0x04, 0x04, 0x04, 0x05,
    0x05, 0x05, 0x06, 0x07, 0x0c, 0x08, 0x07, 0x07, 0x07, 0x07, 0x0f, 0x0b,
    0x0b, 0x09, 0x0c, 0x11, 0x0f, 0x12, 0x12, 0x11, 0x0f, 0x11, 0x11, 0x13,
    0x16, 0x1c, 0x17, 0x13, 0x14, 0x1a, 0x15, 0x11, 0x11, 0x18, 0x21, 0x18,
    0x1a, 0x1d, 0x1d, 0x1f, 0x1f, 0x1f, 0x13, 0x17, 0x22, 0x24, 0x22, 0x1e,
    0x24, 0x1c, 0x1e, 0x1f, 0x1e, 0xff, 0xdb, 0x00, 0x43, 0x01, 0x05, 0x05,
    0x05, 0x07, 0x06, 0x07, 0x0e, 0x08, 0x08, 0x0e, 0x1e, 0x14, 0x11, 0x14,
    0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e,
    0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e,
    0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e,
    0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e, 0x1e,
    0x1e, 0x1e, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x00, 0x14, 0x00, 0x18, 0x03,
    0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01, 0xff, 0xc4, 0x00,
    0x1f, 0x00, 0x00, 0x01, 0x05, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05,
    0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0xff, 0xc4, 0x00, 0xb5, 0x10, 0x00,
    0x02, 0x01, 0x03, 0x03, 0x02, 0x04, 0x03, 0x05, 0x05, 0x04, 0x04, 0x00,
    0x00, 0x01, 0x7d, 0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21,
    0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07, 0x22, 0x71, 0x14, 0x32, 0x81,
    0x91, 0xa1, 0x08, 0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0, 0x24,
    0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25,
    0x26, 0x27, 0x28, 0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a,
    0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56,
    0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a,
    0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83, 0x84, 0x85, 0x86,
    0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99,
    0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3,
    0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6,
    0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9,
    0xda, 0xe1, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1,
    0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xff, 0xc4, 0x00,
    0x1f, 0x01, 0x00, 0x03, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01,
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05,
    0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0xff, 0xc4, 0x00, 0xb5, 0x11, 0x00,
    0x02, 0x01, 0x02, 0x04, 0x04, 0x03, 0x04, 0x07, 0x05, 0x04, 0x04, 0x00,
    0x01, 0x02, 0x77, 0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31,
    0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71, 0x13, 0x22, 0x32, 0x81, 0x08,
    0x14, 0x42, 0x91, 0xa1, 0xb1, 0xc1, 0x09, 0x23, 0x33, 0x52, 0xf0, 0x15,
    0x62, 0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34, 0xe1, 0x25, 0xf1, 0x17, 0x18,
    0x19, 0x1a, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x35, 0x36, 0x37, 0x38, 0x39,
    0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55,
    0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69,
    0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x82, 0x83, 0x84,
    0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97,
    0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa,
    0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4,
    0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7,
    0xd8, 0xd9, 0xda, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea,
    0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xff, 0xda, 0x00,
    0x0c, 0x03, 0x01, 0x00, 0x02, 0x11, 0x03, 0x11, 0x00, 0x3f, 0x00, 0xe1,
    0xbc, 0x2b, 0xa2, 0xda, 0x6d, 0x88, 0xc7, 0x15, 0xbc, 0x10, 0x09, 0x5e,
    0x2f, 0x2c, 0x22, 0xaa, 0x48, 0x1b, 0xa0, 0x27, 0x72, 0x82, 0x30, 0x0f,
    0xf1, 0x3f, 0x5e, 0x33, 0xc9, 0xaf, 0x49, 0xf0, 0xd6, 0x94, 0x45, 0xac,
    0x49, 0x22, 0x84, 0x57, 0x8b, 0x84, 0x11, 0x8c, 0x12, 0x84, 0x37, 0x42,
    0x8a, 0xad, 0x9c, 0x81, 0xc2, 0x31, 0x1f, 0x95, 0x67, 0x78, 0x52, 0xd4,
    0x95, 0x69, 0xa2, 0x66, 0x91, 0x9e, 0x34, 0x76, 0x75, 0x60, 0x76, 0xe0,
    0x80, 0x7e, 0x60, 0xe7, 0xb2, 0xe7, 0x99, 0x07, 0xd3, 0x18, 0x07, 0xbd,
    0xd5, 0x75, 0x9b, 0x0f, 0x07, 0xf8, 0x62, 0xe7, 0x5e, 0xbb, 0x8f, 0xed,
    0x29, 0x14, 0xe8, 0x51, 0x3c, 0xc4, 0x43, 0x2c, 0x8f, 0xd1, 0x43, 0xef,
    0x03, 0xab, 0x72, 0x77, 0xb9, 0xc0, 0x27, 0x04, 0x8e, 0x30, 0xcd, 0x71,
    0x10, 0xc7, 0x54, 0x4b, 0x08, 0xf9, 0x6a, 0x36, 0x92, 0x5d, 0x1f, 0xf9,
    0x6b, 0xd7, 0xf0, 0xea, 0x65, 0x9d, 0x66, 0x55, 0x31, 0x15, 0x15, 0x08,
    0x6a, 0xe5, 0xa2, 0xb7, 0x77, 0xa2, 0xeb, 0xd9, 0x7c, 0xaf, 0xd0, 0xe7,
    0x7e, 0x2e, 0x78, 0xb3, 0xfe, 0x11, 0x9d, 0x21, 0x34, 0x0d, 0x39, 0xe7,
    0x8b, 0x5a, 0xbf, 0x8a, 0x2b, 0x88, 0x8c, 0x51, 0x6d, 0xfb, 0x3c, 0x25,
    0x8c, 0x65, 0xbe, 0x68, 0xfe, 0xf3, 0x6d, 0x70, 0x0a, 0x47, 0x91, 0xc9,
    0xdc, 0x08, 0xe4, 0xaf, 0x25, 0xd3, 0xac, 0x6f, 0x35, 0x2d, 0x49, 0xf5,
    0x1b, 0xeb, 0xc9, 0x6e, 0x66, 0xba, 0x67, 0x8e, 0xe2, 0xe6, 0x4f, 0x2d,
    0x03, 0x76, 0x5c, 0x28, 0xda, 0x9d, 0x33, 0x80, 0x37, 0x0c, 0x00, 0x07,
    0x00, 0x51, 0x5e, 0xae, 0x17, 0x13, 0x4f, 0x24, 0xa4, 0xb0, 0xf8, 0xa4,
    0xb9, 0xf7, 0x6d, 0xab, 0xdf, 0xd1, 0xf6, 0x5f, 0xf0, 0xfa, 0xdc, 0xfa,
    0x0c, 0x06, 0x5c, 0xb2, 0xfa, 0x5e, 0xce, 0x9c, 0x14, 0xe4, 0xf5, 0x9b,
    0x76, 0xf8, 0x9f, 0x6e, 0x6e, 0x9d, 0x15, 0xb4, 0xd2, 0xfb, 0xb6, 0x7b,
    0xe7, 0x86, 0xb4, 0xcb, 0x79, 0x2e, 0xcd, 0xb9, 0x69, 0xb6, 0x41, 0x71,
    0x24, 0x0a, 0x7c, 0xc2, 0x4e, 0xdc, 0x91, 0x9c, 0x9c, 0xed, 0x3f, 0x28,
    0xe5, 0x71, 0xfc, 0xab, 0xc6, 0xfe, 0x2b, 0xeb, 0x37, 0x9a, 0xe7, 0x8e,
    0x2f, 0x62, 0xbc, 0x76, 0x58, 0x74, 0x7b, 0x04, 0x4b, 0x58, 0xd2, 0x59,
    0x31, 0xcc, 0x62, 0x62, 0xc4, 0xb3, 0x12, 0x09, 0x66, 0xc1, 0xda, 0x46,
    0x55, 0x54, 0x7b, 0x92, 0x8a, 0xf0, 0xb0, 0xcb, 0x97, 0x3f, 0x95, 0xbf,
    0x92, 0xff, 0x00, 0x36, 0xf5, 0x7e, 0xaf, 0xb9, 0xf3, 0xdc, 0x36, 0x93,
    0xcd, 0x9d, 0xfa, 0x46, 0x5f, 0x94, 0x17, 0xe4, 0xdf, 0xde, 0x68, 0x78,
    0x44, 0x22, 0xe9, 0x12, 0xea, 0x69, 0x1e, 0xc9, 0x55, 0xd1, 0xc2, 0xa3,
    0xb2, 0x82, 0x4b, 0x05, 0x24, 0xb0, 0x3b, 0x8e, 0x72, 0x4f, 0x2d, 0xd6,
    0x8a, 0x28, 0xaf, 0xa2, 0xab, 0x52, 0x6e, 0x5b, 0xff, 0x00, 0x56, 0x47,
    0x6e, 0x3d, 0xb8, 0xd6, 0x69, 0x69, 0xbf, 0xfe, 0x95, 0x23, 0xff, 0xd9};

/* Seeded mutations of a small valid image of each format (bytes flipped,
 * set to 0/0xff, runs cut or repeated), decoded from memory: each either
 * loads with the header's size or is refused with a reason; never a crash
 * or a sanitizer report (a 150 s mutation run crashed stb 135 times). */
static void test_mutations(void **state) {
  (void)state;
  unsigned char px[24 * 20 * 3];
  for (size_t i = 0; i < sizeof px; i++)
    px[i] = (unsigned char)(i * 37 + 11);
  const char *names[] = {"m.png", "m3.png", "m.bmp", "m.jpg", "m.pgm"};
  char path[512];
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  int loaded = 0, refused = 0, iters = 1500;
  if (getenv("PA_MUTATIONS")) /* a longer run by hand */
    iters = atoi(getenv("PA_MUTATIONS"));
  for (size_t f = 0; f < sizeof names / sizeof names[0]; f++) {
    tpath(path, sizeof path, names[f]);
    if (f == 0)
      assert_int_equal(pa_map_img_write_png_n(path, 24, 20, 1, px), 0);
    if (f == 1)
      assert_int_equal(pa_map_img_write_png_n(path, 24, 20, 3, px), 0);
    if (f == 2)
      assert_int_equal(pa_map_img_write_bmp(path, 24, 20, px), 0);
    if (f == 3)
      write_bytes(path, small_jpg, sizeof small_jpg);
    if (f == 4) {
      char hdr[32];
      int h = snprintf(hdr, sizeof hdr, "P5\n24 20\n255\n");
      unsigned char b[32 + 480];
      memcpy(b, hdr, (size_t)h);
      memcpy(b + h, px, 480);
      write_bytes(path, b, (size_t)h + 480);
    }
    size_t n;
    unsigned char *orig = read_all(path, &n);
    unsigned char *b = malloc(n + 64);
    assert_non_null(b);
    for (int it = 0; it < iters; it++) {
      memcpy(b, orig, n);
      size_t m = n;
      int edits = 1 + (int)((seed >> 60) & 3);
      for (int e = 0; e < edits; e++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        size_t at = (size_t)(seed >> 33) % m;
        switch ((seed >> 20) & 7) {
        case 0:
          b[at] ^= (unsigned char)(1u << ((seed >> 8) & 7));
          break;
        case 1:
          b[at] = 0xff;
          break;
        case 2:
          b[at] = 0;
          break;
        case 3:
          m = at + 1;
          break; /* cut */
        case 4:  /* 4 bytes of a header field made huge */
          for (size_t k = 0; k < 4 && at + k < m; k++)
            b[at + k] = 0x7f;
          break;
        default:
          b[at] = (unsigned char)(seed >> 40);
          break;
        }
      }
      int w = 0, h = 0, c = 0;
      char err[512] = "";
      unsigned char *img = pa_map_img_load(NULL, NULL, b, m, 64, 64, &w, &h, &c,
                                           err, sizeof err);
      if (img) {
        assert_true(w > 0 && h > 0 && w <= 64 && h <= 64 && c >= 1 && c <= 4);
        volatile unsigned sum = 0; /* every pixel readable */
        for (size_t k = 0; k < (size_t)w * h * c; k++)
          sum += img[k];
        (void)sum;
        pa_map_img_free(img);
        loaded++;
      } else {
        assert_true(err[0] != 0);
        refused++;
      }
    }
    free(b);
    free(orig);
  }
  printf("mutations: %d loaded, %d refused\n", loaded, refused);
  assert_true(refused > iters * 2 / 3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_formats_refused),
      cmocka_unit_test(test_corrupt_images),
      cmocka_unit_test(test_huge_dimensions),
      cmocka_unit_test(test_yaml_limits),
      cmocka_unit_test(test_not_regular),
      cmocka_unit_test(test_guard),
      cmocka_unit_test(test_mutations),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
