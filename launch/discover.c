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

#define MAX_STACKS 256

typedef struct heard {
  json_t *b; /* the beacon, with "from" added */
  char key[160];
} heard;

/* The beacon in buf, or NULL when it is not one of ours. */
static json_t *parse_beacon(const char *buf, size_t n,
                            const struct sockaddr_in *from) {
  json_error_t je;
  json_t *o = json_loadb(buf, n, 0, &je);
  if (!json_is_object(o) || !json_is_string(json_object_get(o, "beacon")) ||
      strcmp(json_string_value(json_object_get(o, "beacon")),
             PA_BEACON_MAGIC) != 0 ||
      !json_is_string(json_object_get(o, "instance")) ||
      !json_is_integer(json_object_get(o, "tcp_port"))) {
    json_decref(o);
    return NULL;
  }
  char ip[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &from->sin_addr, ip, sizeof ip);
  json_object_set_new(o, "from", json_string(ip));
  return o;
}

static const char *jstr(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "-";
}

/* Where a client connects: the beacon's address, or the sender's when the
 * stack listens on every address. */
static const char *connect_addr(json_t *o) {
  const char *a = jstr(o, "address");
  return strcmp(a, "0.0.0.0") && strcmp(a, "-") ? a : jstr(o, "from");
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
  heard *h = calloc(MAX_STACKS, sizeof *h);
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
    if (got <= 0)
      continue;
    json_t *b = parse_beacon(buf, (size_t)got, &from);
    if (!b)
      continue;
    char key[160];
    /* Heard twice (loopback and broadcast) or every second: once. */
    snprintf(key, sizeof key, "%s/%s/%lld", jstr(b, "instance"),
             connect_addr(b),
             (long long)json_integer_value(json_object_get(b, "tcp_port")));
    size_t i = 0;
    while (i < nh && strcmp(h[i].key, key))
      i++;
    if (i < nh) {
      json_decref(h[i].b); /* keep the newest */
      h[i].b = b;
    } else if (nh < MAX_STACKS) {
      h[nh].b = b;
      snprintf(h[nh].key, sizeof h[nh].key, "%s", key);
      nh++;
    } else {
      json_decref(b);
    }
  }
  close(fd);
  if (!as_json && nh)
    printf("%-24s %-21s %5s %7s %-10s %5s\n", "instance", "tcp", "http", "pid",
           "version", "proto");
  for (size_t i = 0; i < nh; i++) {
    json_t *b = h[i].b;
    if (as_json) {
      char *s = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);
      if (s)
        printf("%s\n", s);
      free(s);
    } else {
      char tcp[64];
      snprintf(tcp, sizeof tcp, "%s:%lld", connect_addr(b),
               (long long)json_integer_value(json_object_get(b, "tcp_port")));
      printf("%-24s %-21s %5lld %7lld %-10s %5lld\n", jstr(b, "instance"), tcp,
             (long long)json_integer_value(json_object_get(b, "http_port")),
             (long long)json_integer_value(json_object_get(b, "pid")),
             jstr(b, "version"),
             (long long)json_integer_value(
                 json_object_get(b, "protocol_version")));
    }
    json_decref(b);
  }
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
