/* test_raisim.c - RaisimServer's side of playarea, end to end on real
 * stacks: port walking (two stacks asking for one port), the discovery
 * beacon and `playarea discover`, hibernate / wakeup of one connection, the
 * terminating line on shutdown. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "test_launch_util.h"
#include "testutil.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define START_MS (10000 * PA_TEST_SLOW)

/* A TCP port free right now (the kernel's pick, released). */
static uint16_t free_tcp_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t l = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &l);
  close(fd);
  return ntohs(a.sin_port);
}

static uint16_t free_udp_port(void) {
  uint16_t p;
  int fd = pa_test_udp_bind(&p);
  assert_true(fd >= 0);
  close(fd);
  return p;
}

/* Two stacks asked for the same port: the second walks to the next one and
 * says so on its ready line and in `playarea status`; both are discovered
 * on a beacon port of the test's own; --no_port_walk makes it exit 78. */
static void test_port_walk_and_discover(void **state) {
  (void)state;
  uint16_t port = free_tcp_port(), bport = free_udp_port();
  char ps[16], bs[16];
  snprintf(ps, sizeof ps, "%u", port);
  snprintf(bs, sizeof bs, "%u", bport);
  const char *extra[] = {"--tcp_port",  ps,  "--beacon_port", bs,
                         "--no-render", NULL};
  lt_stack a, b;
  assert_int_equal(lt_start(&a, "walk-a", extra, START_MS), 0);
  /* (another process may take the picked port first: then a walks too) */
  assert_true(a.port >= port && a.port < port + 64);
  assert_int_equal(lt_start(&b, "walk-b", extra, START_MS), 0);
  assert_int_not_equal(b.port, a.port);
  assert_true(b.port > port && b.port < port + 64);
  assert_true(pa_test_ping(a.port, 2000));
  assert_true(pa_test_ping(b.port, 2000));
  assert_true(lt_log_contains(&b, "is taken: listening on"));

  char log[512], buf[8192], want[128];
  assert_int_equal(lt_status(&b, buf, sizeof buf, 10000), 0);
  snprintf(want, sizeof want, "tcp %u ", b.port);
  assert_non_null(strstr(buf, want));

  /* Beacons come once a second: 2.5 s hears each stack at least twice. */
  snprintf(log, sizeof log, "%s/discover.log", pa_test_tmpdir());
  const char *disc[] = {"discover", "--beacon_port", bs,
                        "--bind",   "127.0.0.1",     "--timeout_ms",
                        "2500",     "--json",        NULL};
  assert_int_equal(lt_run_playarea(disc, log, 10000), 0);
  pa_test_read_file(log, buf, sizeof buf);
  const lt_stack *both[] = {&a, &b};
  for (int i = 0; i < 2; i++) {
    snprintf(want, sizeof want, "\"instance\":\"%s\"", both[i]->instance);
    const char *line = strstr(buf, want);
    if (!line)
      fprintf(stderr, "discover output:\n%s\n", buf);
    assert_non_null(line);
    /* the port is on that stack's own line, not just somewhere */
    const char *bol = line, *eol = strchr(line, '\n');
    while (bol > buf && bol[-1] != '\n')
      bol--;
    char one[1024];
    snprintf(one, sizeof one, "%.*s",
             (int)(eol ? eol - bol : (ptrdiff_t)strlen(bol)), bol);
    snprintf(want, sizeof want, "\"tcp_port\":%u", both[i]->port);
    assert_non_null(strstr(one, want));
    /* one line per stack although each beacon was heard repeatedly */
    snprintf(want, sizeof want, "\"instance\":\"%s\"", both[i]->instance);
    assert_null(strstr(line + 1, want));
  }
  assert_non_null(strstr(buf, "\"protocol_version\":2"));
  assert_non_null(strstr(buf, "\"version\":"));

  /* The table form names both too. */
  const char *disc2[] = {"discover",  "--beacon_port", bs,     "--bind",
                         "127.0.0.1", "--timeout_ms",  "1500", NULL};
  assert_int_equal(lt_run_playarea(disc2, log, 10000), 0);
  pa_test_read_file(log, buf, sizeof buf);
  snprintf(want, sizeof want, "127.0.0.1:%u", b.port);
  assert_non_null(strstr(buf, want));

  /* --no_port_walk: the taken port is a configuration error, no retries. */
  char inst[PA_SHM_INSTANCE_MAX];
  pa_test_instance(inst, sizeof inst, "nowalk");
  snprintf(log, sizeof log, "%s/nowalk.log", pa_test_tmpdir());
  const char *nw[] = {
      "--tcp_port",  ps,  "--instance", inst, "--no-render", "--no_port_walk",
      "--no_beacon", NULL};
  int64_t t0 = pa_test_now_ms();
  assert_int_equal(lt_run_playarea(nw, log, 15000), PA_EXIT_CONFIG);
  assert_true(pa_test_now_ms() - t0 < 5000 * PA_TEST_SLOW);
  assert_true(pa_test_file_contains(log, "cannot listen"));
  assert_true(pa_test_file_contains(log, "not restarting"));

  assert_int_equal(lt_stop(&a, 5000), 0);
  assert_int_equal(lt_stop(&b, 5000), 0);
}

/* The port on stack t's "<what> 127.0.0.1:PORT" stdout line, 0 if none. */
static unsigned listed_port(const lt_stack *t, const char *what) {
  static char buf[1 << 16];
  pa_test_read_file(t->log, buf, sizeof buf);
  char want[64];
  snprintf(want, sizeof want, "\n%s 127.0.0.1:", what);
  const char *p = strstr(buf, want);
  return p ? (unsigned)atoi(p + strlen(want)) : 0;
}

/* GET / on port: true when the web viewer's page came back (200). */
static bool http_page(unsigned port) {
  int fd = pa_test_tcp_connect((uint16_t)port);
  if (fd < 0)
    return false;
  const char *req = "GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  bool ok = write(fd, req, strlen(req)) == (ssize_t)strlen(req);
  static char buf[1 << 16];
  size_t n = 0;
  int64_t end = pa_test_now_ms() + 5000;
  while (ok && n < sizeof buf - 1 && pa_test_now_ms() < end) {
    ssize_t r = read(fd, buf + n, sizeof buf - 1 - n);
    if (r <= 0)
      break;
    n += (size_t)r;
  }
  close(fd);
  buf[n] = 0;
  return ok && !strncmp(buf, "HTTP/1.", 7) && !strncmp(buf + 8, " 200", 4) &&
         strcasestr(buf, "<!doctype html");
}

/* Two stacks asked for the same --http_port (and --foxglove_port): the
 * second walks to the next free one; both serve pages, on the ports their
 * stdout lines, `playarea status` and their beacons name. */
static void test_http_port_walk(void **state) {
  (void)state;
  uint16_t bport;
  int bfd = pa_test_udp_bind(&bport);
  assert_true(bfd >= 0);
  uint16_t hp = free_tcp_port(), fp = free_tcp_port();
  char hs[16], fs[16], bs[16];
  snprintf(hs, sizeof hs, "%u", hp);
  snprintf(fs, sizeof fs, "%u", fp);
  snprintf(bs, sizeof bs, "%u", bport);
  const char *extra[] = {"--http_port",   hs, "--foxglove_port", fs,
                         "--beacon_port", bs, "--no-render",     NULL};
  lt_stack a, b;
  assert_int_equal(lt_start(&a, "hwalk-a", extra, START_MS), 0);
  assert_int_equal(lt_start(&b, "hwalk-b", extra, START_MS), 0);
  const lt_stack *both[] = {&a, &b};
  unsigned h[2], f[2];
  for (int i = 0; i < 2; i++) {
    h[i] = listed_port(both[i], "http");
    f[i] = listed_port(both[i], "foxglove");
    fprintf(stderr, "%s: http %u foxglove %u\n", both[i]->instance, h[i], f[i]);
    /* (another process may take a picked port first: then a walks too) */
    assert_true(h[i] >= hp && h[i] < hp + 64u);
    assert_true(f[i] >= fp && f[i] < fp + 64u);
    assert_true(http_page(h[i]));
  }
  assert_int_not_equal(h[0], h[1]);
  assert_int_not_equal(f[0], f[1]);
  assert_true(lt_log_contains(&b, "web: port"));

  char buf[8192], want[128];
  assert_int_equal(lt_status(&b, buf, sizeof buf, 10000), 0);
  snprintf(want, sizeof want, "http %u  foxglove %u ", h[1], f[1]);
  assert_non_null(strstr(buf, want));

  /* Both beacons name their own web and Foxglove ports. */
  bool heard[2] = {false, false};
  int64_t end = pa_test_now_ms() + 5000 * PA_TEST_SLOW;
  while (!(heard[0] && heard[1]) && pa_test_now_ms() < end) {
    int n = pa_test_udp_recv(bfd, buf, sizeof buf - 1, 1500);
    if (n <= 0)
      continue;
    buf[n] = 0;
    for (int i = 0; i < 2; i++) {
      snprintf(want, sizeof want, "\"instance\":\"%s\"", both[i]->instance);
      if (!strstr(buf, want))
        continue;
      snprintf(want, sizeof want, "\"http_port\":%u", h[i]);
      assert_non_null(strstr(buf, want));
      snprintf(want, sizeof want, "\"foxglove_port\":%u", f[i]);
      assert_non_null(strstr(buf, want));
      heard[i] = true;
    }
  }
  assert_true(heard[0] && heard[1]);
  close(bfd);
  /* A pa-netgw restarted after a crash serves on the port its predecessor
   * picked (an OS pick would differ). */
  lt_stack c;
  const char *pick[] = {"--http_port=-1", "--no-render", "--no_beacon", NULL};
  assert_int_equal(lt_start(&c, "hpick", pick, START_MS), 0);
  unsigned hc = listed_port(&c, "http");
  assert_true(hc > 0 && http_page(hc));
  pid_t old = lt_pid(&c, PA_PROC_NETGW);
  assert_true(old > 0);
  kill(old, SIGKILL);
  assert_true(lt_wait_new_pid(&c, PA_PROC_NETGW, old, 20000 * PA_TEST_SLOW));
  assert_int_equal(c.s.ctl->http_port, hc);
  assert_true(http_page(hc));
  assert_int_equal(lt_stop(&c, 5000), 0);
  assert_int_equal(lt_stop(&a, 5000), 0);
  assert_int_equal(lt_stop(&b, 5000), 0);
}

/* --no_beacon: nothing arrives on the beacon port. */
static void test_no_beacon(void **state) {
  (void)state;
  uint16_t bport;
  int fd = pa_test_udp_bind(&bport);
  assert_true(fd >= 0);
  char bs[16];
  snprintf(bs, sizeof bs, "%u", bport);
  const char *quiet[] = {"--beacon_port", bs, "--no-render", "--no_beacon",
                         NULL};
  lt_stack s;
  assert_int_equal(lt_start(&s, "quiet", quiet, START_MS), 0);
  char buf[2048];
  assert_int_equal(pa_test_udp_recv(fd, buf, sizeof buf, 1500), -1);
  assert_int_equal(lt_stop(&s, 5000), 0);
  /* and without it, a beacon comes within about a second */
  const char *loud[] = {"--beacon_port", bs, "--no-render", NULL};
  assert_int_equal(lt_start(&s, "loud", loud, START_MS), 0);
  int n = pa_test_udp_recv(fd, buf, sizeof buf - 1, 2500);
  assert_true(n > 0);
  buf[n] = 0;
  assert_non_null(strstr(buf, "\"beacon\":\"playarea\""));
  char want[64];
  snprintf(want, sizeof want, "\"tcp_port\":%u", s.port);
  assert_non_null(strstr(buf, want));
  assert_int_equal(lt_stop(&s, 5000), 0);
  close(fd);
}

static void json_call(int fd, const char *action, const char *data, char *out,
                      size_t n) {
  char req[512];
  snprintf(req, sizeof req,
           "{\"type\":\"command\",\"protocol_version\":2,\"action\":\"%s\","
           "\"data\":%s}\n",
           action, data ? data : "{}");
  assert_int_equal(pa_test_send_str(fd, req), 0);
  assert_true(pa_test_read_line(fd, out, n, 5000 * PA_TEST_SLOW) > 0);
}

static int count_frames(int udp, int ms) {
  char b[2048];
  int n = 0;
  int64_t end = pa_test_now_ms() + ms;
  for (int64_t left; (left = end - pa_test_now_ms()) > 0;)
    if (pa_test_udp_recv(udp, b, sizeof b, (int)left) > 0)
      n++;
  return n;
}

/* hibernate stops the connection's streams, commands are still answered,
 * get_status says so; wakeup resumes them on the same connection. */
static void test_hibernate(void **state) {
  (void)state;
  const char *extra[] = {"--no-render", "--no_beacon", NULL};
  lt_stack s;
  assert_int_equal(lt_start(&s, "hib", extra, START_MS), 0);
  int tcp = pa_test_tcp_connect(s.port);
  assert_true(tcp >= 0);
  uint16_t up;
  int udp = pa_test_udp_bind(&up);
  assert_true(udp >= 0);
  char data[128], out[8192];
  snprintf(data, sizeof data, "{\"channel\":\"odom\",\"udp_port\":%u}", up);
  json_call(tcp, "subscribe", data, out, sizeof out);
  assert_non_null(strstr(out, "\"ok\""));
  assert_true(count_frames(udp, 300) > 5);

  json_call(tcp, "get_status", NULL, out, sizeof out);
  assert_non_null(strstr(out, "rendering"));
  json_call(tcp, "hibernate", NULL, out, sizeof out);
  assert_non_null(strstr(out, "hibernating"));
  count_frames(udp, 100); /* what was in flight */
  assert_int_equal(count_frames(udp, 600), 0);
  json_call(tcp, "get_status", NULL, out, sizeof out);
  assert_non_null(strstr(out, "hibernating"));
  assert_non_null(strstr(out, "\"tick\""));
  json_call(tcp, "get_state", NULL, out, sizeof out);
  assert_non_null(strstr(out, "\"pose\""));

  /* A second connection is not hibernated by the first. */
  int tcp2 = pa_test_tcp_connect(s.port);
  uint16_t up2;
  int udp2 = pa_test_udp_bind(&up2);
  snprintf(data, sizeof data, "{\"channel\":\"odom\",\"udp_port\":%u}", up2);
  json_call(tcp2, "subscribe", data, out, sizeof out);
  assert_true(count_frames(udp2, 300) > 5);
  assert_int_equal(count_frames(udp, 1), 0);

  json_call(tcp, "wakeup", NULL, out, sizeof out);
  assert_non_null(strstr(out, "rendering"));
  assert_true(count_frames(udp, 300) > 5);
  json_call(tcp, "get_status", NULL, out, sizeof out);
  assert_non_null(strstr(out, "rendering"));

  /* Unsubscribing while hibernating, then waking: nothing comes. */
  json_call(tcp, "hibernate", NULL, out, sizeof out);
  json_call(tcp, "unsubscribe", "{\"channel\":\"odom\"}", out, sizeof out);
  json_call(tcp, "wakeup", NULL, out, sizeof out);
  count_frames(udp, 100);
  assert_int_equal(count_frames(udp, 400), 0);
  assert_true(count_frames(udp2, 200) > 3);

  close(tcp);
  close(tcp2);
  close(udp);
  close(udp2);
  assert_int_equal(lt_stop(&s, 5000), 0);
}

/* A stopping gateway tells each control connection (RaisimServer's
 * STATUS_TERMINATING) before it closes: a JSON line to a connection that
 * spoke JSON, "status terminating" to a text one; then EOF. */
static void test_terminating(void **state) {
  (void)state;
  const char *extra[] = {"--no-render", "--no_beacon", NULL};
  lt_stack s;
  assert_int_equal(lt_start(&s, "term", extra, START_MS), 0);
  int js = pa_test_tcp_connect(s.port), tx = pa_test_tcp_connect(s.port);
  assert_true(js >= 0 && tx >= 0);
  char out[8192];
  json_call(js, "get_status", NULL, out, sizeof out);
  assert_non_null(strstr(out, "rendering"));
  assert_int_equal(pa_test_send_str(tx, "ping\n"), 0);
  assert_true(pa_test_read_line(tx, out, sizeof out, 5000 * PA_TEST_SLOW) > 0);
  assert_string_equal(out, "pong");
  assert_int_equal(lt_stop(&s, 5000), 0);
  assert_true(pa_test_read_line(js, out, sizeof out, 5000 * PA_TEST_SLOW) > 0);
  assert_non_null(strstr(out, "\"type\":\"status\""));
  assert_non_null(strstr(out, "\"status\":\"terminating\""));
  assert_true(pa_test_read_line(tx, out, sizeof out, 5000 * PA_TEST_SLOW) > 0);
  assert_string_equal(out, "status terminating");
  /* Then the connections close. */
  assert_true(pa_test_read_line(js, out, sizeof out, 5000 * PA_TEST_SLOW) <= 0);
  assert_true(pa_test_read_line(tx, out, sizeof out, 5000 * PA_TEST_SLOW) <= 0);
  close(js);
  close(tx);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_port_walk_and_discover),
      cmocka_unit_test(test_no_beacon),
      cmocka_unit_test(test_hibernate),
      cmocka_unit_test(test_terminating),
      cmocka_unit_test(test_http_port_walk),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
