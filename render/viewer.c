/* viewer.c - the --viewer window: an orbit/pan/zoom camera over the world,
 * the robots, each robot's latest laser scan and its trail; keys to follow
 * a robot and save screenshots. */
#define _GNU_SOURCE
#include "render_int.h"

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pa_util.h"

#define FRAME_NS 33333333LL     /* ~30 Hz: plenty for a viewer on llvmpipe */
#define TRAIL_POINTS 600
#define TRAIL_STEP 0.03         /* [m] between trail points */
#define SCREENSHOT_AFTER 5      /* frames with a scene before --screenshot */
#define OVERLAY_Z 0.03          /* [m] scan and trail height over the floor */

typedef struct vscan {
  bool valid;
  double x, y, theta;
  float angle_min, angle_increment, range_max;
  uint32_t count;
  float *ranges;               /* [max_beams] */
  size_t ray_first, ray_end;   /* this frame's ray vertices in ov */
} vscan;

typedef struct vtrail {
  float xy[TRAIL_POINTS][2];
  uint32_t n, head;
} vtrail;

struct pa_render_viewer {
  const pa_render_def *def;
  pa_stack *st;
  GLFWwindow *win;
  int fb_w, fb_h;
  /* orbit camera */
  double tx, ty;               /* target on the floor [m] */
  double dist, azim, elev;     /* [m, rad, rad] */
  bool framed;                 /* camera placed over the map once */
  int follow;                  /* robot index or -1 */
  bool ldrag, rdrag;
  double mx, my;
  bool quit, shot_key;
  /* overlays */
  pa_render_lines ov;        /* scans, trails, navigation */
  pa_render_lines vis_lines; /* the clients' visuals (visuals.c) */
  pa_ring_cursor scan_cur;
  vscan *scans;                /* [max_robots] */
  vtrail *trails;              /* [max_robots] */
  uint32_t max_robots, max_beams;
  float *scan_buf;
  uint32_t scan_cap;
  pa_nav_block *nav;           /* the clients' paths and waypoints, copied */
  uint32_t nav_gen;
  size_t wp_first;      /* waypoints in ov.v[wp_first, ov.n) */
  pa_visual_block *vis; /* the clients' visual objects, copied */
  uint32_t vis_gen;
  uint64_t spec_seq; /* the spectator camera last adopted */
  /* --msaa: frames drawn into a multisampled target, blitted to the window
   * (a multisampled window visual is not there under every X server) */
  GLuint ms_fbo, ms_rb[2];
  int ms_w, ms_h;
  bool ms_failed;
  bool vis_read;
  /* frames */
  int64_t next_frame;
  uint64_t frames_with_scene;
  bool shot_done;
  int64_t title_ns;
};

static void on_key(GLFWwindow *w, int key, int sc, int action, int mods) {
  pa_render_viewer *v = glfwGetWindowUserPointer(w);
  if (action != GLFW_PRESS)
    return;
  switch (key) {
  case GLFW_KEY_ESCAPE:
  case GLFW_KEY_Q: v->quit = true; break;
  case GLFW_KEY_S:
  case GLFW_KEY_P: v->shot_key = true; break;
  case GLFW_KEY_F: {
    /* Next active robot after the followed one; past the last: free. */
    uint32_t n = v->st->ctl->robot_count;
    if (n > v->max_robots)
      n = v->max_robots;
    int next = -1;
    for (uint32_t i = (uint32_t)(v->follow + 1); i < n; i++)
      if (v->st->robots[i].active) {
        next = (int)i;
        break;
      }
    v->follow = next;
    break;
  }
  default: break;
  }
}

static void on_button(GLFWwindow *w, int button, int action, int mods) {
  pa_render_viewer *v = glfwGetWindowUserPointer(w);
  bool down = action == GLFW_PRESS;
  if (button == GLFW_MOUSE_BUTTON_LEFT)
    v->ldrag = down;
  else if (button == GLFW_MOUSE_BUTTON_RIGHT)
    v->rdrag = down;
  glfwGetCursorPos(w, &v->mx, &v->my);
}

static void on_cursor(GLFWwindow *w, double x, double y) {
  pa_render_viewer *v = glfwGetWindowUserPointer(w);
  double dx = x - v->mx, dy = y - v->my;
  v->mx = x, v->my = y;
  if (v->ldrag) {
    v->azim -= dx * 0.006;
    v->elev += dy * 0.006;
    if (v->elev < 0.08)
      v->elev = 0.08;
    if (v->elev > 1.55)
      v->elev = 1.55;
  } else if (v->rdrag) {
    /* Pan in the floor plane, scaled so the floor follows the mouse. */
    double k = v->dist * 0.0018;
    double fx = -cos(v->azim), fy = -sin(v->azim); /* forward on the floor */
    double rx = fy, ry = -fx;                      /* right */
    v->tx -= (dx * rx - dy * fx) * k;
    v->ty -= (dx * ry - dy * fy) * k;
    v->follow = -1;
  }
}

static void on_scroll(GLFWwindow *w, double xo, double yo) {
  pa_render_viewer *v = glfwGetWindowUserPointer(w);
  v->dist *= pow(0.88, yo);
  if (v->dist < 0.5)
    v->dist = 0.5;
  if (v->dist > 500)
    v->dist = 500;
}

static void on_error(int code, const char *msg) {
  pa_warn("GLFW error 0x%x: %s", code, msg);
}

int pa_render_viewer_open(pa_render_viewer **out, const pa_render_def *d,
                          pa_stack *st, char *err, size_t err_sz) {
  *out = NULL;
  glfwSetErrorCallback(on_error);
  if (!glfwInit()) {
    snprintf(err, err_sz, "viewer: cannot initialise GLFW (no display? set "
             "DISPLAY or run under xvfb-run)");
    return -1;
  }
  pa_render_viewer *v = calloc(1, sizeof *v);
  if (!v) {
    snprintf(err, err_sz, "viewer: out of memory");
    return -1;
  }
  v->def = d;
  v->st = st;
  v->follow = -1;
  v->azim = -M_PI / 2 + 0.35;
  v->elev = 0.9;
  v->dist = 10;
  v->max_robots = st->ctl->def.max_robots;
  v->max_beams = st->ctl->def.max_beams;
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  uint32_t w = d->viewer_width ? d->viewer_width : 1280;
  uint32_t h = d->viewer_height ? d->viewer_height : 800;
  v->win = glfwCreateWindow((int)w, (int)h, "playarea", NULL, NULL);
  if (!v->win) {
    snprintf(err, err_sz, "viewer: cannot open a %ux%u GL 3.3 core window", w,
             h);
    goto fail;
  }
  glfwMakeContextCurrent(v->win);
  glfwSwapInterval(0); /* we pace frames ourselves; no vsync under Xvfb */
  if (pa_render_gl_load(glfwGetProcAddress, err, err_sz) < 0)
    goto fail;
  glfwSetWindowUserPointer(v->win, v);
  glfwSetKeyCallback(v->win, on_key);
  glfwSetMouseButtonCallback(v->win, on_button);
  glfwSetCursorPosCallback(v->win, on_cursor);
  glfwSetScrollCallback(v->win, on_scroll);
  if (pa_render_lines_init(&v->ov, err, err_sz) < 0 ||
      pa_render_lines_init(&v->vis_lines, err, err_sz) < 0)
    goto fail;
  v->scans = calloc(v->max_robots ? v->max_robots : 1, sizeof *v->scans);
  v->trails = calloc(v->max_robots ? v->max_robots : 1, sizeof *v->trails);
  v->scan_cap = pa_ring_max_record(st->scan);
  v->scan_buf = malloc(v->scan_cap);
  v->nav = calloc(1, sizeof *v->nav);
  v->vis = calloc(1, sizeof *v->vis);
  if (!v->scans || !v->trails || !v->scan_buf || !v->nav || !v->vis) {
    snprintf(err, err_sz, "viewer: out of memory");
    goto fail;
  }
  v->scan_cur = pa_ring_cursor_now(st->scan);
  /* Back up a few records so a paused simulation still shows its scans. */
  uint64_t back = pa_ring_slot_count(st->scan) / 2;
  v->scan_cur.next = v->scan_cur.next > back ? v->scan_cur.next - back : 1;
  if (pa_render_gl_check("opening the viewer", err, err_sz) < 0)
    goto fail;
  *out = v;
  return 0;
fail:
  pa_render_viewer_close(v);
  return -1;
}

static void ms_free(pa_render_viewer *v);

void pa_render_viewer_close(pa_render_viewer *v) {
  if (!v)
    return;
  if (v->win) {
    glfwMakeContextCurrent(v->win);
    pa_render_lines_free(&v->ov);
    pa_render_lines_free(&v->vis_lines);
    ms_free(v);
    glfwDestroyWindow(v->win);
  }
  /* No glfwTerminate: it unloads the GL driver, whose leftovers then show
   * up as unattributable leaks under LeakSanitizer; the viewer closes only
   * when the process ends, which closes the X connection anyway. */
  if (v->scans)
    for (uint32_t i = 0; i < v->max_robots; i++)
      free(v->scans[i].ranges);
  free(v->scans);
  free(v->trails);
  free(v->scan_buf);
  free(v->nav);
  free(v->vis);
  free(v);
}

static void ov_push(pa_render_viewer *v, double x, double y, double z,
                    const float rgb[3]) {
  pa_render_lines_push(&v->ov, x, y, z, rgb);
}

/* Drains new scans into the per-robot latest scan. */
static void read_scans(pa_render_viewer *v) {
  uint32_t len;
  uint64_t seq;
  for (int k = 0; k < 4096; k++) {
    if (pa_ring_read_next(v->st->scan, &v->scan_cur, v->scan_buf, v->scan_cap,
                          &len, &seq) != 0)
      break;
    if (len < sizeof(pa_scan))
      continue;
    const pa_scan *s = (const pa_scan *)v->scan_buf;
    uint32_t count = s->count;
    if (s->robot >= v->max_robots || count > v->max_beams ||
        len < sizeof(pa_scan) + (size_t)count * sizeof(float))
      continue;
    vscan *d = &v->scans[s->robot];
    if (!d->ranges && !(d->ranges = malloc(
                            (v->max_beams ? v->max_beams : 1) * sizeof(float))))
      continue;
    d->valid = true;
    d->x = s->x, d->y = s->y, d->theta = s->theta;
    d->angle_min = s->angle_min;
    d->angle_increment = s->angle_increment;
    d->range_max = s->range_max;
    d->count = count;
    memcpy(d->ranges, s + 1, count * sizeof(float));
  }
}

static void update_trails(pa_render_viewer *v, const pa_tick *t) {
  if (!t)
    return;
  const pa_robot_state *rs = (const pa_robot_state *)(t + 1);
  uint32_t n = t->robot_count < v->max_robots ? t->robot_count : v->max_robots;
  for (uint32_t i = 0; i < n; i++) {
    if (!(rs[i].flags & PA_RS_ACTIVE) || !isfinite(rs[i].x) ||
        !isfinite(rs[i].y))
      continue;
    vtrail *tr = &v->trails[i];
    if (tr->n) {
      const float *last =
          tr->xy[(tr->head + TRAIL_POINTS - 1) % TRAIL_POINTS];
      if (hypot(rs[i].x - last[0], rs[i].y - last[1]) < TRAIL_STEP)
        continue;
    }
    tr->xy[tr->head][0] = (float)rs[i].x;
    tr->xy[tr->head][1] = (float)rs[i].y;
    tr->head = (tr->head + 1) % TRAIL_POINTS;
    if (tr->n < TRAIL_POINTS)
      tr->n++;
  }
}

static void robot_rgb(const pa_render_viewer *v, uint32_t i, float out[3],
                      float lighten) {
  const uint8_t *c = v->st->robots[i].colour;
  for (int k = 0; k < 3; k++)
    out[k] = (c[k] / 255.0f) * (1 - lighten) + lighten;
}

/* The clients' navigation drawings, copied when they changed. */
static void read_nav(pa_render_viewer *v) {
  uint32_t gen = __atomic_load_n(&v->st->nav->gen, __ATOMIC_ACQUIRE);
  if (gen == v->nav_gen)
    return;
  if (pa_stack_nav_read(v->st, v->nav))
    v->nav_gen = v->nav->gen;
}

/* The clients' visual objects, copied when they changed. */
static void read_visuals(pa_render_viewer *v) {
  uint32_t gen = __atomic_load_n(&v->st->vis->gen, __ATOMIC_ACQUIRE);
  if (v->vis_read && gen == v->vis_gen)
    return;
  if (pa_stack_visual_read(v->st, v->vis)) {
    v->vis_gen = v->vis->gen;
    v->vis_read = true;
  }
}

/* The drawings of robots that exist: paths as line segments (the plan
 * magenta, a predicted trajectory orange), or waypoints as points (yellow, a
 * goal waypoint green; drawn larger). */
static void push_nav(pa_render_viewer *v, uint32_t nr, bool paths) {
  static const float path_rgb[3] = {0.95f, 0.2f, 0.9f};
  static const float wp_rgb[3] = {1.0f, 0.85f, 0.1f};
  static const float pred_rgb[3] = {1.0f, 0.5f, 0.05f};
  static const float goal_rgb[3] = {0.2f, 0.95f, 0.3f};
  for (int i = 0; i < PA_NAV_OVERLAYS; i++) {
    const pa_nav_overlay *o = &v->nav->ov[i];
    if (o->robot >= nr || !v->st->robots[o->robot].active)
      continue;
    uint32_t m = o->pred_n < PA_NAV_PATH_MAX ? o->pred_n : PA_NAV_PATH_MAX;
    for (uint32_t k = 1; paths && k < m; k++) {
      ov_push(v, o->pred[k - 1][0], o->pred[k - 1][1], OVERLAY_Z + 0.025,
              pred_rgb);
      ov_push(v, o->pred[k][0], o->pred[k][1], OVERLAY_Z + 0.025, pred_rgb);
    }
    if (!paths && o->goal_n)
      ov_push(v, o->goal[0], o->goal[1], OVERLAY_Z + 0.035, goal_rgb);
    const float(*pt)[2] = paths ? o->path : o->wp;
    uint32_t cap = paths ? PA_NAV_PATH_MAX : PA_NAV_WAYPOINTS_MAX;
    uint32_t n = paths ? o->path_n : o->wp_n;
    n = n < cap ? n : cap;
    for (uint32_t k = paths ? 1 : 0; k < n; k++) {
      if (paths)
        ov_push(v, pt[k - 1][0], pt[k - 1][1], OVERLAY_Z + 0.02, path_rgb);
      ov_push(v, pt[k][0], pt[k][1], OVERLAY_Z + (paths ? 0.02 : 0.03),
              paths ? path_rgb : wp_rgb);
    }
  }
}

/* Scan rays (faint) with their hit points, trails and navigation paths as
 * one buffer of lines, then the points; waypoints last (drawn larger). */
static void build_overlay(pa_render_viewer *v, size_t *n_lines,
                          size_t *n_points) {
  v->ov.n = 0;
  uint32_t nr = v->st->ctl->robot_count;
  if (nr > v->max_robots)
    nr = v->max_robots;
  for (uint32_t i = 0; i < nr; i++) {
    const vtrail *tr = &v->trails[i];
    float rgb[3];
    robot_rgb(v, i, rgb, 0.0f);
    for (uint32_t k = 1; k < tr->n; k++) {
      const float *a =
          tr->xy[(tr->head + TRAIL_POINTS - tr->n + k - 1) % TRAIL_POINTS];
      const float *b = tr->xy[(tr->head + TRAIL_POINTS - tr->n + k) %
                              TRAIL_POINTS];
      ov_push(v, a[0], a[1], OVERLAY_Z, rgb);
      ov_push(v, b[0], b[1], OVERLAY_Z, rgb);
    }
    vscan *s = &v->scans[i];
    if (!s->valid)
      continue;
    float ray[3];
    robot_rgb(v, i, ray, 0.6f);
    s->ray_first = v->ov.n;
    for (uint32_t k = 0; k < s->count; k++) {
      float r = s->ranges[k];
      if (!isfinite(r) || r >= s->range_max)
        continue;
      double a = s->theta + s->angle_min + k * (double)s->angle_increment;
      ov_push(v, s->x, s->y, OVERLAY_Z, ray);
      ov_push(v, s->x + r * cos(a), s->y + r * sin(a), OVERLAY_Z, ray);
    }
    s->ray_end = v->ov.n;
  }
  read_nav(v);
  push_nav(v, nr, true);
  *n_lines = v->ov.n;
  /* Hit points after every line (one draw call each): the far ends of the
   * rays just pushed, not computed again. */
  static const float hit[3] = {0.95f, 0.15f, 0.1f};
  for (uint32_t i = 0; i < nr; i++) {
    const vscan *s = &v->scans[i];
    if (!s->valid)
      continue;
    for (size_t k = s->ray_first + 1; k < s->ray_end; k += 2)
      ov_push(v, v->ov.v[k].pos[0], v->ov.v[k].pos[1], OVERLAY_Z + 0.01, hit);
  }
  v->wp_first = v->ov.n;
  push_nav(v, nr, false);
  *n_points = v->wp_first - *n_lines;
}

static int save_screenshot(pa_render_viewer *v, const char *path) {
  size_t row = (size_t)v->fb_w * 3;
  uint8_t *px = malloc(row * (size_t)v->fb_h);
  uint8_t *flip = malloc(row * (size_t)v->fb_h);
  char err[256];
  int rc = -1;
  if (px && flip) {
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadBuffer(GL_BACK);
    glReadPixels(0, 0, v->fb_w, v->fb_h, GL_RGB, GL_UNSIGNED_BYTE, px);
    for (int y = 0; y < v->fb_h; y++)
      memcpy(flip + (size_t)y * row, px + (size_t)(v->fb_h - 1 - y) * row,
             row);
    rc = pa_render_write_png(path, flip, (uint32_t)v->fb_w, (uint32_t)v->fb_h,
                             err, sizeof err);
    if (rc == 0)
      pa_info("screenshot saved to %s (%dx%d)", path, v->fb_w, v->fb_h);
    else
      pa_error("%s", err);
  } else {
    pa_error("screenshot: out of memory");
  }
  free(px);
  free(flip);
  return rc;
}

static void ms_free(pa_render_viewer *v) {
  if (v->ms_fbo)
    glDeleteFramebuffers(1, &v->ms_fbo);
  if (v->ms_rb[0])
    glDeleteRenderbuffers(2, v->ms_rb);
  v->ms_fbo = v->ms_rb[0] = v->ms_rb[1] = 0;
  v->ms_w = v->ms_h = 0;
}

/* Binds the multisampled target at the window's size (made on first use
 * and on a resize); false: draw straight into the window. */
static bool ms_bind(pa_render_viewer *v) {
  GLint max = 0;
  if (v->def->msaa < 2 || v->ms_failed || v->fb_w < 1 || v->fb_h < 1)
    return false;
  if (v->ms_fbo && v->ms_w == v->fb_w && v->ms_h == v->fb_h) {
    glBindFramebuffer(GL_FRAMEBUFFER, v->ms_fbo);
    return true;
  }
  ms_free(v);
  glGetIntegerv(GL_MAX_SAMPLES, &max);
  GLsizei n = (GLsizei)v->def->msaa < max ? (GLsizei)v->def->msaa : max;
  GLenum st = pa_render_target(n, v->fb_w, v->fb_h, &v->ms_fbo, v->ms_rb);
  if (n < 2 || st != GL_FRAMEBUFFER_COMPLETE || glGetError() != GL_NO_ERROR) {
    pa_warn("viewer: no %u-sample target (the GL allows %d): drawing "
            "without MSAA",
            v->def->msaa, max);
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    ms_free(v);
    v->ms_failed = true;
    return false;
  }
  glBindFramebuffer(GL_FRAMEBUFFER, v->ms_fbo);
  v->ms_w = v->fb_w, v->ms_h = v->fb_h;
  return true;
}

/* Resolves the multisampled frame into the window's back buffer. */
static void ms_resolve(pa_render_viewer *v) {
  glBindFramebuffer(GL_READ_FRAMEBUFFER, v->ms_fbo);
  glBindFramebuffer(GL_DRAW_FRAMEBUFFER, 0);
  glBlitFramebuffer(0, 0, v->fb_w, v->fb_h, 0, 0, v->fb_w, v->fb_h,
                    GL_COLOR_BUFFER_BIT, GL_NEAREST);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
}

static void draw_frame(pa_render_viewer *v, pa_render_scene *s,
                       const pa_tick *t);

static void draw(pa_render_viewer *v, pa_render_scene *s, const pa_tick *t) {
  glfwGetFramebufferSize(v->win, &v->fb_w, &v->fb_h);
  bool ms = ms_bind(v);
  if (!ms)
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
  draw_frame(v, s, t);
  if (ms)
    ms_resolve(v);
}

static void draw_frame(pa_render_viewer *v, pa_render_scene *s,
                       const pa_tick *t) {
  glViewport(0, 0, v->fb_w, v->fb_h);
  glClearColor(PA_RENDER_SKY_RGB, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
  if (!s || v->fb_w < 1 || v->fb_h < 1)
    return;
  double b[4];
  pa_render_scene_bounds(s, b);
  if (!v->framed) {
    v->tx = (b[0] + b[2]) / 2, v->ty = (b[1] + b[3]) / 2;
    v->dist = fmax(b[2] - b[0], b[3] - b[1]) * 1.05 + 1;
    v->framed = true;
  }
  /* A client's set_camera moves the viewer's camera too (one spectator
   * camera for the viewer and the recordings); the mouse takes it on. */
  const pa_spectator *sp = &v->st->vis->spec;
  uint64_t q = __atomic_load_n(&sp->cam_seq, __ATOMIC_ACQUIRE);
  if (!(q & 1u) && q != v->spec_seq) {
    v->spec_seq = q;
    double d[3] = {sp->pos[0] - sp->look_at[0], sp->pos[1] - sp->look_at[1],
                   sp->pos[2] - sp->look_at[2]};
    double dist = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    if (dist > 1e-3 && isfinite(dist)) {
      v->tx = sp->look_at[0], v->ty = sp->look_at[1];
      v->dist = dist;
      v->azim = atan2(d[1], d[0]);
      v->elev = fmax(0.02, asin(d[2] / dist));
      v->follow = -1;
    }
  }
  if (v->follow >= 0 && t && (uint32_t)v->follow < t->robot_count) {
    const pa_robot_state *rs = (const pa_robot_state *)(t + 1);
    if (isfinite(rs[v->follow].x) && isfinite(rs[v->follow].y))
      v->tx = rs[v->follow].x, v->ty = rs[v->follow].y;
  }
  double ce = cos(v->elev);
  double eye[3] = {v->tx + v->dist * ce * cos(v->azim),
                   v->ty + v->dist * ce * sin(v->azim),
                   v->dist * sin(v->elev)};
  double centre[3] = {v->tx, v->ty, 0};
  static const double up[3] = {0, 0, 1};
  float view[16], proj[16], vp[16];
  pa_render_mat_lookat(view, eye, centre, up);
  pa_render_mat_perspective(proj, 45 * M_PI / 180,
                            (double)v->fb_w / v->fb_h, 0.05,
                            v->dist * 4 + 100);
  /* Seen from above the whole map is far away: fog would wash it out. */
  float fog = s->fog_density;
  s->fog_density = 0.006f;
  pa_render_scene_draw(s, view, proj, UINT32_MAX);
  s->fog_density = fog;
  read_visuals(v);
  pa_render_visuals_solid(&v->vis_lines, v->vis, s, false);
  size_t n_lines = 0, n_points = 0;
  build_overlay(v, &n_lines, &n_points);
  pa_render_mat_mul(vp, proj, view);
  if (v->ov.n) {
    pa_render_lines_begin(&v->ov, vp);
    pa_render_lines_draw(&v->ov, GL_LINES, 0, n_lines, 1.0f);
    pa_render_lines_draw(&v->ov, GL_POINTS, n_lines, n_points, 3.0f);
    pa_render_lines_draw(&v->ov, GL_POINTS, v->wp_first, v->ov.n - v->wp_first,
                         9.0f);
    pa_render_lines_end();
  }
  pa_render_visuals_draw(&v->vis_lines, v->vis, vp, false);
}

bool pa_render_viewer_frame(pa_render_viewer *v, pa_render_scene *s,
                            const pa_tick *t, int64_t wake_ns) {
  int64_t now = pa_now_ns();
  int64_t until = v->next_frame;
  if (wake_ns && wake_ns < until)
    until = wake_ns;
  if (until > now)
    glfwWaitEventsTimeout((until - now) / 1e9);
  else
    glfwPollEvents();
  if (v->quit || glfwWindowShouldClose(v->win))
    return false;
  now = pa_now_ns();
  if (now < v->next_frame)
    return true;
  v->next_frame = now + FRAME_NS;
  read_scans(v);
  update_trails(v, t);
  draw(v, s, t);
  if (s)
    v->frames_with_scene++;
  if (v->shot_key) {
    v->shot_key = false;
    char path[64];
    time_t tt = time(NULL);
    struct tm tmv;
    localtime_r(&tt, &tmv);
    strftime(path, sizeof path, "playarea-%Y%m%d-%H%M%S.png", &tmv);
    save_screenshot(v, path);
  }
  if (v->def->screenshot && !v->shot_done &&
      v->frames_with_scene >= SCREENSHOT_AFTER) {
    v->shot_done = true;
    if (save_screenshot(v, v->def->screenshot) < 0 ||
        v->def->exit_after_screenshot) {
      glfwSwapBuffers(v->win);
      return false;
    }
  }
  glfwSwapBuffers(v->win);
  if (t && now - v->title_ns > 500000000LL) {
    char title[128];
    snprintf(title, sizeof title, "playarea  t=%.2f s  tick %llu%s%s",
             t->sim_time, (unsigned long long)t->tick,
             (t->flags & PA_TICK_PAUSED) ? "  (paused)" : "",
             v->follow >= 0 ? "  following" : "");
    glfwSetWindowTitle(v->win, title);
    v->title_ns = now;
  }
  return true;
}
