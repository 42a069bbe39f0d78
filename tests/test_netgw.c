/* test_netgw.c - pa_netgw modules: the text parser, the UDP frame encoders,
 * and the camera path of an in-process gateway on a test instance, where the
 * test plays pa-sim and pa-render by writing the world snapshot and camera
 * ring records itself. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <poll.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "netgw.h"
#include "netgw_harness.h"
#include "json_int.h"  /* internals: the JSON action table's rows */
#include "netgw_int.h" /* internals: the JSON action table */

#include "pa_props.h"

#include "testutil.h"
#include <jansson.h>

/* ---- text parser ---------------------------------------------------------*/

typedef struct tcase {
  const char *line;
  pa_status st;
  const char *msg; /* expected message prefix (errors) */
} tcase;

static void text_parse_errors(void **state) {
  (void)state;
  static const tcase cases[] = {
      {"cmd 1 2", PA_OK, ""},
      {"cmd 1 2 3", PA_OK, ""},
      {"  cmd\t-1.5e-1  +2  ", PA_OK, ""},
      {"cmd 1 2\r", PA_OK, ""},
      {"", PA_OK, ""},
      {" \t ", PA_OK, ""},
      {"cmd", PA_ERR_INVALID_ACTION_SHAPE, "cmd takes 2 to 3 arguments, got 0"},
      {"cmd 1 2 3 4", PA_ERR_INVALID_ACTION_SHAPE, "cmd takes 2 to 3"},
      {"cmd nan 0", PA_ERR_INVALID_ACTION_SHAPE, "cmd: v 'nan' is not a finite"},
      {"cmd 0 inf", PA_ERR_INVALID_ACTION_SHAPE, "cmd: w 'inf' is not a finite"},
      {"cmd 0 1e400", PA_ERR_INVALID_ACTION_SHAPE, "cmd: w '1e400' is not finite"},
      {"cmd 0x10 0", PA_ERR_INVALID_ACTION_SHAPE, "cmd: v '0x10'"},
      {"cmd 1..2 0", PA_ERR_INVALID_ACTION_SHAPE, "cmd: v '1..2'"},
      {"cmd - 0", PA_ERR_INVALID_ACTION_SHAPE, "cmd: v '-'"},
      {"sub odom 0", PA_ERR_INVALID_MESSAGE, "sub: udp_port 0 is out of range"},
      {"sub odom 65536", PA_ERR_INVALID_MESSAGE, "sub: udp_port 65536"},
      {"sub odom 99999999999", PA_ERR_INVALID_MESSAGE, "sub: udp_port '99999999999'"},
      {"sub odom 1.5", PA_ERR_INVALID_MESSAGE, "sub: udp_port '1.5'"},
      {"sub imu 5000", PA_ERR_INVALID_MESSAGE, "sub: unknown channel 'imu'"},
      {"sub odom", PA_ERR_INVALID_MESSAGE, "sub takes 2 arguments, got 1"},
      {"unsub", PA_ERR_INVALID_MESSAGE, "unsub takes 1 argument, got 0"},
      {"unsub x", PA_ERR_INVALID_MESSAGE, "unsub: unknown channel 'x'"},
      {"step 0", PA_ERR_INVALID_MESSAGE, "step: n 0 is out of range"},
      {"step 1000001", PA_ERR_INVALID_MESSAGE, "step: n 1000001"},
      {"step 1 2", PA_ERR_INVALID_MESSAGE, "step takes 0 to 1 arguments"},
      {"speed", PA_ERR_INVALID_MESSAGE, "speed takes 1 argument, got 0"},
      {"speed -0.5", PA_ERR_INVALID_MESSAGE, "speed: factor -0.5 is out of range"},
      {"speed nan", PA_ERR_INVALID_ACTION_SHAPE, "speed: factor 'nan'"},
      {"teleport 1 2", PA_ERR_INVALID_ACTION_SHAPE, "teleport takes 3 arguments"},
      {"ping pong", PA_ERR_INVALID_MESSAGE, "ping takes 0 arguments, got 1"},
      {"PING", PA_ERR_UNKNOWN_ACTION, "unknown command 'PING'"},
      {"a b c d e f g h i", PA_ERR_INVALID_MESSAGE, "too many arguments"},
      {"robot", PA_ERR_INVALID_MESSAGE, "robot takes 1 argument, got 0"},
      {"caf\xc3\xa9", PA_ERR_INVALID_MESSAGE, "binary data: byte 0xc3 at column 4"},
      {"pi\x7fng", PA_ERR_INVALID_MESSAGE, "binary data: byte 0x7f at column 3"},
      {"ping\r\r", PA_ERR_INVALID_MESSAGE, "binary data: byte 0x0d at column 5"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pa_text_cmd t;
    char msg[256] = "";
    pa_status st = pa_netgw_text_parse(cases[i].line, strlen(cases[i].line),
                                       &t, msg, sizeof msg);
    if (st != cases[i].st ||
        strncmp(msg, cases[i].msg, strlen(cases[i].msg)) != 0)
      fail_msg("'%s': got %s '%s', expected %s '%s'", cases[i].line,
               pa_status_code(st), msg, pa_status_code(cases[i].st),
               cases[i].msg);
  }
  /* NUL inside the line, and a line over the limit */
  pa_text_cmd t;
  char msg[256];
  assert_int_equal(pa_netgw_text_parse("cmd\0 1 2", 8, &t, msg, sizeof msg),
                   PA_ERR_INVALID_MESSAGE);
  assert_string_equal(msg, "binary data: byte 0x00 at column 4");
  char big[PA_NETGW_TEXT_MAX + 2];
  memset(big, ' ', sizeof big);
  assert_int_equal(pa_netgw_text_parse(big, sizeof big, &t, msg, sizeof msg),
                   PA_ERR_TOO_LONG);
  assert_int_equal(pa_netgw_text_parse(big, PA_NETGW_TEXT_MAX, &t, msg,
                                       sizeof msg),
                   PA_OK);
  assert_int_equal(t.kind, PA_TXT_EMPTY);
}

static void text_parse_values(void **state) {
  (void)state;
  pa_text_cmd t;
  char msg[256];
  assert_int_equal(pa_netgw_text_parse("cmd 0.5 -0.25", 13, &t, msg, sizeof msg),
                   PA_OK);
  assert_int_equal(t.kind, PA_TXT_CMD);
  assert_true(t.a[0] == 0.5 && t.a[1] == -0.25 && t.a[2] == 0);
  const char *l = "cmd 1 2 0.75";
  assert_int_equal(pa_netgw_text_parse(l, strlen(l), &t, msg, sizeof msg), PA_OK);
  assert_true(t.a[2] == 0.75);
  l = "sub camera 65535";
  assert_int_equal(pa_netgw_text_parse(l, strlen(l), &t, msg, sizeof msg), PA_OK);
  assert_int_equal(t.kind, PA_TXT_SUB);
  assert_int_equal(t.channel, PA_CH_CAMERA);
  assert_int_equal(t.port, 65535);
  l = "step";
  assert_int_equal(pa_netgw_text_parse(l, strlen(l), &t, msg, sizeof msg), PA_OK);
  assert_int_equal(t.n, 1);
  l = "step 250";
  assert_int_equal(pa_netgw_text_parse(l, strlen(l), &t, msg, sizeof msg), PA_OK);
  assert_int_equal(t.n, 250);
  l = "robot scout_2";
  assert_int_equal(pa_netgw_text_parse(l, strlen(l), &t, msg, sizeof msg), PA_OK);
  assert_int_equal(t.kind, PA_TXT_ROBOT);
  assert_string_equal(t.arg, "scout_2");
  l = "teleport -1 2.5 3.1";
  assert_int_equal(pa_netgw_text_parse(l, strlen(l), &t, msg, sizeof msg), PA_OK);
  assert_true(t.a[0] == -1 && t.a[1] == 2.5 && t.a[2] == 3.1);
  l = "speed 0";
  assert_int_equal(pa_netgw_text_parse(l, strlen(l), &t, msg, sizeof msg), PA_OK);
  assert_true(t.a[0] == 0);
  /* auth takes tokens as long as --token and JSON auth do (255 bytes) */
  char line[300] = "auth ";
  memset(line + 5, 'k', 255);
  line[5 + 255] = '\0';
  assert_int_equal(pa_netgw_text_parse(line, strlen(line), &t, msg, sizeof msg),
                   PA_OK);
  assert_int_equal(t.kind, PA_TXT_AUTH);
  assert_int_equal(strlen(t.arg), 255);
  assert_memory_equal(t.arg, line + 5, 255);
  line[5 + 255] = 'k';
  line[5 + 256] = '\0';
  assert_int_equal(pa_netgw_text_parse(line, strlen(line), &t, msg, sizeof msg),
                   PA_ERR_INVALID_MESSAGE);
  assert_string_equal(msg, "token 2 is 256 bytes long (limit 255)");
}

/* ---- frames --------------------------------------------------------------*/

static void frames_layout(void **state) {
  (void)state;
  uint8_t o[PA_ODOM_FRAME_SIZE];
  pa_netgw_odom_encode(o, 0x01020304u, 1.5, 1.0f, -2.0f, 0.5f, 0.25f, -0.125f);
  /* bytes as Python struct.pack('<4sId5f', ...) gives them */
  static const uint8_t want[36] = {
      'O',  'D',  'M',  '1',  0x04, 0x03, 0x02, 0x01, 0,    0,    0,    0,
      0,    0,    0xf8, 0x3f, 0,    0,    0x80, 0x3f, 0,    0,    0,    0xc0,
      0,    0,    0,    0x3f, 0,    0,    0x80, 0x3e, 0,    0,    0,    0xbe};
  assert_memory_equal(o, want, 36);

  pa_scan s;
  memset(&s, 0, sizeof s);
  s.seq = 7;
  s.sim_time = 2.0;
  s.angle_min = -1.0f;
  s.angle_increment = 0.5f;
  s.range_min = 0.25f;
  s.range_max = 12.0f;
  s.count = 360;
  uint8_t h[PA_SCAN_HEADER_SIZE];
  pa_netgw_scan_header(h, &s);
  static const uint8_t wants[36] = {
      'S', 'C', 'N', '1', 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0,
      0x80, 0xbf, 0, 0, 0, 0x3f, 0, 0, 0x80, 0x3e, 0, 0, 0x40, 0x41, 0x68, 1, 0, 0};
  assert_memory_equal(h, wants, 36);

  pa_frame f = {.seq = 9, .width = 100, .height = 10, .size = 3000};
  assert_int_equal(pa_netgw_cam_chunk_count(3000, 1400), 3);
  assert_int_equal(pa_netgw_cam_chunk_count(2800, 1400), 2);
  assert_int_equal(pa_netgw_cam_chunk_count(1920u * 1080u * 3u, 64), 0);
  uint8_t c[PA_CAM_HEADER_SIZE];
  uint32_t off, len;
  pa_netgw_cam_header(c, &f, 1400, 2, 3, &off, &len);
  assert_int_equal(off, 2800);
  assert_int_equal(len, 200);
  static const uint8_t wantc[24] = {'C', 'A', 'M', '1', 9, 0, 0, 0,
                                    100, 0, 10, 0, 0xb8, 0x0b, 0, 0,
                                    0xf0, 0x0a, 0, 0, 2, 0, 3, 0};
  assert_memory_equal(c, wantc, 24);

  /* odom seq: one per tick pair at 100 of 200 Hz, exact at the edges */
  assert_int_equal(pa_netgw_odom_seq(0, 100, 200), 0);
  assert_int_equal(pa_netgw_odom_seq(1, 100, 200), 0);
  assert_int_equal(pa_netgw_odom_seq(2, 100, 200), 1);
  assert_int_equal(pa_netgw_odom_seq(3000, 30, 1000), 90);
  assert_int_equal(pa_netgw_odom_seq(100, 100, 300), 33);
  assert_int_equal(pa_netgw_odom_seq(10, 100, 0), 0);
}

/* ---- camera path through an in-process gateway ---------------------------*/

typedef struct fixture {
  char inst[PA_SHM_INSTANCE_MAX];
  pa_stack st;
  pa_netgw *g;
  pthread_t th;
  char data_dir[64]; /* the gateway's --data_dir: record_mcap's files */
} fixture;

static void *run_gw(void *arg) {
  pa_netgw_run(arg, false);
  return NULL;
}

/* An in-process gateway on a new instance; timeout_ms 0 = the default. */
static void fixture_up_ms(fixture *f, unsigned chunk, unsigned timeout_ms) {
  pa_test_instance(f->inst, sizeof f->inst, "cam");
  pa_stack_def d = pa_stack_def_default();
  snprintf(d.instance, sizeof d.instance, "%s", f->inst);
  d.max_robots = 4;
  d.max_cam_width = 160;
  d.max_cam_height = 120;
  char err[256];
  assert_int_equal(pa_stack_create(&f->st, &d, err, sizeof err), 0);
  /* play pa-sim: two robots in the world snapshot */
  pa_stack_world_begin(&f->st);
  for (int i = 0; i < 2; i++) {
    pa_robot_info *r = &f->st.robots[i];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "r%d", i);
    r->active = 1;
  }
  f->st.ctl->robot_count = 2;
  pa_stack_world_end(&f->st);
  f->st.cam[1].subscribers = 5; /* stale demand a restarted netgw clears */
  pa_netgw_def gd = pa_netgw_def_default();
  gd.tcp_port = 0;
  /* The fake sim's SSL field opens the SSL ports: the OS picks them. */
  gd.ssl_control_port = gd.ssl_blue_port = gd.ssl_yellow_port = 0;
  gd.camera_chunk = chunk;
  /* A directory of this test's own, never files by fixed name beside a
   * concurrent run's. */
  snprintf(f->data_dir, sizeof f->data_dir, "/tmp/pa-netgw-test-XXXXXX");
  assert_non_null(mkdtemp(f->data_dir));
  gd.data_dir = f->data_dir;
  if (timeout_ms)
    gd.request_timeout_ms = timeout_ms;
  f->g = pa_netgw_create(&gd, &f->st, err, sizeof err);
  if (!f->g)
    fail_msg("pa_netgw_create: %s", err);
  assert_int_equal(f->st.cam[1].subscribers, 0);
  assert_int_equal(f->st.ctl->tcp_port, pa_netgw_port(f->g));
  assert_int_equal(pthread_create(&f->th, NULL, run_gw, f->g), 0);
}

static void fixture_up(fixture *f, unsigned chunk) {
  fixture_up_ms(f, chunk, 0);
}

static void fixture_down(fixture *f) {
  pa_netgw_stop(f->g);
  pthread_join(f->th, NULL);
  pa_netgw_destroy(f->g);
  assert_int_equal(f->st.ctl->tcp_port, 0);
  pa_stack_detach(&f->st);
  pa_stack_unlink(f->inst);
  DIR *d = opendir(f->data_dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    char p[128];
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
        snprintf(p, sizeof p, "%s/%s", f->data_dir, e->d_name) < (int)sizeof p)
      unlink(p);
  }
  if (d)
    closedir(d);
  rmdir(f->data_dir);
}

static void write_frame(pa_stack *st, uint32_t robot, uint32_t seq,
                        uint16_t w, uint16_t h) {
  uint32_t size = (uint32_t)w * h * 3;
  uint8_t *rec = pa_ring_write_begin(st->camera, sizeof(pa_frame) + size);
  assert_non_null(rec);
  pa_frame *f = (pa_frame *)rec;
  memset(f, 0, sizeof *f);
  f->robot = robot;
  f->seq = seq;
  f->width = w;
  f->height = h;
  f->size = size;
  uint8_t *rgb = rec + sizeof *f;
  for (uint32_t i = 0; i < size; i++)
    rgb[i] = (uint8_t)(i * 7 + seq * 13 + (i >> 9));
  assert_true(pa_ring_write_commit(st->camera) > 0);
}

typedef struct demand_arg {
  pa_stack *st;
  uint32_t robot, v;
} demand_arg;

static bool demand_reached(void *arg) {
  demand_arg *d = arg;
  return __atomic_load_n(&d->st->cam[d->robot].subscribers, __ATOMIC_ACQUIRE) ==
         d->v;
}

static bool demand_is(pa_stack *st, uint32_t robot, uint32_t v) {
  demand_arg d = {st, robot, v};
  return pa_test_wait_for(demand_reached, &d, 5000);
}

static bool cmd_queued(void *arg) {
  pa_stack *st = arg;
  return pa_queue_count(st->cmd) > 0;
}

/* Receives one whole image by reassembling its chunks; checks every byte. */
static void receive_image(int u, uint32_t seq, uint16_t w, uint16_t h,
                          unsigned chunk) {
  uint32_t size = (uint32_t)w * h * 3;
  uint32_t count = (size + chunk - 1) / chunk;
  uint8_t *img = calloc(1, size);
  uint8_t *seen = calloc(count, 1);
  uint32_t got = 0;
  static uint8_t b[65536];
  while (got < count) {
    int r = pa_test_udp_recv(u, b, sizeof b, 5000);
    ng_cam_chunk c = {0};
    assert_true(ng_parse_cam(b, r, &c));
    uint32_t off = c.off;
    uint16_t idx = c.idx;
    assert_int_equal(c.seq, seq);
    assert_int_equal(c.w, w);
    assert_int_equal(c.h, h);
    assert_int_equal(c.size, size);
    assert_int_equal(c.cnt, count);
    assert_true(idx < count);
    assert_int_equal(off, (uint32_t)idx * chunk);
    uint32_t len = (uint32_t)r - 24;
    assert_int_equal(len, (uint32_t)idx + 1 < count ? chunk : size - off);
    assert_true((uint32_t)r <= 24 + chunk);
    assert_false(seen[idx]);
    seen[idx] = 1;
    memcpy(img + off, b + 24, len);
    got++;
  }
  for (uint32_t i = 0; i < size; i++)
    if (img[i] != (uint8_t)(i * 7 + seq * 13 + (i >> 9)))
      fail_msg("image %u byte %u differs", seq, i);
  free(img);
  free(seen);
}

static void camera_chunks(void **state) {
  (void)state;
  static const unsigned chunks[] = {PA_CAM_CHUNK_DEFAULT, 500};
  for (size_t k = 0; k < 2; k++) {
    fixture f;
    fixture_up(&f, chunks[k]);
    int fd = pa_test_tcp_connect((uint16_t)pa_netgw_port(f.g));
    assert_true(fd >= 0);
    uint16_t up;
    int u = pa_test_udp_bind(&up);
    char line[128], buf[128];
    snprintf(line, sizeof line, "robot 1\nsub camera %u\nping\n", up);
    assert_int_equal(pa_test_send_str(fd, line), 0);
    assert_true(pa_test_read_line(fd, buf, sizeof buf, 5000) > 0);
    assert_string_equal(buf, "ok");
    assert_true(pa_test_read_line(fd, buf, sizeof buf, 5000) > 0);
    assert_string_equal(buf, "pong");
    assert_true(demand_is(&f.st, 1, 1));
    assert_int_equal(f.st.cam[0].subscribers, 0);
    /* the render wake-up was posted */
    int sv = 0;
    sem_getvalue(&f.st.ctl->render_wake, &sv);
    assert_true(sv > 0);
    /* frames of another robot are not sent to this subscriber */
    write_frame(&f.st, 0, 1, 40, 30);
    write_frame(&f.st, 1, 41, 160, 120); /* 57600 bytes */
    receive_image(u, 41, 160, 120, chunks[k]);
    write_frame(&f.st, 1, 42, 33, 7); /* a size that is no chunk multiple */
    receive_image(u, 42, 33, 7, chunks[k]);
    /* a second connection on the same robot doubles the demand */
    int fd2 = pa_test_tcp_connect((uint16_t)pa_netgw_port(f.g));
    snprintf(line, sizeof line, "robot r1\nsub camera %u\nping\n", up);
    assert_int_equal(pa_test_send_str(fd2, line), 0);
    assert_true(pa_test_read_line(fd2, buf, sizeof buf, 5000) > 0);
    assert_true(pa_test_read_line(fd2, buf, sizeof buf, 5000) > 0);
    assert_true(demand_is(&f.st, 1, 2));
    close(fd2);
    assert_true(demand_is(&f.st, 1, 1));
    /* unsub stops the stream and the demand */
    assert_int_equal(pa_test_send_str(fd, "unsub camera\nping\n"), 0);
    assert_true(pa_test_read_line(fd, buf, sizeof buf, 5000) > 0);
    assert_true(demand_is(&f.st, 1, 0));
    write_frame(&f.st, 1, 43, 40, 30);
    uint8_t b[2048];
    assert_int_equal(pa_test_udp_recv(u, b, sizeof b, 300), -1);
    /* re-subscribe, then the connection closes: demand drops to zero */
    snprintf(line, sizeof line, "sub camera %u\nping\n", up);
    assert_int_equal(pa_test_send_str(fd, line), 0);
    assert_true(pa_test_read_line(fd, buf, sizeof buf, 5000) > 0);
    assert_true(demand_is(&f.st, 1, 1));
    close(fd);
    assert_true(demand_is(&f.st, 1, 0));
    close(u);
    fixture_down(&f);
  }
}

static bool ng_silent_fd(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return poll(&p, 1, 100) == 0;
}

/* The sim never answers: a request gets busy, and a late reply is dropped. */
static void busy_and_late_reply(void **state) {
  (void)state;
  fixture f;
  fixture_up(&f, PA_CAM_CHUNK_DEFAULT);
  pa_netgw_stop(f.g);
  pthread_join(f.th, NULL);
  pa_netgw_destroy(f.g);
  pa_netgw_def gd = pa_netgw_def_default();
  gd.tcp_port = 0;
  /* The fake sim's SSL field opens the SSL ports: the OS picks them. */
  gd.ssl_control_port = gd.ssl_blue_port = gd.ssl_yellow_port = 0;
  /* long enough that the second request's own reply (pushed after 100 ms
   * of silence) beats it on a loaded machine */
  gd.request_timeout_ms = 1000;
  char err[256];
  f.g = pa_netgw_create(&gd, &f.st, err, sizeof err);
  assert_non_null(f.g);
  assert_int_equal(pthread_create(&f.th, NULL, run_gw, f.g), 0);
  int fd = pa_test_tcp_connect((uint16_t)pa_netgw_port(f.g));
  char buf[256];
  assert_int_equal(pa_test_send_str(fd, "pause\nping\n"), 0);
  assert_true(pa_test_read_line(fd, buf, sizeof buf, 5000) > 0);
  assert_string_equal(buf,
                      "err busy the simulator did not answer within 1000 ms");
  assert_true(pa_test_read_line(fd, buf, sizeof buf, 5000) > 0);
  assert_string_equal(buf, "pong"); /* queued behind the pause, in order */
  /* play pa-sim late: answer the pause now; nobody may see it */
  pa_cmd c;
  assert_true(pa_queue_peek(f.st.cmd, &c) >= 0);
  assert_int_equal(c.op, PA_OP_PAUSE);
  pa_queue_pop(f.st.cmd);
  pa_reply r = pa_test_reply_to(&c);
  assert_int_equal(pa_queue_push(f.st.reply, &r), 0);
  /* the next request is answered by its own reply, not the late one */
  assert_int_equal(pa_test_send_str(fd, "resume\n"), 0);
  pa_cmd c2;
  assert_true(pa_test_wait_for(cmd_queued, &f.st, 5000));
  assert_true(pa_queue_peek(f.st.cmd, &c2) >= 0);
  assert_int_equal(c2.op, PA_OP_RESUME);
  assert_true(c2.request_id > c.request_id);
  assert_true(ng_silent_fd(fd)); /* the late reply: 100 ms of silence */
  pa_queue_pop(f.st.cmd);
  r.request_id = c2.request_id;
  r.op = c2.op;
  r.status = PA_ERR_BLOCKED_POSE;
  snprintf(r.msg, sizeof r.msg, "made-up refusal");
  assert_int_equal(pa_queue_push(f.st.reply, &r), 0);
  assert_true(pa_test_read_line(fd, buf, sizeof buf, 5000) > 0);
  assert_string_equal(buf, "err blocked_pose made-up refusal");
  close(fd);
  fixture_down(&f);
}

/* pa_core_ask: one done per command, with its reply or busy at its
 * timeout; a late reply reaches no one; no reply wanted: NO_REPLY. Driven
 * on the test's thread with the gateway's loop stopped. */
typedef struct ask_seen {
  int n, busy, ok, refused;
  uint64_t tag;
  char msg[160];
} ask_seen;

static void ask_done(pa_netgw *g, void *arg, uint64_t tag, const pa_reply *r,
                     pa_status st, const char *msg) {
  (void)g;
  ask_seen *s = arg;
  s->n++;
  s->tag = tag;
  s->busy += !r && st == PA_ERR_BUSY;
  s->ok += r && st == PA_OK;
  s->refused += r && st == PA_ERR_BLOCKED_POSE;
  snprintf(s->msg, sizeof s->msg, "%s", msg);
}

static void core_ask_table(void **state) {
  (void)state;
  fixture f;
  fixture_up(&f, PA_CAM_CHUNK_DEFAULT);
  pa_netgw_stop(f.g);
  pthread_join(f.th, NULL);
  pa_netgw *g = f.g;
  pa_cmd c[3];
  memset(c, 0, sizeof c);
  for (int i = 0; i < 3; i++)
    c[i].op = PA_OP_SYNC;
  ask_seen s = {0};
  char err[160];
  assert_int_equal(pa_core_ask(g, PA_LIM_SRC_REPLAY, c, 3, 50, ask_done, &s, 42,
                               err, sizeof err),
                   0);
  pa_cmd q[3];
  for (int i = 0; i < 3; i++) {
    assert_true(pa_queue_peek(f.st.cmd, &q[i]) >= 0);
    pa_queue_pop(f.st.cmd);
    assert_int_equal(q[i].client_id, PA_ASK_CLIENT_ID);
    assert_int_equal(q[i].request_id, c[i].request_id);
    assert_false(q[i].flags & PA_CMDF_NO_REPLY);
  }
  pa_reply r = pa_test_reply_to(&q[1]);
  r.status = PA_ERR_BLOCKED_POSE;
  snprintf(r.msg, sizeof r.msg, "made-up refusal");
  assert_int_equal(pa_queue_push(f.st.reply, &r), 0);
  r = pa_test_reply_to(&q[2]);
  assert_int_equal(pa_queue_push(f.st.reply, &r), 0);
  pa_gw_on_reply(g);
  assert_int_equal(s.n, 2);
  assert_int_equal(s.refused, 1);
  assert_int_equal(s.ok, 1);
  assert_int_equal(s.tag, 42);
  int64_t end = pa_now_ns() + 5000000000LL;
  while (s.n < 3 && pa_now_ns() < end)
    event_base_loop(g->base, EVLOOP_ONCE);
  assert_int_equal(s.n, 3);
  assert_int_equal(s.busy, 1);
  assert_string_equal(s.msg, "the simulator did not answer within 50 ms");
  uint64_t late = g->late;
  r = pa_test_reply_to(&q[0]);
  assert_int_equal(pa_queue_push(f.st.reply, &r), 0);
  pa_gw_on_reply(g);
  assert_int_equal(s.n, 3);
  assert_int_equal(g->late, late + 1);
  /* no reply wanted */
  assert_int_equal(pa_core_ask(g, PA_LIM_SRC_REPLAY, c, 1, 0, NULL, NULL, 0,
                               err, sizeof err),
                   0);
  assert_true(pa_queue_peek(f.st.cmd, &q[0]) >= 0);
  pa_queue_pop(f.st.cmd);
  assert_true(q[0].flags & PA_CMDF_NO_REPLY);
  /* a waiting one at the end: its done lets go */
  assert_int_equal(pa_core_ask(g, PA_LIM_SRC_REPLAY, c, 1, 60000, ask_done, &s,
                               7, err, sizeof err),
                   0);
  pa_netgw_destroy(f.g);
  assert_int_equal(s.n, 4);
  assert_string_equal(s.msg, "pa-netgw stops");
  f.g = NULL;
  pa_stack_detach(&f.st);
  pa_stack_unlink(f.inst);
  rmdir(f.data_dir);
}

static void world_up(fixture *f);

/* One mapping from a sim reply to the client's error, for text and JSON:
 * an unknown status is invalid_message, an empty text says who refused, a
 * text without its NUL is cut at the record, a timeout is busy. */
static void reply_error_mapping(void **state) {
  (void)state;
  fixture f;
  fixture_up(&f, PA_CAM_CHUNK_DEFAULT);
  pa_reply r;
  memset(&r, 0, sizeof r);
  pa_status st = PA_OK;
  char msg[128];
  assert_false(pa_gw_reply_error(f.g, &r, &st, msg, sizeof msg));
  r.status = 99;
  assert_true(pa_gw_reply_error(f.g, &r, &st, msg, sizeof msg));
  assert_int_equal(st, PA_ERR_INVALID_MESSAGE);
  assert_string_equal(msg, "rejected by the simulator");
  r.status = PA_ERR_BLOCKED_POSE;
  memset(r.msg, 'x', sizeof r.msg);
  assert_true(pa_gw_reply_error(f.g, &r, &st, msg, sizeof msg));
  assert_int_equal(st, PA_ERR_BLOCKED_POSE);
  assert_int_equal(strlen(msg), sizeof r.msg);
  assert_true(pa_gw_reply_error(f.g, NULL, &st, msg, sizeof msg));
  assert_int_equal(st, PA_ERR_BUSY);
  assert_non_null(strstr(msg, "did not answer within"));
  fixture_down(&f);
}

/* A text drive pa-sim would refuse gets its error here (a drive has no
 * reply from pa-sim), by the same check (pa_cmd_drive_error); a good one
 * reaches the queue with its named fields. */
static void text_drive_checked(void **state) {
  (void)state;
  fixture f;
  fixture_up(&f, PA_CAM_CHUNK_DEFAULT);
  world_up(&f);
  int fd = pa_test_tcp_connect((uint16_t)pa_netgw_port(f.g));
  char buf[256];
  assert_int_equal(pa_test_send_str(fd, "cmd 2000000 0\nping\n"), 0);
  assert_true(pa_test_read_line(fd, buf, sizeof buf, 5000) > 0);
  assert_string_equal(
      buf, "err invalid_action_shape velocities must be finite numbers within "
           "1e6");
  assert_true(pa_test_read_line(fd, buf, sizeof buf, 5000) > 0);
  assert_string_equal(buf, "pong");
  assert_int_equal(pa_queue_count(f.st.cmd), 0);
  assert_int_equal(pa_test_send_str(fd, "cmd 0.5 -0.25 0.125\n"), 0);
  assert_true(pa_test_wait_for(cmd_queued, &f.st, 5000));
  pa_cmd c;
  assert_true(pa_queue_peek(f.st.cmd, &c) >= 0);
  assert_int_equal(c.op, PA_OP_SET_CMD);
  assert_true(c.drive.v == 0.5 && c.drive.w == -0.25 &&
              c.drive.head_rate == 0.125 && c.drive.vy == 0);
  assert_int_equal(c.drive.frame, PA_FRAME_ROBOT);
  close(fd);
  fixture_down(&f);
}

/* ---- JSON actions against the in-process gateway -------------------------*/

/* Sends one JSON line and parses the one reply line (5 s). */
static json_t *jask(int fd, const char *line) {
  static char buf[1 << 20];
  char *l = malloc(strlen(line) + 2);
  sprintf(l, "%s\n", line);
  assert_int_equal(pa_test_send_str(fd, l), 0);
  free(l);
  int n = pa_test_read_line(fd, buf, sizeof buf, 5000);
  if (n <= 0)
    fail_msg("no reply to %s", line);
  json_error_t je;
  json_t *j = json_loads(buf, 0, &je);
  if (!j)
    fail_msg("reply to %s is not JSON: %s", line, buf);
  return j;
}

static void json_get_version(void **state) {
  (void)state;
  fixture f;
  fixture_up(&f, PA_CAM_CHUNK_DEFAULT);
  int fd = pa_test_tcp_connect((uint16_t)pa_netgw_port(f.g));
  json_t *r = jask(fd, "{\"type\":\"command\",\"action\":\"get_version\","
                       "\"request_id\":7}");
  assert_string_equal(json_string_value(json_object_get(r, "type")),
                      "response");
  assert_int_equal(json_integer_value(json_object_get(r, "request_id")), 7);
  json_t *d = json_object_get(r, "data");
  unsigned ma, mi, pt;
  char tail;
  assert_int_equal(sscanf(json_string_value(json_object_get(d, "version")),
                          "%u.%u.%u%c", &ma, &mi, &pt, &tail),
                   3);
  assert_int_equal(json_integer_value(json_object_get(d, "protocol_version")),
                   2);
  assert_int_equal(json_integer_value(json_object_get(d, "shm_layout_version")),
                   PA_SHM_LAYOUT_VERSION);
  json_decref(r);
  close(fd);
  fixture_down(&f);
}

/* ---- every JSON action, in process, against a fake pa-sim ----------------*/

/* A full queue: a held text cmd for one robot that another robot's cmd
 * would replace is not lost in silence: the client hears busy, by robot. */
static void drive_dropped_is_busy(void **state) {
  (void)state;
  fixture f;
  fixture_up(&f, PA_CAM_CHUNK_DEFAULT);
  pa_cmd junk;
  memset(&junk, 0, sizeof junk);
  junk.op = PA_OP_SYNC;
  while (pa_queue_push(f.st.cmd, &junk) == 0) /* nobody plays pa-sim */
    ;
  int fd = pa_test_tcp_connect((uint16_t)pa_netgw_port(f.g));
  char buf[256];
  assert_int_equal(
      pa_test_send_str(fd, "cmd 0.1 0\ncmd 0.2 0\nrobot 1\ncmd 0.3 0\nping\n"),
      0);
  assert_true(pa_test_read_line(fd, buf, sizeof buf, 5000) > 0);
  assert_string_equal(buf, "ok"); /* robot 1 */
  assert_true(pa_test_read_line(fd, buf, sizeof buf, 5000) > 0);
  /* robot 0's latest cmd (0.2) was held and is replaced: said, not silent */
  assert_string_equal(
      buf,
      "err busy the command queue is full: the cmd for robot 0 was dropped");
  assert_true(pa_test_read_line(fd, buf, sizeof buf, 5000) > 0);
  assert_string_equal(buf, "pong");
  close(fd);
  fixture_down(&f);
}

/* Plays pa-sim: answers each command on the queue (drive commands take no
 * reply, as in pa-sim), with `status`, or not at all while `drop`. */
typedef struct fake_sim {
  pa_stack *st;
  pthread_t th;
  int stop;         /* atomic */
  int32_t status;   /* atomic: the next replies' status */
  int drop;         /* atomic: answer nothing */
  uint32_t last_op; /* atomic: op of the last command, UINT32_MAX = none */
} fake_sim;

static void *fake_sim_run(void *arg) {
  fake_sim *fs = arg;
  while (!__atomic_load_n(&fs->stop, __ATOMIC_ACQUIRE)) {
    pa_cmd c;
    if (pa_queue_peek(fs->st->cmd, &c) < 0) {
      pa_queue_wait(fs->st->cmd, 20 * 1000 * 1000);
      continue;
    }
    pa_queue_pop(fs->st->cmd);
    __atomic_store_n(&fs->last_op, c.op, __ATOMIC_RELEASE);
    if ((c.op == PA_OP_SET_CMD || c.op == PA_OP_STOP) ||
        __atomic_load_n(&fs->drop, __ATOMIC_ACQUIRE))
      continue;
    pa_reply r = pa_test_reply_to(&c);
    r.status = __atomic_load_n(&fs->status, __ATOMIC_ACQUIRE);
    r.tick = 42;
    r.sim_time = 0.21;
    if (r.status != PA_OK)
      snprintf(r.msg, sizeof r.msg, "fake sim says no");
    switch (c.op) {
    case PA_OP_TELEPORT:
      r.pose.x = c.pose.x, r.pose.y = c.pose.y, r.pose.theta = c.pose.theta;
      break;
    case PA_OP_SPAWN_ROBOT:
      r.pose.robot = 2;
      break;
    case PA_OP_SAVE_SNAPSHOT:
    case PA_OP_LOAD_SNAPSHOT:
    case PA_OP_SAVE_SNAPSHOT_JSON:
    case PA_OP_LOAD_SNAPSHOT_JSON:
    case PA_OP_SAVE_WORLD:
      r.snapshot = (pa_reply_snapshot){
          .tick = 40, .sim_time = 0.2, .robots = 2, .obstacles = 1};
      break;
    case PA_OP_EXPORT_DATASET:
      r.dataset.first_tick = 43;
      r.dataset.last_tick = 43 + c.dataset.ticks - 1;
      if (c.dataset.flags & PA_DATASET_WAIT) { /* what it wrote */
        r.dataset.rows = c.dataset.ticks;
        r.dataset.images = c.dataset.flags & PA_DATASET_IMAGES ? 2 : 0;
        r.dataset.flags =
            c.dataset.flags & (PA_DATASET_IMAGES | PA_DATASET_PACK);
      }
      break;
    case PA_OP_SET_MAP:
    case PA_OP_GENERATE_MAP:
    case PA_OP_SET_SCENARIO:
      r.map = (pa_reply_map){.width = 20,
                             .height = 10,
                             .resolution = 0.1,
                             .robots = 2,
                             .obstacles = 1};
      break;
    default:
      break;
    }
    pa_queue_push(fs->st->reply, &r);
  }
  return NULL;
}

/* The fixture's world, as pa-sim would publish it: robot r0 (differential,
 * 360 beams) and r1 (omnidirectional), box "crate", a 20 x 10 map, one
 * tick and one scan of r0. */
static void world_up(fixture *f) {
  pa_stack *st = &f->st;
  pa_stack_world_begin(st);
  for (int i = 0; i < 2; i++) {
    pa_robot_info *r = &st->robots[i];
    r->drive = i ? PA_DRIVE_OMNI : PA_DRIVE_DIFF;
    r->radius = 0.2f, r->wheel_base = 0.3f, r->height = 0.3f;
    r->max_v = 1, r->max_vy = 1, r->max_w = 2;
    r->laser_beams = 360, r->laser_range_max = 12;
    r->gen = 1;
  }
  /* r1 is a dynamic body with one thruster, "aft" */
  pa_robot_info *r1 = &st->robots[1];
  r1->dynamics = PA_DYN_DYNAMIC, r1->mass = 10, r1->inertia = 0.2f;
  r1->max_force = 100, r1->max_torque = 10, r1->thruster_count = 1;
  snprintf(r1->thrusters[0].name, sizeof r1->thrusters[0].name, "aft");
  r1->thrusters[0].max_force = 50;
  pa_obstacle_info *o = &st->obstacles[0];
  memset(o, 0, sizeof *o);
  snprintf(o->name, sizeof o->name, "crate");
  o->active = 1, o->shape = PA_SHAPE_BOX, o->x = 3, o->size_x = o->size_y = 0.5;
  o->height = 0.5f;
  /* obstacle 1: an agent, pedestrian "walker" */
  pa_obstacle_info *wk = &st->obstacles[1];
  memset(wk, 0, sizeof *wk);
  snprintf(wk->name, sizeof wk->name, "walker");
  wk->active = 1, wk->shape = PA_SHAPE_CIRCLE, wk->radius = 0.25;
  wk->x = 5, wk->agent = PA_AGENT_PEDESTRIAN;
  st->ctl->obstacle_count = 2;
  pa_stack_world_end(st);
  st->ctl->control_hz = 200;
  st->ctl->scan_hz = 10;
  int8_t cells[20 * 10];
  memset(cells, 0, sizeof cells);
  cells[0] = 100;
  cells[5] = -1;
  char err[256];
  assert_int_equal(pa_stack_map_publish(st, 20, 10, 0.1, -1, -0.5, 0, cells, 65,
                                        err, sizeof err),
                   0);
  size_t n = sizeof(pa_tick) + 2 * sizeof(pa_robot_state);
  uint8_t *rec = pa_ring_write_begin(st->state, (uint32_t)n);
  assert_non_null(rec);
  memset(rec, 0, n);
  pa_tick *t = (pa_tick *)rec;
  t->tick = 41, t->sim_time = 0.205, t->robot_count = 2, t->speed = 1;
  t->ssl = 'B', t->ball_holder = -1; /* an SSL field: its actions answer */
  pa_robot_state *rs = (pa_robot_state *)(t + 1);
  for (uint32_t i = 0; i < 2; i++) {
    rs[i].id = i, rs[i].gen = 1, rs[i].flags = PA_RS_ACTIVE;
    rs[i].x = 1.0 + i, rs[i].y = 0.5, rs[i].theta = 0.25;
  }
  assert_true(pa_ring_write_commit(st->state) > 0);
  n = sizeof(pa_scan) + 4 * sizeof(float);
  rec = pa_ring_write_begin(st->scan, (uint32_t)n);
  assert_non_null(rec);
  memset(rec, 0, n);
  pa_scan *sc = (pa_scan *)rec;
  sc->robot = 0, sc->seq = 7, sc->tick = 40, sc->count = 4;
  sc->range_max = 12;
  const float ranges[4] = {1.0f, 2.5f, 0.000125f, 12.0f};
  memcpy(sc + 1, ranges, sizeof ranges);
  assert_true(pa_ring_write_commit(st->scan) > 0);
}

/* One request and what must come back: `code` NULL = success (its reply
 * line holds `needle`), else that error code with `needle` in the message;
 * `op` the command pa-sim must see (-1 none); `sim` what the fake sim
 * answers. */
typedef struct jcase {
  const char
      *data; /* {"type": "command", "action": <action>, "data": <data>} */
  const char *action;
  const char *code;
  const char *needle;
  int op;
  int32_t sim;
} jcase;

#define OK_(a, d, needle, op)                                                  \
  { d, a, NULL, needle, op, PA_OK }
#define ERR(a, d, code, needle)                                                \
  { d, a, code, needle, -1, PA_OK }
#define SIMERR(a, d, code, op)                                                 \
  { d, a, #code, "fake sim says no", op, code##_ST }

enum {
  invalid_message_ST = PA_ERR_INVALID_MESSAGE,
  blocked_pose_ST = PA_ERR_BLOCKED_POSE,
  unknown_object_ST = PA_ERR_UNKNOWN_OBJECT,
  spawn_failed_ST = PA_ERR_SPAWN_FAILED,
  unknown_agent_ST = PA_ERR_UNKNOWN_AGENT,
};

static const jcase jcases[] = {
    OK_("get_state", "{\"robot\": \"r0\"}", "\"pose\":[1.0,0.5,0.25]", -1),
    OK_("get_state", "{}", "\"ranges\":[1,2.5,0.000125,12]", -1),
    ERR("get_state", "{\"robot\": 9}", "unknown_robot", "no robot with id 9"),
    ERR("get_state", "{\"robot\": \"nobody\"}", "unknown_robot",
        "named 'nobody'"),
    ERR("get_state", "{\"robot\": [0]}", "invalid_action_shape",
        "an id or a name"),
    ERR("get_state", "{\"robt\": 0}", "invalid_message",
        "data.robt is not a key"),
    OK_("get_sensors", "{\"robot\": 0}", "\"seq\":7", -1),
    ERR("get_sensors", "{\"robot\": 5}", "unknown_robot", "id 5"),
    OK_("step", "{\"v\": 0.1, \"steps\": 3}", "\"type\":\"state\"", PA_OP_STEP),
    ERR("step", "{\"steps\": 0}", "invalid_message", "data.steps"),
    ERR("step", "{\"v\": \"fast\"}", "invalid_action_shape", "data.v"),
    ERR("step", "{\"vy\": 0.5}", "unsupported_control_scheme", "sideways"),
    ERR("step", "{\"robot\": 3}", "unknown_robot", "id 3"),
    SIMERR("step", "{}", blocked_pose, PA_OP_STEP),
    OK_("step_batch",
        "{\"robots\": [0, 1], \"actions\": [[0.1, 0], [0, 0.2]], "
        "\"steps\": 2}",
        "\"count\":2", PA_OP_STEP),
    OK_("step_batch", "{\"binary\": false}", "\"robots\":[{\"robot\":0",
        PA_OP_STEP),
    ERR("step_batch", "{\"robots\": [0, 0]}", "invalid_message",
        "appears twice"),
    ERR("step_batch", "{\"robots\": [7]}", "unknown_robot", "(7) is not"),
    /* the ids as little-endian uint32 in base64: [0, 1], [0, 0], [7] */
    OK_("step_batch",
        "{\"robots_b64\": \"AAAAAAEAAAA=\", \"actions\": [[0.1, 0], [0, 0.2]]}",
        "\"count\":2", PA_OP_STEP),
    ERR("step_batch", "{\"robots_b64\": \"AAAAAAAAAAA=\"}", "invalid_message",
        "data.robots_b64[1] (0) appears twice"),
    ERR("step_batch", "{\"robots_b64\": \"BwAAAA==\"}", "unknown_robot",
        "data.robots_b64[0] (7) is not"),
    ERR("step_batch", "{\"robots_b64\": \"AAAA\"}", "invalid_action_shape",
        "4 bytes (uint32) per robot id"),
    ERR("step_batch", "{\"robots_b64\": \"A*AA\"}", "invalid_action_shape",
        "not base64"),
    ERR("step_batch", "{\"robots_b64\": 5}", "invalid_action_shape",
        "must be a base64 string"),
    ERR("step_batch", "{\"robots_b64\": \"\"}", "invalid_action_shape",
        "has 0 ids"),
    ERR("step_batch", "{\"robots\": [0], \"robots_b64\": \"AAAAAA==\"}",
        "invalid_message", "give one of data.robots, data.robots_b64"),
    /* [first, count] */
    OK_("step_batch",
        "{\"robots_range\": [0, 2], \"actions\": [[0.1, 0], [0, 0]]}",
        "\"count\":2", PA_OP_STEP),
    ERR("step_batch", "{\"robots_range\": [1, 2]}", "unknown_robot",
        "data.robots_range[1] (2) is not"),
    ERR("step_batch", "{\"robots_range\": [0, 0]}", "invalid_action_shape",
        "must be [first, count]"),
    ERR("step_batch", "{\"robots_range\": [-1, 1]}", "invalid_action_shape",
        "must be [first, count]"),
    ERR("step_batch", "{\"robots_range\": [0]}", "invalid_action_shape",
        "must be [first, count]"),
    ERR("step_batch", "{\"robots_range\": [0, 1], \"robots\": [0]}",
        "invalid_message", "give one of"),
    ERR("step_batch", "{\"actions\": [[1]]}", "invalid_action_shape",
        "entries for 2 robots"),
    ERR("step_batch", "{\"robots\": [0], \"actions\": [[1, \"x\"]]}",
        "invalid_action_shape", "data.actions[0]"),
    ERR("step_batch", "{\"robots\": [0], \"actions\": [[2e6, 0]]}",
        "invalid_action_shape", "finite numbers within 1e6"),
    ERR("step_batch", "{\"robots\": [0], \"actions\": [[0, 1, 0]]}",
        "unsupported_control_scheme", "differential"),
    ERR("step_batch", "{\"binary\": 1}", "invalid_action_shape", "data.binary"),
    OK_("step_batch", "{\"observe\": false}", "\"count\":2}", PA_OP_STEP),
    /* camera_batch: the test's atlas segment, a live pid as its pa-render */
    OK_("camera_batch", "{\"width\": 8, \"height\": 6}",
        "\"count\":2,\"width\":8,\"height\":6", -1),
    OK_("camera_batch", "{\"robots_range\": [1, 1]}", "\"first\":1", -1),
    OK_("camera_batch", "{\"tick\": 1000}", "\"min_tick\":1000}", -1),
    ERR("camera_batch", "{\"tick\": 1000000000000}", "invalid_message",
        "more than one step"),
    ERR("camera_batch", "{\"tick\": -1}", "invalid_message", "data.tick"),
    ERR("camera_batch", "{\"width\": 0}", "invalid_message", "data.width"),
    ERR("camera_batch", "{\"height\": 100000}", "invalid_message",
        "data.height"),
    ERR("camera_batch", "{\"robots_range\": [0, 0]}", "invalid_action_shape",
        "count >= 1"),
    ERR("camera_batch", "{\"robots_range\": [1, 2]}", "unknown_robot",
        "there are 2"),
    ERR("camera_batch", "{\"robots_range\": [0, 5000]}", "batch_limit",
        "cameras of one camera_batch"),
    ERR("camera_batch", "{\"robots_range\": [0, 2000]}", "batch_limit",
        "33554432-byte atlas"),
    ERR("step_batch", "{\"observe\": 0}", "invalid_action_shape",
        "data.observe must be true, false or"),
    ERR("step_batch", "{\"observe\": \"tcp\"}", "invalid_action_shape",
        "data.observe must be"),
    /* observe "shm": pa-sim's block (this fake sim writes none: 0) */
    OK_("step_batch", "{\"observe\": \"shm\"}", "\"obs_seq\":0", PA_OP_STEP),
    ERR("step_batch", "{\"robots\": [1, 0], \"observe\": \"shm\"}",
        "invalid_message",
        "one run of ids (robots_range [first, count]): 0 "
        "follows 1"),
    SIMERR("step_batch", "{}", blocked_pose, PA_OP_STEP),
    OK_("set_velocity", "{\"v\": 0.2, \"w\": 0.1}", "\"robot\":0",
        PA_OP_SET_CMD),
    OK_("set_velocity", "{\"robot\": 1, \"vx\": 0.2, \"vy\": 0.1}",
        "\"robot\":1", PA_OP_SET_CMD),
    ERR("set_velocity", "{\"v\": 1e7}", "invalid_action_shape", "within 1e6"),
    ERR("set_velocity", "{\"vy\": 0.3}", "unsupported_control_scheme",
        "sideways"),
    ERR("set_velocity", "{\"w\": null, \"v\": true}", "invalid_action_shape",
        "data.v must be a finite number"),
    ERR("set_velocity", "{\"z\": 1}", "invalid_message", "data.z is not a key"),
    OK_("set_velocity_local", "{\"robot\": 1, \"forward\": 0.2, \"left\": 0.1}",
        "\"robot\":1", PA_OP_SET_CMD),
    ERR("set_velocity_local", "{\"left\": 0.1}", "unsupported_control_scheme",
        "sideways"),
    OK_("set_velocity_global", "{\"robot\": \"r1\", \"x\": 0.2}", "\"robot\":1",
        PA_OP_SET_CMD),
    ERR("set_velocity_global", "{\"x\": 0.2}", "unsupported_control_scheme",
        "omnidirectional"),
    OK_("set_wheels", "{\"left\": 0.1, \"right\": 0.2}", "\"robot\":0",
        PA_OP_SET_CMD),
    ERR("set_wheels", "{\"left\": 0.1}", "invalid_action_shape", "required"),
    ERR("set_wheels", "{\"robot\": 1, \"left\": 0, \"right\": 0}",
        "unsupported_control_scheme", "no left and right wheels"),
    OK_("stop", "{}", "\"robot\":0", PA_OP_STOP),
    ERR("stop", "{\"robot\": 7}", "unknown_robot", "id 7"),
    OK_("get_pose", "{\"robot\": 1}", "\"pose\":[2.0,0.5,0.25]", -1),
    OK_("get_pose", "{\"name\": \"crate\"}", "\"kind\":\"obstacle\"", -1),
    ERR("get_pose", "{\"name\": \"nobody\"}", "unknown_object", "nobody"),
    ERR("get_pose", "{\"name\": 3}", "invalid_action_shape", "data.name"),
    OK_("set_pose", "{\"pose\": [1, 2, 0.5]}", "\"pose\":[1.0,2.0,0.5]",
        PA_OP_TELEPORT),
    OK_("set_pose", "{\"pose\": [1, 2, 0, 0, 0, 0.5]}",
        "\"pose\":[1.0,2.0,0.5]", PA_OP_TELEPORT),
    ERR("set_pose", "{\"pose\": [1, 2, 9, 0, 0, 0.5]}", "invalid_action_shape",
        "z = 9: the world is planar"),
    ERR("set_pose", "{\"pose\": [1, 2, 0, 0, 0.1, 0.5]}",
        "invalid_action_shape", "pitch = 0.1"),
    OK_("set_pose", "{\"name\": \"crate\", \"pose\": [0, 0, 0]}",
        "\"kind\":\"obstacle\"", PA_OP_TELEPORT),
    ERR("set_pose", "{\"pose\": [1, 2]}", "invalid_action_shape", "3 or 6"),
    ERR("set_pose", "{}", "invalid_action_shape", "data.pose is required"),
    SIMERR("set_pose", "{\"pose\": [0, 0, 0]}", blocked_pose, PA_OP_TELEPORT),
    OK_("subscribe", "{\"channel\": \"odom\", \"udp_port\": 9}",
        "\"udp_port\":9", -1),
    ERR("subscribe", "{\"channel\": \"sonar\", \"udp_port\": 9}",
        "invalid_message", "unknown channel 'sonar'"),
    ERR("subscribe", "{\"channel\": \"odom\", \"udp_port\": 0}",
        "invalid_message", "data.udp_port"),
    ERR("subscribe", "{\"channel\": \"odom\"}", "invalid_message",
        "data.udp_port is required"),
    ERR("subscribe", "{\"udp_port\": 9}", "invalid_message",
        "data.channel is required"),
    ERR("subscribe", "{\"channel\": \"odom\", \"udp_port\": 9, \"robot\": 4}",
        "unknown_robot", "id 4"),
    OK_("unsubscribe", "{\"channel\": \"odom\"}", "\"success\":true", -1),
    ERR("unsubscribe", "{\"channel\": 1}", "invalid_action_shape",
        "data.channel"),
    OK_("list_robots", "{}", "\"count\":2", -1),
    ERR("list_robots", "{\"all\": true}", "invalid_message", "takes no data"),
    OK_("spawn_robot", "{\"name\": \"r2\", \"pose\": [1, 1, 0]}", "\"robot\":2",
        PA_OP_SPAWN_ROBOT),
    ERR("spawn_robot", "{\"pose\": [1, 1, 0]}", "invalid_message",
        "data.name is required"),
    ERR("spawn_robot", "{\"name\": \"r2\", \"pose\": [1, 1, 0], \"radius\": 6}",
        "invalid_message", "out of range (0, 5] m"),
    ERR("spawn_robot",
        "{\"name\": \"r2\", \"pose\": [1, 1, 0], \"drive\": \"tank\"}",
        "invalid_message", "'tank' is not diff or omni"),
    ERR("spawn_robot", "{\"name\": \"r0\", \"pose\": [1, 1, 0]}",
        "spawn_failed", "exists"),
    SIMERR("spawn_robot", "{\"name\": \"r3\", \"pose\": [1, 1, 0]}",
           spawn_failed, PA_OP_SPAWN_ROBOT),
    OK_("remove_robot", "{\"robot\": 1}", "\"robot\":1", PA_OP_REMOVE_ROBOT),
    ERR("remove_robot", "{\"robot\": 8}", "unknown_robot", "id 8"),
    OK_("spawn_obstacle",
        "{\"name\": \"b\", \"pose\": [1, 1, 0], \"size\": [1, 2], \"height\": "
        "99}",
        "\"tick\":42", PA_OP_SPAWN_OBSTACLE),
    ERR("spawn_obstacle",
        "{\"name\": \"b\", \"shape\": \"circle\", \"pose\": [1, 1, 0], "
        "\"radius\": 600}",
        "invalid_action_shape", "(0, 500] m"),
    ERR("spawn_obstacle",
        "{\"name\": \"b\", \"shape\": \"cone\", \"pose\": [0, 0, 0]}",
        "invalid_message", "not box or circle"),
    ERR("spawn_obstacle",
        "{\"name\": \"b\", \"pose\": [0, 0, 0], \"size\": [1, 1], \"height\": "
        "200}",
        "invalid_message", "out of range (0, 100] m"),
    ERR("spawn_obstacle",
        "{\"name\": \"b\", \"pose\": [0, 0, 0], \"size\": [1]}",
        "invalid_action_shape", "data.size"),
    ERR("spawn_obstacle",
        "{\"name\": \"b\", \"pose\": [0, 0, 0], \"size\": [1, 1], "
        "\"mass\": 3}",
        "invalid_message", "data.mass is not a key"),
    OK_("remove_obstacle", "{\"name\": \"crate\"}", "\"tick\":42",
        PA_OP_REMOVE_OBSTACLE),
    ERR("remove_obstacle", "{\"name\": \"nobody\"}", "unknown_object",
        "nobody"),
    ERR("remove_obstacle", "{}", "invalid_message", "data.name is required"),
    OK_("list_obstacles", "{}", "\"name\":\"crate\"", -1),
    OK_("get_map_info", "{}", "\"occupied_cells\":1", -1),
    OK_("get_terrain_grid", "{\"stride\": 2}", "\"#.?", -1),
    ERR("get_terrain_grid", "{\"stride\": 0}", "invalid_message",
        "data.stride"),
    ERR("get_terrain_grid", "{\"inflation\": -1}", "invalid_message",
        "inflation"),
    ERR("get_terrain_grid", "{\"unknown_blocks\": 3}", "invalid_action_shape",
        "unknown_blocks"),
    ERR("get_terrain_grid", "{\"stide\": 2}", "invalid_message",
        "data.stide is not a key of get_terrain_grid"),
    OK_("get_property", "{}", "\"properties\":{\"max_v\":1", -1),
    OK_("get_property", "{\"robot\": 1, \"property\": \"drive\"}",
        "\"value\":\"omni\"", -1),
    OK_("get_property", "{\"name\": \"crate\", \"property\": \"color\"}",
        "\"property\":\"colour\"", -1),
    ERR("get_property", "{\"property\": \"buoyancy\"}", "invalid_message",
        "no property 'buoyancy'"),
    ERR("get_property", "{\"name\": \"nobody\"}", "unknown_object", "nobody"),
    OK_("set_property", "{\"property\": \"max_v\", \"value\": 0.5}",
        "\"property\":\"max_v\"", PA_OP_SET_PROPERTY),
    OK_("set_property",
        "{\"name\": \"crate\", \"property\": \"height\", \"value\": 50}",
        "\"kind\":\"obstacle\"", PA_OP_SET_PROPERTY),
    ERR("set_property", "{\"property\": \"max_v\", \"value\": -1}",
        "invalid_action_shape", "max_v -1 is out of range (0, 100] m/s"),
    ERR("set_property", "{\"property\": \"height\", \"value\": 50}",
        "invalid_action_shape", "(0, 10] m"),
    ERR("set_property", "{\"property\": \"max_v\", \"value\": \"fast\"}",
        "invalid_action_shape", "finite number"),
    ERR("set_property", "{\"property\": \"laser_beams\", \"value\": 1.5}",
        "invalid_action_shape", "(whole)"),
    ERR("set_property", "{\"property\": \"colour\", \"value\": [1, 2]}",
        "invalid_action_shape", "3 or 4 numbers"),
    ERR("set_property", "{\"property\": \"colour\", \"value\": [0, 0, 300]}",
        "invalid_action_shape", "colour[2] 300"),
    ERR("set_property", "{\"property\": \"drive\", \"value\": \"omni\"}",
        "invalid_message", "read-only"),
    ERR("set_property", "{\"property\": \"size\", \"value\": [1, 1]}",
        "invalid_message", "not one of a robot's"),
    ERR("set_property", "{\"property\": \"buoyancy\", \"value\": 1}",
        "invalid_message", "unknown property 'buoyancy'"),
    ERR("set_property", "{\"value\": 1}", "invalid_message",
        "data.property is required"),
    ERR("set_property",
        "{\"name\": \"nobody\", \"property\": \"height\", "
        "\"value\": 1}",
        "unknown_object", "nobody"),
    SIMERR("set_property", "{\"property\": \"radius\", \"value\": 4.9}",
           blocked_pose, PA_OP_SET_PROPERTY),
    OK_("save_snapshot", "{\"name\": \"s1\"}", "\"saved_tick\":40",
        PA_OP_SAVE_SNAPSHOT),
    ERR("save_snapshot", "{\"name\": \"a b\"}", "invalid_message",
        "snapshot name 'a b'"),
    ERR("save_snapshot", "{}", "invalid_message", "data.name is required"),
    OK_("load_snapshot", "{\"name\": \"s1\"}", "\"robots\":2",
        PA_OP_LOAD_SNAPSHOT),
    SIMERR("load_snapshot", "{\"name\": \"s9\"}", unknown_object,
           PA_OP_LOAD_SNAPSHOT),
    OK_("set_map", "{\"map\": \"default\"}", "\"width\":20", PA_OP_SET_MAP),
    /* relative to pa-sim's --data_dir: pa-sim reads (or refuses) it */
    SIMERR("set_map", "{\"map_yaml\": \"rel/map.yaml\"}", invalid_message,
           PA_OP_SET_MAP),
    ERR("set_map", "{}", "invalid_message", "give data.map_yaml"),
    ERR("set_map", "{\"map\": \"other\"}", "invalid_message",
        "the only built-in map"),
    SIMERR("set_map", "{\"map_yaml\": \"/nonexistent.yaml\"}", invalid_message,
           PA_OP_SET_MAP),
    OK_("generate_map", "{\"width\": 10, \"rooms\": [2, 1]}",
        "\"robots_moved\"", PA_OP_GENERATE_MAP),
    ERR("generate_map", "{\"rooms\": [0, 1]}", "invalid_message", "data.rooms"),
    ERR("generate_map", "{\"width\": \"big\"}", "invalid_action_shape",
        "data.width"),
    ERR("generate_map", "{\"clutter\": 100}", "invalid_message",
        "data.clutter"),
    OK_("set_scenario", "{\"world\": \"default\"}", "\"obstacles\":1",
        PA_OP_SET_SCENARIO),
    SIMERR("set_scenario", "{\"world\": \"w.yaml\"}", invalid_message,
           PA_OP_SET_SCENARIO),
    ERR("set_scenario", "{}", "invalid_message",
        "give data.scenario (a built-in: list_scenarios) or data.world"),
    OK_("set_scenario", "{\"scenario\": \"NarrowMap\", \"seed\": 0}",
        "\"scenario\":\"NarrowMap\"", PA_OP_GENERATE_MAP),
    OK_("set_scenario", "{\"scenario\": \"forest\"}", "\"seed\":0",
        PA_OP_GENERATE_MAP),
    ERR("set_scenario", "{\"scenario\": \"Moon\"}", "invalid_message",
        "unknown scenario 'Moon' (built in: Empty, Rooms, NarrowMap"),
    ERR("set_scenario", "{\"scenario\": \"Maze\", \"seed\": -1}",
        "invalid_message", "data.seed"),
    ERR("set_scenario", "{\"scenario\": \"Maze\", \"world\": \"w.yaml\"}",
        "invalid_message", "not both"),
    ERR("set_scenario", "{\"seed\": 3}", "invalid_message",
        "data.seed goes with data.scenario"),
    OK_("set_nav_path", "{\"path\": [[0, 0], [1, 1]]}", "\"points\":2", -1),
    ERR("set_nav_path", "{\"path\": \"x\"}", "invalid_action_shape",
        "data.path"),
    ERR("set_nav_path", "{\"robot\": 6, \"path\": []}", "unknown_robot",
        "id 6"),
    OK_("set_waypoints", "{\"waypoints\": [[0, 0]]}", "\"points\":1", -1),
    ERR("set_waypoints", "{\"waypoints\": [[0]]}", "invalid_action_shape",
        "data.waypoints[0]"),
    OK_("clear_nav", "{}", "\"success\":true", -1),
    OK_("export_dataset", "{\"name\": \"d1\", \"ticks\": 10}",
        "\"last_tick\":52", PA_OP_EXPORT_DATASET),
    ERR("export_dataset", "{\"name\": \"d1\", \"seconds\": 0}",
        "invalid_message", "data.seconds"),
    ERR("export_dataset", "{\"name\": \"../x\"}", "invalid_message",
        "dataset name"),
    ERR("export_dataset", "{\"name\": \"d1\", \"ticks\": 0}", "invalid_message",
        "data.ticks"),
    /* OceanSim's: the reply names every file written */
    OK_("export_dataset",
        "{\"export_dir\": \"runs/a\", \"render_image\": true, "
        "\"pack_dataset\": true, \"ticks\": 10, \"robot\": 1}",
        "\"runs/a/images/000001.png\",\"runs/a/dataset.json\","
        "\"runs/a.tar.gz\"]",
        PA_OP_EXPORT_DATASET),
    OK_("export_dataset", "{\"export_dir\": \"b/\", \"ticks\": 10}",
        "\"status\":\"exported\"", PA_OP_EXPORT_DATASET),
    ERR("export_dataset", "{\"export_dir\": \"a\", \"compress\": 1}",
        "invalid_message", "data.compress is not a key of export_dataset"),
    ERR("export_dataset", "{\"export_dir\": \"a\", \"name\": \"b\"}",
        "invalid_message", "not both"),
    ERR("export_dataset", "{\"export_dir\": \"a\", \"robot\": 1}",
        "invalid_message", "give render_image: true"),
    ERR("export_dataset", "{\"export_dir\": \"a\", \"pack_dataset\": 1}",
        "invalid_action_shape", "data.pack_dataset"),
    OK_("auth", "{\"token\": \"anything\"}", "\"success\":true", -1),
    ERR("auth", "{\"token\": \"\"}", "invalid_message", "data.token"),
    OK_("ping", "{}", "\"pong\":true", -1),
    ERR("ping", "{\"x\": 1}", "invalid_message", "ping takes no data"),
    OK_("get_version", "{}", "\"protocol_version\":2", -1),
    OK_("pause", "{}", "\"tick\":42", PA_OP_PAUSE),
    OK_("resume", "{}", "\"tick\":42", PA_OP_RESUME),
    OK_("reset", "{}", "\"tick\":42", PA_OP_RESET),
    SIMERR("reset", "{}", invalid_message, PA_OP_RESET),
    OK_("step_n", "{\"steps\": 5}", "\"tick\":42", PA_OP_STEP),
    ERR("step_n", "{\"steps\": 0}", "invalid_message", "data.steps"),
    OK_("set_time_scale", "{\"factor\": 2}", "\"tick\":42", PA_OP_SPEED),
    ERR("set_time_scale", "{}", "invalid_message", "data.scale is required"),
    ERR("set_time_scale", "{\"scale\": 2000}", "invalid_message",
        "out of range [0, 1000]"),
    OK_("get_status", "{}", "\"robot_count\":2", -1),
    OK_("get_pose3d", "{\"robot\": 1}", "\"pose\":[2.0,0.5,0.0,0.0,0.0,0.25]",
        -1),
    OK_("get_pose3d", "{\"name\": \"crate\"}", "\"sim_time\"", -1),
    ERR("get_pose3d", "{\"name\": \"nobody\"}", "unknown_object", "nobody"),
    OK_("set_pose3d", "{\"pose\": [1, 2, 0, 0, 0, 0.5]}",
        "\"pose\":[1.0,2.0,0.0,0.0,0.0,0.5]", PA_OP_TELEPORT),
    ERR("set_pose3d", "{\"pose\": [1, 2, 0.5]}", "invalid_action_shape",
        "[x, y, z, roll, pitch, yaw]"),
    ERR("set_pose3d", "{\"pose\": [1, 2, 0, 0.2, 0, 0.5]}",
        "invalid_action_shape", "roll = 0.2"),
    OK_("toggle_pause", "{}", "\"paused\":true", PA_OP_PAUSE),
    ERR("toggle_pause", "{\"on\": true}", "invalid_message",
        "toggle_pause takes no data"),
    OK_("get_property",
        "{\"name\": \"crate\", \"property\": \"colour\", \"index\": 1}",
        "\"index\":1", -1),
    ERR("get_property", "{\"property\": \"max_v\", \"index\": 0}",
        "invalid_message", "'max_v' is not an array"),
    ERR("get_property", "{\"index\": 0}", "invalid_message",
        "data.index needs data.property"),
    ERR("get_property", "{\"property\": \"colour\", \"index\": \"0\"}",
        "invalid_action_shape", "data.index"),
    OK_("set_property",
        "{\"name\": \"crate\", \"property\": \"colour\", \"index\": 2, "
        "\"value\": 7}",
        "\"property\":\"colour\"", PA_OP_SET_PROPERTY),
    ERR("set_property",
        "{\"property\": \"laser_beams\", \"index\": 0, \"value\": 7}",
        "invalid_message", "'laser_beams' is not an array"),
    ERR("set_property",
        "{\"name\": \"crate\", \"property\": \"size\", \"index\": 2, "
        "\"value\": 1}",
        "invalid_message", "out of range for size"),
    ERR("set_property",
        "{\"property\": \"colour\", \"index\": 0, \"value\": [1]}",
        "invalid_action_shape", "a finite number with data.index"),
    OK_("save_snapshot_json", "{\"path\": \"w/a.json\"}",
        "\"path\":\"w/a.json\",\"status\":\"saved\"", PA_OP_SAVE_SNAPSHOT_JSON),
    OK_("save_snapshot_json", "{}", "\"path\":\"snapshot.json\"",
        PA_OP_SAVE_SNAPSHOT_JSON),
    ERR("save_snapshot_json", "{\"path\": 3}", "invalid_action_shape",
        "data.path"),
    SIMERR("save_snapshot_json", "{\"path\": \"../a.json\"}", invalid_message,
           PA_OP_SAVE_SNAPSHOT_JSON),
    OK_("load_snapshot_json", "{\"path\": \"a.json\"}", "\"status\":\"loaded\"",
        PA_OP_LOAD_SNAPSHOT_JSON),
    ERR("load_snapshot_json", "{}", "invalid_message", "data.path is required"),
    OK_("save", "{}", "\"saved_tick\":40", PA_OP_SAVE_SNAPSHOT_JSON),
    OK_("save_world", "{\"path\": \"w/a.yaml\"}",
        "\"paths\":[\"w/a.yaml\",\"w/a.map.yaml\",\"w/a.map.png\"]",
        PA_OP_SAVE_WORLD),
    ERR("save_world", "{}", "invalid_message", "data.path is required"),
    OK_("get_terrain_grid", "{\"cell_size\": 0.2, \"inflation_radius\": 0.1}",
        "\"class_grid\":[[", -1),
    OK_("get_terrain_grid",
        "{\"include_static_obstacles\": false, \"include_dynamic_agents\": "
        "true}",
        "\"include_dynamic_agents\":true", -1),
    ERR("get_terrain_grid", "{\"cell_size\": 0}", "invalid_message",
        "data.cell_size 0 is out of range"),
    ERR("get_terrain_grid", "{\"cell_size\": 0.5, \"stride\": 2}",
        "invalid_message", "older form"),
    ERR("get_terrain_grid", "{\"format\": \"png\"}", "invalid_message",
        "'png' is not arrays or binary"),
    ERR("get_terrain_grid", "{\"include_dynamic_agents\": \"yes\"}",
        "invalid_action_shape", "data.include_dynamic_agents"),
    ERR("get_terrain_grid", "{\"inflation_radius\": -1}", "invalid_message",
        "data.inflation_radius -1"),
    OK_("set_waypoint", "{\"waypoint\": [1.5, -2]}", "\"points\":1", -1),
    OK_("set_waypoint", "{\"robot\": 1, \"waypoint\": []}", "\"points\":0", -1),
    ERR("set_waypoint", "{\"waypoint\": [1, 2, 3]}", "invalid_action_shape",
        "data.waypoint must be [x, y]"),
    ERR("set_waypoint", "{\"waypoint\": [1, \"a\"]}", "invalid_action_shape",
        "finite numbers"),
    OK_("set_pred_trajectory", "{\"trajectory\": [[0, 0], [1, 1], [2, 1]]}",
        "\"points\":3", -1),
    ERR("set_pred_trajectory", "{\"trajectory\": [[0]]}",
        "invalid_action_shape", "data.trajectory[0]"),
    ERR("set_pred_trajectory", "{\"robot\": 9, \"trajectory\": []}",
        "unknown_robot", "id 9"),
    OK_("list_scenarios", "{}",
        "\"count\":7,\"scenarios\":[{\"name\":\"Empty\"", -1),
    OK_("hibernate", "{}", "\"status\":\"hibernating\"", -1),
    ERR("hibernate", "{\"x\": 1}", "invalid_message",
        "hibernate takes no data"),
    OK_("wakeup", "{}", "\"status\":\"rendering\"", -1),
    OK_("add_visual",
        "{\"name\": \"s1\", \"type\": \"sphere\", \"position\": [1, 2, 0.5], "
        "\"size\": 0.25, \"color\": [0, 1, 0]}",
        "\"type\":\"sphere\"", -1),
    ERR("add_visual", "{\"name\": \"s1\", \"type\": \"box\"}",
        "invalid_message", "a visual named 's1' exists"),
    ERR("add_visual", "{\"name\": \"c\", \"type\": \"cone\"}",
        "invalid_message", "data.type 'cone'"),
    ERR("add_visual",
        "{\"name\": \"c\", \"type\": \"box\", \"size\": [1, -1, 1]}",
        "invalid_message", "data.size[1]"),
    ERR("add_visual",
        "{\"name\": \"c\", \"type\": \"box\", \"points\": [[0, 0]]}",
        "invalid_message", "polyline and point_cloud only"),
    ERR("add_visual",
        "{\"name\": \"c\", \"type\": \"polyline\", \"points\": [[0, 0], [1]]}",
        "invalid_action_shape", "data.points[1]"),
    OK_("update_visual", "{\"name\": \"s1\", \"visible\": false}",
        "\"visible\":false", -1),
    ERR("update_visual", "{\"name\": \"nope\"}", "unknown_object",
        "no visual named 'nope'"),
    ERR("update_visual", "{\"name\": \"s1\", \"color\": [2, 0, 0]}",
        "invalid_message", "colours are in [0, 1]"),
    OK_("add_visual",
        "{\"name\": \"pc\", \"type\": \"point_cloud\", "
        "\"points_b64\": \"AACAPwAAAEAAAEBAAACAQAAAoEAAAMBA\"}",
        "\"points\":2", -1),
    OK_("update_visual",
        "{\"name\": \"pc\", \"append\": true, \"point_format\": \"xyzrgba\", "
        "\"points_b64\": \"AACAPwAAAEAAAEBA/wAA/w==\"}",
        "\"points\":3", -1),
    ERR("update_visual", "{\"name\": \"pc\", \"points_b64\": \"AACAPwAA*\"}",
        "invalid_action_shape", "not base64 of 12-byte points"),
    ERR("update_visual",
        "{\"name\": \"pc\", \"points_b64\": \"AADAfwAAAEAAAEBA\"}",
        "invalid_message", "point 0 is not finite"),
    OK_("remove_visual", "{\"name\": \"pc\"}", "\"name\":\"pc\"", -1),
    OK_("list_visuals", "{}", "\"count\":1", -1),
    OK_("remove_visual", "{\"name\": \"s1\"}", "\"name\":\"s1\"", -1),
    ERR("remove_visual", "{\"name\": \"s1\"}", "unknown_object",
        "no visual named 's1'"),
    OK_("clear_visuals", "{}", "\"removed\":0", -1),
    OK_("set_camera", "{\"position\": [0, -5, 5], \"look_at\": [0, 0, 0]}",
        "\"width\":640", -1),
    ERR("set_camera", "{\"position\": [0, 0, 0], \"look_at\": [0, 0, 0]}",
        "invalid_message", "the same point"),
    ERR("set_camera",
        "{\"position\": [1, 0, 0], \"look_at\": [0, 0, 0], "
        "\"width\": 321}",
        "invalid_message", "must be even"),
    OK_("focus_on", "{\"object\": \"\"}", "\"kind\":\"none\"", -1),
    ERR("focus_on", "{\"object\": \"nobody\"}", "unknown_object",
        "no robot or obstacle named 'nobody'"),
    OK_("stop_recording_video", "{}", "\"was_recording\":false", -1),
    ERR("start_recording_video", "{\"name\": \"v\", \"fps\": 0}",
        "invalid_message", "data.fps 0"),
    OK_("start_recording_video", "{\"name\": \"v\"}", ".mp4", -1),
    ERR("start_recording_video", "{\"name\": \"v\"}", "busy", "being served"),
    ERR("request_screenshot", "{\"name\": \"a/b\"}", "invalid_message",
        "data.name 'a/b'"),
    OK_("request_screenshot", "{\"name\": \"s\"}", ".png", -1),
    ERR("request_screenshot", "{\"name\": \"s\"}", "busy", "being written"),
    OK_("add_visual_sphere", "{\"name\": \"a1\", \"size\": 0.5}",
        "\"type\":\"sphere\"", -1),
    /* RaisimServer's visuals ignore a key they do not take, named in
     * data.warnings (the seed's rule); the type stays the action's */
    OK_("add_visual_sphere", "{\"name\": \"a9\", \"type\": \"box\"}",
        "\"warnings\":[\"data.type is not a key of add_visual_sphere: "
        "ignored\"]",
        -1),
    OK_("add_visual_box", "{\"name\": \"a2\"}", "\"type\":\"box\"", -1),
    OK_("add_visual_cylinder", "{\"name\": \"a3\"}", "\"type\":\"cylinder\"",
        -1),
    OK_("add_visual_capsule", "{\"name\": \"a4\"}", "\"type\":\"capsule\"", -1),
    OK_("add_visual_arrow", "{\"name\": \"a5\"}", "\"type\":\"arrow\"", -1),
    OK_("add_visual_polyline",
        "{\"name\": \"a6\", \"points\": [[0, 0], [1, 1]]}", "\"points\":2", -1),
    OK_("add_point_cloud", "{\"name\": \"a7\", \"points\": [[0, 0, 1]]}",
        "\"type\":\"point_cloud\"", -1),
    OK_("add_visual_mesh",
        "{\"name\": \"a10\", \"vertices\": [0, 0, 0, 1, 0, 0, 0, 1, 0]}",
        "\"triangles\":1", -1),
    ERR("add_visual_mesh", "{\"name\": \"a11\", \"vertices\": [0, 0]}",
        "invalid_message", "not a multiple of 3"),
    OK_("add_visual_heightmap",
        "{\"name\": \"a11\", \"samples\": [2, 2], \"heights\": [0, 1, 2, "
        "3]}",
        "\"colormap\":\"viridis\"", -1),
    OK_("add_instanced_visuals",
        "{\"name\": \"a12\", \"positions\": [[0, 0], [1, 1, 1]]}",
        "\"instances\":2", -1),
    ERR("add_visual_box", "{\"name\": \"a2\"}", "invalid_message",
        "a visual named 'a2' exists"),
    OK_("clear_visuals", "{}", "\"removed\":11", -1),
    OK_("kick", "{\"robot\": 1, \"speed\": 2}", "\"kicks\":0", PA_OP_SSL_ROBOT),
    ERR("kick", "{\"robot\": 1, \"speed\": -1}", "invalid_message",
        "data.speed"),
    ERR("kick", "{\"robot\": 1}", "invalid_message", "data.speed"),
    OK_("set_dribbler", "{\"robot\": 1, \"rpm\": 100}",
        "\"ball_contact\":false", PA_OP_SSL_ROBOT),
    ERR("set_dribbler", "{\"robot\": 1}", "invalid_message", "data.rpm"),
    OK_("teleport_ball", "{\"position\": [1, 2], \"velocity\": [1, 0]}",
        "\"present\":true", PA_OP_TELEPORT_BALL),
    ERR("teleport_ball", "{}", "invalid_action_shape", "data.position"),
    ERR("teleport_ball", "{\"position\": [1, 2], \"roll\": 1}",
        "invalid_message", "data.roll"),
    OK_("get_ball", "{}", "\"division\":\"B\"", -1),
    /* the field came after pa-netgw started: its ports opened then */
    OK_("get_ssl_info", "{}", "\"open\":true", -1),
    OK_("set_pose", "{\"robot\": 1, \"pose\": [1, 2, 0], \"v_x\": 1}",
        "\"pose\"", PA_OP_TELEPORT_MOVING),
    OK_("foxglove_info", "{}", "\"recording\":false", -1),
    ERR("record_mcap", "{}", "invalid_message", "data.path"),
    ERR("record_mcap", "{\"path\": \"x.txt\"}", "invalid_message",
        "must end in .mcap"),
    ERR("record_mcap", "{\"path\": \"../x.mcap\"}", "invalid_message",
        "'..' is not allowed"),
    ERR("record_mcap", "{\"path\": \"/x.mcap\"}", "invalid_message",
        "outside the data directory"),
    ERR("record_mcap", "{\"path\": \"x.mcap\", \"topics\": [\"map\"]}",
        "invalid_action_shape", "data.topics[0]"),
    ERR("stop_record_mcap", "{}", "invalid_message", "no recording"),
    OK_("record_mcap", "{\"path\": \"t-json-actions.mcap\"}",
        "t-json-actions.mcap", -1),
    ERR("record_mcap", "{\"path\": \"t-json-actions2.mcap\"}", "busy",
        "is running"),
    OK_("stop_record_mcap", "{}", "\"chunks\":", -1),
    OK_("record_mcap", "{\"path\": \"t-json-replay.mcap\"}",
        "t-json-replay.mcap", -1),
    OK_("pause", "{}", "\"tick\":42", PA_OP_PAUSE),
    OK_("stop_record_mcap", "{}", "\"messages\":", -1),
    OK_("replay_mcap", "{\"path\": \"t-json-replay.mcap\"}", "\"commands\":1",
        PA_OP_SYNC),
    ERR("replay_mcap", "{\"path\": \"t-none.mcap\"}", "invalid_message",
        "No such file"),
    /* forces (json_force.c): r1 is dynamic, r0 kinematic */
    OK_("set_force", "{\"robot\": 1, \"force\": [0, 100, 0]}", "\"tick\":42",
        PA_OP_SET_FORCE),
    ERR("set_force", "{\"robot\": 1, \"force\": [0, 1, 2]}",
        "unsupported_control_scheme", "data.force[2] (fz = 2)"),
    ERR("set_force", "{\"force\": [1, 0, 0]}", "unsupported_control_scheme",
        "robot 'r0' is kinematic"),
    ERR("set_force", "{\"robot\": 1}", "invalid_message", "data.force"),
    ERR("set_force", "{\"robot\": 1, \"force\": [1]}", "invalid_action_shape",
        "3 or 2 numbers"),
    OK_("set_force_world", "{\"robot\": 1, \"force\": [3, 4]}", "\"tick\":42",
        PA_OP_SET_FORCE),
    OK_("set_force_body", "{\"robot\": 1, \"force\": [3, 4, 0]}", "\"tick\":42",
        PA_OP_SET_FORCE),
    ERR("set_force_body", "{\"robot\": 1, \"force\": [80, 80, 0]}",
        "invalid_action_shape", "max_force 100 N"),
    OK_("set_body_wrench", "{\"robot\": 1, \"wrench\": [0, 1, 0, 0, 0, 0.5]}",
        "\"tick\":42", PA_OP_SET_FORCE),
    ERR("set_body_wrench", "{\"robot\": 1, \"wrench\": [0, 1, 0, 0.1, 0, 0]}",
        "unsupported_control_scheme", "(tx = 0.1)"),
    ERR("set_body_wrench", "{\"robot\": 1, \"wrench\": [0, 1, 0, 0, -1, 0]}",
        "unsupported_control_scheme", "(ty = -1)"),
    ERR("set_body_wrench", "{\"robot\": 1, \"wrench\": [0, 0, 5, 0, 0, 0]}",
        "unsupported_control_scheme", "(fz = 5)"),
    ERR("set_body_wrench", "{\"robot\": 1, \"wrench\": [0, 0, 0, 0, 0, 11]}",
        "invalid_action_shape", "max_torque"),
    OK_("set_body_velocity", "{\"velocity\": [0, 0.5, 0, 0, 0, 0.1]}",
        "\"robot\":0", PA_OP_SET_CMD),
    ERR("set_body_velocity", "{\"velocity\": [0, 0.5, 0.1, 0, 0, 0]}",
        "unsupported_control_scheme", "(w = 0.1)"),
    ERR("set_body_velocity", "{\"velocity\": [0, 0.5, 0, 1, 0, 0]}",
        "unsupported_control_scheme", "(p = 1)"),
    ERR("set_body_velocity", "{\"velocity\": [0, 0.5, 0, 0, 1, 0]}",
        "unsupported_control_scheme", "(q = 1)"),
    ERR("set_body_velocity", "{\"velocity\": [0.2, 0, 0, 0, 0, 0]}",
        "unsupported_control_scheme", "velocity[0]"),
    OK_("set_thrust", "{\"robot\": 1, \"thrusters\": {\"aft\": 0.5}}",
        "\"tick\":42", PA_OP_SET_THRUST),
    OK_("set_thrusters", "{\"robot\": 1, \"thrusters\": {\"aft\": -1}}",
        "\"tick\":42", PA_OP_SET_THRUST),
    ERR("set_thrusters", "{\"robot\": 1, \"thrusters\": {\"bow\": 0.5}}",
        "invalid_message", "no thruster 'bow' (it has: aft)"),
    ERR("set_thrusters", "{\"robot\": 1, \"thrusters\": {\"aft\": 2}}",
        "invalid_action_shape", "data.thrusters.aft"),
    ERR("set_thrusters", "{\"thrusters\": {\"aft\": 1}}",
        "unsupported_control_scheme", "kinematic"),
    OK_("apply_force",
        "{\"robot\": 1, \"force\": [1, 0, 0], \"point\": [0, 0.1], "
        "\"seconds\": 0.1}",
        "\"tick\":42", PA_OP_SET_FORCE),
    ERR("apply_force",
        "{\"robot\": 1, \"force\": [1, 0], \"point\": [0, 0, 1]}",
        "unsupported_control_scheme", "data.point[2] (z = 1)"),
    ERR("apply_force", "{\"robot\": 1, \"force\": [1, 0], \"frame\": \"up\"}",
        "invalid_message", "data.frame"),
    OK_("apply_torque", "{\"robot\": 1, \"torque\": [0, 0, 2]}", "\"tick\":42",
        PA_OP_SET_FORCE),
    OK_("apply_torque", "{\"robot\": 1, \"torque\": 2}", "\"tick\":42",
        PA_OP_SET_FORCE),
    ERR("apply_torque", "{\"robot\": 1, \"torque\": [1, 0, 0]}",
        "unsupported_control_scheme", "(tx = 1)"),
    OK_("step", "{\"robot\": 1, \"force\": [0, 50, 0], \"steps\": 2}",
        "\"type\":\"state\"", PA_OP_STEP),
    OK_("step", "{\"robot\": 1, \"thrusters\": {\"aft\": 1}}",
        "\"type\":\"state\"", PA_OP_STEP),
    ERR("step", "{\"robot\": 1, \"force\": [0, 50, 1]}",
        "unsupported_control_scheme", "(fz = 1)"),
    ERR("step", "{\"force\": [0, 50, 0]}", "unsupported_control_scheme",
        "kinematic"),
    ERR("step", "{\"robot\": 1, \"force\": [0, 50, 0], \"v\": 1}",
        "invalid_message", "not both"),
    ERR("step", "{\"robot\": 1, \"force\": [0, 500, 0]}",
        "invalid_action_shape", "max_force"),
    OK_("set_property",
        "{\"robot\": 0, \"property\": \"dynamics\", \"value\": \"dynamic\"}",
        "\"property\":\"dynamics\"", PA_OP_SET_PROPERTY),
    ERR("set_property",
        "{\"robot\": 0, \"property\": \"dynamics\", \"value\": \"floaty\"}",
        "invalid_action_shape", "\"kinematic\" or \"dynamic\""),
    ERR("spawn_robot",
        "{\"name\": \"x\", \"pose\": [1, 1, 0], \"dynamics\": \"floaty\"}",
        "invalid_message", "not kinematic or dynamic"),
    /* agents (json_agents.c): obstacle 1 "walker" is one */
    OK_("spawn_agent",
        "{\"name\": \"p1\", \"pose\": [1, 1, 0], \"behaviour\": "
        "\"pedestrian\", \"goal\": [3, 3]}",
        "\"agent\":", PA_OP_SPAWN_AGENT),
    OK_("spawn_agent",
        "{\"pose\": [1, 1, 0], \"behaviour\": \"constant\", \"shape\": "
        "\"box\", \"size\": [0.4, 0.2], \"velocity\": [0.3, 0.4]}",
        "\"agent\":", PA_OP_SPAWN_AGENT),
    ERR("spawn_agent", "{\"pose\": [1, 1, 0], \"behaviour\": \"dance\"}",
        "invalid_message", "'dance' is not constant"),
    ERR("spawn_agent", "{\"pose\": [1, 1, 0]}", "invalid_message",
        "data.behaviour is required"),
    ERR("spawn_agent",
        "{\"pose\": [1, 1, 0], \"behaviour\": \"waypoints\", \"waypoints\": "
        "[[1,1],[2,2],[3,3],[4,4],[5,5],[6,6],[7,7],[8,8]]}",
        "invalid_action_shape", "1 to 7 points"),
    ERR("spawn_agent",
        "{\"pose\": [1, 1, 0], \"behaviour\": \"pedestrian\", \"goal\": [1, "
        "1], \"waypoints\": [[2, 2]]}",
        "invalid_message", "give one"),
    ERR("spawn_agent",
        "{\"pose\": [1, 1, 0], \"behaviour\": \"random\", \"speed\": 1, "
        "\"velocity\": [1, 0]}",
        "invalid_message", "give one"),
    OK_("move_agent", "{\"name\": \"walker\", \"goal\": [2, 2]}", "\"tick\":42",
        PA_OP_MOVE_AGENT),
    OK_("move_agent", "{\"agent\": 1, \"pose\": [2, 2, 0]}", "\"tick\":42",
        PA_OP_MOVE_AGENT),
    ERR("move_agent", "{\"agent\": 0, \"pose\": [2, 2, 0]}", "unknown_agent",
        "no agent with id 0"),
    ERR("move_agent", "{\"name\": \"walker\"}", "invalid_message",
        "needs data.pose"),
    SIMERR("move_agent", "{\"name\": \"ghost\", \"speed\": 1}", unknown_agent,
           PA_OP_MOVE_AGENT),
    OK_("remove_agent", "{\"name\": \"walker\"}", "\"tick\":42",
        PA_OP_REMOVE_AGENT),
    ERR("remove_agent", "{}", "invalid_message", "data.name or data.agent"),
    OK_("clear_agents", "{}", "\"removed\":", PA_OP_CLEAR_AGENTS),
    OK_("get_agents", "{}", "\"behaviour\":\"pedestrian\"", -1),
};

/* A replay pushes a pause, the recorded commands, then a SYNC. */
static bool sync_seen(void *arg) {
  fake_sim *fs = arg;
  return __atomic_load_n(&fs->last_op, __ATOMIC_ACQUIRE) == PA_OP_SYNC;
}

static bool op_seen(void *arg) {
  fake_sim *fs = arg;
  return __atomic_load_n(&fs->last_op, __ATOMIC_ACQUIRE) != UINT32_MAX;
}

/* Sends line and checks the one reply against code and needle. */
static void check_reply(int fd, const char *line, const char *action,
                        const char *code, const char *needle) {
  static char buf[1 << 16];
  char *l = malloc(strlen(line) + 2);
  sprintf(l, "%s\n", line);
  assert_int_equal(pa_test_send_str(fd, l), 0);
  free(l);
  if (pa_test_read_line(fd, buf, sizeof buf, 5000) <= 0)
    fail_msg("%s: no reply", line);
  json_t *r = json_loads(buf, 0, NULL);
  if (!r)
    fail_msg("%s: reply is not JSON: %s", line, buf);
  const char *type = json_string_value(json_object_get(r, "type"));
  json_t *err = json_object_get(r, "error");
  const char *got = json_string_value(json_object_get(err, "code"));
  const char *msg = json_string_value(json_object_get(err, "message"));
  bool ok = code ? type && !strcmp(type, "error") && got &&
                       !strcmp(got, code) && msg && strstr(msg, needle)
                 : type && strcmp(type, "error") && strstr(buf, needle);
  if (ok && action)
    ok = !strcmp(json_string_value(json_object_get(r, "action")), action);
  if (!ok)
    fail_msg("%s\n  expected %s '%s'\n  got %s", line, code ? code : "success",
             needle, buf);
  json_decref(r);
}

/* get_property shows exactly the schema's rows (maps/pa_props.h) of its
 * kind: a property added to the schema and not to the reply, or the other
 * way round, fails here. */
static void props_reply_matches_schema(int fd, const char *data, unsigned kind,
                                       const char *skip) {
  static char buf[1 << 16];
  char line[256];
  snprintf(line, sizeof line,
           "{\"type\":\"command\",\"action\":\"get_property\","
           "\"data\":%s}\n",
           data);
  assert_int_equal(pa_test_send_str(fd, line), 0);
  assert_true(pa_test_read_line(fd, buf, sizeof buf, 5000) > 0);
  json_t *r = json_loads(buf, 0, NULL);
  assert_non_null(r);
  json_t *props = json_object_get(json_object_get(r, "data"), "properties");
  if (!json_is_object(props))
    fail_msg("get_property %s: no properties in %s", data, buf);
  const pa_prop_def *defs = pa_prop_defs();
  size_t want = 0;
  for (int i = 0; i < PA_PR_COUNT; i++) {
    if (!(defs[i].kinds & kind) || (skip && !strcmp(defs[i].name, skip)))
      continue;
    want++;
    if (!json_object_get(props, defs[i].name))
      fail_msg("get_property %s: schema row '%s' missing from %s", data,
               defs[i].name, buf);
  }
  if (json_object_size(props) != want)
    fail_msg("get_property %s: %zu properties, the schema has %zu: %s", data,
             json_object_size(props), want, buf);
  json_decref(r);
}

/* Every pa-netgw flag has exactly one owner: the core (pa_core_flags) or
 * one row of the front-end table; a row names only flags that exist. */
static bool names_flag(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p && *p;) {
    size_t k = strcspn(p, " ");
    if (k == n && !strncmp(p, name, n))
      return true;
    p += k;
    p += strspn(p, " ");
  }
  return false;
}

static void frontend_flags(void **state) {
  (void)state;
  const pa_opt_table *t = pa_netgw_opts();
  for (size_t i = 0; i < t->n; i++) {
    const char *name = t->rows[i].o.name;
    int owners = names_flag(pa_core_flags, name);
    for (const pa_frontend *const *f = pa_frontends; *f; f++)
      owners += names_flag((*f)->flags, name);
    if (owners != 1)
      fprintf(stderr,
              "--%s: %d owners (the core's pa_core_flags, or one "
              "front-end row's .flags)\n",
              name, owners);
    assert_int_equal(owners, 1);
  }
  /* and every name a row gives is a flag */
  for (const pa_frontend *const *f = pa_frontends; *f; f++) {
    for (const char *p = (*f)->flags; p && *p;) {
      size_t k = strcspn(p, " ");
      bool found = false;
      for (size_t i = 0; i < t->n && !found; i++)
        found =
            strlen(t->rows[i].o.name) == k && !strncmp(t->rows[i].o.name, p, k);
      if (!found)
        fprintf(stderr, "%s: no flag --%.*s\n", (*f)->name, (int)k, p);
      assert_true(found);
      p += k;
      p += strspn(p, " ");
    }
  }
}

static void json_actions(void **state) {
  (void)state;
  fixture f;
  fixture_up_ms(&f, PA_CAM_CHUNK_DEFAULT, 300);
  world_up(&f);
  fake_sim fs = {.st = &f.st, .status = PA_OK, .last_op = UINT32_MAX};
  assert_int_equal(pthread_create(&fs.th, NULL, fake_sim_run, &fs), 0);
  int fd = pa_test_tcp_connect((uint16_t)pa_netgw_port(f.g));
  /* a live pid as the spectator's pa-render (its requests stay pending) */
  f.st.vis->spec.render_pid = (int32_t)getpid();
  /* and as the batched cameras' (camera_batch's requests stay pending) */
  pa_shm_seg aseg;
  pa_atlas_seg *as = NULL;
  assert_int_equal(pa_stack_atlas_open(&f.st, &aseg, &as, NULL, 0), 0);
  as->render_pid = (int32_t)getpid();
  /* every row of the action table has a success case (and its errors) */
  int rows = 0;
  for (const char *name; (name = pa_json_action_name(rows)); rows++) {
    bool ok = false;
    for (size_t i = 0; i < sizeof jcases / sizeof jcases[0]; i++)
      ok |= !strcmp(jcases[i].action, name) && !jcases[i].code;
    if (!ok)
      fail_msg("no success case for action %s", name);
  }
  assert_true(rows >= 40); /* the walk saw the table */
  char line[1024];
  for (size_t i = 0; i < sizeof jcases / sizeof jcases[0]; i++) {
    const jcase *c = &jcases[i];
    __atomic_store_n(&fs.status, c->sim, __ATOMIC_RELEASE);
    __atomic_store_n(&fs.last_op, UINT32_MAX, __ATOMIC_RELEASE);
    bool ctl = !strcmp(c->action, "pause") || !strcmp(c->action, "resume") ||
               !strcmp(c->action, "reset") || !strcmp(c->action, "step_n") ||
               !strcmp(c->action, "set_time_scale") ||
               !strcmp(c->action, "get_status");
    snprintf(line, sizeof line,
             "{\"type\":\"%s\",\"protocol_version\":2,\"request_id\":%zu,"
             "\"action\":\"%s\",\"data\":%s}",
             ctl ? "sim_control" : "command", i, c->action, c->data);
    check_reply(fd, line, c->action, c->code, c->needle);
    if (c->op == PA_OP_SYNC && !strcmp(c->action, "replay_mcap")) {
      if (!pa_test_wait_for(sync_seen, &fs, 2000))
        fail_msg("%s: the replay's SYNC never reached pa-sim", line);
    } else if (c->op >= 0) {
      /* drive commands take no reply: wait until the sim has it */
      if (!pa_test_wait_for(op_seen, &fs, 2000))
        fail_msg("%s: pa-sim got no command", line);
      assert_int_equal(__atomic_load_n(&fs.last_op, __ATOMIC_ACQUIRE), c->op);
    } else if (!c->code || c->sim == PA_OK) {
      /* answered by pa-netgw alone: nothing reached pa-sim */
      assert_int_equal(pa_queue_count(f.st.cmd), 0);
      assert_int_equal(__atomic_load_n(&fs.last_op, __ATOMIC_ACQUIRE),
                       UINT32_MAX);
    }
  }
  __atomic_store_n(&fs.status, PA_OK, __ATOMIC_RELEASE);
  /* the envelope */
  static const struct {
    const char *line, *code, *needle;
  } env[] = {
      {"{\"type\":\"command\"", "invalid_message", "bad JSON"},
      {"{\"action\":\"ping\"}", "invalid_message", "missing \"type\""},
      {"{\"type\":\"query\",\"action\":\"ping\"}", "unknown_type", "'query'"},
      {"{\"type\":\"command\",\"protocol_version\":3,\"action\":\"ping\"}",
       "invalid_message", "protocol_version must be 2"},
      {"{\"type\":\"command\"}", "invalid_message", "missing \"action\""},
      {"{\"type\":\"command\",\"action\":\"ping\",\"data\":[]}",
       "invalid_message", "\"data\" must be an object"},
      {"{\"type\":\"command\",\"action\":\"fly\"}", "unknown_action",
       "unknown action 'fly'"},
      {"{\"type\":\"sim_control\",\"action\":\"get_state\"}", "unknown_action",
       "not a sim_control action"},
      {"{\"type\":\"command\",\"request_id\":{},\"action\":\"ping\"}",
       "invalid_message", "request_id must be a string or a number"},
      {"{\"type\":\"command\",\"request_id\":[1],\"action\":\"ping\"}",
       "invalid_message", "request_id must be a string or a number"},
      {"{\"type\":\"batch\",\"request_id\":true,\"requests\":[]}",
       "invalid_message", "request_id must be a string or a number"},
      {"{\"type\":\"command\",\"action\":\"ping\",\"action\":\"ping\"}",
       "invalid_message", "duplicate"},
      {"{\"type\":\"batch\",\"requests\":3}", "invalid_message",
       "needs \"requests\""},
  };
  for (size_t i = 0; i < sizeof env / sizeof env[0]; i++)
    check_reply(fd, env[i].line, NULL, env[i].code, env[i].needle);
  props_reply_matches_schema(fd, "{\"robot\": 0}", PA_PK_ROBOT, NULL);
  /* a box: its extent is size, not radius */
  props_reply_matches_schema(fd, "{\"name\": \"crate\"}", PA_PK_OBSTACLE,
                             "radius");
  /* batches: in order, a sim round trip inside, a batch in a batch refused */
  json_t *r = jask(fd, "{\"type\":\"batch\",\"request_id\":\"b\",\"requests\":["
                       "{\"type\":\"command\",\"action\":\"ping\"},"
                       "{\"type\":\"sim_control\",\"action\":\"pause\"},"
                       "{\"type\":\"batch\",\"requests\":[]},"
                       "{\"type\":\"command\",\"action\":\"get_pose\"},"
                       "1]}");
  assert_string_equal(json_string_value(json_object_get(r, "request_id")), "b");
  json_t *rs = json_object_get(json_object_get(r, "data"), "responses");
  assert_int_equal(json_array_size(rs), 5);
  static const char *const want[] = {"ping", "pause", NULL, "get_pose", NULL};
  for (size_t i = 0; i < 5; i++) {
    json_t *e = json_array_get(rs, i);
    if (want[i])
      assert_string_equal(json_string_value(json_object_get(e, "action")),
                          want[i]);
    else
      assert_string_equal(json_string_value(json_object_get(
                              json_object_get(e, "error"), "code")),
                          "invalid_message");
  }
  json_decref(r);
  char big[64 * 48 + 128];
  size_t n =
      (size_t)snprintf(big, sizeof big, "{\"type\":\"batch\",\"requests\":[");
  for (int i = 0; i < 65; i++)
    n += (size_t)snprintf(big + n, sizeof big - n, "%s{\"type\":\"command\"}",
                          i ? "," : "");
  snprintf(big + n, sizeof big - n, "]}");
  check_reply(fd, big, "batch", "batch_limit", "at most 64");
  /* no reply from pa-sim within --request_timeout_ms: busy, by name */
  __atomic_store_n(&fs.drop, 1, __ATOMIC_RELEASE);
  check_reply(fd, "{\"type\":\"sim_control\",\"action\":\"pause\"}", "pause",
              "busy", "did not answer within 300 ms");
  __atomic_store_n(&fs.drop, 0, __ATOMIC_RELEASE);
  check_reply(fd, "{\"type\":\"command\",\"action\":\"ping\"}", "ping", NULL,
              "pong");
  /* the camera_batch requests above went into the segment, one after the
   * other (the errors wrote none) */
  assert_int_equal(as->req_seq, 6);
  assert_int_equal(as->first, 0); /* the last: every robot from tick 1000 */
  assert_int_equal(as->count, 2);
  assert_int_equal(as->min_tick, 1000);
  pa_shm_detach(&aseg);
  close(fd);
  __atomic_store_n(&fs.stop, 1, __ATOMIC_RELEASE);
  pthread_join(fs.th, NULL);
  fixture_down(&f);
}

/* With --token: nothing but auth before a right token. */
static void json_auth(void **state) {
  (void)state;
  fixture f;
  fixture_up(&f, PA_CAM_CHUNK_DEFAULT);
  int fd = pa_test_tcp_connect((uint16_t)pa_netgw_port(f.g));
  check_reply(fd, "{\"type\":\"command\",\"action\":\"ping\"}", "ping", NULL,
              "pong");
  close(fd);
  pa_netgw_stop(f.g);
  pthread_join(f.th, NULL);
  pa_netgw_destroy(f.g);
  pa_netgw_def gd = pa_netgw_def_default();
  gd.tcp_port = 0;
  /* The fake sim's SSL field opens the SSL ports: the OS picks them. */
  gd.ssl_control_port = gd.ssl_blue_port = gd.ssl_yellow_port = 0;
  gd.token = "s3cret";
  char err[256];
  f.g = pa_netgw_create(&gd, &f.st, err, sizeof err);
  assert_non_null(f.g);
  assert_int_equal(pthread_create(&f.th, NULL, run_gw, f.g), 0);
  fd = pa_test_tcp_connect((uint16_t)pa_netgw_port(f.g));
  check_reply(fd, "{\"type\":\"command\",\"action\":\"get_version\"}",
              "get_version", "not_authorized", "first");
  check_reply(fd, "{\"type\":\"command\",\"action\":\"fly\"}", NULL,
              "not_authorized", "first");
  check_reply(fd, "{\"type\":\"batch\",\"requests\":[]}", "batch",
              "not_authorized", "authenticate before");
  check_reply(fd,
              "{\"type\":\"command\",\"action\":\"auth\",\"data\":"
              "{\"token\":\"s3cre\"}}",
              "auth", "not_authorized", "wrong token");
  check_reply(fd, "{\"type\":\"command\",\"action\":\"auth\"}", "auth",
              "not_authorized", "wrong token");
  /* a token of PA_NETGW_TOKEN_MAX bytes is too long, as for text auth */
  char line[PA_NETGW_TOKEN_MAX + 128];
  int k = snprintf(line, sizeof line,
                   "{\"type\":\"command\",\"action\":\"auth\","
                   "\"data\":{\"token\":\"");
  memset(line + k, 'k', PA_NETGW_TOKEN_MAX);
  snprintf(line + k + PA_NETGW_TOKEN_MAX,
           sizeof line - (size_t)k - PA_NETGW_TOKEN_MAX, "\"}}");
  check_reply(fd, line, "auth", "invalid_message", "shorter than 256 bytes");
  check_reply(fd,
              "{\"type\":\"command\",\"action\":\"auth\",\"data\":"
              "{\"token\":\"s3cret\"}}",
              "auth", NULL, "\"success\":true");
  check_reply(fd, "{\"type\":\"command\",\"action\":\"get_version\"}",
              "get_version", NULL, "\"version\"");
  close(fd);
  fixture_down(&f);
}

/* A bystander that pings the gateway in a loop and keeps its worst wait. */
typedef struct pinger {
  uint16_t port;
  pthread_t th;
  int stop;         /* atomic */
  int pongs;        /* atomic */
  int stop_at;      /* pongs_at_least waits for this many */
  int64_t worst_ms; /* read after the join */
  bool failed;
} pinger;

static void *ping_loop(void *arg) {
  pinger *p = arg;
  int fd = pa_test_tcp_connect(p->port);
  char buf[64];
  while (fd >= 0 && !__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
    int64_t t0 = pa_test_now_ms();
    if (pa_test_send_str(fd, "ping\n") != 0 ||
        pa_test_read_line(fd, buf, sizeof buf, 5000) <= 0 ||
        strcmp(buf, "pong") != 0) {
      p->failed = true;
      break;
    }
    int64_t dt = pa_test_now_ms() - t0;
    if (dt > p->worst_ms)
      p->worst_ms = dt;
    __atomic_add_fetch(&p->pongs, 1, __ATOMIC_RELEASE);
  }
  if (fd < 0)
    p->failed = true;
  else
    close(fd);
  return NULL;
}

static bool pongs_at_least(void *arg) {
  pinger *p = arg;
  return __atomic_load_n(&p->pongs, __ATOMIC_ACQUIRE) >= p->stop_at;
}

/* Issue 22 defect 6: after a 400 x 400 m map at 0.2 m, a batch of 64
 * get_terrain_grid {stride: 2} (~1 MB each) would build ~64 MB, block the
 * loop and overflow --max_output (a silent disconnect). The replies are
 * bounded before they are built: the ones that fit are answered, the rest
 * get too_long by name, and a bystander's pings stay fast. */
/* The gateway's scan cache keeps each robot's newest scan whole as its
 * length changes (an entry is sized by its record and grows with it). */
static void scan_cache_follows_record_length(void **state) {
  (void)state;
  fixture f;
  fixture_up(&f, PA_CAM_CHUNK_DEFAULT);
  world_up(&f);
  int fd = pa_test_tcp_connect((uint16_t)pa_netgw_port(f.g));
  const uint32_t counts[] = {700, 100, 1000, 5, 1000};
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
    uint32_t c = counts[k];
    size_t n = sizeof(pa_scan) + (size_t)c * sizeof(float);
    uint8_t *rec = pa_ring_write_begin(f.st.scan, (uint32_t)n);
    assert_non_null(rec);
    memset(rec, 0, n);
    pa_scan *sc = (pa_scan *)rec;
    sc->robot = 0, sc->seq = 8 + (uint32_t)k, sc->tick = 41, sc->count = c;
    sc->range_max = 12;
    float *rg = (float *)(sc + 1);
    for (uint32_t i = 0; i < c; i++)
      rg[i] = (float)(i % 9) + 0.5f * (float)k;
    assert_true(pa_ring_write_commit(f.st.scan) > 0);
    json_t *r = jask(fd, "{\"type\":\"command\",\"action\":\"get_sensors\","
                         "\"data\":{\"robot\":0}}");
    json_t *scan = json_object_get(json_object_get(r, "data"), "scan");
    assert_int_equal(json_integer_value(json_object_get(scan, "seq")), 8 + k);
    json_t *a = json_object_get(scan, "ranges");
    assert_int_equal(json_array_size(a), c);
    for (uint32_t i = 0; i<c; i += c> 1 ? c - 1 : 1) /* first and last */
      assert_float_equal(json_number_value(json_array_get(a, i)),
                         (double)(i % 9) + 0.5 * (double)k, 1e-6);
    json_decref(r);
  }
  close(fd);
  fixture_down(&f);
}

static void batch_reply_bounded(void **state) {
  (void)state;
  fixture f;
  fixture_up(&f, PA_CAM_CHUNK_DEFAULT);
  /* play pa-sim after generate_map {width: 400, height: 400, resolution: 0.2}
   */
  enum { W = 2000, H = 2000 };
  int8_t *cells = calloc((size_t)W * H, 1);
  for (uint32_t y = 0; y < H; y++)
    for (uint32_t x = 0; x < W; x++)
      if (x == 0 || y == 0 || x == W - 1 || y == H - 1 ||
          (x % 97 == 0 && y % 5))
        cells[(size_t)y * W + x] = 100;
  char err[256];
  assert_int_equal(pa_stack_map_publish(&f.st, W, H, 0.2, -200, -200, 0, cells,
                                        65, err, sizeof err),
                   0);
  free(cells);
  pinger p = {.port = (uint16_t)pa_netgw_port(f.g), .stop_at = 3};
  assert_int_equal(pthread_create(&p.th, NULL, ping_loop, &p), 0);
  assert_true(pa_test_wait_for(pongs_at_least, &p, 5000));
  int fd = pa_test_tcp_connect((uint16_t)pa_netgw_port(f.g));
  size_t cap = 64 * 128 + 64;
  char *batch = malloc(cap);
  size_t n = (size_t)snprintf(batch, cap, "{\"type\":\"batch\",\"requests\":[");
  for (int i = 0; i < 64; i++)
    n += (size_t)snprintf(batch + n, cap - n,
                          "%s{\"type\":\"command\",\"action\":"
                          "\"get_terrain_grid\",\"data\":{\"stride\":2}}",
                          i ? "," : "");
  snprintf(batch + n, cap - n, "]}\n");
  int64_t t0 = pa_test_now_ms();
  assert_int_equal(pa_test_send_str(fd, batch), 0);
  free(batch);
  size_t bufsz = 8u << 20;
  char *line = malloc(bufsz);
  int len = pa_test_read_line(fd, line, bufsz, 20000);
  int64_t took = pa_test_now_ms() - t0;
  assert_true(len > 0); /* an answer, not a disconnect */
  assert_true((size_t)len < pa_netgw_def_default().max_output);
  json_t *r = json_loads(line, 0, NULL);
  free(line);
  assert_non_null(r);
  assert_string_equal(json_string_value(json_object_get(r, "type")),
                      "response");
  json_t *rs = json_object_get(json_object_get(r, "data"), "responses");
  assert_int_equal(json_array_size(rs), 64);
  size_t ok = 0, too_long = 0;
  for (size_t i = 0; i < 64; i++) {
    json_t *e = json_array_get(rs, i);
    const char *type = json_string_value(json_object_get(e, "type"));
    if (!strcmp(type, "response")) {
      assert_int_equal(too_long, 0); /* the ones that fit come first */
      json_t *d = json_object_get(e, "data");
      assert_int_equal(json_integer_value(json_object_get(d, "width")), 1000);
      assert_int_equal(json_array_size(json_object_get(d, "rows")), 1000);
      ok++;
    } else {
      json_t *er = json_object_get(e, "error");
      assert_string_equal(json_string_value(json_object_get(er, "code")),
                          "too_long");
      assert_non_null(strstr(json_string_value(json_object_get(er, "message")),
                             "--max_output"));
      too_long++;
    }
  }
  assert_true(ok >= 1 && ok <= 4);
  assert_int_equal(ok + too_long, 64);
  json_decref(r);
  /* the connection stays usable */
  r = jask(fd, "{\"type\":\"command\",\"action\":\"ping\"}");
  assert_string_equal(json_string_value(json_object_get(r, "type")),
                      "response");
  json_decref(r);
  /* the bystander kept being answered, and quickly */
  p.stop_at = __atomic_load_n(&p.pongs, __ATOMIC_ACQUIRE) + 2;
  assert_true(pa_test_wait_for(pongs_at_least, &p, 5000));
  __atomic_store_n(&p.stop, 1, __ATOMIC_RELEASE);
  pthread_join(p.th, NULL);
  assert_false(p.failed);
  fprintf(stderr,
          "batch of 64 terrain grids: %zu answered, %zu too_long, "
          "%lld ms; worst bystander ping %lld ms\n",
          ok, too_long, (long long)took, (long long)p.worst_ms);
  assert_true(p.worst_ms < 1000 * PA_TEST_SLOW);
  close(fd);
  fixture_down(&f);
}

/* ---- the property schema in the docs -------------------------------------*/

/* The table docs/protocol-notes.md shows between its props markers: every
 * row of maps/pa_props.h, with its world-file key, default and wire id. */
static char *props_table(void) {
  static const char *const types[] = {
      "number", "integer", "colour [r, g, b(, a)]", "[x, y]", "name"};
  size_t cap = 16384, len = 0;
  char *t = malloc(cap);
  len += (size_t)snprintf(
      t + len, cap - len,
      "| property | of | value | range | default | world file | set (wire "
      "id) |\n"
      "|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < PA_PR_COUNT; i++) {
    const pa_prop_def *p = pa_prop((pa_prop_row)i);
    char rg[64] = "—", dflt[96], set[32] = "read-only";
    if (p->type != PA_PT_WORD)
      pa_prop_range((pa_prop_row)i, rg, sizeof rg);
    if (p->type == PA_PT_COLOUR)
      snprintf(dflt, sizeof dflt, "[%g, %g, %g, %g]",
               pa_prop_dflt((pa_prop_row)i, 0), pa_prop_dflt((pa_prop_row)i, 1),
               pa_prop_dflt((pa_prop_row)i, 2),
               pa_prop_dflt((pa_prop_row)i, 3));
    else if (p->type == PA_PT_WORD)
      snprintf(dflt, sizeof dflt, "`%s`",
               pa_prop_word_name((pa_prop_row)i, (int)p->dflt));
    else if (p->type == PA_PT_SIZE)
      snprintf(dflt, sizeof dflt, "[%g, %g]", p->dflt, p->dflt);
    else
      snprintf(dflt, sizeof dflt, "%g", p->dflt);
    if (!(p->kinds & PA_PK_RO))
      snprintf(set, sizeof set, "yes (%u)", p->wire);
    char file[48] = "—";
    if (p->path)
      snprintf(file, sizeof file, "`%s`", p->path);
    len += (size_t)snprintf(t + len, cap - len,
                            "| `%s` | %s | %s | %s | %s | %s | %s |\n", p->name,
                            (p->kinds & PA_PK_ROBOT) ? "robot" : "obstacle",
                            types[p->type], rg, dflt, file, set);
    assert_true(len < cap);
  }
  return t;
}

/* Regenerate with PA_PROPS_DOCS_WRITE=1 (scripts/flags-docs.sh does). */
static void props_doc_matches_schema(void **state) {
  (void)state;
  char path[1024];
  pa_test_src(path, sizeof path, "docs/protocol-notes.md");
  static char doc[1 << 17];
  long n = pa_test_read_file(path, doc, sizeof doc - 1);
  assert_true(n > 0);
  doc[n] = '\0';
  const char *b = strstr(doc, "<!-- props:begin (generated: test_netgw) -->\n");
  const char *e = strstr(doc, "<!-- props:end -->");
  assert_non_null(b);
  assert_non_null(e);
  b = strchr(b, '\n') + 1;
  char *want = props_table();
  bool same =
      (size_t)(e - b) == strlen(want) && memcmp(b, want, strlen(want)) == 0;
  const char *w = getenv("PA_PROPS_DOCS_WRITE");
  if (!same && w && !strcmp(w, "1")) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fwrite(doc, 1, (size_t)(b - doc), f);
    fputs(want, f);
    fputs(e, f);
    assert_int_equal(fclose(f), 0);
    fprintf(stderr, "props-docs: docs/protocol-notes.md regenerated\n");
  } else if (!same) {
    fprintf(stderr, "%s", want);
    fail_msg("docs/protocol-notes.md's property table differs from "
             "maps/pa_props.h; it should read as printed above: run "
             "scripts/flags-docs.sh to regenerate it");
  }
  free(want);
}

/* Strict payloads, walked over the action table itself: for every row, its
 * keys plus one unknown key is refused naming that key and the action; its
 * keys all with a wrong type (an object) are invalid_action_shape; a
 * command-only action in a sim_control envelope is unknown_action. */
static void json_strict_keys(void **state) {
  (void)state;
  fixture f;
  fixture_up_ms(&f, PA_CAM_CHUNK_DEFAULT, 300);
  world_up(&f);
  fake_sim fs = {.st = &f.st, .status = PA_OK, .last_op = UINT32_MAX};
  assert_int_equal(pthread_create(&fs.th, NULL, fake_sim_run, &fs), 0);
  int fd = pa_test_tcp_connect((uint16_t)pa_netgw_port(f.g));
  int rows = 0, typed = 0;
  for (const jaction *a; (a = pa_json_action_at(rows)); rows++) {
    const char *type = (a->types & JT_COMMAND) ? "command" : "sim_control";
    char data[512] = "{", line[1024], needle[160];
    size_t n = 1;
    for (const char *k = a->keys; *k;) {
      size_t m = strcspn(k, " ");
      n += (size_t)snprintf(data + n, sizeof data - n, "\"%.*s\": {}, ", (int)m,
                            k);
      k += m + (k[m] == ' ');
    }
    snprintf(data + n, sizeof data - n, "\"zz_unknown\": 1}");
    snprintf(line, sizeof line,
             "{\"type\":\"%s\",\"action\":\"%s\",\"data\":%s}", type, a->name,
             data);
    if (a->keys[0])
      snprintf(needle, sizeof needle, "data.zz_unknown is not a key of %s",
               a->name);
    else
      snprintf(needle, sizeof needle, "data.zz_unknown: %s takes no data",
               a->name);
    if (!(a->flags & JF_LENIENT)) /* those ignore it: json_visual tests */
      check_reply(fd, line, a->name, "invalid_message", needle);
    if (a->keys[0]) { /* the same keys, each of the wrong type */
      data[n >= 3 ? n - 2 : 1] = '}';
      data[n >= 3 ? n - 1 : 2] = 0;
      snprintf(line, sizeof line,
               "{\"type\":\"%s\",\"action\":\"%s\",\"data\":%s}", type, a->name,
               data);
      check_reply(fd, line, a->name, "invalid_action_shape", "data.");
      typed++;
    }
    if (!(a->types & JT_SIM_CONTROL)) {
      snprintf(line, sizeof line,
               "{\"type\":\"sim_control\",\"action\":\"%s\"}", a->name);
      check_reply(fd, line, a->name, "unknown_action",
                  "not a sim_control action");
    }
  }
  assert_true(rows >= 40 && typed >= 30);        /* the walk saw the table */
  assert_int_equal(pa_queue_count(f.st.cmd), 0); /* nothing reached pa-sim */
  close(fd);
  __atomic_store_n(&fs.stop, 1, __ATOMIC_RELEASE);
  pthread_join(fs.th, NULL);
  fixture_down(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(text_parse_errors),
      cmocka_unit_test(text_parse_values),
      cmocka_unit_test(frames_layout),
      cmocka_unit_test(camera_chunks),
      cmocka_unit_test(busy_and_late_reply),
      cmocka_unit_test(core_ask_table),
      cmocka_unit_test(drive_dropped_is_busy),
      cmocka_unit_test(text_drive_checked),
      cmocka_unit_test(reply_error_mapping),
      cmocka_unit_test(json_get_version),
      cmocka_unit_test(props_doc_matches_schema),
      cmocka_unit_test(batch_reply_bounded),
      cmocka_unit_test(scan_cache_follows_record_length),
      cmocka_unit_test(frontend_flags),
      cmocka_unit_test(json_actions),
      cmocka_unit_test(json_auth),
      cmocka_unit_test(json_strict_keys),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
