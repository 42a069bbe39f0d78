/*
 * testutil.h - shared helpers for playarea's cmocka tests: unique instance
 * names, spawning the real processes, sockets on 127.0.0.1, and cleanup that
 * runs even when a test fails (children get SIGKILL when the test process
 * dies; segments of registered instances are unlinked at exit).
 */
#ifndef PA_TESTUTIL_H
#define PA_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "pa_shm.h"

/* How much slower than a plain build the sanitizers run the code under
 * test: time bounds of tests scale by it (not correctness checks). */
#if defined(__SANITIZE_THREAD__)
#define PA_TEST_SLOW 8
#elif defined(__SANITIZE_ADDRESS__)
#define PA_TEST_SLOW 2
#else
#define PA_TEST_SLOW 1
#endif

/* The reply a test's fake pa-sim gives to c: c's ids and op, PA_OK, the
 * rest zero (the caller fills what its op returns). Inline: the fuzz
 * targets, which do not link this library, use it too. */
static inline pa_reply pa_test_reply_to(const pa_cmd *c) {
  pa_reply r;
  memset(&r, 0, sizeof r);
  r.client_id = c->client_id;
  r.request_id = c->request_id;
  r.op = c->op;
  return r;
}

/* pa_stack_def_default() named inst, small: 4 robots, 8 obstacles, beams
 * beams, a cam_w x cam_h camera, cmds command slots. Inline as above. */
static inline pa_stack_def pa_test_small_def(const char *inst, uint32_t beams,
                                             uint32_t cam_w, uint32_t cam_h,
                                             uint32_t cmds) {
  pa_stack_def d = pa_stack_def_default();
  snprintf(d.instance, sizeof d.instance, "%s", inst);
  d.max_robots = 4;
  d.max_obstacles = 8;
  d.max_beams = beams;
  d.max_cam_width = cam_w;
  d.max_cam_height = cam_h;
  d.cmd_capacity = cmds;
  return d;
}

/* "t<pid>-<tag>-<n>": unique per process and call; registered for cleanup. */
void pa_test_instance(char *out, size_t n, const char *tag);
/* pa_stack_def_default() for a new instance named for tag (the name also
 * into inst, n bytes; registered for cleanup like pa_test_instance). */
pa_stack_def pa_test_stack_def(char *inst, size_t n, const char *tag);
/* Registers an instance whose segments are unlinked at exit. */
void pa_test_track_instance(const char *instance);

/* $PA_BIN_DIR/<name> (the build's bin directory). */
void pa_test_bin(char *out, size_t n, const char *name);
/* $PA_SOURCE_DIR/<rel>. */
void pa_test_src(char *out, size_t n, const char *rel);
/* A private temp directory (mkdtemp), removed with its files at exit. */
const char *pa_test_tmpdir(void);

/* Starts argv[0] with argv (NULL-terminated). stdout+stderr go to log_path
 * (or are inherited when NULL). The child dies with the test process
 * (PR_SET_PDEATHSIG) and is killed at exit if still running. */
pid_t pa_test_spawn(char *const argv[], const char *log_path);
/* Sends sig (0 = just wait), waits up to timeout_ms, then SIGKILLs.
 * Returns the wait status, or -1. */
int pa_test_stop(pid_t pid, int sig, int timeout_ms);
/* True while pid is running (reaps it when it exited). */
bool pa_test_alive(pid_t pid);

int64_t pa_test_now_ms(void);
/* Polls cond(arg) every 2 ms until true or timeout; returns its last value. */
bool pa_test_wait_for(bool (*cond)(void *), void *arg, int timeout_ms);

/* UDP socket bound to 127.0.0.1:0; *port gets the chosen port. */
int pa_test_udp_bind(uint16_t *port);
/* Receives one datagram within timeout_ms; returns its size or -1. */
int pa_test_udp_recv(int fd, void *buf, size_t n, int timeout_ms);
/* TCP connection to 127.0.0.1:port, or -1. */
int pa_test_tcp_connect(uint16_t port);
/* Sends all of s. */
int pa_test_send_str(int fd, const char *s);
/* Reads one '\n'-terminated line (newline stripped) within timeout_ms;
 * returns its length or -1. Bytes after the line stay buffered per fd. */
int pa_test_read_line(int fd, char *buf, size_t n, int timeout_ms);

/* Connects to 127.0.0.1:port, sends "ping" and reads one line within
 * timeout_ms; true when it is "pong". */
bool pa_test_ping(uint16_t port, int timeout_ms);

/* Copies path to stderr, each line prefixed "  | " (nothing if unreadable). */
void pa_test_dump_file(const char *path);
/* True when a line of path contains needle. */
bool pa_test_file_contains(const char *path, const char *needle);

/* Reads up to n - 1 bytes of path into buf, NUL-terminated (buf is "" when
 * path cannot be opened). Returns the bytes read, or -1. */
long pa_test_read_file(const char *path, char *buf, size_t n);

/* Fills p[0..len) with a pattern derived from seq; pa_test_check tells
 * whether p holds exactly that pattern (records that must arrive intact). */
void pa_test_fill(uint8_t *p, uint32_t len, uint64_t seq);
bool pa_test_check(const uint8_t *p, uint32_t len, uint64_t seq);

/* An ODM1 datagram (PROTOCOL.md section 2). */
typedef struct pa_test_odom {
  uint32_t seq;
  double t;
  float x, y, theta, v, w;
} pa_test_odom;
/* Decodes the n-byte datagram b; false unless it is a 36-byte "ODM1". */
bool pa_test_parse_odom(const void *b, int n, pa_test_odom *o);

/* The 24-byte header of a CAM1 chunk (PROTOCOL.md section 2). */
typedef struct pa_test_cam_chunk {
  uint32_t seq, size, off;
  uint16_t w, h, idx, cnt;
} pa_test_cam_chunk;
/* Decodes the header of the n-byte datagram b; false when it is shorter
 * than a header or not "CAM1". */
bool pa_test_parse_cam(const void *b, int n, pa_test_cam_chunk *c);

/* Number of open file descriptors of pid (via /proc). */
int pa_test_fd_count(pid_t pid);
/* Number of pid's threads (/proc/PID/task) for which pick(tid, its comm,
 * arg) is true (pick NULL: all); -1 when pid has no task list. */
int pa_test_thread_count(pid_t pid,
                         bool (*pick)(pid_t tid, const char *comm, void *arg),
                         void *arg);
/* Opens the shm object "playarea.<instance>.<seg>" read-write (a test that
 * damages one on purpose); its fd with *size set, or -1. */
int pa_test_open_seg(const char *instance, const char *seg, size_t *size);
/* Count of /dev/shm objects whose name starts with "playarea.<instance>.". */
int pa_test_shm_count(const char *instance);
/* pa-render --viewer of instance under xvfb-run, w x h, its screenshot saved
 * to png (the log is <tmpdir>/viewer-<tag>.log, dumped on failure); 0 when
 * it exited 0, -1 otherwise. */
int pa_test_viewer_shot(const char *instance, const char *tag, int w, int h,
                        char *png, size_t png_cap);

#endif
