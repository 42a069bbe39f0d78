/* foxglove.c - the Foxglove WebSocket server (ws-protocol v1, subprotocols
 * foxglove.websocket.v1 and foxglove.sdk.v1) and the MCAP recorder, fed by
 * one loop timer that follows the state, scan and camera rings with cursors
 * of its own. Each message is encoded once (foxglove_msgs.c) and goes to
 * every subscribed client and the recording. */
#define _GNU_SOURCE
#include "foxglove_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/listener.h>

const uint32_t pa_fox_world_chan[PA_FOX_WORLD_KINDS] = {1, 2, 3, 4, 5};

/* ---- small helpers ------------------------------------------------- */

void pa_fox_send_json(fox_conn *c, json_t *j) {
  char *s = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  if (!s)
    return;
  if (pa_ws_send_text(c->ws, s, strlen(s)) != 0)
    c->dropped++;
  free(s);
}

void pa_fox_status(fox_conn *c, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void pa_fox_status(fox_conn *c, int level, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pa_fox_send_json(c, json_pack("{s:s, s:i, s:s}", "op", "status", "level",
                                level, "message", msg));
}

bool pa_fox_topic_recorded(const pa_fox *f, const char *topic) {
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

/* ---- channels ------------------------------------------------------ */

static json_t *chan_json(pa_fox *f, uint32_t id, int kind, const char *robot) {
  char topic[96];
  pa_fox_topic(kind, robot, topic, sizeof topic);
  bool pb = pa_fox_pb_kind(f->g, kind);
  return json_pack("{s:i, s:s, s:s, s:s, s:s, s:s}", "id", (json_int_t)id,
                   "topic", topic, "encoding", pb ? "protobuf" : "json",
                   "schemaName", pa_fox_schema_name(kind), "schema",
                   pb ? pa_fox_pb_schema_b64() : pa_fox_schema(kind),
                   "schemaEncoding", pb ? "protobuf" : "jsonschema");
}

/* Advertises every current channel to c. */
void pa_fox_advertise_all(pa_fox *f, fox_conn *c) {
  json_t *chans = json_array();
  for (int k = 0; k < PA_FOX_WORLD_KINDS; k++)
    if (!pa_fox_rec_only(k))
      json_array_append_new(chans, chan_json(f, pa_fox_world_chan[k], k, NULL));
  for (uint32_t r = 0; r < f->g->ctl->def.max_robots; r++)
    if (f->robots[r].live)
      for (int k = 0; k < PA_FOX_ROBOT_KINDS; k++)
        json_array_append_new(chans,
                              chan_json(f, f->robots[r].chan[k],
                                        PA_FOX_SCAN + k, f->robots[r].name));
  pa_fox_send_json(
      c, json_pack("{s:s, s:o}", "op", "advertise", "channels", chans));
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
void pa_fox_cam_update(pa_fox *f) {
  for (uint32_t r = 0; r < f->g->ctl->def.max_robots; r++) {
    fox_robot *fr = &f->robots[r];
    bool want = false;
    if (fr->live) {
      char topic[96];
      pa_fox_topic(PA_FOX_CAMERA, fr->name, topic, sizeof topic);
      char info[96];
      pa_fox_topic(PA_FOX_CAMINFO, fr->name, info, sizeof info);
      want = chan_subscribed(f, fr->chan[PA_FOX_CAMERA - PA_FOX_SCAN]) ||
             chan_subscribed(f, fr->chan[PA_FOX_CAMINFO - PA_FOX_SCAN]) ||
             pa_fox_topic_recorded(f, topic) || pa_fox_topic_recorded(f, info);
    }
    if (want != fr->cam_demand) {
      pa_gw_cam_demand(f->g, r, want ? +1 : -1);
      fr->cam_demand = want;
    }
  }
}

/* Re-reads the world snapshot when it changed: robots that came or went
 * get their channels advertised or unadvertised. */
void pa_fox_refresh_world(pa_fox *f) {
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
  f->scene_changed = true;
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
        pa_gw_cam_demand(f->g, r, -1);
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
            added, chan_json(f, fr->chan[k], PA_FOX_SCAN + k, fr->name));
      }
    }
  }
  for (uint32_t i = 0; i < FOX_MAX_CONNS; i++) {
    fox_conn *c = f->conns[i];
    if (!c)
      continue;
    if (json_array_size(gone))
      pa_fox_send_json(
          c, json_pack("{s:s, s:O}", "op", "unadvertise", "channelIds", gone));
    if (json_array_size(added))
      pa_fox_send_json(
          c, json_pack("{s:s, s:O}", "op", "advertise", "channels", added));
  }
  json_decref(gone);
  json_decref(added);
  pa_fox_cam_update(f);
}

/* ---- publishing ---------------------------------------------------- */

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
int pa_fox_rec_channel(pa_fox *f, int kind, int *slot, const char *topic) {
  if (!f->rec || !pa_fox_topic_recorded(f, topic))
    return 0;
  if (*slot)
    return *slot;
  bool pb = pa_fox_pb_kind(f->g, kind); /* recorded as sent */
  if (!f->rec_schema[kind]) {
    const char *s = pa_fox_schema(kind);
    size_t n = strlen(s);
    if (pb)
      s = (const char *)pa_fox_pb_fds(&n);
    f->rec_schema[kind] = pa_mcap_schema(f->rec, pa_fox_schema_name(kind),
                                         pb ? "protobuf" : "jsonschema", s, n);
  }
  if (f->rec_schema[kind] > 0)
    *slot = pa_mcap_channel(f->rec, f->rec_schema[kind], topic,
                            pb ? "protobuf" : "json");
  return *slot > 0 ? *slot : 0;
}

/* Sends f->msg (begun by msg_begin) on channel chan to its subscribers (0 =
 * none) and into the recording (mcap channel rec, 0 = not recorded). */
static void publish(pa_fox *f, uint32_t chan, int rec, uint64_t t_ns,
                    bool camera) {
  if (f->msg.oom)
    return;
  uint8_t *p = (uint8_t *)f->msg.p;
  size_t n = f->msg.n;
  if (rec > 0)
    pa_mcap_write(f->rec, rec, t_ns, t_ns, p + 13, n - 13);
  if (!chan)
    return; /* the recording's only */
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
  return chan_subscribed(f, chan) || pa_fox_topic_recorded(f, topic);
}

static double latest_time(pa_fox *f) {
  const pa_tick *t = pa_gw_latest(f->g);
  return t ? t->sim_time : 0;
}

static void emit_map(pa_fox *f) {
  const char *topic = "/map";
  if (!wanted(f, pa_fox_world_chan[PA_FOX_MAP], topic))
    return;
  const pa_map_block *m;
  const int8_t *cells;
  if (pa_gw_map(f->g, &m, &cells) != 0)
    return;
  f->map_gen = f->g->map_gen;
  uint64_t t = pa_fox_ns(latest_time(f));
  pa_fox_enc_grid(msg_begin(f), t, m, cells);
  publish(f, pa_fox_world_chan[PA_FOX_MAP],
          pa_fox_rec_channel(f, PA_FOX_MAP, &f->rec_world[PA_FOX_MAP], topic),
          t, false);
}

/* The ball of tick t as /scene last showed it: x, y, z, holder. */
static void ball_key(const pa_tick *t, double k[4]) {
  bool on = t && t->ssl && t->ball_holder != -2;
  k[0] = on ? t->ball[0] : 0;
  k[1] = on ? t->ball[1] : 0;
  k[2] = on ? t->ball[2] : 0;
  k[3] = on ? t->ball_holder : -2;
}

/* full: delete all and send everything (late joiners, a new recording);
 * else what changed since the last update, if anything. */
static void emit_scene(pa_fox *f, bool full) {
  const char *topic = "/scene";
  int64_t now = pa_now_ns();
  f->scene_sent_ns = now;
  if (full)
    f->scene_full_ns = now;
  if (!wanted(f, pa_fox_world_chan[PA_FOX_SCENE], topic))
    return;
  uint32_t ng = __atomic_load_n(&f->g->st->nav->gen, __ATOMIC_ACQUIRE);
  if (ng != f->nav_gen || !f->nav_gen) {
    if (pa_stack_nav_read(f->g->st, f->nav))
      f->nav_gen = ng;
  }
  uint32_t vg = __atomic_load_n(&f->g->st->vis->gen, __ATOMIC_ACQUIRE);
  if (!f->vis)
    f->vis = malloc(sizeof *f->vis);
  if (f->vis && (!f->vis_ok || f->vis->gen != vg))
    f->vis_ok = pa_stack_visual_read(f->g->st, f->vis);
  const pa_tick *tk = pa_gw_latest(f->g);
  pa_fox_scene_in in = {f->obs,
                        f->n_obs,
                        f->nav,
                        f->info,
                        f->n_info,
                        tk,
                        f->vis_ok ? f->vis : NULL};
  uint64_t t = pa_fox_ns(latest_time(f));
  const pa_fox_scene_be *be = pa_fox_pb_kind(f->g, PA_FOX_SCENE)
                                  ? &pa_fox_scene_pb
                                  : &pa_fox_scene_json;
  size_t n = pa_fox_enc_scene(msg_begin(f), be, t, &in, &f->scene, full, f->g,
                              f->hooks, f->n_hooks);
  ball_key(tk, f->scene_ball);
  if (!n && !full)
    return; /* nothing changed */
  publish(
      f, pa_fox_world_chan[PA_FOX_SCENE],
      pa_fox_rec_channel(f, PA_FOX_SCENE, &f->rec_world[PA_FOX_SCENE], topic),
      t, false);
}

/* One tick's /tf and odometry: to the recording when rec (every tick), to
 * clients when live (the FOX_STATE_HZ grid). */
static void emit_state(pa_fox *f, const pa_tick *t, bool live, bool rec) {
  uint64_t ns = pa_fox_ns(t->sim_time);
  uint32_t nr = f->g->ctl->def.max_robots;
  const pa_robot_state *rs[nr ? nr : 1];
  uint32_t n = f->n_info < nr ? f->n_info : nr;
  for (uint32_t r = 0; r < n; r++)
    rs[r] = f->robots[r].live ? pa_gw_robot_state(t, r) : NULL;
  uint32_t tf = live ? pa_fox_world_chan[PA_FOX_TF] : 0;
  int tf_rec =
      rec ? pa_fox_rec_channel(f, PA_FOX_TF, &f->rec_world[PA_FOX_TF], "/tf")
          : 0;
  if (tf_rec || (tf && chan_subscribed(f, tf))) {
    pa_fox_enc_tf(msg_begin(f), ns, f->info, rs, n);
    publish(f, tf, tf_rec, ns, false);
  }
  /* each robot's odometry: nav_msgs/Odometry and foxglove.PoseInFrame */
  static const int kinds[2] = {PA_FOX_ODOM, PA_FOX_POSE};
  for (uint32_t r = 0; r < n; r++) {
    fox_robot *fr = &f->robots[r];
    for (int i = 0; rs[r] && i < 2; i++) {
      int k = kinds[i];
      uint32_t chan = live ? fr->chan[k - PA_FOX_SCAN] : 0;
      char topic[96];
      pa_fox_topic(k, fr->name, topic, sizeof topic);
      int rc =
          rec ? pa_fox_rec_channel(f, k, &fr->rec[k - PA_FOX_SCAN], topic) : 0;
      if (!rc && !(chan && chan_subscribed(f, chan)))
        continue;
      if (k == PA_FOX_ODOM)
        pa_fox_enc_odom(msg_begin(f), ns, fr->name, rs[r]);
      else
        pa_fox_enc_pose(msg_begin(f), ns, fr->name, rs[r]);
      publish(f, chan, rc, ns, false);
    }
  }
}

/* The robots' poses, odometry and velocities of t (FNV-1a): a command's
 * republished tick that changed none of them is no new state. */
static uint64_t state_print(const pa_tick *t) {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t r = 0; r < t->robot_count; r++) {
    const pa_robot_state *rs = pa_gw_robot_state(t, r);
    if (!rs)
      continue;
    const uint8_t *p = (const uint8_t *)&rs->x;
    size_t n =
        offsetof(pa_robot_state, head_rate) - offsetof(pa_robot_state, x);
    for (size_t i = 0; i < n; i++)
      h = (h ^ p[i]) * 1099511628211ull;
  }
  return h;
}

/* The recorded messages one record of robot kind k (0 = a state record:
 * /tf and each robot's odometry) makes. */
static uint64_t rec_per(pa_fox *f, int k) {
  uint64_t n = !k && pa_fox_topic_recorded(f, "/tf") ? 1 : 0;
  bool any = false;
  for (uint32_t r = 0; r < f->n_info && r < f->g->ctl->def.max_robots; r++) {
    char topic[96], pose[96];
    pa_fox_topic(k ? k : PA_FOX_ODOM, f->robots[r].name, topic, sizeof topic);
    pa_fox_topic(PA_FOX_POSE, f->robots[r].name, pose, sizeof pose);
    if (!f->robots[r].live)
      continue;
    if (pa_fox_topic_recorded(f, topic)) {
      n += !k;
      any = true;
    }
    n += !k && pa_fox_topic_recorded(f, pose);
  }
  return k ? any : n;
}

/* A recording counts in dropped the records a cursor passed without
 * reading them (the writer lapped it, or overwrote one being read): from
 * seq start to c->next, got of them read. */
static void count_lost(pa_fox *f, int k, uint64_t start,
                       const pa_ring_cursor *c, uint64_t got) {
  if (f->rec && c->next > start + got)
    pa_mcap_count_dropped(f->rec, (c->next - start - got) * rec_per(f, k));
}

static void follow_state(pa_fox *f) {
  pa_netgw *g = f->g;
  uint32_t len;
  int emits = 0;
  uint64_t head = pa_ring_head(g->st->state), start = f->state_cur.next,
           got = 0;
  while (f->state_cur.next <= head &&
         pa_gw_ring_next(g->st->state, &f->state_cur, f->state_buf,
                         g->state_cap, &len)) {
    got++;
    pa_gw_ring_touched(&f->state_unmap_n, len);
    const pa_tick *t = (const pa_tick *)f->state_buf;
    if (len < sizeof *t ||
        sizeof *t + (uint64_t)t->robot_count * sizeof(pa_robot_state) > len)
      continue;
    /* not due (a reset's jump back re-arms): the recording only */
    bool due = !(t->sim_time + 1e-9 < f->next_state_time &&
                 f->next_state_time - t->sim_time < 1.0);
    /* the recording: each tick once, again only when a command changed it */
    bool rec = false;
    if (f->rec) {
      uint64_t fp = state_print(t);
      rec = t->tick != f->rec_tick || fp != f->rec_print || !f->rec_any;
      f->rec_tick = t->tick;
      f->rec_print = fp;
      f->rec_any = true;
    }
    if (!due && !rec)
      continue;
    emit_state(f, t, due, rec);
    if (due)
      f->next_state_time = t->sim_time + 1.0 / FOX_STATE_HZ;
    if (++emits >= FOX_STATE_PER_TURN && !f->rec) {
      /* far behind (thousands of x real time): sample, never lag; a
       * recording takes every tick the ring still holds */
      f->state_cur = pa_ring_cursor_now(g->st->state);
      break;
    }
  }
  count_lost(f, 0, start, &f->state_cur, got);
  pa_gw_ring_release(g->st->state, &f->state_unmap_n);
}

static void follow_scans(pa_fox *f) {
  pa_netgw *g = f->g;
  uint32_t len;
  uint64_t head = pa_ring_head(g->st->scan), start = f->scan_cur.next, got = 0;
  int n = 0;
  while (f->scan_cur.next <= head &&
         pa_gw_ring_next(g->st->scan, &f->scan_cur, f->scan_buf, g->scan_cap,
                         &len)) {
    got++;
    pa_gw_ring_touched(&f->scan_unmap_n, len);
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
    if (pa_fox_pb_kind(g, PA_FOX_SCAN))
      pa_fox_pb_scan(msg_begin(f), fr->name, s);
    else
      pa_fox_enc_scan(msg_begin(f), fr->name, s);
    publish(f, chan, pa_fox_rec_channel(f, PA_FOX_SCAN, &fr->rec[0], topic),
            pa_fox_ns(s->sim_time), false);
    if (++n >= 64 * (int)g->ctl->def.max_robots && !f->rec) {
      f->scan_cur = pa_ring_cursor_now(g->st->scan);
      break;
    }
  }
  count_lost(f, PA_FOX_SCAN, start, &f->scan_cur, got);
  pa_gw_ring_release(g->st->scan, &f->scan_unmap_n);
}

static void follow_camera(pa_fox *f) {
  pa_netgw *g = f->g;
  uint32_t len;
  uint64_t head = pa_ring_head(g->st->camera);
  /* only the newest few images (JPEG encoding is the costly part); a
   * recording takes every frame the ring still holds */
  if (!f->rec && head > f->cam_cur.next + 4)
    f->cam_cur.next = head - 3;
  uint64_t start = f->cam_cur.next, got = 0;
  while (f->cam_cur.next <= head &&
         pa_gw_ring_next(g->st->camera, &f->cam_cur, f->cam_buf, g->cam_cap,
                         &len)) {
    got++;
    const pa_frame *fr = (const pa_frame *)f->cam_buf;
    if (len < sizeof *fr || fr->size != (uint32_t)fr->width * fr->height * 3u ||
        sizeof *fr + (uint64_t)fr->size > len || !fr->width ||
        fr->robot >= g->ctl->def.max_robots || !f->robots[fr->robot].live)
      continue;
    fox_robot *rb = &f->robots[fr->robot];
    uint32_t chan = rb->chan[PA_FOX_CAMERA - PA_FOX_SCAN];
    char topic[96], info[96];
    pa_fox_topic(PA_FOX_CAMINFO, rb->name, info, sizeof info);
    uint32_t ichan = rb->chan[PA_FOX_CAMINFO - PA_FOX_SCAN];
    if (wanted(f, ichan, info)) { /* its calibration, same stamp */
      pa_fox_enc_caminfo(msg_begin(f), rb->name, fr,
                         f->info[fr->robot].cam_fov);
      publish(f, ichan,
              pa_fox_rec_channel(f, PA_FOX_CAMINFO,
                                 &rb->rec[PA_FOX_CAMINFO - PA_FOX_SCAN], info),
              pa_fox_ns(fr->sim_time), false);
    }
    pa_fox_topic(PA_FOX_CAMERA, rb->name, topic, sizeof topic);
    if (!wanted(f, chan, topic))
      continue; /* nobody subscribed: never encoded */
    char err[128];
    if (!f->tj && !(f->tj = tjInitCompress()))
      return;
    if (pa_fox_enc_image(msg_begin(f), f->tj, rb->name, fr, FOX_JPEG_QUALITY,
                         pa_fox_pb_kind(g, PA_FOX_CAMERA), err,
                         sizeof err) != 0) {
      pa_warn("foxglove: %s", err);
      continue;
    }
    f->jpeg_frames++;
    publish(f, chan,
            pa_fox_rec_channel(f, PA_FOX_CAMERA,
                               &rb->rec[PA_FOX_CAMERA - PA_FOX_SCAN], topic),
            pa_fox_ns(fr->sim_time), true);
  }
  count_lost(f, PA_FOX_CAMERA, start, &f->cam_cur, got);
}

/* Catches up with the rings (every command pushed, while recording: ticks
 * stepped faster than the turn timer are taken before the ring laps). */
void pa_fox_drain(pa_fox *f) {
  if (f->idle)
    return;
  pa_fox_refresh_world(f);
  follow_state(f);
  follow_scans(f);
  follow_camera(f);
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

void pa_fox_record_end(pa_fox *f, const char *why) {
  pa_mcap_stats st;
  char path[256], err[256];
  if (pa_fox_record_stop(f, &st, path, sizeof path, err, sizeof err) == 0)
    pa_info("foxglove: recording %s stopped (%s): %" PRIu64
            " messages, %" PRIu64 " chunks, %" PRIu64 " dropped",
            path, why, st.messages, st.chunks, st.dropped);
  else
    pa_warn("foxglove: recording stopped (%s): %s", why, err);
}

void pa_fox_arm(pa_fox *f) {
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
  pa_fox_replay_feed(f);
  if (!f->n_conns && !f->rec) {
    if (!strcmp(f->rp.state, "running") || f->rp.job)
      pa_fox_arm(f); /* the replay goes on */
    f->idle = true;  /* the timer stops until a client or a recording */
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
  pa_fox_close_idle(f, t0);
  pa_fox_refresh_world(f);
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
    uint32_t vg = __atomic_load_n(&g->st->vis->gen, __ATOMIC_ACQUIRE);
    double bk[4];
    ball_key(t, bk);
    bool full = f->scene_dirty || t0 - f->scene_full_ns > FOX_SCENE_PERIOD_NS;
    bool changed = f->scene_changed || ng != f->nav_gen || !f->scene.have_vis ||
                   vg != f->scene.vis_gen ||
                   memcmp(bk, f->scene_ball, sizeof bk) != 0;
    if (full || (changed && t0 - f->scene_sent_ns >= FOX_SCENE_MIN_NS)) {
      f->scene_dirty = f->scene_changed = false;
      emit_scene(f, full);
    }
    follow_state(f);
    follow_scans(f);
    follow_camera(f);
    if (f->rec && f->rec_until > 0 && now >= f->rec_until)
      pa_fox_record_end(f, "its seconds are up");
  }
  pa_gw_account(g, t0);
  pa_fox_arm(f);
}

/* ---- lifecycle ----------------------------------------------------- */

pa_fox *pa_fox_create(pa_netgw *g, char *err, size_t err_sz) {
  pa_fox *f = calloc(1, sizeof *f);
  uint32_t nr = g->ctl->def.max_robots, no = g->ctl->def.max_obstacles;
  if (!f) {
    snprintf(err, err_sz, "out of memory");
    return NULL;
  }
  f->g = g;
  f->next_chan = 16;
  /* new each start: Lichtblick drops what it holds when it changes */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(f->session, sizeof f->session, "playarea-%llx-%d",
           (unsigned long long)ts.tv_sec * 1000000000ull +
               (unsigned long long)ts.tv_nsec,
           (int)getpid());
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
  /* The core binds it (-1: the OS picks; a taken port walks on as
   * --tcp_port does, so that a second stack gets a server too; a
   * restarted pa-netgw gets the same port again). A port that cannot be
   * bound only warns (the control port is what a stack is for), unless it
   * is the kept one of before a restart. */
  unsigned bound = 0;
  char lerr[256];
  int lfd = pa_core_open(g, &pa_fe_foxglove, 0, &bound, lerr, sizeof lerr);
  if (lfd == PA_LISTEN_TAKEN) {
    snprintf(err, err_sz, "%s", lerr);
    goto fail;
  }
  if (lfd >= 0) {
    f->lis = evconnlistener_new(g->base, pa_fox_on_accept, f,
                                LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
                                0, lfd);
    if (!f->lis) {
      close(lfd);
      snprintf(lerr, sizeof lerr, "evconnlistener_new failed");
    }
  }
  if (lfd != PA_LISTEN_OFF && !f->lis) {
    pa_warn("foxglove: %s; running without the Foxglove server", lerr);
    pa_core_port_down(g, "foxglove");
  } else if (f->lis) {
    f->port = bound;
    pa_info("foxglove: ws://%s:%u (foxglove.websocket.v1, "
            "foxglove.sdk.v1)%s",
            g->def.bind ? g->def.bind : "127.0.0.1", f->port,
            g->token[0] ? "; the token in ?token= or Authorization: Bearer"
                        : "");
  }
  return f;
fail:
  pa_fox_destroy(f);
  return NULL;
}

unsigned pa_fox_port(const pa_fox *f) { return f ? f->port : 0; }

void pa_fox_free_topics(char **t) {
  for (char **p = t; p && *p; p++)
    free(*p);
  free(t);
}

void pa_fox_destroy(pa_fox *f) {
  if (!f)
    return;
  if (f->rec)
    pa_fox_record_end(f, "the gateway stops");
  pa_fox_replay_cancel(f);
  for (uint32_t i = 0; i < FOX_MAX_CONNS; i++)
    if (f->conns[i])
      pa_ws_free(f->conns[i]->ws); /* on_close frees the conn */
  for (uint32_t r = 0; f->robots && r < f->g->ctl->def.max_robots; r++)
    if (f->robots[r].cam_demand)
      pa_gw_cam_demand(f->g, r, -1);
  if (f->lis)
    evconnlistener_free(f->lis);
  if (f->turn_ev)
    event_free(f->turn_ev);
  if (f->tj)
    tjDestroy(f->tj);
  pa_fox_buf_free(&f->msg);
  free(f->rp.cmds);
  free(f->rp.final);
  free(f->rp.path);
  free(f->robots);
  free(f->info);
  free(f->obs);
  free(f->nav);
  free(f->vis);
  pa_fox_scene_memo_free(&f->scene);
  free(f->state_buf);
  free(f->scan_buf);
  free(f->cam_buf);
  free(f);
}
