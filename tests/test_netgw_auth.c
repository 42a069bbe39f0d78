/* test_netgw_auth.c - with --token, no front-end serves a connection
 * before it authenticates. The test walks pa-netgw's front-end table: every
 * row that takes the token has a probe here that tries its listeners (and,
 * for line protocols, its lines) without credentials, with wrong ones and
 * with the token; a row whose protocol cannot carry a token must listen on
 * loopback only. A row without a probe fails the test: a new front-end
 * comes with its probe. Real processes (the launcher starts the stack). */
#define _GNU_SOURCE
#include "netgw_int.h"
#include "test_launch_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#define TOKEN "s3cret"

static lt_stack T;

static unsigned port_of(const char *name) {
  pa_port_rec r[PA_PORTS_MAX];
  size_t n = pa_stack_ports_read(&T.s, r);
  for (size_t i = 0; i < n; i++)
    if (!strcmp(r[i].name, name) && r[i].up)
      return r[i].port;
  return 0;
}

/* One line from fd within 5 s, read a byte at a time (nothing is left
 * buffered for a later socket with the same fd number). */
static int read_line(int fd, char *buf, size_t n) {
  size_t k = 0;
  int64_t end = pa_test_now_ms() + 5000;
  while (k + 1 < n && pa_test_now_ms() < end) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 100) <= 0)
      continue;
    char ch;
    if (recv(fd, &ch, 1, 0) != 1)
      break;
    if (ch == '\n') {
      buf[k] = 0;
      return (int)k;
    }
    buf[k++] = ch;
  }
  buf[k] = 0;
  return k ? (int)k : -1;
}

/* Sends req on a new connection; the first line of the answer. */
static void exchange(unsigned port, const char *req, char *line, size_t n) {
  int fd = pa_test_tcp_connect((uint16_t)port);
  assert_true(fd >= 0);
  assert_int_equal(pa_test_send_str(fd, req), 0);
  line[0] = 0;
  read_line(fd, line, n);
  close(fd);
}

/* text and JSON lines on the control port */
static void probe_text(unsigned port) {
  char l[512];
  exchange(port, "ping\n", l, sizeof l);
  assert_non_null(strstr(l, "not_authorized"));
  exchange(port, "auth nope\nping\n", l, sizeof l);
  assert_non_null(strstr(l, "not_authorized"));
  int fd = pa_test_tcp_connect((uint16_t)port);
  assert_int_equal(pa_test_send_str(fd, "auth " TOKEN "\nping\n"), 0);
  assert_true(read_line(fd, l, sizeof l) >= 0);
  if (strcmp(l, "pong")) /* auth may answer ok first */
    assert_true(read_line(fd, l, sizeof l) >= 0);
  assert_string_equal(l, "pong");
  close(fd);
}

static void probe_json(unsigned port) {
  char l[1024];
  exchange(port,
           "{\"type\":\"command\",\"protocol_version\":2,\"action\":"
           "\"get_state\",\"data\":{\"robot\":0}}\n",
           l, sizeof l);
  assert_non_null(strstr(l, "not_authorized"));
  int fd = pa_test_tcp_connect((uint16_t)port);
  assert_int_equal(
      pa_test_send_str(
          fd, "{\"type\":\"command\",\"protocol_version\":2,\"action\":"
              "\"auth\",\"data\":{\"token\":\"" TOKEN "\"}}\n"
              "{\"type\":\"command\",\"protocol_version\":2,\"action\":"
              "\"get_state\",\"data\":{\"robot\":0}}\n"),
      0);
  assert_true(read_line(fd, l, sizeof l) > 0);
  assert_null(strstr(l, "error"));
  assert_true(read_line(fd, l, sizeof l) > 0);
  assert_null(strstr(l, "not_authorized"));
  assert_non_null(strstr(l, "\"pose\""));
  close(fd);
}

/* An HTTP request's status code. */
static int http_status(unsigned port, const char *path, const char *hdrs) {
  char req[1024], l[512];
  snprintf(req, sizeof req,
           "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n%sConnection: "
           "close\r\n\r\n",
           path, port, hdrs);
  exchange(port, req, l, sizeof l);
  int code = 0;
  sscanf(l, "HTTP/1.1 %d", &code);
  return code;
}

#define UPGRADE                                                                \
  "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: "       \
  "13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"

static void probe_web(unsigned port) {
  assert_int_equal(http_status(port, "/api/status", ""), 401);
  assert_int_equal(
      http_status(port, "/api/status", "Authorization: Bearer nope\r\n"), 401);
  assert_int_equal(
      http_status(port, "/api/status", "Authorization: Bearer " TOKEN "\r\n"),
      200);
  assert_int_equal(http_status(port, "/api/status?token=" TOKEN, ""), 200);
  assert_int_equal(http_status(port, "/ws", UPGRADE), 401);
  assert_int_equal(http_status(port, "/ws?token=" TOKEN, UPGRADE), 101);
}

static void probe_foxglove(unsigned port) {
  const char *proto =
      UPGRADE "Sec-WebSocket-Protocol: foxglove.websocket.v1\r\n";
  char h[512];
  assert_int_equal(http_status(port, "/", proto), 401);
  assert_int_equal(http_status(port, "/?token=nope", proto), 401);
  /* as Lichtblick and Foxglove take it typed: ws://host:port/?token=... */
  assert_int_equal(http_status(port, "/?token=" TOKEN, proto), 101);
  snprintf(h, sizeof h, "%sAuthorization: Bearer " TOKEN "\r\n", proto);
  assert_int_equal(http_status(port, "/", h), 101);
}

/* n bytes from fd within 5 s: n, or less when it closed first. */
static size_t read_n(int fd, uint8_t *buf, size_t n) {
  size_t k = 0;
  int64_t end = pa_test_now_ms() + 5000;
  while (k < n && pa_test_now_ms() < end) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 100) <= 0)
      continue;
    ssize_t r = recv(fd, buf + k, n - k, 0);
    if (r <= 0)
      break;
    k += (size_t)r;
  }
  return k;
}

static void put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* A Player request to player:0 (subtype 7 AUTH with key, else 1 DEVLIST)
 * after the greeting: the reply's message type (4 ACK), or 0 when the
 * connection closed without one. */
static uint32_t player_try(unsigned port, const char *key) {
  int fd = pa_test_tcp_connect((uint16_t)port);
  assert_true(fd >= 0);
  uint8_t buf[128] = {0};
  assert_int_equal(read_n(fd, buf, 32), 32);
  assert_memory_equal(buf, "Player v.", 9);
  size_t kl = key ? strlen(key) : 0, body = key ? 8 + ((kl + 3) & ~3u) : 0;
  memset(buf, 0, sizeof buf);
  put32(buf + 8, 1);               /* interf player */
  put32(buf + 16, 3);              /* REQ */
  put32(buf + 20, key ? 7 : 1);    /* AUTH or DEVLIST */
  put32(buf + 36, (uint32_t)body); /* size */
  if (key) {
    put32(buf + 40, (uint32_t)kl);
    put32(buf + 44, (uint32_t)kl);
    memcpy(buf + 48, key, kl);
  }
  assert_int_equal(send(fd, buf, 40 + body, 0), (ssize_t)(40 + body));
  uint32_t type = 0;
  if (read_n(fd, buf, 40) == 40)
    type = (uint32_t)buf[16] << 24 | (uint32_t)buf[17] << 16 |
           (uint32_t)buf[18] << 8 | buf[19];
  close(fd);
  return type;
}

/* Player: the first message must be AUTH with the token, else closed */
static void probe_player(unsigned port) {
  assert_int_equal(player_try(port, NULL), 0);
  assert_int_equal(player_try(port, "nope"), 0);
  assert_int_equal(player_try(port, TOKEN), 4);
}

/* The UDP port's local address in /proc/net/udp is 127.0.0.1. */
static bool udp_loopback_only(unsigned port) {
  FILE *f = fopen("/proc/net/udp", "r");
  assert_non_null(f);
  char line[512];
  bool found = false, loop = true;
  while (fgets(line, sizeof line, f)) {
    unsigned a, p;
    if (sscanf(line, " %*d: %8X:%4X", &a, &p) != 2 || p != port)
      continue;
    found = true;
    if (a != htonl(INADDR_LOOPBACK))
      loop = false;
  }
  fclose(f);
  return found && loop;
}

typedef struct probe {
  const char *frontend;
  void (*fn)(unsigned port); /* NULL: a row without listeners */
  const char *listener;      /* whose port fn gets */
} probe;

static const probe probes[] = {
    {"text", probe_text, "tcp"}, {"json", probe_json, "tcp"},
    {"web", probe_web, "http"},  {"foxglove", probe_foxglove, "foxglove"},
    {"raisim", NULL, NULL},      {"player", probe_player, "player"},
};

static void test_token_every_frontend(void **state) {
  (void)state;
  int rows = 0;
  for (const pa_frontend *const *f = pa_frontends; *f; f++, rows++) {
    const pa_frontend *fe = *f;
    if (!fe->token) {
      /* cannot carry a token: loopback only, whatever --bind says */
      for (unsigned i = 0; i < fe->n_listeners; i++) {
        unsigned p = port_of(fe->listeners[i].name);
        assert_true(p > 0);
        if (fe->listeners[i].kind == PA_PORT_UDP && !udp_loopback_only(p)) {
          fprintf(stderr, "%s: %s listens beyond loopback\n", fe->name,
                  fe->listeners[i].name);
          fail();
        }
      }
      continue;
    }
    const probe *pr = NULL;
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++)
      if (!strcmp(probes[i].frontend, fe->name))
        pr = &probes[i];
    if (!pr) {
      fprintf(stderr,
              "front-end '%s' takes the token but has no probe in "
              "test_netgw_auth.c: add one\n",
              fe->name);
      fail();
    }
    if (!pr->fn) {
      assert_int_equal(fe->n_listeners, 0); /* nothing to guard */
      continue;
    }
    unsigned p = port_of(pr->listener);
    assert_true(p > 0);
    pr->fn(p);
  }
  assert_true(rows >= 6);
}

static int setup(void **state) {
  (void)state;
  const char *extra[] = {"--no-render", "--token",
                         TOKEN,         "--bind",
                         "0.0.0.0",     "--world",
                         "ssl-a",       "--http_port",
                         "-1",          "--foxglove_port",
                         "-1",          "--player_port",
                         "-1",          "--ssl_control_port",
                         "0",           "--ssl_blue_port",
                         "0",           "--ssl_yellow_port",
                         "0",           "--no_beacon",
                         NULL};
  if (lt_start(&T, "auth", extra, 60000) != 0)
    return -1;
  usleep(300000); /* the SSL ports open at start or the first poll */
  return 0;
}

static int teardown(void **state) {
  (void)state;
  return lt_stop(&T, 30000) == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_token_every_frontend),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
