/* replay.c - `playarea replay FILE`: asks a running stack's pa-netgw to
 * replay an MCAP recording (JSON replay_mcap, docs/foxglove.md) and waits
 * for its verdict: exit 0 when the end state matches the recording's. */
#define _GNU_SOURCE
#include "pa_launch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct conn {
  int fd;
  char buf[1 << 16];
  size_t n;
} conn;

/* One JSON request line out, its reply line back (NULL on error or after
 * timeout_ms). */
static json_t *request(conn *c, const char *type, const char *action,
                       json_t *data, int timeout_ms) {
  json_t *req =
      json_pack("{s:s, s:i, s:s, s:o}", "type", type, "protocol_version", 2,
                "action", action, "data", data ? data : json_object());
  char *line = json_dumps(req, JSON_COMPACT);
  json_decref(req);
  if (!line)
    return NULL;
  size_t len = strlen(line);
  line[len] = '\n'; /* json_dumps leaves room for its NUL only: resend it */
  ssize_t w = send(c->fd, line, len + 1, MSG_NOSIGNAL);
  free(line);
  if (w != (ssize_t)len + 1)
    return NULL;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    char *nl = memchr(c->buf, '\n', c->n);
    if (nl) {
      *nl = 0;
      json_t *r = json_loads(c->buf, 0, NULL);
      size_t used = (size_t)(nl + 1 - c->buf);
      memmove(c->buf, nl + 1, c->n - used);
      c->n -= used;
      return r;
    }
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long left = timeout_ms - ((t.tv_sec - t0.tv_sec) * 1000 +
                              (t.tv_nsec - t0.tv_nsec) / 1000000);
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    if (left <= 0 || c->n == sizeof c->buf || poll(&p, 1, (int)left) <= 0)
      return NULL;
    ssize_t r = recv(c->fd, c->buf + c->n, sizeof c->buf - c->n, 0);
    if (r <= 0)
      return NULL;
    c->n += (size_t)r;
  }
}

/* The error message of a reply, "no reply" for none, NULL for success. */
static const char *error_of(json_t *r) {
  if (!r)
    return "no reply from pa-netgw";
  json_t *e = json_object_get(r, "error");
  const char *m = e ? json_string_value(json_object_get(e, "message")) : NULL;
  return e ? (m ? m : "error") : NULL;
}

int pa_launch_replay_main(int argc, char **argv) {
  long port = 9000, timeout_s = 600;
  const char *token = NULL, *host = "127.0.0.1", *instance = NULL;
  bool keep_paused = false;
  pa_opt o[] = {
      {"instance", PA_OPT_STR, &instance, 0, 0,
       "the stack's instance name (its TCP port is read from it)"},
      {"tcp_port", PA_OPT_INT, &port, 1, 65535, "the stack's TCP port"},
      {"bind", PA_OPT_STR, &host, 0, 0, "its IPv4 address"},
      {"token", PA_OPT_STR, &token, 0, 0, "its --token, if any"},
      {"timeout_s", PA_OPT_INT, &timeout_s, 1, 86400,
       "[s] give up waiting for the verdict after this long"},
      {"keep_paused", PA_OPT_FLAG, &keep_paused, 0, 0,
       "leave the simulation paused after the replay (default: resume it "
       "if it was running before)"},
  };
  const size_t n = sizeof o / sizeof o[0];
  char *pos[2];
  size_t npos = 0;
  char err[256];
  const char *usage =
      "playarea replay FILE [--instance NAME | --tcp_port P]: re-run an MCAP "
      "recording's "
      "commands on a running stack (FILE is under its --data_dir) and check "
      "the end state matches; exit 0 on a match, 1 otherwise";
  int r = pa_opt_parse(o, n, argc, argv, pos, 2, &npos, err, sizeof err);
  if (r == 1) {
    pa_opt_usage(stdout, usage, NULL, o, n);
    return 0;
  }
  if (r < 0 || npos != 1) {
    fprintf(stderr, "playarea replay: %s\n",
            r < 0 ? err : "give exactly one FILE");
    return PA_EXIT_CONFIG;
  }
  if (instance) {
    for (int i = 1; i < argc; i++)
      if (pa_opt_arg_is(argv[i], "tcp_port")) {
        fprintf(stderr, "playarea replay: --instance and --tcp_port both "
                        "select the stack: give one\n");
        return PA_EXIT_CONFIG;
      }
    unsigned p = 0;
    int ir = pa_launch_instance_port("replay", instance, &p);
    if (ir != 0)
      return ir;
    port = (long)p;
  }
  struct sockaddr_in sin = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, host, &sin.sin_addr) != 1) {
    fprintf(stderr, "playarea replay: --bind %s: not an IPv4 address\n", host);
    return PA_EXIT_CONFIG;
  }
  conn *c = calloc(1, sizeof *c);
  if (!c)
    return 1;
  c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int rc = 1;
  json_t *rep = NULL;
  if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
    fprintf(stderr, "playarea replay: cannot connect to %s:%ld: %s\n", host,
            port, strerror(errno));
    rc = PA_EXIT_CONFIG;
    goto out;
  }
  if (token) {
    rep =
        request(c, "command", "auth", json_pack("{s:s}", "token", token), 5000);
    const char *e = error_of(rep);
    if (e) {
      fprintf(stderr, "playarea replay: auth: %s\n", e);
      goto out;
    }
    json_decref(rep);
  }
  /* The replay pauses the sim; a running one is resumed afterwards. */
  rep = request(c, "sim_control", "get_status", NULL, 5000);
  bool was_paused =
      !error_of(rep) &&
      json_is_true(json_object_get(json_object_get(rep, "data"), "paused"));
  json_decref(rep);
  rep = request(c, "command", "replay_mcap", json_pack("{s:s}", "path", pos[0]),
                30000);
  const char *e = error_of(rep);
  if (e) {
    fprintf(stderr, "playarea replay: %s\n", e);
    goto out;
  }
  long cmds = (long)json_integer_value(
      json_object_get(json_object_get(rep, "data"), "commands"));
  printf(
      "replaying %ld commands of %s\n", cmds,
      json_string_value(json_object_get(json_object_get(rep, "data"), "path")));
  json_decref(rep);
  rep = NULL;
  for (long waited = 0; waited < timeout_s * 10; waited++) {
    rep = request(c, "command", "foxglove_info", NULL, 5000);
    json_t *rp = json_object_get(json_object_get(rep, "data"), "replay");
    const char *state = json_string_value(json_object_get(rp, "state"));
    if (!rep || !state) {
      fprintf(stderr, "playarea replay: lost the stack\n");
      goto out;
    }
    if (strcmp(state, "running")) {
      printf("%s: %s\n", state,
             json_string_value(json_object_get(rp, "detail")));
      rc = strcmp(state, "match") ? 1 : 0;
      if (!was_paused && !keep_paused) {
        json_decref(rep);
        rep = request(c, "sim_control", "resume", NULL, 5000);
        const char *re = error_of(rep);
        if (re) {
          fprintf(stderr, "playarea replay: resume: %s\n", re);
          rc = 1;
        } else
          printf("resumed the simulation (it was running before the replay)\n");
      }
      goto out;
    }
    json_decref(rep);
    rep = NULL;
    usleep(100000);
  }
  fprintf(stderr, "playarea replay: no verdict within %ld s\n", timeout_s);
out:
  json_decref(rep);
  if (c->fd >= 0)
    close(c->fd);
  free(c);
  return rc;
}
