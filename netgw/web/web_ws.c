/* web_ws.c - the browser's /ws: live frames out, JSON v2 requests in.
 *
 * Requests: each browser connection is also an ordinary gateway client,
 * reached through a socketpair (the gateway accepts one end as it accepts a
 * TCP connection), so a request from the page runs through exactly the code
 * a TCP JSON client's does: same actions, same limits, same error codes.
 * Each reply line goes back as one text message.
 *
 * Live frames, 20 Hz (docs/web.md): "state" (robots, agents' poses, the
 * SSL ball), a binary "SCN2" of the scans that arrived since the last frame,
 * and, when they change, "world" (robot and obstacle properties; agents
 * moving alone do not count), "map" + binary "MAP1", "nav" (drawings),
 * "visuals" + binary "VIS1" (point clouds; only what changed, web_vis.c)
 * and once a second "status" (processes). A browser with more than
 * LIVE_BACKLOG bytes unsent skips state and scan frames (counted as
 * dropped) and gets changed visuals later; the rest waits for it. */
#define _GNU_SOURCE
#include "web_int.h"

#include "pa_util.h"
#include "ws.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/bufferevent.h>

#define LIVE_BACKLOG (256u << 10) /* [bytes] unsent: skip live frames */
#define WS_MAX_MESSAGE (PA_NETGW_JSON_MAX)
/* [bytes] queued for one browser (a bigger map goes alone): past half of
 * it the browser is not read, replies wait in the gateway's client */
#define WS_MAX_QUEUED (4u << 20)
#define PAIR_HIGH (1u << 20) /* [bytes] requests the client has not taken */
#define BALL_RADIUS 0.021335 /* [m] as pa-sim's (sim_ssl.h) */

typedef struct pa_webws {
  struct pa_webws *next, **prev;
  pa_web *w;
  struct pa_ws *ws;
  struct bufferevent *pair; /* our end; the gateway's client has the other */
  uint64_t world_sig;
  uint32_t map_gen, nav_gen, vis_gen;
  bool have_world, have_map, have_nav, have_vis;
  pa_vis_table *vis_sent; /* the visuals as this browser has them */
  bool pair_held; /* replies wait in the pair: the browser's queue is full */
  uint32_t addr;  /* the browser's IPv4 address (per-peer cap) */
} pa_webws;

uint32_t pa_webws_count(const pa_web *w, uint32_t addr) {
  uint32_t n = 0;
  for (const pa_webws *x = w->ws; x; x = x->next)
    n += x->addr == addr;
  return n;
}

/* ---- pa_sbuf (web_int.h): the frames' growable buffer
 * -------------------------------------------------------*/

/* Room for need bytes in all (doubling); false and b->oom when out. */
bool pa_sb_reserve(pa_sbuf *b, size_t need) {
  if (b->oom)
    return false;
  if (need <= b->cap)
    return true;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < need)
    cap *= 2;
  char *s = realloc(b->s, cap);
  if (!s) {
    b->oom = true;
    return false;
  }
  b->s = s;
  b->cap = cap;
  return true;
}

void pa_sb_printf(pa_sbuf *b, const char *fmt, ...) {
  for (int pass = 0; pass < 2 && !b->oom; pass++) {
    va_list ap;
    va_start(ap, fmt);
    int k =
        vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
      b->oom = true;
      return;
    }
    if (b->s && b->n + (size_t)k < b->cap) {
      b->n += (size_t)k;
      return;
    }
    if (!pa_sb_reserve(b,
                       b->n + (size_t)k + 1)) /* + the NUL vsnprintf writes */
      return;
  }
}

void pa_sb_bytes(pa_sbuf *b, const void *p, size_t n) {
  if (!pa_sb_reserve(b, b->n + n))
    return;
  memcpy(b->s + b->n, p, n);
  b->n += n;
}

void pa_sb_u32(pa_sbuf *b, uint32_t v) { pa_sb_bytes(b, &v, 4); }
static void sb_f32(pa_sbuf *b, double v) {
  float f = (float)v;
  pa_sb_bytes(b, &f, 4);
}

/* ---- one connection
 * ---------------------------------------------------------*/

static int send_msg(pa_webws *x, int ch, bool binary, const void *p, size_t n) {
  int r =
      binary ? pa_ws_send_binary(x->ws, p, n) : pa_ws_send_text(x->ws, p, n);
  if (r == 0) {
    x->w->ws_frames[ch]++;
    x->w->ws_bytes[ch] += n;
  }
  return r;
}

static void on_text(struct pa_ws *ws, const char *data, size_t len, void *arg) {
  (void)ws;
  pa_webws *x = arg;
  if (!x->pair)
    return;
  /* One request per line: a raw line break can only be JSON whitespace. */
  char *line = malloc(len + 1);
  if (!line)
    return;
  for (size_t i = 0; i < len; i++)
    line[i] = data[i] == '\n' || data[i] == '\r' ? ' ' : data[i];
  line[len] = '\n';
  bufferevent_write(x->pair, line, len + 1);
  free(line);
  /* The gateway's client reads no more while its replies wait: so does
   * this side (pair_write resumes it). */
  if (evbuffer_get_length(bufferevent_get_output(x->pair)) > PAIR_HIGH)
    pa_ws_set_reading(x->ws, false);
}

/* The gateway's client took the requests: read the browser again. */
static void pair_write(struct bufferevent *bev, void *arg) {
  (void)bev;
  pa_webws *x = arg;
  pa_ws_set_reading(x->ws, true); /* may end x */
}

static void on_binary(struct pa_ws *ws, const uint8_t *data, size_t len,
                      void *arg) {
  (void)data, (void)len, (void)arg;
  pa_ws_close(ws, 1003, "send JSON v2 requests as text messages");
}

static void on_close(struct pa_ws *ws, void *arg) {
  (void)ws;
  pa_webws *x = arg;
  *x->prev = x->next;
  if (x->next)
    x->next->prev = x->prev;
  x->w->n_ws--;
  if (x->pair)
    bufferevent_free(x->pair); /* the gateway's client sees the end */
  free(x->vis_sent);
  free(x);
}

/* Reply lines of the gateway's client: one text message each, while the
 * browser's queue has room; then they wait in the pair (and the client
 * stops reading requests: its output backpressure) until on_drain. */
static void pair_read(struct bufferevent *bev, void *arg) {
  pa_webws *x = arg;
  struct evbuffer *in = bufferevent_get_input(bev);
  for (;;) {
    struct evbuffer_ptr eol =
        evbuffer_search_eol(in, NULL, NULL, EVBUFFER_EOL_LF);
    size_t q = pa_ws_queued(x->ws);
    if (eol.pos >= 0 && q > 0 && q + (size_t)eol.pos > WS_MAX_QUEUED / 2) {
      x->pair_held = true;
      bufferevent_disable(bev, EV_READ);
      return;
    }
    size_t n;
    char *line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF);
    if (!line)
      break;
    int r = send_msg(x, WS_CH_REPLY, false, line, n);
    free(line);
    if (r != 0) {
      /* replies are never skipped: a page that reads none is closed */
      pa_ws_close(x->ws, 1008, "replies not read");
      bufferevent_disable(bev, EV_READ);
      return;
    }
  }
}

/* The browser read: held replies go on. */
static void on_drain(struct pa_ws *ws, void *arg) {
  (void)ws;
  pa_webws *x = arg;
  if (!x->pair_held || !x->pair)
    return;
  x->pair_held = false;
  bufferevent_enable(x->pair, EV_READ);
  pair_read(x->pair, x);
}

static void pair_event(struct bufferevent *bev, short what, void *arg) {
  pa_webws *x = arg;
  if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
    pair_read(bev, x);
    bufferevent_disable(bev, EV_READ);
    pa_ws_close(x->ws, 1000, "the gateway closed the session");
  }
}

static void refuse(evutil_socket_t fd, const char *status, const char *text) {
  char buf[1024];
  int n = snprintf(buf, sizeof buf,
                   "HTTP/1.1 %s\r\nContent-Type: text/plain\r\n"
                   "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                   status, strlen(text), text);
  if (n < 0 || (size_t)n >= sizeof buf)
    n = 0; /* cannot happen: the texts are short */
  ssize_t wr = send(fd, buf, (size_t)n, MSG_NOSIGNAL);
  (void)wr;
  evutil_closesocket(fd);
}

void pa_webws_accept(pa_web *w, evutil_socket_t fd,
                     const struct sockaddr_in *peer, const char *head,
                     size_t head_len, const uint8_t *extra, size_t extra_len) {
  pa_netgw *g = w->g;
  if (!pa_core_head_authed(g, head, head_len)) {
    w->ws_refused++;
    refuse(fd, "401 Unauthorized",
           "not_authorized: this gateway has a --token");
    return;
  }
  char origin[256], host[256] = "";
  bool has_origin =
      pa_ws_header(head, head_len, "Origin", origin, sizeof origin) >= 0;
  pa_ws_header(head, head_len, "Host", host, sizeof host);
  if (!pa_lim_origin_ok(g, has_origin ? origin : NULL, host)) {
    char msg[512];
    snprintf(msg, sizeof msg,
             "cross-origin WebSocket refused: Origin %.100s is not this "
             "gateway's (Host %.100s); start pa-netgw with --allow_origin "
             "%.100s to allow it",
             origin, host, origin);
    w->ws_refused++;
    refuse(fd, "403 Forbidden", msg);
    return;
  }
  int sv[2];
  pa_webws *x = calloc(1, sizeof *x);
  if (!x || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                       sv) != 0) {
    free(x);
    w->ws_refused++;
    refuse(fd, "503 Service Unavailable", "out of resources");
    return;
  }
  x->w = w;
  x->addr = peer->sin_addr.s_addr;
  x->pair = bufferevent_socket_new(g->base, sv[1], BEV_OPT_CLOSE_ON_FREE);
  if (!x->pair) {
    close(sv[0]);
    close(sv[1]);
    free(x);
    w->ws_refused++;
    refuse(fd, "503 Service Unavailable", "out of resources");
    return;
  }
  static const struct pa_ws_cbs cbs = {on_text, on_binary, on_close, on_drain};
  struct pa_ws_limits lim = {WS_MAX_MESSAGE, WS_MAX_QUEUED,
                             &g->lim.events[PA_LIM_PAUSED]};
  char err[256];
  /* linked first: on_close unlinks, even from inside pa_ws_accept */
  x->next = w->ws;
  x->prev = &w->ws;
  if (w->ws)
    w->ws->prev = &x->next;
  w->ws = x;
  w->n_ws++;
  x->ws = pa_ws_accept(g->base, fd, head, head_len, extra, extra_len, NULL,
                       &lim, &cbs, x, err, sizeof err);
  if (!x->ws) {
    /* pa_ws_accept answered 400 and closed fd; on_close was not called */
    pa_info("web: /ws refused: %s", err);
    *x->prev = x->next;
    if (x->next)
      x->next->prev = x->prev;
    w->n_ws--;
    bufferevent_free(x->pair);
    close(sv[0]);
    free(x);
    w->ws_refused++;
    return;
  }
  w->ws_accepted++;
  bufferevent_setcb(x->pair, pair_read, pair_write, pair_event, x);
  bufferevent_setwatermark(x->pair, EV_WRITE, PAIR_HIGH / 4, 0);
  bufferevent_enable(x->pair, EV_READ | EV_WRITE);
  /* The gateway's side: a client like any other (its slot limits apply; a
   * refusal arrives as an error line, then the end). */
  unsigned before = g->n_clients;
  pa_gw_on_accept(g->lis, sv[0], (struct sockaddr *)peer, sizeof *peer, g);
  if (g->n_clients > before)
    for (uint32_t i = 0; i < g->slots; i++)
      if (g->clients[i] && bufferevent_getfd(g->clients[i]->bev) == sv[0])
        g->clients[i]->authed = true; /* the upgrade carried the token */
}

void pa_webws_free_all(pa_web *w) {
  while (w->ws)
    pa_ws_free(w->ws->ws); /* on_close unlinks it */
  free(w->obs);
  w->obs = NULL;
  pa_webvis_free(w);
}

/* ---- live frames
 * -------------------------------------------------------------*/

/* FNV-1a, for the world's signature. */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *c = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ c[i]) * 0x100000001b3ull;
  return h;
}

/* Re-reads the world snapshot when its gen moved. Agents move it every
 * tick; the signature leaves their poses out, so "world" frames follow
 * only what else changed. False when it could not be read whole (read
 * again next frame). */
static bool snap_refresh(pa_web *w) {
  pa_netgw *g = w->g;
  uint32_t gen = __atomic_load_n(&g->ctl->world_gen, __ATOMIC_ACQUIRE);
  if (w->have_snap && gen == w->snap_gen)
    return true;
  uint32_t nr = g->ctl->def.max_robots, no = g->ctl->def.max_obstacles;
  if (!w->obs && !(w->obs = calloc(no ? no : 1, sizeof *w->obs)))
    return false;
  for (int tries = 0; tries < 100; tries++) {
    uint64_t s = pa_stack_world_read_begin(g->st);
    if (s & 1u)
      continue;
    uint32_t n = __atomic_load_n(&g->ctl->obstacle_count, __ATOMIC_ACQUIRE);
    if (n > no)
      n = no;
    memcpy(w->obs, g->st->obstacles, n * sizeof *w->obs);
    uint64_t h =
        fnv(0xcbf29ce484222325ull, g->st->robots, nr * sizeof *g->st->robots);
    if (pa_stack_world_read_retry(g->st, s))
      continue;
    for (uint32_t i = 0; i < n; i++) {
      pa_obstacle_info o = w->obs[i];
      if (o.agent)
        o.x = o.y = o.theta = 0;
      h = fnv(h, &o, sizeof o);
    }
    w->n_obs = n;
    w->world_sig = fnv(h, &n, sizeof n);
    w->snap_gen = gen;
    w->have_snap = true;
    return true;
  }
  w->have_snap = false;
  return false;
}

static void build_state(pa_web *w, const pa_tick *t, pa_sbuf *b) {
  pa_sb_printf(
      b,
      "{\"type\":\"state\",\"sim_time\":%.6f,\"tick\":%llu,\"rtf\":%.4f,"
      "\"paused\":%s,\"speed\":%g,\"robots\":[",
      t->sim_time, (unsigned long long)t->tick, w->rtf,
      t->flags & PA_TICK_PAUSED ? "true" : "false", t->speed);
  const pa_robot_state *rs = (const pa_robot_state *)(t + 1);
  bool first = true;
  for (uint32_t i = 0; i < t->robot_count; i++) {
    if (!(rs[i].flags & PA_RS_ACTIVE))
      continue;
    pa_sb_printf(b, "%s[%u,%.4f,%.4f,%.5f,%.4f,%.4f,%d,%.4f,%.4f]",
                 first ? "" : ",", rs[i].id, rs[i].x, rs[i].y, rs[i].theta,
                 rs[i].v, rs[i].w, (rs[i].flags & PA_RS_BUMPED) ? 1 : 0,
                 rs[i].vy, rs[i].head);
    first = false;
  }
  /* agents: [slot, x, y, theta] each, as the snapshot has them now */
  pa_sb_printf(b, "],\"agents\":[");
  first = true;
  for (uint32_t i = 0; i < w->n_obs; i++) {
    const pa_obstacle_info *o = &w->obs[i];
    if (!o->active || !o->agent)
      continue;
    pa_sb_printf(b, "%s[%u,%.4f,%.4f,%.5f]", first ? "" : ",", i, o->x, o->y,
                 o->theta);
    first = false;
  }
  pa_sb_printf(b, "]");
  /* the ball: x, y, z (its bottom), vx, vy, vz, holder (-1 = none) */
  if (t->ssl && t->ball_holder != -2)
    pa_sb_printf(b,
                 ",\"ball\":[%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%d],"
                 "\"ball_radius\":%g",
                 t->ball[0], t->ball[1], t->ball[2], t->ball[3], t->ball[4],
                 t->ball[5], (int)t->ball_holder, BALL_RADIUS);
  /* the SSL division: the page draws that field (the rules' geometry) */
  if (t->ssl)
    pa_sb_printf(b, ",\"ssl\":\"%c\"", t->ssl == 'B' ? 'B' : 'A');
  pa_sb_printf(b, "}");
}

/* Scans newer than the last frame's, in one binary message: "SCN2", count,
 * then per scan robot, n, x, y, theta, angle_min, angle_increment,
 * range_max (u32 u32 f32 x6) and n f32 ranges; little-endian. */
static void build_scans(pa_web *w, const pa_tick *t, pa_sbuf *b,
                        uint32_t *last_seq, uint32_t max_robots) {
  pa_netgw *g = w->g;
  pa_gw_drain_scans(g);
  pa_sb_bytes(b, "SCN2", 4);
  size_t count_at = b->n;
  pa_sb_u32(b, 0);
  uint32_t count = 0;
  const pa_robot_state *rs = (const pa_robot_state *)(t + 1);
  for (uint32_t i = 0; i < t->robot_count; i++) {
    uint32_t r = rs[i].id;
    if (!(rs[i].flags & PA_RS_ACTIVE) || r >= max_robots)
      continue;
    const pa_scan *s = pa_gw_scan(g, r);
    if (!s || s->seq == last_seq[r])
      continue;
    last_seq[r] = s->seq;
    pa_sb_u32(b, r);
    pa_sb_u32(b, s->count);
    sb_f32(b, s->x);
    sb_f32(b, s->y);
    sb_f32(b, s->theta);
    sb_f32(b, s->angle_min);
    sb_f32(b, s->angle_increment);
    sb_f32(b, s->range_max);
    pa_sb_bytes(b, s + 1, (size_t)s->count * 4);
    count++;
  }
  if (!b->oom)
    memcpy(b->s + count_at, &count, 4);
}

static void build_world(pa_web *w, pa_sbuf *b) {
  pa_netgw *g = w->g;
  pa_sb_printf(b, "{\"type\":\"world\",\"world_gen\":%u,\"robots\":[",
               __atomic_load_n(&g->ctl->world_gen, __ATOMIC_ACQUIRE));
  uint32_t n = __atomic_load_n(&g->ctl->robot_count, __ATOMIC_ACQUIRE);
  bool first = true;
  for (uint32_t i = 0; i < n && i < g->ctl->def.max_robots; i++) {
    pa_robot_info ri;
    uint32_t idx;
    if (pa_gw_robot(g, NULL, (long)i, &ri, &idx) != 0)
      continue;
    json_t *name = json_string(ri.name);
    char *ns = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;
    pa_sb_printf(b,
                 "%s{\"id\":%u,\"name\":%s,\"drive\":\"%s\",\"radius\":%g,"
                 "\"colour\":[%u,%u,%u],\"range_max\":%g,\"cam\":[%u,%u]}",
                 first ? "" : ",", idx, ns ? ns : "\"\"",
                 ri.drive == PA_DRIVE_OMNI ? "omni" : "diff", ri.radius,
                 ri.colour[0], ri.colour[1], ri.colour[2], ri.laser_range_max,
                 ri.cam_width, ri.cam_height);
    free(ns);
    json_decref(name);
    first = false;
  }
  pa_sb_printf(b, "],\"obstacles\":[");
  static const char *const behaviours[PA_AGENT_COUNT] = {
      "", "constant", "waypoints", "random", "pedestrian"};
  first = true;
  for (uint32_t i = 0; i < w->n_obs; i++) {
    pa_obstacle_info oi = w->obs[i];
    if (!oi.active)
      continue;
    oi.name[sizeof oi.name - 1] = '\0';
    json_t *name = json_string(oi.name);
    char *ns = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;
    /* an agent's pose here is where it was: the state frames move it */
    pa_sb_printf(b,
                 "%s{\"slot\":%u,\"name\":%s,\"shape\":\"%s\",\"x\":%g,"
                 "\"y\":%g,\"theta\":%g,\"size\":[%g,%g],\"radius\":%g,"
                 "\"colour\":[%u,%u,%u],\"agent\":\"%s\"}",
                 first ? "" : ",", i, ns ? ns : "\"\"",
                 oi.shape == PA_SHAPE_CIRCLE ? "circle" : "box", oi.x, oi.y,
                 oi.theta, oi.size_x, oi.size_y, oi.radius, oi.colour[0],
                 oi.colour[1], oi.colour[2],
                 oi.agent < PA_AGENT_COUNT ? behaviours[oi.agent] : "other");
    free(ns);
    json_decref(name);
    first = false;
  }
  pa_sb_printf(b, "]}");
}

static void build_nav(pa_web *w, pa_sbuf *b, pa_nav_block *nb) {
  pa_sb_printf(b, "{\"type\":\"nav\",\"gen\":%u,\"overlays\":[", nb->gen);
  bool first = true;
  for (int i = 0; i < PA_NAV_OVERLAYS; i++) {
    const pa_nav_overlay *o = &nb->ov[i];
    if (o->robot == UINT32_MAX)
      continue;
    pa_sb_printf(b, "%s{\"robot\":%u,\"path\":[", first ? "" : ",", o->robot);
    for (uint32_t k = 0; k < o->path_n && k < PA_NAV_PATH_MAX; k++)
      pa_sb_printf(b, "%s[%.3f,%.3f]", k ? "," : "", o->path[k][0],
                   o->path[k][1]);
    pa_sb_printf(b, "],\"waypoints\":[");
    for (uint32_t k = 0; k < o->wp_n && k < PA_NAV_WAYPOINTS_MAX; k++)
      pa_sb_printf(b, "%s[%.3f,%.3f]", k ? "," : "", o->wp[k][0], o->wp[k][1]);
    pa_sb_printf(b, "]}");
    first = false;
  }
  (void)w;
  pa_sb_printf(b, "]}");
}

/* The visuals x lacks: all of them once, then those that changed since
 * its copy; the delta from the previous copy is built once (in delta) for
 * every viewer that had it, the whole set once (in full). */
static void send_visuals(pa_webws *x, uint32_t gen, pa_sbuf full[2],
                         pa_sbuf delta[2]) {
  pa_web *w = x->w;
  pa_sbuf own[2] = {{0}, {0}}, *m = own;
  const pa_vis_table *old = x->vis_sent;
  if (!x->have_vis || !old) {
    m = full, old = NULL;
  } else if (w->vis_prev_ok && x->vis_gen == w->vis_prev_gen) {
    m = delta, old = w->vis_prev;
  }
  if (!m[0].n)
    pa_webvis_build(w, old, &m[0], &m[1]);
  if (!m[0].oom && !m[1].oom &&
      send_msg(x, WS_CH_WORLD, false, m[0].s, m[0].n) == 0 &&
      send_msg(x, WS_CH_WORLD, true, m[1].s, m[1].n) == 0 &&
      pa_webvis_keep(w, &x->vis_sent)) {
    x->have_vis = true;
    x->vis_gen = gen;
  }
  free(own[0].s);
  free(own[1].s);
}

void pa_webws_tick(pa_web *w) {
  if (!w->ws)
    return;
  pa_netgw *g = w->g;
  const pa_tick *t = pa_gw_latest(g);
  uint32_t max_robots = g->ctl->def.max_robots;
  if (!w->scan_seq)
    w->scan_seq = calloc(max_robots, sizeof *w->scan_seq);
  uint32_t *last_seq = w->scan_seq;
  pa_sbuf st = {0}, sc = {0}, wo = {0}, nav = {0}, status = {0}, mh = {0},
          mb = {0}, vfull[2] = {{0}, {0}}, vdelta[2] = {{0}, {0}};
  bool snap_ok = snap_refresh(w);
  uint32_t vis_gen;
  bool vis_ok = pa_webvis_refresh(w, &vis_gen);
  if (t) {
    build_state(w, t, &st);
    if (last_seq)
      build_scans(w, t, &sc, last_seq, max_robots);
  }
  uint32_t nav_gen = __atomic_load_n(&g->st->nav->gen, __ATOMIC_ACQUIRE);
  const pa_map_block *map = NULL;
  const int8_t *cells = NULL;
  if (pa_gw_map(g, &map, &cells) != 0)
    map = NULL;
  bool status_due = w->live_n % 20 == 1;
  for (pa_webws *x = w->ws, *next; x; x = next) {
    next = x->next;
    struct pa_ws *ws = x->ws;
    /* sent whole, never skipped: world, map and drawings follow changes */
    if (snap_ok && (!x->have_world || x->world_sig != w->world_sig)) {
      if (!wo.n)
        build_world(w, &wo);
      if (!wo.oom && send_msg(x, WS_CH_WORLD, false, wo.s, wo.n) == 0) {
        x->have_world = true;
        x->world_sig = w->world_sig;
      }
    }
    if (map && (!x->have_map || x->map_gen != map->gen)) {
      if (!mh.n) {
        pa_sb_printf(&mh,
                     "{\"type\":\"map\",\"gen\":%u,\"width\":%u,\"height\":%u,"
                     "\"resolution\":%.9g,\"origin\":[%.9g,%.9g,%.9g],"
                     "\"occupied_min\":%d}",
                     map->gen, map->width, map->height, map->resolution,
                     map->origin_x, map->origin_y, map->origin_yaw,
                     (int)pa_map_block_occupied_min(map));
        pa_sb_bytes(&mb, "MAP1", 4);
        pa_sb_u32(&mb, map->width);
        pa_sb_u32(&mb, map->height);
        pa_sb_bytes(&mb, cells, (size_t)map->width * map->height);
      }
      if (!mh.oom && !mb.oom &&
          send_msg(x, WS_CH_MAP, false, mh.s, mh.n) == 0 &&
          send_msg(x, WS_CH_MAP, true, mb.s, mb.n) == 0) {
        x->have_map = true;
        x->map_gen = map->gen;
      }
    }
    if (!x->have_nav || x->nav_gen != nav_gen) {
      if (!nav.n) {
        pa_nav_block *nb = malloc(sizeof *nb);
        if (nb && pa_stack_nav_read(g->st, nb))
          build_nav(w, &nav, nb);
        free(nb);
      }
      if (nav.n && !nav.oom &&
          send_msg(x, WS_CH_STATE, false, nav.s, nav.n) == 0) {
        x->have_nav = true;
        x->nav_gen = nav_gen;
      }
    }
    if (status_due) {
      if (!status.n) {
        char *s = pa_web_status_json(g);
        if (s)
          pa_sb_printf(&status, "{\"type\":\"status\",\"processes\":%s}", s);
        free(s);
      }
      if (status.n && !status.oom)
        send_msg(x, WS_CH_STATUS, false, status.s, status.n);
    }
    if (!t)
      continue;
    if (pa_ws_queued(ws) > LIVE_BACKLOG) {
      w->ws_dropped++; /* a slow browser: it gets the next frame instead */
      pa_lim_count(g, PA_LIM_STALE);
      g->lim.bytes_dropped += st.n + sc.n;
      continue;
    }
    /* changed visuals: when the browser keeps up (a client may move one
     * every tick); a slow one gets the newest later, never a backlog */
    if (vis_ok && (!x->have_vis || x->vis_gen != vis_gen))
      send_visuals(x, vis_gen, vfull, vdelta);
    if (!st.oom && send_msg(x, WS_CH_STATE, false, st.s, st.n) != 0)
      w->ws_dropped++;
    if (sc.n > 8 && !sc.oom && send_msg(x, WS_CH_SCAN, true, sc.s, sc.n) != 0)
      w->ws_dropped++;
  }
  free(st.s);
  free(sc.s);
  free(wo.s);
  free(nav.s);
  free(status.s);
  free(mh.s);
  free(mb.s);
  for (int i = 0; i < 2; i++) {
    free(vfull[i].s);
    free(vdelta[i].s);
  }
}
