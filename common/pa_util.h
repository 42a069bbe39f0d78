/*
 * pa_util.h - small pieces every playarea process shares: command-line
 * options (one table drives parsing, validation and --help), logging, latency
 * statistics and signal flags.
 */
#ifndef PA_UTIL_H
#define PA_UTIL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- options ------------------------------------------------------------ */

typedef enum pa_opt_type {
  PA_OPT_STR,    /* char *dst[1]; points into argv (or a default literal) */
  PA_OPT_INT,    /* long *dst, within [min, max] */
  PA_OPT_DOUBLE, /* double *dst, finite, within [min, max] */
  PA_OPT_FLAG,   /* bool *dst, takes no value ("--viewer"); "--x=0|1|true|false" allowed */
} pa_opt_type;

typedef struct pa_opt {
  const char *name; /* "tcp_port": accepted as --tcp_port V, --tcp_port=V, --tcp-port V */
  pa_opt_type type;
  void *dst;
  double min, max;  /* inclusive range for INT/DOUBLE (ignored if min > max) */
  const char *help; /* one line; the default is printed from *dst */
} pa_opt;

/*
 * Parses argv[1..] against the table. Non-option arguments are collected in
 * order into positional[] (up to max_positional; more is an error); "--"
 * ends options. Returns 0, 1 if --help/-h was given (usage is the caller's
 * job), or -1 with err naming the flag: "--tcp_port: 70000 is out of range
 * [0, 65535]", "unknown flag --tcp_prot".
 */
int pa_opt_parse(const pa_opt *opts, size_t n, int argc, char **argv,
                 char **positional, size_t max_positional,
                 size_t *n_positional, char *err, size_t err_sz);

/* The same, and given[k] (n entries, cleared first) says whether opts[k]
 * was on the command line, even with its default value. */
int pa_opt_parse_given(const pa_opt *opts, size_t n, int argc, char **argv,
                       char **positional, size_t max_positional,
                       size_t *n_positional, bool *given, char *err,
                       size_t err_sz);

/* Whether argument arg ("--tcp_port", "--tcp-port=9", "-tcp_port") names
 * the option called name, as pa_opt_parse matches it ('-' and '_' are the
 * same). For callers that pre-scan argv (e.g. a repeatable flag). */
bool pa_opt_arg_is(const char *arg, const char *name);

/* Prints "usage: prog ...", the summary and one line per option with its
 * current (default) value. */
void pa_opt_usage(FILE *f, const char *usage, const char *summary,
                  const pa_opt *opts, size_t n);

/* ---- logging ------------------------------------------------------------ */

enum { PA_LOG_DEBUG = 0, PA_LOG_INFO = 1, PA_LOG_WARN = 2, PA_LOG_ERROR = 3 };

/* Sets the name printed in front of every line ("pa-sim") and the minimum
 * level (PA_LOG_LEVEL=debug|info|warn|error in the environment overrides). */
void pa_log_init(const char *name, int level);
void pa_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
#define pa_debug(...) pa_log(PA_LOG_DEBUG, __VA_ARGS__)
#define pa_info(...) pa_log(PA_LOG_INFO, __VA_ARGS__)
#define pa_warn(...) pa_log(PA_LOG_WARN, __VA_ARGS__)
#define pa_error(...) pa_log(PA_LOG_ERROR, __VA_ARGS__)

/* ---- latency statistics ------------------------------------------------- */

/* A window of the last PA_LAT_WINDOW samples plus running count and max. */
#define PA_LAT_WINDOW 4096
typedef struct pa_lat {
  int64_t samples[PA_LAT_WINDOW];
  uint64_t count; /* samples ever added */
  int64_t max;    /* over all samples */
} pa_lat;

void pa_lat_reset(pa_lat *l);
void pa_lat_add(pa_lat *l, int64_t v);
/* Percentile (0..100) over the window; 0 if empty. O(n log n). */
int64_t pa_lat_percentile(const pa_lat *l, double pct);

/* Percentile of an arbitrary array (sorted in place). */
int64_t pa_percentile_i64(int64_t *v, size_t n, double pct);

/* ---- signals ------------------------------------------------------------ */

/* SIGINT/SIGTERM set *flag to the signal number (handler does nothing else);
 * SIGPIPE is ignored. */
void pa_signals_install(volatile sig_atomic_t *flag);

/* ---- misc --------------------------------------------------------------- */

/* Directory of the running executable (readlink /proc/self/exe), for finding
 * sibling binaries; "" on failure. */
void pa_exe_dir(char *out, size_t out_sz);

/* Sets FD_CLOEXEC; returns 0 or -1. */
int pa_set_cloexec(int fd);

#ifdef __cplusplus
}
#endif
#endif /* PA_UTIL_H */
