/* flags.c - `playarea`'s command line: the launcher's own flag rows
 * composed with each process's table (pa_sim_opts, pa_render_opts,
 * pa_netgw_opts); a flag is checked by its owner's row and passed only to
 * the process(es) that own it. */
#include "pa_launch.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROW(FIELD, NAME, TYPE, MIN, MAX, DEF, HELP)                            \
  PA_OPT_ROW(pa_launch_cfg, FIELD, NAME, TYPE, MIN, MAX, DEF, NULL, HELP)

/* The launcher's own flags; the processes' come from their tables. */
static const pa_opt_row own_rows[] = {
    {PA_OPT_ROW(pa_launch_cfg, instance, "instance", PA_OPT_STR, 0, -1, 0, NULL,
                "shared-memory instance name (unset: p<tcp_port>, or "
                "a<pid> with --tcp_port 0)")},
    {ROW(no_render, "no-render", PA_OPT_FLAG, 0, -1, 0,
         "do not start pa-render (no camera frames)")},
    {PA_OPT_ROW(pa_launch_cfg, wrap_flag, "wrap", PA_OPT_STR, 0, -1, 0, NULL,
                "PROC='COMMAND ...': run sim|render|netgw under a tool "
                "(repeatable)")},
    {ROW(max_robots, "max_robots", PA_OPT_INT, 1, 4096, 256,
         "robot slots in shared memory")},
    {ROW(grace_ms, "grace_ms", PA_OPT_INT, 0, 600000, 3000,
         "[ms] on stop: SIGTERM, then SIGKILL after this long (x10 for a "
         "--wrap'ped process: a profiler writes its output at exit)")},
    {ROW(start_timeout_ms, "start_timeout_ms", PA_OPT_INT, 100, 3600000, 10000,
         "[ms] a process must be ready within this (x10 when wrapped)")},
    {ROW(crash_limit, "crash_limit", PA_OPT_INT, 0, PA_LAUNCH_CRASH_MAX,
         PA_LAUNCH_CRASH_LIMIT,
         "give up on a process after this many crashes (0 = never)...")},
    {ROW(crash_window_ms, "crash_window_ms", PA_OPT_INT, 1, 86400000,
         PA_LAUNCH_CRASH_WINDOW_MS,
         "[ms] ...within this window; also resets the backoff")},
    {ROW(hang_ms, "hang_ms", PA_OPT_INT, 0, 3600000, PA_LAUNCH_HANG_MS,
         "[ms] a ready process whose heartbeat is older than this is hung: "
         "SIGKILLed and restarted (0 = off; wrapped processes are not "
         "watched)")},
};

static int launch_finish(void *args, const bool *given, char *err,
                         size_t err_sz);

static const pa_opt_table own_table =
    PA_OPT_TABLE("playarea",
                 "Starts pa-sim, pa-render and pa-netgw on one shared-memory "
                 "instance,\nrestarts any that crashes, prints 'tcp ADDR:PORT "
                 "instance NAME' once\nserving, and stops them all on Ctrl-C / "
                 "SIGTERM.",
                 own_rows, pa_launch_cfg, launch_finish);

static const pa_opt_table *own_opts(void) { return &own_table; }

/* The parts of the composed table, in --help order; each table's offsets
 * point into its member of pa_launch_cfg. */
static const struct part {
  int proc;
  const pa_opt_table *(*table)(void);
  size_t args_off;
} parts[] = {
    {PA_PROC_LAUNCH, own_opts, 0},
    {PA_PROC_SIM, pa_sim_opts, offsetof(pa_launch_cfg, sim)},
    {PA_PROC_RENDER, pa_render_opts, offsetof(pa_launch_cfg, render)},
    {PA_PROC_NETGW, pa_netgw_opts, offsetof(pa_launch_cfg, netgw)},
};
#define NPARTS (sizeof parts / sizeof parts[0])

static const char *const proc_exe[PA_PROC_COUNT] = {"playarea", "pa-sim",
                                                    "pa-render", "pa-netgw"};
static const char *const proc_short[PA_PROC_COUNT] = {"launcher", "sim",
                                                      "render", "netgw"};

/* Binds every part's rows to c: rows[] and the owner of each, first[p] =
 * index of part p's first row. Returns the count; aborts on a table that
 * does not fit (a programming error the tests catch first). */
static size_t compose(pa_launch_cfg *c, pa_opt_row *rows, int *owner,
                      size_t *first) {
  size_t n = 0;
  for (size_t p = 0; p < NPARTS; p++) {
    const pa_opt_table *t = parts[p].table();
    char err[256];
    if (n + t->n > PA_LAUNCH_MAX_FLAGS ||
        pa_opt_bind(t, (char *)c + parts[p].args_off, rows + n, err,
                    sizeof err) != 0) {
      fprintf(stderr,
              "playarea: bad flag table (%s): raise PA_OPT_MAX or fix "
              "the row\n",
              n + t->n > PA_LAUNCH_MAX_FLAGS ? t->prog : err);
      abort();
    }
    if (first)
      first[p] = n;
    for (size_t k = 0; k < t->n; k++)
      owner[n + k] = parts[p].proc;
    n += t->n;
  }
  return n;
}

/* What the supervisor reads as plain fields. */
static void sync_copies(pa_launch_cfg *c) {
  c->control_hz = c->sim.def.control_hz;
  c->scan_hz = c->sim.def.scan_hz;
  c->camera_hz = c->render.camera_hz;
  c->tcp_feedback_hz = c->netgw.def.feedback_hz;
  c->tcp_port = (long)c->netgw.def.tcp_port;
  c->bind = c->netgw.def.bind;
}

pa_launch_cfg pa_launch_cfg_default(void) {
  pa_launch_cfg c;
  memset(&c, 0, sizeof c);
  for (size_t p = 0; p < NPARTS; p++)
    pa_opt_defaults(parts[p].table(), (char *)&c + parts[p].args_off);
  sync_copies(&c);
  return c;
}

size_t pa_launch_flag_table(pa_launch_cfg *c, pa_opt *o, unsigned *to) {
  pa_opt_row rows[PA_LAUNCH_MAX_FLAGS];
  int owner[PA_LAUNCH_MAX_FLAGS];
  size_t n = compose(c, rows, owner, NULL);
  for (size_t k = 0; k < n; k++) {
    o[k] = rows[k].o;
    to[k] = owner[k] == PA_PROC_LAUNCH ? 0 : PA_LAUNCH_TO(owner[k]);
  }
  return n;
}

const char *pa_launch_proc_exe(int proc) {
  return proc >= 0 && proc < PA_PROC_COUNT ? proc_exe[proc] : "?";
}

int pa_launch_proc_from_name(const char *name) {
  for (int p = PA_PROC_SIM; p < PA_PROC_COUNT; p++)
    if (!strcmp(name, proc_short[p]) || !strcmp(name, proc_exe[p]))
      return p;
  return -1;
}

/* ---- one line (or table row) per flag name ------------------------------ */

/* A flag as users see it: its first row, the processes that own it and
 * the help (the launcher's own, else each owner's joined). */
typedef struct flag_view {
  const pa_opt_row *row;
  unsigned owners; /* PA_LAUNCH_TO bits, PA_PROC_LAUNCH included */
  char help[512];
} flag_view;

/* Walks the distinct names of the composed rows; returns the count. */
static size_t flag_views(const pa_opt_row *rows, const int *owner, size_t n,
                         flag_view *views) {
  size_t nv = 0;
  for (size_t k = 0; k < n; k++) {
    size_t v = 0;
    while (v < nv && strcmp(views[v].row->o.name, rows[k].o.name))
      v++;
    if (v == nv) {
      views[nv].row = &rows[k];
      views[nv].owners = 0;
      views[nv].help[0] = '\0';
      nv++;
    }
    flag_view *f = &views[v];
    bool ours = f->owners & PA_LAUNCH_TO(PA_PROC_LAUNCH);
    f->owners |= PA_LAUNCH_TO(owner[k]);
    if (ours)
      continue; /* the launcher's own help says it for everyone */
    size_t len = strlen(f->help);
    if (len == 0 || strcmp(f->help, rows[k].o.help))
      snprintf(f->help + len, sizeof f->help - len, "%s%s", len ? "; " : "",
               rows[k].o.help);
  }
  return nv;
}

static void owners_text(unsigned owners, char *out, size_t out_sz) {
  unsigned procs = owners & ~PA_LAUNCH_TO(PA_PROC_LAUNCH);
  if (procs == (PA_LAUNCH_TO(PA_PROC_SIM) | PA_LAUNCH_TO(PA_PROC_RENDER) |
                PA_LAUNCH_TO(PA_PROC_NETGW))) {
    snprintf(out, out_sz, "all");
    return;
  }
  out[0] = '\0';
  for (int p = 0; p < PA_PROC_COUNT; p++)
    if (owners & PA_LAUNCH_TO(p)) {
      size_t len = strlen(out);
      snprintf(out + len, out_sz - len, "%s%s", len ? ", " : "", proc_short[p]);
    }
}

const pa_launch_subcmd pa_launch_subcmds[] = {
    {"status", pa_launch_status_main,
     "[--watch] [--instance NAME | --tcp_port PORT]"},
    {"restart", pa_launch_restart_main,
     "sim|render|netgw [--instance NAME | --tcp_port PORT]"},
    {"discover", pa_launch_discover_main,
     "[--beacon_port P] [--timeout_ms MS] [--json]"},
    {"replay", pa_launch_replay_main,
     "FILE [--instance NAME | --tcp_port PORT] [--keep_paused]"},
    {NULL, NULL, NULL},
};

void pa_launch_usage(FILE *f) {
  pa_launch_cfg c = pa_launch_cfg_default();
  pa_opt_row rows[PA_LAUNCH_MAX_FLAGS];
  int owner[PA_LAUNCH_MAX_FLAGS];
  flag_view views[PA_LAUNCH_MAX_FLAGS];
  size_t n = compose(&c, rows, owner, NULL);
  size_t nv = flag_views(rows, owner, n, views);
  fprintf(f, "usage: playarea [flags]\n");
  for (const pa_launch_subcmd *sc = pa_launch_subcmds; sc->name; sc++)
    fprintf(f, "       playarea %s %s\n", sc->name, sc->synopsis);
  fprintf(
      f,
      "       playarea SUBCOMMAND --help  (its flags)\n"
      "       playarea --version\n"
      "       playarea --help-markdown[=contract]  (the docs' flag tables)\n"
      "\n%s\n\nflags (--name VALUE or --name=VALUE; [processes it goes "
      "to]):\n",
      own_table.summary);
  for (size_t v = 0; v < nv; v++) {
    char def[300], who[64];
    pa_opt_default_text(views[v].row, def, sizeof def);
    owners_text(views[v].owners, who, sizeof who);
    fprintf(f, "  --%-22s [%s] %s (default %s)\n", views[v].row->o.name, who,
            views[v].help, def);
  }
}

/* Markdown-safe copy: | escaped, < and > as entities. */
static void md_text(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '|')
      fputs("\\|", f);
    else if (*s == '<')
      fputs("&lt;", f);
    else if (*s == '>')
      fputs("&gt;", f);
    else
      fputc(*s, f);
  }
}

/* A default for a table cell: strings in backticks, "" kept. */
static void md_default(FILE *f, const pa_opt_row *r) {
  char def[300];
  pa_opt_default_text(r, def, sizeof def);
  size_t len = strlen(def);
  if (len >= 2 && def[0] == '"' && len > 2) {
    fputc('`', f);
    fwrite(def + 1, 1, len - 2, f);
    fputc('`', f);
  } else if (def[0] == '"') {
    fputs("`\"\"`", f);
  } else {
    md_text(f, def);
  }
}

void pa_launch_flags_markdown(FILE *f, bool contract) {
  pa_launch_cfg c = pa_launch_cfg_default();
  pa_opt_row rows[PA_LAUNCH_MAX_FLAGS];
  int owner[PA_LAUNCH_MAX_FLAGS];
  size_t first[NPARTS];
  size_t n = compose(&c, rows, owner, first);
  if (!contract) {
    flag_view views[PA_LAUNCH_MAX_FLAGS];
    size_t nv = flag_views(rows, owner, n, views);
    fprintf(f, "| flag | default | process | meaning |\n|---|---|---|---|\n");
    for (size_t v = 0; v < nv; v++) {
      char who[64];
      owners_text(views[v].owners, who, sizeof who);
      fprintf(f, "| `--%s` | ", views[v].row->o.name);
      md_default(f, views[v].row);
      fprintf(f, " | %s | ", who);
      md_text(f, views[v].help);
      fprintf(f, " |\n");
    }
    return;
  }
  fprintf(f, "| process | flags (default) |\n|---|---|\n");
  for (size_t p = 1; p <= NPARTS; p++) {
    size_t part = p % NPARTS; /* the processes, then the launcher */
    size_t end = part + 1 < NPARTS ? first[part + 1] : n;
    fprintf(f, "| %s | %s", proc_exe[parts[part].proc],
            part == 0 ? "every flag above, passed only to the process(es) "
                        "that own it, plus "
                      : "");
    for (size_t k = first[part]; k < end; k++) {
      fprintf(f, "%s`--%s` (", k > first[part] ? ", " : "", rows[k].o.name);
      md_default(f, &rows[k]);
      fputc(')', f);
    }
    fprintf(f, " |\n");
  }
}

int pa_launch_split(const char *cmd, char **words, size_t max_words, char *buf,
                    size_t buf_sz, char *err, size_t err_sz) {
  size_t nw = 0, bo = 0;
  const char *p = cmd;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\n')
      p++;
    if (!*p)
      break;
    if (nw >= max_words) {
      snprintf(err, err_sz, "more than %zu words", max_words);
      return -1;
    }
    words[nw++] = buf + bo;
    char quote = 0;
    while (*p && (quote || (*p != ' ' && *p != '\t' && *p != '\n'))) {
      char ch = *p++;
      if (quote && ch == quote) {
        quote = 0;
        continue;
      }
      if (!quote && (ch == '\'' || ch == '"')) {
        quote = ch;
        continue;
      }
      if (ch == '\\' && quote != '\'') {
        if (!*p) {
          snprintf(err, err_sz, "trailing backslash");
          return -1;
        }
        ch = *p++;
      }
      if (bo + 2 > buf_sz) {
        snprintf(err, err_sz, "command too long");
        return -1;
      }
      buf[bo++] = ch;
    }
    if (quote) {
      snprintf(err, err_sz, "unterminated %c quote", quote);
      return -1;
    }
    if (bo + 1 > buf_sz) {
      snprintf(err, err_sz, "command too long");
      return -1;
    }
    buf[bo++] = '\0';
  }
  return (int)nw;
}

/* Removes every --wrap PROC=CMD from argv into c->wrap[]. */
static int extract_wraps(pa_launch_cfg *c, int *argc, char **argv, char *err,
                         size_t err_sz) {
  int out = 1;
  bool only_pos = false;
  for (int i = 1; i < *argc; i++) {
    if (only_pos || strcmp(argv[i], "--") == 0 || !pa_opt_arg_is(argv[i], "wrap")) {
      only_pos = only_pos || strcmp(argv[i], "--") == 0;
      argv[out++] = argv[i];
      continue;
    }
    const char *eq = strchr(argv[i], '=');
    const char *val;
    if (eq)
      val = eq + 1;
    else if (i + 1 < *argc)
      val = argv[++i];
    else {
      snprintf(err, err_sz, "--wrap needs a value: PROC='COMMAND ...'");
      return -1;
    }
    const char *sep = strchr(val, '=');
    char proc_name[16];
    size_t len = sep ? (size_t)(sep - val) : 0;
    if (!sep || len == 0 || len >= sizeof proc_name) {
      snprintf(err, err_sz,
               "--wrap: '%s' is not PROC='COMMAND ...' (PROC = sim, render or netgw)",
               val);
      return -1;
    }
    memcpy(proc_name, val, len);
    proc_name[len] = '\0';
    int p = pa_launch_proc_from_name(proc_name);
    if (p < 0) {
      snprintf(err, err_sz, "--wrap: unknown process '%s' (sim, render or netgw)",
               proc_name);
      return -1;
    }
    char buf[1024], *words[PA_LAUNCH_WRAP_MAX], e2[128];
    int nw = pa_launch_split(sep + 1, words, PA_LAUNCH_WRAP_MAX, buf, sizeof buf,
                             e2, sizeof e2);
    if (nw < 0) {
      snprintf(err, err_sz, "--wrap %s: %s", proc_name, e2);
      return -1;
    }
    if (nw == 0) {
      snprintf(err, err_sz, "--wrap %s: empty command", proc_name);
      return -1;
    }
    if (c->wrap[p]) {
      snprintf(err, err_sz, "--wrap: %s is wrapped twice", proc_name);
      return -1;
    }
    c->wrap[p] = sep + 1;
  }
  *argc = out;
  argv[out] = NULL;
  return 0;
}

static int check_file(const char *flag, const char *path, char *err,
                      size_t err_sz) {
  if (!path || !*path)
    return 0;
  if (access(path, R_OK) != 0) {
    snprintf(err, err_sz, "--%s: cannot read '%s': %s", flag, path,
             strerror(errno));
    return -1;
  }
  return 0;
}

/* The launcher's checks, after every process's own: those that span
 * processes or need the launcher's flags. */
static int launch_finish(void *args, const bool *given, char *err,
                         size_t err_sz) {
  (void)given;
  pa_launch_cfg *c = args;
  if ((long)c->sim.def.robots > c->max_robots) {
    snprintf(err, err_sz, "--robots: %lu is more than --max_robots %ld",
             (unsigned long)c->sim.def.robots, c->max_robots);
    return -1;
  }
  if (c->no_render && (c->render.viewer || c->render.screenshot)) {
    snprintf(err, err_sz, "--%s needs pa-render, but --no-render was given",
             c->render.viewer ? "viewer" : "screenshot");
    return -1;
  }
  /* A window needs a display; without one it is a configuration error
   * before anything starts, not a crash loop of pa-render (which exits 78
   * itself when GLFW finds no usable display). */
  const char *x = getenv("DISPLAY"), *wl = getenv("WAYLAND_DISPLAY");
  if (c->render.viewer && (!x || !*x) && (!wl || !*wl)) {
    snprintf(err, err_sz,
             "--viewer: no display (DISPLAY and WAYLAND_DISPLAY are unset): "
             "run under xvfb-run, or leave --viewer out (the head cameras "
             "render headless)");
    return -1;
  }
  if (c->no_render && c->wrap[PA_PROC_RENDER]) {
    snprintf(err, err_sz, "--wrap render: pa-render is off (--no-render)");
    return -1;
  }
  if ((!pa_sim_ssl_world_division(c->sim.map.world) &&
       check_file("world", c->sim.map.world, err, err_sz) < 0) ||
      check_file("map_yaml", c->sim.map.map_yaml, err, err_sz) < 0 ||
      check_file("map_image", c->sim.map.map_image, err, err_sz) < 0)
    return -1;
  if (!c->instance) {
    if (c->netgw.def.tcp_port == 0)
      snprintf(c->instance_buf, sizeof c->instance_buf, "a%d", (int)getpid());
    else
      pa_stack_instance_for_port(c->instance_buf, sizeof c->instance_buf,
                                 c->netgw.def.tcp_port);
    c->instance = c->instance_buf;
  }
  char name[PA_SHM_NAME_MAX], e2[160];
  if (pa_shm_name(name, sizeof name, c->instance, "ctl", e2, sizeof e2) < 0) {
    snprintf(err, err_sz, "--instance: %s", e2);
    return -1;
  }
  return 0;
}

int pa_launch_cfg_parse(pa_launch_cfg *c, int argc, char **argv, char *err,
                        size_t err_sz) {
  /* pa_opt_parse keeps pointers into argv, so work on a copy of the vector
   * (the strings themselves are the caller's). */
  char **av = calloc((size_t)argc + 1, sizeof *av);
  if (!av) {
    snprintf(err, err_sz, "out of memory");
    return -1;
  }
  memcpy(av, argv, (size_t)argc * sizeof *av);
  int ac = argc;
  int rc = -1;
  if (extract_wraps(c, &ac, av, err, err_sz) < 0)
    goto out;
  pa_opt_row rows[PA_LAUNCH_MAX_FLAGS];
  int owner[PA_LAUNCH_MAX_FLAGS];
  size_t first[NPARTS];
  size_t n = compose(c, rows, owner, first);
  char *pos[1];
  size_t npos = 0;
  /* Remember which flags were given: only those are passed on, so each
   * process keeps its own defaults for the rest. */
  int r =
      pa_opt_parse_rows(rows, n, ac, av, pos, 0, &npos, c->given, err, err_sz);
  if (r != 0) {
    rc = r;
    goto out;
  }
  /* Each process's cross-flag checks as it would run them, ours last. */
  for (size_t p = 1; p <= NPARTS; p++) {
    size_t part = p % NPARTS;
    const pa_opt_table *t = parts[part].table();
    if (t->finish && t->finish((char *)c + parts[part].args_off,
                               c->given + first[part], err, err_sz) != 0)
      goto out;
  }
  sync_copies(c);
  rc = 0;
out:
  free(av);
  return rc;
}

int pa_launch_cfg_set(pa_launch_cfg *c, const char *name, const char *value,
                      char *err, size_t err_sz) {
  pa_opt_row rows[PA_LAUNCH_MAX_FLAGS];
  int owner[PA_LAUNCH_MAX_FLAGS];
  size_t n = compose(c, rows, owner, NULL);
  bool found = false;
  for (size_t k = 0; k < n; k++) {
    if (strcmp(rows[k].o.name, name))
      continue;
    if (pa_opt_set(&rows[k], value, err, err_sz) != 0)
      return -1;
    c->given[k] = found = true;
  }
  if (!found) {
    snprintf(err, err_sz, "unknown flag --%s", name);
    return -1;
  }
  sync_copies(c);
  return 0;
}

char **pa_launch_child_argv(const pa_launch_cfg *c, int proc,
                            const char *bin_dir, char *err, size_t err_sz) {
  pa_launch_cfg tmp = *c; /* rows bind to a non-const cfg */
  /* The supervisor pins a picked port by rewriting the plain copy. */
  tmp.netgw.def.tcp_port = (uint32_t)c->tcp_port;
  pa_opt_row rows[PA_LAUNCH_MAX_FLAGS];
  int owner[PA_LAUNCH_MAX_FLAGS];
  size_t n = compose(&tmp, rows, owner, NULL);
  char wbuf[1024], *words[PA_LAUNCH_WRAP_MAX];
  int nw = 0;
  if (c->wrap[proc]) {
    nw = pa_launch_split(c->wrap[proc], words, PA_LAUNCH_WRAP_MAX, wbuf,
                         sizeof wbuf, err, err_sz);
    if (nw < 0)
      return NULL;
  }
  size_t cap = (size_t)nw + 2 + n + 1;
  char **av = calloc(cap, sizeof *av);
  if (!av) {
    snprintf(err, err_sz, "out of memory");
    return NULL;
  }
  size_t k = 0;
  for (int i = 0; i < nw; i++)
    av[k++] = strdup(words[i]);
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", bin_dir, pa_launch_proc_exe(proc));
  av[k++] = strdup(path);
  for (size_t i = 0; i < n; i++) {
    bool is_instance = !strcmp(rows[i].o.name, "instance");
    if (owner[i] != proc || (!c->given[i] && !is_instance))
      continue;
    char val[4096], arg[4200];
    if (is_instance) /* always, and the resolved name */
      snprintf(val, sizeof val, "%s", c->instance ? c->instance : "");
    else if (!pa_opt_format(&rows[i], val, sizeof val))
      continue;
    snprintf(arg, sizeof arg, "--%s=%s", rows[i].o.name, val);
    av[k++] = strdup(arg);
  }
  av[k] = NULL;
  bool oom = false;
  for (size_t i = 0; i < k; i++)
    oom = oom || !av[i];
  if (oom) { /* free every string, not just those before the first NULL */
    for (size_t i = 0; i < k; i++)
      free(av[i]);
    free(av);
    snprintf(err, err_sz, "out of memory");
    return NULL;
  }
  return av;
}

void pa_launch_argv_free(char **argv) {
  if (!argv)
    return;
  for (size_t i = 0; argv[i]; i++)
    free(argv[i]);
  free(argv);
}

static uint32_t max_u32(uint32_t a, uint32_t b) { return b > a ? b : a; }

pa_stack_def pa_launch_stack_def(const pa_launch_cfg *c) {
  pa_stack_def d = pa_stack_def_default();
  snprintf(d.instance, sizeof d.instance, "%s", c->instance ? c->instance : "");
  d.max_robots = (uint32_t)c->max_robots;
  d.max_beams = max_u32(d.max_beams, c->sim.def.laser_beams);
  d.max_cam_width = max_u32(d.max_cam_width, c->sim.def.camera_width);
  d.max_cam_height = max_u32(d.max_cam_height, c->sim.def.camera_height);
  return d;
}
