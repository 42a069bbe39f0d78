/* test_ws.c - the WebSocket layer over a real socket pair and a real event
 * loop: the upgrade, framing both ways, limits, the close handshake and
 * freeing from inside a callback. The client side is written by hand from
 * RFC 6455 so the test does not share code with what it checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ws.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#define RFC_KEY "dGhlIHNhbXBsZSBub25jZQ=="
#define RFC_ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

typedef struct {
  struct event_base *base;
  struct pa_ws *ws;
  int cfd; /* the client's end */
  char last[128];
  size_t last_len;
  size_t bin_len;
  int texts, bins, closes;
  bool echo, free_in_cb;
} fx_t;

static void on_text(struct pa_ws *ws, const char *d, size_t n, void *arg) {
  fx_t *f = arg;
  f->texts++;
  f->last_len = n;
  memcpy(f->last, d, n < sizeof f->last ? n : sizeof f->last);
  if (f->echo)
    assert_int_equal(pa_ws_send_text(ws, d, n), 0);
  if (f->free_in_cb)
    pa_ws_free(ws);
}

static void on_binary(struct pa_ws *ws, const uint8_t *d, size_t n, void *arg) {
  fx_t *f = arg;
  f->bins++;
  f->bin_len = n;
  if (f->echo)
    assert_int_equal(pa_ws_send_binary(ws, d, n), 0);
}

static void on_close(struct pa_ws *ws, void *arg) {
  fx_t *f = arg;
  f->closes++;
  f->ws = NULL;
}

static const struct pa_ws_cbs cbs = {on_text, on_binary, on_close, NULL};

static const char *head_with(const char *extra_headers) {
  static char h[1024];
  snprintf(h, sizeof h,
           "GET /ws?token=x HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           "Upgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"
           "Sec-WebSocket-Key: " RFC_KEY "\r\n"
           "Sec-WebSocket-Version: 13\r\n%s\r\n",
           extra_headers);
  return h;
}

static void pump(fx_t *f, int rounds) {
  for (int i = 0; i < rounds; i++) {
    event_base_loop(f->base, EVLOOP_NONBLOCK);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

/* Reads exactly n bytes from the client end, pumping the loop meanwhile. */
static void client_read(fx_t *f, void *buf, size_t n) {
  size_t got = 0;
  for (int i = 0; i < 5000 && got < n; i++) {
    pump(f, 1);
    ssize_t r = recv(f->cfd, (char *)buf + got, n - got, MSG_DONTWAIT);
    if (r > 0)
      got += (size_t)r;
  }
  assert_int_equal(got, n);
}

/* Reads the response head (up to the blank line) into out. */
static void client_read_head(fx_t *f, char *out, size_t cap) {
  size_t n = 0;
  while (n + 1 < cap) {
    client_read(f, out + n, 1);
    n++;
    out[n] = '\0';
    if (n >= 4 && memcmp(out + n - 4, "\r\n\r\n", 4) == 0)
      return;
  }
  fail_msg("response head too long");
}

static void client_frame(fx_t *f, int fin, int opcode, const void *p,
                         size_t n) {
  uint8_t *b = malloc(n + 14);
  size_t o = 0;
  b[o++] = (uint8_t)((fin ? 0x80 : 0) | opcode);
  if (n < 126) {
    b[o++] = (uint8_t)(0x80 | n);
  } else if (n < 65536) {
    b[o++] = 0x80 | 126;
    b[o++] = (uint8_t)(n >> 8);
    b[o++] = (uint8_t)n;
  } else {
    b[o++] = 0x80 | 127;
    for (int i = 7; i >= 0; i--)
      b[o++] = (uint8_t)((uint64_t)n >> (8 * i));
  }
  const uint8_t mask[4] = {0x37, 0xfa, 0x21, 0x3d};
  memcpy(b + o, mask, 4);
  o += 4;
  for (size_t i = 0; i < n; i++)
    b[o + i] = ((const uint8_t *)p)[i] ^ mask[i % 4];
  size_t total = o + n, sent = 0;
  while (sent < total) {
    ssize_t w =
        send(f->cfd, b + sent, total - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w > 0)
      sent += (size_t)w;
    else if (errno == EPIPE || errno == ECONNRESET)
      break; /* the server has closed: what we meant to say is moot */
    else
      pump(f, 1);
  }
  free(b);
}

/* One server frame: returns its opcode, payload into *out (malloc'd). */
static int client_recv_frame(fx_t *f, uint8_t **out, size_t *n) {
  uint8_t h[2];
  client_read(f, h, 2);
  assert_int_equal(h[1] & 0x80, 0); /* a server never masks */
  uint64_t len = h[1] & 0x7f;
  if (len == 126) {
    uint8_t e[2];
    client_read(f, e, 2);
    len = (uint64_t)e[0] << 8 | e[1];
  } else if (len == 127) {
    uint8_t e[8];
    client_read(f, e, 8);
    len = 0;
    for (int i = 0; i < 8; i++)
      len = len << 8 | e[i];
  }
  *out = malloc(len + 1);
  if (len)
    client_read(f, *out, (size_t)len);
  *n = (size_t)len;
  return h[0] & 0x0f;
}

static fx_t *fx_open(const char *head, const char *const *protos,
                     const struct pa_ws_limits *lim, char *err) {
  fx_t *f = calloc(1, sizeof *f);
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  f->base = event_base_new();
  f->cfd = sv[0];
  f->ws = pa_ws_accept(f->base, sv[1], head, strlen(head), NULL, 0, protos, lim,
                       &cbs, f, err, 160);
  return f;
}

static void fx_close(fx_t *f) {
  if (f->ws)
    pa_ws_free(f->ws);
  close(f->cfd);
  event_base_free(f->base);
  free(f);
}

static void expect_101(fx_t *f, const char *proto) {
  char resp[512];
  client_read_head(f, resp, sizeof resp);
  assert_non_null(strstr(resp, "HTTP/1.1 101 "));
  assert_non_null(strstr(resp, "Sec-WebSocket-Accept: " RFC_ACCEPT "\r\n"));
  if (proto) {
    char want[128];
    snprintf(want, sizeof want, "Sec-WebSocket-Protocol: %s\r\n", proto);
    assert_non_null(strstr(resp, want));
  } else {
    assert_null(strstr(resp, "Sec-WebSocket-Protocol"));
  }
}

static void test_parse_head(void **state) {
  char path[64], err[160];
  const char *h = head_with("");
  assert_int_equal(
      pa_ws_parse_head(h, strlen(h), path, sizeof path, err, sizeof err), 1);
  assert_string_equal(path, "/ws");
  const char *plain = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  assert_int_equal(pa_ws_parse_head(plain, strlen(plain), path, sizeof path,
                                    err, sizeof err),
                   0);
  assert_string_equal(path, "/metrics");
  const char *v8 = "GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: "
                   "Upgrade\r\nSec-WebSocket-Version: 8\r\n"
                   "Sec-WebSocket-Key: " RFC_KEY "\r\n\r\n";
  assert_int_equal(
      pa_ws_parse_head(v8, strlen(v8), path, sizeof path, err, sizeof err), -1);
  assert_non_null(strstr(err, "Version"));
  const char *badkey = "GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: "
                       "Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                       "Sec-WebSocket-Key: c2hvcnQ=\r\n\r\n";
  assert_int_equal(pa_ws_parse_head(badkey, strlen(badkey), path, sizeof path,
                                    err, sizeof err),
                   -1);
  assert_non_null(strstr(err, "Key"));
  const char *post = "POST / HTTP/1.1\r\nUpgrade: websocket\r\n\r\n";
  assert_int_equal(
      pa_ws_parse_head(post, strlen(post), path, sizeof path, err, sizeof err),
      -1);
  assert_int_equal(
      pa_ws_parse_head("garbage", 7, path, sizeof path, err, sizeof err), -1);
  char v[32];
  assert_int_equal(
      pa_ws_header(h, strlen(h), "sec-websocket-version", v, sizeof v), 2);
  assert_string_equal(v, "13");
  assert_int_equal(pa_ws_header(h, strlen(h), "X-Nope", v, sizeof v), -1);
}

static void test_echo_text_binary_fragments(void **state) {
  char err[160];
  fx_t *f = fx_open(head_with(""), NULL, NULL, err);
  assert_non_null(f->ws);
  f->echo = true;
  expect_101(f, NULL);
  assert_string_equal(pa_ws_path(f->ws), "/ws");

  client_frame(f, 1, 1, "hello", 5);
  uint8_t *p;
  size_t n;
  assert_int_equal(client_recv_frame(f, &p, &n), 1);
  assert_int_equal(n, 5);
  assert_memory_equal(p, "hello", 5);
  free(p);

  /* A message in two fragments arrives whole. */
  client_frame(f, 0, 1, "frag", 4);
  client_frame(f, 1, 0, "ment", 4);
  assert_int_equal(client_recv_frame(f, &p, &n), 1);
  assert_int_equal(n, 8);
  assert_memory_equal(p, "fragment", 8);
  free(p);
  assert_int_equal(f->texts, 2);

  /* 70,000 bytes take the 64-bit length form both ways. */
  size_t big = 70000;
  uint8_t *data = malloc(big);
  for (size_t i = 0; i < big; i++)
    data[i] = (uint8_t)(i * 7);
  client_frame(f, 1, 2, data, big);
  assert_int_equal(client_recv_frame(f, &p, &n), 2);
  assert_int_equal(n, big);
  assert_memory_equal(p, data, big);
  free(p);
  free(data);
  assert_int_equal(f->bins, 1);
  fx_close(f);
}

static void test_subprotocols(void **state) {
  const char *ours[] = {"foxglove.websocket.v1", "foxglove.sdk.v1", NULL};
  char err[160];
  fx_t *f =
      fx_open(head_with("Sec-WebSocket-Protocol: x.y, foxglove.sdk.v1\r\n"),
              ours, NULL, err);
  assert_non_null(f->ws);
  expect_101(f, "foxglove.sdk.v1");
  assert_string_equal(pa_ws_subprotocol(f->ws), "foxglove.sdk.v1");
  fx_close(f);

  /* None of ours offered: a 400 naming what we want, and no connection. */
  f = fx_open(head_with("Sec-WebSocket-Protocol: chat\r\n"), ours, NULL, err);
  assert_null(f->ws);
  assert_non_null(strstr(err, "foxglove.websocket.v1"));
  char resp[256] = "";
  ssize_t r = recv(f->cfd, resp, sizeof resp - 1, 0);
  assert_true(r > 0);
  assert_non_null(strstr(resp, "400 Bad Request"));
  assert_int_equal(recv(f->cfd, resp, 1, 0), 0); /* closed */
  fx_close(f);

  /* Not an upgrade at all. */
  const char *plain = "GET / HTTP/1.1\r\n\r\n";
  f = fx_open(plain, NULL, NULL, err);
  assert_null(f->ws);
  assert_non_null(strstr(err, "not a WebSocket upgrade"));
  fx_close(f);
}

static void test_limits(void **state) {
  struct pa_ws_limits lim = {.max_message = 1000, .max_queued = 1000};
  char err[160];
  fx_t *f = fx_open(head_with(""), NULL, &lim, err);
  assert_non_null(f->ws);
  expect_101(f, NULL);
  /* Nothing reaches the socket until the loop runs: the second message
   * would pass max_queued and is refused. */
  char msg[600];
  memset(msg, 'a', sizeof msg);
  assert_int_equal(pa_ws_send_text(f->ws, msg, sizeof msg), 0);
  assert_true(pa_ws_queued(f->ws) >= sizeof msg);
  assert_int_equal(pa_ws_send_text(f->ws, msg, sizeof msg), -1);
  uint8_t *p;
  size_t n;
  assert_int_equal(client_recv_frame(f, &p, &n), 1);
  assert_int_equal(n, sizeof msg);
  free(p);
  pump(f, 3);
  assert_int_equal(pa_ws_queued(f->ws), 0);
  assert_int_equal(pa_ws_send_text(f->ws, msg, sizeof msg), 0);
  assert_int_equal(client_recv_frame(f, &p, &n), 1);
  free(p);

  /* A message over max_message: closed with 1009, on_close once. */
  char big[1500];
  memset(big, 'b', sizeof big);
  client_frame(f, 1, 1, big, sizeof big);
  assert_int_equal(client_recv_frame(f, &p, &n), 8);
  assert_true(n >= 2);
  assert_int_equal(p[0] << 8 | p[1], 1009);
  free(p);
  assert_int_equal(f->texts, 0);
  client_frame(f, 1, 8, "\x03\xf1", 2); /* answer (it may be gone) */
  pump(f, 20);
  assert_int_equal(f->closes, 1);
  assert_null(f->ws);
  fx_close(f);
}

static void test_close_handshakes(void **state) {
  char err[160];
  uint8_t *p;
  size_t n;
  /* Server-initiated. */
  fx_t *f = fx_open(head_with(""), NULL, NULL, err);
  expect_101(f, NULL);
  pa_ws_close(f->ws, 1001, "going away");
  assert_int_equal(pa_ws_send_text(f->ws, "x", 1), -1);
  assert_int_equal(client_recv_frame(f, &p, &n), 8);
  assert_int_equal(p[0] << 8 | p[1], 1001);
  assert_memory_equal(p + 2, "going away", 10);
  free(p);
  assert_int_equal(f->closes, 0);
  client_frame(f, 1, 8, "\x03\xe9", 2);
  pump(f, 20);
  assert_int_equal(f->closes, 1);
  fx_close(f);

  /* Client-initiated: the server answers and ends. */
  f = fx_open(head_with(""), NULL, NULL, err);
  expect_101(f, NULL);
  client_frame(f, 1, 8, "\x03\xe8", 2);
  assert_int_equal(client_recv_frame(f, &p, &n), 8);
  assert_int_equal(p[0] << 8 | p[1], 1000);
  free(p);
  pump(f, 20);
  assert_int_equal(f->closes, 1);
  fx_close(f);

  /* The peer just vanishes. */
  f = fx_open(head_with(""), NULL, NULL, err);
  expect_101(f, NULL);
  shutdown(f->cfd, SHUT_RDWR);
  pump(f, 20);
  assert_int_equal(f->closes, 1);
  fx_close(f);
}

static void test_free_in_callback_and_extra_bytes(void **state) {
  char err[160];
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  fx_t *f = calloc(1, sizeof *f);
  f->base = event_base_new();
  f->cfd = sv[0];
  f->free_in_cb = true;
  /* A masked "hi" that came in the same read as the head. */
  const uint8_t extra[] = {0x81, 0x82, 1, 2, 3, 4, 'h' ^ 1, 'i' ^ 2,
                           0x81, 0x82, 1, 2, 3, 4, 'h' ^ 1, 'i' ^ 2};
  const char *h = head_with("");
  f->ws = pa_ws_accept(f->base, sv[1], h, strlen(h), extra, sizeof extra, NULL,
                       NULL, &cbs, f, err, sizeof err);
  assert_non_null(f->ws);
  assert_int_equal(f->texts, 0); /* framed from the loop, not in accept */
  pump(f, 20);
  /* The first message freed the connection from inside its callback; the
   * second was never delivered and nothing was touched after the free. */
  assert_int_equal(f->texts, 1);
  assert_memory_equal(f->last, "hi", 2);
  assert_int_equal(f->closes, 1);
  assert_null(f->ws);
  fx_close(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_head),
      cmocka_unit_test(test_echo_text_binary_fragments),
      cmocka_unit_test(test_subprotocols),
      cmocka_unit_test(test_limits),
      cmocka_unit_test(test_close_handshakes),
      cmocka_unit_test(test_free_in_callback_and_extra_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
