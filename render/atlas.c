/* atlas.c - batched head cameras: n views of one size drawn into the tiles
 * of one framebuffer and read back at once (pa_render_atlas.h). On
 * llvmpipe a small camera costs mostly per-frame overhead (target switch,
 * clear, readback, the wait for the rasteriser), which one atlas pays once
 * for all its tiles. */
#include "pa_render_atlas.h"
#include "render_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ATLAS_MAX_FB                                                           \
  2048u /* framebuffer side [px]: more tiles, more passes                      \
         */

struct pa_render_atlas {
  uint32_t w, h;       /* tile [px] */
  uint32_t cols, rows; /* of the current framebuffer */
  GLuint fbo, rb[2];
  uint8_t *rgba; /* readback, cols*w x rows*h RGBA */
  bool *active;  /* the scene's robots' pose flags, kept */
  uint32_t active_cap;
};

int pa_render_atlas_create(pa_render_atlas **out, uint32_t w, uint32_t h,
                           char *err, size_t err_sz) {
  *out = NULL;
  if (w < 1 || h < 1 || w > PA_RENDER_ATLAS_MAX_SIDE ||
      h > PA_RENDER_ATLAS_MAX_SIDE) {
    snprintf(err, err_sz, "atlas: tile size %ux%u is outside 1..%u", w, h,
             PA_RENDER_ATLAS_MAX_SIDE);
    return -1;
  }
  pa_render_atlas *a = calloc(1, sizeof *a);
  if (!a) {
    snprintf(err, err_sz, "atlas: out of memory");
    return -1;
  }
  a->w = w, a->h = h;
  *out = a;
  return 0;
}

static void atlas_free_fb(pa_render_atlas *a) {
  if (a->fbo)
    glDeleteFramebuffers(1, &a->fbo);
  if (a->rb[0])
    glDeleteRenderbuffers(2, a->rb);
  a->fbo = a->rb[0] = a->rb[1] = 0;
  free(a->rgba);
  a->rgba = NULL;
  a->cols = a->rows = 0;
}

void pa_render_atlas_free(pa_render_atlas *a) {
  if (!a)
    return;
  atlas_free_fb(a);
  free(a->active);
  free(a);
}

uint32_t pa_render_atlas_width(const pa_render_atlas *a) { return a->w; }
uint32_t pa_render_atlas_height(const pa_render_atlas *a) { return a->h; }

uint32_t pa_render_atlas_tiles_per_pass(const pa_render_atlas *a) {
  return (ATLAS_MAX_FB / a->w) * (ATLAS_MAX_FB / a->h);
}

/* A framebuffer of cols x rows tiles for n views (as square as the limits
 * let it be: less to clear and read than one long strip). */
static int atlas_fit(pa_render_atlas *a, uint32_t n, char *err, size_t err_sz) {
  uint32_t max_c = ATLAS_MAX_FB / a->w, max_r = ATLAS_MAX_FB / a->h;
  uint32_t cols = (uint32_t)ceil(sqrt((double)n * a->h / a->w));
  if (cols < 1)
    cols = 1;
  if (cols > max_c)
    cols = max_c;
  if (cols > n)
    cols = n;
  uint32_t rows = (n + cols - 1) / cols;
  if (rows > max_r)
    rows = max_r;
  if (a->fbo && a->cols >= cols && a->rows >= rows)
    return 0; /* the one we have holds them */
  atlas_free_fb(a);
  GLsizei fw = (GLsizei)(cols * a->w), fh = (GLsizei)(rows * a->h);
  GLenum st = pa_render_target(0, fw, fh, &a->fbo, a->rb);
  a->rgba = malloc((size_t)fw * (size_t)fh * 4);
  if (st != GL_FRAMEBUFFER_COMPLETE || !a->rgba) {
    snprintf(err, err_sz, "atlas: %dx%d framebuffer %s (0x%04x)", (int)fw,
             (int)fh, a->rgba ? "incomplete" : "out of memory", (unsigned)st);
    atlas_free_fb(a);
    return -1;
  }
  a->cols = cols, a->rows = rows;
  return pa_render_gl_check("creating an atlas target", err, err_sz);
}

/* Copies tile t of the readback to dst (h rows of w RGB, row 0 = top). */
static void tile_out(const pa_render_atlas *a, uint32_t t, uint8_t *dst) {
  uint32_t c = t % a->cols, r = t / a->cols;
  size_t stride = (size_t)a->cols * a->w * 4;
  for (uint32_t y = 0; y < a->h; y++) {
    const uint8_t *src =
        a->rgba + ((size_t)r * a->h + (a->h - 1 - y)) * stride + c * a->w * 4;
    uint8_t *d = dst + (size_t)y * a->w * 3;
    for (uint32_t x = 0; x < a->w; x++)
      memcpy(d + 3 * x, src + 4 * x, 3);
  }
}

/* Whether robot p (its body, head and soft shadow within `reach` of its
 * centre) can show in v's horizontal field of view: the one cost that grows
 * with the robots, so a view draws only those in its wedge. */
static bool robot_in_view(const pa_render_view *v, const pa_render_pose *p,
                          double reach) {
  double dx = p->x - v->x, dy = p->y - v->y, d = hypot(dx, dy);
  if (d <= reach + 0.05)
    return true;
  double off = fabs(remainder(atan2(dy, dx) - v->yaw, 2 * M_PI));
  return off <= v->fov / 2 + asin(reach / d) + 0.02;
}

/* Marks the robots v cannot see inactive (the kept flags restore them). */
static void cull_robots(pa_render_atlas *a, pa_render_scene *s,
                        const pa_render_view *v) {
  for (uint32_t i = 0; i < s->pose_count; i++) {
    const rrobot *r = &s->robots[i];
    /* the shadow reaches at most about the robot's height past its body */
    double reach = r->radius + r->height + r->head_height + 0.5;
    s->poses[i].active =
        a->active[i] && (s->no_culling || v->pitch != 0 ||
                         robot_in_view(v, &s->poses[i], reach));
  }
}

static int atlas_pass(pa_render_atlas *a, pa_render_scene *s,
                      const pa_render_view *views, const bool *draw, uint32_t n,
                      uint8_t *rgb, char *err, size_t err_sz) {
  glBindFramebuffer(GL_FRAMEBUFFER, a->fbo);
  GLsizei fw = (GLsizei)(a->cols * a->w),
          used_rows = (GLsizei)((n + a->cols - 1) / a->cols);
  GLsizei fh = used_rows * (GLsizei)a->h;
  glDisable(GL_SCISSOR_TEST);
  glViewport(0, 0, fw, fh);
  glClearColor(PA_RENDER_SKY_RGB, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
  glEnable(GL_SCISSOR_TEST); /* nothing of a view spills into its neighbours */
  for (uint32_t i = 0; i < n; i++) {
    if (draw && !draw[i])
      continue;
    GLint x = (GLint)((i % a->cols) * a->w), y = (GLint)((i / a->cols) * a->h);
    glViewport(x, y, (GLsizei)a->w, (GLsizei)a->h);
    glScissor(x, y, (GLsizei)a->w, (GLsizei)a->h);
    float view[16], proj[16];
    pa_render_view_matrices(&views[i], a->w, a->h, view, proj);
    cull_robots(a, s, &views[i]);
    pa_render_scene_draw_culled(s, view, proj, views[i].skip_robot, &views[i]);
  }
  for (uint32_t i = 0; i < s->pose_count; i++)
    s->poses[i].active = a->active[i];
  glDisable(GL_SCISSOR_TEST);
  glPixelStorei(GL_PACK_ALIGNMENT, 4);
  glReadBuffer(GL_COLOR_ATTACHMENT0);
  /* RGBA: the target's own layout, a plain copy on llvmpipe */
  glReadPixels(0, 0, fw, fh, GL_RGBA, GL_UNSIGNED_BYTE, a->rgba);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  if (pa_render_gl_check("rendering an atlas", err, err_sz) < 0)
    return -1;
  size_t tile = (size_t)a->w * a->h * 3;
  for (uint32_t i = 0; i < n; i++) {
    if (draw && !draw[i])
      memset(rgb + i * tile, 0, tile);
    else
      tile_out(a, i, rgb + i * tile);
  }
  return 0;
}

int pa_render_atlas_render(pa_render_atlas *a, pa_render_scene *s,
                           const pa_render_view *views, const bool *draw,
                           uint32_t n, uint8_t *rgb, char *err, size_t err_sz) {
  if (n < 1 || n > PA_RENDER_ATLAS_MAX_TILES) {
    snprintf(err, err_sz, "atlas: %u views is outside 1..%u", n,
             PA_RENDER_ATLAS_MAX_TILES);
    return -1;
  }
  for (uint32_t i = 0; i < n; i++) {
    const pa_render_view *v = &views[i];
    if ((!draw || draw[i]) &&
        (!(v->fov > 0 && v->fov < M_PI) || !isfinite(v->x) || !isfinite(v->y) ||
         !isfinite(v->z) || !isfinite(v->yaw) || !isfinite(v->pitch))) {
      snprintf(err, err_sz, "atlas: view %u is bad (fov %g rad, pose %g %g %g)",
               i, v->fov, v->x, v->y, v->yaw);
      return -1;
    }
  }
  if (s->pose_count > a->active_cap) {
    bool *k = realloc(a->active, s->pose_count * sizeof *k);
    if (!k) {
      snprintf(err, err_sz, "atlas: out of memory");
      return -1;
    }
    a->active = k, a->active_cap = s->pose_count;
  }
  for (uint32_t i = 0; i < s->pose_count; i++)
    a->active[i] = s->poses[i].active;
  uint32_t per = pa_render_atlas_tiles_per_pass(a);
  if (atlas_fit(a, n < per ? n : per, err, err_sz) < 0)
    return -1;
  size_t tile = (size_t)a->w * a->h * 3;
  for (uint32_t at = 0; at < n; at += per) {
    uint32_t k = n - at < per ? n - at : per;
    if (atlas_pass(a, s, views + at, draw ? draw + at : NULL, k,
                   rgb + at * tile, err, err_sz) < 0)
      return -1;
  }
  return 0;
}
