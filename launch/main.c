/* main.c - `playarea`: start and supervise a stack, or talk to a running one
 * (`playarea status`, `playarea restart PROC`). */
#include "pa_launch.h"

#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (pa_version_arg("playarea", argc, argv))
    return 0;
  pa_log_init("playarea", PA_LOG_INFO);
  for (const pa_launch_subcmd *sc = pa_launch_subcmds; argc > 1 && sc->name;
       sc++)
    if (!strcmp(argv[1], sc->name))
      return sc->main(argc - 1, argv + 1);
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
