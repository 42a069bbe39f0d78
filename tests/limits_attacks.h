/* limits_attacks.h - the attacks of issue 32 on a running pa-netgw, a
 * bystander that pings every 100 ms (and streams odometry) meanwhile, and
 * the measures: the bystander's latencies, pa-netgw's RSS. Header-only
 * (static functions) for test_netgw_limits.c and test_soak.c. Attackers
 * connect from 127.0.x.y addresses of their own, as many machines would,
 * so that the per-peer cap does not refuse the attack before it starts. */
#ifndef PA_LIMITS_ATTACKS_H
#define PA_LIMITS_ATTACKS_H

#include "pa_shm.h"
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>

#define LA_MAX_FDS 1024
#define LA_MAX_PINGS 8192

/* An attacking connection: `unit` sent `left` more times, never read. */
typedef struct la_fd {
  int fd;
  const char *unit;
  size_t ulen, off;
  long left;
} la_fd;

typedef struct la_by {
  uint16_t port;
  atomic_bool stop;
  pthread_t th;
  int64_t lat[LA_MAX_PINGS]; /* [ms] */
  int n, lost;
  long odom; /* odometry datagrams received */
} la_by;

typedef struct la_ctx {
  uint16_t port, http, fox; /* pa-netgw's TCP, HTTP and Foxglove ports */
  pid_t gw;                 /* pa-netgw */
  const char *gw_log;       /* its log, or NULL */
  la_by by;
  la_fd fds[LA_MAX_FDS];
  int nfds;
  long rss_max_kb;
} la_ctx;

/* A TCP connection from src (a 127.x.y.z address) to 127.0.0.1:port, or
 * -1. */
static inline int la_connect_from(const char *src, uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in a = {.sin_family = AF_INET};
  inet_pton(AF_INET, src, &a.sin_addr);
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      connect(fd, (struct sockaddr *)&to, sizeof to) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Reads what arrives within ms (at least one byte), NUL-terminated. */
static inline int la_read_some(int fd, char *buf, size_t n, int ms) {
  size_t got = 0;
  int64_t end = pa_test_now_ms() + ms;
  while (got + 1 < n) {
    int64_t left = end - pa_test_now_ms();
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (left <= 0 || poll(&p, 1, got ? 50 : (int)left) <= 0)
      break;
    ssize_t r = recv(fd, buf + got, n - 1 - got, 0);
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  buf[got] = '\0';
  return (int)got;
}

/* Everything until the peer closes (or ms pass): a whole response. */
static inline int la_read_all(int fd, char *buf, size_t n, int ms) {
  size_t got = 0;
  int64_t end = pa_test_now_ms() + ms;
  while (got + 1 < n) {
    int64_t left = end - pa_test_now_ms();
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (left <= 0 || poll(&p, 1, (int)left) <= 0)
      break;
    ssize_t r = recv(fd, buf + got, n - 1 - got, 0);
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  buf[got] = '\0';
  return (int)got;
}

/* ---- the bystander
 * ---------------------------------------------------------*/

static inline void *la_by_run(void *arg) {
  la_by *b = arg;
  /* odom goes to the TCP connection's own address: bind the UDP port there */
  uint16_t up = 0;
  int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in ua = {.sin_family = AF_INET};
  socklen_t ul = sizeof ua;
  inet_pton(AF_INET, "127.0.0.250", &ua.sin_addr);
  if (u >= 0 && (bind(u, (struct sockaddr *)&ua, sizeof ua) != 0 ||
                 getsockname(u, (struct sockaddr *)&ua, &ul) != 0)) {
    close(u);
    u = -1;
  }
  up = u >= 0 ? ntohs(ua.sin_port) : 0;
  int fd = la_connect_from("127.0.0.250", b->port);
  char line[256];
  if (fd >= 0 && u >= 0) {
    snprintf(line, sizeof line, "sub odom %u\n", up); /* no reply */
    pa_test_send_str(fd, line);
  }
  while (!atomic_load(&b->stop) && b->n < LA_MAX_PINGS) {
    int64_t t0 = pa_test_now_ms();
    if (fd < 0 || pa_test_send_str(fd, "ping\n") != 0 ||
        pa_test_read_line(fd, line, sizeof line, 5000) < 0 ||
        strcmp(line, "pong") != 0) {
      b->lost++;
      if (fd >= 0)
        close(fd);
      fd = la_connect_from("127.0.0.250", b->port);
    } else {
      b->lat[b->n++] = pa_test_now_ms() - t0;
    }
    uint8_t d[256];
    while (u >= 0 && recv(u, d, sizeof d, MSG_DONTWAIT) > 0)
      b->odom++;
    int64_t next = t0 + 100;
    while (pa_test_now_ms() < next && !atomic_load(&b->stop))
      usleep(5000);
  }
  if (fd >= 0)
    close(fd);
  if (u >= 0)
    close(u);
  return NULL;
}

/* Attacks on pa-netgw (pid gw) on a stack whose control block is ctl. */
static inline void la_begin(la_ctx *x, const pa_ctl *ctl, pid_t gw,
                            const char *gw_log) {
  memset(x, 0, sizeof *x);
  x->port = (uint16_t)__atomic_load_n(&ctl->tcp_port, __ATOMIC_ACQUIRE);
  x->http = (uint16_t)__atomic_load_n(&ctl->http_port, __ATOMIC_ACQUIRE);
  x->fox = (uint16_t)__atomic_load_n(&ctl->foxglove_port, __ATOMIC_ACQUIRE);
  x->gw = gw;
  x->gw_log = gw_log;
  x->by.port = x->port;
  atomic_init(&x->by.stop, false);
}

static inline void la_bystander_start(la_ctx *x) {
  pthread_create(&x->by.th, NULL, la_by_run, &x->by);
  usleep(300000); /* connected and subscribed before the attack */
}

static inline void la_bystander_stop(la_ctx *x) {
  atomic_store(&x->by.stop, true);
  pthread_join(x->by.th, NULL);
}

static inline int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static inline int64_t la_p99(la_ctx *x) {
  if (!x->by.n)
    return INT64_MAX;
  int64_t s[LA_MAX_PINGS];
  memcpy(s, x->by.lat, sizeof s[0] * (size_t)x->by.n);
  qsort(s, (size_t)x->by.n, sizeof s[0], cmp_i64);
  int i = x->by.n * 99 / 100;
  return s[i < x->by.n ? i : x->by.n - 1];
}

/* pa-netgw's RSS bound: 256 MB; an ASan build's own memory (shadow,
 * redzones, the quarantine of freed blocks, cut to 32 MB by la_begin)
 * comes on top, about as much again. */
#if defined(__SANITIZE_ADDRESS__)
#define LA_RSS_MAX_KB (512l * 1024)
#else
#define LA_RSS_MAX_KB (256l * 1024)
#endif

/* ASan's quarantine of freed memory defaults to 256 MB: a short one for the
 * processes a test starts from now on (their RSS is measured). */
static inline void la_asan_quarantine(void) {
#if defined(__SANITIZE_ADDRESS__)
  const char *o = getenv("ASAN_OPTIONS");
  if (!o || !strstr(o, "quarantine_size_mb")) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s%squarantine_size_mb=32", o ? o : "",
             o && *o ? ":" : "");
    setenv("ASAN_OPTIONS", buf, 1);
  }
#endif
}

/* The machine runs more than twice as many threads as it has cores (the
 * 1-minute load average): pings then wait for a CPU, whatever pa-netgw
 * does. */
static inline bool la_overloaded(void) {
  double load = 0;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f && fscanf(f, "%lf", &load) != 1)
    load = 0;
  if (f)
    fclose(f);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return load > 2.0 * (double)(cpus > 0 ? cpus : 1);
}

/* The bystander's bounds: p99 under 100 ms (at most 1 % of the pings
 * slower, and one: a scheduler's hiccup) and none near the watchdog's 2 s;
 * on an overloaded machine only the latter (printed). True when met. */
static inline bool la_latency_ok(const la_ctx *x) {
  int64_t worst = 0;
  int slow = 0;
  for (int i = 0; i < x->by.n; i++) {
    worst = x->by.lat[i] > worst ? x->by.lat[i] : worst;
    slow += x->by.lat[i] >= 100 * PA_TEST_SLOW;
  }
  if (la_overloaded()) {
    fprintf(stderr, "  (machine overloaded: p99 < 100 ms not asserted, only "
                    "no ping near 2 s)\n");
    return worst < 1500 * PA_TEST_SLOW;
  }
  return slow <= 1 + x->by.n / 100 && worst < 1000 * PA_TEST_SLOW;
}

static inline long la_rss_kb(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmRSS:", 6))
      kb = strtol(line + 6, NULL, 10);
  if (f)
    fclose(f);
  return kb;
}

/* Sends more of every attacker's units, as far as its socket takes them. */
static inline void la_pump(la_ctx *x) {
  for (int i = 0; i < x->nfds; i++) {
    la_fd *a = &x->fds[i];
    for (int k = 0; a->fd >= 0 && a->left > 0 && k < 4096; k++) {
      ssize_t w = send(a->fd, a->unit + a->off, a->ulen - a->off,
                       MSG_DONTWAIT | MSG_NOSIGNAL);
      if (w <= 0) {
        if (w < 0 && errno != EAGAIN && errno != EINTR)
          a->left = 0; /* closed on us: done */
        break;
      }
      a->off += (size_t)w;
      if (a->off == a->ulen) {
        a->off = 0;
        a->left--;
      }
    }
  }
}

static inline void la_sample_rss(la_ctx *x) {
  la_pump(x);
  long kb = la_rss_kb(x->gw);
  if (kb > x->rss_max_kb)
    x->rss_max_kb = kb;
}

static inline void la_add(la_ctx *x, int fd, const char *unit, size_t ulen,
                          long times) {
  if (fd < 0 || x->nfds == LA_MAX_FDS)
    return;
  x->fds[x->nfds++] = (la_fd){fd, unit, ulen, 0, times};
}

static inline void la_report(la_ctx *x, const char *name) {
  int64_t worst = 0;
  for (int i = 0; i < x->by.n; i++)
    worst = x->by.lat[i] > worst ? x->by.lat[i] : worst;
  fprintf(stderr,
          "  %s: %d attackers, bystander %d pings (%d lost), p99 %lld ms, "
          "worst %lld ms, %ld odom frames; pa-netgw RSS max %ld MB\n",
          name, x->nfds, x->by.n, x->by.lost, (long long)la_p99(x),
          (long long)worst, x->by.odom, x->rss_max_kb / 1024);
  if (worst >= 100) { /* when, to tell a stall from a scheduler hiccup */
    fprintf(stderr, "  pings [ms]:");
    for (int i = 0; i < x->by.n; i++)
      fprintf(stderr, " %lld", (long long)x->by.lat[i]);
    fprintf(stderr, "\n");
    if (getenv("PA_DEBUG_SLOW") && x->gw_log)
      pa_test_dump_file(x->gw_log);
  }
}

static inline void la_end(la_ctx *x) {
  for (int i = 0; i < x->nfds; i++)
    if (x->fds[i].fd >= 0)
      close(x->fds[i].fd);
  x->nfds = 0;
}

/* ---- WebSocket
 * -------------------------------------------------------------*/

/* Opens a WebSocket from src to port/path (subprotocol proto and Origin
 * origin, each optional): the fd after a 101, or -1. */
static inline int la_ws_open(const char *src, uint16_t port, const char *path,
                             const char *proto, const char *origin) {
  int fd = la_connect_from(src, port);
  if (fd < 0)
    return -1;
  char req[1024], resp[2048];
  int n = snprintf(req, sizeof req,
                   "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nUpgrade: "
                   "websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: "
                   "dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n",
                   path, port);
  if (proto)
    n += snprintf(req + n, sizeof req - (size_t)n,
                  "Sec-WebSocket-Protocol: %s\r\n", proto);
  if (origin)
    n += snprintf(req + n, sizeof req - (size_t)n, "Origin: %s\r\n", origin);
  snprintf(req + n, sizeof req - (size_t)n, "\r\n");
  if (pa_test_send_str(fd, req) != 0) {
    close(fd);
    return -1;
  }
  /* the head only: a byte at a time up to its blank line */
  size_t got = 0;
  int64_t end = pa_test_now_ms() + 3000;
  while (got + 1 < sizeof resp && pa_test_now_ms() < end) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 100) <= 0)
      continue;
    if (recv(fd, resp + got, 1, 0) != 1)
      break;
    got++;
    resp[got] = '\0';
    if (got >= 4 && !memcmp(resp + got - 4, "\r\n\r\n", 4))
      break;
  }
  resp[got] = '\0';
  if (strncmp(resp, "HTTP/1.1 101", 12) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* A masked client frame (opcode, payload n <= 125 bytes) into out. */
static inline size_t la_ws_frame(uint8_t *out, int opcode, const char *p,
                                 size_t n) {
  static const uint8_t mask[4] = {1, 2, 3, 4};
  out[0] = (uint8_t)(0x80 | opcode);
  out[1] = (uint8_t)(0x80 | n);
  memcpy(out + 2, mask, 4);
  for (size_t i = 0; i < n; i++)
    out[6 + i] = (uint8_t)p[i] ^ mask[i % 4];
  return n + 6;
}

/* ---- the attacks
 * -----------------------------------------------------------*/

static const char la_terrain[] =
    "{\"type\":\"command\",\"action\":\"get_terrain_grid\"}\n";

/* #1: 100 clients (25 per address) each pipelining 40 get_terrain_grid,
 * never reading. */
static inline void la_tcp_pipeline(la_ctx *x) {
  for (int i = 0; i < 100; i++) {
    char src[32];
    snprintf(src, sizeof src, "127.0.1.%d", 1 + i / 25);
    la_add(x, la_connect_from(src, x->port), la_terrain, sizeof la_terrain - 1,
           40);
  }
  la_pump(x);
}

static const char la_get_viewer[] =
    "GET /viewer.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

/* #2: 8 connections pipelining GET /viewer.js, 2 MB of requests in all. */
static inline void la_http_pipeline(la_ctx *x) {
  long each = (2l << 20) / 8 / (long)(sizeof la_get_viewer - 1);
  for (int i = 0; i < 8; i++)
    la_add(x, la_connect_from("127.0.2.1", x->http), la_get_viewer,
           sizeof la_get_viewer - 1, each);
  la_pump(x);
}

static char la_zeros[65536];
static const char la_post_upload[] =
    "POST /api/upload?name=a.png HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    "Content-Length: 33554432\r\n\r\n";
static const char la_post_other[] =
    "POST /viewer.js HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    "Content-Length: 33554432\r\n\r\n";

/* #3: 48 POSTs announcing 32 MiB, sending up to all of it. */
static inline void la_post_bodies(la_ctx *x) {
  for (int i = 0; i < 48; i++) {
    char src[32];
    snprintf(src, sizeof src, "127.0.3.%d", 1 + i / 24);
    int fd = la_connect_from(src, x->http);
    const char *h = i % 2 ? la_post_upload : la_post_other;
    if (fd >= 0 && pa_test_send_str(fd, h) == 0)
      la_add(x, fd, la_zeros, sizeof la_zeros, 512);
    else if (fd >= 0)
      close(fd);
  }
  la_pump(x);
}

static uint8_t la_ping_unit[64 * 131];
static uint8_t la_req_unit[256];
static size_t la_req_len;

/* #4: 4 /ws and 4 Foxglove connections flooding pings whose pongs are
 * never read, and 8 /ws clients asking for terrain grids, never reading. */
static inline void la_ws_ping_flood(la_ctx *x) {
  char payload[125];
  memset(payload, 'p', sizeof payload);
  for (size_t i = 0; i < 64; i++)
    la_ws_frame(la_ping_unit + i * 131, 0x9, payload, sizeof payload);
  la_req_len = la_ws_frame(la_req_unit, 0x1, la_terrain, sizeof la_terrain - 2);
  for (int i = 0; i < 8; i++) {
    bool fox = i >= 4;
    int fd = la_ws_open("127.0.4.1", fox ? x->fox : x->http, fox ? "/" : "/ws",
                        fox ? "foxglove.websocket.v1" : NULL, NULL);
    la_add(x, fd, (const char *)la_ping_unit, sizeof la_ping_unit, 8000);
  }
  for (int i = 0; i < 8; i++)
    la_add(x, la_ws_open("127.0.4.2", x->http, "/ws", NULL, NULL),
           (const char *)la_req_unit, la_req_len, 40);
  la_pump(x);
}

/* #14: 40 idle TCP, 40 idle Foxglove and 40 idle HTTP connections from
 * 127.0.0.1 (past the per-peer cap). */
static inline void la_idle(la_ctx *x) {
  for (int i = 0; i < 40; i++)
    la_add(x, la_connect_from("127.0.0.1", x->port), "", 0, 0);
  for (int i = 0; i < 40; i++)
    la_add(x,
           la_ws_open("127.0.0.1", x->fox, "/", "foxglove.websocket.v1", NULL),
           "", 0, 0);
  for (int i = 0; i < 40; i++)
    la_add(x, la_connect_from("127.0.0.1", x->http), "", 0, 0);
}

/* The line of /metrics holding needle, into out: its length, or -1. */
static inline int la_metric(uint16_t http, const char *needle, char *out,
                            size_t n) {
  int fd = la_connect_from("127.0.0.251", http);
  if (fd < 0)
    return -1;
  static char body[1 << 20];
  pa_test_send_str(fd, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       "Connection: close\r\n\r\n");
  la_read_all(fd, body, sizeof body, 5000); /* Connection: close */
  close(fd);
  char *p = strstr(body, needle);
  if (!p)
    return -1;
  while (p > body && p[-1] != '\n')
    p--;
  size_t len = strcspn(p, "\n");
  snprintf(out, n, "%.*s", (int)len, p);
  return (int)len;
}

#endif
