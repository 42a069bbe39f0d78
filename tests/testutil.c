/* testutil.c - see testutil.h. */
#define _GNU_SOURCE
#include "testutil.h"

#include "pa_shm.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_TRACK 64

static char tracked[MAX_TRACK][PA_SHM_INSTANCE_MAX];
static int n_tracked;
static pid_t children[MAX_TRACK];
static int n_children;
static char tmpdir[256];
static bool cleanup_installed;
static pid_t owner_pid;

static int rm_entry(const char *path, const struct stat *sb, int flag,
                    struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

static void cleanup(void) {
  if (getpid() != owner_pid)
    return; /* a forked child exiting must not tear down the parent's world */
  for (int i = 0; i < n_children; i++)
    if (children[i] > 0 && kill(children[i], 0) == 0) {
      kill(children[i], SIGKILL);
      waitpid(children[i], NULL, 0);
    }
  for (int i = 0; i < n_tracked; i++)
    pa_stack_unlink(tracked[i]);
  if (tmpdir[0])
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void on_fatal(int sig) {
  cleanup();
  signal(sig, SIG_DFL);
  raise(sig);
}

static void install_cleanup(void) {
  if (cleanup_installed)
    return;
  cleanup_installed = true;
  owner_pid = getpid();
  atexit(cleanup);
  signal(SIGTERM, on_fatal);
  signal(SIGINT, on_fatal);
  signal(SIGPIPE, SIG_IGN);
}

pa_stack_def pa_test_stack_def(char *inst, size_t n, const char *tag) {
  pa_test_instance(inst, n, tag);
  pa_stack_def d = pa_stack_def_default();
  snprintf(d.instance, sizeof d.instance, "%s", inst);
  return d;
}

void pa_test_track_instance(const char *instance) {
  install_cleanup();
  for (int i = 0; i < n_tracked; i++)
    if (!strcmp(tracked[i], instance))
      return;
  if (n_tracked < MAX_TRACK)
    snprintf(tracked[n_tracked++], PA_SHM_INSTANCE_MAX, "%s", instance);
}

void pa_test_instance(char *out, size_t n, const char *tag) {
  static int counter;
  snprintf(out, n, "t%d-%s-%d", (int)getpid(), tag, counter++);
  pa_test_track_instance(out);
}

void pa_test_bin(char *out, size_t n, const char *name) {
  const char *dir = getenv("PA_BIN_DIR");
  snprintf(out, n, "%s/%s", dir ? dir : ".", name);
}

void pa_test_src(char *out, size_t n, const char *rel) {
  const char *dir = getenv("PA_SOURCE_DIR");
  snprintf(out, n, "%s/%s", dir ? dir : ".", rel);
}

const char *pa_test_tmpdir(void) {
  install_cleanup();
  if (!tmpdir[0]) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/pa-test-XXXXXX");
    if (!mkdtemp(tmpdir)) {
      tmpdir[0] = '\0';
      return "/tmp";
    }
  }
  return tmpdir;
}

pid_t pa_test_spawn(char *const argv[], const char *log_path) {
  install_cleanup();
  /* Marks what tests start (tests/run.sh ends only processes with its
   * marker); a test run by hand marks its own children. */
  if (!getenv("PA_TEST_RUN")) {
    char id[32];
    snprintf(id, sizeof id, "t%d", (int)getpid());
    setenv("PA_TEST_RUN", id, 0);
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(127);
    if (log_path) {
      int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
      }
    }
    execv(argv[0], argv);
    fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  if (n_children < MAX_TRACK)
    children[n_children++] = pid;
  return pid;
}

int pa_test_stop(pid_t pid, int sig, int timeout_ms) {
  if (pid <= 0)
    return -1;
  if (sig)
    kill(pid, sig);
  int status;
  int64_t end = pa_test_now_ms() + timeout_ms;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      break;
    if (r < 0)
      return -1;
    if (pa_test_now_ms() >= end) {
      kill(pid, SIGKILL);
      if (waitpid(pid, &status, 0) != pid)
        return -1;
      break;
    }
    usleep(1000);
  }
  for (int i = 0; i < n_children; i++)
    if (children[i] == pid)
      children[i] = 0;
  return status;
}

bool pa_test_alive(pid_t pid) {
  int status;
  pid_t r = waitpid(pid, &status, WNOHANG);
  if (r == 0)
    return true;
  if (r == pid)
    for (int i = 0; i < n_children; i++)
      if (children[i] == pid)
        children[i] = 0;
  return r == 0 || (r < 0 && errno == ECHILD && kill(pid, 0) == 0);
}

int64_t pa_test_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool pa_test_wait_for(bool (*cond)(void *), void *arg, int timeout_ms) {
  int64_t end = pa_test_now_ms() + timeout_ms;
  for (;;) {
    if (cond(arg))
      return true;
    if (pa_test_now_ms() >= end)
      return cond(arg);
    usleep(2000);
  }
}

int pa_test_udp_bind(uint16_t *port) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  int buf = 4 << 20; /* camera frames arrive in bursts */
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
      getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
    close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

int pa_test_udp_recv(int fd, void *buf, size_t n, int timeout_ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  if (poll(&p, 1, timeout_ms) <= 0)
    return -1;
  return (int)recv(fd, buf, n, 0);
}

int pa_test_tcp_connect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons(port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int pa_test_send_str(int fd, const char *s) {
  size_t len = strlen(s), off = 0;
  while (off < len) {
    ssize_t w = send(fd, s + off, len - off, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    off += (size_t)w;
  }
  return 0;
}

/* Per-fd read-ahead so a line reader never loses bytes after a newline. */
#define LINEBUF_FDS 256
static struct {
  char *buf;
  size_t len, cap;
} linebuf[LINEBUF_FDS];

int pa_test_read_line(int fd, char *out, size_t n, int timeout_ms) {
  if (fd < 0 || fd >= LINEBUF_FDS || n == 0)
    return -1;
  int64_t end = pa_test_now_ms() + timeout_ms;
  for (;;) {
    char *nl = linebuf[fd].len ? memchr(linebuf[fd].buf, '\n', linebuf[fd].len)
                               : NULL;
    if (nl) {
      size_t line = (size_t)(nl - linebuf[fd].buf);
      size_t copy = line < n - 1 ? line : n - 1;
      memcpy(out, linebuf[fd].buf, copy);
      out[copy] = '\0';
      if (copy && out[copy - 1] == '\r')
        out[--copy] = '\0';
      memmove(linebuf[fd].buf, nl + 1, linebuf[fd].len - line - 1);
      linebuf[fd].len -= line + 1;
      return (int)copy;
    }
    int64_t left = end - pa_test_now_ms();
    if (left <= 0)
      return -1;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, (int)left) <= 0)
      return -1;
    if (linebuf[fd].cap - linebuf[fd].len < 65536) {
      size_t cap = linebuf[fd].cap ? linebuf[fd].cap * 2 : 131072;
      char *nb = realloc(linebuf[fd].buf, cap);
      if (!nb)
        return -1;
      linebuf[fd].buf = nb;
      linebuf[fd].cap = cap;
    }
    ssize_t r = recv(fd, linebuf[fd].buf + linebuf[fd].len,
                     linebuf[fd].cap - linebuf[fd].len, 0);
    if (r <= 0) {
      linebuf[fd].len = 0; /* peer closed: drop what was half read */
      return -1;
    }
    linebuf[fd].len += (size_t)r;
  }
}

bool pa_test_ping(uint16_t port, int timeout_ms) {
  int fd = pa_test_tcp_connect(port);
  if (fd < 0)
    return false;
  char line[64];
  bool ok = pa_test_send_str(fd, "ping\n") == 0 &&
            pa_test_read_line(fd, line, sizeof line, timeout_ms) >= 0 &&
            strcmp(line, "pong") == 0;
  close(fd);
  return ok;
}

long pa_test_read_file(const char *path, char *buf, size_t n) {
  if (n == 0)
    return -1;
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t got = fread(buf, 1, n - 1, f);
  buf[got] = '\0';
  fclose(f);
  return (long)got;
}

void pa_test_dump_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return;
  char line[2048];
  while (fgets(line, sizeof line, f))
    fprintf(stderr, "  | %s", line);
  fclose(f);
}

bool pa_test_file_contains(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  if (!f)
    return false;
  char line[2048];
  bool found = false;
  while (!found && fgets(line, sizeof line, f))
    found = strstr(line, needle) != NULL;
  fclose(f);
  return found;
}

/* The entries of /proc/PID/<what> (not . and ..) for which each(dir, name,
 * arg) is true (each NULL: all), or -1 when there is no such directory. */
static int proc_entries(pid_t pid, const char *what,
                        bool (*each)(const char *dir, const char *name,
                                     void *arg),
                        void *arg) {
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%d/%s", (int)pid, what);
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.')
      n += !each || each(dir, e->d_name, arg);
  closedir(d);
  return n;
}

int pa_test_fd_count(pid_t pid) {
  int n = proc_entries(pid, "fd", NULL, NULL);
  return n >= 0 && pid == getpid() ? n - 1 : n; /* our own opendir fd */
}

typedef struct {
  bool (*pick)(pid_t tid, const char *comm, void *arg);
  void *arg;
} thread_pick;

/* A thread of /proc/PID/task by its comm, through thread_pick arg. */
static bool task_picked(const char *dir, const char *name, void *arg) {
  const thread_pick *t = arg;
  char path[400], comm[64] = "";
  snprintf(path, sizeof path, "%s/%s/comm", dir, name);
  FILE *f = fopen(path, "r");
  if (f) {
    if (!fgets(comm, sizeof comm, f))
      comm[0] = 0;
    fclose(f);
  }
  return !t->pick || t->pick((pid_t)atoi(name), comm, t->arg);
}

int pa_test_thread_count(pid_t pid,
                         bool (*pick)(pid_t tid, const char *comm, void *arg),
                         void *arg) {
  thread_pick t = {pick, arg};
  return proc_entries(pid, "task", task_picked, &t);
}

int pa_test_open_seg(const char *instance, const char *seg, size_t *size) {
  char path[256];
  snprintf(path, sizeof path, "/dev/shm/playarea.%s.%s", instance, seg);
  int fd = open(path, O_RDWR);
  struct stat sb;
  if (fd >= 0 && fstat(fd, &sb) != 0) {
    close(fd);
    fd = -1;
  }
  if (fd >= 0)
    *size = (size_t)sb.st_size;
  return fd;
}

int pa_test_shm_count(const char *instance) {
  char prefix[128];
  snprintf(prefix, sizeof prefix, "playarea.%s.", instance);
  DIR *d = opendir("/dev/shm");
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (!strncmp(e->d_name, prefix, strlen(prefix)))
      n++;
  closedir(d);
  return n;
}

static uint8_t pattern_byte(uint64_t seq, uint32_t i) {
  return (uint8_t)(seq * 131u + i);
}

void pa_test_fill(uint8_t *p, uint32_t len, uint64_t seq) {
  for (uint32_t i = 0; i < len; i++)
    p[i] = pattern_byte(seq, i);
}

bool pa_test_check(const uint8_t *p, uint32_t len, uint64_t seq) {
  for (uint32_t i = 0; i < len; i++)
    if (p[i] != pattern_byte(seq, i))
      return false;
  return true;
}

/* Little-endian fields of the frame layouts (the tests run little-endian,
 * as the protocol does). */
static uint16_t rd16(const uint8_t *p) {
  uint16_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

static uint32_t rd32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

bool pa_test_parse_odom(const void *buf, int n, pa_test_odom *o) {
  const uint8_t *b = buf;
  if (n != 36 || memcmp(b, "ODM1", 4) != 0)
    return false;
  o->seq = rd32(b + 4);
  memcpy(&o->t, b + 8, 8);
  float *pose[] = {&o->x, &o->y, &o->theta, &o->v, &o->w};
  for (int i = 0; i < 5; i++)
    memcpy(pose[i], b + 16 + 4 * i, 4);
  return true;
}

bool pa_test_parse_cam(const void *buf, int n, pa_test_cam_chunk *c) {
  const uint8_t *b = buf;
  if (n < 24 || memcmp(b, "CAM1", 4) != 0)
    return false;
  *c = (pa_test_cam_chunk){.seq = rd32(b + 4),
                           .w = rd16(b + 8),
                           .h = rd16(b + 10),
                           .size = rd32(b + 12),
                           .off = rd32(b + 16),
                           .idx = rd16(b + 20),
                           .cnt = rd16(b + 22)};
  return true;
}

int pa_test_viewer_shot(const char *instance, const char *tag, int w, int h,
                        char *png, size_t png_cap) {
  char bin[512], log[512], ws[16], hs[16];
  pa_test_bin(bin, sizeof bin, "pa-render");
  snprintf(log, sizeof log, "%s/viewer-%s.log", pa_test_tmpdir(), tag);
  snprintf(png, png_cap, "%s/shot-%s.png", pa_test_tmpdir(), tag);
  snprintf(ws, sizeof ws, "%d", w);
  snprintf(hs, sizeof hs, "%d", h);
  /* timeout(1) guarantees pa-render ends, so xvfb-run stops its Xvfb. */
  char *argv[] = {"/usr/bin/xvfb-run",
                  "-a",
                  "/usr/bin/timeout",
                  "60",
                  bin,
                  "--viewer",
                  "--instance",
                  (char *)instance,
                  "--viewer_width",
                  ws,
                  "--viewer_height",
                  hs,
                  "--screenshot",
                  png,
                  "--exit_after_screenshot",
                  NULL};
  pid_t pid = pa_test_spawn(argv, log);
  if (pid < 0)
    return -1;
  int st = pa_test_stop(pid, 0, 90000);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    pa_test_dump_file(log);
    return -1;
  }
  return 0;
}
