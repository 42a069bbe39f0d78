/* visuals.c - the clients' line and point visual objects (polylines, point
 * clouds, text; shm/pa_visual.h) as lines and points in world coordinates,
 * and the one GL path that draws them (and the viewer's overlay): the
 * viewer, the spectator's screenshots and videos and, for visuals marked
 * camera_visible, the head cameras. The solid ones are visuals_solid.c. */
#include "render_int.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define PA_VIS_GLYPH_H 6   /* font grid units of a letter's height */
#define PA_VIS_GLYPH_ADV 5 /* and of the advance (a unit of space) */

/* Local point l of visual v in world coordinates (rotation by its
 * quaternion w, x, y, z, then its position). */
static void to_world(const pa_visual *v, const float l[3], float out[3]) {
  float w = v->quat[0], x = v->quat[1], y = v->quat[2], z = v->quat[3];
  /* t = 2 q_v x l; l' = l + w t + q_v x t */
  float tx = 2 * (y * l[2] - z * l[1]);
  float ty = 2 * (z * l[0] - x * l[2]);
  float tz = 2 * (x * l[1] - y * l[0]);
  out[0] = l[0] + w * tx + (y * tz - z * ty) + v->pos[0];
  out[1] = l[1] + w * ty + (z * tx - x * tz) + v->pos[1];
  out[2] = l[2] + w * tz + (x * ty - y * tx) + v->pos[2];
}

static void seg(const pa_vis_sink *s, const pa_visual *v, const float a[3],
                const float b[3], const float rgb[3]) {
  float wa[3], wb[3];
  to_world(v, a, wa);
  to_world(v, b, wb);
  s->line(s->arg, wa, wb, rgb);
}

/* ---- a stroke font for text visuals -------------------------------------- */

/* Glyphs on a grid 4 wide and 6 high (y up): "xy,xy,..." is a line strip
 * through the points, '|' lifts the pen. Lower case is drawn as upper
 * case; a character without a glyph is a box. */
typedef struct glyph {
  char c;
  const char *s;
} glyph;
static const glyph GLYPHS[] = {
    {'0', "00,40,46,06,00|00,46"},
    {'1', "15,26,20|10,30"},
    {'2', "05,16,36,45,44,00,40"},
    {'3', "05,16,36,45,44,33,42,41,30,10,01|23,33"},
    {'4', "36,30|36,02,42"},
    {'5', "46,06,04,34,43,41,30,00"},
    {'6', "45,36,16,05,01,10,30,41,42,33,03"},
    {'7', "06,46,20"},
    {'8', "13,04,05,16,36,45,44,33,13,02,01,10,30,41,42,33"},
    {'9', "43,13,04,05,16,36,45,41,30,10,01"},
    {'A', "00,04,26,44,40|03,43"},
    {'B', "00,06,36,45,44,33,03|33,42,41,30,00"},
    {'C', "45,36,16,05,01,10,30,41"},
    {'D', "00,06,26,44,42,20,00"},
    {'E', "40,00,06,46|03,33"},
    {'F', "00,06,46|03,33"},
    {'G', "45,36,16,05,01,10,30,41,43,23"},
    {'H', "00,06|40,46|03,43"},
    {'I', "10,30|20,26|16,36"},
    {'J', "46,41,30,10,01"},
    {'K', "00,06|46,03,40"},
    {'L', "06,00,40"},
    {'M', "00,06,23,46,40"},
    {'N', "00,06,40,46"},
    {'O', "10,01,05,16,36,45,41,30,10"},
    {'P', "00,06,36,45,44,33,03"},
    {'Q', "10,01,05,16,36,45,41,30,10|22,40"},
    {'R', "00,06,36,45,44,33,03|23,40"},
    {'S', "45,36,16,05,04,13,33,42,41,30,10,01"},
    {'T', "06,46|26,20"},
    {'U', "06,01,10,30,41,46"},
    {'V', "06,20,46"},
    {'W', "06,10,23,30,46"},
    {'X', "06,40|00,46"},
    {'Y', "06,23,46|23,20"},
    {'Z', "06,46,00,40"},
    {' ', ""},
    {'.', "10,20,21,11,10"},
    {',', "21,10"},
    {':', "12,22|14,24"},
    {';', "14,24|22,11"},
    {'-', "03,43"},
    {'+', "03,43|21,25"},
    {'_', "00,40"},
    {'/', "00,46"},
    {'\\', "06,40"},
    {'(', "36,25,21,30"},
    {')', "16,25,21,10"},
    {'[', "36,16,10,30"},
    {']', "16,36,30,10"},
    {'<', "45,03,41"},
    {'>', "05,43,01"},
    {'=', "02,42|04,44"},
    {'!', "26,22|20,21"},
    {'?', "05,16,36,45,44,23,22|20,21"},
    {'%', "06,15|00,46|31,40"},
    {'\'', "26,24"},
    {'"', "16,14|36,34"},
    {'*', "03,43|11,35|15,31"},
    {'#', "10,16|30,36|02,42|04,44"},
};
static const char BOX_GLYPH[] = "00,40,46,06,00";

static const char *glyph_of(char c) {
  if (c >= 'a' && c <= 'z')
    c = (char)(c - 'a' + 'A');
  for (size_t i = 0; i < sizeof GLYPHS / sizeof GLYPHS[0]; i++)
    if (GLYPHS[i].c == c)
      return GLYPHS[i].s;
  return BOX_GLYPH;
}

/* Text v->text in the visual's local x-y plane (x along the line, y up the
 * letters; flat on the floor unless oriented otherwise), size[0] high,
 * centred on its position. */
static void text(const pa_vis_sink *s, const pa_visual *v) {
  char t[PA_VIS_TEXT_MAX];
  memcpy(t, v->text, sizeof t);
  t[sizeof t - 1] = 0; /* another process's memory */
  size_t n = strlen(t);
  if (!n)
    return;
  float h = v->size[0] > 0 ? v->size[0] : 0.2f, u = h / PA_VIS_GLYPH_H;
  float adv = u * PA_VIS_GLYPH_ADV;
  float x0 = -(adv * (float)n - u) / 2, y0 = -h / 2;
  for (size_t k = 0; k < n; k++) {
    const char *g = glyph_of(t[k]);
    float ox = x0 + adv * (float)k;
    bool pen = false;
    float prev[3] = {0};
    for (const char *p = g; *p;) {
      if (*p == '|') {
        pen = false;
        p++;
        continue;
      }
      if (*p == ',') {
        p++;
        continue;
      }
      float q[3] = {ox + u * (float)(p[0] - '0'), y0 + u * (float)(p[1] - '0'),
                    0};
      if (pen)
        seg(s, v, prev, q, v->rgba);
      memcpy(prev, q, sizeof prev);
      pen = true;
      p += p[1] ? 2 : 1;
    }
  }
}

static void rgb_of(uint32_t rgba, const float def[3], float out[3]) {
  if (!rgba) {
    memcpy(out, def, 3 * sizeof *out);
    return;
  }
  out[0] = (float)(rgba >> 24 & 255) / 255.0f;
  out[1] = (float)(rgba >> 16 & 255) / 255.0f;
  out[2] = (float)(rgba >> 8 & 255) / 255.0f;
}

static void shape(const pa_vis_sink *s, const pa_visual_block *b,
                  const pa_visual *v) {
  const float *rgb = v->rgba;
  switch (v->type) {
  case PA_VIS_POLYLINE:
    for (uint32_t k = 1; k < v->pt_n; k++) {
      const pa_vis_point *p = &b->pt[v->pt_off + k - 1], *q = p + 1;
      float c[3];
      rgb_of(q->rgba, rgb, c);
      s->line(s->arg, p->p, q->p, c);
    }
    break;
  case PA_VIS_TEXT:
    text(s, v);
    break;
  default:
    break;
  }
}

/* Whether visual v's points lie inside the block (another process's data);
 * a visual with no points has none to check, wherever its offset. */
static bool points_ok(const pa_visual_block *b, const pa_visual *v) {
  return b->pt_used <= PA_VIS_POINTS_MAX &&
         (!v->pt_n || (uint64_t)v->pt_off + v->pt_n <= b->pt_used);
}

static bool drawn(const pa_visual_block *b, const pa_visual *v,
                  const pa_vis_sink *s) {
  return v->visible && (!s->camera_only || v->camera_visible) &&
         points_ok(b, v);
}

static void cloud(const pa_vis_sink *s, const pa_visual_block *b,
                  const pa_visual *v) {
  for (uint32_t k = 0; k < v->pt_n; k++) {
    const pa_vis_point *p = &b->pt[v->pt_off + k];
    float c[3];
    rgb_of(p->rgba, v->rgba, c);
    s->point(s->arg, p->p, c);
  }
}

/* The shapes' lines, and the polylines' when with_polylines. */
static void visuals_lines_of(const pa_visual_block *b, const pa_vis_sink *s,
                             bool with_polylines) {
  for (uint32_t i = 0; i < b->count && i < PA_VIS_MAX; i++) {
    const pa_visual *v = &b->v[i];
    if (v->type != PA_VIS_POINT_CLOUD && !pa_render_vis_solid(v->type) &&
        (with_polylines || v->type != PA_VIS_POLYLINE) && drawn(b, v, s))
      shape(s, b, v);
  }
}

void pa_render_visuals_lines(const pa_visual_block *b, const pa_vis_sink *s) {
  visuals_lines_of(b, s, true);
}

void pa_render_visuals_points(const pa_visual_block *b, const pa_vis_sink *s) {
  for (uint32_t i = 0; i < b->count && i < PA_VIS_MAX; i++) {
    const pa_visual *v = &b->v[i];
    if (v->type == PA_VIS_POINT_CLOUD && drawn(b, v, s))
      cloud(s, b, v);
  }
}

/* ---- GL ----------------------------------------------------------------- */

static const char *lines_vs =
    "#version 330 core\n"
    "layout(location = 0) in vec3 a_pos;\n"
    "layout(location = 1) in vec3 a_rgb;\n"
    "uniform mat4 u_vp;\n"
    "uniform float u_psize;\n"
    "uniform vec2 u_off;\n"
    "out vec3 v_rgb;\n"
    "void main() { v_rgb = a_rgb; gl_PointSize = u_psize;\n"
    "  gl_Position = u_vp * vec4(a_pos, 1.0);\n"
    "  gl_Position.xy += u_off * gl_Position.w; }\n";
static const char *lines_fs = "#version 330 core\n"
                              "in vec3 v_rgb; out vec4 o_colour;\n"
                              "void main() { o_colour = vec4(v_rgb, 1.0); }\n";

int pa_render_lines_init(pa_render_lines *L, char *err, size_t err_sz) {
  memset(L, 0, sizeof *L);
  if (pa_render_program(&L->prog, lines_vs, lines_fs, err, err_sz) < 0)
    return -1;
  L->u_vp = glGetUniformLocation(L->prog, "u_vp");
  L->u_psize = glGetUniformLocation(L->prog, "u_psize");
  L->u_off = glGetUniformLocation(L->prog, "u_off");
  glGenVertexArrays(1, &L->vao);
  glGenBuffers(1, &L->vbo);
  glBindVertexArray(L->vao);
  glBindBuffer(GL_ARRAY_BUFFER, L->vbo);
  static const pa_render_attr attrs[] = {
      {3, GL_FLOAT, GL_FALSE, offsetof(pa_lvertex, pos)},
      {3, GL_FLOAT, GL_FALSE, offsetof(pa_lvertex, rgb)}};
  pa_render_attribs(sizeof(pa_lvertex), attrs, 2);
  glBindVertexArray(0);
  glBindBuffer(GL_ARRAY_BUFFER, 0);
  return pa_render_gl_check("creating the line program", err, err_sz);
}

void pa_render_lines_free(pa_render_lines *L) {
  pa_render_solid_free(L);
  if (L->vbo)
    glDeleteBuffers(1, &L->vbo);
  if (L->vao)
    glDeleteVertexArrays(1, &L->vao);
  if (L->prog)
    glDeleteProgram(L->prog);
  free(L->v);
  memset(L, 0, sizeof *L);
}

void pa_render_lines_push(pa_render_lines *L, double x, double y, double z,
                          const float rgb[3]) {
  if (L->n == L->cap) {
    size_t cap = L->cap ? L->cap * 2 : 4096;
    pa_lvertex *n = realloc(L->v, cap * sizeof *n);
    if (!n)
      return; /* annotations are cosmetic: draw what fits */
    L->v = n, L->cap = cap;
  }
  pa_lvertex *o = &L->v[L->n++];
  o->pos[0] = (float)x, o->pos[1] = (float)y, o->pos[2] = (float)z;
  memcpy(o->rgb, rgb, sizeof o->rgb);
}

void pa_render_lines_begin(pa_render_lines *L, const float vp[16]) {
  glUseProgram(L->prog);
  glUniformMatrix4fv(L->u_vp, 1, GL_FALSE, vp);
  glUniform2f(L->u_off, 0, 0);
  glEnable(GL_PROGRAM_POINT_SIZE);
  glBindVertexArray(L->vao);
  glBindBuffer(GL_ARRAY_BUFFER, L->vbo);
  glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)(L->n * sizeof *L->v), L->v,
               GL_STREAM_DRAW);
}

void pa_render_lines_draw(pa_render_lines *L, GLenum mode, size_t first,
                          size_t count, float psize) {
  if (!count)
    return;
  glUniform1f(L->u_psize, psize);
  glDrawArrays(mode, (GLint)first, (GLsizei)count);
}

void pa_render_lines_draw_wide(pa_render_lines *L, size_t first, size_t count,
                               float width) {
  int w = (int)lroundf(width);
  if (w <= 1 || !count) {
    pa_render_lines_draw(L, GL_LINES, first, count, 1.0f);
    return;
  }
  /* A core context draws lines 1 px wide only: the same lines again,
   * shifted by whole pixels across and down, make a w px brush. */
  GLint vpt[4];
  glGetIntegerv(GL_VIEWPORT, vpt);
  float sx = 2.0f / (float)(vpt[2] > 0 ? vpt[2] : 1);
  float sy = 2.0f / (float)(vpt[3] > 0 ? vpt[3] : 1);
  for (int k = 0; k < w; k++) {
    float o = (float)k - (float)(w - 1) / 2;
    glUniform2f(L->u_off, o * sx, 0);
    pa_render_lines_draw(L, GL_LINES, first, count, 1.0f);
    glUniform2f(L->u_off, 0, o * sy);
    pa_render_lines_draw(L, GL_LINES, first, count, 1.0f);
  }
  glUniform2f(L->u_off, 0, 0);
}

void pa_render_lines_end(void) {
  glBindVertexArray(0);
  glBindBuffer(GL_ARRAY_BUFFER, 0);
  glUseProgram(0);
}

static void lines_line(void *arg, const float a[3], const float b[3],
                       const float rgb[3]) {
  pa_render_lines_push(arg, a[0], a[1], a[2], rgb);
  pa_render_lines_push(arg, b[0], b[1], b[2], rgb);
}

static void lines_point(void *arg, const float p[3], const float rgb[3]) {
  pa_render_lines_push(arg, p[0], p[1], p[2], rgb);
}

#define CLOUD_PSIZE 3.0f /* [px] a point cloud without a size */

void pa_render_visuals_draw(pa_render_lines *L, const pa_visual_block *b,
                            const float vp[16], bool camera_only) {
  const pa_vis_sink sink = {lines_line, lines_point, L, camera_only};
  L->n = 0;
  /* Runs of vertices drawn alike: the shapes' lines (1 px), then each
   * polyline at its width and each cloud at its point size. */
  struct {
    size_t first, count;
    float size;
    bool points;
  } runs[PA_VIS_MAX + 1];
  uint32_t nr = 0;
  visuals_lines_of(b, &sink, false);
  runs[nr].first = 0, runs[nr].count = L->n, runs[nr].size = 1,
  runs[nr++].points = false;
  for (uint32_t i = 0; i < b->count && i < PA_VIS_MAX; i++) {
    const pa_visual *v = &b->v[i];
    bool cl = v->type == PA_VIS_POINT_CLOUD;
    if ((!cl && v->type != PA_VIS_POLYLINE) || !drawn(b, v, &sink))
      continue;
    size_t first = L->n;
    if (cl)
      cloud(&sink, b, v);
    else
      shape(&sink, b, v);
    float def = cl ? CLOUD_PSIZE : 1.0f;
    float sz = v->size[0] >= 1 && v->size[0] <= 64 ? v->size[0] : def;
    if (runs[nr - 1].points == cl && runs[nr - 1].size == sz &&
        runs[nr - 1].first + runs[nr - 1].count == first) {
      runs[nr - 1].count += L->n - first;
    } else {
      runs[nr].first = first, runs[nr].count = L->n - first;
      runs[nr].size = sz, runs[nr++].points = cl;
    }
  }
  if (!L->n)
    return;
  pa_render_lines_begin(L, vp);
  for (uint32_t k = 0; k < nr; k++) {
    if (runs[k].points)
      pa_render_lines_draw(L, GL_POINTS, runs[k].first, runs[k].count,
                           runs[k].size);
    else
      pa_render_lines_draw_wide(L, runs[k].first, runs[k].count, runs[k].size);
  }
  pa_render_lines_end();
}
