/* beacon.c - the discovery beacon: once a second one UDP datagram saying
 * which stack this is and where it listens (RaisimServer's discovery on
 * port 59312), heard by `playarea discover`. Loopback only unless the
 * gateway listens on a wider address, then the LAN broadcast address too. */
#define _GNU_SOURCE
#include "raisim_int.h"

#include "pa_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef PA_VERSION
#define PA_VERSION "unknown"
#endif

int pa_gw_beacon_payload(pa_netgw *g, char *buf, size_t n) {
  json_t *o = json_object();
  if (!o)
    return -1;
  const char *bind_addr = g->def.bind ? g->def.bind : "127.0.0.1";
  char inst[PA_SHM_INSTANCE_MAX + 1];
  /* bounded: the name sits in shared memory */
  snprintf(inst, sizeof inst, "%.*s", (int)(sizeof inst - 1),
           g->ctl->def.instance);
  json_object_set_new(o, "beacon", json_string(PA_BEACON_MAGIC));
  json_object_set_new(o, "name", json_string("playarea"));
  json_object_set_new(o, "instance", json_string(inst));
  json_object_set_new(o, "address", json_string(bind_addr));
  json_object_set_new(o, "tcp_port", json_integer(g->port));
  json_object_set_new(o, "http_port", json_integer(pa_core_port(g, "http")));
  json_object_set_new(o, "foxglove_port",
                      json_integer(pa_core_port(g, "foxglove")));
  json_object_set_new(o, "pid", json_integer(getpid()));
  json_object_set_new(o, "version", json_string(PA_VERSION));
  json_object_set_new(o, "protocol_version", json_integer(2));
  json_object_set_new(o, "shm_layout_version",
                      json_integer(PA_SHM_LAYOUT_VERSION));
  json_object_set_new(o, "auth", json_boolean(g->token[0] != 0));
  json_object_set_new(o, "robots", json_integer(g->ctl->robot_count));
  char *s = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  if (!s)
    return -1;
  int len = snprintf(buf, n, "%s", s);
  free(s);
  return len < 0 || (size_t)len >= n ? -1 : len;
}

static void send_beacon(pa_netgw *g) {
  char buf[1024];
  int len = pa_gw_beacon_payload(g, buf, sizeof buf);
  if (len < 0)
    return;
  for (unsigned i = 0; i < g->n_beacon_to; i++) {
    ssize_t w = sendto(g->beacon_fd, buf, (size_t)len, MSG_DONTWAIT,
                       (const struct sockaddr *)&g->beacon_to[i],
                       sizeof g->beacon_to[i]);
    /* Nobody listening (ECONNREFUSED) or no LAN route: try next second. */
    if (w == len)
      g->beacons_sent++;
    else
      g->beacons_failed++;
  }
}

static void on_beacon(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  int64_t t0 = pa_now_ns();
  send_beacon(arg);
  pa_gw_account(arg, t0);
}

static bool wide_bind(const char *addr) {
  struct in_addr a;
  return inet_pton(AF_INET, addr, &a) == 1 && (ntohl(a.s_addr) >> 24) != 127;
}

int pa_gw_beacon_start(pa_netgw *g, char *err, size_t err_sz) {
  g->beacon_fd = -1;
  if (g->def.no_beacon)
    return 0;
  g->beacon_fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (g->beacon_fd < 0) {
    snprintf(err, err_sz, "beacon socket: %s", strerror(errno));
    return -1;
  }
  struct sockaddr_in *to = g->beacon_to;
  memset(to, 0, sizeof g->beacon_to);
  to[0].sin_family = AF_INET;
  to[0].sin_port = htons((uint16_t)g->def.beacon_port);
  to[0].sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  g->n_beacon_to = 1;
  if (wide_bind(g->def.bind ? g->def.bind : "127.0.0.1")) {
    int one = 1;
    if (setsockopt(g->beacon_fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof one) ==
        0) {
      to[1] = to[0];
      to[1].sin_addr.s_addr = htonl(INADDR_BROADCAST);
      g->n_beacon_to = 2;
    } else {
      pa_warn("beacon: SO_BROADCAST refused (%s); loopback only",
              strerror(errno));
    }
  }
  g->beacon_ev = event_new(g->base, -1, EV_PERSIST, on_beacon, g);
  if (!g->beacon_ev) {
    snprintf(err, err_sz, "beacon: event setup failed");
    return -1;
  }
  struct timeval tv = {PA_BEACON_PERIOD_MS / 1000,
                       (PA_BEACON_PERIOD_MS % 1000) * 1000};
  event_add(g->beacon_ev, &tv);
  send_beacon(g); /* at once: a discover running now hears it */
  return 0;
}

void pa_gw_beacon_stop(pa_netgw *g) {
  if (g->beacon_ev)
    event_free(g->beacon_ev);
  g->beacon_ev = NULL;
  if (g->beacon_fd >= 0)
    close(g->beacon_fd);
  g->beacon_fd = -1;
}

/* The RaisimServer front-end: discovery (its visual objects, video and
 * screenshots are JSON actions and pa-render's). */
const pa_frontend pa_fe_raisim = {
    .name = "raisim",
    .flags = "beacon_port no_beacon",
    .token = true, /* it listens on nothing: the beacon only announces */
    .start = pa_gw_beacon_start,
    .stop = pa_gw_beacon_stop,
};
