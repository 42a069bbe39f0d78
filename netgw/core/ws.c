/* ws.c - WebSocket connections: the HTTP/1.1 upgrade, then wslay's framing
 * fed from and into a bufferevent. See ws.h. */
#include "ws.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <wslay/wslay.h>

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_MAX_PATH 256
#define WS_MAX_PROTO 64

struct pa_ws {
  struct bufferevent *bev;
  struct event *kick; /* frames bytes that came with the head, from the loop */
  uint8_t *pre;       /* those bytes (a bufferevent's input takes no adds) */
  size_t pre_len, pre_off;
  wslay_event_context_ptr ctx;
  struct pa_ws_cbs cbs;
  void *arg;
  size_t max_queued;
  uint64_t *pauses;
  bool out_paused;  /* not read: too much output waits (backpressure) */
  bool user_paused; /* not read: pa_ws_set_reading(false) */
  char path[WS_MAX_PATH];
  char proto[WS_MAX_PROTO];
  int depth;    /* > 0 while a user callback runs: free is deferred */
  bool closing; /* pa_ws_close called, or a close frame went out */
  bool dead;    /* on_close called: free as soon as the stack unwinds */
};

/* ---- SHA-1 (FIPS 180-4), only for Sec-WebSocket-Accept ---------------- */

static uint32_t rol32(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

static void sha1_block(uint32_t h[5], const uint8_t *p) {
  uint32_t w[80];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
           (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
  for (int i = 16; i < 80; i++)
    w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
  for (int i = 0; i < 80; i++) {
    uint32_t f, k;
    if (i < 20) {
      f = (b & c) | (~b & d);
      k = 0x5a827999;
    } else if (i < 40) {
      f = b ^ c ^ d;
      k = 0x6ed9eba1;
    } else if (i < 60) {
      f = (b & c) | (b & d) | (c & d);
      k = 0x8f1bbcdc;
    } else {
      f = b ^ c ^ d;
      k = 0xca62c1d6;
    }
    uint32_t t = rol32(a, 5) + f + e + k + w[i];
    e = d;
    d = c;
    c = rol32(b, 30);
    b = a;
    a = t;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
}

/* Messages here are < 120 bytes: the whole padded input fits in 2 blocks. */
static void sha1_short(const uint8_t *msg, size_t len, uint8_t out[20]) {
  uint8_t buf[128] = {0};
  uint32_t h[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
  memcpy(buf, msg, len);
  buf[len] = 0x80;
  size_t total = len + 9 <= 64 ? 64 : 128;
  uint64_t bits = (uint64_t)len * 8;
  for (int i = 0; i < 8; i++)
    buf[total - 1 - i] = (uint8_t)(bits >> (8 * i));
  for (size_t off = 0; off < total; off += 64)
    sha1_block(h, buf + off);
  for (int i = 0; i < 5; i++) {
    out[4 * i] = (uint8_t)(h[i] >> 24);
    out[4 * i + 1] = (uint8_t)(h[i] >> 16);
    out[4 * i + 2] = (uint8_t)(h[i] >> 8);
    out[4 * i + 3] = (uint8_t)h[i];
  }
}

static void base64(const uint8_t *in, size_t n, char *out) {
  static const char tab[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16;
    if (i + 1 < n)
      v |= (uint32_t)in[i + 1] << 8;
    if (i + 2 < n)
      v |= in[i + 2];
    out[o++] = tab[(v >> 18) & 63];
    out[o++] = tab[(v >> 12) & 63];
    out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
    out[o++] = i + 2 < n ? tab[v & 63] : '=';
  }
  out[o] = '\0';
}

/* The count of bytes a base64 text decodes to, or -1 when it is not one. */
static int base64_len(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n % 4)
    return -1;
  int pad = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '=') {
      if (i < n - 2)
        return -1;
      pad++;
    } else if (pad || !(isalnum(ch) || ch == '+' || ch == '/')) {
      return -1;
    }
  }
  return (int)(n / 4 * 3) - pad;
}

/* ---- the request head ---------------------------------------------------
 */

static void seterr(char *err, size_t errlen, const char *msg) {
  if (err && errlen)
    snprintf(err, errlen, "%s", msg);
}

int pa_ws_header(const char *head, size_t len, const char *name, char *out,
                 size_t out_len) {
  size_t nl = strlen(name);
  const char *p = memchr(head, '\n', len); /* skip the request line */
  const char *end = head + len;
  while (p && p + 1 < end) {
    const char *line = p + 1;
    const char *eol = memchr(line, '\n', (size_t)(end - line));
    if (!eol)
      eol = end;
    if ((size_t)(eol - line) > nl && line[nl] == ':' &&
        strncasecmp(line, name, nl) == 0) {
      const char *v = line + nl + 1;
      const char *ve = eol;
      while (v < ve && (*v == ' ' || *v == '\t'))
        v++;
      while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
        ve--;
      size_t vl = (size_t)(ve - v);
      if (vl + 1 > out_len)
        return -1;
      memcpy(out, v, vl);
      out[vl] = '\0';
      return (int)vl;
    }
    p = eol < end ? eol : NULL;
  }
  return -1;
}

/* Whether the comma-separated header value `list` holds `token`. */
static bool has_token(const char *list, const char *token) {
  size_t tl = strlen(token);
  const char *p = list;
  while (*p) {
    while (*p == ' ' || *p == '\t' || *p == ',')
      p++;
    const char *e = p;
    while (*e && *e != ',')
      e++;
    const char *te = e;
    while (te > p && (te[-1] == ' ' || te[-1] == '\t'))
      te--;
    if ((size_t)(te - p) == tl && strncasecmp(p, token, tl) == 0)
      return true;
    p = e;
  }
  return false;
}

int pa_ws_parse_head(const char *head, size_t len, char *path, size_t path_len,
                     char *err, size_t errlen) {
  if (len == 0 || len > PA_WS_MAX_HEAD) {
    seterr(err, errlen, "request head empty or over 8192 bytes");
    return -1;
  }
  if (memchr(head, '\0', len)) {
    seterr(err, errlen, "NUL byte in the request head");
    return -1;
  }
  const char *eol = memchr(head, '\n', len);
  if (!eol) {
    seterr(err, errlen, "no request line");
    return -1;
  }
  /* METHOD SP target SP HTTP/1.x */
  const char *sp1 = memchr(head, ' ', (size_t)(eol - head));
  const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
  if (!sp1 || !sp2 || sp2 == sp1 + 1 || sp1[1] != '/') {
    seterr(err, errlen, "malformed request line");
    return -1;
  }
  const char *ver = sp2 + 1;
  if ((size_t)(eol - ver) < 8 || strncmp(ver, "HTTP/1.", 7) != 0) {
    seterr(err, errlen, "not an HTTP/1.x request");
    return -1;
  }
  const char *tgt = sp1 + 1;
  size_t tl = (size_t)(sp2 - tgt);
  const char *q = memchr(tgt, '?', tl);
  if (q)
    tl = (size_t)(q - tgt);
  if (path && path_len) {
    if (tl + 1 > path_len) {
      seterr(err, errlen, "request path too long");
      return -1;
    }
    memcpy(path, tgt, tl);
    path[tl] = '\0';
  }
  char v[256];
  if (pa_ws_header(head, len, "Upgrade", v, sizeof v) < 0 ||
      !has_token(v, "websocket"))
    return 0; /* plain HTTP */
  if ((size_t)(sp1 - head) != 3 || strncmp(head, "GET", 3) != 0) {
    seterr(err, errlen, "a WebSocket upgrade must be a GET");
    return -1;
  }
  if (ver[7] != '1') {
    seterr(err, errlen, "a WebSocket upgrade needs HTTP/1.1");
    return -1;
  }
  if (pa_ws_header(head, len, "Connection", v, sizeof v) < 0 ||
      !has_token(v, "upgrade")) {
    seterr(err, errlen, "Connection: Upgrade missing");
    return -1;
  }
  if (pa_ws_header(head, len, "Sec-WebSocket-Version", v, sizeof v) < 0 ||
      strcmp(v, "13") != 0) {
    seterr(err, errlen, "Sec-WebSocket-Version must be 13");
    return -1;
  }
  if (pa_ws_header(head, len, "Sec-WebSocket-Key", v, sizeof v) < 0 ||
      base64_len(v) != 16) {
    seterr(err, errlen, "Sec-WebSocket-Key missing or not 16 bytes");
    return -1;
  }
  return 1;
}

/* ---- the connection ----------------------------------------------------- */

static void ws_destroy(struct pa_ws *ws) {
  if (ws->kick)
    event_free(ws->kick);
  free(ws->pre);
  wslay_event_context_free(ws->ctx);
  bufferevent_free(ws->bev);
  free(ws);
}

/* Ends the connection: on_close once, then free (now, or when the outermost
 * callback returns). */
static void ws_end(struct pa_ws *ws) {
  if (!ws->dead) {
    ws->dead = true;
    bufferevent_disable(ws->bev, EV_READ | EV_WRITE);
    if (ws->cbs.on_close) {
      ws->depth++;
      ws->cbs.on_close(ws, ws->arg);
      ws->depth--;
    }
  }
  if (ws->depth == 0)
    ws_destroy(ws);
}

static ssize_t recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len,
                       int flags, void *user) {
  struct pa_ws *ws = user;
  if (ws->pre_off < ws->pre_len) {
    size_t n =
        ws->pre_len - ws->pre_off < len ? ws->pre_len - ws->pre_off : len;
    memcpy(buf, ws->pre + ws->pre_off, n);
    ws->pre_off += n;
    return (ssize_t)n;
  }
  struct evbuffer *in = bufferevent_get_input(ws->bev);
  int n = evbuffer_remove(in, buf, len);
  if (n <= 0) {
    wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
    return -1;
  }
  return n;
}

static ssize_t send_cb(wslay_event_context_ptr ctx, const uint8_t *data,
                       size_t len, int flags, void *user) {
  struct pa_ws *ws = user;
  if (evbuffer_add(bufferevent_get_output(ws->bev), data, len) != 0) {
    wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
    return -1;
  }
  return (ssize_t)len;
}

static void msg_cb(wslay_event_context_ptr ctx,
                   const struct wslay_event_on_msg_recv_arg *a, void *user) {
  struct pa_ws *ws = user;
  if (ws->dead)
    return;
  ws->depth++;
  if (a->opcode == WSLAY_TEXT_FRAME && ws->cbs.on_text)
    ws->cbs.on_text(ws, (const char *)a->msg, a->msg_length, ws->arg);
  else if (a->opcode == WSLAY_BINARY_FRAME && ws->cbs.on_binary)
    ws->cbs.on_binary(ws, a->msg, a->msg_length, ws->arg);
  ws->depth--;
}

/* Moves queued frames into the output buffer; ends the connection when the
 * framing has nothing left to do (close handshake over, or an error). */
static void ws_pump(struct pa_ws *ws) {
  if (ws->dead)
    return;
  if (wslay_event_send(ws->ctx) != 0) {
    ws_end(ws);
    return;
  }
  if (wslay_event_get_close_sent(ws->ctx) && !ws->closing) {
    ws->closing = true;
    struct timeval tv = {5, 0};
    bufferevent_set_timeouts(ws->bev, &tv, &tv);
  }
  if (!wslay_event_want_read(ws->ctx) && !wslay_event_want_write(ws->ctx) &&
      evbuffer_get_length(bufferevent_get_output(ws->bev)) == 0)
    ws_end(ws);
}

static size_t out_len(const struct pa_ws *ws) {
  return evbuffer_get_length(bufferevent_get_output(ws->bev));
}

/* Reads the peer only while it is not paused for either reason. */
static void apply_reading(struct pa_ws *ws) {
  if (ws->dead)
    return;
  if (ws->out_paused || ws->user_paused)
    bufferevent_disable(ws->bev, EV_READ);
  else
    bufferevent_enable(ws->bev, EV_READ);
}

/* Everything queued (pongs a ping flood asks for included) past half the
 * limit: the peer is not read until it reads (le-proxy's watermarks). */
static void check_output(struct pa_ws *ws) {
  if (ws->dead || ws->out_paused || out_len(ws) <= ws->max_queued / 2)
    return;
  ws->out_paused = true;
  if (ws->pauses)
    (*ws->pauses)++;
  apply_reading(ws);
}

/* ws_pump, then check_output: false when ws ended (and is freed). */
static bool pump_checked(struct pa_ws *ws) {
  ws->depth++;
  ws_pump(ws);
  check_output(ws);
  ws->depth--;
  if (ws->dead) {
    if (ws->depth == 0)
      ws_destroy(ws);
    return false;
  }
  return true;
}

static void on_read(struct bufferevent *bev, void *arg) {
  struct pa_ws *ws = arg;
  if (ws->out_paused || ws->user_paused)
    return; /* the input waits (bytes read just before the pause) */
  ws->depth++;
  int rc = wslay_event_recv(ws->ctx);
  ws->depth--;
  if (ws->dead) {
    if (ws->depth == 0)
      ws_destroy(ws);
    return;
  }
  if (rc != 0) {
    ws_end(ws);
    return;
  }
  pump_checked(ws);
}

static void on_write(struct bufferevent *bev, void *arg) {
  struct pa_ws *ws = arg;
  if (!pump_checked(ws) || out_len(ws) > ws->max_queued / 4)
    return;
  ws->depth++;
  if (ws->out_paused) {
    ws->out_paused = false;
    apply_reading(ws);
    if (!ws->user_paused &&
        evbuffer_get_length(bufferevent_get_input(ws->bev)) > 0)
      on_read(ws->bev, ws); /* what arrived before the pause */
  }
  if (!ws->dead && ws->cbs.on_drain)
    ws->cbs.on_drain(ws, ws->arg);
  ws->depth--;
  if (ws->dead && ws->depth == 0)
    ws_destroy(ws);
}

void pa_ws_set_reading(struct pa_ws *ws, bool on) {
  if (ws->user_paused == !on)
    return;
  ws->user_paused = !on;
  apply_reading(ws);
  if (on && !ws->out_paused && !ws->dead &&
      evbuffer_get_length(bufferevent_get_input(ws->bev)) > 0 && ws->depth == 0)
    on_read(ws->bev, ws);
}

static void on_kick(evutil_socket_t fd, short what, void *arg) {
  struct pa_ws *ws = arg;
  on_read(ws->bev, ws);
}

static void on_event(struct bufferevent *bev, short what, void *arg) {
  if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
    ws_end(arg);
}

/* Best-effort error response on a socket we are about to close. */
static void reply_400(evutil_socket_t fd, const char *why) {
  char buf[512];
  int n = snprintf(buf, sizeof buf,
                   "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
                   "Connection: close\r\nContent-Length: %zu\r\n\r\n%s\n",
                   strlen(why) + 1, why);
  if (n > 0 && send(fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf,
                    MSG_NOSIGNAL) < 0) {
    /* the peer is gone; nothing to tell it */
  }
}

/* The first of `ours` that the client's Sec-WebSocket-Protocol offers. */
static const char *pick_proto(const char *head, size_t len,
                              const char *const *ours) {
  char offered[512];
  if (pa_ws_header(head, len, "Sec-WebSocket-Protocol", offered,
                   sizeof offered) < 0)
    return NULL;
  for (size_t i = 0; ours[i]; i++)
    if (has_token(offered, ours[i]))
      return ours[i];
  return NULL;
}

struct pa_ws *
pa_ws_accept(struct event_base *base, evutil_socket_t fd, const char *head,
             size_t head_len, const uint8_t *extra, size_t extra_len,
             const char *const *subprotocols, const struct pa_ws_limits *limits,
             const struct pa_ws_cbs *cbs, void *arg, char *err, size_t errlen) {
  char path[WS_MAX_PATH], why[160] = "";
  int kind =
      pa_ws_parse_head(head, head_len, path, sizeof path, why, sizeof why);
  if (kind == 0)
    snprintf(why, sizeof why, "not a WebSocket upgrade");
  const char *proto = NULL;
  if (kind == 1 && subprotocols && subprotocols[0]) {
    proto = pick_proto(head, head_len, subprotocols);
    if (!proto) {
      size_t o = (size_t)snprintf(why, sizeof why,
                                  "no supported subprotocol"
                                  " offered (want");
      for (size_t i = 0; subprotocols[i] && o < sizeof why; i++)
        o += (size_t)snprintf(why + o, sizeof why - o, " %s", subprotocols[i]);
      if (o < sizeof why)
        snprintf(why + o, sizeof why - o, ")");
      kind = -1;
    }
  }
  if (kind != 1) {
    seterr(err, errlen, why);
    reply_400(fd, why);
    evutil_closesocket(fd);
    return NULL;
  }

  char key[64], accept[32];
  pa_ws_header(head, head_len, "Sec-WebSocket-Key", key, sizeof key);
  char cat[64 + sizeof WS_GUID];
  int cl = snprintf(cat, sizeof cat, "%s%s", key, WS_GUID);
  uint8_t dig[20];
  sha1_short((const uint8_t *)cat, (size_t)cl, dig);
  base64(dig, sizeof dig, accept);

  struct pa_ws *ws = calloc(1, sizeof *ws);
  if (ws && extra_len && !(ws->pre = malloc(extra_len))) {
    free(ws);
    ws = NULL;
  }
  if (!ws) {
    seterr(err, errlen, "out of memory");
    evutil_closesocket(fd);
    return NULL;
  }
  ws->cbs = *cbs;
  ws->arg = arg;
  ws->max_queued =
      limits && limits->max_queued ? limits->max_queued : (size_t)16 << 20;
  ws->pauses = limits ? limits->pauses : NULL;
  snprintf(ws->path, sizeof ws->path, "%s", path);
  snprintf(ws->proto, sizeof ws->proto, "%s", proto ? proto : "");
  evutil_make_socket_nonblocking(fd);
  ws->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
  struct wslay_event_callbacks wcb = {.recv_callback = recv_cb,
                                      .send_callback = send_cb,
                                      .on_msg_recv_callback = msg_cb};
  if (!ws->bev || wslay_event_context_server_init(&ws->ctx, &wcb, ws) != 0) {
    seterr(err, errlen, "out of memory");
    if (ws->bev)
      bufferevent_free(ws->bev);
    else
      evutil_closesocket(fd);
    free(ws->pre);
    free(ws);
    return NULL;
  }
  wslay_event_config_set_max_recv_msg_length(
      ws->ctx,
      limits && limits->max_message ? limits->max_message : (size_t)1 << 20);

  struct evbuffer *out = bufferevent_get_output(ws->bev);
  evbuffer_add_printf(out,
                      "HTTP/1.1 101 Switching Protocols\r\n"
                      "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Accept: %s\r\n",
                      accept);
  if (proto)
    evbuffer_add_printf(out, "Sec-WebSocket-Protocol: %s\r\n", proto);
  evbuffer_add(out, "\r\n", 2);
  if (extra_len) {
    memcpy(ws->pre, extra, extra_len);
    ws->pre_len = extra_len;
  }
  bufferevent_setcb(ws->bev, on_read, on_write, on_event, ws);
  /* on_write at a quarter of the limit: resumes a paused peer */
  bufferevent_setwatermark(ws->bev, EV_WRITE, ws->max_queued / 4, 0);
  bufferevent_enable(ws->bev, EV_READ | EV_WRITE);
  /* Bytes that came with the head are framed from the loop, not here, so
   * the caller holds a live pointer when this returns. */
  if (extra_len) {
    ws->kick = evtimer_new(base, on_kick, ws);
    struct timeval now = {0, 0};
    if (ws->kick)
      evtimer_add(ws->kick, &now);
  }
  return ws;
}

static int ws_send(struct pa_ws *ws, uint8_t opcode, const void *data,
                   size_t len) {
  if (ws->dead || ws->closing || !wslay_event_get_write_enabled(ws->ctx))
    return -1;
  size_t q = pa_ws_queued(ws);
  if (q > 0 && q + len > ws->max_queued)
    return -1; /* one message alone may be larger: a big map */
  struct wslay_event_msg m = {.opcode = opcode, .msg = data, .msg_length = len};
  if (wslay_event_queue_msg(ws->ctx, &m) != 0)
    return -1;
  /* wslay copied `data`. Inside one of this connection's callbacks the
   * read handler pumps when the callback returns. */
  if (ws->depth == 0)
    ws_pump(ws);
  return 0;
}

int pa_ws_send_text(struct pa_ws *ws, const char *data, size_t len) {
  return ws_send(ws, WSLAY_TEXT_FRAME, data, len);
}

int pa_ws_send_binary(struct pa_ws *ws, const void *data, size_t len) {
  return ws_send(ws, WSLAY_BINARY_FRAME, data, len);
}

size_t pa_ws_queued(const struct pa_ws *ws) {
  return evbuffer_get_length(bufferevent_get_output(ws->bev)) +
         wslay_event_get_queued_msg_length(ws->ctx);
}

const char *pa_ws_subprotocol(const struct pa_ws *ws) { return ws->proto; }

const char *pa_ws_path(const struct pa_ws *ws) { return ws->path; }

void pa_ws_close(struct pa_ws *ws, uint16_t code, const char *reason) {
  if (ws->dead || ws->closing)
    return;
  ws->closing = true;
  /* A peer that never answers our close frame is dropped after 5 s. */
  struct timeval tv = {5, 0};
  bufferevent_set_timeouts(ws->bev, &tv, &tv);
  const char *r = reason ? reason : "";
  size_t rl = strlen(r);
  if (rl > 123) /* a control frame's payload is at most 125 bytes */
    rl = 123;
  wslay_event_queue_close(ws->ctx, code, (const uint8_t *)r, rl);
  if (ws->depth == 0)
    ws_pump(ws);
}

void pa_ws_free(struct pa_ws *ws) { ws_end(ws); }
