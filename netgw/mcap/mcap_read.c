/* mcap_read.c - a streaming MCAP reader: the messages of a file in record
 * order, with their channel's topic, through chunks (zstd or uncompressed).
 * Stops quietly at a truncated tail (a recording cut by a crash).
 *
 * It distrusts its input: one loop, no recursion (a chunk inside a chunk is
 * an error: MCAP chunks do not nest); every size checked against the
 * PA_MCAP_READ_* limits and the bytes really left before anything is
 * allocated; chunk CRCs and the data section CRC verified when nonzero. */
#define _GNU_SOURCE
#include "mcap.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zstd.h>

enum {
  OP_FOOTER = 0x02,
  OP_CHANNEL = 0x04,
  OP_MESSAGE = 0x05,
  OP_CHUNK = 0x06,
  OP_DATA_END = 0x0F,
};

/* [bytes] a chunk record's fields before its records (and compression) */
#define CHUNK_HEAD_MAX 4096

static uint64_t rd(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

/* Where the bytes come from: a file, or memory (the fuzz target). */
typedef struct src {
  FILE *f;
  const uint8_t *mem;
  uint64_t size, pos; /* [bytes] */
} src;

static bool src_read(src *s, void *dst, size_t n) {
  if (s->size - s->pos < n)
    return false;
  if (s->f) {
    if (fread(dst, 1, n, s->f) != n)
      return false;
  } else {
    memcpy(dst, s->mem + s->pos, n);
  }
  s->pos += n;
  return true;
}

typedef struct rctx {
  char **topics; /* by channel id, n_topics of them (grown to the ids seen) */
  uint32_t n_topics;
  pa_mcap_msg_cb cb;
  void *arg;
  char *err;
  size_t err_sz;
  long count;
  bool stop;
  uint32_t data_crc; /* of every byte before the Data End record */
  uint64_t unpacked; /* [bytes] chunks' uncompressed sizes so far */
  /* the buffers of a record and of a chunk's records, kept (grown only)
   * from one to the next: no page faults per chunk */
  uint8_t *rec, *unz;
  size_t rec_cap, unz_cap;
} rctx;

/* *buf holding at least n bytes (n <= a PA_MCAP_READ_* limit): false when
 * out of memory. */
static bool room(uint8_t **buf, size_t *cap, size_t n) {
  if (n <= *cap && *buf)
    return true;
  uint8_t *p = realloc(*buf, n ? n : 1);
  if (!p)
    return false;
  *buf = p;
  *cap = n;
  return true;
}

static int fail(rctx *x, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int fail(rctx *x, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(x->err, x->err_sz, fmt, ap);
  va_end(ap);
  return -1;
}

/* Reads a length-prefixed string at *p (advanced) within end: NULL if short
 * (or out of memory). */
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

/* A Channel or Message record (others are skipped); at: its file offset
 * (a chunk's, for the records inside one). */
static int record(rctx *x, uint8_t op, const uint8_t *c, size_t len,
                  uint64_t at) {
  if (op == OP_CHANNEL) {
    uint16_t id = len >= 4 ? (uint16_t)rd(c, 2) : 0;
    const uint8_t *q = c + 4;
    char *topic = len >= 4 ? get_str(&q, c + len) : NULL;
    if (!topic)
      return fail(x, "a malformed channel record at byte %" PRIu64, at);
    if (id >= x->n_topics) {
      char **t = realloc(x->topics, ((size_t)id + 1) * sizeof *t);
      if (!t) {
        free(topic);
        return fail(x, "out of memory for the channel at byte %" PRIu64, at);
      }
      memset(t + x->n_topics, 0, (id + 1 - x->n_topics) * sizeof *t);
      x->topics = t;
      x->n_topics = (uint32_t)id + 1;
    }
    free(x->topics[id]);
    x->topics[id] = topic;
  } else if (op == OP_MESSAGE) {
    if (len < 22)
      return fail(x, "a malformed message record at byte %" PRIu64, at);
    uint16_t id = (uint16_t)rd(c, 2);
    x->count++;
    const char *topic = id < x->n_topics ? x->topics[id] : NULL;
    if (x->cb(x->arg, topic ? topic : "", rd(c + 6, 8), c + 22, len - 22) != 0)
      x->stop = true;
  }
  return 0;
}

/* The records of a chunk's uncompressed body, one level only. */
static int chunk_records(rctx *x, const uint8_t *p, size_t n, uint64_t at) {
  size_t i = 0;
  while (i < n && !x->stop) {
    if (n - i < 9)
      return fail(x, "the chunk at byte %" PRIu64 " ends inside a record", at);
    uint8_t op = p[i];
    uint64_t len = rd(p + i + 1, 8);
    if (len > n - i - 9)
      return fail(x, "a record overruns the chunk at byte %" PRIu64, at);
    if (op == OP_CHUNK)
      return fail(x,
                  "a chunk inside the chunk at byte %" PRIu64
                  " (MCAP chunks do not nest)",
                  at);
    if (record(x, op, p + i + 9, (size_t)len, at) != 0)
      return -1;
    i += 9 + (size_t)len;
  }
  return 0;
}

/* A Chunk record's body c (len bytes, at byte `at`): sizes checked, body
 * decompressed into at most PA_MCAP_READ_CHUNK_MAX bytes, CRC checked, then
 * its records. */
static int chunk(rctx *x, const uint8_t *c, size_t len, uint64_t at) {
  if (len < 40)
    return fail(x, "a malformed chunk record at byte %" PRIu64, at);
  uint64_t usize = rd(c + 16, 8);
  uint32_t ucrc = (uint32_t)rd(c + 24, 4);
  const uint8_t *q = c + 28;
  char *comp = get_str(&q, c + len);
  if (!comp || c + len - q < 8) {
    free(comp);
    return fail(x, "a malformed chunk record at byte %" PRIu64, at);
  }
  uint64_t rlen = rd(q, 8);
  q += 8;
  int rc = -1;
  const uint8_t *body = q;
  if ((uint64_t)(c + len - q) != rlen) {
    fail(x,
         "the chunk at byte %" PRIu64 ": records length %" PRIu64
         " does not match its record",
         at, rlen);
  } else if (usize > PA_MCAP_READ_CHUNK_MAX) {
    fail(x,
         "the chunk at byte %" PRIu64 ": %" PRIu64
         " bytes uncompressed, over the limit of %u",
         at, usize, PA_MCAP_READ_CHUNK_MAX);
  } else if (usize > PA_MCAP_READ_TOTAL_MAX - x->unpacked) {
    fail(x,
         "the chunk at byte %" PRIu64 ": more than %llu bytes of chunks"
         " uncompressed in all, the limit",
         at, (unsigned long long)PA_MCAP_READ_TOTAL_MAX);
  } else if (!comp[0]) {
    if (rlen != usize)
      fail(x,
           "the uncompressed chunk at byte %" PRIu64 " is %" PRIu64
           " bytes, its header says %" PRIu64,
           at, rlen, usize);
    else
      rc = 0;
  } else if (!strcmp(comp, "zstd")) {
    unsigned long long fs = ZSTD_getFrameContentSize(q, rlen);
    size_t got = 0;
    if (fs != usize)
      fail(x,
           "the chunk at byte %" PRIu64
           ": its zstd frame does not declare the chunk's size",
           at);
    else if (!room(&x->unz, &x->unz_cap, (size_t)usize))
      fail(x, "out of memory for the chunk at byte %" PRIu64, at);
    else if (ZSTD_isError(got = ZSTD_decompress(x->unz, usize, q, rlen)) ||
             got != usize)
      fail(x, "the chunk at byte %" PRIu64 " does not decompress", at);
    else
      rc = 0;
    body = x->unz;
  } else {
    fail(x, "the chunk at byte %" PRIu64 ": compression '%.32s' not supported",
         at, comp);
  }
  free(comp);
  if (rc == 0)
    x->unpacked += usize;
  if (rc == 0 && ucrc && pa_mcap_crc32(0, body, usize) != ucrc)
    rc = fail(
        x, "the chunk at byte %" PRIu64 " fails its CRC check (a damaged file)",
        at);
  if (rc == 0)
    rc = chunk_records(x, body, (size_t)usize, at);
  return rc;
}

/* The largest body an op may have at the top level. */
static uint64_t record_max(uint8_t op) {
  return op == OP_CHUNK ? (uint64_t)PA_MCAP_READ_CHUNK_MAX + CHUNK_HEAD_MAX
                        : PA_MCAP_READ_RECORD_MAX;
}

/* The records after the magic, one at a time, none nested. */
static int records(rctx *x, src *s) {
  int rc = 0;
  while (!x->stop) {
    uint64_t at = s->pos;
    uint8_t h[9];
    if (!src_read(s, h, sizeof h))
      break; /* the end, or the truncated tail of a crashed recording */
    uint8_t op = h[0];
    uint64_t len = rd(h + 1, 8);
    if (op == OP_FOOTER)
      break;
    if (len > record_max(op)) {
      rc = fail(x,
                "the record (op 0x%02x) at byte %" PRIu64 ": %" PRIu64
                " bytes, over the limit of %" PRIu64,
                op, at, len, record_max(op));
      break;
    }
    if (len > s->size - s->pos)
      break; /* a truncated tail: nothing allocated for what is not there */
    if (!room(&x->rec, &x->rec_cap, (size_t)len)) {
      rc = fail(x, "out of memory for the record at byte %" PRIu64, at);
      break;
    }
    uint8_t *body = x->rec;
    if (!src_read(s, body, (size_t)len)) {
      rc = fail(x, "a read error at byte %" PRIu64, at);
      break;
    }
    if (op == OP_DATA_END) {
      uint32_t want = len >= 4 ? (uint32_t)rd(body, 4) : 0;
      if (want && want != x->data_crc)
        rc = fail(x, "the data section fails its CRC check (a damaged file)");
      break; /* the summary after it holds no messages */
    }
    x->data_crc = pa_mcap_crc32(x->data_crc, h, sizeof h);
    x->data_crc = pa_mcap_crc32(x->data_crc, body, (size_t)len);
    rc = op == OP_CHUNK ? chunk(x, body, (size_t)len, at)
                        : record(x, op, body, (size_t)len, at);
    if (rc != 0)
      break;
  }
  return rc;
}

static const uint8_t magic[8] = {0x89, 'M', 'C', 'A', 'P', '0', '\r', '\n'};

/* Reads the whole of s: the message count, or -1 with why set. */
static long read_src(src *s, pa_mcap_msg_cb cb, void *arg, char *why,
                     size_t why_sz) {
  if (s->size < 8 || s->size > PA_MCAP_READ_FILE_MAX) {
    snprintf(why, why_sz,
             "not an MCAP file or too large (%" PRIu64
             " bytes; the limit is %llu)",
             s->size, (unsigned long long)PA_MCAP_READ_FILE_MAX);
    return -1;
  }
  uint8_t m[8];
  if (!src_read(s, m, 8) || memcmp(m, magic, 8) != 0) {
    snprintf(why, why_sz, "not an MCAP file (no magic)");
    return -1;
  }
  rctx *x = calloc(1, sizeof *x);
  if (!x) {
    snprintf(why, why_sz, "out of memory");
    return -1;
  }
  x->cb = cb;
  x->arg = arg;
  x->err = why;
  x->err_sz = why_sz;
  x->data_crc = pa_mcap_crc32(0, m, 8);
  long rc = records(x, s) == 0 ? x->count : -1;
  for (uint32_t i = 0; i < x->n_topics; i++)
    free(x->topics[i]);
  free(x->topics);
  free(x->rec);
  free(x->unz);
  free(x);
  return rc;
}

long pa_mcap_read(const char *path, pa_mcap_msg_cb cb, void *arg, char *err,
                  size_t err_sz) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, err_sz, "%s: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, err_sz, "%s: not a regular file", path);
    fclose(f);
    return -1;
  }
  src s = {.f = f, .size = (uint64_t)st.st_size};
  char why[200] = "";
  long rc = read_src(&s, cb, arg, why, sizeof why);
  if (rc < 0)
    snprintf(err, err_sz, "%s: %s", path, why);
  fclose(f);
  return rc;
}

long pa_mcap_read_mem(const uint8_t *p, size_t n, pa_mcap_msg_cb cb, void *arg,
                      char *err, size_t err_sz) {
  src s = {.mem = p, .size = n};
  return read_src(&s, cb, arg, err, err_sz);
}
