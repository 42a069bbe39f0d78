/* listen.c - every listener of every front-end is bound here, and its port
 * kept in the control block (pa_ctl.ports): a pa-netgw restarted after a
 * crash, a hang kill or `playarea restart netgw` binds exactly the ports
 * its predecessor had, so clients find the server where it was. A kept
 * port that another process took meanwhile is an error by name, not a
 * silent walk (a reconnecting client would send its token to a squatter),
 * unless walking was allowed and no client had connected yet.
 *
 * Under the launcher the ports cannot be taken at all: each listener's fd
 * is also handed to the launcher (SCM_RIGHTS over the SOCK_SEQPACKET pair
 * it names in PA_NETGW_KEEP), which holds it while pa-netgw is down (a TCP
 * client's connect completes into the backlog, a UDP datagram waits in the
 * socket's buffer, no other process can bind the port) and passes it to
 * the next pa-netgw (PA_NETGW_KEPT: name=fd,...). */
#define _GNU_SOURCE
#include "netgw_int.h"

#include "pa_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void seq_begin(pa_ctl *ctl) {
  __atomic_add_fetch(&ctl->ports_seq, 1, __ATOMIC_ACQ_REL);
}

static void seq_end(pa_ctl *ctl) {
  __atomic_add_fetch(&ctl->ports_seq, 1, __ATOMIC_RELEASE);
}

static pa_port_rec *find(pa_ctl *ctl, const char *name) {
  for (unsigned i = 0; i < PA_PORTS_MAX; i++)
    if (ctl->ports[i].kind != PA_PORT_FREE &&
        !strncmp(ctl->ports[i].name, name, PA_PORT_NAME_MAX))
      return &ctl->ports[i];
  return NULL;
}

static void record(pa_netgw *g, const char *fe, const char *name, int kind,
                   unsigned requested, unsigned port, bool up) {
  pa_ctl *ctl = g->ctl;
  pa_port_rec *r = find(ctl, name);
  for (unsigned i = 0; !r && i < PA_PORTS_MAX; i++)
    if (ctl->ports[i].kind == PA_PORT_FREE)
      r = &ctl->ports[i];
  if (!r) {
    pa_warn("no room to keep port %u (%s) across a restart", port, name);
    return;
  }
  seq_begin(ctl);
  snprintf(r->name, sizeof r->name, "%s", name);
  snprintf(r->frontend, sizeof r->frontend, "%s", fe);
  r->kind = (uint32_t)kind;
  r->requested = requested;
  r->port = port;
  r->up = up;
  seq_end(ctl);
}

/* An fd number from the environment that is an open socket (of type
 * want, 0 = any), else -1. */
static int env_socket(const char *v, int want) {
  char *end;
  long n = strtol(v, &end, 10);
  int type;
  socklen_t tl = sizeof type;
  if (end == v || (*end && *end != ',') || n < 3 || n > 1 << 20 ||
      getsockopt((int)n, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 ||
      (want && type != want))
    return -1;
  fcntl((int)n, F_SETFD, FD_CLOEXEC); /* not into a mesh decoder's exec */
  return (int)n;
}

void pa_core_keep_init(pa_netgw *g) {
  g->keep_sock = -1;
  for (unsigned i = 0; i < PA_PORTS_MAX; i++)
    g->handed[i].fd = -1;
  const char *ks = getenv("PA_NETGW_KEEP");
  if (ks)
    g->keep_sock = env_socket(ks, SOCK_SEQPACKET); /* the pair */
  const char *kept = getenv("PA_NETGW_KEPT");
  for (unsigned n = 0; kept && *kept && n < PA_PORTS_MAX;) {
    size_t len = strcspn(kept, "=");
    const char *num = kept[len] == '=' ? kept + len + 1 : NULL;
    int fd = num ? env_socket(num, 0) : -1;
    if (fd >= 0 && len < PA_PORT_NAME_MAX) {
      memcpy(g->handed[n].name, kept, len);
      g->handed[n].name[len] = 0;
      g->handed[n++].fd = fd;
    } else if (fd >= 0)
      close(fd);
    kept = strchr(kept, ',');
    kept = kept ? kept + 1 : NULL;
  }
  /* pa-netgw's own children (a mesh decoder) are not launched by it */
  unsetenv("PA_NETGW_KEEP");
  unsetenv("PA_NETGW_KEPT");
}

void pa_core_keep_free(pa_netgw *g) {
  for (unsigned i = 0; i < PA_PORTS_MAX; i++)
    if (g->handed[i].fd >= 0) {
      close(g->handed[i].fd);
      g->handed[i].fd = -1;
    }
  if (g->keep_sock >= 0)
    close(g->keep_sock);
  g->keep_sock = -1;
}

/* "keep NAME" with the listener's fd, or "drop NAME", to the launcher. */
static void tell_launcher(pa_netgw *g, const char *verb, const char *name,
                          int fd) {
  if (g->keep_sock < 0)
    return;
  char msg[8 + PA_PORT_NAME_MAX];
  int n = snprintf(msg, sizeof msg, "%s %s", verb, name);
  struct iovec iov = {.iov_base = msg, .iov_len = (size_t)n};
  union {
    struct cmsghdr h;
    char b[CMSG_SPACE(sizeof(int))];
  } u;
  memset(&u, 0, sizeof u);
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
  if (fd >= 0) {
    mh.msg_control = u.b;
    mh.msg_controllen = sizeof u.b;
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  if (sendmsg(g->keep_sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
    pa_warn("%s: the launcher cannot hold it across a restart (%s)", name,
            strerror(errno));
}

/* The listener the launcher held for ls since the last pa-netgw, when it is
 * still exactly that (kind, address, the kept port); else -1. */
static int claim_handed(pa_netgw *g, const pa_listen_spec *ls, const char *addr,
                        unsigned kept) {
  for (unsigned i = 0; i < PA_PORTS_MAX; i++) {
    if (g->handed[i].fd < 0 || strcmp(g->handed[i].name, ls->name))
      continue;
    int fd = g->handed[i].fd;
    g->handed[i].fd = -1;
    int type = 0, acc = 0;
    socklen_t tl = sizeof type, al = sizeof acc;
    struct sockaddr_in sin, want = {.sin_family = AF_INET};
    socklen_t sl = sizeof sin;
    bool tcp = ls->kind != PA_PORT_UDP;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 &&
        type == (tcp ? SOCK_STREAM : SOCK_DGRAM) &&
        (!tcp ||
         (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) == 0 && acc)) &&
        getsockname(fd, (struct sockaddr *)&sin, &sl) == 0 &&
        sin.sin_family == AF_INET && ntohs(sin.sin_port) == kept &&
        inet_pton(AF_INET, addr, &want.sin_addr) == 1 &&
        sin.sin_addr.s_addr == want.sin_addr.s_addr) {
      int fl = fcntl(fd, F_GETFL);
      fcntl(fd, F_SETFL, (fl < 0 ? 0 : fl) | O_NONBLOCK);
      return fd;
    }
    close(fd); /* not what this listener is now: the launcher lets go */
    tell_launcher(g, "drop", ls->name, -1);
    return -1;
  }
  return -1;
}

static int bind_kind(const char *addr, const pa_listen_spec *ls, unsigned port,
                     bool walk, unsigned *bound, char *err, size_t err_sz) {
  if (ls->kind == PA_PORT_UDP)
    return pa_bind_udp(addr, port, ls->flag, bound, err, err_sz);
  return pa_bind_listen(addr, port, walk, ls->backlog ? ls->backlog : 128,
                        ls->flag, bound, err, err_sz);
}

int pa_core_listen(pa_netgw *g, const char *fe, const pa_listen_spec *ls,
                   unsigned *bound, char *err, size_t err_sz) {
  const char *addr = g->def.bind ? g->def.bind : "127.0.0.1";
  if (ls->loopback_only)
    addr = "127.0.0.1";
  bool walk = ls->walk && !g->def.no_port_walk;
  pa_port_rec *r = find(g->ctl, ls->name);
  if (r && r->kind == (uint32_t)ls->kind && r->requested == ls->port &&
      r->port) {
    unsigned kept = r->port;
    int fd = claim_handed(g, ls, addr, kept);
    if (fd >= 0) {
      *bound = kept;
      record(g, fe, ls->name, ls->kind, ls->port, kept, true);
      pa_info("%s: %s:%u again (held by the launcher across the restart)",
              ls->name, addr, kept);
      return fd;
    }
    fd = bind_kind(addr, ls, kept, false, bound, err, err_sz);
    if (fd >= 0) {
      record(g, fe, ls->name, ls->kind, ls->port, *bound, true);
      tell_launcher(g, "keep", ls->name, fd);
      pa_info("%s: %s:%u again (kept across the restart)", ls->name, addr,
              kept);
      return fd;
    }
    if (errno != EADDRINUSE)
      return -1;
    bool seen = __atomic_load_n(&g->ctl->clients_seen, __ATOMIC_ACQUIRE);
    if (!walk || seen) {
      snprintf(err, err_sz,
               "cannot listen on %s:%u (%s): this stack's port before the "
               "restart is taken by another process; not moving to another "
               "(clients reconnect to %u)",
               addr, kept, ls->flag, kept);
      pa_error("%s", err);
      return PA_LISTEN_TAKEN;
    }
    pa_warn("%s: port %u of before the restart is taken and no client has "
            "connected yet: walking on",
            ls->name, kept);
  }
  int fd = bind_kind(addr, ls, ls->port, walk, bound, err, err_sz);
  if (fd < 0)
    return -1;
  if (ls->port && *bound != ls->port)
    pa_warn("%s: port %u is taken: listening on %u instead (--no_port_walk "
            "makes this an error)",
            fe, ls->port, *bound);
  record(g, fe, ls->name, ls->kind, ls->port, *bound, true);
  tell_launcher(g, "keep", ls->name, fd);
  return fd;
}

static void mark_down(pa_netgw *g, const char *name) {
  pa_port_rec *r = find(g->ctl, name);
  if (r && r->up) {
    seq_begin(g->ctl);
    r->up = 0;
    seq_end(g->ctl);
  }
}

void pa_core_port_down(pa_netgw *g, const char *name) {
  mark_down(g, name);
  tell_launcher(g, "drop", name, -1);
}

void pa_core_ports_down(pa_netgw *g) {
  for (unsigned i = 0; i < PA_PORTS_MAX; i++)
    if (g->ctl->ports[i].kind != PA_PORT_FREE)
      mark_down(g, g->ctl->ports[i].name);
}

unsigned pa_core_port(const pa_netgw *g, const char *name) {
  const pa_port_rec *r = find(g->ctl, name);
  return r && r->up ? r->port : 0;
}

unsigned pa_core_dest_recall(pa_netgw *g, const char *fe, const char *name,
                             unsigned port) {
  pa_port_rec *r = find(g->ctl, name);
  unsigned keep =
      r && r->kind == PA_PORT_DEST && r->requested == port && r->port ? r->port
                                                                      : port;
  record(g, fe, name, PA_PORT_DEST, port, keep, true);
  return keep;
}

void pa_core_dest_set(pa_netgw *g, const char *fe, const char *name,
                      unsigned port) {
  pa_port_rec *r = find(g->ctl, name);
  record(g, fe, name, PA_PORT_DEST, r ? r->requested : port, port, true);
}

void pa_core_client_seen(pa_netgw *g) {
  if (!__atomic_load_n(&g->ctl->clients_seen, __ATOMIC_RELAXED))
    __atomic_store_n(&g->ctl->clients_seen, 1, __ATOMIC_RELEASE);
}
