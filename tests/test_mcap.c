/* test_mcap.c - the MCAP writer read back by a small reader of the test's
 * own: every record framed, chunks decompressed and CRC-checked, message
 * indexes and chunk indexes pointing at the right records, statistics
 * matching; a truncated file and a SIGKILLed writer read up to their last
 * complete chunk. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zstd.h>

#include "mcap.h"
#include "mcap_craft.h"

static const uint8_t MAGIC[8] = {0x89, 'M', 'C', 'A', 'P', '0', '\r', '\n'};

static uint64_t rd(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

typedef struct msg {
  uint16_t ch;
  uint32_t seq;
  uint64_t t;
  char data[64];
  size_t len;
} msg;

typedef struct rd_out {
  msg msgs[20000];
  size_t n_msgs;
  int schemas, channels; /* records seen in the data section / chunks */
  int chunks, msg_indexes, index_entries_ok;
  bool footer, data_end, truncated;
  uint64_t summary_start;
  /* summary */
  int sum_schemas, sum_channels, chunk_indexes, chunk_indexes_ok;
  uint64_t stat_messages;
  uint32_t stat_chunks;
  uint16_t stat_schemas;
  uint32_t stat_channels;
} rd_out;

static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)sz + 1);
  assert_non_null(b);
  assert_int_equal(fread(b, 1, (size_t)sz, f), (size_t)sz);
  fclose(f);
  *n = (size_t)sz;
  return b;
}

/* Parses the records of a chunk's uncompressed body. */
static void read_chunk_records(rd_out *o, const uint8_t *p, size_t n,
                               uint64_t *offs, size_t *n_offs) {
  size_t i = 0;
  *n_offs = 0;
  while (i < n) {
    assert_true(i + 9 <= n);
    uint8_t op = p[i];
    uint64_t len = rd(p + i + 1, 8);
    assert_true(i + 9 + len <= n);
    const uint8_t *c = p + i + 9;
    if (op == 0x03) {
      o->schemas++;
    } else if (op == 0x04) {
      o->channels++;
    } else if (op == 0x05) {
      assert_true(o->n_msgs < sizeof o->msgs / sizeof o->msgs[0]);
      msg *m = &o->msgs[o->n_msgs++];
      m->ch = (uint16_t)rd(c, 2);
      m->seq = (uint32_t)rd(c + 2, 4);
      m->t = rd(c + 6, 8);
      m->len = len - 22;
      assert_true(m->len < sizeof m->data);
      memcpy(m->data, c + 22, m->len);
      m->data[m->len] = 0;
      offs[(*n_offs)++] = i;
    } else {
      fail_msg("unexpected opcode 0x%02x in a chunk", op);
    }
    i += 9 + len;
  }
}

/* Reads a file the way a streaming reader does; a truncated tail ends the
 * read (o->truncated). Checks message indexes against the chunk they follow
 * and, when there is a summary, the chunk indexes and statistics. */
static void read_mcap(const char *path, rd_out *o) {
  memset(o, 0, sizeof *o);
  size_t n;
  uint8_t *f = slurp(path, &n);
  assert_true(n >= 8);
  assert_memory_equal(f, MAGIC, 8);
  size_t i = 8;
  bool first = true;
  uint8_t *ubuf = NULL;
  uint64_t *offs = NULL;
  size_t n_offs = 0, chunk_msg0 = 0;
  while (i < n) {
    if (i + 9 > n) {
      o->truncated = true;
      break;
    }
    uint8_t op = f[i];
    uint64_t len = rd(f + i + 1, 8);
    if (i + 9 + len > n) {
      o->truncated = true;
      break;
    }
    const uint8_t *c = f + i + 9;
    if (first)
      assert_int_equal(op, 0x01); /* the header comes first */
    first = false;
    if (op == 0x06) {
      uint64_t usize = rd(c + 16, 8);
      uint32_t crc = (uint32_t)rd(c + 24, 4);
      uint32_t clen = (uint32_t)rd(c + 28, 4);
      assert_int_equal(clen, 4);
      assert_memory_equal(c + 32, "zstd", 4);
      uint64_t rlen = rd(c + 36, 8);
      assert_int_equal(44 + rlen, len);
      free(ubuf);
      ubuf = malloc(usize + 1);
      size_t got = ZSTD_decompress(ubuf, usize, c + 44, rlen);
      assert_false(ZSTD_isError(got));
      assert_int_equal(got, usize);
      assert_int_equal(pa_mcap_crc32(0, ubuf, usize), crc);
      free(offs);
      offs = malloc(sizeof *offs * (usize / 22 + 1));
      chunk_msg0 = o->n_msgs;
      read_chunk_records(o, ubuf, usize, offs, &n_offs);
      /* time range covers the chunk's messages */
      for (size_t k = chunk_msg0; k < o->n_msgs; k++) {
        assert_true(o->msgs[k].t >= rd(c, 8));
        assert_true(o->msgs[k].t <= rd(c + 8, 8));
      }
      o->chunks++;
    } else if (op == 0x07) {
      uint16_t ch = (uint16_t)rd(c, 2);
      uint32_t alen = (uint32_t)rd(c + 2, 4);
      assert_int_equal(alen % 16, 0);
      uint64_t prev_t = 0;
      for (uint32_t k = 0; k < alen / 16; k++) {
        uint64_t t = rd(c + 6 + k * 16, 8), off = rd(c + 14 + k * 16, 8);
        assert_true(t >= prev_t); /* sorted by log time */
        prev_t = t;
        /* the offset names a message record of this channel and time */
        bool ok = false;
        for (size_t q = 0; q < n_offs; q++)
          if (offs[q] == off) {
            const msg *m = &o->msgs[chunk_msg0 + q];
            ok = m->ch == ch && m->t == t;
          }
        assert_true(ok);
        o->index_entries_ok++;
      }
      o->msg_indexes++;
    } else if (op == 0x0F) {
      o->data_end = true;
      o->summary_start = i + 9 + len;
    } else if (op == 0x02) {
      o->footer = true;
      uint64_t ss = rd(c, 8), so = rd(c + 8, 8);
      uint32_t crc = (uint32_t)rd(c + 16, 4);
      assert_int_equal(ss, o->summary_start);
      assert_true(so > ss);
      assert_int_equal(pa_mcap_crc32(0, f + ss, i + 9 + 16 - ss), crc);
      assert_int_equal(i + 9 + len + 8, n);
      assert_memory_equal(f + n - 8, MAGIC, 8);
      break;
    } else if (op == 0x03) {
      *(o->data_end ? &o->sum_schemas : &o->schemas) += 1;
    } else if (op == 0x04) {
      *(o->data_end ? &o->sum_channels : &o->channels) += 1;
    } else if (op == 0x0B) {
      o->stat_messages = rd(c, 8);
      o->stat_schemas = (uint16_t)rd(c + 8, 2);
      o->stat_channels = (uint32_t)rd(c + 10, 4);
      o->stat_chunks = (uint32_t)rd(c + 22, 4);
    } else if (op == 0x08) {
      o->chunk_indexes++;
      uint64_t off = rd(c + 16, 8), clen = rd(c + 24, 8);
      /* points at a chunk record of that length */
      assert_int_equal(f[off], 0x06);
      assert_int_equal(rd(f + off + 1, 8) + 9, clen);
      uint32_t mlen = (uint32_t)rd(c + 32, 4);
      for (uint32_t k = 0; k < mlen / 10; k++) {
        uint64_t mo = rd(c + 36 + k * 10 + 2, 8);
        assert_int_equal(f[mo], 0x07);
        assert_int_equal(rd(f + mo + 9, 2), rd(c + 36 + k * 10, 2));
      }
      uint64_t ilen = rd(c + 36 + mlen, 8);
      assert_int_equal(f[off + clen], 0x07);
      assert_true(ilen > 0);
      o->chunk_indexes_ok++;
    } else if (op == 0x01 || op == 0x0E) {
      /* header, summary offsets */
    } else {
      fail_msg("unexpected opcode 0x%02x at %zu", op, i);
    }
    i += 9 + len;
  }
  free(ubuf);
  free(offs);
  free(f);
}

static const char *tmp_path(char *b, size_t n, const char *tag) {
  snprintf(b, n, "/tmp/t%d-mcap-%s.mcap", (int)getpid(), tag);
  return b;
}

static const char SCHEMA[] = "{\"type\":\"object\"}";

static pa_mcap *open_small(const char *path, size_t chunk) {
  pa_mcap_def d = pa_mcap_def_default();
  d.path = path;
  d.chunk_size = chunk;
  char err[256];
  pa_mcap *m = pa_mcap_open(&d, err, sizeof err);
  assert_non_null(m);
  return m;
}

static int n_read;

static int count_msg(void *arg, const char *topic, uint64_t t, const uint8_t *d,
                     size_t n) {
  (void)t, (void)d, (void)n;
  if (topic[0] == '/')
    (*(int *)arg)++;
  return 0;
}

static void round_trip(void **state) {
  (void)state;
  n_read = 0;
  char path[128];
  tmp_path(path, sizeof path, "rt");
  pa_mcap *m = open_small(path, 2000);
  int s =
      pa_mcap_schema(m, "foxglove.Log", "jsonschema", SCHEMA, strlen(SCHEMA));
  int a = pa_mcap_channel(m, s, "/a", "json");
  int b = pa_mcap_channel(m, s, "/b", "json");
  assert_int_equal(s, 1);
  assert_int_equal(a, 1);
  assert_int_equal(b, 2);
  assert_int_equal(pa_mcap_channel(m, 7, "/c", "json"), -1); /* no schema 7 */
  assert_int_equal(pa_mcap_write(m, 9, 0, 0, "x", 1), -1);   /* no channel 9 */
  const int N = 1000;
  for (int k = 0; k < N; k++) {
    char d[32];
    int len = snprintf(d, sizeof d, "{\"k\":%d}", k);
    /* /b runs slightly behind /a: times are not monotonic across channels */
    int ch = (k % 3 == 0) ? b : a;
    uint64_t t = 1000000000ull + (uint64_t)k * 1000 - (ch == b ? 1500 : 0);
    assert_int_equal(pa_mcap_write(m, ch, t, t, d, (size_t)len), 0);
  }
  pa_mcap_stats st;
  char err[256];
  assert_int_equal(pa_mcap_close(m, &st, err, sizeof err), 0);
  assert_int_equal(st.messages, N);
  assert_int_equal(st.dropped, 0);
  assert_true(st.chunks > 5); /* 2000-byte chunks */

  static rd_out o;
  read_mcap(path, &o);
  assert_false(o.truncated);
  assert_true(o.footer);
  assert_int_equal(o.n_msgs, N);
  assert_int_equal(o.schemas, 1); /* once, in the first chunk */
  assert_int_equal(o.channels, 2);
  assert_int_equal(o.chunks, (int)st.chunks);
  assert_int_equal(o.index_entries_ok, N);
  assert_int_equal(o.chunk_indexes, o.chunks);
  assert_int_equal(o.chunk_indexes_ok, o.chunks);
  assert_int_equal(o.sum_schemas, 1);
  assert_int_equal(o.sum_channels, 2);
  assert_int_equal(o.stat_messages, N);
  assert_int_equal(o.stat_schemas, 1);
  assert_int_equal(o.stat_channels, 2);
  assert_int_equal(o.stat_chunks, o.chunks);
  /* the project's own streaming reader sees the same */
  assert_int_equal(pa_mcap_read(path, count_msg, &n_read, err, sizeof err), N);
  assert_int_equal(n_read, N);
  /* payloads and per-channel sequence numbers in order */
  uint32_t seq[3] = {0, 0, 0};
  for (int k = 0; k < N; k++) {
    char d[32];
    snprintf(d, sizeof d, "{\"k\":%d}", k);
    assert_string_equal(o.msgs[k].data, d);
    assert_int_equal(o.msgs[k].seq, seq[o.msgs[k].ch]++);
  }
  unlink(path);
}

static void truncated_file(void **state) {
  (void)state;
  char path[128], cut[128];
  tmp_path(path, sizeof path, "full");
  tmp_path(cut, sizeof cut, "cut");
  pa_mcap *m = open_small(path, 1 << 20);
  int s = pa_mcap_schema(m, "S", "jsonschema", SCHEMA, strlen(SCHEMA));
  int a = pa_mcap_channel(m, s, "/a", "json");
  for (int k = 0; k < 300; k++) {
    assert_int_equal(pa_mcap_write(m, a, (uint64_t)k, 0, "{}", 2), 0);
    if (k % 100 == 99)
      pa_mcap_sync(m); /* three chunks of 100 */
  }
  char err[256];
  assert_int_equal(pa_mcap_close(m, NULL, err, sizeof err), 0);
  static rd_out o;
  read_mcap(path, &o);
  assert_int_equal(o.chunks, 3);
  size_t n;
  uint8_t *f = slurp(path, &n);
  /* every cut point inside the third chunk keeps exactly two chunks */
  size_t third = 0, i = 8, seen = 0;
  while (i < n) {
    if (f[i] == 0x06 && ++seen == 3) {
      third = i;
      break;
    }
    i += 9 + rd(f + i + 1, 8);
  }
  assert_true(third > 0);
  size_t cuts[] = {third + 1, third + 20, third + 60,
                   third + 9 + (size_t)rd(f + third + 1, 8) - 1};
  for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
    FILE *w = fopen(cut, "wb");
    assert_int_equal(fwrite(f, 1, cuts[c], w), cuts[c]);
    fclose(w);
    read_mcap(cut, &o);
    assert_true(o.truncated);
    assert_false(o.footer);
    assert_int_equal(o.chunks, 2);
    assert_int_equal(o.n_msgs, 200);
    int k = 0;
    assert_int_equal(pa_mcap_read(cut, count_msg, &k, err, sizeof err), 200);
    assert_int_equal(k, 200);
  }
  FILE *w = fopen(cut, "wb");
  fputs("not an mcap file", w);
  fclose(w);
  assert_int_equal(pa_mcap_read(cut, count_msg, &n_read, err, sizeof err), -1);
  assert_non_null(strstr(err, "not an MCAP file"));
  free(f);
  unlink(path);
  unlink(cut);
}

/* A writer killed by SIGKILL after 3 synced chunks, with more queued and
 * unwritten: the file holds the 3 chunks and nothing torn. */
static void killed_writer(void **state) {
  (void)state;
  char path[128];
  tmp_path(path, sizeof path, "kill");
  int pfd[2];
  assert_int_equal(pipe(pfd), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(pfd[0]);
    pa_mcap_def d = pa_mcap_def_default();
    d.path = path;
    d.chunk_ms = 3600000; /* only syncs close chunks */
    char err[256];
    pa_mcap *m = pa_mcap_open(&d, err, sizeof err);
    if (!m)
      _exit(2);
    int s = pa_mcap_schema(m, "S", "jsonschema", SCHEMA, strlen(SCHEMA));
    int a = pa_mcap_channel(m, s, "/a", "json");
    for (int k = 0; k < 150; k++) {
      pa_mcap_write(m, a, (uint64_t)k, 0, "{\"v\":1}", 7);
      if (k % 50 == 49)
        pa_mcap_sync(m);
    }
    for (int k = 0; k < 40; k++) /* stays in the open chunk */
      pa_mcap_write(m, a, 1000 + (uint64_t)k, 0, "{\"v\":2}", 7);
    char one = 1;
    if (write(pfd[1], &one, 1) != 1)
      _exit(3);
    for (;;)
      pause();
  }
  close(pfd[1]);
  char one;
  assert_int_equal(read(pfd[0], &one, 1), 1);
  close(pfd[0]);
  kill(pid, SIGKILL);
  int wst;
  assert_int_equal(waitpid(pid, &wst, 0), pid);
  assert_true(WIFSIGNALED(wst));
  static rd_out o;
  read_mcap(path, &o);
  assert_false(o.footer);
  assert_int_equal(o.chunks, 3);
  assert_int_equal(o.n_msgs, 150);
  assert_int_equal(o.index_entries_ok, 150);
  unlink(path);
}

static void bad_input(void **state) {
  (void)state;
  char err[256] = "";
  pa_mcap_def d = pa_mcap_def_default();
  d.path = "/nonexistent-dir/x.mcap";
  assert_null(pa_mcap_open(&d, err, sizeof err));
  assert_non_null(strstr(err, "/nonexistent-dir/x.mcap"));
  d.path = NULL;
  assert_null(pa_mcap_open(&d, err, sizeof err));
  char path[128];
  tmp_path(path, sizeof path, "bad");
  pa_mcap *m = open_small(path, 1000);
  assert_int_equal(pa_mcap_schema(m, "", "x", NULL, 0), -1);
  assert_int_equal(pa_mcap_channel(m, 0, "", "json"), -1);
  int a = pa_mcap_channel(m, 0, "/raw", "json"); /* schemaless is allowed */
  assert_int_equal(a, 1);
  assert_int_equal(pa_mcap_write(m, a, 5, 5, "{}", 2), 0);
  assert_int_equal(pa_mcap_close(m, NULL, err, sizeof err), 0);
  static rd_out o;
  read_mcap(path, &o);
  assert_int_equal(o.n_msgs, 1);
  assert_int_equal(o.schemas, 0);
  assert_int_equal(o.channels, 1);
  unlink(path);
}

/* A full queue drops and counts instead of growing. */
static void queue_bound(void **state) {
  (void)state;
  char path[128], err[256];
  tmp_path(path, sizeof path, "q");
  pa_mcap_def d = pa_mcap_def_default();
  d.path = path;
  d.queue_bytes = 4096;
  pa_mcap *m = pa_mcap_open(&d, err, sizeof err);
  assert_non_null(m);
  int a = pa_mcap_channel(m, 0, "/big", "json");
  static char big[3000];
  memset(big, 'x', sizeof big);
  int ok = 0, refused = 0;
  for (int k = 0; k < 200; k++)
    *(pa_mcap_write(m, a, (uint64_t)k, 0, big, sizeof big) == 0 ? &ok
                                                                : &refused) +=
        1;
  pa_mcap_stats st;
  assert_int_equal(pa_mcap_close(m, &st, err, sizeof err), 0);
  assert_int_equal(st.dropped, (uint64_t)refused);
  assert_int_equal(st.messages, (uint64_t)ok);
  assert_true(ok >= 1);
  unlink(path);
}

static void crc_vector(void **state) {
  (void)state;
  assert_int_equal(pa_mcap_crc32(0, "123456789", 9), 0xCBF43926u);
  assert_int_equal(pa_mcap_crc32(pa_mcap_crc32(0, "1234", 4), "56789", 5),
                   0xCBF43926u);
}

/* ---- the reader distrusts its input (issue 32 #6) ----------------------- */

/* The reader's verdict on b: the count, err set on -1. */
static long read_buf(const mc_buf *b, char *err, size_t err_sz) {
  int k = 0;
  err[0] = 0;
  long got = pa_mcap_read_mem(b->p, b->n, count_msg, &k, err, err_sz);
  if (got >= 0)
    assert_int_equal(k, got);
  return got;
}

static void valid_crafted(void **state) {
  (void)state;
  char err[256];
  mc_buf b = {0};
  mc_valid(&b, 5, 1);
  assert_int_equal(read_buf(&b, err, sizeof err), 5);
  /* and through a file */
  char path[128];
  tmp_path(path, sizeof path, "valid");
  assert_int_equal(mc_write(path, &b), 0);
  int k = 0;
  assert_int_equal(pa_mcap_read(path, count_msg, &k, err, sizeof err), 5);
  unlink(path);
  free(b.p);
}

/* 200k nested chunks: the recursive reader overflowed its stack. */
static void nested_chunks(void **state) {
  (void)state;
  char err[256];
  for (int depth = 2; depth <= 200000; depth *= 100) {
    mc_buf b = {0};
    mc_nested(&b, depth);
    assert_int_equal(read_buf(&b, err, sizeof err), -1);
    assert_non_null(strstr(err, "a chunk inside the chunk at byte 8"));
    assert_non_null(strstr(err, "do not nest"));
    free(b.p);
  }
}

/* Sizes are checked before anything is allocated. */
static void huge_claims(void **state) {
  (void)state;
  char err[256];
  mc_buf b = {0};
  mc_huge_claim(&b, 1ull << 30);
  assert_true(b.n < 40000);
  assert_int_equal(read_buf(&b, err, sizeof err), -1);
  assert_non_null(strstr(err, "1073741824 bytes uncompressed, over the"));
  free(b.p);
  /* under the limit, but not what the zstd frame holds */
  b = (mc_buf){0};
  mc_huge_claim(&b, 1u << 20);
  assert_int_equal(read_buf(&b, err, sizeof err), -1);
  assert_non_null(strstr(err, "zstd frame does not declare"));
  free(b.p);
  /* a top-level record claiming 1 TiB, and one claiming more than is left */
  b = (mc_buf){0};
  mc_magic(&b);
  mc_rec_head(&b, 0x04, 1ull << 40);
  mc_le(&b, 0, 8);
  assert_int_equal(read_buf(&b, err, sizeof err), -1);
  assert_non_null(strstr(err, "(op 0x04) at byte 8: 1099511627776 bytes"));
  b.n = 8;
  mc_rec_head(&b, 0x04, 1000);
  assert_int_equal(read_buf(&b, err, sizeof err), 0); /* a truncated tail */
  free(b.p);
  /* 65 chunks of 64 MiB, 2 KB each: the total is bounded too */
  b = (mc_buf){0};
  mc_buf r = {0};
  mc_channel(&r, 1, "/a");
  size_t pay = PA_MCAP_READ_CHUNK_MAX - r.n - 9 - 22;
  mc_rec_head(&r, 0x05, 22 + pay);
  uint8_t *zero = calloc(1, 22 + pay);
  mc_put(&r, zero, 22 + pay);
  free(zero);
  assert_int_equal(r.n, PA_MCAP_READ_CHUNK_MAX);
  mc_buf one = {0};
  mc_chunk(&one, &r, "zstd", 0, 0);
  free(r.p);
  mc_magic(&b);
  for (int k = 0; k < 65; k++)
    mc_put(&b, one.p, one.n);
  free(one.p);
  assert_true(b.n < 65 * 8192);
  assert_int_equal(read_buf(&b, err, sizeof err), -1);
  assert_non_null(strstr(err, "more than 4294967296 bytes of chunks"));
  free(b.p);
}

/* A flipped byte is a damaged file, not a replay that is "ok". */
static void flipped_byte(void **state) {
  (void)state;
  char err[256];
  mc_buf b = {0};
  mc_valid(&b, 3, 0);
  b.p[b.n - 3] ^= 0x20; /* inside the last message's data */
  assert_int_equal(read_buf(&b, err, sizeof err), -1);
  assert_non_null(strstr(err, "the chunk at byte 8 fails its CRC check"));
  free(b.p);
  /* the data section CRC: a byte outside any chunk */
  b = (mc_buf){0};
  mc_valid(&b, 3, 1);
  b.p[8 + 9] ^= 0x01; /* the chunk's message_start_time */
  assert_int_equal(read_buf(&b, err, sizeof err), -1);
  assert_non_null(strstr(err, "the data section fails its CRC check"));
  free(b.p);
  /* a recording of the project's writer (zstd), damaged in its chunk */
  char path[128];
  tmp_path(path, sizeof path, "flip");
  pa_mcap *m = open_small(path, 1 << 20);
  int a = pa_mcap_channel(m, 0, "/a", "json");
  for (int k = 0; k < 100; k++)
    assert_int_equal(pa_mcap_write(m, a, (uint64_t)k, 0, "{\"v\":12345}", 11),
                     0);
  assert_int_equal(pa_mcap_close(m, NULL, err, sizeof err), 0);
  size_t n;
  uint8_t *f = slurp(path, &n);
  b = (mc_buf){.p = f, .n = n};
  assert_int_equal(read_buf(&b, err, sizeof err), 100);
  size_t i = 8;
  while (f[i] != 0x06)
    i += 9 + (size_t)rd(f + i + 1, 8);
  size_t len = (size_t)rd(f + i + 1, 8);
  /* every 7th byte of the compressed records (after the chunk's 44 bytes
   * of fields with "zstd") */
  for (size_t at = i + 9 + 44; at < i + 9 + len; at += 7) {
    f[at] ^= 0x10;
    assert_int_equal(read_buf(&b, err, sizeof err), -1);
    if (!(strstr(err, "CRC") || strstr(err, "does not decompress") ||
          strstr(err, "does not declare")))
      fail_msg("byte %zu flipped: '%s'", at - i, err);
    assert_true(strstr(err, "CRC") || strstr(err, "does not decompress") ||
                strstr(err, "does not declare"));
    f[at] ^= 0x10;
  }
  free(f);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(crc_vector),     cmocka_unit_test(round_trip),
      cmocka_unit_test(truncated_file), cmocka_unit_test(killed_writer),
      cmocka_unit_test(bad_input),      cmocka_unit_test(queue_bound),
      cmocka_unit_test(valid_crafted),  cmocka_unit_test(nested_chunks),
      cmocka_unit_test(huge_claims),    cmocka_unit_test(flipped_byte),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
