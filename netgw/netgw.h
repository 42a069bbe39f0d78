/*
 * netgw.h - the playarea network gateway (library pa_netgw, process
 * pa-netgw): TCP control (plain text and JSON lines, PROTOCOL.md sections 1
 * and 3) and UDP feedback frames (section 2), over one libevent loop fed by
 * the shared-memory rings of an instance.
 *
 * The modules a test can drive directly: the text command parser, the UDP
 * frame encoders, and the gateway itself (created on an attached pa_stack,
 * run in a thread or in main()).
 */
#ifndef PA_NETGW_H
#define PA_NETGW_H

#include "pa_shm.h"
#include "pa_util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- limits --------------------------------------------------------------*/

#define PA_NETGW_TEXT_MAX 1024u          /* [bytes] text line, without EOL */
#define PA_NETGW_JSON_MAX (1024u * 1024u) /* [bytes] JSON line, without EOL */
#define PA_NETGW_BATCH_MAX 64u
/* [bytes] an auth token + NUL: --token, text auth and JSON auth alike */
#define PA_NETGW_TOKEN_MAX 256u
#define PA_NETGW_STEP_MAX 1000000u       /* ticks per step request */
#define PA_NETGW_SPEED_MAX 1000.0        /* largest time scale factor */
#define PA_NETGW_ODOM_WATCH_MAX_US 2000u /* --odom_watch_us limit */
/* SCHED_FIFO priority of the odom thread under --realtime: one below
 * pa-sim's (10), so it never delays the tick whose frame it sends. */
#define PA_NETGW_RT_PRIO 9
/* --odom_watch_us that --realtime implies (about half a VM's wake-up p99:
 * docs/protocol-notes.md gives the figures) */
#define PA_NETGW_RT_WATCH_US 300u
/* Wrong `auth` tokens a connection may send; the last one closes it. */
#define PA_NETGW_AUTH_TRIES 3u

/* ---- text commands (PROTOCOL.md section 1) -------------------------------*/

typedef enum pa_channel {
  PA_CH_ODOM = 0,
  PA_CH_SCAN = 1,
  PA_CH_CAMERA = 2,
  PA_CH_COUNT
} pa_channel;

/* "odom" -> PA_CH_ODOM, ...; -1 when unknown. */
int pa_netgw_channel_parse(const char *s);
const char *pa_netgw_channel_name(int ch);

typedef enum pa_text_kind {
  PA_TXT_EMPTY = 0, /* blank line: ignored, no reply */
  PA_TXT_CMD,       /* a[0..2] = v, w, head (head 0 when absent) */
  PA_TXT_STOP,
  PA_TXT_SUB,       /* channel, port */
  PA_TXT_UNSUB,     /* channel */
  PA_TXT_HELP,
  PA_TXT_PING,
  PA_TXT_ROBOT,     /* arg = id or name */
  PA_TXT_POSE,
  PA_TXT_TELEPORT,  /* a[0..2] = x, y, theta */
  PA_TXT_PAUSE,
  PA_TXT_RESUME,
  PA_TXT_STEP,      /* n */
  PA_TXT_RESET,
  PA_TXT_SPEED,     /* a[0] = factor */
  PA_TXT_AUTH,      /* arg = secret */
} pa_text_kind;

typedef struct pa_text_cmd {
  pa_text_kind kind;
  double a[3];
  int channel;      /* pa_channel */
  uint16_t port;    /* UDP port, 1..65535 */
  uint32_t n;       /* step count, 1..PA_NETGW_STEP_MAX */
  char arg[256];     /* robot name or auth token */
} pa_text_cmd;

/* Parses one line (no EOL; a trailing '\r' is tolerated). Returns PA_OK or the
 * error status with a message naming what was wrong in msg. */
pa_status pa_netgw_text_parse(const char *line, size_t len, pa_text_cmd *out,
                              char *msg, size_t msg_sz);

/* The reply to `help`: one line without EOL. */
const char *pa_netgw_text_help(void);

/* docs/actions.md's table, one row per JSON action, from the action table
 * (json_table.c; printed by `pa-netgw --help-actions`). */
void pa_netgw_actions_markdown(FILE *f);

/* ---- UDP frames (PROTOCOL.md section 2) ----------------------------------*/

#define PA_ODOM_FRAME_SIZE 36u
#define PA_SCAN_HEADER_SIZE 36u
#define PA_CAM_HEADER_SIZE 24u
/* Discovery (beacon.c): once a second pa-netgw sends one UDP datagram, a
 * JSON object with "beacon": PA_BEACON_MAGIC, to 127.0.0.1:--beacon_port
 * (and to 255.255.255.255 too when --bind is not a loopback address);
 * `playarea discover` lists the stacks it hears (docs/raisim.md). */
#define PA_BEACON_PORT 59312u
#define PA_BEACON_MAGIC "playarea"
#define PA_BEACON_PERIOD_MS 1000
#define PA_CAM_CHUNK_DEFAULT 1400u /* 1500 MTU - 20 IPv4 - 8 UDP - 24 header - slack */
#define PA_CAM_CHUNK_MIN 64u
#define PA_CAM_CHUNK_MAX (65507u - PA_CAM_HEADER_SIZE) /* largest UDP payload */

void pa_netgw_odom_encode(uint8_t out[PA_ODOM_FRAME_SIZE], uint32_t seq,
                          double t, float x, float y, float theta, float v,
                          float w);
/* Header of a scan frame; the ranges follow as count floats. */
void pa_netgw_scan_header(uint8_t out[PA_SCAN_HEADER_SIZE], const pa_scan *s);
/* Chunks needed for an image of size bytes; 0 if it would exceed 65535. */
uint32_t pa_netgw_cam_chunk_count(uint32_t size, uint32_t chunk);
/* Header of chunk idx of frame f; *off and *len get the payload span. */
void pa_netgw_cam_header(uint8_t out[PA_CAM_HEADER_SIZE], const pa_frame *f,
                         uint32_t chunk, uint32_t idx, uint32_t count,
                         uint32_t *off, uint32_t *len);

/* Odom frame sequence number of a tick (docs/CONTRACT.md). */
uint32_t pa_netgw_odom_seq(uint64_t tick, double feedback_hz, double control_hz);

/* ---- the gateway ---------------------------------------------------------*/

typedef struct pa_netgw_def {
  unsigned tcp_port;          /* 0 = pick a free port */
  const char *bind;           /* IPv4 address, "127.0.0.1" */
  const char *token;          /* NULL or "" = no authentication */
  double feedback_hz;         /* odom frames per simulated second */
  unsigned max_clients;
  unsigned camera_chunk;      /* [bytes] payload per camera datagram */
  unsigned request_timeout_ms;/* sim round trip before `busy` */
  size_t max_output;          /* [bytes] pending output before disconnect */
  unsigned odom_watch_us;     /* [us] watch for a due odom tick (0 = off) */
  bool realtime;              /* odom thread SCHED_FIFO (best effort, warns) */
  /* [ms] longest a line may stay incomplete, a connection (with a token)
   * unauthenticated, or a closing one keep unread replies; 0 = no limit */
  unsigned idle_timeout_ms;
  unsigned max_clients_per_peer; /* connections per IPv4 address, 0 = any */
  /* Slots beyond max_clients, each only for an address holding no other
   * connection: an admin still gets in when one peer took them all. */
  unsigned reserve_clients;
  /* The browser side (http.c): HTTP pages, /metrics and /ws on their own
   * port. -1 = pick a free one, 0 = none (the library default). */
  int32_t http_port;
  bool http_required;  /* a port that cannot be bound stops the gateway */
  const char *web_dir; /* static pages; NULL or "" = the built-in path */
  const char
      *upload_dir;      /* where the editor's "Run it" writes maps; "" = off */
  bool no_port_walk;    /* a taken tcp_port is an error, not walked past */
  unsigned beacon_port; /* UDP discovery beacon destination port */
  bool no_beacon;       /* send no discovery beacon */
  /* RoboCup SSL simulation protocol (docs/ssl.md), open when the world has
   * an SSL field: UDP ports (0 = pick one) on `bind`, and vision. */
  unsigned ssl_control_port;     /* SimulatorCommand; 10300 */
  unsigned ssl_blue_port;        /* blue RobotControl; 10301 */
  unsigned ssl_yellow_port;      /* yellow RobotControl; 10302 */
  unsigned ssl_sync_blue_port;   /* blue SimulationSyncRequest; 10303 */
  unsigned ssl_sync_yellow_port; /* yellow SimulationSyncRequest; 10304 */
  unsigned ssl_vision_port;      /* SSL_WrapperPacket to 127.0.0.1; 10020 */
  double ssl_vision_hz;          /* [Hz] wall clock; 60 */
  bool ssl_vision_multicast;     /* to 224.5.23.2 instead */
  /* Foxglove WebSocket server (docs/foxglove.md): its port (0 = off, -1 =
   * a free one, reported by the foxglove_info action) */
  int32_t foxglove_port;
  /* its scans' and images' encoding: "json" or "protobuf" (the schemas
   * as a FileDescriptorSet); the rest is JSON either way */
  const char *foxglove_encoding;
  /* Player 3 protocol (docs/player.md): its TCP port (0 = off, -1 = a free
   * one; 6665) */
  int32_t player_port;
  const char *data_dir; /* record_mcap writes only under it (NULL = cwd) */
  const char *record;   /* record an MCAP file from the start (NULL = no) */
  /* Browser origins besides the page's own that may use /ws, uploads and
   * state-changing HTTP requests: comma-separated, "*" = any; NULL = none */
  const char *allow_origin;
  /* The control protocol on a Unix-domain stream socket too (same host,
   * mode 0600; NULL or "" = off): a step's round trip costs about half of
   * loopback TCP's in the kernel */
  const char *unix_socket;
} pa_netgw_def;
pa_netgw_def pa_netgw_def_default(void);

/* pa-netgw's command line (netgw_opts.c). */
typedef struct pa_netgw_args {
  pa_netgw_def def;
  const char *instance;
  long odom_watch_us; /* -1 = auto: 0, or PA_NETGW_RT_WATCH_US with realtime */
} pa_netgw_args;
/* pa-netgw's flag table: read by pa-netgw's main, the launcher and the docs
 * test. Links without libevent (library pa_netgw_opts). */
const pa_opt_table *pa_netgw_opts(void);

typedef struct pa_netgw pa_netgw;

/* Binds the listener and starts the wake-up threads on an attached stack
 * (which must outlive the gateway). Zeroes camera demand, sets
 * ctl->tcp_port. NULL with err on failure; err starts "cannot listen"
 * when the TCP port could not be bound (a configuration error). */
pa_netgw *pa_netgw_create(const pa_netgw_def *d, pa_stack *stack, char *err,
                          size_t err_sz);
/* The bound TCP port. */
unsigned pa_netgw_port(const pa_netgw *g);
/* The bound HTTP port, 0 when the gateway serves no HTTP. */
unsigned pa_netgw_http_port(const pa_netgw *g);
/* Runs the event loop until pa_netgw_stop() or SIGINT/SIGTERM (when
 * handle_signals). Sets health ready = 1 first. */
int pa_netgw_run(pa_netgw *g, bool handle_signals);
/* Thread-safe: makes pa_netgw_run return. */
void pa_netgw_stop(pa_netgw *g);
/* Joins the threads, closes every client and socket, clears ready. */
void pa_netgw_destroy(pa_netgw *g);

/* ---- listening sockets (bind.c) -------------------------------------------*/

/* Ports a taken one is walked past (RaisimServer's setupSocket: 64 in all). */
#define PA_PORT_WALK_MAX 64u
/* A non-blocking, close-on-exec TCP socket listening (backlog) on addr:port
 * or, when walk and port is taken (EADDRINUSE), on the next free one of
 * port..port+63; port 0 = the kernel's pick. *bound gets the port. Returns
 * the fd, or -1 with err starting "cannot listen" (naming flag, e.g.
 * "--tcp_port"), or "--bind" for a bad address. */
int pa_bind_listen(const char *addr, unsigned port, bool walk, int backlog,
                   const char *flag, unsigned *bound, char *err, size_t err_sz);
/* A non-blocking, close-on-exec UDP socket bound to addr:port (0 = the
 * kernel's pick): the fd, or -1 with err ("cannot listen ...") and errno. */
/* A listening Unix-domain stream socket at path (mode 0600, non-blocking,
 * close-on-exec). A socket file left there by a stopped process is
 * replaced; one a live process listens on, or any other file, is an error
 * ("cannot listen on unix socket PATH: ..."). */
int pa_bind_unix(const char *path, const char *flag, char *err, size_t err_sz);
int pa_bind_udp(const char *addr, unsigned port, const char *flag,
                unsigned *bound, char *err, size_t err_sz);

#ifdef __cplusplus
}
#endif
#endif /* PA_NETGW_H */
