/* test_launch_util.c - see test_launch_util.h. */
#define _GNU_SOURCE
#include "test_launch_util.h"

#include "pa_proc.h"

#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* Finds "tcp ADDR:PORT instance NAME" in the log. */
static bool find_ready_line(const char *log, uint16_t *port) {
  FILE *f = fopen(log, "r");
  if (!f)
    return false;
  char line[1024];
  bool found = false;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "tcp ", 4))
      continue;
    const char *colon = strchr(line + 4, ':');
    if (colon && strstr(line, " instance ")) {
      *port = (uint16_t)atoi(colon + 1);
      found = true;
      break;
    }
  }
  fclose(f);
  return found;
}

static int start(lt_stack *t, const char *const *extra, int timeout_ms) {
  static int n;
  snprintf(t->log, sizeof t->log, "%s/launch-%s-%d.log", pa_test_tmpdir(),
           t->instance, n++);
  char bin[512];
  pa_test_bin(bin, sizeof bin, "playarea");
  const char *argv[64];
  int k = 0;
  argv[k++] = bin;
  argv[k++] = "--tcp_port";
  argv[k++] = "0";
  argv[k++] = "--instance";
  argv[k++] = t->instance;
  for (int i = 0; extra && extra[i] && k < 62; i++)
    argv[k++] = extra[i];
  argv[k] = NULL;
  t->attached = false;
  t->port = 0;
  t->pid = pa_test_spawn((char *const *)argv, t->log);
  if (t->pid < 0)
    return -1;
  int64_t end = pa_test_now_ms() + timeout_ms;
  while (pa_test_now_ms() < end) {
    if (find_ready_line(t->log, &t->port)) {
      char err[256];
      if (pa_stack_attach(&t->s, t->instance, err, sizeof err) != 0) {
        fprintf(stderr, "attach %s: %s\n", t->instance, err);
        return -1;
      }
      t->attached = true;
      return 0;
    }
    if (!pa_test_alive(t->pid)) {
      fprintf(stderr, "launcher exited before ready:\n");
      lt_print_log(t);
      t->pid = -1;
      return -1;
    }
    usleep(5000);
  }
  fprintf(stderr, "no ready line within %d ms:\n", timeout_ms);
  lt_print_log(t);
  return -1;
}

int lt_start(lt_stack *t, const char *tag, const char *const *extra,
             int timeout_ms) {
  pa_test_instance(t->instance, sizeof t->instance, tag);
  return start(t, extra, timeout_ms);
}

int lt_start_named(lt_stack *t, const char *instance, const char *const *extra,
                   int timeout_ms) {
  snprintf(t->instance, sizeof t->instance, "%s", instance);
  pa_test_track_instance(instance);
  return start(t, extra, timeout_ms);
}

int lt_stop(lt_stack *t, int timeout_ms) {
  if (t->attached)
    pa_stack_detach(&t->s);
  t->attached = false;
  if (t->pid <= 0)
    return -1;
  int st = pa_test_stop(t->pid, SIGTERM, timeout_ms);
  t->pid = -1;
  if (st < 0)
    return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

bool lt_log_contains(const lt_stack *t, const char *needle) {
  return pa_test_file_contains(t->log, needle);
}

void lt_print_log(const lt_stack *t) { pa_test_dump_file(t->log); }

pid_t lt_pid(const lt_stack *t, int proc) {
  return t->attached ? (pid_t)__atomic_load_n(&t->s.ctl->health[proc].pid,
                                              __ATOMIC_ACQUIRE)
                     : 0;
}

bool lt_wait_new_pid(const lt_stack *t, int proc, pid_t old, int timeout_ms) {
  int64_t end = pa_test_now_ms() + timeout_ms;
  while (pa_test_now_ms() < end) {
    const pa_health *h = &t->s.ctl->health[proc];
    pid_t p = (pid_t)__atomic_load_n(&h->pid, __ATOMIC_ACQUIRE);
    if (p > 0 && p != old && __atomic_load_n(&h->ready, __ATOMIC_ACQUIRE))
      return true;
    usleep(2000);
  }
  return false;
}

bool lt_pid_gone(pid_t pid, int timeout_ms) {
  int64_t end = pa_test_now_ms() + timeout_ms;
  for (;;) {
    pa_proc_stat st;
    if (pa_proc_read_stat((int)pid, &st) != 0)
      return true;
    if (st.state == 'Z')
      return true; /* a zombie waiting for a slow init counts as gone */
    if (pa_test_now_ms() >= end)
      return false;
    usleep(2000);
  }
}

int lt_run_playarea(const char *const *args, const char *log, int timeout_ms) {
  char bin[512];
  pa_test_bin(bin, sizeof bin, "playarea");
  const char *argv[32];
  int k = 0;
  argv[k++] = bin;
  for (int i = 0; args[i] && k < 31; i++)
    argv[k++] = args[i];
  argv[k] = NULL;
  pid_t pid = pa_test_spawn((char *const *)argv, log);
  if (pid < 0)
    return -1;
  /* Waits, SIGKILLs after the timeout (then the status says SIGKILL). */
  int st = pa_test_stop(pid, 0, timeout_ms);
  if (st < 0)
    return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int lt_status(const lt_stack *t, char *text, size_t cap, int timeout_ms) {
  char log[512];
  snprintf(log, sizeof log, "%s/status-%s.log", pa_test_tmpdir(), t->instance);
  const char *args[] = {"status", "--instance", t->instance, NULL};
  int rc = lt_run_playarea(args, log, timeout_ms);
  if (rc < 0 || pa_test_read_file(log, text, cap) < 0)
    return -1;
  return rc;
}

static int send_setup(int fd, const char *cmds, uint16_t udp_port) {
  char sub[64];
  snprintf(sub, sizeof sub, "sub odom %u\n", udp_port);
  if (cmds && pa_test_send_str(fd, cmds) < 0)
    return -1;
  return pa_test_send_str(fd, sub);
}

int lt_odom_open(lt_odom *o, uint16_t tcp_port, const char *cmds) {
  o->udp = pa_test_udp_bind(&o->udp_port);
  o->tcp = pa_test_tcp_connect(tcp_port);
  if (o->udp < 0 || o->tcp < 0 || send_setup(o->tcp, cmds, o->udp_port) < 0)
    return -1;
  return 0;
}

int lt_odom_reconnect(lt_odom *o, uint16_t tcp_port, const char *cmds,
                      int timeout_ms) {
  if (o->tcp >= 0)
    close(o->tcp);
  o->tcp = -1;
  int64_t end = pa_test_now_ms() + timeout_ms;
  while (pa_test_now_ms() < end) {
    o->tcp = pa_test_tcp_connect(tcp_port);
    if (o->tcp >= 0)
      return send_setup(o->tcp, cmds, o->udp_port);
    usleep(5000);
  }
  return -1;
}

int lt_odom_recv(lt_odom *o, lt_odom_frame *f, int timeout_ms) {
  int64_t end = pa_test_now_ms() + timeout_ms;
  for (;;) {
    int64_t left = end - pa_test_now_ms();
    if (left < 0)
      return -1;
    uint8_t buf[2048];
    int n = pa_test_udp_recv(o->udp, buf, sizeof buf, (int)left);
    if (n < 0)
      return -1;
    if (pa_test_parse_odom(buf, n, f))
      return 0;
  }
}

int lt_odom_drain(lt_odom *o, lt_odom_frame *last) {
  int count = 0;
  uint8_t buf[2048];
  lt_odom_frame f;
  for (;;) {
    ssize_t n = recv(o->udp, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0)
      return count;
    if (pa_test_parse_odom(buf, (int)n, &f)) {
      *last = f;
      count++;
    }
  }
}

void lt_odom_close(lt_odom *o) {
  if (o->tcp >= 0)
    close(o->tcp);
  if (o->udp >= 0)
    close(o->udp);
  o->tcp = o->udp = -1;
}
