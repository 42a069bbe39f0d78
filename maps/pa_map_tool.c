/*
 * pa_map_tool.c - pa-map: validate, convert and preview maps and worlds.
 *
 *   pa-map check FILE            map.yaml, world file or "default"
 *   pa-map convert IN OUT.yaml [--image OUT.png|.pgm|.bmp]
 *   pa-map dist FILE OUT.png     distance-field preview
 *   pa-map ascii FILE [--width N]
 *
 * Exit status: 0 fine, 1 the input is bad (the error is printed), 2 usage.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pa_map.h"
#include "pa_map_int.h"
#include "pa_util.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: pa-map check FILE\n"
          "       pa-map convert IN OUT.yaml [--image OUT.png|.pgm|.bmp]\n"
          "       pa-map dist FILE OUT.png\n"
          "       pa-map ascii FILE [--width N]\n"
          "FILE is a ROS map.yaml, a playarea world file, or 'default' (the\n"
          "built-in world). check validates it and prints size, resolution,\n"
          "origin and cell counts; convert rewrites it as PNG/PGM/BMP + yaml;\n"
          "dist draws the distance to the nearest obstacle; ascii prints it.\n");
}

/* A map.yaml has an image key; anything else is read as a world file. */
static int load_world(const char *path, pa_world *w, bool *is_world,
                      char *err, size_t err_sz) {
  *is_world = false;
  if (!strcmp(path, "default")) {
    *is_world = true;
    return pa_world_default(w, err, err_sz);
  }
  pa_ydoc d;
  if (pa_map_ydoc_load_file(&d, path, NULL, err, err_sz))
    return -1;
  yaml_node_t *root = pa_map_ydoc_root(&d);
  bool map_yaml = pa_map_yget(&d, root, "image") != NULL;
  pa_map_ydoc_free(&d);
  if (!map_yaml) {
    *is_world = true;
    return pa_world_load(path, w, err, err_sz);
  }
  if (pa_world_default(w, err, err_sz)) return -1;
  if (pa_map_parse_yaml(path, &w->map, err, err_sz)) {
    pa_world_free(w);
    return -1;
  }
  return 0;
}

/* Loads path's world and its grid, or prints why not ("pa-map: ...") and
 * returns -1 with nothing to free. */
static int open_grid(const char *path, pa_world *w, pa_grid *g,
                     bool *is_world) {
  char err[2048];
  if (load_world(path, w, is_world, err, sizeof err) == 0) {
    if (w->map.ignored_keys[0]) /* as pa-sim: warned, not refused */
      fprintf(stderr,
              "pa-map: warning: %s: ignoring keys map_server does "
              "not read: %s\n",
              path, w->map.ignored_keys);
    if (pa_map_load(&w->map, g, err, sizeof err) == 0)
      return 0;
    pa_world_free(w);
  }
  fprintf(stderr, "pa-map: %s\n", err);
  return -1;
}

static int cmd_check(const char *path) {
  char err[2048];
  pa_world w;
  pa_grid g;
  bool is_world;
  if (open_grid(path, &w, &g, &is_world))
    return 1;
  size_t n = (size_t)g.width * g.height, fr = 0, oc = 0, un = 0, mid = 0;
  for (size_t i = 0; i < n; i++) {
    int8_t v = g.cells[i];
    if (v < 0) un++;
    else if (v == 0) fr++;
    else if (v >= g.occupied_min) oc++;
    else mid++;
  }
  printf("file: %s (%s)\n", path, is_world ? "world" : "map");
  printf("image: %s\n", w.map.image[0] ? w.map.image : "(built-in)");
  printf("size: %u x %u cells, %.3f x %.3f m\n", g.width, g.height,
         g.width * g.resolution, g.height * g.resolution);
  printf("resolution: %g m/cell\n", g.resolution);
  printf("origin: [%g, %g, %g]\n", g.origin_x, g.origin_y, g.origin_yaw);
  printf("cells: free %zu, occupied %zu, unknown %zu, in between %zu "
         "(blocked when >= %d)\n",
         fr, oc, un, mid, g.occupied_min);
  int rc = 0;
  if (is_world) {
    printf("robots: %zu, obstacles: %zu, unknown_blocks: %s\n", w.robot_count,
           w.obstacle_count, w.unknown_blocks ? "true" : "false");
    pa_dist d;
    if (pa_dist_build(&g, w.unknown_blocks, &d, err, sizeof err)) {
      fprintf(stderr, "pa-map: %s\n", err);
      rc = 1;
    } else {
      /* A robot must start clear of the map's obstacles. */
      for (size_t i = 0; i < w.robot_count; i++) {
        const pa_robot_def *r = &w.robots[i];
        int cx, cy;
        double clear = 0;
        if (pa_grid_world_to_cell(&g, r->x, r->y, &cx, &cy))
          clear = d.d[(size_t)cy * g.width + (size_t)cx] - 1.5 * g.resolution;
        if (clear < r->radius) {
          fprintf(stderr,
                  "pa-map: %s: robot '%s' at (%g, %g) is %s (clearance %.3f m "
                  "< radius %.3f m)\n",
                  path, r->name, r->x, r->y,
                  clear <= 0 ? "outside the free space" : "too close to a wall",
                  clear < 0 ? 0 : clear, r->radius);
          rc = 1;
        }
      }
      pa_dist_free(&d);
    }
  }
  if (rc == 0) printf("ok\n");
  pa_grid_free(&g);
  pa_world_free(&w);
  return rc;
}

static int cmd_convert(const char *in, const char *out_yaml,
                       const char *image) {
  char err[2048], img[PA_MAP_PATH_MAX];
  pa_world w;
  pa_grid g;
  bool is_world;
  if (!image) {
    size_t l = strlen(out_yaml);
    const char *dot = strrchr(out_yaml, '.');
    const char *slash = strrchr(out_yaml, '/');
    if (dot && (!slash || dot > slash)) l = (size_t)(dot - out_yaml);
    if (snprintf(img, sizeof img, "%.*s.png", (int)l, out_yaml) >=
        (int)sizeof img) {
      fprintf(stderr, "pa-map: %s: path too long\n", out_yaml);
      return 1;
    }
    image = img;
  }
  if (open_grid(in, &w, &g, &is_world))
    return 1;
  int rc = pa_map_save(&g, out_yaml, image, err, sizeof err);
  if (rc) fprintf(stderr, "pa-map: %s\n", err);
  else printf("wrote %s and %s (%u x %u)\n", out_yaml, image, g.width, g.height);
  pa_grid_free(&g);
  pa_world_free(&w);
  return rc ? 1 : 0;
}

static int cmd_dist(const char *in, const char *out_png) {
  char err[2048];
  pa_world w;
  pa_grid g;
  pa_dist d;
  bool is_world;
  if (open_grid(in, &w, &g, &is_world))
    return 1;
  if (pa_dist_build(&g, w.unknown_blocks, &d, err, sizeof err)) {
    fprintf(stderr, "pa-map: %s\n", err);
    pa_grid_free(&g);
    pa_world_free(&w);
    return 1;
  }
  size_t n = (size_t)g.width * g.height;
  float maxd = 0;
  for (size_t i = 0; i < n; i++)
    if (d.d[i] > maxd) maxd = d.d[i];
  unsigned char *rgb = malloc(n * 3);
  int rc = 1;
  if (rgb) {
    /* Blocked black, unknown dark red, then dark blue -> yellow with distance
     * (image row 0 is north). */
    for (uint32_t y = 0; y < g.height; y++)
      for (uint32_t x = 0; x < g.width; x++) {
        size_t gi = (size_t)y * g.width + x;
        unsigned char *p = rgb + ((size_t)(g.height - 1 - y) * g.width + x) * 3;
        if (d.d[gi] <= 0) {
          bool unk = g.cells[gi] < 0;
          p[0] = unk ? 90 : 0;
          p[1] = 0;
          p[2] = 0;
          continue;
        }
        double t = maxd > 0 ? sqrt(d.d[gi] / maxd) : 0;
        p[0] = (unsigned char)(30 + 225 * t);
        p[1] = (unsigned char)(40 + 190 * t);
        p[2] = (unsigned char)(120 * (1 - t) + 40);
      }
    rc = pa_map_img_write_png_rgb(out_png, (int)g.width, (int)g.height, rgb)
             ? 1
             : 0;
    if (rc) fprintf(stderr, "pa-map: %s: cannot write PNG\n", out_png);
    else printf("wrote %s (max clearance %.3f m)\n", out_png, maxd);
    free(rgb);
  } else {
    fprintf(stderr, "pa-map: out of memory\n");
  }
  pa_dist_free(&d);
  pa_grid_free(&g);
  pa_world_free(&w);
  return rc;
}

static int cmd_ascii(const char *in, long width) {
  pa_world w;
  pa_grid g;
  bool is_world;
  if (open_grid(in, &w, &g, &is_world))
    return 1;
  if ((uint32_t)width > g.width) width = (long)g.width;
  /* Terminal characters are about twice as tall as wide. */
  double bw = (double)g.width / (double)width, bh = bw * 2.0;
  long rows = (long)ceil(g.height / bh);
  for (long r = 0; r < rows; r++) {
    for (long col = 0; col < width; col++) {
      uint32_t x0 = (uint32_t)(col * bw), x1 = (uint32_t)((col + 1) * bw);
      double top = g.height - r * bh, bot = g.height - (r + 1) * bh;
      uint32_t y1 = (uint32_t)ceil(top), y0 = bot < 0 ? 0 : (uint32_t)bot;
      if (x1 > g.width) x1 = g.width;
      if (x1 <= x0) x1 = x0 + 1;
      if (y1 > g.height) y1 = g.height;
      size_t occ = 0, unk = 0, tot = 0;
      for (uint32_t y = y0; y < y1; y++)
        for (uint32_t x = x0; x < x1; x++) {
          int8_t v = g.cells[(size_t)y * g.width + x];
          occ += v >= g.occupied_min;
          unk += v < 0;
          tot++;
        }
      char ch = ' ';
      if (occ * 3 >= tot && occ) ch = '#';
      else if (occ) ch = '+';
      else if (unk * 2 >= tot && unk) ch = '?';
      bool robot = false;
      for (size_t i = 0; i < w.robot_count && is_world; i++) {
        int cx, cy;
        if (pa_grid_world_to_cell(&g, w.robots[i].x, w.robots[i].y, &cx, &cy) &&
            (uint32_t)cx >= x0 && (uint32_t)cx < x1 && (uint32_t)cy >= y0 &&
            (uint32_t)cy < y1)
          robot = true;
      }
      putchar(robot ? '@' : ch);
    }
    putchar('\n');
  }
  pa_grid_free(&g);
  pa_world_free(&w);
  return 0;
}

int main(int argc, char **argv) {
  if (pa_version_arg("pa-map", argc, argv))
    return 0;
  if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
                    !strcmp(argv[1], "help"))) {
    usage(stdout);
    return 0;
  }
  if (argc < 3) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "check") && argc == 3) return cmd_check(argv[2]);
  if (!strcmp(cmd, "convert") && (argc == 4 || argc == 6)) {
    const char *image = NULL;
    if (argc == 6) {
      if (strcmp(argv[4], "--image")) {
        usage(stderr);
        return 2;
      }
      image = argv[5];
    }
    return cmd_convert(argv[2], argv[3], image);
  }
  if (!strcmp(cmd, "dist") && argc == 4) return cmd_dist(argv[2], argv[3]);
  if (!strcmp(cmd, "ascii") && (argc == 3 || argc == 5)) {
    long width = 80;
    if (argc == 5) {
      char *end;
      width = strtol(argv[4], &end, 10);
      if (strcmp(argv[3], "--width") || *end || end == argv[4] || width < 1 ||
          width > 10000) {
        fprintf(stderr, "pa-map: --width must be an integer in [1, 10000]\n");
        return 2;
      }
    }
    return cmd_ascii(argv[2], width);
  }
  usage(stderr);
  return 2;
}
