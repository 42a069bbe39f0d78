/* mcap.c - the MCAP writer: a bounded queue filled by the caller, drained by
 * one writer thread that owns the file, the open chunk and the index (the
 * bytes of each record: mcap_rec.c). */
#define _GNU_SOURCE
#include "mcap.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

static const uint8_t MAGIC[8] = {0x89, 'M', 'C', 'A', 'P', '0', '\r', '\n'};

#define MAX_IDS 65535 /* schema and channel ids are u16; 0 means none */

/* ---- the queue ----------------------------------------------------- */

enum { IT_SCHEMA, IT_CHANNEL, IT_MESSAGE, IT_SYNC };

typedef struct item {
  struct item *next;
  int kind;
  uint16_t id, ref; /* schema/channel id; a channel's schema */
  uint64_t log_ns, pub_ns;
  uint64_t ticket;  /* IT_SYNC */
  char *name, *enc; /* schema name/encoding, channel topic/encoding */
  size_t len;
  uint8_t data[]; /* schema text or message payload */
} item;

/* What the summary repeats about a schema or channel. */
typedef struct def {
  bool used;
  bool written; /* already in a chunk (the first one that needs it) */
  uint16_t ref;
  char *name, *enc;
  uint8_t *data;
  size_t len;
  uint64_t count; /* channels: messages */
} def;

/* One message of the open chunk, for its channel's message index. */
typedef struct idx_ent {
  uint16_t ch;
  uint64_t t, off;
} idx_ent;

typedef struct chunk_ix {
  uint64_t start_t, end_t, off, len, idx_len, csize, usize;
  uint32_t n_ch;
  uint16_t *chs;
  uint64_t *ch_off;
} chunk_ix;

struct pa_mcap {
  pa_mcap_def def;
  int fd;
  pthread_t thread;
  bool started;
  pthread_mutex_t mu;
  pthread_cond_t cv_work, cv_sync;
  /* guarded by mu */
  item *head, *tail;
  size_t queued; /* payload bytes */
  bool stop;
  uint64_t tickets, synced;
  uint64_t dropped;
  int n_schemas, n_channels; /* ids handed out */
  char error[256];
  pa_mcap_stats st; /* messages/chunks/bytes as of the last chunk */
  /* the writer thread's own */
  def schemas[MAX_IDS + 1];
  def channels[MAX_IDS + 1];
  uint64_t off;    /* file size */
  pa_mcap_buf rec; /* the open chunk's uncompressed records */
  idx_ent *ents;
  size_t n_ents, cap_ents;
  uint64_t ck_start, ck_end; /* open chunk's log time range */
  struct timespec ck_since;  /* when the open chunk got its first message */
  pa_mcap_buf out;           /* compressed chunk + indexes, one write */
  chunk_ix *cix;
  size_t n_cix, cap_cix;
  uint64_t messages, t_min, t_max, raw_bytes;
  ZSTD_CCtx *zc;
  bool failed;
};

pa_mcap_def pa_mcap_def_default(void) {
  pa_mcap_def d = {
      .path = NULL,
      .fd = -1,
      .profile = "",
      .library = "playarea",
      .chunk_size = 512 * 1024,
      .chunk_ms = 1000,
      .queue_bytes = 64u << 20,
      .zstd_level = 3,
  };
  return d;
}

static void fail_errno(pa_mcap *m, const char *what) {
  int e = errno;
  pthread_mutex_lock(&m->mu);
  if (!m->error[0])
    snprintf(m->error, sizeof m->error, "%s: %s: %s", m->def.path, what,
             strerror(e));
  pthread_mutex_unlock(&m->mu);
  m->failed = true;
}

static void fail_msg(pa_mcap *m, const char *msg) {
  pthread_mutex_lock(&m->mu);
  if (!m->error[0])
    snprintf(m->error, sizeof m->error, "%s: %s", m->def.path, msg);
  pthread_mutex_unlock(&m->mu);
  m->failed = true;
}

static int write_all(pa_mcap *m, const void *p, size_t n) {
  if (m->failed)
    return -1;
  const uint8_t *b = p;
  while (n) {
    ssize_t w = write(m->fd, b, n);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      fail_errno(m, "write");
      return -1;
    }
    b += w;
    n -= (size_t)w;
    m->off += (uint64_t)w;
  }
  return 0;
}

/* ---- records ------------------------------------------------------- */

static void rec_schema(pa_mcap_buf *b, uint16_t id, const def *s) {
  size_t at = pa_mcap_rec_begin(b, PA_MCAP_OP_SCHEMA);
  pa_mcap_buf_put_u16(b, id);
  pa_mcap_buf_put_str(b, s->name);
  pa_mcap_buf_put_str(b, s->enc);
  pa_mcap_buf_put_u32(b, (uint32_t)s->len);
  pa_mcap_buf_put(b, s->data, s->len);
  pa_mcap_rec_end(b, at);
}

static void rec_channel(pa_mcap_buf *b, uint16_t id, const def *c) {
  size_t at = pa_mcap_rec_begin(b, PA_MCAP_OP_CHANNEL);
  pa_mcap_buf_put_u16(b, id);
  pa_mcap_buf_put_u16(b, c->ref);
  pa_mcap_buf_put_str(b, c->name);
  pa_mcap_buf_put_str(b, c->enc);
  pa_mcap_buf_put_u32(b, 0); /* metadata: an empty map */
  pa_mcap_rec_end(b, at);
}

static int cmp_ent(const void *a, const void *b) {
  const idx_ent *x = a, *y = b;
  if (x->ch != y->ch)
    return x->ch < y->ch ? -1 : 1;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  return x->off < y->off ? -1 : x->off > y->off;
}

static void publish_stats(pa_mcap *m) {
  pthread_mutex_lock(&m->mu);
  m->st.messages = m->messages;
  m->st.chunks = m->n_cix;
  m->st.bytes = m->off;
  m->st.raw_bytes = m->raw_bytes;
  pthread_mutex_unlock(&m->mu);
}

/* Compresses the open chunk and writes it with its message indexes. */
static void flush_chunk(pa_mcap *m) {
  if (!m->n_ents || m->failed) {
    m->rec.n = 0;
    m->n_ents = 0;
    return;
  }
  pa_mcap_buf *o = &m->out;
  o->n = 0;
  size_t bound = ZSTD_compressBound(m->rec.n);
  uint64_t chunk_off = m->off;
  size_t at = pa_mcap_rec_begin(o, PA_MCAP_OP_CHUNK);
  pa_mcap_buf_put_u64(o, m->ck_start);
  pa_mcap_buf_put_u64(o, m->ck_end);
  pa_mcap_buf_put_u64(o, m->rec.n);
  pa_mcap_buf_put_u32(o, pa_mcap_crc32(0, m->rec.p, m->rec.n));
  pa_mcap_buf_put_str(o, "zstd");
  size_t len_at = o->n;
  pa_mcap_buf_put_u64(o, 0);
  uint8_t *dst = pa_mcap_buf_reserve(o, bound);
  if (!dst) {
    fail_msg(m, "out of memory");
    return;
  }
  size_t cz = ZSTD_compressCCtx(m->zc, dst, bound, m->rec.p, m->rec.n,
                                m->def.zstd_level);
  if (ZSTD_isError(cz)) {
    fail_msg(m, ZSTD_getErrorName(cz));
    return;
  }
  o->n = (size_t)(dst - o->p) + cz;
  pa_mcap_buf_set_u64(o, len_at, cz);
  pa_mcap_rec_end(o, at);
  uint64_t chunk_len = o->n;

  /* One message index per channel, entries in log time order. */
  qsort(m->ents, m->n_ents, sizeof *m->ents, cmp_ent);
  uint32_t n_ch = 0;
  for (size_t i = 0; i < m->n_ents; i++)
    if (i == 0 || m->ents[i].ch != m->ents[i - 1].ch)
      n_ch++;
  chunk_ix ci = {.start_t = m->ck_start,
                 .end_t = m->ck_end,
                 .off = chunk_off,
                 .len = chunk_len,
                 .csize = cz,
                 .usize = m->rec.n,
                 .n_ch = n_ch};
  ci.chs = malloc(n_ch * sizeof *ci.chs);
  ci.ch_off = malloc(n_ch * sizeof *ci.ch_off);
  if (!ci.chs || !ci.ch_off) {
    free(ci.chs);
    free(ci.ch_off);
    fail_msg(m, "out of memory");
    return;
  }
  uint32_t k = 0;
  for (size_t i = 0; i < m->n_ents;) {
    uint16_t ch = m->ents[i].ch;
    ci.chs[k] = ch;
    ci.ch_off[k] = chunk_off + o->n;
    k++;
    size_t r = pa_mcap_rec_begin(o, PA_MCAP_OP_MESSAGE_INDEX);
    pa_mcap_buf_put_u16(o, ch);
    size_t arr = o->n;
    pa_mcap_buf_put_u32(o, 0);
    size_t j = i;
    for (; j < m->n_ents && m->ents[j].ch == ch; j++) {
      pa_mcap_buf_put_u64(o, m->ents[j].t);
      pa_mcap_buf_put_u64(o, m->ents[j].off);
    }
    pa_mcap_buf_set_u32(o, arr, (uint32_t)(o->n - arr - 4));
    pa_mcap_rec_end(o, r);
    i = j;
  }
  ci.idx_len = o->n - chunk_len;
  if (o->oom) {
    free(ci.chs);
    free(ci.ch_off);
    fail_msg(m, "out of memory");
    return;
  }
  if (m->n_cix == m->cap_cix) {
    size_t cap = m->cap_cix ? m->cap_cix * 2 : 64;
    chunk_ix *p = realloc(m->cix, cap * sizeof *p);
    if (!p) {
      free(ci.chs);
      free(ci.ch_off);
      fail_msg(m, "out of memory");
      return;
    }
    m->cix = p;
    m->cap_cix = cap;
  }
  if (write_all(m, o->p, o->n) != 0) {
    free(ci.chs);
    free(ci.ch_off);
    return;
  }
  m->cix[m->n_cix++] = ci;
  m->raw_bytes += m->rec.n;
  m->rec.n = 0;
  m->n_ents = 0;
  publish_stats(m);
}

static void add_message(pa_mcap *m, const item *it) {
  def *c = &m->channels[it->id];
  if (!c->used || m->failed)
    return;
  /* Schema and channel go into the first chunk that uses them, so every
   * chunk a streaming reader reaches is decodable. */
  if (c->ref && !m->schemas[c->ref].written) {
    rec_schema(&m->rec, c->ref, &m->schemas[c->ref]);
    m->schemas[c->ref].written = true;
  }
  if (!c->written) {
    rec_channel(&m->rec, it->id, c);
    c->written = true;
  }
  if (m->n_ents == m->cap_ents) {
    size_t cap = m->cap_ents ? m->cap_ents * 2 : 1024;
    idx_ent *p = realloc(m->ents, cap * sizeof *p);
    if (!p) {
      fail_msg(m, "out of memory");
      return;
    }
    m->ents = p;
    m->cap_ents = cap;
  }
  if (!m->n_ents) {
    m->ck_start = m->ck_end = it->log_ns;
    clock_gettime(CLOCK_MONOTONIC, &m->ck_since);
  }
  m->ents[m->n_ents++] = (idx_ent){it->id, it->log_ns, m->rec.n};
  size_t at = pa_mcap_rec_begin(&m->rec, PA_MCAP_OP_MESSAGE);
  pa_mcap_buf_put_u16(&m->rec, it->id);
  pa_mcap_buf_put_u32(&m->rec, (uint32_t)c->count);
  pa_mcap_buf_put_u64(&m->rec, it->log_ns);
  pa_mcap_buf_put_u64(&m->rec, it->pub_ns);
  pa_mcap_buf_put(&m->rec, it->data, it->len);
  pa_mcap_rec_end(&m->rec, at);
  if (m->rec.oom) {
    fail_msg(m, "out of memory");
    return;
  }
  c->count++;
  if (it->log_ns < m->ck_start)
    m->ck_start = it->log_ns;
  if (it->log_ns > m->ck_end)
    m->ck_end = it->log_ns;
  if (!m->messages || it->log_ns < m->t_min)
    m->t_min = it->log_ns;
  if (!m->messages || it->log_ns > m->t_max)
    m->t_max = it->log_ns;
  m->messages++;
  if (m->rec.n >= m->def.chunk_size)
    flush_chunk(m);
}

static void take_def(def *d, item *it) {
  d->used = true;
  d->ref = it->ref;
  d->name = it->name;
  d->enc = it->enc;
  it->name = it->enc = NULL;
  if (it->kind == IT_SCHEMA && it->len) {
    d->data = malloc(it->len);
    if (d->data)
      memcpy(d->data, it->data, it->len);
    d->len = d->data ? it->len : 0;
  }
}

static void free_item(item *it) {
  free(it->name);
  free(it->enc);
  free(it);
}

static bool chunk_due(pa_mcap *m) {
  if (!m->n_ents)
    return false;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  int64_t ms = (now.tv_sec - m->ck_since.tv_sec) * 1000 +
               (now.tv_nsec - m->ck_since.tv_nsec) / 1000000;
  return ms >= (int64_t)m->def.chunk_ms;
}

static void *writer_main(void *arg) {
  pa_mcap *m = arg;
  pthread_mutex_lock(&m->mu);
  for (;;) {
    while (!m->head && !m->stop) {
      if (!m->n_ents) {
        pthread_cond_wait(&m->cv_work, &m->mu);
        continue;
      }
      struct timespec dl;
      clock_gettime(CLOCK_REALTIME, &dl);
      dl.tv_nsec += (long)(m->def.chunk_ms % 1000) * 1000000L;
      dl.tv_sec += m->def.chunk_ms / 1000 + dl.tv_nsec / 1000000000L;
      dl.tv_nsec %= 1000000000L;
      if (pthread_cond_timedwait(&m->cv_work, &m->mu, &dl) == ETIMEDOUT)
        break;
    }
    item *list = m->head;
    m->head = m->tail = NULL;
    m->queued = 0;
    bool stop = m->stop;
    pthread_mutex_unlock(&m->mu);

    uint64_t ticket = 0;
    while (list) {
      item *it = list;
      list = it->next;
      if (it->kind == IT_SCHEMA)
        take_def(&m->schemas[it->id], it);
      else if (it->kind == IT_CHANNEL)
        take_def(&m->channels[it->id], it);
      else if (it->kind == IT_MESSAGE)
        add_message(m, it);
      else if (it->kind == IT_SYNC) {
        flush_chunk(m);
        ticket = it->ticket;
      }
      free_item(it);
    }
    if (chunk_due(m))
      flush_chunk(m);

    pthread_mutex_lock(&m->mu);
    if (ticket > m->synced) {
      m->synced = ticket;
      pthread_cond_broadcast(&m->cv_sync);
    }
    if (stop && !m->head)
      break;
  }
  pthread_mutex_unlock(&m->mu);
  return NULL;
}

/* ---- the caller's side --------------------------------------------- */

static void enqueue(pa_mcap *m, item *it) {
  it->next = NULL;
  if (m->tail)
    m->tail->next = it;
  else
    m->head = it;
  m->tail = it;
  pthread_cond_signal(&m->cv_work);
}

pa_mcap *pa_mcap_open(const pa_mcap_def *d, char *err, size_t err_sz) {
  if (!d->path || !*d->path || d->chunk_size < 1 || d->queue_bytes < 1 ||
      d->chunk_ms < 1) {
    if (d->fd >= 0)
      close(d->fd);
    snprintf(err, err_sz,
             "mcap: invalid settings (path, chunk_size, "
             "chunk_ms, queue_bytes)");
    return NULL;
  }
  pa_mcap *m = calloc(1, sizeof *m);
  if (!m) {
    if (d->fd >= 0)
      close(d->fd);
    snprintf(err, err_sz, "mcap: out of memory");
    return NULL;
  }
  m->fd = -1;
  m->def = *d;
  if (!m->def.profile)
    m->def.profile = "";
  if (!m->def.library)
    m->def.library = "";
  m->def.path = strdup(d->path);
  m->zc = ZSTD_createCCtx();
  if (!m->def.path || !m->zc) {
    snprintf(err, err_sz, "mcap: out of memory");
    goto fail_mem;
  }
  /* O_EXCL: a recording never replaces a file, even one made since the
   * path was checked */
  m->fd =
      d->fd >= 0
          ? d->fd
          : open(d->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                 0644);
  if (m->fd < 0) {
    snprintf(err, err_sz, "%s: cannot create: %s", d->path, strerror(errno));
    goto fail_mem;
  }
  pthread_mutex_init(&m->mu, NULL);
  pthread_cond_init(&m->cv_work, NULL);
  pthread_cond_init(&m->cv_sync, NULL);
  pa_mcap_buf b = {0};
  pa_mcap_buf_put(&b, MAGIC, sizeof MAGIC);
  size_t at = pa_mcap_rec_begin(&b, PA_MCAP_OP_HEADER);
  pa_mcap_buf_put_str(&b, m->def.profile);
  pa_mcap_buf_put_str(&b, m->def.library);
  pa_mcap_rec_end(&b, at);
  int wr = b.oom ? -1 : write_all(m, b.p, b.n);
  free(b.p);
  if (wr != 0 || pthread_create(&m->thread, NULL, writer_main, m) != 0) {
    snprintf(err, err_sz, "%s: cannot write the header: %s", d->path,
             m->error[0] ? m->error : "out of memory or threads");
    close(m->fd);
    unlink(d->path);
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv_work);
    pthread_cond_destroy(&m->cv_sync);
    goto fail_mem;
  }
  m->started = true;
  publish_stats(m);
  return m;
fail_mem:
  if (m->fd < 0 && d->fd >= 0) /* taken over, even when not used */
    close(d->fd);
  if (m->zc)
    ZSTD_freeCCtx(m->zc);
  free((char *)m->def.path);
  free(m);
  return NULL;
}

static item *new_def(int kind, const char *name, const char *enc,
                     const void *data, size_t len) {
  item *it = calloc(1, sizeof *it + len);
  if (!it)
    return NULL;
  it->kind = kind;
  it->name = strdup(name);
  it->enc = strdup(enc);
  if (!it->name || !it->enc) {
    free_item(it);
    return NULL;
  }
  if (len)
    memcpy(it->data, data, len);
  it->len = len;
  return it;
}

int pa_mcap_schema(pa_mcap *m, const char *name, const char *encoding,
                   const void *data, size_t len) {
  if (!name || !*name || !encoding || len > UINT32_MAX)
    return -1;
  item *it = new_def(IT_SCHEMA, name, encoding, data, len);
  if (!it)
    return -1;
  pthread_mutex_lock(&m->mu);
  if (m->n_schemas >= MAX_IDS) {
    pthread_mutex_unlock(&m->mu);
    free_item(it);
    return -1;
  }
  int id = ++m->n_schemas;
  it->id = (uint16_t)id;
  enqueue(m, it);
  pthread_mutex_unlock(&m->mu);
  return id;
}

int pa_mcap_channel(pa_mcap *m, int schema, const char *topic,
                    const char *message_encoding) {
  if (!topic || !*topic || !message_encoding || schema < 0)
    return -1;
  item *it = new_def(IT_CHANNEL, topic, message_encoding, NULL, 0);
  if (!it)
    return -1;
  pthread_mutex_lock(&m->mu);
  if (m->n_channels >= MAX_IDS || schema > m->n_schemas) {
    pthread_mutex_unlock(&m->mu);
    free_item(it);
    return -1;
  }
  int id = ++m->n_channels;
  it->id = (uint16_t)id;
  it->ref = (uint16_t)schema;
  enqueue(m, it);
  pthread_mutex_unlock(&m->mu);
  return id;
}

int pa_mcap_write(pa_mcap *m, int channel, uint64_t log_ns, uint64_t publish_ns,
                  const void *data, size_t len) {
  pthread_mutex_lock(&m->mu);
  bool bad = channel < 1 || channel > m->n_channels || m->error[0];
  bool full = m->queued + len > m->def.queue_bytes;
  if (bad || full) {
    if (full || m->error[0]) /* after a write error (disk full): lost too */
      m->dropped++;
    pthread_mutex_unlock(&m->mu);
    return -1;
  }
  m->queued += len; /* reserved before the copy, outside the lock */
  pthread_mutex_unlock(&m->mu);
  item *it = malloc(sizeof *it + len);
  pthread_mutex_lock(&m->mu);
  if (!it) {
    m->queued -= len;
    m->dropped++;
    pthread_mutex_unlock(&m->mu);
    return -1;
  }
  memset(it, 0, sizeof *it);
  if (len)
    memcpy(it->data, data, len);
  it->kind = IT_MESSAGE;
  it->id = (uint16_t)channel;
  it->log_ns = log_ns;
  it->pub_ns = publish_ns;
  it->len = len;
  enqueue(m, it);
  pthread_mutex_unlock(&m->mu);
  return 0;
}

void pa_mcap_sync(pa_mcap *m) {
  item *it = calloc(1, sizeof *it);
  pthread_mutex_lock(&m->mu);
  if (!it || m->stop) {
    pthread_mutex_unlock(&m->mu);
    free(it);
    return;
  }
  it->kind = IT_SYNC;
  it->ticket = ++m->tickets;
  uint64_t t = it->ticket;
  enqueue(m, it);
  while (m->synced < t)
    pthread_cond_wait(&m->cv_sync, &m->mu);
  pthread_mutex_unlock(&m->mu);
}

void pa_mcap_count_dropped(pa_mcap *m, uint64_t n) {
  pthread_mutex_lock(&m->mu);
  m->dropped += n;
  pthread_mutex_unlock(&m->mu);
}

void pa_mcap_get_stats(pa_mcap *m, pa_mcap_stats *st) {
  pthread_mutex_lock(&m->mu);
  *st = m->st;
  st->dropped = m->dropped;
  pthread_mutex_unlock(&m->mu);
}

void pa_mcap_error(pa_mcap *m, char *b, size_t sz) {
  pthread_mutex_lock(&m->mu);
  snprintf(b, sz, "%s", m->error);
  pthread_mutex_unlock(&m->mu);
}

/* ---- the summary --------------------------------------------------- */

static void write_summary(pa_mcap *m) {
  pa_mcap_buf b = {0};
  size_t at = pa_mcap_rec_begin(&b, PA_MCAP_OP_DATA_END);
  pa_mcap_buf_put_u32(&b, 0); /* no data section CRC */
  pa_mcap_rec_end(&b, at);
  if (b.oom || write_all(m, b.p, b.n) != 0) {
    free(b.p);
    return;
  }
  uint64_t summary_start = m->off;
  b.n = 0;
  pa_mcap_buf offs = {0};
  size_t g = b.n;
  uint16_t n_s = 0;
  uint32_t n_c = 0;
  for (int i = 1; i <= MAX_IDS; i++)
    if (m->schemas[i].used) {
      rec_schema(&b, (uint16_t)i, &m->schemas[i]);
      n_s++;
    }
  pa_mcap_summary_group(&b, &offs, PA_MCAP_OP_SCHEMA, g, summary_start);
  g = b.n;
  for (int i = 1; i <= MAX_IDS; i++)
    if (m->channels[i].used) {
      rec_channel(&b, (uint16_t)i, &m->channels[i]);
      n_c++;
    }
  pa_mcap_summary_group(&b, &offs, PA_MCAP_OP_CHANNEL, g, summary_start);
  g = b.n;
  at = pa_mcap_rec_begin(&b, PA_MCAP_OP_STATISTICS);
  pa_mcap_buf_put_u64(&b, m->messages);
  pa_mcap_buf_put_u16(&b, n_s);
  pa_mcap_buf_put_u32(&b, n_c);
  pa_mcap_buf_put_u32(&b, 0); /* attachments */
  pa_mcap_buf_put_u32(&b, 0); /* metadata */
  pa_mcap_buf_put_u32(&b, (uint32_t)m->n_cix);
  pa_mcap_buf_put_u64(&b, m->messages ? m->t_min : 0);
  pa_mcap_buf_put_u64(&b, m->messages ? m->t_max : 0);
  size_t map = b.n;
  pa_mcap_buf_put_u32(&b, 0);
  for (int i = 1; i <= MAX_IDS; i++)
    if (m->channels[i].used) {
      pa_mcap_buf_put_u16(&b, (uint16_t)i);
      pa_mcap_buf_put_u64(&b, m->channels[i].count);
    }
  pa_mcap_buf_set_u32(&b, map, (uint32_t)(b.n - map - 4));
  pa_mcap_rec_end(&b, at);
  pa_mcap_summary_group(&b, &offs, PA_MCAP_OP_STATISTICS, g, summary_start);
  g = b.n;
  for (size_t i = 0; i < m->n_cix; i++) {
    const chunk_ix *c = &m->cix[i];
    at = pa_mcap_rec_begin(&b, PA_MCAP_OP_CHUNK_INDEX);
    pa_mcap_buf_put_u64(&b, c->start_t);
    pa_mcap_buf_put_u64(&b, c->end_t);
    pa_mcap_buf_put_u64(&b, c->off);
    pa_mcap_buf_put_u64(&b, c->len);
    map = b.n;
    pa_mcap_buf_put_u32(&b, 0);
    for (uint32_t k = 0; k < c->n_ch; k++) {
      pa_mcap_buf_put_u16(&b, c->chs[k]);
      pa_mcap_buf_put_u64(&b, c->ch_off[k]);
    }
    pa_mcap_buf_set_u32(&b, map, (uint32_t)(b.n - map - 4));
    pa_mcap_buf_put_u64(&b, c->idx_len);
    pa_mcap_buf_put_str(&b, "zstd");
    pa_mcap_buf_put_u64(&b, c->csize);
    pa_mcap_buf_put_u64(&b, c->usize);
    pa_mcap_rec_end(&b, at);
  }
  pa_mcap_summary_group(&b, &offs, PA_MCAP_OP_CHUNK_INDEX, g, summary_start);
  uint64_t offsets_start = summary_start + b.n;
  pa_mcap_buf_put(&b, offs.p, offs.n);
  if (offs.oom)
    b.oom = true;
  free(offs.p);
  /* Footer: its CRC covers the summary through summary_offset_start. */
  pa_mcap_buf_put_u8(&b, PA_MCAP_OP_FOOTER);
  /* its length is part of what the CRC covers */
  pa_mcap_buf_put_u64(&b, 8 + 8 + 4);
  pa_mcap_buf_put_u64(&b, summary_start);
  pa_mcap_buf_put_u64(&b, offs.n ? offsets_start : 0);
  uint32_t crc = b.oom ? 0 : pa_mcap_crc32(0, b.p, b.n);
  pa_mcap_buf_put_u32(&b, crc);
  pa_mcap_buf_put(&b, MAGIC, sizeof MAGIC);
  if (b.oom)
    fail_msg(m, "out of memory");
  else
    write_all(m, b.p, b.n);
  free(b.p);
}

int pa_mcap_close(pa_mcap *m, pa_mcap_stats *st, char *err, size_t err_sz) {
  if (!m)
    return 0;
  pthread_mutex_lock(&m->mu);
  m->stop = true;
  pthread_cond_signal(&m->cv_work);
  pthread_mutex_unlock(&m->mu);
  if (m->started)
    pthread_join(m->thread, NULL);
  flush_chunk(m);
  if (!m->failed)
    write_summary(m);
  if (!m->failed && fsync(m->fd) != 0 && errno != EINVAL)
    fail_errno(m, "fsync");
  if (close(m->fd) != 0 && !m->failed)
    fail_errno(m, "close");
  publish_stats(m);
  if (st)
    pa_mcap_get_stats(m, st);
  int rc = m->error[0] ? -1 : 0;
  if (rc)
    snprintf(err, err_sz, "%s", m->error);
  for (int i = 0; i <= MAX_IDS; i++) {
    free(m->schemas[i].name);
    free(m->schemas[i].enc);
    free(m->schemas[i].data);
    free(m->channels[i].name);
    free(m->channels[i].enc);
  }
  for (size_t i = 0; i < m->n_cix; i++) {
    free(m->cix[i].chs);
    free(m->cix[i].ch_off);
  }
  while (m->head) {
    item *it = m->head;
    m->head = it->next;
    free_item(it);
  }
  free(m->cix);
  free(m->ents);
  free(m->rec.p);
  free(m->out.p);
  ZSTD_freeCCtx(m->zc);
  pthread_mutex_destroy(&m->mu);
  pthread_cond_destroy(&m->cv_work);
  pthread_cond_destroy(&m->cv_sync);
  free((char *)m->def.path);
  free(m);
  return rc;
}
