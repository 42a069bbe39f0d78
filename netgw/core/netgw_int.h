/* netgw_int.h - private to pa_netgw: the structures its modules share. */
#ifndef PA_NETGW_INT_H
#define PA_NETGW_INT_H

#include "netgw.h"

#include <event2/event.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/uio.h>

struct pa_netgw;
struct pa_client;

/* ---- the front-end table (frontends.c) -----------------------------------
 * Each protocol is a folder of netgw/ and one row here, as nginx builds a
 * server from a core and a table of modules: the core calls a front-end
 * only through its row, and no front-end calls another (a test checks the
 * includes and the symbols). */

/* A listener a front-end asks the core for: the flag that sets its port is
 * the pa_netgw_def field at port_off. */
typedef struct pa_fe_listener {
  const char *name; /* kept-port key ("tcp", "foxglove", "ssl_control") */
  int kind;         /* PA_PORT_TCP / PA_PORT_UDP */
  const char *flag; /* "--foxglove_port" */
  size_t port_off;  /* offsetof(pa_netgw_def, ...) */
  bool signed_port; /* an int32 flag: -1 = the OS picks, 0 = off */
  bool walks;       /* a taken port walks on (unless --no_port_walk) */
  int backlog;
} pa_fe_listener;

typedef struct pa_frontend {
  const char *name;
  /* the pa-netgw flags it owns (their rows: core/netgw_opts.c), space
   * separated; the core's own are pa_core_flags (test_netgw checks that
   * every flag has exactly one owner) */
  const char *flags;
  const pa_fe_listener *listeners;
  unsigned n_listeners;
  /* true: with --token, no connection is served before it authenticates;
   * false: its protocol cannot carry a token (UDP), so with --token it
   * listens on loopback only, and says so at start */
  bool token;
  /* lifecycle: start after the core is up (may open its listeners now or
   * later), stop before it goes; poll every health period */
  int (*start)(struct pa_netgw *g, char *err, size_t err_sz);
  void (*stop)(struct pa_netgw *g);
  void (*poll)(struct pa_netgw *g);
  /* every command pushed to pa-sim (pa_core_push), from any front-end */
  void (*on_command)(struct pa_netgw *g, const pa_cmd *cmd);
  /* line protocols on the TCP control connections (pa_core_control_fe
   * picks JSON or text by the line's first byte, while it is still being
   * read: the two have different length limits); replies come back by
   * complete() */
  void (*line)(struct pa_client *c, const char *line, size_t len);
  void (*complete)(struct pa_client *c, const pa_reply *r);
  void (*release)(struct pa_client *c);
  void (*line_error)(struct pa_client *c, pa_status st, const char *msg);
  /* services one front-end offers the others, through the core: op with
   * JSON args -> a JSON result, or NULL with *st and err */
  json_t *(*call)(struct pa_netgw *g, const char *op, json_t *args,
                  pa_status *st, char *err, size_t err_sz);
  /* its Prometheus families (text format) */
  void (*metrics)(struct pa_netgw *g, struct evbuffer *out);
} pa_frontend;

/* NULL-terminated, in start order. */
extern const pa_frontend *const pa_frontends[];
/* The flags the core itself owns (space separated). */
extern const char pa_core_flags[];
const pa_frontend *pa_core_frontend(const char *name);
/* pa_frontend.call of the front-end named fe; NULL with st/err when it has
 * none or is not running. */
json_t *pa_core_call(struct pa_netgw *g, const char *fe, const char *op,
                     json_t *args, pa_status *st, char *err, size_t err_sz);
/* The rows of the control connections' lines: JSON or text (PROTOCOL.md
 * section 3: JSON when the first non-blank byte is '{'). */
const pa_frontend *pa_core_control_fe(bool json);

/* ---- listen.c: the core binds every listener and keeps its port -------- */

/* pa_core_listen: the kept port is taken (a configuration error); the
 * flag turns the listener off. */
#define PA_LISTEN_TAKEN (-2)
#define PA_LISTEN_OFF (-3)
typedef struct pa_listen_spec {
  const char *name;
  int kind; /* PA_PORT_TCP / PA_PORT_UDP */
  const char *flag;
  unsigned port; /* what the flag asks for; 0 = the OS picks */
  bool walk;
  int backlog;
  bool loopback_only;
} pa_listen_spec;
/* Binds ls (its kept port after a restart) and keeps the bound port: the
 * fd, -1 with err, or PA_LISTEN_TAKEN with err. */
int pa_core_listen(struct pa_netgw *g, const char *fe, const pa_listen_spec *ls,
                   unsigned *bound, char *err, size_t err_sz);
/* pa_core_listen for listener i of row fe, its port from the row's flag:
 * also PA_LISTEN_OFF when the flag is 0 for a signed port. */
int pa_core_open(struct pa_netgw *g, const pa_frontend *fe, unsigned i,
                 unsigned *bound, char *err, size_t err_sz);
/* The listener no longer listens (closed at run time: the launcher lets
 * go of it too). */
void pa_core_port_down(struct pa_netgw *g, const char *name);
/* At exit: every listener down; the launcher keeps holding them for the
 * next pa-netgw. */
void pa_core_ports_down(struct pa_netgw *g);
/* Under the launcher (PA_NETGW_KEEP, PA_NETGW_KEPT in the environment): the
 * socket to it and the listeners it held across a restart; alone, none. */
void pa_core_keep_init(struct pa_netgw *g);
void pa_core_keep_free(struct pa_netgw *g);
/* The bound port of a listener by name, 0 when it does not listen. */
unsigned pa_core_port(const struct pa_netgw *g, const char *name);
/* A destination port (SSL vision): the kept one when the flag still asks
 * for port, else port (and kept from now on). */
unsigned pa_core_dest_recall(struct pa_netgw *g, const char *fe,
                             const char *name, unsigned port);
/* A destination port changed at run time: kept for a restarted pa-netgw. */
void pa_core_dest_set(struct pa_netgw *g, const char *fe, const char *name,
                      unsigned port);
/* A client connected (after which a kept port is never walked past). */
void pa_core_client_seen(struct pa_netgw *g);

/* ---- auth.c: one auth policy for every front-end ------------------------ */

/* The value of key in an URL query (percent-decoded) into out. */
bool pa_core_query(const char *query, const char *key, char *out,
                   size_t out_sz);
/* A request's credentials: ?token= in the query, an Authorization: Bearer
 * header, or the pa_token cookie (any may be NULL). True without --token. */
bool pa_core_token_ok(struct pa_netgw *g, const char *query, const char *auth,
                      const char *cookie);
/* pa_core_token_ok on an HTTP request head (an upgrade before it is
 * accepted). */
bool pa_core_head_authed(struct pa_netgw *g, const char *head, size_t len);
/* Answers an HTTP status with a text body on a raw socket and closes it. */
void pa_core_refuse_http(int fd, const char *status, const char *text);

/* ---- datadir.c --------------------------------------------------------- */

/* The real path of a client's .mcap file name in under --data_dir (no
 * '..', not outside it): 0, or -1 with err. existing: it must be a regular
 * file; else it must not exist (recordings never overwrite). */
int pa_core_data_path(const struct pa_netgw *g, const char *in, bool existing,
                      char *out, size_t out_sz, char *err, size_t err_sz);

/* ---- registry.c: the metrics registry ----------------------------------- */

/* Histogram buckets [s]: loop periods and request latencies alike. */
#define PA_WEB_BUCKETS 14
extern const double pa_web_buckets[PA_WEB_BUCKETS];

typedef struct pa_hist {
  uint64_t n[PA_WEB_BUCKETS + 1]; /* per bucket, the last is +Inf */
  uint64_t count;
  double sum; /* [s] */
} pa_hist;
void pa_hist_observe(pa_hist *h, double v);
/* "# HELP" and "# TYPE" lines of a family; a histogram's lines. */
void pa_metrics_family(struct evbuffer *b, const char *name, const char *type,
                       const char *help);
void pa_metrics_hist(struct evbuffer *b, const char *name, const char *labels,
                     const pa_hist *h);
/* A request of a front-end answered after ns: per name (a static string;
 * id its index in the front-end's table, < 0 = unknown). */
#define PA_REQ_STATS_MAX 256
void pa_core_observe_request(struct pa_netgw *g, int id, const char *name,
                             int64_t ns);
/* The core's families (request durations, kept ports) and every
 * front-end's (their rows' metrics hooks). */
void pa_core_metrics_write(struct pa_netgw *g, struct evbuffer *b);

/* ---- udp.c: batched non-blocking sender -------------------------------- */

#define PA_UDP_BATCH 64
#define PA_UDP_HDR_MAX 40
#define PA_GW_STAGE 2048 /* bytes of a direct reply held for one send */

typedef struct pa_udp_tx {
  int fd;
  int n; /* queued datagrams */
  struct mmsghdr msgs[PA_UDP_BATCH];
  struct iovec iov[PA_UDP_BATCH][2];
  struct sockaddr_in addr[PA_UDP_BATCH];
  uint8_t hdr[PA_UDP_BATCH][PA_UDP_HDR_MAX];
  uint64_t sent, bytes, dropped;
} pa_udp_tx;

int pa_udp_tx_open(pa_udp_tx *tx, char *err, size_t err_sz);
void pa_udp_tx_close(pa_udp_tx *tx);
/* Queues hdr (copied) + payload (referenced until the next flush). */
void pa_udp_tx_add(pa_udp_tx *tx, const struct sockaddr_in *to, const void *hdr,
                   size_t hlen, const void *payload, size_t plen);
void pa_udp_tx_flush(pa_udp_tx *tx);

/* ---- bridge.c: a semaphore waited on by a thread, seen as an eventfd ----- */

typedef struct pa_bridge {
  pthread_t thread;
  bool started;
  atomic_bool stop;
  int efd;
  struct event *ev;
  pa_ring *ring; /* ring + reader, or ... */
  int reader;
  sem_t *sem; /* ... a bare semaphore (the reply queue's) */
  void (*cb)(void *arg);
  int64_t (*tcb)(void *arg); /* direct: runs on the thread */
  void *arg;
  uint64_t wakes;
  /* Idle while *active is false (nobody subscribed): the thread then waits
   * on `poke` instead of the ring, so a writer's posts (one per record, up
   * to ~1M/s free-running) wake nothing. Set active, then pa_bridge_poke. */
  const atomic_bool *active;
  sem_t poke;
  bool poke_init;
} pa_bridge;

/* Makes b watch its ring only while *active (before the start). */
void pa_bridge_set_active_flag(pa_bridge *b, const atomic_bool *active);
/* Wakes an idle bridge (after setting its active flag). */
void pa_bridge_poke(pa_bridge *b);

int pa_bridge_start(pa_bridge *b, struct event_base *base, pa_ring *ring,
                    int reader, sem_t *sem, void (*cb)(void *), void *arg,
                    char *err, size_t err_sz);
/* Direct: the thread itself calls tcb after each wake-up (no eventfd, no
 * loop hop), and again at the pa_now_ns() deadline tcb returned (0 = none).
 * tcb runs on that thread and must lock what it shares with the loop. */
int pa_bridge_start_direct(pa_bridge *b, pa_ring *ring, int reader,
                           int64_t (*tcb)(void *), void *arg, char *err,
                           size_t err_sz);
void pa_bridge_stop(pa_bridge *b); /* joins the thread (within ~250 ms) */

/* ---- odom streams, sent by the state-ring thread
 * ---------------------------*/

/* One connection's odom subscription. */
typedef struct pa_odom_sub {
  uint64_t client_id;
  uint32_t robot;
  struct sockaddr_in dest;
} pa_odom_sub;

/* The state-ring thread builds and sends odom frames itself (one wake-up
 * less than going through the loop). The loop edits the table under mu;
 * the thread holds mu from reading the table to the end of sendmmsg, so a
 * stream is stopped once pa_gw_subscribe() returns. */
typedef struct pa_odom_tx {
  pthread_mutex_t mu;
  bool mu_init;
  /* guarded by mu */
  pa_odom_sub *subs; /* [max_clients], the first n_subs in use */
  uint32_t n_subs;
  pa_udp_tx tx; /* the loop's socket, its own batch and counters */
  uint64_t frames;
  int64_t age_sum; /* tick written -> datagrams handed to the kernel */
  uint64_t age_n;
  /* the thread's own */
  pa_ring_cursor cur;
  uint64_t unmap_n; /* [bytes] read since pa_gw_ring_release unmapped */
  uint8_t *buf;
  uint32_t cap;
  uint32_t last_seq;
  bool have_seq;
  bool resync; /* guarded by mu: first subscriber, skip to the head */
  /* When the next odom tick is due: ticks run on a fixed grid, wall_ns ~=
   * phase + tick * period (phase tracks the early edge of the arrivals). */
  bool have_phase;
  uint64_t last_tick;
  double period, phase;
} pa_odom_tx;

/* ---- limits.c: the core's connection limits ------------------------------ */

/* Output backpressure: a client with more than OUT_HIGH bytes of replies
 * unread is not read until they drain below OUT_LOW (--max_output stays
 * the hard cap one reply may reach). */
#define PA_LIM_OUT_HIGH (256u << 10)
#define PA_LIM_OUT_LOW (64u << 10)
/* Fair turns: one client runs at most TURN_LINES lines a go, and all of
 * them at most TURN_NS of line work per TURN_WINDOW_NS, before the loop
 * polls again; the yielded go on least served first. */
#define PA_LIM_TURN_LINES 16u
#define PA_LIM_TURN_NS (4 * 1000000)
#define PA_LIM_TURN_WINDOW_NS (10 * 1000000)
/* The yielded go least recently served first: recent work halves every
 * HALF_LIFE; a new client starts as if it had worked START_DEBIT. */
#define PA_LIM_HALF_LIFE_NS 1e9
#define PA_LIM_START_DEBIT_NS 20e6
/* A client with less recent work than this is light: when the turn is
 * used up, its one line still runs at once (within its own budget). */
#define PA_LIM_LIGHT_NS 1e6

/* What the limits did, counted per reason (/metrics
 * netgw_limit_events_total{reason}). */
enum {
  PA_LIM_PEER_CAP, /* a connection refused: its address holds the cap */
  PA_LIM_SLOTS,    /* a connection refused: every slot taken */
  PA_LIM_PAUSED,   /* a client not read while its output drains */
  PA_LIM_YIELDED,  /* a client's lines waited for the next turn */
  PA_LIM_IDLE,     /* a connection closed for idling */
  PA_LIM_BODY,     /* a request body refused before it was read */
  PA_LIM_ORIGIN,   /* a cross-origin request refused */
  PA_LIM_SLOW,     /* a client cut for unread output past its cap */
  PA_LIM_QUEUE,    /* a command refused: its source's queue share is used */
  PA_LIM_STALE,    /* a state frame dropped for a newer one */
  PA_LIM_COUNT
};

typedef struct pa_limits {
  struct event *work_ev; /* runs the yielded clients */
  int64_t turn_start_ns, turn_ns;
  int64_t light_ns; /* light clients' lines run past the turn's budget */
  uint64_t events[PA_LIM_COUNT];
  uint64_t bytes_dropped; /* stale frames not sent */
} pa_limits;

/* ---- the gateway and its clients ---------------------------------------- */

/* One robot's camera images on their way out, a loop turn's budget at a
 * time: `cur` goes to each subscriber in turn from `start`, `next` holds the
 * newest image that arrived meanwhile (older ones are dropped). */
typedef struct pa_cam_out {
  uint8_t *cur, *next; /* [cam_cap] ring records, or NULL until used */
  bool sending, have_next;
  uint32_t start;   /* client slot the image started at (rotates) */
  uint32_t visited; /* slots done so far */
  uint64_t cid;     /* client being sent to */
  uint32_t k;       /* its next chunk */
} pa_cam_out;

enum { PEND_NONE = 0, PEND_TEXT, PEND_JSON };

/* Scan ranges kept out of jansson: formatted straight into the reply text
 * where their placeholder string stands (360 json_reals cost ~100 us). */
typedef struct pa_splice {
  float *r;
  uint32_t n;
} pa_splice;

typedef struct pa_client {
  struct pa_netgw *g;
  struct bufferevent *bev;
  uint32_t slot;
  uint64_t id; /* (gen << 32) | slot, travels in pa_cmd */
  struct sockaddr_in peer;
  uint32_t robot; /* the robot this connection drives */
  bool authed;
  bool kill;                  /* close once the current callback is done */
  bool discarding;            /* dropping the rest of a too long line */
  size_t scanned;             /* input bytes already searched for '\n' */
  uint16_t port[PA_CH_COUNT]; /* UDP port per channel, 0 = off */
  uint32_t sub_robot[PA_CH_COUNT];
  struct sockaddr_in dest[PA_CH_COUNT];
  /* The one request waiting for pa-sim; later lines wait in the input. */
  int pend;
  uint64_t pend_req;
  int pend_text;   /* pa_text_kind */
  int pend_action; /* json.c action id */
  uint32_t pend_robot;
  uint32_t pend_ticks;          /* a STEP's ticks (0: not a STEP) */
  int64_t pend_t0;              /* when it was pushed [ns] */
  unsigned pend_wait_ms;        /* the next wait's timeout (0 = the default) */
  json_t *jreq;                 /* request being answered */
  struct pa_mesh_job *mesh_job; /* json_visual_mesh.c: a decode off the loop */
  json_t *jbatch;               /* batch request, or NULL */
  json_t *jresponses;           /* batch responses so far */
  size_t jbatch_i;
  size_t jbudget; /* [bytes] reply room left to this line's requests */
  struct event *timeout_ev;
  pa_splice *spl; /* ranges waiting for the next JSON send */
  size_t n_spl, cap_spl;
  char *bin; /* binary block sent right after that line */
  size_t bin_n;
  /* Text cmd/stop lines are coalesced: a command holds until replaced, so
   * only the last one of a burst needs to reach pa-sim. */
  bool drive_pending;
  pa_cmd drive;
  struct event *drive_ev; /* retries a drive command the full queue refused */
  /* Closing: the peer half-closed (eof) or the gateway closes (closing);
   * replies owed are sent first, no later line is read. */
  bool eof, closing;
  uint32_t auth_failures;
  int64_t connected_ns, partial_ns, closing_ns; /* idle limits: 0 = none */
  struct event *idle_ev;
  int64_t jstart_ns; /* the JSON request being answered arrived (metrics) */
  /* hibernate (RaisimServer's STATUS_HIBERNATING): subscriptions kept, no
   * stream datagram sent, commands still answered, until wakeup */
  bool hibernating;
  bool spoke_json; /* sent a JSON line: told of shutdown in JSON */
  /* limits.c: waiting for the next turn; not read while output drains */
  bool yielded, paused;
  bool light;        /* its current line runs on the light clients' budget */
  double recent_ns;  /* line work lately (halves each half-life) */
  int64_t recent_at; /* when recent_ns was last decayed [ns] */
} pa_client;

typedef struct pa_netgw {
  pa_netgw_def def;
  char token[256];
  pa_stack *st;
  pa_ctl *ctl;
  struct event_base *base;
  struct evconnlistener *lis;
  struct evconnlistener *lis_unix; /* --unix_socket, or NULL */
  struct event *relisten_ev;
  unsigned port;
  pa_client **clients; /* [max_clients] */
  uint32_t *gens;      /* [max_clients] */
  unsigned n_clients;
  uint32_t slots;     /* max_clients + reserve_clients */
  char busy_msg[128]; /* why the last push was refused */
  pa_udp_tx tx;
  pa_bridge br_state, br_scan, br_cam, br_reply;
  /* The odom and scan bridges sleep while nobody subscribes. */
  atomic_bool odom_active, scan_active;
  uint32_t scan_subs; /* clients with a scan port */
  int state_reader, scan_reader, cam_reader;
  pa_ring_cursor scan_cur, cam_cur;
  uint64_t scan_unmap_n; /* [bytes] as odom.unmap_n */
  uint8_t *latest_buf, *scan_buf, *cam_buf;
  uint32_t state_cap, scan_cap, cam_cap;
  uint8_t **scan_cache; /* [max_robots] latest pa_scan + ranges, or NULL */
  pa_odom_tx odom;
  pa_cam_out *cam_out;           /* [max_robots] */
  uint32_t cam_rr, cam_robot_rr; /* round-robin starts */
  struct event *cam_more_ev;     /* the rest of the images, next turn */
  uint64_t next_req;
  uint64_t splice_nonce; /* makes range placeholders unguessable by clients */
  bool spin_hint;        /* a lockstep STEP was just pushed */
  int64_t step_tick_ns;  /* EWMA: a STEP's reply latency per tick */
  int64_t step_sent_ns;  /* when the last lockstep reply was written */
  int64_t step_gap_ns;   /* EWMA: that reply -> the client's next STEP */
  int64_t watch_until;   /* the loop polls, not blocks, until then */
  bool direct_write;     /* pa_gw_write may send at once (a sim reply) */
  /* A direct reply's first (short) write, held to go out with the next one
   * in one send: a binary reply's header line and its block. */
  struct pa_client *stage_c;
  size_t stage_n;
  char stage[PA_GW_STAGE];
  int stop_fd;
  struct event *stop_ev, *health_ev, *sig_int, *sig_term;
  /* map segment, re-attached when ctl->map_gen changes */
  pa_shm_seg map_seg;
  const pa_map_block *map;
  const int8_t *cells;
  uint32_t map_gen;
  /* counters */
  uint64_t loops, steps, busy, late, scan_frames, cam_frames;
  uint64_t disconnects_slow, refused;
  /* loop cost per health period */
  int64_t cb_ns_sum, cb_ns_max;
  uint64_t cb_n;
  struct pa_web *web; /* http.c: pages, /metrics, /ws; NULL = no HTTP */
  /* discovery beacon (beacon.c) */
  int beacon_fd;
  struct event *beacon_ev;
  struct sockaddr_in beacon_to[2]; /* loopback, and broadcast if bound wide */
  unsigned n_beacon_to;
  uint64_t beacons_sent, beacons_failed;
  struct pa_ssl_gw *ssl;    /* SSL protocol sockets and vision, or NULL */
  struct pa_fox *fox;       /* Foxglove server and MCAP recorder (foxglove.h) */
  struct pa_player *player; /* the Player 3 protocol server (player/) */
  uint32_t ssl_refused;     /* the SSL division whose ports failed to open */
  /* registry.c: request durations per front-end request name */
  pa_hist req_hist[PA_REQ_STATS_MAX + 1]; /* the last: unknown */
  const char *req_name[PA_REQ_STATS_MAX];
  pa_limits lim; /* limits.c */
  /* listen.c: the launcher's end of the kept listeners (-1 = run alone)
   * and the listeners it handed to this pa-netgw, not yet claimed */
  int keep_sock;
  /* json_visual_mesh.c: the decode whose result is being handed over */
  struct pa_mesh_job *mesh_delivering;
  struct {
    char name[PA_PORT_NAME_MAX];
    int fd; /* -1 = none */
  } handed[PA_PORTS_MAX];
  /* ask.c: the requests waiting for pa-sim, in request id order */
  struct pa_ask_row *asks;
  size_t n_asks, cap_asks;
  struct event *ask_ev; /* the earliest deadline */
  int64_t ask_armed;    /* [ns] that deadline */
  bool ask_scanning;    /* the timeouts are walked: rows keep their place */
} pa_netgw;

/* gw.c, for json.c */
void pa_gw_write(pa_client *c, const char *s, size_t n);
void pa_gw_write_flush(pa_netgw *g); /* sends a held direct write */
/* Looks up a robot by id (name NULL) or name: 0 and *info, -1 if there is
 * none, PA_GW_BUSY if the world snapshot stayed mid-update (its writer died:
 * a restarted pa-sim rewrites it). */
#define PA_GW_BUSY (-2)
int pa_gw_robot(pa_netgw *g, const char *name, long id, pa_robot_info *info,
                uint32_t *idx);
/* Copies the obstacle snapshot entry with that name: 0, -1 or PA_GW_BUSY. */
int pa_gw_obstacle(pa_netgw *g, const char *name, pa_obstacle_info *info,
                   uint32_t *idx);
/* Latest state record; NULL when pa-sim has not written a tick yet. */
const pa_tick *pa_gw_latest(pa_netgw *g);
/* Only the newest tick's header, read in place: what a periodic sampler
 * needs, without copying (and keeping resident) every robot's state. */
bool pa_gw_latest_header(pa_netgw *g, pa_tick *out);
/* streams.c: one camera subscriber more (+1) or less (-1) for robot, never
 * below 0 (a restarted netgw zeroed the counts), and wakes pa-render. */
void pa_gw_cam_demand(pa_netgw *g, uint32_t robot, int delta);
const pa_robot_state *pa_gw_robot_state(const pa_tick *t, uint32_t robot);
/* Latest scan of a robot from the cache (after draining the ring). */
const pa_scan *pa_gw_scan(pa_netgw *g, uint32_t robot);
/* Makes c wait for reply req from work of the gateway's own (a thread's),
 * at most ms; pa_gw_local_reply answers it as pa-sim's replies do. */
void pa_gw_wait_local(pa_client *c, uint64_t req, unsigned ms);
/* A reply for the client waiting for it (late ones are counted). */
void pa_gw_local_reply(pa_netgw *g, const pa_reply *r);
/* Pushes cmd for this client and makes it wait: 0, or -1 when the queue is
 * full (the caller answers busy with g->busy_msg). */
int pa_gw_push_wait(pa_client *c, pa_cmd *cmd);
/* The error a client gets for the sim's answer r to its request (NULL:
 * none within the request timeout): true with its status (an unknown one:
 * invalid_message) and text in msg; false when r is a success. The text and
 * JSON protocols both answer with it. */
bool pa_gw_reply_error(const pa_netgw *g, const pa_reply *r, pa_status *st,
                       char *msg, size_t msg_sz);
/* Pushes a command nobody waits for: 0, or -1 when the queue is full or
 * pa-sim stalled (busy with g->busy_msg). */
int pa_gw_push_nowait(pa_client *c, pa_cmd *cmd);
/* n commands as pa_gw_push_nowait, all or none, in one queue push. */
int pa_gw_push_many_nowait(pa_client *c, pa_cmd *cmds, size_t n);
/* Subscribes (port > 0) or unsubscribes (port 0) a channel of a robot. */
void pa_gw_subscribe(pa_client *c, int ch, uint32_t robot, uint16_t port);
/* Map segment, attached or re-attached when pa-sim replaced it. */
int pa_gw_map(pa_netgw *g, const pa_map_block **map, const int8_t **cells);
bool pa_gw_token_ok(pa_netgw *g, const char *s);
/* pa_gw_token_ok for c: the PA_NETGW_AUTH_TRIES-th wrong token closes c
 * once the reply is out. */
bool pa_gw_auth_try(pa_client *c, const char *s);
/* pa-sim has not beaten for a while (stopped, hung, restarting): true with
 * the reason in g->busy_msg. A paused sim still beats. */
bool pa_gw_sim_stalled(pa_netgw *g);

/* ---- the gateway's own files, for each other ------------------------------*/

/* gw.c */
void pa_gw_account(pa_netgw *g, int64_t t0); /* a callback's cost, for health */

/* client.c */
/* After a line or a completion: resume reading lines, or drop the client. */
void pa_gw_settle(pa_client *c);
void pa_gw_client_free(pa_client *c);
/* Tells every control connection the gateway is shutting down (RaisimServer's
 * STATUS_TERMINATING): one last line each, written before the sockets close. */
void pa_gw_say_terminating(pa_netgw *g);
void pa_gw_on_accept(struct evconnlistener *lis, evutil_socket_t fd,
                     struct sockaddr *sa, int salen, void *arg);
void pa_gw_on_accept_error(struct evconnlistener *lis, void *arg);
void pa_gw_on_relisten(evutil_socket_t fd, short what, void *arg);
/* Stops reading c and closes it once the replies owed are out. */
void pa_gw_close_soon(pa_client *c);

/* simlink.c */
/* Pushes the coalesced drive command, if any: 0, or -1 when still queued. */
int pa_gw_flush_drive(pa_client *c);
/* Keeps the latest text drive command of this burst (flushed after it). */
void pa_gw_set_drive(pa_client *c, const pa_cmd *cmd);
void pa_gw_on_drive_retry(evutil_socket_t fd, short what, void *arg);
void pa_gw_on_timeout(evutil_socket_t fd, short what, void *arg);
void pa_gw_on_reply(void *arg);
void pa_gw_spin_for_reply(pa_netgw *g);

/* streams.c */
/* Copies the next record the cursor has not seen into buf (cap bytes),
 * skipping one too big for it; false once the cursor has caught up. */
bool pa_gw_ring_next(const pa_ring *r, pa_ring_cursor *c, void *buf,
                     uint32_t cap, uint32_t *len);
/* Counts a record of len bytes read from a ring into *since, as the pages
 * it touched (one at least). */
static inline void pa_gw_ring_touched(uint64_t *since, uint32_t len) {
  *since += len > 4096 ? (uint64_t)len + 4096 : 4096;
}
/* After a drain: unmaps r's slots from this process (pa_ring_unmap_slots)
 * once the records read since the last time (*since, pa_gw_ring_touched)
 * reach 1 MB, so that a reader keeps at most ~1 MB of a ring pa-sim's RSS
 * already holds (issue 37) and a lockstep step rarely pays the refault. */
void pa_gw_ring_release(const pa_ring *r, uint64_t *since);
void pa_gw_drain_scans(pa_netgw *g);
void pa_gw_on_scan(void *arg);
void pa_gw_on_camera(void *arg);
void pa_gw_on_camera_more(evutil_socket_t fd, short what, void *arg);
int64_t pa_gw_odom_send(void *arg); /* on the state-ring thread */

/* streams.c: stops (on) or restarts c's streams, keeping its
 * subscriptions. */
void pa_gw_hibernate(pa_client *c, bool on);

/* limits.c */
int pa_lim_init(pa_netgw *g);
void pa_lim_free(pa_netgw *g);
void pa_lim_count(pa_netgw *g, int e);
const char *pa_lim_event_name(int e); /* NULL past the last */
/* Before each line: false when c must stop for now (its output is over
 * the high-water mark: paused; or its turn is over: yielded, resumed by the
 * work event). lines_done: the lines this call already ran. */
bool pa_lim_may_run(pa_client *c, unsigned lines_done);
/* After a line that started at t0: charges its work to c and the turn. */
void pa_lim_charge(pa_client *c, int64_t t0);
/* A new client: its place in the fair turns. */
void pa_lim_accepted(pa_client *c);
/* c's output drained: true when it was paused and is read again (the
 * caller settles it). */
bool pa_lim_out_drained(pa_client *c);
/* Where a command for pa-sim comes from: its share of the queue. */
enum { PA_LIM_SRC_CLIENT, PA_LIM_SRC_DATAGRAM, PA_LIM_SRC_REPLAY };
/* n commands (all or none) into pa-sim's queue within source's share: 0,
 * or PA_SHM_EFULL (queue full; or a datagram's or replay's share used:
 * counted). */
int pa_lim_queue_push(pa_netgw *g, int source, const pa_cmd *cmds, size_t n);
/* A browser's Origin may act here: absent, the Host's own, or one of
 * --allow_origin. False is counted. */
bool pa_lim_origin_ok(pa_netgw *g, const char *origin, const char *host);

/* ---- ask.c: the one way to ask pa-sim ---------------------------------- */

/* The client id of pa_core_ask's commands: slot 0xffffffff is no TCP
 * client's. */
#define PA_ASK_CLIENT_ID 0x00000003ffffffffull
#define PA_ASK_MAX (1u << 20) /* requests waiting at most */
/* A command's outcome: pa-sim's reply r (st PA_OK, or its error and msg),
 * or r NULL with PA_ERR_BUSY and why (no reply within its timeout). */
typedef void (*pa_ask_done)(pa_netgw *g, void *arg, uint64_t tag,
                            const pa_reply *r, pa_status st, const char *msg);
/* Pushes n commands (all or none) from source (PA_LIM_SRC_*: its queue
 * share), their request ids set in cmds, and calls done(g, arg, tag, ...)
 * once per command: with pa-sim's reply, or with r NULL and busy "did not
 * answer within timeout_ms" at its timeout. timeout_ms 0 (or done NULL): no
 * reply wanted (PA_CMDF_NO_REPLY). 0, or -1 with busy's text in err and no
 * done call: the queue (or the source's share) is full, too many requests
 * wait, or (a client's source only) pa-sim stalled. */
int pa_core_ask(pa_netgw *g, int source, pa_cmd *cmds, size_t n,
                unsigned timeout_ms, pa_ask_done done, void *arg, uint64_t tag,
                char *err, size_t err_sz);
/* The one push path (pa_core_ask's, the control clients'): request ids
 * from g->next_req under client_id, the source's share, every command
 * offered to the rows' on_command hooks once. 0, or -1 with g->busy_msg. */
int pa_core_push(pa_netgw *g, int source, uint64_t client_id, pa_cmd *cmds,
                 size_t n);
/* A reply to PA_ASK_CLIENT_ID: to its request's done (a late one is
 * counted). */
void pa_core_ask_reply(pa_netgw *g, const pa_reply *r);
int pa_core_ask_init(pa_netgw *g);
/* Calls every waiting done with busy "pa-netgw stops" (after the
 * front-ends stopped) and frees the table. */
void pa_core_ask_free(pa_netgw *g);

#endif
