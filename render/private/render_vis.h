/* render_vis.h - private to render/: unlit lines and points in world
 * coordinates (the viewer's overlay) and the clients' visual objects drawn
 * with them, by the viewer, the spectator and the head cameras
 * (visuals.c). Included by render_int.h. */
#ifndef PA_RENDER_VIS_H
#define PA_RENDER_VIS_H

#include <glad/gl.h>

#include <stdbool.h>
#include <stddef.h>

#include "pa_shm.h"

/* Unlit coloured lines and points in world coordinates: one program, VAO and
 * buffer, the vertices built on the CPU each frame. */
typedef struct pa_lvertex {
  float pos[3];
  float rgb[3];
} pa_lvertex;
typedef struct pa_render_lines {
  GLuint prog, vao, vbo;
  GLint u_vp, u_psize, u_off;
  pa_lvertex *v;
  size_t n, cap;
  /* the solid visuals' triangles (visuals_solid.c), made when the block
   * changed: runs opaque camera-visible, opaque other, translucent
   * camera-visible, translucent other */
  GLuint s_vao, s_vbo;
  bool s_ok;
  const pa_visual_block *s_block; /* what they were made from */
  uint32_t s_gen, s_count, s_pt_used;
  uint64_t s_seq;
  GLsizei s_run[4]; /* vertices */
  /* instanced visuals: shapes (s_tvbo) drawn per instance (s_ivbo) */
  GLuint s_ivao, s_tvbo, s_ivbo;
  struct pa_render_idraw {
    GLint first; /* its shape's vertices in s_tvbo */
    GLsizei count;
    uint32_t inst; /* its instances in s_ivbo: opaque, then translucent */
    uint32_t n_opaque, n_blend;
    bool cam; /* camera_visible */
  } s_draw[PA_VIS_MAX];
  uint32_t s_ndraw;
} pa_render_lines;
typedef struct pa_render_idraw pa_render_idraw;
/* Compiles the program and makes the buffers (a GL context is current). */
int pa_render_lines_init(pa_render_lines *L, char *err, size_t err_sz);
void pa_render_lines_free(pa_render_lines *L);
void pa_render_lines_push(pa_render_lines *L, double x, double y, double z,
                          const float rgb[3]);
/* Uploads v[0, n) and binds it for drawing with view-projection vp. */
void pa_render_lines_begin(pa_render_lines *L, const float vp[16]);
/* mode GL_LINES or GL_POINTS (points psize pixels wide). */
void pa_render_lines_draw(pa_render_lines *L, GLenum mode, size_t first,
                          size_t count, float psize);
/* GL_LINES width px wide (a core context has 1 px lines only). */
void pa_render_lines_draw_wide(pa_render_lines *L, size_t first, size_t count,
                               float width);
void pa_render_lines_end(void);
/* Draws the visible visuals of b (camera_only: only those marked
 * camera_visible) into the bound framebuffer, depth-tested against what is
 * there; L's vertices are scratch. */
void pa_render_visuals_draw(pa_render_lines *L, const pa_visual_block *b,
                            const float vp[16], bool camera_only);
/* Whether visuals of type t are solid (drawn by pa_render_visuals_solid,
 * not as lines). */
bool pa_render_vis_solid(uint32_t t);
/* Draws b's visible solid visuals (camera_only: those marked
 * camera_visible) lit by s's program, whose uniforms s's draw of this
 * frame set; L keeps their triangles until b changes. */
void pa_render_visuals_solid(pa_render_lines *L, const pa_visual_block *b,
                             const pa_render_scene *s, bool camera_only);
/* Frees the solid visuals' buffers (pa_render_lines_free does). */
void pa_render_solid_free(pa_render_lines *L);
/* The visuals every camera of this process draws from now on (camera.c;
 * NULL: none), L their scratch; pa-render's loop keeps b current. */
void pa_render_cam_visuals(const pa_visual_block *b, pa_render_lines *L);

#endif
