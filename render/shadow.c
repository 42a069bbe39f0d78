/* shadow.c - the key light's shadow map: walls, obstacles, robots and the
 * ball drawn into a depth texture from the light (orthographic over the
 * map), and the lit shader's variant that darkens the key light's share
 * where that texture says something is in between (4 taps of linear depth
 * comparison: soft edges). The viewer and the spectator use it; head
 * cameras keep the blob shadows (their frame budget). */
#include "render_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SM_SIZE 1024 /* texels a side */
#define SM_UNIT 5    /* texture unit of the map (the others draw with 0) */
#define SM_TEXEL "0.0009765625" /* 1 / SM_SIZE, for the shader */

struct rshadow {
  GLuint fbo, tex;
  GLuint depth_prog;
  GLint d_model, d_vp;
  rprogram lit; /* the lit shader with shadows */
  GLint u_light_vp, u_shadow;
  float light_vp[16];
  bool ready, failed;
  bool drawn;   /* the map holds the casters of `key` */
  uint64_t key; /* what the map was drawn from (casters_key) */
};

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *c = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ c[i]) * 0x100000001b3ull;
  return h;
}

/* A hash of what moves among the casters (robots, the ball) and of the
 * light's box: equal to the last pass's, the map is still right (a paused
 * world, a still scene: no depth pass). */
static uint64_t casters_key(const pa_render_scene *s, const double light[3],
                            double top) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = fnv(h, light, 3 * sizeof *light);
  h = fnv(h, &top, sizeof top);
  for (uint32_t i = 0; i < s->pose_count; i++) {
    const pa_render_pose *p = &s->poses[i];
    bool on = p->active && s->robots[i].active;
    h = fnv(h, &on, sizeof on);
    if (on) {
      double v[4] = {p->x, p->y, p->theta, p->head};
      h = fnv(h, v, sizeof v);
    }
  }
  h = fnv(h, &s->ball, sizeof s->ball);
  if (s->ball)
    h = fnv(h, s->ball_xyz, sizeof s->ball_xyz);
  return h;
}

static const char *depth_vs =
    "#version 330 core\n"
    "layout(location = 0) in vec3 a_pos;\n"
    "uniform mat4 u_model, u_light_vp;\n"
    "void main() { gl_Position = u_light_vp * (u_model * vec4(a_pos, 1.0)); "
    "}\n";

static const char *depth_fs = "#version 330 core\n"
                              "void main() {}\n";

/* As lit_vs (gl_util.c), with the key light's share kept apart so the
 * fragment shader can shadow it, and the light-space position. */
static const char *sm_vs =
    "#version 330 core\n"
    "layout(location = 0) in vec3 a_pos;\n"
    "layout(location = 1) in vec3 a_normal;\n"
    "layout(location = 2) in vec4 a_colour;\n"
    "uniform mat4 u_model, u_view, u_proj, u_light_vp;\n"
    "uniform vec4 u_tint;\n"
    "uniform vec3 u_light;\n"
    "out vec3 v_eye; out vec4 v_base; out vec3 v_key; out vec3 v_lpos;\n"
    "const vec3 fill = vec3(-0.62, -0.38, 0.69);\n"
    "void main() {\n"
    "  vec4 w = u_model * vec4(a_pos, 1.0);\n"
    "  vec4 e = u_view * w;\n"
    "  vec3 n = normalize(mat3(u_model) * a_normal);\n"
    "  vec3 c = a_colour.rgb * u_tint.rgb;\n"
    "  v_base = vec4(c * (0.5 + 0.22 * max(dot(n, fill), 0.0)),\n"
    "                a_colour.a * u_tint.a);\n"
    "  v_key = c * 0.55 * max(dot(n, u_light), 0.0);\n"
    "  v_lpos = (u_light_vp * w).xyz * 0.5 + 0.5;\n"
    "  v_eye = e.xyz;\n"
    "  gl_Position = u_proj * e;\n"
    "}\n";

static const char *sm_fs =
    "#version 330 core\n"
    "in vec3 v_eye; in vec4 v_base; in vec3 v_key; in vec3 v_lpos;\n"
    "uniform vec3 u_fog;\n"
    "uniform float u_fog_density;\n"
    "uniform sampler2DShadow u_shadow;\n"
    "out vec4 o_colour;\n"
    "const float t = " SM_TEXEL "; /* one texel */\n"
    "void main() {\n"
    "  vec3 p = vec3(v_lpos.xy, v_lpos.z - 0.0015);\n"
    "  float lit = 0.25 * (texture(u_shadow, p + vec3(-t, -t, 0.0)) +\n"
    "                      texture(u_shadow, p + vec3(t, -t, 0.0)) +\n"
    "                      texture(u_shadow, p + vec3(-t, t, 0.0)) +\n"
    "                      texture(u_shadow, p + vec3(t, t, 0.0)));\n"
    "  if (any(lessThan(v_lpos, vec3(0.0))) ||\n"
    "      any(greaterThan(v_lpos, vec3(1.0))))\n"
    "    lit = 1.0; /* outside the map: nothing casts there */\n"
    "  vec3 rgb = v_base.rgb + v_key * lit;\n"
    "  float fog = exp2(-u_fog_density * length(v_eye));\n"
    "  o_colour = vec4(mix(u_fog, rgb, fog), v_base.a);\n"
    "}\n";

rshadow *pa_render_shadow_new(void) { return calloc(1, sizeof(rshadow)); }

void pa_render_shadow_free(rshadow *sm) {
  if (!sm)
    return;
  if (sm->fbo)
    glDeleteFramebuffers(1, &sm->fbo);
  if (sm->tex)
    glDeleteTextures(1, &sm->tex);
  if (sm->depth_prog)
    glDeleteProgram(sm->depth_prog);
  if (sm->lit.prog)
    glDeleteProgram(sm->lit.prog);
  free(sm);
}

/* The texture, its framebuffer and both programs, once; false when the GL
 * cannot (then the blob shadows stay). */
static bool sm_init(rshadow *sm) {
  if (sm->ready || sm->failed)
    return sm->ready;
  sm->failed = true;
  char err[256];
  if (pa_render_program(&sm->depth_prog, depth_vs, depth_fs, err, sizeof err) <
          0 ||
      pa_render_program(&sm->lit.prog, sm_vs, sm_fs, err, sizeof err) < 0) {
    fprintf(stderr, "pa-render: shadow map off: %s\n", err);
    return false;
  }
  sm->d_model = glGetUniformLocation(sm->depth_prog, "u_model");
  sm->d_vp = glGetUniformLocation(sm->depth_prog, "u_light_vp");
  rprogram *p = &sm->lit;
  pa_render_lit_locations(p);
  sm->u_light_vp = glGetUniformLocation(p->prog, "u_light_vp");
  sm->u_shadow = glGetUniformLocation(p->prog, "u_shadow");
  glGenTextures(1, &sm->tex);
  glBindTexture(GL_TEXTURE_2D, sm->tex);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_DEPTH_COMPONENT24, SM_SIZE, SM_SIZE, 0,
               GL_DEPTH_COMPONENT, GL_UNSIGNED_INT, NULL);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_COMPARE_MODE,
                  GL_COMPARE_REF_TO_TEXTURE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_COMPARE_FUNC, GL_LEQUAL);
  glBindTexture(GL_TEXTURE_2D, 0);
  glGenFramebuffers(1, &sm->fbo);
  glBindFramebuffer(GL_FRAMEBUFFER, sm->fbo);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_DEPTH_ATTACHMENT, GL_TEXTURE_2D,
                         sm->tex, 0);
  glDrawBuffer(GL_NONE);
  glReadBuffer(GL_NONE);
  GLenum st = glCheckFramebufferStatus(GL_FRAMEBUFFER);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  if (st != GL_FRAMEBUFFER_COMPLETE ||
      pa_render_gl_check("creating the shadow map", err, sizeof err) < 0) {
    fprintf(stderr, "pa-render: shadow map off: framebuffer 0x%04x\n",
            (unsigned)st);
    return false;
  }
  sm->failed = false;
  sm->ready = true;
  return true;
}

/* Orthographic projection of the box [l, r] x [b, t] x [-n, -f]. */
static void mat_ortho(float m[16], double l, double r, double b, double t,
                      double n, double f) {
  memset(m, 0, 16 * sizeof *m);
  m[0] = (float)(2 / (r - l));
  m[5] = (float)(2 / (t - b));
  m[10] = (float)(-2 / (f - n));
  m[12] = (float)(-(r + l) / (r - l));
  m[13] = (float)(-(t + b) / (t - b));
  m[14] = (float)(-(f + n) / (f - n));
  m[15] = 1;
}

/* The light's view-projection over the map's bounds from the floor to
 * top [m]: its box in light space, tight. */
static void light_matrix(rshadow *sm, const double bounds[4], double top,
                         const double light[3]) {
  double c[3] = {(bounds[0] + bounds[2]) / 2, (bounds[1] + bounds[3]) / 2, 0};
  double r = hypot(bounds[2] - bounds[0], bounds[3] - bounds[1]) + top;
  double eye[3] = {c[0] + light[0] * r, c[1] + light[1] * r,
                   c[2] + light[2] * r};
  static const double up[3] = {0, 0, 1};
  float view[16], proj[16];
  pa_render_mat_lookat(view, eye, c, up);
  double lo[3] = {INFINITY, INFINITY, INFINITY},
         hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int k = 0; k < 8; k++) {
    double p[3] = {bounds[(k & 1) ? 2 : 0], bounds[(k & 2) ? 3 : 1],
                   (k & 4) ? top : 0};
    for (int i = 0; i < 3; i++) {
      double v = view[i] * p[0] + view[4 + i] * p[1] + view[8 + i] * p[2] +
                 view[12 + i];
      lo[i] = fmin(lo[i], v), hi[i] = fmax(hi[i], v);
    }
  }
  /* view z looks down -z: near = -hi, far = -lo, a margin each way */
  mat_ortho(proj, lo[0], hi[0], lo[1], hi[1], -hi[2] - 0.1, -lo[2] + 0.1);
  pa_render_mat_mul(sm->light_vp, proj, view);
}

const rprogram *pa_render_shadow_pass(rshadow *sm, const pa_render_scene *s,
                                      const double light[3], double top,
                                      void (*casters)(const pa_render_scene *,
                                                      const rprogram *)) {
  GLint fb = 0, vp[4];
  glGetIntegerv(GL_DRAW_FRAMEBUFFER_BINDING, &fb);
  glGetIntegerv(GL_VIEWPORT, vp);
  if (!sm || !sm_init(sm)) {
    glBindFramebuffer(GL_FRAMEBUFFER, (GLuint)fb);
    return NULL;
  }
  uint64_t key = casters_key(s, light, top);
  if (sm->drawn && key == sm->key)
    goto receive;
  light_matrix(sm, s->bounds, top, light);
  glBindFramebuffer(GL_FRAMEBUFFER, sm->fbo);
  glViewport(0, 0, SM_SIZE, SM_SIZE);
  glClear(GL_DEPTH_BUFFER_BIT);
  glEnable(GL_DEPTH_TEST);
  glDisable(GL_CULL_FACE); /* walls have only their seen faces */
  glEnable(GL_POLYGON_OFFSET_FILL);
  glPolygonOffset(1.5f, 2.0f);
  glUseProgram(sm->depth_prog);
  glUniformMatrix4fv(sm->d_vp, 1, GL_FALSE, sm->light_vp);
  rprogram dp = {.prog = sm->depth_prog,
                 .u_model = sm->d_model,
                 .u_view = -1,
                 .u_proj = -1,
                 .u_tint = -1,
                 .u_light = -1,
                 .u_fog = -1,
                 .u_fog_density = -1};
  casters(s, &dp);
  glDisable(GL_POLYGON_OFFSET_FILL);
  glEnable(GL_CULL_FACE);
  glBindFramebuffer(GL_FRAMEBUFFER, (GLuint)fb);
  glViewport(vp[0], vp[1], vp[2], vp[3]);
  sm->drawn = true;
  sm->key = key;
receive:
  /* the receiving program, its map bound */
  glUseProgram(sm->lit.prog);
  glActiveTexture(GL_TEXTURE0 + SM_UNIT);
  glBindTexture(GL_TEXTURE_2D, sm->tex);
  glActiveTexture(GL_TEXTURE0);
  glUniform1i(sm->u_shadow, SM_UNIT);
  glUniformMatrix4fv(sm->u_light_vp, 1, GL_FALSE, sm->light_vp);
  return &sm->lit;
}
