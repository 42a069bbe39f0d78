/*
 * pa_render.h - the OpenGL renderer of playarea (library pa_render, process
 * pa-render).
 *
 * Layers a test can drive without the process:
 *   1. A GL 3.3 core context: headless EGL on Mesa's surfaceless platform
 *      (pa_render_egl_*), or any current context (the viewer's GLFW window)
 *      after pa_render_gl_load().
 *   2. A scene built from an occupancy grid, the robots and the obstacles
 *      (pa_render_scene_*): floor, walls merged into few boxes, obstacles,
 *      robots drawn at poses given per frame.
 *   3. Head cameras (pa_render_cam_*): an FBO of one size plus two pixel
 *      buffer objects, so a frame's readback overlaps the next frame's
 *      rendering. Images are RGB888, row 0 at the top.
 *   4. The process loop over a running instance (pa_render_run), and the
 *      GLFW viewer (pa_render_viewer_*).
 *
 * World coordinates: x east, y north, z up [m]; yaw counter-clockwise from
 * east [rad]. Every function needs the GL context current on the calling
 * thread. Errors: a negative return value and human text in err.
 */
#ifndef PA_RENDER_H
#define PA_RENDER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pa_map.h"
#include "pa_shm.h"
#include "pa_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Base colours (linear 0..1 RGB before lighting), for tests and docs. */
#define PA_RENDER_WALL_RGB 0.86f, 0.80f, 0.68f  /* light grey-beige */
#define PA_RENDER_FLOOR_RGB 0.56f, 0.56f, 0.54f /* neutral grey tiles */
#define PA_RENDER_SKY_RGB 0.62f, 0.76f, 0.90f   /* clear colour and fog */
#define PA_RENDER_WALL_HEIGHT 1.0                /* [m] */

/* ---- 1. context --------------------------------------------------------- */

typedef struct pa_render_egl pa_render_egl;

/* Creates a headless GL 3.3 core context (EGL surfaceless), makes it current
 * and loads the GL functions. Fails with a message naming the EGL step. */
int pa_render_egl_create(pa_render_egl **out, char *err, size_t err_sz);
/* The same, llvmpipe's screen made with `threads` rasteriser threads (0:
 * the drawing thread rasterises) unless LP_NUM_THREADS is set in the
 * environment (it sets that variable while the display is made: call it
 * while no other thread reads the environment). */
int pa_render_egl_create_threads(pa_render_egl **out, uint32_t threads,
                                 char *err, size_t err_sz);
/* The same for a thread drawing beside a context whose GL_RENDERER is
 * `renderer` (pa_render_atlas_pool's helpers). With own, on llvmpipe, on a
 * display of its own when Mesa lists its software device (EGL's device
 * platform; one such display a process): its own llvmpipe screen, so that
 * its drawing never waits for the other context's rasteriser, with no
 * rasteriser threads unless LP_NUM_THREADS says (it sets that variable
 * while it makes the screen: call it while no other thread reads the
 * environment). Else, or when that renders with another renderer, on the
 * caller's display. */
int pa_render_egl_create_helper(pa_render_egl **out, const char *renderer,
                                bool own, char *err, size_t err_sz);
void pa_render_egl_destroy(pa_render_egl *e);
/* Re-checks that the context is still current and usable (eglMakeCurrent
 * fails with EGL_CONTEXT_LOST after a lost context). */
int pa_render_egl_check(pa_render_egl *e, char *err, size_t err_sz);

/* Loads GL functions through get_proc for a context made current elsewhere
 * (GLFW) and checks it is at least 3.3 core. */
typedef void (*pa_render_glproc)(void);
int pa_render_gl_load(pa_render_glproc (*get_proc)(const char *name),
                      char *err, size_t err_sz);
/* Drains glGetError; returns 0 or -1 with the first error named in err
 * ("GL_OUT_OF_MEMORY after camera frame"). */
int pa_render_gl_check(const char *where, char *err, size_t err_sz);
/* "Mesa ... llvmpipe ..." renderer string of the current context. */
const char *pa_render_gl_renderer(void);

/* ---- 2. scene ----------------------------------------------------------- */

typedef struct pa_render_scene pa_render_scene;

/* Pose of robot i in a frame; inactive robots are not drawn. */
typedef struct pa_render_pose {
  double x, y, theta;     /* [m, m, rad] */
  double head;            /* pan relative to theta [rad] */
  bool active;
} pa_render_pose;

/* Builds the static geometry (floor, merged walls, obstacles) and keeps the
 * robots' looks. robots/obstacles may be NULL with count 0; inactive entries
 * are skipped. A cell blocks (becomes wall) when it is >= occupied_min or
 * unknown (-1). Compiles the shaders on first use. */
int pa_render_scene_build(pa_render_scene **out, const pa_grid *grid,
                          const pa_robot_info *robots, uint32_t robot_count,
                          const pa_obstacle_info *obstacles,
                          uint32_t obstacle_count, char *err, size_t err_sz);
void pa_render_scene_free(pa_render_scene *s);
/* Robot poses used by the following draws (count <= robot_count given at
 * build; robots beyond count are not drawn). */
void pa_render_scene_set_poses(pa_render_scene *s, const pa_render_pose *p,
                               uint32_t count);
/* An SSL world's tick: division 'A' / 'B' draws the field's lines on the
 * floor (0: none); ball draws it at xyz (z = its bottom's height). */
void pa_render_scene_set_ssl(pa_render_scene *s, char division, bool ball,
                             const double xyz[3]);
/* Head cameras skip areas outside their field of view (default on); off
 * draws everything, e.g. to check that culling changes no pixel. */
void pa_render_scene_set_culling(pa_render_scene *s, bool on);
/* Views at most 128 px wide (head cameras, the batched cameras' tiles)
 * draw the floor's checkerboard and fog per pixel on a few large quads,
 * not as its 1 m squares' triangles: within a grey level of them, and on
 * llvmpipe a tenth less CPU an 84 x 84 frame (on by default; off: the
 * squares at every size, as a test compares). */
void pa_render_scene_set_floor_quads(pa_render_scene *s, bool on);
/* Soft floor shadows under obstacles and robots (default on). */
void pa_render_scene_set_shadows(pa_render_scene *s, bool on);
/* Walls, obstacles and robots cast shadows from the key light through a
 * shadow map (default on) in the viewer and in views with shadow_map set;
 * off, those get the blob shadows as head cameras do. */
void pa_render_scene_set_shadow_map(pa_render_scene *s, bool on);
/* Figures about the built geometry. */
uint32_t pa_render_scene_wall_boxes(const pa_render_scene *s);
uint32_t pa_render_scene_triangles(const pa_render_scene *s);
/* World bounds of the map: min x, min y, max x, max y [m]. */
void pa_render_scene_bounds(const pa_render_scene *s, double out[4]);
/* Draws into the bound framebuffer with column-major view and projection
 * matrices; skip_robot (or UINT32_MAX) is not drawn (the camera's own). */
void pa_render_scene_draw(const pa_render_scene *s, const float view[16],
                          const float proj[16], uint32_t skip_robot);

/* ---- 3. cameras --------------------------------------------------------- */

/* A pinhole camera in the world. */
typedef struct pa_render_view {
  double x, y, z;         /* eye [m] */
  double yaw;             /* view direction, counter-clockwise from east [rad] */
  double pitch;           /* up positive [rad] */
  double fov;             /* horizontal field of view [rad], (0, pi) */
  uint32_t skip_robot;    /* robot not drawn (UINT32_MAX = none) */
  bool all_visuals;       /* spectator: every visual; else camera_visible */
  bool shadow_map;        /* the key light's shadow map (spectator); else
                             blob shadows only (head cameras) */
} pa_render_view;

/* The head camera of robot `index` at pose p: eye at head height, yaw =
 * theta + head, the robot's own field of view, its own body hidden. */
pa_render_view pa_render_view_head(const pa_robot_info *info, uint32_t index,
                                   const pa_render_pose *p);

/* Column-major view and projection matrices of v for an image w x h. */
void pa_render_view_matrices(const pa_render_view *v, uint32_t w, uint32_t h,
                             float view[16], float proj[16]);
/* Pixel (u right, v down, 0.5 = centre of the first pixel) where world point
 * (x, y, z) appears; false when it is behind the camera. */
bool pa_render_project(const pa_render_view *v, uint32_t w, uint32_t h,
                       double x, double y, double z, double *u, double *vpx);

/* The readback's alpha drop: n RGBA pixels at src to n RGB at dst (3n
 * bytes written, no more), SIMD where the CPU has it. */
void pa_render_rgba_to_rgb(uint8_t *dst, const uint8_t *src, uint32_t n);

typedef struct pa_render_cam pa_render_cam;

#define PA_RENDER_CAM_SLOTS 2 /* frames in flight per camera */

/* An offscreen target of w x h pixels (1..4096 each). */
int pa_render_cam_create(pa_render_cam **out, uint32_t w, uint32_t h,
                         char *err, size_t err_sz);
void pa_render_cam_free(pa_render_cam *c);
uint32_t pa_render_cam_width(const pa_render_cam *c);
uint32_t pa_render_cam_height(const pa_render_cam *c);
/* Draws into a multisampled target of `samples` (0 or 1: off) resolved into
 * the readback one each frame: smoother edges, more work per pixel. */
int pa_render_cam_set_msaa(pa_render_cam *c, uint32_t samples, char *err,
                           size_t err_sz);
uint32_t pa_render_cam_msaa(const pa_render_cam *c);
/* Renders v and starts an asynchronous readback; meta (may be NULL) is kept
 * with the frame and returned by fetch. Fails (-1) when all slots are
 * pending: fetch first. */
int pa_render_cam_submit(pa_render_cam *c, const pa_render_scene *s,
                         const pa_render_view *v, const pa_frame *meta,
                         char *err, size_t err_sz);
/* Frames submitted and not fetched yet. */
uint32_t pa_render_cam_pending(const pa_render_cam *c);
/* Meta of the oldest pending frame (NULL if none), e.g. to size a ring slot
 * before fetching straight into it. */
const pa_frame *pa_render_cam_peek(const pa_render_cam *c);
/* Waits for the oldest pending frame and copies it into rgb (w*h*3 bytes,
 * row 0 = top); meta (may be NULL) gets what submit was given. */
int pa_render_cam_fetch(pa_render_cam *c, pa_frame *meta, uint8_t *rgb,
                        char *err, size_t err_sz);
/* submit + fetch: one synchronous frame. */
int pa_render_cam_render(pa_render_cam *c, const pa_render_scene *s,
                         const pa_render_view *v, uint8_t *rgb, char *err,
                         size_t err_sz);

/* Writes an RGB888 image (row 0 = top) as PNG. */
int pa_render_write_png(const char *path, const uint8_t *rgb, uint32_t w,
                        uint32_t h, char *err, size_t err_sz);

/* ---- 4. process --------------------------------------------------------- */

typedef struct pa_render_def {
  const char *instance;
  double camera_hz;        /* 15 */
  bool viewer;
  uint32_t viewer_width, viewer_height; /* 1280 x 800 */
  const char *screenshot;  /* viewer: save a PNG after the first frames */
  bool exit_after_screenshot;
  const char *data_dir; /* spectator screenshots and videos (NULL = cwd) */
  uint32_t msaa; /* samples for the spectator and the viewer (4; 0/1 off) */
  uint32_t atlas_contexts; /* GL contexts drawing a camera_batch (0: auto) */
  uint32_t raster_threads; /* llvmpipe's, headless (0: the drawing thread) */
} pa_render_def;
pa_render_def pa_render_def_default(void);
/* pa-render's flag table over a pa_render_def (render_opts.c): read by
 * pa-render's main, the launcher and the docs test. Links without GL
 * (library pa_render_opts). */
const pa_opt_table *pa_render_opts(void);

/* Runs pa-render until *stop becomes non-zero. Returns 0 (clean stop),
 * PA_EXIT_CONFIG (instance missing, bad values) or 1 (GL failure, lost
 * context), with the reason in err. */
int pa_render_run(const pa_render_def *d, volatile sig_atomic_t *stop,
                  char *err, size_t err_sz);

#ifdef __cplusplus
}
#endif
#endif /* PA_RENDER_H */
