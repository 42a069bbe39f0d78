/* foxglove_int.h - private to the Foxglove server's files: foxglove.c
 * (channels, publishing, the turn timer, accepting, lifecycle),
 * foxglove_svc.c (what clients send: subscriptions, cmd_vel, services,
 * parameters) and foxglove_rec.c (recording and replay). */
#ifndef PA_FOXGLOVE_INT_H
#define PA_FOXGLOVE_INT_H

#include "foxglove.h"

#include "pa_util.h"
#include "ws.h"

#include <turbojpeg.h>

#define FOX_MAX_CONNS 32
#define FOX_RESERVE_CONNS 4 /* the last slots: only for a new address */
#define FOX_MAX_SUBS 256
#define FOX_MAX_PUBS 32
#define FOX_MAX_CALLS 64
#define FOX_TURN_US 10000     /* the timer's period */
#define FOX_STATE_HZ 50.0     /* /tf and /odom per simulated second */
#define FOX_STATE_PER_TURN 16 /* state emits per turn before skipping */
#define FOX_SCENE_PERIOD_NS 1000000000LL /* resent for late joiners */
#define FOX_SCENE_MIN_NS 50000000LL /* changes (agents, ball) at most 20 Hz */
#define FOX_HEAD_TIMEOUT_S 5        /* an upgrade request must come this soon */
#define FOX_MAX_QUEUED (8u << 20)
#define FOX_SOFT_QUEUED (1u << 20) /* beyond: drop (camera: a quarter) */
#define FOX_JPEG_QUALITY 80
#define FOX_REPLAY_MAX (1u << 18) /* commands a replay holds (384 B each) */

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
  uint32_t addr;     /* the client's IPv4 address (per-peer cap) */
  int64_t active_ns; /* its last message [ns]: idle without subscriptions */
  int64_t warn_ns;   /* its last cmd_vel warning [ns] (one a second) */
  int warn_kind;     /* and which it was */
} fox_conn;

typedef struct fox_head {
  struct pa_fox *f;
  evutil_socket_t fd;
  struct event *ev;
  size_t n;
  uint32_t addr;    /* the client's IPv4 address */
  int64_t start_ns; /* accepted: the head must be whole by the timeout */
  char buf[PA_WS_MAX_HEAD];
} fox_head;

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
  char session[48];      /* serverInfo's sessionId: new each start */
  uint64_t refused_auth; /* upgrades without the --token */
  struct event *turn_ev;
  fox_conn *conns[FOX_MAX_CONNS];
  uint32_t gens;
  uint32_t n_conns;
  uint32_t n_calls; /* service calls waiting for pa-sim (pa_core_ask) */
  uint32_t next_chan;
  fox_robot *robots;     /* [max_robots] */
  pa_robot_info *info;   /* [max_robots] world snapshot copy */
  pa_obstacle_info *obs; /* [max_obstacles] */
  uint32_t n_info, n_obs;
  uint32_t world_gen, nav_gen, map_gen;
  bool have_world;
  pa_nav_block *nav;
  bool map_dirty, scene_dirty; /* scene_dirty: a full update is due */
  bool scene_changed;          /* the world snapshot moved */
  int64_t scene_sent_ns, scene_full_ns;
  pa_fox_scene_memo scene; /* what the last /scene update held */
  pa_visual_block *vis;    /* visual objects as last read (NULL = none) */
  bool vis_ok;             /* vis is a whole copy */
  double scene_ball[4];    /* the ball's x, y, z, holder in the last one */
  pa_ring_cursor state_cur, scan_cur, cam_cur;
  uint64_t state_unmap_n, scan_unmap_n; /* [bytes], pa_gw_ring_release */
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
  uint64_t rec_tick, rec_print; /* the last recorded state (state_print) */
  bool rec_any;
  bool rec_started_time;
  int rec_schema[PA_FOX_KINDS];
  int rec_world[PA_FOX_WORLD_KINDS];
  /* the replay */
  struct {
    const char *state; /* "" = none yet, loading, running, match, ... */
    struct fox_replay_job *job; /* the file's load, off the loop (loading) */
    uint64_t wait_client, wait_req; /* the replay_mcap waiting for it */
    char *path;                     /* the file replayed */
    pa_cmd *cmds;
    uint32_t n, next, errors;
    char *final; /* the recording's last /state */
    size_t final_len;
    uint64_t sync_req;
    int64_t deadline;
    char detail[256];
  } rp;
};

/* Channel ids of the world kinds (robots' are handed out from 16). */
extern const uint32_t pa_fox_world_chan[PA_FOX_WORLD_KINDS];

/* Recording-only kinds: not advertised to clients. */
static inline bool pa_fox_rec_only(int kind) {
  return kind == PA_FOX_COMMANDS || kind == PA_FOX_STATE;
}

static inline void le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static inline void le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* foxglove.c */
void pa_fox_send_json(fox_conn *c, json_t *j); /* takes j's reference */
/* A status message (level 0 info, 1 warning, 2 error) to c. */
void pa_fox_status(fox_conn *c, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bool pa_fox_topic_recorded(const pa_fox *f, const char *topic);
/* Keeps the shm camera demand equal to who wants each robot's images. */
void pa_fox_cam_update(pa_fox *f);
/* Re-reads the world snapshot when it changed (advertises robots). */
void pa_fox_refresh_world(pa_fox *f);
/* The recording's channel for topic (created on first use), 0 = none. */
int pa_fox_rec_channel(pa_fox *f, int kind, int *slot, const char *topic);
void pa_fox_arm(pa_fox *f); /* the turn timer, if not pending */
/* Follows the state, scan and camera rings now (a recording's catch-up). */
void pa_fox_drain(pa_fox *f);
/* Stops the recording, logging its figures. */
void pa_fox_record_end(pa_fox *f, const char *why);
void pa_fox_free_topics(char **t);

/* Advertises every current channel to c. */
void pa_fox_advertise_all(pa_fox *f, fox_conn *c);

/* foxglove_fe.c: accepting (the upgrade, its subprotocol and token) */
void pa_fox_on_accept(struct evconnlistener *lis, evutil_socket_t fd,
                      struct sockaddr *sa, int socklen, void *arg);

/* foxglove_svc.c */
void pa_fox_advertise_services(fox_conn *c);
void pa_fox_on_text(struct pa_ws *ws, const char *data, size_t len, void *arg);
void pa_fox_on_binary(struct pa_ws *ws, const uint8_t *data, size_t len,
                      void *arg);
void pa_fox_on_close(struct pa_ws *ws, void *arg);

/* foxglove_rec.c */
void pa_fox_replay_feed(pa_fox *f);
/* Stops a replay's load (the gateway stops): joins its thread. */
void pa_fox_replay_cancel(pa_fox *f);

/* foxglove_svc.c: a free connection slot for a client from addr (network
 * order), or FOX_MAX_CONNS with *why; closes connections idle past
 * --idle_timeout_ms (no subscription, nothing sent). */
uint32_t pa_fox_conn_slot(pa_fox *f, uint32_t addr, const char **why);
void pa_fox_close_idle(pa_fox *f, int64_t now);

#endif
