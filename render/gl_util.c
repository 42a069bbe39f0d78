/* gl_util.c - the GL pieces every view shares: matrices, GPU mesh
 * buffers, shader programs and the lit shader. */
#include "render_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- matrices ----------------------------------------------------------- */

void pa_render_mat_identity(float m[16]) {
  memset(m, 0, 16 * sizeof *m);
  m[0] = m[5] = m[10] = m[15] = 1.0f;
}

void pa_render_mat_mul(float out[16], const float a[16], const float b[16]) {
  float r[16];
  for (int c = 0; c < 4; c++)
    for (int row = 0; row < 4; row++) {
      float s = 0;
      for (int k = 0; k < 4; k++)
        s += a[k * 4 + row] * b[c * 4 + k];
      r[c * 4 + row] = s;
    }
  memcpy(out, r, sizeof r);
}

void pa_render_mat_perspective(float m[16], double fovy, double aspect,
                               double znear, double zfar) {
  double f = 1.0 / tan(fovy / 2);
  memset(m, 0, 16 * sizeof *m);
  m[0] = (float)(f / aspect);
  m[5] = (float)f;
  m[10] = (float)((zfar + znear) / (znear - zfar));
  m[11] = -1.0f;
  m[14] = (float)(2 * zfar * znear / (znear - zfar));
}

void pa_render_normalize3(double v[3]) {
  double l = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  if (l > 0)
    v[0] /= l, v[1] /= l, v[2] /= l;
}

void pa_render_mat_lookat(float m[16], const double eye[3],
                          const double centre[3], const double up[3]) {
  double f[3] = {centre[0] - eye[0], centre[1] - eye[1], centre[2] - eye[2]};
  pa_render_normalize3(f);
  double s[3] = {f[1] * up[2] - f[2] * up[1], f[2] * up[0] - f[0] * up[2],
                 f[0] * up[1] - f[1] * up[0]};
  pa_render_normalize3(s);
  double u[3] = {s[1] * f[2] - s[2] * f[1], s[2] * f[0] - s[0] * f[2],
                 s[0] * f[1] - s[1] * f[0]};
  pa_render_mat_identity(m);
  m[0] = (float)s[0], m[4] = (float)s[1], m[8] = (float)s[2];
  m[1] = (float)u[0], m[5] = (float)u[1], m[9] = (float)u[2];
  m[2] = (float)-f[0], m[6] = (float)-f[1], m[10] = (float)-f[2];
  m[12] = (float)-(s[0] * eye[0] + s[1] * eye[1] + s[2] * eye[2]);
  m[13] = (float)-(u[0] * eye[0] + u[1] * eye[1] + u[2] * eye[2]);
  m[14] = (float)(f[0] * eye[0] + f[1] * eye[1] + f[2] * eye[2]);
}

void pa_render_mat_pose(float m[16], double x, double y, double z, double yaw,
                        const double s[3]) {
  pa_render_mat_pose_cs(m, x, y, z, cos(yaw), sin(yaw), s);
}

void pa_render_mat_pose_cs(float m[16], double x, double y, double z, double c,
                           double sn, const double s[3]) {
  pa_render_mat_identity(m);
  m[0] = (float)(c * s[0]), m[1] = (float)(sn * s[0]);
  m[4] = (float)(-sn * s[1]), m[5] = (float)(c * s[1]);
  m[10] = (float)s[2];
  m[12] = (float)x, m[13] = (float)y, m[14] = (float)z;
}

/* ---- GPU meshes --------------------------------------------------------- */

int pa_render_gpu_upload(rgpu_mesh *g, const rmesh *m, char *err,
                         size_t err_sz) {
  memset(g, 0, sizeof *g);
  if (m->oom) {
    snprintf(err, err_sz, "scene: out of memory building geometry");
    return -1;
  }
  glGenVertexArrays(1, &g->vao);
  glGenBuffers(1, &g->vbo);
  glBindVertexArray(g->vao);
  glBindBuffer(GL_ARRAY_BUFFER, g->vbo);
  glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)m->n * (GLsizeiptr)sizeof(rvertex),
               m->v, GL_STATIC_DRAW);
  pa_render_rvertex_attribs();
  glBindVertexArray(0);
  g->count = (GLsizei)m->n;
  return pa_render_gl_check("uploading a mesh", err, err_sz);
}

void pa_render_gpu_free(rgpu_mesh *g) {
  if (g->vbo)
    glDeleteBuffers(1, &g->vbo);
  if (g->vao)
    glDeleteVertexArrays(1, &g->vao);
  memset(g, 0, sizeof *g);
}

/* ---- shaders ------------------------------------------------------------ */

/* What lit_vs and plain_vs both declare: one text, so the two stay in
 * step. */
#define LIT_UNIFORMS                                                           \
  "uniform mat4 u_model, u_view, u_proj;\n"                                    \
  "uniform vec4 u_tint;\n"                                                     \
  "uniform vec3 u_light;\n"                                                    \
  "uniform vec3 u_fog;\n"                                                      \
  "uniform float u_fog_density;\n"                                             \
  "out vec4 v_colour;\n"                                                       \
  "const vec3 fill = vec3(-0.62, -0.38, 0.69);\n"                              \
  "float shade_of(vec3 n) {\n"                                                 \
  "  return 0.5 + 0.55 * max(dot(n, u_light), 0.0)\n"                          \
  "       + 0.22 * max(dot(n, fill), 0.0);\n"                                  \
  "}\n"

/* Lighting and fog per vertex, the fragment shader a pass-through: on
 * llvmpipe the head camera's cost is its pixels, and the per-fragment fog
 * (exp2 of the interpolated eye distance) was a third of a frame. Lighting
 * is exact for flat faces (walls, boxes); the fog, mixed into the vertex
 * colour, is interpolated between vertices instead of evaluated per pixel,
 * which on the 2 m wall chunks and 1 m floor tiles keeps the head camera
 * within one grey level of the per-pixel image (docs/render.md). The
 * shadow-map variant (shadow.c: viewer, spectator) keeps its per-fragment
 * fog. Lambert from a key light (u_light, above and to one side) and a
 * weaker fill from the opposite side, plus ambient: a box shows its faces
 * in three distinct shades. Alpha is the vertex's opacity (its fourth colour
 * byte) times the tint's: blended draws (floor shadows) use it. */
static const char *lit_vs =
    "#version 330 core\n"
    "layout(location = 0) in vec3 a_pos;\n"
    "layout(location = 1) in vec3 a_normal;\n"
    "layout(location = 2) in vec4 a_colour;\n"
    /* Per instance (instanced visuals, visuals_solid.c); every other draw
     * leaves these arrays off and gets their defaults (0, 0, 0, 1): at the
     * origin, unturned, scale 1 + 0, colour times 1 - 0, alpha times 1. */
    "layout(location = 3) in vec3 a_ipos;\n"
    "layout(location = 4) in vec4 a_iquat;\n"  /* x, y, z, w */
    "layout(location = 5) in vec3 a_iscale;\n" /* scale - 1 */
    "layout(location = 6) in vec4 a_iinv;\n"   /* 1 - rgb, alpha */
    LIT_UNIFORMS "vec3 qrot(vec4 q, vec3 v) {\n"
    "  vec3 t = 2.0 * cross(q.xyz, v); return v + q.w * t + cross(q.xyz, t);\n"
    "}\n"
    "void main() {\n"
    "  vec3 s = 1.0 + a_iscale;\n"
    "  vec3 p = qrot(a_iquat, a_pos * s) + a_ipos;\n"
    "  vec4 e = u_view * (u_model * vec4(p, 1.0));\n"
    "  vec3 n = normalize(mat3(u_model) * qrot(a_iquat, a_normal / s));\n"
    "  float shade = shade_of(n);\n"
    "  vec3 c = a_colour.rgb * (1.0 - a_iinv.rgb) * u_tint.rgb * shade;\n"
    "  float fog = exp2(-u_fog_density * length(e.xyz));\n"
    "  v_colour = vec4(mix(u_fog, c, fog), a_colour.a * a_iinv.a * u_tint.a);\n"
    "  gl_Position = u_proj * e;\n"
    "}\n";

/* lit_vs without the per-instance attributes (the batched cameras draw no
 * instanced visuals): the same arithmetic on what is left (a unit
 * quaternion's turn, a scale of 1 and a tint of 1 are exact), ~3 % fewer
 * instructions a batched frame on llvmpipe; keep the two in step. */
static const char *plain_vs =
    "#version 330 core\n"
    "layout(location = 0) in vec3 a_pos;\n"
    "layout(location = 1) in vec3 a_normal;\n"
    "layout(location = 2) in vec4 a_colour;\n" LIT_UNIFORMS "void main() {\n"
    "  vec4 e = u_view * (u_model * vec4(a_pos, 1.0));\n"
    "  vec3 n = normalize(mat3(u_model) * a_normal);\n"
    "  float shade = shade_of(n);\n"
    "  vec3 c = a_colour.rgb * u_tint.rgb * shade;\n"
    "  float fog = exp2(-u_fog_density * length(e.xyz));\n"
    "  v_colour = vec4(mix(u_fog, c, fog), a_colour.a * u_tint.a);\n"
    "  gl_Position = u_proj * e;\n"
    "}\n";

static const char *lit_fs = "#version 330 core\n"
                            "in vec4 v_colour;\n"
                            "out vec4 o_colour;\n"
                            "void main() { o_colour = v_colour; }\n";

/* A robot's soft floor shadow (scene.c's blob: a square 3 radii wide whose
 * colour bytes red and green carry its corners' place, 0 or 1 each way):
 * opaque at SHADOW_ALPHA (the vertices' alpha) out to one radius, fading
 * linearly to nothing at 1.5, as a disc of the fragment's own distance
 * from the centre instead of a fan and a ring of n sides each (two
 * triangles where there were 22 to 70: llvmpipe pays for each). Its
 * colour is black fogged as the lit program fogs it, per vertex. */
static const char *blob_vs =
    "#version 330 core\n"
    "layout(location = 0) in vec3 a_pos;\n"
    "layout(location = 2) in vec4 a_colour;\n"
    "uniform mat4 u_model, u_view, u_proj;\n"
    "uniform vec4 u_tint;\n"
    "uniform vec3 u_fog;\n"
    "uniform float u_fog_density;\n"
    "out vec4 v_colour;\n"
    "out vec2 v_at;\n"
    "void main() {\n"
    "  vec4 e = u_view * (u_model * vec4(a_pos, 1.0));\n"
    "  float fog = exp2(-u_fog_density * length(e.xyz));\n"
    "  v_colour = vec4(u_fog * (1.0 - fog), a_colour.a * u_tint.a);\n"
    "  v_at = a_colour.rg * 3.0 - 1.5;\n"
    "  gl_Position = u_proj * e;\n"
    "}\n";

static const char *blob_fs =
    "#version 330 core\n"
    "in vec4 v_colour;\n"
    "in vec2 v_at;\n"
    "out vec4 o_colour;\n"
    "void main() {\n"
    "  float fade = clamp(3.0 - 2.0 * length(v_at), 0.0, 1.0);\n"
    "  o_colour = vec4(v_colour.rgb, v_colour.a * fade);\n"
    "}\n";

/* The floor: the map's checkerboard of u_step squares (in the map's own
 * frame) and the fog, per pixel, on quads of several squares. On llvmpipe
 * a small head camera's floor cost was its 1 m squares' many thin
 * triangles far ahead, not its pixels (a quarter of a 84 x 84 frame; the
 * same floor in 16 m squares a tenth). The colour and the fog are those
 * the lit program gives each square's corners, there interpolated between
 * them, here exact at each pixel. */
static const char *floor_vs =
    "#version 330 core\n"
    "layout(location = 0) in vec3 a_pos;\n" LIT_UNIFORMS
    "uniform vec4 u_grid;\n"
    "uniform float u_step;\n"
    "uniform vec3 u_tile0, u_tile1;\n"
    "out vec3 v_eye;\n"
    "out vec2 v_cell;\n"
    "flat out vec3 v_lit0, v_lit1;\n"
    "void main() {\n"
    "  vec4 w = u_model * vec4(a_pos, 1.0);\n"
    "  vec4 e = u_view * w;\n"
    "  vec2 d = w.xy - u_grid.xy;\n"
    "  v_cell = vec2(u_grid.z * d.x + u_grid.w * d.y,\n"
    "                u_grid.z * d.y - u_grid.w * d.x) / u_step;\n"
    "  float shade = shade_of(vec3(0.0, 0.0, 1.0));\n"
    "  v_lit0 = u_tile0 * shade;\n"
    "  v_lit1 = u_tile1 * shade;\n"
    "  v_eye = e.xyz;\n"
    "  gl_Position = u_proj * e;\n"
    "}\n";

static const char *floor_fs =
    "#version 330 core\n"
    "in vec3 v_eye;\n"
    "in vec2 v_cell;\n"
    "flat in vec3 v_lit0, v_lit1;\n"
    "uniform vec3 u_fog;\n"
    "uniform float u_fog_density;\n"
    "out vec4 o_colour;\n"
    "void main() {\n"
    "  vec2 f = floor(v_cell);\n"
    "  vec3 c = mod(f.x + f.y, 2.0) < 0.5 ? v_lit0 : v_lit1;\n"
    "  float fog = exp2(-u_fog_density * length(v_eye));\n"
    "  o_colour = vec4(mix(u_fog, c, fog), 1.0);\n"
    "}\n";

/* 0, or -1 with err = "GL: <what>: <GL's log>" when obj (a program when
 * prog, else a shader) failed to link or compile. */
static int gl_status(GLuint obj, bool prog, const char *what, char *err,
                     size_t err_sz) {
  GLint ok = 0;
  if (prog)
    glGetProgramiv(obj, GL_LINK_STATUS, &ok);
  else
    glGetShaderiv(obj, GL_COMPILE_STATUS, &ok);
  if (ok)
    return 0;
  char log[512] = "";
  if (prog)
    glGetProgramInfoLog(obj, sizeof log, NULL, log);
  else
    glGetShaderInfoLog(obj, sizeof log, NULL, log);
  snprintf(err, err_sz, "GL: %s: %s", what, log);
  return -1;
}

static GLuint compile(GLenum type, const char *src, char *err, size_t err_sz) {
  GLuint s = glCreateShader(type);
  glShaderSource(s, 1, &src, NULL);
  glCompileShader(s);
  if (gl_status(s, false,
                type == GL_VERTEX_SHADER ? "vertex shader does not compile"
                                         : "fragment shader does not compile",
                err, err_sz) < 0) {
    glDeleteShader(s);
    return 0;
  }
  return s;
}

int pa_render_program(GLuint *out, const char *vs, const char *fs, char *err,
                      size_t err_sz) {
  GLuint v = compile(GL_VERTEX_SHADER, vs, err, err_sz);
  if (!v)
    return -1;
  GLuint f = compile(GL_FRAGMENT_SHADER, fs, err, err_sz);
  if (!f) {
    glDeleteShader(v);
    return -1;
  }
  GLuint p = glCreateProgram();
  glAttachShader(p, v);
  glAttachShader(p, f);
  glLinkProgram(p);
  glDeleteShader(v);
  glDeleteShader(f);
  if (gl_status(p, true, "shader program does not link", err, err_sz) < 0) {
    glDeleteProgram(p);
    return -1;
  }
  *out = p;
  return 0;
}

void pa_render_rvertex_attribs(void) {
  static const pa_render_attr attrs[] = {
      {3, GL_FLOAT, GL_FALSE, offsetof(rvertex, pos)},
      {3, GL_FLOAT, GL_FALSE, offsetof(rvertex, normal)},
      {4, GL_UNSIGNED_BYTE, GL_TRUE, offsetof(rvertex, colour)}};
  pa_render_attribs(sizeof(rvertex), attrs, 3);
}

void pa_render_attribs(GLsizei stride, const pa_render_attr *a, int n) {
  for (int i = 0; i < n; i++) {
    glVertexAttribPointer((GLuint)i, a[i].size, a[i].type, a[i].normalized,
                          stride, (void *)a[i].offset);
    glEnableVertexAttribArray((GLuint)i);
  }
}

void pa_render_lit_instance_defaults(void) {
  for (GLuint a = PA_RENDER_ATTR_IPOS; a <= PA_RENDER_ATTR_IINV; a++)
    glVertexAttrib4f(a, 0, 0, 0, 1);
}

void pa_render_lit_locations(rprogram *p) {
  p->u_model = glGetUniformLocation(p->prog, "u_model");
  p->u_view = glGetUniformLocation(p->prog, "u_view");
  p->u_proj = glGetUniformLocation(p->prog, "u_proj");
  p->u_tint = glGetUniformLocation(p->prog, "u_tint");
  p->u_light = glGetUniformLocation(p->prog, "u_light");
  p->u_fog = glGetUniformLocation(p->prog, "u_fog");
  p->u_fog_density = glGetUniformLocation(p->prog, "u_fog_density");
  p->u_grid = glGetUniformLocation(p->prog, "u_grid");
  p->u_step = glGetUniformLocation(p->prog, "u_step");
  p->u_tile0 = glGetUniformLocation(p->prog, "u_tile0");
  p->u_tile1 = glGetUniformLocation(p->prog, "u_tile1");
}

/* p from vs and fs, with the lit uniforms' locations. */
static int lit_like(rprogram *p, const char *vs, const char *fs, char *err,
                    size_t err_sz) {
  memset(p, 0, sizeof *p);
  if (pa_render_program(&p->prog, vs, fs, err, err_sz) < 0)
    return -1;
  pa_render_lit_locations(p);
  return 0;
}

int pa_render_program_lit(rprogram *p, char *err, size_t err_sz) {
  if (lit_like(p, lit_vs, lit_fs, err, err_sz) < 0)
    return -1;
  pa_render_lit_instance_defaults();
  return 0;
}

int pa_render_program_blob(rprogram *p, char *err, size_t err_sz) {
  return lit_like(p, blob_vs, blob_fs, err, err_sz);
}

int pa_render_program_floor(rprogram *p, char *err, size_t err_sz) {
  return lit_like(p, floor_vs, floor_fs, err, err_sz);
}

int pa_render_program_plain(rprogram *p, char *err, size_t err_sz) {
  return lit_like(p, plain_vs, lit_fs, err, err_sz);
}

GLenum pa_render_target(GLsizei samples, GLsizei w, GLsizei h, GLuint *fbo,
                        GLuint rb[2]) {
  static const GLenum formats[2] = {GL_RGBA8, GL_DEPTH_COMPONENT24};
  static const GLenum points[2] = {GL_COLOR_ATTACHMENT0, GL_DEPTH_ATTACHMENT};
  glGenFramebuffers(1, fbo);
  glGenRenderbuffers(2, rb);
  glBindFramebuffer(GL_FRAMEBUFFER, *fbo);
  for (int i = 0; i < 2; i++) {
    glBindRenderbuffer(GL_RENDERBUFFER, rb[i]);
    /* 0 samples is plain glRenderbufferStorage */
    glRenderbufferStorageMultisample(GL_RENDERBUFFER, samples, formats[i], w,
                                     h);
    glFramebufferRenderbuffer(GL_FRAMEBUFFER, points[i], GL_RENDERBUFFER,
                              rb[i]);
  }
  glBindRenderbuffer(GL_RENDERBUFFER, 0);
  GLenum st = glCheckFramebufferStatus(GL_FRAMEBUFFER);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  return st;
}
