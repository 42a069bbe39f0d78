/* pa_util.c - options, logging, latency statistics, signals. */
#include "pa_util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

/* ---- options ------------------------------------------------------------ */

bool pa_opt_arg_is(const char *arg, const char *name) {
  if (arg[0] != '-')
    return false;
  const char *a = arg + (arg[1] == '-' ? 2 : 1);
  size_t i = 0;
  for (; name[i]; i++) {
    char x = name[i] == '_' ? '-' : name[i];
    char y = a[i] == '_' ? '-' : a[i];
    if (x != y)
      return false;
  }
  return a[i] == '\0' || a[i] == '=';
}

static size_t type_size(pa_opt_type t) {
  switch (t) {
  case PA_OPT_STR:
    return sizeof(const char *);
  case PA_OPT_INT:
    return sizeof(long);
  case PA_OPT_DOUBLE:
    return sizeof(double);
  case PA_OPT_FLAG:
    return sizeof(bool);
  case PA_OPT_I32:
  case PA_OPT_U32:
    return sizeof(uint32_t);
  case PA_OPT_U64:
    return sizeof(uint64_t);
  case PA_OPT_STRBUF:
    return 0; /* any capacity >= 1 */
  }
  return 0;
}

static double scale_of(const pa_opt_row *r) {
  return r->scale != 0 ? r->scale : 1;
}

/* A hand-built row as a table row bound to its dst. */
static pa_opt_row row_of(const pa_opt *o) {
  pa_opt_row r;
  memset(&r, 0, sizeof r);
  r.o = *o;
  r.size = type_size(o->type);
  return r;
}

/* Stores an integer already checked against the row's range. */
static void put_int(const pa_opt_row *r, long long v) {
  switch (r->o.type) {
  case PA_OPT_INT:
    *(long *)r->o.dst = (long)v;
    break;
  case PA_OPT_I32:
    *(int32_t *)r->o.dst = (int32_t)v;
    break;
  case PA_OPT_U32:
    *(uint32_t *)r->o.dst = (uint32_t)v;
    break;
  case PA_OPT_U64:
    *(uint64_t *)r->o.dst = (uint64_t)v;
    break;
  default:
    break;
  }
}

static long long get_int(const pa_opt_row *r) {
  switch (r->o.type) {
  case PA_OPT_INT:
    return *(const long *)r->o.dst;
  case PA_OPT_I32:
    return *(const int32_t *)r->o.dst;
  case PA_OPT_U32:
    return *(const uint32_t *)r->o.dst;
  case PA_OPT_U64:
    return (long long)*(const uint64_t *)r->o.dst;
  default:
    return 0;
  }
}

int pa_opt_set(const pa_opt_row *r, const char *val, char *err, size_t err_sz) {
  const pa_opt *o = &r->o;
  char *end = NULL;
  bool ranged = o->min <= o->max;
  switch (o->type) {
  case PA_OPT_STR:
    *(const char **)o->dst = val;
    return 0;
  case PA_OPT_STRBUF:
    if (strlen(val) >= r->size) {
      snprintf(err, err_sz, "--%s: longer than %zu bytes", o->name,
               r->size - 1);
      return -1;
    }
    memcpy(o->dst, val, strlen(val) + 1);
    return 0;
  case PA_OPT_FLAG:
    if (!strcmp(val, "1") || !strcasecmp(val, "true") || !strcasecmp(val, "yes"))
      *(bool *)o->dst = true;
    else if (!strcmp(val, "0") || !strcasecmp(val, "false") || !strcasecmp(val, "no"))
      *(bool *)o->dst = false;
    else {
      snprintf(err, err_sz, "--%s: '%s' is not a boolean (true/false)", o->name, val);
      return -1;
    }
    return 0;
  case PA_OPT_INT:
  case PA_OPT_I32:
  case PA_OPT_U32:
  case PA_OPT_U64: {
    errno = 0;
    long long v = strtoll(val, &end, 0);
    if (!*val || *end || errno) {
      snprintf(err, err_sz, "--%s: '%s' is not an integer", o->name, val);
      return -1;
    }
    if (ranged && ((double)v < o->min || (double)v > o->max)) {
      snprintf(err, err_sz, "--%s: %lld is out of range [%.15g, %.15g]",
               o->name, v, o->min, o->max);
      return -1;
    }
    put_int(r, v);
    return 0;
  }
  case PA_OPT_DOUBLE: {
    errno = 0;
    double v = strtod(val, &end);
    if (!*val || *end || errno || !isfinite(v)) {
      snprintf(err, err_sz, "--%s: '%s' is not a finite number", o->name, val);
      return -1;
    }
    if (ranged && (v < o->min || v > o->max)) {
      snprintf(err, err_sz, "--%s: %g is out of range [%.15g, %.15g]", o->name,
               v, o->min, o->max);
      return -1;
    }
    *(double *)o->dst = v * scale_of(r);
    return 0;
  }
  }
  snprintf(err, err_sz, "--%s: bad option table", o->name);
  return -1;
}

int pa_opt_bind(const pa_opt_table *t, void *args, pa_opt_row *out, char *err,
                size_t err_sz) {
  for (size_t k = 0; k < t->n; k++) {
    const pa_opt_row *r = &t->rows[k];
    size_t want = type_size(r->o.type);
    if ((want && r->size != want) || (!want && r->size == 0) ||
        r->off + r->size > t->args_size) {
      snprintf(err, err_sz,
               "%s --%s: a field of %zu bytes does not fit the flag's type",
               t->prog, r->o.name, r->size);
      return -1;
    }
    out[k] = *r;
    out[k].o.dst = (char *)args + r->off;
  }
  return 0;
}

/* Writes bound row r's default into its field. */
static void set_default(const pa_opt_row *r) {
  switch (r->o.type) {
  case PA_OPT_STR:
    *(const char **)r->o.dst = r->def_str;
    break;
  case PA_OPT_STRBUF:
    snprintf((char *)r->o.dst, r->size, "%s", r->def_str ? r->def_str : "");
    break;
  case PA_OPT_FLAG:
    *(bool *)r->o.dst = r->def != 0;
    break;
  case PA_OPT_DOUBLE:
    *(double *)r->o.dst = r->def * scale_of(r);
    break;
  default:
    put_int(r, (long long)r->def);
    break;
  }
}

void pa_opt_defaults(const pa_opt_table *t, void *args) {
  for (size_t k = 0; k < t->n; k++) {
    pa_opt_row r = t->rows[k];
    r.o.dst = (char *)args + r.off;
    set_default(&r);
  }
}

/* Shortest "%.*g" of a stored v that reads back to the same stored value. */
static void fmt_double(char *out, size_t n, double v, double scale) {
  for (int prec = 6; prec <= 17; prec++) {
    snprintf(out, n, "%.*g", prec, v / scale);
    if (strtod(out, NULL) * scale == v)
      return;
  }
}

bool pa_opt_format(const pa_opt_row *r, char *out, size_t out_sz) {
  out[0] = '\0';
  switch (r->o.type) {
  case PA_OPT_STR: {
    const char *s = *(const char *const *)r->o.dst;
    if (!s)
      return false;
    snprintf(out, out_sz, "%s", s);
    return true;
  }
  case PA_OPT_STRBUF:
    snprintf(out, out_sz, "%s", (const char *)r->o.dst);
    return true;
  case PA_OPT_FLAG:
    snprintf(out, out_sz, "%d", *(const bool *)r->o.dst ? 1 : 0);
    return true;
  case PA_OPT_DOUBLE:
    fmt_double(out, out_sz, *(const double *)r->o.dst, scale_of(r));
    return true;
  default:
    snprintf(out, out_sz, "%lld", get_int(r));
    return true;
  }
}

/* A bound row's value for people: on/off, "quoted", none. */
static void value_text(const pa_opt_row *r, char *out, size_t out_sz) {
  if (r->o.type == PA_OPT_FLAG) {
    snprintf(out, out_sz, "%s", *(const bool *)r->o.dst ? "on" : "off");
  } else if (r->o.type == PA_OPT_STR || r->o.type == PA_OPT_STRBUF) {
    char s[256];
    if (pa_opt_format(r, s, sizeof s))
      snprintf(out, out_sz, "\"%s\"", s);
    else
      snprintf(out, out_sz, "none");
  } else {
    pa_opt_format(r, out, out_sz);
  }
}

void pa_opt_default_text(const pa_opt_row *r, char *out, size_t out_sz) {
  union {
    double d;
    long l;
    uint64_t u;
    bool b;
    const char *s;
    char buf[256];
  } v;
  memset(&v, 0, sizeof v);
  pa_opt_row tmp = *r;
  tmp.o.dst = &v;
  if (tmp.o.type == PA_OPT_STRBUF)
    tmp.size = sizeof v.buf;
  set_default(&tmp);
  value_text(&tmp, out, out_sz);
}

int pa_opt_parse(const pa_opt *opts, size_t n, int argc, char **argv,
                 char **positional, size_t max_positional,
                 size_t *n_positional, char *err, size_t err_sz) {
  pa_opt_row rows[PA_OPT_MAX];
  if (n > PA_OPT_MAX) {
    snprintf(err, err_sz, "%zu flags: more than PA_OPT_MAX", n);
    return -1;
  }
  for (size_t k = 0; k < n; k++)
    rows[k] = row_of(&opts[k]);
  return pa_opt_parse_rows(rows, n, argc, argv, positional, max_positional,
                           n_positional, NULL, err, err_sz);
}

int pa_opt_parse_rows(const pa_opt_row *rows, size_t n, int argc, char **argv,
                      char **positional, size_t max_positional,
                      size_t *n_positional, bool *given, char *err,
                      size_t err_sz) {
  if (given)
    memset(given, 0, n * sizeof *given);
  size_t npos = 0;
  bool only_positional = false;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (only_positional || arg[0] != '-' || !strcmp(arg, "-")) {
      if (npos >= max_positional) {
        snprintf(err, err_sz, "unexpected argument '%s'", arg);
        return -1;
      }
      positional[npos++] = argv[i];
      continue;
    }
    if (!strcmp(arg, "--")) {
      only_positional = true;
      continue;
    }
    if (!strcmp(arg, "-h") || !strcmp(arg, "--help"))
      return 1;
    const char *name = arg + (arg[1] == '-' ? 2 : 1);
    const char *eq = strchr(name, '=');
    size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
    size_t first = n;
    for (size_t k = 0; k < n && first == n; k++)
      if (pa_opt_arg_is(arg, rows[k].o.name))
        first = k;
    if (first == n) {
      snprintf(err, err_sz, "unknown flag %.*s (see --help)",
               (int)(name_len + (size_t)(name - arg)), arg);
      return -1;
    }
    const pa_opt *o = &rows[first].o;
    const char *val;
    if (eq)
      val = eq + 1;
    else if (o->type == PA_OPT_FLAG)
      val = "true";
    else if (i + 1 < argc)
      val = argv[++i];
    else {
      snprintf(err, err_sz, "--%s needs a value", o->name);
      return -1;
    }
    /* Every row of that name: a flag several processes share. */
    for (size_t k = first; k < n; k++) {
      if (!pa_opt_arg_is(arg, rows[k].o.name))
        continue;
      if (pa_opt_set(&rows[k], val, err, err_sz) < 0)
        return -1;
      if (given)
        given[k] = true;
    }
  }
  if (n_positional)
    *n_positional = npos;
  return 0;
}

void pa_opt_usage(FILE *f, const char *usage, const char *summary,
                  const pa_opt *opts, size_t n) {
  fprintf(f, "usage: %s\n", usage);
  if (summary && *summary)
    fprintf(f, "\n%s\n", summary);
  fprintf(f, "\nflags (--name VALUE or --name=VALUE):\n");
  for (size_t k = 0; k < n; k++) {
    pa_opt_row r = row_of(&opts[k]);
    char def[300];
    value_text(&r, def, sizeof def);
    fprintf(f, "  --%-22s %s (default %s)\n", r.o.name,
            r.o.help ? r.o.help : "", def);
  }
}

void pa_opt_table_usage(FILE *f, const pa_opt_table *t) {
  fprintf(f, "usage: %s [flags]\n", t->prog);
  if (t->summary && *t->summary)
    fprintf(f, "\n%s\n", t->summary);
  fprintf(f, "\nflags (--name VALUE or --name=VALUE):\n");
  for (size_t k = 0; k < t->n; k++) {
    const pa_opt_row *r = &t->rows[k];
    char def[300];
    pa_opt_default_text(r, def, sizeof def);
    fprintf(f, "  --%-22s %s (default %s)\n", r->o.name,
            r->o.help ? r->o.help : "", def);
  }
}

#ifndef PA_VERSION
#define PA_VERSION "unknown"
#endif

bool pa_version_arg(const char *prog, int argc, char **argv) {
  if (argc != 2 || strcmp(argv[1], "--version"))
    return false;
  printf("%s %s\n", prog, PA_VERSION);
  return true;
}

int pa_opt_main(const pa_opt_table *t, void *args, bool *given, int argc,
                char **argv) {
  if (pa_version_arg(t->prog, argc, argv))
    return 0;
  pa_log_init(t->prog, PA_LOG_INFO);
  char err[512];
  pa_opt_row rows[PA_OPT_MAX];
  bool given_buf[PA_OPT_MAX];
  if (t->n > PA_OPT_MAX) {
    pa_error("%s: %zu flags, more than PA_OPT_MAX", t->prog, t->n);
    return EX_CONFIG;
  }
  if (pa_opt_bind(t, args, rows, err, sizeof err) != 0) {
    pa_error("%s", err);
    return EX_CONFIG;
  }
  pa_opt_defaults(t, args);
  if (!given)
    given = given_buf;
  int rc = pa_opt_parse_rows(rows, t->n, argc, argv, NULL, 0, NULL, given, err,
                             sizeof err);
  if (rc == 1) {
    pa_opt_table_usage(stdout, t);
    return 0;
  }
  if (rc == 0 && t->finish)
    rc = t->finish(args, given, err, sizeof err);
  if (rc != 0) {
    pa_error("%s", err);
    return EX_CONFIG;
  }
  return -1;
}

/* ---- logging ------------------------------------------------------------ */

static char log_name[32] = "playarea";
static int log_level = PA_LOG_INFO;

void pa_log_init(const char *name, int level) {
  snprintf(log_name, sizeof log_name, "%s", name);
  log_level = level;
  const char *env = getenv("PA_LOG_LEVEL");
  if (env) {
    if (!strcasecmp(env, "debug"))
      log_level = PA_LOG_DEBUG;
    else if (!strcasecmp(env, "info"))
      log_level = PA_LOG_INFO;
    else if (!strcasecmp(env, "warn"))
      log_level = PA_LOG_WARN;
    else if (!strcasecmp(env, "error"))
      log_level = PA_LOG_ERROR;
  }
}

void pa_log(int level, const char *fmt, ...) {
  if (level < log_level)
    return;
  static const char *const names[] = {"debug", "info", "warn", "error"};
  char line[1024];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  localtime_r(&ts.tv_sec, &tm);
  int len = snprintf(line, sizeof line, "%02d:%02d:%02d.%03ld %s[%d] %s: ",
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
                     log_name, (int)getpid(),
                     names[level < 0 ? 0 : level > 3 ? 3 : level]);
  va_list ap;
  va_start(ap, fmt);
  if (len > 0 && (size_t)len < sizeof line)
    len += vsnprintf(line + len, sizeof line - (size_t)len, fmt, ap);
  va_end(ap);
  if (len < 0)
    return;
  if ((size_t)len >= sizeof line - 1)
    len = (int)sizeof line - 2;
  line[len++] = '\n';
  /* One write per line so lines of concurrent processes do not interleave. */
  ssize_t w = write(STDERR_FILENO, line, (size_t)len);
  (void)w;
}

/* ---- latency statistics ------------------------------------------------- */

void pa_lat_reset(pa_lat *l) { memset(l, 0, sizeof *l); }

void pa_lat_add(pa_lat *l, int64_t v) {
  l->samples[l->count % PA_LAT_WINDOW] = v;
  if (l->count == 0 || v > l->max)
    l->max = v;
  l->count++;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int64_t pa_percentile_i64(int64_t *v, size_t n, double pct) {
  if (n == 0)
    return 0;
  qsort(v, n, sizeof *v, cmp_i64);
  double rank = pct / 100.0 * (double)(n - 1);
  size_t k = (size_t)(rank + 0.5);
  return v[k < n ? k : n - 1];
}

int64_t pa_lat_percentile(const pa_lat *l, double pct) {
  size_t n = l->count < PA_LAT_WINDOW ? (size_t)l->count : PA_LAT_WINDOW;
  int64_t tmp[PA_LAT_WINDOW];
  memcpy(tmp, l->samples, n * sizeof *tmp);
  return pa_percentile_i64(tmp, n, pct);
}

/* ---- signals ------------------------------------------------------------ */

static volatile sig_atomic_t *sig_flag;

static void on_signal(int sig) { *sig_flag = sig; }

void pa_signals_install(volatile sig_atomic_t *flag) {
  sig_flag = flag;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
}

/* ---- misc --------------------------------------------------------------- */

void pa_exe_dir(char *out, size_t out_sz) {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0 || out_sz == 0) {
    if (out_sz)
      out[0] = '\0';
    return;
  }
  path[n] = '\0';
  char *slash = strrchr(path, '/');
  if (slash)
    *slash = '\0';
  snprintf(out, out_sz, "%s", path);
}

int pa_set_cloexec(int fd) {
  int fl = fcntl(fd, F_GETFD);
  if (fl < 0)
    return -1;
  return fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
}
