/* bench_render.c - head-camera rendering figures on the default map:
 * frames per second and CPU ms per frame (readback included) for one and
 * eight cameras at 320x240 and 640x480, then the CPU share of the real
 * pa-render process streaming one 640x480 camera at 15 Hz; and the
 * spectator's view with blob shadows and with the shadow map.
 *
 *   bench-render [--seconds S] [--camera_png PATH]
 *
 * --camera_png saves the default robot's view from its start pose, head
 * turned by --camera_head, with the other benchmark robots around (the
 * README's docs/img/camera.png). Run with LIBGL_ALWAYS_SOFTWARE=1 to
 * measure llvmpipe. */
#define _GNU_SOURCE
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pa_map.h"
#include "pa_proc.h"
#include "pa_render.h"
#include "pa_shm.h"
#include "pa_util.h"

#define NCAM 8

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru); /* all threads: llvmpipe renders on several */
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
}

static void info_from_def(pa_robot_info *ri, const pa_robot_def *d) {
  memset(ri, 0, sizeof *ri);
  snprintf(ri->name, sizeof ri->name, "%s", d->name);
  ri->active = 1;
  ri->gen = 1;
  ri->drive = (uint32_t)d->drive;
  ri->radius = (float)d->radius;
  ri->height = (float)d->height;
  ri->head_height = (float)d->head_height;
  memcpy(ri->colour, d->colour, 4);
  ri->cam_width = (uint16_t)d->camera.width;
  ri->cam_height = (uint16_t)d->camera.height;
  ri->cam_fov = (float)d->camera.fov;
  ri->start_x = d->x, ri->start_y = d->y, ri->start_theta = d->theta;
}

/* NCAM robots: the default one at its start pose, the others spread over
 * free cells around it, all facing different ways. */
static void make_robots(const pa_world *w, const pa_grid *g,
                        pa_robot_info ri[NCAM], pa_render_pose p[NCAM]) {
  for (int i = 0; i < NCAM; i++) {
    info_from_def(&ri[i], &w->robots[0]);
    ri[i].colour[0] = (uint8_t)(60 + 25 * i);
    ri[i].colour[2] = (uint8_t)(230 - 20 * i);
    p[i].x = w->robots[0].x, p[i].y = w->robots[0].y;
    p[i].theta = w->robots[0].theta + i * 2 * M_PI / NCAM;
    p[i].head = 0;
    p[i].active = true;
    for (double r = i ? 1.6 + 0.5 * i : 0; r < 6; r += 0.1) {
      double x = w->robots[0].x + r * cos(i * 0.9);
      double y = w->robots[0].y + r * sin(i * 0.9);
      int cx, cy;
      if (pa_grid_world_to_cell(g, x, y, &cx, &cy) &&
          !pa_grid_blocked(g, cx, cy, true)) {
        p[i].x = x, p[i].y = y;
        break;
      }
    }
  }
}

/* Renders for `seconds`: each round renders every one of ncam cameras,
 * pipelined (the next submit before the previous fetch), as pa-render does. */
static void measure(pa_render_scene *s, const pa_robot_info *ri,
                    const pa_render_pose *p, int ncam, uint32_t w, uint32_t h,
                    double seconds) {
  char err[256];
  pa_render_cam *c = NULL;
  if (pa_render_cam_create(&c, w, h, err, sizeof err) < 0) {
    fprintf(stderr, "%s\n", err);
    exit(1);
  }
  uint8_t *rgb = malloc((size_t)w * h * 3);
  pa_render_view v[NCAM];
  for (int i = 0; i < ncam; i++)
    v[i] = pa_render_view_head(&ri[i], (uint32_t)i, &p[i]);
  /* warm-up: shader compile, first allocations */
  for (int i = 0; i < 5; i++)
    pa_render_cam_render(c, s, &v[0], rgb, err, sizeof err);
  uint64_t frames = 0;
  double c0 = cpu_s();
  int64_t t0 = pa_now_ns(), end = t0 + (int64_t)(seconds * 1e9);
  while (pa_now_ns() < end) {
    for (int i = 0; i < ncam; i++) {
      if (pa_render_cam_pending(c) == PA_RENDER_CAM_SLOTS) {
        pa_render_cam_fetch(c, NULL, rgb, err, sizeof err);
        frames++;
      }
      if (pa_render_cam_submit(c, s, &v[i], NULL, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
      }
    }
  }
  while (pa_render_cam_pending(c)) {
    pa_render_cam_fetch(c, NULL, rgb, err, sizeof err);
    frames++;
  }
  double wall = (pa_now_ns() - t0) / 1e9, cpu = cpu_s() - c0;
  printf("  %ux%u  %d camera%s  %8.1f frames/s  %6.2f ms/frame wall  "
         "%6.2f ms/frame CPU\n",
         w, h, ncam, ncam > 1 ? "s" : " ", frames / wall, wall * 1e3 / frames,
         cpu * 1e3 / frames);
  free(rgb);
  pa_render_cam_free(c);
}

/* The spectator's view (640x480, 4x MSAA, over the map from above at an
 * angle) with the blob shadows or the shadow map: CPU ms per frame. With
 * poses (NCAM of them), the first robot turns every frame, so the map is
 * redrawn each time (still, it is kept). */
static void spectator_fig(pa_render_scene *s, double seconds, bool map,
                          const pa_render_pose *poses) {
  char err[256];
  pa_render_cam *c = NULL;
  uint8_t *rgb = malloc(640 * 480 * 3);
  if (!rgb || pa_render_cam_create(&c, 640, 480, err, sizeof err) < 0 ||
      pa_render_cam_set_msaa(c, 4, err, sizeof err) < 0) {
    fprintf(stderr, "spectator: %s\n", rgb ? err : "out of memory");
    exit(1);
  }
  double b[4];
  pa_render_scene_bounds(s, b);
  pa_render_view v = {(b[0] + b[2]) / 2, b[1] - 2, 9,  M_PI / 2, -0.9, 1.2,
                      UINT32_MAX,        true,     map};
  pa_render_cam_render(c, s, &v, rgb, err, sizeof err); /* warm-up */
  uint64_t frames = 0;
  double c0 = cpu_s();
  int64_t t0 = pa_now_ns(), end = t0 + (int64_t)(seconds * 1e9);
  pa_render_pose moved[NCAM];
  if (poses)
    memcpy(moved, poses, sizeof moved);
  while (pa_now_ns() < end) {
    if (poses) {
      moved[0].theta += 0.01;
      pa_render_scene_set_poses(s, moved, NCAM);
    }
    if (pa_render_cam_render(c, s, &v, rgb, err, sizeof err) < 0) {
      fprintf(stderr, "spectator: %s\n", err);
      exit(1);
    }
    frames++;
  }
  double wall = (pa_now_ns() - t0) / 1e9, cpu = cpu_s() - c0;
  printf("  spectator 640x480 4x MSAA, %-26s %8.1f frames/s  %6.2f ms/frame "
         "CPU\n",
         !map    ? "blobs:"
         : poses ? "shadow map, a robot turns:"
                 : "shadow map, still:",
         frames / wall, cpu * 1e3 / frames);
  if (poses)
    pa_render_scene_set_poses(s, poses, NCAM);
  free(rgb);
  pa_render_cam_free(c);
}

/* What a signal must not leave behind: stream_cpu's instance and its
 * pa-render (e.g. piped into head, which closes the pipe: SIGPIPE). */
static char live_inst[PA_SHM_INSTANCE_MAX];
static volatile pid_t live_pid = -1;

static void on_signal(int sig) {
  if (live_pid > 0)
    kill(live_pid, SIGTERM);
  if (live_inst[0])
    pa_stack_unlink(live_inst);
  signal(sig, SIG_DFL);
  raise(sig);
}

/* The real process: an instance with the default world, one 640x480
 * subscriber at 15 Hz, CPU time of pa-render over `seconds`. */
static int stream_cpu(const pa_grid *g, const pa_robot_info *ri0,
                      const pa_render_pose *p0, double seconds) {
  char err[256], inst[PA_SHM_INSTANCE_MAX];
  snprintf(inst, sizeof inst, "bench-render-%d", (int)getpid());
  pa_stack_def d = pa_stack_def_default();
  snprintf(d.instance, sizeof d.instance, "%s", inst);
  d.max_robots = 4, d.max_obstacles = 16, d.max_cam_width = 640,
  d.max_cam_height = 480, d.camera_slots = 4;
  pa_stack st;
  if (pa_stack_create(&st, &d, err, sizeof err) != 0) {
    fprintf(stderr, "stack: %s\n", err);
    return -1;
  }
  snprintf(live_inst, sizeof live_inst, "%s", inst);
  int rc = -1;
  pid_t pid = -1;
  if (pa_stack_map_publish(&st, g->width, g->height, g->resolution,
                           g->origin_x, g->origin_y, g->origin_yaw, g->cells,
                           g->occupied_min, err, sizeof err) != 0) {
    fprintf(stderr, "map: %s\n", err);
    goto out;
  }
  pa_stack_world_begin(&st);
  st.robots[0] = *ri0;
  st.robots[0].cam_width = 640, st.robots[0].cam_height = 480;
  st.ctl->robot_count = 1;
  pa_stack_world_end(&st);
  uint8_t buf[sizeof(pa_tick) + sizeof(pa_robot_state)];
  memset(buf, 0, sizeof buf);
  pa_tick *t = (pa_tick *)buf;
  t->tick = 1, t->robot_count = 1, t->wall_ns = pa_now_ns();
  pa_robot_state *rs = (pa_robot_state *)(t + 1);
  rs->flags = PA_RS_ACTIVE, rs->x = p0->x, rs->y = p0->y,
  rs->theta = p0->theta;
  pa_ring_write(st.state, buf, sizeof buf);

  char dir[1024], bin[1100];
  pa_exe_dir(dir, sizeof dir);
  snprintf(bin, sizeof bin, "%s/pa-render", dir);
  pid = fork();
  if (pid == 0) {
    execl(bin, bin, "--instance", inst, "--camera_hz", "15", (char *)NULL);
    _exit(127);
  }
  live_pid = pid;
  int64_t deadline = pa_now_ns() + 20000000000LL;
  while (!st.ctl->health[PA_PROC_RENDER].ready && pa_now_ns() < deadline)
    usleep(10000);
  if (!st.ctl->health[PA_PROC_RENDER].ready) {
    fprintf(stderr, "pa-render (%s) did not become ready\n", bin);
    goto out;
  }
  usleep(500000);
  int64_t idle0 = pa_proc_cpu_ms(pid);
  usleep(2000000);
  int64_t idle1 = pa_proc_cpu_ms(pid);
  __atomic_store_n(&st.cam[0].subscribers, 1, __ATOMIC_RELEASE);
  sem_post(&st.ctl->render_wake);
  usleep(1000000); /* warm-up: first frames, camera target */
  uint64_t f0 = pa_ring_head(st.camera);
  int64_t c0 = pa_proc_cpu_ms(pid), t0 = pa_now_ns();
  usleep((useconds_t)(seconds * 1e6));
  int64_t c1 = pa_proc_cpu_ms(pid), t1 = pa_now_ns();
  uint64_t f1 = pa_ring_head(st.camera);
  double wall = (t1 - t0) / 1e9;
  printf("  idle (no subscriber):      %5.2f %% of one core\n",
         (idle1 - idle0) / 20.0);
  printf("  640x480 @ 15 Hz stream:    %5.2f %% of one core, %.1f frames/s "
         "delivered, %.2f ms CPU/frame\n",
         (c1 - c0) / (wall * 10.0), (f1 - f0) / wall,
         f1 > f0 ? (double)(c1 - c0) / (double)(f1 - f0) : 0.0);
  rc = 0;
out:
  if (pid > 0) {
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
  }
  live_pid = -1;
  pa_stack_detach(&st);
  pa_stack_unlink(inst);
  live_inst[0] = '\0';
  return rc;
}

int main(int argc, char **argv) {
  double seconds = 3;
  const char *png = NULL;
  double png_head = 0.6;
  pa_opt opts[] = {
      {"seconds", PA_OPT_DOUBLE, &seconds, 0.2, 600, "time per figure [s]"},
      {"camera_png", PA_OPT_STR, &png, 0, -1,
       "save the default robot's start view as PNG"},
      {"camera_head", PA_OPT_DOUBLE, &png_head, -3.2, 3.2,
       "head pan of the saved view [rad]"},
  };
  char err[512];
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGHUP, on_signal);
  signal(SIGPIPE, on_signal);
  int rc = pa_opt_parse(opts, 3, argc, argv, NULL, 0, NULL, err, sizeof err);
  if (rc) {
    if (rc < 0)
      fprintf(stderr, "bench-render: %s\n", err);
    pa_opt_usage(rc < 0 ? stderr : stdout, "bench-render [flags]",
                 "Head-camera rendering figures on the default map.", opts, 3);
    return rc < 0 ? PA_EXIT_CONFIG : 0;
  }
  pa_log_init("bench-render", PA_LOG_WARN);
  pa_render_egl *egl = NULL;
  if (pa_render_egl_create(&egl, err, sizeof err) < 0) {
    fprintf(stderr, "bench-render: %s\n", err);
    return 1;
  }
  pa_world w;
  pa_grid g;
  if (pa_world_default(&w, err, sizeof err) < 0 ||
      pa_map_load_default(&g, err, sizeof err) < 0) {
    fprintf(stderr, "bench-render: %s\n", err);
    return 1;
  }
  pa_robot_info ri[NCAM];
  pa_render_pose p[NCAM];
  make_robots(&w, &g, ri, p);
  pa_render_scene *s = NULL;
  if (pa_render_scene_build(&s, &g, ri, NCAM, NULL, 0, err, sizeof err) < 0) {
    fprintf(stderr, "bench-render: %s\n", err);
    return 1;
  }
  pa_render_scene_set_poses(s, p, NCAM);
  printf("bench-render: %s; default map %ux%u cells, %u wall boxes, %u "
         "triangles; %.1f s per figure\n",
         pa_render_gl_renderer(), g.width, g.height,
         pa_render_scene_wall_boxes(s), pa_render_scene_triangles(s), seconds);
  if (png) {
    pa_render_cam *c = NULL;
    uint8_t *rgb = malloc(640 * 480 * 3);
    pa_render_pose head = p[0];
    head.head = png_head;
    pa_render_view v = pa_render_view_head(&ri[0], 0, &head);
    if (pa_render_cam_create(&c, 640, 480, err, sizeof err) < 0 ||
        pa_render_cam_render(c, s, &v, rgb, err, sizeof err) < 0 ||
        pa_render_write_png(png, rgb, 640, 480, err, sizeof err) < 0) {
      fprintf(stderr, "bench-render: %s\n", err);
      return 1;
    }
    printf("  saved the start view to %s\n", png);
    free(rgb);
    pa_render_cam_free(c);
  }
  static const uint32_t sizes[2][2] = {{320, 240}, {640, 480}};
  for (int k = 0; k < 2; k++) {
    measure(s, ri, p, 1, sizes[k][0], sizes[k][1], seconds);
    measure(s, ri, p, NCAM, sizes[k][0], sizes[k][1], seconds);
  }
  spectator_fig(s, seconds, false, NULL);
  spectator_fig(s, seconds, true, NULL);
  spectator_fig(s, seconds, true, p);
  int src = stream_cpu(&g, &ri[0], &p[0], fmax(seconds, 3));
  pa_render_scene_free(s);
  pa_render_egl_destroy(egl);
  pa_grid_free(&g);
  pa_world_free(&w);
  return src < 0 ? 1 : 0;
}
