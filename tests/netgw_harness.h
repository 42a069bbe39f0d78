/* netgw_harness.h - starts a real stack (instance + pa-sim + pa-netgw) for
 * the netgw end-to-end tests and the benchmark, and small protocol helpers.
 * Header-only (static functions) so each executable takes what it uses. */
#ifndef PA_NETGW_HARNESS_H
#define PA_NETGW_HARNESS_H

#include "pa_shm.h"
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct ng_stack {
  char inst[PA_SHM_INSTANCE_MAX];
  pa_stack st;
  pid_t sim, gw;
  uint16_t port;
  char gw_log[512], sim_log[512];
} ng_stack;

static inline bool ng_sim_ready(void *arg) {
  ng_stack *s = arg;
  return __atomic_load_n(&s->st.ctl->health[PA_PROC_SIM].ready,
                         __ATOMIC_ACQUIRE) == 1;
}

static inline bool ng_gw_ready(void *arg) {
  ng_stack *s = arg;
  return __atomic_load_n(&s->st.ctl->tcp_port, __ATOMIC_ACQUIRE) != 0 &&
         __atomic_load_n(&s->st.ctl->health[PA_PROC_NETGW].ready,
                         __ATOMIC_ACQUIRE) == 1;
}

/* Starts pa-netgw on s's instance; extra flags end with NULL. 0 or -1. */
static inline int ng_start_gw(ng_stack *s, const char *const *gw_extra) {
  char bin[512];
  pa_test_bin(bin, sizeof bin, "pa-netgw");
  const char *argv[32] = {bin, "--instance", s->inst, "--tcp_port", "0"};
  int n = 5;
  for (int i = 0; gw_extra && gw_extra[i] && n < 30; i++)
    argv[n++] = gw_extra[i];
  argv[n] = NULL;
  __atomic_store_n(&s->st.ctl->tcp_port, 0, __ATOMIC_RELEASE);
  s->gw = pa_test_spawn((char *const *)argv, s->gw_log);
  if (s->gw < 0 || !pa_test_wait_for(ng_gw_ready, s, 20000)) {
    fprintf(stderr, "pa-netgw did not become ready; its log:\n");
    pa_test_dump_file(s->gw_log);
    return -1;
  }
  s->port = (uint16_t)s->st.ctl->tcp_port;
  return 0;
}

/* Creates an instance and starts pa-sim and pa-netgw on it; extra flags for
 * each end with NULL. 0 or -1 (with the logs printed). */
static inline int ng_start(ng_stack *s, const char *tag,
                           const char *const *sim_extra,
                           const char *const *gw_extra) {
  memset(s, 0, sizeof *s);
  pa_test_instance(s->inst, sizeof s->inst, tag);
  pa_stack_def d = pa_stack_def_default();
  snprintf(d.instance, sizeof d.instance, "%s", s->inst);
  d.max_robots = 16;
  d.max_obstacles = 64;
  d.max_cam_width = 320;
  d.max_cam_height = 240;
  char err[256];
  if (pa_stack_create(&s->st, &d, err, sizeof err) != 0) {
    fprintf(stderr, "pa_stack_create: %s\n", err);
    return -1;
  }
  snprintf(s->sim_log, sizeof s->sim_log, "%s/%s-sim.log", pa_test_tmpdir(),
           s->inst);
  snprintf(s->gw_log, sizeof s->gw_log, "%s/%s-gw.log", pa_test_tmpdir(),
           s->inst);
  char bin[512];
  pa_test_bin(bin, sizeof bin, "pa-sim");
  const char *argv[32] = {bin, "--instance", s->inst};
  int n = 3;
  for (int i = 0; sim_extra && sim_extra[i] && n < 30; i++)
    argv[n++] = sim_extra[i];
  argv[n] = NULL;
  s->sim = pa_test_spawn((char *const *)argv, s->sim_log);
  if (s->sim < 0 || !pa_test_wait_for(ng_sim_ready, s, 20000)) {
    fprintf(stderr, "pa-sim did not become ready; its log:\n");
    pa_test_dump_file(s->sim_log);
    return -1;
  }
  return ng_start_gw(s, gw_extra);
}

/* Stops both processes and removes the instance. Returns pa-netgw's wait
 * status (0 = clean exit 0 after SIGTERM: no sanitizer report, no leak),
 * printing its log otherwise. */
static inline int ng_stop(ng_stack *s) {
  int status = 0;
  if (s->gw > 0) {
    status = pa_test_stop(s->gw, SIGTERM, 5000);
    if (status != 0) {
      fprintf(stderr, "pa-netgw exited with status 0x%x; its log:\n", status);
      pa_test_dump_file(s->gw_log);
    }
  }
  if (s->sim > 0)
    pa_test_stop(s->sim, SIGTERM, 5000);
  s->gw = s->sim = 0;
  if (s->st.ctl)
    pa_stack_detach(&s->st);
  pa_stack_unlink(s->inst);
  return status;
}

/* The 24-byte header of a CAM1 chunk (PROTOCOL.md section 2). */
typedef struct ng_cam_chunk {
  uint32_t seq, size, off;
  uint16_t w, h, idx, cnt;
} ng_cam_chunk;

/* Parses the header of the n-byte datagram b; false when it is shorter
 * than a header or not "CAM1". */
static inline bool ng_parse_cam(const uint8_t *b, int n, ng_cam_chunk *c) {
  if (n < 24 || memcmp(b, "CAM1", 4) != 0)
    return false;
  memcpy(&c->seq, b + 4, 4);
  memcpy(&c->w, b + 8, 2);
  memcpy(&c->h, b + 10, 2);
  memcpy(&c->size, b + 12, 4);
  memcpy(&c->off, b + 16, 4);
  memcpy(&c->idx, b + 20, 2);
  memcpy(&c->cnt, b + 22, 2);
  return true;
}

static inline int ng_connect(ng_stack *s) {
  int fd = pa_test_tcp_connect(s->port);
  if (fd >= 0) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

/* Sends line + "\n" and reads one reply line into out (5 s). Length or -1. */
static inline int ng_ask(int fd, const char *line, char *out, size_t n) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s\n", line);
  if (pa_test_send_str(fd, buf) != 0)
    return -1;
  return pa_test_read_line(fd, out, n, 5000);
}

/* True when no line arrives on fd within ms. */
static inline bool ng_silent(int fd, int ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return poll(&p, 1, ms) == 0;
}

#endif
