/* player.c - the Player front-end's row and connections: Player 3.x
 * clients (libplayerc, libplayerc++) on TCP 6665. On accept the 32-byte
 * greeting; then 40-byte headers and XDR bodies both ways. The player
 * device (interface 1) answers subscriptions, the device list, driver
 * names, data modes and the token (AUTH); the other devices are
 * player_dev.c's. Data goes out as it comes (PUSH) or per REQ_DATA, then a
 * SYNCH (PULL), the newest of each device only (Player's replace rule). */
#define _GNU_SOURCE
#include "player_int.h"

#include "pa_util.h"

#include <event2/buffer.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char greeting[] = "Player v.3.1.0"; /* NUL-padded to 32 */

/* ---- sending --------------------------------------------------------- */

void pl_send(pl_conn *c, uint32_t interf, uint32_t index, uint32_t type,
             uint32_t subtype, double ts) {
  pa_player *p = c->p;
  struct evbuffer *out = bufferevent_get_output(c->bev);
  if (p->out.bad || evbuffer_get_length(out) + p->out.n > PL_OUT_MAX) {
    if (!c->kill)
      pa_warn("player: client %u: %zu bytes unread, disconnected", c->slot,
              evbuffer_get_length(out));
    p->cut++;
    c->kill = true;
    p->out.n = 0;
    p->out.bad = false;
    return;
  }
  pl_hdr h = {.interf = interf,
              .index = index,
              .type = type,
              .subtype = subtype,
              .timestamp = ts,
              .size = (uint32_t)p->out.n};
  uint8_t hb[PL_HDR];
  pl_hdr_encode(hb, &h);
  evbuffer_add(out, hb, sizeof hb);
  if (p->out.n)
    evbuffer_add(out, p->out.p, p->out.n);
  p->out.n = 0;
}

double pl_now(pa_player *p) {
  pa_tick t;
  return pa_gw_latest_header(p->g, &t) ? t.sim_time : 0;
}

void pl_ack(pl_conn *c, const pl_msg *m) {
  pl_send(c, m->h.interf, m->h.index, PL_ACK, m->h.subtype, pl_now(c->p));
}

void pl_nack(pl_conn *c, const pl_msg *m, const char *fmt, ...) {
  char why[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  const char *in = pa_player_interf_name(m->h.interf);
  pa_info("player: client %u: NACK %s:%u type %u subtype %u: %s", c->slot,
          in ? in : "?", m->h.index, m->h.type, m->h.subtype, why);
  c->p->nacks++;
  c->p->out.n = 0;
  pl_send(c, m->h.interf, m->h.index, PL_NACK, m->h.subtype, pl_now(c->p));
}

pl_sub *pl_find_sub(pl_conn *c, uint32_t interf, uint32_t index) {
  for (uint32_t i = 0; i < c->n_subs; i++)
    if (c->subs[i].interf == interf && c->subs[i].index == index)
      return &c->subs[i];
  return NULL;
}

/* ---- connections ----------------------------------------------------- */

static void conn_free(pl_conn *c) {
  pa_player *p = c->p;
  for (uint32_t i = 0; i < c->n_subs; i++)
    pl_dev_sub(p, &c->subs[i], -1);
  p->conns[c->slot] = NULL;
  bufferevent_free(c->bev);
  free(c);
}

pl_conn *pl_conn_of(pa_player *p, uint64_t tag) {
  uint32_t slot = (uint32_t)tag, gen = (uint32_t)(tag >> 32);
  if (!p || slot >= PL_MAX_CONNS || !p->conns[slot] ||
      p->conns[slot]->gen != gen)
    return NULL;
  return p->conns[slot];
}

int pl_ask(pl_conn *c, pa_cmd *cmd, pa_ask_done done, const pl_msg *m) {
  char err[160];
  uint64_t tag = (uint64_t)c->gen << 32 | c->slot;
  /* no arg: the answer finds the front-end through g (gone after stop, when
   * the core answers what still waits with busy) */
  if (pa_core_ask(c->p->g, PA_LIM_SRC_CLIENT, cmd, 1, PL_ASK_MS, done, NULL,
                  tag, err, sizeof err) != 0) {
    pl_nack(c, m, "%s", err);
    return -1;
  }
  c->pend = *m;
  c->waiting = true;
  return 0;
}

/* Data for c now: PUSH sends what is new, PULL only after a REQ_DATA, and
 * then ends the round with a SYNCH. */
static void deliver(pl_conn *c, const pa_tick *t) {
  if (c->pull && !c->requested)
    return;
  bool any = false;
  for (uint32_t i = 0; i < c->n_subs && !c->kill; i++)
    any |= pl_dev_data(c, &c->subs[i], t);
  if (any && c->pull && !c->kill) {
    c->p->out.n = 0;
    pl_send(c, PL_I_PLAYER, 0, PL_SYNCH, 1, t ? t->sim_time : 0);
    c->requested = false;
  }
}

static bool has_data_subs(const pl_conn *c) {
  for (uint32_t i = 0; i < c->n_subs; i++)
    if (c->subs[i].interf != PL_I_SIMULATION && c->subs[i].interf != PL_I_MAP)
      return true;
  return false;
}

/* Whether c takes data now (PUSH, or PULL with a REQ_DATA waiting). */
static bool takes_data(const pl_conn *c) {
  return !c->closing && has_data_subs(c) && (!c->pull || c->requested);
}

static void deliver_all(pa_player *p, const pa_tick *t) {
  for (uint32_t i = 0; i < PL_MAX_CONNS; i++) {
    pl_conn *c = p->conns[i];
    if (!c || !takes_data(c))
      continue;
    deliver(c, t);
    if (c->kill)
      conn_free(c);
  }
}

/* Every tick since the last poll, in order, from the state ring: a late
 * wake-up still gives a PUSH client each tick's position2d data (at most
 * PL_TICKS_PER_POLL a poll; a lapped cursor goes on from the oldest kept). */
static void on_poll(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  pa_player *p = arg;
  const pa_ring *ring = p->g->st->state;
  bool images = false;
  if (p->cam_subs) {
    uint64_t before = p->cam_cur.next;
    pl_dev_cam_take(p);
    images = p->cam_cur.next != before;
  }
  bool any = false;
  for (uint32_t i = 0; i < PL_MAX_CONNS && !any; i++)
    any = p->conns[i] && takes_data(p->conns[i]);
  if (!any) {
    p->state_cur = pa_ring_cursor_now(ring); /* nobody waits: no backlog */
    return;
  }
  uint32_t len, n = 0;
  while (
      n < PL_TICKS_PER_POLL &&
      pa_gw_ring_next(ring, &p->state_cur, p->state_buf, p->state_cap, &len)) {
    const pa_tick *t = (const pa_tick *)p->state_buf;
    if (len < sizeof *t ||
        sizeof *t + (uint64_t)t->robot_count * sizeof(pa_robot_state) > len)
      continue;
    n++;
    deliver_all(p, t);
  }
  if (!n && images) /* an image between ticks */
    deliver_all(p, pa_gw_latest(p->g));
}

/* ---- the player device ----------------------------------------------- */

static void sub_reply(pl_conn *c, const pl_msg *m, uint32_t access) {
  pl_wr *w = &c->p->out;
  for (int i = 0; i < 4; i++)
    pl_wr_u32(w, m->u[i]);
  pl_wr_u32(w, access);
  pl_wr_bytes(w, PL_DRIVER, sizeof PL_DRIVER); /* with its NUL */
  pl_ack(c, m);
}

static void player_dev_req(pl_conn *c, const pl_msg *m) {
  uint32_t interf = m->u[2], index = m->u[3];
  const char *in = pa_player_interf_name(interf);
  if (m->u[4] == PL_CLOSE) {
    pl_sub *s = pl_find_sub(c, interf, index);
    if (s) {
      pl_dev_sub(c->p, s, -1);
      *s = c->subs[--c->n_subs];
    }
    sub_reply(c, m, PL_CLOSE);
    return;
  }
  if (m->u[4] != PL_OPEN) {
    pl_nack(c, m, "access mode %u (1 open, 2 close)", m->u[4]);
    return;
  }
  if (!pl_dev_exists(c->p, interf, index)) {
    pl_nack(c, m, "no device %s:%u", in ? in : "(unknown interface)", index);
    return;
  }
  if (!pl_find_sub(c, interf, index)) {
    if (c->n_subs == PL_MAX_SUBS) {
      pl_nack(c, m, "%u subscriptions already", PL_MAX_SUBS);
      return;
    }
    c->subs[c->n_subs++] =
        (pl_sub){(uint16_t)interf, (uint16_t)index, false, 0};
    pl_dev_sub(c->p, &c->subs[c->n_subs - 1], +1);
  }
  sub_reply(c, m, PL_OPEN);
}

static void player_req(pl_conn *c, const pl_msg *m) {
  pa_player *p = c->p;
  switch (m->h.subtype) {
  case PL_P_DEVLIST:
    pl_dev_list(p);
    pl_ack(c, m);
    return;
  case PL_P_DRIVERINFO:
    if (!pl_dev_exists(p, m->u[2], m->u[3])) {
      pl_nack(c, m, "no device %u:%u", m->u[2], m->u[3]);
      return;
    }
    for (int i = 0; i < 4; i++)
      pl_wr_u32(&p->out, m->u[i]);
    pl_wr_bytes(&p->out, PL_DRIVER, sizeof PL_DRIVER);
    pl_ack(c, m);
    return;
  case PL_P_DEV:
    player_dev_req(c, m);
    return;
  case PL_P_DATA:
    pl_ack(c, m);
    if (c->pull) {
      c->requested = true;
      deliver(c, pa_gw_latest(p->g));
    }
    return;
  case PL_P_DATAMODE:
    if (m->u[0] != PL_PUSH && m->u[0] != PL_PULL) {
      pl_nack(c, m, "data mode %u (1 PUSH, 2 PULL)", m->u[0]);
      return;
    }
    c->pull = m->u[0] == PL_PULL;
    c->requested = false;
    pl_ack(c, m);
    return;
  case PL_P_AUTH:
    pl_ack(c, m); /* authenticated already (or no --token) */
    return;
  case PL_P_REPLACE_RULE:
    pl_ack(c, m); /* data is always replaced by the newest */
    return;
  default:
    pl_nack(c, m, "player request %u is not served", m->h.subtype);
  }
}

/* The first message with --token must be AUTH with it; anything else
 * closes the connection (Player's own rule). */
static bool auth_first(pl_conn *c, const pl_msg *m, int rc) {
  if (rc == 0 && m->h.interf == PL_I_PLAYER && m->h.type == PL_REQ &&
      m->h.subtype == PL_P_AUTH) {
    char key[sizeof m->value];
    memcpy(key, m->value, m->value_len);
    key[m->value_len] = '\0';
    if (pa_gw_token_ok(c->p->g, key)) {
      c->authed = true;
      pl_ack(c, m);
      return true;
    }
  }
  pa_warn("player: client %u: %s, closed", c->slot,
          rc == 0 && m->h.subtype == PL_P_AUTH && m->h.interf == PL_I_PLAYER
              ? "wrong token in AUTH"
              : "the first message must be AUTH with the token");
  c->kill = true;
  return false;
}

static void dispatch(pl_conn *c, const pl_msg *m, int rc, const char *err) {
  c->p->msgs++;
  if (c->p->g->token[0] && !c->authed) {
    auth_first(c, m, rc);
    return;
  }
  if (rc != 0) {
    pl_nack(c, m, "%s", err);
    return;
  }
  if (m->h.interf == PL_I_PLAYER) {
    if (m->h.index != 0)
      pl_nack(c, m, "no device player:%u (only player:0)", m->h.index);
    else
      player_req(c, m);
    return;
  }
  if (!pl_find_sub(c, m->h.interf, m->h.index)) {
    pl_nack(c, m, "%s:%u is not subscribed", pa_player_interf_name(m->h.interf),
            m->h.index);
    return;
  }
  pl_dev_message(c, m);
}

/* Reads whole messages while no request waits for pa-sim. */
static void process(pl_conn *c) {
  struct evbuffer *in = bufferevent_get_input(c->bev);
  while (!c->waiting && !c->kill && !c->closing) {
    size_t have = evbuffer_get_length(in);
    uint8_t hb[PL_HDR];
    if (have < PL_HDR)
      break;
    evbuffer_copyout(in, hb, sizeof hb);
    pl_hdr h;
    pl_hdr_decode(hb, &h);
    if (h.size > PL_MAX_BODY) {
      pa_warn("player: client %u: a message body of %u bytes (at most %u), "
              "closed",
              c->slot, h.size, PL_MAX_BODY);
      c->kill = true;
      break;
    }
    if (have < PL_HDR + (size_t)h.size)
      break;
    const uint8_t *all = evbuffer_pullup(in, PL_HDR + (ssize_t)h.size);
    pl_msg m;
    char err[256];
    int rc = pa_player_decode(&h, all + PL_HDR, &m, err, sizeof err);
    evbuffer_drain(in, PL_HDR + (size_t)h.size);
    dispatch(c, &m, rc, err);
  }
  /* a message left half-sent starts the idle clock (--idle_timeout_ms) */
  if (!evbuffer_get_length(in))
    c->partial_ns = 0;
  else if (!c->partial_ns)
    c->partial_ns = pa_now_ns();
  if (c->kill)
    conn_free(c);
}

void pl_resume(pl_conn *c) {
  c->waiting = false;
  process(c);
}

static void on_read(struct bufferevent *bev, void *arg) {
  (void)bev;
  process(arg);
}

static void on_write(struct bufferevent *bev, void *arg) {
  pl_conn *c = arg;
  if (c->closing && !evbuffer_get_length(bufferevent_get_output(bev)))
    conn_free(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg) {
  (void)bev;
  pl_conn *c = arg;
  if (what & BEV_EVENT_EOF) {
    const char *rest = evbuffer_get_length(bufferevent_get_input(c->bev))
                           ? " (a truncated message left unread)"
                           : "";
    pa_info("player: client %u closed%s", c->slot, rest);
  }
  if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
    conn_free(c);
}

/* A free slot for a client from addr, or PL_MAX_CONNS (counted) when every
 * slot is taken or addr holds --max_clients_per_peer connections. */
static uint32_t free_slot(pa_player *p, uint32_t addr) {
  uint32_t slot = PL_MAX_CONNS, same = 0, cap = p->g->def.max_clients_per_peer;
  for (uint32_t i = 0; i < PL_MAX_CONNS; i++) {
    if (!p->conns[i])
      slot = slot < i ? slot : i;
    else
      same += p->conns[i]->addr == addr;
  }
  if (cap && same >= cap) {
    pa_warn("player: %u connections from that address already (--max_"
            "clients_per_peer), refused",
            same);
    pa_lim_count(p->g, PA_LIM_PEER_CAP);
    return PL_MAX_CONNS;
  }
  if (slot == PL_MAX_CONNS) {
    pa_warn("player: %d clients connected already, refused", PL_MAX_CONNS);
    pa_lim_count(p->g, PA_LIM_SLOTS);
  }
  return slot;
}

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd,
                      struct sockaddr *sa, int salen, void *arg) {
  (void)lis;
  pa_player *p = arg;
  uint32_t addr = 0;
  if (sa->sa_family == AF_INET && salen >= (int)sizeof(struct sockaddr_in))
    addr = ((const struct sockaddr_in *)sa)->sin_addr.s_addr;
  uint32_t slot = free_slot(p, addr);
  pl_conn *c = slot < PL_MAX_CONNS ? calloc(1, sizeof *c) : NULL;
  if (!c) {
    evutil_closesocket(fd);
    return;
  }
  c->addr = addr;
  c->connected_ns = pa_now_ns();
  /* an ACK now and the data at the next tick: Nagle would hold the data
   * for the client's delayed ACK (~40 ms a PULL round) */
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c->p = p;
  c->slot = slot;
  c->gen = ++p->gens;
  c->bev = bufferevent_socket_new(p->g->base, fd, BEV_OPT_CLOSE_ON_FREE);
  if (!c->bev) {
    evutil_closesocket(fd);
    free(c);
    return;
  }
  p->conns[slot] = c;
  pa_core_client_seen(p->g);
  bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
  bufferevent_enable(c->bev, EV_READ | EV_WRITE);
  char id[PL_IDENT_LEN] = {0}; /* one write: libplayerc reads it at once */
  memcpy(id, greeting, sizeof greeting);
  bufferevent_write(c->bev, id, sizeof id);
}

/* ---- the row --------------------------------------------------------- */

/* Every health period: a connection that leaves a message half-sent, or
 * (with --token) does not authenticate, for --idle_timeout_ms is closed. */
static void player_poll(pa_netgw *g) {
  pa_player *p = g->player;
  int64_t lim = (int64_t)g->def.idle_timeout_ms * 1000000, now = pa_now_ns();
  for (uint32_t i = 0; p && lim && i < PL_MAX_CONNS; i++) {
    pl_conn *c = p->conns[i];
    if (!c)
      continue;
    bool partial = c->partial_ns && now - c->partial_ns > lim;
    bool unauthed = g->token[0] && !c->authed && now - c->connected_ns > lim;
    if (!partial && !unauthed)
      continue;
    pa_info("player: client %u: %s for %u ms, closed", c->slot,
            partial ? "a message left unfinished" : "no AUTH",
            g->def.idle_timeout_ms);
    pa_lim_count(g, PA_LIM_IDLE);
    conn_free(c);
  }
}

static void player_stop(pa_netgw *g) {
  pa_player *p = g->player;
  if (!p)
    return;
  for (uint32_t i = 0; i < PL_MAX_CONNS; i++)
    if (p->conns[i])
      conn_free(p->conns[i]);
  if (p->lis)
    evconnlistener_free(p->lis);
  if (p->poll_ev)
    event_free(p->poll_ev);
  pl_wr_free(&p->out);
  free(p->odom);
  free(p->motor_off);
  for (uint32_t i = 0; p->cam && i < g->ctl->def.max_robots; i++)
    free(p->cam[i]);
  free(p->cam);
  free(p->cam_buf);
  free(p->state_buf);
  free(p);
  g->player = NULL;
}

static int player_start(pa_netgw *g, char *err, size_t err_sz) {
  pa_player *p = calloc(1, sizeof *p);
  uint32_t nr = g->ctl->def.max_robots;
  if (p) {
    g->player = p;
    p->g = g;
    p->odom = calloc(nr ? nr : 1, sizeof *p->odom);
    p->motor_off = calloc(nr ? nr : 1, 1);
    p->cam = calloc(nr ? nr : 1, sizeof *p->cam);
    p->state_cap = pa_ring_max_record(g->st->state);
    p->state_buf = malloc(p->state_cap ? p->state_cap : 1);
    p->state_cur = pa_ring_cursor_now(g->st->state);
    p->cam_cap = pa_ring_max_record(g->st->camera);
    p->cam_buf = malloc(p->cam_cap ? p->cam_cap : 1);
    p->poll_ev = event_new(g->base, -1, EV_PERSIST, on_poll, p);
  }
  if (!p || !p->odom || !p->motor_off || !p->cam || !p->cam_buf ||
      !p->state_buf || !p->poll_ev) {
    snprintf(err, err_sz, "player: out of memory");
    player_stop(g);
    return -1;
  }
  struct timeval tv = {0, PL_POLL_US};
  event_add(p->poll_ev, &tv);
  unsigned bound = 0;
  char lerr[256];
  extern const pa_frontend pa_fe_player;
  int lfd = pa_core_open(g, &pa_fe_player, 0, &bound, lerr, sizeof lerr);
  if (lfd == PA_LISTEN_TAKEN) {
    snprintf(err, err_sz, "%s", lerr);
    player_stop(g);
    return -1;
  }
  if (lfd >= 0) {
    p->lis = evconnlistener_new(g->base, on_accept, p,
                                LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
                                0, lfd);
    if (!p->lis)
      close(lfd);
  }
  if (lfd != PA_LISTEN_OFF && !p->lis) {
    pa_warn("player: %s; running without the Player server", lerr);
    pa_core_port_down(g, "player");
  } else if (p->lis) {
    p->port = bound;
    pa_info("player: Player 3 protocol on %s:%u%s",
            g->def.bind ? g->def.bind : "127.0.0.1", bound,
            g->token[0] ? " (the token in PLAYER_PLAYER_REQ_AUTH first)" : "");
  }
  return 0;
}

static void player_metrics(pa_netgw *g, struct evbuffer *b) {
  pa_player *p = g->player;
  if (!p)
    return;
  unsigned n = 0;
  for (uint32_t i = 0; i < PL_MAX_CONNS; i++)
    n += p->conns[i] != NULL;
  pa_metrics_family(b, "playarea_player_clients", "gauge",
                    "Player protocol clients connected");
  evbuffer_add_printf(b, "playarea_player_clients %u\n", n);
  pa_metrics_family(b, "playarea_player_messages_total", "counter",
                    "Player messages: received, NACKed, data sent, clients "
                    "cut for unread output");
  evbuffer_add_printf(
      b,
      "playarea_player_messages_total{outcome=\"received\"} %llu\n"
      "playarea_player_messages_total{outcome=\"nack\"} %llu\n"
      "playarea_player_messages_total{outcome=\"data\"} %llu\n"
      "playarea_player_messages_total{outcome=\"cut\"} %llu\n",
      (unsigned long long)p->msgs, (unsigned long long)p->nacks,
      (unsigned long long)p->data_sent, (unsigned long long)p->cut);
}

static const pa_fe_listener player_listeners[] = {
    {"player", PA_PORT_TCP, "--player_port",
     offsetof(pa_netgw_def, player_port), true, true, 64},
};

const pa_frontend pa_fe_player = {
    .name = "player",
    .flags = "player_port",
    .listeners = player_listeners,
    .n_listeners = 1,
    .token = true,
    .start = player_start,
    .stop = player_stop,
    .poll = player_poll,
    .metrics = player_metrics,
};
