/* test_netgw_ports.c - every listener of pa-netgw keeps its port across a
 * restart (a SIGKILL, a hang kill, `playarea restart netgw`): TCP, HTTP,
 * Foxglove, SSL control/blue/yellow, the SSL vision target and Player, for a
 * stack
 * whose ports the OS picked, one whose ports walked past taken ones, and one
 * with explicit ports; and between a crash and the restart the launcher
 * holds the listeners, so no other process takes a port and a client of the
 * gap is served (issue 31, finding 11 of the reliability issue). Real
 * processes, ports the OS picks. */
#include "test_launch_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define START_MS 60000

static const char *const names[] = {"tcp",         "http",     "foxglove",
                                    "ssl_control", "ssl_blue", "ssl_yellow",
                                    "ssl_vision",  "player"};
#define N_NAMES (sizeof names / sizeof names[0])

/* The kept ports by name (0 = none or down). */
static void read_ports(const lt_stack *t, unsigned out[N_NAMES]) {
  pa_port_rec r[PA_PORTS_MAX];
  size_t n = pa_stack_ports_read(&t->s, r);
  for (size_t k = 0; k < N_NAMES; k++) {
    out[k] = 0;
    for (size_t i = 0; i < n; i++)
      if (!strcmp(r[i].name, names[k]) && r[i].up)
        out[k] = r[i].port;
  }
}

static bool netgw_ready(const lt_stack *t) {
  return __atomic_load_n(&t->s.ctl->health[PA_PROC_NETGW].ready,
                         __ATOMIC_ACQUIRE) != 0;
}

/* Waits for a new pa-netgw to be ready with every listener up again. */
static void wait_netgw_back(const lt_stack *t, pid_t old) {
  assert_true(lt_wait_new_pid(t, PA_PROC_NETGW, old, 30000));
  int64_t end = pa_test_now_ms() + 30000;
  while (!netgw_ready(t) && pa_test_now_ms() < end)
    usleep(10000);
  assert_true(netgw_ready(t));
  usleep(300000); /* the SSL ports open at the first health poll too */
}

static void assert_same(const unsigned a[N_NAMES], const unsigned b[N_NAMES]) {
  for (size_t k = 0; k < N_NAMES; k++) {
    if (a[k] != b[k])
      fprintf(stderr, "%s: %u before, %u after\n", names[k], a[k], b[k]);
    assert_int_equal(a[k], b[k]);
  }
}

/* A text ping on the TCP port and a TCP connect on HTTP, Foxglove and
 * Player: the ports are really served, not only recorded. */
static void assert_served(const unsigned p[N_NAMES]) {
  assert_true(pa_test_ping((uint16_t)p[0], 5000));
  int fd;
  for (int k = 1; k <= 7; k = k == 2 ? 7 : k + 1) {
    fd = pa_test_tcp_connect((uint16_t)p[k]);
    assert_true(fd >= 0);
    close(fd);
  }
}

/* A free port of the given type, picked by the OS (then released). */
static unsigned free_port(int type) {
  int fd = socket(AF_INET, type, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t l = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &l);
  close(fd);
  return ntohs(a.sin_port);
}

/* A TCP listener on a port the OS picked, kept open (a "taken" port). */
static int occupy(unsigned *port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(listen(fd, 1), 0);
  socklen_t l = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &l);
  *port = ntohs(a.sin_port);
  return fd;
}

/* SimulatorCommand{config{vision_port}} in protobuf wire form, to the SSL
 * control port: the vision target changes at run time. */
static void set_vision_port(unsigned control, unsigned vport) {
  uint8_t cfg[8], msg[16];
  size_t n = 0;
  cfg[n++] = 0x20; /* field 4, varint */
  for (unsigned v = vport;; v >>= 7) {
    cfg[n++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
    if (v < 0x80)
      break;
  }
  msg[0] = 0x12; /* field 2, length-delimited */
  msg[1] = (uint8_t)n;
  memcpy(msg + 2, cfg, n);
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)control)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_true(sendto(fd, msg, n + 2, 0, (struct sockaddr *)&a, sizeof a) > 0);
  close(fd);
}

/* The three kinds of restart, each followed by the same ports. */
static void restart_all_ways(lt_stack *t, const unsigned before[N_NAMES]) {
  unsigned after[N_NAMES];
  /* 1. a crash */
  pid_t net = lt_pid(t, PA_PROC_NETGW);
  assert_int_equal(kill(net, SIGKILL), 0);
  wait_netgw_back(t, net);
  read_ports(t, after);
  assert_same(before, after);
  assert_served(after);
  /* 2. a hang kill (--hang_ms) */
  net = lt_pid(t, PA_PROC_NETGW);
  assert_int_equal(kill(net, SIGSTOP), 0);
  wait_netgw_back(t, net);
  read_ports(t, after);
  assert_same(before, after);
  /* 3. playarea restart netgw */
  net = lt_pid(t, PA_PROC_NETGW);
  char log[512];
  snprintf(log, sizeof log, "%s/restart-%s.log", pa_test_tmpdir(), t->instance);
  const char *args[] = {"restart", "netgw", "--instance", t->instance, NULL};
  assert_int_equal(lt_run_playarea(args, log, 60000), 0);
  wait_netgw_back(t, net);
  read_ports(t, after);
  assert_same(before, after);
  assert_served(after);
}

/* Whether some process holds port now (a bind of ours fails). */
static bool port_busy(unsigned port, int type) {
  int fd = socket(AF_INET, type, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool busy =
      bind(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno == EADDRINUSE;
  close(fd);
  return busy;
}

/* Starts a stack with those port flags, checks its ports (expect: each
 * name's, 0 = any) and their keeping across restarts. false, the stack
 * stopped, when a port asked for was not the stack's because another
 * process held it (free_port releases a port before pa-netgw binds it:
 * the OS may give it to anyone meanwhile); the caller asks again. */
static bool run_case(const char *tag, const char *const *ports_args,
                     const unsigned *expect) {
  lt_stack t;
  char vs[16];
  snprintf(vs, sizeof vs, "%u", free_port(SOCK_DGRAM));
  const char *extra[32] = {
      "--no-render", "--world",           "ssl-a", "--hang_ms",
      "1000",        "--ssl_vision_port", vs};
  int k = 7;
  for (int i = 0; ports_args[i]; i++)
    extra[k++] = ports_args[i];
  extra[k] = NULL;
  assert_int_equal(lt_start(&t, tag, extra, START_MS), 0);
  usleep(300000);
  unsigned before[N_NAMES];
  read_ports(&t, before);
  for (size_t i = 0; i < N_NAMES; i++) {
    if (!before[i])
      fprintf(stderr, "%s: no port\n", names[i]);
    assert_true(before[i] > 0);
    bool udp = i >= 3 && i <= 6;
    if (expect && expect[i] && before[i] != expect[i] &&
        port_busy(expect[i], udp ? SOCK_DGRAM : SOCK_STREAM)) {
      fprintf(stderr, "%s: port %u was taken by another process: again\n",
              names[i], expect[i]);
      assert_int_equal(lt_stop(&t, 30000), 0);
      return false;
    }
    if (expect && expect[i])
      assert_int_equal(before[i], expect[i]);
  }
  /* the vision target moved at run time is kept too */
  unsigned v2 = free_port(SOCK_DGRAM);
  set_vision_port(before[3], v2);
  int64_t end = pa_test_now_ms() + 5000;
  while (pa_test_now_ms() < end) {
    read_ports(&t, before);
    if (before[6] == v2)
      break;
    usleep(10000);
  }
  assert_int_equal(before[6], v2);
  restart_all_ways(&t, before);
  assert_int_equal(lt_stop(&t, 30000), 0);
  return true;
}

static void test_ports_os_picked(void **state) {
  (void)state;
  const char *a[] = {"--http_port",
                     "-1",
                     "--foxglove_port",
                     "-1",
                     "--player_port",
                     "-1",
                     "--ssl_control_port",
                     "0",
                     "--ssl_blue_port",
                     "0",
                     "--ssl_yellow_port",
                     "0",
                     NULL};
  assert_true(run_case("pos", a, NULL));
}

static void test_ports_walked(void **state) {
  (void)state;
  unsigned tp, hp, fp, pp;
  int t1 = occupy(&tp), t2 = occupy(&hp), t3 = occupy(&fp), t4 = occupy(&pp);
  char ts[16], hs[16], fs[16], ps[16];
  snprintf(ts, sizeof ts, "%u", tp);
  snprintf(hs, sizeof hs, "%u", hp);
  snprintf(fs, sizeof fs, "%u", fp);
  snprintf(ps, sizeof ps, "%u", pp);
  const char *a[] = {"--tcp_port",
                     ts,
                     "--http_port",
                     hs,
                     "--foxglove_port",
                     fs,
                     "--player_port",
                     ps,
                     "--ssl_control_port",
                     "0",
                     "--ssl_blue_port",
                     "0",
                     "--ssl_yellow_port",
                     "0",
                     NULL};
  /* Each walks past its taken port; freed then, the restarted pa-netgw
   * still comes back on the walked ports, not on the ones asked for. */
  lt_stack t;
  char vs[16];
  snprintf(vs, sizeof vs, "%u", free_port(SOCK_DGRAM));
  const char *extra[32] = {
      "--no-render", "--world",           "ssl-a", "--hang_ms",
      "1000",        "--ssl_vision_port", vs};
  int k = 7;
  for (int i = 0; a[i]; i++)
    extra[k++] = a[i];
  extra[k] = NULL;
  assert_int_equal(lt_start(&t, "pwk", extra, START_MS), 0);
  usleep(300000);
  unsigned before[N_NAMES];
  read_ports(&t, before);
  assert_true(before[0] != tp && before[0] > 0);
  assert_true(before[1] != hp && before[1] > 0);
  assert_true(before[2] != fp && before[2] > 0);
  assert_true(before[7] != pp && before[7] > 0);
  close(t1);
  close(t2);
  close(t3);
  close(t4);
  restart_all_ways(&t, before);
  assert_int_equal(lt_stop(&t, 30000), 0);
}

/* test_ports_explicit's case with ports free a moment ago. */
static bool explicit_case(void) {
  unsigned p[7] = {free_port(SOCK_STREAM), free_port(SOCK_STREAM),
                   free_port(SOCK_STREAM), free_port(SOCK_DGRAM),
                   free_port(SOCK_DGRAM),  free_port(SOCK_DGRAM),
                   free_port(SOCK_STREAM)};
  char s[7][16];
  for (int i = 0; i < 7; i++)
    snprintf(s[i], sizeof s[i], "%u", p[i]);
  const char *a[] = {"--tcp_port",
                     s[0],
                     "--http_port",
                     s[1],
                     "--foxglove_port",
                     s[2],
                     "--ssl_control_port",
                     s[3],
                     "--ssl_blue_port",
                     s[4],
                     "--ssl_yellow_port",
                     s[5],
                     "--player_port",
                     s[6],
                     NULL};
  unsigned expect[N_NAMES] = {p[0], p[1], p[2], p[3], p[4], p[5], 0, p[6]};
  return run_case("pex", a, expect);
}

static void test_ports_explicit(void **state) {
  (void)state;
  for (int attempt = 0; attempt < 3; attempt++)
    if (explicit_case())
      return;
  fail_msg("three sets of free ports were taken before pa-netgw bound them");
}

/* Between pa-netgw's crash and its restart (the launcher held stopped
 * meanwhile, so the gap lasts) the launcher still holds its listeners: a
 * local process cannot bind the port, and a client that connects in the
 * gap is answered by the restarted pa-netgw on the same port. */
static void test_port_held(void **state) {
  (void)state;
  lt_stack t;
  const char *extra[] = {"--no-render", NULL};
  assert_int_equal(lt_start(&t, "psq", extra, START_MS), 0);
  assert_true(pa_test_ping(t.port, 5000)); /* a client has connected */
  pid_t net = lt_pid(&t, PA_PROC_NETGW);
  assert_int_equal(kill(t.pid, SIGSTOP), 0);
  assert_int_equal(kill(net, SIGKILL), 0);
  assert_true(lt_pid_gone(net, 5000));
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(t.port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int sq = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(sq, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int b = bind(sq, (struct sockaddr *)&a, sizeof a);
  int e = errno;
  close(sq);
  /* the client of the gap: its connect completes into the held backlog */
  int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int cr = connect(c, (struct sockaddr *)&a, sizeof a);
  bool sent = cr == 0 && write(c, "ping\n", 5) == 5;
  assert_int_equal(kill(t.pid, SIGCONT), 0);
  assert_int_equal(b, -1);
  assert_int_equal(e, EADDRINUSE);
  assert_int_equal(cr, 0);
  assert_true(sent);
  struct timeval tv = {10, 0};
  setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[64] = {0};
  size_t got = 0;
  while (got < sizeof buf - 1 && !strchr(buf, '\n')) {
    ssize_t r = read(c, buf + got, sizeof buf - 1 - got);
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  close(c);
  if (strncmp(buf, "pong", 4))
    lt_print_log(&t);
  assert_string_equal(buf, "pong\n");
  assert_true(lt_wait_new_pid(&t, PA_PROC_NETGW, net, 30000));
  assert_true(lt_log_contains(&t, "held by the launcher across the restart"));
  assert_true(pa_test_ping(t.port, 5000));
  assert_int_equal(lt_stop(&t, 30000), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ports_os_picked),
      cmocka_unit_test(test_ports_walked),
      cmocka_unit_test(test_ports_explicit),
      cmocka_unit_test(test_port_held),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
