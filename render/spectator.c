/* spectator.c - the spectator camera of pa-render (headless EGL): a view
 * independent of the robots, set by clients (set_camera, focus_on), from
 * which it writes screenshots (PNG) and videos (MP4, video.c) under its
 * --data_dir on request. Never in the sim's way: pa-render is its own
 * process, and video frames it cannot make in time are dropped, counted. */
#define _GNU_SOURCE
#include "render_int.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pa_safefile.h"
#include "pa_util.h"

#define SPEC_FOV (60 * M_PI / 180)
#define SPEC_PITCH_MAX (89 * M_PI / 180)

int pa_render_spectator_init(pa_spec_state *S, pa_stack *st,
                             const char *data_dir, uint32_t msaa, char *err,
                             size_t err_sz) {
  memset(S, 0, sizeof *S);
  S->msaa = msaa;
  char dir[PATH_MAX];
  if (!realpath(data_dir && *data_dir ? data_dir : ".", dir)) {
    snprintf(err, err_sz, "--data_dir '%s': %s", data_dir ? data_dir : ".",
             strerror(errno));
    return -1;
  }
  if (strlen(dir) >= PA_SPEC_DIR_MAX) {
    snprintf(err, err_sz, "--data_dir: '%s' is longer than %d bytes", dir,
             PA_SPEC_DIR_MAX - 1);
    return -1;
  }
  pa_spectator *sp = &st->vis->spec;
  size_t len = strlen(dir) + 1; /* fits both: checked above */
  memcpy(sp->dir, dir, len);
  memcpy(S->dir, dir, len);
  /* A request made while no pa-render ran is served now; a recording a
   * dead pa-render left open is over (its file ends where it crashed). */
  if (__atomic_load_n(&sp->rec_state, __ATOMIC_ACQUIRE) == PA_REC_ON)
    __atomic_store_n(&sp->rec_state, PA_REC_FAILED, __ATOMIC_RELEASE);
  __atomic_store_n(&sp->rec_done,
                   __atomic_load_n(&sp->rec_req, __ATOMIC_ACQUIRE),
                   __ATOMIC_RELEASE);
  __atomic_store_n(&sp->render_pid, (int32_t)getpid(), __ATOMIC_RELEASE);
  return 0;
}

void pa_render_spectator_free(pa_spec_state *S, pa_stack *st) {
  if (S->video) {
    char err[256];
    if (pa_video_close(S->video, err, sizeof err) < 0)
      pa_warn("%s", err);
    S->video = NULL;
    if (st)
      __atomic_store_n(&st->vis->spec.rec_state, PA_REC_IDLE, __ATOMIC_RELEASE);
  }
  pa_render_cam_free(S->cam);
  S->cam = NULL;
  free(S->rgb);
  S->rgb = NULL;
  if (st && __atomic_load_n(&st->vis->spec.render_pid, __ATOMIC_ACQUIRE) ==
                (int32_t)getpid())
    __atomic_store_n(&st->vis->spec.render_pid, 0, __ATOMIC_RELEASE);
}

/* The spectator's view now: the clients' camera (following its focus
 * object), or the whole map from the south when none was set. */
static void spectator_view(const pa_stack *st, const pa_render_scene *sc,
                           const pa_render_pose *poses, uint32_t n_poses,
                           const pa_obstacle_info *obs, uint32_t n_obs,
                           pa_render_view *v) {
  const pa_spectator *sp = &st->vis->spec;
  float pos[3], at[3];
  uint32_t kind, idx;
  for (int tries = 0;; tries++) {
    uint64_t q = __atomic_load_n(&sp->cam_seq, __ATOMIC_ACQUIRE);
    memcpy(pos, sp->pos, sizeof pos);
    memcpy(at, sp->look_at, sizeof at);
    kind = sp->focus_kind;
    idx = sp->focus_idx;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if ((!(q & 1u) && __atomic_load_n(&sp->cam_seq, __ATOMIC_RELAXED) == q) ||
        tries > 100)
      break;
  }
  double p[3] = {pos[0], pos[1], pos[2]}, a[3] = {at[0], at[1], at[2]};
  if (p[0] == a[0] && p[1] == a[1] && p[2] == a[2]) {
    double b[4];
    pa_render_scene_bounds(sc, b);
    double ext = fmax(b[2] - b[0], b[3] - b[1]);
    a[0] = (b[0] + b[2]) / 2, a[1] = (b[1] + b[3]) / 2, a[2] = 0;
    p[0] = a[0], p[1] = a[1] - ext * 0.8, p[2] = ext * 0.8;
  }
  double fx = NAN, fy = NAN, fz = 0;
  if (kind == PA_SPEC_FOCUS_ROBOT && idx < n_poses && poses[idx].active)
    fx = poses[idx].x, fy = poses[idx].y, fz = 0.2;
  else if (kind == PA_SPEC_FOCUS_OBSTACLE && idx < n_obs && obs[idx].active)
    fx = obs[idx].x, fy = obs[idx].y, fz = obs[idx].height / 2;
  if (isfinite(fx) && isfinite(fy)) {
    /* Following: the camera keeps its offset from the look-at point. */
    double o[3] = {p[0] - a[0], p[1] - a[1], p[2] - a[2]};
    a[0] = fx, a[1] = fy, a[2] = fz;
    p[0] = fx + o[0], p[1] = fy + o[1], p[2] = fz + o[2];
  }
  double dx = a[0] - p[0], dy = a[1] - p[1], dz = a[2] - p[2];
  v->x = p[0], v->y = p[1], v->z = p[2];
  v->yaw = atan2(dy, dx);
  v->pitch = atan2(dz, hypot(dx, dy));
  if (v->pitch > SPEC_PITCH_MAX)
    v->pitch = SPEC_PITCH_MAX;
  if (v->pitch < -SPEC_PITCH_MAX)
    v->pitch = -SPEC_PITCH_MAX;
  v->fov = SPEC_FOV;
  v->skip_robot = UINT32_MAX;
  v->all_visuals = true;
  v->shadow_map = true;
}

/* Renders the spectator view at the requested size into S->rgb. */
static int spectator_render(pa_spec_state *S, const pa_stack *st,
                            const pa_render_scene *sc, const pa_render_view *v,
                            char *err, size_t err_sz) {
  const pa_spectator *sp = &st->vis->spec;
  uint32_t w = __atomic_load_n(&sp->width, __ATOMIC_ACQUIRE);
  uint32_t h = __atomic_load_n(&sp->height, __ATOMIC_ACQUIRE);
  if (w < 16 || h < 16 || w > 4096 || h > 4096 || (w & 1) || (h & 1))
    w = 640, h = 480;
  if (S->video)
    w = S->vw, h = S->vh; /* a video keeps its size */
  if (!S->cam || pa_render_cam_width(S->cam) != w ||
      pa_render_cam_height(S->cam) != h) {
    pa_render_cam_free(S->cam);
    S->cam = NULL;
    free(S->rgb);
    S->rgb = malloc((size_t)w * h * 3);
    if (!S->rgb) {
      snprintf(err, err_sz, "spectator: out of memory");
      return -1;
    }
    if (pa_render_cam_create(&S->cam, w, h, err, err_sz) < 0)
      return -1;
    if (pa_render_cam_set_msaa(S->cam, S->msaa, err, err_sz) < 0) {
      pa_render_cam_free(S->cam);
      S->cam = NULL;
      return -1;
    }
  }
  S->w = w, S->h = h;
  return pa_render_cam_render(S->cam, sc, v, S->rgb, err, err_sz);
}

static void screenshot(pa_spec_state *S, pa_stack *st,
                       const pa_render_scene *sc, const pa_render_view *v,
                       uint32_t req) {
  pa_spectator *sp = &st->vis->spec;
  char name[PA_SPEC_NAME_MAX], path[PA_SPEC_DIR_MAX + 96],
      tmp[PA_SPEC_DIR_MAX + 96], err[512];
  memcpy(name, sp->shot_name, sizeof name);
  name[sizeof name - 1] = 0;
  int st_ok = -1;
  if (!pa_snapshot_name_ok(name)) {
    pa_warn("screenshot: bad name '%s'", name);
  } else if (spectator_render(S, st, sc, v, err, sizeof err) < 0) {
    pa_warn("screenshot %s: %s", name, err);
  } else {
    snprintf(path, sizeof path, "%s.png", name);
    /* An O_EXCL|O_NOFOLLOW temp file renamed into place: a client polling
     * for the file sees it whole; a planted symlink is never followed. */
    pa_safe_file f;
    unsigned fl = __atomic_load_n(&sp->shot_overwrite, __ATOMIC_ACQUIRE)
                      ? PA_SAFE_OVERWRITE
                      : 0;
    int root = pa_safe_root_open(S->dir, err, sizeof err);
    int rc = root < 0
                 ? PA_SAFE_IO
                 : pa_safe_begin(&f, root, NULL, path, fl, err, sizeof err);
    if (root >= 0)
      close(root);
    snprintf(tmp, sizeof tmp, "/proc/self/fd/%d", rc == 0 ? f.fd : -1);
    if (rc == 0 &&
        pa_render_write_png(tmp, S->rgb, S->w, S->h, err, sizeof err) < 0) {
      pa_safe_abort(&f);
      rc = PA_SAFE_IO;
    } else if (rc == 0) {
      rc = pa_safe_commit(&f, err, sizeof err);
    }
    if (rc != 0) {
      pa_warn("screenshot %s: %s", name, err);
    } else {
      st_ok = 0;
      pa_info("screenshot %s (%ux%u)", path, S->w, S->h);
    }
  }
  __atomic_store_n(&sp->shot_status, st_ok, __ATOMIC_RELEASE);
  __atomic_store_n(&sp->shot_done, req, __ATOMIC_RELEASE);
}

static void video_stop(pa_spec_state *S, pa_stack *st, uint32_t state) {
  pa_spectator *sp = &st->vis->spec;
  if (S->video) {
    char err[512];
    if (pa_video_close(S->video, err, sizeof err) < 0) {
      pa_warn("%s", err);
      state = PA_REC_FAILED;
    }
    pa_info("video stopped: %" PRIu64 " frames, %" PRIu64 " dropped",
            sp->rec_frames, sp->rec_dropped);
  }
  S->video = NULL;
  __atomic_store_n(&sp->rec_state, state, __ATOMIC_RELEASE);
}

static void video_start(pa_spec_state *S, pa_stack *st, int64_t now) {
  pa_spectator *sp = &st->vis->spec;
  video_stop(S, st, PA_REC_IDLE);
  char name[PA_SPEC_NAME_MAX], path[PA_SPEC_DIR_MAX + 96], err[512];
  memcpy(name, sp->rec_name, sizeof name);
  name[sizeof name - 1] = 0;
  uint32_t w = sp->width, h = sp->height;
  if (w < 16 || h < 16 || w > 4096 || h > 4096 || (w & 1) || (h & 1))
    w = 640, h = 480;
  double fps = sp->rec_fps > 0 && sp->rec_fps <= 60 ? sp->rec_fps : 15;
  S->fps = (int)lround(fps);
  S->frames_max = sp->rec_frames_max;
  sp->rec_frames = sp->rec_dropped = 0;
  snprintf(path, sizeof path, "%s.mp4", name);
  /* Created here O_EXCL|O_NOFOLLOW (O_TRUNC with overwrite) beneath the
   * data directory; FFmpeg opens /proc/self/fd/N, the same file whatever
   * is at its name since (avio itself would follow a planted symlink). */
  int fd = -1;
  if (pa_snapshot_name_ok(name)) {
    unsigned fl = __atomic_load_n(&sp->rec_overwrite, __ATOMIC_ACQUIRE)
                      ? PA_SAFE_OVERWRITE
                      : 0;
    int root = pa_safe_root_open(S->dir, err, sizeof err);
    fd = root < 0 ? -1
                  : pa_safe_open_direct(root, NULL, path, fl, err, sizeof err);
    if (root >= 0)
      close(root);
  } else {
    snprintf(err, sizeof err, "bad name");
  }
  char fdpath[64];
  snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fd);
  if (fd < 0 || pa_video_open(&S->video, fdpath, w, h, S->fps, sp->rec_codec,
                              sizeof sp->rec_codec, err, sizeof err) < 0) {
    pa_warn("video %s: %s", path, err);
    if (fd >= 0)
      close(fd);
    S->video = NULL;
    __atomic_store_n(&sp->rec_state, PA_REC_FAILED, __ATOMIC_RELEASE);
    return;
  }
  close(fd); /* FFmpeg holds its own */
  if (strcmp(sp->rec_codec, "h264"))
    pa_warn("video: no H.264 encoder in this libavcodec: MPEG-4 part 2 in "
            "the MP4 instead");
  S->vw = w, S->vh = h;
  S->start_ns = now;
  S->slot = 0;
  pa_info("video %s: %ux%u at %d fps (%s)", path, w, h, S->fps, sp->rec_codec);
  __atomic_store_n(&sp->rec_state, PA_REC_ON, __ATOMIC_RELEASE);
}

int64_t pa_render_spectator_step(pa_spec_state *S, pa_stack *st,
                                 const pa_render_scene *sc,
                                 const pa_render_pose *poses, uint32_t n_poses,
                                 const pa_obstacle_info *obs, uint32_t n_obs,
                                 int64_t now) {
  pa_spectator *sp = &st->vis->spec;
  uint32_t shot = __atomic_load_n(&sp->shot_req, __ATOMIC_ACQUIRE);
  uint32_t rec = __atomic_load_n(&sp->rec_req, __ATOMIC_ACQUIRE);
  bool want_shot = shot != __atomic_load_n(&sp->shot_done, __ATOMIC_ACQUIRE);
  if (rec != __atomic_load_n(&sp->rec_done, __ATOMIC_ACQUIRE)) {
    if (__atomic_load_n(&sp->rec_start, __ATOMIC_ACQUIRE))
      video_start(S, st, now);
    else
      video_stop(S, st, PA_REC_IDLE);
    __atomic_store_n(&sp->rec_done, rec, __ATOMIC_RELEASE);
  }
  if (!want_shot && !S->video)
    return 0;
  pa_render_view v;
  spectator_view(st, sc, poses, n_poses, obs, n_obs, &v);
  if (want_shot)
    screenshot(S, st, sc, &v, shot);
  if (!S->video)
    return 0;
  int64_t period = 1000000000LL / S->fps;
  int64_t due = S->start_ns + (int64_t)S->slot * period;
  if (now < due)
    return due;
  /* Slots that passed while we were busy are dropped (the video keeps
   * wall time: its timestamps skip them). */
  int64_t slot = (now - S->start_ns) / period;
  if (slot > (int64_t)S->slot) {
    sp->rec_dropped += (uint64_t)(slot - (int64_t)S->slot);
    S->slot = (uint64_t)slot;
  }
  char err[512];
  if (spectator_render(S, st, sc, &v, err, sizeof err) < 0 ||
      pa_video_add(S->video, S->rgb, (int64_t)S->slot, err, sizeof err) < 0) {
    pa_warn("video: %s; stopping it", err);
    video_stop(S, st, PA_REC_FAILED);
    return 0;
  }
  __atomic_store_n(&sp->rec_frames, sp->rec_frames + 1, __ATOMIC_RELEASE);
  S->slot++;
  if (S->frames_max && sp->rec_frames >= S->frames_max) {
    video_stop(S, st, PA_REC_IDLE);
    return 0;
  }
  return S->start_ns + (int64_t)S->slot * period;
}
