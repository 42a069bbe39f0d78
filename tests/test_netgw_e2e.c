/* test_netgw_e2e.c - pa-netgw end to end: the real pa-sim and pa-netgw on a
 * fresh instance, driven over real TCP and UDP sockets as a client would. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "netgw_harness.h"
#include "pa_map.h"

/* ---- UDP frames, parsed with the exact layouts of PROTOCOL.md section 2 --*/

typedef pa_test_odom odom;

/* Collects odom frames for ms of wall time; returns how many. */
static int collect_odom(int fd, odom *out, int max, int ms) {
  int n = 0;
  int64_t end = pa_test_now_ms() + ms;
  uint8_t b[2048];
  while (n < max) {
    int64_t left = end - pa_test_now_ms();
    if (left <= 0)
      break;
    int r = pa_test_udp_recv(fd, b, sizeof b, (int)left);
    if (r < 0)
      break;
    assert_true(pa_test_parse_odom(b, r, &out[n]));
    n++;
  }
  return n;
}

/* Discards what is queued now (a live stream never runs dry). */
static void drain_udp(int fd) {
  uint8_t b[65536];
  while (recv(fd, b, sizeof b, MSG_DONTWAIT) >= 0)
    ;
}

/* Sends the lines of before (each ending in "\n", or "") then subscribes
 * UDP port to stream, and waits for the gateway's answer. */
static void sub_port(int fd, const char *before, const char *stream,
                     uint16_t port) {
  char line[256];
  snprintf(line, sizeof line, "%ssub %s %u\nping", before, stream, port);
  ng_expect(fd, line, "pong");
}

/* sub_port with a new UDP socket, which it returns (its port in *port when
 * not NULL). */
static int subscribe(int fd, const char *before, const char *stream,
                     uint16_t *port) {
  uint16_t up;
  int u = pa_test_udp_bind(&up);
  sub_port(fd, before, stream, up);
  if (port)
    *port = up;
  return u;
}

static json_t *ask_json(int fd, const char *req) {
  static char buf[4 << 20];
  int n = ng_ask(fd, req, buf, sizeof buf);
  if (n < 0)
    fail_msg("no reply to %s", req);
  json_error_t e;
  json_t *j = json_loads(buf, 0, &e);
  if (!j)
    fail_msg("reply to %s is not JSON: %s (%s)", req, e.text, buf);
  return j;
}

static const char *jstr(json_t *o, const char *path1, const char *path2) {
  json_t *v = json_object_get(o, path1);
  if (path2)
    v = json_object_get(v, path2);
  return json_is_string(v) ? json_string_value(v) : "";
}

/* Asserts an error reply with that code, returns nothing. */
static void expect_json_err(int fd, const char *req, const char *code) {
  json_t *j = ask_json(fd, req);
  if (strcmp(jstr(j, "type", NULL), "error") != 0 ||
      strcmp(jstr(j, "error", "code"), code) != 0 ||
      json_object_get(j, "success") != json_false() ||
      strlen(jstr(j, "error", "message")) == 0) {
    char *s = json_dumps(j, JSON_COMPACT);
    fail_msg("%s -> %s, expected error %s", req, s, code);
  }
  json_decref(j);
}

static json_t *expect_json_ok(int fd, const char *req, const char *type) {
  json_t *j = ask_json(fd, req);
  if (strcmp(jstr(j, "type", NULL), type) != 0 ||
      json_object_get(j, "success") != json_true() ||
      strcmp(jstr(j, "status", NULL), "ok") != 0 ||
      !json_is_integer(json_object_get(j, "protocol_version")) ||
      !json_is_number(json_object_get(j, "sim_time")) ||
      !json_is_object(json_object_get(j, "data"))) {
    char *s = json_dumps(j, JSON_COMPACT);
    fail_msg("%s -> %s, expected a %s response", req, s, type);
  }
  return j;
}

/* A command request line: action with data (a JSON object's text) in buf. */
static const char *command(char *buf, size_t n, const char *action,
                           const char *data) {
  snprintf(buf, n, "{\"type\":\"command\",\"action\":\"%s\",\"data\":%s}",
           action, data);
  return buf;
}

/* A command whose data is {"key": "value"}. */
static const char *command_str(char *buf, size_t n, const char *action,
                               const char *key, const char *value) {
  char data[700];
  snprintf(data, sizeof data, "{\"%s\":\"%s\"}", key, value);
  return command(buf, n, action, data);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static json_int_t dint(json_t *j, const char *key) {
  return json_integer_value(json_object_get(json_object_get(j, "data"), key));
}

/* The terrain grid's rows joined (the map's cells as the gateway sees them). */
static char *terrain(int fd) {
  json_t *j = expect_json_ok(
      fd, "{\"type\":\"command\",\"action\":\"get_terrain_grid\"}", "response");
  json_t *rows = json_object_get(json_object_get(j, "data"), "rows");
  size_t n = 1;
  for (size_t i = 0; i < json_array_size(rows); i++)
    n += strlen(json_string_value(json_array_get(rows, i)));
  char *out = calloc(n, 1);
  assert_non_null(out);
  for (size_t i = 0; i < json_array_size(rows); i++)
    strcat(out, json_string_value(json_array_get(rows, i)));
  json_decref(j);
  return out;
}

/* ---- tests ---------------------------------------------------------------*/

static void text_session(void **state) {
  (void)state;
  ng_stack s;
  const char *sim[] = {"--robots", "2", NULL};
  int fd = ng_open(&s, "text", sim, NULL);
  assert_true(fd >= 0);
  ng_expect(fd, "ping", "pong");
  ng_expect_prefix(fd, "help", "commands: cmd <v> <w> [head]");
  /* Successful cmd/stop/sub/unsub say nothing: the next reply is pong. */
  int u = subscribe(fd, "cmd 0.3 0.2\nstop\r\ncmd\t0.1  0 0.5\n", "odom", NULL);
  ng_expect(fd, "unsub odom\nunsub scan\nping", "pong");
  ng_expect_prefix(fd, "pose", "pose ");
  ng_expect(fd, "pause", "ok");
  ng_expect(fd, "teleport -1.5 0 0.25", "ok");
  char buf[256];
  assert_true(ng_ask(fd, "pose", buf, sizeof buf) > 0);
  double x, y, th;
  assert_int_equal(sscanf(buf, "pose %lf %lf %lf", &x, &y, &th), 3);
  assert_true(fabs(x + 1.5) < 1e-6 && fabs(y) < 1e-6 &&
              fabs(th - 0.25) < 1e-6);
  ng_expect(fd, "cmd 0.5 0\nping", "pong");
  ng_expect(fd, "step 100", "ok");
  assert_true(ng_ask(fd, "pose", buf, sizeof buf) > 0);
  assert_int_equal(sscanf(buf, "pose %lf %lf %lf", &x, &y, &th), 3);
  assert_true(x > -1.4); /* 0.5 s at up to 0.5 m/s with acceleration */
  ng_expect(fd, "stop\nping", "pong");
  ng_expect(fd, "resume", "ok");
  ng_expect(fd, "speed 2", "ok");
  ng_expect(fd, "speed 1", "ok");
  ng_expect(fd, "robot 1", "ok");
  ng_expect(fd, "robot 0", "ok");
  ng_expect(fd, "reset", "ok");
  /* Errors: one line each, naming what was wrong. */
  ng_expect(fd, "robot 7", "err unknown_robot no robot with id '7'");
  ng_expect(fd, "robot nobody",
            "err unknown_robot no robot with name 'nobody'");
  ng_expect(fd, "fly 1 2",
            "err unknown_action unknown command 'fly' (try help)");
  ng_expect(fd, "cmd 1",
            "err invalid_action_shape cmd takes 2 to 3 "
            "arguments, got 1: cmd <v> <w> [head]");
  ng_expect(fd, "cmd 1 nan",
            "err invalid_action_shape cmd: w 'nan' is not a finite number");
  ng_expect(fd, "cmd 1e999 0",
            "err invalid_action_shape cmd: v '1e999' is not finite");
  ng_expect(fd, "cmd inf 0",
            "err invalid_action_shape cmd: v 'inf' is not a finite number");
  ng_expect(fd, "sub odom 0",
            "err invalid_message sub: udp_port 0 is out of range [1, 65535]");
  ng_expect(
      fd, "sub odom 65536",
      "err invalid_message sub: udp_port 65536 is out of range [1, 65535]");
  ng_expect(fd, "sub lidar 5000",
            "err invalid_message sub: unknown channel 'lidar' (odom, scan or "
            "camera)");
  ng_expect(fd, "unsub sonar",
            "err invalid_message unsub: unknown channel "
            "'sonar' (odom, scan or camera)");
  ng_expect(fd, "sub odom",
            "err invalid_message sub takes 2 arguments, got 1: "
            "sub <odom|scan|camera> <udp_port>");
  ng_expect(fd, "step 0",
            "err invalid_message step: n 0 is out of range [1, "
            "1000000]");
  ng_expect(fd, "speed -1",
            "err invalid_message speed: factor -1 is out of "
            "range [0, 1000] (0 = as fast as possible)");
  ng_expect(fd, "ping", "pong");
  ng_finish(&s, u, fd, -1);
}

static void odom_stream(void **state) {
  (void)state;
  ng_stack s;
  int fd = ng_open(&s, "odom", NULL, NULL);
  /* A long free run along y = -0.3 in the default world. */
  ng_expect(fd, "pause", "ok");
  ng_expect(fd, "teleport -4.5 -0.3 0", "ok");
  ng_expect(fd, "resume", "ok");
  uint16_t up;
  int u = subscribe(fd, "cmd 0.4 0\n", "odom", &up);
  static odom f[1000];
  int n = collect_odom(u, f, 1000, 3000);
  assert_true(n > 100);
  int gaps = 0;
  for (int i = 1; i < n; i++) {
    if (f[i].seq != f[i - 1].seq + 1)
      gaps++;
    assert_true(f[i].seq > f[i - 1].seq);
    assert_true(f[i].t > f[i - 1].t);
  }
  assert_int_equal(gaps, 0);
  /* Rate over simulated time: seq is derived from the tick, t is sim time. */
  double span = f[n - 1].t - f[0].t;
  double rate = (n - 1) / span;
  assert_true(rate > 90 && rate < 110);
  assert_true(fabs((double)(f[n - 1].seq - f[0].seq) / span - 100.0) < 10.0);
  /* Odometry follows the command: forward at 0.4 m/s, no turn. */
  odom *last = &f[n - 1];
  assert_true(fabs(last->v - 0.4) < 0.02);
  assert_true(fabs(last->w) < 1e-3);
  assert_true(last->x > -4.5 + 0.4 * span * 0.5);
  double dx = f[n - 1].x - f[n / 2].x, dt = f[n - 1].t - f[n / 2].t;
  assert_true(fabs(dx / dt - 0.4) < 0.05);
  /* unsub stops the stream. */
  ng_expect(fd, "unsub odom\nping", "pong");
  drain_udp(u);
  uint8_t b[64];
  assert_int_equal(pa_test_udp_recv(u, b, sizeof b, 300), -1);
  /* Subscribing again resumes with seq continuing, never restarting. */
  sub_port(fd, "", "odom", up);
  odom g;
  int r = pa_test_udp_recv(u, b, sizeof b, 2000);
  assert_true(pa_test_parse_odom(b, r, &g));
  assert_true(g.seq > last->seq);
  /* Closing the connection stops it too. */
  close(fd);
  usleep(100000);
  drain_udp(u);
  assert_int_equal(pa_test_udp_recv(u, b, sizeof b, 300), -1);
  ng_finish(&s, u, -1);
}

/* Reads every odom frame queued on fd now (no waiting): count, last seq. */
static int take_odom(int fd, uint32_t *first, uint32_t *last) {
  uint8_t b[2048];
  int n = 0, r;
  odom o;
  while ((r = (int)recv(fd, b, sizeof b, MSG_DONTWAIT)) >= 0) {
    assert_true(pa_test_parse_odom(b, r, &o));
    if (n > 0)
      assert_int_equal(o.seq, *last + 1); /* one subscriber: no gap */
    else if (first)
      *first = o.seq;
    *last = o.seq;
    n++;
  }
  return n;
}

typedef struct odom_counters {
  ng_stack *s;
  uint64_t want;
} odom_counters;

static bool odom_counted(void *arg) {
  odom_counters *c = arg;
  return c->s->st.ctl->health[PA_PROC_NETGW]
             .counters[PA_NETGW_CTR_ODOM_FRAMES] == c->want;
}

static bool is_fifo(pid_t tid, const char *comm, void *arg) {
  (void)comm, (void)arg;
  return sched_getscheduler(tid) == SCHED_FIFO;
}

/* Threads of pid under SCHED_FIFO. */
static int fifo_threads(pid_t pid) {
  int n = pa_test_thread_count(pid, is_fifo, NULL);
  assert_true(n >= 0);
  return n;
}

/* Odom frames are sent by pa-netgw's state-ring thread from a table the
 * loop edits (here with --realtime, so a SCHED_FIFO thread that watches for
 * the due tick; odom_stream runs without it):
 * moving a subscription hands every seq to exactly one port,
 * the health counters match what arrived, and subscription churn from
 * many connections while frames stream never sends to a stale entry. */
static void odom_move_and_churn(void **state) {
  (void)state;
  ng_stack s;
  /* --realtime implies the due-tick watch: both run under the same checks. */
  const char *gw[] = {"--realtime", NULL};
  assert_int_equal(ng_start(&s, "omove", NULL, gw), 0);
  /* Exactly the odom thread is SCHED_FIFO; without the privilege, none
   * (and pa-netgw runs on with a warning). */
  struct sched_param sp = {.sched_priority = 1};
  bool can_rt = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
  if (can_rt) {
    sp.sched_priority = 0;
    assert_int_equal(sched_setscheduler(0, SCHED_OTHER, &sp), 0);
  }
  assert_int_equal(fifo_threads(s.gw), can_rt ? 1 : 0);
  int fd = ng_connect(&s);
  uint16_t pa_, pb;
  int ua = pa_test_udp_bind(&pa_), ub = pa_test_udp_bind(&pb);
  sub_port(fd, "", "odom", pa_);
  uint8_t b[2048];
  assert_true(pa_test_udp_recv(ua, b, sizeof b, 2000) == 36);
  odom o0 = {0};
  assert_true(pa_test_parse_odom(b, 36, &o0));
  usleep(200000);
  /* Move it to port B: the pong comes after the move, and a frame sent
   * before it is already queued on A (loopback delivers inside sendmmsg). */
  sub_port(fd, "", "odom", pb);
  uint32_t last_a = o0.seq, first_b = 0, last_b = 0;
  int na = 1 + take_odom(ua, NULL, &last_a);
  assert_true(na > 5);
  assert_true(pa_test_udp_recv(ub, b, sizeof b, 2000) == 36);
  odom ob = {0};
  assert_true(pa_test_parse_odom(b, 36, &ob));
  first_b = last_b = ob.seq;
  assert_int_equal(first_b, last_a + 1); /* no seq twice, none skipped */
  usleep(200000);
  int nb = 1 + take_odom(ub, NULL, &last_b);
  assert_int_equal(pa_test_udp_recv(ua, b, sizeof b, 100), -1);
  ng_expect(fd, "unsub odom\nping", "pong");
  nb += take_odom(ub, NULL, &last_b);
  assert_int_equal(pa_test_udp_recv(ub, b, sizeof b, 300), -1);
  /* Health: odom frames sent = frames received (the only subscriber). */
  odom_counters oc = {&s, (uint64_t)(na + nb)};
  if (!pa_test_wait_for(odom_counted, &oc, 3000))
    fail_msg("health counts %" PRIu64 " odom frames, %d arrived",
             s.st.ctl->health[PA_PROC_NETGW].counters[PA_NETGW_CTR_ODOM_FRAMES],
             na + nb);
  assert_int_equal(s.st.ctl->health[PA_PROC_NETGW].frames_dropped, 0);
  assert_true(s.st.ctl->health[PA_PROC_NETGW].frames_sent >= oc.want);

  /* Churn: 8 connections subscribe, move, unsubscribe, close and reconnect
   * while frames stream; at the end nothing is subscribed. */
  enum { CH = 8 };
  int c[CH];
  char line[256];
  for (int i = 0; i < CH; i++)
    c[i] = ng_connect(&s);
  for (int round = 0; round < 40; round++) {
    for (int i = 0; i < CH; i++) {
      snprintf(line, sizeof line,
               "sub odom %u\nsub odom %u\nunsub odom\nsub odom %u\n%s",
               pa_, pb, i & 1 ? pa_ : pb, round % 10 == 9 ? "" : "unsub odom\n");
      assert_int_equal(pa_test_send_str(c[i], line), 0);
    }
    if (round % 10 == 9)
      for (int i = 0; i < CH; i++) { /* close while subscribed */
        close(c[i]);
        c[i] = ng_connect(&s);
        assert_true(c[i] >= 0);
      }
    usleep(5000);
  }
  for (int i = 0; i < CH; i++)
    ng_expect(c[i], "ping", "pong");
  usleep(50000);
  drain_udp(ua);
  drain_udp(ub);
  assert_int_equal(pa_test_udp_recv(ua, b, sizeof b, 300), -1);
  assert_int_equal(pa_test_udp_recv(ub, b, sizeof b, 1), -1);
  ng_expect(fd, "ping", "pong");
  for (int i = 0; i < CH; i++)
    close(c[i]);
  ng_finish(&s, fd, ua, ub, -1);
}

static void scan_stream(void **state) {
  (void)state;
  ng_stack s;
  int fd = ng_open(&s, "scan", NULL, NULL);
  int u = subscribe(fd, "", "scan", NULL);
  static uint8_t b[65536];
  uint32_t seq0 = 0, prev = 0;
  double t0 = 0, t = 0;
  int n = 0;
  int64_t end = pa_test_now_ms() + 3000;
  while (pa_test_now_ms() < end) {
    int r = pa_test_udp_recv(u, b, sizeof b, 1000);
    assert_true(r > 0);
    assert_memory_equal(b, "SCN1", 4);
    uint32_t seq, count;
    float amin, inc, rmin, rmax;
    memcpy(&seq, b + 4, 4);
    memcpy(&t, b + 8, 8);
    memcpy(&amin, b + 16, 4);
    memcpy(&inc, b + 20, 4);
    memcpy(&rmin, b + 24, 4);
    memcpy(&rmax, b + 28, 4);
    memcpy(&count, b + 32, 4);
    assert_int_equal(count, 360);
    assert_int_equal(r, 36 + 4 * 360);
    assert_true(fabsf(inc - (float)(2 * M_PI / 360)) < 1e-5f);
    assert_true(rmax > rmin && rmin >= 0);
    for (uint32_t i = 0; i < count; i++) {
      float rg;
      memcpy(&rg, b + 36 + 4 * i, 4);
      assert_true(rg >= rmin - 1e-4f && rg <= rmax + 1e-4f);
    }
    if (n == 0) {
      seq0 = seq;
      t0 = t;
    } else {
      assert_int_equal(seq, prev + 1);
    }
    prev = seq;
    n++;
  }
  assert_true(n >= 10);
  double rate = (prev - seq0) / (t - t0);
  assert_true(rate > 9 && rate < 11);
  close(fd);
  usleep(100000);
  drain_udp(u);
  assert_int_equal(pa_test_udp_recv(u, b, sizeof b, 300), -1);
  ng_finish(&s, u, -1);
}

static void two_clients(void **state) {
  (void)state;
  ng_stack s;
  const char *sim[] = {"--robots", "2", NULL};
  assert_int_equal(ng_start(&s, "two", sim, NULL), 0);
  int a = ng_connect(&s), b = ng_connect(&s);
  /* robot 1 starts beside robot 0 on +x (the free pose nearest (0, 0) after
   * it): robot 0 backs away from it */
  int ua = subscribe(a, "cmd -0.3 0\n", "odom", NULL);
  ng_expect(b, "robot 1", "ok");
  int ub = subscribe(b, "cmd 0 0.8\n", "odom", NULL);
  usleep(1500000);
  drain_udp(ua);
  drain_udp(ub);
  static odom fa[200], fb[200];
  int na = collect_odom(ua, fa, 200, 1000), nb = collect_odom(ub, fb, 200, 1000);
  assert_true(na > 50 && nb > 50);
  assert_true(fabs(fa[na - 1].v + 0.3) < 0.02 && fabs(fa[na - 1].w) < 1e-3);
  assert_true(fabs(fb[nb - 1].v) < 1e-3 && fabs(fb[nb - 1].w - 0.8) < 0.02);
  assert_true(fb[nb - 1].theta != fb[0].theta);
  ng_finish(&s, a, b, ua, ub, -1);
}

static void json_actions(void **state) {
  (void)state;
  ng_stack s;
  const char *sim[] = {"--robots", "2", NULL};
  int fd = ng_open(&s, "json", sim, NULL);
  json_t *j;
  /* wait for the first scan (10 Hz) to be in the ring, however busy the
   * machine */
  for (int64_t end = pa_test_now_ms() + 10000; pa_test_now_ms() < end;) {
    j = expect_json_ok(fd, "{\"type\":\"command\",\"action\":\"get_state\"}",
                       "state");
    json_t *sc = json_object_get(
        json_object_get(json_object_get(j, "data"), "sensors"), "scan");
    bool have = json_array_size(json_object_get(sc, "ranges")) == 360;
    json_decref(j);
    if (have)
      break;
    usleep(10000);
  }
  /* request_id echo, string and number */
  j = expect_json_ok(fd, "{\"type\": \"command\", \"protocol_version\": 2, "
                         "\"request_id\": \"run-001\", \"action\": "
                         "\"get_state\", \"data\": {\"robot\": 0}}",
                     "state");
  assert_string_equal(jstr(j, "request_id", NULL), "run-001");
  json_t *d = json_object_get(j, "data");
  assert_int_equal(json_array_size(json_object_get(d, "pose")), 3);
  assert_int_equal(json_array_size(json_object_get(d, "odom")), 3);
  assert_int_equal(json_array_size(json_object_get(d, "velocity")), 3);
  assert_int_equal(json_array_size(json_object_get(d, "twist")), 3);
  assert_true(json_is_number(json_object_get(d, "depth")));
  assert_true(json_is_number(json_object_get(d, "head")));
  assert_true(json_is_integer(json_object_get(d, "tick")));
  json_t *scan = json_object_get(json_object_get(d, "sensors"), "scan");
  assert_int_equal(json_array_size(json_object_get(scan, "ranges")), 360);
  json_decref(j);
  /* a client string shaped like the gateway's internal placeholders */
  j = expect_json_ok(fd, "{\"type\":\"command\",\"request_id\":"
                         "\"@@pa-ranges-0@@\",\"action\":\"get_state\"}",
                     "state");
  assert_string_equal(jstr(j, "request_id", NULL), "@@pa-ranges-0@@");
  json_decref(j);
  j = expect_json_ok(fd, "{\"type\":\"command\",\"request_id\":42,\"action\":"
                         "\"get_sensors\",\"data\":{\"robot\":\"robot1\"}}",
                     "state");
  assert_int_equal(json_integer_value(json_object_get(j, "request_id")), 42);
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(j, "data"), "robot")),
                   1);
  json_decref(j);
  /* lockstep */
  json_decref(expect_json_ok(fd, "{\"type\":\"sim_control\",\"action\":\"pause\"}",
                             "response"));
  j = expect_json_ok(fd, "{\"type\":\"command\",\"action\":\"step\",\"data\":"
                         "{\"v\":0.5,\"w\":0.1,\"steps\":20}}",
                     "state");
  d = json_object_get(j, "data");
  json_int_t tick = json_integer_value(json_object_get(d, "tick"));
  assert_true(json_is_true(json_object_get(d, "paused")));
  assert_int_equal(json_array_size(json_object_get(
                       json_object_get(json_object_get(d, "sensors"), "scan"),
                       "ranges")),
                   360);
  json_decref(j);
  j = expect_json_ok(fd, "{\"type\":\"command\",\"action\":\"step\"}", "state");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "data"),
                                                      "tick")),
                   tick + 1);
  json_decref(j);
  j = expect_json_ok(fd, "{\"type\":\"sim_control\",\"action\":\"step_n\","
                         "\"data\":{\"steps\":5}}",
                     "response");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "data"),
                                                      "tick")),
                   tick + 6);
  json_decref(j);
  /* drive */
  json_decref(expect_json_ok(fd, "{\"type\":\"command\",\"action\":"
                                 "\"set_velocity\",\"data\":{\"v\":0.2,\"w\":0,"
                                 "\"head\":0.1}}",
                             "response"));
  json_decref(expect_json_ok(fd, "{\"type\":\"command\",\"action\":"
                                 "\"set_velocity_local\",\"data\":{\"forward\":"
                                 "0.2,\"angular\":0.1}}",
                             "response"));
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"set_velocity_local\","
                      "\"data\":{\"forward\":0.2,\"left\":0.3}}",
                  "unsupported_control_scheme");
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"set_velocity_global\","
                      "\"data\":{\"x\":0.2,\"y\":0.3}}",
                  "unsupported_control_scheme");
  json_decref(expect_json_ok(fd, "{\"type\":\"command\",\"action\":\"stop\"}",
                             "response"));
  /* poses */
  j = expect_json_ok(fd, "{\"type\":\"command\",\"action\":\"set_pose\","
                         "\"data\":{\"name\":\"robot1\",\"pose\":[1,1,0.5]}}",
                     "response");
  json_decref(j);
  j = expect_json_ok(fd, "{\"type\":\"command\",\"action\":\"get_pose\","
                         "\"data\":{\"name\":\"robot1\"}}",
                     "response");
  json_t *pose = json_object_get(json_object_get(j, "data"), "pose");
  assert_true(fabs(json_number_value(json_array_get(pose, 0)) - 1) < 1e-9);
  assert_true(fabs(json_number_value(json_array_get(pose, 2)) - 0.5) < 1e-9);
  json_decref(j);
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"set_pose\","
                      "\"data\":{\"robot\":0,\"pose\":[1,1]}}",
                  "invalid_action_shape");
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"set_pose\","
                      "\"data\":{\"robot\":0,\"pose\":[1,\"a\",0]}}",
                  "invalid_action_shape");
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"set_pose\","
                      "\"data\":{\"robot\":0,\"pose\":[-5.5,0,0]}}",
                  "blocked_pose");
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"get_pose\","
                      "\"data\":{\"name\":\"nothing\"}}",
                  "unknown_object");
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"get_state\","
                      "\"data\":{\"robot\":9}}",
                  "unknown_robot");
  /* robots */
  j = expect_json_ok(fd, "{\"type\":\"command\",\"action\":\"list_robots\"}",
                     "response");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "data"),
                                                      "count")),
                   2);
  json_decref(j);
  j = expect_json_ok(fd, "{\"type\":\"command\",\"action\":\"spawn_robot\","
                         "\"data\":{\"name\":\"extra\",\"pose\":[-1,-1,0],"
                         "\"drive\":\"omni\"}}",
                     "response");
  json_int_t rid =
      json_integer_value(json_object_get(json_object_get(j, "data"), "robot"));
  assert_int_equal(rid, 2);
  json_decref(j);
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"spawn_robot\","
                      "\"data\":{\"name\":\"extra\",\"pose\":[-1,-1,0]}}",
                  "spawn_failed");
  /* an omni robot drives in the world frame */
  json_decref(expect_json_ok(fd, "{\"type\":\"command\",\"action\":"
                                 "\"set_velocity_global\",\"data\":{\"robot\":"
                                 "\"extra\",\"x\":0.1,\"y\":0.1}}",
                             "response"));
  json_decref(expect_json_ok(fd, "{\"type\":\"command\",\"action\":"
                                 "\"set_nav_path\",\"data\":{\"robot\":"
                                 "\"extra\",\"path\":[[0,0],[1,1]]}}",
                             "response"));
  json_decref(expect_json_ok(fd, "{\"type\":\"command\",\"action\":"
                                 "\"remove_robot\",\"data\":{\"robot\":"
                                 "\"extra\"}}",
                             "response"));
  /* its drawing went with it (not to the next robot in its slot) */
  static pa_nav_block nav0;
  assert_true(pa_stack_nav_read(&s.st, &nav0));
  for (int i = 0; i < PA_NAV_OVERLAYS; i++)
    assert_int_equal(nav0.ov[i].robot, UINT32_MAX);
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"remove_robot\","
                      "\"data\":{\"robot\":\"extra\"}}",
                  "unknown_robot");
  /* obstacles */
  json_decref(expect_json_ok(fd,
                             "{\"type\":\"command\",\"action\":"
                             "\"spawn_obstacle\",\"data\":{\"name\":\"box1\","
                             "\"shape\":\"box\",\"pose\":[1.5,-1.6,0],\"size\":"
                             "[0.5,0.5]}}",
                             "response"));
  j = expect_json_ok(fd, "{\"type\":\"command\",\"action\":\"list_obstacles\"}",
                     "response");
  json_t *obs = json_object_get(json_object_get(j, "data"), "obstacles");
  bool found = false;
  for (size_t i = 0; i < json_array_size(obs); i++)
    found |= !strcmp(jstr(json_array_get(obs, i), "name", NULL), "box1");
  assert_true(found);
  json_decref(j);
  /* A world snapshot left mid-update (as by a writer killed inside it):
   * busy, not a torn list; readable again once it is whole. pa-sim writes
   * the snapshot only on world changes, and none is sent meanwhile. */
  pa_stack_world_begin(&s.st);
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"list_obstacles\"}",
                  "busy");
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"get_state\","
                      "\"data\":{\"robot\":1}}",
                  "busy"); /* not unknown_robot */
  ng_expect(fd, "robot 1",
            "err busy the world snapshot is being rewritten; try again");
  pa_stack_world_end(&s.st);
  json_decref(expect_json_ok(
      fd, "{\"type\":\"command\",\"action\":\"list_obstacles\"}", "response"));
  json_decref(expect_json_ok(fd, "{\"type\":\"command\",\"action\":\"get_pose\","
                                 "\"data\":{\"name\":\"box1\"}}",
                             "response"));
  json_decref(expect_json_ok(fd, "{\"type\":\"command\",\"action\":"
                                 "\"remove_obstacle\",\"data\":{\"name\":"
                                 "\"box1\"}}",
                             "response"));
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"remove_obstacle\","
                      "\"data\":{\"name\":\"box1\"}}",
                  "unknown_object");
  /* world and streams */
  j = expect_json_ok(fd, "{\"type\":\"command\",\"action\":\"get_map_info\"}",
                     "response");
  json_int_t mw =
      json_integer_value(json_object_get(json_object_get(j, "data"), "width"));
  json_int_t mh =
      json_integer_value(json_object_get(json_object_get(j, "data"), "height"));
  json_int_t occ = json_integer_value(
      json_object_get(json_object_get(j, "data"), "occupied_cells"));
  assert_true(mw > 0 && mh > 0 && occ > 0);
  json_decref(j);
  /* terrain grid: blocked = occupied without inflation, more with it */
  j = expect_json_ok(fd, "{\"type\":\"command\",\"action\":"
                         "\"get_terrain_grid\"}",
                     "response");
  d = json_object_get(j, "data");
  assert_int_equal(json_array_size(json_object_get(d, "rows")), mh);
  assert_int_equal(strlen(json_string_value(json_array_get(
                       json_object_get(d, "rows"), 0))),
                   mw);
  assert_int_equal(json_integer_value(json_object_get(d, "blocked_cells")), occ);
  json_decref(j);
  j = expect_json_ok(fd, "{\"type\":\"command\",\"action\":"
                         "\"get_terrain_grid\",\"data\":{\"inflation\":0.2,"
                         "\"stride\":2}}",
                     "response");
  d = json_object_get(j, "data");
  assert_int_equal(json_integer_value(json_object_get(d, "width")), (mw + 1) / 2);
  assert_true(json_integer_value(json_object_get(d, "blocked_cells")) * 4 > occ);
  json_decref(j);
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"get_terrain_grid\","
                      "\"data\":{\"inflation\":-1}}",
                  "invalid_message");
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"get_terrain_grid\","
                      "\"data\":{\"stride\":0}}",
                  "invalid_message");
  uint16_t up;
  int u = pa_test_udp_bind(&up);
  char req[256];
  snprintf(req, sizeof req, "{\"type\":\"command\",\"action\":\"subscribe\","
                            "\"data\":{\"channel\":\"odom\",\"udp_port\":%u}}",
           up);
  json_decref(expect_json_ok(fd, req, "response"));
  json_decref(expect_json_ok(fd, "{\"type\":\"sim_control\",\"action\":"
                                 "\"resume\"}",
                             "response"));
  uint8_t b[64];
  odom o;
  int r = pa_test_udp_recv(u, b, sizeof b, 2000);
  assert_true(pa_test_parse_odom(b, r, &o));
  json_decref(expect_json_ok(fd, "{\"type\":\"command\",\"action\":"
                                 "\"unsubscribe\",\"data\":{\"channel\":"
                                 "\"odom\"}}",
                             "response"));
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"subscribe\","
                      "\"data\":{\"channel\":\"odom\",\"udp_port\":0}}",
                  "invalid_message");
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"subscribe\","
                      "\"data\":{\"channel\":\"radar\",\"udp_port\":9}}",
                  "invalid_message");
  close(u);
  /* sim_control */
  json_decref(expect_json_ok(fd, "{\"type\":\"sim_control\",\"action\":"
                                 "\"set_time_scale\",\"data\":{\"scale\":2}}",
                             "response"));
  j = expect_json_ok(fd, "{\"type\":\"sim_control\",\"action\":\"get_status\"}",
                     "response");
  assert_true(fabs(json_number_value(json_object_get(json_object_get(j, "data"),
                                                     "speed")) -
                   2) < 1e-9);
  json_decref(j);
  json_decref(expect_json_ok(fd, "{\"type\":\"sim_control\",\"action\":"
                                 "\"reset\"}",
                             "response"));
  /* errors */
  expect_json_err(fd, "{\"type\":\"query\",\"action\":\"get_state\"}",
                  "unknown_type");
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"fly\"}",
                  "unknown_action");
  expect_json_err(fd,
                  "{\"type\":\"command\",\"action\":\"export_dataset\","
                  "\"data\":{\"name\":\"a\",\"export_dir\":\"b\"}}",
                  "invalid_message"); /* two directories */
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"set_wheels\"}",
                  "invalid_action_shape"); /* no wheel speeds */
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"set_property\"}",
                  "invalid_message"); /* no property named */
  expect_json_err(fd, "{\"type\":\"command\",\"action\":", "invalid_message");
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"step\",\"data\":"
                      "{\"v\":\"fast\"}}",
                  "invalid_action_shape");
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"step\",\"data\":"
                      "{\"vy\":0.3}}",
                  "unsupported_control_scheme");
  expect_json_err(fd, "{\"type\":\"command\",\"protocol_version\":3,"
                      "\"action\":\"get_state\"}",
                  "invalid_message");
  /* batch: in order, mixed waits and immediate answers */
  j = expect_json_ok(fd, "{\"type\":\"batch\",\"request_id\":\"b1\","
                         "\"requests\":[{\"type\":\"command\",\"request_id\":1,"
                         "\"action\":\"get_pose\"},{\"type\":\"command\","
                         "\"request_id\":2,\"action\":\"step\"},{\"type\":"
                         "\"command\",\"request_id\":3,\"action\":\"fly\"}]}",
                     "response");
  assert_string_equal(jstr(j, "request_id", NULL), "b1");
  json_t *rs = json_object_get(json_object_get(j, "data"), "responses");
  assert_int_equal(json_array_size(rs), 3);
  for (int i = 0; i < 3; i++)
    assert_int_equal(json_integer_value(json_object_get(json_array_get(rs, i),
                                                        "request_id")),
                     i + 1);
  assert_string_equal(jstr(json_array_get(rs, 1), "type", NULL), "state");
  assert_string_equal(jstr(json_array_get(rs, 2), "error", "code"),
                      "unknown_action");
  json_decref(j);
  j = expect_json_ok(fd, "{\"type\":\"batch\",\"requests\":[{\"type\":"
                         "\"batch\",\"requests\":[]},7]}",
                     "response");
  rs = json_object_get(json_object_get(j, "data"), "responses");
  assert_int_equal(json_array_size(rs), 2);
  assert_string_equal(jstr(json_array_get(rs, 0), "error", "code"),
                      "invalid_message");
  assert_string_equal(jstr(json_array_get(rs, 1), "error", "code"),
                      "invalid_message");
  json_decref(j);
  expect_json_err(fd, "{\"type\":\"batch\",\"requests\":{}}",
                  "invalid_message");
  char *big = malloc(65 * 40 + 64);
  strcpy(big, "{\"type\":\"batch\",\"requests\":[");
  for (int i = 0; i < 65; i++)
    strcat(big, i ? ",{\"type\":\"command\",\"action\":\"get_pose\"}"
                  : "{\"type\":\"command\",\"action\":\"get_pose\"}");
  strcat(big, "]}");
  expect_json_err(fd, big, "batch_limit");
  free(big);
  /* 1 MiB JSON line: too_long, and the connection goes on */
  size_t n = (1u << 20) + 100;
  char *huge = malloc(n + 2);
  memset(huge, ' ', n);
  huge[0] = '{';
  huge[n] = '\n';
  huge[n + 1] = '\0';
  assert_int_equal(pa_test_send_str(fd, huge), 0);
  free(huge);
  char *line = malloc(1 << 16);
  assert_true(pa_test_read_line(fd, line, 1 << 16, 5000) > 0);
  assert_non_null(strstr(line, "\"too_long\""));
  free(line);
  ng_expect(fd, "ping", "pong");
  ng_finish(&s, fd, -1);
}

/* A well-behaved client's odom stream, read by a thread. */
typedef struct watcher {
  int fd;
  atomic_bool stop; /* set by the test, read by the watcher thread */
  uint32_t first, last;
  int frames, gaps;
} watcher;

static void *watch(void *arg) {
  watcher *w = arg;
  uint8_t b[64];
  while (!atomic_load(&w->stop)) {
    int r = pa_test_udp_recv(w->fd, b, sizeof b, 100);
    odom o;
    if (r < 0 || !pa_test_parse_odom(b, r, &o))
      continue;
    if (w->frames++ == 0)
      w->first = o.seq;
    else if (o.seq != w->last + 1)
      w->gaps++;
    w->last = o.seq;
  }
  return NULL;
}

static void bad_input(void **state) {
  (void)state;
  ng_stack s;
  int good = ng_open(&s, "bad", NULL, NULL);
  watcher w = {0};
  w.fd = subscribe(good, "", "odom", NULL);
  pthread_t th;
  pthread_create(&th, NULL, watch, &w);

  int fd = ng_connect(&s);
  /* NUL bytes and binary garbage */
  assert_int_equal(send(fd, "pi\0ng\n", 6, 0), 6);
  char buf[2048];
  assert_true(pa_test_read_line(fd, buf, sizeof buf, 5000) > 0);
  assert_string_equal(buf, "err invalid_message binary data: byte 0x00 at "
                           "column 3");
  uint8_t junk[512];
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = (uint8_t)(i * 37 + 11);
  junk[sizeof junk - 1] = '\n';
  for (size_t i = 0; i < sizeof junk - 1; i++)
    if (junk[i] == '\n')
      junk[i] = 0xff;
  assert_int_equal(send(fd, junk, sizeof junk, 0), (ssize_t)sizeof junk);
  assert_true(pa_test_read_line(fd, buf, sizeof buf, 5000) > 0);
  assert_non_null(strstr(buf, "err invalid_message binary data"));
  /* a text line over 1 KiB: too_long, the rest of the line is dropped */
  char longl[3000];
  memset(longl, 'a', sizeof longl);
  memcpy(longl, "cmd ", 4);
  longl[sizeof longl - 1] = '\0';
  ng_expect_prefix(fd, longl, "err too_long line is");
  ng_expect(fd, "ping", "pong");
  /* a long line arriving in pieces without a newline yet */
  for (int i = 0; i < 3; i++)
    assert_int_equal(pa_test_send_str(fd, longl), 0);
  ng_expect_prefix(fd, "", "err too_long line is longer than the text limit");
  ng_expect(fd, "ping", "pong");
  /* one command split over many segments */
  const char *slow = "cmd 0.1 0.2\nping\n";
  for (const char *p = slow; *p; p++) {
    assert_int_equal(send(fd, p, 1, 0), 1);
    usleep(2000);
  }
  assert_true(pa_test_read_line(fd, buf, sizeof buf, 5000) > 0);
  assert_string_equal(buf, "pong");
  /* thousands of commands in one segment: no replies, then pong */
  size_t nn = 5000, len = 0;
  char *many = malloc(nn * 16 + 16);
  for (size_t i = 0; i < nn; i++)
    len += (size_t)sprintf(many + len, "cmd 0.%zu 0\n", i % 10);
  strcpy(many + len, "ping\n");
  assert_int_equal(pa_test_send_str(fd, many), 0);
  free(many);
  assert_true(pa_test_read_line(fd, buf, sizeof buf, 10000) > 0);
  assert_string_equal(buf, "pong");
  /* wrong arity, non-finite, ports, channels, CRLF */
  ng_expect(fd, "stop now",
            "err invalid_message stop takes 0 arguments, got 1: "
            "stop");
  ng_expect(fd, "teleport 1 2 -nan",
            "err invalid_action_shape teleport: theta '-nan' is not a finite "
            "number");
  ng_expect(fd, "sub scan 99999",
            "err invalid_message sub: udp_port 99999 is "
            "out of range [1, 65535]");
  ng_expect(fd, "sub scan -5",
            "err invalid_message sub: udp_port '-5' is not a "
            "whole number");
  ng_expect(fd, "ping\r", "pong");
  ng_expect_prefix(fd, "{not json", "{\"type\":\"error\"");
  close(fd);
  /* A client that floods and disconnects abruptly (RST). */
  fd = ng_connect(&s);
  struct linger lg = {1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  pa_test_send_str(fd, "ping\nping\nstep 5\n");
  close(fd);
  usleep(500000);
  ng_expect(good, "ping", "pong");
  atomic_store(&w.stop, true);
  pthread_join(th, NULL);
  assert_true(w.frames > 50);
  assert_int_equal(w.gaps, 0);
  ng_finish(&s, w.fd, good, -1);
}

static void many_clients(void **state) {
  (void)state;
  ng_stack s;
  /* 200 clients of one address: past the default per-peer cap */
  const char *const gw[] = {"--max_clients_per_peer", "0", NULL};
  assert_int_equal(ng_start(&s, "many", NULL, gw), 0);
  int base_fds = pa_test_fd_count(s.gw);
  assert_true(base_fds > 0);
  enum { N = 200 };
  static int fds[N];
  for (int i = 0; i < N; i++) {
    fds[i] = ng_connect(&s);
    assert_true(fds[i] >= 0);
  }
  for (int i = 0; i < N; i++)
    assert_int_equal(pa_test_send_str(fds[i], "ping\n"), 0);
  char buf[64];
  for (int i = 0; i < N; i++) {
    assert_true(pa_test_read_line(fds[i], buf, sizeof buf, 10000) > 0);
    assert_string_equal(buf, "pong");
  }
  int64_t until = pa_test_now_ms() + 3000; /* health is published 4x/s */
  while (s.st.ctl->health[PA_PROC_NETGW].clients != N &&
         pa_test_now_ms() < until)
    usleep(10000);
  assert_int_equal(s.st.ctl->health[PA_PROC_NETGW].clients, N);
  for (int i = 0; i < N; i++)
    close(fds[i]);
  /* connect / disconnect churn, some mid-request */
  for (int i = 0; i < 300; i++) {
    int fd = ng_connect(&s);
    assert_true(fd >= 0);
    if (i % 3 == 0)
      pa_test_send_str(fd, "{\"type\":\"command\",\"action\":\"get_state\"}\n");
    else if (i % 3 == 1)
      pa_test_send_str(fd, "sub camera 9\nsub odom 9\n");
    close(fd);
  }
  int64_t end = pa_test_now_ms() + 5000;
  while (pa_test_fd_count(s.gw) != base_fds && pa_test_now_ms() < end)
    usleep(10000);
  assert_int_equal(pa_test_fd_count(s.gw), base_fds);
  /* camera demand went back to zero with the connections */
  assert_int_equal(s.st.cam[0].subscribers, 0);
  assert_int_equal(ng_stop(&s), 0);
}

static void auth_limits_busy(void **state) {
  (void)state;
  ng_stack s;
  const char *gw[] = {"--token",      "s3cret", "--max_clients",
                      "3",            "--request_timeout_ms", "300",
                      "--max_output", "65536",  NULL};
  int fd = ng_open(&s, "auth", NULL, gw);
  ng_expect(fd, "ping", "err not_authorized send auth <token> first");
  ng_expect(fd, "cmd 1 0", "err not_authorized send auth <token> first");
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"get_state\"}",
                  "not_authorized");
  ng_expect(fd, "auth wrong", "err not_authorized wrong token");
  ng_expect(fd, "auth s3cret", "ok");
  ng_expect(fd, "ping", "pong");
  int j = ng_connect(&s);
  expect_json_err(j, "{\"type\":\"command\",\"action\":\"auth\",\"data\":"
                     "{\"token\":\"nope\"}}",
                  "not_authorized");
  json_decref(expect_json_ok(j, "{\"type\":\"command\",\"action\":\"auth\","
                                "\"data\":{\"token\":\"s3cret\"}}",
                             "response"));
  json_decref(expect_json_ok(j, "{\"type\":\"command\",\"action\":"
                                "\"get_state\"}",
                             "state"));
  /* the fourth client is turned away with a reason */
  int c3 = ng_connect(&s);
  int c4 = ng_connect(&s);
  char buf[256];
  assert_true(pa_test_read_line(c4, buf, sizeof buf, 5000) > 0);
  assert_string_equal(buf, "err busy too many clients");
  close(c4);
  close(c3);
  /* the sim stops answering: busy after the timeout, not a hang */
  kill(s.sim, SIGSTOP);
  int64_t t0 = pa_test_now_ms();
  ng_expect(fd, "step 1",
            "err busy the simulator did not answer within 300 ms");
  assert_true(pa_test_now_ms() - t0 >= 250);
  expect_json_err(j, "{\"type\":\"command\",\"action\":\"step\"}", "busy");
  kill(s.sim, SIGCONT);
  /* the late replies are discarded; the next request gets its own answer */
  ng_expect(fd, "pause", "ok");
  ng_expect(fd, "step 2", "ok");
  ng_expect(fd, "ping", "pong");
  /* a client that never reads is cut off once 64 KiB of replies wait */
  c3 = ng_connect(&s);
  ng_expect(c3, "auth s3cret", "ok");
  int rcv = 4096;
  setsockopt(c3, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
  char *flood = malloc(1 << 20);
  for (size_t i = 0; i < (1u << 20) / 5; i++)
    memcpy(flood + i * 5, "help\n", 5);
  flood[(1u << 20) / 5 * 5] = '\0';
  bool cut = false;
  for (int k = 0; k < 64 && !cut; k++) {
    ssize_t w = send(c3, flood, strlen(flood), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && errno != EAGAIN)
      cut = true;
    usleep(20000);
  }
  free(flood);
  assert_true(cut);
  close(c3);
  usleep(300000); /* let the gateway see the close before the next connect */
  /* ... but one that only sends valid commands hears nothing and stays */
  int quiet = ng_connect(&s);
  ng_expect(quiet, "auth s3cret", "ok");
  char *cmds = malloc(20000 * 12 + 1);
  size_t len = 0;
  for (int i = 0; i < 20000; i++)
    len += (size_t)sprintf(cmds + len, "cmd 0.1 0\n");
  for (int k = 0; k < 5; k++)
    assert_int_equal(pa_test_send_str(quiet, cmds), 0);
  free(cmds);
  ng_expect(quiet, "ping", "pong");
  ng_finish(&s, quiet, j, fd, -1);
}

/* With the real renderer: demand starts rendering, images reassemble whole. */
static void camera_stream(void **state) {
  (void)state;
  char bin[512];
  pa_test_bin(bin, sizeof bin, "pa-render");
  if (access(bin, X_OK) != 0)
    skip(); /* built without the renderer */
  ng_stack s;
  const char *sim[] = {"--camera_width", "160", "--camera_height", "120", NULL};
  assert_int_equal(ng_start(&s, "cam", sim, NULL), 0);
  char log[600];
  snprintf(log, sizeof log, "%s/%s-render.log", pa_test_tmpdir(), s.inst);
  char *argv[] = {bin, "--instance", s.inst, NULL};
  pid_t r = pa_test_spawn(argv, log);
  int64_t end = pa_test_now_ms() + 30000;
  while (!s.st.ctl->health[PA_PROC_RENDER].ready && pa_test_now_ms() < end &&
         pa_test_alive(r))
    usleep(10000);
  if (!s.st.ctl->health[PA_PROC_RENDER].ready) {
    pa_test_dump_file(log);
    fail_msg("pa-render did not become ready");
  }
  int fd = ng_connect(&s);
  int u = subscribe(fd, "", "camera", NULL);
  assert_int_equal(s.st.cam[0].subscribers, 1);
  enum { W = 160, H = 120, SIZE = W * H * 3, CHUNKS = (SIZE + 1399) / 1400 };
  static uint8_t img[SIZE], b[2048];
  uint32_t cur = 0, prev = 0, whole = 0, got = 0;
  bool seen[CHUNKS];
  end = pa_test_now_ms() + 20000;
  while (whole < 10 && pa_test_now_ms() < end) {
    int n = pa_test_udp_recv(u, b, sizeof b, 5000);
    assert_true(n > 24 && n <= 24 + 1400);
    pa_test_cam_chunk c = {0};
    assert_true(pa_test_parse_cam(b, n, &c));
    uint32_t seq = c.seq, off = c.off;
    uint16_t idx = c.idx;
    assert_int_equal(c.w, W);
    assert_int_equal(c.h, H);
    assert_int_equal(c.size, SIZE);
    assert_int_equal(c.cnt, CHUNKS);
    assert_int_equal(off, idx * 1400u);
    if (seq != cur) {
      assert_true(seq > cur); /* images never go backwards */
      cur = seq;
      got = 0;
      memset(seen, 0, sizeof seen);
    }
    if (!seen[idx]) {
      seen[idx] = true;
      memcpy(img + off, b + 24, (size_t)n - 24);
      if (++got == CHUNKS) {
        if (whole)
          assert_int_equal(cur, prev + 1); /* loopback loses nothing */
        prev = cur;
        whole++;
      }
    }
  }
  assert_int_equal(whole, 10);
  /* a rendered scene is not one flat colour */
  bool varied = false;
  for (uint32_t i = 3; i < SIZE && !varied; i++)
    varied = img[i] != img[i % 3];
  assert_true(varied);
  close(fd);
  end = pa_test_now_ms() + 5000;
  while (s.st.cam[0].subscribers != 0 && pa_test_now_ms() < end)
    usleep(5000);
  assert_int_equal(s.st.cam[0].subscribers, 0);
  close(u);
  pa_test_stop(r, SIGTERM, 5000);
  assert_int_equal(ng_stop(&s), 0);
}

/* set_map and generate_map through the real gateway and pa-sim: the new
 * map is what get_map_info and the terrain grid show, the same seed gives
 * the same cells, robots stay on free cells and the sim runs on; bad
 * requests are refused with the map unchanged. */
static void map_actions(void **state) {
  (void)state;
  ng_stack s;
  /* the files below are written to the test's temp dir */
  const char *sim[] = {"--data_dir", pa_test_tmpdir(), NULL};
  int fd = ng_open(&s, "maps", sim, NULL);
  const char *info = "{\"type\":\"command\",\"action\":\"get_map_info\"}";
  json_t *j = expect_json_ok(fd, info, "response");
  json_int_t w0 = dint(j, "width"), h0 = dint(j, "height"), g0 = dint(j, "gen");
  json_decref(j);
  const char *gen7 = "{\"type\":\"command\",\"action\":\"generate_map\","
                     "\"data\":{\"width\":12,\"height\":8,\"resolution\":"
                     "0.05,\"seed\":7,\"rooms\":[2,1],\"clutter\":1}}";
  j = expect_json_ok(fd, gen7, "response");
  assert_int_equal(dint(j, "width"), 240);
  assert_int_equal(dint(j, "height"), 160);
  /* the default robot starts at (0, 0): the middle room's centre, clear */
  assert_int_equal(dint(j, "robots_moved"), 0);
  json_t *org = json_object_get(json_object_get(j, "data"), "origin");
  double ox = json_number_value(json_array_get(org, 0));
  double oy = json_number_value(json_array_get(org, 1));
  assert_true(ox < 0 && ox > -12 && oy < 0 && oy > -8);
  json_decref(j);
  j = expect_json_ok(fd, info, "response");
  assert_int_equal(dint(j, "width"), 240);
  assert_true(dint(j, "gen") > g0);
  json_int_t g1 = dint(j, "gen");
  json_decref(j);
  char *rows7 = terrain(fd);
  assert_int_equal(strlen(rows7), 240 * 160);
  assert_non_null(strchr(rows7, '#'));
  assert_non_null(strchr(rows7, '.'));
  /* the robot is on the new map, on a free cell, and the sim runs on */
  j = expect_json_ok(fd, "{\"type\":\"command\",\"action\":\"step\","
                         "\"data\":{\"v\":0.2,\"steps\":40}}",
                     "state");
  json_t *pose = json_object_get(json_object_get(j, "data"), "pose");
  double px = json_number_value(json_array_get(pose, 0));
  double py = json_number_value(json_array_get(pose, 1));
  int cx = (int)floor((px - ox) / 0.05), cy = (int)floor((py - oy) / 0.05);
  assert_true(cx >= 0 && cx < 240 && cy >= 0 && cy < 160);
  assert_int_equal(rows7[(size_t)cy * 240 + (size_t)cx], '.'); /* row 0: south */
  json_decref(j);
  /* another seed, other cells; the same seed, the same cells */
  json_decref(expect_json_ok(
      fd, "{\"type\":\"command\",\"action\":\"generate_map\",\"data\":"
          "{\"width\":12,\"height\":8,\"resolution\":0.05,\"seed\":8,"
          "\"rooms\":[2,1],\"clutter\":1}}",
      "response"));
  char *rows8 = terrain(fd);
  assert_true(strcmp(rows7, rows8) != 0);
  json_decref(expect_json_ok( /* the largest seed JSON carries exactly */
      fd, "{\"type\":\"command\",\"action\":\"generate_map\",\"data\":"
          "{\"width\":12,\"height\":8,\"seed\":9007199254740991}}",
      "response"));
  json_decref(expect_json_ok(fd, gen7, "response"));
  char *again = terrain(fd);
  assert_string_equal(rows7, again);
  free(rows7);
  free(rows8);
  free(again);
  /* refused, and the map stays */
  j = expect_json_ok(fd, info, "response");
  json_int_t g2 = dint(j, "gen");
  assert_true(g2 > g1);
  json_decref(j);
  static const char *const bad[] = {
      "{\"width\":1}", "{\"rooms\":[0,1]}", "{\"rooms\":[1.5,1]}",
      "{\"clutter\":65}", "{\"resolution\":0}", "{\"seed\":-1}",
      "{\"width\":500,\"height\":500,\"resolution\":0.05}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char req[256];
    expect_json_err(fd, command(req, sizeof req, "generate_map", bad[i]),
                    "invalid_message");
  }
  static const char *const bad_set[] = {
      "{}", "{\"map_yaml\":\"maps/x.yaml\"}", "{\"map\":\"office\"}",
      "{\"map\":\"default\",\"map_yaml\":\"/x.yaml\"}",
      "{\"map_yaml\":\"/nonexistent/playarea-test.yaml\"}"};
  for (size_t i = 0; i < sizeof bad_set / sizeof bad_set[0]; i++) {
    char req[256];
    expect_json_err(fd, command(req, sizeof req, "set_map", bad_set[i]),
                    "invalid_message");
  }
  j = expect_json_ok(fd, info, "response");
  assert_int_equal(dint(j, "gen"), g2);
  assert_int_equal(dint(j, "width"), 240);
  json_decref(j);
  /* a map_server map from a file */
  pa_grid g = {.width = 100, .height = 60, .resolution = 0.1,
               .origin_x = -5, .origin_y = -3,
               .occupied_min = PA_CELL_OCCUPIED};
  g.cells = calloc(100 * 60, 1);
  assert_non_null(g.cells);
  for (uint32_t y = 0; y < 60; y++)
    for (uint32_t x = 0; x < 100; x++)
      if (x == 0 || y == 0 || x == 99 || y == 59)
        g.cells[y * 100 + x] = PA_CELL_OCCUPIED;
  char yaml[512], png[512], err[256], req[1024];
  snprintf(yaml, sizeof yaml, "%s/%s-map.yaml", pa_test_tmpdir(), s.inst);
  snprintf(png, sizeof png, "%s/%s-map.png", pa_test_tmpdir(), s.inst);
  assert_int_equal(pa_map_save(&g, yaml, png, err, sizeof err), 0);
  free(g.cells);
  j = expect_json_ok(fd, command_str(req, sizeof req, "set_map", "map_yaml", yaml),
                     "response");
  assert_int_equal(dint(j, "width"), 100);
  assert_int_equal(dint(j, "height"), 60);
  json_decref(j);
  /* the same file by a path relative to pa-sim's --data_dir */
  j = expect_json_ok(fd,
                     command_str(req, sizeof req, "set_map", "map_yaml",
                                 strrchr(yaml, '/') + 1),
                     "response");
  assert_int_equal(dint(j, "width"), 100);
  json_decref(j);
  /* a whole scenario: that map (relative to the world file), two robots,
   * an obstacle; reset goes back to it */
  char world[512], bad_world[512];
  snprintf(world, sizeof world, "%s/%s.world.yaml", pa_test_tmpdir(), s.inst);
  snprintf(bad_world, sizeof bad_world, "%s/%s-bad.world.yaml",
           pa_test_tmpdir(), s.inst);
  const char *mapname = strrchr(yaml, '/') + 1;
  char text[512];
  snprintf(text, sizeof text,
           "map: %s\nrobots:\n  - {name: alpha, pose: [-2, 0, 0]}\n"
           "  - {name: beta, pose: [2, 0, 3.1], drive: omni}\n"
           "obstacles:\n  - {name: crate, shape: box, pose: [0, 1.5, 0], "
           "size: [0.5, 0.5]}\n",
           mapname);
  write_text(world, text);
  snprintf(text, sizeof text, /* a robot on the outer wall */
           "map: %s\nrobots:\n  - {name: alpha, pose: [0, 2.95, 0]}\n", mapname);
  write_text(bad_world, text);
  expect_json_err(
      fd, command_str(req, sizeof req, "set_scenario", "world", bad_world),
      "invalid_message");
  j = expect_json_ok(
      fd, command_str(req, sizeof req, "set_scenario", "world", world),
      "response");
  assert_int_equal(dint(j, "robots"), 2);
  assert_int_equal(dint(j, "obstacles"), 1);
  assert_int_equal(dint(j, "width"), 100);
  json_decref(j);
  unlink(world);
  unlink(bad_world);
  unlink(yaml);
  unlink(png);
  j = expect_json_ok(fd, "{\"type\":\"command\",\"action\":\"list_robots\"}",
                     "response");
  json_t *robots = json_object_get(json_object_get(j, "data"), "robots");
  assert_int_equal(json_array_size(robots), 2);
  assert_string_equal(jstr(json_array_get(robots, 0), "name", NULL), "alpha");
  assert_string_equal(jstr(json_array_get(robots, 1), "name", NULL), "beta");
  json_decref(j);
  j = expect_json_ok(fd, "{\"type\":\"command\",\"action\":\"step\","
                         "\"data\":{\"robot\":\"alpha\",\"v\":0.3,\"steps\":40}}",
                     "state");
  json_decref(j);
  json_decref(expect_json_ok(
      fd, "{\"type\":\"command\",\"action\":\"reset\"}", "response"));
  j = expect_json_ok(fd, "{\"type\":\"command\",\"action\":\"get_pose\","
                         "\"data\":{\"name\":\"alpha\"}}",
                     "response");
  pose = json_object_get(json_object_get(j, "data"), "pose");
  assert_true(json_number_value(json_array_get(pose, 0)) == -2.0 &&
              json_number_value(json_array_get(pose, 1)) == 0.0);
  json_decref(j);
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"set_scenario\","
                      "\"data\":{\"world\":\"x.world.yaml\"}}",
                  "invalid_message");
  expect_json_err(fd, "{\"type\":\"command\",\"action\":\"set_scenario\","
                      "\"data\":{}}",
                  "invalid_message");
  /* navigation drawings for the viewer: in shared memory as sent */
  j = expect_json_ok(fd, "{\"type\":\"command\",\"action\":\"set_nav_path\","
                         "\"data\":{\"robot\":\"beta\",\"path\":[[0,0],[1,0.5],"
                         "[2,-1]]}}",
                     "response");
  assert_int_equal(dint(j, "points"), 3);
  assert_int_equal(dint(j, "robot"), 1);
  json_decref(j);
  json_decref(expect_json_ok(
      fd, "{\"type\":\"command\",\"action\":\"set_waypoints\",\"data\":"
          "{\"robot\":\"beta\",\"waypoints\":[[2,-1]]}}",
      "response"));
  static pa_nav_block nav;
  assert_true(pa_stack_nav_read(&s.st, &nav));
  int slot = -1;
  for (int i = 0; i < PA_NAV_OVERLAYS; i++)
    if (nav.ov[i].robot == 1)
      slot = i;
  assert_true(slot >= 0);
  assert_int_equal(nav.ov[slot].path_n, 3);
  assert_true(nav.ov[slot].path[1][0] == 1.0f && nav.ov[slot].path[1][1] == 0.5f);
  assert_int_equal(nav.ov[slot].wp_n, 1);
  uint32_t ngen = nav.gen;
  static const char *const bad_nav[] = {
      "{\"path\":[[0,0],[1]]}", "{\"path\":[[0,\"x\"]]}", "{\"path\":{}}",
      "{\"path\":[[0,1e300]]}", "{\"robot\":\"nobody\",\"path\":[]}"};
  for (size_t i = 0; i < sizeof bad_nav / sizeof bad_nav[0]; i++) {
    expect_json_err(fd, command(req, sizeof req, "set_nav_path", bad_nav[i]),
                    i == 4 ? "unknown_robot" : "invalid_action_shape");
  }
  assert_true(pa_stack_nav_read(&s.st, &nav));
  assert_int_equal(nav.gen, ngen); /* refused: nothing written */
  json_decref(expect_json_ok(
      fd, "{\"type\":\"command\",\"action\":\"clear_nav\"}", "response"));
  assert_true(pa_stack_nav_read(&s.st, &nav));
  for (int i = 0; i < PA_NAV_OVERLAYS; i++)
    assert_int_equal(nav.ov[i].robot, UINT32_MAX);
  /* the default world again: one robot, the built-in map */
  j = expect_json_ok(fd, "{\"type\":\"command\",\"action\":\"set_scenario\","
                         "\"data\":{\"world\":\"default\"}}",
                     "response");
  assert_int_equal(dint(j, "robots"), 1);
  assert_int_equal(dint(j, "width"), w0);
  json_decref(j);
  /* and the built-in default again */
  j = expect_json_ok(fd, "{\"type\":\"command\",\"action\":\"set_map\","
                         "\"data\":{\"map\":\"default\"}}",
                     "response");
  assert_int_equal(dint(j, "width"), w0);
  assert_int_equal(dint(j, "height"), h0);
  json_decref(j);
  ng_finish(&s, fd, -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(text_session), cmocka_unit_test(odom_stream),
      cmocka_unit_test(odom_move_and_churn),
      cmocka_unit_test(scan_stream),  cmocka_unit_test(two_clients),
      cmocka_unit_test(json_actions), cmocka_unit_test(bad_input),
      cmocka_unit_test(many_clients), cmocka_unit_test(auth_limits_busy),
      cmocka_unit_test(map_actions),
      cmocka_unit_test(camera_stream),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
