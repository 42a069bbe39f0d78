/* json_spectator.c - the spectator camera (set_camera, focus_on),
 * screenshots and videos: requests written into the spectator block of
 * shm/pa_visual.h for pa-render, and their state for get_status. */
#define _GNU_SOURCE
#include "json_int.h"

#include "pa_util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the spectator camera, screenshots and videos --------------------------
 * pa-netgw writes the request into the spectator block and wakes pa-render,
 * which writes the file under its --data_dir; the reply has the path at
 * once (the file is renamed into place whole), get_status the outcome. */

/* The spectator video's pixel rate pa-render encodes while the robots'
 * head cameras keep their 15 Hz (1920 x 1080 at 60 fps; measured: 4096 x
 * 4096 at 60 fps took a camera from 15.5 to 3.8 frames/s, 1920 x 1080 at
 * 60 left it at 15.3). */
#define SPEC_VIDEO_PIXELS_PER_S (1920.0 * 1080.0 * 60.0)

/* 0, or -1 with the error by name when a w x h video at fps is over it. */
static int video_rate_ok(jctx *x, double w, double h, double fps) {
  double rate = w * h * fps;
  if (rate <= SPEC_VIDEO_PIXELS_PER_S)
    return 0;
  pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
               "a %.0fx%.0f video at %g fps is %.1f Mpixel/s, more than the "
               "%.1f Mpixel/s (1920x1080 at 60 fps) pa-render encodes "
               "without slowing the robots' cameras: a smaller set_camera "
               "size or a lower data.fps",
               w, h, fps, rate / 1e6, SPEC_VIDEO_PIXELS_PER_S / 1e6);
  return -1;
}

static void spec_cam_begin(pa_spectator *sp) {
  uint64_t q = __atomic_load_n(&sp->cam_seq, __ATOMIC_RELAXED);
  __atomic_store_n(&sp->cam_seq, (q | 1u) + ((q & 1u) ? 2u : 0u),
                   __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void spec_cam_end(pa_spectator *sp) {
  uint64_t q = __atomic_load_n(&sp->cam_seq, __ATOMIC_RELAXED);
  __atomic_store_n(&sp->cam_seq, (q | 1u) + 1u, __ATOMIC_RELEASE);
}

/* The pa-render that serves the spectator, or -1 with the error set. */
static int spec_render(jctx *x) {
  pa_spectator *sp = &x->c->g->st->vis->spec;
  int32_t pid = __atomic_load_n(&sp->render_pid, __ATOMIC_ACQUIRE);
  if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH)) {
    pa_json_fail(x, PA_ERR_BUSY,
                 "no pa-render is serving this instance (started with "
                 "--no-render, or restarting)");
    return -1;
  }
  return 0;
}

static int spec_name(jctx *x, const char **name) {
  if (pa_json_need_str(x, "name", PA_SPEC_NAME_MAX, name) < 0)
    return -1;
  if (!pa_snapshot_name_ok(*name)) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.name '%s': use 1 to %d of A-Z a-z 0-9 _ -", *name,
                 PA_SNAPSHOT_NAME_MAX);
    return -1;
  }
  return 0;
}

/* data.overwrite, and without it a file that exists refused at once (the
 * render refuses it too, O_EXCL, should one appear meanwhile): 0 or -1. */
static int spec_overwrite(jctx *x, const char *name, const char *ext,
                          uint32_t *flag) {
  bool ow = false;
  if (pa_json_bool(x, "overwrite", &ow) < 0)
    return -1;
  *flag = ow;
  char dir[PA_SPEC_DIR_MAX], file[PA_SPEC_NAME_MAX + 8];
  snprintf(dir, sizeof dir, "%.*s", PA_SPEC_DIR_MAX - 1,
           x->c->g->st->vis->spec.dir); /* shm: not trusted to end */
  snprintf(file, sizeof file, "%s.%s", name, ext);
  struct stat st;
  int fd = ow ? -1 : open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  bool exists = fd >= 0 && fstatat(fd, file, &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (fd >= 0)
    close(fd);
  if (exists) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "%s already exists (give overwrite: true to replace it)",
                 file);
    return -1;
  }
  return 0;
}

static json_t *spec_path(pa_netgw *g, const char *name, const char *ext) {
  char path[PA_SPEC_DIR_MAX + 96];
  snprintf(path, sizeof path, "%.*s/%s.%s", PA_SPEC_DIR_MAX - 1,
           g->st->vis->spec.dir, name, ext);
  json_t *d = json_object();
  json_object_set_new(d, "path", json_string(path));
  return d;
}

/* set_camera {position, look_at, width, height}: stops following. */
json_t *pa_json_act_set_camera(jctx *x) {
  pa_spectator *sp = &x->c->g->st->vis->spec;
  double p[3], a[3];
  size_t np = 0, na = 0;
  long long w = sp->width ? sp->width : 640, h = sp->height ? sp->height : 480;
  int rp = pa_json_vec(x, "position", 3, 0, p, &np);
  int ra = rp < 0 ? -1 : pa_json_vec(x, "look_at", 3, 0, a, &na);
  if (rp < 0 || ra < 0 || pa_json_int(x, "width", 16, 4096, &w) < 0 ||
      pa_json_int(x, "height", 16, 4096, &h) < 0)
    return NULL;
  if (!rp || !ra)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.position and data.look_at [x, y, z] are "
                        "required");
  for (int i = 0; i < 3; i++)
    if (fabs(p[i]) > VIS_COORD_MAX || fabs(a[i]) > VIS_COORD_MAX)
      return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                          "coordinates are within 1e6 m");
  if (p[0] == a[0] && p[1] == a[1] && p[2] == a[2])
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.position and data.look_at are the same point");
  if ((w & 1) || (h & 1))
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.width and data.height must be even (video)");
  if (__atomic_load_n(&sp->rec_state, __ATOMIC_ACQUIRE) == PA_REC_ON &&
      video_rate_ok(x, (double)w, (double)h, sp->rec_fps) < 0)
    return NULL; /* a video runs: its size may not outgrow the budget */
  spec_cam_begin(sp);
  for (int i = 0; i < 3; i++)
    sp->pos[i] = (float)p[i], sp->look_at[i] = (float)a[i];
  sp->focus_kind = PA_SPEC_FOCUS_NONE;
  sp->width = (uint32_t)w;
  sp->height = (uint32_t)h;
  spec_cam_end(sp);
  json_t *d = json_object();
  json_object_set_new(d, "position", pa_json_vec3(p[0], p[1], p[2]));
  json_object_set_new(d, "look_at", pa_json_vec3(a[0], a[1], a[2]));
  json_object_set_new(d, "width", json_integer(w));
  json_object_set_new(d, "height", json_integer(h));
  return d;
}

/* focus_on {object}: the look-at point follows a robot or an obstacle
 * (the camera keeps its offset); "" stops following. */
json_t *pa_json_act_focus_on(jctx *x) {
  pa_netgw *g = x->c->g;
  pa_spectator *sp = &g->st->vis->spec;
  json_t *o = json_object_get(x->data, "object");
  if (o && !json_is_null(o) && !json_is_string(o))
    return pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                        "data.object must be a string (a robot or obstacle "
                        "name, or \"\" to stop following)");
  if (!json_is_string(o))
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.object (a robot or obstacle name) is required");
  const char *name = json_string_value(o);
  uint32_t kind = PA_SPEC_FOCUS_NONE, idx = 0;
  if (*name) {
    pa_robot_info ri;
    pa_obstacle_info oi;
    int rc = pa_gw_robot(g, name, -1, &ri, &idx);
    if (pa_json_lookup_busy(x, rc))
      return NULL;
    if (rc == 0) {
      kind = PA_SPEC_FOCUS_ROBOT;
    } else {
      rc = pa_gw_obstacle(g, name, &oi, &idx);
      if (pa_json_lookup_busy(x, rc))
        return NULL;
      if (rc != 0)
        return pa_json_fail(x, PA_ERR_UNKNOWN_OBJECT,
                            "no robot or obstacle named '%s'", name);
      kind = PA_SPEC_FOCUS_OBSTACLE;
    }
  }
  spec_cam_begin(sp);
  if (sp->pos[0] == sp->look_at[0] && sp->pos[1] == sp->look_at[1] &&
      sp->pos[2] == sp->look_at[2]) {
    /* No camera set yet: follow from behind and above. */
    sp->look_at[0] = sp->look_at[1] = sp->look_at[2] = 0;
    sp->pos[0] = -3, sp->pos[1] = -3, sp->pos[2] = 3;
  }
  sp->focus_kind = kind;
  sp->focus_idx = idx;
  spec_cam_end(sp);
  json_t *d = json_object();
  json_object_set_new(d, "object", json_string(name));
  json_object_set_new(d, "kind",
                      json_string(kind == PA_SPEC_FOCUS_ROBOT ? "robot"
                                  : kind                      ? "obstacle"
                                                              : "none"));
  return d;
}

/* RaisimServer's requestScreenshot takes no name: one from the time,
 * screenshot_YYYYmmdd_HHMMSS_mmm (UTC), in buf. */
static const char *time_name(char *buf, size_t n) {
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y%m%d_%H%M%S", &tm);
  snprintf(buf, n, "screenshot_%s_%03ld", stamp, ts.tv_nsec / 1000000);
  return buf;
}

json_t *pa_json_act_request_screenshot(jctx *x) {
  pa_netgw *g = x->c->g;
  pa_spectator *sp = &g->st->vis->spec;
  const char *name;
  uint32_t ow;
  char made[PA_SPEC_NAME_MAX];
  json_t *given = json_object_get(x->data, "name");
  bool named = given && !json_is_null(given);
  if (!named)
    name = time_name(made, sizeof made);
  if ((named && spec_name(x, &name) < 0) || spec_render(x) < 0 ||
      spec_overwrite(x, name, "png", &ow) < 0)
    return NULL;
  uint32_t req = __atomic_load_n(&sp->shot_req, __ATOMIC_ACQUIRE);
  if (req != __atomic_load_n(&sp->shot_done, __ATOMIC_ACQUIRE))
    return pa_json_fail(x, PA_ERR_BUSY,
                        "a screenshot is being written: try again");
  snprintf(sp->shot_name, sizeof sp->shot_name, "%s", name);
  sp->shot_overwrite = ow;
  __atomic_store_n(&sp->shot_req, req + 1, __ATOMIC_RELEASE);
  sem_post(&g->ctl->render_wake);
  json_t *d = spec_path(g, name, "png");
  json_object_set_new(d, "request", json_integer(req + 1));
  json_object_set_new(d, "name", json_string(name));
  if (!named) /* the reply says where it goes */
    json_object_set_new(d, "name_from_time", json_true());
  return d;
}

/* A video's name: as spec_name, a trailing ".mp4" (RaisimServer's
 * callers give the file's name) taken off into buf. */
static int video_name(jctx *x, char *buf, size_t n, const char **name) {
  json_t *v = json_object_get(x->data, "name");
  const char *s = json_is_string(v) ? json_string_value(v) : NULL;
  size_t len = s ? strlen(s) : 0;
  if (len > 4 && len - 4 < n && !strcmp(s + len - 4, ".mp4")) {
    snprintf(buf, n, "%.*s", (int)(len - 4), s);
    json_object_set_new(x->data, "name", json_string(buf));
  }
  if (spec_name(x, name) < 0)
    return -1;
  snprintf(buf, n, "%s", *name);
  *name = buf;
  return 0;
}

json_t *pa_json_act_start_recording_video(jctx *x) {
  pa_netgw *g = x->c->g;
  pa_spectator *sp = &g->st->vis->spec;
  const char *name;
  char nbuf[PA_SPEC_NAME_MAX];
  double fps = 15;
  long long frames = 0;
  if (video_name(x, nbuf, sizeof nbuf, &name) < 0 ||
      pa_json_num(x, "fps", &fps) < 0 ||
      pa_json_int(x, "frames", 1, 100000000, &frames) < 0)
    return NULL;
  if (!(fps >= 1 && fps <= 60))
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.fps %g is out of range [1, 60]", fps);
  double vw = sp->width ? sp->width : 640, vh = sp->height ? sp->height : 480;
  if (video_rate_ok(x, vw, vh, fps) < 0)
    return NULL;
  uint32_t ow;
  if (spec_render(x) < 0 || spec_overwrite(x, name, "mp4", &ow) < 0)
    return NULL;
  uint32_t req = __atomic_load_n(&sp->rec_req, __ATOMIC_ACQUIRE);
  if (req != __atomic_load_n(&sp->rec_done, __ATOMIC_ACQUIRE))
    return pa_json_fail(x, PA_ERR_BUSY,
                        "the previous start/stop is being served: try again");
  snprintf(sp->rec_name, sizeof sp->rec_name, "%s", name);
  sp->rec_overwrite = ow;
  sp->rec_fps = (float)fps;
  sp->rec_frames_max = (uint32_t)frames;
  sp->rec_start = 1;
  __atomic_store_n(&sp->rec_req, req + 1, __ATOMIC_RELEASE);
  sem_post(&g->ctl->render_wake);
  json_t *d = spec_path(g, name, "mp4");
  json_object_set_new(d, "fps", json_real(fps));
  return d;
}

json_t *pa_json_act_stop_recording_video(jctx *x) {
  pa_netgw *g = x->c->g;
  pa_spectator *sp = &g->st->vis->spec;
  if (spec_render(x) < 0)
    return NULL;
  uint32_t req = __atomic_load_n(&sp->rec_req, __ATOMIC_ACQUIRE);
  if (req != __atomic_load_n(&sp->rec_done, __ATOMIC_ACQUIRE))
    return pa_json_fail(x, PA_ERR_BUSY,
                        "the previous start/stop is being served: try again");
  bool on = __atomic_load_n(&sp->rec_state, __ATOMIC_ACQUIRE) == PA_REC_ON;
  if (!on) { /* nothing to stop: say so, ask pa-render nothing */
    /* the last video's path; none ever: null */
    json_t *d =
        sp->rec_name[0] ? spec_path(g, sp->rec_name, "mp4") : json_object();
    if (!sp->rec_name[0])
      json_object_set_new(d, "path", json_null());
    json_object_set_new(d, "frames", json_integer((json_int_t)sp->rec_frames));
    json_object_set_new(d, "was_recording", json_false());
    return d;
  }
  sp->rec_start = 0;
  __atomic_store_n(&sp->rec_req, req + 1, __ATOMIC_RELEASE);
  sem_post(&g->ctl->render_wake);
  json_t *d = spec_path(g, sp->rec_name[0] ? sp->rec_name : "none", "mp4");
  json_object_set_new(d, "frames", json_integer((json_int_t)sp->rec_frames));
  json_object_set_new(d, "was_recording", json_true());
  return d;
}

json_t *pa_json_spectator_status(pa_netgw *g) {
  const pa_spectator *sp = &g->st->vis->spec;
  static const char *const states[] = {"idle", "recording", "failed"};
  uint32_t rs = __atomic_load_n(&sp->rec_state, __ATOMIC_ACQUIRE);
  json_t *d = json_object();
  json_t *r = json_object();
  json_object_set_new(r, "state", json_string(rs < 3 ? states[rs] : "idle"));
  json_object_set_new(
      r, "pending",
      json_boolean(__atomic_load_n(&sp->rec_req, __ATOMIC_ACQUIRE) !=
                   __atomic_load_n(&sp->rec_done, __ATOMIC_ACQUIRE)));
  json_object_set_new(r, "frames", json_integer((json_int_t)sp->rec_frames));
  json_object_set_new(r, "dropped", json_integer((json_int_t)sp->rec_dropped));
  char codec[sizeof sp->rec_codec + 1];
  snprintf(codec, sizeof codec, "%.*s", (int)sizeof sp->rec_codec,
           sp->rec_codec);
  json_object_set_new(r, "codec", json_string(codec));
  json_object_set_new(d, "recording", r);
  json_t *s = json_object();
  uint32_t req = __atomic_load_n(&sp->shot_req, __ATOMIC_ACQUIRE);
  json_object_set_new(s, "request", json_integer(req));
  json_object_set_new(
      s, "pending",
      json_boolean(req != __atomic_load_n(&sp->shot_done, __ATOMIC_ACQUIRE)));
  json_object_set_new(s, "ok", json_boolean(sp->shot_status == 0));
  json_object_set_new(d, "screenshot", s);
  return d;
}
