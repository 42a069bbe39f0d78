/* keep.c - the launcher holds pa-netgw's listeners across its restarts.
 *
 * pa-netgw hands each listener it binds to the launcher ("keep NAME" with
 * the fd, SCM_RIGHTS over a SOCK_SEQPACKET pair; "drop NAME" when it closes
 * one at run time). While pa-netgw is down the launcher's copies keep the
 * sockets open: a TCP client's connect completes into the backlog, a UDP
 * datagram waits in the socket's buffer, and no other process can bind the
 * port. The next pa-netgw inherits them (PA_NETGW_KEPT=name=fd,...) and
 * serves whatever waited (netgw/core/listen.c claims them). */
#define _GNU_SOURCE
#include "pa_launch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int pa_launch_keep_open(pa_launch_keep *k) {
  memset(k, 0, sizeof *k);
  k->sock = k->child = -1;
  for (unsigned i = 0; i < PA_PORTS_MAX; i++)
    k->held[i].fd = -1;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    pa_warn("cannot hold pa-netgw's ports across its restarts: socketpair: "
            "%s",
            strerror(errno));
    return -1;
  }
  fcntl(sv[0], F_SETFL, O_NONBLOCK);
  k->sock = sv[0];
  k->child = sv[1];
  return 0;
}

static bool good_name(const char *n) {
  size_t len = strlen(n);
  if (!len || len >= PA_PORT_NAME_MAX)
    return false;
  for (const char *p = n; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
      return false;
  return true;
}

static pa_launch_kept *find(pa_launch_keep *k, const char *name) {
  for (unsigned i = 0; i < PA_PORTS_MAX; i++)
    if (k->held[i].fd >= 0 && !strcmp(k->held[i].name, name))
      return &k->held[i];
  return NULL;
}

/* One message: a listener to hold (fd >= 0) or to let go. */
static void apply(pa_launch_keep *k, const char *msg, int fd) {
  bool keep = !strncmp(msg, "keep ", 5), drop = !strncmp(msg, "drop ", 5);
  const char *name = msg + 5;
  if ((!keep && !drop) || !good_name(name) || keep != (fd >= 0)) {
    pa_warn("pa-netgw's port message '%.40s' is not understood", msg);
    if (fd >= 0)
      close(fd);
    return;
  }
  pa_launch_kept *h = find(k, name);
  if (h) {
    close(h->fd);
    h->fd = -1;
  }
  if (drop)
    return;
  for (unsigned i = 0; i < PA_PORTS_MAX; i++)
    if (k->held[i].fd < 0) {
      snprintf(k->held[i].name, sizeof k->held[i].name, "%s", name);
      k->held[i].fd = fd;
      return;
    }
  pa_warn("no room to hold pa-netgw's port %s", name);
  close(fd);
}

void pa_launch_keep_drain(pa_launch_keep *k) {
  for (int n = 0; k->sock >= 0 && n < 256; n++) {
    char msg[64];
    union {
      struct cmsghdr h;
      char b[CMSG_SPACE(4 * sizeof(int))];
    } u;
    struct iovec iov = {.iov_base = msg, .iov_len = sizeof msg - 1};
    struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = u.b,
                        .msg_controllen = sizeof u.b};
    ssize_t r = recvmsg(k->sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (r < 0)
      return; /* EAGAIN: all read */
    msg[r] = 0;
    int fd = -1, extra = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
        continue;
      size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < nfd; i++) {
        int f;
        memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
        if (fd < 0)
          fd = f;
        else {
          close(f);
          extra++;
        }
      }
    }
    if (extra || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
      pa_warn("pa-netgw's port message '%.40s' is malformed", msg);
      if (fd >= 0)
        close(fd);
      continue;
    }
    apply(k, msg, fd);
  }
}

int pa_launch_keep_env(const pa_launch_keep *k, char *keep, size_t keep_sz,
                       char *kept, size_t kept_sz) {
  keep[0] = kept[0] = 0;
  if (k->child < 0)
    return 0;
  snprintf(keep, keep_sz, "%d", k->child);
  size_t at = 0;
  for (unsigned i = 0; i < PA_PORTS_MAX; i++) {
    if (k->held[i].fd < 0)
      continue;
    int n = snprintf(kept + at, kept_sz - at, "%s%s=%d", at ? "," : "",
                     k->held[i].name, k->held[i].fd);
    if (n < 0 || (size_t)n >= kept_sz - at)
      return -1;
    at += (size_t)n;
  }
  return 0;
}

void pa_launch_keep_child(const pa_launch_keep *k, const char *keep,
                          const char *kept) {
  if (k->child < 0)
    return;
  fcntl(k->child, F_SETFD, 0);
  for (unsigned i = 0; i < PA_PORTS_MAX; i++)
    if (k->held[i].fd >= 0)
      fcntl(k->held[i].fd, F_SETFD, 0);
  setenv("PA_NETGW_KEEP", keep, 1);
  setenv("PA_NETGW_KEPT", kept, 1);
}

unsigned pa_launch_keep_count(const pa_launch_keep *k) {
  unsigned n = 0;
  for (unsigned i = 0; i < PA_PORTS_MAX; i++)
    n += k->held[i].fd >= 0;
  return n;
}

void pa_launch_keep_release(pa_launch_keep *k) {
  for (unsigned i = 0; i < PA_PORTS_MAX; i++)
    if (k->held[i].fd >= 0) {
      close(k->held[i].fd);
      k->held[i].fd = -1;
    }
}

void pa_launch_keep_close(pa_launch_keep *k) {
  pa_launch_keep_release(k);
  if (k->sock >= 0)
    close(k->sock);
  if (k->child >= 0)
    close(k->child);
  k->sock = k->child = -1;
}
