/* ssl_int.h - private to pa-netgw's SSL side: the protocol's messages
 * (ssl_gw.c), its sockets (ssl_ports.c) and vision (ssl_vision.c) share
 * this state. */
#ifndef PA_SSL_INT_H
#define PA_SSL_INT_H

#include "netgw_int.h"

#include "pa_ssl_field.h"
#include "ssl_simulation_control.pb-c.h"
#include "ssl_simulation_error.pb-c.h"
#include "ssl_simulation_robot_control.pb-c.h"
#include "ssl_simulation_robot_feedback.pb-c.h"
#include "ssl_vision_wrapper.pb-c.h"

/* its row in the front-end table */
extern const pa_frontend pa_fe_ssl;

/* ssl_ports.c: the SSL simulation protocol when the world has an SSL field
 * (0 without one; -1 with err when a port cannot be bound), and its
 * teardown. */
int pa_ssl_gw_start(pa_netgw *g, char *err, size_t err_sz);
void pa_ssl_gw_stop(pa_netgw *g);
/* The bound control, blue and yellow ports, the vision port and the blue
 * and yellow synchronous ports; -1 when the SSL protocol is not open. */
int pa_ssl_gw_ports(const pa_netgw *g, unsigned ports[6]);
/* The world gained an SSL field at run time (set_scenario): opens the
 * ports; another division: its geometry. Called from the health timer and
 * get_ssl_info. */
void pa_ssl_gw_poll(pa_netgw *g);
/* A reply of pa-sim to a command of the SSL ports: true when it was one
 * (consumed; its datagram's response goes out when all are in). */

enum { S_CONTROL = 0, S_BLUE, S_YELLOW, S_SYNC_BLUE, S_SYNC_YELLOW, S_COUNT };
/* The team of a team port or a synchronous port: 0 blue, 1 yellow. */
#define SSL_TEAM_OF(s) ((s) == S_BLUE || (s) == S_SYNC_BLUE ? 0 : 1)
#define SSL_LINES 12 /* field line segments of the geometry */

typedef struct pa_ssl_gw {
  pa_netgw *g;
  int fd[S_COUNT];
  unsigned port[S_COUNT];
  struct event *ev[S_COUNT];
  int vfd;
  struct sockaddr_in vdest;
  struct event *vision_ev;
  uint32_t frame;
  uint64_t frames, errors;
  pa_ssl_field f;
  uint8_t *rx;  /* [SSL_DGRAM_MAX] */
  uint8_t *out; /* packed replies and frames */
  size_t out_cap;
  /* Per robot slot, of world_gen map_gen: team 0 blue, 1 yellow, -1 not an
   * SSL robot; its id. */
  int8_t *team;
  uint8_t *sid;
  uint32_t map_gen;
  bool have_map;
  SSLDetectionRobot *rob; /* [max_robots] */
  SSLDetectionRobot **blue, **yellow;
  /* The geometry, built once. */
  SSLGeometryData geo;
  SSLGeometryFieldSize size;
  SSLFieldLineSegment line[SSL_LINES];
  SSLFieldLineSegment *line_p[SSL_LINES];
  Vector2f pt[SSL_LINES][2];
  SSLFieldCircularArc arc;
  SSLFieldCircularArc *arc_p[1];
  SSLGeometryModels models;
  SSLBallModelStraightTwoPhase straight;
  Vector2f centre;
  /* Realism (playarea.RealismConfig or RealismConfigErForce, ssl_realism.c):
   * vision noise and dropout, seeded; the processing time between capture
   * and sending. */
  double noise_pos, noise_theta, dropout; /* robots: [m], [rad], probability */
  double noise_ball, ball_dropout;        /* the ball: [m], probability */
  double proc_time;                       /* [s] t_sent - t_capture */
  double delay;                           /* [s] vision latency */
  struct ssl_delay *dl;                   /* its ring (ssl_delay.c) */
  uint64_t rng;
  /* Datagrams waiting for pa-sim's replies (ssl_ports.c), the one being
   * read, and what its next command is called in an error. */
  struct ssl_pend *pend; /* [SSL_PEND_MAX] */
  struct ssl_pend *cur;
  char what[48];
} pa_ssl_gw;

#define SSL_ERRORS_MAX 32
#define SSL_PEND_MAX 32  /* datagrams waiting for pa-sim's replies */
#define SSL_PEND_CMDS 64 /* commands of one datagram named in its errors */

/* The SimulatorErrors of one datagram's response. */
typedef struct ssl_errs {
  SimulatorError e[SSL_ERRORS_MAX];
  SimulatorError *p[SSL_ERRORS_MAX];
  char code[SSL_ERRORS_MAX][64];
  char msg[SSL_ERRORS_MAX][192];
  size_t n;
} ssl_errs;

/* A datagram whose response waits for pa-sim's replies to its commands
 * (pa_core_ask's done: pa_ssl_done, tagged by pa_ssl_tag). */
typedef struct ssl_pend {
  pa_ssl_gw *x;
  bool used;
  uint32_t gen; /* bumped when answered */
  int s;        /* S_CONTROL, S_BLUE, ... */
  struct sockaddr_in from;
  uint32_t sent, waiting;
  ssl_errs e;
  char what[SSL_PEND_CMDS][48]; /* each command, for its error */
  RobotFeedback *fb;
  RobotFeedback **fbp;
  size_t nf;
} ssl_pend;

/* ---- ssl_ports.c: a datagram's commands answered ------------------------ */

/* The tag of command k of datagram p (its slot, k, p->gen). */
uint64_t pa_ssl_tag(const pa_ssl_gw *x, const ssl_pend *p, uint32_t k);
/* pa-sim's answer to a datagram's command: its error noted, the response
 * sent once all are answered (busy at the first timeout). */
void pa_ssl_done(pa_netgw *g, void *arg, uint64_t tag, const pa_reply *r,
                 pa_status st, const char *msg);

/* ---- ssl_gw.c: the messages -------------------------------------------- */

/* out grown to n bytes; false when out of memory. */
bool pa_ssl_out_reserve(pa_ssl_gw *x, size_t n);
/* A SimulatorError of code into e (dropped past SSL_ERRORS_MAX). */
void pa_ssl_err_add(ssl_errs *e, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Whether an Any's type URL names message name (alone or in package pkg,
 * which may be NULL). */
bool pa_ssl_any_is(const char *url, const char *name, const char *pkg);
/* "blue" (team 0) or "yellow". */
const char *pa_ssl_team_name(int team);
/* A control port's SimulatorCommand: checked, its parts pushed to pa-sim
 * (named to x->cur's errors when a datagram waits for the replies); what
 * is refused goes into e. */
void pa_ssl_simulator_command(pa_ssl_gw *x, const SimulatorCommand *m,
                              ssl_errs *e);
/* One RobotCommand of a team port (team 0 blue, 1 yellow), as above; fb
 * its feedback (id left UINT32_MAX: none). */
void pa_ssl_robot_command(pa_ssl_gw *x, int team, const RobotCommand *r,
                          ssl_errs *e, RobotFeedback *fb);

/* ---- ssl_realism.c ------------------------------------------------------*/

/* SimulatorConfig.realism_config: all its custom entries or nothing. */
void pa_ssl_realism(pa_ssl_gw *x, const RealismConfig *rc, ssl_errs *e);

/* The feedback of robot fb->id of team (0 blue) from the newest tick. */
void pa_ssl_feedback_now(pa_ssl_gw *x, int team, RobotFeedback *fb);
/* A synchronous port's step: the world paused, then sim_step [s] of
 * ticks (none for 0), each a command of x->cur's datagram. */
void pa_ssl_sync_step(pa_ssl_gw *x, double sim_step, ssl_errs *e);

/* ---- ssl_delay.c --------------------------------------------------------*/

/* The tick vision shows at Unix time now: t itself without a delay, else
 * the newest copy at least x->delay old (NULL: none yet); t is kept. */
const pa_tick *pa_ssl_delay_tick(pa_ssl_gw *x, const pa_tick *t, double now);
void pa_ssl_delay_free(pa_ssl_gw *x);

/* ---- ssl_vision.c -------------------------------------------------------*/

/* The detection frame of tick t into fr (the ball into *ball, pointed to
 * by *bp; robots into x's arrays), with realism and the times now. */
void pa_ssl_vision_frame(pa_ssl_gw *x, const pa_tick *t, SSLDetectionFrame *fr,
                         SSLDetectionBall *ball, SSLDetectionBall **bp);

/* The geometry packet's parts, built once from x->f. */
void pa_ssl_vision_geometry(pa_ssl_gw *x);
/* The vision timer: a frame of the newest tick (geometry now and then). */
void pa_ssl_vision_on_timer(evutil_socket_t fd, short what, void *arg);

#endif
