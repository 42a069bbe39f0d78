/* text.c - the plain-text commands (PROTOCOL.md section 1) as one table:
 * each row's name, argument count, usage and handlers drive the parser, the
 * execution and `help`. The parser is pure (no sockets, no shared memory),
 * so a test can feed it any bytes; execution runs on the gateway's loop. */
#define _GNU_SOURCE
#include "text_int.h"

#include "pa_util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOKENS 8
#define TOKEN_MAX PA_NETGW_TOKEN_MAX /* as JSON auth and --token */

static pa_status fail(char *msg, size_t msg_sz, pa_status st, const char *fmt,
                      ...) __attribute__((format(printf, 4, 5)));
static pa_status fail(char *msg, size_t msg_sz, pa_status st, const char *fmt,
                      ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, msg_sz, fmt, ap);
  va_end(ap);
  return st;
}

/* A finite number written in full: "1", "-0.5", "2e-3" (no hex, inf, nan). */
static pa_status number(const char *tok, const char *cmd, const char *what,
                        double *out, char *msg, size_t msg_sz) {
  for (const char *p = tok; *p; p++)
    if (!strchr("0123456789+-.eE", *p))
      return fail(msg, msg_sz, PA_ERR_INVALID_ACTION_SHAPE,
                  "%s: %s '%s' is not a finite number", cmd, what, tok);
  errno = 0;
  char *end = NULL;
  double v = strtod(tok, &end);
  if (end == tok || *end != '\0')
    return fail(msg, msg_sz, PA_ERR_INVALID_ACTION_SHAPE,
                "%s: %s '%s' is not a finite number", cmd, what, tok);
  if (!isfinite(v))
    return fail(msg, msg_sz, PA_ERR_INVALID_ACTION_SHAPE,
                "%s: %s '%s' is not finite", cmd, what, tok);
  *out = v;
  return PA_OK;
}

/* Unsigned decimal integer in [lo, hi] (hi <= UINT32_MAX). */
static pa_status integer(const char *tok, const char *cmd, const char *what,
                         unsigned long lo, unsigned long hi, uint32_t *out,
                         char *msg, size_t msg_sz) {
  size_t n = strlen(tok);
  if (n == 0 || n > 10 || strspn(tok, "0123456789") != n)
    return fail(msg, msg_sz, PA_ERR_INVALID_MESSAGE,
                "%s: %s '%s' is not a whole number", cmd, what, tok);
  unsigned long v = strtoul(tok, NULL, 10);
  if (v < lo || v > hi)
    return fail(msg, msg_sz, PA_ERR_INVALID_MESSAGE,
                "%s: %s %lu is out of range [%lu, %lu]", cmd, what, v, lo, hi);
  *out = (uint32_t)v;
  return PA_OK;
}

/* A channel name: odom, scan or camera. */
static pa_status channel(const char *tok, const char *cmd, int *out, char *msg,
                         size_t msg_sz) {
  *out = pa_netgw_channel_parse(tok);
  if (*out < 0)
    return fail(msg, msg_sz, PA_ERR_INVALID_MESSAGE,
                "%s: unknown channel '%s' (odom, scan or camera)", cmd, tok);
  return PA_OK;
}

static pa_status arity(const char *cmd, int got, int lo, int hi,
                       const char *usage, pa_status st, char *msg,
                       size_t msg_sz) {
  if (got >= lo && got <= hi)
    return PA_OK;
  if (lo == hi)
    return fail(msg, msg_sz, st, "%s takes %d argument%s, got %d: %s", cmd, lo,
                lo == 1 ? "" : "s", got, usage);
  return fail(msg, msg_sz, st, "%s takes %d to %d arguments, got %d: %s", cmd,
              lo, hi, got, usage);
}

/* ---- argument parsers: tok[1..na] -> out ----------------------------------*/

typedef char text_tok[TOKEN_MAX];

static pa_status numbers(const text_tok *tok, int na, const char *const *what,
                         pa_text_cmd *out, char *msg, size_t msg_sz) {
  pa_status st;
  for (int k = 0; k < na; k++)
    if ((st = number(tok[k + 1], tok[0], what[k], &out->a[k], msg, msg_sz)))
      return st;
  return PA_OK;
}

static pa_status parse_cmd(const text_tok *tok, int na, pa_text_cmd *out,
                           char *msg, size_t msg_sz) {
  static const char *const what[3] = {"v", "w", "head"};
  return numbers(tok, na, what, out, msg, msg_sz);
}

static pa_status parse_teleport(const text_tok *tok, int na, pa_text_cmd *out,
                                char *msg, size_t msg_sz) {
  static const char *const what[3] = {"x", "y", "theta"};
  return numbers(tok, na, what, out, msg, msg_sz);
}

static pa_status parse_sub(const text_tok *tok, int na, pa_text_cmd *out,
                           char *msg, size_t msg_sz) {
  (void)na;
  uint32_t u = 0;
  pa_status st;
  if ((st = channel(tok[1], tok[0], &out->channel, msg, msg_sz)) ||
      (st = integer(tok[2], tok[0], "udp_port", 1, 65535, &u, msg, msg_sz)))
    return st;
  out->port = (uint16_t)u;
  return PA_OK;
}

static pa_status parse_unsub(const text_tok *tok, int na, pa_text_cmd *out,
                             char *msg, size_t msg_sz) {
  (void)na;
  return channel(tok[1], tok[0], &out->channel, msg, msg_sz);
}

static pa_status parse_step(const text_tok *tok, int na, pa_text_cmd *out,
                            char *msg, size_t msg_sz) {
  out->n = 1; /* without an argument */
  if (na == 1)
    return integer(tok[1], tok[0], "n", 1, PA_NETGW_STEP_MAX, &out->n, msg,
                   msg_sz);
  return PA_OK;
}

static pa_status parse_speed(const text_tok *tok, int na, pa_text_cmd *out,
                             char *msg, size_t msg_sz) {
  (void)na;
  pa_status st;
  if ((st = number(tok[1], tok[0], "factor", &out->a[0], msg, msg_sz)))
    return st;
  if (out->a[0] < 0 || out->a[0] > PA_NETGW_SPEED_MAX)
    return fail(msg, msg_sz, PA_ERR_INVALID_MESSAGE,
                "speed: factor %g is out of range [0, %g] (0 = as fast as "
                "possible)",
                out->a[0], PA_NETGW_SPEED_MAX);
  return PA_OK;
}

static pa_status parse_arg(const text_tok *tok, int na, pa_text_cmd *out,
                           char *msg, size_t msg_sz) {
  (void)na, (void)msg, (void)msg_sz;
  snprintf(out->arg, sizeof out->arg, "%s", tok[1]);
  return PA_OK;
}

/* ---- replies
 * ----------------------------------------------------------------*/

void pa_text_errf(pa_client *c, pa_status st, const char *fmt, ...) {
  char line[512];
  int n = snprintf(line, sizeof line, "err %s ", pa_status_code(st));
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  if (n + 1 >= (int)sizeof line) { /* cut, still one line */
    n = (int)sizeof line - 1;
    line[n - 1] = '\n';
  } else {
    line[n++] = '\n';
  }
  pa_gw_write(c, line, (size_t)n);
}

void pa_text_err(pa_client *c, pa_status st, const char *msg) {
  pa_text_errf(c, st, "%s", msg);
}

static void text_line(pa_client *c, const char *s) {
  char line[PA_NETGW_TEXT_MAX + 2];
  size_t n = strlen(s);
  if (n > PA_NETGW_TEXT_MAX)
    n = PA_NETGW_TEXT_MAX;
  memcpy(line, s, n);
  line[n] = '\n'; /* one write per reply line */
  pa_gw_write(c, line, n + 1);
}

void pa_text_complete(pa_client *c, const pa_reply *r) {
  pa_status st;
  char msg[128];
  if (pa_gw_reply_error(c->g, r, &st, msg, sizeof msg))
    pa_text_err(c, st, msg);
  else
    text_line(c, "ok");
}

/* ---- handlers
 * ---------------------------------------------------------------*/

static void no_robot(pa_client *c) {
  pa_text_errf(c, PA_ERR_UNKNOWN_ROBOT, "robot %" PRIu32 " does not exist",
               c->robot);
}

/* The connection's robot exists; else answers unknown_robot. */
static bool have_robot(pa_client *c) {
  pa_robot_info info;
  uint32_t idx;
  if (pa_gw_robot(c->g, NULL, (long)c->robot, &info, &idx) == 0)
    return true;
  no_robot(c);
  return false;
}

/* Sends cmd to pa-sim; the reply (or busy) comes with pa_text_complete. */
static void to_sim(pa_client *c, const pa_text_cmd *t, pa_cmd *cmd) {
  cmd->robot = c->robot;
  if (pa_gw_push_wait(c, cmd) != 0) {
    c->g->busy++;
    pa_text_err(c, PA_ERR_BUSY, c->g->busy_msg);
    return;
  }
  c->pend = PEND_TEXT;
  c->pend_text = (int)t->kind;
}

static void exec_auth(pa_client *c, const pa_text_cmd *t) {
  if (c->g->token[0] && !pa_gw_auth_try(c, t->arg)) {
    pa_text_errf(c, PA_ERR_NOT_AUTHORIZED, "wrong token%s",
                 c->closing ? " (too many wrong tokens: closing)" : "");
    return;
  }
  c->authed = true;
  text_line(c, "ok");
}

static void exec_help(pa_client *c, const pa_text_cmd *t) {
  (void)t;
  text_line(c, pa_netgw_text_help());
}

static void exec_ping(pa_client *c, const pa_text_cmd *t) {
  (void)t;
  text_line(c, "pong");
}

/* cmd and stop: no reply; the last of a burst goes to pa-sim. */
static void exec_drive(pa_client *c, const pa_text_cmd *t) {
  if (!have_robot(c))
    return;
  if (pa_gw_sim_stalled(c->g)) { /* the one reply a drive command has */
    c->g->busy++;
    pa_text_err(c, PA_ERR_BUSY, c->g->busy_msg);
    return;
  }
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.robot = c->robot;
  if (t->kind == PA_TXT_CMD) {
    cmd.op = PA_OP_SET_CMD;
    cmd.drive.v = t->a[0];
    cmd.drive.w = t->a[1];
    cmd.drive.head_rate = t->a[2];
    cmd.drive.frame = PA_FRAME_ROBOT;
    /* pa-sim's check here: a refused drive would have no reply to say so */
    const char *bad = pa_cmd_drive_error(&cmd.drive);
    if (bad) {
      pa_text_err(c, PA_ERR_INVALID_ACTION_SHAPE, bad);
      return;
    }
  } else {
    cmd.op = PA_OP_STOP;
  }
  pa_gw_set_drive(c, &cmd);
}

static void exec_sub(pa_client *c, const pa_text_cmd *t) {
  if (have_robot(c))
    pa_gw_subscribe(c, t->channel, c->robot, t->port);
}

static void exec_unsub(pa_client *c, const pa_text_cmd *t) {
  if (c->port[t->channel])
    pa_gw_subscribe(c, t->channel, c->sub_robot[t->channel], 0);
}

static void exec_robot(pa_client *c, const pa_text_cmd *t) {
  pa_robot_info info;
  uint32_t idx;
  size_t n = strlen(t->arg);
  bool numeric = n <= 9 && strspn(t->arg, "0123456789") == n;
  int rc = numeric
               ? pa_gw_robot(c->g, NULL, strtol(t->arg, NULL, 10), &info, &idx)
               : pa_gw_robot(c->g, t->arg, -1, &info, &idx);
  if (rc == PA_GW_BUSY) {
    pa_text_err(c, PA_ERR_BUSY,
                "the world snapshot is being rewritten; try "
                "again");
    return;
  }
  if (rc != 0) {
    pa_text_errf(c, PA_ERR_UNKNOWN_ROBOT, "no robot with %s '%s'",
                 numeric ? "id" : "name", t->arg);
    return;
  }
  c->robot = idx;
  text_line(c, "ok");
}

static void exec_pose(pa_client *c, const pa_text_cmd *t) {
  (void)t;
  const pa_tick *tk = pa_gw_latest(c->g);
  if (!tk) {
    pa_text_err(c, PA_ERR_BUSY, "the simulator has not written a tick yet");
    return;
  }
  const pa_robot_state *rs = pa_gw_robot_state(tk, c->robot);
  if (!rs) {
    no_robot(c);
    return;
  }
  char out[160];
  snprintf(out, sizeof out, "pose %.6f %.6f %.6f", rs->x, rs->y, rs->theta);
  text_line(c, out);
}

static void exec_teleport(pa_client *c, const pa_text_cmd *t) {
  if (!have_robot(c))
    return;
  pa_cmd cmd = {.op = PA_OP_TELEPORT};
  cmd.pose.x = t->a[0];
  cmd.pose.y = t->a[1];
  cmd.pose.theta = t->a[2];
  to_sim(c, t, &cmd);
}

static void exec_step(pa_client *c, const pa_text_cmd *t) {
  pa_cmd cmd = {.op = PA_OP_STEP, .step.ticks = t->n};
  to_sim(c, t, &cmd);
}

static void exec_speed(pa_client *c, const pa_text_cmd *t) {
  pa_cmd cmd = {.op = PA_OP_SPEED};
  cmd.speed.factor = t->a[0];
  to_sim(c, t, &cmd);
}

static void exec_pause(pa_client *c, const pa_text_cmd *t) {
  pa_cmd cmd = {.op = PA_OP_PAUSE};
  to_sim(c, t, &cmd);
}

static void exec_resume(pa_client *c, const pa_text_cmd *t) {
  pa_cmd cmd = {.op = PA_OP_RESUME};
  to_sim(c, t, &cmd);
}

static void exec_reset(pa_client *c, const pa_text_cmd *t) {
  pa_cmd cmd = {.op = PA_OP_RESET};
  to_sim(c, t, &cmd);
}

/* ---- the table
 * ----------------------------------------------------------------*/

typedef struct text_def {
  const char *name;
  pa_text_kind kind;
  int lo, hi;      /* argument count */
  pa_status shape; /* the status of a wrong argument count */
  pa_status (*parse)(const text_tok *tok, int na, pa_text_cmd *out, char *msg,
                     size_t msg_sz); /* NULL: no arguments to read */
  void (*exec)(pa_client *c, const pa_text_cmd *t);
  const char *usage; /* the row's part of `help` and of arity errors */
} text_def;

#define SHAPE PA_ERR_INVALID_ACTION_SHAPE
#define INVAL PA_ERR_INVALID_MESSAGE
static const text_def text_defs[] = {
    {"cmd", PA_TXT_CMD, 2, 3, SHAPE, parse_cmd, exec_drive,
     "cmd <v> <w> [head]"},
    {"stop", PA_TXT_STOP, 0, 0, INVAL, NULL, exec_drive, "stop"},
    {"sub", PA_TXT_SUB, 2, 2, INVAL, parse_sub, exec_sub,
     "sub <odom|scan|camera> <udp_port>"},
    {"unsub", PA_TXT_UNSUB, 1, 1, INVAL, parse_unsub, exec_unsub,
     "unsub <odom|scan|camera>"},
    {"robot", PA_TXT_ROBOT, 1, 1, INVAL, parse_arg, exec_robot,
     "robot <id|name>"},
    {"pose", PA_TXT_POSE, 0, 0, INVAL, NULL, exec_pose, "pose"},
    {"teleport", PA_TXT_TELEPORT, 3, 3, SHAPE, parse_teleport, exec_teleport,
     "teleport <x> <y> <theta>"},
    {"pause", PA_TXT_PAUSE, 0, 0, INVAL, NULL, exec_pause, "pause"},
    {"resume", PA_TXT_RESUME, 0, 0, INVAL, NULL, exec_resume, "resume"},
    {"step", PA_TXT_STEP, 0, 1, INVAL, parse_step, exec_step, "step [n]"},
    {"reset", PA_TXT_RESET, 0, 0, INVAL, NULL, exec_reset, "reset"},
    {"speed", PA_TXT_SPEED, 1, 1, INVAL, parse_speed, exec_speed,
     "speed <factor>"},
    {"ping", PA_TXT_PING, 0, 0, INVAL, NULL, exec_ping, "ping"},
    {"help", PA_TXT_HELP, 0, 0, INVAL, NULL, exec_help, "help"},
    {"auth", PA_TXT_AUTH, 1, 1, INVAL, parse_arg, exec_auth, "auth <token>"},
};
#undef SHAPE
#undef INVAL
#define N_TEXT_DEFS (sizeof text_defs / sizeof text_defs[0])

static const text_def *text_def_of(pa_text_kind kind) {
  for (size_t k = 0; k < N_TEXT_DEFS; k++)
    if (text_defs[k].kind == kind)
      return &text_defs[k];
  return NULL;
}

static char help_text[1024];

static void build_help(void) {
  char *h = help_text;
  size_t n = (size_t)snprintf(h, sizeof help_text, "commands:");
  for (size_t k = 0; k < N_TEXT_DEFS && n < sizeof help_text; k++)
    n += (size_t)snprintf(h + n, sizeof help_text - n, "%s %s", k ? " |" : "",
                          text_defs[k].usage);
  if (n < sizeof help_text)
    snprintf(h + n, sizeof help_text - n, " | JSON lines: {\"type\": ...}");
}

const char *pa_netgw_text_help(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, build_help);
  return help_text;
}

pa_status pa_netgw_text_parse(const char *line, size_t len, pa_text_cmd *out,
                              char *msg, size_t msg_sz) {
  memset(out, 0, sizeof *out);
  if (len > 0 && line[len - 1] == '\r')
    len--;
  if (len > PA_NETGW_TEXT_MAX)
    return fail(msg, msg_sz, PA_ERR_TOO_LONG,
                "line is %zu bytes, the limit is %u", len, PA_NETGW_TEXT_MAX);
  /* Reject binary before tokenising: NUL, control bytes, non-ASCII. */
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)line[i];
    if ((c < 0x20 && c != '\t') || c >= 0x7f)
      return fail(msg, msg_sz, PA_ERR_INVALID_MESSAGE,
                  "binary data: byte 0x%02x at column %zu", c, i + 1);
  }
  text_tok tok[MAX_TOKENS];
  int nt = 0;
  size_t i = 0;
  while (i < len) {
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
      i++;
    if (i >= len)
      break;
    size_t s = i;
    while (i < len && line[i] != ' ' && line[i] != '\t')
      i++;
    if (nt == MAX_TOKENS)
      return fail(msg, msg_sz, PA_ERR_INVALID_MESSAGE,
                  "too many arguments (more than %d tokens)", MAX_TOKENS - 1);
    if (i - s >= TOKEN_MAX)
      return fail(msg, msg_sz, PA_ERR_INVALID_MESSAGE,
                  "token %d is %zu bytes long (limit %d)", nt + 1, i - s,
                  TOKEN_MAX - 1);
    memcpy(tok[nt], line + s, i - s);
    tok[nt][i - s] = '\0';
    nt++;
  }
  if (nt == 0) {
    out->kind = PA_TXT_EMPTY;
    return PA_OK;
  }
  for (size_t k = 0; k < N_TEXT_DEFS; k++) {
    const text_def *d = &text_defs[k];
    if (strcmp(tok[0], d->name) != 0)
      continue;
    out->kind = d->kind;
    pa_status st =
        arity(d->name, nt - 1, d->lo, d->hi, d->usage, d->shape, msg, msg_sz);
    if (st != PA_OK || !d->parse)
      return st;
    return d->parse((const text_tok *)tok, nt - 1, out, msg, msg_sz);
  }
  return fail(msg, msg_sz, PA_ERR_UNKNOWN_ACTION,
              "unknown command '%s' (try help)", tok[0]);
}

void pa_text_exec(pa_client *c, const char *line, size_t len) {
  pa_text_cmd t;
  char msg[256];
  pa_status st = pa_netgw_text_parse(line, len, &t, msg, sizeof msg);
  if (st != PA_OK) {
    pa_text_err(c, st, msg);
    return;
  }
  if (t.kind == PA_TXT_EMPTY)
    return;
  if (c->g->token[0] && !c->authed && t.kind != PA_TXT_AUTH) {
    pa_text_err(c, PA_ERR_NOT_AUTHORIZED, "send auth <token> first");
    return;
  }
  const text_def *d = text_def_of(t.kind);
  if (d)
    d->exec(c, &t);
}

/* ---- the front-end row --------------------------------------------------*/

static const pa_fe_listener text_listeners[] = {
    {"tcp", PA_PORT_TCP, "--tcp_port", offsetof(pa_netgw_def, tcp_port), false,
     true, 512},
};

/* The text protocol owns the TCP control port; JSON lines share it. */
const pa_frontend pa_fe_text = {
    .name = "text",
    .flags = "tcp_port",
    .listeners = text_listeners,
    .n_listeners = 1,
    .token = true,
    .line = pa_text_exec,
    .complete = pa_text_complete,
    .line_error = pa_text_err,
};
