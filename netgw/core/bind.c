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
