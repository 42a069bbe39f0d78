/* text.c - the plain-text command parser (PROTOCOL.md section 1). Pure: no
 * sockets, no shared memory, so a test can feed it any bytes. */
#include "netgw.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOKENS 8
#define TOKEN_MAX PA_NETGW_TOKEN_MAX /* as JSON auth and --token */

static const char *const channel_names[PA_CH_COUNT] = {"odom", "scan",
                                                       "camera"};

int pa_netgw_channel_parse(const char *s) {
  for (int i = 0; i < PA_CH_COUNT; i++)
    if (!strcmp(s, channel_names[i]))
      return i;
  return -1;
}

const char *pa_netgw_channel_name(int ch) {
  return ch >= 0 && ch < PA_CH_COUNT ? channel_names[ch] : "?";
}

const char *pa_netgw_text_help(void) {
  return "commands: cmd <v> <w> [head] | stop | sub <odom|scan|camera> "
         "<udp_port> | unsub <channel> | robot <id|name> | pose | teleport "
         "<x> <y> <theta> | pause | resume | step [n] | reset | speed <factor> "
         "| ping | help | auth <token> | JSON lines: {\"type\": ...}";
}

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

/* Unsigned decimal integer in [lo, hi]. */
static pa_status integer(const char *tok, const char *cmd, const char *what,
                         unsigned long lo, unsigned long hi,
                         unsigned long *out, char *msg, size_t msg_sz) {
  size_t n = strlen(tok);
  if (n == 0 || n > 10 || strspn(tok, "0123456789") != n)
    return fail(msg, msg_sz, PA_ERR_INVALID_MESSAGE,
                "%s: %s '%s' is not a whole number", cmd, what, tok);
  unsigned long v = strtoul(tok, NULL, 10);
  if (v < lo || v > hi)
    return fail(msg, msg_sz, PA_ERR_INVALID_MESSAGE,
                "%s: %s %lu is out of range [%lu, %lu]", cmd, what, v, lo, hi);
  *out = v;
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
  char tok[MAX_TOKENS][TOKEN_MAX];
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
  const char *c = tok[0];
  int na = nt - 1;
  pa_status st;
  unsigned long u;
  if (!strcmp(c, "cmd")) {
    out->kind = PA_TXT_CMD;
    if ((st = arity(c, na, 2, 3, "cmd <v> <w> [head]",
                    PA_ERR_INVALID_ACTION_SHAPE, msg, msg_sz)))
      return st;
    static const char *const what[3] = {"v", "w", "head"};
    for (int k = 0; k < na; k++)
      if ((st = number(tok[k + 1], c, what[k], &out->a[k], msg, msg_sz)))
        return st;
    return PA_OK;
  }
  if (!strcmp(c, "teleport")) {
    out->kind = PA_TXT_TELEPORT;
    if ((st = arity(c, na, 3, 3, "teleport <x> <y> <theta>",
                    PA_ERR_INVALID_ACTION_SHAPE, msg, msg_sz)))
      return st;
    static const char *const what[3] = {"x", "y", "theta"};
    for (int k = 0; k < 3; k++)
      if ((st = number(tok[k + 1], c, what[k], &out->a[k], msg, msg_sz)))
        return st;
    return PA_OK;
  }
  if (!strcmp(c, "sub")) {
    out->kind = PA_TXT_SUB;
    if ((st = arity(c, na, 2, 2, "sub <odom|scan|camera> <udp_port>",
                    PA_ERR_INVALID_MESSAGE, msg, msg_sz)))
      return st;
    if ((st = channel(tok[1], c, &out->channel, msg, msg_sz)) ||
        (st = integer(tok[2], c, "udp_port", 1, 65535, &u, msg, msg_sz)))
      return st;
    out->port = (uint16_t)u;
    return PA_OK;
  }
  if (!strcmp(c, "unsub")) {
    out->kind = PA_TXT_UNSUB;
    if ((st = arity(c, na, 1, 1, "unsub <odom|scan|camera>",
                    PA_ERR_INVALID_MESSAGE, msg, msg_sz)))
      return st;
    return channel(tok[1], c, &out->channel, msg, msg_sz);
  }
  if (!strcmp(c, "step")) {
    out->kind = PA_TXT_STEP;
    out->n = 1;
    if ((st = arity(c, na, 0, 1, "step [n]", PA_ERR_INVALID_MESSAGE, msg,
                    msg_sz)))
      return st;
    if (na == 1) {
      if ((st = integer(tok[1], c, "n", 1, PA_NETGW_STEP_MAX, &u, msg,
                        msg_sz)))
        return st;
      out->n = (uint32_t)u;
    }
    return PA_OK;
  }
  if (!strcmp(c, "speed")) {
    out->kind = PA_TXT_SPEED;
    if ((st = arity(c, na, 1, 1, "speed <factor>", PA_ERR_INVALID_MESSAGE,
                    msg, msg_sz)))
      return st;
    if ((st = number(tok[1], c, "factor", &out->a[0], msg, msg_sz)))
      return st;
    if (out->a[0] < 0 || out->a[0] > PA_NETGW_SPEED_MAX)
      return fail(msg, msg_sz, PA_ERR_INVALID_MESSAGE,
                  "speed: factor %g is out of range [0, %g] (0 = as fast as "
                  "possible)",
                  out->a[0], PA_NETGW_SPEED_MAX);
    return PA_OK;
  }
  if (!strcmp(c, "robot") || !strcmp(c, "auth")) {
    bool robot = c[0] == 'r';
    out->kind = robot ? PA_TXT_ROBOT : PA_TXT_AUTH;
    if ((st = arity(c, na, 1, 1, robot ? "robot <id|name>" : "auth <token>",
                    PA_ERR_INVALID_MESSAGE, msg, msg_sz)))
      return st;
    snprintf(out->arg, sizeof out->arg, "%s", tok[1]);
    return PA_OK;
  }
  static const struct {
    const char *name;
    pa_text_kind kind;
  } plain[] = {{"stop", PA_TXT_STOP},   {"help", PA_TXT_HELP},
               {"ping", PA_TXT_PING},   {"pose", PA_TXT_POSE},
               {"pause", PA_TXT_PAUSE}, {"resume", PA_TXT_RESUME},
               {"reset", PA_TXT_RESET}};
  for (size_t k = 0; k < sizeof plain / sizeof plain[0]; k++)
    if (!strcmp(c, plain[k].name)) {
      out->kind = plain[k].kind;
      return arity(c, na, 0, 0, c, PA_ERR_INVALID_MESSAGE, msg, msg_sz);
    }
  return fail(msg, msg_sz, PA_ERR_UNKNOWN_ACTION,
              "unknown command '%s' (try help)", c);
}
