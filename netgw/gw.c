/* gw.c - the gateway: listener, clients, line framing, the text commands,
 * the sim round trip (cmd queue -> reply queue) and the UDP streams fed by
 * the state, scan and camera rings. Everything runs in one libevent loop;
 * bridge.c threads only wake it. */
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/buffer.h>

#define READ_HIGH_WATER (PA_NETGW_JSON_MAX + (256u << 10)) /* input cap */
#define HEALTH_PERIOD_US 250000

pa_netgw_def pa_netgw_def_default(void) {
  pa_netgw_def d = {
      .tcp_port = 9000,
      .bind = "127.0.0.1",
      .token = NULL,
      .feedback_hz = 100,
      .max_clients = 256,
      .camera_chunk = PA_CAM_CHUNK_DEFAULT,
      .request_timeout_ms = 2000,
      .max_output = 4u << 20,
      .odom_watch_us = 0, /* off: it helps the median, not p99, and costs CPU */
      .realtime = false,
  };
  return d;
}

unsigned pa_netgw_port(const pa_netgw *g) { return g->port; }

/* ---- shared-memory views -------------------------------------------------*/

int pa_gw_robot(pa_netgw *g, const char *name, long id, pa_robot_info *info,
                uint32_t *idx) {
  uint32_t max = g->ctl->def.max_robots;
  for (int tries = 0; tries < 1000; tries++) {
    uint64_t s = pa_stack_world_read_begin(g->st);
    if (s & 1u) /* left mid-update for 50 ms: its writer died */
      return PA_GW_BUSY;
    int found = -1;
    uint32_t n = __atomic_load_n(&g->ctl->robot_count, __ATOMIC_ACQUIRE);
    if (n > max)
      n = max;
    if (name) {
      for (uint32_t i = 0; i < n; i++)
        if (g->st->robots[i].active &&
            !strncmp(g->st->robots[i].name, name, sizeof info->name)) {
          found = (int)i;
          break;
        }
    } else if (id >= 0 && (uint64_t)id < max && g->st->robots[id].active) {
      found = (int)id;
    }
    if (found >= 0)
      *info = g->st->robots[found];
    if (pa_stack_world_read_retry(g->st, s))
      continue;
    if (found < 0)
      return -1;
    info->name[sizeof info->name - 1] = '\0';
    *idx = (uint32_t)found;
    return 0;
  }
  return PA_GW_BUSY; /* rewritten under every try */
}

int pa_gw_obstacle(pa_netgw *g, const char *name, pa_obstacle_info *info,
                   uint32_t *idx) {
  uint32_t max = g->ctl->def.max_obstacles;
  for (int tries = 0; tries < 1000; tries++) {
    uint64_t s = pa_stack_world_read_begin(g->st);
    if (s & 1u)
      return PA_GW_BUSY;
    int found = -1;
    uint32_t n = __atomic_load_n(&g->ctl->obstacle_count, __ATOMIC_ACQUIRE);
    if (n > max)
      n = max;
    for (uint32_t i = 0; i < n; i++)
      if (g->st->obstacles[i].active &&
          !strncmp(g->st->obstacles[i].name, name, sizeof info->name)) {
        found = (int)i;
        *info = g->st->obstacles[i];
        break;
      }
    if (pa_stack_world_read_retry(g->st, s))
      continue;
    if (found < 0)
      return -1;
    info->name[sizeof info->name - 1] = '\0';
    *idx = (uint32_t)found;
    return 0;
  }
  return PA_GW_BUSY; /* rewritten under every try */
}

const pa_tick *pa_gw_latest(pa_netgw *g) {
  uint32_t len;
  uint64_t seq;
  if (pa_ring_read_latest(g->st->state, g->latest_buf, g->state_cap, &len,
                          &seq) != 0 ||
      len < sizeof(pa_tick))
    return NULL;
  const pa_tick *t = (const pa_tick *)g->latest_buf;
  if (sizeof(pa_tick) + (uint64_t)t->robot_count * sizeof(pa_robot_state) >
      len)
    return NULL;
  return t;
}

const pa_robot_state *pa_gw_robot_state(const pa_tick *t, uint32_t robot) {
  const pa_robot_state *rs = (const pa_robot_state *)(t + 1);
  if (robot < t->robot_count && rs[robot].id == robot &&
      (rs[robot].flags & PA_RS_ACTIVE))
    return &rs[robot];
  for (uint32_t i = 0; i < t->robot_count; i++)
    if (rs[i].id == robot && (rs[i].flags & PA_RS_ACTIVE))
      return &rs[i];
  return NULL;
}

int pa_gw_map(pa_netgw *g, const pa_map_block **map, const int8_t **cells) {
  uint32_t gen = __atomic_load_n(&g->ctl->map_gen, __ATOMIC_ACQUIRE);
  if (!g->map || gen != g->map_gen) {
    if (g->map)
      pa_shm_detach(&g->map_seg);
    g->map = NULL;
    char err[256];
    if (pa_stack_map_attach(g->st, &g->map_seg, &g->map, &g->cells, err,
                            sizeof err) != 0) {
      g->map = NULL;
      return -1;
    }
    g->map_gen = gen;
  }
  *map = g->map;
  *cells = g->cells;
  return 0;
}

bool pa_gw_token_ok(pa_netgw *g, const char *s) {
  size_t a = strlen(g->token), b = strlen(s);
  unsigned char diff = (unsigned char)(a != b);
  /* Constant time over the token so its length and prefix do not leak. */
  for (size_t i = 0; i < a; i++)
    diff |= (unsigned char)(g->token[i] ^ (i < b ? s[i] : 0));
  return diff == 0;
}

/* Time spent in one loop callback, for health. */
static void account(pa_netgw *g, int64_t t0) {
  int64_t d = pa_now_ns() - t0;
  g->cb_ns_sum += d;
  g->cb_n++;
  if (d > g->cb_ns_max)
    g->cb_ns_max = d;
}

/* ---- output ----------------------------------------------------------------*/

void pa_gw_write(pa_client *c, const char *s, size_t n) {
  if (c->kill)
    return;
  struct evbuffer *out = bufferevent_get_output(c->bev);
  if (evbuffer_get_length(out) + n > c->g->def.max_output) {
    /* It does not read its replies: stop buffering for it. */
    pa_warn("client %" PRIu64 ": more than %zu bytes of unread output, "
            "disconnecting",
            c->id, c->g->def.max_output);
    c->g->disconnects_slow++;
    c->kill = true;
    return;
  }
  if (c->g->direct_write && n > 0 && evbuffer_get_length(out) == 0) {
    /* The reply a client waits for (lockstep): send it now instead of on
     * the next loop turn, which also saves enabling the write event. */
    ssize_t w = send(bufferevent_getfd(c->bev), s, n,
                     MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w > 0) {
      s += w;
      n -= (size_t)w;
    }
    if (n == 0)
      return;
  }
  bufferevent_write(c->bev, s, n); /* the rest; an error shows on the bev */
}

static void text_err(pa_client *c, pa_status st, const char *msg) {
  char line[512];
  int n = snprintf(line, sizeof line, "err %s %s\n", pa_status_code(st), msg);
  if (n >= (int)sizeof line) {
    n = (int)sizeof line - 1;
    line[n - 1] = '\n';
  }
  pa_gw_write(c, line, (size_t)n);
}

static void text_line(pa_client *c, const char *s) {
  char line[PA_NETGW_TEXT_MAX + 2];
  size_t n = strlen(s);
  if (n > PA_NETGW_TEXT_MAX)
    n = PA_NETGW_TEXT_MAX;
  memcpy(line, s, n);
  line[n] = '\n'; /* one write per reply line */
  pa_gw_write(c, line, n + 1);
}

/* ---- subscriptions ----------------------------------------------------------*/

static void cam_demand(pa_netgw *g, uint32_t robot, int delta) {
  if (robot >= g->ctl->def.max_robots)
    return;
  uint32_t *p = &g->st->cam[robot].subscribers;
  if (delta > 0) {
    __atomic_fetch_add(p, 1, __ATOMIC_RELEASE);
  } else {
    uint32_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
    while (v > 0 && !__atomic_compare_exchange_n(p, &v, v - 1, false,
                                                 __ATOMIC_RELEASE,
                                                 __ATOMIC_ACQUIRE))
      ;
  }
  sem_post(&g->ctl->render_wake);
}

/* Adds, moves or (port 0) removes c's row in the odom thread's table. */
static void odom_table_set(pa_client *c, uint32_t robot, uint16_t port) {
  pa_odom_tx *o = &c->g->odom;
  pthread_mutex_lock(&o->mu);
  uint32_t i = 0;
  while (i < o->n_subs && o->subs[i].client_id != c->id)
    i++;
  if (port) {
    if (i == o->n_subs)
      o->n_subs++; /* at most one row per client: max_clients rows */
    o->subs[i].client_id = c->id;
    o->subs[i].robot = robot;
    o->subs[i].dest = c->dest[PA_CH_ODOM];
  } else if (i < o->n_subs) {
    o->subs[i] = o->subs[--o->n_subs];
  }
  bool was = atomic_load(&c->g->odom_active), now = o->n_subs > 0;
  if (now && !was)
    o->resync = true; /* frames from now on, not what the ring still holds */
  pthread_mutex_unlock(&o->mu);
  if (now != was) {
    atomic_store(&c->g->odom_active, now);
    if (now)
      pa_bridge_poke(&c->g->br_state);
  }
}

static void drain_scans(pa_netgw *g);

void pa_gw_subscribe(pa_client *c, int ch, uint32_t robot, uint16_t port) {
  pa_netgw *g = c->g;
  if (ch == PA_CH_SCAN && !c->port[ch] != !port) {
    if (port && g->scan_subs++ == 0) {
      drain_scans(g); /* up to date before anyone is sent anything */
      atomic_store(&g->scan_active, true);
      pa_bridge_poke(&g->br_scan);
    } else if (!port && --g->scan_subs == 0) {
      atomic_store(&g->scan_active, false);
    }
  }
  if (ch == PA_CH_CAMERA) {
    if (c->port[ch])
      cam_demand(c->g, c->sub_robot[ch], -1);
    if (port)
      cam_demand(c->g, robot, +1);
  }
  c->port[ch] = port;
  c->sub_robot[ch] = robot;
  c->dest[ch] = c->peer;
  c->dest[ch].sin_port = htons(port);
  if (ch == PA_CH_ODOM)
    odom_table_set(c, robot, port);
}

/* ---- the sim round trip --------------------------------------------------------*/

static int push_raw(pa_client *c, pa_cmd *cmd) {
  cmd->client_id = c->id;
  cmd->request_id = ++c->g->next_req;
  return pa_queue_push(c->g->st->cmd, cmd) == 0 ? 0 : -1;
}

/* Pushes the coalesced drive command, if any: 0, or -1 when still queued. */
static int flush_drive(pa_client *c) {
  if (!c->drive_pending)
    return 0;
  if (push_raw(c, &c->drive) != 0)
    return -1;
  c->drive_pending = false;
  return 0;
}

static void on_drive_retry(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  pa_client *c = arg;
  if (flush_drive(c) != 0) {
    struct timeval tv = {0, 2000}; /* only while pa-sim lags behind */
    evtimer_add(c->drive_ev, &tv);
  }
}

/* Keeps the latest text drive command of this burst (flushed after it). */
static void set_drive(pa_client *c, const pa_cmd *cmd) {
  if (c->drive_pending && c->drive.robot != cmd->robot)
    flush_drive(c); /* another robot's command must not be overwritten */
  if (c->drive_pending && c->drive.robot != cmd->robot)
    c->g->busy++; /* the queue is full: the older robot's command is lost */
  c->drive = *cmd;
  c->drive.flags |= PA_CMDF_NO_REPLY;
  c->drive_pending = true;
}

/* Keeps order: a held drive command goes before anything newer. */
static int push(pa_client *c, pa_cmd *cmd) {
  if (flush_drive(c) != 0)
    return -1;
  return push_raw(c, cmd);
}

int pa_gw_push_nowait(pa_client *c, pa_cmd *cmd) {
  cmd->flags |= PA_CMDF_NO_REPLY;
  return push(c, cmd);
}

int pa_gw_push_wait(pa_client *c, pa_cmd *cmd) {
  if (push(c, cmd) != 0)
    return -1;
  c->pend_req = cmd->request_id;
  c->pend_robot = cmd->robot;
  if (cmd->op == PA_OP_STEP && cmd->u <= 4)
    c->g->spin_hint = true;
  unsigned ms = c->g->def.request_timeout_ms;
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  evtimer_add(c->timeout_ev, &tv);
  return 0;
}

static void process_input(pa_client *c);
static void client_free(pa_client *c);

/* After a line or a completion: resume reading lines, or drop the client. */
static void settle(pa_client *c) {
  if (!c->kill && !c->pend)
    process_input(c);
  if (c->kill)
    client_free(c);
}

static void text_complete(pa_client *c, const pa_reply *r) {
  if (!r) {
    char msg[128];
    snprintf(msg, sizeof msg, "the simulator did not answer within %u ms",
             c->g->def.request_timeout_ms);
    text_err(c, PA_ERR_BUSY, msg);
  } else if (r->status != PA_OK) {
    char msg[sizeof r->msg + 1];
    memcpy(msg, r->msg, sizeof r->msg);
    msg[sizeof r->msg] = '\0';
    text_err(c, r->status >= 0 && r->status < PA_STATUS_COUNT
                    ? (pa_status)r->status
                    : PA_ERR_INVALID_MESSAGE,
             msg[0] ? msg : "rejected by the simulator");
  } else {
    text_line(c, "ok");
  }
}

static void complete(pa_client *c, const pa_reply *r) {
  int kind = c->pend;
  c->pend = PEND_NONE;
  evtimer_del(c->timeout_ev);
  if (!r)
    c->g->busy++;
  c->g->direct_write = true; /* only this reply: later lines batch up */
  if (kind == PEND_TEXT)
    text_complete(c, r);
  else
    pa_json_complete(c, r);
  c->g->direct_write = false;
  settle(c);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  pa_client *c = arg;
  if (c->pend)
    complete(c, NULL); /* its late reply will find no one waiting for it */
}

static void on_reply(void *arg) {
  pa_netgw *g = arg;
  pa_reply r;
  int64_t t0 = pa_now_ns();
  g->loops++;
  while (pa_queue_peek(g->st->reply, &r) >= 0) {
    pa_queue_pop(g->st->reply);
    uint32_t slot = (uint32_t)(r.client_id & 0xffffffffu);
    pa_client *c = slot < g->def.max_clients ? g->clients[slot] : NULL;
    if (!c || c->id != r.client_id || !c->pend || c->pend_req != r.request_id) {
      g->late++;
      continue;
    }
    complete(c, &r);
  }
  g->spin_hint = false; /* only a step pushed from a client read is watched */
  account(g, t0);
}

/* ---- text commands ---------------------------------------------------------------*/

static bool robot_exists(pa_netgw *g, uint32_t robot) {
  pa_robot_info info;
  uint32_t idx;
  return pa_gw_robot(g, NULL, (long)robot, &info, &idx) == 0;
}

static void no_robot(pa_client *c) {
  char msg[96];
  snprintf(msg, sizeof msg, "robot %" PRIu32 " does not exist", c->robot);
  text_err(c, PA_ERR_UNKNOWN_ROBOT, msg);
}

static void handle_text(pa_client *c, const char *line, size_t len) {
  pa_netgw *g = c->g;
  pa_text_cmd t;
  char msg[256];
  pa_status st = pa_netgw_text_parse(line, len, &t, msg, sizeof msg);
  if (st != PA_OK) {
    text_err(c, st, msg);
    return;
  }
  if (t.kind == PA_TXT_EMPTY)
    return;
  if (g->token[0] && !c->authed && t.kind != PA_TXT_AUTH) {
    text_err(c, PA_ERR_NOT_AUTHORIZED, "send auth <token> first");
    return;
  }
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.robot = c->robot;
  switch (t.kind) {
  case PA_TXT_EMPTY:
    return;
  case PA_TXT_AUTH:
    if (g->token[0] && !pa_gw_token_ok(g, t.arg)) {
      text_err(c, PA_ERR_NOT_AUTHORIZED, "wrong token");
      return;
    }
    c->authed = true;
    text_line(c, "ok");
    return;
  case PA_TXT_HELP:
    text_line(c, pa_netgw_text_help());
    return;
  case PA_TXT_PING:
    text_line(c, "pong");
    return;
  case PA_TXT_CMD:
  case PA_TXT_STOP:
    if (!robot_exists(g, c->robot)) {
      no_robot(c);
      return;
    }
    if (t.kind == PA_TXT_CMD) {
      cmd.op = PA_OP_SET_CMD;
      cmd.a[0] = t.a[0];
      cmd.a[2] = t.a[1];
      cmd.a[3] = t.a[2];
      cmd.u = PA_FRAME_ROBOT;
    } else {
      cmd.op = PA_OP_STOP;
    }
    set_drive(c, &cmd);
    return;
  case PA_TXT_SUB:
    if (!robot_exists(g, c->robot)) {
      no_robot(c);
      return;
    }
    pa_gw_subscribe(c, t.channel, c->robot, t.port);
    return;
  case PA_TXT_UNSUB:
    if (c->port[t.channel])
      pa_gw_subscribe(c, t.channel, c->sub_robot[t.channel], 0);
    return;
  case PA_TXT_ROBOT: {
    pa_robot_info info;
    uint32_t idx;
    size_t n = strlen(t.arg);
    bool numeric = n <= 9 && strspn(t.arg, "0123456789") == n;
    int rc = numeric ? pa_gw_robot(g, NULL, strtol(t.arg, NULL, 10), &info,
                                   &idx)
                     : pa_gw_robot(g, t.arg, -1, &info, &idx);
    if (rc == PA_GW_BUSY) {
      text_err(c, PA_ERR_BUSY, "the world snapshot is being rewritten; try "
                               "again");
      return;
    }
    if (rc != 0) {
      snprintf(msg, sizeof msg, "no robot with %s '%s'",
               numeric ? "id" : "name", t.arg);
      text_err(c, PA_ERR_UNKNOWN_ROBOT, msg);
      return;
    }
    c->robot = idx;
    text_line(c, "ok");
    return;
  }
  case PA_TXT_POSE: {
    const pa_tick *tk = pa_gw_latest(g);
    if (!tk) {
      text_err(c, PA_ERR_BUSY, "the simulator has not written a tick yet");
      return;
    }
    const pa_robot_state *rs = pa_gw_robot_state(tk, c->robot);
    if (!rs) {
      no_robot(c);
      return;
    }
    char out[160];
    snprintf(out, sizeof out, "pose %.6f %.6f %.6f", rs->x, rs->y, rs->theta);
    text_line(c, out);
    return;
  }
  case PA_TXT_TELEPORT:
    cmd.op = PA_OP_TELEPORT;
    memcpy(cmd.a, t.a, sizeof t.a);
    break;
  case PA_TXT_PAUSE:
    cmd.op = PA_OP_PAUSE;
    break;
  case PA_TXT_RESUME:
    cmd.op = PA_OP_RESUME;
    break;
  case PA_TXT_STEP:
    cmd.op = PA_OP_STEP;
    cmd.u = t.n;
    break;
  case PA_TXT_RESET:
    cmd.op = PA_OP_RESET;
    break;
  case PA_TXT_SPEED:
    cmd.op = PA_OP_SPEED;
    cmd.a[0] = t.a[0];
    break;
  }
  if (cmd.op == PA_OP_TELEPORT && !robot_exists(g, c->robot)) {
    no_robot(c);
    return;
  }
  if (pa_gw_push_wait(c, &cmd) != 0) {
    g->busy++;
    text_err(c, PA_ERR_BUSY, "the command queue is full");
    return;
  }
  c->pend = PEND_TEXT;
  c->pend_text = (int)t.kind;
}

/* ---- line framing ----------------------------------------------------------------*/

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
  if (json)
    pa_json_error_line(c, PA_ERR_TOO_LONG, msg);
  else
    text_err(c, PA_ERR_TOO_LONG, msg);
}

static void process_input(pa_client *c) {
  struct evbuffer *in = bufferevent_get_input(c->bev);
  while (!c->pend && !c->kill) {
    size_t avail = evbuffer_get_length(in);
    if (avail == 0)
      break;
    if (c->discarding) {
      struct evbuffer_ptr p = evbuffer_search(in, "\n", 1, NULL);
      if (p.pos < 0) {
        evbuffer_drain(in, avail);
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
    if (p.pos < 0) {
      c->scanned = avail;
      if (avail > limit) {
        too_long(c, json, SIZE_MAX);
        evbuffer_drain(in, avail);
        c->discarding = true;
        c->scanned = 0;
      }
      break;
    }
    c->scanned = 0;
    size_t n = (size_t)p.pos;
    if (n > limit) {
      too_long(c, json, n);
      evbuffer_drain(in, n + 1);
      continue;
    }
    const char *line = (const char *)evbuffer_pullup(in, (ev_ssize_t)n + 1);
    size_t len = n;
    if (len > 0 && line[len - 1] == '\r')
      len--;
    if (len > limit - 1) {
      too_long(c, json, len);
    } else if (json) {
      pa_json_line(c, line, len);
    } else {
      handle_text(c, line, len);
    }
    evbuffer_drain(in, n + 1);
  }
  if (!c->kill && flush_drive(c) != 0 &&
      !evtimer_pending(c->drive_ev, NULL)) {
    struct timeval tv = {0, 2000};
    evtimer_add(c->drive_ev, &tv);
  }
}

/* ---- clients -------------------------------------------------------------------------*/

static void client_free(pa_client *c) {
  pa_netgw *g = c->g;
  for (int ch = 0; ch < PA_CH_COUNT; ch++)
    if (c->port[ch])
      pa_gw_subscribe(c, ch, c->sub_robot[ch], 0);
  pa_json_release(c);
  if (c->timeout_ev)
    event_free(c->timeout_ev);
  if (c->drive_ev)
    event_free(c->drive_ev);
  if (c->bev)
    bufferevent_free(c->bev);
  g->clients[c->slot] = NULL;
  g->n_clients--;
  free(c);
}

static void on_reply(void *arg);

/* A short lockstep step comes back in tens of microseconds: watching the
 * reply queue that long saves the thread and eventfd wake-ups (~100 us on a
 * busy machine). Bounded, and only right after such a step was pushed, while
 * the client is waiting for it anyway. */
#define STEP_SPIN_NS 100000

static void spin_for_reply(pa_netgw *g) {
  g->spin_hint = false;
  int64_t end = pa_now_ns() + STEP_SPIN_NS;
  do {
    if (pa_queue_count(g->st->reply) > 0) {
      on_reply(g);
      return;
    }
    sched_yield(); /* lets pa-sim run if the scheduler put it on this core */
  } while (pa_now_ns() < end);
}

static void on_read(struct bufferevent *bev, void *arg) {
  (void)bev;
  pa_client *c = arg;
  pa_netgw *g = c->g;
  int64_t t0 = pa_now_ns();
  g->loops++;
  settle(c); /* may free c */
  account(g, t0);
  if (g->spin_hint)
    spin_for_reply(g);
}

static void on_event(struct bufferevent *bev, short what, void *arg) {
  (void)bev;
  pa_client *c = arg;
  if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
    /* The peer is gone: stop its streams at once, even mid-request. */
    client_free(c);
  }
}

static void refuse(pa_netgw *g, evutil_socket_t fd, const char *msg) {
  ssize_t w = write(fd, msg, strlen(msg));
  (void)w; /* best effort: the socket is new, its buffer is empty */
  evutil_closesocket(fd);
  g->refused++;
}

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd,
                      struct sockaddr *sa, int salen, void *arg) {
  (void)lis;
  pa_netgw *g = arg;
  g->loops++;
  if (sa->sa_family != AF_INET || salen < (int)sizeof(struct sockaddr_in)) {
    evutil_closesocket(fd);
    return;
  }
  if (g->n_clients >= g->def.max_clients) {
    refuse(g, fd, "err busy too many clients\n");
    return;
  }
  uint32_t slot = 0;
  while (slot < g->def.max_clients && g->clients[slot])
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
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c->bev = bufferevent_socket_new(g->base, fd, BEV_OPT_CLOSE_ON_FREE);
  c->timeout_ev = evtimer_new(g->base, on_timeout, c);
  c->drive_ev = evtimer_new(g->base, on_drive_retry, c);
  if (!c->bev || !c->timeout_ev || !c->drive_ev) {
    if (c->bev)
      bufferevent_free(c->bev);
    else
      evutil_closesocket(fd);
    if (c->timeout_ev)
      event_free(c->timeout_ev);
    if (c->drive_ev)
      event_free(c->drive_ev);
    free(c);
    g->refused++;
    return;
  }
  g->clients[slot] = c;
  g->n_clients++;
  bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
  bufferevent_setwatermark(c->bev, EV_READ, 0, READ_HIGH_WATER);
  bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

static void on_relisten(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  pa_netgw *g = arg;
  evconnlistener_enable(g->lis);
}

static void on_accept_error(struct evconnlistener *lis, void *arg) {
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

/* ---- streams ------------------------------------------------------------------------------*/


/* One state record: frames for every subscriber when its odom seq is new
 * (docs/CONTRACT.md), and the tick grid estimate. */
static void odom_record(pa_netgw *g, const pa_tick *t) {
  pa_odom_tx *o = &g->odom;
  double control_hz = g->ctl->control_hz;
  double period = control_hz > 0 && t->speed > 0 && !(t->flags & PA_TICK_PAUSED)
                      ? 1e9 / (control_hz * t->speed)
                      : 0;
  if (period > 0) {
    double off = (double)t->wall_ns - (double)t->tick * period;
    /* Late ticks raise the estimate slowly; an early one or a re-sync of
     * the sim's schedule (pause, speed change) resets it. */
    if (!o->have_phase || period != o->period || off < o->phase ||
        off - o->phase > period / 2)
      o->phase = off;
    else
      o->phase += (off - o->phase) / 32;
    o->period = period;
    o->have_phase = true;
  } else {
    o->have_phase = false;
  }
  o->last_tick = t->tick;
  uint32_t os = pa_netgw_odom_seq(t->tick, g->def.feedback_hz, control_hz);
  if (o->have_seq && os == o->last_seq)
    return;
  o->have_seq = true;
  o->last_seq = os;
  pthread_mutex_lock(&o->mu);
  for (uint32_t i = 0; i < o->n_subs; i++) {
    const pa_robot_state *rs = pa_gw_robot_state(t, o->subs[i].robot);
    if (!rs)
      continue;
    uint8_t fr[PA_ODOM_FRAME_SIZE];
    pa_netgw_odom_encode(fr, os, t->sim_time, (float)rs->odom_x,
                         (float)rs->odom_y, (float)rs->odom_theta,
                         (float)rs->v, (float)rs->w);
    pa_udp_tx_add(&o->tx, &o->subs[i].dest, fr, sizeof fr, NULL, 0);
    o->frames++;
  }
  if (o->tx.n) {
    pa_udp_tx_flush(&o->tx);
    o->age_sum += pa_now_ns() - t->wall_ns;
    o->age_n++;
  }
  pthread_mutex_unlock(&o->mu);
}

/* Copies the next record the cursor has not seen into buf, skipping one that
 * cannot be read into it. false once the cursor has caught up. */
static bool ring_next(const pa_ring *r, pa_ring_cursor *c, void *buf,
                      uint32_t cap, uint32_t *len) {
  for (;;) {
    uint64_t seq;
    int rc = pa_ring_read_next(r, c, buf, cap, len, &seq);
    if (rc == 0)
      return true;
    if (rc == PA_SHM_EMPTY)
      return false;
    c->next++;
  }
}

static void odom_drain(pa_netgw *g) {
  pa_odom_tx *o = &g->odom;
  uint32_t len;
  while (ring_next(g->st->state, &o->cur, o->buf, o->cap, &len)) {
    const pa_tick *t = (const pa_tick *)o->buf;
    if (len < sizeof *t ||
        sizeof *t + (uint64_t)t->robot_count * sizeof(pa_robot_state) > len)
      continue;
    odom_record(g, t);
  }
}

/* pa_now_ns() at which the next tick with a new odom seq is due, or 0 when
 * the sim is not running on a grid (paused, lockstep, as fast as possible)
 * or odom ticks come too often to watch for each. */
static int64_t odom_due(pa_netgw *g, int64_t lead, int64_t spin_max) {
  pa_odom_tx *o = &g->odom;
  double control_hz = g->ctl->control_hz, fb = g->def.feedback_hz;
  if (!o->have_phase || !o->have_seq || !(control_hz > 0))
    return 0;
  /* First tick whose seq passes last_seq, corrected for floor rounding. */
  double guess = ceil((double)(o->last_seq + 1) * control_hz / fb);
  if (!(guess < 9e18))
    return 0;
  uint64_t next = (uint64_t)guess;
  if (next <= o->last_tick)
    next = o->last_tick + 1;
  for (int i = 0;
       i < 4 && pa_netgw_odom_seq(next, fb, control_hz) <= o->last_seq; i++)
    next++;
  for (int i = 0; i < 8 && next > o->last_tick + 1 &&
                  pa_netgw_odom_seq(next - 1, fb, control_hz) > o->last_seq;
       i++)
    next--;
  if (pa_netgw_odom_seq(next, fb, control_hz) <= o->last_seq ||
      next - o->last_tick > (uint64_t)(control_hz / fb) + 8)
    return 0; /* seq and tick disagree (rates changed): no guess */
  double gap = (double)(next - o->last_tick) * o->period;
  if (gap < 4.0 * (double)(lead + spin_max))
    return 0; /* watching would be most of the time: wake-ups only */
  return (int64_t)(o->phase + (double)next * o->period);
}

/* The state-ring thread, after each wake-up and at the deadline it returns:
 * sends what the ring holds, then, when the next odom tick is due within
 * --odom_watch_us, watches the ring for it (until twice that past its due
 * time) so the frame does not wait for a thread wake-up (30 to 300 us on a
 * VM). Costs about that watch time per odom period of one core. */
static int64_t odom_send(void *arg) {
  pa_netgw *g = arg;
  pa_odom_tx *o = &g->odom;
  pthread_mutex_lock(&o->mu);
  uint32_t n_subs = o->n_subs;
  bool resync = o->resync;
  o->resync = false;
  pthread_mutex_unlock(&o->mu);
  if (resync) {
    o->cur = pa_ring_cursor_now(g->st->state);
    o->have_phase = false;
  }
  if (!n_subs) {
    /* Nobody listens: skip the copies, keep the cursor current. */
    o->cur = pa_ring_cursor_now(g->st->state);
    o->have_phase = false;
    return 0;
  }
  int64_t lead = (int64_t)g->def.odom_watch_us * 1000, spin_max = 2 * lead;
  for (int round = 0; round < 4; round++) {
    odom_drain(g);
    int64_t due = lead ? odom_due(g, lead, spin_max) : 0;
    if (!due)
      return 0;
    int64_t now = pa_now_ns();
    if (now < due - lead)
      return due - lead;
    if (now > due + spin_max)
      return 0; /* late: its ring post wakes us */
    while (pa_ring_head(g->st->state) < o->cur.next &&
           pa_now_ns() <= due + spin_max)
      sched_yield(); /* lets pa-sim run if it shares this core (under
                      * --realtime pa-sim's higher priority preempts us) */
    if (pa_ring_head(g->st->state) < o->cur.next)
      return 0;
  }
  return 0;
}

static void drain_scans(pa_netgw *g) {
  uint32_t len;
  while (ring_next(g->st->scan, &g->scan_cur, g->scan_buf, g->scan_cap, &len)) {
    const pa_scan *s = (const pa_scan *)g->scan_buf;
    if (len < sizeof *s || sizeof *s + (uint64_t)s->count * 4 > len ||
        s->robot >= g->ctl->def.max_robots)
      continue;
    uint8_t **slot = &g->scan_cache[s->robot];
    if (!*slot && !(*slot = malloc(g->scan_cap)))
      continue;
    memcpy(*slot, g->scan_buf, sizeof *s + (size_t)s->count * 4);
    const pa_scan *cs = (const pa_scan *)*slot;
    if (!g->scan_subs)
      continue; /* cached for get_state; nobody streams it */
    uint8_t hdr[PA_SCAN_HEADER_SIZE]; /* the same for every subscriber */
    pa_netgw_scan_header(hdr, cs);
    for (uint32_t i = 0; i < g->def.max_clients; i++) {
      pa_client *c = g->clients[i];
      if (!c || !c->port[PA_CH_SCAN] || c->sub_robot[PA_CH_SCAN] != s->robot)
        continue;
      pa_udp_tx_add(&g->tx, &c->dest[PA_CH_SCAN], hdr, sizeof hdr, cs + 1,
                    (size_t)cs->count * 4);
      g->scan_frames++;
    }
    /* Flush before the next record of this robot overwrites the cache. */
    pa_udp_tx_flush(&g->tx);
  }
}

static void on_scan(void *arg) {
  pa_netgw *g = arg;
  int64_t t0 = pa_now_ns();
  g->loops++;
  drain_scans(g);
  account(g, t0);
}

const pa_scan *pa_gw_scan(pa_netgw *g, uint32_t robot) {
  drain_scans(g);
  if (robot >= g->ctl->def.max_robots || !g->scan_cache[robot])
    return NULL;
  return (const pa_scan *)g->scan_cache[robot];
}

static void on_camera(void *arg) {
  pa_netgw *g = arg;
  int64_t t0 = pa_now_ns();
  g->loops++;
  bool any = false;
  for (uint32_t i = 0; i < g->def.max_clients && !any; i++)
    any = g->clients[i] && g->clients[i]->port[PA_CH_CAMERA];
  if (!any) {
    g->cam_cur = pa_ring_cursor_now(g->st->camera);
    return;
  }
  uint32_t len;
  while (ring_next(g->st->camera, &g->cam_cur, g->cam_buf, g->cam_cap, &len)) {
    const pa_frame *f = (const pa_frame *)g->cam_buf;
    if (len < sizeof *f || f->size != (uint32_t)f->width * f->height * 3u ||
        sizeof *f + (uint64_t)f->size > len)
      continue;
    uint32_t chunk = g->def.camera_chunk;
    uint32_t count = pa_netgw_cam_chunk_count(f->size, chunk);
    if (count == 0)
      continue;
    const uint8_t *rgb = (const uint8_t *)(f + 1);
    for (uint32_t i = 0; i < g->def.max_clients; i++) {
      pa_client *c = g->clients[i];
      if (!c || !c->port[PA_CH_CAMERA] || c->sub_robot[PA_CH_CAMERA] != f->robot)
        continue;
      uint64_t dropped = g->tx.dropped;
      for (uint32_t k = 0; k < count; k++) {
        uint8_t hdr[PA_CAM_HEADER_SIZE];
        uint32_t off, n;
        pa_netgw_cam_header(hdr, f, chunk, k, count, &off, &n);
        pa_udp_tx_add(&g->tx, &c->dest[PA_CH_CAMERA], hdr, sizeof hdr,
                      rgb + off, n);
      }
      pa_udp_tx_flush(&g->tx);
      if (g->tx.dropped == dropped)
        g->cam_frames++;
    }
  }
  account(g, t0);
}

/* ---- health, lifecycle -------------------------------------------------------------------*/

static void publish_health(pa_netgw *g) {
  pa_health *h = &g->ctl->health[PA_PROC_NETGW];
  h->heartbeat_ns = pa_now_ns();
  h->loops = g->loops;
  h->clients = g->n_clients;
  pa_odom_tx *o = &g->odom;
  pthread_mutex_lock(&o->mu);
  h->frames_sent = g->tx.sent + o->tx.sent;
  h->bytes_sent = g->tx.bytes + o->tx.bytes;
  h->frames_dropped = g->tx.dropped + o->tx.dropped;
  h->counters[3] = o->frames;
  if (o->age_n)
    h->phase_ms[1] = (double)o->age_sum / (double)o->age_n / 1e6;
  o->age_sum = 0;
  o->age_n = 0;
  pthread_mutex_unlock(&o->mu);
  h->counters[0] = g->steps;
  h->counters[1] = g->busy;
  h->counters[2] = g->late;
  h->counters[4] = g->scan_frames;
  h->counters[5] = g->cam_frames;
  /* phase_ms: [0] mean callback cost, [1] mean odom age at send (tick
   * written -> datagrams handed to the kernel, on the state thread);
   * period_max_ns: longest callback, all over the last health period. */
  if (g->cb_n) {
    h->phase_ms[0] = (double)g->cb_ns_sum / (double)g->cb_n / 1e6;
    h->period_max_ns = g->cb_ns_max;
  }
  g->cb_ns_sum = g->cb_ns_max = 0;
  g->cb_n = 0;
}

static void on_health(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  publish_health(arg);
}

static void on_stop(evutil_socket_t fd, short what, void *arg) {
  (void)what;
  pa_netgw *g = arg;
  uint64_t v;
  ssize_t r = read(fd, &v, sizeof v);
  (void)r;
  event_base_loopbreak(g->base);
}

static void on_signal(evutil_socket_t sig, short what, void *arg) {
  (void)what;
  pa_netgw *g = arg;
  pa_info("signal %d: stopping", (int)sig);
  event_base_loopbreak(g->base);
}

static bool is_loopback(const char *addr) {
  struct in_addr a;
  return inet_pton(AF_INET, addr, &a) == 1 &&
         (ntohl(a.s_addr) >> 24) == 127;
}

pa_netgw *pa_netgw_create(const pa_netgw_def *d, pa_stack *stack, char *err,
                          size_t err_sz) {
  pa_netgw *g = calloc(1, sizeof *g);
  if (!g) {
    snprintf(err, err_sz, "out of memory");
    return NULL;
  }
  g->def = *d;
  g->st = stack;
  g->ctl = stack->ctl;
  g->stop_fd = -1;
  g->tx.fd = -1;
  g->odom.tx.fd = -1;
  if (pthread_mutex_init(&g->odom.mu, NULL) != 0) {
    free(g);
    snprintf(err, err_sz, "pthread_mutex_init failed");
    return NULL;
  }
  g->odom.mu_init = true;
  g->splice_nonce = pa_shm_new_boot_id();
  /* Request ids keep growing across netgw restarts, so a reply to a previous
   * netgw's command can never match a request of this one. */
  g->next_req = (uint64_t)pa_now_ns();
  g->state_reader = g->scan_reader = g->cam_reader = -1;
  if (d->token && strlen(d->token) >= sizeof g->token) {
    /* Cut short, it would match no token a client can send. */
    snprintf(err, err_sz, "--token: at most %zu bytes", sizeof g->token - 1);
    goto fail;
  }
  if (d->token)
    snprintf(g->token, sizeof g->token, "%s", d->token);
  if (d->max_clients < 1 || d->camera_chunk < PA_CAM_CHUNK_MIN ||
      d->camera_chunk > PA_CAM_CHUNK_MAX || !(d->feedback_hz > 0) ||
      d->request_timeout_ms < 1 || d->max_output < 4096 ||
      d->odom_watch_us > PA_NETGW_ODOM_WATCH_MAX_US) {
    snprintf(err, err_sz, "invalid gateway settings");
    goto fail;
  }
  struct sockaddr_in sin;
  memset(&sin, 0, sizeof sin);
  sin.sin_family = AF_INET;
  sin.sin_port = htons((uint16_t)d->tcp_port);
  const char *bind_addr = d->bind ? d->bind : "127.0.0.1";
  if (inet_pton(AF_INET, bind_addr, &sin.sin_addr) != 1) {
    snprintf(err, err_sz, "--bind: '%s' is not an IPv4 address", bind_addr);
    goto fail;
  }
  if (!is_loopback(bind_addr) && !g->token[0])
    pa_warn("listening on %s without --token: anyone who can reach this "
            "address can drive the robots",
            bind_addr);

  uint32_t max_robots = g->ctl->def.max_robots;
  g->clients = calloc(d->max_clients, sizeof *g->clients);
  g->gens = calloc(d->max_clients, sizeof *g->gens);
  g->scan_cache = calloc(max_robots, sizeof *g->scan_cache);
  g->state_cap = pa_ring_max_record(stack->state);
  g->scan_cap = pa_ring_max_record(stack->scan);
  g->cam_cap = pa_ring_max_record(stack->camera);
  g->odom.cap = g->state_cap;
  g->odom.buf = malloc(g->state_cap);
  g->odom.subs = calloc(d->max_clients, sizeof *g->odom.subs);
  g->latest_buf = malloc(g->state_cap);
  g->scan_buf = malloc(g->scan_cap);
  g->cam_buf = malloc(g->cam_cap);
  if (!g->clients || !g->gens || !g->scan_cache || !g->odom.buf ||
      !g->odom.subs ||
      !g->latest_buf || !g->scan_buf || !g->cam_buf) {
    snprintf(err, err_sz, "out of memory");
    goto fail;
  }
  if (pa_udp_tx_open(&g->tx, err, err_sz) != 0)
    goto fail;
  /* Odom goes out of the same socket (one source port for every frame). */
  g->odom.tx.fd = g->tx.fd;

  g->base = event_base_new();
  if (!g->base) {
    snprintf(err, err_sz, "event_base_new failed");
    goto fail;
  }
  g->lis = evconnlistener_new_bind(
      g->base, on_accept, g,
      LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 512,
      (struct sockaddr *)&sin, sizeof sin);
  if (!g->lis) {
    snprintf(err, err_sz, "cannot listen on %s:%u: %s", bind_addr,
             d->tcp_port, strerror(errno));
    goto fail;
  }
  evconnlistener_set_error_cb(g->lis, on_accept_error);
  struct sockaddr_in bound;
  socklen_t bl = sizeof bound;
  getsockname(evconnlistener_get_fd(g->lis), (struct sockaddr *)&bound, &bl);
  g->port = ntohs(bound.sin_port);

  /* A restarted netgw owns the demand: nobody subscribes until clients do. */
  for (uint32_t r = 0; r < max_robots; r++)
    __atomic_store_n(&stack->cam[r].subscribers, 0, __ATOMIC_RELEASE);
  sem_post(&g->ctl->render_wake);

  /* Fill the scan cache from what the ring still holds, so get_state has a
   * scan right away; then follow new records only. */
  uint64_t head = pa_ring_head(stack->scan);
  uint64_t slots = pa_ring_slot_count(stack->scan);
  g->scan_cur.next = head > slots ? head - slots + 1 : 1;
  g->scan_cur.missed = 0;
  drain_scans(g);
  g->odom.cur = pa_ring_cursor_now(stack->state);
  g->cam_cur = pa_ring_cursor_now(stack->camera);

  g->state_reader = pa_ring_reader_register(stack->state);
  g->scan_reader = pa_ring_reader_register(stack->scan);
  g->cam_reader = pa_ring_reader_register(stack->camera);
  if (g->state_reader < 0 || g->scan_reader < 0 || g->cam_reader < 0) {
    snprintf(err, err_sz, "no free reader slot in the state, scan or camera "
                          "ring (another pa-netgw running?)");
    goto fail;
  }
  /* Replies that a previous netgw left unread are for clients gone now. */
  while (pa_queue_peek(stack->reply, NULL) >= 0)
    pa_queue_pop(stack->reply);

  atomic_init(&g->odom_active, false);
  atomic_init(&g->scan_active, false);
  pa_bridge_set_active_flag(&g->br_state, &g->odom_active);
  pa_bridge_set_active_flag(&g->br_scan, &g->scan_active);
  if (pa_bridge_start_direct(&g->br_state, stack->state, g->state_reader,
                             odom_send, g, err, err_sz) != 0 ||
      pa_bridge_start(&g->br_scan, g->base, stack->scan, g->scan_reader, NULL,
                      on_scan, g, err, err_sz) != 0 ||
      pa_bridge_start(&g->br_cam, g->base, stack->camera, g->cam_reader, NULL,
                      on_camera, g, err, err_sz) != 0 ||
      pa_bridge_start(&g->br_reply, g->base, NULL, -1,
                      pa_queue_sem(stack->reply), on_reply, g, err,
                      err_sz) != 0)
    goto fail;
  if (d->realtime) {
    /* Only the odom thread: its wake-up is the frame age; best effort. */
    struct sched_param sp = {.sched_priority = PA_NETGW_RT_PRIO};
    int rc = pthread_setschedparam(g->br_state.thread, SCHED_FIFO, &sp);
    if (rc != 0)
      pa_warn("--realtime: SCHED_FIFO refused for the odom thread (%s); "
              "continuing at normal priority", strerror(rc));
  }

  g->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  g->stop_ev = g->stop_fd >= 0 ? event_new(g->base, g->stop_fd,
                                           EV_READ | EV_PERSIST, on_stop, g)
                               : NULL;
  g->health_ev = event_new(g->base, -1, EV_PERSIST, on_health, g);
  g->relisten_ev = evtimer_new(g->base, on_relisten, g);
  if (!g->stop_ev || !g->health_ev || !g->relisten_ev) {
    snprintf(err, err_sz, "event setup failed");
    goto fail;
  }
  event_add(g->stop_ev, NULL);
  struct timeval hp = {0, HEALTH_PERIOD_US};
  event_add(g->health_ev, &hp);

  g->ctl->health[PA_PROC_NETGW].pid = getpid();
  g->ctl->health[PA_PROC_NETGW].start_ns = pa_now_ns();
  __atomic_store_n(&g->ctl->tcp_port, g->port, __ATOMIC_RELEASE);
  return g;
fail:
  pa_netgw_destroy(g);
  return NULL;
}

int pa_netgw_run(pa_netgw *g, bool handle_signals) {
  if (handle_signals) {
    g->sig_int = evsignal_new(g->base, SIGINT, on_signal, g);
    g->sig_term = evsignal_new(g->base, SIGTERM, on_signal, g);
    if (g->sig_int)
      evsignal_add(g->sig_int, NULL);
    if (g->sig_term)
      evsignal_add(g->sig_term, NULL);
  }
  publish_health(g);
  __atomic_store_n(&g->ctl->health[PA_PROC_NETGW].ready, 1, __ATOMIC_RELEASE);
  int rc = event_base_dispatch(g->base);
  __atomic_store_n(&g->ctl->health[PA_PROC_NETGW].ready, 0, __ATOMIC_RELEASE);
  return rc < 0 ? -1 : 0;
}

void pa_netgw_stop(pa_netgw *g) {
  uint64_t one = 1;
  ssize_t w = write(g->stop_fd, &one, sizeof one);
  (void)w;
}

void pa_netgw_destroy(pa_netgw *g) {
  if (!g)
    return;
  pa_bridge_stop(&g->br_state);
  pa_bridge_stop(&g->br_scan);
  pa_bridge_stop(&g->br_cam);
  pa_bridge_stop(&g->br_reply);
  if (g->clients)
    for (uint32_t i = 0; i < g->def.max_clients; i++)
      if (g->clients[i])
        client_free(g->clients[i]);
  if (g->state_reader >= 0)
    pa_ring_reader_unregister(g->st->state, g->state_reader);
  if (g->scan_reader >= 0)
    pa_ring_reader_unregister(g->st->scan, g->scan_reader);
  if (g->cam_reader >= 0)
    pa_ring_reader_unregister(g->st->camera, g->cam_reader);
  if (g->ctl && g->port && g->ctl->health[PA_PROC_NETGW].pid == getpid()) {
    publish_health(g);
    g->ctl->health[PA_PROC_NETGW].ready = 0;
    __atomic_store_n(&g->ctl->tcp_port, 0, __ATOMIC_RELEASE);
  }
  if (g->sig_int)
    event_free(g->sig_int);
  if (g->sig_term)
    event_free(g->sig_term);
  if (g->stop_ev)
    event_free(g->stop_ev);
  if (g->health_ev)
    event_free(g->health_ev);
  if (g->relisten_ev)
    event_free(g->relisten_ev);
  if (g->lis)
    evconnlistener_free(g->lis);
  if (g->base)
    event_base_free(g->base);
  if (g->stop_fd >= 0)
    close(g->stop_fd);
  pa_udp_tx_close(&g->tx);
  if (g->map)
    pa_shm_detach(&g->map_seg);
  if (g->scan_cache)
    for (uint32_t r = 0; r < g->ctl->def.max_robots; r++)
      free(g->scan_cache[r]);
  free(g->scan_cache);
  free(g->clients);
  free(g->gens);
  free(g->odom.buf);
  free(g->odom.subs);
  if (g->odom.mu_init)
    pthread_mutex_destroy(&g->odom.mu);
  free(g->latest_buf);
  free(g->scan_buf);
  free(g->cam_buf);
  free(g);
}
