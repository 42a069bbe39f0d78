/* foxglove.c - the Foxglove WebSocket server (ws-protocol v1, subprotocols
 * foxglove.websocket.v1 and foxglove.sdk.v1) and the MCAP recorder, fed by
 * one loop timer that follows the state, scan and camera rings with cursors
 * of its own. Each message is encoded once (foxglove_msgs.c) and goes to
 * every subscribed client and the recording. */
#define _GNU_SOURCE
#include "foxglove.h"

#include "pa_util.h"
#include "ws.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/listener.h>
#include <turbojpeg.h>

#define FOX_MAX_CONNS 32
#define FOX_MAX_SUBS 256
#define FOX_MAX_PUBS 32
#define FOX_MAX_CALLS 64
#define FOX_TURN_US 10000     /* the timer's period */
#define FOX_STATE_HZ 50.0     /* /tf and /odom per simulated second */
#define FOX_STATE_PER_TURN 16 /* state emits per turn before skipping */
#define FOX_SCENE_PERIOD_NS 1000000000LL /* resent for late joiners */
#define FOX_HEAD_TIMEOUT_S 5 /* an upgrade request must come this soon */
#define FOX_MAX_QUEUED (8u << 20)
#define FOX_SOFT_QUEUED (1u << 20) /* beyond: drop (camera: a quarter) */
#define FOX_JPEG_QUALITY 80
/* Service calls' pa_cmd client id: no TCP client has slot 0xffffffff. */
#define FOX_CLIENT_ID 0x00000000ffffffffull
#define FOX_REPLAY_ID 0x00000001ffffffffull /* a replay's commands */

enum { SRV_RESET = 1, SRV_PAUSE, SRV_RESUME, SRV_STEP, SRV_TELEPORT, SRV_N };
static const char *const srv_names[SRV_N] = {NULL,      "/reset", "/pause",
                                             "/resume", "/step",  "/teleport"};

typedef struct fox_conn {
  struct pa_fox *f;
  struct pa_ws *ws;
  uint32_t slot, gen;
  struct {
    uint32_t sub, chan;
  } subs[FOX_MAX_SUBS];
  uint32_t n_subs;
  struct {
    uint32_t id;
    char topic[96];
  } pubs[FOX_MAX_PUBS];
  uint32_t n_pubs;
  uint64_t sent, dropped;
} fox_conn;

typedef struct fox_head {
  struct pa_fox *f;
  evutil_socket_t fd;
  struct event *ev;
  size_t n;
  char buf[PA_WS_MAX_HEAD];
} fox_head;

typedef struct fox_call {
  bool used;
  uint64_t req;
  uint32_t slot, gen, service, call;
  int64_t deadline;
} fox_call;

/* A robot slot's channels, as advertised (ids change when the slot's robot
 * does, so a client never mixes two robots' messages). */
typedef struct fox_robot {
  bool live;
  uint32_t gen;
  char name[32];
  uint32_t chan[PA_FOX_ROBOT_KINDS];
  int rec[PA_FOX_ROBOT_KINDS]; /* mcap channel ids (0 = not yet) */
  bool cam_demand;             /* counted in the shm camera demand */
} fox_robot;

struct pa_fox {
  pa_netgw *g;
  struct evconnlistener *lis;
  unsigned port;
  struct event *turn_ev;
  fox_conn *conns[FOX_MAX_CONNS];
  uint32_t gens;
  uint32_t n_conns;
  fox_call calls[FOX_MAX_CALLS];
  uint32_t next_chan;
  fox_robot *robots;     /* [max_robots] */
  pa_robot_info *info;   /* [max_robots] world snapshot copy */
  pa_obstacle_info *obs; /* [max_obstacles] */
  uint32_t n_info, n_obs;
  uint32_t world_gen, nav_gen, map_gen;
  bool have_world;
  pa_nav_block *nav;
  bool map_dirty, scene_dirty;
  int64_t scene_sent_ns;
  pa_ring_cursor state_cur, scan_cur, cam_cur;
  uint8_t *state_buf, *scan_buf, *cam_buf;
  double next_state_time;
  double last_time_sent;
  bool idle;      /* no client, no recording: the cursors are not followed */
  pa_fox_buf msg; /* 13-byte messageData header + the payload */
  tjhandle tj;
  uint64_t sent, dropped, jpeg_frames;
  pa_fox_scene_hook hooks[8];
  size_t n_hooks;
  /* the recording */
  pa_mcap *rec;
  char rec_path[256];
  char **rec_topics; /* NULL = all */
  double rec_until;  /* sim time; 0 = no limit */
  double rec_seconds;
  bool rec_started_time;
  int rec_schema[PA_FOX_KINDS];
  int rec_world[PA_FOX_WORLD_KINDS];
  /* the replay */
  struct {
    const char *state; /* "" = none yet */
    pa_cmd *cmds;
    uint32_t n, next, errors;
    char *final; /* the recording's last /state */
    size_t final_len;
    uint64_t sync_req;
    int64_t deadline;
    char detail[256];
  } rp;
};

static const uint32_t world_chan[PA_FOX_WORLD_KINDS] = {1, 2, 3, 4, 5};

/* Recording-only kinds: not advertised to clients. */
static bool rec_only(int kind) {
  return kind == PA_FOX_COMMANDS || kind == PA_FOX_STATE;
}

/* ---- small helpers
 * ------------------------------------------------------------*/

static void le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static void send_json(fox_conn *c, json_t *j) {
  char *s = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  if (!s)
    return;
  if (pa_ws_send_text(c->ws, s, strlen(s)) != 0)
    c->dropped++;
  free(s);
}

static void status(fox_conn *c, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void status(fox_conn *c, int level, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  send_json(c, json_pack("{s:s, s:i, s:s}", "op", "status", "level", level,
                         "message", msg));
}

static bool topic_recorded(const pa_fox *f, const char *topic) {
  if (!f->rec)
    return false;
  if (!f->rec_topics)
    return true;
  for (char **t = f->rec_topics; *t; t++) {
    size_t n = strlen(*t);
    if (n && (*t)[n - 1] == '*' ? !strncmp(*t, topic, n - 1)
                                : !strcmp(*t, topic))
      return true;
  }
  return false;
}

/* ---- channels
 * -------------------------------------------------------------------*/

static json_t *chan_json(uint32_t id, int kind, const char *robot) {
  char topic[96];
  pa_fox_topic(kind, robot, topic, sizeof topic);
  return json_pack("{s:i, s:s, s:s, s:s, s:s, s:s}", "id", (json_int_t)id,
                   "topic", topic, "encoding", "json", "schemaName",
                   pa_fox_schema_name(kind), "schema", pa_fox_schema(kind),
                   "schemaEncoding", "jsonschema");
}

/* Advertises every current channel to c. */
static void advertise_all(pa_fox *f, fox_conn *c) {
  json_t *chans = json_array();
  for (int k = 0; k < PA_FOX_WORLD_KINDS; k++)
    if (!rec_only(k))
      json_array_append_new(chans, chan_json(world_chan[k], k, NULL));
  for (uint32_t r = 0; r < f->g->ctl->def.max_robots; r++)
    if (f->robots[r].live)
      for (int k = 0; k < PA_FOX_ROBOT_KINDS; k++)
        json_array_append_new(chans,
                              chan_json(f->robots[r].chan[k], PA_FOX_SCAN + k,
                                        f->robots[r].name));
  send_json(c, json_pack("{s:s, s:o}", "op", "advertise", "channels", chans));
}

static void cam_demand(pa_fox *f, uint32_t robot, int delta) {
  uint32_t *p = &f->g->st->cam[robot].subscribers;
  if (delta > 0) {
    __atomic_fetch_add(p, 1, __ATOMIC_RELEASE);
  } else {
    uint32_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
    while (v > 0 &&
           !__atomic_compare_exchange_n(p, &v, v - 1, false, __ATOMIC_RELEASE,
                                        __ATOMIC_ACQUIRE))
      ;
  }
  sem_post(&f->g->ctl->render_wake);
}

static bool chan_subscribed(const pa_fox *f, uint32_t chan) {
  for (uint32_t i = 0; i < FOX_MAX_CONNS; i++) {
    const fox_conn *c = f->conns[i];
    for (uint32_t s = 0; c && s < c->n_subs; s++)
      if (c->subs[s].chan == chan)
        return true;
  }
  return false;
}

/* Keeps each robot's camera demand in shm while a client or the recording
 * wants its images (pa-render only renders what someone wants). */
static void update_cam_demand(pa_fox *f) {
  for (uint32_t r = 0; r < f->g->ctl->def.max_robots; r++) {
    fox_robot *fr = &f->robots[r];
    bool want = false;
    if (fr->live) {
      char topic[96];
      pa_fox_topic(PA_FOX_CAMERA, fr->name, topic, sizeof topic);
      want = chan_subscribed(f, fr->chan[PA_FOX_CAMERA - PA_FOX_SCAN]) ||
             topic_recorded(f, topic);
    }
    if (want != fr->cam_demand) {
      cam_demand(f, r, want ? +1 : -1);
      fr->cam_demand = want;
    }
  }
}

/* Re-reads the world snapshot when it changed: robots that came or went
 * get their channels advertised or unadvertised. */
static void refresh_world(pa_fox *f) {
  pa_netgw *g = f->g;
  uint32_t gen = __atomic_load_n(&g->ctl->world_gen, __ATOMIC_ACQUIRE);
  if (f->have_world && gen == f->world_gen)
    return;
  uint32_t nr = g->ctl->def.max_robots, no = g->ctl->def.max_obstacles;
  bool ok = false;
  for (int tries = 0; tries < 100 && !ok; tries++) {
    uint64_t s = pa_stack_world_read_begin(g->st);
    if (s & 1u)
      return; /* mid-update: next turn */
    f->n_info = __atomic_load_n(&g->ctl->robot_count, __ATOMIC_ACQUIRE);
    f->n_obs = __atomic_load_n(&g->ctl->obstacle_count, __ATOMIC_ACQUIRE);
    if (f->n_info > nr)
      f->n_info = nr;
    if (f->n_obs > no)
      f->n_obs = no;
    memcpy(f->info, g->st->robots, nr * sizeof *f->info);
    memcpy(f->obs, g->st->obstacles, f->n_obs * sizeof *f->obs);
    ok = !pa_stack_world_read_retry(g->st, s);
  }
  if (!ok)
    return;
  f->have_world = true;
  f->world_gen = gen;
  f->scene_dirty = true;
  json_t *gone = json_array(), *added = json_array();
  for (uint32_t r = 0; r < nr; r++) {
    pa_robot_info *ri = &f->info[r];
    ri->name[sizeof ri->name - 1] = 0;
    fox_robot *fr = &f->robots[r];
    bool live = r < f->n_info && ri->active;
    if (fr->live &&
        (!live || fr->gen != ri->gen || strcmp(fr->name, ri->name))) {
      for (int k = 0; k < PA_FOX_ROBOT_KINDS; k++)
        json_array_append_new(gone, json_integer(fr->chan[k]));
      if (fr->cam_demand)
        cam_demand(f, r, -1);
      /* subscriptions to the old channels end with them */
      for (uint32_t i = 0; i < FOX_MAX_CONNS; i++) {
        fox_conn *c = f->conns[i];
        for (uint32_t s = 0; c && s < c->n_subs;) {
          bool old = false;
          for (int k = 0; k < PA_FOX_ROBOT_KINDS; k++)
            old |= c->subs[s].chan == fr->chan[k];
          if (old)
            c->subs[s] = c->subs[--c->n_subs];
          else
            s++;
        }
      }
      memset(fr, 0, sizeof *fr);
    }
    if (live && !fr->live) {
      fr->live = true;
      fr->gen = ri->gen;
      snprintf(fr->name, sizeof fr->name, "%s", ri->name);
      for (int k = 0; k < PA_FOX_ROBOT_KINDS; k++) {
        fr->chan[k] = f->next_chan++;
        json_array_append_new(
            added, chan_json(fr->chan[k], PA_FOX_SCAN + k, fr->name));
      }
    }
  }
  for (uint32_t i = 0; i < FOX_MAX_CONNS; i++) {
    fox_conn *c = f->conns[i];
    if (!c)
      continue;
    if (json_array_size(gone))
      send_json(
          c, json_pack("{s:s, s:O}", "op", "unadvertise", "channelIds", gone));
    if (json_array_size(added))
      send_json(c,
                json_pack("{s:s, s:O}", "op", "advertise", "channels", added));
  }
  json_decref(gone);
  json_decref(added);
  update_cam_demand(f);
}

/* ---- publishing
 * -------------------------------------------------------------------*/

/* Starts a message in f->msg: the 13 header bytes, then the encoder's. */
static pa_fox_buf *msg_begin(pa_fox *f) {
  f->msg.n = 0;
  f->msg.oom = false;
  uint8_t hdr[13] = {0x01};
  pa_fox_buf_put(&f->msg, hdr, sizeof hdr);
  return &f->msg;
}

/* The recording's channel for a topic of that kind, created on first use;
 * 0 when the topic is not recorded. */
static int rec_channel(pa_fox *f, int kind, int *slot, const char *topic) {
  if (!f->rec || !topic_recorded(f, topic))
    return 0;
  if (*slot)
    return *slot;
  if (!f->rec_schema[kind]) {
    const char *s = pa_fox_schema(kind);
    f->rec_schema[kind] = pa_mcap_schema(f->rec, pa_fox_schema_name(kind),
                                         "jsonschema", s, strlen(s));
  }
  if (f->rec_schema[kind] > 0)
    *slot = pa_mcap_channel(f->rec, f->rec_schema[kind], topic, "json");
  return *slot > 0 ? *slot : 0;
}

/* Sends f->msg (begun by msg_begin) on channel chan to its subscribers and
 * into the recording (mcap channel rec, 0 = not recorded). */
static void publish(pa_fox *f, uint32_t chan, int rec, uint64_t t_ns,
                    bool camera) {
  if (f->msg.oom)
    return;
  uint8_t *p = (uint8_t *)f->msg.p;
  size_t n = f->msg.n;
  if (rec > 0)
    pa_mcap_write(f->rec, rec, t_ns, t_ns, p + 13, n - 13);
  le64(p + 5, t_ns);
  size_t soft = camera ? FOX_SOFT_QUEUED / 4 : FOX_SOFT_QUEUED;
  for (uint32_t i = 0; i < FOX_MAX_CONNS; i++) {
    fox_conn *c = f->conns[i];
    for (uint32_t s = 0; c && s < c->n_subs; s++) {
      if (c->subs[s].chan != chan)
        continue;
      le32(p + 1, c->subs[s].sub);
      /* A slow client loses messages instead of growing a queue. */
      if (pa_ws_queued(c->ws) + n > soft ||
          pa_ws_send_binary(c->ws, p, n) != 0) {
        c->dropped++;
        f->dropped++;
      } else {
        c->sent++;
        f->sent++;
      }
    }
  }
}

/* Whether anyone (a client, the recording) wants channel chan / topic. */
static bool wanted(pa_fox *f, uint32_t chan, const char *topic) {
  return chan_subscribed(f, chan) || topic_recorded(f, topic);
}

static double latest_time(pa_fox *f) {
  const pa_tick *t = pa_gw_latest(f->g);
  return t ? t->sim_time : 0;
}

static void emit_map(pa_fox *f) {
  const char *topic = "/map";
  if (!wanted(f, world_chan[PA_FOX_MAP], topic))
    return;
  const pa_map_block *m;
  const int8_t *cells;
  if (pa_gw_map(f->g, &m, &cells) != 0)
    return;
  f->map_gen = f->g->map_gen;
  uint64_t t = pa_fox_ns(latest_time(f));
  pa_fox_enc_grid(msg_begin(f), t, m, cells);
  publish(f, world_chan[PA_FOX_MAP],
          rec_channel(f, PA_FOX_MAP, &f->rec_world[PA_FOX_MAP], topic), t,
          false);
}

static void emit_scene(pa_fox *f) {
  const char *topic = "/scene";
  f->scene_sent_ns = pa_now_ns();
  if (!wanted(f, world_chan[PA_FOX_SCENE], topic))
    return;
  uint32_t ng = __atomic_load_n(&f->g->st->nav->gen, __ATOMIC_ACQUIRE);
  if (ng != f->nav_gen || !f->nav_gen) {
    if (pa_stack_nav_read(f->g->st, f->nav))
      f->nav_gen = ng;
  }
  uint64_t t = pa_fox_ns(latest_time(f));
  pa_fox_enc_scene(msg_begin(f), t, f->obs, f->n_obs, f->nav, f->info,
                   f->n_info, f->g, f->hooks, f->n_hooks);
  publish(f, world_chan[PA_FOX_SCENE],
          rec_channel(f, PA_FOX_SCENE, &f->rec_world[PA_FOX_SCENE], topic), t,
          false);
}

static void emit_state(pa_fox *f, const pa_tick *t) {
  uint64_t ns = pa_fox_ns(t->sim_time);
  uint32_t nr = f->g->ctl->def.max_robots;
  const pa_robot_state *rs[nr ? nr : 1];
  uint32_t n = f->n_info < nr ? f->n_info : nr;
  for (uint32_t r = 0; r < n; r++)
    rs[r] = f->robots[r].live ? pa_gw_robot_state(t, r) : NULL;
  if (wanted(f, world_chan[PA_FOX_TF], "/tf")) {
    pa_fox_enc_tf(msg_begin(f), ns, f->info, rs, n);
    publish(f, world_chan[PA_FOX_TF],
            rec_channel(f, PA_FOX_TF, &f->rec_world[PA_FOX_TF], "/tf"), ns,
            false);
  }
  for (uint32_t r = 0; r < n; r++) {
    fox_robot *fr = &f->robots[r];
    uint32_t chan = fr->chan[PA_FOX_ODOM - PA_FOX_SCAN];
    char topic[96];
    pa_fox_topic(PA_FOX_ODOM, fr->name, topic, sizeof topic);
    if (!rs[r] || !wanted(f, chan, topic))
      continue;
    pa_fox_enc_odom(msg_begin(f), ns, fr->name, rs[r]);
    publish(
        f, chan,
        rec_channel(f, PA_FOX_ODOM, &fr->rec[PA_FOX_ODOM - PA_FOX_SCAN], topic),
        ns, false);
  }
}

static bool ring_next(const pa_ring *r, pa_ring_cursor *c, void *buf,
                      uint32_t cap, uint32_t *len) {
  for (;;) {
    uint64_t seq;
    int rc = pa_ring_read_next(r, c, buf, cap, len, &seq);
    if (rc == 0)
      return true;
    if (rc == PA_SHM_EMPTY)
      return false;
    c->next++; /* too big for the buffer: skipped */
  }
}

static void follow_state(pa_fox *f) {
  pa_netgw *g = f->g;
  uint32_t len;
  int emits = 0;
  uint64_t head = pa_ring_head(g->st->state);
  while (f->state_cur.next <= head &&
         ring_next(g->st->state, &f->state_cur, f->state_buf, g->state_cap,
                   &len)) {
    const pa_tick *t = (const pa_tick *)f->state_buf;
    if (len < sizeof *t ||
        sizeof *t + (uint64_t)t->robot_count * sizeof(pa_robot_state) > len)
      continue;
    if (t->sim_time + 1e-9 < f->next_state_time &&
        f->next_state_time - t->sim_time < 1.0)
      continue; /* not due (a reset's jump back re-arms) */
    emit_state(f, t);
    f->next_state_time = t->sim_time + 1.0 / FOX_STATE_HZ;
    if (++emits >= FOX_STATE_PER_TURN) {
      /* far behind (thousands of x real time): sample, never lag */
      f->state_cur = pa_ring_cursor_now(g->st->state);
      break;
    }
  }
}

static void follow_scans(pa_fox *f) {
  pa_netgw *g = f->g;
  uint32_t len;
  uint64_t head = pa_ring_head(g->st->scan);
  int n = 0;
  while (f->scan_cur.next <= head &&
         ring_next(g->st->scan, &f->scan_cur, f->scan_buf, g->scan_cap, &len)) {
    const pa_scan *s = (const pa_scan *)f->scan_buf;
    if (len < sizeof *s || sizeof *s + (uint64_t)s->count * 4 > len ||
        s->robot >= g->ctl->def.max_robots || !f->robots[s->robot].live)
      continue;
    fox_robot *fr = &f->robots[s->robot];
    uint32_t chan = fr->chan[PA_FOX_SCAN - PA_FOX_SCAN];
    char topic[96];
    pa_fox_topic(PA_FOX_SCAN, fr->name, topic, sizeof topic);
    if (!wanted(f, chan, topic))
      continue;
    pa_fox_enc_scan(msg_begin(f), fr->name, s);
    publish(f, chan, rec_channel(f, PA_FOX_SCAN, &fr->rec[0], topic),
            pa_fox_ns(s->sim_time), false);
    if (++n >= 64 * (int)g->ctl->def.max_robots) {
      f->scan_cur = pa_ring_cursor_now(g->st->scan);
      break;
    }
  }
}

static void follow_camera(pa_fox *f) {
  pa_netgw *g = f->g;
  uint32_t len;
  uint64_t head = pa_ring_head(g->st->camera);
  /* only the newest few images: JPEG encoding is the costly part */
  if (head > f->cam_cur.next + 4)
    f->cam_cur.next = head - 3;
  while (f->cam_cur.next <= head &&
         ring_next(g->st->camera, &f->cam_cur, f->cam_buf, g->cam_cap, &len)) {
    const pa_frame *fr = (const pa_frame *)f->cam_buf;
    if (len < sizeof *fr || fr->size != (uint32_t)fr->width * fr->height * 3u ||
        sizeof *fr + (uint64_t)fr->size > len || !fr->width ||
        fr->robot >= g->ctl->def.max_robots || !f->robots[fr->robot].live)
      continue;
    fox_robot *rb = &f->robots[fr->robot];
    uint32_t chan = rb->chan[PA_FOX_CAMERA - PA_FOX_SCAN];
    char topic[96];
    pa_fox_topic(PA_FOX_CAMERA, rb->name, topic, sizeof topic);
    if (!wanted(f, chan, topic))
      continue; /* nobody subscribed: never encoded */
    char err[128];
    if (!f->tj && !(f->tj = tjInitCompress()))
      return;
    if (pa_fox_enc_image(msg_begin(f), f->tj, rb->name, fr, FOX_JPEG_QUALITY,
                         err, sizeof err) != 0) {
      pa_warn("foxglove: %s", err);
      continue;
    }
    f->jpeg_frames++;
    publish(f, chan,
            rec_channel(f, PA_FOX_CAMERA, &rb->rec[PA_FOX_CAMERA - PA_FOX_SCAN],
                        topic),
            pa_fox_ns(fr->sim_time), true);
  }
}

static void send_time(pa_fox *f, double sim_time) {
  if (sim_time == f->last_time_sent)
    return;
  f->last_time_sent = sim_time;
  uint8_t m[9] = {0x02};
  le64(m + 1, pa_fox_ns(sim_time));
  for (uint32_t i = 0; i < FOX_MAX_CONNS; i++)
    if (f->conns[i] && pa_ws_queued(f->conns[i]->ws) < FOX_SOFT_QUEUED)
      pa_ws_send_binary(f->conns[i]->ws, m, sizeof m);
}

static void call_reply(pa_fox *f, fox_call *k, const pa_reply *r);

static void stop_recording_now(pa_fox *f, const char *why) {
  pa_mcap_stats st;
  char path[256], err[256];
  if (pa_fox_record_stop(f, &st, path, sizeof path, err, sizeof err) == 0)
    pa_info("foxglove: recording %s stopped (%s): %" PRIu64
            " messages, %" PRIu64 " chunks, %" PRIu64 " dropped",
            path, why, st.messages, st.chunks, st.dropped);
  else
    pa_warn("foxglove: recording stopped (%s): %s", why, err);
}

static void replay_feed(pa_fox *f);

static void arm(pa_fox *f) {
  if (!evtimer_pending(f->turn_ev, NULL)) {
    struct timeval tv = {0, FOX_TURN_US};
    evtimer_add(f->turn_ev, &tv);
  }
}

static void on_turn(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  pa_fox *f = arg;
  pa_netgw *g = f->g;
  int64_t t0 = pa_now_ns();
  for (int i = 0; i < FOX_MAX_CALLS; i++)
    if (f->calls[i].used && t0 > f->calls[i].deadline)
      call_reply(f, &f->calls[i], NULL);
  replay_feed(f);
  if (!f->n_conns && !f->rec) {
    bool calls = !strcmp(f->rp.state, "running");
    for (int i = 0; i < FOX_MAX_CALLS; i++)
      calls |= f->calls[i].used;
    if (calls)
      arm(f);
    f->idle = true; /* the timer stops until a client or a recording */
    return;
  }
  if (f->idle) {
    /* from what is new on, not a backlog of stale records */
    f->state_cur = pa_ring_cursor_now(g->st->state);
    f->scan_cur = pa_ring_cursor_now(g->st->scan);
    f->cam_cur = pa_ring_cursor_now(g->st->camera);
    f->idle = false;
  }
  g->loops++;
  refresh_world(f);
  const pa_tick *t = pa_gw_latest(g);
  if (t) {
    double now = t->sim_time;
    send_time(f, now);
    if (f->rec && f->rec_seconds > 0 && !f->rec_started_time) {
      f->rec_until = now + f->rec_seconds;
      f->rec_started_time = true;
    }
    if (f->map_dirty ||
        __atomic_load_n(&g->ctl->map_gen, __ATOMIC_ACQUIRE) != f->map_gen) {
      f->map_dirty = false;
      f->map_gen = __atomic_load_n(&g->ctl->map_gen, __ATOMIC_ACQUIRE);
      emit_map(f);
    }
    uint32_t ng = __atomic_load_n(&g->st->nav->gen, __ATOMIC_ACQUIRE);
    if (f->scene_dirty || ng != f->nav_gen ||
        t0 - f->scene_sent_ns > FOX_SCENE_PERIOD_NS) {
      f->scene_dirty = false;
      emit_scene(f);
    }
    follow_state(f);
    follow_scans(f);
    follow_camera(f);
    if (f->rec && f->rec_until > 0 && now >= f->rec_until)
      stop_recording_now(f, "its seconds are up");
  }
  pa_gw_account(g, t0);
  arm(f);
}

/* ---- services
 * ---------------------------------------------------------------------*/

static void send_service_response(fox_conn *c, uint32_t service, uint32_t call,
                                  const char *json) {
  size_t jl = strlen(json);
  uint8_t *m = malloc(17 + jl);
  if (!m)
    return;
  m[0] = 0x03;
  le32(m + 1, service);
  le32(m + 5, call);
  le32(m + 9, 4);
  memcpy(m + 13, "json", 4);
  memcpy(m + 17, json, jl);
  if (pa_ws_send_binary(c->ws, m, 17 + jl) != 0)
    c->dropped++;
  free(m);
}

static void service_failure(fox_conn *c, uint32_t service, uint32_t call,
                            const char *msg) {
  send_json(c, json_pack("{s:s, s:i, s:i, s:s}", "op", "serviceCallFailure",
                         "serviceId", (json_int_t)service, "callId",
                         (json_int_t)call, "message", msg));
}

static void call_reply(pa_fox *f, fox_call *k, const pa_reply *r) {
  k->used = false;
  fox_conn *c = k->slot < FOX_MAX_CONNS ? f->conns[k->slot] : NULL;
  if (!c || c->gen != k->gen)
    return; /* its client left */
  pa_status st;
  char msg[160];
  if (pa_gw_reply_error(f->g, r, &st, msg, sizeof msg)) {
    service_failure(c, k->service, k->call, msg);
    return;
  }
  char js[160];
  snprintf(js, sizeof js,
           "{\"success\":true,\"message\":\"\",\"tick\":%" PRIu64
           ",\"sim_time\":%.9g}",
           r->tick, r->sim_time);
  send_service_response(c, k->service, k->call, js);
}

static void replay_reply(pa_fox *f, const pa_reply *r);

bool pa_fox_on_reply(pa_netgw *g, const pa_reply *r) {
  if (r->client_id == FOX_REPLAY_ID && g->fox) {
    replay_reply(g->fox, r);
    return true;
  }
  if (r->client_id != FOX_CLIENT_ID || !g->fox)
    return false;
  pa_fox *f = g->fox;
  for (int i = 0; i < FOX_MAX_CALLS; i++)
    if (f->calls[i].used && f->calls[i].req == r->request_id) {
      call_reply(f, &f->calls[i], r);
      break;
    }
  return true; /* a late one, for a call answered busy: dropped */
}

/* Pushes a command of this server (cmd_vel, a service call): 0 or -1 with
 * why in g->busy_msg. */
static int push(pa_fox *f, pa_cmd *cmd) {
  pa_netgw *g = f->g;
  if (pa_gw_sim_stalled(g))
    return -1;
  cmd->client_id = FOX_CLIENT_ID;
  cmd->request_id = ++g->next_req;
  if (pa_queue_push(g->st->cmd, cmd) != 0) {
    snprintf(g->busy_msg, sizeof g->busy_msg, "the command queue is full");
    return -1;
  }
  pa_fox_note_command(g, cmd);
  return 0;
}

static void service_call(fox_conn *c, const uint8_t *d, size_t n) {
  pa_fox *f = c->f;
  if (n < 13) {
    status(c, 2, "service call: %zu bytes is too short", n);
    return;
  }
  uint32_t service = rd32(d + 1), call = rd32(d + 5), el = rd32(d + 9);
  if (el > n - 13) {
    status(c, 2, "service call: bad encoding length");
    return;
  }
  const char *payload = (const char *)d + 13 + el;
  size_t pl = n - 13 - el;
  if (service < 1 || service >= SRV_N) {
    service_failure(c, service, call, "no such service");
    return;
  }
  json_error_t je;
  json_t *req = pl ? json_loadb(payload, pl, 0, &je) : json_object();
  if (!req || !json_is_object(req)) {
    json_decref(req);
    service_failure(c, service, call,
                    "the request must be a JSON object (encoding json)");
    return;
  }
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  char err[160] = "";
  switch (service) {
  case SRV_RESET:
    cmd.op = PA_OP_RESET;
    break;
  case SRV_PAUSE:
    cmd.op = PA_OP_PAUSE;
    break;
  case SRV_RESUME:
    cmd.op = PA_OP_RESUME;
    break;
  case SRV_STEP: {
    json_t *s = json_object_get(req, "steps");
    json_int_t steps =
        s ? (json_is_integer(s) ? json_integer_value(s) : -1) : 1;
    if (steps < 1 || steps > PA_NETGW_STEP_MAX)
      snprintf(err, sizeof err, "steps must be an integer in [1, %u]",
               PA_NETGW_STEP_MAX);
    cmd.op = PA_OP_STEP;
    cmd.step.ticks = (uint32_t)steps;
    break;
  }
  case SRV_TELEPORT: {
    json_t *rb = json_object_get(req, "robot");
    pa_robot_info info;
    uint32_t idx = 0;
    int rc =
        json_is_string(rb)
            ? pa_gw_robot(f->g, json_string_value(rb), -1, &info, &idx)
        : json_is_integer(rb)
            ? pa_gw_robot(f->g, NULL, (long)json_integer_value(rb), &info, &idx)
        : !rb ? pa_gw_robot(f->g, NULL, 0, &info, &idx)
              : -1;
    double v[3];
    const char *keys[3] = {"x", "y", "theta"};
    for (int i = 0; i < 3; i++) {
      json_t *x = json_object_get(req, keys[i]);
      v[i] = json_is_number(x) ? json_number_value(x) : NAN;
      if (i == 2 && !x)
        v[i] = 0;
      if (!isfinite(v[i]) && !err[0])
        snprintf(err, sizeof err, "%s must be a finite number", keys[i]);
    }
    if (rc != 0 && !err[0])
      snprintf(err, sizeof err, "robot: no such robot");
    cmd.op = PA_OP_TELEPORT;
    cmd.robot = idx;
    cmd.pose.x = v[0];
    cmd.pose.y = v[1];
    cmd.pose.theta = v[2];
    break;
  }
  }
  json_decref(req);
  if (err[0]) {
    service_failure(c, service, call, err);
    return;
  }
  fox_call *k = NULL;
  for (int i = 0; i < FOX_MAX_CALLS && !k; i++)
    if (!f->calls[i].used)
      k = &f->calls[i];
  if (!k) {
    service_failure(c, service, call, "busy: too many service calls waiting");
    return;
  }
  if (push(f, &cmd) != 0) {
    service_failure(c, service, call, f->g->busy_msg);
    return;
  }
  unsigned ms = f->g->def.request_timeout_ms;
  *k = (fox_call){.used = true,
                  .req = cmd.request_id,
                  .slot = c->slot,
                  .gen = c->gen,
                  .service = service,
                  .call = call,
                  .deadline = pa_now_ns() + (int64_t)ms * 1000000};
  arm(f);
}

static void advertise_services(fox_conn *c) {
  static const char *const req_schema[SRV_N] = {
      NULL,
      "{}",
      "{}",
      "{}",
      "{\"type\":\"object\",\"properties\":{\"steps\":{\"type\":\"integer\","
      "\"minimum\":1}}}",
      "{\"type\":\"object\",\"properties\":{\"robot\":{\"type\":[\"string\","
      "\"integer\"]},\"x\":{\"type\":\"number\"},\"y\":{\"type\":\"number\"},"
      "\"theta\":{\"type\":\"number\"}},\"required\":[\"x\",\"y\"]}"};
  const char *resp =
      "{\"type\":\"object\",\"properties\":{\"success\":{\"type\":\"boolean\"},"
      "\"message\":{\"type\":\"string\"},\"tick\":{\"type\":\"integer\"},"
      "\"sim_time\":{\"type\":\"number\"}}}";
  json_t *srvs = json_array();
  for (int s = 1; s < SRV_N; s++) {
    char type[64];
    snprintf(type, sizeof type, "playarea%s", srv_names[s]);
    char req_name[80], resp_name[80];
    snprintf(req_name, sizeof req_name, "%s_Request", type);
    snprintf(resp_name, sizeof resp_name, "%s_Response", type);
    json_array_append_new(
        srvs,
        json_pack("{s:i, s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:{s:s, s:s, s:s, "
                  "s:s}, s:s, s:s}",
                  "id", s, "name", srv_names[s], "type", type, "request",
                  "encoding", "json", "schemaName", req_name, "schemaEncoding",
                  "jsonschema", "schema", req_schema[s], "response", "encoding",
                  "json", "schemaName", resp_name, "schemaEncoding",
                  "jsonschema", "schema", resp, "requestSchema", req_schema[s],
                  "responseSchema", resp));
  }
  send_json(
      c, json_pack("{s:s, s:o}", "op", "advertiseServices", "services", srvs));
}

/* ---- client messages
 * ----------------------------------------------------------------*/

static bool chan_exists(pa_fox *f, uint32_t id) {
  for (int k = 0; k < PA_FOX_WORLD_KINDS; k++)
    if (!rec_only(k) && world_chan[k] == id)
      return true;
  for (uint32_t r = 0; r < f->g->ctl->def.max_robots; r++)
    for (int k = 0; f->robots[r].live && k < PA_FOX_ROBOT_KINDS; k++)
      if (f->robots[r].chan[k] == id)
        return true;
  return false;
}

static void on_subscribe(fox_conn *c, json_t *subs) {
  pa_fox *f = c->f;
  size_t i;
  json_t *s;
  json_array_foreach(subs, i, s) {
    json_t *id = json_object_get(s, "id"),
           *ch = json_object_get(s, "channelId");
    if (!json_is_integer(id) || !json_is_integer(ch)) {
      status(c, 2,
             "subscribe: each subscription needs integer id and "
             "channelId");
      continue;
    }
    uint32_t sid = (uint32_t)json_integer_value(id);
    uint32_t cid = (uint32_t)json_integer_value(ch);
    if (!chan_exists(f, cid)) {
      status(c, 1, "subscribe: no channel %u", cid);
      continue;
    }
    bool dup = false;
    for (uint32_t k = 0; k < c->n_subs; k++)
      dup |= c->subs[k].sub == sid;
    if (dup) {
      status(c, 1, "subscribe: subscription id %u is in use", sid);
      continue;
    }
    if (c->n_subs == FOX_MAX_SUBS) {
      status(c, 2, "subscribe: at most %d subscriptions", FOX_MAX_SUBS);
      break;
    }
    c->subs[c->n_subs].sub = sid;
    c->subs[c->n_subs].chan = cid;
    c->n_subs++;
    if (cid == world_chan[PA_FOX_MAP])
      f->map_dirty = true; /* the new subscriber gets the map now */
    if (cid == world_chan[PA_FOX_SCENE])
      f->scene_dirty = true;
  }
  update_cam_demand(f);
}

static void on_unsubscribe(fox_conn *c, json_t *ids) {
  size_t i;
  json_t *v;
  json_array_foreach(ids, i, v) {
    if (!json_is_integer(v))
      continue;
    uint32_t sid = (uint32_t)json_integer_value(v);
    for (uint32_t k = 0; k < c->n_subs; k++)
      if (c->subs[k].sub == sid) {
        c->subs[k] = c->subs[--c->n_subs];
        break;
      }
  }
  update_cam_demand(c->f);
}

static void on_client_advertise(fox_conn *c, json_t *chans) {
  size_t i;
  json_t *ch;
  json_array_foreach(chans, i, ch) {
    json_t *id = json_object_get(ch, "id"),
           *topic = json_object_get(ch, "topic"),
           *enc = json_object_get(ch, "encoding");
    if (!json_is_integer(id) || !json_is_string(topic)) {
      status(c, 2, "advertise: each channel needs integer id and topic");
      continue;
    }
    if (!json_is_string(enc) || strcmp(json_string_value(enc), "json")) {
      status(c, 2, "advertise %s: only the json encoding is supported",
             json_string_value(topic));
      continue;
    }
    if (c->n_pubs == FOX_MAX_PUBS) {
      status(c, 2, "advertise: at most %d client channels", FOX_MAX_PUBS);
      break;
    }
    c->pubs[c->n_pubs].id = (uint32_t)json_integer_value(id);
    snprintf(c->pubs[c->n_pubs].topic, sizeof c->pubs[0].topic, "%s",
             json_string_value(topic));
    c->n_pubs++;
  }
}

static void on_client_unadvertise(fox_conn *c, json_t *ids) {
  size_t i;
  json_t *v;
  json_array_foreach(ids, i, v) {
    for (uint32_t k = 0; k < c->n_pubs; k++)
      if (json_is_integer(v) && c->pubs[k].id == json_integer_value(v)) {
        c->pubs[k] = c->pubs[--c->n_pubs];
        break;
      }
  }
}

static double twist_part(json_t *j, const char *part, const char *axis) {
  json_t *v = json_object_get(json_object_get(j, part), axis);
  return v ? (json_is_number(v) ? json_number_value(v) : NAN) : 0;
}

/* A client message: a Twist on /<robot>/cmd_vel drives that robot. */
static void on_client_data(fox_conn *c, const uint8_t *d, size_t n) {
  if (n < 5)
    return;
  uint32_t id = rd32(d + 1);
  const char *topic = NULL;
  for (uint32_t k = 0; k < c->n_pubs && !topic; k++)
    if (c->pubs[k].id == id)
      topic = c->pubs[k].topic;
  if (!topic) {
    status(c, 2, "message on channel %u, which was not advertised", id);
    return;
  }
  char robot[40];
  const char *slash = strchr(topic + 1, '/');
  if (topic[0] != '/' || !slash || strcmp(slash, "/cmd_vel") ||
      (size_t)(slash - topic - 1) >= sizeof robot) {
    status(c, 1, "%s: only /<robot>/cmd_vel (a Twist) is accepted", topic);
    return;
  }
  snprintf(robot, sizeof robot, "%.*s", (int)(slash - topic - 1), topic + 1);
  pa_robot_info info;
  uint32_t idx;
  if (pa_gw_robot(c->f->g, robot, -1, &info, &idx) != 0) {
    status(c, 2, "%s: no robot named %s", topic, robot);
    return;
  }
  json_error_t je;
  json_t *j = json_loadb((const char *)d + 5, n - 5, 0, &je);
  if (!json_is_object(j)) {
    json_decref(j);
    status(c, 2, "%s: not a JSON object: %s", topic, je.text);
    return;
  }
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_SET_CMD;
  cmd.robot = idx;
  cmd.flags = PA_CMDF_NO_REPLY;
  cmd.drive.v = twist_part(j, "linear", "x");
  cmd.drive.vy = info.drive == PA_DRIVE_OMNI ? twist_part(j, "linear", "y") : 0;
  cmd.drive.w = twist_part(j, "angular", "z");
  cmd.drive.frame = PA_FRAME_ROBOT;
  json_decref(j);
  const char *bad = pa_cmd_drive_error(&cmd.drive);
  if (bad) {
    status(c, 2, "%s: %s", topic, bad);
    return;
  }
  if (push(c->f, &cmd) != 0)
    status(c, 1, "%s: %s", topic, c->f->g->busy_msg);
}

/* ---- parameters: the sim's time scale and pause, and read-only rates ----*/

static json_t *param_value(pa_fox *f, const char *name) {
  const pa_tick *t = pa_gw_latest(f->g);
  if (!strcmp(name, "/time_scale"))
    return json_real(t ? t->speed : 1);
  if (!strcmp(name, "/paused"))
    return json_boolean(t && (t->flags & PA_TICK_PAUSED));
  if (!strcmp(name, "/control_hz"))
    return json_real(f->g->ctl->control_hz);
  if (!strcmp(name, "/scan_hz"))
    return json_real(f->g->ctl->scan_hz);
  if (!strcmp(name, "/robot_count"))
    return json_integer(f->g->ctl->robot_count);
  return NULL;
}

static const char *const param_names[] = {
    "/time_scale", "/paused", "/control_hz", "/scan_hz", "/robot_count"};

static void send_params(fox_conn *c, json_t *names, json_t *id,
                        json_t *override) {
  json_t *out = json_array();
  size_t n = json_is_array(names) && json_array_size(names)
                 ? json_array_size(names)
                 : sizeof param_names / sizeof param_names[0];
  for (size_t i = 0; i < n; i++) {
    const char *name = json_is_array(names) && json_array_size(names)
                           ? json_string_value(json_array_get(names, i))
                           : param_names[i];
    json_t *v = name ? json_object_get(override, name) : NULL;
    v = v ? json_incref(v) : (name ? param_value(c->f, name) : NULL);
    if (v)
      json_array_append_new(out,
                            json_pack("{s:s, s:o}", "name", name, "value", v));
  }
  json_t *m =
      json_pack("{s:s, s:o}", "op", "parameterValues", "parameters", out);
  if (json_is_string(id))
    json_object_set(m, "id", id);
  send_json(c, m);
}

/* setParameters: /time_scale and /paused go to pa-sim (applied on its next
 * tick; the answer gives the values as requested); the others are
 * read-only. */
static void on_set_params(fox_conn *c, json_t *params, json_t *id) {
  json_t *names = json_array(), *done = json_object();
  size_t i;
  json_t *p;
  json_array_foreach(params, i, p) {
    const char *name = json_string_value(json_object_get(p, "name"));
    json_t *v = json_object_get(p, "value");
    pa_cmd cmd;
    memset(&cmd, 0, sizeof cmd);
    if (name && !strcmp(name, "/time_scale") && json_is_number(v) &&
        json_number_value(v) >= 0 &&
        json_number_value(v) <= PA_NETGW_SPEED_MAX) {
      cmd.op = PA_OP_SPEED;
      cmd.speed.factor = json_number_value(v);
    } else if (name && !strcmp(name, "/paused") && json_is_boolean(v)) {
      cmd.op = json_is_true(v) ? PA_OP_PAUSE : PA_OP_RESUME;
    } else {
      status(c, 2,
             "setParameters %s: only /time_scale (0..%g) and /paused "
             "(boolean) can be set",
             name ? name : "?", PA_NETGW_SPEED_MAX);
      continue;
    }
    cmd.flags = PA_CMDF_NO_REPLY;
    if (push(c->f, &cmd) != 0) {
      status(c, 1, "setParameters %s: %s", name, c->f->g->busy_msg);
      continue;
    }
    json_array_append_new(names, json_string(name));
    json_object_set(done, name, v);
  }
  if (id && json_array_size(names))
    send_params(c, names, id, done);
  json_decref(names);
  json_decref(done);
}

static void on_text(struct pa_ws *ws, const char *data, size_t len, void *arg) {
  (void)ws;
  fox_conn *c = arg;
  int64_t t0 = pa_now_ns();
  json_error_t je;
  json_t *j = json_loadb(data, len, 0, &je);
  const char *op = json_string_value(json_object_get(j, "op"));
  if (!op) {
    status(c, 2, "not a JSON object with an op: %s", j ? "no op" : je.text);
  } else if (!strcmp(op, "subscribe")) {
    on_subscribe(c, json_object_get(j, "subscriptions"));
  } else if (!strcmp(op, "unsubscribe")) {
    on_unsubscribe(c, json_object_get(j, "subscriptionIds"));
  } else if (!strcmp(op, "advertise")) {
    on_client_advertise(c, json_object_get(j, "channels"));
  } else if (!strcmp(op, "unadvertise")) {
    on_client_unadvertise(c, json_object_get(j, "channelIds"));
  } else if (!strcmp(op, "getParameters")) {
    send_params(c, json_object_get(j, "parameterNames"),
                json_object_get(j, "id"), NULL);
  } else if (!strcmp(op, "setParameters")) {
    on_set_params(c, json_object_get(j, "parameters"),
                  json_object_get(j, "id"));
  } else {
    status(c, 1, "op %s is not supported by this server", op);
  }
  json_decref(j);
  arm(c->f);
  pa_gw_account(c->f->g, t0);
}

static void on_binary(struct pa_ws *ws, const uint8_t *data, size_t len,
                      void *arg) {
  (void)ws;
  fox_conn *c = arg;
  int64_t t0 = pa_now_ns();
  if (len && data[0] == 0x01)
    on_client_data(c, data, len);
  else if (len && data[0] == 0x02)
    service_call(c, data, len);
  else
    status(c, 2, "unknown binary opcode %u", len ? data[0] : 0);
  pa_gw_account(c->f->g, t0);
}

static void on_close(struct pa_ws *ws, void *arg) {
  (void)ws;
  fox_conn *c = arg;
  pa_fox *f = c->f;
  f->conns[c->slot] = NULL;
  f->n_conns--;
  free(c);
  update_cam_demand(f);
}

/* ---- accepting
 * ----------------------------------------------------------------------*/

static const char *const protocols[] = {"foxglove.websocket.v1",
                                        "foxglove.sdk.v1", NULL};

static void head_free(fox_head *h, bool close_fd) {
  if (h->ev)
    event_free(h->ev);
  if (close_fd)
    evutil_closesocket(h->fd);
  free(h);
}

static void on_head(evutil_socket_t fd, short what, void *arg) {
  fox_head *h = arg;
  pa_fox *f = h->f;
  if (what & EV_TIMEOUT) {
    head_free(h, true);
    return;
  }
  ssize_t r = recv(fd, h->buf + h->n, sizeof h->buf - 1 - h->n, 0);
  if (r < 0 && (errno == EAGAIN || errno == EINTR))
    return;
  if (r <= 0) {
    head_free(h, true);
    return;
  }
  h->n += (size_t)r;
  h->buf[h->n] = 0;
  char *end = strstr(h->buf, "\r\n\r\n");
  if (!end) {
    if (h->n == sizeof h->buf - 1) {
      static const char resp[] = "HTTP/1.1 431 Request Header Fields Too "
                                 "Large\r\nConnection: close\r\n\r\n";
      ssize_t w = send(fd, resp, sizeof resp - 1, MSG_NOSIGNAL);
      (void)w;
      head_free(h, true);
    }
    return;
  }
  size_t head_len = (size_t)(end + 4 - h->buf);
  uint32_t slot = 0;
  while (slot < FOX_MAX_CONNS && f->conns[slot])
    slot++;
  if (slot == FOX_MAX_CONNS) {
    static const char resp[] = "HTTP/1.1 503 Service Unavailable\r\n"
                               "Connection: close\r\n\r\n";
    ssize_t w = send(fd, resp, sizeof resp - 1, MSG_NOSIGNAL);
    (void)w;
    pa_warn("foxglove: %d clients already: refused one", FOX_MAX_CONNS);
    head_free(h, true);
    return;
  }
  fox_conn *c = calloc(1, sizeof *c);
  if (!c) {
    head_free(h, true);
    return;
  }
  c->f = f;
  c->slot = slot;
  c->gen = ++f->gens;
  struct pa_ws_limits lim = {.max_message = 1u << 20,
                             .max_queued = FOX_MAX_QUEUED};
  struct pa_ws_cbs cbs = {on_text, on_binary, on_close};
  char err[256];
  /* pa_ws_accept owns fd from here, whatever it returns */
  evutil_socket_t sock = h->fd;
  event_free(h->ev);
  h->ev = NULL;
  c->ws = pa_ws_accept(f->g->base, sock, h->buf, head_len,
                       (const uint8_t *)h->buf + head_len, h->n - head_len,
                       protocols, &lim, &cbs, c, err, sizeof err);
  head_free(h, false);
  if (!c->ws) {
    pa_info("foxglove: refused a connection: %s", err);
    free(c);
    return;
  }
  refresh_world(f); /* before c is listed: its first message is serverInfo */
  f->conns[slot] = c;
  f->n_conns++;
  json_t *caps = json_pack("[s, s, s, s]", "clientPublish", "services", "time",
                           "parameters");
  send_json(c, json_pack("{s:s, s:s, s:o, s:[s], s:{s:s, s:s}, s:s}", "op",
                         "serverInfo", "name", "playarea", "capabilities", caps,
                         "supportedEncodings", "json", "metadata", "instance",
                         f->g->ctl->def.instance, "subprotocol",
                         pa_ws_subprotocol(c->ws), "sessionId", "playarea"));
  advertise_all(f, c);
  advertise_services(c);
  f->last_time_sent = -1; /* the new client gets the clock at once */
  arm(f);
}

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd,
                      struct sockaddr *sa, int salen, void *arg) {
  (void)lis, (void)sa, (void)salen;
  pa_fox *f = arg;
  fox_head *h = calloc(1, sizeof *h);
  if (!h) {
    evutil_closesocket(fd);
    return;
  }
  h->f = f;
  h->fd = fd;
  evutil_make_socket_nonblocking(fd);
  h->ev = event_new(f->g->base, fd, EV_READ | EV_PERSIST, on_head, h);
  struct timeval tv = {FOX_HEAD_TIMEOUT_S, 0};
  if (!h->ev || event_add(h->ev, &tv) != 0)
    head_free(h, true);
}

/* ---- lifecycle
 * ----------------------------------------------------------------------*/

pa_fox *pa_fox_create(pa_netgw *g, char *err, size_t err_sz) {
  pa_fox *f = calloc(1, sizeof *f);
  uint32_t nr = g->ctl->def.max_robots, no = g->ctl->def.max_obstacles;
  if (!f) {
    snprintf(err, err_sz, "out of memory");
    return NULL;
  }
  f->g = g;
  f->next_chan = 16;
  f->robots = calloc(nr, sizeof *f->robots);
  f->info = calloc(nr, sizeof *f->info);
  f->obs = calloc(no ? no : 1, sizeof *f->obs);
  f->nav = calloc(1, sizeof *f->nav);
  f->state_buf = malloc(g->state_cap);
  f->scan_buf = malloc(g->scan_cap);
  f->cam_buf = malloc(g->cam_cap);
  f->turn_ev = evtimer_new(g->base, on_turn, f);
  if (!f->robots || !f->info || !f->obs || !f->nav || !f->state_buf ||
      !f->scan_buf || !f->cam_buf || !f->turn_ev) {
    snprintf(err, err_sz, "out of memory");
    goto fail;
  }
  f->state_cur = pa_ring_cursor_now(g->st->state);
  f->scan_cur = pa_ring_cursor_now(g->st->scan);
  f->cam_cur = pa_ring_cursor_now(g->st->camera);
  f->map_gen = UINT32_MAX;
  f->rp.state = "";
  if (g->def.foxglove_port) {
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    /* -1: the OS picks one (tests); foxglove_info reports it */
    sin.sin_port =
        htons((uint16_t)(g->def.foxglove_port < 0 ? 0 : g->def.foxglove_port));
    const char *bind_addr = g->def.bind ? g->def.bind : "127.0.0.1";
    inet_pton(AF_INET, bind_addr, &sin.sin_addr);
    f->lis = evconnlistener_new_bind(g->base, on_accept, f,
                                     LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
                                         LEV_OPT_CLOSE_ON_EXEC,
                                     64, (struct sockaddr *)&sin, sizeof sin);
    if (!f->lis) {
      /* Not fatal: the TCP control port is what a stack is for, and the
       * default 8765 is shared by every stack on the machine. */
      pa_warn("foxglove: cannot listen on %s:%u: %s (--foxglove_port); "
              "running without the Foxglove server",
              bind_addr, (unsigned)g->def.foxglove_port, strerror(errno));
    } else {
      struct sockaddr_in bound;
      socklen_t bl = sizeof bound;
      getsockname(evconnlistener_get_fd(f->lis), (struct sockaddr *)&bound,
                  &bl);
      f->port = ntohs(bound.sin_port);
      pa_info("foxglove: ws://%s:%u (foxglove.websocket.v1, "
              "foxglove.sdk.v1)",
              bind_addr, f->port);
    }
  }
  return f;
fail:
  pa_fox_destroy(f);
  return NULL;
}

unsigned pa_fox_port(const pa_fox *f) { return f ? f->port : 0; }

static void free_topics(char **t) {
  for (char **p = t; p && *p; p++)
    free(*p);
  free(t);
}

void pa_fox_destroy(pa_fox *f) {
  if (!f)
    return;
  if (f->rec)
    stop_recording_now(f, "the gateway stops");
  for (uint32_t i = 0; i < FOX_MAX_CONNS; i++)
    if (f->conns[i])
      pa_ws_free(f->conns[i]->ws); /* on_close frees the conn */
  for (uint32_t r = 0; f->robots && r < f->g->ctl->def.max_robots; r++)
    if (f->robots[r].cam_demand)
      cam_demand(f, r, -1);
  if (f->lis)
    evconnlistener_free(f->lis);
  if (f->turn_ev)
    event_free(f->turn_ev);
  if (f->tj)
    tjDestroy(f->tj);
  pa_fox_buf_free(&f->msg);
  free(f->rp.cmds);
  free(f->rp.final);
  free(f->robots);
  free(f->info);
  free(f->obs);
  free(f->nav);
  free(f->state_buf);
  free(f->scan_buf);
  free(f->cam_buf);
  free(f);
}

/* ---- recording
 * ----------------------------------------------------------------------*/

void pa_fox_note_command(pa_netgw *g, const pa_cmd *cmd) {
  pa_fox *f = g->fox;
  if (!f || !f->rec)
    return;
  const pa_tick *t = pa_gw_latest(g);
  uint64_t ns = pa_fox_ns(t ? t->sim_time : 0);
  int ch = rec_channel(f, PA_FOX_COMMANDS, &f->rec_world[PA_FOX_COMMANDS],
                       "/commands");
  if (!ch)
    return;
  pa_fox_buf b = {0};
  pa_fox_enc_command(&b, t ? t->tick : 0, cmd);
  if (!b.oom)
    pa_mcap_write(f->rec, ch, ns, ns, b.p, b.n);
  pa_fox_buf_free(&b);
}

int pa_fox_record_start(pa_fox *f, const char *path, const char *const *topics,
                        double seconds, char *err, size_t err_sz) {
  if (f->rec) {
    snprintf(err, err_sz,
             "a recording to %s is running: stop_record_mcap "
             "first",
             f->rec_path);
    return -1;
  }
  if (strlen(path) >= sizeof f->rec_path) {
    snprintf(err, err_sz, "path: longer than %zu bytes",
             sizeof f->rec_path - 1);
    return -1;
  }
  char **tl = NULL;
  if (topics) {
    size_t n = 0;
    while (topics[n])
      n++;
    tl = calloc(n + 1, sizeof *tl);
    for (size_t i = 0; tl && i < n; i++)
      if (!(tl[i] = strdup(topics[i]))) {
        free_topics(tl);
        tl = NULL;
      }
    if (!tl) {
      snprintf(err, err_sz, "out of memory");
      return -1;
    }
  }
  pa_mcap_def d = pa_mcap_def_default();
  d.path = path;
  d.profile = "";
  d.library = "playarea";
  f->rec = pa_mcap_open(&d, err, err_sz);
  if (!f->rec) {
    free_topics(tl);
    return -1;
  }
  snprintf(f->rec_path, sizeof f->rec_path, "%s", path);
  f->rec_topics = tl;
  f->rec_seconds = seconds > 0 ? seconds : 0;
  f->rec_until = 0;
  f->rec_started_time = false;
  memset(f->rec_schema, 0, sizeof f->rec_schema);
  memset(f->rec_world, 0, sizeof f->rec_world);
  for (uint32_t r = 0; r < f->g->ctl->def.max_robots; r++)
    memset(f->robots[r].rec, 0, sizeof f->robots[r].rec);
  f->map_dirty = f->scene_dirty = true; /* the file starts with both */
  f->next_state_time = 0;
  update_cam_demand(f);
  arm(f);
  return 0;
}

int pa_fox_record_stop(pa_fox *f, pa_mcap_stats *st, char *path, size_t path_sz,
                       char *err, size_t err_sz) {
  if (!f->rec) {
    snprintf(err, err_sz, "no recording is running");
    return -1;
  }
  snprintf(path, path_sz, "%s", f->rec_path);
  /* The end state, to the bit: what a replay must reach. */
  const pa_tick *t = pa_gw_latest(f->g);
  int ch = rec_channel(f, PA_FOX_STATE, &f->rec_world[PA_FOX_STATE], "/state");
  if (t && ch) {
    refresh_world(f);
    pa_fox_buf b = {0};
    pa_fox_enc_state(&b, t, f->info, f->n_info);
    if (!b.oom)
      pa_mcap_write(f->rec, ch, pa_fox_ns(t->sim_time), pa_fox_ns(t->sim_time),
                    b.p, b.n);
    pa_fox_buf_free(&b);
  }
  int rc = pa_mcap_close(f->rec, st, err, err_sz);
  f->rec = NULL;
  f->rec_path[0] = 0;
  free_topics(f->rec_topics);
  f->rec_topics = NULL;
  update_cam_demand(f);
  return rc;
}

void pa_fox_get_info(pa_fox *f, pa_fox_info *o) {
  memset(o, 0, sizeof *o);
  o->port = f->port;
  o->clients = f->n_conns;
  o->sent = f->sent;
  o->dropped = f->dropped;
  o->jpeg_frames = f->jpeg_frames;
  o->recording = f->rec != NULL;
  if (f->rec) {
    snprintf(o->record_path, sizeof o->record_path, "%s", f->rec_path);
    pa_mcap_get_stats(f->rec, &o->rec);
  }
  o->replay = f->rp.state;
  o->replay_pushed = f->rp.next;
  o->replay_total = f->rp.n;
  o->replay_errors = f->rp.errors;
  snprintf(o->replay_detail, sizeof o->replay_detail, "%s", f->rp.detail);
}

/* ---- replay
 * ---------------------------------------------------------------------------*/

typedef struct replay_load {
  pa_cmd *cmds;
  uint32_t n, cap;
  char *final;
  size_t final_len;
  bool bad;
} replay_load;

static int replay_msg(void *arg, const char *topic, uint64_t log_ns,
                      const uint8_t *d, size_t n) {
  (void)log_ns;
  replay_load *l = arg;
  if (!strcmp(topic, "/state")) {
    free(l->final);
    l->final = malloc(n + 1);
    if (l->final) {
      memcpy(l->final, d, n);
      l->final[n] = 0;
      l->final_len = n;
    }
  } else if (!strcmp(topic, "/commands")) {
    if (l->n == l->cap) {
      uint32_t cap = l->cap ? l->cap * 2 : 256;
      pa_cmd *p = realloc(l->cmds, cap * sizeof *p);
      if (!p)
        return 1;
      l->cmds = p;
      l->cap = cap;
    }
    if (pa_fox_dec_command((const char *)d, n, &l->cmds[l->n]) != 0) {
      l->bad = true;
      return 1;
    }
    l->n++;
  }
  return 0;
}

int pa_fox_replay_start(pa_fox *f, const char *path, char *err, size_t err_sz) {
  if (!strcmp(f->rp.state, "running")) {
    snprintf(err, err_sz, "a replay is running");
    return -1;
  }
  replay_load l = {0};
  long got = pa_mcap_read(path, replay_msg, &l, err, err_sz);
  if (got < 0 || l.bad || !l.n || !l.final) {
    if (got < 0)
      ; /* err says why */
    else if (l.bad)
      snprintf(err, err_sz, "%s: a malformed /commands message", path);
    else if (!l.n || !l.final)
      snprintf(err, err_sz,
               "%s: no /commands or no final /state (recorded by "
               "record_mcap and stopped by stop_record_mcap?)",
               path);
    free(l.cmds);
    free(l.final);
    return -1;
  }
  free(f->rp.cmds);
  free(f->rp.final);
  f->rp.cmds = l.cmds;
  f->rp.n = l.n;
  f->rp.next = 0;
  f->rp.errors = 0;
  f->rp.final = l.final;
  f->rp.final_len = l.final_len;
  f->rp.sync_req = 0;
  f->rp.detail[0] = 0;
  f->rp.state = "running";
  /* Paused first: only the recorded commands (steps among them) move it. */
  pa_cmd p;
  memset(&p, 0, sizeof p);
  p.op = PA_OP_PAUSE;
  p.client_id = FOX_REPLAY_ID;
  p.request_id = ++f->g->next_req;
  if (pa_queue_push(f->g->st->cmd, &p) != 0) {
    f->rp.state = "failed";
    snprintf(err, err_sz, "the command queue is full");
    return -1;
  }
  f->rp.deadline = pa_now_ns() + 60 * 1000000000LL;
  replay_feed(f);
  arm(f);
  return 0;
}

static void replay_end(pa_fox *f, const char *state, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void replay_end(pa_fox *f, const char *state, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->rp.detail, sizeof f->rp.detail, fmt, ap);
  va_end(ap);
  f->rp.state = state;
  pa_info("replay: %s: %s", state, f->rp.detail);
}

/* Pushes what the queue takes; the SYNC after the last one. */
static void replay_feed(pa_fox *f) {
  if (strcmp(f->rp.state, "running"))
    return;
  if (pa_now_ns() > f->rp.deadline) {
    replay_end(f, "failed", "pa-sim did not take the commands in 60 s");
    return;
  }
  while (f->rp.next < f->rp.n) {
    pa_cmd c = f->rp.cmds[f->rp.next];
    c.client_id = FOX_REPLAY_ID;
    c.request_id = ++f->g->next_req;
    c.flags &= ~(uint32_t)PA_CMDF_NO_REPLY; /* every error counted */
    if (pa_queue_push(f->g->st->cmd, &c) != 0)
      return; /* full: the next turn goes on */
    f->rp.next++;
  }
  if (!f->rp.sync_req) {
    pa_cmd c;
    memset(&c, 0, sizeof c);
    c.op = PA_OP_SYNC;
    c.client_id = FOX_REPLAY_ID;
    c.request_id = ++f->g->next_req;
    if (pa_queue_push(f->g->st->cmd, &c) == 0)
      f->rp.sync_req = c.request_id;
  }
}

static void replay_reply(pa_fox *f, const pa_reply *r) {
  if (strcmp(f->rp.state, "running"))
    return;
  if (r->status != PA_OK)
    f->rp.errors++;
  if (!f->rp.sync_req || r->request_id != f->rp.sync_req)
    return;
  const pa_tick *t = pa_gw_latest(f->g);
  char why[200];
  if (!t)
    replay_end(f, "failed", "no state record");
  else if (pa_fox_cmp_state(f->rp.final, f->rp.final_len, t, why, sizeof why) ==
           0)
    replay_end(f, "match", "%u commands (%u refused): %s", f->rp.n,
               f->rp.errors, why);
  else
    replay_end(f, "mismatch", "%u commands (%u refused): %s", f->rp.n,
               f->rp.errors, why);
}
