/* bind.c - listening sockets that walk to the next free port when the one
 * asked for is taken (as RaisimServer's setupSocket does), for --tcp_port
 * and any other listener of the gateway. */
#define _GNU_SOURCE
#include "netgw.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int pa_bind_listen(const char *addr, unsigned port, bool walk, int backlog,
                   const char *flag, unsigned *bound, char *err,
                   size_t err_sz) {
  struct sockaddr_in sin;
  memset(&sin, 0, sizeof sin);
  sin.sin_family = AF_INET;
  if (!addr || inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
    snprintf(err, err_sz, "--bind: '%s' is not an IPv4 address",
             addr ? addr : "(null)");
    return -1;
  }
  if (port > 65535) {
    snprintf(err, err_sz, "cannot listen on %s:%u: no such port (%s)", addr,
             port, flag);
    return -1;
  }
  /* Port 0 lets the kernel pick: nothing to walk. */
  unsigned tries = walk && port ? PA_PORT_WALK_MAX : 1;
  if (port + tries - 1 > 65535)
    tries = 65536 - port;
  int first_errno = 0;
  for (unsigned i = 0; i < tries; i++) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      snprintf(err, err_sz, "cannot listen on %s:%u: socket: %s (%s)", addr,
               port, strerror(errno), flag);
      return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sin.sin_port = htons((uint16_t)(port + i));
    if (bind(fd, (struct sockaddr *)&sin, sizeof sin) == 0 &&
        listen(fd, backlog) == 0) {
      struct sockaddr_in b;
      socklen_t bl = sizeof b;
      getsockname(fd, (struct sockaddr *)&b, &bl);
      *bound = ntohs(b.sin_port);
      return fd;
    }
    int e = errno;
    close(fd);
    if (!first_errno)
      first_errno = e;
    /* Only a taken port is worth walking past; EACCES etc. are not. */
    if (e != EADDRINUSE)
      break;
  }
  if (tries > 1 && first_errno == EADDRINUSE)
    snprintf(err, err_sz,
             "cannot listen on %s:%u: ports %u-%u all in use (%s, --bind)",
             addr, port, port, port + tries - 1, flag);
  else
    snprintf(err, err_sz, "cannot listen on %s:%u: %s (%s, --bind)", addr, port,
             strerror(first_errno), flag);
  errno = first_errno; /* the caller tells a taken port from other causes */
  return -1;
}

/* 1 when a process listens at addr, 0 when nobody does (a stale file). */
static int unix_live(const struct sockaddr_un *sun) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return 1; /* cannot tell: leave the file alone */
  int r = connect(fd, (const struct sockaddr *)sun, sizeof *sun);
  int e = errno;
  close(fd);
  return !(r != 0 && (e == ECONNREFUSED || e == ENOENT));
}

int pa_bind_unix(const char *path, const char *flag, char *err, size_t err_sz) {
  struct sockaddr_un sun;
  memset(&sun, 0, sizeof sun);
  sun.sun_family = AF_UNIX;
  if (!path || !path[0] || strlen(path) >= sizeof sun.sun_path) {
    snprintf(err, err_sz,
             "cannot listen on unix socket %s: the path is empty or longer "
             "than %zu bytes (%s)",
             path ? path : "(null)", sizeof sun.sun_path - 1, flag);
    errno = EINVAL;
    return -1;
  }
  memcpy(sun.sun_path, path, strlen(path) + 1);
  struct stat sb;
  if (lstat(path, &sb) == 0) {
    if (!S_ISSOCK(sb.st_mode) || unix_live(&sun)) {
      snprintf(err, err_sz, "cannot listen on unix socket %s: %s (%s)", path,
               S_ISSOCK(sb.st_mode) ? "a live process listens there"
                                    : "a file that is not a socket is there",
               flag);
      errno = EADDRINUSE;
      return -1;
    }
    unlink(path); /* a stopped process's socket */
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  mode_t old = umask(0177); /* created 0600: no window with wider rights */
  int r = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&sun, sizeof sun);
  umask(old);
  if (r != 0 || listen(fd, 128) != 0) {
    int e = errno;
    snprintf(err, err_sz, "cannot listen on unix socket %s: %s (%s)", path,
             strerror(e), flag);
    if (fd >= 0)
      close(fd);
    if (r == 0)
      unlink(path);
    errno = e;
    return -1;
  }
  return fd;
}

int pa_bind_udp(const char *addr, unsigned port, const char *flag,
                unsigned *bound, char *err, size_t err_sz) {
  struct sockaddr_in sin;
  memset(&sin, 0, sizeof sin);
  sin.sin_family = AF_INET;
  if (!addr || inet_pton(AF_INET, addr, &sin.sin_addr) != 1 || port > 65535) {
    snprintf(err, err_sz, "cannot listen on UDP %s:%u: bad address (%s)",
             addr ? addr : "(null)", port, flag);
    errno = EINVAL;
    return -1;
  }
  sin.sin_port = htons((uint16_t)port);
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
    int e = errno;
    snprintf(err, err_sz, "cannot listen on UDP %s:%u: %s (%s)", addr, port,
             strerror(e), flag);
    if (fd >= 0)
      close(fd);
    errno = e;
    return -1;
  }
  socklen_t l = sizeof sin;
  getsockname(fd, (struct sockaddr *)&sin, &l);
  *bound = ntohs(sin.sin_port);
  return fd;
}
