/* bench_atlas.c - batched head cameras (render/atlas.c) against one camera
 * at a time, in one run on the default map: frames/s and CPU ms per frame
 * of N robots' w x h views, rendering and readback into memory laid out as
 * numpy's (N, h, w, 3), on a generated building like NavVectorEnv(64)'s
 * (--map_side 0: the default map). The end-to-end figure (stack, shm,
 * numpy) is bench/atlas_bench.py's.
 *
 *   bench-atlas [--robots 64] [--width 84] [--height 84] [--seconds 3]
 *               [--map_side 14] [--contexts 2] [--raster_threads 0]
 *               [--atlas_only] [--dump FILE]
 *
 * The atlas is timed drawn by one GL context and by --contexts (the
 * caller's and helpers', pa_render_atlas_pool, as pa-render's
 * --atlas_contexts), alternating, and their bytes compared. --dump writes
 * the first atlas's tiles (robots x height x width x RGB, raw) to FILE:
 * `cmp` two builds' dumps to see a change draws the same. The first
 * context's llvmpipe screen gets pa-render's default of no rasteriser
 * threads (--raster_threads; until the twelfth round of issue 37 this
 * benchmark left llvmpipe its own default, a thread a CPU).
 *
 * Run with LIBGL_ALWAYS_SOFTWARE=1 to measure llvmpipe. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "pa_map.h"
#include "pa_render.h"
#include "pa_render_atlas.h"
#include "pa_util.h"

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru); /* all threads: llvmpipe renders on several */
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
}

/* n robots of the default world's look on random free cells (a fixed
 * seed), headings uniform, as NavVectorEnv spreads its robots. */
static void make_robots(const pa_world *w, const pa_grid *g, uint32_t n,
                        pa_robot_info *ri, pa_render_pose *p) {
  const pa_robot_def *d = &w->robots[0];
  uint64_t rng = 12345;
  for (uint32_t i = 0; i < n; i++) {
    memset(&ri[i], 0, sizeof ri[i]);
    snprintf(ri[i].name, sizeof ri[i].name, "r%u", i);
    ri[i].active = 1;
    ri[i].radius = (float)d->radius;
    ri[i].height = (float)d->height;
    ri[i].head_height = (float)d->head_height;
    memcpy(ri[i].colour, d->colour, 4);
    ri[i].colour[0] = (uint8_t)(40 + i * 37);
    ri[i].cam_fov = (float)d->camera.fov;
    for (int tries = 0; tries < 100000; tries++) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      int cx = (int)((rng >> 33) % g->width),
          cy = (int)((rng >> 13) % g->height);
      bool ok = true;
      for (int dy = -5; dy <= 5 && ok; dy++) /* 0.25 m clear at 0.05 m cells */
        for (int dx = -5; dx <= 5 && ok; dx++)
          ok = !pa_grid_blocked(g, cx + dx, cy + dy, true);
      if (ok) {
        double x, y;
        pa_grid_cell_center(g, cx, cy, &x, &y);
        p[i] = (pa_render_pose){x, y, (double)(rng % 6283) / 1000 - 3.1415, 0,
                                true};
        break;
      }
    }
  }
}

static int gen_map(double side, pa_grid *g, char *err, size_t err_sz) {
  pa_mapgen p = pa_mapgen_default();
  p.width = p.height = side;
  p.seed = 1;
  return pa_map_generate(&p, g, err, err_sz);
}

typedef struct fig {
  double fps, cpu_ms;
} fig;

/* The atlas (pool: its helpers draw rows of it too) for `seconds`. */
static fig run_atlas(pa_render_atlas_pool *pool, pa_render_scene *s,
                     const pa_render_view *v, uint32_t n, uint32_t w,
                     uint32_t h, double seconds, uint8_t *rgb,
                     const char *dump) {
  char err[256];
  pa_render_atlas *a = NULL;
  if (pa_render_atlas_create(&a, w, h, err, sizeof err) < 0 ||
      pa_render_atlas_pool_render(pool, a, s, v, NULL, n, rgb, err,
                                  sizeof err) < 0) {
    fprintf(stderr, "bench-atlas: %s\n", err);
    exit(1);
  }
  if (dump && *dump) {
    size_t bytes = (size_t)n * w * h * 3;
    FILE *f = fopen(dump, "wb");
    if (!f || fwrite(rgb, 1, bytes, f) != bytes || fclose(f) != 0) {
      perror(dump);
      exit(1);
    }
  }
  uint64_t frames = 0;
  double c0 = cpu_s();
  int64_t t0 = pa_now_ns(), end = t0 + (int64_t)(seconds * 1e9);
  while (pa_now_ns() < end) {
    if (pa_render_atlas_pool_render(pool, a, s, v, NULL, n, rgb, err,
                                    sizeof err) < 0) {
      fprintf(stderr, "bench-atlas: %s\n", err);
      exit(1);
    }
    frames += n;
  }
  double wall = (pa_now_ns() - t0) / 1e9;
  fig f = {frames / wall, frames ? (cpu_s() - c0) * 1e3 / frames : 0};
  pa_render_atlas_free(a);
  return f;
}

/* One camera after the other, pipelined as pa-render streams them. */
static fig run_single(pa_render_scene *s, const pa_render_view *v, uint32_t n,
                      uint32_t w, uint32_t h, double seconds, uint8_t *rgb) {
  char err[256];
  pa_render_cam *c = NULL;
  if (pa_render_cam_create(&c, w, h, err, sizeof err) < 0) {
    fprintf(stderr, "bench-atlas: %s\n", err);
    exit(1);
  }
  size_t tile = (size_t)w * h * 3;
  uint64_t frames = 0;
  double c0 = cpu_s();
  int64_t t0 = pa_now_ns(), end = t0 + (int64_t)(seconds * 1e9);
  while (pa_now_ns() < end) {
    for (uint32_t i = 0; i < n; i++) {
      if (pa_render_cam_pending(c) == PA_RENDER_CAM_SLOTS) {
        pa_render_cam_fetch(c, NULL, rgb + (i ? i - 1 : n - 1) * tile, err,
                            sizeof err);
        frames++;
      }
      if (pa_render_cam_submit(c, s, &v[i], NULL, err, sizeof err) < 0) {
        fprintf(stderr, "bench-atlas: %s\n", err);
        exit(1);
      }
    }
  }
  while (pa_render_cam_pending(c)) {
    pa_render_cam_fetch(c, NULL, rgb, err, sizeof err);
    frames++;
  }
  double wall = (pa_now_ns() - t0) / 1e9;
  fig f = {frames / wall, frames ? (cpu_s() - c0) * 1e3 / frames : 0};
  pa_render_cam_free(c);
  return f;
}

int main(int argc, char **argv) {
  double seconds = 3;
  uint32_t n = 64, w = 84, h = 84;
  double side = 14; /* NavVectorEnv(64)'s generated building */
  bool atlas_only = false;
  const char *dump = NULL;
  uint32_t contexts = 2;
  uint32_t raster = 0; /* pa-render's --raster_threads default */
  pa_opt opts[] = {
      {"robots", PA_OPT_U32, &n, 1, PA_RENDER_ATLAS_MAX_TILES, "cameras"},
      {"width", PA_OPT_U32, &w, 1, PA_RENDER_ATLAS_MAX_SIDE, "tile [px]"},
      {"height", PA_OPT_U32, &h, 1, PA_RENDER_ATLAS_MAX_SIDE, "tile [px]"},
      {"seconds", PA_OPT_DOUBLE, &seconds, 0.2, 600, "time per figure [s]"},
      {"map_side", PA_OPT_DOUBLE, &side, 0, 500,
       "a generated building this wide [m] (0: the default map)"},
      {"atlas_only", PA_OPT_FLAG, &atlas_only, 0, 0,
       "the atlas figure only (e.g. under perf stat)"},
      {"dump", PA_OPT_STR, &dump, 0, 0,
       "write the first atlas's tiles (raw RGB) to this file"},
      {"contexts", PA_OPT_U32, &contexts, 1, PA_RENDER_ATLAS_POOL_MAX + 1,
       "GL contexts drawing the atlas in the second figure"},
      {"raster_threads", PA_OPT_U32, &raster, 0, 64,
       "llvmpipe rasteriser threads of the first context, as pa-render's "
       "--raster_threads (LP_NUM_THREADS, when set, wins)"},
  };
  char err[512];
  int rc = pa_opt_parse(opts, 9, argc, argv, NULL, 0, NULL, err, sizeof err);
  if (rc) {
    if (rc < 0)
      fprintf(stderr, "bench-atlas: %s\n", err);
    pa_opt_usage(rc < 0 ? stderr : stdout, "bench-atlas [flags]",
                 "Batched head cameras against one at a time.", opts, 9);
    return rc < 0 ? PA_EXIT_CONFIG : 0;
  }
  pa_log_init("bench-atlas", PA_LOG_WARN);
  pa_render_egl *egl = NULL;
  pa_world wd;
  pa_grid g;
  if (pa_render_egl_create_threads(&egl, raster, err, sizeof err) < 0 ||
      pa_world_default(&wd, err, sizeof err) < 0 ||
      (side > 0 ? gen_map(side, &g, err, sizeof err)
                : pa_map_load_default(&g, err, sizeof err)) < 0) {
    fprintf(stderr, "bench-atlas: %s\n", err);
    return 1;
  }
  pa_robot_info *ri = calloc(n, sizeof *ri);
  pa_render_pose *p = calloc(n, sizeof *p);
  pa_render_view *v = calloc(n, sizeof *v);
  uint8_t *rgb = malloc((size_t)n * w * h * 3);
  if (!ri || !p || !v || !rgb) {
    fprintf(stderr, "bench-atlas: out of memory\n");
    return 1;
  }
  make_robots(&wd, &g, n, ri, p);
  pa_render_scene *s = NULL;
  if (pa_render_scene_build(&s, &g, ri, n, NULL, 0, err, sizeof err) < 0) {
    fprintf(stderr, "bench-atlas: %s\n", err);
    return 1;
  }
  for (uint32_t i = 0; i < n; i++)
    v[i] = pa_render_view_head(&ri[i], i, &p[i]);
  pa_render_scene_set_poses(s, p, n);
  printf("bench-atlas: %s; %s %.0f m map, %u triangles, %u robots, %ux%u, "
         "%.1f s per figure\n",
         pa_render_gl_renderer(), side > 0 ? "generated" : "default",
         side > 0 ? side : g.width * g.resolution, pa_render_scene_triangles(s),
         n, w, h, seconds);
  pa_render_atlas_pool *pool = NULL;
  if (pa_render_atlas_pool_create(&pool, contexts - 1, err, sizeof err) < 0 ||
      pa_render_atlas_pool_build(pool, &g, ri, n, NULL, 0, 1, err, sizeof err) <
          0) {
    fprintf(stderr, "bench-atlas: %s\n", err);
    return 1;
  }
  /* the same bytes from one context and from the pool */
  size_t bytes = (size_t)n * w * h * 3;
  uint8_t *rgb2 = malloc(bytes);
  if (!rgb2) {
    fprintf(stderr, "bench-atlas: out of memory\n");
    return 1;
  }
  run_atlas(NULL, s, v, n, w, h, 0, rgb, dump);
  run_atlas(pool, s, v, n, w, h, 0, rgb2, NULL);
  size_t differ = 0;
  for (size_t i = 0; i < bytes; i++)
    differ += rgb[i] != rgb2[i];
  printf("  %u contexts draw the same bytes as one: %s (%zu of %zu differ)\n",
         contexts, differ ? "NO" : "yes", differ, bytes);
  /* the pool's split by the last batch's times, and fixed at even rows
   * (the first batch's split) */
  uint32_t even[PA_RENDER_ATLAS_POOL_MAX + 2], parts = 0;
  if (contexts > 1) {
    pa_render_atlas_pool_set_ends(pool, 0, 0, NULL);
    run_atlas(pool, s, v, n, w, h, 0, rgb, NULL);
    parts = pa_render_atlas_pool_ends(pool, even);
  }
  fig f1[2], fp[2], fe[2];
  uint32_t settled[PA_RENDER_ATLAS_POOL_MAX + 2];
  for (int r = 0; r < 2; r++) { /* alternating: the load hits both alike */
    f1[r] = run_atlas(NULL, s, v, n, w, h, seconds, rgb, NULL);
    fp[r] = run_atlas(pool, s, v, n, w, h, seconds, rgb, NULL);
    if (parts) {
      pa_render_atlas_pool_ends(pool, settled);
      pa_render_atlas_pool_set_ends(pool, n, parts, even);
      fe[r] = run_atlas(pool, s, v, n, w, h, seconds, rgb, NULL);
      pa_render_atlas_pool_set_ends(pool, 0, 0, NULL);
    }
  }
  printf("  atlas, 1 context   %9.1f frames/s  %6.3f ms CPU/frame  (again: "
         "%.1f frames/s)\n",
         f1[0].fps, f1[0].cpu_ms, f1[1].fps);
  printf("  atlas, %u contexts  %9.1f frames/s  %6.3f ms CPU/frame  (again: "
         "%.1f frames/s)  %.2fx one\n",
         contexts, fp[0].fps, fp[0].cpu_ms, fp[1].fps,
         (fp[0].fps + fp[1].fps) / (f1[0].fps + f1[1].fps));
  if (parts) {
    printf("  %u contexts, rows split evenly (the first batch's split)  %9.1f "
           "frames/s  %6.3f ms CPU/frame  (again: %.1f frames/s)\n",
           contexts, fe[0].fps, fe[0].cpu_ms, fe[1].fps);
    printf("  split by the times / evenly by rows %.3fx; the caller's part "
           "settled at tiles [0, %u) of %u (evenly: [0, %u))\n",
           (fp[0].fps + fp[1].fps) / (fe[0].fps + fe[1].fps), settled[1], n,
           even[1]);
  }
  free(rgb2);
  if (atlas_only)
    goto out;
  fig fs = run_single(s, v, n, w, h, seconds, rgb);
  printf("  single  %9.1f frames/s  %6.3f ms CPU/frame\n", fs.fps, fs.cpu_ms);
  printf("  atlas (1 context)/single %.2fx\n",
         (f1[0].fps + f1[1].fps) / 2 / fs.fps);
out:
  pa_render_atlas_pool_free(pool);
  pa_render_scene_free(s);
  pa_render_egl_destroy(egl);
  pa_grid_free(&g);
  pa_world_free(&wd);
  free(ri), free(p), free(v), free(rgb);
  return 0;
}
