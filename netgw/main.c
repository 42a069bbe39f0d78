/* main.c - pa-netgw: options -> attach the instance -> gateway loop ->
 * cleanup. See netgw.h and docs/protocol-notes.md. */
#define _GNU_SOURCE
#include "netgw.h"
#include "pa_util.h"

#include <signal.h>
#include <stdio.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
  /* The JSON action reference, from the action table (docs/actions.md). */
  if (argc == 2 && !strcmp(argv[1], "--help-actions")) {
    pa_netgw_actions_markdown(stdout);
    return 0;
  }
  pa_netgw_args args = {.def = pa_netgw_def_default()};
  int rc = pa_opt_main(pa_netgw_opts(), &args, NULL, argc, argv);
  if (rc >= 0)
    return rc;
  pa_netgw_def d = args.def;
  const char *instance = args.instance;
  bool realtime = d.realtime;
  char err[512];
  signal(SIGPIPE, SIG_IGN);
  /* ONFAULT: lock what is touched, not every reserved page (thread stacks,
   * sanitizer shadow); no page of the odom path is swapped out. */
  if (realtime && mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0)
    pa_warn("--realtime: mlockall failed (%s)", strerror(errno));
  pa_stack st;
  rc = pa_stack_attach(&st, instance, err, sizeof err);
  for (int tries = 0; rc == PA_SHM_ENOTREADY && tries < 50; tries++) {
    usleep(100000); /* the creator is still initialising it */
    rc = pa_stack_attach(&st, instance, err, sizeof err);
  }
  if (rc != 0) {
    pa_error("instance '%s': %s", instance, err);
    return PA_EXIT_CONFIG;
  }
  int status = 1;
  pa_netgw *g = pa_netgw_create(&d, &st, err, sizeof err);
  if (!g) {
    pa_error("%s", err);
    /* bad settings or a port that cannot be bound: configuration */
    status = strstr(err, "--bind") || strstr(err, "--token") ||
                     !strncmp(err, "cannot listen", 13)
                 ? PA_EXIT_CONFIG
                 : 1;
    goto out;
  }
  pa_info("listening on %s:%u (instance %s)", d.bind, pa_netgw_port(g),
          instance);
  status = pa_netgw_run(g, true) == 0 ? 0 : 1;
  pa_netgw_destroy(g);
out:
  pa_stack_detach(&st);
  return status;
}
