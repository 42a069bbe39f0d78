/* flags.c - the launcher's one flag table: every flag users know, its
 * default, its help and the process(es) it goes to. */
#include "pa_launch.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SIM PA_LAUNCH_TO(PA_PROC_SIM)
#define RENDER PA_LAUNCH_TO(PA_PROC_RENDER)
#define NETGW PA_LAUNCH_TO(PA_PROC_NETGW)
#define ALL (SIM | RENDER | NETGW)

pa_launch_cfg pa_launch_cfg_default(void) {
  pa_launch_cfg c;
  memset(&c, 0, sizeof c);
  c.max_robots = 256;
  c.grace_ms = 3000;
  c.start_timeout_ms = 10000;
  c.crash_limit = PA_LAUNCH_CRASH_LIMIT;
  c.crash_window_ms = PA_LAUNCH_CRASH_WINDOW_MS;
  c.map_resolution = 0.05;
  c.map_occupied_thresh = 0.65;
  c.map_free_thresh = 0.196;
  c.control_hz = 200;
  c.scan_hz = 10;
  c.speed = 1;
  c.laser_beams = 360;
  c.laser_range_min = 0.15;
  c.laser_range_max = 12;
  c.camera_width = 640;
  c.camera_height = 480;
  c.camera_fov_deg = 60;
  c.robots = 1;
  c.spin_us = -1;
  c.camera_hz = 15;
  c.viewer_width = 1280;
  c.viewer_height = 800;
  c.tcp_port = 9000;
  c.bind = "127.0.0.1";
  c.tcp_feedback_hz = 100;
  c.max_clients = 256;
  c.camera_chunk = 1400;
  c.request_timeout_ms = 2000;
  c.max_output = 4l << 20;
  return c;
}

size_t pa_launch_flag_table(pa_launch_cfg *c, pa_opt *o, unsigned *to) {
  size_t n = 0;
#define F(NAME, TYPE, DST, MIN, MAX, HELP, TO)                                 \
  do {                                                                         \
    if (n == PA_LAUNCH_MAX_FLAGS)                                              \
      abort(); /* the table outgrew PA_LAUNCH_MAX_FLAGS: raise it */           \
    o[n] = (pa_opt){NAME, TYPE, DST, MIN, MAX, HELP};                          \
    to[n++] = (TO);                                                            \
  } while (0)
  /* the launcher's own */
  F("instance", PA_OPT_STR, &c->instance, 0, 0,
    "instance name (default p<tcp_port>, a<pid> with --tcp_port 0)", ALL);
  F("no-render", PA_OPT_FLAG, &c->no_render, 0, 0,
    "do not start pa-render (no camera frames)", 0);
  F("wrap", PA_OPT_STR, &c->wrap_flag, 0, 0,
    "PROC='COMMAND ...': run sim|render|netgw under a tool (repeatable)", 0);
  F("max_robots", PA_OPT_INT, &c->max_robots, 1, 4096,
    "robot slots in shared memory", 0);
  F("grace_ms", PA_OPT_INT, &c->grace_ms, 0, 600000,
    "on stop: SIGTERM, then SIGKILL after this many ms", 0);
  F("start_timeout_ms", PA_OPT_INT, &c->start_timeout_ms, 100, 3600000,
    "a process must be ready within this (x10 when wrapped)", 0);
  F("crash_limit", PA_OPT_INT, &c->crash_limit, 0, PA_LAUNCH_CRASH_MAX,
    "give up on a process after this many crashes (0 = never)...", 0);
  F("crash_window_ms", PA_OPT_INT, &c->crash_window_ms, 1, 86400000,
    "...within this window [ms]; also resets the backoff", 0);
  /* pa-sim */
  F("world", PA_OPT_STR, &c->world, 0, 0, "world file (YAML: map, robots, obstacles)", SIM);
  F("dataset_dir", PA_OPT_STR, &c->dataset_dir, 0, 0, "export_dataset writes recordings under this directory (unset = off)", SIM);
  F("data_dir", PA_OPT_STR, &c->data_dir, 0, 0, "set_map / set_scenario read files only under this directory (unset = the working directory)", SIM);
  F("map_yaml", PA_OPT_STR, &c->map_yaml, 0, 0, "ROS map_server map.yaml", SIM);
  F("map_image", PA_OPT_STR, &c->map_image, 0, 0, "map image (with --map_yaml '')", SIM);
  F("map_resolution", PA_OPT_DOUBLE, &c->map_resolution, 1e-6, 1e6, "[m/pixel] for --map_image", SIM);
  F("map_origin_x", PA_OPT_DOUBLE, &c->map_origin_x, -1e9, 1e9, "[m] bottom-left pixel", SIM);
  F("map_origin_y", PA_OPT_DOUBLE, &c->map_origin_y, -1e9, 1e9, "[m] bottom-left pixel", SIM);
  F("map_negate", PA_OPT_INT, &c->map_negate, 0, 1, "0 or 1, as map_server", SIM);
  F("map_occupied_thresh", PA_OPT_DOUBLE, &c->map_occupied_thresh, 0, 1, "occupied above", SIM);
  F("map_free_thresh", PA_OPT_DOUBLE, &c->map_free_thresh, 0, 1, "free below", SIM);
  F("control_hz", PA_OPT_DOUBLE, &c->control_hz, 1, 10000, "[Hz] simulation rate", SIM);
  F("scan_hz", PA_OPT_DOUBLE, &c->scan_hz, 0.1, 1000, "[Hz] laser scans", SIM);
  F("seed", PA_OPT_INT, &c->seed, 0, 9.2e18, "noise seed", SIM);
  F("speed", PA_OPT_DOUBLE, &c->speed, 0, 1000, "time scale (0 = as fast as possible)", SIM);
  F("paused", PA_OPT_FLAG, &c->paused, 0, 0, "start paused (lockstep with step)", SIM);
  F("laser_beams", PA_OPT_INT, &c->laser_beams, 1, 65536, "beams per 360 deg scan", SIM);
  F("laser_range_min", PA_OPT_DOUBLE, &c->laser_range_min, 0, 1e4, "[m]", SIM);
  F("laser_range_max", PA_OPT_DOUBLE, &c->laser_range_max, 0.01, 1e4, "[m]", SIM);
  F("laser_noise", PA_OPT_DOUBLE, &c->laser_noise, 0, 100, "[m] Gaussian sigma", SIM);
  F("camera_width", PA_OPT_INT, &c->camera_width, 8, 4096, "[px] head camera", SIM);
  F("camera_height", PA_OPT_INT, &c->camera_height, 8, 4096, "[px] head camera", SIM);
  F("camera_fov_deg", PA_OPT_DOUBLE, &c->camera_fov_deg, 1, 179, "[deg] horizontal field of view", SIM);
  F("robots", PA_OPT_INT, &c->robots, 0, 4096, "robots (extra ones on free cells)", SIM);
  F("odom_error_x", PA_OPT_DOUBLE, &c->odom_error[0], 0, 1, "odometry error ratio, forward", SIM);
  F("odom_error_y", PA_OPT_DOUBLE, &c->odom_error[1], 0, 1, "odometry error ratio, sideways", SIM);
  F("odom_error_theta", PA_OPT_DOUBLE, &c->odom_error[2], 0, 1, "odometry error ratio, rotation", SIM);
  F("threads", PA_OPT_INT, &c->threads, 0, 64, "pa-sim threads casting scans (0 = auto: <= 2 for <= 8 robots, else CPUs up to 8)", SIM);
  F("realtime", PA_OPT_FLAG, &c->realtime, 0, 0, "SCHED_FIFO + mlockall for pa-sim's loop and pa-netgw's odom thread (needs CAP_SYS_NICE)", SIM | NETGW);
  F("spin_us", PA_OPT_INT, &c->spin_us, -1, 2000, "[us] pa-sim spins this long before each tick's deadline (-1 = auto: the machine's wake-up lateness, at most 250 us, 5-25% of the period; 0 = never; 300 with --realtime)", SIM);
  /* pa-render */
  F("camera_hz", PA_OPT_DOUBLE, &c->camera_hz, 0.1, 1000, "[Hz] camera frames", RENDER);
  F("viewer", PA_OPT_FLAG, &c->viewer, 0, 0, "open a window with an orbit camera", RENDER);
  F("viewer_width", PA_OPT_INT, &c->viewer_width, 64, 16384, "[px]", RENDER);
  F("viewer_height", PA_OPT_INT, &c->viewer_height, 64, 16384, "[px]", RENDER);
  F("screenshot", PA_OPT_STR, &c->screenshot, 0, 0, "viewer: save a PNG here after the first frames", RENDER);
  F("exit_after_screenshot", PA_OPT_FLAG, &c->exit_after_screenshot, 0, 0, "render exits after --screenshot", RENDER);
  /* pa-netgw */
  F("tcp_port", PA_OPT_INT, &c->tcp_port, 0, 65535, "TCP port (0 = pick one)", NETGW);
  F("bind", PA_OPT_STR, &c->bind, 0, 0, "address to listen on", NETGW);
  F("token", PA_OPT_STR, &c->token, 0, 0, "clients must send this token first", NETGW);
  F("tcp_feedback_hz", PA_OPT_DOUBLE, &c->tcp_feedback_hz, 0.1, 10000, "[Hz] odom frames", NETGW);
  F("max_clients", PA_OPT_INT, &c->max_clients, 1, 65536, "TCP clients at once", NETGW);
  F("camera_chunk", PA_OPT_INT, &c->camera_chunk, 256, 65000, "[bytes] camera payload per datagram", NETGW);
  F("request_timeout_ms", PA_OPT_INT, &c->request_timeout_ms, 1, 3600000, "[ms] sim round trip before busy", NETGW);
  F("max_output", PA_OPT_INT, &c->max_output, 65536, 1l << 30, "[bytes] unread replies before a client is disconnected", NETGW);
  F("odom_watch_us", PA_OPT_INT, &c->odom_watch_us, 0, 2000, "[us] netgw wakes this early for a due odom tick (0 = off)", NETGW);
#undef F
  return n;
}

static const char *const proc_exe[PA_PROC_COUNT] = {"playarea", "pa-sim",
                                                    "pa-render", "pa-netgw"};
static const char *const proc_short[PA_PROC_COUNT] = {"launch", "sim", "render",
                                                      "netgw"};

const char *pa_launch_proc_exe(int proc) {
  return proc >= 0 && proc < PA_PROC_COUNT ? proc_exe[proc] : "?";
}

int pa_launch_proc_from_name(const char *name) {
  for (int p = PA_PROC_SIM; p < PA_PROC_COUNT; p++)
    if (!strcmp(name, proc_short[p]) || !strcmp(name, proc_exe[p]))
      return p;
  return -1;
}

void pa_launch_usage(FILE *f) {
  pa_launch_cfg c = pa_launch_cfg_default();
  pa_opt o[PA_LAUNCH_MAX_FLAGS];
  unsigned to[PA_LAUNCH_MAX_FLAGS];
  size_t n = pa_launch_flag_table(&c, o, to);
  pa_opt_usage(
      f,
      "playarea [flags]\n"
      "       playarea status [--watch] [--instance NAME | --tcp_port PORT]\n"
      "       playarea restart sim|render|netgw [--instance NAME | --tcp_port PORT]",
      "Starts pa-sim, pa-render and pa-netgw on one shared-memory instance,\n"
      "restarts any that crashes, prints 'tcp ADDR:PORT instance NAME' once\n"
      "serving, and stops them all on Ctrl-C / SIGTERM.",
      o, n);
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
  pa_opt o[PA_LAUNCH_MAX_FLAGS];
  unsigned to[PA_LAUNCH_MAX_FLAGS];
  size_t n = pa_launch_flag_table(c, o, to);
  char *pos[1];
  size_t npos = 0;
  /* Remember which flags were given: only those are passed on, so each
   * process keeps its own defaults for the rest. */
  int r = pa_opt_parse_given(o, n, ac, av, pos, 0, &npos, c->given, err,
                             err_sz);
  if (r != 0) {
    rc = r;
    goto out;
  }
  if (c->laser_range_min >= c->laser_range_max) {
    snprintf(err, err_sz, "--laser_range_min: %g must be below --laser_range_max %g",
             c->laser_range_min, c->laser_range_max);
    goto out;
  }
  if (c->map_free_thresh >= c->map_occupied_thresh) {
    snprintf(err, err_sz,
             "--map_free_thresh: %g must be below --map_occupied_thresh %g",
             c->map_free_thresh, c->map_occupied_thresh);
    goto out;
  }
  if (c->robots > c->max_robots) {
    snprintf(err, err_sz, "--robots: %ld is more than --max_robots %ld",
             c->robots, c->max_robots);
    goto out;
  }
  if (c->no_render && (c->viewer || c->screenshot)) {
    snprintf(err, err_sz, "--%s needs pa-render, but --no-render was given",
             c->viewer ? "viewer" : "screenshot");
    goto out;
  }
  if (c->no_render && c->wrap[PA_PROC_RENDER]) {
    snprintf(err, err_sz, "--wrap render: pa-render is off (--no-render)");
    goto out;
  }
  if (c->bind && !*c->bind) {
    snprintf(err, err_sz, "--bind: empty address");
    goto out;
  }
  if (check_file("world", c->world, err, err_sz) < 0 ||
      check_file("map_yaml", c->map_yaml, err, err_sz) < 0 ||
      check_file("map_image", c->map_image, err, err_sz) < 0)
    goto out;
  if (!c->instance) {
    if (c->tcp_port == 0)
      snprintf(c->instance_buf, sizeof c->instance_buf, "a%d", (int)getpid());
    else
      pa_stack_instance_for_port(c->instance_buf, sizeof c->instance_buf,
                                 (unsigned)c->tcp_port);
    c->instance = c->instance_buf;
  }
  char name[PA_SHM_NAME_MAX], e2[160];
  if (pa_shm_name(name, sizeof name, c->instance, "ctl", e2, sizeof e2) < 0) {
    snprintf(err, err_sz, "--instance: %s", e2);
    goto out;
  }
  rc = 0;
out:
  free(av);
  return rc;
}

/* Shortest "%.*g" that reads back as the same double. */
static void fmt_double(char *out, size_t n, double v) {
  for (int prec = 6; prec <= 17; prec++) {
    snprintf(out, n, "%.*g", prec, v);
    if (strtod(out, NULL) == v)
      return;
  }
}

char **pa_launch_child_argv(const pa_launch_cfg *c, int proc,
                            const char *bin_dir, char *err, size_t err_sz) {
  pa_launch_cfg tmp = *c; /* the table needs a non-const cfg */
  pa_opt o[PA_LAUNCH_MAX_FLAGS];
  unsigned to[PA_LAUNCH_MAX_FLAGS];
  size_t n = pa_launch_flag_table(&tmp, o, to);
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
    bool is_instance = !strcmp(o[i].name, "instance");
    if (!(to[i] & PA_LAUNCH_TO(proc)) || (!c->given[i] && !is_instance))
      continue;
    char val[64], arg[4200];
    const char *v = val;
    switch (o[i].type) {
    case PA_OPT_STR:
      v = *(const char **)o[i].dst;
      if (!v)
        continue;
      break;
    case PA_OPT_INT:
      snprintf(val, sizeof val, "%ld", *(long *)o[i].dst);
      break;
    case PA_OPT_DOUBLE:
      fmt_double(val, sizeof val, *(double *)o[i].dst);
      break;
    case PA_OPT_FLAG:
      snprintf(val, sizeof val, "%d", *(bool *)o[i].dst ? 1 : 0);
      break;
    }
    snprintf(arg, sizeof arg, "--%s=%s", o[i].name, v);
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

static uint32_t max_u32(uint32_t a, long b) {
  return b > 0 && (uint64_t)b > a ? (uint32_t)b : a;
}

pa_stack_def pa_launch_stack_def(const pa_launch_cfg *c) {
  pa_stack_def d = pa_stack_def_default();
  snprintf(d.instance, sizeof d.instance, "%s", c->instance ? c->instance : "");
  d.max_robots = (uint32_t)c->max_robots;
  d.max_beams = max_u32(d.max_beams, c->laser_beams);
  d.max_cam_width = max_u32(d.max_cam_width, c->camera_width);
  d.max_cam_height = max_u32(d.max_cam_height, c->camera_height);
  return d;
}
