/* camera.c - head cameras: pinhole views, an FBO per image size, and an
 * asynchronous readback through two pixel buffer objects. */
#include "render_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stb_image_write.h>

#define CAM_MAX_SIDE 4096
#define ZNEAR 0.03 /* [m] close enough to see a wall a robot touches */
#define ZFAR 200.0 /* [m] */

pa_render_view pa_render_view_head(const pa_robot_info *info, uint32_t index,
                                   const pa_render_pose *p) {
  pa_render_view v = {0};
  v.x = p->x;
  v.y = p->y;
  v.z = info->head_height > 0 ? info->head_height : 0.35;
  v.yaw = p->theta + p->head;
  v.pitch = 0;
  v.fov = info->cam_fov > 0 && info->cam_fov < M_PI ? info->cam_fov
                                                    : 60.0 * M_PI / 180;
  v.skip_robot = index;
  return v;
}

static double vfov_of(const pa_render_view *v, uint32_t w, uint32_t h) {
  return 2 * atan(tan(v->fov / 2) * (double)h / (double)w);
}

void pa_render_view_matrices(const pa_render_view *v, uint32_t w, uint32_t h,
                             float view[16], float proj[16]) {
  double cp = cos(v->pitch);
  double eye[3] = {v->x, v->y, v->z};
  double centre[3] = {v->x + cos(v->yaw) * cp, v->y + sin(v->yaw) * cp,
                      v->z + sin(v->pitch)};
  static const double up[3] = {0, 0, 1};
  pa_render_mat_lookat(view, eye, centre, up);
  pa_render_mat_perspective(proj, vfov_of(v, w, h), (double)w / h, ZNEAR, ZFAR);
}

bool pa_render_project(const pa_render_view *v, uint32_t w, uint32_t h,
                       double x, double y, double z, double *u, double *vpx) {
  /* Camera frame: forward f, right r, up u (pitch tilts f and u). */
  double cy = cos(v->yaw), sy = sin(v->yaw), cp = cos(v->pitch),
         sp = sin(v->pitch);
  double f[3] = {cy * cp, sy * cp, sp};
  double r[3] = {sy, -cy, 0};
  double up[3] = {-cy * sp, -sy * sp, cp};
  double d[3] = {x - v->x, y - v->y, z - v->z};
  double df = d[0] * f[0] + d[1] * f[1] + d[2] * f[2];
  if (df <= 1e-9)
    return false;
  double dr = d[0] * r[0] + d[1] * r[1] + d[2] * r[2];
  double du = d[0] * up[0] + d[1] * up[1] + d[2] * up[2];
  double tx = tan(v->fov / 2), ty = tan(vfov_of(v, w, h) / 2);
  *u = w / 2.0 * (1 + dr / df / tx);
  *vpx = h / 2.0 * (1 - du / df / ty);
  return true;
}

/* ---- offscreen cameras -------------------------------------------------- */

/* One GL context per process, one set of visuals for all its cameras. */
static const pa_visual_block *cam_vis;
static pa_render_lines *cam_vis_lines;

void pa_render_cam_visuals(const pa_visual_block *b, pa_render_lines *L) {
  cam_vis = b;
  cam_vis_lines = L;
}

struct pa_render_cam {
  uint32_t w, h;
  GLuint fbo, rb[2];       /* rb: colour, depth */
  GLuint ms_fbo, ms_rb[2]; /* multisampled target, or 0 */
  uint32_t samples;
  GLuint pbo[PA_RENDER_CAM_SLOTS];
  pa_frame meta[PA_RENDER_CAM_SLOTS];
  uint32_t head, pending; /* next slot to fill; frames in flight */
};

int pa_render_cam_create(pa_render_cam **out, uint32_t w, uint32_t h,
                         char *err, size_t err_sz) {
  *out = NULL;
  if (w < 1 || h < 1 || w > CAM_MAX_SIDE || h > CAM_MAX_SIDE) {
    snprintf(err, err_sz, "camera: size %ux%u is outside 1..%d", w, h,
             CAM_MAX_SIDE);
    return -1;
  }
  pa_render_cam *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(err, err_sz, "camera: out of memory");
    return -1;
  }
  c->w = w, c->h = h;
  GLenum st = pa_render_target(0, (GLsizei)w, (GLsizei)h, &c->fbo, c->rb);
  if (st != GL_FRAMEBUFFER_COMPLETE) {
    snprintf(err, err_sz, "camera: %ux%u framebuffer incomplete (0x%04x)", w,
             h, (unsigned)st);
    pa_render_cam_free(c);
    return -1;
  }
  glGenBuffers(PA_RENDER_CAM_SLOTS, c->pbo);
  for (int i = 0; i < PA_RENDER_CAM_SLOTS; i++) {
    glBindBuffer(GL_PIXEL_PACK_BUFFER, c->pbo[i]);
    glBufferData(GL_PIXEL_PACK_BUFFER, (GLsizeiptr)w * h * 4, NULL,
                 GL_STREAM_READ);
  }
  glBindBuffer(GL_PIXEL_PACK_BUFFER, 0);
  if (pa_render_gl_check("creating a camera target", err, err_sz) < 0) {
    pa_render_cam_free(c);
    return -1;
  }
  *out = c;
  return 0;
}

static void cam_free_ms(pa_render_cam *c) {
  if (c->ms_fbo)
    glDeleteFramebuffers(1, &c->ms_fbo);
  if (c->ms_rb[0])
    glDeleteRenderbuffers(2, c->ms_rb);
  c->ms_fbo = c->ms_rb[0] = c->ms_rb[1] = 0;
  c->samples = 0;
}

int pa_render_cam_set_msaa(pa_render_cam *c, uint32_t samples, char *err,
                           size_t err_sz) {
  GLint max = 0;
  glGetIntegerv(GL_MAX_SAMPLES, &max);
  if (samples > 1 && samples > (uint32_t)max) {
    snprintf(err, err_sz, "camera: %u MSAA samples, the GL allows up to %d",
             samples, max);
    return -1;
  }
  cam_free_ms(c);
  if (samples <= 1)
    return 0;
  GLenum st = pa_render_target((GLsizei)samples, (GLsizei)c->w, (GLsizei)c->h,
                               &c->ms_fbo, c->ms_rb);
  if (st != GL_FRAMEBUFFER_COMPLETE) {
    snprintf(err, err_sz, "camera: %u-sample framebuffer incomplete (0x%04x)",
             samples, (unsigned)st);
    cam_free_ms(c);
    return -1;
  }
  c->samples = samples;
  if (pa_render_gl_check("creating a multisampled camera target", err, err_sz) <
      0) {
    cam_free_ms(c);
    return -1;
  }
  return 0;
}

uint32_t pa_render_cam_msaa(const pa_render_cam *c) { return c->samples; }

void pa_render_cam_free(pa_render_cam *c) {
  if (!c)
    return;
  cam_free_ms(c);
  if (c->pbo[0])
    glDeleteBuffers(PA_RENDER_CAM_SLOTS, c->pbo);
  if (c->fbo)
    glDeleteFramebuffers(1, &c->fbo);
  if (c->rb[0])
    glDeleteRenderbuffers(2, c->rb);
  free(c);
}

uint32_t pa_render_cam_width(const pa_render_cam *c) { return c->w; }
uint32_t pa_render_cam_height(const pa_render_cam *c) { return c->h; }
uint32_t pa_render_cam_pending(const pa_render_cam *c) { return c->pending; }

int pa_render_cam_submit(pa_render_cam *c, const pa_render_scene *s,
                         const pa_render_view *v, const pa_frame *meta,
                         char *err, size_t err_sz) {
  if (c->pending >= PA_RENDER_CAM_SLOTS) {
    snprintf(err, err_sz, "camera: %u frames in flight, fetch one first",
             c->pending);
    return -1;
  }
  if (!(v->fov > 0 && v->fov < M_PI) || !isfinite(v->x) || !isfinite(v->y) ||
      !isfinite(v->z) || !isfinite(v->yaw) || !isfinite(v->pitch)) {
    snprintf(err, err_sz, "camera: bad view (fov %g rad, pose %g %g %g)",
             v->fov, v->x, v->y, v->yaw);
    return -1;
  }
  float view[16], proj[16];
  pa_render_view_matrices(v, c->w, c->h, view, proj);
  glBindFramebuffer(GL_FRAMEBUFFER, c->ms_fbo ? c->ms_fbo : c->fbo);
  glViewport(0, 0, (GLsizei)c->w, (GLsizei)c->h);
  glClearColor(PA_RENDER_SKY_RGB, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
  pa_render_scene_draw_culled(s, view, proj, v->skip_robot, v, c->w);
  /* solid visuals with the scene: lit, fogged and smoothed as it is */
  if (cam_vis && cam_vis_lines)
    pa_render_visuals_solid(cam_vis_lines, cam_vis, s, !v->all_visuals);
  if (c->ms_fbo) {
    /* resolve the samples (and depth, for the visuals) into the
     * single-sample target */
    glBindFramebuffer(GL_READ_FRAMEBUFFER, c->ms_fbo);
    glBindFramebuffer(GL_DRAW_FRAMEBUFFER, c->fbo);
    glBlitFramebuffer(0, 0, (GLint)c->w, (GLint)c->h, 0, 0, (GLint)c->w,
                      (GLint)c->h, GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT,
                      GL_NEAREST);
    glBindFramebuffer(GL_FRAMEBUFFER, c->fbo);
  }
  /* The line visuals after the resolve: they keep their exact pixel
   * widths and colours (an overlay, not smoothed). */
  if (cam_vis && cam_vis_lines) {
    float vp[16];
    pa_render_mat_mul(vp, proj, view);
    pa_render_visuals_draw(cam_vis_lines, cam_vis, vp, !v->all_visuals);
  }
  uint32_t slot = c->head;
  glPixelStorei(GL_PACK_ALIGNMENT, 4);
  glReadBuffer(GL_COLOR_ATTACHMENT0);
  glBindBuffer(GL_PIXEL_PACK_BUFFER, c->pbo[slot]);
  /* With a pack buffer bound, this only queues the copy. RGBA is the
   * target's own layout (a plain copy); RGB made the GL convert per pixel,
   * slower than dropping alpha in the fetch. */
  glReadPixels(0, 0, (GLsizei)c->w, (GLsizei)c->h, GL_RGBA, GL_UNSIGNED_BYTE,
               NULL);
  glBindBuffer(GL_PIXEL_PACK_BUFFER, 0);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  if (meta)
    c->meta[slot] = *meta;
  else
    memset(&c->meta[slot], 0, sizeof c->meta[slot]);
  c->head = (slot + 1) % PA_RENDER_CAM_SLOTS;
  c->pending++;
  return pa_render_gl_check("rendering a camera frame", err, err_sz);
}

const pa_frame *pa_render_cam_peek(const pa_render_cam *c) {
  if (!c->pending)
    return NULL;
  return &c->meta[(c->head + PA_RENDER_CAM_SLOTS - c->pending) %
                  PA_RENDER_CAM_SLOTS];
}

/* Drops alpha from a row of n RGBA pixels: four at a time in two word
 * stores (12 bytes) where the byte order allows, the rest bytewise. */
static void rgba_row_to_rgb_words(uint8_t *dst, const uint8_t *src,
                                  uint32_t n) {
  uint32_t i = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  for (; i + 4 <= n; i += 4) {
    uint32_t p[4];
    memcpy(p, src + 4 * (size_t)i, sizeof p);
    uint64_t lo = (uint64_t)(p[0] & 0xffffffu) |
                  (uint64_t)(p[1] & 0xffffffu) << 24 | (uint64_t)p[2] << 48;
    uint32_t hi = (p[2] >> 16 & 0xffu) | (p[3] & 0xffffffu) << 8;
    memcpy(dst + 3 * (size_t)i, &lo, sizeof lo);
    memcpy(dst + 3 * (size_t)i + 8, &hi, sizeof hi);
  }
#endif
  for (; i < n; i++)
    memcpy(dst + 3 * (size_t)i, src + 4 * (size_t)i, 3);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* The same with AVX2: 8 pixels a step, a byte shuffle per 128-bit lane
 * (4 pixels to 12 bytes) and a lane-crossing move packing the two 12s;
 * each 32-byte store overlaps the next one's start, so the last steps
 * (and a row shorter than 11 pixels) go through the word version. The
 * readback's serial share on the rendering thread: a third of it was this
 * loop. */
__attribute__((target("avx2"))) static void
rgba_row_to_rgb_avx2(uint8_t *dst, const uint8_t *src, uint32_t n) {
  const __m256i shuf = _mm256_setr_epi8(
      0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1, /* lane 0 */
      0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  const __m256i pack = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7);
  uint32_t i = 0;
  /* a store writes 32 bytes at 3i: inside the row while 3i + 32 <= 3n */
  for (; 3 * (uint64_t)i + 32 <= 3 * (uint64_t)n; i += 8) {
    __m256i v = _mm256_loadu_si256((const __m256i *)(src + 4 * (size_t)i));
    v = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(v, shuf), pack);
    _mm256_storeu_si256((__m256i *)(dst + 3 * (size_t)i), v);
  }
  rgba_row_to_rgb_words(dst + 3 * (size_t)i, src + 4 * (size_t)i, n - i);
}
#endif

void pa_render_rgba_to_rgb(uint8_t *dst, const uint8_t *src, uint32_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  static int avx2 = -1; /* every thread finds the same: relaxed */
  int has = __atomic_load_n(&avx2, __ATOMIC_RELAXED);
  if (has < 0) {
    has = __builtin_cpu_supports("avx2") ? 1 : 0;
    __atomic_store_n(&avx2, has, __ATOMIC_RELAXED);
  }
  if (has) {
    rgba_row_to_rgb_avx2(dst, src, n);
    return;
  }
#endif
  rgba_row_to_rgb_words(dst, src, n);
}

int pa_render_cam_fetch(pa_render_cam *c, pa_frame *meta, uint8_t *rgb,
                        char *err, size_t err_sz) {
  if (!c->pending) {
    snprintf(err, err_sz, "camera: no frame in flight");
    return -1;
  }
  uint32_t slot =
      (c->head + PA_RENDER_CAM_SLOTS - c->pending) % PA_RENDER_CAM_SLOTS;
  c->pending--;
  size_t row = (size_t)c->w * 3, row4 = (size_t)c->w * 4;
  glBindBuffer(GL_PIXEL_PACK_BUFFER, c->pbo[slot]);
  const uint8_t *src = glMapBufferRange(
      GL_PIXEL_PACK_BUFFER, 0, (GLsizeiptr)(row4 * c->h), GL_MAP_READ_BIT);
  if (!src) {
    glBindBuffer(GL_PIXEL_PACK_BUFFER, 0);
    if (pa_render_gl_check("mapping a camera frame", err, err_sz) == 0)
      snprintf(err, err_sz, "camera: mapping the pixel buffer failed");
    return -1;
  }
  /* GL rows run bottom-up; the ring wants row 0 at the top. */
  for (uint32_t y = 0; y < c->h; y++)
    pa_render_rgba_to_rgb(rgb + (size_t)y * row,
                          src + (size_t)(c->h - 1 - y) * row4, c->w);
  glUnmapBuffer(GL_PIXEL_PACK_BUFFER);
  glBindBuffer(GL_PIXEL_PACK_BUFFER, 0);
  if (meta)
    *meta = c->meta[slot];
  return pa_render_gl_check("reading a camera frame", err, err_sz);
}

int pa_render_cam_render(pa_render_cam *c, const pa_render_scene *s,
                         const pa_render_view *v, uint8_t *rgb, char *err,
                         size_t err_sz) {
  while (c->pending)
    if (pa_render_cam_fetch(c, NULL, rgb, err, err_sz) < 0)
      return -1;
  if (pa_render_cam_submit(c, s, v, NULL, err, err_sz) < 0)
    return -1;
  return pa_render_cam_fetch(c, NULL, rgb, err, err_sz);
}

int pa_render_write_png(const char *path, const uint8_t *rgb, uint32_t w,
                        uint32_t h, char *err, size_t err_sz) {
  if (!w || !h || w > 16384 || h > 16384) {
    snprintf(err, err_sz, "%s: image size %ux%u is invalid", path, w, h);
    return -1;
  }
  if (!stbi_write_png(path, (int)w, (int)h, 3, rgb, (int)(w * 3))) {
    snprintf(err, err_sz, "%s: cannot write the PNG", path);
    return -1;
  }
  return 0;
}
