/* test_render_proc.c - the pa-render process against a real instance: the
 * test plays pa-sim (creates the stack, publishes the default map, writes
 * the world snapshot and ticks) and netgw (camera demand + render_wake), and
 * reads frames from the camera ring. Also: config errors, a missing EGL
 * vendor, and the viewer under xvfb-run. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <stb_image.h>

#include "pa_map.h"
#include "pa_proc.h"
#include "pa_shm.h"
#include "testutil.h"

#define CW 320
#define CH 240

typedef struct world {
  char instance[PA_SHM_INSTANCE_MAX];
  pa_stack st;
  uint64_t tick;
  uint8_t *frame;     /* camera ring record buffer */
  uint32_t frame_cap;
} world;

static void set_robot(pa_robot_info *r, const char *name, uint8_t cr,
                      uint8_t cg, uint8_t cb) {
  memset(r, 0, sizeof *r);
  snprintf(r->name, sizeof r->name, "%s", name);
  r->active = 1;
  r->gen = 1;
  r->radius = 0.18f;
  r->height = 0.25f;
  r->head_height = 0.35f;
  r->colour[0] = cr, r->colour[1] = cg, r->colour[2] = cb, r->colour[3] = 255;
  r->cam_width = CW, r->cam_height = CH;
  r->cam_fov = (float)(60 * M_PI / 180);
}

/* Writes one tick: robot 0 at (x, y, theta, head), robot 1 fixed. */
static void write_tick(world *w, double x, double y, double theta,
                       double head) {
  uint8_t buf[sizeof(pa_tick) + 2 * sizeof(pa_robot_state)];
  memset(buf, 0, sizeof buf);
  pa_tick *t = (pa_tick *)buf;
  t->tick = ++w->tick;
  t->sim_time = (double)t->tick / 200;
  t->wall_ns = pa_now_ns();
  t->robot_count = 2;
  t->speed = 1;
  t->world_gen = w->st.ctl->world_gen;
  pa_robot_state *rs = (pa_robot_state *)(t + 1);
  rs[0].id = 0, rs[0].gen = 1, rs[0].flags = PA_RS_ACTIVE;
  rs[0].x = x, rs[0].y = y, rs[0].theta = theta, rs[0].head = head;
  rs[1].id = 1, rs[1].gen = 1, rs[1].flags = PA_RS_ACTIVE;
  rs[1].x = 1.5, rs[1].y = 0.8, rs[1].theta = 2.0;
  assert_true(pa_ring_write(w->st.state, buf, sizeof buf) > 0);
}

/* An instance with the default map, two robots and one tick. */
static void world_create(world *w) {
  char err[256];
  memset(w, 0, sizeof *w);
  pa_stack_def d = pa_test_stack_def(w->instance, sizeof w->instance, "render");
  d.max_robots = 4, d.max_obstacles = 16, d.max_beams = 720;
  d.max_cam_width = 640, d.max_cam_height = 480;
  d.camera_slots = 4, d.state_slots = 16, d.cmd_capacity = 16;
  if (pa_stack_create(&w->st, &d, err, sizeof err) != 0)
    fail_msg("stack: %s", err);
  pa_grid g;
  if (pa_map_load_default(&g, err, sizeof err) != 0)
    fail_msg("map: %s", err);
  if (pa_stack_map_publish(&w->st, g.width, g.height, g.resolution,
                           g.origin_x, g.origin_y, g.origin_yaw, g.cells,
                           g.occupied_min, err, sizeof err) != 0)
    fail_msg("map publish: %s", err);
  pa_grid_free(&g);
  pa_stack_world_begin(&w->st);
  set_robot(&w->st.robots[0], "robot0", 40, 90, 220);
  set_robot(&w->st.robots[1], "robot1", 220, 30, 30);
  w->st.ctl->robot_count = 2;
  w->st.ctl->obstacle_count = 0;
  pa_stack_world_end(&w->st);
  write_tick(w, -1.0, 0.0, 0.0, 0);
  /* static: a failed assertion must not turn into a leak report too */
  static uint8_t frame_buf[sizeof(pa_frame) + 640 * 480 * 3 + 64];
  w->frame_cap = pa_ring_max_record(w->st.camera);
  assert_true(w->frame_cap <= sizeof frame_buf);
  w->frame = frame_buf;
}

static void world_free(world *w) {
  pa_stack_detach(&w->st);
  pa_stack_unlink(w->instance);
}

/* pa-render with the flag a and its value b (NULL: none) after the usual
 * ones. */
static pid_t spawn_render_with(world *w, const char *log, const char *a,
                               const char *b) {
  char bin[512];
  pa_test_bin(bin, sizeof bin, "pa-render");
  char *argv[] = {bin,  "--instance", w->instance, "--camera_hz",
                  "20", (char *)a,    (char *)b,   NULL};
  return pa_test_spawn(argv, log);
}

static pid_t spawn_render(world *w, const char *log) {
  return spawn_render_with(w, log, NULL, NULL);
}

static bool is_llvmpipe(pid_t tid, const char *comm, void *arg) {
  (void)tid, (void)arg;
  return strncmp(comm, "llvmpipe", 8) == 0;
}

/* Threads of pid named llvmpipe-N (llvmpipe's rasterisers). */
static int llvmpipe_threads(pid_t pid) {
  int n = pa_test_thread_count(pid, is_llvmpipe, NULL);
  assert_true(n >= 0);
  return n;
}

static bool render_ready(void *arg) {
  world *w = arg;
  return __atomic_load_n(&w->st.ctl->health[PA_PROC_RENDER].ready,
                         __ATOMIC_ACQUIRE) == 1;
}

/* Waits for a camera frame matching pred (NULL = any newer than after). */
typedef bool (*frame_pred)(const pa_frame *f, void *arg);
static const pa_frame *wait_frame(world *w, uint64_t after, frame_pred pred,
                                  void *arg, int timeout_ms) {
  int64_t end = pa_test_now_ms() + timeout_ms;
  while (pa_test_now_ms() < end) {
    uint32_t len;
    uint64_t seq;
    if (pa_ring_read_latest(w->st.camera, w->frame, w->frame_cap, &len,
                            &seq) == 0 &&
        seq > after && len >= sizeof(pa_frame)) {
      const pa_frame *f = (const pa_frame *)w->frame;
      assert_int_equal(len, sizeof(pa_frame) + f->size);
      if (!pred || pred(f, arg))
        return f;
    }
    usleep(5000);
  }
  return NULL;
}

/* Demands robot 0's camera the way pa-netgw does and waits (20 s) for its
 * first frame; fails with pa-render's log otherwise. */
static const pa_frame *demand_frame(world *w, const char *log) {
  __atomic_store_n(&w->st.cam[0].subscribers, 1, __ATOMIC_RELEASE);
  sem_post(&w->st.ctl->render_wake);
  const pa_frame *f = wait_frame(w, 0, NULL, NULL, 20000);
  if (!f) {
    pa_test_dump_file(log);
    fail_msg("no camera frame");
  }
  return f;
}

static const uint8_t *frame_px(const pa_frame *f, uint32_t x, uint32_t y) {
  return (const uint8_t *)(f + 1) + ((size_t)y * f->width + x) * 3;
}

static bool tick_is(const pa_frame *f, void *arg) {
  return f->tick == *(uint64_t *)arg;
}

/* Centre of the image is the green obstacle. */
static bool centre_green(const pa_frame *f, void *arg) {
  const uint8_t *c = frame_px(f, f->width / 2, f->height / 2 + 10);
  return c[1] > 120 && c[0] < 80 && c[2] < 80;
}

static void test_e2e(void **state) {
  world w;
  world_create(&w);
  char log[512];
  snprintf(log, sizeof log, "%s/render.log", pa_test_tmpdir());
  pid_t pid = spawn_render(&w, log);
  if (!pa_test_wait_for(render_ready, &w, 30000)) {
    pa_test_dump_file(log);
    fail_msg("pa-render did not become ready");
  }
  assert_int_equal(w.st.ctl->health[PA_PROC_RENDER].pid, pid);

  /* Nobody subscribes: nothing is rendered and the process sleeps. */
  usleep(300000);
  int64_t c0 = pa_proc_cpu_ms(pid);
  usleep(1500000);
  int64_t c1 = pa_proc_cpu_ms(pid);
  assert_true(c0 >= 0 && c1 >= 0);
  assert_int_equal(pa_ring_head(w.st.camera), 0);
  if (c1 - c0 > 300)
    fail_msg("idle pa-render used %lld ms CPU in 1.5 s", (long long)(c1 - c0));

  /* Demand robot 0's camera the way netgw does. */
  uint32_t seq0 = w.st.cam[0].seq;
  const pa_frame *f = demand_frame(&w, log);
  assert_int_equal(f->robot, 0);
  assert_true(f->seq >= seq0 + 1);
  assert_int_equal(f->width, CW);
  assert_int_equal(f->height, CH);
  assert_int_equal(f->size, CW * CH * 3);
  assert_int_equal(f->tick, w.tick);
  assert_true(f->x == -1.0 && f->y == 0.0 && f->theta == 0.0 &&
              f->head == 0);
  assert_true(f->sim_time == (double)w.tick / 200);
  /* plausible content: sky above, something else below, many colours */
  const uint8_t *top = frame_px(f, CW * 3 / 4, 2);
  const uint8_t *bot = frame_px(f, CW / 2, CH - 3);
  assert_true(top[2] > top[0] + 30);
  assert_true(abs(bot[2] - bot[0]) < 30);

  /* The frame follows the latest tick's pose. */
  write_tick(&w, -0.5, 0.3, 0.4, 0.3);
  uint64_t want = w.tick;
  f = wait_frame(&w, 0, tick_is, &want, 10000);
  assert_non_null(f);
  assert_true(f->x == -0.5 && f->y == 0.3 && f->theta == 0.4 &&
              f->head == 0.3);
  /* seq counts up by one per frame for this robot */
  uint64_t head = pa_ring_head(w.st.camera);
  uint32_t s1 = f->seq;
  const pa_frame *g = wait_frame(&w, head, NULL, NULL, 10000);
  assert_non_null(g);
  assert_true(g->seq > s1);

  /* A restarted render continues the sequence. */
  pa_test_stop(pid, SIGKILL, 5000);
  uint32_t last = __atomic_load_n(&w.st.cam[0].seq, __ATOMIC_ACQUIRE);
  pa_ring_cursor cur = pa_ring_cursor_now(w.st.camera);
  pid = spawn_render(&w, log);
  uint32_t len;
  uint64_t rseq;
  int64_t end = pa_test_now_ms() + 20000;
  int rc;
  while ((rc = pa_ring_read_next(w.st.camera, &cur, w.frame, w.frame_cap,
                                 &len, &rseq)) != 0 &&
         pa_test_now_ms() < end)
    usleep(5000);
  assert_int_equal(rc, 0);
  f = (const pa_frame *)w.frame;
  assert_int_equal(f->seq, last + 1);

  /* A world change (obstacle spawned in front of robot 0) is rendered
   * without a restart. */
  pa_stack_world_begin(&w.st);
  pa_obstacle_info *o = &w.st.obstacles[0];
  memset(o, 0, sizeof *o);
  snprintf(o->name, sizeof o->name, "crate");
  o->active = 1, o->gen = 1, o->shape = PA_SHAPE_BOX;
  o->x = -0.5 + 0.8 * cos(0.7), o->y = 0.3 + 0.8 * sin(0.7);
  o->theta = 0.7, o->size_x = 0.3, o->size_y = 0.6, o->height = 0.6;
  o->colour[1] = 200, o->colour[3] = 255;
  w.st.ctl->obstacle_count = 1;
  pa_stack_world_end(&w.st);
  f = wait_frame(&w, 0, centre_green, NULL, 10000);
  if (!f) {
    pa_test_dump_file(log);
    fail_msg("spawned obstacle never appeared in the camera");
  }

  /* Unsubscribed: frames stop. */
  __atomic_store_n(&w.st.cam[0].subscribers, 0, __ATOMIC_RELEASE);
  sem_post(&w.st.ctl->render_wake);
  usleep(500000);
  head = pa_ring_head(w.st.camera);
  usleep(600000);
  assert_int_equal(pa_ring_head(w.st.camera), head);

  int st = pa_test_stop(pid, SIGTERM, 10000);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_int_equal(w.st.ctl->health[PA_PROC_RENDER].pid, 0);
  assert_int_equal(w.st.ctl->health[PA_PROC_RENDER].ready, 0);
  world_free(&w);
}

static bool sim_ready(void *arg) {
  world *w = arg;
  return __atomic_load_n(&w->st.ctl->health[PA_PROC_SIM].ready,
                         __ATOMIC_ACQUIRE) == 1;
}

static bool pose_is(const pa_frame *f, void *arg) {
  const double *p = arg;
  return fabs(f->x - p[0]) < 1e-9 && fabs(f->y - p[1]) < 1e-9 &&
         fabs(f->theta - p[2]) < 1e-9;
}

/* With the real pa-sim (paused, so the state is still): the frame carries
 * the pose and tick of the state ring, and follows a teleport. */
static void test_e2e_sim(void **state) {
  char sim[512], log[512], rlog[512], err[256];
  pa_test_bin(sim, sizeof sim, "pa-sim");
  if (access(sim, X_OK) != 0) {
    fprintf(stderr, "SKIP: %s is not built\n", sim);
    skip();
  }
  world w;
  memset(&w, 0, sizeof w);
  pa_stack_def d = pa_test_stack_def(w.instance, sizeof w.instance, "rsim");
  d.max_robots = 8, d.max_obstacles = 64, d.max_cam_width = 640;
  d.max_cam_height = 480, d.camera_slots = 4;
  if (pa_stack_create(&w.st, &d, err, sizeof err) != 0)
    fail_msg("stack: %s", err);
  static uint8_t buf[sizeof(pa_frame) + 640 * 480 * 3 + 64];
  w.frame = buf;
  w.frame_cap = pa_ring_max_record(w.st.camera);
  assert_true(w.frame_cap <= sizeof buf);
  snprintf(log, sizeof log, "%s/sim.log", pa_test_tmpdir());
  snprintf(rlog, sizeof rlog, "%s/render-sim.log", pa_test_tmpdir());
  char *sargv[] = {sim, "--instance", w.instance, "--paused", NULL};
  pid_t spid = pa_test_spawn(sargv, log);
  if (!pa_test_wait_for(sim_ready, &w, 30000)) {
    pa_test_dump_file(log);
    fail_msg("pa-sim did not become ready");
  }
  pid_t rpid = spawn_render(&w, rlog);
  if (!pa_test_wait_for(render_ready, &w, 30000)) {
    pa_test_dump_file(rlog);
    fail_msg("pa-render did not become ready");
  }
  const pa_frame *f = demand_frame(&w, rlog);
  /* the state ring's latest tick is the one the frame was rendered from */
  static uint8_t tb[65536];
  uint32_t len;
  uint64_t seq;
  assert_int_equal(pa_ring_read_latest(w.st.state, tb, sizeof tb, &len, &seq),
                   0);
  const pa_tick *t = (const pa_tick *)tb;
  const pa_robot_state *rs = (const pa_robot_state *)(t + 1);
  assert_int_equal(f->robot, 0);
  assert_int_equal(f->tick, t->tick);
  assert_true(f->x == rs[0].x && f->y == rs[0].y && f->theta == rs[0].theta &&
              f->head == rs[0].head);
  assert_int_equal(f->width, w.st.robots[0].cam_width);
  assert_int_equal(f->height, w.st.robots[0].cam_height);
  const uint8_t *top = frame_px(f, f->width / 8, 1);
  const uint8_t *bot = frame_px(f, f->width / 2, f->height - 2);
  assert_true(top[2] > top[0] + 30);           /* sky */
  assert_true(abs(bot[2] - bot[0]) < 30);      /* floor */

  /* teleport robot 0 (as netgw would) and see the camera follow */
  pa_cmd c;
  memset(&c, 0, sizeof c);
  c.client_id = 1, c.request_id = 1, c.op = PA_OP_TELEPORT, c.robot = 0;
  c.pose.x = -1.0, c.pose.y = 0.0, c.pose.theta = 0.5;
  assert_int_equal(pa_queue_push(w.st.cmd, &c), 0);
  double want[3] = {-1.0, 0.0, 0.5};
  f = wait_frame(&w, 0, pose_is, want, 20000);
  if (!f) {
    pa_test_dump_file(log);
    fail_msg("camera did not follow the teleport");
  }
  int st = pa_test_stop(rpid, SIGTERM, 10000);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  pa_test_stop(spid, SIGTERM, 10000);
  pa_stack_detach(&w.st);
  pa_stack_unlink(w.instance);
}

static int run_to_exit(char *const argv[], const char *log, int timeout_ms) {
  pid_t pid = pa_test_spawn(argv, log);
  int st = pa_test_stop(pid, 0, timeout_ms);
  assert_true(WIFEXITED(st));
  return WEXITSTATUS(st);
}

static void test_config_errors(void **state) {
  char bin[512], log[512];
  pa_test_bin(bin, sizeof bin, "pa-render");
  snprintf(log, sizeof log, "%s/cfg.log", pa_test_tmpdir());
  char *missing[] = {bin, "--instance", "tnope-render-missing", NULL};
  assert_int_equal(run_to_exit(missing, log, 20000), PA_EXIT_CONFIG);
  assert_true(pa_test_file_contains(log, "does not exist"));
  char *badhz[] = {bin, "--camera_hz", "0", NULL};
  assert_int_equal(run_to_exit(badhz, log, 20000), PA_EXIT_CONFIG);
  assert_true(pa_test_file_contains(log, "--camera_hz"));
  char *unknown[] = {bin, "--camera-hz=abc", NULL};
  assert_int_equal(run_to_exit(unknown, log, 20000), PA_EXIT_CONFIG);
  assert_true(pa_test_file_contains(log, "abc"));
  char png[512];
  snprintf(png, sizeof png, "%s/x.png", pa_test_tmpdir());
  char *shot[] = {bin, "--screenshot", png, NULL};
  assert_int_equal(run_to_exit(shot, log, 20000), PA_EXIT_CONFIG);
  assert_int_equal(access(png, F_OK), -1); /* refused: nothing written */
  assert_true(pa_test_file_contains(log, "--viewer"));
}

/* No usable EGL vendor: a clear error and exit 1 (the launcher may retry). */
static void test_no_gl(void **state) {
  world w;
  world_create(&w);
  char log[512];
  snprintf(log, sizeof log, "%s/nogl.log", pa_test_tmpdir());
  setenv("__EGL_VENDOR_LIBRARY_FILENAMES", "/nonexistent/none.json", 1);
  pid_t pid = spawn_render(&w, log);
  unsetenv("__EGL_VENDOR_LIBRARY_FILENAMES");
  int st = pa_test_stop(pid, 0, 20000);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 1);
  if (!pa_test_file_contains(log, "EGL")) {
    pa_test_dump_file(log);
    fail_msg("no EGL error message");
  }
  assert_int_equal(w.st.ctl->health[PA_PROC_RENDER].ready, 0);
  world_free(&w);
}

static void test_viewer_screenshot(void **state) {
  if (access("/usr/bin/xvfb-run", X_OK) != 0) {
    fprintf(stderr, "SKIP: /usr/bin/xvfb-run is missing (apt-get install "
                    "xvfb xauth)\n");
    skip();
  }
  world w;
  world_create(&w);
  /* a scan for robot 0 so the viewer has rays to draw */
  uint8_t buf[sizeof(pa_scan) + 360 * sizeof(float)];
  memset(buf, 0, sizeof buf);
  pa_scan *sc = (pa_scan *)buf;
  sc->tick = w.tick, sc->robot = 0, sc->seq = 1;
  sc->x = -1.0, sc->y = 0.0, sc->theta = 0.0;
  sc->angle_min = (float)-M_PI, sc->angle_increment = (float)(M_PI / 180);
  sc->range_min = 0.15f, sc->range_max = 12, sc->count = 360;
  float *r = (float *)(sc + 1);
  for (int i = 0; i < 360; i++)
    r[i] = 1.5f;
  assert_true(pa_ring_write(w.st.scan, buf, sizeof buf) > 0);
  /* a client's path (a square around the map's centre) and waypoints, as
   * pa-netgw writes them */
  pa_stack_nav_begin(&w.st);
  pa_nav_overlay *o = &w.st.nav->ov[5];
  o->robot = 0;
  static const float sq[5][2] = {{-2, -2}, {2, -2}, {2, 2}, {-2, 2}, {-2, -2}};
  memcpy(o->path, sq, sizeof sq);
  o->path_n = 5;
  memcpy(o->wp, sq, 4 * sizeof sq[0]);
  o->wp_n = 4;
  pa_stack_nav_end(&w.st);
  char png[512];
  if (pa_test_viewer_shot(w.instance, "proc", 640, 400, png, sizeof png) != 0)
    fail_msg("viewer did not exit cleanly");
  int iw = 0, ih = 0, ic = 0;
  unsigned char *img = stbi_load(png, &iw, &ih, &ic, 3);
  if (!img) {
    char log[512];
    snprintf(log, sizeof log, "%s/viewer-proc.log", pa_test_tmpdir());
    pa_test_dump_file(log);
    fail_msg("no screenshot at %s", png);
  }
  assert_int_equal(iw, 640);
  assert_int_equal(ih, 400);
  /* Not blank: sky, floor, walls and robots give many distinct colours. */
  int distinct = 0;
  static uint8_t seen[32768];
  memset(seen, 0, sizeof seen);
  for (int i = 0; i < iw * ih; i++) {
    int k = (img[i * 3] >> 3) << 10 | (img[i * 3 + 1] >> 3) << 5 |
            (img[i * 3 + 2] >> 3);
    if (!seen[k]) {
      seen[k] = 1;
      distinct++;
    }
  }
  assert_true(distinct > 20);
  /* The path (magenta) and the waypoints (yellow) are drawn. */
  int magenta = 0, yellow = 0;
  for (int i = 0; i < iw * ih; i++) {
    const unsigned char *p = img + i * 3;
    magenta += p[0] > 200 && p[1] < 100 && p[2] > 190;
    yellow += p[0] > 220 && p[1] > 180 && p[2] < 70;
  }
  if (magenta < 100 || yellow < 50)
    fail_msg("path pixels %d, waypoint pixels %d", magenta, yellow);
  stbi_image_free(img);
  world_free(&w);
}

/* pa-render's llvmpipe screen has --raster_threads rasteriser threads: none
 * by default (its drawing thread rasterises), 2 when asked; LP_NUM_THREADS
 * in the environment wins over the flag. */
static void test_raster_threads(void **state) {
  (void)state;
  world w;
  world_create(&w);
  char log[512];
  snprintf(log, sizeof log, "%s/raster.log", pa_test_tmpdir());
  const char *flag[3][2] = {
      {NULL, NULL}, {"--raster_threads", "2"}, {"--raster_threads", "0"}};
  const int want[3] = {0, 2, 3};
  for (int k = 0; k < 3; k++) {
    if (k == 2)
      setenv("LP_NUM_THREADS", "3", 1); /* pa_test_spawn's child inherits */
    pid_t pid = spawn_render_with(&w, log, flag[k][0], flag[k][1]);
    if (k == 2)
      unsetenv("LP_NUM_THREADS");
    if (!pa_test_wait_for(render_ready, &w, 30000)) {
      pa_test_dump_file(log);
      fail_msg("pa-render did not become ready");
    }
    int n = llvmpipe_threads(pid);
    int st = pa_test_stop(pid, SIGTERM, 10000);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    __atomic_store_n(&w.st.ctl->health[PA_PROC_RENDER].ready, 0,
                     __ATOMIC_RELEASE);
    if (n != want[k])
      fail_msg("case %d: %d llvmpipe threads, want %d", k, n, want[k]);
  }
  world_free(&w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_config_errors),
      cmocka_unit_test(test_raster_threads),
      cmocka_unit_test(test_e2e),
      cmocka_unit_test(test_e2e_sim),
      cmocka_unit_test(test_no_gl),
      cmocka_unit_test(test_viewer_screenshot),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
