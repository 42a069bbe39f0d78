/* mcap_rec.c - the encoding under the MCAP writer (mcap.c): a growable
 * little-endian byte buffer, record framing (opcode and a patched length),
 * the Summary Offset record of a group, and the CRC-32 MCAP uses (the
 * reader's too). */
#include "mcap.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- little-endian byte buffer ------------------------------------- */

void *pa_mcap_buf_reserve(pa_mcap_buf *b, size_t more) {
  if (b->oom)
    return NULL;
  if (b->n + more > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + more)
      cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
      b->oom = true;
      return NULL;
    }
    b->p = p;
    b->cap = cap;
  }
  void *at = b->p + b->n;
  b->n += more;
  return at;
}

void pa_mcap_buf_put(pa_mcap_buf *b, const void *d, size_t n) {
  uint8_t *at = pa_mcap_buf_reserve(b, n);
  if (at && n)
    memcpy(at, d, n);
}

static void put_le(pa_mcap_buf *b, uint64_t v, int bytes) {
  uint8_t *at = pa_mcap_buf_reserve(b, (size_t)bytes);
  if (at)
    for (int i = 0; i < bytes; i++)
      at[i] = (uint8_t)(v >> (8 * i));
}

void pa_mcap_buf_put_u8(pa_mcap_buf *b, uint8_t v) { put_le(b, v, 1); }
void pa_mcap_buf_put_u16(pa_mcap_buf *b, uint16_t v) { put_le(b, v, 2); }
void pa_mcap_buf_put_u32(pa_mcap_buf *b, uint32_t v) { put_le(b, v, 4); }
void pa_mcap_buf_put_u64(pa_mcap_buf *b, uint64_t v) { put_le(b, v, 8); }

void pa_mcap_buf_put_str(pa_mcap_buf *b, const char *s) {
  size_t n = strlen(s);
  pa_mcap_buf_put_u32(b, (uint32_t)n);
  pa_mcap_buf_put(b, s, n);
}

void pa_mcap_buf_set_u64(pa_mcap_buf *b, size_t at, uint64_t v) {
  if (!b->oom)
    for (int i = 0; i < 8; i++)
      b->p[at + (size_t)i] = (uint8_t)(v >> (8 * i));
}

void pa_mcap_buf_set_u32(pa_mcap_buf *b, size_t at, uint32_t v) {
  if (!b->oom)
    for (int i = 0; i < 4; i++)
      b->p[at + (size_t)i] = (uint8_t)(v >> (8 * i));
}

size_t pa_mcap_rec_begin(pa_mcap_buf *b, uint8_t op) {
  pa_mcap_buf_put_u8(b, op);
  size_t at = b->n;
  pa_mcap_buf_put_u64(b, 0);
  return at;
}

void pa_mcap_rec_end(pa_mcap_buf *b, size_t at) {
  pa_mcap_buf_set_u64(b, at, b->n - at - 8);
}

/* ---- the summary's offsets ------------------------------------------ */

void pa_mcap_summary_group(pa_mcap_buf *b, pa_mcap_buf *offs, uint8_t op,
                           size_t start, uint64_t base) {
  if (b->n == start)
    return;
  size_t at = pa_mcap_rec_begin(offs, PA_MCAP_OP_SUMMARY_OFFSET);
  pa_mcap_buf_put_u8(offs, op);
  pa_mcap_buf_put_u64(offs, base + start);
  pa_mcap_buf_put_u64(offs, b->n - start);
  pa_mcap_rec_end(offs, at);
}

/* ---- CRC-32 -------------------------------------------------------- */

/* crc_table[k][b]: the CRC of byte b followed by k zero bytes, so eight
 * bytes fold in one step (a replay checks every chunk it reads: ~5x the
 * byte-at-a-time loop). */
static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    crc_table[0][i] = c;
  }
  for (int k = 1; k < 8; k++)
    for (uint32_t i = 0; i < 256; i++)
      crc_table[k][i] =
          (crc_table[k - 1][i] >> 8) ^ crc_table[0][crc_table[k - 1][i] & 0xFF];
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

uint32_t pa_mcap_crc32(uint32_t crc, const void *data, size_t len) {
  pthread_once(&crc_once, crc_init);
  const uint8_t *p = data;
  crc = ~crc;
  for (; len >= 8; p += 8, len -= 8) {
    uint32_t a = crc ^ le32(p), b = le32(p + 4);
    crc = crc_table[7][a & 0xFF] ^ crc_table[6][a >> 8 & 0xFF] ^
          crc_table[5][a >> 16 & 0xFF] ^ crc_table[4][a >> 24] ^
          crc_table[3][b & 0xFF] ^ crc_table[2][b >> 8 & 0xFF] ^
          crc_table[1][b >> 16 & 0xFF] ^ crc_table[0][b >> 24];
  }
  for (; len; p++, len--)
    crc = crc_table[0][(crc ^ *p) & 0xFF] ^ (crc >> 8);
  return ~crc;
}
