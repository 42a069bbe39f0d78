/* streams.c - the UDP feedback streams: subscriptions, odom frames (sent by
 * the state-ring thread), scans and camera images (sent by the loop). */
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

/* ---- subscriptions
 * ----------------------------------------------------------*/

void pa_gw_cam_demand(pa_netgw *g, uint32_t robot, int delta) {
  if (robot >= g->ctl->def.max_robots)
    return;
  uint32_t *p = &g->st->cam[robot].subscribers;
  if (delta > 0) {
    __atomic_fetch_add(p, 1, __ATOMIC_RELEASE);
  } else {
    uint32_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
    while (v > 0 &&
           !__atomic_compare_exchange_n(p, &v, v - 1, false, __ATOMIC_RELEASE,
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
      o->n_subs++; /* at most one row per client: g->slots rows */
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

void pa_gw_subscribe(pa_client *c, int ch, uint32_t robot, uint16_t port) {
  pa_netgw *g = c->g;
  if (ch == PA_CH_SCAN && !c->port[ch] != !port) {
    if (port && g->scan_subs++ == 0) {
      pa_gw_drain_scans(g); /* up to date before anyone is sent anything */
      atomic_store(&g->scan_active, true);
      pa_bridge_poke(&g->br_scan);
    } else if (!port && --g->scan_subs == 0) {
      atomic_store(&g->scan_active, false);
    }
  }
  /* A hibernating client's camera demand and odom row are off already. */
  if (ch == PA_CH_CAMERA && !c->hibernating) {
    if (c->port[ch])
      pa_gw_cam_demand(c->g, c->sub_robot[ch], -1);
    if (port)
      pa_gw_cam_demand(c->g, robot, +1);
  }
  c->port[ch] = port;
  c->sub_robot[ch] = robot;
  c->dest[ch] = c->peer;
  c->dest[ch].sin_port = htons(port);
  if (ch == PA_CH_ODOM && !c->hibernating)
    odom_table_set(c, robot, port);
}

void pa_gw_hibernate(pa_client *c, bool on) {
  if (c->hibernating == on)
    return;
  /* The subscriptions stay; only what feeds them stops (or restarts). */
  if (c->port[PA_CH_CAMERA])
    pa_gw_cam_demand(c->g, c->sub_robot[PA_CH_CAMERA], on ? -1 : +1);
  if (c->port[PA_CH_ODOM])
    odom_table_set(c, c->sub_robot[PA_CH_ODOM], on ? 0 : c->port[PA_CH_ODOM]);
  c->hibernating = on;
}

/* ---- streams
 * ------------------------------------------------------------------------------*/

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
  uint64_t sent = __atomic_load_n(&g->ctl->odom_seq_sent, __ATOMIC_RELAXED);
  if (!o->have_seq && sent) { /* a restart: what the last netgw sent */
    o->have_seq = true;
    o->last_seq = (uint32_t)(sent - 1);
  }
  if (o->have_seq && os == o->last_seq)
    return;
  o->have_seq = true;
  o->last_seq = os;
  __atomic_store_n(&g->ctl->odom_seq_sent, (uint64_t)os + 1, __ATOMIC_RELAXED);
  pthread_mutex_lock(&o->mu);
  for (uint32_t i = 0; i < o->n_subs; i++) {
    const pa_robot_state *rs = pa_gw_robot_state(t, o->subs[i].robot);
    if (!rs)
      continue;
    uint8_t fr[PA_ODOM_FRAME_SIZE];
    pa_netgw_odom_encode(fr, os, t->sim_time, (float)rs->odom_x,
                         (float)rs->odom_y, (float)rs->odom_theta, (float)rs->v,
                         (float)rs->w);
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
bool pa_gw_ring_next(const pa_ring *r, pa_ring_cursor *c, void *buf,
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

#define RELEASE_BYTES (1u << 20)

void pa_gw_ring_release(const pa_ring *r, uint64_t *since) {
  if (*since < RELEASE_BYTES)
    return;
  *since = 0;
  pa_ring_unmap_slots(r);
}

static void odom_drain(pa_netgw *g) {
  pa_odom_tx *o = &g->odom;
  uint32_t len;
  uint64_t head = pa_ring_head(g->st->state); /* bounded, as for scans */
  while (o->cur.next <= head &&
         pa_gw_ring_next(g->st->state, &o->cur, o->buf, o->cap, &len)) {
    pa_gw_ring_touched(&o->unmap_n, len);
    const pa_tick *t = (const pa_tick *)o->buf;
    if (len < sizeof *t ||
        sizeof *t + (uint64_t)t->robot_count * sizeof(pa_robot_state) > len)
      continue;
    odom_record(g, t);
  }
  pa_gw_ring_release(g->st->state, &o->unmap_n);
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
int64_t pa_gw_odom_send(void *arg) {
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

/* A scan drain sends for at most this long; later records of the same call
 * only refresh the cache (their streams get the next ones). */
#define SCAN_TURN_NS 2000000

void pa_gw_drain_scans(pa_netgw *g) {
  uint32_t len;
  /* Up to the head seen on entry: a writer as fast as the sends cannot keep
   * this loop going (the loop would never serve anything else). */
  uint64_t head = pa_ring_head(g->st->scan);
  int64_t end = pa_now_ns() + SCAN_TURN_NS;
  while (g->scan_cur.next <= head &&
         pa_gw_ring_next(g->st->scan, &g->scan_cur, g->scan_buf, g->scan_cap,
                         &len)) {
    pa_gw_ring_touched(&g->scan_unmap_n, len);
    const pa_scan *s = (const pa_scan *)g->scan_buf;
    if (len < sizeof *s || sizeof *s + (uint64_t)s->count * 4 > len ||
        s->robot >= g->ctl->def.max_robots)
      continue;
    /* Sized by the record, not the ring's max_record (16 kB for 4096 beams:
     * 1000 cached 360-beam scans then held ~4 MB instead of 1.5): an entry
     * is at least as long as the record it holds, so only a longer record
     * reallocates it (callers use an entry before the next drain). */
    uint8_t **slot = &g->scan_cache[s->robot];
    size_t need = sizeof *s + (size_t)s->count * 4;
    if (!*slot ||
        need > sizeof *s + (size_t)((const pa_scan *)*slot)->count * 4) {
      uint8_t *grown = realloc(*slot, need);
      if (!grown)
        continue; /* the old entry stays whole */
      *slot = grown;
    }
    memcpy(*slot, g->scan_buf, need);
    const pa_scan *cs = (const pa_scan *)*slot;
    if (!g->scan_subs || pa_now_ns() > end)
      continue; /* cached for get_state; nobody streams it (now) */
    uint8_t hdr[PA_SCAN_HEADER_SIZE]; /* the same for every subscriber */
    pa_netgw_scan_header(hdr, cs);
    for (uint32_t i = 0; i < g->slots; i++) {
      pa_client *c = g->clients[i];
      if (!c || !c->port[PA_CH_SCAN] || c->sub_robot[PA_CH_SCAN] != s->robot ||
          c->hibernating)
        continue;
      pa_udp_tx_add(&g->tx, &c->dest[PA_CH_SCAN], hdr, sizeof hdr, cs + 1,
                    (size_t)cs->count * 4);
      g->scan_frames++;
    }
    /* Flush before the next record of this robot overwrites the cache. */
    pa_udp_tx_flush(&g->tx);
  }
  pa_gw_ring_release(g->st->scan, &g->scan_unmap_n);
}

/* One turn of the loop on a stream, counted and timed for health. */
static void stream_turn(pa_netgw *g, void (*turn)(pa_netgw *)) {
  int64_t t0 = pa_now_ns();
  g->loops++;
  turn(g);
  pa_gw_account(g, t0);
}

void pa_gw_on_scan(void *arg) { stream_turn(arg, pa_gw_drain_scans); }

const pa_scan *pa_gw_scan(pa_netgw *g, uint32_t robot) {
  pa_gw_drain_scans(g);
  if (robot >= g->ctl->def.max_robots || !g->scan_cache[robot])
    return NULL;
  return (const pa_scan *)g->scan_cache[robot];
}

/* ---- camera: images sent a budget at a time
 * -----------------------------------*/

/* One loop turn sends camera datagrams for at most this long, then yields
 * to the loop (clients, the control port, signals) and goes on after
 * CAM_REST_US: an overloaded gateway still sleeps a third of the time, so
 * the scheduler wakes it promptly for a client's line. */
#define CAM_TURN_NS 2000000
#define CAM_REST_US 1000

static bool cam_valid(const pa_netgw *g, const uint8_t *rec, uint32_t len) {
  const pa_frame *f = (const pa_frame *)rec;
  return len >= sizeof *f && f->size == (uint32_t)f->width * f->height * 3u &&
         sizeof *f + (uint64_t)f->size <= len &&
         f->robot < g->ctl->def.max_robots &&
         pa_netgw_cam_chunk_count(f->size, g->def.camera_chunk) > 0;
}

/* The next client at or after the robot's position that streams it. */
static pa_client *cam_next_client(pa_netgw *g, pa_cam_out *o, uint32_t robot) {
  uint32_t n = g->slots;
  for (; o->visited < n; o->visited++, o->k = 0) {
    pa_client *c = g->clients[(o->start + o->visited) % n];
    if (!c || !c->port[PA_CH_CAMERA] || c->sub_robot[PA_CH_CAMERA] != robot ||
        c->hibernating)
      continue;
    if (c->id != o->cid) { /* the slot changed hands: from its first chunk */
      o->cid = c->id;
      o->k = 0;
    }
    return c;
  }
  return NULL;
}

/* Starts the robot's newest waiting image, if any: true when one is on. */
static bool cam_start(pa_netgw *g, pa_cam_out *o) {
  o->sending = false;
  if (!o->have_next)
    return false;
  uint8_t *t = o->cur;
  o->cur = o->next;
  o->next = t;
  o->have_next = false;
  o->sending = true;
  o->start = g->cam_rr++ % g->slots; /* nobody is always last */
  o->visited = 0;
  o->cid = 0;
  o->k = 0;
  return true;
}

/* Sends chunks until every image waiting is out or the turn ends (at
 * pa_now_ns() end): true when work is left for the next turn. */
static bool cam_pump(pa_netgw *g, int64_t end) {
  uint32_t nr = g->ctl->def.max_robots, chunk = g->def.camera_chunk;
  for (uint32_t j = 0; j < nr; j++) {
    uint32_t r = (g->cam_robot_rr + j) % nr;
    pa_cam_out *o = &g->cam_out[r];
    if (!o->sending && !cam_start(g, o))
      continue;
    for (;;) {
      const pa_frame *f = (const pa_frame *)o->cur;
      const uint8_t *rgb = (const uint8_t *)(f + 1);
      uint32_t count = pa_netgw_cam_chunk_count(f->size, chunk);
      pa_client *c = cam_next_client(g, o, r);
      if (!c) { /* this image is out: the newest one waiting is next */
        if (!cam_start(g, o))
          break;
        continue;
      }
      while (o->k < count && g->tx.n < PA_UDP_BATCH) {
        uint8_t hdr[PA_CAM_HEADER_SIZE];
        uint32_t off, n;
        pa_netgw_cam_header(hdr, f, chunk, o->k, count, &off, &n);
        pa_udp_tx_add(&g->tx, &c->dest[PA_CH_CAMERA], hdr, sizeof hdr,
                      rgb + off, n);
        o->k++;
      }
      if (o->k == count) {
        g->cam_frames++;
        o->visited++;
        o->k = 0;
      }
      if (g->tx.n == PA_UDP_BATCH) {
        pa_udp_tx_flush(&g->tx);
        if (pa_now_ns() >= end) {
          g->cam_robot_rr = r; /* this robot's turn goes on next time */
          return true;
        }
      }
    }
  }
  pa_udp_tx_flush(&g->tx); /* the datagrams reference o->cur: out now */
  g->cam_robot_rr++;
  return false;
}

/* Images further behind the ring's head than this are stale: they are
 * skipped for the newest (a slow consumer never gets a backlog); nearer
 * ones go out in order, so a short delay of the loop loses no image. */
#define CAM_BACKLOG 4

/* Moves images from the ring to the robots' `next` slots: in order while a
 * robot's slot is free, replacing the waiting one when far behind. */
static void cam_take(pa_netgw *g) {
  uint32_t len;
  uint64_t head = pa_ring_head(g->st->camera); /* a faster writer waits */
  while (g->cam_cur.next <= head) {
    pa_ring_cursor at = g->cam_cur;
    if (!pa_gw_ring_next(g->st->camera, &g->cam_cur, g->cam_buf, g->cam_cap,
                         &len))
      break;
    if (!cam_valid(g, g->cam_buf, len))
      continue;
    pa_cam_out *o = &g->cam_out[((const pa_frame *)g->cam_buf)->robot];
    if (o->have_next && head - at.next < CAM_BACKLOG) {
      g->cam_cur = at; /* read again once the waiting image is out */
      break;
    }
    if (!o->next && !(o->next = malloc(g->cam_cap)))
      continue;
    if (!o->cur && !(o->cur = malloc(g->cam_cap)))
      continue;
    uint8_t *t = o->next; /* swap, not copy: the buffers are the same size */
    o->next = g->cam_buf;
    g->cam_buf = t;
    o->have_next = true;
  }
}

static void cam_run(pa_netgw *g) {
  bool any = false;
  for (uint32_t i = 0; i < g->slots && !any; i++)
    any = g->clients[i] && g->clients[i]->port[PA_CH_CAMERA];
  if (!any) {
    g->cam_cur = pa_ring_cursor_now(g->st->camera);
    for (uint32_t r = 0; r < g->ctl->def.max_robots; r++)
      g->cam_out[r].sending = g->cam_out[r].have_next = false;
    return;
  }
  bool more = true;
  int64_t end = pa_now_ns() + CAM_TURN_NS;
  for (int round = 0; round < 4 && more && pa_now_ns() < end; round++) {
    cam_take(g);
    if (cam_pump(g, end))
      break; /* the turn's budget is spent: more stays true */
    more = g->cam_cur.next <= pa_ring_head(g->st->camera);
  }
  if (more && !evtimer_pending(g->cam_more_ev, NULL)) {
    struct timeval rest = {0, CAM_REST_US};
    evtimer_add(g->cam_more_ev, &rest);
  }
}

void pa_gw_on_camera(void *arg) { stream_turn(arg, cam_run); }

void pa_gw_on_camera_more(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  pa_gw_on_camera(arg);
}

/* ---- channel names (PROTOCOL.md section 1) ------------------------------*/

static const char *const channel_names[PA_CH_COUNT] = {"odom", "scan",
                                                       "camera"};

int pa_netgw_channel_parse(const char *s) {
  for (int i = 0; i < PA_CH_COUNT; i++)
    if (!strcmp(s, channel_names[i]))
      return i;
  return -1;
}

const char *pa_netgw_channel_name(int ch) {
  return ch >= 0 && ch < PA_CH_COUNT ? channel_names[ch] : "?";
}
