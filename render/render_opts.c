/* render_opts.c - pa-render's flag table (one row per flag) and its
 * cross-flag checks; read by pa-render's main, the launcher and the docs
 * test. No GL here: the launcher links this file alone. */
#include "pa_render.h"

#include <stdio.h>

#define ROW(FIELD, NAME, TYPE, MIN, MAX, DEF, HELP)                            \
  PA_OPT_ROW(pa_render_def, FIELD, NAME, TYPE, MIN, MAX, DEF, NULL, HELP)

static const pa_opt_row rows[] = {
    {PA_OPT_ROW(pa_render_def, instance, "instance", PA_OPT_STR, 0, -1, 0,
                "p9000", "shared-memory instance to attach to")},
    {ROW(camera_hz, "camera_hz", PA_OPT_DOUBLE, 0.1, 1000, 15,
         "[Hz] head camera frames while subscribed")},
    {ROW(viewer, "viewer", PA_OPT_FLAG, 0, -1, 0,
         "open a window with an orbit camera over the world")},
    {ROW(viewer_width, "viewer_width", PA_OPT_U32, 64, 8192, 1280,
         "[px] viewer window")},
    {ROW(viewer_height, "viewer_height", PA_OPT_U32, 64, 8192, 800,
         "[px] viewer window")},
    {PA_OPT_ROW(pa_render_def, screenshot, "screenshot", PA_OPT_STR, 0, -1, 0,
                NULL, "with --viewer: save a PNG here after the first frames")},
    {ROW(exit_after_screenshot, "exit_after_screenshot", PA_OPT_FLAG, 0, -1, 0,
         "with --viewer: quit once --screenshot is saved")},
    {PA_OPT_ROW(pa_render_def, data_dir, "data_dir", PA_OPT_STR, 0, -1, 0, NULL,
                "request_screenshot and start_recording_video write here "
                "(unset or '' = pa-render's working directory)")},
    {ROW(msaa, "msaa", PA_OPT_U32, 0, 16, 4,
         "MSAA samples for spectator screenshots and videos and the viewer "
         "(0 or 1: off; head cameras never)")},
    {ROW(atlas_contexts, "atlas_contexts", PA_OPT_U32, 0, 8, 0,
         "GL contexts drawing a camera_batch at once, each on its own thread "
         "(0 = 2 with 2 CPUs or more, else 1)")},
    {ROW(raster_threads, "raster_threads", PA_OPT_U32, 0, 64, 0,
         "llvmpipe rasteriser threads of the headless context (0 = none: "
         "the drawing thread rasterises, the least CPU a frame; "
         "LP_NUM_THREADS in the environment wins)")},
};

static int finish(void *args, const bool *given, char *err, size_t err_sz) {
  (void)given;
  pa_render_def *d = args;
  if (d->screenshot && !*d->screenshot)
    d->screenshot = NULL;
  if ((d->screenshot || d->exit_after_screenshot) && !d->viewer) {
    snprintf(err, err_sz, "--%s needs --viewer",
             d->screenshot ? "screenshot" : "exit_after_screenshot");
    return -1;
  }
  if (d->exit_after_screenshot && !d->screenshot) {
    snprintf(err, err_sz, "--exit_after_screenshot needs --screenshot PATH");
    return -1;
  }
  return 0;
}

static const pa_opt_table table =
    PA_OPT_TABLE("pa-render",
                 "Renders head-camera images of a running playarea instance "
                 "into its camera ring (headless EGL), or shows the world in a "
                 "window with --viewer.",
                 rows, pa_render_def, finish);

const pa_opt_table *pa_render_opts(void) { return &table; }
