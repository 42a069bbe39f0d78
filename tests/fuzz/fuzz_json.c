/* fuzz_json.c - libFuzzer target: the gateway's request path (netgw/core/gw.c
 * line framing, netgw/json/json.c envelope + every action, netgw/text/text.c
 * commands), one input = the bytes one client sends.
 *
 * In-process, like tests/test_netgw.c: a test instance whose world snapshot,
 * state tick, scans and map this file writes itself, a real pa_netgw on it
 * whose event loop this thread turns, a real TCP connection per input, and
 * a fake pa-sim that answers every queued command at once (every fourth with
 * a refusal, so both completion paths run). An input is done when the reply
 * to a ping appended after it arrives, or the gateway closes the
 * connection; a gateway that does neither within 10 s is a lock-up and
 * aborts. The gateway and the client are bound to 127.0.0.2, where UDP
 * streams then go: a fuzzed `sub` cannot reach a socket bound to 127.0.0.1
 * (another test's on the same machine). Every line of an input is also
 * parsed twice, by pa_json_load_line and by json_loadb: a difference in
 * the tree or the error aborts (netgw/json/json_lex.c's fast path). */
#define _GNU_SOURCE
#include "json_int.h"
#include "pa_util.h"
#include "testutil.h" /* header-only parts: this target does not link it */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_INPUT_MAX (64u * 1024u) /* bytes of one client's input */
#define FZ_STALL_NS (10LL * 1000000000LL)
#define FZ_ADDR "127.0.0.2"

static char inst[PA_SHM_INSTANCE_MAX];
static pa_stack st;
static pa_netgw *gw;
static char sentinel[128];   /* the last line of every input */
static char sentinel_id[64]; /* what its reply echoes */
static unsigned replies;     /* per input: fake sim replies so far */
static bool echo;

static void die(const char *what, const char *err) {
  fprintf(stderr, "fuzz_json: %s: %s\n", what, err);
  abort();
}

static void teardown(void) {
  if (gw)
    pa_netgw_destroy(gw);
  gw = NULL;
  if (st.ctl)
    pa_stack_detach(&st);
  if (inst[0])
    pa_stack_unlink(inst);
}

/* Plays pa-sim's part of the world: two robots, an obstacle, a map, one
 * state tick and one scan per robot. */
static void write_world(void) {
  pa_stack_world_begin(&st);
  for (int i = 0; i < 2; i++) {
    pa_robot_info *r = &st.robots[i];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, i ? "scout" : "robot0");
    r->active = 1;
    r->gen = 1;
    r->drive = (uint32_t)i; /* differential, omni */
    r->radius = 0.18f;
    r->wheel_base = 0.29f; /* set_wheels needs one */
    r->max_v = r->max_vy = 1.0f;
    r->max_w = 3.0f;
    r->head_limit = 2.6f;
    r->laser_beams = 8;
    r->laser_range_min = 0.15f;
    r->laser_range_max = 12.0f;
    r->cam_width = 32;
    r->cam_height = 24;
    r->cam_fov = 1.0f;
  }
  pa_obstacle_info *o = &st.obstacles[0];
  memset(o, 0, sizeof *o);
  snprintf(o->name, sizeof o->name, "crate");
  o->active = 1;
  o->gen = 1;
  o->x = 1.0;
  o->size_x = o->size_y = 0.4;
  st.ctl->robot_count = 2;
  st.ctl->obstacle_count = 1;
  pa_stack_world_end(&st);
  st.ctl->control_hz = 200;
  st.ctl->scan_hz = 10;
  st.ctl->feedback_hz = 100;
  st.ctl->camera_hz = 10;

  static int8_t cells[40 * 30];
  for (int i = 0; i < 40 * 30; i++)
    cells[i] = (int8_t)(i % 7 == 0 ? 100 : i % 11 == 0 ? -1 : 0);
  char err[256];
  if (pa_stack_map_publish(&st, 40, 30, 0.1, -2.0, -1.5, 0.0, cells, 100, err,
                           sizeof err) != 0)
    die("pa_stack_map_publish", err);

  struct {
    pa_tick t;
    pa_robot_state r[2];
  } tick = {.t = {.tick = 100,
                  .sim_time = 0.5,
                  .wall_ns = pa_now_ns(),
                  .robot_count = 2,
                  .speed = 1.0,
                  .world_gen = st.ctl->world_gen}};
  for (uint32_t i = 0; i < 2; i++) {
    tick.r[i].id = i;
    tick.r[i].gen = 1;
    tick.r[i].flags = PA_RS_ACTIVE;
    tick.r[i].x = i * 0.5;
    tick.r[i].theta = 0.25;
  }
  if (pa_ring_write(st.state, &tick, sizeof tick) < 0)
    die("state ring", "write failed");
  for (uint32_t i = 0; i < 2; i++) {
    struct {
      pa_scan s;
      float r[8];
    } scan = {.s = {.tick = 100,
                    .sim_time = 0.5,
                    .robot = i,
                    .seq = 1,
                    .angle_min = -3.14f,
                    .angle_increment = 0.785f,
                    .range_min = 0.15f,
                    .range_max = 12.0f,
                    .count = 8}};
    for (int k = 0; k < 8; k++)
      scan.r[k] = 0.5f + (float)k;
    if (pa_ring_write(st.scan, &scan, sizeof scan) < 0)
      die("scan ring", "write failed");
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  pa_log_init("fuzz_json", PA_LOG_ERROR); /* slow-client warnings are noise */
  /* as pa-netgw's main: a peer that closed is an error, not a signal (the
   * gateway closes a connection after 3 wrong tokens, for one) */
  signal(SIGPIPE, SIG_IGN);
  echo = getenv("PA_FUZZ_ECHO") && getenv("PA_FUZZ_ECHO")[0] == '1';
  snprintf(inst, sizeof inst, "t%d-fz", (int)getpid());
  pa_stack_def d = pa_test_small_def(inst, 64, 32, 24, 256);
  char err[256];
  if (pa_stack_create(&st, &d, err, sizeof err) != 0)
    die("pa_stack_create", err);
  atexit(teardown);
  pa_netgw_def gd = pa_netgw_def_default();
  gd.tcp_port = 0;
  gd.bind = FZ_ADDR;
  gd.max_clients = 4;
  gd.request_timeout_ms = 2000;
  gw = pa_netgw_create(&gd, &st, err, sizeof err);
  if (!gw)
    die("pa_netgw_create", err);
  write_world();
  /* unguessable by the input, so only the harness's own ping matches */
  snprintf(sentinel_id, sizeof sentinel_id, "fz-end-%d-%lld", (int)getpid(),
           (long long)pa_now_ns());
  snprintf(
      sentinel, sizeof sentinel,
      "\n{\"type\":\"command\",\"action\":\"ping\",\"request_id\":\"%s\"}\n",
      sentinel_id);
  return 0;
}

/* The fake pa-sim: answers every queued command. Returns how many. */
static int fake_sim(void) {
  pa_cmd c;
  int n = 0;
  while (pa_queue_peek(st.cmd, &c) >= 0) {
    pa_queue_pop(st.cmd);
    n++;
    if (c.flags & PA_CMDF_NO_REPLY)
      continue;
    pa_reply r = pa_test_reply_to(&c);
    r.tick = 101;
    r.sim_time = 0.505;
    /* the command's numbers back as its results; the robot a real one */
    memcpy(r.res_raw, c.args_raw, sizeof c.args_raw);
    r.pose.robot = c.robot < 2 ? c.robot : 0;
    if (++replies % 4 == 0) {
      r.status = PA_ERR_BLOCKED_POSE;
      snprintf(r.msg, sizeof r.msg, "fuzz: refused");
    }
    if (pa_queue_push(st.reply, &r) != 0)
      die("reply queue", "full");
  }
  if (n > 0) {
    /* Wake the loop's reply handler at once, as the bridge thread will a
     * moment later (a spare wake-up finds the queue empty): saves a thread
     * hop per sim round trip, most of an input's time. */
    uint64_t one = 1;
    if (write(gw->br_reply.efd, &one, sizeof one) < 0)
      die("reply eventfd", strerror(errno));
  }
  return n;
}

/* One turn of the gateway's loop, then a pause of ~10 us when idle says so
 * (libevent's timers run on the coarse clock, 4 ms steps here, so a timed
 * blocking turn would wait that long). */
static void turn(bool idle) {
  event_base_loop(gw->base, EVLOOP_NONBLOCK);
  if (idle)
    usleep(10);
}

static int client_connect(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0)
    die("socket", strerror(errno));
  struct sockaddr_in a = {.sin_family = AF_INET};
  inet_pton(AF_INET, FZ_ADDR, &a.sin_addr);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0)
    die("bind " FZ_ADDR, strerror(errno));
  a.sin_port = htons((uint16_t)pa_netgw_port(gw));
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS)
    die("connect", strerror(errno));
  return fd;
}

/* pa_json_load_line and json_loadb agree on s[0..n): the same tree, or
 * the same error at the same place. */
static void same_parse(const char *s, size_t n) {
  json_error_t e1, e2;
  json_t *a = json_loadb(s, n, JSON_REJECT_DUPLICATES, &e1);
  json_t *b = pa_json_load_line(s, n, &e2);
  bool same = a && b ? json_equal(a, b)
                     : !a && !b && !strcmp(e1.text, e2.text) &&
                           e1.line == e2.line && e1.column == e2.column &&
                           e1.position == e2.position;
  json_decref(a);
  json_decref(b);
  if (!same)
    die("pa_json_load_line", "differs from json_loadb on a line");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FZ_INPUT_MAX)
    return -1; /* not added to the corpus */
  /* each line as the framing passes it (and with its '\r'), and all of it */
  for (size_t at = 0; at < size;) {
    const uint8_t *nl = memchr(data + at, '\n', size - at);
    size_t end = nl ? (size_t)(nl - data) : size;
    same_parse((const char *)data + at, end - at);
    if (end > at && data[end - 1] == '\r')
      same_parse((const char *)data + at, end - at - 1);
    at = end + 1;
  }
  if (memchr(data, '\n', size)) /* else the one line was all of it */
    same_parse((const char *)data, size);
  size_t slen = strlen(sentinel);
  uint8_t *out = malloc(size + slen);
  if (!out)
    return 0;
  memcpy(out, data, size);
  memcpy(out + size, sentinel, slen);
  size_t total = size + slen, off = 0;
  replies = 0;

  int fd = client_connect();
  char tail[128];
  size_t tail_n = 0;
  size_t idn = strlen(sentinel_id);
  bool done = false;
  int64_t last = pa_now_ns();
  while (!done) {
    bool progress = fake_sim() > 0;
    turn(false);
    if (off < total) {
      ssize_t w = send(fd, out + off, total - off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) {
        off += (size_t)w;
        progress = true;
      } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                 errno != ENOTCONN) {
        done = true; /* the gateway closed on us (EPIPE, ECONNRESET) */
      }
    }
    /* the id may straddle two reads: search the previous read's end too */
    char buf[128 + 16384];
    memcpy(buf, tail, tail_n);
    ssize_t r = recv(fd, buf + tail_n, sizeof buf - 128, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                   errno != ENOTCONN)) {
      done = true;
    } else if (r > 0) {
      progress = true;
      if (echo) /* PA_FUZZ_ECHO=1: show the replies (replaying a crash) */
        fwrite(buf + tail_n, 1, (size_t)r, stderr);
      size_t n = tail_n + (size_t)r;
      if (memmem(buf, n, sentinel_id, idn))
        done = true;
      tail_n = n < idn ? n : idn;
      memcpy(tail, buf + n - tail_n, tail_n);
    }
    int64_t now = pa_now_ns();
    if (progress)
      last = now;
    else if (now - last > FZ_STALL_NS)
      die("gateway lock-up", "no reply and no close for 10 s");
    if (!progress && !done)
      turn(true);
  }
  /* a reset, not a FIN: no TIME_WAIT per input, whose pile-up makes
   * bind() search longer and longer (most of the time after a minute) */
  struct linger lg = {1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  close(fd);
  /* the gateway sees the close and frees the client before the next input */
  int64_t t0 = pa_now_ns();
  while (gw->n_clients > 0) {
    fake_sim();
    turn(true);
    if (pa_now_ns() - t0 > FZ_STALL_NS)
      die("gateway lock-up", "a closed client was not freed within 10 s");
  }
  fake_sim(); /* commands of the closed client, answered to no one */
  turn(false);
  free(out);
  return 0;
}
