/* discover.c - `playarea discover`: listens for the stacks' discovery
 * beacons (netgw/raisim/beacon.c) for a while and lists each stack heard once.
 */
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
#include <unistd.h>

/* Beacons are unauthenticated UDP: anyone may send any number with any
 * text. Distinct stacks kept while listening (bounded memory; a stack that
 * proves real takes the place of one that does not), listed at most, and
 * the length of a field as printed. */
#define HEARD_MAX 1024
#define LIST_MAX 64
#define FIELD_MAX 64
#define KEYS_MAX 24
#define PROBE_MS 300 /* connect checks to the stacks heard, all at once */

typedef struct heard {
  json_t *b; /* the beacon (sanitised), with "from" added */
  char key[160];
  bool from_match; /* it claims the sender's address (or every address) */
  bool answers;    /* its TCP port takes a connection */
} heard;

/* s for a terminal: printable ASCII only (an escape sequence or any control
 * or non-ASCII byte becomes '?'), at most FIELD_MAX bytes. */
static json_t *clean_str(const char *s) {
  char out[FIELD_MAX + 4];
  size_t n = 0;
  for (; s[n] && n < FIELD_MAX; n++)
    out[n] = s[n] >= 0x20 && s[n] < 0x7f ? s[n] : '?';
  if (s[n] && n >= 3)
    memcpy(out + n - 3, "...", 3);
  out[n] = 0;
  return json_string(out);
}

/* The beacon in buf, or NULL when it is not one of ours: its scalar fields
 * only (KEYS_MAX of them, strings sanitised), plus "from". */
static json_t *parse_beacon(const char *buf, size_t n,
                            const struct sockaddr_in *from) {
  json_error_t je;
  json_t *o = json_loadb(buf, n, 0, &je);
  json_t *port = json_object_get(o, "tcp_port");
  if (!json_is_object(o) || !json_is_string(json_object_get(o, "beacon")) ||
      strcmp(json_string_value(json_object_get(o, "beacon")),
             PA_BEACON_MAGIC) != 0 ||
      !json_is_string(json_object_get(o, "instance")) ||
      !json_is_integer(port) || json_integer_value(port) < 1 ||
      json_integer_value(port) > 65535) {
    json_decref(o);
    return NULL;
  }
  json_t *c = json_object();
  const char *k;
  json_t *v;
  size_t keys = 0;
  json_object_foreach(o, k, v) {
    if (keys >= KEYS_MAX || strlen(k) > 32)
      continue;
    bool ok = true;
    for (const char *p = k; *p && ok; p++)
      ok = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_';
    if (!ok || !strcmp(k, "from"))
      continue;
    if (json_is_string(v))
      json_object_set_new(c, k, clean_str(json_string_value(v)));
    else if (json_is_integer(v) || json_is_real(v) || json_is_boolean(v))
      json_object_set(c, k, v);
    else
      continue;
    keys++;
  }
  json_decref(o);
  char ip[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &from->sin_addr, ip, sizeof ip);
  json_object_set_new(c, "from", json_string(ip));
  return c;
}

static const char *jstr(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "-";
}

/* Where a client connects: the sender's address, whatever the beacon
 * claims (a forged beacon must not send clients elsewhere). */
static const char *connect_addr(json_t *o) { return jstr(o, "from"); }

/* The beacon claims the address it came from, or every address. */
static bool claims_sender(json_t *o) {
  const char *a = jstr(o, "address");
  return !strcmp(a, "0.0.0.0") || !strcmp(a, "-") ||
         !strcmp(a, jstr(o, "from"));
}

/* Marks each stack whose TCP port (at the sender's address) takes a
 * connection within PROBE_MS: non-blocking connects, polled together. */
static void probe_stacks(heard *h, size_t nh) {
  int *fds = calloc(nh ? nh : 1, sizeof *fds);
  struct pollfd *p = calloc(nh ? nh : 1, sizeof *p);
  if (!fds || !p) {
    free(fds);
    free(p);
    return;
  }
  for (size_t i = 0; i < nh; i++) {
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_port = htons(
        (uint16_t)json_integer_value(json_object_get(h[i].b, "tcp_port")));
    fds[i] = -1;
    if (inet_pton(AF_INET, connect_addr(h[i].b), &a.sin_addr) != 1)
      continue;
    fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fds[i] >= 0 && connect(fds[i], (struct sockaddr *)&a, sizeof a) == 0)
      h[i].answers = true;
  }
  int64_t end = pa_now_ns() + PROBE_MS * 1000000LL;
  for (int64_t left; (left = (end - pa_now_ns()) / 1000000) > 0;) {
    size_t np = 0;
    for (size_t i = 0; i < nh; i++)
      if (fds[i] >= 0 && !h[i].answers)
        p[np++] = (struct pollfd){.fd = fds[i], .events = POLLOUT};
    if (!np || poll(p, np, (int)left) <= 0)
      break;
    for (size_t k = 0; k < np; k++) {
      if (!p[k].revents)
        continue;
      int e = 0;
      socklen_t el = sizeof e;
      getsockopt(p[k].fd, SOL_SOCKET, SO_ERROR, &e, &el);
      for (size_t i = 0; i < nh; i++)
        if (fds[i] == p[k].fd) {
          h[i].answers = e == 0;
          close(fds[i]);
          fds[i] = -1;
        }
    }
  }
  for (size_t i = 0; i < nh; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  free(fds);
  free(p);
}

/* Real stacks first: those that answer, then those that claim their
 * sender's address; the order heard otherwise. */
static int rank(const heard *x) {
  return x->answers ? 0 : x->from_match ? 1 : 2;
}

static void order(heard *h, size_t nh) {
  for (size_t i = 1; i < nh; i++) { /* stable insertion: nh <= HEARD_MAX */
    heard t = h[i];
    size_t j = i;
    for (; j > 0 && rank(&h[j - 1]) > rank(&t); j--)
      h[j] = h[j - 1];
    h[j] = t;
  }
}

/* Keeps b in h (nh of HEARD_MAX): replaces the same stack's older beacon;
 * when full, a beacon that claims its sender's address takes the place of
 * one that does not; else it is dropped. */
static void keep(heard *h, size_t *nh, json_t *b) {
  char key[160];
  /* Heard twice (loopback and broadcast) or every second: once. */
  snprintf(key, sizeof key, "%.64s/%s/%lld", jstr(b, "instance"),
           connect_addr(b),
           (long long)json_integer_value(json_object_get(b, "tcp_port")));
  bool match = claims_sender(b);
  size_t i = 0;
  while (i < *nh && strcmp(h[i].key, key))
    i++;
  if (i == *nh && *nh == HEARD_MAX) {
    for (i = 0; i < *nh && (!match || h[i].from_match); i++)
      ;
    if (i == *nh) {
      json_decref(b);
      return;
    }
  } else if (i == *nh) {
    (*nh)++;
  }
  json_decref(h[i].b); /* keep the newest */
  h[i].b = b;
  h[i].from_match = match;
  snprintf(h[i].key, sizeof h[i].key, "%s", key);
}

/* The list, real stacks first, at most LIST_MAX (the rest counted). */
static void print_stacks(heard *h, size_t nh, bool as_json) {
  size_t shown = nh < LIST_MAX ? nh : LIST_MAX;
  if (!as_json && nh)
    printf("%-24s %-21s %5s %7s %-10s %5s\n", "instance", "tcp", "http", "pid",
           "version", "proto");
  for (size_t i = 0; i < shown; i++) {
    json_t *b = h[i].b;
    if (as_json) {
      json_object_set_new(b, "answers", json_boolean(h[i].answers));
      char *s = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);
      if (s)
        printf("%s\n", s);
      free(s);
    } else {
      char tcp[64];
      snprintf(tcp, sizeof tcp, "%s:%lld", connect_addr(b),
               (long long)json_integer_value(json_object_get(b, "tcp_port")));
      printf(
          "%-24.64s %-21s %5lld %7lld %-10.64s %5lld%s\n", jstr(b, "instance"),
          tcp, (long long)json_integer_value(json_object_get(b, "http_port")),
          (long long)json_integer_value(json_object_get(b, "pid")),
          jstr(b, "version"),
          (long long)json_integer_value(json_object_get(b, "protocol_version")),
          h[i].answers ? "" : "  (not answering)");
    }
  }
  if (nh > shown)
    fprintf(stderr, "playarea discover: %zu more not listed (at most %d)\n",
            nh - shown, LIST_MAX);
}

int pa_launch_discover_main(int argc, char **argv) {
  long port = PA_BEACON_PORT, timeout_ms = 2500;
  const char *bind_addr = "0.0.0.0";
  bool as_json = false;
  pa_opt o[] = {
      {"beacon_port", PA_OPT_INT, &port, 1, 65535,
       "UDP port the stacks' beacons go to"},
      {"bind", PA_OPT_STR, &bind_addr, 0, 0,
       "IPv4 address to listen on (0.0.0.0 also hears LAN broadcasts)"},
      {"timeout_ms", PA_OPT_INT, &timeout_ms, 100, 3600000,
       "[ms] how long to listen (beacons come once a second)"},
      {"json", PA_OPT_FLAG, &as_json, 0, 0,
       "one JSON object per stack (the beacon, plus \"from\")"},
  };
  size_t n = sizeof o / sizeof o[0];
  const char *usage = "playarea discover [--beacon_port P] [--bind ADDR] "
                      "[--timeout_ms MS] [--json]";
  char err[256];
  int r = pa_opt_parse(o, n, argc, argv, NULL, 0, NULL, err, sizeof err);
  if (r == 1) {
    pa_opt_usage(stdout, usage,
                 "Lists the playarea stacks whose discovery "
                 "beacon it hears.",
                 o, n);
    return 0;
  }
  if (r < 0) {
    fprintf(stderr, "playarea discover: %s\n", err);
    return PA_EXIT_CONFIG;
  }
  struct sockaddr_in sin;
  memset(&sin, 0, sizeof sin);
  sin.sin_family = AF_INET;
  sin.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, bind_addr, &sin.sin_addr) != 1) {
    fprintf(stderr,
            "playarea discover: --bind: '%s' is not an IPv4 "
            "address\n",
            bind_addr);
    return PA_EXIT_CONFIG;
  }
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    fprintf(stderr, "playarea discover: socket: %s\n", strerror(errno));
    return 1;
  }
  int one = 1;
  /* Several listeners (two discovers, a viewer) may share the port. */
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
    fprintf(stderr,
            "playarea discover: cannot listen on %s:%ld: %s "
            "(--beacon_port, --bind)\n",
            bind_addr, port, strerror(errno));
    close(fd);
    return PA_EXIT_CONFIG;
  }
  heard *h = calloc(HEARD_MAX, sizeof *h);
  if (!h) {
    close(fd);
    return 1;
  }
  size_t nh = 0;
  int64_t end = pa_now_ns() + (int64_t)timeout_ms * 1000000;
  for (;;) {
    int64_t left = (end - pa_now_ns()) / 1000000;
    if (left <= 0)
      break;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, (int)left) <= 0)
      continue;
    char buf[2048];
    struct sockaddr_in from;
    socklen_t fl = sizeof from;
    ssize_t got = recvfrom(fd, buf, sizeof buf, MSG_DONTWAIT,
                           (struct sockaddr *)&from, &fl);
    json_t *b = got > 0 ? parse_beacon(buf, (size_t)got, &from) : NULL;
    if (b)
      keep(h, &nh, b);
  }
  close(fd);
  probe_stacks(h, nh);
  order(h, nh);
  print_stacks(h, nh, as_json);
  for (size_t i = 0; i < nh; i++)
    json_decref(h[i].b);
  free(h);
  fflush(stdout);
  if (!nh) {
    fprintf(stderr,
            "playarea discover: no stack heard on %s:%ld within %ld "
            "ms\n",
            bind_addr, port, timeout_ms);
    return 1;
  }
  return 0;
}
