/* client.c - TCP clients: accepting them, reading lines (text or JSON),
 * writing replies, and closing (at once, or after the replies owed). */
#define _GNU_SOURCE
#include "netgw_int.h"

#include "pa_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <event2/buffer.h>

#define READ_HIGH_WATER (PA_NETGW_JSON_MAX + (256u << 10)) /* input cap */

/* ---- output
 * ----------------------------------------------------------------*/

/* Sends a, then b, at once (what fits; the rest through the bufferevent). */
static void send_now(pa_client *c, const char *a, size_t na, const char *b,
                     size_t nb) {
  struct iovec iov[2] = {{(void *)a, na}, {(void *)b, nb}};
  struct msghdr mh = {.msg_iov = iov, .msg_iovlen = nb ? 2 : 1};
  ssize_t w =
      sendmsg(bufferevent_getfd(c->bev), &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
  size_t k = w > 0 ? (size_t)w : 0;
  size_t ka = k < na ? k : na;
  if (ka < na)
    bufferevent_write(c->bev, a + ka, na - ka);
  if (k - ka < nb)
    bufferevent_write(c->bev, b + (k - ka), nb - (k - ka));
}

void pa_gw_write_flush(pa_netgw *g) {
  pa_client *c = g->stage_c;
  size_t n = g->stage_n;
  g->stage_c = NULL;
  g->stage_n = 0;
  if (c && !c->kill && n)
    send_now(c, g->stage, n, NULL, 0);
}

void pa_gw_write(pa_client *c, const char *s, size_t n) {
  if (c->kill)
    return;
  pa_netgw *g = c->g;
  struct evbuffer *out = bufferevent_get_output(c->bev);
  if (evbuffer_get_length(out) + g->stage_n + n > c->g->def.max_output) {
    /* It does not read its replies: stop buffering for it. */
    pa_warn("client %" PRIu64 ": more than %zu bytes of unread output, "
            "disconnecting",
            c->id, c->g->def.max_output);
    c->g->disconnects_slow++;
    pa_lim_count(c->g, PA_LIM_SLOW);
    c->kill = true;
    if (g->stage_c == c)
      g->stage_c = NULL, g->stage_n = 0;
    return;
  }
  if (g->stage_c == c) {
    /* The held start of this reply goes first, in the same send when this
     * write is direct too (a binary reply: header line + block). */
    size_t held = g->stage_n;
    g->stage_c = NULL;
    g->stage_n = 0;
    if (g->direct_write && evbuffer_get_length(out) == 0) {
      send_now(c, g->stage, held, s, n);
      return;
    }
    bufferevent_write(c->bev, g->stage, held);
  } else if (g->direct_write && n > 0 && evbuffer_get_length(out) == 0) {
    /* The reply a client waits for (lockstep): send it now instead of on
     * the next loop turn, which also saves enabling the write event. A
     * short one waits for the reply's next write (pa_gw_write_flush). */
    if (!g->stage_c && n <= sizeof g->stage) {
      memcpy(g->stage, s, n);
      g->stage_c = c;
      g->stage_n = n;
      return;
    }
    send_now(c, s, n, NULL, 0);
    return;
  }
  bufferevent_write(c->bev, s, n); /* the rest; an error shows on the bev */
}

static void process_input(pa_client *c);

static size_t out_len(pa_client *c) {
  return evbuffer_get_length(bufferevent_get_output(c->bev));
}

/* Drops c's streams: it will read nothing more of them. */
static void unsubscribe_all(pa_client *c) {
  for (int ch = 0; ch < PA_CH_COUNT; ch++)
    if (c->port[ch])
      pa_gw_subscribe(c, ch, c->sub_robot[ch], 0);
}

void pa_gw_close_soon(pa_client *c) {
  if (c->closing)
    return;
  c->closing = true;
  c->closing_ns = pa_now_ns();
  unsubscribe_all(c);
  bufferevent_disable(c->bev, EV_READ);
}

/* Arms c's idle timer for the earliest of its deadlines: the partial line,
 * the auth deadline (with --token), the closing one's unread replies. */
static void idle_arm(pa_client *c) {
  int64_t lim = (int64_t)c->g->def.idle_timeout_ms * 1000000, due = 0;
  if (!lim) {
    return;
  }
  int64_t since[3] = {c->partial_ns,
                      c->g->token[0] && !c->authed ? c->connected_ns : 0,
                      c->closing ? c->closing_ns : 0};
  for (int i = 0; i < 3; i++)
    if (since[i] && (!due || since[i] + lim < due))
      due = since[i] + lim;
  if (!due) {
    evtimer_del(c->idle_ev);
    return;
  }
  int64_t left = due - pa_now_ns();
  if (left < 0)
    left = 0;
  struct timeval tv = {(time_t)(left / 1000000000),
                       (suseconds_t)(left % 1000000000 / 1000)};
  evtimer_add(c->idle_ev, &tv);
}

/* After a line or a completion: resume reading lines; close a client that
 * half-closed once every line it sent is answered and the replies are out. */
void pa_gw_settle(pa_client *c) {
  if (!c->kill && !c->pend && !c->closing)
    process_input(c);
  if (!c->kill && !c->pend && c->eof && !c->paused && !c->yielded)
    pa_gw_close_soon(c); /* process_input ran every line it had */
  if (!c->kill && !c->pend && c->closing && out_len(c) == 0)
    c->kill = true;
  if (c->kill) {
    pa_gw_client_free(c);
    return;
  }
  idle_arm(c);
}

/* An error line of the text protocol (a connection that sent no JSON). */
static void text_errf(pa_client *c, pa_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void text_errf(pa_client *c, pa_status st, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pa_core_control_fe(false)->line_error(c, st, msg);
}

static void on_idle(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  pa_client *c = arg;
  int64_t lim = (int64_t)c->g->def.idle_timeout_ms * 1000000, now = pa_now_ns();
  if (c->closing) {
    if (now - c->closing_ns >= lim) {
      c->kill = true; /* its replies stayed unread: give the slot back */
      pa_lim_count(c->g, PA_LIM_IDLE);
    }
  } else if (c->partial_ns && now - c->partial_ns >= lim) {
    pa_lim_count(c->g, PA_LIM_IDLE);
    text_errf(c, PA_ERR_INVALID_MESSAGE, "no end of line within %u ms: closing",
              c->g->def.idle_timeout_ms);
    pa_gw_close_soon(c);
  } else if (c->g->token[0] && !c->authed && now - c->connected_ns >= lim) {
    pa_lim_count(c->g, PA_LIM_IDLE);
    text_errf(c, PA_ERR_NOT_AUTHORIZED, "no auth within %u ms: closing",
              c->g->def.idle_timeout_ms);
    pa_gw_close_soon(c);
  }
  pa_gw_settle(c); /* may free c */
}

/* ---- line framing
 * ----------------------------------------------------------------*/

/* JSON when the first non-blank byte is '{' (PROTOCOL.md section 3). */
static bool starts_json(struct evbuffer *in, size_t avail) {
  char buf[256];
  size_t off = 0;
  while (off < avail) {
    size_t n = avail - off < sizeof buf ? avail - off : sizeof buf;
    struct evbuffer_ptr p;
    evbuffer_ptr_set(in, &p, off, EVBUFFER_PTR_SET);
    ev_ssize_t got = evbuffer_copyout_from(in, &p, buf, n);
    if (got <= 0)
      return false;
    for (ev_ssize_t i = 0; i < got; i++) {
      if (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r')
        continue;
      return buf[i] == '{';
    }
    off += (size_t)got;
    if (off > PA_NETGW_TEXT_MAX)
      return false; /* a kilobyte of blanks is a too long text line */
  }
  return false;
}

static void too_long(pa_client *c, bool json, size_t n) {
  char msg[128];
  unsigned lim = json ? PA_NETGW_JSON_MAX : PA_NETGW_TEXT_MAX;
  if (n == SIZE_MAX)
    snprintf(msg, sizeof msg, "line is longer than the %s limit of %u bytes",
             json ? "JSON" : "text", lim);
  else
    snprintf(msg, sizeof msg, "line is %zu bytes, the %s limit is %u", n,
             json ? "JSON" : "text", lim);
  pa_core_control_fe(json)->line_error(c, PA_ERR_TOO_LONG, msg);
}

static void process_input(pa_client *c) {
  struct evbuffer *in = bufferevent_get_input(c->bev);
  bool partial = false, consumed = false;
  unsigned lines = 0;
  while (!c->pend && !c->kill && !c->closing) {
    size_t avail = evbuffer_get_length(in);
    if (avail == 0)
      break;
    /* Replies piling up, or its share of this turn used: the rest waits. */
    if (c->yielded || !pa_lim_may_run(c, lines))
      break;
    if (c->discarding) {
      struct evbuffer_ptr p = evbuffer_search(in, "\n", 1, NULL);
      if (p.pos < 0) {
        evbuffer_drain(in, avail);
        partial = true; /* still in the too long line */
        break;
      }
      evbuffer_drain(in, (size_t)p.pos + 1);
      c->discarding = false;
      c->scanned = 0;
      continue;
    }
    struct evbuffer_ptr start, p;
    if (c->scanned > 0 && c->scanned < avail) {
      evbuffer_ptr_set(in, &start, c->scanned, EVBUFFER_PTR_SET);
      p = evbuffer_search(in, "\n", 1, &start);
    } else if (c->scanned >= avail) {
      p.pos = -1;
    } else {
      p = evbuffer_search(in, "\n", 1, NULL);
    }
    bool json = starts_json(in, avail);
    size_t limit = (json ? PA_NETGW_JSON_MAX : PA_NETGW_TEXT_MAX) + 1; /* \r */
    bool last = false; /* the peer's last line, without its '\n' */
    if (p.pos < 0 && c->eof && avail <= limit) {
      p.pos = (ev_off_t)avail;
      last = true;
    } else if (p.pos < 0) {
      c->scanned = avail;
      if (avail > limit) {
        too_long(c, json, SIZE_MAX);
        evbuffer_drain(in, avail);
        c->discarding = true;
        c->scanned = 0;
      }
      partial = true;
      break;
    }
    c->scanned = 0;
    size_t n = (size_t)p.pos;
    if (n > limit) {
      too_long(c, json, n);
      evbuffer_drain(in, n + 1);
      continue;
    }
    int64_t t0 = pa_now_ns();
    lines++;
    const char *line =
        (const char *)evbuffer_pullup(in, (ev_ssize_t)n + (last ? 0 : 1));
    size_t len = n;
    if (len > 0 && line[len - 1] == '\r')
      len--;
    if (len > limit - 1) {
      too_long(c, json, len);
    } else {
      c->spoke_json |= json;
      pa_core_control_fe(json)->line(c, line, len);
    }
    evbuffer_drain(in, n + (last ? 0 : 1));
    consumed = true;
    pa_lim_charge(c, t0);
  }
  if (!partial)
    c->partial_ns = 0;
  else if (!c->partial_ns || consumed)
    c->partial_ns = pa_now_ns(); /* the line's first bytes: it has until
                                  * --idle_timeout_ms to end */
  if (!c->kill && pa_gw_flush_drive(c) != 0 &&
      !evtimer_pending(c->drive_ev, NULL)) {
    struct timeval tv = {0, 2000};
    evtimer_add(c->drive_ev, &tv);
  }
}

/* ---- shutdown
 * ----------------------------------------------------------------------*/

static const char term_json[] =
    "{\"type\":\"status\",\"protocol_version\":2,\"action\":\"shutdown\","
    "\"status\":\"terminating\",\"success\":true,"
    "\"data\":{\"status\":\"terminating\",\"reason\":\"shutdown\"}}\n";
static const char term_text[] = "status terminating\n";

void pa_gw_say_terminating(pa_netgw *g) {
  if (!g->clients)
    return;
  for (uint32_t i = 0; i < g->slots; i++) {
    pa_client *c = g->clients[i];
    if (!c || !c->bev || c->kill)
      continue;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (c->spoke_json)
      evbuffer_add(out, term_json, sizeof term_json - 1);
    else
      evbuffer_add(out, term_text, sizeof term_text - 1);
    /* The loop has stopped: send what the socket takes now, replies still
     * owed first (non-blocking; a peer that stopped reading loses it). The
     * bufferevent keeps its output's start frozen, so it is copied out. */
    evutil_socket_t fd = bufferevent_getfd(c->bev);
    size_t n = evbuffer_get_length(out);
    const unsigned char *p = evbuffer_pullup(out, -1);
    for (size_t done = 0; fd >= 0 && p && done < n;) {
      ssize_t w = send(fd, p + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w <= 0)
        break;
      done += (size_t)w;
    }
  }
}

/* ---- clients
 * -------------------------------------------------------------------------*/

/* A client's timers (those that were made). */
static void free_timers(pa_client *c) {
  if (c->idle_ev)
    event_free(c->idle_ev);
  if (c->timeout_ev)
    event_free(c->timeout_ev);
  if (c->drive_ev)
    event_free(c->drive_ev);
}

void pa_gw_client_free(pa_client *c) {
  pa_netgw *g = c->g;
  if (g->stage_c == c) /* its held reply goes nowhere now */
    g->stage_c = NULL, g->stage_n = 0;
  unsubscribe_all(c);
  for (const pa_frontend *const *f = pa_frontends; *f; f++)
    if ((*f)->release)
      (*f)->release(c);
  free_timers(c);
  if (c->bev)
    bufferevent_free(c->bev);
  g->clients[c->slot] = NULL;
  g->n_clients--;
  free(c);
}

static void on_read(struct bufferevent *bev, void *arg) {
  (void)bev;
  pa_client *c = arg;
  pa_netgw *g = c->g;
  int64_t t0 = pa_now_ns();
  g->loops++;
  pa_gw_settle(c); /* may free c */
  pa_gw_account(g, t0);
  if (g->spin_hint)
    pa_gw_spin_for_reply(g);
}

/* The output drained: a closing client has had every reply; a paused one
 * is read again. */
static void on_write(struct bufferevent *bev, void *arg) {
  (void)bev;
  pa_client *c = arg;
  if (pa_lim_out_drained(c) || (c->closing && !c->pend)) {
    int64_t t0 = pa_now_ns();
    pa_netgw *g = c->g;
    pa_gw_settle(c); /* may free c */
    pa_gw_account(g, t0);
  }
}

static void on_event(struct bufferevent *bev, short what, void *arg) {
  (void)bev;
  pa_client *c = arg;
  if (what & BEV_EVENT_ERROR) {
    /* The peer is gone: stop its streams at once, even mid-request. */
    pa_gw_client_free(c);
  } else if (what & BEV_EVENT_EOF) {
    /* It sends nothing more (maybe a half-close): its streams stop now;
     * each line it sent still gets its reply, then the connection closes. */
    c->eof = true;
    unsubscribe_all(c);
    pa_gw_settle(c); /* may free c */
  }
}

static void refuse(pa_netgw *g, evutil_socket_t fd, const char *msg) {
  ssize_t w = write(fd, msg, strlen(msg));
  (void)w; /* best effort: the socket is new, its buffer is empty */
  evutil_closesocket(fd);
  g->refused++;
}

void pa_gw_on_accept(struct evconnlistener *lis, evutil_socket_t fd,
                     struct sockaddr *sa, int salen, void *arg) {
  (void)lis;
  pa_netgw *g = arg;
  g->loops++;
  pa_core_client_seen(g); /* from now on a kept port is never walked past */
  /* --unix_socket: a same-host client, counted (and sent UDP) as loopback */
  struct sockaddr_in local = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  bool unix_peer = sa->sa_family == AF_UNIX;
  if (unix_peer) {
    sa = (struct sockaddr *)&local;
  } else if (sa->sa_family != AF_INET ||
             salen < (int)sizeof(struct sockaddr_in)) {
    evutil_closesocket(fd);
    return;
  }
  const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
  uint32_t same = 0; /* connections this address holds */
  for (uint32_t i = 0; i < g->slots; i++)
    if (g->clients[i] &&
        g->clients[i]->peer.sin_addr.s_addr == sin->sin_addr.s_addr)
      same++;
  if (g->def.max_clients_per_peer && same >= g->def.max_clients_per_peer) {
    pa_lim_count(g, PA_LIM_PEER_CAP);
    refuse(g, fd, "err busy too many connections from this address\n");
    return;
  }
  /* The reserve (slots past max_clients) only takes a new address. */
  if (g->n_clients >= g->slots ||
      (g->n_clients >= g->def.max_clients && same > 0)) {
    pa_lim_count(g, PA_LIM_SLOTS);
    refuse(g, fd, "err busy too many clients\n");
    return;
  }
  uint32_t slot = 0;
  while (slot < g->slots && g->clients[slot])
    slot++;
  pa_client *c = calloc(1, sizeof *c);
  if (!c) {
    refuse(g, fd, "err busy out of memory\n");
    return;
  }
  c->g = g;
  c->slot = slot;
  c->id = ((uint64_t)++g->gens[slot] << 32) | slot;
  memcpy(&c->peer, sa, sizeof c->peer);
  int one = 1;
  if (!unix_peer)
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c->bev = bufferevent_socket_new(g->base, fd, BEV_OPT_CLOSE_ON_FREE);
  c->timeout_ev = evtimer_new(g->base, pa_gw_on_timeout, c);
  c->drive_ev = evtimer_new(g->base, pa_gw_on_drive_retry, c);
  c->idle_ev = evtimer_new(g->base, on_idle, c);
  c->connected_ns = pa_now_ns();
  if (!c->bev || !c->timeout_ev || !c->drive_ev || !c->idle_ev) {
    if (c->bev)
      bufferevent_free(c->bev);
    else
      evutil_closesocket(fd);
    free_timers(c);
    free(c);
    g->refused++;
    return;
  }
  g->clients[slot] = c;
  g->n_clients++;
  pa_lim_accepted(c);
  bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
  bufferevent_setwatermark(c->bev, EV_READ, 0, READ_HIGH_WATER);
  bufferevent_enable(c->bev, EV_READ | EV_WRITE);
  idle_arm(c); /* with --token: the auth deadline */
}

void pa_gw_on_relisten(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  pa_netgw *g = arg;
  evconnlistener_enable(g->lis);
  if (g->lis_unix)
    evconnlistener_enable(g->lis_unix);
}

void pa_gw_on_accept_error(struct evconnlistener *lis, void *arg) {
  pa_netgw *g = arg;
  int e = EVUTIL_SOCKET_ERROR();
  pa_warn("accept: %s", evutil_socket_error_to_string(e));
  if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
    /* Out of descriptors: pause accepting instead of spinning on it. */
    evconnlistener_disable(lis);
    struct timeval tv = {0, 100000};
    evtimer_add(g->relisten_ev, &tv);
  }
}
