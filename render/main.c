/* main.c - pa-render: flags -> pa_render_run -> exit code. */
#include <stdio.h>
#include <stdlib.h>

#include "pa_render.h"
#include "pa_util.h"

int main(int argc, char **argv) {
  pa_render_def d = pa_render_def_default();
  int rc = pa_opt_main(pa_render_opts(), &d, NULL, argc, argv);
  if (rc >= 0)
    return rc;
  char err[512];
  static volatile sig_atomic_t stop;
  pa_signals_install(&stop);
  rc = pa_render_run(&d, &stop, err, sizeof err);
  if (rc != 0)
    pa_error("%s", err);
  else
    pa_info("stopped");
  return rc;
}
