/* listen.c - every listener of every front-end is bound here, and its port
 * kept in the control block (pa_ctl.ports): a pa-netgw restarted after a
 * crash, a hang kill or `playarea restart netgw` binds exactly the ports
 * its predecessor had, so clients find the server where it was. A kept
 * port that another process took meanwhile is an error by name, not a
 * silent walk (a reconnecting client would send its token to a squatter),
 * unless walking was allowed and no client had connected yet. */
#define _GNU_SOURCE
#include "netgw_int.h"

#include "pa_util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
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
    int fd = bind_kind(addr, ls, kept, false, bound, err, err_sz);
    if (fd >= 0) {
      record(g, fe, ls->name, ls->kind, ls->port, *bound, true);
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
  return fd;
}

void pa_core_port_down(pa_netgw *g, const char *name) {
  pa_port_rec *r = find(g->ctl, name);
  if (r && r->up) {
    seq_begin(g->ctl);
    r->up = 0;
    seq_end(g->ctl);
  }
}

void pa_core_ports_down(pa_netgw *g) {
  for (unsigned i = 0; i < PA_PORTS_MAX; i++)
    if (g->ctl->ports[i].kind != PA_PORT_FREE)
      pa_core_port_down(g, g->ctl->ports[i].name);
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
