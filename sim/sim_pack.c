/* sim_pack.c - export_dataset's file formats, written with zlib on the
 * export thread: camera images as PNG (RGB, Sub filter, deflate level 1:
 * the writer keeps up with the camera ring) and the dataset packed as one
 * .tar.gz (POSIX ustar through gzwrite), each written whole under a
 * temporary name and renamed into place. */
#define _GNU_SOURCE
#include "sim_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>

/* ---- PNG
 * -------------------------------------------------------------------*/

static void put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

static bool chunk(FILE *f, const char *type, const uint8_t *data, size_t n) {
  uint8_t h[8];
  put32(h, (uint32_t)n);
  memcpy(h + 4, type, 4);
  uLong crc = crc32(0L, (const Bytef *)type, 4);
  if (n)
    crc = crc32(crc, data, (uInt)n);
  uint8_t c[4];
  put32(c, (uint32_t)crc);
  return fwrite(h, 1, 8, f) == 8 && (!n || fwrite(data, 1, n, f) == n) &&
         fwrite(c, 1, 4, f) == 4;
}

int pa_sim_int_png_write(const char *path, const uint8_t *rgb, uint32_t w,
                         uint32_t h, char *err, size_t err_sz) {
  size_t stride = (size_t)w * 3, raw_n = (size_t)h * (stride + 1);
  uint8_t *raw = malloc(raw_n);
  uLongf z_n = compressBound((uLong)raw_n);
  uint8_t *z = malloc(z_n);
  FILE *f = NULL;
  int rc = -1;
  pa_safe_file sf = {.fd = -1, .dirfd = -1};
  if (!raw || !z) {
    snprintf(err, err_sz, "%s: out of memory", path);
    goto out;
  }
  for (uint32_t y = 0; y < h; y++) { /* filter 1 (Sub): flat areas -> 0 */
    const uint8_t *s = rgb + y * stride;
    uint8_t *d = raw + y * (stride + 1);
    d[0] = 1;
    memcpy(d + 1, s, 3 < stride ? 3 : stride);
    for (size_t i = 3; i < stride; i++)
      d[1 + i] = (uint8_t)(s[i] - s[i - 3]);
  }
  if (compress2(z, &z_n, raw, (uLong)raw_n, 1) != Z_OK) {
    snprintf(err, err_sz, "%s: deflate failed", path);
    goto out;
  }
  /* a temp file beside it (pa_safefile), renamed whole; errors name it
   * without the data directory */
  char dir[PATH_MAX + 16];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  const char *shown = slash ? path + (slash - dir) + 1 : path;
  if (slash)
    *slash = 0;
  int rootfd = pa_safe_root_open(slash ? dir : ".", err, err_sz);
  int src = rootfd < 0 ? PA_SAFE_IO
                       : pa_safe_begin(&sf, rootfd, NULL, shown,
                                       PA_SAFE_OVERWRITE, err, err_sz);
  if (rootfd >= 0)
    close(rootfd);
  int fd2 = src == PA_SAFE_OK ? dup(sf.fd) : -1;
  f = fd2 >= 0 ? fdopen(fd2, "wb") : NULL;
  if (!f) {
    if (src == PA_SAFE_OK)
      snprintf(err, err_sz, "cannot write %s: %s", shown, strerror(errno));
    if (fd2 >= 0)
      close(fd2);
    pa_safe_abort(&sf);
    goto out;
  }
  static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  uint8_t ihdr[13];
  put32(ihdr, w);
  put32(ihdr + 4, h);
  ihdr[8] = 8;  /* bits per channel */
  ihdr[9] = 2;  /* RGB */
  ihdr[10] = 0; /* deflate */
  ihdr[11] = 0; /* adaptive filters */
  ihdr[12] = 0; /* no interlace */
  bool ok = fwrite(sig, 1, 8, f) == 8 && chunk(f, "IHDR", ihdr, 13) &&
            chunk(f, "IDAT", z, z_n) && chunk(f, "IEND", NULL, 0);
  ok = fflush(f) == 0 && !ferror(f) && ok;
  int e = ok ? 0 : errno;
  if (fclose(f) != 0 && ok)
    ok = false, e = errno;
  f = NULL;
  if (!ok) {
    snprintf(err, err_sz, "cannot write %s: %s", shown,
             e ? strerror(e) : "a write error");
    pa_safe_abort(&sf);
    goto out;
  }
  if (pa_safe_commit(&sf, err, err_sz) != PA_SAFE_OK)
    goto out;
  rc = 0;
out:
  free(raw);
  free(z);
  return rc;
}

/* ---- ustar in gzip
 * ---------------------------------------------------------*/

/* An octal field of n bytes: n - 1 digits (v fits, see header) and a NUL. */
static void octal(char *p, size_t n, uint64_t v) {
  p[n - 1] = 0;
  for (size_t i = n - 1; i-- > 0; v >>= 3)
    p[i] = (char)('0' + (v & 7));
}

/* One ustar header block for name (<= 100 bytes, else split at a '/' into
 * prefix + name): 0, or -1 when it cannot be held. */
static int header(uint8_t b[512], const char *name, bool dir, uint64_t size,
                  time_t mtime) {
  memset(b, 0, 512);
  if (size >= (1ull << 33)) /* 11 octal digits */
    return -1;
  size_t n = strlen(name);
  const char *base = name;
  if (n > 100) { /* prefix (<= 155) '/' name (<= 100) */
    const char *cut = NULL;
    for (const char *p = name; *p; p++)
      if (*p == '/' && (size_t)(p - name) <= 155 && strlen(p + 1) <= 100)
        cut = p;
    if (!cut || !cut[1])
      return -1;
    memcpy(b + 345, name, (size_t)(cut - name));
    base = cut + 1;
  }
  memcpy(b, base, strlen(base));
  octal((char *)b + 100, 8, dir ? 0755 : 0644);
  octal((char *)b + 108, 8, 0);
  octal((char *)b + 116, 8, 0);
  octal((char *)b + 124, 12, size);
  octal((char *)b + 136, 12, (uint64_t)(mtime > 0 ? mtime : 0));
  b[156] = dir ? '5' : '0';
  memcpy(b + 257, "ustar", 6); /* magic with its NUL, then version "00" */
  memcpy(b + 263, "00", 2);
  memset(b + 148, ' ', 8); /* the checksum counts its own field as spaces */
  unsigned sum = 0;
  for (int i = 0; i < 512; i++)
    sum += b[i];
  snprintf((char *)b + 148, 8, "%06o", sum); /* 6 digits, NUL, space */
  b[155] = ' ';
  return 0;
}

int pa_sim_int_targz(const char *archive, const char *root, const char *top,
                     const char *const *files, size_t n, char *err,
                     size_t err_sz) {
  char path[PATH_MAX * 3], name[PATH_MAX * 3];
  /* an O_EXCL|O_NOFOLLOW temp file beside it (a crash's leftover never
   * blocks a retry, a planted symlink is never followed), renamed whole */
  char dir[PATH_MAX + 16];
  snprintf(dir, sizeof dir, "%s", archive);
  char *cut = strrchr(dir, '/');
  if (!cut) {
    snprintf(err, err_sz, "%s: not an absolute path", archive);
    return -1;
  }
  *cut = 0;
  const char *shown = cut + 1;
  pa_safe_file sf = {.fd = -1, .dirfd = -1};
  int rootfd = pa_safe_root_open(dir[0] ? dir : "/", err, err_sz);
  int src = rootfd < 0 ? PA_SAFE_IO
                       : pa_safe_begin(&sf, rootfd, NULL, shown,
                                       PA_SAFE_OVERWRITE, err, err_sz);
  if (rootfd >= 0)
    close(rootfd);
  int zfd = src == PA_SAFE_OK ? dup(sf.fd) : -1;
  gzFile z = zfd >= 0 ? gzdopen(zfd, "wb6") : NULL;
  if (!z) {
    if (src == PA_SAFE_OK)
      snprintf(err, err_sz, "cannot write %s: %s", shown, strerror(errno));
    if (zfd >= 0)
      close(zfd);
    pa_safe_abort(&sf);
    return -1;
  }
  uint8_t b[512];
  enum { BUF = 1 << 16 };
  uint8_t *buf = malloc(BUF);
  if (!buf) {
    gzclose(z);
    pa_safe_abort(&sf);
    snprintf(err, err_sz, "%s: out of memory", shown);
    return -1;
  }
  time_t now = time(NULL);
  int rc = 0;
  /* the top directory, then each file (a directory entry before the first
   * file under it) */
  char last_dir[PATH_MAX + 8] = "";
  snprintf(name, sizeof name, "%s/", top);
  if (header(b, name, true, 0, now) != 0 || gzwrite(z, b, 512) != 512)
    rc = -1;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    const char *slash = strrchr(files[i], '/');
    if (slash) {
      char d[PATH_MAX + 8];
      snprintf(d, sizeof d, "%.*s", (int)(slash - files[i]), files[i]);
      if (strcmp(d, last_dir)) {
        snprintf(last_dir, sizeof last_dir, "%s", d);
        snprintf(name, sizeof name, "%s/%s/", top, d);
        if (header(b, name, true, 0, now) != 0 || gzwrite(z, b, 512) != 512) {
          rc = -1;
          break;
        }
      }
    }
    snprintf(path, sizeof path, "%s/%s", root, files[i]);
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
      snprintf(err, err_sz, "cannot read %s: %s", files[i], strerror(errno));
      if (f)
        fclose(f);
      gzclose(z);
      pa_safe_abort(&sf);
      free(buf);
      return -1;
    }
    snprintf(name, sizeof name, "%s/%s", top, files[i]);
    if (header(b, name, false, (uint64_t)st.st_size, st.st_mtime) != 0 ||
        gzwrite(z, b, 512) != 512) {
      fclose(f);
      rc = -1;
      break;
    }
    uint64_t left = (uint64_t)st.st_size;
    while (left > 0 && rc == 0) {
      size_t k = fread(buf, 1, left < BUF ? (size_t)left : BUF, f);
      if (k == 0 || gzwrite(z, buf, (unsigned)k) != (int)k)
        rc = -1;
      left -= k;
    }
    size_t pad = (size_t)(512 - st.st_size % 512) % 512;
    memset(b, 0, sizeof b);
    if (rc == 0 && pad && gzwrite(z, b, (unsigned)pad) != (int)pad)
      rc = -1;
    fclose(f);
  }
  memset(b, 0, sizeof b); /* the end: two zero blocks */
  if (rc == 0 && (gzwrite(z, b, 512) != 512 || gzwrite(z, b, 512) != 512))
    rc = -1;
  free(buf);
  int ze = 0;
  if (rc != 0)
    gzerror(z, &ze);
  int e = ze == Z_ERRNO && errno ? errno : 0;
  if (gzclose(z) != Z_OK && rc == 0) {
    rc = -1;
    e = errno;
  }
  if (rc != 0) {
    snprintf(err, err_sz, "cannot write %s: %s", shown,
             e ? strerror(e) : "a write failed");
    pa_safe_abort(&sf);
    return -1;
  }
  return pa_safe_commit(&sf, err, err_sz) == PA_SAFE_OK ? 0 : -1;
}
