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
  PA_OPT_DOUBLE, /* double *dst, finite, within [min, max]; times scale */
  PA_OPT_FLAG,   /* bool *dst, takes no value ("--viewer"); "--x=0|1|true|false"
                    allowed */
  PA_OPT_I32,    /* int32_t *dst, within [min, max] */
  PA_OPT_U32,    /* uint32_t / unsigned *dst, within [min, max] */
  PA_OPT_U64,    /* uint64_t / size_t *dst, within [min, max] */
  PA_OPT_STRBUF, /* char dst[size]: a copy; longer is an error */
} pa_opt_type;

/* One flag as a caller builds it by hand: {name, type, &var, min, max,
 * help}; *dst is its default. */
typedef struct pa_opt {
  const char *name; /* "tcp_port": accepted as --tcp_port V, --tcp_port=V, --tcp-port V */
  pa_opt_type type;
  void *dst;
  double min, max;  /* inclusive range for numbers (ignored if min > max) */
  const char *help; /* one line */
} pa_opt;

/*
 * One row of a process's flag table: static data that says where the value
 * goes as an offset into the process's args struct and carries its default
 * (PA_OPT_ROW). pa_opt_bind gives rows with o.dst set for one struct.
 */
typedef struct pa_opt_row {
  pa_opt o;            /* o.dst is NULL in a table */
  size_t off;          /* offset of the field in the args struct */
  size_t size;         /* sizeof the field (checked by pa_opt_bind) */
  double def;          /* default of a number or FLAG (0/1), in flag units */
  const char *def_str; /* default of a STR/STRBUF (NULL = unset) */
  double scale;        /* DOUBLE: the field holds value * scale (0 = 1) */
  unsigned tag;        /* the owner's use (pa-sim: PA_SIM_FORCE_* bits) */
} pa_opt_row;

/* The initializers of a table row for field FIELD of struct S, inside the
 * row's braces: {PA_OPT_ROW(pa_sim_args, def.control_hz, "control_hz",
 * PA_OPT_DOUBLE, 1, 1e5, 200, NULL, "[Hz] physics rate")}. DEF is the
 * numeric default, DEF_STR the string one; .scale and .tag may follow:
 * {PA_OPT_ROW(...), .tag = PA_SIM_FORCE_LASER_BEAMS}. */
#define PA_OPT_ROW(S, FIELD, NAME, TYPE, MIN, MAX, DEF, DEF_STR, HELP)         \
  .o = {.name = (NAME),                                                        \
        .type = (TYPE),                                                        \
        .min = (MIN),                                                          \
        .max = (MAX),                                                          \
        .help = (HELP)},                                                       \
  .off = offsetof(S, FIELD), .size = sizeof(((S *)0)->FIELD), .def = (DEF),    \
  .def_str = (DEF_STR)

#define PA_OPT_MAX 160 /* rows in one table or one composed command line */

/*
 * A process's command line: its rows over an args struct, and the checks
 * that span several flags. Exported by each process's library so that the
 * process, the launcher and the docs test read the same rows.
 */
typedef struct pa_opt_table {
  const char *prog;    /* "pa-sim": log name, usage line */
  const char *summary; /* a paragraph for --help */
  const pa_opt_row *rows;
  size_t n;
  size_t args_size; /* sizeof the struct the offsets point into */
  /* After parsing (given[k]: rows[k] was on the command line): cross-flag
   * checks and the derived fields no row writes. 0, or -1 with err naming
   * the flags. Run by the process and by the launcher. NULL = none. */
  int (*finish)(void *args, const bool *given, char *err, size_t err_sz);
} pa_opt_table;

/* A pa_opt_table initializer: ROWS is the array itself (its length is
 * counted here), ARGS the struct type its offsets point into. */
#define PA_OPT_TABLE(PROG, SUMMARY, ROWS, ARGS, FINISH)                        \
  {                                                                            \
    .prog = (PROG), .summary = (SUMMARY), .rows = (ROWS),                      \
    .n = sizeof(ROWS) / sizeof((ROWS)[0]), .args_size = sizeof(ARGS),          \
    .finish = (FINISH)                                                         \
  }

/* Copies t's rows into out[] (t->n entries) with o.dst = args + off.
 * Returns 0, or -1 with err when a row's field does not fit its type. */
int pa_opt_bind(const pa_opt_table *t, void *args, pa_opt_row *out, char *err,
                size_t err_sz);

/* Writes every row's default into args. */
void pa_opt_defaults(const pa_opt_table *t, void *args);

/* A bound row's current value as flag text ("12", "0.15", "1", a string),
 * the shortest that reads back to the same stored value. false (out = "")
 * for an unset string. */
bool pa_opt_format(const pa_opt_row *r, char *out, size_t out_sz);

/* A table row's default for people: "200", "on"/"off", "\"127.0.0.1\"",
 * "none" (unset string). */
void pa_opt_default_text(const pa_opt_row *r, char *out, size_t out_sz);

/*
 * The prologue of a process's main(): log init under t->prog, defaults,
 * parse, --help (printed from the table with defaults), t->finish. Returns
 * -1 to go on (args filled, given[] when not NULL), else the exit status:
 * 0 after --help, 78 (PA_EXIT_CONFIG) after logging the error by name.
 */
int pa_opt_main(const pa_opt_table *t, void *args, bool *given, int argc,
                char **argv);

/* `PROG --version` (the only argument): prints "PROG VERSION" (the CMake
 * project's version) and returns true; every program's main asks first. */
bool pa_version_arg(const char *prog, int argc, char **argv);

/* --help of a table: usage line, summary and each row with its default. */
void pa_opt_table_usage(FILE *f, const pa_opt_table *t);

/*
 * Parses argv[1..] against the table. Non-option arguments are collected in
 * order into positional[] (up to max_positional; more is an error); "--"
 * ends options. Returns 0, 1 if --help/-h was given (usage is the caller's
 * job), or -1 with err naming the flag: "--tcp_port: 70000 is out of range
 * [0, 65535]", "unknown flag --tcp_prot". A name on several rows (a
 * launcher's composed table) sets every one of them, each validated by its
 * own row.
 */
int pa_opt_parse(const pa_opt *opts, size_t n, int argc, char **argv,
                 char **positional, size_t max_positional,
                 size_t *n_positional, char *err, size_t err_sz);

/* pa_opt_parse over bound table rows (pa_opt_bind); given[k] (n entries,
 * cleared first; may be NULL) says whether rows[k] was on the command line,
 * even with its default value. */
int pa_opt_parse_rows(const pa_opt_row *rows, size_t n, int argc, char **argv,
                      char **positional, size_t max_positional,
                      size_t *n_positional, bool *given, char *err,
                      size_t err_sz);

/* Sets bound row r from text as the parser would (type, range). 0 or -1
 * with err naming the flag. */
int pa_opt_set(const pa_opt_row *r, const char *val, char *err, size_t err_sz);

/* Whether argument arg ("--tcp_port", "--tcp-port=9", "-tcp_port") names
 * the option called name, as pa_opt_parse matches it ('-' and '_' are the
 * same). For callers that pre-scan argv (e.g. a repeatable flag). */
bool pa_opt_arg_is(const char *arg, const char *name);

/* Prints "usage: prog ...", the summary and one line per option with its
 * current value as the default. */
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
