/* mcap_craft.h - hostile MCAP files for the reader's tests (test_mcap.c,
 * test_mcap_replay.c): chunks nested deep, chunks claiming huge sizes,
 * damaged bytes. Header-only; the bytes are built by hand, as an attacker
 * would, not through the project's writer. */
#ifndef PA_MCAP_CRAFT_H
#define PA_MCAP_CRAFT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "mcap.h"

typedef struct mc_buf {
  uint8_t *p;
  size_t n, cap;
} mc_buf;

static inline void mc_put(mc_buf *b, const void *d, size_t n) {
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n)
      cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p)
      abort();
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, d, n);
  b->n += n;
}

static inline void mc_le(mc_buf *b, uint64_t v, int bytes) {
  uint8_t t[8];
  for (int i = 0; i < bytes; i++)
    t[i] = (uint8_t)(v >> (8 * i));
  mc_put(b, t, (size_t)bytes);
}

static inline void mc_str(mc_buf *b, const char *s) {
  mc_le(b, strlen(s), 4);
  mc_put(b, s, strlen(s));
}

static inline void mc_rec_head(mc_buf *b, uint8_t op, uint64_t len) {
  mc_le(b, op, 1);
  mc_le(b, len, 8);
}

static inline void mc_magic(mc_buf *b) {
  static const uint8_t m[8] = {0x89, 'M', 'C', 'A', 'P', '0', '\r', '\n'};
  mc_put(b, m, 8);
}

/* A Channel record (id, topic, "json", no metadata). */
static inline void mc_channel(mc_buf *b, uint16_t id, const char *topic) {
  mc_rec_head(b, 0x04, 2 + 2 + 4 + strlen(topic) + 4 + 4 + 4);
  mc_le(b, id, 2);
  mc_le(b, 0, 2);
  mc_str(b, topic);
  mc_str(b, "json");
  mc_le(b, 0, 4);
}

/* A Message record on channel id. */
static inline void mc_message(mc_buf *b, uint16_t id, uint64_t t,
                              const char *data) {
  mc_rec_head(b, 0x05, 22 + strlen(data));
  mc_le(b, id, 2);
  mc_le(b, 0, 4);
  mc_le(b, t, 8);
  mc_le(b, t, 8);
  mc_put(b, data, strlen(data));
}

/* A Chunk of records r (comp "" or "zstd"); usize_claim 0: the true size;
 * crc: write the CRC of r (else 0, "not computed"). */
static inline void mc_chunk(mc_buf *b, const mc_buf *r, const char *comp,
                            uint64_t usize_claim, int crc) {
  mc_buf body = {0};
  if (!strcmp(comp, "zstd")) {
    size_t bound = ZSTD_compressBound(r->n);
    body.p = malloc(bound);
    body.cap = bound;
    body.n = ZSTD_compress(body.p, bound, r->p, r->n, 1);
    if (ZSTD_isError(body.n))
      abort();
  } else {
    mc_put(&body, r->p, r->n);
  }
  mc_rec_head(b, 0x06, 8 + 8 + 8 + 4 + 4 + strlen(comp) + 8 + body.n);
  mc_le(b, 0, 8);
  mc_le(b, 0, 8);
  mc_le(b, usize_claim ? usize_claim : r->n, 8);
  mc_le(b, crc ? pa_mcap_crc32(0, r->p, r->n) : 0, 4);
  mc_str(b, comp);
  mc_le(b, body.n, 8);
  mc_put(b, body.p, body.n);
  free(body.p);
}

/* A valid file: a chunk with channel 1 "/a" and n messages "{}", CRCs on;
 * data_end: a Data End record with the data section's CRC after it. */
static inline void mc_valid(mc_buf *b, int n, int data_end) {
  mc_magic(b);
  mc_buf r = {0};
  mc_channel(&r, 1, "/a");
  for (int i = 0; i < n; i++)
    mc_message(&r, 1, (uint64_t)i, "{}");
  mc_chunk(b, &r, "", 0, 1);
  free(r.p);
  if (data_end) {
    uint32_t crc = pa_mcap_crc32(0, b->p, b->n);
    mc_rec_head(b, 0x0F, 4);
    mc_le(b, crc, 4);
  }
}

/* Uncompressed chunks nested depth deep around one message. */
static inline void mc_nested(mc_buf *b, int depth) {
  mc_magic(b);
  mc_buf in = {0};
  mc_channel(&in, 1, "/a");
  mc_message(&in, 1, 0, "{}");
  /* from the outside in: each chunk's records are the next chunk */
  uint64_t *len = malloc(sizeof *len * (size_t)(depth + 1));
  len[0] = in.n;
  for (int k = 1; k <= depth; k++)
    len[k] = 9 + 8 + 8 + 8 + 4 + 4 + 8 + len[k - 1];
  for (int k = depth; k >= 1; k--) {
    mc_rec_head(b, 0x06, len[k] - 9);
    mc_le(b, 0, 8);
    mc_le(b, 0, 8);
    mc_le(b, len[k - 1], 8);
    mc_le(b, 0, 4);
    mc_le(b, 0, 4); /* compression "" */
    mc_le(b, len[k - 1], 8);
  }
  mc_put(b, in.p, in.n);
  free(in.p);
  free(len);
}

/* A zstd chunk of 33 KB of records that claims `claim` bytes
 * uncompressed. */
static inline void mc_huge_claim(mc_buf *b, uint64_t claim) {
  mc_magic(b);
  mc_buf r = {0};
  mc_channel(&r, 1, "/a");
  char pad[1024];
  memset(pad, 'x', sizeof pad - 1);
  pad[sizeof pad - 1] = 0;
  for (int i = 0; i < 33; i++)
    mc_message(&r, 1, (uint64_t)i, pad);
  mc_chunk(b, &r, "zstd", claim, 0);
  free(r.p);
}

static inline int mc_write(const char *path, const mc_buf *b) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  size_t w = fwrite(b->p, 1, b->n, f);
  return fclose(f) == 0 && w == b->n ? 0 : -1;
}

#endif
