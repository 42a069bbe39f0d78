/* test_netgw_limits.c - the core's connection limits (issue 32): attacks on
 * a real pa-sim + pa-netgw (OS-picked ports, 127.0.0.x only) while a
 * bystander pings every 100 ms; each asserts the bystander's p99, pa-netgw's
 * RSS and that pa-netgw lived. The attack helpers are in limits_attacks.h
 * (the soak test runs them too). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "limits_attacks.h"
#include "netgw_harness.h"

/* Starts the bystander, runs attack for ms, then checks the bounds and
 * that the bystander was answered all along; the attackers stay connected
 * (la_end closes them). */
static la_ctx x;
static void under_attack(ng_stack *s, const char *name,
                         void (*attack)(la_ctx *), int ms) {
  la_begin(&x, s->st.ctl, s->gw, s->gw_log);
  la_bystander_start(&x);
  int64_t end = pa_test_now_ms() + ms;
  attack(&x);
  while (pa_test_now_ms() < end) {
    la_sample_rss(&x);
    usleep(100000);
  }
  la_sample_rss(&x);
  la_bystander_stop(&x);
  la_report(&x, name);
  assert_true(pa_test_alive(s->gw));
  assert_int_equal(x.by.lost, 0);
  assert_true(x.by.n >= ms / 150);
  assert_true(la_latency_ok(&x));
  assert_true(x.rss_max_kb < LA_RSS_MAX_KB);
}

/* #1: 100 clients each pipelining 40 get_terrain_grid and never reading. */
static void tcp_pipeline(void **state) {
  (void)state;
  ng_stack s;
  assert_int_equal(ng_start(&s, "limtcp", NULL, NULL), 0);
  under_attack(&s, "tcp pipeline", la_tcp_pipeline, 5000);
  /* the pauses and turns show in /metrics */
  char m[256];
  assert_true(la_metric(x.http, "reason=\"output_paused\"", m, sizeof m) > 0);
  la_end(&x);
  assert_int_equal(ng_stop(&s), 0);
}

/* #2: GET /viewer.js pipelined (2 MB of requests), never read. */
static void http_pipeline(void **state) {
  (void)state;
  ng_stack s;
  assert_int_equal(ng_start(&s, "limhttp", NULL, NULL), 0);
  under_attack(&s, "http pipeline", la_http_pipeline, 4000);
  la_end(&x);
  assert_int_equal(ng_stop(&s), 0);
}

/* #3: unfinished 32 MiB POSTs: refused before their bodies are read. */
static void post_bodies(void **state) {
  (void)state;
  ng_stack s;
  assert_int_equal(ng_start(&s, "limpost", NULL, NULL), 0);
  under_attack(&s, "unfinished posts", la_post_bodies, 3000);
  /* each got its answer at once: 403 (no --upload_dir), 405, 413 */
  char buf[512];
  int fd = la_connect_from("127.0.0.1", x.http);
  assert_true(fd >= 0);
  assert_int_equal(
      pa_test_send_str(fd, "POST /api/upload?name=a.png HTTP/1.1\r\nHost: "
                           "x\r\nContent-Length: 33554432\r\n\r\n"),
      0);
  assert_true(la_read_some(fd, buf, sizeof buf, 2000) > 0);
  assert_non_null(strstr(buf, "403"));
  close(fd);
  fd = la_connect_from("127.0.0.1", x.http);
  assert_int_equal(pa_test_send_str(fd, "POST /metrics HTTP/1.1\r\nHost: "
                                        "x\r\nContent-Length: 99\r\n\r\n"),
                   0);
  assert_true(la_read_some(fd, buf, sizeof buf, 2000) > 0);
  assert_non_null(strstr(buf, "405"));
  close(fd);
  la_end(&x);
  assert_int_equal(ng_stop(&s), 0);
}

/* #4: ping floods whose pongs are never read, on /ws and Foxglove. */
static void ws_ping_flood(void **state) {
  (void)state;
  ng_stack s;
  assert_int_equal(ng_start(&s, "limws", NULL, NULL), 0);
  under_attack(&s, "ws ping flood", la_ws_ping_flood, 5000);
  la_end(&x);
  assert_int_equal(ng_stop(&s), 0);
}

/* #5: idle connections: the per-peer cap, the Foxglove reserve. */
static void idle_connections(void **state) {
  (void)state;
  ng_stack s;
  assert_int_equal(ng_start(&s, "limidle", NULL, NULL), 0);
  under_attack(&s, "idle connections", la_idle, 2000);
  /* another address still gets a TCP client and a Foxglove connection */
  int fd = la_connect_from("127.0.0.77", s.port);
  assert_true(fd >= 0);
  ng_expect(fd, "ping", "pong");
  close(fd);
  assert_true(
      la_ws_open("127.0.0.77", x.fox, "/", "foxglove.websocket.v1", NULL) >= 0);
  /* one address past the cap is refused at once */
  fd = la_connect_from("127.0.0.1", s.port);
  char line[256];
  assert_true(fd >= 0);
  assert_true(pa_test_read_line(fd, line, sizeof line, 2000) > 0);
  assert_non_null(strstr(line, "too many connections from this address"));
  close(fd);
  la_end(&x);
  assert_int_equal(ng_stop(&s), 0);
}

/* #8: cross-origin /ws and uploads refused with 403, same-origin and
 * --allow_origin ones served. */
static void cross_origin(void **state) {
  (void)state;
  ng_stack s;
  const char *const gw[] = {"--allow_origin", "https://app.example", NULL};
  assert_int_equal(ng_start(&s, "limorigin", NULL, gw), 0);
  la_begin(&x, s.st.ctl, s.gw, s.gw_log);
  uint16_t hp = x.http;
  char resp[1024];
  assert_true(la_ws_open("127.0.0.1", hp, "/ws", NULL, "http://evil.example") <
              0);
  int fd = la_ws_open("127.0.0.1", hp, "/ws", NULL, "https://app.example");
  assert_true(fd >= 0);
  close(fd);
  char same[64];
  snprintf(same, sizeof same, "http://127.0.0.1:%u", hp);
  fd = la_ws_open("127.0.0.1", hp, "/ws", NULL, same);
  assert_true(fd >= 0);
  close(fd);
  fd = la_connect_from("127.0.0.1", hp);
  assert_int_equal(pa_test_send_str(fd, "POST /api/upload?name=a.yaml "
                                        "HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                        "Origin: http://evil.example\r\n"
                                        "Content-Length: 4\r\n\r\n"),
                   0);
  assert_true(la_read_some(fd, resp, sizeof resp, 2000) > 0);
  assert_non_null(strstr(resp, "403"));
  assert_non_null(strstr(resp, "cross-origin"));
  close(fd);
  char m[256];
  assert_true(la_metric(x.http, "reason=\"origin_refused\"", m, sizeof m) > 0);
  assert_true(atof(strrchr(m, ' ') + 1) >= 2);
  la_end(&x);
  assert_int_equal(ng_stop(&s), 0);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  la_asan_quarantine(); /* before any stack starts */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(tcp_pipeline),     cmocka_unit_test(http_pipeline),
      cmocka_unit_test(post_bodies),      cmocka_unit_test(ws_ping_flood),
      cmocka_unit_test(idle_connections), cmocka_unit_test(cross_origin),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
