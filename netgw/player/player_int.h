/* player_int.h - private to the Player front-end: its connections and the
 * functions player.c (the row, connections, the player device, data modes,
 * delivery) and player_dev.c (simulation, position2d, laser, ranger, map)
 * share. */
#ifndef PA_PLAYER_INT_H
#define PA_PLAYER_INT_H

#include "netgw_int.h"
#include "player_xdr.h"

#define PL_MAX_CONNS 64
#define PL_MAX_SUBS 64
#define PL_OUT_MAX (16u << 20)       /* unread output: the client is cut */
#define PL_DATA_SKIP (1u << 20)      /* unread output: PUSH data is skipped */
#define PL_POLL_US 1000              /* new ticks and scans looked for */
#define PL_TICKS_PER_POLL 64         /* state records delivered a poll */
#define PL_ASK_MS 2000               /* a request's round trip to pa-sim */
#define PL_DRIVER "playarea"         /* the driver name subscriptions get */
#define PL_SAVE_PATH "snapshot.json" /* SAVE: under pa-sim's --data_dir */

typedef struct pl_sub {
  uint16_t interf, index;
  bool sent;     /* some data of it went out */
  uint64_t last; /* the tick (position2d) or scan seq sent last */
} pl_sub;

typedef struct pl_conn {
  struct pa_player *p;
  struct bufferevent *bev;
  uint32_t slot, gen;
  bool authed;
  bool pull;      /* PLAYER_DATAMODE_PULL */
  bool requested; /* pull: a REQ_DATA waits for its data and SYNCH */
  bool waiting;   /* a request is with pa-sim: later messages wait */
  bool closing;   /* closed once its output is out */
  bool kill;      /* freed once the current callback is done */
  pl_msg pend;    /* the request waiting for pa-sim */
  uint32_t addr;  /* the peer's IPv4 address (per-peer cap) */
  int64_t connected_ns, partial_ns; /* idle limits: partial_ns 0 = none */
  pl_sub subs[PL_MAX_SUBS];
  uint32_t n_subs;
} pl_conn;

/* A robot's odometry as Player clients see it: SET_ODOM's pose at the
 * moment pa-sim's odometry read `at`. */
typedef struct pl_odom {
  bool set;
  double pose[3], at[3];
} pl_odom;

typedef struct pa_player {
  pa_netgw *g;
  struct evconnlistener *lis;
  unsigned port;
  pl_conn *conns[PL_MAX_CONNS];
  uint32_t gens;
  struct event *poll_ev;
  pa_ring_cursor state_cur; /* the ticks not yet delivered */
  uint8_t *state_buf;       /* [state_cap] one state ring record */
  uint32_t state_cap;
  pl_wr out;          /* a message body being built */
  pl_odom *odom;      /* [max_robots] */
  uint8_t *motor_off; /* [max_robots] MOTOR_POWER 0: commands stop it */
  /* camera:N: the newest image of each robot with a subscriber (pa_frame
   * + RGB, NULL until one came), read from the camera ring */
  uint8_t **cam;    /* [max_robots] */
  uint8_t *cam_buf; /* [cam_cap] */
  uint32_t cam_cap;
  pa_ring_cursor cam_cur;
  uint32_t cam_subs; /* camera subscriptions of all clients */
  uint64_t msgs, nacks, cut, data_sent;
} pa_player;

/* player.c */
/* Sends a message of type/subtype for device (interf, index) to c with the
 * body p->out holds (cleared after). */
void pl_send(pl_conn *c, uint32_t interf, uint32_t index, uint32_t type,
             uint32_t subtype, double ts);
/* ACK (with p->out's body) or NACK (why is logged) to request m. */
void pl_ack(pl_conn *c, const pl_msg *m);
void pl_nack(pl_conn *c, const pl_msg *m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* c subscribes (interf, index). */
pl_sub *pl_find_sub(pl_conn *c, uint32_t interf, uint32_t index);
/* The sim time of the newest tick (0 before the first). */
double pl_now(pa_player *p);
/* A request's round trip went out: c waits; its reply comes through done
 * with c's (slot, gen) in tag. */
int pl_ask(pl_conn *c, pa_cmd *cmd, pa_ask_done done, const pl_msg *m);
/* The connection a tag names, NULL when it went. */
pl_conn *pl_conn_of(pa_player *p, uint64_t tag);
/* c's request is answered: the next messages are read. */
void pl_resume(pl_conn *c);

/* player_dev.c */
/* A device message to (interf, index) from a subscriber: answered, or the
 * connection waits for pa-sim. */
void pl_dev_message(pl_conn *c, const pl_msg *m);
/* Whether the device exists (a subscription's check). */
bool pl_dev_exists(pa_player *p, uint32_t interf, uint32_t index);
/* Puts the data of s that is newer than what s sent into c's output:
 * true when something went. t: the newest tick, or NULL. */
bool pl_dev_data(pl_conn *c, pl_sub *s, const pa_tick *t);
/* The devices there are, as a DEVLIST body into p->out. */
void pl_dev_list(pa_player *p);
/* A subscription begins (+1) or ends (-1): camera demand for pa-render. */
void pl_dev_sub(pa_player *p, const pl_sub *s, int delta);
/* New images from the camera ring into p->cam (while anyone subscribes). */
void pl_dev_cam_take(pa_player *p);

#endif
