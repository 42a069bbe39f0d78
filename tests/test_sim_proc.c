/* test_sim_proc.c - the real pa-sim process against an instance created
 * here: readiness, map and world publication, pause/step/reset/speed and
 * teleport through the command and reply queues, bad flags, SIGTERM, and
 * crash-resume (SIGKILL mid-step, restart, continuity, busy answer). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pa_map.h"
#include "pa_shm.h"
#include "testutil.h"

typedef struct sim {
  char inst[PA_SHM_INSTANCE_MAX];
  pa_stack st;
  pid_t pid;
  uint64_t next_req;
  uint8_t *buf;
  uint32_t cap;
  char log[512];
} sim;

/* extra: space-separated flags (no quoting needed by these tests). */
static pid_t start_sim(sim *s, const char *extra) {
  char bin[512], flags[256];
  pa_test_bin(bin, sizeof bin, "pa-sim");
  const char *argv[24] = {bin, "--instance", s->inst, "--seed", "3"};
  int n = 5;
  snprintf(flags, sizeof flags, "%s", extra ? extra : "");
  for (char *save = NULL, *tok = strtok_r(flags, " ", &save); tok && n < 23;
       tok = strtok_r(NULL, " ", &save))
    argv[n++] = tok;
  argv[n] = NULL;
  snprintf(s->log, sizeof s->log, "%s/sim-%s.log", pa_test_tmpdir(), s->inst);
  return pa_test_spawn((char *const *)argv, s->log);
}

static bool sim_ready(void *arg) {
  sim *s = arg;
  const pa_health *h = &s->st.ctl->health[PA_PROC_SIM];
  return __atomic_load_n(&h->ready, __ATOMIC_ACQUIRE) == 1 &&
         h->pid == s->pid;
}

static void wait_ready(sim *s) {
  if (!pa_test_wait_for(sim_ready, s, 20000)) {
    pa_test_dump_file(s->log);
    fail_msg("pa-sim did not become ready");
  }
}

static void setup(sim *s, const char *tag, const char *extra) {
  memset(s, 0, sizeof *s);
  pa_test_instance(s->inst, sizeof s->inst, tag);
  pa_stack_def d = pa_stack_def_default();
  snprintf(d.instance, sizeof d.instance, "%s", s->inst);
  d.max_robots = 16;
  char err[256];
  if (pa_stack_create(&s->st, &d, err, sizeof err) != 0)
    fail_msg("create: %s", err);
  s->cap = pa_ring_max_record(s->st.state);
  s->buf = malloc(s->cap);
  assert_non_null(s->buf);
  s->pid = start_sim(s, extra);
  wait_ready(s);
}

static void teardown(sim *s) {
  if (s->pid > 0)
    pa_test_stop(s->pid, SIGKILL, 5000);
  pa_stack_detach(&s->st);
  pa_stack_unlink(s->inst);
  free(s->buf);
}

/* Latest state record: tick + robot 0's state. */
static pa_tick latest(sim *s, pa_robot_state *r0) {
  uint32_t len = 0;
  assert_int_equal(pa_ring_read_latest(s->st.state, s->buf, s->cap, &len, NULL),
                   0);
  pa_tick t;
  memcpy(&t, s->buf, sizeof t);
  assert_true(len == sizeof t + t.robot_count * sizeof(pa_robot_state));
  if (r0)
    memcpy(r0, s->buf + sizeof t, sizeof *r0);
  return t;
}

/* c (its op and arguments filled) pushed as this test's next request. */
static uint64_t push_cmd(sim *s, pa_cmd *c) {
  c->client_id = 77;
  c->request_id = ++s->next_req;
  assert_int_equal(pa_queue_push(s->st.cmd, c), 0);
  return c->request_id;
}

static uint64_t push(sim *s, uint32_t op, uint32_t u, uint32_t flags,
                     double a0, double a1, double a2) {
  pa_cmd c = {.op = op, .flags = flags};
  if (op == PA_OP_STEP) { /* u = ticks; a = v, vy, w of its drive */
    c.step.ticks = u;
    c.step.drive = (pa_cmd_drive){.v = a0, .vy = a1, .w = a2};
  } else if (op == PA_OP_TELEPORT) {
    c.pose = (pa_cmd_pose){a0, a1, a2};
  } else if (op == PA_OP_SPEED) {
    c.speed.factor = a0;
  }
  return push_cmd(s, &c);
}

static pa_reply wait_reply(sim *s, uint64_t req, int timeout_ms) {
  pa_reply r;
  int64_t end = pa_test_now_ms() + timeout_ms;
  while (pa_test_now_ms() < end) {
    if (pa_queue_peek(s->st.reply, &r) >= 0) {
      pa_queue_pop(s->st.reply);
      if (r.request_id == req)
        return r;
      continue; /* an earlier request's reply */
    }
    usleep(500);
  }
  fail_msg("no reply to request %llu", (unsigned long long)req);
  return r;
}

static pa_reply call(sim *s, uint32_t op, uint32_t u, uint32_t flags,
                     double a0, double a1, double a2) {
  return wait_reply(s, push(s, op, u, flags, a0, a1, a2), 20000);
}

static void test_ready_and_published(void **st) {
  (void)st;
  sim s;
  setup(&s, "pub", "--paused");
  pa_ctl *ctl = s.st.ctl;
  assert_true(ctl->control_hz == 200 && ctl->scan_hz == 10 && ctl->seed == 3);
  assert_true(ctl->robot_count >= 1 && s.st.robots[0].active);
  assert_string_equal(s.st.robots[0].name, "robot0");
  pa_shm_seg seg;
  const pa_map_block *mb;
  const int8_t *cells;
  char err[256];
  assert_int_equal(pa_stack_map_attach(&s.st, &seg, &mb, &cells, err, sizeof err), 0);
  assert_true(mb->width > 0 && mb->height > 0 && mb->resolution > 0);
  pa_shm_detach(&seg);
  pa_tick t = latest(&s, NULL);
  assert_true(t.flags & PA_TICK_PAUSED);
  assert_int_equal(t.robot_count, ctl->robot_count);
  /* SIGTERM: clean exit 0 */
  int status = pa_test_stop(s.pid, SIGTERM, 10000);
  s.pid = 0;
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_int_equal(ctl->health[PA_PROC_SIM].ready, 0);
  teardown(&s);
}

static void test_modes_through_queue(void **st) {
  (void)st;
  sim s;
  setup(&s, "modes", "--paused");
  pa_robot_state r0;
  pa_tick t0 = latest(&s, &r0);
  usleep(100000);
  assert_true(latest(&s, NULL).tick == t0.tick); /* paused: no ticks */
  /* step 50 */
  pa_reply r = call(&s, PA_OP_STEP, 50, 0, 0, 0, 0);
  assert_int_equal(r.status, PA_OK);
  assert_int_equal(r.tick, t0.tick + 50);
  assert_int_equal(latest(&s, NULL).tick, t0.tick + 50);
  /* step with a drive command: the robot moves forward */
  r = call(&s, PA_OP_STEP, 200, PA_CMDF_DRIVE, 0.5, 0, 0);
  assert_int_equal(r.status, PA_OK);
  pa_robot_state r1;
  pa_tick t1 = latest(&s, &r1);
  assert_int_equal(t1.tick, t0.tick + 250);
  double moved = hypot(r1.x - r0.x, r1.y - r0.y);
  assert_true(moved > 0.2);
  assert_true(r.pose.x == r1.x && r.pose.y == r1.y);
  /* lockstep: a paused sim does not wait a control period between STEPs
   * (1000 steps at 200 Hz would take 5 s; generous bound for loaded CI) */
  int64_t t_start = pa_test_now_ms();
  for (int i = 0; i < 1000; i++)
    assert_int_equal(call(&s, PA_OP_STEP, 1, 0, 0, 0, 0).status, PA_OK);
  assert_true(pa_test_now_ms() - t_start < 4500);
  pa_tick t2 = latest(&s, &r1);
  assert_int_equal(t2.tick, t1.tick + 1000);
  t1 = t2;
  /* a diff robot refuses sideways, an unknown robot is named */
  pa_cmd c;
  memset(&c, 0, sizeof c);
  c.request_id = ++s.next_req;
  c.op = PA_OP_SET_CMD;
  c.drive.vy = 0.3;
  assert_int_equal(pa_queue_push(s.st.cmd, &c), 0);
  r = wait_reply(&s, c.request_id, 20000);
  assert_string_equal(pa_status_code(r.status), "unsupported_control_scheme");
  c.request_id = ++s.next_req;
  c.robot = 9;
  c.drive.vy = 0;
  assert_int_equal(pa_queue_push(s.st.cmd, &c), 0);
  r = wait_reply(&s, c.request_id, 20000);
  assert_string_equal(pa_status_code(r.status), "unknown_robot");
  r = call(&s, 999, 0, 0, 0, 0, 0);
  assert_string_equal(pa_status_code(r.status), "unknown_action");
  /* teleport into a wall (far outside the map): blocked_pose, unchanged */
  r = call(&s, PA_OP_TELEPORT, 0, 0, -1000, -1000, 0);
  assert_string_equal(pa_status_code(r.status), "blocked_pose");
  pa_robot_state r2;
  latest(&s, &r2);
  assert_true(r2.x == r1.x && r2.y == r1.y);
  /* reset: back at the start pose, tick continues */
  r = call(&s, PA_OP_RESET, 0, 0, 0, 0, 0);
  assert_int_equal(r.status, PA_OK);
  pa_tick t3 = latest(&s, &r2);
  assert_true(r2.x == r0.x && r2.y == r0.y && r2.cmd_v == 0);
  assert_int_equal(t3.tick, t1.tick);
  /* as fast as possible, resumed: many ticks quickly; then pause again */
  assert_int_equal(call(&s, PA_OP_SPEED, 0, 0, 0, 0, 0).status, PA_OK);
  assert_int_equal(call(&s, PA_OP_RESUME, 0, 0, 0, 0, 0).status, PA_OK);
  usleep(300000);
  assert_int_equal(call(&s, PA_OP_PAUSE, 0, 0, 0, 0, 0).status, PA_OK);
  pa_tick t4 = latest(&s, NULL);
  assert_true(t4.tick > t3.tick + 200); /* > 0.67x real time even under ASan */
  assert_true(t4.flags & PA_TICK_PAUSED);
  assert_true(t4.speed == 0);
  assert_string_equal(pa_status_code(call(&s, PA_OP_SPEED, 0, 0, -1, 0, 0).status),
                      "invalid_action_shape");
  /* real time at speed 1: ticks advance, roughly at 200 Hz */
  assert_int_equal(call(&s, PA_OP_SPEED, 0, 0, 1, 0, 0).status, PA_OK);
  assert_int_equal(call(&s, PA_OP_RESUME, 0, 0, 0, 0, 0).status, PA_OK);
  usleep(500000);
  pa_tick t5 = latest(&s, NULL);
  assert_true(t5.tick > t4.tick + 20 && t5.tick < t4.tick + 400);
  /* health is published */
  const pa_health *h = &s.st.ctl->health[PA_PROC_SIM];
  assert_true(h->heartbeat_ns > 0 && h->loops > 0);
  teardown(&s);
}

/* Lockstep must not be paced by the control rate or the speed factor: at 1 Hz
 * a paced STEP would take 1 s, so 20 round trips + STEP 10 would take >= 30 s.
 * Also from the running state: PAUSE, then steps. */
static void test_lockstep_ignores_rate(void **st) {
  (void)st;
  sim s;
  setup(&s, "slow", "--paused --control_hz 1 --scan_hz 1");
  uint64_t tick0 = latest(&s, NULL).tick;
  int64_t t_start = pa_test_now_ms();
  for (int i = 0; i < 20; i++) {
    pa_reply r = call(&s, PA_OP_STEP, 1, PA_CMDF_DRIVE, 0.2, 0, 0.1);
    assert_int_equal(r.status, PA_OK);
    assert_int_equal(r.tick, tick0 + (uint64_t)i + 1);
  }
  pa_reply r = call(&s, PA_OP_STEP, 10, 0, 0, 0, 0);
  assert_int_equal(r.tick, tick0 + 30);
  int64_t took = pa_test_now_ms() - t_start;
  printf("21 lockstep round trips at 1 Hz control: %lld ms\n", (long long)took);
  assert_true(took < 10000);
  /* speed 0.001 (a period of 1000 s) changes nothing while paused */
  assert_int_equal(call(&s, PA_OP_SPEED, 0, 0, 0.001, 0, 0).status, PA_OK);
  t_start = pa_test_now_ms();
  for (int i = 0; i < 20; i++)
    assert_int_equal(call(&s, PA_OP_STEP, 1, 0, 0, 0, 0).status, PA_OK);
  assert_true(pa_test_now_ms() - t_start < 10000);
  assert_int_equal(latest(&s, NULL).tick, tick0 + 50);
  /* running at 1 Hz (speed 1): PAUSE is taken at the next tick start, then
   * steps are immediate again */
  assert_int_equal(call(&s, PA_OP_SPEED, 0, 0, 1, 0, 0).status, PA_OK);
  assert_int_equal(call(&s, PA_OP_RESUME, 0, 0, 0, 0, 0).status, PA_OK);
  assert_int_equal(call(&s, PA_OP_PAUSE, 0, 0, 0, 0, 0).status, PA_OK);
  uint64_t tick1 = latest(&s, NULL).tick;
  t_start = pa_test_now_ms();
  for (int i = 0; i < 20; i++)
    assert_int_equal(call(&s, PA_OP_STEP, 1, 0, 0, 0, 0).status, PA_OK);
  assert_true(pa_test_now_ms() - t_start < 10000);
  assert_int_equal(latest(&s, NULL).tick, tick1 + 20);
  teardown(&s);
}

static void test_bad_flags(void **st) {
  (void)st;
  char bin[512];
  pa_test_bin(bin, sizeof bin, "pa-sim");
  char inst[PA_SHM_INSTANCE_MAX];
  pa_test_instance(inst, sizeof inst, "nope");
  const char *cases[][5] = {
      {bin, "--instance", inst, NULL, NULL}, /* no such instance */
      {bin, "--control_hz", "-5", NULL, NULL},
      {bin, "--bogus", NULL, NULL, NULL},
      {bin, "--spin_us", "-2", NULL, NULL},
      {bin, "--spin_us", "2001", NULL, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char log[512];
    snprintf(log, sizeof log, "%s/bad%zu.log", pa_test_tmpdir(), i);
    pid_t pid = pa_test_spawn((char *const *)cases[i], log);
    int status = pa_test_stop(pid, 0, 20000);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), PA_EXIT_CONFIG);
  }
  /* an unreadable map on a real instance */
  sim s;
  memset(&s, 0, sizeof s);
  pa_test_instance(s.inst, sizeof s.inst, "badmap");
  pa_stack_def d = pa_stack_def_default();
  snprintf(d.instance, sizeof d.instance, "%s", s.inst);
  char err[256];
  assert_int_equal(pa_stack_create(&s.st, &d, err, sizeof err), 0);
  const char *argv[] = {bin, "--instance", s.inst, "--map_yaml",
                        "/nonexistent/map.yaml", NULL};
  char log[512];
  snprintf(log, sizeof log, "%s/badmap.log", pa_test_tmpdir());
  pid_t pid = pa_test_spawn((char *const *)argv, log);
  int status = pa_test_stop(pid, 0, 20000);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == PA_EXIT_CONFIG);
  pa_stack_detach(&s.st);
  pa_stack_unlink(s.inst);
}

static pa_reply call_named(sim *s, uint32_t op, const char *name) {
  pa_cmd c = {.op = op};
  snprintf(c.name, sizeof c.name, "%s", name);
  return wait_reply(s, push_cmd(s, &c), 20000);
}

/* A snapshot whose bytes changed (a torn write, another build) is refused
 * and changes nothing; an intact one loads. */
static void test_snapshot_damaged(void **st) {
  (void)st;
  sim s;
  setup(&s, "snap", "--paused");
  pa_reply r = call_named(&s, PA_OP_SAVE_SNAPSHOT, "a");
  assert_int_equal(r.status, PA_OK);
  assert_int_equal(r.snapshot.robots, 1);
  assert_int_equal(call(&s, PA_OP_TELEPORT, 0, 0, 0.5, 0.25, 1.0).status,
                   PA_OK);
  char path[256];
  snprintf(path, sizeof path, "/dev/shm/playarea.%s.snap-a", s.inst);
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  struct stat sb;
  assert_int_equal(fstat(fd, &sb), 0);
  unsigned char byte;
  off_t at = sb.st_size / 2;
  assert_int_equal(pread(fd, &byte, 1, at), 1);
  byte ^= 0x40;
  assert_int_equal(pwrite(fd, &byte, 1, at), 1);
  r = call_named(&s, PA_OP_LOAD_SNAPSHOT, "a");
  assert_int_equal(r.status, PA_ERR_INVALID_MESSAGE);
  assert_non_null(strstr(r.msg, "damaged"));
  pa_robot_state r0;
  latest(&s, &r0);
  assert_true(r0.x == 0.5 && r0.y == 0.25); /* not moved by the bad load */
  /* Truncated. */
  assert_int_equal(ftruncate(fd, 10), 0);
  close(fd);
  r = call_named(&s, PA_OP_LOAD_SNAPSHOT, "a");
  assert_int_equal(r.status, PA_ERR_INVALID_MESSAGE);
  /* Saved again: loads, and the robot is back where it was then. */
  assert_int_equal(call_named(&s, PA_OP_SAVE_SNAPSHOT, "a").status, PA_OK);
  assert_int_equal(call(&s, PA_OP_TELEPORT, 0, 0, -0.5, 0.0, 0.0).status,
                   PA_OK);
  assert_int_equal(call_named(&s, PA_OP_LOAD_SNAPSHOT, "a").status, PA_OK);
  latest(&s, &r0);
  assert_true(r0.x == 0.5 && r0.y == 0.25);
  teardown(&s);
  assert_int_equal(access(path, F_OK), -1); /* gone with the instance */
}

/* A flag given on the command line wins over the world file's robots even
 * when it is the built-in default value; flags not given leave the world's
 * values. */
static void test_flags_over_world(void **st) {
  (void)st;
  char world[512];
  snprintf(world, sizeof world, "%s/flags-world.yaml", pa_test_tmpdir());
  FILE *f = fopen(world, "w");
  assert_non_null(f);
  fprintf(f, "map: default\n"
             "robots:\n"
             "  - name: a\n"
             "    pose: [0, 0, 0]\n"
             "    laser: {beams: 180, range_min: 0.3, range_max: 5.0}\n"
             "    camera: {width: 320, height: 240, fov: 90}\n");
  fclose(f);
  for (int given = 0; given <= 1; given++) {
    sim s;
    char extra[700];
    snprintf(extra, sizeof extra,
             "--paused --world %s%s", world,
             given ? " --laser_beams 360 --laser_range_max 12 "
                     "--camera_width 640"
                   : "");
    setup(&s, given ? "fgiven" : "fworld", extra);
    const pa_robot_info *ri = &s.st.robots[0];
    assert_string_equal(ri->name, "a");
    assert_int_equal(ri->laser_beams, given ? 360 : 180);
    assert_true(fabsf(ri->laser_range_max - (given ? 12.0f : 5.0f)) < 1e-6f);
    assert_true(fabsf(ri->laser_range_min - 0.3f) < 1e-6f); /* not given */
    assert_int_equal(ri->cam_width, given ? 640 : 320);
    assert_int_equal(ri->cam_height, 240); /* not given */
    teardown(&s);
  }
  unlink(world);
}

/* SIGKILL during a long STEP; the new process resumes from the last record
 * and answers the in-flight STEP with busy instead of running it. */
static void test_crash_resume(void **st) {
  (void)st;
  sim s;
  setup(&s, "crash", "--paused");
  assert_int_equal(call(&s, PA_OP_STEP, 400, PA_CMDF_DRIVE, 0.4, 0, 0.3).status,
                   PA_OK);
  uint64_t req = push(&s, PA_OP_STEP, 1000000, 0, 0, 0, 0);
  /* let it run part of the million ticks, then kill it */
  int64_t end = pa_test_now_ms() + 20000;
  while (__atomic_load_n(&s.st.ctl->cmd_inflight, __ATOMIC_SEQ_CST) == 0 &&
         pa_test_now_ms() < end)
    usleep(1000);
  usleep(200000);
  assert_int_not_equal(s.st.ctl->cmd_inflight, 0);
  kill(s.pid, SIGKILL);
  pa_test_stop(s.pid, 0, 5000);
  pa_robot_state before;
  pa_tick tb = latest(&s, &before);
  assert_true(tb.tick > 400);
  assert_true(before.cmd_v == 0.4); /* driving when it died */

  s.pid = start_sim(&s, "--paused");
  wait_ready(&s);
  pa_reply r = wait_reply(&s, req, 20000);
  assert_string_equal(pa_status_code(r.status), "busy");
  assert_non_null(strstr(r.msg, "restarted"));
  assert_int_equal(s.st.ctl->cmd_inflight, 0);
  pa_robot_state after;
  pa_tick ta = latest(&s, &after);
  assert_int_equal(ta.tick, tb.tick); /* resumed, not re-run */
  assert_true(after.x == before.x && after.y == before.y &&
              after.theta == before.theta && after.v == before.v &&
              after.cmd_v == before.cmd_v && after.scan_seq == before.scan_seq);
  /* continues: tick +1 per step, scans carry on from the same seq */
  r = call(&s, PA_OP_STEP, 40, 0, 0, 0, 0);
  assert_int_equal(r.tick, tb.tick + 40);
  latest(&s, &after);
  assert_int_equal(after.scan_seq, before.scan_seq + 2);
  uint8_t scan[sizeof(pa_scan) + 4096 * 4];
  uint32_t len;
  assert_int_equal(pa_ring_read_latest(s.st.scan, scan, sizeof scan, &len, NULL), 0);
  pa_scan sh;
  memcpy(&sh, scan, sizeof sh);
  assert_int_equal(sh.seq, before.scan_seq + 2);
  assert_int_equal(sh.count, 360);
  assert_true(sh.tick > tb.tick);
  /* the held command survived the restart */
  assert_true(after.cmd_v == 0.4 && after.cmd_w == 0.3);
  teardown(&s);
}

/* Scan records (header with wall_ns zeroed, then ranges) from the ring's
 * cursor on, appended to buf/n (each SCAN_REC bytes). */
#define SCAN_REC (sizeof(pa_scan) + 360 * sizeof(float))
static size_t read_scans(sim *s, pa_ring_cursor *c, uint8_t **buf, size_t n) {
  uint8_t rec[sizeof(pa_scan) + 4096 * 4];
  uint32_t len;
  while (pa_ring_read_next(s->st.scan, c, rec, sizeof rec, &len, NULL) == 0) {
    assert_int_equal(len, SCAN_REC);
    pa_scan h;
    memcpy(&h, rec, sizeof h);
    h.wall_ns = 0;
    memcpy(rec, &h, sizeof h);
    *buf = realloc(*buf, (n + 1) * SCAN_REC);
    assert_non_null(*buf);
    memcpy(*buf + n * SCAN_REC, rec, SCAN_REC);
    n++;
  }
  return n;
}

static uint64_t scan_tick(const uint8_t *rec) {
  pa_scan h;
  memcpy(&h, rec, sizeof h);
  return h.tick;
}

/* With 2 threads, STEP and free-running cast each scan while the next
 * ticks run (health counter 4 counts them): one robot's in two parts, many
 * robots' a tick's scans whole while the robots move on. The records must
 * be those of a 1-thread process given the same commands, bit for bit:
 * ranges (walls, an obstacle, the other robots, noise), pose, tick and seq,
 * in the same order, none missing. A STEP of step_ticks (its records all
 * in the ring), then free-running. */
static void overlapped(uint32_t robots, uint32_t step_ticks) {
  char flags[2][128];
  for (int k = 0; k < 2; k++)
    snprintf(flags[k], sizeof flags[k],
             "--paused --threads %d --laser_noise 0.02 --robots %u", 2 - k,
             robots);
  uint8_t *got[2] = {NULL, NULL};
  size_t n[2] = {0, 0}, mid[2] = {0, 0};
  uint64_t ticks = 0, late[2] = {0, 0};
  for (int k = 0; k < 2; k++) {
    sim s;
    setup(&s, k ? "ovl1" : "ovl2", flags[k]);
    pa_ring_cursor c = {1, 0};
    pa_robot_state r0;
    pa_tick t0 = latest(&s, &r0);
    pa_cmd o;
    memset(&o, 0, sizeof o);
    o.request_id = ++s.next_req;
    o.op = PA_OP_SPAWN_OBSTACLE;
    o.spawn_obstacle.shape = PA_SHAPE_CIRCLE;
    o.spawn_obstacle.x = r0.x + 0.8;
    o.spawn_obstacle.y = r0.y;
    o.spawn_obstacle.radius = 0.15;
    snprintf(o.name, sizeof o.name, "post");
    assert_int_equal(pa_queue_push(s.st.cmd, &o), 0);
    assert_int_equal(wait_reply(&s, o.request_id, 20000).status, PA_OK);
    for (uint32_t i = 1; i < robots; i++) { /* the others on their way */
      pa_cmd d = {.op = PA_OP_SET_CMD, .robot = i};
      d.drive = (pa_cmd_drive){.v = 0.2 + 0.05 * i, .w = 0.3 - 0.1 * i};
      assert_int_equal(wait_reply(&s, push_cmd(&s, &d), 20000).status, PA_OK);
    }
    assert_int_equal(
        call(&s, PA_OP_STEP, step_ticks, PA_CMDF_DRIVE, 0.3, 0, 0.4).status,
        PA_OK);
    mid[k] = n[k] = read_scans(&s, &c, &got[k], 0);
    if (k == 0) { /* free-running, then paused at some tick */
      assert_int_equal(call(&s, PA_OP_SPEED, 0, 0, 0, 0, 0).status, PA_OK);
      assert_int_equal(call(&s, PA_OP_RESUME, 0, 0, 0, 0, 0).status, PA_OK);
      usleep(50000);
      assert_int_equal(call(&s, PA_OP_PAUSE, 0, 0, 0, 0, 0).status, PA_OK);
      ticks = latest(&s, NULL).tick - t0.tick - step_ticks;
      assert_true(ticks > 100);
    } else { /* the same ticks in lockstep */
      assert_int_equal(call(&s, PA_OP_STEP, (uint32_t)ticks, 0, 0, 0, 0).status,
                       PA_OK);
    }
    n[k] = read_scans(&s, &c, &got[k], n[k]);
    usleep(150000); /* the health block is refreshed every 100 ms */
    assert_int_equal(call(&s, PA_OP_SYNC, 0, 0, 0, 0, 0).status, PA_OK);
    late[k] = s.st.ctl->health[PA_PROC_SIM].counters[PA_SIM_CTR_LATE_SCANS];
    teardown(&s);
  }
  assert_true(late[0] > 0);
  assert_int_equal(late[1], 0);
  /* The STEP part whole; of the free-running part, what both rings still
   * hold (the ring keeps the newest records). */
  size_t whole = step_ticks / 20 * robots;
  assert_int_equal(mid[0], whole);
  assert_int_equal(mid[1], whole);
  assert_memory_equal(got[0], got[1], whole * SCAN_REC);
  size_t compared = 0;
  if (n[0] > mid[0] && n[1] > mid[1]) /* what a failure below compares */
    print_message("free-running part: 2 threads ticks %llu..%llu (%zu "
                  "records), 1 thread %llu..%llu (%zu), %llu ticks\n",
                  (unsigned long long)scan_tick(got[0] + mid[0] * SCAN_REC),
                  (unsigned long long)scan_tick(got[0] + (n[0] - 1) * SCAN_REC),
                  n[0] - mid[0],
                  (unsigned long long)scan_tick(got[1] + mid[1] * SCAN_REC),
                  (unsigned long long)scan_tick(got[1] + (n[1] - 1) * SCAN_REC),
                  n[1] - mid[1], (unsigned long long)ticks);
  for (size_t i = mid[0], j = mid[1]; i < n[0]; i++) {
    while (j < n[1] && scan_tick(got[1] + j * SCAN_REC) <
                           scan_tick(got[0] + i * SCAN_REC))
      j++;
    if (j == n[1])
      break;
    assert_memory_equal(got[0] + i * SCAN_REC, got[1] + j * SCAN_REC,
                        SCAN_REC);
    compared++;
  }
  assert_true(compared >= 5);
  assert_true(compared + 1 >= (n[0] - mid[0] < n[1] - mid[1] ? n[0] - mid[0]
                                                             : n[1] - mid[1]));
  free(got[0]);
  free(got[1]);
}

/* Commands that publish the state again while paused (teleport, speed,
 * pause) write no scan record again: each scan goes out once, at its tick,
 * with the pose it was cast from. 16 robots: robot 15 scans at tick 5. */
static void test_command_no_scan_again(void **st) {
  (void)st;
  sim s;
  setup(&s, "norep", "--paused --robots 16");
  pa_ring_cursor c = {1, 0};
  uint8_t *got = NULL;
  pa_tick t0 = latest(&s, NULL);
  assert_int_equal(call(&s, PA_OP_STEP, 5, 0, 0, 0, 0).status, PA_OK);
  size_t n = read_scans(&s, &c, &got, 0);
  assert_true(n >= 1);
  pa_scan last;
  memcpy(&last, got + (n - 1) * SCAN_REC, sizeof last);
  assert_int_equal(last.tick, t0.tick + 5); /* the STEP's last tick */
  assert_int_equal(call(&s, PA_OP_SPEED, 0, 0, 2.0, 0, 0).status, PA_OK);
  assert_int_equal(call(&s, PA_OP_PAUSE, 0, 0, 0, 0, 0).status, PA_OK);
  pa_cmd t = {.op = PA_OP_TELEPORT, .robot = last.robot}; /* the last */
  t.pose = (pa_cmd_pose){last.x + 0.05, last.y, last.theta + 0.3};
  assert_int_equal(wait_reply(&s, push_cmd(&s, &t), 20000).status, PA_OK);
  assert_int_equal(call(&s, PA_OP_SYNC, 0, 0, 0, 0, 0).status, PA_OK);
  assert_int_equal(read_scans(&s, &c, &got, n), n);
  /* the next tick's scans come as before, seq on from the last */
  assert_int_equal(call(&s, PA_OP_STEP, 20, 0, 0, 0, 0).status, PA_OK);
  size_t m = read_scans(&s, &c, &got, n);
  assert_int_equal(m, n + 16);
  for (size_t i = n; i < m; i++) {
    pa_scan h;
    memcpy(&h, got + i * SCAN_REC, sizeof h);
    if (h.robot == last.robot)
      assert_int_equal(h.seq, last.seq + 1);
  }
  free(got);
  teardown(&s);
}

static void test_overlapped_scans(void **st) {
  (void)st;
  overlapped(1, 400);
}

static void test_overlapped_scans_robots(void **st) {
  (void)st;
  overlapped(6, 200);
}

/* A map generated at run time survives a SIGKILL of pa-sim: the restarted
 * one resumes on it (not on its flags' map), with the robot where it was. */
/* A map op with a path, pushed; its request id. */
static uint64_t push_path(sim *s, uint32_t op, const char *path) {
  pa_cmd c = {.op = op};
  snprintf(c.path, sizeof c.path, "%s", path);
  return push_cmd(s, &c);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

/* The op on path is refused within 1 s with msg containing want, the sim
 * still ticking; never quoting "root". */
static void expect_refused(sim *s, uint32_t op, const char *path,
                           const char *want) {
  uint64_t t0 = latest(s, NULL).tick;
  int64_t ms = pa_test_now_ms();
  pa_reply r = wait_reply(s, push_path(s, op, path), 5000);
  ms = pa_test_now_ms() - ms;
  if (r.status != PA_ERR_INVALID_MESSAGE || !strstr(r.msg, want))
    fail_msg("%s: status %s, '%s' (want '%s')", path, pa_status_code(r.status),
             r.msg, want);
  assert_null(strstr(r.msg, "root"));
  assert_true(ms < 1000);
  usleep(50000);
  assert_true(latest(s, NULL).tick > t0); /* it kept ticking */
}

/* set_map and set_scenario at run time: files only inside --data_dir,
 * refused by name without quoting them; a FIFO, a device, a huge header, a
 * deep YAML refused at once while the sim keeps ticking (a FIFO used to
 * block pa-sim for good); a big map loads off the tick. */
static void test_run_time_loads(void **st) {
  (void)st;
  char dir[256], flags[512], p[512], secret[512];
  snprintf(dir, sizeof dir, "%s/data", pa_test_tmpdir());
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(secret, sizeof secret, "%s/secret.yaml", pa_test_tmpdir());
  write_text(secret, "root:*:20228:0:99999:7:::\n");
  snprintf(flags, sizeof flags, "--data_dir %s", dir);
  sim s;
  setup(&s, "load", flags);
  expect_refused(&s, PA_OP_SET_MAP, "/etc/shadow",
                 "forbidden path (outside the data directory)");
  expect_refused(&s, PA_OP_SET_MAP, secret, "forbidden path");
  expect_refused(&s, PA_OP_SET_SCENARIO, secret, "forbidden path");
  snprintf(p, sizeof p, "%s/../secret.yaml", dir);
  expect_refused(&s, PA_OP_SET_MAP, p, "forbidden path ('..')");
  snprintf(p, sizeof p, "%s/link.yaml", dir);
  assert_int_equal(symlink(secret, p), 0);
  expect_refused(&s, PA_OP_SET_SCENARIO, p, "forbidden path");
  snprintf(p, sizeof p, "%s/fifo.yaml", dir);
  assert_int_equal(mkfifo(p, 0600), 0);
  expect_refused(&s, PA_OP_SET_MAP, p, "fifo.yaml: not a regular file");
  /* A device node (root only: /dev/zero's numbers; reading it never ends) */
  snprintf(p, sizeof p, "%s/dev.yaml", dir);
  if (mknod(p, S_IFCHR | 0600, makedev(1, 5)) == 0)
    expect_refused(&s, PA_OP_SET_SCENARIO, p, "dev.yaml: not a regular file");
  /* 40 k levels of nesting: 13.6 s in libyaml before. */
  snprintf(p, sizeof p, "%s/deep.world.yaml", dir);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs("map: ", f);
  for (int i = 0; i < 40000; i++)
    fputc('[', f);
  assert_int_equal(fclose(f), 0);
  expect_refused(&s, PA_OP_SET_SCENARIO, p, "nested deeper than 64");
  /* The 109-byte Softimage PIC that crashed pa-sim (five set_maps took the
   * stack down): refused by name five times, the same pa-sim still up. */
  unsigned char pic[109];
  memset(pic, 0xff, sizeof pic);
  pic[0] = 0x53, pic[1] = 0x80, pic[2] = 0xf6, pic[3] = 0x34;
  memcpy(pic + 88, "PICT", 4);
  snprintf(p, sizeof p, "%s/evil.pic", dir);
  f = fopen(p, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(pic, 1, sizeof pic, f), sizeof pic);
  assert_int_equal(fclose(f), 0);
  snprintf(p, sizeof p, "%s/evil.yaml", dir);
  write_text(p, "image: evil.pic\nresolution: 0.05\norigin: [0, 0, 0]\n"
                "negate: 0\noccupied_thresh: 0.65\nfree_thresh: 0.196\n");
  for (int i = 0; i < 5; i++)
    expect_refused(&s, PA_OP_SET_MAP, p,
                   "evil.pic: Softimage PIC image is not supported");
  assert_true(pa_test_alive(s.pid));
  /* Inside, an error names the place, not the text. */
  snprintf(p, sizeof p, "%s/w.yaml", dir);
  write_text(p, "map: default\nroot_password: hunter2\n");
  expect_refused(&s, PA_OP_SET_SCENARIO, p, "w.yaml:2:1: world: unknown key");
  assert_int_equal(s.st.ctl->map_gen > 0, 1);
  uint32_t gen0 = s.st.ctl->map_gen;
  /* A 4096 x 4096 map loads off the tick: ticks go on meanwhile. */
  size_t side = 4096;
  unsigned char *px = malloc(side * side);
  assert_non_null(px);
  for (size_t y = 0; y < side; y++)
    for (size_t x = 0; x < side; x++)
      px[y * side + x] = (x < 4 || y < 4 || x >= side - 4 || y >= side - 4)
                             ? 0
                             : (unsigned char)(254 - ((x * 7 + y) % 3));
  pa_grid g = {.width = (uint32_t)side,
               .height = (uint32_t)side,
               .resolution = 0.01,
               .origin_x = -20.48,
               .origin_y = -20.48,
               .occupied_min = PA_CELL_OCCUPIED};
  g.cells = calloc(side * side, 1);
  assert_non_null(g.cells);
  for (size_t i = 0; i < side * side; i++)
    g.cells[i] = px[i] == 0 ? PA_CELL_OCCUPIED : PA_CELL_FREE;
  free(px);
  char yml[512], png[512], err[256];
  snprintf(yml, sizeof yml, "%s/big.yaml", dir);
  snprintf(png, sizeof png, "%s/big.png", dir);
  assert_int_equal(pa_map_save(&g, yml, png, err, sizeof err), 0);
  pa_grid_free(&g);
  uint64_t t0 = latest(&s, NULL).tick;
  int64_t ms = pa_test_now_ms();
  uint64_t req =
      push_path(&s, PA_OP_SET_MAP, "big.yaml"); /* relative: to the dir */
  pa_reply r = wait_reply(&s, req, 30000);
  ms = pa_test_now_ms() - ms;
  uint64_t t1 = r.tick;
  printf("4096 x 4096 set_map: %lld ms, %llu ticks meanwhile\n", (long long)ms,
         (unsigned long long)(t1 - t0));
  if (r.status != PA_OK)
    fail_msg("big map: %s", r.msg);
  assert_true(r.map.width == 4096 && r.map.height == 4096);
  assert_true(s.st.ctl->map_gen > gen0);
  /* 200 Hz: a load of ms milliseconds on the tick would leave none. */
  assert_true(t1 - t0 >= 20);
  teardown(&s);
}

/* Wall gaps between consecutive state records, kept by tick for the last
 * GAP_KEEP records read, and the longest over all read (*all). */
#define GAP_KEEP 512
typedef struct gaps {
  pa_ring_cursor c;
  int64_t last_wall, all;
  uint64_t n, tick[GAP_KEEP];
  int64_t gap[GAP_KEEP];
} gaps;

static void gaps_read(sim *s, gaps *g) {
  uint32_t len = 0;
  while (pa_ring_read_next(s->st.state, &g->c, s->buf, s->cap, &len, NULL) ==
         0) {
    pa_tick t;
    memcpy(&t, s->buf, sizeof t);
    int64_t gap = g->last_wall ? t.wall_ns - g->last_wall : 0;
    g->last_wall = t.wall_ns;
    if (gap > g->all)
      g->all = gap;
    g->tick[g->n % GAP_KEEP] = t.tick;
    g->gap[g->n % GAP_KEEP] = gap;
    g->n++;
  }
}

/* The longest gap before a record of a tick in [lo, hi]. */
static int64_t gaps_near(const gaps *g, uint64_t lo, uint64_t hi) {
  int64_t m = 0;
  for (uint64_t i = g->n > GAP_KEEP ? g->n - GAP_KEEP : 0; i < g->n; i++)
    if (g->tick[i % GAP_KEEP] >= lo && g->tick[i % GAP_KEEP] <= hi &&
        g->gap[i % GAP_KEEP] > m)
      m = g->gap[i % GAP_KEEP];
  return m;
}

/* An 8192 x 8192 generate_map (64 MB of cells, ~700 MB of fields while
 * built) is swapped in between two ticks without holding the loop: the
 * segment is made and filled on the loader thread, the old model freed
 * off it. Twice, so the second also drops a big model. The old swap held
 * the loop 130-230 ms on a loaded 2-core machine. */
static void test_big_map_swap(void **st) {
  (void)st;
  sim s;
  setup(&s, "bigmap", NULL);
  const pa_health *h = &s.st.ctl->health[PA_PROC_SIM];
  int fast = 0;
  for (int round = 0; round < 3 && fast < 2; round++) {
    uint32_t gen0 = __atomic_load_n(&s.st.ctl->map_gen, __ATOMIC_ACQUIRE);
    static gaps g;
    memset(&g, 0, sizeof g);
    g.c = pa_ring_cursor_now(s.st.state);
    int64_t max0 = h->period_max_ns;
    pa_cmd cmd = {.op = PA_OP_GENERATE_MAP};
    cmd.gen_map.width = 409.6;
    cmd.gen_map.height = 409.6;
    cmd.gen_map.resolution = 0.05;
    cmd.gen_map.seed = round + 1;
    cmd.gen_map.rooms_x = 3; /* pa_mapgen_default's, as JSON gives */
    cmd.gen_map.rooms_y = 2;
    cmd.gen_map.clutter = 2;
    uint64_t req = push_cmd(&s, &cmd);
    pa_reply r;
    memset(&r, 0, sizeof r);
    int64_t end = pa_test_now_ms() + 120000;
    bool got = false;
    while (!got && pa_test_now_ms() < end) {
      gaps_read(&s, &g);
      while (!got && pa_queue_peek(s.st.reply, &r) >= 0) {
        pa_queue_pop(s.st.reply);
        got = r.request_id == req;
      }
      usleep(1000);
    }
    if (!got)
      fail_msg("no reply to generate_map 8192 x 8192");
    if (r.status != PA_OK)
      fail_msg("generate_map: %s", r.msg);
    assert_true(r.map.width == 8192 && r.map.height == 8192);
    /* the ticks around the swap, and 300 ms after */
    int64_t t_end = pa_test_now_ms() + 300;
    while (pa_test_now_ms() < t_end) {
      gaps_read(&s, &g);
      usleep(1000);
    }
    int64_t near = gaps_near(&g, r.tick - 2, r.tick + 3), all = g.all;
    printf("8192 x 8192 generate_map %d: loop gap at the swap %.1f ms, "
           "longest %.1f ms; health period_max %.1f -> %.1f ms\n",
           round, (double)near / 1e6, (double)all / 1e6, (double)max0 / 1e6,
           (double)h->period_max_ns / 1e6);
    /* published: a new generation whose cells are readable */
    assert_true(__atomic_load_n(&s.st.ctl->map_gen, __ATOMIC_ACQUIRE) > gen0);
    pa_shm_seg seg;
    const pa_map_block *mb;
    const int8_t *cells;
    char err[256];
    if (pa_stack_map_attach(&s.st, &seg, &mb, &cells, err, sizeof err) != 0)
      fail_msg("map attach: %s", err);
    assert_int_equal(mb->gen, s.st.ctl->map_gen);
    assert_true(mb->width == 8192 && mb->height == 8192);
    size_t occupied = 0;
    for (size_t i = 0; i < (size_t)8192 * 8192; i += 4099)
      occupied += cells[i] >= PA_CELL_OCCUPIED;
    assert_true(occupied > 0);
    pa_shm_detach(&seg);
    /* A stall elsewhere on a loaded machine may land on the swap's ticks
     * once; the old swap held every one. */
    if (near < 50 * 1000000LL)
      fast++;
  }
  assert_int_equal(fast, 2);
  assert_true(pa_test_alive(s.pid));
  teardown(&s);
}

static void test_map_survives_restart(void **st) {
  (void)st;
  sim s;
  setup(&s, "mapre", "--paused");
  /* free on the default map (below: a wall on the generated one) */
  assert_int_equal(call(&s, PA_OP_TELEPORT, 0, 0, 2.95, 0, 0).status, PA_OK);
  assert_int_equal(call(&s, PA_OP_TELEPORT, 0, 0, 0, 0, 0).status, PA_OK);
  pa_cmd c;
  memset(&c, 0, sizeof c);
  c.request_id = ++s.next_req;
  c.op = PA_OP_GENERATE_MAP;
  c.gen_map = (pa_cmd_gen_map){.width = 12,
                               .height = 8,
                               .resolution = 0.05,
                               .seed = 5,
                               .rooms_x = 2,
                               .rooms_y = 1,
                               .clutter = 1};
  assert_int_equal(pa_queue_push(s.st.cmd, &c), 0);
  pa_reply r = wait_reply(&s, c.request_id, 20000);
  assert_int_equal(r.status, PA_OK);
  assert_true(r.map.width == 240 && r.map.height == 160 &&
              r.map.resolution == 0.05);
  assert_int_equal(call(&s, PA_OP_STEP, 100, PA_CMDF_DRIVE, 0.3, 0, 0.2).status,
                   PA_OK);
  pa_robot_state before;
  pa_tick tb = latest(&s, &before);
  uint32_t gen0 = s.st.ctl->map_gen;
  kill(s.pid, SIGKILL);
  pa_test_stop(s.pid, 0, 5000);
  s.pid = start_sim(&s, "--paused");
  wait_ready(&s);
  assert_true(s.st.ctl->map_gen > gen0); /* republished by the new one */
  pa_shm_seg seg;
  const pa_map_block *mb;
  const int8_t *cells;
  char err[256];
  assert_int_equal(pa_stack_map_attach(&s.st, &seg, &mb, &cells, err, sizeof err),
                   0);
  assert_true(mb->width == 240 && mb->height == 160 && mb->resolution == 0.05);
  assert_int_equal(mb->occupied_min, 100);
  pa_shm_detach(&seg);
  pa_robot_state after;
  pa_tick ta = latest(&s, &after);
  assert_int_equal(ta.tick, tb.tick);
  assert_true(after.x == before.x && after.y == before.y);
  /* and it runs on that map: its east wall (x = 3: the origin is the
   * centre of the second of two rooms across 12 m) refuses a teleport that
   * the default map allows */
  assert_string_equal(
      pa_status_code(call(&s, PA_OP_TELEPORT, 0, 0, 2.95, 0, 0).status),
      "blocked_pose");
  assert_int_equal(call(&s, PA_OP_TELEPORT, 0, 0, 1.5, 0, 0).status, PA_OK);
  assert_int_equal(call(&s, PA_OP_STEP, 20, 0, 0, 0, 0).status, PA_OK);
  teardown(&s);
}

static int count_lines(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  int n = 0, ch;
  while ((ch = fgetc(f)) != EOF)
    n += ch == '\n';
  fclose(f);
  return n;
}

static void rm_dataset(const char *dir) {
  static const char *const files[] = {
      "map.yaml",   "map.png",    "robots.csv", "poses.csv",   "scans.csv",
      "agents.csv", "points.csv", "points.ply", "dataset.json"};
  char p[700];
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(p, sizeof p, "%s/run1/%s", dir, files[i]);
    unlink(p);
  }
  snprintf(p, sizeof p, "%s/run1", dir);
  rmdir(p);
  rmdir(dir);
}

/* export_dataset: the next N ticks (poses of every tick, every scan, with
 * overlapped ones) with the map and robots, in --dataset_dir/<name>/; one at
 * a time, names checked, an existing one not overwritten. */
static void test_export_dataset(void **st) {
  (void)st;
  sim s;
  memset(&s, 0, sizeof s);
  char dir[600], flags[700];
  snprintf(dir, sizeof dir, "%s/ds-%d", pa_test_tmpdir(), (int)getpid());
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(flags, sizeof flags, "--paused --threads 2 --dataset_dir %s", dir);
  setup(&s, "dset", flags);
  pa_tick t0 = latest(&s, NULL);
  pa_cmd c;
  memset(&c, 0, sizeof c);
  c.request_id = ++s.next_req;
  c.op = PA_OP_EXPORT_DATASET;
  c.dataset.ticks = 45;
  snprintf(c.name, sizeof c.name, "run1");
  assert_int_equal(pa_queue_push(s.st.cmd, &c), 0);
  pa_reply r = wait_reply(&s, c.request_id, 20000);
  assert_int_equal(r.status, PA_OK);
  assert_true(r.dataset.first_tick == t0.tick + 1 &&
              r.dataset.last_tick == t0.tick + 45);
  /* a second one while recording: busy; a bad name: refused */
  c.request_id = ++s.next_req;
  snprintf(c.name, sizeof c.name, "run2");
  assert_int_equal(pa_queue_push(s.st.cmd, &c), 0);
  assert_string_equal(pa_status_code(wait_reply(&s, c.request_id, 20000).status),
                      "busy");
  assert_int_equal(call(&s, PA_OP_STEP, 60, PA_CMDF_DRIVE, 0.3, 0, 0.3).status,
                   PA_OK);
  char p[700];
  /* the export thread writes the rest: dataset.json last */
  snprintf(p, sizeof p, "%s/run1/dataset.json", dir);
  int64_t until = pa_test_now_ms() + 20000;
  while (access(p, F_OK) != 0 && pa_test_now_ms() < until)
    usleep(5000);
  snprintf(p, sizeof p, "%s/run1/poses.csv", dir);
  assert_int_equal(count_lines(p), 1 + 45);
  int scans = 0;
  for (uint64_t k = t0.tick + 1; k <= t0.tick + 45; k++)
    scans += k % 20 == 0; /* robot 0 scans when tick % 20 == 0 */
  snprintf(p, sizeof p, "%s/run1/scans.csv", dir);
  assert_int_equal(count_lines(p), 1 + scans);
  snprintf(p, sizeof p, "%s/run1/robots.csv", dir);
  assert_int_equal(count_lines(p), 2);
  snprintf(p, sizeof p, "%s/run1/map.yaml", dir);
  pa_grid g;
  char err[256];
  assert_int_equal(pa_map_load_yaml(p, &g, err, sizeof err), 0);
  pa_shm_seg seg;
  const pa_map_block *mb;
  const int8_t *cells;
  assert_int_equal(pa_stack_map_attach(&s.st, &seg, &mb, &cells, err, sizeof err),
                   0);
  assert_true(g.width == mb->width && g.height == mb->height &&
              !memcmp(g.cells, cells, (size_t)g.width * g.height));
  pa_shm_detach(&seg);
  pa_grid_free(&g);
  /* done: the same name again is refused (not overwritten), others go */
  c.request_id = ++s.next_req;
  snprintf(c.name, sizeof c.name, "run1");
  assert_int_equal(pa_queue_push(s.st.cmd, &c), 0);
  r = wait_reply(&s, c.request_id, 20000);
  assert_string_equal(pa_status_code(r.status), "invalid_message");
  assert_non_null(strstr(r.msg, "exists"));
  c.request_id = ++s.next_req;
  snprintf(c.name, sizeof c.name, "../up");
  assert_int_equal(pa_queue_push(s.st.cmd, &c), 0);
  assert_string_equal(pa_status_code(wait_reply(&s, c.request_id, 20000).status),
                      "invalid_message");
  teardown(&s);
  rm_dataset(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ready_and_published),
      cmocka_unit_test(test_modes_through_queue),
      cmocka_unit_test(test_lockstep_ignores_rate),
      cmocka_unit_test(test_bad_flags),
      cmocka_unit_test(test_flags_over_world),
      cmocka_unit_test(test_snapshot_damaged),
      cmocka_unit_test(test_crash_resume),
      cmocka_unit_test(test_command_no_scan_again),
      cmocka_unit_test(test_overlapped_scans),
      cmocka_unit_test(test_overlapped_scans_robots),
      cmocka_unit_test(test_map_survives_restart),
      cmocka_unit_test(test_run_time_loads),
      cmocka_unit_test(test_big_map_swap),
      cmocka_unit_test(test_export_dataset),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
