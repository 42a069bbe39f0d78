/*
 * pa_launch.h - the launcher's modules (library pa_launch, used by the
 * `playarea` executable and its tests): the flag table, the process table
 * that starts and supervises pa-sim / pa-render / pa-netgw, and the
 * `status` / `restart` commands that talk to a running instance.
 */
#ifndef PA_LAUNCH_H
#define PA_LAUNCH_H

#include "netgw.h"
#include "pa_render.h"
#include "pa_shm.h"
#include "pa_sim.h"
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
#define PA_LAUNCH_MAX_FLAGS PA_OPT_MAX /* rows of the composed table */
#define PA_LAUNCH_WRAP_MAX 32 /* words in one --wrap command */

/*
 * `playarea`'s command line: its own flags plus every process's flag table
 * (pa_sim_opts, pa_render_opts, pa_netgw_opts), composed, not restated. A
 * flag is validated by the owning process's row and finish check, and passed
 * only to the process(es) that own it.
 */
typedef struct pa_launch_cfg {
  /* ours (rows in flags.c) */
  const char *instance;     /* NULL = p<tcp_port>, a<pid> for port 0 */
  bool no_render;
  long max_robots;          /* shm sizing */
  long grace_ms;            /* TERM -> KILL delay when stopping [ms] */
  long start_timeout_ms;    /* ready deadline per process (x10 if wrapped) */
  long crash_limit;         /* this many crashes ... (0 = never give up) */
  long crash_window_ms;     /* ... within this window: give up */
  long hang_ms; /* heartbeat older than this: hung, restart (0 = off) */
  const char *wrap_flag;    /* only for --help; --wrap is pre-extracted */
  const char *wrap[PA_PROC_COUNT]; /* per process: command to run it under */
  /* the processes' flags, filled through their own tables */
  pa_sim_args sim;
  pa_render_def render;
  pa_netgw_args netgw;
  /* Copies of process flags the supervisor reads, set by the parser. A
   * changed tcp_port (the supervisor pinning a picked port) is what
   * pa_launch_child_argv passes on. */
  double control_hz, scan_hz, tcp_feedback_hz, camera_hz;
  long tcp_port;
  const char *bind;
  /* filled by the parser */
  bool given[PA_LAUNCH_MAX_FLAGS]; /* index into the flag table */
  char instance_buf[PA_SHM_INSTANCE_MAX];
} pa_launch_cfg;

/* Defaults for every flag: each process's table's defaults. */
pa_launch_cfg pa_launch_cfg_default(void);

/* Builds the composed flag table over c: opts[] (dst into c) and procs[]
 * (the PA_LAUNCH_TO mask of each row, 0 = the launcher's own). A flag that
 * several processes take has one row per process. Returns the count
 * (<= PA_LAUNCH_MAX_FLAGS). */
size_t pa_launch_flag_table(pa_launch_cfg *c, pa_opt *opts, unsigned *procs);

/* Parses and validates the command line of `playarea [flags]` (argv[0] is
 * the program): each flag with its owner's range, then each process's
 * cross-flag checks, then the launcher's (e.g. --robots <= --max_robots).
 * Returns 0, 1 for --help, -1 with err naming the flag. The instance name
 * is resolved (c->instance is never NULL after success). Checks that
 * map/world files exist. argv strings must outlive c. */
int pa_launch_cfg_parse(pa_launch_cfg *c, int argc, char **argv, char *err,
                        size_t err_sz);

/* Sets one flag as if given on the command line (value text checked by its
 * owners' rows); for the supervisor, e.g. pinning --tcp_port. 0 or -1. */
int pa_launch_cfg_set(pa_launch_cfg *c, const char *name, const char *value,
                      char *err, size_t err_sz);

/* The flag docs generated from the tables: docs/flags.md's table
 * (contract false) or docs/CONTRACT.md's per-process rows (true); what
 * `playarea --help-markdown[=contract]` prints. */
void pa_launch_flags_markdown(FILE *f, bool contract);

void pa_launch_usage(FILE *f);

/* `playarea SUBCOMMAND ...`: main dispatches over these rows and --help
 * prints their synopses (ends with a NULL name). */
typedef struct pa_launch_subcmd {
  const char *name;
  int (*main)(int argc, char **argv); /* argv[0] is the subcommand */
  const char *synopsis;               /* the arguments, for --help */
} pa_launch_subcmd;
extern const pa_launch_subcmd pa_launch_subcmds[];

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
/* Watchdog (default of --hang_ms): a ready process whose heartbeat is older
 * than this is hung; also what `status` calls hung when nothing is watched. */
#define PA_LAUNCH_HANG_MS 2000
/* health.hang_ms of a wrapped process: not watched, and its heartbeat may
 * lag (valgrind's pace), so `status` does not call it hung. */
#define PA_LAUNCH_HANG_WRAPPED UINT32_MAX

/* Backoff before restart number n (1 = first crash in the window) [ms]. */
long pa_launch_backoff_ms(int n);

/* Runs the stack in the foreground until SIGINT/SIGTERM/SIGHUP or a fatal
 * failure. Returns the exit code: 0 clean stop, PA_EXIT_CONFIG, or 1. */
int pa_launch_run(const pa_launch_cfg *c, const char *bin_dir);

/* ---- pa-netgw's listeners held across its restarts (keep.c) ------------- */

typedef struct pa_launch_kept {
  char name[PA_PORT_NAME_MAX]; /* the listener ("tcp", "ssl_control") */
  int fd;                      /* -1 = free */
} pa_launch_kept;
typedef struct pa_launch_keep {
  int sock;  /* the launcher's end, -1 = not held (socketpair failed) */
  int child; /* pa-netgw's end, inherited by each pa-netgw */
  pa_launch_kept held[PA_PORTS_MAX];
} pa_launch_keep;

/* The socket pair; -1 (with a warning) when there is none: pa-netgw then
 * binds its kept ports again by itself, as when it runs alone. */
int pa_launch_keep_open(pa_launch_keep *k);
/* Reads what pa-netgw sent (listeners to hold, to let go); never blocks. */
void pa_launch_keep_drain(pa_launch_keep *k);
/* PA_NETGW_KEEP and PA_NETGW_KEPT for the next pa-netgw, built before the
 * fork; -1 when kept_sz is too small. */
int pa_launch_keep_env(const pa_launch_keep *k, char *keep, size_t keep_sz,
                       char *kept, size_t kept_sz);
/* In the forked pa-netgw before exec: its fds inherited, its environment. */
void pa_launch_keep_child(const pa_launch_keep *k, const char *keep,
                          const char *kept);
/* Lets go of every held listener. */
void pa_launch_keep_release(pa_launch_keep *k);
/* How many listeners are held now. */
unsigned pa_launch_keep_count(const pa_launch_keep *k);
void pa_launch_keep_close(pa_launch_keep *k);

/* ---- status and restart (status.c) --------------------------------------- */

/* `playarea status [--watch] [--instance X | --tcp_port P]` and
 * `playarea restart PROC [--instance X | --tcp_port P]`; argv[0] is the
 * subcommand. Return the exit code. */
int pa_launch_status_main(int argc, char **argv);
int pa_launch_restart_main(int argc, char **argv);
/* `playarea discover [--beacon_port P] [--bind A] [--timeout_ms MS] [--json]`
 * (discover.c): lists the stacks whose beacon it hears. */
int pa_launch_discover_main(int argc, char **argv);
/* The TCP port pa-netgw of a running instance listens on (for `replay
 * --instance`). Returns 0, or the exit code after a message naming cmd. */
int pa_launch_instance_port(const char *cmd, const char *instance,
                            unsigned *port);
/* `playarea replay FILE [--instance NAME | --tcp_port P]`: replay_mcap on a
 * running stack, then resume it unless it was paused before (replay.c). */
int pa_launch_replay_main(int argc, char **argv);

/* Writes the status table of an attached instance. cpu_pct[p] < 0 = not
 * measured. */
void pa_launch_status_print(FILE *f, const pa_stack *s, const double *cpu_pct);

#ifdef __cplusplus
}
#endif
#endif /* PA_LAUNCH_H */
