/* mcap_read.c - a streaming MCAP reader: the messages of a file in record
 * order, with their channel's topic, through chunks (zstd or uncompressed).
 * Stops quietly at a truncated tail (a recording cut by a crash). */
#define _GNU_SOURCE
#include "mcap.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#define MAX_FILE (1ull << 32) /* [bytes] replay reads whole files */

static uint64_t rd(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

typedef struct rctx {
  char *topics[65536]; /* by channel id */
  pa_mcap_msg_cb cb;
  void *arg;
  char *err;
  size_t err_sz;
  long count;
  bool stop;
} rctx;

/* Reads a length-prefixed string at *p (advanced) within end: NULL if short. */
static char *get_str(const uint8_t **p, const uint8_t *end) {
  if (end - *p < 4)
    return NULL;
  uint32_t n = (uint32_t)rd(*p, 4);
  if ((uint64_t)(end - *p - 4) < n)
    return NULL;
  char *s = strndup((const char *)*p + 4, n);
  *p += 4 + n;
  return s;
}

static int records(rctx *x, const uint8_t *p, size_t n, bool in_chunk);

static int record(rctx *x, uint8_t op, const uint8_t *c, size_t len) {
  if (op == 0x04 && len >= 4) { /* Channel */
    uint16_t id = (uint16_t)rd(c, 2);
    const uint8_t *q = c + 4;
    char *topic = get_str(&q, c + len);
    if (!topic) {
      snprintf(x->err, x->err_sz, "a malformed channel record");
      return -1;
    }
    free(x->topics[id]);
    x->topics[id] = topic;
  } else if (op == 0x05 && len >= 22) { /* Message */
    uint16_t id = (uint16_t)rd(c, 2);
    x->count++;
    if (x->cb(x->arg, x->topics[id] ? x->topics[id] : "", rd(c + 6, 8), c + 22,
              len - 22) != 0)
      x->stop = true;
  } else if (op == 0x06 && len >= 40) { /* Chunk */
    uint64_t usize = rd(c + 16, 8);
    const uint8_t *q = c + 28;
    char *comp = get_str(&q, c + len);
    if (!comp || c + len - q < 8) {
      free(comp);
      snprintf(x->err, x->err_sz, "a malformed chunk record");
      return -1;
    }
    uint64_t rlen = rd(q, 8);
    q += 8;
    if ((uint64_t)(c + len - q) < rlen || usize > MAX_FILE) {
      free(comp);
      snprintf(x->err, x->err_sz, "a malformed chunk record");
      return -1;
    }
    int rc = 0;
    if (!comp[0]) {
      rc = records(x, q, rlen, true);
    } else if (!strcmp(comp, "zstd")) {
      uint8_t *u = malloc(usize ? usize : 1);
      size_t got = u ? ZSTD_decompress(u, usize, q, rlen) : 0;
      if (!u || ZSTD_isError(got) || got != usize) {
        snprintf(x->err, x->err_sz, "a chunk does not decompress");
        rc = -1;
      } else {
        rc = records(x, u, usize, true);
      }
      free(u);
    } else {
      snprintf(x->err, x->err_sz, "chunk compression '%s' not supported", comp);
      rc = -1;
    }
    free(comp);
    return rc;
  }
  return 0;
}

static int records(rctx *x, const uint8_t *p, size_t n, bool in_chunk) {
  size_t i = 0;
  while (i < n && !x->stop) {
    if (n - i < 9)
      break;
    uint8_t op = p[i];
    uint64_t len = rd(p + i + 1, 8);
    if (len > n - i - 9) {
      if (in_chunk) {
        snprintf(x->err, x->err_sz, "a record overruns its chunk");
        return -1;
      }
      break; /* the truncated tail of a crashed recording */
    }
    if (op == 0x02) /* Footer: the end */
      break;
    if (record(x, op, p + i + 9, (size_t)len) != 0)
      return -1;
    i += 9 + (size_t)len;
  }
  return 0;
}

long pa_mcap_read(const char *path, pa_mcap_msg_cb cb, void *arg, char *err,
                  size_t err_sz) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, err_sz, "%s: %s", path, strerror(errno));
    return -1;
  }
  uint8_t *buf = NULL;
  long rc = -1;
  rctx *x = calloc(1, sizeof *x);
  if (fseek(f, 0, SEEK_END) != 0 || !x) {
    snprintf(err, err_sz, "%s: cannot read", path);
    goto out;
  }
  long sz = ftell(f);
  if (sz < 8 || (uint64_t)sz > MAX_FILE) {
    snprintf(err, err_sz, "%s: not an MCAP file (size %ld)", path, sz);
    goto out;
  }
  rewind(f);
  buf = malloc((size_t)sz);
  if (!buf || fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
    snprintf(err, err_sz, "%s: cannot read", path);
    goto out;
  }
  static const uint8_t magic[8] = {0x89, 'M', 'C', 'A', 'P', '0', '\r', '\n'};
  if (memcmp(buf, magic, 8) != 0) {
    snprintf(err, err_sz, "%s: not an MCAP file (no magic)", path);
    goto out;
  }
  x->cb = cb;
  x->arg = arg;
  x->err = err;
  x->err_sz = err_sz;
  char why[200] = "";
  x->err = why;
  x->err_sz = sizeof why;
  if (records(x, buf + 8, (size_t)sz - 8, false) != 0) {
    snprintf(err, err_sz, "%s: %s", path, why);
    goto out;
  }
  rc = x->count;
out:
  if (x)
    for (int i = 0; i < 65536; i++)
      free(x->topics[i]);
  free(x);
  free(buf);
  fclose(f);
  return rc;
}
