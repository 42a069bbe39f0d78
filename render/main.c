/* main.c - pa-render: flags -> pa_render_run -> exit code. */
#include <stdio.h>
#include <stdlib.h>

#include "pa_render.h"
#include "pa_util.h"

int main(int argc, char **argv) {
  pa_render_def d = pa_render_def_default();
  long vw = d.viewer_width, vh = d.viewer_height;
  const char *screenshot = NULL;
  pa_opt opts[] = {
      {"instance", PA_OPT_STR, &d.instance, 0, -1, "instance to attach to"},
      {"camera_hz", PA_OPT_DOUBLE, &d.camera_hz, 0.1, 1000,
       "head camera frame rate [Hz] while subscribed"},
      {"viewer", PA_OPT_FLAG, &d.viewer, 0, -1,
       "open a window with an orbit camera over the world"},
      {"viewer_width", PA_OPT_INT, &vw, 64, 8192, "viewer width [px]"},
      {"viewer_height", PA_OPT_INT, &vh, 64, 8192, "viewer height [px]"},
      {"screenshot", PA_OPT_STR, &screenshot, 0, -1,
       "viewer: save a PNG here after the first frames"},
      {"exit_after_screenshot", PA_OPT_FLAG, &d.exit_after_screenshot, 0, -1,
       "viewer: quit once --screenshot is saved"},
  };
  size_t n = sizeof opts / sizeof opts[0];
  char err[512];
  pa_log_init("pa-render", PA_LOG_INFO);
  int rc = pa_opt_parse(opts, n, argc, argv, NULL, 0, NULL, err, sizeof err);
  if (rc == 1) {
    pa_opt_usage(stdout, "pa-render [flags]",
                 "Renders head-camera images of a running playarea instance "
                 "into its camera ring (headless EGL), or shows the world in "
                 "a window with --viewer.",
                 opts, n);
    return 0;
  }
  if (rc < 0) {
    pa_error("%s", err);
    return PA_EXIT_CONFIG;
  }
  d.viewer_width = (uint32_t)vw;
  d.viewer_height = (uint32_t)vh;
  d.screenshot = screenshot && *screenshot ? screenshot : NULL;
  if ((d.screenshot || d.exit_after_screenshot) && !d.viewer) {
    pa_error("--screenshot and --exit_after_screenshot need --viewer");
    return PA_EXIT_CONFIG;
  }
  static volatile sig_atomic_t stop;
  pa_signals_install(&stop);
  rc = pa_render_run(&d, &stop, err, sizeof err);
  if (rc != 0)
    pa_error("%s", err);
  else
    pa_info("stopped");
  return rc;
}
