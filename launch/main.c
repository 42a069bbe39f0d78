/* main.c - `playarea`: start and supervise a stack, or talk to a running one
 * (`playarea status`, `playarea restart PROC`). */
#include "pa_launch.h"

#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  pa_log_init("playarea", PA_LOG_INFO);
  if (argc > 1 && !strcmp(argv[1], "status"))
    return pa_launch_status_main(argc - 1, argv + 1);
  if (argc > 1 && !strcmp(argv[1], "restart"))
    return pa_launch_restart_main(argc - 1, argv + 1);
  if (argc > 1 && !strcmp(argv[1], "discover"))
    return pa_launch_discover_main(argc - 1, argv + 1);
  if (argc > 1 && !strcmp(argv[1], "replay"))
    return pa_launch_replay_main(argc - 1, argv + 1);
  /* The docs' flag tables, generated from the flag tables (a test compares
   * them with docs/flags.md and docs/CONTRACT.md). */
  if (argc == 2 && (!strcmp(argv[1], "--help-markdown") ||
                    !strcmp(argv[1], "--help-markdown=contract"))) {
    pa_launch_flags_markdown(stdout, strchr(argv[1], '=') != NULL);
    return 0;
  }

  pa_launch_cfg cfg = pa_launch_cfg_default();
  char err[512];
  int r = pa_launch_cfg_parse(&cfg, argc, argv, err, sizeof err);
  if (r == 1) {
    pa_launch_usage(stdout);
    return 0;
  }
  if (r < 0) {
    pa_error("%s", err);
    return PA_EXIT_CONFIG;
  }
  char bin_dir[4096];
  const char *env = getenv("PA_BIN_DIR");
  if (env && *env)
    snprintf(bin_dir, sizeof bin_dir, "%s", env);
  else
    pa_exe_dir(bin_dir, sizeof bin_dir);
  if (!bin_dir[0]) {
    pa_error("cannot find the directory of the playarea executable; set "
             "PA_BIN_DIR");
    return PA_EXIT_CONFIG;
  }
  return pa_launch_run(&cfg, bin_dir);
}
