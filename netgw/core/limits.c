/* limits.c - the core's connection limits, shared by every front-end
 * (issue 32): fair turns for the lines clients send (the least recently
 * served first, so no mix of clients stalls the loop), output backpressure
 * (a client whose replies pile up is not read until they drain, as
 * libevent's le-proxy does), the command queue's shares per source,
 * Origin checks, and the counters /metrics shows. */
#define _GNU_SOURCE
#include "netgw_int.h"

#include "pa_util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

static const char *const event_names[PA_LIM_COUNT] = {
    [PA_LIM_PEER_CAP] = "peer_cap",     [PA_LIM_SLOTS] = "slots",
    [PA_LIM_PAUSED] = "output_paused",  [PA_LIM_YIELDED] = "turn_yielded",
    [PA_LIM_IDLE] = "idle_timeout",     [PA_LIM_BODY] = "body_refused",
    [PA_LIM_ORIGIN] = "origin_refused", [PA_LIM_SLOW] = "slow_disconnected",
    [PA_LIM_QUEUE] = "queue_quota",     [PA_LIM_STALE] = "stale_dropped",
};

const char *pa_lim_event_name(int e) {
  return e >= 0 && e < PA_LIM_COUNT ? event_names[e] : NULL;
}

void pa_lim_count(pa_netgw *g, int e) {
  if (e >= 0 && e < PA_LIM_COUNT)
    g->lim.events[e]++;
}

/* ---- fair turns ------------------------------------------------------ */

static size_t out_len(const pa_client *c) {
  return evbuffer_get_length(bufferevent_get_output(c->bev));
}

/* A new turn when the last one is old and nobody waits for one (then
 * only the work event starts turns): light load never yields. */
static void turn_refresh(pa_netgw *g, int64_t now) {
  if (g->lim.work_ev && evtimer_pending(g->lim.work_ev, NULL))
    return;
  if (now - g->lim.turn_start_ns >= PA_LIM_TURN_WINDOW_NS) {
    g->lim.turn_start_ns = now;
    g->lim.turn_ns = g->lim.light_ns = 0;
  }
}

static void work_arm(pa_netgw *g) {
  if (!g->lim.work_ev || evtimer_pending(g->lim.work_ev, NULL))
    return;
  struct timeval tv = {0, 0};
  evtimer_add(g->lim.work_ev, &tv);
}

static void yield(pa_client *c) {
  pa_netgw *g = c->g;
  if (c->yielded)
    return;
  c->yielded = true;
  pa_lim_count(g, PA_LIM_YIELDED);
  work_arm(g);
}

/* Stops reading c until its output drains below the low-water mark (the
 * write callback calls pa_lim_out_drained). */
static void pause_output(pa_client *c) {
  if (c->paused)
    return;
  c->paused = true;
  pa_lim_count(c->g, PA_LIM_PAUSED);
  bufferevent_disable(c->bev, EV_READ);
  bufferevent_setwatermark(c->bev, EV_WRITE, PA_LIM_OUT_LOW, 0);
}

/* c's recent line work [ns], halved every PA_LIM_HALF_LIFE_NS. */
static double recent(pa_client *c, int64_t now) {
  if (now > c->recent_at) {
    c->recent_ns *= exp2(-(double)(now - c->recent_at) / PA_LIM_HALF_LIFE_NS);
    c->recent_at = now;
  }
  return c->recent_ns;
}

bool pa_lim_may_run(pa_client *c, unsigned lines_done) {
  pa_netgw *g = c->g;
  if (out_len(c) > PA_LIM_OUT_HIGH) {
    pause_output(c);
    return false;
  }
  int64_t now = pa_now_ns();
  turn_refresh(g, now);
  if (lines_done >= PA_LIM_TURN_LINES) {
    yield(c);
    return false;
  }
  if (g->lim.turn_ns < PA_LIM_TURN_NS)
    return true;
  /* The turn is used up: a light client (a bystander's ping) still gets
   * its line now rather than after the heavy ones, one line, within a
   * budget of its own per turn. */
  if (lines_done == 0 && !c->yielded && recent(c, now) < PA_LIM_LIGHT_NS &&
      g->lim.light_ns < PA_LIM_TURN_NS) {
    c->light = true;
    return true;
  }
  yield(c);
  return false;
}

void pa_lim_charge(pa_client *c, int64_t t0) {
  int64_t now = pa_now_ns(), ns = now - t0;
  if (ns < 0)
    ns = 0;
  if (c->light)
    c->g->lim.light_ns += ns;
  else
    c->g->lim.turn_ns += ns;
  c->light = false;
  c->recent_ns = recent(c, now) + (double)ns + 1000.0; /* >= 1 us a line */
}

void pa_lim_accepted(pa_client *c) {
  /* A new client counts as having just worked a while: a burst of new
   * connections cannot push a bystander's next line behind all of their
   * first ones (CFS's START_DEBIT). */
  c->recent_at = pa_now_ns();
  c->recent_ns = PA_LIM_START_DEBIT_NS;
}

bool pa_lim_out_drained(pa_client *c) {
  if (!c->paused || out_len(c) > PA_LIM_OUT_LOW)
    return false;
  c->paused = false;
  bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
  if (!c->closing && !c->eof)
    bufferevent_enable(c->bev, EV_READ);
  return true;
}

/* The yielded client that worked least lately, or NULL: a light client
 * (a bystander's ping) goes before the ones that pipeline heavy lines. */
static pa_client *next_yielded(pa_netgw *g) {
  pa_client *best = NULL;
  double best_ns = 0;
  int64_t now = pa_now_ns();
  for (uint32_t i = 0; i < g->slots; i++) {
    pa_client *c = g->clients[i];
    if (!c || !c->yielded)
      continue;
    double r = recent(c, now);
    if (!best || r < best_ns)
      best = c, best_ns = r;
  }
  return best;
}

/* One turn's work: yielded clients, least served first, until the turn's
 * budget is spent; the rest go on after the loop has polled once more. */
static void on_work(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  pa_netgw *g = arg;
  int64_t t0 = pa_now_ns();
  g->loops++;
  g->lim.turn_start_ns = t0;
  g->lim.turn_ns = g->lim.light_ns = 0;
  pa_client *c;
  while (g->lim.turn_ns < PA_LIM_TURN_NS && (c = next_yielded(g))) {
    c->yielded = false;
    pa_gw_settle(c); /* may free c, or yield it again */
  }
  if (next_yielded(g))
    work_arm(g);
  pa_gw_account(g, t0);
  if (g->spin_hint)
    pa_gw_spin_for_reply(g);
}

int pa_lim_init(pa_netgw *g) {
  /* (Not a lower event priority: libevent runs no lower priority while a
   * higher one has events, and a flood would starve the turns.) */
  g->lim.work_ev = evtimer_new(g->base, on_work, g);
  return g->lim.work_ev ? 0 : -1;
}

void pa_lim_free(pa_netgw *g) {
  if (g->lim.work_ev)
    event_free(g->lim.work_ev);
  g->lim.work_ev = NULL;
}

/* ---- the command queue's shares --------------------------------------- */

int pa_lim_queue_push(pa_netgw *g, int source, const pa_cmd *cmds, size_t n) {
  pa_queue *q = g->st->cmd;
  uint32_t space = pa_queue_space(q), cap = space + pa_queue_count(q);
  /* Datagram sources (SSL UDP) and replays leave half of the queue to the
   * connected clients: a flood of them cannot make a client's command
   * busy. Their excess is dropped and counted. */
  if (source != PA_LIM_SRC_CLIENT && space < cap / 2 + n) {
    pa_lim_count(g, PA_LIM_QUEUE);
    return PA_SHM_EFULL;
  }
  return n == 1 ? pa_queue_push(q, cmds)
                : pa_queue_push_many(q, cmds, n, sizeof *cmds);
}

/* ---- Origin ---------------------------------------------------------- */

/* "scheme://host[:port]" -> host[:port] (lowercase) in out; false when it
 * is not that shape. */
static bool origin_hostport(const char *origin, char *out, size_t n) {
  const char *p = strstr(origin, "://");
  if (!p)
    return false;
  p += 3;
  size_t len = strcspn(p, "/?#");
  if (!len || len >= n || p[len] != '\0')
    return false;
  for (size_t i = 0; i < len; i++)
    out[i] = (char)tolower((unsigned char)p[i]);
  out[len] = '\0';
  return true;
}

/* host with ":80"/":443" the scheme implies dropped, for comparing. */
static void drop_default_port(char *hp, const char *origin) {
  size_t n = strlen(hp);
  bool https = !strncasecmp(origin, "https:", 6);
  const char *def = https ? ":443" : ":80";
  size_t dl = strlen(def);
  if (n > dl && !strcmp(hp + n - dl, def))
    hp[n - dl] = '\0';
}

static bool allowed_listed(const char *list, const char *origin) {
  size_t ol = strlen(origin);
  while (ol && origin[ol - 1] == '/')
    ol--;
  for (const char *p = list; p && *p;) {
    p += strspn(p, ", ");
    size_t len = strcspn(p, ",");
    size_t l = len;
    while (l && (p[l - 1] == ' ' || p[l - 1] == '/'))
      l--;
    if (l &&
        ((l == 1 && *p == '*') || (l == ol && !strncasecmp(p, origin, ol))))
      return true;
    p += len;
  }
  return false;
}

bool pa_lim_origin_ok(pa_netgw *g, const char *origin, const char *host) {
  if (!origin || !*origin)
    return true; /* not a browser: curl, scripts, the tests */
  if (g->def.allow_origin && allowed_listed(g->def.allow_origin, origin))
    return true;
  char a[256], b[256];
  if (host && origin_hostport(origin, a, sizeof a) && strlen(host) < sizeof b) {
    size_t i = 0;
    for (; host[i]; i++)
      b[i] = (char)tolower((unsigned char)host[i]);
    b[i] = '\0';
    drop_default_port(a, origin);
    drop_default_port(b, origin);
    if (!strcmp(a, b))
      return true;
  }
  pa_lim_count(g, PA_LIM_ORIGIN);
  return false;
}
