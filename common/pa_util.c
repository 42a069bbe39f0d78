/* pa_util.c - options, logging, latency statistics, signals. */
#include "pa_util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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

static int opt_set(const pa_opt *o, const char *val, char *err, size_t err_sz) {
  char *end = NULL;
  bool ranged = o->min <= o->max;
  switch (o->type) {
  case PA_OPT_STR:
    *(const char **)o->dst = val;
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
  case PA_OPT_INT: {
    errno = 0;
    long v = strtol(val, &end, 0);
    if (!*val || *end || errno) {
      snprintf(err, err_sz, "--%s: '%s' is not an integer", o->name, val);
      return -1;
    }
    if (ranged && (v < o->min || v > o->max)) {
      snprintf(err, err_sz, "--%s: %ld is out of range [%.15g, %.15g]", o->name,
               v, o->min, o->max);
      return -1;
    }
    *(long *)o->dst = v;
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
    *(double *)o->dst = v;
    return 0;
  }
  }
  snprintf(err, err_sz, "--%s: bad option table", o->name);
  return -1;
}

int pa_opt_parse(const pa_opt *opts, size_t n, int argc, char **argv,
                 char **positional, size_t max_positional,
                 size_t *n_positional, char *err, size_t err_sz) {
  return pa_opt_parse_given(opts, n, argc, argv, positional, max_positional,
                            n_positional, NULL, err, err_sz);
}

int pa_opt_parse_given(const pa_opt *opts, size_t n, int argc, char **argv,
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
    const pa_opt *o = NULL;
    for (size_t k = 0; k < n && !o; k++)
      if (pa_opt_arg_is(arg, opts[k].name))
        o = &opts[k];
    if (!o) {
      snprintf(err, err_sz, "unknown flag %.*s (see --help)",
               (int)(name_len + (size_t)(name - arg)), arg);
      return -1;
    }
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
    if (opt_set(o, val, err, err_sz) < 0)
      return -1;
    if (given)
      given[o - opts] = true;
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
    const pa_opt *o = &opts[k];
    char def[160];
    switch (o->type) {
    case PA_OPT_STR: {
      const char *s = *(const char **)o->dst;
      snprintf(def, sizeof def, "\"%s\"", s ? s : "");
      break;
    }
    case PA_OPT_INT:
      snprintf(def, sizeof def, "%ld", *(long *)o->dst);
      break;
    case PA_OPT_DOUBLE:
      snprintf(def, sizeof def, "%g", *(double *)o->dst);
      break;
    case PA_OPT_FLAG:
      snprintf(def, sizeof def, "%s", *(bool *)o->dst ? "on" : "off");
      break;
    }
    fprintf(f, "  --%-22s %s (default %s)\n", o->name, o->help ? o->help : "",
            def);
  }
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
