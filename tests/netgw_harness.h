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
#include <stdarg.h>
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

/* Starts bin/name --instance <s's> with the flags of a then of b (each
 * ends with NULL, either may be NULL), logging to log. */
static inline pid_t ng_spawn(ng_stack *s, const char *name,
                             const char *const *a, const char *const *b,
                             const char *log) {
  char bin[512];
  pa_test_bin(bin, sizeof bin, name);
  const char *argv[32] = {bin, "--instance", s->inst};
  int n = 3;
  for (int i = 0; a && a[i] && n < 30; i++)
    argv[n++] = a[i];
  for (int i = 0; b && b[i] && n < 30; i++)
    argv[n++] = b[i];
  argv[n] = NULL;
  return pa_test_spawn((char *const *)argv, log);
}

/* Starts pa-netgw on s's instance; extra flags end with NULL. 0 or -1. */
static inline int ng_start_gw(ng_stack *s, const char *const *gw_extra) {
  static const char *const port0[] = {"--tcp_port", "0", NULL};
  __atomic_store_n(&s->st.ctl->tcp_port, 0, __ATOMIC_RELEASE);
  s->gw = ng_spawn(s, "pa-netgw", port0, gw_extra, s->gw_log);
  if (s->gw < 0 || !pa_test_wait_for(ng_gw_ready, s, 20000)) {
    fprintf(stderr, "pa-netgw did not become ready; its log:\n");
    pa_test_dump_file(s->gw_log);
    return -1;
  }
  s->port = (uint16_t)s->st.ctl->tcp_port;
  return 0;
}

/* Creates an instance with room for robots, obstacles and cam_w x cam_h
 * images and starts pa-sim and pa-netgw on it; extra flags for each end
 * with NULL. 0 or -1 (with the logs printed). */
static inline int ng_start_sized(ng_stack *s, const char *tag, int robots,
                                 int obstacles, int cam_w, int cam_h,
                                 const char *const *sim_extra,
                                 const char *const *gw_extra) {
  memset(s, 0, sizeof *s);
  pa_stack_def d = pa_test_stack_def(s->inst, sizeof s->inst, tag);
  d.max_robots = robots;
  d.max_obstacles = obstacles;
  d.max_cam_width = cam_w;
  d.max_cam_height = cam_h;
  char err[256];
  if (pa_stack_create(&s->st, &d, err, sizeof err) != 0) {
    fprintf(stderr, "pa_stack_create: %s\n", err);
    return -1;
  }
  snprintf(s->sim_log, sizeof s->sim_log, "%s/%s-sim.log", pa_test_tmpdir(),
           s->inst);
  snprintf(s->gw_log, sizeof s->gw_log, "%s/%s-gw.log", pa_test_tmpdir(),
           s->inst);
  s->sim = ng_spawn(s, "pa-sim", sim_extra, NULL, s->sim_log);
  if (s->sim < 0 || !pa_test_wait_for(ng_sim_ready, s, 20000)) {
    fprintf(stderr, "pa-sim did not become ready; its log:\n");
    pa_test_dump_file(s->sim_log);
    return -1;
  }
  return ng_start_gw(s, gw_extra);
}

/* ng_start_sized with 16 robots, 64 obstacles and 320x240 images. */
static inline int ng_start(ng_stack *s, const char *tag,
                           const char *const *sim_extra,
                           const char *const *gw_extra) {
  return ng_start_sized(s, tag, 16, 64, 320, 240, sim_extra, gw_extra);
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

/* The old names, kept for test_netgw.c (being reworked elsewhere). */
typedef pa_test_cam_chunk ng_cam_chunk;
static inline bool ng_parse_cam(const uint8_t *b, int n, ng_cam_chunk *c) {
  return pa_test_parse_cam(b, n, c);
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

#ifdef fail_msg /* cmocka tests: a reply that differs fails the test */
/* Asks line and fails unless the reply is want (or starts with it). */
static inline void ng_expect_reply(int fd, const char *line, const char *want,
                                   bool prefix) {
  char buf[4096];
  int n = ng_ask(fd, line, buf, sizeof buf);
  if (n < 0 || strncmp(buf, want, prefix ? strlen(want) : sizeof buf) != 0)
    fail_msg("'%s' -> '%s', expected '%s%s'", line, n < 0 ? "(nothing)" : buf,
             want, prefix ? "..." : "");
}

static inline void ng_expect(int fd, const char *line, const char *want) {
  ng_expect_reply(fd, line, want, false);
}

static inline void ng_expect_prefix(int fd, const char *line,
                                    const char *want) {
  ng_expect_reply(fd, line, want, true);
}

/* ng_start and one client connection, or the test fails. */
static inline int ng_open(ng_stack *s, const char *tag,
                          const char *const *sim_extra,
                          const char *const *gw_extra) {
  assert_int_equal(ng_start(s, tag, sim_extra, gw_extra), 0);
  int fd = ng_connect(s);
  assert_true(fd >= 0);
  return fd;
}

/* Closes the fds listed (up to a -1), then fails the test unless pa-netgw
 * exits cleanly. */
static inline void ng_finish(ng_stack *s, ...) {
  va_list ap;
  va_start(ap, s);
  for (int fd; (fd = va_arg(ap, int)) >= 0;)
    close(fd);
  va_end(ap);
  assert_int_equal(ng_stop(s), 0);
}
#endif

#endif
