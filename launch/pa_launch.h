/*
 * pa_launch.h - the launcher's modules (library pa_launch, used by the
 * `playarea` executable and its tests): the flag table, the process table
 * that starts and supervises pa-sim / pa-render / pa-netgw, and the
 * `status` / `restart` commands that talk to a running instance.
 */
#ifndef PA_LAUNCH_H
#define PA_LAUNCH_H

#include "pa_shm.h"
#include "pa_util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- flags (flags.c) ---------------------------------------------------- */

/* Which process a flag goes to (bit mask of 1 << PA_PROC_*). */
#define PA_LAUNCH_TO(p) (1u << (p))
#define PA_LAUNCH_MAX_FLAGS 64
#define PA_LAUNCH_WRAP_MAX 32 /* words in one --wrap command */

typedef struct pa_launch_cfg {
  /* ours */
  const char *instance;     /* NULL = p<tcp_port>, a<pid> for port 0 */
  bool no_render;
  long max_robots;          /* shm sizing */
  long grace_ms;            /* TERM -> KILL delay when stopping [ms] */
  long start_timeout_ms;    /* ready deadline per process (x10 if wrapped) */
  long crash_limit;         /* this many crashes ... (0 = never give up) */
  long crash_window_ms;     /* ... within this window: give up */
  const char *wrap_flag;    /* only for --help; --wrap is pre-extracted */
  const char *wrap[PA_PROC_COUNT]; /* per process: command to run it under */
  /* pa-sim */
  const char *world, *map_yaml, *map_image;
  double map_resolution, map_origin_x, map_origin_y;
  long map_negate;
  double map_occupied_thresh, map_free_thresh;
  double control_hz, scan_hz;
  long seed;
  double speed;
  bool paused;
  long laser_beams;
  double laser_range_min, laser_range_max, laser_noise;
  long camera_width, camera_height;
  double camera_fov_deg;
  long robots;
  double odom_error[3]; /* x, y, theta ratios */
  long threads, spin_us;
  bool realtime;
  const char *dataset_dir; /* export_dataset's directory (NULL = off) */
  const char *data_dir;    /* set_map / set_scenario files (NULL = cwd) */
  /* pa-render */
  double camera_hz;
  bool viewer;
  long viewer_width, viewer_height;
  const char *screenshot;
  bool exit_after_screenshot;
  /* pa-netgw */
  long tcp_port;
  const char *bind, *token;
  double tcp_feedback_hz;
  long max_clients, camera_chunk, request_timeout_ms;
  long max_output, odom_watch_us;
  /* filled by the parser */
  bool given[PA_LAUNCH_MAX_FLAGS]; /* index into the flag table */
  char instance_buf[PA_SHM_INSTANCE_MAX];
} pa_launch_cfg;

/* Defaults for every flag (the same defaults the processes use). */
pa_launch_cfg pa_launch_cfg_default(void);

/* Builds the flag table over c: opts[] for pa_opt_parse and procs[] (the
 * PA_LAUNCH_TO mask of each flag, 0 = the launcher's own). Returns the count
 * (<= PA_LAUNCH_MAX_FLAGS). */
size_t pa_launch_flag_table(pa_launch_cfg *c, pa_opt *opts, unsigned *procs);

/* Parses and validates the command line of `playarea [flags]` (argv[0] is
 * the program). Returns 0, 1 for --help, -1 with err naming the flag. The
 * instance name is resolved (c->instance is never NULL after success).
 * Checks that map/world files exist. argv strings must outlive c. */
int pa_launch_cfg_parse(pa_launch_cfg *c, int argc, char **argv, char *err,
                        size_t err_sz);

void pa_launch_usage(FILE *f);

/* "sim" / "pa-sim" -> PA_PROC_SIM, ...; -1 if unknown. */
int pa_launch_proc_from_name(const char *name);
/* "pa-sim", "pa-render", "pa-netgw", "playarea". */
const char *pa_launch_proc_exe(int proc);

/* Splits a --wrap command into words: blanks separate, '...' and "..."
 * quote, backslash escapes. Words are written into buf (NUL-separated) and
 * pointed to by words[]. Returns the count, or -1 with err. */
int pa_launch_split(const char *cmd, char **words, size_t max_words, char *buf,
                    size_t buf_sz, char *err, size_t err_sz);

/* The full argv for a process: [wrap words...] <bin_dir>/pa-<proc>
 * --instance=NAME and every flag the user gave that goes to proc, as
 * --name=value. Returns a NULL-terminated heap array (free with
 * pa_launch_argv_free) or NULL with err. */
char **pa_launch_child_argv(const pa_launch_cfg *c, int proc,
                            const char *bin_dir, char *err, size_t err_sz);
void pa_launch_argv_free(char **argv);

/* The shm sizes for an instance started with c. */
pa_stack_def pa_launch_stack_def(const pa_launch_cfg *c);

/* ---- supervisor (supervisor.c) ------------------------------------------ */

/* Crash-loop guard (defaults of --crash_limit / --crash_window_ms) and
 * backoff; see docs/operations.md. */
#define PA_LAUNCH_CRASH_LIMIT 5
#define PA_LAUNCH_CRASH_WINDOW_MS 30000
#define PA_LAUNCH_CRASH_MAX 64 /* largest --crash_limit */
#define PA_LAUNCH_BACKOFF_MIN_MS 10
#define PA_LAUNCH_BACKOFF_MAX_MS 5000

/* Backoff before restart number n (1 = first crash in the window) [ms]. */
long pa_launch_backoff_ms(int n);

/* Runs the stack in the foreground until SIGINT/SIGTERM/SIGHUP or a fatal
 * failure. Returns the exit code: 0 clean stop, PA_EXIT_CONFIG, or 1. */
int pa_launch_run(const pa_launch_cfg *c, const char *bin_dir);

/* ---- status and restart (status.c) --------------------------------------- */

/* `playarea status [--watch] [--instance X | --tcp_port P]` and
 * `playarea restart PROC [--instance X | --tcp_port P]`; argv[0] is the
 * subcommand. Return the exit code. */
int pa_launch_status_main(int argc, char **argv);
int pa_launch_restart_main(int argc, char **argv);

/* Writes the status table of an attached instance. cpu_pct[p] < 0 = not
 * measured. */
void pa_launch_status_print(FILE *f, const pa_stack *s, const double *cpu_pct);

#ifdef __cplusplus
}
#endif
#endif /* PA_LAUNCH_H */
