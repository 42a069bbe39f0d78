/*
 * pa_map.c - ROS map_server maps: map.yaml, image -> occupancy grid, the
 * built-in default map, grid geometry, saving, and the shared --map_* flags.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pa_map_int.h"
#include "pa_props.h"

/* The built-in map's yaml values (maps/default.yaml; a test checks they
 * agree with the embedded file). */
#define PA_DEFAULT_RES 0.022178
#define PA_DEFAULT_ORIGIN (-5.5445)

pa_map_def pa_map_def_default(void) {
  pa_map_def d;
  memset(&d, 0, sizeof d);
  d.image[0] = '\0';
  d.resolution = PA_DEFAULT_RES;
  d.origin[0] = PA_DEFAULT_ORIGIN;
  d.origin[1] = PA_DEFAULT_ORIGIN;
  d.origin[2] = 0.0;
  d.negate = 0;
  d.occupied_thresh = 0.65;
  d.free_thresh = 0.196;
  d.mode = PA_MAP_TRINARY;
  d.max_width = 8192;
  d.max_height = 8192;
  return d;
}

/* ---- paths -------------------------------------------------------------- */

void pa_map_dirname(const char *path, char *out, size_t out_sz) {
  const char *slash = strrchr(path, '/');
  if (!slash) {
    snprintf(out, out_sz, ".");
  } else if (slash == path) {
    snprintf(out, out_sz, "/");
  } else {
    size_t n = (size_t)(slash - path);
    if (n >= out_sz) n = out_sz - 1;
    memcpy(out, path, n);
    out[n] = '\0';
  }
}

int pa_map_join(const char *base_dir, const char *rel, char *out,
                size_t out_sz) {
  int n;
  if (rel[0] == '/' || !base_dir || !base_dir[0])
    n = snprintf(out, out_sz, "%s", rel);
  else if (!strcmp(base_dir, "/"))
    n = snprintf(out, out_sz, "/%s", rel);
  else
    n = snprintf(out, out_sz, "%s/%s", base_dir, rel);
  return (n < 0 || (size_t)n >= out_sz) ? -1 : 0;
}

/* ---- map.yaml ----------------------------------------------------------- */

int pa_map_def_check(const pa_map_def *def, const char *what, char *err,
                     size_t err_sz) {
  /* 0.1 mm to 1 km a cell: beyond that the map's metres overflow or vanish
   * in the geometry. */
  if (!(def->resolution >= PA_MAP_RES_MIN &&
        def->resolution <= PA_MAP_RES_MAX)) {
    snprintf(err, err_sz, "%s: resolution must be in [%g, %g] m, got %g", what,
             PA_MAP_RES_MIN, PA_MAP_RES_MAX, def->resolution);
    return -1;
  }
  for (int i = 0; i < 3; i++)
    if (!(fabs(def->origin[i]) <= (i < 2 ? PA_MAP_ORIGIN_MAX : 1e3))) {
      snprintf(err, err_sz, "%s: origin[%d] must be finite and within %g", what,
               i, i < 2 ? PA_MAP_ORIGIN_MAX : 1e3);
      return -1;
    }
  if (def->negate != 0 && def->negate != 1) {
    snprintf(err, err_sz, "%s: negate must be 0 or 1, got %d", what,
             def->negate);
    return -1;
  }
  if (!(def->occupied_thresh >= 0 && def->occupied_thresh <= 1)) {
    snprintf(err, err_sz, "%s: occupied_thresh must be in [0, 1], got %g", what,
             def->occupied_thresh);
    return -1;
  }
  if (!(def->free_thresh >= 0 && def->free_thresh <= 1)) {
    snprintf(err, err_sz, "%s: free_thresh must be in [0, 1], got %g", what,
             def->free_thresh);
    return -1;
  }
  if (!(def->free_thresh < def->occupied_thresh)) {
    snprintf(err, err_sz,
             "%s: free_thresh (%g) must be below occupied_thresh (%g)", what,
             def->free_thresh, def->occupied_thresh);
    return -1;
  }
  if (def->mode != PA_MAP_TRINARY && def->mode != PA_MAP_SCALE &&
      def->mode != PA_MAP_RAW) {
    snprintf(err, err_sz, "%s: mode must be trinary, scale or raw", what);
    return -1;
  }
  if (def->max_width == 0 || def->max_height == 0) {
    snprintf(err, err_sz, "%s: image size limit must be > 0", what);
    return -1;
  }
  return 0;
}

static const char *const map_keys[] = {
    "image",           "resolution",  "origin", "negate",
    "occupied_thresh", "free_thresh", "mode",   NULL};

/* A map.yaml's keys as map_server takes them: keys it does not know (Nav2's
 * map_type, a tool's own) are ignored, their names kept in
 * def->ignored_keys for the caller to warn about; keys that are not strings
 * and duplicates are still refused. */
static int lenient_keys(pa_ydoc *d, yaml_node_t *root, pa_map_def *def,
                        char *err, size_t err_sz) {
  if (root->type != YAML_MAPPING_NODE)
    return pa_map_yerr(d, root, err, err_sz, "map: expected a mapping");
  for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
       p < root->data.mapping.pairs.top; p++) {
    yaml_node_t *k = pa_map_ynode(d, p->key);
    if (k->type != YAML_SCALAR_NODE)
      return pa_map_yerr(d, k, err, err_sz, "map: keys must be plain strings");
    const char *ks = (const char *)k->data.scalar.value;
    for (yaml_node_pair_t *q = root->data.mapping.pairs.start; q < p; q++) {
      yaml_node_t *k2 = pa_map_ynode(d, q->key);
      if (k2->type == YAML_SCALAR_NODE &&
          !strcmp((const char *)k2->data.scalar.value, ks))
        return pa_map_yerr(d, k, err, err_sz, "map: duplicate key '%s'",
                           pa_map_yq(d, ks));
    }
    bool known = false;
    for (int i = 0; map_keys[i]; i++)
      known = known || !strcmp(ks, map_keys[i]);
    if (known)
      continue;
    char *list = def->ignored_keys;
    size_t l = strlen(list), cap = sizeof def->ignored_keys;
    if (l + strlen(ks) + 8 < cap) {
      if (l)
        l += (size_t)snprintf(list + l, cap - l, ", ");
      for (const char *c = ks; *c; c++) /* printable in a log line */
        list[l++] = *c >= 0x20 && *c < 0x7f ? *c : '?';
      list[l] = '\0';
    } else if (l + 6 < cap && !strstr(list, "...")) {
      snprintf(list + l, cap - l, ", ...");
    }
  }
  return 0;
}

int pa_map_def_from_node(pa_ydoc *d, yaml_node_t *root, const char *base_dir,
                         pa_map_def *def, char *err, size_t err_sz) {
  return pa_map_def_from_node_x(d, root, base_dir, false, def, err, err_sz);
}

int pa_map_def_from_node_x(pa_ydoc *d, yaml_node_t *root, const char *base_dir,
                           bool lenient, pa_map_def *def, char *err,
                           size_t err_sz) {
  *def = pa_map_def_default();
  if (lenient ? lenient_keys(d, root, def, err, err_sz)
              : pa_map_ycheck_keys(d, root, "map", map_keys, err, err_sz))
    return -1;
  /* map_server requires all of these but mode. */
  static const char *const required[] = {"image",       "resolution",
                                         "origin",      "negate",
                                         "occupied_thresh", "free_thresh",
                                         NULL};
  for (int i = 0; required[i]; i++)
    if (!pa_map_yget(d, root, required[i]))
      return pa_map_yerr(
          d, root, err, err_sz, "map: missing key '%s'%s%s%s", required[i],
          def->ignored_keys[0] ? " (unknown keys: " : "",
          def->ignored_keys[0] ? pa_map_yq(d, def->ignored_keys) : "",
          def->ignored_keys[0] ? ")" : "");

  yaml_node_t *n;
  char img[PA_MAP_PATH_MAX];
  n = pa_map_yget(d, root, "image");
  if (pa_map_ystr(d, n, "image", img, sizeof img, err, err_sz)) return -1;
  if (!img[0]) return pa_map_yerr(d, n, err, err_sz, "image: empty path");
  if (pa_map_join(base_dir, img, def->image, sizeof def->image))
    return pa_map_yerr(d, n, err, err_sz, "image: path too long");

  n = pa_map_yget(d, root, "resolution");
  if (pa_map_ynum(d, n, "resolution", &def->resolution, err, err_sz)) return -1;
  if (!(def->resolution >= PA_MAP_RES_MIN && def->resolution <= PA_MAP_RES_MAX))
    return pa_map_yerr(d, n, err, err_sz,
                       "resolution must be in [%g, %g] m, got %g",
                       PA_MAP_RES_MIN, PA_MAP_RES_MAX, def->resolution);

  n = pa_map_yget(d, root, "origin");
  if (pa_map_ynums(d, n, "origin", def->origin, 3, 3, NULL, err, err_sz))
    return -1;

  n = pa_map_yget(d, root, "negate");
  bool neg;
  if (pa_map_ybool(d, n, "negate", &neg, err, err_sz)) return -1;
  def->negate = neg ? 1 : 0;

  n = pa_map_yget(d, root, "occupied_thresh");
  if (pa_map_ynum(d, n, "occupied_thresh", &def->occupied_thresh, err, err_sz))
    return -1;
  if (!(def->occupied_thresh >= 0 && def->occupied_thresh <= 1))
    return pa_map_yerr(d, n, err, err_sz,
                       "occupied_thresh must be in [0, 1], got %g",
                       def->occupied_thresh);
  n = pa_map_yget(d, root, "free_thresh");
  if (pa_map_ynum(d, n, "free_thresh", &def->free_thresh, err, err_sz))
    return -1;
  if (!(def->free_thresh >= 0 && def->free_thresh <= 1))
    return pa_map_yerr(d, n, err, err_sz, "free_thresh must be in [0, 1], got %g",
                       def->free_thresh);
  if (!(def->free_thresh < def->occupied_thresh))
    return pa_map_yerr(d, n, err, err_sz,
                       "free_thresh (%g) must be below occupied_thresh (%g)",
                       def->free_thresh, def->occupied_thresh);

  n = pa_map_yget(d, root, "mode");
  if (n) {
    char m[16];
    if (pa_map_ystr(d, n, "mode", m, sizeof m, err, err_sz) ||
        (strcmp(m, "trinary") && strcmp(m, "scale") && strcmp(m, "raw")))
      return pa_map_yerr(d, n, err, err_sz,
                         "mode: expected trinary, scale or raw");
    def->mode = !strcmp(m, "scale") ? PA_MAP_SCALE
                : !strcmp(m, "raw") ? PA_MAP_RAW
                                    : PA_MAP_TRINARY;
  }
  return pa_map_def_check(def, d->file, err, err_sz);
}

int pa_map_parse_yaml(const char *yaml_path, pa_map_def *def, char *err,
                      size_t err_sz) {
  return pa_map_parse_yaml_g(yaml_path, NULL, def, err, err_sz);
}

int pa_map_parse_yaml_g(const char *yaml_path, const pa_map_guard *g,
                        pa_map_def *def, char *err, size_t err_sz) {
  pa_ydoc d;
  if (!yaml_path || !yaml_path[0]) {
    snprintf(err, err_sz, "map yaml: empty path");
    return -1;
  }
  if (pa_map_ydoc_load_file(&d, yaml_path, g, err, err_sz))
    return -1;
  char dir[PA_MAP_PATH_MAX];
  pa_map_dirname(yaml_path, dir, sizeof dir);
  pa_map_def tmp = *def;
  int rc = pa_map_def_from_node_x(&d, pa_map_ydoc_root(&d), dir, true, &tmp,
                                  err, err_sz);
  pa_map_ydoc_free(&d);
  if (rc == 0) *def = tmp;
  return rc;
}

/* ---- image -> grid ------------------------------------------------------ */

/*
 * Occupancy from pixels, as ROS map_server's image_loader.cpp
 * (ros-planning/navigation, map_server/src/image_loader.cpp, loadMapFromFile
 * with MapMode; wiki.ros.org/map_server "Value Interpretation"):
 *  - colour_avg = mean of the channels; in trinary mode, or without alpha,
 *    alpha is averaged in too (SDL loads grey+alpha as RGBA, so we do);
 *  - negate: colour_avg = 255 - colour_avg;
 *  - raw: value = (unsigned char)colour_avg;
 *  - occ = (255 - colour_avg) / 255; occ > occupied_thresh -> 100,
 *    occ < free_thresh -> 0, else -1 in trinary or when alpha == 0 (the
 *    "alpha < 1.0" test on a byte), else 1 + 98 * (occ - free) / (occ_t - free)
 *    truncated (scale).
 * Deliberate differences: images without an alpha channel are opaque (ROS 1
 * reads the last byte of an RGB pixel, i.e. blue, as alpha; nav2 fixed that),
 * and raw values above 100 become -1 (nav2) instead of wrapping to negative.
 */
static int8_t pixel_value(const pa_map_def *def, int color_sum, int avg_channels,
                          bool transparent) {
  double color_avg = color_sum / (double)avg_channels;
  if (def->negate) color_avg = 255 - color_avg;
  if (def->mode == PA_MAP_RAW) {
    unsigned char v = (unsigned char)color_avg;
    return v <= 100 ? (int8_t)v : PA_CELL_UNKNOWN;
  }
  double occ = (255 - color_avg) / 255.0;
  if (occ > def->occupied_thresh) return PA_CELL_OCCUPIED;
  if (occ < def->free_thresh) return PA_CELL_FREE;
  if (def->mode == PA_MAP_TRINARY || transparent) return PA_CELL_UNKNOWN;
  double ratio = (occ - def->free_thresh) /
                 (def->occupied_thresh - def->free_thresh);
  return (int8_t)(unsigned char)(1 + 98 * ratio);
}

static int8_t occupied_min_for(const pa_map_def *def) {
  if (def->mode != PA_MAP_RAW) return PA_CELL_OCCUPIED;
  /* raw cells are percentages: blocked when value / 100 > occupied_thresh */
  double m = floor(def->occupied_thresh * 100.0) + 1;
  return (int8_t)(m > 100 ? 100 : m);
}

static int load_pixels(const pa_map_def *def, const char *path,
                       const pa_map_guard *guard, const unsigned char *buf,
                       size_t n, pa_grid *out, char *err, size_t err_sz) {
  int w, h, c;
  unsigned char *px = pa_map_img_load(path, guard, buf, n, def->max_width,
                                      def->max_height, &w, &h, &c, err, err_sz);
  if (!px) return -1;
  size_t cells_n = (size_t)w * (size_t)h;
  int8_t *cells = malloc(cells_n);
  if (!cells) {
    pa_map_img_free(px);
    snprintf(err, err_sz, "%s: out of memory for %d x %d cells",
             path ? path : "built-in map", w, h);
    return -1;
  }
  /* SDL (what map_server uses) expands grey+alpha to RGBA: 4 channels. */
  bool has_alpha = (c == 2 || c == 4);
  int nch = (c == 2) ? 4 : c;
  int avg = (def->mode == PA_MAP_TRINARY || !has_alpha) ? nch : nch - 1;
  /* The value depends only on (channel sum, alpha == 0): tabulate it. */
  int8_t lut[2][1021];
  for (int s = 0; s <= 255 * avg; s++) {
    lut[0][s] = pixel_value(def, s, avg, false);
    lut[1][s] = pixel_value(def, s, avg, true);
  }
  for (int j = 0; j < h; j++) {
    const unsigned char *row = px + (size_t)j * (size_t)w * (size_t)c;
    int8_t *dst = cells + (size_t)(h - 1 - j) * (size_t)w; /* row 0 = south */
    for (int i = 0; i < w; i++) {
      const unsigned char *p = row + (size_t)i * (size_t)c;
      int sum, alpha0 = 0;
      switch (c) {
      case 1: sum = p[0]; break;
      case 2:
        sum = (avg == 4) ? 3 * p[0] + p[1] : 3 * p[0];
        alpha0 = p[1] == 0;
        break;
      case 3: sum = p[0] + p[1] + p[2]; break;
      default:
        sum = p[0] + p[1] + p[2] + (avg == 4 ? p[3] : 0);
        alpha0 = p[3] == 0;
        break;
      }
      dst[i] = lut[alpha0][sum];
    }
  }
  pa_map_img_free(px);
  out->width = (uint32_t)w;
  out->height = (uint32_t)h;
  out->resolution = def->resolution;
  out->origin_x = def->origin[0];
  out->origin_y = def->origin[1];
  out->origin_yaw = def->origin[2];
  out->cells = cells;
  out->occupied_min = occupied_min_for(def);
  return 0;
}

static int default_def(pa_map_def *def, char *err, size_t err_sz) {
  pa_ydoc d;
  if (pa_map_ydoc_load_buf(&d, "built-in default.yaml", pa_map_default_yaml,
                           pa_map_default_yaml_size, err, err_sz))
    return -1;
  int rc = pa_map_def_from_node(&d, pa_map_ydoc_root(&d), "", def, err, err_sz);
  pa_map_ydoc_free(&d);
  def->image[0] = '\0';
  return rc;
}

int pa_map_load(const pa_map_def *def, pa_grid *out, char *err, size_t err_sz) {
  return pa_map_load_g(def, NULL, out, err, err_sz);
}

int pa_map_load_g(const pa_map_def *def, const pa_map_guard *g, pa_grid *out,
                  char *err, size_t err_sz) {
  memset(out, 0, sizeof *out);
  if (!def->image[0]) {
    /* The built-in map carries its own resolution and origin. */
    pa_map_def bd;
    if (default_def(&bd, err, err_sz)) return -1;
    bd.max_width = def->max_width;
    bd.max_height = def->max_height;
    if (pa_map_def_check(&bd, "built-in default map", err, err_sz)) return -1;
    return load_pixels(&bd, NULL, NULL, pa_map_default_png,
                       pa_map_default_png_size, out, err, err_sz);
  }
  if (pa_map_def_check(def, def->image, err, err_sz)) return -1;
  return load_pixels(def, def->image, g, NULL, 0, out, err, err_sz);
}

int pa_map_load_yaml(const char *yaml_path, pa_grid *out, char *err,
                     size_t err_sz) {
  return pa_map_load_yaml_g(yaml_path, NULL, out, err, err_sz);
}

int pa_map_load_yaml_g(const char *yaml_path, const pa_map_guard *g,
                       pa_grid *out, char *err, size_t err_sz) {
  return pa_map_load_yaml_gk(yaml_path, g, out, NULL, 0, err, err_sz);
}

int pa_map_load_yaml_gk(const char *yaml_path, const pa_map_guard *g,
                        pa_grid *out, char *ignored, size_t ignored_sz,
                        char *err, size_t err_sz) {
  pa_map_def def = pa_map_def_default();
  memset(out, 0, sizeof *out);
  if (ignored && ignored_sz)
    ignored[0] = 0;
  if (pa_map_parse_yaml_g(yaml_path, g, &def, err, err_sz))
    return -1;
  if (ignored && ignored_sz)
    snprintf(ignored, ignored_sz, "%s", def.ignored_keys);
  return pa_map_load_g(&def, g, out, err, err_sz);
}

int pa_map_load_default(pa_grid *out, char *err, size_t err_sz) {
  pa_map_def def = pa_map_def_default();
  return pa_map_load(&def, out, err, err_sz);
}

void pa_grid_free(pa_grid *g) {
  if (!g) return;
  free(g->cells);
  g->cells = NULL;
  g->width = g->height = 0;
}

/* ---- geometry ----------------------------------------------------------- */

bool pa_grid_world_to_cell(const pa_grid *g, double x, double y, int *cx,
                           int *cy) {
  double dx = x - g->origin_x, dy = y - g->origin_y, lx = dx, ly = dy;
  if (g->origin_yaw != 0.0) {
    double c = cos(g->origin_yaw), s = sin(g->origin_yaw);
    lx = c * dx + s * dy;
    ly = -s * dx + c * dy;
  }
  double fx = floor(lx / g->resolution), fy = floor(ly / g->resolution);
  /* Also rejects NaN. */
  if (!(fx >= 0 && fx < (double)g->width && fy >= 0 &&
        fy < (double)g->height))
    return false;
  *cx = (int)fx;
  *cy = (int)fy;
  return true;
}

void pa_grid_cell_center(const pa_grid *g, int cx, int cy, double *x,
                         double *y) {
  double lx = (cx + 0.5) * g->resolution, ly = (cy + 0.5) * g->resolution;
  if (g->origin_yaw != 0.0) {
    double c = cos(g->origin_yaw), s = sin(g->origin_yaw);
    double rx = c * lx - s * ly, ry = s * lx + c * ly;
    lx = rx;
    ly = ry;
  }
  *x = g->origin_x + lx;
  *y = g->origin_y + ly;
}

bool pa_grid_blocked(const pa_grid *g, int cx, int cy, bool unknown_blocks) {
  if (cx < 0 || cy < 0 || (uint32_t)cx >= g->width ||
      (uint32_t)cy >= g->height)
    return true;
  int8_t v = g->cells[(size_t)cy * g->width + (size_t)cx];
  if (v < 0) return unknown_blocks;
  return v >= g->occupied_min;
}

/* ---- saving ------------------------------------------------------------- */

static int write_pgm(const char *path, int w, int h, const unsigned char *grey) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  fprintf(f, "P5\n%d %d\n255\n", w, h);
  size_t n = (size_t)w * (size_t)h;
  size_t wr = fwrite(grey, 1, n, f);
  if (fclose(f) != 0 || wr != n) return -1;
  return 0;
}

static const char *ext_of(const char *path) {
  const char *dot = strrchr(path, '.');
  const char *slash = strrchr(path, '/');
  return (dot && (!slash || dot > slash)) ? dot + 1 : "";
}

int pa_map_save(const pa_grid *g, const char *yaml_path, const char *png_path,
                char *err, size_t err_sz) {
  return pa_map_save_named(g, yaml_path, png_path, NULL, err, err_sz);
}

int pa_map_save_named(const pa_grid *g, const char *yaml_path,
                      const char *png_path, const char *image_name, char *err,
                      size_t err_sz) {
  if (!g || !g->cells || !g->width || !g->height) {
    snprintf(err, err_sz, "save: empty grid");
    return -1;
  }
  if (g->width > INT_MAX / 4 || g->height > INT_MAX / 4) {
    snprintf(err, err_sz, "save: grid too large");
    return -1;
  }
  const char *ext = ext_of(image_name ? image_name : png_path);
  if (strcasecmp(ext, "png") && strcasecmp(ext, "pgm") &&
      strcasecmp(ext, "bmp")) {
    snprintf(err, err_sz, "%s: image must end in .png, .pgm or .bmp", png_path);
    return -1;
  }
  size_t n = (size_t)g->width * g->height;
  /* Trinary (map_saver's 0 / 254 / 205) when the cells allow it; otherwise
   * raw with negate 1 (grey = 255 - value, unknown = 0) keeps every value. */
  bool trinary = g->occupied_min >= 1 && g->occupied_min <= 100;
  for (size_t i = 0; i < n && trinary; i++) {
    int8_t v = g->cells[i];
    if (v != PA_CELL_FREE && v != PA_CELL_OCCUPIED && v != PA_CELL_UNKNOWN)
      trinary = false;
  }
  if (!trinary && g->occupied_min < 1) {
    snprintf(err, err_sz, "save: occupied_min %d cannot be represented",
             g->occupied_min);
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    if (g->cells[i] < -1 || g->cells[i] > 100) {
      snprintf(err, err_sz, "save: cell value %d out of -1..100", g->cells[i]);
      return -1;
    }
  unsigned char *grey = malloc(n);
  if (!grey) {
    snprintf(err, err_sz, "save: out of memory");
    return -1;
  }
  for (uint32_t y = 0; y < g->height; y++) {
    const int8_t *src = g->cells + (size_t)y * g->width;
    unsigned char *dst = grey + (size_t)(g->height - 1 - y) * g->width;
    for (uint32_t x = 0; x < g->width; x++) {
      int8_t v = src[x];
      if (trinary)
        dst[x] = v == PA_CELL_OCCUPIED ? 0 : v == PA_CELL_FREE ? 254 : 205;
      else
        dst[x] = v < 0 ? 0 : (unsigned char)(255 - v);
    }
  }
  int w = (int)g->width, h = (int)g->height, rc;
  if (!strcasecmp(ext, "png"))
    rc = pa_map_img_write_png(png_path, w, h, grey);
  else if (!strcasecmp(ext, "bmp"))
    rc = pa_map_img_write_bmp(png_path, w, h, grey);
  else
    rc = write_pgm(png_path, w, h, grey);
  free(grey);
  if (rc) {
    snprintf(err, err_sz, "%s: cannot write image: %s", png_path,
             strerror(errno));
    return -1;
  }

  /* The yaml names the image relative to itself when they share a directory. */
  char ydir[PA_MAP_PATH_MAX], idir[PA_MAP_PATH_MAX], img[PA_MAP_PATH_MAX];
  pa_map_dirname(yaml_path, ydir, sizeof ydir);
  pa_map_dirname(png_path, idir, sizeof idir);
  if (image_name) {
    snprintf(img, sizeof img, "%s", image_name);
  } else if (!strcmp(ydir, idir)) {
    const char *slash = strrchr(png_path, '/');
    snprintf(img, sizeof img, "%s", slash ? slash + 1 : png_path);
  } else if (!realpath(png_path, img)) {
    snprintf(err, err_sz, "%s: %s", png_path, strerror(errno));
    return -1;
  }
  double occ_t = 0.65, free_t = 0.196;
  if (!trinary) {
    /* raw: blocked iff value > 100 * occupied_thresh, i.e. >= occupied_min */
    occ_t = (g->occupied_min - 1) / 100.0 + 0.005;
    free_t = occ_t / 2;
  }
  FILE *f = fopen(yaml_path, "w");
  if (!f) {
    snprintf(err, err_sz, "%s: cannot write: %s", yaml_path, strerror(errno));
    return -1;
  }
  /* Quote the image name so odd characters survive YAML. */
  fprintf(f, "image: \"");
  for (const char *p = img; *p; p++) {
    if (*p == '"' || *p == '\\') fputc('\\', f);
    fputc(*p, f);
  }
  fprintf(f, "\"\n");
  fprintf(f, "resolution: %.17g\n", g->resolution);
  fprintf(f, "origin: [%.17g, %.17g, %.17g]\n", g->origin_x, g->origin_y,
          g->origin_yaw);
  fprintf(f, "negate: %d\n", trinary ? 0 : 1);
  fprintf(f, "occupied_thresh: %.17g\n", occ_t);
  fprintf(f, "free_thresh: %.17g\n", free_t);
  fprintf(f, "mode: %s\n", trinary ? "trinary" : "raw");
  if (fclose(f) != 0) {
    snprintf(err, err_sz, "%s: write error: %s", yaml_path, strerror(errno));
    return -1;
  }
  return 0;
}

/* ---- robots, default world, flags --------------------------------------- */

/* Every property at its row's default (pa_props.h). */
pa_robot_def pa_robot_def_default(void) {
  pa_robot_def r;
  memset(&r, 0, sizeof r);
  snprintf(r.name, sizeof r.name, "robot0");
  pa_prop_def_defaults(&r, PA_PK_ROBOT);
  return r;
}

int pa_world_default(pa_world *w, char *err, size_t err_sz) {
  memset(w, 0, sizeof *w);
  w->map = pa_map_def_default();
  w->unknown_blocks = true;
  w->robots = calloc(1, sizeof *w->robots);
  if (!w->robots) {
    snprintf(err, err_sz, "default world: out of memory");
    return -1;
  }
  w->robots[0] = pa_robot_def_default();
  w->robots[0].place_near_origin = true;
  w->robot_count = 1;
  return 0;
}

void pa_world_free(pa_world *w) {
  if (!w) return;
  free(w->robots);
  free(w->obstacles);
  w->robots = NULL;
  w->obstacles = NULL;
  w->robot_count = w->obstacle_count = 0;
}

pa_map_flags pa_map_flags_default(void) {
  return (pa_map_flags){.map_resolution = 0.05,
                        .map_occupied_thresh = 0.65,
                        .map_free_thresh = 0.196};
}

/* "x,y,yaw" -> three finite numbers, each within the map origin's bounds. */
static int parse_pose(const char *s, double p[3], char *err, size_t err_sz) {
  const char *c = s;
  for (int i = 0; i < 3; i++) {
    char *end;
    errno = 0;
    p[i] = strtod(c, &end);
    bool sep_ok = i < 2 ? *end == ',' : *end == '\0';
    if (end == c || !sep_ok || errno == ERANGE || !isfinite(p[i]) ||
        fabs(p[i]) > PA_MAP_ORIGIN_MAX) {
      snprintf(err, err_sz,
               "--robot_pose: expected x,y,yaw (three numbers [m, m, rad], "
               "|x|, |y| <= %g), got '%s'",
               PA_MAP_ORIGIN_MAX, s);
      return -1;
    }
    c = end + 1;
  }
  return 0;
}

/* --robot_pose and --map_unknown over the world the other flags made. */
static int apply_overrides(const pa_map_flags *f, pa_world *w, char *err,
                           size_t err_sz) {
  if (f->map_unknown && f->map_unknown[0]) {
    if (!strcmp(f->map_unknown, "blocked")) {
      w->unknown_blocks = true;
    } else if (!strcmp(f->map_unknown, "free")) {
      w->unknown_blocks = false;
    } else {
      snprintf(err, err_sz, "--map_unknown: expected blocked or free, got '%s'",
               f->map_unknown);
      return -1;
    }
  }
  if (f->robot_pose && f->robot_pose[0]) {
    double p[3];
    if (parse_pose(f->robot_pose, p, err, err_sz))
      return -1;
    if (w->robot_count == 0) {
      snprintf(err, err_sz, "--robot_pose: the world has no robot");
      return -1;
    }
    w->robots[0].x = p[0];
    w->robots[0].y = p[1];
    w->robots[0].theta = p[2];
    w->robots[0].place_near_origin = false;
  }
  return 0;
}

static int resolve_map(const pa_map_flags *f, pa_world *w, char *err,
                       size_t err_sz);

int pa_map_flags_resolve(const pa_map_flags *f, pa_world *w, char *err,
                         size_t err_sz) {
  if (resolve_map(f, w, err, err_sz))
    return -1;
  if (apply_overrides(f, w, err, err_sz)) {
    pa_world_free(w);
    return -1;
  }
  return 0;
}

static int resolve_map(const pa_map_flags *f, pa_world *w, char *err,
                       size_t err_sz) {
  memset(w, 0, sizeof *w);
  if (f->world && f->world[0]) return pa_world_load(f->world, w, err, err_sz);
  if (f->world && !f->world[0]) {
    snprintf(err, err_sz, "--world: empty path");
    return -1;
  }
  if (pa_world_default(w, err, err_sz)) return -1;
  if (!f->map_yaml) return 0;
  pa_map_def def = pa_map_def_default();
  if (f->map_yaml[0]) {
    if (pa_map_parse_yaml(f->map_yaml, &def, err, err_sz)) goto fail;
  } else {
    if (!f->map_image || !f->map_image[0]) {
      snprintf(err, err_sz, "--map_yaml \"\" needs --map_image PATH");
      goto fail;
    }
    if (strlen(f->map_image) >= sizeof def.image) {
      snprintf(err, err_sz, "--map_image: path too long");
      goto fail;
    }
    snprintf(def.image, sizeof def.image, "%s", f->map_image);
    def.resolution = f->map_resolution;
    def.origin[0] = f->map_origin_x;
    def.origin[1] = f->map_origin_y;
    def.origin[2] = 0.0;
    if (f->map_negate != 0 && f->map_negate != 1) {
      snprintf(err, err_sz, "--map_negate must be 0 or 1, got %ld",
               f->map_negate);
      goto fail;
    }
    def.negate = (int)f->map_negate;
    def.occupied_thresh = f->map_occupied_thresh;
    def.free_thresh = f->map_free_thresh;
    def.mode = PA_MAP_TRINARY;
    if (pa_map_def_check(&def, "--map_image flags", err, err_sz)) goto fail;
  }
  w->map = def;
  return 0;
fail:
  pa_world_free(w);
  return -1;
}
