/* scene.c - the world as GL geometry: floor, walls merged from occupied
 * cells, obstacles (one static buffer), robots drawn per frame from unit
 * meshes (matrices, GPU buffers and shaders: gl_util.c). */
#include "render_int.h"
#include "render_parts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CYL_SEGMENTS 24
/* a robot's cylinders at each level of detail */
static const int lod_sides[PA_RENDER_LODS] = {CYL_SEGMENTS, 12, 8};

/* ---- CPU meshes --------------------------------------------------------- */

void pa_render_mesh_free(rmesh *m) {
  free(m->v);
  memset(m, 0, sizeof *m);
}

rvertex *pa_render_mesh_next(rmesh *m) {
  if (m->oom)
    return NULL;
  if (m->n == m->cap) {
    uint32_t cap = m->cap ? m->cap * 2 : 1024;
    rvertex *v = realloc(m->v, (size_t)cap * sizeof *v);
    if (!v) {
      m->oom = true;
      return NULL;
    }
    m->v = v, m->cap = cap;
  }
  return &m->v[m->n++];
}

static void mesh_push(rmesh *m, const double p[3], const double n[3],
                      const uint8_t rgb[3], uint8_t material) {
  rvertex *v = pa_render_mesh_next(m);
  if (!v)
    return;
  for (int i = 0; i < 3; i++) {
    v->pos[i] = (float)p[i];
    v->normal[i] = (float)n[i];
    v->colour[i] = rgb[i];
  }
  v->colour[3] = material;
}

static void mesh_tri(rmesh *m, const double a[3], const double b[3],
                     const double c[3], const double n[3],
                     const uint8_t rgb[3], uint8_t material) {
  mesh_push(m, a, n, rgb, material);
  mesh_push(m, b, n, rgb, material);
  mesh_push(m, c, n, rgb, material);
}

/* Two counter-clockwise triangles (seen from the normal side). */
static void mesh_quad(rmesh *m, const double a[3], const double b[3],
                      const double c[3], const double d[3], const double n[3],
                      const uint8_t rgb[3], uint8_t material) {
  mesh_tri(m, a, b, c, n, rgb, material);
  mesh_tri(m, a, c, d, n, rgb, material);
}

void pa_render_mesh_box(rmesh *m, const double c[3], const double half[3],
                        double yaw, const uint8_t rgb[3], bool bottom) {
  double cs = cos(yaw), sn = sin(yaw);
  double p[8][3];
  for (int i = 0; i < 8; i++) {
    double lx = (i & 1) ? half[0] : -half[0];
    double ly = (i & 2) ? half[1] : -half[1];
    double lz = (i & 4) ? half[2] : -half[2];
    p[i][0] = c[0] + cs * lx - sn * ly;
    p[i][1] = c[1] + sn * lx + cs * ly;
    p[i][2] = c[2] + lz;
  }
  double ex[3] = {cs, sn, 0}, ey[3] = {-sn, cs, 0};
  double nx[3] = {-ex[0], -ex[1], 0}, ny[3] = {-ey[0], -ey[1], 0};
  static const double up[3] = {0, 0, 1}, down[3] = {0, 0, -1};
  mesh_quad(m, p[1], p[3], p[7], p[5], ex, rgb, 255); /* +x */
  mesh_quad(m, p[2], p[0], p[4], p[6], nx, rgb, 255); /* -x */
  mesh_quad(m, p[3], p[2], p[6], p[7], ey, rgb, 255); /* +y */
  mesh_quad(m, p[0], p[1], p[5], p[4], ny, rgb, 255); /* -y */
  mesh_quad(m, p[4], p[5], p[7], p[6], up, rgb, 255); /* top */
  if (bottom)
    mesh_quad(m, p[0], p[2], p[3], p[1], down, rgb, 255);
}

void pa_render_mesh_cylinder(rmesh *m, const double c[3], double r, double h,
                             const uint8_t rgb[3], int segments) {
  static const double up[3] = {0, 0, 1}, down[3] = {0, 0, -1};
  double top[3] = {c[0], c[1], c[2] + h};
  for (int i = 0; i < segments; i++) {
    double a0 = 2 * M_PI * i / segments, a1 = 2 * M_PI * (i + 1) / segments;
    double c0 = cos(a0), s0 = sin(a0), c1 = cos(a1), s1 = sin(a1);
    double b0[3] = {c[0] + r * c0, c[1] + r * s0, c[2]};
    double b1[3] = {c[0] + r * c1, c[1] + r * s1, c[2]};
    double t0[3] = {b0[0], b0[1], c[2] + h};
    double t1[3] = {b1[0], b1[1], c[2] + h};
    double n0[3] = {c0, s0, 0}, n1[3] = {c1, s1, 0};
    /* side with smooth normals */
    mesh_push(m, b0, n0, rgb, 255);
    mesh_push(m, b1, n1, rgb, 255);
    mesh_push(m, t1, n1, rgb, 255);
    mesh_push(m, b0, n0, rgb, 255);
    mesh_push(m, t1, n1, rgb, 255);
    mesh_push(m, t0, n0, rgb, 255);
    mesh_tri(m, top, t0, t1, up, rgb, 255);
    mesh_tri(m, c, b1, b0, down, rgb, 255);
  }
}

/* A unit sphere at the origin, smooth normals (the SSL ball). */
static void mesh_sphere(rmesh *m, const uint8_t rgb[3], int rings,
                        int segments) {
  for (int i = 0; i < rings; i++) {
    double f0 = M_PI * i / rings - M_PI_2, f1 = M_PI * (i + 1) / rings - M_PI_2;
    for (int j = 0; j < segments; j++) {
      double t0 = 2 * M_PI * j / segments, t1 = 2 * M_PI * (j + 1) / segments;
      double a[3] = {cos(f0) * cos(t0), cos(f0) * sin(t0), sin(f0)};
      double b[3] = {cos(f0) * cos(t1), cos(f0) * sin(t1), sin(f0)};
      double c[3] = {cos(f1) * cos(t1), cos(f1) * sin(t1), sin(f1)};
      double d[3] = {cos(f1) * cos(t0), cos(f1) * sin(t0), sin(f1)};
      mesh_push(m, a, a, rgb, 255);
      mesh_push(m, b, b, rgb, 255);
      mesh_push(m, c, c, rgb, 255);
      mesh_push(m, a, a, rgb, 255);
      mesh_push(m, c, c, rgb, 255);
      mesh_push(m, d, d, rgb, 255);
    }
  }
}

/* ---- scene -------------------------------------------------------------- */

/* Outside the grid counts as blocked: nobody stands there to see a face. */
static bool cell_blocks(const pa_grid *g, int64_t x, int64_t y) {
  if (x < 0 || y < 0 || x >= g->width || y >= g->height)
    return true;
  int8_t v = g->cells[(size_t)y * g->width + (size_t)x];
  return v < 0 || v >= g->occupied_min;
}

/* Cell (x, y) is blocked and its neighbour (x + dx, y + dy) is not: the
 * face between them is seen. */
static bool face_exposed(const pa_grid *g, int64_t x, int64_t y, int dx,
                         int dy) {
  return cell_blocks(g, x, y) && !cell_blocks(g, x + dx, y + dy);
}

static void grid_to_world(const pa_grid *g, double lx, double ly, double *wx,
                          double *wy) {
  double c = cos(g->origin_yaw), s = sin(g->origin_yaw);
  *wx = g->origin_x + c * lx - s * ly;
  *wy = g->origin_y + s * lx + c * ly;
}

/* A vertical wall face between grid-frame points a and b (metres), bottom
 * edge a -> b running left to right as seen from the side it faces. */
static void wall_face(rmesh *m, const pa_grid *g, double ax, double ay,
                      double bx, double by, const uint8_t rgb[3]) {
  double p[4][3] = {{ax, ay, 0},
                    {bx, by, 0},
                    {bx, by, PA_RENDER_WALL_HEIGHT},
                    {ax, ay, PA_RENDER_WALL_HEIGHT}};
  for (int i = 0; i < 4; i++)
    grid_to_world(g, p[i][0], p[i][1], &p[i][0], &p[i][1]);
  /* outward normal: the edge direction turned clockwise */
  double n[3] = {p[1][1] - p[0][1], -(p[1][0] - p[0][0]), 0};
  double l = hypot(n[0], n[1]);
  n[0] /= l, n[1] /= l;
  mesh_quad(m, p[0], p[1], p[2], p[3], n, rgb, 255);
}

/* Whether the blocked cell at run position r of grid line k faces a free
 * one at d (-1 or 1) across the line: rows are y = k, columns x = k. */
static bool line_exposed(const pa_grid *g, bool rows, int64_t k, int64_t r,
                         int d) {
  return rows ? face_exposed(g, r, k, 0, d) : face_exposed(g, k, r, d, 0);
}

/* The side faces along every grid row (rows) or column, on both sides of
 * each line, merged into runs; side 0 faces -y (rows) or -x. */
static void wall_sides(rmesh *m, const pa_grid *g, bool rows,
                       const uint8_t rgb[3]) {
  const int64_t nk = rows ? g->height : g->width;
  const int64_t nr = rows ? g->width : g->height;
  const double res = g->resolution;
  for (int64_t k = 0; k <= nk; k++)
    for (int side = 0; side < 2; side++) {
      int64_t bk = side == 0 ? k : k - 1; /* the blocked line */
      int d = side == 0 ? -1 : 1;         /* towards the free one */
      for (int64_t r = 0; r < nr;) {
        if (!line_exposed(g, rows, bk, r, d)) {
          r++;
          continue;
        }
        int64_t r1 = r + 1;
        while (r1 < nr && line_exposed(g, rows, bk, r1, d))
          r1++;
        /* run ends in grid metres, ordered so that the face looks out */
        bool forward = rows == (side == 0);
        double a = (forward ? r : r1) * res, b = (forward ? r1 : r) * res;
        double l = k * res;
        if (rows)
          wall_face(m, g, a, l, b, l, rgb);
        else
          wall_face(m, g, l, a, l, b, rgb);
        r = r1;
      }
    }
}

/* Walls: side faces only where a blocked cell meets a free one, merged
 * into runs along each grid line (no hidden faces, so little overdraw:
 * llvmpipe's cost is mostly pixels), plus top faces from a greedy merge of
 * blocked cells into rectangles (seen by the viewer). */
static int build_walls(rmesh *m, const pa_grid *g, uint32_t *boxes) {
  static const uint8_t wall[3] = {(uint8_t)(0.86 * 255), (uint8_t)(0.80 * 255),
                                  (uint8_t)(0.68 * 255)};
  static const double up[3] = {0, 0, 1};
  const int64_t W = g->width, H = g->height;
  const double res = g->resolution;
  wall_sides(m, g, true, wall);  /* south- and north-facing */
  wall_sides(m, g, false, wall); /* west- and east-facing */
  /* tops: grow each unvisited blocked cell into the widest run, then as
   * many rows as the whole run stays blocked */
  size_t n = (size_t)W * (size_t)H;
  uint8_t *done = calloc(n ? n : 1, 1);
  if (!done)
    return -1;
  for (int64_t y = 0; y < H; y++)
    for (int64_t x = 0; x < W; x++) {
      size_t i = (size_t)y * (size_t)W + (size_t)x;
      if (done[i] || !cell_blocks(g, x, y))
        continue;
      int64_t w = 1;
      while (x + w < W && !done[i + (size_t)w] && cell_blocks(g, x + w, y))
        w++;
      int64_t h = 1;
      for (; y + h < H; h++) {
        size_t row = (size_t)(y + h) * (size_t)W;
        bool ok = true;
        for (int64_t k = 0; k < w && ok; k++)
          ok = !done[row + (size_t)(x + k)] && cell_blocks(g, x + k, y + h);
        if (!ok)
          break;
      }
      for (int64_t r = 0; r < h; r++)
        memset(done + (size_t)(y + r) * (size_t)W + (size_t)x, 1, (size_t)w);
      double p[4][3] = {{x * res, y * res, PA_RENDER_WALL_HEIGHT},
                        {(x + w) * res, y * res, PA_RENDER_WALL_HEIGHT},
                        {(x + w) * res, (y + h) * res, PA_RENDER_WALL_HEIGHT},
                        {x * res, (y + h) * res, PA_RENDER_WALL_HEIGHT}};
      for (int k = 0; k < 4; k++)
        grid_to_world(g, p[k][0], p[k][1], &p[k][0], &p[k][1]);
      mesh_quad(m, p[0], p[1], p[2], p[3], up, wall, 255);
      (*boxes)++;
    }
  free(done);
  return 0;
}

/* The floor's checkerboard: 1 m squares in two faint greys (helps depth
 * perception). */
static const uint8_t floor_tile[2][3] = {
    {(uint8_t)(0.56 * 255), (uint8_t)(0.56 * 255), (uint8_t)(0.54 * 255)},
    {(uint8_t)(0.50 * 255), (uint8_t)(0.50 * 255), (uint8_t)(0.485 * 255)}};
#define FLOOR_QUAD 32 /* squares a side of the floor program's quads */
/* [px] views at most this wide draw the floor program's quads: on llvmpipe
 * a small view's floor cost is its squares' thin far triangles, a large
 * one's its pixels, which the floor program shades dearer (the pattern and
 * the fog per pixel). bench-atlas, one context, CPU a frame against the
 * squares: 64 px -10 %, 84 px -8 to -11 %, 128 px -5 %, 168 px +1 %, 240
 * px +4 %; bench-render's 640 x 480 camera +11 to +13 %. */
#define FLOOR_QUADS_MAX_W 128

/* A square's side [m]: 1, more on huge maps (their square count bounded). */
static double floor_step(const pa_grid *g) {
  double w = g->width * g->resolution, h = g->height * g->resolution;
  return w * h > 40000 ? ceil(sqrt(w * h / 40000)) : 1.0;
}

/* The checkerboard as geometry, a quad a square, for the lit program
 * (its fragment shader has no pattern code); with per > 1, quads of per x
 * per squares for the floor program, which draws the pattern. */
static void build_floor(rmesh *m, const pa_grid *g, uint32_t per) {
  static const double up[3] = {0, 0, 1};
  double w = g->width * g->resolution, h = g->height * g->resolution;
  double step = floor_step(g) * per;
  for (uint32_t ty = 0; ty * step < h; ty++)
    for (uint32_t tx = 0; tx * step < w; tx++) {
      double x0 = tx * step, y0 = ty * step;
      double x1 = fmin(x0 + step, w), y1 = fmin(y0 + step, h);
      double p[4][3] = {{x0, y0, 0}, {x1, y0, 0}, {x1, y1, 0}, {x0, y1, 0}};
      for (int i = 0; i < 4; i++)
        grid_to_world(g, p[i][0], p[i][1], &p[i][0], &p[i][1]);
      mesh_quad(m, p[0], p[1], p[2], p[3], up, floor_tile[(tx + ty) & 1], 255);
    }
}

/* The floor program's uniforms that do not change between frames (they
 * stay in the program): the identity model, the map's frame, a square's
 * side, and the squares' colours (the program lights them as the lit one
 * lights a face up: shade_of, render/gl_util.c). */
static void floor_constants(const rprogram *p, const pa_grid *g) {
  float model[16];
  pa_render_mat_identity(model);
  glUseProgram(p->prog);
  glUniformMatrix4fv(p->u_model, 1, GL_FALSE, model);
  glUniform4f(p->u_grid, (float)g->origin_x, (float)g->origin_y,
              (float)cos(g->origin_yaw), (float)sin(g->origin_yaw));
  glUniform1f(p->u_step, (float)floor_step(g));
  GLint at[2] = {p->u_tile0, p->u_tile1};
  for (int k = 0; k < 2; k++)
    glUniform3f(at[k], floor_tile[k][0] / 255.0f, floor_tile[k][1] / 255.0f,
                floor_tile[k][2] / 255.0f);
  glUseProgram(0);
}

static void colour3(uint8_t out[3], const uint8_t in[4]) {
  out[0] = in[0], out[1] = in[1], out[2] = in[2];
}

static void build_obstacles(rmesh *m, const pa_obstacle_info *o, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    if (!o[i].active)
      continue;
    uint8_t rgb[3];
    colour3(rgb, o[i].colour);
    double h = o[i].height > 0 ? o[i].height : 0.5;
    if (o[i].shape == PA_SHAPE_CIRCLE) {
      double c[3] = {o[i].x, o[i].y, 0};
      pa_render_mesh_cylinder(m, c, o[i].radius, h, rgb, CYL_SEGMENTS);
    } else {
      double c[3] = {o[i].x, o[i].y, h / 2};
      double half[3] = {o[i].size_x / 2, o[i].size_y / 2, h / 2};
      pa_render_mesh_box(m, c, half, o[i].theta, rgb, false);
    }
  }
}

/* ---- soft shadows ------------------------------------------------------ */

/* Floor shadows are blended on top of the floor (and the SSL carpet, and
 * under its lines): opaque in the middle, fading to nothing over a margin,
 * shifted away from the key light by a share of the caster's height. A
 * blob per caster costs a few triangles, far cheaper on llvmpipe than a
 * shadow map. */
#define SHADOW_Z 0.0022  /* [m] above the carpet, below the lines */
#define BALL_R 0.021335  /* [m] a golf ball, as pa-sim's */
#define SHADOW_ALPHA 110 /* of 255 in the middle */
static const double key_light[3] = {0.35, 0.55, 0.76};

/* Towards the key light, a unit vector: from the north-east-ish, above,
 * so every wall direction gets its shade. */
static void key_light_unit(double l[3]) {
  l[0] = key_light[0], l[1] = key_light[1], l[2] = key_light[2];
  pa_render_normalize3(l);
}

static void shadow_offset(double h, double *dx, double *dy) {
  *dx = -key_light[0] / key_light[2] * h * 0.35;
  *dy = -key_light[1] / key_light[2] * h * 0.35;
}

/* A convex polygon c[n] (counter-clockwise from above) filled at full
 * shadow, and a border out to o[n] fading to zero. */
static void mesh_soft_poly(rmesh *m, const double (*c)[3], const double (*o)[3],
                           int n) {
  static const uint8_t black[3] = {0, 0, 0};
  static const double up[3] = {0, 0, 1};
  for (int i = 1; i + 1 < n; i++) {
    mesh_push(m, c[0], up, black, SHADOW_ALPHA);
    mesh_push(m, c[i], up, black, SHADOW_ALPHA);
    mesh_push(m, c[i + 1], up, black, SHADOW_ALPHA);
  }
  for (int i = 0; i < n; i++) {
    int j = (i + 1) % n;
    mesh_push(m, c[i], up, black, SHADOW_ALPHA);
    mesh_push(m, o[i], up, black, 0);
    mesh_push(m, o[j], up, black, 0);
    mesh_push(m, c[i], up, black, SHADOW_ALPHA);
    mesh_push(m, o[j], up, black, 0);
    mesh_push(m, c[j], up, black, SHADOW_ALPHA);
  }
}

#define SOFT_DISC_N 24

/* A soft disc of n sides (n <= SOFT_DISC_N). */
static void mesh_soft_disc(rmesh *m, double x, double y, double z, double r,
                           double margin, int n) {
  double c[SOFT_DISC_N][3], o[SOFT_DISC_N][3];
  for (int i = 0; i < n; i++) {
    double a = 2 * M_PI * i / n, ca = cos(a), sa = sin(a);
    c[i][0] = x + r * ca, c[i][1] = y + r * sa, c[i][2] = z;
    o[i][0] = x + (r + margin) * ca, o[i][1] = y + (r + margin) * sa;
    o[i][2] = z;
  }
  mesh_soft_poly(m, (const double(*)[3])c, (const double(*)[3])o, n);
}

static void build_shadows(rmesh *m, const pa_obstacle_info *o, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    if (!o[i].active)
      continue;
    double h = o[i].height > 0 ? o[i].height : 0.5, dx, dy;
    shadow_offset(h, &dx, &dy);
    double margin = 0.06 + 0.25 * fmin(h, 2.0);
    if (o[i].shape == PA_SHAPE_CIRCLE) {
      mesh_soft_disc(m, o[i].x + dx, o[i].y + dy, SHADOW_Z, o[i].radius, margin,
                     SOFT_DISC_N);
      continue;
    }
    double cs = cos(o[i].theta), sn = sin(o[i].theta);
    double c[4][3], out[4][3];
    static const int sx[4] = {-1, 1, 1, -1}, sy[4] = {-1, -1, 1, 1};
    for (int k = 0; k < 4; k++) {
      double lx = sx[k] * o[i].size_x / 2, ly = sy[k] * o[i].size_y / 2;
      double mx = lx + sx[k] * margin, my = ly + sy[k] * margin;
      c[k][0] = o[i].x + dx + cs * lx - sn * ly;
      c[k][1] = o[i].y + dy + sn * lx + cs * ly;
      out[k][0] = o[i].x + dx + cs * mx - sn * my;
      out[k][1] = o[i].y + dy + sn * mx + cs * my;
      c[k][2] = out[k][2] = SHADOW_Z;
    }
    mesh_soft_poly(m, (const double(*)[3])c, (const double(*)[3])out, 4);
  }
}

/* ---- chunks: static geometry bucketed by area for culling ---------------- */

#define CHUNK_MIN 2.0     /* [m] */
#define CHUNK_MAX_N 4096  /* chunks per layer */

/* Buckets the triangles of src (layer 0: walls and obstacles; layer 1:
 * floor) by the chunk holding their centroid, appending them to out in
 * chunk order, and records each chunk's range and bounding box. */
static int chunk_layer(pa_render_scene *s, const rmesh *src, uint8_t layer,
                       rmesh *out) {
  double cs = s->chunk_size;
  uint32_t nx = s->chunk_nx, ny = s->chunk_ny, n = nx * ny;
  uint32_t ntri = src->n / 3;
  uint32_t *cell = malloc((ntri ? ntri : 1) * sizeof *cell);
  uint32_t *count = calloc(n + 1, sizeof *count);
  if (!cell || !count) {
    free(cell), free(count);
    return -1;
  }
  for (uint32_t t = 0; t < ntri; t++) {
    const rvertex *v = &src->v[t * 3];
    double cx = (v[0].pos[0] + v[1].pos[0] + v[2].pos[0]) / 3.0;
    double cy = (v[0].pos[1] + v[1].pos[1] + v[2].pos[1]) / 3.0;
    double fx = floor((cx - s->chunk_x0) / cs), fy = floor((cy - s->chunk_y0) / cs);
    uint32_t ix = fx < 0 ? 0 : fx >= nx ? nx - 1 : (uint32_t)fx;
    uint32_t iy = fy < 0 ? 0 : fy >= ny ? ny - 1 : (uint32_t)fy;
    cell[t] = iy * nx + ix;
    count[cell[t]]++;
  }
  /* counting sort of triangle indices by chunk */
  uint32_t *idx = malloc((ntri ? ntri : 1) * sizeof *idx);
  if (!idx) {
    free(cell), free(count);
    return -1;
  }
  uint32_t acc = 0;
  for (uint32_t c = 0; c <= n; c++) {
    uint32_t k = count[c];
    count[c] = acc;
    acc += k;
  }
  for (uint32_t t = 0; t < ntri; t++)
    idx[count[cell[t]]++] = t;
  /* count[c] is now the end of chunk c's run in idx */
  uint32_t at = 0;
  for (uint32_t c = 0; c < n; c++) {
    uint32_t end_c = count[c];
    if (at == end_c)
      continue;
    rchunk *ch = &s->chunks[s->n_chunks++];
    ch->first = (GLint)out->n;
    ch->count = 0;
    ch->layer = layer;
    ch->box[0] = ch->box[1] = INFINITY;
    ch->box[2] = ch->box[3] = -INFINITY;
    ch->top = -INFINITY;
    for (; at < end_c; at++) {
      uint32_t t = idx[at];
      for (int k = 0; k < 3; k++) {
        const rvertex *v = &src->v[t * 3 + (uint32_t)k];
        mesh_push(out, (const double[3]){v->pos[0], v->pos[1], v->pos[2]},
                  (const double[3]){v->normal[0], v->normal[1], v->normal[2]},
                  v->colour, v->colour[3]);
        ch->box[0] = fmin(ch->box[0], v->pos[0]);
        ch->box[1] = fmin(ch->box[1], v->pos[1]);
        ch->box[2] = fmax(ch->box[2], v->pos[0]);
        ch->box[3] = fmax(ch->box[3], v->pos[1]);
        ch->top = fmaxf(ch->top, v->pos[2]);
      }
      ch->count += 3;
    }
  }
  free(idx);
  free(cell);
  free(count);
  return out->oom ? -1 : 0;
}

static int chunk_statics(pa_render_scene *s, const rmesh *walls,
                         const rmesh *floor_mesh, const rmesh *floor_quads,
                         rmesh *out) {
  double w = s->bounds[2] - s->bounds[0], h = s->bounds[3] - s->bounds[1];
  double cs = CHUNK_MIN;
  if (w * h / (cs * cs) > CHUNK_MAX_N)
    cs = sqrt(w * h / CHUNK_MAX_N) * 1.01;
  s->chunk_size = cs;
  s->chunk_x0 = s->bounds[0];
  s->chunk_y0 = s->bounds[1];
  s->chunk_nx = (uint32_t)fmax(1, ceil(w / cs));
  s->chunk_ny = (uint32_t)fmax(1, ceil(h / cs));
  size_t max = 3 * (size_t)s->chunk_nx * s->chunk_ny;
  s->chunks = calloc(max, sizeof *s->chunks);
  s->draw_first = calloc(max, sizeof *s->draw_first);
  s->draw_count = calloc(max, sizeof *s->draw_count);
  s->order = calloc(max, sizeof *s->order);
  if (!s->chunks || !s->draw_first || !s->draw_count || !s->order)
    return -1;
  if (walls->oom || floor_mesh->oom || floor_quads->oom)
    return -1;
  if (chunk_layer(s, walls, 0, out) < 0 ||
      chunk_layer(s, floor_mesh, 1, out) < 0 ||
      chunk_layer(s, floor_quads, 2, out) < 0)
    return -1;
  return 0;
}

static int check_inputs(const pa_grid *g, const pa_robot_info *robots,
                        uint32_t robot_count, const pa_obstacle_info *obs,
                        uint32_t obstacle_count, char *err, size_t err_sz) {
  if (!g || !g->cells || !g->width || !g->height) {
    snprintf(err, err_sz, "scene: the map is empty");
    return -1;
  }
  if (!(g->resolution > 0) || !isfinite(g->resolution) ||
      !isfinite(g->origin_x) || !isfinite(g->origin_y) ||
      !isfinite(g->origin_yaw)) {
    snprintf(err, err_sz, "scene: map resolution %g or origin is invalid",
             g->resolution);
    return -1;
  }
  if ((robot_count && !robots) || (obstacle_count && !obs)) {
    snprintf(err, err_sz, "scene: robot or obstacle array missing");
    return -1;
  }
  for (uint32_t i = 0; i < robot_count; i++)
    if (robots[i].active &&
        (!(robots[i].radius > 0) || !isfinite(robots[i].radius) ||
         !(robots[i].radius < 100) || !isfinite(robots[i].height) ||
         !isfinite(robots[i].head_height))) {
      snprintf(err, err_sz, "scene: robot %u has a bad size (radius %g)", i,
               robots[i].radius);
      return -1;
    }
  for (uint32_t i = 0; i < obstacle_count; i++) {
    const pa_obstacle_info *o = &obs[i];
    if (!o->active)
      continue;
    bool ok = isfinite(o->x) && isfinite(o->y) && isfinite(o->theta) &&
              isfinite(o->height) && o->height < 1000;
    if (o->shape == PA_SHAPE_CIRCLE)
      ok = ok && o->radius > 0 && o->radius < 1e4;
    else if (o->shape == PA_SHAPE_BOX)
      ok = ok && o->size_x > 0 && o->size_y > 0 && o->size_x < 1e4 &&
           o->size_y < 1e4;
    else
      ok = false;
    if (!ok) {
      snprintf(err, err_sz, "scene: obstacle %u ('%.31s') has a bad shape, "
               "pose or size", i, o->name);
      return -1;
    }
  }
  return 0;
}

int pa_render_scene_build(pa_render_scene **out, const pa_grid *grid,
                          const pa_robot_info *robots, uint32_t robot_count,
                          const pa_obstacle_info *obstacles,
                          uint32_t obstacle_count, char *err, size_t err_sz) {
  *out = NULL;
  if (check_inputs(grid, robots, robot_count, obstacles, obstacle_count, err,
                   err_sz) < 0)
    return -1;
  pa_render_scene *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, err_sz, "scene: out of memory");
    return -1;
  }
  static uint64_t serials;
  s->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
  rmesh m = {0};
  if (robot_count) {
    s->robots = calloc(robot_count, sizeof *s->robots);
    s->poses = calloc(robot_count, sizeof *s->poses);
    if (!s->robots || !s->poses) {
      snprintf(err, err_sz, "scene: out of memory for %u robots", robot_count);
      goto fail;
    }
  }
  s->robot_count = robot_count;
  for (uint32_t i = 0; i < robot_count; i++) {
    rrobot *r = &s->robots[i];
    r->active = robots[i].active != 0;
    r->radius = robots[i].radius;
    r->height = robots[i].height > 0 ? robots[i].height : 0.25f;
    r->head_height = robots[i].head_height > 0 ? robots[i].head_height
                                               : r->height + 0.1f;
    for (int k = 0; k < 3; k++)
      r->colour[k] = robots[i].colour[k] / 255.0f;
    /* the shadow's disc (1.5 radii from its shifted centre), plus the parts
     * (the body's radius; the lens's front, 0.36 radii and 1 cm out, 0.18
     * radii to its side): summed, more than either */
    double dx, dy;
    shadow_offset(r->height, &dx, &dy);
    r->reach_bound = hypot(dx, dy) + 1.5 * r->radius + 0.6 * r->radius + 0.03;
  }
  if (pa_render_program_lit(&s->lit, err, err_sz) < 0)
    goto fail;
  double xs[4], ys[4];
  double w = grid->width * grid->resolution, h = grid->height * grid->resolution;
  grid_to_world(grid, 0, 0, &xs[0], &ys[0]);
  grid_to_world(grid, w, 0, &xs[1], &ys[1]);
  grid_to_world(grid, w, h, &xs[2], &ys[2]);
  grid_to_world(grid, 0, h, &xs[3], &ys[3]);
  s->bounds[0] = s->bounds[2] = xs[0];
  s->bounds[1] = s->bounds[3] = ys[0];
  for (int i = 1; i < 4; i++) {
    s->bounds[0] = fmin(s->bounds[0], xs[i]);
    s->bounds[2] = fmax(s->bounds[2], xs[i]);
    s->bounds[1] = fmin(s->bounds[1], ys[i]);
    s->bounds[3] = fmax(s->bounds[3], ys[i]);
  }
  rmesh floor = {0}, quads = {0};
  if (build_walls(&m, grid, &s->wall_boxes) < 0)
    m.oom = true;
  build_obstacles(&m, obstacles, obstacle_count);
  build_floor(&floor, grid, 1);
  build_floor(&quads, grid, FLOOR_QUAD);
  s->triangles = (m.n + floor.n) / 3;
  rmesh sorted = {0};
  int crc = chunk_statics(s, &m, &floor, &quads, &sorted);
  pa_render_mesh_free(&floor);
  pa_render_mesh_free(&quads);
  pa_render_mesh_free(&m);
  if (crc < 0 || pa_render_gpu_upload(&s->statics, &sorted, err, err_sz) < 0) {
    if (crc < 0)
      snprintf(err, err_sz, "scene: out of memory building geometry");
    pa_render_mesh_free(&sorted);
    goto fail;
  }
  pa_render_mesh_free(&sorted);
  if (pa_render_walls_build(&s->walls, grid) < 0) {
    snprintf(err, err_sz, "scene: out of memory for the walls' bitmap");
    goto fail;
  }

  build_shadows(&m, obstacles, obstacle_count);
  if (pa_render_gpu_upload(&s->shadows, &m, err, err_sz) < 0)
    goto fail;
  pa_render_mesh_free(&m);
  if (pa_render_program_blob(&s->blob_prog, err, err_sz) < 0 ||
      pa_render_program_floor(&s->floor_prog, err, err_sz) < 0)
    goto fail;
  floor_constants(&s->floor_prog, grid);
  { /* the blob: corners' places in red and green (blob_vs) */
    static const double up[3] = {0, 0, 1};
    static const uint8_t at[4][3] = {
        {0, 0, 0}, {255, 0, 0}, {255, 255, 0}, {0, 255, 0}};
    double q[4][3] = {
        {-1.5, -1.5, 0}, {1.5, -1.5, 0}, {1.5, 1.5, 0}, {-1.5, 1.5, 0}};
    static const int tri[6] = {0, 1, 2, 0, 2, 3};
    for (int k = 0; k < 6; k++)
      mesh_push(&m, q[tri[k]], up, at[tri[k]], SHADOW_ALPHA);
  }
  if (pa_render_gpu_upload(&s->blob, &m, err, err_sz) < 0)
    goto fail;
  pa_render_mesh_free(&m);
  {
    static const uint8_t w3[3] = {255, 255, 255};
    static const double up[3] = {0, 0, 1};
    double q[4][3] = {
        {-0.5, -0.5, 0}, {0.5, -0.5, 0}, {0.5, 0.5, 0}, {-0.5, 0.5, 0}};
    mesh_quad(&m, q[0], q[1], q[2], q[3], up, w3, 255);
  }
  if (pa_render_gpu_upload(&s->plate, &m, err, err_sz) < 0)
    goto fail;
  pa_render_mesh_free(&m);
  /* a unit cube lit as if every face looked up: a floor marking with sides
   * stays as bright as its top when seen edge-on */
  static const uint8_t slab_white[3] = {255, 255, 255};
  static const double slab_o[3] = {0, 0, 0}, slab_half[3] = {0.5, 0.5, 0.5};
  pa_render_mesh_box(&m, slab_o, slab_half, 0, slab_white, false);
  for (uint32_t i = 0; i < m.n && !m.oom; i++)
    m.v[i].normal[0] = m.v[i].normal[1] = 0, m.v[i].normal[2] = 1;
  if (pa_render_gpu_upload(&s->slab, &m, err, err_sz) < 0)
    goto fail;
  pa_render_mesh_free(&m);

  static const uint8_t white[3] = {255, 255, 255};
  static const double origin[3] = {0, 0, 0}, half[3] = {0.5, 0.5, 0.5};
  for (int l = 0; l < PA_RENDER_LODS; l++) {
    pa_render_mesh_cylinder(&m, origin, 1.0, 1.0, white, lod_sides[l]);
    if (pa_render_gpu_upload(&s->cyl[l], &m, err, err_sz) < 0)
      goto fail;
    pa_render_mesh_free(&m);
  }
  pa_render_mesh_box(&m, origin, half, 0, white, true);
  if (pa_render_gpu_upload(&s->cube, &m, err, err_sz) < 0)
    goto fail;
  pa_render_mesh_free(&m);
  /* the ball's: 16 segments, the coarser levels the robots' sides */
  static const int ball_sides[PA_RENDER_LODS] = {16, 12, 8};
  for (int l = 0; l < PA_RENDER_LODS; l++) {
    mesh_sphere(&m, white, ball_sides[l] * 3 / 4, ball_sides[l]);
    if (pa_render_gpu_upload(&s->sphere[l], &m, err, err_sz) < 0)
      goto fail;
    pa_render_mesh_free(&m);
  }

  s->fog_density = 0.05f; /* exp2: about half the contrast at 20 m */
  s->sm = pa_render_shadow_new();
  s->caster_top = PA_RENDER_WALL_HEIGHT;
  for (uint32_t i = 0; i < obstacle_count; i++)
    if (obstacles[i].active)
      s->caster_top = fmax(s->caster_top, obstacles[i].height);
  for (uint32_t i = 0; i < robot_count; i++)
    if (s->robots[i].active)
      s->caster_top = fmax(s->caster_top, s->robots[i].head_height + 0.1);
  *out = s;
  return 0;
fail:
  pa_render_mesh_free(&m);
  pa_render_scene_free(s);
  return -1;
}

void pa_render_scene_free(pa_render_scene *s) {
  if (!s)
    return;
  pa_render_gpu_free(&s->statics);
  for (int l = 0; l < PA_RENDER_LODS; l++)
    pa_render_gpu_free(&s->cyl[l]);
  pa_render_gpu_free(&s->blob);
  for (int l = 0; l < PA_RENDER_LODS; l++)
    pa_render_gpu_free(&s->sphere[l]);
  pa_render_gpu_free(&s->cube);
  pa_render_gpu_free(&s->shadows);
  pa_render_gpu_free(&s->plate);
  pa_render_gpu_free(&s->slab);
  pa_render_shadow_free(s->sm);
  pa_render_walls_free(&s->walls);
  if (s->lit.prog)
    glDeleteProgram(s->lit.prog);
  if (s->blob_prog.prog)
    glDeleteProgram(s->blob_prog.prog);
  if (s->floor_prog.prog)
    glDeleteProgram(s->floor_prog.prog);
  free(s->robots);
  free(s->poses);
  free(s->chunks);
  free(s->draw_first);
  free(s->draw_count);
  free(s->order);
  free(s);
}

void pa_render_scene_set_poses(pa_render_scene *s, const pa_render_pose *p,
                               uint32_t count) {
  if (count > s->robot_count)
    count = s->robot_count;
  if (count)
    memcpy(s->poses, p, count * sizeof *p);
  s->pose_count = count;
}

void pa_render_scene_set_ssl(pa_render_scene *s, char division, bool ball,
                             const double xyz[3]) {
  if (division != s->ssl.division && pa_ssl_field_get(division, &s->ssl) != 0)
    memset(&s->ssl, 0, sizeof s->ssl); /* no SSL field: no lines */
  s->ball = ball && isfinite(xyz[0]) && isfinite(xyz[1]) && isfinite(xyz[2]);
  if (s->ball)
    memcpy(s->ball_xyz, xyz, sizeof s->ball_xyz);
}

void pa_render_scene_set_shadows(pa_render_scene *s, bool on) {
  s->no_shadows = !on;
}

void pa_render_scene_set_shadow_map(pa_render_scene *s, bool on) {
  s->no_shadow_map = !on;
}

void pa_render_scene_set_culling(pa_render_scene *s, bool on) {
  s->no_culling = !on;
}

void pa_render_scene_set_floor_quads(pa_render_scene *s, bool on) {
  s->no_floor_quads = !on;
}

void pa_render_scene_copy_state(pa_render_scene *d, const pa_render_scene *s) {
  uint32_t n = s->pose_count < d->robot_count ? s->pose_count : d->robot_count;
  if (n)
    memcpy(d->poses, s->poses, n * sizeof *d->poses);
  d->pose_count = n;
  d->ssl = s->ssl;
  d->ball = s->ball;
  memcpy(d->ball_xyz, s->ball_xyz, sizeof d->ball_xyz);
  d->no_shadows = s->no_shadows;
  d->no_shadow_map = s->no_shadow_map;
  d->no_culling = s->no_culling;
  d->no_floor_quads = s->no_floor_quads;
  d->fog_density = s->fog_density;
}

uint32_t pa_render_scene_wall_boxes(const pa_render_scene *s) {
  return s->wall_boxes;
}
uint32_t pa_render_scene_triangles(const pa_render_scene *s) {
  return s->triangles;
}
void pa_render_scene_bounds(const pa_render_scene *s, double out[4]) {
  memcpy(out, s->bounds, sizeof s->bounds);
}

/* The program drawing: the lit one, its shadow-map variant, or the shadow
 * map's depth pass (the calling thread's: an atlas pool's helpers draw
 * their own scenes in their own contexts at the same time). */
static _Thread_local const rprogram *cur;

/* Body cylinder, a light stripe on top pointing along theta, a head box
 * turned by theta + head with a dark lens on its front: the parts of one
 * robot's look, which the head cameras draw one by one and the atlas
 * (atlas.c) merges. */
static rpart part(const rgpu_mesh *g, double x, double y, double z, double c,
                  double s, const double scale[3], const float rgb[3]) {
  rpart q = {g,
             x,
             y,
             z,
             c,
             s,
             {scale[0], scale[1], scale[2]},
             {rgb[0], rgb[1], rgb[2]}};
  return q;
}

/* Part q with the bound program (cur). */
static void draw_rpart(const rpart *q) {
  float model[16];
  pa_render_mat_pose_cs(model, q->x, q->y, q->z, q->c, q->s, q->scale);
  glUniformMatrix4fv(cur->u_model, 1, GL_FALSE, model);
  glUniform4f(cur->u_tint, q->rgb[0], q->rgb[1], q->rgb[2], 1.0f);
  glBindVertexArray(q->mesh->vao);
  glDrawArrays(GL_TRIANGLES, 0, q->mesh->count);
}

/* Mesh g placed at (x, y, z), turned by yaw, scaled, tinted rgb, with the
 * bound program (cur). */
static void draw_part(const pa_render_scene *s, const rgpu_mesh *g,
                      double x, double y, double z, double yaw,
                      const double scale[3], const float rgb[3]) {
  (void)s;
  rpart q = part(g, x, y, z, cos(yaw), sin(yaw), scale, rgb);
  draw_rpart(&q);
}

double pa_render_lod_focal(const pa_render_view *v, uint32_t w) {
  double f = v && w ? 0.5 * w / tan(0.5 * v->fov) : 0;
  return f > 0 && isfinite(f) ? f : 0;
}

int pa_render_robot_lod(const pa_render_view *v, double focal, double radius,
                        const pa_render_pose *p) {
  if (!(focal > 0))
    return 0;
  /* radius * focal / d px on screen at its centre's distance d: at most 4
   * px (8 sides) or 9 px (12 sides) from d^2 alone */
  double dx = p->x - v->x, dy = p->y - v->y, d2 = dx * dx + dy * dy;
  double rf = radius * focal;
  return d2 >= rf * rf * (1.0 / 16) ? 2 : d2 >= rf * rf * (1.0 / 81) ? 1 : 0;
}

int pa_render_robot_parts(const pa_render_scene *s, const rrobot *r,
                          const pa_render_pose *p, int lod,
                          rpart out[PA_RENDER_ROBOT_PARTS]) {
  static const float light[3] = {0.95f, 0.95f, 0.92f};
  static const float dark[3] = {0.08f, 0.08f, 0.10f};
  int n = 0;
  double rad = r->radius, h = r->height;
  double body[3] = {rad, rad, h};
  double c = cos(p->theta), sn = sin(p->theta);
  out[n++] = part(&s->cyl[lod], p->x, p->y, 0, c, sn, body, r->colour);
  /* The coarsest level (the body 4 px in radius or less): the stripe, the
   * neck and the lens are a pixel wide or less there, yet they were two
   * thirds of such a robot's primitives; the body and the head stay. */
  bool fine = lod < PA_RENDER_LODS - 1;
  double stripe[3] = {rad * 0.8, rad * 0.22, 0.02};
  if (fine)
    out[n++] = part(&s->cube, p->x + c * rad * 0.45, p->y + sn * rad * 0.45,
                    h + 0.01, c, sn, stripe, light);
  double hy = p->theta + p->head;
  double hc = cos(hy), hs = sin(hy);
  double head_top = r->head_height + 0.05;
  double neck_h = head_top - 0.1 - h;
  if (fine && neck_h > 0.005) {
    double neck[3] = {rad * 0.15, rad * 0.15, neck_h};
    /* a sixth of the body's width: the middle level's sides at most */
    out[n++] = part(&s->cyl[1], p->x, p->y, h, 1, 0, neck, dark);
  }
  double head[3] = {rad * 0.7, rad * 0.9, 0.1};
  out[n++] =
      part(&s->cube, p->x, p->y, r->head_height, hc, hs, head, r->colour);
  double lens[3] = {0.02, rad * 0.35, 0.05};
  if (fine)
    out[n++] = part(&s->cube, p->x + hc * rad * 0.36, p->y + hs * rad * 0.36,
                    r->head_height, hc, hs, lens, dark);
  return n;
}

static void draw_robot(const pa_render_scene *s, const rrobot *r,
                       const pa_render_pose *p, int lod) {
  rpart q[PA_RENDER_ROBOT_PARTS];
  int n = pa_render_robot_parts(s, r, p, lod, q);
  for (int i = 0; i < n; i++)
    draw_rpart(&q[i]);
}

/* A white floor line from (x0, y0) to (x1, y1): a slab 4 mm high over the
 * carpet, every face lit as the floor is (edge-on, from a head camera, a
 * 10 mm line is less than a pixel high: its side keeps it seen). */
static void draw_line(const pa_render_scene *s, double x0, double y0, double x1,
                      double y1) {
  static const float white[3] = {0.95f, 0.95f, 0.95f};
  double dx = x1 - x0, dy = y1 - y0, w = s->ssl.line_width;
  double box[3] = {hypot(dx, dy) + w, w, 0.004};
  draw_part(s, &s->slab, (x0 + x1) / 2, (y0 + y1) / 2, 0.0035, atan2(dy, dx),
            box, white);
}

static void draw_ball(const pa_render_scene *s, int lod);

/* The SSL field's lines (the rules' markings) and the ball, an orange
 * sphere of 42.67 mm resting at its height, at the level of detail a robot
 * of its size would have there (eye and focal as pa_render_robot_lod's);
 * with cull (a level camera, wg its wedge), only when it can show in the
 * view (occ, the walls' columns, for a ball no higher than the walls). */
static void draw_ssl(const pa_render_scene *s, const pa_render_view *eye,
                     double focal, const pa_render_view *cull, const rwedge *wg,
                     const rcolumns *occ) {
  const pa_ssl_field *f = &s->ssl;
  if (f->division) {
    double hl = f->length / 2, hw = f->width / 2;
    /* the green carpet out to the boundary, 1.5 mm over the floor (the web
     * viewer's colour) */
    static const float green[3] = {30 / 255.0f, 120 / 255.0f, 50 / 255.0f};
    double carpet[3] = {f->length + 2 * f->boundary, f->width + 2 * f->boundary,
                        1};
    draw_part(s, &s->plate, 0, 0, 0.0015, 0, carpet, green);
    draw_line(s, -hl, -hw, hl, -hw);
    draw_line(s, -hl, hw, hl, hw);
    draw_line(s, -hl, -hw, -hl, hw);
    draw_line(s, hl, -hw, hl, hw);
    draw_line(s, 0, -hw, 0, hw);
    draw_line(s, -hl, 0, hl, 0);
    double dd = f->defense_depth, dw = f->defense_width / 2;
    for (int side = -1; side <= 1; side += 2) {
      double x = side * hl, xi = side * (hl - dd);
      draw_line(s, xi, -dw, xi, dw);
      draw_line(s, x, -dw, xi, -dw);
      draw_line(s, x, dw, xi, dw);
    }
    const int n = 24;
    for (int i = 0; i < n; i++) {
      double a0 = 2 * M_PI * i / n, a1 = 2 * M_PI * (i + 1) / n;
      double r = f->center_radius;
      draw_line(s, r * cos(a0), r * sin(a0), r * cos(a1), r * sin(a1));
    }
  }
  if (!s->ball)
    return;
  pa_render_pose at = {.x = s->ball_xyz[0], .y = s->ball_xyz[1]};
  if (cull) {
    if (!(s->ball_xyz[2] + 2 * BALL_R <= PA_RENDER_WALL_HEIGHT))
      occ = NULL; /* over the walls: seen over them */
    if (!pa_render_disc_shows(cull, occ, wg, at.x, at.y, BALL_R + 0.01))
      return;
  }
  draw_ball(s, pa_render_robot_lod(eye, focal, BALL_R, &at));
}

static void draw_ball(const pa_render_scene *s, int lod) {
  if (s->ball) {
    static const float orange[3] = {1.0f, 0.45f, 0.0f};
    double sc[3] = {BALL_R, BALL_R, BALL_R};
    draw_part(s, &s->sphere[lod], s->ball_xyz[0], s->ball_xyz[1],
              s->ball_xyz[2] + BALL_R, 0, sc, orange);
  }
}

/* Whether a chunk's box can appear in a level camera's horizontal field
 * of view: the box's angular extent seen from the eye against [-h, h]. */
static bool chunk_visible(const rchunk *c, const pa_render_view *v,
                          const rwedge *wg, const rcolumns *occ) {
  const double half = wg->half, *edges = wg->edges;
  double m = 0.05; /* [m] slack for triangles straddling the eye */
  if (v->x >= c->box[0] - m && v->x <= c->box[2] + m && v->y >= c->box[1] - m &&
      v->y <= c->box[3] + m)
    return true;
  /* every corner beyond the same edge of the wedge (narrower than a half
   * turn for the views culled, fov < 0.95 pi: the two edges' half-planes
   * make it): out, without the angles */
  double px[4], py[4]; /* the corners from the eye */
  int right = 0, left = 0;
  for (int k = 0; k < 4; k++) {
    px[k] = c->box[(k & 1) ? 2 : 0] - v->x;
    py[k] = c->box[(k & 2) ? 3 : 1] - v->y;
    right += edges[0] * py[k] - edges[1] * px[k] < 0;
    left += px[k] * edges[3] - py[k] * edges[2] < 0;
  }
  if (right == 4 || left == 4)
    return false;
  bool walls_may_hide = occ && c->top <= PA_RENDER_WALL_HEIGHT && v->z >= 0 &&
                        v->z <= PA_RENDER_WALL_HEIGHT;
  /* the box's nearest point [m] */
  double nx = fmax(fmax(c->box[0] - v->x, v->x - c->box[2]), 0);
  double ny = fmax(fmax(c->box[1] - v->y, v->y - c->box[3]), 0);
  /* wholly ahead of the eye (most chunks): its corners' angles as their
   * tangents, without atan2 */
  double tlo, thi;
  if (pa_render_wedge_span(wg, px, py, 4, 1e-6, &tlo, &thi)) {
    if (!(thi >= -wg->th && tlo <= wg->th))
      return false;
    return !walls_may_hide ||
           !pa_render_columns_hide_tan(occ, wg->tx, tlo, thi,
                                       sqrt(nx * nx + ny * ny));
  }
  double cx = (c->box[0] + c->box[2]) / 2 - v->x;
  double cy = (c->box[1] + c->box[3]) / 2 - v->y;
  double ca = atan2(cy, cx);
  double lo = 0, hi = 0;
  for (int k = 0; k < 4; k++) {
    double d = remainder(atan2(py[k], px[k]) - ca, 2 * M_PI);
    lo = fmin(lo, d), hi = fmax(hi, d);
  }
  double rel = remainder(ca - v->yaw, 2 * M_PI);
  if (!(rel + hi >= -half && rel + lo <= half))
    return false;
  return !walls_may_hide ||
         !pa_render_columns_hide(v, occ, rel + lo, rel + hi, hypot(nx, ny));
}

typedef struct { float d; uint32_t i; } rorder_key;

static int order_cmp(const void *a, const void *b) {
  float x = ((const rorder_key *)a)->d, y = ((const rorder_key *)b)->d;
  return (x > y) - (x < y);
}

static void frame_uniforms(const rprogram *p, const float view[16],
                           const float proj[16], const double l[3],
                           float fog_density);

/* Statics: visible chunks only (all without a level camera), walls near to
 * far so early depth testing rejects what they hide, then the floor: with
 * flat (no shadow map) in the floor program's large quads, else as the
 * lit squares. */
static void draw_statics(const pa_render_scene *s, const pa_render_view *cull,
                         const rwedge *wg, const rcolumns *occ, bool flat,
                         const float view[16], const float proj[16],
                         const double l[3]) {
  float model[16];
  pa_render_mat_identity(model);
  glUniformMatrix4fv(cur->u_model, 1, GL_FALSE, model);
  glUniform4f(cur->u_tint, 1, 1, 1, 1);
  glBindVertexArray(s->statics.vao);
  for (uint8_t layer = 0; layer < 3; layer++) {
    if (layer == (flat ? 1 : 2))
      continue;
    if (layer == 2) /* its constants were set at the build */
      frame_uniforms(&s->floor_prog, view, proj, l, s->fog_density);
    uint32_t n = 0;
    rorder_key *keys = (rorder_key *)s->order;
    for (uint32_t i = 0; i < s->n_chunks; i++) {
      const rchunk *c = &s->chunks[i];
      if (c->layer != layer || (cull && !chunk_visible(c, cull, wg, occ)))
        continue;
      double dx = 0, dy = 0;
      if (cull) {
        dx = (c->box[0] + c->box[2]) / 2 - cull->x;
        dy = (c->box[1] + c->box[3]) / 2 - cull->y;
      }
      keys[n].d = (float)(dx * dx + dy * dy);
      keys[n].i = i;
      n++;
    }
    if (cull && layer == 0)
      qsort(keys, n, sizeof *keys, order_cmp);
    /* runs that follow each other in the buffer drawn as one: llvmpipe
     * pays for each draw of a multi-draw (same triangles, same order) */
    uint32_t m = 0;
    for (uint32_t k = 0; k < n; k++) {
      const rchunk *c = &s->chunks[keys[k].i];
      if (m && s->draw_first[m - 1] + s->draw_count[m - 1] == c->first) {
        s->draw_count[m - 1] += c->count;
        continue;
      }
      s->draw_first[m] = c->first;
      s->draw_count[m++] = c->count;
    }
    if (m)
      glMultiDrawArrays(GL_TRIANGLES, s->draw_first, s->draw_count, (GLsizei)m);
    if (layer == 2)
      glUseProgram(cur->prog);
  }
}

rpart pa_render_robot_shadow(const pa_render_scene *s, const rrobot *r,
                             const pa_render_pose *p) {
  static const float white[3] = {1, 1, 1}; /* the colour bytes kept */
  double dx, dy;
  shadow_offset(r->height, &dx, &dy);
  double sc[3] = {r->radius, r->radius, 1};
  return part(&s->blob, p->x + dx, p->y + dy, SHADOW_Z, 1, 0, sc, white);
}

const rprogram *pa_render_scene_use_blobs(const pa_render_scene *s,
                                          const float view[16],
                                          const float proj[16]) {
  static const double none[3] = {0, 0, 1}; /* blob_vs lights nothing */
  frame_uniforms(&s->blob_prog, view, proj, none, s->fog_density);
  float id[16];
  pa_render_mat_identity(id);
  glUniformMatrix4fv(s->blob_prog.u_model, 1, GL_FALSE, id);
  glUniform4f(s->blob_prog.u_tint, 1, 1, 1, 1);
  return &s->blob_prog;
}

/* Blended over what is drawn, writing no depth: obstacles' static blobs
 * (with cur), then one per robot under its body (with the blob program;
 * cur bound again after). */
static void draw_shadows(const pa_render_scene *s, const float view[16],
                         const float proj[16]) {
  glEnable(GL_BLEND);
  glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA);
  glDepthMask(GL_FALSE);
  static const float black[3] = {0, 0, 0};
  double one[3] = {1, 1, 1};
  draw_part(s, &s->shadows, 0, 0, 0, 0, one, black);
  const rprogram *was = cur;
  cur = pa_render_scene_use_blobs(s, view, proj);
  for (uint32_t i = 0; i < s->pose_count; i++) {
    const rrobot *r = &s->robots[i];
    const pa_render_pose *p = &s->poses[i];
    if (!r->active || !p->active)
      continue;
    rpart q = pa_render_robot_shadow(s, r, p);
    draw_rpart(&q);
  }
  cur = was;
  glUseProgram(cur->prog);
  glDepthMask(GL_TRUE);
  glDisable(GL_BLEND);
}

void pa_render_scene_draw(const pa_render_scene *s, const float view[16],
                          const float proj[16], uint32_t skip_robot) {
  pa_render_scene_draw_culled(s, view, proj, skip_robot, NULL, 0);
}

/* What casts a shadow, into the shadow map: walls and obstacles (the
 * statics but the floor), every robot, the ball. */
static void draw_casters(const pa_render_scene *s, const rprogram *p) {
  cur = p;
  float model[16];
  pa_render_mat_identity(model);
  glUniformMatrix4fv(cur->u_model, 1, GL_FALSE, model);
  glBindVertexArray(s->statics.vao);
  GLsizei n = 0; /* layer 0 (walls, obstacles) runs first in the buffer */
  for (uint32_t i = 0; i < s->n_chunks && s->chunks[i].layer == 0; i++)
    n = s->chunks[i].first + s->chunks[i].count;
  if (n)
    glDrawArrays(GL_TRIANGLES, 0, n);
  for (uint32_t i = 0; i < s->pose_count; i++)
    if (s->robots[i].active && s->poses[i].active)
      draw_robot(s, &s->robots[i], &s->poses[i], 0);
  draw_ball(s, 0);
}

/* Binds p and sets the uniforms a frame shares: view, projection, the key
 * light (unit vector towards it) and the fog. */
static void frame_uniforms(const rprogram *p, const float view[16],
                           const float proj[16], const double l[3],
                           float fog_density) {
  glUseProgram(p->prog);
  glUniformMatrix4fv(p->u_view, 1, GL_FALSE, view);
  glUniformMatrix4fv(p->u_proj, 1, GL_FALSE, proj);
  glUniform3f(p->u_light, (float)l[0], (float)l[1], (float)l[2]);
  glUniform3f(p->u_fog, PA_RENDER_SKY_RGB);
  glUniform1f(p->u_fog_density, fog_density);
}

void pa_render_scene_use_lit(const pa_render_scene *s, const rprogram *p,
                             const float view[16], const float proj[16]) {
  double l[3];
  key_light_unit(l);
  frame_uniforms(p, view, proj, l, s->fog_density);
}

void pa_render_scene_draw_culled(const pa_render_scene *s, const float view[16],
                                 const float proj[16], uint32_t skip_robot,
                                 const pa_render_view *cull, uint32_t lod_w) {
  pa_render_scene_draw_occluded(s, view, proj, skip_robot, cull, NULL, NULL,
                                lod_w);
}

void pa_render_scene_draw_occluded(const pa_render_scene *s,
                                   const float view[16], const float proj[16],
                                   uint32_t skip_robot,
                                   const pa_render_view *cull,
                                   const rcolumns *occ, const rprogram *lit,
                                   uint32_t lod_w) {
  const pa_render_view *eye = cull; /* the robots' levels of detail */
  const double focal = pa_render_lod_focal(eye, lod_w);
  double l[3];
  key_light_unit(l);
  const rprogram *base = lit ? lit : &s->lit;
  cur = base;
  if (!s->no_shadows && !s->no_shadow_map && (!cull || cull->shadow_map)) {
    const rprogram *p =
        pa_render_shadow_pass(s->sm, s, l, s->caster_top, draw_casters);
    cur = p ? p : base;
  }
  bool blobs = !s->no_shadows && cur == base;
  if (cull && (s->no_culling || cull->pitch != 0 || !(cull->fov < M_PI * 0.95)))
    cull = NULL; /* the wedge test assumes a level camera */
  glEnable(GL_DEPTH_TEST);
  glEnable(GL_CULL_FACE);
  glCullFace(GL_BACK);
  glFrontFace(GL_CCW);
  /* The plain lit program gets this frame's uniforms too: the solid
   * visuals draw with it after the scene (visuals_solid.c). */
  if (cur != base)
    frame_uniforms(base, view, proj, l, s->fog_density);
  frame_uniforms(cur, view, proj, l, s->fog_density);
  /* robots first: they are small and usually in front */
  for (uint32_t i = 0; i < s->pose_count; i++)
    if (i != skip_robot && s->robots[i].active && s->poses[i].active)
      draw_robot(
          s, &s->robots[i], &s->poses[i],
          pa_render_robot_lod(eye, focal, s->robots[i].radius, &s->poses[i]));
  /* the culled view's wedge, narrower than a half turn (fov < 0.95 pi) */
  rwedge wg = {0};
  if (cull)
    pa_render_wedge(cull, &wg);
  draw_ssl(s, eye, focal, cull, &wg, cull ? occ : NULL);
  bool flat = cur == base && !s->no_floor_quads && lod_w > 0 &&
              lod_w <= FLOOR_QUADS_MAX_W;
  draw_statics(s, cull, &wg, cull ? occ : NULL, flat, view, proj, l);
  if (blobs)
    draw_shadows(s, view, proj);
  glBindVertexArray(0);
  cur = &s->lit;
}
