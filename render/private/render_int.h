/* render_int.h - private to render/: GL includes, matrix helpers, the scene
 * layout shared by scene.c, camera.c and viewer.c. */
#ifndef PA_RENDER_INT_H
#define PA_RENDER_INT_H

#include <glad/gl.h>

#include "pa_render.h"
#include "pa_ssl_field.h"

/* Interleaved vertex of every mesh (colour[3] is unused, 255). */
typedef struct rvertex {
  float pos[3]; /* [m] */
  float normal[3];
  uint8_t colour[4];
} rvertex;

/* A growable vertex array on the CPU side. */
typedef struct rmesh {
  rvertex *v;
  uint32_t n, cap;
  bool oom;
} rmesh;

/* A mesh uploaded to the GPU. */
typedef struct rgpu_mesh {
  GLuint vao, vbo;
  GLsizei count; /* vertices (GL_TRIANGLES) */
} rgpu_mesh;

/* The lit shader used by scene and viewer. */
typedef struct rprogram {
  GLuint prog;
  GLint u_model, u_view, u_proj, u_tint, u_light, u_fog, u_fog_density;
  /* the floor program's (pa_render_program_floor), -1 in the others */
  GLint u_grid, u_step, u_tile0, u_tile1;
} rprogram;

typedef struct rrobot {
  bool active;
  float radius, height, head_height; /* [m] */
  float colour[3];
  /* [m] from its centre, every part and its shadow's disc lie within (a
   * bound with margin, not the tightest: the atlas's merge culls by it) */
  double reach_bound;
} rrobot;

/* A run of static triangles in one area, for culling and ordering. */
typedef struct rchunk {
  GLint first;
  GLsizei count; /* vertices */
  uint8_t layer; /* 0 walls and obstacles, 1 floor */
  double box[4]; /* min x, min y, max x, max y [m] */
  float top;     /* [m] its highest vertex */
} rchunk;

/* The map's blocked cells, one bit each (occlusion.c). */
typedef struct rwalls {
  uint8_t *bits;            /* [w * h] bits, row 0 = south */
  uint32_t w, h;            /* [cells] */
  uint8_t *clear;           /* [w * h] free cells around: every cell within this
                             * Chebyshev distance (exclusive) is free, 0 blocked */
  double res, ox, oy, c, s; /* [m/cell], origin [m], cos and sin of its yaw */
} rwalls;

/* A level view's columns: the horizontal distance [m] to the first wall in
 * each pixel column's vertical plane (INFINITY: unknown), w of them. */
typedef struct rcolumns {
  const float *dist;
  uint32_t w;
} rcolumns;

/* A robot's levels of detail: its cylinders of 24, 12 and 8 sides
 * (pa_render_robot_lod, render_parts.h). */
#define PA_RENDER_LODS 3

struct pa_render_scene {
  uint64_t serial; /* no other scene of this process had it (the atlas keeps
                    * what it read back from this one's unit meshes) */
  rprogram lit;
  rprogram blob_prog;  /* draws blob (pa_render_program_blob) */
  rgpu_mesh statics;   /* floor, walls, obstacles in world coordinates */
  rprogram floor_prog; /* the floor's layer 2 (pa_render_program_floor) */
  /* by level of detail (24, 12, 8 sides): unit cylinders (radius 1, z in
   * [0, 1]) */
  rgpu_mesh cyl[PA_RENDER_LODS];
  rgpu_mesh blob;    /* a robot's soft shadow, unit radius: a square 3 wide */
  rgpu_mesh cube;    /* unit cube centred on the origin */
  rgpu_mesh shadows; /* soft floor shadows of the obstacles */
  rgpu_mesh plate;   /* unit square at z 0 facing up (SSL carpet) */
  rgpu_mesh slab;    /* unit cube, all normals up (SSL lines) */
  bool no_shadows;
  bool no_shadow_map; /* pa_render_scene_set_shadow_map(s, false) */
  struct rshadow *sm; /* the key light's shadow map (shadow.c) */
  double caster_top;  /* [m] the highest shadow caster */
  rrobot *robots;     /* [robot_count] */
  uint32_t robot_count;
  pa_render_pose *poses; /* [robot_count] */
  uint32_t pose_count;
  uint32_t wall_boxes, triangles;
  double bounds[4];  /* min x, min y, max x, max y [m] */
  float fog_density; /* [1/m] */
  bool no_culling;
  bool no_floor_quads; /* pa_render_scene_set_floor_quads(s, false) */
  /* walls' chunks (layer 0), then the floor's in 1 m squares (layer 1:
   * drawn with the shadow map's program), then in large quads (layer 2:
   * floor_prog draws the squares per pixel) */
  rchunk *chunks;
  uint32_t n_chunks;
  double chunk_size, chunk_x0, chunk_y0; /* [m] */
  uint32_t chunk_nx, chunk_ny;
  GLint *draw_first; /* scratch for glMultiDrawArrays */
  GLsizei *draw_count;
  uint64_t *order; /* scratch: sort keys */
  rwalls walls;    /* for the atlas's occlusion */
  /* SSL (pa_render_scene_set_ssl): the field's lines, the ball. */
  rgpu_mesh sphere[PA_RENDER_LODS]; /* unit spheres at the origin */
  pa_ssl_field ssl;                 /* division 0: no field */
  bool ball;
  double ball_xyz[3]; /* [m] z = its bottom's height */
};

/* What the setters change between frames (poses, SSL field and ball, the
 * switches, fog) from s into d, a scene built from the same map and world
 * (an atlas pool's helper's copy). */
void pa_render_scene_copy_state(pa_render_scene *d, const pa_render_scene *s);

/* pa_render_scene_draw with chunks outside a level camera's horizontal
 * field of view skipped (cull may be NULL: draw everything), and the robots
 * at their level of detail in cull drawn lod_w px wide (0: the finest;
 * pa_render_robot_lod). */
void pa_render_scene_draw_culled(const pa_render_scene *s, const float view[16],
                                 const float proj[16], uint32_t skip_robot,
                                 const pa_render_view *cull, uint32_t lod_w);

/* pa_render_scene_draw_culled that also skips the static chunks the walls
 * hide in every column of occ (NULL: none hidden; cull must be set), and
 * draws with lit (NULL: the scene's lit program; it gets the frame's
 * uniforms in any case, as the scene's does without it). */
void pa_render_scene_draw_occluded(const pa_render_scene *s,
                                   const float view[16], const float proj[16],
                                   uint32_t skip_robot,
                                   const pa_render_view *cull,
                                   const rcolumns *occ, const rprogram *lit,
                                   uint32_t lod_w);

/* ---- occlusion by the walls (occlusion.c) ---- */
int pa_render_walls_build(rwalls *o, const pa_grid *g);
void pa_render_walls_free(rwalls *o);
/* dist[c] for the w pixel columns of level view v (pitch 0). */
void pa_render_walls_columns(const rwalls *o, const pa_render_view *v,
                             uint32_t w, float *dist);
/* Whether the walls hide, from v, whatever lies within the horizontal
 * angles [lo, hi] from its view direction (left positive) [rad], no nearer
 * than near [m] and no higher than the walls (the caller checks that and
 * the eye's height). */
bool pa_render_columns_hide(const pa_render_view *v, const rcolumns *occ,
                            double lo, double hi, double near);
/* A level view's wedge for culling: its horizontal field of view widened
 * by 0.02 rad each side (half), the unit directions of its right and left
 * edges (edges[0..1], [2..3]) and of its axis (fx, fy), tan(half) and the
 * tangent of the unwidened half field of view (tx). */
typedef struct rwedge {
  double half, edges[4], fx, fy, th, tx;
} rwedge;
void pa_render_wedge(const pa_render_view *v, rwedge *w);
/* The tangents [*tlo, *thi] of the horizontal angles (left positive) from
 * w's axis that the points (px[k], py[k]) (k < n, relative to the eye)
 * span, when every one lies ahead of the eye (forward > ahead > 0): true;
 * else false (the angles may wrap). */
bool pa_render_wedge_span(const rwedge *w, const double *px, const double *py,
                          int n, double ahead, double *tlo, double *thi);

/* The same with the angles' tangents tlo, thi and tx = tan(v's fov / 2):
 * no trigonometry (the culling calls it for every chunk and robot). */
bool pa_render_columns_hide_tan(const rcolumns *occ, double tx, double tlo,
                                double thi, double near);
/* Whether what lies within `reach` of (x, y) (a robot's body, head and
 * soft shadow; the ball) can show in v's horizontal field of view, wg its
 * wedge (NULL: wider than a half turn), and, with occ, is not hidden by
 * the walls in every column it could cover (no higher than the walls: the
 * caller checks). Vertices are most of a small view's cost on llvmpipe:
 * a view draws only what passes. */
bool pa_render_disc_shows(const pa_render_view *v, const rcolumns *occ,
                          const rwedge *wg, double x, double y, double reach);

/* ---- shadow map (shadow.c) ---- */
typedef struct rshadow rshadow;
rshadow *pa_render_shadow_new(void);
void pa_render_shadow_free(rshadow *sm);
/* Draws the casters (casters(s, depth program)) into the map from the
 * light (unit vector towards it) over the scene's bounds up to top [m],
 * restores the framebuffer and viewport, and returns the lit program with
 * shadows in use with the map bound (its view, projection, light and fog
 * still to set); NULL when the GL cannot (nothing changed). */
const rprogram *pa_render_shadow_pass(rshadow *sm, const pa_render_scene *s,
                                      const double light[3], double top,
                                      void (*casters)(const pa_render_scene *,
                                                      const rprogram *));

/* ---- meshes (scene.c) ---- */
void pa_render_mesh_free(rmesh *m);
/* Room for one more vertex at the end of m (NULL, and m->oom, when out of
 * memory). */
rvertex *pa_render_mesh_next(rmesh *m);
void pa_render_mesh_box(rmesh *m, const double c[3], const double half[3],
                        double yaw, const uint8_t rgb[3], bool bottom);
void pa_render_mesh_cylinder(rmesh *m, const double c[3], double r, double h,
                             const uint8_t rgb[3], int segments);
int pa_render_gpu_upload(rgpu_mesh *g, const rmesh *m, char *err,
                         size_t err_sz);
void pa_render_gpu_free(rgpu_mesh *g);
int pa_render_program_lit(rprogram *p, char *err, size_t err_sz);
/* The lit program without the per-instance attributes (no instanced
 * visuals; the same pixels for everything else), for the batched cameras. */
int pa_render_program_plain(rprogram *p, char *err, size_t err_sz);
/* The robots' soft shadows' program (the scene's blob; the lit uniforms,
 * u_light unused). */
int pa_render_program_blob(rprogram *p, char *err, size_t err_sz);
/* The floor's checkerboard and fog per pixel on a few large quads (the
 * lit uniforms but u_tint; u_grid: the map's origin x, y and the cos and
 * sin of its yaw; u_step: a checker square's side [m]; u_tile0, u_tile1:
 * the squares' colours, lit as the lit program lights a face up). */
int pa_render_program_floor(rprogram *p, char *err, size_t err_sz);
/* Binds p (a lit program: the scene's, or the atlas's plain one) with this
 * frame's view, projection, key light and fog, as the scene's draw does. */
void pa_render_scene_use_lit(const pa_render_scene *s, const rprogram *p,
                             const float view[16], const float proj[16]);
/* Binds s's blob program with this frame's uniforms (view, projection, fog;
 * the identity model, a white tint): the robots' shadows (scene blob) draw
 * with it. Returns it. */
const rprogram *pa_render_scene_use_blobs(const pa_render_scene *s,
                                          const float view[16],
                                          const float proj[16]);
/* Looks up the lit uniforms of p->prog (the lit shader or a variant). */
void pa_render_lit_locations(rprogram *p);
/* The lit program's per-instance attributes (instanced visuals): position,
 * orientation x, y, z, w, scale - 1, 1 - colour and alpha. */
enum {
  PA_RENDER_ATTR_IPOS = 3,
  PA_RENDER_ATTR_IQUAT,
  PA_RENDER_ATTR_ISCALE,
  PA_RENDER_ATTR_IINV
};
/* Their values for draws without instance arrays, (0, 0, 0, 1): one
 * instance at the origin, unturned, unscaled, its own colour. */
void pa_render_lit_instance_defaults(void);
/* A framebuffer with an RGBA8 colour and a 24-bit depth renderbuffer of
 * w x h at `samples` (0 = one sample): *fbo and rb[0] colour, rb[1] depth.
 * Returns the framebuffer's status; the framebuffer binding is left at 0. */
GLenum pa_render_target(GLsizei samples, GLsizei w, GLsizei h, GLuint *fbo,
                        GLuint rb[2]);
/* Compiles a vertex+fragment program; 0 or -1 with the log in err. */
int pa_render_program(GLuint *out, const char *vs, const char *fs, char *err,
                      size_t err_sz);
/* One vertex attribute of an interleaved buffer. */
typedef struct pa_render_attr {
  GLint size;
  GLenum type;
  GLboolean normalized;
  size_t offset;
} pa_render_attr;
/* Points attributes 0..n-1 of the bound VAO at the bound buffer (stride
 * bytes a vertex) and enables them. */
void pa_render_attribs(GLsizei stride, const pa_render_attr *a, int n);
/* The rvertex layout (position, normal, colour) as attributes 0, 1, 2 of
 * the bound vertex array, from the bound array buffer. */
void pa_render_rvertex_attribs(void);

/* ---- viewer (viewer.c): a GLFW window whose context also serves the
 * cameras ---- */
typedef struct pa_render_viewer pa_render_viewer;
/* Opens the window (GL 3.3 core, made current, GL loaded). */
int pa_render_viewer_open(pa_render_viewer **out, const pa_render_def *d,
                          pa_stack *st, char *err, size_t err_sz);
/* Handles input and, when a frame is due, draws s (may be NULL: no map yet)
 * with the robots at t's poses, scans and trails; waits for events at most
 * until wake_ns (CLOCK_MONOTONIC, 0 = no wait). False = quit requested. */
bool pa_render_viewer_frame(pa_render_viewer *v, pa_render_scene *s,
                            const pa_tick *t, int64_t wake_ns);
void pa_render_viewer_close(pa_render_viewer *v);

/* ---- column-major 4x4 matrices ---- */
/* v scaled to unit length. */
void pa_render_normalize3(double v[3]);
void pa_render_mat_identity(float m[16]);
void pa_render_mat_mul(float out[16], const float a[16], const float b[16]);
void pa_render_mat_perspective(float m[16], double fovy, double aspect,
                               double znear, double zfar);
void pa_render_mat_lookat(float m[16], const double eye[3],
                          const double centre[3], const double up[3]);
/* Rotation about z by yaw, then translation by (x, y, z), scaled by s. */
void pa_render_mat_pose(float m[16], double x, double y, double z, double yaw,
                        const double s[3]);
/* The same from yaw's cosine c and sine sn (known to the caller). */
void pa_render_mat_pose_cs(float m[16], double x, double y, double z, double c,
                           double sn, const double s[3]);

/* ---- visual objects (visuals.c): the clients' annotations as world-space
 * lines and points, for the viewer and the spectator; the head cameras see
 * only those marked camera_visible. */
typedef struct pa_vis_sink {
  void (*line)(void *arg, const float a[3], const float b[3],
               const float rgb[3]);
  void (*point)(void *arg, const float p[3], const float rgb[3]);
  void *arg;
  bool camera_only; /* only the visuals marked camera_visible */
} pa_vis_sink;
/* Every visible shape, polyline and text, as line segments. */
void pa_render_visuals_lines(const pa_visual_block *b, const pa_vis_sink *s);
/* Every visible point cloud's points. */
void pa_render_visuals_points(const pa_visual_block *b, const pa_vis_sink *s);

/* Their GL drawing, shared by the viewer, the spectator and the cameras. */
#include "render_vis.h"

/* ---- MP4 encoding (video.c) ---- */
typedef struct pa_video pa_video;
/* Opens path for w x h (even) RGB frames at fps; codec gets "h264" or
 * "mpeg4" (H.264 when libavcodec has an encoder for it). 0 or -1. */
int pa_video_open(pa_video **out, const char *path, uint32_t w, uint32_t h,
                  int fps, char *codec, size_t codec_sz, char *err,
                  size_t err_sz);
/* Appends one frame (w*h*3 bytes, row 0 = top) at pts (in 1/fps units,
 * increasing; a gap is frames dropped). */
int pa_video_add(pa_video *v, const uint8_t *rgb, int64_t pts, char *err,
                 size_t err_sz);
/* Flushes, writes the index and frees v (NULL: nothing). err may be NULL. */
int pa_video_close(pa_video *v, char *err, size_t err_sz);

/* ---- the spectator camera (spectator.c) ---- */
typedef struct pa_spec_state {
  char dir[PA_SPEC_DIR_MAX];
  pa_render_cam *cam;
  uint8_t *rgb;
  uint32_t w, h;   /* of cam and rgb */
  pa_video *video; /* recording, or NULL */
  uint32_t vw, vh;
  int fps;
  uint32_t frames_max;
  int64_t start_ns;
  uint64_t slot; /* next frame's slot (pts) */
  uint32_t msaa; /* samples (--msaa) */
} pa_spec_state;
/* Publishes pa-render's data directory (absolute) for the replies. */
int pa_render_spectator_init(pa_spec_state *S, pa_stack *st,
                             const char *data_dir, uint32_t msaa, char *err,
                             size_t err_sz);
void pa_render_spectator_free(pa_spec_state *S, pa_stack *st);
/* Serves screenshot and video requests and records the due video frame;
 * returns when it wants to run next (0 = only on a request). */
int64_t pa_render_spectator_step(pa_spec_state *S, pa_stack *st,
                                 const pa_render_scene *sc,
                                 const pa_render_pose *poses, uint32_t n_poses,
                                 const pa_obstacle_info *obs, uint32_t n_obs,
                                 int64_t now);

#endif
