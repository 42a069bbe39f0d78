/* mcap.h - an MCAP file writer of the project's own (format: mcap.dev/spec,
 * major version 0): schemas, channels, messages in zstd chunks, a message
 * index per channel after each chunk, and on close the summary (schemas,
 * channels, statistics, chunk indexes, summary offsets) and footer.
 *
 * The caller (the gateway's loop) only copies messages into a bounded queue;
 * a writer thread builds, compresses and writes the chunks. Each chunk goes
 * out with its message indexes in one write(), so a process killed at any
 * point leaves a file that a streaming reader reads up to the last complete
 * chunk (no summary, no footer). */
#ifndef PA_MCAP_H
#define PA_MCAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pa_mcap pa_mcap;

typedef struct pa_mcap_def {
  const char *path;    /* created O_EXCL|O_NOFOLLOW, mode 0644; or names fd */
  int fd;              /* >= 0: an fd opened for writing, taken over (-1) */
  const char *profile; /* Header.profile ("" = none) */
  const char *library; /* Header.library */
  size_t chunk_size;   /* [bytes] uncompressed records that close a chunk */
  uint32_t chunk_ms;   /* [ms] a pending chunk is written at least this often */
  size_t queue_bytes;  /* [bytes] waiting messages; beyond, a write drops */
  int zstd_level;      /* 1 (fast) .. 19 */
} pa_mcap_def;

typedef struct pa_mcap_stats {
  uint64_t messages; /* written into chunks */
  uint64_t dropped;  /* refused by a full queue, or counted lost upstream */
  uint64_t chunks;
  uint64_t bytes;     /* [bytes] file size so far */
  uint64_t raw_bytes; /* [bytes] uncompressed chunk records */
} pa_mcap_stats;

pa_mcap_def pa_mcap_def_default(void);

/* Creates the file and writes magic + header; starts the writer thread.
 * NULL with err set on failure. */
pa_mcap *pa_mcap_open(const pa_mcap_def *d, char *err, size_t err_sz);

/* Declares a schema (data: e.g. a JSON Schema text); its id (>= 1), or -1
 * when the arguments are invalid. Never dropped. */
int pa_mcap_schema(pa_mcap *m, const char *name, const char *encoding,
                   const void *data, size_t len);
/* Declares a channel on schema id (0 = none); its id, or -1. */
int pa_mcap_channel(pa_mcap *m, int schema, const char *topic,
                    const char *message_encoding);

/* Queues one message (data copied): 0, or -1 when the queue is full (the
 * message is dropped and counted), the channel unknown or the writer
 * failed. Log times need not be monotonic. */
int pa_mcap_write(pa_mcap *m, int channel, uint64_t log_ns, uint64_t publish_ns,
                  const void *data, size_t len);

/* Blocks until everything queued before the call is in the file as complete
 * chunks (tests, and a recording's stop before it reports). */
void pa_mcap_sync(pa_mcap *m);

/* Counts n messages lost before they reached pa_mcap_write (a source that
 * was lapped) in the stats' dropped. */
void pa_mcap_count_dropped(pa_mcap *m, uint64_t n);

void pa_mcap_get_stats(pa_mcap *m, pa_mcap_stats *st);

/* The writer's first I/O error ("" = none) into buf. */
void pa_mcap_error(pa_mcap *m, char *buf, size_t sz);

/* Writes what is queued, the summary and footer, closes and frees: 0, or -1
 * with err set (the file is then incomplete but readable up to its last
 * chunk). st (may be NULL) gets the final counts. */
int pa_mcap_close(pa_mcap *m, pa_mcap_stats *st, char *err, size_t err_sz);

/* ---- mcap_read.c --------------------------------------------------- */

/* One message: its channel's topic ("" when the channel is unknown), log
 * time and payload (valid during the call). Nonzero stops the read. */
typedef int (*pa_mcap_msg_cb)(void *arg, const char *topic, uint64_t log_ns,
                              const uint8_t *data, size_t len);
/* What the reader accepts (docs/foxglove.md "Replay"): larger is an error
 * by name, found before anything is allocated. */
#define PA_MCAP_READ_FILE_MAX (1ull << 30)  /* [bytes] a whole file */
#define PA_MCAP_READ_CHUNK_MAX (64u << 20)  /* [bytes] a chunk, uncompressed */
#define PA_MCAP_READ_RECORD_MAX (64u << 20) /* [bytes] any other record */
#define PA_MCAP_READ_TOTAL_MAX                                                 \
  (4ull << 30) /* [bytes] all chunks, uncompressed */

/* Streams the messages of an MCAP file in record order (chunks: zstd or
 * none, never nested), one record in memory at a time; a truncated tail
 * ends the read. Chunk CRCs and the data section CRC are checked when
 * nonzero. Returns the count, or -1 with err (the file and what is wrong,
 * by byte offset). */
long pa_mcap_read(const char *path, pa_mcap_msg_cb cb, void *arg, char *err,
                  size_t err_sz);
/* The same over a file's bytes in memory (the fuzz target); err without a
 * file name. */
long pa_mcap_read_mem(const uint8_t *p, size_t n, pa_mcap_msg_cb cb, void *arg,
                      char *err, size_t err_sz);

/* ---- mcap_rec.c: the encoding the writer builds records with ------- */

/* Record opcodes (spec: "Records"). */
enum {
  PA_MCAP_OP_HEADER = 0x01,
  PA_MCAP_OP_FOOTER = 0x02,
  PA_MCAP_OP_SCHEMA = 0x03,
  PA_MCAP_OP_CHANNEL = 0x04,
  PA_MCAP_OP_MESSAGE = 0x05,
  PA_MCAP_OP_CHUNK = 0x06,
  PA_MCAP_OP_MESSAGE_INDEX = 0x07,
  PA_MCAP_OP_CHUNK_INDEX = 0x08,
  PA_MCAP_OP_STATISTICS = 0x0B,
  PA_MCAP_OP_SUMMARY_OFFSET = 0x0E,
  PA_MCAP_OP_DATA_END = 0x0F,
};

/* A growable little-endian byte buffer. oom sticks after a failed
 * allocation: later puts do nothing, the caller checks once at the end. */
typedef struct pa_mcap_buf {
  uint8_t *p;
  size_t n, cap;
  bool oom;
} pa_mcap_buf;

/* more bytes appended: where they start, or NULL (oom). */
void *pa_mcap_buf_reserve(pa_mcap_buf *b, size_t more);
void pa_mcap_buf_put(pa_mcap_buf *b, const void *d, size_t n);
void pa_mcap_buf_put_u8(pa_mcap_buf *b, uint8_t v);
void pa_mcap_buf_put_u16(pa_mcap_buf *b, uint16_t v);
void pa_mcap_buf_put_u32(pa_mcap_buf *b, uint32_t v);
void pa_mcap_buf_put_u64(pa_mcap_buf *b, uint64_t v);
/* A u32 length, then the bytes (no terminator). */
void pa_mcap_buf_put_str(pa_mcap_buf *b, const char *s);
/* Overwrite bytes at offset at (a length known once its bytes are in). */
void pa_mcap_buf_set_u64(pa_mcap_buf *b, size_t at, uint64_t v);
void pa_mcap_buf_set_u32(pa_mcap_buf *b, size_t at, uint32_t v);
/* Starts a record: opcode and a length patched by pa_mcap_rec_end. */
size_t pa_mcap_rec_begin(pa_mcap_buf *b, uint8_t op);
void pa_mcap_rec_end(pa_mcap_buf *b, size_t at);
/* The Summary Offset record (into offs) of the op group b holds from start,
 * none when the group is empty; base: the file offset of b's first byte. */
void pa_mcap_summary_group(pa_mcap_buf *b, pa_mcap_buf *offs, uint8_t op,
                           size_t start, uint64_t base);

/* CRC-32 (ISO-HDLC, as zlib), the checksum MCAP uses; crc 0 to start. */
uint32_t pa_mcap_crc32(uint32_t crc, const void *data, size_t len);

#endif
