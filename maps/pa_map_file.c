/*
 * pa_map_file.c - reading map files safely: only regular files, bounded
 * sizes, confinement to a data directory (pa_map_guard), and a check of every
 * image's header and structure before a decoder sees it (PNG chunks and
 * CRCs, BMP pixel data size, JPEG markers; PGM is decoded here).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pa_map_int.h"

/* ---- paths and files ----------------------------------------------------- */

static bool has_dotdot(const char *p) {
  for (const char *s = p; *s;) {
    const char *e = strchr(s, '/');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n == 2 && s[0] == '.' && s[1] == '.')
      return true;
    if (!e)
      break;
    s = e + 1;
  }
  return false;
}

/* True when path is dir itself or below it (both canonical). */
static bool inside(const char *dir, const char *path) {
  size_t n = strlen(dir);
  if (n == 1 && dir[0] == '/')
    return path[0] == '/';
  return !strncmp(dir, path, n) && (path[n] == '/' || path[n] == '\0');
}

int pa_map_guard_path(const pa_map_guard *g, const char *path, char *out,
                      size_t out_sz, char *err, size_t err_sz) {
  if (!g || !g->data_dir) {
    if (snprintf(out, out_sz, "%s", path) >= (int)out_sz) {
      snprintf(err, err_sz, "%s: path too long", path);
      return -1;
    }
    return 0;
  }
  /* Refused on the name alone, before anything is looked up: an answer must
   * not tell whether a path outside the data directory exists. */
  if (has_dotdot(path)) {
    snprintf(err, err_sz, "forbidden path ('..'): %s", path);
    return -1;
  }
  char joined[PA_MAP_PATH_MAX];
  if (path[0] == '/') {
    if (!inside(g->data_dir, path)) {
      snprintf(err, err_sz, "forbidden path (outside the data directory): %s",
               path);
      return -1;
    }
    snprintf(joined, sizeof joined, "%s", path);
  } else if (pa_map_join(g->data_dir, path, joined, sizeof joined)) {
    snprintf(err, err_sz, "%s: path too long", path);
    return -1;
  }
  char real[PATH_MAX];
  if (!realpath(joined, real)) {
    snprintf(err, err_sz, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  /* A symlink inside may point anywhere: the target must be inside too. */
  if (!inside(g->data_dir, real)) {
    snprintf(err, err_sz, "forbidden path (outside the data directory): %s",
             path);
    return -1;
  }
  if (snprintf(out, out_sz, "%s", real) >= (int)out_sz) {
    snprintf(err, err_sz, "%s: path too long", path);
    return -1;
  }
  return 0;
}

int pa_map_read_file(const char *path, const pa_map_guard *g, size_t max,
                     unsigned char **buf, size_t *n, char *err, size_t err_sz) {
  char real[PA_MAP_PATH_MAX];
  *buf = NULL;
  *n = 0;
  if (pa_map_guard_path(g, path, real, sizeof real, err, err_sz))
    return -1;
  /* O_NONBLOCK: opening a FIFO or a tty must not wait for a peer. */
  int fd = open(real, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    snprintf(err, err_sz, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, err_sz, "%s: not a regular file", path);
    close(fd);
    return -1;
  }
  if ((uint64_t)st.st_size > max) {
    snprintf(err, err_sz, "%s: file is %lld bytes, over the limit of %zu", path,
             (long long)st.st_size, max);
    close(fd);
    return -1;
  }
  size_t cap = (size_t)st.st_size;
  unsigned char *b = malloc(cap + 1);
  if (!b) {
    snprintf(err, err_sz, "%s: out of memory", path);
    close(fd);
    return -1;
  }
  size_t got = 0;
  /* One byte more than fstat said: a file growing meanwhile is refused. */
  while (got <= cap) {
    ssize_t r = read(fd, b + got, cap + 1 - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      snprintf(err, err_sz, "%s: read error: %s", path, strerror(errno));
      free(b);
      close(fd);
      return -1;
    }
    if (r == 0)
      break;
    got += (size_t)r;
  }
  close(fd);
  if (got > cap) {
    snprintf(err, err_sz, "%s: file changed while read", path);
    free(b);
    return -1;
  }
  *buf = b;
  *n = got;
  return 0;
}

/* ---- image checks ----------------------------------------------------------
 */

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         p[3];
}
static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 |
         p[0];
}
static uint16_t le16(const unsigned char *p) {
  return (uint16_t)(p[1] << 8 | p[0]);
}

static uint32_t crc32_png(const unsigned char *p, size_t n) {
  static uint32_t table[256];
  static bool made;
  if (!__atomic_load_n(&made, __ATOMIC_ACQUIRE)) {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++)
        c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      table[i] = c; /* same values if two threads race: harmless */
    }
    __atomic_store_n(&made, true, __ATOMIC_RELEASE);
  }
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++)
    c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

static int dims_ok(const char *name, const char *fmt, uint64_t w, uint64_t h,
                   uint32_t comp, uint32_t max_w, uint32_t max_h, char *err,
                   size_t err_sz) {
  if (w == 0 || h == 0) {
    snprintf(err, err_sz, "%s: %s image has no pixels (%llu x %llu)", name, fmt,
             (unsigned long long)w, (unsigned long long)h);
    return -1;
  }
  if (w > max_w || h > max_h) {
    snprintf(err, err_sz,
             "%s: image is %llu x %llu pixels, over the limit of %u x %u", name,
             (unsigned long long)w, (unsigned long long)h, (unsigned)max_w,
             (unsigned)max_h);
    return -1;
  }
  if (w * h * comp > PA_MAP_MAX_DECODED) {
    snprintf(err, err_sz,
             "%s: %llu x %llu pixels would decode to more than %u MiB", name,
             (unsigned long long)w, (unsigned long long)h,
             (unsigned)(PA_MAP_MAX_DECODED >> 20));
    return -1;
  }
  return 0;
}

static int check_png(const char *name, const unsigned char *b, size_t n,
                     uint32_t max_w, uint32_t max_h, char *err, size_t err_sz) {
  size_t pos = 8;
  bool ihdr = false, idat = false;
  for (int idx = 0;; idx++) {
    if (n - pos < 12) {
      snprintf(err, err_sz, "%s: PNG truncated (no IEND chunk)", name);
      return -1;
    }
    uint32_t len = be32(b + pos);
    const unsigned char *type = b + pos + 4;
    if (len > 0x7fffffffu || len > n - pos - 12) {
      snprintf(err, err_sz, "%s: PNG chunk %d runs past the end of the file",
               name, idx);
      return -1;
    }
    for (int k = 0; k < 4; k++)
      if (!((type[k] >= 'A' && type[k] <= 'Z') ||
            (type[k] >= 'a' && type[k] <= 'z'))) {
        snprintf(err, err_sz, "%s: PNG chunk %d has an invalid type", name,
                 idx);
        return -1;
      }
    if (crc32_png(type, (size_t)len + 4) != be32(type + 4 + len)) {
      snprintf(err, err_sz, "%s: PNG chunk %d (%.4s) has a bad CRC", name, idx,
               (const char *)type);
      return -1;
    }
    if (idx == 0) {
      if (memcmp(type, "IHDR", 4) || len != 13) {
        snprintf(err, err_sz, "%s: PNG does not start with an IHDR chunk",
                 name);
        return -1;
      }
      const unsigned char *d = type + 4;
      uint32_t w = be32(d), h = be32(d + 4);
      unsigned depth = d[8], ct = d[9];
      bool ok =
          (ct == 0 && (depth == 1 || depth == 2 || depth == 4 || depth == 8 ||
                       depth == 16)) ||
          (ct == 3 && (depth == 1 || depth == 2 || depth == 4 || depth == 8)) ||
          ((ct == 2 || ct == 4 || ct == 6) && (depth == 8 || depth == 16));
      if (!ok || d[10] != 0 || d[11] != 0 || d[12] > 1) {
        snprintf(err, err_sz,
                 "%s: PNG header is invalid (colour type %u, depth %u)", name,
                 ct, depth);
        return -1;
      }
      /* w, h < 2^31 per the PNG spec; the limits are far below. */
      if (dims_ok(name, "PNG", w, h, 4, max_w, max_h, err, err_sz))
        return -1;
      ihdr = true;
    } else if (!memcmp(type, "IDAT", 4)) {
      idat = true;
    } else if (!memcmp(type, "IEND", 4)) {
      break;
    }
    pos += 12 + (size_t)len;
  }
  if (!ihdr || !idat) {
    snprintf(err, err_sz, "%s: PNG has no image data", name);
    return -1;
  }
  return 0;
}

static int check_bmp(const char *name, const unsigned char *b, size_t n,
                     uint32_t max_w, uint32_t max_h, char *err, size_t err_sz) {
  if (n < 26) {
    snprintf(err, err_sz, "%s: BMP truncated (header)", name);
    return -1;
  }
  uint32_t off = le32(b + 10), hsz = le32(b + 14);
  int64_t w, h;
  unsigned bpp, comp = 0, planes;
  if (hsz == 12) {
    w = le16(b + 18);
    h = le16(b + 20);
    planes = le16(b + 22);
    bpp = le16(b + 24);
  } else if (hsz == 40 || hsz == 52 || hsz == 56 || hsz == 108 || hsz == 124) {
    if (n < 14 + (size_t)hsz) {
      snprintf(err, err_sz, "%s: BMP truncated (header)", name);
      return -1;
    }
    w = (int32_t)le32(b + 18);
    h = (int32_t)le32(b + 22);
    planes = le16(b + 26);
    bpp = le16(b + 28);
    comp = le32(b + 30);
  } else {
    snprintf(err, err_sz, "%s: BMP header of %u bytes is not supported", name,
             hsz);
    return -1;
  }
  if (h < 0)
    h = -h; /* top-down */
  if (planes != 1 || !(bpp == 1 || bpp == 4 || bpp == 8 || bpp == 16 ||
                       bpp == 24 || bpp == 32)) {
    snprintf(err, err_sz,
             "%s: BMP with %u planes and %u bits per pixel is "
             "not supported",
             name, planes, bpp);
    return -1;
  }
  if (comp != 0 && comp != 3) {
    snprintf(err, err_sz, "%s: compressed BMP (method %u) is not supported",
             name, comp);
    return -1;
  }
  if (w <= 0 || dims_ok(name, "BMP", (uint64_t)w, (uint64_t)h, 4, max_w, max_h,
                        err, err_sz)) {
    if (w <= 0)
      snprintf(err, err_sz, "%s: BMP width %lld is invalid", name,
               (long long)w);
    return -1;
  }
  uint64_t stride = ((uint64_t)w * bpp + 31) / 32 * 4;
  if (off < 14 + hsz || (uint64_t)off + stride * (uint64_t)h > n) {
    snprintf(err, err_sz, "%s: BMP truncated (pixel data: %zu of %llu bytes)",
             name, n > off ? n - off : 0,
             (unsigned long long)(stride * (uint64_t)h));
    return -1;
  }
  return 0;
}

/* Walks every JPEG segment (through the scans' entropy-coded data) to EOI:
 * lengths inside the file, one frame header of 8-bit samples within the
 * limits, Huffman tables of at most 256 codes (stb 2.27 writes past its
 * tables on more), and every scan using only tables defined before it (stb
 * decodes with an undefined table's uninitialised memory). */
static int check_jpeg(const char *name, const unsigned char *b, size_t n,
                      uint32_t max_w, uint32_t max_h, char *err,
                      size_t err_sz) {
  size_t pos = 2;
  bool frame = false;
  unsigned tables = 0; /* bit class * 4 + id: a DHT defined it */
  for (;;) {
    if (pos >= n || b[pos] != 0xff) {
      snprintf(err, err_sz,
               "%s: JPEG truncated or corrupt (no marker at "
               "byte %zu)",
               name, pos);
      return -1;
    }
    while (pos < n && b[pos] == 0xff)
      pos++;
    if (pos >= n)
      break;
    unsigned m = b[pos++];
    if (m == 0xd9)
      return 0; /* EOI */
    if ((m >= 0xd0 && m <= 0xd7) || m == 0x01)
      continue;
    if (n - pos < 2)
      break;
    size_t len = (size_t)b[pos] << 8 | b[pos + 1];
    if (len < 2 || len > n - pos) {
      snprintf(err, err_sz, "%s: JPEG segment 0x%02x runs past the end", name,
               m);
      return -1;
    }
    const unsigned char *d = b + pos + 2;
    size_t dl = len - 2;
    if (m == 0xc4) { /* DHT */
      size_t q = 0;
      while (q < dl) {
        if (dl - q < 17 || (d[q] >> 4) > 1 || (d[q] & 15) > 3) {
          snprintf(err, err_sz, "%s: JPEG Huffman table is corrupt", name);
          return -1;
        }
        size_t codes = 0;
        for (int k = 1; k <= 16; k++)
          codes += d[q + (size_t)k];
        if (codes > 256 || codes > dl - q - 17) {
          snprintf(err, err_sz,
                   "%s: JPEG Huffman table of %zu codes is "
                   "corrupt",
                   name, codes);
          return -1;
        }
        tables |= 1u << ((d[q] >> 4) * 4 + (d[q] & 15));
        q += 17 + codes;
      }
    } else if (m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 &&
               m != 0xcc) { /* SOF */
      if (frame || dl < 6 || d[0] != 8) {
        snprintf(err, err_sz,
                 "%s: JPEG frame header is not supported (one "
                 "frame of 8-bit samples)",
                 name);
        return -1;
      }
      /* Baseline and extended sequential only: stb's progressive decoder
       * shifts past its bit buffer on crafted scans (UBSan, stb_image.h
       * 2065), and a map has no use for progressive display. */
      if (m != 0xc0 && m != 0xc1) {
        snprintf(err, err_sz,
                 "%s: progressive or lossless JPEG is not supported (save "
                 "it as baseline JPEG, or better PNG)",
                 name);
        return -1;
      }
      uint32_t h = (uint32_t)d[1] << 8 | d[2], w = (uint32_t)d[3] << 8 | d[4];
      unsigned nc = d[5];
      if ((nc != 1 && nc != 3 && nc != 4) || dl != 6 + 3 * (size_t)nc) {
        snprintf(err, err_sz, "%s: JPEG frame header is corrupt", name);
        return -1;
      }
      if (dims_ok(name, "JPEG", w, h, 4, max_w, max_h, err, err_sz))
        return -1;
      frame = true;
    } else if (m == 0xda) { /* SOS: then entropy-coded data to a marker */
      if (!frame) {
        snprintf(err, err_sz, "%s: JPEG scan before its frame header", name);
        return -1;
      }
      size_t ns = dl ? d[0] : 0;
      if (ns < 1 || ns > 4 || dl != 4 + 2 * ns) {
        snprintf(err, err_sz, "%s: JPEG scan header is corrupt", name);
        return -1;
      }
      unsigned ss = d[1 + 2 * ns], se = d[2 + 2 * ns];
      for (size_t j = 0; j < ns; j++) {
        unsigned td = d[2 + 2 * j] >> 4, ta = d[2 + 2 * j] & 15;
        /* a DC scan (Ss 0) decodes with its DC table, an AC one with its
         * AC table; a baseline scan is both */
        if ((ss == 0 && (td > 3 || !(tables & (1u << td)))) ||
            (se > 0 && (ta > 3 || !(tables & (1u << (4 + ta)))))) {
          snprintf(err, err_sz,
                   "%s: JPEG scan uses a Huffman table not defined before "
                   "it",
                   name);
          return -1;
        }
      }
      pos += len;
      while (pos + 1 < n && !(b[pos] == 0xff && b[pos + 1] != 0 &&
                              !(b[pos + 1] >= 0xd0 && b[pos + 1] <= 0xd7)))
        pos++;
      continue;
    }
    pos += len;
  }
  snprintf(err, err_sz, "%s: JPEG truncated (no end-of-image marker)", name);
  return -1;
}

/* PGM (P5) decoded here: a strict header (no digit overflow, maxval 1..65535)
 * and all of the pixel data, scaled to 0..255. */
static unsigned char *load_pgm(const char *name, const unsigned char *b,
                               size_t n, uint32_t max_w, uint32_t max_h, int *w,
                               int *h, char *err, size_t err_sz) {
  size_t p = 2;
  uint32_t v[3];
  static const char *const what[] = {"width", "height", "maxval"};
  for (int k = 0; k < 3; k++) {
    for (;;) { /* whitespace and comments */
      while (p < n && (b[p] == ' ' || b[p] == '\t' || b[p] == '\n' ||
                       b[p] == '\r' || b[p] == '\v' || b[p] == '\f'))
        p++;
      if (p < n && b[p] == '#') {
        while (p < n && b[p] != '\n')
          p++;
        continue;
      }
      break;
    }
    uint64_t x = 0;
    size_t digits = 0;
    while (p < n && b[p] >= '0' && b[p] <= '9' && digits < 10) {
      x = x * 10 + (uint64_t)(b[p++] - '0');
      digits++;
    }
    if (!digits || x > 0xffffffffu || (p < n && b[p] >= '0' && b[p] <= '9')) {
      snprintf(err, err_sz, "%s: PGM header: bad %s", name, what[k]);
      return NULL;
    }
    v[k] = (uint32_t)x;
  }
  if (p >= n ||
      !(b[p] == ' ' || b[p] == '\t' || b[p] == '\n' || b[p] == '\r')) {
    snprintf(err, err_sz, "%s: PGM header: no whitespace after maxval", name);
    return NULL;
  }
  p++;
  if (v[2] < 1 || v[2] > 65535) {
    snprintf(err, err_sz, "%s: PGM maxval %u is out of range [1, 65535]", name,
             v[2]);
    return NULL;
  }
  if (dims_ok(name, "PGM", v[0], v[1], 1, max_w, max_h, err, err_sz))
    return NULL;
  size_t bps = v[2] > 255 ? 2 : 1, cnt = (size_t)v[0] * v[1];
  if (n - p < cnt * bps) {
    snprintf(err, err_sz, "%s: PGM truncated (pixel data: %zu of %zu bytes)",
             name, n - p, cnt * bps);
    return NULL;
  }
  unsigned char *px = malloc(cnt);
  if (!px) {
    snprintf(err, err_sz, "%s: out of memory", name);
    return NULL;
  }
  const unsigned char *d = b + p;
  for (size_t i = 0; i < cnt; i++) {
    uint32_t s = bps == 2 ? (uint32_t)d[2 * i] << 8 | d[2 * i + 1] : d[i];
    if (s > v[2]) {
      snprintf(err, err_sz, "%s: PGM pixel %zu is %u, above maxval %u", name, i,
               s, v[2]);
      free(px);
      return NULL;
    }
    px[i] = (unsigned char)((s * 255u + v[2] / 2) / v[2]);
  }
  *w = (int)v[0];
  *h = (int)v[1];
  return px;
}

pa_map_img_fmt pa_map_img_check(const char *name, const unsigned char *b,
                                size_t n, uint32_t max_w, uint32_t max_h,
                                char *err, size_t err_sz) {
  static const unsigned char png_sig[8] = {0x89, 'P',  'N',  'G',
                                           '\r', '\n', 0x1a, '\n'};
  if (n >= 8 && !memcmp(b, png_sig, 8))
    return check_png(name, b, n, max_w, max_h, err, err_sz) ? PA_IMG_BAD
                                                            : PA_IMG_PNG;
  if (n >= 2 && b[0] == 'B' && b[1] == 'M')
    return check_bmp(name, b, n, max_w, max_h, err, err_sz) ? PA_IMG_BAD
                                                            : PA_IMG_BMP;
  if (n >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff)
    return check_jpeg(name, b, n, max_w, max_h, err, err_sz) ? PA_IMG_BAD
                                                             : PA_IMG_JPEG;
  if (n >= 2 && b[0] == 'P' && b[1] == '5')
    return PA_IMG_PGM;
  const char *what = "an unknown format";
  if (n >= 4 && !memcmp(b, "GIF8", 4))
    what = "GIF";
  else if (n >= 4 && !memcmp(b, "8BPS", 4))
    what = "PSD";
  else if (n >= 4 && b[0] == 0x53 && b[1] == 0x80 && b[2] == 0xf6 &&
           b[3] == 0x34)
    what = "Softimage PIC";
  else if (n >= 2 && b[0] == 'P' &&
           (b[1] == '1' || b[1] == '2' || b[1] == '3' || b[1] == '4' ||
            b[1] == '6'))
    what = b[1] == '6' ? "PPM (P6)" : "ASCII or bitmap PNM";
  else if (n >= 2 && b[0] == '#' && b[1] == '?')
    what = "Radiance HDR";
  snprintf(err, err_sz,
           "%s: %s image is not supported (use PNG, PGM (P5), BMP or JPEG)",
           name, what);
  return PA_IMG_BAD;
}

unsigned char *pa_map_pgm_load(const char *name, const unsigned char *b,
                               size_t n, uint32_t max_w, uint32_t max_h, int *w,
                               int *h, char *err, size_t err_sz) {
  return load_pgm(name, b, n, max_w, max_h, w, h, err, err_sz);
}
